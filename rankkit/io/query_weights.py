"""Per-query weights from a side file: one `qid weight` per line (`#` comments, blank lines ok)."""

from __future__ import annotations

import math

import numpy as np

from rankkit.errors import DataError
from rankkit.io.files import display_name, read_bytes


def read_query_weights(path: str) -> dict[int, float]:
    name = display_name(path)
    text = read_bytes(path).tobytes().decode("utf-8", "replace")
    weights: dict[int, float] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = line.split()
        if len(fields) != 2:
            raise DataError(name, f"expected 'qid weight', got '{line[:60]}'", number)
        qid_text, w_text = fields
        if qid_text.startswith("qid:"):
            qid_text = qid_text[4:]
        try:
            qid = int(qid_text)
        except ValueError:
            raise DataError(name, f"qid '{qid_text}' is not an integer", number) from None
        try:
            w = float(w_text)
        except ValueError:
            raise DataError(name, f"weight '{w_text}' is not a number", number) from None
        if not math.isfinite(w) or w < 0:
            raise DataError(name, f"weight '{w_text}' must be a finite number >= 0", number)
        if qid in weights:
            raise DataError(name, f"qid {qid} has a second weight", number)
        weights[qid] = w
    if not weights:
        raise DataError(name, "has no 'qid weight' lines")
    return weights


def weights_for(ds, weights: dict[int, float], source: str) -> np.ndarray:
    """The weight of each query of ds (in query order); every query needs one, and some query with
    pairs needs a positive one."""
    qids = ds.qid[ds.qptr[:-1]].tolist()
    missing = [q for q in qids if q not in weights]
    if missing:
        raise DataError(
            display_name(source),
            f"has no weight for qid {missing[0]} of {ds.source}" + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""),
        )
    out = np.array([weights[q] for q in qids], dtype=np.float64)
    with_pairs = ds.pairs_per_query > 0
    if np.any(with_pairs) and not np.any(out[with_pairs] > 0):
        raise DataError(
            display_name(source),
            "gives weight 0 to every query that has preference pairs: the loss would vanish and the "
            "model would be all zero; give some of them a positive weight",
        )
    return out
