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
from pandas_dp.api.queries import release_many, release_one
from pandas_dp.api.request import parse_named
from pandas_dp.api.results import Output, Preview, mean_error_bound
from pandas_dp.api.statistics import describe, quantile, spread
from pandas_dp.api.validation import parse_bounds
from pandas_dp.budget import parse_delta
from pandas_dp.errors import DPTypeError, DPValueError
from pandas_dp.mechanisms.accuracy import smallest_epsilon

_AGG_OPTIONS = ("bounds", "delta", "mechanism", "fillna")
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

    def agg(self, *, epsilon: Any, ci: float | None = DEFAULT_CONFIDENCE, **kwargs: Any) -> Preview:
        """Preview ``DataFrame.dp.agg``: every measurement behind the statistics."""
        named = {k: v for k, v in kwargs.items() if k not in _AGG_OPTIONS}
        options = {k: v for k, v in kwargs.items() if k in _AGG_OPTIONS}
        if any(parsed.how == "quantile" for parsed in parse_named(named)):
            ci = None  # quantiles report a rank error instead
        return release_many(
            self._obj, parse_named(named), query="agg", previewing=True, epsilon=epsilon,
            ci=ci, **options,
        )  # fmt: skip

    def quantile(
        self, q: Any = 0.5, *, column: Hashable | None = None, bounds: Any = None,
        epsilon: Any, cells: Any = None,
    ) -> Preview:  # fmt: skip
        """Preview ``.dp.quantile``: ``error`` is the rank error at 95% confidence."""
        return quantile(
            self._obj, column, q, bounds=bounds, epsilon=epsilon, cells=cells, previewing=True
        )

    def median(
        self, *, column: Hashable | None = None, bounds: Any = None, epsilon: Any,
        cells: Any = None,
    ) -> Preview:  # fmt: skip
        """Preview ``.dp.median`` (a quantile at 0.5)."""
        return self.quantile(0.5, column=column, bounds=bounds, epsilon=epsilon, cells=cells)

    def var(self, column: Hashable | None = None, **kwargs: Any) -> Preview:
        """Preview ``.dp.var``: cost and noise scales of its three measurements."""
        return spread(self._obj, column, "var", previewing=True, **kwargs)

    def std(self, column: Hashable | None = None, **kwargs: Any) -> Preview:
        """Preview ``.dp.std``."""
        return spread(self._obj, column, "std", previewing=True, **kwargs)

    def describe(self, **kwargs: Any) -> Preview:
        """Preview ``DataFrame.dp.describe``: every measurement behind the table."""
        if not isinstance(self._obj, pd.DataFrame):
            raise DPTypeError("describe summarises the columns of a DataFrame; use var or quantile")
        return describe(self._obj, previewing=True, **kwargs)

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
            if n is None or not n >= 1:
                raise DPValueError("a mean's error depends on its count: pass n=<planning value>")
            noise = _noise(mechanism, delta, 2)

            def error_at(eps: float) -> float:
                return _mean_error(
                    lower, upper, Fraction(eps), float(n), alpha, contribution, noise, mean
                )

    else:
        raise DPValueError(f"statistic must be 'count', 'sum' or 'mean', got {statistic!r}")
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
    contribution: Any, noise: NoiseChoice, mean: float | None = None,
) -> float:  # fmt: skip
    """Error of a mean over ``n`` rows at the planning ``mean`` (default: the worst case)."""
    half = epsilon / 2
    total: Part = sum_part(
        "value", (lower, upper), half, centered=True, contribution=contribution, noise=noise
    )
    count = count_part(half, None, "count", contribution, noise)
    return mean_error_bound(Output("mean", "mean", (total, count), (lower, upper)), n, alpha, mean)
