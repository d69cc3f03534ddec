"""Uniform bits and exact uniform integers (``pandas_dp.mechanisms.random``).

Statistical checks use fixed seeds, so every run sees the same numbers. The acceptance level
``P_MIN = 1e-6`` is the probability that a *correct* sampler fails a check for a seed chosen at
random: the fixed seeds are then almost surely not unlucky ones, while a biased sampler's χ²
statistic grows linearly with the sample size and falls far below ``P_MIN`` (see the power
checks, which feed the same test with data that has a known, small bias).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from pandas_dp.mechanisms.random import (
    MAX_MODULUS,
    SeededRandomSource,
    SystemRandomSource,
    bernoulli_one_over,
    random_bits,
    uniform_below,
    uniform_words,
)

P_MIN = 1e-6
#: For a count of successes among N trials with probability p, a deviation of more than
#: Z_MAX standard deviations has probability about 5.7e-7 under the normal approximation,
#: which is accurate here because every N·p·(1-p) below exceeds 10^4.
Z_MAX = 5.0
N = 1_000_000
HYPOTHESIS = settings(max_examples=150, derandomize=True, database=None, deadline=None)

MODULI = [1, 2, 3, 7, 1 << 20, (1 << 20) + 1, 10**9, 1 << 62]


def chi2_pvalue(observed: np.ndarray, probabilities: np.ndarray) -> float:
    """χ² goodness of fit of bin counts to exact bin probabilities (which must sum to 1)."""
    observed = np.asarray(observed, dtype=np.float64)
    probabilities = np.asarray(probabilities, dtype=np.float64)
    assert abs(probabilities.sum() - 1.0) < 1e-12
    expected = observed.sum() * probabilities
    assert expected.min() >= 20, "bins too thin for the χ² approximation"
    return float(stats.chisquare(observed, expected).pvalue)


def binned_uniform(values: np.ndarray, modulus: int, bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Counts of ``values`` in ``bins`` consecutive blocks of ``[0, modulus)``, and the exact
    probability of each block (its number of integers over ``modulus``)."""
    width = -(-modulus // bins)
    count = -(-modulus // width)
    sizes = [width] * (count - 1) + [modulus - (count - 1) * width]
    observed = np.bincount(values // width, minlength=count)
    return observed, np.array([size / modulus for size in sizes])


def residues(values: np.ndarray, modulus: int, base: int) -> tuple[np.ndarray, np.ndarray]:
    """Counts of ``values % base`` and their exact probabilities under uniformity on
    ``[0, modulus)``: residue ``r`` is taken by ``(modulus - 1 - r) // base + 1`` integers."""
    observed = np.bincount(values % base, minlength=base)
    sizes = [(modulus - 1 - r) // base + 1 for r in range(base)]
    return observed, np.array([size / modulus for size in sizes])


def within_z(successes: int, trials: int, p: float) -> bool:
    sigma = np.sqrt(trials * p * (1 - p))
    return abs(successes - trials * p) <= Z_MAX * sigma


# --- sources ------------------------------------------------------------------------------


def test_seeded_source_is_reproducible_and_seed_dependent():
    a, b, c = SeededRandomSource(7), SeededRandomSource(7), SeededRandomSource(8)
    first = a.randbytes(1000)
    assert np.array_equal(first, b.randbytes(1000))
    assert not np.array_equal(first, c.randbytes(1000))
    assert not np.array_equal(first, a.randbytes(1000))  # the stream moves on
    assert repr(a) == "SeededRandomSource(seed=7)"


@pytest.mark.parametrize("source", [SeededRandomSource(1), SystemRandomSource()], ids=repr)
@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 1001])
def test_randbytes_shape_and_dtype(source, n):
    out = source.randbytes(n)
    assert out.dtype == np.uint8
    assert out.shape == (n,)


def test_system_source_is_not_constant():
    # Two 32-byte reads from the OS CSPRNG coincide with probability 2**-256.
    source = SystemRandomSource()
    assert not np.array_equal(source.randbytes(32), source.randbytes(32))
    assert "urandom" in repr(source)


@pytest.mark.statistical
def test_seeded_bytes_are_uniform():
    counts = np.bincount(SeededRandomSource(11).randbytes(N), minlength=256)
    assert chi2_pvalue(counts, np.full(256, 1 / 256)) > P_MIN


# --- uniform_words ------------------------------------------------------------------------


@pytest.mark.statistical
@pytest.mark.parametrize("bits", [1, 7, 8, 9, 16, 17, 31, 32, 33, 52, 62])
def test_uniform_words_fill_exactly_their_bits(bits):
    n = 20_000
    words = uniform_words(SeededRandomSource(100 + bits), bits, n)
    assert words.dtype == np.int64
    assert words.shape == (n,)
    assert words.min() >= 0
    assert words.max() < 1 << bits
    # Every one of the ``bits`` bit positions is a fair coin: n/4 = 5000 >> 1, so 5σ is sound.
    for position in range(bits):
        ones = int(np.count_nonzero((words >> position) & 1))
        assert within_z(ones, n, 0.5), f"bit {position} of {bits}: {ones} ones in {n}"


@pytest.mark.parametrize("bits", [63, 64, 65])
def test_uniform_words_refuses_more_than_62_bits(bits):
    # The documented domain is 1 <= bits <= 62. 64 bits would wrap to negative int64 values.
    with pytest.raises(ValueError, match="62"):
        uniform_words(SeededRandomSource(0), bits, 4)


# --- uniform_below ------------------------------------------------------------------------


@pytest.mark.parametrize("modulus", MODULI)
def test_uniform_below_stays_in_range(modulus):
    values = uniform_below(SeededRandomSource(modulus % 1000), modulus, 100_000)
    assert values.dtype == np.int64
    assert values.shape == (100_000,)
    assert values.min() >= 0
    assert values.max() < modulus
    if modulus <= 7:
        assert set(np.unique(values).tolist()) == set(range(modulus))


@pytest.mark.statistical
@pytest.mark.parametrize("modulus", [2, 3, 7, 10, 255, 257, 1000])
def test_uniform_below_small_moduli_are_uniform(modulus):
    values = uniform_below(SeededRandomSource(modulus), modulus, N)
    counts = np.bincount(values, minlength=modulus)
    assert chi2_pvalue(counts, np.full(modulus, 1 / modulus)) > P_MIN


@pytest.mark.statistical
@pytest.mark.parametrize("modulus", [1 << 20, (1 << 20) + 1, 10**9, 3 * 10**17 + 1, 1 << 62])
def test_uniform_below_large_moduli_are_uniform(modulus):
    # High-order structure (256 consecutive blocks, the last one shorter unless 256 divides
    # the modulus) and low-order structure (residues mod 256), both with exact probabilities.
    values = uniform_below(SeededRandomSource(modulus % 9973), modulus, N)
    assert chi2_pvalue(*binned_uniform(values, modulus, 256)) > P_MIN
    assert chi2_pvalue(*residues(values, modulus, 256)) > P_MIN


@pytest.mark.statistical
def test_uniform_checks_detect_modulo_bias():
    # Power check: 30-bit words reduced mod 10^9 over-represent [0, 2**30 - 10^9) twice; the
    # same test as above must reject that sampler.
    modulus = 10**9
    biased = uniform_words(SeededRandomSource(5), 30, N) % modulus
    assert chi2_pvalue(*binned_uniform(biased, modulus, 256)) < P_MIN


def test_uniform_below_modulus_one_and_empty_draws():
    source = SeededRandomSource(0)
    assert np.array_equal(uniform_below(source, 1, 5), np.zeros(5, dtype=np.int64))
    for modulus in (1, 2, 3, 1 << 62):
        empty = uniform_below(source, modulus, 0)
        assert empty.shape == (0,)
        assert empty.dtype == np.int64


@pytest.mark.parametrize("modulus", [0, -1, -(1 << 62), MAX_MODULUS + 1, 1 << 63, 1 << 64])
def test_uniform_below_rejects_invalid_moduli(modulus):
    with pytest.raises(ValueError, match="modulus"):
        uniform_below(SeededRandomSource(0), modulus, 3)


def test_max_modulus_is_two_to_the_62():
    assert MAX_MODULUS == 1 << 62


@HYPOTHESIS
@given(modulus=st.integers(1, MAX_MODULUS), n=st.integers(0, 64), seed=st.integers(0, 2**32))
def test_uniform_below_range_property(modulus, n, seed):
    values = uniform_below(SeededRandomSource(seed), modulus, n)
    assert values.shape == (n,)
    assert values.dtype == np.int64
    assert ((values >= 0) & (values < modulus)).all()


def test_uniform_below_near_powers_of_two():
    # Just above a power of two almost half of the words are rejected; the largest value is
    # still reachable and nothing at or above the modulus leaks through.
    for bits in (1, 2, 5, 13):
        modulus = (1 << bits) + 1
        values = uniform_below(SeededRandomSource(bits), modulus, 50_000)
        assert values.max() == modulus - 1
        assert values.min() == 0


# --- Bernoulli(1/k) and fair bits ----------------------------------------------------------


def test_bernoulli_one_over_one_always_succeeds():
    assert bernoulli_one_over(SeededRandomSource(0), 1, 1000).all()


@pytest.mark.statistical
@pytest.mark.parametrize("k", [2, 3, 7, 1000, 2**40 + 3])
def test_bernoulli_one_over_frequency(k):
    trials = bernoulli_one_over(SeededRandomSource(k % 1013), k, N)
    assert trials.dtype == np.bool_
    assert trials.shape == (N,)
    hits = int(np.count_nonzero(trials))
    if k == 2**40 + 3:
        # N/k ≈ 1e-6: a single success would already be a 1-in-10^6 event.
        assert hits == 0
    else:
        assert within_z(hits, N, 1 / k)


@pytest.mark.statistical
def test_random_bits_are_fair_and_independent():
    n = N + 3  # not a multiple of 8
    bits = random_bits(SeededRandomSource(3), n)
    assert bits.dtype == np.bool_
    assert bits.shape == (n,)
    assert within_z(int(np.count_nonzero(bits)), n, 0.5)
    # Adjacent non-overlapping pairs take the four patterns with probability 1/4 each.
    pairs = bits[: n - n % 2].reshape(-1, 2).astype(np.int64)
    counts = np.bincount(2 * pairs[:, 0] + pairs[:, 1], minlength=4)
    assert chi2_pvalue(counts, np.full(4, 0.25)) > P_MIN
