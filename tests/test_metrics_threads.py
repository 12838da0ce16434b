"""The metrics kernel over threads (rankkit.threads) and its per-metric helpers, called directly."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rankkit import threads
from rankkit.metrics import kernels, per_query_table

EVERY_METRIC = [
    "ndcg@1", "ndcg@3", "ndcg@10", "ndcg", "dcg@3", "dcg@10", "p@1", "p@10", "map", "map@3", "mrr",
    "rr@3", "err@3", "err@10", "auc", "pairwise-accuracy", "kendall-tau",
]  # fmt: skip


def queries(seed: int = 7, n_queries: int = 300):
    rng = np.random.default_rng(seed)
    sizes = rng.choice([1, 2, 5, 9, 17, 60], size=n_queries)
    qptr = np.zeros(n_queries + 1, dtype=np.int64)
    np.cumsum(sizes, out=qptr[1:])
    n = int(qptr[-1])
    labels = rng.choice(np.array([0.0, 0.0, 1.0, 2.0, 3.0, -1.0]), size=n)
    scores = np.round(rng.normal(size=n), 1)
    jptr = np.zeros(n_queries + 1, dtype=np.int64)
    jl = []
    for q in range(n_queries):
        jl += labels[qptr[q] : qptr[q + 1]].tolist() + [2.0] * int(q % 4 == 0)
        jptr[q + 1] = len(jl)
    tiebreak = rng.integers(0, 3, size=n, dtype=np.int64)
    return labels, scores, qptr, tiebreak, (jptr, np.array(jl))


def split_parts(monkeypatch):
    """Record the ranges the kernel runs on (and let small inputs split)."""
    monkeypatch.setattr(threads, "MIN_WORK_PER_THREAD", 1)
    seen = []
    real = threads.split

    def spy(*args):
        parts = real(*args)
        seen.append(parts)
        return parts

    monkeypatch.setattr(threads, "split", spy)
    return seen


@pytest.mark.parametrize("convention", ["letor4", "trec", "exp"])
def test_results_are_the_same_bits_for_any_number_of_threads(monkeypatch, convention):
    labels, scores, qptr, tiebreak, judged = queries()
    seen = split_parts(monkeypatch)
    tables = {}
    for n in (1, 2, 3):
        with threads.limited(n):
            tables[n] = per_query_table(EVERY_METRIC, labels, scores, qptr, convention, tiebreak=tiebreak,
                                        judged=judged)
    assert [len(parts) for parts in seen] == [1, 2, 3]  # one kernel run per call, whatever the empty rules
    for n in (2, 3):
        for name in EVERY_METRIC:
            assert tables[n][name].tobytes() == tables[1][name].tobytes(), (n, name)


def test_the_default_thread_count_splits_a_large_input():
    """With several threads allowed, a large input runs on several ranges, with the same bits."""
    labels, scores, qptr, _, _ = queries(seed=3, n_queries=4000)
    assert qptr[-1] >= 2 * threads.MIN_WORK_PER_THREAD
    with threads.limited(2):
        assert len(threads.split(qptr, qptr.shape[0] - 1, int(qptr[-1]))) == 2
        two = per_query_table(["ndcg@10", "map", "err@10"], labels, scores, qptr, "mslr")
    with threads.limited(1):
        one = per_query_table(["ndcg@10", "map", "err@10"], labels, scores, qptr, "mslr")
    assert all(two[m].tobytes() == one[m].tobytes() for m in one)


def run_range(codes, ks, labels, scores, qptr, out, lo, hi):
    """metrics_range under letor4's codes, without judged labels."""
    return kernels.metrics_range(
        np.asarray(codes, dtype=np.int64), np.asarray(ks, dtype=np.int64), labels, scores, qptr, False,
        np.zeros(1, dtype=np.int64), np.zeros(0), kernels.GAIN_TABLE, np.array([0.0, 1.0, 3.0]),
        kernels.DISCOUNT_LETOR4, kernels.SHORT_ZERO, np.full(len(codes), kernels.EMPTY_ZERO), kernels.RELEVANT_GAIN,
        0.0, kernels.MAPCUT_MIN_RK, kernels.PRECISION_HOLES, 2.0, out, lo, hi,
    )  # fmt: skip


def test_kernel_writes_only_its_range_and_returns_a_status():
    labels = np.array([0.0, 2.0, 1.0, 1.0, 0.0, 2.0])
    scores = np.array([0.3, 0.2, 0.1, 0.5, 0.4, 0.9])
    qptr = np.array([0, 3, 4, 6], dtype=np.int64)
    out = np.full((2, 3), -7.0)
    status = run_range([kernels.M_AP, kernels.M_RR], [kernels.K_ALL, 1], labels, scores, qptr, out, 1, 3)
    assert status == kernels.STATUS_OK
    assert (out[:, 0] == -7.0).all()
    assert out[:, 1].tolist() == [1.0, 1.0] and out[:, 2].tolist() == [1.0, 1.0]
    out[:] = -7.0
    status = run_range([kernels.M_AP, 99], [kernels.K_ALL, 1], labels, scores, qptr, out, 0, 3)
    assert status == kernels.STATUS_UNKNOWN_METRIC and (out == -7.0).all()


def test_per_metric_helpers_on_one_ranking():
    """Ranked gains 3, 0, 1 (letor4 discounts 1, 1, log2 3), relevant at positions 1 and 3."""
    gains = np.array([3.0, 0.0, 1.0])
    rel = np.array([True, False, True])
    discounts = np.array([1.0, 1.0, math.log2(3.0)])
    ideal = np.array([3.0, 1.0, 0.0])
    assert kernels.dcg(gains, 3, 2, discounts) == 3.0
    assert kernels.dcg(ideal, 3, 2, discounts) == 4.0
    assert kernels.ndcg(3.0, 4.0, 3, 2, kernels.SHORT_ZERO, 0.0) == 0.75
    assert kernels.ndcg(3.0, 4.0, 3, 5, kernels.SHORT_ZERO, 0.0) == 0.0  # fewer than k documents
    assert kernels.ndcg(3.0, 4.0, 3, 5, kernels.SHORT_TRUNCATE, 0.0) == 0.75
    assert math.isnan(kernels.ndcg(0.0, 0.0, 3, 2, kernels.SHORT_ZERO, np.nan))
    assert kernels.precision(rel, 3, 2, 2, False, kernels.PRECISION_HOLES) == 0.5
    assert kernels.precision(rel, 3, 5, 2, False, kernels.PRECISION_HOLES) == 0.4
    assert kernels.precision(rel, 3, 5, 2, False, kernels.PRECISION_SHORT_ZERO) == 0.0
    assert kernels.average_precision(rel, 3, kernels.K_ALL, 2, kernels.MAPCUT_MIN_RK, 0.0) == (1.0 + 2.0 / 3.0) / 2
    assert kernels.average_precision(rel, 3, 1, 2, kernels.MAPCUT_MIN_RK, 0.0) == 1.0
    assert kernels.average_precision(rel, 3, 1, 2, kernels.MAPCUT_R, 0.0) == 0.5
    assert kernels.reciprocal_rank(~rel, 3, kernels.K_ALL, 1, False) == 0.5
    assert kernels.reciprocal_rank(~rel, 3, 1, 1, False) == 0.0
    assert kernels.err(np.array([0.75, 0.0, 0.25]), 3, 3, True, False) == 0.75 + 0.25 * 0.25 / 3.0
    assert kernels.auc(3, 2, 1, 0.0) == 0.75
    assert kernels.kendall_tau(3, 0, 0, 0, 0, 0.0) == 1.0
    assert kernels.pairwise_accuracy(3, 1, 0, 0, 1, 0.0) == 0.5
