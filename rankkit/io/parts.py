"""PARTS: the files of one dataset, each holding whole queries.

`expand_parts` turns the PARTS a user gives into the paths every face reads (globs expanded,
relative paths made absolute here, on the client: a Dask worker has another working directory;
URLs as they are). Each part is opened as one file is (rankkit.io.svmlight.read_svmlight: its
group file, its compression). Several parts in one process with a solver other than newton
(`rankkit train PARTS... MODEL --solver nlcg`; newton keeps them apart: rankkit.parts.newton.
LocalProblem) are joined as if the files were concatenated. A query id in two parts is an error naming
both (the same rule as on a cluster); the queries a group file numbers (a part without qids) are
that part's own and never count as split."""

from __future__ import annotations

import glob
import os

import numpy as np

from rankkit.data import Dataset
from rankkit.errors import DataError, UsageError
from rankkit.io.files import is_url
from rankkit.io.groups import refuse_group_file

__all__ = ["is_url", "joined_name", "check_split", "concatenate", "expand_parts", "shareable_qids"]


def joined_name(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else f"{parts[0]} (+{len(parts) - 1} more parts)"


def check_split(datasets: list[Dataset]) -> None:
    """DataError if a qid occurs in two parts, naming both, at the first line of the later one. A
    part whose queries a group file numbered (Dataset.group_file) cannot share one with another."""
    if len(datasets) < 2:
        return
    for k, ds in enumerate(datasets):
        if not ds.has_qid:
            raise DataError(ds.source, "has no qid (the whole file is one query): with several parts, every line "
                            "needs qid:<int> (or a group file beside it) and each query must be whole in one part")
    qids = [shareable_qids(ds) for ds in datasets]
    q = np.concatenate(qids)
    p = np.concatenate([np.full(a.shape[0], k, dtype=np.int64) for k, a in enumerate(qids)])
    order = np.argsort(q, kind="stable")
    q, p = q[order], p[order]
    dup = np.flatnonzero(q[1:] == q[:-1])
    if dup.size:
        i = int(dup[np.lexsort((p[dup], p[dup + 1]))[0]])
        a, b, qid = int(p[i]), int(p[i + 1]), int(q[i])
        rows = np.flatnonzero(datasets[b].qid == qid)
        line = int(datasets[b].line[rows[0]]) if datasets[b].line is not None else None
        raise DataError(datasets[b].source, f"qid {qid} is also in the part {datasets[a].source}: a query split "
                        "across parts (each query must be whole in one part)", line)


def shareable_qids(ds: Dataset) -> np.ndarray:
    """The sorted distinct qids of a part that another part could also hold: none when a group
    file numbered its queries (those are the part's own)."""
    if ds.group_file is not None:
        return np.zeros(0, dtype=np.int64)
    return np.unique(ds.qid[ds.qptr[:-1]])


def concatenate(datasets: list[Dataset], consume: bool = False) -> Dataset:
    """One dataset holding the parts' rows in part order (queries stay contiguous). Line numbers
    are dropped when there are several parts: a line number alone would not say which file.

    consume: the list is the only holder of the parts (it is emptied): the first part's arrays
    grow in place to the whole (a realloc, which moves pages rather than copying them) and each
    later part is copied in and freed at once, so the peak is the data plus one part, not twice
    the data (`rankkit train PARTS...` in one process)."""
    if len(datasets) == 1:
        return datasets.pop() if consume else datasets[0]
    check_split(datasets)
    if consume:
        return _join_in_place(datasets)
    offsets = np.cumsum([0] + [ds.nnz for ds in datasets[:-1]])
    row_offsets = np.cumsum([0] + [ds.n_rows for ds in datasets[:-1]])
    indptr = np.concatenate([datasets[0].indptr[:1]] + [ds.indptr[1:] + o for ds, o in zip(datasets, offsets)])
    qptr = np.concatenate([datasets[0].qptr[:1]] + [ds.qptr[1:] + o for ds, o in zip(datasets, row_offsets)])
    labelled = None
    if any(ds.labelled is not None for ds in datasets):
        labelled = np.concatenate([np.ones(ds.n_rows, bool) if ds.labelled is None else ds.labelled for ds in datasets])
    out = Dataset(
        data=np.concatenate([ds.data for ds in datasets]),
        indices=np.concatenate([ds.indices for ds in datasets]).astype(np.int32, copy=False),
        indptr=indptr.astype(np.int64, copy=False),
        y=np.concatenate([ds.y for ds in datasets]),
        qid=np.concatenate([ds.qid for ds in datasets]),
        qptr=qptr.astype(np.int64, copy=False),
        n_features=max(ds.n_features for ds in datasets),
        source=joined_name([ds.source for ds in datasets]),
        line=None,
        has_qid=True,
        labelled=labelled,
    )
    return out.validate()


def _grown(a: np.ndarray, n: int) -> np.ndarray:
    """`a` (held by nothing else: the caller's reference is its last) with room for n items: a
    realloc, which on Linux moves a large array's pages rather than copying them (numpy fills the
    new tail with zeros, so only the tail's pages are new)."""
    if a.base is None and a.flags.owndata and a.flags.c_contiguous:
        a.resize((n,) + a.shape[1:], refcheck=False)
        return a
    out = np.empty((n,) + a.shape[1:], dtype=a.dtype)  # a view: copied once
    out[:a.shape[0]] = a
    return out


def _trim() -> None:
    """Give the heap's free pages back to the system (glibc's malloc_trim): arrays under malloc's
    mmap threshold (which rises to the size of the last large array freed) come from the heap,
    whose freed middle pages otherwise stay counted in the process's memory, part after part."""
    global _MALLOC_TRIM
    if _MALLOC_TRIM is None:
        try:
            import ctypes

            _MALLOC_TRIM = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):  # not glibc: nothing to do
            _MALLOC_TRIM = False
    if _MALLOC_TRIM:
        _MALLOC_TRIM(0)


_MALLOC_TRIM = None


def _join_in_place(datasets: list[Dataset]) -> Dataset:
    """concatenate(consume=True): each later part appended to the first part's arrays, which grow
    by that part's size only, then freed, so the peak is the joined data plus one part."""
    sources = [ds.source for ds in datasets]
    n_features = max(ds.n_features for ds in datasets)
    wide = any(ds.indices.dtype != datasets[0].indices.dtype for ds in datasets)  # uint16 and int32 parts: int32
    labelled = None
    if any(ds.labelled is not None for ds in datasets):
        labelled = np.concatenate([np.ones(ds.n_rows, bool) if ds.labelled is None else ds.labelled for ds in datasets])
    first = datasets[0]
    datasets[0] = None
    row, nz, q = first.n_rows, first.nnz, first.n_queries
    arrays = {"data": first.data, "indices": first.indices.astype(np.int32) if wide else first.indices,
              "indptr": first.indptr, "y": first.y, "qid": first.qid, "qptr": first.qptr}
    del first
    for k in range(1, len(datasets)):
        ds = datasets[k]
        datasets[k] = None
        n_rows, nnz, n_queries = ds.n_rows, ds.nnz, ds.n_queries
        part = {"data": ds.data, "indices": ds.indices, "indptr": ds.indptr[1:] + nz, "y": ds.y, "qid": ds.qid,
                "qptr": ds.qptr[1:] + row}
        del ds
        at = {"data": nz, "indices": nz, "indptr": row + 1, "y": row, "qid": row, "qptr": q + 1}
        for key, start in at.items():  # field by field: the peak is the joined data plus one field of one part
            piece = part.pop(key)
            a = arrays.pop(key)  # the dict's reference was the last one besides `a`
            a = _grown(a, start + piece.shape[0])
            a[start:] = piece
            arrays[key] = a
            del a, piece
        row, nz, q = row + n_rows, nz + nnz, q + n_queries
        _trim()
    datasets.clear()
    out = Dataset(n_features=n_features, source=joined_name(sources), line=None, has_qid=True, labelled=labelled,
                  **arrays)
    return out.validate()


def refuse_collection(value, where: str, instead: str) -> None:
    """A dask array, dataframe or series (anything with a dask graph; dask is not imported) given
    where files or arrays in memory are taken: one UsageError line, at once, pointing to the
    Dask face (`instead`), rather than computing the collection into this process or failing on it."""
    graph = getattr(value, "__dask_graph__", None)
    if callable(graph) and not isinstance(value, type):
        raise UsageError(f"{where} is a dask {type(value).__name__}: use {instead} (rankkit.dask: the data stays on "
                         "the workers)")


def expand_parts(patterns) -> list[str]:
    """PARTS as given: files, or globs expanded by rankkit (sorted); each pattern in turn, so the
    order of the parts is the order of the arguments, and each glob's files in sorted order.

    A local path comes back absolute (os.path.abspath: against this process's working directory,
    symbolic links kept), since the workers that read it run elsewhere; a URL and `-` as given."""
    refuse_collection(patterns, "parts", "rankkit.dask.DaskRankSVM for dask arrays and dataframes")
    out = []
    for p in patterns:
        p = str(p)
        if is_url(p):
            if glob.has_magic(p):
                try:
                    import fsspec

                    hits = sorted(f.full_name for f in fsspec.open_files(p))
                except ImportError:
                    raise UsageError(f"{p}: a URL needs fsspec (pip install 'rankkit[dask]')") from None
                if not hits:
                    raise DataError(p, "no file matches this pattern")
                out.extend(hits)
            else:
                out.append(p)
        elif p != "-" and glob.has_magic(p) and not os.path.exists(p):
            hits = sorted(glob.glob(p))
            if not hits:
                raise DataError(p, "no file matches this pattern")
            out.extend(os.path.abspath(h) for h in hits)
        elif p == "-":
            out.append(p)
        else:
            out.append(os.path.abspath(p))
    for p in out:  # a glob `part-*` also matches `part-1.txt.query`: name it for what it is
        refuse_group_file(p, out, what="part", hint=": leave it out of the parts (a pattern such as part-*.txt "
                          "rather than part-* does)")
    seen = set()
    for p in out:
        if p in seen:
            raise UsageError(f"the part {p} is given twice")
        seen.add(p)
    if "-" in out and len(out) > 1:
        raise UsageError("standard input (-) cannot be one of several parts")
    return out
