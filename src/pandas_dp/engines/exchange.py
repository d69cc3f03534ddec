"""Gathering each privacy unit's rows in one place: an exchange of rows by unit id.

Contribution bounding needs all of a unit's rows in one partition. A general shuffle builds
a new collection (an index, divisions, checked metadata, a disk store when threaded). The
engine needs less: each partition splits its rows into ``buckets`` pieces by their unit id
(one radix sort), and each bucket concatenates its pieces from every partition, to be
bounded and aggregated where it lands. The pieces are plain frames of the needed columns,
in the narrowest integer types that hold them, so the exchange moves and holds as few bytes
as it can: measured against Dask's shuffle on 5·10^7 rows, it takes about half the time and
two thirds of the memory (``benchmarks/bench_dask.py``).

- Integer ids go to bucket ``id mod buckets`` (a prime, so that strided ids spread too) and,
  unless the release reads them as values, are replaced by their quotient
  ``id // buckets``, which names the same unit within the bucket and spans ``1/buckets`` of
  the range: the caps' table of units stays dense.
- Other ids go to a bucket by a hash of the value, and are kept as they are.

The graph has ``partitions × buckets`` pieces, so collections of more than
:data:`MAX_PARTITIONS` partitions use Dask's own shuffle instead (peer-to-peer on a
cluster), which scales further.

The bucket is a function of the unit id alone, so every row of a unit lands in the same
bucket whichever partition holds it. Everything here runs on workers, depends on no
session, and is total for the ids the engine accepts (hashable values).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from dask.base import tokenize
from dask.delayed import Delayed
from dask.highlevelgraph import HighLevelGraph

#: A delayed value of a key in a graph (dask's constructor, typed).
_delayed: Callable[..., Delayed] = Delayed
#: The most partitions the exchange serves (beyond: Dask's shuffle).
MAX_PARTITIONS = 256
#: The fewest buckets: rows of a few large partitions are spread over this many.
MIN_BUCKETS = 16


def _is_integer(ids: pd.Series) -> bool:
    return isinstance(ids.dtype, np.dtype) and ids.dtype.kind in "iu"


def unit_buckets(ids: pd.Series, buckets: int) -> np.ndarray:
    """The bucket of each row, from its unit id alone.

    Integer ids: the id modulo ``buckets`` (a prime, so strided ids spread too), which lets
    :func:`split_by_unit` replace each id by its quotient. Other ids: a hash.
    """
    if _is_integer(ids):
        return np.asarray(np.mod(ids.to_numpy(), buckets), dtype=np.int64)
    hashed = pd.util.hash_pandas_object(ids, index=False).to_numpy()
    return np.asarray(hashed % np.uint64(buckets), dtype=np.int64)


def _narrow(values: np.ndarray) -> np.ndarray:
    """int32 when every value fits (half the bytes to hold), else as they are."""
    low, high = np.iinfo(np.int32).min, np.iinfo(np.int32).max
    if values.size and low <= values.min() and values.max() <= high:
        return values.astype(np.int32)
    return values


def split_by_unit(
    partition: pd.DataFrame, unit: Hashable, buckets: int, relabel: bool
) -> tuple[Any, ...]:
    """The partition's rows in ``buckets`` pieces by the bucket of their unit id.

    With ``relabel`` (the release reads the ids only to tell units apart), integer ids are
    replaced by their quotient by ``buckets``: within a bucket the quotient
    names the same unit (``id = quotient · buckets + bucket``), and the ids of a bucket then
    span ``1/buckets`` of the range, which keeps the caps' table of units dense.
    Each piece is a copy, not a view of the sorted rows, so that a bucket frees its pieces'
    memory as soon as it has gathered them.
    """
    ids = partition[unit]
    bucket = unit_buckets(ids, buckets)
    if relabel and _is_integer(ids):
        partition = partition.copy(deep=False)  # the caller's frame keeps its ids
        partition[unit] = _narrow(np.floor_divide(ids.to_numpy(), buckets))
    order = np.argsort(bucket.astype(np.uint16), kind="stable")  # a radix sort (buckets < 2**16)
    ends = np.cumsum(np.bincount(bucket, minlength=buckets))
    starts = np.concatenate([[0], ends[:-1]])
    ordered = partition.take(order)
    return tuple(ordered.iloc[a:b] for a, b in zip(starts, ends, strict=True))


def concatenated(pieces: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """One bucket's rows from every partition, in partition order."""
    return pd.concat(pieces, ignore_index=True)


def _prime_at_least(n: int) -> int:
    """The smallest prime ``>= n`` (n is at most a few hundred)."""
    candidate = max(n, 2)
    while any(candidate % d == 0 for d in range(2, int(candidate**0.5) + 1)):
        candidate += 1
    return candidate


def bucket_count(partitions: int) -> int:
    """How many buckets ``partitions`` partitions are exchanged into.

    A prime, at least :data:`MIN_BUCKETS`, about a third of the partitions: fewer, larger
    buckets cost fewer pieces to schedule; more, smaller ones less memory to bound each.
    """
    return _prime_at_least(max(partitions // 3, MIN_BUCKETS))


def exchange(partitions: Sequence[Delayed], unit: Hashable, relabel: bool) -> list[Delayed]:
    """Delayed frames, one per bucket, each holding whole units.

    The graph is written out directly (a split task per partition, a task per piece, a
    concatenation per bucket): built through ``delayed`` calls, its pieces cost seconds of
    graph construction alone.
    """
    buckets = bucket_count(len(partitions))
    token = tokenize(*[p.key for p in partitions], unit, buckets, relabel)
    split, piece, gather = (f"{step}-{token}" for step in ("split", "piece", "gather"))
    layer: dict[Any, Any] = {}
    for i, partition in enumerate(partitions):
        layer[(split, i)] = (split_by_unit, partition.key, unit, buckets, relabel)
        for j in range(buckets):
            layer[(piece, i, j)] = (operator.getitem, (split, i), j)
    for j in range(buckets):
        layer[(gather, j)] = (concatenated, [(piece, i, j) for i in range(len(partitions))])
    depends: list[Any] = list(partitions)
    graph = HighLevelGraph.from_collections(gather, layer, dependencies=depends)
    return [_delayed((gather, j), graph, layer=gather) for j in range(buckets)]
