"""Datetime and timedelta columns: their kind, public bounds as numbers, results as datetimes.

A release reads a datetime column as nanoseconds since 1970-01-01 UTC and a timedelta
column as nanoseconds (:mod:`pandas_dp.engines.temporal`). Validation turns the user's
``Timestamp`` / ``Timedelta`` bounds into the same numbers (public input), and finishing
turns released numbers back into the column's own unit and time zone: free
post-processing that reads the dtype, which is public. A :class:`ValueKind` carries that
from validation to finishing; nothing else in the release path dispatches on time.
"""

from __future__ import annotations

import datetime
from collections.abc import Hashable
from dataclasses import dataclass
from datetime import tzinfo
from enum import StrEnum
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd
from pandas._typing import ArrayLike, DtypeObj
from pandas.api.extensions import ExtensionArray

from pandas_dp.engines.temporal import NANOSECONDS, is_temporal, unit_of
from pandas_dp.errors import DPTypeError, DPValueError
from pandas_dp.planning.statistics.base import OnTime

_POINTS = (pd.Timestamp, datetime.datetime, datetime.date, np.datetime64)
_SPANS = (pd.Timedelta, datetime.timedelta, np.timedelta64)


class Kind(StrEnum):
    """What a column's numbers are; printed as its value (``datetime``) in messages."""

    NUMBER = "number"
    DATETIME = "datetime"
    TIMEDELTA = "timedelta"


#: Per time kind: a range and one value as text, and the pandas scalar that reads them.
_EXAMPLES = {
    Kind.DATETIME: ("('2020-01-01', '2021-01-01')", "'2020-01-01'", "pd.Timestamp"),
    Kind.TIMEDELTA: ("('0 days', '30 days')", "'30 days'", "pd.Timedelta"),
}


def _example(what: str, kind: Kind) -> str:
    """How to give ``what`` (``range``, ``bounds[0] (lower)``, ``fillna``) for a time column."""
    pair, one, noun = _EXAMPLES[kind]
    name = what.split("[")[0].strip()
    if name in ("range", "bounds"):
        return f"Give {name} as {pair}, or as {noun}s"
    return f"Give {name} as {one}, or as a {noun}"


def is_time_value(value: object) -> bool:
    """Whether ``value`` is a datetime or timedelta scalar (of any library)."""
    return isinstance(value, _POINTS + _SPANS)


@dataclass(frozen=True)
class ValueKind:
    """What the numbers of a column are: plain numbers, datetimes, or timedeltas.

    Datetimes and timedeltas keep the column's ``unit`` and (datetimes) time zone ``tz``,
    which released values are converted back to. ``dtype`` is the column's dtype as text,
    for messages.
    """

    kind: Kind = Kind.NUMBER
    unit: str = "ns"
    tz: tzinfo | None = None
    dtype: str = ""

    @classmethod
    def of(cls, dtype: DtypeObj) -> ValueKind:
        """The kind of a column of ``dtype`` (read from the dtype alone)."""
        if isinstance(dtype, np.dtype) and cls is ValueKind:
            return _numpy_kind(dtype)  # public metadata, the same at every release
        return cls._of_dtype(dtype)

    @classmethod
    def _of_dtype(cls, dtype: DtypeObj) -> ValueKind:
        """:meth:`of`, uncached."""
        if not is_temporal(dtype):
            return cls(dtype=str(dtype))  # its dtype, for messages
        if dtype.kind == "m":
            return cls(Kind.TIMEDELTA, unit_of(dtype), None, str(dtype))
        tz = getattr(dtype, "tz", None)
        if isinstance(dtype, pd.ArrowDtype):
            tz = dtype.pyarrow_dtype.tz
        return cls(Kind.DATETIME, unit_of(dtype), tz, str(dtype))

    @property
    def temporal(self) -> bool:
        """Whether the column holds datetimes or timedeltas."""
        return self.kind is not Kind.NUMBER

    @property
    def points(self) -> bool:
        """Whether the values are points in time (datetimes): an origin, no size, no total."""
        return self.kind is Kind.DATETIME

    def dated(self, on_time: OnTime) -> bool:
        """Whether a statistic's values on this column are datetimes (points of datetimes)."""
        return self.points and on_time == "point"

    @property
    def index(self) -> type[pd.DatetimeIndex] | type[pd.TimedeltaIndex]:
        """The pandas index of this column's values (datetimes, else timedeltas)."""
        return pd.DatetimeIndex if self.points else pd.TimedeltaIndex

    def _parse(self, value: Any) -> Any:
        """``value`` read by ``pd.Timestamp`` (datetimes) or ``pd.Timedelta``."""
        return pd.Timestamp(value) if self.points else pd.Timedelta(value)

    def describe(self) -> str:
        """``datetimes (datetime64[ns, UTC])``, ``numbers (float64)``, for messages."""
        return f"{self.kind}s ({self.dtype})" if self.dtype else f"{self.kind}s"

    def note(self, column: Hashable) -> str:
        """The ledger's line for a time column: its values' units."""
        if self.points:
            return f"{column}: datetimes as nanoseconds since 1970-01-01 UTC (bounds and lattice)"
        return f"{column}: timedeltas as nanoseconds (bounds and lattice)"

    def scalar(self, value: object, what: str, column: Hashable) -> Any:
        """A public bound (or fill value, edge) of this column as a Timestamp (Timedelta).

        Text is read as pandas reads it (``pd.Timestamp("2024-01-01")``,
        ``pd.Timedelta("30 days")``): the caller's own text, so public.

        Raises
        ------
        DPTypeError
            If ``value`` is neither text nor a datetime (timedelta) scalar, or its time
            zone awareness differs from the column's.
        DPValueError
            If it is missing (NaT) or text pandas cannot read as one.
        """
        if isinstance(value, str):
            return self._read(value, what, column)
        wanted = _POINTS if self.points else _SPANS
        if not isinstance(value, wanted):
            raise DPTypeError(
                f"{what} must be a {'Timestamp' if self.points else 'Timedelta'}: "
                f"column {column!r} holds {self.describe()}, got "
                f"{type(value).__name__}. {_example(what, self.kind)}"
            )
        given: Any = value  # one of the scalar types checked above
        scalar: Any = self._parse(given)
        if scalar is pd.NaT:
            raise DPValueError(f"{what} must be a {self.kind}, got NaT")
        if self.points:
            self._check_zone(scalar, what, column)
        return scalar

    def _read(self, text: str, what: str, column: Hashable) -> Any:
        """``text`` read by ``pd.Timestamp`` (``pd.Timedelta``), else a refusal naming it."""
        try:
            scalar: Any = self._parse(text)
        except (ValueError, TypeError, OverflowError):
            scalar = None
        if scalar is None or scalar is pd.NaT:
            reads = "a date by pd.Timestamp" if self.points else "a duration by pd.Timedelta"
            raise DPValueError(
                f"{what} {text!r} cannot be read as {reads} (column {column!r} "
                f"holds {self.describe()}). {_example(what, self.kind)}"
            )
        if self.points:
            self._check_zone(scalar, what, column)
        return scalar

    def number(self, value: object, what: str, column: Hashable) -> float:
        """A public bound (or fill value) of this column in nanoseconds.

        Raises
        ------
        DPTypeError, DPValueError
            As :meth:`scalar`; a :class:`DPValueError` also if the column's unit cannot
            hold it.
        """
        scalar = self.scalar(value, what, column)
        try:
            ticks = scalar.as_unit(self.unit)
        except (OverflowError, ValueError):  # OutOfBoundsDatetime / OutOfBoundsTimedelta
            raise DPValueError(
                f"{what} {scalar} is out of the range {self.dtype} can hold; give a bound "
                "the column's unit can represent (or convert the column with .astype)"
            ) from None
        native = ticks.to_datetime64() if self.points else ticks.to_timedelta64()
        return float(native.astype(np.int64)) * NANOSECONDS[self.unit]

    def _check_zone(self, stamp: pd.Timestamp, what: str, column: Hashable) -> None:
        if self.tz is not None and stamp.tz is None:
            raise DPTypeError(
                f"{what} {stamp} has no time zone but column {column!r} holds "
                f"{self.describe()}: give tz-aware bounds, e.g. pd.Timestamp('2020-01-01', "
                f"tz='{self.tz}')"
            )
        if self.tz is None and stamp.tz is not None:
            raise DPTypeError(
                f"{what} {stamp} has a time zone but column {column!r} holds "
                f"{self.describe()} without one: give naive bounds (stamp.tz_localize(None)) "
                "or localize the column (.dt.tz_localize)"
            )

    def present(self, values: ArrayLike, on_time: OnTime) -> ExtensionArray:
        """Released nanoseconds in the column's dtype (total: NaN or unrepresentable → NaT).

        Points of a datetime column become datetimes in its unit and zone; everything else
        a statistic releases of a time column (spreads, timedelta points and totals)
        becomes timedeltas in its unit.
        """
        ticks = np.asarray(values, dtype=np.float64) / NANOSECONDS[self.unit]
        valid = np.isfinite(ticks) & (np.abs(ticks) < 2.0**63)
        whole = np.where(valid, np.rint(np.where(valid, ticks, 0.0)), 0.0).astype(np.int64)
        whole[~valid] = np.iinfo(np.int64).min  # NaT
        if self.dated(on_time):
            stamps = pd.DatetimeIndex(whole.view(f"datetime64[{self.unit}]"))
            if self.tz is not None:
                stamps = stamps.tz_localize("UTC").tz_convert(self.tz)
            return stamps.array
        return pd.TimedeltaIndex(whole.view(f"timedelta64[{self.unit}]")).array


#: The kind of every non-time column.
NUMBER = ValueKind()


@lru_cache(maxsize=64)
def _numpy_kind(dtype: np.dtype[Any]) -> ValueKind:
    """:meth:`ValueKind.of` a numpy dtype, cached (a dtype is public metadata).

    ``str(dtype)`` (for messages) alone costs as much as the rest of a release's column checks.
    """
    return ValueKind._of_dtype(dtype)


def temporal_statistic(kind: ValueKind, how: str, on_time: OnTime, column: Hashable) -> None:
    """Refuse statistics pandas does not define for a time column (public: from the dtype)."""
    if not kind.temporal:
        return
    if on_time is None:
        raise DPTypeError(
            f"{how} is not defined for column {column!r} of {kind.describe()} (pandas "
            "refuses it too: its unit would be time squared); release std, a Timedelta"
        )
    if on_time == "total" and kind.points:
        raise DPTypeError(
            f"{how} is not defined for column {column!r} of {kind.describe()}, as in pandas: "
            "datetimes are points in time. Release mean, median or quantile (Timestamps), or "
            "sum a timedelta column, e.g. (df[col] - pd.Timestamp('2020-01-01'))"
        )
