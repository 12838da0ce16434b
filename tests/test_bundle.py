"""The hinge-loss RankSVM by the bundle method: the optimum of an exact QP, within the duality gap."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize as so

from rankkit.objectives.pairs import ExplicitPairObjective
from rankkit.objectives.pairwise import PairwiseObjective
from rankkit.solvers import _hinge_kernels as hk
from rankkit.solvers.bundle import BundleRankSVM, HingeOracle, bmrm, simplex_qp
from tests.conftest import make_dataset
from tests.reference import RTOL_KERNEL, dense, explicit_pairs


def _exact_hinge_optimum(ds, C, qweight=None):
    """Dual QP of min 0.5||w||^2 + sum_k c_k max(0, 1 - a_k.w): max sum(alpha) - 0.5||A'alpha||^2,
    0 <= alpha_k <= c_k, solved by L-BFGS-B. Returns (lower, upper): the dual value at its alpha and
    the primal value at w = A'alpha, which bracket the true optimum."""
    X = dense(ds)
    P = explicit_pairs(ds.y, ds.qptr)
    A = X[P[:, 0]] - X[P[:, 1]]
    query_of = np.searchsorted(ds.qptr, P[:, 0], side="right") - 1
    c = C * (np.ones(ds.n_queries) if qweight is None else qweight)[query_of]
    Q = A @ A.T
    res = so.minimize(lambda a: (0.5 * a @ Q @ a - a.sum(), Q @ a - 1.0), np.zeros(len(A)), jac=True,
                      method="L-BFGS-B", bounds=[(0, ck) for ck in c], options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 50000})
    w = A.T @ res.x
    upper = 0.5 * w @ w + np.sum(c * np.maximum(0.0, 1.0 - A @ w))
    lower = res.x.sum() - 0.5 * w @ w
    return lower, upper


def test_hinge_kernel_matches_explicit_pairs():
    """O(n log n) hinge loss and subgradient equal the pair-by-pair ones (away from kinks)."""
    for seed in (0, 3, 7):
        ds = make_dataset(seed=seed, n_labels=3 + seed % 3)
        qw = np.random.default_rng(seed).random(ds.n_queries) + 0.2
        fast = PairwiseObjective(ds, 1.0, "hinge", query_weights=qw)
        slow = ExplicitPairObjective(ds, 1.0, "hinge", query_weights=qw)
        for scale in (0.0, 0.3, 2.0):
            w = np.random.default_rng(seed + 1).standard_normal(ds.n_features) * scale + 1e-3
            y = fast.scores(w)
            Lf, Ls = fast.loss_y(y), slow.loss_y(y)
            assert abs(Lf - Ls) <= RTOL_KERNEL * max(1.0, Ls)
            np.testing.assert_allclose(fast.gy, slow.gy, rtol=0, atol=RTOL_KERNEL * max(1.0, np.abs(slow.gy).max()))


@pytest.mark.parametrize("C", [0.05, 1.0, 20.0])
@pytest.mark.parametrize("query_norm", [False, True])
def test_bundle_reaches_the_exact_hinge_optimum_within_its_gap(C, query_norm):
    ds = make_dataset(seed=4, sizes=(12, 3, 9, 1, 10), n_features=5)
    res = BundleRankSVM(C=C, tol=1e-8, query_norm=query_norm).fit(ds)
    qw = 1.0 / np.maximum(ds.pairs_per_query, 1) if query_norm else None
    lower, upper = _exact_hinge_optimum(ds, C, qw)
    assert upper - lower <= 1e-6 * upper  # the reference brackets the optimum tightly
    gap = res.extra["duality_gap"]
    assert res.converged and gap <= 1e-8 * res.objective
    eps = 1e-12 * upper
    assert res.extra["lower_bound"] <= upper + eps  # the bundle's lower bound is valid
    assert lower - eps <= res.objective <= upper + gap + eps  # the bundle's w is optimal within its gap


def test_bundle_on_explicit_pairs_agrees_with_the_n_log_n_subgradient():
    ds = make_dataset(seed=9, sizes=(20, 15, 1, 12), n_features=6)
    a = bmrm(PairwiseObjective(ds, 2.0, "hinge"), tol=1e-9)
    b = bmrm(ExplicitPairObjective(ds, 2.0, "hinge"), tol=1e-9)
    assert a.converged and b.converged
    assert abs(a.objective - b.objective) <= 1e-8 * a.objective


def test_simplex_qp_matches_scipy():
    rng = np.random.default_rng(0)
    M = rng.standard_normal((8, 3))
    G, b = M @ M.T, rng.standard_normal(8)
    a = simplex_qp(G, b, np.full(8, 1 / 8))
    ref = so.minimize(lambda x: 0.5 * x @ G @ x - b @ x, np.full(8, 1 / 8), method="SLSQP",
                      bounds=[(0, 1)] * 8, constraints={"type": "eq", "fun": lambda x: x.sum() - 1}, options={"ftol": 1e-14})
    assert abs(a.sum() - 1) < 1e-12 and a.min() >= 0
    assert b @ a - 0.5 * a @ G @ a >= -ref.fun - 1e-9


def test_cli_loss_hinge_uses_the_bundle_solver(tmp_path):
    from tests.test_cli import SAMPLE_TRAIN, rankkit

    proc = rankkit("train", SAMPLE_TRAIN, "m.txt", "--loss", "hinge", "-C", "0.01", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()
    text = (tmp_path / "m.txt").read_text()
    assert "solver bundle" in text and "loss hinge" in text and "duality_gap" in text
    bad = rankkit("train", SAMPLE_TRAIN, "m.txt", "--loss", "hinge", "--solver", "newton", cwd=tmp_path)
    assert bad.returncode == 2 and "does not offer --loss hinge" in bad.stderr.decode()


@pytest.mark.parametrize("seed,integer", [(3, True), pytest.param(0, False, marks=pytest.mark.slow),
                                          pytest.param(5, False, marks=pytest.mark.slow)])
def test_line_search_reaches_the_optimum_of_plain_bmrm(seed, integer):
    """OCAS's line search (the default) and plain BMRM: the same optimum, each within its gap and
    above the other's lower bound (ties, one-document and one-label queries, empty rows)."""
    ds = make_dataset(seed=seed, integer_features=integer, n_labels=4)
    for C in (0.1, 2.0):
        a = bmrm(PairwiseObjective(ds, C, "hinge"), tol=1e-8, line_search=True)
        b = bmrm(PairwiseObjective(ds, C, "hinge"), tol=1e-8, line_search=False)
        assert a.converged and b.converged
        eps = 1e-12 * max(a.objective, b.objective)
        assert a.extra["lower_bound"] <= b.objective + eps and b.extra["lower_bound"] <= a.objective + eps
        assert abs(a.objective - b.objective) <= 1e-8 * max(a.objective, b.objective) + eps
        assert a.iterations <= b.iterations


# -- the bundle's own hinge kernel (HingeOracle, solvers/_hinge_kernels.py) and its line search -----
def _hinge_cases():
    """Datasets with ties (integer features; duplicated rows), one-document and one-label queries,
    empty rows, a query of weight 0, and several label counts."""
    for seed in (0, 3, 7):
        ds = make_dataset(seed=seed, n_labels=2 + seed % 4, integer_features=seed != 3)
        qw = np.random.default_rng(seed).random(ds.n_queries) + 0.2
        qw[2] = 0.0
        yield seed, ds, qw


def _score_points(ds, seed):
    """Scores along a run: zero, rounded to 0.5 (pairs exactly at the margin, tied scores), and
    random ones of growing scale, each near the last (warm sorts) or far from it."""
    rng = np.random.default_rng(seed + 1)
    X = dense(ds)
    out = [np.zeros(ds.n_rows)]
    for scale in (0.3, 2.0, 50.0):
        w = rng.standard_normal(ds.n_features) * scale
        y = X @ w
        out += [np.round(y * 2) / 2, y, y + 1e-3 * rng.standard_normal(ds.n_rows)]
    return out


@pytest.mark.parametrize("moves", [16, 0])
def test_hinge_oracle_matches_explicit_pairs(moves):
    """Loss, subgradient and violated pairs of the bundle's kernel equal the pair-by-pair ones,
    call after call (each sort starting from the last call's order; moves=0: every query not
    already in order merge-sorted)."""
    for seed, ds, qw in _hinge_cases():
        slow = ExplicitPairObjective(ds, 1.0, "hinge", query_weights=qw)
        oracle = HingeOracle(PairwiseObjective(ds, 1.0, "hinge", query_weights=qw))
        oracle.moves = moves
        for y in _score_points(ds, seed):
            L, gy, active = oracle(y)
            Ls = slow.loss_y(y)
            assert abs(L - Ls) <= RTOL_KERNEL * max(1.0, Ls)
            np.testing.assert_allclose(gy, slow.gy, rtol=0, atol=RTOL_KERNEL * max(1.0, np.abs(slow.gy).max()))
            assert active == slow.n_active
            for q in range(ds.n_queries):  # the order it leaves is each query's rows, sorted by y
                s, e = ds.qptr[q], ds.qptr[q + 1]
                o = oracle.order[s:e]
                assert sorted(o.tolist()) == list(range(s, e))
                if ds.levels_per_query[q] >= 2 and qw[q] > 0:
                    assert np.all(np.diff(y[o]) >= 0)


def test_hinge_oracle_large_queries_sorted_by_numpy(monkeypatch):
    """Queries above NUMPY_SORT_MIN are sorted by NumPy before the kernel: the same loss."""
    monkeypatch.setattr(hk, "NUMPY_SORT_MIN", 10)
    seed, ds, qw = next(_hinge_cases())
    slow = ExplicitPairObjective(ds, 1.0, "hinge", query_weights=qw)
    oracle = HingeOracle(PairwiseObjective(ds, 1.0, "hinge", query_weights=qw))
    assert len(oracle.big) >= 2
    for y in _score_points(ds, seed):
        L, gy, active = oracle(y)
        assert abs(L - slow.loss_y(y)) <= RTOL_KERNEL * max(1.0, slow.loss_value) and active == slow.n_active


def test_hinge_oracle_same_bits_for_any_number_of_threads(monkeypatch):
    from rankkit import threads

    monkeypatch.setattr(threads, "MIN_WORK_PER_THREAD", 1)
    ds = make_dataset(seed=5, sizes=(1, 2, 7, 30, 12, 5, 1, 25, 9, 300), n_features=9)
    out = {}
    for n in (1, 2, 3):
        with threads.limited(n):
            oracle = HingeOracle(PairwiseObjective(ds, 1.0, "hinge"))
            out[n] = [oracle(y) for y in _score_points(ds, 5)]
            out[n].append(BundleRankSVM(C=0.3, tol=1e-8).fit(ds).w)
    for n in (2, 3):
        for a, b in zip(out[1], out[n]):
            if isinstance(a, tuple):
                assert a[0] == b[0] and a[2] == b[2] and np.array_equal(a[1], b[1])
            else:
                assert np.array_equal(a, b)


def test_insertion_sort_gives_up_with_a_permutation():
    y = np.array([5.0, 4.0, 3.0, 2.0, 1.0, 0.0])
    order = np.arange(6, dtype=np.int64)
    assert not hk.insertion_sort(y, order, 0, 6, 3)
    assert sorted(order.tolist()) == list(range(6))
    assert hk.insertion_sort(y, order, 0, 6, 100) and order.tolist() == [5, 4, 3, 2, 1, 0]
    order = np.array([0, 2, 1, 3], dtype=np.int64)  # stable with respect to the order it starts from
    assert hk.insertion_sort(np.array([1.0, 1.0, 0.0, 1.0]), order, 0, 4, 100) and order.tolist() == [2, 0, 1, 3]


def test_simplex_qp_stops_within_its_frank_wolfe_gap():
    rng = np.random.default_rng(1)
    M = rng.standard_normal((12, 4))
    G, b = M @ M.T, rng.standard_normal(12)
    best = simplex_qp(G, b, np.full(12, 1 / 12))
    value = b @ best - 0.5 * best @ G @ best
    for gap_tol in (1e-1, 1e-3, 1e-6):
        a = simplex_qp(G, b, np.full(12, 1 / 12), gap_tol=gap_tol)
        assert abs(a.sum() - 1) < 1e-12 and a.min() >= 0
        assert value - gap_tol - 1e-12 <= b @ a - 0.5 * a @ G @ a <= value + 1e-12


@pytest.mark.parametrize("seed", [2, 6])
def test_both_oracles_reach_the_same_optimum_and_the_gap_is_true(seed):
    """The bundle's kernel and the objective's own sweeps: the same optimum, each within its gap and
    above the other's lower bound; the objective reported is J(w) computed afresh (brute force over
    the pairs), and the lower bound lies below the exact optimum."""
    ds = make_dataset(seed=seed, sizes=(1, 2, 7, 15, 12, 5, 1, 9), integer_features=seed == 2, n_labels=4)
    C = 0.7
    lower_ref, upper_ref = _exact_hinge_optimum(ds, C)
    slow = ExplicitPairObjective(ds, C, "hinge")
    for tol in (1e-4, 1e-8):
        a = bmrm(PairwiseObjective(ds, C, "hinge"), tol=tol, oracle=HingeOracle(PairwiseObjective(ds, C, "hinge")))
        b = bmrm(PairwiseObjective(ds, C, "hinge"), tol=tol)
        for r in (a, b):
            assert r.converged
            J = 0.5 * r.w @ r.w + C * slow.loss_y(dense(ds) @ r.w)
            assert abs(J - r.objective) <= 1e-12 * J  # the figure written to the model is J(w)
            assert r.extra["duality_gap"] <= tol * r.objective
            assert r.extra["lower_bound"] <= upper_ref + 1e-12 * upper_ref  # a true lower bound
            assert r.objective - r.extra["duality_gap"] <= upper_ref + 1e-12 * upper_ref
            assert lower_ref - 1e-9 * upper_ref <= r.objective  # not below the optimum
        eps = 1e-12 * a.objective
        assert a.extra["lower_bound"] <= b.objective + eps and b.extra["lower_bound"] <= a.objective + eps


def test_bundle_uses_its_kernel_only_for_the_plain_hinge(monkeypatch):
    """Rescaled losses go through the objective's sweeps (HingeOracle would ignore the rescaling)."""
    ds = make_dataset(seed=1)
    calls = []
    real = HingeOracle.__call__
    monkeypatch.setattr(HingeOracle, "__call__", lambda self, y: calls.append(1) or real(self, y))
    BundleRankSVM(C=0.5, rescale="slack").fit(ds)
    assert not calls
    res = BundleRankSVM(C=0.5, query_norm=True).fit(ds)
    assert calls and res.extra["loss_evaluations"] == len(calls)


def test_unconverged_stop_reports_the_true_gap():
    """Stopped by max_iter: the gap in the message and in the model is J(w), recomputed from X w,
    minus the lower bound, and J(w) is the brute-force objective."""
    ds = make_dataset(seed=8)
    C = 5.0
    res = BundleRankSVM(C=C, max_iter=3).fit(ds)
    assert not res.converged and res.stop == "max_iter"
    J = 0.5 * res.w @ res.w + C * ExplicitPairObjective(ds, C, "hinge").loss_y(dense(ds) @ res.w)
    assert abs(J - res.objective) <= 1e-12 * J
    assert res.extra["duality_gap"] == res.objective - res.extra["lower_bound"]
    assert res.detail["gap"] == res.extra["duality_gap"] / res.objective


@pytest.mark.parametrize("max_age,ratio", [(2, 10.0), (50, 0.0)])
def test_retired_planes_and_longer_line_searches_keep_the_optimum(monkeypatch, max_age, ratio):
    """Planes unused for max_age iterations leave the bundle (the lower bound stays valid), and the
    line search takes 3 secant steps when an iteration counts as costly (ratio 0: always): the
    same optimum, within the gap, above the exact one's lower end."""
    import rankkit.solvers.bundle as B

    monkeypatch.setattr(B, "PLANE_MAX_AGE", max_age)
    monkeypatch.setattr(B, "COSTLY_RATIO", ratio)
    ds = make_dataset(seed=4, sizes=(12, 3, 9, 1, 10), n_features=5)
    C = 20.0
    lower, upper = _exact_hinge_optimum(ds, C)
    res = BundleRankSVM(C=C, tol=1e-8).fit(ds)
    assert res.converged and res.extra["duality_gap"] <= 1e-8 * res.objective
    eps = 1e-12 * upper
    assert res.extra["lower_bound"] <= upper + eps
    assert lower - eps <= res.objective <= upper + res.extra["duality_gap"] + eps
