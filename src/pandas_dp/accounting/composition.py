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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from typing import ClassVar, Generic, Protocol, TypeVar

from pandas_dp.accounting.events import (
    Measurement,
    Release,
)
from pandas_dp.accounting.pld import (
    MAX_PLD_POINTS,
    ComposedLoss,
    composition_points,
    measurement_loss,
    too_large,
)
from pandas_dp.budget import AnyBudget, Budget, RhoBudget, zcdp_to_epsilon


class Accounting(StrEnum):
    """A session's composition rule, as users name it (``accounting="zcdp"``)."""

    BASIC = "basic"
    ADVANCED = "advanced"
    ZCDP = "zcdp"
    PLD = "pld"

    @property
    def takes_rho(self) -> bool:
        """Whether a ρ budget may be given with this rule (the default one, or zCDP's)."""
        return self in (Accounting.BASIC, Accounting.ZCDP)

    @property
    def trades_delta(self) -> bool:
        """Whether the rule trades a little δ for a smaller ε (so needs a budget's δ)."""
        return self is not Accounting.BASIC

    @property
    def extra(self) -> str | None:
        """The optional extra the rule needs installed (``pandas-dp[pld]``), if any."""
        return "pld" if self is Accounting.PLD else None


#: Names of the accountants a session can use.
ACCOUNTANTS = tuple(rule.value for rule in Accounting)


class Composition(Protocol):
    """How the costs of successive releases combine into one guarantee."""

    name: str
    #: Whether releases are priced in zCDP under this rule (a ρ budget, or zCDP's).
    in_zcdp: ClassVar[bool]

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
    in_zcdp: ClassVar[bool] = False

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
class _TightState:
    basic: Budget
    measurements: tuple[Measurement, ...] = ()
    pld: ComposedLoss | None = None  # the releases' composed PLD (PLD accounting only)


class _TightComposition:
    """Shared logic: keep the basic sum next to a tighter rule, report the better one."""

    name = "tight"
    in_zcdp: ClassVar[bool] = False

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
    in_zcdp = True

    def _epsilon(self, state: _TightState, delta: float) -> float:
        rho = float(sum((m.rho for m in state.measurements), Fraction(0)))
        return zcdp_to_epsilon(rho, delta) if rho > 0 else 0.0


class RhoComposition(_SummedComposition[RhoBudget]):
    """For a ρ-zCDP budget: the exact sum of ρ (no δ can be spent)."""

    name = "zcdp"
    kind = RhoBudget
    in_zcdp = True

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
    sensitivity, within a pointwise factor
    (:func:`~pandas_dp.accounting.pld.measurement_pld`). PLDs are rounded pessimistically, so
    ε is an upper bound.

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
            points = composition_points(composed.pld, one.pld)
            if points > MAX_PLD_POINTS:  # a convolution of this size is refused unbuilt
                raise too_large(f"the session's releases with {measurement.label}", points)
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


def composition_for(total: AnyBudget, accounting: str) -> Composition:
    """The composition rule of a session: ``accounting`` for its kind of budget."""
    if isinstance(total, RhoBudget):
        return RhoComposition()
    rules: dict[str, Callable[[Budget], Composition]] = {  # a rule is its name
        Accounting.BASIC: lambda _: BasicComposition(),
        Accounting.ADVANCED: AdvancedComposition,
        Accounting.ZCDP: ZCDPComposition,
        Accounting.PLD: PLDComposition,
    }
    return rules[accounting](total)
