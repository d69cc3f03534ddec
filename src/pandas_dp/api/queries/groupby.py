"""Grouped releases: ``priv.dp.groupby(...)``, ``Series.dp.value_counts`` and histograms.

Groups are disjoint, so one row (or one privacy unit, capped to ``max_groups_per_unit``
groups) touches a bounded number of them: one call charges its ε once, whatever the number
of groups (parallel composition). Keys are public, or chosen by DP partition selection.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal, Self, Unpack

import pandas as pd

from pandas_dp.api.caps import caps_for
from pandas_dp.api.docstrings import shared_doc
from pandas_dp.api.keys import categories_as_keys, check_key_types, parse_by, parse_keys
from pandas_dp.api.queries.by_series import series_by
from pandas_dp.api.queries.grouped_counts import GroupedCounts
from pandas_dp.api.queries.grouped_matrices import GroupedMatrices
from pandas_dp.api.release import ReleaseOptions, Target
from pandas_dp.api.release.arguments import (
    Bound,
    Bounds,
    Columns,
    Fill,
    Keys,
    Mechanism,
    RatioArgs,
    Real,
    ValueArgs,
)
from pandas_dp.api.release.consumers import RUN, Consumer, checked_keywords
from pandas_dp.api.release.selection import asked_selection
from pandas_dp.api.release.types import Table
from pandas_dp.api.statistics import Mean, Sum, parse_func, parse_named
from pandas_dp.api.statistics.postprocess import PostProcess
from pandas_dp.api.validation import check_column, did_you_mean
from pandas_dp.engines import Grouping
from pandas_dp.engines.plan import Binning
from pandas_dp.errors import DPKeyError, DPTypeError, DPValueError


class DPGroupBy(GroupedCounts, GroupedMatrices):
    """A grouping of a protected frame over public (or privately selected) keys.

    Created by :meth:`DataFrameDPAccessor.groupby` (through :meth:`of`); a frozen value of
    public parameters. Every method releases one table and charges its ε once (parallel
    composition). Columns are selected as in pandas: ``g["x"].mean(...)`` gives a Series
    named ``x``, ``g[["x", "y"]].mean(...)`` a DataFrame; ``g.mean("x", ...)`` names the
    column instead.
    """

    @classmethod
    def of(
        cls,
        target: Target,
        by: Hashable | list[Hashable],
        keys: Keys = None,
        *,
        max_groups_per_unit: int | None = None,
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
        return cls(
            target, labels, parsed, declared or keys_from, chosen,
            Grouping(labels, parsed, binning, missing=missing),
            caps_for(target, True, max_groups_per_unit, max_rows_per_group), renames, consumer,
            relabel,
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
        :mod:`pandas_dp.api.measurement.split`): a measurement whose noise weighs ``A`` in
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
