"""Gathering each privacy unit's rows in one place: an exchange of rows by unit id.

Contribution bounding needs all of a unit's rows in one partition. A general shuffle builds
a new collection (an index, divisions, checked metadata, a disk store when threaded). The
engine needs less: each partition splits its rows into pieces by their unit id's *bucket*
(one radix sort), and each bucket concatenates its pieces from every partition, to be
bounded and aggregated where it lands. The pieces are plain frames of the needed columns,
in the narrowest integer types that hold them, so the exchange moves and holds as few bytes
as it can: measured against Dask's shuffle on 5·10^7 rows, it takes about half the time and
two thirds of the memory (``benchmarks/bench_dask.py``).

- A row's bucket is a function of its (canonical) unit id alone: integer ids go to bucket
  ``id mod buckets`` (a prime, so that strided ids spread too), other ids by a hash of the
  value. Every row of a unit therefore has one bucket, whichever partition holds it.
- Unless the release reads them as values, integer ids are replaced by their quotient
  ``id // buckets`` when they reach their bucket: it names the same unit within the bucket
  and spans ``1/buckets`` of the range, so the caps' table of units stays dense.

**Stages.** Sending every partition's rows straight to every bucket takes
``partitions × buckets`` pieces: fine for a few dozen partitions, a quadratic number of tasks
for a thousand. Past :data:`MAX_ONE_STAGE` partitions the bucket number is routed digit by
digit, in mixed radix (:func:`stage_radices`; ``bucket = d1 + r1·d2 + r1·r2·d3 ...``). Stage
``s`` splits each of its inputs by digit ``d_s`` of its rows' buckets, and gathers the pieces
with the same digits so far from a *set* of inputs; the sets widen from stage to stage until
the last stage gathers from all of them. So stage ``s`` ends with one frame per (set, digits
so far), each holding about as many rows as a final bucket, and after the last stage one frame
per bucket, holding exactly the rows whose bucket it is: every digit a row follows is read
from its own unit id, so all rows of a unit follow the same path to the same frame. With
``partitions / buckets ≈ 3`` and two stages (up to a few thousand partitions) the graph has
about ``2 · buckets · sqrt(partitions)`` pieces: 21,000 rather than 337,000 at 1,000
partitions. Each stage passes over the rows once more, which is why few partitions keep one.

Everything here runs on workers, depends on no session, and is total for the ids the engine
accepts (hashable values). The graph's shape depends on the partition count only.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Hashable, Sequence
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
from dask.base import tokenize
from dask.delayed import Delayed
from dask.highlevelgraph import HighLevelGraph
from dask.typing import Key

#: A delayed value of a key in a graph (dask's constructor, typed).
_delayed: Callable[..., Delayed] = Delayed
#: The most partitions exchanged in one stage (beyond: two or more, see the module docstring).
MAX_ONE_STAGE = 128
#: The fewest buckets: rows of a few large partitions are spread over this many.
MIN_BUCKETS = 16
#: What one more pass over the rows costs, in pieces per partition (when choosing stages).
_STAGE_COST = 8


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
    partition: pd.DataFrame,
    unit: Hashable,
    buckets: int,
    relabel: bool,
    place: int = 1,
    radix: int | None = None,
) -> tuple[pd.DataFrame, ...]:
    """The partition's rows in pieces by (one digit of) the bucket of their unit id.

    Piece ``d`` holds the rows whose bucket ``b`` has ``(b // place) % radix == d``: by
    default (``radix=buckets``) the bucket itself. With ``relabel`` (the release reads the
    ids only to tell units apart; the last stage only), integer ids are replaced by their
    quotient by ``buckets``: within a bucket the quotient names the same unit
    (``id = quotient · buckets + bucket``), and the ids of a bucket then span
    ``1/buckets`` of the range, which keeps the caps' table of units dense.
    Each piece is a copy, not a view of the sorted rows, so that a frame that gathers
    pieces frees their memory as soon as it has them.
    """
    radix = buckets if radix is None else radix
    ids = partition[unit]
    digit = unit_buckets(ids, buckets)
    if place > 1 or radix < buckets:
        digit = (digit // place) % radix
    if relabel and _is_integer(ids):
        partition = partition.copy(deep=False)  # the caller's frame keeps its ids
        partition[unit] = _narrow(np.floor_divide(ids.to_numpy(), buckets))
    # A radix sort where the digits fit 16 bits (numpy sorts those by counting).
    keys = digit.astype(np.uint16) if radix <= 1 << 16 else digit
    order = np.argsort(keys, kind="stable")
    ends = np.cumsum(np.bincount(digit, minlength=radix))
    starts = np.concatenate([[0], ends[:-1]])
    ordered = partition.take(order)
    return tuple(ordered.iloc[a:b] for a, b in zip(starts, ends, strict=True))


def concatenated(pieces: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Pieces gathered from several inputs, in the inputs' order."""
    return pd.concat(pieces, ignore_index=True)


def _prime_at_least(n: int) -> int:
    """The smallest prime ``>= n`` (by trial division: n is at most a few tens of thousands)."""
    candidate = max(n, 2)
    while any(candidate % d == 0 for d in range(2, math.isqrt(candidate) + 1)):
        candidate += 1
    return candidate


def bucket_count(partitions: int) -> int:
    """How many buckets ``partitions`` partitions are exchanged into.

    A prime, at least :data:`MIN_BUCKETS`, about a third of the partitions: fewer, larger
    buckets cost fewer pieces to schedule; more, smaller ones less memory to bound each.
    """
    return _prime_at_least(max(partitions // 3, MIN_BUCKETS))


def _tasks(partitions: int, buckets: int, radices: Sequence[int]) -> int:
    """Pieces and gathers of an exchange routed by ``radices``, plus a cost per stage."""
    total, inputs, reached = 0, partitions, 1
    for s, radix in enumerate(radices):
        sets = math.prod(radices[s + 1 :])
        reached *= radix
        outputs = min(sets, inputs) * min(reached, buckets)
        total += inputs * (radix + 1) + outputs + _STAGE_COST * partitions
        inputs = outputs
    return total


def stage_radices(partitions: int, buckets: int) -> tuple[int, ...]:
    """The digits' radices by which rows are routed to their bucket, one per stage.

    One stage (``(buckets,)``) up to :data:`MAX_ONE_STAGE` partitions; beyond, the
    cheapest routing of two to four stages, whose radices multiply to at least ``buckets``
    (counting pieces, gathers and one pass over the rows per stage). A function of the
    partition count only.
    """
    if partitions <= MAX_ONE_STAGE:
        return (buckets,)
    best: tuple[int, ...] = (buckets,)
    for stages in (2, 3, 4):
        for first in range(2, math.isqrt(buckets) + 2):
            rest = math.ceil((buckets / first) ** (1 / (stages - 1)) - 1e-9)
            radices = (first, *[rest] * (stages - 1))
            while math.prod(radices) < buckets:  # (float roots may fall short by one)
                radices = (*radices[:-1], radices[-1] + 1)
            if _tasks(partitions, buckets, radices) < _tasks(partitions, buckets, best):
                best = radices
    return best


def exchange(partitions: Sequence[Delayed], unit: Hashable, relabel: bool) -> list[Delayed]:
    """Delayed frames, one per bucket, each holding whole units (all rows of its units).

    Stage ``s`` (of :func:`stage_radices`) splits each input by the digit ``d_s`` of its
    rows' buckets and gathers, from each *set* of inputs, the pieces whose digits so far are
    alike. Inputs are tracked as (set, digits so far); partition ``i`` starts in set ``i``
    with no digits. The sets of stage ``s`` number the product of the later radices, so
    the last stage gathers from every input the pieces of one bucket.

    The graph is written out directly (split tasks, a task per piece, gathering tasks):
    built through ``delayed`` calls, its pieces cost seconds of graph construction alone.
    """
    buckets = bucket_count(len(partitions))
    radices = stage_radices(len(partitions), buckets)
    token = tokenize(*[p.key for p in partitions], unit, buckets, radices, relabel)
    layer: dict[Key, object] = {}  # key: a task (a tuple of a function and its inputs)
    # Each input: its key, its set, and the bucket's residue modulo `place` (its digits).
    inputs: list[tuple[tuple[str, int], int, int]] = [
        (p.key, i, 0) for i, p in enumerate(partitions)
    ]
    sets, place = len(partitions), 1
    for stage, radix in enumerate(radices):
        last = stage == len(radices) - 1
        split, piece, gather = (f"{step}{stage}-{token}" for step in ("split", "piece", "gather"))
        later = math.prod(radices[stage + 1 :])  # sets after this stage (1 after the last)
        # (arguments bound by ``partial``: dask never reads a column name there as a key)
        cut = partial(
            split_by_unit, unit=unit, buckets=buckets, relabel=relabel and last,
            place=place, radix=radix,
        )  # fmt: skip
        targets: dict[tuple[int, int], list[Key]] = {}
        for i, (key, member, residue) in enumerate(inputs):
            layer[(split, i)] = (cut, key)
            into = member * later // sets  # consecutive sets merge: stage by stage, all
            for digit in range(radix):
                reached = residue + digit * place
                if reached < buckets:  # (a residue beyond the buckets holds no row)
                    layer[(piece, i, digit)] = (operator.getitem, (split, i), digit)
                    targets.setdefault((into, reached), []).append((piece, i, digit))
        inputs = []
        for j, ((member, residue), pieces) in enumerate(sorted(targets.items())):
            layer[(gather, j)] = (concatenated, pieces)
            inputs.append(((gather, j), member, residue))
        sets, place = later, place * radix
    assert [residue for _, _, residue in inputs] == list(range(buckets))  # one per bucket
    name = inputs[0][0][0]
    depends: list[Any] = list(partitions)  # Delayed: dask's DaskCollection protocol misses it
    graph = HighLevelGraph.from_collections(name, layer, dependencies=depends)
    return [_delayed(key, graph, layer=name) for key, _, _ in inputs]
