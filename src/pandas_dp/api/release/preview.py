"""Know before you spend: what a planned release would cost and how accurate it would be.

A preview reads the same :class:`~pandas_dp.api.release.types.PlannedRelease` that
:func:`~pandas_dp.api.release.run.run` releases, so it cannot drift from the release; it
reads no value of the data and charges nothing.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.accounting.events import Release
from pandas_dp.api.measurement.parts import Part
from pandas_dp.api.release.types import PlannedOutput, PlannedRelease
from pandas_dp.api.statistics import Mean
from pandas_dp.api.statistics.moments import centre_of
from pandas_dp.mechanisms.accuracy import ratio_interval

#: Confidence of previews unless asked otherwise.
DEFAULT_CONFIDENCE = 0.95


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
    outputs: tuple[PlannedOutput, ...] = ()
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
            if isinstance(out.stat, Mean):
                errors[out.stat.name] = mean_error_bound(out, float(n), alpha, mean)
        return pd.Series(errors, name="error", dtype=np.float64)

    def __repr__(self) -> str:
        head = (
            f"Preview of {self.query}: costs ε={self.epsilon:.6g}, δ={self.delta:.3g}; "
            f"errors at {self.confidence:.0%} confidence"
        )
        with pd.option_context("display.width", 120, "display.max_columns", 20):
            return f"{head}\n{self.table.to_string()}"

    def _repr_html_(self) -> str:
        """The same in a notebook: the cost as a caption over the table."""
        head = html.escape(
            f"Preview of {self.query}: costs ε={self.epsilon:.6g}, δ={self.delta:.3g}; "
            f"errors at {self.confidence:.0%} confidence (nothing spent)"
        )
        return f"<p><strong>{head}</strong></p>{self.table.to_html()}"


def mean_error_bound(
    out: PlannedOutput, n: float, alpha: float, mean: float | None = None
) -> float:
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
    assert isinstance(total, Part)
    reach = (out.bounds[1] - out.bounds[0]) / 2
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
        centre = centre_of(total)
        positions = np.full(1, min(max(float(mean) - centre, -reach), reach))
    lower, upper = ratio_interval(
        positions * n, a, np.full(len(positions), float(n)), b, (-reach, reach)
    )
    return float(np.max(np.maximum(upper - positions, positions - lower)))


def preview(planned: PlannedRelease[Any], confidence: float | None = None) -> Preview:
    """What ``planned`` would cost and how accurate it would be, from public parameters only."""
    level = confidence or planned.confidence or DEFAULT_CONFIDENCE
    alpha = 1.0 - level
    rows = []
    for out in planned.outputs:
        first = out.parts[0]
        rows.append(
            {
                "statistic": str(out.stat.name),
                "how": out.stat.how,
                "mechanism": first.measurement.mechanism,
                "scale": float(first.measurement.scale) * 2.0**first.exponent,
                "epsilon": float(sum(p.measurement.epsilon for p in out.parts)),
                "delta": float(sum(p.measurement.cost.delta for p in out.parts)),
                "error": out.stat.preview_error(out.inputs(), alpha),
                "error_in": out.stat.error_in,
            }
        )
    table = pd.DataFrame(rows).set_index("statistic")
    release = planned.release
    cost = release.cost
    return Preview(
        release.query, table, float(cost.epsilon), float(cost.delta), level,
        planned.outputs, release,
    )  # fmt: skip
