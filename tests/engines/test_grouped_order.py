"""``grouped_order``: pandas' counting sort and numpy's stable sort give the same grouping."""

from __future__ import annotations

import numpy as np
import pytest

from pandas_dp.engines import lookup


@pytest.mark.parametrize(("rows", "groups"), [(0, 0), (0, 3), (5, 1), (1000, 7), (50_000, 3000)])
def test_counting_sort_equals_the_stable_sort(rows: int, groups: int, monkeypatch) -> None:
    gen = np.random.default_rng(rows + groups)  # test data only
    codes = gen.integers(-1, max(groups, 1), rows) if groups else np.full(rows, -1)
    order, bounds = lookup.grouped_order(codes, groups)
    monkeypatch.setattr(lookup, "groupsort_indexer", None)
    fallback = lookup.grouped_order(codes, groups)
    np.testing.assert_array_equal(order, fallback[0])
    np.testing.assert_array_equal(bounds, fallback[1])
    for c in range(groups):  # each code's rows, in their own order
        np.testing.assert_array_equal(order[bounds[c] : bounds[c + 1]], np.flatnonzero(codes == c))
    assert len(order) == int((codes >= 0).sum())
