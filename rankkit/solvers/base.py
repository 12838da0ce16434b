"""What every solver returns, and the options every solver understands."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Protocol

import numpy as np

from rankkit.data import Dataset
from rankkit.errors import DataError, UsageError
from rankkit.objectives.losses import LOSSES, margin_rescaling_losses
from rankkit.objectives.pairwise import PairwiseObjective
from rankkit.objectives.rescale import canonical_rescale, label_values

Log = Callable[[str], None]

# Defaults of the exact solvers, defined here once: the Newton driver's stopping rule (Newton
# decrement / objective below DEFAULT_TOL, at most DEFAULT_MAX_ITER iterations) and C when not
# given, for every solver that has a C. bundle has its own (rankkit.solvers.bundle).
DEFAULT_C = 1.0
DEFAULT_TOL = 1e-6
DEFAULT_MAX_ITER = 100


@dataclass
class FitResult:
    w: np.ndarray
    objective: float
    iterations: int
    converged: bool
    message: str  # why it stopped, in the CLI's words (rankkit.training.stop_message words `stop` for a face)
    n_active: int = 0  # pairs with margin < 1 at the solution
    train_time: float = 0.0
    extra: dict = field(default_factory=dict)  # solver-specific figures recorded in the model file
    # converged is False and nothing went wrong: the run did what was asked (a fixed number of
    # stochastic steps) and has no convergence test. The caller does not warn about it.
    fixed_budget: bool = False
    # why it stopped, as a code the faces word (converged, zero_gradient, max_iter, line_search, ...),
    # and the numbers the words need (tol, max_iter, the final ratio, ...)
    stop: str = ""
    detail: dict = field(default_factory=dict)
    # factorized: the latent vectors V, one row per training document (not recorded in the model)
    factors: np.ndarray | None = None


# The solvers form products such as C * (x_i - x_j)(x_i - x_j)' v and their squares: a bound of
# "scale * max|x|^2 * features" (scale: C times the number of pairs for the C-weighted losses) above
# this makes them overflow or leaves a problem no double-precision method can solve (with every
# |x| about M, the problem is the one on x / M with C * M^2; a power-of-two rescaling is exact but
# does not change that product). Below it every product is representable; the runtime checks
# (check_finite) remain as a backstop.
MAGNITUDE_LIMIT = 1e100


def check_magnitude(ds: Dataset, scale: float, knob: str, scale_words: str) -> None:
    """Refuse data whose feature values (with the solver's scale: C * pairs, 1 / lambda, ...) are
    beyond what the solver can compute in double precision: one line naming the file, the line
    and the value, and what to do."""
    if ds.data.size == 0:
        return
    big = ds.max_abs_value()
    bound = float(scale) * big * big * max(ds.n_features, 1)
    if np.isfinite(big) and bound <= MAGNITUDE_LIMIT:
        return
    k = int(np.argmax(np.abs(ds.data)))  # only now: a temporary the size of the data
    big = abs(ds.value_at(k))
    if not np.isfinite(big):
        raise DataError(ds.source, f"feature value {ds.value_at(k)!r} is not finite", _line_of(ds, k))
    # how far to divide the features: a power of ten that brings the bound back under the limit
    log_bound = math.log10(scale * max(ds.n_features, 1)) + 2 * math.log10(big)
    digits = math.floor(math.log10(big))
    shown = f"{bound:.3g}" if math.isfinite(bound) else f"1e+{log_bound:.0f}"
    raise DataError(ds.source,
                    f"feature value {ds.value_at(k):.3g} is too large to train on in double precision with {knob} "
                    f"({scale_words} x max|x|^2 x features = {shown} > {MAGNITUDE_LIMIT:.0e}): "
                    f"rescale the features (e.g. divide them by 1e{digits}, or normalise them to [0, 1]) and train "
                    f"again '{ds.value_at(k)!r}'", _line_of(ds, k))


def max_abs(values: np.ndarray) -> float:
    """max |v| without a temporary array the size of `values` (two reductions); nan if any is nan."""
    if values.size == 0:
        return 0.0
    hi, lo = abs(float(values.max())), abs(float(values.min()))
    return hi if not hi <= lo else lo  # a nan (max and min propagate it) is returned as nan


def check_exact_magnitude(ds: Dataset, C: float) -> None:
    check_magnitude(ds, C * max(ds.n_pairs, 1), f"-C {C:g}", "C x pairs")


def _line_of(ds: Dataset, k: int) -> int | None:
    """The 1-based source line of the row holding stored value k (None when unknown)."""
    if ds.line is None:
        return None
    row = int(np.searchsorted(ds.indptr, k, side="right")) - 1
    return int(ds.line[row])


def check_finite(ds: Dataset, solver: str, what: str, *values) -> None:
    """Raise a clear error if any value (floats or arrays) is not finite: an overflow the magnitude
    check did not foresee. Never a non-finite model, never one called converged."""
    for v in values:
        if not np.all(np.isfinite(v)):
            big = ds.max_abs_value()
            raise DataError(ds.source, f"{solver}: the {what} overflowed (not finite); the largest feature value "
                            f"is {big:.3g}: scale the features down (or lower -C) and train again")


def quiet_fp():
    """numpy floating-point warnings off: the solvers test finiteness themselves and report it
    in words (check_finite), never as a raw RuntimeWarning on stderr."""
    return np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore")


class Solver(Protocol):
    name: str

    def fit(self, ds: Dataset, w0: np.ndarray | None = None, log: Log | None = None) -> FitResult: ...

    def hyperparameters(self) -> dict: ...


class ExactRankSVM:
    """The settings the deterministic solvers share (newton, newton-pairs, bundle): C, the stopping
    rule, the loss, query weights and cost-sensitive pairs; and the O(n log n) objective they define.
    Subclasses set DEFAULT_TOL / DEFAULT_MAX_ITER and implement fit()."""

    name = ""
    DEFAULT_TOL = DEFAULT_TOL
    DEFAULT_MAX_ITER = DEFAULT_MAX_ITER

    def __init__(self, C: float = DEFAULT_C, tol: float | None = None, max_iter: int | None = None,
                 loss: str = "squared-hinge", query_norm: bool = False, query_weights: np.ndarray | None = None,
                 rescale: str | None = None, delta: str = "gain"):
        self.C, self.loss = float(C), loss
        self.tol = self.DEFAULT_TOL if tol is None else float(tol)
        self.max_iter = self.DEFAULT_MAX_ITER if max_iter is None else int(max_iter)
        self.query_norm = bool(query_norm)
        self.query_weights = query_weights
        self.rescale, self.delta = canonical_rescale(rescale), delta

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
        values = {}
        if self.rescale and self.delta == "swap":
            raise UsageError("--delta swap is not a function of the labels: it needs --solver newton-pairs")
        if (self.rescale and self.rescale.startswith("margin") and self.loss in LOSSES
                and not LOSSES[self.loss].margin_rescaling):
            raise UsageError(f"--rescale {self.rescale} with --loss {self.loss} needs --solver newton-pairs (per-pair "
                             f"margins); the O(n log n) objective rescales the margin of the {margin_rescaling_losses()} "
                             "losses (or use --rescale slack)")
        if self.rescale:  # label-based Delta: every rescaling without the pair list (objectives/rescale.py)
            key = {"margin-sqrt": "margin_sqrt_values", "margin-delta": "margin_offsets", "slack": "slack_values"}
            values[key[self.rescale]] = label_values(ds, self.delta)
        return PairwiseObjective(ds, self.C, self.loss, query_weights=self.weights(ds), **values)
