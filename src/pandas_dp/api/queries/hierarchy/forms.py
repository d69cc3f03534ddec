"""The accepted forms of hierarchy keys (per-level dict, nested dict, leaf paths), parsed.

Each parser returns the labels of every level and, per level, how many children each node
of the level above has; :func:`~pandas_dp.api.queries.hierarchy.keys.parse_hierarchy`
builds the tree from them. Public input only: nothing here reads the data.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
from pandas.api import types as ptypes

from pandas_dp.errors import DPTypeError, DPValueError

I64 = npt.NDArray[np.int64]
#: A node by the labels from the top: public keys (hashability is checked as they are read).
Path = tuple[object, ...]
#: Each level's labels, top first.
Levels = list[list[object]]


def is_missing(value: object) -> bool:
    """Whether a key is missing (NaN, None, NaT, NA): those never match a row."""
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, float | np.floating) and math.isnan(value)


def is_list_like(value: object) -> bool:
    """A list-like that is not a mapping (mappings are the dict forms)."""
    return bool(ptypes.is_list_like(value)) and not isinstance(value, Mapping)


def values_of(keys: object, column: Hashable, parent: Path | None = None) -> list[object]:
    """A non-empty list of key values (refusing a bare string or a scalar)."""
    where = f"keys for {column!r}" + ("" if not parent else f" under {_show(parent)}")
    if isinstance(keys, str | bytes) or not is_list_like(keys) or not isinstance(keys, Iterable):
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


def check_level(column: Hashable, level: pd.Index, margins_name: Hashable) -> None:
    """Refuse missing, repeated or reserved (``margins_name``) labels in one level."""
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


def check_siblings(values: list[object], column: Hashable, parent: Path) -> None:
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


def names_columns(by: tuple[Hashable, ...], keys: Mapping[object, object]) -> bool:
    """Whether a dict is meant as the per-level form: some of its keys are ``by`` columns."""
    return any(key in by for key in keys)


def per_level(by: tuple[Hashable, ...], keys: Mapping[object, object]) -> tuple[Levels, list[I64]]:
    """Parse the per-level dict form (see the module docstring of ``hierarchy.keys``)."""
    top = values_of(keys[by[0]], by[0])
    check_siblings(top, by[0], ())
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
    column: Hashable, spec: object, paths: list[Path], parent_labels: list[object]
) -> list[list[object]]:
    """The children of each parent (in order) from one level's entry of a per-level dict."""
    if not isinstance(spec, Mapping):
        shared = values_of(spec, column)  # the same children under every parent
        check_siblings(shared, column, ())
        return [shared] * len(paths)
    counts: dict[object, int] = {}
    for label in parent_labels:
        counts[label] = counts.get(label, 0) + 1
    used: set[object] = set()
    out = []
    for path in paths:
        if path in spec:
            key: object = path
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
        group = values_of(spec[key], column, path)
        check_siblings(group, column, path)
        out.append(group)
    unknown = [key for key in spec if key not in used]
    if unknown:
        raise DPValueError(
            f"keys for {column!r} name parents that are not in the level above: "
            f"{unknown[:5]!r}{' ...' if len(unknown) > 5 else ''}"
        )
    return out


def nested_form(
    by: tuple[Hashable, ...], keys: Mapping[object, object]
) -> tuple[Levels, list[I64]]:
    """Parse the nested dict form: parent value → children → ... → list of leaves."""
    nodes: list[tuple[Path, object]] = [((), keys)]
    labels: Levels = []
    sizes: list[I64] = []
    for depth, column in enumerate(by):
        last = depth == len(by) - 1
        level: list[object] = []
        counts = []
        below: list[tuple[Path, object]] = []
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
            mapping = spec if isinstance(spec, Mapping) else {}  # spec, above the leaves
            children = list(mapping) if not last else values_of(spec, column, path)
            if not children:
                raise DPValueError(
                    f"keys for {column!r} under {_show(path)} are empty; every node of the "
                    "hierarchy needs at least one child"
                )
            check_siblings(children, column, path)
            level.extend(children)
            counts.append(len(children))
            if not last:
                below.extend(((*path, child), mapping[child]) for child in children)
        labels.append(level)
        sizes.append(np.array(counts, dtype=np.int64))
        nodes = below
    return labels, sizes


def path_form(by: tuple[Hashable, ...], keys: object) -> tuple[Levels, list[I64]]:
    """Parse leaf paths (a MultiIndex or list of tuples); parents are their prefixes."""
    if isinstance(keys, pd.MultiIndex):
        if keys.nlevels != len(by):
            raise DPValueError(
                f"keys have {keys.nlevels} levels but by has {len(by)} columns: {list(by)}"
            )
        paths = list(keys)
    else:
        paths = values_of(keys, "keys")
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
    return nested_form(by, _leaves_to_lists(tree, len(by)))


def _leaves_to_lists(tree: dict[Any, Any], depth: int) -> dict[Any, Any]:
    if depth == 2:
        return {parent: list(children) for parent, children in tree.items()}
    return {parent: _leaves_to_lists(children, depth - 1) for parent, children in tree.items()}
