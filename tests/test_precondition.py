"""CG's preconditioners in the Newton driver (issue 27): the diagonal and the dense generalised
Hessian computed from the per-query sweeps against brute-force pair-expanded references, and the
same optimum with and without preconditioning on raw-feature data, ties, one-document queries,
one-label queries and empty rows."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import make_dataset
from rankkit.objectives.pairwise import PairwiseObjective
from rankkit.solvers.newton import PRECONDITIONERS, LocalObjective, Preconditioned, scale_spread, truncated_newton
from reference import RTOL_KERNEL, dense, explicit_pairs

RAW_SCALES = np.array([3e4, 1.0, 1e-2, 30.0, 1e3, 1.0])  # MSLR-like: counts, fractions, BM25, large values


def raw(ds):
    """The same data with columns of very different scales (MSLR's raw features)."""
    scale = RAW_SCALES[ds.indices % RAW_SCALES.shape[0]]
    return ds.with_changes(data=ds.data * scale)


def brute_hessian(ds, w, margin_terms=((1.0, 1.0),), qweight=None):
    """X' H_L X by explicit pairs: sum over terms (coef, margin) of coef * 2 sum over pairs with
    margin - (y_i - y_j) > 0 of w_q (x_i - x_j)(x_i - x_j)'."""
    X = dense(ds)
    y = X @ w
    H = np.zeros((ds.n_features, ds.n_features))
    q_of = np.searchsorted(ds.qptr, np.arange(ds.n_rows), side="right") - 1
    for i, j in explicit_pairs(ds.y, ds.qptr):
        wq = 1.0 if qweight is None else qweight[q_of[i]]
        v = X[i] - X[j]
        for coef, margin in margin_terms:
            if margin - (y[i] - y[j]) > 0:
                H += coef * 2.0 * wq * np.outer(v, v)
    return H


def points(ds, seed=0):
    rng = np.random.default_rng(seed)
    scale = 1.0 / max(1.0, float(np.max(np.abs(ds.data))))
    return [np.zeros(ds.n_features), rng.standard_normal(ds.n_features) * scale,
            rng.standard_normal(ds.n_features) * 3 * scale]


CASES = {
    "awkward": lambda: make_dataset(),
    "ties": lambda: make_dataset(seed=3, integer_features=True, n_labels=4),
    "raw": lambda: raw(make_dataset(seed=5, n_labels=5)),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("loss", ["squared-hinge", "huber"])
def test_diag_and_matrix_match_pair_expansion(case, loss):
    ds = CASES[case]()
    rng = np.random.default_rng(1)
    qw = rng.random(ds.n_queries) + 0.5
    qw[1] = 0.0
    terms = ((1.0, 1.0),) if loss == "squared-hinge" else ((1.0, 1.0), (-1.0, 0.0))
    for weights in (None, qw):
        obj = PairwiseObjective(ds, 1.0, loss, query_weights=weights)
        for w in points(ds):
            obj.evaluate(w, obj.scores(w))
            ref = brute_hessian(ds, w, terms, weights)
            scale = max(1.0, float(np.max(np.abs(ref))))
            np.testing.assert_allclose(obj.hess_matrix(), ref, rtol=0, atol=RTOL_KERNEL * scale)
            np.testing.assert_allclose(obj.hess_diag(), np.maximum(np.diag(ref), 0.0), rtol=0,
                                       atol=RTOL_KERNEL * scale)


def test_diag_with_margin_and_slack_rescaling_is_the_pair_sum():
    ds = make_dataset(seed=2, n_labels=4)
    u = np.array([0.0, 1.0, 3.0, 7.0])[ds.y.astype(int)]
    w = points(ds)[1]
    for kw in ({"margin_offsets": u}, {"slack_values": u}):
        obj = PairwiseObjective(ds, 1.0, **kw)
        obj.evaluate(w, obj.scores(w))
        # the Hessian of a piecewise-quadratic loss in score space, by finite differences of H_L e_k
        X = dense(ds)
        HL = np.column_stack([obj.hess_vec_y(np.eye(ds.n_rows)[k]).copy() for k in range(ds.n_rows)])
        ref = X.T @ HL @ X
        scale = max(1.0, float(np.max(np.abs(ref))))
        np.testing.assert_allclose(obj.hess_matrix(), ref, atol=RTOL_KERNEL * scale, rtol=0)
        np.testing.assert_allclose(obj.hess_diag(), np.maximum(np.diag(ref), 0.0), atol=RTOL_KERNEL * scale, rtol=0)


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_preconditioner_reaches_the_same_optimum(case):
    ds = CASES[case]()
    fits = {}
    for mode in PRECONDITIONERS:
        obj = LocalObjective(PairwiseObjective(ds, 1.0), ds)
        fits[mode] = truncated_newton(obj, tol=1e-14, max_iter=200, precondition=mode)
        assert fits[mode].converged, (mode, fits[mode].message)
    f0 = fits["none"].objective
    for mode, r in fits.items():
        assert abs(r.objective - f0) <= 1e-10 * f0, (mode, r.objective, f0)
        np.testing.assert_allclose(r.w, fits["none"].w, rtol=1e-5, atol=1e-7 * np.max(np.abs(fits["none"].w)))


def test_auto_preconditions_raw_features_and_leaves_scaled_data_alone():
    scaled = make_dataset(seed=5, n_labels=5)
    assert scale_spread(PairwiseObjective(scaled, 1.0).column_sumsq()) < 100
    assert scale_spread(PairwiseObjective(raw(scaled), 1.0).column_sumsq()) > 100
    assert Preconditioned(LocalObjective(PairwiseObjective(scaled, 1.0)), "auto").level == 0
    assert Preconditioned(LocalObjective(PairwiseObjective(raw(scaled), 1.0)), "auto").level == 1
    # plain CG on scaled data: the same bits as with preconditioning turned off
    a = truncated_newton(LocalObjective(PairwiseObjective(scaled, 1.0)), precondition="auto")
    b = truncated_newton(LocalObjective(PairwiseObjective(scaled, 1.0)), precondition="none")
    assert a.objective == b.objective and np.array_equal(a.w, b.w)


def test_unknown_preconditioner_is_refused():
    with pytest.raises(ValueError):
        Preconditioned(LocalObjective(PairwiseObjective(make_dataset(), 1.0)), "jacobi")


def test_dask_objective_preconditions_to_the_same_optimum(tmp_path):
    """The Dask objective's diagonal and matrix are the parts' partial sums: each preconditioner
    reaches the single-process unpreconditioned optimum to 1e-10 on raw-feature parts."""
    distributed = pytest.importorskip("distributed")
    from rankkit.parts.newton import Problem
    from rankkit.io.svmlight import read_svmlight

    ds = raw(make_dataset(seed=5, n_labels=5))
    X = dense(ds)
    paths = []
    for k, (q0, q1) in enumerate(((0, 4), (4, ds.n_queries))):
        rows = []
        for q in range(q0, q1):
            for r in range(ds.qptr[q], ds.qptr[q + 1]):
                feats = " ".join(f"{j + 1}:{float(X[r, j])!r}" for j in range(ds.n_features) if X[r, j] != 0.0)
                rows.append(f"{int(ds.y[r])} qid:{q + 1} {feats}".rstrip())
        p = tmp_path / f"part-{k}.txt"
        p.write_text("\n".join(rows) + "\n")
        paths.append(str(p))
    whole = read_svmlight(paths[0]).n_rows + read_svmlight(paths[1]).n_rows
    assert whole == ds.n_rows
    from rankkit.io.parts import concatenate

    one = concatenate([read_svmlight(p) for p in paths])
    ref = truncated_newton(LocalObjective(PairwiseObjective(one, 1.0), one), tol=1e-14, max_iter=200,
                           precondition="none")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None,
                                  scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},  # no server on 8787
                                  silence_logs=50) as cluster, distributed.Client(cluster) as client:
        prob = Problem(client, paths)
        try:
            for mode in ("diag", "dense", "auto"):
                r = prob.fit(1.0, tol=1e-14, max_iter=200, precondition=mode)
                assert r.converged, (mode, r.message)
                assert abs(r.objective - ref.objective) <= 1e-10 * ref.objective, (mode, r.objective, ref.objective)
        finally:
            prob.close()


def test_preconditioned_weights_do_not_depend_on_the_threads(monkeypatch):
    """The diagonal's chunks and the matrix's rows are fixed by the shape: 1 and 2 threads give the
    same bits."""
    from rankkit import threads

    ds = raw(make_dataset(seed=5, n_labels=5, sizes=(700, 3, 900, 1, 600)))  # >= 2048 rows: several diagonal chunks
    monkeypatch.setattr(threads, "MIN_WORK_PER_THREAD", 1)
    out = {}
    try:
        for n in (1, 2):
            threads.apply(n)
            for mode in ("diag", "dense"):
                out[n, mode] = truncated_newton(LocalObjective(PairwiseObjective(ds, 1.0)), precondition=mode).w
    finally:
        threads.apply(None)
    for mode in ("diag", "dense"):
        assert np.array_equal(out[1, mode], out[2, mode]), mode
