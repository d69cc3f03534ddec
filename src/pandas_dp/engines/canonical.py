"""Canonical forms: one representative per value, and per privacy-unit id.

Everything here is *total* and *row-local*: it runs after the budget check, so it may not
raise, warn or behave differently because of what another row holds.

- Keys observed in the data and distinct values (:mod:`pandas_dp.engines.codes`) are built
  from *canonical* values, a function of each row's value alone: ``-0.0`` becomes ``0.0``,
  numbers equal to an integer become ``int``, ``True`` becomes ``1``, Decimals and
  Fractions become the float or int they equal (else a Fraction), text becomes plain
  ``str``, timestamps become nanosecond ``Timestamp`` s in UTC (naive ones stay naive),
  periods stay periods (their ordinal and frequency say it all), tuples are canonical
  element by element. A value of any other type is dropped. So the released key never
  carries the representation one row happened to use (``pd.factorize`` keeps the first one
  it sees).
- Privacy-unit ids are told apart in one form on every engine path
  (:func:`canonical_unit_ids`): booleans as integers, texts that spell a number written one
  way, texts that spell an instant with a UTC offset written as that instant in UTC.
"""

from __future__ import annotations

import datetime
import math
import numbers
import re
from decimal import Decimal
from fractions import Fraction
from typing import TYPE_CHECKING, TypeAlias, cast

import numpy as np
import numpy.typing as npt
import pandas as pd

if TYPE_CHECKING:
    from pandas._typing import ScalarOrNA

#: A real number in canonical form (see :func:`_number`).
Number: TypeAlias = int | float | Fraction
#: A canonical key value; None means the value cannot be a key (it is dropped).
Canonical: TypeAlias = (
    Number
    | complex
    | str
    | bytes
    | pd.Period
    | pd.Timestamp
    | datetime.date
    | pd.Timedelta
    | tuple["Canonical", ...]
    | None
)


def is_missing(value: object) -> bool:
    """Whether one value is missing (None, NaN, NA, NaT), as :func:`pandas.isna` says.

    A container is not missing (``isna`` gives an array for it, not True). Raises where
    ``isna`` does (a value whose comparison raises): the callers decide what that means.
    """
    # pandas-stubs type isna's scalar form for scalars only; it takes any object at run time.
    return pd.isna(cast("ScalarOrNA", value)) is True


def _number(value: object) -> Number | None:
    """The canonical form of a real number: int when integral, else float when exact."""
    if isinstance(value, float | np.floating):
        number = float(value)
        if math.isnan(number):
            return None
        return int(number) if number.is_integer() else number + 0.0
    if isinstance(value, bool | np.bool_ | numbers.Integral):
        return int(value)
    if isinstance(value, Decimal):
        if value.is_nan():
            return None
        if value.is_infinite():
            return float(value)
        if value == value.to_integral_value():
            return int(value)
        as_float = float(value)
        # Not a float: the Fraction it equals, the form a Fraction of that value takes too.
        return as_float if Decimal(as_float) == value else Fraction(value)
    if isinstance(value, Fraction):
        if value.denominator == 1:
            return int(value)
        as_float = float(value)
        return as_float if Fraction(as_float) == value else value
    return None


def canonical_value(value: object) -> Canonical:
    """A value's canonical representative, or None when it cannot be a key (dropped).

    Equal values of the types handled here have one representative, computed from the value
    alone; values of other types (and missing ones) are dropped.
    """
    try:
        return _canonical(value)
    except Exception:  # a value whose conversion fails is unprocessable: dropped
        return None


def _canonical(value: object) -> Canonical:
    if isinstance(value, str):
        return str(value)
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, np.timedelta64):  # numpy registers it as an integer
        return _delta(value)
    if isinstance(value, numbers.Real | Decimal):
        return _number(value)
    if isinstance(value, complex | np.complexfloating):
        if value.imag == 0:
            return _number(float(value.real))
        return complex(float(value.real) + 0.0, float(value.imag) + 0.0)
    if isinstance(value, bytes):
        return bytes(value)
    if isinstance(value, pd.Period):  # (ordinal, frequency): one representation already
        return pd.Period(value)
    if isinstance(value, pd.Timestamp | datetime.datetime | np.datetime64):
        stamp: object = pd.Timestamp(value)  # NaT for a missing one (the stubs omit it)
        if not isinstance(stamp, pd.Timestamp):
            return None
        stamp = stamp.as_unit("ns")
        return stamp if stamp.tz is None else stamp.tz_convert("UTC")
    if isinstance(value, datetime.date):
        return datetime.date(value.year, value.month, value.day)
    if isinstance(value, pd.Timedelta | datetime.timedelta):
        return _delta(value)
    if isinstance(value, tuple):
        parts = tuple(canonical_value(part) for part in value)
        return None if any(part is None for part in parts) else parts
    return None


def _delta(value: np.timedelta64 | datetime.timedelta) -> pd.Timedelta | None:
    delta: object = pd.Timedelta(value)  # NaT for a missing one (the stubs omit it)
    return delta.as_unit("ns") if isinstance(delta, pd.Timedelta) else None


def _is_float(dtype: np.dtype | pd.api.extensions.ExtensionDtype) -> bool:
    return bool(pd.api.types.is_float_dtype(dtype))


def canonical_column(column: pd.Series) -> pd.Series:
    """The column with every value replaced by its canonical representative (row by row).

    Numeric, boolean, text and datetime dtypes already hold one representation per value,
    except that floats may hold ``-0.0`` (turned into ``0.0`` by adding zero, vectorised).
    Object columns are mapped value by value; categorical columns through their categories.
    """
    dtype = column.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        categories = pd.Series(np.asarray(dtype.categories, dtype=object))
        canonical = categories.map(canonical_value).to_numpy(dtype=object)
        codes = column.cat.codes.to_numpy()
        values: npt.NDArray[np.object_] = canonical[np.maximum(codes, 0)]
        values[codes < 0] = None
        return pd.Series(values, index=column.index, dtype=object)
    if _is_float(dtype):
        return column + 0.0
    if pd.api.types.is_object_dtype(dtype):
        values = np.fromiter(
            (canonical_value(v) for v in column.to_numpy()), dtype=object, count=len(column)
        )
        return pd.Series(values, index=column.index, dtype=object)
    return column


def canonical_unit_ids(ids: pd.Series) -> pd.Series:
    """Privacy-unit ids in the one form every engine path tells units apart by.

    :func:`canonical_column`, with booleans as the integers they equal (``True`` is unit
    ``1`` in any column) and texts that spell a number or an instant with a UTC offset
    written one way (:func:`canonical_id_texts`, for the texts of a string column and those
    of an object column alike), so that equal ids are one unit however a row spells them:
    the pandas engine's lookup, the Dask exchange's buckets, Dask's shuffle and
    partition-local caps all read this form. Row by row, total: an unhashable id becomes
    missing (no unit).
    """
    dtype = ids.dtype
    if isinstance(dtype, np.dtype) and dtype.kind == "b":
        return ids.astype(np.int64)
    if isinstance(dtype, pd.BooleanDtype):
        return ids.astype("Int64")
    if isinstance(dtype, pd.StringDtype):  # perhaps numbers or instants Dask made texts of
        return canonical_id_texts(ids)
    canonical = canonical_column(ids)
    if not pd.api.types.is_object_dtype(canonical.dtype):
        return canonical
    # Texts of an object column are read as a string column's (Dask's string conversion
    # may or may not have run): the same texts, the same units.
    values = canonical.to_numpy()
    texts = np.fromiter((type(v) is str for v in values), dtype=bool, count=len(values))
    if not texts.any():
        return canonical
    written = canonical_id_texts(pd.Series(values[texts], dtype=object))
    values = values.copy()
    values[texts] = written.to_numpy()
    return pd.Series(values, index=canonical.index, dtype=object)


#: Texts that read as a number or a bool (what ``str`` makes of one).
#: (One group around the alternatives: some implementations of ``fullmatch`` only anchor
#: the pattern's ends, which would let a date such as "2024-01-01" match by its first digits.)
_NUMBER_TEXT = r"(?:[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|True|False)"
#: Texts already in the canonical form of an integer: nothing to convert.
_INTEGER_TEXT = r"(?:0|-?[1-9]\d{0,17})"


#: Texts that spell an instant with a UTC offset, ISO-like: ``2024-01-01 01:00:00+01:00``,
#: ``2024-01-01T00:00Z``, ``...00.5-0530``; an offset may carry seconds (``+00:19:32``, as
#: ``str`` writes a local mean time). One group around the whole, as for numbers.
_INSTANT_TEXT = (
    r"(?:\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?"
    r"(?:[Zz]|[+-]\d{2}(?::?\d{2}(?::\d{2}(?:\.\d+)?)?)?))"
)
#: The same, with its parts (anchored by ``fullmatch``).
_INSTANT_PARTS = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?"
    r"(?:[Zz]|([+-])(\d{2})(?::?(\d{2})(?::(\d{2})(?:\.(\d+))?)?)?)"
)


def canonical_id_texts(ids: pd.Series) -> pd.Series:
    """Text ids with every number (or bool) and every instant written one way.

    Numbers: ``"1" = "1.0" = "+01" = "True"``. Dask's default string conversion turns an
    object column holding ``1``, ``1.0`` and ``True`` into three texts before pandas-dp sees
    it; read back as the numbers they spell, they are one unit again, as in the pandas
    engine. Instants: the same conversion writes tz-aware Timestamps in their own zones
    (``"2024-01-01 00:00:00+00:00"`` and ``"2024-01-01 01:00:00+01:00"``, one instant);
    a text that spells a date and time with a UTC offset (or ``Z``) is written as that
    instant in UTC (:func:`_instant_text`), as the pandas engine converts Timestamps. Texts
    without an offset (naive) are left as written. Merging ids is conservative (a unit with
    more rows is capped as one); other texts, and texts of the right shape that name no
    instant (``2024-02-30 ...``), are left as they are. Vectorised: only texts that match a
    pattern and are not already canonical are converted, each distinct one once.
    """
    numeric = np.asarray(ids.str.fullmatch(_NUMBER_TEXT).fillna(False), dtype=bool)
    instant = np.asarray(ids.str.fullmatch(_INSTANT_TEXT).fillna(False), dtype=bool)
    if not (numeric.any() or instant.any()):
        return ids
    convert = instant.copy()
    if numeric.any():
        done = np.asarray(ids.str.fullmatch(_INTEGER_TEXT).fillna(False), dtype=bool)
        convert |= numeric & ~done
    if not convert.any():
        return ids
    codes, uniques = pd.factorize(ids[convert])  # matched texts are never missing
    written = [
        _number_text(text) if re.fullmatch(_NUMBER_TEXT, text) else _instant_text(text)
        for text in uniques
    ]
    out = ids.copy()
    out[convert] = np.asarray(written, dtype=object)[codes]
    return out


def _number_text(text: str) -> str:
    """The canonical text of a number written as ``text`` (see :func:`canonical_id_texts`)."""
    if text in ("True", "False"):
        return "1" if text == "True" else "0"
    try:
        value: Number | None = int(text)
    except ValueError:
        try:
            value = _number(float(text))
        except (ValueError, OverflowError):  # not a number after all: the text as it is
            return text
    return str(value)


def _instant_text(text: str) -> str:
    """The canonical text of the instant ``text`` spells with a UTC offset, else ``text``.

    ``YYYY-MM-DDTHH:MM:SS.fffffffff[f...]Z``: the instant in UTC, its fraction of a second
    with at least nine digits (more only where ``text`` has them: no two instants share a
    text), so that equal instants are one text and unequal ones two, whatever the zone,
    separator or precision ``text`` was written with. Exact integer arithmetic, no parser
    of another library: total, no warning; a text that names no instant (a month 13, a
    February 30, an hour 24, an offset of a day or more, a year outside 1 to 9999 in UTC)
    is returned as it is.
    """
    parts = _INSTANT_PARTS.fullmatch(text)
    if parts is None:
        return text
    year, month, day, hour, minute, second, fraction = parts.groups()[:7]
    sign, off_hours, off_minutes, off_seconds, off_fraction = parts.groups()[7:]
    digits = max(9, len(fraction or ""), len(off_fraction or ""))
    scale = 10**digits  # the instant in units of 10**-digits seconds
    try:
        date = datetime.date(int(year), int(month), int(day))
    except ValueError:
        return text
    clock = (int(hour), int(minute), int(second or 0))
    offset = (int(off_hours or 0), int(off_minutes or 0), int(off_seconds or 0))
    if clock[0] > 23 or clock[1] > 59 or clock[2] > 59 or offset[1] > 59 or offset[2] > 59:
        return text
    shift = (offset[0] * 3600 + offset[1] * 60 + offset[2]) * scale
    shift += int((off_fraction or "").ljust(digits, "0") or 0)
    if shift >= 86_400 * scale:  # an offset is less than a day
        return text
    local = (date.toordinal() * 86_400 + clock[0] * 3600 + clock[1] * 60 + clock[2]) * scale
    local += int((fraction or "").ljust(digits, "0") or 0)
    utc = local - shift if sign == "+" else local + shift
    days, rest = divmod(utc, 86_400 * scale)
    if not 1 <= days <= datetime.date.max.toordinal():
        return text
    seconds, below = divmod(rest, scale)
    stamp = datetime.date.fromordinal(days).isoformat()
    hours, seconds = divmod(seconds, 3600)
    minutes, seconds = divmod(seconds, 60)
    decimals = f"{below:0{digits}d}"
    decimals = decimals[:9] + decimals[9:].rstrip("0")
    return f"{stamp}T{hours:02d}:{minutes:02d}:{seconds:02d}.{decimals}Z"
