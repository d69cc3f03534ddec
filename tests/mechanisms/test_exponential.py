"""The exact exponential mechanism: rates, probabilities and the sampler's distribution.

The sampler draws one candidate per row of a score matrix, so repeating a row ``N`` times
gives ``N`` independent draws from one distribution in a single vectorised call. Every
distribution test is a seeded χ² goodness-of-fit test against the exact law
``P(k) ∝ exp(-rate s_k)`` computed here from the definition, with bins merged until each
expects at least 5 draws; the threshold p > 1e-6 means a correct sampler fails with
probability 1e-6 per test, and the fixed seeds make the outcome reproducible.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from pandas_dp.mechanisms.exponential import ExponentialMechanism, sample_exponential
from pandas_dp.mechanisms.random import SeededRandomSource

DRAWS = 20_000


def law(scores: np.ndarray, denominator: int, rate: Fraction) -> np.ndarray:
    """``exp(-rate s_k) / Σ_j exp(-rate s_j)`` from the definition (shifted: no overflow)."""
    exact = [Fraction(int(s), denominator) for s in scores]
    best = min(exact)
    weights = np.array([math.exp(-float(rate * (s - best))) for s in exact])
    return weights / weights.sum()


def draws(mechanism: ExponentialMechanism, scores, denominator: int, seed: int, n=DRAWS):
    matrix = np.repeat(np.asarray(scores, dtype=np.int64)[None, :], n, axis=0)
    return mechanism.choose(matrix, denominator, SeededRandomSource(seed))


def chi2_pvalue(observed: np.ndarray, expected: np.ndarray) -> float:
    observed, expected = np.asarray(observed, float), np.asarray(expected, float)
    while expected.size > 2:
        order = np.argsort(expected)
        observed, expected = observed[order], expected[order]
        if expected[0] >= 5:
            break
        observed = np.concatenate([[observed[0] + observed[1]], observed[2:]])
        expected = np.concatenate([[expected[0] + expected[1]], expected[2:]])
    return float(stats.chisquare(observed, expected * observed.sum() / expected.sum()).pvalue)


# --- rates and probabilities -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("epsilon", "sensitivity", "monotone", "rate"),
    [
        (Fraction(1), Fraction(1), False, Fraction(1, 2)),
        (Fraction(1), Fraction(1), True, Fraction(1)),
        (Fraction(3, 10), Fraction(4), False, Fraction(3, 80)),
        (Fraction(3, 10), Fraction(4), True, Fraction(3, 40)),
    ],
)
def test_rate(epsilon, sensitivity, monotone, rate):
    # McSherry & Talwar: exp(-ε s / (2Δ)); monotone scores: exp(-ε s / Δ).
    assert ExponentialMechanism(epsilon, sensitivity, monotone).rate == rate


def test_probabilities_match_the_definition():
    mechanism = ExponentialMechanism(Fraction(7, 10), Fraction(1))
    scores = np.array([3.0, 0.0, 1.5, 1.5, 40.0])
    expected = law(np.array([6, 0, 3, 3, 80]), 2, Fraction(7, 20))
    np.testing.assert_allclose(mechanism.probabilities(scores), expected, rtol=1e-12)
    # Shifting every score changes nothing; equal scores get equal chances.
    np.testing.assert_allclose(mechanism.probabilities(scores + 1e6), expected, rtol=1e-9)
    probabilities = mechanism.probabilities(scores)
    assert probabilities[2] == probabilities[3]
    # Rows are independent distributions.
    matrix = np.stack([scores, scores[::-1]])
    rows = mechanism.probabilities(matrix)
    np.testing.assert_allclose(rows.sum(axis=1), 1.0)
    np.testing.assert_allclose(rows[1], expected[::-1], rtol=1e-12)


def test_probabilities_with_huge_gaps_and_one_candidate():
    mechanism = ExponentialMechanism(Fraction(1), Fraction(1), monotone=True)
    probabilities = mechanism.probabilities(np.array([1e300, 0.0, 1e300]))
    assert probabilities.tolist() == [0.0, 1.0, 0.0]
    assert mechanism.probabilities(np.array([5.0])).tolist() == [1.0]


# --- the sampler's distribution --------------------------------------------------------------

SHAPES = {
    "linear": ([0, 1, 2, 3, 4, 5, 6, 7], 1, ExponentialMechanism(Fraction(1), Fraction(1))),
    "linear, monotone": (
        [0, 1, 2, 3, 4, 5, 6, 7],
        1,
        ExponentialMechanism(Fraction(1), Fraction(1), monotone=True),
    ),
    "ties": ([0, 0, 0, 1, 1, 4], 1, ExponentialMechanism(Fraction(1), Fraction(1))),
    "quadratic, rational": (
        [k * k for k in range(-4, 5)],
        4,
        ExponentialMechanism(Fraction(7, 10), Fraction(3)),
    ),
    "best not first": ([9, 4, 12, 4, 0, 30], 3, ExponentialMechanism(Fraction(2), Fraction(1))),
    "tiny ε, nearly uniform": (
        [0, 100, 200, 300],
        1,
        ExponentialMechanism(Fraction(1, 1000), Fraction(1), monotone=True),
    ),
    "decimal ε from a float": (
        [5, 0, 17, 3, 11, 20, 8],
        7,
        ExponentialMechanism(Fraction(str(0.3)), Fraction(1)),
    ),
    "large ε": ([0, 1, 2, 3], 1, ExponentialMechanism(Fraction(3), Fraction(1), monotone=True)),
}


@pytest.mark.parametrize(("scores", "denominator", "mechanism"), SHAPES.values(), ids=SHAPES.keys())
def test_frequencies_match_probabilities(scores, denominator, mechanism):
    chosen = draws(mechanism, scores, denominator, seed=len(scores) * 1000 + denominator)
    observed = np.bincount(chosen, minlength=len(scores))
    expected = DRAWS * law(np.array(scores), denominator, mechanism.rate)
    # The library's own probabilities agree with the definition.
    real = np.array(scores, dtype=float) / denominator
    np.testing.assert_allclose(mechanism.probabilities(real), expected / DRAWS, rtol=1e-12)
    assert chi2_pvalue(observed, expected) > 1e-6


def test_the_chi2_test_can_tell_the_monotone_rate_apart():
    # Power: draws at rate ε/2 are rejected against the law of rate ε, and vice versa.
    scores = [0, 1, 2, 3, 4, 5, 6, 7]
    slow = ExponentialMechanism(Fraction(1), Fraction(1))
    fast = ExponentialMechanism(Fraction(1), Fraction(1), monotone=True)
    observed = np.bincount(draws(slow, scores, 1, seed=7), minlength=8)
    assert chi2_pvalue(observed, DRAWS * law(np.array(scores), 1, fast.rate)) < 1e-6
    observed = np.bincount(draws(fast, scores, 1, seed=8), minlength=8)
    assert chi2_pvalue(observed, DRAWS * law(np.array(scores), 1, slow.rate)) < 1e-6


def test_one_candidate_is_always_chosen():
    mechanism = ExponentialMechanism(Fraction(1), Fraction(1))
    assert set(draws(mechanism, [123], 1, seed=1, n=1000).tolist()) == {0}


def test_huge_score_gaps_choose_the_best_without_overflow():
    mechanism = ExponentialMechanism(Fraction(1), Fraction(1), monotone=True)
    # exp(-10**6) and exp(-10**12) are far below anything observable.
    chosen = draws(mechanism, [10**6, 0, 10**12], 1, seed=2, n=5000)
    assert set(chosen.tolist()) == {1}
    # Two tied best candidates behind a huge gap: each wins half the time.
    chosen = draws(mechanism, [0, 10**9, 0], 1, seed=3, n=5000)
    assert set(chosen.tolist()) <= {0, 2}
    assert stats.binomtest(int((chosen == 0).sum()), 5000, 0.5).pvalue > 1e-6


def test_rows_are_independent_distributions():
    mechanism = ExponentialMechanism(Fraction(1), Fraction(1))
    rows = np.array([[0, 2, 4, 6], [6, 4, 2, 0], [0, 0, 0, 0]], dtype=np.int64)
    matrix = np.tile(rows, (6000, 1))  # rows interleaved: 0, 1, 2, 0, 1, 2, ...
    chosen = sample_exponential(SeededRandomSource(9), matrix, 1, mechanism.rate)
    for r, row in enumerate(rows):
        observed = np.bincount(chosen[r::3], minlength=4)
        assert chi2_pvalue(observed, 6000 * law(row, 1, mechanism.rate)) > 1e-6


def test_no_candidates_is_an_error():
    with pytest.raises(ValueError, match="candidate"):
        sample_exponential(SeededRandomSource(0), np.zeros((1, 0), dtype=np.int64), 1, Fraction(1))


def test_seeded_draws_are_reproducible():
    mechanism = ExponentialMechanism(Fraction(1), Fraction(1))
    first = draws(mechanism, [0, 1, 2], 1, seed=5, n=200)
    assert np.array_equal(first, draws(mechanism, [0, 1, 2], 1, seed=5, n=200))
    assert not np.array_equal(first, draws(mechanism, [0, 1, 2], 1, seed=6, n=200))
