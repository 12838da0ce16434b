"""`--sampler stream`: stochastic pairwise descent without holding the file in memory (Sculley
2009, Sect. 3.1, "sampling without an index"), for training files larger than RAM.

The file is read twice, in chunks cut at line boundaries; at most one chunk and one query are in
memory at a time.

  pass 1  counts the preference pairs of every query (labels and qids only) and the features;
  pass 2  walks the queries in file order and gives query q the steps
          round(T * P_<=q / |P|) - round(T * P_<q / |P|), so that every pair is equally likely to
          be stepped on (in expectation, as with the uniform sampler); inside a query, pairs are
          drawn by rejection: two documents uniformly at random until their labels differ.

Unlike the in-memory samplers, the steps come in file order, query after query; the learning-rate
schedule runs over the whole pass. Reproducible from the seed (one derived seed per query).

How this differs from the paper's "sampling without an index" (Sect. 3.1), which draws two
examples from the whole stream until they share a query and differ in label: the distribution over
pairs is the same (uniform over P: each query gets its share of the steps, then a uniform pair by
rejection inside it), but (1) a query's steps are consecutive, in file order, instead of spread
over the run, and (2) rejection runs inside one query, O(m^2 / pairs of the query) draws per pair,
instead of over the stream, O(|D|^2 / |P|) (on MQ2008 Fold1: |D|^2 / 2|P| = 886 draws per pair
over the whole file, and random access to any two documents of it, which a stream without an index
cannot give: the paper's method needs the data in memory or a reservoir).
"""

from __future__ import annotations

import hashlib
import time

import numpy as np

from rankkit.data import COMPACT_MIN_FEATURES
from rankkit.errors import DataError, UsageError
from rankkit.io.blocks import stream_queries
from rankkit.compiler.dispatch import njit
from rankkit.solvers import _sgd_kernels as K

CHUNK_BYTES = 64 << 20


def _pairs(labels: np.ndarray) -> int:
    _, counts = np.unique(labels, return_counts=True)
    n = int(labels.shape[0])
    return (n * n - int(np.sum(counts.astype(np.int64) ** 2))) // 2


@njit
def _stream_query(data, indices, indptr, y, n_steps, seed, learner, eta_mode, eta0, lam, C, t_start, w, eta_c=K.BASIC_T0):
    """n_steps steps on pairs of one query drawn by rejection. Returns (status, sum of hinge losses)."""
    np.random.seed(seed)
    n = y.shape[0]
    pa = np.empty(1, dtype=np.int64)
    pb = np.empty(1, dtype=np.int64)
    hinge = 0.0
    for k in range(n_steps):
        a = np.random.randint(0, n)
        b = np.random.randint(0, n)
        while y[a] == y[b]:
            a = np.random.randint(0, n)
            b = np.random.randint(0, n)
        if y[a] < y[b]:
            a, b = b, a
        pa[0] = a
        pb[0] = b
        p = 0.0
        for t in range(indptr[a], indptr[a + 1]):
            p += data[t] * w[indices[t]]
        for t in range(indptr[b], indptr[b + 1]):
            p -= data[t] * w[indices[t]]
        if p < 1.0:
            hinge += 1.0 - p
        eta = K.eta_at(eta_mode, eta0, lam, t_start + k + 1, eta_c)
        status = K.step(learner, eta, lam, C, data, indices, indptr, pa, pb, w)
        if status != 0:
            return status, hinge
    return 0, hinge


def train_stream(path: str, solver, zero_based: bool = False, log=None, chunk_bytes: int = CHUNK_BYTES, groups=None):
    """Run `solver` (a StochasticRankSVM) over the file in two streaming passes; `groups` (a
    rankkit.io.groups.Groups) gives the queries of a file without qid. Returns (w, facts) with
    facts = n_rows, n_queries, n_pairs, n_features, train_time, sha256, bytes and feature_index:
    None (w has one weight per feature) or the sorted columns w's entries belong to."""
    t0 = time.perf_counter()
    hasher = hashlib.sha256()
    if solver.learner in ("pair-sgd", "query-sgd"):
        raise UsageError(f"--sampler stream is for the sofia-ml learners, not --solver {solver.learner}")
    if solver.batch_size != 1:
        raise UsageError("--sampler stream takes one pair per step (--batch-size 1)")
    if solver.ties:
        raise UsageError("--ties does not work with --sampler stream (it draws pairs of one query at a time)")
    pairs, n_rows, n_features, seen = [], 0, 0, []
    for _, labels, _, indices, _, _ in stream_queries(path, zero_based, chunk_bytes, hasher, groups):
        pairs.append(_pairs(labels))
        n_rows += labels.shape[0]
        if indices.shape[0]:
            n_features = max(n_features, int(indices.max()) + 1)
            seen.append(np.unique(indices))
            if len(seen) > 64:  # bounded memory: merge as we go
                seen = [np.unique(np.concatenate(seen))]
    used = np.unique(np.concatenate(seen)).astype(np.int64) if seen else np.zeros(0, dtype=np.int64)
    if n_features <= COMPACT_MIN_FEATURES or used.shape[0] > n_features // 2:
        used = None  # dense: every column index is its own position
    # With few of many indices occurring (a mistyped 100000000:1), w lives on the columns that occur:
    # a column that never occurs keeps weight exactly 0, so this is the same model (a sparse one).
    total = int(sum(pairs))
    if total == 0:
        raise DataError(path, "no preference pairs: every query has only one relevance level, so there is nothing to rank")
    if log:
        log(f"stream pass 1: {n_rows} documents, {len(pairs)} queries, {total} pairs, {n_features} features "
            f"in {time.perf_counter() - t0:.3f}s")
    T = solver.iterations
    w = np.zeros(n_features if used is None else used.shape[0])
    done, cum, hinge = 0, 0, 0.0
    codes = (K.LEARNERS[solver.learner], K.ETA[solver.eta], solver.eta0, solver.lam, solver.C)
    second = hashlib.sha256()
    changed = DataError(path, "changed between the two passes of --sampler stream; train again once it is complete")
    for q, (_, labels, data, indices, indptr, line) in enumerate(stream_queries(path, zero_based, chunk_bytes, second, groups)):
        if q >= len(pairs) or _pairs(labels) != pairs[q] or (indices.shape[0] and int(indices.max()) >= n_features):
            raise changed
        cum += pairs[q]
        upto = int(round(T * cum / total))
        n_steps = upto - done
        if n_steps <= 0:
            continue
        seed = (solver.seed * 1_000_003 + 7919 * (q + 1)) % (2**31 - 1)
        if used is not None:
            indices = np.searchsorted(used, indices)
        status, h = _stream_query(data, indices.astype(np.int32), indptr.astype(np.int64), labels, n_steps, seed,
                                  *codes, done, w, solver.eta_c)
        if status != K.OK:
            raise UsageError(f"{solver.name}: {K.STATUS_MESSAGES[status]} (query starting at line {line})")
        hinge += h
        done = upto
        if log and (q + 1) % max(1, len(pairs) // 10) == 0:
            log(f"stream pass 2: {done} steps, query {q + 1}/{len(pairs)}, sampled-pair hinge {hinge / done:.6f}")
    if second.digest() != hasher.digest():
        raise changed
    facts = {"n_rows": n_rows, "n_queries": len(pairs), "n_pairs": total, "n_features": n_features,
             "train_time": time.perf_counter() - t0, "sampled_hinge": hinge / max(done, 1),
             "sha256": hasher.hexdigest(), "feature_index": used}
    return w, facts
