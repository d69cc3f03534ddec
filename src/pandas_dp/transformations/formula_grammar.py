"""The grammar of model formulas pandas-dp evaluates on private rows: every term reads one row.

A formula (``"y ~ x + C(g) + np.log(w) + I(x**2) + x:z"``) is parsed by formulaic into
terms, each a product of factors; every factor is a column name or a Python expression.
The library evaluates those expressions over many private rows at once, so an expression
that looks at other rows (``I(x - x.mean())``, ``np.cumsum(x)``, ``I(x.eq(7.77).any())``)
would let one row move every other row's design, and the release would tell whether some
row is present. :func:`check_formula` reads the formula text alone (public) and accepts
only expressions that give each row a value computed from that row and literals:

- a column: ``x``, ```x value```, ``Q('x value')``; a numeric literal;
- arithmetic ``+ - * / // % **`` (unary ``-``, ``+``), one comparison
  ``< <= > >= == !=``, and ``& | ^ ~`` between allowed expressions;
- the elementwise functions in :data:`FUNCTIONS` (``np.log``, ``np.exp``, ``np.sqrt``,
  ``np.abs``, ``np.log1p``, ``np.expm1``, ... as ``np.`` or ``numpy.``, formulaic's own
  ``log``/``exp``/..., Python's ``abs``), and ``np.clip(expr, lower, upper)`` with numeric
  literal bounds;
- ``I(expr)`` of an allowed expression; ``C(column)`` of one column, whose levels are its
  public keys.

Everything else is refused before anything is charged: attribute access (``x.mean()``,
``x.shift(1)``), any other call (``np.cumsum``, ``center``, ``scale``, ``standardize``,
``lag``, splines, ``sum``, ``len``), subscripts, lambdas, comprehensions, ``and``/``or``/
``not``, conditional expressions, chained comparisons (each asks for a whole column's
truth), strings outside ``Q()``. Formula operators (``+``, ``:``, ``*``, ``-1``, ``/``,
``**`` on terms) combine factors of one row and need no check. The design built from an
accepted formula is then checked on a public probe, whole against row by row
(:func:`pandas_dp.transformations.design.design_of`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pandas_dp.errors import DPValueError

#: The namespaces the elementwise functions may be named through (formulaic gives ``np``;
#: pandas-dp's formula context adds ``numpy``).
NAMESPACES = ("np", "numpy")
#: numpy's elementwise functions of one argument a formula may call (``np.log(x)``).
FUNCTIONS = frozenset(
    {
        "abs", "absolute", "exp", "exp2", "expm1", "log", "log10", "log1p", "log2", "sign",
        "sqrt", "square",
    }
)  # fmt: skip
#: Bare names of elementwise functions of one argument: Python's ``abs`` and formulaic's own.
BARE_FUNCTIONS = frozenset({"abs", "exp", "exp2", "log", "log10", "log2"})
#: formulaic's transforms that learn from the data (centres, scales, knots, levels) or read
#: other rows (``lag``): named in the refusal.
STATEFUL = frozenset(
    {"bs", "cc", "cr", "cs", "center", "hashed", "lag", "poly", "scale", "standardize"}
)
#: The largest power a literal exponent may ask for (a literal power of a literal is
#: evaluated by Python in whole numbers: ``9 ** 9 ** 9`` would not finish).
_MAX_EXPONENT = 1024

_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)
_BITWISE = (ast.BitAnd, ast.BitOr, ast.BitXor)
_COMPARISONS = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)
_FIX = (
    "compute it from public inputs instead: centre or scale with public constants "
    "(I(x - 5) rather than I(x - x.mean()) or center(x); I(x / 10) rather than "
    "I(x / x.max())), compare with a public threshold (I(x > 5)); the elementwise functions "
    "allowed are np.{log, log1p, log2, log10, exp, expm1, exp2, sqrt, abs, absolute, square, "
    "sign}, np.clip(x, lower, upper) with numbers as bounds, abs(), I(...), Q('name') and "
    "C(column) with public keys"
)


#: Terminal escapes (colours) and the markers formulaic puts around the part it refuses.
_DECORATION = re.compile(r"\x1b\[[0-9;]*[A-Za-z]|[\u29da\u29db]")
#: formulaic's parse errors, each with our wording (its own has a typo and colour codes).
_SYNTAX = (
    (re.compile(r"Operator `(?P<op>[^`]*)` has insuff\w* arguments"),
     "the operator {op!r} needs a term on each side, e.g. 'y ~ x {op} z'"),
    (re.compile(r"Operator `~` is incorrectly used"),
     "'~' comes once, between the response and the terms: 'y ~ x + z'"),
    (re.compile(r"Could not find matching context marker"),
     "a parenthesis is not matched"),
    (re.compile(r"ended before quote context was closed\. Expected: (?P<op>\S+)"),
     "a quote or bracket is not closed (add {op!r})"),
    (re.compile(r"Unknown operator '(?P<op>[^']*)'"),
     "{op!r} is not a formula operator (terms are joined by +, -, *, :, / and **)"),
)  # fmt: skip


def unreadable(formula: str, error: Exception) -> DPValueError:
    """The refusal of a formula formulaic cannot parse, in our words.

    formulaic's own messages carry terminal colour codes (and a typo); they never reach
    the user. An unknown one is shown as its first line, without escapes.
    """
    text = _DECORATION.sub("", str(error))
    for pattern, wording in _SYNTAX:
        found = pattern.search(text)
        if found is not None:
            return DPValueError(
                f"formula {formula!r} cannot be read: {wording.format(**found.groupdict())}"
            )
    first = text.strip().splitlines()[0] if text.strip() else type(error).__name__
    return DPValueError(
        f"formula {formula!r} cannot be read: {first} (a formula reads 'y ~ x + C(g)')"
    )


@dataclass(frozen=True)
class FormulaVariables:
    """The columns an accepted formula reads.

    Attributes
    ----------
    columns : tuple of str
        Every column the formula reads, in the order they first appear.
    categories : tuple of str
        The columns it reads through ``C(column)``: their levels must be public keys.
    """

    columns: tuple[str, ...]
    categories: tuple[str, ...]


def check_formula(formula: str) -> FormulaVariables:
    """Refuse any part of ``formula`` that could read another row (reads the text alone).

    Parameters
    ----------
    formula : str
        A formulaic model formula.

    Returns
    -------
    FormulaVariables
        The columns the formula reads, and those it reads through ``C()``.

    Raises
    ------
    DPValueError
        If the formula cannot be parsed, or a factor is outside the grammar (the module's
        docstring): the message names the factor, the part refused and why.
    """
    from formulaic import Formula  # a few hundred ms: only when a model is asked for

    try:
        factors = list(iter_factors(Formula(formula)))
    except Exception as error:  # the formula text alone
        raise unreadable(formula, error) from None
    columns: dict[str, None] = {}
    categories: dict[str, None] = {}
    called: set[str] = set()
    for factor in factors:
        _check_factor(formula, factor, columns, categories, called)
    clash = sorted(called & set(columns))
    if clash:
        raise DPValueError(
            f"formula {formula!r} reads a column named {clash[0]!r} and calls a function by "
            "that name: the column would hide the function; rename the column"
        )
    return FormulaVariables(tuple(columns), tuple(categories))


def _check_factor(
    formula: str, factor: Any, columns: dict[str, None], categories: dict[str, None],
    called: set[str],
) -> None:  # fmt: skip
    """Check one factor of a term (a column, a literal or a Python expression)."""
    from formulaic.parser.types import Factor
    from formulaic.utils.code import sanitize_variable_names

    method = factor.eval_method
    expr = str(factor.expr)
    if method is Factor.EvalMethod.LOOKUP:
        columns.setdefault(expr)
        return
    if method is Factor.EvalMethod.LITERAL:
        if not _is_number_text(expr):
            raise DPValueError(f"formula {formula!r}: the literal {expr!r} is not a number")
        return
    aliases: dict[str, str] = {}
    try:
        code = ast.parse(sanitize_variable_names(expr, {}, aliases), mode="eval").body
    except (SyntaxError, ValueError, RecursionError) as error:  # the formula text alone
        raise DPValueError(f"formula {formula!r}: {expr!r} cannot be read: {error}") from None
    checker = _Checker(formula, expr, aliases, called)
    if _is_call_to(code, "C"):
        assert isinstance(code, ast.Call)
        name = checker.category(code)
        categories.setdefault(name)
        columns.setdefault(name)
        return
    try:
        checker.value(code)
    except RecursionError:  # the formula text alone
        raise DPValueError(f"formula {formula!r}: {expr!r} is nested too deeply") from None
    for name in checker.columns:
        columns.setdefault(name)


def _is_number_text(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _is_call_to(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name


class _Checker:
    """Walks one factor's Python expression, refusing the first part outside the grammar."""

    def __init__(self, formula: str, expr: str, aliases: dict[str, str], called: set[str]):
        self.formula, self.expr, self.aliases, self.called = formula, expr, aliases, called
        self.columns: list[str] = []

    def refuse(self, node: ast.AST, why: str) -> DPValueError:
        part = self.text(node)
        where = "" if part == self.expr else f" in {self.expr!r}"
        return DPValueError(
            f"formula {self.formula!r}: {part!r}{where} {why}. Each term must give a row a "
            "value computed from that row alone (a term that reads other rows lets one row's "
            f"presence move the others' values); {_FIX}"
        )

    def text(self, node: ast.AST) -> str:
        text = ast.unparse(node)
        for alias, name in self.aliases.items():
            if alias != name:
                text = re.sub(rf"\b{re.escape(alias)}\b", f"`{name}`", text)
        return text

    def category(self, node: ast.Call) -> str:
        """``C(column)``: the column (one argument, no contrasts or levels)."""
        self.called.add("C")
        if node.keywords or len(node.args) != 1:
            raise self.refuse(
                node, "gives C() more than a column (its levels are the column's public keys)"
            )
        name = self.column(node.args[0])
        if name is None:
            raise self.refuse(
                node,
                "asks C() for the levels of an expression, which it would learn from the data's "
                "values (write I(...) for an indicator, or C(column) with the column's keys)",
            )
        return name

    def column(self, node: ast.expr) -> str | None:
        """The column ``node`` names (``x``, ```x value```, ``Q('x value')``), if it names one."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id, node.id)
        if _is_call_to(node, "Q"):
            assert isinstance(node, ast.Call)
            self.called.add("Q")
            (argument,) = node.args if len(node.args) == 1 and not node.keywords else (None,)
            if not (isinstance(argument, ast.Constant) and isinstance(argument.value, str)):
                raise self.refuse(node, "is not Q('column name') with the name as a string")
            return argument.value
        return None

    def value(self, node: ast.expr) -> bool:
        """Check an expression; whether it reads a column (else it is a constant)."""
        name = self.column(node)
        if name is not None:
            self.columns.append(name)
            return True
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, int | float):
                raise self.refuse(node, "is a literal other than a number")
            return False
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.Not):
                raise self.refuse(node, "asks for a whole column's truth ('not'; write ~)")
            return self.value(node.operand)
        if isinstance(node, ast.BinOp):
            if not isinstance(node.op, _ARITHMETIC + _BITWISE):
                raise self.refuse(node, "uses an operator outside + - * / // % ** & | ^")
            left, right = self.value(node.left), self.value(node.right)
            if isinstance(node.op, ast.Pow) and not right:
                self.exponent(node, left)
            return left or right
        if isinstance(node, ast.Compare):
            if len(node.ops) != 1 or not isinstance(node.ops[0], _COMPARISONS):
                raise self.refuse(
                    node,
                    "is a chained comparison or a membership test, which asks for a whole "
                    "column's truth (write I((0 < x) & (x < 5)))",
                )
            left, right = self.value(node.left), self.value(node.comparators[0])
            return left or right
        if isinstance(node, ast.BoolOp | ast.IfExp):
            raise self.refuse(
                node, "asks for a whole column's truth (and/or/if; write & | ~ between (...))"
            )
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.Attribute):
            raise self.refuse(
                node,
                "reads an attribute of a column or module; a method such as .mean(), .max(), "
                ".rank(), .shift() or .any() reads other rows",
            )
        raise self.refuse(node, f"is a Python {type(node).__name__}, outside the grammar")

    def exponent(self, node: ast.BinOp, base_reads: bool) -> None:
        """A constant exponent: a literal of bounded size (and a literal base if constant)."""
        exponent = _literal(node.right)
        if exponent is None or abs(exponent) > _MAX_EXPONENT:
            raise self.refuse(
                node, f"has an exponent that is not a number between -{_MAX_EXPONENT} and "
                f"{_MAX_EXPONENT}",
            )  # fmt: skip
        if not base_reads and _literal(node.left) is None:
            raise self.refuse(node, "raises a power of a power of literals")

    def call(self, node: ast.Call) -> bool:
        func = node.func
        name = self.function(func)
        if name is None:
            raise self.refuse(node, self.why_not(func))
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise self.refuse(node, f"passes keywords or *args to {name}()")
        if name == "clip":
            if len(node.args) != 3 or any(_literal(a) is None for a in node.args[1:]):
                raise self.refuse(node, "is not np.clip(expr, lower, upper) with number bounds")
            return self.value(node.args[0])
        if len(node.args) != 1:
            raise self.refuse(node, f"gives {name}() other than one argument")
        return self.value(node.args[0])

    def function(self, func: ast.expr) -> str | None:
        """The allowed function ``func`` names (``np.log``, ``abs``, ``I``), if any."""
        if isinstance(func, ast.Name):
            if func.id == "I" or func.id in BARE_FUNCTIONS:
                self.called.add(func.id)
                return func.id
            return None
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id in NAMESPACES
            and (func.attr in FUNCTIONS or func.attr == "clip")
        ):
            self.called.add(func.value.id)
            return func.attr
        return None

    def why_not(self, func: ast.expr) -> str:
        if isinstance(func, ast.Name) and func.id in STATEFUL:
            return (
                f"is formulaic's {func.id}(), a transform that learns from the data (centres, "
                "scales, knots, levels) or reads other rows"
            )
        if isinstance(func, ast.Name) and func.id == "C":
            return "uses C() inside an expression (C(column) must be a term of its own)"
        if isinstance(func, ast.Attribute):
            return (
                "calls a method or a function outside the elementwise list; a method such as "
                ".mean(), .rank(), .shift() or .any(), or np.cumsum(), reads other rows"
            )
        return "calls a function outside the elementwise list, which may read other rows"


def _literal(node: ast.expr) -> float | None:
    """The number a literal (``2``, ``-0.5``) stands for, or None."""
    sign = 1.0
    while isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        sign = -sign if isinstance(node.op, ast.USub) else sign
        node = node.operand
    value = node.value if isinstance(node, ast.Constant) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return sign * float(value)
    except OverflowError:  # an integer literal beyond float range
        return None


def iter_factors(formula: Any) -> Iterator[Any]:
    """Every factor of a parsed formulaic formula, response and every part included."""
    from formulaic.formula import SimpleFormula

    parts = [formula] if isinstance(formula, SimpleFormula) else formula._flatten()
    for part in parts:
        for term in part:
            yield from term.factors
