"""The block reader of `--sampler stream` (rankkit.solvers.stream): a training file read in chunks
cut at line boundaries, parsed by the one reader (rankkit.io.svmlight.parse_bytes), and given to
the solver query by query, so that the solver never parses.

    line_chunks(path, chunk_bytes, hasher)        bytes of whole lines, and the lines before them
    stream_queries(path, zero_based, chunk_bytes, hasher, groups)
                                                  (qid, labels, data, indices, indptr, first line)
                                                  of every query, in file order

Layer: io (tests/test_architecture.py's LAYERS): it imports the readers beside it and the base.
"""

from __future__ import annotations

import re

import numpy as np

from rankkit.errors import DataError, UsageError
from rankkit.io import groups as G
from rankkit.io import parse as P
from rankkit.io.svmlight import count_line_ends, iter_blocks, last_line_end, parse_bytes

__all__ = ["line_chunks", "stream_queries"]


def line_chunks(path: str, chunk_bytes: int, hasher=None):
    """(bytes of whole lines, number of lines before them) for the file, chunk by chunk; the raw
    bytes also go through `hasher` (e.g. hashlib.sha256()) when given. Reading and decompression
    errors are DataErrors (rankkit.io.svmlight.iter_blocks); a line ends at LF, CR LF or a lone CR."""
    if path == "-":
        raise UsageError("--sampler stream reads the training file twice: give a file, not standard input")
    lines_before = 0
    rest = b""
    for block in iter_blocks(path, chunk_bytes):
        if hasher is not None:
            hasher.update(block)
        block = rest + block
        cut = last_line_end(block)
        if cut == 0:
            rest = block
            continue
        yield block[:cut], lines_before
        lines_before += count_line_ends(block, cut)
        rest = block[cut:]
    if rest:
        yield rest, lines_before


def _parse(text: bytes, lines_before: int, path: str, zero_based: bool):
    try:
        return parse_bytes(np.frombuffer(text, dtype=np.uint8), path, zero_based)
    except DataError as exc:
        if exc.line is None:
            if "no data lines" in exc.message:
                return None
            raise
        message = re.sub(r"(first seen at line )(\d+)", lambda m: m.group(1) + str(int(m.group(2)) + lines_before),
                         exc.message)
        raise DataError(path, message, exc.line + lines_before) from None


def stream_queries(path: str, zero_based: bool, chunk_bytes: int, hasher=None, groups=None):
    """Every query of the file as (qid, labels, data, indices, indptr, first line), in file order;
    a query split across two chunks is joined. A qid that comes back later is an error. With
    `groups` (rankkit.io.groups.Groups) the queries are the groups, checked as the in-memory
    reader checks them (the sizes add up to the data lines; qids in the file agree)."""
    seen: set[int] = set()
    pending = None
    rows = 0
    prev = None  # (file qid, group number) of the last row of the previous chunk
    for text, lines_before in line_chunks(path, chunk_bytes, hasher):
        ds = _parse(text, lines_before, path, zero_based)
        if ds is None:
            continue
        if groups is not None:
            prev = _use_groups(ds, groups, rows, prev, path, lines_before)
            rows += ds.n_rows
        for q in range(ds.n_queries):
            s, e = int(ds.qptr[q]), int(ds.qptr[q + 1])
            a, b = int(ds.indptr[s]), int(ds.indptr[e])
            block = (int(ds.qid[s]), ds.y[s:e], ds.data[a:b], ds.indices[a:b], ds.indptr[s : e + 1] - a,
                     int(ds.line[s]) + lines_before)
            if pending is not None and pending[0] == block[0]:  # the same query continues
                pending = (pending[0], np.concatenate([pending[1], block[1]]), np.concatenate([pending[2], block[2]]),
                           np.concatenate([pending[3], block[3]]),
                           np.concatenate([pending[4], block[4][1:] + pending[4][-1]]), pending[5])
                continue
            if pending is not None:
                yield pending
            if block[0] in seen:
                raise DataError(path, f"qid {block[0]} appears again after other queries "
                                      "(--sampler stream needs each query's documents contiguous)", block[5])
            seen.add(block[0])
            pending = block
    if groups is not None:
        G.check_total(groups, rows, path)
    if pending is not None:
        yield pending


def _use_groups(ds, groups, first_row: int, prev, path: str, lines_before: int):
    """Give the rows of chunk `ds` (rows first_row.. of the file) the queries of the group file,
    in place. Returns the (file qid, group) of its last row, for the next chunk."""
    group_no = G.row_groups(groups.sizes, first_row, ds.n_rows)  # G + 1 past the last group: refused at the end
    file_qid = ds.qid
    if ds.has_qid:
        i = G.disagreement(file_qid, group_no, prev)
        if i >= 0:
            qs = file_qid if prev is None else np.concatenate([[prev[0]], file_qid])
            gs = group_no if prev is None else np.concatenate([[prev[1]], group_no])
            k = i if prev is None else i + 1
            raise G.disagreement_error(groups, path, qs, gs, k, int(ds.line[i]) + lines_before)
        out = (int(file_qid[-1]), int(group_no[-1]))
    else:
        out = (0, int(group_no[-1]))
        ds.qid = group_no
        ds.qptr = P.query_blocks(group_no)
        ds.has_qid = True
    return out
