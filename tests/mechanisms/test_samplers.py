"""Exact CKS20 samplers (``pandas_dp.mechanisms.samplers``) against their exact distributions.

Every check draws from a fixed seed and compares with a reference computed here from the
definition of the distribution, never from the code under test.

Acceptance levels, derived once:

* ``P_MIN = 1e-6`` for χ² goodness of fit: under a correct sampler the p-value is uniform, so
  a fixed seed is an unlucky one with probability 1e-6. Every bin's expected count is at least
  20, where the χ² approximation is accurate.
* ``Z_MAX = 5`` standard deviations for a frequency or a moment: the two-sided normal tail is
  5.7e-7 (again about 1e-6). The counts below have N·p·(1-p) of several hundred or more, and
  the moments are averages of 10^6 independent terms with finite fourth moments, so the
  normal approximation holds (Chebyshev alone would still bound the chance by 1/25).

Power: the same statistics reject distributions that are wrong by a few percent (checked
explicitly below), so a biased sampler cannot pass.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from functools import cache

import numpy as np
import pytest
from scipy import stats

from pandas_dp.mechanisms.random import SeededRandomSource
from pandas_dp.mechanisms.samplers import (
    MAX_SCALE_TERM,
    bernoulli_exp_neg,
    bernoulli_exp_neg_fraction,
    bernoulli_exp_neg_one,
    discrete_laplace,
    geometric_exp_neg_one,
)

P_MIN = 1e-6
Z_MAX = 5.0
N = 1_000_000

# --- exact references ------------------------------------------------------------------------


def chi2_pvalue(observed, probabilities) -> float:
    """χ² goodness of fit of bin counts to exact bin probabilities (which must sum to 1)."""
    observed = np.asarray(observed, dtype=np.float64)
    probabilities = np.asarray(probabilities, dtype=np.float64)
    assert abs(probabilities.sum() - 1.0) < 1e-9
    expected = observed.sum() * probabilities
    assert expected.min() >= 20, "bins too thin for the χ² approximation"
    return float(stats.chisquare(observed, expected).pvalue)


def within_z(successes: int, trials: int, p: float) -> bool:
    sigma = math.sqrt(trials * p * (1 - p))
    return abs(successes - trials * p) <= Z_MAX * sigma


class ExactLaplace:
    """The discrete Laplace law ``P(Z = z) = (1 - q)/(1 + q) q^|z|``, ``q = exp(-s/t)``.

    Probabilities of integer intervals are computed from ``P(Z >= a) = q^a / (1 + q)``
    (``a >= 1``) with ``q^a = exp(-a s/t)`` evaluated directly and differences of powers
    written with ``expm1``, so that thin bins far in a tail keep full relative precision.
    """

    def __init__(self, scale: Fraction) -> None:
        self.scale = scale
        self.x = float(1 / scale)  # s / t
        self.q = math.exp(-self.x)
        self.one_minus_q = -math.expm1(-self.x)

    def pmf(self, z: int) -> float:
        return self.one_minus_q / (1 + self.q) * math.exp(-abs(z) * self.x)

    def at_least(self, a: int) -> float:
        """``P(Z >= a)``."""
        if a >= 1:
            return math.exp(-a * self.x) / (1 + self.q)
        return 1 - math.exp(-(1 - a) * self.x) / (1 + self.q)

    def interval(self, a: int | None, c: int | None) -> float:
        """``P(a <= Z < c)``; ``None`` stands for an infinite end."""
        if a is None:  # P(Z < c) = P(Z > -c) by symmetry
            return self.at_least(1 - c)
        if c is None:
            return self.at_least(a)
        if a >= 1:
            return math.exp(-a * self.x) * -math.expm1(-(c - a) * self.x) / (1 + self.q)
        if c <= 0:  # mirror image: P(-c < Z <= -a)
            return self.interval(1 - c, 1 - a)
        return 1 - self.interval(None, a) - self.interval(c, None)

    @property
    def variance(self) -> float:
        """``E Z^2 = 2q / (1 - q)^2``."""
        return 2 * self.q / self.one_minus_q**2

    @property
    def fourth_moment(self) -> float:
        """``E Z^4 = 2q (1 + 10q + q^2) / (1 - q)^4`` (from ``sum y^4 q^y``; checked below)."""
        q = self.q
        return 2 * q * (1 + 10 * q + q * q) / self.one_minus_q**4

    def cuts(self, n: int) -> list[int]:
        """Positive cut points ``k_1 < k_2 < ...`` for symmetric bins with ≥ 20 expected.

        Small scales: every integer is its own bin. Large scales: ``|Z|`` is cut at its
        (approximate) quantiles ``b ln(B / (B - j))``; the probabilities stay exact.
        """
        b = float(self.scale)
        if b <= 50:
            k = 1
            while n * self.pmf(k) >= 40 and n * self.at_least(k + 1) >= 40:
                k += 1
            return list(range(1, k + 1))
        bins = 100
        return sorted({round(b * math.log(bins / (bins - j))) for j in range(1, bins)})

    def binned(self, sample: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Counts and exact probabilities of the symmetric bins ``|Z| in [k_j, k_{j+1})``
        on each side, the middle bin being ``|Z| < k_1``."""
        cuts = self.cuts(sample.size)
        edges = [1 - k for k in reversed(cuts)] + cuts  # bin i is [edges[i-1], edges[i])
        bounds = [None, *edges, None]
        probabilities = [self.interval(a, c) for a, c in itertools.pairwise(bounds)]
        positions = np.searchsorted(np.asarray(edges), sample, side="right")
        counts = np.bincount(positions, minlength=len(bounds) - 1)
        return counts, np.asarray(probabilities)


#: (t, s) pairs: scales 1/2, 1, 10/3, 10, 2^20 and 10^9/3.
SCALES = [(1, 2), (1, 1), (10, 3), (10, 1), (1 << 20, 1), (10**9, 3)]
SCALE_IDS = [f"{t}/{s}" for t, s in SCALES]


@cache
def laplace_sample(t: int, s: int) -> np.ndarray:
    """10^6 draws for scale t/s, shared by the checks below (read-only)."""
    out = discrete_laplace(SeededRandomSource(1000 + 7 * t + s), t, s, N)
    out.setflags(write=False)
    return out


# --- Bernoulli(exp(-γ)) ----------------------------------------------------------------------

GAMMAS = [Fraction(0), Fraction(1, 3), Fraction(1, 2), Fraction(1), Fraction(5, 2), Fraction(7)]
GAMMAS += [Fraction(10, 3), Fraction(1, MAX_SCALE_TERM), Fraction(MAX_SCALE_TERM - 1, 1 << 52)]
GAMMA_IDS = ["0", "1/3", "1/2", "1", "5/2", "7", "10/3", "2^-52", "1-2^-52"]


def test_gamma_zero_always_succeeds():
    source = SeededRandomSource(0)
    assert bernoulli_exp_neg_fraction(source, np.zeros(1000, dtype=np.int64), 7).all()
    assert bernoulli_exp_neg(source, np.zeros(1000, dtype=np.int64), 1).all()


@pytest.mark.statistical
@pytest.mark.parametrize("gamma", GAMMAS, ids=GAMMA_IDS)
def test_bernoulli_exp_neg_frequency(gamma):
    p = math.exp(-gamma)
    numerators = np.full(N, gamma.numerator, dtype=np.int64)
    seed = 17 + gamma.numerator % 1000
    samplers = [bernoulli_exp_neg]
    if gamma <= 1:
        samplers.append(bernoulli_exp_neg_fraction)
    for sampler in samplers:
        trials = sampler(SeededRandomSource(seed), numerators, gamma.denominator)
        assert trials.dtype == np.bool_
        assert trials.shape == (N,)
        hits = int(np.count_nonzero(trials))
        if p == 1.0 or N * (1 - p) < 1e-6:
            # γ = 0 is certain; γ = 2^-52 fails with probability 2.2e-16 per trial.
            assert hits == N
        else:
            # Binomial(N, e^-γ): N p (1 - p) >= 900 for every γ here (γ = 7 is the smallest).
            assert within_z(hits, N, p), f"{sampler.__name__}: {hits} vs {N * p:.1f}"


@pytest.mark.statistical
def test_bernoulli_exp_neg_one_frequency():
    trials = bernoulli_exp_neg_one(SeededRandomSource(2), N)
    assert trials.shape == (N,)
    assert within_z(int(np.count_nonzero(trials)), N, math.exp(-1))


@pytest.mark.statistical
def test_bernoulli_exp_neg_respects_each_entry():
    # One vectorised call with interleaved γ: a mix-up of per-entry numerators while the
    # loop shrinks its active set would pull the groups' frequencies towards each other.
    denominator = 6
    gammas = [0, 1, 2, 3, 6, 9, 15, 42]  # over 6: 0, 1/6, 1/3, 1/2, 1, 3/2, 5/2, 7
    numerators = np.tile(np.array(gammas, dtype=np.int64), N // len(gammas))
    trials = bernoulli_exp_neg(SeededRandomSource(23), numerators, denominator)
    per_group = numerators.size // len(gammas)
    for i, g in enumerate(gammas):
        hits = int(np.count_nonzero(trials[i :: len(gammas)]))
        p = math.exp(-g / denominator)
        if g == 0:
            assert hits == per_group
        else:
            assert within_z(hits, per_group, p), f"γ = {g}/6: {hits} of {per_group}"
    # The same with the γ <= 1 sampler on the entries it accepts (within_z with p = 1
    # demands every trial to succeed).
    fractional = numerators[numerators <= denominator]  # pattern 0, 1, 2, 3, 6
    mixed = bernoulli_exp_neg_fraction(SeededRandomSource(29), fractional, denominator)
    for i, g in enumerate(gammas[:5]):
        group = mixed[i::5]
        assert within_z(int(np.count_nonzero(group)), group.size, math.exp(-g / denominator))


def test_bernoulli_exp_neg_empty():
    empty = np.zeros(0, dtype=np.int64)
    assert bernoulli_exp_neg(SeededRandomSource(0), empty, 3).shape == (0,)
    assert bernoulli_exp_neg_fraction(SeededRandomSource(0), empty, 3).shape == (0,)
    assert bernoulli_exp_neg_one(SeededRandomSource(0), 0).shape == (0,)


# --- geometric ---------------------------------------------------------------------------------


@pytest.mark.statistical
def test_geometric_exp_neg_one_goodness_of_fit():
    values = geometric_exp_neg_one(SeededRandomSource(31), N)
    assert values.dtype == np.int64
    assert values.min() >= 0
    # P(V = v) = (1 - e^-1) e^-v: single bins v = 0..top-1, then the tail P(V >= top) =
    # e^-top. top = 10 keeps every expected count above 20 (N e^-10 ≈ 45).
    top = 10
    probabilities = [(1 - math.exp(-1)) * math.exp(-v) for v in range(top)] + [math.exp(-top)]
    counts = np.bincount(np.minimum(values, top), minlength=top + 1)
    assert chi2_pvalue(counts, probabilities) > P_MIN
    mean = 1 / (math.e - 1)  # e^-1 / (1 - e^-1)
    variance = math.exp(-1) / (1 - math.exp(-1)) ** 2
    assert abs(values.mean() - mean) <= Z_MAX * math.sqrt(variance / N)


# --- discrete Laplace ------------------------------------------------------------------------


def test_fourth_moment_formula_matches_direct_summation():
    # The closed forms used as references for the moment checks, against direct sums.
    for scale in (Fraction(1, 2), Fraction(1), Fraction(10, 3), Fraction(10)):
        law = ExactLaplace(scale)
        zs = range(1, int(200 * scale) + 50)
        second = 2 * math.fsum(z * z * law.pmf(z) for z in zs)
        fourth = 2 * math.fsum(z**4 * law.pmf(z) for z in zs)
        assert math.isclose(second, law.variance, rel_tol=1e-12)
        assert math.isclose(fourth, law.fourth_moment, rel_tol=1e-12)
        total = law.pmf(0) + 2 * math.fsum(law.pmf(z) for z in zs)
        assert math.isclose(total, 1.0, rel_tol=1e-12)


@pytest.mark.statistical
@pytest.mark.parametrize(("t", "s"), SCALES, ids=SCALE_IDS)
def test_discrete_laplace_goodness_of_fit(t, s):
    sample = laplace_sample(t, s)
    assert sample.dtype == np.int64
    assert sample.shape == (N,)
    law = ExactLaplace(Fraction(t, s))
    counts, probabilities = law.binned(sample)
    assert chi2_pvalue(counts, probabilities) > P_MIN


@pytest.mark.statistical
@pytest.mark.parametrize(("t", "s"), SCALES, ids=SCALE_IDS)
def test_goodness_of_fit_rejects_a_scale_five_percent_off(t, s):
    # Power of the previous test: the same sample judged against scale 1.05 · t/s (computed
    # with the bins of the wrong law) must fail. χ² grows like N · (relative error)^2.
    sample = laplace_sample(t, s)
    wrong = ExactLaplace(Fraction(t, s) * Fraction(105, 100))
    counts, probabilities = wrong.binned(sample)
    assert chi2_pvalue(counts, probabilities) < P_MIN


@pytest.mark.statistical
@pytest.mark.parametrize(("t", "s"), SCALES, ids=SCALE_IDS)
def test_discrete_laplace_mean_and_variance(t, s):
    sample = laplace_sample(t, s).astype(np.float64)  # |z| < 2^53: exact in float64
    law = ExactLaplace(Fraction(t, s))
    # Mean: E Z = 0, and the sample mean has standard deviation sqrt(Var Z / N).
    assert abs(sample.mean()) <= Z_MAX * math.sqrt(law.variance / N)
    # Variance: the mean is known to be 0, so m2 = mean(Z^2) is unbiased for Var Z with
    # Var(m2) = (E Z^4 - (Var Z)^2) / N exactly; allow Z_MAX of those standard deviations.
    # For large scales this is about 5 sqrt(5/N) ≈ 1.1 % of the variance.
    m2 = float(np.mean(sample * sample))
    sd_m2 = math.sqrt((law.fourth_moment - law.variance**2) / N)
    assert abs(m2 - law.variance) <= Z_MAX * sd_m2, f"ratio {m2 / law.variance:.5f}"


@pytest.mark.statistical
@pytest.mark.parametrize(("t", "s"), SCALES[:4], ids=SCALE_IDS[:4])
def test_discrete_laplace_symmetry(t, s):
    # Given n_k + n_-k draws at ±k, n_k is Binomial(n_k + n_-k, 1/2) under symmetry, so
    # sum_k (n_k - n_-k)^2 / (n_k + n_-k) is χ² with one degree of freedom per k.
    sample = laplace_sample(t, s)
    largest = int(np.abs(sample).max())
    counts = np.bincount(sample + largest, minlength=2 * largest + 1)
    plus, minus = counts[largest + 1 :], counts[largest - 1 :: -1]
    used = (plus + minus) >= 40
    assert used.sum() >= 1
    diff, total = (plus - minus)[used].astype(float), (plus + minus)[used].astype(float)
    statistic = float(np.sum(diff * diff / total))
    assert stats.chi2.sf(statistic, int(used.sum())) > P_MIN
    # And the sign as a whole: positives vs negatives.
    positive, negative = int(np.count_nonzero(sample > 0)), int(np.count_nonzero(sample < 0))
    assert within_z(positive, positive + negative, 0.5)


@pytest.mark.statistical
@pytest.mark.parametrize(("t", "s"), SCALES[:4], ids=SCALE_IDS[:4])
def test_zero_is_not_counted_twice(t, s):
    # P(Z = 0) = (1 - q)/(1 + q). Keeping the "-0" draws would give P(Z = 0) = 1 - q, which
    # the same 5σ test must distinguish (the second assertion shows it does).
    sample = laplace_sample(t, s)
    law = ExactLaplace(Fraction(t, s))
    zeros = int(np.count_nonzero(sample == 0))
    assert within_z(zeros, N, law.pmf(0))
    assert not within_z(zeros, N, law.one_minus_q)


@pytest.mark.statistical
@pytest.mark.parametrize(
    ("t", "s"),
    [(MAX_SCALE_TERM, MAX_SCALE_TERM), (MAX_SCALE_TERM - 1, MAX_SCALE_TERM - 3),
     (MAX_SCALE_TERM - 1, 3), (MAX_SCALE_TERM, 1), (1, MAX_SCALE_TERM)],
    ids=["2^52/2^52", "(2^52-1)/(2^52-3)", "(2^52-1)/3", "2^52", "2^-52"],
)  # fmt: skip
def test_discrete_laplace_extreme_terms(t, s):
    # The largest accepted terms exercise 52-bit uniforms, Bernoulli(exp(-U/t)) with a 2^52
    # denominator and U + tV close to 2^62.
    n = 200_000
    sample = discrete_laplace(SeededRandomSource(t % 977 + s % 983), t, s, n)
    assert sample.shape == (n,)
    law = ExactLaplace(Fraction(t, s))
    if law.pmf(0) > 1 - 1e-9:
        # scale 2^-52: P(Z != 0) = 2 q / (1 + q) with q = exp(-2^52), i.e. 0.
        assert not sample.any()
        return
    counts, probabilities = law.binned(sample)
    assert chi2_pvalue(counts, probabilities) > P_MIN


def test_discrete_laplace_sizes():
    source = SeededRandomSource(0)
    for n in (0, 1, 2, 63, 64, 65, 1000):
        out = discrete_laplace(source, 3, 2, n)
        assert out.shape == (n,)
        assert out.dtype == np.int64


@pytest.mark.parametrize(
    ("t", "s"),
    [(0, 1), (1, 0), (-1, 1), (1, -1), (MAX_SCALE_TERM + 1, 1), (1, MAX_SCALE_TERM + 1)],
)
def test_discrete_laplace_rejects_terms_outside_range(t, s):
    with pytest.raises(ValueError, match="2\\*\\*52"):
        discrete_laplace(SeededRandomSource(0), t, s, 10)


def test_discrete_laplace_is_reproducible_with_a_seed():
    a = discrete_laplace(SeededRandomSource(42), 10, 3, 1000)
    b = discrete_laplace(SeededRandomSource(42), 10, 3, 1000)
    c = discrete_laplace(SeededRandomSource(43), 10, 3, 1000)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)
