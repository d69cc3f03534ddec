"""Exact clipped aggregates of a Dask DataFrame, one ``compute()`` per release.

Each partition is aggregated by :func:`~pandas_dp.engines.pandas_engine.aggregate_frame`,
the pandas engine's own code, and the per-partition integers are added up exactly in one
final task. Only those aggregates (one integer per measure and group) reach the client.
This module chooses the columns, the route and the graph of tasks, and holds the engine
class; the pandas functions those tasks run on the partitions are in
:mod:`pandas_dp.engines.dask.partitions`.

Contribution bounding per privacy unit needs all of a unit's rows in one place. A
collection whose index is the unit column with known divisions has them there already:
each partition bounds its own units, after dropping any row whose id lies outside its
division (:mod:`pandas_dp.engines.dask.divisions`), with no shuffle. Otherwise the needed columns
(and only those) are **exchanged by the unit id** (:mod:`pandas_dp.engines.dask.exchange`), so
every unit's rows land in one bucket, which then applies the caps to its own units.
Partitions receive the public plan and a picklable priority source, never the session or
its accountant: in production every worker draws priorities from its own ``os.urandom``.

The session handle rides on the collection's meta frame (``ddf._meta.attrs``), which dask
derives with pandas' own operations, so attrs propagate exactly as on pandas frames.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Hashable, Mapping, Sequence
from functools import partial
from typing import Any

import dask.dataframe as dd
import numpy as np
import pandas as pd
from dask import base
from dask.delayed import Delayed
from dask.highlevelgraph import HighLevelGraph
from dask.typing import Key

from pandas_dp.engines.bounding import SystemPriorities
from pandas_dp.engines.dask.divisions import Division, unit_divisions
from pandas_dp.engines.dask.exchange import exchange
from pandas_dp.engines.dask.lineage import (
    aligned_frame,
    collection,
    duplicating_step,
    rewriting_step,
    unchanged,
)
from pandas_dp.engines.dask.partitions import (
    KEY_CODE,
    aggregate_partition,
    code_dtype,
    code_keys,
    combine,
    with_canonical_ids,
)
from pandas_dp.engines.lookup import Lookup, join_rows
from pandas_dp.engines.protocol import Aggregates, Aggregation, Engine, Frame, FrameT, Origin
from pandas_dp.measures.aggregates import (
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
    WeightedSum,
)
from pandas_dp.measures.bounding import Bounding

#: The scheduler a ``compute()`` here would use (dask's function, typed).
get_scheduler: Callable[[], object] = base.get_scheduler
#: A delayed value of a key in a graph (dask's constructor, typed).
_delayed: Callable[..., Delayed] = Delayed
#: Compute dask collections (dask's function, typed).
compute: Callable[..., tuple[Aggregates]] = base.compute


def _columns(
    measures: tuple[Measure, ...], grouping: Grouping | None, bounding: Bounding | None
) -> list[Hashable]:
    """The columns a release reads, in a stable order and without repeats."""
    needed: list[Hashable] = []
    if bounding is not None:
        needed.append(bounding.unit)
    if grouping is not None:
        needed.extend(grouping.by)
    for measure in measures:
        if isinstance(measure, WeightedSum):
            needed.append(measure.weights)
            if measure.column is not None:
                needed.append(measure.column)
        elif isinstance(
            measure, NonNull | Distinct | ClippedSum | ClippedSquares | CellCounts | EdgeRanks
        ):
            needed.append(measure.column)
        elif isinstance(measure, ProductSums):
            needed.extend(measure.columns if measure.design is None else measure.reads)
            needed.extend([] if measure.weights is None else [measure.weights])
        elif isinstance(measure, JointCounts | ManyTables):
            tables = measure.tables if isinstance(measure, ManyTables) else (measure,)
            needed.extend(axis.column for t in tables for axis in (*t.axes, *t.within))
    return list(dict.fromkeys(needed))


def _canonical_ids(frame: Any, unit: Hashable) -> Any:
    """Unit ids in the one form every route tells units apart by, before any row moves.

    The exchange's buckets, Dask's shuffle and partition-local caps hash or compare the ids
    as they are; ``1``, ``1.0`` and ``True`` (or one instant in two time zones) would be
    three units there and one in the pandas engine. Integer columns already hold one form
    per id and are left as they are (decided from the dtype). Text columns get their numbers
    and their instants with a UTC offset written one way: Dask's default string conversion
    writes ``1``, ``1.0`` and ``True`` of an object column as three texts, and one instant
    in two zones as two (:func:`~pandas_dp.engines.canonical.canonical_id_texts`).
    """
    dtype = frame._meta[unit].dtype
    if isinstance(dtype, np.dtype) and dtype.kind in "iuM":
        return frame
    meta = with_canonical_ids(frame._meta, unit)
    return frame.map_partitions(with_canonical_ids, unit, meta=meta)


def _unmarked(data: dd.DataFrame) -> dd.DataFrame:
    """The collection without the identity layers that carry session marks.

    They do nothing to the data (the lineage check has read them already), but dask's
    optimiser treats them as steps of their own: a parquet read below one gets its files
    fused into a few large partitions, which costs the workers memory the plain read does
    not. Computing without them gives the partitions a plain query gets.
    """
    expr: Any = data.expr  # dask's expressions: partly typed, methods untyped
    nodes: list[Any] = list(expr.walk())
    for node in nodes:
        if type(node).__name__ == "MapPartitions" and node.operand("func") is unchanged:
            expr = expr.substitute(node, node.frame)
    return collection(expr)


def _coded(
    frame: Any, grouping: Grouping | None, measures: tuple[Measure, ...], bounding: Bounding
) -> tuple[Any, Grouping | None]:
    """Replace the group-by columns by their codes among the public keys, before a shuffle.

    A shuffle moves every row, so it should move as few bytes as possible: one small
    integer instead of the key columns (often strings), and none of the rows outside the
    keys, which bounding drops first anyway. Returns the coded frame and the grouping on
    the codes (keys ``0 .. len(keys) - 1``, in the public keys' order). Public keys only:
    private keys are chosen after the shuffle, and bins are cheap to shuffle as numbers.
    """
    if grouping is None or grouping.keys is None or grouping.binning is not None:
        return frame, grouping
    kept = _columns(measures, None, bounding)  # the unit and measured columns
    meta = frame._meta[kept].assign(**{KEY_CODE: np.zeros(0, dtype=code_dtype(grouping))})
    coded = frame.map_partitions(code_keys, grouping, kept, meta=meta, enforce_metadata=False)
    return coded, Grouping((KEY_CODE,), pd.RangeIndex(len(grouping.keys), name=KEY_CODE))


# The graph calls aggregate_partition and combine through this module's names (tests spy
# on them here), so the task functions stay next to the engine.
def _aggregate_one(
    frame: pd.DataFrame,
    grouping: Grouping | None,
    *,
    measures: tuple[Measure, ...],
    bounding: Bounding | None,
    division: Division | None,
) -> Aggregates:
    """:func:`aggregate_partition` with the shared grouping as a task's second input."""
    return aggregate_partition(frame, measures, grouping, bounding, division)


def _aggregated(
    inputs: Sequence[Delayed],
    measures: tuple[Measure, ...],
    grouping: Grouping | None,
    bounding: Sequence[Bounding | None],
    divisions: Sequence[Division | None],
    observed: bool,
) -> Delayed:
    """The aggregates of every input, added up: one delayed value, its graph written out.

    Built with ``delayed`` calls, the final task's hundreds of arguments would each cost a
    pass over the whole graph (seconds at a thousand partitions). Plan objects are bound
    with ``partial`` (dask never looks inside one for keys); the public keys are one value
    of the graph, shared by every task.
    """
    token = uuid.uuid4().hex  # every release its own keys, like impure delayed calls
    shared, part, total = (f"pandas-dp-{step}-{token}" for step in ("plan", "part", "total"))
    layer: dict[Key, object] = {shared: grouping}  # and tasks: a function and its inputs
    for i, (frame, local, division) in enumerate(zip(inputs, bounding, divisions, strict=True)):
        one = partial(_aggregate_one, measures=measures, bounding=local, division=division)
        layer[(part, i)] = (one, frame.key, shared)
    layer[total] = (partial(combine, observed=observed), [(part, i) for i in range(len(inputs))])
    depends: list[Any] = list(inputs)  # Delayed: dask's DaskCollection protocol misses it
    graph = HighLevelGraph.from_collections(total, layer, dependencies=depends)
    return _delayed(total, graph, layer=total)


class DaskEngine(Engine):
    """Engine for :class:`dask.dataframe.DataFrame` collections (see the module docstring)."""

    name = "Dask"
    in_memory = False

    def attrs(self, data: object) -> Mapping[Hashable, object]:
        """The attrs of the collection's meta frame."""
        assert isinstance(data, dd.DataFrame | dd.Series)
        attrs: Mapping[Hashable, object] = data._meta.attrs
        return attrs

    def with_attrs(self, data: FrameT, attrs: Mapping[Hashable, object]) -> FrameT:
        """The same collection with a meta frame that carries ``attrs``.

        A partition-wise identity whose ``meta`` holds the attrs; ``required_columns=[]``
        lets column projections pass through it to the reader. Dask's tokens ignore attrs,
        so a fresh random tag keeps the new expression from being merged with another one.
        """
        frame: Any = data  # dask's map_partitions is untyped
        meta = frame._meta.copy(deep=False)
        meta.attrs = dict(attrs)
        return frame.map_partitions(
            unchanged, uuid.uuid4().hex, meta=meta, enforce_metadata=False,
            required_columns=[],
        )  # fmt: skip

    def index(self, data: Frame) -> pd.Index:
        """The meta frame's (empty) index: its names, not its labels."""
        assert isinstance(data, dd.DataFrame | dd.Series)
        index: pd.Index = data._meta.index
        return index

    def is_series(self, data: object) -> bool:
        """Whether ``data`` is a Dask Series."""
        return isinstance(data, dd.Series)

    def origin_of(self, data: object) -> str:
        """The name of the collection's top expression (the ``protect`` layer's)."""
        assert isinstance(data, dd.DataFrame | dd.Series)
        name: str = data.expr._name
        return name

    def duplicating_step(self, data: object, is_origin: Origin, origin: str) -> str | None:
        """See :func:`pandas_dp.engines.dask.lineage.duplicating_step`."""
        assert isinstance(data, dd.DataFrame | dd.Series)
        return duplicating_step(data.expr, is_origin, origin)

    def rewriting_step(
        self, data: object, unit: Hashable, is_origin: Origin, origin: str
    ) -> str | None:
        """See :func:`pandas_dp.engines.dask.lineage.rewriting_step`."""
        assert isinstance(data, dd.DataFrame | dd.Series)
        return rewriting_step(data.expr, unit, is_origin, origin)

    def aligned_frame(self, series: object, unit: Hashable) -> Any:
        """See :func:`pandas_dp.engines.dask.lineage.aligned_frame`."""
        assert isinstance(series, dd.Series)
        return aligned_frame(series.expr, unit)

    def lookup_join(self, data: object, lookup: Lookup) -> dd.DataFrame:
        """The collection joined to ``lookup``, partition by partition, by its own rows.

        A ``map_partitions`` of :func:`~pandas_dp.engines.lookup.join_rows` with the lookup
        as its one argument: each partition's rows are matched by the canonical matching
        step (never by Dask's hash join of raw values) and keep their labels, so the
        divisions stay those of the input. The meta frame is the function's result on the
        input's (empty) meta frame: columns and dtypes from the schema and the public
        table alone, and the input's attrs (the session). Lineage checks recognise this
        step (:mod:`pandas_dp.engines.dask.lineage`).
        """
        assert isinstance(data, dd.DataFrame)
        frame: Any = data  # dask's map_partitions is untyped
        meta = join_rows(frame._meta, lookup)
        joined: dd.DataFrame = frame.map_partitions(
            join_rows, lookup, meta=meta, enforce_metadata=False
        )
        return joined

    def exact(self, data: object, aggregation: Aggregation) -> Aggregates:
        """Exact aggregates of the whole collection, in one ``compute()``.

        The needed columns are selected (so readers load only those), shuffled by the unit
        id when units are bounded, aggregated per partition and added up exactly.
        """
        assert isinstance(data, dd.DataFrame)
        measures, grouping = aggregation.measures, aggregation.grouping
        bounding = aggregation.bounding
        # Resolve the scheduler before optimising: optimising a parquet read may compute
        # file statistics inside a temporary dask config, and a first import of distributed
        # there (dask's own scheduler lookup) would lose its settings when that config ends.
        get_scheduler()
        # Optimised first, so that the partitions counted here are those computed (reading
        # fewer columns, dask may merge small partitions).
        # (Optimised once only: dask may fail on a graph optimised twice.)
        selected = _unmarked(data)[_columns(measures, grouping, bounding)]
        if bounding is not None:
            selected = _canonical_ids(selected, bounding.unit)
        frame = selected.optimize()
        by_unit = None if bounding is None else unit_divisions(frame, bounding.unit)
        public = grouping
        inputs: list[Delayed] | None = None
        if bounding is not None and by_unit is None:  # units may span partitions: gather them
            coded, grouping = _coded(selected, grouping, measures, bounding)
            frame = coded.optimize()
            # (ids may be relabelled unless the release reads them as values)
            relabel = bounding.unit not in _columns(measures, grouping, None)
            inputs = exchange(frame.to_delayed(optimize_graph=False), bounding.unit, relabel)
        if inputs is None:
            inputs = frame.to_delayed(optimize_graph=False)
        divisions: list[Division | None] = list(by_unit or [None] * len(inputs))
        partition_bounding: list[Bounding | None] = [None] * len(inputs)
        if bounding is not None:
            source = bounding.spawn() if bounding.spawn is not None else SystemPriorities()
            partition_bounding = [
                dataclasses.replace(bounding, priorities=source.for_partition(i), spawn=None)
                for i in range(len(inputs))
            ]
        observed = grouping is not None and grouping.keys is None
        total = _aggregated(inputs, measures, grouping, partition_bounding, divisions, observed)
        (result,) = compute(total)
        if grouping is not public:  # coded before the shuffle: the codes' public keys
            assert public is not None
            return Aggregates(public.keys, result.values)
        return result


DASK = DaskEngine()
