"""Naive, obviously-correct ranking metrics, written straight from the definitions.

Plain Python loops over lists, no numpy. A convention is described by plain values:
    gain:      ("table", (g0, g1, ...)) | ("exp",) | ("linear",)
    discount:  "letor4" (1 if p <= 2 else log2 p) | "log2p1" (log2(p + 1))
    short:     "zero" | "truncate"      NDCG@k of a query with fewer than k documents
    empty:     0.0 | 1.0                NDCG when ideal DCG@k is 0; AP without relevant documents
    relevant:  ("gain",) | ("label", threshold)
"""

from __future__ import annotations

import math

LETOR4 = {
    "gain": ("table", (0.0, 1.0, 3.0)),
    "discount": "letor4",
    "short": "zero",
    "empty": 0.0,
    "relevant": ("gain",),
}


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


def ranked_labels(labels, scores):
    """Labels in ranked order: score descending, ties by file order."""
    rows = sorted(range(len(labels)), key=lambda i: (-scores[i], i))
    return [labels[i] for i in rows]


def dcg_of(gains, k, conv):
    total = 0.0
    for p in range(1, k + 1):
        if p <= len(gains):
            total += gains[p - 1] / discount(p, conv)
    return total


def ndcg(labels, scores, k, conv=LETOR4):
    if len(labels) < k and conv["short"] == "zero":
        return 0.0
    gains = [gain(lab, conv) for lab in ranked_labels(labels, scores)]
    ideal = sorted(gains, reverse=True)
    best = dcg_of(ideal, k, conv)
    if best <= 0:
        return conv["empty"]
    return dcg_of(gains, k, conv) / best


def dcg(labels, scores, k, conv=LETOR4):
    return dcg_of([gain(lab, conv) for lab in ranked_labels(labels, scores)], k, conv)


def precision(labels, scores, k, conv=LETOR4):
    ranked = ranked_labels(labels, scores)
    hits = 0
    for p in range(1, k + 1):
        if p <= len(ranked) and is_relevant(ranked[p - 1], conv):
            hits += 1
    return hits / k


def average_precision(labels, scores, conv=LETOR4):
    ranked = ranked_labels(labels, scores)
    n_relevant = sum(1 for lab in ranked if is_relevant(lab, conv))
    if n_relevant == 0:
        return conv["empty"]
    total = 0.0
    for p in range(1, len(ranked) + 1):
        if is_relevant(ranked[p - 1], conv):
            total += precision(labels, scores, p, conv)
    return total / n_relevant


def per_query(metric, labels, scores, qptr, conv=LETOR4):
    """metric is ("ndcg", k), ("dcg", k), ("p", k) or ("map", None); returns a list, one value per query."""
    name, k = metric
    values = []
    for q in range(len(qptr) - 1):
        lab = [float(x) for x in labels[qptr[q] : qptr[q + 1]]]
        sco = [float(x) for x in scores[qptr[q] : qptr[q + 1]]]
        if name == "ndcg":
            values.append(ndcg(lab, sco, k, conv))
        elif name == "dcg":
            values.append(dcg(lab, sco, k, conv))
        elif name == "p":
            values.append(precision(lab, sco, k, conv))
        elif name == "map":
            values.append(average_precision(lab, sco, conv))
        else:
            raise ValueError(name)
    return values
