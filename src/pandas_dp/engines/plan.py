"""What an engine is asked to compute: exact integer aggregates, described as values.

The API layer turns a query into a tuple of measures (and, for group-bys, a grouping over
public keys); an engine returns one exact integer per measure and group. Engines never add
noise and never see the accountant.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt
import pandas as pd


@dataclass(frozen=True)
class Rows:
    """Number of rows."""


@dataclass(frozen=True)
class NonNull:
    """Number of rows where ``column`` is not missing."""

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


Measure = Rows | NonNull | ClippedSum


@dataclass(frozen=True)
class Grouping:
    """Group rows by ``by`` and report exactly the public ``keys``, in their order.

    Rows whose key is not among ``keys`` (including missing keys) are dropped silently;
    keys with no rows get zeros.
    """

    by: tuple[Hashable, ...]
    keys: pd.Index


#: One exact integer per group: int64 when it fits, else an object array of Python ints.
Aggregate = npt.NDArray[np.int64] | npt.NDArray[np.object_]


class Engine(Protocol):
    """Computes exact aggregates over one kind of frame (pandas, Dask, ...)."""

    name: str

    def columns(self, data: object) -> pd.Index:
        """The column labels of ``data``."""

    def dtypes(self, data: object) -> pd.Series:
        """The dtype of each column of ``data``."""

    def aggregate(
        self, data: object, measures: tuple[Measure, ...], grouping: Grouping | None
    ) -> list[Aggregate]:
        """One array per measure, with one exact integer per group (one group if ungrouped)."""
