"""Public bin edges over time, for histograms of datetime and timedelta columns.

Edges are given explicitly (``bins=pd.DatetimeIndex([...])``, cut like ``pd.cut``), as a
number of equal bins over a range (``bins=12, range=(start, end)``, cut like
``numpy.histogram``) or by a frequency over a range (``freq="MS", range=(start, end)``),
binned like ``resample``: see :func:`frequency_bins`. They become nanoseconds for the engine
(as the column's values do) and Timestamps in the column's unit and zone for the result's
index. Everything here reads public arguments and the dtype only, never the data.
"""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Hashable
from typing import Any, TypeGuard

import numpy as np
import pandas as pd

from pandas_dp.api.temporal import ValueKind
from pandas_dp.errors import DPTypeError, DPValueError

#: The most bins a time histogram may have (a frequency over a long range adds up fast).
MAX_TIME_BINS = 100_000


def time_edges(
    bins: Any, freq: Any, span: Any, kind: ValueKind, column: Hashable
) -> tuple[tuple[float, ...], Any, pd.Index | None]:
    """The edges in nanoseconds, as the column's datetimes (or timedeltas), and the labels.

    The labels are None but with ``freq``: then they are the bins' labels as ``resample``
    gives them (a DatetimeIndex or TimedeltaIndex with its ``freq``), see
    :func:`frequency_bins`.

    Raises
    ------
    DPTypeError
        If edges or the range are not datetimes (timedeltas) matching the column.
    DPValueError
        If the edges are fewer than two or not increasing, the frequency is unknown, or
        there would be more than :data:`MAX_TIME_BINS` bins.
    """
    labels = None
    if freq is not None or is_count(bins):
        stamps, labels = _generated(bins, freq, span, kind, column)
    else:
        if span is not None:
            raise DPValueError("range= goes with freq= or bins=<number of bins>, not with edges")
        if isinstance(bins, str | bytes) or not hasattr(bins, "__iter__"):
            raise DPTypeError(
                f"bins for column {column!r} of {kind.describe()} must be edges, e.g. "
                "pd.DatetimeIndex([...]), or give freq='MS' and range=(start, end)"
            )
        stamps = list(bins)
    if len(stamps) > MAX_TIME_BINS + 1:
        raise DPValueError(f"at most {MAX_TIME_BINS} bins; choose fewer edges or a coarser freq")
    edges = tuple(kind.number(stamp, "bin edges", column) for stamp in stamps)
    if len(edges) < 2 or any(b <= a for a, b in itertools.pairwise(edges)):
        raise DPValueError("bins must be at least two strictly increasing edges")
    return edges, kind.present(np.asarray(edges), "point"), labels


def is_count(bins: object) -> TypeGuard[numbers.Integral]:
    """Whether ``bins`` is a number of bins (an integer, not a bool)."""
    return isinstance(bins, numbers.Integral) and not isinstance(bins, bool)


def _generated(
    bins: Any, freq: Any, span: Any, kind: ValueKind, column: Hashable
) -> tuple[list[Any], pd.Index | None]:
    """Edges (and labels) from ``freq``, or a number of bins, over ``range``."""
    if not isinstance(span, tuple | list) or len(span) != 2:
        example = "(pd.Timestamp('2020-01-01'), pd.Timestamp('2021-01-01'))"
        raise DPValueError(f"freq= and bins=<number> need range=(start, end), e.g. {example}")
    ends = tuple(kind.scalar(bound, "range", column) for bound in span)  # text read once
    start, end = (kind.number(bound, "range", column) for bound in ends)
    if not start < end:
        raise DPValueError(f"range must satisfy start < end, got ({span[0]}, {span[1]})")
    if freq is None:
        if not 1 <= bins <= MAX_TIME_BINS:
            raise DPValueError(f"bins must be between 1 and {MAX_TIME_BINS}, got {bins}")
        return list(_range(kind, ends, periods=int(bins) + 1)), None
    if bins is not None:
        raise DPValueError("give either freq= or bins=, not both")
    try:
        offset = pd.tseries.frequencies.to_offset(freq)
    except (TypeError, ValueError):
        raise DPValueError(
            f"freq {freq!r} is not a pandas frequency (e.g. 'D', 'W', 'MS')"
        ) from None
    step = getattr(offset, "nanos", None) if _fixed(offset) else 3_600 * 10**9  # ≥ 1 hour
    if step is None or step <= 0 or (end - start) / step > MAX_TIME_BINS:
        raise DPValueError(f"freq {freq!r} gives more than {MAX_TIME_BINS} bins over this range")
    try:
        return frequency_bins(offset, kind, ends)
    except (TypeError, ValueError):  # e.g. months of timedeltas, which have no fixed length
        hint = "" if kind.points else "; timedeltas take fixed lengths, e.g. 'h'"
        raise DPValueError(
            f"freq {freq!r} cannot bin column {column!r} of {kind.describe()}{hint}"
        ) from None


def frequency_bins(
    offset: Any, kind: ValueKind, ends: tuple[Any, Any]
) -> tuple[list[Any], pd.Index]:
    """The bins of frequency ``offset`` over ``[start, end)``, as ``resample`` makes them.

    The bins and labels are those ``resample(freq).size()`` gives for values spanning the
    range: its labels for the range's first instant and for its last one before ``end``
    (anchored like ``origin="start_day"`` on the start's day; timedeltas on the start).
    Every bin is left-closed, ``[edge_i, edge_i+1)``, the first starting at ``start`` and
    the last ending at ``end`` (cut there when ``end`` falls inside a period): a value at
    exactly ``end`` is not counted, as it begins the next period (``2021-01-01`` begins 2021
    with ``range=(2020-01-01, 2021-01-01)``, which gives the twelve months of 2020). The
    frequencies ``resample`` labels by their period's last day (``"W"``, ``"ME"``, ``"QE"``,
    ``"YE"`` ...) count that whole day in the period: their bins run from the day after one
    label to the day after the next. Returns the edges (the column's scalars, in its unit
    and zone) and the labels; reads the public range, ``offset`` and the dtype only.
    """
    unit: Any = kind.unit  # "s", "ms", "us" or "ns"
    start, end = (bound.as_unit(unit) for bound in ends)
    if kind.tz is not None:  # labels on the column's clock, as resample would show them
        start, end = start.tz_convert(kind.tz), end.tz_convert(kind.tz)
    index = kind.index
    last = end - pd.Timedelta(1, unit=unit)
    probe = pd.Series(0, index=index([start, last]).as_unit(unit))
    sizes = probe.resample(offset).size()
    # resample may add an empty bin after the last value's (at the last tick of a "W" or
    # "ME" label's day): the bins end with the one that holds the range's last instant
    labels: Any = sizes.index[: int(np.flatnonzero(sizes.to_numpy())[-1]) + 1]
    if pd.Grouper(freq=offset).closed == "right":  # labelled by the period's last day
        wall = labels[:-1].tz_localize(None) if kind.tz is not None else labels[:-1]
        after = wall + pd.Timedelta(days=1)
        inner = list(after.tz_localize(kind.tz) if kind.tz is not None else after)
    else:
        inner = list(labels[1:])
    return [start, *inner, end], labels


def _fixed(offset: Any) -> bool:
    """Whether ``offset`` has a fixed length (a Tick: days, hours, ...)."""
    return isinstance(offset, pd.offsets.Tick)


def _range(kind: ValueKind, ends: tuple[Any, Any], **how: Any) -> Any:
    if kind.points:
        return pd.date_range(ends[0], ends[1], **how)
    return pd.timedelta_range(ends[0], ends[1], **how)
