"""Refuse frames whose rows may have been duplicated since they were protected.

Several pandas operations keep a frame's session *and* can repeat its rows:
``pd.concat([priv, priv])``, a self-merge, ``melt``, ``T``, ``explode``, ``loc`` with repeated
labels. With one row per person, a repeated row lets one person move a count by two. The guard
records the index at protect time and accepts a frame only if its index labels are unique,
all among the recorded ones, and no more numerous. It is a heuristic (relabelling the index
defeats it); a privacy-unit column is the robust answer.

Whether the guard refuses depends on the frame's index, and so on the data behind a filter
(a duplicated *empty* selection passes) or on labels an analyst computed from values. It
guards against honest mistakes that repeat rows, not against an analyst who builds labels
from the data (who holds the data anyway); its refusals cost nothing, so they must not be
shown to anyone who may not learn about single rows. The privacy-model docs say so.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from pandas_dp.errors import DuplicatedRowsError

_FIX = (
    "Query frames derived from the protected one without repeating rows (filters, column "
    "selection, head, sample without replacement, sort_values, ...). To explode a list "
    "column or melt columns, use priv.dp.explode(column, max_items=c) or "
    "priv.dp.melt(id_vars=[...], value_vars=[...]) (and priv.dp.merge for a public table): "
    "they declare how many rows one row becomes, and later releases are calibrated to it. "
    "To work with several rows per person, protect with privacy_unit='<id column>' and "
    "max_rows_per_unit=k."
)


class RowGuard:
    """The protect-time index, and the checks a derived frame's index must pass.

    The *structural* check (the index names are those of the protected frame) always
    applies: it refuses frames aggregated or reshaped by pandas (``groupby().sum()``,
    ``pivot_table``, ``set_index``, ``stack``), whose rows are not people. The *label*
    checks (duplicate-free subset of the protected labels) apply under row-level privacy
    only; with a privacy-unit column the library caps each unit itself.
    """

    def __init__(self, index: pd.Index, *, labels: bool = True, allowance: int = 1) -> None:
        self.index = index
        self.labels = labels
        #: How many rows may carry one recorded label: a derived frame whose rows repeat
        #: their source row's label (``explode``, a one-to-many join) at most that often.
        self.allowance = allowance

    def allowing(self, factor: int) -> RowGuard:
        """The guard of a frame in which each row may become ``factor`` rows with its label."""
        return RowGuard(self.index, labels=self.labels, allowance=self.allowance * factor)

    def check(self, index: pd.Index) -> None:
        """Raise :class:`DuplicatedRowsError` if ``index`` fails the checks that apply."""
        recorded = self.index
        if index is recorded:
            return
        if list(index.names) != list(recorded.names):
            raise DuplicatedRowsError(
                "this frame's index is not the protected frame's index (its name changed, as "
                "after set_index, groupby().sum(), pivot_table or stack): its rows are no longer "
                f"one per person. {_FIX}"
            )
        if not self.labels or len(index) == 0:
            return
        if len(index) > len(recorded) * self.allowance:
            raise DuplicatedRowsError(
                f"this frame has more rows than the frame that was protected. {_FIX}"
            )
        if len(index) == len(recorded) and index.equals(recorded):
            return
        if _ordered_subset_of_range(index, recorded):
            return
        positions = _range_positions(index, recorded)
        if positions is None:
            try:
                positions = np.asarray(recorded.get_indexer(index))
            except (TypeError, ValueError):  # an index of another shape or kind altogether
                positions = np.full(1, -1)
        if (positions < 0).any():
            raise DuplicatedRowsError(
                "this frame's index has labels the protected frame did not have (was the "
                f"index changed, e.g. by set_index, T, melt or reset_index after concat?). {_FIX}"
            )
        if self.allowance > 1:
            repeated = np.bincount(positions, minlength=len(recorded)).max() > self.allowance
        else:
            seen = np.zeros(len(recorded), dtype=np.bool_)
            seen[positions] = True
            repeated = np.count_nonzero(seen) != len(positions)
        if repeated:
            raise DuplicatedRowsError(f"this frame's rows may have been duplicated. {_FIX}")


def _range_positions(index: pd.Index, recorded: pd.Index) -> np.ndarray | None:
    """Each label's position in a ``RangeIndex`` (-1: not one of its labels), by arithmetic.

    Integer labels only (None otherwise: the general lookup decides). Labels that repeat
    (a frame at a stability above 1) are fine: the positions repeat with them.
    """
    if not isinstance(recorded, pd.RangeIndex) or recorded.step <= 0:
        return None
    if not isinstance(index.dtype, np.dtype) or index.dtype.kind != "i":
        return None
    values = index.to_numpy().astype(np.int64, copy=False) - recorded.start
    inside = (values >= 0) & (values < recorded.stop - recorded.start)
    if recorded.step > 1:
        inside &= values % recorded.step == 0
    return np.where(inside, values // recorded.step, -1)


def _ordered_subset_of_range(index: pd.Index, recorded: pd.Index) -> bool:
    """Whether ``index`` is a strictly increasing selection of a RangeIndex's labels.

    The common case (a filter, ``head`` or ``sample(...).sort_index()`` of a frame with the
    default index) in a few vectorised passes instead of a hash lookup per row. A strictly
    increasing sequence has no repeats, so the labels only need to lie on the range. ``False``
    means "not shown here", and the general check decides.
    """
    if not isinstance(recorded, pd.RangeIndex) or recorded.step <= 0:
        return False
    if not isinstance(index.dtype, np.dtype) or index.dtype.kind != "i":
        return False
    values = index.to_numpy()
    if not (values[1:] > values[:-1]).all():
        return False
    if values[0] < recorded.start or values[-1] >= recorded.stop:
        return False
    return recorded.step == 1 or not ((values - recorded.start) % recorded.step).any()
