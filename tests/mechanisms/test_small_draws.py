"""Discrete Laplace variates drawn one at a time (``pandas_dp.mechanisms.small_draws``).

The one-at-a-time path must have exactly the law of the vectorised sampler: each check
draws from fixed seeds and compares with the exact law (χ² goodness of fit, with the
references and acceptance levels of ``test_samplers.py``: p > 1e-6, 5 standard deviations)
and with the vectorised sampler itself (χ² test of homogeneity), at scales from 1/2 to
2^43, the lattice scales a float mean's sum is noised at. A scale 5 % off must fail the same
checks. Its work must not depend on the value it returns: bytes read per variate are
compared between small and large values, and a mutant that reads as many trials as ``V``
needs must fail that comparison.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from pandas_dp.mechanisms import small_draws
from pandas_dp.mechanisms.laplace import MIN_BATCH, SMALL_DRAWS, DiscreteLaplace
from pandas_dp.mechanisms.random import U8, SeededRandomSource
from pandas_dp.mechanisms.samplers import discrete_laplace
from pandas_dp.mechanisms.small_draws import _accepts, _Bits, _geometric, discrete_laplace_small

from .test_samplers import P_MIN, Z_MAX, ExactLaplace, chi2_pvalue, within_z

N = 60_000
#: (t, s): scales 1/2, 1, 10/3, 2^20, 2^43 and about 2^43 / 3 (a rounded dyadic's terms).
SCALES = [(1, 2), (1, 1), (10, 3), (1 << 20, 1), (1 << 43, 1), (26388279066625, 7)]
SCALE_IDS = ["1/2", "1", "10/3", "2^20", "2^43", "~2^43/3"]


def one_by_one(t: int, s: int, seed: int) -> np.ndarray:
    """``N`` variates of the small path, one call per variate (as a release draws them)."""
    source = SeededRandomSource(seed)
    return np.concatenate([discrete_laplace_small(source, t, s, 1) for _ in range(N)])


@pytest.mark.statistical
@pytest.mark.parametrize(("t", "s"), SCALES, ids=SCALE_IDS)
def test_small_path_has_the_exact_law_and_the_batched_one(t, s):
    small = one_by_one(t, s, 100 + t % 1000 + s)
    batched = discrete_laplace(SeededRandomSource(200 + t % 1000 + s), t, s, N)
    law = ExactLaplace(Fraction(t, s))
    counts, probabilities = law.binned(small)
    assert chi2_pvalue(counts, probabilities) > P_MIN
    # Homogeneity: the two samples' counts in the same bins come from one law.
    other, _ = law.binned(batched)
    assert stats.chi2_contingency(np.vstack([counts, other])).pvalue > P_MIN
    # Power: judged against a scale 5 % too large, the same sample fails.
    wrong = ExactLaplace(Fraction(t, s) * Fraction(105, 100))
    assert chi2_pvalue(*wrong.binned(small)) < P_MIN
    assert small.dtype == np.int64


@pytest.mark.statistical
@pytest.mark.parametrize("gamma", [Fraction(0), Fraction(1, 3), Fraction(9, 10), Fraction(1)])
def test_acceptance_step_is_bernoulli_exp_neg_gamma(gamma):
    # Algorithm 1 with u/t = γ (γ = 1 reads as u = t, outside the sampler's u < t, but the
    # coins are the same and it is the hardest case: every chain runs longest).
    t = 3 * 10**9
    u = int(gamma * t)
    bits = _Bits(SeededRandomSource(7))
    hits = sum(_accepts(bits, u, t) for _ in range(N))
    p = math.exp(-float(gamma))
    assert hits == N if gamma == 0 else within_z(hits, N, p)


@pytest.mark.statistical
def test_geometric_is_exact():
    source = SeededRandomSource(11)
    values = np.array([_geometric(source) for _ in range(N)])
    top = 7  # single bins v = 0..6, then the tail P(V >= 7) = e^-7: N e^-7 ≈ 55 expected
    probabilities = [(1 - math.exp(-1)) * math.exp(-v) for v in range(top)] + [math.exp(-top)]
    counts = np.bincount(np.minimum(values, top), minlength=top + 1)
    assert chi2_pvalue(counts, probabilities) > P_MIN


@pytest.mark.statistical
@pytest.mark.parametrize("modulus", [1, 3, 7, 10, 1000, (1 << 40) + 1])
def test_bits_below_is_uniform(modulus):
    bits = _Bits(SeededRandomSource(modulus % 97))
    values = np.array([bits.below(modulus) for _ in range(N)], dtype=np.int64)
    assert values.min() >= 0
    assert values.max() < modulus
    if modulus == 1:
        assert not values.any()
        return
    bins = min(modulus, 50)  # equal-width bins of [0, modulus): exact probabilities
    edges = [modulus * j // bins for j in range(bins + 1)]
    counts = np.histogram(values, bins=edges)[0]
    assert chi2_pvalue(counts, np.diff(edges) / modulus) > P_MIN


class CountingSource:
    """A seeded source that counts the bytes read."""

    def __init__(self, seed: int) -> None:
        self.inner = SeededRandomSource(seed)
        self.read = 0

    def randbytes(self, n: int) -> U8:
        self.read += n
        return self.inner.randbytes(n)


def bytes_by_size(t: int, draws: int) -> tuple[np.ndarray, np.ndarray]:
    """Bytes read per variate, for the variates with ``|Z| < t`` and with ``|Z| >= 2t``."""
    source = CountingSource(3)
    read, values = [], []
    for _ in range(draws):
        before = source.read
        values.append(int(discrete_laplace_small(source, t, 1, 1)[0]))
        read.append(source.read - before)
    size, spent = np.abs(np.array(values)), np.array(read, dtype=np.float64)
    return spent[size < t], spent[size >= 2 * t]


def differ(small: np.ndarray, large: np.ndarray) -> bool:
    """Whether the mean bytes differ by more than ``Z_MAX`` standard errors."""
    se = math.sqrt(small.var() / small.size + large.var() / large.size)
    return abs(small.mean() - large.mean()) > Z_MAX * max(se, 1e-9)


@pytest.mark.statistical
def test_bytes_read_do_not_depend_on_the_value(monkeypatch):
    small, large = bytes_by_size(10, 20_000)
    assert large.size > 1000  # P(|Z| >= 2b) ≈ e^-2: about 2,700 of them
    assert not differ(small, large)
    # The check has power: a sampler that reads one trial of V at a time (work growing with
    # |Z|) fails it.
    monkeypatch.setattr(small_draws, "GEOMETRIC_TRIALS", 1)
    monkeypatch.setattr(small_draws, "_WORDS", 9)
    small, large = bytes_by_size(10, 20_000)
    assert differ(small, large)


def test_shapes_ranges_and_dispatch():
    for n in range(SMALL_DRAWS + 1):
        out = DiscreteLaplace(Fraction(10, 3)).sample(n, SeededRandomSource(5))
        assert out.shape == (n,)
        assert out.dtype == np.int64
        assert np.array_equal(out, discrete_laplace_small(SeededRandomSource(5), 10, 3, n))
    # t = 1 (scales 1/s): one at a time only up to SMALL_DRAWS // 2, then the batch.
    batch = discrete_laplace(SeededRandomSource(6), 1, 1, MIN_BATCH)
    for n in range(1, SMALL_DRAWS + 1):
        out = DiscreteLaplace(Fraction(1)).sample(n, SeededRandomSource(6))
        alone = discrete_laplace_small(SeededRandomSource(6), 1, 1, n)
        assert np.array_equal(out, alone if n <= SMALL_DRAWS // 2 else batch[:n])
    for t, s in [(0, 1), (1, 0), ((1 << 52) + 1, 1)]:
        with pytest.raises(ValueError, match="scale terms"):
            discrete_laplace_small(SeededRandomSource(0), t, s, 1)
    # The largest terms: U + t V stays exact (Python integers) and fits int64 once divided.
    big = discrete_laplace_small(SeededRandomSource(1), 1 << 52, 1, 4)
    assert big.dtype == np.int64
    assert (np.abs(big) < 1 << 62).all()
