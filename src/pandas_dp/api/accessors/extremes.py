"""Accessor methods for DP minima and maxima (mixins of ``s.dp`` and ``df.dp``).

A DP minimum (maximum) is the quantile at 0 (1) on the public grid: see
:class:`~pandas_dp.planning.statistics.Min`. The Series forms release the Series itself; the
DataFrame forms name a column first.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, Unpack

from pandas_dp.api.accessors.base import BaseDPAccessor
from pandas_dp.api.release import ReleaseOptions
from pandas_dp.api.release.arguments import EstimateT, GridArgs, NumberT


class SeriesExtremes(BaseDPAccessor[NumberT, EstimateT]):
    """``Series.dp.min`` and ``Series.dp.max``."""

    def min(self, *, ci: float | None = None, **options: Unpack[GridArgs]) -> Any:
        """Release a DP minimum: the grid edge with about no value below it.

        Parameters
        ----------
        bounds : (number, number) or (Timestamp, Timestamp)
            Public ``(lower, upper)``; the answer lies on a grid of ``cells`` equal steps.
        epsilon : float
            Privacy cost (split equally between the estimate and its interval's two ends
            with ``ci``).
        cells : int, optional
            Grid resolution (4096 cells by default).
        ci : float, optional
            Confidence level: an :class:`~pandas_dp.Estimate` whose interval covers the
            sample minimum of the clipped values with probability at least ``ci``.

        Returns
        -------
        float, Timestamp (datetime columns), Timedelta (timedelta columns) or Estimate

        Notes
        -----
        This is *not* the smallest value, which no DP release can promise (one row could
        move it anywhere). It is ``quantile(0)`` by the exponential mechanism: grid edge
        ``k`` scores the number of values below it (sensitivity 1) and is chosen with
        probability ``∝ exp(-ε rank_k / 2)``, sampled exactly. Every edge between the lower
        bound and the smallest value scores 0, so they are equally likely: expect an answer
        between the bound and the true minimum, pulled towards the bound when the data is
        sparse (wide bounds, few rows). That is why ``describe()`` leaves min and max out.
        Missing values are skipped. Budget cost: ``epsilon``.

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> s = pd.Series(range(100, 1000), name="x").dp.protect(epsilon=1.0)
        >>> low = s.dp.min(bounds=(0, 1000), epsilon=1.0, cells=100)
        >>> 0 <= low <= 200  # edges 0..100 score 0; one above 200 has odds below 1e-40
        True
        """
        return self._scalar("min", None, ReleaseOptions(ci=ci, **options))

    def max(self, *, ci: float | None = None, **options: Unpack[GridArgs]) -> Any:
        """Release a DP maximum: the grid edge with about no value above it.

        The mirror image of :meth:`min` (``quantile(1)``): expect an answer between the
        true maximum and the upper bound, pulled towards the bound when the data is sparse.
        Budget cost: ``epsilon``.
        """
        return self._scalar("max", None, ReleaseOptions(ci=ci, **options))


class FrameExtremes(BaseDPAccessor[NumberT, EstimateT]):
    """``DataFrame.dp.min`` and ``DataFrame.dp.max`` of one column."""

    def min(self, column: Hashable, *, ci: float | None = None, **options: Unpack[GridArgs]) -> Any:
        """Release a DP minimum of ``column``; see ``Series.dp.min`` for what it is."""
        return self._scalar("min", column, ReleaseOptions(ci=ci, **options))

    def max(self, column: Hashable, *, ci: float | None = None, **options: Unpack[GridArgs]) -> Any:
        """Release a DP maximum of ``column``; see ``Series.dp.min`` for what it is."""
        return self._scalar("max", column, ReleaseOptions(ci=ci, **options))
