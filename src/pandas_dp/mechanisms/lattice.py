"""Power-of-two lattices for releasing sums of real numbers with integer noise.

A float sum cannot be protected by adding float noise (Mironov 2012: the set of reachable
outputs reveals the input). pandas-dp never adds noise to a float. Instead each clipped value
is rounded to a multiple of a granularity ``g = 2**k`` that depends only on public
parameters (the bounds and ε), the rounded values are summed exactly as integers, and exact
integer noise is added. The release is ``g * (integer sum + integer noise)``: every output lies
on the lattice ``g·Z``, whatever the data.

Rounding each row to the lattice (rather than rounding the total) has two benefits: the
integer sum is exact and independent of row order (no float re-ordering attack, Casacuberta
et al. 2022), and the sensitivity is read off exactly from the rounded bounds, so nothing
needs to be inflated by a rounding margin. The price is a rounding error of at most ``g/2``
per row, which the lattice makes tiny (see :func:`sum_lattice`) and confidence intervals
include.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

#: The granularity is chosen so that a row contributes about ``2**ROW_BITS`` lattice units.
ROW_BITS = 36
#: Hard cap on a row's contribution (rounding may add a unit or two to ``2**ROW_BITS``).
MAX_ROW_UNITS = 1 << (ROW_BITS + 1)
#: Uncentred lattice values are at most ``2**RAW_BITS`` so that they fit int64 before centring.
RAW_BITS = 61
#: Confidence intervals of sums allow for per-row rounding of up to this many rows.
ROUNDING_ROWS = 1 << 32


@dataclass(frozen=True)
class Lattice:
    """How one column's values become integers.

    Each value ``x`` becomes ``q = rint(clip(x, L, U) / g) - offset`` with
    ``g = 2**exponent``; :attr:`lower` and :attr:`upper` are the clipping bounds already
    expressed in lattice units (``rint(L / g)`` and ``rint(U / g)``; both are exact, since
    ``L / g`` only shifts the binary exponent of ``L``).

    Attributes
    ----------
    exponent : int
        The granularity is ``2**exponent``.
    lower, upper : int
        The bounds in lattice units.
    offset : int
        Subtracted from every row: 0 for plain sums, the midpoint for centred sums.
    """

    exponent: int
    lower: int
    upper: int
    offset: int = 0

    def __post_init__(self) -> None:
        if not self.lower < self.upper:
            raise ValueError(f"lattice bounds need lower < upper: {self.lower}, {self.upper}")
        if self.sensitivity > MAX_ROW_UNITS or max(-self.lower, self.upper) > 1 << RAW_BITS:
            raise ValueError(f"lattice values out of range: {self}")

    @property
    def granularity(self) -> float:
        """The lattice step ``2**exponent`` as a float (exact)."""
        return math.ldexp(1.0, self.exponent)

    @property
    def sensitivity(self) -> int:
        """Largest change one row can make to the integer sum: ``max |q|``."""
        return max(abs(self.lower - self.offset), abs(self.upper - self.offset))

    def to_real(self, units: int) -> float:
        """Convert an integer number of lattice units to a real value (correctly rounded)."""
        return math.ldexp(float(units), self.exponent)

    def rounding_allowance(self, rows: int = ROUNDING_ROWS) -> float:
        """Worst total rounding error of ``rows`` rows, ``rows * g / 2``, in real units."""
        return math.ldexp(float(rows), self.exponent - 1)


def sum_lattice(lower: float, upper: float, epsilon: Fraction, *, centered: bool) -> Lattice:
    """Choose the lattice for a clipped sum from public parameters only.

    Parameters
    ----------
    lower, upper : float
        Validated clipping bounds, ``lower < upper`` and ``upper - lower`` at least
        ``2**-50 max(|lower|, |upper|)``.
    epsilon : Fraction
        The ε the sum will be released with.
    centered : bool
        Whether rows are centred at the midpoint of the bounds before summing.

    Returns
    -------
    Lattice

    Notes
    -----
    With ``Δ`` the largest (centred) contribution of one row and ``b = Δ/ε`` the Laplace
    scale, the granularity ``g`` is the smallest power of two with
    ``g >= max(Δ, b) / 2**36`` (so a row's rounding error ``g/2`` is below
    ``2**-36 max(Δ, b)``, and ``2**32`` rows together stay below ``max(Δ, b) / 16``), and
    with ``g >= max(|L|, |U|) / 2**61`` so that uncentred values fit int64. When ε is so
    small that this ``g`` would exceed a quarter of ``upper - lower``, ``g`` is capped there
    instead (the noise then dwarfs any rounding), so the bounds always stay apart.
    """
    return lattice_at(lower, upper, lattice_exponent(lower, upper, epsilon, centered), centered)


def lattice_exponent(lower: float, upper: float, epsilon: Fraction, centered: bool) -> int:
    """The exponent :func:`sum_lattice` chooses (see its Notes)."""
    low, high = Fraction(lower), Fraction(upper)  # exact: every float is a dyadic rational
    reach = (high - low) / 2 if centered else max(abs(low), abs(high))
    magnitude = max(abs(low), abs(high))
    exponent = _ceil_log2(max(reach, reach / epsilon) / 2**ROW_BITS)
    exponent = min(exponent, _floor_log2((high - low) / 4))
    return max(exponent, _ceil_log2(magnitude / 2**RAW_BITS))


def lattice_at(lower: float, upper: float, exponent: int, centered: bool) -> Lattice:
    """The lattice of step ``2**exponent`` for these bounds.

    Raises
    ------
    ValueError
        If a row would contribute more than ``MAX_ROW_UNITS`` units at this step.
    """
    step = Fraction(2) ** exponent
    q_lower = round(Fraction(lower) / step)  # half to even, like numpy's rint
    q_upper = round(Fraction(upper) / step)
    offset = (q_lower + q_upper) // 2 if centered else 0
    return Lattice(exponent, q_lower, q_upper, offset)


def _ceil_log2(x: Fraction) -> int:
    """Smallest integer ``k`` with ``2**k >= x`` for a positive rational ``x``."""
    k = x.numerator.bit_length() - x.denominator.bit_length()
    while Fraction(2) ** k < x:
        k += 1
    while Fraction(2) ** (k - 1) >= x:
        k -= 1
    return k


def _floor_log2(x: Fraction) -> int:
    """Largest integer ``k`` with ``2**k <= x`` for a positive rational ``x``."""
    k = _ceil_log2(x)
    return k if Fraction(2) ** k == x else k - 1
