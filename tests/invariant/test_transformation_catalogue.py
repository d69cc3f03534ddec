"""Which pandas transformations release, on both engines, row-level and under a privacy unit.

Each case applies one transformation to a freshly protected frame (pandas, or Dask through
``dd.from_pandas(frame, npartitions=3)``), then releases a count and a sum with the noise
replaced by zero. The case must either release exactly what the derived frame means row by row
(the pre-noise answers equal pandas' own ``len`` and clipped ``sum`` of the derived rows; under
a unit the cap, k = 1000, never binds) or refuse both releases before any charge. Which of the
two is data (``OUTCOMES``), so a change of behaviour fails here, and the table in
``docs/privacy-model.md`` ("Which pandas transformations release") is checked against it.

Rules checked on the data itself: without a unit, every transformation that can repeat a row
is refused; under a unit, relabelling (``reset_index``, ``set_axis``, sort then reset) releases
the same answer as pandas, and a transformation that repeats rows never lets a person count
more than k rows (checked again with k = 1: the count is the number of distinct units).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from pandas_dp import DuplicatedRowsError, NotProtectedError

try:
    import dask
    import dask.dataframe as dd
except ImportError:  # the optional extra pandas-dp[dask]: its cases are skipped
    dask = dd = None

PAGE = Path(__file__).resolve().parents[2] / "docs" / "privacy-model.md"
SECTION = "## Which pandas transformations release"

PEOPLE, ROWS_EACH = 10, 3
ROWS = PEOPLE * ROWS_EACH
BOUNDS = (0, 10)
BIG_K = 1000  # no cap binds: the answer is plain pandas on the derived rows
PUBLIC = pd.DataFrame({"g": ["a", "b"], "label": ["A", "B"]})  # unprotected, public


def base() -> pd.DataFrame:
    """Ten people (``pid``) with three rows each; ``z`` has missing values, ``lst`` lists."""
    i = np.arange(ROWS)
    return pd.DataFrame(
        {
            "pid": i // ROWS_EACH,
            "x": (i * 7 % 11).astype(float),
            "y": i % 4,
            "g": np.where(i % 2 == 0, "a", "b"),
            "z": np.where(i % 5 == 0, np.nan, 1.0),
            "k": [f"k{j}" for j in i % ROWS_EACH],
            "lst": [[float(j % 11), float((j + 1) % 11)] for j in i],
        }
    )


def _is_dask(p: Any) -> bool:
    return not isinstance(p, pd.DataFrame | pd.Series)


def _concat(parts: list[Any]) -> Any:
    return dd.concat(parts) if _is_dask(parts[0]) else pd.concat(parts)


def _map_back(p: Any) -> Any:
    codes = {"a": 1, "b": 2}
    if _is_dask(p):
        return p.assign(gn=p["g"].map(codes, meta=("g", "int64")))
    return p.assign(gn=p["g"].map(codes))


def _transform_back(p: Any) -> Any:
    by = p.groupby("g")["x"]
    top = by.transform("max", meta=("x", "f8")) if _is_dask(p) else by.transform("max")
    return p.assign(x_max=top)


def _head(p: Any) -> Any:
    return p.head(10, compute=False) if _is_dask(p) else p.head(10)


def _tail(p: Any) -> Any:
    return p.tail(10, compute=False) if _is_dask(p) else p.tail(10)


@dataclass(frozen=True)
class Operation:
    pandas: Callable[[Any], Any]
    #: The Dask spelling, or None: Dask has no such operation ("n/a", not a case).
    dask: Callable[[Any], Any] | None
    column: str = "x"  # the column whose sum is released
    repeats: bool = False  # can put one row (one person's row) in the result twice
    relabels: bool = False  # renumbers the rows without changing them


def both(run: Callable[[Any], Any], **kwargs: Any) -> Operation:
    return Operation(run, run, **kwargs)


def pandas_only(run: Callable[[Any], Any], **kwargs: Any) -> Operation:
    return Operation(run, None, **kwargs)


OPERATIONS: dict[str, Operation] = {
    "sort_values": both(lambda p: p.sort_values("x")),
    "sort_values, then reset_index(drop=True)": both(
        lambda p: p.sort_values("x").reset_index(drop=True), relabels=True
    ),
    "sort_values, then reset_index(drop=False)": both(
        lambda p: p.sort_values("x").reset_index(drop=False), relabels=True
    ),
    "sort_values, then set_axis": pandas_only(
        lambda p: p.sort_values("x").set_axis(np.arange(ROWS)[::-1]), relabels=True
    ),
    "set_index": both(lambda p: p.set_index("y")),
    "rename (columns)": both(lambda p: p.rename(columns={"y": "w"})),
    "assign": both(lambda p: p.assign(w=p["x"] * 2)),
    "Series.map, assigned back": both(_map_back),
    "astype": both(lambda p: p.astype({"y": "float64"})),
    "fillna": both(lambda p: p.fillna({"z": 0.0})),
    "dropna": both(lambda p: p.dropna(subset=["z"])),
    "drop_duplicates": both(lambda p: p.drop_duplicates(subset=["g", "y"])),
    'query(engine="python")': both(lambda p: p.query("x > 3", engine="python")),
    "loc with a boolean mask": both(lambda p: p.loc[p["x"] > 3]),
    "loc with a label list": both(lambda p: p.loc[[0, 4, 5, 17]]),
    "iloc with a slice": pandas_only(lambda p: p.iloc[2:20]),
    "iloc with a position list": pandas_only(lambda p: p.iloc[[0, 4, 5, 17]]),
    "head": both(_head),
    "tail": both(_tail),
    "sample without replacement": both(lambda p: p.sample(frac=0.5, random_state=0)),
    "sample with replacement": both(
        lambda p: p.sample(frac=1.0, replace=True, random_state=0), repeats=True
    ),
    "merge with itself": both(lambda p: p.merge(p[["pid", "y"]], on="pid"), repeats=True),
    "merge with a public table": both(lambda p: p.merge(PUBLIC, on="g")),
    "concat with itself": both(lambda p: _concat([p, p]), repeats=True),
    "concat of two disjoint filters": both(lambda p: _concat([p[p["x"] > 5], p[p["x"] <= 5]])),
    "concat of two overlapping filters": both(
        lambda p: _concat([p[p["x"] > 3], p[p["x"] > 5]]), repeats=True
    ),
    "explode of a list column": both(lambda p: p.explode("lst"), repeats=True),
    "melt": both(
        lambda p: p.melt(id_vars=["pid"], value_vars=["x", "y"]), column="value", repeats=True
    ),
    "pivot": pandas_only(lambda p: p.pivot(index="pid", columns="k", values="x"), column="k0"),
    "groupby().transform, assigned back": both(_transform_back, column="x_max"),
}

COLUMNS = [
    ("pandas", "row-level"),
    ("pandas", "privacy unit"),
    ("dask", "row-level"),
    ("dask", "privacy unit"),
]
R, X, NA = "releases", "refuses", None
#: Observed outcomes, per operation, in the order of COLUMNS (NA: not available on Dask).
TABLE: dict[str, tuple[str | None, ...]] = {
    "sort_values": (R, R, R, R),
    "sort_values, then reset_index(drop=True)": (R, R, R, R),
    "sort_values, then reset_index(drop=False)": (R, R, R, R),
    "sort_values, then set_axis": (R, R, NA, NA),
    "set_index": (X, X, X, X),
    "rename (columns)": (R, R, R, R),
    "assign": (R, R, R, R),
    "Series.map, assigned back": (R, R, R, R),
    "astype": (R, R, R, R),
    "fillna": (R, R, R, R),
    "dropna": (R, R, R, R),
    "drop_duplicates": (R, R, X, X),
    'query(engine="python")': (R, R, R, R),
    "loc with a boolean mask": (R, R, R, R),
    "loc with a label list": (R, R, X, X),
    "iloc with a slice": (R, R, NA, NA),
    "iloc with a position list": (R, R, NA, NA),
    "head": (R, R, R, R),
    "tail": (R, R, R, R),
    "sample without replacement": (R, R, R, R),
    "sample with replacement": (X, R, X, R),
    "merge with itself": (X, R, X, X),
    "merge with a public table": (X, X, X, X),
    "concat with itself": (X, R, X, R),
    "concat of two disjoint filters": (R, R, X, R),
    "concat of two overlapping filters": (X, R, X, R),
    "explode of a list column": (X, R, X, X),
    "melt": (X, R, X, X),
    "pivot": (X, X, NA, NA),
    "groupby().transform, assigned back": (R, R, X, X),
}

#: The test data: (operation, engine, protection) -> "releases" or "refuses".
OUTCOMES: dict[tuple[str, str, str], str] = {
    (operation, engine, protection): outcome
    for operation, row in TABLE.items()
    for (engine, protection), outcome in zip(COLUMNS, row, strict=True)
    if outcome is not None
}


@pytest.fixture(autouse=True)
def threads() -> Iterator[None]:
    if dask is None:
        yield
        return
    with dask.config.set(scheduler="threads"):
        yield


#: Operations on the list column: Dask must keep object columns as objects for them (its
#: text conversion cannot hold lists; on pandas 2.2 it breaks explode's metadata).
ON_LISTS = {"explode of a list column"}


def protect(engine: str, protection: str, k: int = BIG_K, *, objects: bool = False) -> Any:
    raw: Any = base()
    if engine == "dask":
        if dd is None:
            pytest.skip("dask is not installed (the optional extra pandas-dp[dask])")
        with dask.config.set({"dataframe.convert-string": not objects}):
            raw = dd.from_pandas(raw, npartitions=3)
    unit = {"privacy_unit": "pid", "max_rows_per_unit": k} if protection == "privacy unit" else {}
    return raw.dp.protect(epsilon=100.0, **unit)


def derive(operation: str, engine: str, priv: Any) -> Any:
    run = getattr(OPERATIONS[operation], engine)
    assert run is not None, f"{operation} is not available on {engine}"
    return run(priv)


def releases(column: str) -> list[Callable[[Any], Any]]:
    return [
        lambda d: d.dp.count(epsilon=1.0),
        lambda d: d.dp.sum(column, bounds=BOUNDS, epsilon=1.0),
    ]


def check(
    outcome: str,
    priv: Any,
    derived: Any,
    column: str,
    noise: Callable[..., AbstractContextManager[Any]],
    charges_nothing: Callable[[Any], AbstractContextManager[None]],
) -> list[Any]:
    """Both releases refused by pandas-dp before any charge (``[]``), or released: their
    pre-noise values ``[count, sum]``."""
    if outcome == X:
        with charges_nothing(priv):
            for release in releases(column):
                with pytest.raises((NotProtectedError, DuplicatedRowsError)):
                    release(derived)
        return []
    with noise(priv, value=0):
        return [release(derived) for release in releases(column)]


def rows_of(derived: Any, engine: str) -> pd.DataFrame:
    rows: pd.DataFrame = derived.compute() if engine == "dask" else derived
    return rows


CASES = sorted(OUTCOMES)


#: Where pandas 2.2 behaves otherwise than the table (which shows pandas 3): it drops the
#: session on a self-merge (pandas 3 keeps attrs that all inputs share), so the release is
#: refused, as for any frame without a session.
PANDAS_2: dict[tuple[str, str, str], str] = {("merge with itself", "pandas", "privacy unit"): X}
EXPECTED = OUTCOMES | (PANDAS_2 if int(pd.__version__.split(".")[0]) < 3 else {})


@pytest.mark.parametrize("case", CASES, ids=[" | ".join(case) for case in CASES])
def test_each_case_releases_the_pandas_answer_or_refuses_before_any_charge(
    case: tuple[str, str, str], noise: Any, charges_nothing: Any
) -> None:
    operation, engine, protection = case
    column = OPERATIONS[operation].column
    priv = protect(engine, protection, objects=operation in ON_LISTS)
    derived = derive(operation, engine, priv)
    values = check(EXPECTED[case], priv, derived, column, noise, charges_nothing)
    if not values:
        return
    rows = rows_of(derived, engine)
    count, total = values
    assert count == len(rows)  # each derived row once, no more, no fewer
    assert total == pytest.approx(rows[column].astype(float).clip(*BOUNDS).sum(), abs=1e-9)
    if protection == "privacy unit":  # k = 1: one row per person present, whatever repeats
        tight = protect(engine, protection, k=1, objects=operation in ON_LISTS)
        tight_rows = derive(operation, engine, tight)
        with noise(tight, value=0):
            capped = tight_rows.dp.count(epsilon=1.0)
        units = rows_of(tight_rows, engine)["pid"].nunique()
        assert capped == units <= PEOPLE


def test_without_a_unit_every_repeating_operation_is_refused() -> None:
    for name, operation in OPERATIONS.items():
        if operation.repeats:
            for engine in ("pandas", "dask"):
                assert OUTCOMES.get((name, engine, "row-level"), X) == X, (name, engine)


def test_under_a_unit_relabelling_releases() -> None:
    relabelling = [name for name, operation in OPERATIONS.items() if operation.relabels]
    assert len(relabelling) == 3
    for name in relabelling:
        for engine in ("pandas", "dask"):
            assert OUTCOMES.get((name, engine, "privacy unit"), R) == R, (name, engine)


def test_the_table_marks_exactly_the_operations_dask_lacks() -> None:
    assert list(TABLE) == list(OPERATIONS)
    for name, row in TABLE.items():
        absent = OPERATIONS[name].dask is None
        assert (row[2] is NA and row[3] is NA) == absent, name
        assert row[0] is not NA, name
        assert row[1] is not NA, name


@pytest.mark.parametrize("operation", [name for name, op in OPERATIONS.items() if op.dask is None])
def test_not_available_on_dask(operation: str) -> None:
    """Not a case: Dask itself has no such operation (the pandas spelling fails in Dask)."""
    priv = protect("dask", "row-level")
    with pytest.raises((AttributeError, NotImplementedError)):
        OPERATIONS[operation].pandas(priv)


@pytest.mark.parametrize("engine", ["pandas", "dask"])
@pytest.mark.parametrize("protection", ["row-level", "privacy unit"])
def test_query_with_the_default_engine_agrees_with_the_python_engine(
    engine: str, protection: str, noise: Any, charges_nothing: Any
) -> None:
    try:
        import numexpr  # noqa: F401  (pandas' default query engine when installed)
    except ImportError:
        reason = (
            "numexpr is not installed: pandas' default query engine is then the python one, "
            'already covered by the query(engine="python") cases'
        )
        print(reason)
        pytest.skip(reason)
    priv = protect(engine, protection)
    derived = priv.query("x > 3")
    outcome = OUTCOMES[('query(engine="python")', engine, protection)]
    values = check(outcome, priv, derived, "x", noise, charges_nothing)
    if outcome == R:
        rows = rows_of(derived, engine)
        assert values == [len(rows), pytest.approx(rows["x"].clip(*BOUNDS).sum(), abs=1e-9)]


def totals() -> dict[str, int]:
    counted = Counter(OUTCOMES.values())
    return {
        "operations": len(TABLE),
        "cases": len(OUTCOMES),
        "releases": counted[R],
        "refusals": counted[X],
        "n/a": sum(outcome is NA for row in TABLE.values() for outcome in row),
    }


def test_totals() -> None:
    found = totals()
    print(
        "transformation catalogue: {operations} operations, {cases} cases: {releases} release,"
        " {refusals} refused; {n/a} not available on Dask".format(**found)
    )
    assert found["cases"] == found["releases"] + found["refusals"]
    assert found["cases"] + found["n/a"] == 4 * found["operations"]
    assert found == {"operations": 30, "cases": 112, "releases": 80, "refusals": 32, "n/a": 8}


CELLS = {"releases": R, "refused": X, "n/a": NA}


def documented_table() -> dict[str, tuple[str | None, ...]]:
    """The table of the docs section, as ``TABLE``: operation -> outcomes in COLUMNS order."""
    text = PAGE.read_text(encoding="utf-8")
    assert text.count(SECTION + "\n") == 1
    section = text.split(SECTION + "\n", 1)[1].split("\n## ", 1)[0]
    lines = [line.strip() for line in section.splitlines() if line.strip().startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    assert header == [
        "Operation",
        "pandas, row-level",
        "pandas, privacy unit",
        "Dask, row-level",
        "Dask, privacy unit",
    ]
    assert re.fullmatch(r"\|(\s*:?-{3,}:?\s*\|){5}", lines[1]), lines[1]
    table: dict[str, tuple[str | None, ...]] = {}
    for line in lines[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        name = cells[0].replace("`", "")
        assert name not in table, name
        table[name] = tuple(CELLS[cell] for cell in cells[1:])
    return table


def test_the_documented_table_is_the_observed_one() -> None:
    documented = documented_table()
    assert list(documented) == list(TABLE)
    assert documented == TABLE
    observed = {
        (name, engine, protection): outcome
        for name, row in documented.items()
        for (engine, protection), outcome in zip(COLUMNS, row, strict=True)
        if outcome is not None
    }
    assert observed == OUTCOMES
