"""One planner for every count / sum / mean release, grouped or not.

A request is a list of named statistics (``n="count"``, ``total=("income", "sum")``, ...).
The planner turns it into the smallest set of noisy *measurements* -- a row count, a count of
non-missing values per column, a clipped sum, a centred clipped sum -- shares each one among
the statistics that need it (a mean reuses the call's count), splits ε equally among them
(sequential composition inside the release), and describes how to post-process the noisy
integers into the statistics. Grouped and ungrouped releases differ only in the grouping.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.accounting.events import PARALLEL, SEQUENTIAL, Measurement, Release
from pandas_dp.api.pipeline import Part, Plan, Selection, Target, count_part, sum_part
from pandas_dp.api.validation import check_column, parse_bounds, parse_fill
from pandas_dp.budget import parse_delta, parse_epsilon
from pandas_dp.engines import Grouping
from pandas_dp.engines.bounding import Bounding
from pandas_dp.engines.plan import Aggregate
from pandas_dp.errors import DPTypeError, DPValueError
from pandas_dp.mechanisms.lattice import lattice_at, lattice_exponent
from pandas_dp.mechanisms.postprocess import fit_to_total, round_to_total
from pandas_dp.mechanisms.selection import selection_threshold
from pandas_dp.units import positive_int

HOWS = ("count", "sum", "mean")


@dataclass(frozen=True)
class Stat:
    """One requested statistic: ``how`` (count/sum/mean) of ``column`` (None: rows)."""

    name: Hashable
    how: str
    column: Hashable | None = None


def parse_named(named: Mapping[Hashable, Any]) -> list[Stat]:
    """Parse pandas-style named aggregations (``n="count"``, ``avg=("income", "mean")``)."""
    if not named:
        raise DPValueError('agg needs at least one named statistic, e.g. n="count"')
    stats = []
    for name, spec in named.items():
        if isinstance(spec, str):
            column, how = None, spec
        elif isinstance(spec, tuple) and len(spec) == 2:  # pd.NamedAgg is a tuple too
            column, how = spec
        else:
            raise DPTypeError(
                f"{name}={spec!r}: give 'count', or a (column, 'count'|'sum'|'mean') pair"
            )
        if how not in HOWS:
            raise DPValueError(f"{name}: unsupported statistic {how!r}; choose from {HOWS}")
        if column is None and how != "count":
            raise DPValueError(f"{name}: {how!r} needs a column, e.g. ('income', {how!r})")
        stats.append(Stat(name, how, column))
    return stats


@dataclass(frozen=True)
class Caps:
    """How much one privacy unit can contribute to this release.

    Attributes
    ----------
    l1 : int
        Rows one unit can add in total: the multiplier of every sensitivity.
    l0 : int
        Groups one unit can touch.
    linf : int
        Rows one unit can add to one group.
    bounding : Bounding or None
        What the engine must enforce (None for row-level privacy: one row, one unit).
    """

    l1: int = 1
    l0: int = 1
    linf: int = 1
    bounding: Bounding | None = None

    def describe(self) -> str:
        """Ledger text."""
        if self.bounding is None:
            return "privacy unit: one row"
        return (
            f"privacy unit {self.bounding.unit!s}: ≤ {self.l0} groups, ≤ {self.linf} rows per "
            f"group, ≤ {self.l1} rows in all (rows beyond the caps dropped at random)"
        )


def caps_for(
    target: Target, grouped: bool, max_groups: Any = None, max_rows_per_group: Any = None
) -> Caps:
    """Contribution caps from the session's privacy unit and the query's own bounds."""
    unit = target.session.unit
    if unit.column is None:
        if max_groups is not None or max_rows_per_group is not None:
            raise DPValueError(
                "max_groups_per_unit / max_rows_per_group need a privacy unit; protect with "
                "privacy_unit='<id column>', max_rows_per_unit=k"
            )
        return Caps()
    k = unit.max_rows
    groups = k if max_groups is None else min(k, positive_int(max_groups, "max_groups_per_unit"))
    per_group = k
    if max_rows_per_group is not None:
        per_group = min(k, positive_int(max_rows_per_group, "max_rows_per_group"))
    if not grouped:
        groups, per_group = 1, k
    bounding = Bounding(
        unit.column,
        k,
        max_groups=groups if grouped and groups < k else None,
        max_rows_per_group=per_group if grouped and per_group < k else None,
        priorities=target.session.priorities,
    )
    return Caps(l1=min(k, groups * per_group), l0=groups, linf=per_group, bounding=bounding)


def _nullable(target: Target, column: Hashable) -> bool:
    """Whether the dtype can hold missing values (public: read from the dtype only)."""
    dtype = dict(target.engine.dtypes(target.data).items())[column]
    return not (isinstance(dtype, np.dtype) and dtype.kind in "biu")


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


def validate(
    target: Target,
    stats: list[Stat],
    *,
    epsilon: Any,
    bounds: Any = None,
    fillna: Any = None,
    delta: Any = None,
    grouping: Grouping | None = None,
    caps: Caps | None = None,
    query: str,
    per_column: bool = True,
) -> Request:
    """Check every public argument of a release before anything else happens.

    With ``per_column``, ``bounds`` and ``fillna`` may be ``{column: value}`` mappings;
    otherwise they are the single column's own values.
    """
    eps = parse_epsilon(epsilon)
    for stat in stats:
        if stat.column is not None:
            check_column(target.engine, target.data, stat.column, numeric=stat.how != "count")
    bounds_by_col = _per_column(bounds, stats, "bounds", per_column)
    fill_by_col = _per_column(fillna, stats, "fillna", per_column)
    parsed_bounds: dict[Hashable, tuple[float, float]] = {}
    fills: dict[Hashable, float | None] = {}
    for stat in stats:
        if stat.column is None or stat.how == "count" or stat.column in parsed_bounds:
            continue
        where = "bounds" if not isinstance(bounds, Mapping) else f"bounds[{stat.column!r}]"
        parsed_bounds[stat.column] = parse_bounds(bounds_by_col.get(stat.column), where)
        lower, upper = parsed_bounds[stat.column]
        fills[stat.column] = parse_fill(fill_by_col.get(stat.column), lower, upper)
    parsed_delta = None if delta is None else parse_delta(delta)
    return Request(stats, eps, parsed_bounds, fills, grouping, caps or Caps(), query, parsed_delta)


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


def plan(target: Target, request: Request, *, shape: str, post: PostProcess) -> Plan[Any]:
    """Turn a validated request into a runnable :class:`Plan`."""
    selecting = request.grouping is not None and request.grouping.keys is None
    sources = {stat.name: _sources(target, request, stat) for stat in request.stats}
    needs = list(dict.fromkeys(key for keys in sources.values() for key in keys))
    if selecting and ("rows",) not in needs:
        needs.append(("rows",))
    eps_each = request.epsilon / len(needs)
    caps = request.caps
    parts: dict[tuple[Any, ...], Part] = {}
    for key in needs:
        kind, column = key[0], key[1] if len(key) > 1 else None
        label = _LABELS[kind] if column is None else f"{_LABELS[kind]}({column})"
        if kind in ("rows", "nonnull"):
            parts[key] = count_part(eps_each, column, label, sensitivity=caps.l1)
        else:
            parts[key] = sum_part(
                column, request.bounds[column], eps_each, centered=kind == "csum",
                fill=request.fill[column], label=label, rows_per_unit=caps.l1,
                exponent=_shared_exponent(needs, column, request, eps_each / caps.l1),
            )  # fmt: skip
    selection, selection_note = _selection(target, request, parts, selecting)
    release = _release(request, tuple(parts.values()), selection_note)
    finish = _finisher(request, parts, sources, shape, post)
    return Plan(tuple(parts.values()), release, finish, request.grouping, caps.bounding, selection)


def _shared_exponent(
    needs: list[tuple[Any, ...]], column: Hashable, request: Request, epsilon: Fraction
) -> int | None:
    """One lattice step for a column's plain and centred sums, when both are released.

    The finer of the two steps, so that the engine rounds the column once and derives the
    centred sum exactly from the plain one; None when only one is needed or the finer step
    would let a row exceed the lattice's range.
    """
    if ("sum", column) not in needs or ("csum", column) not in needs:
        return None
    lower, upper = request.bounds[column]
    exponent = min(
        lattice_exponent(lower, upper, epsilon, centered=False),
        lattice_exponent(lower, upper, epsilon, centered=True),
    )
    try:
        lattice_at(lower, upper, exponent, centered=False)
    except ValueError:
        return None
    return exponent


def _count_key(
    target: Target, request: Request, column: Hashable | None, *, mean: bool
) -> tuple[Any, ...]:
    """The count a statistic uses: rows, unless missing values may exist and are skipped."""
    if column is None:
        return ("rows",)
    imputed = mean and request.fill.get(column) is not None
    if imputed or not _nullable(target, column):
        return ("rows",)
    return ("nonnull", column)


def _sources(target: Target, request: Request, stat: Stat) -> tuple[tuple[Any, ...], ...]:
    """The measurements a statistic is computed from (the mean's count comes last)."""
    if stat.how == "count":
        return (_count_key(target, request, stat.column, mean=False),)
    if stat.how == "sum":
        return (("sum", stat.column),)
    return (("csum", stat.column), _count_key(target, request, stat.column, mean=True))


def _selection(
    target: Target, request: Request, parts: dict, selecting: bool
) -> tuple[Selection | None, str]:
    if not selecting:
        if request.delta is not None:
            raise DPValueError(
                "delta is only used when keys are selected privately (keys=None); with "
                "public keys this release is pure ε-DP, so leave delta out"
            )
        return None, ""
    total = target.session.total
    if total.delta == 0:
        raise DPValueError(
            "no keys were given, and choosing keys from the data privately needs δ > 0, but "
            "this session is pure ε-DP. Either pass the public keys (keys=[...]), or have the "
            "data owner protect the frame with a delta (e.g. delta=1e-6)."
        )
    delta = request.delta
    if delta is None:  # the same share of the total δ as this release takes of the total ε
        delta = total.delta * min(Fraction(1), request.epsilon / total.epsilon)
    if delta == 0:
        raise DPValueError("partition selection needs delta > 0")
    rows = parts[("rows",)]
    caps = request.caps
    threshold = selection_threshold(rows.mechanism.effective_scale, delta, caps.l0, caps.linf)
    parts[("rows",)] = Part(
        rows.label, rows.measure, rows.mechanism,
        _with_delta(rows.measurement, delta), rows.lattice,
    )  # fmt: skip
    note = (
        f"keys chosen privately: a key is released when its noisy row count is ≥ {threshold} "
        f"(δ = {float(delta):.3g} for ≤ {caps.l0} keys per unit, ≤ {caps.linf} rows each)"
    )
    return Selection(rows.label, threshold), note


def _with_delta(measurement: Measurement, delta: Fraction) -> Measurement:
    return dataclasses.replace(measurement, delta=delta, label=f"{measurement.label}+selection")


#: Measurement labels, as they appear in the ledger: ``count``, ``count(income)``, ...
_LABELS = {"rows": "count", "nonnull": "count", "sum": "sum", "csum": "centred_sum"}


def _describe(label: str) -> str:
    kind, _, column = label.removesuffix("+selection").partition("(")
    column = column.removesuffix(")")
    if kind == "count":
        return f"the count of non-missing {column}" if column else "the row count"
    return f"the {kind.replace('_', ' ')} of {column}"


def _release(request: Request, parts: tuple[Part, ...], selection_note: str) -> Release:
    grouping = request.grouping
    columns = [str(c) for c in (grouping.by if grouping else ())]
    columns += [str(s.column) for s in request.stats if s.column is not None]
    groups = 1 if grouping is None or grouping.keys is None else len(grouping.keys)
    if len(parts) == 1:
        notes = [f"ε {request.epsilon} on {_describe(parts[0].label)}"]
    else:
        share = Fraction(1, len(parts))
        shares = ", ".join(f"{share} to {_describe(p.label)}" for p in parts)
        notes = [f"ε {request.epsilon} split equally: {shares}"]
    if grouping is not None:
        over = groups if grouping.keys is not None else "the released"
        notes.append(f"charged once: parallel composition over {over} disjoint groups")
    if selection_note:
        notes.append(selection_note)
    if request.caps.bounding is not None:
        notes.append(request.caps.describe())
    if any(s.how == "mean" for s in request.stats):
        notes.append("mean = centre + noisy centred sum / max(noisy count, 1), clipped to bounds")
    if any(f is not None for f in request.fill.values()):
        notes.append("missing values imputed with the public fillna value")
    elif request.fill:
        notes.append("missing values skipped")
    return Release(
        request.query,
        tuple(dict.fromkeys(columns)),
        tuple(p.measurement for p in parts),
        composition=PARALLEL if grouping is not None else SEQUENTIAL,
        groups=groups,
        bounds=tuple((str(c), lo, hi) for c, (lo, hi) in request.bounds.items()),
        note="; ".join(notes),
    )


@dataclass(frozen=True)
class PostProcess:
    """Free post-processing of released counts (no budget): clamp, fit to a total, round."""

    nonnegative: bool = False
    total: float | None = None

    @classmethod
    def of(cls, nonnegative: Any = False, total: Any = None) -> PostProcess:
        """Validate the user's options."""
        if not isinstance(nonnegative, bool):
            kind = type(nonnegative).__name__
            raise DPTypeError(f"nonnegative must be True or False, got {kind}")
        if total is None:
            return cls(nonnegative)
        if isinstance(total, bool) or not isinstance(total, int | float | np.number):
            raise DPTypeError("total must be a number (a previously released count)")
        value = float(total)
        if not np.isfinite(value):
            raise DPValueError("total must be finite")
        if nonnegative and value < 0:
            raise DPValueError("a non-negative fit needs a total of at least 0")
        return cls(nonnegative, value)

    def apply(self, counts: np.ndarray) -> np.ndarray:
        """Post-process one column of noisy counts."""
        if self.total is not None:
            fitted = fit_to_total(counts, self.total, nonnegative=self.nonnegative)
            if self.total.is_integer():
                return round_to_total(fitted, int(self.total))
            return fitted
        if self.nonnegative:
            return np.asarray(np.maximum(counts, 0))
        return counts


def mean_from(
    centred: Part, sums: Aggregate, counts: Aggregate, bounds: tuple[float, float]
) -> np.ndarray:
    """Post-process noisy centred sums and counts into means: never 0/0, always in bounds.

    ``centre + noisy centred sum / max(noisy count, 1)``, clipped to ``bounds``.
    """
    assert centred.lattice is not None
    centre = centred.lattice.to_real(centred.lattice.offset)
    denominators = np.maximum(np.asarray(counts, dtype=np.float64), 1.0)
    means = centre + centred.to_real(sums) / denominators
    return np.asarray(np.clip(means, *bounds), dtype=np.float64)


def _finisher(
    request: Request, parts: dict, sources: dict, shape: str, post: PostProcess
) -> Callable[[pd.Index | None, dict[str, Aggregate]], Any]:
    stats = request.stats

    def column_values(stat: Stat, noisy: dict[str, Aggregate]) -> np.ndarray:
        first = parts[sources[stat.name][0]]
        if stat.how == "count":
            return post.apply(np.asarray(noisy[first.label], dtype=np.int64))
        if stat.how == "sum":
            return np.asarray(first.to_real(noisy[first.label]), dtype=np.float64)
        count = parts[sources[stat.name][1]]
        return mean_from(first, noisy[first.label], noisy[count.label], request.bounds[stat.column])

    def finish(keys: pd.Index | None, noisy: dict[str, Aggregate]) -> Any:
        columns = {stat.name: column_values(stat, noisy) for stat in stats}
        if shape == "scalar":
            (stat,) = stats
            value = columns[stat.name][0]
            return int(value) if stat.how == "count" else float(value)
        index = keys if keys is not None else pd.RangeIndex(1)
        if shape == "series":
            (stat,) = stats
            return pd.Series(columns[stat.name], index=index, name=stat.name)
        return pd.DataFrame(columns, index=index)

    return finish
