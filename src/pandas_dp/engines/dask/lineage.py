"""What a Dask collection's expression graph proves about its rows since ``protect``.

A Dask collection keeps no rows in memory, so nothing can be checked against labels as on
pandas. Instead every release reads the collection's expression graph (``ddf.expr``,
public: it is the caller's code, not the data) back to the identity layer that ``protect``
inserted, and accepts it only if each step on the way is on an allow-list. The decision
depends on the operations only, never on values, and costs nothing at run time. Anything
not listed is refused (fail closed). Two rules:

**The unit column keeps its protect-time ids** (user-level privacy,
:func:`rewriting_step`):

- row selections and reorderings (filters, ``query``, ``loc``, ``dropna``, ``sample``,
  ``partitions[...]``, ``repartition``, ``sort_values``, ``reset_index``);
- column selections and ``drop``; ``assign``, ``fillna``, ``astype`` and ``rename`` that do
  not write the unit column (nor name another column after it);
- ``concat`` of collections that each pass (the caps bound the copies as one unit's rows);
- ``priv.dp.merge`` with a public table (:func:`~pandas_dp.engines.dask.rows.joined_lookup`:
  the library's own row-local join, recognised by its function and public lookup), when it
  neither renames the unit column nor writes a public column under its name; repeated
  public keys included, as the caps bound each unit's rows whatever the join made of them;
- ``persist()`` of the protected collection itself (its partitions keep the name of the
  ``protect`` layer).

**No row can appear twice** (row-level privacy, :func:`duplicating_step`). Steps are
accepted for what they provably do to the rows, never for their name or declared dtype
(:mod:`pandas_dp.engines.dask.rows` lists them): boolean-mask filters whose mask is a
comparison or a test derived from the same collection, ``query`` and ``eval`` of plain
comparisons and elementwise arithmetic of columns, row subsets that cannot repeat a row
(``dropna``, ``head``, ``sample`` without replacement, ...), column selections, ``assign``
and elementwise steps of inputs derived from one collection, ``priv.dp.merge`` with unique
public keys, and ``persist()`` of the protected collection itself.

Refused by both: Dask's own ``merge`` (of any data), ``explode``, ``melt``, group-bys and
reductions, ``set_index``, ``shuffle``, ``map_partitions`` with a function of the caller's,
``persist`` after other steps, and (for rows) every ``concat``: their effect on the rows
cannot be read from the graph.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Any

import dask.dataframe as dd
import pandas as pd

from pandas_dp.engines.dask.rows import Inputs, aligned_base, joined_lookup, row_inputs
from pandas_dp.engines.protocol import Origin

#: A frame expression's collection (dask's constructor, typed).
collection: Callable[[Any], dd.DataFrame] = dd.DataFrame


def unchanged(partition: pd.DataFrame, tag: str) -> pd.DataFrame:
    """Identity on partitions: the ``protect`` layer (see ``DaskEngine.with_attrs``).

    ``tag`` makes the expression's name unique; lineage passes through it.
    """
    return partition


#: Steps that select or reorder rows or columns: their unit column is their input's.
_PASS_THROUGH = frozenset(
    {
        "Filter", "Query", "Loc", "Projection", "Drop", "DropnaFrame", "Sample", "Partitions",
        "Repartition", "RepartitionToFewer", "RepartitionToMore", "RepartitionDivisions",
        "RepartitionNpartitions", "SortValues", "ResetIndex", "Head", "Tail",
    }
)  # fmt: skip


def rewriting_step(expr: Any, unit: Hashable, is_origin: Origin, origin: str) -> str | None:
    """The first step between ``expr`` and its protect-time origin that may rewrite ``unit``.

    Parameters
    ----------
    expr : dask expression
        ``ddf.expr`` of the collection a release reads.
    unit : label
        The privacy-unit column.
    is_origin : callable
        Given a meta frame's ``attrs``, whether it is this session's own ``protect`` layer.
    origin : str
        The name of that layer's expression: ``persist()`` of the protected collection
        itself holds the partitions under that name (any later step's name differs).

    Returns
    -------
    str or None
        A short description of the offending step (its class name), or None when every path
        back to the origin leaves the unit column as ``protect`` saw it.
    """
    return _first_refused(
        expr, is_origin, origin, lambda node, kind: _unit_inputs(node, kind, unit)
    )


def duplicating_step(expr: Any, is_origin: Origin, origin: str) -> str | None:
    """The first step between ``expr`` and its origin that may repeat a row, or None.

    Parameters as for :func:`rewriting_step` (without a unit).
    """
    return _first_refused(expr, is_origin, origin, row_inputs)


def aligned_frame(expr: Any, unit: Hashable) -> dd.DataFrame | None:
    """The frame holding ``unit`` that a Series was derived from elementwise, or None.

    Such a Series holds one value per row of that frame, at the same place and under the
    same label, so the frame can carry it next to its unit ids (``assign`` then pairs them
    row by row). None when the Series went through any other step (a filter of the Series
    itself, a reduction, ...) or its frame lacks the unit column.
    """
    base = aligned_base(expr)
    if base.ndim != 2 or unit not in base._meta.columns:
        return None
    return collection(base)


def _first_refused(expr: Any, is_origin: Origin, origin: str, rule: Callable) -> str | None:
    """Walk every path from ``expr`` back to the origin; the first step ``rule`` refuses."""
    pending = [expr]
    seen: set[str] = set()
    while pending:
        node = pending.pop()
        if node._name in seen:
            continue
        seen.add(node._name)
        kind = type(node).__name__
        if kind == "MapPartitions" and node.operand("func") is unchanged:
            if is_origin(node._meta.attrs):
                continue
            return "a layer of another pandas-dp session"
        if kind == "FromGraph":  # persisted: the graph is gone, only the keys' names remain
            if {key[0] for key in node.operand("keys")} == {origin}:
                continue
            return "persist after other steps"
        if not node.dependencies():  # a source (a reader, from_pandas) before any protect
            return f"{kind}, data that did not pass through this session's protect on Dask"
        inputs = rule(node, kind)
        if isinstance(inputs, str):
            return inputs
        pending.extend(inputs)
    return None


def _unit_inputs(node: Any, kind: str, unit: Hashable) -> Inputs:
    if kind == "Concat":
        return list(node.dependencies())
    if kind == "MapPartitions":  # only pandas-dp's own join, if it leaves the unit alone
        lookup = joined_lookup(node)
        if lookup is None or not lookup.keeps(list(node.frame._meta.columns), unit):
            return kind
        return [node.frame]
    if kind not in _PASS_THROUGH and not _keeps_column(node, kind, unit):
        return kind
    return [node.frame]


def _keeps_column(node: Any, kind: str, unit: Hashable) -> bool:
    """Whether a column-writing step leaves ``unit`` alone (public arguments only)."""
    if kind == "Assign":
        return unit not in node.operands[1::2]
    if kind in ("Fillna", "AsType"):
        mapping = node.operands[1]
        return isinstance(mapping, Mapping) and unit not in mapping
    if kind == "RenameFrame":
        mapping = node.operand("columns")
        if not isinstance(mapping, Mapping):
            return False
        return unit not in mapping and unit not in mapping.values()
    return False
