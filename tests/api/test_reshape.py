"""``priv.dp.explode(column, max_items=c)`` and ``priv.dp.melt(...)``: reshapes with a stability.

The result is pandas' ``explode`` / ``melt`` (values, columns, row order, repeated labels);
under row-level privacy it is protected by a view of the session whose stability (``c``, or
``v`` melted columns) multiplies every later release's sensitivity: checked by brute force on
neighbours (one row less, one adversarial row more) and on the scale handed to the sampler.
Refusals come before any charge.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

from pandas_dp import DPKeyError, DPTypeError, DPValueError, DuplicatedRowsError

C = 3
KEYS = ["a", "b", "c", "d"]
BOUNDS = (0, 10)


def tagged(rows: int = 60) -> pd.DataFrame:
    """Rows with lists of 0 to C tags (some NaN), an integer ``x``, a ``pid`` and ``y``."""
    gen = np.random.default_rng(11)  # test data only, never noise
    tags: list[Any] = [list(gen.choice(KEYS, gen.integers(0, C + 1))) for _ in range(rows)]
    tags[5] = np.nan
    tags[7] = ("a", "d")  # a tuple is list-like too
    return pd.DataFrame(
        {
            "pid": np.arange(rows) // 2,
            "tags": tags,
            "x": gen.integers(0, 12, rows),  # 11 is clipped
            "y": gen.integers(0, 5, rows),
            "g": gen.choice(["u", "v"], rows),
        }
    )


def plain(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    out.attrs = {}
    return out


def releases(frame: pd.DataFrame, by: str) -> list[Any]:
    """A count, a sum and a grouped count (with whatever noise the caller set)."""
    return [
        frame.dp.count(epsilon=1.0),
        frame.dp.sum("x", bounds=BOUNDS, epsilon=1.0),
        frame.dp.groupby(by, keys=KEYS if by == "tags" else ["x", "y"]).count(epsilon=1.0),
    ]


# --- the result is pandas' ------------------------------------------------------------------


@pytest.mark.parametrize("ignore_index", [False, True])
def test_explode_is_pandas_explode_when_no_row_exceeds_c(ignore_index: bool) -> None:
    data = tagged()
    priv = data.dp.protect(epsilon=1.0)
    ours = priv.dp.explode("tags", max_items=C, ignore_index=ignore_index)
    theirs = data.explode("tags", ignore_index=ignore_index)
    # pandas 3 infers str (every item is a string); pandas 2.2 keeps object
    inferred = "str" if int(pd.__version__.split(".")[0]) >= 3 else object
    assert theirs["tags"].dtype == inferred
    theirs["tags"] = theirs["tags"].astype(object)  # here, always object (public)
    pd.testing.assert_frame_equal(plain(ours), theirs, check_index_type=False)
    assert ours.dp.session.stability == C
    assert ours.dp.session.root is priv.dp.session  # one budget


def test_explode_keeps_the_first_c_items_and_makes_empty_and_missing_one_row() -> None:
    data = pd.DataFrame({"tags": [list("abcdef"), [], np.nan, "text", iter("xyz")]})
    out = data.dp.protect(epsilon=1.0).dp.explode("tags", max_items=2)
    assert out["tags"].tolist()[:2] == ["a", "b"]
    assert out["tags"].isna().tolist() == [False, False, True, True, False, False, False]
    assert out["tags"].tolist()[4:] == ["text", "x", "y"]
    assert out.index.tolist() == [0, 0, 1, 2, 3, 4, 4]


def test_several_columns_explode_together_and_uneven_rows_are_padded() -> None:
    data = pd.DataFrame({"a": [[1, 2], [3], []], "b": [["x", "y"], ["z"], []]})
    priv = data.dp.protect(epsilon=1.0)
    pd.testing.assert_frame_equal(
        plain(priv.dp.explode(["a", "b"], max_items=2)),
        data.explode(["a", "b"]).astype(object),  # pandas infers str for "b"
        check_index_type=False,
    )
    uneven = pd.DataFrame({"a": [[1, 2, 3], 7, [4]], "b": [["x"], ["y", "z"], [np.nan]]})
    with pytest.raises(ValueError, match="matching element counts"):
        uneven.explode(["a", "b"])  # pandas refuses, on a row's values
    out = uneven.dp.protect(epsilon=1.0).dp.explode(["a", "b"], max_items=2)
    assert out.index.tolist() == [0, 0, 1, 1, 2]
    assert out["a"].isna().tolist() == [False, False, False, True, False]
    assert out["a"].dropna().tolist() == [1, 2, 7, 4]
    assert out["b"].isna().tolist() == [False, True, False, False, True]
    assert out["b"].dropna().tolist() == ["x", "y", "z"]


def test_the_schema_does_not_depend_on_the_rows() -> None:
    """D (no row repeats) and D plus an adversarial row: same dtypes and index type."""
    scalars = pd.DataFrame({"tags": pd.Series([1, 2, 3], dtype=object), "x": [1, 2, 3]})
    texts = pd.DataFrame({"tags": [["a"], ["b", "c"], []], "x": [1, 2, 3]})
    adversarial = pd.DataFrame(
        {"tags": [list(range(50)), np.nan, [], [pd.Timestamp(0)]], "x": [4, 5, 6, 7]}
    )
    shapes = []
    for frame in (scalars, texts, pd.concat([texts, adversarial], ignore_index=True)):
        out = frame.dp.protect(epsilon=1.0).dp.explode("tags", max_items=C)
        shapes.append((out.dtypes.to_dict(), type(out.index), out.index.dtype))
    assert shapes[0] == shapes[1] == shapes[2]
    assert shapes[0][0]["tags"] == np.dtype(object)
    assert shapes[0][1] is pd.Index  # never a RangeIndex, which pandas keeps when no row repeats


@pytest.mark.parametrize("ignore_index", [True, False])
def test_melt_is_pandas_melt(ignore_index: bool) -> None:
    data = tagged()
    priv = data.dp.protect(epsilon=1.0)
    ours = priv.dp.melt(
        id_vars=["pid", "g"], value_vars=["x", "y"], var_name="q", ignore_index=ignore_index
    )
    theirs = data.melt(
        id_vars=["pid", "g"], value_vars=["x", "y"], var_name="q", ignore_index=ignore_index
    )
    pd.testing.assert_frame_equal(plain(ours), theirs, check_index_type=False)
    assert ours.dp.session.stability == 2


def test_zero_noise_releases_equal_pandas_on_the_reshaped_rows(noise, protect_seeded) -> None:
    data = tagged()
    exploded = data.explode("tags")
    priv = protect_seeded(data, epsilon=10.0)
    with noise(priv, value=0):
        count, total, by_tag = releases(priv.dp.explode("tags", max_items=C), "tags")
    assert count == len(exploded)
    assert total == exploded["x"].clip(*BOUNDS).sum()
    expected = exploded["tags"].value_counts().reindex(KEYS, fill_value=0)
    assert by_tag.tolist() == expected.tolist()

    melted = data.melt(id_vars=["g"], value_vars=["x", "y"], var_name="var", value_name="val")
    long = priv.dp.melt(id_vars=["g"], value_vars=["x", "y"], var_name="var", value_name="val")
    with noise(priv, value=0):
        assert long.dp.count(epsilon=1.0) == len(melted)
        assert long.dp.sum("val", bounds=BOUNDS, epsilon=1.0) == melted["val"].clip(*BOUNDS).sum()
        by_var = long.dp.groupby("var", keys=["x", "y"]).count(epsilon=1.0)
    assert by_var.tolist() == [len(data), len(data)]


# --- stability, by brute force ------------------------------------------------------------


def small() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "tags": [["a", "b"], [], ["c", "c", "a"], np.nan, ["d"], ["a", "b", "c", "d", "a"]],
            "x": [3, 10, 7, 1, 12, 5],
            "y": [0, 1, 2, 3, 4, 0],
        }
    )


ADVERSARIAL = {
    "a list of 50 items": [["a", "b", "c", "d", "a"] * 10],
    "NaN": [np.nan],
    "an empty list": [[]],
}

RESHAPES: dict[str, tuple[Callable[[pd.DataFrame], pd.DataFrame], int, str, str]] = {
    "explode": (
        lambda p: p.dp.explode("tags", max_items=C),
        C,
        "tags",
        f"explode 'tags' keeping ≤ {C} items per row",
    ),
    "explode, fresh index": (
        lambda p: p.dp.explode("tags", max_items=C, ignore_index=True),
        C,
        "tags",
        f"explode 'tags' keeping ≤ {C} items per row",
    ),
    "melt": (
        lambda p: p.dp.melt(id_vars=["tags"], value_vars=["x", "y"]).rename(columns={"value": "x"}),
        2,
        "variable",
        "melt of 2 columns ['x', 'y']",
    ),
}


def exact(
    frame: pd.DataFrame, reshape: Callable, by: str, noise, protect_seeded
) -> tuple[list[Any], list[Any], list[str]]:
    """The pre-noise values of the three releases, the mechanisms used, the ledger notes."""
    priv = protect_seeded(frame, epsilon=10.0)
    with noise(priv, value=0) as calls:
        values = releases(reshape(priv), by)
    return values, [call.mechanism for call in calls], list(priv.dp.session.ledger["note"])


def notes_of(protect_seeded, noise, reshape: Callable, data: pd.DataFrame, by: str) -> str:
    """The ledger's noise column for the sum on the reshaped frame."""
    priv = protect_seeded(data, epsilon=10.0)
    with noise(priv, value=0):
        releases(reshape(priv), by)
    return str(priv.dp.session.ledger["noise"].iloc[1])


@pytest.mark.parametrize("name", list(RESHAPES))
def test_neighbours_move_every_release_by_at_most_stability_times_sensitivity(
    name: str, noise, protect_seeded
) -> None:
    reshape, stability, by, step = RESHAPES[name]
    data = small()
    base, mechanisms, notes = exact(data, reshape, by, noise, protect_seeded)
    neighbours = [data.drop(index=r) for r in data.index]
    neighbours += [
        pd.concat([data, pd.DataFrame({"tags": row, "x": [10], "y": [10]})], ignore_index=True)
        for row in ADVERSARIAL.values()
    ]
    for neighbour in neighbours:
        values, others, _ = exact(neighbour, reshape, by, noise, protect_seeded)
        assert others == mechanisms  # the noise does not depend on the data
        assert abs(values[0] - base[0]) <= stability * 1
        assert abs(values[1] - base[1]) <= stability * max(map(abs, BOUNDS))
        assert (values[2] - base[2]).abs().sum() <= stability * 1  # L1 over the groups
    assert all(step in note and f"stability {stability}" in note for note in notes)

    # the scale handed to the sampler: stability × the protected table's own scale
    plain_priv = protect_seeded(data.assign(variable="x"), epsilon=10.0)
    with noise(plain_priv, value=0) as calls:
        releases(plain_priv, by if by != "tags" else "variable")
    base_mechanisms = [call.mechanism for call in calls]
    for i in (0, 2):  # the count and the grouped count: scale 1/ε (ε 1), times the stability
        assert mechanisms[i].scale == stability * base_mechanisms[i].scale == stability
    # a sum's scale is in lattice units (the step grows with the sensitivity): the ledger
    # states both in the data's units
    ours, theirs = notes_of(protect_seeded, noise, reshape, data, by), plain_priv.dp.session
    assert f"sensitivity={stability * 10}, scale={stability * 10}," in ours
    assert "sensitivity=10, scale=10," in theirs.ledger["noise"].iloc[1]


def test_the_largest_neighbour_reaches_the_bound(noise, protect_seeded) -> None:
    """Adding a row of 50 items moves the count by exactly c: the bound is tight."""
    data = small()
    reshape = RESHAPES["explode"][0]
    base, _, _ = exact(data, reshape, "tags", noise, protect_seeded)
    row = pd.DataFrame({"tags": ADVERSARIAL["a list of 50 items"], "x": [0], "y": [0]})
    values, _, _ = exact(
        pd.concat([data, row], ignore_index=True), reshape, "tags", noise, protect_seeded
    )
    assert values[0] - base[0] == C


def test_a_one_to_many_merge_then_explode_has_stability_k_times_c(noise, protect_seeded) -> None:
    data = tagged()
    public = pd.DataFrame({"g": ["u", "u", "v"], "shift": [1, 2, 3]})  # k = 2
    priv = protect_seeded(data, epsilon=10.0)
    both = priv.dp.merge(public, on="g").dp.explode("tags", max_items=C)
    assert both.dp.session.stability == 2 * C
    expected = data.merge(public, on="g").explode("tags")
    with noise(priv, value=0) as calls:
        assert both.dp.count(epsilon=1.0) == len(expected)
    (call,) = calls
    assert call.mechanism.scale == 2 * C  # sensitivity k·c at ε 1
    note = priv.dp.session.ledger["note"].iloc[-1]
    assert f"stability {2 * C}" in note
    assert "merge on 'g'" in note
    assert "explode 'tags'" in note


# --- the row guard --------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(RESHAPES))
def test_a_later_duplication_of_the_reshaped_rows_is_refused(name: str, charges_nothing) -> None:
    priv = tagged().dp.protect(epsilon=1.0)
    out = RESHAPES[name][0](priv)
    out.dp.count(epsilon=0.1)  # the reshaped frame itself releases
    with charges_nothing(priv), pytest.raises(DuplicatedRowsError):
        pd.concat([out, out]).dp.count(epsilon=0.1)


@pytest.mark.parametrize(
    "reshape",
    [
        lambda p: p.explode("tags"),
        lambda p: p.melt(id_vars=["g"], value_vars=["x", "y"]),
    ],
    ids=["explode", "melt"],
)
def test_pandas_own_reshape_is_refused_and_points_at_dp(reshape, charges_nothing) -> None:
    priv = tagged().dp.protect(epsilon=1.0)
    with charges_nothing(priv), pytest.raises(DuplicatedRowsError) as refusal:
        reshape(priv).dp.count(epsilon=0.1)
    assert "priv.dp.explode(column, max_items=c)" in str(refusal.value)
    assert "priv.dp.melt(" in str(refusal.value)


# --- under a privacy unit -------------------------------------------------------------------


def test_under_a_unit_the_session_is_the_same_and_caps_apply(noise, protect_seeded) -> None:
    data = tagged()
    priv = protect_seeded(data, epsilon=10.0, privacy_unit="pid", max_rows_per_unit=1)
    out = priv.dp.explode("tags", max_items=C)
    assert out.dp.session is priv.dp.session  # nothing multiplied
    long = priv.dp.melt(id_vars=["pid"], value_vars=["x", "y"])
    assert long.dp.session.stability == 1
    with noise(priv, value=0) as calls:
        assert out.dp.count(epsilon=1.0) == data["pid"].nunique()  # one row per unit
        assert long.dp.count(epsilon=1.0) == data["pid"].nunique()
    assert [call.mechanism.scale for call in calls] == [1, 1]


# --- refusals, before any charge ------------------------------------------------------------

REFUSALS: dict[str, tuple[Callable[[pd.DataFrame], Any], type[Exception], str]] = {
    "missing max_items": (lambda p: p.dp.explode("tags"), DPValueError, "needs max_items=c"),
    "max_items 0": (lambda p: p.dp.explode("tags", max_items=0), DPValueError, "at least 1"),
    "max_items negative": (
        lambda p: p.dp.explode("tags", max_items=-2),
        DPValueError,
        "at least 1",
    ),
    "max_items a float": (
        lambda p: p.dp.explode("tags", max_items=2.5),
        DPTypeError,
        "positive integer",
    ),
    "max_items a bool": (
        lambda p: p.dp.explode("tags", max_items=True),
        DPTypeError,
        "positive integer",
    ),
    "misspelt column": (lambda p: p.dp.explode("tag", max_items=2), DPKeyError, "did you mean"),
    "misspelt keyword": (lambda p: p.dp.explode("tags", max_item=2), DPTypeError, "max_items"),
    "unit column exploded": (
        lambda p: p.dp.explode(["tags", "pid"], max_items=2),
        DPValueError,
        "privacy-unit column 'pid'",
    ),
    "melt without value_vars": (
        lambda p: p.dp.melt(id_vars=["pid"]),
        DPValueError,
        "needs value_vars",
    ),
    "melt dropping the unit column": (
        lambda p: p.dp.melt(id_vars=["g"], value_vars=["x", "y"]),
        DPValueError,
        "among id_vars",
    ),
    "arrow lists": (lambda p: p.dp.explode("tags", max_items=2), DPTypeError, "astype"),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_refusals_come_before_any_charge(case: str, charges_nothing) -> None:
    run, error, message = REFUSALS[case]
    data = tagged()
    if case == "arrow lists":
        pa = pytest.importorskip("pyarrow")
        lists = [list(v) if isinstance(v, list | tuple) else None for v in data["tags"]]
        data["tags"] = pd.Series(lists, dtype=pd.ArrowDtype(pa.list_(pa.string())))
    priv = data.dp.protect(epsilon=1.0, privacy_unit="pid", max_rows_per_unit=2)
    with charges_nothing(priv), pytest.raises(error, match=message):
        run(priv).dp.count(epsilon=0.1)


def test_dask_frames_are_refused_with_the_reason() -> None:
    dd = pytest.importorskip("dask.dataframe")
    priv = dd.from_pandas(tagged()[["x", "y"]], npartitions=2).dp.protect(epsilon=1.0)
    with pytest.raises(DPTypeError, match="before protecting"):
        priv.dp.melt(value_vars=["x", "y"])
    assert priv.dp.session.spent.epsilon == 0


def test_a_list_like_that_fails_to_iterate_is_one_missing_row() -> None:
    class Broken(list):  # a list-like whose iteration raises: one row, no error
        def __iter__(self):
            raise RuntimeError("private detail")

    data = pd.DataFrame({"tags": pd.Series([["a", "b"], Broken([1])], dtype=object)})
    exploded = data.dp.protect(epsilon=1.0).dp.explode("tags", max_items=2)
    assert exploded["tags"].tolist()[:2] == ["a", "b"]
    assert len(exploded) == 3
    assert pd.isna(exploded["tags"].iloc[2])
