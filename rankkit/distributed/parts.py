"""Several PARTS in one process (`rankkit train PARTS... MODEL` without --dask): the parts read one
by one with rankkit's reader and joined as if the files were concatenated. A query id in two parts
is an error naming both (the same rule as on a cluster)."""

from __future__ import annotations

import glob
import os
import re

import numpy as np

from rankkit.data import Dataset
from rankkit.errors import DataError, UsageError


def is_url(path: str) -> bool:
    """protocol://...: a path for fsspec (s3://, gs://, hdfs://, file://, memory://, ...)."""
    return re.match(r"^[A-Za-z][A-Za-z0-9+.\-]*://", str(path)) is not None


def joined_name(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else f"{parts[0]} (+{len(parts) - 1} more parts)"


def check_split(datasets: list[Dataset]) -> None:
    """DataError if a qid occurs in two parts, naming both, at the first line of the later one."""
    if len(datasets) < 2:
        return
    for k, ds in enumerate(datasets):
        if not ds.has_qid:
            raise DataError(ds.source, "has no qid (the whole file is one query): with several parts, every line "
                            "needs qid:<int> and each query must be whole in one part")
    qids = [np.unique(ds.qid[ds.qptr[:-1]]) for ds in datasets]
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


def concatenate(datasets: list[Dataset]) -> Dataset:
    """One dataset holding the parts' rows in part order (queries stay contiguous). Line numbers
    are dropped when there are several parts: a line number alone would not say which file."""
    if len(datasets) == 1:
        return datasets[0]
    check_split(datasets)
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


def expand_parts(patterns) -> list[str]:
    """PARTS as given: files, or globs expanded by rankkit (sorted); each pattern in turn, so the
    order of the parts is the order of the arguments, and each glob's files in sorted order."""
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
            out.extend(hits)
        else:
            out.append(p)
    seen = set()
    for p in out:
        if p in seen:
            raise UsageError(f"the part {p} is given twice")
        seen.add(p)
    if "-" in out and len(out) > 1:
        raise UsageError("standard input (-) cannot be one of several parts")
    return out
