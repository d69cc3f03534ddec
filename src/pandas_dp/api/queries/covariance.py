"""``priv.dp.cov(...)`` and ``priv.dp.corr(...)``: every pair of columns from one measurement.

A covariance or correlation matrix of ``d`` columns is a function of a few sums per pair
(:mod:`pandas_dp.planning.measurement.products`), all measured at once with one noise scale and
charged once. The matrix is then made what the exact one is, by free post-processing:
symmetric, positive semidefinite (the nearest such matrix in Frobenius norm), and for
correlations a unit diagonal with every entry in ``[-1, 1]``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Mapping, Sequence
from fractions import Fraction
from typing import Literal

import numpy as np
import pandas as pd

from pandas_dp.api.caps import caps_for
from pandas_dp.api.queries.ungrouped import with_auto_bounds
from pandas_dp.api.release import PlannedRelease, ReleaseOptions, Target, plan, validate
from pandas_dp.api.release.arguments import Bounds, Mechanism, Real
from pandas_dp.api.release.types import Finish, Finisher
from pandas_dp.api.validation import bounds_mapping
from pandas_dp.engines.temporal import is_temporal
from pandas_dp.errors import DPKeyError, DPTypeError, DPValueError, holds_data, shown
from pandas_dp.measures.aggregates import Aggregate, Grouping
from pandas_dp.mechanisms.postprocess import correlation_of, nearest_psd
from pandas_dp.planning.measurement.keys import MeasurementKey
from pandas_dp.planning.measurement.products import (
    DIGITS,
    ProductLayout,
    ProductsPart,
    products_part,
)
from pandas_dp.planning.noise import NoiseSource
from pandas_dp.planning.planner import noise_choice
from pandas_dp.planning.request import Caps, PlannedOutput, Presentation, Request
from pandas_dp.planning.statistics.base import Inputs
from pandas_dp.planning.statistics.products import PairCorrelation, PairCovariance

Use = Literal["pairwise", "complete"]


def plan_matrix(
    target: Target,
    how: Literal["cov", "corr"],
    columns: Sequence[Hashable] | None = None,
    *,
    bounds: Bounds = None,
    epsilon: Real | None = None,
    delta: Real | None = None,
    rho: Real | None = None,
    mechanism: Mechanism = "laplace",
    ci: float | None = None,
    min_periods: int | None = None,
    ddof: int = 1,
    use: Literal["pairwise", "complete"] = "pairwise",
    grouping: Grouping | None = None,
    caps: Caps | None = None,
) -> PlannedRelease[pd.DataFrame]:
    """The planned release of a covariance (``how="cov"``) or correlation matrix.

    With a ``grouping`` (public keys; its ``caps``), one matrix per group, stacked as
    ``df.groupby(by)[columns].cov()`` stacks them, charged once (parallel composition).
    """
    if grouping is not None and grouping.keys is None:
        raise DPValueError(
            f"grouped {how}() needs public keys: pass keys=... to groupby (keys chosen from "
            "the data are for counts and sums)"
        )
    if isinstance(bounds, str) and bounds == "auto":  # released first, in the same charge
        if columns is None:
            raise DPValueError(f"{how}(bounds='auto') needs columns=[...]: the ones to bound")
        reads = [PairCovariance((c, c), c) for c in columns]
        asked = ReleaseOptions(epsilon=epsilon, rho=rho, bounds=bounds)
        return with_auto_bounds(
            target.data, reads, asked,
            lambda given: plan_matrix(
                target, how, columns, bounds=given.bounds, epsilon=given.epsilon, delta=delta,
                rho=rho, mechanism=mechanism, ci=ci, min_periods=min_periods, ddof=ddof,
                use=use, grouping=grouping, caps=caps,
            ),
        )  # fmt: skip
    bounds = bounds_mapping(bounds)  # type: ignore[assignment]  # a table from priv.dp.bounds
    names = _columns(target, how, columns, bounds)
    complete = _use(use) == "complete"
    order = int(_whole(ddof, "ddof")) if how == "cov" else 1
    fewest = 1.0 if min_periods is None else _whole(min_periods, "min_periods")
    placeholders = [PairCovariance((c, c), c) for c in names]
    options = ReleaseOptions(
        epsilon=epsilon, bounds=bounds, delta=delta, mechanism=mechanism, ci=ci, rho=rho
    )
    request = validate(
        target, placeholders, options, query=how if grouping is None else f"groupby.{how}",
        caps=caps or caps_for(target, False), grouping=grouping,
    )  # fmt: skip
    layout = ProductLayout.of(
        tuple(names), tuple(request.columns.bounds[c] for c in names),
        tuple(c in request.columns.nullable for c in names),
        complete=complete, squares=how == "corr" and not complete,
    )  # fmt: skip
    shares = (Fraction(1),)
    part = products_part(
        layout, request.pricing.budget_of(shares[0]), request.caps.contribution,
        noise_choice(target.session, request, shares),
    )  # fmt: skip
    kind = PairCorrelation if how == "corr" else PairCovariance
    stats = tuple(
        kind((names[j], names[k]), names[j], layout=part.layout, j=j, k=k, ddof=order,
             min_periods=fewest)
        for j in range(len(names))
        for k in range(j, len(names))
    )  # fmt: skip
    request = dataclasses.replace(
        request,
        stats=stats,
        pricing=dataclasses.replace(request.pricing, shares=shares),
        notes=_notes(request, part, how, complete),
    )
    labels = _labels(target, names)
    assert part.layout is not None
    return plan(target, request, _finisher(how, labels), calibrated={part.layout.key: part})


def _finisher(how: str, labels: pd.Index) -> Finisher:
    """Shape the pairs' values as pandas shapes ``df.cov()`` (grouped: stacked by key)."""

    def finisher(outputs: tuple[PlannedOutput, ...], shown: Presentation) -> Finish:
        def finish(
            keys: pd.Index | None, noisy: dict[MeasurementKey, Aggregate], source: NoiseSource
        ) -> pd.DataFrame:
            alpha = None if shown.confidence is None else 1.0 - shown.confidence
            # Each pair's values (and interval ends) for every group at once.
            pairs = _pairs(outputs, noisy)
            values = {(s.j, s.k): s.value(i, None) for s, i in pairs}
            ends = None if alpha is None else {(s.j, s.k): s.interval(i, alpha) for s, i in pairs}
            groups = 1 if keys is None else len(keys)
            frames = [_matrix(how, labels, values, ends, g) for g in range(groups)]
            if keys is None:
                return frames[0]
            names = [*keys.names, None]
            if alpha is not None:
                names.append(None)
            return pd.concat(frames, keys=list(keys), names=names)

        return finish

    return finisher


#: Each pair ``(j, k)``'s values, one per group (and its intervals' ends, one per group).
PairValues = dict[tuple[int, int], np.ndarray]
PairEnds = dict[tuple[int, int], tuple[np.ndarray, np.ndarray]]


def _matrix(
    how: str, labels: pd.Index, values: PairValues, ends: PairEnds | None, group: int
) -> pd.DataFrame:
    """One group's matrix, made positive semidefinite (with ``ends``: one row per pair)."""
    size = len(labels)
    matrix = _symmetric(size, {pair: v[group] for pair, v in values.items()})
    fitted = nearest_psd(matrix)
    if how == "corr":
        fitted = correlation_of(fitted)
    frame = pd.DataFrame(fitted, index=labels.copy(), columns=labels.copy())
    if ends is None:
        return frame
    lower = _symmetric(size, {pair: e[0][group] for pair, e in ends.items()})
    upper = _symmetric(size, {pair: e[1][group] for pair, e in ends.items()})
    return _with_intervals(how, frame, lower, upper)


def _with_intervals(
    how: str, values: pd.DataFrame, lower: np.ndarray, upper: np.ndarray
) -> pd.DataFrame:
    """One row per ordered pair (as ``df.cov().stack()``): value, lower and upper end.

    Each interval is widened to hold the released (projected) value, so that it still holds
    the exact value with the stated probability.
    """
    point = values.to_numpy()
    with np.errstate(invalid="ignore"):
        lower, upper = np.fmin(lower, point), np.fmax(upper, point)
    index = pd.MultiIndex.from_product([values.index, values.columns])
    return pd.DataFrame(
        {
            how: point.reshape(-1),
            f"{how}_lower": lower.reshape(-1),
            f"{how}_upper": upper.reshape(-1),
        },
        index=index,
    )


def _pairs(
    outputs: tuple[PlannedOutput, ...], noisy: dict[MeasurementKey, Aggregate]
) -> list[tuple[PairCovariance, Inputs]]:
    """Each pair's statistic and its noisy inputs."""
    pairs = []
    for out in outputs:
        assert isinstance(out.stat, PairCovariance)
        pairs.append((out.stat, out.inputs(noisy)))
    return pairs


def _symmetric(size: int, entries: dict[tuple[int, int], float]) -> np.ndarray:
    """The symmetric matrix with ``entries[(j, k)]`` at ``(j, k)`` and ``(k, j)`` (NaN else)."""
    matrix = np.full((size, size), np.nan)
    for (j, k), value in entries.items():
        matrix[j, k] = matrix[k, j] = value
    return matrix


def _columns(target: Target, how: str, columns: object, bounds: Bounds) -> list[Hashable]:
    """The columns asked for (public inputs all).

    ``columns``, else the keys of a ``bounds`` dict, else the schema's columns with bounds.
    """
    if columns is None:
        if isinstance(bounds, Mapping):
            columns = list(bounds)
        else:
            schema = target.session.schema
            known = target.session.columns if schema is not None else ()
            columns = [c for c in known if schema is not None and schema.rules(c).bounds]
        if not columns:
            raise DPValueError(
                f"{how}() needs its columns: pass columns=[...] with bounds={{column: (lower, "
                "upper)}, or a bounds dict whose keys are the columns (pandas-dp never reads "
                "bounds off the data)"
            )
    if isinstance(columns, str) or not isinstance(columns, list | tuple | pd.Index):
        raise DPTypeError(f"{how}() takes a list of columns, got {type(columns).__name__}")
    names = list(columns)
    if holds_data(columns) and not set(names) <= set(target.engine.columns(target.data)):
        raise DPKeyError(
            f"{how}(): columns= is {shown(columns)} whose labels are not all columns of this "
            "frame (they are not shown: an Index may hold a column's values); pass a list of "
            "column labels"
        )
    if len(set(map(repr, names))) != len(names) or not names:
        got = shown(columns) if holds_data(columns) else repr(names)
        raise DPValueError(f"{how}() needs at least one column, each once; got {got}")
    for name in names:
        if name in target.engine.columns(target.data) and is_temporal(target.dtype(name)):
            raise DPTypeError(
                f"{how}() of datetime or timedelta column {name!r}: pandas refuses it too; "
                "convert it to numbers first (for example days since a public date)"
            )
    return names


def _labels(target: Target, names: list[Hashable]) -> pd.Index:
    """The result's index and columns: the frame's own labels (name and dtype kept)."""
    frame_columns = target.engine.columns(target.data)
    return frame_columns.take([int(frame_columns.get_loc(name)) for name in names])  # type: ignore[arg-type]


def _use(use: object) -> Use:
    if use not in ("pairwise", "complete"):
        raise DPValueError(
            f"use must be 'pairwise' (each pair over the rows holding both, as pandas) or "
            f"'complete' (only rows holding every column: fewer sums, less noise), got {use!r}"
        )
    return "complete" if use == "complete" else "pairwise"


def _whole(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
        raise DPValueError(f"{name} must be a whole number >= 0, got {value!r}")
    return float(value)


def _notes(request: Request, part: ProductsPart, how: str, complete: bool) -> tuple[str, ...]:
    """The ledger's account of the release."""
    layout = part.layout
    assert layout is not None
    rows = "rows holding every column" if complete else "each pair over the rows holding both"
    notes = [
        f"{how} of {len(layout.columns)} columns from {len(layout.monomials)} noisy sums of "
        f"products ({rows}); values centred at the midpoint of their bounds, scaled to "
        f"[-1, 1] and rounded to 2^-{DIGITS}; one row moves each sum by at most 1",
        "the matrix made symmetric and positive semidefinite (the nearest in Frobenius norm)"
        + ("; correlations rescaled to a unit diagonal" if how == "corr" else ""),
    ]
    other = _other_use(layout, how)
    if len(other.monomials) != len(layout.monomials):
        notes.append(_use_cost(layout, other))
    if request.caps.noteworthy:
        notes.append(request.caps.describe())
    return tuple(notes)


def _other_use(layout: ProductLayout, how: str) -> ProductLayout:
    """The layout the other ``use=`` would measure (public: columns, bounds, dtypes)."""
    complete = not layout.complete
    return ProductLayout.of(
        layout.columns, layout.bounds, layout.nullable,
        complete=complete, squares=how == "corr" and not complete,
    )  # fmt: skip


def _use_cost(layout: ProductLayout, other: ProductLayout) -> str:
    """What the choice of ``use=`` costs: the sums each choice measures, and why it matters."""
    chosen, alternative = ("complete", "pairwise") if layout.complete else ("pairwise", "complete")
    nullable = [str(c) for c, n in zip(layout.columns, layout.nullable, strict=True) if n]
    return (
        f"use={chosen!r} measures {len(layout.monomials)} sums, use={alternative!r} "
        f"{len(other.monomials)}: the noise on every sum grows with their number (as that "
        "number for Laplace noise, as its square root for Gaussian); the difference comes from "
        f"{', '.join(nullable)}, whose dtype or schema allows missing values (an integer "
        "dtype, or a schema column with nullable=False, rules them out)"
    )
