"""The O(n log n) squared-hinge kernels against explicit pair enumeration."""

from __future__ import annotations

import numpy as np
import pytest

from rankkit.objectives import pairwise
from rankkit.objectives.pairwise import PairwiseObjective
from tests.conftest import make_dataset
from tests.reference import FD_STEP, RTOL_KERNEL, sqhinge_loss_y, sqhinge_objective


def _close(a, b, rtol=RTOL_KERNEL):
    scale = max(1.0, float(np.max(np.abs(b))) if np.size(b) else 1.0)
    np.testing.assert_allclose(a, b, rtol=0, atol=rtol * scale)


def _weights(ds, seed, scale):
    return np.random.default_rng(seed).standard_normal(ds.n_features) * scale


DATASETS = {
    "mixed": dict(seed=0),
    "integer-features": dict(seed=3, integer_features=True, n_labels=4),
    "binary": dict(seed=5, n_labels=2),
    "many-levels": dict(seed=7, n_labels=9, sizes=(40, 3, 1, 60)),
    "one-query": dict(seed=9, sizes=(80,), one_label_queries=()),
}


@pytest.mark.parametrize("name", sorted(DATASETS))
@pytest.mark.parametrize("scale", [0.0, 0.05, 0.5, 5.0])
def test_value_gradient_hessian_match_explicit_pairs(name, scale):
    ds = make_dataset(**DATASETS[name])
    C = 0.7
    obj = PairwiseObjective(ds, C)
    for seed in range(3):
        w = _weights(ds, seed, scale)
        f, g = obj.fun_grad(w)
        f_ref, g_ref, H_ref = sqhinge_objective(ds, C, w)
        _close(f, f_ref)
        _close(g, g_ref)
        s = np.random.default_rng(100 + seed).standard_normal(ds.n_features)
        _close(obj.hess_vec(s), H_ref @ s)


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_score_space_kernels_with_tied_scores(name):
    """Scores drawn from a few values: many exact ties, and pairs whose margin is exactly 0 or 1."""
    ds = make_dataset(**DATASETS[name])
    obj = PairwiseObjective(ds, 1.0)
    rng = np.random.default_rng(1)
    for levels in ([0.0], [0.0, 0.5], [0.0, 0.25, 1.0, 3.0]):
        y = rng.choice(levels, size=ds.n_rows).astype(np.float64)
        d = rng.standard_normal(ds.n_rows)
        L = obj.loss_y(y)
        Hd = obj.hess_vec_y(d).copy()
        L_ref, g_ref, Hd_ref = sqhinge_loss_y(y, ds.y, ds.qptr, d)
        _close(L, L_ref)
        _close(obj.gy, g_ref)
        _close(Hd, Hd_ref)


def test_radix_sorted_large_queries_match_kernel_sorted(monkeypatch):
    """Queries above RADIX_SORT_MIN are sorted by radix; both paths give the same sums."""
    ds = make_dataset(seed=11, sizes=(50, 3, 70, 1, 20), one_label_queries=())
    w = _weights(ds, 0, 0.3)
    f1, g1 = PairwiseObjective(ds, 0.3).fun_grad(w)
    monkeypatch.setattr(pairwise, "RADIX_SORT_MIN", 10)
    obj = PairwiseObjective(ds, 0.3)
    f2, g2 = obj.fun_grad(w)
    f_ref, g_ref, H_ref = sqhinge_objective(ds, 0.3, w)
    _close(f2, f_ref)
    _close(g2, g_ref)
    _close(f1, f2)
    s = np.ones(ds.n_features)
    _close(obj.hess_vec(s), H_ref @ s)


def test_gradient_matches_central_differences(small_ds):
    obj = PairwiseObjective(small_ds, 0.4)
    w = _weights(small_ds, 3, 0.3)
    _, g = obj.fun_grad(w)
    fd = np.empty_like(w)
    for k in range(len(w)):
        e = np.zeros_like(w)
        e[k] = FD_STEP
        fd[k] = (obj.fun_grad(w + e)[0] - obj.fun_grad(w - e)[0]) / (2 * FD_STEP)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6)


def test_hessian_vector_matches_gradient_differences(small_ds):
    """Hv = (g(w + eps v) - g(w - eps v)) / 2 eps, away from kinks (the loss is piecewise quadratic)."""
    obj = PairwiseObjective(small_ds, 0.4)
    w = _weights(small_ds, 4, 0.3)
    v = np.random.default_rng(5).standard_normal(small_ds.n_features)
    obj.fun_grad(w)
    Hv = obj.hess_vec(v).copy()
    eps = 1e-7
    gp = obj.fun_grad(w + eps * v)[1]
    gm = obj.fun_grad(w - eps * v)[1]
    np.testing.assert_allclose(Hv, (gp - gm) / (2 * eps), rtol=1e-5, atol=1e-5)


def test_hessian_is_symmetric_positive_definite(small_ds):
    obj = PairwiseObjective(small_ds, 2.0)
    obj.fun_grad(_weights(small_ds, 6, 0.5))
    d = small_ds.n_features
    H = np.column_stack([obj.hess_vec(e).copy() for e in np.eye(d)])
    np.testing.assert_allclose(H, H.T, rtol=0, atol=1e-10 * np.abs(H).max())
    assert np.linalg.eigvalsh(H).min() >= 1.0 - 1e-9  # I + C * PSD


def test_one_label_queries_contribute_nothing():
    ds = make_dataset(seed=2, sizes=(5, 6), one_label_queries=(0, 1))
    assert ds.n_pairs == 0
    obj = PairwiseObjective(ds, 1.0)
    w = _weights(ds, 0, 1.0)
    f, g = obj.fun_grad(w)
    assert f == pytest.approx(0.5 * w @ w)
    np.testing.assert_allclose(g, w)


def test_pair_counts_match_enumeration():
    from tests.reference import explicit_pairs

    for spec in DATASETS.values():
        ds = make_dataset(**spec)
        P = explicit_pairs(ds.y, ds.qptr)
        assert ds.n_pairs == len(P)
        per_q = np.bincount(np.searchsorted(ds.qptr, P[:, 0], side="right") - 1, minlength=ds.n_queries)
        np.testing.assert_array_equal(ds.pairs_per_query, per_q)


def test_huge_score_offsets_lose_no_accuracy():
    """Scores 2^30 and more away from zero, per-query offsets, exact differences: the loss is a sum
    of non-negative terms in the kernels, so it matches explicit pairs to full precision (the
    expanded form sum alpha y^2 - beta y would lose every digit here)."""
    ds = make_dataset(seed=12, sizes=(40, 3, 25, 1, 30), one_label_queries=())
    rng = np.random.default_rng(0)
    u = rng.integers(-256, 256, ds.n_rows) / 64.0  # few bits: y_i - y_j is exact
    offsets = (2.0**30) * (1 + np.arange(ds.n_queries))
    y = u + np.repeat(offsets, np.diff(ds.qptr))
    d = rng.standard_normal(ds.n_rows)
    obj = PairwiseObjective(ds, 1.0)
    L = obj.loss_y(y)
    Hd = obj.hess_vec_y(d).copy()
    L_ref, g_ref, Hd_ref = sqhinge_loss_y(y, ds.y, ds.qptr, d)
    assert abs(L - L_ref) <= 1e-12 * L_ref
    _close(obj.gy, g_ref)
    _close(Hd, Hd_ref)


def test_margin_exactly_one_is_inactive_like_the_reference():
    """y_i - y_j == 1 exactly: loss 0 and not in the generalised Hessian, as `1 - (y_i - y_j) > 0`."""
    ds = make_dataset(seed=13, sizes=(6,), one_label_queries=())
    obj = PairwiseObjective(ds, 1.0)
    for base in (0.0, 0.1, 1e8 + 0.5):
        y = base + ds.y.copy()  # labels differ by integers: many margins exactly 0 or 1
        d = np.arange(ds.n_rows, dtype=float)
        L = obj.loss_y(y)
        Hd = obj.hess_vec_y(d).copy()
        L_ref, g_ref, Hd_ref = sqhinge_loss_y(y, ds.y, ds.qptr, d)
        assert L == pytest.approx(L_ref, abs=1e-12)
        _close(Hd, Hd_ref)


@pytest.mark.parametrize("loss", ["squared-hinge", "huber"])
@pytest.mark.parametrize("weights", ["ones", "random", "query-norm", "some-zero"])
@pytest.mark.parametrize("name", ["mixed", "integer-features", "many-levels"])
def test_losses_and_query_weights_match_explicit_pairs(loss, weights, name):
    from tests.reference import pair_objective

    ds = make_dataset(**DATASETS[name])
    rng = np.random.default_rng(3)
    qw = {
        "ones": np.ones(ds.n_queries),
        "random": rng.random(ds.n_queries) * 3,
        "query-norm": 1.0 / np.maximum(ds.pairs_per_query, 1),
        "some-zero": (rng.random(ds.n_queries) > 0.4).astype(float),
    }[weights]
    obj = PairwiseObjective(ds, 0.9, loss=loss, query_weights=qw)
    for seed, scale in ((0, 0.0), (1, 0.3), (2, 3.0)):  # scale 3: many pairs in the linear part of huber
        w = _weights(ds, seed, scale)
        f, g = obj.fun_grad(w)
        f_ref, g_ref, H_ref = pair_objective(ds, 0.9, w, loss, qw)
        _close(f, f_ref)
        _close(g, g_ref)
        s = np.random.default_rng(50 + seed).standard_normal(ds.n_features)
        _close(obj.hess_vec(s), H_ref @ s)


def test_huber_gradient_matches_central_differences(small_ds):
    obj = PairwiseObjective(small_ds, 0.4, loss="huber")
    w = _weights(small_ds, 3, 2.0)
    _, g = obj.fun_grad(w)
    fd = np.empty_like(w)
    for k in range(len(w)):
        e = np.zeros_like(w)
        e[k] = FD_STEP
        fd[k] = (obj.fun_grad(w + e)[0] - obj.fun_grad(w - e)[0]) / (2 * FD_STEP)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6)


def test_query_sort_is_numpys_stable_argsort():
    """The kernels' own stable sort (insertion-sorted runs, then merges) gives np.argsort(kind=
    "stable") on every query: ties (integer scores), -0.0 and 0.0, nan, one-document queries and
    queries longer than several runs."""
    from rankkit.objectives import squared_hinge as sqh

    rng = np.random.default_rng(0)
    for trial in range(200):
        sizes = rng.integers(1, 200, rng.integers(1, 6))
        if trial % 7 == 0:
            sizes = np.append(sizes, [1, rng.integers(300, 3000)])
        qptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        n = int(qptr[-1])
        y = rng.integers(0, rng.integers(1, 10), n).astype(float) if trial % 2 else rng.standard_normal(n)
        if trial % 5 == 0:
            y[rng.integers(0, n, 3)] = np.nan
        if trial % 3 == 0:
            y[rng.integers(0, n, 5)] = rng.choice([0.0, -0.0], 5)
        order = np.full(n, -1, dtype=np.int64)
        sqh.sort_queries(y, qptr, np.zeros(len(sizes), np.uint8), order)
        for q in range(len(sizes)):
            s, e = qptr[q], qptr[q + 1]
            assert np.array_equal(order[s:e], s + np.argsort(y[s:e], kind="stable")), (trial, q)


def test_query_levels_kernel_matches_a_brute_force_reference():
    """Dataset.levels / pairs_per_query (rankkit.sorting.query_levels) against np.unique per
    query and the pair count by enumeration: ties, -0.0 and 0.0 as one label, one-document
    queries, one-label queries, long queries (several sort runs)."""
    from rankkit.data import _levels_and_pairs

    rng = np.random.default_rng(3)
    for trial in range(150):
        sizes = rng.integers(1, 120, rng.integers(1, 7))
        if trial % 5 == 0:
            sizes = np.append(sizes, [1, 1, rng.integers(200, 900)])
        qptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        n = int(qptr[-1])
        y = rng.integers(0, rng.integers(1, 6), n).astype(float) if trial % 2 else rng.standard_normal(n).round(1)
        if trial % 3 == 0:
            y[rng.integers(0, n, 5)] = rng.choice([0.0, -0.0], 5)
        if trial % 4 == 0:  # a one-label query
            y[qptr[0]:qptr[1]] = 2.0
        levels, pairs = _levels_and_pairs(y, qptr)
        assert levels.dtype == np.int32 and pairs.dtype == np.int64
        for q in range(len(sizes)):
            s, e = qptr[q], qptr[q + 1]
            labels = y[s:e]
            expect = np.searchsorted(np.unique(labels), labels).astype(np.int32)
            assert np.array_equal(levels[s:e], expect), (trial, q)
            brute = sum(1 for i in range(e - s) for j in range(e - s) if labels[i] > labels[j])
            assert pairs[q] == brute, (trial, q)
    empty_levels, empty_pairs = _levels_and_pairs(np.zeros(0), np.zeros(1, dtype=np.int64))
    assert empty_levels.shape == (0,) and empty_pairs.shape == (0,)


@pytest.mark.parametrize("loss", ["squared-hinge", "huber"])
def test_state_after_other_points_equals_state_computed_afresh(monkeypatch, loss):
    """An objective that evaluated other points first (a line search's trials, the last iteration's
    order left in its buffers) holds, at w, the same bits as a fresh one: loss, gradient, active
    pairs, sort, Hessian products and diagonal; one large query (radix sort, two sweeps on two
    threads) and small ones."""
    from rankkit import threads
    from rankkit.objectives import squared_hinge as sqh

    monkeypatch.setattr(pairwise, "RADIX_SORT_MIN", 30)
    monkeypatch.setattr(sqh, "SPLIT_SWEEPS_MIN", 30)
    for sizes in ((400,), (50, 3, 70, 1, 20)):
        ds = make_dataset(seed=4, sizes=sizes, one_label_queries=())
        w = _weights(ds, 1, 0.3)
        s = _weights(ds, 2, 1.0)
        with threads.limited(2):
            used = PairwiseObjective(ds, 0.3, loss)
            for k in range(4):
                w_k = _weights(ds, 10 + k, 0.3)
                used.evaluate(w_k, used.scores(w_k))
                used.hess_vec(s)
            fresh = PairwiseObjective(ds, 0.3, loss)
            figures = []
            for obj in (used, fresh):
                f = obj.evaluate(w, obj.scores(w))
                figures.append((f, obj.n_active, obj.gradient(w).tobytes(), obj.order.tobytes(), obj.ys.tobytes(),
                                obj.hess_vec(s).tobytes(), obj.hess_diag().tobytes()))
        assert figures[0] == figures[1]
