"""Cost-sensitive pairs (Chapelle & Keerthi Sect. 6.2): how much each pair matters, Delta_ij.

    slack rescaling:   Delta_ij * max(0, 1 - t)^2        (a per-pair cost)
    margin rescaling:  max(0, Delta_ij - t)^2            (a per-pair margin)

Label-based Delta_ij = u(label_i) - u(label_j), with u the DCG gain 2^label - 1 (`gain`) or a
table of values per integer label (`0,1,3,7,15`): both rescalings then stay O(n log n) (see
PairwiseObjective's margin_offsets and slack_values). `swap` is |Delta NDCG| of swapping the two documents at their
positions in the ideal ranking (LambdaRank's weight), which is not a function of the labels alone:
it needs the explicit pair list (`newton-pairs`).
"""

from __future__ import annotations

import numpy as np

from rankkit.data import Dataset
from rankkit.errors import DataError, UsageError

GAIN_MAX = 1e150  # a Delta, squared or times a squared slack, stays far from overflowing a double
DELTA_HELP = "gain (2^label - 1), a comma-separated value per label 0,1,2,... (e.g. 0,1,3,7,15), or swap"


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
