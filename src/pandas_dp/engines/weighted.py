"""Per-row contributions of weighted sums and counts (survey weights), as lattice integers.

See :class:`~pandas_dp.measures.aggregates.WeightedSum`. Every step is a function of one row and
public parameters: clip the weight, build the row's factor, multiply, scale by a power of two,
round, and clamp the integer to the measure's public range, so one row moves the exact
integer sum by at most ``max(|lower|, |upper|)`` units, whatever the values (NaN, ±inf,
1e308) and whatever float rounding does to the product.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pandas as pd

from pandas_dp.engines.codes import missing_mask
from pandas_dp.engines.columns import F64, numeric_values
from pandas_dp.measures.aggregates import WeightedSum

I64 = npt.NDArray[np.int64]


def _factors(frame: pd.DataFrame, measure: WeightedSum) -> F64 | float:
    """What each row's clipped weight multiplies: 1, presence of ``column``, or its value."""
    if measure.column is None:
        return 1.0
    if measure.value_bounds is None:
        return np.asarray(~missing_mask(frame[measure.column]), dtype=np.float64)
    lower, upper = measure.value_bounds
    values = np.clip(numeric_values(frame[measure.column]), lower, upper) - measure.centre
    missing = np.isnan(values)
    if missing.any():
        values[missing] = 0.0 if measure.fill is None else measure.fill - measure.centre
    return values


def weighted_units(frame: pd.DataFrame, measure: WeightedSum) -> I64:
    """``clip(rint(clip(w) · factor / 2**exponent), lower, upper)`` per row, as int64.

    A missing weight gives 0; ±inf weights land on the weight bounds.
    """
    with np.errstate(all="ignore"):  # nothing data-dependent may surface as a warning
        weights = np.clip(numeric_values(frame[measure.weights]), *measure.weight_bounds)
        units = weights * _factors(frame, measure)
        units *= math.ldexp(1.0, -measure.exponent)
        np.rint(units, out=units)
        units[np.isnan(units)] = 0.0
        np.clip(units, measure.lower, measure.upper, out=units)
        return units.astype(np.int64)
