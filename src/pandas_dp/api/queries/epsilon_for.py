"""The ε a target accuracy needs, from public parameters only (nothing is read or spent)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd

from pandas_dp.api.caps import caps_for
from pandas_dp.api.release import PlannedOutput, resolve
from pandas_dp.api.release.arguments import Bounds, Real
from pandas_dp.api.release.option_values import MECHANISMS, Noise
from pandas_dp.api.release.planning_rows import planning_rows
from pandas_dp.api.release.preview import mean_error_bound
from pandas_dp.api.validation import parse_bounds
from pandas_dp.budget import parse_delta
from pandas_dp.errors import DPTypeError, DPValueError
from pandas_dp.mechanisms.accuracy import smallest_epsilon
from pandas_dp.planning.measurement.kinds import CentredSum, RowCount
from pandas_dp.planning.measurement.parts import NoiseChoice, Part, count_part, sum_part
from pandas_dp.planning.statistics import Mean
from pandas_dp.planning.statistics.parsing import closest_statistic
from pandas_dp.units import Contribution


def _noise(mechanism: str, delta: object, measurements: int) -> NoiseChoice:
    if mechanism not in MECHANISMS:
        raise DPValueError(f"mechanism must be 'laplace' or 'gaussian', got {mechanism!r}")
    if not Noise(mechanism).gaussian:
        if delta is not None:
            raise DPValueError("delta is only used with mechanism='gaussian'")
        return NoiseChoice()
    if delta is None:
        raise DPValueError("planning Gaussian noise needs its delta")
    return NoiseChoice(gaussian=True, delta=parse_delta(delta) / measurements)


def epsilon_for(
    obj: pd.DataFrame | pd.Series,
    statistic: str,
    *,
    error: float,
    alpha: float = 0.05,
    bounds: Bounds = None,
    expected_rows: float | None = None,
    mean: float | None = None,
    n: float | None = None,
    mechanism: str = "laplace",
    delta: Real | None = None,
) -> float:
    """The smallest ε whose (1 - alpha) error bound is at most ``error`` (see the accessor)."""
    if isinstance(alpha, bool) or not isinstance(alpha, int | float):
        raise DPTypeError(f"alpha must be a number in (0, 1), got {type(alpha).__name__}")
    if not 0.0 < alpha < 1.0:
        raise DPValueError(f"alpha must lie in (0, 1), got {alpha}")
    if isinstance(error, bool) or not (
        isinstance(error, int | float) and error > 0 and np.isfinite(error)
    ):
        raise DPValueError(f"error must be a positive number, got {error!r}")
    contribution = caps_for(resolve(obj), grouped=False).contribution
    if statistic == "count":
        noise = _noise(mechanism, delta, 1)

        def error_at(eps: float) -> float:
            return count_part(Fraction(eps), None, "count", contribution, noise).halfwidth(alpha)

    elif statistic in ("sum", "mean"):
        lower, upper = parse_bounds(bounds)
        if statistic == "sum":
            noise = _noise(mechanism, delta, 1)

            def error_at(eps: float) -> float:
                part = sum_part(
                    "value", (lower, upper), Fraction(eps), contribution=contribution, noise=noise
                )
                return part.halfwidth(alpha)

        else:
            rows = planning_rows(expected_rows, n, "epsilon_for")
            noise = _noise(mechanism, delta, 2)

            def error_at(eps: float) -> float:
                return _mean_error(
                    lower, upper, Fraction(eps), rows, alpha, contribution, noise, mean
                )

    else:
        close = closest_statistic(statistic) if isinstance(statistic, str) else None
        hint = f"; did you mean {close!r}?" if close in ("count", "sum", "mean") else ""
        raise DPValueError(f"statistic must be 'count', 'sum' or 'mean', got {statistic!r}{hint}")
    try:
        return smallest_epsilon(error_at, float(error))
    except ValueError as error_out_of_reach:  # even ε = 1e6 leaves more error than asked
        raise DPValueError(
            f"no ε reaches an error of {error:g} for this {statistic}: {error_out_of_reach}. "
            "Sums and means have a floor from rounding onto the lattice; ask for a larger "
            "error or narrower bounds"
        ) from None


def _mean_error(
    lower: float, upper: float, epsilon: Fraction, n: float, alpha: float,
    contribution: Contribution, noise: NoiseChoice, mean: float | None = None,
) -> float:  # fmt: skip
    """Error of a mean over ``n`` rows at the planning ``mean`` (default: the worst case)."""
    half = epsilon / 2
    total: Part = sum_part(
        "value", (lower, upper), half, centered=True, contribution=contribution, noise=noise
    )
    count = count_part(half, None, "count", contribution, noise)
    out = PlannedOutput(
        Mean("mean", "value"),
        (CentredSum("value"), RowCount()),
        (total, count),
        (lower, upper),
    )
    return mean_error_bound(out, n, alpha, mean)
