"""Stochastic pairwise descent kernels (rankkit/solvers/_sgd_kernels.py): the pair index, the
samplers' distributions, every learner and schedule against the dense NumPy reference fed the same
pairs, hand-computed single steps, the scale trick, reproducibility and status codes."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chisquare

from rankkit.data import Dataset
from rankkit.solvers import _sgd_kernels as K
from tests.conftest import make_dataset
from tests.reference import explicit_pairs
from tests.reference_sgd import (RTOL_SGD, dense_rows, pair_probabilities, reference_spd, reference_step,
                                 sofia_no_pair_probability, tied_pairs)

ETA_MODES = list(K.ETA)
EMPTY_I = np.zeros(0, dtype=np.int64)
EMPTY_F = np.zeros(0)


def _close(a, b, rtol=RTOL_SGD):
    scale = max(1.0, float(np.max(np.abs(b))))
    np.testing.assert_allclose(a, b, rtol=0, atol=rtol * scale)


def _csr(X):
    X = np.asarray(X, dtype=np.float64)
    data, indices, indptr = [], [], [0]
    for row in X:
        nz = np.flatnonzero(row)
        data.extend(row[nz])
        indices.extend(nz)
        indptr.append(len(data))
    return np.array(data, np.float64), np.array(indices, np.int32), np.array(indptr, np.int64)


def _draws(index, sampler, seed, n):
    a = np.empty(n, np.int64)
    b = np.empty(n, np.int64)
    assert K.sample_pairs(*index, K.SAMPLERS[sampler], seed, n, a, b) == K.OK
    return a, b


def _run(ds, index, sampler, learner, eta_mode, eta0, lam, C, iterations, batch_size, seed, w0=None, trace_iters=EMPTY_I,
         eta_c=K.BASIC_T0, ties=False):
    w = np.zeros(ds.n_features) if w0 is None else np.array(w0, dtype=np.float64)
    trace = np.full(len(trace_iters), np.nan)
    tpair = K.tie_index(index[1]) if ties else K.NO_TIE_INDEX
    status = K.run_spd(
        ds.data, ds.indices, ds.indptr, *index,
        K.SAMPLERS[sampler], K.LEARNERS[learner], K.ETA[eta_mode],
        eta0, lam, C, iterations, batch_size, seed, w, np.asarray(trace_iters, np.int64), trace, 0, eta_c, ties, tpair,
    )  # fmt: skip
    return status, w, trace


# -- index --------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 3])
def test_index_matches_brute_force(seed):
    ds = make_dataset(seed=seed, integer_features=seed == 3, n_labels=4)
    doc, gptr, qgptr, gpair, qpair, qlist = K.build_index(ds.y, ds.qptr)
    assert sorted(doc.tolist()) == list(range(ds.n_rows))
    pairs = explicit_pairs(ds.y, ds.qptr)
    for q in range(ds.n_queries):
        s, e = ds.qptr[q], ds.qptr[q + 1]
        labels = np.unique(ds.y[s:e])
        groups = range(qgptr[q], qgptr[q + 1])
        assert len(groups) == len(labels)
        below = 0
        for g, label in zip(groups, labels):
            rows = doc[gptr[g] : gptr[g + 1]]
            assert rows.tolist() == [r for r in range(s, e) if ds.y[r] == label]  # file order
            assert gpair[g + 1] - gpair[g] == len(rows) * below
            below += len(rows)
        in_q = (pairs[:, 0] >= s) & (pairs[:, 0] < e)
        assert qpair[q + 1] - qpair[q] == in_q.sum() == ds.pairs_per_query[q]
        assert qpair[q] == gpair[qgptr[q]]
    assert qlist.tolist() == [q for q in range(ds.n_queries) if ds.levels_per_query[q] >= 2]
    assert all(a.dtype == np.int64 for a in (doc, gptr, qgptr, gpair, qpair, qlist))


def test_index_counts_are_int64():
    n = 200_000
    y = np.zeros(n)
    y[::2] = 1.0
    index = K.build_index(y, np.array([0, n], np.int64))
    assert index[4][-1] == (n // 2) ** 2 == 10**10
    a, b = _draws(index, "uniform", 5, 20_000)
    assert np.all(y[a] > y[b])
    # every pair number reachable: the drawn a and b spread over the whole query
    assert a.min() < n // 100 and a.max() > n - n // 100 and b.max() > n - n // 100


# -- samplers -----------------------------------------------------------------------------------

# unequal query sizes and label counts; labels interleaved in file order; a one-level query and a
# one-document query that must never be sampled
SAMPLER_Y = np.array([0, 0, 2, 1, 0, 1, 1, 0, 1, 1, 3, 1, 3, 2, 0, 1, 2, 0, 2, 0, 2, 0, 0, 1, 2, 2], np.float64)
SAMPLER_QPTR = np.array([0, 5, 7, 14, 15, 17, 26], np.int64)


def _check_draws(y, qptr, a, b):
    qa = np.searchsorted(qptr, a, side="right") - 1
    qb = np.searchsorted(qptr, b, side="right") - 1
    assert np.all(qa == qb), "cross-query pair"
    assert np.all(y[a] > y[b]), "tied or reversed pair"


@pytest.mark.parametrize("sampler", ["indexed", "uniform", "query-norm"])
def test_sampler_distribution(sampler):
    y, qptr = SAMPLER_Y, SAMPLER_QPTR
    n_draws = 200_000
    a, b = _draws(K.build_index(y, qptr), sampler, 12345, n_draws)
    _check_draws(y, qptr, a, b)
    pairs, prob = pair_probabilities(y, qptr, sampler)
    assert len(pairs) == 49 and abs(prob.sum() - 1.0) < 1e-12
    code = {(int(i), int(j)): k for k, (i, j) in enumerate(pairs)}
    counts = np.bincount([code[(int(i), int(j))] for i, j in zip(a, b)], minlength=len(pairs))
    assert counts.sum() == n_draws
    assert chisquare(counts, prob * n_draws).pvalue > 1e-4
    if sampler != "uniform":  # the test has the power to tell the distributions apart
        assert chisquare(counts, np.full(len(pairs), n_draws / len(pairs))).pvalue < 1e-10


def test_indexed_is_uniform_on_balanced_queries():
    # equal query sizes, equal level sizes: the paper's condition for the constant-time sampler
    y = np.array([0, 1, 0, 1, 2, 2, 1, 0, 0, 1, 2, 2, 1, 0, 2, 1, 0, 2], np.float64)
    qptr = np.array([0, 6, 12, 18], np.int64)
    _, p_idx = pair_probabilities(y, qptr, "indexed")
    _, p_uni = pair_probabilities(y, qptr, "uniform")
    np.testing.assert_allclose(p_idx, p_uni, rtol=1e-12)


def test_roc_sampler_on_one_query():
    rng = np.random.default_rng(4)
    y = (rng.random(300) < 0.1).astype(np.float64)  # 0.1 positives, like a minority class
    qptr = np.array([0, 300], np.int64)
    index = K.build_index(y, qptr)
    a, b = _draws(index, "roc", 7, 100_000)
    _check_draws(y, qptr, a, b)
    a_u, b_u = _draws(index, "uniform", 7, 100_000)
    assert np.array_equal(a, a_u) and np.array_equal(b, b_u)
    # uniform over positives x negatives: each positive and each negative equally often
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    assert chisquare(np.bincount(a, minlength=300)[pos]).pvalue > 1e-4
    assert chisquare(np.bincount(b, minlength=300)[neg]).pvalue > 1e-4
    ds = make_dataset()
    out = np.zeros(1, np.int64)
    assert K.sample_pairs(*K.build_index(ds.y, ds.qptr), K.SAMPLERS["roc"], 0, 1, out, out) == K.ROC_NEEDS_ONE_QUERY


@pytest.mark.parametrize("sampler", list(K.SAMPLERS))
def test_samplers_on_awkward_data(sampler):
    """One-document queries, a one-level query, ties, duplicates: every draw a valid pair."""
    ds = make_dataset(seed=3, integer_features=True, n_labels=4)
    y, qptr = ds.y, ds.qptr
    if sampler == "roc":
        y, qptr = (ds.y > 1).astype(np.float64), np.array([0, ds.n_rows], np.int64)
    a, b = _draws(K.build_index(y, qptr), sampler, 3, 50_000)
    if sampler == "sofia":  # no pair when the first document's query has one label
        assert np.all((a < 0) == (b < 0))
        a, b = a[a >= 0], b[b >= 0]
    _check_draws(y, qptr, a, b)
    pairs = set(map(tuple, explicit_pairs(y, qptr).tolist()))
    assert set(zip(a.tolist(), b.tolist())) <= pairs


# -- learners vs the reference ------------------------------------------------------------------

CASES = [
    ("sgd", "pegasos", 1.0, 0.05, 1.0, "uniform"),
    ("sgd", "basic", 0.3, 0.05, 1.0, "indexed"),
    ("sgd", "constant", 0.02, 0.5, 1.0, "query-norm"),
    ("pegasos", "pegasos", 1.0, 0.05, 1.0, "indexed"),
    ("pegasos", "basic", 0.5, 0.2, 1.0, "uniform"),
    ("pegasos", "constant", 0.1, 1.0, 1.0, "query-norm"),
    ("pa", "pegasos", 1.0, 0.0, 0.3, "indexed"),
    ("pa", "constant", 1.0, 0.0, 100.0, "uniform"),
    ("romma", "pegasos", 1.0, 0.0, 1.0, "uniform"),
    ("romma", "constant", 1.0, 0.0, 1.0, "query-norm"),
    ("logreg", "pegasos", 1.0, 0.05, 1.0, "uniform"),
    ("logreg", "basic", 1.0, 0.01, 1.0, "indexed"),
    ("logreg", "constant", 0.05, 0.1, 1.0, "query-norm"),
    ("margin-perceptron", "pegasos", 1.0, 0.1, 1.0, "indexed"),
    ("margin-perceptron", "basic", 0.2, 0.0, 1.0, "uniform"),
    ("margin-perceptron", "constant", 0.01, 0.0, 1.0, "query-norm"),
    ("perceptron", "constant", 0.5, 0.0, 1.0, "uniform"),
    ("perceptron", "pegasos", 1.0, 0.1, 1.0, "sofia"),
    ("sgd", "pegasos", 1.0, 0.05, 1.0, "sofia"),
    ("pa", "constant", 1.0, 0.0, 1e7, "sofia"),
]


def separable_dataset(seed=0):
    """Labels are levels of a linear score within each query: every pair is separable (the regime
    ROMMA is built for); unequal query sizes, a one-document query, sparse rows."""
    rng = np.random.default_rng(seed)
    sizes = [3, 8, 1, 12, 6, 20]
    qptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n, d = int(qptr[-1]), 5
    X = rng.standard_normal((n, d))
    X[rng.random((n, d)) < 0.3] = 0.0
    score = X @ rng.standard_normal(d)
    y = np.zeros(n)
    for q in range(len(sizes)):
        s, e = qptr[q], qptr[q + 1]
        y[s:e] = np.digitize(score[s:e], np.quantile(score[s:e], [0.4, 0.8]))
    data, indices, indptr = _csr(X)
    return Dataset(data, indices, indptr, y, np.repeat(np.arange(len(sizes)), sizes), qptr, d).validate()


@pytest.mark.parametrize("which", ["awkward", "separable"])
@pytest.mark.parametrize("learner,eta_mode,eta0,lam,C,sampler", CASES)
def test_run_spd_matches_reference(learner, eta_mode, eta0, lam, C, sampler, which):
    ds = make_dataset() if which == "awkward" else separable_dataset()
    index = K.build_index(ds.y, ds.qptr)
    X = dense_rows(ds.data, ds.indices, ds.indptr, ds.n_features)
    T, seed = 500, 11
    if learner == "romma" and which == "awkward":
        # on non-separable pairs ROMMA's ||w|| grows geometrically (~1e12 after 500 steps) and
        # ||x||^2 ||w||^2 - p^2 cancels: any two float64 evaluations drift apart (1e-6 by step
        # 500, in the reference as much as in the kernel); 100 steps stay well conditioned
        T = 100
    trace_iters = np.array([1, 50, 51, 99, 100] + ([300, 500] if T == 500 else []), np.int64)
    status, w, trace = _run(ds, index, sampler, learner, eta_mode, eta0, lam, C, T, 1, seed, trace_iters=trace_iters)
    assert status == K.OK
    pa, pb = _draws(index, sampler, seed, T)
    w_ref, trace_ref = reference_spd(X, pa, pb, learner, eta_mode, eta0, lam, C, T, 1, trace_iters=trace_iters)
    assert np.any(w_ref != 0.0)
    _close(w, w_ref)
    _close(trace, trace_ref)


@pytest.mark.parametrize("learner", ["sgd", "pegasos", "logreg", "margin-perceptron", "perceptron"])
def test_minibatch_matches_reference(learner):
    ds = make_dataset(seed=3, integer_features=True, n_labels=4)
    index = K.build_index(ds.y, ds.qptr)
    X = dense_rows(ds.data, ds.indices, ds.indptr, ds.n_features)
    T, b, seed = 300, 5, 2
    trace_iters = np.array([10, 300], np.int64)
    status, w, trace = _run(ds, index, "uniform", learner, "basic", 0.5, 0.1, 1.0, T, b, seed, trace_iters=trace_iters)
    assert status == K.OK
    pa, pb = _draws(index, "uniform", seed, T * b)
    w_ref, trace_ref = reference_spd(X, pa, pb, learner, "basic", 0.5, 0.1, 1.0, T, b, trace_iters=trace_iters)
    _close(w, w_ref)
    _close(trace, trace_ref)


def test_warm_start_matches_reference():
    ds = make_dataset()
    index = K.build_index(ds.y, ds.qptr)
    X = dense_rows(ds.data, ds.indices, ds.indptr, ds.n_features)
    w0 = np.random.default_rng(0).standard_normal(ds.n_features)
    for learner in ("romma", "pegasos"):
        status, w, _ = _run(ds, index, "indexed", learner, "constant", 0.05, 0.3, 1.0, 200, 1, 9, w0=w0)
        assert status == K.OK
        pa, pb = _draws(index, "indexed", 9, 200)
        _close(w, reference_spd(X, pa, pb, learner, "constant", 0.05, 0.3, 1.0, 200, 1, w0=w0)[0])


# -- single steps worked out by hand --------------------------------------------------------------

# rows: 0 = (1, 0), 1 = (0, 1), 2 = (3, 4), 3 = (0, 0) empty, 4 = (1, 2), 5 = (1, 0) again
HAND = _csr([[1, 0], [0, 1], [3, 4], [0, 0], [1, 2], [1, 0]])


def _step(learner, eta, lam, C, pairs, w):
    w = np.array(w, dtype=np.float64)
    pa = np.array([p[0] for p in pairs], np.int64)
    pb = np.array([p[1] for p in pairs], np.int64)
    status = K.step(K.LEARNERS[learner], eta, lam, C, *HAND, pa, pb, w)
    return status, w


def test_sgd_step_shrinks_then_adds():
    # x = row0 - row1 = (1, -1); w = (0.5, 0.25): p = 0.25 < 1
    # w <- (1 - 0.1 * 2) w + 0.1 x = 0.8 (0.5, 0.25) + (0.1, -0.1) = (0.5, 0.1)
    st, w = _step("sgd", 0.1, 2.0, 1.0, [(0, 1)], [0.5, 0.25])
    assert st == K.OK
    _close(w, [0.5, 0.1])
    # w = (1, -2): p = 1 + 2 = 3 >= 1, shrink only: (0.8, -1.6)
    st, w = _step("sgd", 0.1, 2.0, 1.0, [(0, 1)], [1.0, -2.0])
    _close(w, [0.8, -1.6])
    # mini-batch of 2: x1 = (1, -1) (p = 0.25, violates), x2 = row2 - row3 = (3, 4) (p = 2.5, does not):
    # w <- 0.8 w + (0.1 x1) / 2 = (0.4, 0.2) + (0.05, -0.05) = (0.45, 0.15)
    st, w = _step("sgd", 0.1, 2.0, 1.0, [(0, 1), (2, 3)], [0.5, 0.25])
    assert st == K.OK
    _close(w, [0.45, 0.15])


def test_pa_step_clipped_at_C():
    # w = 0, x = (1, -1): loss 1, ||x||^2 = 2, loss / ||x||^2 = 0.5 > C = 0.1: tau = 0.1
    st, w = _step("pa", 0.0, 0.0, 0.1, [(0, 1)], [0.0, 0.0])
    assert st == K.OK
    _close(w, [0.1, -0.1])
    # C = 10: tau = 0.5, w = (0.5, -0.5), and then p = 1 exactly: no further update
    st, w = _step("pa", 0.0, 0.0, 10.0, [(0, 1)], [0.0, 0.0])
    _close(w, [0.5, -0.5])
    st, w2 = _step("pa", 0.0, 0.0, 10.0, [(0, 1)], w)
    assert np.array_equal(w2, w)
    # x = row0 - row5 = 0: skipped
    st, w = _step("pa", 0.0, 0.0, 10.0, [(0, 5)], [0.3, 0.2])
    assert st == K.OK and np.array_equal(w, [0.3, 0.2])


def test_pegasos_projection_binds():
    # lam = 0.25: radius 1/sqrt(lam) = 2. First Pegasos step: eta = 1/(lam * 1) = 4, shrink factor
    # 1 - 4 * 0.25 = 0, so w = 4 x = (4, -4), norm 4 sqrt(2) > 2: projected to (sqrt 2, -sqrt 2)
    # (w = (3, 7) before: p = 3 - 7 = -4 < 1, and the factor 0 wipes it)
    st, w = _step("pegasos", 4.0, 0.25, 1.0, [(0, 1)], [3.0, 7.0])
    assert st == K.OK
    _close(w, [np.sqrt(2.0), -np.sqrt(2.0)])
    assert np.isclose(np.linalg.norm(w), 2.0, rtol=1e-15)
    # eta = 0.5 from 0: w = (0.5, -0.5), norm 0.71 < 2: the ball does not bind
    st, w = _step("pegasos", 0.5, 0.25, 1.0, [(0, 1)], [0.0, 0.0])
    _close(w, [0.5, -0.5])


def test_romma_step_by_hand():
    # w = (2, 1), x = row1 - row0 = (-1, 1): p = -2 + 1 = -1 < 1, ||x||^2 = 2, ||w||^2 = 5
    # D = 2 * 5 - (-1)^2 = 9, c = (10 - (-1)) / 9 = 11/9, d = 5 (1 - (-1)) / 9 = 10/9
    # w <- 11/9 (2, 1) + 10/9 (-1, 1) = (12/9, 21/9) = (4/3, 7/3)
    # (ROMMA's two constraints hold: w.x = -4/3 + 7/3 = 1 and w.w_old = 8/3 + 7/3 = 5 = ||w_old||^2)
    st, w = _step("romma", 0.0, 0.0, 1.0, [(1, 0)], [2.0, 1.0])
    assert st == K.OK
    _close(w, [4.0 / 3.0, 7.0 / 3.0])
    # from w = 0: w <- x / ||x||^2; x = row4 - row5 = (0, 2): w = (0, 0.5)
    st, w = _step("romma", 0.0, 0.0, 1.0, [(4, 5)], [0.0, 0.0])
    _close(w, [0.0, 0.5])
    # x parallel to w: D = 0, no update; x = 0: no update
    st, w = _step("romma", 0.0, 0.0, 1.0, [(4, 5)], [0.0, 0.25])
    assert st == K.OK and np.array_equal(w, [0.0, 0.25])
    st, w = _step("romma", 0.0, 0.0, 1.0, [(0, 5)], [0.0, 0.0])
    assert np.array_equal(w, [0.0, 0.0])


def test_logreg_and_margin_perceptron_steps():
    # w = 0: p = 0, 1 / (1 + e^0) = 1/2; eta = 0.5, lam = 1: w <- 0.5 * 0 + 0.25 x
    st, w = _step("logreg", 0.5, 1.0, 1.0, [(0, 1)], [0.0, 0.0])
    _close(w, [0.25, -0.25])
    # margin-perceptron: no shrink, w <- w + eta x while p < 1
    st, w = _step("margin-perceptron", 0.5, 1.0, 1.0, [(0, 1)], [1.0, 1.0])
    _close(w, [1.5, 0.5])
    st, w = _step("margin-perceptron", 0.5, 1.0, 1.0, [(0, 1)], [1.0, -1.0])  # p = 2
    assert np.array_equal(w, [1.0, -1.0])


@pytest.mark.parametrize("learner", list(K.LEARNERS))
def test_step_matches_reference_step(learner):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((6, 4))
    X[rng.random(X.shape) < 0.3] = 0.0
    data, indices, indptr = _csr(X)
    for trial in range(20):
        w = rng.standard_normal(4) * rng.choice([0.01, 0.3, 3.0])
        nb = 1 if learner in ("pa", "romma") else int(rng.integers(1, 4))
        pa = rng.integers(0, 6, nb).astype(np.int64)
        pb = rng.integers(0, 6, nb).astype(np.int64)
        eta, lam, C = 0.3, 0.5, 0.7
        w_ref, _ = reference_step(learner, eta, lam, C, X[pa] - X[pb], w)
        w_k = w.copy()
        assert K.step(K.LEARNERS[learner], eta, lam, C, data, indices, indptr, pa, pb, w_k) == K.OK
        _close(w_k, w_ref)


@pytest.mark.parametrize("learner", list(K.LEARNERS))
def test_step_on_unsorted_repeated_columns(learner):
    """CSR rows with columns out of order, a column repeated within a row (values add up) and
    columns shared by the two rows: margins, ||x||^2 and the tracked ||w||^2 (checked through the
    Pegasos projection) still follow the dense reference."""
    data = np.array([1.0, -2.0, 0.5, 3.0, 0.25, -1.0, 2.0, 0.75])
    indices = np.array([3, 0, 3, 1, 2, 2, 0, 3], np.int32)  # row 0: cols 3, 0, 3; row 1: 1, 2, 2, 0, 3
    indptr = np.array([0, 3, 8], np.int64)
    X = dense_rows(data, indices, indptr, 4)
    rng = np.random.default_rng(7)
    for lam in (0.05, 5.0):  # the projection binds for the large lambda
        w = rng.standard_normal(4) * 0.2
        pa, pb = np.array([1], np.int64), np.array([0], np.int64)
        w_ref, _ = reference_step(learner, 0.4, lam, 0.9, X[pa] - X[pb], w)
        w_k = w.copy()
        assert K.step(K.LEARNERS[learner], 0.4, lam, 0.9, data, indices, indptr, pa, pb, w_k) == K.OK
        _close(w_k, w_ref)


def test_pa_on_near_identical_rows():
    """||x||^2 is summed from x_a - x_b itself: for rows 1e-9 apart it is exact (1e-18), where
    ||x_a||^2 + ||x_b||^2 - 2 x_a.x_b would be rounding noise of order 1e-16."""
    X = np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0 - 1e-9]])
    data, indices, indptr = _csr(X)
    w = np.zeros(3)
    assert K.step(K.LEARNERS["pa"], 0.0, 0.0, np.inf, data, indices, indptr, np.array([0]), np.array([1]), w) == K.OK
    x = X[0] - X[1]
    _close(w, x / (x @ x), rtol=1e-14)  # tau = 1 / ||x||^2: the new margin is exactly 1
    assert abs(w @ x - 1.0) < 1e-12


# -- the scale trick ------------------------------------------------------------------------------


def test_rescaling_path_matches_reference():
    """Shrink factor 1 - eta lam = 1/2 at every step: without multiplying s back into v, s would
    underflow to 0 after ~1075 steps (2^-1075). With it, w equals the dense reference."""
    ds = make_dataset()
    index = K.build_index(ds.y, ds.qptr)
    X = dense_rows(ds.data, ds.indices, ds.indptr, ds.n_features)
    T = 2000
    for learner in ("sgd", "logreg", "pegasos"):
        status, w, _ = _run(ds, index, "uniform", learner, "constant", 0.5, 1.0, 1.0, T, 1, 4)
        assert status == K.OK and np.all(np.isfinite(w))
        pa, pb = _draws(index, "uniform", 4, T)
        _close(w, reference_spd(X, pa, pb, learner, "constant", 0.5, 1.0, 1.0, T, 1)[0])


def test_million_pegasos_steps_tiny_lambda():
    ds = make_dataset()
    index = K.build_index(ds.y, ds.qptr)
    X = dense_rows(ds.data, ds.indices, ds.indptr, ds.n_features)
    lam = 1e-9
    status, w, trace = _run(
        ds, index, "uniform", "pegasos", "pegasos", 1.0, lam, 1.0, 1_000_000, 1, 8, trace_iters=np.array([1_000_000])
    )
    assert status == K.OK
    assert np.all(np.isfinite(w)) and np.all(np.isfinite(trace))
    assert np.linalg.norm(w) <= (1.0 + 1e-12) / np.sqrt(lam)
    # the same run, shorter, against the reference: the first T pairs are the same pairs
    T = 20_000
    status, w_short, _ = _run(ds, index, "uniform", "pegasos", "pegasos", 1.0, lam, 1.0, T, 1, 8)
    pa, pb = _draws(index, "uniform", 8, T)
    _close(w_short, reference_spd(X, pa, pb, "pegasos", "pegasos", 1.0, lam, 1.0, T, 1)[0], rtol=1e-9)


# -- reproducibility -------------------------------------------------------------------------------


@pytest.mark.parametrize("sampler", list(K.SAMPLERS))
def test_reproducible_from_seed(sampler):
    ds = make_dataset(n_labels=2).as_one_query() if sampler == "roc" else make_dataset()
    index = K.build_index(ds.y, ds.qptr)
    runs = [_run(ds, index, sampler, "pegasos", "pegasos", 1.0, 0.01, 1.0, 3000, 2, seed)[1] for seed in (5, 5, 6)]
    assert runs[0].tobytes() == runs[1].tobytes()
    assert runs[0].tobytes() != runs[2].tobytes()


# -- status codes -----------------------------------------------------------------------------------


def test_status_codes():
    ds = make_dataset()
    index = K.build_index(ds.y, ds.qptr)
    ok = dict(sampler="uniform", learner="sgd", eta_mode="pegasos", eta0=1.0, lam=0.1, C=1.0, iterations=10, batch_size=1, seed=0)

    def run(trace_iters=EMPTY_I, trace=None, w=None, **kw):
        args = dict(ok, **kw)
        codes = {
            key: table.get(args[key], args[key]) if isinstance(args[key], str) else args[key]
            for key, table in (("sampler", K.SAMPLERS), ("learner", K.LEARNERS), ("eta_mode", K.ETA))
        }
        w = np.zeros(ds.n_features) if w is None else w
        trace = np.zeros(len(trace_iters)) if trace is None else trace
        return K.run_spd(
            ds.data, ds.indices, ds.indptr, *index, codes["sampler"], codes["learner"], codes["eta_mode"],
            args["eta0"], args["lam"], args["C"], args["iterations"], args["batch_size"], args["seed"],
            w, np.asarray(trace_iters, np.int64), trace, 0, args.get("eta_c", 10.0), args.get("ties", False),
            args.get("tpair", K.tie_index(index[1])),
        )  # fmt: skip

    assert run() == K.OK
    assert run(iterations=0) == K.OK
    assert run(sampler=7) == K.BAD_SAMPLER
    assert run(sampler=5) == K.BAD_SAMPLER
    assert run(sampler="sofia") == K.OK
    assert run(sampler="roc") == K.ROC_NEEDS_ONE_QUERY
    assert run(learner=9) == K.BAD_LEARNER
    assert run(learner=8) == K.BAD_LEARNER
    assert run(eta_mode=-1) == K.BAD_ETA
    assert run(eta_mode="basic", eta0=0.0) == K.BAD_ETA0
    assert run(eta_mode="constant", eta0=np.nan) == K.BAD_ETA0
    assert run(lam=-1.0) == K.BAD_LAMBDA
    assert run(lam=0.0) == K.BAD_LAMBDA  # 1/(lam t)
    assert run(learner="pegasos", eta_mode="constant", lam=0.0) == K.BAD_LAMBDA  # radius
    assert run(learner="sgd", eta_mode="constant", lam=0.0) == K.OK
    assert run(learner="pa", C=0.0) == K.BAD_C
    assert run(learner="pa", lam=0.0) == K.OK  # pa uses neither eta nor lambda
    assert run(batch_size=0) == K.BAD_BATCH
    assert run(learner="pa", batch_size=2) == K.BATCH_NOT_SUPPORTED
    assert run(learner="romma", batch_size=2) == K.BATCH_NOT_SUPPORTED
    assert run(iterations=-1) == K.BAD_ITERATIONS
    assert run(seed=-1) == K.BAD_SEED
    assert run(seed=2**32) == K.BAD_SEED
    assert run(trace_iters=[3, 3]) == K.BAD_TRACE
    assert run(trace_iters=[0]) == K.BAD_TRACE
    assert run(trace_iters=[11]) == K.BAD_TRACE
    assert run(trace_iters=[2, 5], trace=np.zeros(1)) == K.BAD_TRACE
    assert run(w=np.zeros(ds.n_features - 2), iterations=200) == K.BAD_COLUMN
    assert run(w=np.full(ds.n_features, np.inf)) == K.NON_FINITE
    assert run(learner="margin-perceptron", eta_mode="constant", eta0=1e308, iterations=100) == K.NON_FINITE
    one = np.ones(ds.n_rows)
    flat = K.build_index(one, ds.qptr)
    assert K.run_spd(ds.data, ds.indices, ds.indptr, *flat, 1, 0, 0, 1.0, 0.1, 1.0, 10, 1, 0, np.zeros(ds.n_features), EMPTY_I, EMPTY_F,
                     0, 10.0, False, K.NO_TIE_INDEX) == K.NO_PAIRS
    assert run(eta_mode="basic", eta_c=0.0) == K.BAD_ETA_C
    assert run(eta_mode="basic", eta_c=np.inf) == K.BAD_ETA_C
    assert run(eta_mode="constant", eta_c=0.0) == K.OK  # c is basic's only
    assert run(ties=True) == K.OK
    assert run(ties=True, learner="pa") == K.TIES_NOT_SUPPORTED
    assert run(ties=True, learner="romma") == K.TIES_NOT_SUPPORTED
    assert run(ties=True, learner="pair-sgd", eta_mode="inverse-t") == K.TIES_NOT_SUPPORTED
    assert run(ties=True, tpair=K.NO_TIE_INDEX) == K.NO_TIES
    distinct = np.arange(ds.n_rows, dtype=np.float64)  # no two documents share a label
    no_ties = K.tie_index(K.build_index(distinct, ds.qptr)[1])
    assert no_ties[-1] == 0 and run(ties=True, tpair=no_ties) == K.NO_TIES
    assert K.sample_pairs(*index, 1, 0, 5, np.zeros(4, np.int64), np.zeros(5, np.int64)) == K.BAD_OUTPUT
    assert set(K.STATUS_MESSAGES) == set(range(len(K.STATUS_MESSAGES)))


# -- sofia-ml's rank-loop sampler, tied pairs, basic's c (Sculley 2009, issue 26) ---------------------


def test_sofia_sampler_distribution():
    """a uniform over all documents, b uniform over the other-label documents of a's query:
    P(hi, lo) = (1/(m - n_hi) + 1/(m - n_lo)) / n; a document of a one-label (or one-document)
    query gives no pair (-1, -1), as sofia-ml's loop `continue`s. Against the enumeration."""
    y, qptr = SAMPLER_Y, SAMPLER_QPTR
    n_draws = 200_000
    a, b = _draws(K.build_index(y, qptr), "sofia", 12345, n_draws)
    none = a < 0
    assert np.array_equal(none, b < 0)
    # the documents of the one-label query [5, 7) and the one-document query [14, 15)
    p_none = sofia_no_pair_probability(y, qptr)
    assert p_none == 3 / 26
    _check_draws(y, qptr, a[~none], b[~none])
    pairs, prob = pair_probabilities(y, qptr, "sofia")
    assert abs(prob.sum() + p_none - 1.0) < 1e-12
    code = {(int(i), int(j)): k for k, (i, j) in enumerate(pairs)}
    counts = np.bincount([code[(int(i), int(j))] for i, j in zip(a[~none], b[~none])], minlength=len(pairs))
    observed = np.append(counts, none.sum())
    expected = np.append(prob, p_none) * n_draws
    assert chisquare(observed, expected).pvalue > 1e-4
    # the test tells it from the uniform and the indexed samplers
    _, p_idx = pair_probabilities(y, qptr, "indexed")
    assert chisquare(counts, p_idx * counts.sum()).pvalue < 1e-10
    assert chisquare(counts, np.full(len(pairs), counts.sum() / len(pairs))).pvalue < 1e-10


def test_sofia_sampler_by_hand():
    """Two queries: [2, 1, 1] and [0, 0] (one label). Exact frequencies: the one-label query's
    two documents (2/5) give no pair; document 0 (1/5) pairs with 1 or 2 (1/10 each); documents
    1 and 2 (1/5 each) pair with 0 only: P(0, 1) = P(0, 2) = 1/10 + 1/5 = 3/10."""
    y = np.array([2.0, 1.0, 1.0, 0.0, 0.0])
    qptr = np.array([0, 3, 5], np.int64)
    a, b = _draws(K.build_index(y, qptr), "sofia", 1, 100_000)
    counts = [np.sum(a < 0), np.sum((a == 0) & (b == 1)), np.sum((a == 0) & (b == 2))]
    assert sum(counts) == 100_000
    assert chisquare(counts, np.array([0.4, 0.3, 0.3]) * 100_000).pvalue > 1e-4


def test_sofia_run_skips_steps_without_a_pair():
    """The step counter advances on a draw without a pair (the learning rate of step t is
    eta_t whatever came before), and w does not move: against the reference fed the same draws."""
    ds = make_dataset(seed=3, integer_features=True, n_labels=4)
    index = K.build_index(ds.y, ds.qptr)
    X = dense_rows(ds.data, ds.indices, ds.indptr, ds.n_features)
    T, seed = 400, 9
    pa, pb = _draws(index, "sofia", seed, T * 3)
    assert np.any(pa < 0), "the data must have a one-label query"
    for learner, eta_mode, batch in (("pegasos", "pegasos", 1), ("sgd", "basic", 3), ("pa", "constant", 1)):
        trace_iters = np.array([100, T], np.int64)
        status, w, trace = _run(ds, index, "sofia", learner, eta_mode, 0.7, 0.05, 1e7, T, batch, seed,
                                trace_iters=trace_iters)
        assert status == K.OK
        w_ref, trace_ref = reference_spd(X, pa, pb, learner, eta_mode, 0.7, 0.05, 1e7, T, batch, trace_iters=trace_iters)
        assert np.any(w_ref != 0.0)
        _close(w, w_ref)
        _close(trace, trace_ref)


def test_tied_pair_distribution():
    """With ties, after each pair a tied pair uniform over the ordered tied pairs (a != b, one
    query, one label): against the enumeration; the pairs' own sequence is interleaved, still valid."""
    y, qptr = SAMPLER_Y, SAMPLER_QPTR
    index = K.build_index(y, qptr)
    tpair = K.tie_index(index[1])
    ties = tied_pairs(y, qptr)
    assert tpair[-1] == len(ties) == 40
    n = 100_000
    a, b, ta, tb = (np.empty(n, np.int64) for _ in range(4))
    assert K.sample_pairs_with_ties(*index, K.SAMPLERS["uniform"], 4, n, a, b, tpair, ta, tb) == K.OK
    _check_draws(y, qptr, a, b)
    code = {(int(i), int(j)): k for k, (i, j) in enumerate(ties)}
    counts = np.bincount([code[(int(i), int(j))] for i, j in zip(ta, tb)], minlength=len(ties))
    assert chisquare(counts).pvalue > 1e-4
    flat = np.zeros(1, np.int64)
    assert K.sample_pairs_with_ties(*index, 1, 4, n, a, b, K.tie_index(index[1][:1]), ta, tb) == K.NO_TIES
    assert K.sample_pairs_with_ties(*index, 1, 4, n, a, b, tpair, ta, flat) == K.BAD_OUTPUT


@pytest.mark.parametrize("learner,eta_mode,batch,sampler", [("pegasos", "pegasos", 1, "uniform"),
                                                            ("sgd", "basic", 4, "uniform"),
                                                            ("logreg", "constant", 1, "indexed"),
                                                            ("perceptron", "constant", 2, "uniform"),
                                                            ("margin-perceptron", "basic", 1, "query-norm"),
                                                            ("pegasos", "pegasos", 1, "sofia"),
                                                            ("sgd", "constant", 3, "sofia")])
def test_ties_match_reference(learner, eta_mode, batch, sampler):
    """Each pair's tied partner adds -eta p_t (x_ta - x_tb) (squared loss, target 0, sofia-ml's
    rule), averaged with the batch, shrink and projection once: against the dense reference."""
    ds = make_dataset(seed=3, integer_features=True, n_labels=4)
    index = K.build_index(ds.y, ds.qptr)
    tpair = K.tie_index(index[1])
    X = dense_rows(ds.data, ds.indices, ds.indptr, ds.n_features)
    T, seed = 300, 5
    n = T * batch
    a, b, ta, tb = (np.empty(n, np.int64) for _ in range(4))
    assert K.sample_pairs_with_ties(*index, K.SAMPLERS[sampler], seed, n, a, b, tpair, ta, tb) == K.OK
    if sampler == "sofia":
        assert np.any(a < 0)  # steps (or batch slots) with a tied pair and no preference pair
    trace_iters = np.array([50, T], np.int64)
    status, w, trace = _run(ds, index, sampler, learner, eta_mode, 0.05, 0.1, 1.0, T, batch, seed,
                            trace_iters=trace_iters, ties=True)
    assert status == K.OK
    w_ref, trace_ref = reference_spd(X, a, b, learner, eta_mode, 0.05, 0.1, 1.0, T, batch, trace_iters=trace_iters,
                                     ta=ta, tb=tb)
    w_plain = reference_spd(X, a, b, learner, eta_mode, 0.05, 0.1, 1.0, T, batch)[0]
    assert np.max(np.abs(w_ref - w_plain)) > 1e-6  # the tied pairs made a difference
    _close(w, w_ref)
    _close(trace, trace_ref)


def test_basic_eta_c():
    """--eta-c: eta0 c/(t + c); c = 10 is sofia-ml's BASIC_ETA and the default."""
    assert K.eta_at(K.ETA["basic"], 1.0, 0.1, 1) == 10.0 / 11.0
    assert K.eta_at(K.ETA["basic"], 2.0, 0.1, 5, 3.0) == 2.0 * 3.0 / 8.0
    ds = separable_dataset()
    index = K.build_index(ds.y, ds.qptr)
    X = dense_rows(ds.data, ds.indices, ds.indptr, ds.n_features)
    pa, pb = _draws(index, "uniform", 2, 300)
    for c in (0.5, 10.0, 1000.0):
        status, w, _ = _run(ds, index, "uniform", "sgd", "basic", 0.3, 0.05, 1.0, 300, 1, 2, eta_c=c)
        assert status == K.OK
        _close(w, reference_spd(X, pa, pb, "sgd", "basic", 0.3, 0.05, 1.0, 300, 1, eta_c=c)[0])
