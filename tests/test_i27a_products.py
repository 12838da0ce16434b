"""Issue 27, the AUC problem at scale (branch i27a): X' z with few chunks on very sparse wide rows
(squared_hinge.xt_product, used by PairwiseObjective where csr_rmatvec's per-chunk buffers outweigh
the rows) against NumPy, the same bytes for 1 and 2 threads; and the squared-hinge sweeps on one
large binary-label query (where the Fenwick trees' never-read top node is skipped) against
explicit pairs, with ties, empty rows and one-document / one-label queries around it."""

from __future__ import annotations

import numpy as np
import pytest

from rankkit import threads
from rankkit.data import Dataset
from rankkit.objectives import squared_hinge as sqh
from rankkit.objectives.pairwise import PairwiseObjective
from rankkit.solvers.newton import LocalObjective, truncated_newton
from rankkit.sparse import csr_rmatvec, rmatvec_chunks
from tests.conftest import make_dataset
from tests.reference import RTOL_KERNEL, dense, explicit_pairs, sqhinge_loss_y


@pytest.fixture(autouse=True)
def split_small_work(monkeypatch):
    """Kernels split even this data over the threads (rankkit.threads runs small work on one)."""
    monkeypatch.setattr(threads, "MIN_WORK_PER_THREAD", 16)


def sparse_wide(n=5000, d=3000, per_row=3, seed=0, sizes=None, binary=True):
    """Text-like rows: a few non-zeros among many features (Zipf columns), every 9th row empty,
    rows 10 and 11 identical (tied scores), a few zero-valued labels' queries of one document."""
    rng = np.random.default_rng(seed)
    p = 1.0 / (np.arange(d) + 5.0)
    p /= p.sum()
    counts = np.full(n, per_row)
    counts[::9] = 0
    cols = [np.unique(rng.choice(d, size=c, p=p)) for c in counts]
    cols[11] = cols[10]
    vals = [rng.random(c.shape[0]) + 0.1 for c in cols]
    vals[11] = vals[10]
    indptr = np.concatenate([[0], np.cumsum([c.shape[0] for c in cols])]).astype(np.int64)
    indices = np.concatenate(cols).astype(np.int32)
    data = np.concatenate(vals)
    sizes = [n] if sizes is None else sizes
    qptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    y = (rng.random(n) < 0.45).astype(np.float64) if binary else rng.integers(0, 3, n).astype(np.float64)
    y[11] = y[10]
    qid = np.repeat(np.arange(len(sizes)), sizes).astype(np.int64)
    return Dataset(data=data, indices=indices, indptr=indptr, y=y, qid=qid, qptr=qptr, n_features=d,
                   has_qid=len(sizes) > 1).validate()


def test_xt_chunks_caps_only_where_the_buffers_outweigh_the_rows():
    # dense-ish rows: csr_rmatvec's count, unchanged
    assert sqh.xt_chunks(200_000, 46, 200_000 * 46) == rmatvec_chunks(200_000, 46)
    assert sqh.xt_chunks(3000, 47_236, 3000 * 75) == rmatvec_chunks(3000, 47_236) == 1  # small: serial
    # the AUC query: 38,400 rows of ~71 non-zeros among 47,236 features
    nc = sqh.xt_chunks(38_400, 47_236, 2_745_848)
    assert nc == 7 < rmatvec_chunks(38_400, 47_236) == 37
    assert nc * 47_236 * sqh.XT_BUFFER_SHARE <= 2_745_848
    assert sqh.xt_chunks(5000, 3000, 15_000) == 2  # at least two, for two threads


@pytest.mark.parametrize("nc", [1, 2, 3, 5])
@pytest.mark.parametrize("vscale", [1.0, 1000.0])
def test_xt_product_matches_numpy_and_not_the_threads(nc, vscale):
    ds = sparse_wide(n=700, d=400, seed=1)
    X = dense(ds) / vscale
    z = np.random.default_rng(2).standard_normal(ds.n_rows)
    z[::5] = 0.0
    ref = X.T @ z

    def run():
        part = np.full((nc, ds.n_features), np.nan)  # scratch: every chunk overwrites its own row
        return sqh.xt_product(ds.data, ds.indices, ds.indptr, z, part, np.full(ds.n_features, np.nan), vscale)

    with threads.limited(1):
        one = run()
    with threads.limited(2):
        two = run()
    assert one.tobytes() == two.tobytes()
    np.testing.assert_allclose(one, ref, rtol=0, atol=RTOL_KERNEL * max(1.0, np.abs(ref).max()))
    if nc == 1:  # one chunk sums in row order, as csr_rmatvec's serial product
        serial = csr_rmatvec(ds.data, ds.indices, ds.indptr, z, np.empty(ds.n_features), vscale)
        assert one.tobytes() == serial.tobytes()


def test_objective_on_sparse_wide_rows_uses_few_chunks_matches_dense_and_not_the_threads():
    ds = sparse_wide()
    assert ds.n_rows > 4096
    obj = PairwiseObjective(ds, 0.01)
    assert obj._xt_part is not None and obj._xt_part.shape[0] == 2
    X = dense(ds)
    rng = np.random.default_rng(3)
    w = rng.standard_normal(ds.n_features)
    s = rng.standard_normal(ds.n_features)

    def run():
        o = PairwiseObjective(ds, 0.01)
        f, g = o.fun_grad(w)
        return f, g.copy(), o.hess_vec(s).copy(), o.gy.copy(), o.hess_vec_y(X @ s).copy()

    with threads.limited(1):
        one = run()
    with threads.limited(2):
        two = run()
    assert one[0] == two[0]
    for a, b in zip(one[1:], two[1:]):
        assert a.tobytes() == b.tobytes()
    f, g, hv, gy, hvy = one
    g_ref = w + 0.01 * (X.T @ gy)
    hv_ref = s + 0.01 * (X.T @ hvy)
    np.testing.assert_allclose(g, g_ref, rtol=0, atol=RTOL_KERNEL * np.abs(g_ref).max())
    np.testing.assert_allclose(hv, hv_ref, rtol=0, atol=RTOL_KERNEL * np.abs(hv_ref).max())


def test_fit_with_few_chunks_reaches_the_optimum_of_csr_rmatvec():
    ds = sparse_wide(n=4800, d=2000, per_row=4, seed=4, sizes=[1, 4200, 1, 3, 595], binary=False)
    assert PairwiseObjective(ds, 1.0)._xt_part is not None
    fits = []
    for few in (True, False):
        obj = PairwiseObjective(ds, 0.05)
        if not few:
            obj._xt_part = None  # csr_rmatvec, as before
        fits.append(truncated_newton(LocalObjective(obj, ds), tol=1e-13, max_iter=200))
        assert fits[-1].converged
    assert abs(fits[0].objective - fits[1].objective) <= 1e-10 * fits[1].objective


def brute_binary(ds, w, d):
    """The loss, dL/dy, H_L d (reference.sqhinge_loss_y) and diag(X' H_L X), by explicit pairs
    (margin 1)."""
    X = dense(ds)
    y = X @ w
    L, g, hd = sqhinge_loss_y(y, ds.y, ds.qptr, d)
    diag = np.zeros(ds.n_features)
    for i, j in explicit_pairs(ds.y, ds.qptr):
        if 1.0 - (y[i] - y[j]) > 0:
            diag += 2 * (X[i] - X[j]) ** 2
    return L, g, hd, diag


@pytest.mark.parametrize("binary", [True, False])
def test_sweeps_of_one_large_query_match_explicit_pairs(binary):
    # one query of 600 documents between a one-document query and a one-label query
    ds = sparse_wide(n=620, d=60, per_row=4, seed=5, sizes=[1, 600, 19], binary=binary)
    ds = ds.with_changes(y=np.where(np.arange(ds.n_rows) >= 601, 1.0, ds.y))  # the last query: one label
    rng = np.random.default_rng(6)
    for scale in (0.0, 0.3, 3.0):
        w = rng.standard_normal(ds.n_features) * scale
        w[:3] = 0.0
        d = rng.standard_normal(ds.n_rows)
        obj = PairwiseObjective(ds, 1.0)
        L = obj.loss_y(obj.scores(w))
        L_ref, g_ref, hd_ref, diag_ref = brute_binary(ds, w, d)
        assert abs(L - L_ref) <= RTOL_KERNEL * max(1.0, L_ref)
        np.testing.assert_allclose(obj.gy, g_ref, rtol=0, atol=RTOL_KERNEL * max(1.0, np.abs(g_ref).max()))
        np.testing.assert_allclose(obj.hess_vec_y(d), hd_ref, rtol=0, atol=RTOL_KERNEL * max(1.0, np.abs(hd_ref).max()))
        np.testing.assert_allclose(obj.hess_diag(), diag_ref, rtol=0, atol=RTOL_KERNEL * max(1.0, diag_ref.max()))
