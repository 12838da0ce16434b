"""rankkit.distributed: the Newton RankSVM, predict and eval over parts on a Dask cluster.

In-process (a LocalCluster of threads: the same tasks, reductions and state handling as with
processes) for the numerical claims; a real `dask scheduler` + `dask worker` pair on 127.0.0.1 for
the command line; worker processes killed mid-fit under the `slow` marker (make test-all); the
real processes killed at chosen points are tests/test_distributed_kills.py. Every cluster is bounded in time and torn down.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")  # the test extra installs it: a skip only outside `make test`

from rankkit.distributed import fit_newton  # noqa: E402
from rankkit.parts.newton import Problem  # noqa: E402
from rankkit.io.parts import concatenate  # noqa: E402
from rankkit.errors import DataError  # noqa: E402
from rankkit.io.model import read_model  # noqa: E402
from rankkit.io.svmlight import read_svmlight  # noqa: E402
from rankkit.solvers.newton import NewtonRankSVM  # noqa: E402
from tests.test_cli import _env, assert_one_line_error, rankkit  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample.train.txt"
QUIET = {"dashboard": False, "dashboard_address": "127.0.0.1:0"}  # no HTTP server on 8787 (and no warning)
RTOL = 1e-10  # the objective of the distributed fit against the single-process one


def _split(lines, n_parts):
    """Lines of an SVMlight file cut into n_parts runs of whole queries."""
    qids = [re.search(rb"qid:(\d+)", ln).group(1) for ln in lines]
    starts = [0] + [i for i in range(1, len(lines)) if qids[i] != qids[i - 1]]
    cuts = [starts[len(starts) * k // n_parts] for k in range(n_parts)] + [len(lines)]
    return [lines[cuts[k]:cuts[k + 1]] for k in range(n_parts)]


@pytest.fixture(scope="module")
def parts(tmp_path_factory):
    d = tmp_path_factory.mktemp("parts")
    paths = []
    for k, chunk in enumerate(_split(SAMPLE.read_bytes().splitlines(True), 4)):
        p = d / f"part-{k}.txt"
        p.write_bytes(b"".join(chunk))
        paths.append(str(p))
    (d / "all.txt").write_bytes(SAMPLE.read_bytes())
    weights = d / "weights.txt"
    ds = read_svmlight(str(SAMPLE))
    qids = np.unique(ds.qid)
    weights.write_text("".join(f"{q} {1 + (q % 3) * 0.5}\n" for q in qids.tolist()))
    return paths, str(weights)


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None,
                                  scheduler_kwargs=QUIET, silence_logs=50) as cluster, distributed.Client(cluster) as c:
        yield c


def _single(parts, **kw):
    ds = concatenate([read_svmlight(p) for p in parts])
    return NewtonRankSVM(**kw).fit(ds), ds


CASES = [
    dict(C=0.01),
    dict(C=0.05, loss="huber", query_norm=True),
    dict(C=0.02, loss="logistic", query_weights=True),
    dict(C=0.01, rescale="slack", delta="gain"),
    dict(C=0.01, rescale="margin", delta="0,1,3", query_norm=True),
    dict(C=0.01, rescale="margin-delta", delta="gain"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()))
def test_same_optimum_as_one_process(parts, client, case):
    paths, weights_file = parts
    case = dict(case)
    qw = weights_file if case.pop("query_weights", False) else None
    res, facts = fit_newton(paths, client, tol=1e-9, query_weights=qw, **case)
    single_kw = dict(case)
    ds = concatenate([read_svmlight(p) for p in paths])
    if qw is not None:
        from rankkit.io.query_weights import read_query_weights, weights_for

        single_kw["query_weights"] = weights_for(ds, read_query_weights(qw), qw)
    ref = NewtonRankSVM(tol=1e-9, **single_kw).fit(ds)
    assert res.converged and ref.converged
    assert abs(res.objective - ref.objective) <= RTOL * abs(ref.objective), (res.objective, ref.objective)
    assert np.allclose(res.w, ref.w, rtol=1e-5, atol=1e-7 * np.abs(ref.w).max())
    assert (facts["n_documents"], facts["n_queries"], facts["n_pairs"]) == (ds.n_rows, ds.n_queries, ds.n_pairs)
    assert facts["parts"] == 4 and facts["workers"] == 2


@pytest.mark.parametrize("rescale", ["margin", "margin-delta", "slack"])
def test_worker_rescaled_loss_and_violated_pairs_are_one_process(parts, rescale):
    """The Dask worker's partial sums (in-process: the worker functions are plain) at one w add up
    to the one-process objective's loss, gradient and violated pairs under every rescaling."""
    from rankkit.parts import worker as W

    paths, _ = parts
    ds = concatenate([read_svmlight(p) for p in paths])
    ref = NewtonRankSVM(C=1.0, rescale=rescale, delta="0,1,3,7,15").objective(ds)
    w = np.random.default_rng(0).standard_normal(ds.n_features) * 0.05
    y = ref.scores(w)
    loss = ref.loss_y(y)
    total, grad, violated = 0.0, np.zeros(ds.n_features), 0
    for k, path in enumerate(paths):
        spec = W.PartSpec(f"rescale-{rescale}", k, path, n_features=ds.n_features, rescale=rescale,
                          delta="0,1,3,7,15")
        (L, g, v), *_ = W.fg(spec, "w0", w)
        total, grad, violated = total + L, grad + g, violated + v
    assert total == pytest.approx(loss, rel=1e-12)
    np.testing.assert_allclose(grad, ref.gradient_loss(), rtol=1e-10, atol=1e-10)
    assert violated == ref.n_active > 0


def test_same_bytes_for_any_assignment_of_parts(parts, client):
    """Partial sums reduced in part order: the same w, bit for bit, whichever worker holds which part."""
    paths, _ = parts
    live = sorted(client.scheduler_info()["workers"])
    ws = []
    for where in ([live[k % 2] for k in range(4)], [live[0]] * 4, [live[1], live[0], live[0], live[1]]):
        prob = Problem(client, paths, loss="huber")
        prob.where = list(where)
        try:
            ws.append(prob.fit(0.05, tol=1e-9).w.tobytes())
        finally:
            prob.close()
    assert all(w == ws[0] for w in ws[1:])


def test_lost_part_is_read_again_and_gives_the_same_model(parts, client):
    """A worker's state lost between rounds (what a worker restart leaves): its parts are read
    again and the model is the same, bit for bit (the process-kill version is test_worker_killed)."""
    from rankkit.parts import worker as W

    paths, _ = parts
    ref = fit_newton(paths, client, C=0.01)[0].w.tobytes()
    lost = []

    def log(line):
        if line.startswith("iter   2"):
            victims = [k for k in list(W._STATE) if k[1] in (1, 3)]
            for k in victims:  # in-process workers share this module: drop parts 1 and 3
                del W._STATE[k]
            lost.extend(victims)

    res, facts = fit_newton(paths, client, C=0.01, log=log)
    assert lost and facts["parts_read_again"] == 2
    assert res.w.tobytes() == ref


def test_query_split_across_parts_names_both(parts, client, tmp_path):
    paths, _ = parts
    lines = [Path(p).read_bytes().splitlines(True) for p in paths]
    # the first query of part 2 also at the end of part 1, and part 3's last query in part 0
    first_q2 = re.search(rb"qid:(\d+)", lines[2][0]).group(1)
    bad = [lines[0], lines[1] + [lines[2][0]], lines[2][1:], lines[3]]
    bad_paths = []
    for k, chunk in enumerate(bad):
        p = tmp_path / f"p{k}.txt"
        p.write_bytes(b"".join(chunk))
        bad_paths.append(str(p))
    with pytest.raises(DataError) as exc:
        fit_newton(bad_paths, client)
    msg = str(exc.value)
    assert f"qid {int(first_q2)} is also in the part {bad_paths[1]}" in msg and msg.startswith(bad_paths[2] + ":1:"), msg
    # the same message in one process (several parts without --dask)
    with pytest.raises(DataError) as exc1:
        concatenate([read_svmlight(p) for p in bad_paths])
    assert str(exc1.value) == msg


def test_bad_input_in_a_part_is_its_file_and_line(parts, client, tmp_path):
    paths, _ = parts
    lines = Path(paths[2]).read_bytes().splitlines(True)
    lines[4] = b"x" + lines[4]
    bad = tmp_path / "part-2.txt"
    bad.write_bytes(b"".join(lines))
    with pytest.raises(DataError) as one:
        read_svmlight(str(bad))
    with pytest.raises(DataError) as exc:
        fit_newton([paths[0], paths[1], str(bad), paths[3]], client)
    assert str(exc.value) == str(one.value) and f"{bad}:5:" in str(exc.value)


def test_parts_without_dask_train_as_on_a_cluster(parts, client, tmp_path):
    """`rankkit train PARTS M` (no --dask): the parts' partial sums in this process, the same
    bytes as on a cluster; the optimum of the concatenated file (tests/test_distributed_bytes.py
    has the other options and a real scheduler)."""
    paths, _ = parts
    cwd = tmp_path
    many = rankkit("train", str(Path(paths[0]).parent / "part-*.txt"), "many.model", "-C", "0.01", cwd=cwd)
    assert many.returncode == 0, many.stderr
    ds = read_svmlight(str(SAMPLE))
    ref = NewtonRankSVM(C=0.01).fit(ds)  # what `rankkit train all.txt` fits
    b = read_model(str(cwd / "many.model"))
    assert b.weights.tobytes() == fit_newton(paths, client, C=0.01)[0].w.tobytes()
    assert abs(float(b.header["objective"]) - ref.objective) <= RTOL * ref.objective
    assert b.header["parts"] == "4" and b.header["workers"] == "1" and int(b.header["n_documents"]) == ds.n_rows
    # a query split across parts: one line naming both, exit 2, no model
    split = cwd / "split.txt"
    split.write_bytes(Path(paths[1]).read_bytes().splitlines(True)[-1])
    qid = int(re.search(rb"qid:(\d+)", split.read_bytes()).group(1))
    proc = rankkit("train", paths[0], paths[1], str(split), "split.model", cwd=cwd)
    assert_one_line_error(proc, f"{split}:1: qid {qid} is also in the part {paths[1]}")
    assert not (cwd / "split.model").exists()


def test_unreachable_scheduler_is_one_line(parts, tmp_path):
    paths, _ = parts
    env_timeout = {"RANKKIT_DASK_TIMEOUT": "1"}
    proc = _rankkit_env(env_timeout, "train", *paths, "m.model", "--dask", "tcp://127.0.0.1:9", cwd=tmp_path)
    assert_one_line_error(proc, "--dask tcp://127.0.0.1:9: cannot reach a Dask scheduler there")
    assert not (tmp_path / "m.model").exists()
    from rankkit.parts.cluster import ClusterError, parse_address

    with pytest.raises(ClusterError, match="--dask 'nowhere' is not a scheduler address"):
        parse_address("nowhere")
    assert parse_address("local:3") == ("local", 3) and parse_address("tcp://10.0.0.1:8786")[0] == "remote"


def _rankkit_env(extra, *args, cwd, timeout=120):
    env = _env()
    env.update(extra)
    return subprocess.run([sys.executable, "-m", "rankkit", *map(str, args)], cwd=cwd, env=env, capture_output=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


# -- a real scheduler and worker, as processes on 127.0.0.1 -------------------------------------
@contextlib.contextmanager
def scheduler_and_workers(tmp_path, n_workers=1, nanny=False):
    """`dask scheduler` and `dask worker` processes on the loopback interface, killed on exit."""
    env = _env()
    env["NUMBA_NUM_THREADS"] = "1"  # one kernel thread per worker: the test machine's cores are few and shared
    sfile = tmp_path / f"scheduler-{time.monotonic_ns()}.json"
    procs = []
    try:
        procs.append(subprocess.Popen([sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port", "0",
                                       "--no-dashboard", "--scheduler-file", str(sfile)], env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
        deadline = time.monotonic() + 60
        while not (sfile.exists() and sfile.stat().st_size > 0):
            assert time.monotonic() < deadline, "the dask scheduler did not start within 60 s"
            assert procs[0].poll() is None, "the dask scheduler exited"
            time.sleep(0.1)
        time.sleep(0.1)
        address = json.loads(sfile.read_text())["address"]
        for _ in range(n_workers):
            procs.append(subprocess.Popen([sys.executable, "-m", "dask", "worker", address, "--nthreads", "1",
                                           "--host", "127.0.0.1", "--no-dashboard",
                                           *(["--nanny"] if nanny else ["--no-nanny"])],
                                          env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                          start_new_session=True))
        with distributed.Client(address, timeout=30) as c:
            c.wait_for_workers(n_workers, timeout=60)
        yield address, procs
    finally:
        for p in reversed(procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout=30)


@pytest.mark.slow  # make test keeps the cheaper real-process cases of tests/test_distributed_kills.py
def test_cli_on_a_real_scheduler_and_worker(parts, client, tmp_path):
    """train, predict and eval with --dask tcp://127.0.0.1:PORT: the same model bytes as the
    in-process cluster, the same scores as one process, all header facts true."""
    paths, _ = parts
    pattern = str(Path(paths[0]).parent / "part-*.txt")
    with scheduler_and_workers(tmp_path) as (address, _):
        train = rankkit("train", pattern, "m.model", "-C", "0.01", "--loss", "huber", "--dask", address, "-v",
                        cwd=tmp_path)
        assert train.returncode == 0, train.stderr
        err = train.stderr.decode()
        assert re.search(r"iter +1 .*compute [0-9.]+s  communication [0-9.]+s", err), err
        pred = rankkit("predict", pattern, "m.model", "dist.scores", "--dask", address, cwd=tmp_path)
        assert pred.returncode == 0, pred.stderr
    res, _ = fit_newton(paths, client, C=0.01, loss="huber")
    model = read_model(str(tmp_path / "m.model"))
    assert model.weights.tobytes() == res.w.tobytes()
    h = model.header
    ds = read_svmlight(str(SAMPLE))
    assert (int(h["n_documents"]), int(h["n_queries"]), int(h["n_pairs"])) == (ds.n_rows, ds.n_queries, ds.n_pairs)
    assert (h["parts"], h["workers"], h["converged"], h["solver"], h["loss"]) == ("4", "1", "true", "newton", "huber")
    assert float(h["objective"]) == res.objective and int(h["iterations"]) == res.iterations
    from rankkit import commands

    commands.predict(str(SAMPLE), str(tmp_path / "m.model"), str(tmp_path / "one.scores"))  # as one process
    assert (tmp_path / "one.scores").read_bytes() == (tmp_path / "dist.scores").read_bytes()


def test_predict_and_eval_over_parts(parts, client, tmp_path):
    """predict PARTS... --dask: one file in part order or one per part (--out-dir), the same scores
    as one process; eval PARTS... SCORES --dask: the same metrics as one process."""
    from rankkit import commands

    paths, _ = parts
    model = tmp_path / "m.model"
    commands.train(str(SAMPLE), str(model), solver="newton", params={"C": 0.01}, warn=lambda m: None)
    commands.predict(str(SAMPLE), str(model), str(tmp_path / "one.scores"))
    commands.predict_parts(paths, str(model), out_file=str(tmp_path / "dist.scores"), dask=client)
    one = (tmp_path / "one.scores").read_bytes()
    assert (tmp_path / "dist.scores").read_bytes() == one
    (tmp_path / "per").mkdir()
    commands.predict_parts(paths, str(model), out_dir=str(tmp_path / "per"), dask=client)
    assert b"".join((tmp_path / "per" / (Path(p).name + ".scores")).read_bytes() for p in paths) == one
    shown, shown1 = [], []
    metrics = ("ndcg@10", "map", "err@5")
    commands.eval_parts(paths, str(tmp_path / "dist.scores"), dask=client, metrics=metrics, fmt="json",
                        per_query=True, echo=shown.append)
    commands.evaluate((str(SAMPLE), str(tmp_path / "dist.scores")), metrics=metrics, fmt="json", per_query=True,
                      echo=shown1.append)
    assert json.loads("\n".join(shown)) == json.loads("\n".join(shown1))


@pytest.mark.slow
def test_worker_killed_mid_fit(parts, tmp_path):
    """A worker process killed by SIGKILL in the middle of a fit: its parts are read again on the
    other worker, and the model has the same bytes as an undisturbed fit."""
    paths, _ = parts
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, scheduler_kwargs=QUIET,
                                  silence_logs=50, env={"NUMBA_NUM_THREADS": "1"}) as cluster, \
            distributed.Client(cluster) as c:
        ref = fit_newton(paths, c, C=0.01, loss="logistic")[0].w.tobytes()
        pids = c.run(os.getpid)
        victim = sorted(pids)[1]
        killed = []

        def log(line):  # from a timer, so that the kill most likely lands while a round is in flight
            if line.startswith("iter   2") and not killed:
                import threading

                threading.Timer(0.05, os.kill, (pids[victim], signal.SIGKILL)).start()
                killed.append(victim)

        res, facts = fit_newton(paths, c, C=0.01, loss="logistic", log=log)
    assert killed and facts["parts_read_again"] >= 2, facts
    assert res.w.tobytes() == ref


def test_grid_path_on_parts_is_the_one_process_path(parts, client):
    """`rankkit path 'part-*' VALID --dask`: the parts stay loaded along the warm-started grid; the
    same grid, objectives (to 1e-10) and choice as the path on the concatenated file."""
    from rankkit import commands

    paths, _ = parts
    valid = str(ROOT / "data" / "sample.vali.txt")
    dist = commands.path(str(Path(paths[0]).parent / "part-*.txt"), valid, method="grid", n_points=3, ratio=1e4,
                         dask=client, echo=lambda line: None)
    one = commands.path(str(SAMPLE), valid, method="grid", n_points=3, ratio=1e4, echo=lambda line: None)
    assert dist.chosen == one.chosen
    for a, b in zip(dist.points, one.points):
        assert abs(a.C - b.C) <= 1e-12 * b.C and abs(a.objective - b.objective) <= RTOL * b.objective
        assert a.metric == b.metric and a.iterations == b.iterations


@pytest.mark.slow
def test_cli_local_cluster(parts, client, tmp_path):
    """--dask local:2: a LocalCluster of two worker processes started and stopped by rankkit."""
    paths, _ = parts
    proc = rankkit("train", *paths, "m.model", "-C", "0.01", "--query-norm", "--dask", "local:2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    model = read_model(str(tmp_path / "m.model"))
    assert model.header["workers"] == "2"
    assert model.weights.tobytes() == fit_newton(paths, client, C=0.01, query_norm=True)[0].w.tobytes()


def test_parts_at_urls_that_fsspec_reads(parts, client):
    """Parts given as URLs (here fsspec's memory://, seen by the in-process workers; s3://, gs://,
    hdfs:// alike with their fsspec packages): the same model as from local files."""
    import fsspec

    paths, _ = parts
    fs = fsspec.filesystem("memory")
    for k, p in enumerate(paths):
        fs.pipe(f"/rankkit-test/part-{k}.txt", Path(p).read_bytes())
    try:
        res, facts = fit_newton(["memory://rankkit-test/part-*.txt"], client, C=0.01)
        assert facts["parts"] == 4
        assert res.w.tobytes() == fit_newton(paths, client, C=0.01)[0].w.tobytes()
        with pytest.raises(DataError, match="memory://rankkit-test/none.txt: no such file"):
            fit_newton(["memory://rankkit-test/none.txt", "memory://rankkit-test/part-0.txt"], client)
    finally:
        fs.rm("/rankkit-test", recursive=True)


def test_python_api_fit_parts_on_a_client_equals_one_process(parts, client):
    """rankkit.RankSVM(...).fit_parts(PARTS, client=...) (the Python face of --dask): the optimum
    of the estimator fitted on the concatenated arrays; without a client, the same weights as on
    the cluster, bit for bit."""
    import rankkit

    paths, weights = parts
    X, y, qid = rankkit.load_svmlight_file(str(SAMPLE), query_id=True)
    ref = rankkit.RankSVM(C=0.01).fit(X, y, qid=qid)
    on_cluster = rankkit.RankSVM(C=0.01).fit_parts(paths, client=client)
    assert on_cluster.objective_ == pytest.approx(ref.objective_, rel=1e-10)
    np.testing.assert_allclose(on_cluster.coef_, ref.coef_, rtol=1e-7, atol=1e-10)
    assert on_cluster.model_.header["workers"] == 2 and on_cluster.n_pairs_ == ref.n_pairs_
    here = rankkit.RankSVM(C=0.01).fit_parts(paths)  # no client: the same partial sums in this process
    assert here.coef_.tobytes() == on_cluster.coef_.tobytes() and here.model_.header["workers"] == 1
    weighted = rankkit.RankSVM(C=0.01).fit_parts(paths, query_weights=weights)
    assert weighted.objective_ != ref.objective_
    with pytest.raises(rankkit.UsageError, match="loss is squared-hinge, huber or logistic"):
        rankkit.RankSVM(loss="hinge").fit_parts(paths, client=client)
    with pytest.raises(rankkit.UsageError, match="solver 'newton'"):
        rankkit.RankSVM(solver="newton-pairs").fit_parts(paths, client=client)


def test_python_predict_and_evaluate_over_parts(parts, client, tmp_path):
    """rankkit.predict_parts / rankkit.evaluate_parts: on a cluster and in this process, the scores
    of the estimator on the concatenated file and rankkit.evaluate's metrics, bit for bit."""
    import rankkit

    paths, _ = parts
    X, y, qid = rankkit.load_svmlight_file(str(SAMPLE), query_id=True)
    ranker = rankkit.RankSVM(C=0.01).fit(X, y, qid=qid)
    one = ranker.predict(X)
    for c in (client, None):
        scores = rankkit.predict_parts(ranker, str(Path(paths[0]).parent / "part-*.txt"), client=c)
        assert scores.tobytes() == one.tobytes()
        means, each = rankkit.evaluate_parts(paths, scores, client=c, metrics=("ndcg@10", "map"), per_query=True)
        ref, ref_each = rankkit.evaluate(y, one, qid=qid, metrics=("ndcg@10", "map"), per_query=True)
        assert means == ref
        assert each["qid"].tolist() == ref_each["qid"].tolist()
        np.testing.assert_array_equal(each["map"], ref_each["map"])
    ranker.save(str(tmp_path / "m.model"))
    np.savetxt(tmp_path / "s.txt", one, fmt="%.17g")
    assert rankkit.predict_parts(str(tmp_path / "m.model"), paths, client=client).tobytes() == one.tobytes()
    assert rankkit.evaluate_parts(paths, str(tmp_path / "s.txt"), client=client, metrics="map") == \
        rankkit.evaluate(y, one, qid=qid, metrics="map")
    assert issubclass(rankkit.ClusterError, rankkit.RankkitError)
    with pytest.raises(rankkit.ClusterError, match="not a scheduler address"):
        rankkit.predict_parts(ranker, paths, client="nowhere")


def test_eval_several_scores_files_over_parts_and_stdin_refused(parts, client, tmp_path):
    """`eval PARTS... A.scores B.scores --dask`: two systems side by side with the paired test, as
    one-process `eval DATA A B` (the SCORES files told from the parts by their content), never
    A.scores read as a part; `train - M --dask`: refused in one line before any cluster starts."""
    from rankkit import commands

    paths, _ = parts
    model = tmp_path / "m.model"
    commands.train(str(SAMPLE), str(model), solver="newton", params={"C": 0.01}, warn=lambda m: None)
    commands.predict(str(SAMPLE), str(model), str(tmp_path / "a.scores"))
    rng = np.random.default_rng(0)
    np.savetxt(tmp_path / "b.scores", rng.normal(size=sum(1 for _ in SAMPLE.open("rb"))), fmt="%.17g")
    shown, shown1 = [], []
    a, b = str(tmp_path / "a.scores"), str(tmp_path / "b.scores")
    commands.eval_parts([*paths, a], b, dask=client, metrics=("ndcg@10", "map"), fmt="json", echo=shown.append,
                        permutations=500)
    commands.evaluate((str(SAMPLE), a, b), metrics=("ndcg@10", "map"), fmt="json", echo=shown1.append,
                      permutations=500)
    assert json.loads("\n".join(shown)) == json.loads("\n".join(shown1))
    proc = rankkit("train", "-", "m.model", "--dask", "tcp://127.0.0.1:9", cwd=tmp_path, stdin=SAMPLE.read_bytes())
    assert_one_line_error(proc, "standard input (-) cannot be a part with --dask")


def test_parts_joined_in_place_equal_the_copying_join(parts, tmp_path):
    """concatenate(consume=True) (what `train PARTS...` runs in one process: the first part's arrays
    grown in place, each later part copied in and freed) gives the arrays of the copying join,
    also when one part needs int32 column indices and the others fit uint16."""
    paths, _ = parts
    wide = tmp_path / "wide.txt"
    wide.write_bytes(b"2 qid:900001 3:1 70000:0.5\n0 qid:900001 1:1\n1 qid:900002 2:1 # docid = x\n0 qid:900002 4:2\n")
    for files in (paths, [*paths, str(wide)]):
        ref = concatenate([read_svmlight(p, narrow_indices=True) for p in files])
        held = [read_svmlight(p, narrow_indices=True) for p in files]
        got = concatenate(held, consume=True)
        assert held == []
        for name in ("data", "indptr", "y", "qid", "qptr"):
            a, b = getattr(got, name), getattr(ref, name)
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), name
        np.testing.assert_array_equal(got.indices, ref.indices)  # kept narrow (uint16) while every part is
        assert got.indices.dtype == (np.int32 if files[-1] == str(wide) else np.uint16)
        assert (got.n_features, got.source, got.n_pairs) == (ref.n_features, ref.source, ref.n_pairs)


def test_a_part_a_worker_cannot_see_names_the_worker(parts, client, tmp_path):
    """A relative part is made absolute on the client; a part missing where the worker looks is
    one DataError naming the path, the worker and its host."""
    paths, _ = parts
    missing = tmp_path / "gone" / "part-9.txt"
    with pytest.raises(DataError, match=re.escape(f"{missing}: no such file on the Dask worker ") + r"\S+ \(host "):
        fit_newton([paths[0], str(missing)], client)
    import rankkit

    with pytest.raises(DataError, match="no such file on the Dask worker"):
        rankkit.predict_parts(rankkit.RankSVM(C=0.01).fit_parts(paths[:1]), [str(missing)], client=client)


def test_predict_out_dir_is_all_or_nothing(parts, client, tmp_path, monkeypatch):
    """predict PARTS --out-dir: a run that fails at the third part leaves no score file (and no
    staged one); the earlier files of a previous run are left as they were."""
    from rankkit import commands
    from rankkit.distributed import commands as DC

    paths, _ = parts
    model = tmp_path / "m.model"
    commands.train(str(SAMPLE), str(model), solver="newton", params={"C": 0.01}, warn=lambda m: None)
    out = tmp_path / "per"
    out.mkdir()
    (out / "part-0.txt.scores").write_text("old\n")
    real = DC._score_part
    seen = []

    def failing(path, *args):  # in-process workers share this module
        seen.append(path)
        if path.endswith("part-2.txt"):
            raise DataError(path, "made to fail")
        return real(path, *args)

    monkeypatch.setattr(DC, "_score_part", failing)
    with pytest.raises(DataError, match="made to fail"):
        commands.predict_parts(paths, str(model), out_dir=str(out), dask=client)
    assert sorted(p.name for p in out.iterdir()) == ["part-0.txt.scores"]
    assert (out / "part-0.txt.scores").read_text() == "old\n"


def test_predict_and_eval_take_parts_without_a_cluster(parts, client, tmp_path, monkeypatch):
    """Parts alike in every command (issue 40): `predict PARTS... MODEL OUT` and `eval PARTS...
    SCORES` without --dask run part by part in this process, with the bytes and numbers of --dask
    (eval used to read the second part as a scores file; predict refused several files)."""
    from rankkit import commands

    paths, _ = parts
    model = tmp_path / "m.model"
    commands.train(str(SAMPLE), str(model), solver="newton", params={"C": 0.01}, warn=lambda m: None)
    commands.predict_parts(paths, str(model), out_file=str(tmp_path / "dist.scores"), dask=client)
    here = rankkit("predict", *paths, str(model), "here.scores", cwd=tmp_path)
    assert here.returncode == 0, here.stderr
    assert (tmp_path / "here.scores").read_bytes() == (tmp_path / "dist.scores").read_bytes()
    pattern = str(Path(paths[0]).parent / "part-*.txt")
    glob_run = rankkit("predict", pattern, str(model), "glob.scores", cwd=tmp_path)
    assert glob_run.returncode == 0 and (tmp_path / "glob.scores").read_bytes() == (tmp_path / "here.scores").read_bytes()
    shown = []
    monkeypatch.chdir(tmp_path)  # the SCORES file named as the command line names it
    commands.eval_parts(paths, "dist.scores", dask=client, metrics=("ndcg@10", "map"), echo=shown.append)
    ev = rankkit("eval", *paths, "here.scores", "-m", "ndcg@10", "-m", "map", cwd=tmp_path)
    assert ev.returncode == 0, ev.stderr
    assert ev.stdout.decode().replace("here.scores", "SCORES") == ("\n".join(shown) + "\n").replace("dist.scores", "SCORES")
    # one DATA file and several SCORES, one of them standard input: still the one-file eval
    two = rankkit("eval", str(SAMPLE), "-", "here.scores", cwd=tmp_path, stdin=(tmp_path / "here.scores").read_bytes())
    assert two.returncode == 0 and two.stdout.count(b"1.0000") >= 2, two.stderr
