"""CSR products on raw arrays, split over threads (rankkit.threads) by rows or chunks of rows.

Results do not depend on the number of threads: `csr_matvec` computes each row on its own, and
`csr_rmatvec` splits the rows into a fixed number of chunks (a function of the shape only), sums
each chunk into its own buffer and adds the buffers in chunk order. Columns >= len(w) are
ignored by `csr_matvec` (prediction with a model that has fewer features than the file).

Values: every kernel reads stored value t as `value_at(data, t, scale)`: data[t] itself (float64
data, scale 1.0), or the int32 decimal code data[t] over scale = 10**d (rankkit.data.Dataset
.value_scale), the correctly rounded quotient, so either storage gives the same doubles and the
same bits downstream (tests/test_decimal_values.py).
"""

from __future__ import annotations

import numpy as np

from rankkit import threads
from rankkit.compiler.dispatch import NumbaGlobal, njit

def _make_fma():
    """fma(a, b, c) = a * b + c with one rounding (llvm.fma.f64: the FMA instruction of a CPU that
    has one, else libm's fma, exact either way). Made when numba first compiles a kernel that uses
    it (numba is not imported before)."""
    from llvmlite import ir
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic

    @intrinsic
    def fma(typingctx, a, b, c):
        if not all(x == types.float64 for x in (a, b, c)):
            return None

        def codegen(context, builder, signature, args):
            dbl = ir.DoubleType()
            fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(dbl, [dbl, dbl, dbl]), "llvm.fma.f64")
            return builder.call(fn, args)

        return types.float64(types.float64, types.float64, types.float64), codegen

    return fma


_fma = NumbaGlobal(_make_fma)


@njit(inline="always")
def value_at(data, t, scale):
    """Stored value t: data[t] when scale is 1.0; else the int32 decimal code data[t] / scale,
    correctly rounded, as one multiply and two FMAs instead of a division (a division's throughput
    bounded X.v and X'z: 11.6 -> 7.6 ms and 12.1 -> 7.2 ms on the 200k file, one thread).
    Markstein's theorem: with r = RN(1/scale) and q = RN(x r) within one ulp of x / scale, the
    remainder x - q scale is exact in one FMA and RN(q + (x - q scale) r) = RN(x / scale). Checked
    for every int32 code and every scale 10**d, d = 1..9 (`make fuzz`: tests/test_decimal_values.py)."""
    x = np.float64(data[t])
    s = np.float64(scale)
    if s == 1.0:
        return x
    r = 1.0 / s
    q = x * r
    return _fma(_fma(-q, s, x), r, q)


# At most this many doubles of per-chunk buffers for X^T z; at most MAX_CHUNKS chunks.
CHUNK_BUDGET = 1 << 22
MAX_CHUNKS = 64


@njit
def _matvec_rows(data, indices, indptr, w, out, scale, lo, hi):
    d = w.shape[0]
    for i in range(lo, hi):
        acc = 0.0
        for t in range(indptr[i], indptr[i + 1]):
            j = indices[t]
            if j < d:
                acc += value_at(data, t, scale) * w[j]
        out[i] = acc


def csr_matvec(data, indices, indptr, w, out, scale=1.0):
    """out = X w, with X given by (data, indices, indptr); rows split over the threads. scale: the
    values are data / scale (rankkit.data.Dataset.value_scale: int32 decimal codes; 1.0: data)."""
    n = indptr.shape[0] - 1
    parts = threads.split(indptr, n, int(indptr[-1]) if n else 0)
    threads.run(_matvec_rows, parts, data, indices, indptr, w, out, float(scale))
    return out


@njit
def rmatvec_chunks(n_rows, n_features):
    if n_rows < 4096:
        return 1
    c = CHUNK_BUDGET // max(n_features, 1)
    return max(1, min(MAX_CHUNKS, c, n_rows // 1024))


@njit
def _rmatvec_chunks(data, indices, indptr, z, part, nc, scale, c0, c1):
    """part[c] = the rows of chunk c times z, for chunks c0..c1-1 (chunk c: rows c*n//nc ..)."""
    n = indptr.shape[0] - 1
    for c in range(c0, c1):
        lo = c * n // nc
        hi = (c + 1) * n // nc
        for i in range(lo, hi):
            zi = z[i]
            if zi != 0.0:
                for t in range(indptr[i], indptr[i + 1]):
                    part[c, indices[t]] += value_at(data, t, scale) * zi


@njit
def _rmatvec_serial(data, indices, indptr, z, out, scale):
    n = indptr.shape[0] - 1
    out[:] = 0.0
    for i in range(n):
        zi = z[i]
        if zi != 0.0:
            for t in range(indptr[i], indptr[i + 1]):
                out[indices[t]] += value_at(data, t, scale) * zi
    return out


@njit
def sum_chunks(part, out):
    """out[j] = sum of part[c, j] in chunk order."""
    nc = part.shape[0]
    for j in range(out.shape[0]):
        acc = 0.0
        for c in range(nc):
            acc += part[c, j]
        out[j] = acc
    return out


def csr_rmatvec(data, indices, indptr, z, out, scale=1.0):
    """out = X^T z (out has length n_features and is overwritten); scale as csr_matvec's."""
    n = indptr.shape[0] - 1
    d = out.shape[0]
    nc = rmatvec_chunks(n, d)
    if nc == 1:
        return _rmatvec_serial(data, indices, indptr, z, out, float(scale))
    part = np.zeros((nc, d))
    threads.run(_rmatvec_chunks, threads.split(None, nc, int(indptr[-1])), data, indices, indptr, z, part, nc,
                float(scale))
    return sum_chunks(part, out)


@njit
def ignored_entries(indices, n_features):
    """How many stored entries have a column >= n_features."""
    count = 0
    for t in range(indices.shape[0]):
        if indices[t] >= n_features:
            count += 1
    return count


@njit
def column_sumsq(data, indices, out, scale=1.0):
    """out[j] = sum of the squares of column j's stored values (out zeroed first); columns >= len(out)
    are ignored; scale as csr_matvec's."""
    d = out.shape[0]
    out[:] = 0.0
    for t in range(data.shape[0]):
        j = indices[t]
        if j < d:
            v = value_at(data, t, scale)
            out[j] += v * v
    return out


@njit
def cholesky_lower(A):
    """A = L L' in place (the lower triangle of A becomes L, the upper is zeroed), for a small
    symmetric positive definite A; returns False if a pivot is not positive. Written out rather
    than numpy's LAPACK, whose threads spin on a busy machine (0.2 s for a 136 x 136 matrix)."""
    n = A.shape[0]
    for j in range(n):
        s = A[j, j]
        for k in range(j):
            s -= A[j, k] * A[j, k]
        if not s > 0.0:
            return False
        ljj = np.sqrt(s)
        A[j, j] = ljj
        for i in range(j + 1, n):
            s = A[i, j]
            for k in range(j):
                s -= A[i, k] * A[j, k]
            A[i, j] = s / ljj
        for i in range(j):
            A[i, j] = 0.0
    return True


@njit
def cholesky_solve(L, scale, v, out):
    """out = S (L L')^-1 S v with S = diag(scale): forward and back substitution."""
    n = L.shape[0]
    for i in range(n):
        s = v[i] * scale[i]
        for k in range(i):
            s -= L[i, k] * out[k]
        out[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        s = out[i]
        for k in range(i + 1, n):
            s -= L[k, i] * out[k]
        out[i] = s / L[i, i]
    for i in range(n):
        out[i] *= scale[i]
    return out
