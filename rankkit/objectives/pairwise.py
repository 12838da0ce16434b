"""The RankSVM primal objective over all within-query preference pairs:

    f(w) = 0.5 ||w||^2 + C * sum_q weight_q * sum_{(i, j) in P_q} loss(w.x_i - w.x_j)

P_q holds every pair of documents of query q with label_i > label_j. Losses: `squared-hinge`
max(0, 1 - t)^2 and `huber`, Chapelle & Keerthi's decomposition max(0, 1 - t)^2 - max(0, -t)^2
(quadratic for 0 <= t < 1, linear 1 - 2t below 0), both in O(n log n) with the same kernels.
Query weights default to 1; `query_norm` uses 1 / (pairs of the query), svm_rank's normalisation. The class owns the
dataset's raw arrays and the scratch buffers; the O(n log n) work is in the loss's kernels
(`squared_hinge.py`). The solver sees four operations, in the spirit of liblinear's
`fun`/`grad`/`Hv`:

    scores(w)        y = X w                                     O(nnz)
    evaluate(w, y)   f at (w, y = Xw); sorts each query once     O(n log n)
    gradient(w)      g at the last evaluated point                O(nnz)
    hess_vec(s)      H s at the last evaluated point              O(nnz + n log R)

`evaluate` takes y so a line search can try w + t d with y + t (X d) without another product.
"""

from __future__ import annotations

import numpy as np

from rankkit.data import Dataset
from rankkit.objectives import squared_hinge as sqh
from rankkit.objectives._sparse import csr_matvec, csr_rmatvec

# Queries at least this long are sorted by NumPy (its vectorised argsort is 3-4x faster than the
# one compiled into the kernel); shorter ones are sorted inside the kernel, without Python overhead.
NUMPY_SORT_MIN = 50_000

LOSSES = ("squared-hinge", "huber", "hinge", "logistic")  # hinge: value and subgradient only (bundle);
# logistic: the piecewise-quadratic approximation of objectives/logistic.py


class PairwiseObjective:
    def __init__(self, ds: Dataset, C: float, loss: str = "squared-hinge", query_weights: np.ndarray | None = None,
                 margin_offsets: np.ndarray | None = None):
        """margin_offsets (float64[n], optional): margin rescaling with Delta_ij = u_i - u_j, where u
        is a per-document value (e.g. its DCG gain): a pair is active when y_i - y_j < u_i - u_j, i.e.
        y~_i - y~_j < 0 for y~ = y - u, and its loss (Delta_ij - t)^2 is the margin-0 loss on y~.
        Still O(n log n). Chapelle & Keerthi Sect. 6.2."""
        if loss not in LOSSES:
            raise ValueError(f"unknown loss {loss!r}")
        if margin_offsets is not None and loss in ("huber", "logistic"):
            raise ValueError("margin rescaling is defined for the squared-hinge and hinge losses")
        self.offsets = None if margin_offsets is None else np.ascontiguousarray(margin_offsets, dtype=np.float64)
        self.margin = 1.0 if margin_offsets is None else 0.0
        nq = ds.n_queries
        self.qweight = np.ones(nq) if query_weights is None else np.ascontiguousarray(query_weights, dtype=np.float64)
        if self.qweight.shape != (nq,) or not np.all(np.isfinite(self.qweight)) or np.any(self.qweight < 0):
            raise ValueError(f"query_weights must be {nq} finite non-negative numbers")
        self.loss = loss
        self.C = float(C)
        self.data, self.indices, self.indptr = ds.data, ds.indices, ds.indptr
        self.n_features = ds.n_features
        self.n_rows = ds.n_rows
        self.qptr = ds.qptr
        self.lev = np.ascontiguousarray(ds.levels, dtype=np.int32)
        self.nlev = ds.levels_per_query
        self.n_pairs = ds.n_pairs
        sizes = np.diff(self.qptr)
        self._numpy_sorted = np.flatnonzero((sizes >= NUMPY_SORT_MIN) & (self.nlev >= 2))
        self._skip = ((sizes >= NUMPY_SORT_MIN) | (self.nlev < 2)).astype(np.uint8)
        n = self.n_rows
        self.order = np.arange(n, dtype=np.int64)
        self.ys = np.zeros(n)
        self.ls = np.zeros(n, dtype=np.int32)
        self.gs = np.zeros(n)
        self.gy = np.zeros(n)
        self._ds = np.zeros(n)
        self._zs = np.zeros(n)
        self._z = np.zeros(n)
        self._delta = np.zeros(n)
        self._gy0 = np.zeros(n) if loss in ("huber", "logistic") else None
        self._z0 = np.zeros(n) if loss in ("huber", "logistic") else None
        self._pwq = None
        if loss == "logistic":
            from rankkit.objectives.logistic import piecewise_quadratic

            self._pwq = piecewise_quadratic()
        self.loss_value = np.nan
        self.n_active = 0

    # -- products with X ----------------------------------------------------------------------
    def scores(self, w: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        out = np.empty(self.n_rows) if out is None else out
        return csr_matvec(self.data, self.indices, self.indptr, w, out)

    def _rmatvec(self, z: np.ndarray) -> np.ndarray:
        return csr_rmatvec(self.data, self.indices, self.indptr, z, np.empty(self.n_features))

    # -- loss in score space ------------------------------------------------------------------
    def loss_y(self, y: np.ndarray) -> float:
        """L(y); keeps the sorted state that gradient and hess_vec use."""
        if self.offsets is not None:
            y = y - self.offsets
        for q in self._numpy_sorted:
            s, e = self.qptr[q], self.qptr[q + 1]
            self.order[s:e] = s + np.argsort(y[s:e], kind="stable")
        sqh.sort_queries(y, self.qptr, self._skip, self.order)
        args = (y, self.lev, self.qptr, self.nlev, self.order, self.ys, self.ls, self.gs)
        if self._pwq is not None:  # sum_m a_m max(0, c_m - t)^2 over the same sorted queries
            margins, coefs = self._pwq
            self.gy[:] = 0.0
            loss, n_active = 0.0, 0.0
            for c_m, a_m in zip(margins.tolist(), coefs.tolist()):
                l_m, act = sqh.fun_grad_y(*args, self._gy0, self.qweight, c_m, True)
                loss += a_m * l_m
                self.gy += a_m * self._gy0
                n_active = max(n_active, act)
            self.loss_value, self.n_active = loss, int(n_active)
            return loss
        loss, n_active = sqh.fun_grad_y(*args, self.gy, self.qweight, self.margin, self.loss != "hinge")
        if self.loss == "huber":  # minus max(0, -t)^2 over the same sorted queries
            loss0, _ = sqh.fun_grad_y(*args, self._gy0, self.qweight, 0.0, True)
            loss -= loss0
            self.gy -= self._gy0
        self.loss_value = loss
        self.n_active = int(n_active)
        return loss

    def hess_vec_y(self, d: np.ndarray) -> np.ndarray:
        """H_L d in score space at the last evaluated point."""
        if self.loss == "hinge":
            raise ValueError("the hinge loss has no Hessian: use the bundle method")
        args = (self.ys, self.ls, self.qptr, self.nlev, self.order, d, self._ds, self._zs)
        if self._pwq is not None:
            self._z[:] = 0.0
            for c_m, a_m in zip(*(v.tolist() for v in self._pwq)):
                self._z += a_m * sqh.hess_vec_y(*args, self._z0, self.qweight, c_m)
            return self._z
        z = sqh.hess_vec_y(*args, self._z, self.qweight, self.margin)
        if self.loss == "huber":
            z -= sqh.hess_vec_y(*args, self._z0, self.qweight, 0.0)
        return z

    # -- the objective in w -------------------------------------------------------------------
    def evaluate(self, w: np.ndarray, y: np.ndarray) -> float:
        """f(w) with y = X w given."""
        return 0.5 * float(w @ w) + self.C * self.loss_y(y)

    def gradient(self, w: np.ndarray) -> np.ndarray:
        return w + self.C * self._rmatvec(self.gy)

    def gradient_loss(self) -> np.ndarray:
        """X^T dL/dy: the (sub)gradient of the loss term alone at the last evaluated point."""
        return self._rmatvec(self.gy)

    def hess_vec(self, s: np.ndarray) -> np.ndarray:
        csr_matvec(self.data, self.indices, self.indptr, s, self._delta)
        return s + self.C * self._rmatvec(self.hess_vec_y(self._delta))

    def fun_grad(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        """f(w) and its gradient (convenience for tests and scipy)."""
        f = self.evaluate(w, self.scores(w))
        return f, self.gradient(w)
