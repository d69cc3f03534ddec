"""The error of a mean or a spread before it is released, at a planning row count.

A mean's or a spread's error depends on its count and on where the data lie within the
bounds, both private: a preview states it for a public planning count ``expected_rows``
(and, for means, an optional planning mean), as the largest half-width over every data the
bounds allow. The same rule serves previews, ``epsilon_for`` and release files' plans.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pandas_dp.mechanisms.accuracy import ratio_interval
from pandas_dp.planning.statistics.base import F64, Inputs

#: Planning positions per axis of the spread's grid (means and variances in the bounds).
SPREAD_GRID = 65


def mean_halfwidth(
    reach: float, a: float, b: float, n: float, position: float | None = None
) -> float:
    """Half-width of a mean's released interval at count ``n``.

    ``a`` and ``b`` are the half-widths of the centred sum and of the count (each at half
    the error probability), ``reach`` half the bounds' width, ``position`` the planning mean
    relative to the centre (None: the largest over every mean in the bounds).

    Notes
    -----
    With the noise at its interval edges the half-width is piecewise linear in the mean's
    position ``p``: it bends only where a corner ``(p n ± a) / N'`` of
    :func:`~pandas_dp.mechanisms.accuracy.ratio_interval` meets a bound, where two corners
    cross (``p = ±a / n``), and at the ends. Its maximum is at one of those points, so
    checking them all is exact.
    """
    if position is None:
        kinks = [
            (edge * denominator - shift) / n
            for edge in (-reach, reach)
            for shift in (-a, a)
            for denominator in (max(n - b, 1.0), max(n + b, 1.0))
        ]
        candidates = np.asarray([-reach, 0.0, reach, -a / n, a / n, *kinks], dtype=np.float64)
        positions = candidates[np.abs(candidates) <= reach]
    else:
        positions = np.full(1, min(max(position, -reach), reach))
    lower, upper = ratio_interval(
        positions * n, a, np.full(len(positions), float(n)), b, (-reach, reach)
    )
    return float(np.max(np.maximum(upper - positions, positions - lower)))


@dataclass(frozen=True)
class PlanningInputs(Inputs):
    """Inputs whose "noisy" values are exact planning moments, already in column units."""

    def real(self, position: int) -> F64:
        """The planning value of measurement ``position``."""
        return np.asarray(self.noisy[position], dtype=np.float64)


def spread_moments(inputs: Inputs, n: float) -> PlanningInputs:
    """A spread's three moments (centred squares, centred sum, count) over a grid of data.

    Mean positions ``p`` in ``[-reach, reach]`` and population variances ``v`` in
    ``[0, reach² - p²]`` (:data:`SPREAD_GRID` of each): every data the bounds allow has its
    moments ``n (v + p²)``, ``n p`` and ``n`` near one of these.
    """
    reach = inputs.reach
    positions = np.repeat(np.linspace(-reach, reach, SPREAD_GRID), SPREAD_GRID)
    variances = np.tile(np.linspace(0.0, 1.0, SPREAD_GRID), SPREAD_GRID) * (reach**2 - positions**2)
    moments = (n * (variances + positions**2), n * positions, np.full(len(positions), n))
    return PlanningInputs(inputs.parts, inputs.bounds, moments)  # type: ignore[arg-type]
