"""Less work in the truncated-Newton solver, the same optimum (issue 22's speed goal, issue 27's AUC
row): the convergence certificate from CG's own iterate (decrement_bound, H >= I), Eisenstat &
Walker's forcing term, and the preconditioner carried along a warm-started path (CGMemory, with a
kept d x d matrix). Each against a NumPy reference or a tight-tolerance fit without them, on data
with ties, one-document queries, one-label queries and empty rows."""

from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import make_dataset
from rankkit.objectives.pairwise import PairwiseObjective
from rankkit.paths.grid import grid
from rankkit.selection import grid_path
from rankkit.solvers import newton
from rankkit.solvers.newton import (CGMemory, LocalObjective, NewtonRankSVM, Preconditioned, cg_steps,
                                    decrement_bound, forcing, truncated_newton)
from test_precondition import raw

CASES = {
    "awkward": lambda: make_dataset(),
    "ties": lambda: make_dataset(seed=3, integer_features=True, n_labels=4),
    "raw": lambda: raw(make_dataset(seed=5, n_labels=5)),
}


def spd(seed, d=8, scale=100.0):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((3 * d, d)) * rng.lognormal(0, 2, d)
    return np.eye(d) + scale * A.T @ A / (3 * d)


@pytest.mark.parametrize("seed", range(5))
def test_decrement_bound_brackets_the_exact_decrement_for_any_iterate(seed):
    """b'H^-1b <= bound and >= bound - |r|^2 for H >= I: at CG iterates from 0, at restarted and
    preconditioned ones, and at arbitrary points."""
    H = spd(seed)
    rng = np.random.default_rng(seed + 10)
    b = rng.standard_normal(H.shape[0])
    exact = float(b @ np.linalg.solve(H, b))
    xs = [np.zeros_like(b), rng.standard_normal(b.shape), np.linalg.solve(H, b) * 0.9]
    for k in (1, 2, 4):
        xs.append(cg_steps(lambda v: H @ v, b, 1e-12, k)[0])
        xs.append(cg_steps(lambda v: H @ v, b, 1e-12, k, 1.0 / np.diag(H))[0])
        x0 = rng.standard_normal(b.shape)
        xs.append(cg_steps(lambda v: H @ v, b, 1e-12, k, None, x0, b - H @ x0)[0])
    for x in xs:
        r = b - H @ x
        ub = decrement_bound(b, x, r)
        assert ub >= exact * (1 - 1e-12) - 1e-12
        assert ub - r @ r <= exact * (1 + 1e-12) + 1e-12


def test_cg_stops_when_the_bound_certifies_and_not_before():
    H = spd(3)
    b = np.random.default_rng(0).standard_normal(H.shape[0])
    exact = float(b @ np.linalg.solve(H, b))
    full = cg_steps(lambda v: H @ v, b, 1e-14, 200)
    for level in (1.5, 1.05, 1.001):
        x, it, _, r = cg_steps(lambda v: H @ v, b, 1e-14, 200, certify=level * exact)
        assert decrement_bound(b, x, r) <= level * exact
        assert it <= full[1]
        if it > 0:  # one step fewer did not certify
            x1, _, _, r1 = cg_steps(lambda v: H @ v, b, 1e-14, it - 1)
            assert decrement_bound(b, x1, r1) > level * exact
    # |b|^2 below the level: no step at all (the gradient alone proves it, as nlcg's rule)
    assert cg_steps(lambda v: H @ v, b, 1e-14, 200, certify=float(b @ b))[1] == 0


def test_forcing_term():
    # the first step: the rule before, min(0.1, sqrt(|g|/|g0|))
    assert forcing(1.0, 100.0, None, None, None) == 0.1
    assert forcing(1e-4, 1.0, None, None, None) == pytest.approx(1e-2)
    # Eisenstat-Walker choice 1: | |g| - |model gradient| | / |g_prev|
    assert forcing(0.5, 100.0, 0.2, 10.0, 1e-3) == pytest.approx(0.03)
    assert forcing(5.0, 100.0, 0.2, 10.0, 1e-3) == 0.1  # at most 0.1
    # the safeguard: not below eta_prev^phi when that exceeds 0.1 (cannot here: eta <= 0.1), so
    # a tiny agreement gives a tiny eta
    assert forcing(0.2, 100.0, 0.2, 10.0, 0.1) == 0.0


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("loss", ["squared-hinge", "huber"])
def test_default_fit_certifies_a_true_decrement(case, loss):
    """At the returned w the exact Newton decrement g'H^-1g (dense H) is at most tol * f, and the
    figure the stop message gives is at least it."""
    ds = CASES[case]()
    for C in (1e-3, 1.0, 100.0):
        obj = LocalObjective(PairwiseObjective(ds, C, loss), ds)
        res = truncated_newton(obj)
        assert res.stop == "converged", res.message
        f, g = obj.start(res.w)
        exact = float(g @ np.linalg.solve(obj.hess_matrix(), g))
        assert exact <= 1e-6 * f * (1 + 1e-9)
        assert res.detail["ratio"] * f >= exact * (1 - 1e-6) or not res.detail.get("bound")


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_path_with_memory_reaches_the_tight_optimum_at_every_point(case):
    """grid_path (warm starts, one CGMemory) against independent fits at tol 1e-14 without
    preconditioning: the same objective to 1e-10 relative at every C."""
    ds = CASES[case]()
    Cs = grid(ds, 8, 1e6)
    res = grid_path(ds, ds, Cs=Cs, n_points=8, tol=1e-13, max_iter=200, metric="map")
    for p in res.points:
        ref = truncated_newton(LocalObjective(PairwiseObjective(ds, p.C), ds), tol=1e-14, max_iter=200,
                               precondition="none")
        assert abs(p.objective - ref.objective) <= 1e-10 * ref.objective, (p.C, p.objective, ref.objective)


def test_memory_carries_the_level_and_the_matrix_and_saves_work(monkeypatch):
    """Along a path of growing C the memory starts each fit at the level reached before and reuses
    the kept matrix: fewer matrix builds and products than fresh fits, the same optimum."""
    ds = make_dataset(seed=5, n_labels=5, sizes=(40, 3, 60, 1, 50))
    counts = {"hess_matrix": 0, "hess_vec": 0}
    for name in counts:
        real = getattr(LocalObjective, name)

        def counted(self, *a, _real=real, _name=name):
            counts[_name] += 1
            return _real(self, *a)

        monkeypatch.setattr(LocalObjective, name, counted)
    Cs = grid(ds, 6, 1e6)
    out = {}
    for carry in (False, True):
        counts.update(hess_matrix=0, hess_vec=0)
        memory = CGMemory() if carry else None
        w, objs = None, []
        for C in Cs:
            r = NewtonRankSVM(C=C, tol=1e-12, max_iter=200).fit(ds, w0=w, memory=memory)
            assert r.converged, r.message
            w = r.w
            objs.append(r.objective)
        out[carry] = (dict(counts), objs, memory)
    (fresh, objs0, _), (kept, objs1, memory) = out[False], out[True]
    assert memory.level == 2 and memory.hess_loss is not None
    assert kept["hess_matrix"] < fresh["hess_matrix"]
    assert kept["hess_matrix"] + kept["hess_vec"] <= fresh["hess_matrix"] + fresh["hess_vec"]
    np.testing.assert_allclose(objs1, objs0, rtol=1e-10)


def test_a_stale_matrix_gives_the_same_accuracy_or_is_rebuilt():
    """The kept matrix (another point, another C) preconditions CG to the same relative residual;
    when it needs more than STALE_STEPS steps the point builds its own and CG goes on from there."""
    _check_a_stale_preconditioner(raw(make_dataset(seed=5, n_labels=5)), "dense", "STALE_STEPS", "hess_loss")


def test_one_fit_keeps_its_signature_for_the_dask_objective():
    """truncated_newton only gained keyword arguments with defaults (rankkit.parts.newton
    calls it with obj, w0, tol, max_iter, log, precondition)."""
    import inspect

    params = inspect.signature(truncated_newton).parameters
    assert list(params)[:6] == ["obj", "w0", "tol", "max_iter", "log", "precondition"]
    assert all(p.default is not inspect.Parameter.empty for name, p in params.items() if name != "obj")


@pytest.mark.parametrize("case", sorted(CASES))
def test_converged_message_says_what_was_proved(case):
    ds = CASES[case]()
    res = truncated_newton(LocalObjective(PairwiseObjective(ds, 1.0), ds))
    assert res.stop == "converged"
    rel = "<=" if res.detail.get("bound") else "="
    assert res.message.startswith(f"Newton decrement / objective {rel} ")
    assert math.isfinite(res.detail["ratio"]) and res.detail["ratio"] < res.detail["tol"]


def test_path_over_shares_one_memory_per_path_and_none_outside(monkeypatch):
    """path_over (the one grid loop, local or Dask) gives its fits one CGMemory; fits outside a
    path, and a cold path (warm_start=False), start afresh."""
    seen = []
    real = newton.Preconditioned.__init__

    def spy(self, obj, mode, memory=None):
        real(self, obj, mode, memory)
        seen.append(self.memory)

    monkeypatch.setattr(newton.Preconditioned, "__init__", spy)
    ds = make_dataset(seed=5, n_labels=5, sizes=(40, 3, 60, 1, 50))
    warm = grid_path(ds, ds, n_points=4, ratio=1e4, metric="map")  # points the edge rule adds are fits too
    assert len(seen) == len(warm.points) and all(m is seen[0] for m in seen)
    seen.clear()
    cold = grid_path(ds, ds, n_points=3, ratio=1e4, metric="map", warm_start=False)
    NewtonRankSVM(C=1.0).fit(ds)
    assert len(seen) == len(cold.points) + 1 and len({id(m) for m in seen}) == len(seen)


def test_a_run_builds_the_diagonal_once_while_the_kept_one_serves():
    """Issue 39: the diagonal preconditioner (raw-scaled features) built at the first Newton step is
    kept for the next steps (CGMemory.diag_loss) and rebuilt only when CG with it needs more than
    STALE_DIAG_STEPS steps; the run reaches the optimum of the one that rebuilds it at every step
    (STALE_DIAG_STEPS = 0, the solver before), and a stale diagonal gives CG the same accuracy."""
    ds = raw(make_dataset(seed=5, n_labels=5))
    fits, builds = {}, {}
    for stale_steps in (0, newton.STALE_DIAG_STEPS):
        obj = LocalObjective(PairwiseObjective(ds, 1.0), ds)
        calls = [0]
        inner = obj.hess_diag

        def counted():
            calls[0] += 1
            return inner()

        obj.hess_diag = counted
        old = newton.STALE_DIAG_STEPS
        newton.STALE_DIAG_STEPS = stale_steps
        try:
            fits[stale_steps] = truncated_newton(obj, tol=1e-12, precondition="diag")
        finally:
            newton.STALE_DIAG_STEPS = old
        builds[stale_steps] = calls[0]
        assert fits[stale_steps].converged
    a, b = fits[0], fits[newton.STALE_DIAG_STEPS]
    assert builds[0] == a.iterations and builds[newton.STALE_DIAG_STEPS] < builds[0], builds
    np.testing.assert_allclose(b.objective, a.objective, rtol=1e-10)
    # a diagonal kept from another point and C: CG still reaches the asked residual, or rebuilds
    _check_a_stale_preconditioner(ds, "diag", "STALE_DIAG_STEPS", "diag_loss")


def _check_a_stale_preconditioner(ds, kind: str, knob: str, kept: str) -> None:
    """A preconditioner (`kind`) kept in CGMemory (its field `kept`) from another point and C: CG
    still reaches the asked relative residual, and builds the point's own when it needs more than
    newton.`knob` steps."""
    memory = CGMemory()
    far = LocalObjective(PairwiseObjective(ds, 1e-4), ds)
    far.start(np.zeros(ds.n_features))
    Preconditioned(far, kind, memory)._m_inv(2 if kind == "dense" else 1)
    assert getattr(memory, kept) is not None
    obj = LocalObjective(PairwiseObjective(ds, 10.0), ds)
    w = np.random.default_rng(0).standard_normal(ds.n_features) / max(1.0, float(np.abs(ds.data).max()))
    f, g = obj.start(w)
    for stale_steps in (0, 1, 1000):
        pre = Preconditioned(obj, kind, memory)
        old = getattr(newton, knob)
        setattr(newton, knob, stale_steps)
        try:
            x, it = pre.solve(-g, 1e-10)
        finally:
            setattr(newton, knob, old)
        res = np.linalg.norm(-g - obj.hess_vec(x))
        assert res <= 1e-10 * np.linalg.norm(g) * 1.01 + 1e-300, (stale_steps, res)
        assert pre.fresh == (stale_steps < it), (stale_steps, it)
