"""A frame's column as float64: the one conversion every per-row engine computation starts from."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pandas as pd

from pandas_dp.engines.temporal import is_temporal, nanoseconds

F64 = npt.NDArray[np.float64]


def numeric_values(column: pd.Series) -> F64:
    """The column as float64 with NaN for missing values (bool becomes 0/1).

    Datetimes and timedeltas become nanoseconds (see :mod:`pandas_dp.engines.temporal`).
    """
    if is_temporal(column.dtype):
        return nanoseconds(column)
    if isinstance(column.dtype, np.dtype) and column.dtype.kind == "f":
        return np.asarray(column.to_numpy(), dtype=np.float64)
    return np.asarray(column.to_numpy(dtype=np.float64, na_value=np.nan))
