"""Exact intervals for randomized response (``frequency_intervals``) against Hoeffding's.

With ``m`` of ``n`` rows truly in a category, its count of answers is exactly
``Bin(m, p) + Bin(n - m, q)``, so the coverage of the interval can be computed exactly, for
every ``m``, by summing that law over the answers whose interval holds ``m / n``: it must be
at least ``1 - β`` everywhere. Seeded surveys through the exact sampler check the same on
data, and the widths are compared with Hoeffding's at the same β.
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
    frequency_intervals,
    keep_probability,
    randomize,
)

pytestmark = pytest.mark.statistical


def count_law(m: int, n: int, p: float, q: float) -> np.ndarray:
    """pmf of ``Bin(m, p) + Bin(n - m, q)`` on 0..n (exact convolution)."""
    return np.convolve(
        stats.binom.pmf(np.arange(m + 1), m, p), stats.binom.pmf(np.arange(n - m + 1), n - m, q)
    )


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0])
def test_exact_coverage_is_at_least_nominal_for_every_share(epsilon):
    n, beta = 60, 0.05
    p = keep_probability(epsilon, 2)
    q = 1 - p
    ends = [frequency_intervals([n - x, x], epsilon, beta) for x in range(n + 1)]
    lower = np.array([e[1][1] for e in ends])
    upper = np.array([e[2][1] for e in ends])
    coverage = []
    for m in range(n + 1):
        law = count_law(m, n, p, q)
        coverage.append(float(law[(lower <= m / n + 1e-12) & (m / n - 1e-12 <= upper)].sum()))
    print(f"ε={epsilon}: exact coverage min {min(coverage):.4f}, mean {np.mean(coverage):.4f}")
    assert min(coverage) >= 1 - beta - 1e-12


def exact_coverage(m: int, n: int, epsilon: float, categories: int, beta: float) -> float:
    """The exact probability that a category with ``m`` of ``n`` rows is covered."""
    p = keep_probability(epsilon, categories)
    q = (1 - p) / (categories - 1)
    law = count_law(m, n, p, q)
    covered = 0.0
    for x in np.flatnonzero(law > 1e-15):
        counts = [n - int(x), int(x)] + [0] * (categories - 2)  # only category 1's count
        _, lower, upper = frequency_intervals(counts, epsilon, beta)
        covered += float(law[x]) * (lower[1] <= m / n <= upper[1])
    return covered


@pytest.mark.parametrize(("categories", "truth"), [(2, [0.7, 0.3]), (3, [0.5, 0.3, 0.2])])
def test_seeded_surveys_cover_at_least_nominally(categories, truth):
    """400 surveys of n = 400 rows through the exact sampler, ε = 1, β = 0.05 per category.

    The exact coverage of each category (its count's law summed over the answers whose
    interval holds it) is at least 95%. The seeded surveys agree: more misses than
    ``binom.ppf(1 - 1e-6, 400, 0.05)`` would have probability below 1e-6.
    """
    n, runs, eps = 400, 400, Fraction(1)
    codes = np.repeat(np.arange(categories), (np.array(truth) * n).astype(int))
    exact = [exact_coverage(int(t * n), n, 1.0, categories, 0.05) for t in truth]
    source = SeededRandomSource(31)
    misses = np.zeros(categories, dtype=int)
    for _ in range(runs):
        noisy = randomize(source, codes, categories, eps)
        counts = np.bincount(noisy, minlength=categories)
        _, lower, upper = frequency_intervals(counts, float(eps), 0.05)
        misses += ~((lower <= np.array(truth)) & (np.array(truth) <= upper))
    coverage = 1 - misses / runs
    print(f"k={categories}: exact coverage {np.round(exact, 4)}, seeded ({runs}) {coverage}")
    assert min(exact) >= 0.95
    assert np.all(misses <= stats.binom.ppf(1 - 1e-6, runs, 0.05))


@pytest.mark.parametrize(
    ("n", "epsilon", "categories"),
    [(1_000, 1.0, 2), (10_000, 0.5, 2), (100_000, 1.0, 2), (10_000, 2.0, 4)],
)
def test_exact_intervals_are_narrower_than_hoeffding(n, epsilon, categories):
    """At the same β the exact interval lies inside Hoeffding's and is about 30% narrower."""
    share = np.full(categories, 1 / categories)
    p = keep_probability(epsilon, categories)
    q = (1 - p) / (categories - 1)
    counts = np.round(n * (q + (p - q) * share)).astype(int)
    estimates, halfwidth = estimate_frequencies(counts, epsilon, 0.05)
    _, lower, upper = frequency_intervals(counts, epsilon, 0.05)
    assert np.all(lower >= np.clip(estimates - halfwidth, 0, 1) - 1e-12)
    assert np.all(upper <= np.clip(estimates + halfwidth, 0, 1) + 1e-12)
    ratio = float(np.max((upper - lower) / (2 * halfwidth)))
    print(f"n={n} ε={epsilon} k={categories}: exact {np.max(upper - lower):.5f} vs Hoeffding "
          f"{2 * halfwidth:.5f} (ratio {ratio:.3f}, Hoeffding {1 / ratio:.2f}x wider)")  # fmt: skip
    assert ratio < 0.75


def test_no_answers_give_the_whole_range():
    estimates, lower, upper = frequency_intervals([0, 0], 1.0)
    assert lower.tolist() == [0.0, 0.0]
    assert upper.tolist() == [1.0, 1.0]
    assert estimates.shape == (2,)


def test_extreme_counts_stay_in_the_unit_interval():
    for x in (0, 1, 99, 100):
        _, lower, upper = frequency_intervals([100 - x, x], 3.0, 0.05)
        assert 0 <= lower[1] <= upper[1] <= 1
        assert math.isfinite(lower[1])
