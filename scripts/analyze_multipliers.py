#!/usr/bin/env python3
"""Zhang et al.'s analysis of RankSVM's pair multipliers (their Sect. 3, Fig. 1).

    python scripts/analyze_multipliers.py TRAIN [-C 0.001]

Trains the squared-hinge RankSVM (`newton`), whose pair multipliers are explicit at the optimum:
w = sum over pairs alpha_ij (x_i - x_j) with alpha_ij = 2 C max(0, 1 - w.(x_i - x_j)) (stationarity
of 0.5||w||^2 + C sum max(0, 1 - t)^2; the paper uses the hinge loss, whose multipliers need a
dual solver, but the question, how low-rank they are per query, is the same). For each query q it
builds the n_q x n_q matrix A_q(i, j) = alpha_ij, takes its singular values, and reports which share
of the dimensions (singular values) is needed for 90% and for 100% of the energy (sum of squared
singular values), as a histogram over 10% ranges like their Fig. 1.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from rankkit.io.svmlight import read_svmlight
from rankkit.sparse import csr_matvec
from rankkit.solvers.newton import NewtonRankSVM


def multiplier_ranks(ds, w, C, energies=(0.9, 1.0)):
    """Per query with pairs: (n_q, {energy: share of dimensions needed}), and a check that the
    multipliers reproduce w."""
    y = csr_matvec(ds.data, ds.indices, ds.indptr, w, np.empty(ds.n_rows))
    X = ds.csr()
    w_back = np.zeros_like(w)
    out = []
    for q in range(ds.n_queries):
        s, e = int(ds.qptr[q]), int(ds.qptr[q + 1])
        lab = ds.y[s:e]
        higher = lab[:, None] > lab[None, :]
        if not higher.any():
            continue
        t = y[s:e][:, None] - y[s:e][None, :]
        A = np.where(higher, 2.0 * C * np.maximum(0.0, 1.0 - t), 0.0)
        coef = A.sum(axis=1) - A.sum(axis=0)  # w = sum_i coef_i x_i
        w_back += X[s:e].T @ coef
        sv = np.linalg.svd(A, compute_uv=False)
        total = float(np.sum(sv**2))
        shares = {}
        for level in energies:
            if total == 0.0:
                shares[level] = 0.0
                continue
            cum = np.cumsum(sv**2) / total
            need = int(np.searchsorted(cum, level - 1e-12) + 1)
            shares[level] = need / (e - s)
        out.append((e - s, shares))
    return out, w_back


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("train")
    ap.add_argument("-C", type=float, default=1e-3)
    args = ap.parse_args(argv)
    ds = read_svmlight(args.train)
    res = NewtonRankSVM(C=args.C, tol=1e-10).fit(ds)
    rows, w_back = multiplier_ranks(ds, res.w, args.C)
    err = float(np.abs(w_back - res.w).max() / max(np.abs(res.w).max(), 1e-300))
    print(f"{args.train}: {len(rows)} queries with pairs; the multipliers reproduce w to {err:.1e} (relative)")
    bins = np.linspace(0, 1, 11)
    for level in (0.9, 1.0):
        shares = np.array([r[1][level] for r in rows])
        counts, _ = np.histogram(shares, bins=bins)
        print(f"\nshare of dimensions needed for {level:.0%} of the energy (queries per range):")
        for lo, hi, c in zip(bins[:-1], bins[1:], counts):
            print(f"  {lo:4.0%} - {hi:4.0%}  {c:5d}  {'#' * int(round(60 * c / max(len(rows), 1)))}")
        print(f"  median {np.median(shares):.0%}, mean {np.mean(shares):.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
