"""Helpers for the hierarchy tests: a regional frame with planted edge cases, and plain-pandas
references for the exact counts at every level of a hierarchy (written from the documented
rule: a row counts only if its whole path is a leaf of the keys)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

REGIONS = ["north", "south", "east"]
#: "central" is a district of two regions; "n3" and "e2" have no rows.
DISTRICTS = {
    "north": ["n1", "n2", "central", "n3"],
    "south": ["s1", "central"],
    "east": ["e1", "e2"],
}
KEYS = {"region": REGIONS, "district": DISTRICTS}
LEAVES = [(region, district) for region in REGIONS for district in DISTRICTS[region]]


@pytest.fixture
def regional() -> pd.DataFrame:
    """600 rows over the leaves, plus rows that no leaf path holds.

    Outside the keys: 7 rows in region ``west``, 5 rows in ``(north, s1)`` (a district of
    another region), 4 rows in ``(south, n9)``, 3 rows with a missing district and 2 with a
    missing region.
    """
    rng = np.random.default_rng(7)
    sizes = {
        ("north", "n1"): 150, ("north", "n2"): 90, ("north", "central"): 60,
        ("south", "s1"): 200, ("south", "central"): 40, ("east", "e1"): 60,
    }  # fmt: skip
    outside = [("west", "w1")] * 7 + [("north", "s1")] * 5 + [("south", "n9")] * 4
    outside += [("north", None)] * 3 + [(None, "n1")] * 2
    paths = [path for path, n in sizes.items() for _ in range(n)] + outside
    order = rng.permutation(len(paths))
    region = [paths[i][0] for i in order]
    district = [paths[i][1] for i in order]
    return pd.DataFrame(
        {
            "region": pd.Series(region, dtype=object),
            "district": pd.Series(district, dtype=object),
            "pid": np.arange(len(paths)) // 2,  # two rows per person
        }
    )


def reference_levels(data: pd.DataFrame, by: list[str], leaves: list[tuple]) -> list[pd.Series]:
    """Exact counts per level, root first, each indexed by the node paths (tuples) in key
    order; ``leaves`` are tuples, one value per column of ``by``."""
    if len(by) > 1:
        inside = pd.MultiIndex.from_frame(data[by]).isin(pd.MultiIndex.from_tuples(leaves))
    else:
        inside = data[by[0]].isin([leaf[0] for leaf in leaves])
    kept = data[np.asarray(inside)]
    levels = [pd.Series([len(kept)], index=["All"])]
    for depth in range(1, len(by) + 1):
        prefixes = list(dict.fromkeys(tuple(leaf[:depth]) for leaf in leaves))
        columns = by[:depth]
        counts = kept.groupby(columns, dropna=True).size()
        if depth == 1:
            counts.index = [(key,) for key in counts.index]
        else:
            counts.index = list(counts.index)
        levels.append(counts.reindex(prefixes, fill_value=0))
    return levels


def table_levels(table: pd.Series, margins: Any = "All") -> list[pd.Series]:
    """Split a released table into levels by how many of its index entries are not totals."""
    index = table.index
    tuples = [key if isinstance(key, tuple) else (key,) for key in index]
    depth = np.array([sum(1 for part in key if part != margins) for key in tuples])
    out = []
    for d in range(len(tuples[0]) + 1):
        rows = np.flatnonzero(depth == d)
        out.append(pd.Series(table.to_numpy()[rows], index=[tuples[i][:d] for i in rows]))
    return out


def assert_consistent(table: pd.Series, margins: Any = "All") -> None:
    """Non-negative int64 counts; every parent equals the sum of its children, exactly."""
    assert table.dtype == np.int64
    assert (table >= 0).all()
    levels = table_levels(table, margins)
    for parents, children in itertools.pairwise(levels):
        sums: dict[tuple, int] = {}
        for key, value in children.items():
            sums[key[:-1]] = sums.get(key[:-1], 0) + int(value)
        assert {key: int(v) for key, v in parents.items()} == sums


@pytest.fixture
def keys() -> dict[str, Any]:
    """The public hierarchy of ``regional`` as a per-level dict (a fresh copy)."""
    return {"region": list(REGIONS), "district": {r: list(d) for r, d in DISTRICTS.items()}}


@pytest.fixture
def leaves() -> list[tuple[str, str]]:
    """The leaf paths of ``keys``, in key order."""
    return list(LEAVES)


@pytest.fixture
def reference() -> Callable[..., list[pd.Series]]:
    """``reference(data, by, leaves)``: exact counts per level with plain pandas."""
    return reference_levels


@pytest.fixture
def split_levels() -> Callable[..., list[pd.Series]]:
    """``split_levels(table, margins="All")``: a released table's rows, level by level."""
    return table_levels


@pytest.fixture
def consistent() -> Callable[..., None]:
    """``consistent(table, margins="All")`` asserts the table adds up exactly."""
    return assert_consistent
