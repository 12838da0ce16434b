"""The O(m) sweeps of the exact path (rankkit.paths.exact), one pass over the pairs each: the pair
incidence products P v and P'a, the candidate events of the pairs outside I_alpha, the KKT check,
the hinge loss. Arrays in, numbers out (the path's state stays in exact.py).

state codes: 1 = I_1 (alpha = 1), 0 = I_0 (alpha = 0), 2 = I_alpha (E); event kinds: 1 enters E,
2 leaves E for I_0, 3 leaves E for I_1.
"""

from __future__ import annotations

import numpy as np

from rankkit.compiler.dispatch import njit


@njit
def pair_diff(v, pi, pj, out):
    """out[p] = v[pi[p]] - v[pj[p]] (P v)."""
    for p in range(pi.shape[0]):
        out[p] = v[pi[p]] - v[pj[p]]


@njit
def pair_sum(a, pi, pj, out):
    """out = P'a: +a[p] at the upper document of pair p, -a[p] at the lower one (out zeroed here)."""
    for r in range(out.shape[0]):
        out[r] = 0.0
    for p in range(pi.shape[0]):
        out[pi[p]] += a[p]
        out[pj[p]] -= a[p]


@njit
def outside_candidates(g, h, state, blocked, lam, stol, cand):
    """Per pair outside E the largest lambda <= lam at which its margin reaches 1 (eq. 17; -inf if
    never, or if it is blocked): lambda m = g + (lambda - lam) h, so from I_1 (margin below 1) it
    reaches 1 going down if the slope 1 - h > stol, from I_0 if 1 - h < -stol. Pairs of E get -inf
    (exact.py fills them in). lam = inf: the start, cand = g for pairs of I_1 with g > 0. Returns
    the largest candidate."""
    best = -np.inf
    inf_lam = lam == np.inf
    for p in range(g.shape[0]):
        c = -np.inf
        s = state[p]
        if s != 2 and blocked[p] == 0:
            if inf_lam:
                if s == 1 and g[p] > 0:
                    c = g[p]
            else:
                slope = 1.0 - h[p]
                phi = g[p] - lam  # lam * (margin - 1)
                if s == 1 and slope > stol:
                    c = lam + min(phi, 0.0) / slope
                elif s == 0 and slope < -stol:
                    c = lam + max(phi, 0.0) / slope
                if c > lam:
                    c = lam
        cand[p] = c
        if c > best:
            best = c
    return best


@njit
def kkt_sweep(alpha, g, lam, state):
    """(the largest violation of the KKT conditions, the largest |margin - 1| over E): 0 <= alpha <= 1,
    margin < 1 => alpha = 1, margin > 1 => alpha = 0 (a pair violates the implication by
    min(|margin - 1|, |alpha - bound|)), margin = g / lam."""
    worst = 0.0
    resid = 0.0
    for p in range(alpha.shape[0]):
        a = alpha[p]
        m = g[p] / lam
        v = 0.0
        if -a > v:
            v = -a
        if a - 1.0 > v:
            v = a - 1.0
        if m < 1.0:
            t = min(1.0 - m, 1.0 - a)
            if t > v:
                v = t
        elif m > 1.0:
            t = min(m - 1.0, a)
            if t > v:
                v = t
        if v > worst:
            worst = v
        if state[p] == 2 and abs(m - 1.0) > resid:
            resid = abs(m - 1.0)
    return worst, resid


@njit
def hinge_and_quad(g, alpha, lam):
    """(sum_p max(0, 1 - g_p / lam), sum_p alpha_p g_p): the hinge loss and alpha'Q alpha."""
    hinge = 0.0
    quad = 0.0
    for p in range(g.shape[0]):
        m = g[p] / lam
        if m < 1.0:
            hinge += 1.0 - m
        quad += alpha[p] * g[p]
    return hinge, quad


@njit
def dense_matvec(X, u, out):
    """out = X u for a dense C-ordered X (serial: one contiguous pass over X)."""
    n, d = X.shape
    for i in range(n):
        acc = 0.0
        for j in range(d):
            acc += X[i, j] * u[j]
        out[i] = acc


@njit
def dense_rmatvec(X, z, out):
    """out = X' z for a dense C-ordered X (serial, rows in order)."""
    n, d = X.shape
    for j in range(d):
        out[j] = 0.0
    for i in range(n):
        zi = z[i]
        if zi != 0.0:
            for j in range(d):
                out[j] += X[i, j] * zi
