"""Running totals (``pandas_dp.mechanisms.continual``): decoding, calibration and error laws.

- Zero noise: with the sampler replaced by zeros, every strategy returns ``np.cumsum(counts)``
  exactly, for T in 1, 2, 3, 7, 365 and 4096.
- Decoders against dense linear algebra: the tree's least squares against
  ``numpy.linalg.lstsq`` and ``(M^T M)^{-1}``; the square-root decoder against
  ``scipy.linalg.solve_triangular``.
- Cost: the scale handed to the sampler is ``k L / ε`` (tree), ``k / ε`` (bins), and
  ``σ² >= k² Δ² / (2ρ)`` with ``Δ²`` the largest squared column norm of ``R'``.
- Error laws (seeded): the empirical variance of the prefix errors matches the analytic one,
  and the half-widths cover.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import linalg

from pandas_dp.budget import Budget, RhoBudget
from pandas_dp.mechanisms import continual
from pandas_dp.mechanisms.continual.sqrt import (
    SqrtFactorization,
    sensitivity_squared,
    sqrt_coefficients,
)
from pandas_dp.mechanisms.continual.strategies import MAX_COUNT, NoisyBins
from pandas_dp.mechanisms.continual.tree import BinaryTree
from pandas_dp.mechanisms.gaussian.discrete import DiscreteGaussian
from pandas_dp.mechanisms.laplace import DiscreteLaplace
from pandas_dp.mechanisms.random import SeededRandomSource

SIZES = [1, 2, 3, 7, 365, 4096]


class ZeroSampler:
    """Stands in for a mechanism: records every request, returns zero noise."""

    def __init__(self, mechanism) -> None:
        self.mechanism = mechanism
        self.calls: list[int] = []

    def sample(self, n, source):
        self.calls.append(n)
        return np.zeros(n, dtype=np.int64)


def strategies(bins: int, k: int = 1):
    return [
        NoisyBins.plan(bins, epsilon=1, rows_per_unit=k),
        NoisyBins.plan(bins, rho=0.5, rows_per_unit=k),
        BinaryTree.plan(bins, epsilon=1, rows_per_unit=k),
        BinaryTree.plan(bins, epsilon=1, rows_per_unit=k, least_squares=False),
        SqrtFactorization.plan(bins, rho=0.5, rows_per_unit=k),
    ]


def zeroed(plan):
    fake = ZeroSampler(plan.mechanism)
    return dataclasses.replace(plan, mechanism=fake), fake


@pytest.mark.parametrize("bins", SIZES)
def test_zero_noise_gives_the_exact_running_total(bins: int) -> None:
    gen = np.random.default_rng(bins)
    for counts in (gen.integers(0, 1000, bins), np.zeros(bins, dtype=np.int64)):
        for plan in strategies(bins):
            quiet, fake = zeroed(plan)
            out = quiet.release(counts, SeededRandomSource(0))
            assert out.dtype == np.float64
            assert np.array_equal(out, np.cumsum(counts)), type(plan).__name__
            assert fake.calls == [plan.size]


def test_counts_are_clipped_silently_and_validated_publicly() -> None:
    counts = np.array([-5, MAX_COUNT + 7, 3], dtype=np.int64)
    for plan in strategies(3):
        quiet, _ = zeroed(plan)
        assert np.array_equal(
            quiet.release(counts, SeededRandomSource(0)), [0, MAX_COUNT, MAX_COUNT + 3]
        )
    plan = BinaryTree.plan(3, epsilon=1)
    with pytest.raises(ValueError, match="shape"):
        plan.release(np.zeros(4, dtype=np.int64), SeededRandomSource(0))
    with pytest.raises(TypeError, match="integer"):
        plan.release(np.zeros(3), SeededRandomSource(0))
    for bad in (0, 2**16 + 1, True, 3.0):
        with pytest.raises((TypeError, ValueError)):
            BinaryTree.plan(bad, epsilon=1)
    with pytest.raises(ValueError, match="exactly one"):
        NoisyBins.plan(3, epsilon=1, rho=1)


# --- decoders against dense linear algebra ---------------------------------------------------


def incidence(bins: int) -> np.ndarray:
    """Rows: every complete dyadic block ``[i 2^j, (i+1) 2^j)`` in ``[0, bins)``, leaves first."""
    rows = []
    for j in range(bins.bit_length()):
        for i in range(bins >> j):
            row = np.zeros(bins)
            row[i << j : (i + 1) << j] = 1
            rows.append(row)
    return np.array(rows)


@pytest.mark.parametrize("bins", [1, 2, 3, 5, 7, 8, 13, 16, 37])
def test_tree_least_squares_is_ordinary_least_squares(bins: int) -> None:
    m = incidence(bins)
    plan = BinaryTree.plan(bins, epsilon=1)
    assert m.shape[0] == plan.size == 2 * bins - bin(bins).count("1")
    assert m.sum(axis=0).max() == plan.levels  # one node per level: the L1 sensitivity
    y = np.random.default_rng(bins).integers(-50, 50, m.shape[0])
    expected = np.cumsum(np.linalg.lstsq(m, y, rcond=None)[0])
    np.testing.assert_allclose(plan.decode(y), expected, atol=1e-9)
    # Variance factor c^T (M^T M)^{-1} c and the largest node weight, per prefix.
    gram_inverse = np.linalg.inv(m.T @ m)
    prefixes = np.tril(np.ones((bins, bins)))
    weights = m @ gram_inverse @ prefixes.T
    np.testing.assert_allclose(plan.variance() / plan.mechanism.variance(), (weights**2).sum(0))
    np.testing.assert_allclose(plan._weights[1], np.abs(weights).max(0))
    # The plain decomposition uses popcount(t) nodes.
    plain = BinaryTree.plan(bins, epsilon=1, least_squares=False)
    popcount = [bin(t).count("1") for t in range(1, bins + 1)]
    np.testing.assert_allclose(plain.variance() / plain.mechanism.variance(), popcount)


@pytest.mark.parametrize("bins", [1, 2, 7, 50])
def test_sqrt_decoder_solves_the_triangular_system(bins: int) -> None:
    plan = SqrtFactorization.plan(bins, rho=0.5)
    c = sqrt_coefficients(bins)
    r = linalg.toeplitz(c, np.zeros(bins, dtype=np.int64)).astype(np.float64)
    y = np.random.default_rng(bins).integers(-(10**7), 10**7, bins)
    x = linalg.solve_triangular(r, y.astype(np.float64), lower=True)
    np.testing.assert_allclose(plan.decode(y), np.cumsum(x), rtol=1e-9, atol=1e-9)
    decoding = np.tril(np.ones((bins, bins))) @ np.linalg.inv(r)  # A R'^{-1}
    np.testing.assert_allclose(
        plan.variance() / plan.mechanism.variance(), (decoding**2).sum(axis=1), rtol=1e-9
    )
    # The float path (taken only for huge released values) agrees.
    huge = y * 2**30
    np.testing.assert_allclose(plan.decode(huge), np.cumsum(x) * 2**30, rtol=1e-9)


def test_sqrt_coefficients_are_the_rounded_central_binomials() -> None:
    c = sqrt_coefficients(12)
    exact = [Fraction(math.comb(2 * k, k), 4**k) for k in range(12)]
    assert c[0] == 2**20
    assert all(abs(int(ck) - e * 2**20) <= Fraction(1, 2) for ck, e in zip(c, exact, strict=True))
    # R R = A up to the rounding: (c * c)_n = 2^40 for every n, within 2^21 n + 1.
    square = np.convolve(c, c)[:12]
    assert np.all(np.abs(square - 2**40) <= 2**21 * np.arange(1, 13))


# --- cost ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("bins", "k"), [(1, 1), (7, 1), (365, 3), (4096, 2)])
def test_charged_cost_and_the_scale_passed_to_the_sampler(bins: int, k: int) -> None:
    tree = BinaryTree.plan(bins, epsilon=Fraction(1, 2), rows_per_unit=k)
    levels = bins.bit_length()
    assert tree.levels == levels
    assert tree.mechanism == DiscreteLaplace(Fraction(2 * k * levels))  # k L / ε
    assert tree.cost == Budget(Fraction(1, 2))
    assert k * levels / tree.mechanism.scale == tree.cost.epsilon
    quiet, fake = zeroed(tree)
    quiet.release(np.ones(bins, dtype=np.int64), SeededRandomSource(0))
    assert fake.mechanism.scale == 2 * k * levels
    assert fake.calls == [tree.size]

    bins_plan = NoisyBins.plan(bins, epsilon=Fraction(1, 2), rows_per_unit=k)
    assert bins_plan.mechanism == DiscreteLaplace(Fraction(2 * k))

    sqrt = SqrtFactorization.plan(bins, rho=Fraction(1, 4), rows_per_unit=k)
    c = [int(v) for v in sqrt_coefficients(bins)]
    delta2 = sum(v * v for v in c)
    assert sensitivity_squared(bins) == delta2
    # Δ² is the largest squared column norm of R' (column t holds c'_0 .. c'_{T-1-t}).
    assert max(sum(v * v for v in c[: bins - t]) for t in range(bins)) == delta2
    target = Fraction(k * k * delta2) / (2 * Fraction(1, 4))
    assert isinstance(sqrt.mechanism, DiscreteGaussian)
    assert target <= sqrt.mechanism.sigma2 <= target * (1 + Fraction(1, 10**6))
    assert Fraction(k * k * delta2) / (2 * sqrt.mechanism.sigma2) <= sqrt.cost.rho
    assert sqrt.cost == RhoBudget(Fraction(1, 4))
    quiet, fake = zeroed(sqrt)
    quiet.release(np.ones(bins, dtype=np.int64), SeededRandomSource(0))
    assert fake.mechanism.sigma2 == sqrt.mechanism.sigma2
    assert fake.calls == [bins]

    gauss = NoisyBins.plan(bins, rho=Fraction(1, 4), rows_per_unit=k)
    assert Fraction(k * k) / (2 * gauss.mechanism.sigma2) <= Fraction(1, 4)


# --- error laws ------------------------------------------------------------------------------

RUNS = 4000
WATCHED = [1, 2, 3, 31, 64, 65, 99, 100]  # prefix lengths (1-based) whose errors are checked


def prefix_errors(plan, seed: int, runs: int = RUNS) -> np.ndarray:
    """Errors of ``runs`` releases on all-zero counts: the decode of pure noise (the decoders
    are exact on noise-free measurements and linear, so any counts give the same errors)."""
    noise = plan.mechanism.sample(runs * plan.size, SeededRandomSource(seed))
    return plan.decode(noise.reshape(runs, plan.size))


@pytest.mark.statistical
@pytest.mark.parametrize("index", range(5))
def test_empirical_variance_matches_the_analytic_variance(index: int) -> None:
    plan = strategies(100)[index]
    errors = prefix_errors(plan, seed=100 + index)
    # Sampling law of the sample variance s² of R i.i.d. errors: by the delta method its
    # standard error is sqrt((m4 - s⁴) / R) (m4 the fourth central moment, estimated from the
    # same draws; the errors are sums of at most a few hundred Laplace/Gaussian variates,
    # excess kurtosis at most 3). 5 standard errors per watched prefix, seeds fixed.
    for t in WATCHED:
        e = errors[:, t - 1]
        s2 = float(np.mean(e**2))  # the mean is 0 exactly (symmetric noise, linear decoder)
        m4 = float(np.mean(e**4))
        se = np.sqrt((m4 - s2**2) / RUNS)
        analytic = plan.variance()[t - 1]
        assert abs(s2 - analytic) <= 5 * se, (type(plan).__name__, t, s2, analytic, se)


@pytest.mark.statistical
@pytest.mark.parametrize("index", range(5))
def test_halfwidths_cover(index: int) -> None:
    plan = strategies(100)[index]
    errors = prefix_errors(plan, seed=200 + index)
    alpha = 0.1
    misses = np.mean(np.abs(errors) >= plan.halfwidth(alpha), axis=0)
    # Each h_t is a conservative bound: P(miss) <= α. With 4000 runs the standard error of
    # a miss rate of 0.1 is 0.0047; 0.125 is over 5 of them above α.
    assert misses.max() <= alpha + 0.025, (type(plan).__name__, misses.max())
    # ... and not absurdly wide: the bound stays within 4 standard deviations at α = 0.1.
    assert np.all(plan.halfwidth(alpha) <= 4 * plan.stddev())


def test_least_squares_never_loses_to_the_plain_tree() -> None:
    for bins in (7, 365, 1000):
        plain = BinaryTree.plan(bins, epsilon=1, least_squares=False).variance()
        fitted = BinaryTree.plan(bins, epsilon=1).variance()
        assert np.all(fitted <= plain * (1 + 1e-12))


def test_module_uses_no_float_noise() -> None:
    source = inspect.getsource(continual)
    assert "default_rng" not in source
    assert "np.random" not in source
