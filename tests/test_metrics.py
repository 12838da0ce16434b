"""rankkit.metrics against the naive reference in tests/reference_metrics.py, plus hand-worked cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

import reference_metrics as ref
from rankkit import metrics
from rankkit.errors import UsageError
from rankkit.metrics import (
    CONVENTIONS,
    DEFAULT_METRICS,
    Convention,
    evaluate,
    parse_metric,
    per_query,
)

TOL = 1e-12  # fast vs reference, and hand-worked values involving log2(3)

CUTOFF_METRICS = [f"{m}@{k}" for m in ("ndcg", "dcg", "p") for k in (1, 3, 5, 10)]
ALL_METRICS = CUTOFF_METRICS + ["map"]


def random_queries(seed: int, n_queries: int = 400):
    """Many small queries: heavy score ties, one-document queries, queries shorter than 10,
    queries without relevant documents, labels outside 0..2 (gain 0 in letor4)."""
    rng = np.random.default_rng(seed)
    sizes = rng.choice([1, 1, 2, 3, 4, 5, 7, 9, 10, 12, 20, 30], size=n_queries)
    qptr = np.zeros(n_queries + 1, dtype=np.int64)
    np.cumsum(sizes, out=qptr[1:])
    n = int(qptr[-1])
    label_values = np.array([0.0, 0.0, 0.0, 1.0, 1.0, 2.0, 3.0, 4.0, -1.0, 0.5, 1.5])
    labels = rng.choice(label_values, size=n)
    # a fifth of the queries have no document with label 1 or 2
    for q in np.flatnonzero(rng.random(n_queries) < 0.2):
        labels[qptr[q] : qptr[q + 1]] = rng.choice([0.0, 3.0, 4.0], size=sizes[q])
    scores = rng.choice([-1.0, 0.0, -0.0, 0.5, 1.0, 2.0], size=n)  # few values: many exact ties
    return labels, scores, qptr


@pytest.fixture(scope="module")
def data():
    return random_queries(seed=12345)


# -- fast vs reference ---------------------------------------------------------------------------
@pytest.mark.parametrize("metric", ALL_METRICS)
def test_per_query_matches_reference_letor4(data, metric):
    labels, scores, qptr = data
    fast = per_query(metric, labels, scores, qptr)
    slow = ref.per_query(parse_metric(metric), labels.tolist(), scores.tolist(), qptr.tolist())
    assert fast.dtype == np.float64 and fast.shape == (qptr.shape[0] - 1,)
    np.testing.assert_allclose(fast, slow, rtol=0, atol=TOL)


def test_random_data_covers_the_edge_cases(data):
    labels, scores, qptr = data
    sizes = np.diff(qptr)
    relevant = np.array([np.isin(labels[a:b], [1.0, 2.0]).any() for a, b in zip(qptr[:-1], qptr[1:])])
    assert (sizes == 1).sum() > 10 and (sizes < 10).sum() > 100
    assert (~relevant).sum() > 20
    assert np.isin(labels, [3.0, 4.0, -1.0, 0.5, 1.5]).sum() > 100
    assert np.unique(scores).size <= 6


def test_evaluate_is_mean_over_all_queries(data):
    labels, scores, qptr = data
    names = list(DEFAULT_METRICS) + ["P@5", "dcg@3"]
    result = evaluate(labels, scores, qptr, names)
    assert list(result) == names
    for name in names:
        assert type(result[name]) is float
        slow = ref.per_query(parse_metric(name), labels.tolist(), scores.tolist(), qptr.tolist())
        assert abs(result[name] - sum(slow) / len(slow)) <= TOL
    assert list(evaluate(labels, scores, qptr)) == list(DEFAULT_METRICS)


OTHER_CONVENTIONS = [
    (
        Convention("exp-truncate-one", metrics.GAIN_EXP, metrics.DISCOUNT_LOG2P1, metrics.SHORT_TRUNCATE,
                   metrics.EMPTY_ONE, metrics.RELEVANT_LABEL, relevance_threshold=2.0),
        {"gain": ("exp",), "discount": "log2p1", "short": "truncate", "empty": 1.0, "relevant": ("label", 2.0)},
    ),
    (
        Convention("table5", metrics.GAIN_TABLE, metrics.DISCOUNT_LETOR4, metrics.SHORT_TRUNCATE,
                   metrics.EMPTY_ZERO, metrics.RELEVANT_GAIN, gain_table=(0.0, 1.0, 3.0, 7.0, 15.0)),
        {"gain": ("table", (0.0, 1.0, 3.0, 7.0, 15.0)), "discount": "letor4", "short": "truncate",
         "empty": 0.0, "relevant": ("gain",)},
    ),
    (
        Convention("linear", metrics.GAIN_LINEAR, metrics.DISCOUNT_LOG2P1, metrics.SHORT_ZERO,
                   metrics.EMPTY_ZERO, metrics.RELEVANT_LABEL, relevance_threshold=1.0),
        {"gain": ("linear",), "discount": "log2p1", "short": "zero", "empty": 0.0, "relevant": ("label", 1.0)},
    ),
]


@pytest.mark.parametrize("conv,ref_conv", OTHER_CONVENTIONS, ids=[c.name for c, _ in OTHER_CONVENTIONS])
def test_other_convention_codes_match_reference(conv, ref_conv):
    """The kernel's other mode codes (for conventions a later issue registers) follow their definitions."""
    labels, scores, qptr = random_queries(seed=7, n_queries=150)
    labels = np.abs(labels)  # non-negative labels: NDCG stays in [0, 1] for exp and linear gains
    out = evaluate(labels, scores, qptr, ALL_METRICS, convention=conv)
    for name in ALL_METRICS:
        fast = per_query(name, labels, scores, qptr, convention=conv)
        slow = ref.per_query(parse_metric(name), labels.tolist(), scores.tolist(), qptr.tolist(), ref_conv)
        np.testing.assert_allclose(fast, slow, rtol=0, atol=TOL, err_msg=name)
        assert abs(out[name] - float(np.mean(slow))) <= TOL


def test_letor4_is_the_registered_default():
    assert list(CONVENTIONS) == ["letor4"]
    c = CONVENTIONS["letor4"]
    assert (c.gain_mode, c.gain_table, c.discount_mode) == (metrics.GAIN_TABLE, (0.0, 1.0, 3.0), metrics.DISCOUNT_LETOR4)
    assert (c.short_query, c.empty_query, c.relevance_mode) == (metrics.SHORT_ZERO, metrics.EMPTY_ZERO, metrics.RELEVANT_GAIN)


# -- hand-worked examples (letor4) -----------------------------------------------------------------
def test_hand_worked_query_a():
    # File order (row: label, score): 0: 1, 0.2   1: 0, 0.9   2: 3, 0.8   3: 2, 0.95   4: 0, 0.5
    # Ranked by score: row 3 (0.95, label 2), row 1 (0.9, 0), row 2 (0.8, 3), row 4 (0.5, 0), row 0 (0.2, 1)
    # ranked labels 2, 0, 3, 0, 1 -> gains 3, 0, 0, 0, 1 (label 3 has gain 0 in letor4)
    # discounts at positions 1..5: 1, 1, log2 3, 2, log2 5
    # ideal gains 3, 1, 0, 0, 0
    #   NDCG@1 = 3/3 = 1
    #   NDCG@3: DCG = 3 + 0 + 0 = 3; IDCG = 3 + 1 + 0 = 4; NDCG = 3/4 = 0.75
    #   NDCG@5: DCG = 3 + 1/log2 5; IDCG = 4; NDCG = (3 + 1/log2 5)/4
    #   NDCG@10 = 0 (5 documents < 10)
    # relevant (label 1 or 2) at positions 1 and 5:
    #   P@1 = 1, P@3 = 1/3, P@5 = 2/5, P@10 = 2/10 (positions 6..10 are holes)
    #   AP = (P@1 + P@5)/2 = (1 + 2/5)/2 = 0.7
    labels = [1.0, 0.0, 3.0, 2.0, 0.0]
    scores = [0.2, 0.9, 0.8, 0.95, 0.5]
    qptr = [0, 5]
    r = evaluate(labels, scores, qptr, ["ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10", "dcg@5",
                                         "p@1", "p@3", "p@5", "p@10", "map"])
    assert r["ndcg@1"] == 1.0
    assert r["ndcg@3"] == 0.75
    assert abs(r["ndcg@5"] - (3 + 1 / math.log2(5)) / 4) <= TOL
    assert r["ndcg@10"] == 0.0
    assert abs(r["dcg@5"] - (3 + 1 / math.log2(5))) <= TOL
    assert r["p@1"] == 1.0
    assert r["p@3"] == pytest.approx(1 / 3, rel=0, abs=TOL)
    assert r["p@5"] == 0.4
    assert r["p@10"] == 0.2
    assert r["map"] == pytest.approx(0.7, rel=0, abs=TOL)


def test_hand_worked_query_b_with_tie():
    # File order (row: label, score): 0: 0, 0.5   1: 2, 0.5   2: 1, 0.9
    # Ranked: row 2 (0.9), then the tie 0.5 in file order: row 0 before row 1
    # ranked labels 1, 0, 2 -> gains 1, 0, 3; ideal gains 3, 1, 0
    #   NDCG@1 = 1/3
    #   NDCG@2 = (1 + 0)/(3 + 1) = 1/4
    #   NDCG@3 = (1 + 0 + 3/log2 3)/(3 + 1 + 0) = (1 + 3/log2 3)/4 ~= 0.7232
    #   (the tie the other way would give ranked gains 1, 3, 0 and NDCG@3 = 4/4 = 1)
    # relevant at positions 1 and 3: AP = (P@1 + P@3)/2 = (1 + 2/3)/2 = 5/6
    labels = np.array([0.0, 2.0, 1.0])
    scores = np.array([0.5, 0.5, 0.9])
    qptr = np.array([0, 3])
    assert per_query("ndcg@1", labels, scores, qptr)[0] == pytest.approx(1 / 3, rel=0, abs=TOL)
    assert per_query("ndcg@2", labels, scores, qptr)[0] == 0.25
    assert abs(per_query("ndcg@3", labels, scores, qptr)[0] - (1 + 3 / math.log2(3)) / 4) <= TOL
    assert per_query("map", labels, scores, qptr)[0] == pytest.approx(5 / 6, rel=0, abs=TOL)


def test_two_queries_are_averaged_including_zero_queries():
    # query 0: labels 0, 1 with scores 2, 1 -> gains 0, 1; ideal 1, 0 -> NDCG@1 = 0, AP = (1/2)/1 = 0.5
    # query 1: labels 0, 3, 4 (no relevant document) -> NDCG@1 = 0, AP = 0
    # query 2: a single document, label 2 -> NDCG@1 = 1, NDCG@3 = 0 (1 < 3 documents), AP = 1
    labels = [0.0, 1.0, 0.0, 3.0, 4.0, 2.0]
    scores = [2.0, 1.0, 1.0, 2.0, 3.0, 0.0]
    qptr = [0, 2, 5, 6]
    np.testing.assert_array_equal(per_query("ndcg@1", labels, scores, qptr), [0.0, 0.0, 1.0])
    np.testing.assert_array_equal(per_query("ndcg@3", labels, scores, qptr), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(per_query("map", labels, scores, qptr), [0.5, 0.0, 1.0])
    assert evaluate(labels, scores, qptr, ["ndcg@1", "map"]) == {"ndcg@1": 1 / 3, "map": 0.5}


# -- ties --------------------------------------------------------------------------------------------
def test_tied_scores_rank_in_file_order():
    # Equal scores: the earlier row ranks first. Relevant second -> NDCG@1 = 0; relevant first -> 1.
    assert per_query("ndcg@1", [0.0, 2.0], [1.0, 1.0], [0, 2])[0] == 0.0
    assert per_query("ndcg@1", [2.0, 0.0], [1.0, 1.0], [0, 2])[0] == 1.0
    assert per_query("p@1", [0.0, 1.0], [0.0, -0.0], [0, 2])[0] == 0.0  # -0.0 == 0.0 is a tie too
    # a whole query of ties, long enough that an unstable sort would reorder it
    n = 64
    labels = np.zeros(n)
    labels[-1] = 2.0
    scores = np.full(n, 0.25)
    ap = per_query("map", labels, scores, np.array([0, n]))[0]
    assert ap == 1.0 / n  # the relevant document is last: AP = P@n = 1/n
    labels2 = np.zeros(n)
    labels2[0] = 2.0
    assert per_query("map", labels2, scores, np.array([0, n]))[0] == 1.0


# -- metric names ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name,expected",
    [("ndcg@10", ("ndcg", 10)), ("map", ("map", None)), ("NDCG@3", ("ndcg", 3)), ("p@1", ("p", 1)),
     ("dcg@5", ("dcg", 5)), ("ndcg@007", ("ndcg", 7))],
)
def test_parse_metric(name, expected):
    assert parse_metric(name) == expected


@pytest.mark.parametrize(
    "name",
    ["xyz", "ndcg", "ndcg@0", "ndcg@-1", "ndcg@1.5", "ndcg@", "ndcg@abc", "ndcg@+3", "map@", "map@x",
     "p", "ndcg@10x", "", "@5", "ndcg@99999999999"],
)
def test_parse_metric_rejects(name):
    with pytest.raises(UsageError, match=r"^unknown metric .* \(known: ndcg@k, dcg@k, p@k, map\)$"):
        parse_metric(name)


def test_evaluate_rejects_bad_metric_before_computing():
    with pytest.raises(UsageError, match="unknown metric 'xyz'"):
        evaluate([1.0], [0.0], [0, 1], ["ndcg@1", "xyz"])


# -- input checks --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "labels,scores,qptr,message",
    [
        ([1.0, 0.0], [0.5], [0, 2], "2 labels but 1 scores"),
        ([1.0, 0.0], [0.5, np.nan], [0, 2], "scores contain NaN"),
        ([np.nan, 0.0], [0.5, 0.1], [0, 2], "labels contain NaN"),
        ([1.0, 0.0], [0.5, 0.1], [0, 1], "query offsets must run from 0 to 2"),
        ([1.0, 0.0], [0.5, 0.1], [1, 2], "query offsets must run from 0 to 2"),
        ([1.0, 0.0, 1.0], [0.5, 0.1, 0.2], [0, 2, 1, 3], "strictly increasing"),
        ([1.0, 0.0], [0.5, 0.1], [0, 0, 2], "query 0 is empty"),
        ([1.0, 0.0], [0.5, 0.1], [0.0, 2.0], "query offsets must be integers"),
        ([[1.0, 0.0]], [0.5, 0.1], [0, 2], "labels must be a 1-D array"),
        ([1.0, 0.0], ["a", "b"], [0, 2], "scores must be real numbers"),
    ],
)
def test_bad_inputs_raise_usage_error(labels, scores, qptr, message):
    with pytest.raises(UsageError, match=message):
        per_query("ndcg@1", labels, scores, qptr)


def test_unknown_convention_and_no_queries():
    with pytest.raises(UsageError, match=r"unknown convention 'trec' \(known: letor4\)"):
        evaluate([1.0], [0.0], [0, 1], convention="trec")
    empty = np.zeros(0)
    assert per_query("map", empty, empty, np.array([0])).shape == (0,)
    with pytest.raises(UsageError, match="no queries to evaluate"):
        evaluate(empty, empty, np.array([0]))


def test_integer_inputs_are_accepted():
    np.testing.assert_array_equal(
        per_query("ndcg@2", np.array([0, 2], dtype=np.int32), np.array([1, 2]), np.array([0, 2], dtype=np.int32)),
        [1.0],
    )
