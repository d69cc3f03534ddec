"""Running totals: the prefix sums a continual-counting measurement decodes to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from pandas_dp.planning.statistics.base import F64, GivenMeasurements, Inputs

if TYPE_CHECKING:
    from pandas_dp.planning.statistics.postprocess import PostProcess


@dataclass(frozen=True)
class RunningTotal(GivenMeasurements):
    """Every prefix sum of a time histogram (entry ``t - 1``: the first ``t`` bins).

    Decoded from one measurement (:class:`~pandas_dp.planning.measurement.running.PrefixPart`);
    its interval is the plan's conservative half-width per prefix.
    """

    how: ClassVar[str] = "cumulative size"

    def value(self, inputs: Inputs, post: PostProcess) -> F64:
        """The decoded prefix sums (post-processing of the noisy measurement)."""
        part = inputs.parts[0]
        return np.asarray(part.counting.decode(np.asarray(inputs.noisy[0])), dtype=np.float64)  # type: ignore[union-attr]

    def interval(self, inputs: Inputs, alpha: float) -> tuple[F64, F64]:
        """Each prefix within its plan's half-width (a bound, exceeded w.p. at most α)."""
        values = self.value(inputs, None)  # type: ignore[arg-type]
        width = np.asarray(inputs.parts[0].counting.halfwidth(alpha), dtype=np.float64)  # type: ignore[union-attr]
        return values - width, values + width

    def preview_error(self, inputs: Inputs, alpha: float) -> float:
        """The largest half-width over the prefixes."""
        return float(np.max(inputs.parts[0].counting.halfwidth(alpha)))  # type: ignore[union-attr]
