"""Integer columns without the float and hash detours: sums and key codes.

**Sums.** Integer columns are summed without the float detour, rounding exactly like the
lattice path.
A :class:`~pandas_dp.measures.aggregates.ClippedSum` turns each value into
``rint(clip(float(x), L·g, U·g) / g)`` lattice units (``g = 2**exponent``, ``L`` and ``U``
the bounds in units). For an integer column, a lattice no coarser than 1 (``exponent <= 0``)
and bounds that are integers of magnitude at most ``2**53`` in the column's units, that is
exactly ``clip(x, a, b) * 2**-exponent`` with ``a = L·g`` and ``b = U·g``:

- every integer in ``[a, b]`` is a float64 exactly, and scaling by a power of two is exact,
  so the float path's ``rint`` has nothing to round;
- an integer outside ``[a, b]`` becomes a float on the same side of the (exactly
  representable) bound, since rounding to float64 is monotone, so both paths clip it to
  the same bound.

So the sum is ``(Σ clip(x, a, b)) * 2**-exponent``: one clip and one integer sum over the
column, summed in int64 slices that cannot wrap and scaled as a Python integer. Which path
runs depends on the dtype and the measure only (public), never on the values.

**Key codes.** An integer column grouped by dense integer keys is coded by a lookup table
instead of a hash pass (:func:`integer_codes`), with the same codes.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import numpy.typing as npt
import pandas as pd

I64 = npt.NDArray[np.int64]


class LatticeSum(Protocol):
    """What :func:`integer_units` reads of a :class:`~pandas_dp.measures.aggregates.ClippedSum`.

    A protocol rather than the class: the plan imports bounding, which imports this module.
    """

    @property
    def exponent(self) -> int:
        """A lattice unit is ``2**exponent``."""

    @property
    def lower(self) -> int:
        """The lowest unit a value is clipped to."""

    @property
    def upper(self) -> int:
        """The highest unit a value is clipped to."""

    @property
    def offset(self) -> int:
        """The units subtracted from each value (centred sums)."""


#: Largest bound (in the column's units) at which every integer up to it is a float64.
_FLOAT_EXACT = 1 << 53


def integer_units(column: pd.Series, measure: LatticeSum) -> tuple[I64, int, int] | None:
    """``(clip(x, a, b), shift, bound)`` for an integer column, or None for the float path.

    The lattice units of a row are ``clip(x, a, b) << shift``; ``bound`` is
    ``max(|a|, |b|)``, the largest magnitude of one clipped row in the column's units.
    None when the column is not a numpy integer column that int64 holds, or when the
    measure is centred (``offset``: the engines derive those from the plain sum), coarser
    than 1 or bounded off the integers or beyond ``2**53``.
    """
    dtype = column.dtype
    if not isinstance(dtype, np.dtype) or dtype.kind not in "iu":
        return None
    if dtype.kind == "u" and dtype.itemsize >= 8:  # uint64 does not fit int64
        return None
    if measure.offset or measure.exponent > 0:
        return None
    shift = -measure.exponent
    step = 1 << shift
    if measure.lower % step or measure.upper % step:
        return None
    lower, upper = measure.lower >> shift, measure.upper >> shift
    bound = max(abs(lower), abs(upper))
    if bound > _FLOAT_EXACT:
        return None
    values = np.asarray(column.to_numpy(), dtype=np.int64)
    return np.clip(values, lower, upper), shift, bound


#: A lookup table may span at most this many slots per key (plus a constant): dense keys.
_TABLE_SLOTS_PER_KEY = 4
_TABLE_SLACK = 4096


def integer_codes(column: pd.Series, keys: pd.Index) -> I64 | None:
    """Codes of an integer column against dense integer keys, by table lookup (no hashing).

    The table maps ``value - min(keys)`` to the key's position (-1 for gaps); values outside
    the keys' range get -1. The same codes as the hash pass, at a fraction of its cost, for
    the common case of integer ids or codes as keys. None (use the hash pass) unless both
    are integer and the keys span at most a few slots per key: decided from the dtypes and
    the public keys alone.
    """
    dtype, key_dtype = column.dtype, keys.dtype
    if not all(
        isinstance(d, np.dtype) and (d.kind == "i" or (d.kind == "u" and d.itemsize < 8))
        for d in (dtype, key_dtype)
    ):
        return None
    key_values = np.asarray(keys, dtype=np.int64)
    if key_values.size == 0:
        return None
    low, high = int(key_values.min()), int(key_values.max())
    span = high - low
    if span >= _TABLE_SLOTS_PER_KEY * key_values.size + _TABLE_SLACK:
        return None
    # Slot 0 and slot span + 2 read -1 (below and above the range); key k sits at k - low + 1.
    table = np.full(span + 3, -1, dtype=np.int64)
    table[key_values - low + 1] = np.arange(key_values.size)
    values = np.asarray(column.to_numpy(), dtype=np.int64)
    # v - low + 1 modulo 2**64 (one pass, no mask): exactly 1 .. span + 1 for the values in
    # [low, high]. Every other int64 lands on 0 or beyond span + 1: v > high gives up to
    # 2**64, which wraps to 0; v < low gives 0 or wraps to at least 2**63 - low + 1, beyond
    # high - low + 1 as high < 2**63. Clamping to span + 2 then reads -1. Total: no value
    # raises or warns (unsigned arithmetic wraps silently).
    slots = values.view(np.uint64) - np.uint64((low - 1) % (1 << 64))
    np.minimum(slots, np.uint64(span + 2), out=slots)
    return np.asarray(table[slots.view(np.int64)], dtype=np.int64)


#: Unit ids are coded by a table when their range spans at most this many slots per row.
_ID_SLOTS_PER_ROW = 8
#: Within this many slots per row, an id's offset from the smallest is its code as it is.
_OFFSET_SLOTS_PER_ROW = 2


def unit_codes(ids: pd.Series) -> I64:
    """Codes of a column of unit ids, one per unit, below ``2 * len(ids) + 4096``; -1 missing.

    Integer ids within a range of a few slots per row (after a shuffle by unit, in a
    partition of a collection indexed by unit, or the pinned unit numbers of a release) are
    coded without hashing: within two slots per row, a row's code is its id's offset from
    the smallest id (codes may skip numbers); within eight, ids present are marked and
    numbered in increasing order. Both differ from the hash pass's codes only in their
    labelling (increasing id rather than first appearance), which the caps never read:
    which rows a unit keeps depends on the rows' priorities only. Other ids are
    factorised. Decided from the dtype and the range, never from a value's meaning.

    A nullable integer column (the pinned unit numbers a release carries, missing for rows
    of no unit) takes the table too: its missing rows get -1, as the hash pass gives them.
    """
    dtype = ids.dtype
    missing = None
    if isinstance(dtype, pd.Int64Dtype | pd.Int32Dtype | pd.Int16Dtype | pd.Int8Dtype):
        missing = np.asarray(ids.isna().to_numpy(), dtype=np.bool_)
        first = int(np.argmin(missing)) if missing.size else 0  # the first present id, if any
        filler = 0 if missing[first : first + 1].all() else int(ids.iloc[first])
        values = ids.to_numpy(dtype=np.int64, na_value=filler)
        dtype = values.dtype
    else:
        values = ids.to_numpy()
    table_ok = isinstance(dtype, np.dtype) and dtype.kind in "iu" and dtype.itemsize < 8
    table_ok = table_ok or (isinstance(dtype, np.dtype) and dtype.kind == "i")
    if table_ok and values.size:
        values = np.asarray(values, dtype=np.int64)
        low, high = int(values.min()), int(values.max())
        if high - low < _ID_SLOTS_PER_ROW * values.size + _TABLE_SLACK:
            offsets = values - low
            if high - low < _OFFSET_SLOTS_PER_ROW * values.size + _TABLE_SLACK:
                if missing is not None:
                    offsets[missing] = -1
                return offsets
            present = np.zeros(high - low + 1, dtype=np.bool_)
            present[offsets] = True
            dense = np.cumsum(present, dtype=np.int64) - 1
            codes = np.asarray(dense[offsets], dtype=np.int64)
            if missing is not None:
                codes[missing] = -1
            return codes
    codes, _ = pd.factorize(ids, use_na_sentinel=True)
    return np.asarray(codes, dtype=np.int64)
