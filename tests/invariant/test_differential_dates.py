"""The release invariant for datetime, timedelta and period columns (issue 15).

In the style of ``test_differential.py`` (whose runner this reuses): a frame ``D`` and its
neighbour ``D'`` (``D`` plus one adversarial row: NaT, far future, before the epoch, at the
ns limits, at and just beyond the bounds, another time zone, a tz-mixed object column) with
the same dtypes must raise alike, warn alike, and give pre-noise results within what one row
may change: counts by 1 in all, a timedelta sum by its sensitivity, and statistics inside
their bounds with at most one entry turning missing. The default run takes a stratified
sample (``grid.py``: at least one case per release and dtype), ``--full-grid`` every case;
``REFUSALS`` states which cases both neighbours refuse, and why.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
import pytest

from .grid import Refusal, assert_refusal, check_rules, expected, params
from .test_differential import BASE, Case, Outcome, _column, _run

YEAR = (pd.Timestamp("2020-01-01"), pd.Timestamp("2021-01-01"))
DAY = (pd.Timedelta(0), pd.Timedelta(days=1))
MONTHS = pd.period_range("2020-01", "2020-12", freq="M")

#: Adversarial instants for a datetime column.
INSTANTS: dict[str, Any] = {
    "NaT": pd.NaT,
    "far future": pd.Timestamp("2262-04-11"),
    "year 9999": pd.Timestamp("9999-12-31"),
    "pre-epoch": pd.Timestamp("1900-01-01"),
    "ns minimum": np.datetime64(-(2**63) + 1, "ns"),
    "lower bound": YEAR[0],
    "upper bound": YEAR[1],
    "just above": YEAR[1] + pd.Timedelta(1, unit="ns"),
    "just below": YEAR[0] - pd.Timedelta(1, unit="ns"),
    "Tokyo": pd.Timestamp("2020-06-01 09:00", tz="Asia/Tokyo"),
    "None": None,
}
INSTANT_DTYPES = ["datetime64[ns]", "datetime64[s]", "datetime64[us, UTC]", "object"]

#: Adversarial durations for a timedelta column.
DURATIONS: dict[str, Any] = {
    "NaT": pd.NaT,
    "largest": pd.Timedelta.max,
    "smallest": pd.Timedelta.min,
    "negative": pd.Timedelta(days=-3),
    "upper bound": DAY[1],
    "just above": DAY[1] + pd.Timedelta(1, unit="ns"),
}
DURATION_DTYPES = ["timedelta64[ns]", "timedelta64[s]"]


def _year(p: pd.DataFrame) -> tuple[Any, Any]:
    """The bounds in the column's zone awareness (read from the dtype: public)."""
    zone = getattr(p["t"].dtype, "tz", None)
    return YEAR if zone is None else (YEAR[0].tz_localize(zone), YEAR[1].tz_localize(zone))


INSTANT_RELEASES: dict[str, tuple[str, Callable[[pd.DataFrame], Any]]] = {
    "mean": ("stat", lambda p: p.dp.mean("t", bounds=_year(p), epsilon=1.0)),
    "quantiles": (
        "stat",
        lambda p: p.dp.quantile("t", [0.25, 0.5], bounds=_year(p), epsilon=1.0, cells=64),
    ),
    "median ci": (
        "stat",
        lambda p: p.dp.median("t", bounds=_year(p), epsilon=1.0, cells=64, ci=0.9),
    ),
    "std": ("stat", lambda p: p["t"].dp.std(bounds=_year(p), epsilon=1.0)),
    "min": ("stat", lambda p: p.dp.min("t", bounds=_year(p), epsilon=1.0, cells=64)),
    "histogram": ("count", lambda p: p["t"].dp.histogram(freq="QS", range=_year(p), epsilon=1.0)),
    "group agg": (
        "stat",
        lambda p: p.dp.groupby("g", keys=["a", "b"]).agg(
            m=("t", "mean"),
            hi=("t", "max"),
            q=("t", "median"),
            s=("t", "std"),
            n="count",
            bounds={"t": _year(p)},
            epsilon=1.0,
            ci=0.9,
        ),
    ),
    "describe": ("stat", lambda p: p.dp.describe(bounds={"t": _year(p)}, epsilon=1.0, cells=64)),
    "pivot": (
        "stat",
        lambda p: p.dp.pivot_table(
            values="t",
            index="g",
            aggfunc="mean",
            keys={"g": ["a", "b"]},
            bounds={"t": _year(p)},
            epsilon=1.0,
            margins=True,
        ),
    ),
    # Issue 41: bounds from the data: an origin (the median), then scans from it.
    "bounds": ("choice", lambda p: p.dp.bounds(["t"], epsilon=1.0)),
    "mean, bounds='auto'": ("choice", lambda p: p.dp.mean("t", bounds="auto", epsilon=1.0)),
    "months": (
        "count",
        lambda p: p.dp.groupby("m", keys=MONTHS).count(epsilon=1.0),
    ),
    "private months": (
        "count",
        lambda p: p.dp.groupby("m", selection="threshold").count(epsilon=5.0),
    ),
}

DURATION_RELEASES: dict[str, tuple[str, Callable[[pd.DataFrame], Any]]] = {
    "sum": ("sum", lambda p: p["d"].dp.sum(bounds=DAY, epsilon=1.0)),
    "mean": ("stat", lambda p: p.dp.mean("d", bounds=DAY, epsilon=1.0)),
    "agg ci": (
        "stat",
        lambda p: p.dp.agg(
            s=("d", "sum"),
            m=("d", "mean"),
            q=("d", "median"),
            bounds={"d": DAY},
            epsilon=1.0,
            ci=0.9,
            relative_error=True,
        ),
    ),
    "histogram": ("count", lambda p: p.dp.histogram("d", bins=6, range=DAY, epsilon=1.0)),
    "bounds": ("choice", lambda p: p["d"].dp.bounds(epsilon=1.0)),
    "median, bounds='auto'": ("choice", lambda p: p.dp.median("d", bounds="auto", epsilon=1.0)),
}


def _months(t: pd.Series) -> pd.Series:
    """The month of each instant (for period keys), NaT where there is none or no dtype."""
    try:
        naive = t.dt.tz_convert(None) if getattr(t.dtype, "tz", None) else t
        return naive.dt.to_period("M")
    except (AttributeError, TypeError, ValueError, OverflowError):
        return pd.Series(pd.NaT, index=t.index, dtype="period[M]")


def _aware(value: Any) -> Any:
    """A naive instant as UTC, for tz-aware columns (other values as they are)."""
    if isinstance(value, pd.Timestamp | np.datetime64) and not pd.isna(value):
        stamp = pd.Timestamp(value)
        return stamp if stamp.tz is not None else stamp.tz_localize("UTC")
    return value


def _cases() -> list[Case]:
    cases = []
    base_t = list(pd.date_range("2020-01-15", periods=BASE, freq="13D"))
    base_d = [pd.Timedelta(hours=h) for h in range(BASE)]
    groups = ["a", "b"] * (BASE // 2)
    for values, dtypes, releases, column in (
        (INSTANTS, INSTANT_DTYPES, INSTANT_RELEASES, "t"),
        (DURATIONS, DURATION_DTYPES, DURATION_RELEASES, "d"),
    ):
        base = base_t if column == "t" else base_d
        for value_name, value in values.items():
            for dtype in dtypes:
                start = base if "UTC" not in dtype else [b.tz_localize("UTC") for b in base]
                if dtype == "object":  # the tz-mixed object column
                    start = [b.tz_localize("UTC" if i % 2 else "Asia/Tokyo")
                             for i, b in enumerate(base)]  # fmt: skip
                extra = _aware(value) if "UTC" in dtype else value
                before_x, after_x = _column(start, dtype), _column([*start, extra], dtype)
                if before_x is None or after_x is None or str(before_x.dtype) != str(after_x.dtype):
                    continue
                before = pd.DataFrame({column: before_x, "g": groups})
                after = pd.DataFrame({column: after_x, "g": [*groups, "a"]})
                if column == "t":
                    before["m"], after["m"] = _months(before_x), _months(after_x)
                for release_name, (kind, release) in releases.items():
                    family = f"{column} {release_name}"
                    name = f"{family}-{value_name}-{dtype}"
                    case = Case(name, kind, release, before, after, family, value_name, dtype)
                    cases.append(replace(case, grid=column))
    return cases


#: Why both neighbours of a case are refused: every other case releases on both.
REFUSALS = [
    Refusal(
        lambda c: c.grid == "t" and c.dtype == "object" and "months" not in c.family,
        "DPTypeError",
        r"column 't' has dtype object; .*this release needs datetimes, timedeltas",
        "the tz-mixed object column is refused by its dtype (public) by every release that "
        "reads instants, before any value is read (counts by month read the month column)",
        never_runs=True,
    ),
]


def _stratum(case: Case) -> tuple[str, str]:
    return case.family, case.dtype


ALL = [replace(c, refusal=expected(REFUSALS, c)) for c in _cases()]
PARAMS = params(
    ALL, name=lambda c: c.name, stratum=_stratum, refused=lambda c: c.refusal is not None
)


def _numbers(result: Any) -> np.ndarray:
    """Every released number, datetimes and timedeltas as nanoseconds (NaT as NaN)."""
    if isinstance(result, pd.Series):
        result = result.to_frame()
    if isinstance(result, pd.DataFrame):
        return np.concatenate([_numbers(list(result[c])) for c in result.columns])
    items = list(result[:3]) if isinstance(result, tuple) else (
        result if isinstance(result, list) else [result]
    )  # fmt: skip
    out = []
    for item in items:
        if item is pd.NaT or item is None or (isinstance(item, float) and np.isnan(item)):
            out.append(np.nan)
        elif isinstance(item, pd.Timestamp):
            out.append(float(item.tz_convert(None).value if item.tz else item.value))
        elif isinstance(item, pd.Timedelta):
            out.append(float(item.value))
        else:
            out.append(float(item))
    return np.asarray(out, dtype=np.float64)


def _compare(case: Case, before: Outcome, after: Outcome) -> None:
    assert before.error == after.error, (case.name, before.text, after.text)
    assert before.warned == after.warned, case.name
    refusals = (before.error, before.text), (after.error, after.text)
    if assert_refusal(case.name, case.refusal, *refusals):  # as REFUSALS states
        return
    first, second = before.result, after.result
    if isinstance(first, pd.Series | pd.DataFrame):
        assert first.index.equals(second.index) or case.kind == "count", case.name
        assert str(getattr(first, "dtypes", None)) == str(getattr(second, "dtypes", None))
        shared = first.index.intersection(second.index)
        first, second = first.loc[shared], second.loc[shared]
    x, y = _numbers(first), _numbers(second)
    if case.kind == "count":
        assert np.abs(y - x).sum() <= 1, case.name
    elif case.kind == "sum":
        assert np.abs(y - x).sum() <= after.sensitivity * (1 + 1e-12), case.name
    else:
        assert np.count_nonzero(np.isfinite(x) != np.isfinite(y)) <= 1, case.name


@pytest.mark.parametrize("case", PARAMS)
def test_a_dated_frame_and_its_neighbour_look_alike(case: Case) -> None:
    _compare(case, _run(case.before, case.release), _run(case.after, case.release))


def test_the_dated_catalogue_is_wide() -> None:
    assert len(ALL) >= 300, len(ALL)
    names = {c.name.split("-", 1)[0] for c in ALL}
    assert names >= {f"t {r}" for r in INSTANT_RELEASES} | {f"d {r}" for r in DURATION_RELEASES}


def test_every_dated_release_runs_somewhere_and_every_refusal_rule_is_live() -> None:
    check_rules(ALL, REFUSALS, stratum=_stratum, release=lambda c: c.family)
