"""What every solver returns, and the options every solver understands."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol

import numpy as np

from rankkit.data import Dataset

Log = Callable[[str], None]


@dataclass
class FitResult:
    w: np.ndarray
    objective: float
    iterations: int
    converged: bool
    message: str  # why it stopped, in words
    n_active: int = 0  # pairs with margin < 1 at the solution
    train_time: float = 0.0
    extra: dict = field(default_factory=dict)  # solver-specific figures recorded in the model file


class Solver(Protocol):
    name: str

    def fit(self, ds: Dataset, w0: np.ndarray | None = None, log: Log | None = None) -> FitResult: ...

    def hyperparameters(self) -> dict: ...


class ExactRankSVM:
    """The settings the deterministic solvers share (newton, newton-pairs, bundle): C, the stopping
    rule, the loss, query weights and cost-sensitive pairs; and the O(n log n) objective they define.
    Subclasses set DEFAULT_TOL / DEFAULT_MAX_ITER and implement fit()."""

    name = ""
    DEFAULT_TOL = 1e-6
    DEFAULT_MAX_ITER = 100

    def __init__(self, C: float = 1.0, tol: float | None = None, max_iter: int | None = None,
                 loss: str = "squared-hinge", query_norm: bool = False, query_weights: np.ndarray | None = None,
                 rescale: str | None = None, delta: str = "gain"):
        self.C, self.loss = float(C), loss
        self.tol = self.DEFAULT_TOL if tol is None else float(tol)
        self.max_iter = self.DEFAULT_MAX_ITER if max_iter is None else int(max_iter)
        self.query_norm = bool(query_norm)
        self.query_weights = query_weights
        self.rescale, self.delta = rescale, delta

    def hyperparameters(self) -> dict:
        out = {"C": self.C, "tol": self.tol, "max_iter": self.max_iter, "query_norm": self.query_norm}
        if self.rescale:
            out.update({"rescale": self.rescale, "delta": self.delta})
        return out

    def weights(self, ds: Dataset) -> np.ndarray | None:
        """Per-query weights: the given ones, times 1 / pairs of the query with query_norm."""
        w = None if self.query_weights is None else np.asarray(self.query_weights, dtype=np.float64)
        if self.query_norm:
            norm = 1.0 / np.maximum(ds.pairs_per_query, 1)
            w = norm if w is None else w * norm
        return w

    def objective(self, ds: Dataset):
        """The O(n log n) objective (PairwiseObjective) with this solver's loss, weights and rescaling."""
        from rankkit.errors import UsageError
        from rankkit.objectives.pairwise import PairwiseObjective

        offsets = slack = None
        if self.rescale and self.delta == "swap":
            raise UsageError("--delta swap is not a function of the labels: it needs --solver newton-pairs")
        if self.rescale:
            from rankkit.objectives.rescale import label_values

            if self.rescale == "margin":
                offsets = label_values(ds, self.delta)
            else:
                slack = label_values(ds, self.delta)
        return PairwiseObjective(ds, self.C, self.loss, query_weights=self.weights(ds), margin_offsets=offsets,
                                 slack_values=slack)
