"""Errors that teach: time columns and time bounds get hints of their own (issue 15).

Every refusal happens before the data is read and charges nothing; its message names the
column, its dtype and what to pass, never a value of the data (two frames with the same
dtypes and different values give the same message), and never the ``pd.to_numeric`` hint.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest

from pandas_dp import DPTypeError, DPValueError

from .conftest import DAY, YEAR, make_frame

UTC_YEAR = (YEAR[0].tz_localize("UTC"), YEAR[1].tz_localize("UTC"))

CALLS: dict[str, tuple[Callable[[pd.DataFrame], Any], type, str]] = {
    "numbers for datetimes": (
        lambda p: p["t"].dp.mean(bounds=(0, 10**18), epsilon=0.5),
        DPTypeError,
        r"must be a Timestamp: column 't' holds datetimes \(datetime64\[ns\]\)",
    ),
    "numbers for timedeltas": (
        lambda p: p.dp.sum("d", bounds=(0, 86400), epsilon=0.5),
        DPTypeError,
        r"must be a Timedelta.*Give bounds as \('0 days', '30 days'\), or as pd\.Timedeltas",
    ),
    "timestamps for numbers": (
        lambda p: p.dp.mean("x", bounds=YEAR, epsilon=0.5),
        DPTypeError,
        "column 'x' holds numbers",
    ),
    "timedeltas for datetimes": (
        lambda p: p.dp.median("t", bounds=DAY, epsilon=0.5),
        DPTypeError,
        "must be a Timestamp",
    ),
    "aware bounds, naive column": (
        lambda p: p.dp.mean("t", bounds=UTC_YEAR, epsilon=0.5),
        DPTypeError,
        "has a time zone but column 't'",
    ),
    "naive bounds, aware column": (
        lambda p: p.dp.mean("z", bounds=YEAR, epsilon=0.5),
        DPTypeError,
        "tz='Europe/Paris'",
    ),
    "beyond the unit's range": (
        lambda p: p.dp.mean("t", bounds=(YEAR[0], pd.Timestamp("3000-01-01")), epsilon=0.5),
        DPValueError,
        r"out of the range datetime64\[ns\]",
    ),
    "NaT bound": (
        lambda p: p.dp.mean("t", bounds=(pd.NaT, YEAR[1]), epsilon=0.5),
        DPValueError,
        "NaT",
    ),
    "text pd.Timestamp cannot read": (
        lambda p: p.dp.mean("t", bounds=("2020-01-01", "2021-13-01"), epsilon=0.5),
        DPValueError,
        r"'2021-13-01' cannot be read as a date by pd\.Timestamp",
    ),
    "reversed": (
        lambda p: p.dp.mean("t", bounds=YEAR[::-1], epsilon=0.5),
        DPValueError,
        "lower < upper",
    ),
    "datetime sum": (
        lambda p: p["t"].dp.sum(bounds=YEAR, epsilon=0.5),
        DPTypeError,
        "points in time",
    ),
    "datetime var": (
        lambda p: p.dp.var("t", bounds=YEAR, epsilon=0.5),
        DPTypeError,
        "release std",
    ),
    "timedelta sem in agg": (
        lambda p: p.dp.agg(s=("d", "sem"), bounds={"d": DAY}, epsilon=0.5),
        DPTypeError,
        "time squared",
    ),
    "datetime sum in a group-by": (
        lambda p: p.dp.groupby("g", keys=["a"]).sum("t", bounds=YEAR, epsilon=0.5),
        DPTypeError,
        "points in time",
    ),
    "number fill": (
        lambda p: p.dp.mean("t", bounds=YEAR, fillna=0, epsilon=0.5),
        DPTypeError,
        "fillna must be a Timestamp",
    ),
    "timestamps as objects": (
        lambda p: p.dp.mean("o", bounds=UTC_YEAR, epsilon=0.5),
        DPTypeError,
        r"pd\.to_datetime\(\.\.\., utc=True\)",
    ),
    "relative error of a datetime": (
        lambda p: p.dp.agg(
            m=("t", "mean"), bounds={"t": YEAR}, epsilon=0.5, ci=0.9, relative_error=True
        ),
        DPValueError,
        "origin",
    ),
    "periods": (
        lambda p: p["m"].dp.median(bounds=YEAR, epsilon=0.5),
        DPTypeError,
        "to_timestamp",
    ),
}


def _frame(seed: int) -> pd.DataFrame:
    data = make_frame("ns")
    data["t"] = data["t"].sample(frac=1.0, random_state=seed).to_numpy()
    data["z"] = data["t"].dt.tz_localize("Europe/Paris")
    mixed = [pd.Timestamp("2020-06-01", tz="UTC"), pd.Timestamp("2020-06-01", tz="Asia/Tokyo")]
    data["o"] = pd.Series(mixed * (len(data) // 2), dtype=object)
    data["m"] = data["t"].dt.to_period("M")
    return data


@pytest.mark.parametrize(("call", "error", "match"), CALLS.values(), ids=CALLS.keys())
def test_time_mistakes_get_a_time_hint_and_cost_nothing(
    protect_seeded: Callable[..., Any], charges_nothing: Callable,
    call: Callable, error: type, match: str,
) -> None:  # fmt: skip
    messages = []
    for seed in (1, 2):  # the same dtypes, other values: the same message
        priv = protect_seeded(_frame(seed), epsilon=1.0)
        with charges_nothing(priv), pytest.raises(error, match=match) as caught:
            call(priv)
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    assert "to_numeric" not in messages[0] or "pd.to_datetime" in messages[0]


def test_a_timestamp_fill_imputes_and_counts_every_row(
    protect_seeded: Callable[..., Any], noise: Callable
) -> None:
    data = make_frame("ns")
    priv = protect_seeded(data, epsilon=1.0)
    fill = pd.Timestamp("2020-07-01")
    with noise(priv):
        released = priv.dp.mean("t", bounds=YEAR, fillna=fill, epsilon=0.5)
    expected = data["t"].fillna(fill).mean()
    # Noise captured at 0: only the lattice rounding (a 2**-36 share of the half-year) is left.
    assert abs(released - expected) < pd.Timedelta(seconds=1)
    assert "imputed" in priv.dp.session.ledger["note"].iloc[-1]
    labels = [m.label for m in priv.dp.session.releases[-1].measurements]
    assert labels == ["centred_sum(t)", "count"]  # with a fill, every row counts
