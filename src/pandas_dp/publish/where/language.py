"""The ``where`` language of release files: row filters an untrusted author can write safely.

A release file may come from someone other than the data owner, so its ``where`` is not
code. It is parsed (Python's ``ast``, expression mode) into a small tree and checked against
a whitelist before any data is read; nothing is ever passed to ``eval``, ``exec``,
``DataFrame.query`` or ``pandas.eval``. The language:

- column names (bare identifiers, or ```back ticks``` for other names) and literals
  (numbers, text, ``True``, ``False``, ``None``);
- comparisons ``== != < <= > >=`` (chains such as ``18 <= age < 65`` too), ``in`` and
  ``not in`` a list of literals;
- ``col.isin([...])``, ``col.between(low, high)`` (inclusive), ``col.isna()``,
  ``col.notna()``: the only calls, and only on a column;
- ``&``, ``|``, ``~`` and ``and``, ``or``, ``not``; parentheses;
- arithmetic ``+ - * / // %`` and unary ``-`` on numbers (computed in float64: nothing
  overflows; division by zero gives inf or NaN, which compares false).

Anything else (attributes, other calls, subscripts, ``@`` locals, lambdas, comprehensions,
f-strings) is refused with the construct named. Types are checked against the column
dtypes (public metadata) before any row is used: text is never ordered against or combined
with numbers, ``in`` takes a list. Columns of mixed Python objects (dtype ``object``) are
compared value by value.

Evaluation (:mod:`pandas_dp.publish.where.evaluation`) has one semantics, decided row by row, so
whether a row is kept depends on that row alone and no error can depend on the data: a
missing value equals nothing (``==``, ``<`` ... and ``in`` are false, ``!=`` and ``not in``
true, as in pandas); a value that cannot be compared (unhashable, such as a list, or whose
comparison raises) matches no comparison, ``!=`` and ``not in`` included; ``~``/``not``
negate their operand's result; a missing result keeps no row.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import pandas as pd

from pandas_dp.errors import SpecError

if TYPE_CHECKING:
    from pandas._typing import DtypeObj

Kind = Literal["number", "text", "bool", "any", "mixed"]
_NUMERIC: frozenset[Kind] = frozenset({"number", "bool", "mixed"})  # "mixed": dtype object

#: ``operator`` functions by ``ast`` type (typeshed types the orderings for comparables only).
COMPARE: dict[type, Callable[..., object]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt,
    ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
}  # fmt: skip
ARITHMETIC: dict[type, Callable[[object, object], object]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
}  # fmt: skip
_METHODS = {"isin", "between", "isna", "notna"}
_FIX = (
    "a where is a filter over columns: comparisons, isin, between, isna, & | ~ and "
    "arithmetic on columns and literals"
)


@dataclass(frozen=True)
class Where:
    """A parsed, whitelisted ``where`` expression and the columns it reads."""

    text: str
    tree: ast.expr
    columns: tuple[str, ...]


def parse_where(text: str) -> Where:
    """Parse ``text`` and check every construct against the whitelist (no data is read).

    Raises
    ------
    SpecError
        Naming the first construct outside the language.
    """
    if not isinstance(text, str) or not text.strip():
        raise SpecError("must be a non-empty filter such as 'age >= 18'")
    quoted = _quote_backticks(text)
    try:
        tree = ast.parse(quoted.source, mode="eval").body
    except SyntaxError:
        raise SpecError(f"is not a valid expression: {text!r}; {_FIX}") from None
    columns: list[str] = []
    _check(tree, columns, quoted.names)
    return Where(text, _rename(tree, quoted.names), tuple(dict.fromkeys(columns)))


@dataclass(frozen=True)
class _Quoted:
    source: str
    names: dict[str, str]  # placeholder identifier -> the back-ticked column name


def _quote_backticks(text: str) -> _Quoted:
    """Replace ```a column``` by placeholder identifiers (back ticks are not Python)."""
    parts = text.split("`")
    if len(parts) % 2 == 0:
        raise SpecError(f"has an unclosed back tick: {text!r}")
    names: dict[str, str] = {}
    out = []
    for i, part in enumerate(parts):
        if i % 2:
            placeholder = f"__column_{len(names)}__"
            names[placeholder] = part
            out.append(placeholder)
        else:
            out.append(part)
    return _Quoted("".join(out), names)


def _refuse(node: ast.AST) -> SpecError:
    return SpecError(f"{type(node).__name__} is not part of the where language; {_FIX}")


def _check(node: ast.AST, columns: list[str], names: Mapping[str, str]) -> None:
    """Walk the tree; refuse any node type outside the language."""
    if isinstance(node, ast.Name):
        if node.id.startswith("__") and node.id not in names:
            raise SpecError(f"name {node.id!r} is not allowed in a where; {_FIX}")
        columns.append(names.get(node.id, node.id))
        return
    if isinstance(node, ast.Constant):
        if not isinstance(node.value, int | float | str | bool | type(None)):
            raise SpecError(f"literal {node.value!r} is not allowed in a where; {_FIX}")
        return
    if isinstance(node, ast.List | ast.Tuple):
        for element in node.elts:
            if not isinstance(element, ast.Constant):
                raise SpecError("lists in a where hold literals only, e.g. ['a', 'b']")
            _check(element, columns, names)
        return
    if isinstance(node, ast.Call):
        method = node.func
        if not (isinstance(method, ast.Attribute) and method.attr in _METHODS):
            raise SpecError(f"the only calls in a where are {sorted(_METHODS)} on a column")
        if not isinstance(method.value, ast.Name) or node.keywords:
            raise SpecError(f"{method.attr} is called on a column, with literal arguments")
        _check(method.value, columns, names)
        for argument in node.args:
            _check(argument, columns, names)
        return
    allowed = (
        ast.Compare, ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.And, ast.Or, ast.Not,
        ast.Invert, ast.USub, ast.UAdd, ast.BitAnd, ast.BitOr, ast.In, ast.NotIn,
        *COMPARE, *ARITHMETIC,
    )  # fmt: skip
    if not isinstance(node, allowed):
        raise _refuse(node)
    for child in ast.iter_child_nodes(node):
        _check(child, columns, names)


def _rename(tree: ast.expr, names: Mapping[str, str]) -> ast.expr:
    """The tree with placeholder identifiers carrying the real column names."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in names:
            node.id = names[node.id]
    return tree


# --- types (from dtypes: public) -------------------------------------------------------------


def _column_kind(dtype: DtypeObj) -> Kind:
    if pd.api.types.is_object_dtype(dtype):
        return "mixed"  # Python objects: compared value by value, non-numbers compare false
    if pd.api.types.is_bool_dtype(dtype):
        return "bool"
    if pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_complex_dtype(dtype):
        return "number"
    if pd.api.types.is_string_dtype(dtype) and not pd.api.types.is_object_dtype(dtype):
        return "text"
    return "any"


def check_types(where: Where, dtypes: Mapping[Hashable, DtypeObj]) -> None:
    """Check columns exist and operations fit their dtypes (before any row is used)."""
    for column in where.columns:
        if column not in dtypes:
            raise SpecError(f"where reads column {column!r}, which the data does not have")
    _kind(where.tree, dtypes)


def _literal_kind(value: object) -> Kind:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "text"
    return "any"


def _kind(node: ast.AST, dtypes: Mapping[Hashable, DtypeObj]) -> Kind:
    if isinstance(node, ast.Name):
        return _column_kind(dtypes[node.id])
    if isinstance(node, ast.Constant):
        return _literal_kind(node.value)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd | ast.BitOr):
        _kind(node.left, dtypes)
        _kind(node.right, dtypes)
        return "bool"
    if isinstance(node, ast.BinOp):
        for side in (node.left, node.right):
            if _kind(side, dtypes) not in _NUMERIC:
                raise SpecError("arithmetic in a where needs numbers on both sides")
        return "number"
    if isinstance(node, ast.UnaryOp):
        inner = _kind(node.operand, dtypes)
        if isinstance(node.op, ast.USub | ast.UAdd) and inner not in _NUMERIC:
            raise SpecError("a sign in a where applies to numbers")
        return inner if isinstance(node.op, ast.USub | ast.UAdd) else "bool"
    if isinstance(node, ast.Compare):
        left = _kind(node.left, dtypes)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            listed = isinstance(right_node, ast.List | ast.Tuple)
            if listed != isinstance(op, ast.In | ast.NotIn):
                raise SpecError("in and not in take a list of literals, e.g. x in ['a', 'b']")
            right = _kind(right_node, dtypes) if not listed else "any"
            ordered = type(op) in (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
            if ordered and not (
                {left, right} <= _NUMERIC or left == right == "text" or "mixed" in {left, right}
            ):
                raise SpecError("<, <=, > and >= in a where compare numbers (or text with text)")
            left = right
        return "bool"
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Attribute)
        kind = _kind(node.func.value, dtypes)
        if node.func.attr == "between" and (
            kind not in _NUMERIC
            or len(node.args) != 2
            or any(_kind(a, dtypes) != "number" for a in node.args)
        ):
            raise SpecError("between takes two numbers and applies to a numeric column")
        if node.func.attr == "isin" and (
            len(node.args) != 1 or not isinstance(node.args[0], ast.List | ast.Tuple)
        ):
            raise SpecError("isin takes one list of literals, e.g. region.isin(['N', 'S'])")
        if node.func.attr in ("isna", "notna") and node.args:
            raise SpecError(f"{node.func.attr} takes no arguments")
        return "bool"
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.expr):
            _kind(child, dtypes)
    return "bool"
