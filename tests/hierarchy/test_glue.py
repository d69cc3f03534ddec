"""Glue of ``priv.dp.hierarchy(...).count``: exact pre-noise counts, scales, ε split, one charge.

With the ``noise`` fixture every variate is a constant. With 0 the noisy counts *are* the
exact counts, which are already consistent non-negative integers, so the post-processing
must return them unchanged: the released table is then compared, level by level, with plain
pandas (``reference``). The scale of each level is compared with ``L1 / ε_level`` computed
here from the documented rule (equal split unless ``split`` is given; ``L1 = min(k, g·r)``
under a privacy unit).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from pandas_dp.accounting.events import PARALLEL

BY = ["region", "district"]


def test_zero_noise_gives_the_exact_counts_at_every_level(
    regional, keys, leaves, protect_seeded, noise, reference, split_levels
):
    priv = protect_seeded(regional, epsilon=1.0)
    with noise(priv) as calls:
        table = priv.dp.hierarchy(BY, keys=keys).count(epsilon=0.6)
    expected = reference(regional, BY, leaves)
    got = split_levels(table)
    assert [s.tolist() for s in got] == [s.tolist() for s in expected]
    assert [list(s.index) for s in got[1:]] == [list(s.index) for s in expected[1:]]
    assert got[0].tolist() == [600]  # the 21 rows outside the leaf paths are not counted
    # One call per level, root first, each with one variate per node and scale 1/(ε/3).
    assert [(c.size, c.mechanism.scale) for c in calls] == [
        (1, Fraction(5)), (3, Fraction(5)), (8, Fraction(5))
    ]  # fmt: skip


def test_table_order_names_and_dtype(regional, keys, protect_seeded, noise):
    priv = protect_seeded(regional, epsilon=1.0)
    with noise(priv):
        table = priv.dp.hierarchy(BY, keys=keys).count(epsilon=0.5)
    assert table.name == "count"
    assert table.dtype == np.int64
    assert list(table.index.names) == BY
    assert table.index.tolist() == [
        ("All", "All"),
        ("north", "All"), ("north", "n1"), ("north", "n2"), ("north", "central"), ("north", "n3"),
        ("south", "All"), ("south", "s1"), ("south", "central"),
        ("east", "All"), ("east", "e1"), ("east", "e2"),
    ]  # fmt: skip
    assert table["north", "n3"] == 0  # a node without rows gets a count
    assert table["south", "central"] == 40
    assert table["north", "All"] == 300


def test_constant_noise_is_made_consistent(regional, keys, protect_seeded, noise, consistent):
    """Every node +7: the levels disagree (a parent's noisy count is off from the sum of its
    children's by 7·(children - 1)); the table must still add up exactly."""
    priv = protect_seeded(regional, epsilon=1.0)
    with noise(priv, value=7):
        table = priv.dp.hierarchy(BY, keys=keys).count(epsilon=0.5)
    consistent(table)
    assert table["All", "All"] > 600


@pytest.mark.parametrize(
    ("split", "epsilons"),
    [
        (None, [Fraction(1, 3)] * 3),
        ([1, 1, 2], [Fraction(1, 4), Fraction(1, 4), Fraction(1, 2)]),
        ((0.2, 0.3, 0.5), [Fraction(1, 5), Fraction(3, 10), Fraction(1, 2)]),
        ([Fraction(1, 3), 1, 1], [Fraction(1, 7), Fraction(3, 7), Fraction(3, 7)]),
    ],
)
def test_split_sets_each_levels_epsilon_and_scale(
    regional, keys, protect_seeded, noise, split, epsilons
):
    priv = protect_seeded(regional, epsilon=2.0)
    with noise(priv) as calls:
        priv.dp.hierarchy(BY, keys=keys).count(epsilon=1.0, split=split)
    assert [c.mechanism.scale for c in calls] == [1 / e for e in epsilons]
    release = priv.dp.session.releases[-1]
    assert [m.epsilon for m in release.measurements] == epsilons
    assert [m.sensitivity for m in release.measurements] == [1, 1, 1]


def test_one_release_one_charge_one_measurement_per_level(regional, keys, protect_seeded):
    priv = protect_seeded(regional, epsilon=1.0)
    priv.dp.hierarchy(BY, keys=keys).count(epsilon=0.3)
    session = priv.dp.session
    assert session.spent.epsilon == Fraction(3, 10)
    assert len(session.releases) == 1
    release = session.releases[0]
    assert release.query == "hierarchy.count"
    assert release.columns == ("region", "district")
    assert release.composition == PARALLEL
    assert release.groups == 8  # leaves
    assert [m.label for m in release.measurements] == [
        "count(level 0: All)", "count(level 1: region)", "count(level 2: district)"
    ]  # fmt: skip
    assert [m.mechanism for m in release.measurements] == ["discrete_laplace"] * 3
    row = session.ledger.iloc[0]
    assert row["epsilon"] == pytest.approx(0.3)
    note = row["note"]
    assert "ε 0.3 split across 3 levels (sequential composition)" in note
    assert "1/3 (ε 0.1) to the total All (1 node), 1/3 (ε 0.1) to region (3 nodes)" in note
    assert "1/3 (ε 0.1) to district (8 nodes)" in note
    assert "parallel composition within each level" in note
    assert "least squares" in note
    assert "Hay et al. 2010" in note
    assert "TopDown, Abowd et al. 2022" in note
    assert "privacy unit" not in note


def test_privacy_unit_scales_every_level(regional, keys, protect_seeded, noise):
    priv = protect_seeded(regional, epsilon=5.0, privacy_unit="pid", max_rows_per_unit=3)
    with noise(priv) as calls:
        priv.dp.hierarchy(BY, keys=keys).count(epsilon=1.5)
    assert [c.mechanism.scale for c in calls] == [Fraction(6)] * 3  # L1 = k = 3 over ε/3
    with noise(priv) as calls:
        priv.dp.hierarchy(BY, keys=keys, max_groups_per_unit=1, max_rows_per_group=2).count(
            epsilon=1.5
        )
    assert [c.mechanism.scale for c in calls] == [Fraction(4)] * 3  # L1 = min(3, 1·2) = 2
    release = priv.dp.session.releases[-1]
    assert [m.sensitivity for m in release.measurements] == [2, 2, 2]
    assert "privacy unit pid: ≤ 1 groups, ≤ 2 rows per group, ≤ 2 rows in all" in (release.note)


def test_privacy_unit_caps_are_enforced_before_counting(protect_seeded, noise, consistent):
    """One person with 10 rows in one leaf; at most k = 3 of them count, at every level."""
    data = pd.DataFrame(
        {
            "region": ["a"] * 10 + ["a", "b"],
            "district": ["a1"] * 10 + ["a2", "b1"],
            "pid": [0] * 10 + [1, 2],
        }
    )
    priv = protect_seeded(data, epsilon=5.0, privacy_unit="pid", max_rows_per_unit=3)
    keys = {"a": ["a1", "a2"], "b": ["b1"]}
    with noise(priv):
        table = priv.dp.hierarchy(BY, keys=keys).count(epsilon=1.0)
    consistent(table)
    assert table.tolist() == [5, 4, 3, 1, 1, 1]


def test_rows_outside_the_leaf_paths_are_dropped_silently(regional, keys, protect_seeded):
    """No error, no warning (the suite turns warnings into errors), no trace in the output."""
    priv = protect_seeded(regional, epsilon=1.0)
    table = priv.dp.hierarchy(BY, keys=keys).count(epsilon=0.5)
    assert set(table.index.get_level_values("region")) == {"All", *keys["region"]}
    assert ("north", "s1") not in table.index
    assert "west" not in priv.dp.session.ledger["note"].iloc[0]


def test_exact_counts_with_numeric_keys_and_three_levels(
    protect_seeded, noise, reference, split_levels
):
    rng = np.random.default_rng(3)
    n = 2000
    data = pd.DataFrame(
        {
            "state": rng.integers(1, 4, n),  # 1..3; state 3 is not a key
            "county": rng.integers(10, 13, n),
            "tract": rng.integers(100, 103, n),
        }
    )
    keys = {
        1: {10: [100, 101], 11: [100, 102]},
        2: {10: [101], 12: [100, 101, 102, 109]},  # tract 109 has no rows
    }
    leaves = [
        (s, c, t) for s, counties in keys.items() for c, tracts in counties.items() for t in tracts
    ]
    priv = protect_seeded(data, epsilon=1.0)
    with noise(priv) as calls:
        table = priv.dp.hierarchy(["state", "county", "tract"], keys=keys).count(epsilon=0.4)
    expected = reference(data, ["state", "county", "tract"], leaves)
    got = split_levels(table)
    assert [s.tolist() for s in got] == [s.tolist() for s in expected]
    assert [c.size for c in calls] == [1, 2, 4, 9]
    assert [c.mechanism.scale for c in calls] == [Fraction(10)] * 4
    assert table.index[0] == ("All", "All", "All")
    assert table.index[1] == (1, "All", "All")
    assert table.index[2] == (1, 10, "All")
    assert table.index[3] == (1, 10, 100)
