"""``g[["x", "y"]].cov(...)`` and ``.corr(...)``: one matrix per public group.

A mixin of :class:`~pandas_dp.api.queries.groupby.DPGroupBy`; shaped as
``df.groupby(by)[columns].cov()`` (the groups' matrices stacked, the keys then the columns
as the index), charged once by parallel composition over the disjoint groups.
"""

from __future__ import annotations

from typing import Literal, Unpack

import pandas as pd

from pandas_dp.api.queries.covariance import plan_matrix
from pandas_dp.api.queries.grouped import GroupedStatistics
from pandas_dp.api.release.arguments import MatrixArgs
from pandas_dp.api.release.consumers import checked_keywords
from pandas_dp.errors import DPValueError


class GroupedMatrices(GroupedStatistics):
    """Covariance and correlation matrices per group."""

    @checked_keywords
    def cov(self, *, ddof: int = 1, **options: Unpack[MatrixArgs]) -> pd.DataFrame:
        """Each group's covariance matrix of the selected columns (``g[["x", "y"]]``).

        As :meth:`DataFrameDPAccessor.cov` within each group; the matrices are stacked as
        pandas stacks them (index: the keys, then the columns). Sensitivity: that of one
        matrix, times the rows (and groups) a privacy unit may add. Budget cost: ``epsilon``
        once for every group (parallel composition).
        """
        return self._matrices("cov", options, ddof)

    @checked_keywords
    def corr(self, **options: Unpack[MatrixArgs]) -> pd.DataFrame:
        """Each group's Pearson correlation matrix of the selected columns.

        As :meth:`DataFrameDPAccessor.corr` within each group, stacked as pandas stacks
        them. Budget cost: ``epsilon`` once for every group (parallel composition).
        """
        return self._matrices("corr", options)

    def _matrices(
        self, how: Literal["cov", "corr"], options: MatrixArgs, ddof: int = 1
    ) -> pd.DataFrame:
        if self._selected is None or self._series:
            raise DPValueError(
                f"select the columns first, as in pandas: g[['x', 'y']].{how}(bounds=..., "
                "epsilon=...)"
            )
        columns = [c for c in self._selected if c not in self.by]
        planned = plan_matrix(
            self._target, how, columns, grouping=self._grouping, caps=self._caps, ddof=ddof,
            **options,
        )  # fmt: skip
        return self._consume(planned)
