"""Issue 27 (branch i27a): the Newton line search far from the optimum. When the Newton decrement
exceeds f, t = 1 passing Armijo's test is followed by a search for the minimiser along d
(rankkit.solvers.newton.minimise_along); the optimum and the stopping rule are unchanged."""

from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import make_dataset
from rankkit.objectives.pairwise import PairwiseObjective
from rankkit.solvers import newton as N


def quadratic_phi(a, b, c, calls):
    """phi(t) = a t^2 / 2 + b t + c written as 0.5 w.w + C L with w.d = 0 and d.d = 0 (all in L):
    slopes give (g_y . delta, delta . H_y delta) = (a t + b, a) for C = 1."""
    def phi(t):
        calls.append(t)
        return 0.5 * a * t * t + b * t + c, lambda: (a * t + b, a)
    return phi


def test_far_from_the_optimum_the_search_goes_past_t_1():
    calls = []
    # minimiser at t = 3; phi(1) = 2 passes Armijo; the decrement -gd = 12 exceeds f0 = 10
    a, b, c = 4.0, -12.0, 10.0  # phi(1) = -0 => Armijo passes; -gd = 12 > f0 = 10
    t, ft = N.minimise_along(quadratic_phi(a, b, c, calls), c, b, 0.0, 0.0, 1.0)
    assert abs(t - 3.0) <= 1e-9 and abs(ft - (c - b * b / (2 * a))) <= 1e-9
    assert calls[-1] == t  # the caller's state is at the returned point


def test_near_the_optimum_t_1_passing_armijo_is_taken():
    calls = []
    a, b, c = 4.0, -12.0, 100.0  # the same slope, but -gd = 12 < f0 = 100
    t, ft = N.minimise_along(quadratic_phi(a, b, c, calls), c, b, 0.0, 0.0, 1.0)
    assert t == 1.0 and ft == 0.5 * a + b + c and calls == [1.0]


def test_far_search_keeps_t_1_when_it_finds_nothing_better(monkeypatch):
    # phi'(1) is steep, but the curvature reported is wrong (too small): the Newton step from t = 1
    # lands where phi is larger; the search must come back to t = 1 and leave the state there
    calls = []

    def phi(t):
        calls.append(t)
        f = 20.0 * (t - 1.05) ** 2 + (-30.0 if t >= 0 else 0.0)
        return f, lambda: (40.0 * (t - 1.05), 1e-3)

    f0 = 20.0 * 1.05 ** 2 - 30.0  # -7.95
    gd = -42.0  # -gd > |f0|: far
    monkeypatch.setattr(N, "FAR_SLOPE", 1e-12)
    t, ft = N.minimise_along(phi, f0, gd, 0.0, 0.0, 1.0)
    assert ft <= 20.0 * 0.05 ** 2 - 30.0 + 1e-12
    assert calls[-1] == t


@pytest.mark.parametrize("seed", [0, 3])
def test_far_search_reaches_the_same_optimum(seed, monkeypatch):
    ds = make_dataset(seed=seed, n_labels=4)
    fits = []
    for far in (N.FAR_DECREMENT, math.inf):
        monkeypatch.setattr(N, "FAR_DECREMENT", far)
        obj = N.LocalObjective(PairwiseObjective(ds, 10.0), ds)
        fits.append(N.truncated_newton(obj, tol=1e-14, max_iter=200))
        assert fits[-1].converged
    assert abs(fits[0].objective - fits[1].objective) <= 1e-10 * fits[1].objective
    np.testing.assert_allclose(fits[0].w, fits[1].w, rtol=1e-5, atol=1e-7 * np.abs(fits[1].w).max())
