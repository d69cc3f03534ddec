"""Partition-local contribution bounding: when a collection is already split by unit.

A Dask collection whose index is the privacy-unit column (``set_index(unit, drop=False)``,
or ``read_parquet(..., index=unit, calculate_divisions=True)`` with the column assigned back)
and whose divisions are known puts each unit's rows in the one partition whose division
holds its id. Then every partition can cap its own units, with no shuffle.

The divisions are never trusted on their word. On the client, they must be known, sorted
and non-overlapping (checked here, from the graph's metadata: no data is read). On the
worker, each partition keeps only the rows whose unit id lies inside its own division
(:meth:`Division.holds`): should the divisions be wrong, a unit's stray rows are dropped
rather than counted in a second partition, so no unit is ever capped twice. Whether a row
is kept depends on its own id and on the public divisions only, like dropping a row with a
missing id.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np
import numpy.typing as npt
import pandas as pd

from pandas_dp.engines.canonical import is_missing

if TYPE_CHECKING:
    import dask.dataframe as dd

Bools = npt.NDArray[np.bool_]


class _Ordered(Protocol):
    """An id compared with a division one at a time (any object, which may raise)."""

    def __le__(self, other: object, /) -> object: ...
    def __lt__(self, other: object, /) -> object: ...
    def __ge__(self, other: object, /) -> object: ...


@dataclass(frozen=True)
class Division:
    """The unit ids one partition may hold: ``[lower, upper)``, or ``[lower, upper]``."""

    lower: object
    upper: object
    closed: bool  # the last partition includes its upper division

    def holds(self, ids: pd.Series) -> Bools:
        """Which ids lie inside the division (missing or incomparable ids do not).

        Total: vectorised comparisons, and where those raise (ids of mixed types), one id
        at a time, an id that cannot be compared counting as outside.
        """
        values = ids.to_numpy()
        try:
            with np.errstate(all="ignore"):
                inside = np.asarray(self._compare(values), dtype=np.bool_)
            return inside & np.asarray(ids.notna().to_numpy(), dtype=np.bool_)
        except Exception:  # incomparable ids: decided one by one
            return np.fromiter((self._holds(v) for v in values), np.bool_, count=len(values))

    def _compare(self, values: np.ndarray) -> np.ndarray:
        below = values <= self.upper if self.closed else values < self.upper
        return (values >= self.lower) & below

    def _holds(self, value: _Ordered) -> bool:
        try:
            if is_missing(value) or not bool(value >= self.lower):
                return False
            return bool(value <= self.upper if self.closed else value < self.upper)
        except Exception:  # an id that cannot be compared lies in no division
            return False


def unit_divisions(frame: dd.DataFrame, unit: Hashable) -> tuple[Division, ...] | None:
    """One :class:`Division` per partition if ``frame`` is split by ``unit``, else None.

    Split by unit means: the index is named after the unit column, and the divisions are
    known, values of the unit column's dtype, strictly increasing (the last two may be
    equal) and comparable. Read from the collection's metadata only.
    """
    if frame._meta.index.name != unit or not frame.known_divisions:
        return None
    if not _of_dtype(frame.divisions, frame._meta[unit].dtype):
        return None
    bounds = list(frame.divisions)
    try:
        ordered = all(bool(a < b) for a, b in itertools.pairwise(bounds[:-1]))
        ordered = ordered and bool(bounds[-2] <= bounds[-1])
    except Exception:  # divisions that do not compare: not split by unit as far as we know
        return None
    if not ordered:
        return None
    last = len(bounds) - 2
    return tuple(
        Division(bounds[i], bounds[i + 1], closed=i == last) for i in range(len(bounds) - 1)
    )


def _of_dtype(
    bounds: tuple[object, ...], dtype: np.dtype | pd.api.extensions.ExtensionDtype
) -> bool:
    """Whether the divisions are values of the unit column's dtype, unchanged by it.

    Dask computes divisions before it turns an object column into text: the divisions of
    ids ``0 .. 39`` stay the integers while the column holds ``"0" .. "39"``, an id would
    compare with no division, and every row would be dropped (a wrong answer). Such a
    collection is exchanged by unit instead.
    """
    try:
        typed = pd.Index(list(bounds), dtype=dtype)
        return all(bool(a == b) for a, b in zip(typed, bounds, strict=True))
    except Exception:  # divisions that the column's dtype cannot hold
        return False
