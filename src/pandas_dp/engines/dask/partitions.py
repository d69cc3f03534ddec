"""The pandas functions a Dask release runs on its partitions, and the exact sum of theirs.

Everything here is plain pandas and numpy (no Dask): the graph that
:mod:`pandas_dp.engines.dask.engine` builds calls these functions on workers.

- :func:`with_canonical_ids` writes a partition's unit ids in their canonical form
  (:func:`~pandas_dp.engines.canonical.canonical_unit_ids`) before any row moves;
- :func:`code_keys` replaces the group-by columns by each row's code among the public keys
  before a shuffle, so that fewer bytes move;
- :func:`aggregate_partition` aggregates one partition with the pandas engine's own
  :func:`~pandas_dp.engines.pandas_engine.aggregate_frame`, after dropping rows outside its
  division (partition-local bounding) and, for seeded sessions, sorting its rows canonically;
- :func:`combine` adds up the per-partition integers exactly, in one final task.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
import pandas as pd

from pandas_dp.engines.canonical import canonical_unit_ids
from pandas_dp.engines.codes import other_codes, public_codes
from pandas_dp.engines.dask.divisions import Division
from pandas_dp.engines.pandas_engine import aggregate_frame
from pandas_dp.engines.protocol import Aggregates
from pandas_dp.measures.aggregates import Aggregate, Grouping, Measure
from pandas_dp.measures.bounding import Bounding

#: The column that carries key codes through a shuffle (never a user's column name).
KEY_CODE = "\x00pandas-dp key code"
#: int64 additions below this magnitude cannot overflow.
_INT64_SAFE = 1 << 62


def with_canonical_ids(partition: pd.DataFrame, unit: Hashable) -> pd.DataFrame:
    """The partition with its unit ids in canonical form (runs on a worker, row by row)."""
    partition = partition.copy(deep=False)
    partition[unit] = canonical_unit_ids(partition[unit])
    return partition


def code_keys(partition: pd.DataFrame, grouping: Grouping, kept: list[Hashable]) -> pd.DataFrame:
    """The partition's ``kept`` columns and each row's key code; rows outside the keys go."""
    assert grouping.keys is not None
    if grouping.other is not None:
        codes = other_codes(partition, grouping.by, grouping.other)
    else:
        codes = public_codes(partition, grouping.by, grouping.keys)
    inside = codes >= 0
    out = partition.loc[inside, kept]
    return out.assign(**{KEY_CODE: codes[inside].astype(code_dtype(grouping))})


def code_dtype(grouping: Grouping) -> type[np.signedinteger]:
    """The smallest integer codes that hold every key's position (fewer bytes to move)."""
    assert grouping.keys is not None
    n = len(grouping.keys)
    return next(t for t in (np.int8, np.int16, np.int32, np.int64) if n <= np.iinfo(t).max)


def _canonical(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows sorted by a hash of their values: the same order whatever the shuffle delivered.

    Rows that hash alike are (but for a 2**-64 chance) identical, so their order cannot
    change an aggregate. Used for seeded (test-only) sessions.
    """
    hashes = pd.util.hash_pandas_object(frame, index=False).to_numpy()
    return frame.iloc[np.argsort(hashes, kind="stable")]


def aggregate_partition(
    frame: pd.DataFrame,
    measures: tuple[Measure, ...],
    grouping: Grouping | None,
    bounding: Bounding | None,
    division: Division | None = None,
) -> Aggregates:
    """Aggregate one partition (runs on a worker; ``bounding`` carries no session).

    With a ``division`` (partition-local bounding), rows whose unit id lies outside it are
    dropped first: whatever the divisions claimed, each unit's rows are then counted in
    one partition only, where its caps apply.
    """
    if bounding is not None:
        assert bounding.spawn is None, "partitions must not receive the session"
        if division is not None:
            inside = division.holds(frame[bounding.unit])
            if not inside.all():  # (a copy only when the divisions were wrong)
                frame = frame[inside]
        if getattr(bounding.priorities, "canonical", False):
            frame = _canonical(frame)
    return aggregate_frame(frame, measures, grouping, bounding)


def _add(total: Aggregate, part: Aggregate) -> Aggregate:
    """Exact element-wise sum: int64 while it cannot overflow, Python ints beyond."""
    if total.dtype != object and part.dtype != object:
        largest = (int(np.abs(total).max()) if total.size else 0) + (
            int(np.abs(part).max()) if part.size else 0
        )
        if largest < _INT64_SAFE:
            return np.asarray(total + part, dtype=np.int64)
    return np.asarray(total.astype(object) + part.astype(object), dtype=object)


def _scatter(shape: tuple[int, ...], codes: np.ndarray, values: Aggregate) -> Aggregate:
    """Place one partition's rows at ``codes`` in a zero array of ``shape``."""
    out = np.zeros(shape, dtype=object if values.dtype == object else np.int64)
    out[codes] = values
    return out


def combine(parts: Sequence[Aggregates], observed: bool) -> Aggregates:
    """Add up per-partition aggregates exactly.

    With public keys (or none) every partition reports the same keys in the same order.
    With ``observed`` keys (private, for partition selection) each partition reports the
    keys it holds; the result is their union, each key's aggregates summed.
    """
    if not observed:
        values = list(parts[0].values)
        for part in parts[1:]:
            values = [_add(a, b) for a, b in zip(values, part.values, strict=True)]
        return Aggregates(parts[0].keys, values)
    holding = [p for p in parts if p.keys is not None and len(p.keys)] or [parts[0]]
    held = [p.keys for p in holding if p.keys is not None]
    keys = held[0].append(held[1:]) if len(held) > 1 else held[0]
    codes, _ = keys.factorize()  # codes number the keys in order of first appearance
    union = keys[np.sort(np.unique(codes, return_index=True)[1])]  # keeps the level dtypes
    if isinstance(union, pd.MultiIndex):
        union = union.remove_unused_levels()
    totals: list[Aggregate] = []
    for position in range(len(holding[0].values)):
        total: Aggregate | None = None
        start = 0
        for part, part_keys in zip(holding, held, strict=True):
            local = part.values[position]
            stop = start + len(part_keys)
            placed = _scatter((len(union), *local.shape[1:]), codes[start:stop], local)
            total = placed if total is None else _add(total, placed)
            start = stop
        assert total is not None
        totals.append(total)
    return Aggregates(union, totals)
