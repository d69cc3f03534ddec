"""Skipping the ranking when no unit exceeds a cap keeps exactly the same rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pandas_dp.engines import bounding
from pandas_dp.engines.bounding import SeededPriorities, keep_mask
from pandas_dp.measures.bounding import Bounding


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("caps", [(3, None), (2, 1), (50, 50)], ids=["rows", "groups", "loose"])
def test_shortcut_keeps_what_the_ranks_keep(monkeypatch, seed, caps) -> None:
    gen = np.random.default_rng(seed)  # test data only
    rows = 400
    frame = pd.DataFrame({"unit": gen.integers(0, 150 if seed % 2 else 60, rows)})
    codes = gen.integers(-1, 4, rows)
    max_rows, max_groups = caps

    def mask() -> np.ndarray:
        priorities = SeededPriorities((seed,))  # the same stream for both runs
        return keep_mask(frame, Bounding("unit", max_rows, max_groups, None, priorities), codes)

    shortcut = mask()
    monkeypatch.setattr(bounding, "_within", lambda codes, cap: False)
    assert np.array_equal(shortcut, mask())
    assert shortcut.sum() > 0


def test_a_unit_one_row_over_the_cap_is_still_capped() -> None:
    frame = pd.DataFrame({"unit": [0, 0, 0, 0, 1, 1, 2]})
    kept = keep_mask(frame, Bounding("unit", 3, None, None, SeededPriorities((1,))), None)
    assert kept[:4].sum() == 3
    assert kept[4:].all()


class _Stateless:
    """A stateless source (like ``os.urandom``) that records how many words were read."""

    stateless = True

    def __init__(self) -> None:
        self.read: list[int] = []

    def __call__(self, n: int) -> np.ndarray:
        self.read.append(n)
        return np.frombuffer(np.random.default_rng(n).bytes(8 * n), dtype=np.uint64)


def test_a_stateless_source_is_read_only_when_a_unit_exceeds_its_cap() -> None:
    frame = pd.DataFrame({"unit": [0, 0, 1, 2, 2]})
    within = _Stateless()
    assert keep_mask(frame, Bounding("unit", 2, None, None, within), None).all()
    assert within.read == []  # every unit within its cap: every row kept, nothing drawn
    over = _Stateless()
    kept = keep_mask(frame, Bounding("unit", 1, None, None, over), None)
    assert over.read == [5]
    assert kept.sum() == 3  # one row per unit
    seeded = SeededPriorities((3,))  # a stream is read all the same (it must stay in step)
    before = SeededPriorities((3,))(5)
    keep_mask(frame, Bounding("unit", 2, None, None, seeded), None)
    assert not np.array_equal(seeded(5), before)
