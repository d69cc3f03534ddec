"""``priv.dp.resample(freq, on=..., range=...)``: a group-by over public time bins.

``df.resample("MS", on="t")`` groups rows by the period their time falls in. Its bins come
from the data (from the first to the last value), which a release must not read: here the
bins are those of ``freq`` over a public ``range=(start, end)``, cut and labelled as
``resample`` cuts and labels them (:func:`~pandas_dp.api.queries.time_bins.frequency_bins`:
left-closed for ``"D"``, ``"MS"`` ..., the period's last day for ``"W"``, ``"ME"`` ...).
Every release of a group-by is available (``size``, ``count``, ``sum``, ``mean``, ``agg``,
column selection, intervals with ``ci=``), charged once by parallel composition over the
disjoint bins, and indexed as pandas indexes it: by the bins' labels, a ``DatetimeIndex``
(``TimedeltaIndex``) with its ``freq``, named after ``on``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import pandas as pd

from pandas_dp.api.queries.groupby import DPGroupBy
from pandas_dp.api.queries.time_bins import time_edges
from pandas_dp.api.release import Target
from pandas_dp.api.release.consumers import Consumer, checked_keywords
from pandas_dp.api.temporal import ValueKind
from pandas_dp.api.validation import check_column
from pandas_dp.errors import DPTypeError, DPValueError
from pandas_dp.measures.aggregates import Binning


@dataclass(frozen=True, eq=False, repr=False)
class DPResampler(DPGroupBy):
    """A group-by over the bins of a frequency (see :meth:`DataFrameDPAccessor.resample`)."""

    def __repr__(self) -> str:
        return f"<DPResampler on={self.by[0]!r}, freq={self.freq}, {len(self.labels)} bins>"

    #: The pandas frequency of the bins, and the bins' labels (public).
    freq: str = ""
    labels: pd.Index = field(default_factory=lambda: pd.Index([]))

    @checked_keywords
    def size(
        self,
        *,
        cumulative: bool = False,
        epsilon: Any = None,  # passed on as given: None is refused by the release, not here
        delta: Any = None,
        mechanism: Literal["laplace", "gaussian"] = "laplace",
        ci: float | None = None,
        rho: Any = None,
        **options: Any,
    ) -> Any:
        """Rows per period, or with ``cumulative=True`` the running total after each period.

        Without ``cumulative``, as :meth:`DPGroupBy.size`. With it, the result equals
        ``df.resample(freq, on=...).size().cumsum()`` up to noise, but every running total
        is measured as one release by a continual-counting mechanism rather than adding up
        noisy counts, whose error grows like ``√t``: the square-root factorization with
        ``mechanism="gaussian"`` (error growing like ``log t``; about 3x lower than added
        noisy counts over a year of days, 6x over 4,096 bins), the binary tree or plain
        noisy bins with Laplace noise, whichever has the smaller largest variance for this
        number of bins. ``ci=`` gives each total its interval (a conservative bound).

        Notes
        -----
        One row adds 1 to one bin (a unit: at most its capped rows); the tree's noise has
        scale ``k L / ε`` on each dyadic block (``L`` levels), the factorization's discrete
        Gaussian noise ``σ² >= k² Δ² / (2ρ)`` on ``R' x``; cost ``ε`` (and δ), once. In a
        ρ session Gaussian noise needs no δ: ``epsilon=ε`` spends ``ρ = ε²/2``, and ``rho=``
        spends ρ with Gaussian noise.
        """
        if not cumulative:
            if rho is not None:
                options["rho"] = rho
            return super().size(epsilon=epsilon, delta=delta, mechanism=mechanism, ci=ci, **options)
        if options:
            raise DPTypeError(
                f"size(cumulative=True) takes epsilon, rho, delta, mechanism and ci; got "
                f"{sorted(options)}"
            )
        # Lazy: the continual-counting plans load the tables' measurement code on first use.
        from pandas_dp.api.queries.running import plan_running_totals

        binning = self._grouping.binning
        assert binning is not None
        assert self.keys is not None
        planned = plan_running_totals(
            self._target, self.by[0], binning, self.keys, epsilon, delta, mechanism, ci, rho
        )
        return self._consume(planned)


def resample(
    target: Target,
    freq: object,
    on: Hashable | None,
    span: object,
    consumer: Consumer,
    max_groups_per_unit: int | None = None,
    max_rows_per_group: int | None = None,
) -> DPResampler:
    """The group-by of ``on``'s values over the bins of ``freq`` in ``span``."""
    if on is None:
        raise DPValueError(
            "resample needs on=<a datetime column>: a frame's index is not read by a release "
            "(reset_index() makes it a column of the protected frame, then on='<its name>')"
        )
    if freq is None:
        raise DPValueError("resample needs freq=, a pandas frequency such as 'D', 'W' or 'MS'")
    kind = time_kind(
        target, on, "for numbers use groupby(pd.cut(...)) over public edges or "
        "Series.dp.histogram", what="resample bins time",
    )  # fmt: skip
    if span is None:
        raise DPValueError(
            "resample needs range=(start, end): pandas takes the bins from the first to the "
            "last value, which are private; e.g. range=(pd.Timestamp('2024-01-01'), "
            "pd.Timestamp('2025-01-01')) for the periods of 2024"
        )
    edges, intervals, named = time_bins(freq, span, kind, on)
    relabel = relabeller(intervals, named)

    grouped = DPResampler.of(
        target, on, intervals, binning=Binning(edges, right=False),
        max_groups_per_unit=max_groups_per_unit, max_rows_per_group=max_rows_per_group,
        consumer=consumer, relabel=relabel, called="resample",
    )  # fmt: skip
    return replace(grouped, freq=str(freq), labels=named)


def time_kind(target: Target, on: Hashable, fix: str, what: str) -> ValueKind:
    """The kind of the column ``on``, which must hold datetimes or timedeltas (dtype only)."""
    check_column(target.engine, target.data, on, known=target.session.columns, temporal=True)
    kind = ValueKind.of(dict(target.engine.dtypes(target.data).items())[on])
    if not kind.temporal:
        raise DPTypeError(f"{what}: column {on!r} holds {kind.describe()}; {fix}")
    return kind


def time_bins(
    freq: object, span: object, kind: ValueKind, on: Hashable
) -> tuple[tuple[float, ...], pd.IntervalIndex, pd.Index]:
    """The edges of ``freq``'s bins over ``span`` (nanoseconds), their intervals and labels.

    The intervals (left-closed, named ``on``) are the engine's keys; the labels, named
    ``on``, are those ``resample`` gives the bins (see
    :func:`~pandas_dp.api.queries.time_bins.frequency_bins`). Reads public arguments only.
    """
    edges, breaks, labels = time_edges(None, freq, span, kind, on)
    assert labels is not None
    intervals = pd.IntervalIndex.from_breaks(breaks, closed="left", name=on)
    return edges, intervals, labels.rename(on)


def relabeller(
    intervals: pd.IntervalIndex, labels: pd.Index, level: int = 0
) -> Callable[[object], object]:
    """Index a released table by the bins' labels instead of their intervals.

    A MultiIndex (a group-by of the bins with other columns, or ``value_counts`` pairs)
    gets the labels at ``level``, in the labels' dtype (unit and time zone).
    """
    mapping = dict(zip(intervals, labels, strict=True))
    position = {interval: i for i, interval in enumerate(intervals)}

    def relabel(result: object) -> object:
        if not isinstance(result, pd.Series | pd.DataFrame):
            return result
        index = result.index
        if isinstance(index, pd.MultiIndex):
            values = index.levels[level]
            taken = [position[value] for value in values]
            named = labels if taken == list(range(len(labels))) else labels.take(taken)
            levels = [*index.levels[:level], named, *index.levels[level + 1 :]]
            # pandas-stubs do not take an Index as a level; pandas does (keeping its dtype)
            result.index = index.set_levels(levels, verify_integrity=False)  # type: ignore[arg-type]
        elif index.equals(intervals):
            result.index = labels  # every bin, in order: keeps the index's freq
        else:
            result.index = pd.Index([mapping[key] for key in index], name=labels.name)
        return result

    return relabel
