"""Group-by on periods (``dt.to_period``) over public Period keys (issue 15).

The table is indexed by a ``PeriodIndex`` like ``df.groupby(period_col).size()``; keys of
another type or frequency are refused before anything is read; periods chosen from the data
(DP partition selection) come back canonical, and an object column of periods of mixed
frequencies is counted without failing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

from pandas_dp import DPTypeError

MONTHS = pd.period_range("2020-01", "2020-12", freq="M")


def _monthly(frame: Callable[..., pd.DataFrame]) -> pd.DataFrame:
    data = frame("us")
    return data.assign(m=data["t"].dt.to_period("M"))


@pytest.mark.parametrize("keys", [MONTHS, list(MONTHS)], ids=["period_range", "list"])
def test_counts_by_month_are_indexed_like_pandas(
    frame: Callable[..., pd.DataFrame], protect_seeded: Callable[..., Any], noise: Callable,
    keys: Any,
) -> None:  # fmt: skip
    data = _monthly(frame)
    priv = protect_seeded(data, epsilon=10.0)
    with noise(priv):
        counts = priv.dp.groupby("m", keys=keys).count(epsilon=1.0)
        means = priv.dp.groupby("m", keys=keys).mean("x", bounds=(0, 1000), epsilon=1.0)
    expected = data.groupby("m").size()
    assert isinstance(counts.index, pd.PeriodIndex)
    assert counts.index.equals(expected.index)
    assert counts.index.name == expected.index.name == "m"
    assert counts.index.dtype == expected.index.dtype
    assert counts.tolist() == expected.tolist()
    assert means.index.equals(expected.index)
    assert np.allclose(means, data.groupby("m")["x"].mean())


def test_value_counts_and_private_periods(
    frame: Callable[..., pd.DataFrame], protect_seeded: Callable[..., Any], noise: Callable
) -> None:
    data = _monthly(frame)
    priv = protect_seeded(data, epsilon=100.0, delta=1e-6)
    with noise(priv):
        counted = priv["m"].dp.value_counts(keys=MONTHS, epsilon=1.0, sort=False)
        chosen = priv.dp.groupby("m", selection="threshold").count(
            epsilon=10.0
        )  # keys by partition selection
    assert counted.index.equals(MONTHS.rename("m"))
    assert counted.tolist() == data["m"].value_counts(sort=False).reindex(MONTHS).tolist()
    assert isinstance(chosen.index, pd.PeriodIndex)
    assert chosen.index.equals(MONTHS.rename("m"))  # 75 rows a month: every month passes


def test_periods_of_mixed_frequencies_in_an_object_column_are_counted(
    protect_seeded: Callable[..., Any], noise: Callable
) -> None:
    """Canonical Periods are kept as they are; ordering mixed frequencies cannot fail."""
    values = [pd.Period("2020-01", "M")] * 60 + [pd.Period("2020-01-01", "D")] * 60
    priv = protect_seeded(pd.DataFrame({"p": pd.Series(values, dtype=object)}), epsilon=100.0,
                          delta=1e-6)  # fmt: skip
    with noise(priv):
        chosen = priv.dp.groupby("p", selection="threshold").count(epsilon=10.0)
    assert sorted(map(str, chosen.index)) == ["2020-01", "2020-01-01"]
    assert chosen.tolist() == [60, 60]


WRONG_KEYS = {
    "days for months": (pd.period_range("2020-01-01", periods=3, freq="D"), "frequency M"),
    "strings": (["2020-01", "2020-02"], "give keys as Periods"),
    "timestamps": (pd.date_range("2020-01-01", periods=2, freq="MS"), "give keys as Periods"),
    "numbers": ([1, 2], "give keys as Periods"),
}


@pytest.mark.parametrize(("keys", "match"), WRONG_KEYS.values(), ids=WRONG_KEYS.keys())
def test_keys_that_cannot_match_a_period_column_are_refused(
    frame: Callable[..., pd.DataFrame], protect_seeded: Callable[..., Any],
    charges_nothing: Callable, keys: Any, match: str,
) -> None:  # fmt: skip
    priv = protect_seeded(_monthly(frame), epsilon=1.0)
    with charges_nothing(priv), pytest.raises(DPTypeError, match=match) as caught:
        priv.dp.groupby("m", keys=keys).count(epsilon=0.5)
    assert "period_range('2020-01', '2020-12', freq='M')" in str(caught.value)


def test_a_period_column_is_not_summed(
    frame: Callable[..., pd.DataFrame],
    protect_seeded: Callable[..., Any],
    charges_nothing: Callable,
) -> None:
    priv = protect_seeded(_monthly(frame), epsilon=1.0)
    with charges_nothing(priv), pytest.raises(DPTypeError, match="to_timestamp"):
        priv.dp.mean("m", bounds=(0, 1), epsilon=0.5)


def test_grouping_by_a_period_series_like_pandas(
    frame: Callable[..., pd.DataFrame], protect_seeded: Callable[..., Any], noise: Callable
) -> None:
    """``df.groupby(df.t.dt.to_period("M"))``: the Series is the key, named after it."""
    data = frame("us")
    priv = protect_seeded(data, epsilon=10.0)
    with noise(priv):
        counts = priv.dp.groupby(priv["t"].dt.to_period("M"), keys=MONTHS).count(epsilon=1.0)
    expected = data.groupby(data["t"].dt.to_period("M")).size()
    assert counts.index.equals(expected.index)
    assert counts.index.name == expected.index.name == "t"
    assert counts.tolist() == expected.tolist()
