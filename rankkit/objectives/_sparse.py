"""CSR products on raw arrays. Columns >= len(w) are ignored by `csr_matvec` (prediction with a
model that has fewer features than the file)."""

from __future__ import annotations

import numpy as np

from rankkit.objectives._numba import njit


@njit
def csr_matvec(data, indices, indptr, w, out):
    """out = X w, with X given by (data, indices, indptr)."""
    n = indptr.shape[0] - 1
    d = w.shape[0]
    for i in range(n):
        acc = 0.0
        for t in range(indptr[i], indptr[i + 1]):
            j = indices[t]
            if j < d:
                acc += data[t] * w[j]
        out[i] = acc
    return out


@njit
def csr_rmatvec(data, indices, indptr, z, out):
    """out = X^T z (out has length n_features and is overwritten)."""
    out[:] = 0.0
    n = indptr.shape[0] - 1
    for i in range(n):
        zi = z[i]
        if zi != 0.0:
            for t in range(indptr[i], indptr[i + 1]):
                out[indices[t]] += data[t] * zi
    return out


@njit
def ignored_entries(indices, n_features):
    """How many stored entries have a column >= n_features."""
    count = 0
    for t in range(indices.shape[0]):
        if indices[t] >= n_features:
            count += 1
    return count


def empty_like_rows(indptr) -> np.ndarray:
    return np.empty(indptr.shape[0] - 1, dtype=np.float64)
