"""The optimal partition-selection rule (Desfontaines, Voss, Gipson & Mandayam, PoPETs 2022).

When each privacy unit can add a key to the release, the best (ε, δ)-DP rule that keeps a key
with a probability depending only on the number ``n`` of units in it keeps it with

    π(0) = 0,   π(n) = min(e^ε π(n-1) + δ,  1 - e^-ε (1 - π(n-1) - δ),  1)

(their Theorem 1: each step is the largest value the two DP inequalities between neighbours
``n - 1`` and ``n`` allow). A unit that may touch ``Δ0`` keys gets ``(ε/Δ0, δ/Δ0)`` per key
(basic composition over the keys it touches; their Section 4). Under a cap of ``Δ∞`` rows per
unit and key, ``n`` is the row count divided by ``Δ∞`` and rounded down, which one unit moves
by at most one.

Probabilities are whole multiples of ``2**-53`` and the draw compares a uniform 53-bit integer
with them, so the realised probability is exactly the table's. The table is built in floats
with a margin, then every step is checked in exact rational arithmetic against a rational
lower bound of ``e^ε`` (and lowered by one unit where a check fails), so float rounding can
only make the rule keep less.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import numpy.typing as npt

#: Probabilities are integers in units of ``2**-53``.
ONE = 1 << 53
#: Units subtracted from every step before the exact check (the floats' own error).
_SLACK = 4
#: The longest table built (π reaches 1 after about ``ln(1/δ)/ε`` steps).
_MAX_LENGTH = 1_000_000


def keep_table(epsilon: Fraction, delta: Fraction) -> npt.NDArray[np.int64]:
    """``π(n)`` in units of ``2**-53`` for ``n = 0, 1, ...`` up to the first ``n`` at 1.

    ``epsilon`` and ``delta`` are the per-key budget (already divided by ``Δ0``).
    """
    if not (epsilon > 0 and 0 < delta < 1):
        raise ValueError(f"optimal selection needs ε > 0 and 0 < δ < 1, got {epsilon}, {delta}")
    grow = math.exp(float(epsilon))
    shrink = math.exp(-float(epsilon))
    exp_low = Fraction(grow) * (1 - Fraction(1, 1 << 50))  # a rational lower bound of e^ε
    d = float(delta)
    table = [0]
    while table[-1] < ONE:
        prev = table[-1] / ONE
        step = min(grow * prev + d, 1.0 - shrink * (1.0 - prev - d), 1.0)
        units = ONE if step >= 1.0 else math.floor(step * ONE) - _SLACK
        while units > table[-1] and not _allowed(table[-1], units, exp_low, delta):
            units -= 1
        if units <= table[-1] or len(table) > _MAX_LENGTH:
            raise ValueError(
                f"(ε={float(epsilon):.3g}, δ={float(delta):.3g}) per key is too small for the "
                "optimal selection rule; use a larger ε or δ, or selection='threshold'"
            )
        table.append(units)
    return np.asarray(table, dtype=np.int64)


def _allowed(before: int, after: int, exp_low: Fraction, delta: Fraction) -> bool:
    """The two DP inequalities between ``n - 1`` (``before``) and ``n`` (``after``), exactly.

    ``π(n) <= e^ε π(n-1) + δ`` and ``1 - π(n-1) <= e^ε (1 - π(n)) + δ``; the reverse ones hold
    because the table never decreases.
    """
    p0, p1 = Fraction(before, ONE), Fraction(after, ONE)
    return p1 <= exp_low * p0 + delta and 1 - p0 <= exp_low * (1 - p1) + delta


def keep(
    units: npt.NDArray[np.int64], table: npt.NDArray[np.int64], words: npt.NDArray[np.uint64]
) -> npt.NDArray[np.bool_]:
    """Keep each key with probability ``table[n]`` (``table[-1]`` beyond the table).

    ``units`` are the keys' ``n`` (non-negative), ``words`` one uniform 64-bit word per key
    from the random source; the top 53 bits are compared with the table's integer.
    """
    n = np.minimum(np.asarray(units, dtype=np.int64), len(table) - 1)
    uniform = (np.asarray(words, dtype=np.uint64) >> np.uint64(11)).astype(np.int64)
    return np.asarray(uniform < table[n], dtype=bool)


def first_at_least(table: npt.NDArray[np.int64], probability: float) -> int:
    """The smallest ``n`` kept with at least ``probability`` (for docs and previews)."""
    target = probability * ONE
    return int(np.argmax(table >= target)) if table[-1] >= target else len(table)
