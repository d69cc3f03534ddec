"""Datetime columns in the table-shaped releases: lists of columns, grouped quantiles and
``describe``, ``crosstab`` and ``pivot_table`` (with margins) keep pandas' dtypes.

Noise is captured at 0 (the ``noise`` fixture), so shapes and dtypes are compared with the
pandas call, and values with the documented post-processing where it is simple.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

from .conftest import DAY, YEAR

PANDAS_3 = int(pd.__version__.split(".")[0]) >= 3

KEYS = {"g": ["a", "b"], "h": ["x", "y", "z", "w"]}


@pytest.fixture
def data(frame: Callable[..., pd.DataFrame]) -> pd.DataFrame:
    table = frame("us")
    return table.assign(h=["x", "y", "z", "w"] * (len(table) // 4))


def test_a_list_of_columns_is_a_series_like_pandas(
    data: pd.DataFrame, protect_seeded: Callable[..., Any], noise: Callable
) -> None:
    priv = protect_seeded(data, epsilon=10.0)
    with noise(priv):
        mixed = priv.dp.mean(["t", "x"], bounds={"t": YEAR, "x": (0, 1000)}, epsilon=1.0)
        times = priv.dp.median(["t", "d"], bounds={"t": YEAR, "d": DAY}, epsilon=1.0)
        levels = priv.dp.quantile(["t", "d"], [0.25, 0.75], bounds={"t": YEAR, "d": DAY},
                                  epsilon=1.0)  # fmt: skip
    expected = data[["t", "x"]].mean()
    assert mixed.dtype == expected.dtype == object
    assert isinstance(mixed["t"], pd.Timestamp)
    assert abs(mixed["t"] - expected["t"]) < pd.Timedelta(seconds=1)  # lattice rounding only
    assert isinstance(times["t"], pd.Timestamp)
    assert isinstance(times["d"], pd.Timedelta)
    assert levels.dtypes.to_dict() == data[["t", "d"]].quantile([0.25, 0.75]).dtypes.to_dict()
    assert (levels.loc[0.25] <= levels.loc[0.75]).all()


def test_grouped_quantiles_and_describe_keep_datetimes(
    data: pd.DataFrame, protect_seeded: Callable[..., Any], noise: Callable
) -> None:
    priv = protect_seeded(data, epsilon=10.0)
    grouped = priv.dp.groupby("g", keys=KEYS["g"])
    with noise(priv):
        quantiles = grouped.quantile([0.25, 0.5], "t", bounds=YEAR, epsilon=1.0)
        table = grouped.describe("t", bounds=YEAR, epsilon=1.0)
    expected = data.groupby("g")["t"].quantile([0.25, 0.5])
    assert quantiles.dtype == expected.dtype
    assert quantiles.index.equals(expected.index)
    assert table["mean"].dtype == table["50%"].dtype == data["t"].dtype
    assert table["std"].dtype == data.groupby("g")["t"].std().dtype
    assert (table["25%"] <= table["75%"]).all()


@pytest.mark.parametrize(
    ("values", "aggfunc", "bounds"),
    [("t", "mean", {"t": YEAR}), ("t", "std", {"t": YEAR}), ("d", "sum", {"d": DAY})],
)
def test_pivot_tables_with_margins_have_pandas_dtypes(
    data: pd.DataFrame, protect_seeded: Callable[..., Any], noise: Callable,
    values: str, aggfunc: str, bounds: dict,
) -> None:  # fmt: skip
    priv = protect_seeded(data, epsilon=10.0)
    with noise(priv):
        released = priv.dp.pivot_table(
            values=values, index="g", columns="h", aggfunc=aggfunc, keys=KEYS, bounds=bounds,
            epsilon=1.0, margins=True,
        )  # fmt: skip
    # pandas' own dtypes: the column's for a mean (a datetime) or a sum of durations, a
    # duration in the column's unit for a std. (pandas 2.2's pivot_table cannot compute a
    # datetime mean itself, so the rule is written out; pandas 3 is compared too.)
    unit = data[values].dtype.str[-3:-1]  # "<M8[us]" -> "us"
    want = data[values].dtype if aggfunc != "std" else np.dtype(f"timedelta64[{unit}]")
    assert set(released.dtypes) == {want}
    assert list(released.index) == ["a", "b", "All"]
    if PANDAS_3:
        expected = pd.pivot_table(data, values=values, index="g", columns="h", aggfunc=aggfunc,
                                  margins=True)  # fmt: skip
        assert released.dtypes.to_dict() == expected.dtypes.to_dict()
        assert list(released.index) == list(expected.index)
    if aggfunc == "sum":  # the margin is the sum of the released cells, exactly
        assert released.loc["All", "All"] == released.loc[["a", "b"], "All"].sum()


def test_crosstab_of_a_datetime_mean_with_intervals(
    data: pd.DataFrame, protect_seeded: Callable[..., Any], noise: Callable
) -> None:
    priv = protect_seeded(data, epsilon=10.0)
    with noise(priv):
        table = priv.dp.crosstab("g", "h", values="t", aggfunc="mean", keys=KEYS,
                                 bounds={"t": YEAR}, epsilon=1.0, ci=0.9)  # fmt: skip
    assert (table.dtypes == data["t"].dtype).all()
    assert table.shape == (2, 12)  # value, lower and upper for each of 4 columns
