"""Counts that are not of rows: group sizes and numbers of distinct values."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, ClassVar, Literal

import numpy as np

from pandas_dp.planning.measurement.keys import MeasurementKey
from pandas_dp.planning.measurement.kinds import DistinctCount, RowCount
from pandas_dp.planning.statistics.base import F64, Context, Inputs
from pandas_dp.planning.statistics.moments import Count

if TYPE_CHECKING:
    from pandas_dp.planning.statistics.postprocess import PostProcess


@dataclass(frozen=True)
class Size(Count):
    """Rows per group, whatever ``column`` is (``GroupBy.size``; ``("x", "size")`` in agg)."""

    how: ClassVar[str] = "size"

    def measurements(self, context: Context) -> tuple[MeasurementKey, ...]:
        """The row count."""
        return (RowCount(),)


@dataclass(frozen=True)
class NUnique(Count):
    """The number of distinct non-missing values of ``column`` (``Series.nunique``).

    One row adds at most one distinct value to its group, so the noise is a count's
    (sensitivity 1, or the unit's contribution bound). Values are compared in canonical form
    (``1``, ``1.0`` and ``True`` are one value); unprocessable values count as missing.
    """

    how: ClassVar[str] = "nunique"
    group_count: ClassVar[bool] = False  # distinct values, not the group's rows
    margin: ClassVar[Literal["sum", "pooled", "none"]] = "none"  # values repeat across cells
    in_memory_only: ClassVar[bool] = True  # a Dask partition cannot see the others' values

    def measurements(self, context: Context) -> tuple[MeasurementKey, ...]:
        """One count of distinct values."""
        return (DistinctCount(self.column),)

    def value(self, inputs: Inputs, post: PostProcess) -> F64:
        """The noisy count, clamped at 0: a number of distinct values is never negative.

        Free post-processing of the released integer, total for every value (no raise, no
        warning); the interval (:meth:`Count.interval`) is clamped at 0 alike.
        """
        counts = np.asarray(inputs.noisy[0], dtype=np.int64)
        return replace(post, nonnegative=True).apply(counts)
