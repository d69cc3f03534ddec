"""Bounds of date and duration columns from the data (issue 41): ``bounds`` and ``bounds="auto"``.

Durations scan the magnitude lattice in nanoseconds, from 0 outwards, as numbers do; their
ends are Timedeltas rounded outwards to the column's unit. Dates have no public point to scan
from, so a third of the bounds' ε releases each date column's median over the whole range
of ``datetime64[ns]`` (the *origin*, public once released), and the rest scans the durations
from it. Checked here:

- zero noise: the release equals its steps done by hand (the median, the shift, the
  duration's bounds), and the bounds hold the 0.1% and 99.9% quantiles;
- one ledger row and one charge, ``bounds="auto"`` on means and medians of dates included;
- neighbours holding adversarial dates (NaT, year 1, year 9999, the ends of the ns range,
  other units and zones) give the same dtypes and never an error: every shift is clipped in
  whole ticks of the column's unit, so no arithmetic can overflow;
- refusals before any charge.
"""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import pandas_dp
from pandas_dp.api.queries.ungrouped import ORIGIN_SHARE
from pandas_dp.errors import DPValueError

EPSILON = 30.0  # resolves the 0.1% and 99.9% quantiles of 20,000 rows with the noise at 0


def dates(n: int = 20_000, unit: str = "ns", tz: str | None = None) -> pd.DataFrame:
    gen = np.random.default_rng(43)  # test data only, never noise
    start = pd.Timestamp("2024-01-01", tz=tz)
    stamps = start + pd.to_timedelta(gen.normal(0, 30, n).round(4), unit="D")
    return pd.DataFrame({
        "t": pd.Series(stamps).dt.as_unit(unit),
        "d": pd.to_timedelta(gen.lognormal(6, 1, n).round(), unit="s"),
        "x": gen.normal(0, 1, n),
    })  # fmt: skip


@pytest.mark.parametrize(("unit", "tz"), [("ns", None), ("s", "Europe/Paris")])
def test_date_bounds_equal_their_steps_by_hand(unit: str, tz: str | None, protect_seeded, noise):
    frame = dates(unit=unit, tz=tz)
    auto = protect_seeded(frame, epsilon=100.0)
    with noise(auto):
        table = auto.dp.bounds(["t", "x"], epsilon=EPSILON)
    manual = protect_seeded(frame, epsilon=100.0)
    span = (pd.Timestamp.min.ceil("D").tz_localize(tz), pd.Timestamp.max.floor("D").tz_localize(tz))
    with noise(manual):
        origin = manual.dp.quantile("t", 0.5, bounds=span, epsilon=EPSILON * ORIGIN_SHARE)
        origin = pd.Timestamp(origin).as_unit(unit)
        moved = manual.assign(t=manual["t"] - origin)
        shifted = moved.dp.bounds(["t", "x"], epsilon=EPSILON * (1 - ORIGIN_SHARE))
    assert table.loc["t", "lower"] == origin + shifted.loc["t", "lower"]
    assert table.loc["t", "upper"] == origin + shifted.loc["t", "upper"]
    assert table.loc["x"].tolist() == shifted.loc["x"].tolist()
    assert table.loc["t", "lower"] <= frame["t"].quantile(0.001)
    assert frame["t"].quantile(0.999) <= table.loc["t", "upper"]
    spread = frame["t"].max() - frame["t"].min()
    assert table.loc["t", "upper"] - table.loc["t", "lower"] < 2 * spread
    assert table.loc["t", "lower"].unit == unit
    assert str(table.loc["t", "lower"].tz) == str(tz)
    (row,) = auto.dp.session.releases
    assert row.cost.epsilon == Fraction(EPSILON).limit_denominator()
    assert row.asked == f"epsilon={EPSILON:g}"
    assert row.note.startswith("a date's origin: 0.333 of ε on bounds released from the data")
    assert [m.mechanism for m in row.measurements].count("sparse_vector") == 4


def test_duration_bounds_are_timedeltas_rounded_outwards(protect_seeded, noise) -> None:
    frame = dates()
    priv = protect_seeded(frame, epsilon=100.0)
    with noise(priv):
        lower, upper = priv["d"].dp.bounds(epsilon=EPSILON)
    assert isinstance(lower, pd.Timedelta)
    assert isinstance(upper, pd.Timedelta)
    assert lower == pd.Timedelta(0)  # durations here are positive: the scan stops at 0
    assert frame["d"].quantile(0.999) <= upper < 2 * frame["d"].max()
    assert upper.unit == frame["d"].dt.unit
    assert upper == upper.ceil(pd.Timedelta(1, unit=upper.unit))  # whole units of the column


@pytest.mark.parametrize("how", ["mean", "median"])
def test_auto_bounds_on_dates(how: str, protect_seeded, noise) -> None:
    frame = dates()
    auto = protect_seeded(frame, epsilon=100.0)
    with noise(auto):
        ours = getattr(auto.dp, how)("t", bounds="auto", epsilon=EPSILON)
    manual = protect_seeded(frame, epsilon=100.0)
    with noise(manual):
        table = manual.dp.bounds(["t"], epsilon=EPSILON / 5)
        theirs = getattr(manual.dp, how)("t", bounds=table, epsilon=EPSILON * 4 / 5)
    assert ours == theirs
    truth = getattr(frame["t"], how)()
    assert abs(ours - truth) < pd.Timedelta(hours=12)
    (row,) = auto.dp.session.releases
    assert row.asked == f"epsilon={EPSILON:g}, bounds='auto'"
    assert row.note.startswith("bounds='auto': 0.2 of ε on bounds released from the data (t: [")
    first, second = manual.dp.session.releases
    assert row.cost == first.cost + second.cost
    assert row.measurements == first.measurements + second.measurements


def test_a_preview_lists_the_origin_the_scans_and_the_statistic(charges_nothing) -> None:
    priv = dates(2_000).dp.protect(epsilon=1.0)
    with charges_nothing(priv):
        shown = priv.dp.preview.mean("t", bounds="auto", epsilon=0.9)
    assert shown.epsilon == pytest.approx(0.9)
    table = shown.table
    assert table.loc[table["how"] == "bounds", "epsilon"].sum() == pytest.approx(0.12)
    assert table.loc[table["how"] == "quantile", "epsilon"].sum() == pytest.approx(0.06)


#: Adversarial dates, each added to a copy of D in the column's unit.
ODD = {
    "NaT": None,
    "year 1": "0001-01-01",
    "year 9999": "9999-12-31",
    "ns max": "2262-04-11 23:47:16",
    "ns min": "1677-09-21 00:12:44",
    "far from the origin": "2200-01-01",
}


@pytest.mark.parametrize("unit", ["s", "ns"])
def test_neighbours_with_adversarial_dates_agree_and_never_raise(unit: str) -> None:
    base = dates(400, unit=unit)[["t"]]
    outcomes = []
    for name, value in ODD.items():
        if unit == "ns" and value in ("0001-01-01", "9999-12-31"):
            continue  # not a datetime64[ns]
        odd = pd.Series([np.datetime64(value, unit) if value else np.datetime64("NaT", unit)])
        frame = pd.concat([base, pd.DataFrame({"t": odd.astype(f"datetime64[{unit}]")})])
        frame = frame.reset_index(drop=True)
        priv = frame.dp.protect(epsilon=1e6)
        found = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
            for _ in range(5):  # real noise: several draws, every one must succeed
                table = priv.dp.bounds(["t"], epsilon=1.0)
                mean = priv.dp.mean("t", bounds="auto", epsilon=1.0)
                found.append((str(table.dtypes.tolist()), type(table.iloc[0, 0]).__name__,
                              table.iloc[0, 0].unit, type(mean).__name__, mean.unit))  # fmt: skip
        outcomes.append((name, set(found)))
    assert all(o[1] == outcomes[0][1] for o in outcomes), outcomes


REFUSALS = {
    "lower= with a date": (lambda p: p.dp.bounds(["t"], epsilon=1.0, lower=0), "lower= and upper="),
    "rho": (lambda p: p.dp.bounds(["t"], rho=0.1), "epsilon="),
}


@pytest.mark.parametrize("name", list(REFUSALS))
def test_refusals_charge_nothing(name: str, charges_nothing) -> None:
    call, match = REFUSALS[name]
    priv = dates(100).dp.protect(epsilon=1.0, delta=1e-6, accounting="zcdp")
    with charges_nothing(priv), pytest.raises(DPValueError, match=match):
        call(priv)
