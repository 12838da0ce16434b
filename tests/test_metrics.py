"""rankkit.metrics against the naive reference in tests/reference_metrics.py, plus hand-worked cases."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import scipy.stats

import reference_metrics as ref
from rankkit import metrics
from rankkit.errors import UsageError
from rankkit.metrics import (
    CONVENTIONS,
    DEFAULT_METRICS,
    METRIC_NAMES,
    Convention,
    GainOverflow,
    describe,
    parse_metric,
)
from rankkit.metrics import evaluate as _evaluate
from rankkit.metrics import per_query as _per_query
from rankkit.metrics import per_query_table as _per_query_table
from rankkit.metrics.kernels import GAIN_EXP, err_probability
from rankkit.config import DEFAULT_CONVENTION


# The hand-worked values and the brute-force reference of this file are the LETOR 4.0 script's rules,
# written when letor4 was the default; the default is now trec (test_trec_is_the_registered_default),
# so these helpers name letor4 where a test gives no convention.
def per_query(metric, labels, scores, qptr, convention="letor4", **kw):
    return _per_query(metric, labels, scores, qptr, convention, **kw)


def per_query_table(metrics_, labels, scores, qptr, convention="letor4", **kw):
    return _per_query_table(metrics_, labels, scores, qptr, convention, **kw)


def evaluate(labels, scores, qptr, metrics_=DEFAULT_METRICS, convention="letor4", **kw):
    return _evaluate(labels, scores, qptr, metrics_, convention, **kw)

TOL = 1e-12  # fast vs reference, and hand-worked values involving logarithms

CUTOFF_METRICS = [f"{m}@{k}" for m in ("ndcg", "dcg", "p") for k in (1, 3, 5, 10)]
ALL_METRICS = CUTOFF_METRICS + ["map"]  # the metrics of the first issue
EVERY_METRIC = [
    "ndcg@1", "ndcg@3", "ndcg@10", "ndcg", "dcg@1", "dcg@3", "dcg@10", "p@1", "p@3", "p@10",
    "map", "map@1", "map@3", "map@10", "mrr", "rr@1", "rr@3", "err@1", "err@3", "err@10", "rprec",
    "auc", "pairwise-accuracy", "kendall-tau",
]  # fmt: skip
CONVENTION_NAMES = ["letor4", "letor3", "mslr", "trec", "exp"]

LABEL_VALUES = np.array([0.0, 0.0, 0.0, 1.0, 1.0, 2.0, 3.0, 4.0, -1.0, 0.5, 1.5])


def random_queries(seed: int, n_queries: int = 400):
    """Many small queries: heavy score ties, one-document queries, queries shorter than 10,
    queries without relevant documents, labels outside 0..2 (gain 0 in letor4), all-zero label
    queries (empty in every convention), constant-label and constant-score queries."""
    rng = np.random.default_rng(seed)
    sizes = rng.choice([1, 1, 2, 3, 4, 5, 7, 9, 10, 12, 20, 30], size=n_queries)
    qptr = np.zeros(n_queries + 1, dtype=np.int64)
    np.cumsum(sizes, out=qptr[1:])
    n = int(qptr[-1])
    labels = rng.choice(LABEL_VALUES, size=n)
    scores = rng.choice([-1.0, 0.0, -0.0, 0.5, 1.0, 2.0], size=n)  # few values: many exact ties
    kind = rng.random(n_queries)
    for q in range(n_queries):
        a, b = qptr[q], qptr[q + 1]
        if kind[q] < 0.15:  # no label 1 or 2: nothing relevant in letor, but relevant in mslr/trec/exp
            labels[a:b] = rng.choice([0.0, 3.0, 4.0], size=b - a)
        elif kind[q] < 0.25:  # nothing relevant anywhere; all-zero gains except exp's 0.5 label
            labels[a:b] = rng.choice([0.0, -1.0, 0.5], size=b - a)
        elif kind[q] < 0.32:  # all zero: empty in every convention, constant labels
            labels[a:b] = 0.0
        elif kind[q] < 0.36:  # one label (not 0): no pair with different labels
            labels[a:b] = rng.choice([1.0, 2.0, 4.0])
        elif kind[q] < 0.40:  # all scores tied
            scores[a:b] = 0.5
    return labels, scores, qptr


def random_judged(seed: int, labels, qptr):
    """Per query: its own labels plus 0..5 unretrieved judged documents; a few queries with no
    judgments at all."""
    rng = np.random.default_rng(seed)
    jptr = [0]
    jlabels = []
    for q in range(qptr.shape[0] - 1):
        if rng.random() < 0.05:
            jptr.append(jptr[-1])
            continue
        own = labels[qptr[q] : qptr[q + 1]].tolist()
        extra = rng.choice(LABEL_VALUES, size=rng.choice([0, 0, 1, 2, 5])).tolist()
        jlabels += own + extra
        jptr.append(len(jlabels))
    return np.array(jptr, dtype=np.int64), np.array(jlabels, dtype=np.float64)


def random_tiebreak(seed: int, n: int):
    """Small integers (so tiebreaks tie too), and the int64 extremes."""
    rng = np.random.default_rng(seed)
    t = rng.integers(0, 4, size=n, dtype=np.int64)
    t[rng.random(n) < 0.05] = np.iinfo(np.int64).min
    t[rng.random(n) < 0.05] = np.iinfo(np.int64).max
    return t


def reference_table(names, labels, scores, qptr, conv, tiebreak=None, judged=None):
    jud = None if judged is None else (judged[0].tolist(), judged[1].tolist())
    tb = None if tiebreak is None else tiebreak.tolist()
    return {
        name: ref.per_query(parse_metric(name), labels.tolist(), scores.tolist(), qptr.tolist(), conv, tb, jud)
        for name in names
    }


def assert_tables_equal(fast, slow):
    assert list(fast) == list(slow)
    for name in slow:
        assert fast[name].dtype == np.float64
        np.testing.assert_allclose(fast[name], slow[name], rtol=0, atol=TOL, equal_nan=True, err_msg=name)


@pytest.fixture(scope="module")
def data():
    return random_queries(seed=12345)


@pytest.fixture(scope="module")
def small():
    return random_queries(seed=99, n_queries=150)


# -- fast vs reference: letor4, the metrics of the first issue ----------------------------------------
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
    per_q = [labels[a:b] for a, b in zip(qptr[:-1], qptr[1:])]
    per_s = [scores[a:b] for a, b in zip(qptr[:-1], qptr[1:])]
    letor_rel = np.array([np.isin(x, [1.0, 2.0]).any() for x in per_q])
    any_rel = np.array([(x >= 1).any() for x in per_q])
    assert (sizes == 1).sum() > 10 and (sizes < 10).sum() > 100
    assert (~letor_rel & any_rel).sum() > 20  # empty in letor only
    assert (~any_rel & (sizes > 3)).sum() > 20  # empty everywhere
    assert sum(bool((x == 0).all()) and x.size > 3 for x in per_q) > 10  # exp-empty (all gains 0)
    assert sum(np.unique(x).size == 1 and x.size > 3 for x in per_q) > 15  # no pair with different labels
    assert sum(np.unique(s).size == 1 and s.size > 3 for s in per_s) > 5  # all scores tied
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


# -- fast vs reference: every metric x every convention ------------------------------------------
@pytest.mark.parametrize("name", CONVENTION_NAMES)
def test_every_metric_matches_reference(data, name):
    labels, scores, qptr = data
    fast = per_query_table(EVERY_METRIC, labels, scores, qptr, convention=name)
    assert_tables_equal(fast, reference_table(EVERY_METRIC, labels, scores, qptr, ref.CONVENTIONS[name]))


@pytest.mark.parametrize("name", CONVENTION_NAMES)
def test_every_metric_with_tiebreak_and_judged_matches_reference(small, name):
    labels, scores, qptr = small
    tiebreak = random_tiebreak(1, labels.shape[0])
    judged = random_judged(2, labels, qptr)
    conv = ref.CONVENTIONS[name]
    for tb, jd in [(tiebreak, None), (None, judged), (tiebreak, judged)]:
        fast = per_query_table(EVERY_METRIC, labels, scores, qptr, convention=name, tiebreak=tb, judged=jd)
        assert_tables_equal(fast, reference_table(EVERY_METRIC, labels, scores, qptr, conv, tb, jd))


@pytest.mark.parametrize("rule", ["0", "1", "skip"])
@pytest.mark.parametrize("name", CONVENTION_NAMES)
def test_empty_query_rule_matches_reference(small, name, rule):
    labels, scores, qptr = small
    fast = per_query_table(EVERY_METRIC, labels, scores, qptr, convention=name, empty_query=rule)
    conv = ref.with_empty(ref.CONVENTIONS[name], rule)
    assert_tables_equal(fast, reference_table(EVERY_METRIC, labels, scores, qptr, conv))
    nan = np.isnan(np.array(list(fast.values())))
    assert nan.any() == (rule == "skip")


def test_registered_conventions_say_what_the_reference_says():
    """The registry entries, field by field, against the reference's description of each convention."""
    assert list(CONVENTIONS) == CONVENTION_NAMES
    gain_codes = {"table": metrics.GAIN_TABLE, "exp": metrics.GAIN_EXP, "linear_clip": metrics.GAIN_LINEAR_CLIP}
    for name, c in CONVENTIONS.items():
        r = ref.CONVENTIONS[name]
        assert c.name == name
        assert c.gain_mode == gain_codes[r["gain"][0]]
        assert c.gain_table == (r["gain"][1] if r["gain"][0] == "table" else ())
        assert c.discount_mode == {"letor4": metrics.DISCOUNT_LETOR4, "log2p1": metrics.DISCOUNT_LOG2P1}[r["discount"]]
        assert c.short_query == {"zero": metrics.SHORT_ZERO, "truncate": metrics.SHORT_TRUNCATE}[r["short"]]
        assert c.empty_query == {0.0: metrics.EMPTY_ZERO, 1.0: metrics.EMPTY_ONE, "skip": metrics.EMPTY_SKIP}[r["empty"]]
        if r["relevant"][0] == "gain":
            assert c.relevance_mode == metrics.RELEVANT_GAIN
        else:
            assert (c.relevance_mode, c.relevance_threshold) == (metrics.RELEVANT_LABEL, r["relevant"][1])
        assert c.err_max_grade == r["err_max"]
        assert c.map_cut == {"min": metrics.MAPCUT_MIN_RK, "R": metrics.MAPCUT_R}[r["map_cut"]]


def test_letor3_differs_from_letor4_only_in_short_query_precision(data):
    """Eval-Score-3.0.pl stops its P@k loop at the query's length (P@k = 0 for a query shorter than
    k); 4.0 counts the missing positions as non-relevant. Everything else is identical."""
    labels, scores, qptr = data
    a = per_query_table(EVERY_METRIC, labels, scores, qptr, convention="letor3")
    b = per_query_table(EVERY_METRIC, labels, scores, qptr, convention="letor4")
    sizes = np.diff(np.asarray(qptr))
    for name in EVERY_METRIC:
        if name.startswith("p@"):
            k = int(name[2:])
            short = sizes < k
            np.testing.assert_array_equal(a[name][~short], b[name][~short])
            assert np.all(a[name][short] == 0.0)
            if k > 1:
                assert np.any(b[name][short] > 0)  # the data has short queries with relevant documents
        else:
            np.testing.assert_array_equal(a[name], b[name])
    # hand-worked: 3 documents, labels ranked 1, 0, 2; P@5: letor4 2/5, letor3 0 (query shorter than 5)
    assert per_query("p@5", [1.0, 0.0, 2.0], [3.0, 2.0, 1.0], [0, 3], "letor4")[0] == 0.4
    assert per_query("p@5", [1.0, 0.0, 2.0], [3.0, 2.0, 1.0], [0, 3], "letor3")[0] == 0.0
    assert per_query("p@3", [1.0, 0.0, 2.0], [3.0, 2.0, 1.0], [0, 3], "letor3")[0] == 2 / 3
    assert "LETOR 3.0" in describe("letor3") and "LETOR 4.0" in describe("letor4")


def test_describe_every_convention():
    texts = {name: describe(name) for name in CONVENTIONS}
    assert len(set(texts.values())) == len(texts)  # distinct
    assert describe(CONVENTIONS["mslr"]) == texts["mslr"]
    assert "0/1/3/7/15" in texts["mslr"] and "label >= 2" in texts["mslr"]
    assert "trec_eval" in texts["trec"] and "averaged in" in texts["trec"]
    assert "2^label - 1" in texts["exp"] and "log2(p + 1)" in texts["exp"]
    with pytest.raises(UsageError, match=r"unknown convention 'nope' \(known: letor4, letor3, mslr, trec, exp\)"):
        describe("nope")


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
                   metrics.EMPTY_ZERO, metrics.RELEVANT_LABEL, relevance_threshold=1.0,
                   err_max_grade=3.0, map_cut=metrics.MAPCUT_R),
        {"gain": ("linear",), "discount": "log2p1", "short": "zero", "empty": 0.0, "relevant": ("label", 1.0),
         "err_max": 3.0, "map_cut": "R"},
    ),
]  # fmt: skip


@pytest.mark.parametrize("conv,ref_conv", OTHER_CONVENTIONS, ids=[c.name for c, _ in OTHER_CONVENTIONS])
def test_other_convention_codes_match_reference(conv, ref_conv):
    """Mode combinations no registered convention uses follow their definitions too."""
    labels, scores, qptr = random_queries(seed=7, n_queries=150)
    labels = np.abs(labels)  # non-negative labels: NDCG stays in [0, 1] for exp and linear gains
    out = evaluate(labels, scores, qptr, EVERY_METRIC, convention=conv)
    fast = per_query_table(EVERY_METRIC, labels, scores, qptr, convention=conv)
    slow = reference_table(EVERY_METRIC, labels, scores, qptr, ref_conv)
    assert_tables_equal(fast, slow)
    for name in EVERY_METRIC:
        assert abs(out[name] - float(np.nanmean(slow[name]))) <= TOL  # skipped queries are NaN


def test_trec_is_the_registered_default_and_letor4_stays_by_name():
    assert DEFAULT_CONVENTION == "trec"
    c = CONVENTIONS["letor4"]
    assert (c.gain_mode, c.gain_table, c.discount_mode) == (metrics.GAIN_TABLE, (0.0, 1.0, 3.0), metrics.DISCOUNT_LETOR4)
    assert (c.short_query, c.empty_query, c.relevance_mode) == (metrics.SHORT_ZERO, metrics.EMPTY_ZERO, metrics.RELEVANT_GAIN)
    labels, scores, qptr = random_queries(seed=3, n_queries=50)
    assert _evaluate(labels, scores, qptr, EVERY_METRIC) == _evaluate(labels, scores, qptr, EVERY_METRIC, "trec")
    assert _evaluate(labels, scores, qptr, EVERY_METRIC) != _evaluate(labels, scores, qptr, EVERY_METRIC, "letor4")
    for name in ("ndcg@3", "map"):
        np.testing.assert_array_equal(_per_query(name, labels, scores, qptr), _per_query(name, labels, scores, qptr,
                                                                                         "trec"))


def test_ungradable_labels_are_found():
    assert metrics.ungradable("letor4", [0.0, 1.0, 2.0]) is None
    assert metrics.ungradable("letor4", [0.0, 1.0, 3.0, 4.0]) == 2
    assert metrics.ungradable("letor3", [-1.0]) == 0 and metrics.ungradable("letor4", [0.5]) == 0
    assert metrics.ungradable("mslr", [4.0]) is None and metrics.ungradable("mslr", [5.0]) == 0
    assert metrics.ungradable("trec", [7.0]) is None and metrics.ungradable("exp", [7.0]) is None


def test_per_query_table_equals_per_query(small):
    labels, scores, qptr = small
    table = per_query_table(["NDCG@3", "auc", "err@3", "map"], labels, scores, qptr, convention="mslr")
    assert list(table) == ["NDCG@3", "auc", "err@3", "map"]
    for name, values in table.items():
        np.testing.assert_array_equal(values, per_query(name, labels, scores, qptr, convention="mslr"))
    assert list(per_query_table("mrr", labels, scores, qptr)) == ["mrr"]


# -- pair metrics against independent implementations ---------------------------------------------
def test_kendall_tau_is_scipy_tau_b_per_query(data):
    labels, scores, qptr = data
    fast = per_query("kendall-tau", labels, scores, qptr, empty_query="skip")
    expected = []
    for a, b in zip(qptr[:-1], qptr[1:]):
        if b - a < 2 or np.unique(labels[a:b]).size == 1 or np.unique(scores[a:b]).size == 1:
            expected.append(math.nan)  # scipy warns and returns NaN on a constant input
        else:
            expected.append(scipy.stats.kendalltau(scores[a:b], labels[a:b], variant="b").statistic)
    assert np.isfinite(expected).sum() > 200
    np.testing.assert_allclose(fast, expected, rtol=0, atol=TOL, equal_nan=True)


def relevance_mask(labels, name):
    r = ref.CONVENTIONS[name]["relevant"]
    return np.isin(labels, [1.0, 2.0]) if r[0] == "gain" else labels >= r[1]


@pytest.mark.parametrize("name", ["letor4", "mslr", "trec"])
def test_auc_is_a_direct_pair_count(data, name):
    labels, scores, qptr = data
    fast = per_query("auc", labels, scores, qptr, convention=name, empty_query="skip")
    expected = []
    for a, b in zip(qptr[:-1], qptr[1:]):
        rel = relevance_mask(labels[a:b], name)
        pos, neg = scores[a:b][rel], scores[a:b][~rel]
        diff = pos[:, None] - neg[None, :]
        expected.append(((diff > 0).sum() + 0.5 * (diff == 0).sum()) / diff.size if diff.size else math.nan)
    assert np.isfinite(expected).sum() > 150
    np.testing.assert_allclose(fast, expected, rtol=0, atol=TOL, equal_nan=True)


def test_one_large_query_auc_tau_pairwise_against_scipy():
    """One query of 200,000 documents (2e10 pairs: int64 counts; an O(n^2) kernel would not finish):
    AUC = Mann-Whitney U / (n_pos n_neg) (midranks: ties 1/2), tau-b = scipy's, pairwise accuracy
    from the same concordance counts."""
    rng = np.random.default_rng(5)
    n = 200_000
    labels = rng.integers(0, 5, size=n).astype(np.float64)
    scores = np.round(labels + rng.standard_normal(n), 1)  # correlated, many ties
    qptr = np.array([0, n])
    r = evaluate(labels, scores, qptr, ["auc", "kendall-tau", "pairwise-accuracy"], convention="mslr")
    rel = labels >= 2
    u = scipy.stats.mannwhitneyu(scores[rel], scores[~rel], alternative="two-sided").statistic
    assert abs(r["auc"] - u / (rel.sum() * (~rel).sum())) <= 1e-12
    assert abs(r["kendall-tau"] - scipy.stats.kendalltau(scores, labels).statistic) <= 1e-12
    # pairwise accuracy = (C + T/2) / P; with tau-b: C - D = tau * sqrt((n0 - n1)(n0 - n2))
    n0 = n * (n - 1) // 2
    n1 = sum(c * (c - 1) // 2 for c in np.unique(scores, return_counts=True)[1].tolist())
    n2 = sum(c * (c - 1) // 2 for c in np.unique(labels, return_counts=True)[1].tolist())
    _, joint = np.unique(np.stack([labels, scores]), axis=1, return_counts=True)
    n3 = sum(c * (c - 1) // 2 for c in joint.tolist())
    p, t = n0 - n2, n1 - n3
    c_minus_d = r["kendall-tau"] * math.sqrt((n0 - n1) * (n0 - n2))
    c = (p - t + c_minus_d) / 2
    assert abs(r["pairwise-accuracy"] - (c + t / 2) / p) <= 1e-9
    assert 0.5 < r["auc"] < 1 and 0 < r["kendall-tau"] < 1


# -- ties and the tiebreak ---------------------------------------------------------------------------
def test_tiebreak_orders_ties_larger_first_then_file_order():
    # one query, every score tied: the ranking is tiebreak descending, then file order
    labels = np.array([2.0, 0.0, 1.0, 0.0])
    scores = np.zeros(4)
    qptr = np.array([0, 4])
    # tiebreak 1, 5, 5, 0 -> rows 1, 2 (5, file order), 0 (1), 3 (0): ranked labels 0, 1, 2, 0
    tb = np.array([1, 5, 5, 0])
    assert per_query("mrr", labels, scores, qptr, tiebreak=tb)[0] == 0.5
    assert per_query("rr@1", labels, scores, qptr, tiebreak=np.array([0, 0, 1, 0]))[0] == 1.0  # row 2 first
    assert per_query("p@1", labels, scores, qptr, tiebreak=np.zeros(4, dtype=np.int32))[0] == 1.0  # file order
    # the tiebreak never overrides a score difference
    assert per_query("p@1", labels, [0.0, 1.0, 0.0, 0.0], qptr, tiebreak=np.array([9, 0, 0, 0]))[0] == 0.0


def test_unique_tiebreak_makes_the_ranking_independent_of_row_order(small):
    """With distinct tiebreak values (docid ranks), shuffling rows within queries changes nothing."""
    labels, scores, qptr = small
    rng = np.random.default_rng(8)
    docid_rank = rng.permutation(labels.shape[0]).astype(np.int64)
    perm = np.concatenate([a + rng.permutation(b - a) for a, b in zip(qptr[:-1], qptr[1:])])
    for name in CONVENTION_NAMES:
        a = per_query_table(EVERY_METRIC, labels, scores, qptr, name, tiebreak=docid_rank)
        b = per_query_table(EVERY_METRIC, labels[perm], scores[perm], qptr, name, tiebreak=docid_rank[perm])
        for m in EVERY_METRIC:
            np.testing.assert_allclose(a[m], b[m], rtol=0, atol=TOL, equal_nan=True, err_msg=m)


def test_pair_metrics_ignore_the_tiebreak(small):
    labels, scores, qptr = small
    names = ["auc", "pairwise-accuracy", "kendall-tau"]
    a = per_query_table(names, labels, scores, qptr)
    b = per_query_table(names, labels, scores, qptr, tiebreak=random_tiebreak(4, labels.shape[0]))
    for m in names:
        np.testing.assert_array_equal(a[m], b[m])


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


# -- hand-worked examples: mslr, trec, exp, ERR, pair metrics ----------------------------------------
def test_hand_worked_mslr():
    # File order (row: label, score): 0: 4, 0.3   1: 1, 0.9   2: 0, 0.8   3: 2, 0.5   4: 3, 0.5
    # Ranked: row 1 (0.9), row 2 (0.8), the tie at 0.5 in file order: row 3 then row 4, row 0 (0.3)
    # ranked labels 1, 0, 2, 3, 4 -> gains 1, 0, 3, 7, 15; ideal gains 15, 7, 3, 1, 0
    # discounts at positions 1..5: 1, 1, log2 3, 2, log2 5
    #   NDCG@1 = 1/15
    #   NDCG@3 = (1 + 3/log2 3) / (15 + 7 + 3/log2 3)
    #   NDCG@5 = (1 + 3/log2 3 + 7/2 + 15/log2 5) / (22 + 3/log2 3 + 1/2)
    #   NDCG@10 = 0 (5 documents < 10)
    # relevant = label >= 2: positions 3, 4, 5 (label 1 at position 1 is not relevant)
    #   P@1 = 0, P@3 = 1/3, P@5 = 3/5; MRR = 1/3, RR@2 = 0
    #   AP = (1/3 + 2/4 + 3/5)/3 = 43/90; AP@3 = (1/3)/min(3, 3) = 1/9; AP@4 = (1/3 + 1/2)/3 = 5/18
    # ERR, g_max = 4: R = gain/16 = 1/16, 0, 3/16, 7/16, 15/16
    #   ERR@3 = 1/16 + (15/16)(1)(3/16)/3 = 1/16 + 15/256 = 31/256
    # AUC: relevant rows 0 (0.3), 3 (0.5), 4 (0.5) all below non-relevant rows 1 (0.9), 2 (0.8): 0
    # pairs by raw label (all 10 differ), higher label first:
    #   (4,3) (4,2) (4,1) (4,0) (3,1) (3,0) (2,1) (2,0) wrong, (3,2) tied 0.5/0.5, (1,0) right
    #   pairwise accuracy = (1 + 1/2)/10 = 0.15
    #   tau-b: C = 1, D = 8, one score tie, no label tie: (1 - 8)/sqrt((10 - 1)(10 - 0)) = -7/sqrt(90)
    labels = [4.0, 1.0, 0.0, 2.0, 3.0]
    scores = [0.3, 0.9, 0.8, 0.5, 0.5]
    r = evaluate(labels, scores, [0, 5], ["ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10", "p@1", "p@3", "p@5",
                                          "mrr", "rr@2", "map", "map@3", "map@4", "err@3", "auc",
                                          "pairwise-accuracy", "kendall-tau"], convention="mslr")
    l3 = math.log2(3)
    assert abs(r["ndcg@1"] - 1 / 15) <= TOL
    assert abs(r["ndcg@3"] - (1 + 3 / l3) / (22 + 3 / l3)) <= TOL
    assert abs(r["ndcg@5"] - (1 + 3 / l3 + 3.5 + 15 / math.log2(5)) / (22.5 + 3 / l3)) <= TOL
    assert r["ndcg@10"] == 0.0
    assert (r["p@1"], r["p@5"], r["rr@2"], r["auc"]) == (0.0, 0.6, 0.0, 0.0)
    assert abs(r["p@3"] - 1 / 3) <= TOL and abs(r["mrr"] - 1 / 3) <= TOL
    assert abs(r["map"] - 43 / 90) <= TOL
    assert abs(r["map@3"] - 1 / 9) <= TOL
    assert abs(r["map@4"] - 5 / 18) <= TOL
    assert r["err@3"] == 31 / 256
    assert abs(r["pairwise-accuracy"] - 0.15) <= TOL
    assert abs(r["kendall-tau"] - (-7 / math.sqrt(90))) <= TOL


def trec_example():
    # Query 0 (docid: label, score):
    #   row 0: d10: 2, 1.0   row 1: d2: 0, 1.0   row 2: d7: 1, 0.5   row 3: d3: 0, 2.0   row 4: d9: -1, 0.1
    # docids in lexicographic order: d10 < d2 < d3 < d7 < d9 -> tiebreak (rank) 0, 1, 3, 2, 4 by row
    # Query 1: d1: 0, 0.7   d4: 0, 0.2 (nothing relevant) -> tiebreak 5, 6
    labels = np.array([2.0, 0.0, 1.0, 0.0, -1.0, 0.0, 0.0])
    scores = np.array([1.0, 1.0, 0.5, 2.0, 0.1, 0.7, 0.2])
    qptr = np.array([0, 5, 7])
    tiebreak = np.array([0, 1, 3, 2, 4, 5, 6])
    return labels, scores, qptr, tiebreak


def test_hand_worked_trec_tie_broken_by_docid_descending():
    # trec_eval sorts by score, then docid descending: d3 (2.0), then the tie at 1.0: "d2" > "d10"
    # so d2 before d10, then d7 (0.5), d9 (0.1). Ranked labels 0, 0, 2, 1, -1 -> gains 0, 0, 2, 1, 0
    # (the -1 label has gain 0). trec_eval's discount (since 9.0.4): rank r -> log2(r + 1).
    #   DCG@4 = 2/log2 4 + 1/log2 5 = 1 + 1/log2 5; ideal gains 2, 1, 0, 0: IDCG@4 = 2 + 1/log2 3
    #   NDCG@2 = 0; NDCG@4 = NDCG@10 = NDCG (5 documents, truncated, no zero) = DCG@4 / IDCG@4
    #   relevant (label >= 1) at ranks 3, 4: AP = (1/3 + 2/4)/2 = 5/12, P@4 = 1/2, P@10 = 2/10,
    #   RR = 1/3
    # In file order the tie would put d10 (label 2) at rank 2: NDCG@4 = (2/log2 3 + 1/log2 5)/IDCG@4,
    # AP = 1/2. (trec_eval 9.0a3's log2(r), rank 1 undiscounted, gave (2/log2 3 + 1/2)/3 = 0.5873.)
    # Query 1 has no relevant document: skipped (NaN), not averaged in.
    labels, scores, qptr, tiebreak = trec_example()
    names = ["ndcg@2", "ndcg@4", "ndcg@10", "ndcg", "map", "p@4", "p@10", "mrr", "dcg@4"]
    t = per_query_table(names, labels, scores, qptr, "trec", tiebreak=tiebreak, empty_query="skip")
    idcg4 = 2 + 1 / math.log2(3)
    ndcg4 = (1 + 1 / math.log2(5)) / idcg4
    assert t["ndcg@2"][0] == 0.0
    assert abs(t["ndcg@4"][0] - ndcg4) <= TOL and abs(t["ndcg@10"][0] - ndcg4) <= TOL
    assert abs(t["ndcg"][0] - ndcg4) <= TOL
    assert abs(t["dcg@4"][0] - (1 + 1 / math.log2(5))) <= TOL
    assert abs(t["map"][0] - 5 / 12) <= TOL
    assert (t["p@4"][0], t["p@10"][0]) == (0.5, 0.2)
    assert abs(t["mrr"][0] - 1 / 3) <= TOL
    for name in names:
        assert math.isnan(t[name][1])  # the query without relevant documents
    r = evaluate(labels, scores, qptr, ["ndcg@4", "map"], "trec", tiebreak=tiebreak, empty_query="skip")
    assert abs(r["ndcg@4"] - ndcg4) <= TOL and abs(r["map"] - 5 / 12) <= TOL  # query 1 not averaged in
    # without the tiebreak: file order
    f = evaluate(labels, scores, qptr, ["ndcg@4", "map"], "trec", empty_query="skip")
    assert abs(f["ndcg@4"] - (2 / math.log2(3) + 1 / math.log2(5)) / idcg4) <= TOL and f["map"] == 0.5
    # the default, as trec_eval: a judged query without relevant documents scores 0, averaged in
    z = evaluate(labels, scores, qptr, ["ndcg@4", "map"], "trec", tiebreak=tiebreak)
    assert abs(z["ndcg@4"] - ndcg4 / 2) <= TOL and abs(z["map"] - 5 / 24) <= TOL


def test_hand_worked_trec_judged_documents_not_retrieved():
    # The qrels of query 0 also judge d5 (label 2), not retrieved; query 1's qrels: d1 0, d4 0, d8 1.
    #   query 0: ideal gains 2, 2, 1, 0, 0, 0: IDCG@4 = 2 + 2/log2 3 + 1/2; R = 3
    #     NDCG@4 = (1 + 1/log2 5)/IDCG@4; AP = (1/3 + 2/4)/3 = 5/18; P and RR unchanged
    #   query 1: one relevant judged document, none retrieved: NDCG 0, AP 0, RR 0 (no longer skipped)
    labels, scores, qptr, tiebreak = trec_example()
    judged = (np.array([0, 6, 9]), np.array([2.0, 0.0, 1.0, 0.0, -1.0, 2.0, 0.0, 0.0, 1.0]))
    t = per_query_table(["ndcg@4", "map", "mrr", "p@4"], labels, scores, qptr, "trec", tiebreak=tiebreak, judged=judged)
    l3 = math.log2(3)
    assert abs(t["ndcg@4"][0] - (1 + 1 / math.log2(5)) / (2.5 + 2 / l3)) <= TOL
    assert abs(t["map"][0] - 5 / 18) <= TOL
    assert abs(t["mrr"][0] - 1 / 3) <= TOL and t["p@4"][0] == 0.5
    for name in t:
        assert t[name][1] == 0.0


def exp_example():
    # Query A: labels 0, 1, 2 with scores 0.3, 0.2, 0.1 (ranked in file order)
    # Query B: labels 0, 0 (ideal DCG 0: empty)
    return np.array([0.0, 1.0, 2.0, 0.0, 0.0]), np.array([0.3, 0.2, 0.1, 1.0, 2.0]), np.array([0, 3, 5])


def test_hand_worked_exp_empty_query_rules():
    # Query A: gains 2^l - 1 = 0, 1, 3; discounts log2(p + 1) = 1, log2 3, 2
    #   DCG@3 = 1/log2 3 + 3/2; ideal 3, 1, 0: IDCG@3 = 3 + 1/log2 3
    #   NDCG@3 = NDCG@5 (3 documents: truncated) = (1/log2 3 + 3/2)/(3 + 1/log2 3)
    #   relevant (label >= 1) at 2, 3: AP = (1/2 + 2/3)/2 = 7/12; P@1 = 0; RR = 1/2
    # Query B (all labels 0) under each rule:
    #   "1" (default, LightGBM): NDCG = AP = 1; P@1, RR, DCG keep their value 0
    #   "0": NDCG = AP = 0;  "skip": every metric NaN, left out of the means
    labels, scores, qptr = exp_example()
    a = (1 / math.log2(3) + 1.5) / (3 + 1 / math.log2(3))
    names = ["ndcg@3", "ndcg@5", "map", "p@1", "mrr", "dcg@3"]
    expected_b = {
        None: {"ndcg@3": 1.0, "ndcg@5": 1.0, "map": 1.0, "p@1": 0.0, "mrr": 0.0, "dcg@3": 0.0},
        "1": {"ndcg@3": 1.0, "ndcg@5": 1.0, "map": 1.0, "p@1": 0.0, "mrr": 0.0, "dcg@3": 0.0},
        "0": {"ndcg@3": 0.0, "ndcg@5": 0.0, "map": 0.0, "p@1": 0.0, "mrr": 0.0, "dcg@3": 0.0},
        "skip": dict.fromkeys(names, math.nan),
    }
    for rule, b in expected_b.items():
        t = per_query_table(names, labels, scores, qptr, "exp", empty_query=rule)
        assert abs(t["ndcg@3"][0] - a) <= TOL and abs(t["ndcg@5"][0] - a) <= TOL
        assert abs(t["map"][0] - 7 / 12) <= TOL and t["p@1"][0] == 0.0 and t["mrr"][0] == 0.5
        for name in names:
            np.testing.assert_equal(t[name][1], b[name], err_msg=f"{rule} {name}")
    assert abs(evaluate(labels, scores, qptr, ["ndcg@3"], "exp")["ndcg@3"] - (a + 1) / 2) <= TOL
    assert abs(evaluate(labels, scores, qptr, ["ndcg@3"], "exp", empty_query="0")["ndcg@3"] - a / 2) <= TOL
    assert abs(evaluate(labels, scores, qptr, ["ndcg@3"], "exp", empty_query="skip")["ndcg@3"] - a) <= TOL
    # every query skipped: the mean is NaN
    only_b = evaluate(labels[3:], scores[3:], [0, 2], ["ndcg@3", "map"], "exp", empty_query="skip")
    assert math.isnan(only_b["ndcg@3"]) and math.isnan(only_b["map"])


def test_hand_worked_err():
    # letor4 (g_max = 2): the query of test_hand_worked_query_a, ranked labels 2, 0, 3, 0, 1:
    #   gains 3, 0, 0, 0, 1 (label 3 has gain 0) -> R = gain/4 = 3/4, 0, 0, 0, 1/4
    #   ERR@1 = 3/4; ERR@5 = 3/4 + (1/4)(1)(1)(1)(1/4)/5 = 3/4 + 1/80 = 61/80
    r = evaluate([1.0, 0.0, 3.0, 2.0, 0.0], [0.2, 0.9, 0.8, 0.95, 0.5], [0, 5], ["err@1", "err@5", "err@10"])
    assert r["err@1"] == 0.75 and abs(r["err@5"] - 61 / 80) <= TOL and r["err@10"] == r["err@5"]
    # exp: g_max = max(2, largest label in the file)
    #   query A of exp_example alone: g_max = 2, R = (2^l - 1)/4 = 0, 1/4, 3/4 in ranked order
    #     ERR@3 = 0 + (1)(1/4)/2 + (1)(3/4)(3/4)/3 = 1/8 + 3/16 = 5/16
    #   with another query holding a label 4: g_max = 4, R = 0, 1/16, 3/16
    #     ERR@3 = (1/16)/2 + (15/16)(3/16)/3 = 1/32 + 15/256 = 23/256
    labels, scores, _ = exp_example()
    assert per_query("err@3", labels[:3], scores[:3], [0, 3], "exp")[0] == 5 / 16
    both = per_query("err@3", np.r_[labels[:3], 4.0], np.r_[scores[:3], 0.0], [0, 3, 4], "exp")
    assert both[0] == 23 / 256 and both[1] == 15 / 16
    #   the judged labels count too: a judged (unretrieved) label 4 gives g_max = 4 as well
    assert per_query("err@3", labels[:3], scores[:3], [0, 3], "exp", judged=([0, 4], [0.0, 1.0, 2.0, 4.0]))[0] == 23 / 256
    # mslr fixes g_max = 4 whatever the file holds: label 2 alone -> R = 3/16
    assert per_query("err@1", [2.0], [0.0], [0, 1], "mslr")[0] == 3 / 16


def test_hand_worked_auc_pairwise_tau_with_ties():
    # letor4, labels 1, 0, 0, 2 with scores 0.5, 0.5, 0.2, 0.1; relevant rows 0 (0.5) and 3 (0.1)
    #   AUC pairs (relevant, non-relevant): (0,1) tie 1/2, (0,2) right, (3,1) wrong, (3,2) wrong
    #     -> 1.5/4 = 0.375
    #   raw-label pairs with different labels: (0,1) tie, (0,2) right, (3,0) wrong (2 > 1, 0.1 < 0.5),
    #     (3,1) wrong, (3,2) wrong; (1,2) same label -> pairwise accuracy = 1.5/5 = 0.3
    #   tau-b: C = 1, D = 3, score ties 1 pair, label ties 1 pair, n0 = 6: -2/sqrt(5 * 5) = -0.4
    labels, scores, qptr = [1.0, 0.0, 0.0, 2.0], [0.5, 0.5, 0.2, 0.1], [0, 4]
    r = evaluate(labels, scores, qptr, ["auc", "pairwise-accuracy", "kendall-tau"])
    assert r == {"auc": 0.375, "pairwise-accuracy": 0.3, "kendall-tau": -0.4}
    # empty cases: one label (no pair, no non-relevant), one document, constant scores (tau only)
    for rule, value in [("0", 0.0), ("1", 1.0)]:
        assert evaluate([1.0, 1.0], [0.0, 1.0], [0, 2], ["auc", "pairwise-accuracy", "kendall-tau"],
                        empty_query=rule) == dict.fromkeys(["auc", "pairwise-accuracy", "kendall-tau"], value)
        assert per_query("kendall-tau", [0.0, 1.0], [3.0, 3.0], [0, 2], empty_query=rule)[0] == value
    assert per_query("pairwise-accuracy", [0.0, 1.0], [3.0, 3.0], [0, 2])[0] == 0.5
    assert math.isnan(per_query("kendall-tau", [2.0], [1.0], [0, 1], empty_query="skip")[0])


def test_hand_worked_rr_and_map_cut():
    # letor4, ranked labels 0, 0, 1, 2 (scores descending in file order)
    #   MRR = 1/3, RR@2 = 0, RR@3 = 1/3
    #   AP@3 = (1/3)/min(2, 3) = 1/6; AP = (1/3 + 2/4)/2 = 5/12
    # trec divides AP@k by R = 2 as well: AP@3 = 1/6 (same here); with R = 2 > k = 1 it differs:
    #   ranked labels 1, 0, 1: letor4 AP@1 = 1/min(2, 1) = 1, trec AP@1 = 1/2
    labels, scores, qptr = [0.0, 0.0, 1.0, 2.0], [4.0, 3.0, 2.0, 1.0], [0, 4]
    r = evaluate(labels, scores, qptr, ["mrr", "rr@2", "rr@3", "map@3", "map"])
    assert r["rr@2"] == 0.0 and abs(r["mrr"] - 1 / 3) <= TOL and r["rr@3"] == r["mrr"]
    assert abs(r["map@3"] - 1 / 6) <= TOL and abs(r["map"] - 5 / 12) <= TOL
    assert per_query("map@1", [1.0, 0.0, 1.0], [3.0, 2.0, 1.0], [0, 3])[0] == 1.0
    assert per_query("map@1", [1.0, 0.0, 1.0], [3.0, 2.0, 1.0], [0, 3], "trec")[0] == 0.5


def test_whole_list_ndcg_ignores_the_short_query_rule():
    # 3 documents ranked labels 1, 2, 0. letor4: gains 1, 3, 0, discounts 1, 1, log2 3; ideal 3, 1, 0.
    #   NDCG@10 = 0 (fewer than 10 documents), NDCG (whole list) = (1 + 3) / (3 + 1) = 1; NDCG@1 = 1/3.
    #   exp: gains 1, 3, 0 with log2(p + 1): (1 + 3/log2 3) / (3 + 1/log2 3).
    labels, scores, qptr = [1.0, 2.0, 0.0], [3.0, 2.0, 1.0], [0, 3]
    t = per_query_table(["ndcg@1", "ndcg@10", "ndcg"], labels, scores, qptr, "letor4")
    assert t["ndcg@10"][0] == 0.0 and t["ndcg"][0] == 1.0 and abs(t["ndcg@1"][0] - 1 / 3) <= TOL
    l3 = math.log2(3)
    for conv in ("exp", "trec"):
        g = [1.0, 3.0] if conv == "exp" else [1.0, 2.0]
        expected = (g[0] + g[1] / l3) / (g[1] + g[0] / l3)
        t = per_query_table(["ndcg@10", "ndcg"], labels, scores, qptr, conv)
        assert abs(t["ndcg"][0] - expected) <= TOL and t["ndcg"][0] == t["ndcg@10"][0]


# -- metric names ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name,expected",
    [("ndcg@10", ("ndcg", 10)), ("ndcg", ("ndcg", None)), ("map", ("map", None)), ("NDCG@3", ("ndcg", 3)), ("p@1", ("p", 1)),
     ("dcg@5", ("dcg", 5)), ("ndcg@007", ("ndcg", 7)), ("map@5", ("map", 5)), ("mrr", ("mrr", None)),
     ("RR@3", ("rr", 3)), ("err@20", ("err", 20)), ("auc", ("auc", None)),
     ("pairwise-accuracy", ("pairwise-accuracy", None)), (" Kendall-Tau ", ("kendall-tau", None))],
)  # fmt: skip
def test_parse_metric(name, expected):
    assert parse_metric(name) == expected


KNOWN = "ndcg, ndcg@k, dcg@k, map, map@k, p@k, mrr, rr@k, err@k, rprec, auc, pairwise-accuracy, kendall-tau"


@pytest.mark.parametrize(
    "name",
    ["xyz", "ndcg@-1", "ndcg@1.5", "ndcg@", "ndcg@abc", "ndcg@+3", "map@", "map@x",
     "ndcg@10x", "", "@5", "pairwise", "kendall--tau", "-auc", "auc-", "pairwise_accuracy"],
)  # fmt: skip
def test_parse_metric_rejects(name):
    with pytest.raises(UsageError, match=rf"^unknown metric .* \(known: {KNOWN}; trec_eval's ndcg_cut.K, P.K, "
                       r"map_cut.K, map, ndcg, recip_rank, Rprec\)$"):
        parse_metric(name)


@pytest.mark.parametrize("name, message", [
    ("ndcg@0", "metric 'ndcg@0': k must be >= 1"), ("ndcg@99999999999", "k must be at most 2147483647"),
    ("dcg", "needs a cutoff k: dcg@10"), ("p", "needs a cutoff k: p@10"), ("rr", "needs a cutoff k: rr@10"),
    ("err", "needs a cutoff k: err@10"), ("mrr@3", "takes no cutoff k: mrr"), ("auc@5", "takes no cutoff k: auc"),
    ("kendall-tau@2", "takes no cutoff k: kendall-tau"),
])
def test_parse_metric_says_what_is_wrong_with_a_known_name(name, message):
    """A known metric with a wrong cutoff is not an 'unknown metric' (issue 37)."""
    with pytest.raises(UsageError, match=re.escape(message)):
        parse_metric(name)


def test_metric_names_for_help_texts():
    assert METRIC_NAMES == tuple(KNOWN.split(", "))
    for name in METRIC_NAMES:
        parse_metric(name.replace("@k", "@4"))


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


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"tiebreak": [0, 1]}, "2 tiebreak values but 3 rows"),
        ({"tiebreak": [0.0, 1.0, 2.0]}, "tiebreak must be integers"),
        ({"tiebreak": [[0, 1, 2]]}, "tiebreak must be a 1-D array"),
        ({"judged": ([0, 1, 2],)}, "judged must be a pair"),
        ({"judged": [0, 1, 2]}, "judged must be a pair"),
        ({"judged": ([0, 1], [1.0])}, r"one entry per query plus one \(3\), got 2"),
        ({"judged": ([0, 1, 1], [1.0, 0.0])}, r"judged offsets must run from 0 to 2 \(the number of judged labels\), got 0 to 1"),
        ({"judged": ([1, 1, 2], [1.0, 0.0])}, "judged offsets must run from 0 to 2"),
        ({"judged": ([0, 3, 2], [1.0, 0.0])}, r"non-decreasing \(query 1 is reversed\)"),
        ({"judged": ([0, 1, 2], [1.0, np.nan])}, "judged labels contain NaN"),
        ({"judged": ([0.0, 1.0, 2.0], [1.0, 0.0])}, "judged offsets must be integers"),
        ({"empty_query": "2"}, r"unknown empty-query rule '2' \(known: 0, 1, skip\)"),
        ({"empty_query": True}, "unknown empty-query rule True"),
        ({"empty_query": 0.5}, "unknown empty-query rule 0.5"),
    ],
)
def test_bad_options_raise_usage_error(kwargs, message):
    with pytest.raises(UsageError, match=message):
        per_query("ndcg@1", [1.0, 0.0, 2.0], [0.5, 0.1, 0.3], [0, 2, 3], **kwargs)


def test_empty_query_accepts_strings_and_integers():
    labels, scores, qptr = [0.0, 0.0], [1.0, 2.0], [0, 2]
    assert per_query("ndcg@1", labels, scores, qptr, empty_query=1)[0] == 1.0
    assert per_query("ndcg@1", labels, scores, qptr, "exp", empty_query=0)[0] == 0.0
    assert math.isnan(per_query("ndcg@1", labels, scores, qptr, empty_query=" SKIP")[0])


@pytest.mark.parametrize(
    "field",
    [{"empty_query": 3}, {"gain_mode": 9}, {"err_max_grade": 0.0}, {"err_max_grade": math.inf},
     {"map_cut": 2}, {"discount_mode": 5}],
)  # fmt: skip
def test_convention_rejects_invalid_codes(field):
    fields = dict(name="x", gain_mode=metrics.GAIN_EXP, discount_mode=metrics.DISCOUNT_LOG2P1,
                  short_query=metrics.SHORT_ZERO, empty_query=metrics.EMPTY_ZERO,
                  relevance_mode=metrics.RELEVANT_GAIN)  # fmt: skip
    fields.update(field)
    with pytest.raises(ValueError, match=f"convention 'x': invalid {next(iter(field))}"):
        Convention(**fields)


def test_unknown_convention_and_no_queries():
    with pytest.raises(UsageError, match=r"unknown convention 'trec_eval' \(known: letor4, letor3, mslr, trec, exp\)"):
        evaluate([1.0], [0.0], [0, 1], convention="trec_eval")
    empty = np.zeros(0)
    assert per_query("map", empty, empty, np.array([0])).shape == (0,)
    assert per_query("err@3", empty, empty, np.array([0]), "exp", tiebreak=np.zeros(0, dtype=np.int64)).shape == (0,)
    assert per_query_table(["auc", "map"], empty, empty, np.array([0]), judged=([0], []))["auc"].shape == (0,)
    with pytest.raises(UsageError, match="no queries to evaluate"):
        evaluate(empty, empty, np.array([0]))


def test_integer_inputs_are_accepted():
    np.testing.assert_array_equal(
        per_query("ndcg@2", np.array([0, 2], dtype=np.int32), np.array([1, 2]), np.array([0, 2], dtype=np.int32)),
        [1.0],
    )


# -- labels of 1024 and more (issue 10): 2^label overflows a double ------------------------------------
def test_trec_handles_labels_of_1024_and_more_like_the_reference():
    """trec's gain is the label itself; only ERR used 2^label (and 2^g_max, which raised
    OverflowError for any metric once a label reached 1024)."""
    labels = np.array([1024.0, 0.0, 3.0, 5000.0, 2.0, 1.0, 0.0])
    scores = np.array([0.5, 0.9, 0.1, 0.3, 0.2, 0.8, 0.4])
    qptr = np.array([0, 3, 7])
    fast = per_query_table(EVERY_METRIC, labels, scores, qptr, "trec")
    slow = reference_table(EVERY_METRIC, labels, scores, qptr, ref.CONVENTIONS["trec"])
    assert_tables_equal(fast, slow)
    assert all(np.isfinite(fast[m]).all() for m in fast)
    assert fast["err@1"][1] == 0.0  # R = (2^0 - 1) / 2^5000 for the top document of query 2


def test_err_probability_is_exact_for_integer_labels():
    for g_max in (2.0, 4.0, 30.0, 1023.0, 1100.0):
        for label in (0.0, 1.0, 2.0, 17.0, 52.0):
            if label <= g_max:
                expected = ref.err_probability(label, ref.CONVENTIONS["exp"], g_max)
                assert err_probability(label, 2.0**label - 1.0, GAIN_EXP, g_max) == expected


@pytest.mark.parametrize(
    "labels,qptr,bad",
    [([1024.0, 0.0], [0, 2], 1024.0), ([0.0, 1023.0, 1.0, 2.0], [0, 4], 1023.0), ([1.0, 0.0, 3000.0], [0, 1, 3], 3000.0)],
)
def test_exp_gains_that_overflow_are_refused(labels, qptr, bad):
    labels, qptr = np.array(labels), np.array(qptr)
    with pytest.raises(GainOverflow) as info:
        per_query_table(["ndcg@10", "map"], labels, np.arange(labels.shape[0], dtype=float), qptr, "exp")
    assert info.value.label == bad and labels[info.value.row] == bad and "2^label - 1" in str(info.value)


def test_exp_gains_just_below_the_limit_match_the_reference():
    labels = np.array([1000.0, 0.0, 999.0, 1022.0, 3.0])
    scores = np.array([0.1, 0.9, 0.5, 0.2, 0.3])
    qptr = np.array([0, 3, 5])
    fast = per_query_table(EVERY_METRIC, labels, scores, qptr, "exp")
    slow = reference_table(EVERY_METRIC, labels, scores, qptr, ref.CONVENTIONS["exp"])
    assert_tables_equal(fast, slow)
    assert np.isfinite(fast["ndcg@10"]).all() and np.isfinite(fast["dcg@10"]).all()
