"""The privacy-loss distribution (PLD) of one measurement, bounded before it is built.

:class:`~pandas_dp.accounting.composition.PLDComposition` composes these through Google's
``dp-accounting`` package (the ``pld`` extra): discrete Laplace noise by its exact PLD (or a
generic ε-DP one beyond 1,024 noise units), discrete Gaussian noise by its exact PLD on a few
coordinates or by one Gaussian PLD of its L2 sensitivity within a pointwise factor
(:func:`measurement_pld`), bounded-range choices as pure ε-DP ones. Every PLD's size is
estimated from public parameters first, and a PLD past :data:`MAX_PLD_POINTS` points is
refused before anything is charged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Protocol

from pandas_dp.accounting.events import BoundedRangeMeasurement, LaplaceMeasurement, Measurement
from pandas_dp.errors import DPValueError


class PrivacyLoss(Protocol):
    """What is used of a ``dp-accounting`` privacy loss distribution (it ships no types)."""

    def compose(self, other: PrivacyLoss) -> PrivacyLoss:
        """The distribution of both releases' privacy loss together."""

    def get_epsilon_for_delta(self, delta: float) -> float:
        """The smallest ε for which the releases are (ε, ``delta``)-DP."""


@dataclass(frozen=True)
class ComposedLoss:
    """The composed PLD of a session's releases, and how far the truth may exceed it.

    ``log_ratio`` is ``ln R``: the releases' true privacy-loss pair is within a factor ``R``
    of a pair this PLD dominates, pointwise (discrete Gaussian noise accounted through the
    continuous Gaussian, :func:`measurement_pld`). Their guarantee at δ is then
    ``(ε_pld(δ/R) + 2 ln R, δ)``; ``ln R`` is 0 when every PLD is exact.
    """

    pld: PrivacyLoss
    log_ratio: float = 0.0


_DISCRETIZATION = 1e-4

#: The most points a privacy-loss distribution (one measurement's, or the composition of a
#: session's) may have under PLD accounting: 2**21 points are 16 MiB of float64, and the FFT
#: that composes two such takes some 10 times that. A PLD's width in privacy-loss units is
#: about the measurement's ε range, so this admits ε ranges up to ~200 per PLD.
MAX_PLD_POINTS = 2**21

#: The exact discrete Gaussian PLD enumerates its whole support (about ``23.5 σ`` points, in
#: Python: ~0.5 s per 2·10^5); above this many (σ beyond ~2,700 noise units, where taking
#: ``b²`` off σ² changes ε by less than 1e-6 relative) it is accounted through the continuous
#: Gaussian.
_MAX_EXACT_SUPPORT = 2**16

#: ``b``: the discrete Gaussian of variance σ² is a post-processing of the continuous one of
#: variance ``σ² - b²``, up to a pointwise factor ``(1 + β)/(1 - β)`` per coordinate, with
#: ``β <= 2q/(1 - q)``, ``q = exp(-2π² b²)`` (see :func:`measurement_pld`). The smallest of
#: these (the least noise given up) whose factors over the measurement add at most
#: :data:`_RATIO_TARGET` to ε, and at most σ/2; ``b = 3`` gives ``β < 1e-76``.
_SMOOTHINGS = (1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0)
_RATIO_TARGET = 1e-10

#: The exact discrete Gaussian PLD self-composed once per coordinate is kept for a few
#: coordinates (tighter there); beyond, one PLD of the L2 sensitivity.
_MAX_EXACT_COORDINATES = 16

#: The Gaussian PLD's noise is truncated where its log-mass is -50 (dp-accounting's default);
#: its support then spans ``x`` within about 10.05 standard deviations (11 here, to be safe).
_GAUSSIAN_SPAN = 11.0


def _float_at_least(value: Fraction) -> float:
    """The float nearest ``value`` from above: a larger ε or Laplace parameter is safe."""
    nearest = float(value)
    return nearest if Fraction(nearest) >= value else math.nextafter(nearest, math.inf)


def _sqrt_at_least(square: Fraction) -> float:
    """A float whose square is at least ``square`` (a larger sensitivity is safe)."""
    root = math.sqrt(square)
    while Fraction(root) ** 2 < square:
        root = math.nextafter(root, math.inf)
    return root


def _sqrt_at_most(square: Fraction) -> float:
    """A float whose square is at most ``square`` (a smaller σ is safe)."""
    root = math.sqrt(square)
    while root > 0 and Fraction(root) ** 2 > square:
        root = math.nextafter(root, 0.0)
    return root


def pld_points(pld: PrivacyLoss) -> int:
    """How many grid points ``pld`` spans as a dense array (what composing it allocates)."""
    sizes = []
    for side in ("_pmf_remove", "_pmf_add"):
        pmf = getattr(pld, side)
        losses = getattr(pmf, "_loss_probs", None)
        sizes.append(max(losses) - min(losses) + 1 if losses else int(pmf.size))
    return max(sizes)


def composition_points(first: PrivacyLoss, second: PrivacyLoss) -> int:
    """What composing two PLDs allocates: dense arrays of their spans' sum.

    Unless both are sparse and small: dp-accounting then composes the few points pairwise.
    """
    largest = 1
    for side in ("_pmf_remove", "_pmf_add"):
        a, b = getattr(first, side), getattr(second, side)
        sparse = hasattr(a, "_loss_probs") and hasattr(b, "_loss_probs")
        if not (sparse and a.size * b.size <= 1000):  # dp-accounting's sparse limit
            largest = max(largest, pld_points(first) + pld_points(second))
    return largest


def too_large(what: str, points: float) -> DPValueError:
    """The refusal of a PLD past :data:`MAX_PLD_POINTS` points (public parameters only)."""
    return DPValueError(
        f"PLD accounting cannot price {what} in bounded memory: its privacy-loss "
        f"distribution would need about {points:.3g} points (at most {MAX_PLD_POINTS:,}). "
        "Nothing was charged. Protect the frame with accounting='zcdp' (which prices any "
        "release in constant time) or 'basic', or spend a smaller epsilon on this release"
    )


def _width_points(width: float) -> float:
    """Grid points of a PLD spanning ``width`` privacy-loss units (with a margin)."""
    return width / _DISCRETIZATION + 16


def _smoothing_ratio(smoothing: float) -> float:
    """``ln((1 + β)/(1 - β))`` for the smoothing ``b`` (an upper bound; β < 1 required)."""
    q = math.exp(-2 * math.pi**2 * smoothing**2)
    beta = 2 * q / (1 - q)
    return math.log1p(beta) - math.log1p(-beta)


def measurement_loss(measurement: Measurement) -> ComposedLoss:
    """:func:`measurement_pld` with its pointwise factor (``ln R`` = 0 when exact)."""
    from pandas_dp.optional import require

    pld = require("dp_accounting.pld.privacy_loss_distribution", "pld")
    if measurement.is_gaussian and not _exact_gaussian(measurement):
        assert measurement.sigma2 is not None
        coordinates, sensitivity = measurement.coordinates, measurement.sensitivity
        if sensitivity == 0:
            return ComposedLoss(pld.identity(value_discretization_interval=_DISCRETIZATION))
        smoothing = _smoothing(measurement)
        smoothing2 = Fraction(smoothing) ** 2
        sigma = _sqrt_at_most(measurement.sigma2 - smoothing2)
        l2 = _sqrt_at_least(Fraction(coordinates * sensitivity**2))
        ratio = l2 / sigma
        points = _width_points(2 * _GAUSSIAN_SPAN * ratio + ratio * ratio)
        if points > MAX_PLD_POINTS:
            raise too_large(measurement.label, points)
        one = pld.from_gaussian_mechanism(
            sigma, sensitivity=l2, value_discretization_interval=_DISCRETIZATION
        )
        # The nonzero coordinates of an integer shift of squared L2 norm at most c Δ² number
        # at most c Δ²; each contributes its factor (1 + β)/(1 - β).
        log_ratio = coordinates * sensitivity**2 * _smoothing_ratio(smoothing)
        return ComposedLoss(one, log_ratio)
    points = _points(measurement)
    if points > MAX_PLD_POINTS:
        raise too_large(measurement.label, points)
    return ComposedLoss(measurement_pld(measurement))


def _smoothing(measurement: Measurement) -> float:
    """``b`` for a Gaussian measurement (see :data:`_SMOOTHINGS`).

    Raises
    ------
    DPValueError
        If σ < 2 on several coordinates (a factor too large to be useful).
    """
    assert measurement.sigma2 is not None
    half_sigma = math.sqrt(float(measurement.sigma2)) / 2
    moved = measurement.coordinates * measurement.sensitivity**2
    usable = [b for b in _SMOOTHINGS if b <= half_sigma]
    if not usable:
        raise DPValueError(
            f"PLD accounting cannot price {measurement.label}: discrete Gaussian noise with "
            f"σ < 2 noise units on {measurement.coordinates} coordinates has no bounded "
            "privacy-loss distribution here. Nothing was charged. Protect the frame with "
            "accounting='zcdp' (exact for Gaussian noise), or spend a smaller epsilon"
        )
    for b in usable:
        if moved * _smoothing_ratio(b) <= _RATIO_TARGET:
            return b
    return usable[-1]


def _exact_gaussian(measurement: Measurement) -> bool:
    """Whether the exact discrete Gaussian PLD, self-composed per coordinate, is small."""
    assert measurement.sigma2 is not None
    coordinates = measurement.coordinates
    if coordinates > _MAX_EXACT_COORDINATES:
        return False
    sigma = math.sqrt(float(measurement.sigma2))
    support = 2 * (12 * sigma + measurement.sensitivity + 2) + 1
    return support <= _MAX_EXACT_SUPPORT and coordinates * _points(measurement) <= MAX_PLD_POINTS


def _points(measurement: Measurement) -> float:
    """An upper estimate of the points of :func:`measurement_pld` (public parameters only)."""
    if measurement.is_gaussian:
        assert measurement.sigma2 is not None
        sigma = math.sqrt(float(measurement.sigma2))
        s = measurement.sensitivity
        span = 12 * sigma + s + 2  # the support dp-accounting enumerates (mass 1e-30 outside)
        return _width_points(s * (2 * span + s) / float(measurement.sigma2))
    if isinstance(measurement, BoundedRangeMeasurement):
        return _width_points(2 * measurement.coordinates * float(measurement.choice_epsilon))
    epsilon = measurement.pure_epsilon
    assert epsilon is not None
    return _width_points(2 * float(epsilon))


def measurement_pld(measurement: Measurement) -> PrivacyLoss:
    """The privacy loss distribution of one measurement (an upper bound).

    Discrete Gaussian noise of variance σ² on ``c`` coordinates, each moved by at most
    ``Δ`` (L2 sensitivity ``sqrt(c) Δ``): for a few coordinates and a small σ, the exact
    discrete Gaussian PLD self-composed ``c`` times; otherwise *one* PLD, the continuous
    Gaussian PLD of sensitivity
    ``sqrt(c) Δ`` and standard deviation ``sqrt(σ² - b²)``. Why that is safe: draw
    ``Y ~ N(μ, σ² - b²)`` and then ``N ~ N_Z(Y, b²)`` (the discrete Gaussian centred at
    ``Y``). By Poisson summation ``Σ_m exp(-(m - y)²/(2b²))`` is ``sqrt(2π) b (1 ± β)`` for
    every ``y``, so ``P(N = n)`` is the density of ``N(μ, σ²)`` at ``n`` within
    ``[1/(1 + β), 1/(1 - β)]``, and the discrete Gaussian's pmf is the same density within
    ``[1/(1 + β), 1/(1 - β)]`` too (its normaliser, ``σ >= b``). A coordinate a unit does
    not move drops out of the pair; the others (at most ``c Δ²`` of them, integer shifts)
    are each within the factor ``r = (1 + β)/(1 - β)`` of a post-processing of the continuous
    Gaussian pair, whose hockey-stick divergence is that of one Gaussian shifted by the L2
    norm. Hence ``δ(ε) <= R δ_G(ε - 2 ln R)`` with ``R = r^(c Δ²)``, which
    :class:`PLDComposition` applies to the composition (:func:`measurement_loss` gives
    ``ln R``; ``b`` is chosen so that ``2 ln R <= 1e-10`` where σ allows). Without ``ln R``
    the PLD returned here is an upper bound up to that factor. One PLD replaces ``c``
    self-compositions:
    their cost grew with ``c`` (3·10^12 coordinates for a year of running totals), and their
    pessimistic rounding added up ``c`` times.

    Raises
    ------
    DPValueError
        If the PLD would exceed :data:`MAX_PLD_POINTS` points (estimated before it is built).
    """
    from pandas_dp.optional import require

    pld = require("dp_accounting.pld.privacy_loss_distribution", "pld")
    common = require("dp_accounting.pld.common", "pld")
    if measurement.is_gaussian:
        if not _exact_gaussian(measurement):
            loss = measurement_loss(measurement)
            return loss.pld
        assert measurement.sigma2 is not None
        sigma = _sqrt_at_most(measurement.sigma2)  # a float σ at most the exact one
        one = pld.from_discrete_gaussian_mechanism(
            sigma, sensitivity=measurement.sensitivity,
            value_discretization_interval=_DISCRETIZATION,
        )  # fmt: skip
        return one.self_compose(measurement.coordinates) if measurement.coordinates > 1 else one
    points = _points(measurement)
    if points > MAX_PLD_POINTS:
        raise too_large(measurement.label, points)
    if isinstance(measurement, BoundedRangeMeasurement):  # each choice is ε_c-DP (pure)
        choice = common.DifferentialPrivacyParameters(
            _float_at_least(measurement.choice_epsilon), 0.0
        )
        one = pld.from_privacy_parameters(choice, value_discretization_interval=_DISCRETIZATION)
        return one.self_compose(measurement.coordinates) if measurement.coordinates > 1 else one
    epsilon = measurement.pure_epsilon
    assert epsilon is not None
    if isinstance(measurement, LaplaceMeasurement) and measurement.sensitivity <= 1024:
        parameter = _float_at_least(1 / measurement.scale)
        return pld.from_discrete_laplace_mechanism(
            parameter, sensitivity=measurement.sensitivity,
            value_discretization_interval=_DISCRETIZATION,
        )  # fmt: skip
    params = common.DifferentialPrivacyParameters(_float_at_least(epsilon), 0.0)
    return pld.from_privacy_parameters(params, value_discretization_interval=_DISCRETIZATION)
