"""The values that travel along the release path: target, options, planned release.

Every query family (ungrouped statistics, group-bys, histograms, choices, hierarchies)
describes what it wants as a :class:`~pandas_dp.planning.request.Request`; the planner
plans it and :func:`~pandas_dp.api.release.planned.plan` makes it the one
:class:`PlannedRelease` type, which :func:`~pandas_dp.api.release.run.run` releases and
:func:`~pandas_dp.api.release.preview.preview` describes. Nothing here depends on the data.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Generic, TypeAlias, TypeVar

import pandas as pd
from pandas._typing import DtypeObj

from pandas_dp.accounting.events import Release
from pandas_dp.api.release.arguments import Bound, Bounds, Fill, Mechanism, NoiseArgs, Real
from pandas_dp.budget import number_text
from pandas_dp.engines import Engine
from pandas_dp.measures.aggregates import Aggregate, Grouping
from pandas_dp.measures.bounding import Bounding
from pandas_dp.planning.measurement.choices import AnyPart
from pandas_dp.planning.measurement.keys import MeasurementKey
from pandas_dp.planning.noise import NoiseSource
from pandas_dp.planning.request import PlannedOutput, Presentation
from pandas_dp.planning.selection import Selection

if TYPE_CHECKING:
    from pandas_dp.api.session import Session
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


#: Turns the released keys and noisy aggregates (by measurement) into the user's result; the
#: noise source the runner hands down serves randomised post-processing (synthetic rows).
Finish = Callable[[pd.Index | None, dict[MeasurementKey, Aggregate], NoiseSource], Any]


@dataclass(frozen=True, kw_only=True)
class PlannedRelease(Generic[T]):
    """A validated release, ready to run or to preview; built only by :func:`.planned.plan`.

    Attributes
    ----------
    target : Target
        Where the data, session and engine are.
    parts, outputs, release, selection
        The planner's :class:`~pandas_dp.planning.planner.Plan`, as it gave them.
    finish : callable
        Free post-processing of the noisy aggregates into the result.
    grouping, bounding, derive
        Engine grouping, contribution bounding, and an exact transformation of the engine's
        aggregates (a hierarchy rolls leaves up to levels).
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
    #: A release that runs first, in the same charge (``bounds="auto"``: the bounds released
    #: from the data); its result plans this release anew (:attr:`replan`), and this plan,
    #: made with placeholder bounds, gives the cost and the preview.
    prior: PlannedRelease[Any] | None = None
    replan: Callable[[Any], PlannedRelease[T]] | None = None
    #: The argument that asked for the prior, as typed (``range='auto'`` for a histogram).
    auto: str = "bounds='auto'"
    #: Whether the prior released ends (bounds, a range) the note shows; a first step that
    #: released none (a logit's row count and first fit) shows its share alone.
    ends: bool = True

    def then(self, step: Callable[[T], U]) -> PlannedRelease[U]:
        """The same release, its result passed through ``step`` (free post-processing)."""
        first = self.finish

        def finish(
            keys: pd.Index | None, noisy: dict[MeasurementKey, Aggregate], source: NoiseSource
        ) -> U:
            return step(first(keys, noisy, source))

        replan = self.replan
        again = None if replan is None else (lambda prior: replan(prior).then(step))
        return replace(self, finish=finish, replan=again)  # type: ignore[return-value,arg-type]

    @property
    def charged(self) -> Release:
        """What the plan charges: its release, after its :attr:`prior`'s (one ledger row)."""
        if self.prior is None:
            return self.release
        return chained(self.prior.charged, self.release, auto=self.auto, ends=self.ends)

    def after(
        self,
        prior: PlannedRelease[Any],
        replan: Callable[[Any], PlannedRelease[T]],
        auto: str = "bounds='auto'",
        *,
        ends: bool = True,
    ) -> PlannedRelease[T]:
        """The same plan (placeholder inputs) as the second half of a release after ``prior``.

        ``replan(prior's result)`` is the release actually run; both are charged as one.
        ``auto`` is the argument that asked for it, as the ledger's ``asked`` shows it. A
        plan that has a prior of its own (``bounds="auto"`` under ``max_groups_per_unit=
        "auto"``) follows ``prior`` whole: its release here is everything it charges, and
        its outputs are its priors' and its own (what a preview lists).
        """
        outputs, before = self.outputs, self.prior
        while before is not None:
            outputs, before = (*before.outputs, *outputs), before.prior
        return replace(
            self, release=self.charged, outputs=outputs, prior=prior, replan=replan, auto=auto,
            ends=ends,
        )  # fmt: skip

    def only_preview(self, reason: str) -> PlannedRelease[T]:
        """The same plan, which :func:`run` refuses (before anything is read) with ``reason``."""
        return replace(self, preview_only=reason)


#: The ``attrs`` key of a released bounds table listing the columns whose scan ran to the
#: lattice's end (no end of the data found): the runner warns of it after the charge.
UNRESOLVED = "unresolved"


def chained(
    first: Release,
    second: Release,
    released: pd.DataFrame | None = None,
    auto: str = "bounds='auto'",
    *,
    ends: bool = True,
) -> Release:
    """``second`` after ``first`` as one release: its measurements follow ``first``'s.

    ``first`` released the bounds ``second`` clipped to (``bounds="auto"``), or the range it
    cut (``range="auto"``); the note says so, with the bounds and their share of ε (without
    ``ends``, a first step that released no bounds, its share alone). The ends
    shown are ``released`` (``lower``/``upper`` by column) when given, else the bounds
    ``second`` clipped to (the ledger's ``bounds`` column has those too).
    """
    spent = sum((m.epsilon for m in first.measurements), Fraction(0))
    total = spent + sum((m.epsilon for m in second.measurements), Fraction(0))
    share = f"{float(spent / total):.3g}" if total else "0"
    if released is not None and {"lower", "upper"} <= set(released.columns):
        pairs = [(c, row["lower"], row["upper"]) for c, row in released.iterrows()]
    elif released is not None:  # one value per column (a date column's origin)
        pairs = [(c, v, v) for c, v in released.iloc[0].items()]
    else:  # (a logit's response keeps its public range [0, 1])
        pairs = [(c, lo, hi) for c, lo, hi in second.bounds if c in set(first.columns)]

    def text(end: object) -> str:  # numbers to 6 digits; Timestamps, Timedeltas as pandas
        return f"{end:.6g}" if isinstance(end, int | float) else str(end)

    note = f"{auto}: {share} of ε on {first.query}"
    if ends:
        shown = "; ".join(f"{c}: [{text(lo)}, {text(hi)}]" for c, lo, hi in pairs)
        note += f" released from the data ({shown})"
    asked = [f"epsilon={number_text(total)}"]  # what the call asked for, as typed
    asked += [part for part in second.asked.split(", ") if not part.startswith("epsilon=")]
    return replace(
        second,
        asked=", ".join([*asked, auto] if "=" in auto else asked),  # an argument, as typed
        measurements=(*first.measurements, *second.measurements),
        columns=tuple(dict.fromkeys((*first.columns, *second.columns))),
        note=f"{note}; {second.note}" if second.note else note,
    )


#: A query family's own shaping: given the planned outputs and how they are shown, the finish.
Finisher = Callable[[tuple[PlannedOutput, ...], Presentation], Finish]

#: What a group-by release returns: a Series for one column, else a DataFrame (as pandas).
Table: TypeAlias = pd.Series | pd.DataFrame
