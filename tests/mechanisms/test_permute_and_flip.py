"""Permute-and-flip (McKenna & Sheldon 2020): its exact law, the sampler and the wiring.

The law. Candidate ``k`` is accepted with probability ``p_k = exp(-rate (s_k - s_min))``,
independently, and a uniform accepted candidate is released: ``P(r) = E[1{r ∈ A} / |A|]``.
It is computed here from that definition by enumerating the ``2**K`` accepted sets, and from
the sequential mechanism (a uniform order, the first success) by enumerating the ``K!``
orders; both must agree with the library's quadrature formula
(:func:`~pandas_dp.mechanisms.exponential.permute_and_flip_probabilities`) to rounding.

The sampler repeats one score row ``N`` times (``N`` independent draws in one vectorised
call). Every distribution test is a seeded χ² goodness-of-fit test against the exact law,
bins merged until each expects 5 draws; ``p > 1e-6`` fails a correct sampler with
probability 1e-6 per test, and the seeds make the outcome reproducible. The power tests
show that the same χ² test rejects the exponential mechanism's law and the law at twice the
rate.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import pandas_dp.mechanisms.exponential as exponential
from pandas_dp.accounting.events import SelectionMeasurement
from pandas_dp.mechanisms.exponential import (
    ExponentialMechanism,
    permute_and_flip_probabilities,
    sample_permute_and_flip,
)
from pandas_dp.mechanisms.random import SeededRandomSource, uniform_below_each

from .test_exponential import chi2_pvalue, law

DRAWS = 20_000


def accepted_sets_law(scores, denominator: int, rate: Fraction) -> np.ndarray:
    """``E[1{r ∈ A} / |A|]`` by enumerating every accepted set ``A`` (small ``K``)."""
    exact = [Fraction(int(s), denominator) for s in scores]
    best = min(exact)
    p = [math.exp(-float(rate * (s - best))) for s in exact]
    out = np.zeros(len(p))
    for coins in itertools.product((False, True), repeat=len(p)):
        if not any(coins):
            continue
        weight = math.prod(q if c else 1 - q for q, c in zip(p, coins, strict=True))
        out[list(coins)] += weight / sum(coins)
    return out


def sequential_law(scores, denominator: int, rate: Fraction) -> np.ndarray:
    """Permute-and-flip as published: a uniform order, the first candidate whose coin
    succeeds; every order enumerated (``K!``, small ``K``)."""
    exact = [Fraction(int(s), denominator) for s in scores]
    best = min(exact)
    p = [math.exp(-float(rate * (s - best))) for s in exact]
    out = np.zeros(len(p))
    orders = list(itertools.permutations(range(len(p))))
    for order in orders:
        survive = 1.0
        for k in order:
            out[k] += survive * p[k] / len(orders)
            survive *= 1 - p[k]
    return out


def draws(mechanism: ExponentialMechanism, scores, denominator: int, seed: int, n=DRAWS):
    matrix = np.repeat(np.asarray(scores, dtype=np.int64)[None, :], n, axis=0)
    return mechanism.choose(matrix, denominator, SeededRandomSource(seed))


def flip(epsilon, sensitivity=Fraction(1)) -> ExponentialMechanism:
    return ExponentialMechanism(Fraction(epsilon), Fraction(sensitivity), flip=True)


SHAPES = {
    "ties": ([0, 0, 0, 1, 1, 4], 1, flip(1)),
    "quadratic, rational": ([k * k for k in range(-3, 4)], 4, flip(Fraction(7, 10), 3)),
    "best not first": ([9, 4, 12, 4, 0, 30], 3, flip(2)),
    "tiny ε, nearly uniform": ([0, 100, 200, 300], 1, flip(Fraction(1, 1000))),
    "decimal ε from a float": ([5, 0, 17, 3, 11, 20, 8], 7, flip(Fraction(str(0.3)))),
    "median scores, halves": ([6, 2, 2, 0, 2, 4, 8], 2, flip(1, Fraction(1, 2))),
}


# --- the law ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("scores", "denominator", "mechanism"), SHAPES.values(), ids=SHAPES.keys())
def test_the_law_is_the_sequential_mechanism_and_the_formula(scores, denominator, mechanism):
    by_sets = accepted_sets_law(scores, denominator, mechanism.rate)
    np.testing.assert_allclose(by_sets.sum(), 1.0, rtol=1e-12)
    # Drawing the coins first and the order after: the same law (the module's proof sketch).
    np.testing.assert_allclose(sequential_law(scores, denominator, mechanism.rate), by_sets)
    real = np.array(scores, dtype=float) / denominator
    np.testing.assert_allclose(mechanism.probabilities(real), by_sets, rtol=1e-12, atol=1e-15)


def test_probabilities_on_rows_and_many_candidates():
    # Rows on the last axis; 2,001 candidates (quadrature with 1,001 nodes) sum to 1, and a
    # block of tied best candidates shares its mass equally.
    rng = np.random.default_rng(3)
    scores = rng.integers(0, 50, size=(2, 2001)).astype(float)
    scores[:, :3] = -1.0
    got = permute_and_flip_probabilities(scores, 0.2)
    assert got.shape == scores.shape
    # The bound the docstring derives: K log-terms of size <= 15 summed pairwise.
    k = scores.shape[1]
    bound = (math.log2(k) + 2) * 15 * k * 2.0**-52
    np.testing.assert_allclose(got.sum(axis=1), 1.0, rtol=bound)
    np.testing.assert_array_equal(got[:, :3], got[:, :1].repeat(3, axis=1))
    # Never worse than the exponential mechanism in expectation (McKenna & Sheldon, Thm. 2).
    em = ExponentialMechanism(Fraction(1, 5), Fraction(1, 2)).probabilities(scores)
    assert ((got * scores).sum(axis=1) <= (em * scores).sum(axis=1) + 1e-12).all()


def test_probabilities_edge_cases():
    m = flip(1)
    np.testing.assert_array_equal(m.probabilities(np.array([7.0])), [1.0])
    np.testing.assert_allclose(m.probabilities(np.full(5, 3.0)), np.full(5, 0.2), rtol=1e-15)
    huge = m.probabilities(np.array([1e6, 0.0, 1e12, 0.0]))
    np.testing.assert_allclose(huge, [0.0, 0.5, 0.0, 0.5], rtol=1e-15, atol=1e-300)


# --- the sampler -----------------------------------------------------------------------------


@pytest.mark.parametrize(("scores", "denominator", "mechanism"), SHAPES.values(), ids=SHAPES.keys())
def test_frequencies_match_the_law(scores, denominator, mechanism):
    chosen = draws(mechanism, scores, denominator, seed=len(scores) * 1000 + denominator)
    observed = np.bincount(chosen, minlength=len(scores))
    expected = DRAWS * accepted_sets_law(scores, denominator, mechanism.rate)
    assert chi2_pvalue(observed, expected) > 1e-6


def test_the_chi2_test_tells_the_exponential_mechanism_and_twice_the_rate_apart():
    # Power: the same χ² test rejects the exponential mechanism's law at the same rate (the
    # laws differ by up to 0.09 per candidate here) and permute-and-flip at twice the rate.
    scores = [0, 1, 1, 2, 3, 4, 5, 6]
    m = flip(1, Fraction(1, 2))  # rate 1
    observed = np.bincount(draws(m, scores, 1, seed=9), minlength=8)
    assert chi2_pvalue(observed, DRAWS * accepted_sets_law(scores, 1, m.rate)) > 1e-6
    assert chi2_pvalue(observed, DRAWS * law(np.array(scores), 1, m.rate)) < 1e-6
    assert chi2_pvalue(observed, DRAWS * accepted_sets_law(scores, 1, 2 * m.rate)) < 1e-6


def test_all_scores_equal_is_uniform():
    chosen = draws(flip(1), [4, 4, 4, 4, 4], 1, seed=4)
    assert chi2_pvalue(np.bincount(chosen, minlength=5), np.full(5, DRAWS / 5)) > 1e-6


def test_one_candidate_is_always_chosen():
    assert set(draws(flip(1), [123], 1, seed=1, n=1000).tolist()) == {0}


def test_huge_score_gaps_choose_the_best_without_overflow():
    m = flip(1)
    chosen = draws(m, [10**6, 0, 10**12], 1, seed=2, n=5000)
    assert set(chosen.tolist()) == {1}
    # Two tied best candidates behind a huge gap: each wins half the time.
    chosen = draws(m, [0, 10**9, 0], 1, seed=3, n=5000)
    assert set(chosen.tolist()) <= {0, 2}
    assert stats.binomtest(int((chosen == 0).sum()), 5000, 0.5).pvalue > 1e-6
    # Exact scores beyond int64 (object arrays) take the exact path.
    big = np.array([[2**70, 0, 2**70 + 1]] * 100, dtype=object)
    chosen = sample_permute_and_flip(SeededRandomSource(5), big, 1, Fraction(1, 2))
    assert set(chosen.tolist()) == {1}


def test_rows_are_independent_laws_across_chunks(monkeypatch):
    # Chunks of 7 rows (21 coins): the law holds whichever chunk a row falls in.
    monkeypatch.setattr(exponential, "_MAX_COINS", 21)
    a, b = [0, 1, 3], [2, 0, 0]
    rows = np.array([a, b] * 3000, dtype=np.int64)
    chosen = flip(1).choose(rows, 1, SeededRandomSource(6))
    for start, scores in ((0, a), (1, b)):
        observed = np.bincount(chosen[start::2], minlength=3)
        expected = 3000 * accepted_sets_law(scores, 1, Fraction(1, 2))
        assert chi2_pvalue(observed, expected) > 1e-6


def test_seeded_draws_are_reproducible():
    first = draws(flip(1), [0, 2, 1, 5], 1, seed=8, n=500)
    assert np.array_equal(first, draws(flip(1), [0, 2, 1, 5], 1, seed=8, n=500))


def test_no_candidates_and_monotone_scores_are_errors():
    with pytest.raises(ValueError, match="at least one candidate"):
        flip(1).choose(np.zeros((2, 0), dtype=np.int64), 1, SeededRandomSource(0))
    with pytest.raises(ValueError, match="non-monotone"):
        ExponentialMechanism(Fraction(1), Fraction(1), monotone=True, flip=True)


def test_uniform_below_each_is_exactly_uniform_per_entry():
    moduli = np.array([1, 2, 3, 5, 7, 1000] * 4000, dtype=np.int64)
    got = uniform_below_each(SeededRandomSource(7), moduli)
    assert ((got >= 0) & (got < moduli)).all()
    for m in (2, 3, 5, 7):
        observed = np.bincount(got[moduli == m], minlength=m)
        assert chi2_pvalue(observed, np.full(m, 4000 / m)) > 1e-6
    assert (got[moduli == 1] == 0).all()


# --- the wiring ------------------------------------------------------------------------------


def test_ledger_names_the_sampler():
    assert flip(1).name == "permute_and_flip"
    assert ExponentialMechanism(Fraction(1)).name == "exponential"
    assert "permute_and_flip" in SelectionMeasurement.mechanisms


def test_pure_epsilon_quantiles_flip_unless_too_many_coins(protect_seeded, monkeypatch):
    """A pure-ε median samples by permute-and-flip and says so; a grouped release whose public
    groups × candidates exceed FLIP_MAX_COINS uses the exponential mechanism (public inputs:
    the keys and the grid)."""
    seen: list[ExponentialMechanism] = []
    original = ExponentialMechanism.choose

    def recording(self, scores, denominator, source):
        seen.append(self)
        return original(self, scores, denominator, source)

    monkeypatch.setattr(ExponentialMechanism, "choose", recording)
    data = pd.DataFrame({"x": np.linspace(0, 1, 40), "g": np.repeat(np.arange(4), 10)})
    priv = protect_seeded(data, epsilon=10)
    priv["x"].dp.median(bounds=(0, 1), epsilon=1, cells=16)
    assert seen[-1].flip
    (m,) = priv.dp.session.releases[-1].measurements
    assert m.mechanism == "permute_and_flip"
    note = priv.dp.session.ledger["note"].iloc[-1]
    assert "permute-and-flip" in note
    # 4 groups × (16 edges and round values): below the guard.
    priv.dp.groupby("g", keys=range(4)).agg(m=("x", "median"), bounds={"x": (0, 1)}, epsilon=1)
    assert seen[-1].flip
    # The guard, lowered to 4 groups × 5 candidates (cells=4 on integers 0..4): over it.
    monkeypatch.setattr("pandas_dp.planning.planner.FLIP_MAX_COINS", 19)
    ints = pd.DataFrame({"x": np.arange(40) % 5, "g": np.repeat(np.arange(4), 10)})
    priv = protect_seeded(ints, epsilon=10)
    priv.dp.groupby("g", keys=range(4)).agg(m=("x", "median"), bounds={"x": (0, 4)}, epsilon=1)
    assert not seen[-1].flip
    (m,) = priv.dp.session.releases[-1].measurements
    assert m.mechanism == "exponential"
    assert (
        "exponential mechanism (groups × candidates exceed"
        in (priv.dp.session.ledger["note"].iloc[-1])
    )
