"""The Dask engine's exact combination of per-partition aggregates, tested directly."""

from __future__ import annotations

import numpy as np
import pandas as pd

from pandas_dp.engines.dask.partitions import combine
from pandas_dp.engines.protocol import Aggregates


def test_sums_stay_exact_beyond_int64() -> None:
    big = np.array([2**62, 1], dtype=np.int64)
    total = combine(
        [Aggregates(None, [big]), Aggregates(None, [big]), Aggregates(None, [big])], False
    )
    assert total.values[0].tolist() == [3 * 2**62, 3]
    small = combine([Aggregates(None, [np.array([5])]), Aggregates(None, [np.array([-2])])], False)
    assert small.values[0].dtype == np.int64
    assert small.values[0].tolist() == [3]


def test_observed_keys_are_united_and_their_aggregates_added() -> None:
    level = pd.array(["b", "a", "c"], dtype="string[pyarrow]")

    def keys(positions: list[int]) -> pd.MultiIndex:
        return pd.MultiIndex.from_arrays(
            [level[positions], pd.Index([1, 1, 2])[positions]], names=["k", "n"]
        )

    empty = Aggregates(keys([]), [np.zeros(0, dtype=np.int64), np.zeros((0, 2), dtype=np.int64)])
    first = Aggregates(keys([0, 1]), [np.array([1, 2]), np.array([[1, 0], [0, 2]])])
    second = Aggregates(keys([2, 0]), [np.array([10, 20]), np.array([[5, 5], [1, 1]])])
    total = combine([empty, first, empty, second], True)
    assert list(total.keys) == [("b", 1), ("a", 1), ("c", 2)]
    assert list(total.keys.names) == ["k", "n"]
    assert total.keys.levels[0].dtype == level.dtype  # level dtypes are kept
    assert total.values[0].tolist() == [21, 2, 10]
    assert total.values[1].tolist() == [[2, 1], [0, 2], [5, 5]]


def test_no_partition_with_observed_keys_gives_no_keys() -> None:
    empty = Aggregates(pd.Index([], dtype="int64", name="k"), [np.zeros(0, dtype=np.int64)])
    total = combine([empty, empty], True)
    assert len(total.keys) == 0
    assert total.values[0].size == 0
