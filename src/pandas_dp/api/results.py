"""From noisy integers to what the user sees: values, confidence intervals, previews.

Everything here is post-processing of released values with public parameters (free), or
accuracy statements computed from public parameters only (previews).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.accounting.events import Release
from pandas_dp.api.outputs import Estimate
from pandas_dp.api.pipeline import Part, SelectPart
from pandas_dp.engines.plan import Aggregate, CellCounts
from pandas_dp.errors import DPTypeError, DPValueError
from pandas_dp.mechanisms.accuracy import ratio_interval, variance_interval
from pandas_dp.mechanisms.postprocess import fit_to_total, round_to_total
from pandas_dp.mechanisms.quantile import rank_error, variance_from


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


@dataclass(frozen=True)
class Output:
    """How one requested statistic is computed from the measurements.

    ``how`` is count/sum/mean; ``parts`` are its measurement(s) (a mean: centred sum, then
    count); ``bounds`` are the clipping bounds of summed or averaged columns.
    """

    name: Hashable
    how: str
    parts: tuple[Part | SelectPart, ...]
    bounds: tuple[float, float] | None = None
    ddof: int = 1


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


def _reach(out: Output) -> float:
    assert out.bounds is not None
    return (out.bounds[1] - out.bounds[0]) / 2


def _values(out: Output, noisy: dict[str, Aggregate], post: PostProcess) -> np.ndarray:
    first = out.parts[0]
    if out.how == "count":
        return post.apply(np.asarray(noisy[first.label], dtype=np.int64))
    if out.how in ("sum", "quantile"):
        return np.asarray(first.to_real(noisy[first.label]), dtype=np.float64)
    assert out.bounds is not None
    if out.how in ("var", "std"):
        squares, centred, count = out.parts
        spread = variance_from(
            noisy[count.label], centred.to_real(noisy[centred.label]),
            squares.to_real(noisy[squares.label]), _reach(out), out.ddof,
        )  # fmt: skip
        return spread if out.how == "var" else np.sqrt(spread)
    count = out.parts[1]
    assert isinstance(first, Part)
    return mean_from(first, noisy[first.label], noisy[count.label], out.bounds)


def _interval(
    out: Output, noisy: dict[str, Aggregate], alpha: float
) -> tuple[np.ndarray, np.ndarray]:
    """A (1 - alpha) interval for the exact (clipped, lattice-rounded) statistic."""
    first = out.parts[0]
    raw = np.asarray(first.to_real(noisy[first.label]), dtype=np.float64)
    if out.how in ("count", "sum"):
        width = first.halfwidth(alpha)
        lower, upper = raw - width, raw + width
        if out.how == "count" or (out.bounds is not None and out.bounds[0] >= 0):
            lower = np.maximum(lower, 0.0)
            upper = np.maximum(upper, 0.0)
        if out.bounds is not None and out.bounds[1] <= 0:
            lower, upper = np.minimum(lower, 0.0), np.minimum(upper, 0.0)
        return lower, upper
    assert out.bounds is not None
    if out.how in ("var", "std"):
        squares, centred, count = out.parts
        lower, upper = variance_interval(
            np.asarray(noisy[count.label], dtype=np.float64), count.halfwidth(alpha / 3),
            centred.to_real(noisy[centred.label]), centred.halfwidth(alpha / 3),
            squares.to_real(noisy[squares.label]), squares.halfwidth(alpha / 3),
            _reach(out), out.ddof,
        )  # fmt: skip
        return (lower, upper) if out.how == "var" else (np.sqrt(lower), np.sqrt(upper))
    assert first.lattice is not None
    count = out.parts[1]
    centre = first.lattice.to_real(first.lattice.offset)
    reach = (centre - out.bounds[0], out.bounds[1] - centre)
    lower, upper = ratio_interval(
        raw, first.halfwidth(alpha / 2),
        np.asarray(noisy[count.label], dtype=np.float64), count.halfwidth(alpha / 2),
        (-reach[0], reach[1]),
    )  # fmt: skip
    return centre + lower, centre + upper


def finisher(
    outputs: list[Output], shape: str, post: PostProcess, confidence: float | None
) -> Callable[[pd.Index | None, dict[str, Aggregate]], Any]:
    """Build the function that turns noisy aggregates into the user's result.

    ``shape`` is ``"scalar"`` (one statistic, ungrouped), ``"series"`` (one statistic per
    key) or ``"frame"``. With ``confidence``, each statistic ``x`` gains ``x_lower`` and
    ``x_upper`` (a Series becomes a DataFrame; a scalar an :class:`Estimate`).
    """
    alpha = None if confidence is None else 1.0 - confidence

    def finish(keys: pd.Index | None, noisy: dict[str, Aggregate]) -> Any:
        columns: dict[Hashable, np.ndarray] = {}
        for out in outputs:
            columns[out.name] = _values(out, noisy, post)
            if alpha is not None:
                lower, upper = _interval(out, noisy, alpha)
                columns[f"{out.name}_lower"], columns[f"{out.name}_upper"] = lower, upper
        (first, *_) = outputs
        if shape == "scalar":
            value = columns[first.name][0]
            value = int(value) if first.how == "count" else float(value)
            if alpha is None:
                return value
            lower, upper = columns[f"{first.name}_lower"][0], columns[f"{first.name}_upper"][0]
            return Estimate(value, float(lower), float(upper), 1.0 - alpha)
        index = keys if keys is not None else pd.RangeIndex(1)
        if shape == "series" and alpha is None:
            return pd.Series(columns[first.name], index=index, name=first.name)
        return pd.DataFrame(columns, index=index)

    return finish


@dataclass(frozen=True)
class Preview:
    """What a release would cost and how accurate it would be; it spends nothing.

    Attributes
    ----------
    query : str
        The release previewed.
    table : DataFrame
        One row per statistic: mechanism, noise scale (column units), ε and δ of its
        measurements, and ``error``: the half-width of a ``confidence`` interval for counts
        and sums, in the column's units; for quantiles, the rank error at ``confidence``
        (``error_in`` says which); for means and spreads, NaN (see :meth:`mean_error`).
    epsilon, delta : float
        The release's cost under basic composition (the accountant may do better).
    confidence : float
        Confidence level of ``error``.
    release : Release
        The ledger record the release would be charged as (for planning many releases:
        ``session.accountant.check_all``).
    """

    query: str
    table: pd.DataFrame
    epsilon: float
    delta: float
    confidence: float
    outputs: tuple[Output, ...] = ()
    release: Release | None = field(default=None, repr=False)

    def mean_error(self, n: float, mean: float | None = None) -> pd.Series:
        """Half-width of each mean's released interval if its count were ``n``.

        A mean's error depends on its count and on how far the mean lies from the midpoint
        of the bounds (the count's noise is multiplied by that distance), both private:
        give planning values. Without ``mean`` the worst case over the bounds is returned.
        """
        alpha = 1.0 - self.confidence
        errors = {}
        for out in self.outputs:
            if out.how != "mean":
                continue
            errors[out.name] = mean_error_bound(out, float(n), alpha, mean)
        return pd.Series(errors, name="error", dtype=np.float64)

    def __repr__(self) -> str:
        head = (
            f"Preview of {self.query}: costs ε={self.epsilon:.6g}, δ={self.delta:.3g}; "
            f"errors at {self.confidence:.0%} confidence"
        )
        with pd.option_context("display.width", 120, "display.max_columns", 20):
            return f"{head}\n{self.table.to_string()}"


def mean_error_bound(out: Output, n: float, alpha: float, mean: float | None = None) -> float:
    """Half-width of a mean's released interval at count ``n``.

    At the planning value ``mean`` when given, else the largest over means in the bounds.

    Notes
    -----
    With the noise at its interval edges the half-width is piecewise linear in the mean's
    position ``p`` (relative to the centre): it bends only where a corner ``(p n ± a) / N'``
    of :func:`ratio_interval` meets a bound, where two corners cross (``p = ±a / n``), and at
    the ends. Its maximum is at one of those points, so checking them all is exact.
    """
    total, count = out.parts
    assert out.bounds is not None
    assert total.lattice is not None
    reach = _reach(out)
    a, b = total.halfwidth(alpha / 2), count.halfwidth(alpha / 2)
    if mean is None:
        kinks = [
            (edge * denominator - shift) / n
            for edge in (-reach, reach)
            for shift in (-a, a)
            for denominator in (max(n - b, 1.0), max(n + b, 1.0))
        ]
        candidates = np.asarray([-reach, 0.0, reach, -a / n, a / n, *kinks], dtype=np.float64)
        positions = candidates[np.abs(candidates) <= reach]
    else:
        centre = total.lattice.to_real(total.lattice.offset)
        positions = np.full(1, min(max(float(mean) - centre, -reach), reach))
    lower, upper = ratio_interval(
        positions * n, a, np.full(len(positions), float(n)), b, (-reach, reach)
    )
    return float(np.max(np.maximum(upper - positions, positions - lower)))


def preview_of(query: str, outputs: list[Output], release: Release, confidence: float) -> Preview:
    """Describe a planned release from its public parameters only."""
    alpha = 1.0 - confidence
    rows = []
    for out in outputs:
        first = out.parts[0]
        error, unit = np.nan, "column"
        if out.how in ("count", "sum"):
            error = first.halfwidth(alpha)
        elif out.how == "quantile":
            assert isinstance(first.measure, CellCounts)
            assert isinstance(first, SelectPart)
            sensitivity = float(first.mechanism.sensitivity)
            part_epsilon = float(first.measurement.epsilon)
            error = rank_error(part_epsilon, first.measure.cells + 1, alpha, sensitivity)
            unit = "ranks"
        rows.append(
            {
                "statistic": str(out.name),
                "how": out.how,
                "mechanism": first.measurement.mechanism,
                "scale": float(first.measurement.scale) * 2.0**first.exponent,
                "epsilon": float(sum(p.measurement.epsilon for p in out.parts)),
                "delta": float(sum(p.measurement.cost.delta for p in out.parts)),
                "error": error,
                "error_in": unit,
            }
        )
    table = pd.DataFrame(rows).set_index("statistic")
    cost = release.cost
    return Preview(
        query, table, float(cost.epsilon), float(cost.delta), confidence, tuple(outputs), release
    )
