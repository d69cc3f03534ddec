"""Ungrouped releases: count, sum, mean, spreads, quantiles, ``agg`` and ``describe``.

They are the one-group case of the planner; nothing here is written twice for grouped
releases. Each function returns a planned release, which the accessors run or preview.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import replace
from fractions import Fraction
from typing import Any, Literal, TypeVar, overload

import numpy as np
import pandas as pd
from pandas.api.extensions import ExtensionArray
from pandas.api.types import is_bool_dtype, is_integer_dtype, is_numeric_dtype

from pandas_dp.api.caps import caps_for
from pandas_dp.api.outputs import Estimate
from pandas_dp.api.release import PlannedRelease, ReleaseOptions, plan, resolve, validate
from pandas_dp.api.release.arguments import Bounds, Real
from pandas_dp.api.release.finish import Shape, scalar, suffixed
from pandas_dp.api.release.types import UNRESOLVED, Table
from pandas_dp.api.temporal import ValueKind
from pandas_dp.api.validation import bounds_mapping
from pandas_dp.budget import exact
from pandas_dp.engines.temporal import NANOSECONDS, is_temporal, nanoseconds
from pandas_dp.errors import DPKeyError, DPTypeError, DPValueError, holds_data, shown
from pandas_dp.measures.grids import LATTICE_END, lattice
from pandas_dp.mechanisms.quantile import MAX_LEVEL_DENOMINATOR
from pandas_dp.planning.statistics import (
    STATISTICS,
    Bound,
    Count,
    Mean,
    Quantile,
    Statistic,
    Std,
    Var,
)
from pandas_dp.planning.statistics.postprocess import PostProcess


@overload
def plan_many(
    obj: pd.DataFrame | pd.Series, stats: Sequence[Statistic], options: ReleaseOptions, *,
    query: str, shape: Literal["frame"] = "frame", per_column: bool = True,
) -> PlannedRelease[pd.DataFrame]: ...  # fmt: skip
@overload
def plan_many(
    obj: pd.DataFrame | pd.Series, stats: Sequence[Statistic], options: ReleaseOptions, *,
    query: str, shape: Shape, per_column: bool = True,
) -> PlannedRelease[object]: ...  # fmt: skip
def plan_many(
    obj: pd.DataFrame | pd.Series,
    stats: Sequence[Statistic],
    options: ReleaseOptions,
    *,
    query: str,
    shape: Shape = "frame",
    per_column: bool = True,
) -> PlannedRelease[pd.DataFrame] | PlannedRelease[object]:
    """Several ungrouped statistics at once (by default a one-row DataFrame).

    A statistic whose column is None reads the Series' own values (for Series targets).
    """
    target = resolve(obj)
    if target.column is not None:
        stats = [s if s.column is not None else replace(s, column=target.column) for s in stats]

    def planned(given: ReleaseOptions) -> PlannedRelease[Any]:
        caps = caps_for(target, grouped=False)
        request = validate(target, stats, given, caps=caps, query=query, per_column=per_column)
        return plan(target, request, shape)

    return with_auto_bounds(obj, stats, options, planned)


T = TypeVar("T")

#: The widest released bounds of an integer column: every integer within is a float64.
WHOLE = 2.0**53
#: The share of a release's ε that ``bounds="auto"`` spends on releasing the bounds.
AUTO_SHARE = Fraction(1, 5)


def with_auto_bounds(
    obj: pd.DataFrame | pd.Series,
    stats: Sequence[Statistic],
    options: ReleaseOptions,
    planned: Callable[[ReleaseOptions], PlannedRelease[T]],
) -> PlannedRelease[T]:
    """``planned(options)``; with ``bounds="auto"``, after a release of the bounds (one charge).

    :data:`AUTO_SHARE` of ``epsilon`` goes to :func:`plan_bounds` on every column the
    statistics clip (the 0.1% and 99.9% quantiles, as ``priv.dp.bounds``), the rest to the
    statistic, clipped to the released bounds. Everything public is checked first: the
    bounds release and the statistic planned with placeholder bounds (its cost does not
    depend on them), so a refused call charges nothing; the runner then releases both and
    charges them as one ledger row whose note gives the bounds and their share.
    """
    if not (isinstance(options.bounds, str) and options.bounds == "auto"):
        return planned(options)
    columns = list(
        dict.fromkeys(s.column for s in stats if s.column is not None and s.reads_values)
    )
    if not columns:
        raise DPValueError("bounds='auto': this release clips no column, so it takes no bounds")
    return after_bounds(obj, columns, options, planned)


def after_bounds(
    obj: pd.DataFrame | pd.Series,
    columns: list[Hashable],
    options: ReleaseOptions,
    planned: Callable[[ReleaseOptions], PlannedRelease[T]],
    auto: str = "bounds='auto'",
) -> PlannedRelease[T]:
    """``planned`` given the bounds of ``columns`` released first, in the same charge.

    :data:`AUTO_SHARE` of ``options.epsilon`` releases the bounds (as ``priv.dp.bounds``);
    ``planned`` gets the rest and, as ``bounds``, the released table (``lower``/``upper``
    by column; an integer column's rounded outwards to whole numbers within ±2**53, so that
    its sums stay exact integers, released as pandas sums them). It is planned first with
    placeholder bounds, so that everything public is checked (and the cost known) before
    anything is read. ``auto`` is the argument as the ledger shows it.
    """
    if options.rho is not None or options.epsilon is None:
        raise DPValueError(
            f"{auto} splits epsilon= between releasing the bounds and the statistic; give "
            "epsilon= (a release priced in rho= takes public bounds, or bounds from "
            "priv.dp.bounds(...))"
        )
    epsilon = exact(options.epsilon, "epsilon")
    prior = plan_bounds(obj, columns, None, ReleaseOptions(epsilon=epsilon * AUTO_SHARE))
    rest = replace(options, epsilon=epsilon * (1 - AUTO_SHARE))
    target = resolve(obj)  # once: it checks the frame's session and row guard
    types = dict(target.engine.dtypes(target.data).items())
    ends = [_placeholder(types.get(c)) for c in columns]
    placeholder = pd.DataFrame(
        {"lower": [lo for lo, _ in ends], "upper": [hi for _, hi in ends]},
        index=pd.Index(columns),
    )
    first = planned(replace(rest, bounds=placeholder))
    whole = [c for c in columns if c in types and _integral(types[c])]

    def replanned(released: pd.DataFrame) -> PlannedRelease[T]:
        if whole:  # integer columns: whole-number bounds within ±2**53 (exact integer sums,
            # released as integers as pandas sums them, whatever the scans found)
            released = released.copy()
            lower = np.floor(released.loc[whole, "lower"].astype(float)).clip(-WHOLE, WHOLE - 1)
            upper = np.ceil(released.loc[whole, "upper"].astype(float)).clip(-WHOLE, WHOLE)
            released.loc[whole, "lower"] = np.minimum(lower, upper - 1)
            released.loc[whole, "upper"] = upper
        return planned(replace(rest, bounds=released))

    return first.after(prior, replanned, auto)


def _integral(dtype: Any) -> bool:
    """Whether a column holds whole numbers (integers or bools), from its dtype alone."""
    return is_bool_dtype(dtype) or (is_integer_dtype(dtype) and not is_temporal(dtype))


def _placeholder(dtype: object) -> tuple[Any, Any]:
    """Bounds of a column's kind that plan a release before its bounds are released."""
    kind = getattr(dtype, "kind", "f")
    if kind == "m":
        return pd.Timedelta(0), pd.Timedelta(1, unit="s")
    if kind == "M":
        tz = getattr(dtype, "tz", None)
        return pd.Timestamp("2000-01-01", tz=tz), pd.Timestamp("2001-01-01", tz=tz)
    return 0.0, 1.0


def plan_one(
    obj: pd.DataFrame | pd.Series,
    how: str,
    column: Hashable | list[Hashable] | None,
    options: ReleaseOptions,
) -> PlannedRelease[object]:
    """One ungrouped statistic ``how`` of ``column`` (rows when None), as a scalar.

    A list of columns gives a Series indexed by them, as ``df[columns].mean()`` does.
    """
    if isinstance(column, list):
        return plan_columns(obj, how, column, options)
    target = resolve(obj)
    stat = STATISTICS[how](how, target.column if target.column is not None else column)
    if not isinstance(stat, Count) and stat.column is None:
        raise DPKeyError(f"column None not found: {how} needs a column of this frame")
    return plan_many(obj, [stat], options, query=how, shape="scalar", per_column=False)


def plan_columns(
    obj: pd.DataFrame | pd.Series, how: str, columns: list[Hashable], options: ReleaseOptions,
    *, q: object = None, ddof: int = 1,
) -> PlannedRelease[Table]:  # fmt: skip
    """``how`` of every column in one release, shaped as pandas' ``df[columns].<how>()``.

    A Series indexed by the columns (named ``q`` for one quantile level); a DataFrame indexed
    by the levels for several; with ``ci``, a DataFrame indexed by the columns with
    ``<how>``, ``<how>_lower`` and ``<how>_upper``. ε is split among the columns by the
    planner (the ledger lists the split).
    """
    if not columns:
        raise DPValueError(f"{how}: the list of columns is empty")
    ci = options.ci
    levels, one = parse_quantiles(0.5 if q is None else q)
    if not one and ci is not None:
        raise DPValueError(
            "ci with several levels and several columns: release each column's quantiles "
            "apart (priv.dp.quantile(column, q, ci=...))"
        )
    stats: list[Statistic] = []
    for column in columns:  # named by column (by (column, i) for several levels)
        if how in ("median", "quantile"):
            stats += [
                Quantile(column if one else (column, i), column, level)
                for i, level in enumerate(levels)
            ]
        else:
            extra = {"ddof": ddof} if how in ("var", "std") else {}
            stats.append(STATISTICS[how](column, column, **extra))
    planned = plan_many(obj, stats, options, query=how)
    index = pd.Index(columns)
    name = float(levels[0]) if how == "quantile" else None

    def shaped(table: pd.DataFrame) -> Table:
        row: Any = table.iloc[0]  # pandas-stubs index a Series by str or int labels only
        if ci is not None:
            parts = {
                f"{how}{suffix}": [scalar(row[suffixed(c, suffix)]) for c in columns]
                for suffix in ("", "_lower", "_upper")
            }
            if all(is_integer_dtype(table[c].dtype) for c in columns):  # dtypes: public
                parts[how] = [table[c].iloc[0] for c in columns]  # counts stay int64
            return pd.DataFrame(parts, index=index)
        if one and all(is_integer_dtype(table[c].dtype) for c in columns):
            # Integer results (sums of integer columns, distinct counts) stay int64, as pandas
            # gives for integer columns; decided from the table's dtypes (public), not values.
            return pd.Series([table[c].iloc[0] for c in columns], index=index, name=name)
        if one:  # datetimes stay datetimes (an object Series when mixed with numbers)
            return pd.Series([scalar(row[c]) for c in columns], index=index, name=name)
        values = {  # each column's levels as one typed Series (dates keep their unit)
            c: in_level_order(
                levels,
                pd.concat([table[(c, i)] for i in range(len(levels))], ignore_index=True),
            )
            for c in columns
        }
        return pd.DataFrame(values, index=[float(level) for level in levels])

    return planned.then(shaped)


def parse_quantiles(q: object) -> tuple[list[Fraction], bool]:
    """Quantile levels in ``[0, 1]`` as exact fractions, and whether ``q`` was a scalar.

    Each level is the closest fraction to ``q`` with a denominator of at most 10**9
    (``1/3`` for ``0.3333333333333333``); the level used is the one recorded.
    """
    single = isinstance(q, numbers.Real) and not isinstance(q, bool)
    levels = [q] if single else q
    if isinstance(levels, str | bytes) or not isinstance(levels, Sequence | np.ndarray):
        raise DPTypeError(f"q must be a number or a list of numbers, got {type(q).__name__}")
    parsed = [exact(level, "q").limit_denominator(MAX_LEVEL_DENOMINATOR) for level in levels]
    if not parsed or any(not 0 <= level <= 1 for level in parsed):
        got = shown(q) if holds_data(q) else list(map(float, parsed))
        raise DPValueError(f"quantile levels must lie in [0, 1], got {got}")
    if len(set(parsed)) != len(parsed):
        raise DPValueError("quantile levels must be distinct")
    return parsed, single


def in_level_order(levels: Sequence[Fraction], values: Any) -> Any:
    """Released quantiles sorted to follow their levels (free post-processing).

    Independent noise can release the 0.75 quantile below the 0.25 one; sorting the values
    and handing them out in the levels' order gives monotone quantiles. The true quantiles
    are monotone in the level, so sorting never increases the total (L1 or L2) error
    (rearrangement inequality).
    """
    typed = isinstance(values, pd.Series) and values.dtype != object
    series = values if typed else pd.Series(list(values))  # Timestamps infer datetimes
    units: set[Any] = set() if typed else {getattr(v, "unit", None) for v in values} - {None}
    if series.dtype.kind in "mM" and len(units) == 1:  # pandas 2 infers ns: keep the unit
        series = series.dt.as_unit(units.pop())
    order = np.argsort(np.asarray([float(level) for level in levels]), kind="stable")
    if series.dtype.kind not in "mM":
        numbers = series.to_numpy(dtype=np.float64)
        out = np.empty_like(numbers)
        out[order] = np.sort(numbers)  # NaN (a hidden quantile) last
        return out
    ranks = np.empty_like(order)
    ranks[order] = np.arange(len(order))
    array: Any = series.array  # datetimes keep their unit and zone; NaT sorts last
    return array.take(array.argsort(kind="stable")).take(ranks)


def rows_in_level_order(levels: Sequence[Fraction], block: pd.DataFrame) -> pd.DataFrame:
    """Each row's quantiles (one column per level) sorted to follow the levels.

    As :func:`in_level_order`; datetime and timedelta columns keep their dtype.
    """
    kind = ValueKind.of(block.dtypes.iloc[0])
    numbers = np.column_stack([
        nanoseconds(block[c]) if kind.temporal else block[c].to_numpy(dtype=np.float64)
        for c in block.columns
    ])  # fmt: skip
    ordered = np.apply_along_axis(lambda row: in_level_order(levels, row), 1, numbers)
    if not kind.temporal:
        return pd.DataFrame(ordered, index=block.index, columns=block.columns)
    values = {j: kind.present(ordered[:, j], "point") for j in range(len(block.columns))}
    return pd.DataFrame(values, index=block.index).set_axis(block.columns, axis=1)


def row_major(block: pd.DataFrame) -> ExtensionArray:
    """The block's values row after row, in the columns' dtype (``to_numpy().ravel()``)."""
    rows, width = block.shape
    stacked = pd.concat([block.iloc[:, j] for j in range(width)], ignore_index=True).array
    return stacked.take((np.arange(rows)[:, None] + np.arange(width)[None, :] * rows).ravel())


def plan_quantile(
    obj: pd.DataFrame | pd.Series,
    column: Hashable | list[Hashable] | None,
    q: object,
    options: ReleaseOptions,
) -> PlannedRelease[object]:
    """Quantiles by the exponential mechanism; ε split equally among the levels.

    With ``ci``, each level's interval ends are measured too (see ``Quantile.interval``).
    """
    if isinstance(column, list):
        return plan_columns(obj, "quantile", column, options, q=q)
    levels, one = parse_quantiles(q)
    stats = [Quantile(float(level), column, level) for level in levels]
    planned = plan_many(obj, stats, options, query="quantile", per_column=False)
    name = column if column is not None else getattr(obj, "name", None)
    index = [float(x) for x in levels]
    if options.ci is not None:
        confidence = float(options.ci)
        if one:

            def estimate(table: pd.DataFrame) -> Estimate:
                value, lower, upper = (scalar(v) for v in table.iloc[0, :3])
                return Estimate(value, lower, upper, confidence)

            return planned.then(estimate)
        label = "quantile" if name is None else name
        columns = [label, f"{label}_lower", f"{label}_upper"]

        def with_intervals(table: pd.DataFrame) -> pd.DataFrame:
            ends = [table.iloc[:, k::3].iloc[0] for k in range(3)]  # values, lowers, uppers
            return pd.DataFrame(
                {c: end.array for c, end in zip(columns, ends, strict=True)}, index=index
            )

        return planned.then(with_intervals)
    if one:
        return planned.then(lambda table: scalar(table.iloc[0, 0]))
    return planned.then(
        lambda table: pd.Series(in_level_order(levels, table.iloc[0]), index=index, name=name)
    )


def plan_spread(
    obj: pd.DataFrame | pd.Series,
    column: Hashable | list[Hashable] | None,
    how: str,
    options: ReleaseOptions,
    *,
    ddof: object = 1,
) -> PlannedRelease[object]:
    """Variance or standard deviation (``how``) of one column, clipped to public bounds."""
    if isinstance(ddof, bool) or not isinstance(ddof, numbers.Integral) or ddof < 0:
        raise DPValueError(f"ddof must be a non-negative integer, got {ddof!r}")
    if isinstance(column, list):
        return plan_columns(obj, how, column, options, ddof=int(ddof))
    kind = Var if how == "var" else Std
    planned = plan_many(
        obj, [kind(how, column, ddof=int(ddof))], options, query=how, per_column=False
    )
    if options.ci is None:
        return planned.then(lambda table: scalar(table.iloc[0, 0]))
    confidence = float(options.ci)

    def estimate(table: pd.DataFrame) -> Estimate:
        value, lower, upper = (scalar(v) for v in table.iloc[0, :3])
        return Estimate(value, lower, upper, confidence)

    return planned.then(estimate)


DESCRIBE_PERCENTILES = (0.25, 0.5, 0.75)
#: describe's ``count`` row: the noisy count clamped at 0 (free post-processing), a whole
#: number that is never negative, as pandas' count of values.
COUNT_ROW = PostProcess(nonnegative=True)


def plan_describe(
    frame: pd.DataFrame,
    *,
    bounds: Bounds = None,
    epsilon: Real | None = None,
    percentiles: Sequence[float] = DESCRIBE_PERCENTILES,
    cells: int | None = None,
    rho: Real | None = None,
) -> PlannedRelease[pd.DataFrame]:
    """``count``, ``mean``, ``std`` and percentiles of every column with bounds.

    ε is split among all the measurements behind the table (per column: a count, a centred
    sum, a sum of squares and one quantile per percentile) by the planner's rule; the ledger
    lists them.
    ``min`` and ``max`` are left out: a DP minimum or maximum is a quantile at 0 or 1 and
    says little about the true extremes, so the table does not pretend otherwise.
    """
    auto = isinstance(bounds, str) and bounds == "auto"
    if auto:  # every numeric column (public dtypes), as pandas describes; bounds released
        target = resolve(frame)
        bounds = dict.fromkeys(
            c for c, dtype in target.engine.dtypes(target.data).items()
            if c not in (target.unit, target.session.unit.column) and is_numeric_dtype(dtype)
            and not is_bool_dtype(dtype)
        )  # fmt: skip
    bounds = bounds_mapping(bounds)  # type: ignore[assignment]  # a table from priv.dp.bounds
    if bounds is None:  # every column with schema bounds; the planner reads (and notes) them
        schema = resolve(frame).session.schema
        bounds = {c: None for c, r in (schema.columns if schema else ()) if r.bounds}
    if not isinstance(bounds, dict) or not bounds:
        raise DPTypeError(
            "describe needs bounds={column: (lower, upper), ...} (or a schema with bounds)"
        )
    levels, _ = parse_quantiles(list(percentiles))
    rows = ["count", "mean", "std"] + [f"{100 * float(p):.10g}%" for p in levels]  # "12.5%"
    stats: list[Statistic] = []
    for column in bounds:
        stats += [
            Count((column, "count"), column),
            Mean((column, "mean"), column),
            Std((column, "std"), column),
        ]
        stats += [
            Quantile((column, label), column, p) for label, p in zip(rows[3:], levels, strict=True)
        ]
    given: Bounds = "auto" if auto else bounds
    options = ReleaseOptions(epsilon=epsilon, bounds=given, cells=cells, post=COUNT_ROW, rho=rho)
    planned = plan_many(frame, stats, options, query="describe")
    columns = list(bounds)

    def table(result: pd.DataFrame) -> pd.DataFrame:
        times = any(dtype.kind in "mM" for dtype in result.dtypes)  # Timestamps: as pandas
        out = pd.DataFrame(index=rows, columns=columns, dtype=object if times else np.float64)
        labels: list[Any] = list(result.columns)  # (column, statistic) pairs
        for (column, row), value in zip(labels, result.iloc[0], strict=True):
            out.loc[row, column] = value
        for column in columns:  # percentiles never decrease with the level (free)
            out.loc[rows[3:], column] = in_level_order(levels, out.loc[rows[3:], column])
        return out

    return planned.then(table)


#: The quantiles a bounds release aims at, by default: 0.1% and 99.9%.
BOUNDS_QUANTILES = (Fraction(1, 1000), Fraction(999, 1000))


def plan_bounds(
    obj: pd.DataFrame | pd.Series,
    columns: Hashable | list[Hashable] | None,
    q: object,
    options: ReleaseOptions,
    *,
    lower: object = None,
    upper: object = None,
) -> PlannedRelease[pd.DataFrame]:
    """A (lower, upper) pair per column covering the ``q`` quantiles (see ``DataFrame.dp.bounds``).

    Each column's ends are sparse-vector scans over the public magnitude lattice
    (:mod:`pandas_dp.mechanisms.bounds`); ε is split equally among all of them. ``columns``
    None: every numeric column (public dtypes), the privacy unit's aside. A public ``lower``
    (or ``upper``), a number or ``{column: number}``, is taken as it is for that end, which
    is then not scanned.
    """
    target = resolve(obj)
    if options.bounds is not None:
        raise DPTypeError("bounds() takes no bounds=: it releases them")
    levels = _bound_levels(q)
    if target.column is not None:
        names: list[Hashable] = [target.column]
    elif columns is None:
        dtypes = target.engine.dtypes(target.data)
        names = [
            c for c, dtype in dtypes.items()
            if c not in (target.unit, target.session.unit.column) and is_numeric_dtype(dtype)
            and not is_bool_dtype(dtype)
        ]  # fmt: skip
        if not names:
            raise DPValueError("bounds: the frame has no numeric column; name the columns")
    else:
        names = list(columns) if isinstance(columns, list) else [columns]
        if not names:
            raise DPValueError("bounds: the list of columns is empty")
        if len(set(names)) != len(names):
            raise DPValueError(f"bounds: columns must be distinct, got {names}")
    types = dict(target.engine.dtypes(target.data).items())
    dates = [c for c in names if c in types and types[c].kind == "M"]
    if dates:
        return _date_bounds(obj, names, dates, types, q, options, lower, upper)
    given = {-1: _known_end(lower, names, "lower"), 1: _known_end(upper, names, "upper")}
    for column in names:
        if column in given[-1] and column in given[1]:
            raise DPValueError(
                f"bounds: both ends of {column!r} are given (lower= and upper=): nothing to "
                "release; pass them as bounds= to the release that needs them"
            )
    sides: tuple[tuple[str, Fraction, Literal[-1, 1]], ...] = (
        ("lower", levels[0], -1),
        ("upper", levels[1], 1),
    )
    stats: list[Statistic] = [
        Bound((column, name), column, level, side)
        for column in names
        for name, level, side in sides
        if column not in given[side]
    ]
    ends = (-LATTICE_END, LATTICE_END)  # the lattice's: values beyond are clipped to them
    spans: Any = (pd.Timedelta.min, pd.Timedelta.max)  # durations: the scans' ends are ns
    spanned = replace(
        options,
        bounds={c: spans if types.get(c) is not None and types[c].kind == "m" else ends
                for c in names},
    )  # fmt: skip
    planned = plan_many(obj, stats, spanned, query="bounds")
    points = lattice()
    durations = {c: ValueKind.of(types[c]) for c in names if c in types and types[c].kind == "m"}

    def end(row: Any, column: Hashable, side: Literal[-1, 1]) -> float:
        other = given[-side].get(column)
        if column in given[side]:
            return given[side][column]
        found = row[(column, "lower" if side == -1 else "upper")]
        if isinstance(found, pd.Timedelta):  # in ns (as a float: beyond ns' int64 range too)
            value = float(found.asm8.view("i8")) * NANOSECONDS[found.unit]
        elif found is pd.NaT:  # a point beyond the unit's range (the lattice reaches 2**64)
            value = side * LATTICE_END
        else:
            value = float(found)
        if other is None:
            return value
        # Beyond the given end (free post-processing): the next lattice point past it.
        if side == 1:
            return max(value, float(points[np.searchsorted(points, other, side="right")]))
        return min(value, float(points[np.searchsorted(points, other, side="left") - 1]))

    def table(result: pd.DataFrame) -> pd.DataFrame:
        row: Any = result.iloc[0]  # pandas-stubs index a Series by str or int labels only
        lowers = [end(row, c, -1) for c in names]
        uppers = [end(row, c, 1) for c in names]
        # Both scans stopped at 0 (too little data for the budget): the smallest positive
        # point as the upper end, so that the pair is usable bounds (free post-processing).
        uppers = [
            u if u > lo else float(points[points.size // 2 + 1])
            for lo, u in zip(lowers, uppers, strict=True)
        ]
        # Scans that ran to the lattice's end found no end of the data (the threshold's noise
        # was high, or too little data for the budget): said by the released values alone.
        unresolved = [
            c for c, lo, u in zip(names, lowers, uppers, strict=True)
            if lo <= -LATTICE_END or u >= LATTICE_END
        ]  # fmt: skip
        if durations:  # as Timedeltas in the column's unit, rounded outwards (public)
            lowers = [
                _duration(lo, durations.get(c), -1) for c, lo in zip(names, lowers, strict=True)
            ]
            uppers = [_duration(u, durations.get(c), 1) for c, u in zip(names, uppers, strict=True)]
        out = pd.DataFrame({"lower": lowers, "upper": uppers}, index=pd.Index(names))
        out.attrs[UNRESOLVED] = unresolved
        return out

    return planned.then(table)


#: The share of a bounds release's ε that releases its date columns' origins (medians).
ORIGIN_SHARE = Fraction(1, 3)
#: How far from its origin a date is read (2**62 ns, 146 years): dates beyond are clipped.
DATE_REACH = pd.Timedelta(2**62, unit="ns")
#: The narrowest date bounds released: wider than float64's spacing of nanoseconds near 2**63.
MIN_DATE_SPAN = pd.Timedelta(1, unit="ms")


def _date_bounds(
    obj: pd.DataFrame | pd.Series,
    names: list[Hashable],
    dates: list[Hashable],
    types: dict[Hashable, Any],
    q: object,
    options: ReleaseOptions,
    lower: object,
    upper: object,
) -> PlannedRelease[pd.DataFrame]:
    """Bounds when some columns hold datetimes: an origin first, then scans outwards from it.

    A date has no public point to scan from (0 is 1970, where the lattice's neighbours are
    decades apart), so :data:`ORIGIN_SHARE` of ε releases each date column's median over
    the whole range of ``datetime64[ns]`` (public), by the exponential mechanism, and the rest
    the bounds of every column, a date's as the duration from its origin (clipped to
    :data:`DATE_REACH`), scanned from 0 outwards as any duration's. The origin is public once
    released, so the shift reads one row and public inputs (stability 1). One charge.
    """
    if lower is not None or upper is not None:
        raise DPValueError(
            f"bounds: lower= and upper= are numbers, and {dates} hold dates; release both ends "
            "of a date column, or give its bounds yourself (bounds=(pd.Timestamp(...), ...))"
        )
    if options.epsilon is None or options.rho is not None:
        raise DPValueError("bounds of date columns take epsilon= (their scans are ε-DP)")
    epsilon = exact(options.epsilon, "epsilon")
    span: dict[Hashable, Any] = {
        c: (pd.Timestamp.min.ceil("D").tz_localize(types[c].tz) if hasattr(types[c], "tz")
            else pd.Timestamp.min.ceil("D"),
            pd.Timestamp.max.floor("D").tz_localize(types[c].tz) if hasattr(types[c], "tz")
            else pd.Timestamp.max.floor("D"))
        for c in dates
    }  # fmt: skip
    origins = plan_many(
        obj, [Quantile(c, c, Fraction(1, 2)) for c in dates],
        replace(options, epsilon=epsilon * ORIGIN_SHARE, bounds=span), query="bounds",
    )  # fmt: skip
    single = isinstance(obj, pd.Series) or resolve(obj).column is not None
    rest = replace(options, epsilon=epsilon * (1 - ORIGIN_SHARE))

    def scans(found: pd.DataFrame) -> PlannedRelease[pd.DataFrame]:
        origin = {c: _in_unit(found[c].iloc[0], types[c]) for c in dates}

        def shifted(values: Any, c: Hashable) -> Any:  # one row's date minus the origin
            return values.clip(*_reach(origin[c], types[c])) - origin[c]

        moved: Any
        if single:
            moved = shifted(obj, dates[0])
        else:
            moved = obj.copy(deep=False)  # (labels of any type: assign takes text only)
            for c in dates:
                label: Any = c
                moved[label] = shifted(obj[label], c)

        def dated(table: pd.DataFrame) -> pd.DataFrame:
            out = table.astype(object)
            out.attrs = dict(table.attrs)  # the columns whose scans found no end
            for c in dates:
                spot: Any = c
                rows: Any = table.loc[spot]
                low, high = (end - origin[c] for end in _reach(origin[c], types[c]))
                lower = min(max(rows["lower"], low), high)  # dates the unit can hold
                upper = min(max(rows["upper"], low), high)
                # Both scans stopped by the origin (too little data for the budget): a span
                # that bounds can hold (nanoseconds of dates are compared as float64).
                least = max(MIN_DATE_SPAN, pd.Timedelta(1, unit=origin[c].unit))
                upper = min(max(upper, lower + least), high)
                lower = min(lower, upper - least)
                unit: Any = origin[c].unit  # whole ticks of it: the sums are exact in it
                out.loc[spot, "lower"] = (origin[c] + lower).as_unit(unit)
                out.loc[spot, "upper"] = (origin[c] + upper).as_unit(unit)
            return out

        return plan_bounds(moved, None if single else names, q, rest).then(dated)

    placeholder = pd.DataFrame({c: [_placeholder(types[c])[0]] for c in dates})
    return scans(placeholder).after(origins, scans, auto="a date's origin")


def _in_unit(stamp: Any, dtype: Any) -> pd.Timestamp:
    """A released Timestamp in the column's unit (and zone): public arithmetic from here."""
    unit: Any = ValueKind.of(dtype).unit
    return pd.Timestamp(stamp).as_unit(unit)


def _reach(origin: pd.Timestamp, dtype: Any) -> tuple[pd.Timestamp, pd.Timestamp]:
    """The dates read around ``origin``: :data:`DATE_REACH` each way, in the column's unit.

    Computed in whole ticks of the unit and kept within int64, so that neither end (nor a
    date clipped to them, minus the origin) can overflow, whatever the origin released.
    """
    unit: Any = ValueKind.of(dtype).unit
    ticks = int(
        np.datetime64(
            origin.tz_localize(None)
            if origin.tz is None
            else origin.tz_convert("UTC").tz_localize(None),
            unit,
        ).astype(np.int64)
    )
    reach = DATE_REACH.value // NANOSECONDS[unit]
    top = np.iinfo(np.int64).max
    ends = [max(ticks - reach, -top + 1), min(ticks + reach, top)]
    stamps = [pd.Timestamp(np.datetime64(int(end), unit)) for end in ends]
    if origin.tz is not None:
        stamps = [stamp.tz_localize("UTC").tz_convert(origin.tz) for stamp in stamps]
    return stamps[0], stamps[1]


def _duration(ns: float, kind: ValueKind | None, side: Literal[-1, 1]) -> Any:
    """A bound of a duration column (``kind``) as a Timedelta, else the number as it is.

    Rounded outwards to a whole number of the column's units, at least one unit from 0 on
    its side, and within the Timedeltas' range (the lattice reaches ``2**64`` ns): free
    post-processing of a released point.
    """
    if kind is None:
        return ns
    step = float(NANOSECONDS[kind.unit])
    whole = math.floor(ns / step) if side == -1 else math.ceil(ns / step)
    if ns != 0 and whole == 0:
        whole = side
    limit = (pd.Timedelta.max.value // int(step)) - 1
    unit: Any = kind.unit  # "s", "ms", "us" or "ns"
    return pd.Timedelta(int(np.clip(whole, -limit, limit)) * int(step), unit="ns").as_unit(unit)


def _known_end(value: object, names: list[Hashable], what: str) -> dict[Hashable, float]:
    """A public end given for every column (a number) or some (``{column: number}``)."""
    if value is None:
        return {}
    given = dict(value) if isinstance(value, Mapping) else dict.fromkeys(names, value)
    unknown = [c for c in given if c not in names]
    if unknown:
        raise DPValueError(f"bounds: {what}= names columns not released: {unknown}")
    parsed = {}
    for column, number in given.items():
        if isinstance(number, pd.Timedelta | np.timedelta64):  # a duration column's end, in ns
            number = pd.Timedelta(number).value
        if isinstance(number, bool) or not isinstance(number, numbers.Real):
            raise DPTypeError(f"bounds: {what} must be a real number, got {number!r}")
        if not abs(float(number)) < LATTICE_END:
            raise DPValueError(f"bounds: {what} must be finite and within ±2**64, got {number}")
        parsed[column] = float(number)
    return parsed


def _bound_levels(q: object) -> tuple[Fraction, Fraction]:
    """The two quantile levels ``(p, q)`` with ``0 < p < 1/2 < q < 1``."""
    if q is None:
        return BOUNDS_QUANTILES
    if not isinstance(q, tuple | list) or len(q) != 2:
        raise DPTypeError(f"q must be a pair (lower level, upper level), got {q!r}")
    levels, _ = parse_quantiles(list(q))
    low, high = levels
    if not (0 < low < Fraction(1, 2) < high < 1):
        raise DPValueError(
            f"q must satisfy 0 < q[0] < 0.5 < q[1] < 1, got ({float(low)}, {float(high)}); "
            "the default (0.001, 0.999) aims at the 0.1% and 99.9% quantiles"
        )
    return low, high
