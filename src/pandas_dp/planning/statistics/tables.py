"""One table of a workload of marginals (``priv.dp.tables``), as a statistic.

Every measured marginal informs every table (the total is under all of them), so each table
reads all of the release's measurements; its preview error is the least-squares error of its
cells, from the noise of every measurement.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from pandas_dp.mechanisms.laplace import DiscreteLaplace
from pandas_dp.mechanisms.marginals import Clique, residual_variances, table_variance
from pandas_dp.mechanisms.reconstruction import assemble, consistent_tables
from pandas_dp.mechanisms.residuals.planner import cell_variance, residuals
from pandas_dp.planning.measurement.marginals import MarginalPart, ResidualPart
from pandas_dp.planning.statistics.base import F64, GivenMeasurements, Inputs

if TYPE_CHECKING:
    from pandas_dp.planning.statistics.postprocess import PostProcess


@dataclass(frozen=True)
class Table(GivenMeasurements):
    """The counts of one workload table ``clique`` (attribute positions, sorted).

    ``sizes`` are the sizes of all the release's attributes; ``keys`` its measurements.
    """

    clique: Clique = ()
    sizes: tuple[int, ...] = ()

    how: ClassVar[str] = "table"

    def value(self, inputs: Inputs, post: PostProcess) -> F64:
        """The least-squares estimate of the table's cells (consistent, not clamped), flat."""
        parts = _marginals(inputs)
        if parts and isinstance(parts[0], ResidualPart):  # ResidualPlanner's measurements
            flat = {p.clique: np.asarray(v) for p, v in zip(parts, inputs.noisy, strict=True)}
            estimates = residuals(flat, [self.clique], self.sizes)
            return assemble(self.clique, estimates, self.sizes).reshape(-1)
        noisy = {
            p.clique: np.asarray(v, dtype=np.float64).reshape([self.sizes[i] for i in p.clique])
            for p, v in zip(parts, inputs.noisy, strict=True)
        }
        sigma2 = {p.clique: p.variance for p in parts}
        tables = consistent_tables(noisy, sigma2, [self.clique], self.sizes, clamp=False)
        return tables[self.clique].reshape(-1)

    def preview_error(self, inputs: Inputs, alpha: float) -> float:
        """Half-width of a ``1 - alpha`` interval of each cell's least-squares estimate.

        The estimate is a weighted sum of independent noise variates, each cell's with the
        same variance (:func:`~pandas_dp.mechanisms.marginals.table_variance`). With Gaussian
        noise the sum is Gaussian: ``z_{1-α/2}`` standard deviations. With Laplace noise it
        lies between a Gaussian and a single Laplace variate of that variance, so the larger
        of their quantiles is given (``ln(1/α)/√2`` standard deviations: 2.12 at 95%, not
        1.96). Clamping at zero only moves estimates closer to counts that cannot be negative.
        """
        from scipy import special  # lazy: scipy is not loaded by ``import pandas_dp``

        spread = float(special.ndtri(1 - alpha / 2))
        if any(isinstance(p.mechanism, DiscreteLaplace) for p in _marginals(inputs)):
            spread = max(spread, float(np.log(1 / alpha) / np.sqrt(2)))
        return spread * self.rmse(inputs)

    def rmse(self, inputs: Inputs) -> float:
        """The root mean squared error of each cell's least-squares estimate."""
        parts = _marginals(inputs)
        cliques, variances = [p.clique for p in parts], [p.variance for p in parts]
        if parts and isinstance(parts[0], ResidualPart):
            return float(np.sqrt(cell_variance(self.clique, cliques, variances, self.sizes)))
        tau = residual_variances(cliques, variances, self.sizes)
        return float(np.sqrt(table_variance(self.clique, tau, self.sizes)))


def _marginals(inputs: Inputs) -> list[MarginalPart]:
    parts = [p for p in inputs.parts if isinstance(p, MarginalPart)]
    assert len(parts) == len(inputs.parts)
    return parts


@dataclass(frozen=True)
class Synthetic(GivenMeasurements):
    """Synthetic rows: they read every measurement of the release (``keys``).

    Their error depends on the tree chosen from the data, so a preview reports none (NaN);
    the one-way tables' rows of the same preview give those marginals' errors.
    """

    how: ClassVar[str] = "synthetic"

    def value(self, inputs: Inputs, post: PostProcess) -> F64:
        """Not a number: the rows come from the release's own post-processing."""
        return np.full(1, np.nan)
