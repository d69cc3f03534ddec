"""Exact clipped aggregates of an in-memory pandas DataFrame.

Everything is computed with integers: values are rounded onto the query's lattice row by row
(:mod:`pandas_dp.engines.lattice_units`) and summed exactly, so the result depends
neither on row order nor on float rounding, and cannot overflow (a row contributes at most
``2**37`` units; sums over ``2**26`` rows or more are accumulated in Python integers).
Grouping maps every row to the position of its key among the *public* keys with one hash pass
(:mod:`pandas_dp.engines.codes`) and aggregates with ``numpy.bincount``: no Python loop over
groups, no copy of the frame.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Mapping

import numpy as np
import numpy.typing as npt
import pandas as pd

from pandas_dp.engines.bounding import keep_mask
from pandas_dp.engines.cells import (
    axis_codes,
    binned_codes,
    cell_codes,
    cell_counts,
    edge_ranks,
    inside_every,
    joint_codes,
)
from pandas_dp.engines.codes import (
    distinct_codes,
    level_counts,
    missing_mask,
    observed_codes,
    other_codes,
    public_codes,
)
from pandas_dp.engines.columns import numeric_values
from pandas_dp.engines.integers import integer_units
from pandas_dp.engines.lattice_units import (
    MAX_ROW_UNITS,
    lattice_values,
    row_bound,
    square_values,
)
from pandas_dp.engines.lookup import Lookup, join_rows
from pandas_dp.engines.products import product_sums
from pandas_dp.engines.protocol import Aggregates, Aggregation, Engine, Frame, FrameT
from pandas_dp.engines.sums import scaled, summed
from pandas_dp.engines.weighted import weighted_units
from pandas_dp.measures.aggregates import (
    Aggregate,
    Axis,
    CellCounts,
    ClippedSquares,
    ClippedSum,
    Distinct,
    EdgeRanks,
    Grouping,
    JointCounts,
    ManyTables,
    Measure,
    NonNull,
    ProductSums,
    Rows,
    WeightedSum,
)
from pandas_dp.measures.bounding import Bounding

I64 = npt.NDArray[np.int64]


def _grouping_codes(frame: pd.DataFrame, grouping: Grouping) -> tuple[pd.Index, I64]:
    if grouping.binning is not None:
        assert grouping.keys is not None, "binned groupings come with their intervals"
        bins = binned_codes(frame[grouping.by[0]], grouping.binning)
        if len(grouping.by) == 1:
            return grouping.keys, bins
        return grouping.keys, _binned_with_keys(frame, grouping, bins)
    if grouping.keys is None:
        return observed_codes(frame, grouping.by)
    if grouping.other is not None:
        codes = other_codes(frame, grouping.by, grouping.other)
    else:
        codes = public_codes(frame, grouping.by, grouping.keys)
    if not grouping.missing:
        return grouping.keys, codes
    (column,) = grouping.by
    codes[missing_mask(frame[column])] = len(grouping.keys)
    return grouping.keys.append(pd.Index([np.nan], name=column)), codes


def _binned_with_keys(frame: pd.DataFrame, grouping: Grouping, bins: I64) -> I64:
    """Codes of the first column's bins (outermost) with the other columns' public keys.

    The keys are every bin with every key of the others, in C order (see
    :class:`~pandas_dp.measures.aggregates.Grouping`): the first ``width`` keys give the others'.
    """
    assert grouping.binning is not None
    keys = grouping.keys
    assert isinstance(keys, pd.MultiIndex)
    width = len(keys) // (len(grouping.binning.edges) - 1)
    inner = keys[:width].droplevel(0)
    rest = public_codes(frame, grouping.by[1:], inner)
    inside = (bins >= 0) & (rest >= 0)
    return np.asarray(np.where(inside, bins * width + rest, -1), dtype=np.int64)


def _counts_only(
    frame: pd.DataFrame, measures: tuple[Measure, ...], grouping: Grouping | None
) -> I64 | None:
    """Rows per public key of one column, for a release of row counts only (else None).

    The most common grouped release; counted per distinct value (see
    :func:`~pandas_dp.engines.codes.level_counts`), with no code per row.
    """
    if grouping is None or grouping.keys is None or grouping.binning is not None:
        return None
    if grouping.missing or grouping.other is not None or len(grouping.by) != 1 or not measures:
        return None
    if not all(type(m) is Rows for m in measures):
        return None
    return level_counts(frame[grouping.by[0]], grouping.keys)


def _kept_keys(keys: pd.Index, codes: I64) -> tuple[pd.Index, I64]:
    """Observed keys that still hold a row after contribution bounding, re-coded.

    Private key selection assumes one unit can create at most ``max_groups_per_unit``
    candidate keys; a key whose every row was dropped (or whose rows lacked a unit id) must
    not be a candidate at all, or one heavy unit could put many keys up for release.
    """
    present = np.unique(codes[codes >= 0])
    remap = np.full(len(keys) + 1, -1, dtype=np.int64)
    remap[present] = np.arange(present.size)
    kept = keys[present]
    if isinstance(kept, pd.MultiIndex):
        kept = kept.remove_unused_levels()
    return kept, remap[codes]  # codes of -1 read remap[-1] == -1


def _count(bins: I64 | None, groups: int, rows: int | npt.NDArray[np.bool_]) -> I64:
    """Rows per group; ``rows`` is the row count or a mask of the rows to count."""
    if bins is None:
        total = rows if isinstance(rows, int) else int(np.count_nonzero(rows))
        return np.array([total], dtype=np.int64)
    if not isinstance(rows, int):
        bins = bins[rows]
    return np.bincount(bins, minlength=groups + 1)[1:].astype(np.int64)


def _distinct(bins: I64 | None, groups: int, values: I64) -> I64:
    """Distinct value codes per group (code -1, and bin 0, are not counted).

    A pair (group, value) is one number ``bin * width + value``, below ``(rows + 2)**2``:
    no overflow for any frame that fits in memory.
    """
    group = np.ones(values.size, dtype=np.int64) if bins is None else bins
    keep = (group > 0) & (values >= 0)
    width = int(values.max(initial=-1)) + 1
    pairs = np.unique(group[keep] * width + values[keep])
    return np.bincount(pairs // max(width, 1), minlength=groups + 1)[1:].astype(np.int64)


def _missing(column: pd.Series) -> npt.NDArray[np.bool_]:
    """:func:`missing_mask`; for numpy numbers directly (``isna`` is ``isnan`` there)."""
    dtype = column.dtype
    if isinstance(dtype, np.dtype) and dtype.kind in "biuf":
        values = column.to_numpy()
        return np.isnan(values) if dtype.kind == "f" else np.zeros(values.size, dtype=np.bool_)
    return missing_mask(column)


def _measure(
    frame: pd.DataFrame,
    measure: Measure,
    bins: I64 | None,
    groups: int,
    codes: Callable[[Axis], I64],
    column: Callable[[Hashable], pd.Series],
    inside: Callable[[tuple[Axis, ...]], npt.NDArray[np.bool_]],
) -> Aggregate:
    if isinstance(measure, JointCounts):
        return cell_counts(bins, groups, joint_codes(measure, codes, inside), measure.cells)
    if isinstance(measure, ManyTables):
        counts = [_measure(frame, t, bins, groups, codes, column, inside) for t in measure.tables]
        together = np.concatenate(counts, axis=1) if counts else np.zeros((groups, 0))
        return np.asarray(together, dtype=np.int64)
    if isinstance(measure, ProductSums):
        weights = None if measure.weights is None else column(measure.weights)
        if measure.design is not None:  # a model's design, computed from the rows read
            designed = measure.design(frame)
            return product_sums(designed, measure, bins, groups, designed.__getitem__, weights)
        return product_sums(frame, measure, bins, groups, column, weights)
    if isinstance(measure, Rows):
        return _count(bins, groups, len(frame))
    if isinstance(measure, NonNull):
        return _count(bins, groups, ~_missing(column(measure.column)))
    if isinstance(measure, ClippedSum) and (
        integer := integer_units(column(measure.column), measure)
    ):
        clipped, shift, bound = integer  # an integer column: its units without the float detour
        return scaled(summed(bins, clipped, groups, bound), shift)
    if isinstance(measure, Distinct):
        return _distinct(bins, groups, distinct_codes(column(measure.column)))
    if isinstance(measure, WeightedSum):
        units = weighted_units(frame, measure)
    else:
        values = numeric_values(column(measure.column))
        if isinstance(measure, CellCounts):
            return cell_counts(bins, groups, cell_codes(values, measure), measure.cells)
        if isinstance(measure, EdgeRanks):
            return edge_ranks(bins, groups, values, measure)
        if isinstance(measure, ClippedSquares):
            units = square_values(values, measure)
        else:
            units = lattice_values(values, measure)
    return summed(bins, units, groups, row_bound(measure))


def aggregate_frame(
    frame: pd.DataFrame,
    measures: tuple[Measure, ...],
    grouping: Grouping | None = None,
    bounding: Bounding | None = None,
) -> Aggregates:
    """Exact aggregates of one pandas frame (also used per partition by other engines).

    Rows outside the keys and rows dropped by contribution bounding land in bin 0, which
    is discarded; the frame itself is never copied.
    """
    counts = None if bounding is not None else _counts_only(frame, measures, grouping)
    if counts is not None:
        assert grouping is not None
        assert grouping.keys is not None
        return Aggregates(grouping.keys, [counts.copy() for _ in measures])
    keys: pd.Index | None = None
    codes: I64 | None = None
    if grouping is not None:
        keys, codes = _grouping_codes(frame, grouping)
    if bounding is not None:
        keep = keep_mask(frame, bounding, codes)
        codes = np.where(keep, 0 if codes is None else codes, -1)
        if grouping is not None and grouping.keys is None and keys is not None:
            keys, codes = _kept_keys(keys, codes)
    groups = 1 if keys is None else len(keys)
    bins = None if codes is None else codes + 1
    measured = _Measured(frame, bins, groups)
    return Aggregates(keys, [measured(m) for m in measures])


class _Measured:
    """Each measure of one frame, computed once (a centred sum reuses the plain one).

    An object rather than a closure that calls itself: such a closure is a reference cycle
    that keeps the frame alive until the garbage collector runs, so a Dask worker would hold
    several partitions' columns at once.
    """

    def __init__(self, frame: pd.DataFrame, bins: I64 | None, groups: int) -> None:
        self.frame, self.bins, self.groups = frame, bins, groups
        self.cache: dict[Measure, Aggregate] = {}
        self.axes: dict[Axis, I64] = {}  # one hash pass per column of the contingency tables
        self.masks: dict[frozenset[Axis], npt.NDArray[np.bool_]] = {}  # rows keyed on them all
        self.columns: dict[Hashable, pd.Series] = {}  # each column taken out of the frame once

    def column(self, name: Hashable) -> pd.Series:
        if name not in self.columns:
            self.columns[name] = self.frame[name]
        return self.columns[name]

    def codes_of(self, axis: Axis) -> I64:
        if axis not in self.axes:
            self.axes[axis] = axis_codes(self.frame, axis)
        return self.axes[axis]

    def inside(self, axes: tuple[Axis, ...]) -> npt.NDArray[np.bool_]:
        key = frozenset(axes)
        if key not in self.masks:
            self.masks[key] = inside_every(axes, self.codes_of, len(self.frame))
        return self.masks[key]

    def __call__(self, measure: Measure) -> Aggregate:
        if measure not in self.cache:
            shared = _shared(measure, self)
            if shared is None:
                shared = _measure(
                    self.frame, measure, self.bins, self.groups, self.codes_of, self.column,
                    self.inside,
                )  # fmt: skip
            self.cache[measure] = shared
        return self.cache[measure]


def _shared(measure: Measure, measured: Callable[[Measure], Aggregate]) -> Aggregate | None:
    """A centred sum from the plain sum on the same lattice: ``Σ(q - c) = Σq - c·n``.

    ``n`` counts the rows that contribute: the non-missing ones, or every row when missing
    values are imputed. One pass over the column then serves both measures. Only when the
    uncentred values stay within a lattice's ``2**37`` units (a public property of the
    measure): a centred lattice may let them reach ``2**61``, and the plain sum of such
    values would need far shorter partial sums than the centred one.
    """
    if not isinstance(measure, ClippedSum) or measure.offset == 0:
        return None
    if max(abs(measure.lower), abs(measure.upper)) > MAX_ROW_UNITS:
        return None
    plain = measured(dataclasses.replace(measure, offset=0))
    count = measured(Rows() if measure.fill is not None else NonNull(measure.column))
    largest = int(np.max(np.abs(count))) if count.size else 0
    if abs(measure.offset) * largest < 1 << 62 and plain.dtype != object:
        return np.asarray(plain - measure.offset * count, dtype=np.int64)
    return np.asarray(plain.astype(object) - measure.offset * count.astype(object), dtype=object)


class PandasEngine(Engine):
    """Engine for in-memory :class:`pandas.DataFrame` objects."""

    name = "pandas"
    in_memory = True

    def attrs(self, data: object) -> Mapping[Hashable, object]:
        """``data.attrs`` (empty for objects that have none)."""
        attrs: Mapping[Hashable, object] = getattr(data, "attrs", {})
        return attrs

    def with_attrs(self, data: FrameT, attrs: Mapping[Hashable, object]) -> FrameT:
        """A shallow copy whose ``attrs`` are ``attrs``."""
        copy = data.copy(deep=False)
        copy.attrs = attrs
        return copy

    def index(self, data: Frame) -> pd.Index:
        """The frame's index."""
        index: pd.Index = data.index
        return index

    def is_series(self, data: object) -> bool:
        """Whether ``data`` is a pandas Series."""
        return isinstance(data, pd.Series)

    def lookup_join(self, data: object, lookup: Lookup) -> pd.DataFrame:
        """The frame joined to ``lookup``; see :func:`~pandas_dp.engines.lookup.join_rows`."""
        assert isinstance(data, pd.DataFrame)
        return join_rows(data, lookup)

    def exact(self, data: object, aggregation: Aggregation) -> Aggregates:
        """Exact aggregates; see :func:`aggregate_frame`."""
        assert isinstance(data, pd.DataFrame)
        measures, grouping = aggregation.measures, aggregation.grouping
        return aggregate_frame(data, measures, grouping, aggregation.bounding)
