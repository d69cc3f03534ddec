"""Sources of uniformly random bits, and exact uniform integers drawn from them.

Every sampler in :mod:`pandas_dp.mechanisms` reads its randomness through a
:class:`RandomSource`. Production code uses :class:`SystemRandomSource`, which reads the
operating system's CSPRNG (``os.urandom``, i.e. ``getrandom(2)`` on Linux) in blocks of
:data:`BLOCK_BYTES` and hands each byte out once (a release asks for bytes about a hundred
times, mostly a few at a time; one system call per block instead of one per request). A
seeded source exists so that tests can be reproducible; it is *not* cryptographically secure
and callers that create one must warn (see :func:`pandas_dp.api.session`).

Only integer operations are used here: no floating point touches a random value, so every
probability the samplers realise is an exact rational number.
"""

from __future__ import annotations

import math
import os
import threading
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


#: Size of one read from the OS CSPRNG. Requests of at least this many bytes bypass the
#: buffer and read the OS directly (their own call costs nothing next to their size).
BLOCK_BYTES = 1 << 16


class _EntropyBuffer:
    """One process-wide block of ``os.urandom`` bytes, handed out front to back, once each.

    A lock makes taking bytes atomic across threads. A child made by :func:`os.fork` starts
    with an empty buffer (and a fresh lock), so it never hands out the bytes its parent
    holds: :func:`os.register_at_fork` clears it (C code that forks runs the same hook
    through ``PyOS_AfterFork_Child``), and the owning process id is checked on every take
    as well.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._block: U8 = np.empty(0, dtype=np.uint8)
        self._used = 0
        self._pid = os.getpid()

    def take(self, n: int) -> U8:
        """``n`` bytes never handed out before (a copy: the caller may keep it)."""
        if n >= BLOCK_BYTES:
            return np.frombuffer(os.urandom(n), dtype=np.uint8)
        with self._lock:
            if self._pid != os.getpid():
                self._clear()
            if self._used + n > self._block.size:
                # The unused tail is dropped, never reused: every byte goes out at most once.
                self._block = np.frombuffer(os.urandom(BLOCK_BYTES), dtype=np.uint8)
                self._used = 0
            start = self._used
            self._used = start + n
            return self._block[start : start + n].copy()

    def clear_after_fork(self) -> None:
        """Forget the parent's bytes (and a lock another thread may have held at fork)."""
        self._lock = threading.Lock()
        self._clear()

    def _clear(self) -> None:
        self._block, self._used, self._pid = np.empty(0, dtype=np.uint8), 0, os.getpid()


_ENTROPY = _EntropyBuffer()
if hasattr(os, "register_at_fork"):  # POSIX; Windows has no fork
    os.register_at_fork(after_in_child=_ENTROPY.clear_after_fork)


class SystemRandomSource:
    """Uniform bytes from the operating system's CSPRNG (``os.urandom``), read in blocks."""

    def randbytes(self, n: int) -> U8:
        """Return ``n`` uniform bytes from ``os.urandom`` (buffered; each byte used once)."""
        return _ENTROPY.take(n)

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
    words that land at or above it (no modulo bias). The accepted words of an i.i.d. stream
    of uniform words are i.i.d. uniform below ``modulus``, and so are the first ``n`` of them:
    each batch draws enough words that it usually yields all ``n`` (at most half of the words
    are rejected), and a shortfall is made up from a further batch. A modulus ``m · 2**k``
    with ``k >= 8`` (lattice scales often are) draws ``V`` below ``m`` and a ``k``-bit word
    ``W``, independent: ``V · 2**k + W`` is uniform below the modulus (each value is one pair),
    in fewer random bytes than whole words below the modulus.
    """
    if not 1 <= modulus <= MAX_MODULUS:
        raise ValueError(f"modulus must lie in [1, 2**62], got {modulus}")
    if modulus == 1 or n == 0:
        return np.zeros(n, dtype=np.int64)
    bits = (modulus - 1).bit_length()
    if 1 << bits == modulus:
        return uniform_words(source, bits, n)
    shift = (modulus & -modulus).bit_length() - 1  # modulus = odd part << shift
    if shift >= 8:  # V << shift | W, V uniform below the odd part, W a uniform shift-bit word
        high = uniform_below(source, modulus >> shift, n)
        return (high << shift) | uniform_words(source, shift, n)
    spare = (1 << bits) - modulus  # rejected words per ``modulus`` accepted ones
    parts: list[I64] = []
    need = n
    while need:
        draws = uniform_words(
            source, bits, need + need * spare // modulus + 2 * math.isqrt(need) + 8
        )
        parts.append(draws[draws < modulus][:need])
        need -= parts[-1].size
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def uniform_below_each(source: RandomSource, moduli: I64) -> I64:
    """One exact uniform integer in ``[0, moduli[i])`` for each entry ``i``.

    Each entry's words are masked to the smallest power of two ``W_i >= moduli[i]`` and
    rejected at or above ``moduli[i]`` (no modulo bias): a masked uniform word is uniform
    below ``W_i``, and conditioned on being below ``moduli[i]`` it is uniform there. Entries
    whose word was rejected (probability below 1/2 each) draw again, independently. Moduli
    lie in ``[1, 2**62]``.
    """
    moduli = np.asarray(moduli, dtype=np.int64)
    if moduli.size and (moduli.min() < 1 or moduli.max() > MAX_MODULUS):
        raise ValueError("moduli must lie in [1, 2**62]")
    width = np.ones(moduli.shape, dtype=np.int64)
    while (short := width < moduli).any():
        width[short] *= 2
    result = np.zeros(moduli.shape, dtype=np.int64)
    pending = np.flatnonzero(moduli > 1)
    bits = int(width.max(initial=1)).bit_length() - 1
    while pending.size:
        words = uniform_words(source, max(bits, 1), pending.size) & (width[pending] - 1)
        ok = words < moduli[pending]
        result[pending[ok]] = words[ok]
        pending = pending[~ok]
    return result


def bernoulli_ratio(source: RandomSource, numerators: I64, denominator: int | I64) -> Bools:
    """Exact Bernoulli(``numerators / denominator``) trials, ``0 <= numerators <= denominator``.

    Notes
    -----
    Trial ``i`` succeeds when ``W_i < x_i = numerators[i] / denominator`` for ``W_i``
    uniform on ``[0, 1)``, which has probability exactly ``x_i``. ``W_i`` is never drawn in
    full: its base-``2**c`` digits are uniform ``c``-bit words, drawn one at a time, and
    compared with the digits of ``x_i`` (``d = (r << c) // denominator`` and
    ``r <- (r << c) mod denominator`` from ``r = numerators[i]``; ``x_i = 1`` reads as the digit
    ``2**c``, above every word). The first digit where they differ decides the trial; a
    trial is still undecided after a digit with probability ``2**-c``. So a trial costs
    ``c / 8`` bytes instead of a whole word below ``denominator``. ``c`` is 16, or 8 for
    denominators above ``2**46``, so that ``r << c`` fits int64; denominators up to
    ``2**16`` or above ``2**54`` compare one uniform integer below ``denominator`` instead.
    An array of denominators (one per trial, each in ``[1, 2**54]``) is compared digit by
    digit.
    """
    remainders = np.asarray(numerators, dtype=np.int64)
    if isinstance(denominator, np.ndarray):
        largest = int(denominator.max(initial=1))
        if denominator.size and (int(denominator.min()) < 1 or largest > 1 << 54):
            raise ValueError("denominators must lie in [1, 2**54]")
        return _below_digits(source, remainders, denominator, 16 if largest <= 1 << 46 else 8)
    if not 1 <= denominator <= MAX_MODULUS:
        raise ValueError(f"denominator must lie in [1, 2**62], got {denominator}")
    if denominator <= 1 << 16 or denominator > 1 << 54:
        return uniform_below(source, denominator, numerators.size) < numerators
    return _below_digits(source, remainders, denominator, 16 if denominator <= 1 << 46 else 8)


def _below_digits(
    source: RandomSource, remainders: I64, denominator: int | I64, bits: int
) -> Bools:
    """Whether uniform ``W_i < remainders[i] / denominator``, digit by digit (see above)."""
    scaled = remainders << bits
    digits = scaled // denominator
    words = uniform_words(source, bits, remainders.size)
    result = words < digits
    tied = (words == digits).nonzero()[0]
    if tied.size:  # the next digit decides (a tie has probability 2**-bits)
        rest = (scaled - digits * denominator)[tied]
        den = denominator[tied] if isinstance(denominator, np.ndarray) else denominator
        result[tied] = _below_digits(source, rest, den, bits)
    return result


def bernoulli_one_over(source: RandomSource, k: int, n: int) -> Bools:
    """Draw ``n`` exact Bernoulli(1/k) trials for a positive integer ``k``."""
    if k == 1:
        return np.ones(n, dtype=np.bool_)
    return np.equal(uniform_below(source, k, n), 0)


def random_bits(source: RandomSource, n: int) -> Bools:
    """Draw ``n`` fair coin flips."""
    bits = np.unpackbits(source.randbytes((n + 7) // 8))
    return np.asarray(bits[:n], dtype=np.bool_)
