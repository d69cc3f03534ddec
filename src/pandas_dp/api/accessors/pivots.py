"""``DataFrame.dp.crosstab`` and ``DataFrame.dp.pivot_table`` (a mixin of ``df.dp``)."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Literal, Unpack

import pandas as pd

from pandas_dp.api.accessors.base import BaseDPAccessor
from pandas_dp.api.docstrings import shared_doc
from pandas_dp.api.queries.crosstab import plan_crosstab, plan_pivot_table
from pandas_dp.api.release import ReleaseOptions
from pandas_dp.api.release.arguments import EstimateT, Keys, NumberT, RatioArgs
from pandas_dp.planning.statistics.postprocess import PostProcess


class FramePivots(BaseDPAccessor[NumberT, EstimateT]):
    """Cross tabulations and pivot tables over public row and column keys."""

    _obj: pd.DataFrame

    @shared_doc
    def crosstab(
        self, index: Hashable | list[Hashable], columns: Hashable | list[Hashable], *,
        keys: Keys = None, values: Hashable | None = None, aggfunc: str | None = None,
        margins: bool = False, margins_name: Hashable = "All",
        normalize: bool | Literal["all", "index", "columns"] = False,
        nonnegative: bool = False, ci: float | None = None, **options: Unpack[RatioArgs],
    ) -> pd.DataFrame:  # fmt: skip
        """Release a noisy cross tabulation, shaped like :func:`pandas.crosstab`.

        Parameters
        ----------
        index, columns : label or list of labels
            The row and column variables (columns of this frame, not arrays).
        keys : dict
            ``{column: public values}`` for every row and column variable (or from the
            session's schema); the table has exactly these rows and columns, in this order.
        values, aggfunc : label and str, optional
            Release ``aggfunc`` (``"sum"``, ``"mean"``, ``"median"``, ...) of ``values``
            per cell instead of counts; ``bounds`` then clips ``values``.
        margins : bool, default False
            Add ``margins_name`` row and column totals, consistent with the cells.
        normalize : bool or {"all", "index", "columns"}, default False
            Shares, as pandas: of all rows, of the row's total or of the column's total,
            the totals taken over all rows (those outside the listed keys included), of the
            noisy counts clamped at 0.
        {nonnegative}
        {epsilon}
        {ci_table}
            Each column key then holds ``count``, ``count_lower``, ``count_upper`` under a
            top level (not with ``margins`` or ``normalize``).

        Returns
        -------
        DataFrame
            Indexed by the row keys, columns the column keys, named as pandas names them.

        Notes
        -----
        The cells are disjoint groups of the product of the keys: one release, sensitivity 1
        for counts (``max(|lower|, |upper|)`` for sums), discrete Laplace noise, charged
        ``epsilon`` once (parallel composition). Rows whose keys are not listed are dropped
        silently. Margins are free post-processing: a count's margin is the sum of the
        released cells, so every total agrees with its cells exactly; a mean's margin comes
        from the pooled noisy sums and counts of its cells. Medians and distinct counts have
        no margin of that kind: ``margins=True`` refuses them.

        With ``normalize``, the totals are pandas' totals on all the rows (as if the table
        were computed on the full data and the listed keys selected): one more cell per row
        key counts its rows whose column value is not listed (not missing), one per column
        key its rows whose row value is not listed, one the rest. Each row is in one cell,
        so the counts keep sensitivity 1 and the cost stays ``epsilon``; those cells enter
        the totals and are not shown.

        In a table with counts (``pivot_table``), a mean, spread or quantile is NaN where
        its own noisy count, or the count of its column in the same cell, is below
        ``min_count`` (1 by default); its interval too.

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> df = pd.DataFrame({"sex": [0, 1] * 500, "region": ["n", "s", "s", "n"] * 250})
        >>> priv = df.dp.protect(epsilon=1.0)
        >>> table = priv.dp.crosstab(
        ...     "sex", "region", keys={"sex": [0, 1], "region": ["n", "s"]}, margins=True,
        ...     epsilon=1.0,
        ... )
        >>> list(table.index), list(table.columns)
        ([0, 1, 'All'], ['n', 's', 'All'])
        >>> bool((table.loc["All", ["n", "s"]] == table.loc[[0, 1], ["n", "s"]].sum()).all())
        True
        """
        release = ReleaseOptions(ci=ci, post=PostProcess.of(nonnegative), **options)
        return self._execute(plan_crosstab(
            self._obj, index, columns, release, keys=keys, values=values, aggfunc=aggfunc,
            margins=margins, margins_name=margins_name, normalize=normalize,
        ))  # fmt: skip

    @shared_doc
    def pivot_table(
        self, values: object = None, index: object = None, columns: object = None,
        aggfunc: object = "mean",
        *, keys: Keys = None, margins: bool = False, margins_name: Hashable = "All",
        ci: float | None = None, **options: Unpack[RatioArgs],
    ) -> pd.DataFrame:  # fmt: skip
        """Release a noisy pivot table, shaped like :func:`pandas.pivot_table`.

        Parameters
        ----------
        values : label or list of labels, optional
            The column(s) to aggregate (by default every column but the keys).
        index, columns : label or list of labels
            Row and column variables; ``columns`` may be left out.
        aggfunc : str, list of str or dict, default "mean"
            Statistic name(s) (``"count"``, ``"sum"``, ``"mean"``, ``"median"``, ``"std"``,
            ...), or ``{value: name or list}``; the columns are laid out as pandas lays them.
        keys : dict
            ``{column: public values}`` for every row and column variable (or a schema).
        bounds : dict
            ``{value: (lower, upper)}`` for every aggregated column (a pair for one).
        margins, margins_name
            Totals consistent with the cells; see :meth:`crosstab`.
        {epsilon}
        {ci_table}

        Returns
        -------
        DataFrame
            As pandas: rows the index keys, columns the column keys under the statistics'
            labels when there are several.

        Notes
        -----
        One release over the cells (parallel composition), ε split among the statistics
        by the planner's rule (stated in the ledger); a mean whose cell looks empty is NaN
        (``min_count``), as pandas shows NaN for an empty cell. See :meth:`crosstab` for
        margins.
        """
        return self._execute(plan_pivot_table(
            self._obj, ReleaseOptions(ci=ci, **options), values, index, columns, aggfunc,
            keys=keys, margins=margins, margins_name=margins_name,
        ))  # fmt: skip
