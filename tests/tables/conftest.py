"""Helpers for the tables tests: a frame of people with planted edge cases, its public keys,
and plain-pandas references for the exact tables (``pd.crosstab`` / ``groupby().size()``
reindexed to the keys, over the rows whose every column is inside its keys or bins)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pytest

KEYS = {"sex": [0, 1], "region": ["north", "south", "east"], "tenure": ["own", "rent"]}
BINS = {"age": [0, 18, 65, 120]}
WORKLOAD = [["age", "sex"], ["sex", "region"], ["age", "region", "tenure"]]


@pytest.fixture
def people() -> pd.DataFrame:
    """400 rows, plus rows outside the domain: a missing region, a region ``west`` that is not
    a key, an age of 0 (outside ``(0, 18]``, like ``pd.cut``) and a missing age."""
    rng = np.random.default_rng(18)
    n = 400
    frame = pd.DataFrame(
        {
            "age": rng.integers(1, 100, n).astype(np.float64),
            "sex": rng.integers(0, 2, n),
            "region": rng.choice(KEYS["region"], n, p=[0.5, 0.3, 0.2]),
            "tenure": rng.choice(KEYS["tenure"], n),
        }
    )
    outside = pd.DataFrame(
        {
            "age": [30.0, 40.0, 0.0, np.nan],
            "sex": [0, 1, 1, 0],
            "region": [None, "west", "south", "east"],
            "tenure": ["own", "rent", "own", "rent"],
        }
    )
    return pd.concat([frame, outside], ignore_index=True)


def reference_table(data: pd.DataFrame, table: Sequence[str]) -> pd.Series | pd.DataFrame:
    """The exact table as plain pandas would give it, over rows inside every domain."""
    binned = data.assign(age=pd.cut(data["age"], BINS["age"]))
    inside = binned["age"].notna()
    for column, keys in KEYS.items():
        inside &= binned[column].isin(keys)
    kept = binned[inside]
    indexes = {
        "age": pd.IntervalIndex.from_breaks(
            [float(b) for b in BINS["age"]], closed="right", name="age"
        ),
        **{c: pd.Index(k, name=c) for c, k in KEYS.items()},
    }
    if len(table) == 1:
        counts = kept.groupby(table[0], observed=True).size()
        return counts.reindex(indexes[table[0]], fill_value=0).astype(np.float64)
    rows = [kept[c] for c in table[:-1]]
    cross = pd.crosstab(rows, kept[table[-1]])
    row_index = (
        indexes[table[0]]
        if len(table) == 2
        else pd.MultiIndex.from_product([indexes[c] for c in table[:-1]], names=table[:-1])
    )
    cross = cross.reindex(index=row_index, columns=indexes[table[-1]], fill_value=0)
    return cross.astype(np.float64)


@pytest.fixture
def reference() -> Callable[..., Any]:
    """``reference(data, table)``: the exact table with plain pandas."""
    return reference_table


@pytest.fixture
def options() -> dict[str, Any]:
    """The public domains of ``people`` (fresh copies)."""
    return {"keys": {c: list(k) for c, k in KEYS.items()}, "bins": dict(BINS)}
