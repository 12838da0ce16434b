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
relative duality gap (min_t J(w_t) - dual) / min_t J(w_t) falls below `tol`, with min_t J(w_t)
computed from X w itself, which bounds how far the returned w (the best point) is from the
optimum: J(w) - min J <= gap, and ||w - w*|| <= sqrt(2 gap) (J is 1-strongly convex). It stops
unconverged when the gap is within the rounding error of the dual value and that error exceeds
the tolerance (huge features or C: the gap would prove nothing). The number of iterations is
O(1 / (lambda * eps)) in theory; a dozen to a few hundred in practice with OCAS's line search.

Cost per iteration (the plain hinge loss): one X w, one X'g, three evaluations of the loss in
score space (rankkit.solvers._hinge_kernels: one pass per query, warm-started sorts) and a QP
over the planes (a compiled SMO; microseconds at these sizes).
"""

from __future__ import annotations

import time

import numpy as np

from rankkit.data import Dataset
from rankkit.errors import UsageError
from rankkit.solvers import _hinge_kernels as hk
from rankkit.solvers.base import ExactRankSVM, FitResult, Log, check_exact_magnitude, check_finite, quiet_fp
from rankkit.solvers.options import stop_message
from rankkit.sparse import csr_rmatvec
from rankkit.vectors import dot

DEFAULT_TOL = 1e-4  # relative duality gap
DEFAULT_MAX_ITER = 1000


def simplex_qp(G: np.ndarray, b: np.ndarray, alpha0: np.ndarray, iters: int = 2000, tol: float = 1e-13,
               gap_tol: float = 0.0):
    """max_alpha b.alpha - 0.5 alpha' G alpha over the simplex (G positive semidefinite), by
    pairwise Frank-Wolfe-style coordinate steps between the best and the worst support point
    (an SMO on the single equality constraint), each with an exact line search
    (_hinge_kernels.simplex_smo). Stops when the pair's gradient gap is below tol (relative), or
    when the Frank-Wolfe gap max_i grad_i - alpha.grad, a bound on how far the value is below the
    QP's maximum, is below gap_tol (absolute). Returns alpha."""
    a = np.array(alpha0, dtype=np.float64)  # a contiguous copy
    hk.simplex_smo(np.ascontiguousarray(G, dtype=np.float64), np.ascontiguousarray(b, dtype=np.float64), a,
                   int(iters), float(tol), float(gap_tol))
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
        oracle = None if self.rescale else HingeOracle(obj)  # rescaled losses: the objective's own sweeps
        with quiet_fp():
            return bmrm(obj, w0=w0, tol=self.tol, max_iter=self.max_iter, log=log, oracle=oracle)


LINE_SEARCH_STEPS = 1  # secant steps of the line search after its evaluation at the model's minimiser,
LINE_SEARCH_STEPS_COSTLY = 3  # or this many when an iteration's other work costs COSTLY_RATIO evaluations:
COSTLY_RATIO = 10.0  # (2 nnz + planes x features) / (EVAL_COST x documents), a deterministic estimate
EVAL_COST = 40.0  # a loss evaluation per document, in multiply-adds of X w (measured: MQ2008, 200k file)
# (MQ2008 and the 200k file: ~2.4 and ~1.9, one step is best; a 47k-feature AUC query: ~100, 3 steps
# took 168 iterations instead of 272 and 2.5x less time, BENCHMARKS.md)
OCAS_MU = 0.05  # the next cutting plane at (1 - mu) w_best + mu w_model (Franc & Sonnenburg 2009 use 0.1;
# 0.05 took fewer iterations and loss evaluations on MQ2008 Fold1 and the 200k file, BENCHMARKS.md)
QP_SHARE = 0.01  # the inner QP stops when its own gap is below this share of the allowed duality gap
PLANE_MAX_AGE = 50  # a plane the QP has not used for this many iterations leaves the bundle (as svm_rank's
# cutting planes do): each new plane costs O(planes x features) for its row of G, so a bundle that only
# grows costs O(iterations^2 x features) (and memory) on hard problems with many features


class _Planes:
    """The bundle: the planes' slopes A (one row each, in an array that doubles when full), their
    offsets b, the Gram matrix G = A A', grown by one row and column per plane, and each plane's age
    (iterations since its dual weight was last non-zero)."""

    def __init__(self, d: int):
        self.A = np.empty((8, d))
        self.G = np.empty((8, 8))
        self.b = np.empty(8)
        self.age = np.zeros(8, dtype=np.int64)
        self.k = 0

    def add(self, a: np.ndarray, b: float) -> None:
        k = self.k
        if k == self.A.shape[0]:
            A, G, bb = np.empty((2 * k, self.A.shape[1])), np.empty((2 * k, 2 * k)), np.empty(2 * k)
            A[:k], G[:k, :k], bb[:k] = self.A, self.G[:k, :k], self.b
            self.A, self.G, self.b = A, G, bb
            self.age = np.concatenate([self.age, np.zeros(k, dtype=np.int64)])
        self.A[k] = a
        row = np.einsum("ij,j->i", self.A[:k + 1], a)
        self.G[k, :k + 1] = row
        self.G[:k + 1, k] = row
        self.b[k] = b
        self.age[k] = 0
        self.k = k + 1

    def retire(self, alpha: np.ndarray, max_age: int) -> np.ndarray:
        """Age the planes by one iteration (0 for those the QP uses); once a quarter of them are older
        than max_age, drop those (a model of fewer planes is still below J: every later dual value
        remains a lower bound; a quarter at a time keeps the copying O(features) per iteration).
        Returns alpha on the planes kept."""
        k = self.k
        age = self.age[:k]
        age += 1
        age[alpha > 0.0] = 0
        keep = np.flatnonzero(age <= max_age)
        if 4 * (k - keep.shape[0]) < k:
            return alpha
        m = keep.shape[0]
        self.A[:m] = self.A[keep]
        self.G[:m, :m] = self.G[np.ix_(keep, keep)]
        self.b[:m] = self.b[keep]
        self.age[:m] = age[keep]
        self.k = m
        return alpha[keep]


class ObjectiveOracle:
    """The loss and a subgradient in score space from the objective itself (any loss_y / gy /
    n_active objective: rescaled pairs, explicit pairs): (L(y), dL/dy (a copy), violated pairs)."""

    def __init__(self, obj):
        self.obj = obj

    def __call__(self, y):
        loss = self.obj.loss_y(y)
        return loss, self.obj.gy.copy(), self.obj.n_active


class HingeOracle:
    """The plain hinge loss of a PairwiseObjective (query weights, no rescaling) by the bundle's own
    kernel (rankkit.solvers._hinge_kernels): one pass per query, each sort warm-started from the
    previous call's order. `resorted` counts the queries it had to sort from scratch."""

    def __init__(self, obj):
        self.lev, self.qptr, self.nlev, self.qweight = obj.lev, obj.qptr, obj.nlev, obj.qweight
        n = obj.n_rows
        self.order = np.arange(n, dtype=np.int64)
        sizes = np.diff(self.qptr)
        self.big = np.flatnonzero((sizes >= hk.NUMPY_SORT_MIN) & (self.nlev >= 2))
        self.resorted = 0
        self.moves = hk.INSERTION_MOVES

    def __call__(self, y):
        gy = np.empty(y.shape[0])
        loss, active, resorted = hk.hinge_loss_grad(y, self.lev, self.qptr, self.nlev, self.qweight, self.order, gy,
                                                    self.big, self.moves)
        self.resorted += resorted
        return loss, gy, active


class _Point:
    """A point w of the search, its scores y (X w, or a combination of exact products) and what the
    oracle gave there: J, the loss R = C L(y), the score-space subgradient gy and the violated
    pairs. `exact`: y was computed as X w itself."""

    __slots__ = ("w", "y", "J", "R", "gy", "active", "exact")

    def __init__(self, oracle, C, w, y, exact, count):
        count.append(1)
        self.w, self.y, self.exact = w, y, exact
        loss, self.gy, self.active = oracle(y)
        self.R = C * loss
        self.J = 0.5 * dot(w, w) + self.R


def _line_search(oracle, C, best: _Point, ym: np.ndarray, wm: np.ndarray, evals: list, steps: int):
    """OCAS's step: the best point on the segment from `best` through the model's minimiser wm
    (t = 1), then the next cutting-plane point t_c = t* + OCAS_MU (1 - t*) on the same segment,
    whose scores best.y + t_c delta need no product with X. J(t) = 0.5||w + t d||^2 + C L(y + t delta) is
    convex; its derivative wd + t dd + C gy(t).delta is taken from the subgradient the loss kernels
    give at each point. One evaluation at t = 1, `steps` secant (false-position) steps on
    the derivative inside the bracket, then the cutting-plane point: steps + 2 loss
    evaluations (the step need not be exact: the lower bound and the stopping rule do not depend
    on it). Returns (the new best point, the cutting-plane point)."""
    d = wm - best.w
    delta = ym - best.y
    wd, dd = dot(best.w, d), dot(d, d)

    def at(t, y=None):
        p = _Point(oracle, C, best.w + t * d, best.y + t * delta if y is None else y, y is not None, evals)
        return p, wd + t * dd + C * dot(p.gy, delta)

    g0 = wd + C * dot(best.gy, delta)
    p1, g1 = at(1.0, ym)
    tried = [(0.0, best), (1.0, p1)]
    lo, glo, hi, ghi = 0.0, g0, 1.0, g1
    if g1 < 0.0:  # still descending at the model's minimiser: one step beyond it
        lo, glo, hi, ghi = 1.0, g1, None, None
    for _ in range(steps):
        if hi is None:
            t = 2.0 * lo
        elif glo < 0.0 < ghi:
            t = lo + (hi - lo) * (-glo / (ghi - glo))
        else:
            break  # no sign change: 0 (or 1) is the best the derivative can tell
        p, g = at(t)
        tried.append((t, p))
        if g < 0.0:
            lo, glo = t, g
        else:
            hi, ghi = t, g
    t_best, new_best = min(tried, key=lambda tp: tp[1].J)
    t_c = t_best + OCAS_MU * (1.0 - t_best)
    if t_c == 1.0:
        return new_best, p1
    cut, _ = at(t_c)
    return (cut if cut.J < new_best.J else new_best), cut


def bmrm(obj, w0=None, tol: float = DEFAULT_TOL, max_iter: int = DEFAULT_MAX_ITER, log: Log | None = None,
         line_search: bool = True, oracle=None) -> FitResult:
    """Minimise 0.5||w||^2 + C * L(w) for an objective whose loss_y gives the hinge loss and gy its
    subgradient in score space (PairwiseObjective or ExplicitPairObjective with loss "hinge").

    line_search (OCAS, Franc & Sonnenburg 2009; BMRM-LS): after each model solution w_m, the best
    point so far moves to a better point on the segment from it through w_m (_line_search), and
    the next cutting plane is taken at (1 - OCAS_MU) w_best + OCAS_MU w_m rather than at w_m. The
    model, its lower bound and the stopping rule are BMRM's, so the guarantee (gap <= tol * J) is
    the same; the best point improves far faster than the model's own iterates (fewer planes).

    Planes are taken in score space: at scores y with subgradient gy, L(y') >= L(y) + gy.(y' - y)
    for every y', so R(w) >= a.w + b with a = C X'gy and b = C (L(y) - gy.y) holds whether y is
    X w_c itself or the line search's combination of exact products. The objective reported,
    and the one the stopping rule trusts, is computed afresh from X w.

    oracle(y) -> (L(y), dL/dy, violated pairs): ObjectiveOracle(obj) when None; HingeOracle(obj)
    for the plain hinge loss (what BundleRankSVM uses when nothing is rescaled)."""
    t_start = time.perf_counter()
    C = obj.C
    d = obj.n_features
    oracle = ObjectiveOracle(obj) if oracle is None else oracle
    n, nnz = obj.indptr.shape[0] - 1, int(obj.indptr[-1])
    w = np.zeros(d) if w0 is None else np.array(w0, dtype=np.float64, copy=True)
    evals: list = []  # one entry per loss evaluation
    cut = _Point(oracle, C, w, obj.scores(w), True, evals)
    best = cut
    planes = _Planes(d)
    alpha = np.zeros(0)
    lower = -np.inf
    converged, stop, detail, it = False, "", {}, 0
    for it in range(1, max_iter + 1):
        _finite(obj, f"objective or subgradient at iteration {it}", cut.J, cut.gy)
        a = C * csr_rmatvec(obj.data, obj.indices, obj.indptr, cut.gy, np.empty(d))
        planes.add(a, cut.R - C * dot(cut.gy, cut.y))
        k = planes.k
        G, b = planes.G[:k, :k], planes.b[:k]
        alpha = np.append(alpha, 1.0 if k == 1 else 0.0)
        alpha = simplex_qp(G, b, alpha, gap_tol=QP_SHARE * tol * best.J)
        lower = max(lower, dot(b, alpha) - 0.5 * float(np.einsum("i,ij,j->", alpha, G, alpha)))
        wm = np.zeros(d)
        for i in np.flatnonzero(alpha):  # w_m = -A'alpha from the planes in use only
            wm -= alpha[i] * planes.A[i]
        _finite(obj, f"cutting-plane model at iteration {it}", lower, wm)
        # the dual value is a difference of terms as large as |b|.alpha + 0.5 alpha'|G|alpha: its
        # rounding error must be below the tolerance, or the gap (even a negative one) proves nothing
        rounding = 4.0 * np.finfo(float).eps * (dot(np.abs(b), alpha)
                                                 + 0.5 * float(np.einsum("i,ij,j->", alpha, np.abs(G), alpha)))
        gap = best.J - lower
        stopping = gap <= tol * best.J or (rounding > tol * best.J and gap <= rounding) or it == max_iter
        if stopping and not best.exact:  # every stop is decided, and its gap reported, on J from X w itself
            best = _Point(oracle, C, best.w, obj.scores(best.w), True, evals)
            gap = best.J - lower
        if log:
            log(
                f"iter {it:4d}  J {best.J:.12e}  lower {lower:.12e}  gap/J {gap / best.J:.2e}  "
                f"planes {int(np.count_nonzero(alpha))}  violated {best.active}  {time.perf_counter() - t_start:.3f}s"
            )
        if rounding > tol * best.J and gap <= rounding:  # within its rounding error: no plane can certify it
            stop, detail = "precision", {"rounding": rounding, "bound": tol * best.J}
            break
        if gap <= tol * best.J and rounding <= tol * best.J:
            converged = True
            stop, detail = "duality_gap", {"gap": gap / best.J, "tol": tol}
            break
        if it == max_iter:
            stop, detail = "max_iter", {"max_iter": max_iter, "gap": gap / best.J}
            break
        alpha = planes.retire(alpha, PLANE_MAX_AGE)
        ym = obj.scores(wm)
        if line_search:
            costly = (2.0 * nnz + planes.k * d) / (EVAL_COST * max(n, 1)) >= COSTLY_RATIO
            best, cut = _line_search(oracle, C, best, ym, wm, evals,
                                     LINE_SEARCH_STEPS_COSTLY if costly else LINE_SEARCH_STEPS)
        else:
            cut = _Point(oracle, C, wm, ym, True, evals)
            if cut.J < best.J:
                best = cut
    if not best.exact:  # (only without iterations) the reported objective afresh from X w
        best = _Point(oracle, C, best.w, obj.scores(best.w), True, evals)
    return FitResult(
        w=best.w,
        objective=best.J,
        iterations=it,
        converged=converged,
        message=stop_message(stop, detail),
        stop=stop,
        detail=detail,
        n_active=best.active,
        train_time=time.perf_counter() - t_start,
        extra={"duality_gap": float(best.J - lower), "lower_bound": float(lower), "loss_evaluations": len(evals)},
    )




def _finite(obj, what, *values):
    ds = getattr(obj, "ds", None)
    if ds is not None:
        check_finite(ds, "bundle", what, *values)
    elif not all(np.all(np.isfinite(v)) for v in values):
        raise UsageError(f"bundle: the {what} overflowed (not finite): scale the features down")
