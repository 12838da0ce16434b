"""The exact regularisation path of the hinge-loss RankSVM (Zapien, Gasso, Gaertner & Canu 2009).

Formulation (lambda = 1 / C). Pairs p = (i above j) within a query, f_p = f(x_i) - f(x_j):

    primal   min_f  sum_p max(0, 1 - f_p) + lambda/2 ||f||_H^2
    dual     max_alpha  1'alpha - 1/(2 lambda) alpha' Q alpha,   0 <= alpha <= 1,   Q = P K P'

P is the m x n pair incidence matrix (+1 at i, -1 at j), K the kernel matrix (linear: K = X X'),
f = (1/lambda) sum_p alpha_p (k(x_i, .) - k(x_j, .)); for the linear kernel w = (1/lambda) X'P'alpha.
The primal is C times smaller than the solvers' 0.5||w||^2 + C sum hinge: `objective` below is the
lambda form, `objective_C` = C * objective is the solvers' form (BundleRankSVM's `objective`).

Pair margins m_p(lambda) = (Q alpha)_p / lambda; KKT sets I_1 (alpha = 1, m < 1), I_0 (alpha = 0,
m > 1), I_alpha = E (m = 1, 0 <= alpha <= 1). On a segment with fixed sets

    alpha_E(lambda) = Q_EE^-1 (lambda 1 - Q_E1 1) = alpha_E^t + (lambda - lambda^t) eta,  eta = Q_EE^-1 1

and lambda m(lambda) = g^t + (lambda - lambda^t) h, g = Q alpha, h = Q_:E eta (= P K P_E' eta, computed
without ever forming the m x m matrix Q: O(nnz + m) for the linear kernel, O(n^2 + m) for the others,
see "Products with K" below). The next breakpoint is the largest lambda
below lambda^t where an alpha_E reaches 1 or 0 (the paper's eqs. 13, 14) or a pair outside E reaches
margin 1 (eq. 17: lambda = (g_p - lambda^t h_p) / (1 - h_p)). The start (Sect. 5.1) is the same rule
from lambda = +inf with E empty and alpha = 1: lambda_0 = max_p (Q 1)_p; re-initialisation when E
empties (Sect. 5.3) is again the same rule with h = 0 (I_0 kept, lambda = (Q alpha)_p).

Q_EE^-1 is kept as an explicit inverse updated by the bordered-matrix formula when a pair enters
and the Schur-complement downdate when one leaves: O(|E|^2) per event, not O(|E|^3). It is
recomputed from scratch (Cholesky) every `REFRESH` events and whenever a residual check fails
(see _PathState: the residual of eta, the margins of E, the KKT check; then alpha_E is solved
afresh, and a breakpoint that still fails is taken again from the last verified one). g = Q alpha
moves along h between breakpoints (O(m)) and is recomputed from alpha every EXACT_EVERY moves
(O(nnz + m) linear, O(n^2 + m) otherwise), so errors do not accumulate.

Degeneracy. A pair whose row of Q is (numerically) a combination of the rows of E cannot enter
(the Schur complement s = Q_pp - q'Q_EE^-1 q is below SING_RTOL * Q_pp, or below its own rounding
error NOISE_FACTOR * eps * cond(Q_EE) * Q_pp): its margin is then a
combination of margins that are all 1, so it stays at its bound with margin 1 (KKT holds). On the
full graph this happens whenever E holds a cycle of the pair graph (rank P = n - #queries) or, for
the linear kernel, more than rank(X) pairs. Ties (several events at one lambda, pairs sitting at
margin 1 outside E) are resolved by zero-length steps, one pair at a time; a pair at margin 1 enters
only if the new direction would push it to the wrong side. If this does not settle within
`max_zero_steps` the path stops with a warning (never silently continues); every breakpoint is
checked against the KKT conditions and a violation stops the path with a warning too.

Graphs. "full": all pairs with different labels in a query (m = O(n^2)). "reduced": the O(n) chain
of the paper's Fig. 3: in each query sort the relevance levels L_1 > L_2 > ... and take the first
document r_k of each level as its representative; edges r_k -> every document of L_{k+1}, and every
other document of L_1 -> r_2. That is n_q - 1 edges, a spanning tree, so P has full row rank and
Q_EE is non-singular for a strictly positive definite kernel (rbf): no degeneracy.
Finding (tested): the reduced graph is NOT the same problem. Its path is the exact path of the hinge
RankSVM on the reduced pairs (its objective matches BundleRankSVM on those pairs), but its solutions
differ from the full-graph ones in general, and even for data separable with a hard margin the
reduced constraints f_i - f_j >= 1 on the tree edges do not imply them on all pairs (the full
constraints imply the reduced ones, not conversely): e.g. two levels, a, b above c, d with
representatives a and c: edges a-c, a-d, b-c; f = (a 2, b 1, c 0, d 1) satisfies them all and
violates b-d. The paper's "consistent problem equivalence" does not hold in this sense.

Products with K. The linear kernel K = X X' is never formed ("linear" route, the default for it):
K z = X (X'z) and the validation scores X_valid (X'z) cost O(nnz); the entries of Q for a few pairs
(a column of Q_EE, the Schur complement when a pair enters) come from those pairs' own rows; P'alpha
and P(Kz) are sparse incidence products, O(m). A breakpoint costs O(nnz + m) and the memory is
O(nnz + m) (plus O(d) per breakpoint for the recorded w), never n x n or pairs x pairs. rbf and poly
keep the dense n x n kernel matrix ("dense" route, O(n^2) memory and O(n^2) per product), which is also
the brute-force reference the linear route is tested against (route="dense").

Scope: the code enumerates pairs explicitly (O(m) memory). `rankkit path` without --method chooses
the exact path up to 10^4 pairs and 2,000 documents and the grid beyond; --method exact runs it at
any size. The command-line entry point is `rankkit path --method exact` (rankkit.paths.grid.exact_path_points,
rankkit.commands.path); -v prints progress lines from the start, a terminal shows a progress bar.

Code. `exact_path` checks its options and builds the pairs and the products with K (DenseKernel or
LinearStructure); a _PathState then follows the path, one `step` per breakpoint: the direction on
the segment, the candidate events, the move to the next lambda, the events there (`leave`, `enter`;
`close` at lambda_min), `record` (or `join_last` after a zero-length step) and the KKT check.
E with Q_EE^-1 is a _MarginSet, the breakpoints and the compressed alpha history a _History.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from rankkit.data import Dataset
from rankkit.errors import UsageError
from rankkit.feature_maps import make_kernel
from rankkit.config import DEFAULT_CONVENTION
from rankkit.metrics.ties import dataset_tiebreak
from rankkit.metrics import parse_metric, per_query, per_query_table
from rankkit.paths._path_kernels import (dense_matvec, dense_rmatvec, hinge_and_quad, kkt_sweep, outside_candidates,
                                         pair_diff, pair_sum)
from rankkit.sparse import csr_matvec, csr_rmatvec

DEFAULT_METRIC = "ndcg@10"
REFRESH = 200  # recompute Q_EE^-1 from scratch every REFRESH events
EXACT_EVERY = 64  # g = Q alpha (and lambda w, lambda beta) recomputed from alpha every EXACT_EVERY moves
RESID_TOL = 1e-9  # |(Q_EE eta)_p - 1| or |margin_p - 1| over E above this: Q_EE^-1 has drifted (refactorise)
REFINE_STEPS = 3  # iterative-refinement steps after a refactorisation
GRADE_BLOCK = 128  # breakpoints graded on the validation set per call of the metric kernels
SING_RTOL = 1e-12  # Schur complement below this * Q_pp: the pair is dependent on E
NOISE_FACTOR = 1.0  # ... or below this * eps * cond(Q_EE) * Q_pp (its rounding error): dependent too (BENCHMARKS: 1e3, 10 stop early on MQ2008)
EVENT_RTOL = 1e-9  # events within this relative distance in lambda are simultaneous
KKT_TOL = 1e-6  # margin / alpha tolerance of the KKT check at each breakpoint
CHECKPOINT = 64  # keep the full alpha every CHECKPOINT breakpoints (replay in between)
LOG_SECONDS = 2.0  # at most one progress line (log) this often
PROGRESS_SECONDS = 0.2  # at most one update of the progress display this often
PROGRESS_STEPS = 1000  # the display's total: log(lambda_0 / lambda) as a share of log(lambda_0 / lambda_min)
DENSE_BYTES_RATIO = 1.5  # the linear route keeps X dense when that takes at most this times its CSR bytes
_PAIR_BLOCK = 1 << 12  # the linear structure computes x_i . x_j for this many pairs at a time


class PathWarning(UserWarning):
    """The exact path stopped early (lambda_min, max_events, degeneracy)."""


@dataclass(slots=True)
class Breakpoint:
    lam: float
    n_alpha: int  # |I_alpha| after the events at lam
    n_zero: int  # |I_0|
    n_one: int  # |I_1|
    event: str  # "init", "enter", "leave_to_0", "leave_to_1", several joined by "+", "lambda_min", "max_events"
    pairs: tuple  # the pairs the events concern
    hinge: float  # training hinge loss sum_p max(0, 1 - m_p)
    objective: float  # hinge + lambda/2 ||f||^2
    metrics: dict  # validation metric name -> mean over validation queries (NaN queries skipped)
    seconds: float  # since the start of the path

    @property
    def C(self) -> float:
        return 1.0 / self.lam

    @property
    def objective_C(self) -> float:
        """0.5||w||^2 + C sum hinge (the solvers' objective) = C * objective."""
        return self.objective / self.lam


@dataclass
class ExactPathResult:
    breakpoints: list
    pi: np.ndarray  # int64[m] upper document of each pair (row in train)
    pj: np.ndarray  # int64[m] lower document
    kernel: object  # rankkit.feature_maps.MercerKernel
    graph: str
    metric_names: list
    stop_reason: str
    n_events: int  # events processed (zero-length ones included)
    _X: object = field(repr=False, default=None)  # train CSR
    _changes: list = field(repr=False, default_factory=list)  # per breakpoint: (indices, values)
    _ckpt: dict = field(repr=False, default_factory=dict)  # breakpoint index -> full alpha
    complete: bool = False  # True when no event remains below the last breakpoint
    route: str = "dense"  # how products with K were made ("linear": through X, no n x n matrix)
    _w: list = field(repr=False, default_factory=list)  # linear route: w at each breakpoint
    stats: dict = field(default_factory=dict)  # events, seconds, seconds_per_event, refactorisations, ...

    @property
    def n_pairs(self) -> int:
        return int(self.pi.shape[0])

    @property
    def lambdas(self) -> np.ndarray:
        """The breakpoints' lambdas (kept: w_at and alpha_at look them up once per call)."""
        cached = self.__dict__.get("_lams")
        if cached is None or cached.shape[0] != len(self.breakpoints):
            cached = self.__dict__["_lams"] = np.array([b.lam for b in self.breakpoints])
        return cached

    def alpha(self, t: int) -> np.ndarray:
        """The full dual vector at breakpoint t (replayed from the nearest checkpoint)."""
        t = int(t) % len(self.breakpoints)
        c = (t // CHECKPOINT) * CHECKPOINT
        a = _unpack_alpha(self._ckpt[c], self.n_pairs)
        for s in range(c + 1, t + 1):
            idx, vals = self._changes[s]
            a[idx] = vals
        return a

    def alpha_at(self, lam: float) -> np.ndarray:
        """alpha(lambda), linear in lambda between breakpoints (all ones above lambda_0)."""
        lam = float(lam)
        if lam >= self.lambdas[0]:
            return np.ones(self.n_pairs)
        t, u = self._segment(lam)
        if u is None:
            return self.alpha(t)
        a0, a1 = self.alpha(t), self.alpha(t + 1)
        return (1 - u) * a0 + u * a1

    def _segment(self, lam: float) -> tuple:
        """Where lam (below lambda_0) lies: (t, u) with lams[t] >= lam > lams[t + 1] and
        u = (lams[t] - lam) / (lams[t] - lams[t + 1]) its share of the way; (t, None) at breakpoint t
        (or at the last one). ValueError below the last breakpoint."""
        lams = self.lambdas
        if lam < lams[-1] * (1 - 1e-12):
            raise ValueError(f"lambda {lam:g} is below the last breakpoint {lams[-1]:g} of the path")
        t = int(np.searchsorted(-lams, -lam, side="right")) - 1  # lams[t] >= lam > lams[t + 1]
        if t >= len(lams) - 1 or lam == lams[t]:
            return min(t, len(lams) - 1), None
        return t, (lams[t] - lam) / (lams[t] - lams[t + 1])

    def beta_at(self, lam: float) -> np.ndarray:
        """Expansion coefficients: f(x) = sum_r beta_r k(x_r, x), beta = P'alpha / lambda."""
        a = self.alpha_at(lam)
        beta = np.zeros(self._X.shape[0])
        np.add.at(beta, self.pi, a)
        np.subtract.at(beta, self.pj, a)
        return beta / float(lam)

    def w_at(self, lam: float) -> np.ndarray:
        """Linear kernel only: w(lambda) = (1/lambda) X'P'alpha. With the w of every breakpoint
        recorded (the linear route), from them in O(d): lambda w = X'P'alpha is linear in lambda
        between breakpoints, as alpha is."""
        if self.kernel.name != "linear":
            raise UsageError("w(lambda) exists only for the linear kernel; use scores_at / beta_at")
        if len(self._w) != len(self.breakpoints):
            return np.asarray(self._X.T @ self.beta_at(lam)).ravel()
        lams = self.lambdas
        lam = float(lam)
        if lam >= lams[0]:  # alpha = 1 above lambda_0: lambda w = lambda_0 w_0
            return self._w[0] * (lams[0] / lam)
        t, u = self._segment(lam)
        if u is None:
            return self._w[t].copy()
        return ((1 - u) * lams[t] * self._w[t] + u * lams[t + 1] * self._w[t + 1]) / lam

    @property
    def n_features(self) -> int:
        return int(self._X.shape[1])

    def kernel_rows(self, A) -> np.ndarray:
        """K(A, train): the kernel between the rows of the CSR matrix A and the training documents."""
        return _kernel_matrix(self.kernel, A, self._X)

    def scores_at(self, lam: float, ds: Dataset) -> np.ndarray:
        """f(x) for every row of ds at lambda (through the kernel expansion; linear: X w)."""
        if self.kernel.name == "linear":
            return ds.csr(self._X.shape[1]) @ self.w_at(lam)
        beta = self.beta_at(lam)
        return _kernel_matrix(self.kernel, ds.csr(self._X.shape[1]), self._X) @ beta

    def table(self) -> list:
        rows = []
        for b in self.breakpoints:
            r = {"lambda": b.lam, "C": b.C, "I_alpha": b.n_alpha, "I_0": b.n_zero, "I_1": b.n_one,
                 "hinge": b.hinge, "objective": b.objective, "event": b.event}
            r.update({f"valid_{k}": v for k, v in b.metrics.items()})
            rows.append(r)
        return rows


def _pack_alpha(alpha: np.ndarray) -> tuple:
    """alpha exactly, in about m/8 bytes: outside I_alpha every multiplier is exactly 0 or 1."""
    frac = np.flatnonzero((alpha != 0.0) & (alpha != 1.0))
    return np.packbits(alpha == 1.0), frac, alpha[frac].copy()


def _unpack_alpha(packed: tuple, m: int) -> np.ndarray:
    ones, frac, vals = packed
    a = np.unpackbits(ones, count=m).astype(np.float64)
    a[frac] = vals
    return a


# -- pairs ----------------------------------------------------------------------------------------
def full_pairs(ds: Dataset) -> tuple[np.ndarray, np.ndarray]:
    pi, pj = [], []
    for q in range(ds.n_queries):
        s, e = int(ds.qptr[q]), int(ds.qptr[q + 1])
        y = ds.y[s:e]
        ii, jj = np.nonzero(y[:, None] > y[None, :])
        pi.append(ii + s)
        pj.append(jj + s)
    return np.concatenate(pi).astype(np.int64), np.concatenate(pj).astype(np.int64)


def reduced_pairs(ds: Dataset) -> tuple[np.ndarray, np.ndarray]:
    """The chain of the paper's Fig. 3 (see the module docstring): n_q - 1 edges per query."""
    pi, pj = [], []
    for q in range(ds.n_queries):
        s, e = int(ds.qptr[q]), int(ds.qptr[q + 1])
        y = ds.y[s:e]
        levels = [np.flatnonzero(y == v) + s for v in np.unique(y)[::-1]]  # descending relevance
        for k in range(len(levels) - 1):
            upper, lower = levels[k], levels[k + 1]
            pi.extend([int(upper[0])] * len(lower))
            pj.extend(lower.tolist())
            if k == 0:
                pi.extend(upper[1:].tolist())
                pj.extend([int(lower[0])] * (len(upper) - 1))
    return np.array(pi, dtype=np.int64), np.array(pj, dtype=np.int64)


def _kernel_matrix(kernel, A, B) -> np.ndarray:
    return kernel.matrix(A, B)


# -- products with K: the dense reference route and the linear structure ------------------------
class DenseKernel:
    """The brute-force route: the dense n x n kernel matrix K and the n_valid x n matrix K(valid,
    train), built once (O(n^2) memory and O(n^2) per product). Any kernel; the reference the linear
    route is tested against."""

    name = "dense"

    def __init__(self, kern, X, Xv, pi, pj):
        self.K = _kernel_matrix(kern, X, X)
        self.Kv = _kernel_matrix(kern, Xv, X) if Xv is not None else None
        K = self.K
        self.qdiag = K[pi, pi] + K[pj, pj] - 2.0 * K[pi, pj]
        self.pi, self.pj = pi, pj

    def apply(self, z: np.ndarray):
        """(K z, None)."""
        return self.K @ z, None

    def apply_pairs(self, v: np.ndarray, idx: np.ndarray) -> tuple:
        """(K P_idx' v, None, P_idx' v)."""
        z = _pair_sum(self.pi[idx], self.pj[idx], v, self.K.shape[0])
        return self.K @ z, None, z

    def q_cols(self, rows: np.ndarray, p: int) -> np.ndarray:
        """Q[rows, p]."""
        K, pi, pj = self.K, self.pi, self.pj
        i, j = pi[p], pj[p]
        return K[pi[rows], i] - K[pi[rows], j] - K[pj[rows], i] + K[pj[rows], j]

    def valid_scores(self, z: np.ndarray, feat) -> np.ndarray:
        """K(valid, train) z."""
        return self.Kv @ z

    @staticmethod
    def describe(n: int, nv: int) -> str:
        """What this route builds for n training and nv validation documents (known before building)."""
        return f"dense kernel matrices ({8 * (n * n + nv * n) / 1e6:,.0f} MB)"


class LinearStructure:
    """The linear kernel K = X X' never formed: K z = X (X' z) in O(nnz), the kernel entries of a
    few pairs from their rows, the validation scores X_valid (X' z). Memory O(nnz + m)."""

    name = "linear"

    def __init__(self, X, Xv, pi, pj):
        self.X, self.pi, self.pj = X, pi, pj
        n, d = X.shape
        # features dense enough (LETOR: every document has every feature): X kept dense, at most
        # DENSE_BYTES_RATIO times the bytes of its CSR form, and multiplied in one contiguous pass
        self.Xd = X.toarray() if 8.0 * n * d <= DENSE_BYTES_RATIO * 12.0 * max(X.nnz, 1) else None
        self.Xvd = Xv.toarray() if Xv is not None and self.Xd is not None else None
        self.Xv = Xv
        # otherwise rankkit's own CSR kernels (threaded, the same bits on any number of threads)
        self.csr = (X.data, X.indices, np.asarray(X.indptr, dtype=np.int64))
        sq = np.asarray(X.multiply(X).sum(axis=1)).ravel()
        m = pi.shape[0]
        cross = np.empty(m)
        for s in range(0, m, _PAIR_BLOCK):  # x_i . x_j of each pair, a block of pairs at a time
            e = min(m, s + _PAIR_BLOCK)
            cross[s:e] = np.asarray(X[pi[s:e]].multiply(X[pj[s:e]]).sum(axis=1)).ravel()
        self.qdiag = sq[pi] + sq[pj] - 2.0 * cross

    def times(self, u: np.ndarray) -> np.ndarray:
        """X u."""
        out = np.empty(self.X.shape[0])
        if self.Xd is not None:
            dense_matvec(self.Xd, u, out)
            return out
        data, indices, indptr = self.csr
        return csr_matvec(data, indices, indptr, u, out)

    def apply(self, z: np.ndarray):
        """(K z, X' z)."""
        feat = np.empty(self.X.shape[1])
        if self.Xd is not None:
            dense_rmatvec(self.Xd, z, feat)
        else:
            data, indices, indptr = self.csr
            csr_rmatvec(data, indices, indptr, z, feat)
        return self.times(feat), feat

    def apply_pairs(self, v: np.ndarray, idx: np.ndarray) -> tuple:
        """(K P_idx' v, u, None): K P_idx' v = X u with u = X'P_idx' v = sum_p v_p (x_i - x_j) from the
        pairs' own rows."""
        docs = np.concatenate([self.pi[idx], self.pj[idx]])
        row, cols, vals = _gather_rows(self.X, docs)
        u = np.bincount(cols, weights=vals * np.concatenate([v, -v])[row], minlength=self.X.shape[1])
        return self.times(u), u, None

    def q_cols(self, rows: np.ndarray, p: int) -> np.ndarray:
        """Q[rows, p] = (x_i' - x_j') . (x_i - x_j) for the rows' pairs (i', j') and p = (i, j)."""
        r = rows.shape[0]
        row, cols, vals = _gather_rows(self.X, np.array([self.pi[p], self.pj[p]]))
        a = np.bincount(cols, weights=np.where(row == 0, vals, -vals), minlength=self.X.shape[1])
        row, cols, vals = _gather_rows(self.X, np.concatenate([self.pi[rows], self.pj[rows]]))
        s = np.bincount(row, weights=vals * a[cols], minlength=2 * r)
        return s[:r] - s[r:]

    def valid_scores(self, z, feat: np.ndarray) -> np.ndarray:
        if self.Xvd is not None:
            out = np.empty(self.Xvd.shape[0])
            dense_matvec(self.Xvd, feat, out)
            return out
        return self.Xv @ feat

    @staticmethod
    def describe(n: int, nv: int) -> str:
        return "linear kernel through the sparse features (no n x n matrix)"


def _gather_rows(X, docs: np.ndarray):
    """The stored entries of rows `docs` of the CSR matrix X: (position in docs, column, value)."""
    start = X.indptr[docs]
    lens = X.indptr[docs + 1] - start
    row = np.repeat(np.arange(docs.shape[0]), lens)
    pos = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens - start, lens)
    return row, X.indices[pos], X.data[pos]


def _pair_sum(pi: np.ndarray, pj: np.ndarray, v: np.ndarray, n: int) -> np.ndarray:
    """P'v: +v_p at the upper document of pair p, -v_p at the lower one."""
    return np.bincount(pi, weights=v, minlength=n) - np.bincount(pj, weights=v, minlength=n)


# -- the path: its state and its events -----------------------------------------------------------
class _MarginSet:
    """I_alpha (the paper's E): the pairs held at margin 1, in the order they entered, and the explicit
    inverse Minv = Q_EE^-1, updated by the bordered-matrix formula when a pair enters and by the
    Schur-complement downdate when one leaves (O(|E|^2) per event); `refresh` recomputes it."""

    def __init__(self, ops, pi: np.ndarray, pj: np.ndarray):
        self.ops, self.pi, self.pj = ops, pi, pj
        self.qscale = max(float(ops.qdiag.max()), 1e-300)
        self.pairs: list[int] = []
        self.Minv = np.zeros((0, 0))

    def __len__(self) -> int:
        return len(self.pairs)

    def refresh(self) -> None:
        """Q_EE^-1 from scratch: Cholesky, or the pseudo-inverse when Q_EE is numerically singular."""
        E = self.pairs
        if not E:
            self.Minv = np.zeros((0, 0))
            return
        idx = np.array(E)
        QEE = np.empty((len(E), len(E)))
        for c, p in enumerate(E):
            QEE[:, c] = self.ops.q_cols(idx, p)
        try:
            L = np.linalg.cholesky(QEE)
            Linv = np.linalg.solve(L, np.eye(len(E)))
            self.Minv = Linv.T @ Linv
        except np.linalg.LinAlgError:  # numerically singular: the KKT check will stop the path if it matters
            self.Minv = np.linalg.pinv(QEE)

    def condition(self) -> float:
        """An estimate of cond(Q_EE) = ||Q_EE||_1 ||Q_EE^-1||_1 (entries of Q bounded by qscale)."""
        k = len(self.pairs)
        return k * self.qscale * float(np.abs(self.Minv).sum(axis=0).max(initial=0.0))

    def closes_cycle(self, p: int) -> bool:
        """Does pair p close a cycle with the pairs of E (documents as nodes)? Then the rows of P
        for E + p are linearly dependent and Q_EE + p is singular whatever the kernel."""
        pi, pj = self.pi, self.pj
        u, v = int(pi[p]), int(pj[p])
        adj: dict = {}
        for e in self.pairs:
            a, b = int(pi[e]), int(pj[e])
            adj.setdefault(a, []).append(b)
            adj.setdefault(b, []).append(a)
        if u not in adj or v not in adj:
            return False
        seen, stack = {u}, [u]
        while stack:
            x = stack.pop()
            for y in adj[x]:
                if y == v:
                    return True
                if y not in seen:
                    seen.add(y)
                    stack.append(y)
        return False

    def add(self, p: int) -> bool:
        """Pair p enters E (True), unless it depends on E (False): it closes a cycle, or its Schur
        complement s = Q_pp - q'Q_EE^-1 q is below SING_RTOL * Q_pp (or Q_pp itself is ~0)."""
        E = self.pairs
        qpp = self.ops.qdiag[p]
        if E and self.closes_cycle(p):
            return False
        if not E:
            if qpp <= SING_RTOL * self.qscale:
                return False
            self.Minv = np.array([[1.0 / qpp]])
        else:
            qv = self.ops.q_cols(np.array(E), p)
            b = self.Minv @ qv
            s = qpp - qv @ b
            # s is computed with an error of about eps * cond(Q_EE) * Q_pp: below a multiple of that it
            # cannot be told from 0, and the pair is taken as dependent (cond estimated by the 1-norms)
            noise = NOISE_FACTOR * np.finfo(float).eps * self.condition() * max(qpp, 1e-300)
            if s <= SING_RTOL * max(qpp, 1e-300) or s <= SING_RTOL * self.qscale * 1e-3 or s <= noise:
                return False
            k = len(E)
            new = np.empty((k + 1, k + 1))
            new[:k, :k] = self.Minv + np.outer(b, b) / s
            new[:k, k] = -b / s
            new[k, :k] = -b / s
            new[k, k] = 1.0 / s
            self.Minv = new
        E.append(p)
        return True

    def remove(self, p: int) -> None:
        """Pair p leaves E."""
        pos = self.pairs.index(p)
        Minv = self.Minv
        d = Minv[pos, pos]
        keep = np.r_[0:pos, pos + 1:len(self.pairs)]
        col = Minv[keep, pos]
        self.Minv = Minv[np.ix_(keep, keep)] - np.outer(col, col) / d
        self.pairs.pop(pos)


class _History:
    """The breakpoints and alpha at each of them, compressed: the entries that changed since the
    previous breakpoint, the whole (packed) alpha every CHECKPOINT breakpoints, and on the linear
    route w at each breakpoint (what ExactPathResult replays)."""

    def __init__(self, alpha: np.ndarray):
        self.breakpoints: list[Breakpoint] = []
        self.changes: list = []  # per breakpoint: (indices, values) where alpha differs from the previous one
        self.ckpt: dict = {}
        self.ws: list = []  # linear route: w at each breakpoint
        self.before_last = alpha.copy()  # alpha at the breakpoint before the last one
        self.last = alpha.copy()  # alpha at the last breakpoint

    def nbytes(self) -> int:
        """The arrays the history keeps (changes, checkpoints, w per breakpoint), in bytes; the
        Breakpoint records add about 400 bytes each."""
        n = sum(i.nbytes + v.nbytes for i, v in self.changes)
        n += sum(a.nbytes + b.nbytes + c.nbytes for a, b, c in self.ckpt.values())
        return n + sum(w.nbytes for w in self.ws)

    def append(self, b: Breakpoint, alpha: np.ndarray, feat) -> None:
        """A new breakpoint b with its alpha (feat: X'P'alpha on the linear route, else None)."""
        if self.breakpoints:
            self.before_last = self.last
        self.breakpoints.append(b)
        self.amend_last(alpha, feat)

    def amend_last(self, alpha: np.ndarray, feat) -> None:
        """The last breakpoint's alpha is now this one (zero-length events joined it)."""
        t = len(self.breakpoints) - 1
        if t % CHECKPOINT == 0:
            self.ckpt[t] = _pack_alpha(alpha)
        if feat is not None:
            w_t = feat / self.breakpoints[t].lam
            if t < len(self.ws):
                self.ws[t] = w_t
            else:
                self.ws.append(w_t)
        idx = np.flatnonzero(alpha != self.before_last)
        if t < len(self.changes):
            self.changes[t] = (idx, alpha[idx].copy())
        else:
            self.changes.append((idx, alpha[idx].copy()))
        self.last = alpha.copy()


class _PathState:
    """The path between two events: the current lambda, alpha, g = Q alpha (and lambda * beta,
    lambda * w); the sets (`state`: 1 for I_1, 0 for I_0, 2 for E; E itself with Q_EE^-1 in a
    _MarginSet); the breakpoints so far (a _History); the counters of the stopping rules and of
    the numerical safeguards (`stats`). `run` follows the path, one `step` per breakpoint; the
    events of a step (a pair entering or leaving E, the close at lambda_min) are methods.

    Along a segment alpha_E, g, lambda * beta and lambda * w move by (lambda - lambda^t) times their
    direction (eta, h = Q_:E eta, P_E'eta, X'P_E'eta): O(m) per event, no product with K. They are
    recomputed from alpha (`exact`, O(nnz + m)) every EXACT_EVERY steps, so rounding cannot build
    up. Each step is checked (`verified`): the residual of the direction, |(Q_EE eta)_p - 1|, and
    at the new breakpoint the margins of E, |m_p - 1|, must be below RESID_TOL, and the KKT
    conditions must hold to KKT_TOL. A residual above it means the updated Q_EE^-1 has drifted: it
    is refactorised from scratch (Cholesky of Q_EE from its entries), eta and alpha_E refined
    against the exact products (iterative refinement: alpha_E solved afresh from the sets,
    Q_EE alpha_E = lambda 1 - Q_EN alpha_N). A breakpoint that still fails the KKT check is undone:
    the path goes back to the last verified breakpoint, refactorises, solves alpha_E afresh and
    takes the step again. Only if that step fails too does the path stop, with a warning."""

    def __init__(self, ops, pi: np.ndarray, pj: np.ndarray, n: int, valid: Dataset | None, names: list,
                 source: str, lambda_min, lambda_min_ratio: float, max_events: int, max_zero_steps, log, progress,
                 t_start: float, convention: str = DEFAULT_CONVENTION):
        m = pi.shape[0]
        self.ops, self.m, self.n, self.valid, self.names, self.source = ops, m, n, valid, names, source
        self.pi, self.pj = pi, pj
        self.lam_min = None if lambda_min is None else float(lambda_min)  # set from lambda_0 when None
        self.lambda_min_ratio, self.max_events = lambda_min_ratio, max_events
        self.max_zero_steps = 2 * min(m, n) + 20 if max_zero_steps is None else int(max_zero_steps)
        self.log, self.progress, self.t_start = log, progress, t_start
        self.E = _MarginSet(ops, pi, pj)
        self.alpha = np.ones(m)
        self.state = np.ones(m, dtype=np.int8)  # 1: I_1, 0: I_0, 2: E
        self.blocked: set = set()  # dependent pairs refused at the current lambda (they keep their bound)
        self.blocked_mask = np.zeros(m, dtype=np.int8)  # the same as a mask, for the candidates' sweep
        self.cand = np.empty(m)  # the candidates' sweep writes here
        self.lam = np.inf
        self.g = None  # Q alpha
        self.z = None  # P'alpha (the dense route): lambda * beta
        self.feat = None  # X'P'alpha (the linear route): lambda * w
        self.history = _History(self.alpha)
        self.stop_reason, self.complete = "", False
        self.n_events = self.zero_steps = self.since_refresh = self.since_exact = 0
        self.seen_here: set = set()  # (E, events) of the zero-length steps at the current lambda
        self.box_excess = 0.0  # how far alpha_E left [0, 1] in the last step (before it was clipped)
        self.stats = {"refactorisations": 0, "periodic_refreshes": 0, "refinements": 0, "alpha_resolves": 0,
                      "backtracks": 0, "exact_products": 0, "max_residual": 0.0, "max_kkt": 0.0}
        self.clock = {"log": -np.inf, "progress": -np.inf}
        self.grader = _Grader(valid, names, convention) if valid is not None else None

    # products with Q = P K P', never formed
    def exact(self) -> None:
        """g = Q alpha, lambda * beta = P'alpha and lambda * w = X'P'alpha from alpha itself."""
        z = np.empty(self.n)
        pair_sum(self.alpha, self.pi, self.pj, z)
        kz, self.feat = self.ops.apply(z)
        self.z = z if self.ops.name == "dense" else None
        g = np.empty(self.m)
        pair_diff(kz, self.pi, self.pj, g)
        self.g = g
        self.since_exact = 0
        self.stats["exact_products"] += 1

    def q_columns(self, v: np.ndarray, idx: np.ndarray) -> tuple:
        """(Q[:, idx] v, P_idx'v on the dense route (else None), X'P_idx'v on the linear route (else None))."""
        kz, dfeat, dz = self.ops.apply_pairs(v, idx)
        out = np.empty(self.m)
        pair_diff(kz, self.pi, self.pj, out)
        return out, (dz if self.ops.name == "dense" else None), dfeat

    def add_columns(self, d: np.ndarray, idx: np.ndarray) -> None:
        """alpha_idx += d, with g, lambda * beta and lambda * w following."""
        self.alpha[idx] += d
        dg, dz, dfeat = self.q_columns(d, idx)
        self.g += dg
        if dz is not None:
            self.z += dz
        if dfeat is not None:
            self.feat += dfeat

    # the path
    def run(self) -> None:
        """Follow the path from lambda = +inf until a stopping rule (stop_reason says which)."""
        self.exact()
        while self.step():
            self.report()
        self.grade()
        self.report(final=True)

    def step(self) -> bool:
        """Move to the next breakpoint and process its events (one at a time if it is where the last
        one was: a zero-length step), check it, record it. A breakpoint that fails the check after
        a refactorisation is taken again from the last verified one; False when the path stops."""
        snap = self.snapshot()
        for attempt in range(2):
            outcome = self.advance()
            if outcome is None:
                return False
            if self.verified():
                break
            if attempt == 0:  # back to the last verified breakpoint: fresh factorisation, alpha_E afresh
                bad = self.stats["last_kkt"]
                self.restore(snap)
                self.stats["backtracks"] += 1
                self.refactorise()
                self.resolve_alpha()
                if self.log:
                    self.log(f"exact path: KKT violated by {bad:.3g} at lambda {self.lam:.6g} after a refactorisation; "
                             "the step is taken again from the last verified breakpoint")
        else:
            self.E.refresh()
            self.stop_reason = (f"KKT violated by {self.stats['last_kkt']:.3g} at lambda {self.lam:.6g} (numerical "
                                "trouble: the step failed again when taken from the last verified breakpoint with a "
                                "fresh factorisation)")
            return False
        events, step_zero = outcome
        if not step_zero or not self.history.breakpoints:
            first = not self.history.breakpoints
            label = "init" if first else "+".join(sorted({e for e, _ in events})) or "dependent"
            self.record(self.lam, label, tuple(p for _, p in events))
        else:  # zero-length events at the same lambda join the last breakpoint
            self.join_last(events)
        return True

    def advance(self):
        """The move to the next breakpoint and its events: (events, zero-length?), or None when the
        path stops there (lambda_min, max_events, an unresolved tie)."""
        idx, eta, h, dz, dfeat = self.direction()
        kinds, best = self.candidates(idx, eta, h)
        if self.lam_min is None and np.isfinite(best) and best > 0 and np.isinf(self.lam):
            self.lam_min = self.lambda_min_ratio * best
        floor = self.lam_min if self.lam_min is not None else 0.0
        if not np.isfinite(best) or best <= floor:
            self.close(best, floor, idx, eta, h, dz, dfeat)
            return None
        if self.n_events >= self.max_events:
            self.stop_reason = "max_events"
            return None
        step_zero = best >= self.lam * (1 - EVENT_RTOL) if np.isfinite(self.lam) else False
        leaving, entering = self.due(kinds, best)
        if step_zero:  # one pair at a time at a degenerate breakpoint
            self.zero_steps += 1
            leaving = leaving[:1]
            entering = [] if leaving else entering[:1]
            if self.zero_steps > self.max_zero_steps:
                self.stop_reason = (f"degenerate breakpoint at lambda {self.lam:.6g}: ties did not resolve in "
                                    f"{self.max_zero_steps} steps")
                return None
            key = (tuple(sorted(self.E.pairs)), hash(self.state.tobytes()), tuple(leaving), tuple(entering))
            if key in self.seen_here:  # the same sets and the same event again: the steps cycle
                self.stop_reason = (f"degenerate breakpoint at lambda {self.lam:.6g}: the zero-length steps cycle "
                                    f"(|I_alpha| {len(self.E)}, after {self.zero_steps} steps)")
                return None
            self.seen_here.add(key)
        else:
            self.zero_steps = 0
            self.seen_here = set()
            self.unblock()
            self.move_to(best, idx, eta, h, dz, dfeat)
        events = [self.leave(p, kinds[p]) for p in leaving]
        events += [e for e in (self.enter(p) for p in entering) if e is not None]
        self.n_events += len(events)
        self.since_refresh += len(events)
        self.box_excess = 0.0
        if self.E.pairs:
            inside = np.array(self.E.pairs)
            aE = self.alpha[inside]
            # a multiplier of E beyond its box by more than rounding: an event was missed (the step fails)
            self.box_excess = max(0.0, -float(aE.min()), float(aE.max()) - 1.0)
            self.alpha[inside] = np.clip(aE, 0.0, 1.0)
        if self.since_refresh >= REFRESH:
            self.E.refresh()
            self.stats["periodic_refreshes"] += 1
            self.since_refresh = 0
        if self.since_exact >= EXACT_EVERY:
            self.exact()
        return events, step_zero

    def direction(self) -> tuple:
        """On the current segment: (idx, eta, h, dz, dfeat), idx the pairs of E, eta = Q_EE^-1 1
        (alpha_E moves by eta per unit of lambda), h = Q_:E eta (lambda m = g + (lambda - lambda^t)
        h), dz = P_E'eta and dfeat = X'P_E'eta (lambda * beta and lambda * w move by these). The
        residual |h_E - 1| is checked: above RESID_TOL, Q_EE^-1 is refactorised and eta refined."""
        if not self.E.pairs:
            return np.zeros(0, np.int64), np.zeros(0), None, None, None
        idx = np.array(self.E.pairs)
        eta = self.E.Minv.sum(axis=1)  # Q_EE^-1 1 (Minv is symmetric)
        h, dz, dfeat = self.q_columns(eta, idx)
        res = float(np.max(np.abs(h[idx] - 1.0)))
        if res > RESID_TOL:
            self.refactorise()
            eta = self.E.Minv.sum(axis=1)
            h, dz, dfeat = self.q_columns(eta, idx)
            for _ in range(REFINE_STEPS):  # iterative refinement against the exact products
                r = 1.0 - h[idx]
                res = float(np.max(np.abs(r)))
                if res <= RESID_TOL:
                    break
                d = self.E.Minv @ r
                eta = eta + d
                dh, ddz, ddf = self.q_columns(d, idx)
                h = h + dh
                dz = dz + ddz if dz is not None else None
                dfeat = dfeat + ddf if dfeat is not None else None
                self.stats["refinements"] += 1
            res = float(np.max(np.abs(h[idx] - 1.0)))
        self.stats["max_residual"] = max(self.stats["max_residual"], res)
        return idx, eta, h, dz, dfeat

    def refactorise(self) -> None:
        """Q_EE^-1 from scratch (the updated inverse has drifted, or a breakpoint failed its check)."""
        self.E.refresh()
        self.since_refresh = 0
        self.stats["refactorisations"] += 1

    def resolve_alpha(self) -> None:
        """alpha_E solved afresh from the sets: Q_EE alpha_E = lambda 1 - Q_EN alpha_N, i.e. the margins
        of E exactly 1, by iterative refinement from the current alpha_E against the exact g."""
        self.exact()
        if not self.E.pairs or not np.isfinite(self.lam):
            return
        idx = np.array(self.E.pairs)
        for _ in range(REFINE_STEPS):
            r = self.lam - self.g[idx]
            if float(np.max(np.abs(r))) <= RESID_TOL * self.lam:
                break
            self.add_columns(self.E.Minv @ r, idx)
            self.stats["alpha_resolves"] += 1

    def verified(self) -> bool:
        """The breakpoint just reached: the margins of E within RESID_TOL of 1 and the KKT conditions
        within KKT_TOL, after (if needed) g from alpha, a refactorisation and alpha_E solved afresh."""
        if self.box_excess > KKT_TOL:  # alpha_E left its box on the way: no repair here can mend that
            self.stats["last_kkt"] = self.box_excess
            return False
        for repair in range(3):
            if repair == 1:
                self.exact()  # g, z, feat from alpha: rules out drift of the updates
            elif repair == 2:
                self.refactorise()
                self.resolve_alpha()
            bad, resid = kkt_sweep(self.alpha, self.g, self.lam, self.state) if np.isfinite(self.lam) else (0.0, 0.0)
            self.stats["last_kkt"] = bad
            if bad <= KKT_TOL and resid <= RESID_TOL:
                self.stats["max_kkt"] = max(self.stats["max_kkt"], bad)
                return True
        return bad <= KKT_TOL

    def snapshot(self) -> tuple:
        """What a step changes, to take it again: alpha and the sets (two O(m) copies; g, lambda * w and
        lambda * beta are recomputed from alpha when the step is taken again)."""
        return (self.lam, self.alpha.copy(), self.state.copy(), list(self.E.pairs), self.E.Minv.copy(),
                set(self.blocked), self.zero_steps, self.n_events, self.since_refresh, set(self.seen_here))

    def restore(self, snap: tuple) -> None:
        """Back to a snapshot; g, z and feat from its alpha."""
        (self.lam, self.alpha, self.state, pairs, Minv, blocked, self.zero_steps, self.n_events,
         self.since_refresh, self.seen_here) = snap
        self.E.pairs, self.E.Minv = pairs, Minv
        self.unblock()
        for p in blocked:
            self.block(p)
        self.exact()

    def block(self, p: int) -> None:
        self.blocked.add(p)
        self.blocked_mask[p] = 1

    def unblock(self) -> None:
        if self.blocked:
            self.blocked_mask[np.array(sorted(self.blocked))] = 0
            self.blocked.clear()

    def candidates(self, idx: np.ndarray, eta: np.ndarray, h) -> tuple:
        """(kinds of the pairs of E, the largest candidate); self.cand: per pair the largest lambda <=
        the current one at which it has an event (-inf: none): a pair outside E enters E (eq. 17,
        or from lambda = +inf the start), a pair of E leaves for I_0 (kind 2) or I_1 (kind 3) (eqs.
        13, 14). Pairs refused at this lambda (blocked) have none."""
        lam, cand = self.lam, self.cand
        hh = h if h is not None else _zeros_like(self.g)
        best = outside_candidates(self.g, hh, self.state, self.blocked_mask, lam, 1e-10, cand)
        kinds = {}
        if self.E.pairs and np.isfinite(lam):
            aE = self.alpha[idx]
            etol = 1e-12 * float(np.max(np.abs(eta), initial=0.0))
            up = eta < -etol
            lu = np.full(len(idx), -np.inf)
            lu[up] = lam + np.maximum(1.0 - aE[up], 0.0) / eta[up]
            dn = eta > etol
            ld = np.full(len(idx), -np.inf)
            ld[dn] = lam - np.maximum(aE[dn], 0.0) / eta[dn]
            cE = np.minimum(np.maximum(lu, ld), lam)
            cand[idx] = cE
            kinds = {int(p): (3 if u >= d else 2) for p, u, d in zip(idx, lu, ld)}
            best = max(best, float(cE.max()))
        return kinds, best

    def due(self, kinds: dict, best: float) -> tuple:
        """The pairs whose event is at `best` (within EVENT_RTOL): (leaving E, entering E)."""
        hit = np.flatnonzero(self.cand >= best - EVENT_RTOL * max(abs(best), 1e-300))
        leaving = [int(p) for p in hit if self.state[p] == 2]
        entering = [int(p) for p in hit if self.state[p] != 2]
        return leaving, entering

    def move_to(self, lam: float, idx: np.ndarray, eta: np.ndarray, h, dz, dfeat) -> None:
        """Along the segment to lambda = lam: alpha_E, g, lambda * beta and lambda * w move by
        (lam - lambda) times their directions (nothing moves from +inf, or with E empty)."""
        if np.isfinite(self.lam) and self.E.pairs:
            dl = lam - self.lam
            self.alpha[idx] = self.alpha[idx] + dl * eta
            self.g += dl * h
            if dz is not None:
                self.z += dl * dz
            if dfeat is not None:
                self.feat += dl * dfeat
            self.since_exact += 1
        self.lam = lam

    def leave(self, p, kind_p) -> tuple:
        """Pair p leaves E for I_0 (kind 2) or I_1 (kind 3), its alpha exactly at that bound."""
        to = 0 if kind_p == 2 else 1
        self.alpha[p] = float(to)
        self.state[p] = to
        self.E.remove(p)
        return (f"leave_to_{to}", int(p))

    def enter(self, p) -> tuple | None:
        """Pair p enters E; None if it depends on E (a cycle, or rank): its margin is a combination of
        margins equal to 1, so it stays at its bound, refused until lambda moves on (the KKT check
        catches the case where that is wrong)."""
        p = int(p)
        if self.E.add(p):
            self.state[p] = 2
            return ("enter", p)
        self.block(p)
        return None

    def close(self, best: float, floor: float, idx: np.ndarray, eta: np.ndarray, h, dz, dfeat) -> None:
        """No event above lambda_min (floor): the path ends, with a last breakpoint at lambda_min."""
        if np.isinf(self.lam):
            raise UsageError(f"{self.source}: every pair has (Q 1)_p <= 0: the path is empty")
        self.complete = not np.isfinite(best) or best <= 0
        self.stop_reason = "complete" if self.complete else "lambda_min"
        if floor > 0 and floor < self.lam:
            self.move_to(floor, idx, eta, h, dz, dfeat)
            self.exact()
            self.record(floor, "lambda_min", ())

    def record(self, lam: float, event: str, pairs: tuple) -> None:
        """A new breakpoint at lam: the sets' sizes, the hinge loss, the objective; the validation
        scores go to the grader (graded a block of breakpoints at a time)."""
        hinge, quad = hinge_and_quad(self.g, self.alpha, lam)
        obj = hinge + 0.5 * quad / lam
        nE = len(self.E)
        n1 = int(np.count_nonzero(self.state == 1))
        b = Breakpoint(lam, nE, self.m - nE - n1, n1, event, pairs, hinge, obj, {}, time.perf_counter() - self.t_start)
        self.history.append(b, self.alpha, self.feat)
        if self.grader is not None:
            self.grader.add(b, self.ops.valid_scores(self.z, self.feat) / lam)

    def grade(self) -> None:
        """The validation metrics of the breakpoints not graded yet."""
        if self.grader is not None:
            self.grader.flush()

    def join_last(self, events: list) -> None:
        """Zero-length events: the last breakpoint (at this lambda) takes them and the sets after them."""
        b = self.history.breakpoints[-1]
        b.event = "+".join(sorted(set(b.event.split("+")) | {e for e, _ in events}))
        b.pairs = b.pairs + tuple(p for _, p in events)
        b.n_alpha = len(self.E)
        b.n_one = int(np.count_nonzero(self.state == 1))
        b.n_zero = self.m - b.n_alpha - b.n_one
        self.history.amend_last(self.alpha, self.feat)

    def report(self, final: bool = False) -> None:
        """A log line (at most one every LOG_SECONDS, and the last) and the progress display."""
        breakpoints = self.history.breakpoints
        if not breakpoints or not (self.log or self.progress):
            return
        now = time.perf_counter()
        b = breakpoints[-1]
        if self.log and (final or now - self.clock["log"] >= LOG_SECONDS):
            self.clock["log"] = now
            self.grade()
            st = self.stats
            shown = "".join(f"  valid {k} {v:.4f}" for k, v in b.metrics.items())
            self.log(f"exact path: breakpoint {len(breakpoints):,}  events {self.n_events:,}  lambda {b.lam:.6g}  "
                     f"C {b.C:.6g}  |I_alpha| {b.n_alpha}  |I_1| {b.n_one}  |I_0| {b.n_zero}{shown}  "
                     f"refactorised {st['refactorisations']}  {now - self.t_start:.1f} s"
                     + (f"  ({self.stop_reason or 'stopped'})" if final else ""))
        if self.progress and (final or now - self.clock["progress"] >= PROGRESS_SECONDS):
            self.clock["progress"] = now
            lam0, lam_min = breakpoints[0].lam, self.lam_min
            done = 0
            if lam_min is not None and 0 < lam_min < lam0:
                done = int(PROGRESS_STEPS * np.log(lam0 / b.lam) / np.log(lam0 / lam_min))
            done = PROGRESS_STEPS if final else min(max(done, 0), PROGRESS_STEPS - 1)
            self.progress(done, PROGRESS_STEPS, f"{len(breakpoints):,} breakpoints, C {b.C:.3g}, |I_alpha| {b.n_alpha}")


def _zeros_like(v: np.ndarray) -> np.ndarray:
    return np.zeros_like(v)


class _Grader:
    """The validation metrics of the breakpoints, a block of GRADE_BLOCK breakpoints per call of the
    metric kernels: the block's score vectors side by side as GRADE_BLOCK copies of the validation
    queries (each query is graded on its own, so the numbers are those of one call per breakpoint,
    with the tiebreak `rankkit eval` uses)."""

    def __init__(self, valid: Dataset, names: list, convention: str):
        self.valid, self.names, self.convention = valid, list(names), convention
        self.tiebreak = dataset_tiebreak(valid, convention)
        self.pending: list = []  # (breakpoint, validation scores)

    def add(self, b: Breakpoint, scores: np.ndarray) -> None:
        self.pending.append((b, scores))
        if len(self.pending) >= GRADE_BLOCK:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        v, k = self.valid, len(self.pending)
        nv, nq = v.n_rows, v.n_queries
        qptr = np.concatenate([v.qptr[:-1] + c * nv for c in range(k)] + [np.array([k * nv], np.int64)])
        tb = None if self.tiebreak is None else np.tile(self.tiebreak, k)
        scores = np.concatenate([s for _, s in self.pending])
        table = per_query_table(self.names, np.tile(v.y, k), scores, qptr, self.convention, tiebreak=tb)
        for name in self.names:
            vals = table[name].reshape(k, nq)
            for (b, _), row in zip(self.pending, vals):
                row = row[~np.isnan(row)]
                b.metrics[name] = float(row.mean()) if row.size else float("nan")
        self.pending = []


def _check_choice(what: str, value: str, known: tuple) -> None:
    if value not in known:
        raise UsageError(f"unknown {what} '{value}' (known: {', '.join(known)})")


def _resolve_route(route: str, kern) -> str:
    """"auto": "linear" for the linear kernel, "dense" otherwise; "linear" needs the linear kernel."""
    if route == "auto":
        return "linear" if kern.name == "linear" else "dense"
    if route == "linear" and kern.name != "linear":
        raise UsageError(f"the linear route needs the linear kernel, not {kern.name}")
    return route


def exact_path(train: Dataset, valid: Dataset | None = None, kernel: str = "linear", gamma: float | None = None,
               degree: int = 3, coef0: float = 0.0, graph: str = "full", lambda_min: float | None = None,
               max_events: int = 10000, metric=DEFAULT_METRIC, max_zero_steps: int | None = None,
               lambda_min_ratio: float = 1e-6, route: str = "auto", log=None, progress=None,
               convention: str = DEFAULT_CONVENTION) -> ExactPathResult:
    """The exact piecewise-linear dual path, breakpoint by breakpoint (see the module docstring).

    lambda_min defaults to lambda_min_ratio * lambda_0. Every breakpoint is evaluated on `valid`
    (metric: a name or a list of names). Stops at lambda_min, max_events, a degenerate tie that does
    not resolve, or a KKT violation, with a PathWarning giving the reason.

    route: how products with K are made. "linear" (the default for the linear kernel): through the
    sparse features, K z = X (X'z), O(nnz) time and no n x n matrix; "dense" (the default for rbf
    and poly, and the brute-force reference for linear): the dense n x n kernel matrix.
    log(line): progress lines from the start (what it does, breakpoints so far, lambda, |I_alpha|,
    time), at most one every LOG_SECONDS. progress(done, total, info): a progress display; done of
    total = PROGRESS_STEPS is the share of log(lambda_0 / lambda_min) covered so far."""
    t_start = time.perf_counter()
    names = [metric] if isinstance(metric, str) else list(metric)
    for nm in names:
        parse_metric(nm)
    _check_choice("graph", graph, ("full", "reduced"))
    _check_choice("route", route, ("auto", "linear", "dense"))
    train.require_pairs()
    kern = make_kernel(kernel, train.n_features, gamma, degree, coef0)
    route = _resolve_route(route, kern)
    X = train.csr()
    Xv = valid.csr(train.n_features) if valid is not None else None
    pi, pj = full_pairs(train) if graph == "full" else reduced_pairs(train)
    n, nv = train.n_rows, (Xv.shape[0] if Xv is not None else 0)
    if log:
        log(f"exact path: {pi.shape[0]:,} pairs ({graph} graph) of {n:,} documents, {train.n_features:,} features, "
            f"{kern.name} kernel; building the " + ("pair structure" if route == "linear" else DenseKernel.describe(n, nv)))
    ops = LinearStructure(X, Xv, pi, pj) if route == "linear" else DenseKernel(kern, X, Xv, pi, pj)
    path = _PathState(ops, pi, pj, n, valid, names, train.source, lambda_min, lambda_min_ratio, max_events,
                      max_zero_steps, log, progress, t_start, convention)
    if log:
        log(f"exact path: {ops.describe(n, nv)} ready in {time.perf_counter() - t_start:.2f} s; following the path "
            "from lambda_0")
    t_path = time.perf_counter()
    path.run()
    h = path.history
    if path.stop_reason not in ("complete", "lambda_min"):  # reaching lambda_min is the normal end
        warnings.warn(f"exact path stopped: {path.stop_reason} after {path.n_events} events, "
                      f"{len(h.breakpoints)} breakpoints", PathWarning, stacklevel=2)
    seconds = time.perf_counter() - t_start
    stats = {k: v for k, v in path.stats.items() if k != "last_kkt"}
    stats.update(seconds=seconds, setup_seconds=t_path - t_start, path_seconds=seconds - (t_path - t_start),
                 events=path.n_events, breakpoints=len(h.breakpoints),
                 seconds_per_event=(seconds - (t_path - t_start)) / max(path.n_events, 1), history_bytes=h.nbytes())
    return ExactPathResult(h.breakpoints, pi, pj, kern, graph, names, path.stop_reason, path.n_events, X, h.changes,
                           h.ckpt, path.complete, route, h.ws, stats)


def kkt_violation(alpha: np.ndarray, margins: np.ndarray, state=None) -> float:
    """The largest violation of 0 <= alpha <= 1, margin < 1 => alpha = 1, margin > 1 => alpha = 0
    (a pair violates the implication by min(|margin - 1|, |alpha - bound|))."""
    box = max(float(np.max(-alpha, initial=0.0)), float(np.max(alpha - 1.0, initial=0.0)))
    lo = margins < 1
    v1 = np.minimum(1.0 - margins[lo], 1.0 - alpha[lo])
    hi = margins > 1
    v0 = np.minimum(margins[hi] - 1.0, alpha[hi])
    return max(box, float(np.max(v1, initial=0.0)), float(np.max(v0, initial=0.0)))
