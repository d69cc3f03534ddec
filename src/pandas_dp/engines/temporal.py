"""Datetime and timedelta columns read as numbers: float64 nanoseconds (NaT as NaN).

Datetimes are instants (nanoseconds since 1970-01-01 UTC; a tz-aware column's values are
its UTC instants), timedeltas are lengths in nanoseconds. Each value is read in its column's
own unit and scaled in floating point, so no value can overflow however far from 1970 it
lies; float64 keeps nanoseconds since 1970 exact to 256 ns until 2043 (and to 1 µs within
±146 years), far finer than any lattice a release uses. The conversion is row-local and
total: it reads the dtype (public) and each value alone.
"""

from __future__ import annotations

from typing import cast

import numpy as np
import numpy.typing as npt
import pandas as pd

F64 = npt.NDArray[np.float64]

#: Nanoseconds per tick of the units pandas stores datetimes and timedeltas in.
NANOSECONDS = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1.0}


def is_temporal(dtype: object) -> bool:
    """Whether ``dtype`` holds datetimes or timedeltas (NumPy, tz-aware or Arrow-backed)."""
    return getattr(dtype, "kind", "") in ("M", "m")


def unit_of(dtype: object) -> str:
    """The unit (``"s"``, ``"ms"``, ``"us"``, ``"ns"``) a temporal dtype stores ticks in."""
    if isinstance(dtype, pd.ArrowDtype):
        return str(dtype.pyarrow_dtype.unit)
    if isinstance(dtype, pd.DatetimeTZDtype):
        return str(dtype.unit)
    # What is left is a NumPy datetime64 or timedelta64 dtype (callers check is_temporal).
    return str(np.datetime_data(cast("np.dtype[np.datetime64 | np.timedelta64]", dtype))[0])


def nanoseconds(column: pd.Series) -> F64:
    """A datetime or timedelta column as float64 nanoseconds, NaN where missing."""
    dtype = column.dtype
    if isinstance(dtype, pd.ArrowDtype):
        missing: np.datetime64 | np.timedelta64 = (
            np.datetime64("NaT") if dtype.kind == "M" else np.timedelta64("NaT")
        )
        native = getattr(dtype, "numpy_dtype")  # noqa: B009 (missing from pandas-stubs)
        ticks = column.to_numpy(dtype=native, na_value=missing).view(np.int64)
    else:
        ticks = np.asarray(column.array.asi8, dtype=np.int64)  # UTC instants when tz-aware
    values = ticks.astype(np.float64) * NANOSECONDS.get(unit_of(dtype), 1.0)
    values[np.asarray(column.isna().to_numpy(), dtype=bool)] = np.nan
    return values
