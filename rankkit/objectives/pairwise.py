"""The RankSVM primal objective over all within-query preference pairs:

    f(w) = 0.5 ||w||^2 + C * sum_{(i, j) in P} loss(w.x_i - w.x_j)

P holds every pair of documents of one query with label_i > label_j. The class owns the
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

LOSSES = ("squared-hinge",)


class PairwiseObjective:
    def __init__(self, ds: Dataset, C: float, loss: str = "squared-hinge"):
        if loss not in LOSSES:
            raise ValueError(f"unknown loss {loss!r}")
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
        for q in self._numpy_sorted:
            s, e = self.qptr[q], self.qptr[q + 1]
            self.order[s:e] = s + np.argsort(y[s:e], kind="stable")
        sqh.sort_queries(y, self.qptr, self._skip, self.order)
        loss, n_active = sqh.fun_grad_y(
            y, self.lev, self.qptr, self.nlev, self.order, self.ys, self.ls, self.gs, self.gy
        )
        self.loss_value = loss
        self.n_active = int(n_active)
        return loss

    def hess_vec_y(self, d: np.ndarray) -> np.ndarray:
        """H_L d in score space at the last evaluated point."""
        return sqh.hess_vec_y(
            self.ys, self.ls, self.qptr, self.nlev, self.order, d, self._ds, self._zs, self._z
        )

    # -- the objective in w -------------------------------------------------------------------
    def evaluate(self, w: np.ndarray, y: np.ndarray) -> float:
        """f(w) with y = X w given."""
        return 0.5 * float(w @ w) + self.C * self.loss_y(y)

    def gradient(self, w: np.ndarray) -> np.ndarray:
        return w + self.C * self._rmatvec(self.gy)

    def hess_vec(self, s: np.ndarray) -> np.ndarray:
        csr_matvec(self.data, self.indices, self.indptr, s, self._delta)
        return s + self.C * self._rmatvec(self.hess_vec_y(self._delta))

    def fun_grad(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        """f(w) and its gradient (convenience for tests and scipy)."""
        f = self.evaluate(w, self.scores(w))
        return f, self.gradient(w)
