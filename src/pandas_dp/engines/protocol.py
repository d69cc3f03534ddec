"""The one protocol every engine answers, and the frames it reads.

What an engine is asked to compute (measures, groupings) is described as values in
:mod:`pandas_dp.measures.aggregates`; an engine returns one exact integer per measure and
group, never noise.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, TypeVar

import pandas as pd

from pandas_dp.measures.aggregates import Aggregate, Grouping, Measure
from pandas_dp.measures.bounding import Bounding

if TYPE_CHECKING:
    import dask.dataframe as dd

    from pandas_dp.engines.lookup import Lookup

#: What an engine reads: an in-memory frame or Series, or a Dask collection of either.
Frame: TypeAlias = "pd.DataFrame | pd.Series | dd.DataFrame | dd.Series"
#: A frame given back as the kind it came in (:meth:`Engine.with_attrs`).
FrameT = TypeVar("FrameT", pd.DataFrame, pd.Series, "dd.DataFrame", "dd.Series")
#: Whether a layer's attrs mark the session's own ``protect`` layer (lineage checks).
Origin: TypeAlias = Callable[[Mapping[str, Any]], bool]


@dataclass(frozen=True)
class Aggregates:
    """What an engine returns: the groups' keys and one exact array per measure."""

    keys: pd.Index | None
    values: list[Aggregate]


@dataclass(frozen=True)
class Aggregation:
    """One exact aggregation an engine answers: the measures, per group, after bounding."""

    measures: tuple[Measure, ...]
    grouping: Grouping | None = None
    bounding: Bounding | None = None


class Engine(Protocol):
    """Computes exact aggregates over one kind of frame (pandas, Dask, ...).

    Besides aggregating, an engine answers the few questions the API asks about a frame
    (its attrs, index, whether it is a Series) so that the API never tests frame types.
    """

    name: str
    #: Whether the whole frame lives in this process: only then can row-level privacy
    #: check the index for duplicated rows, and can per-row outputs be returned.
    in_memory: bool

    def attrs(self, data: object) -> Mapping[Hashable, object]:
        """The frame's ``attrs``, where the API keeps its session handle."""

    def with_attrs(self, data: FrameT, attrs: Mapping[Hashable, object]) -> FrameT:
        """A shallow copy of ``data`` carrying exactly ``attrs`` (derived frames keep them)."""

    def index(self, data: Frame) -> pd.Index:
        """The frame's index, or an empty index of the same kind when it is not in memory."""

    def is_series(self, data: object) -> bool:
        """Whether ``data`` is a Series (else a DataFrame)."""

    # pandas and Dask frames answer these three alike (Dask from its meta frame, computing
    # nothing), so engines inherit them by subclassing the protocol.
    def to_frame(self, series: Any, name: Hashable) -> Any:
        """The Series as a one-column frame named ``name``."""
        return series.to_frame(name=name)

    def columns(self, data: Any) -> pd.Index:
        """The column labels of ``data``."""
        columns: pd.Index = data.columns
        return columns

    def dtypes(self, data: Any) -> pd.Series:
        """The dtype of each column of ``data``."""
        dtypes: pd.Series = data.dtypes
        return dtypes

    # Lineage. In memory, rows are checked by their labels (the API's row guard and pinned
    # ids), so these answer "nothing to trace". A collection out of memory has no labels:
    # its engine traces the collection's expression graph (the caller's code, public) back
    # to the layer ``protect`` returned, whose name :meth:`origin_of` gives at protect.
    def origin_of(self, data: object) -> str:
        """The name of ``data``'s own layer, which later releases trace back to ("" in memory)."""
        return ""

    def duplicating_step(self, data: object, is_origin: Origin, origin: str) -> str | None:
        """The first step since ``origin`` that may repeat ``data``'s rows, or None."""
        return None

    def rewriting_step(
        self, data: object, unit: Hashable, is_origin: Origin, origin: str
    ) -> str | None:
        """The first step since ``origin`` that may rewrite ``data``'s ``unit`` column, or None."""
        return None

    def aligned_frame(self, series: object, unit: Hashable) -> Any:
        """The frame ``series`` was derived from elementwise, holding ``unit``; None if none.

        Only asked out of memory (in memory a Series carries its unit by its pinned ids).
        """
        return None

    def lookup_join(self, data: Any, lookup: Lookup) -> Any:
        """``data``'s rows joined to a public lookup table, row by row (``priv.dp.merge``).

        Each output row comes from one row of ``data`` and the public table
        (:func:`~pandas_dp.engines.lookup.join_rows`); the result derives from ``data``, so
        it keeps its attrs.
        """

    def aggregate(
        self,
        data: object,
        measures: tuple[Measure, ...],
        grouping: Grouping | None,
        bounding: Bounding | None = None,
    ) -> Aggregates:
        """Exact aggregates per group (one group if ungrouped), after contribution bounding.

        Every engine answers the same call; each computes it in :meth:`exact`.
        """
        return self.exact(data, Aggregation(measures, grouping, bounding))

    def exact(self, data: object, aggregation: Aggregation) -> Aggregates:
        """The aggregates of ``aggregation`` over ``data`` (the engine's own computation)."""
