"""The in-memory dataset every part of rankkit works on.

A dataset is a CSR matrix (float64 values, int32 column indices, int64 row pointers), float64
labels, int64 query ids per row, and query offsets `qptr`: query q is the contiguous row slice
`qptr[q]:qptr[q+1]`. The reader gives uint16 column indices to a caller that asks for them (half
the memory of the indices when every column is below 65,536, as in LETOR data). Rows keep the order of the file unless the reader was asked to group
scattered queries, in which case `order[i]` is the input position of row i.

Imports nothing from rankkit above it (only errors, rankkit.text's decoding of docids, and the
sorting kernel: rankkit.sorting).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from rankkit.errors import DataError, UsageError
from rankkit.text import from_utf8
from rankkit.sorting import longest, query_levels

COMPACT_MIN_FEATURES = 1 << 16
# the value scales of decimal codes (Dataset.value_scale): 10**d, each an exact double
DECIMAL_SCALES = tuple(float(10**d) for d in range(10))  # Dataset.compact_columns: below this many columns a dense model is cheap


@dataclass
class Dataset:
    data: np.ndarray  # float64[nnz]
    indices: np.ndarray  # int32[nnz] (or uint16[nnz], when the reader was asked to narrow them), 0-based columns
    indptr: np.ndarray  # int64[n + 1]
    y: np.ndarray  # float64[n] labels (zeros when the file had none)
    qid: np.ndarray  # int64[n]
    qptr: np.ndarray  # int64[n_queries + 1]
    n_features: int  # number of columns: 1 + largest column index seen (0 if none)
    source: str = "<data>"  # file name used in messages
    line: np.ndarray | None = None  # int64[n] 1-based line number of each row in the source
    has_qid: bool = True
    docid_spans: np.ndarray | None = None  # int64[n, 2] byte spans of `# docid = X` in docid_buf; -1 if none
    docid_buf: bytes | None = None
    order: np.ndarray | None = None  # int64[n] input position of each row, when rows were regrouped
    labelled: np.ndarray | None = None  # bool[n] which lines had a label (None: all of them)
    # the group file (LightGBM FILE.query, XGBoost FILE.group) that numbered the queries 1..G of a
    # file without qids; None when the qids are the file's own (or there is one query)
    group_file: str | None = None
    # the values of `data`: data itself (float64, scale 1.0), or int32 decimal codes k standing for
    # the doubles k / value_scale (value_scale = 10**d). Only a reader asked for it stores codes
    # (read_svmlight(narrow_values=True), for a solver whose kernels divide by the scale: the
    # stochastic pairwise learners), and only when every value of the file is exactly such a
    # double, checked value by value (rankkit.io.parse.decimal_codes): no value is rounded.
    value_scale: float = 1.0
    _levels: np.ndarray | None = field(default=None, repr=False)
    _pairs: np.ndarray | None = field(default=None, repr=False)

    # -- shape -------------------------------------------------------------------------------
    @property
    def n_rows(self) -> int:
        return int(self.y.shape[0])

    @property
    def n_queries(self) -> int:
        return int(self.qptr.shape[0] - 1)

    @property
    def nnz(self) -> int:
        return int(self.indptr[-1])

    @property
    def decimal_codes(self) -> bool:
        """The values are stored as int32 decimal codes (see value_scale)."""
        return self.data.dtype != np.float64

    def values(self) -> np.ndarray:
        """float64[nnz]: the stored values as doubles (`data` itself, or a new array of codes /
        value_scale: the same doubles the file's text denotes)."""
        if not self.decimal_codes:
            return self.data
        return self.data / self.value_scale

    def with_float_values(self) -> "Dataset":
        """This dataset with float64 values (itself when they are): for code that reads `data` as
        doubles. The copy costs 8 bytes a non-zero; the kernels that take codes do not need it."""
        if not self.decimal_codes:
            return self
        ds = dataclasses.replace(self, data=self.values(), value_scale=1.0)
        ds._levels, ds._pairs = self._levels, self._pairs
        return ds

    def max_abs_value(self) -> float:
        """max |value| (0.0 without values; nan if any value is nan), without a temporary array
        the size of the values."""
        if self.data.size == 0:
            return 0.0
        hi, lo = abs(float(self.data.max())), abs(float(self.data.min()))
        big = hi if not hi <= lo else lo  # a nan (max and min propagate it) is returned as nan
        return big / self.value_scale if self.decimal_codes else big

    def value_at(self, k: int) -> float:
        """Stored value k as a double."""
        return float(self.data[k]) / self.value_scale if self.decimal_codes else float(self.data[k])

    def csr(self, n_features: int | None = None):
        """A scipy CSR matrix sharing this dataset's arrays (columns >= n_features dropped; uint16
        column indices are copied to int32, scipy's type; decimal codes to float64 values)."""
        import scipy.sparse as sp

        nf = self.n_features if n_features is None else n_features
        indices = self.indices if self.indices.dtype == np.int32 else self.indices.astype(np.int32)
        values = self.values()
        if nf >= self.n_features:
            return sp.csr_matrix((values, indices, self.indptr), shape=(self.n_rows, nf))
        keep = indices < nf
        kept_before = np.zeros(self.nnz + 1, dtype=np.int64)  # kept entries before each position
        np.cumsum(keep, out=kept_before[1:])
        indptr = kept_before[self.indptr]  # (reduceat failed on trailing empty rows)
        return sp.csr_matrix((values[keep], indices[keep], indptr), shape=(self.n_rows, nf))

    # -- per-query structure ---------------------------------------------------------------
    @property
    def query_index(self) -> np.ndarray:
        """int64[n]: the query number (0..n_queries-1) of each row."""
        return np.repeat(np.arange(self.n_queries, dtype=np.int64), np.diff(self.qptr))

    @property
    def levels(self) -> np.ndarray:
        """int32[n]: dense rank of each row's label within its query (0 = lowest label)."""
        if self._levels is None:
            self._levels, self._pairs = _levels_and_pairs(self.y, self.qptr)
        return self._levels

    @property
    def pairs_per_query(self) -> np.ndarray:
        """int64[n_queries]: preference pairs (two documents, different labels) in each query."""
        if self._pairs is None:
            self._levels, self._pairs = _levels_and_pairs(self.y, self.qptr)
        return self._pairs

    @property
    def n_pairs(self) -> int:
        return int(self.pairs_per_query.sum())

    @property
    def levels_per_query(self) -> np.ndarray:
        """int64[n_queries]: number of distinct labels in each query."""
        if self.n_rows == 0:
            return np.zeros(self.n_queries, dtype=np.int64)
        return np.maximum.reduceat(self.levels, self.qptr[:-1]).astype(np.int64) + 1

    # -- docids ------------------------------------------------------------------------------
    def docids(self) -> list[str | None]:
        """The `# docid = X` of each row (None where the line had none), decoded by
        rankkit.text.from_utf8: bytes that are not UTF-8 are kept as surrogate escapes, so
        that a writer (rankkit.text.utf8) gives back the bytes of the file."""
        if self.docid_spans is None or self.docid_buf is None:
            return [None] * self.n_rows
        buf = self.docid_buf
        return [from_utf8(buf[s:e]) if s >= 0 else None for s, e in self.docid_spans.tolist()]

    # -- checks ------------------------------------------------------------------------------
    def validate(self) -> "Dataset":
        """Check dtypes and structural invariants once, at the boundary; kernels then trust them."""
        n = self.n_rows
        checks = [
            (self.data.dtype == np.float64 and self.value_scale == 1.0
             or self.data.dtype == np.int32 and self.value_scale in DECIMAL_SCALES,
             "data must be float64 (or int32 decimal codes with value_scale a power of ten)"),
            (self.indices.dtype in (np.int32, np.uint16), "indices must be int32 (or uint16)"),
            (self.indptr.dtype == np.int64, "indptr must be int64"),
            (self.y.dtype == np.float64, "labels must be float64"),
            (self.qid.dtype == np.int64, "qid must be int64"),
            (self.qptr.dtype == np.int64, "qptr must be int64"),
            (self.indptr.shape == (n + 1,), "indptr has the wrong length"),
            (self.qid.shape == (n,), "qid has the wrong length"),
            (self.qptr[0] == 0 and self.qptr[-1] == n, "qptr must span all rows"),
            (bool(np.all(np.diff(self.qptr) > 0)) or n == 0, "queries must be non-empty"),
            (self.indptr[0] == 0 and self.indptr[-1] == self.data.shape[0], "indptr must span data"),
        ]
        if self.indices.shape[0]:
            lo, hi = int(self.indices.min()), int(self.indices.max())
            checks.append((lo >= 0 and hi < self.n_features, "column indices must lie in [0, n_features)"))
        for ok, what in checks:
            if not ok:
                raise DataError(self.source, f"invalid dataset: {what}")
        return self

    def as_one_query(self) -> "Dataset":
        """The whole file as a single query (AUC optimisation, Chapelle & Keerthi Sect. 5.2).

        Labels must take exactly two values (e.g. 0/1 or -1/+1): every (positive, negative) pair is
        then one preference pair, and the pairwise loss is a surrogate of 1 - AUC."""
        values = np.unique(self.y)
        if values.shape[0] != 2:
            raise DataError(
                self.source,
                f"--auc needs binary labels; found {values.shape[0]} distinct labels "
                f"({', '.join(f'{v:g}' for v in values[:5])}{', ...' if values.shape[0] > 5 else ''})",
            )
        return self.with_changes(qid=np.zeros(self.n_rows, dtype=np.int64), qptr=np.array([0, self.n_rows], dtype=np.int64),
                                 has_qid=False, group_file=None)

    def with_changes(self, **fields) -> "Dataset":
        """A copy with some fields replaced (the cached levels and pair counts are recomputed), validated."""
        return dataclasses.replace(self, _levels=None, _pairs=None, **fields).validate()

    # -- columns -----------------------------------------------------------------------------
    def compact_columns(self, always: bool = False) -> tuple["Dataset", np.ndarray | None]:
        """The dataset on the columns that occur, and those columns.

        Returns (dataset whose column j is original column used[j], n_features = len(used); used =
        sorted int64 original 0-based columns) when that saves something: n_features above
        COMPACT_MIN_FEATURES and at most half of the columns occur (a mistyped index such as
        100000000 in a small file), or whenever `always`. Otherwise (self, None). An L2-regularised
        linear model gives weight exactly 0 to a column that never occurs, so training on the used
        columns and putting the weights back at `used` is the same model."""
        if not always and self.n_features <= COMPACT_MIN_FEATURES:
            return self, None
        used = np.unique(self.indices).astype(np.int64)
        if not always and used.shape[0] > self.n_features // 2:
            return self, None
        indices = np.searchsorted(used, self.indices).astype(np.int32)  # every column is in `used`
        return self.with_changes(indices=indices, n_features=int(used.shape[0])), used

    def take_columns(self, used: np.ndarray) -> "Dataset":
        """The dataset on columns `used` (sorted, 0-based) only, renumbered 0..len(used)-1; values
        in other columns are dropped (a validation set scored by a model trained on `used`)."""
        m = used.shape[0]
        pos = np.searchsorted(used, self.indices)
        keep = pos < m
        keep[keep] = used[pos[keep]] == self.indices[keep]
        counts = np.zeros(self.n_rows + 1, dtype=np.int64)
        if self.n_rows:
            row = np.repeat(np.arange(self.n_rows, dtype=np.int64), np.diff(self.indptr))
            np.add.at(counts, row[keep] + 1, 1)
        return self.with_changes(data=self.data[keep], indices=pos[keep].astype(np.int32),
                                 indptr=np.cumsum(counts), n_features=int(m))

    def require_pairs(self) -> None:
        """Training needs at least one preference pair."""
        if self.n_pairs == 0:
            what = "the single query has" if self.n_queries == 1 else "every query has"
            raise DataError(
                self.source,
                f"no preference pairs: {what} only one relevance level, so there is nothing to rank",
            )


def query_offsets(n: int, qid=None, group=None, name: str = "X") -> tuple[np.ndarray, np.ndarray, bool]:
    """(qptr, qid per row, has_qid) of `n` rows from XGBoost's qid per row (contiguous) or
    LightGBM's group sizes (then qids 1..G); neither: one query of all rows, qid 0. Errors name
    `<name>` and the 1-based row."""
    if qid is not None and group is not None:
        raise UsageError("give qid (one per row) or group (documents per query), not both")
    if group is not None:
        sizes = np.asarray(group)
        if sizes.ndim != 1 or sizes.dtype.kind not in "iu" and not np.all(np.mod(sizes, 1) == 0):
            raise UsageError("group must be a 1-dimensional array of integer query sizes")
        sizes = sizes.astype(np.int64)
        if np.any(sizes < 1):
            raise UsageError(f"group sizes must be at least 1 (query {int(np.argmin(sizes))} has {int(sizes.min())})")
        if int(sizes.sum()) != n:
            raise UsageError(f"group sizes add up to {int(sizes.sum())}, but {name} has {n} rows")
        qptr = np.zeros(sizes.shape[0] + 1, dtype=np.int64)
        np.cumsum(sizes, out=qptr[1:])
        return qptr, np.repeat(np.arange(1, sizes.shape[0] + 1, dtype=np.int64), sizes), True
    if qid is None:
        return np.array([0, n], dtype=np.int64), np.zeros(n, dtype=np.int64), False
    q = np.asarray(qid)
    if q.ndim != 1 or q.shape[0] != n:
        raise UsageError(f"qid must have one value per row of {name} ({n}), got shape {q.shape}")
    if q.dtype.kind not in "iu":
        if q.dtype.kind == "f" and np.all(np.isfinite(q)) and np.all(q == np.round(q)):
            q = q.astype(np.int64)
        else:
            raise UsageError("qid must be integers")
    q = q.astype(np.int64, copy=False)
    starts = np.flatnonzero(np.r_[True, q[1:] != q[:-1]]) if n else np.zeros(0, np.int64)
    block_q = q[starts]
    uniq, first = np.unique(block_q, return_index=True)
    if uniq.shape[0] != block_q.shape[0]:
        seen = np.zeros(block_q.shape[0], dtype=bool)
        seen[first] = True
        b = int(np.argmin(seen))
        raise DataError(f"<{name}>", f"qid {int(block_q[b])} appears again after other queries: the rows of a "
                        "query must be contiguous (sort the rows by qid, keeping their order within a query)",
                        int(starts[b]) + 1)
    return np.r_[starts, n].astype(np.int64), np.ascontiguousarray(q), True


def _levels_and_pairs(y: np.ndarray, qptr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(levels int32[n], pairs int64[n_queries]) by rankkit.sorting.query_levels: per query, one
    stable sort of its labels (the scratch is one int64[n] and one int64[longest query])."""
    n = y.shape[0]
    nq = qptr.shape[0] - 1
    levels = np.zeros(n, dtype=np.int32)
    pairs = np.zeros(nq, dtype=np.int64)
    if n == 0:
        return levels, pairs
    # contiguous and writeable (read-only labels, e.g. a pandas Series' values, are copied): the
    # kernel types the ahead-of-time build holds, so such input does not load numba's JIT
    y = np.require(y, dtype=np.float64, requirements=["C", "W"])
    qptr = np.require(qptr, dtype=np.int64, requirements=["C", "W"])
    query_levels(y, qptr, levels, pairs, np.empty(n, dtype=np.int64), np.empty(longest(qptr, 0, nq), dtype=np.int64))
    return levels, pairs
