"""The parameter checks of the estimators, in one place (scikit-learn's sklearn/utils/validation.py):
each takes the value and the parameter's name, returns the value as the solver wants it (or None),
or raises a UsageError naming the parameter. Run in ``fit``, as scikit-learn does.
"""

from __future__ import annotations

import math

import numpy as np

from rankkit.errors import UsageError
from rankkit.text import printable

def number(v, name: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not math.isfinite(float(v)):
        raise UsageError(f"{name} must be a finite number, not {v!r}")
    return float(v)


def positive(v, name: str) -> float:
    x = number(v, name)
    if x <= 0:
        raise UsageError(f"{name} must be > 0, not {v!r}")
    return x


def positive_or_none(v, name: str):
    return None if v is None else positive(v, name)


def nonnegative_or_none(v, name: str):
    if v is None:
        return None
    x = number(v, name)
    if x < 0:
        raise UsageError(f"{name} must be >= 0, not {v!r}")
    return x


def count_or_none(v, name: str):
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise UsageError(f"{name} must be an integer >= 1, not {v!r}")
    return int(v)


def flag(v, name: str) -> bool:
    if not isinstance(v, (bool, np.bool_)):
        raise UsageError(f"{name} must be True or False, not {v!r}")
    return bool(v)


def random_seed(v) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
        raise UsageError(f"random_state must be an integer >= 0 (a seed: the same one gives the same model), "
                         f"not {v!r}")
    return int(v)


def choice(v, name: str, choices: tuple) -> None:
    if v is not None and v not in choices:
        raise UsageError(f"{name} must be one of {', '.join(choices)}, not {v!r}")




def check_feature_names(fitted, names, name: str = "X", fix: str = "X[est.feature_names_in_]") -> None:
    """UsageError unless the column `names` of data frame `name` are the `fitted` ones in the same
    order (scikit-learn's rule)."""
    if len(names) == len(fitted) and not np.any(np.asarray(names) != np.asarray(fitted)):
        return
    missing = [c for c in fitted if c not in set(names)]
    extra = [c for c in names if c not in set(fitted)]
    what = (f"missing: {_names_shown(missing)}" if missing else
            f"unseen at fit: {_names_shown(extra)}" if extra else
            "the same names in another order")
    raise UsageError(f"the feature names of {name} differ from those seen by fit ({what}): the columns must be "
                     f"the same, in the same order (reorder them with {fix})")


def _names_shown(names) -> str:
    """The first five names of a list, each on one line (a tab or newline in a name is escaped)."""
    return ", ".join(printable(str(c), 40) for c in names[:5])
