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
needs to be inflated by a rounding margin.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

#: The granularity is chosen so that a row contributes about ``2**ROW_BITS`` lattice units.
ROW_BITS = 30
#: Hard cap on a row's contribution (rounding may add a unit or two to ``2**ROW_BITS``): an
#: int64 sum over fewer than ``MAX_EXACT_ROWS`` rows can then never overflow.
MAX_ROW_UNITS = 1 << (ROW_BITS + 1)
MAX_EXACT_ROWS = 1 << 32
#: Uncentred lattice values stay below ``2**61`` so that they fit int64 before centring.
_RAW_BITS = 61


@dataclass(frozen=True)
class Lattice:
    """How one column's values become integers.

    Each value ``x`` becomes ``q = rint(clip(x, lower, upper) / g) - offset`` with
    ``g = 2**exponent``; :attr:`lower` and :attr:`upper` are the clipping bounds already
    expressed in lattice units (``rint(L / g)`` and ``rint(U / g)``).

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
        if self.lower > self.upper:
            raise ValueError(f"lattice bounds out of order: {self.lower} > {self.upper}")
        if self.sensitivity > MAX_ROW_UNITS:
            raise ValueError(f"rows may contribute {self.sensitivity} > 2**31 lattice units")

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


def sum_lattice(lower: float, upper: float, epsilon: Fraction, *, centered: bool) -> Lattice:
    """Choose the lattice for a clipped sum from public parameters only.

    Parameters
    ----------
    lower, upper : float
        Validated clipping bounds, ``lower < upper``.
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
    scale, the granularity is the smallest power of two ``g`` with
    ``g >= max(Δ, b) / 2**30``: a row's rounding error is at most ``g/2``, i.e. at most
    ``2**-31`` of the noise scale when ε <= 1, and the sensitivity in lattice units is about
    ``2**30`` (never above ``2**31``). ``g`` also keeps ``max(|L|, |U|) / g`` below
    ``2**61`` so that uncentred values fit int64.
    """
    middle = (lower + upper) / 2.0 if centered else 0.0
    reach = max(abs(lower - middle), abs(upper - middle))
    scale = reach / float(epsilon)
    magnitude = max(abs(lower), abs(upper))
    target = max(
        math.ldexp(reach, -ROW_BITS),
        math.ldexp(scale, -ROW_BITS),
        math.ldexp(magnitude, -_RAW_BITS),
    )
    exponent = _ceil_log2(target)
    q_lower = round(math.ldexp(lower, -exponent))
    q_upper = round(math.ldexp(upper, -exponent))
    offset = (q_lower + q_upper) // 2 if centered else 0
    lattice = Lattice(exponent, q_lower, q_upper, offset)
    if lattice.sensitivity == 0:
        raise ValueError(f"bounds ({lower}, {upper}) are too close to hold two lattice points")
    return lattice


def _ceil_log2(x: float) -> int:
    """Smallest integer ``k`` with ``2**k >= x`` for a positive finite float ``x``."""
    mantissa, exponent = math.frexp(x)  # x = mantissa * 2**exponent, 0.5 <= mantissa < 1
    return exponent - 1 if mantissa == 0.5 else exponent
