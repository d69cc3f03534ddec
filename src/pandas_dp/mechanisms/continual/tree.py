"""The binary tree mechanism for running totals, pure ε-DP.

See :mod:`~pandas_dp.mechanisms.continual` for the three strategies and their maths.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import numpy.typing as npt

from pandas_dp.budget import Budget
from pandas_dp.mechanisms.continual.strategies import (
    F64,
    MAX_BINS,
    MAX_ROWS_PER_UNIT,
    Strategy,
    _as_counts,
    _check_alpha,
    _check_int,
    laplace_sum_halfwidth,
)
from pandas_dp.mechanisms.laplace import DiscreteLaplace
from pandas_dp.mechanisms.random import I64

# --- the binary tree -------------------------------------------------------------------------


def tree_levels(bins: int) -> int:
    """``L = bins.bit_length()``: levels of complete dyadic blocks a prefix may use."""
    return bins.bit_length()


def _level_sizes(bins: int) -> list[int]:
    """Complete dyadic blocks per level: ``bins >> j`` for ``j < L``."""
    return [bins >> j for j in range(tree_levels(bins))]


def _split_levels(flat: np.ndarray, bins: int) -> list[np.ndarray]:
    """Cut the last axis of node values into levels (leaves first)."""
    out, start = [], 0
    for n in _level_sizes(bins):
        out.append(flat[..., start : start + n])
        start += n
    return out


def _node_sums(leaves: np.ndarray, bins: int) -> list[np.ndarray]:
    """Every complete dyadic block's sum of the last axis, level by level."""
    levels = [leaves]
    for n in _level_sizes(bins)[1:]:
        below = levels[-1]
        levels.append(below[..., 0 : 2 * n : 2] + below[..., 1 : 2 * n : 2])
    return levels


def _decomposition_sums(levels: list[np.ndarray], bins: int) -> np.ndarray:
    """Prefix ``t`` as the sum of the blocks of ``t``'s binary decomposition, for every ``t``.

    For each set bit ``j`` of ``t`` the block ending at ``(t >> j) << j``, i.e. block
    ``(t >> j) - 1`` of level ``j``, is used.
    """
    t = np.arange(1, bins + 1)
    out = np.zeros((*levels[0].shape[:-1], bins), dtype=levels[0].dtype)
    for j, level in enumerate(levels):
        used = np.flatnonzero((t >> j) & 1)
        out[..., used] += level[..., (t[used] >> j) - 1]
    return out


def _least_squares_levels(levels: list[np.ndarray]) -> list[np.ndarray]:
    """Ordinary least-squares node estimates from noisy nodes of equal variance.

    Hay et al. (2010), Theorem 3 with ``k = 2``, level by level (a node's weights depend only
    on its height ``ℓ``, leaves ``ℓ = 1``; the forest of complete blocks splits into
    independent perfect trees). Up: ``z = y`` at leaves, else ``z = α_ℓ y + β_ℓ Σ z_child``
    with ``α_ℓ = (2^ℓ - 2^{ℓ-1})/(2^ℓ - 1)`` and ``β_ℓ = (2^{ℓ-1} - 1)/(2^ℓ - 1)``. Down:
    ``x = z`` at a root, else ``x = z + (x_parent - z - z_sibling) / 2``.
    """
    z = [np.asarray(levels[0], dtype=np.float64)]
    for j in range(1, len(levels)):
        ell = j + 1
        n = levels[j].shape[-1]
        children = z[-1][..., 0 : 2 * n : 2] + z[-1][..., 1 : 2 * n : 2]
        whole = 2.0**ell - 1.0
        z.append(
            ((2.0**ell - 2.0 ** (ell - 1)) / whole) * levels[j]
            + ((2.0 ** (ell - 1) - 1.0) / whole) * children
        )
    x = [z[-1]] if z else []
    for j in range(len(levels) - 2, -1, -1):
        above = x[0]
        n_above = above.shape[-1]
        here = z[j].copy()
        covered = 2 * n_above  # blocks of level j with a parent: 0 .. 2 n_above - 1
        pair = z[j][..., 0:covered:2] + z[j][..., 1:covered:2]
        gap = np.repeat((above - pair) / 2.0, 2, axis=-1)
        here[..., :covered] += gap
        x.insert(0, here)
    return x


@dataclass(frozen=True)
class BinaryTree(Strategy):
    """The binary tree mechanism for running totals, pure ε-DP.

    ``bins`` and ``rows_per_unit`` (``k``) as in
    :class:`~pandas_dp.mechanisms.continual.Strategy`; the node vector's L1 sensitivity is
    ``k L`` with ``L = T.bit_length()``.

    Attributes
    ----------
    mechanism : DiscreteLaplace
        Scale ``k L / ε``.
    cost : Budget
        ``ε`` (pure).
    least_squares : bool
        Decode by least squares (default) or by the binary decomposition alone.
    """

    mechanism: DiscreteLaplace
    cost: Budget
    least_squares: bool = True

    @classmethod
    def plan(
        cls, bins: int, *, epsilon: object, rows_per_unit: int = 1, least_squares: bool = True
    ) -> BinaryTree:
        """Calibrate discrete Laplace noise of scale ``rows_per_unit · L / epsilon``."""
        bins = _check_int(bins, "bins", MAX_BINS)
        k = _check_int(rows_per_unit, "rows_per_unit", MAX_ROWS_PER_UNIT)
        budget = Budget.of(epsilon)
        mechanism = DiscreteLaplace.calibrated(k * tree_levels(bins), budget.epsilon)
        return cls(bins, k, mechanism, budget, bool(least_squares))

    @property
    def levels(self) -> int:
        """``L``, the number of levels (and the L1 sensitivity per row)."""
        return tree_levels(self.bins)

    @property
    def size(self) -> int:
        """Number of nodes: ``2T - popcount(T)``."""
        return sum(_level_sizes(self.bins))

    def measure(self, counts: npt.ArrayLike) -> I64:
        """Exact node sums of the clipped counts, leaves first, as one vector."""
        return np.concatenate(_node_sums(_as_counts(counts, self.bins), self.bins))

    def decode(self, noisy: I64) -> F64:
        """Prefix sums from noisy nodes (last axis); post-processing of the nodes only.

        Least squares is computed as ``plain(y) + LS(d) - plain(d)``, with ``d`` the
        inconsistency of ``y`` (each node minus the sum of its noisy leaves; zero on the
        leaves): least squares and the plain decomposition agree on consistent node vectors,
        so this equals ``LS(y)``, and when ``d = 0`` it is the exact integer ``plain(y)``.
        """
        noisy = np.asarray(noisy, dtype=np.int64)
        levels = _split_levels(noisy, self.bins)
        plain = _decomposition_sums(levels, self.bins)
        if not self.least_squares:
            return plain.astype(np.float64)
        consistent = _node_sums(levels[0], self.bins)
        d = [y - c for y, c in zip(levels, consistent, strict=True)]
        fitted = _least_squares_levels(d)
        correction = _decomposition_sums(fitted, self.bins) - _decomposition_sums(d, self.bins)
        return plain.astype(np.float64) + correction

    @cached_property
    def _weights(self) -> tuple[F64, F64]:
        """Per prefix, ``Σ w²`` and ``max |w|`` of its estimator's node weights."""
        t = np.arange(1, self.bins + 1)
        if not self.least_squares:
            ones = np.array([bin(int(v)).count("1") for v in t], dtype=np.float64)
            return ones, np.ones(self.bins)
        return _least_squares_weights(self.bins)

    def variance(self) -> F64:
        """Exact variance of each prefix's error: noise variance times ``Σ w²``."""
        return self._weights[0] * self.mechanism.variance()

    def halfwidth(self, alpha: float) -> F64:
        """Per prefix, ``h_t`` with ``P(|error_t| >= h_t) <= alpha``.

        The Chernoff bound of :func:`laplace_sum_halfwidth` for the weighted sum of node
        noises that makes up each prefix's error.
        """
        alpha = _check_alpha(alpha)
        norm2, wmax = self._weights
        return laplace_sum_halfwidth(norm2, wmax, float(self.mechanism.effective_scale), alpha)


def _least_squares_weights(bins: int, batch: int = 256) -> tuple[F64, F64]:
    """``Σ w²`` and ``max |w|`` of the least-squares prefix estimators' node weights.

    With ``M`` the node-by-leaf incidence matrix, the least-squares estimate of
    ``c^T x`` is ``w^T y`` with ``w = M u``, ``u = (M^T M)^{-1} c``, and ``Σ w² = c^T u``.
    ``u`` is the least-squares leaf estimate from the "measurements" ``c`` on the leaves
    and 0 on the other nodes (then ``M^T y = c``). Computed for ``batch`` prefixes at a
    time: ``O(T² log T)`` work.
    """
    norm2 = np.empty(bins)
    wmax = np.empty(bins)
    sizes = _level_sizes(bins)
    for start in range(0, bins, batch):
        t = np.arange(start + 1, min(bins, start + batch) + 1)
        c = (np.arange(bins)[None, :] < t[:, None]).astype(np.float64)
        levels = [c] + [np.zeros((t.size, n)) for n in sizes[1:]]
        u = _least_squares_levels(levels)[0]
        norm2[t - 1] = np.sum(u * c, axis=1)
        wmax[t - 1] = np.max(
            np.concatenate([np.abs(level) for level in _node_sums(u, bins)], axis=1), axis=1
        )
    return norm2, wmax


# --- the square-root factorization -----------------------------------------------------------
