"""Exact sums of per-row products (see :class:`~pandas_dp.measures.aggregates.ProductSums`).

Every value is rounded to an integer ``u`` with ``|u| <= 2**digits`` before anything is
multiplied, so each product is an integer of magnitude at most ``2**(2 digits)``. Rows are
written, :data:`CHUNK` at a time, into one preallocated column-major block matrix (the
units, a constant column, and 0/1 indicators of the columns that miss a value in those rows)
whose Gram matrix BLAS computes (``syrk``: one triangle); the sums of at most :data:`BLOCK`
rows are added in float64. Every partial sum is then an integer below ``2**53``, which float64
holds exactly, so each block's sums are exact whatever order BLAS adds in. The ``2**digits``
that the constant and the indicators stand for multiplies a block's sums afterwards (a power
of two: exact). Blocks are added in int64 while that cannot wrap (a number of blocks fixed by
public parameters) and in Python integers beyond: no total depends on row order or float
rounding, and none can overflow.

Weighted sums (survey weights) multiply each row by its weight's integer ``v <= 2**16``,
split as ``v = 2**8 h + l`` (``h, l <= 2**8``): the block matrix's weighted Gram matrices by
``h`` and by ``l`` (:data:`WEIGHTED_BLOCK` rows, each product at most ``2**(2 digits + 8)``)
are exact in float64 the same way, and ``2**8 H + L`` is added in Python integers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from pandas_dp.engines.columns import F64, numeric_values
from pandas_dp.measures.aggregates import Aggregate, ProductSums

I64 = npt.NDArray[np.int64]
IP = npt.NDArray[np.intp]

#: Rows per exact float64 block: ``BLOCK * 2**(2 digits) <= 2**53`` for ``digits <= 18``.
BLOCK = 1 << 16
#: Rows written and multiplied at a time (a divisor of :data:`BLOCK`): small enough for the
#: block matrix to stay in cache, large enough to amortise the per-pass calls.
CHUNK = 1 << 15
#: Blocks whose exact sums an int64 total holds (each below ``2**53``): ``2**9 * 2**53``.
_INT64_BLOCKS = 1 << 9
#: A weight's integer is split into two parts of at most ``2**WEIGHT_SPLIT``.
WEIGHT_SPLIT = 8
#: Rows per exact float64 block of weighted sums: ``2**13 * 2**(2 digits + 8) <= 2**53``.
WEIGHTED_BLOCK = 1 << 13


def product_sums(
    frame: pd.DataFrame,
    measure: ProductSums,
    bins: I64 | None,
    groups: int,
    column: Callable[[Hashable], pd.Series],
    weights: pd.Series | None = None,
) -> Aggregate:
    """The ``(groups, measure.size)`` exact sums; ``bins`` 0 (dropped rows) is left out.

    ``weights`` is the weight column of a weighted measure (read from the frame itself, not
    from the design ``column`` reads).
    """
    if 2 * measure.digits + math.log2(BLOCK) > 53:
        raise ValueError("digits too fine for exact float64 blocks")  # public: a caller bug
    values = [numeric_values(column(name)) for name in measure.columns]
    units = None
    if measure.weights is not None:
        if weights is None or not measure.complete or measure.squares:
            raise ValueError("weighted sums of products need complete rows and the weights")
        if measure.weight_units > 1 << (2 * WEIGHT_SPLIT):
            raise ValueError("weights too fine for exact float64 blocks")  # a caller bug
        units = (weight_units(weights, measure), ~np.isnan(numeric_values(weights)))
    if bins is None:
        size = len(values[0]) if values else 0
        return _sums(values, _Work.of(measure, size), None, units).reshape(1, -1)
    order = np.argsort(bins, kind="stable")
    ends = np.cumsum(np.bincount(bins, minlength=groups + 1))
    work = _Work.of(measure, int(np.diff(ends).max(initial=0)))
    out = [_sums(values, work, order[ends[g - 1] : ends[g]], units) for g in range(1, groups + 1)]
    if any(row.dtype == object for row in out):
        return np.asarray(np.stack([row.astype(object) for row in out]), dtype=object)
    if not out:
        return np.zeros((0, measure.size), dtype=np.int64)
    return np.asarray(np.stack(out), dtype=np.int64)


def weight_units(weights: pd.Series, measure: ProductSums) -> F64:
    """Each row's weight on its lattice: ``clip(rint(clip(w) * 2**-shift), 0, units)``.

    A missing weight gives 0 (the row counts nowhere); ±inf land on the weight bounds.
    Integers held in float64, as the block matrix.
    """
    with np.errstate(all="ignore"):  # nothing data-dependent may surface as a warning
        units = np.clip(numeric_values(weights), *measure.weight_bounds)
        units *= math.ldexp(1.0, -measure.weight_shift)
        np.rint(units, out=units)
        units[np.isnan(units)] = 0.0
        np.clip(units, 0.0, float(measure.weight_units), out=units)
        return units


@dataclass
class _Work:
    """The buffers every pass (and group) reuses, and where the measure's sums sit.

    ``design`` is ``(rows, d + 1 + q)``, column-major: the ``d`` units, the constant (with
    ``complete``: whether the row is kept), then 0/1 indicators of the present-columns that
    miss a value among the pass's rows, packed (one that misses none is the constant).
    ``first``/``second`` are the measure's pairs in its own numbering (0 the constant, 1..d
    the units, ``1 + d + p`` indicator ``p``) and ``scale`` what each pair's sum is multiplied
    by: ``2**digits`` for each factor that is the constant or an indicator.
    """

    measure: ProductSums
    design: F64
    squared: F64 | None
    missing: npt.NDArray[np.bool_]
    dropped: npt.NDArray[np.bool_]
    bits: I64
    first: IP
    second: IP
    scale: F64
    square_rows: IP
    square_cols: IP

    @classmethod
    def of(cls, measure: ProductSums, rows: int) -> _Work:
        """Buffers for passes of up to ``min(rows, CHUNK)`` rows (weighted: ``WEIGHTED_BLOCK``)."""
        d, q = len(measure.columns), len(measure.present)
        height = max(1, min(rows, CHUNK if measure.weights is None else WEIGHTED_BLOCK))
        design = np.empty((height, d + 1 + q), dtype=np.float64, order="F")
        design[:, d] = 1.0  # the constant (rewritten by every pass with ``complete``)
        squared = np.empty((height, d), order="F") if measure.squares else None
        one = math.ldexp(1.0, measure.digits)
        factor = np.array([one] + [1.0] * d + [one] * q)
        first = np.array([i for i, _ in measure.pairs], dtype=np.intp)
        second = np.array([k for _, k in measure.pairs], dtype=np.intp)
        return cls(
            measure, design, squared, np.empty(height, dtype=np.bool_),
            np.empty(height, dtype=np.bool_), np.empty(height, dtype=np.int64), first, second,
            factor[first] * factor[second],
            np.array([j for j, _ in measure.squares], dtype=np.intp),
            np.array([p for _, p in measure.squares], dtype=np.intp),
        )  # fmt: skip


def _sums(
    values: list[F64],
    work: _Work,
    rows: I64 | None,
    weighing: tuple[F64, npt.NDArray[np.bool_]] | None,
) -> Aggregate:
    """The sums over ``rows`` (all rows when None), block by block.

    ``weighing``: each row's weight on its lattice and whether it holds one (None:
    unweighted).
    """
    if weighing is not None:
        return _weighted_sums(values, work, rows, weighing)
    measure = work.measure
    size = (len(values[0]) if values else 0) if rows is None else len(rows)
    d = len(measure.columns)
    total: Aggregate = np.zeros(measure.size, dtype=np.int64)
    running = np.zeros(measure.size, dtype=np.int64)
    pairs = np.zeros(len(measure.pairs))  # a block's sums, exact in float64
    squares = np.zeros(len(measure.squares))
    pending = blocks = 0
    for start in range(0, size, CHUNK):
        taken = slice(start, min(start + CHUNK, size))
        block, slot = _fill(values, work, taken, rows)
        gram = block.T @ block  # syrk: one triangle, mirrored
        pairs += gram[slot[work.first], slot[work.second]]
        if work.squared is not None:
            squared = work.squared[: len(block)]
            np.multiply(block[:, :d], block[:, :d], out=squared)
            crossed = squared.T @ block[:, d:]  # by the constant, then by each indicator
            squares += crossed[work.square_rows, slot[1 + d + work.square_cols] - d]
        pending += len(block)
        if pending + CHUNK > BLOCK or taken.stop == size:  # the block is done: still exact
            block_sums = np.concatenate([pairs * work.scale, squares])
            running += np.asarray(block_sums.astype(np.int64), dtype=np.int64)
            pairs[:], squares[:], pending = 0.0, 0.0, 0
            blocks += 1
        if blocks == _INT64_BLOCKS:  # keep the int64 total far from wrapping
            total = np.asarray(total.astype(object) + running.astype(object), dtype=object)
            running[:] = 0
            blocks = 0
    if total.dtype == object:
        return np.asarray(total + running.astype(object), dtype=object)
    return running


def _weighted_sums(
    values: list[F64], work: _Work, rows: I64 | None, weighing: tuple[F64, npt.NDArray[np.bool_]]
) -> Aggregate:
    """The weighted sums over ``rows`` (all rows when None), as Python integers.

    Each pass of :data:`WEIGHTED_BLOCK` rows is an exact block: ``Bᵀ diag(h) B`` and ``Bᵀ
    diag(l) B`` for the weights' parts ``v = 2**8 h + l``, each sum below ``2**53``, added
    in int64 for :data:`_INT64_BLOCKS` passes and folded into Python integers. With
    ``rows``, the complete rows holding a weight are counted too (the last sum).
    """
    measure = work.measure
    units, present = weighing
    size = (len(values[0]) if values else 0) if rows is None else len(rows)
    d = len(measure.columns)
    split = 1 << WEIGHT_SPLIT
    total = np.zeros(len(measure.pairs), dtype=object)
    high_total = np.zeros(len(measure.pairs), dtype=np.int64)
    low_total = np.zeros(len(measure.pairs), dtype=np.int64)
    counted = passes = 0
    for start in range(0, size, WEIGHTED_BLOCK):
        taken = slice(start, min(start + WEIGHTED_BLOCK, size))
        block, slot = _fill(values, work, taken, rows)
        weight = units[taken] if rows is None else units[rows[taken]]
        high = np.floor(weight / split)
        low = weight - high * split
        first, second = slot[work.first], slot[work.second]
        for part, running in ((high, high_total), (low, low_total)):
            gram = block.T @ (block * part[:, None])
            running += np.asarray((gram[first, second] * work.scale).astype(np.int64))
        if measure.rows:  # complete rows (a constant 1) holding a weight
            held = present[taken] if rows is None else present[rows[taken]]
            counted += int(np.count_nonzero(block[:, d].astype(np.bool_) & held))
        passes += 1
        if passes == _INT64_BLOCKS or taken.stop == size:
            total = total + high_total.astype(object) * split + low_total.astype(object)
            high_total[:], low_total[:], passes = 0, 0, 0
    if measure.rows:
        unit = measure.weight_units << (2 * measure.digits)
        total = np.concatenate([total, np.array([counted * unit], dtype=object)])
    return np.asarray(total, dtype=object)


def _fill(values: list[F64], work: _Work, taken: slice, rows: I64 | None) -> tuple[F64, IP]:
    """Write one pass's rows into the block matrix; return it and each column's place.

    A unit is ``rint(clip((x - c) / r, -1, 1) * 2**digits)`` (0 where that is NaN), an
    indicator 1 where the column holds a value; with ``complete`` a row missing any column
    has a 0 constant and 0 units. ``slot`` maps the measure's numbering to the block's.
    Zeros are written by masking the bits of the rows (no branch per value): a unit is NaN
    exactly where its value is when the bounds' centre and scale are finite (public).
    """
    measure = work.measure
    count = taken.stop - taken.start
    flags, dropped, bits = work.missing[:count], work.dropped[:count], work.bits[:count]
    d = len(values)
    design = work.design[:count]
    present = {j: p for p, j in enumerate(measure.present)}
    slot = np.full(1 + d + len(present), d, dtype=np.intp)  # indicators default: constant
    slot[1 : 1 + d] = np.arange(d)
    width = d + 1
    one = math.ldexp(1.0, measure.digits)
    any_dropped = False
    if measure.complete:
        dropped.fill(False)
    with np.errstate(all="ignore"):  # nothing data-dependent may surface as a warning
        for j, (v, (lower, upper)) in enumerate(zip(values, measure.bounds, strict=True)):
            unit = design[:, j]
            source = v[taken] if rows is None else np.take(v, rows[taken], out=unit, mode="clip")
            centre, scale = (lower + upper) / 2, one / ((upper - lower) / 2)
            plain = math.isfinite(centre) and math.isfinite(scale) and scale > 0
            missing = False
            if j in present or measure.complete:
                np.isnan(source, out=flags)
                missing = bool(flags.any())
                if missing and measure.complete:
                    np.logical_or(dropped, flags, out=dropped)
                    any_dropped = True
                elif missing:  # an indicator of its own
                    np.logical_not(flags, out=design[:, width])
                    slot[1 + d + present[j]] = width
                    width += 1
            np.subtract(source, centre, out=unit)
            np.multiply(unit, scale, out=unit)
            np.clip(unit, -one, one, out=unit)
            np.rint(unit, out=unit)
            if not (plain and (j in present or measure.complete)):  # NaN wherever it may be
                np.isnan(unit, out=flags)
                if flags.any():
                    np.copyto(unit, 0.0, where=flags)
            elif missing and not measure.complete:  # NaN exactly where flags
                np.add(flags, -1, out=bits, dtype=np.int64)  # 0 where missing, else all ones
                np.bitwise_and(unit.view(np.int64), bits, out=unit.view(np.int64))
    constant = design[:, d]
    if any_dropped:  # NaN units lie in dropped rows: zero the rows' bits
        np.add(dropped, -1, out=bits, dtype=np.int64)
        units = design[:, :d].view(np.int64)
        np.bitwise_and(units, bits[:, None], out=units)
        np.logical_not(dropped, out=constant)
    elif measure.complete:
        constant.fill(1.0)
    return design[:, :width], slot
