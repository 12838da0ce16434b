"""Ranking metrics on (labels, scores, query offsets): NDCG, DCG, MAP, P, RR, ERR, AUC, pairwise
accuracy and Kendall's tau.

Query q is the row slice `qptr[q]:qptr[q+1]`. Each query's documents are ranked by score,
descending, with a stable sort: exact ties keep file order (the earlier row ranks higher), or,
with `tiebreak`, the row with the larger tiebreak value ranks first (file order among equal
tiebreaks). Every metric is computed per query; `evaluate` averages over the queries that are
not skipped.

Metrics (`METRIC_NAMES`), for a query of n ranked documents, position p = 1..n:
- ndcg@k, dcg@k: DCG@k = sum over p <= min(k, n) of gain(p) / discount(p); NDCG@k = DCG@k / IDCG@k,
  IDCG@k the DCG@k of the best ordering of the query's labels (of the judged labels with `judged`).
- ndcg (no k): the whole list, trec_eval's `ndcg`: DCG over all n ranked documents divided by the
  DCG of the best ordering of all the query's labels (all judged labels with `judged`). The
  short-query rule does not apply (there is no k to fall short of).
- p@k: relevant documents in the top k divided by k (missing positions count as non-relevant).
- map, map@k: AP@k = sum over the relevant documents at p <= k of P@p, divided by R (map, and
  map@k in conventions that say so) or by min(R, k); R is the number of relevant documents of the
  query (of the judged documents with `judged`).
- mrr, rr@k: 1/p of the first relevant document (in the top k); 0 if there is none.
- err@k (Chapelle et al. 2009): sum over p <= min(k, n) of (1/p) R_p prod_{i<p} (1 - R_i), with
  R = (2^g - 1) / 2^g_max and g the graded label clipped at 0. Conventions with a gain table read
  2^g - 1 from it (letor4: 0/1/3, labels other than 0/1/2 give 0). g_max is fixed by the
  convention (letor: 2, mslr: 4) or, in trec and exp, max(2, largest label in the labels and
  judged labels passed in): ERR@k of a query then depends on the other queries of the file.
- auc: among (relevant, non-relevant) pairs of ranked documents, the fraction with the relevant
  document scored higher; score ties count 1/2. O(n log n) from the score groups.
- pairwise-accuracy: among pairs with different labels (raw labels), the fraction ordered like
  the labels by score; score ties count 1/2.
- kendall-tau: Kendall's tau-b between scores and raw labels (scipy.stats.kendalltau's default):
  (C - D) / sqrt((n0 - n_score_ties)(n0 - n_label_ties)), n0 = n(n-1)/2. O(n log n): one sort by
  (label, score) and a merge-sort count of the discordant pairs.
Pair counts are int64: one query holds up to ~n^2/2 pairs.

Empty queries. A query is *empty* for a metric when it has nothing to find:
    ndcg, dcg                 IDCG@k <= 0
    map, p, mrr, rr           no relevant document (R = 0)
    err                       no document with R_i > 0 (all gains <= 0)
    auc                       no relevant or no non-relevant ranked document
    pairwise-accuracy         no pair of ranked documents with different labels
    kendall-tau               tau-b undefined: every score equal or every label equal (or n < 2)
The `empty_query` rule decides: "skip" leaves the query out (NaN per query, not averaged in);
"0" and "1" give the ratio metrics that are 0/0 there (ndcg, map, auc, pairwise-accuracy,
kendall-tau) the value 0 or 1, while dcg, p, rr and err keep their natural value (0 when nothing
is relevant). Emptiness is checked before the short-query rule.

Conventions (`CONVENTIONS`, `describe(name)`) fix gains, discount, relevance, the short-query and
empty-query rules, g_max for ERR, and the map@k denominator:

    name    gain               discount           relevant      short NDCG  empty  ERR g_max  map@k divides by
    letor4  0/1/3 (labels 0-2) 1 if p<=2, log2 p  gain > 0      0           0      2          min(R,k)
    letor3  as letor4, but P@k = 0 for a query with fewer than k documents (Eval-Score-3.0.pl)
    mslr    0/1/3/7/15 (0-4)   1 if p<=2, log2 p  label >= 2    0           0      4          min(R,k)
    trec    max(label, 0)      log2(p + 1)        label >= 1    truncate    0      data       R
    exp     2^label - 1        log2(p + 1)        label >= 1    truncate    1      data       min(R,k)

- trec is the default (config.DEFAULT_CONVENTION): the numbers trec_eval, pytrec_eval, ranx and
  scikit-learn's ndcg_score give. The others are there to reproduce published tables, by name.
- letor4 is the official LETOR 4.0 script: NDCG@k = 0 for a query with fewer than k
  documents and for a query without relevant documents, both averaged in; P@k divides by k.
- trec follows trec_eval as it is today (9.0.4 and later, 10.0, and the pytrec_eval binding:
  ndcg_cut, ndcg, map, map_cut, P, recip_rank): the gain is the qrels label (negative labels 0);
  the discount is `log2(i + 2)` for the 0-based index i, i.e. log2(p + 1) for position p, in the
  run's DCG and in the ideal DCG alike (trec_eval 9.0a3 to 9.0.3 divided by log2(p) with p = 1
  undiscounted, LETOR's discount; that old trec_eval is not reproduced); NDCG@k over the documents
  retrieved; AP divided by the number of relevant judged documents; ties broken by docid
  descending when the caller passes `tiebreak`. A judged query without relevant documents scores
  0 and is averaged in, as trec_eval does (it skips only queries absent from the qrels, which the
  caller leaves out); `empty_query="skip"` leaves such queries out instead.
- exp is the RankLib / LightGBM / XGBoost style. Its default empty rule is LightGBM's (and
  XGBoost's without the "-" suffix): NDCG and MAP of a query without positive label are 1.

Here names are parsed and inputs checked; the numbers are computed in `rankkit.metrics.kernels`.
A `Convention` and a metric become integer codes there: one jitted loop ranks each query once
and calls a small function per requested metric (`kernels.ndcg`, `kernels.average_precision`,
...), dispatching on those codes (never on Python functions, which would make the kernels
uncacheable). The queries are split into contiguous ranges over `rankkit.threads` (--threads);
each query is computed on its own, so the results are the same for any number of threads. A new
convention is a new `Convention` entry (plus a new mode code if no existing one fits); a new
metric is a code, a helper and a branch in `kernels.metrics_range`, and a `METRICS` entry.
ties.py holds the order of tied scores (trec_eval's docid tiebreak), a convention of grading.

Layer: kernels and data (tests/test_architecture.py's LAYERS): the package imports only the
compiler, sorting, text and the base (errors, config, threads); io/, the evaluation use case and
the faces import it.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass

import numpy as np

from rankkit import threads
from rankkit.config import DEFAULT_CONVENTION, EMPTY_QUERY_CHOICES
from rankkit.errors import UsageError
from rankkit.metrics.kernels import (
    DISCOUNT_LETOR4,
    DISCOUNT_LOG2P1,
    EMPTY_ONE,
    EMPTY_SKIP,
    EMPTY_ZERO,
    GAIN_EXP,
    GAIN_LINEAR,
    GAIN_LINEAR_CLIP,
    GAIN_TABLE,
    K_ALL,
    M_AP,
    M_AUC,
    M_DCG,
    M_ERR,
    M_NDCG,
    M_PAIRWISE,
    M_PRECISION,
    M_RPREC,
    M_RR,
    M_TAU,
    MAPCUT_MIN_RK,
    MAPCUT_R,
    PRECISION_HOLES,
    PRECISION_SHORT_ZERO,
    RELEVANT_GAIN,
    RELEVANT_LABEL,
    SHORT_TRUNCATE,
    SHORT_ZERO,
    STATUS_OK,
    metrics_range,
)

@dataclass(frozen=True)
class Convention:
    """How a ranking is scored: gains, discounts, relevance, and the rules for short and empty queries."""

    name: str
    gain_mode: int
    discount_mode: int
    short_query: int
    empty_query: int
    relevance_mode: int
    gain_table: tuple[float, ...] = ()  # used by GAIN_TABLE: gain of label 0, 1, 2, ...
    relevance_threshold: float = 0.0  # used by RELEVANT_LABEL
    description: str = ""
    err_max_grade: float | None = None  # g_max of ERR; None: max(2, largest label passed in)
    map_cut: int = MAPCUT_MIN_RK
    short_precision: int = 0  # PRECISION_HOLES or PRECISION_SHORT_ZERO

    def __post_init__(self):
        g = self.err_max_grade
        checks = [
            (self.gain_mode in (GAIN_TABLE, GAIN_EXP, GAIN_LINEAR, GAIN_LINEAR_CLIP), "gain_mode"),
            (self.discount_mode in (DISCOUNT_LETOR4, DISCOUNT_LOG2P1), "discount_mode"),
            (self.short_query in (SHORT_ZERO, SHORT_TRUNCATE), "short_query"),
            (self.empty_query in (EMPTY_ZERO, EMPTY_ONE, EMPTY_SKIP), "empty_query"),
            (self.relevance_mode in (RELEVANT_GAIN, RELEVANT_LABEL), "relevance_mode"),
            (self.gain_mode != GAIN_TABLE or len(self.gain_table) > 0, "gain_table"),
            (g is None or (isinstance(g, (int, float)) and math.isfinite(g) and g > 0), "err_max_grade"),
            (self.map_cut in (MAPCUT_MIN_RK, MAPCUT_R), "map_cut"),
            (self.short_precision in (PRECISION_HOLES, PRECISION_SHORT_ZERO), "short_precision"),
        ]
        for ok, what in checks:
            if not ok:
                raise ValueError(f"convention {self.name!r}: invalid {what}")

    def table(self) -> np.ndarray:
        """The gain table as the float64 array the kernel takes (one dummy entry if unused)."""
        return np.asarray(self.gain_table if self.gain_table else (0.0,), dtype=np.float64)


_LETOR_RULES = (
    "positions 1-2 undiscounted, p >= 3 divided by log2(p); NDCG@k = 0 for a query with fewer than "
    "k documents; a query without relevant documents scores 0 and is averaged in; P@k divides by k; "
    "ties in file order"
)

_LETOR4 = Convention(
    name="letor4",
    gain_mode=GAIN_TABLE,
    gain_table=(0.0, 1.0, 3.0),
    discount_mode=DISCOUNT_LETOR4,
    short_query=SHORT_ZERO,
    empty_query=EMPTY_ZERO,
    relevance_mode=RELEVANT_GAIN,
    err_max_grade=2.0,
    description="LETOR 4.0 script: gains 0/1/3 for labels 0/1/2 (other labels 0), relevant = label 1 or 2, "
    + _LETOR_RULES,
)

CONVENTIONS: dict[str, Convention] = {
    "letor4": _LETOR4,
    # the LETOR 3.0 script computes the same numbers (it differs only in how it parses its input)
    # The LETOR 3.0 script (Eval-Score-3.0.pl) computes NDCG and MAP as 4.0 does, but its P@k loop
    # stops at the query's length, so a query with fewer than k documents adds 0 to P@k (4.0, from
    # 2009-04-24, counts the missing positions as non-relevant instead).
    "letor3": dataclasses.replace(
        _LETOR4,
        name="letor3",
        short_precision=PRECISION_SHORT_ZERO,
        description="LETOR 3.0 script (Eval-Score-3.0.pl): as LETOR 4.0 (gains 0/1/3 for labels 0/1/2, "
        "relevant = label 1 or 2, positions 1-2 undiscounted, p >= 3 divided by log2(p), NDCG@k = 0 "
        "for a query with fewer than k documents, a query without relevant documents scores 0), except "
        "P@k = 0 for a query with fewer than k documents; ties in file order",
    ),
    "mslr": Convention(
        name="mslr",
        gain_mode=GAIN_TABLE,
        gain_table=(0.0, 1.0, 3.0, 7.0, 15.0),
        discount_mode=DISCOUNT_LETOR4,
        short_query=SHORT_ZERO,
        empty_query=EMPTY_ZERO,
        relevance_mode=RELEVANT_LABEL,
        relevance_threshold=2.0,
        err_max_grade=4.0,
        description="MSLR-WEB (LETOR script, 5 grades): gains 2^l - 1 = 0/1/3/7/15 for labels 0..4 "
        "(other labels 0), relevant = label >= 2, " + _LETOR_RULES,
    ),
    "trec": Convention(
        name="trec",
        gain_mode=GAIN_LINEAR_CLIP,
        discount_mode=DISCOUNT_LOG2P1,
        short_query=SHORT_TRUNCATE,
        empty_query=EMPTY_ZERO,
        relevance_mode=RELEVANT_LABEL,
        relevance_threshold=1.0,
        map_cut=MAPCUT_R,
        description="trec_eval >= 9.0.4 and pytrec_eval (ndcg_cut, ndcg, map, map_cut, P, recip_rank): "
        "gain = label (negative labels 0), rank r divided by log2(r + 1), relevant = label >= 1, NDCG@k "
        "over the documents the query has, AP divided by the number of relevant (judged) documents, a judged "
        "query without relevant documents scores 0 and is averaged in (trec_eval skips only queries "
        "absent from the qrels), ties by docid descending when docids are given",
    ),
    "exp": Convention(
        name="exp",
        gain_mode=GAIN_EXP,
        discount_mode=DISCOUNT_LOG2P1,
        short_query=SHORT_TRUNCATE,
        empty_query=EMPTY_ONE,
        relevance_mode=RELEVANT_LABEL,
        relevance_threshold=1.0,
        description="RankLib/LightGBM/XGBoost style: gain 2^label - 1, position p divided by log2(p + 1), "
        "relevant = label >= 1, NDCG@k over the documents the query has, a query with ideal DCG 0 "
        "(no positive label) has NDCG and AP 1 (LightGBM's default), ties in file order",
    ),
}

_EMPTY_CODES = {"0": EMPTY_ZERO, "1": EMPTY_ONE, "skip": EMPTY_SKIP}


# one line each: whose numbers, and the three rules that set a convention apart (gains, discount,
# and the short or empty query); describe(name) is the whole text
_SUMMARIES = {
    "letor4": "LETOR 4.0 script: gains 0/1/3 for labels 0/1/2, positions 1-2 undiscounted, "
              "NDCG@k = 0 for a query shorter than k",
    "letor3": "LETOR 3.0 script: gains 0/1/3 for labels 0/1/2, positions 1-2 undiscounted, "
              "NDCG@k and P@k = 0 for a query shorter than k",
    "mslr": "MSLR-WEB script: gains 0/1/3/7/15 for labels 0..4, positions 1-2 undiscounted, "
            "NDCG@k = 0 for a query shorter than k",
    "trec": "trec_eval: gain = label, rank r divided by log2(r + 1), "
            "a query without relevant documents scores 0",
    "exp": "RankLib/LightGBM: gain 2^label - 1, rank r divided by log2(r + 1), "
           "a query without relevant documents scores 1",
}


def describe(convention: str | Convention, short: bool = False) -> str:
    """The human description of a convention: every rule (results.json, -v, JSON output), or with
    `short` one line of its three defining rules (the first line of a table a person reads)."""
    conv = _convention(convention)
    if short and conv.name in _SUMMARIES and _convention(conv.name) == conv:
        return _SUMMARIES[conv.name]
    return conv.description or conv.name


@dataclass(frozen=True)
class Metric:
    """A metric family: "name@k" when `with_k`, bare "name" when `without_k`."""

    code: int
    with_k: bool
    without_k: bool
    description: str


METRICS: dict[str, Metric] = {
    "ndcg": Metric(M_NDCG, True, True, "normalized discounted cumulative gain at k, or of the whole list"),
    "dcg": Metric(M_DCG, True, False, "discounted cumulative gain at k"),
    "map": Metric(M_AP, True, True, "(mean) average precision, over the whole ranking or the top k"),
    "p": Metric(M_PRECISION, True, False, "precision at k (missing positions count as non-relevant)"),
    "mrr": Metric(M_RR, False, True, "(mean) reciprocal rank of the first relevant document"),
    "rr": Metric(M_RR, True, False, "reciprocal rank of the first relevant document in the top k, else 0"),
    "err": Metric(M_ERR, True, False, "expected reciprocal rank at k (Chapelle et al. 2009)"),
    "rprec": Metric(M_RPREC, False, True, "R-precision: precision at R, the query's number of relevant documents "
                    "(trec_eval's Rprec)"),
    "auc": Metric(M_AUC, False, True, "per-query AUC of relevant vs non-relevant, score ties 1/2"),
    "pairwise-accuracy": Metric(
        M_PAIRWISE, False, True, "fraction of pairs with different labels ordered correctly, score ties 1/2"
    ),
    "kendall-tau": Metric(M_TAU, False, True, "Kendall's tau-b between scores and labels"),
}


def _metric_names() -> tuple[str, ...]:
    names = []
    for name, m in METRICS.items():
        if m.without_k:
            names.append(name)
        if m.with_k:
            names.append(f"{name}@k")
    return tuple(names)


METRIC_NAMES: tuple[str, ...] = _metric_names()  # for help texts: "ndcg@k", ..., "kendall-tau"

DEFAULT_METRICS = ("ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10", "map")

_K_MAX = 2**31 - 1
_METRIC_RE = re.compile(r"([a-z]+(?:-[a-z]+)*)(?:@([0-9]+))?")


# trec_eval's measure names (`trec_eval -m ndcg_cut.10`, its output's `ndcg_cut_10`): the same values
# as rankkit's names under --convention trec (tests/test_habits.py checks them against pytrec_eval)
TREC_EVAL_NAMES = {"ndcg_cut": "ndcg", "p": "p", "map_cut": "map", "ndcg": "ndcg", "map": "map",
                   "recip_rank": "mrr"}
TREC_EVAL_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)  # `-m P` alone: trec_eval's default cutoffs
TREC_EVAL_MISSING = ("bpref", "recall", "success", "num_rel", "num_ret", "num_rel_ret", "num_q",
                     "iprec_at_recall", "infap", "gm_map", "set_p", "set_f", "set_recall", "set_map", "rndcg",
                     "utility", "11pt_avg", "all_trec", "official")
_TREC_RE = re.compile(r"([a-z_]+?)(?:[._]([0-9]+))?")


def expand_metric_names(names) -> tuple[str, ...]:
    """trec_eval's lists, as `trec_eval -m` takes them: "P.5,10" -> "P.5", "P.10"; a bare "P",
    "ndcg_cut" or "map_cut" -> its default cutoffs (5 ... 1000). Every other name is kept as given."""
    out = []
    for name in names:
        text = name.strip() if isinstance(name, str) else name
        if not isinstance(text, str):
            out.append(name)
            continue
        base, dot, cuts = text.partition(".")
        if base.lower() in ("p", "ndcg_cut", "map_cut") and (not dot or "," in cuts):
            cut_list = cuts.split(",") if dot else [str(k) for k in TREC_EVAL_CUTOFFS]
            out.extend(f"{base}.{k.strip()}" for k in cut_list)
        else:
            out.append(name)
    return tuple(out)


def parse_metric(name: str) -> tuple[str, int | None]:
    """"ndcg@10" -> ("ndcg", 10); "map" -> ("map", None). Case-insensitive; k is an integer >= 1.
    trec_eval's names are rankkit's under another name: "ndcg_cut.10" (or its output's ndcg_cut_10)
    -> ("ndcg", 10), "P.10" -> ("p", 10), "map_cut.10" -> ("map", 10), "recip_rank" -> ("mrr", None)."""
    text = name.strip().lower() if isinstance(name, str) else ""
    match = _METRIC_RE.fullmatch(text)
    base = match.group(1) if match is not None else None
    trec = _TREC_RE.fullmatch(text)
    if trec is not None and trec.group(1) in TREC_EVAL_NAMES and base not in METRICS:
        match, base = trec, TREC_EVAL_NAMES[trec.group(1)]
        if trec.group(1) in ("ndcg_cut", "map_cut") and trec.group(2) is None:
            raise UsageError(f"metric {name!r} needs a cutoff: {name}.10")
    if match is not None and base in METRICS:
        spec = METRICS[base]
        k = int(match.group(2)) if match.group(2) is not None else None
        if k is None and spec.without_k:
            return base, None
        if k is not None and spec.with_k and 1 <= k <= _K_MAX:
            return base, k
        if k is not None and spec.with_k:
            raise UsageError(f"metric {name!r}: k must be >= 1" if k < 1 else f"metric {name!r}: k must be at most {_K_MAX}")
        if k is None:
            raise UsageError(f"metric {name!r} needs a cutoff k: {base}@10")
        raise UsageError(f"metric {name!r} takes no cutoff k: {base}")
    if "," in text:
        raise UsageError(f"metric {name!r} names several: give each its own -m ({', '.join(expand_metric_names([name]))})")
    head = re.sub(r"[._][0-9]+$", "", text)
    if head in TREC_EVAL_MISSING:
        raise UsageError(f"trec_eval's measure {name!r} has no counterpart in rankkit (known: {', '.join(METRIC_NAMES)}; "
                         "trec_eval's ndcg_cut.K, P.K, map_cut.K, map, ndcg, recip_rank, Rprec)")
    raise UsageError(f"unknown metric {name!r} (known: {', '.join(METRIC_NAMES)}; trec_eval's ndcg_cut.K, P.K, "
                     "map_cut.K, map, ndcg, recip_rank, Rprec)")


# -- boundary checks --------------------------------------------------------------------------------
def _as_float_vector(x, what: str) -> np.ndarray:
    a = np.asarray(x)
    if a.ndim != 1:
        raise UsageError(f"{what} must be a 1-D array, got {a.ndim} dimensions")
    if a.dtype.kind not in "biuf":
        raise UsageError(f"{what} must be real numbers, got dtype {a.dtype}")
    # contiguous and writeable (a read-only array, e.g. a pandas Series' values, is copied): the
    # kernel types the ahead-of-time build holds, so such input does not load numba's JIT
    a = np.require(a, dtype=np.float64, requirements=["C", "W"])
    if np.isnan(a).any():
        raise UsageError(f"{what} contain NaN (row {int(np.flatnonzero(np.isnan(a))[0])})")
    return a


def _as_int_vector(x, what: str) -> np.ndarray:
    q = np.asarray(x)
    if q.ndim != 1 or q.shape[0] < 1:
        raise UsageError(f"{what} must be a non-empty 1-D array")
    if q.dtype.kind not in "iu":
        raise UsageError(f"{what} must be integers, got dtype {q.dtype}")
    if q.dtype.kind == "u" and q.shape[0] and q.max() > np.iinfo(np.int64).max:
        raise UsageError(f"{what} exceed the int64 range")
    return np.require(q, dtype=np.int64, requirements=["C", "W"])  # as _as_float_vector


def _check_inputs(labels, scores, qptr) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    labels = _as_float_vector(labels, "labels")
    scores = _as_float_vector(scores, "scores")
    if labels.shape != scores.shape:
        raise UsageError(f"{labels.shape[0]} labels but {scores.shape[0]} scores")
    q = _as_int_vector(qptr, "query offsets")
    n = labels.shape[0]
    if q[0] != 0 or q[-1] != n:
        raise UsageError(f"query offsets must run from 0 to {n} (the number of rows), got {q[0]} to {q[-1]}")
    if q.shape[0] > 1 and not np.all(np.diff(q) > 0):
        bad = int(np.flatnonzero(np.diff(q) <= 0)[0])
        raise UsageError(f"query offsets must be strictly increasing (query {bad} is empty or reversed)")
    return labels, scores, q


def _check_tiebreak(tiebreak, n: int) -> np.ndarray:
    t = np.asarray(tiebreak)
    if t.ndim != 1:
        raise UsageError(f"tiebreak must be a 1-D array, got {t.ndim} dimensions")
    if t.shape[0] != n:
        raise UsageError(f"{t.shape[0]} tiebreak values but {n} rows")
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    return _as_int_vector(t, "tiebreak")


def _check_judged(judged, nq: int) -> tuple[np.ndarray, np.ndarray]:
    if not isinstance(judged, (tuple, list)) or len(judged) != 2:
        raise UsageError("judged must be a pair (judged offsets, judged labels)")
    jlabels = _as_float_vector(judged[1], "judged labels")
    jptr = _as_int_vector(judged[0], "judged offsets")
    m = jlabels.shape[0]
    if jptr.shape[0] != nq + 1:
        raise UsageError(f"judged offsets must have one entry per query plus one ({nq + 1}), got {jptr.shape[0]}")
    if jptr[0] != 0 or jptr[-1] != m:
        raise UsageError(f"judged offsets must run from 0 to {m} (the number of judged labels), got {jptr[0]} to {jptr[-1]}")
    if jptr.shape[0] > 1 and not np.all(np.diff(jptr) >= 0):
        bad = int(np.flatnonzero(np.diff(jptr) < 0)[0])
        raise UsageError(f"judged offsets must be non-decreasing (query {bad} is reversed)")
    return jptr, jlabels


def _convention(convention: str | Convention) -> Convention:
    if isinstance(convention, Convention):
        return convention
    conv = CONVENTIONS.get(convention)
    if conv is None:
        raise UsageError(f"unknown convention {convention!r} (known: {', '.join(CONVENTIONS)})")
    return conv


def _empty_code(empty_query, conv: Convention) -> int:
    if empty_query is None:
        return conv.empty_query
    key = empty_query
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        key = str(int(key))
    if isinstance(key, str) and key.strip().lower() in _EMPTY_CODES:
        return _EMPTY_CODES[key.strip().lower()]
    raise UsageError(f"unknown empty-query rule {empty_query!r} (known: {', '.join(EMPTY_QUERY_CHOICES)})")


# Metrics that are undefined (not "zero") on a query without a pair to order: such a query is left
# out of their mean unless --empty-query is given explicitly. The LETOR/TREC "score 0 and average
# in" rules are about NDCG/MAP/P, which those scripts compute; these metrics are not among them.
SKIP_WHEN_UNDEFINED = ("auc", "pairwise-accuracy", "kendall-tau")


def _run(
    parsed: list[tuple[str, int | None]], labels, scores, qptr, convention, tiebreak, judged, empty_query
) -> np.ndarray:
    conv = _convention(convention)
    empty = _empty_code(empty_query, conv)
    # each metric's empty-query rule: the one given, else the convention's, except for the metrics
    # undefined on an empty query, which skip it
    empties = np.array(
        [EMPTY_SKIP if empty_query is None and base in SKIP_WHEN_UNDEFINED else empty for base, _ in parsed],
        dtype=np.int64,
    )
    labels, scores, qptr = _check_inputs(labels, scores, qptr)
    nq = qptr.shape[0] - 1
    if tiebreak is not None:
        t = _check_tiebreak(tiebreak, labels.shape[0])
        # Within each query, larger tiebreak first (file order among equal values), so that the
        # kernel's stable sort on -score breaks score ties by tiebreak. ~t = -t - 1 cannot overflow.
        query_of_row = np.repeat(np.arange(nq, dtype=np.int64), np.diff(qptr))
        perm = np.lexsort((~t, query_of_row))
        labels = labels[perm]
        scores = scores[perm]
    if judged is not None:
        jptr, jlabels = _check_judged(judged, nq)
    else:
        jptr, jlabels = np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.float64)
    _check_gains(conv, labels, qptr, jlabels, jptr)
    if conv.err_max_grade is not None:
        g_max = float(conv.err_max_grade)
    else:
        g_max = max(2.0, float(labels.max(initial=2.0)), float(jlabels.max(initial=2.0)))
    codes = np.array([METRICS[base].code for base, _ in parsed], dtype=np.int64)
    ks = np.array([K_ALL if k is None else k for _, k in parsed], dtype=np.int64)
    out = np.empty((len(parsed), nq), dtype=np.float64)
    # the queries in contiguous ranges (balanced by rows) over the threads; each query is written
    # on its own, so the numbers do not depend on the split
    parts = threads.split(qptr, nq, int(qptr[-1]))
    statuses = threads.run(
        metrics_range,
        parts,
        codes,
        ks,
        labels,
        scores,
        qptr,
        judged is not None,
        jptr,
        jlabels,
        conv.gain_mode,
        conv.table(),
        conv.discount_mode,
        conv.short_query,
        empties,
        conv.relevance_mode,
        float(conv.relevance_threshold),
        conv.map_cut,
        conv.short_precision,
        g_max,
        out,
    )
    for status in statuses:
        if status != STATUS_OK:
            raise RuntimeError(f"metrics kernel failed with status {status}")  # a bug: codes come from METRICS
    return out


def ungradable(convention: str | Convention, labels) -> int | None:
    """The row of the first label the convention cannot grade, or None. A convention with a gain
    table (letor4, letor3: labels 0, 1, 2; mslr: 0..4) gives any other label gain 0 and counts it
    not relevant: a label 3 or 4 (LightGBM's example, MSLR, Yahoo) would silently score as a 0."""
    conv = _convention(convention)
    if conv.gain_mode != GAIN_TABLE:
        return None
    y = np.asarray(labels, dtype=np.float64)
    bad = (y < 0) | (y > len(conv.gain_table) - 1) | (y != np.floor(y))
    return int(np.flatnonzero(bad)[0]) if bad.any() else None


def gradable_labels(convention: str | Convention) -> str:
    """The labels a gain-table convention grades, in words ("0, 1, 2")."""
    conv = _convention(convention)
    return ", ".join(str(i) for i in range(len(conv.gain_table))) if conv.gain_mode == GAIN_TABLE else "any"


class GainOverflow(UsageError):
    """A label whose gain makes a DCG overflow a double (2^label - 1 with label >= 1024, say).
    `row` indexes the labels passed in, or the judged labels when `judged` is true; callers that
    know the file name the file and line (rankkit eval)."""

    def __init__(self, label: float, row: int, judged: bool, reason: str):
        self.label, self.row, self.judged, self.reason = label, row, judged, reason
        super().__init__(f"label {label:g} {reason}")


def _check_gains(conv: Convention, labels, qptr, jlabels, jptr) -> None:
    """Refuse labels whose gains cannot be summed in a double: the DCG of a query of m documents is
    at most m times the largest |gain|, so NDCG and DCG are finite when that product is."""
    if conv.gain_mode == GAIN_TABLE:
        return
    longest = int(np.diff(qptr).max(initial=1))
    if jlabels.shape[0]:
        longest = max(longest, int(np.diff(jptr).max(initial=1)))
    worst = []  # (label, row, judged)
    for judged, values in ((False, labels), (True, jlabels)):
        if values.shape[0]:
            key = np.abs(values) if conv.gain_mode == GAIN_LINEAR else values
            r = int(np.argmax(key))
            worst.append((float(values[r]), r, judged))
    for label, row, judged in worst:
        if conv.gain_mode == GAIN_EXP:
            limit = 1024.0 - math.log2(longest)  # m * (2^label - 1) < 2^1024
            if label >= limit:
                raise GainOverflow(label, row, judged, f"is too large for the gain 2^label - 1 of --convention "
                                   f"{conv.name}: the DCG of a query of {longest} documents would overflow a double "
                                   f"(labels must stay below {math.floor(limit * 1000) / 1000:g} here); use "
                                   "--convention trec (gain = label) or smaller grades")
        elif not math.isfinite(abs(label if conv.gain_mode == GAIN_LINEAR else max(label, 0.0)) * longest):
            raise GainOverflow(label, row, judged, f"is too large for --convention {conv.name}: the DCG of a query "
                               f"of {longest} documents would overflow a double")


def _names(metrics) -> list[str]:
    return [metrics] if isinstance(metrics, str) else list(metrics)


# -- public API ----------------------------------------------------------------------------------
def per_query(
    metric: str,
    labels,
    scores,
    qptr,
    convention: str | Convention = DEFAULT_CONVENTION,
    *,
    tiebreak=None,
    judged=None,
    empty_query=None,
) -> np.ndarray:
    """float64[Q]: the metric of each query; NaN marks a query skipped by the empty-query rule.

    tiebreak: int64[n]; among equal scores the row with the larger value ranks first.
    judged: (jptr int64[Q+1], jlabels float64[m]), the labels of all judged documents of each query:
        the ideal DCG and the number of relevant documents come from them.
    empty_query: None (the convention's rule), "0", "1" or "skip".
    """
    return _run([parse_metric(metric)], labels, scores, qptr, convention, tiebreak, judged, empty_query)[0]


def per_query_table(
    metrics,
    labels,
    scores,
    qptr,
    convention: str | Convention = DEFAULT_CONVENTION,
    *,
    tiebreak=None,
    judged=None,
    empty_query=None,
) -> dict[str, np.ndarray]:
    """{metric name as given: float64[Q]} from one pass over the queries (see `per_query`)."""
    names = _names(metrics)
    out = _run([parse_metric(m) for m in names], labels, scores, qptr, convention, tiebreak, judged, empty_query)
    return {name: out[i] for i, name in enumerate(names)}


def evaluate(
    labels,
    scores,
    qptr,
    metrics=DEFAULT_METRICS,
    convention: str | Convention = DEFAULT_CONVENTION,
    *,
    tiebreak=None,
    judged=None,
    empty_query=None,
) -> dict[str, float]:
    """{metric name as given: mean over the queries not skipped (NaN if all are)}.

    Each query is ranked once for all metrics; see `per_query` for the keyword arguments.
    """
    names = _names(metrics)
    parsed = [parse_metric(m) for m in names]
    out = _run(parsed, labels, scores, qptr, convention, tiebreak, judged, empty_query)
    if out.shape[1] == 0:
        raise UsageError("no queries to evaluate")
    result = {}
    for i, name in enumerate(names):
        row = out[i]
        kept = row[~np.isnan(row)]
        result[name] = float(kept.mean()) if kept.shape[0] else math.nan
    return result
