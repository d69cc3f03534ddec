"""How the costs of successive releases combine: basic, advanced, zCDP and PLD accounting.

Each rule folds releases into an opaque *state*, one at a time and without mutating it, and
reads the current guarantee off a state as a :class:`~pandas_dp.budget.Budget`. The
accountant admits a release only if the guarantee *including* it fits the total.

For an (ε, δ) budget, the tight rules report ``spent.epsilon`` as the composed ε at the δ
left after explicit δ costs (private key selection), and ``spent.delta`` as those explicit
costs; the rest of δ is what the conversion uses. Every tight rule also keeps the basic sum
and reports whichever valid guarantee is smaller, so it never admits less than ``basic``.

Adaptivity: basic composition and zCDP (a Rényi filter, Feldman & Zrnic 2021) stay valid when
later releases are chosen after seeing earlier ones; so does advanced composition (Whitehouse
et al. 2023). PLD accounting is exact for a plan of releases fixed in advance, such as a
release spec; the docs say so.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Generic, Protocol, TypeVar

from pandas_dp.accounting.events import (
    BoundedRangeMeasurement,
    LaplaceMeasurement,
    Measurement,
    Release,
)
from pandas_dp.budget import AnyBudget, Budget, RhoBudget, zcdp_to_epsilon
from pandas_dp.errors import DPValueError

#: Names of the accountants a session can use.
ACCOUNTANTS = ("basic", "advanced", "zcdp", "pld")


class PrivacyLoss(Protocol):
    """What is used of a ``dp-accounting`` privacy loss distribution (it ships no types)."""

    def compose(self, other: PrivacyLoss) -> PrivacyLoss:
        """The distribution of both releases' privacy loss together."""

    def get_epsilon_for_delta(self, delta: float) -> float:
        """The smallest ε for which the releases are (ε, ``delta``)-DP."""


class Composition(Protocol):
    """How the costs of successive releases combine into one guarantee."""

    name: str

    def start(self) -> object:
        """The state before any release."""

    def add(self, state: object, release: Release) -> object:
        """A new state: ``state`` followed by ``release``."""

    def guarantee(self, state: object) -> AnyBudget:
        """The guarantee that holds for all releases folded into ``state``."""


B = TypeVar("B", Budget, RhoBudget)


class _SummedComposition(Generic[B]):
    """Shared logic of the exact sums: the state is the budget spent so far, ``kind``."""

    kind: type[B]

    def start(self) -> B:
        """Nothing spent."""
        return self.kind(Fraction(0))

    def add(self, state: object, release: Release) -> B:
        """Add the release's cost (see :meth:`_cost`)."""
        assert isinstance(state, self.kind)
        return state + self._cost(release)

    def _cost(self, release: Release) -> B:
        raise NotImplementedError

    def guarantee(self, state: object) -> B:
        """The summed budget itself."""
        assert isinstance(state, self.kind)
        return state


class BasicComposition(_SummedComposition[Budget]):
    """Sequential composition: ε and δ of successive releases add up (Dwork et al. 2006)."""

    name = "basic"
    kind = Budget

    def _cost(self, release: Release) -> Budget:
        """The release's (ε, δ)."""
        return release.cost


def _round_up(x: float) -> Fraction:
    """An exact upper bound of a float guarantee (one part in 10**12 of slack)."""
    return Fraction(x * (1 + 1e-12)) if math.isfinite(x) else Fraction(10**9)


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


@dataclass(frozen=True)
class _TightState:
    basic: Budget
    measurements: tuple[Measurement, ...] = ()
    pld: ComposedLoss | None = None  # the releases' composed PLD (PLD accounting only)


class _TightComposition:
    """Shared logic: keep the basic sum next to a tighter rule, report the better one."""

    name = "tight"

    def __init__(self, total: Budget) -> None:
        self.total = total

    def start(self) -> _TightState:
        """Nothing spent."""
        return _TightState(Budget(Fraction(0)))

    def add(self, state: object, release: Release) -> _TightState:
        """Add the release to the basic sum and to the measurements the tight rule reads."""
        assert isinstance(state, _TightState)
        return _TightState(
            state.basic + release.cost,
            state.measurements + release.measurements,
            self._fold(state.pld, release.measurements),
        )

    def _fold(
        self, pld: ComposedLoss | None, measurements: Sequence[Measurement]
    ) -> ComposedLoss | None:
        return None

    def _epsilon(self, state: _TightState, delta: float) -> float:
        raise NotImplementedError

    def guarantee(self, state: object) -> Budget:
        """The tight rule's (ε, δ), or the basic sum when its δ fits and its ε is no larger."""
        assert isinstance(state, _TightState)
        explicit = sum((m.extra_delta for m in state.measurements), Fraction(0))
        room = float(self.total.delta - explicit)
        epsilon = _round_up(self._epsilon(state, room)) if room > 0 else Fraction(10**9)
        tight = Budget(epsilon, explicit)
        basic = state.basic
        if basic.delta <= self.total.delta and basic.epsilon <= tight.epsilon:
            return basic
        return tight


class AdvancedComposition(_TightComposition):
    """Advanced composition of the pure ε-DP releases (Dwork, Rothblum & Vadhan 2010).

    With pure costs ``ε_i`` and conversion slack ``δ'``, the composition is
    ``(Σ ε_i tanh(ε_i/2) + sqrt(2 ln(1/δ') Σ ε_i²), δ')``-DP: the privacy loss of step
    ``i`` lies in ``[-ε_i, ε_i]`` with mean at most ``ε_i tanh(ε_i/2)``, and Azuma's
    inequality bounds the sum (the heterogeneous form of Kairouz, Oh & Viswanath 2015).
    Gaussian releases are added with their nominal (ε, δ). It beats basic composition for
    many small releases (the docs' table gives the counts).
    """

    name = "advanced"

    def _epsilon(self, state: _TightState, delta: float) -> float:
        pure = [float(e) for m in state.measurements if (e := m.pure_epsilon) is not None]
        other = sum(float(m.epsilon) for m in state.measurements if m.pure_epsilon is None)
        other_delta = sum(float(m.delta) for m in state.measurements)
        slack = delta - other_delta
        if slack <= 0:
            return math.inf
        drift = sum(e * math.tanh(e / 2) for e in pure)
        spread = math.sqrt(2 * math.log(1 / slack) * sum(e * e for e in pure))
        return other + min(sum(pure), drift + spread)


class ZCDPComposition(_TightComposition):
    """zCDP composition (Bun & Steinke 2016): ρ adds up, then converts to (ε, δ).

    Laplace releases count as ``ε²/2``, discrete Gaussian ones as ``coordinates Δ²/(2σ²)``;
    the conversion is the tight one of Canonne, Kamath & Steinke (2020, Cor. 13).
    """

    name = "zcdp"

    def _epsilon(self, state: _TightState, delta: float) -> float:
        rho = float(sum((m.rho for m in state.measurements), Fraction(0)))
        return zcdp_to_epsilon(rho, delta) if rho > 0 else 0.0


class RhoComposition(_SummedComposition[RhoBudget]):
    """For a ρ-zCDP budget: the exact sum of ρ (no δ can be spent)."""

    name = "zcdp"
    kind = RhoBudget

    def _cost(self, release: Release) -> RhoBudget:
        """The release's exact ρ (the accountant refuses explicit δ beforehand)."""
        return RhoBudget(sum((m.rho for m in release.measurements), Fraction(0)))


class PLDComposition(_TightComposition):
    """Privacy-loss-distribution accounting through Google's ``dp-accounting`` package.

    Discrete Laplace noise with a sensitivity of at most 1,024 noise units uses its exact
    PLD; above that (lattice sums) it uses the PLD of a generic ε-DP mechanism, which
    dominates it. Discrete Gaussian noise on a few coordinates with a small σ uses its exact
    PLD, self-composed per coordinate; otherwise (many coordinates, or a σ whose exact PLD
    would enumerate too many points) the measurement is *one* Gaussian PLD of its L2
    sensitivity, within a pointwise factor (:func:`measurement_pld`). PLDs are rounded
    pessimistically, so ε is an upper bound.

    Every PLD's size is bounded from public parameters before it is built, and so is the
    composition's: a release whose PLD would exceed :data:`MAX_PLD_POINTS` points is refused
    with a :class:`~pandas_dp.errors.DPValueError` before anything is charged (zCDP
    accounting prices it in constant time).
    """

    name = "pld"

    def _fold(
        self, pld: ComposedLoss | None, measurements: Sequence[Measurement]
    ) -> ComposedLoss | None:
        composed = pld
        for measurement in measurements:
            one = measurement_loss(measurement)
            if composed is None:
                composed = one
                continue
            points = _composition_points(composed.pld, one.pld)
            if points > MAX_PLD_POINTS:  # a convolution of this size is refused unbuilt
                raise _too_large(f"the session's releases with {measurement.label}", points)
            joined = composed.pld.compose(one.pld)
            composed = ComposedLoss(joined, composed.log_ratio + one.log_ratio)
        return composed

    def _epsilon(self, state: _TightState, delta: float) -> float:
        if state.pld is None:
            return 0.0
        ratio = state.pld.log_ratio
        with warnings.catch_warnings():  # an overflow in dp-accounting means ε = inf: refused
            warnings.simplefilter("ignore", RuntimeWarning)
            epsilon = float(state.pld.pld.get_epsilon_for_delta(delta * math.exp(-ratio)))
        return epsilon + 2 * ratio if math.isfinite(epsilon) else math.inf


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


def _composition_points(first: PrivacyLoss, second: PrivacyLoss) -> int:
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


def _too_large(what: str, points: float) -> DPValueError:
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
            raise _too_large(measurement.label, points)
        one = pld.from_gaussian_mechanism(
            sigma, sensitivity=l2, value_discretization_interval=_DISCRETIZATION
        )
        # The nonzero coordinates of an integer shift of squared L2 norm at most c Δ² number
        # at most c Δ²; each contributes its factor (1 + β)/(1 - β).
        log_ratio = coordinates * sensitivity**2 * _smoothing_ratio(smoothing)
        return ComposedLoss(one, log_ratio)
    points = _points(measurement)
    if points > MAX_PLD_POINTS:
        raise _too_large(measurement.label, points)
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
        raise _too_large(measurement.label, points)
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


def composition_for(total: AnyBudget, accounting: str) -> Composition:
    """The composition rule of a session: ``accounting`` for its kind of budget."""
    if isinstance(total, RhoBudget):
        return RhoComposition()
    rules: dict[str, type[_TightComposition]] = {
        "advanced": AdvancedComposition,
        "zcdp": ZCDPComposition,
        "pld": PLDComposition,
    }
    if accounting == "basic":
        return BasicComposition()
    return rules[accounting](total)
