"""The numba side of rankkit.metrics: integer codes, per-metric helpers, and one per-query loop.

`metrics_range` ranks each query of a range of queries once (a stable sort on -score) and lays
the ranking out position by position: gains, relevance and ERR probabilities in ranked order, the
ideal gains best first, and, for the pair metrics, the score-tie and label-tie counts. Every
metric is then a small pure function of those arrays and counts (`dcg`, `ndcg`, `precision`,
`average_precision`, `reciprocal_rank`, `err`, `auc`, `pairwise_accuracy`, `kendall_tau`),
in the way ranx has one per-query function per metric, but over the one ranking they share,
for all the metrics of a call (each with its own cutoff and empty-query rule). Other sorts are of
labels, not rankings, and only when a metric needs them: the ideal gains (ndcg, dcg), and the
(label, score) order whose inversions are the discordant pairs (kendall-tau, pairwise-accuracy).

Kernels see integer codes, never names or Python objects (which would make them uncacheable):
rankkit.metrics parses "ndcg@10" and a convention's name into the codes below. The kernels
return a status (0, or STATUS_UNKNOWN_METRIC) instead of raising. Each query is computed on its
own and written to its own column of `out`, so `metrics_range` can run on any split of the
queries over threads (rankkit.threads) and give the same bits.
"""

from __future__ import annotations

import numpy as np

from rankkit.compiler.dispatch import njit
from rankkit.sorting import RADIX_MIN, radix_order, stable_order

# -- integer codes the kernels dispatch on ---------------------------------------------------------
# How a label becomes a gain.
GAIN_TABLE = 0  # gain_table[label] for an integer label in 0..len(table)-1; 0 for any other label
GAIN_EXP = 1  # 2**label - 1
GAIN_LINEAR = 2  # label itself
GAIN_LINEAR_CLIP = 3  # max(label, 0) (trec_eval: negative judgments have no gain)

# Discount of 1-based position p.
DISCOUNT_LETOR4 = 0  # 1 if p <= 2 else log2(p) (the LETOR scripts)
DISCOUNT_LOG2P1 = 1  # log2(p + 1) (trec_eval >= 9.0.4, RankLib, LightGBM, XGBoost)

# NDCG@k of a query with fewer than k documents.
SHORT_ZERO = 0  # 0
SHORT_TRUNCATE = 1  # computed over the documents the query has

# Empty queries (see rankkit.metrics' docstring).
EMPTY_ZERO = 0
EMPTY_ONE = 1
EMPTY_SKIP = 2

# Which documents are relevant (P@k, AP, RR, AUC).
RELEVANT_GAIN = 0  # gain > 0
RELEVANT_LABEL = 1  # label >= relevance_threshold

# Denominator of AP@k (map@k); map without k always divides by R.
MAPCUT_MIN_RK = 0  # min(R, k)
MAPCUT_R = 1  # R, the number of relevant documents (trec_eval's map_cut)

# P@k of a query with fewer than k documents.
PRECISION_HOLES = 0  # missing positions count as non-relevant: hits / k (LETOR 4.0, trec_eval)
PRECISION_SHORT_ZERO = 1  # 0 (LETOR 3.0 script)

# Metric codes.
M_NDCG = 0
M_DCG = 1
M_PRECISION = 2
M_AP = 3
M_RR = 4
M_ERR = 5
M_AUC = 6
M_PAIRWISE = 7
M_TAU = 8
M_RPREC = 9

K_ALL = 2**62  # the cutoff the kernels see for a metric without k: the whole ranking

SELECT_TOP = 20  # ideal gains down to a cutoff at most this: selected by insertion, not sorted

STATUS_OK = 0
STATUS_UNKNOWN_METRIC = 1  # a code not among M_*: a bug of the caller (codes come from METRICS)


# -- gains, discounts, relevance ----------------------------------------------------------------------
@njit
def gain(label, gain_mode, gain_table):
    if gain_mode == GAIN_TABLE:
        if label >= 0.0 and label < gain_table.shape[0]:
            i = int(label)
            if i == label:
                return gain_table[i]
        return 0.0
    if gain_mode == GAIN_EXP:
        return 2.0**label - 1.0
    if gain_mode == GAIN_LINEAR_CLIP:
        return max(label, 0.0)
    return label


@njit
def err_probability(label, g, gain_mode, g_max):
    """ERR's R = (2^g - 1) / 2^g_max, g the label clipped at 0; a gain table gives 2^g - 1
    directly. Computed as 2^(g - g_max) - 2^-g_max, which never overflows (labels of 1024 and
    more under trec) and equals the quotient exactly for integer labels."""
    if gain_mode == GAIN_TABLE:
        return max(g, 0.0) * 2.0 ** (-g_max)
    return 2.0 ** (max(label, 0.0) - g_max) - 2.0 ** (-g_max)


@njit
def discount(p, discount_mode):
    """Discount of 1-based position p."""
    if discount_mode == DISCOUNT_LETOR4:
        if p <= 2:
            return 1.0
        return np.log2(float(p))
    return np.log2(p + 1.0)


@njit
def is_relevant(label, g, relevance_mode, relevance_threshold):
    if relevance_mode == RELEVANT_GAIN:
        return g > 0.0
    return label >= relevance_threshold


@njit
def value_when_empty(rule):
    """What a ratio metric (ndcg, map, auc, ...) gives on an empty query under an EMPTY_* rule:
    nan for "skip" (the query is left out of the mean), else 0 or 1."""
    if rule == EMPTY_SKIP:
        return np.nan
    if rule == EMPTY_ONE:
        return 1.0
    return 0.0


# -- one metric each: pure functions of a query's ranked arrays and counts ---------------------------
# gains, rel, errp: in ranked order, n documents; ideal: the ideal gains best first, m of them;
# discounts[p]: discount(p + 1). k is the cutoff (K_ALL: none). nrel: relevant documents of the
# query (of its judged documents when judged labels are given). empty_value: value_when_empty of
# the metric's rule; skip: the rule is EMPTY_SKIP (dcg, p, rr and err are nan then, else their
# natural value).
@njit
def dcg(gains, n, k, discounts):
    """Sum over the first min(k, n) positions of gain / discount (also the ideal DCG, given the
    ideal gains)."""
    total = 0.0
    for p in range(min(k, n)):
        total += gains[p] / discounts[p]
    return total


@njit
def ndcg(dcg_k, idcg_k, n, k, short_query, empty_value):
    if idcg_k <= 0.0:
        return empty_value
    if n < k and k != K_ALL and short_query == SHORT_ZERO:
        return 0.0
    return dcg_k / idcg_k


@njit
def dcg_metric(dcg_k, idcg_k, skip):
    """dcg@k as reported: the DCG, or nan for a query skipped as empty (ideal DCG <= 0)."""
    if skip and idcg_k <= 0.0:
        return np.nan
    return dcg_k


@njit
def precision(rel, n, k, nrel, skip, short_precision):
    if skip and nrel == 0:
        return np.nan
    if n < k and short_precision == PRECISION_SHORT_ZERO:
        return 0.0
    hits = 0
    for p in range(min(k, n)):
        if rel[p]:
            hits += 1
    return hits / k


@njit
def average_precision(rel, n, k, nrel, map_cut, empty_value):
    if nrel == 0:
        return empty_value
    hits = 0
    total = 0.0
    for p in range(min(k, n)):
        if rel[p]:
            hits += 1
            total += hits / (p + 1.0)
    return total / (nrel if map_cut == MAPCUT_R else min(nrel, k))


@njit
def r_precision(rel, n, nrel, empty_value):
    """Precision at R, the number of relevant documents (trec_eval's Rprec; 0 when R is 0 there)."""
    if nrel == 0:
        return empty_value
    hits = 0
    for p in range(min(nrel, n)):
        if rel[p]:
            hits += 1
    return hits / nrel


@njit
def reciprocal_rank(rel, n, k, nrel, skip):
    if skip and nrel == 0:
        return np.nan
    for p in range(min(k, n)):
        if rel[p]:
            return 1.0 / (p + 1.0)
    return 0.0


@njit
def err(errp, n, k, any_err, skip):
    """Expected reciprocal rank at k; any_err: some document of the query has R > 0."""
    if skip and not any_err:
        return np.nan
    v = 0.0
    stay = 1.0  # probability that the user reaches position p
    for p in range(min(k, n)):
        v += stay * errp[p] / (p + 1.0)
        stay *= 1.0 - errp[p]
    return v


@njit
def auc(auc2, npos, nneg, empty_value):
    """auc2: twice the number of correctly ordered (relevant, non-relevant) pairs, ties counting 1."""
    if npos == 0 or nneg == 0:
        return empty_value
    return auc2 / (2.0 * float(npos) * float(nneg))


# The pair counts of a query of n documents: n0 = n(n-1)/2 pairs, n1 tied in score, n2 tied in
# label, n3 tied in both, disc ordered oppositely by score and label (both strict).
@njit
def pairwise_accuracy(n0, n1, n2, n3, disc, empty_value):
    npairs = n0 - n2  # pairs with different labels
    if npairs == 0:
        return empty_value
    tied = n1 - n3  # different labels, equal scores
    conc = npairs - disc - tied
    return (2 * conc + tied) / (2.0 * float(npairs))


@njit
def kendall_tau(n0, n1, n2, n3, disc, empty_value):
    """Kendall's tau-b."""
    if n0 - n1 == 0 or n0 - n2 == 0:
        return empty_value
    conc = n0 - n2 - disc - (n1 - n3)
    return float(conc - disc) / np.sqrt(float(n0 - n1) * float(n0 - n2))


# -- a query's ranking and its per-position arrays --------------------------------------------------
@njit
def rank(scores, b, n, neg, order, sort_tmp):
    """order[:n] = the ranking of rows b..b+n-1 (offsets from b): score descending, stable, so
    ties keep row order."""
    for i in range(n):
        neg[i] = -scores[b + i]
    if n >= RADIX_MIN:  # a long query (the AUC problem's million): linear, the same permutation
        radix_order(neg, np.int64(0), n, order)
    else:
        stable_order(neg, np.int64(0), n, order, sort_tmp)


@njit
def ranked_grades(labels, b, order, n, gain_mode, gain_table, relevance_mode, relevance_threshold, gains, rel):
    """gains[:n] and rel[:n] in ranked order; returns the number of relevant ranked documents."""
    nrel = 0
    for p in range(n):
        lab = labels[b + order[p]]
        g = gain(lab, gain_mode, gain_table)
        gains[p] = g
        r = is_relevant(lab, g, relevance_mode, relevance_threshold)
        rel[p] = r
        if r:
            nrel += 1
    return nrel


@njit
def ranked_err_probabilities(labels, b, order, gains, n, gain_mode, g_max, errp):
    """errp[:n] = ERR's R of each ranked document; returns whether any is > 0."""
    any_err = False
    for p in range(n):
        errp[p] = err_probability(labels[b + order[p]], gains[p], gain_mode, g_max)
        if errp[p] > 0.0:
            any_err = True
    return any_err


@njit
def judged_grades(jlabels, jb, m, gain_mode, gain_table, relevance_mode, relevance_threshold, g):
    """g[:m] = the gains of the m judged labels from jb; returns how many are relevant."""
    nrel = 0
    for i in range(m):
        lab = jlabels[jb + i]
        g[i] = gain(lab, gain_mode, gain_table)
        if is_relevant(lab, g[i], relevance_mode, relevance_threshold):
            nrel += 1
    return nrel


@njit
def judged_any_err(jlabels, jb, m, gain_mode, gain_table, g_max):
    """Whether some judged label has ERR's R > 0."""
    for i in range(m):
        lab = jlabels[jb + i]
        if err_probability(lab, gain(lab, gain_mode, gain_table), gain_mode, g_max) > 0.0:
            return True
    return False


@njit
def ideal_gains(g, m, top, ideal, o2, sort_tmp):
    """ideal[:min(top, m)] = the largest min(top, m) of g[:m], in descending order: the gains of
    the ideal ranking down to the largest cutoff asked for (top; K_ALL for the whole list). A small
    top is selected by insertion (O(m) for a ranking close to ideal), else g is sorted. The values
    are the same either way, so the ideal DCG too."""
    if top < m and top <= SELECT_TOP:
        c = 0
        for i in range(m):
            x = g[i]
            if c < top:
                j = c
                c += 1
            elif x > ideal[c - 1]:
                j = c - 1  # the smallest kept gain drops out
            else:
                continue
            while j > 0 and ideal[j - 1] < x:
                ideal[j] = ideal[j - 1]
                j -= 1
            ideal[j] = x
        return
    stable_order(g, np.int64(0), m, o2, sort_tmp)
    for i in range(m):
        ideal[i] = g[o2[m - 1 - i]]


@njit
def score_groups(scores, b, order, rel, n, nneg):
    """Over the groups of equal scores in the ranking: (twice the correctly ordered (relevant,
    non-relevant) pairs, ties counting 1; pairs tied in score). int64."""
    auc2 = np.int64(0)
    n1 = np.int64(0)
    neg_seen = np.int64(0)
    s = 0
    while s < n:
        e = s + 1
        sv = scores[b + order[s]]
        while e < n and scores[b + order[e]] == sv:
            e += 1
        pos_g = np.int64(0)
        for p in range(s, e):
            if rel[p]:
                pos_g += 1
        neg_g = np.int64(e - s) - pos_g
        auc2 += 2 * pos_g * (nneg - neg_seen - neg_g) + pos_g * neg_g
        neg_seen += neg_g
        size = np.int64(e - s)
        n1 += size * (size - 1) // 2
        s = e
    return auc2, n1


@njit
def count_inversions(a, tmp, n):
    """Sort a[:n] ascending (stable bottom-up merge sort, tmp[:n] as scratch) and return the number
    of pairs i < j with a[i] > a[j] strictly (equal values are not inversions). int64, O(n log n)."""
    inv = np.int64(0)
    width = 1
    in_a = True  # which buffer holds the current runs
    while width < n:
        src = a if in_a else tmp
        dst = tmp if in_a else a
        lo = 0
        while lo < n:
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i = lo
            j = mid
            o = lo
            while i < mid and j < hi:
                if src[j] < src[i]:  # a strictly smaller right element passes mid - i left elements
                    dst[o] = src[j]
                    inv += mid - i
                    j += 1
                else:
                    dst[o] = src[i]
                    i += 1
                o += 1
            while i < mid:
                dst[o] = src[i]
                i += 1
                o += 1
            while j < hi:
                dst[o] = src[j]
                j += 1
                o += 1
            lo = hi
        in_a = not in_a
        width *= 2
    if not in_a:
        for i in range(n):  # a loop: numba's slice assignment compiles its broadcasting checks (~2 s)
            a[i] = tmp[i]
    return inv


@njit
def label_groups(labels, scores, b, order, n, lab2, sc2, seq, o2, sort_tmp, tmp):
    """(pairs tied in label, pairs tied in label and score, pairs ordered oppositely by score and
    label): one stable sort of the ranking by label, then a merge-sort count of the inversions of
    the scores. int64."""
    n2 = np.int64(0)
    n3 = np.int64(0)
    for i in range(n):  # the ranking reversed: scores non-decreasing
        lab2[i] = labels[b + order[n - 1 - i]]
        sc2[i] = scores[b + order[n - 1 - i]]
    stable_order(lab2, np.int64(0), n, o2, sort_tmp)  # stable: scores stay non-decreasing per label
    for i in range(n):
        seq[i] = sc2[o2[i]]
    s = 0
    while s < n:
        e = s + 1
        lv = lab2[o2[s]]
        while e < n and lab2[o2[e]] == lv:
            e += 1
        size = np.int64(e - s)
        n2 += size * (size - 1) // 2
        t = s
        while t < e:  # within a label group, equal scores are contiguous
            u = t + 1
            while u < e and seq[u] == seq[t]:
                u += 1
            size = np.int64(u - t)
            n3 += size * (size - 1) // 2
            t = u
        s = e
    return n2, n3, count_inversions(seq, tmp, n)


# -- the per-query loop --------------------------------------------------------------------------------
@njit
def metrics_range(
    codes,  # int64[M] metric codes (M_*)
    ks,  # int64[M] cutoffs (K_ALL for metrics without k)
    labels,  # float64[n]
    scores,  # float64[n], no NaN
    qptr,  # int64[Q + 1], strictly increasing from 0 to n
    has_judged,  # bool: ideal DCG, R and ERR emptiness from (jptr, jlabels) instead of the query's labels
    jptr,  # int64[Q + 1], non-decreasing from 0 to m (a dummy [0] when not has_judged)
    jlabels,  # float64[m]
    gain_mode,
    gain_table,  # float64[T]
    discount_mode,
    short_query,
    empties,  # int64[M]: each metric's EMPTY_* rule
    relevance_mode,
    relevance_threshold,
    map_cut,
    short_precision,
    err_max_grade,  # g_max of ERR
    out,  # float64[M, Q]: out[:, lo:hi] written
    lo,  # the queries lo..hi-1
    hi,
):
    """Every requested metric of queries lo..hi-1, each query ranked once; STATUS_OK or a status."""
    nm = codes.shape[0]
    need_ideal = False  # ndcg, dcg: the ideal gains
    need_err = False  # err: ERR's R per document
    need_pairs = False  # auc, pairwise-accuracy, kendall-tau: the score groups
    need_labels = False  # pairwise-accuracy, kendall-tau: the label groups and discordant pairs
    top = 0  # the ideal gains down to the largest cutoff of ndcg and dcg
    for m in range(nm):
        c = codes[m]
        if c == M_NDCG or c == M_DCG:
            need_ideal = True
            top = max(top, ks[m])
        elif c == M_ERR:
            need_err = True
        elif c == M_AUC:
            need_pairs = True
        elif c == M_PAIRWISE or c == M_TAU:
            need_pairs = True
            need_labels = True
        elif c != M_PRECISION and c != M_AP and c != M_RR and c != M_RPREC:
            return STATUS_UNKNOWN_METRIC
    maxlen = 0
    for q in range(lo, hi):
        maxlen = max(maxlen, qptr[q + 1] - qptr[q])
        if has_judged:
            maxlen = max(maxlen, jptr[q + 1] - jptr[q])
    discounts = np.empty(maxlen, dtype=np.float64)
    for p in range(maxlen):
        discounts[p] = discount(p + 1, discount_mode)
    neg = np.empty(maxlen, dtype=np.float64)
    gains = np.empty(maxlen, dtype=np.float64)  # in ranked order
    rel = np.empty(maxlen, dtype=np.bool_)  # in ranked order
    errp = np.empty(maxlen, dtype=np.float64)  # ERR's R_p in ranked order
    g = np.empty(maxlen, dtype=np.float64)  # the gains the ideal ordering sorts
    ideal = np.empty(maxlen, dtype=np.float64)  # best first, down to `top`
    lab2 = np.empty(maxlen, dtype=np.float64)  # scratch for the (label, score) order
    sc2 = np.empty(maxlen, dtype=np.float64)
    seq = np.empty(maxlen, dtype=np.float64)
    tmp = np.empty(maxlen, dtype=np.float64)
    order = np.empty(maxlen, dtype=np.int64)  # the ranking: offsets of the query's rows
    o2 = np.empty(maxlen, dtype=np.int64)
    sort_tmp = np.empty(maxlen, dtype=np.int64)
    for q in range(lo, hi):
        b = qptr[q]
        n = qptr[q + 1] - b
        rank(scores, b, n, neg, order, sort_tmp)
        nrel_ranked = ranked_grades(labels, b, order, n, gain_mode, gain_table, relevance_mode,
                                    relevance_threshold, gains, rel)
        any_err = False
        if need_err:
            any_err = ranked_err_probabilities(labels, b, order, gains, n, gain_mode, err_max_grade, errp)
        # R, ERR emptiness and the ideal ordering: from the judged labels, or the query's own
        if has_judged:
            jb = jptr[q]
            mq = jptr[q + 1] - jb
            nrel = judged_grades(jlabels, jb, mq, gain_mode, gain_table, relevance_mode, relevance_threshold, g)
            if need_err:
                any_err = judged_any_err(jlabels, jb, mq, gain_mode, gain_table, err_max_grade)
            if need_ideal:
                ideal_gains(g, mq, top, ideal, o2, sort_tmp)
        else:
            mq = n
            nrel = nrel_ranked
            if need_ideal:
                ideal_gains(gains, n, top, ideal, o2, sort_tmp)
        npos = np.int64(nrel_ranked)
        nneg = np.int64(n - nrel_ranked)
        auc2 = n1 = n2 = n3 = disc = np.int64(0)
        if need_pairs:
            auc2, n1 = score_groups(scores, b, order, rel, n, nneg)
        if need_labels:
            n2, n3, disc = label_groups(labels, scores, b, order, n, lab2, sc2, seq, o2, sort_tmp, tmp)
        n0 = np.int64(n) * np.int64(n - 1) // 2
        for m in range(nm):
            code = codes[m]
            k = ks[m]
            skip = empties[m] == EMPTY_SKIP
            empty_value = value_when_empty(empties[m])
            if code == M_NDCG:
                v = ndcg(dcg(gains, n, k, discounts), dcg(ideal, mq, k, discounts), n, k, short_query, empty_value)
            elif code == M_DCG:
                v = dcg_metric(dcg(gains, n, k, discounts), dcg(ideal, mq, k, discounts), skip)
            elif code == M_PRECISION:
                v = precision(rel, n, k, nrel, skip, short_precision)
            elif code == M_AP:
                v = average_precision(rel, n, k, nrel, map_cut, empty_value)
            elif code == M_RR:
                v = reciprocal_rank(rel, n, k, nrel, skip)
            elif code == M_RPREC:
                v = r_precision(rel, n, nrel, empty_value)
            elif code == M_ERR:
                v = err(errp, n, k, any_err, skip)
            elif code == M_AUC:
                v = auc(auc2, npos, nneg, empty_value)
            elif code == M_PAIRWISE:
                v = pairwise_accuracy(n0, n1, n2, n3, disc, empty_value)
            else:  # M_TAU
                v = kendall_tau(n0, n1, n2, n3, disc, empty_value)
            out[m, q] = v
    return STATUS_OK
