"""The discrete Gaussian: exact sampler, accuracy helpers and calibration.

Every reference below is computed in this file from the definition, never with the code
under test:

* the pmf ``P(Y = y) ∝ exp(-y² / (2σ²))`` by direct summation over ``|y| <= 15σ + 2`` (the
  mass left out is below ``exp(-112)`` relative, far below anything a test can see);
* the privacy curve δ(ε) of ``x ↦ x + Y`` for integer sensitivity Δ as the hockey-stick
  divergence ``Σ_y max(0, P(Y = y) - e^ε P(Y = y - Δ))``, written as
  ``Σ_{L(y) > ε} P(Y = y) (1 - e^{ε - L(y)})`` with the privacy loss
  ``L(y) = ((y - Δ)² - y²) / (2σ²)`` (``expm1`` keeps it accurate). This is the definition of
  (ε, δ)-DP for the pair of output laws, with no appeal to CKS20 Theorem 7;
* the continuous Gaussian curve of Balle & Wang with ``scipy.stats.norm``.

Acceptance levels, derived once (as in ``test_samplers.py``):

* ``P_MIN = 1e-6`` for χ² goodness of fit: under a correct sampler the p-value is uniform, so
  a fixed seed fails with probability 1e-6. Bins are merged until each expects at least 50.
* ``Z_MAX = 5`` standard deviations for means, variances and sign counts (two-sided normal
  tail 5.7e-7; averages of ``N`` independent terms with finite fourth moments).
* Kolmogorov–Smirnov through the Dvoretzky–Kiefer–Wolfowitz inequality with Massart's
  constant, ``P(sup |F_N - F| > t) <= 2 exp(-2 N t²)``, which holds for every distribution,
  discrete ones included: ``t = sqrt(ln(2 / 1e-6) / (2N))`` fails with probability 1e-6.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import optimize, stats

from pandas_dp.budget import zcdp_to_epsilon
from pandas_dp.mechanisms.gaussian.calibration import (
    analytic_gaussian_delta,
    analytic_sigma,
    calibrate_sigma,
    calibrate_sigma_zcdp,
    discrete_gaussian_delta,
)
from pandas_dp.mechanisms.gaussian.discrete import (
    MIN_SHIFTED_SENSITIVITY,
    SIGMA_TARGET,
    DiscreteGaussian,
    discrete_gaussian,
    exact_sigma2,
    plan_gaussian,
)
from pandas_dp.mechanisms.random import SeededRandomSource, SystemRandomSource
from pandas_dp.planning.measurement.parts import NoiseChoice, sum_part

P_MIN = 1e-6
Z_MAX = 5.0
N = 200_000
DKW = math.sqrt(math.log(2 / 1e-6) / (2 * N))

#: σ² under test: non-integer rationals (below 1, between 1 and 4, with denominators that
#: do not divide anything), a square, and large values: a plain integer and the ``t·m``
#: forms :func:`exact_sigma2` produces for large σ.
SIGMA2 = [
    Fraction(49, 100),
    Fraction(7, 3),
    Fraction(9, 4),
    Fraction(1, 10),
    Fraction(1000, 7),
    Fraction(10**6),
    exact_sigma2(5000.3),
    exact_sigma2(40_000.5),
]


# --- exact references ------------------------------------------------------------------------


def reference_pmf(sigma2: Fraction) -> tuple[np.ndarray, np.ndarray]:
    """Support ``-h..h`` (``h = ceil(15σ) + 2``) and the normalised pmf on it."""
    s2 = float(sigma2)
    half = math.ceil(15 * math.sqrt(s2)) + 2
    y = np.arange(-half, half + 1)
    weights = np.exp(-(y.astype(np.float64) ** 2) / (2 * s2))
    return y, weights / math.fsum(weights)


def reference_delta(sigma2: float, epsilon: float, sensitivity: int) -> float:
    """δ(ε) of ``x + Y`` for neighbours at distance ``sensitivity``: the hockey stick."""
    half = math.ceil(15 * math.sqrt(sigma2)) + sensitivity + 2
    y = np.arange(-half, half + 1).astype(np.float64)
    weights = np.exp(-(y * y) / (2 * sigma2))
    loss = ((y - sensitivity) ** 2 - y * y) / (2 * sigma2)
    hot = loss > epsilon
    excess = weights[hot] * -np.expm1(epsilon - loss[hot])
    return math.fsum(excess) / math.fsum(weights)


def continuous_delta(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """Balle & Wang's exact δ(ε) of the continuous Gaussian mechanism (scipy, log space)."""
    u, v = sensitivity / (2 * sigma), epsilon * sigma / sensitivity
    first = stats.norm.logcdf(u - v)
    second = epsilon + stats.norm.logcdf(-u - v)
    return float(math.exp(first) * -math.expm1(min(second - first, 0.0)))


def classical_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """Dwork & Roth's ``sqrt(2 ln(1.25/δ)) Δ/ε`` (proved for ε < 1 only)."""
    return math.sqrt(2 * math.log(1.25 / delta)) * sensitivity / epsilon


def merged_bins(probabilities: np.ndarray, least: float) -> np.ndarray:
    """Start positions of consecutive bins each holding probability ``>= least``."""
    starts, mass = [0], 0.0
    for i, p in enumerate(probabilities):
        if mass >= least:
            starts.append(i)
            mass = 0.0
        mass += p
    if mass < least:  # merge a thin last bin into its neighbour
        starts.pop()
    return np.asarray(starts)


def goodness_of_fit(sample: np.ndarray, sigma2: Fraction) -> tuple[float, float]:
    """χ² p-value (bins of expected count >= 50) and the KS distance to the exact cdf."""
    y, pmf = reference_pmf(sigma2)
    assert sample.min() >= y[0]
    assert sample.max() <= y[-1]
    counts = np.bincount(sample - y[0], minlength=y.size)
    starts = merged_bins(pmf, max(50 / sample.size, 1e-3))
    observed = np.add.reduceat(counts, starts)
    expected = np.add.reduceat(pmf, starts) * sample.size
    assert expected.min() >= 50
    chi2 = float(stats.chisquare(observed, expected * observed.sum() / expected.sum()).pvalue)
    ks = float(np.max(np.abs(np.cumsum(counts) / sample.size - np.cumsum(pmf))))
    return chi2, ks


def moments(sigma2: Fraction) -> tuple[float, float]:
    """Exact variance and fourth moment."""
    y, pmf = reference_pmf(sigma2)
    y2 = y.astype(np.float64) ** 2
    return math.fsum(pmf * y2), math.fsum(pmf * y2 * y2)


# --- the sampler -----------------------------------------------------------------------------


@pytest.mark.statistical
@pytest.mark.parametrize("sigma2", SIGMA2, ids=str)
def test_sampler_matches_the_exact_pmf(sigma2: Fraction) -> None:
    sample = DiscreteGaussian(sigma2).sample(N, SeededRandomSource(101))
    assert sample.dtype == np.int64
    assert sample.shape == (N,)
    chi2, ks = goodness_of_fit(sample, sigma2)
    assert chi2 > P_MIN, f"χ² p = {chi2:.3g}"
    assert ks < DKW, f"KS distance {ks:.3g} > {DKW:.3g}"


@pytest.mark.statistical
@pytest.mark.parametrize("sigma2", SIGMA2, ids=str)
def test_sampler_mean_variance_and_symmetry(sigma2: Fraction) -> None:
    sample = DiscreteGaussian(sigma2).sample(N, SeededRandomSource(202)).astype(np.float64)
    variance, fourth = moments(sigma2)
    assert variance <= float(sigma2) * (1 + 1e-12)  # the variance is below σ² (float sums)
    assert abs(sample.mean()) <= Z_MAX * math.sqrt(variance / N)
    spread = math.sqrt((fourth - variance**2) / N)
    assert abs(np.mean(sample**2) - variance) <= Z_MAX * spread
    positive, negative = np.count_nonzero(sample > 0), np.count_nonzero(sample < 0)
    # Given the non-zero draws, the sign is a fair coin: Binomial(m, 1/2), sd sqrt(m)/2.
    assert abs(positive - negative) <= Z_MAX * math.sqrt(positive + negative)


@pytest.mark.statistical
def test_the_checks_have_power() -> None:
    # The moment check rejects a sampler whose σ² is 3% off: N = 2e5 draws measure the
    # second moment to sqrt(2/N) = 0.32% (9.5 sd for a 3% error). The χ² (hundreds of bins)
    # and the KS distance need a bigger error: 10% (KS distance about 0.01 > DKW 0.006).
    sigma2 = Fraction(10**4)
    variance, fourth = moments(sigma2)
    spread = math.sqrt((fourth - variance**2) / N)
    wrong = DiscreteGaussian(sigma2 * Fraction(103, 100)).sample(N, SeededRandomSource(3))
    assert abs(np.mean(wrong.astype(np.float64) ** 2) - variance) > Z_MAX * spread
    wrong = DiscreteGaussian(sigma2 * Fraction(110, 100)).sample(N, SeededRandomSource(3))
    chi2, ks = goodness_of_fit(wrong, sigma2)
    assert chi2 < P_MIN
    assert ks > DKW
    # ... and a sampler that is off by one (a shift) fails the χ².
    shifted = DiscreteGaussian(Fraction(9, 4)).sample(N, SeededRandomSource(4)) + 1
    chi2, _ = goodness_of_fit(shifted, Fraction(9, 4))
    assert chi2 < P_MIN


def test_seeded_sampling_is_reproducible() -> None:
    mechanism = DiscreteGaussian(Fraction(7, 3))
    first = mechanism.sample(1000, SeededRandomSource(5))
    again = mechanism.sample(1000, SeededRandomSource(5))
    other = mechanism.sample(1000, SeededRandomSource(6))
    assert np.array_equal(first, again)
    assert not np.array_equal(first, other)
    # Small requests still draw a full batch and return exactly what was asked for.
    assert mechanism.sample(3, SeededRandomSource(5)).shape == (3,)
    assert mechanism.sample(0, SeededRandomSource(5)).shape == (0,)


@pytest.mark.statistical
def test_sampling_with_the_system_csprng() -> None:
    # Unseeded, so the outcome changes between runs: very wide tolerances (failure chance
    # below 1e-12 each: p-value floor 1e-12, 8 sd for the moments, DKW at 1e-12).
    n = 100_000
    sigma2 = Fraction(7, 3)
    sample = DiscreteGaussian(sigma2).sample(n, SystemRandomSource())
    y, pmf = reference_pmf(sigma2)
    counts = np.bincount(sample - y[0], minlength=y.size)
    starts = merged_bins(pmf, 50 / n)
    chi2 = stats.chisquare(np.add.reduceat(counts, starts), np.add.reduceat(pmf, starts) * n)
    assert chi2.pvalue > 1e-12
    variance, _ = moments(sigma2)
    assert abs(sample.mean()) <= 8 * math.sqrt(variance / n)
    ks = np.max(np.abs(np.cumsum(counts) / n - np.cumsum(pmf)))
    assert ks < math.sqrt(math.log(2 / 1e-12) / (2 * n))


@pytest.mark.parametrize("sigma2", [Fraction(0), Fraction(-1, 3)])
def test_sampler_rejects_non_positive_sigma2(sigma2: Fraction) -> None:
    with pytest.raises(ValueError, match="positive"):
        discrete_gaussian(SeededRandomSource(0), sigma2, 10)
    with pytest.raises(ValueError, match="positive"):
        DiscreteGaussian(sigma2)


def test_mechanism_needs_an_exact_fraction() -> None:
    with pytest.raises(ValueError, match="Fraction"):
        DiscreteGaussian(2.25)  # type: ignore[arg-type]


def test_sampler_refuses_parameters_beyond_its_exact_range() -> None:
    # σ² = p/q with p ≈ 1e20 and q = 7: whatever t near σ the acceptance exponent
    # (|Y| q t - p)² / (2 p q t²) has a denominator far beyond 2**62, so the exact sampler
    # refuses rather than approximating.
    with pytest.raises(ValueError, match="exact range"):
        discrete_gaussian(SeededRandomSource(0), Fraction(10**20 + 1, 7), 10)


# --- accuracy helpers ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sigma2", [Fraction(49, 100), Fraction(7, 3), Fraction(1000, 7), exact_sigma2(5000.3)],
    ids=str,
)  # fmt: skip
def test_variance_tail_and_quantile_agree_with_direct_sums(sigma2: Fraction) -> None:
    mechanism = DiscreteGaussian(sigma2)
    y, pmf = reference_pmf(sigma2)
    variance, _ = moments(sigma2)
    # Above σ = 4096 the deficit of the variance below σ² is exp(-2π²σ²): invisible.
    assert mechanism.variance() == pytest.approx(variance, rel=1e-9)

    def tail(k: int) -> float:  # P(|Y| >= k)
        return math.fsum(pmf[np.abs(y) >= k])

    sigma = math.sqrt(sigma2)
    for k in {0, 1, 2, round(sigma), round(2 * sigma), round(3 * sigma), round(5 * sigma)}:
        # Above σ = 4096 the tail is a continuity-corrected normal tail (error O(1/σ²)).
        assert mechanism.tail(k) == pytest.approx(tail(k), rel=1e-6, abs=1e-300)
    for alpha in (0.5, 0.05, 0.01, 1e-6):
        k = mechanism.quantile_halfwidth(alpha)
        # The defining property: the smallest k with P(|Y| > k) <= alpha.
        assert tail(k + 1) <= alpha
        assert k == 0 or tail(k) > alpha


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.1, 1.5, math.nan])
def test_quantile_halfwidth_rejects_alpha_outside_the_unit_interval(alpha: float) -> None:
    with pytest.raises(ValueError, match="alpha"):
        DiscreteGaussian(Fraction(7, 3)).quantile_halfwidth(alpha)


@pytest.mark.parametrize("sigma2", [Fraction(7, 3), Fraction(2**41 + 3, 2**20)], ids=str)
def test_scale_is_sigma_rounded_down(sigma2: Fraction) -> None:
    scale = DiscreteGaussian(sigma2).scale
    assert scale.denominator <= 2**20
    assert scale**2 <= sigma2 < (scale + Fraction(1, 2**20)) ** 2
    assert DiscreteGaussian(sigma2).effective_scale == scale


@pytest.mark.parametrize("sigma", [0.3, 1.0, 4.23, 100.7, 1023.99, 1024.0, 5000.3, 2.0**20 + 0.7])
def test_exact_sigma2_rounds_up_by_a_hair(sigma: float) -> None:
    sigma2 = exact_sigma2(sigma)
    assert isinstance(sigma2, Fraction)
    assert sigma2 >= Fraction(sigma) ** 2
    if sigma < 1024:  # 20 significant bits, rounded up: relative excess below 2**-19
        assert sigma2 / Fraction(sigma) ** 2 - 1 < Fraction(1, 2**19)
        assert sigma2.denominator & (sigma2.denominator - 1) == 0  # a dyadic rational
    else:  # σ² = t·m with t = floor(σ) + 1: excess below t, i.e. about 1/σ relative
        t = math.floor(sigma) + 1
        assert sigma2.denominator == 1
        assert sigma2.numerator % t == 0
        assert sigma2 - Fraction(sigma) ** 2 < t
    # Inside the exact sampler's range (the raw sampler refuses what it cannot draw exactly).
    assert discrete_gaussian(SeededRandomSource(0), sigma2, 1).shape == (1,)


# --- calibration -----------------------------------------------------------------------------

#: (ε, δ, Δ) where the calibrated σ stays within the exactly summed range (σ <= 4096).
EXACT_RANGE = [
    (1.0, 1e-6, 1),
    (0.1, 1e-6, 1),
    (0.01, 1e-6, 1),
    (0.5, 1e-9, 3),
    (0.5, 1e-5, 1),
    (2.0, 1e-6, 1),
    (5.0, 1e-6, 1),
    (10.0, 1e-6, 1),
    (5.0, 1e-6, 100),
    (10.0, 1e-6, 100),
]


@pytest.mark.parametrize(("epsilon", "delta", "sensitivity"), EXACT_RANGE)
def test_calibrated_sigma_is_valid_and_minimal(epsilon, delta, sensitivity) -> None:
    sigma = calibrate_sigma(epsilon, delta, sensitivity)
    assert reference_delta(sigma**2, epsilon, sensitivity) <= delta
    # Minimal: 1e-5 less noise already breaks the guarantee (the bisection stops at 1e-6).
    smaller = sigma * (1 - 1e-5)
    assert reference_delta(smaller**2, epsilon, sensitivity) > delta
    # The sampled σ² is rounded up, so the mechanism actually used is valid too.
    mechanism = DiscreteGaussian.calibrated(sensitivity, epsilon, delta)
    assert mechanism.sigma2 >= Fraction(sigma) ** 2
    assert reference_delta(float(mechanism.sigma2), epsilon, sensitivity) <= delta


@pytest.mark.parametrize(("epsilon", "delta", "sensitivity"), EXACT_RANGE)
def test_the_curve_matches_the_hockey_stick_divergence(epsilon, delta, sensitivity) -> None:
    # CKS20 Theorem 7 as implemented, against the definition, at and around the calibration.
    sigma = calibrate_sigma(epsilon, delta, sensitivity)
    for s in (0.8 * sigma, sigma, 1.2 * sigma):
        expected = reference_delta(s * s, epsilon, sensitivity)
        assert discrete_gaussian_delta(s * s, epsilon, sensitivity) == pytest.approx(
            expected, rel=1e-9, abs=1e-300
        )


@pytest.mark.parametrize(
    ("epsilon", "delta", "sensitivity"), [(1.0, 1e-6, 1000), (0.5, 1e-6, 1025), (0.3, 1e-8, 2000)]
)
def test_calibration_above_the_summed_range_errs_on_the_safe_side(
    epsilon, delta, sensitivity
) -> None:
    # σ > 4096: the tails are bounded rather than summed. Still valid on the exact curve,
    # and wasteful by at most 1.5/Δ relative in σ (the bound's extra head term f(m) is
    # about Δ⁻¹ of the tail; measured: 0.99/Δ, 0.97/Δ and 0.99/Δ for these three).
    sigma = calibrate_sigma(epsilon, delta, sensitivity)
    assert sigma > 4096
    assert reference_delta(sigma**2, epsilon, sensitivity) <= delta
    smaller = sigma * (1 - 1.5 / sensitivity)
    assert reference_delta(smaller**2, epsilon, sensitivity) > delta


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 0.99])
@pytest.mark.parametrize(("delta", "sensitivity"), [(1e-5, 1), (1e-10, 1), (1e-6, 10)])
def test_calibration_beats_the_classical_formula_below_one(epsilon, delta, sensitivity) -> None:
    sigma = calibrate_sigma(epsilon, delta, sensitivity)
    assert sigma < classical_sigma(epsilon, delta, sensitivity)


def test_calibration_is_valid_where_the_classical_formula_is_not() -> None:
    # The classical σ is only proved for ε < 1, and for large ε it really fails: with
    # Δ = 100 (fine enough that the lattice does not help) its δ exceeds the target.
    delta, sensitivity = 1e-6, 100
    for epsilon in (10.0, 20.0):
        classical = classical_sigma(epsilon, delta, sensitivity)
        assert reference_delta(classical**2, epsilon, sensitivity) > delta
        assert continuous_delta(classical, epsilon, sensitivity) > delta
        sigma = calibrate_sigma(epsilon, delta, sensitivity)
        assert reference_delta(sigma**2, epsilon, sensitivity) <= delta
    # ... while at ε = 1, 5, 10 with Δ = 1 the calibration is valid (tested above) and
    # smaller than the classical one would be.
    for epsilon in (1.0, 5.0, 10.0):
        assert calibrate_sigma(epsilon, delta, 1) < classical_sigma(epsilon, delta, 1)


@pytest.mark.parametrize(
    ("epsilon", "delta", "sensitivity"),
    [(0.01, 1e-6, 1), (0.1, 1e-6, 10), (1.0, 1e-6, 100), (1.0, 1e-9, 1000), (0.5, 1e-6, 1025)],
)
def test_calibration_agrees_with_the_analytic_gaussian_for_large_sigma(
    epsilon, delta, sensitivity
) -> None:
    sigma = calibrate_sigma(epsilon, delta, sensitivity)
    assert sigma > 30  # where the lattice stops mattering
    # The continuous analytic σ, found here with scipy (independently of analytic_sigma).
    analytic = optimize.brentq(
        lambda s: continuous_delta(s, epsilon, sensitivity) - delta, 1e-3, 1e7, rtol=1e-12
    )
    assert sigma == pytest.approx(analytic, rel=1e-2)
    assert analytic_sigma(epsilon, delta, sensitivity) == pytest.approx(analytic, rel=1e-6)


@pytest.mark.parametrize(
    ("sigma", "epsilon", "sensitivity"), [(4.0, 1.0, 1.0), (50.0, 0.1, 3.0), (1.0, 10.0, 2.0)]
)
def test_analytic_gaussian_delta_matches_scipy(sigma, epsilon, sensitivity) -> None:
    expected = continuous_delta(sigma, epsilon, sensitivity)
    assert analytic_gaussian_delta(sigma, epsilon, sensitivity) == pytest.approx(expected, 1e-9)


@pytest.mark.parametrize(
    ("epsilon", "delta", "sensitivity"),
    [(0.0, 1e-6, 1), (-1.0, 1e-6, 1), (1.0, 0.0, 1), (1.0, 1.0, 1), (1.0, 1e-6, 0)],
)
def test_calibration_rejects_invalid_targets(epsilon, delta, sensitivity) -> None:
    with pytest.raises(ValueError, match="need"):
        calibrate_sigma(epsilon, delta, sensitivity)


# --- plan_gaussian: noise on a coarser lattice -----------------------------------------------


def test_plan_without_shift_is_the_plain_calibration() -> None:
    plan = plan_gaussian(1, 1, Fraction(1), Fraction(1, 10**6))
    assert (plan.shift, plan.sensitivity, plan.coordinates) == (0, 1, 1)
    assert plan.mechanism.sigma2 == exact_sigma2(calibrate_sigma(1.0, 1e-6, 1))
    assert reference_delta(float(plan.mechanism.sigma2), 1.0, 1) <= 1e-6


@pytest.mark.parametrize(
    ("sensitivity", "epsilon", "delta"),
    [
        (2**35, Fraction(1, 2), Fraction(1, 10**6)),
        (2**36 + 12345, Fraction(1), Fraction(1, 10**9)),
        (3 * 2**20, Fraction(1, 10), Fraction(1, 10**6)),
        (10**6, Fraction(2), Fraction(1, 10**5)),
    ],
)
def test_plan_shift_rules(sensitivity: int, epsilon: Fraction, delta: Fraction) -> None:
    plan = plan_gaussian(sensitivity, 1, epsilon, delta)
    ratio = analytic_sigma(float(epsilon), float(delta), 1.0)  # σ/Δ of the continuous curve
    s = plan.shift
    assert s > 0
    # The rounded aggregate moves by at most ceil(Δ / 2**s) noise units; one more is added.
    assert plan.sensitivity == -(-sensitivity // 2**s) + 1
    assert plan.sensitivity - 1 >= MIN_SHIFTED_SENSITIVITY
    # The smallest shift that brings σ down to the target (or the coarsest one allowed) ...
    assert ratio * sensitivity / 2**s <= SIGMA_TARGET or sensitivity >> (s + 1) < 64
    assert ratio * sensitivity / 2 ** (s - 1) > SIGMA_TARGET
    # ... and the noise is calibrated for the inflated sensitivity: valid on the exact curve.
    sigma2 = float(plan.mechanism.sigma2)
    assert math.sqrt(sigma2) <= SIGMA_TARGET * 1.01
    assert reference_delta(sigma2, float(epsilon), plan.sensitivity) <= float(delta)


def test_plan_never_coarser_than_sixty_four_units_per_row() -> None:
    # A tiny ε wants σ far beyond the target, but the lattice stops coarsening once a row
    # spans fewer than 64 noise units (so the +1 unit costs under 1/64 of the noise).
    # With ε = 0.01 and δ = 1e-6, σ/Δ is about 306: Δ = 4096 units would need a shift of
    # 7 to reach σ <= 2**14, but at a shift of 6 a row spans 64 units and coarsening stops.
    plan = plan_gaussian(4096, 1, Fraction(1, 100), Fraction(1, 10**6))
    assert plan.shift == 6
    assert plan.sensitivity == 4096 // 64 + 1
    assert math.sqrt(plan.mechanism.sigma2) > SIGMA_TARGET
    assert reference_delta(float(plan.mechanism.sigma2), 1e-2, plan.sensitivity) <= 1e-6


def test_shifted_rounding_never_moves_more_than_the_planned_sensitivity() -> None:
    # Through the Part the release pipeline builds: round(a) and round(b) for |a - b| <= Δ
    # differ by at most the planned sensitivity, in noise units (exhaustive near the
    # rounding boundaries, random elsewhere).
    part = sum_part(
        "x", (0.0, 2.0), Fraction(1, 2), noise=NoiseChoice(gaussian=True, delta=Fraction(1, 10**6))
    )  # fmt: skip
    assert part.shift > 0
    assert part.lattice is not None
    delta = part.lattice.sensitivity
    step = 1 << part.shift
    rng = np.random.default_rng(7)
    a = np.concatenate(
        [rng.integers(-(2**40), 2**40, 100_000), np.arange(-3 * step, 3 * step, step // 8)]
    )
    for d in (delta, -delta, delta - 1, step // 2, rng.integers(-delta, delta + 1)):
        moved = np.abs(part.round(a + d) - part.round(a))
        assert moved.max() <= part.measurement.sensitivity
    # Rounding is to the nearest multiple of 2**shift: error at most half a noise unit.
    assert np.max(np.abs(part.round(a) * step - a)) <= step // 2


@pytest.mark.parametrize("coordinates", [2, 5, 20])
def test_plan_for_several_coordinates_goes_through_zcdp(coordinates: int) -> None:
    epsilon, delta = 0.5, 1e-6
    plan = plan_gaussian(3, coordinates, Fraction(1, 2), Fraction(1, 10**6))
    assert (plan.shift, plan.sensitivity, plan.coordinates) == (0, 3, coordinates)
    sigma2 = float(plan.mechanism.sigma2)
    rho = coordinates * 9 / (2 * sigma2)
    assert zcdp_to_epsilon(rho, delta) <= epsilon
    # Minimal up to the rounding of σ² (2**-19 relative): 1e-4 less noise breaks it.
    assert zcdp_to_epsilon(rho / (1 - 1e-4) ** 2, delta) > epsilon
    sigma = calibrate_sigma_zcdp(epsilon, delta, coordinates * 9)
    assert sigma2 >= sigma**2


# --- zCDP to (ε, δ) --------------------------------------------------------------------------


def cks_epsilon(rho: float, delta: float) -> float:
    """CKS20 Corollary 13 minimised here over α > 1 on a dense grid, then refined."""

    def eps(log_a1: float) -> float:
        alpha = 1 + math.exp(log_a1)
        return alpha * rho + (
            math.log(1 / delta) + alpha * math.log(1 - 1 / alpha) - math.log(alpha - 1)
        ) / (alpha - 1)

    grid = np.linspace(-25, 25, 20_001)
    best = grid[int(np.argmin([eps(x) for x in grid]))]
    result = optimize.minimize_scalar(
        eps, bounds=(best - 0.01, best + 0.01), method="bounded", options={"xatol": 1e-12}
    )
    return min(float(result.fun), eps(best))


def gaussian_epsilon(rho: float, delta: float) -> float:
    """ε of the continuous Gaussian with ρ = 1/(2σ²) on its exact (Balle & Wang) curve."""
    sigma = 1 / math.sqrt(2 * rho)
    return optimize.brentq(lambda e: continuous_delta(sigma, e) - delta, 1e-12, 1e4, xtol=1e-14)


RHOS = [1e-6, 1e-4, 0.005, 0.02, 0.125, 0.5, 2.0, 10.0]


@pytest.mark.parametrize("rho", RHOS)
@pytest.mark.parametrize("delta", [1e-5, 1e-6, 1e-10])
def test_zcdp_conversion_between_its_bounds(rho: float, delta: float) -> None:
    epsilon = zcdp_to_epsilon(rho, delta)
    # Never worse than Bun & Steinke's simple bound (up to its documented 1e-12 round-up).
    assert epsilon <= (rho + 2 * math.sqrt(rho * math.log(1 / delta))) * (1 + 1e-11)
    # Never better than possible: the Gaussian with σ² = 1/(2ρ) is ρ-zCDP and no tighter
    # (its Rényi divergences are exactly αρ), so a conversion valid for every ρ-zCDP
    # mechanism must give at least the ε of that Gaussian's exact curve.
    assert epsilon >= gaussian_epsilon(rho, delta)
    # And it is the optimum of CKS20 Cor. 13 over α (or the simple bound when smaller).
    expected = min(cks_epsilon(rho, delta), rho + 2 * math.sqrt(rho * math.log(1 / delta)))
    assert epsilon == pytest.approx(expected, rel=1e-9)


def test_zcdp_conversion_is_monotone() -> None:
    values = [zcdp_to_epsilon(rho, 1e-6) for rho in RHOS]
    assert values == sorted(values)
    assert zcdp_to_epsilon(0.5, 1e-9) > zcdp_to_epsilon(0.5, 1e-6) > zcdp_to_epsilon(0.5, 1e-3)


def test_zcdp_conversion_edge_cases() -> None:
    assert zcdp_to_epsilon(0.0, 1e-6) == 0.0
    for delta in (0.0, 1.0, -1e-6):
        with pytest.raises(ValueError, match="delta"):
            zcdp_to_epsilon(0.5, delta)


def test_discrete_gaussian_log_tail_reference_is_sane() -> None:
    # Guard for the references above: the hockey stick of a shift by 0 is 0, and for a huge
    # σ the discrete curve approaches the continuous one.
    assert reference_delta(4.0, 0.5, 0) == 0.0
    assert reference_delta(1e6, 0.01, 100) == pytest.approx(
        continuous_delta(1e3, 0.01, 100.0), rel=1e-4
    )
