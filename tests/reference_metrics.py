"""Naive, obviously-correct ranking metrics, written straight from the definitions.

Plain Python loops over lists, no numpy; pair metrics enumerate every pair (O(n^2)). A convention
is described by plain values:
    gain:      ("table", (g0, g1, ...)) | ("exp",) | ("linear",) | ("linear_clip",)
    discount:  "letor4" (1 if p <= 2 else log2 p: the LETOR scripts) | "log2p1" (log2(p + 1): trec_eval
               since 9.0.4, RankLib, LightGBM)
    short:     "zero" | "truncate"      NDCG@k of a query with fewer than k documents
    empty:     0.0 | 1.0 | "skip"       value of a ratio metric of an empty query (see below); "skip"
                                        makes every metric of an empty query NaN
    relevant:  ("gain",) | ("label", threshold)
    err_max:   g_max of ERR, or None for max(2, largest label of the file and the judged labels)
    map_cut:   "min" (AP@k divided by min(R, k)) | "R" (divided by R)
A query is "empty" for ndcg/dcg when the ideal DCG@k is <= 0; for map/p/rr when nothing is
relevant; for err when no document has a positive ERR probability; for auc when there is no
relevant or no non-relevant document; for pairwise accuracy when no two labels differ; for
kendall tau when all scores or all labels are equal. Under 0 or 1 only the ratio metrics (ndcg,
map, auc, pairwise, tau) take that value; dcg, p, rr and err keep their plain value.

`judged` is None or the list of the labels of every judged document of the query: then the ideal
DCG, the number of relevant documents and ERR emptiness come from it. `tiebreak` is None or a
list of integers: among equal scores the larger value ranks first, then file order.
"""

from __future__ import annotations

import math
from fractions import Fraction

NAN = math.nan

LETOR4 = {
    "gain": ("table", (0.0, 1.0, 3.0)),
    "discount": "letor4",
    "short": "zero",
    "empty": 0.0,
    "relevant": ("gain",),
    "err_max": 2.0,
    "map_cut": "min",
}

CONVENTIONS = {
    "letor4": LETOR4,
    "letor3": {**LETOR4, "short_p": "zero"},  # Eval-Score-3.0.pl: P@k = 0 when the query is shorter than k
    "mslr": {
        "gain": ("table", (0.0, 1.0, 3.0, 7.0, 15.0)),
        "discount": "letor4",
        "short": "zero",
        "empty": 0.0,
        "relevant": ("label", 2.0),
        "err_max": 4.0,
        "map_cut": "min",
    },
    "trec": {
        "gain": ("linear_clip",),
        "discount": "log2p1",
        "short": "truncate",
        "empty": 0.0,
        "relevant": ("label", 1.0),
        "err_max": None,
        "map_cut": "R",
    },
    "exp": {
        "gain": ("exp",),
        "discount": "log2p1",
        "short": "truncate",
        "empty": 1.0,
        "relevant": ("label", 1.0),
        "err_max": None,
        "map_cut": "min",
    },
}


def with_empty(conv, empty):
    """conv with its empty-query rule replaced: empty is "0", "1" or "skip" (set explicitly, so it
    also applies to auc, pairwise-accuracy and kendall-tau)."""
    return {**conv, "empty": {"0": 0.0, "1": 1.0, "skip": "skip"}[empty], "explicit_empty": True}


def undefined_pair_metric(conv):
    """auc, pairwise-accuracy, kendall-tau of a query where they are undefined: skipped, unless
    the empty-query rule was set explicitly."""
    return empty_ratio(conv) if conv.get("explicit_empty") else NAN


def gain(label, conv):
    mode = conv["gain"][0]
    if mode == "table":
        table = conv["gain"][1]
        for i, g in enumerate(table):
            if label == i:
                return g
        return 0.0
    if mode == "exp":
        return 2.0**label - 1.0
    if mode == "linear_clip":
        return float(label) if label > 0 else 0.0
    return float(label)


def discount(p, conv):
    """p is the 1-based position."""
    if conv["discount"] == "letor4":
        return 1.0 if p <= 2 else math.log2(p)
    return math.log2(p + 1)


def is_relevant(label, conv):
    if conv["relevant"][0] == "gain":
        return gain(label, conv) > 0
    return label >= conv["relevant"][1]


def err_probability(label, conv, g_max):
    """(2^g - 1) / 2^g_max, g the label clipped at 0; a gain table lists 2^g - 1 itself."""
    if conv["gain"][0] == "table":
        numerator = max(gain(label, conv), 0.0)
    else:
        g = label if label > 0 else 0.0
        if float(g).is_integer() and float(g_max).is_integer():  # exact, whatever the size (label 5000)
            return float(Fraction(2 ** int(g) - 1, 2 ** int(g_max)))
        numerator = 2.0**g - 1.0
    return numerator / 2.0**g_max


def skipping(conv):
    return conv.get("empty") == "skip"


def empty_ratio(conv):
    """The value of a ratio metric (0/0) of an empty query."""
    return NAN if skipping(conv) else conv["empty"]


def ranked_labels(labels, scores, tiebreak=None):
    """Labels in ranked order: score descending, then tiebreak descending, then file order."""
    tb = tiebreak if tiebreak is not None else [0] * len(labels)
    rows = sorted(range(len(labels)), key=lambda i: (-scores[i], -tb[i], i))
    return [labels[i] for i in rows]


def pool_of(labels, judged):
    """The labels that define the ideal ranking and R: the judged ones if given."""
    return labels if judged is None else judged


def dcg_of(gains, k, conv):
    total = 0.0
    for p in range(1, k + 1):
        if p <= len(gains):
            total += gains[p - 1] / discount(p, conv)
    return total


def ideal_dcg(labels, k, conv, judged=None):
    ideal = sorted([gain(lab, conv) for lab in pool_of(labels, judged)], reverse=True)
    return dcg_of(ideal, k, conv)


def ndcg(labels, scores, k, conv=LETOR4, tiebreak=None, judged=None):
    """NDCG@k; k None: the whole list (every ranked document against every label of the pool, no
    short-query rule)."""
    if k is None:
        k_all = max(len(labels), len(pool_of(labels, judged)))
        best = ideal_dcg(labels, k_all, conv, judged)
        if best <= 0:
            return empty_ratio(conv)
        gains = [gain(lab, conv) for lab in ranked_labels(labels, scores, tiebreak)]
        return dcg_of(gains, k_all, conv) / best
    best = ideal_dcg(labels, k, conv, judged)
    if best <= 0:
        return empty_ratio(conv)
    if len(labels) < k and conv["short"] == "zero":
        return 0.0
    gains = [gain(lab, conv) for lab in ranked_labels(labels, scores, tiebreak)]
    return dcg_of(gains, k, conv) / best


def dcg(labels, scores, k, conv=LETOR4, tiebreak=None, judged=None):
    if skipping(conv) and ideal_dcg(labels, k, conv, judged) <= 0:
        return NAN
    return dcg_of([gain(lab, conv) for lab in ranked_labels(labels, scores, tiebreak)], k, conv)


def n_relevant(labels, conv, judged=None):
    return sum(1 for lab in pool_of(labels, judged) if is_relevant(lab, conv))


def precision(labels, scores, k, conv=LETOR4, tiebreak=None, judged=None):
    if skipping(conv) and n_relevant(labels, conv, judged) == 0:
        return NAN
    ranked = ranked_labels(labels, scores, tiebreak)
    if conv.get("short_p") == "zero" and len(ranked) < k:
        return 0.0
    hits = 0
    for p in range(1, k + 1):
        if p <= len(ranked) and is_relevant(ranked[p - 1], conv):
            hits += 1
    return hits / k


def average_precision(labels, scores, k=None, conv=LETOR4, tiebreak=None, judged=None):
    """AP over the top k (k None: the whole ranking)."""
    ranked = ranked_labels(labels, scores, tiebreak)
    r = n_relevant(labels, conv, judged)
    if r == 0:
        return empty_ratio(conv)
    last = len(ranked) if k is None else min(k, len(ranked))
    total = 0.0
    for p in range(1, last + 1):
        if is_relevant(ranked[p - 1], conv):
            hits = sum(1 for lab in ranked[:p] if is_relevant(lab, conv))
            total += hits / p
    if k is None or conv.get("map_cut", "min") == "R":
        return total / r
    return total / min(r, k)


def r_precision(labels, scores, conv=LETOR4, tiebreak=None, judged=None):
    """Precision at R = the number of relevant documents (trec_eval's Rprec)."""
    r = n_relevant(labels, conv, judged)
    if r == 0:
        return empty_ratio(conv)
    ranked = ranked_labels(labels, scores, tiebreak)
    return sum(1 for lab in ranked[:r] if is_relevant(lab, conv)) / r


def reciprocal_rank(labels, scores, k=None, conv=LETOR4, tiebreak=None, judged=None):
    if skipping(conv) and n_relevant(labels, conv, judged) == 0:
        return NAN
    ranked = ranked_labels(labels, scores, tiebreak)
    for p, lab in enumerate(ranked, start=1):
        if k is not None and p > k:
            break
        if is_relevant(lab, conv):
            return 1.0 / p
    return 0.0


def err(labels, scores, k, conv=LETOR4, tiebreak=None, judged=None, g_max=2.0):
    if skipping(conv) and not any(err_probability(lab, conv, g_max) > 0 for lab in pool_of(labels, judged)):
        return NAN
    ranked = ranked_labels(labels, scores, tiebreak)
    total = 0.0
    for r in range(1, min(k, len(ranked)) + 1):
        reach = 1.0
        for i in range(1, r):
            reach *= 1.0 - err_probability(ranked[i - 1], conv, g_max)
        total += reach * err_probability(ranked[r - 1], conv, g_max) / r
    return total


def auc(labels, scores, conv=LETOR4):
    pos = [s for lab, s in zip(labels, scores) if is_relevant(lab, conv)]
    neg = [s for lab, s in zip(labels, scores) if not is_relevant(lab, conv)]
    if not pos or not neg:
        return undefined_pair_metric(conv)
    good = 0.0
    for sp in pos:
        for sn in neg:
            if sp > sn:
                good += 1.0
            elif sp == sn:
                good += 0.5
    return good / (len(pos) * len(neg))


def pairwise_accuracy(labels, scores, conv=LETOR4):
    good = 0.0
    pairs = 0
    for i in range(len(labels)):
        for j in range(i + 1, len(labels)):
            if labels[i] == labels[j]:
                continue
            pairs += 1
            hi, lo = (i, j) if labels[i] > labels[j] else (j, i)
            if scores[hi] > scores[lo]:
                good += 1.0
            elif scores[hi] == scores[lo]:
                good += 0.5
    if pairs == 0:
        return undefined_pair_metric(conv)
    return good / pairs


def kendall_tau_b(labels, scores, conv=LETOR4):
    concordant = discordant = 0
    untied_scores = untied_labels = 0
    for i in range(len(labels)):
        for j in range(i + 1, len(labels)):
            ds = scores[i] - scores[j]
            dl = labels[i] - labels[j]
            untied_scores += ds != 0
            untied_labels += dl != 0
            if ds * dl > 0:
                concordant += 1
            elif ds * dl < 0:
                discordant += 1
    if untied_scores == 0 or untied_labels == 0:
        return undefined_pair_metric(conv)
    return (concordant - discordant) / math.sqrt(untied_scores * untied_labels)


def file_g_max(labels, judged_labels, conv):
    if conv.get("err_max") is not None:
        return conv["err_max"]
    return max([2.0] + [float(x) for x in labels] + [float(x) for x in judged_labels])


def per_query(metric, labels, scores, qptr, conv=LETOR4, tiebreak=None, judged=None):
    """metric is (name, k) as parse_metric returns it; returns a list, one value per query (NaN = skipped).

    judged is None or (jptr, jlabels) as lists; tiebreak None or a list, one value per row."""
    name, k = metric
    g_max = file_g_max(labels, judged[1] if judged is not None else [], conv)
    values = []
    for q in range(len(qptr) - 1):
        a, b = qptr[q], qptr[q + 1]
        lab = [float(x) for x in labels[a:b]]
        sco = [float(x) for x in scores[a:b]]
        tb = None if tiebreak is None else list(tiebreak[a:b])
        jud = None if judged is None else [float(x) for x in judged[1][judged[0][q] : judged[0][q + 1]]]
        if name == "ndcg":
            values.append(ndcg(lab, sco, k, conv, tb, jud))
        elif name == "dcg":
            values.append(dcg(lab, sco, k, conv, tb, jud))
        elif name == "p":
            values.append(precision(lab, sco, k, conv, tb, jud))
        elif name == "map":
            values.append(average_precision(lab, sco, k, conv, tb, jud))
        elif name in ("mrr", "rr"):
            values.append(reciprocal_rank(lab, sco, k, conv, tb, jud))
        elif name == "err":
            values.append(err(lab, sco, k, conv, tb, jud, g_max))
        elif name == "rprec":
            values.append(r_precision(lab, sco, conv, tb, jud))
        elif name == "auc":
            values.append(auc(lab, sco, conv))
        elif name == "pairwise-accuracy":
            values.append(pairwise_accuracy(lab, sco, conv))
        elif name == "kendall-tau":
            values.append(kendall_tau_b(lab, sco, conv))
        else:
            raise ValueError(name)
    return values
