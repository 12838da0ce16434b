"""Ranking metrics and significance tests over queries: what `rankkit eval` computes, for Python.

    evaluate(y, scores, qid=...)            mean of each metric over the queries (and per query)
    compare(y, {"a": s1, "b": s2}, qid=...) several systems, each tested against the first

The command line's eval reads files, then calls `summarize` (as `compare` does) and formats the
result: one code path. Metric names and conventions are those of ``rankkit eval --help``
(``ndcg@10``, ``map``, ``p@5``, ``err@10``, ...; conventions trec (the default: trec_eval's numbers), letor4, letor3, mslr, exp).
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Mapping, Sequence

import numpy as np

from rankkit import stats
from rankkit.config import DEFAULT_CONVENTION
from rankkit.data import query_offsets
from rankkit.errors import UsageError
from rankkit.metrics.ties import dataset_tiebreak, lexicographic_rank
from rankkit.metrics import gradable_labels, parse_metric, per_query_table, ungradable

__all__ = ["evaluate", "compare"]

DEFAULT_METRICS = ("ndcg@10", "map")


def _offsets(n: int, qid, group, what: str) -> tuple[np.ndarray, np.ndarray]:
    """(qptr, the id of each query: int64) from qid per row or group sizes; neither: an error."""
    if qid is None and group is None:
        raise UsageError(f"{what} needs the queries: qid= (one id per row) or group= (rows per query); "
                         "for one query of all rows, pass group=[len(y)]")
    qptr, q, _ = query_offsets(n, qid, group, "y")
    return qptr, q[qptr[:-1]]


def _check_grades(labels: np.ndarray, convention: str) -> None:
    """A convention with a gain table (letor4, letor3: labels 0, 1, 2; mslr: 0..4) grades no other
    label: asked for by name, say so once (the LETOR scripts would count them as 0, not relevant)."""
    row = ungradable(convention, labels)
    if row is not None:
        warnings.warn(f"convention {convention!r} grades the labels {gradable_labels(convention)} only (any other "
                      f"label counts 0, not relevant), and y[{row}] is {labels[row]:g}: the default convention "
                      f"{DEFAULT_CONVENTION!r} or 'exp' grades every label", UserWarning, stacklevel=3)


def dataset_table(names: Sequence[str], ds, scores, convention: str = DEFAULT_CONVENTION, *, tiebreak=None,
                  empty_query=None) -> dict[str, np.ndarray]:
    """{metric: float64[queries]} of one scores vector (in file order) against a Dataset, exactly as
    `rankkit eval DATA SCORES` computes it (the same tiebreak, the same row order). tiebreak: from
    dataset_tiebreak(ds, convention), passed in when one Dataset is scored many times."""
    if tiebreak is None:
        tiebreak = dataset_tiebreak(ds, convention)
    scores = np.asarray(scores, dtype=np.float64)
    if ds.order is not None:
        scores = scores[ds.order]
    return per_query_table(list(names), ds.y, scores, ds.qptr, convention, tiebreak=tiebreak, empty_query=empty_query)


def _vector(values, n: int | None, what: str) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 1 or (n is not None and v.shape[0] != n):
        raise UsageError(f"{what} must be one number per document ({n}), got shape {v.shape}")
    if not np.all(np.isfinite(v)):
        raise UsageError(f"{what} must be finite (no nan or inf)")
    return v


def row_number_rank(n: int, offset: int = 0) -> np.ndarray:
    """lexicographic_rank of the docids str(offset + 1), ..., str(offset + n) (each row's 1-based
    number, the docid `rankkit eval` gives a line without `# docid`; offset: the rows before these,
    as for one part of a collection), computed on the numbers: "1" < "10" < "100" < "11" < ... < "2"
    as strings is the order of (x scaled to the largest's number of digits, x's digits)."""
    x = np.arange(offset + 1, offset + n + 1, dtype=np.int64)
    width = len(str(offset + n)) if n else 1
    digits = np.ones(n, dtype=np.int64)
    for k in range(1, width):
        digits += x >= 10 ** k
    order = np.lexsort((digits, x * 10 ** (width - digits)))
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n, dtype=np.int64)
    return rank


def _tiebreak(docids, n: int, convention):
    """Score ties as `rankkit eval` breaks them on a data file: by docid under trec (trec_eval's rule),
    the docid of a row being its number 1..n unless `docids` says otherwise; file order under the
    other conventions (or by `docids` when given)."""
    if docids is None:
        return row_number_rank(n) if getattr(convention, "name", convention) == "trec" else None
    ids = [str(d) for d in docids]
    if len(ids) != n:
        raise UsageError(f"docids must have one id per document ({n}), got {len(ids)}")
    return lexicographic_rank(ids)


def query_table(names: Sequence[str], y, scores, qptr, convention: str = DEFAULT_CONVENTION, *, tiebreak=None, judged=None,
                empty_query=None) -> dict[str, np.ndarray]:
    """{metric: float64[queries]} (NaN: a query the empty-query rule skips)."""
    return per_query_table(list(names), y, scores, qptr, convention, tiebreak=tiebreak, judged=judged,
                           empty_query=empty_query)


def mean_skipping_nan(values: np.ndarray) -> float:
    kept = values[~np.isnan(values)]
    return float(kept.mean()) if kept.size else math.nan


def _paired_p(base, other, metric: str, test: str, permutations: int, seed: int) -> float:
    """p-value of the paired test on the queries both systems scored (matched by query id)."""
    a_ids, a = base[1], base[2][metric]
    b_ids, b = other[1], other[2][metric]
    if a_ids != b_ids:
        pos = {q: i for i, q in enumerate(b_ids)}
        keep = [i for i, q in enumerate(a_ids) if q in pos]
        a = a[keep]
        b = b[[pos[a_ids[i]] for i in keep]]
    if test == "randomization":
        return stats.randomization_test(a, b, n_permutations=permutations, seed=seed)
    if test not in stats.TESTS:
        raise UsageError(f"test must be one of {', '.join(stats.TESTS)}, not {test!r}")
    return stats.TESTS[test](a, b)


def summarize(systems: list, names: Sequence[str], test: str = "randomization", permutations: int = 10_000,
              seed: int = 0) -> tuple[list[dict], list[dict | None]]:
    """Means of each system [(name, query ids, {metric: per-query values})], and the p-values of
    each system after the first against the first (None for the first)."""
    means = [{m: mean_skipping_nan(t[m]) for m in names} for _, _, t in systems]
    pvalues: list[dict | None] = [None] + [
        {m: _paired_p(systems[0], other, m, test, permutations, seed) for m in names} for other in systems[1:]]
    return means, pvalues


def evaluate(y, scores, qid=None, group=None, metrics: Sequence[str] | str = DEFAULT_METRICS,
             convention: str = DEFAULT_CONVENTION, per_query: bool = False, *, empty_query: str | None = None,
             docids: Sequence[str] | None = None) -> Any:
    """Mean of each ranking metric over the queries, as ``rankkit eval`` computes it.

    Parameters
    ----------
    y : array-like of float, shape (n_documents,)
        Relevance labels.
    scores : array-like of float, shape (n_documents,)
        A ranker's scores; each query's documents are ranked by decreasing score.
    qid : array-like of int, optional
        Query id of each document (a query's documents contiguous).
    group : array-like of int, optional
        Documents per query, in order (LightGBM's convention). One of qid and group is needed.
    metrics : str or sequence of str, default ("ndcg@10", "map")
        Names as in ``rankkit eval --help``: ndcg, ndcg@k, map, p@k, mrr, err@k, auc, ...
    convention : str, default "trec"
        How gains, ties, short queries and queries without relevant documents count: trec
        (trec_eval, pytrec_eval, ranx, scikit-learn's ndcg_score; ties broken by ``docids``), or by
        name letor4 (the LETOR 4.0 evaluation script), letor3, mslr, exp (LightGBM, RankLib).
    per_query : bool, default False
        Also return each query's value.
    empty_query : {None, "0", "1", "skip"}, optional
        Score of a query without relevant documents (default: the convention's rule).
    docids : sequence of str, optional
        Document ids: trec_eval breaks score ties by them (descending), under every convention
        when given. Default: under trec, the row numbers "1", "2", ... (the docids ``rankkit
        eval`` and ``evaluate_parts`` give the lines of a file without ``# docid``, so that the
        same scores of the same file get the same numbers); under the others, file order.

    Returns
    -------
    dict
        ``{metric: mean over the queries the convention keeps}``.
    dict, only with ``per_query=True``
        ``{"qid": int64[n_queries] the query ids, metric: float64[n_queries], ...}`` (NaN: a
        skipped query).

    Warns
    -----
    UserWarning
        Labels a convention asked for by name cannot grade (letor4 and letor3: other than 0, 1,
        2; mslr: other than 0..4), which it counts as 0, not relevant.

    Raises
    ------
    rankkit.errors.UsageError
        A metric name that does not exist, or inputs that do not fit together.

    Examples
    --------
    >>> import rankkit
    >>> y = [2, 1, 0, 1, 0]
    >>> scores = [0.9, 0.5, 0.1, 0.2, 0.4]
    >>> rankkit.evaluate(y, scores, qid=[1, 1, 1, 2, 2], metrics=("ndcg@3", "map"))  # trec_eval's numbers
    {'ndcg@3': 0.8154648767857288, 'map': 0.75}
    >>> rankkit.evaluate(y, scores, qid=[1, 1, 1, 2, 2], metrics=("ndcg@3", "map"), convention="letor4")
    {'ndcg@3': 0.5, 'map': 0.75}

    Query 2 has 2 documents: the default (trec_eval's, and pytrec_eval's, ranx's, scikit-learn's
    ndcg_score) is NDCG over the query's own length; under the LETOR 4.0 script's rules its NDCG@3
    is 0 (a query shorter than k scores 0) and its top two ranks share the discount 1.
    >>> means, each = rankkit.evaluate(y, [0.9, 0.5, 0.1, 0.2, 0.4], group=[3, 2], metrics="map", per_query=True)
    >>> each["map"].tolist()
    [1.0, 0.5]
    """
    names = [metrics] if isinstance(metrics, str) else list(metrics)
    if not names:
        raise UsageError("metrics is empty")
    for m in names:
        parse_metric(m)
    labels = _vector(y, None, "y")
    n = labels.shape[0]
    s = _vector(scores, n, "scores")
    qptr, qids = _offsets(n, qid, group, "evaluate")
    _check_grades(labels, convention)
    table = query_table(names, labels, s, qptr, convention, tiebreak=_tiebreak(docids, n, convention),
                        empty_query=empty_query)
    means = {m: mean_skipping_nan(table[m]) for m in names}
    if not per_query:
        return means
    return means, {"qid": qids, **table}


def compare(y, systems: Mapping[str, Any] | Sequence[Any], qid=None, group=None,
            metrics: Sequence[str] | str = DEFAULT_METRICS, convention: str = DEFAULT_CONVENTION, *,
            test: str = "randomization", permutations: int = 10_000, seed: int = 0, empty_query: str | None = None,
            docids: Sequence[str] | None = None) -> list[dict]:
    """Several rankers' scores on the same documents, each tested against the first.

    Parameters
    ----------
    y : array-like, shape (n_documents,)
    systems : mapping of name to scores, or a sequence of score arrays (named "1", "2", ...)
        The first is the baseline.
    qid, group, metrics, convention, empty_query, docids
        As for `evaluate`.
    test : {"randomization", "t"}, default "randomization"
        Paired test over the queries (Smucker et al.'s randomization test by default).
    permutations : int, default 10000
        Permutations of the randomization test.
    seed : int, default 0
        Seed of the randomization test: the same seed gives the same p-values.

    Returns
    -------
    list of dict
        One per system: ``{"name", "mean": {metric: value}}``, and for every system after the
        first ``"p_value": {metric: p}`` against the first (``rankkit eval --format json``'s).

    Examples
    --------
    >>> import rankkit
    >>> y = [2, 1, 0, 1, 0, 1, 0]
    >>> out = rankkit.compare(y, {"good": [3, 2, 1, 2, 1, 2, 1], "bad": [1, 2, 3, 1, 2, 1, 2]},
    ...                       group=[3, 2, 2], metrics="map", permutations=1000)
    >>> [s["name"] for s in out], out[0]["mean"]["map"], out[1]["p_value"]["map"] < 1
    (['good', 'bad'], 1.0, True)
    """
    names = [metrics] if isinstance(metrics, str) else list(metrics)
    for m in names:
        parse_metric(m)
    if isinstance(systems, Mapping):
        items = [(str(k), v) for k, v in systems.items()]
    else:
        items = [(str(i + 1), v) for i, v in enumerate(systems)]
    if not items:
        raise UsageError("compare needs at least one system's scores")
    if test != "randomization":
        if test not in stats.TESTS:
            raise UsageError(f"test must be one of {', '.join(stats.TESTS)}, not {test!r}")
    labels = _vector(y, None, "y")
    n = labels.shape[0]
    qptr, qids = _offsets(n, qid, group, "compare")
    qids = [str(q) for q in qids.tolist()]
    _check_grades(labels, convention)
    tiebreak = _tiebreak(docids, n, convention)
    table = [(name, qids, query_table(names, labels, _vector(s, n, f"scores of {name!r}"), qptr, convention,
                                      tiebreak=tiebreak, empty_query=empty_query)) for name, s in items]
    means, pvalues = summarize(table, names, test, permutations, seed)
    out = []
    for (name, _, _), mean, p in zip(table, means, pvalues):
        entry = {"name": name, "mean": mean}
        if p is not None:
            entry["p_value"] = p
        out.append(entry)
    return out
