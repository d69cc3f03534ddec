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
from typing import Any

from pandas_dp.errors import DPTypeError, DPValueError

#: Smallest ε accepted anywhere: a smaller ε would need noise beyond the samplers' range and
#: is of no practical use.
MIN_EPSILON = Fraction(1, 10**9)
#: Largest ε accepted anywhere: far beyond any meaningful guarantee, and it keeps every noise
#: computation inside float range.
MAX_EPSILON = Fraction(10**6)

_FIX = "pass a plain positive number such as 0.1"


def exact(value: Any, name: str) -> Fraction:
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
    return Fraction(str(value))


def parse_epsilon(value: Any, name: str = "epsilon") -> Fraction:
    """Validate an ε: a finite real number of at least :data:`MIN_EPSILON`."""
    eps = exact(value, name)
    if not MIN_EPSILON <= eps <= MAX_EPSILON:
        shown = f"{float(eps):g}" if eps < 10**300 else "a number beyond 1e300"
        raise DPValueError(f"{name} must lie in [1e-9, 1e6], got {shown}; {_FIX}")
    return eps


def parse_delta(value: Any, name: str = "delta") -> Fraction:
    """Validate a δ: a finite real number in ``[0, 1)``."""
    delta = exact(value, name)
    if not 0 <= delta < 1:
        raise DPValueError(f"{name} must satisfy 0 <= {name} < 1, got {float(delta)}")
    return delta


def _show(x: Fraction) -> str:
    return f"{float(x):.6g}"


@dataclass(frozen=True, order=False)
class Budget:
    """An exact (ε, δ) privacy budget.

    Parameters
    ----------
    epsilon : Fraction
        Non-negative ε (zero is allowed for spent and remaining amounts).
    delta : Fraction
        δ in ``[0, 1)``.

    Examples
    --------
    >>> b = Budget.of(1.0)
    >>> b - Budget.of(0.1) * 10
    Budget(epsilon=0, delta=0)
    """

    epsilon: Fraction
    delta: Fraction = Fraction(0)

    def __post_init__(self) -> None:
        for name in ("epsilon", "delta"):
            value = getattr(self, name)
            if not isinstance(value, Fraction):
                object.__setattr__(self, name, exact(value, name))
        if self.epsilon < 0:
            raise DPValueError(f"epsilon must be >= 0, got {_show(self.epsilon)}")
        if not 0 <= self.delta < 1:
            raise DPValueError(f"delta must satisfy 0 <= delta < 1, got {_show(self.delta)}")

    @classmethod
    def of(cls, epsilon: Any, delta: Any = 0) -> Budget:
        """Validate user input and build a total budget (ε >= 1e-9, 0 <= δ < 1)."""
        return cls(parse_epsilon(epsilon), parse_delta(delta))

    def __add__(self, other: Budget) -> Budget:
        return Budget(self.epsilon + other.epsilon, self.delta + other.delta)

    def __sub__(self, other: Budget) -> Budget:
        return Budget(
            max(self.epsilon - other.epsilon, Fraction(0)),
            max(self.delta - other.delta, Fraction(0)),
        )

    def __mul__(self, k: int) -> Budget:
        return Budget(self.epsilon * k, self.delta * k)

    def covers(self, other: Budget) -> bool:
        """Whether ``other`` fits inside this budget (exact comparison)."""
        return other.epsilon <= self.epsilon and other.delta <= self.delta

    @property
    def is_pure(self) -> bool:
        """True for a pure ε-DP budget (δ = 0)."""
        return self.delta == 0

    def __repr__(self) -> str:
        return f"Budget(epsilon={self.epsilon}, delta={self.delta})"

    def __str__(self) -> str:
        return f"ε={_show(self.epsilon)}, δ={_show(self.delta)}"
