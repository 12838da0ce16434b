"""Zhang et al.'s Factorized Ranking SVM written out literally in NumPy: eqs. (4)-(8) with every
pair (and every pair of pairs) enumerated, and Algorithm 1 as printed. rankkit's O(nnz + N K)
solver (rankkit.solvers.factorized) is tested against these.

Eq. (6)-(7) with u = sum over the violated pairs SV(w) of (x_i - x_j) = sum_i (l_i^+ - l_i^-) x_i,
l_i^+ = |{j : (i, j) in SV}| (i the preferred document), l_i^- = |{j : (j, i) in SV}| (Lee & Lin's
names; the paper's eq. 7 swaps the two, which would flip the sign of u in eq. 8).
"""

from __future__ import annotations

import numpy as np


def objective_and_gradient(X: np.ndarray, P: np.ndarray, V: np.ndarray, C: float):
    """(L, dL/dV, w) of eqs. (4)-(8), hinge loss, pair by pair."""
    phi = {(i, j): X[i] - X[j] for i, j in P}
    w = np.zeros(X.shape[1])
    for i, j in P:  # eq. (4)
        w += (V[i] @ V[j]) * phi[i, j]
    SV = [(i, j) for i, j in P if 1.0 - w @ phi[i, j] > 0.0]  # eq. (7): strict, as printed
    p_w = len(SV)
    l_plus = np.zeros(X.shape[0])
    l_minus = np.zeros(X.shape[0])
    for i, j in SV:
        l_plus[i] += 1
        l_minus[j] += 1
    u = (l_plus - l_minus) @ X
    L = 0.5 * w @ w + C * (p_w - w @ u)  # eq. (6)
    # eq. (8), its double sum over pairs kept as printed (= <w, phi_ij>), once per pair
    quad = {(i, j): sum((V[a] @ V[b]) * (phi[a, b] @ phi[i, j]) for a, b in P) for i, j in P}
    G = np.zeros_like(V)
    for k in range(X.shape[0]):
        for i, j in P:
            if k not in (i, j):
                continue
            other = j if k == i else i
            G[k] += V[other] * (quad[i, j] - C * (phi[i, j] @ u))
    return L, G, w


def algorithm1(X, P, C, eta, V0, iterations, tol):
    """Algorithm 1: V <- V - eta dL/dV with w and SV(w) of the current V (lines 3-7), until the
    objective changes by at most tol of itself in one iteration, or `iterations` updates. Returns
    (V after each update, the objectives before each update)."""
    V = V0.copy()
    Vs, Js = [], []
    L, G, _ = objective_and_gradient(X, P, V, C)
    for _ in range(iterations):
        Js.append(L)
        V = V - eta * G
        L_new, G, _ = objective_and_gradient(X, P, V, C)
        Vs.append(V.copy())
        change = abs(L - L_new) / abs(L)
        L = L_new
        if change <= tol:
            break
    return Vs, Js
