"""Contingency tables an engine counts: their axes (public keys or bins) and the tables.

Every size here is public: the keys and bin edges are arguments or a schema, never read
off the data (:mod:`pandas_dp.measures.aggregates` names the other measures).
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass


@dataclass(frozen=True)
class Binning:
    """Histogram bins over one numeric column, with public edges.

    ``right=True`` makes bins ``(e0, e1], (e1, e2], ...`` like :func:`pandas.cut`;
    ``right=False`` makes them ``[e0, e1), ...``. ``include_lowest`` closes the outer end of
    the first bin; ``include_highest`` that of the last one (``numpy.histogram``'s rule).
    With ``clip``, values outside the edges fall into the first or last bin instead of being
    dropped. Missing values are always dropped.
    """

    edges: tuple[float, ...]
    right: bool = True
    include_lowest: bool = False
    clip: bool = False
    include_highest: bool = False


@dataclass(frozen=True)
class Axis:
    """One column of a contingency table: its public ``keys``, or its public ``binning``.

    A row's value is matched to the keys by value (or cut into the bins); a value that
    matches none, or is missing, puts the row outside the table.
    """

    column: Hashable
    keys: tuple[Hashable, ...]
    binning: Binning | None = None

    @property
    def size(self) -> int:
        """The number of keys (or bins)."""
        return len(self.keys) if self.binning is None else len(self.binning.edges) - 1


@dataclass(frozen=True)
class JointCounts:
    """Rows in each cell of the cross product of ``axes`` (a contingency table).

    The result has one row per group and one column per cell, cells in C order (the last
    axis varies fastest); rows outside any axis, or outside any of the ``within`` axes, are
    not counted (so that several tables count the same rows). Its size is the product of
    the axes' sizes, which the caller keeps public and bounded.
    """

    axes: tuple[Axis, ...]
    within: tuple[Axis, ...] = ()

    @property
    def cells(self) -> int:
        """The number of cells."""
        return math.prod(axis.size for axis in self.axes)


@dataclass(frozen=True)
class ManyTables:
    """Several contingency tables counted in one pass, their cells side by side.

    One row per group; the columns are the cells of ``tables[0]``, then of ``tables[1]``, ...
    """

    tables: tuple[JointCounts, ...]
