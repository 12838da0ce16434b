"""Paired significance tests on the per-query metric values of two systems.

Both tests take two float64 arrays `a` and `b` of equal length (one value per query, same query
order) and return a two-sided p-value for "the mean of a - b is zero". Queries where either value
is NaN are dropped first. `TESTS` is the registry the CLI's choices come from.

- `paired_t_test`: Student's paired t-test, exactly scipy.stats.ttest_rel(a, b).pvalue, except
  that p = 1 when every difference is exactly zero (scipy gives NaN) and p = NaN for fewer than
  two queries.
- `randomization_test`: the paired randomization (sign-flip) test of the mean difference d = a - b:
  p = (1 + #{s : |mean(s * d)| >= |mean(d)|}) / (1 + n_permutations) over random sign vectors s,
  where ">=" allows 1e-12 * mean(|d|) of rounding so that permutations tying the observed
  statistic count. Queries with d == 0 are dropped first (their sign changes nothing), so
  identical runs give p = 1 exactly. Signs are the bits of uint64 words drawn from
  numpy.random.default_rng(seed), a block of permutations at a time; each permuted sum is a
  sequential sum in a Numba kernel, so the p-value is the same for every thread count.
"""

from __future__ import annotations

import warnings

import numpy as np

from rankkit import threads
from rankkit.errors import UsageError
from rankkit.compiler.dispatch import njit

# Ties with the observed statistic count when within this fraction of mean(|d|).
TIE_TOLERANCE = 1e-12

# Random words per block of permutations (8 MB of uint64): memory stays flat for any n.
_BLOCK_WORDS = 1 << 20


def _paired(a, b) -> tuple[np.ndarray, np.ndarray]:
    """a and b as float64 vectors of equal length, with the NaN queries of either dropped."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.ndim != 1 or b.ndim != 1:
        raise UsageError("per-query values must be 1-D arrays")
    if a.shape != b.shape:
        raise UsageError(f"the two systems have values for {a.shape[0]} and {b.shape[0]} queries")
    keep = ~(np.isnan(a) | np.isnan(b))
    return a[keep], b[keep]


def paired_t_test(a, b) -> float:
    """Two-sided p-value of the paired t-test (scipy.stats.ttest_rel)."""
    a, b = _paired(a, b)
    if a.shape[0] < 2:
        return float("nan")
    if np.array_equal(a, b):
        return 1.0
    from scipy import stats

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # constant differences: t = +-inf, p = 0
        return float(stats.ttest_rel(a, b).pvalue)


@njit
def _sequential_sum(d):
    s = 0.0
    for i in range(d.shape[0]):
        s += d[i]
    return s


@njit
def _count_extreme_rows(d, words, threshold, lo, hi):
    """Number of rows lo..hi-1 of `words` (bit j of word w flips the sign of d[64 * w + j]) whose
    signed sum of d has absolute value >= threshold. Each sum runs in index order, like
    _sequential_sum."""
    n = d.shape[0]
    n_words = words.shape[1]
    hits = 0
    for p in range(lo, hi):
        s = 0.0
        for w in range(n_words):
            bits = words[p, w]
            base = w * 64
            m = min(64, n - base)
            for j in range(m):
                if (bits >> np.uint64(j)) & np.uint64(1):
                    s -= d[base + j]
                else:
                    s += d[base + j]
        if abs(s) >= threshold:
            hits += 1
    return hits


def _count_extreme(d, words, threshold) -> int:
    """_count_extreme_rows over all rows, split over the kernel threads (rankkit.threads): an
    integer count, the same for any number of threads."""
    n_perm = words.shape[0]
    parts = threads.split(None, n_perm, n_perm * d.shape[0])
    return sum(int(h) for h in threads.run(_count_extreme_rows, parts, d, words, float(threshold)))


def randomization_test(a, b, n_permutations: int = 10_000, seed: int = 0) -> float:
    """Two-sided p-value of the paired randomization (sign-flip) test of the mean difference."""
    if int(n_permutations) != n_permutations or n_permutations < 1:
        raise UsageError(f"the number of permutations must be a positive integer, got {n_permutations}")
    n_permutations = int(n_permutations)
    a, b = _paired(a, b)
    if a.shape[0] == 0:
        return float("nan")
    d = a - b
    d = np.ascontiguousarray(d[d != 0.0])
    if d.shape[0] == 0:
        return 1.0
    # Sums rather than means: the same comparison, scaled by n.
    threshold = abs(_sequential_sum(d)) - TIE_TOLERANCE * float(np.abs(d).sum())
    rng = np.random.default_rng(seed)
    n_words = (d.shape[0] + 63) // 64
    block = max(1, _BLOCK_WORDS // n_words)
    count = 0
    for start in range(0, n_permutations, block):
        rows = min(block, n_permutations - start)
        words = rng.integers(0, np.iinfo(np.uint64).max, size=(rows, n_words), dtype=np.uint64, endpoint=True)
        count += int(_count_extreme(d, words, threshold))
    return (1 + count) / (1 + n_permutations)


TESTS = {"t": paired_t_test, "randomization": randomization_test}
