"""Privacy-unit ids pinned at ``protect``: a rewritten id column cannot defeat the caps.

The caps trust the ids they are given: if a release read the unit column as it is at release
time, ``concat([t.assign(pid=t.pid * R + j) for j in range(R)])`` would make one person R
people. So ``protect`` records each row's id (as an integer code) under its index label,
and every release looks the ids up by label, ignoring what the column holds by then. Rows
whose label was not in the protected frame cannot be attributed to anyone: they are dropped,
like rows with a missing id (a refusal would read labels, which a caller can compute from
values, and leak a bit for free). Rows repeated under one label (``concat([priv, priv])``)
keep one person's id, so the caps bound them as one person's rows.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from pandas_dp.errors import DPValueError

I64 = npt.NDArray[np.int64]

#: The column that carries the pinned ids inside a release (never a user's column name).
PINNED = "\x00pandas-dp unit id"


@dataclass(frozen=True, eq=False)
class UnitIds:
    """Each protected row's unit id (an integer code; -1 for a missing id), by index label."""

    index: pd.Index
    ids: I64

    @classmethod
    def pin(cls, frame: pd.DataFrame, column: Hashable) -> UnitIds:
        """Record ``frame[column]`` by label (the data owner's call: nothing is released).

        Raises
        ------
        DPValueError
            If the index repeats a label: a repeated label could not tell its rows' units
            apart later.
        """
        if not frame.index.is_unique:
            raise DPValueError(
                "the index has repeated labels, so pandas-dp could not tell later which unit "
                "each row belongs to. Protect df.reset_index(drop=True) instead."
            )
        codes, _ = pd.factorize(frame[column], use_na_sentinel=True)
        return cls(frame.index, np.asarray(codes, dtype=np.int64))

    def lookup(self, index: pd.Index) -> I64:
        """The pinned id of each row of a frame derived from the protected one.

        -1 (no unit: the row is dropped) for a label the protected frame did not have.
        """
        positions = _positions(self.index, index)
        if self.ids.size == 0:
            return np.full(len(index), -1, dtype=np.int64)
        return np.where(positions >= 0, self.ids[np.maximum(positions, 0)], -1)


def _positions(recorded: pd.Index, index: pd.Index) -> I64:
    """Where each label of ``index`` sits in ``recorded`` (-1 where it is absent)."""
    if isinstance(recorded, pd.RangeIndex) and pd.api.types.is_integer_dtype(index.dtype):
        values = np.asarray(index, dtype=np.int64)  # arithmetic instead of a hash lookup
        offset = values - recorded.start
        step = recorded.step
        position = offset // step
        inside = (offset % step == 0) & (position >= 0) & (position < len(recorded))
        return np.where(inside, position, -1).astype(np.int64)
    try:
        return np.asarray(recorded.get_indexer(index), dtype=np.int64)
    except (TypeError, ValueError):  # an index of another kind or shape altogether
        return np.full(len(index), -1, dtype=np.int64)
