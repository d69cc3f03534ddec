"""What the library builds from private rows is shaped by public inputs only (PRIVACY.md §10).

Issue 37. For every frame the library itself derives from a protected one (a merge, time bins,
a formula's design, group keys matched to public ones; a one-to-many public join, ``explode``
and ``melt``, the join of two protected tables on the privacy unit and the private join of
two row-level ones, each capped at 15 rows per unit or key, which D's rows meet exactly and
D' crosses) and every release family, a frame D and D plus one adversarial row must give:

- the same columns, dtypes, index type (and stability) of the derived frame and of each
  release;
- the same refusals (type and text) and the same warnings;
- pre-noise values within the charged sensitivity.

The adversarial rows are those the fourth audit used: a key no public row has, ``True``,
``1.0`` or ``"1"`` placed *first* (before the integers), NaN, ±inf, and an instant written in
another time zone. Each is the first row of D', so a matching step that keeps the first form it
meets (``pd.factorize``) is caught. The key column is ``object`` on both sides: the dtypes are
public, so D and D' share them.

The three reproducers of the audit are regression tests here too; the formula one lives with
the formula grammar's tests. The two grids run a stratified sample by default (``grid.py``:
at least one case per family and shape of D's codes), every case with ``--full-grid``;
``REFUSALS`` states which families both neighbours refuse, and why.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import pytest

import pandas_dp
from pandas_dp.testing import capture_noise

from .grid import Refusal, assert_refusal, check_rules, expected, params

KEYS = [0, 1, 2, 3]
PUBLIC = pd.DataFrame(
    {"code": [1, 2, 3], "n": [10, 20, 30], "flag": [True, False, True], "name": ["a", "b", "c"]}
)
BOUNDS = (0, 100)
T0, T1 = pd.Timestamp("2024-01-01", tz="UTC"), pd.Timestamp("2024-01-04", tz="UTC")

#: The adversarial first rows: (code, x, t).
ADVERSARIAL: dict[str, tuple[object, float, object]] = {
    "unmatched key": (4, 50.0, T0),
    "True first": (True, 50.0, T0),
    "1.0 first": (1.0, 50.0, T0),
    "'1' first": ("1", 50.0, T0),
    "NaN key": (np.nan, 50.0, T0),
    "NaN value": (1, np.nan, T0),
    "+inf value": (1, np.inf, T0),
    "-inf value": (1, -np.inf, T0),
    "another time zone": (1, 50.0, pd.Timestamp("2024-01-02 01:00", tz="Europe/Paris")),
}


#: Shapes of D's key column: four integer codes; two whose first row is ``False`` (the
#: audit's: a matching step that hashed raw values then saw only booleans in D'); and codes
#: that every public row matches (a left join then has a match for every row of D).
CODES: dict[str, Callable[[np.ndarray], list[object]]] = {
    "codes 0-3": lambda i: [int(c) for c in i % 4],
    "codes 0-1, False first": lambda i: [False] + [int(c) for c in i[1:] % 2],
    "codes 1-3, every row matched": lambda i: [int(c) for c in i % 3 + 1],
}


def base(codes: str = "codes 0-3", rows: int = 60) -> pd.DataFrame:
    """D: integer codes as objects, values in the bounds, UTC instants in the range."""
    i = np.arange(rows)
    return pd.DataFrame(
        {
            "code": pd.Series(CODES[codes](i), dtype=object),
            "x": (i * 7 % 90).astype(float),
            "t": pd.Series([T0 + pd.Timedelta(hours=int(h)) for h in i * 5 % 70], dtype=object),
        }
    )


def neighbour(name: str, codes: str = "codes 0-3") -> pd.DataFrame:
    """D' = D plus the adversarial row, placed first."""
    code, x, t = ADVERSARIAL[name]
    row = pd.DataFrame(
        {
            "code": pd.Series([code], dtype=object),
            "x": [x],
            "t": pd.Series([t], dtype=object),
        }
    )
    d = base(codes)
    return pd.concat([row, d], ignore_index=True).astype(d.dtypes.to_dict())


# --- derived frames ---------------------------------------------------------------------------

#: A public table in which a key matches up to three rows: a row-level one-to-many join.
MANY = pd.DataFrame({"code": [1, 2, 2, 3, 3, 3], "day": ["Mo", "Tu", "We", "Mo", "We", "Fr"]})
DAYS = ["Mo", "Tu", "We", "Fr"]
#: A second table, protected in D's session: about the same units (``code`` the privacy
#: unit), or row-level for a private join; two rows of key 2, none of key 0.
PEOPLE = pd.DataFrame({"code": [0, 1, 2, 3, 5], "age": [20, 30, 40, 50, 60]})
OTHER = pd.DataFrame({"code": [1, 2, 2, 3], "y": [1.0, 2.0, 3.0, 4.0]})
#: The cap on rows per unit or per key: D's "codes 0-3" has exactly 15 rows of each code, so
#: D' (a row of a code more, or ``True``/``1.0`` for code 1) crosses it; the other codes
#: have 20 or 30 rows each, so both neighbours are truncated.
CAP = 15
#: explode's ``max_items``: each row's list holds three items, so every row is truncated.
ITEMS = 2


def _items(p: Any) -> Any:
    """A list column built row by row from the key (the adversarial value among its items)."""
    return p.assign(items=p["code"].map(lambda code: [code, "z", code]))


def _join_people(visits: Any) -> Any:
    """D is the visits table (``code`` its unit); a people table joins its session."""
    people = PEOPLE.dp.protect(
        session=visits.dp.session, privacy_unit="code", max_rows_per_unit=1, name="people"
    )
    return people.dp.merge(visits, on="code")


def _join_visits(people: Any) -> Any:
    """D is the people table (``code`` its unit); a visits table joins its session."""
    visits = OTHER.dp.protect(
        session=people.dp.session, privacy_unit="code", max_rows_per_unit=2, name="visits"
    )
    return people.dp.merge(visits, on="code")


def _private_join(left: Any) -> Any:
    """D is the left table of a private join (row-level) with another protected table."""
    right = OTHER.dp.protect(session=left.dp.session, name="right")
    return left.dp.merge(right, on="code", max_rows_per_key=CAP)


DERIVED: dict[str, Callable[[Any], Any]] = {
    "merge inner": lambda p: p.dp.merge(PUBLIC, on="code", how="inner"),
    "merge left": lambda p: p.dp.merge(PUBLIC, on="code", how="left"),
    "merge left, public key as text": lambda p: p.dp.merge(
        PUBLIC.assign(code=PUBLIC["code"].astype(str)), on="code", how="left"
    ),
    "merge one-to-many": lambda p: p.dp.merge(MANY, on="code"),
    "merge one-to-many, left": lambda p: p.dp.merge(MANY, on="code", how="left"),
    "explode a list column": lambda p: _items(p).dp.explode("items", max_items=ITEMS),
    "explode a column of scalars": lambda p: p.dp.explode("code", max_items=ITEMS),
    "melt two dtypes": lambda p: p.dp.melt(id_vars=["code"], value_vars=["x", "t"]),
    "melt one dtype": lambda p: p.assign(y=p["x"]).dp.melt(id_vars=["code"], value_vars=["x", "y"]),
    "join on the unit, D the visits": _join_people,
    "join on the unit, D the people": _join_visits,
    "private join": _private_join,
    "private join with itself": lambda p: p.dp.merge(p, on="code", max_rows_per_key=CAP),
}

#: How D is protected where a family needs more than a row-level session (default ``{}``).
PROTECTED_AS: dict[str, dict[str, Any]] = {
    "join on the unit, D the visits": {
        "privacy_unit": "code",
        "max_rows_per_unit": CAP,
        "name": "visits",
    },
    "join on the unit, D the people": {
        "privacy_unit": "code",
        "max_rows_per_unit": CAP,
        "name": "people",
    },
    "private join": {"name": "left"},
}


def _protect(frame: pd.DataFrame, family: str, epsilon: float) -> Any:
    return frame.dp.protect(epsilon=epsilon, **PROTECTED_AS.get(family, {}))


def _schema(frame: pd.DataFrame) -> tuple[object, ...]:
    return (list(frame.columns), [str(d) for d in frame.dtypes], type(frame.index).__name__)


class Case(NamedTuple):
    """A family (a derived frame or a release), an adversarial row, and D's codes."""

    family: str
    row: str
    codes: str

    @property
    def name(self) -> str:
        return "-".join(self)


def _stratum(case: Case) -> tuple[str, str]:
    return case.family, case.codes


def _grid(families: dict[str, Any], refusals: list[Refusal] | None = None) -> list[Any]:
    """Every (family, row, codes) case, those outside the default sample marked."""
    cases = [Case(f, r, c) for f in families for r in ADVERSARIAL for c in CODES]
    return params(
        cases,
        name=lambda c: c.name,
        stratum=_stratum,
        refused=lambda c: expected(refusals or [], c) is not None,
        values=tuple,
    )


@pytest.mark.parametrize(("derive", "row", "codes"), _grid(DERIVED))
def test_derived_frames_take_their_schema_from_public_inputs(
    derive: str, row: str, codes: str
) -> None:
    schemas = []
    for frame in (base(codes), neighbour(row, codes)):
        priv = _protect(frame, derive, epsilon=10.0)
        derived = DERIVED[derive](priv)
        schemas.append((*_schema(derived), derived.dp.session.stability))
    assert schemas[0] == schemas[1]


def test_left_join_dtypes_are_those_of_a_row_without_a_match() -> None:
    """The audit's first reproducer: D matches every key, D' has one row that matches none."""
    dtypes = []
    for codes in ([1, 2, 3] * 30, [1, 2, 3] * 30 + [4]):
        priv = pd.DataFrame({"code": codes}).dp.protect(epsilon=1.0)
        joined = priv.dp.merge(PUBLIC, on="code", how="left")
        dtypes.append(joined.dtypes.astype(str).to_dict())
    assert dtypes[0] == dtypes[1]
    # as pandas' own left join gives them when some row has no match
    expected = pd.DataFrame({"code": [4]}).merge(PUBLIC, on="code", how="left").dtypes
    assert dtypes[0] == expected.astype(str).to_dict()


def test_left_join_values_equal_pandas_up_to_the_documented_dtype() -> None:
    frame = pd.DataFrame({"code": [3, 1, 2, 2, 1]}, index=[10, 11, 12, 13, 14])
    joined = frame.dp.protect(epsilon=1.0).dp.merge(PUBLIC, on="code", how="left")
    expected = frame.merge(PUBLIC, on="code", how="left").set_axis(frame.index)
    pd.testing.assert_frame_equal(
        joined, expected.astype(joined.dtypes.to_dict()), check_dtype=True
    )
    assert str(joined["n"].dtype) == "float64"
    assert str(joined["flag"].dtype) == "object"


# --- the one matching step ------------------------------------------------------------------


def _zero_noise(priv: Any, release: Callable[[], Any]) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
        with capture_noise(priv):
            return release()


@pytest.mark.parametrize("first", [None, True, 1.0, np.int64(1), "1"])
def test_a_row_first_in_another_form_moves_a_count_by_at_most_one(first: object) -> None:
    """The audit's second reproducer: ``True`` before the integers moved a count by ~2,000."""
    base_rows = [False] + [1] * 1000 + [0] * 1000
    counts = []
    for values in (base_rows, base_rows if first is None else [first, *base_rows]):
        priv = pd.DataFrame({"code": pd.Series(values, dtype=object)}).dp.protect(epsilon=10)
        counts.append(
            _zero_noise(priv, lambda p=priv: p.dp.groupby("code", keys=[0, 1]).count(epsilon=1.0))
        )
    assert list(counts[0]) == [1001, 1000]  # False is key 0, as in Python and pandas
    moved = np.abs(np.asarray(counts[1]) - np.asarray(counts[0]))
    assert moved.sum() <= 1  # the added row moves one count by one, or none ("1" is text)


# --- release families -------------------------------------------------------------------------


@dataclass(frozen=True)
class Release:
    run: Callable[[Any], Any]
    #: The largest change one row may make to one pre-noise value (the sensitivity).
    sensitivity: float
    #: The derived frame whose protection D takes (``PROTECTED_AS``; "": row-level).
    protected_as: str = ""


def _logit(epsilon: float) -> Release:
    """``logit("I(y > 1) ~ C(code)")`` at ``epsilon``: a fit, not a sum, so its shape and
    refusals are what is compared."""
    return Release(
        lambda p: (
            p.assign(y=p["x"])
            .dp.logit(
                "I(y > 1) ~ C(code)", bounds={"y": BOUNDS}, keys={"code": KEYS}, epsilon=epsilon
            )
            .params
        ),
        math.inf,
    )


RELEASES: dict[str, Release] = {
    "count": Release(lambda p: p.dp.count(epsilon=1.0), 1),
    "sum": Release(lambda p: p.dp.sum("x", bounds=BOUNDS, epsilon=1.0), 100),
    "groupby count": Release(lambda p: p.dp.groupby("code", keys=KEYS).count(epsilon=1.0), 1),
    "groupby size": Release(lambda p: p.dp.groupby("code", keys=KEYS).size(epsilon=1.0), 1),
    "groupby sum": Release(
        lambda p: p.dp.groupby("code", keys=KEYS)["x"].sum(bounds=BOUNDS, epsilon=1.0), 100
    ),
    "value_counts": Release(lambda p: p["code"].dp.value_counts(keys=KEYS, epsilon=1.0), 1),
    "crosstab": Release(
        lambda p: p.assign(h=1).dp.crosstab(
            "code", "h", keys={"code": KEYS, "h": [1]}, epsilon=1.0
        ),
        1,
    ),
    "pivot_table sum": Release(
        lambda p: p.assign(h=1).dp.pivot_table(
            "x",
            "code",
            "h",
            keys={"code": KEYS, "h": [1]},
            bounds=BOUNDS,
            aggfunc="sum",
            epsilon=1.0,
        ),
        100,
    ),
    "value_counts, shares of all rows over a subset of keys": Release(
        lambda p: p["code"].dp.value_counts(keys=[1, 2], normalize=True, epsilon=1.0),
        math.inf,  # shares: their shape, refusals and warnings are what is compared
    ),
    "crosstab, row shares over a subset of keys": Release(
        lambda p: p.assign(h=1).dp.crosstab(
            "code", "h", keys={"code": [1, 2], "h": [1]}, normalize="index", epsilon=1.0
        ),
        math.inf,
    ),
    "merge, then groupby count": Release(
        lambda p: (
            p.dp.merge(PUBLIC, on="code")
            .dp.groupby("name", keys=["a", "b", "c"])
            .count(epsilon=1.0)
        ),
        1,
    ),
    "left merge, then sum of a public column": Release(
        lambda p: p.dp.merge(PUBLIC, on="code", how="left").dp.sum("n", bounds=BOUNDS, epsilon=1.0),
        100,
    ),
    "left merge, then sum of a public bool": Release(
        lambda p: p.dp.merge(PUBLIC, on="code", how="left").dp.sum(
            "flag", bounds=(0, 1), epsilon=1.0
        ),
        1,
    ),
    "time bins": Release(
        lambda p: (
            p.assign(t=pd.to_datetime(p["t"], utc=True))
            .dp.resample("D", on="t", range=(T0, T1))
            .size(epsilon=1.0)
        ),
        1,
    ),
    "grouper and keys": Release(
        lambda p: (
            p.assign(t=pd.to_datetime(p["t"], utc=True))
            .dp.groupby([pd.Grouper(key="t", freq="D"), "code"], keys=KEYS, range=(T0, T1))
            .size(epsilon=1.0)
        ),
        1,
    ),
    "ols with C(code)": Release(
        lambda p: (
            p.assign(y=p["x"])
            .dp.ols("y ~ C(code)", bounds={"y": BOUNDS}, keys={"code": KEYS}, epsilon=1.0)
            .params
        ),
        math.inf,  # a fit, not a sum: its shape and refusals are what is compared
    ),
    "logit with C(code)": _logit(1.0),
    # count·ε = 60 · 200 over 150 times the 21 sums: a count, a first fit, then the score,
    # whose derived frame (each row's residual at the released fit) is built from the rows
    # (codes 0-3); where D's codes leave a level empty, the first fit is unsteady and the
    # sums are measured again (codes 0-1, 1-3): both of the second step's routes
    "logit in two steps": _logit(200.0),
    "ols per code": Release(
        lambda p: (
            p.assign(y=p["x"])
            .dp.groupby("code", keys=KEYS)
            .ols("y ~ I(x > 50)", bounds={"x": BOUNDS, "y": BOUNDS}, epsilon=100.0)
            .params
        ),
        math.inf,  # one fit per key: its shape (keys, coefficients) and refusals are compared
    ),
    # the other derived frames (§10), each with a grouped count and a sum or mean; a row
    # moves at most (stability × a row's sensitivity), where the cap draws the same rows
    "merge one-to-many, then groupby count": Release(
        lambda p: p.dp.merge(MANY, on="code").dp.groupby("day", keys=DAYS).count(epsilon=1.0),
        3,  # a key matches up to three public rows
    ),
    "merge one-to-many, left, then sum": Release(
        lambda p: p.dp.merge(MANY, on="code", how="left").dp.sum("x", bounds=BOUNDS, epsilon=1.0),
        3 * 100,
    ),
    "explode, then groupby count": Release(
        lambda p: (
            _items(p)
            .dp.explode("items", max_items=ITEMS)
            .dp.groupby("items", keys=KEYS)
            .count(epsilon=1.0)
        ),
        ITEMS,
    ),
    "explode, then sum": Release(
        lambda p: (
            _items(p).dp.explode("items", max_items=ITEMS).dp.sum("x", bounds=BOUNDS, epsilon=1.0)
        ),
        ITEMS * 100,
    ),
    "melt, then groupby count": Release(
        lambda p: (
            p.dp.melt(id_vars=["code"], value_vars=["x", "t"])
            .dp.groupby("variable", keys=["x", "t"])
            .count(epsilon=1.0)
        ),
        2,  # two melted columns
    ),
    "melt, then mean": Release(
        lambda p: (
            p.assign(y=p["x"])
            .dp.melt(id_vars=["code"], value_vars=["x", "y"])
            .dp.mean("value", bounds=BOUNDS, epsilon=1.0)
        ),
        100,  # a mean stays within the bounds (its shape and refusals are what is compared)
    ),
    "join on the unit, D the visits, then groupby count": Release(
        lambda p: _join_people(p).dp.groupby("age", keys=[20, 30, 40, 50]).count(epsilon=1.0),
        # one unit is one group: a cell holds at most its cap of joined rows, whichever
        # rows the cap keeps (it draws afresh on each neighbour: coupled draws are brute-
        # forced in tests/api/test_several_tables.py)
        CAP,
        "join on the unit, D the visits",
    ),
    "join on the unit, D the visits, then sum": Release(
        lambda p: _join_people(p).dp.sum("x", bounds=BOUNDS, epsilon=1.0),
        math.inf,  # the cap draws afresh on each neighbour: shape and refusals compared
        "join on the unit, D the visits",
    ),
    "join on the unit, D the people, then groupby count": Release(
        lambda p: _join_visits(p).dp.groupby("code", keys=KEYS).count(epsilon=1.0),
        2 * CAP,  # a unit is one group: at most the view's cap, CAP · 2, joined rows
        "join on the unit, D the people",
    ),
    "join on the unit, D the people, then mean": Release(
        lambda p: _join_visits(p).dp.mean("y", bounds=BOUNDS, epsilon=1.0),
        100,  # a mean stays within the bounds (its shape and refusals are what is compared)
        "join on the unit, D the people",
    ),
    "private join, then groupby count": Release(
        lambda p: _private_join(p).dp.groupby("code", keys=KEYS).count(epsilon=1.0),
        2 * CAP,  # a key's cell holds at most CAP left rows times 2 right rows
        "private join",
    ),
    "private join, then sum": Release(
        lambda p: _private_join(p).dp.sum("x", bounds=BOUNDS, epsilon=1.0),
        math.inf,  # truncation draws afresh on each neighbour (coupled: test_private_join.py)
        "private join",
    ),
}


#: Why both neighbours of a case are refused: every other case releases on both.
REFUSALS = [
    Refusal(
        lambda c: c.family == "left merge, then sum of a public bool",
        "DPTypeError",
        r"column 'flag' has dtype object; .*this release needs .*int, float or bool",
        "a left join gives a public bool column the dtype pandas gives it when some row has "
        "no match (object), whatever the rows (test_left_join_dtypes_are_those_of_a_row_"
        "without_a_match), and a sum refuses an object column: the family checks that D and "
        "D' are refused alike",
        never_runs=True,
    ),
]
CASES = [Case(f, r, c) for f in RELEASES for r in ADVERSARIAL for c in CODES]


@dataclass(frozen=True)
class Outcome:
    kind: str  # the result's type, or the exception's
    text: str  # the refusal's text ("" for a release)
    warnings: tuple[tuple[str, str], ...]
    shape: tuple[object, ...]
    values: np.ndarray | None
    refused: bool = False


def _observe(frame: pd.DataFrame, release: Release) -> Outcome:
    priv = _protect(frame, release.protected_as, epsilon=1000.0)
    seen: list[tuple[str, str]] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with capture_noise(priv):
                result = release.run(priv)
        except Exception as error:  # the refusal is what is compared
            result, failure = None, error
        else:
            failure = None
    seen = [
        (w.category.__name__, str(w.message))
        for w in caught
        # capture_noise's own warning; and the noise warning, which reads the released
        # (noisy) values only: post-processing, which may differ between D and D'
        if not issubclass(
            w.category, pandas_dp.PrivacyLeakWarning | pandas_dp.NoiseDominatedWarning
        )
    ]
    if failure is not None:
        return Outcome(type(failure).__name__, str(failure), tuple(seen), (), None, True)
    if isinstance(result, pd.DataFrame | pd.Series):
        result = result.sort_index()  # value_counts orders by the noisy counts
        shape = (
            type(result).__name__,
            type(result.index).__name__,
            str(result.index.dtype),
            tuple(map(str, result.dtypes))
            if isinstance(result, pd.DataFrame)
            else (str(result.dtype),),
            list(result.index),
            list(result.columns) if isinstance(result, pd.DataFrame) else result.name,
        )
        values = np.asarray(result, dtype=float)
    else:
        shape = (type(result).__name__,)
        values = np.asarray([result], dtype=float)
    return Outcome(type(result).__name__, "", tuple(seen), shape, values)


@pytest.mark.parametrize(("family", "row", "codes"), _grid(RELEASES, REFUSALS))
def test_a_neighbour_gets_the_same_schema_refusals_and_warnings(
    family: str, row: str, codes: str
) -> None:
    release = RELEASES[family]
    d, d2 = _observe(base(codes), release), _observe(neighbour(row, codes), release)
    assert (d.kind, d.text) == (d2.kind, d2.text)
    assert d.warnings == d2.warnings
    assert d.shape == d2.shape
    if d.values is not None and d2.values is not None and math.isfinite(release.sensitivity):
        moved = np.abs(np.nan_to_num(d2.values) - np.nan_to_num(d.values))
        assert moved.max(initial=0.0) <= release.sensitivity
    case = Case(family, row, codes)
    refusals = [(o.kind if o.refused else None, o.text) for o in (d, d2)]
    assert_refusal(case.name, expected(REFUSALS, case), *refusals)  # as REFUSALS states


def test_every_family_runs_somewhere_and_every_refusal_rule_is_live() -> None:
    check_rules(CASES, REFUSALS, stratum=_stratum, release=lambda c: c.family)
