"""The measurement of running totals: a time histogram encoded for continual counting.

The engine counts the rows in each public time bin (a one-axis table); the part then
encodes the counts as its continual-counting plan measures them (the dyadic blocks of the
binary tree, or ``R' x`` of the square-root factorization, exact integers) before one
independent noise variate is added to each value (see :mod:`pandas_dp.mechanisms.continual`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from pandas_dp.measures.aggregates import Aggregate
from pandas_dp.planning.measurement.marginals import MarginalPart


@dataclass(frozen=True)
class PrefixPart(MarginalPart):
    """The noisy encoding of a time histogram under ``counting`` (a continual plan)."""

    counting: Any = None

    def from_home(self, table: np.ndarray) -> Aggregate:
        """The plan's exact integer measurements of the bins' counts."""
        return cast(Aggregate, self.counting.measure(np.asarray(table).reshape(-1)))
