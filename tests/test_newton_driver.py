"""One truncated-Newton driver (issue 21): rankkit.solvers.newton.truncated_newton runs any
objective of the NewtonObjective protocol; the Dask fit is that function on per-part sums, and
the grid path is one loop (paths.grid.path_over) whether the fits run here or on a cluster."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import numpy as np
import pytest

import rankkit.paths.grid as grid_mod
from rankkit.solvers import newton
from rankkit.solvers.options import stop_message

ROOT = Path(__file__).resolve().parent.parent


class Quadratic:
    """f(w) = 0.5 w.w + C * 0.5 (w - c)'A(w - c): a NewtonObjective with a known optimum, f > 0."""

    def __init__(self, A, c, C):
        self.A, self.c, self.C = A, c, C
        self.n_features = c.shape[0]
        self.n_active = 0
        self.calls = []

    def _fg(self, w):
        r = w - self.c
        return 0.5 * w @ w + self.C * 0.5 * (r @ self.A @ r), w + self.C * (self.A @ r)

    def start(self, w):
        self.calls.append("start")
        return self._fg(w)

    def hess_vec(self, s):
        return s + self.C * (self.A @ s)

    def linesearch_and_update(self, w, d, f, g, gd):
        self.calls.append("step")
        w = w + d  # exact for a quadratic: the Newton step is t = 1
        f_new, g_new = self._fg(w)
        return (1.0, w, f_new, g_new) if f_new < f else (0.0, w - d, f, g)

    def finish(self, w, f, g):
        self.calls.append("finish")
        return self._fg(w)

    def check_finite(self, what, *values):
        for v in values:
            assert np.all(np.isfinite(v)), what

    def clock(self):
        return "0.000s"


def test_the_driver_runs_any_objective_of_the_protocol():
    rng = np.random.default_rng(0)
    M = rng.standard_normal((6, 6))
    A = M @ M.T
    c = rng.standard_normal(6)
    obj = Quadratic(A, c, 2.0)
    lines = []
    res = newton.truncated_newton(obj, tol=1e-10, log=lines.append)
    exact = np.linalg.solve(np.eye(6) + 2.0 * A, 2.0 * (A @ c))
    np.testing.assert_allclose(res.w, exact, rtol=1e-9, atol=1e-12)
    assert res.converged and res.stop == "converged" and res.detail["tol"] == 1e-10
    assert res.message == stop_message("converged", res.detail)
    assert obj.calls[0] == "start" and obj.calls[-1] == "finish"
    assert lines[0].startswith("iter   0  f ") and "converged" in lines[-1]


def test_stop_codes_and_their_words():
    rng = np.random.default_rng(1)
    M = rng.standard_normal((5, 5))
    obj = Quadratic(M @ M.T + 1e3 * np.eye(5), rng.standard_normal(5), 1.0)
    res = newton.truncated_newton(obj, tol=1e-300, max_iter=0)
    assert (res.stop, res.converged, res.detail) == ("max_iter", False, {"max_iter": 0})
    assert res.message == "stopped at --max-iter 0 before the stopping rule was met"
    zero = Quadratic(np.eye(3), np.zeros(3), 1.0)
    res = newton.truncated_newton(zero)
    assert (res.stop, res.converged, res.message) == ("zero_gradient", True, "gradient is exactly zero")
    assert stop_message("line_search", {}).startswith("line search could not decrease")
    assert stop_message("converged", {"ratio": 1.234e-7, "tol": 1e-6}) == \
        "Newton decrement / objective = 1.23e-07 < tol 1e-06"


def test_w0_of_the_wrong_shape_is_refused_by_the_driver():
    obj = Quadratic(np.eye(3), np.ones(3), 1.0)
    with pytest.raises(ValueError, match="w0 must be 3 finite numbers"):
        newton.truncated_newton(obj, w0=np.ones(4))
    with pytest.raises(ValueError, match="w0 must be 3 finite numbers"):
        newton.truncated_newton(obj, w0=np.array([1.0, math.nan, 0.0]))


def _calls(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            out.add(f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", ""))
    return out


def test_the_distributed_fit_and_path_have_no_loop_of_their_own():
    """The Dask code runs the one driver and the one path loop: it never calls CG or the path's
    per-point scoring itself."""
    newton_calls = _calls(ROOT / "rankkit" / "parts" / "newton.py")
    assert "truncated_newton" in newton_calls
    assert "conjugate_gradient" not in newton_calls
    path_calls = _calls(ROOT / "rankkit" / "distributed" / "path.py")
    assert "path_over" in path_calls
    assert not {"validation_values", "mean_se", "select_point", "PathPoint"} & path_calls


def test_the_dask_objective_drives_the_same_function():
    distributed = pytest.importorskip("distributed")
    from rankkit.parts import newton as dnewton
    from rankkit.io.svmlight import read_svmlight

    assert dnewton.truncated_newton is newton.truncated_newton
    assert dnewton.minimise_along is newton.minimise_along
    sample = ROOT / "data" / "sample.train.txt"
    ds = read_svmlight(str(sample))
    local_lines, dask_lines = [], []
    local = newton.NewtonRankSVM(C=0.01).fit(ds, log=local_lines.append)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None,
                                  scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},  # no server on 8787
                                  silence_logs=50) as cluster, distributed.Client(cluster) as client:
        prob = dnewton.Problem(client, [str(sample)])
        try:
            remote = prob.fit(0.01, log=dask_lines.append)
        finally:
            prob.close()
    assert (remote.iterations, remote.stop) == (local.iterations, local.stop)
    assert remote.extra["cg_iterations"] == local.extra["cg_iterations"]
    np.testing.assert_allclose(remote.w, local.w, rtol=1e-10, atol=1e-13)
    assert math.isclose(remote.objective, local.objective, rel_tol=1e-12)
    # the same progress lines but for the timing at their end
    assert [ln.split("  ")[:3] for ln in dask_lines] == [ln.split("  ")[:3] for ln in local_lines]


def test_grid_path_is_the_one_loop(monkeypatch):
    """grid_path hands its fits to path_over: a stand-in fit shows the loop is all there is."""
    from rankkit.io.svmlight import read_svmlight

    valid = read_svmlight(str(ROOT / "data" / "sample.vali.txt"))
    seen = []

    def fit(C, w0):
        seen.append((C, None if w0 is None else w0.copy()))
        return newton.FitResult(w=np.full(valid.n_features, C), objective=1.0, iterations=1, converged=True,
                                message="", stop="converged")

    res = grid_mod.path_over(fit, [0.1, 1.0, 10.0], valid, metric="map", extend=False)
    assert [c for c, _ in seen] == [0.1, 1.0, 10.0]
    assert seen[0][1] is None and np.all(seen[1][1] == 0.1) and np.all(seen[2][1] == 1.0)  # warm starts
    assert [p.C for p in res.points] == [0.1, 1.0, 10.0] and res.method == "grid"
    # the edge rule (on by default) goes through the same fit: every point here ranks alike, so the
    # conventional choice (the smallest C) is looked past once, where w's direction does not change
    seen.clear()
    res = grid_mod.path_over(fit, [0.1, 1.0, 10.0], valid, metric="map")
    assert [c for c, _ in seen] == [0.1, 1.0, 10.0, 0.01] and np.all(seen[3][1] == 0.1)
    assert [p.C for p in res.points] == [0.01, 0.1, 1.0, 10.0] and res.at_edge is None


def test_path_over_knows_no_solver_the_caller_hands_it_what_fits_share(monkeypatch):
    """path_over takes fit(C, w0) and `along`, the context the warm-started fits of one path share
    (Newton's: rankkit.solvers.newton.path_memory): entered once around the whole warm path, its
    edge points included, and not at all for a cold path or without one (issue 36: the grid path
    over a fit callback)."""
    import contextlib

    from rankkit.io.svmlight import read_svmlight

    valid = read_svmlight(str(ROOT / "data" / "sample.vali.txt"))
    inside, entered = [False], []

    @contextlib.contextmanager
    def along():
        entered.append(1)
        inside[0] = True
        try:
            yield
        finally:
            inside[0] = False

    seen = []

    def fit(C, w0):
        seen.append(inside[0])
        return newton.FitResult(w=np.full(valid.n_features, C), objective=1.0, iterations=1, converged=True,
                                message="", stop="converged")

    res = grid_mod.path_over(fit, [0.1, 1.0, 10.0], valid, metric="map", along=along)
    assert len(res.points) == 4 and seen == [True] * 4 and entered == [1] and not inside[0]
    seen.clear()
    grid_mod.path_over(fit, [0.1, 1.0], valid, metric="map", along=along, warm_start=False, extend=False)
    assert seen == [False, False] and entered == [1]
    seen.clear()
    grid_mod.path_over(fit, [0.1, 1.0], valid, metric="map", extend=False)
    assert seen == [False, False]
