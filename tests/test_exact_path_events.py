"""The exact path's stopping rules and its incremental Q_EE^-1, through the public exact_path: a
complete path ends silently, a KKT violation and an unresolved tie stop it with a PathWarning that
names the caller's line, and the bordered-matrix / Schur-complement updates give the path that a
from-scratch inverse at every event gives."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from conftest import make_dataset
from rankkit.data import Dataset
import rankkit.paths.exact as ep
from rankkit.paths.exact import PathWarning, exact_path


def small() -> Dataset:
    return make_dataset(seed=1, sizes=(12, 15, 10, 8), n_features=5, one_label_queries=())


def one_pair() -> Dataset:
    """Two documents, one pair: alpha = lambda / Q_pp below lambda_0 reaches 0 only at lambda = 0."""
    X = np.array([[1.0, 2.0], [0.5, -1.0]])
    return Dataset(data=X.ravel().copy(), indices=np.tile(np.arange(2, dtype=np.int32), 2),
                   indptr=np.array([0, 2, 4], np.int64), y=np.array([1.0, 0.0]), qid=np.zeros(2, np.int64),
                   qptr=np.array([0, 2], np.int64), n_features=2).validate()


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_a_path_without_events_left_is_complete_and_silent(kernel):
    with warnings.catch_warnings():
        warnings.simplefilter("error", PathWarning)
        res = exact_path(one_pair(), None, kernel=kernel)
    assert res.stop_reason == "complete" and res.complete and res.n_events == 1
    assert [b.event for b in res.breakpoints] == ["init", "lambda_min"]
    assert res.breakpoints[-1].lam == pytest.approx(1e-6 * res.lambdas[0], rel=1e-12)


def test_a_kkt_violation_stops_the_path_with_a_warning_at_the_callers_line(monkeypatch):
    """A violation that survives the repairs (g from alpha, a refactorisation, alpha_E solved afresh,
    the step taken again from the last verified breakpoint) stops the path; the failed breakpoint
    is not recorded."""
    monkeypatch.setattr(ep, "KKT_TOL", -1.0)  # any breakpoint now counts as a violation
    with pytest.warns(PathWarning, match=r"KKT violated by .* at lambda .*\(numerical trouble: the step failed again "
                                         r"when taken from the last verified breakpoint with a fresh factorisation\) "
                                         r"after 1 events, 0 breakpoints") as caught:
        res = exact_path(small(), None)
    assert caught[0].filename == __file__  # stacklevel: the caller of exact_path, not the path's internals
    assert res.stop_reason.startswith("KKT violated") and not res.complete
    assert res.breakpoints == [] and res.stats["backtracks"] == 1


def test_an_unresolved_tie_stops_the_path_with_a_warning():
    ties = make_dataset(seed=5, integer_features=True, n_labels=2, sizes=(1, 20, 3, 40, 1, 15))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PathWarning)
        free = exact_path(ties, None)
    assert free.n_events > len(free.breakpoints)  # the path has zero-length steps ...
    with pytest.warns(PathWarning, match=r"degenerate breakpoint at lambda .*: ties did not resolve in 0 steps"):
        res = exact_path(ties, None, max_zero_steps=0)  # ... which this run does not allow
    assert res.stop_reason.startswith("degenerate breakpoint")
    n = len(res.breakpoints)
    assert [b.lam for b in res.breakpoints] == [b.lam for b in free.breakpoints[:n]]


@pytest.mark.parametrize("route", ["linear", "dense"])
def test_updated_inverse_gives_the_path_of_a_fresh_inverse_at_every_event(route, monkeypatch):
    """REFRESH = 1: Q_EE^-1 recomputed (Cholesky) after every event instead of the O(|E|^2) updates."""
    train = small()
    with warnings.catch_warnings():
        warnings.simplefilter("error", PathWarning)
        updated = exact_path(train, None, route=route)
        monkeypatch.setattr(ep, "REFRESH", 1)
        fresh = exact_path(train, None, route=route)
    assert max(b.n_alpha for b in updated.breakpoints) >= 3  # the updates had something to do
    assert [(b.event, b.pairs, b.n_alpha, b.n_zero, b.n_one) for b in fresh.breakpoints] == \
        [(b.event, b.pairs, b.n_alpha, b.n_zero, b.n_one) for b in updated.breakpoints]
    np.testing.assert_allclose(fresh.lambdas, updated.lambdas, rtol=1e-10, atol=0)
    for t in range(0, len(updated.breakpoints), 5):
        assert np.max(np.abs(fresh.alpha(t) - updated.alpha(t))) < 1e-9, t
