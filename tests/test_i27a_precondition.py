"""Issue 27 (branch i27a): with more features than a d x d preconditioner allows, CG's diagonal
preconditioner is diag(H)^DIAG_POWER; every preconditioner still reaches the same optimum, on
sparse wide data with ties, empty rows, one-document and one-label queries."""

from __future__ import annotations

import numpy as np
import pytest

from rankkit.objectives.pairwise import PairwiseObjective
from rankkit.solvers import newton as N
from tests.test_i27a_products import sparse_wide


def wide():
    ds = sparse_wide(n=900, d=1500, per_row=4, seed=11, sizes=[1, 600, 3, 296], binary=False)
    y = ds.y.copy()
    y[604:] = 2.0  # the last query: one label
    return ds.with_changes(y=y)


def test_the_damped_diagonal_applies_only_beyond_the_dense_preconditioner():
    ds = wide()
    assert ds.n_features > N.DENSE_MAX_FEATURES
    obj = N.LocalObjective(PairwiseObjective(ds, 0.1), ds)
    w = np.random.default_rng(0).standard_normal(ds.n_features) * 0.3
    obj.start(w)
    pre = N.Preconditioned(obj, "diag")
    diag = obj.hess_diag()
    assert np.all(diag >= 1.0)
    np.testing.assert_array_equal(pre._m_inv(1), 1.0 / np.power(diag, N.DIAG_POWER))
    narrow = ds.with_changes(indices=(ds.indices % 40).astype(ds.indices.dtype), n_features=40)
    obj2 = N.LocalObjective(PairwiseObjective(narrow, 0.1), narrow)
    obj2.start(np.zeros(40))
    np.testing.assert_array_equal(N.Preconditioned(obj2, "diag")._m_inv(1), 1.0 / obj2.hess_diag())


@pytest.mark.parametrize("C", [0.05, 5.0])
def test_every_preconditioner_reaches_the_same_optimum_on_wide_data(C):
    ds = wide()
    fits = {}
    for mode in ("none", "diag", "auto"):
        fits[mode] = N.truncated_newton(N.LocalObjective(PairwiseObjective(ds, C), ds), tol=1e-14, max_iter=200,
                                        precondition=mode)
        assert fits[mode].converged, (mode, fits[mode].message)
    f0 = fits["none"].objective
    for mode, r in fits.items():
        assert abs(r.objective - f0) <= 1e-10 * f0, (mode, r.objective, f0)
