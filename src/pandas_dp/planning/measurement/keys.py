"""What a release measures: one frozen key per noisy measurement.

A statistic asks for measurements by key (the row count, the clipped sum of ``income``, ...);
the planner calibrates one noisy measurement per distinct key, so statistics that need the
same thing share it. There is one key class per kind of measurement
(:mod:`~pandas_dp.planning.measurement.kinds`): each renders its own ledger label and
description and calibrates its own noise, so nothing dispatches on a kind, and nothing is
built as text and parsed back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, ClassVar, Literal

if TYPE_CHECKING:
    from pandas_dp.measures.grids import Rounding
    from pandas_dp.planning.measurement.choices import AnyPart
    from pandas_dp.planning.measurement.parts import NoiseChoice
    from pandas_dp.planning.measurement.weighted import Weights
    from pandas_dp.units import Contribution


@dataclass(frozen=True)
class CalibrationInputs:
    """The public facts a measurement's calibration reads (from the request and session).

    Attributes
    ----------
    epsilon : Fraction
        The measurement's share of the release's ε.
    contribution : Contribution
        The privacy unit's contribution bounds.
    noise : NoiseChoice
        Laplace, or Gaussian with its δ.
    bounds, fill : mapping
        The public clipping bounds and ``fillna`` value (None: skipped) of each column.
    grid_cells : callable
        The cells of a column's quantile grid.
    grid_rounding : callable
        The round values a column's quantiles take besides the grid's edges.
    confidence : float, optional
        The confidence of the release's intervals.
    key_delta : callable
        The δ a private key selection spends (raises when the session has no δ).
    parts : mapping
        The measurements calibrated before this one (squares read the centred sum's centre).
    weights : Weights, optional
        The release's row weights.
    """

    epsilon: Fraction
    contribution: Contribution
    noise: NoiseChoice
    bounds: Mapping[Hashable, tuple[float, float]]
    fill: Mapping[Hashable, float | None]
    grid_cells: Callable[[Hashable], int]
    grid_rounding: Callable[[Hashable], Rounding]
    confidence: float | None
    key_delta: Callable[[], Fraction]
    parts: Mapping[MeasurementKey, AnyPart]
    weights: Weights | None = None


@dataclass(frozen=True)
class MeasurementKey:
    """One noisy measurement a release makes; one subclass per kind.

    Attributes
    ----------
    column : label, optional
        The column measured (for a level of a hierarchy: the level's name; for a table: the
        tuple of its columns).
    q : Fraction, optional
        The quantile level.
    rounds : int
        Distinct choices made by peeling (the top ``k``).
    level : int, optional
        Depth in a hierarchy.
    side : {0, -1, 1}
        For a quantile: the estimate (0), or the lower (-1) or upper (1) end of its interval.
    weights : label, optional
        For counts and sums: the column of row weights; each row then counts (or its value
        is summed) with its clipped weight.
    kind : str
        Class attribute: the kind's name (``rows``, ``centred_sum``, ...).
    word : str
        Class attribute: the word its ledger label starts with.
    calibrated_last : bool
        Class attribute: whether it reads other measurements' calibrations (squares read
        the centred sum's centre), so is calibrated after them.
    """

    column: Hashable | None = None
    q: Fraction | None = None
    rounds: int = 1
    level: int | None = None
    side: Literal[0, -1, 1] = 0
    weights: Hashable | None = None

    kind: ClassVar[str] = ""
    word: ClassVar[str] = ""
    calibrated_last: ClassVar[bool] = False

    @property
    def label(self) -> str:
        """Ledger label: ``sum(income)``, ``sum(income, weights=w)``, ..."""
        weights = "" if self.weights is None else f", weights={self.weights}"
        return f"{self.word}({self.column}{weights})"

    def describe(self) -> str:
        """What it measures, in words: ``the centred sum of income``."""
        if self.weights is not None:
            unweighted = dataclasses.replace(self, weights=None).describe()
            return f"{unweighted.replace('the ', 'the weighted ', 1)} (weights {self.weights})"
        return f"the {self.kind.replace('_', ' ')} of {self.column}"

    def calibrate(self, inputs: CalibrationInputs) -> AnyPart:
        """The calibrated noise of this measurement."""
        raise NotImplementedError(f"{type(self).__name__} does not calibrate itself")


def names(columns: Hashable) -> str:
    """``x, y, z`` for a tuple of columns."""
    return ", ".join(map(str, columns if isinstance(columns, tuple) else (columns,)))


def table(columns: Hashable) -> str:
    """``age × sex`` for a table's columns (``total`` for none)."""
    cols = columns if isinstance(columns, tuple) else (columns,)
    return " × ".join(map(str, cols)) or "total"
