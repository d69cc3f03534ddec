"""Public keys of a hierarchy: nested dicts, per-level dicts or leaf paths, parsed into a tree.

The keys say which nodes a hierarchical table has at every level. Like group-by keys they
are public input, never read from the data, and everything here runs before any data is
touched. Accepted forms, for ``by=["region", "district"]`` (any number of levels):

- a **per-level dict** whose keys are exactly the ``by`` columns: the first column's values
  as a list; for every further column either a dict from parent to its children, or one
  list given to every parent (every combination). A parent is named by its own value, or by
  its full path (a tuple) when its value repeats under several grandparents::

      {"region": ["north", "south"],
       "district": {"north": ["n1", "n2"], "south": ["s1"]}}

- a **nested dict** (a tree): parent value → dict of children → ... → list of leaves::

      {"north": ["n1", "n2"], "south": ["s1"]}
      {"north": {"n1": ["t1", "t2"]}, "south": {"s1": ["t3"]}}     # three levels

- the **leaf paths**: a ``pd.MultiIndex`` or a list of tuples, one per leaf; the nodes above
  are their distinct prefixes. Children are grouped under their parent in the order in which
  they first appear.

With one column, a list of values (or ``{column: values}``). A dict in which any key is one
of the ``by`` columns is read as the per-level form (and must then name every column).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
from pandas.api import types as ptypes

from pandas_dp.errors import DPTypeError, DPValueError
from pandas_dp.mechanisms.consistency import Tree

I64 = npt.NDArray[np.int64]
Path = tuple[Any, ...]


@dataclass(frozen=True, eq=False)
class Hierarchy:
    """A validated public hierarchy: the tree and every node's own label, level by level.

    Attributes
    ----------
    by : tuple of labels
        The columns, outermost first (level 1 is ``by[0]``; level 0 is the total).
    labels : tuple of pandas.Index
        For each level below the root, each node's own value, in tree order (the children
        of each parent together, parents in order).
    tree : Tree
        How many children each node has.
    margins_name : label
        The label standing for "all values" in the rows of totals.
    """

    by: tuple[Hashable, ...]
    labels: tuple[pd.Index, ...]
    tree: Tree
    margins_name: Hashable

    @cached_property
    def ancestors(self) -> tuple[tuple[I64, ...], ...]:
        """``ancestors[d][k - 1]``: position in level ``k`` of each level-``d`` node's ancestor."""
        out: list[tuple[I64, ...]] = [()]
        for depth in range(1, self.tree.levels):
            own = np.arange(self.tree.widths[depth], dtype=np.int64)
            parents = self.tree.parents(depth)
            out.append((*(chain[parents] for chain in out[depth - 1]), own))
        return tuple(out)

    @cached_property
    def _prefixes(self) -> tuple[pd.Index, ...]:
        indexes = []
        for depth in range(1, self.tree.levels):
            if depth == 1:
                indexes.append(self.labels[0].rename(self.by[0]))
                continue
            chains = self.ancestors[depth]
            arrays = [self.labels[k].take(chain) for k, chain in enumerate(chains)]
            indexes.append(pd.MultiIndex.from_arrays(arrays, names=list(self.by[:depth])))
        return tuple(indexes)

    def prefixes(self, depth: int) -> pd.Index:
        """The paths of the nodes of level ``depth`` (>= 1), named by ``by[:depth]``."""
        return self._prefixes[depth - 1]

    @property
    def leaves(self) -> pd.Index:
        """The leaf paths: the public keys of the finest grouping."""
        return self._prefixes[-1]

    @cached_property
    def table_index(self) -> tuple[pd.Index, I64]:
        """Every node's index in pre-order (root, then each parent followed by its subtree).

        Returns the index and, for each of its rows, the node's position in the levels
        concatenated root first. Rows of totals carry ``margins_name`` in the levels below.
        """
        columns = len(self.by)
        order_keys: list[I64] = []
        codes: list[I64] = []
        for k in range(columns):
            parts = [
                self.ancestors[depth][k] if depth > k else np.full(width, -1, dtype=np.int64)
                for depth, width in enumerate(self.tree.widths)
            ]
            order_keys.append(np.concatenate(parts))
        order = np.lexsort(order_keys[::-1])  # first column is the primary key; -1 sorts first
        for k in range(columns):
            chain = order_keys[k][order]
            codes.append(np.where(chain < 0, len(self.labels[k]), chain))
        vocab = [
            labels.append(pd.Index([self.margins_name], dtype=object)) for labels in self.labels
        ]
        arrays = [v.take(c) for v, c in zip(vocab, codes, strict=True)]
        if columns == 1:
            return pd.Index(arrays[0], name=self.by[0], tupleize_cols=False), order
        return pd.MultiIndex.from_arrays(arrays, names=list(self.by)), order


def parse_hierarchy(by: tuple[Hashable, ...], keys: Any, margins_name: Any = "All") -> Hierarchy:
    """Turn the user's hierarchy keys into a :class:`Hierarchy` (see the module docstring).

    Raises
    ------
    DPTypeError
        If keys are not one of the accepted forms, or a key is unhashable.
    DPValueError
        If a node has no children, siblings repeat, a key is missing (NaN/None), the forms'
        levels do not match ``by``, or a key equals ``margins_name``.
    """
    _check_margins_name(margins_name)
    if keys is None:
        raise DPValueError(
            f"a hierarchy over {list(by)} needs public keys: pass keys= (a nested dict, a "
            "{column: ...} dict per level, or a MultiIndex of leaf paths), or protect the "
            "frame with a schema whose isin checks list each column's values. Keys are never "
            "chosen from the data for a hierarchy"
        )
    if isinstance(keys, Mapping) and _names_columns(by, keys):
        if set(keys) != set(by):
            raise DPValueError(
                f"keys has entries for {sorted(map(str, keys))} but by is {list(map(str, by))}; "
                "a per-level dict needs one entry per column (or give a nested dict of values)"
            )
        labels, sizes = _per_level(by, keys)
    elif isinstance(keys, Mapping):
        if len(by) == 1:
            raise DPTypeError(
                f"with one column, keys must be a list of values or {{{by[0]!r}: [...]}}"
            )
        labels, sizes = _nested(by, keys)
    elif isinstance(keys, pd.MultiIndex) or (len(by) > 1 and _is_list_like(keys)):
        labels, sizes = _from_paths(by, keys)
    else:
        values = _values(keys, by[0])
        _siblings(values, by[0], ())
        labels, sizes = [values], [np.array([len(values)], dtype=np.int64)]
    indexes = tuple(pd.Index(level, tupleize_cols=False) for level in labels)
    for column, index in zip(by, indexes, strict=True):
        _check_level(column, index, margins_name)
    return Hierarchy(by, indexes, Tree(sizes), margins_name)


def _check_margins_name(name: Any) -> None:
    try:
        hash(name)
    except TypeError:
        raise DPTypeError(f"margins_name must be hashable, got {type(name).__name__}") from None
    if _missing(name):
        raise DPValueError("margins_name cannot be missing (NaN/None); the default is 'All'")


def _missing(value: Any) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, float | np.floating) and math.isnan(value)


def _is_list_like(value: Any) -> bool:
    return bool(ptypes.is_list_like(value)) and not isinstance(value, Mapping)


def _values(keys: Any, column: Hashable, parent: Path | None = None) -> list[Any]:
    """A non-empty list of key values (refusing a bare string or a scalar)."""
    where = f"keys for {column!r}" + ("" if not parent else f" under {_show(parent)}")
    if isinstance(keys, str | bytes) or not _is_list_like(keys):
        raise DPTypeError(
            f"{where} must be a list of values, got {type(keys).__name__} "
            f"(write [{keys!r}] for a single key)"
        )
    values = list(keys)
    if not values:
        raise DPValueError(
            f"{where} is empty; every node of the hierarchy needs at least one child"
        )
    return values


def _show(path: Path) -> str:
    return repr(path[0]) if len(path) == 1 else repr(path)


def _check_level(column: Hashable, level: pd.Index, margins_name: Hashable) -> None:
    if level.hasnans:
        raise DPValueError(
            f"keys for {column!r} contain a missing value (NaN/None); rows with a missing key "
            "are dropped. Map missing values to a category of their own first, e.g. "
            f"df.assign({column}=df[{column!r}].fillna('unknown'))"
        )
    if margins_name in level:
        raise DPValueError(
            f"margins_name={margins_name!r} is also a key of {column!r}, so its rows of totals "
            "would be ambiguous; pass another label, e.g. margins_name='Total'"
        )


def _siblings(values: list[Any], column: Hashable, parent: Path) -> None:
    """Refuse unhashable or repeated children of one parent."""
    where = f" under {_show(parent)}" if parent else ""
    try:
        distinct = len(set(values))
    except TypeError:
        kinds = sorted({type(v).__name__ for v in values if not isinstance(v, Hashable)})
        raise DPTypeError(
            f"keys for {column!r}{where} must be hashable, got a {', '.join(kinds)}"
        ) from None
    if distinct != len(values):
        raise DPValueError(f"keys for {column!r}{where} contain duplicates; list each once")


def _names_columns(by: tuple[Hashable, ...], keys: Mapping[Any, Any]) -> bool:
    """Whether a dict is meant as the per-level form: some of its keys are ``by`` columns."""
    return any(key in by for key in keys)


def _per_level(
    by: tuple[Hashable, ...], keys: Mapping[Any, Any]
) -> tuple[list[list[Any]], list[I64]]:
    top = _values(keys[by[0]], by[0])
    _siblings(top, by[0], ())
    paths: list[Path] = [(value,) for value in top]
    labels, sizes = [top], [np.array([len(top)], dtype=np.int64)]
    for column in by[1:]:
        spec = keys[column]
        children = _children_by_parent(column, spec, paths, labels[-1])
        labels.append([child for group in children for child in group])
        sizes.append(np.array([len(group) for group in children], dtype=np.int64))
        paths = [
            (*path, child) for path, group in zip(paths, children, strict=True) for child in group
        ]
    return labels, sizes


def _children_by_parent(
    column: Hashable, spec: Any, paths: list[Path], parent_labels: list[Any]
) -> list[list[Any]]:
    """The children of each parent (in order) from one level's entry of a per-level dict."""
    if not isinstance(spec, Mapping):
        shared = _values(spec, column)  # the same children under every parent
        _siblings(shared, column, ())
        return [shared] * len(paths)
    counts: dict[Any, int] = {}
    for label in parent_labels:
        counts[label] = counts.get(label, 0) + 1
    used: set[Any] = set()
    out = []
    for path in paths:
        if path in spec:
            key: Any = path
        elif path[-1] in spec and counts[path[-1]] == 1:
            key = path[-1]
        elif path[-1] in spec:
            raise DPValueError(
                f"keys for {column!r}: the parent {path[-1]!r} appears under several "
                f"parents of its own; name it by its full path instead, e.g. {path!r}"
            )
        else:
            raise DPValueError(
                f"keys for {column!r} give no children for {_show(path)}; every node of the "
                "hierarchy needs at least one child (or leave it out of the level above)"
            )
        used.add(key)
        group = _values(spec[key], column, path)
        _siblings(group, column, path)
        out.append(group)
    unknown = [key for key in spec if key not in used]
    if unknown:
        raise DPValueError(
            f"keys for {column!r} name parents that are not in the level above: "
            f"{unknown[:5]!r}{' ...' if len(unknown) > 5 else ''}"
        )
    return out


def _nested(by: tuple[Hashable, ...], keys: Mapping[Any, Any]) -> tuple[list[list[Any]], list[I64]]:
    nodes: list[tuple[Path, Any]] = [((), keys)]
    labels: list[list[Any]] = []
    sizes: list[I64] = []
    for depth, column in enumerate(by):
        last = depth == len(by) - 1
        level: list[Any] = []
        counts = []
        below: list[tuple[Path, Any]] = []
        for path, spec in nodes:
            if last and isinstance(spec, Mapping):
                raise DPTypeError(
                    f"keys under {_show(path)} must be a list of {column!r} values, the last of "
                    f"the {len(by)} columns {list(by)}; got a dict (one level too many)"
                )
            if not last and not isinstance(spec, Mapping):
                where = f"under {_show(path)}" if path else "at the top"
                raise DPTypeError(
                    f"nested keys {where} must be a dict of {column!r} values to their "
                    f"children ({len(by)} levels: {list(by)}), got {type(spec).__name__}"
                )
            children = list(spec) if not last else _values(spec, column, path)
            if not children:
                raise DPValueError(
                    f"keys for {column!r} under {_show(path)} are empty; every node of the "
                    "hierarchy needs at least one child"
                )
            _siblings(children, column, path)
            level.extend(children)
            counts.append(len(children))
            if not last:
                below.extend(((*path, child), spec[child]) for child in children)
        labels.append(level)
        sizes.append(np.array(counts, dtype=np.int64))
        nodes = below
    return labels, sizes


def _from_paths(by: tuple[Hashable, ...], keys: Any) -> tuple[list[list[Any]], list[I64]]:
    if isinstance(keys, pd.MultiIndex):
        if keys.nlevels != len(by):
            raise DPValueError(
                f"keys have {keys.nlevels} levels but by has {len(by)} columns: {list(by)}"
            )
        paths = list(keys)
    else:
        paths = _values(keys, "keys")
    if not paths:
        raise DPValueError("keys is empty; pass at least one leaf path")
    tree: dict[Any, Any] = {}
    for path in paths:
        if not isinstance(path, tuple) or len(path) != len(by):
            raise DPValueError(
                f"with by={list(by)}, leaf paths must be {len(by)}-tuples (or give a nested "
                f"dict); got an entry {path!r}"
            )
        try:
            hash(path)
        except TypeError:
            raise DPTypeError(f"leaf paths must hold hashable values, got {path!r}") from None
        node = tree
        for value in path[:-1]:
            node = node.setdefault(value, {})
        if path[-1] in node:
            raise DPValueError(f"keys list the leaf path {path!r} twice; list each once")
        node[path[-1]] = None
    return _nested(by, _leaves_to_lists(tree, len(by)))


def _leaves_to_lists(tree: dict[Any, Any], depth: int) -> dict[Any, Any]:
    if depth == 2:
        return {parent: list(children) for parent, children in tree.items()}
    return {parent: _leaves_to_lists(children, depth - 1) for parent, children in tree.items()}
