"""Bins of a frequency are left-closed and labelled like ``resample`` (issue 24).

``histogram(freq=f, range=(t0, t1))`` counts ``t0 <= t < t1`` in the bins ``resample(f)``
makes, ``[edge_i, edge_i+1)``, and is indexed by resample's labels (a DatetimeIndex with its
``freq``). A value at exactly ``t1`` begins the next period and is not counted: the pandas
twin is ``df[(t >= t0) & (t < t1)].set_index("t").resample(f).size()``, i.e.
``loc[t0 : t1 - one tick]``. With the noise captured at 0, the counts equal that twin's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

from pandas_dp import DPValueError

T = pd.Timestamp


def _twin(stamps: pd.Series, freq: str, t0: Any, t1: Any) -> pd.Series:
    """What pandas gives for the rows of ``[t0, t1)``: resample(freq).size(), named count."""
    inside = stamps[(stamps >= t0) & (stamps < t1)]
    return inside.to_frame("t").set_index("t").resample(freq).size().rename("count")


def _release(priv: Any, form: str, **options: Any) -> Any:
    if form == "series":
        return priv["t"].dp.histogram(epsilon=1.0, **options)
    return priv.dp.histogram("t", epsilon=1.0, **options)


def _same(released: pd.Series, expected: pd.Series) -> None:
    pd.testing.assert_series_equal(released, expected, check_dtype=False)  # checks the freq
    assert isinstance(released.index, pd.DatetimeIndex | pd.TimedeltaIndex)
    assert released.index.freq == expected.index.freq


def test_issue_24_monthly_counts_are_resample_counts(
    protect_seeded: Callable[..., Any], noise: Callable
) -> None:
    days = ["2020-01-01"] * 200 + ["2020-01-15"] * 200 + ["2020-02-01"] * 600
    days += ["2020-02-10"] * 200 + ["2020-03-01"] * 200
    data = pd.DataFrame({"t": pd.to_datetime(days)})
    t0, t1 = T("2020-01-01"), T("2020-04-01")
    priv = protect_seeded(data, epsilon=10.0)
    with noise(priv):
        series = priv["t"].dp.histogram(freq="MS", range=(t0, t1), epsilon=1.0)
        frame = priv.dp.histogram("t", freq="MS", range=(t0, t1), epsilon=1.0)
    expected = data.set_index("t").resample("MS").size().rename("count")
    assert expected.tolist() == [400, 800, 200]  # 1 Jan in January, 1 Feb in February
    assert data["t"].dt.to_period("M").value_counts(sort=False).tolist() == [400, 800, 200]
    _same(series, expected)
    _same(frame, expected)
    assert series.index.freqstr == "MS"
    assert series.index.name == "t"


# (freq, t0, t1): edges on and off the range's ends; D and h cross Paris's spring DST change.
CASES = {
    "MS": ("MS", T("2020-01-01"), T("2020-07-01")),
    "D": ("D", T("2020-03-27"), T("2020-04-02")),
    "W": ("W", T("2020-01-01"), T("2020-03-02")),  # Wednesday to Monday: resample's weeks
    "QS": ("QS", T("2020-01-01"), T("2021-01-01")),
    "h": ("h", T("2020-03-29"), T("2020-03-29 06:00")),
}


def _stamps(freq: str, t0: T, t1: T) -> pd.Series:
    """Instants on every edge, between edges, at t0, just before and at t1, and outside.

    Each instant is repeated 1-3 times, so a bin shifted by one edge changes the counts.
    """
    step = "15min" if freq == "h" else "6h"
    grid = pd.date_range(t0 - pd.Timedelta(days=2), t1 + pd.Timedelta(days=2), freq=step)
    ends = [t0, t1, t1 - pd.Timedelta(seconds=1), t0 - pd.Timedelta(seconds=1)]
    instants = list(grid) + ends + list(grid[::7])  # the ends also inside the grid: twice
    repeats = [i % 3 + 1 for i in range(len(instants))]
    return pd.Series(np.repeat(pd.DatetimeIndex(instants).as_unit("us"), repeats), name="t")


@pytest.mark.parametrize("form", ["series", "frame"])
@pytest.mark.parametrize("tz", [None, "Europe/Paris"])
@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_bins_of_a_frequency_are_resample_bins(
    protect_seeded: Callable[..., Any], noise: Callable, case: tuple, tz: Any, form: str
) -> None:
    freq, t0, t1 = case
    if tz:
        t0, t1 = t0.tz_localize(tz), t1.tz_localize(tz)
    stamps = _stamps(freq, t0, t1)
    priv = protect_seeded(stamps.to_frame(), epsilon=10.0)
    with noise(priv):
        released = _release(priv, form, freq=freq, range=(t0, t1))
    expected = _twin(stamps, freq, t0, t1)
    _same(released, expected)
    assert released.index.dtype == stamps.dtype  # the column's unit and zone
    counted = ((stamps >= t0) & (stamps < t1)).sum()
    assert released.sum() == counted < stamps.size  # t1 and the outside rows are dropped
    # loc[t0:t1] keeps the rows at t1, which resample puts in a bin after the range's end:
    loc = stamps.to_frame().set_index("t").sort_index().loc[t0:t1].resample(freq).size()
    assert loc.sum() == counted + (stamps == t1).sum()


@pytest.mark.parametrize("tz", [None, "UTC"])
def test_a_row_at_the_ranges_end_begins_the_next_period(
    protect_seeded: Callable[..., Any], noise: Callable, tz: Any
) -> None:
    t0, t1 = T("2020-01-01", tz=tz), T("2021-01-01", tz=tz)
    just_before = t1 - pd.Timedelta(1, unit="us")
    stamps = pd.Series(pd.DatetimeIndex([t0, t0, just_before, t1, t1, t1]).as_unit("us"))
    priv = protect_seeded(stamps.to_frame("t"), epsilon=10.0)
    with noise(priv):
        monthly = priv["t"].dp.histogram(freq="MS", range=(t0, t1), epsilon=1.0)
    assert len(monthly) == 12  # the twelve months of 2020
    assert monthly.index[0] == t0
    assert monthly.index[-1] == T("2020-12-01", tz=tz)
    assert monthly.tolist() == [2] + [0] * 10 + [1]  # just before t1 in December, t1 not


def test_a_range_inside_periods_cuts_its_first_and_last_bins(
    protect_seeded: Callable[..., Any], noise: Callable
) -> None:
    """A start or end off the frequency: labels of resample, counts of [t0, t1) only."""
    t0, t1 = T("2020-01-15"), T("2020-12-31")
    stamps = pd.Series(pd.date_range("2020-01-01", "2021-01-02", freq="12h").as_unit("us"))
    priv = protect_seeded(stamps.to_frame("t"), epsilon=10.0)
    with noise(priv):
        monthly = priv.dp.histogram("t", freq="MS", range=(t0, t1), epsilon=1.0)
    _same(monthly, _twin(stamps, "MS", t0, t1))
    assert list(monthly.index) == list(pd.date_range("2020-01-01", "2020-12-01", freq="MS"))
    assert monthly.iloc[0] == 17 * 2  # 15-31 January
    assert monthly.iloc[-1] == 30 * 2  # 1-30 December, not 31 December


def test_timedeltas_are_binned_like_resample_from_the_start(
    protect_seeded: Callable[..., Any], noise: Callable
) -> None:
    start, end = pd.Timedelta(0), pd.Timedelta(hours=2)
    lengths = pd.Series(pd.to_timedelta(np.arange(0, 3 * 3600, 450), unit="s").as_unit("us"))
    priv = protect_seeded(lengths.to_frame("t"), epsilon=10.0)
    with noise(priv):
        released = priv["t"].dp.histogram(freq="30min", range=(start, end), epsilon=1.0)
    _same(released, _twin(lengths, "30min", start, end))
    assert released.tolist() == [4, 4, 4, 4]  # 0:00, 0:07:30, 0:15, 0:22:30 in the first


def test_ci_table_and_clip_keep_the_labels(
    protect_seeded: Callable[..., Any], noise: Callable
) -> None:
    t0, t1 = T("2020-03-01"), T("2020-06-01")
    stamps = pd.Series(pd.date_range("2020-01-01", "2020-12-31", freq="D").as_unit("us"))
    priv = protect_seeded(stamps.to_frame("t"), epsilon=10.0)
    with noise(priv):
        table = priv.dp.histogram("t", freq="MS", range=(t0, t1), epsilon=1.0, ci=0.9)
        clipped = priv["t"].dp.histogram(freq="MS", range=(t0, t1), epsilon=1.0, clip=True)
    assert list(table.columns) == ["count", "count_lower", "count_upper"]
    assert table.index.equals(pd.date_range(t0, periods=3, freq="MS", name="t").as_unit("us"))
    assert table["count"].tolist() == [31, 30, 31]
    # clip: rows before t0 in the first bin, rows at or after t1 in the last
    assert clipped.tolist() == [31 + 60, 30, 31 + (stamps >= t1).sum()]


@pytest.mark.parametrize("options", [{"right": True}, {"include_lowest": True}])
def test_pd_cut_options_are_refused_with_a_frequency(
    protect_seeded: Callable[..., Any], charges_nothing: Callable, options: dict
) -> None:
    stamps = pd.Series(pd.date_range("2020-01-01", periods=50, freq="D"), name="t")
    priv = protect_seeded(stamps.to_frame(), epsilon=1.0)
    span = (T("2020-01-01"), T("2020-03-01"))
    with charges_nothing(priv), pytest.raises(DPValueError, match="resample"):
        priv["t"].dp.histogram(freq="MS", range=span, epsilon=0.5, **options)


def test_timedeltas_of_months_are_refused(
    protect_seeded: Callable[..., Any], charges_nothing: Callable
) -> None:
    lengths = pd.Series(pd.to_timedelta(np.arange(10), unit="h"), name="t")
    priv = protect_seeded(lengths.to_frame(), epsilon=1.0)
    span = (pd.Timedelta(0), pd.Timedelta(days=90))
    with charges_nothing(priv), pytest.raises(DPValueError, match="fixed lengths"):
        priv["t"].dp.histogram(freq="MS", range=span, epsilon=0.5)


def test_edges_and_numeric_bins_keep_their_rules(
    protect_seeded: Callable[..., Any], noise: Callable
) -> None:
    """Explicit time edges still cut like pd.cut, numbers of bins like numpy.histogram."""
    stamps = pd.Series(pd.date_range("2020-01-01", periods=4, freq="MS").as_unit("us"))
    data = pd.DataFrame({"t": stamps, "x": [0.0, 1.0, 2.0, 4.0]})
    priv = protect_seeded(data, epsilon=10.0)
    edges = pd.DatetimeIndex(stamps)
    with noise(priv):
        cut = priv["t"].dp.histogram(bins=edges, epsilon=1.0)
        numbers = priv["x"].dp.histogram(bins=2, range=(0, 4), epsilon=1.0)
    assert isinstance(cut.index, pd.IntervalIndex)
    assert cut.index.closed == "right"
    assert cut.tolist() == pd.cut(stamps, edges).value_counts(sort=False).tolist() == [1, 1, 1]
    assert numbers.tolist() == np.histogram(data["x"], bins=2, range=(0, 4))[0].tolist()
    assert numbers.tolist() == [2, 2]  # the last bin [2, 4] holds 4
