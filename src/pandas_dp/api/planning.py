"""Know before you spend: previews of releases, and the ε a target accuracy needs.

Both use the same validation and planning as the releases themselves, so what a preview
says is exactly what the release would do; neither reads a value of the data nor charges
anything.
"""

from __future__ import annotations

from collections.abc import Hashable
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.api.caps import caps_for
from pandas_dp.api.groupby import DPGroupBy
from pandas_dp.api.hierarchy import DPHierarchy
from pandas_dp.api.pipeline import NoiseChoice, Part, count_part, resolve, sum_part
from pandas_dp.api.queries import release_one
from pandas_dp.api.results import Output, Preview, mean_error_bound
from pandas_dp.api.validation import parse_bounds
from pandas_dp.budget import parse_delta
from pandas_dp.errors import DPValueError
from pandas_dp.mechanisms.accuracy import smallest_epsilon

#: Confidence of previews unless asked otherwise.
DEFAULT_CONFIDENCE = 0.95


class PreviewAccessor:
    """``priv.dp.preview``: the release methods, returning a :class:`Preview` instead."""

    def __init__(self, obj: pd.DataFrame | pd.Series) -> None:
        self._obj = obj

    def count(
        self, *, epsilon: Any, delta: Any = None, mechanism: str = "laplace",
        ci: float = DEFAULT_CONFIDENCE,
    ) -> Preview:  # fmt: skip
        """Preview ``.dp.count``: mechanism, noise scale, cost and error bound."""
        return release_one(
            self._obj, "count", None, previewing=True, epsilon=epsilon, delta=delta,
            mechanism=mechanism, ci=ci,
        )  # fmt: skip

    def sum(
        self, column: Hashable | None = None, *, bounds: Any = None, epsilon: Any,
        fillna: Any = None, delta: Any = None, mechanism: str = "laplace",
        ci: float = DEFAULT_CONFIDENCE,
    ) -> Preview:  # fmt: skip
        """Preview ``.dp.sum``."""
        return release_one(
            self._obj, "sum", column, previewing=True, bounds=bounds, epsilon=epsilon,
            fillna=fillna, delta=delta, mechanism=mechanism, ci=ci,
        )  # fmt: skip

    def mean(
        self, column: Hashable | None = None, *, bounds: Any = None, epsilon: Any,
        fillna: Any = None, delta: Any = None, mechanism: str = "laplace",
        ci: float = DEFAULT_CONFIDENCE,
    ) -> Preview:  # fmt: skip
        """Preview ``.dp.mean`` (its error depends on the count: see ``Preview.mean_error``)."""
        return release_one(
            self._obj, "mean", column, previewing=True, bounds=bounds, epsilon=epsilon,
            fillna=fillna, delta=delta, mechanism=mechanism, ci=ci,
        )  # fmt: skip

    def groupby(
        self, by: Any, keys: Any = None, *, max_groups_per_unit: Any = None,
        max_rows_per_group: Any = None,
    ) -> DPGroupBy:  # fmt: skip
        """Preview grouped releases: the returned group-by's methods return previews."""
        return DPGroupBy(
            resolve(self._obj), by, keys, max_groups_per_unit=max_groups_per_unit,
            max_rows_per_group=max_rows_per_group, previewing=True,
        )  # fmt: skip

    def hierarchy(
        self, by: Any, keys: Any = None, *, margins_name: Any = "All",
        max_groups_per_unit: Any = None, max_rows_per_group: Any = None,
    ) -> DPHierarchy:  # fmt: skip
        """Preview a hierarchical table: ``count`` returns each level's raw noise and error."""
        return DPHierarchy(
            resolve(self._obj), by, keys, margins_name=margins_name,
            max_groups_per_unit=max_groups_per_unit, max_rows_per_group=max_rows_per_group,
            previewing=True,
        )  # fmt: skip


def _noise(mechanism: str, delta: Any, measurements: int) -> NoiseChoice:
    if mechanism == "laplace":
        if delta is not None:
            raise DPValueError("delta is only used with mechanism='gaussian'")
        return NoiseChoice()
    if mechanism != "gaussian":
        raise DPValueError(f"mechanism must be 'laplace' or 'gaussian', got {mechanism!r}")
    if delta is None:
        raise DPValueError("planning Gaussian noise needs its delta")
    return NoiseChoice(gaussian=True, delta=parse_delta(delta) / measurements)


def epsilon_for(
    obj: pd.DataFrame | pd.Series,
    statistic: str,
    *,
    error: float,
    alpha: float = 0.05,
    bounds: Any = None,
    n: float | None = None,
    mean: float | None = None,
    mechanism: str = "laplace",
    delta: Any = None,
) -> float:
    """The smallest ε whose (1 - alpha) error bound is at most ``error`` (see the accessor)."""
    if not 0.0 < alpha < 1.0:
        raise DPValueError(f"alpha must lie in (0, 1), got {alpha}")
    if not (isinstance(error, int | float) and error > 0 and np.isfinite(error)):
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
            if n is None or not n >= 1:
                raise DPValueError("a mean's error depends on its count: pass n=<planning value>")
            noise = _noise(mechanism, delta, 2)

            def error_at(eps: float) -> float:
                return _mean_error(
                    lower, upper, Fraction(eps), float(n), alpha, contribution, noise, mean
                )

    else:
        raise DPValueError(f"statistic must be 'count', 'sum' or 'mean', got {statistic!r}")
    return smallest_epsilon(error_at, float(error))


def _mean_error(
    lower: float, upper: float, epsilon: Fraction, n: float, alpha: float,
    contribution: Any, noise: NoiseChoice, mean: float | None = None,
) -> float:  # fmt: skip
    """Error of a mean over ``n`` rows at the planning ``mean`` (default: the worst case)."""
    half = epsilon / 2
    total: Part = sum_part(
        "value", (lower, upper), half, centered=True, contribution=contribution, noise=noise
    )
    count = count_part(half, None, "count", contribution, noise)
    return mean_error_bound(Output("mean", "mean", (total, count), (lower, upper)), n, alpha, mean)
