"""The exact hinge RankSVM path (rankkit.exact_path) against the bundle solver, the KKT conditions
and the duality gap, at breakpoints and between them."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from conftest import make_dataset
from rankkit.data import Dataset
from rankkit.exact_path import PathWarning, exact_path, full_pairs, kkt_violation, reduced_pairs
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
        ref = BundleRankSVM(C=1.0 / lam, tol=1e-10, loss="hinge", max_iter=5000).fit(ds)
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
        ref = BundleRankSVM(C=1.0 / lam, tol=1e-10, loss="hinge", max_iter=5000).fit(tr)
        assert np.max(np.abs(res.w_at(lam) - ref.w)) < W_TOL * max(1.0, np.abs(ref.w).max())


@pytest.mark.parametrize("graph", ["full", "reduced"])
def test_rbf_kkt_and_zero_duality_gap(graph):
    tr = gaussians(10, 3)
    res = run(tr, None, kernel="rbf", gamma=0.5, graph=graph)
    assert res.stop_reason in ("lambda_min", "complete")
    from rankkit.kernels import make_kernel

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
    from rankkit.kernels import make_kernel

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
