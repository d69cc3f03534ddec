"""Exact privacy budgets.

Budgets are kept as :class:`fractions.Fraction`, read from the *decimal* text of the number
the user typed, so ``0.1`` is exactly one tenth and ten spends of ``0.1`` fill a budget of
``1.0`` exactly. No tolerance is ever applied; where a comparison is needed it is exact.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache
from typing import ClassVar, TypeVar

from pandas_dp.errors import DPTypeError, DPValueError

#: Smallest ε accepted anywhere: a smaller ε would need noise beyond the samplers' range and
#: is of no practical use.
MIN_EPSILON = Fraction(1, 10**9)
#: Largest ε accepted anywhere: far beyond any meaningful guarantee, and it keeps every noise
#: computation inside float range.
MAX_EPSILON = Fraction(10**6)

_FIX = "pass a plain positive number such as 0.1"


def exact(value: object, name: str) -> Fraction:
    """Convert a user-supplied real number to an exact :class:`~fractions.Fraction`.

    Floats are read through their shortest decimal representation (``str(0.1) == "0.1"``),
    so the number means what the user typed rather than its binary approximation.

    Raises
    ------
    DPTypeError
        For bools, strings, ``None`` and anything that is not a real number.
    DPValueError
        For NaN and infinities.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real | Decimal):
        raise DPTypeError(f"{name} must be a real number, got {type(value).__name__}; {_FIX}")
    if isinstance(value, Fraction):
        return value
    if isinstance(value, numbers.Integral):
        return Fraction(int(value))
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise DPValueError(f"{name} must be finite, got {value}; {_FIX}")
        return Fraction(value)
    as_float = float(value)
    if not math.isfinite(as_float):
        raise DPValueError(f"{name} must be finite, got {as_float}; {_FIX}")
    return _decimal(str(value))


@lru_cache(maxsize=256)
def _decimal(text: str) -> Fraction:
    """The exact value of a number's decimal text (cached: the same ε is typed at every call).

    A pure function of public text (budgets, bounds as typed); a Fraction is immutable.
    """
    return Fraction(text)


def parse_epsilon(value: object, name: str = "epsilon") -> Fraction:
    """Validate an ε: a finite real number of at least :data:`MIN_EPSILON`."""
    eps = exact(value, name)
    if not MIN_EPSILON <= eps <= MAX_EPSILON:
        shown = f"{float(eps):g}" if eps < 10**300 else "a number beyond 1e300"
        raise DPValueError(f"{name} must lie in [1e-9, 1e6], got {shown}; {_FIX}")
    return eps


def parse_delta(value: object, name: str = "delta") -> Fraction:
    """Validate a δ: a finite real number in ``[0, 1)``."""
    delta = exact(value, name)
    if not 0 <= delta < 1:
        raise DPValueError(f"{name} must satisfy 0 <= {name} < 1, got {float(delta)}")
    return delta


def _show(x: Fraction) -> str:
    return f"{float(x):.6g}"


def number_text(value: float | Fraction) -> str:
    """A cost or a parameter as people write it: ``0``, ``0.5``, ``1/3``, ``1e-06``.

    Exact fractions with a small denominator that no short decimal writes (thirds) stay
    fractions; everything else reads as up to 6 significant digits (large whole numbers with
    thousands separators), never ``0.000000e+00`` and never a raw ``p/q`` of a dyadic
    ``2**-40`` grid.

    Examples
    --------
    >>> [number_text(x) for x in (0.0, Fraction(1, 2), Fraction(1, 3), 1e-06, 1.2e6)]
    ['0', '0.5', '1/3', '1e-06', '1,200,000']
    >>> number_text(Fraction(77747212799, 549755813888))
    '0.141421'
    """
    if isinstance(value, Fraction):
        short = f"{float(value):.6g}"
        if value == 0 or Fraction(short) == value or value.denominator > 100:
            return short if value else "0"
        return f"{value.numerator}/{value.denominator}"
    number = float(value)
    if number != number:  # NaN
        return "NaN"
    if number == 0:
        return "0"
    if abs(number) >= 1e6 and number.is_integer() and abs(number) < 1e15:
        return f"{number:,.0f}"
    return f"{number:.6g}"


B = TypeVar("B")


def _same_kind(kind: type[B], other: object, operation: str) -> B:
    """``other`` if it is a ``kind``; budgets of different kinds never mix implicitly."""
    if not isinstance(other, kind):
        raise DPTypeError(
            f"cannot {operation} a {kind.__name__} and a {type(other).__name__}: an (ε, δ) "
            "budget and a ρ-zCDP budget measure different things. Convert explicitly (a "
            "ρ-zCDP guarantee implies (ε, δ)-DP, see zcdp_to_epsilon), or keep them apart"
        )
    return other


class _Amounts:
    """What both kinds of budget do alike, amount by amount: compare, show and print.

    ``_AMOUNTS`` names each amount (a field, in the constructor's order) and its symbol.
    """

    _AMOUNTS: ClassVar[tuple[tuple[str, str], ...]]

    def covers(self, other: AnyBudget) -> bool:
        """Whether ``other`` fits inside this budget (exact comparison)."""
        theirs = _same_kind(type(self), other, "compare")
        return all(getattr(theirs, name) <= getattr(self, name) for name, _ in self._AMOUNTS)

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)}" for name, _ in self._AMOUNTS)
        return f"{type(self).__name__}({shown})"

    def __str__(self) -> str:
        return ", ".join(f"{symbol}={_show(getattr(self, name))}" for name, symbol in self._AMOUNTS)


# repr=False: the amounts' own __repr__ (exact fractions), not the dataclass one.
@dataclass(frozen=True, order=False, repr=False)
class Budget(_Amounts):
    """An exact (ε, δ) privacy budget; pure ε-DP when δ = 0.

    Parameters
    ----------
    epsilon : Fraction
        Non-negative ε (zero is allowed for spent and remaining amounts).
    delta : Fraction
        δ in ``[0, 1)``.

    Notes
    -----
    A ρ-zCDP budget is a :class:`RhoBudget`, a different type: adding, subtracting or
    comparing the two raises :class:`~pandas_dp.DPTypeError` rather than silently dropping
    one of them. A pure budget (δ = 0) is the special case of (ε, δ) and composes with it.

    Examples
    --------
    >>> b = Budget.of(1.0)
    >>> b - Budget.of(0.1) * 10
    Budget(epsilon=0, delta=0)
    >>> Budget.of_rho(0.5)
    RhoBudget(rho=1/2)
    """

    epsilon: Fraction
    delta: Fraction = Fraction(0)
    _AMOUNTS = (("epsilon", "ε"), ("delta", "δ"))

    def __post_init__(self) -> None:
        for name in ("epsilon", "delta"):
            value = getattr(self, name)
            if not isinstance(value, Fraction):
                object.__setattr__(self, name, exact(value, name))
        # A Fraction is normalised with a positive denominator, so its sign and whether it is
        # below 1 are integer comparisons (cheap: budgets are built at every release).
        epsilon, delta = self.epsilon, self.delta
        if epsilon.numerator < 0:
            raise DPValueError(f"epsilon must be >= 0, got {_show(epsilon)}")
        if not 0 <= delta.numerator < delta.denominator:
            raise DPValueError(f"delta must satisfy 0 <= delta < 1, got {_show(delta)}")

    @classmethod
    def of(cls, epsilon: object, delta: object = 0) -> Budget:
        """Validate user input and build a total budget (ε >= 1e-9, 0 <= δ < 1)."""
        return cls(parse_epsilon(epsilon), parse_delta(delta))

    @staticmethod
    def of_rho(rho: object) -> RhoBudget:
        """Validate user input and build a total ρ-zCDP budget (``1e-9 <= ρ <= 1e6``)."""
        return RhoBudget(parse_epsilon(rho, "rho"))

    @property
    def rho(self) -> None:
        """An (ε, δ) budget has no ρ."""
        return None

    def __add__(self, other: AnyBudget) -> Budget:
        other = _same_kind(Budget, other, "add")
        return Budget(self.epsilon + other.epsilon, self.delta + other.delta)

    def __sub__(self, other: AnyBudget) -> Budget:
        other = _same_kind(Budget, other, "subtract")
        return Budget(
            max(self.epsilon - other.epsilon, Fraction(0)),
            max(self.delta - other.delta, Fraction(0)),
        )

    def __mul__(self, k: int) -> Budget:
        return Budget(self.epsilon * k, self.delta * k)

    @property
    def is_pure(self) -> bool:
        """True for a pure ε-DP budget (δ = 0)."""
        return self.delta == 0

    @property
    def is_zcdp(self) -> bool:
        """False: see :class:`RhoBudget`."""
        return False


@dataclass(frozen=True, order=False, repr=False)
class RhoBudget(_Amounts):
    """An exact ρ-zero-concentrated-DP budget (Bun & Steinke 2016).

    It has no ε or δ of its own (both read 0); mixing it with a :class:`Budget` raises
    :class:`~pandas_dp.DPTypeError`.

    Examples
    --------
    >>> RhoBudget.of(0.5) - RhoBudget.of(0.1) * 5
    RhoBudget(rho=0)
    """

    rho: Fraction
    _AMOUNTS = (("rho", "ρ"),)

    def __post_init__(self) -> None:
        value: object = self.rho
        if not isinstance(value, Fraction):
            object.__setattr__(self, "rho", exact(value, "rho"))
        if self.rho.numerator < 0:
            raise DPValueError(f"rho must be >= 0, got {_show(self.rho)}")

    @classmethod
    def of(cls, rho: object) -> RhoBudget:
        """Validate user input and build a total budget (``1e-9 <= ρ <= 1e6``)."""
        return cls(parse_epsilon(rho, "rho"))

    #: A ρ budget spends no ε or δ directly.
    epsilon = Fraction(0)
    delta = Fraction(0)

    def __add__(self, other: AnyBudget) -> RhoBudget:
        other = _same_kind(RhoBudget, other, "add")
        return RhoBudget(self.rho + other.rho)

    def __sub__(self, other: AnyBudget) -> RhoBudget:
        other = _same_kind(RhoBudget, other, "subtract")
        return RhoBudget(max(self.rho - other.rho, Fraction(0)))

    def __mul__(self, k: int) -> RhoBudget:
        return RhoBudget(self.rho * k)

    @property
    def is_pure(self) -> bool:
        """False: zCDP is not pure ε-DP."""
        return False

    @property
    def is_zcdp(self) -> bool:
        """True."""
        return True


#: Either kind of budget.
AnyBudget = Budget | RhoBudget


def epsilon_for_rho(rho: Fraction) -> Fraction:
    """The largest dyadic ``ε <= sqrt(2ρ)`` to 2**-40 (exact).

    A pure ε-DP measurement of this ε costs at most ``ε²/2 <= ρ`` in zCDP (Bun & Steinke
    2016, Prop. 1.4).
    """
    bits = 40
    return Fraction(math.isqrt((2 * rho.numerator << (2 * bits)) // rho.denominator), 1 << bits)


def zcdp_to_epsilon(rho: float, delta: float) -> float:
    """The smallest ε (up to float rounding, rounded up) such that ρ-zCDP gives (ε, δ)-DP.

    Uses the conversion of Canonne, Kamath & Steinke (2020, Corollary 13): for every
    ``α > 1``, ``ε = αρ + (ln(1/δ) + α ln(1 - 1/α) - ln(α - 1)) / (α - 1)``, minimised over
    ``α``, and never worse than Bun & Steinke's ``ρ + 2 sqrt(ρ ln(1/δ))``.
    """
    if rho <= 0:
        return 0.0
    if not 0 < delta < 1:
        raise ValueError(f"converting zCDP needs 0 < delta < 1, got {delta}")
    log_inv = math.log(1.0 / delta)

    def eps_at(log_alpha_minus_one: float) -> float:
        a1 = math.exp(log_alpha_minus_one)  # α - 1
        alpha = a1 + 1.0
        return alpha * rho + (log_inv + alpha * math.log1p(-1.0 / alpha) - math.log(a1)) / a1

    grid = [x / 8 for x in range(-160, 161)]  # α - 1 from e^-20 to e^20
    best = min(grid, key=eps_at)
    low, high = best - 0.125, best + 0.125
    for _ in range(80):  # golden-section refinement of a unimodal function
        m1, m2 = low + (high - low) * 0.382, low + (high - low) * 0.618
        low, high = (low, m2) if eps_at(m1) < eps_at(m2) else (m1, high)
    tight = eps_at((low + high) / 2)
    simple = rho + 2.0 * math.sqrt(rho * log_inv)
    return min(tight, simple) * (1 + 1e-12)
