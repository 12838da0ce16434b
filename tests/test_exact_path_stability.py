"""The exact path's numerical safeguards (rankkit.paths.exact, issue 26): the residual checks, the
refactorisation of Q_EE^-1, alpha_E solved afresh and the step taken again from the last verified
breakpoint. A path whose every step is refactorised and refined is the incrementally updated path;
drift injected into the inverse, into alpha, or a missed event is detected and repaired, and the
path goes on to lambda_min instead of stopping; its breakpoints are optimal (a tight bundle solve,
and the KKT conditions with a zero duality gap from a dense NumPy Q)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import rankkit.paths.exact as ep
from conftest import make_dataset
from rankkit.paths.exact import PathWarning, exact_path, kkt_violation
from rankkit.solvers.bundle import BundleRankSVM
from reference import dense, explicit_pairs

# ties (integer features, two labels), one-document queries, a one-label query, empty and duplicated rows
CASES = {
    "awkward": lambda: make_dataset(seed=0),
    "ties": lambda: make_dataset(seed=5, integer_features=True, n_labels=2, sizes=(1, 20, 3, 40, 1, 15)),
}


def quiet(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error", PathWarning)  # every path here must reach lambda_min
        return exact_path(*args, **kwargs)


def same_path(a, b, rtol=1e-9):
    assert a.stop_reason == b.stop_reason == "lambda_min"
    assert [(x.event, x.pairs, x.n_alpha, x.n_zero, x.n_one) for x in a.breakpoints] == \
        [(x.event, x.pairs, x.n_alpha, x.n_zero, x.n_one) for x in b.breakpoints]
    np.testing.assert_allclose(a.lambdas, b.lambdas, rtol=rtol, atol=0)
    for t in range(0, len(a.breakpoints), 7):
        assert np.max(np.abs(a.alpha(t) - b.alpha(t))) < 1e-8, t
        assert a.breakpoints[t].objective == pytest.approx(b.breakpoints[t].objective, rel=1e-9)


def certify(ds, res, every=5):
    """KKT and zero duality gap at the breakpoints, from a dense Q = P X X' P' built with NumPy."""
    X = dense(ds)
    P = explicit_pairs(ds.y, ds.qptr)
    A = X[P[:, 0]] - X[P[:, 1]]
    assert np.array_equal(np.c_[res.pi, res.pj], P)
    Q = A @ A.T
    for t in range(0, len(res.breakpoints), every):
        a, lam = res.alpha(t), res.lambdas[t]
        marg = Q @ a / lam
        assert kkt_violation(a, marg) < 1e-7, t
        primal = np.maximum(0.0, 1.0 - marg).sum() + 0.5 * a @ Q @ a / lam
        dual = a.sum() - 0.5 * a @ Q @ a / lam
        assert primal - dual <= 1e-7 * max(1.0, primal), t
        assert primal == pytest.approx(res.breakpoints[t].objective, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("case", sorted(CASES))
def test_refactorised_at_every_step_equals_the_updated_path(case, monkeypatch):
    """RESID_TOL < 0: every direction refactorised from scratch and refined, every breakpoint's alpha_E
    solved afresh; EXACT_EVERY = 1: g from alpha at every step. The same path as the O(|E|^2)
    updates with g moved along h."""
    ds = CASES[case]()
    updated = quiet(ds, None)
    assert updated.stats["refactorisations"] == 0 and updated.stats["backtracks"] == 0
    assert max(b.n_alpha for b in updated.breakpoints) >= 3
    monkeypatch.setattr(ep, "RESID_TOL", -1.0)
    monkeypatch.setattr(ep, "EXACT_EVERY", 1)
    fresh = quiet(ds, None)
    assert fresh.stats["refactorisations"] >= fresh.n_events // 2
    same_path(updated, fresh)
    certify(ds, fresh)


@pytest.mark.parametrize("case", sorted(CASES))
def test_breakpoints_match_a_tight_bundle_solve(case):
    ds = CASES[case]()
    res = quiet(ds, None)
    X = dense(ds)
    P = explicit_pairs(ds.y, ds.qptr)
    A = X[P[:, 0]] - X[P[:, 1]]
    lams = res.lambdas
    for t in np.unique(np.linspace(1, 0.6 * (len(lams) - 1), 4).astype(int)):  # a bundle solve at C ~ 1e6 is slow
        lam = lams[t]
        ref = BundleRankSVM(C=1.0 / lam, tol=1e-10, loss="hinge", max_iter=5000).fit(ds)
        w = res.w_at(lam)
        J = 0.5 * w @ w + np.maximum(0.0, 1.0 - A @ w).sum() / lam
        assert J <= ref.objective * (1 + 1e-9)
        assert J >= ref.extra["lower_bound"] - 1e-9 * ref.objective
        assert np.max(np.abs(w - ref.w)) < 1e-6 * max(1.0, np.abs(ref.w).max())
    certify(ds, res)


def test_drift_in_the_updated_inverse_is_refactorised_not_a_stop(monkeypatch):
    """Every 10th pair entering E corrupts Q_EE^-1 by 1e-4 (relative): the direction's residual sees it,
    Q_EE^-1 is refactorised, and the path is the clean one."""
    ds = CASES["ties"]()
    clean = quiet(ds, None)
    add = ep._MarginSet.add
    count = {"n": 0}

    def drifting_add(self, p):
        ok = add(self, p)
        count["n"] += ok
        if ok and count["n"] % 10 == 0:
            self.Minv = self.Minv * (1 + 1e-4)
        return ok

    monkeypatch.setattr(ep._MarginSet, "add", drifting_add)
    res = quiet(ds, None)
    assert count["n"] >= 30
    assert res.stats["refactorisations"] >= 1 and res.stats["max_residual"] <= ep.RESID_TOL
    same_path(clean, res)


def test_drift_in_alpha_is_solved_afresh_not_a_stop(monkeypatch):
    """alpha_E knocked off by 1e-5 at every 25th move (and g = Q alpha recomputed from it, as every
    EXACT_EVERY moves): the margins of E are no longer 1, the check at the breakpoint solves alpha_E
    afresh from the sets, and the path is the clean one."""
    ds = CASES["awkward"]()
    clean = quiet(ds, None)
    move_to = ep._PathState.move_to
    count = {"n": 0}

    def drifting_move(self, lam, idx, eta, h, dz, dfeat):
        move_to(self, lam, idx, eta, h, dz, dfeat)
        count["n"] += 1
        if count["n"] % 25 == 0 and len(idx):
            self.alpha[idx] += 1e-5 * (0.5 - (self.alpha[idx] > 0.5))  # towards the middle: still in the box
            self.exact()

    monkeypatch.setattr(ep._PathState, "move_to", drifting_move)
    res = quiet(ds, None)
    assert res.stats["alpha_resolves"] >= 1 and res.stats["backtracks"] == 0
    same_path(clean, res, rtol=1e-8)
    certify(ds, res)


def test_a_missed_event_is_taken_again_from_the_last_verified_breakpoint(monkeypatch):
    """Once, the pair of the next event is hidden from the candidates: the path steps past its event, the
    breakpoint fails the KKT check (the sets are wrong, no refactorisation can mend that), the step is
    taken again from the last verified breakpoint, and the path is the clean one."""
    ds = CASES["awkward"]()
    clean = quiet(ds, None)
    candidates = ep._PathState.candidates
    state = {"calls": 0, "hidden": None}

    def hiding(self, idx, eta, h):
        kinds, best = candidates(self, idx, eta, h)
        state["calls"] += 1
        if state["calls"] == 40:  # hide the pair(s) of the coming event
            hit = np.flatnonzero(self.cand >= best * (1 - 1e-9))
            state["hidden"] = hit.tolist()
            self.cand[hit] = -np.inf
            best = float(self.cand.max())
        return kinds, best

    monkeypatch.setattr(ep._PathState, "candidates", hiding)
    res = quiet(ds, None)
    assert state["hidden"]
    assert res.stats["backtracks"] == 1
    same_path(clean, res)
    certify(ds, res)


def test_statistics_and_bounded_history():
    """stats: events, seconds per event, refactorisations; the history keeps O(m / 8) bytes per
    CHECKPOINT breakpoints, the changed alphas and d weights per breakpoint, never m per breakpoint."""
    ds = CASES["ties"]()
    res = quiet(ds, make_dataset(seed=9, sizes=(6, 9)))
    st = res.stats
    assert st["events"] == res.n_events and st["breakpoints"] == len(res.breakpoints)
    assert st["seconds_per_event"] == pytest.approx(st["path_seconds"] / res.n_events)
    for key in ("refactorisations", "periodic_refreshes", "refinements", "alpha_resolves", "backtracks",
                "exact_products", "max_residual", "max_kkt", "history_bytes"):
        assert key in st
    assert st["max_kkt"] <= ep.KKT_TOL
    m, nb, d = res.n_pairs, len(res.breakpoints), ds.n_features
    assert st["history_bytes"] < nb * m * 8 / 4  # far below one alpha per breakpoint
    assert all(b.metrics for b in res.breakpoints)  # every breakpoint graded (in blocks)
