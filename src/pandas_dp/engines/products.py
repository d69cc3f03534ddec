"""Exact sums of per-row products (see :class:`~pandas_dp.engines.plan.ProductSums`).

Every value is rounded to an integer ``u`` with ``|u| <= 2**digits`` before anything is
multiplied, so each product is an integer of magnitude at most ``2**(2 digits)``. Products
are summed by a float64 matrix product (BLAS) over blocks of :data:`BLOCK` rows: every partial
sum is then an integer below ``2**53``, which float64 holds exactly, so each block's Gram
matrix is exact whatever order BLAS adds in. Blocks are added in int64 while that cannot wrap
(a number of blocks fixed by public parameters) and in Python integers beyond: no total
depends on row order or float rounding, and none can overflow.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable

import numpy as np
import numpy.typing as npt
import pandas as pd

from pandas_dp.engines.columns import F64, numeric_values
from pandas_dp.engines.plan import Aggregate, ProductSums

I64 = npt.NDArray[np.int64]

#: Rows per exact float64 block: ``BLOCK * 2**(2 digits) <= 2**53`` for ``digits <= 18``.
BLOCK = 1 << 16
#: Blocks whose exact sums an int64 total holds (each below ``2**53``): ``2**9 * 2**53``.
_INT64_BLOCKS = 1 << 9


def product_sums(
    frame: pd.DataFrame,
    measure: ProductSums,
    bins: I64 | None,
    groups: int,
    column: Callable[[Hashable], pd.Series],
) -> Aggregate:
    """The ``(groups, measure.size)`` exact sums; ``bins`` 0 (dropped rows) is left out."""
    if 2 * measure.digits + math.log2(BLOCK) > 53:
        raise ValueError("digits too fine for exact float64 blocks")  # public: a caller bug
    values = [numeric_values(column(name)) for name in measure.columns]
    if bins is None:
        return _sums(values, measure, None).reshape(1, -1)
    order = np.argsort(bins, kind="stable")
    ends = np.cumsum(np.bincount(bins, minlength=groups + 1))
    out = [_sums(values, measure, order[ends[g - 1] : ends[g]]) for g in range(1, groups + 1)]
    if any(row.dtype == object for row in out):
        return np.asarray(np.stack([row.astype(object) for row in out]), dtype=object)
    if not out:
        return np.zeros((0, measure.size), dtype=np.int64)
    return np.asarray(np.stack(out), dtype=np.int64)


def _sums(values: list[F64], measure: ProductSums, rows: I64 | None) -> Aggregate:
    """The sums over ``rows`` (all rows when None), block by block."""
    size = len(values[0]) if rows is None else len(rows)
    total: Aggregate = np.zeros(measure.size, dtype=np.int64)
    running = np.zeros(measure.size, dtype=np.int64)
    blocks = 0
    for start in range(0, size, BLOCK):
        taken = slice(start, min(start + BLOCK, size))
        chunk = [v[taken] if rows is None else v[rows[taken]] for v in values]
        running += _block(chunk, measure)
        blocks += 1
        if blocks == _INT64_BLOCKS:  # keep the int64 total far from wrapping
            total = np.asarray(total.astype(object) + running.astype(object), dtype=object)
            running[:] = 0
            blocks = 0
    if total.dtype == object:
        return np.asarray(total + running.astype(object), dtype=object)
    return running


def _block(values: list[F64], measure: ProductSums) -> I64:
    """Exact sums over one block of at most :data:`BLOCK` rows."""
    one = math.ldexp(1.0, measure.digits)
    present = [~np.isnan(v) for v in values]
    units = [_units(v, bounds, one) for v, bounds in zip(values, measure.bounds, strict=True)]
    rows = len(values[0]) if values else 0
    keep = np.ones(rows, dtype=np.float64)
    if measure.complete:
        for mask in present:
            keep *= mask
        units = [u * keep for u in units]
    columns = [keep * one, *units, *(present[j] * one for j in measure.present)]
    design = np.column_stack(columns) if rows else np.zeros((0, len(columns)))
    gram = design.T @ design
    sums = [gram[i, k] for i, k in measure.pairs]
    if measure.squares:
        squared = np.column_stack([u * u for u in units]) if rows else np.zeros((0, len(units)))
        shown = np.column_stack([present[j] for j in measure.present]).astype(np.float64)
        crossed = squared.T @ shown if rows else np.zeros((len(units), len(measure.present)))
        sums += [crossed[j, p] for j, p in measure.squares]
    return np.asarray(sums, dtype=np.float64).astype(np.int64)


def _units(values: F64, bounds: tuple[float, float], one: float) -> F64:
    """``rint(clip((x - c) / r, -1, 1) * 2**digits)`` as float64 (0 where ``x`` is missing)."""
    lower, upper = bounds
    centre, reach = (lower + upper) / 2, (upper - lower) / 2
    with np.errstate(all="ignore"):  # nothing data-dependent may surface as a warning
        scaled = (values - centre) * (one / reach)
        np.clip(scaled, -one, one, out=scaled)
        np.rint(scaled, out=scaled)
    scaled[np.isnan(scaled)] = 0.0
    return scaled
