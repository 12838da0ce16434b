"""Plain NumPy references for stochastic pairwise descent: dense vectors, no scale trick, every
update written straight from its formula (Sculley 2009, Sect. 3.2), and the exact pair
distribution of each sampler by enumerating the pairs.

The kernels in rankkit/solvers/_sgd_kernels.py are checked against these.
"""

from __future__ import annotations

import numpy as np

from tests.reference import explicit_pairs

RTOL_SGD = 1e-10  # kernel w (scale x vector, sparse) vs the dense reference fed the same pairs


def dense_rows(data, indices, indptr, n_features):
    n = len(indptr) - 1
    X = np.zeros((n, n_features))
    for r in range(n):
        for t in range(indptr[r], indptr[r + 1]):
            X[r, indices[t]] += data[t]
    return X


def eta_at(eta_mode: str, eta0: float, lam: float, t: int) -> float:
    if eta_mode == "pegasos":
        return 1.0 / (lam * t)
    if eta_mode == "basic":
        return eta0 * 10.0 / (t + 10.0)
    if eta_mode == "inverse-t":
        return eta0 / t
    return eta0


def reference_step(learner: str, eta: float, lam: float, C: float, xs: np.ndarray, w: np.ndarray):
    """One step on the rows xs (b x d: x = x_a - x_b per pair, label +1) from w. Returns (new w,
    the margins p at the incoming w)."""
    w = np.asarray(w, dtype=np.float64)
    xs = np.atleast_2d(xs)
    b = xs.shape[0]
    p = xs @ w
    if learner in ("sgd", "pegasos"):
        add = sum(eta * xs[i] for i in range(b) if p[i] < 1.0)
        w = (1.0 - eta * lam) * w + add / b
        if learner == "pegasos":
            norm = np.sqrt(w @ w)
            if norm > 1.0 / np.sqrt(lam):
                w = w / (np.sqrt(lam) * norm)
    elif learner == "logreg":
        add = sum(eta / (1.0 + np.exp(p[i])) * xs[i] for i in range(b))
        w = (1.0 - eta * lam) * w + add / b
    elif learner == "pair-sgd":  # Chapelle & Keerthi Algorithm 2, squared hinge: lam = 1/|P|
        add = sum(eta * 2.0 * C * (1.0 - p[i]) * xs[i] for i in range(b) if p[i] < 1.0)
        w = (1.0 - eta * lam) * w + add / b
    elif learner == "margin-perceptron":
        add = sum(eta * xs[i] for i in range(b) if p[i] < 1.0)
        w = w + add / b
    elif learner == "pa":
        assert b == 1
        x = xs[0]
        loss = max(0.0, 1.0 - p[0])
        xx = x @ x
        if loss > 0.0 and xx > 0.0:
            w = w + min(C, loss / xx) * x
    elif learner == "romma":
        assert b == 1
        x = xs[0]
        if p[0] < 1.0:
            xx = x @ x
            ww = w @ w
            if ww == 0.0:
                if xx > 0.0:
                    w = x / xx
            else:
                den = xx * ww - p[0] ** 2
                if den > 0.0:
                    c = (xx * ww - p[0]) / den
                    d = ww * (1.0 - p[0]) / den
                    w = c * w + d * x
    else:
        raise ValueError(learner)
    return np.asarray(w, dtype=np.float64), p


def reference_spd(X, pa, pb, learner, eta_mode, eta0, lam, C, iterations, batch_size, w0=None, trace_iters=()):
    """Algorithm 1 on the given pair sequence (pa[i] above pb[i], batch_size per step, in order).
    Returns (w, mean hinge loss of the pairs between consecutive trace iterations)."""
    w = np.zeros(X.shape[1]) if w0 is None else np.array(w0, dtype=np.float64)
    trace = []
    hinge = []
    marks = set(int(t) for t in trace_iters)
    for t in range(1, iterations + 1):
        sl = slice((t - 1) * batch_size, t * batch_size)
        xs = X[pa[sl]] - X[pb[sl]]
        eta = eta_at(eta_mode, eta0, lam, t) if learner not in ("pa", "romma") else 0.0
        w, p = reference_step(learner, eta, lam, C, xs, w)
        hinge.extend(np.maximum(0.0, 1.0 - p))
        if t in marks:
            trace.append(np.mean(hinge))
            hinge = []
    return w, np.array(trace)


def pair_probabilities(y: np.ndarray, qptr: np.ndarray, sampler: str):
    """Every preference pair (a above b) and its exact probability under `sampler`."""
    pairs = explicit_pairs(y, qptr)
    qidx = np.searchsorted(qptr, pairs[:, 0], side="right") - 1
    if sampler in ("uniform", "roc"):
        return pairs, np.full(len(pairs), 1.0 / len(pairs))
    # queries with pairs, and per query its levels and their sizes
    queries = sorted(set(qidx.tolist()))
    nq = len(queries)
    prob = np.empty(len(pairs))
    for k, (a, b) in enumerate(pairs):
        q = qidx[k]
        ys = y[qptr[q] : qptr[q + 1]]
        if sampler == "query-norm":
            prob[k] = 1.0 / nq / np.sum(qidx == q)
        elif sampler == "indexed":
            levels = np.unique(ys)
            L = len(levels)
            na = np.sum(ys == y[a])
            nb = np.sum(ys == y[b])
            # ordered (y_a, y_b) draws: (L choose 2) unordered level pairs, each with 2 / (L (L - 1))
            prob[k] = 1.0 / nq * 2.0 / (L * (L - 1)) / (na * nb)
        else:
            raise ValueError(sampler)
    return pairs, prob
