"""The release invariant on every engine path, differentially, under a privacy unit.

Under ``protect(privacy_unit="u", max_rows_per_unit=K)`` the Dask engine gathers each unit's
rows before capping them by one of three routes (``DaskEngine.aggregate``): the exchange
in one stage (up to 128 partitions) or in stages (more: the "dask staged" route, 300
partitions; Dask's own shuffle is no longer used), or partition-local caps (a collection
indexed by the unit column with known divisions). Row-level Dask releases gather nothing.
For each route (and the pandas engine), each kind of unit id and several releases, a frame
``D`` and its neighbour ``D'`` (``D`` plus the rows of one unit: one row, several rows in
several forms of one id, or an adversarial row) must

- raise the same exception type at ``protect`` or at the release, or neither;
- emit the same warning categories;
- give pre-noise results (noise captured at 0) that differ by at most the charged
  sensitivity (read from the release's measurements) times the number of units the added
  rows form: equal ids in any form (``1 = 1.0 = True = Decimal("1.0")``, one instant in two
  zones, ``0.0 = -0.0``) are one unit, a missing or unhashable id is no unit (no change at
  all). Under Dask's default ``dataframe.convert-string`` an object column is text before
  the library sees it: texts that spell one number (``"1"``, ``"1.0"``, ``"True"``) are one
  unit, other texts (one instant written in two zones) count as the collection holds them.

And every Dask route gives the pandas engine's pre-noise answer on the same data (the
collection's computed frame) whenever no cap binds (a capped count: always).
``CASES`` counts the (route, id kind, neighbour, release) cases, ``ROUTE_CASES`` per route.
The default run takes a stratified sample (``grid.py``: at least one case per route, id dtype
and release), ``--full-grid`` every case. Every case releases on both neighbours (D is an
honest frame, and D' must do as D).
"""

from __future__ import annotations

import functools
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any
from unittest import mock

import numpy as np
import pandas as pd
import pytest

import pandas_dp
from pandas_dp.testing import capture_noise

from .grid import params

dask = pytest.importorskip("dask")  # the optional extra pandas-dp[dask]
dd = pytest.importorskip("dask.dataframe")
dask_engine = pytest.importorskip("pandas_dp.engines.dask.engine")

K = 3  #: max_rows_per_unit; no unit of D holds more than 2 rows, so caps bind in D' only
BOUNDS = (0.0, 100.0)
MID = (BOUNDS[0] + BOUNDS[1]) / 2
KEYS = ["a", "b"]
T0 = pd.Timestamp("2024-01-01")
DAYS = (T0, T0 + pd.Timedelta(days=5))  # x hours after T0: every row lies in one of 5 days
#: A public lookup table for the merged release (on pandas and on every Dask route).
REGIONS = pd.DataFrame({"g": KEYS, "region": ["north", "south"]})

# --- unit ids ---------------------------------------------------------------------------------

PARIS, UTC, NEW_YORK = "Europe/Paris", "UTC", "America/New_York"


def _instant(hours: int, zone: str) -> pd.Timestamp:
    """2020-01-01 00:00 UTC plus ``hours``, as a clock in ``zone`` reads it."""
    return (pd.Timestamp("2020-01-01", tz=UTC) + pd.Timedelta(hours=hours)).tz_convert(zone)


def _base_id(kind: str, unit: int, row: int) -> Any:
    """The id of ``unit`` as its ``row``-th row spells it in D."""
    number = 100 + unit
    if kind in ("int", "object int", "unhashable"):
        return number
    if kind == "mixed forms":  # a unit's rows spell its id differently
        return [number, float(number), Decimal(f"{number}.0")][(unit + row) % 3]
    if kind == "string":
        return f"u{unit}"
    if kind == "tz instants":  # one instant, rows alternating between two zones
        return _instant(unit, [UTC, PARIS][(unit + row) % 2])
    if kind == "float":
        return unit + 0.5
    raise AssertionError(kind)


#: kind -> the dtype its id column is built with.
DTYPES = {
    "int": "int64",
    "object int": object,
    "mixed forms": object,
    "string": "str",
    "tz instants": object,
    "float": "float64",
    "unhashable": object,
}

#: kind -> neighbour -> the added rows as (id, x).
NEIGHBOURS: dict[str, dict[str, list[tuple[Any, float]]]] = {
    "int": {
        "one row": [(7, 50.0)],
        "several rows": [(7, 100.0)] * 4,
        "huge id and value": [(2**62, 1e308)],
    },
    "object int": {
        "one row": [(7, 50.0)],
        # (np.int64 and Decimal do not sort together: no collection indexed by them)
        "several forms": [(7, 100.0), (np.int64(7), 100.0), (7.0, 100.0), (np.float32(7), 100.0)],
        "missing id": [(None, 100.0)],
        "huge id and value": [(10**30, 1e308)],
    },
    "mixed forms": {
        "1, 1.0, True, Decimal": [(1, 90.0), (1.0, 90.0), (True, 90.0), (Decimal("1.0"), 90.0)],
        "zero in four forms": [(0, 60.0), (-0.0, 60.0), (False, 60.0), (Decimal("-0"), 60.0)],
        "-0.0 alone": [(-0.0, -0.0)],
        "NaN id": [(np.nan, 100.0)],
        "one instant in two zones": [
            (_instant(1000, UTC), 80.0),
            (_instant(1000, PARIS), 80.0),
            (_instant(1000, UTC), 80.0),
            (_instant(1000, PARIS), 80.0),
        ],
        "a list and a dict": [([1], 100.0), ({"a": 1}, 100.0)],
    },
    "string": {
        "one row": [("u-new", 50.0)],
        "several rows": [("u-new", 100.0)] * 4,
        "missing id": [(None, 100.0)],
        "huge value": [("u-new", 1e308)],
    },
    "tz instants": {
        "one instant in three zones": [
            (_instant(1000, UTC), 80.0),
            (_instant(1000, PARIS), 80.0),
            (_instant(1000, NEW_YORK), 80.0),
            (_instant(1000, PARIS), 80.0),
        ],
        "one row": [(_instant(1000, NEW_YORK), 50.0)],
        "NaT id": [(pd.NaT, 100.0)],
    },
    "float": {
        "0.0 and -0.0": [(-0.0, 100.0), (0.0, 100.0), (-0.0, 100.0), (0.0, 100.0)],
        "-0.0 alone": [(-0.0, -0.0)],
        "NaN id": [(np.nan, 100.0)],
        "huge id and value": [(1e308, 1e308)],
    },
    "unhashable": {
        "a list": [([7], 100.0)],
        "a dict": [({"a": 7}, 100.0)],
        "a list and a dict": [([7], 100.0), ({"u": 7}, 100.0)],
        "an id and its list": [(7, 100.0), ([7], 100.0)],
    },
}

# --- routes -----------------------------------------------------------------------------------

ROUTES = ["pandas", "dask rows", "dask exchange", "dask staged", "dask local"]
#: Object columns become text under Dask's default ``dataframe.convert-string``: both ways.
CONVERSIONS = {"objects": False, "text": True}
SHUFFLE_PARTITIONS = 300  # more than one stage of the exchange takes (128): staged


def _frame(kind: str, rows: int) -> pd.DataFrame:
    """D: units with 2 rows each for the first half of ``rows``, then 1 row each."""
    ids: list[Any] = []
    unit = 0
    while len(ids) < rows:
        for row in range(2 if len(ids) < rows // 2 else 1):
            ids.append(_base_id(kind, unit, row))
        unit += 1
    return _with_rows(ids[:rows], [float((7 * i) % 101) for i in range(rows)], kind)


def _with_rows(ids: list[Any], x: list[float], kind: str) -> pd.DataFrame:
    dtype = DTYPES[kind]
    column = pd.Series(ids, dtype=dtype) if dtype is object else pd.Series(pd.array(ids, dtype))
    groups = [KEYS[i % 2] for i in range(len(ids))]
    values = np.asarray(x, dtype=np.float64)
    # x hours after T0 (within DAYS; a value that is no number, no time): resampled rows
    hours = np.where(np.isfinite(values), np.clip(values, 0.0, 119.0), np.nan)
    when = T0 + pd.to_timedelta(hours, unit="h")
    return pd.DataFrame({"u": column, "x": values, "g": groups, "t": when})


def _added(kind: str, neighbour: str) -> pd.DataFrame:
    added = NEIGHBOURS[kind][neighbour]
    return _with_rows([i for i, _ in added], [v for _, v in added], kind)


def _rows(route: str) -> int:
    return 2 * SHUFFLE_PARTITIONS if route == "dask staged" else 48


@functools.cache
def _data(rows: int, kind: str, neighbour: str | None) -> pd.DataFrame:
    """D (no ``neighbour``), or D': D's rows, then the added ones (same columns and dtypes)."""
    base = _frame(kind, rows)
    if neighbour is None:
        return base
    after = pd.concat([base, _added(kind, neighbour)], ignore_index=True)
    assert list(after.dtypes) == list(base.dtypes)  # the same public schema
    return after


def _collection(route: str, frame: pd.DataFrame) -> Any:
    if route == "pandas":
        return frame.copy()
    if route == "dask staged":
        return dd.from_pandas(frame, npartitions=SHUFFLE_PARTITIONS)
    if route == "dask local":  # indexed by the unit, divisions known
        return dd.from_pandas(frame.set_index("u", drop=False).sort_index(), npartitions=3)
    return dd.from_pandas(frame, npartitions=3)


def _holds(route: str, kind: str, neighbour: str, conversion: str) -> bool:
    """Whether the route can hold D' at all (decided before any release).

    Partition-local caps need a collection indexed by the ids: pandas cannot sort ids that
    do not compare (a list, a Timestamp among numbers), Dask refuses missing values in a
    non-numeric index, and as text (Dask's default) the divisions of an object index stay
    the objects, so such collections are exchanged instead (tested as the exchange).
    """
    if route != "dask local":
        return True
    if DTYPES[kind] is object and conversion == "text":
        return False
    settings = {"dataframe.convert-string": CONVERSIONS[conversion]}
    try:
        with dask.config.set(settings), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _collection(route, _data(_rows(route), kind, neighbour)).divisions  # noqa: B018
    except Exception:  # the collection cannot be built: no such case
        return False
    return True


# --- releases ---------------------------------------------------------------------------------

Release = Callable[[Any], Any]

RELEASES: dict[str, Release] = {
    "count": lambda p: p.dp.count(epsilon=1.0),
    "sum": lambda p: p.dp.sum("x", bounds=BOUNDS, epsilon=1.0),
    "group count": lambda p: p.dp.groupby("g", keys=KEYS).count(epsilon=1.0),
    "mean": lambda p: p.dp.mean("x", bounds=BOUNDS, epsilon=1.0),
    "agg": lambda p: p.dp.agg(
        n="count", s=("x", "sum"), m=("x", "mean"), bounds={"x": BOUNDS}, epsilon=1.0
    ),
    "group agg": lambda p: p.dp.groupby("g", keys=KEYS).agg(
        n="count", s=("x", "sum"), m=("x", "mean"), bounds={"x": BOUNDS}, epsilon=1.0
    ),
    "merged count": lambda p: (
        p.dp.merge(REGIONS, on="g").dp.groupby("region", keys=["north", "south"]).count(epsilon=1.0)
    ),
    "resample": lambda p: p.dp.resample("D", on="t", range=DAYS).size(epsilon=1.0),
    "running totals": lambda p: p.dp.resample("D", on="t", range=DAYS).size(
        epsilon=1.0, cumulative=True
    ),
    "variance by cov": lambda p: p.dp.cov(["x"], bounds={"x": BOUNDS}, epsilon=1.0),
    "ols": lambda p: (
        p.dp.ols("x ~ C(g)", bounds={"x": BOUNDS}, keys={"g": KEYS}, epsilon=1.0).params
    ),
    "logit": lambda p: (
        p.dp.logit("I(x > 1) ~ C(g)", bounds={"x": BOUNDS}, keys={"g": KEYS}, epsilon=1.0).params
    ),
    # count·ε = 48 · 90 over 150 times the 6 sums: a count, a first fit, the score at it
    "logit two steps": lambda p: (
        p.dp.logit("I(x > 1) ~ C(g)", bounds={"x": BOUNDS}, keys={"g": KEYS}, epsilon=90.0).params
    ),
    # ε = 50: each group's ~24 rows clear the count's 95% half-width (else NaN, by design)
    "group ols": lambda p: (
        p.dp.groupby("g", keys=KEYS).ols("x ~ I(x > 50)", bounds={"x": BOUNDS}, epsilon=50.0).params
    ),
}


# --- running ----------------------------------------------------------------------------------


@dataclass
class Outcome:
    error: str | None
    warned: list[str]
    route: str
    result: Any = None
    sensitivity: dict[str, float] = field(default_factory=dict)


@contextmanager
def _route_spy() -> Iterator[list[str]]:
    """Records the gathering route the Dask engine takes (its two choices, spied on)."""
    seen: list[str] = []
    divisions, exchange = dask_engine.unit_divisions, dask_engine.exchange

    def spy_divisions(*args: Any, **kwargs: Any) -> Any:
        found = divisions(*args, **kwargs)
        seen.append("local" if found is not None else "gathered")
        return found

    def spy_exchange(*args: Any, **kwargs: Any) -> Any:
        seen.append("exchange")
        return exchange(*args, **kwargs)

    with (
        mock.patch.object(dask_engine, "unit_divisions", spy_divisions),
        mock.patch.object(dask_engine, "exchange", spy_exchange),
    ):
        yield seen


def _taken(route: str, seen: list[str]) -> str:
    if route == "pandas":
        return "pandas"
    if not seen:
        return "dask rows"
    if "local" in seen:
        return "dask local"
    if "exchange" not in seen:
        return "dask shuffle"  # no longer a route: a test that sees it fails
    return "dask staged" if route == "dask staged" else "dask exchange"


def _categories(caught: list[warnings.WarningMessage]) -> list[str]:
    ignored = (pandas_dp.PrivacyLeakWarning, pandas_dp.NoiseDominatedWarning)
    return sorted(w.category.__name__ for w in caught if not issubclass(w.category, ignored))


def _run(route: str, frame: pd.DataFrame, release: str, unit: bool, conversion: str) -> Outcome:
    """Protect ``frame`` on ``route`` and release with the noise captured at 0."""
    options: dict[str, Any] = {"epsilon": 100.0}
    if unit:
        options.update(privacy_unit="u", max_rows_per_unit=K)
    settings = {"scheduler": "sync", "dataframe.convert-string": CONVERSIONS[conversion]}
    with (
        dask.config.set(settings),
        warnings.catch_warnings(record=True) as caught,
        _route_spy() as seen,
    ):
        warnings.simplefilter("always")
        try:
            priv = _collection(route, frame).dp.protect(**options)
            with capture_noise(priv):
                result = RELEASES[release](priv)
        except Exception as error:  # the type is what is compared
            return Outcome(type(error).__name__, _categories(caught), _taken(route, seen))
    measured = {
        m.label: float(m.sensitivity * 2.0**m.exponent)
        for m in priv.dp.session.releases[-1].measurements
    }
    return Outcome(None, _categories(caught), _taken(route, seen), result, measured)


@functools.cache
def _held(rows: int, kind: str, neighbour: str | None, conversion: str) -> pd.DataFrame:
    """D or D' as a Dask collection holds it (object columns as text under the default)."""
    settings = {"scheduler": "sync", "dataframe.convert-string": CONVERSIONS[conversion]}
    with dask.config.set(settings):  # the same values in any number of partitions
        return dd.from_pandas(_data(rows, kind, neighbour), npartitions=1).compute()


@functools.cache
def _reference(
    rows: int, kind: str, neighbour: str | None, conversion: str, release: str, unit: bool
) -> Outcome:
    """The pandas engine on the data a Dask collection holds."""
    return _run("pandas", _held(rows, kind, neighbour, conversion), release, unit, "text")


@functools.cache
def _before(route: str, kind: str, conversion: str, release: str) -> Outcome:
    """D's outcome (shared by every neighbour)."""
    frame = _data(_rows(route), kind, None)
    return _run(route, frame, release, route != "dask rows", conversion)


def _units(ids: pd.Series) -> tuple[int, int]:
    """How many units the ids form, and the most rows of one. Python's equality decides
    (1 = 1.0 = True = Decimal("1.0"), equal instants, 0.0 = -0.0), after reading a text with
    a UTC offset as its instant (Dask writes tz-aware Timestamps as such texts); missing and
    unhashable ids are no unit."""
    counts: Counter[Any] = Counter()
    for value in ids.tolist():
        try:
            hash(value)
        except TypeError:
            continue
        if _missing(value):
            continue
        counts[_read_instant(value) if isinstance(value, str) else value] += 1
    return len(counts), max(counts.values(), default=0)


def _read_instant(text: str) -> Any:
    """The instant a text with a UTC offset spells (pandas' parser), else the text."""
    try:
        stamp = pd.Timestamp(text)
    except ValueError:
        return text
    return stamp.tz_convert("UTC") if stamp.tz is not None else text


def _missing(value: Any) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


# --- comparing --------------------------------------------------------------------------------


def _numbers(result: Any) -> np.ndarray:
    if isinstance(result, pd.DataFrame | pd.Series):
        return np.asarray(result.to_numpy(dtype=np.float64), dtype=np.float64).ravel()
    return np.asarray([float(result)])


def _labels(result: Any) -> list[list[Any]]:
    if isinstance(result, pd.DataFrame):
        return [list(result.index), list(result.columns)]
    if isinstance(result, pd.Series):
        return [list(result.index)]
    return []


def _sum_bound(sensitivity: dict[str, float]) -> float:
    """A clipped sum's sensitivity: measured as such, or as a centred sum plus mid·count."""
    if "sum(x)" in sensitivity:
        return sensitivity["sum(x)"]
    return sensitivity["centred_sum(x)"] + abs(MID) * sensitivity["count(x)"]


def _mean_bound(rows: float, counts: np.ndarray) -> np.ndarray:
    """``|S'/N' - S/N| <= b·(U - L)/N' <= b·(U - L)/N`` when ``b`` rows (clipped into the
    bounds) join ``N``: the most a mean moves, with room for float rounding."""
    return rows * (BOUNDS[1] - BOUNDS[0]) / np.maximum(counts, 1) * (1 + 1e-9) + 1e-9


def _assert_within(
    release: str, before: Outcome, after: Outcome, units: int, rows: int, per_unit: int
) -> None:
    """Pre-noise results within ``units`` times the charged sensitivity (``rows``: D's).

    ``per_unit``: the most rows one unit may add (``K`` under a unit, 1 row-level).
    """
    s = after.sensitivity
    assert s == before.sensitivity  # the charge reads public inputs only
    if release == "running totals":  # each total moves by at most the added units' rows
        x, y = _numbers(before.result), _numbers(after.result)
        assert np.abs(y - x).max() <= units * per_unit, (x, y)
    elif release == "variance by cov":  # b rows within a range R move a variance <= b R²/n
        x, y = _numbers(before.result), _numbers(after.result)
        added = units * per_unit
        assert s["products(x)"] == 3 * per_unit  # 3 sums (rows, Σz, Σz²), each moved <= 1
        bound = added * (BOUNDS[1] - BOUNDS[0]) ** 2 / (rows - 1) * (1 + 1e-9)
        assert np.abs(y - x).max() <= bound, (x, y, bound)
    elif release in ("ols", "logit", "logit two steps", "group ols"):  # no simple neighbour
        # bound: the sums' (each moved by <= 1 unit per row) is asserted in
        # tests/statistics/test_ols.py and test_logit.py; here the labels, errors, warnings
        # and charge above, finite values, and Dask = pandas below
        label = {
            "ols": "products(C(g)[T.b], x)",
            "logit": "products(C(g)[T.b], I(x > 1))",
            "logit two steps": "products(C(g)[T.b], I(x > 1))",
            "group ols": "products(I(x > 50), x)",
        }[release]
        # (m + 2)(m + 3) / 2 = 6 sums (m = 1), each moved by <= 1 unit per row: L1 for ols's
        # Laplace noise, ℓ∞ for logit's K-norm vector
        assert s[label] == (per_unit if release.startswith("logit") else 6 * per_unit)
        if release == "logit two steps":  # the route taken: the score, one vector of 2 sums
            assert s["products(C(g)[T.b], score residual)"] == per_unit
        x, y = _numbers(before.result), _numbers(after.result)
        assert np.isfinite(x).all(), x
        assert np.isfinite(y).all(), y
    elif release in ("count", "group count", "merged count", "resample"):
        x, y = _numbers(before.result), _numbers(after.result)
        assert np.abs(y - x).sum() <= units * s["count"], (x, y, s)
    elif release == "sum":
        x, y = _numbers(before.result), _numbers(after.result)
        assert np.abs(y - x).sum() <= units * _sum_bound(s), (x, y, s)
    elif release == "mean":
        x, y = _numbers(before.result), _numbers(after.result)
        bound = _mean_bound(units * s["count(x)"], np.asarray([rows]))
        assert (np.abs(y - x) <= bound).all(), (x, y, bound)
        assert ((y >= BOUNDS[0]) & (y <= BOUNDS[1])).all(), y
    else:  # agg and group agg: a count, a sum and a mean per row
        n, sums, means = (before.result[c].to_numpy(np.float64) for c in ("n", "s", "m"))
        n2, sums2, means2 = (after.result[c].to_numpy(np.float64) for c in ("n", "s", "m"))
        assert np.abs(n2 - n).sum() <= units * s["count"], (n, n2, s)
        assert np.abs(sums2 - sums).sum() <= units * _sum_bound(s), (sums, sums2, s)
        bound = _mean_bound(units * s["count(x)"], n)
        assert (np.abs(means2 - means) <= bound).all(), (means, means2, bound)


def _assert_same(release: str, dask_outcome: Outcome, pandas_outcome: Outcome) -> None:
    """The Dask route's pre-noise answer is the pandas engine's on the same data."""
    assert dask_outcome.error == pandas_outcome.error
    if dask_outcome.error is not None:
        return
    assert _labels(dask_outcome.result) == _labels(pandas_outcome.result), release
    np.testing.assert_allclose(
        _numbers(dask_outcome.result), _numbers(pandas_outcome.result), rtol=1e-12, atol=0
    )
    assert dask_outcome.sensitivity == pandas_outcome.sensitivity


# --- the catalogue ----------------------------------------------------------------------------

#: Releases on the cheap routes, a count after a merge with a public table included; agg and
#: group agg (a count, a sum and a mean per pass) and logit too on the pandas engine.
BASIC = [
    "count", "sum", "group count", "mean", "resample", "running totals", "variance by cov", "ols",
    "merged count",
]  # fmt: skip
#: Only on the pandas engine: logit measures exactly ols' sums (on every route above) and
#: post-processes them the same way whatever the engine (in two steps, the score's sums too:
#: Dask's are tests/dask/test_products.py's); a grouped ols, ols' sums per group
#: (the group count's grouping, on every route above).
PANDAS_ONLY = ["logit", "logit two steps", "agg", "group agg", "group ols"]
#: The staged route costs more a compute (300 partitions): a selection of
#: telling neighbours (in an object column: the id forms, one instant in two zones, a NaN id,
#: unhashable ids; 0.0 and -0.0 as floats; a capped unit of ints and of text), each with
#: one release that holds a count, a sum and a mean (agg: the rows exchanged; group agg: key
#: codes exchanged along).
SHUFFLE: dict[tuple[str, str], dict[str, str]] = {
    ("mixed forms", "objects"): {
        "1, 1.0, True, Decimal": "group agg",
        "one instant in two zones": "group agg",
        "NaN id": "group agg",
        "a list and a dict": "group agg",
    },
    ("float", "text"): {"0.0 and -0.0": "agg"},
    ("int", "text"): {"several rows": "agg"},
    ("string", "text"): {"several rows": "group agg"},
}


@dataclass(frozen=True)
class Case:
    route: str
    kind: str
    conversion: str
    neighbour: str
    release: str

    @property
    def name(self) -> str:
        return "-".join((self.route, self.kind, self.conversion, self.neighbour, self.release))


def _cases() -> list[Case]:
    cases = []
    for (kind, conversion), neighbours in SHUFFLE.items():
        for neighbour, release in neighbours.items():
            cases.append(Case("dask staged", kind, conversion, neighbour, release))
    for route in ("pandas", "dask rows", "dask exchange", "dask local"):
        releases = [*BASIC, *PANDAS_ONLY] if route == "pandas" else BASIC
        for kind, neighbours in NEIGHBOURS.items():
            # The conversion changes object columns only, and in Dask only.
            objects = route != "pandas" and DTYPES[kind] is object
            for conversion in list(CONVERSIONS) if objects else ["text"]:
                for neighbour in neighbours:
                    if _holds(route, kind, neighbour, conversion):
                        cases += [Case(route, kind, conversion, neighbour, r) for r in releases]
    return cases


def _stratum(case: Case) -> tuple[str, str, str]:
    dtype = DTYPES[case.kind]
    return case.route, "object" if dtype is object else str(dtype), case.release


ALL = _cases()
CASES = len(ALL)
ROUTE_CASES = Counter(c.route for c in ALL)
PARAMS = params(ALL, name=lambda c: c.name, stratum=_stratum)


@functools.cache
def _held_added(route: str, kind: str, neighbour: str, conversion: str) -> pd.Series:
    """The added ids as the route holds them (Dask's default turns objects into text)."""
    added = _added(kind, neighbour)
    if route == "pandas":
        return added["u"]
    settings = {"scheduler": "sync", "dataframe.convert-string": CONVERSIONS[conversion]}
    with dask.config.set(settings):
        held = dd.from_pandas(added, npartitions=1).compute()["u"]
    if isinstance(held.dtype, pd.StringDtype):  # texts spelling one number are one unit
        return pd.Series([_number_or_text(v) for v in held], dtype=object)
    return held


def _number_or_text(value: Any) -> Any:
    """What a text id spells: the number (``"1.0"``, ``"True"``: 1), or the text itself."""
    if not isinstance(value, str):
        return value
    if value in ("True", "False"):
        return value == "True"
    try:
        return (
            Decimal(value)
            if value.strip() == value and value.lower() not in ("nan", "inf", "-inf", "infinity")
            else value
        )
    except ArithmeticError:
        return value


@pytest.mark.parametrize("case", PARAMS)
def test_a_frame_and_its_neighbour_look_alike_on_every_route(case: Case) -> None:
    route, kind, release, conversion = case.route, case.kind, case.release, case.conversion
    rows, unit = _rows(route), route != "dask rows"
    before = _before(route, kind, conversion, release)
    after = _run(route, _data(rows, kind, case.neighbour), release, unit, conversion)
    assert before.error is None, before.error  # D is an honest frame
    assert before.route == route  # the route under test is the one taken
    assert before.error == after.error
    assert before.warned == after.warned
    if after.error is not None:
        return
    assert _labels(before.result) == _labels(after.result)
    units, most = _units(_held_added(route, kind, case.neighbour, conversion))
    if not unit:  # every row its own unit
        units, most = len(NEIGHBOURS[kind][case.neighbour]), 1
    _assert_within(release, before, after, units, rows, K if unit else 1)
    if route != "pandas":  # the pandas engine's answer on the same data
        _assert_same(release, before, _reference(rows, kind, None, conversion, release, unit))
        if most <= K or release == "count":  # else the kept rows are drawn at random
            reference = _reference(rows, kind, case.neighbour, conversion, release, unit)
            _assert_same(release, after, reference)


def test_the_catalogue_reaches_every_route_kind_and_release() -> None:
    assert set(ROUTE_CASES) == set(ROUTES)
    for route in ROUTES:
        assert {c.kind for c in ALL if c.route == route} >= {"int", "mixed forms", "float"}
    assert {c.kind for c in ALL} == set(NEIGHBOURS)
    assert {c.release for c in ALL} == set(RELEASES)
