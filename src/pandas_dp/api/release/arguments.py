"""The keyword arguments that release methods share, typed once (PEP 692).

Every release method takes the same privacy arguments (``epsilon``, ``delta``,
``mechanism``) and, when it reads values, the same clipping arguments (``bounds``,
``fillna``). They are declared here as ``TypedDict`` classes and spelled
``**options: Unpack[ValueArgs]`` in the accessors, so a type checker and an IDE see every
keyword with its type, and adding an argument is one line here instead of one per method.
:mod:`~pandas_dp.api.release.options` checks their values at run time; the names are
checked first, by :func:`~pandas_dp.api.release.consumers.checked_keywords` on each public
method (with :func:`keywords_of` and :func:`check_keywords` here): a misspelt keyword is
refused with the closest name and the public method's name, before anything is read or
charged.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import os
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from decimal import Decimal
from fractions import Fraction
from typing import (
    Any,
    Literal,
    TypeAlias,
    TypedDict,
    TypeVar,
    Unpack,
    get_args,
    get_origin,
    get_type_hints,
)

import numpy as np
import pandas as pd

from pandas_dp.errors import DPTypeError

#: A real number as a user may type it (bools are refused at run time).
Real: TypeAlias = int | float | Fraction | Decimal | np.integer | np.floating
#: ``(lower, upper)``, public clipping bounds of one column.
Bound: TypeAlias = tuple[Real, Real]
#: One column's bounds, or ``{column: (lower, upper)}`` for several columns (a column's
#: None: its schema's bounds), a table of them (``priv.dp.bounds``' result), or ``"auto"``:
#: released from the data with a share of the release's ε.
Bounds: TypeAlias = Bound | Mapping[Hashable, Bound | None] | pd.DataFrame | Literal["auto"] | None
#: A public fill value for missing entries, or ``{column: value}``.
Fill: TypeAlias = Real | Mapping[Hashable, Real] | None
#: The noise: discrete Laplace (pure ε-DP) or discrete Gaussian (needs δ > 0).
Mechanism: TypeAlias = Literal["laplace", "gaussian"]
#: The column(s) a method reads: one label, a list of labels, or None (the selected ones).
Columns: TypeAlias = Hashable | list[Hashable] | None
#: Public keys: a list of values, ``{column: values}``, a list of tuples or a MultiIndex.
Keys: TypeAlias = Sequence[object] | Mapping[Hashable, Sequence[object]] | object

#: What a scalar release returns without ``ci`` (a number) ...
NumberT = TypeVar("NumberT")
#: ... and with ``ci`` (an :class:`~pandas_dp.Estimate`); a preview returns a Preview.
EstimateT = TypeVar("EstimateT")


class NoiseArgs(TypedDict, total=False):
    """The privacy arguments of every release, and its row weights (DataFrame forms).

    ``epsilon``, or ``rho`` in a zCDP session: one of them is required.
    """

    epsilon: Real
    rho: Real | None
    delta: Real | None
    mechanism: Mechanism
    weights: Hashable | None
    weight_bounds: Bound | None


class ValueArgs(NoiseArgs, total=False):
    """A release that reads a column's values: its clipping and missing-value rules."""

    bounds: Bounds
    fillna: Fill


class RatioArgs(ValueArgs, total=False):
    """A mean or spread: the noisy count below which a group's value is NaN."""

    min_count: Real | None


class CountArgs(NoiseArgs, total=False):
    """Counts over keys or bins: free post-processing of the noisy counts."""

    nonnegative: bool
    total: Real | None


class MatrixArgs(TypedDict, total=False):
    """Covariance and correlation matrices: the columns' bounds, the cost, missing values."""

    bounds: Mapping[Hashable, tuple[Real, Real]] | None
    epsilon: Real  # or rho, in a zCDP session: one of them is required
    rho: Real | None
    delta: Real | None
    mechanism: Mechanism
    ci: float | None
    min_periods: int | None
    use: Literal["pairwise", "complete"]


class OLSArgs(TypedDict, total=False):
    """Linear models: the variables' bounds and levels, the cost, the intervals' level."""

    bounds: Mapping[Hashable, tuple[Real, Real]] | None
    keys: Mapping[Hashable, Sequence[object]] | None
    epsilon: Real | None  # or rho, in a zCDP session: one of them is required
    delta: Real | None
    rho: Real | None
    mechanism: Mechanism
    alpha: float
    #: Survey weights: a column of non-negative row weights and their public bounds.
    weights: Hashable | None
    weight_bounds: Bound | None


class GridArgs(TypedDict, total=False):
    """Quantiles: bounds, the cost, and the grid the answer lies on."""

    epsilon: Real  # or rho, in a zCDP session: one of them is required
    rho: Real | None
    bounds: Bounds
    cells: int | None
    #: Spend a share of ε on the (each group's) count and give NaN below it.
    min_count: Real | None


class ProtectArgs(TypedDict, total=False):
    """``protect``'s options shared by DataFrames and Series."""

    rho: Real | None
    accounting: Literal["basic", "advanced", "zcdp", "pld"]
    rng: int | None
    replace: bool
    ledger: str | os.PathLike[str] | None
    #: The table's name in the ledger's notes (a budget over several tables).
    name: str | None


class FrameProtectArgs(ProtectArgs, total=False):
    """``DataFrame.dp.protect``'s further options (a Series cannot hold a unit column)."""

    privacy_unit: Hashable | None
    max_rows_per_unit: int | Literal["auto"] | None
    schema: object
    validate: bool
    #: Another table of this session's budget (``people.dp.session``): no budget of its own.
    session: Any


class PlanningArgs(TypedDict, total=False):
    """``epsilon_for``: what the error bound depends on besides ε."""

    alpha: float
    bounds: Bounds
    #: A planning value for the row count (means' errors depend on it).
    expected_rows: float | None
    mean: float | None
    n: float | None  # the old name of expected_rows (a FutureWarning)
    mechanism: Mechanism
    delta: Real | None


F = TypeVar("F", bound=Callable[..., Any])


def unexpected_keyword(public: str, name: object, allowed: Collection[str]) -> str:
    """``"count() got an unexpected keyword argument 'epsilion'; did you mean 'epsilon'?"``."""
    close = difflib.get_close_matches(str(name), sorted(allowed), n=1)
    hint = (
        f"; did you mean {close[0]!r}?" if close
        else f"; it takes {', '.join(sorted(allowed))}" if allowed else ""
    )  # fmt: skip
    return f"{public}() got an unexpected keyword argument {name!r}{hint}"


def check_keywords(public: str, given: Collection[str], allowed: Collection[str]) -> None:
    """Refuse a keyword ``public()`` does not take (a :class:`DPTypeError` with a suggestion)."""
    for name in given:
        if name not in allowed:
            raise DPTypeError(unexpected_keyword(public, name, allowed))


def check_named(public: str, named: Mapping[str, object], allowed: Collection[str]) -> None:
    """Refuse a keyword of ``agg`` that is a misspelt option rather than a named statistic.

    A named statistic is ``name="count"`` or ``name=(column, statistic)``; a dict
    (``bound={"x": (0, 1)}``), or a value of another form under a name close to an option
    (``epsilion=0.1``, ``bonds=(0, 1)``), is a misspelt option.
    """
    for name, value in named.items():
        close = difflib.get_close_matches(name, sorted(allowed), n=1)
        if isinstance(value, Mapping) or (close and not _statistic_like(value)):
            raise DPTypeError(
                unexpected_keyword(public, name, allowed)
                + " (a named statistic is name=(column, statistic), or name='count')"
            )


def _statistic_like(value: object) -> bool:
    """Whether ``value`` has the form of a named statistic: a pair or a ``pd.NamedAgg``."""
    if hasattr(value, "aggfunc"):
        return True
    return isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], str)


@functools.cache
def keywords_of(function: Callable[..., object]) -> tuple[frozenset[str], str] | None:
    """The keywords ``function`` takes, and what its ``**`` parameter is.

    None when the signature cannot be read (Python's own checks then apply).

    ``"closed"``: none or a ``TypedDict`` (``**options: Unpack[ValueArgs]``), whose keys
    are then taken; ``"named"``: named statistics (``**named``); ``"open"``: anything.
    """
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return None
    named_kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    names = {p.name for p in parameters if p.kind in named_kinds and p.name != "self"}
    names |= getattr(function, "__extra_keywords__", frozenset())
    rest = [p for p in parameters if p.kind is inspect.Parameter.VAR_KEYWORD]
    if not rest:
        return frozenset(names), "closed"
    annotation = rest[0].annotation
    if isinstance(annotation, str):  # postponed: resolved in the function's own module
        try:
            annotation = get_type_hints(function, include_extras=True).get(rest[0].name)
        except Exception:  # a name only the type checker sees: no TypedDict to read
            annotation = None
    if get_origin(annotation) is Unpack:
        (typed,) = get_args(annotation)
        keys = getattr(typed, "__required_keys__", set()) | getattr(
            typed, "__optional_keys__", set()
        )
        return frozenset(names | set(keys)), "closed"
    return frozenset(names), "named" if rest[0].name == "named" else "open"


def passes_on(*names: str) -> Callable[[F], F]:
    """Decorator: ``names`` are passed on to a callee that explains why they do not apply.

    ``Series.dp.protect(privacy_unit=...)`` is told that a privacy unit needs a DataFrame,
    rather than that the keyword does not exist.
    """

    def mark(function: F) -> F:
        function.__extra_keywords__ = frozenset(names)  # type: ignore[attr-defined]
        return function

    return mark
