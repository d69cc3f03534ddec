"""Evaluate a parsed ``where`` on rows, totally (see :mod:`pandas_dp.publish.where`).

Every operation has a vectorised form and, where that raises because some value cannot be
compared, a row-by-row form in which such a value simply compares false: the same answer for
every other row, and no error that could depend on the data.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.publish.where import ARITHMETIC, COMPARE, Where


def evaluate(where: Where, frame: pd.DataFrame) -> pd.Series:
    """The boolean mask of rows the filter keeps; missing or incomparable values give False."""
    with np.errstate(all="ignore"):
        value = _evaluate(where.tree, frame)
    return _as_mask(value, frame.index)


def _as_mask(value: Any, index: pd.Index) -> pd.Series:
    if not isinstance(value, pd.Series):
        return pd.Series(bool(value) if value is not None else False, index=index)
    if pd.api.types.is_bool_dtype(value.dtype) and not value.hasnans:
        return value.astype(bool)
    return pd.Series(_elementwise(value, lambda v: bool(v) if not pd.isna(v) else False), index)


def _elementwise(series: pd.Series, function: Callable[[Any], bool]) -> np.ndarray:
    """``function`` of every value, a value for which it raises counting as False."""

    def safe(value: Any) -> bool:
        try:
            return bool(function(value))
        except Exception:  # an incomparable value: the row is not kept
            return False

    return np.fromiter((safe(v) for v in series.to_numpy(dtype=object)), bool, len(series))


def _numbers(value: Any) -> Any:
    if isinstance(value, pd.Series):
        return pd.to_numeric(value, errors="coerce").astype(np.float64)
    return float(value) if value is not None else np.nan


def _evaluate(node: ast.AST, frame: pd.DataFrame) -> Any:
    if isinstance(node, ast.Name):
        return frame[node.id]
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.List | ast.Tuple):
        return [element.value for element in node.elts if isinstance(element, ast.Constant)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd | ast.BitOr):
        left = _as_mask(_evaluate(node.left, frame), frame.index)
        right = _as_mask(_evaluate(node.right, frame), frame.index)
        return left & right if isinstance(node.op, ast.BitAnd) else left | right
    if isinstance(node, ast.BinOp):
        return ARITHMETIC[type(node.op)](
            _numbers(_evaluate(node.left, frame)), _numbers(_evaluate(node.right, frame))
        )
    if isinstance(node, ast.UnaryOp):
        operand = _evaluate(node.operand, frame)
        if isinstance(node.op, ast.USub):
            return -_numbers(operand)
        if isinstance(node.op, ast.UAdd):
            return _numbers(operand)
        return ~_as_mask(operand, frame.index)
    if isinstance(node, ast.BoolOp):
        masks = [_as_mask(_evaluate(v, frame), frame.index) for v in node.values]
        combine = operator.and_ if isinstance(node.op, ast.And) else operator.or_
        result = masks[0]
        for mask in masks[1:]:
            result = combine(result, mask)
        return result
    if isinstance(node, ast.Compare):
        return _compare(node, frame)
    if isinstance(node, ast.Call):
        return _call(node, frame)
    raise AssertionError(f"unchecked node {type(node).__name__}")  # parse_where refused it


def _binary_mask(
    left: Any, right: Any, op: Callable[[Any, Any], Any], index: pd.Index
) -> pd.Series:
    """``op(left, right)`` as a mask; where the vectorised form raises, element by element."""
    try:
        result = op(left, right)
        return _as_mask(result, index)
    except Exception:  # incomparable values somewhere: compare row by row
        if isinstance(left, pd.Series) and isinstance(right, pd.Series):
            pairs = pd.Series(
                list(zip(left.to_numpy(dtype=object), right.to_numpy(dtype=object), strict=True)),
                index=index,
            )
            return pd.Series(_elementwise(pairs, lambda p: op(p[0], p[1])), index)
        if isinstance(left, pd.Series):
            return pd.Series(_elementwise(left, lambda v: op(v, right)), index)
        if isinstance(right, pd.Series):
            return pd.Series(_elementwise(right, lambda v: op(left, v)), index)
        return _as_mask(False, index)


def _compare(node: ast.Compare, frame: pd.DataFrame) -> pd.Series:
    left = _evaluate(node.left, frame)
    result = pd.Series(True, index=frame.index)
    for op, right_node in zip(node.ops, node.comparators, strict=True):
        right = _evaluate(right_node, frame)
        if isinstance(op, ast.In | ast.NotIn):
            mask = _isin(left, right, frame.index)
            mask = ~mask if isinstance(op, ast.NotIn) else mask
        else:
            mask = _binary_mask(left, right, COMPARE[type(op)], frame.index)
        result &= mask
        left = right
    return result


def _isin(values: Any, candidates: list[Any], index: pd.Index) -> pd.Series:
    if not isinstance(values, pd.Series):
        return _as_mask(values in candidates, index)
    try:
        return values.isin(candidates).fillna(False).astype(bool)
    except Exception:  # unhashable values: test them one by one
        return pd.Series(_elementwise(values, lambda v: v in candidates), index)


def _call(node: ast.Call, frame: pd.DataFrame) -> pd.Series:
    assert isinstance(node.func, ast.Attribute)
    column = _evaluate(node.func.value, frame)
    method = node.func.attr
    if method == "isna":
        return column.isna()
    if method == "notna":
        return column.notna()
    if method == "isin":
        return _isin(column, _evaluate(node.args[0], frame), frame.index)
    low, high = (_evaluate(argument, frame) for argument in node.args)
    numbers = _numbers(column)
    return ((numbers >= low) & (numbers <= high)).fillna(False).astype(bool)
