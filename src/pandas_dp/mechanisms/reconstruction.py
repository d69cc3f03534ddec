"""From noisy marginals to consistent, non-negative tables (free post-processing).

Tables are numpy arrays with one axis per attribute of their clique (see
:mod:`pandas_dp.mechanisms.marginals`), in the clique's order.

1. **Least squares through residuals.** Each noisy marginal ``y_B`` gives, for every
   ``C ⊆ B``, an estimate of the residual of ``C`` (its marginal centred along each of its
   attributes) with variance ``σ_B² n_{B∖C}`` per coordinate, independent across ``C``; the
   precision-weighted average of these is the generalized least-squares estimate. Every
   table is then assembled from the residuals of its subsets, so all tables are marginals of
   one (signed) distribution: sums over any shared attribute agree exactly (Xiao et al.,
   NeurIPS 2023).
2. **Non-negativity.** The nearest consistent non-negative tables (a projection onto the
   intersection of a linear space, whose projection is the same residual average with equal
   noise, and the non-negative orthant) are approached by accelerated projected gradient on
   the dual. What negativity remains is removed exactly by mixing with a strictly positive
   consistent point (half the product of the one-way margins, half uniform, at the same
   total), with the smallest weight that makes every cell non-negative: the result is both
   consistent and non-negative, up to float rounding.

Everything here is total: it runs on released values and cannot fail on any of them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from pandas_dp.mechanisms.marginals import Clique, cells, subsets

F64 = np.ndarray
#: Alternating projections at most; each costs one pass over every table's subsets.
ITERATIONS = 500
#: Stop once the most negative cell is above this, relative to the total.
TOLERANCE = 1e-9


def marginalize(table: F64, clique: Clique, onto: Clique) -> F64:
    """The marginal of ``table`` (over ``clique``) on the subset ``onto``."""
    axes = tuple(i for i, a in enumerate(clique) if a not in onto)
    return np.asarray(table.sum(axis=axes)) if axes else table


def centre(table: F64) -> F64:
    """The table centred along each of its axes (its residual)."""
    out = np.array(table, dtype=np.float64)
    for axis in range(out.ndim):
        out -= out.mean(axis=axis, keepdims=True)
    return out


def residuals(
    tables: Mapping[Clique, F64], sigma2: Mapping[Clique, float], sizes: Sequence[int]
) -> dict[Clique, F64]:
    """Least-squares residuals of every subset of the tables' cliques.

    Table ``B`` estimates residual ``C`` with variance ``σ_B² n_{B∖C}`` per coordinate.
    Variances count relative to the smallest positive one, so the weights stay at most 1;
    a variance of 0 (noise so small that its float underflows, as ε = 1000 gives) makes its
    tables exact: they alone estimate the residuals they cover, the limit of least squares.
    """
    positive = [v for v in sigma2.values() if v > 0]
    unit = min(positive) if positive else 1.0
    exact = {c for b in tables if sigma2[b] <= 0 for c in subsets(b)}
    total: dict[Clique, F64] = {}
    weight: dict[Clique, float] = {}
    for b, table in tables.items():
        for c in subsets(b):
            if c in exact and sigma2[b] > 0:
                continue  # an exact table covers this residual
            relative = sigma2[b] / unit if sigma2[b] > 0 else 1.0
            w = cells(c, sizes) / (relative * cells(b, sizes))
            part = w * centre(marginalize(table, b, c))
            total[c] = total[c] + part if c in total else part
            weight[c] = weight.get(c, 0.0) + w
    return {c: total[c] / weight[c] for c in total}


def assemble(clique: Clique, parts: Mapping[Clique, F64], sizes: Sequence[int]) -> F64:
    """Table ``A`` from the residuals of its subsets: ``Σ_C lift(r_C) / n_{A∖C}``."""
    out = np.zeros(tuple(sizes[i] for i in clique))
    for c in subsets(clique):
        shape = tuple(sizes[i] if i in c else 1 for i in clique)
        out += parts[c].reshape(shape) * (cells(c, sizes) / cells(clique, sizes))
    return out


def project(
    tables: Mapping[Clique, F64], sizes: Sequence[int], *, total: bool = True
) -> dict[Clique, F64]:
    """The nearest consistent tables (Euclidean norm over all cells of all tables).

    With ``total=False``, the nearest consistent tables that sum to zero: the projection on
    the directions that keep a total unchanged.
    """
    equal = dict.fromkeys(tables, 1.0)
    parts = residuals(tables, equal, sizes)
    if not total:
        parts[()] = np.zeros_like(parts[()])
    return {a: assemble(a, parts, sizes) for a in tables}


def _positive_point(tables: Mapping[Clique, F64], sizes: Sequence[int]) -> dict[Clique, F64]:
    """Strictly positive consistent tables with the same total.

    Half the product of the (clamped) one-way margins, half the uniform distribution: both
    are marginals of one distribution, so their average is consistent too.
    """
    first = next(iter(tables))
    total = max(float(tables[first].sum()), 0.0)
    oneway: dict[int, F64] = {}
    for a, table in tables.items():
        for i in a:
            if i not in oneway:
                m = np.maximum(marginalize(table, a, (i,)), 0.0)
                oneway[i] = m / m.sum() if m.sum() > 0 else np.full(sizes[i], 1.0 / sizes[i])
    out = {}
    for a in tables:
        product = np.full((), total / 2)
        for i in a:
            product = np.multiply.outer(product, oneway[i])
        out[a] = np.asarray(product, dtype=np.float64) + total / (2 * cells(a, sizes))
    return out


def nonnegative(tables: Mapping[Clique, F64], sizes: Sequence[int]) -> dict[Clique, F64]:
    """Consistent, non-negative tables near the consistent ``tables`` (see the module notes).

    The total is kept: it is the least-squares estimate's (0 if that is negative), an
    unbiased estimate that clamping cells at zero would otherwise inflate. The nearest
    consistent non-negative tables with that total solve ``min ½‖t - z‖²``; the dual, over
    multipliers ``μ >= 0``, has ``t(μ) = z + P(μ)`` (``P`` the projection on consistent
    tables that sum to zero, of norm 1) and is maximised by accelerated projected gradient
    (FISTA, Beck & Teboulle 2009; step 1): ``μ ← max(0, μ - t(μ))``. Every iterate ``t(μ)``
    is consistent with that total; the remaining negativity is mixed away (module notes).
    """
    z = {a: np.array(t, dtype=np.float64) for a, t in tables.items()}
    first = next(iter(z))
    deficit = -min(float(z[first].sum()), 0.0)
    if deficit:  # a negative total: raised to 0 evenly over every cell (consistently)
        z = {a: t + deficit / t.size for a, t in z.items()}
    tolerance = TOLERANCE * max(abs(float(z[first].sum())), 1.0)
    mu = {a: np.zeros_like(v) for a, v in z.items()}
    ahead, momentum, t = mu, 1.0, z
    for _ in range(ITERATIONS):
        shift = project(ahead, sizes, total=False)
        t = {a: z[a] + shift[a] for a in z}
        if min(float(v.min()) for v in t.values()) >= -tolerance:
            break
        step = {a: np.maximum(ahead[a] - t[a], 0.0) for a in z}
        following = (1 + math.sqrt(1 + 4 * momentum * momentum)) / 2
        ahead = {a: step[a] + (momentum - 1) / following * (step[a] - mu[a]) for a in z}
        mu, momentum = step, following
    positive = _positive_point(t, sizes)
    weight = 1.0
    for a, v in t.items():
        negative = v < 0
        if negative.any():
            q = positive[a][negative]
            weight = min(weight, float(np.min(q / (q - v[negative]))))
    return {a: np.maximum(weight * t[a] + (1 - weight) * positive[a], 0.0) for a in t}


def consistent_tables(
    noisy: Mapping[Clique, F64], sigma2: Mapping[Clique, float], wanted: Sequence[Clique],
    sizes: Sequence[int], *, clamp: bool = True,
) -> dict[Clique, F64]:  # fmt: skip
    """The ``wanted`` marginals, mutually consistent (and non-negative with ``clamp``).

    Every wanted clique must lie under a measured one. Non-negativity is imposed on the
    wanted cliques that no other wanted clique contains; the others are their marginals.
    """
    return tables_from_residuals(residuals(noisy, sigma2, sizes), wanted, sizes, clamp=clamp)


def tables_from_residuals(
    parts: Mapping[Clique, F64], wanted: Sequence[Clique], sizes: Sequence[int], *,
    clamp: bool = True,
) -> dict[Clique, F64]:  # fmt: skip
    """The ``wanted`` marginals assembled from the residuals of their subsets.

    Consistent by construction (every table a marginal of one signed estimate); with
    ``clamp``, made non-negative as in :func:`nonnegative` on the wanted cliques that no
    other wanted clique contains, the others being their marginals.
    """
    unique = list(dict.fromkeys(wanted))
    top = [a for a in unique if not any(set(a) < set(b) for b in unique)]
    tables = {a: assemble(a, parts, sizes) for a in top}
    if clamp:
        tables = nonnegative(tables, sizes)
    out = {}
    for a in unique:
        home = next(b for b in top if set(a) <= set(b))
        out[a] = marginalize(tables[home], home, a)
    return out
