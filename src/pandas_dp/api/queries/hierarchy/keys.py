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

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import numpy.typing as npt
import pandas as pd

from pandas_dp.api.queries.hierarchy.forms import (
    check_level,
    check_siblings,
    is_list_like,
    is_missing,
    names_columns,
    nested_form,
    path_form,
    per_level,
    values_of,
)
from pandas_dp.errors import DPTypeError, DPValueError
from pandas_dp.mechanisms.consistency import Tree

I64 = npt.NDArray[np.int64]
Path = tuple[object, ...]


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


def parse_hierarchy(
    by: tuple[Hashable, ...], keys: object, margins_name: Hashable = "All"
) -> Hierarchy:
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
    if isinstance(keys, Mapping) and names_columns(by, keys):
        if set(keys) != set(by):
            raise DPValueError(
                f"keys has entries for {sorted(map(str, keys))} but by is {list(map(str, by))}; "
                "a per-level dict needs one entry per column (or give a nested dict of values)"
            )
        labels, sizes = per_level(by, keys)
    elif isinstance(keys, Mapping):
        if len(by) == 1:
            raise DPTypeError(
                f"with one column, keys must be a list of values or {{{by[0]!r}: [...]}}"
            )
        labels, sizes = nested_form(by, keys)
    elif isinstance(keys, pd.MultiIndex) or (len(by) > 1 and is_list_like(keys)):
        labels, sizes = path_form(by, keys)
    else:
        values = values_of(keys, by[0])
        check_siblings(values, by[0], ())
        labels, sizes = [values], [np.array([len(values)], dtype=np.int64)]
    indexes = tuple(pd.Index(level, tupleize_cols=False) for level in labels)
    for column, index in zip(by, indexes, strict=True):
        check_level(column, index, margins_name)
    return Hierarchy(by, indexes, Tree(sizes), margins_name)


def _check_margins_name(name: object) -> None:
    try:
        hash(name)
    except TypeError:
        raise DPTypeError(f"margins_name must be hashable, got {type(name).__name__}") from None
    if is_missing(name):
        raise DPValueError("margins_name cannot be missing (NaN/None); the default is 'All'")
