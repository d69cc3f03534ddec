"""The building blocks of the batched exact samplers, against their exact distributions.

Same acceptance levels as ``test_samplers.py`` (χ² p-value above 1e-6, frequencies within 5
standard deviations, fixed seeds): coin chains read from one mixed-radix integer, first
failures among batched coins, Bernoulli(x) trials decided digit by digit, and geometric
variates read as runs of one i.i.d. sequence (including runs that cross a batch).
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from pandas_dp.mechanisms import samplers
from pandas_dp.mechanisms.random import SeededRandomSource, bernoulli_ratio
from pandas_dp.mechanisms.samplers import (
    coin_chain_ends,
    first_failures,
    geometric_exp_neg_one,
)

P_MIN = 1e-6
Z_MAX = 5.0


def chi2_pvalue(observed: np.ndarray, probabilities: list[float]) -> float:
    expected = np.asarray(probabilities) * observed.sum()
    assert expected.min() >= 20, "bins too thin for the χ² approximation"
    return float(stats.chisquare(observed, expected).pvalue)


def within_z(successes: int, trials: int, p: float) -> bool:
    return abs(successes - trials * p) <= Z_MAX * math.sqrt(trials * p * (1 - p))


def chain_law(start: int, last: int) -> list[float]:
    """``P(end = k)`` for ``k = start .. last`` and ``P(end > last)``: ``P(end > k) = Π 1/j``."""
    beyond, law = 1.0, []
    for k in range(start, last + 1):
        law.append(beyond * (1 - 1 / k))
        beyond /= k
    return [*law, beyond]


@pytest.mark.parametrize(
    ("start", "last", "n"), [(2, 7, 1_000_000), (8, 9, 200_000), (20, 20, 20_000)]
)
def test_coin_chain_ends_follow_the_chain_law(start, last, n):
    ends = coin_chain_ends(SeededRandomSource(start), n, start)
    assert ends.min() >= start
    observed = np.bincount(np.minimum(ends, last + 1) - start, minlength=last - start + 2)
    assert chi2_pvalue(observed, chain_law(start, last)) > P_MIN


def test_coin_chain_ends_continue_past_the_first_integer():
    """From 2, coins 2..7 come from one integer; chains past 7 draw again from 8."""
    ends = coin_chain_ends(SeededRandomSource(3), 2_000_000)
    past = int(np.count_nonzero(ends >= 8))
    assert within_z(past, ends.size, 1 / math.factorial(7))
    assert within_z(int(np.count_nonzero(ends >= 9)), ends.size, 1 / math.factorial(8))


@pytest.mark.parametrize("denominator", [3, 10**9 + 7, (1 << 50) - 3, (1 << 60) - 1])
def test_bernoulli_ratio_frequencies(denominator):
    n = 400_000
    source = SeededRandomSource(denominator % 1009)
    for x in (Fraction(1, 3), Fraction(1, 2), Fraction(9, 10)):
        numerator = int(x * denominator)
        hits = bernoulli_ratio(source, np.full(n, numerator, dtype=np.int64), denominator)
        assert within_z(int(hits.sum()), n, numerator / denominator)
    assert not bernoulli_ratio(source, np.zeros(1000, dtype=np.int64), denominator).any()
    full = np.full(1000, denominator, dtype=np.int64)
    assert bernoulli_ratio(source, full, denominator).all()


class _Words:
    """A source handing out given 16-bit words (little-endian), for the tie path."""

    def __init__(self, words: list[int]) -> None:
        self.data = np.asarray(words, dtype=np.uint16).view(np.uint8)

    def randbytes(self, n: int) -> np.ndarray:
        out, self.data = self.data[:n], self.data[n:]
        assert out.size == n
        return out


def test_bernoulli_ratio_decides_ties_on_the_next_digit():
    # x = (2**19 + 1) / 2**20 has base-2**16 digits 2**15, 2**12, 0, 0, ...
    numerator, denominator = np.array([(1 << 19) + 1], dtype=np.int64), 1 << 20
    assert bernoulli_ratio(_Words([1 << 15, 4095]), numerator, denominator)[0]
    assert not bernoulli_ratio(_Words([1 << 15, 4097]), numerator, denominator)[0]
    assert not bernoulli_ratio(_Words([1 << 15, 4096, 0, 1]), numerator, denominator)[0]
    assert bernoulli_ratio(_Words([(1 << 15) - 1]), numerator, denominator)[0]


@pytest.mark.parametrize("denominator", [3, (1 << 40) + 5])
def test_first_failures_are_truncated_geometric(denominator):
    n, length = 200_000, 4
    numerator = int(denominator * 0.6)
    numerators = np.full(n, numerator, dtype=np.int64)
    lengths = np.full(n, length, dtype=np.int64)
    lengths[::2] = 0  # entries without coins report their length, 0
    first = first_failures(SeededRandomSource(11), numerators, denominator, lengths)
    assert not first[::2].any()
    p = numerator / denominator
    law = [p**j * (1 - p) for j in range(length)] + [p**length]
    observed = np.bincount(first[1::2], minlength=length + 1)
    assert chi2_pvalue(observed, law) > P_MIN


def test_geometric_runs_cross_batches(monkeypatch):
    """Runs of successes that reach a batch's end continue into the next batch."""
    real = samplers.bernoulli_exp_neg_one

    def short_batches(source, n):  # at most 3 trials per batch: most runs cross one
        return real(source, min(n, 3))

    monkeypatch.setattr(samplers, "bernoulli_exp_neg_one", short_batches)
    values = geometric_exp_neg_one(SeededRandomSource(41), 100_000)
    q = math.exp(-1)
    cuts = 8
    law = [(1 - q) * q**v for v in range(cuts)] + [q**cuts]
    observed = np.bincount(np.minimum(values, cuts), minlength=cuts + 1)
    assert chi2_pvalue(observed, law) > P_MIN


def test_geometric_of_nothing_is_empty():
    assert geometric_exp_neg_one(SeededRandomSource(0), 0).shape == (0,)


def laplace_law(scale: Fraction, cut: int) -> list[float]:
    """``P(Z = z)`` for ``|z| < cut`` (ascending) and the two tails ``P(|Z| >= cut)`` / 2 each."""
    q = math.exp(-1 / float(scale))
    pmf = [(1 - q) / (1 + q) * q ** abs(z) for z in range(-cut + 1, cut)]
    tail = q**cut / (1 + q)
    return [tail, *pmf, tail]


def test_discrete_laplace_many_gives_each_request_its_own_law():
    """Several scales drawn together (mixed ``t``, so per-candidate denominators)."""
    requests = [(1, 2, 200_000), (10, 3, 300_000), (7, 1, 250_000), (5, 4, 0)]
    outs = samplers.discrete_laplace_many(SeededRandomSource(17), requests)
    assert [out.size for out in outs] == [n for _, _, n in requests]
    for (t, s, n), values in zip(requests[:3], outs[:3], strict=True):
        cut = 3 if t < s else 12
        law = laplace_law(Fraction(t, s), cut)
        clipped = np.clip(values, -cut, cut) + cut  # -cut: lower tail, cut: upper tail
        observed = np.bincount(clipped, minlength=2 * cut + 1)
        assert chi2_pvalue(observed, law) > P_MIN, (t, s)
        assert abs(values.mean()) < Z_MAX * math.sqrt(2 * float(Fraction(t, s)) ** 2 / n) + 0.01


def test_bernoulli_ratio_with_a_denominator_per_trial():
    n = 300_000
    denominators = np.array([2, 3, 10**9 + 7, (1 << 50) - 3], dtype=np.int64).repeat(n)
    numerators = denominators // 3
    hits = bernoulli_ratio(SeededRandomSource(5), numerators, denominators)
    for i, den in enumerate([2, 3, 10**9 + 7, (1 << 50) - 3]):
        assert within_z(int(hits[i * n : (i + 1) * n].sum()), n, (den // 3) / den), den
    with pytest.raises(ValueError, match="denominators"):
        bernoulli_ratio(SeededRandomSource(0), numerators[:2], np.array([0, 5], dtype=np.int64))


@pytest.mark.parametrize(("odd", "shift"), [(100, 29), (3, 8), (5, 12)])
def test_uniform_below_a_multiple_of_a_power_of_two(odd, shift):
    """Uniform below ``odd · 2**k``: ``(U >> k, U mod 16)`` is uniform on its ``odd × 16`` cells."""
    from pandas_dp.mechanisms.random import uniform_below

    modulus, n = odd << shift, 300_000
    values = uniform_below(SeededRandomSource(odd + shift), modulus, n)
    assert values.min() >= 0
    assert values.max() < modulus
    cells = (values >> shift) * 16 + values % 16
    assert chi2_pvalue(np.bincount(cells, minlength=odd * 16), [1 / (odd * 16)] * odd * 16) > P_MIN
    tenths = [-(-j * modulus // 10) for j in range(11)]  # and the range's ten slices
    slices = [(b - a) / modulus for a, b in itertools.pairwise(tenths)]
    where = np.searchsorted(np.asarray(tenths[1:]), values, side="right")
    assert chi2_pvalue(np.bincount(where, minlength=10), slices) > P_MIN
