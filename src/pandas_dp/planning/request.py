"""What a release asks for, as plan values: its statistics and its public options by reader.

Every query family describes what it wants as a :class:`Request`; the planner
(:mod:`~pandas_dp.planning.planner`) turns it into measurements, their calibration and a
ledger record, each statistic's :class:`PlannedOutput`. Public inputs only: the session is
read through :class:`Granted` (its budget and how it prices), a time column's kind through
:class:`TimeKind`, and nothing here depends on the data.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Literal, Protocol

from pandas._typing import ArrayLike
from pandas.api.extensions import ExtensionArray

from pandas_dp.budget import AnyBudget, epsilon_for_rho
from pandas_dp.measures.aggregates import Aggregate, Grouping
from pandas_dp.measures.bounding import Bounding
from pandas_dp.measures.grids import Rounding
from pandas_dp.mechanisms.quantile import DEFAULT_CELLS, grid_cells
from pandas_dp.planning.measurement.choices import AnyPart
from pandas_dp.planning.measurement.keys import MeasurementKey
from pandas_dp.planning.measurement.kinds import NonNullCount, RowCount
from pandas_dp.planning.measurement.weighted import Weights
from pandas_dp.planning.statistics import Inputs, Statistic
from pandas_dp.planning.statistics.base import OnTime
from pandas_dp.units import Contribution

if TYPE_CHECKING:
    from pandas_dp.planning.statistics.postprocess import PostProcess


class Granted(Protocol):
    """What the plan reads of the session (``api.session.Session``): its budget and pricing."""

    @property
    def total(self) -> AnyBudget:
        """The budget the data owner granted."""

    @property
    def in_zcdp(self) -> bool:
        """Whether releases are priced in zCDP (a choice at ε then costs ``ε²/8``)."""


class TimeKind(Protocol):
    """What a release reads of a time column's kind (``api.temporal.ValueKind``)."""

    def note(self, column: Hashable) -> str:
        """The ledger's line for a time column: its values' units."""

    def present(self, values: ArrayLike, on_time: OnTime) -> ExtensionArray:
        """Released numbers in the column's own unit (and time zone)."""


@dataclass(frozen=True)
class Caps:
    """The contribution bound of a release and what the engine must enforce for it.

    Attributes
    ----------
    contribution : Contribution
        ``l1`` rows in all, ``l0`` groups, ``linf`` rows per group.
    bounding : Bounding or None
        The caps the engine applies (None for row-level privacy: one row, one unit).
    """

    contribution: Contribution = field(default_factory=Contribution)
    bounding: Bounding | None = None
    unit: Hashable | None = None  # the unit column's name, for the ledger
    #: The derived frame's stability and the steps that set it (ledger text), if any.
    lineage: str = ""
    #: The protected tables the release reads, once a budget protects several (ledger text).
    tables: str = ""

    @property
    def noteworthy(self) -> bool:
        """Whether the ledger's note should say what the caps are (or which tables it read)."""
        return self.bounding is not None or bool(self.lineage) or bool(self.tables)

    def describe(self) -> str:
        """Ledger text."""
        source = f"{self.tables}; " if self.tables else ""
        if self.bounding is None:
            text = f"{source}privacy unit: one row"
            if self.lineage and self.contribution.l1 > 1:  # the stability multiplies it
                text += f"; {self.lineage}: one row moves ≤ {self.contribution.l1} rows"
            elif self.lineage:  # steps that keep one row per protected row
                text += f"; {self.lineage}"
            return text
        c = self.contribution
        if self.bounding.max_groups is None and self.bounding.max_rows_per_group is None:
            caps = f"≤ {c.l1} rows"
        else:
            caps = f"≤ {c.l0} groups, ≤ {c.linf} rows per group, ≤ {c.l1} rows in all"
        text = f"{source}privacy unit {self.unit!s}: {caps} (extra rows dropped at random)"
        return f"{text}; {self.lineage}" if self.lineage else text


@dataclass(frozen=True, kw_only=True)
class Pricing:
    """What a release costs and how it is noised: read by the split, calibration and ledger.

    ``shares`` gives each measurement's share of ε (summing to 1); by default the planner
    splits ε for the least relative error (:mod:`pandas_dp.planning.measurement.split`),
    weighted by ``priorities``.
    """

    epsilon: Fraction
    #: A release priced in zCDP (``rho=``, or Gaussian noise in a ρ session): its ρ, split
    #: among the measurements in proportion to their shares (each gets the ε whose ε²/2 is
    #: its ρ); :attr:`epsilon` is then ``sqrt(2ρ)``, for the ledger.
    rho: Fraction | None = None
    delta: Fraction | None = None
    gaussian: bool = False
    shares: tuple[Fraction, ...] | None = None
    #: ``accuracy=``: the weight of each statistic (by name) in the ε split; 1 if absent.
    priorities: tuple[tuple[Hashable, float], ...] = ()
    #: The budget the call asked for, as typed (the ledger's ``asked`` column).
    asked: str = ""

    def budget_of(self, share: Fraction) -> Fraction:
        """The ε of a measurement with this share of the release."""
        if self.rho is None:
            return self.epsilon * share
        return epsilon_for_rho(self.rho * share)

    def choice_budget_of(self, share: Fraction, rounds: int = 1) -> Fraction:
        """The ε of an exponential-mechanism choice with this share, priced by bounded range.

        In a ρ session an ε-DP exponential mechanism is ``ε²/8``-zCDP (it is ε-bounded-range,
        Durfee & Rogers 2019; Cesar & Rogers 2021, Lemma 3.2): ``rho=`` gives each choice the
        ε whose ``ε²/8`` is its share, ``sqrt(8ρ)`` (rounded down), and ``epsilon=`` its share
        of that ε, charged ``ε²/8``. ``rounds`` choices by peeling (top-k) at ``ε/rounds``
        each cost ``ε²/(8 rounds)`` together, so ``rho=`` gives them ``sqrt(8ρ rounds)``.
        """
        if self.rho is None:
            return self.epsilon * share
        return epsilon_for_rho(4 * self.rho * share * rounds)

    def priority(self, name: Hashable) -> float:
        """The user's weight for statistic ``name`` in the split of ε (1 by default)."""
        return dict(self.priorities).get(name, 1.0)


@dataclass(frozen=True, kw_only=True)
class ColumnFacts:
    """Public facts about the columns a release reads: its statistics' and calibration's.

    Validated once from the arguments, the schema and the dtypes
    (:func:`~pandas_dp.api.release.options.validate`); the planner reads the columns through
    this value only.
    """

    bounds: dict[Hashable, tuple[float, float]] = field(default_factory=dict)
    fill: dict[Hashable, float | None] = field(default_factory=dict)
    #: The quantile grid's number of cells.
    cells: int = DEFAULT_CELLS
    #: Integer columns with integer bounds (whatever the fill): quantiles on the integers.
    integer_columns: frozenset[Hashable] = frozenset()
    #: The statistics' columns that may hold missing values (the schema's rule, else the
    #: dtype's): their counts are measured apart from the row count.
    nullable: frozenset[Hashable] = frozenset()
    #: Row weights (``weights=``): every count, sum and mean of the release is weighted.
    weights: Weights | None = None

    def imputed(self, column: Hashable) -> bool:
        """Whether missing values of ``column`` are replaced by a public ``fillna``."""
        return self.fill.get(column) is not None

    def bounds_of(self, column: Hashable) -> tuple[float, float]:
        """The public bounds of ``column`` (for statistics that read values)."""
        return self.bounds[column]

    def count_for(self, column: Hashable | None, *, imputed: bool) -> MeasurementKey:
        """The count that goes with ``column``: rows, or its non-missing values."""
        if column is None or imputed or column not in self.nullable:
            return RowCount()
        return NonNullCount(column)

    def grid_cells(self, column: Hashable) -> int:
        """The cells of ``column``'s quantile grid (see :func:`grid_cells`).

        The integers between the bounds of an integer column when they are at most
        ``cells`` apart, else ``cells`` equal cells.
        """
        lower, upper = self.bounds[column]
        return grid_cells(lower, upper, self.cells, column in self.integer_columns)


@dataclass(frozen=True, kw_only=True)
class Presentation:
    """How a release's values are shown: read by its finisher (and the NaN rules)."""

    #: The confidence level of intervals (None: no intervals).
    confidence: float | None = None
    #: Free post-processing of counts and ``min_count``.
    post: PostProcess | None = None
    #: Add ``<name>_rel_error`` (interval half-width over the value) after each interval.
    relative_error: bool = False
    #: Quantiles measure their (groups') counts (``min_count`` given): NaN where empty.
    count_quantiles: bool = False
    #: Integer columns with integer bounds (and fill): their sums are released as integers.
    integral_columns: frozenset[Hashable] = frozenset()
    #: The datetime and timedelta columns read (others are numbers): shown as times.
    kinds: Mapping[Hashable, TimeKind] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Request:
    """A release's statistics and its validated public options, split by reader.

    ``pricing`` is read by the split of ε, the calibration and key selection, ``columns``
    by the statistics and the calibration, ``presentation`` by the finisher. ``notes`` are a
    query family's own ledger lines.
    """

    stats: tuple[Statistic, ...]
    query: str
    pricing: Pricing
    columns: ColumnFacts = field(default_factory=ColumnFacts)
    presentation: Presentation = field(default_factory=Presentation)
    grouping: Grouping | None = None
    caps: Caps = field(default_factory=Caps)
    #: How keys are chosen when they are not public: a threshold on the noisy row count, or
    #: the optimal rule of Desfontaines et al. (2022).
    selection: Literal["threshold", "optimal"] = "threshold"
    sources: tuple[str, ...] = ()  # where bounds and keys came from, for the ledger
    notes: tuple[str, ...] = ()  # a query family's own lines for the ledger note

    def grid_rounding(self, column: Hashable) -> Rounding:
        """Which round values ``column``'s quantiles take as candidates besides the grid.

        None (``"grid"``) on an integer column's grid of the integers; the round times of
        a datetime or timedelta column; else round numbers (see
        :func:`~pandas_dp.measures.grids.quantile_candidates`). Public: dtype and bounds.
        """
        if column in self.presentation.kinds:
            return "time"
        columns = self.columns
        lower, upper = columns.bounds[column]
        if column in columns.integer_columns and columns.grid_cells(column) == upper - lower:
            return "grid"
        return "number"

    @property
    def selecting(self) -> bool:
        """Whether keys are chosen from the data (DP partition selection)."""
        return self.grouping is not None and self.grouping.keys is None


@dataclass(frozen=True)
class PlannedOutput:
    """One statistic with the measurements it reads (in the order it asked for them)."""

    stat: Statistic
    keys: tuple[MeasurementKey, ...]
    parts: tuple[AnyPart, ...]
    bounds: tuple[float, float] | None = None

    def inputs(self, noisy: dict[MeasurementKey, Aggregate] | None = None) -> Inputs:
        """The statistic's measurements and, after a release, their noisy values."""
        values = () if noisy is None else tuple(noisy[key] for key in self.keys)
        return Inputs(self.parts, self.bounds, values)
