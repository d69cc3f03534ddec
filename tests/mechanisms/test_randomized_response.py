"""Exact k-ary randomized response and its frequency estimator.

Law (Warner 1965; generalized randomized response): a value is kept with probability
``p = e^ε / (e^ε + k - 1)`` and otherwise replaced by each of the ``k - 1`` other categories
with probability ``q = 1 / (e^ε + k - 1)``. The estimator ``(f - q) / (p - q)`` is unbiased
and, by Hoeffding's inequality, within ``sqrt(ln(2/β) / (2n)) / (p - q)`` of the truth with
probability at least ``1 - β`` for each category.

χ² tests use fixed seeds and the threshold p > 1e-6 (a correct sampler fails with
probability 1e-6); z-type bounds use 5.3 standard deviations (two-sided 1.2e-7).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from pandas_dp.mechanisms.random import SeededRandomSource
from pandas_dp.mechanisms.randomized_response import (
    estimate_frequencies,
    keep_probability,
    randomize,
)

Z = 5.3


def p_and_q(epsilon: float, k: int) -> tuple[float, float]:
    p = math.exp(epsilon) / (math.exp(epsilon) + k - 1)
    return p, 1 / (math.exp(epsilon) + k - 1)


@pytest.mark.parametrize("k", [2, 3, 10])
@pytest.mark.parametrize("epsilon", [0.25, 1.0, math.log(3), 4.0])
def test_keep_probability(epsilon, k):
    p, q = p_and_q(epsilon, k)
    assert keep_probability(epsilon, k) == pytest.approx(p, rel=1e-14)
    assert p + (k - 1) * q == pytest.approx(1.0)
    assert p / q == pytest.approx(math.exp(epsilon))  # the likelihood ratio is exactly e^ε


def test_keep_probability_known_values():
    assert keep_probability(math.log(3), 2) == pytest.approx(0.75)
    assert keep_probability(math.log(9), 10) == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("k", "epsilon"), [(2, Fraction(1)), (3, Fraction(1, 2)), (10, Fraction(21, 10))]
)
def test_output_law_for_every_true_category(k, epsilon):
    """60,000 rows per true category: the full output distribution is χ²-tested against
    ``p`` on the diagonal and ``q`` elsewhere; then separately, the kept share against
    ``p`` (binomial) and the replacements against uniformity over the other categories."""
    n = 60_000
    codes = np.repeat(np.arange(k, dtype=np.int64), n)
    out = randomize(SeededRandomSource(100 + k), codes, k, epsilon)
    assert out.dtype == np.int64
    assert out.min() >= 0
    assert out.max() < k
    p, q = p_and_q(float(epsilon), k)
    for c in range(k):
        reported = out[c * n : (c + 1) * n]
        counts = np.bincount(reported, minlength=k)
        expected = np.full(k, n * q)
        expected[c] = n * p
        assert stats.chisquare(counts, expected).pvalue > 1e-6
        assert stats.binomtest(int(counts[c]), n, p).pvalue > 1e-6
        if k > 2:
            others = np.delete(counts, c)
            assert stats.chisquare(others).pvalue > 1e-6  # uniform among the others


@pytest.mark.parametrize("k", [2, 3, 10])
def test_a_keep_probability_computed_from_two_epsilon_is_detected(k):
    # Power of the tests above: draws made at 2ε fail the binomial test of p(ε).
    n = 60_000
    out = randomize(SeededRandomSource(7), np.zeros(n, dtype=np.int64), k, Fraction(2))
    p, _ = p_and_q(1.0, k)
    assert stats.binomtest(int((out == 0).sum()), n, p).pvalue < 1e-6


def test_edge_cases():
    source = SeededRandomSource(1)
    assert randomize(source, np.zeros(0, dtype=np.int64), 3, Fraction(1)).size == 0
    with pytest.raises(ValueError, match="two categories"):
        randomize(source, np.zeros(5, dtype=np.int64), 1, Fraction(1))
    # A huge ε keeps everything (replacement probability e^-1000).
    codes = np.arange(1000, dtype=np.int64) % 7
    assert np.array_equal(randomize(source, codes, 7, Fraction(1000)), codes)
    # A tiny ε makes the output nearly uniform whatever the input.
    out = randomize(source, np.zeros(70_000, dtype=np.int64), 7, Fraction(1, 10**6))
    assert stats.chisquare(np.bincount(out, minlength=7)).pvalue > 1e-6


# --- the estimator ---------------------------------------------------------------------------


def test_estimator_formula():
    counts = np.array([700, 200, 100])
    estimates, width = estimate_frequencies(counts, 1.0, beta=0.1)
    p, q = p_and_q(1.0, 3)
    np.testing.assert_allclose(estimates, (counts / 1000 - q) / (p - q), rtol=1e-13)
    assert width == pytest.approx(math.sqrt(math.log(20) / 2000) / (p - q), rel=1e-13)
    assert estimates.sum() == pytest.approx(1.0)  # linear: the shares add up to one
    # No rows: no 0/0, finite estimates.
    empty, width = estimate_frequencies(np.zeros(4), 1.0)
    assert np.all(np.isfinite(empty))
    assert math.isfinite(width)


@pytest.mark.parametrize(("k", "truth"), [(2, [0.7, 0.3]), (3, [0.5, 0.3, 0.2])])
def test_unbiased_with_covering_intervals(k, truth):
    """R = 2,000 surveys of n = 1,000 rows each, randomized in one call.

    The mean estimate has standard deviation at most ``1 / (2 (p - q) sqrt(n R))`` (the
    observed share's variance is at most ``1/(4n)``); it must lie within 5.3 of them.
    Each interval misses with probability at most β = 0.05, so more than
    ``binom.ppf(1 - 1e-6, R, 0.05)`` misses (per category) has probability below 1e-6.
    """
    n, runs, eps = 1000, 2000, 1.0
    codes = np.repeat(np.arange(k), (np.array(truth) * n).astype(int))
    assert codes.size == n
    out = randomize(SeededRandomSource(40 + k), np.tile(codes, runs), k, Fraction(1))
    counts = np.stack([np.bincount(row, minlength=k) for row in out.reshape(runs, n)])
    results = [estimate_frequencies(row, eps) for row in counts]
    estimates = np.stack([e for e, _ in results])
    widths = np.array([w for _, w in results])
    p, q = p_and_q(eps, k)
    sd = 1 / (2 * (p - q) * math.sqrt(n * runs))
    np.testing.assert_array_less(np.abs(estimates.mean(axis=0) - truth), Z * sd)
    misses = (np.abs(estimates - truth) > widths[:, None]).sum(axis=0)
    print(f"k={k}: interval misses per category {misses.tolist()} of {runs}")
    assert np.all(misses <= stats.binom.ppf(1 - 1e-6, runs, 0.05))
    # The estimator's spread matches its standard error: not merely unbiased by luck.
    f = q + (p - q) * np.array(truth)
    np.testing.assert_allclose(estimates.std(axis=0), np.sqrt(f * (1 - f) / n) / (p - q), rtol=0.1)


def test_a_million_rows_at_epsilon_one_meets_the_bound():
    """n = 10^6, ε = 1, β = 0.05: the half-width is ``sqrt(ln(40) / 2e6) / (p - q)``
    (2.94e-3) and the error stays within it in at least 95% of 20 seeded repetitions (at
    most one miss; Hoeffding's bound is conservative, so the realised rate is far lower)."""
    n, truth, runs = 1_000_000, 0.237, 20
    codes = (np.arange(n) < truth * n).astype(np.int64)
    p, q = p_and_q(1.0, 2)
    expected_width = math.sqrt(math.log(40) / (2 * n)) / (p - q)
    errors = []
    for seed in range(runs):
        out = randomize(SeededRandomSource(seed), codes, 2, Fraction(1))
        estimates, width = estimate_frequencies(np.bincount(out, minlength=2), 1.0, beta=0.05)
        assert width == pytest.approx(expected_width, rel=1e-13)
        errors.append(abs(estimates[1] - truth))
    misses = sum(e > expected_width for e in errors)
    print(
        f"n=1e6, ε=1: half-width {expected_width:.4e}; errors max {max(errors):.2e}, "
        f"mean {np.mean(errors):.2e}; {misses}/{runs} beyond the half-width"
    )
    assert misses <= 1
