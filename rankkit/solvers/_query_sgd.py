"""Chapelle & Keerthi Sect. 6.1, Algorithm 3: stochastic gradient on whole queries.

    l_q(w) = 1/(2Q) ||w||^2 + C * sum over the pairs of query q of max(0, 1 - w.(x_i - x_j))^2
    for t = 1..T:  pick a query q at random;  w <- w - eta_t * grad l_q(w),  eta_t = 1/(t + t0)

The paper's step is 1/t (t0 = 0). Its first steps are gradient steps of length 1 on one query's
loss, whose curvature is up to 1/Q + 2C * sum over the query's pairs ||x_i - x_j||^2: on LETOR data
(hundreds of pairs per query, C = 1) such a step overshoots by orders of magnitude and the run
diverges (MQ2008: objective 2e61). With t0 = that curvature bound (largest over the queries,
`step_offset`), every step is at most 1/L_q, a step that cannot overshoot one query's quadratic,
and the schedule is still 1/t asymptotically (Bottou's t0); where the bound is below 1 the
paper's rule is unchanged in effect.

The gradient of one query costs O(nnz_q + n_q log n_q) with the sweeps of Sect. 4 (the same
per-query kernel as the Newton solver), so a step does not depend on the number of pairs. Q counts
the queries that have pairs, and only those are drawn. Serial and reproducible from the seed
(numba's generator, seeded inside the kernel).
"""

from __future__ import annotations

import numpy as np

from rankkit.compiler.dispatch import njit
from rankkit.objectives.squared_hinge import query_fun_grad
from rankkit.sorting import longest, stable_order


@njit
def run_query_sgd(data, indices, indptr, lev, qptr, nlev, pairs_q, C, iterations, seed, w, trace_iters, trace_loss,
                  t0=0.0):
    """Run `iterations` steps of Algorithm 3 from the w given; trace_loss[k] is the mean query loss
    (per pair) of the steps since the previous checkpoint trace_iters[k-1]. Step 1/(t + t0).
    Returns 0, 1 (no query has two levels) or 2 (the loss or w stopped being finite)."""
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
    sort_tmp = np.empty(longest(qptr, 0, nq), dtype=np.int64)
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
        stable_order(y, s, e, order, sort_tmp)
        loss, n_active = query_fun_grad(y, lev, s, e, nlev[q], order, ys, ls, gs, tree, 1.0, True)
        # g = X_q' dL_q/dy (gs is in sorted positions)
        g[:] = 0.0
        for r in range(s, e):
            gi = gs[r]
            if gi != 0.0:
                i = order[r]
                for p in range(indptr[i], indptr[i + 1]):
                    g[indices[p]] += data[p] * gi
        if not np.isfinite(loss):
            return 2
        eta = 1.0 / (t + t0)
        for j in range(d):
            w[j] -= eta * (w[j] / n_elig + C * g[j])
        acc_loss += loss
        acc_pairs += pairs_q[q]
        if k < trace_iters.shape[0] and t == trace_iters[k]:
            trace_loss[k] = acc_loss / max(acc_pairs, 1.0)
            acc_loss = 0.0
            acc_pairs = 0.0
            k += 1
    for j in range(d):
        if not np.isfinite(w[j]):
            return 2
    return 0


def step_offset(ds, C: float) -> float:
    """t0 of the step 1/(t + t0): the largest over the queries with pairs of 1/Q + 2C * sum over
    the query's pairs ||x_i - x_j||^2 (the trace of the per-query Hessian with every pair active,
    an upper bound of its largest eigenvalue). O(nnz + levels * d) with per-level sums:
    sum over pairs ||x_i - x_j||^2 = sum_i ||x_i||^2 (n_q - n_level(i)) - 2 sum_{a<b} S_a.S_b."""
    import scipy.sparse as sp  # ~0.2 s to import: only query-sgd's start needs it, not every stochastic solver

    n = ds.n_rows
    if n == 0:
        return 0.0
    X = ds.csr()
    sq = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    qidx = ds.query_index
    lev = ds.levels.astype(np.int64)
    # group id of (query, level): query offsets into a level table
    nlev = ds.levels_per_query
    gbase = np.concatenate(([0], np.cumsum(nlev)))
    gid = gbase[qidx] + lev
    n_groups = int(gbase[-1])
    G = sp.csr_matrix((np.ones(n), (gid, np.arange(n))), shape=(n_groups, n))
    size_g = np.bincount(gid, minlength=n_groups).astype(np.float64)
    size_q = np.diff(ds.qptr).astype(np.float64)
    S = G @ X  # per-group feature sums
    s_sq = np.asarray(S.multiply(S).sum(axis=1)).ravel()
    Q_of_g = np.repeat(np.arange(ds.n_queries), nlev)
    T = sp.csr_matrix((np.ones(n_groups), (Q_of_g, np.arange(n_groups))), shape=(ds.n_queries, n_groups)) @ S
    t_sq = np.asarray(T.multiply(T).sum(axis=1)).ravel()
    cross = 0.5 * (t_sq - np.bincount(Q_of_g, weights=s_sq, minlength=ds.n_queries))
    own = np.bincount(qidx, weights=sq * (size_q[qidx] - size_g[gid]), minlength=ds.n_queries)
    trace = np.maximum(own - 2.0 * cross, 0.0)
    has_pairs = nlev >= 2
    if not np.any(has_pairs):
        return 0.0
    n_elig = int(np.count_nonzero(has_pairs))
    return float(1.0 / n_elig + 2.0 * C * trace[has_pairs].max())
