"""The values that travel along the release path: target, request, planned release.

Every query family (ungrouped statistics, group-bys, histograms, choices, hierarchies)
describes what it wants as a :class:`Request`; the planner turns it into the one
:class:`PlannedRelease` type, which :func:`~pandas_dp.api.release.run.run` releases and
:func:`~pandas_dp.api.release.preview.preview` describes. Nothing here depends on the data.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeAlias, TypeVar

import pandas as pd
from pandas._typing import DtypeObj

from pandas_dp.accounting.events import Release
from pandas_dp.api.caps import Caps
from pandas_dp.api.release.arguments import Bound, Bounds, Fill, Mechanism, NoiseArgs, Real
from pandas_dp.budget import epsilon_for_rho
from pandas_dp.engines import Engine
from pandas_dp.engines.bounding import Bounding
from pandas_dp.measures.aggregates import Aggregate, Grouping
from pandas_dp.measures.grids import Rounding
from pandas_dp.mechanisms.quantile import DEFAULT_CELLS, grid_cells
from pandas_dp.planning.measurement.choices import AnyPart
from pandas_dp.planning.measurement.keys import MeasurementKey
from pandas_dp.planning.measurement.kinds import NonNullCount, RowCount
from pandas_dp.planning.measurement.weighted import Weights
from pandas_dp.planning.noise import NoiseSource
from pandas_dp.planning.statistics import Inputs, Statistic

if TYPE_CHECKING:
    from pandas_dp.api.session import Session
    from pandas_dp.api.temporal import ValueKind
    from pandas_dp.planning.statistics.postprocess import PostProcess

T = TypeVar("T", covariant=True)  # a plan of a DataFrame is a plan of an object
U = TypeVar("U")
V = TypeVar("V")


@dataclass(frozen=True)
class Target:
    """What a query runs on: the data as a frame, its session and its engine."""

    session: Session
    data: Any
    engine: Engine
    column: Hashable | None = None  # the Series' own column, for Series targets
    unit: Hashable | None = None  # the column of ``data`` holding the privacy unit's ids

    _dtypes: dict[Hashable, DtypeObj] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def dtype(self, column: Hashable) -> DtypeObj:
        """The dtype of a (checked, unique) column: public metadata, read once per target.

        A target lives for one call, during which its frame does not change. An in-memory
        frame gives one column's dtype directly, cheaper than a Series of them all.
        """
        if column not in self._dtypes:
            if self.engine.in_memory:
                self._dtypes[column] = self.data[column].dtype
            else:
                self._dtypes[column] = dict(self.engine.dtypes(self.data).items())[column]
        return self._dtypes[column]


@dataclass(frozen=True, kw_only=True)
class ReleaseOptions:
    """A release's options as the user typed them, built once where a query is called.

    The accessors take them as typed keywords (:mod:`~pandas_dp.api.release.arguments`);
    the query families pass this one value down instead of ``**kwargs``, and
    :func:`~pandas_dp.api.release.options.validate` checks every field at run time (the
    annotations say what is accepted, not what has been checked).
    """

    epsilon: Real | None = None
    rho: Real | None = None
    delta: Real | None = None
    mechanism: Mechanism = "laplace"
    #: The confidence level of intervals (None: no intervals).
    ci: float | None = None
    bounds: Bounds = None
    fillna: Fill = None
    #: The noisy count below which a ratio (a mean, a spread, a quantile) is NaN.
    min_count: Real | None = None
    #: The quantile grid's number of cells (None: the default).
    cells: int | None = None
    #: ``{statistic name: weight}`` in the split of ε.
    accuracy: Mapping[str, float] | None = None
    relative_error: bool = False
    weights: Hashable | None = None
    weight_bounds: Bound | None = None
    #: Free post-processing of counts (``nonnegative``, ``total``), parsed by the caller.
    post: PostProcess | None = None

    @classmethod
    def of_noise(
        cls, options: NoiseArgs, *, ci: float | None, post: PostProcess | None = None
    ) -> ReleaseOptions:
        """The options of a release that takes only :class:`NoiseArgs` (counts)."""
        return cls(
            epsilon=options.get("epsilon"), rho=options.get("rho"), delta=options.get("delta"),
            mechanism=options.get("mechanism", "laplace"), weights=options.get("weights"),
            weight_bounds=options.get("weight_bounds"), ci=ci, post=post,
        )  # fmt: skip


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
    kinds: dict[Hashable, ValueKind] = field(default_factory=dict)


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
class Selection:
    """Which keys a release keeps when they are chosen from the data.

    Those whose noisy row count is at least ``threshold``, or (``threshold`` None) those
    that measurement ``key`` chose.
    """

    key: MeasurementKey
    threshold: int | None


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


#: Turns the released keys and noisy aggregates (by measurement) into the user's result; the
#: noise source the runner hands down serves randomised post-processing (synthetic rows).
Finish = Callable[[pd.Index | None, dict[MeasurementKey, Aggregate], NoiseSource], Any]


@dataclass(frozen=True, kw_only=True)
class PlannedRelease(Generic[T]):
    """A validated release, ready to run or to preview; built only by the planner.

    Attributes
    ----------
    target : Target
        Where the data, session and engine are.
    parts : dict
        The noisy measurements by key, in the order they are calibrated.
    outputs : tuple of PlannedOutput
        The statistics and the measurements each reads.
    release : Release
        The ledger record the release is charged as.
    finish : callable
        Free post-processing of the noisy aggregates into the result.
    grouping, bounding, selection, derive
        Engine grouping, contribution bounding, private key selection, and an exact
        transformation of the engine's aggregates (a hierarchy rolls leaves up to levels).
    confidence : float or None
        The confidence of the release's intervals (a preview's, 0.95 by default).
    preview_only : str
        Why these options can be previewed but not released (empty: they can be).
    post : PostProcess or None
        The release's post-processing (``min_count``), for the noise-dominated rules.
    """

    target: Target
    parts: dict[MeasurementKey, AnyPart]
    outputs: tuple[PlannedOutput, ...]
    release: Release
    finish: Finish
    grouping: Grouping | None = None
    bounding: Bounding | None = None
    selection: Selection | None = None
    derive: Callable[[list[Aggregate]], list[Aggregate]] | None = None
    confidence: float | None = None
    preview_only: str = ""
    post: PostProcess | None = None

    def then(self, step: Callable[[T], U]) -> PlannedRelease[U]:
        """The same release, its result passed through ``step`` (free post-processing)."""
        first = self.finish

        def finish(
            keys: pd.Index | None, noisy: dict[MeasurementKey, Aggregate], source: NoiseSource
        ) -> U:
            return step(first(keys, noisy, source))

        return replace(self, finish=finish)  # type: ignore[return-value]

    def only_preview(self, reason: str) -> PlannedRelease[T]:
        """The same plan, which :func:`run` refuses (before anything is read) with ``reason``."""
        return replace(self, preview_only=reason)


#: A query family's own shaping: given the planned outputs and how they are shown, the finish.
Finisher = Callable[[tuple[PlannedOutput, ...], Presentation], Finish]

#: What a group-by release returns: a Series for one column, else a DataFrame (as pandas).
Table: TypeAlias = pd.Series | pd.DataFrame
