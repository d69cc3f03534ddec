"""How one release splits its ε among its measurements: the least total relative error.

Each statistic ``t`` states how the noise of each of its measurements ``i`` enters its own
error, as a weight ``c_ti``: the first-order coefficient of the measurement in the statistic
times the measurement's sensitivity ``Δ_i``, in the statistic's units, up to a factor common
to all of ``t``'s weights (:meth:`~pandas_dp.planning.statistics.base.Statistic.error_weights`).
With discrete Laplace noise of scale ``Δ_i / ε_i`` the statistic's variance is then, to first
order, ``V_t = 2 Σ_i c_ti² / ε_i²``.

Released alone, ``t`` would split ε to minimise ``V_t`` and reach
``V_t* = 2 (Σ_i |c_ti|^(2/3))³ / ε²``. A release of several statistics minimises the sum of
their *relative* variances ``Σ_t w_t V_t / V_t*`` (unit-free, so a sum in millions and a
mean in years weigh alike; ``w_t`` are the user's priorities, 1 by default) subject to
``Σ_i ε_i = ε``. Writing ``A_i = Σ_t w_t c_ti² / (Σ_j |c_tj|^(2/3))³``, the objective is
``Σ_i A_i / ε_i²`` up to a constant: convex, and by Lagrange's condition minimal at
``ε_i ∝ A_i^(1/3)``. One statistic alone therefore gets exactly its own best split (a mean's
count and centred sum share equally), and statistics that share a measurement pay for it
once.

Everything here reads public inputs only (bounds, the requested statistics, priorities).
For Gaussian noise the same shares are used: σ is close to proportional to ``Δ/ε`` at the
small ε where the split matters, so the rule is near-optimal there too.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from fractions import Fraction
from typing import TypeVar

K = TypeVar("K", bound=Hashable)

#: No measurement gets less than this fraction of an equal share (a weight of 0, as a
#: count multiplied by a centre of 0, must still leave a valid, positive ε).
_FLOOR = Fraction(1, 100)
#: Shares are whole multiples of ``1/_STEPS`` (exact, short in the ledger, and within
#: ``1/_STEPS`` of the optimum); of ``1/(_STEPS * 10**k)`` when a release has so many
#: measurements that the floor falls below one step (see :func:`_denominator`).
_STEPS = 10_000


def optimal_shares(
    needs: Sequence[K],
    weights: Sequence[tuple[float, Mapping[K, float]]],
) -> tuple[Fraction, ...]:
    """Each measurement's share of ε (exact fractions summing to 1), in ``needs`` order.

    Parameters
    ----------
    needs : sequence of hashable
        The release's distinct measurements.
    weights : sequence of (float, mapping)
        Per statistic: its priority ``w_t`` and its error weights ``{measurement: c_ti}``.
        A measurement no statistic weighs (private key selection's row count, say) is
        weighed as if one statistic of its own used it.

    Notes
    -----
    See the module's docstring for the rule and why it is optimal.
    """
    if len(needs) == 1:
        return (Fraction(1),)
    demand = dict.fromkeys(needs, 0.0)
    weighed: set[K] = set()
    for priority, model in weights:
        scale = sum(abs(c) ** (2 / 3) for c in model.values()) ** 3
        if scale == 0.0:
            continue
        for key, c in model.items():
            demand[key] += priority * c * c / scale
            weighed.add(key)
    for key in needs:
        if key not in weighed:
            demand[key] = 1.0  # alone, a single measurement's relative variance is c²/c² = 1
    roots = [demand[key] ** (1 / 3) for key in needs]
    if max(roots) - min(roots) <= 1e-12 * max(roots):
        return (Fraction(1, len(needs)),) * len(needs)  # exactly equal, as 1/3 not 3333/10000
    total = sum(roots)
    if not (math.isfinite(total) and total > 0):  # overflowed weights: no ratio to follow
        return (Fraction(1, len(needs)),) * len(needs)
    floor = float(_FLOOR) / len(needs)
    return _in_steps([max(r / total, floor) for r in roots])


def _denominator(count: int) -> int:
    """``_STEPS``, times the least power of 10 that leaves the floor a step or more.

    The floor is ``_FLOOR / count`` of ε (a little less once renormalised), so ``count``
    measurements need at least ``count / _FLOOR`` steps for the smallest to round to a step
    rather than be raised to one. Up to 100 measurements this is ``_STEPS`` itself.
    """
    steps = _STEPS
    while steps * _FLOOR < count:
        steps *= 10
    return steps


def _in_steps(weights: list[float]) -> tuple[Fraction, ...]:
    """``weights`` (positive, any sum) as exact positive shares summing to exactly 1.

    Simple fractions when rounding each share to a denominator of at most 100 already sums
    to 1 (and lies within ``1/20,000`` of it); otherwise whole steps of ``1/D`` with ``D``
    from :func:`_denominator` (``_STEPS`` up to 100 measurements).

    Largest remainders: each share is rounded down (to one step at least), then the steps
    left over go to the largest fractional parts. A share raised to one step may leave
    more steps handed out than ``D``; the excess is taken back one step at a time from the
    shares rounded up the most that keep a step, so the steps always sum to ``D`` exactly
    (never more: the shares are ε's split, and their sum is what the ledger charges).
    """
    total = sum(weights)
    simple = [Fraction(w / total).limit_denominator(100) for w in weights]
    close = all(abs(float(f) - w / total) <= 5e-5 for f, w in zip(simple, weights, strict=True))
    if close and sum(simple) == 1 and all(share > 0 for share in simple):
        return tuple(simple)  # (1/2, 1/6, 1/6, 1/6) as such, not as 1667/10000
    denominator = _denominator(len(weights))
    exact = [w / total * denominator for w in weights]
    steps = [max(1, int(x)) for x in exact]
    left = denominator - sum(steps)
    while left > 0:  # fewer than len(weights) (once): each rounded down by under a step
        by_remainder = sorted(range(len(exact)), key=lambda i: steps[i] - exact[i])
        for i in by_remainder[:left]:
            steps[i] += 1
        left -= min(left, len(exact))
    while left < 0:  # some share was raised to one step; len(weights) <= denominator
        over = sorted(
            (i for i in range(len(exact)) if steps[i] > 1), key=lambda i: exact[i] - steps[i]
        )
        for i in over[:-left]:
            steps[i] -= 1
        left += min(-left, len(over))
    assert sum(steps) == denominator
    assert min(steps) >= 1
    return tuple(Fraction(k, denominator) for k in steps)
