"""The Newton RankSVM, scores and metrics over dask collections (rankkit.dask.DaskRankSVM,
rankkit.dask.evaluate): X a dask array (dense, or with scipy.sparse chunks) or a dask dataframe,
labels, query ids and weights dask arrays or series cut into the same row blocks.

The data stays on the workers. The row blocks (chunks, partitions) become parts of whole queries:
a part is a block's rows from the first query that starts in it to its end, and the rows of its
last query that the next blocks hold. So a query that a chunk boundary splits is joined on one
worker (only its rows in the next blocks move) rather than refused; a block holding only the rest
of a query is no part of its own. The client holds a few numbers per block (its length, its first
and last query id) and never the data.

Each part is one task's result: the Dataset RankSVM.fit builds from arrays (rankkit.datasets.
as_dataset: the same checks, errors naming the row of the whole collection) and the weight of each
query, held as a future, which the scheduler computes again from the collection's graph if its
worker is lost. The fit is `--dask`'s on parts (rankkit.parts.newton.Problem: the one Newton
driver, per-part sums reduced in part order, the same waits and fault handling), each task given
its part's data (worker.PartSpec.in_memory) instead of a path to read.

Dask is imported inside the functions (the `dask` extra).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from rankkit import metrics as M
from rankkit.datasets import as_dataset, as_qid, column_names, per_query_weights
from rankkit.parts import worker as W
from rankkit.data import query_offsets
from rankkit.parts.cluster import watch
from rankkit.parts.newton import Problem
from rankkit.errors import DataError, UsageError
from rankkit.evaluation import mean_skipping_nan, row_number_rank
from rankkit.metrics.ties import lexicographic_rank


# -- the client's side: what the collections are ------------------------------------------------
@dataclass
class Blocks:
    """A collection as row blocks, each a list of dask Delayed objects (one per block, the same
    rows in each): x (features), y (labels), q (query ids, or None when `group_ends` numbers the
    queries), w (a weight per row, or None); lengths (rows of each block), n_features, names (a
    dataframe's feature columns, or None), frame (X was a dataframe)."""

    x: list
    y: list | None
    q: list | None
    w: list | None
    lengths: np.ndarray
    n_features: int
    names: np.ndarray | None
    frame: bool
    group_ends: np.ndarray | None = None
    weight_table: dict | None = None

    @property
    def offsets(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.lengths)]).astype(np.int64)

    @property
    def n_rows(self) -> int:
        return int(self.lengths.sum())


def is_dask_collection(v) -> bool:
    """A dask array, dataframe or series (anything with a dask graph), without importing dask."""
    return hasattr(v, "__dask_graph__") and callable(getattr(v, "__dask_graph__")) and v.__dask_graph__() is not None


def is_frame(v) -> bool:
    """A dask dataframe (dask arrays have no map_partitions; a dask series answers to .columns too)."""
    return hasattr(v, "map_partitions") and getattr(v, "ndim", None) == 2


def _is_series(v) -> bool:
    return hasattr(v, "map_partitions") and getattr(v, "ndim", None) == 1


def block_lengths(client, blocks: list) -> np.ndarray:
    """The rows of each block (Delayed objects), computed on the workers, waited on as every round
    is (bounded): dask's own .compute() would wait without bound on a scheduler that does not answer."""
    import dask

    return np.asarray(gather_small(client, [dask.delayed(_n_rows, pure=True)(b) for b in blocks]), dtype=np.int64)


def _n_rows(block) -> int:
    return int(block.shape[0]) if hasattr(block, "shape") else len(block)


def _unknown(chunks) -> bool:
    return any(c != c for c in chunks)  # NaN: dask does not know the chunk's rows


def row_blocks(client, X, y=None, qid=None, group=None, sample_weight=None, *, need_queries: bool = True) -> Blocks:
    """X and the per-row arrays as aligned row blocks (a few small computes: the blocks' lengths when
    dask does not know them). qid: a dask array or series, or the name of a column of a dataframe X
    (then not a feature); a column named 'qid' is taken when neither qid nor group is given, as
    RankSVM.fit takes it. group: query sizes (array-like; the client holds one number per query).
    Every compute goes through `client`, bounded (block_lengths)."""
    import dask.array as da

    if is_frame(X):
        frame = True
        columns = [str(c) for c in X.columns]
        if isinstance(qid, str):
            if qid not in columns:
                raise UsageError(f"qid={qid!r}: X has no such column (its columns: {', '.join(columns[:10])}"
                                 f"{' ...' if len(columns) > 10 else ''})")
            qid, X = X[qid], X.drop(columns=[qid])
        elif qid is None and group is None and "qid" in columns:
            qid, X = X["qid"], X.drop(columns=["qid"])
        names = column_names(X._meta) if hasattr(X, "_meta") else np.array([str(c) for c in X.columns], dtype=object)
        n_features = len(X.columns)
        x_blocks = list(X.to_delayed())
        lengths = block_lengths(client, x_blocks)
    elif isinstance(X, da.Array):
        frame, names = False, None
        if X.ndim != 2:
            raise UsageError(f"X must be a 2-dimensional dask array (rows: documents), got {X.ndim} dimensions")
        if isinstance(qid, str):
            raise UsageError(f"qid={qid!r} names a column: X must then be a dask dataframe")
        if X.shape[1] != X.shape[1]:
            raise UsageError("X: a dask array whose number of columns dask does not know")
        if len(X.chunks[1]) > 1:  # every block holds whole rows
            X = X.rechunk({1: -1})
        n_features = int(X.shape[1])
        x_blocks = list(X.to_delayed().ravel())
        lengths = block_lengths(client, x_blocks) if _unknown(X.chunks[0]) else np.asarray(X.chunks[0], dtype=np.int64)
    else:
        raise UsageError(f"X must be a dask array or a dask dataframe, not {type(X).__name__} (for data in memory, "
                         "use rankkit.RankSVM)")
    if qid is None and group is None and need_queries:
        raise UsageError("DaskRankSVM.fit needs the queries: qid= (a dask array or series of one id per row, or the "
                         "name of a column of a dask dataframe X), group= (rows per query), or a dask dataframe X "
                         "with a 'qid' column")
    if qid is not None and group is not None:
        raise UsageError("give qid (one per row) or group (documents per query), not both")
    blocks = Blocks(x_blocks, None, None, None, lengths, n_features, names, frame)
    blocks.y = None if y is None else _aligned(client, y, lengths, "y")
    blocks.q = None if qid is None else _aligned(client, qid, lengths, "qid")
    if group is not None:
        sizes = np.asarray(gather_small(client, [group])[0] if is_dask_collection(group) else group)
        if sizes.ndim != 1 or sizes.dtype.kind not in "iuf" or np.any(sizes < 1) or np.any(sizes != np.round(sizes)):
            raise UsageError("group must be a 1-dimensional array of integer query sizes, each at least 1")
        ends = np.cumsum(sizes.astype(np.int64))
        if ends[-1] != blocks.n_rows:
            raise UsageError(f"group sizes add up to {int(ends[-1])}, but X has {blocks.n_rows} rows")
        blocks.group_ends = ends
    if sample_weight is not None:
        if isinstance(sample_weight, dict) or (hasattr(sample_weight, "items") and not is_dask_collection(sample_weight)):
            blocks.weight_table = dict(sample_weight)
        elif is_dask_collection(sample_weight):
            blocks.w = _aligned(client, sample_weight, lengths, "sample_weight")
        else:
            raise UsageError("sample_weight: a dask array or series of one weight per row (the same for every row "
                             "of a query), or {qid: weight}")
    return blocks


def _aligned(client, v, lengths: np.ndarray, name: str) -> list:
    """A per-row dask array or series as Delayed blocks of `lengths` rows: its own blocks when they
    have those rows, else cut again (a series of other partitions: as a dask array)."""
    import dask.array as da

    want = tuple(int(n) for n in lengths)
    if _is_series(v):
        parts = list(v.to_delayed())
        got = block_lengths(client, parts)
        if tuple(int(n) for n in got) == want:
            return parts
        v = v.to_dask_array(lengths=[int(n) for n in got])
    if isinstance(v, da.Array):
        if v.ndim != 1:
            raise UsageError(f"{name} must be 1-dimensional (one value per row), got {v.ndim} dimensions")
        if _unknown(v.chunks[0]):
            v = da.Array(v.dask, v.name, (tuple(int(n) for n in block_lengths(client, list(v.to_delayed().ravel()))),),
                         meta=v._meta)
        if v.shape[0] != int(lengths.sum()):
            raise UsageError(f"{name} must have one value per row of X ({int(lengths.sum())}), got {v.shape[0]}")
        if tuple(v.chunks[0]) != want:
            v = v.rechunk((want,))
        return list(v.to_delayed().ravel())
    raise UsageError(f"{name} must be a dask array or series (cut into rows as X is), not {type(v).__name__}")


# -- on the workers: a block's facts, a part's data -----------------------------------------------------
@contextlib.contextmanager
def _rows_from(offset: int):
    """A DataError naming a row of a block or part names that row of the whole collection."""
    try:
        yield
    except DataError as exc:
        if exc.line is None or offset == 0:
            raise
        raise DataError(exc.path, exc.message, exc.line + offset) from None


def _rows(v, lo: int, hi: int):
    if v is None:
        return None
    if hasattr(v, "iloc"):
        return v.iloc[lo:hi]
    if sp.issparse(v):
        return sp.csr_matrix(v)[lo:hi]
    return np.asarray(v)[lo:hi]


def _joined(pieces):
    if len(pieces) == 1:
        return pieces[0]
    if sp.issparse(pieces[0]):
        return sp.vstack(pieces, format="csr")
    if hasattr(pieces[0], "iloc"):
        import pandas as pd

        return pd.concat(pieces)
    return np.concatenate(pieces)


def _queries(q, offset: int, n: int, group_ends):
    """The query ids of rows offset..offset+n-1: the given ones (checked as RankSVM.fit checks
    them), or the numbers 1..G of group sizes."""
    if q is None:
        return np.searchsorted(group_ends, np.arange(offset, offset + n), side="right").astype(np.int64) + 1
    with _rows_from(offset):
        return as_qid(q)


def block_facts(offset: int, x, y, q, group_ends) -> dict:
    """A block's length (and its labels' and query ids', which must agree), its first and last
    query id and how many rows of its first query it starts with."""
    n = int(x.shape[0])
    out = {"n": n, "ny": None if y is None else int(len(y)), "nq": None if q is None else int(len(q))}
    if q is None and group_ends is None:
        return out
    ids = _queries(q, offset, n, group_ends)
    if n:
        change = np.flatnonzero(ids != ids[0])
        out.update(first=int(ids[0]), last=int(ids[-1]), head=int(change[0]) if change.size else n)
    return out


def make_part(offset: int, pieces: list, group_ends, weight_table) -> tuple:
    """A part's data: (Dataset of its rows, as RankSVM.fit builds it from the same arrays, with the
    collection's row numbers as its lines; the weight of each of its queries, or None). pieces:
    (x, y, q, w, lo, hi, block offset) of each block it takes rows of."""
    x = _joined([_rows(p[0], p[4], p[5]) for p in pieces])
    y = _joined([_rows(p[1], p[4], p[5]) for p in pieces])
    q = np.concatenate([_queries(_rows(p[2], p[4], p[5]), p[6] + p[4], p[5] - p[4], group_ends) for p in pieces])
    with _rows_from(offset):
        ds = as_dataset(x, y, q, name="X")
    n = ds.n_rows
    ds = ds.with_changes(line=np.arange(offset + 1, offset + n + 1, dtype=np.int64))
    weights = None
    if pieces[0][3] is not None:
        weights = per_query_weights(ds, np.asarray(_joined([_rows(p[3], p[4], p[5]) for p in pieces]),
                                                   dtype=np.float64), "sample_weight")
    elif weight_table is not None:
        weights = per_query_weights(ds, weight_table, "sample_weight")
    return ds, weights


# -- parts of whole queries ---------------------------------------------------------------------------
def plan_parts(blocks: Blocks, facts: list[dict]) -> list[list[tuple]]:
    """The parts as [(block, lo, hi), ...] each: every part starts where a query starts (a block's
    first row, or the row after the rest of the previous block's last query) and takes the rows of
    its last query from the blocks after it."""
    lengths = blocks.lengths
    for b, f in enumerate(facts):
        for key, name in (("ny", "y"), ("nq", "qid")):
            if f[key] is not None and f[key] != f["n"]:
                raise UsageError(f"{name} is not cut into the rows of X: block {b} of X has {f['n']} rows, its {name} "
                                 f"{f[key]} (give {name} with the chunks or partitions of X)")
    starts = []  # (block, row in it) where a part starts
    last = None
    for b, f in enumerate(facts):
        if not f["n"]:
            continue
        if last is not None and f["first"] == last:  # the block begins with the rest of the previous query
            if f["head"] < f["n"]:
                starts.append((b, f["head"]))
        else:
            starts.append((b, 0))
        last = f["last"]
    parts = []
    for i, (b, lo) in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else (len(lengths), 0)
        spans = []
        for c in range(b, end[0] + 1):
            a = lo if c == b else 0
            z = end[1] if c == end[0] else int(lengths[c]) if c < len(lengths) else 0
            if c < len(lengths) and z > a:
                spans.append((c, a, z))
        parts.append(spans)
    return parts


def part_futures(client, blocks: Blocks, parts: list[list[tuple]]) -> list:
    """One future per part (its data: make_part), computed where its blocks are."""
    import dask

    offsets = blocks.offsets
    out = []
    for spans in parts:
        pieces = [(blocks.x[c], None if blocks.y is None else blocks.y[c], None if blocks.q is None else blocks.q[c],
                   None if blocks.w is None else blocks.w[c], lo, hi, int(offsets[c])) for c, lo, hi in spans]
        c0, lo0, _ = spans[0]
        out.append(dask.delayed(make_part, pure=True)(int(offsets[c0] + lo0), pieces, blocks.group_ends,
                                                       blocks.weight_table))
    return client.compute(out)


def gather_small(client, delayeds: list) -> list:
    """The results of small tasks (a few numbers each), waited on as every round is (Watch)."""
    return watch(client).gather(lambda live: client.compute(delayeds))


def block_facts_of(client, blocks: Blocks) -> list[dict]:
    import dask

    offsets = blocks.offsets
    calls = [dask.delayed(block_facts, pure=True)(int(offsets[b]), x, None if blocks.y is None else blocks.y[b],
                                                  None if blocks.q is None else blocks.q[b], blocks.group_ends)
             for b, x in enumerate(blocks.x)]
    return gather_small(client, calls)


def part_name(offset: int, n: int) -> str:
    return f"<X> rows {offset + 1}-{offset + n}"


class CollectionProblem(Problem):
    """A Problem whose parts are a dask collection's (part_futures): each task is given its part's
    data, and the first round runs where that data is (the scheduler's choice, by locality); the
    rounds after it go to the worker that ran it, as for parts read from files."""

    def __init__(self, client, sources, names, *, weighted: bool = False, **kwargs):
        self.sources = list(sources)
        self.weighted = weighted
        self._free = True  # the first round: placed by the scheduler, where the parts' data is
        super().__init__(client, names, **kwargs)

    def _spec(self, k, name, zero_based):
        return W.PartSpec(self.fit_id, k, name, in_memory=True)

    def _submit(self, fn, k, *args, key=None):
        if not self._free:
            return super()._submit(fn, k, *args, key=key)
        self._submits += 1
        return self.client.submit(fn, self.specs[k], *args, part_data=self.sources[k], pure=False,
                                  key=f"{key}-{self._submits}" if key else None)

    def _round(self, fn, *args, **kwargs):
        out = super()._round(fn, *args, **kwargs)
        self._free = False
        return out

    def _check_split(self):
        """A query id in two parts: rows of one query that are not contiguous (as RankSVM.fit
        refuses them), named by the first row where it appears again."""
        if len(self.specs) == 1:
            return
        found = self._split_finding()
        if found is not None:
            _, q, a, b = found
            row = self._call(W.first_line_of_qid, b, q)
            raise DataError("<X>", f"qid {q} appears again after other queries: the rows of a query must be "
                            "contiguous (sort the rows by qid, keeping their order within a query)", row)

    def _setup(self, loss, query_norm, rescale, delta, query_weights):
        super()._setup(loss, query_norm, rescale, delta, query_weights)
        if self.weighted and not any(o["weighted_pairs"] for o in self._round(W.setup)):
            raise DataError("<sample_weight>", "gives weight 0 to every query that has preference pairs: the loss "
                            "would vanish and the model would be all zero; give some of them a positive weight")

    def close(self):
        super().close()
        for f in self.sources:
            with contextlib.suppress(Exception):
                f.release()


def fit_collection(client, blocks: Blocks, *, C: float, loss: str, tol: float, max_iter: int, query_norm: bool,
                   rescale, delta, log=None, w0=None):
    """The Newton RankSVM on a collection's blocks on the cluster of `client` (connected, with its
    Watch): (FitResult, facts) as rankkit.parts.newton.fit_newton returns them."""
    from rankkit.parts.newton import prob_facts

    facts = block_facts_of(client, blocks)
    parts = plan_parts(blocks, facts)
    if not parts:
        raise DataError("<X>", "has no rows")
    offsets = blocks.offsets
    names = []
    for spans in parts:
        c0, lo0, _ = spans[0]
        names.append(part_name(int(offsets[c0] + lo0), sum(hi - lo for _, lo, hi in spans)))
    sources = part_futures(client, blocks, parts)
    if log:
        log(f"{len(blocks.x)} blocks of {blocks.n_rows} rows as {len(parts)} parts of whole queries")
    prob = CollectionProblem(client, sources, names, weighted=blocks.w is not None or blocks.weight_table is not None,
                             loss=loss, query_norm=query_norm, rescale=rescale, delta=delta, log=log)
    try:
        result = prob.fit(C, w0=w0, tol=tol, max_iter=max_iter, log=log, full=False)
    finally:
        prob.close()
    return result, prob_facts(prob)


# -- evaluation ---------------------------------------------------------------------------------------
def eval_part(offset: int, pieces: list, group_ends, names, convention, empty_query) -> tuple:
    """On a worker: (query ids, {metric: per-query values}) of the part's rows, as rankkit.evaluate
    computes them (ties broken alike: by docids when given, else under trec by each row's number in
    the whole collection); pieces: (labels, scores, query ids, docids or None, lo, hi, block
    offset) of each block it takes rows of."""
    y = np.asarray(_joined([_rows(p[0], p[4], p[5]) for p in pieces]), dtype=np.float64).ravel()
    s = np.asarray(_joined([_rows(p[1], p[4], p[5]) for p in pieces]), dtype=np.float64).ravel()
    q = np.concatenate([_queries(_rows(p[2], p[4], p[5]), p[6] + p[4], p[5] - p[4], group_ends) for p in pieces])
    for v, what in ((y, "y"), (s, "scores")):
        bad = np.flatnonzero(~np.isfinite(v))
        if bad.size:
            raise UsageError(f"{what} must be finite (no nan or inf): row {offset + int(bad[0]) + 1} is {v[bad[0]]!r}")
    with _rows_from(offset):
        qptr, q, _ = query_offsets(y.shape[0], q, None, "y")
    if pieces[0][3] is not None:
        tiebreak = lexicographic_rank([str(d) for d in _joined([_rows(p[3], p[4], p[5]) for p in pieces])])
    elif getattr(convention, "name", convention) == "trec":
        tiebreak = row_number_rank(y.shape[0], offset)
    else:
        tiebreak = None
    table = M.per_query_table(list(names), y, s, qptr, convention, tiebreak=tiebreak, empty_query=empty_query)
    return q[qptr[:-1]], table


def evaluate_collection(client, y, scores, qid=None, group=None, *, metrics, convention, per_query: bool,
                        empty_query=None, docids=None):
    """rankkit.evaluate over dask collections y, scores (and qid or group, docids): the per-query
    metrics computed on the workers, part by part (queries joined as for a fit), the means here."""
    import dask

    names = [metrics] if isinstance(metrics, str) else list(metrics)
    if not names:
        raise UsageError("metrics is empty")
    for m in names:
        M.parse_metric(m)
    if qid is None and group is None:
        raise UsageError("evaluate needs the queries: qid= (one id per row) or group= (rows per query); "
                         "for one query of all rows, pass group=[len(y)]")
    labels = _as_array(client, y, "y")
    blocks = row_blocks(client, labels[:, None], y=scores, qid=qid, group=group)  # x: the labels; y: the scores
    id_blocks = None if docids is None else _aligned(client, docids, blocks.lengths, "docids")
    parts = plan_parts(blocks, block_facts_of(client, blocks))
    offsets = blocks.offsets
    calls = []
    for spans in parts:
        pieces = [(blocks.x[c], blocks.y[c], None if blocks.q is None else blocks.q[c],
                   None if id_blocks is None else id_blocks[c], lo, hi, int(offsets[c])) for c, lo, hi in spans]
        c0, lo0, _ = spans[0]
        calls.append(dask.delayed(eval_part, pure=True)(int(offsets[c0] + lo0), pieces, blocks.group_ends, names,
                                                         convention, empty_query))
    outs = gather_small(client, calls)
    qids = np.concatenate([o[0] for o in outs]) if outs else np.zeros(0, dtype=np.int64)
    table = {m: np.concatenate([o[1][m] for o in outs]) for m in names}
    means = {m: mean_skipping_nan(table[m]) for m in names}
    if not per_query:
        return means
    return means, {"qid": qids, **table}


def _as_array(client, v, name: str):
    import dask.array as da

    if _is_series(v):
        return v.to_dask_array(lengths=[int(n) for n in block_lengths(client, list(v.to_delayed()))])
    if isinstance(v, da.Array):
        if v.ndim != 1:
            raise UsageError(f"{name} must be 1-dimensional")
        return v
    raise UsageError(f"{name} must be a dask array or series, not {type(v).__name__} (for arrays in memory, use "
                     "rankkit.evaluate)")
