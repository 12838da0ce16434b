"""Training on parts: one process and a Dask cluster give the same weight bytes (issue 23).

`rankkit train PARTS... M` (solver newton, no --dask) and RankSVM.fit_parts(PARTS) without a
client run rankkit.parts.newton.LocalProblem: the workers' task functions run here, part
after part, and their partial sums are added in part order, as on a cluster. So the weights, the
iteration and CG counts and the objective are the same bytes as `--dask` on a real `dask scheduler`
+ `dask worker` pair (processes on 127.0.0.1, one cluster for the module) and on `local:N`, for
every option --dask offers: the losses, --query-norm, query weights, --rescale, parts with a
LightGBM group file beside them, relative paths, .gz parts, raw features that make CG's
preconditioner start (diagonal) and escalate (the d x d matrix), and any kernel thread count.
One file (`rankkit train FILE M`) keeps its own fit, unchanged (the plain objective's driver),
and `--dask` on that one file gives its bytes.
"""

from __future__ import annotations

import gzip
import os
import re
from pathlib import Path

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")  # the test extra installs it: a skip only outside `make test`

from rankkit import threads, training  # noqa: E402
from rankkit.estimators import PYTHON_WORDS  # noqa: E402
from rankkit.parts import worker as W  # noqa: E402
from rankkit.parts.newton import LocalProblem, Problem, fit_parts  # noqa: E402
from rankkit.io.model import read_model  # noqa: E402
from rankkit.io.svmlight import read_svmlight  # noqa: E402
from rankkit.objectives.pairwise import PairwiseObjective  # noqa: E402
from rankkit.solvers.newton import LocalObjective, NewtonRankSVM, truncated_newton  # noqa: E402
from tests.test_cli import rankkit  # noqa: E402
from tests.test_distributed import scheduler_and_workers  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample.train.txt"
RAW_SCALES = np.array([3e4, 1.0, 1e-2, 30.0, 1e3, 1.0, 5e5, 0.1])  # MSLR-like raw feature scales


def _queries(lines):
    """[(qid, lines of the query)] in file order."""
    out = []
    for ln in lines:
        q = re.search(rb"qid:(\d+)", ln).group(1)
        if not out or out[-1][0] != q:
            out.append((q, []))
        out[-1][1].append(ln)
    return out


def _raw(line: bytes) -> bytes:
    """The line with its feature j multiplied by RAW_SCALES[j % 8]."""
    def scale(m):
        j = int(m.group(1))
        return b"%d:%s" % (j, repr(float(m.group(2)) * float(RAW_SCALES[j % RAW_SCALES.shape[0]])).encode())
    head, _, comment = line.partition(b"#")
    return re.sub(rb"(\d+):([-+0-9.eE]+)", scale, head).rstrip() + (b" #" + comment if comment else b"\n")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Three parts of the sample, in one directory (given by relative names, run from there):
    a gzipped LightGBM part without qids and its `.query` file beside it, a plain part, a gzipped
    part; a weights file for every query; and `raw/`: the same cut with MSLR-like feature scales."""
    d = tmp_path_factory.mktemp("bytes")
    queries = _queries(SAMPLE.read_bytes().splitlines(True))
    cut = [queries[:40], queries[40:90], queries[90:]]
    lgb = [re.sub(rb" qid:\S+", b"", ln) for _, ls in cut[0] for ln in ls]
    (d / "lgb.txt.gz").write_bytes(gzip.compress(b"".join(lgb)))
    (d / "lgb.txt.query").write_text("".join(f"{len(ls)}\n" for _, ls in cut[0]))
    (d / "mid.txt").write_bytes(b"".join(ln for _, ls in cut[1] for ln in ls))
    (d / "end.txt.gz").write_bytes(gzip.compress(b"".join(ln for _, ls in cut[2] for ln in ls)))
    names = ["lgb.txt.gz", "mid.txt", "end.txt.gz"]
    qids = sorted({int(q) for p in names for q in read_svmlight(str(d / p)).qid.tolist()})
    (d / "weights.txt").write_text("".join(f"{q} {1 + (q % 4) * 0.5}\n" for q in qids))
    (d / "raw").mkdir()
    for k, chunk in enumerate(cut):
        (d / "raw" / f"part-{k}.txt").write_bytes(b"".join(_raw(ln) for _, ls in chunk for ln in ls))
    return d, names


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A real `dask scheduler` and two `dask worker` processes on 127.0.0.1 (killed at the end),
    and a Client to them."""
    with scheduler_and_workers(tmp_path_factory.mktemp("cluster"), n_workers=2) as (address, _), \
            distributed.Client(address, timeout=30) as client:
        yield address, client


def _plan(**params):
    return training.plan("newton", {"C": 0.01, **params}, words=PYTHON_WORDS)


def _fit(paths, client, qw=None, zero_based=False, **params):
    warned = []
    out = fit_parts(_plan(**params), paths, client, query_weights=qw, zero_based=zero_based, warn=warned.append)
    assert len(warned) == (0 if out[1].converged else 1)
    return out


def _same(a, b):
    """Two fits of fit_parts: the same weight bytes, counts and figures."""
    (ma, ra, _), (mb, rb, _) = a, b
    assert ma.weights.tobytes() == mb.weights.tobytes()
    assert (ra.iterations, ra.extra["cg_iterations"], ra.n_active) == (rb.iterations, rb.extra["cg_iterations"],
                                                                     rb.n_active)
    assert ra.objective == rb.objective and ra.extra["gradient_norm"] == rb.extra["gradient_norm"]
    for key in ("objective", "iterations", "cg_iterations", "violated_pairs", "n_queries", "n_pairs", "group_file",
                "parts_sha256", "train_file_bytes"):
        assert ma.header.get(key) == mb.header.get(key), key


CASES = [
    dict(),
    dict(loss="huber", query_norm=True),
    dict(loss="logistic", C=0.02, weights=True),
    dict(rescale="slack", delta="gain", weights=True),
    dict(rescale="margin", delta="0,1,3", query_norm=True),
    dict(rescale="margin-delta", delta="gain"),
    dict(zero_based=True, loss="huber", max_iter=2),  # --zero-based; stopped by --max-iter (a warning)
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()) or "default")
def test_one_process_and_a_real_cluster_give_the_same_bytes(data, cluster, case):
    """Group file, .gz parts, relative paths (made absolute on the client), each loss and rescaling,
    query weights: the same bytes in this process as on two worker processes."""
    d, names = data
    _, client = cluster
    case = dict(case)
    qw = "weights.txt" if case.pop("weights", False) else None
    cwd = os.getcwd()
    os.chdir(d)  # the parts and the weights file by relative names
    try:
        here = _fit(names, None, qw, **case)
        there = _fit(names, client, qw, **case)
    finally:
        os.chdir(cwd)
    _same(here, there)
    assert here[1].converged == ("max_iter" not in case) and there[2]["workers"] == 2 and here[2]["workers"] == 1
    assert here[0].header["index_base"] == (0 if case.get("zero_based") else 1)
    assert here[0].header["group_file"] == str(d / "lgb.txt.query")
    assert int(here[0].header["n_queries"]) == len(_queries(SAMPLE.read_bytes().splitlines(True)))


def test_raw_features_take_the_preconditioner_paths_with_the_same_bytes(data, cluster):
    """MSLR-like scales: auto starts CG with the diagonal; the diagonal and the d x d matrix forced
    (the driver's other paths) give the same bytes in this process and on the cluster."""
    d, _ = data
    _, client = cluster
    paths = [str(d / "raw" / f"part-{k}.txt") for k in range(3)]
    lines = []
    here = _fit(paths, None, None, C=1.0)
    there = fit_parts(_plan(C=1.0), paths, client, log=lines.append)
    _same(here, there)
    assert any("(diag)" in ln or "(dense)" in ln for ln in lines), lines
    local, remote = LocalProblem(paths), Problem(client, paths)
    try:
        for mode in ("diag", "dense"):
            a = local.fit(1.0, precondition=mode, max_iter=4)
            b = remote.fit(1.0, precondition=mode, max_iter=4)
            assert a.w.tobytes() == b.w.tobytes(), mode
            assert (a.iterations, a.extra["cg_iterations"], a.objective) == \
                (b.iterations, b.extra["cg_iterations"], b.objective), mode
    finally:
        local.close()
        remote.close()
    assert not any(k[0] == local.fit_id for k in W._STATE)  # this process holds nothing of the fit


def test_the_bytes_do_not_depend_on_the_threads(data, monkeypatch):
    """1 and 2 kernel threads in this process (work split even on this small data): the same bytes."""
    d, _ = data
    paths = [str(d / "raw" / f"part-{k}.txt") for k in range(3)]
    monkeypatch.setattr(threads, "MIN_WORK_PER_THREAD", 1)
    out = []
    try:
        for n in (1, 2):
            threads.apply(n)
            out.append(_fit(paths, None, None, C=1.0, loss="huber"))
    finally:
        threads.apply(None)
    _same(out[0], out[1])


def test_cli_one_process_equals_dask_on_a_real_scheduler(data, cluster, tmp_path):
    """`rankkit train PARTS M` and `rankkit train PARTS M --dask tcp://...`, relative paths, a group
    file, .gz parts, query weights, --rescale: the same weight bytes, iterations, CG steps and
    objective in the two models, and the same as the Python face."""
    d, names = data
    address, client = cluster
    opts = ["-C", "0.01", "--rescale", "slack", "--query-weights", "weights.txt", "--threads", "1"]
    one = rankkit("train", *names, str(tmp_path / "one.model"), *opts, cwd=d)
    assert one.returncode == 0, one.stderr
    dist = rankkit("train", *names, str(tmp_path / "dist.model"), *opts, "--dask", address, cwd=d)
    assert dist.returncode == 0, dist.stderr
    a, b = read_model(str(tmp_path / "one.model")), read_model(str(tmp_path / "dist.model"))
    assert a.weights.tobytes() == b.weights.tobytes()
    for key in ("objective", "iterations", "cg_iterations", "violated_pairs", "gradient_norm", "n_queries",
                "group_file", "parts_sha256", "query_weights_file", "rescale"):
        assert a.header[key] == b.header[key], key
    assert (a.header["workers"], b.header["workers"], b.header["engine"]) == ("1", "2", "dask")
    cwd = os.getcwd()
    os.chdir(d)
    try:
        py = fit_parts(training.plan(None, {"C": 0.01, "rescale": "slack", "delta": "gain"}, None, None, True),
                       names, None, query_weights="weights.txt")[0]
    finally:
        os.chdir(cwd)
    assert py.weights.tobytes() == a.weights.tobytes()


def test_estimator_fit_parts_on_local_cluster_equals_without_a_client(data):
    """RankSVM.fit_parts(PARTS) and RankSVM.fit_parts(PARTS, client='local:2') (a LocalCluster of two
    worker processes started and stopped by rankkit, about 4 s): the same bytes."""
    import rankkit as rk

    d, names = data
    paths = [str(d / n) for n in names]
    a = rk.RankSVM(C=0.01, loss="huber").fit_parts(paths, query_weights=str(d / "weights.txt"))
    b = rk.RankSVM(C=0.01, loss="huber").fit_parts(paths, client="local:2", query_weights=str(d / "weights.txt"))
    assert a.coef_.tobytes() == b.coef_.tobytes()
    assert (a.n_iter_, a.objective_) == (b.n_iter_, b.objective_)
    assert b.model_.header["workers"] == 2 and a.model_.header["workers"] == 1


def test_estimator_fit_parts_without_a_client_equals_the_cluster(data, cluster):
    """The Python face over parts (no client, and a client) runs the one fit on parts."""
    import rankkit as rk

    d, names = data
    _, client = cluster
    paths = [str(d / n) for n in names]
    a = rk.RankSVM(C=0.05, loss="logistic", query_norm=True).fit_parts(paths)
    b = rk.RankSVM(C=0.05, loss="logistic", query_norm=True).fit_parts(paths, client=client)
    assert a.coef_.tobytes() == b.coef_.tobytes() and a.objective_ == b.objective_ and a.n_iter_ == b.n_iter_
    # another exact solver over parts without a cluster: joined as if concatenated (no Dask counterpart)
    c = rk.RankSVM(C=0.05, solver="newton-pairs").fit_parts(paths)
    assert c.model_.header["solver"] == "newton-pairs"


def test_one_file_keeps_its_own_fit(tmp_path):
    """`rankkit train FILE M` is the one-file driver on the plain objective, bit for bit; a single
    part given as a glob is that file."""
    proc = rankkit("train", str(SAMPLE), str(tmp_path / "m.model"), "-C", "0.01", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    ds = read_svmlight(str(SAMPLE))
    ref = truncated_newton(LocalObjective(PairwiseObjective(ds, 0.01), ds), tol=NewtonRankSVM.DEFAULT_TOL,
                           max_iter=NewtonRankSVM.DEFAULT_MAX_ITER)
    model = read_model(str(tmp_path / "m.model"))
    assert model.weights.tobytes() == ref.w.tobytes()
    assert float(model.header["objective"]) == ref.objective and int(model.header["iterations"]) == ref.iterations
    glob = rankkit("train", str(SAMPLE.parent / "sample.train.t*t"), str(tmp_path / "g.model"), "-C", "0.01",
                   cwd=tmp_path)
    assert glob.returncode == 0, glob.stderr
    assert read_model(str(tmp_path / "g.model")).weights.tobytes() == ref.w.tobytes()


def test_parts_in_one_process_hold_no_joined_copy(data):
    """The parts stay separate datasets held by this process's part states (never concatenated):
    their arrays, while a LocalProblem lives, are the arrays each part's reader made."""
    d, names = data
    prob = LocalProblem([str(d / n) for n in names])
    try:
        held = [W._STATE[(prob.fit_id, k)].ds for k in range(3)]
        assert [ds.n_rows for ds in held] == [f["n_rows"] for f in prob.facts]
        assert all(ds.indices.dtype == np.uint16 for ds in held)  # read as `rankkit train FILE` reads for newton
    finally:
        prob.close()
    assert not any(k[0] == prob.fit_id for k in W._STATE)


def test_a_mistyped_index_trains_on_the_columns_that_occur(data, cluster, tmp_path):
    """One part with a feature index 1000000 (a typo): as `rankkit train FILE` does, the fit runs
    on the columns that occur and the model is sparse; the same bytes in this process and on the
    cluster, never vectors of 1e6 numbers in the rounds; the columns of the one-file model."""
    d, names = data
    _, client = cluster
    lines = (d / "mid.txt").read_bytes().splitlines(True)
    head, _, comment = lines[3].partition(b"#")
    lines[3] = head.rstrip() + b" 1000000:0.5 #" + comment
    typo = tmp_path / "typo.txt"
    typo.write_bytes(b"".join(lines))
    paths = [str(d / names[0]), str(typo), str(d / names[2])]
    here = _fit(paths, None)
    there = _fit(paths, client)
    _same(here, there)
    model = here[0]
    assert model.feature_index is not None and model.n_total == 1000000 and model.weights.shape[0] <= 50
    assert model.feature_index.tobytes() == there[0].feature_index.tobytes()
    assert int(model.header["n_features"]) == 1000000
    whole = tmp_path / "whole.txt"
    whole.write_bytes(b"".join(read_plain(p) for p in paths))
    one = NewtonRankSVM(C=0.01).fit(read_svmlight(str(whole)).compact_columns()[0])
    assert abs(one.objective - here[1].objective) <= 1e-10 * one.objective
    full, _ = fit_newton_full(paths)
    assert full.w.shape == (1000000,) and np.array_equal(full.w[model.feature_index], model.weights)


def read_plain(path: str) -> bytes:
    """A part's lines with its qids (a LightGBM part's from its group file), uncompressed."""
    ds = read_svmlight(path)
    out = []
    for r in range(ds.n_rows):
        cols = ds.indices[ds.indptr[r]:ds.indptr[r + 1]]
        vals = ds.data[ds.indptr[r]:ds.indptr[r + 1]]
        feats = " ".join(f"{int(j) + 1}:{float(v)!r}" for j, v in zip(cols, vals))
        out.append(f"{float(ds.y[r])!r} qid:{int(ds.qid[r]) + (100000 if ds.group_file else 0)} {feats}\n")
    return "".join(out).encode()


def fit_newton_full(paths):
    from rankkit.distributed import fit_newton

    return fit_newton(paths, None, C=0.01)


def test_dask_on_one_file_is_rankkit_train_on_it(data, cluster, tmp_path):
    """`rankkit train FILE M --dask ADDRESS` and `rankkit train FILE M` on a gzipped LightGBM file
    (its `.query` beside it) given by a relative path: the same weight bytes, iterations, CG steps,
    violated pairs and objective; and in Python, fit_newton([FILE], client) = NewtonRankSVM on it."""
    d, names = data
    address, client = cluster
    one = rankkit("train", names[0], str(tmp_path / "one.model"), "-C", "0.05", "--loss", "huber", cwd=d)
    assert one.returncode == 0, one.stderr
    dist = rankkit("train", names[0], str(tmp_path / "dist.model"), "-C", "0.05", "--loss", "huber", "--dask",
                   address, cwd=d)
    assert dist.returncode == 0, dist.stderr
    a, b = read_model(str(tmp_path / "one.model")), read_model(str(tmp_path / "dist.model"))
    assert a.weights.tobytes() == b.weights.tobytes()
    for key in ("objective", "iterations", "cg_iterations", "violated_pairs", "gradient_norm", "n_queries"):
        assert a.header[key] == b.header[key], key
    assert a.header["group_file"] == "lgb.txt.query" and b.header["group_file"] == str(d / "lgb.txt.query")
    from rankkit.distributed import fit_newton

    for kw in (dict(C=1.0), dict(C=0.01, rescale="margin", delta="0,1,3", query_norm=True)):
        res = fit_newton([str(SAMPLE)], client, **kw)[0]
        ref = NewtonRankSVM(**kw).fit(read_svmlight(str(SAMPLE), narrow_indices=True))
        assert res.w.tobytes() == ref.w.tobytes() and res.objective == ref.objective, kw
        assert (res.iterations, res.extra, res.n_active) == (ref.iterations, ref.extra, ref.n_active), kw


def test_a_part_that_lost_its_scores_replays_the_lineage(data):
    """Parts dropped from this process's state after two Newton steps (what a lost worker leaves):
    they are read again and replay the steps from the client's lineage, the same bytes."""
    d, _ = data
    paths = [str(d / "raw" / f"part-{k}.txt") for k in range(3)]
    from rankkit.distributed import fit_newton

    ref = fit_newton(paths, None, C=1.0, loss="logistic")[0]
    dropped, before = [], set(W._STATE)  # another test's in-process cluster may hold parts here too

    def log(line):
        if line.startswith("iter   2"):
            victims = [k for k in list(W._STATE) if k[1] in (0, 2) and k not in before]
            for k in victims:
                del W._STATE[k]
            dropped.extend(victims)

    res, facts = fit_newton(paths, None, C=1.0, loss="logistic", log=log)
    assert len(dropped) == 2 and facts["parts_read_again"] == 2 and res.iterations > 2
    assert res.w.tobytes() == ref.w.tobytes() and res.objective == ref.objective


def test_the_line_search_beyond_t1_gives_the_same_bytes(data, cluster, monkeypatch):
    """From a far warm start the Huber loss's steps fail Armijo's test at t = 1 and the line search
    runs its one-dimensional Newton search on phi' and phi'': asked lazily in this process
    (ls_slopes), sent with each trial by the cluster, and LocalObjective's own on one file: the
    same bytes all three ways."""
    d, _ = data
    _, client = cluster
    paths = [str(d / "raw" / f"part-{k}.txt") for k in range(3)]
    asked = []
    real = W.ls_slopes
    monkeypatch.setattr(W, "ls_slopes", lambda *a: asked.append(1) or real(*a))
    w0 = np.random.default_rng(0).standard_normal(46) * 0.001
    local, remote = LocalProblem(paths, loss="huber"), Problem(client, paths, loss="huber")
    try:
        w0 = w0[:local.n_features]
        a, b = local.fit(1.0, w0=w0, max_iter=4), remote.fit(1.0, w0=w0, max_iter=4)
    finally:
        local.close()
        remote.close()
    assert asked, "the search never needed the slopes"
    assert a.w.tobytes() == b.w.tobytes() and (a.iterations, a.extra, a.objective) == (b.iterations, b.extra, b.objective)
    from rankkit.distributed import fit_newton

    one = fit_newton([paths[1]], client, C=1.0, loss="huber", w0=w0, max_iter=4)[0]
    ref = NewtonRankSVM(C=1.0, loss="huber", max_iter=4).fit(read_svmlight(paths[1], narrow_indices=True), w0=w0)
    assert one.w.tobytes() == ref.w.tobytes() and one.objective == ref.objective


def test_a_part_is_held_as_train_file_holds_it(tmp_path):
    """A part's values are kept as 4-byte decimal codes when they all are one (as `rankkit train
    FILE` keeps them for newton), so parts in one process take the memory of the file; a part of
    full-precision doubles keeps them."""
    ds, _, _ = W._read(W.PartSpec("t", 0, str(SAMPLE)))
    one = read_svmlight(str(SAMPLE), narrow_indices=True, narrow_values=True)
    assert ds.decimal_codes and ds.data.dtype == np.int32 and ds.value_scale == one.value_scale
    assert np.array_equal(ds.data, one.data) and np.array_equal(ds.indices, one.indices)
    full = tmp_path / "full.txt"
    full.write_text("1 qid:1 1:0.1234567890123456789\n0 qid:1 1:0.3333333333333333\n")
    ds, _, _ = W._read(W.PartSpec("t", 0, str(full)))
    assert not ds.decimal_codes and ds.data.dtype == np.float64
