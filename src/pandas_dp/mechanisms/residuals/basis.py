"""An integer orthogonal basis of the residual space ``1^⊥`` of one attribute, applied fast.

For a domain of ``n`` keys the keys split into blocks whose sizes are the powers of two of
``n``'s binary expansion, largest first (block ``j`` starts at ``S_{j-1}``, the keys before
it, and has ``s_j`` keys; ``S_{j-1}`` is a multiple of ``s_j``). The rows, in this order:

- inside each block, the rows of the Sylvester Hadamard matrix ``H_{s_j}`` but its first
  (``s_j - 1`` rows of ±1, orthogonal to the block's ones and to one another);
- for each block ``j >= 2``, ``u_j = (S_{j-1}/s_j)·1_{B_j} - 1_{B_<j}``: constant on each
  block, so orthogonal to every Hadamard row; ``⊥ 1``; and orthogonal to ``u_l`` (``l < j``),
  which lies where ``u_j`` is constant and sums to zero.

``n - 1`` mutually orthogonal rows ``⊥ 1``: an orthogonal basis of ``1^⊥``, so
``Σ_k f_k f_kᵀ / N_k = I - J/n`` with ``N_k = ||f_k||²``: ``s_j`` for a Hadamard row,
``S_{j-1} S_j / s_j`` for ``u_j``. At most ``2b - 1`` distinct norms for ``b`` blocks.

The basis is never built as a matrix on the release path: :func:`forward` (``F x``, exact for
integer or Python-int arrays) and :func:`backward` (``Σ_k f_k y_k / N_k``, floats) run the fast
Walsh–Hadamard transform in each block and prefix sums between blocks, ``O(n log n)`` per
vector, so a column of 10**6 keys costs what its marginal does. :func:`basis` is the dense
matrix, for tests and small domains.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]


@cache
def blocks(n: int) -> tuple[tuple[int, int], ...]:
    """``(start, size)`` of each block, largest first (the binary expansion of ``n``)."""
    if n < 1:
        raise ValueError(f"a domain needs at least one key, got {n}")
    out, start = [], 0
    for b in reversed(range(n.bit_length())):
        if n >> b & 1:
            out.append((start, 1 << b))
            start += 1 << b
    return tuple(out)


@cache
def norms(n: int) -> I64:
    """``N_k = ||f_k||²`` of each row, in the basis' order."""
    parts = [np.full(size - 1, size, dtype=np.int64) for _, size in blocks(n)]
    between = [start * (start + size) // size for start, size in blocks(n)[1:]]
    out = np.concatenate([*parts, np.array(between, dtype=np.int64)])
    out.setflags(write=False)
    return out


def largest_entry(n: int) -> int:
    """The largest absolute entry of the basis (1, or ``S_{j-1}/s_j`` of the last block)."""
    return max([1] + [start // size for start, size in blocks(n)[1:]])


@cache
def basis(n: int) -> I64:
    """The ``(n - 1) × n`` matrix of the rows (dense: for tests and small domains)."""
    out = forward(np.eye(n, dtype=np.int64)).T.copy()
    out.setflags(write=False)
    return out


def _hadamard(x: Any) -> Any:
    """``H_s x`` along the last axis (``s`` a power of two; Sylvester order), exactly.

    The iterative fast Walsh–Hadamard transform: at step ``h`` every pair of entries ``h``
    apart within a run of ``2h`` becomes (sum, difference). Integer, float or object arrays.
    """
    s, lead = x.shape[-1], x.shape[:-1]
    h = 1
    while h < s:
        pairs = x.reshape(*lead, s // (2 * h), 2, h)
        first, second = pairs[..., 0, :], pairs[..., 1, :]
        x = np.stack([first + second, first - second], axis=-2).reshape(*lead, s)
        h *= 2
    return x


def forward(x: Any) -> Any:
    """``F x`` along the last axis (``n`` to ``n - 1`` values), in ``x``'s own dtype.

    Each value is a signed sum of ``x``'s entries times at most :func:`largest_entry`.
    """
    n = x.shape[-1]
    parts, sums = [], []
    for start, size in blocks(n):
        segment = x[..., start : start + size]
        parts.append(_hadamard(segment)[..., 1:])
        sums.append(segment.sum(axis=-1))
    before = sums[0]
    for (start, size), total in zip(blocks(n)[1:], sums[1:], strict=True):
        parts.append(((start // size) * total - before)[..., None])
        before = before + total
    return np.concatenate(parts, axis=-1)


def backward(y: Any, n: int) -> F64:
    """``Σ_k f_k y_k / N_k`` along the last axis (``n - 1`` values to ``n``), in floats.

    ``H`` is symmetric, so each block's part is ``H_s`` applied to its coefficients with a
    zero in place of the dropped first row; each ``u_j`` adds its coefficient times
    ``S_{j-1}/s_j`` on block ``j`` and subtracts it on the blocks before.
    """
    c = np.asarray(y, dtype=np.float64) / norms(n)
    lead = c.shape[:-1]
    out = np.empty((*lead, n))
    position = 0
    for start, size in blocks(n):
        padded = np.concatenate([np.zeros((*lead, 1)), c[..., position : position + size - 1]], -1)
        out[..., start : start + size] = _hadamard(padded)
        position += size - 1
    for start, size in blocks(n)[1:]:
        coefficient = c[..., position, None]
        out[..., start : start + size] += (start // size) * coefficient
        out[..., :start] -= coefficient
        position += 1
    return out
