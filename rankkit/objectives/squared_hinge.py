"""Squared-hinge pairwise loss in O(n log n): Chapelle & Keerthi (2010), Sect. 4 (PRSVM+).

    L(y) = sum over queries q, pairs (i, j) in q with label_i > label_j of max(0, 1 - (y_i - y_j))^2

with y = X w. No pair is ever materialised. A pair (i above j) is *active* when y_j + 1 > y_i.
For each document k let

    U-role (k is the higher document):  J_k = {j in q(k): lev_j < lev_k, y_j + 1 > y_k}
    L-role (k is the lower document):   I_k = {i in q(k): lev_i > lev_k, y_i < y_k + 1}

Then, with v = y + 1,

    L      = sum_k  sum_{j in J_k} (v_j - y_k)^2 = sum_k Q_k - 2 y_k S_k + |J_k| y_k^2
    dL/dy_k = -2 sum_{j in J_k} (v_j - y_k) + 2 sum_{i in I_k} (v_k - y_i)
    (H_L d)_k = 2 [ (|J_k| + |I_k|) d_k - sum_{j in J_k} d_j - sum_{i in I_k} d_i ]

(H_L is the generalised Hessian: the active set is fixed at the point where the gradient was
taken.) Per query the documents are sorted by y once; J_k is a prefix of the descending order
restricted to lower levels, I_k a prefix of the ascending order restricted to higher levels. Two
sweeps with a Fenwick tree over the query's relevance levels give all sums in
O(n_q log n_q + n_q log R_q). Scores are centred per query before the sweeps (pair differences do
not change) to limit cancellation in the expanded squares.

Kernels take raw arrays only. `yc` (centred scores) and `order` (per-query ascending order, global
row numbers) written by `fun_grad_y` are what `hess_vec_y` reuses, so the active set is identical.
"""

from __future__ import annotations

import numpy as np

from numba import prange

from rankkit.objectives._numba import njit


@njit
def _fen_reset(tree, R, width):
    for i in range(R + 1):
        for c in range(width):
            tree[i, c] = 0.0


@njit
def _fen_add3(tree, R, level, a, b, c):
    i = level + 1
    while i <= R:
        tree[i, 0] += a
        tree[i, 1] += b
        tree[i, 2] += c
        i += i & (-i)


@njit
def _fen_prefix3(tree, level):
    """Sums of the three fields over levels < level."""
    a = 0.0
    b = 0.0
    c = 0.0
    i = level
    while i > 0:
        a += tree[i, 0]
        b += tree[i, 1]
        c += tree[i, 2]
        i -= i & (-i)
    return a, b, c


@njit(parallel=True)
def sort_queries(y, qptr, skip, order):
    """order[s:e] = rows of query q in ascending y (stable), for every query with skip[q] == 0.

    Large queries are sorted by the caller with NumPy's faster argsort and flagged in `skip`.
    """
    nq = qptr.shape[0] - 1
    for q in prange(nq):
        if skip[q]:
            continue
        s = qptr[q]
        e = qptr[q + 1]
        idx = np.argsort(y[s:e], kind="mergesort")
        for t in range(e - s):
            order[s + t] = s + idx[t]


@njit
def _query_fun_grad(y, lev, s, e, R, order, ys, ls, gs, tree):
    """Loss, active-pair count and sorted-space gradient gs[s:e] of one query (rows s:e)."""
    m = e - s
    c = 0.0
    for k in range(s, e):
        c += y[k]
    c /= m
    for t in range(s, e):
        k = order[t]
        ys[t] = y[k] - c
        ls[t] = lev[k]
    loss = 0.0
    n_active = 0.0
    # sweep 1, descending: position t as the higher document of its pairs
    _fen_reset(tree, R, 3)
    p = e - 1
    for t in range(e - 1, s - 1, -1):
        yk = ys[t]
        while p >= s and ys[p] + 1.0 > yk:
            vj = ys[p] + 1.0
            _fen_add3(tree, R, ls[p], 1.0, vj, vj * vj)
            p -= 1
        cnt, S, Q = _fen_prefix3(tree, ls[t])
        if cnt > 0.0:
            loss += Q - 2.0 * yk * S + cnt * yk * yk
            gs[t] = -2.0 * (S - cnt * yk)
            n_active += cnt
        else:
            gs[t] = 0.0
    # sweep 2, ascending: position t as the lower document of its pairs
    _fen_reset(tree, R, 3)
    tot_c = 0.0
    tot_s = 0.0
    p = s
    for t in range(s, e):
        vk = ys[t] + 1.0
        while p < e and ys[p] < vk:
            _fen_add3(tree, R, ls[p], 1.0, ys[p], 0.0)
            tot_c += 1.0
            tot_s += ys[p]
            p += 1
        cnt, S, _ = _fen_prefix3(tree, ls[t] + 1)
        cnt = tot_c - cnt
        if cnt > 0.0:
            gs[t] += 2.0 * (cnt * vk - (tot_s - S))
    return loss, n_active


@njit(parallel=True)
def fun_grad_y(y, lev, qptr, nlev, order, ys, ls, gs, gy):
    """Loss L(y) and gy = dL/dy for all queries. Returns (loss, number of active pairs).

    `order` holds each query's rows in ascending y (see sort_queries). Writes the centred sorted
    scores `ys` and sorted levels `ls` that hess_vec_y reuses, so its active set is identical.
    nlev[q] is the number of distinct labels of query q; queries with one level are skipped.
    Queries run in parallel; per-query sums are added in query order, so the result does not
    depend on the number of threads.
    """
    nq = qptr.shape[0] - 1
    qloss = np.zeros(nq)
    qactive = np.zeros(nq)
    for q in prange(nq):
        s = qptr[q]
        e = qptr[q + 1]
        if nlev[q] < 2:
            for t in range(s, e):
                gy[t] = 0.0
                ys[t] = 0.0
                ls[t] = 0
            continue
        tree = np.empty((nlev[q] + 1, 3), dtype=np.float64)
        lq, aq = _query_fun_grad(y, lev, s, e, nlev[q], order, ys, ls, gs, tree)
        for t in range(s, e):
            gy[order[t]] = gs[t]
        qloss[q] = lq
        qactive[q] = aq
    loss = 0.0
    n_active = 0.0
    for q in range(nq):
        loss += qloss[q]
        n_active += qactive[q]
    return loss, n_active


@njit
def _query_hv(ys, ls, s, e, R, ds, zs, tree):
    # sweep 1, descending
    _fen_reset(tree, R, 3)
    p = e - 1
    for t in range(e - 1, s - 1, -1):
        yk = ys[t]
        while p >= s and ys[p] + 1.0 > yk:
            _fen_add3(tree, R, ls[p], 1.0, ds[p], 0.0)
            p -= 1
        cnt, G, _ = _fen_prefix3(tree, ls[t])
        zs[t] = cnt * ds[t] - G
    # sweep 2, ascending
    _fen_reset(tree, R, 3)
    tot_c = 0.0
    tot_g = 0.0
    p = s
    for t in range(s, e):
        vk = ys[t] + 1.0
        while p < e and ys[p] < vk:
            _fen_add3(tree, R, ls[p], 1.0, ds[p], 0.0)
            tot_c += 1.0
            tot_g += ds[p]
            p += 1
        cnt, G, _ = _fen_prefix3(tree, ls[t] + 1)
        zs[t] = 2.0 * (zs[t] + (tot_c - cnt) * ds[t] - (tot_g - G))


@njit(parallel=True)
def hess_vec_y(ys, ls, qptr, nlev, order, d, ds, zs, z):
    """z = H_L d in score space, at the active set of the last fun_grad_y (ys, ls, order)."""
    nq = qptr.shape[0] - 1
    for q in prange(nq):
        s = qptr[q]
        e = qptr[q + 1]
        if nlev[q] < 2:
            for t in range(s, e):
                z[order[t]] = 0.0
            continue
        tree = np.empty((nlev[q] + 1, 3), dtype=np.float64)
        for t in range(s, e):
            ds[t] = d[order[t]]
        _query_hv(ys, ls, s, e, nlev[q], ds, zs, tree)
        for t in range(s, e):
            z[order[t]] = zs[t]
    return z
