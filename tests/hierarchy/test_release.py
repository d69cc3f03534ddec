"""The forms of keys, the three outputs, one-column and schema hierarchies, and previews."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

BY = ["region", "district"]


def release(priv, noise, keys, by=BY, margins_name="All", **options):
    """The table with zero noise (so every count is exact)."""
    with noise(priv):
        grouped = priv.dp.hierarchy(by, keys=keys, margins_name=margins_name)
        return grouped.count(epsilon=0.5, **options)


def test_every_form_of_keys_gives_the_same_table(regional, keys, leaves, protect_seeded, noise):
    priv = protect_seeded(regional, epsilon=10.0)
    expected = release(priv, noise, keys)
    forms = {
        "nested dict": {region: list(d) for region, d in keys["district"].items()},
        "leaf tuples": leaves,
        "MultiIndex": pd.MultiIndex.from_tuples(leaves, names=["a", "b"]),
        "shuffled paths": [leaves[i] for i in [0, 4, 1, 5, 2, 6, 3, 7]],  # regrouped
        "per-level, path keys": {
            "region": keys["region"],
            "district": {(r,): d for r, d in keys["district"].items()},
        },
    }
    for name, form in forms.items():
        table = release(priv, noise, form)
        pd.testing.assert_series_equal(table, expected, obj=name)


def test_a_list_per_level_gives_every_combination(protect_seeded, noise, consistent):
    data = pd.DataFrame({"sex": [0, 1, 1, 0, 1], "married": [0, 0, 1, 1, 1]})
    priv = protect_seeded(data, epsilon=10.0)
    table = release(priv, noise, {"sex": [0, 1], "married": [0, 1]}, by=["sex", "married"])
    assert table.index.tolist() == [
        ("All", "All"), (0, "All"), (0, 0), (0, 1), (1, "All"), (1, 0), (1, 1)
    ]  # fmt: skip
    assert table.tolist() == [5, 2, 1, 1, 3, 1, 2]
    consistent(table)


def test_outputs_leaves_and_levels(regional, keys, leaves, protect_seeded, noise, reference):
    priv = protect_seeded(regional, epsilon=10.0)
    table = release(priv, noise, keys)
    only = release(priv, noise, keys, output="leaves")
    assert only.index.tolist() == leaves
    assert list(only.index.names) == BY
    assert only.tolist() == [table[leaf] for leaf in leaves]
    views = release(priv, noise, keys, output="levels")
    assert list(views) == ["All", "region", "district"]
    assert views["All"].tolist() == [600]
    assert views["All"].index.tolist() == ["All"]
    assert views["region"].index.name == "region"
    assert views["region"].to_dict() == {"north": 300, "south": 240, "east": 60}
    assert views["district"].index.tolist() == leaves
    expected = reference(regional, BY, leaves)
    assert views["district"].tolist() == expected[2].tolist()
    assert all(view.name == "count" for view in views.values())


def test_custom_margins_name(regional, keys, protect_seeded, noise, consistent):
    priv = protect_seeded(regional, epsilon=10.0)
    table = release(priv, noise, keys, margins_name="Total")
    assert table.index[0] == ("Total", "Total")
    assert table["north", "Total"] == 300
    consistent(table, margins="Total")
    views = release(priv, noise, keys, margins_name="Total", output="levels")
    assert list(views) == ["Total", "region", "district"]
    assert "to the total Total (1 node)" in priv.dp.session.ledger["note"].iloc[-1]


def test_one_column_is_a_total_and_its_keys(regional, protect_seeded, noise):
    priv = protect_seeded(regional, epsilon=10.0)
    for keys in (
        ["north", "south", "east", "void"],
        {"region": ["north", "south", "east", "void"]},
    ):
        with noise(priv) as calls:
            table = priv.dp.hierarchy("region", keys=keys).count(epsilon=0.5)
        assert isinstance(table.index, pd.Index)
        assert not isinstance(table.index, pd.MultiIndex)
        assert table.index.name == "region"
        # by region alone, the rows of districts outside the keys count too
        assert table.to_dict() == {"All": 612, "north": 308, "south": 244, "east": 60, "void": 0}
        assert [c.mechanism.scale for c in calls] == [Fraction(4), Fraction(4)]


def test_three_levels_from_nested_dicts_and_path_tuples(protect_seeded, noise, consistent):
    data = pd.DataFrame(
        {
            "state": ["A"] * 6 + ["B"] * 4,
            "county": ["a1"] * 4 + ["a2"] * 2 + ["b1"] * 4,
            "tract": ["t1", "t2", "t2", "t9", "t1", "t1", "t1", "t2", "t3", "t3"],
        }
    )
    priv = protect_seeded(data, epsilon=10.0)
    nested = {"A": {"a1": ["t1", "t2"], "a2": ["t1"]}, "B": {"b1": ["t1", "t2", "t3"]}}
    by = ["state", "county", "tract"]
    table = release(priv, noise, nested, by=by)
    consistent(table)
    assert table.index.tolist() == [
        ("All", "All", "All"),
        ("A", "All", "All"), ("A", "a1", "All"), ("A", "a1", "t1"), ("A", "a1", "t2"),
        ("A", "a2", "All"), ("A", "a2", "t1"),
        ("B", "All", "All"), ("B", "b1", "All"), ("B", "b1", "t1"), ("B", "b1", "t2"),
        ("B", "b1", "t3"),
    ]  # fmt: skip
    assert table.tolist() == [9, 5, 3, 1, 2, 2, 2, 4, 4, 1, 1, 2]  # (A, a1, t9) is not a key
    per_level = {
        "state": ["A", "B"],
        "county": {"A": ["a1", "a2"], "B": ["b1"]},
        "tract": {"a1": ["t1", "t2"], ("A", "a2"): ["t1"], "b1": ["t1", "t2", "t3"]},
    }
    pd.testing.assert_series_equal(release(priv, noise, per_level, by=by), table)


def test_keys_from_a_schema_are_every_combination(protect_seeded, noise, consistent):
    import pandera.pandas as pandera

    schema = pandera.DataFrameSchema(
        {
            "region": pandera.Column(str, pandera.Check.isin(["north", "south"])),
            "sex": pandera.Column(int, pandera.Check.isin([0, 1])),
        }
    )
    data = pd.DataFrame({"region": ["north"] * 3 + ["south"] * 2, "sex": [0, 1, 1, 0, 0]})
    priv = protect_seeded(data, epsilon=10.0, schema=schema)
    with noise(priv):
        table = priv.dp.hierarchy(["region", "sex"]).count(epsilon=0.5)
    assert table.index.tolist() == [
        ("All", "All"), ("north", "All"), ("north", 0), ("north", 1),
        ("south", "All"), ("south", 0), ("south", 1),
    ]  # fmt: skip
    assert table.tolist() == [5, 3, 1, 2, 2, 2, 0]
    consistent(table)
    note = priv.dp.session.ledger["note"].iloc[-1]
    assert "keys of region, sex from the schema (isin), every combination" in note


def test_preview_charges_nothing_and_describes_each_level(regional, keys, protect_seeded):
    priv = protect_seeded(regional, epsilon=1.0)
    preview = priv.dp.preview.hierarchy(BY, keys=keys).count(epsilon=0.6, split=[1, 1, 4])
    assert priv.dp.session.spent.epsilon == 0
    table = preview.table
    assert table.index.tolist() == [
        "count(level 0: All)", "count(level 1: region)", "count(level 2: district)"
    ]  # fmt: skip
    assert table["epsilon"].tolist() == pytest.approx([0.1, 0.1, 0.4])
    assert table["scale"].tolist() == pytest.approx([10.0, 10.0, 2.5])
    assert (table["error_in"] == "raw count").all()
    # The discrete Laplace (1 - α) half-width: smallest k with 2 q^(k+1) / (1 + q) <= α.
    for scale, error in zip(table["scale"], table["error"], strict=True):
        q = np.exp(-1 / scale)
        k = 0
        while 2 * q ** (k + 1) / (1 + q) > 0.05:
            k += 1
        assert error == k
    assert preview.epsilon == pytest.approx(0.6)
    narrower = priv.dp.preview.hierarchy(BY, keys=keys).count(epsilon=0.6, ci=0.5)
    assert (narrower.table["error"] < table["error"]).all()
    assert "hierarchy.count" in repr(preview)


def test_repr_shows_only_public_parameters(regional, keys, protect_seeded):
    priv = protect_seeded(regional, epsilon=1.0)
    assert repr(priv.dp.hierarchy(BY, keys=keys)) == (
        "<DPHierarchy by=['region', 'district'], nodes per level 1 → 3 → 8>"
    )
