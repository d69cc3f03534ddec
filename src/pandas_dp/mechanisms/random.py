"""Sources of uniformly random bits, and exact uniform integers drawn from them.

Every sampler in :mod:`pandas_dp.mechanisms` reads its randomness through a
:class:`RandomSource`. Production code uses :class:`SystemRandomSource`, which reads the
operating system's CSPRNG (``os.urandom``, i.e. ``getrandom(2)`` on Linux). A seeded source
exists so that tests can be reproducible; it is *not* cryptographically secure and callers
that create one must warn (see :func:`pandas_dp.api.session`).

Only integer operations are used here: no floating point touches a random value, so every
probability the samplers realise is an exact rational number.
"""

from __future__ import annotations

import os
from typing import Protocol

import numpy as np
import numpy.typing as npt

U8 = npt.NDArray[np.uint8]
I64 = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]

#: Largest modulus :func:`uniform_below` accepts; keeps every intermediate inside int64.
MAX_MODULUS = 1 << 62


class RandomSource(Protocol):
    """Anything that hands out independent, uniformly distributed random bytes."""

    def randbytes(self, n: int) -> U8:
        """Return ``n`` independent uniform bytes as a uint8 array."""


class SystemRandomSource:
    """Uniform bytes from the operating system's CSPRNG (``os.urandom``)."""

    def randbytes(self, n: int) -> U8:
        """Return ``n`` uniform bytes read from ``os.urandom``."""
        return np.frombuffer(os.urandom(n), dtype=np.uint8)

    def __repr__(self) -> str:
        return "SystemRandomSource(os.urandom)"


class SeededRandomSource:
    """Reproducible bytes from a seeded PCG64 generator. For tests only: not a CSPRNG."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._bits = np.random.PCG64(seed)  # test-only: deliberately seeded and insecure

    def randbytes(self, n: int) -> U8:
        """Return ``n`` bytes cut from PCG64 outputs."""
        words = np.asarray(self._bits.random_raw((n + 7) // 8), dtype=np.uint64)
        return words.view(np.uint8)[:n]

    def __repr__(self) -> str:
        return f"SeededRandomSource(seed={self.seed})"


_WORD_TYPES = ((8, np.uint8), (16, np.uint16), (32, np.uint32), (64, np.uint64))


def uniform_words(source: RandomSource, bits: int, n: int) -> I64:
    """Draw ``n`` uniform integers of ``bits`` bits (``1 <= bits <= 62``) as int64."""
    if not 1 <= bits <= 62:
        raise ValueError(f"between 1 and 62 bits per word, got {bits}")
    for width, dtype in _WORD_TYPES:
        if bits <= width:
            raw: npt.NDArray[np.unsignedinteger] = source.randbytes(n * width // 8).view(dtype)
            if bits < width:
                raw = np.bitwise_and(raw, (1 << bits) - 1, dtype=dtype)
            return raw.astype(np.int64)
    raise AssertionError("unreachable: 62 bits fit in a 64-bit word")


def uniform_below(source: RandomSource, modulus: int, n: int) -> I64:
    """Draw ``n`` exact uniform integers in ``[0, modulus)``.

    Parameters
    ----------
    source : RandomSource
        Where the random words come from.
    modulus : int
        Exclusive upper end, ``1 <= modulus <= 2**62``.
    n : int
        How many integers to draw.

    Returns
    -------
    numpy.ndarray of int64

    Notes
    -----
    Masks each word to the smallest power of two that covers ``modulus`` and rejects the
    words that land at or above it (no modulo bias). At most half of the words are
    rejected, so the expected number of rounds is at most two.
    """
    if not 1 <= modulus <= MAX_MODULUS:
        raise ValueError(f"modulus must lie in [1, 2**62], got {modulus}")
    out = np.empty(n, dtype=np.int64)
    if modulus == 1 or n == 0:
        out[:] = 0
        return out
    bits = (modulus - 1).bit_length()
    pending = np.arange(n)
    while pending.size:
        draws = uniform_words(source, bits, pending.size)
        if 1 << bits == modulus:
            out[pending] = draws
            break
        ok = draws < modulus
        out[pending[ok]] = draws[ok]
        pending = pending[~ok]
    return out


def bernoulli_one_over(source: RandomSource, k: int, n: int) -> Bools:
    """Draw ``n`` exact Bernoulli(1/k) trials for a positive integer ``k``."""
    if k == 1:
        return np.ones(n, dtype=np.bool_)
    return np.equal(uniform_below(source, k, n), 0)


def random_bits(source: RandomSource, n: int) -> Bools:
    """Draw ``n`` fair coin flips."""
    bits = np.unpackbits(source.randbytes((n + 7) // 8))
    return np.asarray(bits[:n], dtype=np.bool_)
