"""Which parsed ``query``/``eval`` expressions provably keep a frame's rows one for one.

Pure :mod:`ast` checks, no Dask: a *mask* is a comparison of columns, constants and their
arithmetic, or ``and``/``or``/``not``/``&``/``|``/``^``/``~`` of masks (pandas reads ``&``
as ``and``); an *elementwise* expression is such an operand or mask, or ``&``/``|``/``^``/
``~`` of elementwise expressions. Names must be among the frame's column names.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

_COMPARE_OPS = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.In, ast.NotIn)
_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)
_LOGIC = (ast.BitAnd, ast.BitOr, ast.BitXor)


def is_mask(tree: ast.expr, names: frozenset[str]) -> bool:
    """A boolean expression: comparisons, and logic of them (``and``/``or`` included)."""
    return _logic_of(tree, lambda leaf: _is_comparison(leaf, names), bool_ops=True)


def is_elementwise(tree: ast.expr, names: frozenset[str]) -> bool:
    """An ``eval`` expression computed row by row: operands, masks, and logic of either."""
    return _logic_of(
        tree, lambda leaf: _is_operand(leaf, names) or is_mask(leaf, names), bool_ops=False
    )


def _logic_of(tree: ast.expr, leaf: Callable[[ast.expr], bool], *, bool_ops: bool) -> bool:
    """Whether ``tree`` is a ``leaf``, or logic of trees that are.

    Logic: ``&``, ``|``, ``^``, ``~``, ``not``; with ``bool_ops``, ``and``/``or`` too.
    """
    if leaf(tree):
        return True
    if bool_ops and isinstance(tree, ast.BoolOp):
        return all(_logic_of(value, leaf, bool_ops=bool_ops) for value in tree.values)
    if isinstance(tree, ast.BinOp) and isinstance(tree.op, _LOGIC):
        return _logic_of(tree.left, leaf, bool_ops=bool_ops) and _logic_of(
            tree.right, leaf, bool_ops=bool_ops
        )
    if isinstance(tree, ast.UnaryOp) and isinstance(tree.op, ast.Not | ast.Invert):
        return _logic_of(tree.operand, leaf, bool_ops=bool_ops)
    return False


def _is_comparison(tree: ast.expr, names: frozenset[str]) -> bool:
    """A comparison of operands, at least one of which mentions a column."""
    if not isinstance(tree, ast.Compare):
        return False
    operands = [tree.left, *tree.comparators]
    return (
        all(isinstance(op, _COMPARE_OPS) for op in tree.ops)
        and all(_is_operand(operand, names) for operand in operands)
        and any(_mentions_a_column(operand) for operand in operands)
    )


def _is_operand(tree: ast.expr, names: frozenset[str]) -> bool:
    """A value compared: a column, a constant, a list of constants, or arithmetic of those."""
    if isinstance(tree, ast.Name):
        return tree.id in names
    if isinstance(tree, ast.Constant):
        return isinstance(tree.value, int | float | str | bool) or tree.value is None
    if isinstance(tree, ast.List | ast.Tuple):
        return all(isinstance(item, ast.Constant) for item in tree.elts)
    if isinstance(tree, ast.BinOp) and isinstance(tree.op, _ARITHMETIC):
        return _is_operand(tree.left, names) and _is_operand(tree.right, names)
    if isinstance(tree, ast.UnaryOp) and isinstance(tree.op, ast.USub | ast.UAdd):
        return _is_operand(tree.operand, names)
    return False


def _mentions_a_column(tree: ast.expr) -> bool:
    return any(isinstance(child, ast.Name) for child in ast.walk(tree))
