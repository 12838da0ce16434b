"""Dot products of the solvers' vectors, the same bits on every machine.

numpy's `a @ b` and `np.dot` on float64 vectors call BLAS, and OpenBLAS splits a long dot product
(over 10,000 entries) over its threads, one per core unless OPENBLAS_NUM_THREADS says otherwise:
the sum then depends on the machine's core count in its last bits, and so would every weight a
Newton or CG step computes from it (checked: a 1M-entry product differs between 1 and 2 BLAS
threads); on a busy machine waking those threads also costs milliseconds per call. np.einsum's sum of products runs numpy's own loop, on one thread, in one order: the same
result for any BLAS, thread count or face (CLI, Python, Dask worker)."""

from __future__ import annotations

import numpy as np


def dot(a: np.ndarray, b: np.ndarray) -> float:
    """a . b of two 1-D float64 arrays, in an order that does not depend on BLAS's threads."""
    return float(np.einsum("i,i->", a, b))


def norm(a: np.ndarray) -> float:
    """The Euclidean norm of a 1-D float64 array (np.linalg.norm is sqrt(a @ a): BLAS's threads)."""
    return float(np.sqrt(dot(a, a)))
