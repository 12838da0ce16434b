"""`newton-pairs` (explicit pair list, PRSVM): kernels vs brute force, and the same optimum as the
O(n log n) solver for the losses both offer."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize as so

from rankkit.objectives.pairs import ExplicitPairObjective
from rankkit.solvers.newton import NewtonPairsRankSVM, NewtonRankSVM
from tests.conftest import make_dataset
from tests.reference import RTOL_KERNEL, RTOL_OPTIMUM, explicit_pairs, logistic_pair_objective, pair_objective


def _close(a, b):
    scale = max(1.0, float(np.max(np.abs(b))))
    np.testing.assert_allclose(a, b, rtol=0, atol=RTOL_KERNEL * scale)


@pytest.mark.parametrize("loss", ["squared-hinge", "huber", "logistic"])
@pytest.mark.parametrize("seed", [0, 3])
def test_explicit_pair_objective_matches_reference(loss, seed):
    ds = make_dataset(seed=seed, integer_features=seed == 3, n_labels=3)
    qw = np.random.default_rng(seed).random(ds.n_queries) + 0.1
    obj = ExplicitPairObjective(ds, 0.7, loss, query_weights=qw)
    assert obj.n_pairs == len(explicit_pairs(ds.y, ds.qptr))
    for scale in (0.0, 0.4, 3.0):
        w = np.random.default_rng(1).standard_normal(ds.n_features) * scale
        f, g = obj.fun_grad(w)
        if loss == "logistic":
            f_ref, g_ref, H_ref = logistic_pair_objective(ds, 0.7, w, qw)
        else:
            f_ref, g_ref, H_ref = pair_objective(ds, 0.7, w, loss, qw)
        _close(f, f_ref)
        _close(g, g_ref)
        s = np.random.default_rng(2).standard_normal(ds.n_features)
        _close(obj.hess_vec(s), H_ref @ s)


@pytest.mark.parametrize("loss", ["squared-hinge", "huber"])
@pytest.mark.parametrize("query_norm", [False, True])
def test_newton_pairs_reaches_the_same_optimum_as_newton(loss, query_norm):
    ds = make_dataset(seed=5, sizes=(40, 3, 25, 1, 30), n_features=7)
    a = NewtonRankSVM(C=1.5, tol=1e-12, loss=loss, query_norm=query_norm).fit(ds)
    b = NewtonPairsRankSVM(C=1.5, tol=1e-12, loss=loss, query_norm=query_norm).fit(ds)
    assert a.converged and b.converged
    assert abs(a.objective - b.objective) <= 1e-10 * a.objective
    np.testing.assert_allclose(a.w, b.w, rtol=0, atol=1e-6 * np.abs(a.w).max())


def test_logistic_reaches_the_scipy_optimum():
    ds = make_dataset(seed=6, sizes=(30, 20, 1, 25), n_features=6)
    res = NewtonPairsRankSVM(C=0.8, tol=1e-12, loss="logistic").fit(ds)

    def fg(w):
        f, g, _ = logistic_pair_objective(ds, 0.8, w)
        return f, g

    ref = so.minimize(fg, np.zeros(ds.n_features), jac=True, method="BFGS", options={"gtol": 1e-10})
    assert res.converged
    assert abs(res.objective - ref.fun) <= RTOL_OPTIMUM * ref.fun


def test_per_pair_costs_scale_the_loss():
    ds = make_dataset(seed=7, sizes=(20, 15), n_features=5)
    p = ds.n_pairs
    w = np.random.default_rng(0).standard_normal(ds.n_features)
    base = ExplicitPairObjective(ds, 1.0)
    doubled = ExplicitPairObjective(ds, 1.0, pair_costs=np.full(p, 2.0))
    f1, _ = base.fun_grad(w)
    f2, _ = doubled.fun_grad(w)
    assert f2 - 0.5 * w @ w == pytest.approx(2 * (f1 - 0.5 * w @ w), rel=1e-12)


def test_piecewise_quadratic_logistic_is_within_its_stated_error():
    from rankkit.objectives.logistic import STATED_ERROR, approximation_error, piecewise_quadratic, pwq_value

    assert approximation_error() <= STATED_ERROR
    c, a = piecewise_quadratic()
    assert abs(a.sum()) < 1e-12  # no curvature left of the knots: linear tail
    assert np.all(np.cumsum(a[::-1]) >= -1e-15)  # l~'' >= 0 everywhere: convex
    t = np.array([-50.0, -9.0, 0.0, 9.0, 50.0])
    np.testing.assert_allclose(pwq_value(t), np.logaddexp(0, -t), atol=STATED_ERROR)


def test_n_log_n_logistic_matches_explicit_pairs_of_the_same_approximation():
    """The O(n log n) objective equals the pair-by-pair sum of the piecewise-quadratic loss."""
    from rankkit.objectives.logistic import piecewise_quadratic
    from rankkit.objectives.pairwise import PairwiseObjective
    from tests.reference import dense

    ds = make_dataset(seed=8, sizes=(25, 1, 18, 30), n_labels=3)
    c, a = piecewise_quadratic()
    obj = PairwiseObjective(ds, 0.6, "logistic")
    X = dense(ds)
    P = explicit_pairs(ds.y, ds.qptr)
    A = X[P[:, 0]] - X[P[:, 1]]
    for scale in (0.0, 0.5, 4.0):
        w = np.random.default_rng(3).standard_normal(ds.n_features) * scale
        f, g = obj.fun_grad(w)
        t = A @ w
        r = np.maximum(0.0, c[None, :] - t[:, None])
        f_ref = 0.5 * w @ w + 0.6 * np.sum(a * r**2)
        g_ref = w - 0.6 * A.T @ (2 * (a * r).sum(axis=1))
        curv = 2 * (a[None, :] * (c[None, :] > t[:, None])).sum(axis=1)
        H_ref = np.eye(len(w)) + 0.6 * (A * curv[:, None]).T @ A
        _close(f, f_ref)
        _close(g, g_ref)
        s = np.random.default_rng(4).standard_normal(ds.n_features)
        _close(obj.hess_vec(s), H_ref @ s)


def test_n_log_n_logistic_optimum_is_close_to_the_exact_one():
    from rankkit.objectives.logistic import STATED_ERROR

    ds = make_dataset(seed=9, sizes=(30, 25, 1, 20), n_features=6)
    approx = NewtonRankSVM(C=0.3, tol=1e-12, loss="logistic").fit(ds)
    exact = NewtonPairsRankSVM(C=0.3, tol=1e-12, loss="logistic").fit(ds)
    assert approx.converged and exact.converged
    # |min f~ - min f| <= C * pairs * max|l~ - l|
    assert abs(approx.objective - exact.objective) <= 0.3 * ds.n_pairs * STATED_ERROR
