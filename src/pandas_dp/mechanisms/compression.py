"""MST's compressed domains: the values rarely seen, by their noisy counts, merged into one.

McKenna, Miklau & Sheldon (2021), as their code does it: once every one-way marginal is
measured, each value whose noisy count is below three times that measurement's noise standard
deviation is merged with the column's other such values into one *rare* value, placed after
the kept values; a column whose every value clears the threshold keeps its domain. The tree
is chosen and its pairs measured on the compressed domains (fewer cells: less noise in all),
and each synthetic row's rare value becomes one of the values it merged, uniformly at random.

Everything here reads released noisy counts and public noise scales only: post-processing
that costs nothing, pure numpy, total.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pandas_dp.mechanisms.marginals import Clique

F64 = np.ndarray
#: A value is kept when its noisy count is at least this many noise standard deviations.
THRESHOLD = 3.0


@dataclass(frozen=True)
class Compressed:
    """One column's compressed domain: its kept values in order, then the rare one if any.

    ``kept`` and ``merged`` are positions in the column's own domain.
    """

    kept: tuple[int, ...]
    merged: tuple[int, ...]

    @property
    def size(self) -> int:
        """Values of the compressed domain."""
        return len(self.kept) + (1 if self.merged else 0)

    def table(self, table: F64, axis: int) -> F64:
        """``table`` with this column on ``axis`` compressed: merged values summed, last."""
        if not self.merged:
            return table
        kept = np.take(table, list(self.kept), axis=axis)
        rare = np.take(table, list(self.merged), axis=axis).sum(axis=axis, keepdims=True)
        return np.concatenate([kept, rare], axis=axis)

    def values(self, codes: np.ndarray, gen: np.random.Generator) -> np.ndarray:
        """The column's own values of compressed ``codes``: a rare code uniformly one merged."""
        lookup = np.asarray([*self.kept, -1], dtype=np.int64)
        out = lookup[np.minimum(codes, len(self.kept))]
        rare = np.flatnonzero(codes >= len(self.kept))
        if rare.size and self.merged:
            out[rare] = np.asarray(self.merged)[gen.integers(0, len(self.merged), rare.size)]
        return out


def compress(noisy: F64, deviation: float) -> Compressed:
    """The compressed domain of a column whose noisy one-way counts are ``noisy``."""
    counts = np.asarray(noisy, dtype=np.float64).reshape(-1)
    kept = counts >= THRESHOLD * deviation
    return Compressed(
        tuple(int(i) for i in np.flatnonzero(kept)), tuple(int(i) for i in np.flatnonzero(~kept))
    )


def compress_table(table: F64, clique: Clique, columns: Sequence[Compressed]) -> F64:
    """``table`` over ``clique`` on the compressed domains of ``columns`` (by attribute)."""
    out = np.asarray(table)
    for axis, attribute in enumerate(clique):
        out = columns[attribute].table(out, axis)
    return out
