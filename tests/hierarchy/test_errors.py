"""Mistakes are refused before any data is read or any budget is spent, with messages that
name the problem and the fix (and never a value found only in the data)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import pandas_dp
from pandas_dp import DPKeyError, DPTypeError, DPValueError, NotProtectedError

BY = ["region", "district"]

BAD_KEYS = [
    pytest.param(None, DPValueError, "needs public keys", id="no keys, no schema"),
    pytest.param("north", DPTypeError, "list of values", id="a string"),
    pytest.param(5, DPTypeError, "list of values", id="a scalar"),
    pytest.param({"north": "n1"}, DPTypeError, "list of values", id="a string of children"),
    pytest.param({"north": []}, DPValueError, "at least one child", id="no children"),
    pytest.param({"north": ["n1", "n1"]}, DPValueError, "duplicates", id="repeated sibling"),
    pytest.param({"north": ["n1", None]}, DPValueError, "missing value", id="None key"),
    pytest.param({"north": ["n1", np.nan]}, DPValueError, "missing value", id="NaN key"),
    pytest.param({"north": [["n1"]]}, DPTypeError, "hashable", id="unhashable key"),
    pytest.param({"north": {"n1": ["x"]}}, DPTypeError, "one level too many", id="too deep"),
    pytest.param({"north": ["All"]}, DPValueError, "margins_name='All'", id="collides: child"),
    pytest.param({"All": ["n1"]}, DPValueError, "margins_name='All'", id="collides: parent"),
    pytest.param(
        {"region": ["north"]}, DPValueError, "one entry per column", id="per-level: 1 column"
    ),
    pytest.param(
        {"region": ["north"], "district": ["n1"], "zone": ["z"]}, DPValueError,
        "one entry per column", id="per-level: extra column",
    ),
    pytest.param(
        {"region": ["north", "south"], "district": {"north": ["n1"]}},
        DPValueError, "no children for 'south'", id="per-level: parent without children",
    ),
    pytest.param(
        {"region": ["north"], "district": {"north": ["n1"], "west": ["w1"]}},
        DPValueError, "not in the level above: \\['west'\\]", id="per-level: unknown parent",
    ),
    pytest.param(
        {"region": "north", "district": ["n1"]}, DPTypeError, "list of values",
        id="per-level: a string",
    ),
    pytest.param([("north", "n1"), ("north",)], DPValueError, "2-tuples", id="short path"),
    pytest.param([("north", "n1"), ("north", "n1")], DPValueError, "twice", id="repeated path"),
    pytest.param(
        pd.MultiIndex.from_tuples([("a", "b", "c")]), DPValueError, "3 levels", id="deep index"
    ),
    pytest.param(
        {"north": {"n1": [1, 2]}}, DPTypeError, "must be a list of .district. values",
        id="deeper than by",
    ),
]  # fmt: skip


@pytest.fixture
def priv(regional, protect_seeded):
    return protect_seeded(regional, epsilon=1.0)


@pytest.mark.parametrize(("keys", "error", "match"), BAD_KEYS)
def test_bad_keys_are_refused_before_anything_is_charged(priv, charges_nothing, keys, error, match):
    with charges_nothing(priv), pytest.raises(error, match=match):
        priv.dp.hierarchy(BY, keys=keys).count(epsilon=0.5)


def test_ambiguous_parent_must_be_named_by_its_path(priv, charges_nothing):
    keys = {
        "region": ["north", "south"],
        "district": {"north": ["central"], "south": ["central"]},
        "pid": {"central": [1, 2]},
    }
    with charges_nothing(priv), pytest.raises(DPValueError, match="full path"):
        priv.dp.hierarchy([*BY, "pid"], keys=keys)
    keys["pid"] = {("north", "central"): [1], ("south", "central"): [2, 3]}
    hierarchy = priv.dp.hierarchy([*BY, "pid"], keys=keys)
    assert hierarchy.hierarchy.tree.widths == (1, 2, 2, 3)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"epsilon": 0}, DPValueError, "epsilon"),
        ({"epsilon": float("nan")}, DPValueError, "epsilon"),
        ({"epsilon": "1"}, DPTypeError, "epsilon"),
        ({"epsilon": 0.5, "split": [1, 1]}, DPValueError, "3 levels"),
        ({"epsilon": 0.5, "split": [1, 0, 1]}, DPValueError, "positive"),
        ({"epsilon": 0.5, "split": [1, -1, 1]}, DPValueError, "positive"),
        ({"epsilon": 0.5, "split": [1, float("inf"), 1]}, DPValueError, "finite"),
        ({"epsilon": 0.5, "split": [1, True, 1]}, DPTypeError, "numbers"),
        ({"epsilon": 0.5, "split": "equal"}, DPTypeError, "list of 3"),
        ({"epsilon": 1e-8, "split": [1, 1, 100]}, DPValueError, "level 'All' with ε = 9.8e-11"),
        ({"epsilon": 0.5, "ci": 0.95}, DPValueError, "post-processed"),
        ({"epsilon": 0.5, "output": "frame"}, DPValueError, "output must be one of"),
        ({"epsilon": 2.0}, pandas_dp.BudgetExceededError, "budget|exceed"),
    ],
)
def test_bad_release_arguments_charge_nothing(priv, keys, charges_nothing, kwargs, error, match):
    hierarchy = priv.dp.hierarchy(BY, keys=keys)
    with charges_nothing(priv), pytest.raises(error, match=match):
        hierarchy.count(**kwargs)


def test_key_types_must_match_the_columns(priv, charges_nothing):
    with charges_nothing(priv), pytest.raises(DPTypeError, match="'pid' holds numbers"):
        priv.dp.hierarchy([*BY, "pid"], keys={"north": {"n1": ["1", "2"]}})
    strings = priv.assign(district=priv["district"].astype("string"))  # a string dtype on 2.2 too
    with charges_nothing(priv), pytest.raises(DPTypeError, match="holds strings"):
        strings.dp.hierarchy(BY, keys={"north": [1, 2]})


def test_missing_column_and_bad_by(priv, keys, charges_nothing):
    with charges_nothing(priv):
        with pytest.raises(DPKeyError, match="'zone' not found"):
            priv.dp.hierarchy(["region", "zone"], keys={"north": ["n1"]})
        with pytest.raises(DPValueError, match="twice"):
            priv.dp.hierarchy(["region", "region"], keys=keys)
        with pytest.raises(DPValueError, match="at least one column"):
            priv.dp.hierarchy([], keys=keys)


def test_margins_name_must_be_usable(priv, keys, charges_nothing):
    with charges_nothing(priv):
        with pytest.raises(DPValueError, match="missing"):
            priv.dp.hierarchy(BY, keys=keys, margins_name=None)
        with pytest.raises(DPTypeError, match="hashable"):
            priv.dp.hierarchy(BY, keys=keys, margins_name=["All"])
        with pytest.raises(DPValueError, match="is also a key of 'district'"):
            priv.dp.hierarchy(BY, keys=keys, margins_name="central")
        with pytest.raises(DPValueError, match="also a column"):
            priv.dp.hierarchy(BY, keys=keys, margins_name="region").count(
                epsilon=0.1, output="levels"
            )


def test_caps_need_a_privacy_unit(priv, keys, charges_nothing):
    with charges_nothing(priv), pytest.raises(DPValueError, match="need a privacy unit"):
        priv.dp.hierarchy(BY, keys=keys, max_groups_per_unit=2)


def test_unprotected_frames_and_units_without_their_column(regional, keys, protect_seeded):
    with pytest.raises(NotProtectedError):
        regional.dp.hierarchy(BY, keys=keys)
    priv = protect_seeded(regional, epsilon=1.0, privacy_unit="pid", max_rows_per_unit=2)
    # Which unit a row belongs to is read from the unit column: a frame without it is
    # refused, one that keeps it releases however its rows were renumbered.
    with pytest.raises(NotProtectedError, match="lacks the privacy-unit column"):
        priv[BY].dp.hierarchy(BY, keys=keys).count(epsilon=0.5)
    assert priv.dp.session.spent.epsilon == 0
    relabelled = priv[[*BY, "pid"]].reset_index(drop=True).set_axis(np.arange(len(priv)) + 10**6)
    table = relabelled.dp.hierarchy(BY, keys=keys).count(epsilon=0.5)
    assert (table >= 0).all()


def test_messages_name_no_data_value(priv, charges_nothing):
    """The data holds region 'west' and district 's1' under 'north'; keys that miss them are
    fine and no error or note ever mentions them."""
    with charges_nothing(priv), pytest.raises(DPValueError) as info:
        priv.dp.hierarchy(BY, keys={"north": ["n1"], "All": ["x"]})
    assert "west" not in str(info.value)
    assert "s1" not in str(info.value)


@pytest.mark.parametrize(
    ("by", "keys", "error", "match"),
    [
        ("region", ["north", "north"], DPValueError, "duplicates"),
        ("region", ["north", None], DPValueError, "missing value"),
        ("region", [["north"]], DPTypeError, "hashable, got a list"),
        (BY, [("north", ["n1"])], DPTypeError, "hashable"),
        (BY, pd.MultiIndex.from_tuples([("north", "n1"), ("north", np.nan)]), DPValueError,
         "missing value"),
        (BY, {"region": ["north"], "district": {"north": "n1"}}, DPTypeError, "list of values"),
        (BY, {"region": ["north"], "district": ["n1", "n1"]}, DPValueError, "duplicates"),
        (BY, {"region": ["north", "north"], "district": ["n1"]}, DPValueError, "duplicates"),
        (BY, {"region": ["north"], "district": {"north": []}}, DPValueError, "at least one"),
    ],
)  # fmt: skip
def test_more_bad_keys(priv, charges_nothing, by, keys, error, match):
    with charges_nothing(priv), pytest.raises(error, match=match):
        priv.dp.hierarchy(by, keys=keys)
