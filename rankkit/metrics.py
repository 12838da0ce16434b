"""Ranking metrics on (labels, scores, query offsets): NDCG@k, DCG@k, P@k, MAP.

Query q is the row slice `qptr[q]:qptr[q+1]`. Each query's documents are ranked by score,
descending, with a stable sort: exact ties keep file order (the earlier row ranks higher). Every
metric is computed per query and `evaluate` averages over all queries.

A `Convention` fixes how labels become gains, how positions are discounted, and what a query that
is too short or has nothing relevant scores. Conventions and metrics are registries
(`CONVENTIONS`, `METRICS`) of integer codes: one jitted kernel loops over the queries, sorts each
once and computes every requested metric, dispatching on those codes (never on Python functions,
which would make the kernel uncacheable). A new convention is a new `Convention` entry (plus a
new mode code if no existing one fits); a new metric is a code, a `METRICS` entry and a branch
in `_metrics_kernel`.

The `letor4` convention (the default) is that of the LETOR 4.0 evaluation script:
- gain 0/1/3 for labels 0/1/2, 0 for any other label (3, 4, negative, fractional);
- discount 1 at positions 1 and 2, log2(p) at position p >= 3;
- NDCG@k = 0 for a query with fewer than k documents, and for a query whose ideal DCG@k is 0;
- relevant means gain > 0 (label 1 or 2); P@k divides by k even when the query is shorter;
- AP = mean of P@p over the positions p of the relevant documents; 0 without relevant documents.
DCG@k is the plain sum over positions 1..min(k, n): the short-query rule applies to NDCG only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from rankkit.errors import UsageError
from rankkit.objectives._numba import njit

# -- integer codes the kernel dispatches on ------------------------------------------------------
# How a label becomes a gain.
GAIN_TABLE = 0  # gain_table[label] for an integer label in 0..len(table)-1; 0 for any other label
GAIN_EXP = 1  # 2**label - 1
GAIN_LINEAR = 2  # label itself

# Discount of 1-based position p.
DISCOUNT_LETOR4 = 0  # 1 if p <= 2 else log2(p)
DISCOUNT_LOG2P1 = 1  # log2(p + 1)

# NDCG@k of a query with fewer than k documents.
SHORT_ZERO = 0  # 0
SHORT_TRUNCATE = 1  # computed over the documents the query has

# NDCG of a query whose ideal DCG@k is 0; AP of a query without relevant documents.
EMPTY_ZERO = 0
EMPTY_ONE = 1

# Which documents are relevant (P@k, AP).
RELEVANT_GAIN = 0  # gain > 0
RELEVANT_LABEL = 1  # label >= relevance_threshold

# Metric codes.
M_NDCG = 0
M_DCG = 1
M_PRECISION = 2
M_AP = 3


@dataclass(frozen=True)
class Convention:
    """How a ranking is scored: gains, discounts, and the rules for short and empty queries."""

    name: str
    gain_mode: int
    discount_mode: int
    short_query: int
    empty_query: int
    relevance_mode: int
    gain_table: tuple[float, ...] = ()  # used by GAIN_TABLE: gain of label 0, 1, 2, ...
    relevance_threshold: float = 0.0  # used by RELEVANT_LABEL
    description: str = ""

    def __post_init__(self):
        checks = [
            (self.gain_mode in (GAIN_TABLE, GAIN_EXP, GAIN_LINEAR), "gain_mode"),
            (self.discount_mode in (DISCOUNT_LETOR4, DISCOUNT_LOG2P1), "discount_mode"),
            (self.short_query in (SHORT_ZERO, SHORT_TRUNCATE), "short_query"),
            (self.empty_query in (EMPTY_ZERO, EMPTY_ONE), "empty_query"),
            (self.relevance_mode in (RELEVANT_GAIN, RELEVANT_LABEL), "relevance_mode"),
            (self.gain_mode != GAIN_TABLE or len(self.gain_table) > 0, "gain_table"),
        ]
        for ok, what in checks:
            if not ok:
                raise ValueError(f"convention {self.name!r}: invalid {what}")

    def table(self) -> np.ndarray:
        """The gain table as the float64 array the kernel takes (one dummy entry if unused)."""
        return np.asarray(self.gain_table if self.gain_table else (0.0,), dtype=np.float64)


CONVENTIONS: dict[str, Convention] = {
    "letor4": Convention(
        name="letor4",
        gain_mode=GAIN_TABLE,
        gain_table=(0.0, 1.0, 3.0),
        discount_mode=DISCOUNT_LETOR4,
        short_query=SHORT_ZERO,
        empty_query=EMPTY_ZERO,
        relevance_mode=RELEVANT_GAIN,
        description="LETOR 4.0 script: gains 0/1/3, discount max(1, log2 p), short or empty query scores 0",
    ),
}


@dataclass(frozen=True)
class Metric:
    """A metric family: "name@k" when `with_k`, bare "name" when `without_k`."""

    code: int
    with_k: bool
    without_k: bool
    description: str


METRICS: dict[str, Metric] = {
    "ndcg": Metric(M_NDCG, True, False, "normalized discounted cumulative gain at k"),
    "dcg": Metric(M_DCG, True, False, "discounted cumulative gain at k"),
    "p": Metric(M_PRECISION, True, False, "precision at k (missing positions count as non-relevant)"),
    "map": Metric(M_AP, False, True, "mean average precision over the whole ranking"),
}

DEFAULT_METRICS = ("ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10", "map")

_K_MAX = 2**31 - 1
_METRIC_RE = re.compile(r"([a-z]+)(?:@([0-9]+))?")


def _known_metrics() -> str:
    names = []
    for name, m in METRICS.items():
        if m.with_k:
            names.append(f"{name}@k")
        if m.without_k:
            names.append(name)
    return ", ".join(names)


def parse_metric(name: str) -> tuple[str, int | None]:
    """"ndcg@10" -> ("ndcg", 10); "map" -> ("map", None). Case-insensitive; k is an integer >= 1."""
    match = _METRIC_RE.fullmatch(name.strip().lower()) if isinstance(name, str) else None
    if match is not None:
        base, k_text = match.group(1), match.group(2)
        spec = METRICS.get(base)
        k = int(k_text) if k_text is not None else None
        if spec is not None:
            if k is None and spec.without_k:
                return base, None
            if k is not None and spec.with_k and 1 <= k <= _K_MAX:
                return base, k
    raise UsageError(f"unknown metric {name!r} (known: {_known_metrics()})")


# -- boundary checks --------------------------------------------------------------------------------
def _as_float_vector(x, what: str) -> np.ndarray:
    a = np.asarray(x)
    if a.ndim != 1:
        raise UsageError(f"{what} must be a 1-D array, got {a.ndim} dimensions")
    if a.dtype.kind not in "biuf":
        raise UsageError(f"{what} must be real numbers, got dtype {a.dtype}")
    a = np.ascontiguousarray(a, dtype=np.float64)
    if np.isnan(a).any():
        raise UsageError(f"{what} contain NaN (row {int(np.flatnonzero(np.isnan(a))[0])})")
    return a


def _check_inputs(labels, scores, qptr) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    labels = _as_float_vector(labels, "labels")
    scores = _as_float_vector(scores, "scores")
    if labels.shape != scores.shape:
        raise UsageError(f"{labels.shape[0]} labels but {scores.shape[0]} scores")
    q = np.asarray(qptr)
    if q.ndim != 1 or q.shape[0] < 1:
        raise UsageError("query offsets must be a non-empty 1-D array")
    if q.dtype.kind not in "iu":
        raise UsageError(f"query offsets must be integers, got dtype {q.dtype}")
    q = np.ascontiguousarray(q, dtype=np.int64)
    n = labels.shape[0]
    if q[0] != 0 or q[-1] != n:
        raise UsageError(f"query offsets must run from 0 to {n} (the number of rows), got {q[0]} to {q[-1]}")
    if q.shape[0] > 1 and not np.all(np.diff(q) > 0):
        bad = int(np.flatnonzero(np.diff(q) <= 0)[0])
        raise UsageError(f"query offsets must be strictly increasing (query {bad} is empty or reversed)")
    return labels, scores, q


def _convention(convention: str | Convention) -> Convention:
    if isinstance(convention, Convention):
        return convention
    conv = CONVENTIONS.get(convention)
    if conv is None:
        raise UsageError(f"unknown convention {convention!r} (known: {', '.join(CONVENTIONS)})")
    return conv


# -- kernels ------------------------------------------------------------------------------------------
@njit
def _gain(label, gain_mode, gain_table):
    if gain_mode == GAIN_TABLE:
        if label >= 0.0 and label < gain_table.shape[0]:
            i = int(label)
            if i == label:
                return gain_table[i]
        return 0.0
    if gain_mode == GAIN_EXP:
        return 2.0**label - 1.0
    return label


@njit
def _discount(p, discount_mode):
    """Discount of 1-based position p."""
    if discount_mode == DISCOUNT_LETOR4:
        if p <= 2:
            return 1.0
        return np.log2(float(p))
    return np.log2(p + 1.0)


@njit
def _metrics_kernel(
    codes,  # int64[M] metric codes
    ks,  # int64[M] cutoffs (ignored by metrics without k)
    labels,  # float64[n]
    scores,  # float64[n], no NaN
    qptr,  # int64[Q + 1], strictly increasing from 0 to n
    gain_mode,
    gain_table,  # float64[T]
    discount_mode,
    short_query,
    empty_query,
    relevance_mode,
    relevance_threshold,
    out,  # float64[M, Q]
):
    """Rank each query once (stable sort on -score) and write every requested metric; 0 or status."""
    nq = qptr.shape[0] - 1
    nm = codes.shape[0]
    need_ideal = False
    for m in range(nm):
        if codes[m] == M_NDCG:
            need_ideal = True
        elif codes[m] != M_DCG and codes[m] != M_PRECISION and codes[m] != M_AP:
            return 1
    maxlen = 0
    for q in range(nq):
        maxlen = max(maxlen, qptr[q + 1] - qptr[q])
    neg = np.empty(maxlen, dtype=np.float64)
    gains = np.empty(maxlen, dtype=np.float64)  # in ranked order
    ideal = np.empty(maxlen, dtype=np.float64)  # ascending; ideal[n - 1 - p] is the p-th best gain
    rel = np.empty(maxlen, dtype=np.bool_)  # in ranked order
    for q in range(nq):
        b = qptr[q]
        n = qptr[q + 1] - b
        for i in range(n):
            neg[i] = -scores[b + i]
        order = np.argsort(neg[:n], kind="mergesort")  # stable: ties keep file order
        nrel = 0
        for p in range(n):
            lab = labels[b + order[p]]
            g = _gain(lab, gain_mode, gain_table)
            gains[p] = g
            if relevance_mode == RELEVANT_GAIN:
                r = g > 0.0
            else:
                r = lab >= relevance_threshold
            rel[p] = r
            if r:
                nrel += 1
        if need_ideal:
            ideal[:n] = gains[:n]
            ideal[:n].sort()
        for m in range(nm):
            code = codes[m]
            k = ks[m]
            kk = min(k, n)
            v = 0.0
            if code == M_NDCG:
                if n < k and short_query == SHORT_ZERO:
                    v = 0.0
                else:
                    dcg = 0.0
                    idcg = 0.0
                    for p in range(kk):
                        d = _discount(p + 1, discount_mode)
                        dcg += gains[p] / d
                        idcg += ideal[n - 1 - p] / d
                    if idcg > 0.0:
                        v = dcg / idcg
                    else:
                        v = 1.0 if empty_query == EMPTY_ONE else 0.0
            elif code == M_DCG:
                for p in range(kk):
                    v += gains[p] / _discount(p + 1, discount_mode)
            elif code == M_PRECISION:
                hits = 0
                for p in range(kk):
                    if rel[p]:
                        hits += 1
                v = hits / k
            else:  # M_AP
                if nrel == 0:
                    v = 1.0 if empty_query == EMPTY_ONE else 0.0
                else:
                    hits = 0
                    total = 0.0
                    for p in range(n):
                        if rel[p]:
                            hits += 1
                            total += hits / (p + 1.0)
                    v = total / nrel
            out[m, q] = v
    return 0


def _run(parsed: list[tuple[str, int | None]], labels, scores, qptr, convention) -> np.ndarray:
    conv = _convention(convention)
    labels, scores, qptr = _check_inputs(labels, scores, qptr)
    codes = np.array([METRICS[base].code for base, _ in parsed], dtype=np.int64)
    ks = np.array([0 if k is None else k for _, k in parsed], dtype=np.int64)
    out = np.empty((len(parsed), qptr.shape[0] - 1), dtype=np.float64)
    status = _metrics_kernel(
        codes,
        ks,
        labels,
        scores,
        qptr,
        conv.gain_mode,
        conv.table(),
        conv.discount_mode,
        conv.short_query,
        conv.empty_query,
        conv.relevance_mode,
        float(conv.relevance_threshold),
        out,
    )
    if status != 0:
        raise RuntimeError(f"metrics kernel failed with status {status}")  # a bug: codes come from METRICS
    return out


# -- public API ----------------------------------------------------------------------------------
def per_query(metric: str, labels, scores, qptr, convention: str | Convention = "letor4") -> np.ndarray:
    """float64[Q]: the metric of each query."""
    return _run([parse_metric(metric)], labels, scores, qptr, convention)[0]


def evaluate(
    labels, scores, qptr, metrics=DEFAULT_METRICS, convention: str | Convention = "letor4"
) -> dict[str, float]:
    """{metric name as given: mean over all queries}. Each query is ranked once for all metrics."""
    metrics = [metrics] if isinstance(metrics, str) else list(metrics)
    parsed = [parse_metric(m) for m in metrics]
    out = _run(parsed, labels, scores, qptr, convention)
    if out.shape[1] == 0:
        raise UsageError("no queries to evaluate")
    means = out.mean(axis=1)
    return {name: float(means[i]) for i, name in enumerate(metrics)}
