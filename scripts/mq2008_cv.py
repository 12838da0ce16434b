#!/usr/bin/env python3
"""MQ2008 five-fold experiment: for each fold, train the Newton RankSVM for every C of a grid on
train.txt, pick C by MAP on vali.txt, and report the test metrics (LETOR 4.0 conventions).

    python scripts/mq2008_cv.py [DATA_DIR]    (default ../shared/data/MQ2008)

The published reference is the svmlight RankSVM row of Zhang et al., Table 4 (MQ2008, 5 folds,
C tuned on vali): MAP 0.4713, NDCG@1 0.3686, NDCG@3 0.4277, NDCG@5 0.4730.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from rankkit.io.svmlight import read_svmlight
from rankkit.metrics import evaluate
from rankkit.sparse import csr_matvec
from rankkit.solvers.newton import NewtonRankSVM

GRID = [1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0]
METRICS = ("ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10", "map")
PUBLISHED = {"map": 0.4713, "ndcg@1": 0.3686, "ndcg@3": 0.4277, "ndcg@5": 0.4730}


def scores(ds, w):
    return csr_matvec(ds.data, ds.indices, ds.indptr, w, np.empty(ds.n_rows))


def main(argv):
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[2] / "shared" / "data" / "MQ2008"
    rows = []
    t0 = time.perf_counter()
    for fold in range(1, 6):
        d = root / f"Fold{fold}"
        train, vali, test = (read_svmlight(str(d / f"{s}.txt")) for s in ("train", "vali", "test"))
        best = None
        w = None
        for C in GRID:
            res = NewtonRankSVM(C=C).fit(train, w0=w)
            w = res.w
            v = evaluate(vali.y, scores(vali, w), vali.qptr, ("map",), "letor4")["map"]
            if best is None or v > best[1]:
                best = (C, v, w.copy())
        C, vmap, w = best
        t = evaluate(test.y, scores(test, w), test.qptr, METRICS, "letor4")
        rows.append(t)
        print(f"Fold{fold}: C={C:g} (vali MAP {vmap:.4f})  " + "  ".join(f"{k} {t[k]:.4f}" for k in METRICS))
    mean = {k: float(np.mean([r[k] for r in rows])) for k in METRICS}
    print("mean over 5 folds:        " + "  ".join(f"{k} {mean[k]:.4f}" for k in METRICS))
    print("published RSVM (Zhang et al. Table 4): " + "  ".join(f"{k} {v:.4f}" for k, v in PUBLISHED.items()))
    print(f"total time {time.perf_counter() - t0:.1f}s for {5 * len(GRID)} fits")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
