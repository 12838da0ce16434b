"""The one place that decides how kernels are compiled.

Every kernel module does `from rankkit.objectives._numba import njit`. Kernels are cached on disk
(`cache=True`), so the second run of a command does not recompile; set NUMBA_CACHE_DIR to move the
cache (tests and CI use a fresh one). No fastmath: objective, gradient and Hessian-vector sums must
be reproducible for the line search and for the brute-force comparisons.
"""

from __future__ import annotations

import numba

_DEFAULTS = {"cache": True, "nogil": True, "fastmath": False, "error_model": "numpy"}


def njit(*args, **kwargs):
    """numba.njit with rankkit's defaults; usable bare (`@njit`) or with options (`@njit(parallel=True)`)."""
    opts = dict(_DEFAULTS)
    opts.update(kwargs)
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return numba.njit(**opts)(args[0])
    return numba.njit(*args, **opts)
