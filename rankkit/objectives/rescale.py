"""Cost-sensitive pairs (Chapelle & Keerthi Sect. 6.2): how much each pair matters, Delta_ij.

    margin-sqrt  (`margin`):  max(0, sqrt(Delta_ij) - t)^2   the paper's margin rescaling ("set the
                                                            margin to sqrt(delta_ij)"): bounds
                                                            Delta_ij on every inverted pair (t <= 0)
    margin-delta:             max(0, Delta_ij - t)^2        the margin Delta_ij itself: the paper's
                                                            margin rescaling of delta_ij = Delta_ij^2,
                                                            bounding Delta_ij^2 on an inverted pair
    slack:                    Delta_ij * max(0, 1 - t)^2    a per-pair cost: bounds Delta_ij

(with the hinge loss of `bundle` the same margins give max(0, m - t): margin-delta is then
Tsochantaridis et al.'s margin rescaling, bounding Delta_ij, and margin-sqrt bounds sqrt(Delta_ij).)

Label-based Delta_ij = u(label_i) - u(label_j), with u the DCG gain 2^label - 1 (`gain`) or a
table of values per integer label (`0,1,3,7,15`): every rescaling then avoids the pair list (see
PairwiseObjective: margin_offsets, the paper's special case (1), O(n log n); margin_sqrt_values and
slack_values, its case (2), a sweep per pair of labels or per label threshold over one sort,
O(n log n + R n)). `swap` is |Delta NDCG| of swapping the two documents at their positions in the
ideal ranking (LambdaRank's weight), which is not a function of the labels alone: it needs the
explicit pair list (`newton-pairs`, O(pairs)).

Names: `margin` is the paper's (margin-sqrt) since this change (issue 26); a model file written
before it that records `rescale margin` meant margin-delta, and reads back as that (MODEL_NAMES).
Models record the explicit names.
"""

from __future__ import annotations

import numpy as np

from rankkit.data import Dataset
from rankkit.errors import DataError, UsageError

RESCALES = ("margin", "margin-sqrt", "margin-delta", "slack")  # what the faces accept
CANONICAL = {"margin": "margin-sqrt", "margin-sqrt": "margin-sqrt", "margin-delta": "margin-delta", "slack": "slack"}
MODEL_NAMES = {"margin": "margin-delta"}  # a model file's `rescale margin` (written before issue 26)
GAIN_MAX = 1e150  # a Delta, squared or times a squared slack, stays far from overflowing a double
DELTA_HELP = "gain (2^label - 1), a comma-separated value per label 0,1,2,... (e.g. 0,1,3,7,15), or swap"


def canonical_rescale(name: str | None) -> str | None:
    """The explicit name of a rescaling the faces accept (`margin` is the paper's, margin-sqrt)."""
    if name is None:
        return None
    if name not in CANONICAL:
        raise UsageError(f"rescale must be one of {', '.join(RESCALES)}, not {name!r}")
    return CANONICAL[name]


def pair_margins(rescale: str, delta: np.ndarray) -> np.ndarray:
    """Each pair's margin under a margin rescaling of Delta (explicit pairs)."""
    return np.sqrt(delta) if canonical_rescale(rescale) == "margin-sqrt" else delta


def label_values(ds: Dataset, spec: str) -> np.ndarray:
    """u(label) of every row, for Delta_ij = u_i - u_j; checks u increases with the label."""
    labels = ds.y
    if spec == "gain":
        with np.errstate(over="ignore"):
            u = np.exp2(labels) - 1.0
        too_big = np.flatnonzero(~(np.abs(u) <= GAIN_MAX))
        if too_big.size:
            row = int(too_big[0])
            raise DataError(ds.source, f"label {labels[row]:g}: its gain 2^label - 1 is too large to rescale pairs with "
                            f"(above {GAIN_MAX:.0e}: the objective would overflow); give --delta a table of values "
                            "per label", None if ds.line is None else int(ds.line[row]))
    else:
        try:
            table = np.array([float(v) for v in spec.split(",")], dtype=np.float64)
            if not np.all(np.isfinite(table)):
                raise ValueError(spec)
        except ValueError:
            raise UsageError(f"--delta '{spec}' is not {DELTA_HELP}") from None
        present = np.unique(labels)
        bad = [v for v in present if v != int(v) or not 0 <= v < table.shape[0]]
        if bad:
            raise UsageError(f"--delta table has {table.shape[0]} values but the labels include {bad[0]:g}")
        if np.any(np.abs(table) > GAIN_MAX):
            raise UsageError(f"--delta value {table[np.abs(table) > GAIN_MAX][0]:g} is too large to rescale pairs with "
                             f"(above {GAIN_MAX:.0e}: the objective would overflow)")
        if np.any(np.diff(table[present.astype(np.int64)]) <= 0):
            raise UsageError("--delta values must increase with the label (Delta_ij > 0 for every pair)")
        u = table[labels.astype(np.int64)]
    return u


def pair_deltas(ds: Dataset, pi: np.ndarray, pj: np.ndarray, owner: np.ndarray, spec: str) -> np.ndarray:
    """Delta of every explicit pair (i above j)."""
    if spec != "swap":
        u = label_values(ds, spec)
        return u[pi] - u[pj]
    # |Delta NDCG| of swapping i and j at their positions in the ideal ranking of their query
    position = np.empty(ds.n_rows, dtype=np.float64)
    ideal_dcg = np.zeros(ds.n_queries)
    gain = label_values(ds, "gain")  # checked: a label whose gain overflows is named
    for q in range(ds.n_queries):
        s, e = int(ds.qptr[q]), int(ds.qptr[q + 1])
        rank = np.argsort(-ds.y[s:e], kind="stable")
        position[s + rank] = np.arange(1, e - s + 1)
        ideal_dcg[q] = np.sum(gain[s + rank] / np.log2(position[s + rank] + 1.0))
    disc = 1.0 / np.log2(position + 1.0)
    delta = np.abs((gain[pi] - gain[pj]) * (disc[pi] - disc[pj])) / np.maximum(ideal_dcg[owner], 1e-300)
    return delta
