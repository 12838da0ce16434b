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
