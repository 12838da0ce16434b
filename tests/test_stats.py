"""Paired significance tests (rankkit/stats.py) against scipy and against exact enumeration."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from scipy import stats as sst

from rankkit.errors import UsageError
from rankkit.stats import TESTS, paired_t_test, randomization_test

# Monte Carlo p-values vs exact or asymptotic ones.
P_TOL = 0.02


def exact_randomization_p(a, b) -> float:
    """Exact sign-flip p-value: all 2^n sign vectors, ties counted (naive reference)."""
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    observed = abs(d.sum())
    hits = 0
    total = 0
    for signs in itertools.product((1.0, -1.0), repeat=d.shape[0]):
        total += 1
        if abs(float(np.dot(signs, d))) >= observed - 1e-12 * np.abs(d).sum():
            hits += 1
    return hits / total


@pytest.mark.parametrize("name", sorted(TESTS))
def test_identical_runs_give_one(name):
    a = np.random.default_rng(0).random(50)
    assert TESTS[name](a, a.copy()) == 1.0


@pytest.mark.parametrize("name", sorted(TESTS))
def test_clearly_different_runs(name):
    rng = np.random.default_rng(1)
    a = rng.random(200)
    b = a + 0.1 + rng.normal(0.0, 0.02, 200)
    assert TESTS[name](a, b) < 0.01
    assert TESTS[name](b, a) < 0.01


def test_t_test_equals_scipy():
    rng = np.random.default_rng(2)
    for n in (2, 3, 10, 200, 5000):
        a = rng.random(n)
        b = a + rng.normal(0.01, 0.1, n)
        assert paired_t_test(a, b) == pytest.approx(sst.ttest_rel(a, b).pvalue, rel=1e-12, abs=1e-12)


def test_t_test_constant_nonzero_difference_matches_scipy():
    a = np.array([0.0, 0.25, 0.5, 1.0])
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = sst.ttest_rel(a, a + 1.0).pvalue
    assert paired_t_test(a, a + 1.0) == expected == 0.0


def test_randomization_reproducible_and_seeded():
    rng = np.random.default_rng(3)
    a = rng.random(300)
    b = a + rng.normal(0.01, 0.1, 300)
    p = randomization_test(a, b, n_permutations=2000, seed=7)
    assert randomization_test(a, b, n_permutations=2000, seed=7) == p
    assert randomization_test(a, b, n_permutations=2000, seed=8) != p
    # p is (1 + count) / (1 + N)
    count = p * 2001 - 1
    assert abs(count - round(count)) < 1e-9


def test_randomization_close_to_t_test_on_large_normal_data():
    rng = np.random.default_rng(4)
    n = 5000
    a = rng.normal(0.5, 0.2, n)
    noise = rng.normal(0.0, 0.2, n)
    b = a + (noise - noise.mean() + noise.std() / np.sqrt(n))  # t close to 1: p close to 0.32
    pt = paired_t_test(a, b)
    assert 0.05 < pt < 0.5  # a p-value in the range where the comparison means something
    pr = randomization_test(a, b, n_permutations=20_000, seed=1)
    assert abs(pr - pt) < P_TOL


def test_randomization_matches_exact_enumeration():
    rng = np.random.default_rng(5)
    a = rng.random(10)
    b = a + rng.normal(0.05, 0.1, 10)
    exact = exact_randomization_p(a, b)
    assert 0.02 < exact < 0.9
    mc = randomization_test(a, b, n_permutations=100_000, seed=3)
    assert abs(mc - exact) < P_TOL


def test_randomization_counts_ties_with_observed():
    # d = (1, 1, 1, 1): flipping any sign lowers |sum|, except flipping all (a tie: -4).
    a = np.ones(4)
    b = np.zeros(4)
    exact = exact_randomization_p(a, b)
    assert exact == 2 / 16
    mc = randomization_test(a, b, n_permutations=50_000, seed=0)
    assert abs(mc - exact) < P_TOL
    # values whose sums round differently in different orders still tie
    d = np.array([0.1, 0.2, 0.3, -0.6, 0.7, 0.1])
    assert abs(randomization_test(d, np.zeros(6), 50_000) - exact_randomization_p(d, np.zeros(6))) < P_TOL


def test_zero_differences_do_not_change_randomization_p():
    rng = np.random.default_rng(6)
    a = rng.random(8)
    b = a + rng.normal(0.05, 0.1, 8)
    exact = exact_randomization_p(a, b)
    a2 = np.concatenate([a, [0.3, 0.7]])
    b2 = np.concatenate([b, [0.3, 0.7]])  # two queries on which the systems agree
    assert exact_randomization_p(a2, b2) == exact
    assert randomization_test(a2, b2, 5000, seed=2) == randomization_test(a, b, 5000, seed=2)


@pytest.mark.parametrize("name", sorted(TESTS))
def test_nan_queries_are_dropped(name):
    rng = np.random.default_rng(7)
    a = rng.random(40)
    b = a + rng.normal(0.02, 0.05, 40)
    a_nan, b_nan = a.copy(), b.copy()
    a_nan[[3, 10]] = np.nan
    b_nan[[10, 20]] = np.nan
    keep = np.ones(40, dtype=bool)
    keep[[3, 10, 20]] = False
    assert TESTS[name](a_nan, b_nan) == TESTS[name](a[keep], b[keep])


def test_too_few_queries():
    assert np.isnan(paired_t_test([0.5], [0.7]))
    assert np.isnan(paired_t_test([np.nan, 0.5], [0.1, np.nan]))
    assert np.isnan(randomization_test([], []))
    assert randomization_test([0.5], [0.7]) == 1.0  # one query: both signs tie


def test_bad_inputs():
    with pytest.raises(UsageError):
        paired_t_test([1.0, 2.0], [1.0])
    with pytest.raises(UsageError):
        randomization_test(np.zeros((2, 2)), np.zeros((2, 2)))
    with pytest.raises(UsageError):
        randomization_test([1.0, 2.0], [2.0, 1.0], n_permutations=0)


def test_many_queries_and_blocks():
    # more words per permutation than one block holds rows for: several random blocks
    rng = np.random.default_rng(8)
    n = 20_000
    a = rng.random(n)
    b = a + rng.normal(0.0, 0.1, n)
    p = randomization_test(a, b, n_permutations=8000, seed=4)
    assert 0.0 < p <= 1.0
    assert abs(p - paired_t_test(a, b)) < 0.05
