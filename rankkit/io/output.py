"""Score files: one score per line, in the order of the data file (the svm_rank convention),
written with `%.17g` so that no ties are invented and every double round-trips exactly.

Read by the one decimal kernel of every reader (rankkit.io.parse.parse_number, a Numba scan of the
file's bytes; the literals it leaves, such as `%.17g`'s 17 digits, by rankkit.io.parse.slow_values):
the double of Python's float() for every token float() takes, bit for bit. What a score file may
hold is what it was before the kernel read it (when float() read it): one number a line with white
space (space, tab, VT, FF) around it, signs, exponents, `nan`/`inf` (refused: not finite), no `_`;
each refusal is one line naming the file, the line and the token (_check_score_line words it)."""

from __future__ import annotations

import math

import numpy as np

from rankkit.compiler.dispatch import njit
from rankkit.errors import DataError
from rankkit.io import parse as P
from rankkit.io.atomic import atomic_open
from rankkit.io.files import display_name, read_bytes
from rankkit.text import printable

_CHUNK = 1 << 16
_LF = 10
_CR = 13

# status codes of _scan_scores
OK = 0
EMPTY_LINE = 1
FIELDS = 2  # more than one field on the line
NOT_A_NUMBER = 3  # the kernel refused the token (or it is not finite)


def write_scores(path: str, scores: np.ndarray) -> None:
    """Atomically write one `%.17g` score per line (`-` for standard output)."""
    with atomic_open(path) as fh:
        values = scores.tolist()
        for start in range(0, len(values), _CHUNK):
            chunk = values[start : start + _CHUNK]
            fh.write("\n".join(["%.17g" % v for v in chunk]))
            fh.write("\n")


@njit
def _scan_scores(buf, pow10, values, slow, starts, ends, line_no, status):
    """Every line of buf (ending at LF, CR LF or a lone CR) as one number: values[r] of the r-th
    line, or slow[r] = True with its token at buf[starts[r]:ends[r]] for the wrapper to convert.
    A blank last line is no line (as bytes.splitlines and a final strip took it). Stops at the first
    line that is blank, holds two fields or a token the kernel refuses: status = (code, line).
    Returns the number of scores read."""
    n = buf.shape[0]
    pos = 0
    line = 0
    row = 0
    while pos < n:
        line += 1
        end, nxt = P.line_end(buf, pos, n)
        i = pos
        while i < end and P.is_space(buf[i]):
            i += 1
        if i >= end:
            if nxt >= n:  # the last line, blank
                break
            status[0] = EMPTY_LINE
            status[1] = line
            return row
        j = i
        while j < end and not P.is_space(buf[j]):
            j += 1
        k = j
        while k < end and P.is_space(buf[k]):
            k += 1
        if k < end:
            status[0] = FIELDS
            status[1] = line
            return row
        st, v, sl = P.parse_number(buf, i, j, pow10)
        if st != P.NUM_OK:
            status[0] = NOT_A_NUMBER
            status[1] = line
            return row
        values[row] = v
        slow[row] = sl
        starts[row] = i
        ends[row] = j
        line_no[row] = line
        row += 1
        pos = nxt
    status[0] = OK
    return row


def read_scores(path: str) -> np.ndarray:
    """Read a score file: exactly one number per line (`-` for standard input). A line ends at LF,
    CR LF or a lone CR. Anything else on a line (a second field, `qid:`, a LETOR or TREC run line)
    is an error naming the line, so that a file given in the wrong place is not taken for scores.
    The numbers are read by the one decimal kernel (module docstring)."""
    name = display_name(path)
    buf = read_bytes(path)
    cap = int(np.count_nonzero(buf == _LF)) + int(np.count_nonzero(buf == _CR)) + 1
    values = np.empty(cap, dtype=np.float64)
    slow = np.zeros(cap, dtype=np.bool_)
    starts = np.empty(cap, dtype=np.int64)
    ends = np.empty(cap, dtype=np.int64)
    line_no = np.empty(cap, dtype=np.int64)
    status = np.zeros(2, dtype=np.int64)
    rows = _scan_scores(buf, P.POW10, values, slow, starts, ends, line_no, status)
    values, slow, starts, ends, line_no = values[:rows], slow[:rows], starts[:rows], ends[:rows], line_no[:rows]
    hard = np.flatnonzero(slow)
    if hard.shape[0]:  # long literals (%.17g's): NumPy's correctly rounded cast
        values[hard] = P.slow_values(buf, starts[hard], ends[hard])
    bad = np.flatnonzero(~np.isfinite(values))  # nan and inf are refused by the kernel: overflows here
    if bad.shape[0]:
        _refuse(name, buf, int(line_no[bad[0]]))
    if int(status[0]) != OK:
        _refuse(name, buf, int(status[1]))
    if rows == 0:
        raise DataError(name, "is empty (expected one score per line)")
    return values


def _refuse(name: str, buf: np.ndarray, line: int) -> None:
    """The error of line `line` (1-based), worded by _check_score_line: the kernel stopped there."""
    text = buf.tobytes().splitlines()[line - 1]  # bytes.splitlines: LF, CR LF and CR only, as the kernel
    _check_score_line(name, line, text)
    raise DataError(name, f"score '{printable(text.strip().decode('utf-8', 'replace'))}' is not a number", line)


def _check_score_line(name: str, i: int, line: bytes) -> None:
    fields = line.split()
    text = printable(line.strip().decode("utf-8", "replace"))
    if not fields:
        raise DataError(name, "empty line (expected one score per line)", i)
    if len(fields) == 6 and fields[1].upper() == b"Q0":
        raise DataError(name, "this is a TREC run line (qid Q0 docid rank score tag), not a score: evaluate "
                              f"runs with `rankkit eval --qrels QRELS RUN`: '{text}'", i)
    if any(b":" in f for f in fields[1:]) or fields[0].lower().startswith(b"qid:"):
        raise DataError(name, "this is a LETOR data line (label qid:... index:value), not a score: give "
                              f"`rankkit eval DATA SCORES`, the data file first: '{text}'", i)
    if len(fields) > 1:
        raise DataError(name, f"{len(fields)} fields where a score file has one number per line: '{text}'", i)
    token = fields[0]
    try:
        if b"_" in token:
            raise ValueError
        v = float(token)
    except ValueError:
        raise DataError(name, f"score '{text}' is not a number", i) from None
    if not math.isfinite(v):
        raise DataError(name, f"score '{text}' is not finite", i)
