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


def eta_at(eta_mode: str, eta0: float, lam: float, t: int, eta_c: float = 10.0) -> float:
    if eta_mode == "pegasos":
        return 1.0 / (lam * t)
    if eta_mode == "basic":
        return eta0 * eta_c / (t + eta_c)
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
    elif learner == "perceptron":  # Rosenblatt's: a step only on a pair ranked wrong (or tied) by w
        add = sum(eta * xs[i] for i in range(b) if p[i] <= 0.0)
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


def _alpha(learner: str, eta: float, C: float, p: float) -> float:
    """The coefficient of x in one pair's addition (the eta learners)."""
    if learner in ("sgd", "pegasos", "margin-perceptron"):
        return eta if p < 1.0 else 0.0
    if learner == "perceptron":  # Rosenblatt's: a step only on a pair ranked wrong (or tied) by w
        return eta if p <= 0.0 else 0.0
    if learner == "logreg":
        return eta / (1.0 + np.exp(p))
    if learner == "pair-sgd":
        return eta * 2.0 * C * (1.0 - p) if p < 1.0 else 0.0
    raise ValueError(learner)


def reference_spd(X, pa, pb, learner, eta_mode, eta0, lam, C, iterations, batch_size, w0=None, trace_iters=(),
                  eta_c=10.0, ta=None, tb=None):
    """Algorithm 1 on the given pair sequence (pa[i] above pb[i], batch_size per step, in order).
    pa[i] = -1: the sofia sampler found no pair: it adds nothing and counts in no loss; a step
    with no pair (and no tied pair) leaves w as it is. ta, tb: a tied pair per pair, whose
    squared loss p_t^2 / 2 (target 0) is stepped on: -eta p_t (x_ta - x_tb), p_t at the incoming
    w, averaged over batch_size with the pairs' additions.
    Returns (w, mean hinge loss of the pairs between consecutive trace iterations)."""
    w = np.zeros(X.shape[1]) if w0 is None else np.array(w0, dtype=np.float64)
    trace = []
    hinge = []
    marks = set(int(t) for t in trace_iters)
    for t in range(1, iterations + 1):
        sl = slice((t - 1) * batch_size, t * batch_size)
        valid = pa[sl] >= 0
        xs = X[pa[sl][valid]] - X[pb[sl][valid]]
        p = xs @ w
        eta = eta_at(eta_mode, eta0, lam, t, eta_c) if learner not in ("pa", "romma") else 0.0
        if learner in ("pa", "romma"):
            if valid.any():
                w, _ = reference_step(learner, eta, lam, C, xs, w)
        elif valid.any() or ta is not None:
            add = sum((_alpha(learner, eta, C, p[i]) * xs[i] for i in range(len(p))), np.zeros_like(w))
            if ta is not None:
                xt = X[ta[sl]] - X[tb[sl]]
                add = add + sum(-eta * (xt[i] @ w) * xt[i] for i in range(batch_size))
            shrink = 1.0 - eta * lam if learner in ("sgd", "pegasos", "logreg", "pair-sgd") else 1.0
            w = shrink * w + add / batch_size
            if learner == "pegasos":
                norm = np.sqrt(w @ w)
                if norm > 1.0 / np.sqrt(lam):
                    w = w / (np.sqrt(lam) * norm)
        hinge.extend(np.maximum(0.0, 1.0 - p))
        if t in marks:
            trace.append(np.mean(hinge) if hinge else np.nan)
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
        elif sampler == "sofia":  # a uniform over all n documents, b uniform over the others of its query
            m, n_hi, n_lo = len(ys), np.sum(ys == y[a]), np.sum(ys == y[b])
            prob[k] = (1.0 / (m - n_hi) + 1.0 / (m - n_lo)) / len(y)
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


def sofia_no_pair_probability(y: np.ndarray, qptr: np.ndarray) -> float:
    """The chance that the sofia sampler draws a document whose query has a single label (no pair)."""
    alone = sum(qptr[q + 1] - qptr[q] for q in range(len(qptr) - 1) if len(np.unique(y[qptr[q]:qptr[q + 1]])) == 1)
    return alone / len(y)


def tied_pairs(y: np.ndarray, qptr: np.ndarray) -> np.ndarray:
    """Every ordered tied pair (a, b): a != b, one query, one label; uniform is 1/len."""
    out = []
    for q in range(len(qptr) - 1):
        for a in range(qptr[q], qptr[q + 1]):
            for b in range(qptr[q], qptr[q + 1]):
                if a != b and y[a] == y[b]:
                    out.append((a, b))
    return np.array(out, dtype=np.int64).reshape(-1, 2)
