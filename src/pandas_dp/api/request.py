"""What a count / sum / mean / spread / quantile release asks for, parsed and validated.

A request is a list of named statistics (``n="count"``, ``total=("income", "sum")``, ...) and
the release's public arguments: ε, δ, bounds, fill values, mechanism, confidence level and
post-processing. :func:`validate` checks all of them before anything reads the data or the
budget; :mod:`pandas_dp.api.aggregation` then plans the measurements.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import pandas as pd

from pandas_dp.api.caps import Caps
from pandas_dp.api.pipeline import Target
from pandas_dp.api.results import PostProcess
from pandas_dp.api.validation import check_column, parse_bounds, parse_fill
from pandas_dp.budget import parse_delta, parse_epsilon
from pandas_dp.engines import Grouping
from pandas_dp.errors import DPTypeError, DPValueError
from pandas_dp.mechanisms.accuracy import check_confidence
from pandas_dp.mechanisms.quantile import DEFAULT_CELLS, MAX_CELLS
from pandas_dp.units import positive_int

HOWS = ("count", "sum", "mean", "var", "std", "median")
#: Statistics of spread, computed from the count and the first two centred moments.
SPREADS = ("var", "std")
MECHANISMS = ("laplace", "gaussian")


@dataclass(frozen=True)
class Stat:
    """One requested statistic: ``how`` (count/sum/mean) of ``column`` (None: rows)."""

    name: Hashable
    how: str
    column: Hashable | None = None
    q: Fraction | None = None  # for quantiles
    ddof: int = 1  # for var and std, as in pandas


def parse_named(named: Mapping[Any, Any]) -> list[Stat]:
    """Parse pandas-style named aggregations (``n="count"``, ``avg=("income", "mean")``)."""
    if not named:
        raise DPValueError('agg needs at least one named statistic, e.g. n="count"')
    stats = []
    for name, spec in named.items():
        if isinstance(spec, str):
            column, how = None, spec
        elif isinstance(spec, pd.NamedAgg):  # a tuple in pandas 2, a plain class in pandas 3
            column, how = spec.column, str(spec.aggfunc)
        elif isinstance(spec, tuple) and len(spec) == 2:
            column, how = spec
        else:
            raise DPTypeError(
                f"{name}={spec!r}: give 'count', or a (column, 'count'|'sum'|'mean') pair"
            )
        if how not in HOWS:
            raise DPValueError(f"{name}: unsupported statistic {how!r}; choose from {HOWS}")
        if column is None and how != "count":
            raise DPValueError(f"{name}: {how!r} needs a column, e.g. ('income', {how!r})")
        if how == "median":
            stats.append(Stat(name, "quantile", column, Fraction(1, 2)))
        else:
            stats.append(Stat(name, how, column))
    return stats


@dataclass(frozen=True)
class Request:
    """Everything a count/sum/mean release needs, validated."""

    stats: list[Stat]
    epsilon: Fraction
    bounds: dict[Hashable, tuple[float, float]]
    fill: dict[Hashable, float | None]
    grouping: Grouping | None
    caps: Caps
    query: str
    delta: Fraction | None = None
    gaussian: bool = False
    confidence: float | None = None
    post: PostProcess = field(default_factory=PostProcess)
    cells: int = DEFAULT_CELLS
    sources: tuple[str, ...] = ()  # where bounds and keys came from, for the ledger

    @property
    def selecting(self) -> bool:
        """Whether keys are chosen from the data (DP partition selection)."""
        return self.grouping is not None and self.grouping.keys is None


def validate(
    target: Target,
    stats: list[Stat],
    *,
    epsilon: Any,
    bounds: Any = None,
    fillna: Any = None,
    delta: Any = None,
    mechanism: Any = "laplace",
    ci: Any = None,
    post: PostProcess | None = None,
    grouping: Grouping | None = None,
    caps: Caps | None = None,
    query: str,
    per_column: bool = True,
    cells: Any = None,
    keys_from: str = "",
) -> Request:
    """Check every public argument of a release before anything else happens.

    With ``per_column``, ``bounds`` and ``fillna`` may be ``{column: value}`` mappings;
    otherwise they are the single column's own values.
    """
    eps = parse_epsilon(epsilon)
    if mechanism not in MECHANISMS:
        raise DPValueError(f"mechanism must be one of {MECHANISMS}, got {mechanism!r}")
    confidence = None if ci is None else 1.0 - _alpha(ci)
    if confidence is not None and any(s.how == "quantile" for s in stats):
        raise DPValueError(
            "quantiles come with a rank-error guarantee, not an interval in the column's "
            "units; leave ci out and see priv.dp.preview for the rank error"
        )
    post = post or PostProcess()
    if confidence is not None and post.total is not None:
        raise DPValueError("ci cannot be combined with total=: intervals are for raw counts")
    for stat in stats:
        if stat.column is not None:
            check_column(target.engine, target.data, stat.column, numeric=stat.how != "count")
    bounds_by_col = _per_column(bounds, stats, "bounds", per_column)
    fill_by_col = _per_column(fillna, stats, "fillna", per_column)
    parsed_bounds: dict[Hashable, tuple[float, float]] = {}
    fills: dict[Hashable, float | None] = {}
    sources = [keys_from] if keys_from else []
    schema = target.session.schema
    for stat in stats:
        if stat.column is None or stat.how == "count" or stat.column in parsed_bounds:
            continue
        where = "bounds" if not isinstance(bounds, Mapping) else f"bounds[{stat.column!r}]"
        given = bounds_by_col.get(stat.column)
        if given is None and schema is not None and schema.rules(stat.column).bounds:
            rules = schema.rules(stat.column)
            given = rules.bounds
            sources.append(f"bounds of {stat.column} from the {rules.bounds_from}")
        parsed_bounds[stat.column] = parse_bounds(given, where)
        lower, upper = parsed_bounds[stat.column]
        fills[stat.column] = parse_fill(fill_by_col.get(stat.column), lower, upper)
    parsed_delta = None if delta is None else parse_delta(delta)
    grid = DEFAULT_CELLS if cells is None else positive_int(cells, "cells")
    if grid > MAX_CELLS:
        raise DPValueError(f"cells must be at most {MAX_CELLS}, got {grid}")
    return Request(
        stats, eps, parsed_bounds, fills, grouping, caps or Caps(), query, parsed_delta,
        mechanism == "gaussian", confidence, post, grid, tuple(sources),
    )  # fmt: skip


def _alpha(ci: Any) -> float:
    try:
        return check_confidence(ci)
    except TypeError as error:
        raise DPTypeError(f"ci: {error}") from None
    except ValueError as error:
        raise DPValueError(f"ci: {error}") from None


def _per_column(value: Any, stats: list[Stat], what: str, per_column: bool) -> dict:
    """Accept one value for the single column involved, or a ``{column: value}`` mapping."""
    columns = [s.column for s in stats if s.column is not None and s.how != "count"]
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
