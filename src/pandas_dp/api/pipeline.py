"""The one place where data, noise and budget meet.

Every release follows the same path::

    resolve target (session, row guard, engine)  ->  validate arguments  ->  early budget check
    ->  engine computes exact integer aggregates  ->  draw noise (data-independent)
    ->  post-process into the result  ->  atomic charge  ->  return

The charge is the last step before returning, so any failure before it (bad argument,
missing column, an exception in the engine or the post-processing) charges nothing, and a
release that loses a race for the last of the budget is discarded unseen.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from pandas_dp.accounting.events import Measurement, Release
from pandas_dp.api.attach import session_of
from pandas_dp.api.session import Session
from pandas_dp.engines import ClippedSum, Engine, Grouping, Measure, NonNull, Rows, engine_for
from pandas_dp.engines.plan import Aggregate
from pandas_dp.mechanisms.laplace import DiscreteLaplace
from pandas_dp.mechanisms.lattice import Lattice, sum_lattice

T = TypeVar("T")

#: Name given to a Series' values when it has no name of its own.
SERIES_COLUMN = "values"


@dataclass(frozen=True)
class Target:
    """What a query runs on: the data as a frame, its session and its engine."""

    session: Session
    data: Any
    engine: Engine
    column: Hashable | None = None  # the Series' own column, for Series targets


def resolve(obj: pd.DataFrame | pd.Series) -> Target:
    """Find the live session of ``obj`` and check that its rows can be trusted.

    Raises
    ------
    NotProtectedError
        If ``obj`` carries no live session.
    DuplicatedRowsError
        If the session has a row guard and ``obj``'s rows may have been duplicated.
    """
    session = session_of(obj)
    if session.guard is not None:
        session.guard.check(obj.index)
    if isinstance(obj, pd.Series):
        name = obj.name if obj.name is not None else SERIES_COLUMN
        data = obj.to_frame(name=name)
        return Target(session, data, engine_for(data), column=name)
    return Target(session, obj, engine_for(obj))


@dataclass(frozen=True)
class Part:
    """One noisy measure: what the engine computes and the noise that protects it."""

    label: str
    measure: Measure
    mechanism: DiscreteLaplace
    measurement: Measurement
    lattice: Lattice | None = None

    def to_real(self, units: Any) -> Any:
        """Noisy lattice units to the column's units (identity for counts)."""
        if self.lattice is None:
            return units
        return np.ldexp(np.asarray(units, dtype=np.float64), self.lattice.exponent)


def count_part(epsilon: Fraction, column: Hashable | None = None, label: str = "count") -> Part:
    """Rows (or non-missing values of ``column``) with discrete Laplace noise of scale 1/ε.

    Adding or removing one row changes a count by at most 1.
    """
    mechanism = DiscreteLaplace.calibrated(1, epsilon)
    measure: Measure = Rows() if column is None else NonNull(column)
    record = Measurement(label, mechanism.name, epsilon, 1, mechanism.effective_scale)
    return Part(label, measure, mechanism, record)


def sum_part(
    column: Hashable,
    bounds: tuple[float, float],
    epsilon: Fraction,
    *,
    centered: bool = False,
    fill: float | None = None,
    label: str = "sum",
) -> Part:
    """A clipped sum on a public lattice with discrete Laplace noise.

    One row changes the lattice sum by at most ``lattice.sensitivity`` units (the larger
    rounded bound in absolute value, or half the rounded range when centred).
    """
    lattice = sum_lattice(bounds[0], bounds[1], epsilon, centered=centered)
    mechanism = DiscreteLaplace.calibrated(lattice.sensitivity, epsilon)
    measure = ClippedSum(
        column, lattice.exponent, lattice.lower, lattice.upper, lattice.offset, fill
    )
    record = Measurement(
        label, mechanism.name, epsilon, lattice.sensitivity, mechanism.effective_scale,
        lattice.exponent,
    )  # fmt: skip
    return Part(label, measure, mechanism, record, lattice)


def add_noise(exact: Aggregate, noise: np.ndarray) -> Aggregate:
    """Exact integer addition, in int64 when it cannot overflow, else in Python ints."""
    if exact.dtype != object and noise.size and exact.size:
        limit = 1 << 62
        if np.abs(exact).max() < limit and np.abs(noise).max() < limit:
            return np.asarray(exact + noise, dtype=np.int64)
    return np.asarray(np.asarray(exact, dtype=object) + noise.astype(object), dtype=object)


def run(
    target: Target,
    parts: tuple[Part, ...],
    release: Release,
    finish: Callable[[dict[str, Aggregate]], T],
    grouping: Grouping | None = None,
) -> T:
    """Compute, noise, post-process and charge one release (see the module docstring)."""
    session = target.session
    session.accountant.check(release)
    exact = target.engine.aggregate(target.data, tuple(p.measure for p in parts), grouping)
    noisy = {
        part.label: add_noise(values, session.draw(part.mechanism, len(values)))
        for part, values in zip(parts, exact, strict=True)
    }
    result = finish(noisy)
    session.accountant.charge(release)
    return result
