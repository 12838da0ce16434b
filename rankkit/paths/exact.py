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
recomputed from scratch (Cholesky) every `REFRESH` events and whenever the residual check fails;
g = Q alpha is recomputed exactly at every breakpoint (O(nnz + m) linear, O(n^2 + m) otherwise), so
errors do not accumulate.

Degeneracy. A pair whose row of Q is (numerically) a combination of the rows of E cannot enter
(the Schur complement s = Q_pp - q'Q_EE^-1 q is below SING_RTOL * Q_pp): its margin is then a
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
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from rankkit.data import Dataset
from rankkit.errors import UsageError

DEFAULT_METRIC = "ndcg@10"
REFRESH = 200  # recompute Q_EE^-1 from scratch every REFRESH events
SING_RTOL = 1e-12  # Schur complement below this * Q_pp: the pair is dependent on E
EVENT_RTOL = 1e-9  # events within this relative distance in lambda are simultaneous
KKT_TOL = 1e-6  # margin / alpha tolerance of the KKT check at each breakpoint
CHECKPOINT = 64  # keep the full alpha every CHECKPOINT breakpoints (replay in between)
LOG_SECONDS = 2.0  # at most one progress line (log) this often
PROGRESS_SECONDS = 0.2  # at most one update of the progress display this often
PROGRESS_STEPS = 1000  # the display's total: log(lambda_0 / lambda) as a share of log(lambda_0 / lambda_min)


class PathWarning(UserWarning):
    """The exact path stopped early (lambda_min, max_events, degeneracy)."""


@dataclass
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
    kernel: object  # rankkit.feature_maps.Kernel
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
        lams = self.lambdas
        lam = float(lam)
        if lam >= lams[0]:
            return np.ones(self.n_pairs)
        if lam < lams[-1] * (1 - 1e-12):
            raise ValueError(f"lambda {lam:g} is below the last breakpoint {lams[-1]:g} of the path")
        t = int(np.searchsorted(-lams, -lam, side="right")) - 1  # lams[t] >= lam > lams[t + 1]
        if t >= len(lams) - 1 or lam == lams[t]:
            return self.alpha(min(t, len(lams) - 1))
        a0, a1 = self.alpha(t), self.alpha(t + 1)
        u = (lams[t] - lam) / (lams[t] - lams[t + 1])
        return (1 - u) * a0 + u * a1

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
        if lam < lams[-1] * (1 - 1e-12):
            raise ValueError(f"lambda {lam:g} is below the last breakpoint {lams[-1]:g} of the path")
        t = int(np.searchsorted(-lams, -lam, side="right")) - 1
        if t >= len(lams) - 1 or lam == lams[t]:
            return self._w[min(t, len(lams) - 1)].copy()
        u = (lams[t] - lam) / (lams[t] - lams[t + 1])
        return ((1 - u) * lams[t] * self._w[t] + u * lams[t + 1] * self._w[t + 1]) / lam

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
class _DenseKernel:
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

    def apply_pairs(self, v: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """K P_idx' v."""
        return self.K @ _pair_sum(self.pi[idx], self.pj[idx], v, self.K.shape[0])

    def q_cols(self, rows: np.ndarray, p: int) -> np.ndarray:
        """Q[rows, p]."""
        K, pi, pj = self.K, self.pi, self.pj
        i, j = pi[p], pj[p]
        return K[pi[rows], i] - K[pi[rows], j] - K[pj[rows], i] + K[pj[rows], j]

    def valid_scores(self, z: np.ndarray, feat) -> np.ndarray:
        """K(valid, train) z."""
        return self.Kv @ z

    def describe(self, n: int, nv: int) -> str:
        return f"dense kernel matrices ({8 * (n * n + nv * n) / 1e6:,.0f} MB)"


class _LinearStructure:
    """The linear kernel K = X X' never formed: K z = X (X' z) in O(nnz), the kernel entries of a
    few pairs from their rows, the validation scores X_valid (X' z). Memory O(nnz + m)."""

    name = "linear"

    def __init__(self, X, Xv, pi, pj):
        self.X, self.Xt, self.Xv, self.pi, self.pj = X, X.T.tocsr(), Xv, pi, pj
        sq = np.asarray(X.multiply(X).sum(axis=1)).ravel()
        m = pi.shape[0]
        cross = np.empty(m)
        for s in range(0, m, _PAIR_BLOCK):  # x_i . x_j of each pair, a block of pairs at a time
            e = min(m, s + _PAIR_BLOCK)
            cross[s:e] = np.asarray(X[pi[s:e]].multiply(X[pj[s:e]]).sum(axis=1)).ravel()
        self.qdiag = sq[pi] + sq[pj] - 2.0 * cross

    def apply(self, z: np.ndarray):
        """(K z, X' z)."""
        feat = self.Xt @ z
        return self.X @ feat, feat

    def apply_pairs(self, v: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """K P_idx' v = X u with u = sum_p v_p (x_i - x_j) from the pairs' own rows."""
        docs = np.concatenate([self.pi[idx], self.pj[idx]])
        row, cols, vals = _gather_rows(self.X, docs)
        u = np.bincount(cols, weights=vals * np.concatenate([v, -v])[row], minlength=self.X.shape[1])
        return self.X @ u

    def q_cols(self, rows: np.ndarray, p: int) -> np.ndarray:
        """Q[rows, p] = (x_i' - x_j') . (x_i - x_j) for the rows' pairs (i', j') and p = (i, j)."""
        r = rows.shape[0]
        row, cols, vals = _gather_rows(self.X, np.array([self.pi[p], self.pj[p]]))
        a = np.bincount(cols, weights=np.where(row == 0, vals, -vals), minlength=self.X.shape[1])
        row, cols, vals = _gather_rows(self.X, np.concatenate([self.pi[rows], self.pj[rows]]))
        s = np.bincount(row, weights=vals * a[cols], minlength=2 * r)
        return s[:r] - s[r:]

    def valid_scores(self, z: np.ndarray, feat) -> np.ndarray:
        return self.Xv @ (self.Xt @ z if feat is None else feat)

    def describe(self, n: int, nv: int) -> str:
        return "linear kernel through the sparse features (no n x n matrix)"


_PAIR_BLOCK = 1 << 12


def _gather_rows(X, docs: np.ndarray):
    """The stored entries of rows `docs` of the CSR matrix X: (position in docs, column, value)."""
    start = X.indptr[docs]
    lens = X.indptr[docs + 1] - start
    row = np.repeat(np.arange(docs.shape[0]), lens)
    pos = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens - start, lens)
    return row, X.indices[pos], X.data[pos]


def _incidence(pi: np.ndarray, pj: np.ndarray, n: int):
    """The pair incidence matrix P (m x n, CSR): row p has +1 at pi[p] and -1 at pj[p]."""
    import scipy.sparse as sp

    m = pi.shape[0]
    cols = np.empty(2 * m, dtype=np.int64)
    cols[0::2], cols[1::2] = pi, pj
    vals = np.tile(np.array([1.0, -1.0]), m)
    return sp.csr_matrix((vals, cols, np.arange(0, 2 * m + 1, 2, dtype=np.int64)), shape=(m, n))


def _pair_sum(pi: np.ndarray, pj: np.ndarray, v: np.ndarray, n: int) -> np.ndarray:
    """P'v: +v_p at the upper document of pair p, -v_p at the lower one."""
    return np.bincount(pi, weights=v, minlength=n) - np.bincount(pj, weights=v, minlength=n)


def _metric_means(names, valid: Dataset, scores: np.ndarray) -> dict:
    from rankkit.metrics import per_query

    out = {}
    for name in names:
        vals = per_query(name, valid.y, scores, valid.qptr)
        vals = vals[~np.isnan(vals)]
        out[name] = float(vals.mean()) if vals.size else float("nan")
    return out


# -- the path -------------------------------------------------------------------------------------
def exact_path(train: Dataset, valid: Dataset | None = None, kernel: str = "linear", gamma: float | None = None,
               degree: int = 3, coef0: float = 0.0, graph: str = "full", lambda_min: float | None = None,
               max_events: int = 10000, metric=DEFAULT_METRIC, max_zero_steps: int | None = None,
               lambda_min_ratio: float = 1e-6, route: str = "auto", log=None, progress=None) -> ExactPathResult:
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
    from rankkit.feature_maps import make_kernel
    from rankkit.metrics import parse_metric

    t_start = time.perf_counter()
    names = [metric] if isinstance(metric, str) else list(metric)
    for nm in names:
        parse_metric(nm)
    if graph not in ("full", "reduced"):
        raise UsageError(f"unknown graph '{graph}' (known: full, reduced)")
    if route not in ("auto", "linear", "dense"):
        raise UsageError(f"unknown route '{route}' (known: auto, linear, dense)")
    train.require_pairs()
    kern = make_kernel(kernel, train.n_features, gamma, degree, coef0)
    if route == "auto":
        route = "linear" if kern.name == "linear" else "dense"
    elif route == "linear" and kern.name != "linear":
        raise UsageError(f"the linear route needs the linear kernel, not {kern.name}")
    X = train.csr()
    Xv = valid.csr(train.n_features) if valid is not None else None
    pi, pj = full_pairs(train) if graph == "full" else reduced_pairs(train)
    m, n = pi.shape[0], train.n_rows
    if log:
        log(f"exact path: {m:,} pairs ({graph} graph) of {n:,} documents, {train.n_features:,} features, "
            f"{kern.name} kernel; building the "
            + ("pair structure" if route == "linear" else f"dense kernel matrices ({8 * n * (n + (Xv.shape[0] if Xv is not None else 0)) / 1e6:,.0f} MB)"))
    ops = _LinearStructure(X, Xv, pi, pj) if route == "linear" else _DenseKernel(kern, X, Xv, pi, pj)
    qdiag = ops.qdiag
    qscale = max(float(qdiag.max()), 1e-300)
    max_zero_steps = 2 * min(m, n) + 20 if max_zero_steps is None else int(max_zero_steps)
    P = _incidence(pi, pj, n)  # m x n, +1 at the upper document, -1 at the lower: O(m) memory
    Pt = P.T.tocsr()
    last_z = [None]  # P'alpha of the last q_apply(alpha): lambda * beta
    last_feat = [None]  # X'P'alpha of the last q_apply(alpha) (linear route): lambda * w

    def q_apply(v_pairs: np.ndarray, idx=None) -> np.ndarray:
        """Q[:, idx] v (idx None: all columns) as P K P_idx' v."""
        if idx is None:
            last_z[0] = z = Pt @ v_pairs
            kz, last_feat[0] = ops.apply(z)
        else:
            kz = ops.apply_pairs(v_pairs, idx)
        return P @ kz

    q_cols = ops.q_cols

    alpha = np.ones(m)
    state = np.ones(m, dtype=np.int8)  # 1: I_1, 0: I_0, 2: E
    E: list[int] = []
    Minv = np.zeros((0, 0))

    def refresh_inverse():
        nonlocal Minv
        if not E:
            Minv = np.zeros((0, 0))
            return
        idx = np.array(E)
        QEE = np.empty((len(E), len(E)))
        for c, p in enumerate(E):
            QEE[:, c] = q_cols(idx, p)
        try:
            L = np.linalg.cholesky(QEE)
            Linv = np.linalg.solve(L, np.eye(len(E)))
            Minv = Linv.T @ Linv
        except np.linalg.LinAlgError:  # numerically singular: the KKT check will stop the path if it matters
            Minv = np.linalg.pinv(QEE)

    def closes_cycle(p: int) -> bool:
        """Does pair p close a cycle with the pairs of E (documents as nodes)? Then the rows of P
        for E + p are linearly dependent and Q_EE + p is singular whatever the kernel."""
        u, v = int(pi[p]), int(pj[p])
        adj: dict = {}
        for e in E:
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

    def try_add(p: int) -> bool:
        nonlocal Minv
        qpp = qdiag[p]
        if E and closes_cycle(p):
            return False
        if not E:
            if qpp <= SING_RTOL * qscale:
                return False
            Minv = np.array([[1.0 / qpp]])
        else:
            qv = q_cols(np.array(E), p)
            b = Minv @ qv
            s = qpp - qv @ b
            if s <= SING_RTOL * max(qpp, 1e-300) or s <= SING_RTOL * qscale * 1e-3:
                return False
            k = len(E)
            new = np.empty((k + 1, k + 1))
            new[:k, :k] = Minv + np.outer(b, b) / s
            new[:k, k] = -b / s
            new[k, :k] = -b / s
            new[k, k] = 1.0 / s
            Minv = new
        E.append(p)
        state[p] = 2
        return True

    def remove(pos: int):
        nonlocal Minv
        d = Minv[pos, pos]
        keep = np.r_[0:pos, pos + 1:len(E)]
        col = Minv[keep, pos]
        Minv = Minv[np.ix_(keep, keep)] - np.outer(col, col) / d
        E.pop(pos)

    breakpoints: list[Breakpoint] = []
    changes: list = []  # per breakpoint: (indices, values) where alpha differs from the previous one
    ckpt: dict = {}
    before_last = alpha.copy()  # alpha at the breakpoint before the last one

    ws: list = []  # linear route: w at each breakpoint

    def store_alpha(t: int):
        if t % CHECKPOINT == 0:
            ckpt[t] = _pack_alpha(alpha)
        if last_feat[0] is not None:
            w_t = last_feat[0] / breakpoints[t].lam
            if t < len(ws):
                ws[t] = w_t
            else:
                ws.append(w_t)
        idx = np.flatnonzero(alpha != before_last)
        if t < len(changes):
            changes[t] = (idx, alpha[idx].copy())
        else:
            changes.append((idx, alpha[idx].copy()))

    def record(lam: float, event: str, pairs_: tuple, g: np.ndarray):
        nonlocal before_last
        if breakpoints:
            before_last = ckpt_alpha_last[0]
        marg = g / lam
        hinge = float(np.maximum(0.0, 1.0 - marg).sum())
        obj = hinge + 0.5 * float(np.sum(alpha * g)) / lam  # not BLAS ddot: its threads wait for cores on a busy machine
        mets = {}
        if valid is not None:
            mets = _metric_means(names, valid, ops.valid_scores(last_z[0], last_feat[0]) / lam)
        nE = len(E)
        n1 = int(np.count_nonzero(state == 1))
        breakpoints.append(Breakpoint(lam, nE, m - nE - n1, n1, event, pairs_, hinge, obj, mets,
                                      time.perf_counter() - t_start))
        store_alpha(len(breakpoints) - 1)
        ckpt_alpha_last[0] = alpha.copy()

    ckpt_alpha_last = [alpha.copy()]  # alpha at the last breakpoint

    clock = {"log": -np.inf, "progress": -np.inf}

    def report(final: bool = False):
        """A log line (at most one every LOG_SECONDS, and the last) and the progress display."""
        if not breakpoints or not (log or progress):
            return
        now = time.perf_counter()
        b = breakpoints[-1]
        if log and (final or now - clock["log"] >= LOG_SECONDS):
            clock["log"] = now
            shown = "".join(f"  valid {k} {v:.4f}" for k, v in b.metrics.items())
            log(f"exact path: breakpoint {len(breakpoints):,}  events {n_events:,}  lambda {b.lam:.6g}  C {b.C:.6g}  "
                f"|I_alpha| {b.n_alpha}  |I_1| {b.n_one}  |I_0| {b.n_zero}{shown}  {now - t_start:.1f} s"
                + (f"  ({stop_reason or 'stopped'})" if final else ""))
        if progress and (final or now - clock["progress"] >= PROGRESS_SECONDS):
            clock["progress"] = now
            lam0 = breakpoints[0].lam
            done = 0
            if lam_min is not None and 0 < lam_min < lam0:
                done = int(PROGRESS_STEPS * np.log(lam0 / b.lam) / np.log(lam0 / lam_min))
            done = PROGRESS_STEPS if final else min(max(done, 0), PROGRESS_STEPS - 1)
            progress(done, PROGRESS_STEPS, f"{len(breakpoints):,} breakpoints, C {b.C:.3g}, |I_alpha| {b.n_alpha}")

    if log:
        log(f"exact path: {ops.describe(n, Xv.shape[0] if Xv is not None else 0)} ready in "
            f"{time.perf_counter() - t_start:.2f} s; following the path from lambda_0")
    lam = np.inf
    g = q_apply(alpha)  # Q alpha
    stop_reason, complete, n_events = "", False, 0
    lam_min = None if lambda_min is None else float(lambda_min)
    zero_steps = 0
    pending_event: list = []
    since_refresh = 0
    blocked: set = set()  # dependent pairs refused at the current lambda (they keep their bound)

    while True:
        # direction on the current segment
        if E:
            idx = np.array(E)
            eta = Minv @ np.ones(len(E))
            h = q_apply(eta, idx)
        else:
            idx = np.zeros(0, np.int64)
            eta = np.zeros(0)
            h = np.zeros(m)
        # candidate events at lambda <= lam
        cand = np.full(m, -np.inf)
        kind = np.zeros(m, dtype=np.int8)  # 1 enter, 2 leave to 0, 3 leave to 1
        out1 = state == 1
        out0 = state == 0
        if np.isinf(lam):
            ok = out1 & (g > 0)
            cand[ok] = g[ok]
            kind[ok] = 1
        else:
            phi = g - lam  # lam * (margin - 1)
            slope = 1.0 - h
            stol = 1e-10
            etol = 1e-12 * float(np.max(np.abs(eta), initial=0.0))
            sel = out1 & (slope > stol)
            cand[sel] = lam + np.minimum(phi[sel], 0.0) / slope[sel]
            kind[sel] = 1
            sel = out0 & (slope < -stol)
            cand[sel] = lam + np.maximum(phi[sel], 0.0) / slope[sel]
            kind[sel] = 1
            if E:
                aE = alpha[idx]
                up = eta < -etol
                lu = np.full(len(E), -np.inf)
                lu[up] = lam + np.maximum(1.0 - aE[up], 0.0) / eta[up]
                dn = eta > etol
                ld = np.full(len(E), -np.inf)
                ld[dn] = lam - np.maximum(aE[dn], 0.0) / eta[dn]
                cand[idx] = np.maximum(lu, ld)
                kind[idx] = np.where(lu >= ld, 3, 2)
        if blocked:
            cand[np.array(sorted(blocked))] = -np.inf
        cand = np.minimum(cand, lam)
        best = float(cand.max()) if m else -np.inf
        if lam_min is None and np.isfinite(best) and best > 0 and np.isinf(lam):
            lam_min = lambda_min_ratio * best
        floor = lam_min if lam_min is not None else 0.0
        if not np.isfinite(best) or best <= floor:
            # no event above lambda_min: close the path at lambda_min
            if np.isinf(lam):
                raise UsageError(f"{train.source}: every pair has (Q 1)_p <= 0: the path is empty")
            complete = not np.isfinite(best) or best <= 0
            stop_reason = "complete" if complete else "lambda_min"
            if floor > 0 and floor < lam:
                dl = floor - lam
                if E:
                    alpha[idx] = alpha[idx] + dl * eta
                g = q_apply(alpha)
                record(floor, "lambda_min", (), g)
            break
        if n_events >= max_events:
            stop_reason = "max_events"
            break
        # move to the new lambda
        step_zero = best >= lam * (1 - EVENT_RTOL) if np.isfinite(lam) else False
        new_lam = lam if step_zero else best
        if np.isfinite(lam) and not step_zero and E:
            alpha[idx] = alpha[idx] + (new_lam - lam) * eta
        hit = np.flatnonzero(cand >= best - EVENT_RTOL * max(abs(best), 1e-300))
        leaving = [p for p in hit if kind[p] in (2, 3) and state[p] == 2]
        entering = [p for p in hit if kind[p] == 1 and state[p] != 2]
        if step_zero:  # one pair at a time at a degenerate breakpoint
            zero_steps += 1
            leaving = leaving[:1]
            entering = [] if leaving else entering[:1]
            if zero_steps > max_zero_steps:
                stop_reason = f"degenerate breakpoint at lambda {lam:.6g}: ties did not resolve in {max_zero_steps} steps"
                break
        else:
            zero_steps = 0
            blocked.clear()
        events_here = []
        for p in leaving:
            pos = E.index(p)
            to = 0 if kind[p] == 2 else 1
            alpha[p] = float(to)
            state[p] = to
            remove(pos)
            events_here.append((f"leave_to_{to}", int(p)))
        for p in entering:
            if try_add(int(p)):
                events_here.append(("enter", int(p)))
            else:
                # dependent on E (a cycle, or rank): its margin is a combination of margins equal to 1,
                # so it stays at its bound; the KKT check below catches the case where that is wrong
                blocked.add(int(p))
        n_events += len(events_here)
        since_refresh += len(events_here)
        lam = new_lam
        if E:
            alpha[np.array(E)] = np.clip(alpha[np.array(E)], 0.0, 1.0)
        if since_refresh >= REFRESH:
            refresh_inverse()
            since_refresh = 0
        g = q_apply(alpha)
        pending_event.extend(events_here)
        if not step_zero or not breakpoints:
            # a new breakpoint (zero-length events at the same lambda are merged into the last one)
            label = "init" if not breakpoints else "+".join(sorted({e for e, _ in pending_event})) or "dependent"
            record(lam, label, tuple(p for _, p in pending_event), g)
            pending_event = []
        else:
            b = breakpoints[-1]
            b.event = "+".join(sorted(set(b.event.split("+")) | {e for e, _ in events_here}))
            b.pairs = b.pairs + tuple(p for _, p in events_here)
            b.n_alpha = len(E)
            b.n_one = int(np.count_nonzero(state == 1))
            b.n_zero = m - b.n_alpha - b.n_one
            store_alpha(len(breakpoints) - 1)
            ckpt_alpha_last[0] = alpha.copy()
            pending_event = []
        # KKT check at the breakpoint
        bad = kkt_violation(alpha, g / lam, state)
        if bad > KKT_TOL:
            refresh_inverse()
            stop_reason = f"KKT violated by {bad:.3g} at lambda {lam:.6g} (numerical trouble)"
            break
        report()

    report(final=True)

    if stop_reason and stop_reason != "complete" and not stop_reason.startswith("lambda_min"):  # lambda_min: the normal end
        warnings.warn(f"exact path stopped: {stop_reason} after {n_events} events, "
                      f"{len(breakpoints)} breakpoints", PathWarning, stacklevel=2)
    return ExactPathResult(breakpoints, pi, pj, kern, graph, names, stop_reason, n_events, X, changes, ckpt,
                           complete, route, ws)


def kkt_violation(alpha: np.ndarray, margins: np.ndarray, state=None) -> float:
    """The largest violation of 0 <= alpha <= 1, margin < 1 => alpha = 1, margin > 1 => alpha = 0
    (a pair violates the implication by min(|margin - 1|, |alpha - bound|))."""
    box = max(float(np.max(-alpha, initial=0.0)), float(np.max(alpha - 1.0, initial=0.0)))
    lo = margins < 1
    v1 = np.minimum(1.0 - margins[lo], 1.0 - alpha[lo])
    hi = margins > 1
    v0 = np.minimum(margins[hi] - 1.0, alpha[hi])
    return max(box, float(np.max(v1, initial=0.0)), float(np.max(v0, initial=0.0)))
