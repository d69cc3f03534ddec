"""``crosstab`` and ``pivot_table``: the group-by over row × column keys, shaped like pandas.

The cells are one group-by release over the product of the public keys (disjoint cells: one
charge by parallel composition). Margins are free post-processing of the same noisy
measurements, so they agree with the cells exactly: a count's or a sum's margin is the sum of
the released cells; a mean's (or a spread's) is computed from the pooled noisy sums and counts
of its cells, as pandas computes it from the pooled rows. Quantiles and distinct counts have
no such margin and are refused with ``margins=True``.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.api.keys import parse_by
from pandas_dp.api.queries.groupby import DPGroupBy
from pandas_dp.api.queries.ungrouped import with_auto_bounds
from pandas_dp.api.release import PlannedRelease, ReleaseOptions, Target, plan, resolve, validate
from pandas_dp.api.release.arguments import Keys
from pandas_dp.api.release.finish import hide_where_empty, released
from pandas_dp.api.release.types import Finish
from pandas_dp.errors import DPTypeError, DPValueError, holds_data, shown
from pandas_dp.measures.aggregates import Aggregate, Grouping, OtherCells
from pandas_dp.planning.measurement.keys import MeasurementKey
from pandas_dp.planning.noise import NoiseSource
from pandas_dp.planning.request import PlannedOutput, Presentation
from pandas_dp.planning.statistics import Count, Statistic, statistic_class
from pandas_dp.planning.statistics.logistic import LogitResults
from pandas_dp.planning.statistics.postprocess import PostProcess
from pandas_dp.transformations.design import FormulaDesign

_NORMALIZE = {True: "all", "all": "all", "index": "index", "columns": "columns"}


@dataclass(frozen=True)
class Layout:
    """Where the keys go: rows (``index``) and columns, with the margins' label."""

    index: tuple[Hashable, ...]
    columns: tuple[Hashable, ...]
    margins: bool
    margins_name: Hashable = "All"
    normalize: str | None = None
    #: How released statistics label the table's columns: ``[]`` (one statistic: the
    #: column keys alone), else a label tuple per statistic (values, aggfunc).
    labels: tuple[tuple[Hashable, ...], ...] = ()
    #: With ``normalize``: the row and column keys, and the cells of the rows outside them.
    other: OtherCells | None = None


def plan_table(
    target: Target, layout: Layout, stats: list[Statistic], keys: Keys, query: str,
    options: ReleaseOptions,
) -> PlannedRelease[pd.DataFrame]:  # fmt: skip
    """One group-by release over ``index + columns`` keys, shaped as a pandas pivot table."""
    by = [*layout.index, *layout.columns]
    if isinstance(keys, Mapping):  # one dict may serve several tables: take what this one needs
        keys = {column: keys[column] for column in by if column in keys}
    grouped = DPGroupBy.of(target, by, keys, called=query, may_select=False)
    if layout.margins:
        refused = [s.how for s in stats if s.margin == "none"]
        if refused:
            raise DPValueError(
                f"margins=True: {refused[0]!r} has no margin that follows from the cells "
                "(a median of all rows is not a function of the cells' medians); release it "
                "without margins, or release the margin as its own query"
            )
        if options.ci is not None:
            raise DPValueError(
                "ci with margins=True: a margin's noise is the sum of its cells' noises, whose "
                "interval is not computed yet; release the cells with ci and margins=False"
            )
    grouping = grouped._grouping
    if layout.normalize is not None and grouping.keys is not None:
        # Shares of all rows, as pandas: one more cell per row key for its rows outside
        # the column keys, per column key for those outside the row keys, and one for the
        # rest. Each row is in one cell: the counts keep sensitivity 1 (one charge of ε).
        rows, cols = _split(grouping.keys, len(layout.index))
        other = OtherCells(rows, cols, rows_other=True, columns_other=True)
        grouping = Grouping(grouping.by, pd.RangeIndex(other.size), other=other)
        layout = replace(layout, other=other)

    def planned(given: ReleaseOptions) -> PlannedRelease[pd.DataFrame]:
        request = validate(
            target, stats, given, grouping=grouping, caps=grouped._caps, query=query,
            keys_from=grouped.keys_from,
        )  # fmt: skip
        return plan(target, request, lambda outputs, req: _finisher(outputs, req, layout))

    return with_auto_bounds(target.data, stats, options, planned)  # bounds="auto" first


def _finisher(outputs: tuple[PlannedOutput, ...], shown: Presentation, layout: Layout) -> Finish:
    post = shown.post or PostProcess()
    alpha = None if shown.confidence is None else 1.0 - shown.confidence

    def finish(
        keys: pd.Index | None, noisy: dict[MeasurementKey, Aggregate], source: NoiseSource
    ) -> pd.DataFrame:
        assert keys is not None
        other = layout.other
        if other is not None:
            assert other.rows is not None
            rows, cols = other.rows, other.columns
        else:
            rows, cols = _split(keys, len(layout.index))
        shape = (len(rows), len(cols))
        blocks: list[np.ndarray] = []
        margin_row = margin_col = layout.margins
        tables = []
        for out in outputs:
            values = released(out, noisy, post, shown.integral_columns)
            if layout.normalize is not None and other is not None:
                cells, margin_row, margin_col = _normalized(_grid(values, other), layout)
                cells = _listed(cells, shape, margin_row, margin_col)
            elif layout.normalize is not None:
                cells, margin_row, margin_col = _normalized(values.reshape(shape), layout)
            elif layout.margins:
                cells = _with_margins(out, noisy, post, values.reshape(shape))
            else:
                cells = values.reshape(shape)
            tables.append(cells)
        if layout.normalize is None:  # no mean next to a count that says "empty"
            tables = hide_where_empty(outputs, tables, post)
        for out, cells in zip(outputs, tables, strict=True):
            blocks.append(cells)
            if alpha is not None:
                lower, upper = out.stat.interval(out.inputs(noisy), alpha)
                lower, upper = np.reshape(lower, shape), np.reshape(upper, shape)
                if cells.dtype.kind == "f":  # a value hidden as NaN hides its interval too
                    hidden = np.isnan(cells)
                    lower, upper = np.where(hidden, np.nan, lower), np.where(hidden, np.nan, upper)
                blocks += [lower, upper]
        rows = _margin_index(rows, layout.margins_name) if margin_row else rows
        cols = _margin_index(cols, layout.margins_name) if margin_col else cols
        frame = _frame(blocks, rows, cols, _labels(layout, alpha is not None))
        return _in_time_units(frame, outputs, shown, alpha is not None)

    return finish


def _in_time_units(
    frame: pd.DataFrame, outputs: tuple[PlannedOutput, ...], shown: Presentation, intervals: bool
) -> pd.DataFrame:
    """Blocks of datetime and timedelta columns in their dtype (free post-processing)."""
    blocks = [(out, shown.kinds.get(out.stat.column)) for out in outputs]
    per_block = [block for block in blocks for _ in range(3 if intervals else 1)]
    width = frame.shape[1] // len(per_block)
    for position, (out, kind) in enumerate(per_block):
        if kind is None or not out.stat.reads_values:
            continue
        for j in range(position * width, (position + 1) * width):
            numbers = frame.iloc[:, j].to_numpy(dtype=np.float64)
            frame.isetitem(j, kind.present(numbers, out.stat.on_time))
    return frame


def _split(keys: pd.Index, inner: int) -> tuple[pd.Index, pd.Index]:
    """The distinct row keys and column keys of a product index (rows outermost)."""
    if not isinstance(keys, pd.MultiIndex):  # no column variable
        return keys, pd.Index([None])
    levels = [keys.get_level_values(i) for i in range(keys.nlevels)]
    return _distinct(levels[:inner]), _distinct(levels[inner:])


def _distinct(levels: list[pd.Index]) -> pd.Index:
    if not levels:
        return pd.Index([None])
    if len(levels) == 1:
        return pd.Index(levels[0].unique(), name=levels[0].name, tupleize_cols=False)
    frame = pd.MultiIndex.from_arrays(levels).unique()
    return frame.set_names([level.name for level in levels])


def _with_margins(
    out: PlannedOutput, noisy: dict[MeasurementKey, Aggregate], post: PostProcess,
    cells: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """The cells with a margin column, a margin row and the total, consistent with them."""
    rows, cols = cells.shape
    table = np.zeros((rows + 1, cols + 1), dtype=cells.dtype)
    table[:rows, :cols] = cells
    if out.stat.margin == "sum":  # sums of the released cells
        table[:rows, cols] = cells.sum(axis=1)
        table[rows, :] = table[:rows, :].sum(axis=0)
        return table
    # The statistic of the pooled noisy measurements (exact integer sums: no rounding).
    pooled = [np.asarray(noisy[key], dtype=object).reshape(rows, cols) for key in out.keys]
    for where, parts in (
        ((slice(0, rows), cols), [p.sum(axis=1) for p in pooled]),
        ((rows, slice(0, cols)), [p.sum(axis=0) for p in pooled]),
        ((rows, cols), [np.array([p.sum()], dtype=object) for p in pooled]),
    ):
        summed = {
            key: np.asarray(part, dtype=object) for key, part in zip(out.keys, parts, strict=True)
        }
        table[where] = np.reshape(out.stat.value(out.inputs(summed), post), np.shape(table[where]))
    return table


def _normalized(cells: np.ndarray, layout: Layout) -> tuple[np.ndarray, bool, bool]:
    """Proportions of the counts clamped at 0, as ``pd.crosstab(normalize=...)``.

    ``"all"``: of the total; ``"index"``: of each row (with margins, an ``All`` row of the
    column totals' shares, no ``All`` column); ``"columns"``: of each column (with margins,
    an ``All`` column, no ``All`` row). An empty row or column gives NaN.
    """
    counts = np.maximum(np.asarray(cells, dtype=np.float64), 0.0)
    how, margins = layout.normalize, layout.margins
    total = counts.sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        if how == "all":
            if margins:
                counts = np.block([
                    [counts, counts.sum(axis=1, keepdims=True)],
                    [counts.sum(axis=0, keepdims=True), np.array([[total]])],
                ])  # fmt: skip
            return counts / total, margins, margins
        if how == "index":
            shares = counts / counts.sum(axis=1, keepdims=True)
            if margins:
                shares = np.vstack([shares, counts.sum(axis=0, keepdims=True) / total])
            return shares, margins, False
        shares = counts / counts.sum(axis=0, keepdims=True)
        if margins:
            shares = np.hstack([shares, counts.sum(axis=1, keepdims=True) / total])
        return shares, False, margins


def _grid(values: np.ndarray, other: OtherCells) -> np.ndarray:
    """The released cells as the extended grid: the keys' cells, then the other row/column.

    ``values`` are in the grouping's order (see ``OtherCells``): the keys' cells in C order,
    every row key's "other" column, the "other" row's cells, then other × other.
    """
    assert other.rows is not None
    nrows, ncols = len(other.rows), len(other.columns)
    grid = np.zeros((nrows + 1, ncols + 1), dtype=np.float64)
    flat = np.asarray(values, dtype=np.float64)
    grid[:nrows, :ncols] = flat[: nrows * ncols].reshape(nrows, ncols)
    at = nrows * ncols
    grid[:nrows, ncols] = flat[at : at + nrows]
    at += nrows
    grid[nrows, :ncols] = flat[at : at + ncols]
    grid[nrows, ncols] = flat[at + ncols]
    return grid


def _listed(
    table: np.ndarray, shape: tuple[int, int], margin_row: bool, margin_col: bool
) -> np.ndarray:
    """The listed keys' rows and columns of a table over the extended grid (and margins).

    As pandas would give it on all the rows, then select the listed keys: the shares keep
    the totals of the rows outside them.
    """
    nrows, ncols = shape
    rows = list(range(nrows)) + ([table.shape[0] - 1] if margin_row else [])
    cols = list(range(ncols)) + ([table.shape[1] - 1] if margin_col else [])
    return table[np.ix_(rows, cols)]


def _margin_index(index: pd.Index, name: Hashable) -> pd.Index:
    """``index`` and the margins' label (``(name, "", ...)`` on several levels), as pandas."""
    if isinstance(index, pd.MultiIndex):
        extra = pd.MultiIndex.from_tuples([(name,) + ("",) * (index.nlevels - 1)])
        return index.append(extra).set_names(index.names)
    return index.append(pd.Index([name], name=index.name))


def _labels(layout: Layout, intervals: bool) -> list[tuple[Hashable, ...]]:
    """The column label (tuple) of each released block, in order."""
    labels = list(layout.labels) or [()]
    if not intervals:
        return labels
    suffixes = ("", "_lower", "_upper")
    out: list[tuple[Hashable, ...]] = []
    for label in labels:
        base = label or ("count",)
        out += [(*base[:-1], f"{base[-1]}{suffix}") for suffix in suffixes]
    return out


def _frame(
    blocks: list[np.ndarray], rows: pd.Index, cols: pd.Index, labels: list[tuple[Hashable, ...]]
) -> pd.DataFrame:
    """The blocks side by side, each under its label (none for a single unlabelled block)."""
    if len(cols) == 1 and cols[0] is None:  # no column variable: one column per block
        values = np.hstack([block[:, :1] for block in blocks])
        names = [label if len(label) > 1 else label[0] for label in labels]
        return pd.DataFrame(values, index=rows, columns=_column_index(names))
    if labels == [()]:
        return pd.DataFrame(blocks[0], index=rows, columns=cols)
    tuples = [(*label, *(c if isinstance(c, tuple) else (c,))) for label in labels for c in cols]
    names = [None] * len(labels[0]) + list(cols.names)
    columns = pd.MultiIndex.from_tuples(tuples, names=names)
    frame = pd.DataFrame(np.hstack(blocks), index=rows, columns=columns)
    return frame.astype({c: blocks[i // len(cols)].dtype for i, c in enumerate(columns)})


def _column_index(names: list[Any]) -> pd.Index:  # labels, or (value, statistic) tuples
    if names and isinstance(names[0], tuple):
        return pd.MultiIndex.from_tuples(names)
    return pd.Index(names, tupleize_cols=False)


def plan_crosstab(
    obj: pd.DataFrame, index: object, columns: object, options: ReleaseOptions, *,
    keys: Keys = None, values: Hashable | None = None, aggfunc: str | None = None,
    margins: bool = False, margins_name: Hashable = "All", normalize: object = False,
) -> PlannedRelease[pd.DataFrame]:  # fmt: skip
    """Noisy ``pd.crosstab`` of the protected frame (see ``DataFrame.dp.crosstab``)."""
    stats: list[Statistic]
    if holds_data(values):
        raise DPTypeError(
            f"values= names a column of this frame, got {shown(values)}: pass its label "
            "(values='income'); pd.crosstab takes arrays, a protected frame's crosstab takes "
            "its own columns by name"
        )
    if values is None:
        if aggfunc is not None:
            raise DPValueError("aggfunc needs values=, as in pd.crosstab")
        stats = [Count("count")]
    else:
        if aggfunc is None:
            raise DPValueError("values= needs an aggfunc, as in pd.crosstab, e.g. aggfunc='mean'")
        stats = [statistic_class(aggfunc, "aggfunc")(values, values)]
    how = _parse_normalize(normalize)
    if how is not None and (values is not None or options.ci is not None):
        raise DPValueError("normalize= is for counts without values= or ci")
    layout = Layout(parse_by(index), parse_by(columns), _flag(margins), margins_name, how)
    return plan_table(resolve(obj), layout, stats, keys, "crosstab", options)


def plan_pivot_table(
    obj: pd.DataFrame, options: ReleaseOptions, values: object = None, index: object = None,
    columns: object = None, aggfunc: object = "mean", *, keys: Keys = None, margins: bool = False,
    margins_name: Hashable = "All",
) -> PlannedRelease[pd.DataFrame]:  # fmt: skip
    """Noisy ``pd.pivot_table`` of the protected frame (see ``DataFrame.dp.pivot_table``)."""
    if index is None:
        raise DPValueError("pivot_table needs index= (the row variable(s))")
    target = resolve(obj)
    rows, cols = parse_by(index), (() if columns is None else parse_by(columns))
    if values is None:  # as pandas: every other column
        all_columns = target.engine.columns(target.data)
        values = [c for c in all_columns if c not in (*rows, *cols, target.unit)]
    stats, labels = _pivot_stats(values, aggfunc, bool(cols))
    layout = Layout(rows, cols, _flag(margins), margins_name, labels=labels)
    return plan_table(target, layout, stats, keys, "pivot_table", options)


def _pivot_stats(
    values: object, aggfunc: object, with_columns: bool
) -> tuple[list[Statistic], tuple[tuple[Hashable, ...], ...]]:
    """One statistic per (value, aggfunc) pair and its column label, as pandas lays them out."""
    several = isinstance(values, list)
    names: list[Hashable] = list(values) if isinstance(values, list) else [values]
    if not names:
        raise DPValueError("pivot_table: values is empty")
    labels: list[tuple[Hashable, ...]]
    if isinstance(aggfunc, dict):
        pairs = [(v, how) for v in aggfunc for how in _as_list(aggfunc[v])]
        paired = any(isinstance(how, list) for how in aggfunc.values())
        labels = [(v, how) if paired else (v,) for v, how in pairs]
        if not paired and len(pairs) == 1 and with_columns:
            labels = [()]
    elif isinstance(aggfunc, list):
        pairs = [(v, how) for how in aggfunc for v in names]
        labels = [(how,) if with_columns and not several else (how, v) for v, how in pairs]
    else:
        pairs = [(v, aggfunc) for v in names]
        labels = [(v,) if several or not with_columns else () for v, _ in pairs]
    stats = [statistic_class(how, "aggfunc")((how, v), v) for v, how in pairs]
    return stats, tuple(labels)


def _as_list(how: object) -> list[object]:
    return list(how) if isinstance(how, list) else [how]


def _parse_normalize(normalize: object) -> str | None:
    if normalize is False or normalize is None:
        return None
    if isinstance(normalize, bool | str) and normalize in _NORMALIZE:
        return _NORMALIZE[normalize]
    raise DPValueError(
        f"normalize must be False, True, 'all', 'index' or 'columns', got {normalize!r}"
    )


def _flag(margins: object) -> bool:
    if not isinstance(margins, bool):
        raise DPTypeError(f"margins must be True or False, got {type(margins).__name__}")
    return margins


#: The derived columns of ``pred_table`` (names no frame is expected to hold).
_OBSERVED, _PREDICTED = "__pandas_dp_observed__", "__pandas_dp_predicted__"


def plan_pred_table(
    obj: pd.DataFrame, model: object, threshold: float, options: ReleaseOptions
) -> PlannedRelease[pd.DataFrame]:
    """Noisy counts of observed (rows) against predicted (columns) outcomes of a logit model.

    statsmodels' ``LogitResults.pred_table(threshold)``, released: each row of ``obj`` is
    read through the model's design (its clipped variables, the response as the model read
    it) and counted in one of four cells, observed ``y >= 1/2`` or not by predicted
    probability above ``threshold`` or not (a row missing a variable counts nowhere). Both
    are functions of that row and the released coefficients (public): stability 1. One
    charge of ``epsilon`` for the four cells (parallel composition).
    """
    design = getattr(model, "design", None)
    if not isinstance(model, LogitResults) or not isinstance(design, FormulaDesign):
        raise DPTypeError(
            f"pred_table takes a released logit model (priv.dp.logit(...)), got "
            f"{type(model).__name__}"
        )
    if isinstance(threshold, bool) or not isinstance(threshold, int | float):
        raise DPTypeError(f"threshold must be a number in (0, 1), got {threshold!r}")
    if not 0 < threshold < 1:
        raise DPValueError(f"threshold must lie in (0, 1), got {threshold}")
    target = resolve(obj)
    if not target.engine.in_memory or target.column is not None:
        raise DPValueError(
            "pred_table reads the model's design row by row: call it on a protected pandas "
            "DataFrame (priv.dp.pred_table(model, epsilon=...))"
        )
    rows = design(target.data)  # total and row-local: a failing row is all NaN
    params = model.params
    intercept = float(params.get("Intercept", 0.0))  # (a model without one: "y ~ x - 1")
    columns = list(design.columns)
    scores = intercept + rows[columns].to_numpy() @ params[columns].to_numpy(np.float64)
    observed = rows[design.response].to_numpy(np.float64)
    cut = np.log(threshold / (1 - threshold))
    derived = target.data.assign(**{
        _OBSERVED: np.where(np.isnan(observed), np.nan, (observed >= 0.5).astype(np.float64)),
        _PREDICTED: np.where(np.isnan(scores), np.nan, (scores > cut).astype(np.float64)),
    })  # fmt: skip
    keys = {_OBSERVED: [0.0, 1.0], _PREDICTED: [0.0, 1.0]}
    planned = plan_crosstab(derived, _OBSERVED, _PREDICTED, options, keys=keys)

    def shaped(table: pd.DataFrame) -> pd.DataFrame:
        out = table.copy()
        out.index = pd.Index([0, 1], name="observed")
        out.columns = pd.Index([0, 1], name="predicted")
        return out

    return planned.then(shaped)
