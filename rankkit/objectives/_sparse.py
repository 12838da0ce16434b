"""CSR products on raw arrays, parallel over rows.

Results do not depend on the number of threads: `csr_matvec` computes each row on its own, and
`csr_rmatvec` splits the rows into a fixed number of chunks (a function of the shape only), sums
each chunk into its own buffer and adds the buffers in chunk order. Columns >= len(w) are
ignored by `csr_matvec` (prediction with a model that has fewer features than the file).
"""

from __future__ import annotations

import numpy as np
from numba import prange

from rankkit.objectives._numba import njit

# At most this many doubles of per-chunk buffers for X^T z; at most MAX_CHUNKS chunks.
CHUNK_BUDGET = 1 << 22
MAX_CHUNKS = 64


@njit(parallel=True)
def csr_matvec(data, indices, indptr, w, out):
    """out = X w, with X given by (data, indices, indptr)."""
    n = indptr.shape[0] - 1
    d = w.shape[0]
    for i in prange(n):
        acc = 0.0
        for t in range(indptr[i], indptr[i + 1]):
            j = indices[t]
            if j < d:
                acc += data[t] * w[j]
        out[i] = acc
    return out


@njit
def rmatvec_chunks(n_rows, n_features):
    if n_rows < 4096:
        return 1
    c = CHUNK_BUDGET // max(n_features, 1)
    return max(1, min(MAX_CHUNKS, c, n_rows // 1024))


@njit(parallel=True)
def csr_rmatvec(data, indices, indptr, z, out):
    """out = X^T z (out has length n_features and is overwritten)."""
    n = indptr.shape[0] - 1
    d = out.shape[0]
    nc = rmatvec_chunks(n, d)
    if nc == 1:
        out[:] = 0.0
        for i in range(n):
            zi = z[i]
            if zi != 0.0:
                for t in range(indptr[i], indptr[i + 1]):
                    out[indices[t]] += data[t] * zi
        return out
    part = np.zeros((nc, d))
    for c in prange(nc):
        lo = c * n // nc
        hi = (c + 1) * n // nc
        for i in range(lo, hi):
            zi = z[i]
            if zi != 0.0:
                for t in range(indptr[i], indptr[i + 1]):
                    part[c, indices[t]] += data[t] * zi
    for j in prange(d):
        acc = 0.0
        for c in range(nc):
            acc += part[c, j]
        out[j] = acc
    return out


@njit
def ignored_entries(indices, n_features):
    """How many stored entries have a column >= n_features."""
    count = 0
    for t in range(indices.shape[0]):
        if indices[t] >= n_features:
            count += 1
    return count
