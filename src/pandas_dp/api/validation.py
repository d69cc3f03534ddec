"""Checks of public arguments, made before any data is touched or any budget is charged.

Every message here may echo what the *user* passed (bounds, a column name) but never a
value read from the data.
"""

from __future__ import annotations

import difflib
import math
import numbers
from collections.abc import Callable, Hashable, Sequence

import numpy as np
import pandas as pd
from pandas._typing import DtypeObj
from pandas.api import types as ptypes

from pandas_dp.api.temporal import NUMBER, ValueKind, is_time_value
from pandas_dp.engines import Engine
from pandas_dp.engines.temporal import is_temporal
from pandas_dp.errors import DPKeyError, DPTypeError, DPValueError, holds_data, shown

#: Bounds must stay well inside float range so the lattice arithmetic stays exact.
MAX_BOUND = 1e150
MIN_SPAN = 1e-150

_BOUNDS_FIX = (
    "pass bounds=(lower, upper): public limits known without looking at the data "
    "(e.g. (0, 120) for an age). pandas-dp never infers bounds from the data."
)


def _real(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise DPTypeError(f"{what} must be a real number, got {type(value).__name__}")
    number = float(value)
    if not math.isfinite(number):
        raise DPValueError(f"{what} must be finite, got {number}")
    return number


def parse_bounds(bounds: object, name: str = "bounds") -> tuple[float, float]:
    """Validate ``(lower, upper)`` clipping bounds given as public input.

    Raises
    ------
    DPValueError
        If bounds are missing, not two numbers, NaN or infinite, reversed or equal, or
        beyond ``±1e150``.
    DPTypeError
        If a bound is not a real number (bools and strings are refused).
    """
    if bounds is None:
        raise DPValueError(f"{name} are required; {_BOUNDS_FIX}")
    if not isinstance(bounds, tuple | list | np.ndarray | pd.Series):
        raise DPTypeError(
            f"{name} must be a pair (lower, upper) as a tuple or list, got {type(bounds).__name__}"
        )
    if len(bounds) != 2:
        got = shown(bounds) if holds_data(bounds) else f"{len(bounds)} values"
        raise DPValueError(f"{name} must be a pair (lower, upper), got {got}")
    lower = _real(bounds[0], f"{name}[0] (lower)")
    upper = _real(bounds[1], f"{name}[1] (upper)")
    if not lower < upper:
        raise DPValueError(
            f"{name} must satisfy lower < upper, got ({lower:g}, {upper:g}); pandas would "
            "silently swap reversed bounds, pandas-dp refuses them"
        )
    magnitude = max(abs(lower), abs(upper))
    if magnitude > MAX_BOUND or upper - lower < max(MIN_SPAN, math.ldexp(magnitude, -50)):
        raise DPValueError(
            f"{name} ({lower:g}, {upper:g}) must lie within ±1e150 and be at least 1e-150 and "
            "2**-50 of their magnitude apart"
        )
    return lower, upper


def bounds_mapping(bounds: object) -> object:
    """A table of bounds (``priv.dp.bounds``'s result) as ``{column: (lower, upper)}``.

    Any DataFrame with ``lower`` and ``upper`` columns, indexed by column name, is read that
    way (released bounds are public); anything else is returned as it is.
    """
    if not isinstance(bounds, pd.DataFrame):
        return bounds
    if not {"lower", "upper"} <= set(bounds.columns):
        raise DPTypeError(
            "bounds given as a DataFrame need 'lower' and 'upper' columns, indexed by column "
            f"name (as priv.dp.bounds returns), got columns {list(bounds.columns)}"
        )
    lowers, uppers = bounds["lower"].tolist(), bounds["upper"].tolist()
    return {c: (lo, hi) for c, lo, hi in zip(bounds.index, lowers, uppers, strict=True)}


def parse_column_bounds(
    bounds: object, name: str, kind: ValueKind, column: Hashable
) -> tuple[float, float]:
    """:func:`parse_bounds` for a column of ``kind``: time bounds become nanoseconds.

    Bounds of the wrong family (numbers for a datetime column, timestamps for a number
    column) get a hint naming the right one.
    """
    pair = bounds if isinstance(bounds, tuple | list) and len(bounds) == 2 else None
    if not kind.temporal:
        if pair is not None and any(is_time_value(bound) for bound in pair):
            raise DPTypeError(
                f"{name} are datetimes or timedeltas but column {column!r} holds numbers; "
                "give numeric bounds, or convert the column first (pd.to_datetime on a copy)"
            )
        return parse_bounds(bounds, name)
    if pair is None:
        return parse_bounds(bounds, name)  # its message for a missing or malformed pair
    lower = kind.number(pair[0], f"{name}[0] (lower)", column)
    upper = kind.number(pair[1], f"{name}[1] (upper)", column)
    if not lower < upper:
        raise DPValueError(
            f"{name} must satisfy lower < upper, got ({pair[0]}, {pair[1]}); pandas-dp "
            "refuses reversed or equal bounds"
        )
    return parse_bounds((lower, upper), name)


def parse_fill(
    fillna: object, lower: float, upper: float, kind: ValueKind = NUMBER, column: Hashable = None
) -> float | None:
    """Validate a public imputation value for missing entries (``None``: skip them)."""
    if fillna is None:
        return None
    value = kind.number(fillna, "fillna", column) if kind.temporal else _real(fillna, "fillna")
    return min(max(value, lower), upper)


def check_column(
    engine: Engine, data: object, column: object, numeric: bool = True,
    known: Sequence[Hashable] = (), temporal: bool = False,
    dtype_of: Callable[[Hashable], DtypeObj] | None = None,
) -> Hashable:  # fmt: skip
    """Check that ``column`` exists once in ``data`` and (if ``numeric``) holds numbers or bools.

    With ``temporal``, datetimes and timedeltas are accepted too. Only the dtype is
    inspected, never the values: an ``object`` column is refused even if every value in it
    happens to be a number (or a timestamp). ``known`` are the column labels of the frame
    when it was protected (the owner's public structure), from which a misspelt name gets
    the closest suggestion; labels made later (by ``pivot``, say) may be data and are never
    shown. ``dtype_of`` reads one (checked) column's dtype, as a release's
    :meth:`~pandas_dp.api.release.types.Target.dtype` does once per target; by default the
    dtype is looked up among all the frame's dtypes.
    """
    if holds_data(column):
        raise DPTypeError(
            f"a column label is expected here, got {shown(column)}: name the column "
            "(priv.dp.sum('income', ...), not priv.dp.sum(priv['income'], ...)); the values "
            "of an array given here are never shown"
        )
    if isinstance(column, list):
        raise DPTypeError(
            f"one column is expected here, got a list {column!r}: sum, mean, median, var, std "
            "and quantile take a list of columns, and agg takes several statistics at once"
        )
    columns = engine.columns(data)
    # Column labels are not listed in the message: after pivot_table or T they can be values.
    if isinstance(columns, pd.MultiIndex) and not isinstance(column, tuple):
        raise DPKeyError(
            f"column {column!r} not found: the columns have {columns.nlevels} levels, so name "
            "a column by its full tuple label"
        )
    matches = [label for label in columns if _same_label(label, column)]
    if not matches:
        raise DPKeyError(f"column {column!r} not found in this frame{did_you_mean(column, known)}")
    if len(matches) > 1:
        raise DPValueError(f"column label {column!r} appears more than once; rename the copies")
    if not numeric:  # the dtype is read only to refuse non-numeric columns
        return column
    dtype = _dtype(engine, data, column, dtype_of)
    if not (is_summable(dtype) or (temporal and is_temporal(dtype))):
        raise DPTypeError(f"column {column!r} has dtype {dtype}; {_fix_for(dtype, temporal)}")
    return column


def _dtype(
    engine: Engine, data: object, column: Hashable, dtype_of: Callable[[Hashable], DtypeObj] | None
) -> DtypeObj:
    """The dtype of the one column labelled ``column`` (public metadata, no values read).

    ``dtype_of`` answers directly (one column, no Series of every dtype); a label it cannot
    look up (pandas' indexing and a dict's lookup disagree on a few mixed labels such as
    ``True`` for ``1``) falls back to the dict of all dtypes, which is what decides.
    """
    if dtype_of is not None:
        try:
            return dtype_of(column)
        except KeyError:
            pass
    return dict(engine.dtypes(data).items())[column]


def did_you_mean(name: Hashable, known: Sequence[Hashable]) -> str:
    """``" (did you mean 'income'?)"`` when a public label is close to ``name``, else ``""``."""
    labels = [label for label in known if isinstance(label, str)]
    close = difflib.get_close_matches(str(name), labels, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _fix_for(dtype: DtypeObj, temporal: bool) -> str:
    """What to do about a column whose dtype a release cannot read (from the dtype alone)."""
    if is_temporal(dtype):
        return (
            "this release reads numbers only; for datetimes use mean, median, quantile, "
            "min, max, std or histogram with Timestamp bounds"
        )
    if isinstance(dtype, pd.PeriodDtype):
        return (
            "periods are labels: group by them (keys=pd.period_range(...)), or convert them "
            "to timestamps first (.dt.to_timestamp() on a copy)"
        )
    what = "datetimes, timedeltas, " if temporal else ""
    return (
        f"counts of rows work on any column, but this release needs {what}int, float or "
        "bool. Convert it first on a copy: pd.to_numeric if the values are numbers stored "
        "as text, pd.to_datetime(..., utc=True) if they are dates."
    )


def _same_label(label: object, column: object) -> bool:
    try:
        return bool(label == column)
    except (TypeError, ValueError):
        return False


def is_summable(dtype: DtypeObj) -> bool:
    """Whether a column of ``dtype`` can be clipped and summed (ints, floats, bools)."""
    if isinstance(dtype, pd.CategoricalDtype):
        return False
    if ptypes.is_bool_dtype(dtype):
        return True
    return bool(ptypes.is_numeric_dtype(dtype)) and not ptypes.is_complex_dtype(dtype)
