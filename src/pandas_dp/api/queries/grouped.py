"""What every group-by release shares: column selection and the one-statistic-per-column path.

A group-by is used as in pandas: ``g.mean("x")``, ``g["x"].mean()`` (a Series named ``x``),
``g[["x", "y"]].mean()`` (a DataFrame). :class:`GroupedStatistics` resolves which columns a
method reads and releases one statistic per column in one call, charged once (parallel
composition across groups, the planner's split of ε across columns).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, Literal, Self, TypeVar, Unpack, overload

import numpy as np
import pandas as pd
from pandas.api.extensions import ExtensionArray

from pandas_dp.api.caps import Caps
from pandas_dp.api.docstrings import shared_doc
from pandas_dp.api.queries.by_series import renamed
from pandas_dp.api.queries.ungrouped import (
    COUNT_ROW,
    DESCRIBE_PERCENTILES,
    parse_quantiles,
    row_major,
    rows_in_level_order,
)
from pandas_dp.api.release import PlannedRelease, ReleaseOptions, Target, plan, validate
from pandas_dp.api.release.arguments import (
    Bounds,
    Columns,
    GridArgs,
    NoiseArgs,
    RatioArgs,
    Real,
)
from pandas_dp.api.release.consumers import RUN, Consumer, checked_keywords
from pandas_dp.api.release.finish import Shape, suffixed
from pandas_dp.api.release.types import Table
from pandas_dp.api.statistics import (
    Count,
    Mean,
    Median,
    NUnique,
    Quantile,
    Statistic,
    Std,
    Var,
)
from pandas_dp.api.statistics.spreads import Sem
from pandas_dp.engines import Grouping
from pandas_dp.errors import DPTypeError, DPValueError

T = TypeVar("T")


@dataclass(frozen=True, eq=False, repr=False)
class GroupedStatistics:
    """Column selection and per-column statistics of a group-by (see :class:`DPGroupBy`).

    A frozen value of public parameters only: a selection (``g["x"]``) or the pairs of
    ``value_counts`` are new values (:func:`dataclasses.replace`), never mutated copies. The
    budget stays with the frame's session, which :attr:`_target` resolves.
    """

    _target: Target
    by: tuple[Hashable, ...]
    #: The public keys (None: chosen by DP partition selection), and where they came from.
    keys: pd.Index | None
    keys_from: str
    selection: str
    _grouping: Grouping
    _caps: Caps
    #: Private column names of grouping Series, and the Series' names (for the results).
    _renames: Mapping[Hashable, Hashable]
    #: What releases hand their planned release to: run it (``.dp``) or describe it (a preview).
    _consumer: Consumer = RUN
    #: Applied to every release's result (the time labels of ``resample`` and ``pd.Grouper``).
    _relabel: Callable[[Any], Any] | None = None
    #: The selected columns (``g["x"]``, ``g[["x", "y"]]``), or None.
    _selected: tuple[Hashable, ...] | None = None
    #: Whether one column was selected by its label (results are Series, as in pandas).
    _series: bool = False

    @overload
    def _plan(
        self, stats: list[Statistic], shape: Literal["frame"], query: str, options: ReleaseOptions
    ) -> PlannedRelease[pd.DataFrame]: ...
    @overload
    def _plan(
        self, stats: list[Statistic], shape: Shape, query: str, options: ReleaseOptions
    ) -> PlannedRelease[Table]: ...
    def _plan(
        self, stats: list[Statistic], shape: Shape, query: str, options: ReleaseOptions
    ) -> PlannedRelease[Table] | PlannedRelease[pd.DataFrame]:
        """The planned release of ``stats`` per group, shaped as ``shape``."""
        request = validate(
            self._target, stats, options, grouping=self._grouping, caps=self._caps, query=query,
            keys_from=self.keys_from, selection=self.selection,
        )  # fmt: skip
        planned = plan(self._target, request, shape)
        if not self._renames:
            return planned
        renames = self._renames
        return planned.then(lambda result: renamed(result, renames))

    def _consuming(self, consumer: Consumer) -> Self:
        """The same group-by, handing its planned releases to ``consumer``."""
        return replace(self, _consumer=consumer)

    def _consume(self, planned: PlannedRelease[T]) -> T:
        """Hand a planned release (relabelled, for time bins) to the consumer."""
        if self._relabel is not None:
            planned = planned.then(self._relabel)
        return self._consumer(planned)

    def _release(
        self, stats: list[Statistic], shape: Shape, query: str, options: ReleaseOptions
    ) -> Table:
        return self._consume(self._plan(stats, shape, query, options))

    def _value_columns(self) -> tuple[Hashable, ...]:
        """Every column but the group-by columns (what pandas aggregates by default)."""
        columns = self._target.engine.columns(self._target.data)
        return tuple(c for c in columns if c not in self.by and c != self._target.unit)

    def _columns(self, column: Columns, what: str) -> tuple[tuple[Hashable, ...], bool]:
        """The columns a method reads, and whether the result is one Series."""
        if column is None:
            if self._selected is None:
                raise DPTypeError(
                    f"{what} needs a column: g.{what}('income', ...), g['income'].{what}(...) "
                    f"or g[['income', 'age']].{what}(...)"
                )
            return self._selected, self._series
        if isinstance(column, list):
            if not column:
                raise DPValueError(f"{what}: the list of columns is empty")
            return tuple(column), False
        return (column,), True

    def _per_column(
        self, kind: Callable[[Hashable], Statistic], column: Columns, what: str,
        options: ReleaseOptions,
    ) -> Table:  # fmt: skip
        """One statistic per column (``kind(column)``): a Series for one column, else a frame."""
        columns, series = self._columns(column, what)
        stats = [kind(c) for c in columns]
        return self._release(stats, "series" if series else "frame", f"groupby.{what}", options)

    def _spread(
        self, kind: type[Var | Std], column: Columns, ddof: int, options: ReleaseOptions
    ) -> Table:
        """The variance or standard deviation (``kind``) per group, ``ddof`` checked first."""
        if isinstance(ddof, bool) or not isinstance(ddof, int | np.integer) or ddof < 0:
            raise DPValueError(f"ddof must be a non-negative integer, got {ddof!r}")
        order = int(ddof)
        return self._per_column(lambda c: kind(c, c, ddof=order), column, kind.how, options)

    @checked_keywords
    @shared_doc
    def median(
        self, column: Columns = None, *, ci: float | None = None, **options: Unpack[GridArgs]
    ) -> Table:
        """Release the noisy median of a column (or the selected columns) in each group.

        Parameters
        ----------
        column : label or list of labels, optional
            The column(s); by default the selected ones (``g["x"].median(...)``).
        bounds : (float, float) or dict
            Public bounds; a dict ``{column: (lower, upper)}`` for several columns.
        {epsilon}
        {cells}
        {ci_table}

        Returns
        -------
        Series or DataFrame
            A Series named after one column, a DataFrame for several (as pandas).

        Notes
        -----
        The exponential mechanism on a public grid of ``cells`` steps per group (see
        ``Series.dp.quantile``): rank sensitivity 1/2 for the median; parallel composition
        across groups, ε split among the columns. Budget cost: ``epsilon``.
        """
        return self._per_column(
            lambda c: Median(c, c), column, "median", ReleaseOptions(ci=ci, **options)
        )

    @checked_keywords
    @shared_doc
    def quantile(
        self, q: float | Sequence[float] = 0.5, column: Columns = None, *, ci: float | None = None,
        **options: Unpack[GridArgs],
    ) -> Table:  # fmt: skip
        """Release noisy quantiles of a column (or the selected columns) in each group.

        Parameters
        ----------
        q : float or list of float, default 0.5
            Level(s) in ``[0, 1]``; ε is split equally among levels and columns.
        column : label or list of labels, optional
            The column(s); by default the selected ones.
        bounds, epsilon, cells, ci
            As for :meth:`median`.

        Returns
        -------
        Series or DataFrame
            For one level, shaped like :meth:`median`. For a list, as pandas: the levels
            become an inner index level (unnamed), and each group's quantiles never decrease
            with the level (sorted: free post-processing).

        Notes
        -----
        See :meth:`median`; each level is one exponential-mechanism choice per group.
        """
        levels, scalar = parse_quantiles(q)
        if scalar:
            level = levels[0]
            return self._per_column(
                lambda c: Quantile(c, c, q=level), column, "quantile",
                ReleaseOptions(ci=ci, **options),
            )  # fmt: skip
        columns, series = self._columns(column, "quantile")
        stats: list[Statistic] = [
            Quantile((c, i), c, level) for c in columns for i, level in enumerate(levels)
        ]
        planned = self._plan(stats, "frame", "groupby.quantile", ReleaseOptions(ci=ci, **options))
        return self._consume(planned.then(lambda table: _stacked(table, columns, levels, series)))

    @checked_keywords
    def var(
        self, column: Columns = None, *, ddof: int = 1, ci: float | None = None,
        **options: Unpack[RatioArgs],
    ) -> Table:  # fmt: skip
        """Release the noisy variance per group; see ``Series.dp.var`` (same cost rules)."""
        return self._spread(Var, column, ddof, ReleaseOptions(ci=ci, **options))

    @checked_keywords
    def std(
        self, column: Columns = None, *, ddof: int = 1, ci: float | None = None,
        **options: Unpack[RatioArgs],
    ) -> Table:  # fmt: skip
        """Release the noisy standard deviation per group; see ``Series.dp.std``."""
        return self._spread(Std, column, ddof, ReleaseOptions(ci=ci, **options))

    @checked_keywords
    def sem(
        self, column: Columns = None, *, ci: float | None = None, **options: Unpack[RatioArgs]
    ) -> Table:
        """Release the noisy standard error of the mean per group (``GroupBy.sem``, ddof 1)."""
        return self._per_column(
            lambda c: Sem(c, c), column, "sem", ReleaseOptions(ci=ci, **options)
        )

    @checked_keywords
    def nunique(
        self, column: Columns = None, *, dropna: bool = True, ci: float | None = None,
        **options: Unpack[NoiseArgs],
    ) -> Table:  # fmt: skip
        """Release the noisy number of distinct values of a column in each group.

        Parameters
        ----------
        column : label or list of labels, optional
            By default the selected columns, or every column but the group-by ones.
        dropna : bool, default True
            Missing values are not counted (``False`` is not offered).
        epsilon, delta, mechanism, ci
            As for :meth:`count`.

        Returns
        -------
        Series or DataFrame
            Integer counts, shaped as pandas' ``nunique``.

        Notes
        -----
        Values are compared in canonical form (``1``, ``1.0`` and ``True`` are one value).
        One row adds at most one distinct value to one group: sensitivity 1 for the whole
        vector (a privacy unit's contribution bound under a unit), as for counts; discrete
        Laplace noise of scale ``1/ε``. Counts are clamped at 0 (free post-processing).
        Budget cost: ``epsilon``. Not available on Dask.
        """
        if dropna is not True:
            raise DPValueError("nunique counts non-missing values only: leave dropna=True")
        if column is None and self._selected is None:
            column = list(self._value_columns())
        return self._per_column(
            lambda c: NUnique(c, c), column, "nunique", ReleaseOptions(ci=ci, **options)
        )

    @checked_keywords
    def describe(
        self, column: Columns = None, *, epsilon: Real | None = None, bounds: Bounds = None,
        percentiles: Sequence[float] = DESCRIBE_PERCENTILES, cells: int | None = None,
        rho: Real | None = None,
    ) -> pd.DataFrame:  # fmt: skip
        """Release ``count``, ``mean``, ``std`` and percentiles per group, like pandas.

        Returns
        -------
        DataFrame
            One row per key; columns ``count``, ``mean``, ``std``, ``25%``, ... for one
            column, ``(column, statistic)`` pairs for several. ``min`` and ``max`` are left
            out, as in ``DataFrame.dp.describe`` (a DP extreme mostly reflects the bounds).

        Notes
        -----
        ε is split among all measurements (per column a count of non-missing values, a
        centred sum, a sum of squares and one quantile per percentile) for the least relative
        error; percentiles are sorted per group and counts clamped at 0 (free). Budget cost:
        ``epsilon``.
        """
        columns, series = self._columns(column, "describe")
        levels, _ = parse_quantiles(list(percentiles))
        labels = ["count", "mean", "std"] + [f"{100 * float(p):.10g}%" for p in levels]
        stats: list[Statistic] = []
        for c in columns:
            stats += [Count((c, "count"), c), Mean((c, "mean"), c), Std((c, "std"), c)]
            stats += [Quantile((c, lab), c, p) for lab, p in zip(labels[3:], levels, strict=True)]
        options = ReleaseOptions(
            epsilon=epsilon, bounds=bounds, cells=cells, post=COUNT_ROW, rho=rho
        )
        planned = self._plan(stats, "frame", "groupby.describe", options)

        def table(result: pd.DataFrame) -> pd.DataFrame:
            for c in columns:
                # pandas-stubs type column keys of __setitem__ as ints; these are tuples
                names: Any = [(c, label) for label in labels[3:]]
                result[names] = rows_in_level_order(levels, result[names])
            if series:
                result.columns = pd.Index(labels)
            return result

        return self._consume(planned.then(table))


def _stacked(
    table: pd.DataFrame, columns: tuple[Hashable, ...], levels: list[Fraction], series: bool
) -> Table:
    """Quantiles released as ``(column, i)`` columns, with the levels as an inner index."""
    keys = table.index
    count = len(levels)
    outer = keys.repeat(count)
    arrays = [outer.get_level_values(i) for i in range(keys.nlevels)]
    index = pd.MultiIndex.from_arrays(
        [*arrays, np.tile([float(level) for level in levels], len(keys))],
        names=[*keys.names, None],
    )
    out: dict[Hashable, ExtensionArray] = {}
    with_intervals = suffixed((columns[0], 0), "_lower") in table.columns
    for c in columns:
        values = table[[(c, i) for i in range(count)]]
        if not with_intervals:  # sorted (free); with intervals each value stays in its own
            values = rows_in_level_order(levels, values)
        out[c] = row_major(values)  # in the column's dtype (datetimes stay datetimes)
        for suffix in ("_lower", "_upper"):
            names = [suffixed((c, i), suffix) for i in range(count)]
            if names[0] in table.columns:
                out[f"{c}{suffix}"] = row_major(table[names])
    if series and len(out) == 1:
        return pd.Series(out[columns[0]], index=index, name=columns[0])
    return pd.DataFrame(out, index=index)
