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


def _analysis():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    import analyze_multipliers

    return analyze_multipliers


def test_multiplier_analysis_reproduces_w_and_reports_shares():
    from rankkit.solvers.newton import NewtonRankSVM

    multiplier_ranks = _analysis().multiplier_ranks
    ds = make_dataset(seed=8, sizes=(15, 12, 1, 20), n_features=5)
    res = NewtonRankSVM(C=0.2, tol=1e-14).fit(ds)
    rows, w_back = multiplier_ranks(ds, res.w, 0.2)
    np.testing.assert_allclose(w_back, res.w, rtol=0, atol=1e-6 * np.abs(res.w).max())
    assert len(rows) == int(np.sum(ds.pairs_per_query > 0))
    for n_q, shares in rows:
        assert 0 < shares[0.9] <= shares[1.0] <= 1.0


def test_hinge_multipliers_solve_the_dual_and_give_the_hinge_ranksvm():
    """Fig. 1 with the paper's multipliers: the dual solution's w is the hinge RankSVM's (bundle),
    primal = dual, 0 <= alpha <= C with alpha = C on the pairs inside the margin and 0 outside; the
    per-query ranks equal NumPy's on the blocks built pair by pair."""
    from rankkit.solvers.bundle import BundleRankSVM

    am = _analysis()
    ds = make_dataset(seed=9, sizes=(15, 12, 1, 20, 6), n_features=5)  # ties, one-doc, one-label, empty rows
    C = 0.05
    pi, pj, alpha, w, facts = am.hinge_multipliers(ds, C, eps=1e-10)
    assert facts["projected_gradient"] <= 1e-10
    ref = BundleRankSVM(C=C, loss="hinge", tol=1e-10, max_iter=5000).fit(ds)
    assert facts["primal"] == pytest.approx(ref.objective, rel=1e-8)
    assert facts["dual"] == pytest.approx(facts["primal"], rel=1e-8)
    X = dense(ds)
    P = explicit_pairs(ds.y, ds.qptr)
    assert sorted(zip(pi.tolist(), pj.tolist())) == sorted(map(tuple, P.tolist()))
    t = (X[pi] - X[pj]) @ w
    assert np.all((alpha >= 0) & (alpha <= C))
    assert np.all(alpha[t < 1 - 1e-6] == C) and np.all(alpha[t > 1 + 1e-6] == 0)
    rows, w_back = am.block_shares(ds, pi, pj, alpha)
    np.testing.assert_allclose(w_back, w, rtol=0, atol=1e-12 * np.abs(w).max())
    k = 0
    for q in range(ds.n_queries):
        s, e = ds.qptr[q], ds.qptr[q + 1]
        A = np.zeros((e - s, e - s))
        for (i, j), a in zip(zip(pi, pj), alpha):
            if s <= i < e:
                A[i - s, j - s] = a
        if not np.any(ds.y[s:e] != ds.y[s]):
            continue
        r = rows[k]
        k += 1
        assert r["n"] == e - s and r["rank"] == np.linalg.matrix_rank(A)
        assert r["rank"] <= r["max_rank"] <= (e - s) - np.sum(ds.y[s:e] == ds.y[s:e].min())
    assert k == len(rows)


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


# -- the paper's Algorithm 1 (--optimizer paper) against a literal NumPy transcription ---------------
def _awkward(seed=11):
    """One-document queries, a one-label query, label ties, empty rows, two identical documents."""
    return make_dataset(seed=seed, sizes=(6, 1, 5, 7, 4, 1, 6), n_features=4, n_labels=3, one_label_queries=(4,))


def test_hinge_objective_and_subgradient_equal_the_papers_equations():
    from tests.reference_factorized import objective_and_gradient

    ds = _awkward()
    X, P = dense(ds), explicit_pairs(ds.y, ds.qptr)
    assert len(P) > 0 and np.array_equal(X[10], X[11])
    for scale in (0.05, 0.6, 2.0):  # few, some and most pairs violated
        V = np.random.default_rng(int(scale * 10)).standard_normal((ds.n_rows, 3)) * scale
        J, G, w = FactorState(ds, 0.3, "hinge").value_grad(V)
        J_ref, G_ref, w_ref = objective_and_gradient(X, P, V, 0.3)
        big = max(1.0, float(np.abs(G_ref).max()))
        np.testing.assert_allclose(w, w_ref, rtol=0, atol=1e-10 * max(1.0, float(np.abs(w_ref).max())))
        assert abs(J - J_ref) <= 1e-10 * max(1.0, abs(J_ref))
        np.testing.assert_allclose(G, G_ref, rtol=0, atol=1e-10 * big)


def test_hinge_gradient_matches_finite_differences_away_from_kinks():
    ds = _awkward(12)
    V = np.random.default_rng(2).standard_normal((ds.n_rows, 2)) * 0.5
    state = FactorState(ds, 0.4, "hinge")
    _, G, w = state.value_grad(V)
    X, P = dense(ds), explicit_pairs(ds.y, ds.qptr)
    assert np.min(np.abs(1.0 - (X[P[:, 0]] - X[P[:, 1]]) @ w)) > 1e-4  # no pair at its kink
    eps = 1e-7
    for idx in [(0, 0), (4, 1), (9, 0), (ds.n_rows - 2, 1)]:
        Vp, Vm = V.copy(), V.copy()
        Vp[idx] += eps
        Vm[idx] -= eps
        fd = (state.value_grad(Vp)[0] - state.value_grad(Vm)[0]) / (2 * eps)
        assert G[idx] == pytest.approx(fd, rel=1e-6, abs=1e-8)


@pytest.mark.parametrize("tol", [0.0, 1e-2])
def test_paper_optimizer_is_algorithm_1_step_by_step(tol):
    from tests.reference_factorized import algorithm1

    ds = _awkward()
    X, P = dense(ds), explicit_pairs(ds.y, ds.qptr)
    solver = FactorizedRankSVM(C=0.3, K=3, optimizer="paper", eta0=0.01, iterations=20, tol=tol, seed=4,
                               init_scale=0.3, loss="hinge")
    trace = []
    res = solver.fit(ds, log=trace.append)
    V0 = 0.3 * np.random.default_rng(4).standard_normal((ds.n_rows, 3))
    Vs, Js = algorithm1(X, P, 0.3, 0.01, V0, 20, tol)
    assert res.iterations == len(Vs)
    assert res.stop == ("iterations" if tol == 0 else "objective_change")
    if tol:
        assert len(Vs) < 20, "the test must exercise the convergence rule"
    np.testing.assert_allclose(solver.factors, Vs[-1], rtol=0, atol=1e-10 * max(1.0, float(np.abs(Vs[-1]).max())))
    logged = [float(line.split()[3]) for line in trace]
    np.testing.assert_allclose(logged, Js, rtol=1e-9)  # the objective before every update (Algorithm 1 line 3)
    assert any(b > a for a, b in zip(Js, Js[1:])) or tol, "a fixed step on the hinge is not monotone here"


def test_paper_optimizer_reports_divergence_of_a_large_learning_rate():
    ds = _awkward()
    res = FactorizedRankSVM(C=1.0, K=3, optimizer="paper", eta0=50.0, iterations=200, init_scale=0.5).fit(ds)
    assert res.stop == "diverged" and not res.converged
    assert "lower --eta0" in res.message
    assert np.all(np.isfinite(res.w)) and np.isfinite(res.objective)


def test_optimizer_option_in_cli_and_python(tmp_path):
    import rankkit
    from tests.test_cli import SAMPLE_TRAIN, rankkit as run

    ok = run("train", SAMPLE_TRAIN, "p.txt", "--solver", "factorized", "--optimizer", "paper", "-K", "2", "-C", "0.01",
             "--eta0", "0.01", "--iterations", "5", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr.decode()
    text = (tmp_path / "p.txt").read_text()
    assert "optimizer paper" in text and "tol 1e-06" in text
    est = rankkit.load_model(tmp_path / "p.txt")
    assert est.optimizer == "paper" and est.tol == 1e-6
    from rankkit import training
    from rankkit.errors import UsageError

    for solver, more, fragment in [("newton", {}, "--optimizer is not an option of --solver newton"),
                                   ("factorized", {"eta": "basic"}, "--optimizer paper has a fixed learning rate")]:
        with pytest.raises(UsageError, match=fragment):  # the one check the command line words (exit 2)
            training.plan(solver, {"C": None, "loss": None}, {"optimizer": "paper", **more})
    ds = _awkward()
    X, y = dense(ds), ds.y
    qid = np.repeat(np.arange(ds.n_queries), np.diff(ds.qptr))
    r = rankkit.FactorizedRankSVM(K=3, C=0.3, optimizer="paper", eta0=0.01, iterations=7, init_scale=0.3, random_state=4)
    with pytest.warns(rankkit.estimators.ConvergenceWarning, match="ran out of iterations"):
        r.fit(X, y, qid=qid)
    direct = FactorizedRankSVM(C=0.3, K=3, optimizer="paper", eta0=0.01, iterations=7, init_scale=0.3, seed=4).fit(ds)
    np.testing.assert_allclose(r.coef_, direct.w, rtol=1e-12, atol=1e-14)
    with pytest.raises(rankkit.errors.UsageError, match="optimizer must be one of"):
        rankkit.FactorizedRankSVM(optimizer="adam").fit(X, y, qid=qid)
