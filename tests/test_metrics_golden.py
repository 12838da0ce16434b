"""rankkit.metrics gives the same bits as before its kernel was split into per-metric helpers (issue 21).

The digests below were recorded with the single 245-line kernel of commit 5eefc24 (and its means
checked against tests/reference_metrics.py by tests/test_metrics.py): every metric, every
registered convention plus three custom ones, every empty-query rule, with and without a tiebreak
and judged labels, on synthetic queries (ties, short, empty, one long query) and on the bundled
sample and MQ2008 Fold1 (a feature column as the scores: many exact ties). Each digest is the
SHA-256 (first 16 hex digits) of the per-query float64 values of all those runs.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from rankkit import metrics
from rankkit.metrics import Convention, evaluate, per_query_table

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "sample.test.txt"
MQ2008 = Path("/work/shared/data/MQ2008/Fold1/test.txt")

METRIC_LIST = [
    "ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10", "ndcg@100", "ndcg", "dcg@1", "dcg@3", "dcg@10", "dcg@100",
    "p@1", "p@3", "p@5", "p@10", "p@100", "map", "map@1", "map@3", "map@10", "map@100", "mrr", "rr@1", "rr@3",
    "rr@10", "err@1", "err@3", "err@10", "err@100", "auc", "pairwise-accuracy", "kendall-tau",
]  # fmt: skip

CUSTOM = {
    "exp-truncate-one": Convention("exp-truncate-one", metrics.GAIN_EXP, metrics.DISCOUNT_LOG2P1, metrics.SHORT_TRUNCATE,
                                   metrics.EMPTY_ONE, metrics.RELEVANT_LABEL, relevance_threshold=2.0),
    "table5": Convention("table5", metrics.GAIN_TABLE, metrics.DISCOUNT_LETOR4, metrics.SHORT_TRUNCATE,
                         metrics.EMPTY_ZERO, metrics.RELEVANT_GAIN, gain_table=(0.0, 1.0, 3.0, 7.0, 15.0)),
    "linear": Convention("linear", metrics.GAIN_LINEAR, metrics.DISCOUNT_LOG2P1, metrics.SHORT_ZERO,
                         metrics.EMPTY_ZERO, metrics.RELEVANT_LABEL, relevance_threshold=1.0,
                         err_max_grade=3.0, map_cut=metrics.MAPCUT_R),
}  # fmt: skip
CONVENTIONS = ["letor4", "letor3", "mslr", "trec", "exp", *CUSTOM]
EMPTY_RULES = [None, "0", "1", "skip"]


def synthetic(seed: int = 2026, n_queries: int = 500):
    """Short queries with many exact score ties and empty queries, plus a few long ones (past the
    sort's 32-element runs) with near-continuous scores and labels 0..4, -1 and 0.5."""
    rng = np.random.default_rng(seed)
    sizes = rng.choice([1, 1, 2, 3, 5, 8, 10, 13, 40, 150], size=n_queries)
    qptr = np.zeros(n_queries + 1, dtype=np.int64)
    np.cumsum(sizes, out=qptr[1:])
    n = int(qptr[-1])
    labels = rng.choice(np.array([0.0, 0.0, 0.0, 1.0, 1.0, 2.0, 3.0, 4.0, -1.0, 0.5]), size=n)
    scores = np.round(rng.normal(size=n), 1)
    kind = rng.random(n_queries)
    for q in range(n_queries):
        a, b = qptr[q], qptr[q + 1]
        if kind[q] < 0.1:
            labels[a:b] = 0.0
        elif kind[q] < 0.15:
            scores[a:b] = 1.5
        elif kind[q] < 0.2:
            labels[a:b] = rng.choice([0.0, 3.0, 4.0], size=b - a)
    judged_ptr = [0]
    judged = []
    for q in range(n_queries):
        if rng.random() >= 0.05:
            extra = rng.choice([0.0, 1.0, 2.0], size=rng.integers(0, 4))
            judged += labels[qptr[q] : qptr[q + 1]].tolist() + extra.tolist()
        judged_ptr.append(len(judged))
    tiebreak = rng.integers(0, 5, size=n, dtype=np.int64)
    return labels, scores, qptr, tiebreak, (np.array(judged_ptr, dtype=np.int64), np.array(judged))


def letor_file(path: Path, column: int):
    """(labels, scores = feature `column`, qptr, tiebreak, judged) of a LETOR file, read with plain
    Python; judged = each query's own labels plus one unretrieved relevant document every third query."""
    labels, scores, qids = [], [], []
    with open(path) as fh:
        for line in fh:
            parts = line.split("#")[0].split()
            feats = dict(p.split(":") for p in parts[1:])
            labels.append(float(parts[0]))
            qids.append(feats.pop("qid"))
            scores.append(float(feats.get(str(column), 0.0)))
    starts = [0] + [i for i in range(1, len(qids)) if qids[i] != qids[i - 1]] + [len(qids)]
    qptr = np.array(starts, dtype=np.int64)
    labels = np.array(labels)
    jptr, jl = [0], []
    for q in range(qptr.shape[0] - 1):
        jl += labels[qptr[q] : qptr[q + 1]].tolist() + ([1.0] if q % 3 == 0 else [])
        jptr.append(len(jl))
    tiebreak = np.arange(labels.shape[0], dtype=np.int64)[::-1].copy()
    return labels, np.array(scores), qptr, tiebreak, (np.array(jptr, dtype=np.int64), np.array(jl))


def digest(data, convention) -> str:
    labels, scores, qptr, tiebreak, judged = data
    conv = CUSTOM.get(convention, convention)
    h = hashlib.sha256()
    for empty in EMPTY_RULES:
        for tb in (None, tiebreak):
            for jd in (None, judged):
                table = per_query_table(METRIC_LIST, labels, scores, qptr, conv, tiebreak=tb, judged=jd,
                                        empty_query=empty)
                for name in METRIC_LIST:
                    h.update(table[name].tobytes())
    return h.hexdigest()[:16]


DATASETS = {
    "synthetic": lambda: synthetic(),
    "sample-f1": lambda: letor_file(SAMPLE, 1),
    "mq2008-f7": lambda: letor_file(MQ2008, 7),
    "mq2008-f25": lambda: letor_file(MQ2008, 25),
}

GOLDEN: dict[tuple[str, str], str] = {
    ('synthetic', 'letor4'): 'ae86f5c5924121ff',
    ('synthetic', 'letor3'): '5f557644c122447f',
    ('synthetic', 'mslr'): 'f71870ab514d9582',
    ('synthetic', 'trec'): 'b89b4ea5c8e99932',
    ('synthetic', 'exp'): 'cb8a10866f0fa025',
    ('synthetic', 'exp-truncate-one'): '62a7b5dd25d887d2',
    ('synthetic', 'table5'): 'e4d1eb6f9fac6869',
    ('synthetic', 'linear'): 'd053f84798e255fe',
    ('sample-f1', 'letor4'): '487adfd0dd027ca8',
    ('sample-f1', 'letor3'): '5122a4638a8c80b8',
    ('sample-f1', 'mslr'): 'd1fa16b3ffb6d09a',
    ('sample-f1', 'trec'): 'aa9fe3d54162e697',
    ('sample-f1', 'exp'): '4ccc1ffe5f05636c',
    ('sample-f1', 'exp-truncate-one'): '29176d991f5dc827',
    ('sample-f1', 'table5'): '750cd4284f2b2551',
    ('sample-f1', 'linear'): '16b93a1d006e3420',
    ('mq2008-f7', 'letor4'): '80a726ee242a5fcc',
    ('mq2008-f7', 'letor3'): 'f07c050c01aa5251',
    ('mq2008-f7', 'mslr'): '350d59bc4a26bb00',
    ('mq2008-f7', 'trec'): 'f3c107ea4b1be0f0',
    ('mq2008-f7', 'exp'): 'da9f4859fdde115c',
    ('mq2008-f7', 'exp-truncate-one'): 'b8c3786f1c343290',
    ('mq2008-f7', 'table5'): '0f437c47c268405e',
    ('mq2008-f7', 'linear'): '9f1953410a0835dd',
    ('mq2008-f25', 'letor4'): '3a5cf3c6c5c94f2b',
    ('mq2008-f25', 'letor3'): 'aee78f40922ef251',
    ('mq2008-f25', 'mslr'): 'eb3c7815201725e2',
    ('mq2008-f25', 'trec'): '81b7b60a70c0ac05',
    ('mq2008-f25', 'exp'): '9e2d56a237b646c9',
    ('mq2008-f25', 'exp-truncate-one'): '0f9fc409c27fb83d',
    ('mq2008-f25', 'table5'): 'f6588e0bf521a5ec',
    ('mq2008-f25', 'linear'): '9f619446d12bea7d',
}

# rankkit.evaluate's defaults on MQ2008 Fold1 test, feature 25 as the scores, as repr of the floats
GOLDEN_MEANS: dict[str, float] = {
    'ndcg@1': 0.2713675213675214,
    'ndcg@3': 0.31748034430082855,
    'ndcg@5': 0.35494903695265434,
    'ndcg@10': 0.16550660557979816,
    'ndcg': 0.45337485549256556,
    'map': 0.3700750771400129,
    'p@10': 0.21089743589743593,
    'mrr': 0.43434886101552767,
    'err@10': 0.2503585256887831,
    'auc': 0.6287598496524552,
    'kendall-tau': 0.20427803015785614,
}


@pytest.fixture(scope="module")
def datasets():
    cache = {}

    def get(name):
        if name.startswith("mq2008") and not MQ2008.exists():
            pytest.skip("MQ2008 Fold1 is not on this machine")
        if name not in cache:
            cache[name] = DATASETS[name]()
        return cache[name]

    return get


@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("dataset", list(DATASETS))
def test_per_query_values_are_bit_identical_to_the_single_kernel(datasets, dataset, convention):
    assert digest(datasets(dataset), convention) == GOLDEN[dataset, convention]


CUTOFFS_ONLY = ["ndcg@1", "ndcg@3", "ndcg@10", "dcg@1", "dcg@5", "dcg@10", "map"]


@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("dataset", ["synthetic", "sample-f1", "mq2008-f7"])
def test_ideal_gains_selected_for_small_cutoffs_give_the_sorted_values(datasets, dataset, convention):
    """Without a metric over the whole list, the ideal gains down to a small cutoff are selected,
    not sorted: the same bits as in a call with `ndcg` (the digests above hold those)."""
    labels, scores, qptr, tiebreak, judged = datasets(dataset)
    conv = CUSTOM.get(convention, convention)
    for s in (scores, -scores):  # and the ranking reversed: every gain an insertion
        for jd in (None, judged):
            some = per_query_table(CUTOFFS_ONLY, labels, s, qptr, conv, tiebreak=tiebreak, judged=jd)
            full = per_query_table(CUTOFFS_ONLY + ["ndcg"], labels, s, qptr, conv, tiebreak=tiebreak, judged=jd)
            for name in CUTOFFS_ONLY:
                assert some[name].tobytes() == full[name].tobytes(), name


def test_mq2008_means_are_the_recorded_floats(datasets):
    labels, scores, qptr, _, _ = datasets("mq2008-f25")
    got = evaluate(labels, scores, qptr, metrics=list(GOLDEN_MEANS), convention="letor4")  # recorded under letor4
    assert {k: repr(v) for k, v in got.items()} == {k: repr(v) for k, v in GOLDEN_MEANS.items()}


def record() -> None:  # pragma: no cover - how the tables above were made
    for dataset in DATASETS:
        data = DATASETS[dataset]()
        for convention in CONVENTIONS:
            print(f"    ({dataset!r}, {convention!r}): {digest(data, convention)!r},")
    labels, scores, qptr, _, _ = DATASETS["mq2008-f25"]()
    names = ["ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10", "ndcg", "map", "p@10", "mrr", "err@10", "auc", "kendall-tau"]
    for k, v in evaluate(labels, scores, qptr, metrics=names, convention="letor4").items():
        print(f"    {k!r}: {v!r},")


if __name__ == "__main__":
    record()
