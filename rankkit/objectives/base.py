"""What every objective of the family shares: the dataset's arrays, the products with X, and the
objective in w over a loss in score space, as liblinear's l2r_erm_fun is over its losses' C_times_loss:

    f(w) = 0.5 ||w||^2 + C * L(X w)

A subclass says how L, its gradient dL/dy and its Hessian-vector product are found for the scores y
(pairwise.py: sweeps over one sort per query; pairs.py: the explicit pair list) with

    loss_y(y)        L(y); keeps gy = dL/dy, loss_value and n_active at y
    hess_vec_y(d)    H_L d at the last y

and its PairLoss (losses.py) says the per-pair math. The solver sees the protocol below, liblinear's
`fun`/`grad`/`Hv`:

    scores(w)        y = X w                                      O(nnz)
    evaluate(w, y)   f at (w, y = Xw)
    gradient(w)      g at the last evaluated point                 O(nnz)
    hess_vec(s)      H s at the last evaluated point

and, for a worker summing over its part (rankkit.distributed), gradient_loss and hess_vec_loss: the
loss term's alone. `evaluate` takes y so a line search can try w + t d with y + t (X d) without
another product.
"""

from __future__ import annotations

import numpy as np

from rankkit.data import Dataset
from rankkit.objectives import squared_hinge as sqh
from rankkit.objectives.losses import PairLoss, pair_loss
from rankkit.sparse import csr_matvec, csr_rmatvec
from rankkit.vectors import dot


class PairObjective:
    """The shared part of the family (see the module docstring). `loss` is a name of losses.LOSSES
    or a PairLoss; `loss` keeps the name, `pair_loss` the PairLoss."""

    def __init__(self, ds: Dataset, C: float, loss: str | PairLoss = "squared-hinge"):
        self.pair_loss = pair_loss(loss)
        self.loss = self.pair_loss.name
        self.C = float(C)
        self.data, self.indices, self.indptr = ds.data, ds.indices, ds.indptr
        self.vscale = ds.value_scale  # the values are data / vscale (int32 decimal codes; 1.0: data itself)
        self.n_features = ds.n_features
        self.n_rows = ds.n_rows
        self.gy = np.zeros(self.n_rows)  # dL/dy at the last evaluated point
        self.loss_value = np.nan
        self._delta = np.zeros(self.n_rows)  # X s of hess_vec_loss
        self._xt_part = None  # X' z's per-chunk buffer when fewer chunks than csr_rmatvec's pay (rmatvec)

    # -- what a subclass defines ----------------------------------------------------------------
    def loss_y(self, y: np.ndarray) -> float:
        raise NotImplementedError

    def hess_vec_y(self, d: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    # -- products with X ------------------------------------------------------------------------
    def scores(self, w: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        out = np.empty(self.n_rows) if out is None else out
        return csr_matvec(self.data, self.indices, self.indptr, w, out, self.vscale)

    def rmatvec(self, z: np.ndarray) -> np.ndarray:
        """X' z: csr_rmatvec, or with the buffer _xt_part squared_hinge.xt_product's fewer chunks
        (the buffer kept from product to product)."""
        if self._xt_part is None:
            return csr_rmatvec(self.data, self.indices, self.indptr, z, np.empty(self.n_features), self.vscale)
        return sqh.xt_product(self.data, self.indices, self.indptr, z, self._xt_part, np.empty(self.n_features),
                              self.vscale)

    # -- the objective in w ---------------------------------------------------------------------
    def evaluate(self, w: np.ndarray, y: np.ndarray) -> float:
        """f(w) with y = X w given."""
        return 0.5 * dot(w, w) + self.C * self.loss_y(y)

    def gradient(self, w: np.ndarray) -> np.ndarray:
        return w + self.C * self.rmatvec(self.gy)

    def gradient_loss(self) -> np.ndarray:
        """X^T dL/dy: the (sub)gradient of the loss term alone at the last evaluated point."""
        return self.rmatvec(self.gy)

    def hess_vec(self, s: np.ndarray) -> np.ndarray:
        return s + self.C * self.hess_vec_loss(s)

    def hess_vec_loss(self, s: np.ndarray) -> np.ndarray:
        """X' H_L X s: the Hessian-vector product of the loss term alone at the last evaluated point
        (what a worker of rankkit.distributed sums over its part). X s stays in last_xs."""
        csr_matvec(self.data, self.indices, self.indptr, s, self._delta, self.vscale)
        return self.rmatvec(self.hess_vec_y(self._delta))

    @property
    def last_xs(self) -> np.ndarray:
        """X s of the last hess_vec / hess_vec_loss (hess_vec_y reads it and writes elsewhere), the
        same bits as scores(s), until the next one: the Newton driver sums CG's steps' X p into
        X d instead of a product (rankkit.solvers.newton.SummedXd)."""
        return self._delta

    def fun_grad(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        """f(w) and its gradient (convenience for tests and scipy)."""
        f = self.evaluate(w, self.scores(w))
        return f, self.gradient(w)
