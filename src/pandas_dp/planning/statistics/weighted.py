"""Weighted counts, sums and means (survey weights): the unweighted statistics, reweighed.

A weighted statistic reads the same measurements as its unweighted twin, each summed with
the row's clipped weight (:class:`~pandas_dp.planning.measurement.keys.MeasurementKey` with
``weights``), so the planner shares, splits and calibrates them exactly as it does the
unweighted ones; only a weighted count's value differs (a float in the weights' units).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from pandas_dp.errors import DPValueError
from pandas_dp.planning.measurement.keys import MeasurementKey
from pandas_dp.planning.statistics.base import F64, Inputs, Statistic
from pandas_dp.planning.statistics.moments import Count, Mean, Sum

if TYPE_CHECKING:
    from pandas_dp.planning.statistics.postprocess import PostProcess


@dataclass(frozen=True)
class _Weighted:
    """The weight column a statistic's measurements are summed with."""

    weights: Hashable = None

    def weigh(self, key: MeasurementKey) -> MeasurementKey:
        """``key`` with every row weighted by :attr:`weights`."""
        return dataclasses.replace(key, weights=self.weights)


@dataclass(frozen=True)
class WeightedCount(_Weighted, Count):
    """The sum of the clipped weights of the rows (or of the rows where ``column`` is present).

    pandas twin: ``df["w"].sum()`` over those rows, with ``w`` clipped to its bounds.
    """

    integer: ClassVar[bool] = False

    def value(self, inputs: Inputs, post: PostProcess) -> F64:
        """The noisy weighted count (a float), clamped at 0 with ``nonnegative``."""
        return post.apply(inputs.real(0))


@dataclass(frozen=True)
class WeightedSum(_Weighted, Sum):
    """``Σ clip(w)·clip(x)``; pandas twin: ``(df.x * df.w).sum()`` on clipped columns."""


@dataclass(frozen=True)
class WeightedMean(_Weighted, Mean):
    """``c + noisy Σ clip(w)(clip(x) - c) / max(noisy Σ clip(w), 1)``, clipped to the bounds.

    pandas twin: ``np.average(x, weights=w)`` over the rows where ``x`` is present.
    """

    def notes(self) -> tuple[str, ...]:
        """The weighted mean's formula."""
        return (
            "weighted mean = c + noisy Σ w·(x - c) / max(noisy Σ w, 1), c the midpoint of the "
            "bounds, clipped to bounds",
        )


_WEIGHTED: dict[type[Statistic], type[Statistic]] = {
    Count: WeightedCount,
    Sum: WeightedSum,
    Mean: WeightedMean,
}


def weighted(stats: Sequence[Statistic], weights: Hashable) -> tuple[Statistic, ...]:
    """Every statistic of a release in its weighted form.

    Raises
    ------
    DPValueError
        If one of them has no weighted form (only counts, sums and means do).
    """
    refused = [stat for stat in stats if type(stat) not in _WEIGHTED]
    if refused:
        names = ", ".join(f"{stat.name!r} ({stat.how})" for stat in refused)
        raise DPValueError(
            f"weights={weights!r} applies to count, sum and mean only; {names} cannot be "
            "weighted here: release it in a separate call without weights"
        )
    return tuple(
        _WEIGHTED[type(stat)](
            **{field.name: getattr(stat, field.name) for field in dataclasses.fields(stat)},
            weights=weights,  # type: ignore[call-arg]
        )
        for stat in stats
    )
