"""The truncated-Newton solver reaches the optimum of the objective it claims to minimise."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize as so

from rankkit.objectives.pairwise import PairwiseObjective
from rankkit.solvers import SOLVERS
from rankkit.solvers.newton import NewtonRankSVM, conjugate_gradient, line_search
from tests.conftest import make_dataset
from tests.reference import RTOL_OPTIMUM, sqhinge_objective


def _reference_optimum(ds, C):
    """Minimise the brute-force objective with scipy (exact pairs, dense Hessian Newton-CG)."""

    def fg(w):
        f, g, _ = sqhinge_objective(ds, C, w)
        return f, g

    res = so.minimize(
        fg,
        np.zeros(ds.n_features),
        jac=True,
        hess=lambda w: sqhinge_objective(ds, C, w)[2],
        method="trust-exact",
        options={"gtol": 1e-12, "maxiter": 1000},
    )
    return res.x, res.fun


@pytest.mark.parametrize("C", [1e-3, 0.1, 10.0])
@pytest.mark.parametrize("seed", [0, 3])
def test_newton_matches_scipy_on_explicit_pairs(C, seed):
    ds = make_dataset(seed=seed, integer_features=seed == 3, n_labels=3 + seed)
    res = NewtonRankSVM(C=C, tol=1e-12).fit(ds)
    w_ref, f_ref = _reference_optimum(ds, C)
    assert res.converged, res.message
    assert abs(res.objective - f_ref) <= RTOL_OPTIMUM * f_ref
    # strongly convex (Hessian >= I): ||w - w*||^2 <= 2 (f(w) - f*)
    assert np.linalg.norm(res.w - w_ref) <= 1e-4 * max(1.0, np.linalg.norm(w_ref))


def test_returned_w_meets_optimality_condition():
    ds = make_dataset(seed=1, sizes=(40, 25, 1, 60, 3, 30), n_features=10)
    C = 1.0
    res = NewtonRankSVM(C=C, tol=1e-10).fit(ds)
    f, g, H = sqhinge_objective(ds, C, res.w)
    assert f == pytest.approx(res.objective, rel=1e-12)
    # relative gradient norm at the solution, and the Newton decrement g'H^-1 g relative to f
    g0 = sqhinge_objective(ds, C, np.zeros(ds.n_features))[1]
    assert np.linalg.norm(g) <= 1e-5 * np.linalg.norm(g0)
    assert g @ np.linalg.solve(H, g) <= 1e-10 * f


def test_default_tolerance_objective_is_within_1e6_of_optimum():
    ds = make_dataset(seed=4, sizes=(30, 30, 30), n_features=8)
    res = NewtonRankSVM(C=0.5).fit(ds)  # default tol 1e-6
    _, f_ref = _reference_optimum(ds, 0.5)
    assert res.converged
    assert res.objective - f_ref <= 1e-6 * f_ref


def test_warm_start_reaches_the_same_optimum_in_fewer_iterations():
    ds = make_dataset(seed=5, sizes=(50, 40, 30), n_features=8)
    cold = NewtonRankSVM(C=1.0, tol=1e-12).fit(ds)
    warm = NewtonRankSVM(C=1.0, tol=1e-12).fit(ds, w0=cold.w)
    assert warm.objective == pytest.approx(cold.objective, rel=1e-12)
    assert warm.iterations < cold.iterations


def test_max_iter_reports_not_converged_instead_of_failing():
    ds = make_dataset(seed=6, sizes=(50, 40), n_features=8)
    res = NewtonRankSVM(C=100.0, tol=1e-14, max_iter=1).fit(ds)
    assert not res.converged
    assert "max-iter" in res.message
    assert res.iterations == 1


def test_log_has_one_line_per_iteration():
    ds = make_dataset(seed=7)
    lines = []
    res = NewtonRankSVM(C=1.0).fit(ds, log=lines.append)
    assert len(lines) == res.iterations + 1  # iteration 0 plus one per Newton step
    assert all(line.startswith("iter") for line in lines)


@pytest.mark.parametrize("C", [0.1, 1.0, 10.0])
def test_line_search_finds_the_exact_minimum_along_a_bad_direction(C):
    """When t = 1 fails (a direction 50x too long), the 1-D Newton search lands on the minimiser."""
    ds = make_dataset(seed=8, sizes=(30, 30))
    obj = PairwiseObjective(ds, C)
    w = np.zeros(ds.n_features)
    y = obj.scores(w)
    f0 = obj.evaluate(w, y)
    g = obj.gradient(w)
    d = -50.0 * g
    t, ft = line_search(obj, w, y, d, obj.scores(d), f0, float(g @ d))
    assert 0 < t < 1 and ft < f0
    ts = np.linspace(0, 2 * t, 2001)
    phis = [sqhinge_objective(ds, C, w + s * d)[0] for s in ts]
    assert ft <= min(phis) + 1e-9 * f0
    assert obj.evaluate(w + t * d, obj.scores(w + t * d)) == pytest.approx(ft, rel=1e-12)


def test_conjugate_gradient_solves_spd_system():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((20, 20))
    H = A @ A.T + np.eye(20)
    b = rng.standard_normal(20)
    x, it, res = conjugate_gradient(lambda v: H @ v, b, 1e-12, 200)
    np.testing.assert_allclose(H @ x, b, atol=1e-9)
    assert it <= 60


def test_training_needs_pairs():
    from rankkit.errors import DataError

    ds = make_dataset(seed=2, sizes=(5, 6), one_label_queries=(0, 1))
    with pytest.raises(DataError, match="no preference pairs"):
        NewtonRankSVM().fit(ds)


def test_registry_lists_newton_as_default():
    from rankkit.solvers import DEFAULT_SOLVER

    assert DEFAULT_SOLVER == "newton"
    assert SOLVERS["newton"].load() is NewtonRankSVM


def test_fit_is_deterministic():
    ds = make_dataset(seed=9)
    a = NewtonRankSVM(C=2.0).fit(ds)
    b = NewtonRankSVM(C=2.0).fit(ds)
    assert np.array_equal(a.w, b.w) and a.objective == b.objective


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_stopping_rule_holds_on_ill_conditioned_problems(seed):
    """Features on scales 1e-2 .. 1e2 and a large C (cond(H) ~ 1e8): a loose CG underestimates the
    Newton decrement, so the rule is confirmed with an accurate solve; the default tol then really
    means f - f* <= 1e-6 f."""
    ds = make_dataset(seed=seed, sizes=(30, 25, 40), n_features=6)
    scales = np.logspace(-2, 2, ds.n_features)
    ds.data = ds.data * scales[ds.indices]
    res = NewtonRankSVM(C=100.0).fit(ds)
    _, f_ref = _reference_optimum(ds, 100.0)
    assert res.converged
    assert res.objective - f_ref <= 1e-6 * f_ref


def test_bad_warm_start_is_rejected():
    ds = make_dataset(seed=2)
    with pytest.raises(ValueError, match="w0"):
        NewtonRankSVM().fit(ds, w0=np.zeros(ds.n_features + 1))
    with pytest.raises(ValueError, match="w0"):
        NewtonRankSVM().fit(ds, w0=np.full(ds.n_features, np.nan))


@pytest.mark.parametrize("loss", ["squared-hinge", "huber"])
@pytest.mark.parametrize("query_norm", [False, True])
def test_losses_and_query_weights_reach_the_explicit_pair_optimum(loss, query_norm):
    from tests.reference import pair_objective

    ds = make_dataset(seed=14, sizes=(30, 4, 25, 1, 40), n_features=6)
    qw = np.random.default_rng(0).random(ds.n_queries) + 0.5
    solver = NewtonRankSVM(C=2.0, tol=1e-12, loss=loss, query_norm=query_norm, query_weights=qw)
    res = solver.fit(ds)
    weights = solver.weights(ds)
    if query_norm:
        np.testing.assert_allclose(weights, qw / np.maximum(ds.pairs_per_query, 1))

    def fg(w):
        f, g, _ = pair_objective(ds, 2.0, w, loss, weights)
        return f, g

    ref = so.minimize(fg, np.zeros(ds.n_features), jac=True, method="L-BFGS-B",
                      options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 10000})
    assert res.converged
    assert abs(res.objective - ref.fun) <= RTOL_OPTIMUM * ref.fun


def _outcome(solver, ds):
    """The weights' bytes and the objective of a fit, or its error (romma leaves this data set's
    finite range: the same error either way)."""
    from rankkit.errors import UsageError

    try:
        r = solver.fit(ds)
    except UsageError as exc:
        return str(exc)
    return r.w.tobytes(), repr(r.objective)


@pytest.mark.parametrize("name", [n for n, spec in SOLVERS.items() if spec.narrow_indices])
@pytest.mark.parametrize("threads", [1, 2])
def test_solvers_that_take_uint16_indices_give_the_int32_bits(name, threads):
    """The solvers flagged narrow_indices (the reader then gives `rankkit train` uint16 column
    indices) reach the same weights, bit for bit, on uint16 as on int32 indices: ties, one-document
    and one-label queries, empty rows; every loss they offer; 1 and 2 threads (chunked products)."""
    from rankkit import threads as T

    spec = SOLVERS[name]
    ds = make_dataset(seed=4, sizes=(1, 2, 7, 30, 12, 5, 1, 25, 9, 300), n_features=9)
    narrow = ds.with_changes(indices=ds.indices.astype(np.uint16))
    saved = T.MIN_WORK_PER_THREAD
    T.MIN_WORK_PER_THREAD = 1  # split even this small problem over the threads
    try:
        with T.limited(threads):
            for loss in spec.losses:
                a, b = (_outcome(spec.load()(C=0.3, loss=loss), d) for d in (ds, narrow))
                assert a == b, (name, loss)
    finally:
        T.MIN_WORK_PER_THREAD = saved
