"""Score files: one score per line, in the order of the data file (the svm_rank convention),
written with `%.17g` so that no ties are invented and every double round-trips exactly."""

from __future__ import annotations

import numpy as np

from rankkit.errors import DataError
from rankkit.io.atomic import atomic_open
from rankkit.io.svmlight import display_name, read_bytes

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
    """Read one number per line (first whitespace-separated token; `-` for standard input)."""
    name = display_name(path)
    raw = read_bytes(path).tobytes()
    lines = raw.split(b"\n")
    if lines and lines[-1].strip() == b"":
        lines.pop()
    if not lines:
        raise DataError(name, "is empty (expected one score per line)")
    tokens = [ln.split(None, 1)[0] if ln.strip() else b"" for ln in lines]
    try:
        scores = np.array(tokens, dtype=np.float64) if all(tokens) else None
    except ValueError:
        scores = None
    if scores is None or not np.all(np.isfinite(scores)):
        for i, tok in enumerate(tokens, start=1):
            text = tok.decode("utf-8", "replace")
            if not tok:
                raise DataError(name, "empty line (expected one score per line)", i)
            try:
                v = float(tok)
            except ValueError:
                raise DataError(name, f"score '{text}' is not a number", i) from None
            if not np.isfinite(v):
                raise DataError(name, f"score '{text}' is not finite", i)
        scores = np.array([float(t) for t in tokens], dtype=np.float64)  # numpy refused what float() takes
    return scores
