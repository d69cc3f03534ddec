"""Running totals: every prefix sum of a vector of ``T`` integer counts, released at once.

One row adds 1 to one of ``T`` time bins (``rows_per_unit`` rows per privacy unit). Three
strategies release all ``T`` prefix sums ``s_t = x_0 + ... + x_{t-1}`` (``t = 1 .. T``); each
returns them as float64, with analytic standard deviations and conservative half-widths per
prefix (index ``t - 1`` of every array is the prefix of length ``t``):

- :class:`~pandas_dp.mechanisms.continual.strategies.NoisyBins`, the baseline: noise on
  every bin, then a cumulative sum. Error of prefix ``t``: ``sqrt(t)`` noise standard
  deviations.
- :class:`~pandas_dp.mechanisms.continual.tree.BinaryTree`, pure ε-DP: the binary tree
  mechanism (Dwork, Naor, Pitassi & Rothblum 2010; Chan, Shi & Song 2011). Every complete
  dyadic block ``[i 2^j, (i+1) 2^j)`` inside
  ``[0, T)`` is measured with discrete Laplace noise; a row lies in at most one block per
  level, ``L = T.bit_length()`` levels, so the node vector has L1 sensitivity ``L`` and the
  scale is ``L k / ε``. A prefix is the sum of at most ``L`` nodes (its binary
  decomposition), or, by default, the least-squares estimate from all nodes (Hay, Rastogi,
  Miklau & Suciu 2010, the two-pass algorithm of their Theorem 3; Honaker 2015), which is
  post-processing of the noisy nodes only.
- :class:`~pandas_dp.mechanisms.continual.sqrt.SqrtFactorization`, ρ-zCDP: the square-root
  factorization (Fichtenberger, Henzinger & Upadhyay 2023; Henzinger & Upadhyay 2023). The
  all-ones lower-triangular
  ``A = R R`` with ``R`` the lower-triangular Toeplitz matrix of ``c_k = binom(2k, k)/4^k``;
  on the integer lattice we use ``R'`` of ``c'_k = round(c_k 2^s)`` (exact integers,
  ``c'_0 = 2^s``) and release ``y = R' x + z`` with ``z`` i.i.d. discrete Gaussian. One row
  moves ``y`` by a column of ``R'``, whose norm is at most that of the first column,
  ``Δ = sqrt(Σ_{k<T} c'_k²)``; ``k`` rows move it by at most ``k Δ`` (triangle inequality),
  so ``σ² >= k² Δ² / (2ρ)`` gives ρ-zCDP (Canonne, Kamath & Steinke 2020, Theorem 14).
  Prefixes are ``A R'^{-1} y`` (post-processing).

Exactness. All noise is exact integer noise (:class:`DiscreteLaplace`,
:class:`DiscreteGaussian`) added to exact integer measurements, so every released
measurement lies on the integer lattice whatever the data; decoding reads the noisy
measurements only. Decoding is also exact when the noise is zero: the prefix sums are then
``np.cumsum(counts)`` exactly (decoders split the measurements into an integer part, decoded
in integers, and a residual that is zero for consistent measurements).

Totality. Counts are clipped silently to ``[0, MAX_COUNT]`` (clipping each coordinate is
1-Lipschitz, so the sensitivities hold), which keeps every integer sum inside int64:
validation reads only public inputs (``T``, ``rows_per_unit``, shapes, dtypes).

References
----------
T.-H. H. Chan, E. Shi and D. Song, "Private and continual release of statistics", ACM TISSEC
2011. C. Dwork, M. Naor, T. Pitassi and G. Rothblum, "Differential privacy under continual
observation", STOC 2010. M. Hay, V. Rastogi, G. Miklau and D. Suciu, "Boosting the accuracy of
differentially private histograms through consistency", VLDB 2010. J. Honaker, "Efficient use
of differentially private binary trees", TPDP 2015. H. Fichtenberger, M. Henzinger and J.
Upadhyay, "Constant matters: fine-grained error bound on differentially private continual
observation", ICML 2023. M. Henzinger and J. Upadhyay, "Almost tight error bounds on
differentially private continual counting", SODA 2023. C. Canonne, G. Kamath and T. Steinke,
"The discrete Gaussian for differential privacy", NeurIPS 2020.
"""

from pandas_dp.mechanisms.continual.sqrt import SqrtFactorization, sensitivity_squared
from pandas_dp.mechanisms.continual.strategies import MAX_COUNT, NoisyBins, Strategy
from pandas_dp.mechanisms.continual.tree import BinaryTree, tree_levels

__all__ = [
    "MAX_COUNT",
    "BinaryTree",
    "NoisyBins",
    "SqrtFactorization",
    "Strategy",
    "sensitivity_squared",
    "tree_levels",
]
