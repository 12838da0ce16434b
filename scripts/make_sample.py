#!/usr/bin/env python3
"""Write the small bundled LETOR-style sample: OUTDIR/sample.{train,vali,test}.txt.

Usage: python scripts/make_sample.py OUTDIR

What is generated
-----------------
Three SVMlight/LETOR files (200 / 70 / 70 queries, 5-40 documents per query, 20 features)
shaped like MQ2008:

    <label> qid:<q> <i>:<v> ... # docid = D<q>-<n>

* Features are query-level min-max normalised into [0, 1] (as in LETOR's "QueryLevelNorm"
  files), so every query has some exact zeros; a few (query, feature) pairs are constant within
  the query and therefore all zero.
* Labels are graded 0/1/2 from a hidden linear model of the *written* features plus noise and a
  per-query offset (query difficulty), cut at fixed quantiles: roughly 65% 0s, 22% 1s, 13% 2s.
  A linear ranker trained on the train file clearly beats random ordering on vali/test.

Quirks, deliberately included to exercise the reader and the solver
-------------------------------------------------------------------
* About half of the rows are sparse: a random subset of features is zeroed and only the non-zero
  features are written. The other rows are dense and list all 20 features, explicit
  ``0.000000`` included.
* One row per file has no features at all (``1 qid:<q> # docid = ...``); it is labelled 1 and
  sits in a query that also has other labels, so it takes part in pairs.
* The train file has a one-document query (no pairs) and a one-label query (several documents
  all labelled 1, no pairs). Queries whose documents all have label 0 also occur naturally.
* qids increase within each file with occasional gaps and are unique across the three files.
* Every line carries a ``# docid = D<qid>-<n>`` comment (n = 1-based position in the query).

Determinism
-----------
Fixed seed, numpy.random.default_rng, and only integer draws and uniform doubles (no
transcendental functions); scores are accumulated one feature column at a time with elementwise
IEEE operations (no BLAS), and every number is formatted explicitly ('%.6f' for values, '%d' for
labels and qids). The output is the same bytes on every run and machine.
"""

from __future__ import annotations

import os
import sys

import numpy as np

SEED = 20240521
N_FEATURES = 20
SPLITS = (("train", 200), ("vali", 70), ("test", 70))
MIN_DOCS, MAX_DOCS = 5, 40
LABEL_QUANTILES = (0.65, 0.87)  # cumulative share of label 0, of labels <= 1
SPARSE_ROW_P = 0.5  # share of rows written sparsely
DROP_P = 0.5  # in a sparse row, chance that a feature is zeroed
CONST_P = 0.04  # chance that a (query, feature) is constant in the query (all zeros)

ONE_DOC_AT = 4  # train query (0-based position) with a single document
ONE_LABEL_AT = 9  # train query with several documents, all labelled ONE_LABEL
ONE_LABEL, ONE_LABEL_DOCS = 1, 6
EMPTY_ROW_AT = {"train": 2, "vali": 1, "test": 3}  # query holding the row with no features


def _noise(rng: np.random.Generator, n: int, scale: float) -> np.ndarray:
    """Approximately normal noise (Irwin-Hall: sum of 4 uniforms), no libm involved."""
    u = rng.random((n, 4))
    return (u[:, 0] + u[:, 1] + u[:, 2] + u[:, 3] - 2.0) * scale


def _doc_counts(rng: np.random.Generator, n_queries: int) -> np.ndarray:
    """Skewed towards short queries (LETOR-like, keeps the files small), long tail up to 40."""
    u = rng.random(n_queries)
    counts = MIN_DOCS + np.floor((MAX_DOCS - MIN_DOCS + 1) * u**6).astype(np.int64)
    return np.minimum(counts, MAX_DOCS)


def _query_features(rng: np.random.Generator, n_docs: int) -> np.ndarray:
    """Raw features for one query, min-max normalised per feature within the query."""
    raw = rng.random((n_docs, N_FEATURES))
    raw[:, 1::3] **= 2  # a few skewed features
    if n_docs == 1:
        return np.round(raw, 6)  # min-max of one document would be all zeros
    lo, hi = raw.min(axis=0), raw.max(axis=0)
    x = (raw - lo) / (hi - lo)
    x[:, rng.random(N_FEATURES) < CONST_P] = 0.0
    return np.round(x, 6)


def _build(rng: np.random.Generator):
    """All three splits as lists of (qid, X, sparse_row_mask) plus the raw scores."""
    w = np.round(rng.random(N_FEATURES) * 2.0 - 0.6, 3)  # mostly positive, some negative weights
    w[rng.permutation(N_FEATURES)[:4]] = 0.0  # a few irrelevant features
    splits, qid = {}, 0
    for name, n_queries in SPLITS:
        counts = _doc_counts(rng, n_queries)
        if name == "train":
            counts[ONE_DOC_AT] = 1
            counts[ONE_LABEL_AT] = ONE_LABEL_DOCS
        queries = []
        for qi, n in enumerate(counts):
            gap = int(rng.integers(1, 4)) if rng.random() < 0.15 else 0
            qid += 1 + (gap if qid else 0)
            x = _query_features(rng, int(n))
            sparse = rng.random(n) < SPARSE_ROW_P
            drop = (rng.random((n, N_FEATURES)) < DROP_P) & sparse[:, None]
            x[drop] = 0.0
            if qi == EMPTY_ROW_AT[name]:
                x[0] = 0.0
                sparse[0] = True
            score = np.zeros(n)
            for j in range(N_FEATURES):  # column by column: bit-identical everywhere
                score = score + x[:, j] * w[j]
            score = score + _noise(rng, int(n), 1.5) + _noise(rng, 1, 0.5)[0]
            queries.append([qid, x, sparse, score])
        splits[name] = queries
    return splits


def _labels(splits) -> None:
    """Cut the scores at fixed quantiles, then force the special queries/rows."""
    all_scores = np.concatenate([q[3] for queries in splits.values() for q in queries])
    t1, t2 = np.quantile(all_scores, LABEL_QUANTILES)
    for name, queries in splits.items():
        for qi, q in enumerate(queries):
            s = q[3]
            y = (s >= t1).astype(np.int64) + (s >= t2).astype(np.int64)
            if name == "train" and qi == ONE_LABEL_AT:
                y[:] = ONE_LABEL
            if qi == EMPTY_ROW_AT[name]:
                y[0] = 1
                if np.all(y == 1):  # make sure the empty row is in a query with pairs
                    y[-1] = 0
            q[3] = y


def _format_split(queries) -> list[str]:
    lines = []
    for qid, x, sparse, y in queries:
        for i in range(x.shape[0]):
            parts = ["%d qid:%d" % (y[i], qid)]
            row = x[i]
            cols = np.flatnonzero(row) if sparse[i] else range(N_FEATURES)
            parts.extend("%d:%.6f" % (j + 1, row[j]) for j in cols)
            parts.append("# docid = D%d-%d" % (qid, i + 1))
            lines.append(" ".join(parts) + "\n")
    return lines


def _summary(name: str, path: str, queries) -> str:
    y = np.concatenate([q[3] for q in queries])
    counts = np.bincount(y, minlength=3)
    n_docs = [len(q[3]) for q in queries]
    multi = sum(1 for q in queries if np.unique(q[3]).size >= 2)
    single = [q[0] for q in queries if np.unique(q[3]).size == 1 and len(q[3]) > 1]
    graded = [q[0] for q in queries if q[0] in single and q[3][0] > 0]  # one label, not all 0
    one_doc = [q[0] for q in queries if len(q[3]) == 1]
    empty = [q[0] for q in queries if any(s and not r.any() for s, r in zip(q[2], q[1]))]
    return (
        f"{os.path.basename(path)}: {len(queries)} queries (qid {queries[0][0]}-{queries[-1][0]}), "
        f"{len(y)} documents ({min(n_docs)}-{max(n_docs)} per query), "
        f"labels 0:{counts[0]} 1:{counts[1]} 2:{counts[2]}, "
        f"{multi} queries with >=2 labels, {len(single)} one-label (all-nonzero qid {graded or '-'}), "
        f"one-document qid {one_doc or '-'}, empty row in qid {empty}, "
        f"{os.path.getsize(path)} bytes"
    )


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    outdir = argv[0]
    os.makedirs(outdir, exist_ok=True)
    rng = np.random.default_rng(SEED)
    splits = _build(rng)
    _labels(splits)
    for name, queries in splits.items():
        path = os.path.join(outdir, f"sample.{name}.txt")
        with open(path, "w", encoding="ascii", newline="\n") as f:
            f.writelines(_format_split(queries))
        print(_summary(name, path, queries))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
