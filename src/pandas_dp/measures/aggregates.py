"""What an engine is asked to compute: exact integer aggregates, described as values.

The API layer turns a query into a tuple of measures (and, for group-bys, a grouping over
public keys); an engine returns one exact integer per measure and group. Engines never add
noise and never see the accountant.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from pandas_dp.measures.axes import Axis as Axis
from pandas_dp.measures.axes import Binning as Binning
from pandas_dp.measures.axes import JointCounts as JointCounts
from pandas_dp.measures.axes import ManyTables as ManyTables


@dataclass(frozen=True)
class Rows:
    """Number of rows."""


@dataclass(frozen=True)
class NonNull:
    """Number of rows where ``column`` is not missing."""

    column: Hashable


@dataclass(frozen=True)
class Distinct:
    """Number of distinct non-missing values of ``column`` (per group).

    Values are compared by their canonical form (:mod:`pandas_dp.engines.canonical`): ``1``,
    ``1.0`` and ``True`` are one value, ``-0.0`` is ``0.0``; values that cannot be processed
    (unhashable ones, say) count like missing values. One row adds at most one distinct value
    to one group.
    """

    column: Hashable


@dataclass(frozen=True)
class ClippedSum:
    """Exact sum of a column's values rounded onto a power-of-two lattice.

    Each value ``x`` contributes ``rint(clip(x * 2**-exponent, lower, upper)) - offset``
    (an integer). Missing values contribute 0, or ``fill`` (a public value in the column's
    units, clipped like any other) when it is given. Callers guarantee that a row contributes
    at most ``2**37`` units in magnitude, which the engines' exact summation relies on.
    """

    column: Hashable
    exponent: int
    lower: int
    upper: int
    offset: int = 0
    fill: float | None = None


@dataclass(frozen=True)
class ClippedSquares:
    """Exact sum of squared deviations from a public centre, each rounded and capped.

    Each value ``x`` contributes ``min(rint((clip(x, lower, upper) - centre)**2 *
    2**-exponent), units) - offset`` (an integer in ``[-offset, units - offset]``): a
    deterministic function of the row alone with a bounded range, whatever float rounding
    does. Missing values contribute 0, or the square of ``fill`` when it is given.
    """

    column: Hashable
    exponent: int
    centre: float
    lower: float
    upper: float
    units: int
    offset: int = 0
    fill: float | None = None


@dataclass(frozen=True)
class CellCounts:
    """How many values fall in each of ``cells`` equal cells of ``[lower, upper]``.

    A value ``x`` (clipped to the bounds) is in cell ``floor((x - lower) / width)``, capped
    at ``cells - 1``; missing values are not counted. The result has one row per group and
    one column per cell: a histogram on a public grid, from which ranks are read.
    """

    column: Hashable
    lower: float
    upper: float
    cells: int


@dataclass(frozen=True)
class EdgeRanks:
    """How many values lie below each edge of a grid on ``[lower, upper]``, and at or below it.

    The edges are ``lower + k (upper - lower) / cells`` in float64, the last exactly
    ``upper`` (the values a quantile releases); values are clipped to the bounds and
    compared with the edges exactly, missing values are not counted. The result has one row
    per group and ``2 (cells + 1)`` columns: ``#{x < c_k}`` for ``k = 0..cells``, then
    ``#{x <= c_k}`` (exact integers, each moved by at most one per row added or removed).
    With ``rounding`` ``"number"`` or ``"time"`` the candidates are the edges and the round
    values within the bounds (:func:`pandas_dp.measures.grids.quantile_candidates`): the
    columns then count those, in the same layout.
    """

    column: Hashable
    lower: float
    upper: float
    cells: int
    rounding: Literal["grid", "number", "time", "magnitude"] = "grid"


@dataclass(frozen=True)
class WeightedSum:
    """Exact sum of clipped row weights times a per-row factor, rounded onto a lattice.

    Each row contributes ``clip(rint(clip(w, *weight_bounds) * f * 2**-exponent), lower,
    upper)`` (an integer): a function of the row alone whose magnitude is at most
    ``max(|lower|, |upper|)`` units whatever float rounding does. The factor ``f`` is 1
    (``column`` None: the weighted row count), 1 where ``column`` is present and 0 where it
    is missing (``value_bounds`` None: the weighted count of present values), or
    ``clip(x, *value_bounds) - centre`` (a weighted, possibly centred, sum; a missing ``x``
    gives 0, or ``fill - centre`` when a public ``fill`` is given). A missing weight makes
    the row contribute 0.
    """

    weights: Hashable
    weight_bounds: tuple[float, float]
    exponent: int
    lower: int
    upper: int
    column: Hashable | None = None
    value_bounds: tuple[float, float] | None = None
    centre: float = 0.0
    fill: float | None = None


@dataclass(frozen=True)
class ProductSums:
    """Exact sums of products of two bounded values per row: the moments of several columns.

    Each value ``x`` of ``columns[j]`` becomes the integer ``u_j = rint(clip((x - c_j) / r_j,
    -1, 1) * 2**digits)``, ``c_j`` and ``r_j`` the midpoint and half-width of its public
    bounds (0 when missing), and the row the vector ``a = (2**digits, u_1, ..., u_n,
    2**digits * present_p ...)``: a constant, the values, and for each column of ``present``
    whether it holds a value. With ``complete``, a row missing any of the columns is all
    zeros (listwise deletion). The result has one row per group and one column per entry:
    ``Σ a_i a_k`` for ``(i, k)`` in ``pairs``, then ``Σ u_j² · present_p`` for ``(j, p)`` in
    ``squares`` (``p`` an index into ``present``). Every term is an integer of magnitude at
    most ``2**(2 * digits)``, whatever the values (NaN, ±inf, 1e308).

    With ``weights`` (survey weights; only with ``complete`` and no ``squares``), each row's
    products are multiplied by the integer ``v = clip(rint(clip(w, *weight_bounds) *
    2**-weight_shift), 0, weight_units)`` (0 for a missing weight: the row counts nowhere),
    so every term is at most ``weight_units * 2**(2 * digits)``; with ``rows``, one more
    sum follows: the rows that are complete and hold a weight, each counted as
    ``weight_units * 2**(2 * digits)`` (the weighted sums' largest term).
    """

    columns: tuple[Hashable, ...]
    bounds: tuple[tuple[float, float], ...]
    digits: int
    present: tuple[int, ...] = ()
    complete: bool = False
    pairs: tuple[tuple[int, int], ...] = ()
    squares: tuple[tuple[int, int], ...] = ()
    weights: Hashable | None = None
    weight_bounds: tuple[float, float] = (0.0, 1.0)
    weight_shift: int = 0
    weight_units: int = 1
    rows: bool = False
    #: A public, row-wise function the engine applies to the frame first (a model's design
    #: matrix from a formula): ``columns`` then name its output's columns, ``reads`` the
    #: frame's columns it needs. It must never raise.
    design: Callable[[pd.DataFrame], pd.DataFrame] | None = None
    reads: tuple[Hashable, ...] = ()

    @property
    def size(self) -> int:
        """The number of sums per group."""
        return len(self.pairs) + len(self.squares) + int(self.rows)


Measure = (
    Rows
    | NonNull
    | Distinct
    | ClippedSum
    | ClippedSquares
    | CellCounts
    | EdgeRanks
    | WeightedSum
    | JointCounts
    | ManyTables
    | ProductSums
)


@dataclass(frozen=True)
class OtherCells:
    """Cells for the rows outside the public keys, which a share of all rows counts.

    ``normalize=True`` as pandas means it divides by every row, not only by the rows of the
    listed keys. The grouping's ``by`` is the row columns then the column columns (the
    first ``len(rows.names)`` are the rows'; no row columns when ``rows`` is None). Its
    keys (positions only: the query labels them) are the product of ``rows`` and
    ``columns`` in C order, then every row key with the "other" column (``columns_other``),
    then the "other" row with every column key (``rows_other``), then other × other (both).
    A row's value on an axis is "other" when none of that axis' columns is missing and it
    matches no key (unprocessable values included); a row missing a key column is dropped,
    as pandas drops it. Each row is in one cell at most: sensitivity 1 for the vector.
    """

    rows: pd.Index | None
    columns: pd.Index
    rows_other: bool = False
    columns_other: bool = True

    @property
    def split(self) -> int:
        """How many of the grouping's columns are the rows'."""
        return 0 if self.rows is None else self.rows.nlevels

    @property
    def size(self) -> int:
        """The number of cells, the other ones included."""
        r, c = 1 if self.rows is None else len(self.rows), len(self.columns)
        ro, co = int(self.rows_other), int(self.columns_other)
        return (r + ro) * (c + co)


@dataclass(frozen=True)
class Grouping:
    """Group rows by ``by`` and report exactly the public ``keys``, in their order.

    Rows whose key is not among ``keys`` (including missing keys) are dropped silently;
    keys with no rows get zeros. With ``keys=None`` the engine reports the keys it observed
    (private: only a DP selection step may release any of them). With ``binning`` the first
    ``by`` column is cut into the bins, whose intervals are the keys; with more columns (a
    ``pd.Grouper`` beside ordinary ones), the keys are every bin (outermost, in order) with
    every public key of the other columns, in C order.
    """

    by: tuple[Hashable, ...]
    keys: pd.Index | None
    binning: Binning | None = None
    #: Rows whose (one) key is missing form one more group, after the keys (whose index
    #: then ends with NaN): ``value_counts(dropna=False)``.
    missing: bool = False
    #: Cells for the rows outside the keys (:class:`OtherCells`); ``keys`` then number
    #: every cell, the other ones included, before any missing-key group.
    other: OtherCells | None = None


#: One exact integer per group: int64 when it fits, else an object array of Python ints.
Aggregate = npt.NDArray[np.int64] | npt.NDArray[np.object_]
