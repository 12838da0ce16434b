"""The exact hinge RankSVM path (rankkit.paths.exact) against the bundle solver, the KKT conditions
and the duality gap, at breakpoints and between them."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from conftest import make_dataset
from rankkit.data import Dataset
from rankkit.paths.exact import PathWarning, exact_path, full_pairs, kkt_violation, reduced_pairs
from rankkit.objectives.pairs import ExplicitPairObjective
from rankkit.solvers.bundle import BundleRankSVM, bmrm
from reference import dense, explicit_pairs

KKT_TOL = 1e-7
W_TOL = 1e-6


def gaussians(n_per: int, seed: int, d: int = 2, sep: float = 1.0) -> Dataset:
    """Two Gaussian clouds as one query: label 1 above label 0 (the paper's mixture setting)."""
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.standard_normal((n_per, d)) + sep, rng.standard_normal((n_per, d)) - sep])
    n = 2 * n_per
    return Dataset(data=X.ravel().copy(), indices=np.tile(np.arange(d, dtype=np.int32), n),
                   indptr=(np.arange(n + 1) * d).astype(np.int64), y=np.r_[np.ones(n_per), np.zeros(n_per)],
                   qid=np.zeros(n, np.int64), qptr=np.array([0, n], np.int64), n_features=d).validate()


def small() -> Dataset:
    return make_dataset(seed=1, sizes=(12, 15, 10, 8), n_features=5, one_label_queries=())


def run(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PathWarning)
        return exact_path(*args, **kwargs)


def Q_of(res, K):
    P = np.zeros((res.n_pairs, K.shape[0]))
    P[np.arange(res.n_pairs), res.pi] = 1.0
    P[np.arange(res.n_pairs), res.pj] = -1.0
    return P @ K @ P.T


def check_kkt_and_gap(res, Q):
    for t, b in enumerate(res.breakpoints):
        a = res.alpha(t)
        marg = Q @ a / b.lam
        assert a.min() >= -KKT_TOL and a.max() <= 1 + KKT_TOL
        assert kkt_violation(a, marg) < 1e-6, (t, b.event)
        hinge = np.maximum(0.0, 1.0 - marg).sum()
        assert hinge == pytest.approx(b.hinge, rel=1e-9, abs=1e-9)
        primal = hinge + 0.5 * a @ Q @ a / b.lam
        dual = a.sum() - 0.5 * a @ Q @ a / b.lam
        assert primal == pytest.approx(b.objective, rel=1e-9, abs=1e-9)
        assert primal - dual <= 1e-6 * max(1.0, primal), (t, primal - dual)


def probe_lambdas(res, k=4):
    lams = res.lambdas
    ts = np.unique(np.linspace(0, len(lams) - 2, k).astype(int))
    out = []
    for t in ts:
        out += [lams[t], 0.5 * (lams[t] + lams[t + 1])]
    return out


@pytest.fixture(scope="module")
def small_path():
    ds = small()
    return ds, run(ds, make_dataset(seed=2, sizes=(10, 10), n_features=5, one_label_queries=()))


def test_start_and_monotone(small_path):
    ds, res = small_path
    X = dense(ds)
    P = explicit_pairs(ds.y, ds.qptr)
    A = X[P[:, 0]] - X[P[:, 1]]
    assert res.n_pairs == ds.n_pairs == len(P)
    lam0 = float(np.max(A @ (A.T @ np.ones(len(P)))))
    assert res.lambdas[0] == pytest.approx(lam0, rel=1e-12)
    assert np.all(res.alpha(0) == 1.0) and res.breakpoints[0].event == "init"
    assert np.all(np.diff(res.lambdas) < 0)
    assert np.all(res.alpha_at(2 * lam0) == 1.0)
    b = res.breakpoints[0]
    assert b.n_alpha + b.n_one + b.n_zero == res.n_pairs and b.n_alpha >= 1
    assert set(res.breakpoints[0].metrics) == {"ndcg@10"}
    assert len(res.breakpoints) > 20
    assert any(b.n_alpha == 0 for b in res.breakpoints[1:])  # I_alpha emptied: re-initialised


def test_linear_matches_bundle_at_and_between_breakpoints(small_path):
    ds, res = small_path
    for lam in probe_lambdas(res, 5):
        w = res.w_at(lam)
        # J is 1-strongly convex, so ||ref.w - w*|| <= sqrt(2 gap): the reference is solved to a gap well below W_TOL^2 / 2
        ref = BundleRankSVM(C=1.0 / lam, tol=1e-13, loss="hinge", max_iter=5000).fit(ds)
        X = dense(ds)
        P = explicit_pairs(ds.y, ds.qptr)
        A = X[P[:, 0]] - X[P[:, 1]]
        J = 0.5 * w @ w + np.maximum(0.0, 1.0 - A @ w).sum() / lam
        assert J <= ref.objective + 1e-9 * ref.objective
        assert J >= ref.extra["lower_bound"] - 1e-9 * ref.objective
        assert np.max(np.abs(w - ref.w)) < W_TOL * max(1.0, np.abs(ref.w).max())  # 0.5||w||^2: w is unique


def test_kkt_and_zero_duality_gap_linear(small_path):
    ds, res = small_path
    X = dense(ds)
    check_kkt_and_gap(res, Q_of(res, X @ X.T))


def test_kernel_linear_scores_equal_w_scores(small_path):
    ds, res = small_path
    valid = make_dataset(seed=5, sizes=(9, 7), n_features=5, one_label_queries=())
    for lam in probe_lambdas(res, 3):
        assert np.allclose(res.scores_at(lam, valid), dense(valid) @ res.w_at(lam), rtol=1e-10, atol=1e-10)


def test_two_gaussians_single_query_matches_bundle():
    tr = gaussians(15, 0)
    res = run(tr, gaussians(8, 1), metric=["ndcg@10", "map"])
    assert res.n_pairs == 225 and set(res.breakpoints[0].metrics) == {"ndcg@10", "map"}
    X = dense(tr)
    check_kkt_and_gap(res, Q_of(res, X @ X.T))
    for lam in probe_lambdas(res, 3):
        ref = BundleRankSVM(C=1.0 / lam, tol=1e-12, loss="hinge", max_iter=5000).fit(tr)
        assert np.max(np.abs(res.w_at(lam) - ref.w)) < W_TOL * max(1.0, np.abs(ref.w).max())


@pytest.mark.parametrize("graph", ["full", "reduced"])
def test_rbf_kkt_and_zero_duality_gap(graph):
    tr = gaussians(10, 3)
    res = run(tr, None, kernel="rbf", gamma=0.5, graph=graph)
    assert res.stop_reason in ("lambda_min", "complete")
    from rankkit.feature_maps import make_kernel

    K = make_kernel("rbf", 2, 0.5, 3, 0.0).matrix(tr.csr(), tr.csr())
    check_kkt_and_gap(res, Q_of(res, K))
    # interpolation: between breakpoints the dual point is still optimal (gap zero)
    Q = Q_of(res, K)
    for lam in probe_lambdas(res, 4):
        a = res.alpha_at(lam)
        marg = Q @ a / lam
        assert kkt_violation(a, marg) < 1e-6


def test_poly_kernel_kkt():
    ds = make_dataset(seed=4, sizes=(8, 9), n_features=3, one_label_queries=())
    res = run(ds, None, kernel="poly", gamma=0.5, degree=2, coef0=1.0, max_events=300)
    from rankkit.feature_maps import make_kernel

    X = ds.csr()
    check_kkt_and_gap(res, Q_of(res, make_kernel("poly", 3, 0.5, 2, 1.0).matrix(X, X)))


def test_reduced_graph_is_a_spanning_tree_and_a_relaxation():
    ds = small()
    pi, pj = reduced_pairs(ds)
    fi, fj = full_pairs(ds)
    full = set(zip(fi.tolist(), fj.tolist()))
    assert set(zip(pi.tolist(), pj.tolist())) <= full  # reduced constraints are implied by the full ones
    assert len(pi) == ds.n_rows - ds.n_queries  # one tree per query (every query has >= 2 labels here)
    # ... but not conversely: a, b above c, d; the tree is a-c, a-d, b-c and f = (2, 1, 0, 1) satisfies it
    four = Dataset(data=np.ones(4), indices=np.zeros(4, np.int32), indptr=np.arange(5, dtype=np.int64),
                   y=np.array([1.0, 1.0, 0.0, 0.0]), qid=np.zeros(4, np.int64), qptr=np.array([0, 4], np.int64),
                   n_features=1)
    ri, rj = reduced_pairs(four)
    f = np.array([2.0, 1.0, 0.0, 1.0])
    assert sorted(zip(ri.tolist(), rj.tolist())) == [(0, 2), (0, 3), (1, 2)]
    assert np.all(f[ri] - f[rj] >= 1) and f[1] - f[3] < 1


def test_reduced_path_is_exact_on_reduced_pairs_but_differs_from_full(small_path):
    ds, full_res = small_path
    res = run(ds, None, graph="reduced")
    X = dense(ds)
    check_kkt_and_gap(res, Q_of(res, X @ X.T))
    owner = np.searchsorted(ds.qptr, res.pi, side="right") - 1
    A = X[res.pi] - X[res.pj]
    Af = X[full_res.pi] - X[full_res.pj]
    differ = 0
    for lam in probe_lambdas(res, 4):
        w = res.w_at(lam)
        ref = bmrm(ExplicitPairObjective(ds, 1.0 / lam, loss="hinge", pairs=(res.pi, res.pj, owner)), tol=1e-10,
                   max_iter=5000)
        assert np.max(np.abs(w - ref.w)) < W_TOL * max(1.0, np.abs(ref.w).max())
        J = 0.5 * w @ w + np.maximum(0.0, 1.0 - A @ w).sum() / lam
        assert J == pytest.approx(ref.objective, rel=1e-8)
        if lam >= full_res.lambdas[-1]:
            wf = full_res.w_at(lam)
            differ += np.max(np.abs(w - wf)) > 1e-3
            # the reduced optimum is worse on the full objective (it optimises another function)
            Jf = lambda v: 0.5 * v @ v + np.maximum(0.0, 1.0 - Af @ v).sum() / lam  # noqa: E731
            assert Jf(wf) <= Jf(w) + 1e-9 * Jf(w)
    assert differ >= 1


def test_stops_with_warning_at_max_events_and_silently_at_lambda_min():
    ds = small()
    with pytest.warns(PathWarning, match="max_events"):
        res = exact_path(ds, None, max_events=5)
    assert res.stop_reason == "max_events" and res.n_events <= 6
    with pytest.raises(ValueError):
        res.alpha_at(res.lambdas[-1] * 0.5)
    lam0 = res.lambdas[0]
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", PathWarning)  # reaching lambda_min is the path's normal end, not a warning
        res = exact_path(ds, None, lambda_min=0.5 * lam0)
    assert res.lambdas[-1] == pytest.approx(0.5 * lam0) and res.breakpoints[-1].event == "lambda_min"
    assert np.all(np.diff(res.lambdas) < 0)


def test_bad_options():
    from rankkit.errors import UsageError

    with pytest.raises(UsageError):
        exact_path(small(), None, graph="tree")
    with pytest.raises(UsageError):
        exact_path(small(), None, kernel="sigmoid")
    res = run(small(), None, kernel="rbf", max_events=20)
    with pytest.raises(UsageError):
        res.w_at(res.lambdas[1])


# -- the linear structure (K = X X' never formed) against the dense reference route ---------------
def _continuous_valid(seed):
    """Validation data without mathematically tied scores between different documents (duplicated
    and empty rows tie exactly under both routes), so that both routes rank it the same way."""
    return make_dataset(seed=seed, sizes=(1, 9, 14, 6, 11), n_features=6)


EQUIV_CASES = {
    # one-document queries, a one-label query, empty rows, duplicated rows, an unused feature
    "awkward": lambda: (make_dataset(seed=0), _continuous_valid(7)),
    # integer features: many exact score ties, margins hitting 1 at the same lambda (zero-length steps)
    "integer_ties": lambda: (make_dataset(seed=3, integer_features=True, n_labels=4), _continuous_valid(8)),
    "binary_ties": lambda: (make_dataset(seed=5, integer_features=True, n_labels=2, sizes=(1, 20, 3, 40, 1, 15)),
                            _continuous_valid(9)),
}


def _same_path(ref, new):
    assert new.route == "linear" and ref.route == "dense"
    assert new.stop_reason == ref.stop_reason and new.n_events == ref.n_events
    assert len(new.breakpoints) == len(ref.breakpoints)
    np.testing.assert_allclose(new.lambdas, ref.lambdas, rtol=1e-10, atol=0)
    for t, (a, b) in enumerate(zip(ref.breakpoints, new.breakpoints)):
        assert (a.event, a.pairs, a.n_alpha, a.n_zero, a.n_one) == (b.event, b.pairs, b.n_alpha, b.n_zero, b.n_one), t
        assert b.hinge == pytest.approx(a.hinge, rel=1e-9, abs=1e-9)
        assert b.objective == pytest.approx(a.objective, rel=1e-9, abs=1e-9)
        assert b.metrics.keys() == a.metrics.keys()
        for k in a.metrics:
            assert b.metrics[k] == pytest.approx(a.metrics[k], rel=0, abs=1e-12), (t, k)
    lams = ref.lambdas
    probe = sorted(set(range(0, len(lams), 4)) | {len(lams) - 1})  # replaying alpha is the slow part: every 4th
    for t in probe:
        assert np.max(np.abs(new.alpha(t) - ref.alpha(t))) < 1e-9, t
    for lam in [lams[t] for t in probe] + [0.5 * (lams[t] + lams[t + 1]) for t in probe[:-1]] + [2 * lams[0]]:
        w_ref = np.asarray(ref._X.T @ ref.beta_at(lam)).ravel()  # from alpha, as the dense route has no stored w
        assert np.max(np.abs(new.w_at(lam) - w_ref)) <= 1e-9 * max(1.0, np.abs(w_ref).max()), lam


@pytest.mark.parametrize("case", sorted(EQUIV_CASES))
@pytest.mark.parametrize("graph", ["full", "reduced"])
def test_linear_route_gives_the_dense_reference_path(case, graph):
    train, valid = EQUIV_CASES[case]()
    ref = run(train, valid, graph=graph, route="dense", metric=["ndcg@10", "map"])
    new = run(train, valid, graph=graph, metric=["ndcg@10", "map"])  # the default route for the linear kernel
    assert len(ref.breakpoints) > 20
    if case != "awkward":  # ties: several events at one lambda, resolved by zero-length steps
        assert new.n_events > len(new.breakpoints)
    _same_path(ref, new)


@pytest.mark.parametrize("select", ["best", "1se"])
def test_linear_route_chooses_the_same_model(select, monkeypatch):
    """exact_path_points (what `rankkit path --method exact` runs): the same points, chosen C and
    weights through either route."""
    import rankkit.paths.exact as ep
    from rankkit.paths.grid import exact_path_points

    train, valid = EQUIV_CASES["integer_ties"]()
    new, _, _ = exact_path_points(train, valid, metric="ndcg@10", select=select)
    dense_exact_path = ep.exact_path
    monkeypatch.setattr(ep, "exact_path", lambda *a, **k: dense_exact_path(*a, route="dense", **k))
    ref, raw, _ = exact_path_points(train, valid, metric="ndcg@10", select=select)
    assert raw.route == "dense"
    assert new.chosen == ref.chosen and len(new.points) == len(ref.points)
    assert new.best.C == pytest.approx(ref.best.C, rel=1e-10)
    for a, b in zip(ref.points, new.points):
        assert b.metric == pytest.approx(a.metric, abs=1e-12)
        assert b.objective == pytest.approx(a.objective, rel=1e-9)
        assert np.max(np.abs(b.w - a.w)) <= 1e-9 * max(1.0, np.abs(a.w).max())


def test_linear_products_equal_the_dense_ones():
    """Each product of the linear structure against the dense kernel matrix, on rows that are empty,
    duplicated, or have an unused column."""
    from rankkit.paths.exact import DenseKernel, LinearStructure
    from rankkit.feature_maps import make_kernel

    ds, valid = make_dataset(seed=0), _continuous_valid(7)
    pi, pj = full_pairs(ds)
    X, Xv = ds.csr(), valid.csr(ds.n_features)
    dense_ops = DenseKernel(make_kernel("linear", ds.n_features, None, 3, 0.0), X, Xv, pi, pj)
    lin = LinearStructure(X, Xv, pi, pj)
    assert not any(isinstance(v, np.ndarray) and v.ndim == 2 for v in vars(lin).values())
    rng = np.random.default_rng(0)
    np.testing.assert_allclose(lin.qdiag, dense_ops.qdiag, rtol=1e-12, atol=1e-12)
    z = rng.standard_normal(ds.n_rows)
    np.testing.assert_allclose(lin.apply(z)[0], dense_ops.apply(z)[0], rtol=1e-12, atol=1e-12)
    for idx in (np.array([3]), np.array([0, 7, 7 + 1, len(pi) - 1]), rng.choice(len(pi), 25, replace=False)):
        v = rng.standard_normal(idx.shape[0])
        kz_lin, u, _ = lin.apply_pairs(v, idx)
        kz_dense, _, z_pairs = dense_ops.apply_pairs(v, idx)
        np.testing.assert_allclose(kz_lin, kz_dense, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(u, dense(ds).T @ z_pairs, rtol=1e-12, atol=1e-12)  # X'P_idx'v, P_idx'v
        for p in (0, int(idx[-1]), len(pi) - 1):
            np.testing.assert_allclose(lin.q_cols(idx, p), dense_ops.q_cols(idx, p), rtol=1e-12, atol=1e-12)
    beta = rng.standard_normal(ds.n_rows)
    np.testing.assert_allclose(lin.valid_scores(None, dense(ds).T @ beta), dense_ops.valid_scores(beta, None),
                               rtol=1e-12, atol=1e-12)


def _peak_bytes(fn) -> int:
    import tracemalloc

    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _many_queries(n_queries: int, size: int, d: int, seed: int) -> Dataset:
    rng = np.random.default_rng(seed)
    n = n_queries * size
    X = rng.standard_normal((n, d))
    X[::9] = 0.0  # empty rows
    return Dataset(data=X.ravel().copy(), indices=np.tile(np.arange(d, dtype=np.int32), n),
                   indptr=(np.arange(n + 1) * d).astype(np.int64), y=rng.integers(0, 3, n).astype(np.float64),
                   qid=np.repeat(np.arange(n_queries, dtype=np.int64), size),
                   qptr=(np.arange(n_queries + 1) * size).astype(np.int64), n_features=d).validate()


def test_linear_route_memory_does_not_grow_as_n_squared():
    """n = 2,000 documents (a dense n x n matrix: 32 MB): the linear route's peak traced memory stays
    a small fraction of one n x n matrix (it holds O(pairs + nnz)); the dense route (the check's own
    control) exceeds it."""
    train, valid = _many_queries(200, 10, 10, 11), _many_queries(40, 10, 10, 12)
    n = train.n_rows
    nn_bytes = 8 * n * n
    run(train, valid, max_events=2)  # numba's first calls (loading compiled kernels) are not the path's memory
    linear = _peak_bytes(lambda: run(train, valid, max_events=40))
    assert linear < 0.1 * nn_bytes, (linear, nn_bytes)
    dense = _peak_bytes(lambda: run(train, valid, max_events=3, route="dense"))
    assert dense > nn_bytes, (dense, nn_bytes)


def test_route_option():
    from rankkit.errors import UsageError

    with pytest.raises(UsageError, match="route"):
        exact_path(small(), None, route="sparse")
    with pytest.raises(UsageError, match="linear kernel"):
        exact_path(small(), None, kernel="rbf", route="linear")
    assert run(small(), None, kernel="rbf", max_events=5).route == "dense"


def test_progress_from_the_start():
    lines, calls = [], []
    res = run(small(), small(), log=lines.append, progress=lambda d, t, info=None: calls.append((d, t, info)))
    assert "pairs" in lines[0] and "building" in lines[0]  # before any work
    assert "ready" in lines[1]
    steps = [ln for ln in lines if "breakpoint" in ln]
    assert steps and all("lambda" in ln and "|I_alpha|" in ln and ln.endswith(")") or ln.endswith(" s") for ln in steps)
    assert f"breakpoint {len(res.breakpoints):,}" in lines[-1] and "(lambda_min)" in lines[-1]
    assert calls[-1][:2] == (1000, 1000) and all(0 <= d <= t for d, t, _ in calls)
    assert [d for d, _, _ in calls] == sorted(d for d, _, _ in calls)


def _small_train_file(tmp_path):
    from test_cli import SAMPLE_TRAIN

    lines = SAMPLE_TRAIN.read_text().splitlines()
    qids = list(dict.fromkeys(ln.split()[1] for ln in lines))
    (tmp_path / "small.txt").write_text("\n".join(ln for ln in lines if ln.split()[1] in qids[:4]) + "\n")
    return "small.txt"


def test_cli_verbose_progress_lines_and_a_progress_bar_on_a_terminal(tmp_path):
    """-v: plain lines from the start (what it does, breakpoints, lambda, |I_alpha|, time), no
    carriage returns; without -v nothing on a pipe, and a progress line on a terminal."""
    import os
    import pty
    import subprocess
    import sys

    from test_cli import SAMPLE_TEST, _env, rankkit

    from rankkit.io.svmlight import read_svmlight

    train = _small_train_file(tmp_path)
    lam0 = run(read_svmlight(str(tmp_path / train)), None, max_events=1).lambdas[0]
    short = ["--method", "exact", "--lambda-min", repr(float(1e-3 * lam0))]  # a normal end (no warning), a short path
    proc = rankkit("path", train, SAMPLE_TEST, *short, "-v", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()
    err = proc.stderr.decode()
    lines = [ln for ln in err.splitlines() if ln.startswith("exact path:")]
    assert "\r" not in err and len(lines) >= 3
    assert "pairs" in lines[0] and "building" in lines[0] and "linear kernel through the sparse features" in lines[1]
    assert all("lambda" in ln and "|I_alpha|" in ln and " s" in ln for ln in lines[2:])
    assert "(lambda_min)" in lines[-1]
    quiet = rankkit("path", train, SAMPLE_TEST, *short, cwd=tmp_path)
    assert quiet.returncode == 0 and quiet.stderr == b""
    assert quiet.stdout == proc.stdout  # the same path and choice with and without -v
    master, slave = pty.openpty()
    try:
        tty = subprocess.run([sys.executable, "-m", "rankkit", "path", train, SAMPLE_TEST, *short],
                             cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=slave, timeout=300)
        os.close(slave)
        slave = None
        shown = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the terminal's other side is closed and drained
                break
            if not chunk:
                break
            shown += chunk
    finally:
        if slave is not None:
            os.close(slave)
        os.close(master)
    assert tty.returncode == 0 and tty.stdout == proc.stdout
    assert b"exact path" in shown and b"100%" in shown and b"breakpoints" in shown, shown[-300:]
