"""The hinge-loss RankSVM by the bundle method: the optimum of an exact QP, within the duality gap."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize as so

from rankkit.objectives.pairs import ExplicitPairObjective
from rankkit.objectives.pairwise import PairwiseObjective
from rankkit.solvers.bundle import BundleRankSVM, bmrm, simplex_qp
from tests.conftest import make_dataset
from tests.reference import RTOL_KERNEL, dense, explicit_pairs


def _exact_hinge_optimum(ds, C, qweight=None):
    """Dual QP of min 0.5||w||^2 + sum_k c_k max(0, 1 - a_k.w): max sum(alpha) - 0.5||A'alpha||^2,
    0 <= alpha_k <= c_k, solved by L-BFGS-B. Returns (lower, upper): the dual value at its alpha and
    the primal value at w = A'alpha, which bracket the true optimum."""
    X = dense(ds)
    P = explicit_pairs(ds.y, ds.qptr)
    A = X[P[:, 0]] - X[P[:, 1]]
    query_of = np.searchsorted(ds.qptr, P[:, 0], side="right") - 1
    c = C * (np.ones(ds.n_queries) if qweight is None else qweight)[query_of]
    Q = A @ A.T
    res = so.minimize(lambda a: (0.5 * a @ Q @ a - a.sum(), Q @ a - 1.0), np.zeros(len(A)), jac=True,
                      method="L-BFGS-B", bounds=[(0, ck) for ck in c], options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 50000})
    w = A.T @ res.x
    upper = 0.5 * w @ w + np.sum(c * np.maximum(0.0, 1.0 - A @ w))
    lower = res.x.sum() - 0.5 * w @ w
    return lower, upper


def test_hinge_kernel_matches_explicit_pairs():
    """O(n log n) hinge loss and subgradient equal the pair-by-pair ones (away from kinks)."""
    for seed in (0, 3, 7):
        ds = make_dataset(seed=seed, n_labels=3 + seed % 3)
        qw = np.random.default_rng(seed).random(ds.n_queries) + 0.2
        fast = PairwiseObjective(ds, 1.0, "hinge", query_weights=qw)
        slow = ExplicitPairObjective(ds, 1.0, "hinge", query_weights=qw)
        for scale in (0.0, 0.3, 2.0):
            w = np.random.default_rng(seed + 1).standard_normal(ds.n_features) * scale + 1e-3
            y = fast.scores(w)
            Lf, Ls = fast.loss_y(y), slow.loss_y(y)
            assert abs(Lf - Ls) <= RTOL_KERNEL * max(1.0, Ls)
            np.testing.assert_allclose(fast.gy, slow.gy, rtol=0, atol=RTOL_KERNEL * max(1.0, np.abs(slow.gy).max()))


@pytest.mark.parametrize("C", [0.05, 1.0, 20.0])
@pytest.mark.parametrize("query_norm", [False, True])
def test_bundle_reaches_the_exact_hinge_optimum_within_its_gap(C, query_norm):
    ds = make_dataset(seed=4, sizes=(12, 3, 9, 1, 10), n_features=5)
    res = BundleRankSVM(C=C, tol=1e-8, query_norm=query_norm).fit(ds)
    qw = 1.0 / np.maximum(ds.pairs_per_query, 1) if query_norm else None
    lower, upper = _exact_hinge_optimum(ds, C, qw)
    assert upper - lower <= 1e-6 * upper  # the reference brackets the optimum tightly
    gap = res.extra["duality_gap"]
    assert res.converged and gap <= 1e-8 * res.objective
    eps = 1e-12 * upper
    assert res.extra["lower_bound"] <= upper + eps  # the bundle's lower bound is valid
    assert lower - eps <= res.objective <= upper + gap + eps  # the bundle's w is optimal within its gap


def test_bundle_on_explicit_pairs_agrees_with_the_n_log_n_subgradient():
    ds = make_dataset(seed=9, sizes=(20, 15, 1, 12), n_features=6)
    a = bmrm(PairwiseObjective(ds, 2.0, "hinge"), tol=1e-9)
    b = bmrm(ExplicitPairObjective(ds, 2.0, "hinge"), tol=1e-9)
    assert a.converged and b.converged
    assert abs(a.objective - b.objective) <= 1e-8 * a.objective


def test_simplex_qp_matches_scipy():
    rng = np.random.default_rng(0)
    M = rng.standard_normal((8, 3))
    G, b = M @ M.T, rng.standard_normal(8)
    a = simplex_qp(G, b, np.full(8, 1 / 8))
    ref = so.minimize(lambda x: 0.5 * x @ G @ x - b @ x, np.full(8, 1 / 8), method="SLSQP",
                      bounds=[(0, 1)] * 8, constraints={"type": "eq", "fun": lambda x: x.sum() - 1}, options={"ftol": 1e-14})
    assert abs(a.sum() - 1) < 1e-12 and a.min() >= 0
    assert b @ a - 0.5 * a @ G @ a >= -ref.fun - 1e-9


def test_cli_loss_hinge_uses_the_bundle_solver(tmp_path):
    from tests.test_cli import SAMPLE_TRAIN, rankkit

    proc = rankkit("train", SAMPLE_TRAIN, "m.txt", "--loss", "hinge", "-C", "0.01", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()
    text = (tmp_path / "m.txt").read_text()
    assert "solver bundle" in text and "loss hinge" in text and "duality_gap" in text
    bad = rankkit("train", SAMPLE_TRAIN, "m.txt", "--loss", "hinge", "--solver", "newton", cwd=tmp_path)
    assert bad.returncode == 2 and "does not offer --loss hinge" in bad.stderr.decode()


@pytest.mark.parametrize("seed,integer", [(3, True), pytest.param(0, False, marks=pytest.mark.slow),
                                          pytest.param(5, False, marks=pytest.mark.slow)])
def test_line_search_reaches_the_optimum_of_plain_bmrm(seed, integer):
    """OCAS's line search (the default) and plain BMRM: the same optimum, each within its gap and
    above the other's lower bound (ties, one-document and one-label queries, empty rows)."""
    ds = make_dataset(seed=seed, integer_features=integer, n_labels=4)
    for C in (0.1, 2.0):
        a = bmrm(PairwiseObjective(ds, C, "hinge"), tol=1e-8, line_search=True)
        b = bmrm(PairwiseObjective(ds, C, "hinge"), tol=1e-8, line_search=False)
        assert a.converged and b.converged
        eps = 1e-12 * max(a.objective, b.objective)
        assert a.extra["lower_bound"] <= b.objective + eps and b.extra["lower_bound"] <= a.objective + eps
        assert abs(a.objective - b.objective) <= 1e-8 * max(a.objective, b.objective) + eps
        assert a.iterations <= b.iterations
