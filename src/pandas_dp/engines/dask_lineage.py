"""Whether a Dask collection's privacy-unit column still holds its protect-time ids.

A Dask collection keeps no row labels in memory, so the ids cannot be pinned by label as on
pandas (:mod:`pandas_dp.api.unit_ids`). Instead every release reads the collection's
expression graph (``ddf.expr``, public: it is the caller's code, not the data) from the
collection back to the identity layer that ``protect`` inserted, and accepts it only if each
step on the way provably leaves the unit column's values untouched:

- row selections and reorderings (filters, ``query``, ``loc``, ``dropna``, ``sample``,
  ``partitions[...]``, ``repartition``, ``sort_values``, ``reset_index``);
- column selections and ``drop``; ``assign``, ``fillna``, ``astype`` and ``rename`` that do
  not write the unit column (nor name another column after it);
- ``concat`` of collections that each pass;
- ``persist()`` of the protected collection itself (its partitions keep the name of the
  ``protect`` layer).

Anything else (``assign``/``where``/``replace``/``mask`` of the unit column, ``map_partitions``
with a function of the caller's, ``persist`` after other steps, merges) is refused: its effect
on the ids cannot be read from the graph. The decision depends on the operations only, never
on values.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Any

from pandas_dp.engines.dask_engine import _unchanged

#: Steps that select or reorder rows or columns: their unit column is their input's.
_PASS_THROUGH = frozenset(
    {
        "Filter", "Query", "Loc", "Projection", "Drop", "DropnaFrame", "Sample", "Partitions",
        "Repartition", "RepartitionToFewer", "RepartitionToMore", "RepartitionDivisions",
        "RepartitionNpartitions", "SortValues", "ResetIndex", "Head", "Tail",
    }
)  # fmt: skip


def rewriting_step(
    expr: Any, unit: Hashable, is_origin: Callable[[Mapping[str, Any]], bool], origin: str
) -> str | None:
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
    pending = [expr]
    seen: set[str] = set()
    while pending:
        node = pending.pop()
        if node._name in seen:
            continue
        seen.add(node._name)
        kind = type(node).__name__
        if kind == "MapPartitions" and node.operand("func") is _unchanged:
            if is_origin(node._meta.attrs):
                continue
            return "a layer of another pandas-dp session"
        if kind == "FromGraph":  # persisted: the graph is gone, only the keys' names remain
            if {key[0] for key in node.operand("keys")} == {origin}:
                continue
            return "persist after other steps"
        if kind == "Concat":
            pending.extend(node.dependencies())
            continue
        if kind not in _PASS_THROUGH and not _keeps_column(node, kind, unit):
            return kind
        pending.append(node.frame)
    return None


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
