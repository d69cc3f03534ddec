"""Free post-processing of released counts, as the user asks for it (no budget)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from pandas_dp.errors import DPTypeError, DPValueError
from pandas_dp.mechanisms.postprocess import fit_to_total, round_to_total


@dataclass(frozen=True)
class PostProcess:
    """Free post-processing of released counts (no budget): clamp, fit to a total, round."""

    nonnegative: bool = False
    total: float | None = None
    #: Ratios (means, spreads) of groups whose noisy count is below this are NaN, as pandas
    #: gives NaN for an empty group (a noisy count below 1 is the release's best guess that
    #: the group is empty); 0 keeps every value.
    min_count: float = 1.0

    @classmethod
    def of(cls, nonnegative: object = False, total: object = None) -> PostProcess:
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

    def with_min_count(self, min_count: object) -> PostProcess:
        """The same post-processing with the user's ``min_count`` (validated)."""
        if min_count is None:
            return self
        if isinstance(min_count, bool) or not isinstance(min_count, int | float | np.number):
            raise DPTypeError(f"min_count must be a number, got {type(min_count).__name__}")
        if not (np.isfinite(min_count) and min_count >= 0):
            raise DPValueError(f"min_count must be a finite number >= 0, got {min_count!r}")
        return replace(self, min_count=float(min_count))

    def hide_small(self, values: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """``values`` with NaN where the noisy ``counts`` are below the minimum count."""
        if self.min_count == 0:
            return values
        return np.where(np.asarray(counts, dtype=np.float64) < self.min_count, np.nan, values)

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
