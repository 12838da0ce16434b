"""The RankSVM primal objective over all within-query preference pairs:

    f(w) = 0.5 ||w||^2 + C * sum_q weight_q * sum_{(i, j) in P_q} loss(w.x_i - w.x_j)

P_q holds every pair of documents of query q with label_i > label_j. The loss is one of
losses.LOSSES (squared-hinge, huber, hinge, logistic's piecewise-quadratic approximation); each
gives its terms, sum_k coef_k max(0, margin_k - t)^p, and every term is one sweep of the same
kernels (`squared_hinge.py`) over one sort per query: O(n log n) for any of them. Query weights
default to 1; `query_norm` uses 1 / (pairs of the query), svm_rank's normalisation. The shared
structure is here: the per-query sort, the level sets and views a rescaling sweeps (Sweep), the
loss's terms over them (Term) and the scratch buffers; the products with X and the objective in w
are base.PairObjective's. Costs of the protocol (base.py):

    evaluate(w, y)   sorts each query once                        O(n log n)
    hess_vec(s)      H s at the last evaluated point              O(nnz + n log R)
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from rankkit.data import Dataset
from rankkit.objectives import squared_hinge as sqh
from rankkit.objectives.base import PairObjective
from rankkit.objectives.losses import PairLoss, margin_rescaling_losses
from rankkit.sorting import RADIX_MIN
from rankkit.sparse import column_sumsq, rmatvec_chunks, sum_chunks

# Queries at least this long are sorted by radix (rankkit.sorting.radix_order: linear, 2.5x faster
# than NumPy's argsort and its tie pass on a million scores, which the objective used above 50,000
# rows before issue 39); shorter ones by the kernel's merge sort. The same permutation either way.
RADIX_SORT_MIN = RADIX_MIN

DENSE_BLOCK = 1 << 20  # doubles in hess_matrix's block of rows


class Sweep(NamedTuple):
    """What one sweep of the kernels reads: the levels and their count per query, the queries' row
    offsets, the sorted order and its sorted scores and levels, and for a view (margin_sqrt_values)
    select = (label code a, label code b, rows of the queries that hold both) that picks its rows
    out of the whole sort (None: every row)."""

    lev: np.ndarray
    nlev: np.ndarray
    qptr: np.ndarray
    order: np.ndarray
    ys: np.ndarray
    ls: np.ndarray
    select: tuple | None


class Term(NamedTuple):
    """coef * max(0, margin - t)^(2 if squared else 1) summed over the pairs of sweep `sweep`."""

    coef: float
    margin: float
    squared: bool
    sweep: int


class PairwiseObjective(PairObjective):
    def __init__(self, ds: Dataset, C: float, loss: str | PairLoss = "squared-hinge",
                 query_weights: np.ndarray | None = None,
                 margin_offsets: np.ndarray | None = None, slack_values: np.ndarray | None = None,
                 margin_sqrt_values: np.ndarray | None = None):
        """margin_offsets (float64[n], optional): margin rescaling with margin Delta_ij = u_i - u_j, where u
        is a per-document value (e.g. its DCG gain): a pair is active when y_i - y_j < u_i - u_j, i.e.
        y~_i - y~_j < 0 for y~ = y - u, and its loss (Delta_ij - t)^2 is the margin-0 loss on y~.
        Still O(n log n): the paper's first special case of Sect. 6.2 (margin rescaling with
        delta_ij = (u_i - u_j)^2, so the loss bounds sum (u_i - u_j)^2 over inverted pairs).

        margin_sqrt_values (float64[n], optional): the paper's margin rescaling, margin sqrt(u_i - u_j)
        (Sect. 6.2, "set the margin to sqrt(delta_ij)", so the squared hinge bounds sum delta_ij over
        inverted pairs), u an increasing function of the label. sqrt(u_i - u_j) is not a difference
        of per-document values, but it depends on the two labels only: the paper's second special
        case, "deal with the loss term corresponding to each pair of relevance levels" separately.
        Each query is sorted once; for every pair of labels a > b the documents of those two labels
        are taken from the sorted order (a view, O(n)) and swept with margin sqrt(u(a) - u(b)).
        Every document is in at most R - 1 views: O(nnz + n log n + R n) per evaluation.

        slack_values (float64[n], optional): slack rescaling, each pair's loss times u_i - u_j. With
        the distinct labels v_0 < ... < v_{R-1}, u_i - u_j = sum_t (u(v_t) - u(v_{t-1})) [l_j < v_t <= l_i],
        so the loss is a positive combination of binary RankSVM losses, one per label threshold:
        R - 1 sweeps over the same sort, still O(n log n)."""
        super().__init__(ds, C, loss)
        fn = self.pair_loss
        if (margin_offsets is not None or margin_sqrt_values is not None) and not fn.margin_rescaling:
            raise ValueError(f"margin rescaling is defined for the {margin_rescaling_losses()} losses")
        if sum(v is not None for v in (margin_offsets, slack_values, margin_sqrt_values)) > 1:
            raise ValueError("choose one rescaling")
        self.offsets = None if margin_offsets is None else np.ascontiguousarray(margin_offsets, dtype=np.float64)
        self.margin = 1.0 if margin_offsets is None else 0.0
        nq = ds.n_queries
        self.qweight = np.ones(nq) if query_weights is None else np.ascontiguousarray(query_weights, dtype=np.float64)
        if self.qweight.shape != (nq,) or not np.all(np.isfinite(self.qweight)) or np.any(self.qweight < 0):
            raise ValueError(f"query_weights must be {nq} finite non-negative numbers")
        self.qptr = ds.qptr
        self.lev = np.ascontiguousarray(ds.levels, dtype=np.int32)
        self.nlev = ds.levels_per_query
        self.n_pairs = ds.n_pairs
        self._skip = (self.nlev < 2).astype(np.uint8)
        n = self.n_rows
        # Per-document state: the sort (order), sorted scores and levels (ys, ls) and dL/dy (gy, the base's).
        # Scratch, shared where the kernels allow it (memory: issue 11): gs (the sorted gradient,
        # used only inside fun_grad_y) is _zs (hess_vec_y's sorted output); hess_vec_y's result
        # is written over _ds (each query's rows of _ds are read before the same rows are written).
        self.order = np.arange(n, dtype=np.int64)
        self.ys = np.zeros(n)
        self.ls = np.zeros(n, dtype=np.int32)
        self._ds = np.zeros(n)
        self._zs = np.zeros(n)
        self.gs = self._zs
        # the loss as a weighted sum of terms (coef, margin, squared, sweep) over one sort
        base = fn.terms(self.margin)
        self._level_sets = [(self.lev, self.nlev)]
        weights_t = [1.0]
        if slack_values is not None:
            self._level_sets, weights_t = _threshold_level_sets(ds, np.asarray(slack_values, dtype=np.float64))
        self._terms = [Term(w_t * c, m, sq, si) for si, w_t in enumerate(weights_t) for c, m, sq in base]
        self._ls_sets = [self.ls] + [np.zeros(n, dtype=np.int32) for _ in self._level_sets[1:]]
        # every level set is swept over the whole sort (a Sweep with select None); a view
        # (margin_sqrt_values) is a subset of the rows, select = (label codes a, b, the queries that
        # hold both) picks its rows out of the sorted order at each evaluation
        # (each its own sorted scores: a query with one side of a threshold only is skipped by that
        # set, whose kernel zeroes its scores, while another set's Hessian-vector product reads them)
        self._sweeps = [Sweep(lev, nlev, self.qptr, self.order, self.ys if k == 0 else np.zeros(n), ls, None)
                        for k, ((lev, nlev), ls) in enumerate(zip(self._level_sets, self._ls_sets))]
        if margin_sqrt_values is not None:
            self._sweeps, self._terms = [], []
            for view, margin in _label_pair_views(ds, np.asarray(margin_sqrt_values, dtype=np.float64), self.qweight):
                self._terms += [Term(c, m, sq, len(self._sweeps)) for c, m, sq in fn.terms(margin)]
                self._sweeps.append(view)
        # violated pairs (pairs whose loss term is non-zero): the first term's active pairs, or the
        # sum over the views (each pair is in exactly one); slack rescaling counts its pairs once,
        # over the labels themselves (count_active), when asked
        self._count_terms = range(len(self._terms)) if margin_sqrt_values is not None else range(1)
        self._count_levels = slack_values is not None
        self._single_term = len(self._terms) == 1 and self._terms[0].coef == 1.0 and self._sweeps[0].select is None
        # a loss of several terms (Huber, logistic, rescaling) adds them up in these
        self._gy0 = self._z = self._z0 = None
        if not self._single_term:
            self._gy0, self._z, self._z0 = np.zeros(n), np.zeros(n), np.zeros(n)
        self._n_active = 0
        self._y_count = None
        self._diag_chunks = None
        self._hv_scratch = None  # the two sweeps of one large query side by side (fun_grad_y, hess_vec_y): their scratch
        # X' z with fewer chunks than csr_rmatvec's where its per-chunk buffers outweigh the rows
        nc = sqh.xt_chunks(self.n_rows, self.n_features, int(self.indptr[-1]))
        if nc != rmatvec_chunks(self.n_rows, self.n_features):
            self._xt_part = np.empty((nc, self.n_features))

    @property
    def n_active(self) -> int:
        """Violated pairs at the last evaluated point: pairs (in queries of non-zero weight) whose
        loss term is non-zero, t = y_i - y_j below the pair's margin, each pair counted once."""
        if self._n_active is None:  # slack rescaling: one count over the labels, on the same sort
            self._n_active = int(sqh.count_active(self._y_count, self.lev, self.order, self.qptr, self.nlev,
                                                  self.qweight, self._terms[0].margin))
        return self._n_active

    # -- loss in score space ------------------------------------------------------------------
    def loss_y(self, y: np.ndarray) -> float:
        """L(y); keeps the sorted state that gradient and hess_vec use."""
        if self.offsets is not None:
            y = y - self.offsets
        sqh.sort_queries(y, self.qptr, self._skip, self.order, RADIX_SORT_MIN)
        if self._single_term:  # the plain loss: straight into gy
            _, margin, squared, si = self._terms[0]
            lev, nlev, qptr, order, ys, ls, _ = self._sweeps[si]
            loss, n_active = sqh.fun_grad_y(y, lev, qptr, nlev, order, ys, ls, self.gs, self.gy, self.qweight, margin,
                                            squared, self._sweep_scratch(qptr))
        else:  # a weighted sum of squared-hinge / hinge terms over the same sorted queries
            self._select_views()
            self.gy[:] = 0.0
            loss, n_active = 0.0, 0.0
            for k, (coef, margin, squared, si) in enumerate(self._terms):
                lev, nlev, qptr, order, ys, ls, select = self._sweeps[si]
                if select is not None:
                    self._gy0[:] = 0.0  # a view writes its own rows only
                l_t, act = sqh.fun_grad_y(y, lev, qptr, nlev, order, ys, ls, self.gs[:order.shape[0]], self._gy0,
                                          self.qweight, margin, squared)
                loss += coef * l_t
                self.gy += coef * self._gy0
                if k in self._count_terms:
                    n_active += act
        self.loss_value = loss
        if self._count_levels:  # counted when asked (n_active), from a copy of these scores
            if self._y_count is None:
                self._y_count = np.empty(self.n_rows)
            np.copyto(self._y_count, y)
            self._n_active = None
        else:
            self._n_active = int(n_active)
        return loss

    def _select_views(self):
        """Each view's rows in ascending y, query by query, taken from the whole sort (O(n) each)."""
        code_sorted = None
        for lev, _, _, order, _, _, select in self._sweeps:
            if select is None:
                continue
            if code_sorted is None:
                code_sorted = lev[self.order]
            a, b, rows_ok = select
            keep = (code_sorted == a) | (code_sorted == b)
            keep &= rows_ok
            np.compress(keep, self.order, out=order)

    def _sweep_scratch(self, qptr):
        """The scratch of one large query's two sweeps side by side (fun_grad_y, hess_vec_y), or None."""
        if self._hv_scratch is None and qptr.shape[0] == 2 and self.n_rows >= sqh.SPLIT_SWEEPS_MIN:
            self._hv_scratch = (np.empty(self.n_rows), np.empty(self.n_rows))
        return self._hv_scratch

    def hess_vec_y(self, d: np.ndarray) -> np.ndarray:
        """H_L d in score space at the last evaluated point."""
        self._need_hessian()
        if self._single_term:  # the result is written over the scratch _ds (valid until the next call)
            _, margin, _, si = self._terms[0]
            _, nlev, qptr, order, ys, ls, _ = self._sweeps[si]
            if d is self._ds:  # a previous result passed back in: the kernel would read what it writes
                d = d.copy()
            return sqh.hess_vec_y(ys, ls, qptr, nlev, order, d, self._ds, self._zs, self._ds, self.qweight, margin,
                                  self._sweep_scratch(qptr))
        if d is self._z:
            d = d.copy()
        self._z[:] = 0.0
        for coef, margin, _, si in self._terms:
            _, nlev, qptr, order, ys, ls, select = self._sweeps[si]
            if select is not None:
                self._z0[:] = 0.0  # a view writes its own rows only
            m = order.shape[0]
            self._z += coef * sqh.hess_vec_y(ys, ls, qptr, nlev, order, d, self._ds[:m], self._zs[:m], self._z0,
                                             self.qweight, margin)
        return self._z

    def hess_diag(self) -> np.ndarray:
        """diag(X' H_L X) at the last evaluated point, in O(nnz log R) from the same sorted sweeps
        (squared_hinge.hess_diag_add); a sum of the loss's terms, clipped at 0 against rounding."""
        self._need_hessian()
        if self._diag_chunks is None:
            self._diag_chunks = sqh.hess_diag_chunks(self.qptr, self.n_features, int(self.indptr[-1]))
        part = np.zeros((self._diag_chunks.shape[0] - 1, self.n_features))
        for coef, margin, _, si in self._terms:
            _, nlev, qptr, order, ys, ls, _ = self._sweeps[si]
            sqh.hess_diag_add(ys, ls, qptr, nlev, order, self.qweight, self.data, self.indices, self.indptr, margin,
                              coef, self._ds, part, self._diag_chunks, self.vscale)
        out = sum_chunks(part, np.empty(self.n_features))
        return np.maximum(out, 0.0, out=out)

    def column_sumsq(self) -> np.ndarray:
        """sum_i x_ij^2 for every feature j: the scales CG's preconditioner policy looks at."""
        return column_sumsq(self.data, self.indices, np.empty(self.n_features), self.vscale)

    def dense_rows(self) -> int:
        """Rows of X per block of hess_matrix: whole queries, at least the longest one."""
        longest = int(np.max(np.diff(self.qptr))) if self.qptr.shape[0] > 1 else 0
        return max(DENSE_BLOCK // max(self.n_features, 1), longest, 1)

    def hess_matrix(self) -> np.ndarray:
        """X' H_L X (n_features x n_features) at the last evaluated point: for each block of whole
        queries, Z = H_L X_b by squared_hinge.hess_x_block, then X_b' Z (squared_hinge.xtz_add, not
        BLAS: its threads oversubscribe a busy machine and its sums may depend on them). O(nnz d +
        n d log R) time and one (rows x d) block of memory (dense_rows)."""
        self._need_hessian()
        d = self.n_features
        H = np.zeros((d, d))
        rows = self.dense_rows()
        nq = self.qptr.shape[0] - 1
        Z = np.empty((min(rows, self.n_rows), d))
        q0 = 0
        while q0 < nq:
            q1 = int(np.searchsorted(self.qptr, self.qptr[q0] + rows, side="right")) - 1
            q1 = min(max(q1, q0 + 1), nq)
            r0, r1 = int(self.qptr[q0]), int(self.qptr[q1])
            if r1 > r0:
                Zb = Z[:r1 - r0]
                Zb[:, :] = 0.0
                for coef, margin, _, si in self._terms:
                    _, nlev, qptr, order, ys, ls, _ = self._sweeps[si]
                    sqh.hess_x_block(ys, ls, qptr, nlev, order, self.qweight, self.data, self.indices, self.indptr,
                                     margin, coef, q0, q1, r0, Zb, self.vscale)
                sqh.xtz_add(self.data, self.indices, self.indptr, r0, r1, Zb, H, self.vscale)
            q0 = q1
        H += H.T
        H *= 0.5
        return H

    def _need_hessian(self):
        if not self.pair_loss.second_order:
            raise ValueError(f"the {self.loss} loss has no Hessian: use the bundle method")


def _threshold_level_sets(ds: Dataset, u: np.ndarray):
    """Binary level sets (label >= v_t) for every threshold v_t between distinct labels, with the
    weights u(v_t) - u(v_{t-1}); u must be a function of the label that increases with it."""
    values = np.unique(ds.y)
    u_of = np.empty(values.shape[0])
    idx = np.searchsorted(values, ds.y)
    u_of[idx] = u
    if not np.allclose(u_of[idx], u) or np.any(np.diff(u_of) <= 0):
        raise ValueError("slack_values must be an increasing function of the label")
    sets, weights = [], []
    for t in range(1, values.shape[0]):
        lev = (ds.y >= values[t]).astype(np.int32)
        nlev = (np.maximum.reduceat(lev, ds.qptr[:-1]) - np.minimum.reduceat(lev, ds.qptr[:-1]) + 1).astype(np.int64)
        sets.append((lev, nlev))
        weights.append(float(u_of[t] - u_of[t - 1]))
    return sets, weights


def _label_pair_views(ds: Dataset, u: np.ndarray, qweight: np.ndarray):
    """For every pair of distinct labels a > b (codes in the sorted distinct labels) present
    together in some query of non-zero weight: the view of the rows of those two labels in those
    queries, and its margin sqrt(u(a) - u(b)). u must be an increasing function of the label.
    A view is a Sweep with its select (a, b, the rows of the queries that hold both): the
    label codes as levels (the Fenwick trees sized by the number of distinct labels), so only the
    pairs between its two labels differ in level."""
    values = np.unique(ds.y)
    code = np.searchsorted(values, ds.y).astype(np.int32)
    u_of = np.empty(values.shape[0])
    u_of[code] = u
    if not np.allclose(u_of[code], u) or np.any(np.diff(u_of) <= 0):
        raise ValueError("margin_sqrt_values must be an increasing function of the label")
    R = values.shape[0]
    nq = ds.n_queries
    qrow = np.repeat(np.arange(nq), np.diff(ds.qptr))
    present = np.zeros((nq, R), dtype=bool)
    present[qrow, code] = True
    present &= (qweight > 0)[:, None]
    nlev = np.full(nq, max(R, 2), dtype=np.int64)
    out = []
    for a in range(1, R):
        for b in range(a):
            both = present[:, a] & present[:, b]
            if not np.any(both):
                continue
            rows = ((code == a) | (code == b)) & both[qrow]
            counts = np.bincount(qrow[rows], minlength=nq)
            qptr = np.zeros(nq + 1, dtype=np.int64)
            np.cumsum(counts, out=qptr[1:])
            m = int(qptr[-1])
            view = Sweep(code, nlev, qptr, np.zeros(m, dtype=np.int64), np.zeros(m), np.zeros(m, dtype=np.int32),
                         (a, b, both[qrow]))
            out.append((view, float(np.sqrt(u_of[a] - u_of[b]))))
    return out
