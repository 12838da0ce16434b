"""A stable argsort kernel shared by the objectives (per-query sorts by score) and the metrics
(rankings): numba's np.argsort(kind="mergesort") gives the same permutation but takes about a
second of compiling per kernel that uses it (cold start, issue 11) and allocates per call."""

from __future__ import annotations

from rankkit.compiler.dispatch import njit

_RUN = 32  # the stable sort's insertion-sorted runs


@njit
def _before(a, b):
    """a sorts before b: ascending, nan last (NumPy's order)."""
    return a < b or (b != b and a == a)


@njit
def stable_order(y, s, e, order, tmp):
    """order[s:e] = s + the stable ascending argsort of y[s:e] (np.argsort(kind="mergesort")):
    insertion-sorted runs of _RUN, then bottom-up merges between order and tmp (tmp[:e - s]).
    Written out rather than numba's np.argsort, which compiles for seconds (per array type) and
    allocates per call."""
    n = e - s
    for t in range(n):
        order[s + t] = s + t
    for lo in range(s, e, _RUN):
        hi = min(lo + _RUN, e)
        for i in range(lo + 1, hi):
            k = order[i]
            v = y[k]
            j = i - 1
            while j >= lo and _before(v, y[order[j]]):
                order[j + 1] = order[j]
                j -= 1
            order[j + 1] = k
    width = _RUN
    in_order = True  # where the current runs are: order[s:e] or tmp[:n]
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            a, b, out = lo, mid, lo
            while a < mid and b < hi:
                ka = order[s + a] if in_order else tmp[a]
                kb = order[s + b] if in_order else tmp[b]
                if _before(y[kb], y[ka]):  # the right one only when strictly before: stable
                    take = kb
                    b += 1
                else:
                    take = ka
                    a += 1
                if in_order:
                    tmp[out] = take
                else:
                    order[s + out] = take
                out += 1
            while a < mid:
                take = order[s + a] if in_order else tmp[a]
                if in_order:
                    tmp[out] = take
                else:
                    order[s + out] = take
                a += 1
                out += 1
            while b < hi:
                take = order[s + b] if in_order else tmp[b]
                if in_order:
                    tmp[out] = take
                else:
                    order[s + out] = take
                b += 1
                out += 1
        in_order = not in_order
        width *= 2
    if not in_order:
        for t in range(n):
            order[s + t] = tmp[t]


@njit
def longest(ptr, q0, q1):
    """max(ptr[q + 1] - ptr[q]) over q0 <= q < q1 (0 when empty): the scratch stable_order needs."""
    m = 0
    for q in range(q0, q1):
        m = max(m, ptr[q + 1] - ptr[q])
    return m


@njit
def query_levels(y, qptr, levels, pairs, order, tmp):
    """levels[i] = the dense rank of y[i] among the labels of its query (0 = the lowest; equal
    labels share a rank) and pairs[q] = the preference pairs of query q (two of its documents
    with different labels): (n_q^2 - sum over its labels of n_r^2) / 2. order (int64[n]) and
    tmp (int64[longest query]) are scratch. In place of a lexsort over the whole file, which held
    about seven n-sized temporaries (11.6 MB at 200,000 documents; issue 11)."""
    for q in range(qptr.shape[0] - 1):
        s = qptr[q]
        e = qptr[q + 1]
        if e == s:
            pairs[q] = 0
            continue
        stable_order(y, s, e, order, tmp)
        lev = 0
        run = 0
        same = 0
        prev = y[order[s]]
        for t in range(s, e):
            k = order[t]
            v = y[k]
            if t > s and v != prev:  # a new label (nan != nan: each nan its own, as before)
                lev += 1
                same += run * run
                run = 0
            levels[k] = lev
            run += 1
            prev = v
        same += run * run
        n = e - s
        pairs[q] = (n * n - same) // 2
