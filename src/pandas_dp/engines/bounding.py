"""Contribution bounding: cap what one privacy unit can add to a release.

Each cap keeps a *random* subset: every row (and every unit-group pair) gets an independent
priority from the session's CSPRNG, and within a unit the lowest priorities are kept. The
choice depends only on the unit's own rows and on randomness, never on other units' data,
so the sensitivities computed from the caps hold.

Order of the caps (each only drops rows):

1. rows whose unit id is missing, and rows outside the public keys, are dropped (they can
   never be released, so they should not use up a unit's allowance);
2. ``max_groups``: each unit keeps at most that many of its groups;
3. ``max_rows_per_group``: each unit keeps at most that many rows per group;
4. ``max_rows``: each unit keeps at most that many rows in total.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import pandas as pd

I64 = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]
#: Draws ``n`` independent uniform 64-bit priorities.
Priorities = Callable[[int], npt.NDArray[np.uint64]]


@dataclass(frozen=True)
class Bounding:
    """Caps on one privacy unit's contribution (see the module docstring)."""

    unit: Hashable
    max_rows: int
    max_groups: int | None = None
    max_rows_per_group: int | None = None
    priorities: Priorities | None = field(default=None, compare=False, repr=False)


def ranks_within(groups: I64, priority: npt.NDArray[np.uint64]) -> I64:
    """Rank of each row within its group when ordered by ``priority`` (0 = lowest)."""
    order = np.lexsort((priority, groups))
    ordered = groups[order]
    starts = np.empty(ordered.size, dtype=np.bool_)
    starts[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=starts[1:])
    position = np.arange(ordered.size)
    first = np.maximum.accumulate(np.where(starts, position, 0))
    ranks = np.empty(ordered.size, dtype=np.int64)
    ranks[order] = position - first
    return ranks


def keep_mask(frame: pd.DataFrame, bounding: Bounding, group_codes: I64 | None) -> Bools:
    """Which rows of ``frame`` survive the caps; ``group_codes`` is -1 for dropped keys."""
    assert bounding.priorities is not None, "bounding needs a source of random priorities"
    units, _ = pd.factorize(frame[bounding.unit], use_na_sentinel=True)
    units = np.asarray(units, dtype=np.int64)
    keep = units >= 0
    if group_codes is not None:
        keep &= group_codes >= 0
    rows = np.flatnonzero(keep)
    unit = units[rows]
    if group_codes is not None and bounding.max_groups is not None:
        pair, _ = pd.factorize(unit * (int(group_codes.max()) + 1) + group_codes[rows])
        pair = np.asarray(pair, dtype=np.int64)
        pair_priority = bounding.priorities(int(pair.max()) + 1 if pair.size else 0)
        first_of_pair = np.unique(pair, return_index=True)[1]
        pair_rank = ranks_within(unit[first_of_pair], pair_priority)  # pairs sorted by id
        rows, unit = _filter(rows, unit, pair_rank[pair] < bounding.max_groups)
    if group_codes is not None and bounding.max_rows_per_group is not None:
        cell = unit * (int(group_codes.max()) + 1) + group_codes[rows]
        rank = ranks_within(cell, bounding.priorities(rows.size))
        rows, unit = _filter(rows, unit, rank < bounding.max_rows_per_group)
    rank = ranks_within(unit, bounding.priorities(rows.size))
    rows = rows[rank < bounding.max_rows]
    out = np.zeros(len(frame), dtype=np.bool_)
    out[rows] = True
    return out


def _filter(rows: I64, unit: I64, ok: Bools) -> tuple[I64, I64]:
    return rows[ok], unit[ok]
