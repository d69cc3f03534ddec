"""Privacy-unit ids: who a row belongs to is the canonical id the row holds.

Identity travels with the row, never with its index label. Labels are renumbered by honest
code all the time (``sort_values().reset_index(drop=True)``, ``set_axis``, a filter then
``reset_index``), and a rule that read them would move rows from one person to another, or
make whether a row counts depend on where the other rows sit: neither is stable under adding
or removing one unit. So every release reads the unit column *as it is*, in its canonical
form (:func:`~pandas_dp.engines.canonical.canonical_unit_ids`: ``1 = 1.0 = True``, normalised
Decimals, UTC instants, ``+0.0``; an unhashable or missing id is no unit), the same form the
Dask engine exchanges rows by.

What ``protect`` pins is the *set* of ids present then. A row whose id is not in it (made
up after ``protect``: ``assign(pid=range(n))``, ``pid * R + j``) belongs to no one and is
dropped, a rule that reads only that row. A rewrite that hands one person's rows ids that
other people held cannot be told from honest data by any rule that reads rows; it is
deliberate, and the privacy model says so.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from pandas_dp.engines.canonical import canonical_unit_ids
from pandas_dp.engines.codes import level_codes

I64 = npt.NDArray[np.int64]

#: The column that carries the unit codes inside a release (never a user's column name).
PINNED = "\x00pandas-dp unit id"


@dataclass(frozen=True, eq=False)
class UnitIds:
    """The canonical unit ids present at ``protect`` (private: never released)."""

    ids: pd.Index

    @classmethod
    def pin(cls, frame: pd.DataFrame, column: Hashable) -> UnitIds:
        """Record the canonical ids of ``frame[column]`` (the data owner's call).

        Total: unhashable and missing ids are no unit, whichever rows hold them.
        """
        canonical = canonical_unit_ids(frame[column])
        codes, uniques = pd.factorize(canonical, use_na_sentinel=True)
        del codes
        return cls(pd.Index(uniques, tupleize_cols=False))

    def lookup(self, column: pd.Series) -> I64:
        """Each row's unit code: its canonical id's position among the pinned ids, or -1.

        -1 (no unit: the row is dropped) for a missing or unhashable id, or one that no row
        held at ``protect``. Reads each row's own value only.
        """
        if len(self.ids) == 0:
            return np.full(len(column), -1, dtype=np.int64)
        return level_codes(canonical_unit_ids(column), self.ids)
