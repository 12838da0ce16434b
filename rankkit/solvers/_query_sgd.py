"""Chapelle & Keerthi Sect. 6.1, Algorithm 3: stochastic gradient on whole queries.

    l_q(w) = 1/(2Q) ||w||^2 + C * sum over the pairs of query q of max(0, 1 - w.(x_i - x_j))^2
    for t = 1..T:  pick a query q at random;  w <- w - (1/t) * grad l_q(w)

The gradient of one query costs O(nnz_q + n_q log n_q) with the sweeps of Sect. 4 (the same
per-query kernel as the Newton solver), so a step does not depend on the number of pairs. Q counts
the queries that have pairs, and only those are drawn. Serial and reproducible from the seed
(numba's generator, seeded inside the kernel).
"""

from __future__ import annotations

import numpy as np

from rankkit.objectives._numba import njit
from rankkit.objectives.squared_hinge import _query_fun_grad


@njit
def run_query_sgd(data, indices, indptr, lev, qptr, nlev, pairs_q, C, iterations, seed, w, trace_iters, trace_loss):
    """Run `iterations` steps of Algorithm 3 from the w given; trace_loss[k] is the mean query loss
    (per pair) of the steps since the previous checkpoint trace_iters[k-1]."""
    np.random.seed(seed)
    nq = qptr.shape[0] - 1
    d = w.shape[0]
    eligible = np.empty(nq, dtype=np.int64)
    n_elig = 0
    for q in range(nq):
        if nlev[q] >= 2:
            eligible[n_elig] = q
            n_elig += 1
    if n_elig == 0:
        return 1
    n = indptr.shape[0] - 1
    y = np.zeros(n)
    order = np.zeros(n, dtype=np.int64)
    ys = np.zeros(n)
    ls = np.zeros(n, dtype=np.int32)
    gs = np.zeros(n)
    g = np.zeros(d)
    rmax = 1
    for q in range(nq):
        if nlev[q] > rmax:
            rmax = nlev[q]
    tree = np.empty((rmax + 1, 3))
    k = 0
    acc_loss = 0.0
    acc_pairs = 0.0
    for t in range(1, iterations + 1):
        q = eligible[np.random.randint(0, n_elig)]
        s = qptr[q]
        e = qptr[q + 1]
        for i in range(s, e):
            acc = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                acc += data[p] * w[indices[p]]
            y[i] = acc
        idx = np.argsort(y[s:e], kind="mergesort")
        for r in range(e - s):
            order[s + r] = s + idx[r]
        loss, n_active = _query_fun_grad(y, lev, s, e, nlev[q], order, ys, ls, gs, tree, 1.0, True)
        # g = X_q' dL_q/dy (gs is in sorted positions)
        g[:] = 0.0
        for r in range(s, e):
            gi = gs[r]
            if gi != 0.0:
                i = order[r]
                for p in range(indptr[i], indptr[i + 1]):
                    g[indices[p]] += data[p] * gi
        eta = 1.0 / t
        for j in range(d):
            w[j] -= eta * (w[j] / n_elig + C * g[j])
        acc_loss += loss
        acc_pairs += pairs_q[q]
        if k < trace_iters.shape[0] and t == trace_iters[k]:
            trace_loss[k] = acc_loss / max(acc_pairs, 1.0)
            acc_loss = 0.0
            acc_pairs = 0.0
            k += 1
    return 0
