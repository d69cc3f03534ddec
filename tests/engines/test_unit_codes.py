"""Unit ids coded by table keep exactly the rows the hash pass keeps.

The caps read unit codes only to tell units apart; which rows a unit keeps depends on the
rows' priorities. So integer ids (coded by a table, in increasing order) and the same ids as
text (factorised, in order of first appearance) must keep the same rows under every cap.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pandas_dp.engines.bounding import SeededPriorities, keep_mask
from pandas_dp.engines.integers import unit_codes
from pandas_dp.measures.bounding import Bounding


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("caps", [(2, None, None), (3, 2, None), (4, None, 1), (5, 2, 2)], ids=str)
def test_table_codes_keep_the_rows_the_hash_pass_keeps(seed: int, caps: tuple) -> None:
    gen = np.random.default_rng(seed)  # test data only
    n = 600
    ids = gen.integers(-50, 150, n)
    groups = gen.integers(-1, 4, n)  # -1: a row outside the keys
    max_rows, max_groups, per_group = caps
    kept = []
    for column in (pd.Series(ids), pd.Series(ids.astype(str))):
        bounding = Bounding(
            "u", max_rows, max_groups, per_group, priorities=SeededPriorities((seed, 1))
        )
        kept.append(keep_mask(pd.DataFrame({"u": column}), bounding, groups))
    assert kept[0].any()
    np.testing.assert_array_equal(kept[0], kept[1])


def test_codes_tell_units_apart() -> None:
    ids = pd.Series([7, -3, 7, 1000, -3, 2**62], dtype="int64")  # 2**62: too wide, hashed
    for column in (ids, ids.iloc[:5]):
        codes = unit_codes(column)
        _, reference = np.unique(column.to_numpy(), return_inverse=True)
        pairs = set(zip(codes.tolist(), reference.tolist(), strict=True))
        assert len(pairs) == len(set(codes.tolist())) == len(set(reference.tolist()))
    assert unit_codes(pd.Series([1.0, np.nan, 1.0])).tolist() == [0, -1, 0]
    assert unit_codes(pd.Series([], dtype="int64")).tolist() == []


def test_pinned_numbers_with_missing_rows_keep_the_rows_the_hash_pass_keeps() -> None:
    gen = np.random.default_rng(7)  # test data only
    numbers = gen.integers(0, 120, 500)
    missing = gen.random(500) < 0.1
    pinned = pd.Series(pd.arrays.IntegerArray(numbers, missing))
    codes = unit_codes(pinned)
    assert (codes[missing] == -1).all()
    reference, _ = pd.factorize(pinned, use_na_sentinel=True)
    pairs = set(zip(codes.tolist(), reference.tolist(), strict=True))
    assert len(pairs) == len(set(codes.tolist())) == len(set(reference.tolist()))
    assert codes[~missing].min() >= 0
    assert codes.max() < 2 * len(codes) + 4096
    every = pd.Series(pd.arrays.IntegerArray(numbers, np.ones(500, dtype=bool)))
    assert (unit_codes(every) == -1).all()
    groups = gen.integers(-1, 4, 500)
    kept = []
    for column in (pinned, pinned.astype(object)):  # table vs hash pass
        bounding = Bounding("u", 3, 2, 2, priorities=SeededPriorities((7, 1)))
        kept.append(keep_mask(pd.DataFrame({"u": column}), bounding, groups))
    np.testing.assert_array_equal(kept[0], kept[1])
