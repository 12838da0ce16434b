"""Squared-hinge pairwise loss in O(n log n): Chapelle & Keerthi (2010), Sect. 4 (PRSVM+).

    L(y) = sum over queries q of w_q * sum over pairs (i, j) in q with label_i > label_j of
           max(0, margin - (y_i - y_j))^2

(margin 1 below; `squared=False` gives the hinge max(0, margin - (y_i - y_j)) and a subgradient
instead, for the bundle method; the kernels take the margin as a parameter, so the Huber loss of Sect. 4.1,
max(0, 1 - t)^2 - max(0, -t)^2, is two calls with margins 1 and 0 on one sort; w_q are per-query
weights, e.g. 1 / pairs for svm_rank's normalisation)

with y = X w. No pair is ever materialised. A pair (i above j) is *active* when y_i - y_j < 1,
tested as exactly that floating-point expression everywhere (so the kernels and a brute-force
`1 - (y_i - y_j) > 0` agree even at margin exactly 1). For each document k let

    U-role (k is the higher document):  J_k = {j in q(k): lev_j < lev_k, y_k - y_j < 1}
    L-role (k is the lower document):   I_k = {i in q(k): lev_i > lev_k, y_i - y_k < 1}

and write n, m and M2 for the count, mean and sum of squared deviations of the scores in a set.
Then

    L        = sum_k  M2(J_k) + n(J_k) (m(J_k) + 1 - y_k)^2
    dL/dy_k  = -2 n(J_k) (m(J_k) + 1 - y_k) + 2 n(I_k) (1 - m(I_k) + y_k)
    (H_L d)_k = 2 [ (n(J_k) + n(I_k)) d_k - sum_{j in J_k} d_j - sum_{i in I_k} d_i ]

(H_L is the generalised Hessian: the active set is fixed where the gradient was taken.) Per
query the documents are sorted by y once; J_k is a prefix of the descending order restricted to
lower levels, I_k a prefix of the ascending order restricted to higher levels. Two sweeps with a
Fenwick tree over the query's relevance levels give every (n, m, M2) in O(n_q log n_q +
n_q log R_q). The tree nodes hold (n, m, M2) of the scores minus the query's median score,
merged with Chan et al.'s pairwise update, so the loss is a sum of non-negative terms computed
from differences: no cancellation however large the scores are (the paper's expanded form
sum alpha y^2 - beta y loses digits as |y| grows). Sweeps for "levels above"
index the tree by reversed level, so no aggregate is ever subtracted.

Kernels take raw arrays only. `ys` (scores in per-query sorted order), `ls` (their levels) and
`order` written by `fun_grad_y` are what `hess_vec_y` reuses, so the active set is identical.
"""

from __future__ import annotations

import numpy as np

from rankkit import threads
from rankkit.compiler.dispatch import njit
from rankkit.sorting import longest, stable_order


# The Fenwick helpers take int64 levels only (the sweeps pass np.int64(ls[p]) and R - 1 - ls[p]):
# one compiled specialisation each instead of an int32 and an int64 one (cold start, issue 11).
@njit
def _fen_reset(tree, R):
    for i in range(R + 1):
        tree[i, 0] = 0.0
        tree[i, 1] = 0.0
        tree[i, 2] = 0.0


@njit
def _fen_insert(tree, R, level, x):
    """Add the value x at `level` to the (count, mean, M2) nodes (Welford's update)."""
    i = level + 1
    while i <= R:
        cnt = tree[i, 0] + 1.0
        delta = x - tree[i, 1]
        tree[i, 0] = cnt
        tree[i, 1] += delta / cnt
        tree[i, 2] += delta * (x - tree[i, 1])
        i += i & (-i)


@njit
def _fen_stats(tree, level):
    """(count, mean, M2) of the values at levels < level (Chan et al.'s merge of the nodes)."""
    n = 0.0
    m = 0.0
    M2 = 0.0
    i = level
    while i > 0:
        nb = tree[i, 0]
        if nb > 0.0:
            if n == 0.0:
                n = nb
                m = tree[i, 1]
                M2 = tree[i, 2]
            else:
                tot = n + nb
                d = tree[i, 1] - m
                m += d * (nb / tot)
                M2 += tree[i, 2] + d * d * (n * nb / tot)
                n = tot
        i -= i & (-i)
    return n, m, M2


@njit
def _fen_add_sum(tree, R, level, x):
    """Add 1 to the count and x to the sum of `level` (Hessian-vector sweeps)."""
    i = level + 1
    while i <= R:
        tree[i, 0] += 1.0
        tree[i, 1] += x
        i += i & (-i)


@njit
def _fen_sums(tree, level):
    """(count, sum) over levels < level."""
    a = 0.0
    b = 0.0
    i = level
    while i > 0:
        a += tree[i, 0]
        b += tree[i, 1]
        i -= i & (-i)
    return a, b


@njit
def _sort_range(y, qptr, skip, order, q0, q1):
    tmp = np.empty(longest(qptr, q0, q1), dtype=np.int64)
    for q in range(q0, q1):
        if skip[q]:
            continue
        stable_order(y, qptr[q], qptr[q + 1], order, tmp)


def sort_queries(y, qptr, skip, order):
    """order[s:e] = rows of query q in ascending y (stable), for every query with skip[q] == 0.

    Large queries are sorted by the caller with NumPy's faster argsort and flagged in `skip`.
    Queries are split over the threads (rankkit.threads).
    """
    nq = qptr.shape[0] - 1
    threads.run(_sort_range, threads.split(qptr, nq, int(qptr[-1]) * 4), y, qptr, skip, order)


@njit
def query_fun_grad(y, lev, s, e, R, order, ys, ls, gs, tree, margin, squared):
    """Loss, active-pair count and sorted-space gradient gs[s:e] of one query (rows s:e), for the
    pair loss max(0, margin - (y_i - y_j))^2, or max(0, margin - (y_i - y_j)) (the hinge, with its
    subgradient) when `squared` is False."""
    for t in range(s, e):
        k = order[t]
        ys[t] = y[k]
        ls[t] = lev[k]
    loss = 0.0
    n_active = 0.0
    # statistics are kept relative to the query's median score (activity uses the raw scores)
    a = ys[(s + e) // 2]
    # sweep 1, descending: position t as the higher document; J_t = lower levels, y_t - y_j < 1
    _fen_reset(tree, R)
    p = e - 1
    for t in range(e - 1, s - 1, -1):
        yk = ys[t]
        while p >= s and yk - ys[p] < margin:
            _fen_insert(tree, R, np.int64(ls[p]), ys[p] - a)
            p -= 1
        n, m, M2 = _fen_stats(tree, np.int64(ls[t]))
        if n > 0.0:
            r = m + margin - (yk - a)
            if squared:
                loss += M2 + n * r * r
                gs[t] = -2.0 * n * r
            else:
                loss += n * r
                gs[t] = -n
            n_active += n
        else:
            gs[t] = 0.0
    # sweep 2, ascending: position t as the lower document; I_t = higher levels, y_i - y_t < 1
    # (the tree is indexed by reversed level, so "levels above" is a prefix)
    _fen_reset(tree, R)
    p = s
    for t in range(s, e):
        yk = ys[t]
        while p < e and ys[p] - yk < margin:
            _fen_insert(tree, R, R - 1 - ls[p], ys[p] - a)
            p += 1
        n, m, _ = _fen_stats(tree, R - 1 - ls[t])
        if n > 0.0:
            if squared:
                gs[t] += 2.0 * n * (margin - m + (yk - a))
            else:
                gs[t] += n
    return loss, n_active


@njit
def _fun_grad_range(y, lev, qptr, nlev, order, ys, ls, gs, gy, qweight, margin, squared, qloss, qactive, q0, q1):
    for q in range(q0, q1):
        s = qptr[q]
        e = qptr[q + 1]
        wq = qweight[q]
        if nlev[q] < 2 or wq == 0.0:
            for t in range(s, e):
                gy[t] = 0.0
                ys[t] = 0.0
                ls[t] = 0
            continue
        tree = np.empty((nlev[q] + 1, 3), dtype=np.float64)
        lq, aq = query_fun_grad(y, lev, s, e, nlev[q], order, ys, ls, gs, tree, margin, squared)
        for t in range(s, e):
            gy[order[t]] = wq * gs[t]
        qloss[q] = wq * lq
        qactive[q] = aq


@njit
def _sum_in_order(qloss, qactive):
    loss = 0.0
    n_active = 0.0
    for q in range(qloss.shape[0]):
        loss += qloss[q]
        n_active += qactive[q]
    return loss, n_active


def fun_grad_y(y, lev, qptr, nlev, order, ys, ls, gs, gy, qweight, margin, squared):
    """Loss L(y) and gy = dL/dy for all queries. Returns (loss, number of active pairs).

    `order` holds each query's rows in ascending y (see sort_queries). Writes the sorted scores
    `ys` and sorted levels `ls` that hess_vec_y reuses, so its active set is identical.
    nlev[q] is the number of distinct labels of query q; queries with one level are skipped.
    qweight[q] multiplies query q's loss and gradient (0 skips it); `margin` is the hinge point
    (1 for the RankSVM loss, 0 for the second term of the Huber decomposition).
    Queries are split over the threads (rankkit.threads); per-query sums are added in query
    order, so the result does not depend on the number of threads.
    """
    nq = qptr.shape[0] - 1
    qloss = np.zeros(nq)
    qactive = np.zeros(nq)
    threads.run(_fun_grad_range, threads.split(qptr, nq, int(qptr[-1]) * 4), y, lev, qptr, nlev, order, ys, ls, gs,
                gy, qweight, margin, squared, qloss, qactive)
    return _sum_in_order(qloss, qactive)


@njit
def _query_hv(ys, ls, s, e, R, ds, zs, tree, margin):
    # sweep 1, descending (same pointer rule as query_fun_grad)
    _fen_reset(tree, R)
    p = e - 1
    for t in range(e - 1, s - 1, -1):
        yk = ys[t]
        while p >= s and yk - ys[p] < margin:
            _fen_add_sum(tree, R, np.int64(ls[p]), ds[p])
            p -= 1
        cnt, G = _fen_sums(tree, np.int64(ls[t]))
        zs[t] = cnt * ds[t] - G
    # sweep 2, ascending, reversed levels
    _fen_reset(tree, R)
    p = s
    for t in range(s, e):
        yk = ys[t]
        while p < e and ys[p] - yk < margin:
            _fen_add_sum(tree, R, R - 1 - ls[p], ds[p])
            p += 1
        cnt, G = _fen_sums(tree, R - 1 - ls[t])
        zs[t] = 2.0 * (zs[t] + cnt * ds[t] - G)


@njit
def _hess_vec_range(ys, ls, qptr, nlev, order, d, ds, zs, z, qweight, margin, q0, q1):
    for q in range(q0, q1):
        s = qptr[q]
        e = qptr[q + 1]
        wq = qweight[q]
        if nlev[q] < 2 or wq == 0.0:
            for t in range(s, e):
                z[order[t]] = 0.0
            continue
        tree = np.empty((nlev[q] + 1, 3), dtype=np.float64)
        for t in range(s, e):
            ds[t] = d[order[t]]
        _query_hv(ys, ls, s, e, nlev[q], ds, zs, tree, margin)
        for t in range(s, e):
            z[order[t]] = wq * zs[t]


def hess_vec_y(ys, ls, qptr, nlev, order, d, ds, zs, z, qweight, margin):
    """z = H_L d in score space, at the active set of the last fun_grad_y (ys, ls, order)."""
    nq = qptr.shape[0] - 1
    threads.run(_hess_vec_range, threads.split(qptr, nq, int(qptr[-1]) * 4), ys, ls, qptr, nlev, order, d, ds, zs, z,
                qweight, margin)
    return z
