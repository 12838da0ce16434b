"""Factorized Ranking SVM: the linear-time w(V) and dJ/dV equal the naive pair sums."""

from __future__ import annotations

import numpy as np
import pytest

from rankkit.solvers.factorized import FactorState, FactorizedRankSVM
from tests.conftest import make_dataset
from tests.reference import dense, explicit_pairs, pair_loss


def naive(ds, V, C, loss):
    """O(|P|^2)-free but O(|P|) pair loops straight from eqs. (4), (5) and (8)."""
    X = dense(ds)
    P = explicit_pairs(ds.y, ds.qptr)
    w = np.zeros(X.shape[1])
    for i, j in P:
        w += (V[i] @ V[j]) * (X[i] - X[j])
    J = 0.5 * w @ w
    g = w.copy()
    for i, j in P:
        t = w @ (X[i] - X[j])
        if loss == "hinge":
            v, d1 = (1 - t, -1.0) if t < 1 else (0.0, 0.0)
        else:
            v, d1, _ = pair_loss(t, "squared-hinge")
        J += C * v
        g += C * d1 * (X[i] - X[j])
    G = np.zeros_like(V)
    for i, j in P:  # d alpha_ij / d v_i = v_j, d alpha_ij / d v_j = v_i
        phi_g = (X[i] - X[j]) @ g
        G[i] += V[j] * phi_g
        G[j] += V[i] * phi_g
    return J, G, w


@pytest.mark.parametrize("loss", ["hinge", "squared-hinge"])
@pytest.mark.parametrize("seed", [0, 3])
def test_linear_time_w_and_gradient_equal_pair_sums(loss, seed):
    ds = make_dataset(seed=seed, sizes=(12, 1, 7, 15, 5), n_labels=4, integer_features=seed == 3)
    V = np.random.default_rng(seed).standard_normal((ds.n_rows, 3)) * 0.3
    J, G, w = FactorState(ds, 0.7, loss).value_grad(V)
    J_ref, G_ref, w_ref = naive(ds, V, 0.7, loss)
    scale = lambda a: max(1.0, float(np.abs(a).max()))
    np.testing.assert_allclose(w, w_ref, rtol=0, atol=1e-10 * scale(w_ref))
    assert abs(J - J_ref) <= 1e-10 * scale(J_ref)
    np.testing.assert_allclose(G, G_ref, rtol=0, atol=1e-10 * scale(G_ref))


def test_gradient_matches_finite_differences():
    """The squared-hinge J(V) is differentiable everywhere."""
    ds = make_dataset(seed=4, sizes=(8, 6, 9), n_features=4)
    V = np.random.default_rng(1).standard_normal((ds.n_rows, 2)) * 0.2
    state = FactorState(ds, 0.5, "squared-hinge")
    _, G, _ = state.value_grad(V)
    eps = 1e-6
    for idx in [(0, 0), (3, 1), (10, 0), (ds.n_rows - 1, 1)]:
        Vp, Vm = V.copy(), V.copy()
        Vp[idx] += eps
        Vm[idx] -= eps
        fd = (state.value_grad(Vp)[0] - state.value_grad(Vm)[0]) / (2 * eps)
        assert G[idx] == pytest.approx(fd, rel=1e-5, abs=1e-7)


def test_objective_decreases_with_a_small_step():
    ds = make_dataset(seed=5, sizes=(20, 15, 25), n_features=5)
    res = FactorizedRankSVM(C=0.1, K=3, iterations=60, eta0=1e-3, loss="squared-hinge").fit(ds)
    trace = []
    FactorizedRankSVM(C=0.1, K=3, iterations=60, eta0=1e-3, loss="squared-hinge").fit(ds, log=trace.append)
    values = [float(line.split()[3]) for line in trace]
    assert all(b <= a + 1e-12 for a, b in zip(values, values[1:]))
    assert values[-1] < values[0] and res.objective <= values[-1]


def test_early_stopping_keeps_the_best_validation_iteration():
    ds = make_dataset(seed=6, sizes=(20, 15, 25), n_features=5)
    valid = make_dataset(seed=7, sizes=(10, 12), n_features=5)
    solver = FactorizedRankSVM(C=0.1, K=2, iterations=300, eta0=5e-3, valid=valid, patience=5)
    res = solver.fit(ds)
    assert "early stopping" in res.message or res.iterations == 300
    assert solver.factors.shape == (ds.n_rows, 2)


def test_multiplier_analysis_reproduces_w_and_reports_shares():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    from analyze_multipliers import multiplier_ranks

    from rankkit.solvers.newton import NewtonRankSVM

    ds = make_dataset(seed=8, sizes=(15, 12, 1, 20), n_features=5)
    res = NewtonRankSVM(C=0.2, tol=1e-14).fit(ds)
    rows, w_back = multiplier_ranks(ds, res.w, 0.2)
    np.testing.assert_allclose(w_back, res.w, rtol=0, atol=1e-6 * np.abs(res.w).max())
    assert len(rows) == int(np.sum(ds.pairs_per_query > 0))
    for n_q, shares in rows:
        assert 0 < shares[0.9] <= shares[1.0] <= 1.0


def test_cli_factorized(tmp_path):
    from tests.test_cli import SAMPLE_TEST, SAMPLE_TRAIN, rankkit

    ok = rankkit("train", SAMPLE_TRAIN, "f.txt", "--solver", "factorized", "-K", "3", "-C", "0.01", "--iterations", "20",
                 "--valid", SAMPLE_TEST, "--patience", "5", "--save-factors", "V.txt", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr.decode()
    text = (tmp_path / "f.txt").read_text()
    assert "solver factorized" in text and "K 3" in text and "factors_file V.txt" in text
    V = np.loadtxt(tmp_path / "V.txt")
    assert V.shape == (len(SAMPLE_TRAIN.read_text().splitlines()), 3)
    assert rankkit("predict", SAMPLE_TEST, "f.txt", cwd=tmp_path).returncode == 0
    for args, fragment in [(["--solver", "newton", "-K", "3"], "-K is not an option of --solver newton (it is for: factorized)"),
                           (["--solver", "factorized", "--lambda", "0.1"], "--lambda is not an option"),
                           (["--solver", "factorized", "--loss", "logistic"], "does not offer --loss logistic")]:
        bad = rankkit("train", SAMPLE_TRAIN, "b.txt", *args, cwd=tmp_path)
        assert bad.returncode == 2 and fragment in bad.stderr.decode(), (args, bad.stderr.decode())
