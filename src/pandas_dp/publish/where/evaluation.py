"""Evaluate a parsed ``where`` on rows, with one semantics (see :mod:`.language`).

Every operation decides each row from that row's values and the literals alone, and there is
exactly one way each operation runs for a given dtype (public): nothing is retried another way
when some value makes the first way fail. Columns of a fixed type (numbers, booleans, text,
dates) are compared by pandas, vectorised; any other column (``object``, categories, lists
read from Parquet) is compared value by value with the same rules:

- a **missing** value (``None``, ``NaN``, ``pd.NA``, ``NaT``, a ``Decimal`` NaN) equals
  nothing: ``==``, ``<``, ``<=``, ``>``, ``>=`` and ``in`` are false for it, ``!=`` and
  ``not in`` are true (as ``df[col] != v`` in pandas on NumPy-backed columns; the same for
  nullable dtypes here). The literal ``None`` is missing too: ``col == None`` keeps no row.
- an **incomparable** value (an unhashable one such as a list or an array, or one whose
  comparison raises or does not give ``True``/``False``) matches no comparison: ``==``,
  ``!=``, ``<`` ... ``in`` and ``not in`` are all false for it. ``~``/``not`` negate the
  result of their operand, so ``~(col == 1)`` keeps it while ``col != 1`` does not.
- otherwise, the comparison's own answer.

A bare column used as a condition keeps the rows that hold ``True`` or a non-zero number;
arithmetic reads numbers (anything else is NaN). Third-party warnings are swallowed.
"""

from __future__ import annotations

import ast
import operator
import warnings
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import TYPE_CHECKING, cast

import numpy as np
import pandas as pd

from pandas_dp.errors import SpecError
from pandas_dp.publish.where.language import ARITHMETIC, COMPARE, Where

if TYPE_CHECKING:
    from pandas._typing import ScalarOrNA

Tri = bool | None  # True, False, or None for "cannot be compared"
_NUMBER = (int, float, np.integer, np.floating, Decimal)


def evaluate(where: Where, frame: pd.DataFrame) -> pd.Series:
    """The boolean mask of rows the filter keeps; each row is decided from its own values.

    Raises
    ------
    SpecError
        Only for a combination of dtypes and literals that cannot be compared at all (never
        because of a value).
    """
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _as_mask(_evaluate(where.tree, frame), frame.index)


# --- one value ------------------------------------------------------------------------------


def is_missing(value: object) -> bool:
    """Whether ``value`` is missing (pandas' rule, and a ``Decimal`` NaN of either kind)."""
    if isinstance(value, Decimal):
        return value.is_nan()  # pd.isna raises on a signalling NaN
    try:
        # pandas-stubs type isna's scalar form for scalars only; it takes any object.
        answer: object = pd.isna(cast("ScalarOrNA", value))
    except Exception:  # an object pandas cannot classify is a value, not a missing one
        return False
    return bool(answer) if isinstance(answer, bool | np.bool_) else False


def _hashable(value: object) -> bool:
    try:
        hash(value)
    except Exception:
        return False
    return True


def _plain(function: Callable[[], object]) -> Tri:
    """``function()`` if it gives a plain boolean; None if it raises or gives anything else."""
    try:
        answer = function()
    except Exception:
        return None
    return bool(answer) if isinstance(answer, bool | np.bool_) else None


def compare_values(op: type, left: object, right: object) -> Tri:
    """``left op right`` for two values: True, False, or None when they cannot be compared.

    ``op`` is an ``ast`` comparison type; ``!=`` is the negation of ``==`` (so a missing value
    is unequal to everything and an incomparable one stays None).
    """
    left_missing, right_missing = is_missing(left), is_missing(right)
    if (not left_missing and not _hashable(left)) or (not right_missing and not _hashable(right)):
        return None
    if left_missing or right_missing:
        return op is ast.NotEq
    if op is ast.NotEq:
        equal = _plain(lambda: left == right)
        return None if equal is None else not equal
    function = COMPARE[op]
    return _plain(lambda: function(left, right))


def _truth(value: object) -> bool:
    """A value used as a condition: ``True`` or a non-zero number keeps the row."""
    if is_missing(value):
        return False
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, _NUMBER):
        return _plain(lambda: value != 0) is True
    return False


def _number(value: object) -> float:
    """``value`` as a float for arithmetic; NaN for anything that is not a number."""
    if is_missing(value) or not isinstance(value, (*_NUMBER, np.bool_)):
        return np.nan
    try:
        return float(value)
    except Exception:  # an int too large for a float
        return np.nan


# --- columns --------------------------------------------------------------------------------


def _typed(series: pd.Series) -> bool:
    """Whether pandas compares this column vectorised (decided by the dtype alone)."""
    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype) or pd.api.types.is_object_dtype(dtype):
        return False
    return bool(
        pd.api.types.is_bool_dtype(dtype)
        or (pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_complex_dtype(dtype))
        or pd.api.types.is_string_dtype(dtype)
        or pd.api.types.is_datetime64_any_dtype(dtype)
        or pd.api.types.is_timedelta64_dtype(dtype)
    )


def _fast(value: object) -> bool:
    return _typed(value) if isinstance(value, pd.Series) else True


def _values(value: object, length: int) -> Iterable[object]:
    if isinstance(value, pd.Series):
        return value.to_numpy(dtype=object)
    return [value] * length


def _each(function: Callable[..., bool], index: pd.Index, *operands: object) -> pd.Series:
    """``function`` of every row's values (literals repeated), as a mask."""
    columns = [_values(operand, len(index)) for operand in operands]
    return pd.Series(np.fromiter(map(function, *columns), bool, len(index)), index=index)


def _present(value: object, index: pd.Index) -> np.ndarray:
    """Rows where ``value`` (a typed column or a literal) is not missing."""
    if isinstance(value, pd.Series):
        return ~value.isna().to_numpy(dtype=bool)
    return np.full(len(index), not is_missing(value))


def _mask_of(result: object, index: pd.Index) -> np.ndarray:
    if isinstance(result, pd.Series):
        return result.to_numpy(dtype=bool, na_value=False)
    return np.full(len(index), bool(result) if isinstance(result, bool | np.bool_) else False)


def _typed_equal(left: object, right: object, index: pd.Index) -> np.ndarray:
    return _typed_op(ast.Eq, left, right, index)


def _typed_op(op: type, left: object, right: object, index: pd.Index) -> np.ndarray:
    """The vectorised ``left op right`` of pandas, missing values false (``!=``: true)."""
    if op is ast.NotEq:
        return ~_typed_op(ast.Eq, left, right, index)
    try:
        result = COMPARE[op](left, right)
    except Exception:  # depends on the dtypes and the literal only: no value is involved
        raise SpecError(
            f"cannot apply {_SYMBOL[op]} to {_describe(left)} and {_describe(right)}"
        ) from None
    return _mask_of(result, index) & _present(left, index) & _present(right, index)


_SYMBOL: dict[type, str] = {
    ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
}  # fmt: skip


def _describe(value: object) -> str:
    if isinstance(value, pd.Series):
        return f"a column of dtype {value.dtype}"
    return f"the literal {value!r}"  # a literal of the spec, not a value of the data


def _compare(op: type, left: object, right: object, index: pd.Index) -> pd.Series:
    if _fast(left) and _fast(right):
        if not isinstance(left, pd.Series) and not isinstance(right, pd.Series):
            return pd.Series(compare_values(op, left, right) is True, index=index)
        return pd.Series(_typed_op(op, left, right, index), index=index)
    return _each(lambda a, b: compare_values(op, a, b) is True, index, left, right)


def _isin(values: object, candidates: object, index: pd.Index, negate: bool) -> pd.Series:
    """``in`` (``not in`` if ``negate``): equal to one of the literals (to none of them)."""
    assert isinstance(candidates, list)  # parse_where allows only a list of literals there
    if isinstance(values, pd.Series) and _typed(values):
        found = np.zeros(len(index), bool)
        for candidate in candidates:
            found |= _typed_equal(values, candidate, index)
        return pd.Series(~found if negate else found, index=index)

    def one(value: object) -> bool:
        answers = [compare_values(ast.Eq, value, c) for c in candidates]
        if negate:
            return all(answer is False for answer in answers)
        return any(answer is True for answer in answers)

    if not isinstance(values, pd.Series):
        return pd.Series(one(values), index=index)
    return _each(one, index, values)


def _as_mask(value: object, index: pd.Index) -> pd.Series:
    if not isinstance(value, pd.Series):
        return pd.Series(_truth(value), index=index)
    dtype = value.dtype
    if pd.api.types.is_bool_dtype(dtype) and not isinstance(dtype, pd.CategoricalDtype):
        return pd.Series(value.to_numpy(dtype=bool, na_value=False), index=index)
    if _typed(value) and pd.api.types.is_numeric_dtype(dtype):
        numbers = value.to_numpy(dtype=np.float64, na_value=np.nan)
        return pd.Series((numbers != 0) & ~np.isnan(numbers), index=index)
    if _typed(value):  # text and dates are not conditions
        return pd.Series(False, index=index)
    return _each(_truth, index, value)


def _numbers(value: object) -> pd.Series | float:
    """Numbers for arithmetic: a float64 column (NaN where not a number), or a float."""
    if not isinstance(value, pd.Series):
        return _number(value)
    dtype = value.dtype
    if _typed(value) and (
        pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype)
    ):
        return pd.Series(value.to_numpy(dtype=np.float64, na_value=np.nan), index=value.index)
    if _typed(value):
        return pd.Series(np.nan, index=value.index, dtype=np.float64)
    numbers = np.fromiter(map(_number, value.to_numpy(dtype=object)), np.float64, len(value))
    return pd.Series(numbers, index=value.index)


def _is_missing_column(column: object, index: pd.Index) -> pd.Series:
    if not isinstance(column, pd.Series):
        return pd.Series(is_missing(column), index=index)
    if _typed(column):
        return pd.Series(column.isna().to_numpy(dtype=bool), index=index)
    return _each(is_missing, index, column)


def _evaluate(node: ast.AST, frame: pd.DataFrame) -> object:
    index = frame.index
    if isinstance(node, ast.Name):
        return frame[node.id]
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.List | ast.Tuple):
        return [element.value for element in node.elts if isinstance(element, ast.Constant)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd | ast.BitOr):
        first = _as_mask(_evaluate(node.left, frame), index)
        second = _as_mask(_evaluate(node.right, frame), index)
        return first & second if isinstance(node.op, ast.BitAnd) else first | second
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
        return ~_as_mask(operand, index)
    if isinstance(node, ast.BoolOp):
        masks = [_as_mask(_evaluate(v, frame), index) for v in node.values]
        combine = operator.and_ if isinstance(node.op, ast.And) else operator.or_
        result = masks[0]
        for mask in masks[1:]:
            result = combine(result, mask)
        return result
    if isinstance(node, ast.Compare):
        left = _evaluate(node.left, frame)
        result = pd.Series(True, index=index)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = _evaluate(right_node, frame)
            if isinstance(op, ast.In | ast.NotIn):
                result &= _isin(left, right, index, negate=isinstance(op, ast.NotIn))
            else:
                result &= _compare(type(op), left, right, index)
            left = right
        return result
    if isinstance(node, ast.Call):
        return _call(node, frame)
    raise AssertionError(f"unchecked node {type(node).__name__}")  # parse_where refused it


def _call(node: ast.Call, frame: pd.DataFrame) -> pd.Series:
    assert isinstance(node.func, ast.Attribute)
    column = _evaluate(node.func.value, frame)
    method = node.func.attr
    if method == "isna":
        return _is_missing_column(column, frame.index)
    if method == "notna":
        return ~_is_missing_column(column, frame.index)
    if method == "isin":
        return _isin(column, _evaluate(node.args[0], frame), frame.index, negate=False)
    low, high = (_numbers(_evaluate(argument, frame)) for argument in node.args)
    numbers = _numbers(column)
    inside = (numbers >= low) & (numbers <= high)
    assert isinstance(inside, pd.Series)  # parse_where: between is called on a column
    return pd.Series(inside.to_numpy(dtype=bool), frame.index)
