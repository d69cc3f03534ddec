"""Which Dask expression steps provably keep each of their input's rows at most once.

The per-step rule of :func:`~pandas_dp.engines.dask.lineage.duplicating_step` (row-level
privacy: no row can appear twice), which walks a release's expression graph back to
``protect`` and asks :func:`row_inputs` about every step on the way. Steps are accepted for
what they provably do to the rows, never for their name or declared dtype:

- a boolean-mask filter (``priv[mask]``, ``priv.loc[mask]``) whose mask is one column
  derived by elementwise steps from the same collection as the frame it filters (so the two
  line up row by row, partition by partition), and boolean by construction: a comparison,
  ``isna``, ``notna``, ``isin``, ``between``, an ``eval`` of a comparison, or ``&``, ``|``,
  ``^``, ``~`` of such masks. pandas reads a mask that is not boolean as labels, which can
  repeat a row, and a declared dtype (``meta=bool``, ``astype(bool)``, which Dask's optimizer
  may drop from a mask) proves nothing about the values;
- ``query`` only of a plain boolean comparison of columns (parsed here: comparisons,
  ``and``/``or``/``not``/``&``/``|``/``~`` of them, column names, constants and arithmetic;
  no calls, attributes, subscripts, ``index`` or ``@`` variables) and without resolvers or
  local variables; ``eval`` likewise only of such elementwise expressions;
- ``dropna``, ``head``, ``sample`` without replacement, ``partitions[...]`` naming each
  partition once, ``repartition``, ``sort_values``, ``reset_index``;
- ``priv.dp.merge`` with a public table whose keys are unique (:func:`joined_lookup`: a
  ``map_partitions`` of the library's own row-local join, recognised by its function and
  its public lookup, never by a name);
- column selections, ``assign`` (the frame's rows, whatever the values), and elementwise
  steps (arithmetic, comparisons, ``clip``, ``fillna``, ``astype``, ``map``, ``where``,
  ``rename``, ``to_frame``, ...) whose inputs were all derived from one collection by such
  steps, so that pandas combines them row by row (inputs derived differently would be
  aligned by label, and an outer join of labels can repeat rows).

Refused for rows: ``loc`` with labels (a list, a slice or a scalar), a mask derived from
another collection (another frame, the frame filtered differently, ``map_partitions``), a
mask that is not a comparison (a boolean column as is: compare it, ``priv[priv["flag"] ==
True]``), any other ``query`` (write the filter as a boolean mask, e.g. ``priv[priv["x"] > 0]``),
``sample(replace=True)``, ``partitions[...]`` naming a partition twice, any other
``map_partitions`` (a function of the caller's), and ``priv.dp.merge`` with repeated public
keys (refused by ``merge`` itself at row level, before it builds anything).

Also here: :func:`aligned_base`, the collection a Series or frame was derived from by
elementwise steps (what lines up with it row by row), and the parsing of ``query`` and
``eval`` expressions (:mod:`pandas_dp.engines.expressions` checks the parsed trees).
"""

from __future__ import annotations

import ast
from typing import Any

from pandas_dp.engines.expressions import is_elementwise, is_mask
from pandas_dp.engines.lookup import Lookup, join_rows

#: Steps that keep a subset of their input's rows, each once, whatever their arguments
#: (``Sample`` and ``Partitions`` are checked further below). Filters, ``query``, ``eval``
#: and ``loc`` are not here: what they do depends on their arguments (:func:`row_inputs`).
_ROW_SUBSETS = frozenset(
    {
        "DropnaFrame", "DropnaSeries", "Sample", "Partitions", "Repartition",
        "RepartitionToFewer", "RepartitionToMore", "RepartitionDivisions",
        "RepartitionNpartitions", "SortValues", "ResetIndex", "Head", "Tail",
    }
)  # fmt: skip

#: ``loc`` with labels (a list, a slice, a scalar): a label may name several rows, or one
#: row several times; only a boolean mask provably selects each row at most once.
_LOC_LABELS = frozenset({"LocList", "LocEmpty", "LocSlice", "LocElement", "LocUnknown"})

#: Steps whose result is boolean whatever their inputs' values (comparisons, tests).
_BOOLEAN = frozenset(
    {
        "EQ", "NE", "LT", "LE", "GT", "GE", "EQSeries", "NESeries", "LTSeries", "LESeries",
        "GTSeries", "GESeries", "EQFrame", "NEFrame", "LTFrame", "LEFrame", "GTFrame",
        "GEFrame", "IsNa", "NotNull", "Isin", "Between",
    }
)  # fmt: skip

#: Logical steps: boolean when all their inputs are (``&`` of integers is an integer).
_LOGICAL = frozenset({"And", "Or", "XOr", "Invert"})

#: ``s.eq(t)`` and the like (``MethodOperator``): boolean whatever the values.
_COMPARISON_METHODS = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})

#: Elementwise steps: each output row is its input's row at the same place, same label.
_ELEMENTWISE = frozenset(
    {
        "Projection", "Abs", "AsType", "Between", "Clip", "Fillna", "IsNa", "NotNull", "Isin",
        "Invert", "Neg", "Pos", "Round", "Sqrt", "Map", "Apply", "Where", "Mask", "Replace",
        "RenameFrame", "RenameSeries", "ToFrame", "ToNumeric", "ToDatetime", "ToTimedelta",
        "ToTimestamp", "ArrowStringConversion", "Eval", "CaseWhen", "AddPrefix", "AddSuffix",
        "AddPrefixSeries", "AddSuffixSeries", "Drop", "MethodOperator",
    }
)  # fmt: skip

#: What a rule answers for one step: the inputs to trace further, or why it is refused.
Inputs = list[Any] | str


def row_inputs(node: Any, kind: str) -> Inputs:
    """The inputs of one step (``kind``: its class name) that keep each row at most once.

    Those inputs are traced further; a string says why the step may repeat a row instead.
    """
    if kind == "Filter":  # priv[mask]
        return _mask_inputs(node.frame, node.predicate, "a filter")
    if kind == "Loc":  # priv.loc[mask]: a mask that is not boolean is read as labels
        return _mask_inputs(node.frame, node.operand("iindexer"), "loc")
    if kind in _LOC_LABELS:
        return "loc with labels: write the filter as a boolean mask, e.g. priv[priv['x'] > 0]"
    if kind == "Query":
        if not _plain_comparison(node):
            return (
                "query of anything but a plain comparison of columns: write the filter as a "
                "boolean mask, e.g. priv[priv['x'] > 0]"
            )
        return [node.frame]
    if kind in _ROW_SUBSETS:
        repeats = _repeats(node, kind)
        return repeats if repeats else [node.frame]
    if kind == "Assign":  # pandas aligns the values to the frame: its rows, each once
        return [node.frame]
    if kind == "MapPartitions":  # only pandas-dp's own join with a public table
        lookup = joined_lookup(node)
        if lookup is None:
            return kind
        if lookup.repeats:
            return "merge with repeated public keys (one-to-many)"
        return [node.frame]
    if kind == "Eval" and not _elementwise_eval(node):
        return "eval of anything but elementwise arithmetic and comparisons of columns"
    if _is_elementwise(node, kind):
        operands = _collections(node)
        bases = {aligned_base(operand)._name for operand in operands}
        if len(bases) == 1:
            return operands[:1]
        return f"{kind} of collections derived differently"
    return kind


def joined_lookup(node: Any) -> Lookup | None:
    """The public lookup of a step that is pandas-dp's own ``priv.dp.merge``, else None.

    Recognised by what the step runs, not by a name: a ``map_partitions`` of
    :func:`~pandas_dp.engines.lookup.join_rows` on one frame, whose only other argument is a
    :class:`~pandas_dp.engines.lookup.Lookup` (public values) and which reads no other
    collection. That function is row-local: each output row is one input row, with its
    label, and public values; with unique public keys (``not lookup.repeats``, read off the
    lookup's own arrays, which decide the function's path) each input row at most once.
    """
    if type(node).__name__ != "MapPartitions" or node.operand("func") is not join_rows:
        return None
    args = list(node.args)
    frame = node.frame
    if len(args) != 2 or args[0] is not frame or not isinstance(args[1], Lookup):
        return None
    if getattr(frame, "ndim", 0) != 2 or len(node._kwargs) > 0:
        return None
    if {dependency._name for dependency in node.dependencies()} != {frame._name}:
        return None
    lookup: Lookup = args[1]
    return lookup


def _mask_inputs(frame: Any, mask: Any, what: str) -> Inputs:
    """Trace a filter's frame and mask, if the mask selects each of the frame's rows at most once.

    The mask must be one column derived elementwise from the frame's own base (so that it lines
    up with the frame row by row, partition by partition) and boolean by construction. pandas
    reads a mask that is not boolean as labels (``loc``, a Series' ``[]``), and a declared
    dtype (``meta=bool``) proves nothing about the values a function returns. A frame's ``[]``
    would read such values as column names, but Dask's optimizer rewrites a filter whose mask
    ends in a step it pushes filters through (``astype``, ``abs``, ``rename``, ``to_frame``,
    ...) into a filter of that step's input by itself, which can be a Series: so every mask
    must end in a comparison or a test, whose result no rewrite can take away.
    """
    if not hasattr(mask, "_meta") or getattr(mask, "ndim", 0) != 1:
        return (
            f"{what} by labels or by a frame: write it as a boolean mask, e.g. priv[priv['x'] > 0]"
        )
    if aligned_base(mask)._name != aligned_base(frame)._name:
        return (
            "a filter by a mask derived from another collection than the frame it filters "
            "(another frame, the frame filtered differently, map_partitions, ...): derive the "
            "mask from the same frame, e.g. priv[priv['x'] > 0]"
        )
    if not _is_boolean(mask):
        return (
            f"{what} by a mask that is not a comparison or a test (isna, notna, isin, between), "
            "so its values could be labels whatever its dtype: compare explicitly, e.g. "
            "priv[priv['x'] > 0] or priv[priv['flag'] == True]"
        )
    return [frame, mask]


def _is_boolean(expr: Any) -> bool:
    """Whether a step's values are booleans by construction (not by a declared dtype).

    Only steps that compute their booleans themselves count: ``astype(bool)`` does not, as
    Dask's optimizer may drop it from a filter's mask (see :func:`_mask_inputs`).
    """
    kind = type(expr).__name__
    if kind in _BOOLEAN:
        return True
    if kind == "MethodOperator":
        return expr.operand("name") in _COMPARISON_METHODS
    if kind == "Eval":
        return _plain_comparison(expr)  # one boolean expression, as a query's
    if kind in _LOGICAL:
        return all(
            _is_boolean(operand) if hasattr(operand, "_meta") else isinstance(operand, bool)
            for operand in expr.operands[: 1 if kind == "Invert" else 2]
        )
    return False


def _repeats(node: Any, kind: str) -> str:
    """Why a row-selecting step may repeat a row ("" when it cannot), from its arguments."""
    if kind == "Sample" and node.operand("replace") is not False:
        return "sample with replacement"
    if kind == "Partitions":
        chosen = list(node.operand("partitions"))
        if len(set(chosen)) != len(chosen):
            return "partitions[...] naming a partition twice"
    return ""


# --- query and eval: parse the expression, accept only what provably keeps the rows ---------

#: Arguments of ``query``/``eval`` that do not change what a name means.
_SAFE_KWARGS = frozenset({"engine", "parser"})


def _plain_comparison(node: Any) -> bool:
    """Whether a ``query`` keeps a boolean mask of its frame's rows: a plain comparison.

    pandas evaluates the expression and then takes ``frame.loc[result]``: a result that is not
    a boolean mask of the same rows (``index.repeat(...)``, a bare column) selects by label
    and can repeat rows. Accepted: comparisons, their ``and``/``or``/``not``/``&``/``|``/
    ``^``/``~``, whose operands are columns, constants and arithmetic of them.
    """
    tree = _parse(node)
    if tree is None or len(tree.body) != 1 or not isinstance(tree.body[0], ast.Expr):
        return False
    return is_mask(tree.body[0].value, _columns(node.frame))


def _elementwise_eval(node: Any) -> bool:
    """Whether an ``eval`` is elementwise: arithmetic, comparisons and logic of columns.

    Each statement is an expression or an assignment of one to a new name (``"z = x + y"``).
    """
    tree = _parse(node)
    if tree is None:
        return False
    names = _columns(node.frame)
    for statement in tree.body:
        if isinstance(statement, ast.Assign):
            (target,) = statement.targets if len(statement.targets) == 1 else (None,)
            if not isinstance(target, ast.Name) or not is_elementwise(statement.value, names):
                return False
            names = names | {target.id}
        elif not isinstance(statement, ast.Expr) or not is_elementwise(statement.value, names):
            return False
    return True


def _parse(node: Any) -> ast.Module | None:
    """The expression of a ``query``/``eval`` step, or None if it cannot be read safely."""
    text = node.operand("_expr")
    kwargs = node.operand("expr_kwargs") or {}
    if not isinstance(text, str) or not set(kwargs) <= _SAFE_KWARGS:
        return None
    try:
        return ast.parse(text.strip(), mode="exec")
    except (SyntaxError, ValueError):  # backticks, @ variables, ...
        return None


def _columns(frame: Any) -> frozenset[str]:
    """The names a query may use: string column labels, never the index or its levels."""
    meta = frame._meta
    columns = meta.columns if meta.ndim == 2 else []
    index_names = {name for name in meta.index.names if name is not None}
    return frozenset(
        label
        for label in columns
        if isinstance(label, str)
        and label not in index_names
        and label != "index"
        and not label.startswith(("ilevel_", "clevel_"))
    )


def _is_elementwise(node: Any, kind: str) -> bool:
    if kind == "Eval":
        return _elementwise_eval(node)
    return kind in _ELEMENTWISE or any(c.__name__ == "Binop" for c in type(node).__mro__)


def _collections(node: Any) -> list[Any]:
    """The node's inputs that hold rows (Series or frames, not scalars such as a mean)."""
    return [d for d in node.dependencies() if getattr(d, "ndim", 0) >= 1]


def aligned_base(expr: Any) -> Any:
    """Strip elementwise steps whose inputs share one base: the collection they all align to."""
    node = expr
    while True:
        kind = type(node).__name__
        if kind == "Assign":  # the frame's rows and labels, whatever the values
            node = node.frame
            continue
        if not _is_elementwise(node, kind):
            return node
        operands = _collections(node)
        bases = {base._name: base for base in map(aligned_base, operands)}
        if len(bases) != 1:
            return node
        (node,) = bases.values()
