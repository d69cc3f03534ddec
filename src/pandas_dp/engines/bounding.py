"""Contribution bounding: cap what one privacy unit can add to a release.

Each cap keeps a *random* subset: every row (and every unit-group pair) gets an independent
priority from the session's CSPRNG, and within a unit the lowest priorities are kept. The
choice depends only on the unit's own rows and on randomness, never on other units' data,
so the sensitivities computed from the caps hold.

Engines that bound rows in other processes (Dask workers) never receive the session: they
call :attr:`~pandas_dp.measures.bounding.Bounding.spawn` once per release, on the client, and
ship the picklable :class:`~pandas_dp.measures.bounding.PartitionPriorities` it returns, one
stream per partition (see that class).

Order of the caps (each only drops rows):

1. rows whose unit id is missing, and rows outside the public keys, are dropped (they can
   never be released, so they should not use up a unit's allowance);
2. ``max_groups``: each unit keeps at most that many of its groups;
3. ``max_rows_per_group``: each unit keeps at most that many rows per group;
4. ``max_rows``: each unit keeps at most that many rows in total.
"""

from __future__ import annotations

import os

import numpy as np
import numpy.typing as npt
import pandas as pd

from pandas_dp.engines.integers import unit_codes
from pandas_dp.measures.bounding import Bounding

I64 = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]


class SystemPriorities:
    """Priorities from the OS CSPRNG (``os.urandom``) of whichever process draws them.

    Stateless and picklable: a Dask worker that receives it reads its own ``os.urandom``;
    nothing random is decided on the client.
    """

    canonical = False
    #: Nothing to keep in step: words not needed (every unit within its cap) are not read.
    stateless = True

    def __call__(self, n: int) -> npt.NDArray[np.uint64]:
        """``n`` uniform 64-bit words from ``os.urandom``."""
        return np.frombuffer(os.urandom(8 * n), dtype=np.uint64)

    def for_partition(self, index: int) -> SystemPriorities:
        """The same source: every partition reads its own process's CSPRNG."""
        return self

    def __repr__(self) -> str:
        return "SystemPriorities(os.urandom)"


class SeededPriorities:
    """Reproducible priorities for seeded sessions. Test-only: PCG64 is not a CSPRNG.

    ``entropy`` comes from the seeded session's own stream; partition ``i`` draws from
    PCG64 seeded with ``entropy + (i,)``, after sorting its rows canonically, so a seeded
    release gives the same result on any scheduler.
    """

    canonical = True

    def __init__(self, entropy: tuple[int, ...]) -> None:
        self.entropy = entropy
        self._bits: np.random.PCG64 | None = None

    def __call__(self, n: int) -> npt.NDArray[np.uint64]:
        """``n`` words from this partition's PCG64 stream (continuing across calls)."""
        if self._bits is None:  # test-only: deliberately seeded and insecure
            self._bits = np.random.PCG64(np.random.SeedSequence(list(self.entropy)))
        return np.asarray(self._bits.random_raw(n), dtype=np.uint64)

    def for_partition(self, index: int) -> SeededPriorities:
        """A fresh stream for partition ``index``."""
        return SeededPriorities((*self.entropy, index))

    def __repr__(self) -> str:
        return f"SeededPriorities({len(self.entropy)} words)"


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
    units = unit_codes(frame[bounding.unit])
    keep = units >= 0
    if group_codes is not None:
        keep &= group_codes >= 0
    rows = np.flatnonzero(keep)
    unit = units[rows]
    # Codes per (unit, group); an empty partition (a shuffle may leave one) has no maximum.
    width = int(group_codes.max()) + 1 if group_codes is not None and group_codes.size else 1
    if group_codes is not None and bounding.max_groups is not None:
        pair, _ = pd.factorize(unit * width + group_codes[rows])
        pair = np.asarray(pair, dtype=np.int64)
        pair_priority = bounding.priorities(int(pair.max()) + 1 if pair.size else 0)
        first_of_pair = np.unique(pair, return_index=True)[1]
        pair_unit = unit[first_of_pair]  # pairs sorted by id
        if not _within(pair_unit, bounding.max_groups):
            pair_rank = ranks_within(pair_unit, pair_priority)
            rows, unit = _filter(rows, unit, pair_rank[pair] < bounding.max_groups)
    if group_codes is not None and bounding.max_rows_per_group is not None:
        cell = unit * width + group_codes[rows]
        rank = ranks_within(cell, bounding.priorities(rows.size))
        rows, unit = _filter(rows, unit, rank < bounding.max_rows_per_group)
    within = _within(unit, bounding.max_rows)
    if not within or not getattr(bounding.priorities, "stateless", False):
        priority = bounding.priorities(rows.size)  # drawn all the same from a stream
        if not within:
            rows = rows[ranks_within(unit, priority) < bounding.max_rows]
    out = np.zeros(len(frame), dtype=np.bool_)
    out[rows] = True
    return out


def _within(codes: I64, cap: int) -> bool:
    """Whether no code occurs more than ``cap`` times, so that every rank is below the cap.

    A shortcut, not a different rule: the rows kept are exactly those the ranks would keep,
    and the priorities are drawn all the same from a stream (seeded, or the session's), so
    that the stream does not change; only a stateless source (``os.urandom`` on a worker) is
    spared the words nobody reads.
    """
    return codes.size == 0 or int(np.bincount(codes).max()) <= cap


def _filter(rows: I64, unit: I64, ok: Bools) -> tuple[I64, I64]:
    return rows[ok], unit[ok]
