"""Primal truncated-Newton RankSVM (Chapelle & Keerthi 2010, Algorithm 1 with Sect. 4's O(n log n)
gradient and Hessian-vector products): solver `newton`.

    minimise f(w) = 0.5 ||w||^2 + C * sum over queries q of w_q * sum over pairs of q loss(w.(x_i - x_j))

with loss max(0, 1 - t)^2 (default) or Huber max(0, 1 - t)^2 - max(0, -t)^2, and w_q = 1 unless
query weights or svm_rank's query normalisation (w_q = 1 / pairs of q) are asked for.

Each Newton iteration solves H d = -g approximately by linear conjugate gradient (Hessian-vector
products; preconditioned by the diagonal of H or, with few features, by H itself when plain CG is
slow: see PRECONDITIONERS below) to the relative residual of `forcing` (Eisenstat & Walker's choice
1), then steps along d with a line search: t = 1 first (Armijo), and if that
fails a safeguarded one-dimensional Newton search on the piecewise-quadratic phi(t) = f(w + t d),
which is exact for this loss. It stops when the Newton decrement g' H^-1 g falls below tol * f, the
paper's relative rule (decrement / objective < 1e-6). Since H >= I, every CG iterate x (residual r)
bounds it: g' H^-1 g <= -g.x + x.r + |r|^2 (decrement_bound), so CG stops as soon as that bound is
below tol * f, and the run with it; a direction whose estimate -g.d is below tol * f but whose bound
is not is confirmed by continuing CG towards an accurate solve (a loose CG underestimates the
decrement on ill-conditioned problems). It warns rather than fails at --max-iter or when the line
search cannot decrease f. Along a warm-started path a CGMemory carries the preconditioner from fit
to fit.

The driver (truncated_newton) only talks to the objective through the NewtonObjective protocol,
like liblinear's newton.h: LocalObjective runs it in this process, and
rankkit.parts.newton.DaskObjective runs the same driver on per-part partial sums.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import time
from typing import Protocol

import numpy as np

from rankkit.data import Dataset
from rankkit.errors import UsageError
from rankkit.objectives.pairs import ExplicitPairObjective, explicit_pairs
from rankkit.objectives.pairwise import PairwiseObjective
from rankkit.objectives.rescale import pair_deltas, pair_margins
from rankkit.solvers.base import (DEFAULT_MAX_ITER, DEFAULT_TOL, ExactRankSVM, FitResult, Log, check_exact_magnitude,
                                  check_finite, quiet_fp)
from rankkit.solvers.options import stop_message
from rankkit.sparse import cholesky_lower, cholesky_solve
from rankkit.vectors import dot, norm

CG_MAX_ITER = 1000
CG_CONFIRM_RTOL = 1e-8  # relative CG residual of the solve that confirms the stopping rule
ARMIJO = 1e-4
FAR_DECREMENT = 1.0  # minimise_along: a Newton decrement above this times f is "far from the optimum", where
FAR_SLOPE = 0.1  # t = 1 passing Armijo's test is followed by a search to |phi'(t)| <= FAR_SLOPE |phi'(0)|
# (issue 27, the AUC problem: Newton steps 11 -> 10 and CG steps 175 -> 160 at n = 38,400; runs whose
# every decrement is below f are unchanged)
# The preconditioner of CG (truncated_newton's `precondition`; measured in BENCHMARKS.md, issue 27). "auto" escalates
# within a Newton step and stays escalated for the rest of the run, since conditioning is a property
# of the data: plain CG first (the diagonal from the start when at most DENSE_MAX_FEATURES features'
# scales differ by more than SPREAD_DIAG); after PLAIN_STEPS steps without converging, the diagonal of the
# generalised Hessian (O(nnz log R), about five Hessian-vector products); after DIAG_STEPS more, with
# at most DENSE_MAX_FEATURES features, the whole d x d Hessian (O(nnz d), Cholesky on its Jacobi
# scaling). With at most DENSE_DIRECT_FEATURES features, plain CG goes to the matrix directly after
# PLAIN_STEPS_DENSE steps (its build then costs about d/3 products, less than the steps the diagonal
# leaves). Each escalation continues CG from where it stopped. On well-scaled data CG converges
# within those steps and nothing changes; on raw features (MSLR) the diagonal or the matrix cut
# CG's steps from thousands to a few. Along a warm-started path (CGMemory) the next fit starts at
# the level reached and reuses the last matrix built.
PRECONDITIONERS = ("auto", "diag", "dense", "none")
# The line search's scores X d, summed from the products X p that CG's steps made anyway (SummedXd;
# issue 39): X d = sum of alpha_k X p_k, one axpy over the rows per CG step instead of one product
# X d over the data per Newton step. A direction is summed for at most XD_STEPS_PER_NNZ steps per
# stored value of a row on average (the whole data's nnz / rows, the same on every part), and X d
# is a product past that: a product of the 200k LETOR file (46 values a row) took 6 ms on 2
# threads, a step's axpy 0.3 ms on one, so 46 * 0.4 = 18 steps cost about one product (with the
# decimal codes read by value_at: 4.0 ms against 0.07 ms, min of 30, so 0.4 errs on the side of
# the product; that file's directions take 1-3 steps, MSLR's 2-6, either way summed). On parts
# (rankkit.parts.newton) the client keeps each summed step's (alpha, p) for a part that must replay
# the lineage: a fit sums directions while those p take at most XD_KEPT_PER_NNZ doubles per stored
# value of the data (a product afterwards; both faces count alike, so the same bits)
XD_STEPS_PER_NNZ = 0.4
XD_KEPT_PER_NNZ = 0.1
PLAIN_STEPS = 20
SPREAD_DIAG = 100.0  # auto, d <= DENSE_MAX_FEATURES: the diagonal from the start when max / median of the
# features' sums of squares exceed this (sparse text data, whose column norms follow word frequencies,
# starts plain: there the diagonal cost more time than the CG steps it saved, measured on the AUC problem)
DIAG_STEPS = 30
DENSE_MAX_FEATURES = 512  # the dense preconditioner: at most this many features (d x d matrices)
PLAIN_STEPS_DENSE = 5  # auto, d <= DENSE_DIRECT_FEATURES: plain CG steps before the d x d matrix
DENSE_DIRECT_FEATURES = 64  # (measured on MQ2008, 46 features: BENCHMARKS.md, issues 22 and 27, branch i22s)
DIAG_POWER = 0.9  # with more than DENSE_MAX_FEATURES features (no d x d matrix: sparse, text-like data) the
# diagonal preconditioner is diag(H)^0.9: the exact diagonal over-weights the frequent features, on which
# the scaled Hessian's smallest eigenvectors lie (issue 27, the AUC query, seeds 0-2: CG steps at n = 4,800
# / 19,200 / 38,400 from 82-87 / 137-138 / 159-162 to 76-78 / 122-123 / 139-146; 0.85 and 0.95 alike,
# 0.5 worse; runs that never use the diagonal are unchanged)
STALE_STEPS = 10  # CG steps a kept d x d matrix (CGMemory) may take before one is built at the point (a build
# costs O(nnz d), some 15 Hessian-vector products on MQ2008's 46 features; a fresh one converges in 1-3 steps)
STALE_DIAG_STEPS = 8  # CG steps a kept diagonal (CGMemory: the last one built, from an earlier Newton step or
# fit) may take before one is built at the point. A build costs O(nnz log R), measured at 8-9 products
# X.v on the MSLR-shaped file (500k x 136 raw features, issue 39), where it was rebuilt at every Newton
# step, 40% of the fit; the diagonal there is set by the features' scales (1e12 apart), which the
# active pairs change little, so the first one serves the whole run


def dense_inverse(H: np.ndarray):
    """v -> H^-1 v for a symmetric positive definite H (overwritten), by Cholesky on the Jacobi-scaled
    matrix (the raw one can have a condition number near 1/eps; the scaled one is far better).
    None if the factorisation fails (the caller falls back to the diagonal)."""
    dm = 1.0 / np.sqrt(np.diag(H))
    if not np.all(np.isfinite(dm)):
        return None
    H *= dm[:, None]
    H *= dm[None, :]
    if not np.all(np.isfinite(H)) or not cholesky_lower(H):
        return None
    return lambda v: cholesky_solve(H, dm, v, np.empty_like(v))


def conjugate_gradient(hess_vec, b: np.ndarray, rtol: float, max_iter: int, m_inv=None):
    """Solve H x = b for symmetric positive definite H from x = 0, until ||b - H x|| <= rtol ||b||
    (m_inv: see cg_steps). Returns (x, iterations, residual norm)."""
    return cg_steps(hess_vec, b, rtol, max_iter, m_inv)[:3]


def cg_steps(hess_vec, b: np.ndarray, rtol: float, max_iter: int, m_inv=None, x0=None, r0=None,
             certify: float | None = None, on_step=None):
    """Solve H x = b for symmetric positive definite H until ||b - H x|| <= rtol ||b||.
    m_inv: None, the inverse of a diagonal preconditioner M as an array, or a function v -> M^-1 v
    (preconditioned CG, the same stopping test on the unpreconditioned residual, so the same
    accuracy is asked of every preconditioner). x0, r0: continue from x0 with residual r0 = b - H x0
    (a restart, e.g. with another preconditioner); from x = 0 otherwise. certify: also stop as soon
    as decrement_bound(b, x, r) <= certify (for H >= I: b' H^-1 b is then certainly below it).
    on_step(alpha, x): called after each step x += alpha p, before the next hess_vec (the last
    product the objective made was H p: SummedXd sums the steps' X p into X x).
    Returns (x, iterations, residual norm, residual)."""
    x = np.zeros_like(b) if x0 is None else x0.copy()
    r = b.copy() if r0 is None else r0.copy()
    bb = dot(b, b)
    if not math.isfinite(bb):  # |b|^2 overflowed: no direction (the caller reports it, never "converged")
        return np.full_like(b, np.nan), 0, math.inf, r
    rr = dot(r, r)
    stop = (rtol * math.sqrt(bb)) ** 2
    it = 0

    def certified():
        return certify is not None and decrement_bound(b, x, r, rr) <= certify

    if m_inv is None:
        p = r.copy()
        while rr > stop and it < max_iter and not certified():
            Hp = hess_vec(p)
            pHp = dot(p, Hp)
            if pHp <= 0.0:  # cannot happen for H = I + C*PSD, but never divide by it
                break
            alpha = rr / pHp
            x += alpha * p
            if on_step is not None:
                on_step(alpha, x)
            r -= alpha * Hp
            rr_new = dot(r, r)
            p *= rr_new / rr
            p += r
            rr = rr_new
            it += 1
        return x, it, math.sqrt(rr), r
    solve = m_inv if callable(m_inv) else (lambda v: v * m_inv)
    z = solve(r)
    p = z.copy()
    rz = dot(r, z)
    while rr > stop and it < max_iter and not certified():
        Hp = hess_vec(p)
        pHp = dot(p, Hp)
        if pHp <= 0.0 or rz <= 0.0:
            break
        alpha = rz / pHp
        x += alpha * p
        if on_step is not None:
            on_step(alpha, x)
        r -= alpha * Hp
        rr = dot(r, r)
        z = solve(r)
        rz_new = dot(r, z)
        p *= rz_new / rz
        p += z
        rz = rz_new
        it += 1
    return x, it, math.sqrt(rr), r


def decrement_bound(b: np.ndarray, x: np.ndarray, r: np.ndarray, rr: float | None = None) -> float:
    """An upper bound on b' H^-1 b from any x and its residual r = b - H x, for H >= I (the Hessian
    of 0.5||w||^2 + C L with L convex): H^-1 b = x + H^-1 r, so
        b' H^-1 b = b.x + x.r + r' H^-1 r,  with 0 <= r' H^-1 r <= ||r||^2.
    With b = -g it bounds the Newton decrement g' H^-1 g (the bound minus ||r||^2 is a lower bound)
    however CG reached x: from 0 (then x.r = 0), restarted, or preconditioned."""
    rr = dot(r, r) if rr is None else rr
    return dot(b, x) + dot(x, r) + rr


class CGMemory:
    """What the CG solves of one run hand to the next run of a path (truncated_newton's `memory`;
    a run without one starts afresh): the level "auto" had escalated to (conditioning is a property
    of the data, and it worsens as C grows along a path, so the next fit starts there), and the last
    d x d Hessian built, kept as H_L = (H - I) / C so that it preconditions other points and other
    values of C until CG shows it is too stale (STALE_STEPS), the last diagonal of H_L built, kept
    the same way (STALE_DIAG_STEPS), and the features' scale_spread. One memory per path (or per run:
    the Newton steps of one fit): the fits of one dataset."""

    def __init__(self):
        self.level = 0
        self.hess_loss = None
        self.diag_loss = None
        self.spread = None


_PATH_MEMORY: contextvars.ContextVar = contextvars.ContextVar("rankkit_path_memory", default=None)


@contextlib.contextmanager
def path_memory():
    """Within it, the truncated_newton runs given no memory of their own share one CGMemory: the
    fits of one warm-started path (rankkit.paths.grid.path_over), whether they run in this process
    or on a cluster (the Dask fit is this driver too), so both paths stay the same algorithm.
    Per thread (a context variable): folds run side by side each keep their own."""
    token = _PATH_MEMORY.set(CGMemory())
    try:
        yield
    finally:
        _PATH_MEMORY.reset(token)


class Preconditioned:
    """The CG solves of one run with the preconditioner policy of `mode` (PRECONDITIONERS); memory:
    a CGMemory carried along a path (read at the start, updated as the run goes)."""

    def __init__(self, obj, mode: str, memory: CGMemory | None = None):
        if mode not in PRECONDITIONERS:
            raise ValueError(f"precondition must be one of {PRECONDITIONERS}, got {mode!r}")
        self.obj, self.mode = obj, mode
        self.level = {"none": 0, "auto": 0, "diag": 1, "dense": 2}[mode]
        self.memory = CGMemory() if memory is None else memory
        if mode == "auto" and _dense_possible(obj):
            if self.memory.spread is None:  # a property of the data: once per path
                self.memory.spread = scale_spread(obj.column_sumsq())
            if self.memory.spread > SPREAD_DIAG:
                self.level = 1  # dense raw features (MSLR): plain CG would take thousands of steps
        if mode == "auto":
            self.level = max(self.level, min(self.memory.level, 2 if _dense_possible(obj) else 1))
        self.point = None  # the preconditioner of the current point: (level, m_inv, stale)
        self.fresh = False  # the current point needs a matrix built at it (the stale one was not enough)
        self.used = {"none": 0, "diag": 0, "dense": 0}  # Newton steps solved at each level
        self.residual = None

    def new_point(self):
        self.point = None
        self.fresh = False

    def tag(self) -> str:
        """' (diag)' or ' (dense)' after a progress line's CG count when CG was preconditioned."""
        return "" if self.level == 0 else (" (diag)", " (dense)")[self.level - 1]

    def summary(self) -> str:
        """Which preconditioner the Newton steps used, e.g. "none 2, dense 7"."""
        return ", ".join(f"{k} {v}" for k, v in self.used.items() if v) or "none"

    def _dense(self):
        """(M^-1, stale) for the dense level: the memory's matrix at this C unless it proved too
        stale at this point, else one built here; (None, False) if the factorisation fails."""
        C = getattr(self.obj, "C", None)
        if not self.fresh and C is not None and self.memory.hess_loss is not None:
            H = self.memory.hess_loss * C
            H[np.diag_indices_from(H)] += 1.0
            m_inv = dense_inverse(H)
            if m_inv is not None:
                return m_inv, True
        H = self.obj.hess_matrix() if hasattr(self.obj, "hess_matrix") else None
        if H is None:
            return None, False
        if C is not None and C > 0:
            hl = H.copy()
            hl[np.diag_indices_from(hl)] -= 1.0
            hl /= C
            self.memory.hess_loss = hl
        return dense_inverse(H), False

    def _diag(self):
        """(diag(H), stale) for the diagonal level: from the memory's diagonal of H_L at this C unless
        it proved too stale at this point, else built here (None if the objective has none)."""
        C = getattr(self.obj, "C", None)
        if not self.fresh and C is not None and self.memory.diag_loss is not None:
            return 1.0 + C * self.memory.diag_loss, True
        diag = self.obj.hess_diag() if hasattr(self.obj, "hess_diag") else None
        if diag is not None and C is not None and C > 0:
            self.memory.diag_loss = np.maximum(diag - 1.0, 0.0) / C
        return diag, False

    def _m_inv(self, level):
        if self.point is not None and self.point[0] == level:
            return self.point[1]
        m_inv, stale = None, False
        if level == 2:
            m_inv, stale = self._dense()
            if m_inv is None:
                level = 1
        if level == 1:
            diag, stale = self._diag()
            if diag is not None and self.obj.n_features > DENSE_MAX_FEATURES:
                diag = np.power(diag, DIAG_POWER)  # (diag >= 1: H = I + C X'H_L X)
            m_inv = None if diag is None else 1.0 / diag
            if m_inv is None:
                level = 0
        self.point = (level, m_inv, stale)
        return m_inv

    def solve(self, b, rtol, certify=None, x=None, r=None):
        """(x, CG steps) for H x = b at the current point, to relative residual rtol, or until
        certify (see cg_steps) is met; x, r: continue from x with residual r = b - H x. The
        residual of the returned x is left in self.residual."""
        total = 0
        b_norm = float(norm(b))
        if x is None and hasattr(self.obj, "new_direction"):
            self.obj.new_direction()  # CG starts from 0: the steps it reports (cg_step) make X x
        while True:
            m_inv = self._m_inv(self.level) if self.level else None
            if self.level and self.point[0] < self.level:  # the objective has no such preconditioner
                self.level = self.point[0]
            stale = self.level >= 1 and self.point[2]
            escalate = self.mode == "auto" and (self.level == 0 or (self.level == 1 and _dense_possible(self.obj)))
            direct = self.level == 0 and _dense_possible(self.obj) and self.obj.n_features <= DENSE_DIRECT_FEATURES
            cap = CG_MAX_ITER - total
            if escalate:
                cap = min(cap, (PLAIN_STEPS_DENSE if direct else PLAIN_STEPS) if self.level == 0 else DIAG_STEPS)
            if stale:
                cap = min(cap, STALE_STEPS if self.level == 2 else STALE_DIAG_STEPS)
            x, it, res, r = cg_steps(self.obj.hess_vec, b, rtol, cap, m_inv, x, r, certify,
                                     getattr(self.obj, "cg_step", None))
            total += it
            self.residual = r
            if res <= rtol * b_norm or it < cap or total >= CG_MAX_ITER or not (escalate or stale):
                self.used[("none", "diag", "dense")[self.level]] += 1
                if self.mode == "auto":
                    self.memory.level = max(self.memory.level, self.level)
                return x, total
            if stale:  # the kept matrix or diagonal is too stale here: build one at this point, continue from x
                self.fresh, self.point = True, None
            elif direct:  # few features: the d x d matrix costs less than the diagonal's extra steps
                self.level = 2
            else:
                self.level += 1


def forcing(g_norm: float, g0_norm: float, model_norm: float | None, prev_g_norm: float | None,
            prev_eta: float | None) -> float:
    """CG's relative residual for this Newton step (the forcing term): Eisenstat & Walker's choice 1
    (SIAM J. Sci. Comput. 17, 1996), eta = | |g| - |g_prev + t H_prev d_prev| | / |g_prev|, how far
    the last step's quadratic model missed the gradient it reached: solving the model more accurately
    than it predicts buys nothing (the squared hinge's active pairs change from point to point), with
    their safeguard eta >= eta_prev^((1 + sqrt 5) / 2) when that exceeds 0.1, and at most 0.1. The
    first step (no model yet): min(0.1, sqrt(|g| / |g0|)), the rule before."""
    if model_norm is None or not prev_g_norm:
        return min(0.1, math.sqrt(g_norm / g0_norm)) if g0_norm > 0 else 0.1
    eta = abs(g_norm - model_norm) / prev_g_norm
    guard = prev_eta ** ((1.0 + math.sqrt(5.0)) / 2.0)
    if guard > 0.1:
        eta = max(eta, guard)
    return min(0.1, eta)


def scale_spread(sumsq: np.ndarray) -> float:
    """max / median of the features' non-zero sums of squares (1 for features of one scale; MSLR's
    raw features: about 1e12)."""
    nz = np.sort(sumsq[sumsq > 0])
    if nz.size == 0:
        return 1.0
    h = nz.size // 2
    median = nz[h] if nz.size % 2 else (nz[h - 1] + nz[h]) / 2.0  # np.median's value: it imports numpy.ma (11 ms a run)
    return float(nz[-1] / median)


def _dense_possible(obj) -> bool:
    return getattr(obj, "dense_possible", False)


def minimise_along(phi, f0: float, gd: float, wd: float, dd: float, C: float):
    """The step length along a direction d of the objective 0.5||w||^2 + C L(y): t = 1 if it passes
    Armijo's test, else a safeguarded one-dimensional Newton search on the convex, piecewise-quadratic
    phi(t) = f(w + t d), exact for this loss. phi(t) returns (f(w + t d), slopes) where slopes()
    gives (g_y . delta, delta . H_y delta) at w + t d (delta = X d; computed only when needed);
    wd = w.d, dd = d.d, gd = g.d < 0. Returns (t, f(w + t d)), or (0, f0) if nothing decreased f.
    The single-process line search and the distributed one (rankkit.distributed) share it.

    Far from the optimum (a Newton decrement -gd above f0, FAR_DECREMENT), t = 1 is not taken on
    Armijo's word alone: there the quadratic model at w counts as active many pairs that the step
    satisfies, so it underestimates the step (on the AUC problem, issue 27, the minimiser along the
    first direction is near t = 3). The same search then runs from t = 1 until |phi'(t)| <=
    FAR_SLOPE |gd|, and returns the better of that point and t = 1 (whichever phi evaluated last,
    re-evaluating t = 1 if need be, so the caller's state is at the returned point)."""
    f1, slopes = phi(1.0)
    armijo = f1 <= f0 + ARMIJO * gd
    far = -gd > FAR_DECREMENT * f0
    if armijo and not far:
        return 1.0, f1
    slope_tol = FAR_SLOPE if armijo else 1e-10
    lo, hi = 0.0, math.inf
    t, ft = 1.0, f1
    for _ in range(50):
        gyd, dhd = slopes()
        d1 = wd + t * dd + C * gyd
        d2 = dd + C * dhd
        if d1 > 0:
            hi = t
        else:
            lo = t
        if abs(d1) <= slope_tol * abs(gd) and ft < f0:
            break
        t_new = t - d1 / d2
        if not (lo < t_new < hi):
            t_new = 0.5 * (lo + hi) if math.isfinite(hi) else 2.0 * t
        if abs(t_new - t) <= 1e-14 * max(t, 1e-300):
            break
        t = t_new
        ft, slopes = phi(t)
    if armijo and not ft < f1:  # nothing better than t = 1 (the state is at t unless t = 1): back to it
        if t != 1.0:
            f1, _ = phi(1.0)
        return 1.0, f1
    if ft < f0:
        return t, ft
    return 0.0, f0


def line_search(obj: PairwiseObjective, w, y, d, delta, f0: float, gd: float, trial: np.ndarray | None = None):
    """Step length t along d (y = Xw, delta = Xd). Returns (t, f(w + t d)) with the objective's
    state left at w + t d, or (0, f0) if no decrease was found. The scores y + t delta of each
    trial are formed in `trial` (one array for every trial, not one each): when t > 0 it holds
    the returned point's scores, the same bits as y + t * delta."""
    trial = np.empty_like(y) if trial is None else trial

    def phi(t):
        if t == 1.0:
            np.add(y, delta, out=trial)
            ft = obj.evaluate(w + d, trial)
        else:  # y + (t * delta), as NumPy evaluates y + t * delta
            np.multiply(delta, t, out=trial)
            np.add(y, trial, out=trial)
            ft = obj.evaluate(w + t * d, trial)
        return ft, lambda: (dot(obj.gy, delta), dot(delta, obj.hess_vec_y(delta)))

    t, ft = minimise_along(phi, f0, gd, dot(w, d), dot(d, d), obj.C)
    if t == 0.0:
        obj.evaluate(w, y)  # restore the state at w
    return t, ft


class NewtonObjective(Protocol):
    """What the truncated-Newton driver needs of an objective, as liblinear's `function` gives its
    newton.cpp: the driver never sees the data. f(w) = 0.5 w.w + C L(Xw).

    start(w) -> (f, g)                       the objective and gradient at w; the point of hess_vec
    hess_vec(s) -> H s                        at the current point
    linesearch_and_update(w, d, f, g, gd)     a step along d: (t, w + t d, f, g) at the new point,
                                             which becomes the current one; (0, w, f, g) if no t decreased f
    finish(w, f, g) -> (f, g)                 the figures reported at the returned w
    hess_diag() -> diag(H) or None            the diagonal of the generalised Hessian at the current
                                             point (CG's preconditioner), None if the objective has none
    n_active                                  pairs with margin < 1 at the current point
    check_finite(what, *values)               the error a non-finite number means, in the data's words
    clock() -> str                            the timing part of a progress line (since the last call)

and, optionally, new_direction() and cg_step(alpha, x) (cg_steps' on_step): CG starts a direction
from 0, and took its step x += alpha p after hess_vec(p) (SummedXd: X d summed from the steps).

    Implemented by LocalObjective (one process) and rankkit.parts.newton.DaskObjective
    (per-part partial sums on a cluster)."""

    n_features: int
    n_active: int

    def start(self, w: np.ndarray) -> tuple[float, np.ndarray]: ...

    def hess_vec(self, s: np.ndarray) -> np.ndarray: ...

    def linesearch_and_update(self, w, d, f: float, g, gd: float) -> tuple[float, np.ndarray, float, np.ndarray]: ...

    def finish(self, w, f: float, g) -> tuple[float, np.ndarray]: ...

    def hess_diag(self) -> np.ndarray | None: ...

    def check_finite(self, what: str, *values) -> None: ...

    def clock(self) -> str: ...


def add_step_scores(delta: np.ndarray, xp: np.ndarray, alpha: float, first: bool, scratch: np.ndarray) -> None:
    """delta += alpha X p for one CG step (xp = X p): delta = alpha xp at the first step, else alpha
    xp formed in `scratch` and added. The one arithmetic of a summed X d, in this process, on a
    part, and when a part replays its lineage (rankkit.parts.worker): the same bits everywhere."""
    if first:
        np.multiply(xp, alpha, out=delta)
    else:
        np.multiply(xp, alpha, out=scratch)
        delta += scratch


class SummedXd:
    """Which directions' X d is summed from CG's steps (XD_STEPS_PER_NNZ, XD_KEPT_PER_NNZ), decided
    alike by LocalObjective and rankkit.parts.newton.DaskObjective from the whole data's nnz, rows
    and features: so the two faces sum the same directions and form the same bits.

    new_direction()   CG starts from 0
    step(x) -> k      CG took its step k (0, 1, ...) to the iterate x: sum it; -1: not summed (this
                      direction is past the budget: its X d will be a product)
    take(d) -> n      at the line search: n > 0 steps summed make X d when d is the iterate they
                      reached, 0: a product (and the direction is closed either way)"""

    def __init__(self, nnz: int, n_rows: int, n_features: int):
        self.max_steps = max(1, int(nnz / max(n_rows, 1) * XD_STEPS_PER_NNZ))
        self.kept_left = XD_KEPT_PER_NNZ * nnz  # doubles of the summed steps' p a fit may still keep
        self.n_features = max(n_features, 1)
        self.of, self.steps = None, -1

    def new_direction(self) -> None:
        self.of, self.steps = None, 0

    def step(self, x) -> int:
        if self.steps < 0:
            return -1
        if self.steps >= self.max_steps or (self.steps + 1) * self.n_features > self.kept_left:
            self.of, self.steps = None, -1
            return -1
        k = self.steps
        self.of, self.steps = x, k + 1
        return k

    def take(self, d) -> int:
        n = self.steps if self.steps > 0 and d is self.of else 0
        self.kept_left -= n * self.n_features
        self.of, self.steps = None, -1
        return n


class LocalObjective:
    """NewtonObjective over a PairwiseObjective or ExplicitPairObjective in this process: three
    score-space vectors for the whole run (memory: issue 11), y = Xw, delta = Xd and the line
    search's trial scores, which become the next y (y + t delta, never X w afresh).

    delta is summed from the products CG's steps made anyway (d = sum of alpha_k p_k and each
    Hessian-vector product formed X p_k: X d = sum of alpha_k X p_k, cg_step), not formed by a
    product X d of its own: one product over the data fewer per Newton step (issue 39), for one
    axpy over the rows per CG step, within SummedXd's budget (a product past it)."""

    def __init__(self, obj, ds: Dataset | None = None, solver_name: str = "newton"):
        self.obj, self.ds, self.solver_name = obj, ds, solver_name
        self.n_features = obj.n_features
        self._t0 = time.perf_counter()

    @property
    def n_active(self) -> int:
        return self.obj.n_active

    @property
    def C(self) -> float:
        return self.obj.C

    def start(self, w):
        # from w = 0 (every fit but a warm start) the scores are 0: one product X.v fewer (the
        # kernel's sums of 0 * x are +0.0 too, for finite x: the same bits)
        self._y = np.zeros(self.obj.n_rows) if not np.any(w) else self.obj.scores(w)
        self._delta = np.empty_like(self._y)
        self._trial = np.empty_like(self._y)
        indptr = getattr(self.obj, "indptr", None)
        summable = indptr is not None and hasattr(self.obj, "last_xs")
        self._xd = SummedXd(int(indptr[-1]) if summable else 0, self.obj.n_rows, self.n_features)
        self._summable = summable
        f = self.obj.evaluate(w, self._y)
        return f, self.obj.gradient(w)

    def hess_vec(self, s):
        return self.obj.hess_vec(s)

    def hess_diag(self):
        diag = getattr(self.obj, "hess_diag", None)
        if diag is None:
            return None
        return 1.0 + self.obj.C * diag()

    def column_sumsq(self):
        cs = getattr(self.obj, "column_sumsq", None)
        return np.ones(self.n_features) if cs is None else cs()

    @property
    def dense_possible(self) -> bool:
        return hasattr(self.obj, "hess_matrix") and self.n_features <= DENSE_MAX_FEATURES

    def hess_matrix(self):
        if not self.dense_possible:
            return None
        H = self.obj.hess_matrix()
        H *= self.obj.C
        H[np.diag_indices_from(H)] += 1.0
        return H

    def new_direction(self):
        """CG starts a direction from 0 (Preconditioned.solve): its steps' sum starts again."""
        if self._summable:
            self._xd.new_direction()

    def cg_step(self, alpha, x):
        """CG took x += alpha p, p being what the last hess_vec multiplied: delta += alpha X p, so
        that delta = X x (the iterate `x`, which linesearch_and_update then takes as d). The
        trial scores are free until the line search: the scratch of the sum."""
        k = self._xd.step(x)
        if k >= 0:
            add_step_scores(self._delta, self.obj.last_xs, alpha, k == 0, self._trial)

    def linesearch_and_update(self, w, d, f, g, gd):
        if not self._xd.take(d):  # not the iterate whose X x CG's steps summed: one product
            self.obj.scores(d, out=self._delta)
        t, f_new = line_search(self.obj, w, self._y, d, self._delta, f, gd, self._trial)
        if t == 0.0:
            return 0.0, w, f, g
        w = w + t * d
        self._y, self._trial = self._trial, self._y  # trial holds y + t * delta
        return t, w, f_new, self.obj.gradient(w)

    def finish(self, w, f, g):
        """The objective at the returned w computed afresh from X w, and its gradient."""
        f = self.obj.evaluate(w, self.obj.scores(w, out=self._trial))
        self.check_finite("objective at the solution", f, w)
        return f, self.obj.gradient(w)

    def check_finite(self, what, *values):
        if self.ds is None:
            for v in values:
                if not np.all(np.isfinite(v)):
                    raise UsageError(f"{self.solver_name}: the {what} overflowed (not finite): scale the features down")
            return
        check_finite(self.ds, self.solver_name, what, *values)

    def clock(self) -> str:
        return f"{time.perf_counter() - self._t0:.3f}s"


def truncated_newton(
    obj: NewtonObjective,
    w0: np.ndarray | None = None,
    tol: float = DEFAULT_TOL,
    max_iter: int = DEFAULT_MAX_ITER,
    log: Log | None = None,
    precondition: str = "auto",
    memory: CGMemory | None = None,
) -> FitResult:
    """The one truncated-Newton driver (one process or a cluster: `obj` decides). Stops when the
    Newton decrement g'H^-1g falls below tol * f: proved by CG's iterate (decrement_bound), or
    estimated by -g.d after an accurate CG solve; FitResult.stop is converged, zero_gradient,
    max_iter or line_search. memory: a CGMemory carried from fit to fit along a path (None: the
    one of an enclosing path_memory(), if any)."""
    t_start = time.perf_counter()
    if w0 is None:
        w = np.zeros(obj.n_features)
    else:
        w = np.array(w0, dtype=np.float64, copy=True)
        if w.shape != (obj.n_features,) or not np.all(np.isfinite(w)):
            raise ValueError(f"w0 must be {obj.n_features} finite numbers, got shape {w.shape}")
    f, g = obj.start(w)
    obj.check_finite("objective or gradient at the start", f, g)
    g0_norm = float(norm(g))
    stop, detail = "", {}
    cg_total = 0
    it = 0
    pre = Preconditioned(obj, precondition, memory if memory is not None else _PATH_MEMORY.get())
    model_norm = prev_g_norm = prev_eta = None
    if log:
        log(f"iter   0  f {f:.12e}  |g| {g0_norm:.3e}  violated {obj.n_active}")
    while True:
        g_norm = float(norm(g))
        if g_norm == 0.0:
            stop = "zero_gradient"
            break
        if it >= max_iter:
            stop, detail = "max_iter", {"max_iter": max_iter}
            break
        it += 1
        eta = forcing(g_norm, g0_norm, model_norm, prev_g_norm, prev_eta)
        pre.new_point()
        # CG stops at relative residual eta, or as soon as its iterate proves g'H^-1g <= tol f
        # (decrement_bound: H >= I), which ends the run
        d, cg_it = pre.solve(-g, eta, tol * f)
        cg_total += cg_it
        decrement = -dot(g, d)
        bound = decrement_bound(-g, d, pre.residual)
        if bound > tol * f and decrement <= tol * f and eta > CG_CONFIRM_RTOL:
            # CG underestimates g'H^-1g when it stops early and H is ill-conditioned: confirm
            # convergence by continuing CG towards an accurate solve, until the bound decides
            d, more = pre.solve(-g, CG_CONFIRM_RTOL, tol * f, d, pre.residual)
            cg_it += more
            cg_total += more
            decrement = -dot(g, d)
            bound = decrement_bound(-g, d, pre.residual)
        obj.check_finite("Newton direction", decrement, d)
        if bound <= tol * f or decrement <= tol * f:
            stop, detail = "converged", {"ratio": decrement / f, "tol": tol}
            if bound <= tol * f:  # g'H^-1g certainly below: the bound is the figure to give
                detail = {"ratio": max(bound, 0.0) / f, "tol": tol, "bound": True}
            decrement = f * detail["ratio"]
            if log:
                log(
                    f"iter {it:3d}  f {f:.12e}  |g| {g_norm:.3e}  cg {cg_it:3d}{pre.tag()}  "
                    f"dec/f {decrement / f:.2e}  converged  {obj.clock()}"
                )
            break
        r_prev, g_prev = pre.residual, g
        t, w, f, g = obj.linesearch_and_update(w, d, f, g, -decrement)
        # the quadratic model's gradient at the new point: g + t H d = (1 - t) g - t r (H d = -g - r)
        model_norm = float(norm((1.0 - t) * g_prev - t * r_prev))
        prev_g_norm, prev_eta = g_norm, eta
        if t == 0.0:
            stop = "line_search"
            break
        obj.check_finite(f"objective or gradient at iteration {it}", f, g)
        if log:
            log(
                f"iter {it:3d}  f {f:.12e}  |g| {float(norm(g)):.3e}  cg {cg_it:3d}{pre.tag()}  t {t:.3g}  "
                f"dec/f {decrement / f:.2e}  violated {obj.n_active}  {obj.clock()}"
            )
    f, g = obj.finish(w, f, g)
    return FitResult(
        w=w,
        objective=f,
        iterations=it,
        converged=stop in ("converged", "zero_gradient"),
        message=stop_message(stop, detail),
        n_active=obj.n_active,
        train_time=time.perf_counter() - t_start,
        extra={"cg_iterations": cg_total, "gradient_norm": float(norm(g))},
        stop=stop,
        detail=detail,
    )


class NewtonRankSVM(ExactRankSVM):
    """Solver `newton`: the registry entry the CLI instantiates."""

    name = "newton"

    def fit(self, ds: Dataset, w0: np.ndarray | None = None, log: Log | None = None,
            memory: CGMemory | None = None) -> FitResult:
        """memory: a CGMemory carried from fit to fit along a warm-started path (truncated_newton)."""
        ds.require_pairs()
        check_exact_magnitude(ds, self.C)
        obj = LocalObjective(self.objective(ds), ds, self.name)
        with quiet_fp():
            return truncated_newton(obj, w0=w0, tol=self.tol, max_iter=self.max_iter, log=log, memory=memory)


class NewtonPairsRankSVM(NewtonRankSVM):
    """Solver `newton-pairs`: the same Newton driver on the explicit pair list (PRSVM, Sect. 3):
    O(nnz + p) per product, any per-pair cost, and the exact logistic (RankNet) loss."""

    name = "newton-pairs"

    def __init__(self, *args, pair_costs: np.ndarray | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.pair_costs = pair_costs

    def objective(self, ds: Dataset):
        pairs = explicit_pairs(ds)
        costs, margins = self.pair_costs, None
        if self.rescale:
            delta = pair_deltas(ds, *pairs, self.delta)
            if self.rescale == "slack":
                costs = delta if costs is None else costs * delta
            else:
                margins = pair_margins(self.rescale, delta)
        return ExplicitPairObjective(ds, self.C, self.loss, query_weights=self.weights(ds), pair_costs=costs,
                                     pairs=pairs, pair_margins=margins)
