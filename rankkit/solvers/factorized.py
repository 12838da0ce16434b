"""Factorized Ranking SVM (Zhang et al., CIKM 2015): solver `factorized`.

Every pair multiplier is a dot product of two latent vectors, alpha_ij = <v_i, v_j> (v_i in R^K,
one per training document), so that (their eq. 4)

    w(V) = sum over pairs (i above j) <v_i, v_j> (x_i - x_j)

and gradient descent on V minimises (their eq. 5, hinge; or the squared hinge)

    J(V) = 0.5 ||w||^2 + C * sum over pairs loss(w.(x_i - x_j)).

Linear-time iterations. The paper's algorithm costs O(N^2 + N^2/|Q| n) per iteration; every pair
joins a higher- and a lower-labelled document of one query, so both w(V) and dJ/dV reduce to
per-(query, level) sums. For document k of query q let

    B_k = sum of v_j over the documents j of q with a lower label,   A_k = ... a higher label,
    B~_k = sum of s_j v_j over the lower ones,                        A~_k = ... the higher ones,

(prefix sums over q's relevance levels: O(N K) for all k). Then

    w = sum_k c_k x_k   with   c_k = <v_k, B_k - A_k>
        (pair (i, j) contributes <v_i, v_j> to c_i and -<v_i, v_j> to c_j)

and, with g = dJ/dw = w + C X' dL/dy (the O(n log n) (sub)gradient of the pair loss at w) and
s = X g, since d alpha_kj / d v_k = v_j and (x_k - x_j).g = s_k - s_j,

    dJ/dv_k = sum over j below k of v_j (s_k - s_j) + sum over j above k of v_j (s_j - s_k)
            = s_k B_k - B~_k + A~_k - s_k A_k.

One iteration: c (O(N K)), w = X'c (O(nnz)), y = X w and the loss gradient (O(nnz + N log N)),
g and s = X g (O(nnz)), the sums and dJ/dV (O(N K)): O(nnz + N K + N log N) instead of quadratic.
The naive O(|P|) version is in the tests as the reference.

Two optimisers (`--optimizer`):

- `backtracking` (the default): the step is eta (--eta0, optionally decaying with --eta basic),
  halved for good whenever it would increase J, so the descent is monotone; a fixed number of
  iterations (--iterations), no convergence test unless --tol is given.
- `paper`: Algorithm 1 as printed. V starts at random values (N(0, init_scale^2): the paper says
  "random values" only), then every iteration computes w (line 3), the violated pairs (line 4) and
  moves every v_k by -eta dJ/dv_k with the same w (lines 5-7), eta fixed (--eta0). "Until
  convergence" is read as: stop when one iteration changes J by at most --tol (1e-6) of |J|, or
  after --iterations. No safeguard: a learning rate too large for the data diverges, and says so.

Notation: the paper's eq. (6)-(8) name u = sum_i (l_i^+ - l_i^-) x_i with l^+ counting the pairs in
which i is the *lower* document (eq. 7), which would flip the sign of the loss term of (8); the
derivation here is of the objective (5) itself, so dJ/dalpha_ij = (x_i - x_j).(w - C sum over
violated pairs (x_k - x_l)), the gradient the paper means (Lee & Lin's u).
"""

from __future__ import annotations

import time

import numpy as np

from rankkit.data import Dataset
from rankkit.errors import UsageError
from rankkit.metrics import evaluate
from rankkit.objectives.pairwise import PairwiseObjective
from rankkit.compiler.dispatch import njit
from rankkit.sparse import csr_matvec, csr_rmatvec
from rankkit.solvers.base import FitResult, Log, check_exact_magnitude, check_finite, quiet_fp
from rankkit.solvers.options import stop_message

DEFAULT_K = 10
DEFAULT_ITERATIONS = 200
DEFAULT_ETA0 = 1e-3
DEFAULT_INIT_SCALE = 0.01
OPTIMIZERS = ("backtracking", "paper")
DEFAULT_OPTIMIZER = "backtracking"
DEFAULT_PAPER_TOL = 1e-6  # --optimizer paper: "until convergence", relative change of J in one iteration


@njit
def level_sums(V, s, lev, qptr, nlev, below, above, below_s, above_s):
    """For every document k: the sums of v_j (and of s_j v_j) over the documents of its query with a
    lower label (below, below_s) and with a higher label (above, above_s). s may be empty (then
    below_s and above_s are not written)."""
    K = V.shape[1]
    weighted = s.shape[0] > 0
    for q in range(qptr.shape[0] - 1):
        a = qptr[q]
        b = qptr[q + 1]
        R = nlev[q]
        tot = np.zeros((R, K))
        tot_s = np.zeros((R, K))
        for i in range(a, b):
            r = lev[i]
            for k in range(K):
                tot[r, k] += V[i, k]
                if weighted:
                    tot_s[r, k] += s[i] * V[i, k]
        # prefix[r] = sum over levels < r; all = sum over every level
        prefix = np.zeros((R + 1, K))
        prefix_s = np.zeros((R + 1, K))
        for r in range(R):
            for k in range(K):
                prefix[r + 1, k] = prefix[r, k] + tot[r, k]
                prefix_s[r + 1, k] = prefix_s[r, k] + tot_s[r, k]
        for i in range(a, b):
            r = lev[i]
            for k in range(K):
                below[i, k] = prefix[r, k]
                above[i, k] = prefix[R, k] - prefix[r + 1, k]
                if weighted:
                    below_s[i, k] = prefix_s[r, k]
                    above_s[i, k] = prefix_s[R, k] - prefix_s[r + 1, k]


@njit
def pair_coefficients(V, below, above, c):
    """c_k = <v_k, B_k - A_k>: w = sum_k c_k x_k."""
    for i in range(V.shape[0]):
        acc = 0.0
        for k in range(V.shape[1]):
            acc += V[i, k] * (below[i, k] - above[i, k])
        c[i] = acc


@njit
def factor_gradient(s, below, above, below_s, above_s, G):
    """dJ/dv_k = s_k B_k - B~_k + A~_k - s_k A_k."""
    for i in range(G.shape[0]):
        for k in range(G.shape[1]):
            G[i, k] = s[i] * below[i, k] - below_s[i, k] + above_s[i, k] - s[i] * above[i, k]


class FactorState:
    """The quantities of one iteration at V: w, J, and dJ/dV."""

    def __init__(self, ds: Dataset, C: float, loss: str):
        self.ds = ds
        self.C = C
        self.obj = PairwiseObjective(ds, C, loss)
        self.lev = np.ascontiguousarray(ds.levels, dtype=np.int32)
        self.nlev = ds.levels_per_query
        n = ds.n_rows
        self.c = np.empty(n)

    def weights(self, V: np.ndarray) -> np.ndarray:
        n, K = V.shape
        below, above = np.empty((n, K)), np.empty((n, K))
        level_sums(V, np.zeros(0), self.lev, self.ds.qptr, self.nlev, below, above, below, above)
        pair_coefficients(V, below, above, self.c)
        ds = self.ds
        return csr_rmatvec(ds.data, ds.indices, ds.indptr, self.c, np.empty(ds.n_features))

    def value_grad(self, V: np.ndarray):
        """(J(V), dJ/dV, w)."""
        ds = self.ds
        n, K = V.shape
        below, above = np.empty((n, K)), np.empty((n, K))
        below_s, above_s = np.empty((n, K)), np.empty((n, K))
        level_sums(V, np.zeros(0), self.lev, ds.qptr, self.nlev, below, above, below, above)
        pair_coefficients(V, below, above, self.c)
        w = csr_rmatvec(ds.data, ds.indices, ds.indptr, self.c, np.empty(ds.n_features))
        J = self.obj.evaluate(w, self.obj.scores(w))
        g = self.obj.gradient(w)  # w + C X' dL/dy
        s = csr_matvec(ds.data, ds.indices, ds.indptr, g, np.empty(n))
        level_sums(V, s, self.lev, ds.qptr, self.nlev, below, above, below_s, above_s)
        G = np.empty((n, K))
        factor_gradient(s, below, above, below_s, above_s, G)
        return J, G, w


class FactorizedRankSVM:
    """Solver `factorized`: gradient descent on the latent vectors V (Zhang et al. Algorithm 1) with
    linear-time iterations; early stopping on a validation metric with --valid and --patience.

    optimizer "backtracking": the step is eta (--eta0, optionally decaying with --eta basic), halved
    for good whenever it would increase J: the objective is non-convex and quartic in V, and a fixed
    step that suits one data set diverges on another. The descent is therefore monotone.
    optimizer "paper": Algorithm 1 as printed, a fixed eta and no safeguard (module docstring)."""

    name = "factorized"

    def __init__(self, C: float = 1.0, K: int = DEFAULT_K, iterations: int | None = None, eta: str = "constant",
                 eta0: float | None = None, seed: int = 0, init_scale: float = DEFAULT_INIT_SCALE, loss: str = "hinge",
                 valid: Dataset | None = None, patience: int | None = None, monitor=None,
                 optimizer: str = DEFAULT_OPTIMIZER, tol: float | None = None, **ignored):
        if loss not in ("hinge", "squared-hinge"):
            raise UsageError(f"--solver factorized offers the hinge and squared-hinge losses, not {loss}")
        if eta not in ("constant", "basic"):
            raise UsageError("--solver factorized takes --eta constant or basic (eta0 * 10 / (t + 10))")
        if optimizer not in OPTIMIZERS:
            raise UsageError(f"--optimizer must be one of {', '.join(OPTIMIZERS)}, not {optimizer!r}")
        if optimizer == "paper" and eta != "constant":
            raise UsageError("--optimizer paper has a fixed learning rate (--eta constant), not --eta basic")
        self.C, self.K, self.loss = float(C), int(K), loss
        self.iterations = DEFAULT_ITERATIONS if iterations is None else int(iterations)
        self.eta, self.eta0 = eta, DEFAULT_ETA0 if eta0 is None else float(eta0)
        self.seed, self.init_scale = int(seed), float(init_scale)
        self.valid, self.patience = valid, patience
        self.optimizer = optimizer
        # the convergence test: the paper's by default; the backtracking optimiser has none unless asked
        self.tol = (DEFAULT_PAPER_TOL if optimizer == "paper" else None) if tol is None else float(tol)
        # monitor(iteration, w) -> float: the Python estimators' eval sets (recorded there); its value
        # replaces the validation MAP for early stopping
        self.monitor = monitor
        self.factors: np.ndarray | None = None
        if self.K < 1:
            raise UsageError("-K must be at least 1")

    def hyperparameters(self) -> dict:
        out = {"C": self.C, "K": self.K, "optimizer": self.optimizer, "iterations": self.iterations, "eta": self.eta,
               "eta0": self.eta0, "seed": self.seed, "init_scale": self.init_scale}
        if self.tol is not None:
            out["tol"] = self.tol
        if self.patience is not None:
            out["patience"] = self.patience
        return out

    def _eta(self, t: int) -> float:
        return self.eta0 if self.eta == "constant" else self.eta0 * 10.0 / (t + 10.0)

    def _valid_metric(self, w) -> float:
        v = self.valid
        return evaluate(v.y, csr_matvec(v.data, v.indices, v.indptr, w, np.empty(v.n_rows)), v.qptr, ("map",))["map"]

    def initial_factors(self, n_rows: int) -> np.ndarray:
        """V at the start: N(0, init_scale^2) entries drawn from --seed."""
        return self.init_scale * np.random.default_rng(self.seed).standard_normal((n_rows, self.K))

    def fit(self, ds: Dataset, w0=None, log: Log | None = None, progress=None) -> FitResult:
        if w0 is not None:
            raise UsageError("--solver factorized starts from random factors (no warm start in w)")
        ds.require_pairs()
        check_exact_magnitude(ds, self.C)
        with quiet_fp():
            return self._fit(ds, log, progress)

    def _fit(self, ds: Dataset, log: Log | None, progress) -> FitResult:
        t0 = time.perf_counter()
        V = self.initial_factors(ds.n_rows)
        state = FactorState(ds, self.C, self.loss)
        best = None  # (metric, iteration, V) for early stopping
        stale = 0
        it = 0
        halvings = 0  # backtracking: the paper's fixed step, halved whenever it would increase J
        paper = self.optimizer == "paper"
        history = []
        J, G, w = state.value_grad(V)
        check_finite(ds, self.name, "objective or gradient at the start", J, G)
        J_start = J
        stop, detail, converged = "", {}, False
        done = 0  # updates of V applied
        for it in range(1, self.iterations + 1):
            line = f"iter {it:5d}  J {J:.10e}  |grad| {np.linalg.norm(G):.3e}"
            if self.valid is not None or self.monitor is not None:
                m = self.monitor(it, w) if self.monitor is not None else self._valid_metric(w)
                line += f"  valid {getattr(self.monitor, 'metric', None) or 'map'} {m:.4f}"
                if best is None or m > best[0]:
                    best, stale = (m, it, V.copy()), 0
                else:
                    stale += 1
            history.append(J)
            if log:
                log(line + f"  step {self._eta(it) * 0.5 ** halvings:.3g}  {time.perf_counter() - t0:.3f}s")
            if progress:
                progress(it, self.iterations)
            if self.patience is not None and best is not None and stale >= self.patience:
                stop, detail, converged = "early_stop", {"patience": self.patience}, True
                break
            if paper:  # Algorithm 1, lines 3-7: one step of the fixed learning rate, no safeguard
                V_new = V - self.eta0 * G
                J_new, G_new, w_new = state.value_grad(V_new)
                if not (np.isfinite(J_new) and np.all(np.isfinite(G_new))):
                    stop, detail = "diverged", {"objective": float(J_new), "iterations": it, "start": J_start,
                                                "remedy": "eta0"}
                    break
            else:
                while True:
                    V_new = V - self._eta(it) * 0.5**halvings * G
                    J_new, G_new, w_new = state.value_grad(V_new)
                    if np.isfinite(J_new) and J_new <= J and np.all(np.isfinite(G_new)):
                        break
                    halvings += 1
                    if halvings > 60:  # the step is 2^-60 of eta0: no descent along -G at working precision
                        break
                if halvings > 60:
                    stop, detail = "no_descent", {"iteration": it}
                    break
            change = abs(J - J_new) / max(abs(J), np.finfo(float).tiny)
            V, J, G, w = V_new, J_new, G_new, w_new
            done = it
            if self.tol is not None and change <= self.tol:
                stop, detail, converged = "objective_change", {"change": change, "tol": self.tol, "iteration": it}, True
                break
        else:
            stop, detail = "iterations", {"iterations": self.iterations}
        if paper and stop in ("iterations", "objective_change") and J > J_start:
            stop, detail, converged = "diverged", {"objective": J, "iterations": done, "start": J_start,
                                                   "remedy": "eta0"}, False
        if best is not None and self.patience is not None:
            V = best[2]
            detail.update({"best_map": best[0], "best_iteration": best[1]})
        self.factors = V
        w = state.weights(V)
        J = state.obj.evaluate(w, state.obj.scores(w))
        check_finite(ds, self.name, "objective at the solution", J, w)
        return FitResult(w=w, objective=J, iterations=done if paper else it, converged=converged,
                         message=stop_message(stop, detail), n_active=state.obj.n_active,
                         train_time=time.perf_counter() - t0,
                         extra={"first_objective": history[0] if history else J}, stop=stop, detail=detail, factors=V)
