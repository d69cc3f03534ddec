"""The release invariant, tested differentially: a frame and its neighbour (issue 13).

For every release function and a catalogue of adversarial values and dtypes, a frame ``D``
and its neighbour ``D'`` (``D`` plus one adversarial row; same columns, same dtypes, same
arguments, so validation sees the same public inputs) must

- raise the same exception type, or both succeed;
- emit the same warnings;
- give pre-noise results (noise captured at 0) that differ by at most what one row may
  change: counts by 1 in all (L1), sums by the charged sensitivity, statistics stay inside
  their bounds, and released keys keep one representation.

The adversarial key row is added last and, in a second neighbour, first (``pd.factorize``
keeps the first representation it sees). ``CASES`` (module level) is how many (function,
value, dtype, position) cases the catalogue holds; the default run takes a stratified sample
(``grid.py``: at least one case per release and dtype), ``--full-grid`` all of them. A case
whose neighbours are both refused compares nothing: ``REFUSALS`` states which are, and why.
"""

from __future__ import annotations

import datetime
import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd
import pytest

import pandas_dp
from pandas_dp.testing import capture_noise

from .grid import Refusal, assert_refusal, check_rules, expected, params

BOUNDS = (0.0, 100.0)
BASE = 24  # rows of D

# --- the catalogue ------------------------------------------------------------------------

#: Adversarial numbers for a value column, with the dtypes each is tried in.
NUMBERS: dict[str, Any] = {
    "+0": 0.0,
    "-0": -0.0,
    "NaN": np.nan,
    "+inf": np.inf,
    "-inf": -np.inf,
    "huge": 1e308,
    "-huge": -1e308,
    "lower bound": BOUNDS[0],
    "upper bound": BOUNDS[1],
    "just above upper": float(np.nextafter(BOUNDS[1], np.inf)),
    "just below lower": float(np.nextafter(BOUNDS[0], -np.inf)),
    "2**6 edge": float(np.nextafter(64.0, 0.0)),
    "2**62": 2**62,
    "-2**63": -(2**63),
    "missing": None,
}
NUMBER_DTYPES = ["float64", "Float64", "Int64", "int64", "object", "int64[pyarrow]", "float32"]

#: Adversarial values for a key column (object dtype unless said otherwise).
KEYS: dict[str, Any] = {
    "-0.0": -0.0,
    "True": True,
    "1": 1,
    "1.0": 1.0,
    "'1'": "1",
    "list": [1],
    "dict": {"a": 1},
    "set": {1},
    "tuple": (1, 2),
    "Decimal 1.10": Decimal("1.10"),
    "Decimal NaN": Decimal("NaN"),
    "Decimal sNaN": Decimal("sNaN"),
    "tz Paris": pd.Timestamp("2020-01-01 13:00", tz="Europe/Paris"),
    "tz UTC": pd.Timestamp("2020-01-01 12:00", tz="UTC"),
    "date": datetime.date(2020, 1, 1),
    "None": None,
    "NA": pd.NA,
    "np.str_ a": np.str_("a"),
    "a": "a",
    "NaN": np.nan,
    "object()": object(),
}
KEY_DTYPES = ["object", "string", "category"]

# --- the release functions ------------------------------------------------------------------

Release = Callable[[pd.DataFrame], Any]
KEY_SET = ["a", "b", 1, 0.0]

VALUE_RELEASES: dict[str, tuple[str, Release]] = {
    "count": ("count", lambda p: p.dp.count(epsilon=1.0)),
    "sum": ("sum", lambda p: p.dp.sum("x", bounds=BOUNDS, epsilon=1.0)),
    "mean": ("stat", lambda p: p.dp.mean("x", bounds=BOUNDS, epsilon=1.0)),
    "var": ("stat", lambda p: p.dp.var("x", bounds=BOUNDS, epsilon=1.0)),
    "median": ("stat", lambda p: p.dp.median("x", bounds=BOUNDS, epsilon=1.0, cells=64)),
    "median ci": (
        "stat",
        lambda p: p.dp.median("x", bounds=BOUNDS, epsilon=1.0, cells=64, ci=0.9),
    ),
    "agg ci": (
        "stat",
        lambda p: p.dp.agg(
            n="count",
            s=("x", "sum"),
            m=("x", "mean"),
            q=("x", "median"),
            bounds={"x": BOUNDS},
            epsilon=1.0,
            ci=0.9,
            relative_error=True,
        ),
    ),
    "agg": (
        "stat",
        lambda p: p.dp.agg(
            n="count", s=("x", "sum"), m=("x", "mean"), bounds={"x": BOUNDS}, epsilon=1.0
        ),
    ),
    "histogram": ("count", lambda p: p.dp.histogram("x", [0, 10, 50, 100], epsilon=1.0)),
    # bounds released from the data first: the statistic's bounds depend on the data, so the
    # answers are compared by type, shape and dtypes
    "mean, bounds='auto'": ("choice", lambda p: p.dp.mean("x", bounds="auto", epsilon=1.0)),
    "group mean, bounds='auto'": (
        "choice",
        lambda p: p.dp.groupby("g", keys=["a", "b"]).mean("x", bounds="auto", epsilon=1.0),
    ),
    "histogram, range='auto'": (
        "choice",
        lambda p: p.dp.histogram("x", bins=4, range="auto", epsilon=1.0),
    ),
    "pivot_table, bounds='auto'": (
        "choice",
        lambda p: p.dp.pivot_table(
            values="x", index="g", aggfunc="sum", keys={"g": ["a", "b"]}, bounds="auto",
            epsilon=1.0,
        ),
    ),
    # Issue 41: bounds from the data (lattice points: compared by type, index and dtypes).
    "bounds": ("choice", lambda p: p.dp.bounds(["x"], epsilon=1.0)),
    "series bounds": ("choice", lambda p: p["x"].dp.bounds(epsilon=1.0, lower=0)),
    "series sum": ("sum", lambda p: p["x"].dp.sum(bounds=BOUNDS, epsilon=1.0)),
    "series count": ("count", lambda p: p["x"].dp.count(epsilon=1.0)),
    "count by value": (  # integer columns against integer keys: codes by table lookup
        "count",
        lambda p: p.dp.groupby("x", keys=list(range(90))).count(epsilon=1.0),
    ),
    "group sum": (
        "sum",
        lambda p: p.dp.groupby("g", keys=["a", "b"]).sum("x", bounds=BOUNDS, epsilon=1.0),
    ),
    "group mean": (
        "stat",
        lambda p: p.dp.groupby("g", keys=["a", "b"]).mean("x", bounds=BOUNDS, epsilon=1.0),
    ),
    # Issue 15's idioms.
    "nunique": ("count", lambda p: p["x"].dp.nunique(epsilon=1.0)),
    "group nunique": (
        "count", lambda p: p.dp.groupby("g", keys=["a", "b"])["x"].nunique(epsilon=1.0)
    ),
    "histogram bins=3": ("count", lambda p: p["x"].dp.histogram(3, range=BOUNDS, epsilon=1.0)),
    "mean of a list": (
        "stat", lambda p: p.dp.mean(["x", "x2"], bounds={"x": BOUNDS, "x2": BOUNDS}, epsilon=1.0)
    ),
    "group median min_count": (
        "stat",
        lambda p: p.dp.groupby("g", keys=["a", "b"])["x"].median(
            bounds=BOUNDS, epsilon=1.0, cells=64, min_count=1
        ),
    ),
    "group agg dict": (
        "stat",
        lambda p: p.dp.groupby("g", keys=["a", "b"]).agg(
            {"x": ["sum", "mean", "std"]}, bounds=BOUNDS, epsilon=1.0
        ),
    ),
    "pivot mean margins": (
        "stat",
        lambda p: p.dp.pivot_table("x", "g", keys={"g": ["a", "b"]}, margins=True,
                                   bounds=BOUNDS, epsilon=1.0),
    ),
    "tables binned": (
        "tables",
        lambda p: _flat(
            p.dp.tables(
                [["x"], ["x", "g"]],
                keys={"g": ["a", "b"]},
                bins={"x": [0, 10, 50, 100]},
                epsilon=1.0,
            )
        ),
    ),
}  # fmt: skip


def _flat(tables: dict[Any, Any]) -> pd.Series:
    """All tables of a ``tables`` release as one Series of cells (table, cell) -> count."""
    cells = {
        (str(name), str(key)): float(value)
        for name, table in tables.items()
        for key, value in (
            table.stack(future_stack=True) if isinstance(table, pd.DataFrame) else table
        ).items()
    }
    return pd.Series(cells, dtype=np.float64)


#: A public lookup table keyed by the same keys (its integer column widens in a left join).
PUBLIC_KEYS = pd.DataFrame(
    {"k": KEY_SET, "label": ["A", "B", "C", "D"], "n": [10, 20, 30, 40]}, dtype=object
).astype({"n": "int64"})
LABELS = ["A", "B", "C", "D"]

KEY_RELEASES: dict[str, tuple[str, Release]] = {
    "group count": ("count", lambda p: p.dp.groupby("k", keys=KEY_SET).count(epsilon=1.0)),
    "group mean": (
        "stat",
        lambda p: p.dp.groupby("k", keys=KEY_SET).mean("x", bounds=BOUNDS, epsilon=1.0),
    ),
    "private keys": (
        "count",
        lambda p: p.dp.groupby("k", selection="threshold").count(epsilon=5.0),
    ),
    "optimal keys": (
        "count",
        lambda p: p.dp.groupby("k", selection="optimal").count(epsilon=5.0),
    ),
    "value_counts": (
        "count",
        lambda p: p["k"].dp.value_counts(keys=KEY_SET, epsilon=1.0, sort=False),
    ),
    "private value_counts": (
        "count",
        lambda p: p["k"].dp.value_counts(epsilon=5.0, sort=False, selection="threshold"),
    ),
    "mode": ("choice", lambda p: p["k"].dp.mode(candidates=KEY_SET, epsilon=1.0)),
    "two keys": (
        "count",
        lambda p: p.dp.groupby(["k", "g"], keys={"k": KEY_SET, "g": ["a", "b"]}).count(epsilon=1.0),
    ),
    "crosstab": (
        "count",
        lambda p: p.dp.crosstab("k", "g", keys={"k": KEY_SET, "g": ["a", "b"]}, epsilon=1.0),
    ),
    "crosstab margins": (  # a row is in a cell and three margins: compared as statistics
        "stat",
        lambda p: p.dp.crosstab(
            "k", "g", keys={"k": KEY_SET, "g": ["a", "b"]}, margins=True, epsilon=1.0
        ),
    ),
    "value_counts dropna=False": (
        "count",
        lambda p: p["k"].dp.value_counts(keys=KEY_SET, dropna=False, epsilon=1.0, sort=False),
    ),
    "group value_counts": (
        "count",
        lambda p: p.dp.groupby("g", keys=["a", "b"])["k"].value_counts(
            keys=KEY_SET, epsilon=1.0, sort=False
        ),
    ),
    "nunique of keys": ("count", lambda p: p["k"].dp.nunique(epsilon=1.0)),
    "tables": (
        "tables",
        lambda p: _flat(
            p.dp.tables([["k", "g"], ["g"]], keys={"k": KEY_SET, "g": ["a", "b"]}, epsilon=1.0)
        ),
    ),
    "synthesize": (  # random rows: compared by type, shape and dtypes
        "choice",
        lambda p: p.dp.synthesize(
            ["k", "g"], keys={"k": KEY_SET, "g": ["a", "b"]}, epsilon=1.0, rows=40
        ),
    ),
    "synthesize, AIM": (
        "choice",
        lambda p: p.dp.synthesize(
            ["k", "g"], keys={"k": KEY_SET, "g": ["a", "b"]}, epsilon=1.0, rows=40, method="aim"
        ),
    ),
    "merge, then count by a public column": (
        "count",
        lambda p: (
            p.dp.merge(PUBLIC_KEYS, on="k").dp.groupby("label", keys=LABELS).count(epsilon=1.0)
        ),
    ),
    "left merge, then sum of a public column": (
        "sum",
        lambda p: p.dp.merge(PUBLIC_KEYS, on="k", how="left").dp.sum(
            "n", bounds=BOUNDS, epsilon=1.0
        ),
    ),
    "hierarchy": (  # consistent counts are post-processed: compared as statistics
        "stat",
        lambda p: p.dp.hierarchy(["g", "k"], keys={"a": KEY_SET, "b": KEY_SET}).count(epsilon=1.0),
    ),
}


def _column(values: list[Any], dtype: str) -> pd.Series | None:
    """The values in ``dtype``, or None when the dtype cannot hold them (no such case)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if dtype in ("object",):
                return pd.Series(values, dtype=object)
            series = pd.Series(pd.array(values, dtype=dtype))
    except (TypeError, ValueError, OverflowError, ImportError):
        return None
    except Exception:  # pyarrow raises its own errors for values it cannot hold
        return None
    held = series.tolist()[-1]
    wanted = values[-1]
    same = (pd.isna(held) and pd.isna(wanted)) if _missing(wanted) else held == wanted
    return series if same else None  # silently converted: not the adversarial value


def _missing(value: Any) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


@dataclass(frozen=True)
class Case:
    name: str
    kind: str
    release: Release
    before: pd.DataFrame
    after: pd.DataFrame
    family: str = ""  #: the release's name in its catalogue
    value: str = ""  #: the adversarial value's name
    dtype: str = ""  #: the adversarial column's dtype
    grid: str = ""  #: which catalogue ("value", "key", ...)
    refusal: Refusal | None = None  #: why both neighbours are refused, if they are


def _value_cases() -> list[Case]:
    cases = []
    base = [float(i % 90) for i in range(BASE)]
    for value_name, value in NUMBERS.items():
        for dtype in NUMBER_DTYPES:
            before_x = _column(base, dtype)
            after_x = _column([*base, value], dtype)
            if before_x is None or after_x is None or str(before_x.dtype) != str(after_x.dtype):
                continue
            groups = ["a", "b"] * (BASE // 2)
            before = pd.DataFrame({"x": before_x, "g": groups, "x2": 5.0})
            after = pd.DataFrame({"x": after_x, "g": [*groups, "a"], "x2": 5.0})
            for release_name, (kind, release) in VALUE_RELEASES.items():
                name = f"{release_name}-{value_name}-{dtype}"
                case = Case(name, kind, release, before, after, release_name, value_name, dtype)
                cases.append(replace(case, grid="value"))
    return cases


def _key_cases() -> list[Case]:
    cases = []
    base = ["a", "b", "a", 1] * (BASE // 4) * 8  # private keys need some rows per key
    rows = len(base)
    for value_name, value in KEYS.items():
        for dtype in KEY_DTYPES:
            before_k = _column(base, dtype)
            after_k = _column([*base, value], dtype)
            if before_k is None or after_k is None or str(before_k.dtype) != str(after_k.dtype):
                continue
            groups = ["a", "b"] * (rows // 2)
            before = pd.DataFrame({"k": before_k, "g": groups, "x": 5.0})
            after = pd.DataFrame({"k": after_k, "g": [*groups, "a"], "x": 5.0})
            first = after.iloc[[-1, *range(rows)]].reset_index(drop=True)  # the row comes first
            for release_name, (kind, release) in KEY_RELEASES.items():
                for where, neighbour in (("last", after), ("first", first)):
                    name = f"{release_name}-{value_name}-{dtype}-{where}"
                    case = Case(name, kind, release, before, neighbour, release_name, value_name)
                    cases.append(replace(case, dtype=dtype, grid="key"))
    return cases


#: Releases that count rows or distinct values, and so read a column of any dtype.
ANY_DTYPE = ("count", "series count", "count by value", "nunique", "group nunique")

#: Why both neighbours of a case are refused: every other case releases on both.
REFUSALS = [
    Refusal(
        lambda c: c.grid == "value" and c.dtype == "object" and c.family not in ANY_DTYPE,
        "DPTypeError",
        r"column 'x' has dtype object; .*this release needs .*int, float or bool",
        "a release that reads numbers refuses an object column by its dtype (public), "
        "before any value is read, whatever the adversarial value",
        never_runs=True,
    ),
]


def _stratum(case: Case) -> tuple[str, str, str]:
    return case.grid, case.family, case.dtype


ALL = [replace(c, refusal=expected(REFUSALS, c)) for c in _value_cases() + _key_cases()]
CASES = len(ALL)
PARAMS = params(
    ALL, name=lambda c: c.name, stratum=_stratum, refused=lambda c: c.refusal is not None
)


# --- running and comparing -------------------------------------------------------------------


@dataclass
class Outcome:
    error: str | None
    warned: list[tuple[str, str]]
    result: Any = None
    sensitivity: float = 0.0
    text: str = ""  #: the refusal's message


def _run(frame: pd.DataFrame, release: Release) -> Outcome:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
        priv = frame.dp.protect(epsilon=100.0, delta=1e-6)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with capture_noise(priv):
                result = release(priv)
        except Exception as error:  # the type is what is compared
            return Outcome(type(error).__name__, _warnings(caught), text=str(error))
    records = priv.dp.session.releases
    sensitivity = max(
        (m.sensitivity * 2.0**m.exponent for r in records for m in r.measurements), default=0.0
    )
    return Outcome(None, _warnings(caught), result, sensitivity)


def _warnings(caught: list[warnings.WarningMessage]) -> list[tuple[str, str]]:
    # Left out: the seeded-test warning, and NoiseDominatedWarning, which is post-processing
    # of the released (here noise-free) values: a neighbour's count may cross its threshold.
    ignored = (pandas_dp.PrivacyLeakWarning, pandas_dp.NoiseDominatedWarning)
    return [
        (w.category.__name__, str(w.message)) for w in caught if not issubclass(w.category, ignored)
    ]


def _signature(index: pd.Index) -> list[tuple[str, str]]:
    return [(type(k).__name__, repr(k)) for k in index]


def _dtypes(result: pd.Series | pd.DataFrame) -> Any:
    return result.dtypes if isinstance(result, pd.DataFrame) else result.dtype


def _numbers(result: Any) -> np.ndarray:
    if isinstance(result, pd.DataFrame | pd.Series):
        return np.asarray(result.to_numpy(dtype=np.float64)).ravel()
    if isinstance(result, tuple):  # an Estimate: value, lower, upper, confidence
        return np.asarray([float(v) for v in result[:3]])
    return np.asarray([float(result)])


def _compare(case: Case, before: Outcome, after: Outcome) -> None:
    assert before.error == after.error, (case.name, before.text, after.text)
    assert before.warned == after.warned, case.name
    refusals = (before.error, before.text), (after.error, after.text)
    if assert_refusal(case.name, case.refusal, *refusals):  # as REFUSALS states
        return
    first, second = before.result, after.result
    if isinstance(first, pd.Series | pd.DataFrame):
        shared = [k for k in first.index if k in set(second.index)]
        a = first.loc[shared]
        b = second.loc[shared]
        assert _signature(pd.Index(a.index)) == _signature(pd.Index(b.index)), case.name
        if isinstance(first, pd.DataFrame):
            assert list(first.columns) == list(second.columns), case.name
        assert str(_dtypes(first)) == str(_dtypes(second)), case.name
        if case.kind != "count":  # a new key can appear only for counts of private keys
            assert len(first) == len(second), case.name
        first, second = a, b
    if case.kind == "choice":
        assert type(first) is type(second), case.name
        return
    x, y = _numbers(first), _numbers(second)
    if case.kind == "count":
        assert np.abs(y - x).sum() <= 1, case.name  # one row: L1 sensitivity 1
    elif case.kind == "tables":  # one row is in one cell of each of the two tables;
        # float rounding of the least squares is far below 1e-9 on counts this small
        assert np.abs(y - x).sum() <= 2 + 1e-9, case.name
    elif case.kind == "sum":
        bound = after.sensitivity
        assert np.abs(y - x).sum() <= bound * (1 + 1e-12), case.name
    else:  # post-processed statistics: missing entries follow the noisy counts (a ratio is
        # NaN where its count is below 1), and one row moves one group's count by one.
        assert np.count_nonzero(np.isfinite(x) != np.isfinite(y)) <= 1, case.name


@pytest.mark.parametrize("case", PARAMS)
def test_a_frame_and_its_neighbour_look_alike(case: Case) -> None:
    _compare(case, _run(case.before, case.release), _run(case.after, case.release))


def test_the_catalogue_is_wide() -> None:
    assert CASES >= 400, CASES
    assert {c.name.split("-", 1)[0] for c in ALL} >= set(VALUE_RELEASES) | set(KEY_RELEASES)


def test_every_release_runs_somewhere_and_every_refusal_rule_is_live() -> None:
    check_rules(ALL, REFUSALS, stratum=_stratum, release=lambda c: f"{c.grid} {c.family}")
