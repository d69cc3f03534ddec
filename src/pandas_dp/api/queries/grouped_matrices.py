"""``g[["x", "y"]].cov(...)`` and ``.corr(...)``: one matrix per public group.

A mixin of :class:`~pandas_dp.api.queries.groupby.DPGroupBy`; shaped as
``df.groupby(by)[columns].cov()`` (the groups' matrices stacked, the keys then the columns
as the index), charged once by parallel composition over the disjoint groups.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any, Literal

import pandas as pd

from pandas_dp.api.queries.covariance import plan_matrix
from pandas_dp.api.queries.grouped import GroupedStatistics
from pandas_dp.api.release.arguments import Mechanism, Real
from pandas_dp.errors import DPValueError


class GroupedMatrices(GroupedStatistics):
    """Covariance and correlation matrices per group."""

    def cov(
        self,
        *,
        bounds: Mapping[Hashable, tuple[Real, Real]] | None = None,
        epsilon: Real | None = None,
        delta: Real | None = None,
        rho: Real | None = None,
        mechanism: Mechanism = "laplace",
        ci: float | None = None,
        min_periods: int | None = None,
        ddof: int = 1,
        use: Literal["pairwise", "complete"] = "pairwise",
    ) -> pd.DataFrame:
        """Each group's covariance matrix of the selected columns (``g[["x", "y"]]``).

        As :meth:`DataFrameDPAccessor.cov` within each group; the matrices are stacked as
        pandas stacks them (index: the keys, then the columns). Sensitivity: that of one
        matrix, times the rows (and groups) a privacy unit may add. Budget cost: ``epsilon``
        once for every group (parallel composition).
        """
        options = {"ddof": ddof}
        return self._matrices(
            "cov", bounds, epsilon, delta, rho, mechanism, ci, min_periods, use, options
        )

    def corr(
        self,
        *,
        bounds: Mapping[Hashable, tuple[Real, Real]] | None = None,
        epsilon: Real | None = None,
        delta: Real | None = None,
        rho: Real | None = None,
        mechanism: Mechanism = "laplace",
        ci: float | None = None,
        min_periods: int = 1,
        use: Literal["pairwise", "complete"] = "pairwise",
    ) -> pd.DataFrame:
        """Each group's Pearson correlation matrix of the selected columns.

        As :meth:`DataFrameDPAccessor.corr` within each group, stacked as pandas stacks
        them. Budget cost: ``epsilon`` once for every group (parallel composition).
        """
        return self._matrices(
            "corr", bounds, epsilon, delta, rho, mechanism, ci, min_periods, use, {}
        )

    def _matrices(
        self, how: Literal["cov", "corr"], bounds: Any, epsilon: Any, delta: Any, rho: Any,
        mechanism: Any, ci: Any, min_periods: Any, use: Any, options: dict[str, Any],
    ) -> pd.DataFrame:  # fmt: skip
        if self._selected is None or self._series:
            raise DPValueError(
                f"select the columns first, as in pandas: g[['x', 'y']].{how}(bounds=..., "
                "epsilon=...)"
            )
        columns = [c for c in self._selected if c not in self.by]
        planned = plan_matrix(
            self._target, how, columns, bounds=bounds, epsilon=epsilon, delta=delta, rho=rho,
            mechanism=mechanism, ci=ci, min_periods=min_periods, use=use,
            grouping=self._grouping, caps=self._caps, **options,
        )  # fmt: skip
        result: pd.DataFrame = self._execute(planned)
        return result
