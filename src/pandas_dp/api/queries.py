"""Ungrouped releases: count, sum and mean of a protected frame or Series."""

from __future__ import annotations

from collections.abc import Hashable
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.accounting.events import Release
from pandas_dp.api.pipeline import Part, Target, count_part, resolve, run, sum_part
from pandas_dp.api.validation import check_column, parse_bounds, parse_fill
from pandas_dp.budget import parse_epsilon

#: Share of a mean's ε given to its centred sum; the rest pays for its count. Chosen by the
#: measured comparison in ``benchmarks/bench_mean.py`` (1/2 and 2/3 tie on average; 1/2 is
#: better when the mean lies far from the midpoint of the bounds).
MEAN_SUM_SHARE = Fraction(1, 2)


def _column_of(target: Target, column: Hashable | None) -> Hashable:
    if target.column is not None:
        return target.column
    return column


def count(obj: pd.DataFrame | pd.Series, *, epsilon: Any) -> int:
    """Noisy number of rows of a frame, or of non-missing values of a Series.

    Notes
    -----
    Sensitivity 1 (adding or removing a row changes the count by at most one); discrete
    Laplace noise of scale ``1/ε``; costs ``ε``.
    """
    target = resolve(obj)
    eps = parse_epsilon(epsilon)
    part = count_part(eps, column=target.column)
    columns = () if target.column is None else (str(target.column),)
    release = Release("count", columns, (part.measurement,))
    return run(target, (part,), release, lambda noisy: int(noisy["count"][0]))


def total(
    obj: pd.DataFrame | pd.Series,
    column: Hashable | None = None,
    *,
    bounds: Any,
    epsilon: Any,
    fillna: Any = None,
) -> float:
    """Noisy sum of a column clipped to public bounds (see ``DataFrame.dp.sum``)."""
    target = resolve(obj)
    eps = parse_epsilon(epsilon)
    lower, upper = parse_bounds(bounds)
    col = check_column(target.engine, target.data, _column_of(target, column))
    part = sum_part(col, (lower, upper), eps, fill=parse_fill(fillna, lower, upper))
    release = Release(
        "sum", (str(col),), (part.measurement,), bounds=((str(col), lower, upper),),
        note=_missing_note(fillna),
    )  # fmt: skip
    return run(target, (part,), release, lambda noisy: float(part.to_real(noisy["sum"])[0]))


def mean(
    obj: pd.DataFrame | pd.Series,
    column: Hashable | None = None,
    *,
    bounds: Any,
    epsilon: Any,
    fillna: Any = None,
) -> float:
    """Noisy mean of a column clipped to public bounds (see ``DataFrame.dp.mean``)."""
    target = resolve(obj)
    eps = parse_epsilon(epsilon)
    lower, upper = parse_bounds(bounds)
    col = check_column(target.engine, target.data, _column_of(target, column))
    fill = parse_fill(fillna, lower, upper)
    parts = mean_parts(col, (lower, upper), eps, fill)
    release = Release(
        "mean", (str(col),), tuple(p.measurement for p in parts),
        bounds=((str(col), lower, upper),),
        note=f"{MEAN_NOTE}; {_missing_note(fillna)}",
    )  # fmt: skip
    return run(
        target, parts, release, lambda noisy: float(finish_mean(parts, noisy, (lower, upper))[0])
    )


MEAN_NOTE = (
    f"ε split {MEAN_SUM_SHARE} to the centred sum, {1 - MEAN_SUM_SHARE} to the count; "
    "mean = centre + noisy centred sum / max(noisy count, 1), clipped to the bounds"
)


def mean_parts(
    column: Hashable,
    bounds: tuple[float, float],
    epsilon: Fraction,
    fill: float | None,
    share: Fraction = MEAN_SUM_SHARE,
) -> tuple[Part, Part]:
    """The centred sum and the count a mean is computed from, with ε split between them."""
    eps_sum = epsilon * share
    total_part = sum_part(column, bounds, eps_sum, centered=True, fill=fill, label="sum")
    count_of = None if fill is not None else column  # imputed values count like any other
    return total_part, count_part(epsilon - eps_sum, column=count_of)


def finish_mean(
    parts: tuple[Part, Part], noisy: dict[str, Any], bounds: tuple[float, float]
) -> np.ndarray:
    """Post-process a noisy centred sum and noisy count into means inside the bounds."""
    sum_part_, _ = parts
    lattice = sum_part_.lattice
    assert lattice is not None
    counts = np.maximum(np.asarray(noisy["count"], dtype=np.float64), 1.0)
    centre = lattice.to_real(lattice.offset)
    means = centre + sum_part_.to_real(noisy["sum"]) / counts
    return np.asarray(np.clip(means, bounds[0], bounds[1]), dtype=np.float64)


def _missing_note(fillna: Any) -> str:
    if fillna is None:
        return "missing values skipped"
    return "missing values imputed with the public fillna value"
