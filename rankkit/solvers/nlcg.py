"""Primal non-linear conjugate gradient RankSVM (Chapelle & Keerthi 2010, Sect. 2): solver `nlcg`.

Sect. 2 names two ways to minimise the primal objective: non-linear conjugate gradient, which
"only requires the gradient of the objective function and a line search procedure" (secant method
or cubic interpolation), and truncated Newton, which the paper chose ("both methods are roughly
equivalent", Chapelle 2007a). This is the first one, on the same objective as `newton`:

    f(w) = 0.5 ||w||^2 + C * sum over queries q of w_q * sum over pairs of q max(0, 1 - w.(x_i - x_j))^2

with the same O(nnz + n log n) value and gradient (objectives.pairwise: one sort per query, Fenwick
sweeps; query weights and every rescaling included). An iteration:

    delta = X d                                   one product with X, O(nnz)
    line search on phi(t) = f(w + t d)            in score space: each trial sorts y + t delta and
                                                  sweeps, O(n log n), no product with X
    g = w + C X' dL/dy at the new point            one product with X', O(nnz)
    d = -g + beta d, beta = max(0, g.(g - g_prev) / g_prev.g_prev)   Polak-Ribiere+ (Shewchuk 1994);
                                                  d = -g again if it is not a descent direction

The paper's remark that the line search costs O(n) for SVMs (with X s precomputed) becomes O(n log n)
per trial here, since the pairwise loss needs each query sorted at y + t delta.

Line search: the secant method on phi'(t) = w.d + t d.d + C (dL/dy at y + t delta).delta, kept in a
bracket (regula falsi with the Illinois modification). The bracket is known before any trial: f is
1-strongly convex (H >= I), so phi'(t) >= phi'(0) + t d.d and the minimiser lies in
(0, -phi'(0) / d.d]. A step is accepted when |phi'(t)| <= LS_SLOPE |phi'(0)| with Armijo's decrease
(the strong Wolfe conditions, c2 = 0.01: a nearly exact search, which conjugate directions need).

Stopping rule: ||g||^2 <= tol * f. Since H >= I, the Newton decrement g' H^-1 g is at most ||g||^2,
so this implies `newton`'s rule (decrement / f < tol, with the same tol, 1e-6 by default) and
certifies f - f* <= ||g||^2 / 2 <= tol f / 2: the two solvers stop at the same relative accuracy,
nlcg's bound being a guarantee rather than an estimate. It is stricter in ill-conditioned problems
(large C), where g' H^-1 g << ||g||^2.
"""

from __future__ import annotations

import math
import time

import numpy as np

from rankkit.data import Dataset
from rankkit.solvers.base import ExactRankSVM, FitResult, Log, check_exact_magnitude, check_finite, quiet_fp
from rankkit.solvers.options import stop_message
from rankkit.vectors import dot, norm

DEFAULT_MAX_ITER = 5000
ARMIJO = 1e-4
LS_SLOPE = 0.01  # |phi'(t)| <= LS_SLOPE |phi'(0)|: strong Wolfe with c2 = 0.01
LS_MAX_TRIALS = 60


def _line_search(obj, w, y, d, delta, f0: float, gd: float, t0: float, trial: np.ndarray):
    """Step t along d from w (scores y, delta = X d). Returns (t, f(w + t d), trials), the
    objective's state left at w + t d and `trial` holding y + t delta; (0, f0, trials) if no step
    decreased f (numerical precision reached)."""
    wd, dd = dot(w, d), dot(d, d)
    t_hi = -gd / dd  # phi'(t_hi) >= 0 by strong convexity
    trials = 0

    def phi(t):
        np.multiply(delta, t, out=trial)
        np.add(y, trial, out=trial)
        ft = obj.evaluate(w + t * d, trial)
        return ft, wd + t * dd + obj.C * dot(obj.gy, delta)

    lo, s_lo = 0.0, gd
    hi, s_hi = t_hi, None  # the slope at hi is known to be >= 0, evaluated when needed
    t = min(max(t0, 0.0), t_hi) if t0 > 0.0 else t_hi
    side = 0
    best = (0.0, f0)
    while trials < LS_MAX_TRIALS:
        ft, st = phi(t)
        trials += 1
        if ft < best[1]:
            best = (t, ft)
        if abs(st) <= LS_SLOPE * abs(gd) and ft <= f0 + ARMIJO * t * gd:
            return t, ft, trials
        if st < 0.0:
            lo, s_lo = t, st
            if side == -1 and s_hi is not None:
                s_hi *= 0.5  # Illinois: the other end stayed twice
            side = -1
        else:
            hi, s_hi = t, st
            if side == 1:
                s_lo *= 0.5
            side = 1
        if s_hi is None:  # no slope known above lo yet: try the bracket's end
            if t >= hi:  # phi'(t_hi) < 0 only by rounding: t_hi is the minimiser to working precision
                break
            t = hi
            continue
        t_new = lo - s_lo * (hi - lo) / (s_hi - s_lo) if s_hi != s_lo else 0.5 * (lo + hi)
        if not lo < t_new < hi:
            t_new = 0.5 * (lo + hi)
        if hi - lo <= 1e-15 * hi:
            break
        t = t_new
    t, ft = best
    if t == 0.0:
        obj.evaluate(w, y)  # restore the state at w
        return 0.0, f0, trials
    phi(t)  # leave the state (and trial) at the best point
    return t, ft, trials + 1


def nonlinear_cg(obj, ds: Dataset | None, w0: np.ndarray | None = None, tol: float = 1e-6,
                 max_iter: int = DEFAULT_MAX_ITER, log: Log | None = None, name: str = "nlcg") -> FitResult:
    """Polak-Ribiere+ non-linear CG on a PairwiseObjective (see the module docstring). FitResult.stop:
    gradient (||g||^2 / f <= tol), zero_gradient, max_iter or line_search."""
    t_start = time.perf_counter()
    w = np.zeros(obj.n_features) if w0 is None else np.array(w0, dtype=np.float64, copy=True)
    if w.shape != (obj.n_features,) or not np.all(np.isfinite(w)):
        raise ValueError(f"w0 must be {obj.n_features} finite numbers, got shape {w.shape}")

    def finite(what, *values):
        if ds is not None:
            check_finite(ds, name, what, *values)

    y = obj.scores(w)
    trial = np.empty_like(y)
    delta = np.empty_like(y)
    f = obj.evaluate(w, y)
    g = obj.gradient(w)
    finite("objective or gradient at the start", f, g)
    d = -g
    gg = dot(g, g)
    it = restarts = 0
    evaluations = 1
    t_prev = gd_prev = None
    stop, detail = "", {}
    if log:
        log(f"iter   0  f {f:.12e}  |g| {math.sqrt(gg):.3e}  violated {obj.n_active}")
    while True:
        if gg == 0.0:
            stop = "zero_gradient"
            break
        if gg <= tol * f:
            stop, detail = "gradient", {"ratio": gg / f, "tol": tol}
            break
        if it >= max_iter:
            stop, detail = "max_iter", {"max_iter": max_iter}
            break
        it += 1
        gd = dot(g, d)
        if not gd < 0.0:  # not a descent direction (PR+ can lose it with an inexact search): restart
            d = -g
            gd = -gg
            restarts += 1
        obj.scores(d, out=delta)
        # first trial: the previous step scaled by the change of slope (Nocedal & Wright 3.60)
        t0 = t_prev * gd_prev / gd if t_prev else 0.0
        t, f_new, trials = _line_search(obj, w, y, d, delta, f, gd, t0, trial)
        evaluations += trials
        if t == 0.0:
            stop = "line_search"
            break
        w = w + t * d
        y, trial = trial, y  # trial holds y + t delta
        g_new = obj.gradient(w)
        finite(f"objective or gradient at iteration {it}", f_new, g_new)
        gg_new = dot(g_new, g_new)
        beta = max(0.0, (gg_new - dot(g_new, g)) / gg)
        d = beta * d
        d -= g_new
        t_prev, gd_prev = t, gd
        f, g, gg = f_new, g_new, gg_new
        if log:
            log(f"iter {it:3d}  f {f:.12e}  |g| {math.sqrt(gg):.3e}  t {t:.3g}  ls {trials}  beta {beta:.3g}  "
                f"|g|^2/f {gg / f:.2e}  violated {obj.n_active}  {time.perf_counter() - t_start:.3f}s")
    # the reported figures afresh from X w (y drifted by the sums y + t delta)
    f = obj.evaluate(w, obj.scores(w))
    g = obj.gradient(w)
    finite("objective at the solution", f, w)
    g_norm = float(norm(g))
    if log and stop == "gradient":
        log(f"converged: |g|^2/f {g_norm * g_norm / f:.2e} <= tol {tol:g}")
    return FitResult(
        w=w,
        objective=f,
        iterations=it,
        converged=stop in ("gradient", "zero_gradient"),
        message=stop_message(stop, detail),
        n_active=obj.n_active,
        train_time=time.perf_counter() - t_start,
        extra={"line_search_evaluations": evaluations, "restarts": restarts, "gradient_norm": g_norm},
        stop=stop,
        detail=detail,
    )


class NlcgRankSVM(ExactRankSVM):
    """Solver `nlcg`: the registry entry the CLI instantiates."""

    name = "nlcg"
    DEFAULT_MAX_ITER = DEFAULT_MAX_ITER

    def fit(self, ds: Dataset, w0: np.ndarray | None = None, log: Log | None = None) -> FitResult:
        ds.require_pairs()
        check_exact_magnitude(ds, self.C)
        with quiet_fp():
            return nonlinear_cg(self.objective(ds), ds, w0=w0, tol=self.tol, max_iter=self.max_iter, log=log,
                                name=self.name)
