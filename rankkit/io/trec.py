"""TREC run files and qrels, the formats trec_eval reads.

    run:    qid Q0 docid rank score tag        (6 whitespace-separated fields)
    qrels:  qid iter docid rel                 (4 fields)

Runs are written with each query's documents sorted as trec_eval sorts them (it ignores the rank
column and re-sorts): score descending, exact ties by docid descending (byte order, `strcmp`).
Scores are written with `%.17g`, so every double round-trips and no ties are invented. Files are
written atomically (`-` is standard output).

Reading accepts gzip/bz2/xz by extension and `-` (rankkit.io.files.read_bytes), blank lines,
CRLF line endings and any mix of spaces and tabs. A run's lines are returned grouped by query:
a query whose lines are scattered is gathered stably, in order of first appearance. Rejected with
`path:line: message`: a wrong number of fields, a score or relevance that is not a finite number,
and a (qid, docid) listed twice (trec_eval refuses both files then).

The byte loops are Numba kernels on the file's bytes (one pass to cut lines into fields and parse
numbers, one hash pass per query for duplicates); Python only builds the strings it must return.
Numbers go through the one decimal kernel (rankkit.io.parse.parse_number); literals it leaves
(e.g. 17-digit `%.17g` output) are converted by NumPy's correctly rounded string-to-double cast
(rankkit.io.parse.slow_values), as in score files (rankkit.io.output).
"""

from __future__ import annotations

import itertools
import operator
import sys
from typing import NamedTuple

import numpy as np

from rankkit.errors import DataError, UsageError
from rankkit.io import parse as P
from rankkit.io.atomic import atomic_open
from rankkit.io.files import display_name, read_bytes
from rankkit.text import printable, utf8
from rankkit.compiler.dispatch import njit
from rankkit.metrics.ties import lex_rank, lexicographic_rank

# status codes of _scan
OK = 0
FIELD_COUNT = 1
BAD_NUMBER = 2
NONFINITE_NUMBER = 3

_LF = 10
_CR = 13
_CHUNK = 1 << 16  # lines formatted per write

RUN_FIELDS = "qid Q0 docid rank score tag"
QRELS_FIELDS = "qid iter docid rel"


# -- kernels ----------------------------------------------------------------------------------------
@njit
def _count_lines(buf):
    """An upper bound on the number of lines (LF, CR LF and a lone CR all end a line)."""
    n = 1
    for i in range(buf.shape[0]):
        if buf[i] == _LF or buf[i] == _CR:
            n += 1
    return n


@njit
def _scan(buf, n_fields, id_a, id_b, num_field, pow10, spans, line_no, values, slow, status):
    """Cut every non-blank line into whitespace-separated fields. For row r (the r-th non-blank
    line): spans[r] = (start, end) of fields id_a, id_b and num_field; values[r] = field num_field
    as a number, or slow[r] = True when the wrapper must convert it. Stops at the first line with
    a wrong field count or a bad number: status = (code, line, start, end, field count).
    Returns the number of rows."""
    n = buf.shape[0]
    pos = 0
    line = 0
    row = 0
    while pos < n:
        line += 1
        end, nxt = P.line_end(buf, pos, n)
        k = 0
        i = pos
        while True:
            while i < end and P.is_space(buf[i]):
                i += 1
            if i >= end:
                break
            j = i
            while j < end and not P.is_space(buf[j]):
                j += 1
            if k == id_a:
                spans[row, 0] = i
                spans[row, 1] = j
            elif k == id_b:
                spans[row, 2] = i
                spans[row, 3] = j
            elif k == num_field:
                spans[row, 4] = i
                spans[row, 5] = j
            k += 1
            i = j
        if k != 0:
            if k != n_fields:
                status[0] = FIELD_COUNT
                status[1] = line
                status[2] = pos
                status[3] = end
                status[4] = k
                return row
            s = spans[row, 4]
            e = spans[row, 5]
            st, v, sl = P.parse_number(buf, s, e, pow10)
            if st != P.NUM_OK:
                status[0] = NONFINITE_NUMBER if st == P.NUM_NONFINITE else BAD_NUMBER
                status[1] = line
                status[2] = s
                status[3] = e
                return row
            values[row] = v
            slow[row] = sl
            line_no[row] = line
            row += 1
        pos = nxt
    status[0] = OK
    return row


@njit
def _join(buf, starts, ends):
    """Tokens buf[starts[i]:ends[i]] joined by '\\n', as one uint8 array."""
    m = starts.shape[0]
    total = max(m - 1, 0)
    for i in range(m):
        total += ends[i] - starts[i]
    out = np.empty(total, dtype=np.uint8)
    p = 0
    for i in range(m):
        if i > 0:
            out[p] = _LF
            p += 1
        for k in range(starts[i], ends[i]):
            out[p] = buf[k]
            p += 1
    return out


@njit
def _same_bytes(buf, s1, e1, s2, e2):
    if e1 - s1 != e2 - s2:
        return False
    for k in range(e1 - s1):
        if buf[s1 + k] != buf[s2 + k]:
            return False
    return True


@njit
def _block_starts(buf, starts, ends):
    """Rows whose token differs from the previous row's (row 0 always): the starts of runs of
    equal qids."""
    n = starts.shape[0]
    flag = np.zeros(n, dtype=np.bool_)
    if n > 0:
        flag[0] = True
    for i in range(1, n):
        flag[i] = not _same_bytes(buf, starts[i - 1], ends[i - 1], starts[i], ends[i])
    return np.flatnonzero(flag)


@njit
def _fnv1a(buf, s, e):
    h = np.uint64(14695981039346656037)
    for k in range(s, e):
        h ^= np.uint64(buf[k])
        h *= np.uint64(1099511628211)
    return h


@njit
def _first_duplicate(buf, starts, ends, qptr, line_no):
    """(row, earlier row) of the first line, in file order, whose token repeats an earlier token
    of the same query; (-1, -1) if none. Rows of a query are in file order."""
    best, best_first = -1, -1
    for q in range(qptr.shape[0] - 1):
        b = qptr[q]
        m = qptr[q + 1] - b
        if m < 2:
            continue
        h = np.empty(m, dtype=np.uint64)
        for i in range(m):
            h[i] = _fnv1a(buf, starts[b + i], ends[b + i])
        order = np.argsort(h, kind="mergesort")  # stable: equal hashes stay in file order
        i = 0
        while i < m:
            j = i + 1
            while j < m and h[order[j]] == h[order[i]]:
                j += 1
            for u in range(i + 1, j):
                r = b + order[u]
                for t in range(i, u):
                    r0 = b + order[t]
                    if _same_bytes(buf, starts[r0], ends[r0], starts[r], ends[r]):
                        if best < 0 or line_no[r] < line_no[best]:
                            best, best_first = r, r0
                        break
            i = j
    return best, best_first


@njit
def _tied_rows(scores, qptr):
    """True for each row whose score equals another score of its query."""
    tied = np.zeros(scores.shape[0], dtype=np.bool_)
    for q in range(qptr.shape[0] - 1):
        b = qptr[q]
        m = qptr[q + 1] - b
        order = np.argsort(scores[b : b + m])
        for i in range(1, m):
            if scores[b + order[i]] == scores[b + order[i - 1]]:
                tied[b + order[i]] = True
                tied[b + order[i - 1]] = True
    return tied


@njit
def _trec_order(scores, tiebreak, qptr, order, rank):
    """Per query: rows by score descending, ties by tiebreak descending; order[i] is the row at
    output position i, rank[i] its 1-based rank within its query."""
    for q in range(qptr.shape[0] - 1):
        b = qptr[q]
        m = qptr[q + 1] - b
        neg_tb = np.empty(m, dtype=np.int64)
        for i in range(m):
            neg_tb[i] = -tiebreak[b + i]
        first = np.argsort(neg_tb, kind="mergesort")
        neg_s = np.empty(m, dtype=np.float64)
        for i in range(m):
            neg_s[i] = -scores[b + first[i]]
        second = np.argsort(neg_s, kind="mergesort")  # stable: ties keep the docid order
        for i in range(m):
            order[b + i] = b + first[second[i]]
            rank[b + i] = i + 1


# -- strings <-> bytes ------------------------------------------------------------------------------
def _strings(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> list[str]:
    """The tokens buf[starts[i]:ends[i]] as Python strings (UTF-8, bad bytes replaced)."""
    if starts.shape[0] == 0:
        return []
    # contiguous spans (a column of a (n, 2) array is not): one compiled _join, not two
    starts, ends = np.ascontiguousarray(starts), np.ascontiguousarray(ends)
    return _join(buf, starts, ends).tobytes().decode("utf-8", "replace").split("\n")


def _encode(strings: list[str], what: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """UTF-8 bytes of `strings` and each one's span; every string must be one non-empty token."""
    joined = utf8("\n".join(strings))
    buf = np.frombuffer(joined, dtype=np.uint8)
    cuts = np.flatnonzero(buf == _LF)
    if cuts.shape[0] != len(strings) - 1 or any(joined.count(c) for c in (b" ", b"\t", b"\r", b"\v", b"\f")):
        bad = next(i for i, s in enumerate(strings) if len(s.split()) != 1 or s.strip() != s)
        raise UsageError(f"{what} {strings[bad]!r} cannot be written to a TREC file (it must be one word without white space)")
    starts = np.empty(len(strings), dtype=np.int64)
    ends = np.empty(len(strings), dtype=np.int64)
    if len(strings):
        starts[0] = 0
        starts[1:] = cuts + 1
        ends[:-1] = cuts
        ends[-1] = buf.shape[0]
    empty = np.flatnonzero(ends == starts)
    if empty.shape[0]:
        raise UsageError(f"{what} number {int(empty[0])} is empty: it cannot be written to a TREC file")
    return buf, starts, ends


# -- writing ----------------------------------------------------------------------------------------
def write_trec_run(path: str, qids, docids: list[str], scores, qptr, tag: str = "rankkit") -> None:
    """Atomically write a TREC run: for each query q (rows qptr[q]:qptr[q+1]), its documents by
    score descending, ties by docid descending, as `qid Q0 docid rank score tag` lines with
    ranks from 1 and `%.17g` scores. `qids` holds one id (str or int) per query or per row."""
    scores = np.ascontiguousarray(scores, dtype=np.float64)
    qptr = np.ascontiguousarray(qptr, dtype=np.int64)
    if scores.ndim != 1 or qptr.ndim != 1:
        raise UsageError("scores and query offsets must be 1-D arrays")
    n = scores.shape[0]
    nq = qptr.shape[0] - 1
    if len(docids) != n:
        raise UsageError(f"{len(docids)} docids but {n} scores")
    if nq < 0 or qptr[0] != 0 or qptr[-1] != n or bool(np.any(np.diff(qptr) < 0)):
        raise UsageError(f"query offsets must rise from 0 to {n} (the number of rows)")
    if len(qids) == n:
        query_names = [str(qids[i]) for i in qptr[:-1].tolist()]
    elif len(qids) == nq:
        query_names = [str(q) for q in qids]
    else:
        raise UsageError(f"{len(qids)} qids for {nq} queries and {n} rows (give one per query or one per row)")
    bad = np.flatnonzero(~np.isfinite(scores))
    if bad.shape[0]:
        raise UsageError(f"score {scores[bad[0]]!r} of row {int(bad[0])} is not finite: it cannot be written to a TREC run")
    _encode(query_names, "qid")
    _encode([tag], "tag")
    buf, starts, ends = _encode(docids, "docid")
    tiebreak = np.zeros(n, dtype=np.int64)  # docid order matters only among equal scores
    tied = np.flatnonzero(_tied_rows(scores, qptr))
    if tied.shape[0]:
        tiebreak[tied] = lex_rank(buf, starts[tied], ends[tied])
    order = np.empty(n, dtype=np.int64)
    rank = np.empty(n, dtype=np.int64)
    _trec_order(scores, tiebreak, qptr, order, rank)
    row_query = np.repeat(np.arange(nq), np.diff(qptr))
    # bytes out: a docid is written exactly as it was read, whatever the locale's encoding
    q_bytes = [utf8(q) for q in query_names]
    tag_bytes = utf8(tag)
    whole = buf.tobytes()
    if path == "-":
        sys.stdout.flush()
    with atomic_open(path, binary=True) as fh:
        for a in range(0, n, _CHUNK):
            rows = order[a : a + _CHUNK]
            lines = zip(row_query[rows].tolist(), starts[rows].tolist(), ends[rows].tolist(),
                        rank[a : a + _CHUNK].tolist(), scores[rows].tolist())
            fh.write(b"".join([b"%s Q0 %s %d %.17g %s\n" % (q_bytes[q], whole[s:e], k, v, tag_bytes)
                               for q, s, e, k, v in lines]))


# -- reading ----------------------------------------------------------------------------------------
class _Table(NamedTuple):
    buf: np.ndarray
    spans: np.ndarray  # int64[n, 6]: (start, end) of the two id fields and the number field
    values: np.ndarray  # float64[n]
    line_no: np.ndarray  # int64[n]


def _read_table(path: str, n_fields: int, id_a: int, id_b: int, num_field: int, fields: str, number: str) -> _Table:
    name = display_name(path)
    buf = read_bytes(path)
    cap = _count_lines(buf)
    spans = np.empty((cap, 6), dtype=np.int64)
    line_no = np.empty(cap, dtype=np.int64)
    values = np.empty(cap, dtype=np.float64)
    slow = np.zeros(cap, dtype=np.bool_)
    status = np.zeros(5, dtype=np.int64)
    rows = _scan(buf, n_fields, id_a, id_b, num_field, P.POW10, spans, line_no, values, slow, status)
    code, line, start, end, count = (int(v) for v in status)
    if code == FIELD_COUNT:
        text = bytes(buf[start:end]).decode("utf-8", "replace").strip()
        raise DataError(name, f"expected {n_fields} fields ({fields}), found {count}: '{printable(text)}'", line)
    if code != OK:
        token = printable(bytes(buf[start:end]).decode("utf-8", "replace"))
        what = "is not finite" if code == NONFINITE_NUMBER else "is not a number"
        raise DataError(name, f"{number} '{token}' {what}", line)
    if rows == 0:
        raise DataError(name, "is empty" if buf.shape[0] == 0 else "has no data lines (only blank lines)")
    spans, line_no, values, slow = spans[:rows], line_no[:rows], values[:rows], slow[:rows]
    hard = np.flatnonzero(slow)
    if hard.shape[0]:  # long literals: NumPy's correctly rounded cast (rankkit.io.parse.slow_values)
        converted = P.slow_values(buf, spans[hard, 4], spans[hard, 5])
        inf = np.flatnonzero(~np.isfinite(converted))
        if inf.shape[0]:
            r = int(hard[inf[0]])
            token = printable(bytes(buf[spans[r, 4] : spans[r, 5]]).decode("ascii", "replace"))
            raise DataError(name, f"{number} '{token}' is not finite (overflows a double)", int(line_no[r]))
        values[hard] = converted
    return _Table(buf, spans, values, line_no)


def _group(table: _Table) -> tuple[_Table, np.ndarray]:
    """Gather each qid's rows (stable, queries in order of first appearance): the regrouped
    table and its query offsets."""
    buf, spans = table.buf, table.spans
    starts = _block_starts(buf, spans[:, 0].copy(), spans[:, 1].copy())
    n = spans.shape[0]
    lengths = np.diff(np.append(starts, n))
    names = _strings(buf, spans[starts, 0], spans[starts, 1])
    first: dict[str, int] = {}
    block_query = np.fromiter((first.setdefault(q, len(first)) for q in names), dtype=np.int64, count=len(names))
    if len(first) < len(names):  # scattered queries: gather them
        order = np.argsort(np.repeat(block_query, lengths), kind="stable")
        table = _Table(buf, spans[order], table.values[order], table.line_no[order])
        counts = np.bincount(block_query, weights=lengths, minlength=len(first)).astype(np.int64)
    else:
        counts = lengths.astype(np.int64)
    qptr = np.zeros(len(first) + 1, dtype=np.int64)
    np.cumsum(counts, out=qptr[1:])
    return table, qptr


def _query_names(table: _Table, qptr: np.ndarray) -> list[str]:
    heads = qptr[:-1]
    return _strings(table.buf, table.spans[heads, 0], table.spans[heads, 1])


def _check_duplicates(name: str, table: _Table, qptr: np.ndarray) -> None:
    sp = table.spans
    r, r0 = _first_duplicate(table.buf, sp[:, 2].copy(), sp[:, 3].copy(), qptr, table.line_no)
    if r >= 0:
        buf = table.buf
        doc = printable(bytes(buf[sp[r, 2] : sp[r, 3]]).decode("utf-8", "replace"))
        qid = printable(bytes(buf[sp[r, 0] : sp[r, 1]]).decode("utf-8", "replace"))
        raise DataError(
            name,
            f"document '{doc}' appears twice for query '{qid}' (first at line {int(table.line_no[r0])})",
            int(table.line_no[r]),
        )


def read_trec_run(path: str) -> tuple[list[str], list[str], np.ndarray]:
    """Read a TREC run: (qids, docids, scores) per line, grouped by query (first appearance),
    in file order within each query. The rank and tag columns are ignored, as trec_eval does."""
    table = _read_table(path, 6, 0, 2, 4, RUN_FIELDS, "score")
    table, qptr = _group(table)
    _check_duplicates(display_name(path), table, qptr)
    names = _query_names(table, qptr)
    qids = list(itertools.chain.from_iterable(map(itertools.repeat, names, np.diff(qptr).tolist())))
    docids = _strings(table.buf, table.spans[:, 2], table.spans[:, 3])
    return qids, docids, table.values


def read_qrels(path: str) -> dict[str, dict[str, float]]:
    """Read TREC qrels: {qid: {docid: relevance}}, queries in order of first appearance.
    The iteration column is ignored; a relevance may be any finite number."""
    table = _read_table(path, 4, 0, 2, 3, QRELS_FIELDS, "relevance")
    table, qptr = _group(table)
    _check_duplicates(display_name(path), table, qptr)
    names = _query_names(table, qptr)
    docids = _strings(table.buf, table.spans[:, 2], table.spans[:, 3])
    rels = table.values.tolist()
    bounds = qptr.tolist()
    return {q: dict(zip(docids[a:b], rels[a:b])) for q, a, b in zip(names, bounds[:-1], bounds[1:])}


# -- runs against qrels -----------------------------------------------------------------------------
class RunJudgements(NamedTuple):
    """A run's documents with their judged labels, ready for the metrics (all arrays by row)."""

    labels: np.ndarray  # float64[n]: the qrels label of each retrieved document, 0 if unjudged
    scores: np.ndarray  # float64[n]
    qptr: np.ndarray  # int64[Q + 1]: query q is rows qptr[q]:qptr[q+1]
    tiebreak: np.ndarray  # int64[n]: lexicographic rank of the docid (larger ranks first on ties)
    judged: tuple[np.ndarray, np.ndarray]  # (jptr int64[Q + 1], jlabels float64[m]): all judged
    # labels of query q are jlabels[jptr[q]:jptr[q+1]], in descending order
    query_ids: list[str]


def _run_queries(qids: list[str]) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray | None]:
    """(query names in order of first appearance, per-row query number, rows per query, the
    stable order that gathers scattered queries or None)."""
    n = len(qids)
    change = np.ones(n, dtype=bool)
    if n > 1:
        change[1:] = np.fromiter(map(operator.ne, itertools.islice(qids, 1, None), qids), dtype=bool, count=n - 1)
    starts = np.flatnonzero(change)
    lengths = np.diff(np.append(starts, n))
    first: dict[str, int] = {}
    block_query = np.fromiter((first.setdefault(qids[i], len(first)) for i in starts.tolist()), dtype=np.int64, count=starts.shape[0])
    row_query = np.repeat(block_query, lengths)
    order = np.argsort(row_query, kind="stable") if len(first) < starts.shape[0] else None
    counts = np.bincount(block_query, weights=lengths, minlength=len(first)).astype(np.int64)
    return list(first), row_query, counts, order


def skipped_queries(run, qrels: dict[str, dict[str, float]]) -> list[str]:
    """The run's queries that the qrels do not judge (run_against_qrels drops them, as trec_eval
    does), in order of first appearance."""
    names, _, _, _ = _run_queries(list(run[0]))
    return [q for q in names if q not in qrels]


def run_against_qrels(run, qrels: dict[str, dict[str, float]]) -> RunJudgements:
    """Label a run (qids, docids, scores) from qrels, keeping only the queries the qrels judge,
    in run order (first appearance). Each query's rows keep their run order; the metrics sort
    by score, ties by larger `tiebreak` first, which is trec_eval's docid-descending order."""
    qids, docids, scores = run
    qids, docids = list(qids), list(docids)
    scores = np.ascontiguousarray(scores, dtype=np.float64)
    n = len(qids)
    if len(docids) != n or scores.shape != (n,):
        raise UsageError(f"a run needs as many qids, docids and scores; got {n}, {len(docids)} and {scores.shape[0]}")
    names, row_query, counts, order = _run_queries(qids) if n else ([], np.zeros(0, np.int64), np.zeros(0, np.int64), None)
    kept = np.fromiter((q in qrels for q in names), dtype=bool, count=len(names))
    query_ids = [q for q, k in zip(names, kept.tolist()) if k]
    rows = np.arange(n) if order is None else order
    rows = rows[kept[row_query[rows]]] if n else rows
    if rows.shape[0] == n and order is None:
        docs = docids
    else:
        docs = [docids[i] for i in rows.tolist()]
    qptr = np.zeros(len(query_ids) + 1, dtype=np.int64)
    np.cumsum(counts[kept], out=qptr[1:])
    bounds = qptr.tolist()
    labels = np.empty(rows.shape[0], dtype=np.float64)
    jlengths = np.empty(len(query_ids), dtype=np.int64)
    jvalues: list[float] = []
    for k, q in enumerate(query_ids):
        judged = qrels[q]
        a, b = bounds[k], bounds[k + 1]
        labels[a:b] = list(map(judged.get, docs[a:b], itertools.repeat(0.0, b - a)))
        jvalues.extend(judged.values())
        jlengths[k] = len(judged)
    jptr = np.zeros(len(query_ids) + 1, dtype=np.int64)
    np.cumsum(jlengths, out=jptr[1:])
    jlabels = np.array(jvalues, dtype=np.float64)
    if jlabels.shape[0]:
        jq = np.repeat(np.arange(len(query_ids)), jlengths)
        jlabels = jlabels[np.lexsort((-jlabels, jq))]
    tiebreak = lexicographic_rank(docs)
    if rows.shape[0]:
        qidx = np.repeat(np.arange(len(query_ids), dtype=np.int64), np.diff(qptr))
        key = np.sort(qidx * (int(tiebreak.max()) + 1) + tiebreak)
        dup = np.flatnonzero(key[1:] == key[:-1])
        if dup.shape[0]:
            width = int(tiebreak.max()) + 1
            q, t = divmod(int(key[dup[0]]), width)
            doc = docs[int(np.flatnonzero((qidx == q) & (tiebreak == t))[0])]
            raise UsageError(f"the run lists document '{doc}' twice for query '{query_ids[q]}'")
    return RunJudgements(labels, scores[rows], qptr, tiebreak, (jptr, jlabels), query_ids)
