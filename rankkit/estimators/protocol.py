"""rankkit.experiment: the LETOR protocol (the use case rankkit.experiments.experiment), its
warnings worded for Python (``grids={...}``, not ``--grid``)."""

from __future__ import annotations

import functools
import warnings

from rankkit import experiments
from rankkit.errors import UsageError
from rankkit.estimators.words import PYTHON_WORDS
from rankkit.solvers.options import Words


@functools.wraps(experiments.experiment)
def experiment(folds, *args, words: Words | None = None, **kwargs) -> dict:
    # rankkit.experiment: the use case, its warnings worded for Python (grids={...}, not --grid); the
    # docstring and signature are the use case's (functools.wraps)
    if "style" in kwargs:  # rankkit.experiment(style=...) before issue 36
        style = kwargs.pop("style")
        warnings.warn("rankkit.experiment(style=...) is deprecated: pass words= (a rankkit.solvers.options.Words; "
                      "the default words are Python's)", FutureWarning, stacklevel=2)
        if style not in ("python", "cli"):
            raise UsageError(f"style must be 'python' or 'cli', not {style!r}")
        if words is None and style == "cli":
            words = Words()
    return experiments.experiment(folds, *args, words=words or PYTHON_WORDS, **kwargs)
