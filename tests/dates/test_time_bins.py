"""Histograms over time follow ``pd.cut`` with datetime edges (issue 15).

With the noise captured at 0, counts equal ``pd.cut(...).value_counts(sort=False)`` and the
index holds the same intervals of Timestamps (unit and zone of the column), named as pandas
names them. ``freq=`` bins like ``resample`` instead (issue 24, see
``test_time_bins_left_closed.py``): left-closed, indexed by resample's labels.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

from pandas_dp import DPTypeError, DPValueError

from .conftest import DAY, YEAR


def _like_pd_cut(released: pd.Series, values: pd.Series, edges: Any, **cut: Any) -> None:
    expected = pd.cut(values, edges, **cut).value_counts(sort=False)
    assert released.tolist() == expected.tolist()
    assert released.name == expected.name == "count"
    assert released.index.name == expected.index.name
    assert isinstance(released.index, pd.IntervalIndex)
    assert released.index.dtype == expected.index.categories.dtype
    if not cut.get("include_lowest"):  # pd.cut then moves the first edge down one unit
        assert released.index.equals(pd.IntervalIndex(expected.index.categories))


@pytest.mark.parametrize("tz", [None, "Europe/Paris"])
@pytest.mark.parametrize("unit", ["s", "us", "ns"])
def test_monthly_histogram_is_resample_by_month_starts(
    frame: Callable[..., pd.DataFrame], protect_seeded: Callable[..., Any], noise: Callable,
    unit: str, tz: Any,
) -> None:  # fmt: skip
    data = frame(unit, tz)
    priv = protect_seeded(data, epsilon=10.0)
    span = YEAR if tz is None else tuple(end.tz_localize(tz) for end in YEAR)
    with noise(priv) as calls:
        released = priv["t"].dp.histogram(freq="MS", range=span, epsilon=1.0)
    expected = data.set_index("t").resample("MS").size()
    assert released.tolist() == expected.tolist()
    assert released.index.equals(expected.index)
    assert released.index.freqstr == "MS"
    assert released.index.dtype == data["t"].dtype
    assert len(released) == 12
    assert [call.mechanism.scale for call in calls] == [1]  # sensitivity 1 / ε 1


def test_explicit_edges_and_the_frame_form(
    frame: Callable[..., pd.DataFrame], protect_seeded: Callable[..., Any], noise: Callable
) -> None:
    data = frame("us")
    priv = protect_seeded(data, epsilon=10.0)
    edges = pd.DatetimeIndex(["2020-01-01", "2020-03-20", "2020-07-01", "2021-01-01"]).as_unit("us")
    with noise(priv):
        series = priv["t"].dp.histogram(bins=edges, epsilon=1.0)
        left = priv.dp.histogram("t", list(edges), epsilon=1.0, right=False)
        table = priv.dp.histogram("t", edges, epsilon=1.0, ci=0.9)
    _like_pd_cut(series, data["t"], edges)
    _like_pd_cut(left, data["t"], edges, right=False)
    assert list(table.columns) == ["count", "count_lower", "count_upper"]
    assert table["count"].tolist() == series.tolist()


def test_timedelta_bins_by_number_and_by_frequency(
    frame: Callable[..., pd.DataFrame], protect_seeded: Callable[..., Any], noise: Callable
) -> None:
    data = frame("us")
    priv = protect_seeded(data, epsilon=10.0)
    with noise(priv):
        quarters = priv["d"].dp.histogram(bins=4, range=DAY, epsilon=1.0)
        hours = priv["d"].dp.histogram(freq="h", range=DAY, epsilon=1.0)
    # A number of bins cuts like numpy.histogram: [a, b), the last one [a, b].
    nanoseconds = data["d"].dropna().astype("int64").to_numpy() * 1e3
    expected, _ = np.histogram(nanoseconds, bins=4, range=(0, DAY[1].value))
    assert quarters.tolist() == expected.tolist()
    assert quarters.index.closed == "left"
    assert quarters.index.dtype == pd.IntervalDtype("timedelta64[us]", closed="left")
    by_hour = data.set_index("d").resample("h").size()  # d starts at 0: the range's start
    assert hours.tolist() == by_hour.tolist()
    assert hours.index.equals(by_hour.index)
    assert quarters.sum() == data["d"].notna().sum()  # every value within the day


def test_clip_counts_values_outside_the_range_in_the_edge_bins(
    frame: Callable[..., pd.DataFrame], protect_seeded: Callable[..., Any], noise: Callable
) -> None:
    data = frame("ns")
    priv = protect_seeded(data, epsilon=10.0)
    span = (pd.Timestamp("2020-03-01"), pd.Timestamp("2020-10-01"))
    with noise(priv):
        clipped = priv["t"].dp.histogram(freq="MS", range=span, epsilon=1.0, clip=True)
    inside = data[(data["t"] >= span[0]) & (data["t"] < span[1])]
    counts = inside.set_index("t").resample("MS").size()
    assert clipped.iloc[0] == counts.iloc[0] + (data["t"] < span[0]).sum()
    assert clipped.iloc[-1] == counts.iloc[-1] + (data["t"] >= span[1]).sum()
    assert clipped.sum() == data["t"].notna().sum()


BAD = {
    "unknown freq": (dict(freq="fortnightly", range=YEAR), DPValueError, "not a pandas freq"),
    "too many bins": (dict(freq="s", range=YEAR), DPValueError, "more than"),
    "freq without range": (dict(freq="MS"), DPValueError, "range=\\(start, end\\)"),
    "freq and bins": (dict(freq="MS", bins=3, range=YEAR), DPValueError, "either freq"),
    "numeric edges": (dict(bins=[0, 1, 2]), DPTypeError, "must be a Timestamp"),
    "reversed range": (dict(freq="MS", range=YEAR[::-1]), DPValueError, "start < end"),
    "naive vs aware": (
        dict(freq="MS", range=tuple(e.tz_localize("UTC") for e in YEAR)),
        DPTypeError,
        "time zone",
    ),
    "range with edges": (dict(bins=pd.DatetimeIndex(YEAR), range=YEAR), DPValueError, "range="),
    "decreasing edges": (dict(bins=pd.DatetimeIndex(YEAR[::-1])), DPValueError, "increasing"),
    "a single edge": (dict(bins=YEAR[0]), DPTypeError, "must be edges"),
    "no bins": (dict(bins=0, range=YEAR), DPValueError, "between 1 and"),
    "too many edges": (
        dict(bins=pd.date_range(*YEAR, periods=100_002)),
        DPValueError,
        "at most 100000 bins",
    ),
}


@pytest.mark.parametrize(("options", "error", "match"), BAD.values(), ids=BAD.keys())
def test_bad_time_bins_are_refused_before_any_charge(
    frame: Callable[..., pd.DataFrame], protect_seeded: Callable[..., Any],
    charges_nothing: Callable, options: dict, error: type, match: str,
) -> None:  # fmt: skip
    priv = protect_seeded(frame(), epsilon=1.0)
    with charges_nothing(priv), pytest.raises(error, match=match):
        priv["t"].dp.histogram(epsilon=0.5, **options)


def test_freq_is_for_time_columns(
    frame: Callable[..., pd.DataFrame],
    protect_seeded: Callable[..., Any],
    charges_nothing: Callable,
) -> None:
    priv = protect_seeded(frame(), epsilon=1.0)
    with charges_nothing(priv), pytest.raises(DPValueError, match="holds numbers"):
        priv["x"].dp.histogram(freq="MS", range=YEAR, epsilon=0.5)
