"""Which group each row belongs to: codes against public keys, or canonical observed keys.

Everything here must be *total* and *row-local*: it runs after the budget check, so it may
not raise, warn or behave differently because of what another row holds.

- Rows are matched to public keys by value. A value the engine cannot process (unhashable,
  or whose comparison raises) matches no key: it is dropped like a value outside the keys.
- Keys observed in the data (private; only a DP selection step may release some of them) are
  built from canonical values (:mod:`pandas_dp.engines.canonical`), a function of each
  row's value alone, so the released key never carries the representation one row happened
  to use (``pd.factorize`` keeps the first one it sees).
- Codes of several columns are combined by re-numbering densely after each column, never by
  multiplying cardinalities, so nothing can overflow however many columns or values.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar, cast

import numpy as np
import numpy.typing as npt
import pandas as pd

from pandas_dp.engines.canonical import canonical_column, canonical_value, is_missing
from pandas_dp.engines.integers import integer_codes

I64 = npt.NDArray[np.int64]
Codes = TypeVar("Codes", I64, npt.NDArray[np.bool_])


def plain_index(values: pd.Index | pd.Categorical | np.ndarray, name: Hashable) -> pd.Index:
    """An Index of ``values`` that carries no Categorical dtype (whose categories are data)."""
    if isinstance(values, pd.Categorical) or isinstance(
        getattr(values, "dtype", None), pd.CategoricalDtype
    ):
        values = np.asarray(values)
    return pd.Index(values, name=name, tupleize_cols=False)


def _total(fast: Callable[[], Codes], slow: Callable[[], Codes]) -> Codes:
    """The fast, vectorised path; where it raises, the row-by-row path with the same result."""
    try:
        return fast()
    except Exception:  # unhashable or incomparable values: handled row by row
        return slow()


def level_codes(column: pd.Series, keys: pd.Index) -> I64:
    """Position of each row's value among the public ``keys`` (one level), or -1.

    Integer columns against dense integer keys read a lookup table
    (:func:`~pandas_dp.engines.integers.integer_codes`). Otherwise factorises first (one
    hash pass). A column holding values that cannot be hashed or compared falls back to a
    lookup row by row in which such values match nothing: the same codes the hash pass
    gives every other row.
    """
    table = integer_codes(column, keys)
    if table is not None:
        return table

    def fast() -> I64:
        codes, found = _hash_pass(column, keys)
        return np.asarray(np.append(found, -1)[codes], dtype=np.int64)  # -1: missing

    def slow() -> I64:
        positions = {key: i for i, key in enumerate(keys)}
        return np.fromiter(
            (_lookup(positions, value) for value in column.to_numpy(dtype=object)),
            dtype=np.int64,
            count=len(column),
        )

    return _total(fast, slow)


def _hash_pass(column: pd.Series, keys: pd.Index) -> tuple[I64, I64]:
    """Each row's distinct-value code (-1: missing), and each distinct value's key (or -1).

    May raise on values that cannot be hashed or compared (the callers fall back).
    """
    codes, uniques = pd.factorize(column, use_na_sentinel=True)
    found = plain_index(keys, None).get_indexer(plain_index(uniques, None))
    return np.asarray(codes, dtype=np.int64), np.asarray(found, dtype=np.int64)


def level_counts(column: pd.Series, keys: pd.Index) -> I64 | None:
    """Rows per public key (one level), without a code per row: a release of counts only.

    The hash pass of :func:`level_codes`, counted per distinct value and then added per
    key: the same counts as coding every row and counting the codes, without writing and
    reading a code per row. None where :func:`level_codes` would not hash (integer columns,
    which may read a lookup table, and values that cannot be hashed or compared): count its
    codes instead.
    """
    dtype = column.dtype
    if isinstance(dtype, np.dtype) and dtype.kind in "iub":
        return None
    try:
        codes, found = _hash_pass(column, keys)
    except Exception:  # as in level_codes: the row-by-row path decides
        return None
    per_value = np.bincount(codes + 1, minlength=len(found) + 1)[1:]  # code -1: missing
    counts = np.zeros(len(keys), dtype=np.int64)
    matched = found >= 0
    np.add.at(counts, found[matched], per_value[matched])  # equal values may share a key
    return counts


def _lookup(positions: dict[Hashable, int], value: object) -> int:
    try:
        if is_missing(value) or not isinstance(value, Hashable):
            return -1
        return positions.get(value, -1)
    except Exception:  # unhashable, or a comparison that raises: no key matches
        return -1


def combine(row_codes: list[I64], key_codes: list[I64]) -> I64:
    """Each row's position among the keys, from per-level codes (-1: no match).

    ``key_codes[l][j]`` is key ``j``'s code at level ``l`` and ``row_codes[l]`` the rows'
    codes against the same level values. After each level both are re-numbered densely
    among the key prefixes seen so far, so no number exceeds the number of keys.
    """
    rows, keys = row_codes[0].copy(), key_codes[0].copy()
    for row_level, key_level in zip(row_codes[1:], key_codes[1:], strict=True):
        width = int(max(key_level.max(initial=-1), row_level.max(initial=-1))) + 1
        key_pairs = keys * width + key_level
        prefixes = np.unique(key_pairs)
        keys = np.searchsorted(prefixes, key_pairs)
        valid = (rows >= 0) & (row_level >= 0) & (row_level < width)
        row_pairs = np.where(valid, rows * width + row_level, -1)
        found = np.searchsorted(prefixes, row_pairs)
        found = np.minimum(found, len(prefixes) - 1)
        rows = np.where(valid & (prefixes[found] == row_pairs), found, -1)
    position = np.full(int(keys.max(initial=-1)) + 1, -1, dtype=np.int64)
    position[keys] = np.arange(len(keys))
    return np.asarray(np.where(rows >= 0, position[np.maximum(rows, 0)], -1), dtype=np.int64)


def public_codes(frame: pd.DataFrame, by: tuple[Hashable, ...], keys: pd.Index) -> I64:
    """Position of each row's key among the public keys, or -1 (dropped)."""
    if len(by) == 1:
        return level_codes(frame[by[0]], keys)
    assert isinstance(keys, pd.MultiIndex)
    row_codes = [level_codes(frame[column], keys.levels[i]) for i, column in enumerate(by)]
    key_codes = [np.asarray(keys.codes[i], dtype=np.int64) for i in range(len(by))]
    return combine(row_codes, key_codes)


def observed_codes(frame: pd.DataFrame, by: tuple[Hashable, ...]) -> tuple[pd.Index, I64]:
    """The canonical key combinations present in the data (private!) and each row's position.

    Keys come from canonical values (:mod:`pandas_dp.engines.canonical`), never decoded
    from arithmetic on codes; every row of a group holds the same canonical values, so any
    of its rows gives the key. Keys are ordered by their codes (first appearance of each
    level's value, then level by level), with hash passes and counting only: no sort of the
    rows.
    """
    per_level = [_observed_level(frame[column]) for column in by]
    valid = np.logical_and.reduce([codes >= 0 for codes, _ in per_level])
    group = np.where(valid, per_level[0][0], -1)
    for codes, _ in per_level[1:]:
        pairs = np.where(valid, group * (int(codes.max(initial=-1)) + 1) + codes, -1)
        group = _dense(pairs, valid)
    slots = int(group.max(initial=-1)) + 1
    rows = np.flatnonzero(valid)
    present = np.flatnonzero(np.bincount(group[rows], minlength=slots))
    remap = np.full(slots + 1, -1, dtype=np.int64)  # slot -1 (an invalid row) reads -1
    remap[present] = np.arange(present.size)
    some_row = np.zeros(slots, dtype=np.int64)
    some_row[group[rows]] = rows  # any row of a group will do: they share their key
    levels = [uniques.take(codes[some_row[present]]) for codes, uniques in per_level]
    codes_out = np.asarray(remap[group], dtype=np.int64)
    if len(by) == 1:
        return levels[0].rename(by[0]), codes_out
    return _multi_index(levels, list(by)), codes_out


def _observed_level(column: pd.Series) -> tuple[I64, pd.Index]:
    """Codes (-1: no key) and canonical uniques of one column.

    A categorical column is coded through its canonicalised categories (each row reads its
    category's code: no row is converted one by one); a category without rows makes no key.
    """
    if isinstance(column.dtype, pd.CategoricalDtype):
        categories = pd.Series(np.asarray(column.dtype.categories, dtype=object))
        canonical = categories.map(canonical_value)
        by_category, uniques = _total_factorize(canonical)
        row_codes = np.asarray(column.cat.codes.to_numpy(), dtype=np.int64)
        return np.append(by_category, -1)[row_codes], uniques  # code -1 (missing) reads -1
    return _total_factorize(canonical_column(column))


def missing_mask(column: pd.Series) -> npt.NDArray[np.bool_]:
    """Which rows hold a missing value, computed so that no value can make it fail.

    ``isna`` compares values, and some comparisons raise (``Decimal("sNaN")``); where the
    vectorised test raises, rows are tested one by one and a value whose test raises is not
    missing (it is then an unprocessable value, which matches no key and no bin).
    """

    def fast() -> npt.NDArray[np.bool_]:
        return np.asarray(column.isna().to_numpy(), dtype=bool)

    def slow() -> npt.NDArray[np.bool_]:
        values = column.to_numpy(dtype=object)
        return np.fromiter((_is_missing(v) for v in values), dtype=bool, count=len(values))

    return _total(fast, slow)


def _is_missing(value: object) -> bool:
    try:
        return is_missing(value)
    except Exception:  # a comparison that raises: not a missing value
        return False


def distinct_codes(column: pd.Series) -> I64:
    """A code per row that is equal exactly when the canonical values are (-1: missing).

    For counting distinct values: the codes themselves are private and never released.
    """
    return _total_factorize(canonical_column(column))[0]


def _total_factorize(values: pd.Series) -> tuple[I64, pd.Index]:
    """Codes and uniques of canonical values (canonical values always hash and compare)."""
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    return np.asarray(codes, dtype=np.int64), plain_index(uniques, None)


def _dense(pairs: I64, valid: npt.NDArray[np.bool_]) -> I64:
    """Re-number non-negative codes densely (0, 1, ... in increasing order); -1 stays -1.

    One hash pass over the rows, then a sort of the distinct values only.
    """
    out = np.full(len(pairs), -1, dtype=np.int64)
    codes, uniques = pd.factorize(pairs[valid])
    rank = np.empty(len(uniques), dtype=np.int64)
    rank[np.argsort(uniques, kind="stable")] = np.arange(len(uniques))
    out[valid] = rank[codes]
    return out


def _multi_index(levels: list[pd.Index], names: list[Hashable]) -> pd.MultiIndex:
    """A MultiIndex of per-level key values, built without parsing them (tuples stay values)."""
    factorised = [pd.factorize(values) for values in levels]
    codes = [codes for codes, _ in factorised]  # arrays; the stubs want sequences of int
    return pd.MultiIndex(
        levels=[pd.Index(uniques, tupleize_cols=False) for _, uniques in factorised],
        codes=cast(list[Sequence[int]], codes),
        names=names,
        verify_integrity=False,
    )
