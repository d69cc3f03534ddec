"""Know before you spend: what a planned release would cost and how accurate it would be.

A preview reads the same :class:`~pandas_dp.api.release.types.PlannedRelease` that
:func:`~pandas_dp.api.release.run.run` releases, so it cannot drift from the release; it
reads no value of the data and charges nothing.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.accounting.events import Release
from pandas_dp.api.release.planning_rows import planning_rows
from pandas_dp.api.release.types import PlannedRelease
from pandas_dp.budget import number_text
from pandas_dp.planning.request import PlannedOutput
from pandas_dp.planning.statistics import Mean

#: Confidence of previews unless asked otherwise.
DEFAULT_CONFIDENCE = 0.95
#: A row count at which to ask whether a statistic's error is known given a count.
_SOME_ROWS = 1000.0


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

    def mean_error(
        self,
        expected_rows: float | None = None,
        mean: float | None = None,
        *,
        n: float | None = None,
    ) -> pd.Series:
        """Half-width of each mean's released interval if its count were ``expected_rows``.

        A mean's error depends on its count and on how far the mean lies from the midpoint
        of the bounds (the count's noise is multiplied by that distance), both private:
        give planning values. Without ``mean`` the worst case over the bounds is returned.
        ``n=`` is the old name of ``expected_rows`` (one name for the planning row count in
        previews, ``epsilon_for`` and release files).
        """
        rows = planning_rows(expected_rows, n, "mean_error")
        errors = self.errors(rows, mean)
        means = [isinstance(out.stat, Mean) for out in self.outputs]
        return errors[means]

    def errors(self, expected_rows: float, mean: float | None = None) -> pd.Series:
        """Every statistic's error at a planning row count (per group in a group-by).

        Counts, sums and quantiles as in :attr:`table` (they need no count); means and
        spreads at ``expected_rows``, the largest over the data the bounds allow (a mean's
        at the planning ``mean`` when given).
        """
        rows = planning_rows(expected_rows, None, "errors")
        alpha = 1.0 - self.confidence
        errors = {
            out.stat.name: out.stat.planned_error(out.inputs(), alpha, rows, mean)
            for out in self.outputs
        }
        return pd.Series(errors, name="error", dtype=np.float64)

    def unknown_errors(self) -> list[str]:
        """Why some errors are NaN, one line per reason (empty when every error is known).

        A mean's or a spread's error depends on its row count, which is private: the line
        says to pass ``expected_rows=``. The views (text and notebook) show these lines
        under the table, wherever a NaN is shown.
        """
        errors = self.table["error"].to_numpy(dtype=np.float64)
        if not np.isnan(errors).any():
            return []
        alpha = 1.0 - self.confidence
        counted: list[str] = []
        other: list[str] = []
        known = len(self.outputs) == len(errors)
        for at, (name, error) in enumerate(zip(self.table.index, errors, strict=True)):
            if not math.isnan(error):
                continue
            out = self.outputs[at] if known else None
            at_a_count = out is None or math.isfinite(
                out.stat.planned_error(out.inputs(), alpha, _SOME_ROWS)
            )
            (counted if at_a_count else other).append(str(name))
        lines = []
        if counted:
            lines.append(
                f"error NaN for {', '.join(counted)}: a mean's or a spread's error depends "
                "on its row count, which is private; pass expected_rows=<a planning row "
                "count> (per group in a group-by) to see it"
            )
        if other:
            lines.append(
                f"error NaN for {', '.join(other)}: no error bound before the release (it "
                "depends on more of the data than a row count)"
            )
        return lines

    def __repr__(self) -> str:
        head = (
            f"Preview of {self.query}: costs ε={self.epsilon:.6g}, δ={self.delta:.3g}; "
            f"errors at {self.confidence:.0%} confidence"
        )
        notes = "".join(f"\n{line}" for line in self.unknown_errors())
        with pd.option_context("display.width", 120, "display.max_columns", 20):
            return f"{head}\n{self.table.to_string()}{notes}"

    def _repr_html_(self) -> str:
        """The same in a notebook: the cost as a caption over the table.

        Numbers read as people write them (``0``, ``0.5``, ``1e-06``), never in a
        column-wide scientific notation such as ``0.000000e+00``.
        """
        head = html.escape(
            f"Preview of {self.query}: costs ε={number_text(self.epsilon)}, "
            f"δ={number_text(self.delta)}; errors at {self.confidence:.0%} confidence "
            "(nothing spent)"
        )
        table = self.table.to_html(float_format=number_text)
        notes = "".join(f"<p>{html.escape(line)}</p>" for line in self.unknown_errors())
        return f"<p><strong>{head}</strong></p>{table}{notes}"


def mean_error_bound(
    out: PlannedOutput, n: float, alpha: float, mean: float | None = None
) -> float:
    """Half-width of a mean's released interval at count ``n``.

    See :func:`~pandas_dp.planning.statistics.planning.mean_halfwidth`.
    """
    return out.stat.planned_error(out.inputs(), alpha, n, mean)


def preview(
    planned: PlannedRelease[object], confidence: float | None = None,
    expected_rows: float | None = None,
) -> Preview:  # fmt: skip
    """What ``planned`` would cost and how accurate it would be, from public parameters only.

    With a planning row count ``expected_rows`` (given to a preview), the error column
    states every statistic's error, means' and spreads' included, at that count.
    """
    if planned.prior is not None:  # bounds="auto": the bounds' scans come first, one charge
        outputs = planned.outputs
        prior: PlannedRelease[Any] | None = planned.prior
        while prior is not None:  # (a date's bounds have a prior of their own: its origin)
            outputs, prior = (*prior.outputs, *outputs), prior.prior
        # (a plan's own prior is in its outputs already: see PlannedRelease.after)
        planned = replace(planned, outputs=outputs, release=planned.charged)
    level = confidence or planned.confidence or DEFAULT_CONFIDENCE
    alpha = 1.0 - level
    expected = expected_rows
    rows = []
    for out in planned.outputs:
        inputs = out.inputs()
        first = out.parts[0]
        rows.append(
            {
                "statistic": str(out.stat.name),
                "how": out.stat.how,
                "mechanism": first.measurement.mechanism,
                "scale": float(first.measurement.scale) * 2.0**first.exponent,
                "epsilon": float(sum(p.measurement.epsilon for p in out.parts)),
                "delta": float(sum(p.measurement.cost.delta for p in out.parts)),
                "error": out.stat.preview_error(inputs, alpha)
                if expected is None
                else out.stat.planned_error(inputs, alpha, expected),
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
