"""Grouped releases: ``priv.dp.groupby(...)``, ``Series.dp.value_counts`` and histograms.

Groups are disjoint, so one row (or one privacy unit, capped to ``max_groups_per_unit``
groups) touches a bounded number of them: one call charges its ε once, whatever the number
of groups (parallel composition). Keys are public, or chosen by DP partition selection.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, Self, TypeVar, Unpack, cast, overload

import numpy as np
import pandas as pd

from pandas_dp.api.caps import caps_for
from pandas_dp.api.docstrings import shared_doc
from pandas_dp.api.keys import categories_as_keys, check_key_types, parse_by, parse_keys
from pandas_dp.api.queries.by_series import renamed, series_by
from pandas_dp.api.queries.covariance import plan_matrix
from pandas_dp.api.queries.grouped.counts import (
    count_options,
    product_index,
    relabelled,
    within,
)
from pandas_dp.api.queries.grouped.quantiles import stacked
from pandas_dp.api.queries.regression import PerGroup, plan_logit, plan_ols
from pandas_dp.api.queries.ungrouped import (
    COUNT_ROW,
    DESCRIBE_PERCENTILES,
    parse_quantiles,
    rows_in_level_order,
    with_auto_bounds,
)
from pandas_dp.api.queries.unit_caps import after_groups_cap
from pandas_dp.api.release import PlannedRelease, ReleaseOptions, Target, plan, validate
from pandas_dp.api.release.arguments import (
    Bound,
    Bounds,
    Columns,
    CountArgs,
    Fill,
    GridArgs,
    Keys,
    MatrixArgs,
    Mechanism,
    NoiseArgs,
    OLSArgs,
    RatioArgs,
    Real,
    ValueArgs,
)
from pandas_dp.api.release.consumers import RUN, Consumer, checked_keywords
from pandas_dp.api.release.finish import Shape
from pandas_dp.api.release.selection import asked_selection
from pandas_dp.api.release.types import Table
from pandas_dp.api.validation import check_column, did_you_mean
from pandas_dp.errors import DPKeyError, DPTypeError, DPValueError
from pandas_dp.measures.aggregates import Binning, Grouping, OtherCells
from pandas_dp.planning.request import Caps
from pandas_dp.planning.statistics import (
    Count,
    Mean,
    Median,
    NUnique,
    Quantile,
    Size,
    Statistic,
    Std,
    Sum,
    Var,
    parse_func,
    parse_named,
)
from pandas_dp.planning.statistics.grouped_models import ModelsByGroup
from pandas_dp.planning.statistics.logistic import LogitResults
from pandas_dp.planning.statistics.postprocess import PostProcess
from pandas_dp.planning.statistics.regression import OLSResults
from pandas_dp.planning.statistics.spreads import Sem

T = TypeVar("T")


@dataclass(frozen=True, eq=False, repr=False)
class DPGroupBy:
    """A grouping of a protected frame over public (or privately selected) keys.

    Created by :meth:`DataFrameDPAccessor.groupby` (through :meth:`of`); a frozen value of
    public parameters only: a selection (``g["x"]``) or the pairs of ``value_counts`` are new
    values (:func:`dataclasses.replace`), never mutated copies, and the budget stays with the
    frame's session, which :attr:`_target` resolves. Every method releases one table (``ols``
    and ``logit``: one model per key) and charges its ε once (parallel composition).
    Columns are selected as in pandas: ``g["x"].mean(...)`` gives a Series named ``x``,
    ``g[["x", "y"]].mean(...)`` a DataFrame; ``g.mean("x", ...)`` names the column instead.
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
    #: ``max_groups_per_unit="auto"``: the cap released first, in each release's charge;
    #: with the group-by's ``max_rows_per_group``.
    _auto_groups: bool = False
    _rows_per_group: int | None = None

    @classmethod
    def of(
        cls,
        target: Target,
        by: Hashable | list[Hashable],
        keys: Keys = None,
        *,
        max_groups_per_unit: int | Literal["auto"] | None = None,
        max_rows_per_group: int | None = None,
        selection: Literal["threshold", "optimal"] | None = None,
        binning: Binning | None = None,
        consumer: Consumer = RUN,
        relabel: Callable[[Any], Any] | None = None,
        dropna: bool = True,
        called: str = "groupby",
        may_select: bool = True,
    ) -> Self:
        """Check the public parameters of a group-by (nothing is read, nothing charged)."""
        target, by, keys, renames = series_by(target, by, keys)
        labels = parse_by(by)
        columns = target.engine.columns(target.data)
        dtypes = dict(target.engine.dtypes(target.data).items())
        for label in labels:
            if label not in columns:
                hint = did_you_mean(label, target.session.columns)
                raise DPKeyError(f"group-by column {label!r} not found in this frame{hint}")
        keys_from = ""
        if keys is None and binning is None:
            keys, keys_from = schema_keys(target, labels)
        keys, declared = categories_as_keys(keys, labels, dtypes)
        parsed = parse_keys(labels, keys)
        chosen = asked_selection(parsed, binning, selection, labels, called, may_select)
        if parsed is not None and binning is None:
            check_key_types(
                parsed, [dtypes[label] for label in labels], schema_domains(target, labels)
            )
        missing = _missing_group(parsed, labels, dropna)
        auto = isinstance(max_groups_per_unit, str) and max_groups_per_unit == "auto"
        groups = None if auto or isinstance(max_groups_per_unit, str) else max_groups_per_unit
        if isinstance(max_groups_per_unit, str) and not auto:
            raise DPValueError(
                f"max_groups_per_unit must be a whole number or 'auto', got {max_groups_per_unit!r}"
            )
        return cls(
            target, labels, parsed, declared or keys_from, chosen,
            Grouping(labels, parsed, binning, missing=missing),
            caps_for(target, True, groups, max_rows_per_group), renames, consumer,
            relabel, _auto_groups=auto, _rows_per_group=max_rows_per_group,
        )  # fmt: skip

    def __repr__(self) -> str:
        keys = "private (DP selection)" if self.keys is None else f"{len(self.keys)} public keys"
        chosen = "" if self._selected is None else f", columns={list(self._selected)}"
        return f"<DPGroupBy by={list(self.by)}, {keys}{chosen}>"

    def __getitem__(self, key: Hashable | list[Hashable]) -> DPGroupBy:
        """Select a column (``g["x"]``: results are Series) or columns (``g[["x", "y"]]``)."""
        labels = list(key) if isinstance(key, list) else [key]
        if not labels:
            raise DPValueError("select at least one column, e.g. g['income']")
        for label in labels:
            check_column(
                self._target.engine, self._target.data, label, numeric=False,
                known=self._target.session.columns,
            )  # fmt: skip
        return replace(self, _selected=tuple(labels), _series=not isinstance(key, list))

    @checked_keywords
    def sum(
        self, column: Columns = None, *, ci: float | None = None, **options: Unpack[ValueArgs]
    ) -> Table:
        """Release the noisy sum of a column (or columns), clipped to public bounds, per group.

        A Series named after one column (``g.sum("x")``, ``g["x"].sum()``), a DataFrame for
        a list (``g[["x", "y"]].sum(bounds={...})``); ε is split among the columns.

        Notes
        -----
        Values are clipped and rounded onto a public power-of-two lattice as in
        ``DataFrame.dp.sum``. Sensitivity: ``max(|lower|, |upper|)`` for the whole vector
        (times ``L1 = min(k, g·r)`` under a privacy unit). Mechanism: discrete Laplace (or
        Gaussian) on the lattice. Budget cost: ``ε`` once (plus ``δ`` when keys are selected
        privately, which also spends part of ε on the row counts that select them, or for
        Gaussian noise). With ``weights="w", weight_bounds=(wl, W)``, ``Σ clip(w)·clip(x)``
        per group, sensitivity ``W·max(|lower|, |upper|)``.
        """
        return self._per_column(
            lambda c: Sum(c, c), column, "sum", ReleaseOptions(ci=ci, **options)
        )

    @checked_keywords
    def mean(
        self, column: Columns = None, *, ci: float | None = None, **options: Unpack[RatioArgs]
    ) -> Table:
        """Release the noisy mean of a column (or columns), clipped to public bounds, per group.

        Shaped like :meth:`sum`.

        Notes
        -----
        Per group: ``centre + noisy centred sum / max(noisy count, 1)``, clipped to the
        bounds; ε is split equally between the centred sum (sensitivity
        ``(upper - lower)/2``) and the count (sensitivity 1). Budget cost: ``ε`` once. With
        ``ci``, the interval is conservative: each part gets half of ``1 - ci`` and the
        ratio is bounded over both ranges. With ``weights="w", weight_bounds=(wl, W)``, the
        weighted mean ``c + noisy Σ w·(x - c) / max(noisy Σ w, 1)`` (``c`` the midpoint;
        sensitivities ``W·(upper - lower)/2`` and ``W``). A group whose noisy count is below
        ``min_count`` (default 1) gets NaN, its interval too (see :meth:`agg` for the rule
        in a table with counts).
        """
        return self._per_column(
            lambda c: Mean(c, c), column, "mean", ReleaseOptions(ci=ci, **options)
        )

    @checked_keywords
    @shared_doc
    def agg(
        self, func: object = None, /, *, epsilon: Real | None = None, bounds: Bounds = None,
        delta: Real | None = None, rho: Real | None = None, mechanism: Mechanism = "laplace",
        ci: float | None = None,
        fillna: Fill = None, nonnegative: bool = False, accuracy: Mapping[str, float] | None = None,
        min_count: Real | None = None, relative_error: bool = False,
        weights: Hashable | None = None, weight_bounds: Bound | None = None, **named: object,
    ) -> Table:  # fmt: skip
        """Release several statistics per group in one call, in every form pandas' agg takes.

        Parameters
        ----------
        func : str, list or dict, optional
            As pandas: ``"mean"`` (every selected column), ``["sum", "mean"]`` (one column
            per statistic; ``(column, statistic)`` pairs on several columns) or
            ``{"x": ["sum", "mean"], "y": "median"}`` (pairs as soon as one entry is a list).
            Without a selection, a name or list applies to every column but the group-by
            ones. Use either ``func`` or named statistics.
        epsilon : float
            Total privacy cost of the call, charged once for all groups.
        rho : float, optional
            Instead of ``epsilon`` in a zCDP session: the ρ the call spends.
        bounds : dict, optional
            ``{column: (lower, upper)}`` for every summed or averaged column.
        delta : float, optional
            See :meth:`count`.
        mechanism : {"laplace", "gaussian"}, default "laplace"
            The noise of every measurement.
        ci : float, optional
            Confidence level: adds ``<name>_lower`` / ``<name>_upper`` after each column.
        fillna : dict, optional
            ``{column: value}``: public imputation for missing values.
        nonnegative : bool, default False
            Clamp count columns at 0.
        {min_count}
        relative_error : bool, default False
            With ``ci``: add ``<name>_rel_error`` after each interval, its larger half-width
            over the value's magnitude (free post-processing; above 1, mostly noise).
        accuracy : dict, optional
            ``{name: weight}``: how much each statistic's error counts when ε is split (1
            by default); ``{"m": 2}`` buys a more accurate ``m`` at the others' expense.
        weights : label, optional
            A column of non-negative row weights: every count, sum and mean of the call is
            weighted (other statistics are refused before anything is read).
        weight_bounds : (float, float), optional
            Public ``(lower, upper)`` weight limits, ``0 <= lower``; see :meth:`count`.
        **named
            ``name="count"`` (rows), or ``name=(column, how)`` (or ``pd.NamedAgg``) with
            ``how`` any statistic of ``agg`` (``"count"``, ``"size"``, ``"sum"``,
            ``"mean"``, ``"var"``, ``"std"``, ``"sem"``, ``"median"``, ``"nunique"``). On a
            selected column, ``name="mean"`` is enough.

        Returns
        -------
        DataFrame or Series
            One row per key, one column per statistic, in the given order (MultiIndex
            columns for pairs); a Series for one name on one selected column.

        Notes
        -----
        The statistics are computed from the fewest noisy measurements: one row count, and
        per column a count of non-missing values, a clipped sum and a centred clipped sum,
        each only if needed. A mean reuses the call's count (the row count when the column
        cannot hold missing values, its schema says ``nullable=False`` or ``fillna`` is
        given). A sum next to a mean (or spread) of its column is derived from the mean's
        measurements, ``centre × count + centred sum``, instead of measured apart.

        ε is split among the measurements to minimise the statistics' summed *relative*
        variance (each relative to what it would reach alone with all of ε; see
        :mod:`pandas_dp.planning.measurement.split`): a measurement whose noise weighs ``A`` in
        those errors gets a share proportional to ``A^(1/3)``, which is optimal for Laplace
        noise. One statistic alone gets its usual split (a mean: half to each part).
        δ for Gaussian noise is split equally. Sequential composition inside the call,
        parallel across groups; the ledger's note lists the split.

        One rule for every table (free post-processing of noisy values): a mean, variance,
        standard deviation, sem, median, quantile, min or max (and its ``_lower`` /
        ``_upper``) is NaN where its group looks empty: where its own noisy count (the
        denominator of a noisy sum over a noisy count, or the count a quantile measures with
        ``min_count``) is below ``min_count``, and where a count of the group's rows
        (``"size"``, ``"count"``) or of the statistic's column in the same table is below
        ``min_count``. The two counts may be different measurements (the rows, and the
        column's non-missing values): the table never shows ``n = -9`` next to a mean.
        """
        if func is not None:
            if named:
                raise DPTypeError("agg takes a name, list or dict, or named statistics; not both")
            columns = self._selected if self._selected is not None else self._value_columns()
            stats, series = parse_func(func, columns, self._series)
        else:
            if self._series:  # g["x"].agg(m="mean")
                column = self._selected[0] if self._selected else None
                named = {k: (column, v) if isinstance(v, str) else v for k, v in named.items()}
            stats, series = parse_named(dict(named.items())), False
        options = ReleaseOptions(
            epsilon=epsilon, delta=delta, mechanism=mechanism, rho=rho, ci=ci, bounds=bounds,
            fillna=fillna, post=PostProcess.of(nonnegative), accuracy=accuracy,
            min_count=min_count, relative_error=relative_error, weights=weights,
            weight_bounds=weight_bounds,
        )  # fmt: skip
        return self._release(stats, "series" if series else "frame", "groupby.agg", options)

    @checked_keywords
    @shared_doc
    def count(
        self, *, ci: float | None = None, nonnegative: bool = False, total: Real | None = None,
        **options: Unpack[NoiseArgs],
    ) -> pd.Series | pd.DataFrame:  # fmt: skip
        """Release the noisy number of rows in each group (non-missing values once selected).

        Parameters
        ----------
        {epsilon}
        {delta}
        {mechanism}
        {ci_table}
        {nonnegative}
        {total}
        {weights}

        Returns
        -------
        Series or DataFrame
            Indexed by the keys, in their order, named ``"count"``. After a selection, as
            pandas: the non-missing values of each selected column (``g["x"].count()`` is a
            Series named ``x``). Unlike pandas, ``g.count()`` without a selection counts rows
            (``g.size()``): a DP release of every column's count would split ε needlessly.
            With ``weights``, each group's noisy sum of clipped weights (floats; sensitivity
            ``W`` for the whole vector).

        Notes
        -----
        Rows outside the keys (and rows with a missing key) are dropped silently; keys
        without rows get a noisy 0. Sensitivity: 1 for the whole vector of counts (one row
        is in one group), ``k`` under a privacy unit capped at ``k`` rows. Mechanism:
        discrete Laplace with scale ``sensitivity/ε`` on every group (or discrete Gaussian).
        Budget cost: ``ε`` (plus ``δ`` when keys are selected privately or noise is
        Gaussian).

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> df = pd.DataFrame({"region": ["north"] * 600 + ["south"] * 400})
        >>> priv = df.dp.protect(epsilon=1.0)
        >>> counts = priv.dp.groupby("region", keys=["north", "south", "east"]).count(epsilon=1.0)
        >>> list(counts.index), bool(abs(counts["north"] - 600) < 50)  # scale 1
        (['north', 'south', 'east'], True)
        """
        release = ReleaseOptions.of_noise(options, ci=ci, post=PostProcess.of(nonnegative, total))
        if self._selected is not None:
            return self._per_column(lambda c: Count(c, c), None, "count", release)
        return self._consume(self.plan_counts("groupby.count", release))

    @checked_keywords
    def size(
        self, *, ci: float | None = None, nonnegative: bool = False, total: Real | None = None,
        **options: Unpack[NoiseArgs],
    ) -> pd.Series | pd.DataFrame:  # fmt: skip
        """Release the noisy number of rows in each group, like ``GroupBy.size``.

        An unnamed Series (a DataFrame named ``size``, ``size_lower``, ``size_upper`` with
        ``ci``); see :meth:`count` for the noise and the cost (``epsilon``).
        """
        release = ReleaseOptions.of_noise(options, ci=ci, post=PostProcess.of(nonnegative, total))
        planned = self._plan([Size("size")], "series", "groupby.size", release)
        return self._consume(planned if ci is not None else planned.then(lambda s: s.rename(None)))

    @checked_keywords
    def plan_counts(self, query: str, options: ReleaseOptions) -> PlannedRelease[Table]:
        """The planned release of the groups' row counts (for value counts and histograms)."""
        return self._plan([Count("count")], "series", query, options)

    @checked_keywords
    @shared_doc
    def value_counts(
        self, keys: Keys = None, *, normalize: bool = False, sort: bool = True,
        ascending: bool = False, ci: float | None = None,
        selection: Literal["threshold", "optimal"] | None = None,
        **options: Unpack[CountArgs],
    ) -> pd.Series | pd.DataFrame:  # fmt: skip
        """Release noisy counts of each value within each group: ``g["x"].value_counts()``.

        Parameters
        ----------
        keys : list-like, optional
            The selected column's public values; every group gets every value. Without
            them the call is refused, unless ``selection`` asks for the pairs to be chosen
            by DP partition selection (needs δ > 0), or the group-by already chose its keys
            from the data (then the pairs are chosen too).
        normalize : bool, default False
            Shares of each group's rows with a value (as pandas: values outside ``keys``
            included), of the counts clamped at 0 (NaN for a group whose clamped counts are
            all 0), named ``"proportion"``.
        sort : bool, default True
            Within each group, by noisy count (groups stay in key order), as pandas.
        ascending : bool, default False
            Sort order.
        selection : {"threshold", "optimal"}, optional
            Choose the (group, value) pairs from the data, as ``groupby(selection=...)``.
        {epsilon}
        {delta}
        {nonnegative}
        {mechanism}
        {ci_table}

        Returns
        -------
        Series or DataFrame
            Indexed by (group keys..., value), named ``"count"``.

        Notes
        -----
        The group-by's counts over the pairs (group, value): sensitivity 1 for the whole
        vector, discrete Laplace noise of scale ``1/ε`` per pair; cost ``ε``. With
        ``normalize=True`` and public keys, each group has one more cell, its rows whose
        value is not missing and matches no key; each row is in one cell, so sensitivity
        stays 1 and the cost ``ε``. It counts in the group's total and is not shown.
        """
        if not self._series or self._selected is None:
            raise DPTypeError("value_counts counts one selected column: g['x'].value_counts(...)")
        if normalize and ci is not None:
            raise DPTypeError("ci is for counts; it cannot be combined with normalize=True")
        column = self._selected[0]
        dtypes = dict(self._target.engine.dtypes(self._target.data).items())
        keys, declared = categories_as_keys(keys, (column,), dtypes)
        inner = parse_keys((column,), keys)
        if inner is not None:
            schema = self._target.session.schema
            domain = None if schema is None else schema.rules(column).keys
            check_key_types(inner, [dtypes[column]], [domain])
        chosen = self.selection
        if self.keys is not None:  # public group keys: the values' keys decide
            chosen = asked_selection(inner, None, selection, (column,), "value_counts", True)
        elif selection is not None:
            raise DPValueError(
                "this group-by already chooses its keys from the data (selection="
                f"{self.selection!r}), and the (group, value) pairs with them: leave selection "
                "out of value_counts"
            )
        by = (*self.by, column)
        keys = None if inner is None or self.keys is None else product_index(self.keys, inner)
        grouping = Grouping(by, keys)
        other = None
        if normalize and keys is not None and inner is not None and self.keys is not None:
            # Shares of each group's rows, as pandas: one more cell per group for its rows
            # whose value is not among the keys (each row in one cell: sensitivity 1).
            other = OtherCells(self.keys, inner)
            grouping = Grouping(by, pd.RangeIndex(other.size), other=other)
        pairs = replace(
            self, by=by, keys=keys, _selected=None, _series=False, selection=chosen,
            keys_from="; ".join(note for note in (self.keys_from, declared) if note),
            _grouping=grouping,
        )  # fmt: skip
        release = count_options(options, ci, clamp=normalize)
        planned = pairs.plan_counts("groupby.value_counts", release)
        outer = list(range(len(self.by)))

        def shaped(counts: pd.Series | pd.DataFrame) -> pd.Series | pd.DataFrame:
            if other is None or keys is None:
                return within(counts, outer, normalize, sort, ascending)
            listed, outside = relabelled(cast(pd.Series, counts), keys)
            return within(listed, outer, normalize, sort, ascending, outside)

        return self._consume(planned.then(shaped))

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
        """The planned release of ``stats`` per group, shaped as ``shape``.

        ``bounds="auto"``: the bounds of the whole columns first (:func:`with_auto_bounds`);
        ``max_groups_per_unit="auto"``: the cap before them (:func:`after_groups_cap`).
        """
        if self._auto_groups:

            def capped(cap: int | None, given: ReleaseOptions) -> PlannedRelease[Any]:
                caps = caps_for(self._target, True, cap, self._rows_per_group)
                fixed = replace(self, _caps=caps, _auto_groups=False)
                return fixed._plan(stats, shape, query, given)

            grouping = self._grouping
            return after_groups_cap(self._target, self.by, grouping.keys, options, capped)

        def planned(given: ReleaseOptions) -> PlannedRelease[Any]:
            request = validate(
                self._target, stats, given, grouping=self._grouping, caps=self._caps,
                query=query, keys_from=self.keys_from, selection=self.selection,
            )  # fmt: skip
            release = plan(self._target, request, shape)
            if not self._renames:
                return release
            renames = self._renames
            return release.then(lambda result: renamed(result, renames))

        return with_auto_bounds(self._target.data, stats, options, planned)

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
        return self._consume(planned.then(lambda table: stacked(table, columns, levels, series)))

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

    def _fixed_caps(self, how: str) -> None:
        """Refuse ``max_groups_per_unit="auto"`` where a release takes only a fixed cap."""
        if self._auto_groups:
            raise DPValueError(
                f"groupby(...).{how}() takes a fixed max_groups_per_unit=g; 'auto' releases "
                "the cap for tables of counts and statistics (agg, count, size, sum, mean, "
                "quantiles, ...)"
            )

    def _matrices(
        self, how: Literal["cov", "corr"], options: MatrixArgs, ddof: int = 1
    ) -> pd.DataFrame:
        self._fixed_caps(how)
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

    @checked_keywords
    def ols(
        self, formula: str | None = None, *, y: Hashable | None = None,
        x: Sequence[Hashable] | None = None, **options: Unpack[OLSArgs],
    ) -> ModelsByGroup[OLSResults]:  # fmt: skip
        """Release one linear model per public key, as ``DataFrame.dp.ols`` within each group.

        Parameters
        ----------
        formula : str, optional
            The model, as for ``DataFrame.dp.ols`` (every term reads one row; categorical
            levels from ``keys``). It must not read the group-by columns: within a group
            they are constant. Or:
        y, x : label and list of labels, optional
            The response and the regressors, for ``y ~ x1 + x2 + ...``.
        bounds, keys, epsilon, rho, delta, mechanism, alpha : optional
            As for ``DataFrame.dp.ols``; ``keys`` gives the levels of the formula's
            categorical variables (the group keys are given to ``groupby``).

        Returns
        -------
        ModelsByGroup
            A read-only mapping from each public key, in the keys' order, to its
            ``OLSResults`` (``summary()``, ``conf_int()``, ``predict()``, ``t_test()``...),
            as ``{k: smf.ols(f, d).fit() for k, d in df.groupby("g")}`` gives; plus
            ``params``, ``bse``, ``tvalues``, ``pvalues`` (one row per key, one column per
            coefficient), ``nobs`` and ``conf_int()`` (rows: key and coefficient).

        Raises
        ------
        DPValueError
            Without public keys (``groupby(..., keys=...)`` or a schema's ``isin``), with a
            group-by column in the formula, over time bins or a column selection, or for
            any of ``DataFrame.dp.ols``'s refusals. Nothing is charged.

        Notes
        -----
        Each group's sums are ``DataFrame.dp.ols``'s, over that group's complete rows:
        values clipped to their public ranges, scaled to ``[-1, 1]`` and rounded to
        ``2**-16``, ``p = (m + 2)(m + 3) / 2`` sums of products per group. One row is in
        one group and moves each of its ``p`` sums by at most 1: L1 sensitivity ``p`` for
        the whole table of groups (L2 ``√p``); under a privacy unit, times ``min(k, g·r)``
        (L1) or ``√g·r`` (L2) for ``k`` rows, ``g = max_groups_per_unit`` groups and ``r``
        rows per group. Discrete Laplace noise of scale ``p·l1/ε`` (or discrete Gaussian)
        on every sum of every group. Budget cost: ``epsilon`` once, whatever the number of
        groups (parallel composition). Each model is fitted from its group's noisy matrix
        (post-processing). A group whose noisy count of complete rows is below that
        count's 95% noise half-width (it may well be empty), or below the number of
        coefficients plus one, gets a model whose every value is NaN (coefficients,
        errors, ``nobs``), rather than a fit of noise.
        """
        return self._models("ols", formula, y, x, options)

    @checked_keywords
    def logit(
        self, formula: str | None = None, *, y: Hashable | None = None,
        x: Sequence[Hashable] | None = None, **options: Unpack[OLSArgs],
    ) -> ModelsByGroup[LogitResults]:  # fmt: skip
        """Release one logistic model per public key, as ``DataFrame.dp.logit`` per group.

        Parameters, results and refusals as :meth:`ols`; each value is a ``LogitResults``
        (the response binary: bool or 0/1, or an event ``I(income > 50000) ~ ...``).

        Notes
        -----
        The measurement is :meth:`ols`'s (the response's range ``[0, 1]``): sensitivity,
        noise and cost as there, ``epsilon`` once for every group. Each group's model is
        ``DataFrame.dp.logit``'s fit of its noisy matrix; a group that looks empty (the
        rule of :meth:`ols`) is NaN throughout.
        """
        return self._models("logit", formula, y, x, options)

    def _models(
        self, how: Literal["ols", "logit"], formula: str | None, y: Hashable | None,
        x: Sequence[Hashable] | None, options: OLSArgs,
    ) -> Any:  # fmt: skip
        """One model per public key (``plan_ols`` or ``plan_logit`` with the grouping)."""
        self._fixed_caps(how)
        if self._selected is not None:
            raise DPValueError(
                f"{how}() reads its columns from the formula: call it on the group-by itself, "
                f"priv.dp.groupby(...).{how}('y ~ x', bounds=..., epsilon=...)"
            )
        if self._grouping.binning is not None or self._relabel is not None:
            raise DPValueError(
                f"groupby(...).{how}() over time bins is not available: bin the time column "
                "into a column of public labels first (priv.assign(month=priv['t'].dt."
                "to_period('M'))) and group by it with keys=..."
            )
        per_group = PerGroup(self._grouping, self._caps, self.keys_from)
        planner = plan_ols if how == "ols" else plan_logit
        planned = planner(self._target, formula, y=y, x=x, per_group=per_group, **options)
        if self._renames:
            names = [self._renames.get(name, name) for name in self.by]
            planned = planned.then(
                lambda models: replace(models, index=models.index.set_names(names))
            )
        return self._consume(planned)


def _missing_group(keys: pd.Index | None, by: tuple[Hashable, ...], dropna: object) -> bool:
    """``dropna=False``: rows with a missing key form a group of their own (key NaN)."""
    if not isinstance(dropna, bool):
        raise DPTypeError(f"dropna must be True or False, got {type(dropna).__name__}")
    if dropna:
        return False
    if keys is None or len(by) != 1:
        raise DPValueError(
            "dropna=False needs public keys and one group-by column (the missing values form "
            "one more group, NaN, after the keys)"
        )
    return True


def schema_domains(target: Target, by: Sequence[Hashable]) -> list[tuple[Hashable, ...] | None]:
    """Each column's public values from the session's schema (``isin``), or None.

    Given keys must lie among them (:func:`~pandas_dp.api.keys.check_key_types`).
    """
    schema = target.session.schema
    return [None if schema is None else schema.rules(column).keys for column in by]


def schema_keys(
    target: Target, by: tuple[Hashable, ...], suffix: str = ""
) -> tuple[dict[Hashable, list[object]] | None, str]:
    """Public keys from the session's schema (``isin``) for every ``by`` column, if any.

    For several columns, every combination of their values; ``suffix`` ends the ledger note.
    """
    schema = target.session.schema
    if schema is None or not all(schema.rules(column).keys for column in by):
        return None, ""
    keys = {column: list(schema.rules(column).keys or ()) for column in by}
    return keys, f"keys of {', '.join(map(str, by))} from the schema (isin){suffix}"
