"""Validate a release's public options, once, into a :class:`~pandas_dp.planning.request.Request`.

ε, δ, the mechanism, the confidence level, bounds, fill values, the quantile grid and
post-processing are checked here, before anything reads the data or the budget. Every
message may echo what the *user* passed (bounds, a column name), never a value read from
the data. Release files go through the same functions, so the rules cannot drift.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from fractions import Fraction

import numpy as np
import pandas as pd
from pandas.api import types as ptypes

from pandas_dp.api.caps import caps_for
from pandas_dp.api.release.option_values import (
    MECHANISMS,
    Noise,
    parse_accuracy,
    parse_relative_error,
    parse_selection,
)
from pandas_dp.api.release.types import ReleaseOptions, Target
from pandas_dp.api.temporal import ValueKind, temporal_statistic
from pandas_dp.api.validation import (
    bounds_mapping,
    check_column,
    parse_bounds,
    parse_column_bounds,
    parse_fill,
)
from pandas_dp.budget import (
    RhoBudget,
    epsilon_for_rho,
    exact,
    number_text,
    parse_delta,
    parse_epsilon,
)
from pandas_dp.errors import DPTypeError, DPValueError
from pandas_dp.measures.aggregates import Grouping
from pandas_dp.mechanisms.accuracy import check_confidence
from pandas_dp.mechanisms.quantile import DEFAULT_CELLS, MAX_CELLS
from pandas_dp.planning.measurement.weighted import Weights
from pandas_dp.planning.request import Caps, ColumnFacts, Presentation, Pricing, Request
from pandas_dp.planning.statistics import Statistic
from pandas_dp.planning.statistics.postprocess import PostProcess
from pandas_dp.planning.statistics.weighted import weighted
from pandas_dp.units import positive_int


def parse_confidence(ci: float | None) -> float | None:
    """A confidence level in (0, 1), or None."""
    if ci is None:
        return None
    try:
        return 1.0 - check_confidence(ci)
    except TypeError as error:
        raise DPTypeError(f"ci: {error}") from None
    except ValueError as error:
        raise DPValueError(f"ci: {error}") from None


def parse_mechanism(mechanism: object) -> bool:
    """Whether the noise is Gaussian (else discrete Laplace)."""
    if mechanism not in MECHANISMS:
        raise DPValueError(f"mechanism must be one of {MECHANISMS}, got {mechanism!r}")
    return Noise(mechanism).gaussian


def asked_text(epsilon: object, rho: object = None, delta: object = None) -> str:
    """What a call asked for, for the ledger's ``asked`` column: ``epsilon=0.2, delta=1e-06``.

    Read after validation, so every amount given is a real number.
    """
    given = [("epsilon", epsilon), ("rho", rho), ("delta", delta)]
    return ", ".join(f"{name}={number_text(exact(v, name))}" for name, v in given if v is not None)


def parse_cells(cells: object) -> int:
    """The quantile grid's number of cells."""
    grid = DEFAULT_CELLS if cells is None else positive_int(cells, "cells")
    if grid > MAX_CELLS:
        raise DPValueError(f"cells must be at most {MAX_CELLS}, got {grid}")
    return grid


def validate(
    target: Target, stats: Sequence[Statistic], options: ReleaseOptions, *, query: str,
    grouping: Grouping | None = None, caps: Caps | None = None, per_column: bool = True,
    keys_from: str = "", selection: str = "threshold",
) -> Request:  # fmt: skip
    """Check every public option of a release before anything else happens.

    With ``per_column``, ``options.bounds`` and ``options.fillna`` may be ``{column: value}``
    mappings; otherwise they are the single column's own. The keywords come from the query.
    """
    gaussian = parse_mechanism(options.mechanism)
    epsilon, rho = _price(target, query, options, gaussian)
    # rho= in a ρ session: additive noise is discrete Gaussian, calibrated to ρ (σ² = Δ²/(2ρ)).
    gaussian = gaussian or (rho is not None and isinstance(target.session.total, RhoBudget))
    confidence = parse_confidence(options.ci)
    post = _post(options, confidence)
    kinds = _value_kinds(target, stats)
    weights = parse_weights(target, options.weights, options.weight_bounds)
    stats = _weighted(stats, weights, post)
    sources = [keys_from] if keys_from else []
    bounds, fills = _bounds_and_fills(target, stats, kinds, options, per_column, sources)
    delta = None if options.delta is None else parse_delta(options.delta)
    cells = parse_cells(options.cells)
    priorities = parse_accuracy(options.accuracy, stats)
    rule = parse_selection(selection)
    relative_error = parse_relative_error(options.relative_error, confidence, stats, kinds)
    pricing = Pricing(
        epsilon=epsilon, rho=rho, delta=delta, gaussian=gaussian, priorities=priorities,
        asked=asked_text(options.epsilon, options.rho, options.delta),
    )  # fmt: skip
    columns = ColumnFacts(
        bounds=bounds, fill=fills, cells=cells, weights=weights,
        integer_columns=_integral_columns(target, bounds, {}),
        nullable=frozenset(c for c in _columns_of(stats) if may_hold_missing(target, c)),
    )  # fmt: skip
    presentation = Presentation(
        confidence=confidence, post=post, relative_error=relative_error,
        count_quantiles=options.min_count is not None and post.min_count > 0,
        integral_columns=_integral_columns(target, bounds, fills),
        kinds={column: kind for column, kind in kinds.items() if kind.temporal},
    )  # fmt: skip
    return Request(
        stats=tuple(stats), query=query, pricing=pricing, columns=columns,
        presentation=presentation, grouping=grouping,
        caps=caps or caps_for(target, grouping is not None), selection=rule,
        sources=tuple(sources),
    )  # fmt: skip


def _columns_of(stats: Sequence[Statistic]) -> list[Hashable]:
    """The statistics' columns, each once, in order."""
    return list(dict.fromkeys(stat.column for stat in stats if stat.column is not None))


def may_hold_missing(target: Target, column: Hashable) -> bool:
    """Whether ``column`` may hold missing values: the schema's rule, else the dtype's."""
    schema = target.session.schema
    if schema is not None and schema.rules(column).nullable is not None:
        return bool(schema.rules(column).nullable)
    dtype = target.dtype(column)
    return not (isinstance(dtype, np.dtype) and dtype.kind in "biu")


def _post(options: ReleaseOptions, confidence: float | None) -> PostProcess:
    """The counts' post-processing with ``min_count``; ``total`` refuses intervals."""
    post = (options.post or PostProcess()).with_min_count(options.min_count)
    if confidence is not None and post.total is not None:
        raise DPValueError("ci cannot be combined with total=: intervals are for raw counts")
    return post


def _weighted(
    stats: Sequence[Statistic], weights: Weights | None, post: PostProcess
) -> Sequence[Statistic]:
    """The statistics weighted by ``weights``; fitting weighted counts to a total is refused."""
    if weights is None:
        return stats
    stats = weighted(stats, weights.column)
    if post.total is not None:
        raise DPValueError(
            "total= fits counts to an integer total; weighted counts (sums of weights) "
            "cannot take it: leave total out"
        )
    return stats


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
    options: ReleaseOptions,
    per_column: bool,
    sources: list[str],
) -> tuple[dict[Hashable, tuple[float, float]], dict[Hashable, float | None]]:
    """Each read column's public bounds (given, else the schema's) and ``fillna`` value.

    Where bounds come from the schema, ``sources`` gets a line for the ledger.
    """
    bounds = bounds_mapping(options.bounds)
    table = bounds is not options.bounds  # a table of bounds: one row per column, always
    bounds_by_col = _per_column(bounds, stats, "bounds", per_column or table)
    fill_by_col = _per_column(options.fillna, stats, "fillna", per_column)
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


def parse_weights(target: Target, weights: object, weight_bounds: object) -> Weights | None:
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


def parse_weight_bounds(weight_bounds: object) -> tuple[float, float]:
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
        ends = [lower, upper] + ([] if fill is None else [fill])
        if (
            (ptypes.is_integer_dtype(dtype) or ptypes.is_bool_dtype(dtype))
            and not isinstance(dtype, pd.CategoricalDtype)
            and all(float(n).is_integer() for n in ends)
        ):
            whole.append(column)
    return frozenset(whole)


def _per_column(
    value: object, stats: Sequence[Statistic], what: str, per_column: bool
) -> dict[Hashable, object]:
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
    target: Target, query: str, options: ReleaseOptions, gaussian: bool
) -> tuple[Fraction, Fraction | None]:
    """The release's ε, and its ρ when it is priced in zCDP.

    ``rho=`` prices a release in zCDP (a session with a ρ budget, or ``accounting="zcdp"``):
    its measurements share ρ, each with the ε whose ``ε²/2`` is its share. In a ρ session,
    Gaussian noise is priced in ρ too: ``epsilon=ε`` costs ``ε²/2``, as Laplace noise of that
    ε does, and needs no δ.
    """
    session = target.session
    epsilon, delta = options.epsilon, options.delta
    zcdp = session.in_zcdp
    if options.rho is not None:
        return _price_rho(target, query, options, zcdp)
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


def price(
    target: Target, query: str, epsilon: object, rho: object, delta: object = None
) -> tuple[Fraction, Fraction | None, str]:
    """The ε, ρ (None: priced in ε) and ``asked`` text of a release given only a budget.

    For the families that validate their own options (choices, tables, synthetic data,
    hierarchies, running totals): the same rules as every other release's.
    """
    options = ReleaseOptions(epsilon=epsilon, rho=rho, delta=delta)  # type: ignore[arg-type]
    eps, parsed = _price(target, query, options, gaussian=False)
    return eps, parsed, asked_text(epsilon, rho, delta)


def epsilon_of(
    target: Target, query: str, epsilon: object, rho: object, delta: object = None
) -> tuple[Fraction, str]:
    """The ε a family that works in ε (ρ = ε²/2 in a ρ session) spends, and ``asked``.

    Tables, synthetic data, hierarchies and running totals calibrate from ε, spending
    ``ρ = ε²/2`` in a session accounted in zCDP; ``rho=`` (a ρ session, or
    ``accounting="zcdp"``) gives them the ε whose ``ε²/2`` is ρ, rounded down
    (:func:`~pandas_dp.budget.epsilon_for_rho`). The same rules as :func:`price`.
    """
    eps, _, _ = price(target, query, epsilon, rho, delta)
    return eps, asked_text(epsilon, rho, delta)


def _price_rho(
    target: Target, query: str, options: ReleaseOptions, zcdp: bool
) -> tuple[Fraction, Fraction]:
    """``rho=``: the ε of ρ and ρ itself, in a session that accounts in zCDP."""
    session = target.session
    if options.epsilon is not None:
        raise DPValueError(f"{query}: give epsilon or rho, not both")
    if not zcdp:
        raise DPValueError(
            f"{query}: rho= prices a release in zero-concentrated DP, but this session "
            f"accounts its budget {session.total} by {session.accounting} composition; "
            "pass epsilon=..., or protect the frame with rho=... (or accounting='zcdp')"
        )
    parsed = parse_epsilon(options.rho, "rho")
    if options.delta is not None:
        raise DPValueError(f"{query}: a release priced in rho needs no delta; leave it out")
    return epsilon_for_rho(parsed), parsed
