"""R2, R3, R5, R6 (issue 13): how rows find their group, whatever the values.

- R2: keys chosen privately carry a canonical representation, never one row's (``-0.0``
  vs ``0.0``, ``True`` vs ``1`` vs ``1.0``, Decimal scale, time zones, ``np.str_``).
- R3: combined key codes never multiply private cardinalities (no overflow, no garbled key).
- R5: unhashable or incomparable key values are dropped like values outside the keys.
- R6: no warning escapes a release, and the engine builds nothing that warns on data.
"""

from __future__ import annotations

import datetime
import warnings
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

import pandas_dp
from pandas_dp.engines.canonical import canonical_value
from pandas_dp.engines.codes import combine, observed_codes, public_codes
from pandas_dp.engines.pandas_engine import aggregate_frame
from pandas_dp.measures.aggregates import Grouping, Rows
from pandas_dp.testing import capture_noise


def zero_noise(priv: Any, release: Callable[[], Any]) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
        with capture_noise(priv):
            return release()


def _signature(index: pd.Index) -> list[tuple[str, str]]:
    """Each released key's type and exact text (repr tells -0.0 from 0.0)."""
    return [(type(k).__name__, repr(k)) for k in index]


# --- R2 -------------------------------------------------------------------------------------


@pytest.mark.parametrize("first", [-0.0, 0.0])
def test_signed_zero_of_the_first_row_is_not_released(first: float) -> None:
    """The reviewer's reproducer: the released key's sign bit read one row's secret."""
    keys = np.array([first] + [0.0] * 99)
    priv = pd.DataFrame({"k": keys}).dp.protect(epsilon=10.0, delta=1e-6)
    counts = zero_noise(
        priv, lambda: priv.dp.groupby("k", selection="threshold").count(epsilon=5.0)
    )
    assert list(counts.index) == [0.0]
    assert not np.signbit(counts.index[0])


EQUAL_CLASSES = {
    "bool, int and float": [True, 1, 1.0, np.int64(1), np.float32(1.0), Decimal("1.00")],
    "decimal scale": [Decimal("1.10"), Decimal("1.1"), Decimal("1.100")],
    "time zones": [
        pd.Timestamp("2020-01-01 12:00", tz="UTC"),
        pd.Timestamp("2020-01-01 13:00", tz="Europe/Paris"),
        pd.Timestamp("2020-01-01 07:00", tz="America/New_York"),
    ],
    "text types": ["a", np.str_("a")],
    "fractions": [Fraction(1, 2), 0.5, Decimal("0.5")],
    "decimal and fraction": [Decimal("1.10"), Fraction(11, 10), Decimal("1.1")],
    "tuples": [(1, "a"), (True, np.str_("a")), (1.0, "a")],
}


@pytest.mark.parametrize("members", EQUAL_CLASSES.values(), ids=EQUAL_CLASSES.keys())
def test_equal_values_release_one_representation_whichever_comes_first(members: list) -> None:
    released = []
    for first in members:
        column = pd.Series([first] + members * 30, dtype=object)
        priv = pd.DataFrame({"k": column}).dp.protect(epsilon=10.0, delta=1e-6)
        counts = zero_noise(
            priv, lambda p=priv: p.dp.groupby("k", selection="threshold").count(epsilon=5.0)
        )
        assert len(counts) == 1
        released.append(_signature(counts.index))
    assert all(r == released[0] for r in released)


def test_canonical_values_are_a_function_of_the_value() -> None:
    assert canonical_value(-0.0) == 0
    assert isinstance(canonical_value(-0.0), int)
    assert repr(canonical_value(-0.5)) == "-0.5"
    assert canonical_value(True) == 1
    assert type(canonical_value(True)) is int
    assert canonical_value(Decimal("0.1")) == Decimal("0.1")  # not a float: 0.1 != Decimal
    assert canonical_value(float("nan")) is None
    assert canonical_value([1]) is None  # unhashable: dropped
    assert canonical_value(object()) is None  # an unknown type: dropped
    assert canonical_value(Decimal("sNaN")) is None
    stamp = canonical_value(pd.Timestamp("2020-01-01", tz="Asia/Tokyo"))
    assert str(stamp.tz) == "UTC"
    assert stamp.unit == "ns"


def test_categorical_categories_are_canonical_too() -> None:
    column = pd.Series(pd.Categorical([-0.0] * 50 + [1.0] * 50))
    priv = pd.DataFrame({"k": column}).dp.protect(epsilon=10.0, delta=1e-6)
    counts = zero_noise(
        priv, lambda: priv.dp.groupby("k", selection="threshold").count(epsilon=5.0)
    )
    assert _signature(counts.index) == [("int", "0"), ("int", "1")]


# --- R3 -------------------------------------------------------------------------------------


def test_sixty_four_binary_columns_and_a_rare_value_release_no_garbled_key() -> None:
    """Private selection over 65 columns: 2**64 combinations would overflow a stride."""
    rng = np.random.default_rng(3)  # test data only
    n = 400
    frame = pd.DataFrame({f"b{i}": np.zeros(n, dtype=np.int64) for i in range(64)})
    frame.iloc[: n // 2, :] = 1
    frame["diagnosis"] = "common"
    frame.loc[n - 1, "diagnosis"] = "HIV-secret"  # one row: must not be released
    frame["b63"] = rng.permutation(frame["b63"].to_numpy())
    priv = frame.dp.protect(epsilon=10.0, delta=1e-6)
    by = [*(f"b{i}" for i in range(64)), "diagnosis"]
    counts = zero_noise(priv, lambda: priv.dp.groupby(by, selection="threshold").count(epsilon=5.0))
    released = set(counts.index)
    assert all(key[-1] == "common" for key in released)
    true = frame.groupby(by).size()
    for key, value in counts.items():
        assert value == true[key]  # every released key exists, with its exact count


def test_public_keys_over_many_columns_do_not_overflow() -> None:
    columns = 70  # 2**70 possible keys: no stride product may be formed
    frame = pd.DataFrame({f"c{i}": [0, 1, 1] for i in range(columns)})
    keys = pd.MultiIndex.from_tuples(
        [(0,) * columns, (1,) * columns, (0, 1) * (columns // 2)], names=list(frame.columns)
    )
    grouping = Grouping(tuple(frame.columns), keys)
    (counts,) = aggregate_frame(frame, (Rows(),), grouping).values
    assert counts.tolist() == [1, 2, 0]


def test_combined_codes_match_a_dictionary_lookup() -> None:
    rng = np.random.default_rng(11)
    levels = [rng.integers(-1, 4, 500) for _ in range(5)]
    keys = pd.MultiIndex.from_product([range(4)] * 5)
    key_codes = [np.asarray(keys.codes[i], dtype=np.int64) for i in range(5)]
    got = combine([np.asarray(level, dtype=np.int64) for level in levels], key_codes)
    lookup = {key: i for i, key in enumerate(keys)}
    expected = [-1 if min(row) < 0 else lookup[tuple(row)] for row in zip(*levels, strict=True)]
    assert got.tolist() == expected


# --- R5 -------------------------------------------------------------------------------------

UNPROCESSABLE = {
    "list": [1, 2],
    "dict": {"a": 1},
    "set": {1},
    "signalling NaN": Decimal("sNaN"),
}


@pytest.mark.parametrize("bad", UNPROCESSABLE.values(), ids=UNPROCESSABLE.keys())
def test_unprocessable_key_values_are_dropped_not_raised(bad: Any) -> None:
    values = ["a"] * 20 + ["b"] * 10
    plain = pd.DataFrame({"k": pd.Series(values, dtype=object), "x": 1.0})
    tainted = pd.DataFrame({"k": pd.Series([*values, bad], dtype=object), "x": 1.0})
    results = []
    for frame in (plain, tainted):
        priv = frame.dp.protect(epsilon=50.0, delta=1e-6)
        g = priv.dp.groupby("k", keys=["a", "b"])
        results.append(
            zero_noise(
                priv,
                lambda p=priv, g=g: (
                    g.count(epsilon=1.0).tolist(),
                    g.mean("x", bounds=(0, 2), epsilon=1.0).tolist(),
                    p["k"].dp.value_counts(keys=["a", "b"], epsilon=1.0, sort=False).tolist(),
                    p["k"].dp.mode(candidates=["a", "b"], epsilon=1.0),
                    list(p.dp.groupby("k", selection="threshold").count(epsilon=1.0).index),
                ),
            )
        )
    assert results[0] == results[1]
    assert results[0][0] == [20, 10]


def test_public_codes_fall_back_row_by_row_with_the_same_answer() -> None:
    keys = pd.Index(["a", "b"], name="k")
    clean = pd.DataFrame({"k": pd.Series(["a", "b", "c", None], dtype=object)})
    dirty = pd.DataFrame({"k": pd.Series(["a", "b", "c", None, [1]], dtype=object)})
    assert public_codes(clean, ("k",), keys).tolist() == [0, 1, -1, -1]
    assert public_codes(dirty, ("k",), keys).tolist() == [0, 1, -1, -1, -1]


# --- R6 -------------------------------------------------------------------------------------


def test_tuple_keys_chosen_privately_raise_no_warning() -> None:
    frame = pd.DataFrame({"a": pd.Series([(1, 2)] * 40 + [(3, 4)] * 40, dtype=object)})
    frame["b"] = ["x", "y"] * 40
    priv = frame.dp.protect(epsilon=10.0, delta=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # anything but the capture's own warning fails
        warnings.filterwarnings("ignore", category=pandas_dp.PrivacyLeakWarning)
        with capture_noise(priv):
            counts = priv.dp.groupby(["a", "b"], selection="threshold").count(epsilon=5.0)
    assert sorted(counts.index) == [((1, 2), "x"), ((1, 2), "y"), ((3, 4), "x"), ((3, 4), "y")]


def test_observed_keys_keep_their_dtype() -> None:
    frame = pd.DataFrame(
        {"n": pd.array([1, 2, 2], dtype="Int64"), "d": [datetime.date(2020, 1, 1)] * 3}
    )
    keys, codes = observed_codes(frame, ("n",))
    assert str(keys.dtype) == "Int64"
    assert codes.tolist() == [0, 1, 1]


def _observed_rule(frame: pd.DataFrame, by: tuple[str, ...]) -> dict[tuple, list[int]]:
    """The contract, row by row: each canonical key combination and the rows that hold it."""
    rows: dict[tuple, list[int]] = {}
    for position, values in enumerate(frame[list(by)].itertuples(index=False)):
        key = tuple(canonical_value(v) for v in values)
        if all(part is not None for part in key):
            rows.setdefault(key, []).append(position)
    return rows


@pytest.mark.parametrize(
    "by", [("s",), ("c",), ("s", "n"), ("c", "n", "s")], ids=["str", "cat", "two", "three"]
)
def test_observed_codes_follow_the_row_by_row_rule(by: tuple[str, ...]) -> None:
    """Hash passes and counting (no sort of the rows) give each row the key its values make;
    a categorical column is coded through its categories, and a category without rows makes
    no key."""
    gen = np.random.default_rng(3)  # test data only
    n = 400
    strings = np.array(["a", "b", "c", None], dtype=object)[gen.integers(0, 4, n)]
    cats = pd.Categorical(
        np.array([1, "z", 2.5, -0.0], dtype=object)[gen.integers(0, 4, n)],
        categories=[1, "z", 2.5, -0.0, 99],
    )
    frame = pd.DataFrame({"s": strings, "c": cats, "n": gen.integers(0, 3, n)})
    frame.loc[::17, "c"] = np.nan
    keys, codes = observed_codes(frame, by)
    rule = _observed_rule(frame, by)
    assert len(keys) == len(rule)
    for key, rows in rule.items():
        position = keys.get_loc(key[0] if len(by) == 1 else key)
        assert codes[rows].tolist() == [position] * len(rows)
    unmatched = np.setdiff1d(np.arange(n), np.concatenate([*map(np.asarray, rule.values())]))
    assert (codes[unmatched] == -1).all()
    if "c" in by:
        assert 99 not in set(keys.get_level_values(by.index("c")))
