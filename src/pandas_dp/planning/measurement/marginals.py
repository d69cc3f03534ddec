"""Calibration of a workload's marginals: discrete Gaussian or Laplace noise, jointly.

The strategy (:func:`~pandas_dp.mechanisms.marginals.choose_strategy`) gives each measured
marginal ``B`` a share ``s_B`` of the budget. One privacy unit (at most ``k`` rows) changes each
marginal by at most ``k`` (in L1 and in L2 norm).

- *Gaussian* (shares of ρ): marginal ``B`` gets discrete Gaussian noise with ``σ_B² = k² /
  (2 ρ s_B)`` (rounded up for the exact sampler) and is ``k²/(2σ_B²)``-zCDP (Canonne, Kamath
  & Steinke 2020, Thm. 4); together the marginals are ``<= ρ``-zCDP. ``ρ`` is the largest
  whose conversion (CKS20, Cor. 13) gives the release's ``(ε, δ)``; in a ρ-zCDP session a
  release of ``epsilon=ε`` spends ``ρ = ε²/2``, as a pure ε-DP release would. Each ledger line
  records its marginal's ``σ²`` (hence ``ρ``) and its share ``s_B`` of the release's (ε, δ),
  so that the lines add up to exactly what the whole release guarantees.
- *Laplace* (shares of ε): marginal ``B`` gets discrete Laplace noise of scale ``k / (ε s_B)``
  and is ``ε s_B``-DP; together ``ε``-DP (sequential composition), δ = 0.

Everything here depends on public parameters only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, cast

import numpy as np

from pandas_dp.accounting.events import GaussianMeasurement, LaplaceMeasurement, Measurement
from pandas_dp.measures.aggregates import Aggregate, Axis, JointCounts
from pandas_dp.mechanisms.gaussian.calibration import calibrate_sigma_zcdp
from pandas_dp.mechanisms.gaussian.discrete import DiscreteGaussian, exact_sigma2
from pandas_dp.mechanisms.laplace import DiscreteLaplace
from pandas_dp.mechanisms.marginals import Clique, Strategy, cells, residual_dimension
from pandas_dp.mechanisms.random import I64
from pandas_dp.mechanisms.reconstruction import marginalize
from pandas_dp.mechanisms.residuals.planner import ResidualPlan, measure, row_norms
from pandas_dp.planning.measurement.keys import MeasurementKey
from pandas_dp.planning.measurement.kinds import Marginal, Residual
from pandas_dp.planning.measurement.parts import Noise, Part, add_noise

if TYPE_CHECKING:
    from pandas_dp.planning.noise import NoiseSource


@dataclass(frozen=True)
class MarginalPart(Part):
    """One noisy marginal: the cells of ``clique`` (attribute positions), flattened.

    The engine counts the cells of ``home`` (a superset, shared by the marginals under it);
    the release's ``derive`` step sums them down to ``clique`` before noise is added.
    """

    clique: Clique = ()
    home: Clique = ()

    @property
    def variance(self) -> float:
        """The noise's variance (for Gaussian noise, slightly below ``σ²``)."""
        return self.mechanism.variance()

    def release(self, exact: Aggregate, source: NoiseSource) -> Aggregate:
        """One independent noise variate per cell."""
        flat = np.asarray(exact).reshape(-1)
        return add_noise(cast(Aggregate, flat), source.draw(self.mechanism, flat.size))

    def from_home(self, table: np.ndarray) -> Aggregate:
        """The exact marginal, summed (in integers) from the table of the home clique."""
        return cast(Aggregate, marginalize(table, self.home, self.clique))


@dataclass(frozen=True)
class ResidualPart(MarginalPart):
    """One noisy residual (ResidualPlanner): the basis values ``F_A m_A`` of ``clique``.

    The exact marginal of ``clique`` is summed from its home's table, then multiplied by
    the integer orthogonal basis (:func:`~pandas_dp.mechanisms.residuals.planner.measure`).
    Every value gets an independent discrete Gaussian variate from the mechanism of its
    row's norm: ``noises[g]`` for the rows of norm ``norms[g]`` (public, from the sizes).
    ``mechanism`` is the base one the ledger records (a row of norm ``Π n_i``).
    """

    sizes: tuple[int, ...] = ()
    norms: tuple[int, ...] = ()
    noises: tuple[DiscreteGaussian, ...] = ()

    @property
    def variance(self) -> float:
        """The largest noise variance per unit of norm, times ``Π n_i`` (the base variance).

        The estimate's covariance is at most this over ``Π n_i``, times ``P_A``.
        """
        width = cells(self.clique, self.sizes)
        return max(m.variance() * width / n for m, n in zip(self.noises, self.norms, strict=True))

    def from_home(self, table: np.ndarray) -> Aggregate:
        """``F_A m_A`` in exact integers, flattened."""
        marginal = marginalize(table, self.home, self.clique)
        return cast(Aggregate, measure(marginal, self.clique, self.sizes))

    def release(self, exact: Aggregate, source: NoiseSource) -> Aggregate:
        """One independent variate per value, of its row's mechanism."""
        flat = np.asarray(exact).reshape(-1)
        return add_noise(cast(Aggregate, flat), self.noise(source.draw))

    def noise(self, draw: Callable[[DiscreteGaussian, int], I64]) -> I64:
        """The noise of every value, drawn by ``draw(mechanism, n)`` one norm at a time.

        Which values share a norm is public (the sizes alone), so are the draws' sizes.
        """
        values = row_norms(self.clique, self.sizes)
        out = np.zeros(values.size, dtype=np.int64)
        for norm, mechanism in zip(self.norms, self.noises, strict=True):
            where = values == norm
            out[where] = draw(mechanism, int(where.sum()))
        return out


def release_rho(epsilon: Fraction, delta: Fraction | None) -> float:
    """The ρ a release of ``(ε, δ)`` may spend (``ε²/2`` in a ρ session: ``delta`` None)."""
    if delta is None:
        return float(epsilon) ** 2 / 2
    sigma = calibrate_sigma_zcdp(float(epsilon), float(delta), 1)
    return 1.0 / (2.0 * sigma * sigma)


#: The least share of a release's ε or ρ a measured marginal gets: the smallest that
#: rounding to a denominator of 10⁹ leaves non-zero, so only shares that rounded to 0 move.
#: The optimiser gives a table that adds nothing (one over a one-key column) about 1e-10,
#: and a zero share would calibrate noise for ε = 0.
MIN_SHARE = Fraction(1, 10**9)


def exact_shares(shares: Sequence[float]) -> tuple[Fraction, ...]:
    """Float shares as positive fractions summing to exactly 1.

    The last takes the rest, unless that would leave it below :data:`MIN_SHARE` (a last
    table that adds nothing): then it gets that least share and the largest the rest.
    """
    fractions = [max(Fraction(s).limit_denominator(10**9), MIN_SHARE) for s in shares]
    rest = 1 - sum(fractions[:-1], Fraction(0))
    if rest >= MIN_SHARE:
        return (*fractions[:-1], rest)
    largest = max(range(len(fractions)), key=fractions.__getitem__)
    fractions[largest] += 1 - sum(fractions, Fraction(0))
    return tuple(fractions)


def marginal_noise(
    label: str, epsilon: Fraction, delta: Fraction | None, rho: float | None, k: int
) -> tuple[Noise, Measurement]:
    """Laplace noise for ``epsilon`` (``rho`` None), else Gaussian noise for ``rho``."""
    if rho is None:
        laplace = DiscreteLaplace.calibrated(k, epsilon)
        return laplace, LaplaceMeasurement(label, laplace.name, epsilon, k, laplace.effective_scale)
    gauss = DiscreteGaussian(exact_sigma2(k / math.sqrt(2.0 * rho) * (1 + 1e-12)))
    return gauss, GaussianMeasurement(
        label, gauss.name, epsilon, k, gauss.scale,
        delta=delta or Fraction(0), sigma2=gauss.sigma2,
    )  # fmt: skip


def clique_counts(axes: Sequence[Axis], pair: Clique) -> JointCounts:
    """The table of ``pair`` (any clique), over the rows inside every axis."""
    others = tuple(a for n, a in enumerate(axes) if n not in pair)
    return JointCounts(tuple(axes[n] for n in pair), within=others)


def marginal_parts(
    strategy: Strategy,
    axes: Sequence[Axis],
    homes: Sequence[Clique],
    epsilon: Fraction,
    delta: Fraction | None,
    rows_per_unit: int,
) -> dict[MeasurementKey, MarginalPart]:
    """The calibrated noisy marginals of ``strategy``, keyed like the planner's measurements.

    ``axes`` are the attributes (in position order); ``homes`` the cliques the engine counts,
    one per measured marginal (each a superset of it).
    """
    rho = release_rho(epsilon, delta)
    shares = exact_shares(strategy.shares)
    parts: dict[MeasurementKey, MarginalPart] = {}
    for clique, share, home in zip(strategy.cliques, shares, homes, strict=True):
        key = Marginal(tuple(axes[i].column for i in clique))
        gaussian = strategy.noise != "laplace"
        noise, record = marginal_noise(
            key.label, epsilon * share, delta and delta * share,
            rho * float(share) if gaussian else None, rows_per_unit,
        )  # fmt: skip
        parts[key] = MarginalPart(
            key.label, clique_counts(axes, home), noise, record, clique=clique, home=home
        )
    return parts


def residual_parts(
    plan: ResidualPlan,
    axes: Sequence[Axis],
    homes: Sequence[Clique],
    epsilon: Fraction,
    delta: Fraction | None,
    rows_per_unit: int,
) -> dict[MeasurementKey, MarginalPart]:
    """The calibrated noisy residuals of ``plan`` (ResidualPlanner), keyed like marginals.

    Residual ``A`` at share ``s_A`` of the release's ρ has base variance ``v_A = k² d_A /
    (2 ρ s_A)`` (``d_A = Π (n_i - 1)``): each basis value of norm ``N`` gets discrete
    Gaussian noise of ``σ² >= v_A N / Π n_i``, and one unit of ``k`` rows costs at most
    ``k² d_A / (2 v)`` with ``v`` the smallest ``σ² Π n_i / N`` sampled
    (:mod:`~pandas_dp.mechanisms.residuals.planner`). The ledger line records that ``v`` as
    ``sigma2``, ``coordinates = d_A`` and ``sensitivity = k``: exactly that ρ, ``<= s_A ρ``.
    """
    rho = release_rho(epsilon, delta)
    shares = exact_shares(plan.shares)
    parts: dict[MeasurementKey, MarginalPart] = {}
    for clique, share, home in zip(plan.cliques, shares, homes, strict=True):
        key = Residual(tuple(axes[i].column for i in clique))
        coordinates = residual_dimension(clique, plan.sizes)
        base = rows_per_unit**2 * coordinates / (2.0 * rho * float(share))
        norms, noises, sigma2 = _row_noises(clique, plan.sizes, base)
        noise = DiscreteGaussian(sigma2)
        record = GaussianMeasurement(
            key.label, noise.name, epsilon * share, rows_per_unit, noise.scale,
            delta=Fraction(0) if delta is None else delta * share, coordinates=coordinates,
            sigma2=sigma2,
        )  # fmt: skip
        parts[key] = ResidualPart(
            key.label, clique_counts(axes, home), noise, record, clique=clique, home=home,
            sizes=plan.sizes, norms=norms, noises=noises,
        )  # fmt: skip
    return parts


def _row_noises(
    clique: Clique, sizes: tuple[int, ...], base: float
) -> tuple[tuple[int, ...], tuple[DiscreteGaussian, ...], Fraction]:
    """The distinct row norms ``N`` and a mechanism of ``σ² >= base·N/Π n_i`` for each.

    Also the exact base variance they guarantee: the smallest ``σ² Π n_i / N``.
    """
    width = cells(clique, sizes)
    norms = tuple(int(n) for n in np.unique(row_norms(clique, sizes)))
    # A hair above each exact σ, so float rounding can only add noise.
    noises = tuple(
        DiscreteGaussian(exact_sigma2(math.sqrt(base * n / width) * (1 + 1e-12))) for n in norms
    )
    return norms, noises, min(m.sigma2 * width / n for m, n in zip(noises, norms, strict=True))
