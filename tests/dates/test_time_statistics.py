"""Datetime and timedelta statistics come back as pandas would give them (issue 15).

Each release runs at a very large ε on a seeded session and is compared with the pandas
call: same type (``Timestamp`` with the column's unit and zone, ``Timedelta``), same Series
dtype and index, and a value within a tolerance derived from the noise (stated per test).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

from pandas_dp import Estimate

from .conftest import DAY, YEAR

EPSILON = 1e4
CELLS = 1 << 12
CELL = (YEAR[1] - YEAR[0]) / CELLS  # the quantile grid's step: 2 h 9 min
UNITS = ["s", "us", "ns"]
ZONES = [None, "Europe/Paris"]


def _bounds(tz: str | None) -> tuple[pd.Timestamp, pd.Timestamp]:
    return YEAR if tz is None else (YEAR[0].tz_localize(tz), YEAR[1].tz_localize(tz))


def _same_type(released: Any, expected: Any) -> None:
    assert type(released) is type(expected)
    assert released.unit == expected.unit
    # The zone by name: pandas 2 gives pytz zones, whose objects differ with the offset.
    assert str(getattr(released, "tz", None)) == str(getattr(expected, "tz", None))


def _between(values: pd.Series, q: float, bounds: tuple[Any, Any]) -> tuple[Any, Any]:
    """Where an exponential-mechanism quantile lands at a huge ε, from the documented rule.

    The candidates are the grid's edges and the round instants: on a year's bounds with
    4,096 cells, every whole hour (the finest step of the ladder with at most 4 · cells
    multiples). The best candidate ``c`` minimises ``max(#{x < c} - q n, q n - #{x <= c})``.
    Here ``q n`` has one decimal, so any other candidate scores at least 0.1 worse, with odds
    below ``K e**(-0.1 ε / 2Δ)`` < 1e-200. One second of slack covers rounding to the unit.
    """
    present = np.sort(_utc(values.dropna()))
    low, high = _utc(bounds[0]), _utc(bounds[1])
    edges = pd.date_range(low, high, periods=CELLS + 1)
    hours = pd.date_range(low.ceil("h"), high.floor("h"), freq="h")
    assert len(hours) <= 4 * CELLS < len(hours) * 60  # hours, not minutes, on these bounds
    candidates = edges.union(hours)
    at = candidates.to_numpy()
    below = np.searchsorted(present, at, side="left")
    at_or_below = np.searchsorted(present, at, side="right")
    target = q * len(present)
    score = np.maximum(below - target, target - at_or_below)
    best = candidates[score == score.min()]
    if bounds[0].tz is not None:
        best = best.tz_localize("UTC").tz_convert(bounds[0].tz)
    return best.min() - pd.Timedelta(seconds=1), best.max() + pd.Timedelta(seconds=1)


def _utc(stamps: Any) -> Any:
    """Instants as naive UTC datetimes (a Timestamp, or a Series as a numpy array)."""
    if isinstance(stamps, pd.Timestamp):
        return stamps if stamps.tz is None else stamps.tz_convert(None)
    if stamps.dt.tz is not None:
        stamps = stamps.dt.tz_convert(None)
    return stamps.to_numpy().astype("datetime64[ns]")


@pytest.mark.parametrize("tz", ZONES)
@pytest.mark.parametrize("unit", UNITS)
def test_mean_is_a_timestamp_in_the_columns_unit_and_zone(
    frame: Callable[..., pd.DataFrame], protect_seeded: Callable[..., Any], unit: str, tz: Any
) -> None:
    data = frame(unit, tz)
    priv = protect_seeded(data, epsilon=10 * EPSILON)
    released = priv["t"].dp.mean(bounds=_bounds(tz), epsilon=EPSILON)
    expected = data["t"].mean()
    _same_type(released, expected)
    # Centred-sum noise of scale (U - L)/2 / (ε/2) = 3.2e12 ns over 900 values: 30 scales
    # (probability e**-30) is 105 s; the count's noise is negligible.
    assert abs(released - expected) < pd.Timedelta(seconds=120)
    again = priv.dp.mean("t", bounds=_bounds(tz), epsilon=EPSILON)  # the DataFrame form
    _same_type(again, expected)
    assert abs(again - expected) < pd.Timedelta(seconds=120)


@pytest.mark.parametrize("tz", ZONES)
@pytest.mark.parametrize("unit", ["s", "ns"])
def test_quantiles_are_a_datetime_series_indexed_by_q(
    frame: Callable[..., pd.DataFrame], protect_seeded: Callable[..., Any], unit: str, tz: Any
) -> None:
    data = frame(unit, tz)
    priv = protect_seeded(data, epsilon=10 * EPSILON)
    levels = [0.1, 0.5, 0.9]
    released = priv["t"].dp.quantile(levels, bounds=_bounds(tz), epsilon=EPSILON, cells=CELLS)
    expected = data["t"].quantile(levels)
    assert released.dtype == expected.dtype
    assert list(released.index) == list(expected.index)
    assert released.name == expected.name
    for q, value in released.items():
        low, high = _between(data["t"], q, _bounds(tz))
        assert low <= value <= high, q
    single = priv.dp.quantile("t", 0.5, bounds=_bounds(tz), epsilon=EPSILON, cells=CELLS)
    _same_type(single, data["t"].quantile(0.5))
    median = priv["t"].dp.median(bounds=_bounds(tz), epsilon=EPSILON, cells=CELLS)
    _same_type(median, data["t"].median())
    low, high = _between(data["t"], 0.5, _bounds(tz))
    assert low <= median <= high


@pytest.mark.parametrize("tz", ZONES)
def test_intervals_are_timestamps_around_the_estimate(
    frame: Callable[..., pd.DataFrame], protect_seeded: Callable[..., Any], tz: Any
) -> None:
    data = frame("us", tz)
    priv = protect_seeded(data, epsilon=10 * EPSILON)
    for release in (
        lambda: priv["t"].dp.mean(bounds=_bounds(tz), epsilon=EPSILON, ci=0.95),
        lambda: priv["t"].dp.median(bounds=_bounds(tz), epsilon=EPSILON, ci=0.95),
        lambda: priv.dp.max("t", bounds=_bounds(tz), epsilon=EPSILON, ci=0.95),
    ):
        estimate = release()
        assert isinstance(estimate, Estimate)
        for end in estimate[:3]:
            _same_type(end, data["t"].mean())
        assert estimate.lower <= estimate.value <= estimate.upper
    table = priv["t"].dp.quantile([0.25, 0.75], bounds=_bounds(tz), epsilon=EPSILON, ci=0.9)
    assert list(table.columns) == ["t", "t_lower", "t_upper"]
    assert (table.dtypes == data["t"].quantile([0.25]).dtype).all()
    assert ((table["t_lower"] <= table["t"]) & (table["t"] <= table["t_upper"])).all()


@pytest.mark.parametrize("unit", UNITS)
def test_std_is_a_timedelta_like_pandas(
    frame: Callable[..., pd.DataFrame], protect_seeded: Callable[..., Any], unit: str
) -> None:
    data = frame(unit)
    priv = protect_seeded(data, epsilon=10 * EPSILON)
    released = priv["t"].dp.std(bounds=YEAR, epsilon=EPSILON)
    expected = data["t"].std()
    _same_type(released, expected)
    # Each moment gets ε/3: the squares' noise (scale h²·3/ε, h = half a year in ns) is a
    # 1e-6 share of n·var, the sum's less; 30 scales stay within a 1e-4 relative error.
    assert released / expected == pytest.approx(1, rel=1e-4)
    estimate = priv.dp.std("t", bounds=YEAR, epsilon=EPSILON, ci=0.95)
    assert estimate.lower <= estimate.value <= estimate.upper
    assert isinstance(estimate.lower, pd.Timedelta)


def test_timedelta_sum_mean_and_quantile(
    frame: Callable[..., pd.DataFrame], protect_seeded: Callable[..., Any]
) -> None:
    data = frame("us")
    priv = protect_seeded(data, epsilon=10 * EPSILON)
    total = priv["d"].dp.sum(bounds=DAY, epsilon=EPSILON)
    _same_type(total, data["d"].sum())
    # Laplace scale max(|L|, |U|)/ε = 8.6 s; 30 scales: 4.3 min; rounding: 1,000 × 1 µs.
    assert abs(total - data["d"].sum()) < pd.Timedelta(minutes=5)
    mean = priv.dp.mean("d", bounds=DAY, epsilon=EPSILON)
    _same_type(mean, data["d"].mean())
    assert abs(mean - data["d"].mean()) < pd.Timedelta(seconds=1)
    quantiles = priv["d"].dp.quantile([0.5], bounds=DAY, epsilon=EPSILON)
    assert quantiles.dtype == data["d"].quantile([0.5]).dtype
    # 1,000 distinct values 86 s apart on a grid of 21 s: the median is within a gap.
    assert abs(quantiles.iloc[0] - data["d"].median()) <= pd.Timedelta(seconds=2 * 86)


@pytest.mark.parametrize("tz", ZONES)
def test_min_and_max_lie_between_the_bounds_and_the_extremes(
    frame: Callable[..., pd.DataFrame], protect_seeded: Callable[..., Any], tz: Any
) -> None:
    data = frame("s", tz)
    priv = protect_seeded(data, epsilon=10 * EPSILON)
    bounds = _bounds(tz)
    low = priv["t"].dp.min(bounds=bounds, epsilon=EPSILON, cells=CELLS)
    high = priv.dp.max("t", bounds=bounds, epsilon=EPSILON, cells=CELLS)
    _same_type(low, data["t"].min())
    _same_type(high, data["t"].max())
    # Every edge with no value below (above) scores best: uniform on [L, min] ([max, U]).
    assert bounds[0] <= low <= data["t"].min()
    assert data["t"].max() < high <= bounds[1]
    assert _between(data["t"], 0, bounds)[0] <= low <= _between(data["t"], 0, bounds)[1]
    assert _between(data["t"], 1, bounds)[0] <= high <= _between(data["t"], 1, bounds)[1]
    numbers = priv["x"].dp.min(bounds=(0, 1000), epsilon=EPSILON)
    assert isinstance(numbers, float)
    assert numbers == 0.0


def test_groupby_mean_and_agg_give_datetime_columns(
    frame: Callable[..., pd.DataFrame], protect_seeded: Callable[..., Any]
) -> None:
    data = frame("us", "UTC")
    priv = protect_seeded(data, epsilon=10 * EPSILON)
    bounds = _bounds("UTC")
    grouped = priv.dp.groupby("g", keys=["a", "b"])
    means = grouped.mean("t", bounds=bounds, epsilon=EPSILON)
    expected = data.groupby("g")["t"].mean()
    assert means.dtype == expected.dtype
    assert list(means.index) == list(expected.index)
    assert means.index.name == expected.index.name
    # As for the ungrouped mean, 450 values per group: within 4 minutes.
    assert (abs(means - expected) < pd.Timedelta(minutes=4)).all()
    table = grouped.agg(
        m=("t", "median"), s=("t", "std"), lo=("t", "min"), n="count",
        bounds={"t": bounds}, epsilon=EPSILON, ci=0.9,
    )  # fmt: skip
    assert table["m"].dtype == table["m_lower"].dtype == expected.dtype
    assert table["lo"].dtype == expected.dtype
    assert table["s"].dtype == data.groupby("g")["t"].std().dtype
    assert table["n"].dtype == np.int64
    assert ((table["m_lower"] <= table["m"]) & (table["m"] <= table["m_upper"])).all()


def test_hidden_means_are_nat(
    frame: Callable[..., pd.DataFrame], protect_seeded: Callable[..., Any]
) -> None:
    """A group whose noisy count is below 1 gets NaT, as pandas gives for an empty group."""
    data = frame("us")
    priv = protect_seeded(data, epsilon=10 * EPSILON)
    means = priv.dp.groupby("g", keys=["a", "nobody"]).mean("t", bounds=YEAR, epsilon=EPSILON)
    assert means.dtype == data["t"].dtype
    assert pd.isna(means["nobody"])
    assert not pd.isna(means["a"])


def test_describe_of_a_datetime_column_reads_like_pandas(
    frame: Callable[..., pd.DataFrame], protect_seeded: Callable[..., Any]
) -> None:
    """Timestamps for the mean and percentiles, a Timedelta std, an integer count."""
    data = frame("us", "UTC")
    priv = protect_seeded(data, epsilon=10 * EPSILON)
    table = priv.dp.describe(bounds={"t": _bounds("UTC"), "x": (0, 1000)}, epsilon=EPSILON)
    expected = data["t"].describe()
    assert list(table.index) == ["count", "mean", "std", "25%", "50%", "75%"]
    assert table["t"].dtype == expected.dtype == object
    for row in ["mean", "25%", "50%", "75%"]:
        _same_type(table.loc[row, "t"], expected[row])
    assert isinstance(table.loc["std", "t"], pd.Timedelta)
    assert abs(table.loc["count", "t"] - expected["count"]) < 50  # scale < 1 at this ε
    assert table.loc["25%", "t"] <= table.loc["50%", "t"] <= table.loc["75%", "t"]
    assert isinstance(table.loc["mean", "x"], float)


def test_arrow_backed_datetimes_and_durations(protect_seeded: Callable[..., Any]) -> None:
    """``timestamp[us, tz][pyarrow]`` and ``duration[s][pyarrow]`` read like NumPy ones."""
    pa = pytest.importorskip("pyarrow")
    stamps = pd.Series(pd.date_range("2020-01-01", periods=900, freq="9h", tz="UTC"))
    stamps[::7] = pd.NaT
    data = pd.DataFrame({
        "t": stamps.astype(pd.ArrowDtype(pa.timestamp("us", tz="UTC"))),
        "d": pd.Series(pd.to_timedelta(np.arange(900), unit="s")).astype(
            pd.ArrowDtype(pa.duration("s"))
        ),
    })  # fmt: skip
    priv = protect_seeded(data, epsilon=10 * EPSILON)
    mean = priv["t"].dp.mean(bounds=_bounds("UTC"), epsilon=EPSILON)
    assert str(mean.tz) == "UTC"
    assert abs(mean - stamps.mean()) < pd.Timedelta(seconds=120)  # as for NumPy columns
    total = priv["d"].dp.sum(bounds=(pd.Timedelta(0), pd.Timedelta(hours=1)), epsilon=EPSILON)
    assert abs(total - pd.Timedelta(seconds=int(np.arange(900).sum()))) < pd.Timedelta(minutes=5)
