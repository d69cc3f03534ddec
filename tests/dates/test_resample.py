"""``priv.dp.resample``: a group-by over public time bins, shaped as ``df.resample`` (issue 29).

Under zero noise every release equals what pandas computes on the same rows, with pandas'
index (the bins' labels, a DatetimeIndex with its freq, named after ``on``), when the data
span the public range; bins come from the range, never from the data.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

import pandas_dp  # noqa: F401  (registers the accessors)
from pandas_dp.errors import DPTypeError, DPValueError

START, END = pd.Timestamp("2024-01-01"), pd.Timestamp("2025-01-01")


def events(tz: str | None = None) -> pd.DataFrame:
    gen = np.random.default_rng(11)  # test data only, never noise
    seconds = gen.integers(0, int((END - START).total_seconds()), 3000)
    t = START + pd.to_timedelta(np.sort(seconds), unit="s")
    t = t.tz_localize(tz) if tz else t
    t = t.insert(0, (START if tz is None else START.tz_localize(tz)))  # the first instant
    x = gen.uniform(0, 100, len(t))
    return pd.DataFrame({"t": t, "x": x, "g": gen.integers(0, 2, len(t))})


def span(tz: str | None) -> tuple[pd.Timestamp, pd.Timestamp]:
    return (START, END) if tz is None else (START.tz_localize(tz), END.tz_localize(tz))


@pytest.mark.parametrize("tz", [None, "Europe/Paris"])
@pytest.mark.parametrize("freq", ["D", "W", "MS", "ME", "QS", "12h"])
def test_size_is_pandas_resample_size_under_zero_noise(
    freq: str, tz: str | None, noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    data = events(tz)
    priv = protect_seeded(data, epsilon=1.0)
    with noise(priv):
        released = priv.dp.resample(freq, on="t", range=span(tz)).size(epsilon=0.5)
    expected = data[data["t"] < span(tz)[1]].resample(freq, on="t").size()
    pd.testing.assert_series_equal(released, expected, check_names=False)
    assert released.index.name == "t"
    assert released.index.freq == expected.index.freq


def test_statistics_and_selection_match_pandas(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    data = events()
    priv = protect_seeded(data, epsilon=3.0)
    resampler = priv.dp.resample("MS", on="t", range=(START, END))
    expected = data.resample("MS", on="t")
    with noise(priv):
        sums = resampler["x"].sum(bounds=(0, 100), epsilon=1.0)
        table = resampler.agg(n="count", m=("x", "mean"), bounds={"x": (0, 100)}, epsilon=1.0)
    pd.testing.assert_series_equal(sums, expected["x"].sum(), rtol=1e-6)
    assert list(table.columns) == ["n", "m"]
    np.testing.assert_array_equal(table["n"].to_numpy(), expected.size().to_numpy())
    np.testing.assert_allclose(table["m"].to_numpy(), expected["x"].mean().to_numpy(), rtol=1e-6)
    assert table.index.equals(expected.size().index)


def test_one_release_is_charged_once_and_rows_outside_the_range_count_nowhere(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    data = events()
    priv = protect_seeded(data, epsilon=1.0)
    with noise(priv):
        first_half = priv.dp.resample("MS", on="t", range=(START, pd.Timestamp("2024-07-01")))
        counts = first_half.size(epsilon=0.25)
    assert len(counts) == 6
    assert counts.sum() == int((data["t"] < pd.Timestamp("2024-07-01")).sum())
    ledger = priv.dp.session.ledger
    assert ledger["epsilon"].tolist() == [0.25]
    assert ledger["groups"].tolist() == [6]


def test_intervals_come_with_the_labels() -> None:
    priv = events().dp.protect(epsilon=1.0)
    table = priv.dp.resample("QS", on="t", range=(START, END)).size(epsilon=0.5, ci=0.9)
    assert list(table.columns) == ["size", "size_lower", "size_upper"]
    assert table.index.freqstr == "QS-JAN"
    assert (table["size_lower"] <= table["size"]).all()


REFUSALS = {
    "no on": (lambda p: p.dp.resample("MS", range=(START, END)), DPValueError, "on="),
    "no range": (lambda p: p.dp.resample("MS", on="t"), DPValueError, "range=\\(start, end\\)"),
    "numbers": (
        lambda p: p.dp.resample("MS", on="x", range=(START, END)),
        DPTypeError,
        "bins time",
    ),
    "bad freq": (
        lambda p: p.dp.resample("often", on="t", range=(START, END)),
        DPValueError,
        "freq",
    ),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_refusals_name_the_fix_and_charge_nothing(
    case: str, charges_nothing: Callable[[Any], Any]
) -> None:
    call, error, text = REFUSALS[case]
    priv = events().dp.protect(epsilon=1.0)
    with charges_nothing(priv), pytest.raises(error, match=text):
        call(priv)
