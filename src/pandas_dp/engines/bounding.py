"""Contribution bounding: cap what one privacy unit can add to a release.

Each cap keeps a *random* subset: every row (and every unit-group pair) gets an independent
priority from the session's CSPRNG, and within a unit the lowest priorities are kept. The
choice depends only on the unit's own rows and on randomness, never on other units' data,
so the sensitivities computed from the caps hold. :func:`below_cap` finds the kept rows by
counting (linear time for most rows), and from a stateless source (the OS CSPRNG) draws only
the bits of the priorities it reads; a stream (seeded tests) has every word drawn, in step.

Engines that bound rows in other processes (Dask workers) never receive the session: they
call :attr:`~pandas_dp.measures.bounding.Bounding.spawn` once per release, on the client, and
ship the picklable :class:`~pandas_dp.measures.bounding.PartitionPriorities` it returns, one
stream per partition (see that class).

Order of the caps (each only drops rows):

1. rows whose unit id is missing, and rows outside the public keys, are dropped (they can
   never be released, so they should not use up a unit's allowance);
2. ``max_groups``: each unit keeps at most that many of its groups;
3. ``max_rows_per_group``: each unit keeps at most that many rows per group;
4. ``max_rows``: each unit keeps at most that many rows in total.
"""

from __future__ import annotations

import os

import numpy as np
import numpy.typing as npt
import pandas as pd

from pandas_dp.engines.integers import unit_codes
from pandas_dp.measures.bounding import Bounding, Priorities

I64 = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]
Words = npt.NDArray[np.uint64]


class SystemPriorities:
    """Priorities from the OS CSPRNG (``os.urandom``) of whichever process draws them.

    Stateless and picklable: a Dask worker that receives it reads its own ``os.urandom``;
    nothing random is decided on the client.
    """

    canonical = False
    #: Nothing to keep in step: words not needed (every unit within its cap) are not read.
    stateless = True

    def __call__(self, n: int) -> npt.NDArray[np.uint64]:
        """``n`` uniform 64-bit words from ``os.urandom``."""
        return np.frombuffer(os.urandom(8 * n), dtype=np.uint64)

    def for_partition(self, index: int) -> SystemPriorities:
        """The same source: every partition reads its own process's CSPRNG."""
        return self

    def __repr__(self) -> str:
        return "SystemPriorities(os.urandom)"


class SeededPriorities:
    """Reproducible priorities for seeded sessions. Test-only: PCG64 is not a CSPRNG.

    ``entropy`` comes from the seeded session's own stream; partition ``i`` draws from
    PCG64 seeded with ``entropy + (i,)``, after sorting its rows canonically, so a seeded
    release gives the same result on any scheduler.
    """

    canonical = True

    def __init__(self, entropy: tuple[int, ...]) -> None:
        self.entropy = entropy
        self._bits: np.random.PCG64 | None = None

    def __call__(self, n: int) -> npt.NDArray[np.uint64]:
        """``n`` words from this partition's PCG64 stream (continuing across calls)."""
        if self._bits is None:  # test-only: deliberately seeded and insecure
            self._bits = np.random.PCG64(np.random.SeedSequence(list(self.entropy)))
        return np.asarray(self._bits.random_raw(n), dtype=np.uint64)

    def for_partition(self, index: int) -> SeededPriorities:
        """A fresh stream for partition ``index``."""
        return SeededPriorities((*self.entropy, index))

    def __repr__(self) -> str:
        return f"SeededPriorities({len(self.entropy)} words)"


def ranks_within(groups: I64, priority: npt.NDArray[np.uint64]) -> I64:
    """Rank of each row within its group when ordered by ``priority`` (0 = lowest)."""
    order = np.lexsort((priority, groups))
    ordered = groups[order]
    starts = np.empty(ordered.size, dtype=np.bool_)
    starts[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=starts[1:])
    position = np.arange(ordered.size)
    first = np.maximum.accumulate(np.where(starts, position, 0))
    ranks = np.empty(ordered.size, dtype=np.int64)
    ranks[order] = position - first
    return ranks


#: The sort key keeps at least this many of a priority's top bits below a group code's; with
#: fewer (group codes too wide), :func:`below_cap` ranks by :func:`ranks_within` instead.
_KEY_PRIORITY_BITS = 32
#: Below this many rows in groups over the cap, one sort ranks them all (no counting pass).
_COUNTING_ROWS = 1 << 15
#: The counting pass splits a priority's range into at most ``2**_BUCKET_BITS`` buckets (the
#: top byte of a priority, all that a drawn source reads of most rows).
_BUCKET_BITS = 8


class _Given:
    """Priorities given as one array (a stream's words, kept in step; or tests')."""

    def __init__(self, priority: Words) -> None:
        self.priority = priority

    def every(self) -> Words:
        """Every row's word."""
        return self.priority

    def buckets(self, bits: int) -> I64:
        """Each row's top ``bits`` bits (a new array)."""
        return (self.priority >> np.uint64(64 - bits)).view(np.int64)

    def within(self, rows: I64, bits: int) -> Words:
        """The priorities of ``rows`` with their top ``bits`` bits shifted out."""
        return self.priority[rows] << np.uint64(bits)


class _Drawn:
    """Priorities of ``n`` rows drawn from a stateless source as they are read.

    A priority is a uniform 64-bit word: its top byte, then 56 more bits. The top bytes of
    every row are drawn first (all that the counting pass reads); the other bits only for
    the rows that are ranked further (a threshold bucket's), in one draw. Each row's word
    is uniform and independent of the others' and of the data, as if drawn whole at once,
    and the bits never drawn are bits nobody reads: the rows kept are those a full draw
    would keep, with an eighth of the random bytes for most rows.
    """

    def __init__(self, draw: Priorities, n: int) -> None:
        self.draw, self.n = draw, n
        self.top: npt.NDArray[np.uint8] | None = None

    def every(self) -> Words:
        """Every row's whole word (when the rows are ranked by one sort)."""
        return self.draw(self.n)

    def buckets(self, bits: int) -> I64:
        """Each row's top ``bits`` bits, from a byte drawn per row (kept for :meth:`within`)."""
        self.top = self.draw((self.n + 7) // 8).view(np.uint8)[: self.n]
        return (self.top >> np.uint8(8 - bits)).astype(np.int64)

    def within(self, rows: I64, bits: int) -> Words:
        """The words of ``rows``, their other 56 bits drawn now, top ``bits`` shifted out."""
        assert self.top is not None, "buckets are read first"
        word = self.top[rows].astype(np.uint64) << np.uint64(56)
        word |= self.draw(rows.size) >> np.uint64(8)
        word <<= np.uint64(bits)
        return word


def below_cap(groups: I64, priority: Words | Priorities, cap: int) -> Bools:
    """``ranks_within(groups, priority) < cap``, exactly, in linear time for most rows.

    Rows of groups holding at most ``cap`` rows are all kept. The others are first
    *counted*: the top ``b`` bits of a priority are its bucket, and one ``numpy.bincount``
    over (group, bucket) tells each group the bucket in which its ``cap``-th lowest priority
    lies. A row in a lower bucket has a lower priority than every row of that bucket, so it
    ranks below the cap; a row in a higher bucket ranks at or above it; and when the
    threshold bucket holds no more rows than the lower buckets left of the cap, all of them
    are kept. Only the rows of the other threshold buckets (about ``m / 2**b`` of a group's
    ``m`` rows; ``2**b`` is about the rows per group, at most 256) are ranked, by one sort
    (:func:`_ranked`), each group keeping as many as its lower buckets left. Which rows are
    kept is exactly what :func:`ranks_within` says, whatever the priorities (ties included):
    the same rows for the same priorities, in a few linear passes and one small sort.

    ``priority`` is each row's word, or a stateless source (``os.urandom``) from which the
    words are drawn as they are read (:class:`_Drawn`: the top byte of every row, the rest
    only for the rows ranked): the rows kept then follow the same law as with words drawn
    whole, from fewer random bytes.
    """
    words = _Given(priority) if isinstance(priority, np.ndarray) else _Drawn(priority, groups.size)
    keep = np.ones(groups.size, dtype=np.bool_)
    if groups.size <= cap:
        return keep
    if int(groups.max()) >= 4 * groups.size + 4096:  # wide codes (cells): renumber them
        groups = np.asarray(pd.factorize(groups)[0], dtype=np.int64)
    counts = np.bincount(groups)
    if counts.size > groups.size:  # codes sparser than rows: number those present, in order
        present = counts > 0
        groups = (np.cumsum(present) - 1)[groups]
        counts = counts[present]
    ranked = np.flatnonzero(counts > cap)  # the groups over the cap
    if ranked.size == 0:
        return keep
    if int(counts[ranked].sum()) < _COUNTING_ROWS:
        return _ranked(groups, words.every(), counts, cap)
    # 2**bits buckets per group, about as many as rows per group (at least 2): the
    # (group, bucket) counts never outgrow twice the rows.
    bits = min(_BUCKET_BITS, max(1, (groups.size // counts.size).bit_length() - 1))
    buckets, size = 1 << bits, counts.size
    cell = words.buckets(bits)  # bucket-major cells: bucket * size + group
    cell *= size
    cell += groups
    below = np.bincount(cell, minlength=size << bits).reshape(buckets, size)
    np.cumsum(below, axis=0, out=below)  # rows of each group in its buckets up to each
    # Each group's threshold bucket: the buckets before it hold fewer than ``cap`` rows
    # (all of them, ``buckets``, for a group within the cap).
    bucket = np.count_nonzero(below < cap, axis=0)
    at = bucket[ranked] * size + ranked  # the threshold cells, flat
    before = np.where(at >= size, below.reshape(-1)[np.maximum(at - size, 0)], 0)
    inside = below.reshape(-1)[at] - before  # rows in the threshold bucket
    left = cap - before  # of which the group keeps this many
    del below
    # What each (bucket, group) does with its rows: 0 keep, 1 drop, 2 rank.
    state = np.greater(np.arange(buckets)[:, None], bucket).view(np.uint8)
    state.reshape(-1)[at] = np.where(inside > left, 2, 0)
    what = state.reshape(-1)[cell]
    del cell, state
    np.equal(what, 0, out=keep)
    tied = np.flatnonzero(what == 2)
    del what
    if tied.size == 0:
        return keep
    quota = np.zeros(counts.size, dtype=np.int64)
    quota[ranked] = left
    # Within a bucket the top bits are equal: shifted out, the rest orders the same way.
    candidates = groups[tied]
    shifted = words.within(tied, bits)
    per_group = np.bincount(candidates, minlength=counts.size)
    keep[tied] = _ranked(candidates, shifted, per_group, quota)
    return keep


def _ranked(groups: I64, priority: Words, counts: I64, quota: int | I64) -> Bools:
    """``ranks_within(groups, priority) < quota``, by one sort of one word per row.

    ``counts`` are the rows per group; ``quota`` is one cap, or each group's own. Each row
    gets the word ``group << s | priority >> (64 - s)`` (``s`` the bits left beside the
    group's code) and the words are sorted once: within a group they come in priority
    order, and the ``quota``-th word of each group over its quota is its threshold. When no
    two words are equal, two rows of a group never share their top ``s`` priority bits, so
    this order is the full priorities' order, and ``word <= threshold`` keeps exactly the
    rows ranked below the quota. When two words are equal (a chance of about
    ``m**2 / 2**(s+1)`` for a group of ``m`` rows), the rows are ranked by
    :func:`ranks_within` (which breaks a tie of whole priorities by position).
    """
    limit = np.broadcast_to(np.asarray(quota, dtype=np.int64), counts.shape)
    over_cap = counts > limit
    keep = np.ones(groups.size, dtype=np.bool_)
    if not over_cap.any():
        return keep
    top = counts.size - 1
    width = top.bit_length()
    if 64 - width < _KEY_PRIORITY_BITS:
        return ranks_within(groups, priority) < limit[groups]
    # Rank the rows of the groups over the cap only, unless they are most rows (then all,
    # sparing the indices); a group at or under the cap keeps every row either way.
    over = None
    if 2 * int(counts[over_cap].sum()) < groups.size:
        over = np.flatnonzero(over_cap[groups])
        groups, priority = groups[over], priority[over]
    # Built in place (this runs on every row of a release: a temporary is a copy of them all)
    spare = np.uint64(64 - width)
    word = priority.copy()  # the priorities themselves are kept for an exact tie-break
    if width:
        word >>= np.uint64(width)
        code = groups.view(np.uint64) << spare  # codes are non-negative
        word |= code
        del code
    ordered = np.sort(word)
    if bool((ordered[1:] == ordered[:-1]).any()):  # equal words: rank the exact way
        exact = ranks_within(groups, priority) < limit[groups]
        if over is None:
            return exact
        keep[over] = exact
        return keep
    # In sorted order each group's rows are contiguous, groups in increasing code; the
    # quota-th word of a group over its quota is its threshold, every other group keeps all.
    ranked = np.flatnonzero(over_cap) if over is not None else np.arange(counts.size)
    sizes = counts[ranked]
    start = np.cumsum(sizes) - sizes  # where each ranked group's rows begin
    threshold = np.full(top + 1, np.iinfo(np.uint64).max, dtype=np.uint64)
    chosen = ranked[over_cap[ranked]]
    threshold[chosen] = ordered[start[over_cap[ranked]] + (limit[chosen] - 1)]
    del ordered
    kept = word <= threshold[groups]
    if over is None:
        return kept
    keep[over] = kept
    return keep


def keep_mask(frame: pd.DataFrame, bounding: Bounding, group_codes: I64 | None) -> Bools:
    """Which rows of ``frame`` survive the caps; ``group_codes`` is -1 for dropped keys."""
    assert bounding.priorities is not None, "bounding needs a source of random priorities"
    units = unit_codes(frame[bounding.unit])
    keep = units >= 0
    if group_codes is not None:
        keep &= group_codes >= 0
    # The rows still in play (None: all of them, the common case, with no index per row)
    rows = None if bool(keep.all()) else np.flatnonzero(keep)
    unit = units if rows is None else units[rows]
    del units, keep  # every later step reads rows and unit only
    # Codes per (unit, group); an empty partition (a shuffle may leave one) has no maximum.
    width = int(group_codes.max()) + 1 if group_codes is not None and group_codes.size else 1
    if group_codes is not None and bounding.max_groups is not None:
        pair = appearance_codes(_cells(unit, width, group_codes, rows))
        pairs = int(pair.max()) + 1 if pair.size else 0
        pair_priority = _priorities(bounding, pairs)
        pair_unit = np.empty(pairs, dtype=np.int64)
        pair_unit[pair] = unit  # every row of a pair has the pair's unit
        if not _within(pair_unit, bounding.max_groups):
            pair_kept = below_cap(pair_unit, pair_priority, bounding.max_groups)
            rows, unit = _filter(rows, unit, pair_kept[pair])
    if group_codes is not None and bounding.max_rows_per_group is not None:
        cell = _cells(unit, width, group_codes, rows)
        kept = below_cap(cell, _priorities(bounding, unit.size), bounding.max_rows_per_group)
        rows, unit = _filter(rows, unit, kept)
    within = _within(unit, bounding.max_rows)
    if not within or not getattr(bounding.priorities, "stateless", False):
        priority = _priorities(bounding, unit.size)  # drawn all the same from a stream
        if not within:
            kept = below_cap(unit, priority, bounding.max_rows)
            if rows is None:
                return kept
            rows = rows[kept]
    if rows is None:
        return np.ones(len(frame), dtype=np.bool_)
    out = np.zeros(len(frame), dtype=np.bool_)
    out[rows] = True
    return out


def appearance_codes(values: I64) -> I64:
    """Codes ``0 .. k-1`` of non-negative ``values`` in order of first appearance.

    Exactly ``pd.factorize(values)[0]`` (the pairs' priorities are read in this order, so
    the codes must not depend on how units are labelled), without hashing when the values
    span a few slots per row: each value's first position, then a count of the values that
    first appeared before it.
    """
    if values.size == 0 or int(values.max()) >= 8 * values.size + 4096:
        return np.asarray(pd.factorize(values)[0], dtype=np.int64)
    small = np.int32 if values.size < 2**31 else np.int64  # half the memory when it fits
    position = np.arange(values.size, dtype=small)
    first = np.full(int(values.max()) + 1, values.size, dtype=small)
    np.minimum.at(first, values, position)
    at = first[values]
    del first
    appeared = np.cumsum(at == position, dtype=np.int64)
    del position
    appeared -= 1
    return np.asarray(appeared[at], dtype=np.int64)


def _priorities(bounding: Bounding, n: int) -> Words | Priorities:
    """``n`` words drawn now from a stream (kept in step), or a stateless source itself.

    A stateless source (``os.urandom``) is handed to :func:`below_cap`, which draws only
    the bits it reads.
    """
    assert bounding.priorities is not None
    if getattr(bounding.priorities, "stateless", False):
        return bounding.priorities
    return bounding.priorities(n)


def _within(codes: I64, cap: int) -> bool:
    """Whether no code occurs more than ``cap`` times, so that every rank is below the cap.

    A shortcut, not a different rule: the rows kept are exactly those the ranks would keep,
    and the priorities are drawn all the same from a stream (seeded, or the session's), so
    that the stream does not change; only a stateless source (``os.urandom`` on a worker) is
    spared the words nobody reads.
    """
    return codes.size == 0 or int(np.bincount(codes).max()) <= cap


def _cells(unit: I64, width: int, group_codes: I64, rows: I64 | None) -> I64:
    """``unit * width + group_codes[rows]``, the (unit, group) of each row, with one copy."""
    cell = unit * width
    cell += group_codes if rows is None else group_codes[rows]
    return cell


def _filter(rows: I64 | None, unit: I64, ok: Bools) -> tuple[I64, I64]:
    """The rows (and their units) still in play where ``ok``; ``rows`` None is every row."""
    return (np.flatnonzero(ok) if rows is None else rows[ok]), unit[ok]
