"""Read and write SVMlight / LETOR text files.

    <label> [qid:<int>] <index>:<value> ... [# comment, e.g. docid = X]

Accepted: gzip/bz2/xz by file extension and `-` for standard input; comments and blank lines;
CRLF line endings and trailing white space; 1-based indices (0-based with `zero_based=True`);
files without qid (the whole file is one query, unless a group file gives its queries:
`rankkit.io.groups`, LightGBM's `FILE.query` / XGBoost's `FILE.group`). The documents of one query must be contiguous;
queries may come in any qid order. A qid that comes back after another query is an error unless
`group_queries=True`, which gathers each query's documents (stable, in order of first appearance)
and records the permutation in `Dataset.order`.

The byte loop is the Numba kernel in `parse.py`; files are opened by `rankkit.io.files` (plain,
compressed, stdin, URLs) and group files found by `rankkit.io.groups`; this module maps kernel
status codes to one-line errors (`path:line: message`) and builds the Dataset. `read_svmlight` is
the one function every face opens a data file with.
"""

from __future__ import annotations

import hashlib
import math
import os
import stat
import threading
from typing import BinaryIO

import numpy as np

from rankkit import threads
from rankkit.data import DECIMAL_SCALES, Dataset
from rankkit.errors import DataError
from rankkit.io import parse as K
from rankkit.io import files as F
from rankkit.io import groups as G
from rankkit.io.files import display_name, is_url, iter_blocks, read_bytes  # (the last two: also for callers)
from rankkit.text import printable, utf8

_MESSAGES = {
    K.BAD_LABEL: "label '{tok}' is not a number",
    K.NONFINITE_LABEL: "label '{tok}' is not finite",
    K.BAD_QID: "qid '{tok}' is not an integer",
    K.QID_TOO_LARGE: "qid '{tok}' is too large (at most 9223372036854775807 in absolute value)",
    K.MISSING_COLON: "token '{tok}' is not of the form index:value (missing ':')",
    K.BAD_INDEX: "feature index '{tok}' is not an integer",
    K.INDEX_ZERO: "feature index '{tok}' is out of range: indices are 1-based (use --zero-based for 0-based files)",
    K.INDEX_TOO_LARGE: "feature index '{tok}' is too large (at most {extra}: the number of features, largest index + 1, must fit a 32-bit integer)",
    K.NOT_INCREASING: "feature index '{tok}' is not greater than the previous index {extra} (indices must be strictly increasing)",
    K.BAD_VALUE: "feature value '{tok}' is not a number",
    K.NULL_VALUE: "feature value '{tok}' is a missing value; rankkit needs numbers (replace NULL, e.g. by 0, or use the file's 'min' or 'Querylevelnorm' variant)",
    K.NONFINITE_VALUE: "feature value '{tok}' is not finite",
}

def last_line_end(block: bytes) -> int:
    """Offset just past the last complete line end in `block` (LF, CR LF, or a lone CR), 0 if
    none. A CR in the last byte does not count: an LF may follow in the next block."""
    return max(block.rfind(b"\n"), block.rfind(b"\r", 0, len(block) - 1)) + 1


def count_line_ends(block: bytes, end: int | None = None) -> int:
    """Line ends (LF, CR LF, lone CR) in block[:end]; `end` must not fall inside a CR LF."""
    end = len(block) if end is None else end
    return block.count(b"\n", 0, end) + block.count(b"\r", 0, end) - block.count(b"\r\n", 0, end)


def _token(buf: np.ndarray, start: int, end: int) -> str:
    return printable(bytes(buf[start:end]).decode("utf-8", "replace"))


def parse_bytes(
    buf: np.ndarray,
    source: str = "<data>",
    zero_based: bool = False,
    group_queries: bool = False,
    labels_optional: bool = False,
    groups=None,
    narrow_indices: bool = False,
    narrow_values: bool = False,
) -> Dataset:
    """Parse an SVMlight/LETOR buffer (uint8) into a validated Dataset. `groups` (a
    rankkit.io.groups.Groups) gives the queries of a file without qid, or must agree with its qids.
    narrow_indices: uint16 column indices when every column is below NARROW_INDEX_LIMIT.
    narrow_values: int32 decimal codes when every value is exactly one (see decimal_values)."""
    arrays = list(_parse_chunked(buf, source, zero_based, labels_optional, _n_chunks(buf.shape[0])))
    if narrow_indices and _fits_narrow(arrays[1]):
        arrays[1] = _narrow_in_place(arrays[1])
    scale = 1.0
    if narrow_values:
        arrays[0], scale = decimal_values(arrays[0])
    docids = _compact_spans(buf, arrays[-1]) if bool(np.any(arrays[-1][:, 0] >= 0)) else None
    return _build_dataset(arrays[:-1], docids, buf.shape[0] == 0, source, group_queries, groups, scale)


def decimal_values(data: np.ndarray) -> tuple[np.ndarray, float]:
    """(int32 codes k, scale 10**d) when every value of `data` is exactly the double k / 10**d
    (checked value by value: the codes give back the very same doubles), with the smallest such d;
    else (data, 1.0). No value is rounded: a file of LETOR's `%.6f` values, counts or 0/1 features
    qualifies, one of full-precision doubles does not."""
    if data.shape[0] == 0:
        return data, 1.0
    codes = np.empty(data.shape[0], dtype=np.int32)
    digits, coded = _code_into(data, codes, 0, 0)
    return (codes, DECIMAL_SCALES[digits]) if coded == data.shape[0] else (data, 1.0)


def _code_into(values, codes, lo, digits) -> tuple[int, int]:
    """Store `values` as codes[lo:lo + len(values)] with `digits` decimals, or more when a value
    needs them (codes[:lo] and those of `values` done so far multiplied up first: exact while they
    fit int32). Returns (d, how many of `values` were coded): all of them, or fewer when the rest
    cannot be coded (codes[:lo + that many] then hold the values with d decimals)."""
    n = values.shape[0]
    out = codes[lo : lo + n]
    i = 0
    while True:
        i += K.decimal_codes(values[i:], DECIMAL_SCALES[digits], out[i:])
        if i == n:
            return digits, n
        d = int(K.min_decimal_digits(values[i:], digits))  # value i needs more digits than `digits`
        if d < 0:
            return digits, i
        done = codes[: lo + i]
        big = max(abs(int(done.max())), abs(int(done.min()))) if lo + i else 0
        if big * 10 ** (d - digits) > K.INT32_MAX:  # the codes so far would not fit with d digits
            return digits, i
        done *= np.int32(10 ** (d - digits))  # exact: k / 10**digits == (k 10**(d - digits)) / 10**d
        digits = d


def _build_dataset(arrays, docids, empty_input: bool, source: str, group_queries: bool, groups,
                   value_scale: float = 1.0) -> Dataset:
    """The Dataset from the parsed arrays: qid checks, group files, --group-queries, docids
    ((bytes, spans) or None); value_scale: data holds decimal codes of that scale (else 1.0)."""
    data, indices, indptr, y, qid, flags, line_no = arrays
    docspan = docids[1] if docids is not None else None
    has_qid = flags & K.FLAG_QID
    labelled = (flags & K.FLAG_LABEL) != 0
    n, nnz = y.shape[0], data.shape[0]
    if n == 0:
        what = "is empty" if empty_input else "has no data lines (only blank lines or comments)"
        raise DataError(source, what)

    with_qid = int(has_qid.sum())
    if 0 < with_qid < n:
        bad = int(np.argmin(has_qid)) if has_qid[0] else int(np.argmax(has_qid))
        which = "has no qid but other lines do" if has_qid[0] else "has a qid but earlier lines do not"
        raise DataError(source, f"line {which} (every line needs qid:<int>, or none)", int(line_no[bad]))
    numbered_by = None  # the group file that numbered the queries of a file without qids
    if groups is not None:
        if not with_qid:
            numbered_by = groups.source
        qid = G.apply(groups, qid, bool(with_qid), source, line_no)
        with_qid = n

    order = None
    blocks = K.query_blocks(qid)
    starts = blocks[:-1]
    block_qids = qid[starts]
    uniq, first_block = np.unique(block_qids, return_index=True)
    if uniq.shape[0] != block_qids.shape[0]:
        if not group_queries:
            seen = np.zeros(block_qids.shape[0], dtype=bool)
            seen[first_block] = True
            b = int(np.argmin(seen))  # first block whose qid was seen before
            q = int(block_qids[b])
            first_line = int(line_no[starts[first_block[np.searchsorted(uniq, q)]]])
            raise DataError(
                source,
                f"qid {q} appears again after other queries (first seen at line {first_line}); "
                "a query's documents must be contiguous, or pass --group-queries to gather them",
                int(line_no[starts[b]]),
            )
        rank_of_qid = np.empty(uniq.shape[0], dtype=np.int64)
        rank_of_qid[np.argsort(first_block, kind="stable")] = np.arange(uniq.shape[0])
        key = rank_of_qid[np.searchsorted(uniq, qid)]
        order = np.argsort(key, kind="stable").astype(np.int64)
        data, indices, indptr = _take_rows(data, indices, indptr, order)
        y, qid, line_no = y[order], qid[order], line_no[order]
        if docspan is not None:
            docspan = docspan[order]
        labelled = labelled[order]
        blocks = K.query_blocks(qid)

    n_features = int(indices.max()) + 1 if nnz else 0
    ds = Dataset(
        data=data,
        indices=indices,
        indptr=indptr,
        y=y,
        qid=qid,
        qptr=blocks,
        n_features=n_features,
        source=source,
        line=line_no,
        has_qid=bool(with_qid),
        labelled=None if bool(labelled.all()) else labelled,
        order=order,
        group_file=numbered_by,
        value_scale=value_scale,
    )
    if docids is not None:
        ds.docid_buf, ds.docid_spans = docids[0], docspan
    return ds.validate()


# Files below this size are parsed as one chunk; above it, in chunks of at least this size.
PARALLEL_MIN_BYTES = 4 << 20


def _n_chunks(size: int) -> int:
    if size < PARALLEL_MIN_BYTES:
        return 1
    return int(max(2, min(4 * threads.count(), size // PARALLEL_MIN_BYTES)))


def _raise_status(buf, source, code, line, start, end, extra):
    if code == K.OVER_CAPACITY:  # the counting pass saw fewer rows or values than the parsing pass
        raise DataError(source, "changed while being read (its content changed between the reader's two passes); "
                                "read it again once it is complete")
    raise DataError(source, _MESSAGES[code].format(tok=_token(buf, start, end), extra=extra), line)


def _check_status(buf, source, status, line_before, bounds) -> None:
    """Raise the first error of the chunks, in file order."""
    for c in range(status.shape[0]):
        if status[c, 0] != K.OK:
            code, line, start, end, extra = (int(v) for v in status[c])
            _raise_status(buf, source, code, line + int(line_before[c]), start + int(bounds[c]), end + int(bounds[c]), extra)


def _exclusive_cumsum(a: np.ndarray) -> np.ndarray:
    out = np.zeros(a.shape[0], dtype=np.int64)
    np.cumsum(a[:-1], out=out[1:])
    return out


def _row_arrays(n: int, nnz: int, index_dtype=np.int32, n_indices: int | None = None, n_spans: int | None = None):
    """The arrays the parser fills for n rows and nnz values: data, indices (n_indices of them,
    default nnz), indptr (zeroed), y, qid, has_qid, line_no, docid spans (n_spans rows, default n)."""
    return (np.empty(nnz, dtype=np.float64), np.empty(nnz if n_indices is None else n_indices, dtype=index_dtype),
            np.zeros(n + 1, dtype=np.int64),
            np.empty(n, dtype=np.float64), np.empty(n, dtype=np.int64), np.empty(n, dtype=np.uint8),
            np.empty(n, dtype=np.int64), np.empty((n if n_spans is None else n_spans, 2), dtype=np.int64))


def _read_only(buf: np.ndarray) -> np.ndarray:
    """buf, or a read-only view of it: the reader's kernels always get a read-only buffer (bytes
    from a pipe or a decompressor are one; a file's own blocks are not), so each is compiled for
    one type of buffer, not two (the ahead-of-time build: three kernels fewer)."""
    if not buf.flags.writeable:
        return buf
    view = buf.view()
    view.flags.writeable = False
    return view


def _parse_chunked(buf, source, zero_based, labels_optional, n_chunks):
    """Parse chunks of lines on all cores: an exact count of rows and non-zeros per chunk, then
    every chunk parses straight into its final place. The result does not depend on n_chunks."""
    buf = _read_only(buf)
    # one chunk runs on this thread (rankkit.threads.run), through the same kernels as many: one
    # compiled entry each (cold start, the ahead-of-time build), not a serial twin
    bounds = K.chunk_bounds(buf, n_chunks)
    counts = np.zeros((n_chunks, 3), dtype=np.int64)
    K.count_chunks(buf, bounds, bool(labels_optional), counts)
    rows_at, nnz_at = _exclusive_cumsum(counts[:, 0]), _exclusive_cumsum(counts[:, 1])
    line_before = _exclusive_cumsum(counts[:, 2])
    n, nnz = int(counts[:, 0].sum()), int(counts[:, 1].sum())
    data, indices, indptr, y, qid, has_qid, line_no, docspan = _row_arrays(n, nnz)
    slow = np.empty((n + nnz, 4), dtype=np.int64)
    status = np.zeros((n_chunks, 5), dtype=np.int64)
    parsed = np.zeros((n_chunks, 3), dtype=np.int64)
    K.parse_chunks(
        buf, bounds, bool(zero_based), bool(labels_optional), counts, rows_at, nnz_at, line_before, rows_at + nnz_at,
        data, indices, indptr, y, qid, has_qid, line_no, docspan, slow, status, parsed,
    )
    _check_status(buf, source, status, line_before, bounds)
    if not np.array_equal(parsed[:, :2], counts[:, :2]):  # cannot happen: exact for a file the parser accepts
        raise RuntimeError("reader: chunk counts disagree with the parser")
    if parsed[:, 2].any():
        pieces = []
        for c in range(n_chunks):
            s0 = int(rows_at[c] + nnz_at[c])
            sl = slow[s0 : s0 + int(parsed[c, 2])].copy()
            sl[:, 1] += np.where(sl[:, 0] == 0, nnz_at[c], rows_at[c])
            sl[:, 2:] += bounds[c]
            pieces.append(sl)
        _convert_slow_numbers(buf, np.concatenate(pieces), data, y, line_no, indptr, source)
    return data, indices, indptr, y, qid, has_qid, line_no, docspan


# Plain files at least this large are read once, in blocks (each counted, then parsed), so that only
# one block of their bytes is in memory: the reader's memory is the arrays plus one block. 8 MB blocks
# read as fast as 32 MB ones (two chunks for two threads each) and keep 24 MB less in memory.
STREAM_MIN_BYTES = 16 << 20
STREAM_BLOCK_BYTES = 8 << 20


def _changed(name: str, detail: str) -> DataError:
    return DataError(name, f"changed while being read ({detail}); read it again once it is complete")


def _read_at(fd: int, buf: np.ndarray, offset: int, length: int, size: int, name: str) -> None:
    view = memoryview(buf)
    got = 0
    while got < length:
        n = os.preadv(fd, [view[got:length]], offset + got)
        if not n:
            raise _changed(name, f"it shrank from {size} to {offset + got} bytes")
        got += n


def _last_line_end(view: np.ndarray) -> int:
    """last_line_end() of a uint8 array, searching back from its end in steps (no copy)."""
    n = view.shape[0]
    hi = n
    step = 1 << 16
    while hi > 0:
        lo = max(0, hi - step)
        seg = view[lo:hi]
        lf = np.flatnonzero(seg == 10)
        cr = np.flatnonzero(seg[: max(0, min(hi, n - 1) - lo)] == 13)  # not a CR in the last byte
        end = max(lo + int(lf[-1]) + 1 if lf.size else 0, lo + int(cr[-1]) + 1 if cr.size else 0)
        if end:
            return end
        hi = lo
    return 0


def _count_block(view: np.ndarray, labels_optional: bool):
    """(chunk bounds, counts) of one block."""
    view = _read_only(view)
    nc = _n_chunks(view.shape[0])
    bounds = K.chunk_bounds(view, nc)
    counts = np.zeros((nc, 3), dtype=np.int64)
    K.count_chunks(view, bounds, bool(labels_optional), counts)
    return bounds, counts


class FileDigest:
    """SHA-256 and byte count of the bytes read (pass as read_svmlight's `digest`).

    later=True: a plain file large enough to be read in blocks is not hashed as its blocks are
    counted (where the hash, slower than the count, held one of two cores) but once it is parsed,
    from a third read on a thread of its own while the caller goes on (a serial fit: Pegasos'
    steps leave the other core idle); the file must still have the size and modification time it
    was parsed at when the hash is done, as at the end of the reader's pass. nbytes and
    hexdigest() wait for it, and raise the reader's DataError if the file changed meanwhile (so a
    model never records the checksum of other bytes than it was trained on). Any other input (a
    small, compressed or piped one) is hashed as it is read, as without it."""

    def __init__(self, later: bool = False):
        self._sha = hashlib.sha256()
        self._nbytes = 0
        self.later = bool(later)
        self._pending = None  # the thread hashing the file after its parse
        self._error: Exception | None = None

    def update(self, data) -> None:
        self._sha.update(data)
        self._nbytes += memoryview(data).nbytes

    @property
    def nbytes(self) -> int:
        self.wait()
        return self._nbytes

    def hexdigest(self) -> str:
        self.wait()
        return self._sha.hexdigest()

    def wait(self) -> None:
        """Wait for a hash started after the parse (later=True); raise its error, if any."""
        if self._pending is not None:
            self._pending.join()
            self._pending = None
        if self._error is not None:
            raise self._error

    def hash_file_later(self, fd: int, st: os.stat_result, path: str, name: str) -> None:
        """Hash the file open as `fd` (a descriptor of its own, closed when done) from its start,
        on a thread (on this one if none can be started); it must still have st's size and
        modification time once read."""
        self._pending = _background(self._hash_file, fd, st, path, name)
        if self._pending is None:  # no thread can be started (ulimit -u): hash on this one
            self._hash_file(fd, st, path, name)

    def _hash_file(self, fd: int, st: os.stat_result, path: str, name: str) -> None:
        try:
            buf = bytearray(min(HASH_BLOCK_BYTES, max(st.st_size, 1)))
            view = memoryview(buf)
            off = 0
            while off < st.st_size:
                n = os.preadv(fd, [view[: min(len(buf), st.st_size - off)]], off)
                if not n:
                    raise _changed(name, f"it shrank from {st.st_size} to {off} bytes")
                self.update(view[:n])
                off += n
            after = os.fstat(fd)
            if (after.st_size, after.st_mtime_ns) != (st.st_size, st.st_mtime_ns):
                raise _changed(name, "its size or modification time changed")
        except DataError as exc:
            self._error = exc
        except (OSError, EOFError) as exc:
            self._error = F.input_error(path, exc)
        except BaseException as exc:  # (MemoryError, ...) raised by wait(), never a partial hash taken for the file's
            self._error = exc
        finally:
            os.close(fd)


# FileDigest(later=True) reads the file again in blocks of this size to hash it
HASH_BLOCK_BYTES = 1 << 20


def _background(target, *args):
    """target(*args) on a daemon thread, started; None if no thread can be started."""
    t = threading.Thread(target=target, args=args, daemon=True)
    try:
        t.start()
    except RuntimeError:
        return None
    return t


def _hash_beside(digest, view: np.ndarray):
    """digest.update(view) in a thread (hashlib releases the GIL, the count kernel runs without it);
    returns the thread to join before the buffer is reused."""
    t = threading.Thread(target=digest.update, args=(memoryview(view),), daemon=True)
    try:
        t.start()
    except RuntimeError:  # no thread can be started (ulimit -u): hash on this one
        digest.update(memoryview(view))
        return _Done()
    return t


class _Done:
    """A hashing that already happened (what _hash_beside returns when it could not start a thread)."""

    def join(self) -> None:
        pass


# Column indices below this fit uint16: what read_svmlight(narrow_indices=True) keeps them as.
NARROW_INDEX_LIMIT = 1 << 16


def _fits_narrow(indices: np.ndarray) -> bool:
    """Every (non-negative) column index below NARROW_INDEX_LIMIT."""
    return indices.shape[0] == 0 or int(indices.max()) < NARROW_INDEX_LIMIT


def _narrow_in_place(indices: np.ndarray) -> np.ndarray:
    """The int32 column indices (all in [0, NARROW_INDEX_LIMIT)) as uint16, in the first half of
    their own memory, the second half given back: no second array at any time. Copied forwards
    in slices: slice [lo, hi) goes to bytes [2 lo, 2 hi), which hold int32 entries below hi / 2,
    all copied already (NumPy buffers a slice whose source and destination overlap)."""
    nnz = indices.shape[0]
    if nnz == 0 or not indices.flags.owndata:
        return indices.astype(np.uint16)
    narrow = indices.view(np.uint16)
    step = 1 << 20
    for lo in range(0, nnz, step):
        hi = min(nnz, lo + step)
        narrow[lo:hi] = indices[lo:hi]
    del narrow
    indices.resize((nnz + 1) // 2, refcheck=False)  # no view of it exists (only this function's)
    return indices.view(np.uint16)[:nnz]


def _grown(arr: np.ndarray, used: int, need: int) -> np.ndarray:
    """`arr` with room for at least `need` rows (entries): itself, or a new array of that many with
    arr[:used] copied. Never filled: the new rows stay unwritten (not in memory) until the parser
    writes them."""
    if arr.shape[0] >= need:
        return arr
    out = np.empty((need,) + arr.shape[1:], dtype=arr.dtype)
    out[:used] = arr[:used]
    return out


def _trimmed(arr: np.ndarray, n: int) -> np.ndarray:
    """arr[:n] as an array of its own of exactly n rows: `arr` shrunk in place (realloc; its tail,
    never written, given back without a copy) when it owns its memory, else copied."""
    if arr.shape[0] == n:
        return arr
    if not arr.flags.owndata or not arr.flags.c_contiguous:
        return arr[:n].copy()
    arr.resize((n,) + arr.shape[1:], refcheck=False)  # no view of it is kept (only the reader's, gone)
    return arr


# The first blocks fix how many rows and non-zeros the arrays have room for (the counts so far, per
# byte, times the file's size), with this margin: a later block with more per byte grows them once.
_ROOM_MARGIN = 1.0625


def _room(need: int, read: int, size: int, room: int) -> int:
    """Rows (or non-zeros) to make room for when `need` of them, counted in the first `read` bytes
    of `size`, outgrow `room`: their rate so far over the whole file (with _ROOM_MARGIN), and at
    least half as many again as `room` (a file denser towards its end grows them a few times, not
    once a block)."""
    return max(need, int(math.ceil(need / max(read, 1) * size * _ROOM_MARGIN)) + 1, room + room // 2)


def _parse_streaming(fd: int, size: int, name: str, zero_based: bool, labels_optional: bool,
                     block_bytes: int | None = None, digest=None, narrow: bool = False, narrow_values: bool = False):
    """The arrays of parse_bytes, and docids, from a plain file read in blocks, in one pass: each
    block is read once, counted (exactly: its rows and non-zeros) and parsed into its place in
    arrays that have room for the rows and non-zeros the blocks so far predict for the whole file
    (np.empty: the room no block fills is never written, so never in memory, and is given back at
    the end without a copy; a block beyond the room grows them). Memory: the arrays plus one block.
    (perf, issue 39: a counting pass over the whole file before the parse read every byte twice.)
    `digest` (a hashlib object) is updated with every byte of the file, in order. `narrow`:
    column indices as uint16 while they all fit (each block parsed into an int32 scratch of the
    block's size and copied down; the first block with a larger column widens them to int32).
    `narrow_values`: values as int32 decimal codes k / 10**d while every value is exactly one
    (decimal_values; each block parsed into a float64 scratch of the block's size, checked and
    coded; d grows when a block needs more digits, the codes so far multiplied up; the first block
    that cannot be coded turns the values into float64 once). Returns (arrays, docids, scale)."""
    block_bytes = block_bytes or STREAM_BLOCK_BYTES
    buf = np.empty(min(size, block_bytes), dtype=np.uint8)
    coding = narrow_values
    data = np.empty(0, dtype=np.int32 if coding else np.float64)
    indices = np.empty(0, dtype=np.uint16 if narrow else np.int32)
    indptr = np.empty(1, dtype=np.int64)
    y, qid, line_no = np.empty(0), np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    has_qid = np.empty(0, dtype=np.uint8)
    docspan = None  # the whole file's docid spans, only once a block has a docid
    # one block's scratch arrays, kept (and grown) across blocks: docid spans, slow literals,
    # int32 column indices before they are copied down to uint16 (narrow), float64 values before
    # they are coded (coding: `digits` is their d)
    bspans = np.empty((0, 2), dtype=np.int64)
    slow = np.empty((0, 4), dtype=np.int64)
    scratch = np.empty(0, dtype=np.int32) if narrow else None
    vscratch, digits = (np.empty(0, dtype=np.float64) if coding else None), 0
    pieces, piece_bytes, any_docid = [], 0, False
    row0 = nnz0 = line0 = 0
    off = 0
    cap = block_bytes
    # the thread hashing the last block (started once it is read, it runs beside the block's count
    # and parse, whose chunks the other threads take in turn: threads.run_each), joined before
    # the next block is read into the buffer: every block's own bytes hashed, in file order
    hashing = None
    while off < size:
        length = min(cap, size - off)
        if hashing is not None:
            hashing.join()
            hashing = None
        if buf.shape[0] < length:
            buf = np.empty(length, dtype=np.uint8)
        _read_at(fd, buf, off, length, size, name)
        view = buf[:length]
        if off + length < size:
            cut = _last_line_end(view)
            if cut == 0:  # a line longer than the block: a larger block
                cap *= 2
                continue
            view = view[:cut]
        hashing = _hash_beside(digest, view) if digest is not None else None
        bounds, counts = _count_block(view, labels_optional)
        view = _read_only(view)
        nc = counts.shape[0]
        block_rows, block_nnz = int(counts[:, 0].sum()), int(counts[:, 1].sum())
        row1, nnz1 = row0 + block_rows, nnz0 + block_nnz
        read = off + view.shape[0]
        if row1 > y.shape[0]:
            rows = _room(row1, read, size, y.shape[0])
            y, qid, line_no = _grown(y, row0, rows), _grown(qid, row0, rows), _grown(line_no, row0, rows)
            has_qid, indptr = _grown(has_qid, row0, rows), _grown(indptr, row0 + 1, rows + 1)
            if docspan is not None:
                docspan = _grown(docspan, row0, rows)
        if nnz1 > data.shape[0]:
            room = _room(nnz1, read, size, data.shape[0])
            data, indices = _grown(data, nnz0, room), _grown(indices, nnz0, room)
        bspans = _grown(bspans, 0, block_rows)
        slow = _grown(slow, 0, block_rows + block_nnz)
        if scratch is not None:
            scratch = _grown(scratch, 0, block_nnz)
        if vscratch is not None:
            vscratch = _grown(vscratch, 0, block_nnz)
        # the block is parsed into views of its own rows and non-zeros (positions relative to them)
        rows_at = _exclusive_cumsum(counts[:, 0])
        nnz_at = _exclusive_cumsum(counts[:, 1])
        line_before = line0 + _exclusive_cumsum(counts[:, 2])
        slow_at = _exclusive_cumsum(counts[:, 0] + counts[:, 1])
        status = np.zeros((nc, 5), dtype=np.int64)
        parsed = np.zeros((nc, 3), dtype=np.int64)
        narrowing = indices.dtype == np.uint16
        block_indices = scratch[:block_nnz] if narrowing else indices[nnz0:nnz1]
        block_data = vscratch[:block_nnz] if coding else data[nnz0:nnz1]
        block_indptr = indptr[row0 : row1 + 1]
        block_y, block_line = y[row0:row1], line_no[row0:row1]
        K.parse_chunks(view, bounds, bool(zero_based), bool(labels_optional), counts, rows_at, nnz_at, line_before,
                       slow_at, block_data, block_indices, block_indptr, block_y, qid[row0:row1], has_qid[row0:row1],
                       block_line, bspans[:block_rows], slow, status, parsed)
        _check_status(view, name, status, line_before, bounds)
        if not np.array_equal(parsed[:, :2], counts[:, :2]):  # cannot happen: count and parse read the same bytes
            raise RuntimeError("reader: block counts disagree with the parser")
        if parsed[:, 2].any():
            sl_pieces = []
            for c in range(nc):
                sl = slow[int(slow_at[c]): int(slow_at[c] + parsed[c, 2])].copy()
                sl[:, 1] += np.where(sl[:, 0] == 0, nnz_at[c], rows_at[c])
                sl[:, 2:] += bounds[c]
                sl_pieces.append(sl)
            _convert_slow_numbers(view, np.concatenate(sl_pieces), block_data, block_y, block_line, block_indptr, name)
        block_indptr += nnz0  # row pointers into the whole file's non-zeros
        if coding:
            coding, digits, data = _code_block(block_data, data, nnz0, nnz1, digits)
            if not coding:
                vscratch = None
        if narrowing:
            if _fits_narrow(block_indices):
                indices[nnz0:nnz1] = block_indices
            else:  # a column past uint16: int32 from here on (the narrow part widened once)
                wide = np.empty(indices.shape[0], dtype=np.int32)
                wide[:nnz0] = indices[:nnz0]
                wide[nnz0:nnz1] = block_indices
                indices, scratch = wide, None
        spans = bspans[:block_rows]
        if bool(np.any(spans[:, 0] >= 0)):
            piece, new = _compact_spans(view, spans)
            new[new[:, 0] >= 0] += piece_bytes
            if docspan is None:  # the first docid: the rows before it have none (the room after: written block by block)
                docspan = np.empty((y.shape[0], 2), dtype=np.int64)
                docspan[:row0] = -1
            docspan[row0:row1] = new
            pieces.append(piece)
            piece_bytes += len(piece)
            any_docid = True
        elif docspan is not None:  # a block without docids after one with
            docspan[row0:row1] = -1
        row0, nnz0, line0 = row1, nnz1, line0 + int(counts[:, 2].sum())
        off += view.shape[0]
    if hashing is not None:
        hashing.join()
    # no view of the arrays is left (they are trimmed in place)
    block_indices = block_data = block_indptr = block_y = block_line = spans = None
    n, nnz = row0, nnz0
    if coding and nnz == 0:  # no value: float64, as without narrow_values
        data, coding = np.empty(0, dtype=np.float64), False
    data, indices, indptr = _trimmed(data, nnz), _trimmed(indices, nnz), _trimmed(indptr, n + 1)
    y, qid, has_qid, line_no = _trimmed(y, n), _trimmed(qid, n), _trimmed(has_qid, n), _trimmed(line_no, n)
    indptr[n] = nnz
    docids = (b"".join(pieces), _trimmed(docspan, n)) if any_docid else None
    scale = DECIMAL_SCALES[digits] if coding else 1.0
    return (data, indices, indptr, y, qid, has_qid, line_no), docids, scale


def _code_block(values, codes, lo, hi, digits):
    """Store one block's float64 values as codes[lo:hi] (_code_into). (True, d, codes), or, when
    the values cannot all be coded, (False, 0, the float64 values of the whole file so far: the
    codes decoded, the rest of this block copied)."""
    digits, coded = _code_into(values, codes, lo, digits)
    if coded == hi - lo:
        return True, digits, codes
    # not every value is a decimal code: float64 values from here on (the codes so far decoded once)
    wide = np.empty(codes.shape[0], dtype=np.float64)
    np.divide(codes[: lo + coded], DECIMAL_SCALES[digits], out=wide[: lo + coded])
    wide[lo + coded : hi] = values[coded:]
    return False, 0, wide


def _read_streaming(path: str, name: str, zero_based: bool, labels_optional: bool, digest=None, narrow=False,
                    narrow_values=False):
    """(arrays, docids, size, value scale) of a large plain file read in blocks; None if `path` is not a plain
    regular file of at least STREAM_MIN_BYTES (then the whole-buffer reader is used)."""
    if path == "-" or is_url(path) or F.compression(path) is not None:
        return None
    try:
        with open(path, "rb", buffering=0) as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_size < STREAM_MIN_BYTES:
                return None
            later = digest is not None and getattr(digest, "later", False)
            arrays, docids, scale = _parse_streaming(fh.fileno(), st.st_size, name, zero_based, labels_optional,
                                                     digest=None if later else digest, narrow=narrow,
                                                     narrow_values=narrow_values)
            after = os.fstat(fh.fileno())
            if (after.st_size, after.st_mtime_ns) != (st.st_size, st.st_mtime_ns):
                raise _changed(name, "its size or modification time changed")
            if later:  # the hash on a thread of its own, from a descriptor of its own (the same open file)
                digest.hash_file_later(os.dup(fh.fileno()), st, path, name)
            return arrays, docids, st.st_size, scale
    except (OSError, EOFError) as exc:
        raise F.input_error(path, exc) from None


def _compact_spans(buf: np.ndarray, spans: np.ndarray) -> tuple[bytes, np.ndarray]:
    """Copy the docid bytes out of the file buffer so the buffer can be freed."""
    has = spans[:, 0] >= 0
    lengths = np.where(has, spans[:, 1] - spans[:, 0], 0)
    starts = np.zeros(spans.shape[0], dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    src = np.repeat(spans[:, 0] - starts, lengths) + np.arange(int(lengths.sum()))
    new = np.stack([starts, starts + lengths], axis=1)
    new[~has] = -1
    return buf[src].tobytes(), new


def _convert_slow_numbers(buf, slow, data, y, line_no, indptr, source):
    """Convert the literals the kernel could not do exactly, with Python's correctly rounded float()."""
    for kind, position, start, end in slow.tolist():
        text = bytes(buf[start:end]).decode("ascii", "replace")
        value = float(text)
        if not np.isfinite(value):
            row = position if kind == 1 else int(np.searchsorted(indptr, position, side="right") - 1)
            what = "label" if kind == 1 else "feature value"
            raise DataError(source, f"{what} '{text}' is not finite (overflows a double)", int(line_no[row]))
        if kind == 0:
            data[position] = value
        else:
            y[position] = value


def _take_rows(data, indices, indptr, order):
    lengths = np.diff(indptr)[order]
    new_indptr = np.zeros(order.shape[0] + 1, dtype=np.int64)
    np.cumsum(lengths, out=new_indptr[1:])
    src = np.repeat(indptr[:-1][order] - new_indptr[:-1], lengths) + np.arange(new_indptr[-1])
    return data[src], indices[src], new_indptr


def read_svmlight(
    path: str, zero_based: bool = False, group_queries: bool = False, labels_optional: bool = False,
    groups: str | None = "auto", log=None, digest=None, narrow_indices: bool = False, narrow_values: bool = False,
) -> Dataset:
    """Read an SVMlight/LETOR file (plain, .gz, .bz2, .xz, `-` for stdin, or a URL fsspec reads).

    The one way rankkit opens a data file, whatever the face: `rankkit train/predict/eval/path`,
    `rankkit.load_letor`, the parts of `train PARTS...` in one process and each part on a Dask
    worker (rankkit.parts.worker), so that a file gives the same Dataset everywhere: its
    group file, its compression, the same messages.

    With labels_optional, a line may start directly with qid:/features (label taken as 0).
    `groups`: "auto" uses a group file next to `path` (FILE.query, FILE.group: rankkit.io.groups),
    None ignores any, a path names one, a Groups is used as it is. `log` is told which was used.
    `digest` (a hashlib object, e.g. hashlib.sha256()) is updated with the file's (decompressed)
    bytes, so that a caller needing their checksum does not hold or read them again.

    A plain file of at least STREAM_MIN_BYTES is read in blocks (memory: the arrays plus one
    block); others are read whole.

    narrow_indices: column indices as uint16 (half their memory) when every column is below
    NARROW_INDEX_LIMIT, for a caller whose kernels take either type (`rankkit train` with an exact
    linear solver); int32 otherwise, and always without it.

    narrow_values: values as int32 decimal codes (Dataset.value_scale; half their memory) when
    every value of the file is exactly k / 10**d for an int32 k and one d <= 9 (LETOR's `%.6f`
    values, counts, 0/1 features), checked value by value so that no value changes; float64
    otherwise, and always without it. For a caller whose kernels read `data[t] / value_scale`
    (`rankkit train` with a stochastic pairwise solver)."""
    name = display_name(path)
    G.refuse_group_file(path, hint=": give the data file")
    found = groups if isinstance(groups, G.Groups) else G.resolve(path, groups)
    streamed = _read_streaming(path, name, zero_based, labels_optional, digest, narrow_indices, narrow_values)
    if streamed is not None:  # a large plain file: read in blocks, never whole
        arrays, docids, size, scale = streamed
        ds = _build_dataset(arrays, docids, size == 0, name, group_queries, found, scale)
    else:
        buf = read_bytes(path)
        hashing = _hash_beside(digest, buf) if digest is not None else None
        ds = parse_bytes(buf, name, zero_based, group_queries, labels_optional, groups=found,
                         narrow_indices=narrow_indices, narrow_values=narrow_values)
        if hashing is not None:
            hashing.join()
        del buf
    if found is not None and log:
        log(found.describe(name))
    return ds


def format_number(v: float) -> str:
    """The shortest text that reads back to the same double (an integer without '.0')."""
    if math.isfinite(v) and v == int(v) and abs(v) < 1e15 and not (v == 0 and math.copysign(1.0, v) < 0):
        return str(int(v))
    return repr(float(v))  # shortest exact repr; keeps the sign of -0.0


def write_svmlight(fh: BinaryIO, ds: Dataset, zero_based: bool = False, write_qid: bool | None = None) -> None:
    """Write `ds` as SVMlight/LETOR text (shortest exact repr of every value; docids as comments)."""
    write_qid = ds.has_qid if write_qid is None else write_qid
    base = 0 if zero_based else 1
    docids = ds.docids()
    data, indices, indptr = ds.data.tolist(), ds.indices.tolist(), ds.indptr.tolist()
    for r in range(ds.n_rows):
        parts = [format_number(float(ds.y[r]))]
        if write_qid:
            parts.append(f"qid:{int(ds.qid[r])}")
        for t in range(indptr[r], indptr[r + 1]):
            parts.append(f"{indices[t] + base}:{format_number(data[t])}")
        if docids[r] is not None:
            parts.append(f"# docid = {docids[r]}")
        fh.write(utf8(" ".join(parts) + "\n"))


def parse_rows(buf: np.ndarray, source: str = "<data>", zero_based: bool = True, labels_optional: bool = False):
    """The rows of an SVMlight buffer as they are, with no query structure imposed (scattered
    qids, lines with and without qid): the arrays of `rankkit.load_svmlight_file`. Returns
    (data, indices, indptr, y, qid, has_qid bool[n], line_no, docid spans); same errors as
    parse_bytes, except an empty input, which is 0 rows."""
    data, indices, indptr, y, qid, flags, line_no, docspan = _parse_chunked(
        buf, source, zero_based, labels_optional, _n_chunks(buf.shape[0]))
    return data, indices, indptr, y, qid, (flags & K.FLAG_QID) != 0, line_no, docspan
