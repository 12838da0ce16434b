"""Brute-force references: every pair enumerated explicitly, dense matrices, no cleverness.

The fast kernels are checked against these. Tolerances used across the suite are named here.
"""

from __future__ import annotations

import math

import numpy as np

from rankkit.data import Dataset

RTOL_KERNEL = 1e-10  # fast O(n log n) kernels vs explicit pairs
RTOL_OPTIMUM = 1e-6  # objectives of two solvers minimising the same function
FD_STEP = 1e-6  # central finite differences


def explicit_pairs(y: np.ndarray, qptr: np.ndarray) -> np.ndarray:
    """All (i, j) within one query with label_i > label_j, as an int64 array of shape (p, 2)."""
    pairs = []
    for q in range(len(qptr) - 1):
        rows = range(qptr[q], qptr[q + 1])
        for i in rows:
            for j in rows:
                if y[i] > y[j]:
                    pairs.append((i, j))
    return np.array(pairs, dtype=np.int64).reshape(-1, 2)


def dense(ds: Dataset) -> np.ndarray:
    X = np.zeros((ds.n_rows, ds.n_features))
    for r in range(ds.n_rows):
        for t in range(ds.indptr[r], ds.indptr[r + 1]):
            X[r, ds.indices[t]] = ds.data[t]
    return X


def pair_matrix(ds: Dataset) -> np.ndarray:
    """Rows x_i - x_j for every preference pair (the matrix AX of Chapelle & Keerthi Sect. 3)."""
    X = dense(ds)
    P = explicit_pairs(ds.y, ds.qptr)
    return X[P[:, 0]] - X[P[:, 1]]


def sqhinge_objective(ds: Dataset, C: float, w: np.ndarray):
    """f, gradient and dense Hessian of 0.5||w||^2 + C sum_pairs max(0, 1 - w.(x_i - x_j))^2."""
    A = pair_matrix(ds)
    margins = 1.0 - A @ w
    active = margins > 0
    f = 0.5 * w @ w + C * np.sum(margins[active] ** 2)
    g = w - 2.0 * C * A[active].T @ margins[active]
    H = np.eye(len(w)) + 2.0 * C * A[active].T @ A[active]
    return f, g, H


def sqhinge_loss_y(y_scores: np.ndarray, labels: np.ndarray, qptr: np.ndarray, d: np.ndarray):
    """In score space: L(y), dL/dy and (H_L d), pair by pair."""
    L = 0.0
    g = np.zeros_like(y_scores)
    Hd = np.zeros_like(y_scores)
    for i, j in explicit_pairs(labels, qptr):
        m = 1.0 - (y_scores[i] - y_scores[j])
        if m > 0:
            L += m * m
            g[i] -= 2 * m
            g[j] += 2 * m
            Hd[i] += 2 * (d[i] - d[j])
            Hd[j] -= 2 * (d[i] - d[j])
    return L, g, Hd


def pair_loss(t: float, loss: str) -> tuple[float, float, float]:
    """(value, d/dt, d2/dt2) of one pair's loss at margin t = y_i - y_j (generalised 2nd derivative)."""
    if loss == "squared-hinge":
        return (1 - t) ** 2 if t < 1 else 0.0, -2 * (1 - t) if t < 1 else 0.0, 2.0 if t < 1 else 0.0
    if loss == "huber":  # max(0, 1 - t)^2 - max(0, -t)^2
        if t >= 1:
            return 0.0, 0.0, 0.0
        if t >= 0:
            return (1 - t) ** 2, -2 * (1 - t), 2.0
        return 1 - 2 * t, -2.0, 0.0
    if loss == "hinge":  # value and subgradient
        return (1 - t, -1.0, 0.0) if t < 1 else (0.0, 0.0, 0.0)
    if loss == "logistic":  # log(1 + e^-t), RankNet's, term by term (e^-t past the double range: -t)
        value = math.log1p(math.exp(-t)) if t > -700 else -t
        s = 1 / (1 + math.exp(t)) if t < 700 else 0.0  # sigma(-t)
        return value, -s, s * (1 - s)
    raise ValueError(loss)


def pair_objective(ds: Dataset, C: float, w: np.ndarray, loss: str = "squared-hinge", qweight=None):
    """f, gradient and dense (generalised) Hessian of 0.5||w||^2 + C sum_q w_q sum_pairs loss, pair by pair."""
    X = dense(ds)
    qweight = np.ones(ds.n_queries) if qweight is None else qweight
    f = 0.5 * w @ w
    g = w.copy()
    H = np.eye(len(w))
    query_of = np.searchsorted(ds.qptr, np.arange(ds.n_rows), side="right") - 1
    for i, j in explicit_pairs(ds.y, ds.qptr):
        a = X[i] - X[j]
        v, d1, d2 = pair_loss(float(a @ w), loss)
        c = C * qweight[query_of[i]]
        f += c * v
        g += c * d1 * a
        H += c * d2 * np.outer(a, a)
    return f, g, H


def logistic_pair_objective(ds: Dataset, C: float, w: np.ndarray, qweight=None):
    """0.5||w||^2 + C sum w_q log(1 + exp(-(x_i - x_j).w)), its gradient and Hessian, pair by pair."""
    X = dense(ds)
    qweight = np.ones(ds.n_queries) if qweight is None else qweight
    query_of = np.searchsorted(ds.qptr, np.arange(ds.n_rows), side="right") - 1
    f, g, H = 0.5 * w @ w, w.copy(), np.eye(len(w))
    for i, j in explicit_pairs(ds.y, ds.qptr):
        a = X[i] - X[j]
        t = float(a @ w)
        c = C * qweight[query_of[i]]
        f += c * np.logaddexp(0.0, -t)
        s = 1.0 / (1.0 + np.exp(t))  # sigma(-t)
        g -= c * s * a
        H += c * s * (1 - s) * np.outer(a, a)
    return f, g, H


def rescaled_pair_objective(ds: Dataset, C: float, w: np.ndarray, loss: str, rescale: str, value_of_label,
                            qweight=None):
    """Cost-sensitive pairs (Chapelle & Keerthi Sect. 6.2), pair by pair, with
    Delta_ij = value_of_label(label_i) - value_of_label(label_j):
    margin-sqrt  loss with the margin sqrt(Delta_ij), max(0, sqrt(Delta) - t)^2 (the paper's);
    margin-delta loss with the margin Delta_ij;  slack  Delta_ij * loss(t).
    Returns f, gradient, dense (generalised) Hessian and the violated pairs (non-zero loss term in a
    query of non-zero weight)."""
    X = dense(ds)
    qweight = np.ones(ds.n_queries) if qweight is None else qweight
    query_of = np.searchsorted(ds.qptr, np.arange(ds.n_rows), side="right") - 1
    f, g, H, violated = 0.5 * w @ w, w.copy(), np.eye(len(w)), 0
    for i, j in explicit_pairs(ds.y, ds.qptr):
        delta = value_of_label(ds.y[i]) - value_of_label(ds.y[j])
        margin = {"margin-sqrt": np.sqrt(delta), "margin-delta": delta, "slack": 1.0}[rescale]
        cost = delta if rescale == "slack" else 1.0
        a = X[i] - X[j]
        t = float(a @ w)
        v, d1, d2 = pair_loss(t - (margin - 1.0), loss) if loss != "hinge" else \
            ((margin - t, -1.0, 0.0) if t < margin else (0.0, 0.0, 0.0))
        c = C * qweight[query_of[i]] * cost
        f += c * v
        g += c * d1 * a
        H += c * d2 * np.outer(a, a)
        violated += int(c != 0.0 and t < margin)
    return f, g, H, violated
