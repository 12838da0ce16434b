"""The hinge-loss RankSVM, solved exactly by a bundle (cutting-plane) method: solver `bundle`.

    minimise J(w) = 0.5 ||w||^2 + R(w),   R(w) = C * sum_q w_q * sum over pairs max(0, 1 - w.(x_i - x_j))

R is convex and piecewise linear, so Newton does not apply; svm_rank and SVMperf use cutting
planes instead (Joachims 2006; Chapelle & Keerthi Sect. 4.1 give the O(n log n) subgradient).
This is BMRM (Teo, Vishwanathan, Smola & Le 2010): at w_t the O(n log n) kernels give R(w_t) and
a subgradient a_t, i.e. the plane R(w) >= a_t.w + b_t with b_t = R(w_t) - a_t.w_t. The model
J_t(w) = 0.5||w||^2 + max_i (a_i.w + b_i) is minimised through its dual, a small QP over the
simplex:

    max_alpha  b.alpha - 0.5 ||A' alpha||^2,   alpha >= 0, sum alpha = 1,   w = -A' alpha

Every dual value is a lower bound of min J; every J(w_t) an upper bound. It stops when the
relative duality gap (min_t J(w_t) - dual) / min_t J(w_t) falls below `tol`, which bounds how far
the returned w (the best iterate) is from the optimum, and stops unconverged when the rounding
error of the dual value exceeds that tolerance (huge features or C: the gap would prove nothing). The number of iterations is
O(1 / (lambda * eps)) in theory; a few dozen to a few hundred in practice.
"""

from __future__ import annotations

import time

import numpy as np

from rankkit.data import Dataset
from rankkit.errors import UsageError
from rankkit.solvers.base import ExactRankSVM, FitResult, Log, check_exact_magnitude, check_finite, quiet_fp
from rankkit.solvers.options import stop_message

DEFAULT_TOL = 1e-4  # relative duality gap
DEFAULT_MAX_ITER = 1000


def simplex_qp(G: np.ndarray, b: np.ndarray, alpha0: np.ndarray, iters: int = 2000, tol: float = 1e-13):
    """max_alpha b.alpha - 0.5 alpha' G alpha over the simplex (G positive semidefinite), by
    pairwise Frank-Wolfe-style coordinate steps between the best and the worst support point
    (an SMO on the single equality constraint), each with an exact line search. Returns alpha."""
    a = alpha0.copy()
    Ga = G @ a
    for _ in range(iters):
        grad = b - Ga  # ascent direction components
        i = int(np.argmax(grad))  # increase the best coordinate
        support = np.flatnonzero(a > 0)
        j = int(support[np.argmin(grad[support])])  # decrease the worst one that can decrease
        gap = grad[i] - grad[j]
        if gap <= tol * (1.0 + abs(grad[i])):
            break
        curv = G[i, i] + G[j, j] - 2.0 * G[i, j]
        step = a[j] if curv <= 0 else min(a[j], gap / curv)
        a[i] += step
        a[j] -= step
        Ga += step * (G[:, i] - G[:, j])
    return a


class BundleRankSVM(ExactRankSVM):
    """Solver `bundle`: the hinge-loss RankSVM by BMRM on the O(n log n) subgradient."""

    name = "bundle"
    DEFAULT_TOL = DEFAULT_TOL
    DEFAULT_MAX_ITER = DEFAULT_MAX_ITER

    def __init__(self, *args, loss: str = "hinge", **kwargs):
        if loss != "hinge":
            raise ValueError("the bundle solver minimises the hinge loss")
        super().__init__(*args, loss=loss, **kwargs)

    def fit(self, ds: Dataset, w0: np.ndarray | None = None, log: Log | None = None) -> FitResult:
        ds.require_pairs()
        check_exact_magnitude(ds, self.C)
        obj = self.objective(ds)
        obj.ds = ds  # for the wording of a non-finite error
        with quiet_fp():
            return bmrm(obj, w0=w0, tol=self.tol, max_iter=self.max_iter, log=log)


LINE_SEARCH_EVALS = 8  # loss evaluations per line search at most
OCAS_MU = 0.1  # the next cutting plane at (1 - mu) w_best + mu w_model (Franc & Sonnenburg 2009)


def _search_line(obj, w, y, d, delta, J0: float):
    """min over t >= 0 of J(w + t d) = 0.5 ||w + t d||^2 + C L(y + t delta) (delta = X d): J is
    convex and J' nondecreasing, so a bracket on the sign of the (right) derivative, narrowed by
    false position (Illinois), with LINE_SEARCH_EVALS loss evaluations at most. Returns (t, J(w + t
    d), active pairs) for the best t tried, or (0, J0, None) if none decreased J."""
    C = obj.C
    wd, dd = float(w @ d), float(d @ d)

    def at(t):
        R = C * obj.loss_y(y + t * delta)
        wt = w + t * d
        return 0.5 * float(wt @ wt) + R, wd + t * dd + C * float(obj.gy @ delta), obj.n_active

    best = (0.0, J0, None)
    lo, dlo = 0.0, None
    hi, dhi = None, None
    t = 1.0
    for _ in range(LINE_SEARCH_EVALS):
        Jt, dt, act = at(t)
        if Jt < best[1]:
            best = (t, Jt, act)
        if dt < 0:
            lo, dlo = t, dt
        else:
            hi, dhi = t, dt
            if dt == 0:
                break
        if hi is None:
            t = 2.0 * t  # J still decreasing at t: look further
        elif dlo is None:
            t = 0.5 * t if lo == 0.0 and t == hi else 0.5 * (lo + hi)
        else:
            t_new = lo - dlo * (hi - lo) / (dhi - dlo)  # false position on J'
            if not lo < t_new < hi:
                t_new = 0.5 * (lo + hi)
            t = t_new
        if hi is not None and hi - lo <= 1e-3 * hi:
            break
    return best


def bmrm(obj, w0=None, tol: float = DEFAULT_TOL, max_iter: int = DEFAULT_MAX_ITER, log: Log | None = None,
         line_search: bool = True) -> FitResult:
    """Minimise 0.5||w||^2 + C * L(w) for an objective whose loss_y gives the hinge loss and gy its
    subgradient in score space (PairwiseObjective or ExplicitPairObjective with loss "hinge").

    line_search (OCAS, Franc & Sonnenburg 2009; BMRM-LS): after each model solution w_m, the best
    point so far moves to the minimum of J on the segment from it through w_m, and the next cutting
    plane is taken at (1 - OCAS_MU) w_best + OCAS_MU w_m rather than at w_m. The model, its lower
    bound and the stopping rule are BMRM's, so the guarantee (gap <= tol * J) is the same; the
    best point improves far faster than the model's own iterates (fewer planes)."""
    t_start = time.perf_counter()
    d = obj.n_features
    w = np.zeros(d) if w0 is None else np.array(w0, dtype=np.float64, copy=True)
    planes_a: list[np.ndarray] = []
    planes_b: list[float] = []
    best_w, best_J, best_active = w.copy(), np.inf, 0
    best_y = None
    alpha = np.zeros(0)
    G = np.zeros((0, 0))
    lower = -np.inf
    converged, stop, detail, it = False, "", {}, 0
    for it in range(1, max_iter + 1):
        y = obj.scores(w)
        R = obj.C * obj.loss_y(y)
        a = obj.C * obj.gradient_loss()
        J = 0.5 * float(w @ w) + R
        _finite(obj, f"objective or subgradient at iteration {it}", J, a)
        if J < best_J:
            best_w, best_J, best_active, best_y = w.copy(), J, obj.n_active, y
        planes_a.append(a)
        planes_b.append(R - float(a @ w))
        # grow the Gram matrix of the planes by one row and column
        A = np.array(planes_a)
        new = A @ a
        G = np.pad(G, ((0, 1), (0, 1)))
        G[-1, :] = new
        G[:, -1] = new
        b = np.array(planes_b)
        alpha = np.append(alpha, 0.0)
        if it == 1:
            alpha[0] = 1.0
        alpha = simplex_qp(G, b, alpha)
        lower = max(lower, float(b @ alpha) - 0.5 * float(alpha @ G @ alpha))
        w = -(alpha @ A)
        _finite(obj, f"cutting-plane model at iteration {it}", lower, w)
        if line_search and best_J - lower > tol * best_J:
            step = w - best_w
            delta = obj.scores(step)
            t, Jt, act = _search_line(obj, best_w, best_y, step, delta, best_J)
            if t > 0.0:
                best_w = best_w + t * step
                best_y = best_y + t * delta
                best_J, best_active = Jt, act
            w = (1.0 - OCAS_MU) * best_w + OCAS_MU * w
        gap = best_J - lower
        if log:
            log(
                f"iter {it:4d}  J {best_J:.12e}  lower {lower:.12e}  gap/J {gap / best_J:.2e}  "
                f"planes {int(np.count_nonzero(alpha))}  violated {best_active}  {time.perf_counter() - t_start:.3f}s"
            )
        # the dual value is a difference of terms as large as |b|.alpha + 0.5 alpha'|G|alpha: its
        # rounding error must be below the tolerance, or the gap (even a negative one) proves nothing
        rounding = 4.0 * np.finfo(float).eps * (float(np.abs(b) @ alpha) + 0.5 * float(alpha @ np.abs(G) @ alpha))
        if rounding > tol * best_J:
            stop, detail = "precision", {"rounding": rounding, "bound": tol * best_J}
            break
        if gap <= tol * best_J:
            converged = True
            stop, detail = "duality_gap", {"gap": gap / best_J, "tol": tol}
            break
    else:
        stop, detail = "max_iter", {"max_iter": max_iter, "gap": (best_J - lower) / best_J}
    if line_search:  # the reported objective afresh from X w (the line search moved the scores by t * delta)
        best_J = 0.5 * float(best_w @ best_w) + obj.C * obj.loss_y(obj.scores(best_w))
        best_active = obj.n_active
    return FitResult(
        w=best_w,
        objective=best_J,
        iterations=it,
        converged=converged,
        message=stop_message(stop, detail),
        stop=stop,
        detail=detail,
        n_active=best_active,
        train_time=time.perf_counter() - t_start,
        extra={"duality_gap": float(best_J - lower), "lower_bound": float(lower)},
    )


def _finite(obj, what, *values):
    ds = getattr(obj, "ds", None)
    if ds is not None:
        check_finite(ds, "bundle", what, *values)
    elif not all(np.all(np.isfinite(v)) for v in values):
        raise UsageError(f"bundle: the {what} overflowed (not finite): scale the features down")
