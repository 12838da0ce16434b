"""Reading and writing SVMlight / LETOR data from Python, with the command line's reader.

`load_svmlight_file`, `load_svmlight_files` and `dump_svmlight_file` have the signatures, return
values and semantics of their scikit-learn namesakes (`sklearn.datasets`), so that code written for
those runs unchanged and reads with rankkit's parallel parser. `load_letor` returns a whole LETOR
file: features, labels, query ids, docids and query offsets, as `rankkit train` reads it.

Errors are `rankkit.errors.DataError` (a ValueError, as scikit-learn raises), naming the file and
line: the same message the command line prints.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

from rankkit.config import __version__
from rankkit.data import Dataset, query_offsets
from rankkit.errors import DataError, UsageError
from rankkit.io.atomic import atomic_open, check_output
from rankkit.io.files import read_bytes
from rankkit.io.groups import existing, refuse_group_file
from rankkit.io.query_weights import weights_for
from rankkit.io.svmlight import format_number, parse_rows, read_svmlight

__all__ = ["LetorData", "load_svmlight_file", "load_svmlight_files", "dump_svmlight_file", "load_letor"]


# -- reading -----------------------------------------------------------------------------------------
def _name_of(f) -> str:
    if isinstance(f, (str, os.PathLike)):
        return os.fspath(f)
    if isinstance(f, int):
        return f"<fd {f}>"
    return str(getattr(f, "name", "<file>"))


def _read_all(f) -> np.ndarray:
    """The bytes of f (a path, a file descriptor or a binary file object) as a writable uint8 array;
    compressed files (.gz, .bz2, .xz) are decompressed by extension, as the command line does."""
    if isinstance(f, (str, os.PathLike)):
        return read_bytes(os.fspath(f))
    try:
        if isinstance(f, int):
            with os.fdopen(f, "rb", closefd=False) as fh:
                raw = fh.read()
        else:
            raw = f.read()
    except OSError as exc:
        raise DataError(_name_of(f), f"cannot read: {exc.strerror or exc}") from None
    if isinstance(raw, str):
        raise UsageError(f"{_name_of(f)}: open the file in binary mode ('rb'): SVMlight files are read as bytes")
    return np.frombuffer(bytearray(raw), dtype=np.uint8)


def _window(buf: np.ndarray, offset: int, length: int) -> tuple[int, int]:
    """scikit-learn's offset/length: skip `offset` bytes and the rest of the line they fall in
    (unless offset is 0), then read lines until one ends beyond offset + length (that one included)."""
    n = buf.shape[0]
    newlines = np.flatnonzero(buf == 10)

    def after_newline_from(pos: int) -> int:
        k = int(np.searchsorted(newlines, pos))
        return int(newlines[k]) + 1 if k < newlines.shape[0] else n

    start = 0 if offset <= 0 else after_newline_from(offset)
    # a line is read, then reading stops once the position passed offset + length: the first line
    # after `start` is always read
    end = n if length is None or length <= 0 else after_newline_from(max(offset + length, start))
    return start, max(start, end)


def _parse_rows(buf: np.ndarray, name: str, line_offset: int):
    try:
        return parse_rows(buf, name, zero_based=True)
    except DataError as exc:
        if line_offset and exc.line is not None:
            raise DataError(exc.path, exc.message, exc.line + line_offset) from None
        raise


def _one_file(f, *, offset, length):
    name = _name_of(f)
    if isinstance(f, (str, os.PathLike)):
        refuse_group_file(os.fspath(f), hint=": give the data file")
    buf = _read_all(f)
    start, end = _window(buf, offset, length)
    lines_before = int(np.count_nonzero(buf[:start] == 10)) if start else 0
    part = buf[start:end] if (start, end) != (0, buf.shape[0]) else buf
    if part.shape[0] and not part.flags.writeable:
        part = part.copy()
    data, indices, indptr, y, qid, has_qid, line_no, _ = _parse_rows(np.ascontiguousarray(part), name, lines_before)
    if 0 < int(has_qid.sum()) < has_qid.shape[0]:
        bad = int(np.argmin(has_qid)) if has_qid[0] else int(np.argmax(has_qid))
        which = "has no qid but other lines do" if has_qid[0] else "has a qid but earlier lines do not"
        raise DataError(name, f"line {which} (every line needs qid:<int>, or none)", int(line_no[bad]) + lines_before)
    return data, indices, indptr, y, qid, line_no + lines_before, name, bool(has_qid.any())


def _warn_group_file(f, name: str, stacklevel: int) -> None:
    """A file without qid given by path, with a group file beside it (found as `rankkit train`
    finds it: rankkit.io.groups): the returned qids ignore it, so say so, naming it."""
    if not isinstance(f, (str, os.PathLike)):
        return
    beside = existing(name)
    if beside:
        warnings.warn(f"{name} has no qid, and the group file {beside[0]} beside it gives its queries: "
                      "load_svmlight_file does not read group files (qid is 0 on every row, as with "
                      "scikit-learn); rankkit.load_letor reads it, as `rankkit train` does", UserWarning,
                      stacklevel=stacklevel + 1)


def load_svmlight_files(
    files: Iterable[Any],
    *,
    n_features: int | None = None,
    dtype: Any = np.float64,
    multilabel: bool = False,
    zero_based: bool | str = "auto",
    query_id: bool = False,
    offset: int = 0,
    length: int = -1,
) -> list:
    """Read several SVMlight/LETOR files into matrices with the same number of columns.

    The signature, results and semantics of `sklearn.datasets.load_svmlight_files`: a flat list
    ``[X1, y1, X2, y2, ...]``, with ``qid1, ...`` after each ``y`` when ``query_id`` is true.
    ``zero_based="auto"`` takes the indices as 1-based unless some file has an index 0.

    Parameters
    ----------
    files : sequence of str, path-like, file descriptor or binary file object
        The files (plain, or .gz / .bz2 / .xz by extension when given by path).
    n_features : int, optional
        Number of columns; default: one more than the largest index in any file.
    dtype : numpy dtype, default float64
        Type of the matrices' values (labels are float64).
    multilabel : bool, default False
        Must be False: ranking data has one label per line.
    zero_based : bool or "auto", default "auto"
        Whether column indices start at 0.
    query_id : bool, default False
        Also return each row's ``qid`` (int64; 0 on lines without one). A group file beside a
        file without qid is not read: a warning names it (see `load_svmlight_file`).
    offset, length : int
        Read only the lines of a byte window (see `load_svmlight_file`); needs ``n_features``.

    Returns
    -------
    list
        ``[X1, y1, (qid1,) X2, y2, (qid2,) ...]``; every X a ``scipy.sparse.csr_matrix``.

    Raises
    ------
    rankkit.errors.DataError
        A file that cannot be read or parsed, naming the file and line.

    Examples
    --------
    >>> import io, rankkit
    >>> train = io.BytesIO(b"2 qid:1 1:0.5 3:1\\n0 qid:1 2:1\\n")
    >>> test = io.BytesIO(b"1 qid:7 1:1\\n")
    >>> X1, y1, X2, y2 = rankkit.load_svmlight_files([train, test])
    >>> X1.shape, X2.shape
    ((2, 3), (1, 3))
    """
    return _load_files(files, n_features, dtype, multilabel, zero_based, query_id, offset, length, stacklevel=3)


def _load_files(files, n_features, dtype, multilabel, zero_based, query_id, offset, length, stacklevel):
    """load_svmlight_files; `stacklevel`: the user's frame for warnings, seen from here."""
    import scipy.sparse as sp

    if multilabel:
        raise UsageError("multilabel=True is not supported: ranking data has one label per line")
    if zero_based not in (True, False, "auto"):
        raise UsageError(f"zero_based must be True, False or 'auto', not {zero_based!r}")
    if (offset != 0 or length > 0) and n_features is None:
        raise UsageError("n_features is required when offset or length is specified")
    if n_features is not None and (int(n_features) != n_features or n_features < 0):
        raise UsageError(f"n_features must be a non-negative integer, not {n_features!r}")
    parsed = []
    for f in files:
        *arrays, name, any_qid = _one_file(f, offset=offset, length=length)
        if query_id and not any_qid and arrays[3].shape[0]:
            _warn_group_file(f, name, stacklevel)
        parsed.append((*arrays, name))
    if zero_based == "auto" and (offset != 0 or length > 0):
        zero_based = True  # as scikit-learn: no guessing on a window, which could guess differently per window
    one_based = zero_based is False or (
        zero_based == "auto" and all(p[1].shape[0] and int(p[1].min()) > 0 for p in parsed))
    if zero_based is False:
        for data, indices, indptr, y, qid, line_no, name in parsed:
            if indices.shape[0] and int(indices.min()) == 0:
                k = int(np.argmin(indices))
                row = int(np.searchsorted(indptr, k, side="right")) - 1
                raise DataError(name, "feature index '0' is out of range: indices are 1-based (zero_based=False)",
                                int(line_no[row]))
    shift = 1 if one_based else 0
    needed = max((int(p[1].max()) + 1 - shift if p[1].shape[0] else 0) for p in parsed) if parsed else 0
    if n_features is None:
        n_cols = needed
    else:
        n_cols = int(n_features)
        if n_cols < needed:
            raise UsageError(f"n_features was set to {n_cols}, but input file contains {needed} features")
    out = []
    for data, indices, indptr, y, qid, line_no, name in parsed:
        if shift:
            indices -= 1
        X = sp.csr_matrix((data.astype(dtype, copy=False), indices, indptr), shape=(y.shape[0], n_cols))
        out.extend([X, y])
        if query_id:
            out.append(qid)
    return out


def load_svmlight_file(
    f: Any,
    *,
    n_features: int | None = None,
    dtype: Any = np.float64,
    multilabel: bool = False,
    zero_based: bool | str = "auto",
    query_id: bool = False,
    offset: int = 0,
    length: int = -1,
) -> tuple:
    """Read an SVMlight/LETOR file into a CSR matrix and labels (and query ids).

    A drop-in replacement of `sklearn.datasets.load_svmlight_file`: the same signature, return
    values and semantics, read by rankkit's parallel parser. Differences: values that are not
    finite (``nan``, ``inf``) and a line with a ``qid`` among lines without one are errors (naming
    the line) rather than read; a file without any ``qid`` gives ``qid`` zeros, one per row;
    the CSR indices are int32.

    Parameters
    ----------
    f : str, path-like, file descriptor or binary file object
        The file (plain, or .gz / .bz2 / .xz by extension when given by path).
    n_features : int, optional
        Number of columns; default: one more than the largest index.
    dtype : numpy dtype, default float64
        Type of X's values (y is float64).
    multilabel : bool, default False
        Must be False: ranking data has one label per line.
    zero_based : bool or "auto", default "auto"
        Whether indices start at 0; "auto": 1-based unless the file has an index 0 (so column
        ``j`` of X is feature ``j + 1`` of a LETOR file).
    query_id : bool, default False
        Also return the ``qid`` of each row (int64). A file without qid that has a LightGBM /
        XGBoost group file beside it (``FILE.query``, ``FILE.group``, found as ``rankkit train``
        finds them) keeps scikit-learn's return values, qid 0 on every row: the group file is
        not read, and a ``UserWarning`` names it. ``load_letor`` reads it (qids 1..G).
    offset : int, default 0
        Skip this many bytes and the rest of the line they end in.
    length : int, default -1
        If positive, read only the lines that start within ``offset + length`` bytes.

    Returns
    -------
    X : scipy.sparse.csr_matrix, shape (n_samples, n_features)
    y : ndarray of float64, shape (n_samples,)
    qid : ndarray of int64, shape (n_samples,)
        Only when ``query_id`` is true.

    Raises
    ------
    rankkit.errors.DataError
        The file cannot be read or a line cannot be parsed: ``FILE:LINE: message 'token'``.

    Examples
    --------
    >>> import io, rankkit
    >>> f = io.BytesIO(b"2 qid:1 1:0.5 3:1 # docid = a\\n0 qid:1 2:1\\n1 qid:2 1:0.25\\n")
    >>> X, y, qid = rankkit.load_svmlight_file(f, query_id=True)
    >>> X.shape, y.tolist(), qid.tolist()
    ((3, 3), [2.0, 0.0, 1.0], [1, 1, 2])
    >>> X.toarray()[0].tolist()
    [0.5, 0.0, 1.0]
    """
    return tuple(_load_files([f], n_features, dtype, multilabel, zero_based, query_id, offset, length, stacklevel=3))


@dataclass
class LetorData:
    """A LETOR file as `rankkit train` reads it.

    Attributes
    ----------
    X : scipy.sparse.csr_matrix
        Features, one row per document; column ``j`` is feature ``j + 1`` of a 1-based file.
    y : ndarray of float64
        Relevance labels.
    qid : ndarray of int64
        Query id of each row; the rows of a query are contiguous.
    docids : list of str or None
        The ``# docid = X`` comment of each row (None where there is none).
    query_offsets : ndarray of int64, shape (n_queries + 1,)
        Query ``q`` is rows ``query_offsets[q]:query_offsets[q + 1]``.
    source : str
        The file's name.
    """

    X: Any
    y: np.ndarray
    qid: np.ndarray
    docids: list
    query_offsets: np.ndarray
    source: str = "<data>"

    @property
    def n_queries(self) -> int:
        return int(self.query_offsets.shape[0] - 1)

    @property
    def group(self) -> np.ndarray:
        """Documents per query (LightGBM's ``group``)."""
        return np.diff(self.query_offsets)


def load_letor(
    f: str | os.PathLike,
    *,
    zero_based: bool = False,
    group_queries: bool = False,
    group_file: str | None = "auto",
) -> LetorData:
    """Read a LETOR / SVMlight ranking file as the command line does.

    Parameters
    ----------
    f : str or path-like
        The file (.gz / .bz2 / .xz by extension; "-" is standard input).
    zero_based : bool, default False
        Feature indices start at 0 (``rankkit train --zero-based``).
    group_queries : bool, default False
        Gather the documents of a query that comes back after other queries (``--group-queries``);
        otherwise that is an error, since a query's documents must be contiguous.
    group_file : str or None, default "auto"
        A LightGBM ``.query`` / XGBoost ``.group`` file giving the queries of a file without qid;
        "auto" uses ``FILE.query`` or ``FILE.group`` next to the file, None ignores them.

    Returns
    -------
    LetorData

    Raises
    ------
    rankkit.errors.DataError
        A file that cannot be read or parsed, naming the file and line.

    Examples
    --------
    >>> import rankkit
    >>> d = rankkit.load_letor("data/sample.train.txt")  # the sample bundled with rankkit's source
    >>> d.X.shape, d.n_queries, d.docids[0]
    ((1895, 20), 200, 'D1-1')
    """
    ds = read_svmlight(os.fspath(f), zero_based=zero_based, group_queries=group_queries, groups=group_file)
    return LetorData(X=ds.csr(), y=ds.y, qid=ds.qid, docids=ds.docids(), query_offsets=ds.qptr, source=ds.source)


# -- writing -----------------------------------------------------------------------------------------
def dump_svmlight_file(
    X: Any,
    y: Any,
    f: Any,
    *,
    zero_based: bool = True,
    comment: str | bytes | None = None,
    query_id: Any = None,
    multilabel: bool = False,
) -> None:
    """Write a dataset in SVMlight / LETOR format.

    The signature and semantics of `sklearn.datasets.dump_svmlight_file`; every value is written
    as the shortest text that reads back to the same double, and a file named by path is written
    atomically (a reader never sees half of it).

    Parameters
    ----------
    X : array-like or sparse matrix, shape (n_samples, n_features)
    y : array-like, shape (n_samples,)
    f : str, path-like or binary file object
        A path is written atomically, and never over a rankkit model (the output guard of every
        writer: ``rankkit.io.atomic.check_output``).
    zero_based : bool, default True
        Write column ``j`` as index ``j`` (True) or ``j + 1`` (False; LETOR files are 1-based).
    comment : str or bytes, optional
        Written at the top of the file, each line after ``#``.
    query_id : array-like of int, optional
        The ``qid`` of each row.
    multilabel : bool, default False
        Must be False.

    Examples
    --------
    >>> import io, numpy as np, rankkit
    >>> out = io.BytesIO()
    >>> rankkit.dump_svmlight_file(np.array([[0.5, 0.0], [0.0, 2.0]]), [1, 0], out,
    ...                            zero_based=False, query_id=[3, 3])
    >>> print(out.getvalue().decode().splitlines()[-2:])
    ['1 qid:3 1:0.5', '0 qid:3 2:2']
    """
    import scipy.sparse as sp

    if multilabel:
        raise UsageError("multilabel=True is not supported: ranking data has one label per line")
    Xc = sp.csr_matrix(X) if not sp.issparse(X) else sp.csr_matrix(X, copy=True)
    Xc.sort_indices()
    yv = np.asarray(y)
    if yv.ndim != 1 or yv.shape[0] != Xc.shape[0]:
        raise UsageError(f"y must have one label per row of X ({Xc.shape[0]}), got shape {yv.shape}")
    q = None if query_id is None else np.asarray(query_id)
    if q is not None and (q.ndim != 1 or q.shape[0] != Xc.shape[0]):
        raise UsageError(f"query_id must have one value per row of X ({Xc.shape[0]}), got shape {q.shape}")
    if not np.all(np.isfinite(Xc.data)) or (yv.dtype.kind == "f" and not np.all(np.isfinite(yv))):
        raise UsageError("X and y must be finite: SVMlight has no text for nan or inf that rankkit reads back")
    lines = [f"# Generated by rankkit {__version__} (dump_svmlight_file)",
             f"# Column indices are {'zero' if zero_based else 'one'}-based"]
    if comment:
        text = comment.decode("utf-8") if isinstance(comment, bytes) else str(comment)
        if "\0" in text:
            raise UsageError("comment must not contain NUL characters")
        lines.extend(f"# {line}" for line in text.splitlines())
    base = 0 if zero_based else 1
    data, indices, indptr = Xc.data.tolist(), (Xc.indices + base).tolist(), Xc.indptr.tolist()
    labels = [str(int(v)) if yv.dtype.kind in "iub" else format_number(float(v)) for v in yv.tolist()]
    qids = None if q is None else [str(int(v)) for v in q.tolist()]
    for r in range(Xc.shape[0]):
        parts = [labels[r]]
        if qids is not None:
            parts.append(f"qid:{qids[r]}")
        parts.extend(f"{indices[t]}:{format_number(data[t])}" for t in range(indptr[r], indptr[r + 1]))
        lines.append(" ".join(parts))
    payload = ("\n".join(lines) + "\n").encode("utf-8")
    if isinstance(f, (str, os.PathLike)):
        check_output(os.fspath(f), kind="data")  # never over a rankkit model
        with atomic_open(os.fspath(f), binary=True) as fh:
            fh.write(payload)
    else:
        f.write(payload)


# -- arrays -> the Dataset the solvers work on ---------------------------------------------------------
class NotANumberError(DataError, TypeError):
    """An entry of an array that is not a number (pandas' NA, None, a string, an object): a
    DataError naming the row, hence a ValueError as every input error of rankkit, and also the
    TypeError numpy raises for it."""


def _bad_entry(values, name: str, what: str, integer: bool = False) -> DataError:
    """The error for the first entry of `values` that is not a finite number (an integer when
    `integer`): pandas' NA, None, a string, nan... naming the 1-based row (and the column of a
    matrix)."""
    obj = np.asarray(values, dtype=object)
    cols = obj.shape[1] if obj.ndim == 2 else 1
    for k, v in enumerate(obj.ravel().tolist()):
        row, col = k // cols + 1, k % cols
        where = f" (column {col})" if obj.ndim == 2 else ""
        try:
            x = float(v)
        except (TypeError, ValueError) as exc:
            return NotANumberError(f"<{name}>", f"{what} {v!r}{where} is not a number ({exc}; a missing value? "
                                   "rankkit has no missing-value rule: impute or drop it)", row)
        if not np.isfinite(x) or (integer and x != round(x)):
            return DataError(f"<{name}>", f"{what} {v!r}{where} is not {'an integer' if integer else 'finite'}", row)
    return DataError(f"<{name}>", f"{what}s must be numbers")


def as_numbers(values, name: str, what: str, dtype=np.float64) -> np.ndarray:
    """values as a numeric array: anything that is not a number (pandas' NA, None, a string) is a
    DataError naming the row, never numpy's TypeError; complex numbers are a UsageError."""
    kind = None
    if hasattr(values, "dtype") and not hasattr(values, "columns"):
        try:
            kind = np.dtype(values.dtype).kind
        except TypeError:  # an extension type (pandas' Int64, Float64): not complex
            kind = "O"
    if kind == "c" or (kind is None and not hasattr(values, "columns") and np.iscomplexobj(values)):
        raise UsageError(f"{name}: Complex data not supported (features and labels are real numbers)")
    if hasattr(values, "columns") and any(np.dtype(t).kind == "c" for t in getattr(values, "dtypes", [])
                                          if isinstance(t, np.dtype)):
        raise UsageError(f"{name}: Complex data not supported (features and labels are real numbers)")
    try:
        return np.asarray(values, dtype=dtype)
    except (TypeError, ValueError, OverflowError):
        raise _bad_entry(values, name, what, integer=np.dtype(dtype).kind in "iu") from None


def column_names(X) -> np.ndarray | None:
    """The column names of a data frame (pandas, polars: anything with string `columns`), else None."""
    cols = getattr(X, "columns", None)
    if cols is None or sp_issparse(X):
        return None
    names = [c for c in list(cols)]
    if not names or not all(isinstance(c, str) for c in names):
        return None
    return np.asarray(names, dtype=object)


def sp_issparse(X) -> bool:
    import scipy.sparse as sp

    return sp.issparse(X)


def split_qid_column(X, column: str = "qid"):
    """(X without its `column`, that column) for a data frame with a column named qid (XGBoost's
    convention: the queries travel with X, through scikit-learn's splits); else (X, None)."""
    names = column_names(X)
    if names is None or column not in set(names):
        return X, None
    rest = [c for c in names if c != column]
    return X[rest], X[column]


def _check_csr_arrays(X, name: str) -> None:
    """A CSR matrix's arrays must describe a matrix (scipy trusts them: a wrong indptr otherwise
    gives a RuntimeError from its C++ code, or reads out of bounds)."""
    n, d = X.shape
    indptr, indices = np.asarray(X.indptr), np.asarray(X.indices)
    if indptr.ndim != 1 or indptr.shape[0] != n + 1:
        raise DataError(f"<{name}>", f"is not a valid CSR matrix: indptr has {indptr.shape[0]} entries for {n} rows "
                        f"(it needs {n + 1})")
    if n + 1 and int(indptr[0]) != 0:
        raise DataError(f"<{name}>", f"is not a valid CSR matrix: indptr starts at {int(indptr[0])}, not 0")
    steps = np.diff(indptr)
    if steps.size and int(steps.min()) < 0:
        r = int(np.argmax(steps < 0))
        raise DataError(f"<{name}>", "is not a valid CSR matrix: indptr decreases at this row", r + 1)
    if int(indptr[-1]) > min(indices.shape[0], np.asarray(X.data).shape[0]):
        raise DataError(f"<{name}>", f"is not a valid CSR matrix: indptr ends at {int(indptr[-1])} but there are "
                        f"{indices.shape[0]} column indices and {np.asarray(X.data).shape[0]} values")
    used = indices[: int(indptr[-1])]
    if used.size and (int(used.min()) < 0 or int(used.max()) >= d):
        k = int(np.argmax((used < 0) | (used >= d)))
        r = int(np.searchsorted(indptr, k, side="right")) - 1
        raise DataError(f"<{name}>", f"is not a valid CSR matrix: column index {int(used[k])} is outside 0..{d - 1}",
                        r + 1)


def _csr(X, name: str):
    import scipy.sparse as sp

    if sp.issparse(X):
        if X.format == "csr":
            _check_csr_arrays(X, name)
        if np.dtype(X.dtype).kind == "c":
            raise UsageError(f"{name}: Complex data not supported (the features are real numbers)")
        try:
            Xc = sp.csr_matrix(X)
        except (RuntimeError, ValueError, IndexError, TypeError) as exc:
            raise DataError(f"<{name}>", f"is not a valid sparse matrix ({type(exc).__name__}: {exc})") from None
        _check_csr_arrays(Xc, name)
    else:
        arr = as_numbers(X, name, "feature value")
        if arr.ndim != 2:
            raise UsageError(f"{name} must be 2-dimensional (documents x features), got shape {arr.shape}"
                             + (": Reshape your data with X.reshape(-1, 1) for one feature, or X.reshape(1, -1) "
                                "for one document" if arr.ndim == 1 else ""))
        Xc = sp.csr_matrix(arr)
    if Xc.shape[1] == 0 and Xc.shape[0] > 0:
        raise UsageError(f"{name} has 0 feature(s) (shape=({Xc.shape[0]}, 0)) while a minimum of 1 is required.")
    if not Xc.has_canonical_format:
        Xc = Xc.copy()
        Xc.sum_duplicates()
    if Xc.shape[1] >= 2**31:
        raise UsageError(f"{name} has {Xc.shape[1]} columns; at most 2^31 - 1")
    return Xc


def check_dense_width(X, expected: int, name: str, expecting: str, command: str) -> None:
    """A dense X (array, list of rows, data frame) must have `expected` columns: its column j is
    feature j, so a narrower one would be scored as if the last features were 0 and a wider one as
    if its last columns did not exist. A sparse X may have fewer or more columns (a data file's
    rule: absent features are zeros; features beyond the model's are ignored). UsageError in
    predict's words: `expecting` is who expects the width, `command` the CLI command that reads
    sparse data the same way."""
    if X is None or sp_issparse(X) or np.ndim(X) != 2 or np.shape(X)[1] == expected:
        return
    raise UsageError(f"{name} has {np.shape(X)[1]} features, but {expecting} is expecting {expected} features as "
                     f"input (a sparse {name} may have fewer or more columns: the missing ones are zeros, the extra "
                     f"ones are ignored, as rankkit {command} does)")


def as_dataset(X, y=None, qid=None, group=None, *, name: str = "X") -> Dataset:
    """The solvers' Dataset for arrays: X (CSR or dense), labels y, and the queries from `qid` (per
    row, contiguous) or `group` (sizes); neither: one query. Errors name `<X>` and the 1-based row:
    every one a ValueError (DataError or UsageError), whatever the input (pandas' NA included)."""
    Xc = _csr(X, name)
    n = Xc.shape[0]
    if n == 0:
        raise DataError(f"<{name}>", "has no rows")
    data = np.ascontiguousarray(Xc.data, dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(data))
    indptr = Xc.indptr.astype(np.int64)
    if bad.size:
        row = int(np.searchsorted(indptr, bad[0], side="right")) - 1
        raise DataError(f"<{name}>", f"feature value {float(data[bad[0]])!r} is not finite (NaN or infinity: "
                        "rankkit has no missing-value rule; impute or drop them)", row + 1)
    if y is None:
        labels = np.zeros(n)
    else:
        labels = as_numbers(y, "y", "label")
        if labels.ndim != 1 or labels.shape[0] != n:
            raise UsageError(f"y must have one label per row of {name} ({n}), got shape {labels.shape}")
        bad = np.flatnonzero(~np.isfinite(labels))
        if bad.size:
            raise DataError("<y>", f"label {float(labels[bad[0]])!r} is not finite", int(bad[0]) + 1)
        labels = np.ascontiguousarray(labels)
    if qid is not None:
        qid = as_qid(qid)
    if group is not None:
        group = as_numbers(group, "group", "group size")
    qptr, q, has_qid = query_offsets(n, qid, group, name)
    ds = Dataset(data=data, indices=Xc.indices.astype(np.int32), indptr=indptr, y=labels, qid=q, qptr=qptr,
                 n_features=int(Xc.shape[1]), source=f"<{name}>", line=np.arange(1, n + 1, dtype=np.int64),
                 has_qid=has_qid)
    return ds.validate()


def as_qid(qid) -> np.ndarray:
    """Query ids as int64 (exactly: ids above 2^53 are kept): numpy integers, pandas' nullable
    integers, Python ints, floats that are integers; a missing or non-integer id (NA, None, nan,
    1.5, a string) is a DataError naming the row."""
    try:
        q = np.asarray(qid)
    except (TypeError, ValueError):
        q = np.asarray(qid, dtype=object)
    if q.dtype.kind in "iu":
        return q
    if q.dtype.kind == "c":
        raise UsageError("qid must be integers, not complex numbers")
    if q.dtype.kind == "O":
        values = q.ravel().tolist()
        if all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in values):
            try:
                return np.array(values, dtype=np.int64).reshape(q.shape)
            except OverflowError:
                raise UsageError("qid must fit in 64-bit integers") from None
    try:
        f = np.asarray(q, dtype=np.float64)
    except (TypeError, ValueError):
        raise _bad_entry(q, "qid", "qid", integer=True) from None
    bad = np.flatnonzero(~np.isfinite(f) | (f != np.round(f)))
    if bad.size:
        v = f.ravel()[bad[0]]
        what = "is missing (NA or NaN)" if np.isnan(v) else f"{float(v)!r} is not an integer"
        raise DataError("<qid>", f"qid {what}: every row needs its query's integer id", int(bad[0]) + 1)
    return f.astype(np.int64)


def per_query_weights(ds: Dataset, query_weight, name: str = "sample_weight") -> np.ndarray:
    """Weights of the queries of ds: one value per query, one per row constant within each query
    (what scikit-learn's cross-validation slices along with X), or a {qid: weight} mapping (as
    fit_parts and `--query-weights FILE`: every query needs one)."""
    if isinstance(query_weight, dict) or (hasattr(query_weight, "keys") and hasattr(query_weight, "items")
                                          and not hasattr(query_weight, "shape")):
        table = {}
        for k, v in dict(query_weight).items():
            try:
                table[int(k)] = float(v)
            except (TypeError, ValueError):
                raise UsageError(f"{name} as a mapping takes {{qid: weight}} numbers, not {k!r}: {v!r}") from None
            if not np.isfinite(table[int(k)]) or table[int(k)] < 0:
                raise UsageError(f"{name}[{k!r}] must be finite and non-negative, not {v!r}")
        return weights_for(ds, table, name)
    w = as_numbers(query_weight, name, "weight")
    if w.ndim != 1:
        raise UsageError(f"{name} must be 1-dimensional")
    if w.shape[0] == ds.n_rows and w.shape[0] != ds.n_queries:
        first = w[ds.qptr[:-1]]
        differs = np.flatnonzero(w != np.repeat(first, np.diff(ds.qptr)))
        if differs.size:
            r = int(differs[0])
            raise UsageError(f"{name} given per row must be the same for every row of a query (row {r} differs "
                             f"from its query's first row): a pairwise loss weighs queries, not documents")
        w = first
    elif w.shape[0] != ds.n_queries:
        raise UsageError(f"{name} must have one value per query ({ds.n_queries}) or per row ({ds.n_rows}), "
                         f"got {w.shape[0]}")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise UsageError(f"{name} must be finite and non-negative")
    return np.ascontiguousarray(w)
