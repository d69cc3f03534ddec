"""``DataFrame.dp`` named aggregation, spreads, quantiles, mode, top-k and ``describe``.

A mixin: each method names its column(s) first and forwards to :mod:`pandas_dp.api.queries`;
a list of columns gives pandas' ``df[columns].<how>()`` shape.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any, Unpack, overload

import pandas as pd

from pandas_dp.api.accessors.base import BaseDPAccessor
from pandas_dp.api.queries.choice import plan_top_k
from pandas_dp.api.queries.ungrouped import (
    DESCRIBE_PERCENTILES,
    plan_columns,
    plan_describe,
    plan_many,
    plan_quantile,
)
from pandas_dp.api.release import ReleaseOptions
from pandas_dp.api.release.arguments import (
    Bounds,
    EstimateT,
    Fill,
    GridArgs,
    Mechanism,
    NoiseArgs,
    NumberT,
    RatioArgs,
    Real,
)
from pandas_dp.errors import DPValueError
from pandas_dp.planning.statistics import parse_named
from pandas_dp.planning.statistics.postprocess import PostProcess


class FrameStatistics(BaseDPAccessor[NumberT, EstimateT]):
    """``DataFrame.dp`` named aggregation, spreads, quantiles, mode, top-k and ``describe``."""

    def agg(
        self, *, epsilon: Real | None = None, bounds: Bounds = None, delta: Real | None = None,
        mechanism: Mechanism = "laplace", ci: float | None = None, fillna: Fill = None,
        rho: Real | None = None,
        nonnegative: bool = False, accuracy: Mapping[str, float] | None = None,
        min_count: Real | None = None, relative_error: bool = False, weights: Hashable = None,
        weight_bounds: tuple[Real, Real] | None = None, **named: object,
    ) -> pd.DataFrame:  # fmt: skip
        """Release several statistics of the whole frame in one call (one row).

        The ungrouped form of ``priv.dp.groupby(...).agg``: ``n="count"``,
        ``avg=("income", "mean")``, ``med=("age", "median")`` ...; same parameters.

        Notes
        -----
        The fewest noisy measurements behind all statistics (a mean reuses the row count; a
        sum next to a mean of its column is derived from the mean's measurements); ε is
        split among them for the least relative error, weighted by ``accuracy``
        (``{"avg": 2}`` counts the error of ``avg`` twice), and δ for Gaussian noise
        equally (sequential composition). Values are clipped to ``bounds``. Budget cost:
        ``epsilon``.

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> df = pd.DataFrame({"age": [20, 40, 60] * 300}).dp.protect(epsilon=1.0)
        >>> row = df.dp.agg(n="count", avg=("age", "mean"), bounds={"age": (0, 100)}, epsilon=1.0)
        >>> list(row.columns), bool(abs(row.loc[0, "avg"] - 40) < 5)
        (['n', 'avg'], True)
        """
        stats = parse_named(named)
        options = ReleaseOptions(
            epsilon=epsilon, bounds=bounds, delta=delta, mechanism=mechanism, ci=ci,
            fillna=fillna, rho=rho, post=PostProcess.of(nonnegative), accuracy=accuracy,
            min_count=min_count, relative_error=relative_error, weights=weights,
            weight_bounds=weight_bounds,
        )  # fmt: skip
        return self._execute(plan_many(self._obj, stats, options, query="agg"))

    @overload
    def var(
        self, column: Hashable, *, ddof: int = 1, ci: None = None, **options: Unpack[RatioArgs]
    ) -> NumberT: ...
    @overload
    def var(
        self, column: Hashable, *, ddof: int = 1, ci: float, **options: Unpack[RatioArgs]
    ) -> EstimateT: ...
    @overload
    def var(
        self, column: list[Hashable], *, ddof: int = 1, ci: float | None = None,
        **options: Unpack[RatioArgs],
    ) -> Any: ...  # fmt: skip
    def var(
        self, column: Hashable | list[Hashable], *, ddof: int = 1, ci: float | None = None,
        **options: Unpack[RatioArgs],
    ) -> object:  # fmt: skip
        """Release the noisy variance of ``column``; see ``Series.dp.var``."""
        return self._spread(column, "var", ddof, ReleaseOptions(ci=ci, **options))

    @overload
    def std(
        self, column: Hashable, *, ddof: int = 1, ci: None = None, **options: Unpack[RatioArgs]
    ) -> NumberT: ...
    @overload
    def std(
        self, column: Hashable, *, ddof: int = 1, ci: float, **options: Unpack[RatioArgs]
    ) -> EstimateT: ...
    @overload
    def std(
        self, column: list[Hashable], *, ddof: int = 1, ci: float | None = None,
        **options: Unpack[RatioArgs],
    ) -> Any: ...  # fmt: skip
    def std(
        self, column: Hashable | list[Hashable], *, ddof: int = 1, ci: float | None = None,
        **options: Unpack[RatioArgs],
    ) -> object:  # fmt: skip
        """Release the noisy standard deviation of ``column``; see ``Series.dp.std``."""
        return self._spread(column, "std", ddof, ReleaseOptions(ci=ci, **options))

    def quantile(
        self, column: Hashable | list[Hashable], q: float | Sequence[float] = 0.5, *,
        ci: float | None = None,
        **options: Unpack[GridArgs],
    ) -> Any:  # fmt: skip
        """Release noisy quantiles of ``column``; see ``Series.dp.quantile``.

        For a list of columns, pandas' shapes: a Series indexed by the columns (named ``q``)
        for one level, a DataFrame indexed by the levels for several.
        """
        return self._execute(plan_quantile(self._obj, column, q, ReleaseOptions(ci=ci, **options)))

    def nunique(
        self, *, dropna: bool = True, ci: float | None = None, **options: Unpack[NoiseArgs]
    ) -> Any:
        """Release the noisy number of distinct values of every column, like ``df.nunique()``.

        A Series indexed by the columns (with ``ci``, a DataFrame with ``nunique``,
        ``nunique_lower`` and ``nunique_upper``).

        Notes
        -----
        Values are compared in canonical form, as in ``Series.dp.nunique``. One row adds at
        most one distinct value to each column: each column's count has sensitivity 1 and
        discrete Laplace noise; ε is split among the columns (sequential composition; the
        ledger lists the split). Counts are clamped at 0 (free post-processing): int64, as
        pandas, never negative. Budget cost: ``epsilon``. Not available on Dask.

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> df = pd.DataFrame({"a": ["x", "y"] * 300, "b": [1, 2, 3] * 200}).dp.protect(epsilon=1.0)
        >>> counts = df.dp.nunique(epsilon=1.0)
        >>> list(counts.index), bool((abs(counts - [2, 3]) < 60).all())  # scale 2 each
        (['a', 'b'], True)
        """
        if dropna is not True:
            raise DPValueError("nunique counts non-missing values only: leave dropna=True")
        columns = list(self._obj.columns)
        planned = plan_columns(self._obj, "nunique", columns, ReleaseOptions(ci=ci, **options))
        return self._execute(planned)

    @overload
    def median(
        self, column: Hashable, *, ci: None = None, **options: Unpack[GridArgs]
    ) -> NumberT: ...
    @overload
    def median(self, column: Hashable, *, ci: float, **options: Unpack[GridArgs]) -> EstimateT: ...
    @overload
    def median(
        self, column: list[Hashable], *, ci: float | None = None, **options: Unpack[GridArgs]
    ) -> Any: ...
    def median(
        self,
        column: Hashable | list[Hashable],
        *,
        ci: float | None = None,
        **options: Unpack[GridArgs],
    ) -> object:
        """Release the noisy median of ``column`` (a Series for a list, as ``df[cols].median()``).

        See ``Series.dp.quantile`` for the mechanism and the cost.
        """
        release = ReleaseOptions(ci=ci, **options)
        if isinstance(column, list):
            return self._execute(plan_columns(self._obj, "median", column, release))
        return self._execute(plan_quantile(self._obj, column, 0.5, release))

    def mode(
        self,
        column: Hashable,
        *,
        candidates: Sequence[object] | None = None,
        epsilon: Real | None = None,
        rho: Real | None = None,
    ) -> Any:
        """Release the most frequent public candidate of ``column``; see ``Series.dp.mode``."""
        return self._execute(
            plan_top_k(
                self._obj, column, 1, candidates=candidates, epsilon=epsilon, rho=rho, mode=True
            )
        )

    def top_k(
        self,
        column: Hashable,
        k: int,
        *,
        candidates: Sequence[object] | None = None,
        epsilon: Real | None = None,
        rho: Real | None = None,
    ) -> list[Any]:
        """Release the ``k`` most frequent candidates of ``column``; see ``Series.dp.top_k``."""
        return self._execute(
            plan_top_k(self._obj, column, k, candidates=candidates, epsilon=epsilon, rho=rho)
        )

    def describe(
        self, *, epsilon: Real | None = None, bounds: Bounds = None,
        percentiles: Sequence[float] = DESCRIBE_PERCENTILES, cells: int | None = None,
        rho: Real | None = None,
    ) -> pd.DataFrame:  # fmt: skip
        """Release a table like ``DataFrame.describe`` for the columns with public bounds.

        Parameters
        ----------
        bounds : dict, optional
            ``{column: (lower, upper)}`` for every column to describe (in that order). By
            default, every column with bounds in the session's schema.
        epsilon : float
            Total privacy cost of the table.
        percentiles : list of float, default (0.25, 0.5, 0.75)
            Quantile levels to include.
        cells : int, optional
            Quantile grid resolution.

        Returns
        -------
        DataFrame
            Rows ``count``, ``mean``, ``std`` and the percentiles; one column per column.
            The count is clamped at 0 (free post-processing): a whole number, never negative.

        Notes
        -----
        ε is split among every measurement behind the table (per column: a count of
        non-missing values, a centred sum, a sum of squares, and one quantile per percentile;
        the mean and std share the count and the sum) for the least relative error of the
        table's statistics, each weighing alike. The ledger row lists the split.
        ``min`` and ``max`` are omitted on purpose: a DP minimum or maximum would be a
        quantile at 0 or 1, which reflects the public bounds more than the data.

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> df = pd.DataFrame({"age": [20.0, 40.0, 60.0] * 400}).dp.protect(epsilon=2.0)
        >>> table = df.dp.describe(bounds={"age": (0, 100)}, epsilon=2.0)
        >>> list(table.index)
        ['count', 'mean', 'std', '25%', '50%', '75%']
        """
        return self._execute(
            plan_describe(
                self._obj,
                bounds=bounds,
                epsilon=epsilon,
                percentiles=percentiles,
                cells=cells,
                rho=rho,
            )
        )
