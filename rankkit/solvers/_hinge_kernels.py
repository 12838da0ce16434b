"""The hinge-loss oracle of the bundle solver: L(y) and a subgradient dL/dy in one pass per query.

    L(y) = sum_q w_q * sum over pairs (i, j) of q with level_i > level_j of max(0, 1 - (y_i - y_j))

Chapelle & Keerthi (2010) Sect. 4.1 for the hinge: with the documents of a query sorted by score,
the pairs where k is the higher document and the pair is violated are J_k = {j: lev_j < lev_k,
y_k - y_j < 1}, where k is the lower one I_k = {i: lev_i > lev_k, y_i - y_k < 1}, and

    L = sum_k n(J_k) (1 - y_k) + sum_{j in J_k} y_j,    dL/dy_k = n(I_k) - n(J_k)

Two sweeps over the sorted scores with a Fenwick tree over the query's levels (count and sum of
the scores minus the query's median, as in objectives/squared_hinge.py, whose Welford means the
hinge does not need) give every n and sum in O(n_q log R_q).

What makes it cheaper than the general objective for a cutting-plane method: the sort is *warm*.
Every call starts from the order the previous call left (the solver's own `order` array): the
bundle method evaluates the loss at points along a line and at nearby cutting-plane points, whose
per-query orders differ by a few swaps, so an insertion sort finishes in about O(n_q) moves. An
insertion sort that needs more than INSERTION_MOVES x n_q moves gives up (the order is still a
permutation) and the query is merge-sorted (rankkit.sorting.stable_order) as from scratch.
The set J_k (and I_k) depends on the scores only, not on how ties are ordered, so the loss and the
subgradient do not depend on the order the previous call left, except for the order in which
floating-point terms are added (the same for any number of threads: queries are split whole and
their sums added in query order).
"""

from __future__ import annotations

import numpy as np

from rankkit import threads
from rankkit.compiler.dispatch import njit
from rankkit.sorting import longest, stable_order

INSERTION_MOVES = 16  # an insertion sort gives up beyond this many moves per document of the query
NUMPY_SORT_MIN = 50_000  # queries at least this long are sorted by NumPy first (as the objective does)


@njit
def _ahead(a, b):
    """a sorts before b: ascending, nan last (NumPy's order, as rankkit.sorting)."""
    return a < b or (b != b and a == a)


@njit
def insertion_sort(y, order, s, e, limit):
    """Sort order[s:e] by y ascending by insertion, starting from the order it holds (stable with
    respect to it). False if it stopped after more than `limit` moves; order[s:e] is then still a
    permutation of the same rows, partly sorted."""
    moves = 0
    for i in range(s + 1, e):
        k = order[i]
        v = y[k]
        j = i - 1
        while j >= s and _ahead(v, y[order[j]]):
            order[j + 1] = order[j]
            j -= 1
        moves += i - 1 - j
        order[j + 1] = k
        if moves > limit:
            return False
    return True


@njit
def _query_hinge(y, lev, s, e, R, order, ys, ls, tree, gy, wq):
    """Loss (times wq) and violated-pair count of one sorted query (rows s:e); writes wq * dL/dy of
    its rows into gy."""
    m = e - s
    for t in range(m):
        k = order[s + t]
        ys[t] = y[k]
        ls[t] = lev[k]
    a = ys[m // 2]  # sums of scores are kept relative to the query's median
    loss = 0.0
    active = 0.0
    # sweep 1, descending: t as the higher document, J_t = lower levels with y_t - y_j < 1
    for i in range(R + 1):
        tree[i, 0] = 0.0
        tree[i, 1] = 0.0
    p = m - 1
    for t in range(m - 1, -1, -1):
        yk = ys[t]
        while p >= 0 and yk - ys[p] < 1.0:
            i = ls[p] + 1
            x = ys[p] - a
            while i <= R:
                tree[i, 0] += 1.0
                tree[i, 1] += x
                i += i & (-i)
            p -= 1
        n = 0.0
        S = 0.0
        i = ls[t]
        while i > 0:
            n += tree[i, 0]
            S += tree[i, 1]
            i -= i & (-i)
        if n > 0.0:
            loss += n * (1.0 - (yk - a)) + S
            active += n
        gy[order[s + t]] = -wq * n
    # sweep 2, ascending: t as the lower document, I_t = higher levels with y_i - y_t < 1 (the tree
    # indexed by reversed level, so that "levels above" is a prefix); counts only
    for i in range(R + 1):
        tree[i, 0] = 0.0
    p = 0
    for t in range(m):
        yk = ys[t]
        while p < m and ys[p] - yk < 1.0:
            i = R - ls[p]
            while i <= R:
                tree[i, 0] += 1.0
                i += i & (-i)
            p += 1
        n = 0.0
        i = R - 1 - ls[t]
        while i > 0:
            n += tree[i, 0]
            i -= i & (-i)
        gy[order[s + t]] += wq * n
    return wq * loss, active


@njit
def hinge_range(y, lev, qptr, nlev, qweight, order, gy, moves, qloss, qactive, q0, q1):
    """The queries q0 <= q < q1: sort each (warm, see the module's docstring), then its loss,
    violated pairs and subgradient; an insertion sort gives up beyond `moves` moves per document.
    Returns how many queries had to be sorted from scratch."""
    L = longest(qptr, q0, q1)
    R = 1
    for q in range(q0, q1):
        R = max(R, nlev[q])
    tmp = np.empty(L, dtype=np.int64)
    ys = np.empty(L, dtype=np.float64)
    ls = np.empty(L, dtype=np.int64)
    tree = np.empty((R + 1, 2), dtype=np.float64)
    resorted = 0
    for q in range(q0, q1):
        s = qptr[q]
        e = qptr[q + 1]
        qloss[q] = 0.0
        qactive[q] = 0.0
        if nlev[q] < 2 or qweight[q] == 0.0:
            for k in range(s, e):
                gy[k] = 0.0
            continue
        if not insertion_sort(y, order, s, e, moves * (e - s)):
            stable_order(y, s, e, order, tmp)
            resorted += 1
        qloss[q], qactive[q] = _query_hinge(y, lev, s, e, nlev[q], order, ys, ls, tree, gy, qweight[q])
    return resorted


def hinge_loss_grad(y, lev, qptr, nlev, qweight, order, gy, big, moves=INSERTION_MOVES):
    """L(y) (query weights applied), gy = dL/dy (overwritten) and the number of violated pairs.
    `order` (int64[n], each query's rows) is the warm start and is left sorted by y; `big` the
    queries NumPy sorts first; `moves` per document before an insertion sort gives up (0: every
    query not already in order is merge-sorted). Returns (loss, violated pairs, queries sorted from scratch)."""
    for q in big:
        s, e = int(qptr[q]), int(qptr[q + 1])
        order[s:e] = s + np.argsort(y[s:e], kind="stable")
    nq = qptr.shape[0] - 1
    qloss = np.zeros(nq)
    qactive = np.zeros(nq)
    resorted = threads.run(hinge_range, threads.split(qptr, nq, int(qptr[-1]) * 4), y, lev, qptr, nlev, qweight,
                           order, gy, int(moves), qloss, qactive)
    return float(np.sum(qloss)), int(np.sum(qactive)), sum(resorted)


@njit
def simplex_smo(G, b, a, iters, tol, gap_tol):
    """max_a b.a - 0.5 a'Ga over the simplex, in place from a feasible a, by pairwise steps between
    the best coordinate and the worst one in the support, each with an exact line search (an SMO on
    the single equality constraint). Stops when the pair's gradient gap is below tol (relative),
    when the Frank-Wolfe gap max_i grad_i - a.grad (a bound on how far b.a - 0.5 a'Ga is below the
    maximum) is below gap_tol (absolute, if positive), or after `iters` steps. Returns the steps."""
    k = a.shape[0]
    Ga = np.zeros(k)
    for r in range(k):
        s = 0.0
        for c in range(k):
            s += G[r, c] * a[c]
        Ga[r] = s
    for it in range(iters):
        i = 0
        best = b[0] - Ga[0]
        ag = 0.0
        for r in range(k):
            g = b[r] - Ga[r]
            ag += a[r] * g
            if g > best:
                best = g
                i = r
        if gap_tol > 0.0 and best - ag <= gap_tol:
            return it
        j = -1
        worst = 0.0
        for r in range(k):
            if a[r] > 0.0:
                g = b[r] - Ga[r]
                if j < 0 or g < worst:
                    worst = g
                    j = r
        gap = best - worst
        if gap <= tol * (1.0 + abs(best)):
            return it
        curv = G[i, i] + G[j, j] - 2.0 * G[i, j]
        step = a[j] if curv <= 0.0 else min(a[j], gap / curv)
        a[i] += step
        a[j] -= step
        for r in range(k):
            Ga[r] += step * (G[r, i] - G[r, j])
    return iters
