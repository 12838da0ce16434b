"""A stable argsort kernel shared by the objectives (per-query sorts by score) and the metrics
(rankings): numba's np.argsort(kind="mergesort") gives the same permutation but takes about a
second of compiling per kernel that uses it (cold start, issue 11) and allocates per call."""

from __future__ import annotations

import numpy as np

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
def resort_order(y, s, e, order, limit):
    """order[s:e], a permutation of the rows s..e-1 (the last sort's, made at other scores; an
    entry outside s..e-1 means none, and gives False at once), re-sorted by y in place by insertion: the permutation stable_order gives (ascending y, nan
    last, ties in row order), in O(n + the rows' moves), at most `limit` moves. False when more
    were needed (order[s:e] is then some permutation of the rows, to be sorted afresh). Between
    Newton iterations a query's scores change little and its last order is nearly sorted: 0.6-1 ms
    for the 200k LETOR file's 2,000 queries against stable_order's 8 ms (one thread; issue 39)."""
    moves = 0
    for t in range(s, e):  # not a permutation of the rows (an order never sorted): sort afresh
        if order[t] < s or order[t] >= e:
            return False
    for t in range(s + 1, e):
        k = order[t]
        v = y[k]
        u = t - 1
        while u >= s:
            r = order[u]
            w = y[r]
            if _before(v, w) or (not _before(w, v) and k < r):  # (y, row) before: stable_order's order
                order[u + 1] = r
                u -= 1
            else:
                break
        moves += t - 1 - u
        order[u + 1] = k
        if moves > limit:
            return False
    return True


@njit
def resort_limit(n):
    """resort_order's moves for a query of n rows before a sort afresh: 2 n log2(n). A move costs
    about 2.4 ns and stable_order about 6 ns per row and halving (measured on the 200k file), so a
    re-sort given up costs less than the sort it then runs."""
    bits = 0
    m = n
    while m > 0:
        bits += 1
        m >>= 1
    return 2 * n * bits


@njit
def longest(ptr, q0, q1):
    """max(ptr[q + 1] - ptr[q]) over q0 <= q < q1 (0 when empty): the scratch stable_order needs."""
    m = 0
    for q in range(q0, q1):
        m = max(m, ptr[q + 1] - ptr[q])
    return m


FEW_LABELS = 8  # query_levels: a query with at most this many distinct labels is ranked without a sort


@njit
def _few_levels(y, s, e, levels, vals, counts):
    """levels[s:e] = the dense rank of each label in y[s:e] and counts[r] = the rows of rank r, by
    a scan, when the query has at most FEW_LABELS distinct labels and no nan (else False, levels
    untouched): the ranks the sort of query_levels gives (equal labels, -0.0 and 0.0 too, share one)."""
    k = 0
    for t in range(s, e):
        v = y[t]
        if v != v:
            return False
        found = False
        for i in range(k):
            if vals[i] == v:
                found = True
                break
        if not found:
            if k == FEW_LABELS:
                return False
            vals[k] = v
            k += 1
    for i in range(1, k):  # the distinct labels ascending
        v = vals[i]
        j = i - 1
        while j >= 0 and vals[j] > v:
            vals[j + 1] = vals[j]
            j -= 1
        vals[j + 1] = v
    counts[:] = 0
    for t in range(s, e):
        v = y[t]
        r = 0
        while vals[r] != v:
            r += 1
        levels[t] = r
        counts[r] += 1
    return True


@njit
def query_levels(y, qptr, levels, pairs, order, tmp):
    """levels[i] = the dense rank of y[i] among the labels of its query (0 = the lowest; equal
    labels share a rank) and pairs[q] = the preference pairs of query q (two of its documents
    with different labels): (n_q^2 - sum over its labels of n_r^2) / 2. order (int64[n]) and
    tmp (int64[longest query]) are scratch. In place of a lexsort over the whole file, which held
    about seven n-sized temporaries (11.6 MB at 200,000 documents; issue 11)."""
    vals = np.empty(FEW_LABELS)
    counts = np.empty(FEW_LABELS, dtype=np.int64)
    for q in range(qptr.shape[0] - 1):
        s = qptr[q]
        e = qptr[q + 1]
        if e == s:
            pairs[q] = 0
            continue
        if _few_levels(y, s, e, levels, vals, counts):  # at most FEW_LABELS labels, no nan: no sort
            n = e - s
            same = 0
            for i in range(FEW_LABELS):
                same += counts[i] * counts[i]
            pairs[q] = (n * n - same) // 2
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


def ties_by_index(y, order, s, e) -> None:
    """order[s:e] holds rows sorted ascending by y (nan last) with equal scores in any order (an
    unstable sort's output): put each run of equal scores (-0.0 and 0.0 are equal; nans are one
    run) in ascending row order. The result is the stable argsort's permutation (the one order of
    the rows by (y, row)), so an unstable sort, several times faster on a large query, gives the
    same bits downstream. NumPy only (no kernel): one pass to find the ties, and a sort of the tied
    rows by (run, row) when there are any."""
    seg = order[s:e]
    if seg.shape[0] < 2:
        return
    ys = y[seg]
    a, b = ys[:-1], ys[1:]
    tie = a == b
    if np.isnan(b[-1]):  # nans (last): one run
        tie |= np.isnan(a) & np.isnan(b)
    if not tie.any():
        return
    tied = np.zeros(seg.shape[0], dtype=bool)
    tied[:-1] = tie
    tied[1:] |= tie
    idx = np.flatnonzero(tied)
    run = np.cumsum(~tie)[idx - (idx > 0)] * (idx > 0)  # the run of each tied position (runs are contiguous)
    # (run, row) as one int64 key: runs stay where they are, rows ascend within each
    key = run.astype(np.int64) * np.int64(e) + seg[idx]
    key.sort()
    seg[idx] = key % np.int64(e)


# -- the stable argsort of a long query by radix (PairwiseObjective's per-query sort, issue 39) ----
# A query of a million scores: np.argsort's introsort plus ties_by_index cost about 0.1 s, three
# quarters of an objective evaluation (the AUC problem). Each float64 becomes a uint64 key whose
# unsigned order is NumPy's (-0.0 as 0.0, every nan one key after +inf), and the rows are sorted by
# least-significant-digit radix, RADIX_BITS at a time (a pass skipped when every key shares its
# digit): linear in n, and stable, so ties stay in row order: the stable argsort's permutation.
# (Sorting from the previous evaluation's order does not help there: between Newton iterations the
# rows' ranks move by hundreds to thousands of places, half of the neighbours swap.)
RADIX_BITS = 8
RADIX_MIN = 4096  # queries at least this long (the kernel's merge sort below it)
_RADIX_DIGITS = (64 + RADIX_BITS - 1) // RADIX_BITS


@njit
def radix_order(y, s, e, order):
    """order[s:e] = s + np.argsort(y[s:e], kind="stable"), by LSD radix on the scores' bits."""
    n = e - s
    if n <= 0:
        return
    nb = 1 << RADIX_BITS
    fk = np.empty(n)
    keys = fk.view(np.uint64)
    top = np.uint64(1) << np.uint64(63)
    allones = ~np.uint64(0)
    for t in range(n):
        fk[t] = y[s + t] + 0.0  # -0.0 + 0.0 is 0.0: one key for the two zeros
    for t in range(n):
        k = keys[t]
        if fk[t] != fk[t]:
            keys[t] = allones  # every nan last, in row order
        elif k & top:
            keys[t] = ~k
        else:
            keys[t] = k | top
    counts = np.zeros((_RADIX_DIGITS, nb), dtype=np.int64)
    mask = np.uint64(nb - 1)
    for t in range(n):
        k = keys[t]
        for d in range(_RADIX_DIGITS):
            counts[d, np.int64((k >> np.uint64(d * RADIX_BITS)) & mask)] += 1
    idx = np.empty(n, dtype=np.int64)
    for t in range(n):
        idx[t] = s + t
    keys2 = np.empty(n, dtype=np.uint64)
    idx2 = np.empty(n, dtype=np.int64)
    for d in range(_RADIX_DIGITS):
        c = counts[d]
        one = False
        for b in range(nb):
            if c[b] == n:
                one = True
                break
            if c[b] != 0:
                break
        if one:
            continue
        shift = np.uint64(d * RADIX_BITS)
        pos = 0
        for b in range(nb):
            m = c[b]
            c[b] = pos
            pos += m
        for t in range(n):
            k = keys[t]
            b = np.int64((k >> shift) & mask)
            p = c[b]
            c[b] = p + 1
            keys2[p] = k
            idx2[p] = idx[t]
        keys, keys2 = keys2, keys
        idx, idx2 = idx2, idx
    for t in range(n):
        order[s + t] = idx[t]
