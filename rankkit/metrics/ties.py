"""The order of tied scores: the tie-breaking conventions of grading, kept with the metrics (not in a
file format's reader) so that io/ (trec runs), the use cases and the path algorithms all take it
from below them.

    lex_rank(buf, starts, ends)    dense rank of byte tokens in lexicographic order (a kernel)
    lexicographic_rank(strings)    the same for str (UTF-8 byte, i.e. code point, order)
    dataset_docids(ds)             the docid of each row of a Dataset (its line number where none)
    dataset_tiebreak(ds, conv)     trec_eval's tiebreak (docid descending) under the trec convention

Imports only numpy, the compiler's njit and rankkit.text.
"""

from __future__ import annotations

import numpy as np

from rankkit.compiler.dispatch import njit
from rankkit.text import utf8


@njit
def _word(buf, s, e, off):
    """Bytes off..off+7 of the token buf[s:e] as a big-endian uint64, zero-padded past its end."""
    w = np.uint64(0)
    p = s + off
    for k in range(8):
        w <<= np.uint64(8)
        if p + k < e:
            w |= np.uint64(buf[p + k])
    return w


# Segments at least this long are sorted by radix (16-bit digits), shorter ones by np.argsort.
_RADIX_MIN = 1 << 16


@njit
def _radix_argsort(keys):
    """Stable argsort of uint64 keys, LSD radix on 16-bit digits; a digit that is the same for
    every key (shared bytes, zero padding) costs one counting pass and no scatter."""
    m = keys.shape[0]
    idx = np.arange(m)
    cur = keys.copy()
    idx2 = np.empty(m, dtype=np.int64)
    cur2 = np.empty(m, dtype=np.uint64)
    count = np.empty(65537, dtype=np.int64)
    for shift in range(0, 64, 16):
        sh = np.uint64(shift)
        count[:] = 0
        for i in range(m):
            count[np.int64((cur[i] >> sh) & np.uint64(0xFFFF)) + 1] += 1
        if count.max() == m:
            continue
        for d in range(65536):
            count[d + 1] += count[d]
        for i in range(m):
            d = np.int64((cur[i] >> sh) & np.uint64(0xFFFF))
            p = count[d]
            count[d] = p + 1
            idx2[p] = idx[i]
            cur2[p] = cur[i]
        idx, idx2 = idx2, idx
        cur, cur2 = cur2, cur
    return idx


@njit
def lex_rank(buf, starts, ends):
    """Dense rank of each token buf[starts[i]:ends[i]] in byte-wise lexicographic order (equal
    tokens share a rank; a proper prefix ranks before its extensions), as Python compares str
    and C compares with strcmp. MSD radix on 8-byte words: sort a segment of tokens equal so far
    by the next word, then split each run of equal words into exhausted tokens (ordered by length)
    and longer ones, which form the next segment."""
    n = starts.shape[0]
    rank = np.zeros(n, dtype=np.int64)
    if n == 0:
        return rank
    order = np.arange(n)
    new = np.zeros(n, dtype=np.bool_)  # sorted position i starts a new distinct token
    new[0] = True
    stack = np.empty((n + 1, 3), dtype=np.int64)  # pending segments (lo, hi, offset); disjoint
    top = 0
    stack[0, 0], stack[0, 1], stack[0, 2] = 0, n, 0
    top = 1
    while top > 0:
        top -= 1
        lo, hi, off = stack[top, 0], stack[top, 1], stack[top, 2]
        m = hi - lo
        keys = np.empty(m, dtype=np.uint64)
        for i in range(m):
            r = order[lo + i]
            keys[i] = _word(buf, starts[r], ends[r], off)
        perm = _radix_argsort(keys) if m >= _RADIX_MIN else np.argsort(keys)
        seg = np.empty(m, dtype=np.int64)
        for i in range(m):
            seg[i] = order[lo + perm[i]]
        i = 0
        while i < m:
            ki = keys[perm[i]]
            j = i + 1
            while j < m and keys[perm[j]] == ki:
                j += 1
            new[lo + i] = True
            if j - i == 1:
                order[lo + i] = seg[i]
            else:
                # exhausted tokens (no bytes past this word) first, by length; then the rest
                lens = np.empty(j - i, dtype=np.int64)
                n_ex = 0
                for u in range(i, j):
                    r = seg[u]
                    if ends[r] - starts[r] <= off + 8:
                        lens[n_ex] = ends[r] - starts[r]
                        order[lo + i + n_ex] = r
                        n_ex += 1
                if n_ex > 1:
                    by_len = np.argsort(lens[:n_ex], kind="mergesort")
                    tmp = order[lo + i : lo + i + n_ex].copy()
                    for u in range(n_ex):
                        order[lo + i + u] = tmp[by_len[u]]
                        if u > 0 and lens[by_len[u]] != lens[by_len[u - 1]]:
                            new[lo + i + u] = True
                c = lo + i + n_ex
                for u in range(i, j):
                    r = seg[u]
                    if ends[r] - starts[r] > off + 8:
                        order[c] = r
                        c += 1
                n_long = j - i - n_ex
                if n_long > 0:
                    new[lo + i + n_ex] = True
                if n_long > 1:
                    stack[top, 0], stack[top, 1], stack[top, 2] = lo + i + n_ex, lo + j, off + 8
                    top += 1
            i = j
    c = -1
    for i in range(n):
        if new[i]:
            c += 1
        rank[order[i]] = c
    return rank


def lexicographic_rank(strings: list[str]) -> np.ndarray:
    """int64 dense rank of each string in lexicographic (UTF-8 byte, i.e. code point) order."""
    if not strings:
        return np.zeros(0, dtype=np.int64)
    joined = utf8("\n".join(strings))
    buf = np.frombuffer(joined, dtype=np.uint8)
    lengths = np.fromiter(map(len, strings), dtype=np.int64, count=len(strings))
    if buf.shape[0] != int(lengths.sum()) + len(strings) - 1:  # non-ASCII: byte lengths differ
        lengths = np.fromiter((len(utf8(s)) for s in strings), dtype=np.int64, count=len(strings))
    ends = np.cumsum(lengths + 1) - 1
    starts = ends - lengths
    return lex_rank(buf, starts, ends)


def dataset_docids(ds, line_offset: int = 0) -> list[str]:
    """The `# docid = X` of each row of a Dataset, or its line number where the line had none (its
    1-based row for data made from arrays, which has no lines). line_offset: the lines before the
    file's first (a part after others: its lines numbered as in the parts' concatenation)."""
    lines = ds.line.tolist() if ds.line is not None else range(1, ds.n_rows + 1)
    return [d if d is not None else str(line + line_offset) for d, line in zip(ds.docids(), lines)]


def dataset_tiebreak(ds, convention: str):
    """The tiebreak `rankkit eval` uses on a data file: trec_eval's (docid descending) under the
    trec convention, file order otherwise (None)."""
    return lexicographic_rank(dataset_docids(ds)) if getattr(convention, "name", convention) == "trec" else None
