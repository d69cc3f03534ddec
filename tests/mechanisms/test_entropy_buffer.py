"""The OS CSPRNG read in blocks (``pandas_dp.mechanisms.random``, issue 28).

A release asks for random bytes about a hundred times, mostly a few at a time. The system
source reads ``os.urandom`` in blocks of ``BLOCK_BYTES`` and hands every byte out once:
across threads (a lock), and never in a child process after ``os.fork`` (the buffer is
cleared there).
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable, Iterator

import numpy as np
import pandas as pd
import pytest

import pandas_dp  # noqa: F401  (registers .dp)
from pandas_dp.mechanisms import random as random_module
from pandas_dp.mechanisms.random import BLOCK_BYTES, SystemRandomSource, _EntropyBuffer


class CountingUrandom:
    """Stands in for ``os.urandom``: records each request; real bytes or a counter pattern."""

    def __init__(self, pattern: bool = False) -> None:
        self.calls: list[int] = []
        self.pattern = pattern
        self._real = os.urandom
        self._next = 0

    def __call__(self, n: int) -> bytes:
        self.calls.append(n)
        if not self.pattern:
            return self._real(n)
        # Distinct 4-byte words: the k-th word ever produced is k, little-endian.
        assert n % 4 == 0
        words = np.arange(self._next, self._next + n // 4, dtype="<u4")
        self._next += n // 4
        return words.tobytes()


@pytest.fixture
def urandom(monkeypatch: pytest.MonkeyPatch) -> Iterator[CountingUrandom]:
    """A counting ``os.urandom`` over a freshly emptied process-wide buffer."""
    counter = CountingUrandom()
    random_module._ENTROPY.clear_after_fork()
    monkeypatch.setattr(os, "urandom", counter)
    yield counter
    random_module._ENTROPY.clear_after_fork()


def test_a_mean_release_reads_the_os_a_few_times_not_a_hundred(urandom):
    # Before the buffer: 120 to 130 os.urandom calls per mean release on 1,000 rows.
    priv = pd.DataFrame({"x": np.linspace(0.0, 100.0, 1000)}).dp.protect(epsilon=1e6)
    urandom.calls.clear()  # protect reads 16 bytes for the session id (uuid4)
    priv.dp.mean("x", bounds=(0, 100), epsilon=1.0)
    assert 1 <= len(urandom.calls) <= 2
    for _ in range(19):
        priv.dp.mean("x", bounds=(0, 100), epsilon=1.0)
        priv.dp.count(epsilon=1.0)
    assert len(urandom.calls) <= 20  # 39 more releases: well under one read each
    assert set(urandom.calls) == {BLOCK_BYTES}


def test_bytes_are_handed_out_once_in_order(monkeypatch):
    fake = CountingUrandom(pattern=True)
    monkeypatch.setattr(os, "urandom", fake)
    buffer = _EntropyBuffer()
    sizes = [4, 8, 400, 4000, 62_000, 4, 2000]  # the 62,000 does not fit the first block
    taken = [buffer.take(n).tobytes() for n in sizes]
    assert [len(t) for t in taken] == sizes
    assert fake.calls == [BLOCK_BYTES, BLOCK_BYTES]
    words = np.frombuffer(b"".join(taken), dtype="<u4")
    assert np.unique(words).size == words.size  # no byte handed out twice
    first = (4 + 8 + 400 + 4000) // 4
    block = BLOCK_BYTES // 4
    # The first block's tail that did not fit is dropped; the second block starts afresh.
    assert np.array_equal(words[:first], np.arange(first))
    assert np.array_equal(words[first:], np.arange(block, block + words.size - first))


def test_large_requests_read_the_os_directly(monkeypatch):
    fake = CountingUrandom()
    monkeypatch.setattr(os, "urandom", fake)
    buffer = _EntropyBuffer()
    assert len(buffer.take(BLOCK_BYTES)) == BLOCK_BYTES
    assert len(buffer.take(5 * BLOCK_BYTES + 3)) == 5 * BLOCK_BYTES + 3
    assert fake.calls == [BLOCK_BYTES, 5 * BLOCK_BYTES + 3]
    assert buffer._block.size == 0  # the buffer was not touched


def test_system_source_returns_independent_arrays(urandom):
    source = SystemRandomSource()
    first, second = source.randbytes(64), source.randbytes(64)
    assert first.dtype == np.uint8
    assert first.shape == (64,)
    assert not np.array_equal(first, second)
    assert not np.shares_memory(first, random_module._ENTROPY._block)  # a copy, not a view
    assert urandom.calls == [BLOCK_BYTES]
    assert source.randbytes(0).shape == (0,)


def test_threads_never_share_bytes(monkeypatch):
    fake = CountingUrandom(pattern=True)
    monkeypatch.setattr(os, "urandom", fake)
    buffer = _EntropyBuffer()
    threads, per_thread = 8, 5000
    results: list[list[bytes]] = [[] for _ in range(threads)]
    start = threading.Barrier(threads)

    def work(i: int) -> None:
        start.wait()
        results[i] = [buffer.take(8).tobytes() for _ in range(per_thread)]

    pool = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    words = np.frombuffer(b"".join(b"".join(r) for r in results), dtype="<u4")
    assert words.size == threads * per_thread * 2
    assert np.unique(words).size == words.size
    # 320,000 bytes in 8-byte pieces fill blocks exactly: five reads, nothing dropped.
    assert fake.calls == [BLOCK_BYTES] * 5


def in_child(body: Callable[[], bytes]) -> bytes:
    """Run ``body`` in a forked child; return what it wrote (``b"error"`` if it raised)."""
    read, write = os.pipe()
    with warnings.catch_warnings():  # fork in a threaded process warns on some Pythons
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        try:
            os.close(read)
            try:
                out = body()
            except BaseException:
                out = b"error"
            os.write(write, out)
        finally:
            os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 4096):
        chunks.append(chunk)
    os.close(read)
    os.waitpid(pid, 0)
    return b"".join(chunks)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork on this platform")
def test_a_forked_child_does_not_reuse_the_parents_bytes():
    source = SystemRandomSource()
    source.randbytes(16)  # the parent now holds most of a block
    pending = random_module._ENTROPY._block[random_module._ENTROPY._used :].tobytes()
    assert len(pending) > 1000

    def child() -> bytes:
        emptied = random_module._ENTROPY._block.size == 0  # cleared by register_at_fork
        return bytes([emptied]) + source.randbytes(32).tobytes()

    out = in_child(child)
    assert out[:1] == b"\x01", out
    parent = source.randbytes(32).tobytes()
    assert parent == pending[:32]  # the parent goes on with its own block
    assert out[1:] != parent  # equal with probability 2**-256 unless the block was copied
    assert out[1:] not in pending


def test_a_changed_process_id_also_empties_the_buffer(monkeypatch):
    # For a fork that bypasses os.fork (and its at-fork hooks): the owner's pid is checked.
    fake = CountingUrandom(pattern=True)
    monkeypatch.setattr(os, "urandom", fake)
    buffer = _EntropyBuffer()
    before = buffer.take(8).tobytes()
    pid = os.getpid()
    monkeypatch.setattr(os, "getpid", lambda: pid + 1)
    after = buffer.take(8).tobytes()
    assert fake.calls == [BLOCK_BYTES, BLOCK_BYTES]
    assert np.frombuffer(after, "<u4")[0] == BLOCK_BYTES // 4
    assert before != after
