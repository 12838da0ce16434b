#!/usr/bin/env python3
"""Zhang et al.'s analysis of RankSVM's pair multipliers (their Sect. 3, Fig. 1), both halves.

    python scripts/analyze_multipliers.py TRAIN [-C 0.01] [--loss hinge|squared-hinge] [--eps 1e-6]

The paper trains the hinge-loss RankSVM (svm_light) and reads its Lagrange multipliers alpha_ij,
0 <= alpha_ij <= C, from the dual (their eq. 2). Here the dual is solved by dual coordinate descent
over the explicit pairs (Hsieh et al. 2008: one pair at a time, alpha_ij <- clip(alpha_ij - (w.phi_ij
- 1) / ||phi_ij||^2, 0, C), w kept equal to sum alpha_ij phi_ij), until the largest projected
gradient is below --eps (the KKT conditions to that precision); the script checks that its w is the
hinge RankSVM's (rankkit's `bundle` solver) and prints the duality gap. With `--loss squared-hinge`
the multipliers are those of rankkit's default objective, explicit at the optimum: alpha_ij =
2 C max(0, 1 - w.phi_ij) (the earlier version of this script, kept for comparison).

For each query q it builds the n_q x n_q block A_q(i, j) = alpha_ij (zero where (i, j) is not a
pair), takes its singular values and reports how many of them ("dimensions") carry 90% and 100% of
the energy (sum of squared singular values), as a share of:

    n_q          the block's size, as the paper defines A (N x N, one block per query);
    max rank     the largest rank a block with this query's pair pattern can have (the rank of
                 random values on the pairs): a query with n_0 irrelevant documents among n_q has
                 max rank <= n_q - n_0, so "80-100% of n_q" is out of reach for most LETOR queries.

"100% of the energy" is the numerical rank (singular values above max(n_q) x eps x the largest:
numpy.linalg.matrix_rank's rule). Histograms over 10% ranges, like the paper's Fig. 1 (a) and (b).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
from numba import njit

from rankkit.io.svmlight import read_svmlight
from rankkit.sparse import csr_matvec

ENERGIES = (0.9, 1.0)
BINS = np.linspace(0, 1, 11)


def pair_list(ds):
    """(i, j) for every pair of one query with label_i > label_j, in query order (int64 arrays)."""
    I, J = [], []
    for q in range(ds.n_queries):
        s, e = int(ds.qptr[q]), int(ds.qptr[q + 1])
        lab = ds.y[s:e]
        ii, jj = np.nonzero(lab[:, None] > lab[None, :])
        I.append(ii + s)
        J.append(jj + s)
    return np.concatenate(I).astype(np.int64), np.concatenate(J).astype(np.int64)


@njit(cache=True)
def _dual_cd(data, indices, indptr, n_features, pi, pj, C, eps, max_epochs, seed):
    """Dual coordinate descent for min 0.5 a'Ma - e'a, 0 <= a <= C, over pairs (pi, pj). Returns
    (alpha, w, epochs, largest projected gradient of the last epoch)."""
    m = pi.shape[0]
    alpha = np.zeros(m)
    w = np.zeros(n_features)
    Q = np.zeros(m)
    dense = np.zeros(n_features)
    for p in range(m):  # ||x_i - x_j||^2
        for t in range(indptr[pi[p]], indptr[pi[p] + 1]):
            dense[indices[t]] += data[t]
        for t in range(indptr[pj[p]], indptr[pj[p] + 1]):
            dense[indices[t]] -= data[t]
        acc = 0.0
        for t in range(indptr[pi[p]], indptr[pi[p] + 1]):
            acc += dense[indices[t]] ** 2
            dense[indices[t]] = 0.0
        for t in range(indptr[pj[p]], indptr[pj[p] + 1]):
            acc += dense[indices[t]] ** 2
            dense[indices[t]] = 0.0
        Q[p] = acc
    np.random.seed(seed)
    order = np.arange(m)
    worst = np.inf
    epoch = 0
    for epoch in range(1, max_epochs + 1):
        np.random.shuffle(order)
        worst = 0.0
        for r in range(m):
            p = order[r]
            t_ij = 0.0
            for t in range(indptr[pi[p]], indptr[pi[p] + 1]):
                t_ij += w[indices[t]] * data[t]
            for t in range(indptr[pj[p]], indptr[pj[p] + 1]):
                t_ij -= w[indices[t]] * data[t]
            G = t_ij - 1.0
            a = alpha[p]
            pg = G
            if a <= 0.0:
                pg = min(G, 0.0)
            elif a >= C:
                pg = max(G, 0.0)
            if abs(pg) > worst:
                worst = abs(pg)
            if pg == 0.0:
                continue
            if Q[p] == 0.0:  # identical documents: the hinge is 1 whatever w, the multiplier is C
                new = C
            else:
                new = min(max(a - G / Q[p], 0.0), C)
            d = new - a
            if d != 0.0:
                alpha[p] = new
                for t in range(indptr[pi[p]], indptr[pi[p] + 1]):
                    w[indices[t]] += d * data[t]
                for t in range(indptr[pj[p]], indptr[pj[p] + 1]):
                    w[indices[t]] -= d * data[t]
        if worst <= eps:
            break
    return alpha, w, epoch, worst


def hinge_multipliers(ds, C, eps=1e-6, max_epochs=20000, seed=0):
    """The hinge RankSVM's dual solution: (pairs i, j, alpha, w, facts)."""
    pi, pj = pair_list(ds)
    alpha, w, epochs, worst = _dual_cd(ds.data, ds.indices.astype(np.int64), ds.indptr, ds.n_features, pi, pj,
                                       float(C), float(eps), int(max_epochs), int(seed))
    t = csr_matvec(ds.data, ds.indices, ds.indptr, w, np.empty(ds.n_rows))
    t = t[pi] - t[pj]
    primal = 0.5 * w @ w + C * np.maximum(0.0, 1.0 - t).sum()
    dual = alpha.sum() - 0.5 * w @ w
    facts = {"epochs": epochs, "projected_gradient": worst, "primal": primal, "dual": dual,
             "at_C": int(np.sum(alpha >= C)), "free": int(np.sum((alpha > 0) & (alpha < C))),
             "zero": int(np.sum(alpha <= 0)), "pairs": len(alpha)}
    return pi, pj, alpha, w, facts


def squared_hinge_multipliers(ds, C, w):
    """alpha_ij = 2 C max(0, 1 - w.phi_ij) at the squared-hinge optimum w."""
    pi, pj = pair_list(ds)
    t = csr_matvec(ds.data, ds.indices, ds.indptr, w, np.empty(ds.n_rows))
    return pi, pj, 2.0 * C * np.maximum(0.0, 1.0 - (t[pi] - t[pj]))


def block_shares(ds, pi, pj, alpha, seed=0):
    """Per query with pairs: {n, rank, max_rank, need90, share90, share100 (of n_q), share90_max,
    share100_max (of the max rank)}; and w rebuilt from the multipliers (sum alpha_ij phi_ij)."""
    rng = np.random.default_rng(seed)
    X = ds.csr()
    coef = np.zeros(ds.n_rows)
    np.add.at(coef, pi, alpha)
    np.add.at(coef, pj, -alpha)
    w_back = X.T @ coef
    qof = np.searchsorted(ds.qptr, pi, side="right") - 1
    starts = np.searchsorted(qof, np.arange(ds.n_queries))
    ends = np.searchsorted(qof, np.arange(ds.n_queries), side="right")
    rows = []
    for q in range(ds.n_queries):
        a, b = starts[q], ends[q]
        if a == b:
            continue
        s, n = int(ds.qptr[q]), int(ds.qptr[q + 1] - ds.qptr[q])
        A = np.zeros((n, n))
        A[pi[a:b] - s, pj[a:b] - s] = alpha[a:b]
        pattern = np.zeros((n, n))
        pattern[pi[a:b] - s, pj[a:b] - s] = rng.random(b - a) + 0.5
        max_rank = int(np.linalg.matrix_rank(pattern))
        sv = np.linalg.svd(A, compute_uv=False)
        energy = float(np.sum(sv**2))
        if energy == 0.0:
            rank = need90 = 0
        else:
            rank = int(np.sum(sv > sv[0] * n * np.finfo(float).eps))
            cum = np.cumsum(sv**2) / energy
            need90 = int(np.searchsorted(cum, 0.9 - 1e-12) + 1)
        rows.append({"n": n, "rank": rank, "max_rank": max_rank, "need90": need90, "share90": need90 / n,
                     "share100": rank / n, "share90_max": need90 / max_rank, "share100_max": rank / max_rank})
    return rows, w_back


def histogram(shares) -> list[int]:
    """Queries per 10% range (0-10%, ..., 90-100%; a share of exactly 100% in the last)."""
    counts, _ = np.histogram(np.asarray(shares, dtype=float), bins=BINS)
    return [int(c) for c in counts]


def multiplier_ranks(ds, w, C, energies=ENERGIES):
    """Squared-hinge multipliers at w (the earlier interface): per query with pairs (n_q,
    {energy: share of n_q}), and w rebuilt from them."""
    pi, pj, alpha = squared_hinge_multipliers(ds, C, w)
    rows, w_back = block_shares(ds, pi, pj, alpha)
    return [(r["n"], {0.9: r["share90"], 1.0: r["share100"]}) for r in rows], w_back


def report(rows) -> str:
    lines = []
    for key, title in (("share90", "90% of the energy, share of n_q (Fig. 1a)"),
                       ("share100", "100% of the energy (numerical rank), share of n_q (Fig. 1b)"),
                       ("share90_max", "90% of the energy, share of the block's max rank"),
                       ("share100_max", "100% of the energy, share of the block's max rank")):
        shares = [r[key] for r in rows]
        lines.append(f"\n{title} (queries per range):")
        for lo, hi, c in zip(BINS[:-1], BINS[1:], histogram(shares)):
            lines.append(f"  {lo:4.0%} - {hi:4.0%}  {c:5d}  {'#' * int(round(60 * c / max(len(rows), 1)))}")
        lines.append(f"  median {np.median(shares):.0%}, mean {np.mean(shares):.0%}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("train")
    ap.add_argument("-C", type=float, default=1e-2)
    ap.add_argument("--loss", choices=["hinge", "squared-hinge"], default="hinge")
    ap.add_argument("--eps", type=float, default=1e-6, help="hinge: largest projected gradient at the end")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    ds = read_svmlight(args.train)
    if args.loss == "hinge":
        pi, pj, alpha, w, f = hinge_multipliers(ds, args.C, args.eps, seed=args.seed)
        from rankkit.solvers.bundle import BundleRankSVM

        ref = BundleRankSVM(C=args.C, loss="hinge", tol=1e-8, max_iter=2000).fit(ds)
        print(f"{args.train}: hinge RankSVM, C {args.C:g}: dual coordinate descent, {f['epochs']} epochs, largest "
              f"projected gradient {f['projected_gradient']:.1e}; primal {f['primal']:.8g}, dual {f['dual']:.8g} "
              f"(bundle: {ref.objective:.8g}); |w - w_bundle| / |w| = "
              f"{np.linalg.norm(w - ref.w) / np.linalg.norm(ref.w):.1e}")
        print(f"multipliers: {f['pairs']} pairs, {f['at_C']} at C, {f['free']} strictly between 0 and C, "
              f"{f['zero']} at 0")
    else:
        from rankkit.solvers.newton import NewtonRankSVM

        w = NewtonRankSVM(C=args.C, tol=1e-10).fit(ds).w
        pi, pj, alpha = squared_hinge_multipliers(ds, args.C, w)
    rows, w_back = block_shares(ds, pi, pj, alpha, seed=args.seed)
    err = float(np.abs(w_back - w).max() / max(np.abs(w).max(), 1e-300))
    print(f"{len(rows)} queries with pairs; the multipliers reproduce w to {err:.1e} (relative)")
    print(report(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
