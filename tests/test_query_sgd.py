"""Chapelle & Keerthi Algorithm 3 (stochastic gradient on queries) converges to the Newton optimum."""

from __future__ import annotations

import numpy as np

from rankkit.objectives.pairwise import PairwiseObjective
from rankkit.solvers._query_sgd import run_query_sgd
from rankkit.solvers.newton import NewtonRankSVM
from tests.conftest import make_dataset


def _run(ds, C, T, seed=0):
    w = np.zeros(ds.n_features)
    trace_iters = np.array([T // 2, T], dtype=np.int64)
    trace_loss = np.zeros(2)
    status = run_query_sgd(ds.data, ds.indices, ds.indptr, ds.levels.astype(np.int32), ds.qptr, ds.levels_per_query,
                           ds.pairs_per_query.astype(np.float64), C, T, seed, w, trace_iters, trace_loss)
    assert status == 0
    return w, trace_loss


def test_query_sgd_converges_to_the_newton_optimum():
    ds = make_dataset(seed=1, sizes=(20, 15, 1, 25, 30, 12), n_features=6)
    C = 0.05
    f_star = NewtonRankSVM(C=C, tol=1e-12).fit(ds).objective
    gaps = []
    for T in (1000, 100_000):
        w, trace = _run(ds, C, T)
        gaps.append((PairwiseObjective(ds, C).fun_grad(w)[0] - f_star) / f_star)
        assert np.all(np.isfinite(trace)) and trace[1] > 0
    assert 0 <= gaps[1] < 1e-4 and gaps[1] < gaps[0]


def test_query_sgd_is_reproducible_from_the_seed():
    ds = make_dataset(seed=2, sizes=(20, 15, 25), n_features=5)
    a, _ = _run(ds, 0.1, 2000, seed=3)
    b, _ = _run(ds, 0.1, 2000, seed=3)
    c, _ = _run(ds, 0.1, 2000, seed=4)
    assert np.array_equal(a, b) and not np.array_equal(a, c)
