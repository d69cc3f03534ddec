"""Validate a release's public options, once, into a :class:`~.types.Request`.

ε, δ, the mechanism, the confidence level, bounds, fill values, the quantile grid and
post-processing are checked here, before anything reads the data or the budget. Every
message may echo what the *user* passed (bounds, a column name), never a value read from
the data. Release files go through the same functions, so the rules cannot drift.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Hashable, Mapping, Sequence
from fractions import Fraction
from typing import Any, Literal

import pandas as pd
from pandas.api import types as ptypes

from pandas_dp.api.caps import Caps
from pandas_dp.api.measurement.weighted import Weights
from pandas_dp.api.release.types import Request, Target
from pandas_dp.api.statistics import Statistic
from pandas_dp.api.statistics.postprocess import PostProcess
from pandas_dp.api.statistics.weighted import weighted
from pandas_dp.api.temporal import ValueKind, temporal_statistic
from pandas_dp.api.validation import check_column, parse_bounds, parse_column_bounds, parse_fill
from pandas_dp.budget import epsilon_for_rho, parse_delta, parse_epsilon
from pandas_dp.engines import Grouping
from pandas_dp.errors import DPTypeError, DPValueError
from pandas_dp.mechanisms.accuracy import check_confidence
from pandas_dp.mechanisms.quantile import DEFAULT_CELLS, MAX_CELLS
from pandas_dp.units import positive_int

MECHANISMS = ("laplace", "gaussian")


def parse_confidence(ci: Any) -> float | None:
    """A confidence level in (0, 1), or None."""
    if ci is None:
        return None
    try:
        return 1.0 - check_confidence(ci)
    except TypeError as error:
        raise DPTypeError(f"ci: {error}") from None
    except ValueError as error:
        raise DPValueError(f"ci: {error}") from None


def parse_mechanism(mechanism: Any) -> bool:
    """Whether the noise is Gaussian (else discrete Laplace)."""
    if mechanism not in MECHANISMS:
        raise DPValueError(f"mechanism must be one of {MECHANISMS}, got {mechanism!r}")
    return bool(mechanism == "gaussian")


def parse_cells(cells: Any) -> int:
    """The quantile grid's number of cells."""
    grid = DEFAULT_CELLS if cells is None else positive_int(cells, "cells")
    if grid > MAX_CELLS:
        raise DPValueError(f"cells must be at most {MAX_CELLS}, got {grid}")
    return grid


def validate(
    target: Target,
    stats: Sequence[Statistic],
    *,
    epsilon: Any = None,
    query: str,
    bounds: Any = None,
    fillna: Any = None,
    delta: Any = None,
    mechanism: Any = "laplace",
    ci: Any = None,
    post: PostProcess | None = None,
    grouping: Grouping | None = None,
    caps: Caps | None = None,
    per_column: bool = True,
    cells: Any = None,
    keys_from: str = "",
    accuracy: Any = None,
    min_count: Any = None,
    selection: Any = "threshold",
    relative_error: Any = False,
    weights: Any = None,
    weight_bounds: Any = None,
    rho: Any = None,
) -> Request:
    """Check every public argument of a release before anything else happens.

    With ``per_column``, ``bounds`` and ``fillna`` may be ``{column: value}`` mappings;
    otherwise they are the single column's own values.
    """
    gaussian = parse_mechanism(mechanism)
    eps, priced_rho = _price(target, query, epsilon, rho, delta, gaussian)
    confidence = parse_confidence(ci)
    post = (post or PostProcess()).with_min_count(min_count)
    if confidence is not None and post.total is not None:
        raise DPValueError("ci cannot be combined with total=: intervals are for raw counts")
    kinds = _value_kinds(target, stats)
    parsed_weights = parse_weights(target, weights, weight_bounds)
    if parsed_weights is not None:
        stats = weighted(stats, parsed_weights.column)
        if post.total is not None:
            raise DPValueError(
                "total= fits counts to an integer total; weighted counts (sums of weights) "
                "cannot take it: leave total out"
            )
    sources = [keys_from] if keys_from else []
    parsed_bounds, fills = _bounds_and_fills(
        target, stats, kinds, bounds, fillna, per_column, sources
    )
    parsed_delta: Fraction | None = None if delta is None else parse_delta(delta)
    return Request(
        tuple(stats), eps, query, parsed_bounds, fills, grouping, caps or Caps(),
        parsed_delta, gaussian, confidence, post, parse_cells(cells), tuple(sources),
        priorities=parse_accuracy(accuracy, stats), selection=parse_selection(selection),
        relative_error=_relative_error(
            relative_error, confidence, [s for s in stats if s.reads_values], kinds
        ),
        weights=parsed_weights,
        count_quantiles=min_count is not None and post.min_count > 0,
        integral_columns=_integral_columns(target, parsed_bounds, fills),
        integer_columns=_integral_columns(target, parsed_bounds, {}),
        kinds={column: kind for column, kind in kinds.items() if kind.temporal},
        rho=priced_rho,
    )  # fmt: skip


def _value_kinds(target: Target, stats: Sequence[Statistic]) -> dict[Hashable, ValueKind]:
    """Check every statistic's column (public dtypes only); the value kind of those read."""
    kinds: dict[Hashable, ValueKind] = {}
    for stat in stats:
        if stat.in_memory_only and not target.engine.in_memory:
            raise DPValueError(
                f"{stat.how} is not available on {target.engine.name} collections yet: each "
                "partition would count its own distinct values. Compute it on a pandas frame "
                "protected with the same budget, or release a count instead"
            )
        if stat.column is None:
            continue
        check_column(
            target.engine, target.data, stat.column, numeric=stat.reads_values,
            known=target.session.columns, temporal=True, dtype_of=target.dtype,
        )  # fmt: skip
        if stat.reads_values:
            kind = kinds[stat.column] = ValueKind.of(target.dtype(stat.column))
            temporal_statistic(kind, stat.how, stat.on_time, stat.column)
    return kinds


def _bounds_and_fills(
    target: Target,
    stats: Sequence[Statistic],
    kinds: dict[Hashable, ValueKind],
    bounds: Any,
    fillna: Any,
    per_column: bool,
    sources: list[str],
) -> tuple[dict[Hashable, tuple[float, float]], dict[Hashable, float | None]]:
    """Each read column's public bounds (given, else the schema's) and ``fillna`` value.

    Where bounds come from the schema, ``sources`` gets a line for the ledger.
    """
    bounds_by_col = _per_column(bounds, stats, "bounds", per_column)
    fill_by_col = _per_column(fillna, stats, "fillna", per_column)
    parsed: dict[Hashable, tuple[float, float]] = {}
    fills: dict[Hashable, float | None] = {}
    schema = target.session.schema
    for stat in stats:
        column = stat.column
        if column is None or not stat.reads_values or column in parsed:
            continue
        where = "bounds" if not isinstance(bounds, Mapping) else f"bounds[{column!r}]"
        given = bounds_by_col.get(column)
        if given is None and schema is not None and schema.rules(column).bounds:
            rules = schema.rules(column)
            given = rules.bounds
            sources.append(f"bounds of {column} from the {rules.bounds_from}")
        kind = kinds[column]
        parsed[column] = parse_column_bounds(given, where, kind, column)
        lower, upper = parsed[column]
        fills[column] = parse_fill(fill_by_col.get(column), lower, upper, kind, column)
    return parsed, fills


def parse_weights(target: Target, weights: Any, weight_bounds: Any) -> Weights | None:
    """The weight column and its public bounds ``0 <= lower < upper`` (or None: unweighted).

    Bounds come from ``weight_bounds``, else from the session's schema; the column must be
    numeric like any summed column.
    """
    if weights is None:
        if weight_bounds is not None:
            raise DPValueError("weight_bounds needs weights='<weight column>'")
        return None
    try:
        hash(weights)
    except TypeError:  # a Series or array of weights: never echoed (it holds data values)
        raise DPTypeError(
            f"weights must name a column of the frame, e.g. weights='w', got a "
            f"{type(weights).__name__}: add the weights as a column before protect()"
        ) from None
    if target.column is not None:
        raise DPValueError(
            "weights need the DataFrame form, which holds the weight column: "
            "priv.dp.sum('x', weights='w', weight_bounds=(0, W), ...)"
        )
    check_column(target.engine, target.data, weights, known=target.session.columns)
    source = ""
    schema = target.session.schema
    if weight_bounds is None and schema is not None and schema.rules(weights).bounds:
        weight_bounds, source = schema.rules(weights).bounds, schema.rules(weights).bounds_from
    if weight_bounds is None:
        raise DPValueError(
            f"weights={weights!r} needs weight_bounds=(lower, upper): public limits of one "
            "row's weight, e.g. (0, 50) for survey weights of at most 50 (or schema bounds "
            "for the weight column); pandas-dp never reads them off the data"
        )
    return Weights(weights, *parse_weight_bounds(weight_bounds), source)


def parse_weight_bounds(weight_bounds: Any) -> tuple[float, float]:
    """Public bounds ``0 <= lower < upper`` of one row's weight (release files use it too)."""
    lower, upper = parse_bounds(weight_bounds, "weight_bounds")
    if lower < 0:
        raise DPValueError(
            f"weight_bounds must have lower >= 0, got ({lower:g}, {upper:g}): a negative "
            "weight would turn a row's value around, and survey weights are non-negative; "
            "shift or drop negative weights on a copy first if they are errors"
        )
    return lower, upper


def _integral_columns(
    target: Target,
    bounds: Mapping[Hashable, tuple[float, float]],
    fills: Mapping[Hashable, float | None],
) -> frozenset[Hashable]:
    """Columns of an integer or boolean dtype whose bounds (and fill value) are integers.

    Their sums are whole numbers before the noise, so they are released as integers, as
    pandas sums them (public: dtypes and arguments only).
    """
    whole = []
    for column, (lower, upper) in bounds.items():
        dtype = target.dtype(column)
        fill = fills.get(column)
        numbers = [lower, upper] + ([] if fill is None else [fill])
        if (
            (ptypes.is_integer_dtype(dtype) or ptypes.is_bool_dtype(dtype))
            and not isinstance(dtype, pd.CategoricalDtype)
            and all(float(n).is_integer() for n in numbers)
        ):
            whole.append(column)
    return frozenset(whole)


def _relative_error(
    relative_error: Any, confidence: float | None, stats: Sequence[Statistic] = (),
    kinds: Mapping[Hashable, ValueKind] | None = None,
) -> bool:  # fmt: skip
    if not isinstance(relative_error, bool):
        given = type(relative_error).__name__
        raise DPTypeError(f"relative_error must be True or False, got {given}")
    if relative_error and confidence is None:
        raise DPValueError("relative_error=True needs intervals: pass ci=0.95 (or another level)")
    for stat in stats if relative_error else ():
        kind = (kinds or {}).get(stat.column)
        if kind is not None and kind.kind == "datetime" and stat.on_time == "point":
            raise DPValueError(
                f"relative_error has no meaning for {stat.how} of datetime column "
                f"{stat.column!r}: a datetime's size depends on its origin (1970). Read the "
                "interval's width instead (upper - lower)"
            )
    return relative_error


def parse_selection(selection: Any) -> Literal["threshold", "optimal"]:
    """How keys are chosen from the data: ``"threshold"`` or ``"optimal"``."""
    if selection == "threshold":
        return "threshold"
    if selection == "optimal":
        return "optimal"
    raise DPValueError(f"selection must be 'threshold' or 'optimal', got {selection!r}")


def parse_accuracy(accuracy: Any, stats: Sequence[Statistic]) -> tuple[tuple[Hashable, float], ...]:
    """``{statistic name: weight}``: how much each statistic's error counts in the ε split."""
    if accuracy is None:
        return ()
    if not isinstance(accuracy, Mapping) or not accuracy:
        raise DPTypeError(
            'accuracy must be a dict of statistic names to weights, e.g. {"m": 2, "s": 1}'
        )
    names = [stat.name for stat in stats]
    parsed = []
    for name, weight in accuracy.items():
        if name not in names:
            raise DPValueError(f"accuracy names {name!r}, which is not one of {names}")
        if isinstance(weight, bool) or not isinstance(weight, numbers.Real):
            raise DPTypeError(f"accuracy[{name!r}] must be a number, got {type(weight).__name__}")
        if not (math.isfinite(float(weight)) and float(weight) > 0):
            raise DPValueError(f"accuracy[{name!r}] must be a positive number, got {weight!r}")
        parsed.append((name, float(weight)))
    return tuple(parsed)


def _per_column(value: Any, stats: Sequence[Statistic], what: str, per_column: bool) -> dict:
    """Accept one value for the single column involved, or a ``{column: value}`` mapping."""
    columns = [s.column for s in stats if s.column is not None and s.reads_values]
    if per_column and isinstance(value, Mapping):
        return dict(value)
    if value is None:
        return {}
    distinct = list(dict.fromkeys(columns))
    if len(distinct) > 1:
        raise DPValueError(
            f"{what} must be a {{column: value}} dict when several columns are summed: {distinct}"
        )
    return dict.fromkeys(distinct, value)


def _price(
    target: Target, query: str, epsilon: Any, rho: Any, delta: Any, gaussian: bool
) -> tuple[Fraction, Fraction | None]:
    """The release's ε, and its ρ when it is priced in zCDP.

    ``rho=`` prices a release in zCDP (a session with a ρ budget, or ``accounting="zcdp"``):
    its measurements share ρ, each with the ε whose ``ε²/2`` is its share. In a ρ session,
    Gaussian noise is priced in ρ too: ``epsilon=ε`` costs ``ε²/2``, as Laplace noise of that
    ε does, and needs no δ.
    """
    session = target.session
    zcdp = session.total.is_zcdp or session.accounting == "zcdp"
    if rho is not None:
        if epsilon is not None:
            raise DPValueError(f"{query}: give epsilon or rho, not both")
        if not zcdp:
            raise DPValueError(
                f"{query}: rho= prices a release in zero-concentrated DP, but this session "
                f"accounts its budget {session.total} by {session.accounting} composition; "
                "pass epsilon=..., or protect the frame with rho=... (or accounting='zcdp')"
            )
        parsed = parse_epsilon(rho, "rho")
        if delta is not None:
            raise DPValueError(f"{query}: a release priced in rho needs no delta; leave it out")
        return epsilon_for_rho(parsed), parsed
    if epsilon is None:  # a missing required argument is a TypeError in Python
        raise DPTypeError(
            f"{query} needs a budget: epsilon=..."
            + (" (or rho=... in this zCDP session)" if zcdp else "")
        )
    eps = parse_epsilon(epsilon)
    if gaussian and session.total.is_zcdp:
        if delta is not None:
            raise DPValueError(
                f"{query}: this session's budget is in rho, so Gaussian noise is priced in "
                "rho (epsilon=e costs e²/2, as Laplace noise does) and needs no delta; leave "
                "delta out, or pass rho=... instead of epsilon"
            )
        return eps, eps * eps / 2
    return eps, None
