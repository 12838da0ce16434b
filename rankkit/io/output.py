"""Score files: one score per line, in the order of the data file (the svm_rank convention),
written with `%.17g` so that no ties are invented and every double round-trips exactly."""

from __future__ import annotations

import math

import numpy as np

from rankkit.errors import DataError
from rankkit.io.atomic import atomic_open
from rankkit.io.files import display_name, read_bytes
from rankkit.text import printable

_CHUNK = 1 << 16


def write_scores(path: str, scores: np.ndarray) -> None:
    """Atomically write one `%.17g` score per line (`-` for standard output)."""
    with atomic_open(path) as fh:
        values = scores.tolist()
        for start in range(0, len(values), _CHUNK):
            chunk = values[start : start + _CHUNK]
            fh.write("\n".join(["%.17g" % v for v in chunk]))
            fh.write("\n")


def read_scores(path: str) -> np.ndarray:
    """Read a score file: exactly one number per line (`-` for standard input). A line ends at LF,
    CR LF or a lone CR. Anything else on a line (a second field, `qid:`, a LETOR or TREC run line)
    is an error naming the line, so that a file given in the wrong place is not taken for scores."""
    name = display_name(path)
    raw = read_bytes(path).tobytes()
    lines = raw.splitlines()  # bytes.splitlines: LF, CR LF and CR only
    if lines and lines[-1].strip() == b"":
        lines.pop()
    if not lines:
        raise DataError(name, "is empty (expected one score per line)")
    try:  # float() of each line: one number, surrounding white space allowed
        scores = np.array(lines, dtype=np.float64)
    except ValueError:
        scores = None
    if scores is not None and np.all(np.isfinite(scores)) and b"_" not in raw:
        return scores  # (float() takes '1_000'; no tool writes scores that way)
    for i, line in enumerate(lines, start=1):
        _check_score_line(name, i, line)
    return np.array([float(ln) for ln in lines], dtype=np.float64)


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
