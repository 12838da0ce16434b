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
from rankkit.sorting import RADIX_MIN, longest, radix_order, resort_limit, resort_order, stable_order
from rankkit.sparse import value_at


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
    while i < R:  # node R (every level) is never read: _fen_stats sums levels < level <= R - 1
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
    while i < R:  # node R is never read (as _fen_insert)
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
def _sort_range(y, qptr, skip, order, radix_min, q0, q1):
    tmp = np.empty(min(longest(qptr, q0, q1), radix_min), dtype=np.int64)
    for q in range(q0, q1):
        if skip[q]:
            continue
        s, e = qptr[q], qptr[q + 1]
        if e - s >= radix_min:
            radix_order(y, s, e, order)
        elif not resort_order(y, s, e, order, resort_limit(e - s)):
            stable_order(y, s, e, order, tmp)


def sort_queries(y, qptr, skip, order, radix_min=RADIX_MIN):
    """order[s:e] = rows of query q in ascending y (stable: ties in row order), for every query
    with skip[q] == 0: queries of at least radix_min rows by radix (rankkit.sorting.radix_order,
    linear: the AUC problem's one query of a million), shorter ones re-sorted from the order they
    hold (each query's rows in some order: the last sort's, or row order at the start) by
    insertion while that moves few rows (rankkit.sorting.resort_order), else by the kernel's
    merge sort; the same permutation every way. Queries are split over the threads (rankkit.threads).
    """
    nq = qptr.shape[0] - 1
    threads.run(_sort_range, threads.split(qptr, nq, int(qptr[-1]) * 4), y, qptr, skip, order, int(radix_min))


@njit
def query_fun_grad(y, lev, s, e, R, order, ys, ls, gs, tree, margin, squared):
    """Loss, active-pair count and sorted-space gradient gs[s:e] of one query (rows s:e), for the
    pair loss max(0, margin - (y_i - y_j))^2, or max(0, margin - (y_i - y_j)) (the hinge, with its
    subgradient) when `squared` is False."""
    for t in range(s, e):
        k = order[t]
        ys[t] = y[k]
        ls[t] = lev[k]
    # statistics are kept relative to the query's median score (activity uses the raw scores)
    a = ys[(s + e) // 2]
    loss, n_active = _fg_down(ys, ls, s, e, R, gs, tree, margin, squared, a)
    _fg_up(ys, ls, s, e, R, gs, tree, margin, squared, a, gs, gs, True)  # (cnt_up, g_up unused: gs for their type)
    return loss, n_active


@njit
def _fg_down(ys, ls, s, e, R, gs, tree, margin, squared, a):
    """query_fun_grad's sweep 1, descending: position t as the higher document; J_t = lower levels,
    y_t - y_j < margin. Writes gs[s:e]; returns (loss, active pairs)."""
    loss = 0.0
    n_active = 0.0
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
    return loss, n_active


@njit
def _fg_up(ys, ls, s, e, R, gs, tree, margin, squared, a, cnt_up, g_up, finish):
    """query_fun_grad's sweep 2, ascending: position t as the lower document; I_t = higher levels,
    y_i - y_t < margin (the tree is indexed by reversed level, so "levels above" is a prefix).
    `finish`: the term is added to gs[t] (after _fg_down); else the count and the term go to
    cnt_up[t - s], g_up[t - s] (_fg_finish adds them the same way, for _fg_sweep's two threads)."""
    _fen_reset(tree, R)
    p = s
    for t in range(s, e):
        yk = ys[t]
        while p < e and ys[p] - yk < margin:
            _fen_insert(tree, R, R - 1 - ls[p], ys[p] - a)
            p += 1
        n, m, _ = _fen_stats(tree, R - 1 - ls[t])
        v = 0.0
        if n > 0.0:
            if squared:
                v = 2.0 * n * (margin - m + (yk - a))
            else:
                v = n
        if finish:
            if n > 0.0:
                gs[t] += v
        else:
            cnt_up[t - s] = n
            g_up[t - s] = v


@njit
def _fg_gather(y, lev, order, ys, ls, lo, hi):
    for t in range(lo, hi):
        k = order[t]
        ys[t] = y[k]
        ls[t] = lev[k]


@njit
def _fg_sweep(ys, ls, s, e, R, gs, margin, squared, a, cnt_up, g_up, out, lo, hi):
    """One of query_fun_grad's two sweeps, for one large query on two threads: part 0 the
    descending one (gs, and its loss and active pairs in out[0], out[1]), part 1 the ascending
    one's counts and terms (cnt_up, g_up)."""
    tree = np.empty((R + 1, 3), dtype=np.float64)
    if lo == 0:
        loss, act = _fg_down(ys, ls, s, e, R, gs, tree, margin, squared, a)
        out[0] = loss
        out[1] = act
    else:
        _fg_up(ys, ls, s, e, R, gs, tree, margin, squared, a, cnt_up, g_up, False)


@njit
def _fg_finish(gs, cnt_up, g_up, order, gy, wq, s, e):
    """query_fun_grad's last step and _fun_grad_range's scatter, after _fg_sweep: the same arithmetic."""
    for t in range(s, e):
        if cnt_up[t - s] > 0.0:
            gs[t] += g_up[t - s]
        gy[order[t]] = wq * gs[t]


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


def fun_grad_y(y, lev, qptr, nlev, order, ys, ls, gs, gy, qweight, margin, squared, scratch=None):
    """Loss L(y) and gy = dL/dy for all queries. Returns (loss, number of active pairs).

    `order` holds each query's rows in ascending y (see sort_queries). Writes the sorted scores
    `ys` and sorted levels `ls` that hess_vec_y reuses, so its active set is identical.
    nlev[q] is the number of distinct labels of query q; queries with one level are skipped.
    qweight[q] multiplies query q's loss and gradient (0 skips it); `margin` is the hinge point
    (1 for the RankSVM loss, 0 for the second term of the Huber decomposition).
    Queries are split over the threads (rankkit.threads); per-query sums are added in query
    order, so the result does not depend on the number of threads. One query of at least
    SPLIT_SWEEPS_MIN rows, with two threads: its two sweeps side by side (`scratch`: two float64
    arrays of its length, allocated if None), the same bits as one thread.
    """
    nq = qptr.shape[0] - 1
    qloss = np.zeros(nq)
    qactive = np.zeros(nq)
    if nq == 1 and int(qptr[1]) >= SPLIT_SWEEPS_MIN and nlev[0] >= 2 and qweight[0] != 0.0 and threads.count() >= 2:
        s, e = int(qptr[0]), int(qptr[1])
        if scratch is None:
            scratch = (np.empty(e - s), np.empty(e - s))
        mid = (s + e) // 2
        threads.run(_fg_gather, [(s, mid), (mid, e)], y, lev, order, ys, ls)
        down = np.zeros(2)  # the descending sweep's loss and active pairs
        threads.run(_fg_sweep, [(0, 1), (1, 2)], ys, ls, s, e, int(nlev[0]), gs, float(margin), bool(squared),
                    float(ys[mid]), scratch[0], scratch[1], down)
        wq = float(qweight[0])
        _fg_finish(gs, scratch[0], scratch[1], order, gy, wq, s, e)
        qloss[0] = wq * down[0]
        qactive[0] = down[1]
        return _sum_in_order(qloss, qactive)
    threads.run(_fun_grad_range, threads.split(qptr, nq, int(qptr[-1]) * 4), y, lev, qptr, nlev, order, ys, ls, gs,
                gy, qweight, margin, squared, qloss, qactive)
    return _sum_in_order(qloss, qactive)


@njit
def _hv_down(ys, ls, s, e, R, ds, zs, tree, margin):
    """The Hessian-vector product's first sweep, descending (same pointer rule as query_fun_grad):
    zs[t] = cnt * ds[t] - G."""
    _fen_reset(tree, R)
    p = e - 1
    for t in range(e - 1, s - 1, -1):
        yk = ys[t]
        while p >= s and yk - ys[p] < margin:
            _fen_add_sum(tree, R, np.int64(ls[p]), ds[p])
            p -= 1
        cnt, G = _fen_sums(tree, np.int64(ls[t]))
        zs[t] = cnt * ds[t] - G


@njit
def _hv_up(ys, ls, s, e, R, ds, zs, tree, margin, cnt_up, g_up, finish):
    """The Hessian-vector product's ascending sweep (reversed levels): `finish`, zs[t] becomes
    2 (zs[t] + cnt ds[t] - G), the product of the query (after _hv_down); else its counts and sums
    go to cnt_up[t - s], g_up[t - s] (_hv_sweep's second part; _hv_finish adds them the same way)."""
    _fen_reset(tree, R)
    p = s
    for t in range(s, e):
        yk = ys[t]
        while p < e and ys[p] - yk < margin:
            _fen_add_sum(tree, R, R - 1 - ls[p], ds[p])
            p += 1
        cnt, G = _fen_sums(tree, R - 1 - ls[t])
        if finish:
            zs[t] = 2.0 * (zs[t] + cnt * ds[t] - G)
        else:
            cnt_up[t - s] = cnt
            g_up[t - s] = G


@njit
def _query_hv(ys, ls, s, e, R, ds, zs, tree, margin):
    _hv_down(ys, ls, s, e, R, ds, zs, tree, margin)
    _hv_up(ys, ls, s, e, R, ds, zs, tree, margin, zs, zs, True)  # (cnt_up, g_up unused: zs for their type)


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


@njit
def _hv_sweep(ys, ls, s, e, R, ds, zs, cnt_up, g_up, margin, lo, hi):
    """One of _query_hv's two sweeps, for one large query on two threads: part 0 the descending
    sweep (zs[t] = cnt * ds[t] - G, as _query_hv writes it), part 1 the ascending one's counts
    and sums (cnt_up, g_up: what _query_hv adds to zs[t]; _hv_finish adds them in its order)."""
    tree = np.empty((R + 1, 3), dtype=np.float64)
    if lo == 0:
        _hv_down(ys, ls, s, e, R, ds, zs, tree, margin)
    else:
        _hv_up(ys, ls, s, e, R, ds, zs, tree, margin, cnt_up, g_up, False)


@njit
def _hv_finish(ds, zs, cnt_up, g_up, order, z, wq, s, e):
    """_query_hv's last step and _hess_vec_range's scatter, after _hv_sweep: the same arithmetic."""
    for t in range(s, e):
        zs[t] = 2.0 * (zs[t] + cnt_up[t - s] * ds[t] - g_up[t - s])
    for t in range(s, e):  # after every read of ds (z may be ds: PairwiseObjective writes over it)
        z[order[t]] = wq * zs[t]


# A single query at least this long: hess_vec_y runs its two sweeps on two threads (the AUC problem,
# one query of every document: the per-query split leaves the second core idle)
SPLIT_SWEEPS_MIN = 4096  # (the warm-up trains on one query of 6000 documents with --threads 2: these kernels are in the build)


def hess_vec_y(ys, ls, qptr, nlev, order, d, ds, zs, z, qweight, margin, scratch=None):
    """z = H_L d in score space, at the active set of the last fun_grad_y (ys, ls, order).
    One query of at least SPLIT_SWEEPS_MIN rows, with two threads: its two sweeps side by side
    (`scratch`: two float64 arrays of its length, allocated if None), the same bits as one thread."""
    nq = qptr.shape[0] - 1
    if nq == 1 and int(qptr[1]) >= SPLIT_SWEEPS_MIN and nlev[0] >= 2 and qweight[0] != 0.0 and threads.count() >= 2:
        s, e = int(qptr[0]), int(qptr[1])
        if scratch is None:
            scratch = (np.empty(e - s), np.empty(e - s))
        np.take(d, order[s:e], out=ds[s:e], mode="clip")  # (valid indices: clip changes none, and is unbuffered)
        threads.run(_hv_sweep, [(0, 1), (1, 2)], ys, ls, s, e, int(nlev[0]), ds, zs, scratch[0], scratch[1],
                    float(margin))
        _hv_finish(ds, zs, scratch[0], scratch[1], order, z, float(qweight[0]), s, e)
        return z
    threads.run(_hess_vec_range, threads.split(qptr, nq, int(qptr[-1]) * 4), ys, ls, qptr, nlev, order, d, ds, zs, z,
                qweight, margin)
    return z


# -- violated pairs, counted once over the labels (slack rescaling sums one loss per threshold) -----
@njit
def _count_range(y, lev, order, qptr, nlev, qweight, margin, out, q0, q1):
    for q in range(q0, q1):
        out[q] = 0.0
        s = qptr[q]
        e = qptr[q + 1]
        R = nlev[q]
        if R < 2 or qweight[q] == 0.0:
            continue
        tree = np.zeros((R + 1, 3))
        cnt = 0.0
        p = e - 1
        for t in range(e - 1, s - 1, -1):  # sweep 1 of query_fun_grad: t the higher document
            while p >= s and y[order[t]] - y[order[p]] < margin:
                _fen_add_sum(tree, R, np.int64(lev[order[p]]), 0.0)
                p -= 1
            n, _ = _fen_sums(tree, np.int64(lev[order[t]]))
            cnt += n
        out[q] = cnt


def count_active(y, lev, order, qptr, nlev, qweight, margin):
    """Pairs (i, j) of one query with lev_i > lev_j and y_i - y_j < margin, in queries of non-zero
    weight: y and lev by row, `order` each query's rows in ascending y (sort_queries). O(n log R);
    per-query counts added in query order."""
    nq = qptr.shape[0] - 1
    out = np.zeros(nq)
    threads.run(_count_range, threads.split(qptr, nq, int(qptr[-1])), y, lev, order, qptr, nlev, qweight, margin, out)
    total = 0.0
    for q in range(nq):
        total += out[q]
    return total


# -- the diagonal of the generalised Hessian in feature space -------------------------------------
# diag(X' H_L X)_f = 2 sum over active pairs (i, j) of (x_if - x_jf)^2
#                  = 2 [ sum_k c_k x_kf^2 - 2 sum_k x_kf sum_{j in J_k} x_jf ]
# with c_k = n(J_k) + n(I_k), the active pairs document k belongs to. Sweep 1 (descending, the
# pointer rule of query_fun_grad) keeps a Fenwick tree over the levels of *vectors* (the rows of X
# inserted so far, one column of the tree per feature) and a tree of counts; at position t it reads
# sum_{j in J_t} x_j at the columns of row t only, so a query costs O(nnz_q log R_q). Sweep 2 counts
# n(I_t). The vector tree is cleared by walking the inserted rows' paths again (never by a pass over
# every feature), so a sparse file with many queries and many features costs O(nnz log R) in all.
@njit
def _query_hdiag(ys, ls, order, s, e, R, data, indices, indptr, vscale, vtree, ctree, cs, margin, scale, out):
    # sweep 1, descending: counts n(J_t) and the cross term
    for i in range(R + 1):
        ctree[i, 0] = 0.0
        ctree[i, 1] = 0.0
    p = e - 1
    for t in range(e - 1, s - 1, -1):
        yk = ys[t]
        while p >= s and yk - ys[p] < margin:
            lv = np.int64(ls[p])
            _fen_add_sum(ctree, R, lv, 0.0)
            row = order[p]
            _vec_insert(vtree, R, lv, data, indices, vscale, indptr[row], indptr[row + 1])
            p -= 1
        n, _ = _fen_sums(ctree, np.int64(ls[t]))
        cs[t] = n
        if n > 0.0:
            row = order[t]
            for a in range(indptr[row], indptr[row + 1]):
                col = indices[a]
                acc = 0.0
                i = np.int64(ls[t])
                while i > 0:
                    acc += vtree[i, col]
                    i -= i & (-i)
                out[col] -= 2.0 * scale * value_at(data, a, vscale) * acc
    # clear the vector tree along the paths that were written
    for q in range(p + 1, e):
        lv = np.int64(ls[q])
        row = order[q]
        for a in range(indptr[row], indptr[row + 1]):
            col = indices[a]
            i = lv + 1
            while i < R:  # (_vec_insert never writes node R: no prefix below a level reads it)
                vtree[i, col] = 0.0
                i += i & (-i)
    # sweep 2, ascending, reversed levels: counts n(I_t)
    for i in range(R + 1):
        ctree[i, 0] = 0.0
        ctree[i, 1] = 0.0
    p = s
    for t in range(s, e):
        yk = ys[t]
        while p < e and ys[p] - yk < margin:
            _fen_add_sum(ctree, R, R - 1 - np.int64(ls[p]), 0.0)
            p += 1
        n, _ = _fen_sums(ctree, R - 1 - np.int64(ls[t]))
        c = cs[t] + n
        if c > 0.0:
            row = order[t]
            for a in range(indptr[row], indptr[row + 1]):
                v = value_at(data, a, vscale)
                out[indices[a]] += scale * c * v * v


@njit
def _hdiag_chunks(ys, ls, qptr, nlev, order, qweight, data, indices, indptr, vscale, margin, coef, cs, part, cstart,
                  c0, c1):
    """part[c] += coef * the diagonal of query chunk c (queries cstart[c]..cstart[c + 1]-1)."""
    d = part.shape[1]
    for c in range(c0, c1):
        q0 = cstart[c]
        q1 = cstart[c + 1]
        R = 2
        for q in range(q0, q1):
            if nlev[q] > R:
                R = nlev[q]
        vtree = np.zeros((R + 1, d))
        ctree = np.empty((R + 1, 2))
        for q in range(q0, q1):
            wq = qweight[q]
            if nlev[q] < 2 or wq == 0.0:
                continue
            _query_hdiag(ys, ls, order, qptr[q], qptr[q + 1], nlev[q], data, indices, indptr, vscale, vtree, ctree, cs,
                         margin, 2.0 * coef * wq, part[c])


def hess_diag_chunks(qptr, n_features, nnz):
    """The fixed split of the queries into chunks for hess_diag (a function of the shape only, so
    the sum and the bits of the diagonal do not depend on the number of threads): an array of the
    first query of each chunk, and the last query + 1."""
    nq = qptr.shape[0] - 1
    n_rows = int(qptr[-1])
    nc = max(1, min(MAX_DIAG_CHUNKS, nq, (DIAG_CHUNK_BUDGET // max(n_features, 1)), n_rows // 1024))
    cuts = np.searchsorted(qptr, (np.arange(1, nc) * n_rows) // nc, side="left")
    return np.unique(np.concatenate([[0], cuts, [nq]])).astype(np.int64)


DIAG_CHUNK_BUDGET = 1 << 21  # doubles of per-chunk partial diagonals
MAX_DIAG_CHUNKS = 16


def hess_diag_add(ys, ls, qptr, nlev, order, qweight, data, indices, indptr, margin, coef, cs, part, cstart,
                  vscale=1.0):
    """part[c, :] += coef * diag(X' H_L X) over the queries of chunk c, at the active set of the last
    fun_grad_y (ys, ls, order). cs: scratch of n_rows doubles. The chunks are split over the threads.
    vscale: the values are data / vscale (rankkit.data.Dataset.value_scale; 1.0: data itself)."""
    nc = cstart.shape[0] - 1
    threads.run(_hdiag_chunks, threads.split(None, nc, int(indptr[-1]) * 4), ys, ls, qptr, nlev, order, qweight, data,
                indices, indptr, float(vscale), margin, coef, cs, part, cstart)



# -- the generalised Hessian of the loss applied to a block of rows of X (the dense preconditioner) --
@njit
def _vec_insert(vtree, R, level, data, indices, vscale, lo, hi):
    for a in range(lo, hi):
        col = indices[a]
        v = value_at(data, a, vscale)
        i = level + 1
        while i < R:  # node R (the sum of every level) is never read: prefixes are of levels < R
            vtree[i, col] += v
            i += i & (-i)


@njit
def _vec_prefix_sub(vtree, level, zrow):
    """zrow -= the sum of the vectors at levels < level."""
    i = level
    while i > 0:
        for c in range(zrow.shape[0]):
            zrow[c] -= vtree[i, c]
        i -= i & (-i)


@njit
def _query_hx(ys, ls, order, s, e, R, data, indices, indptr, vscale, r0, vtree, ctree, margin, scale, Z):
    """Z[k - r0] += scale * (H_L X)_k for the rows k of one query (s:e in sorted order) at the active
    set of the last fun_grad_y: (H_L X)_k = 2 [c_k x_k - sum_{j in J_k} x_j - sum_{i in I_k} x_i],
    hess_vec_y's two sweeps with a row of features in place of a number: O(n_q d log R_q)."""
    n = e - s
    cs = np.zeros(n)
    acc = np.zeros((n, Z.shape[1]))
    # sweep 1, descending: J_t (lower levels, y_t - y_j < margin)
    vtree[:, :] = 0.0
    ctree[:, :] = 0.0
    p = e - 1
    for t in range(e - 1, s - 1, -1):
        while p >= s and ys[t] - ys[p] < margin:
            lv = np.int64(ls[p])
            _fen_add_sum(ctree, R, lv, 0.0)
            _vec_insert(vtree, R, lv, data, indices, vscale, indptr[order[p]], indptr[order[p] + 1])
            p -= 1
        cnt, _ = _fen_sums(ctree, np.int64(ls[t]))
        cs[t - s] = cnt
        if cnt > 0.0:
            _vec_prefix_sub(vtree, np.int64(ls[t]), acc[t - s])
    # sweep 2, ascending, reversed levels: I_t
    vtree[:, :] = 0.0
    ctree[:, :] = 0.0
    p = s
    for t in range(s, e):
        while p < e and ys[p] - ys[t] < margin:
            lv = R - 1 - np.int64(ls[p])
            _fen_add_sum(ctree, R, lv, 0.0)
            _vec_insert(vtree, R, lv, data, indices, vscale, indptr[order[p]], indptr[order[p] + 1])
            p += 1
        cnt, _ = _fen_sums(ctree, R - 1 - np.int64(ls[t]))
        cs[t - s] += cnt
        if cnt > 0.0:
            _vec_prefix_sub(vtree, R - 1 - np.int64(ls[t]), acc[t - s])
    for t in range(s, e):
        row = order[t]
        c = cs[t - s]
        zr = Z[row - r0]
        for a in range(indptr[row], indptr[row + 1]):
            zr[indices[a]] += 2.0 * scale * c * value_at(data, a, vscale)
        for col in range(Z.shape[1]):
            zr[col] += 2.0 * scale * acc[t - s, col]


@njit
def hess_x_block(ys, ls, qptr, nlev, order, qweight, data, indices, indptr, margin, coef, q0, q1, r0, Z, vscale=1.0):
    """Z[k - r0] += coef * (H_L X)_k for the rows k of queries q0..q1-1 (Z: rows x n_features; r0 the
    first row of query q0: qptr[q0] when the sweep covers every row, the row offset of the block
    when qptr and order are a view of some rows, PairwiseObjective's label-pair views). vscale as
    hess_diag_add's."""
    R = 2
    for q in range(q0, q1):
        if nlev[q] > R:
            R = nlev[q]
    vtree = np.zeros((R + 1, Z.shape[1]))
    ctree = np.zeros((R + 1, 2))
    for q in range(q0, q1):
        wq = qweight[q]
        if nlev[q] < 2 or wq == 0.0:
            continue
        _query_hx(ys, ls, order, qptr[q], qptr[q + 1], nlev[q], data, indices, indptr, vscale, r0, vtree, ctree, margin,
                  coef * wq, Z)


@njit
def _xtz_rows(data, indices, indptr, vscale, r0, r1, Z, H, i0, i1):
    """H[i] += sum over rows r of the block of x_ri Z[r - r0] for the features i0 <= i < i1 (each
    thread its own rows of H, every sum in row order: the bits do not depend on the threads)."""
    d = Z.shape[1]
    for r in range(r0, r1):
        zr = Z[r - r0]
        for a in range(indptr[r], indptr[r + 1]):
            i = indices[a]
            if i0 <= i < i1:
                v = value_at(data, a, vscale)
                hi = H[i]
                for c in range(d):
                    hi[c] += v * zr[c]


def xtz_add(data, indices, indptr, r0, r1, Z, H, vscale=1.0):
    """H += X[r0:r1]' Z, the rows of H split over the threads; vscale as hess_diag_add's."""
    d = H.shape[0]
    threads.run(_xtz_rows, threads.split(None, d, (int(indptr[r1]) - int(indptr[r0])) * d), data, indices, indptr,
                float(vscale), r0, r1, Z, H)


# -- X^T z for very sparse rows (the gradient and every Hessian-vector product) --------------------
# rankkit.sparse.csr_rmatvec sums up to 64 chunks of rows, each into its own n_features buffer, and
# adds the buffers: on text-like data (rows of a few dozen non-zeros among tens of thousands of
# features) the buffers outweigh the rows (the 38,400-document AUC query: 37 buffers of 47,236
# doubles, 14 MB written, zeroed and summed per product, against 2.7M non-zeros). xt_chunks caps the
# chunks so that their buffers hold at most an eighth of X's entries (and at least two chunks, for
# two threads); where that cap does not bind, the objective keeps csr_rmatvec, bit for bit.
XT_BUFFER_SHARE = 8


def xt_chunks(n_rows: int, n_features: int, nnz: int) -> int:
    """Chunks of rows for xt_product: csr_rmatvec's count, capped at max(2, nnz / (8 n_features))
    (a function of the shape only: the same sums for any number of threads)."""
    from rankkit.sparse import rmatvec_chunks

    nc = int(rmatvec_chunks(n_rows, n_features))
    if nc <= 2:
        return nc
    return min(nc, max(2, nnz // (XT_BUFFER_SHARE * max(n_features, 1))))


@njit
def _xt_chunk_rows(data, indices, indptr, vscale, z, part, c0, c1):
    """part[c] = (rows of chunk c)' z for chunks c0..c1-1 (chunk c: rows c n / nc .. (c + 1) n / nc
    - 1, nc = part.shape[0]), each summed in row order."""
    n = indptr.shape[0] - 1
    nc = part.shape[0]
    for c in range(c0, c1):
        p = part[c]
        p[:] = 0.0
        for i in range(c * n // nc, (c + 1) * n // nc):
            zi = z[i]
            if zi != 0.0:
                for t in range(indptr[i], indptr[i + 1]):
                    p[indices[t]] += value_at(data, t, vscale) * zi


@njit
def _xt_sum(part, out, j0, j1):
    """out[j] = sum of part[c, j] in chunk order, for j0 <= j < j1."""
    nc = part.shape[0]
    for j in range(j0, j1):
        acc = 0.0
        for c in range(nc):
            acc += part[c, j]
        out[j] = acc


def xt_product(data, indices, indptr, z, part, out, vscale=1.0):
    """out = X' z by the part.shape[0] chunks of xt_chunks (part: chunks x n_features scratch,
    overwritten); chunks and the final sum split over the threads, the same bits for any number."""
    nc, d = part.shape
    threads.run(_xt_chunk_rows, threads.split(None, nc, int(indptr[-1])), data, indices, indptr, float(vscale), z,
                part)
    threads.run(_xt_sum, threads.split(None, d, d * nc), part, out)
    return out
