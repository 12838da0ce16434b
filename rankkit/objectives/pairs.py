"""The RankSVM objective over an explicit list of pairs: Chapelle & Keerthi Sect. 3 (PRSVM).

    f(w) = 0.5 ||w||^2 + C * sum_k c_k loss(y_{i_k} - y_{j_k}),    y = X w

The pair matrix A (p x n, +1 at i_k and -1 at j_k) is never formed either: it is the two index
arrays (i_k, j_k), so A y, A^T u and every Hessian-vector product X^T A^T D A X s cost
O(nnz + p). This is quadratic in the query size (p ~ n_q^2 / 4 per query) but it accepts any
per-pair cost c_k, and losses that are not piecewise quadratic (the logistic loss of RankNet,
exactly). ExplicitPairObjective is a base.PairObjective like PairwiseObjective (the same protocol),
so the truncated-Newton driver runs on either.

Losses (t = y_i - y_j): those of losses.LOSSES, each naming its code in _loss: squared-hinge
max(0, 1 - t)^2; huber max(0, 1 - t)^2 - max(0, -t)^2; logistic log(1 + exp(-t)); hinge
max(0, 1 - t) (value and subgradient).
"""

from __future__ import annotations

import math

import numpy as np

from rankkit.data import Dataset
from rankkit.errors import UsageError
from rankkit.compiler.dispatch import njit
from rankkit.objectives.base import PairObjective
from rankkit.objectives.losses import PairLoss

MAX_PAIRS = 400_000_000  # 6.4 GB of pair indices: beyond this, use the O(n log n) solver


@njit
def _loss(t, code):
    """(value, first, second derivative) of the pair loss at t (generalised second derivative); code:
    the PairLoss's (losses.py: SquaredHinge 0, Huber 1, Logistic 2, Hinge 3)."""
    if code == 0:
        if t < 1.0:
            r = 1.0 - t
            return r * r, -2.0 * r, 2.0
        return 0.0, 0.0, 0.0
    if code == 1:
        if t >= 1.0:
            return 0.0, 0.0, 0.0
        if t >= 0.0:
            r = 1.0 - t
            return r * r, -2.0 * r, 2.0
        return 1.0 - 2.0 * t, -2.0, 0.0
    if code == 3:  # hinge: value and subgradient (bundle method only)
        if t < 1.0:
            return 1.0 - t, -1.0, 0.0
        return 0.0, 0.0, 0.0
    # logistic, computed without overflow: log(1 + e^-t) = max(-t, 0) + log1p(e^-|t|)
    e = math.exp(-abs(t))
    value = max(-t, 0.0) + math.log1p(e)
    s_neg = e / (1.0 + e) if t >= 0.0 else 1.0 / (1.0 + e)  # sigma(-t)
    return value, -s_neg, s_neg * (1.0 - s_neg)


@njit
def pair_fun_grad(y, pi, pj, cost, shift, code, gy, curv):
    """Loss, dL/dy into gy, and each pair's weighted second derivative into curv, with the pair's
    margin moved to t = y_i - y_j - shift_k (margin rescaling: shift = the pair's margin - 1). Returns
    (loss, number of violated pairs: a non-zero derivative and a non-zero cost, as PairwiseObjective
    counts them, which skips queries of weight 0)."""
    gy[:] = 0.0
    loss = 0.0
    active = 0
    for k in range(pi.shape[0]):
        i = pi[k]
        j = pj[k]
        v, d1, d2 = _loss(y[i] - y[j] - shift[k], code)
        c = cost[k]
        loss += c * v
        g = c * d1
        gy[i] += g
        gy[j] -= g
        curv[k] = c * d2
        if d1 != 0.0 and c != 0.0:
            active += 1
    return loss, active


@njit
def pair_hess_vec(pi, pj, curv, d, z):
    """z = A^T diag(curv) A d."""
    z[:] = 0.0
    for k in range(pi.shape[0]):
        c = curv[k]
        if c != 0.0:
            i = pi[k]
            j = pj[k]
            u = c * (d[i] - d[j])
            z[i] += u
            z[j] -= u
    return z


@njit
def enumerate_pairs(y, qptr, pairs_per_query, pi, pj, owner):
    """All (i, j) within a query with y_i > y_j, query by query; owner[k] = query of pair k."""
    k = 0
    for q in range(qptr.shape[0] - 1):
        if pairs_per_query[q] == 0:
            continue
        for i in range(qptr[q], qptr[q + 1]):
            for j in range(qptr[q], qptr[q + 1]):
                if y[i] > y[j]:
                    pi[k] = i
                    pj[k] = j
                    owner[k] = q
                    k += 1
    return k


def explicit_pairs(ds: Dataset) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(i, j, query) of every preference pair of ds."""
    p = ds.n_pairs
    if p > MAX_PAIRS:
        raise UsageError(
            f"{ds.source} has {p} preference pairs: too many to list explicitly (at most {MAX_PAIRS}); "
            "use --solver newton, which never lists them"
        )
    pi = np.empty(p, dtype=np.int64)
    pj = np.empty(p, dtype=np.int64)
    owner = np.empty(p, dtype=np.int64)
    enumerate_pairs(ds.y, ds.qptr, ds.pairs_per_query, pi, pj, owner)
    return pi, pj, owner


class ExplicitPairObjective(PairObjective):
    """The objective over the explicit pair list: base.PairObjective's protocol, the loss by its code."""

    def __init__(self, ds: Dataset, C: float, loss: str | PairLoss = "squared-hinge", query_weights=None,
                 pair_costs=None, pairs=None, pair_margins=None):
        """pair_costs (slack rescaling) multiply each pair's loss; pair_margins (margin rescaling)
        replace the margin 1 of each pair: loss(t - (margin_k - 1))."""
        super().__init__(ds, C, loss)
        self.code = self.pair_loss.code
        self.pi, self.pj, owner = explicit_pairs(ds) if pairs is None else pairs
        cost = np.ones(self.pi.shape[0]) if pair_costs is None else np.asarray(pair_costs, dtype=np.float64)
        if query_weights is not None:
            cost = cost * np.asarray(query_weights, dtype=np.float64)[owner]
        self.cost = np.ascontiguousarray(cost)
        margins = np.ones(self.pi.shape[0]) if pair_margins is None else np.asarray(pair_margins, dtype=np.float64)
        self.shift = np.ascontiguousarray(margins - 1.0)
        self.n_pairs = int(self.pi.shape[0])
        self._curv = np.zeros(self.n_pairs)
        self._z = np.zeros(self.n_rows)
        self.n_active = 0

    def loss_y(self, y):
        loss, active = pair_fun_grad(y, self.pi, self.pj, self.cost, self.shift, self.code, self.gy, self._curv)
        self.loss_value, self.n_active = loss, int(active)
        return loss

    def hess_vec_y(self, d):
        return pair_hess_vec(self.pi, self.pj, self._curv, d, self._z)
