"""Free post-processing of released counts, as the user asks for it (no budget)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pandas_dp.errors import DPTypeError, DPValueError
from pandas_dp.mechanisms.postprocess import fit_to_total, round_to_total


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
