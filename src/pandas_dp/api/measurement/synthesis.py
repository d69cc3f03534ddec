"""Calibration of MST's measurements: one-way marginals, a tree chosen privately, its pairs.

A third of the budget measures every one-way marginal, a third chooses the ``d - 1`` pairs of
a spanning tree (the exponential mechanism, one round per pair, each joining two parts of the
tree so far), and a third measures the chosen pairs (McKenna, Miklau & Sheldon 2021).

- With δ > 0 (or in a ρ session) the marginals get discrete Gaussian noise. In an (ε, δ)
  session the marginals together get ``(2ε/3, δ)`` (a ρ that converts to it) and the tree
  ``ε/3`` (pure): basic composition gives ``(ε, δ)``, which every accountant can check. In a
  ρ session (``epsilon=ε`` spends ``ρ = ε²/2``) the marginals get ``2ρ/3`` and the tree
  ``ε_tree = sqrt(2ρ/3)`` (a pure ``ε_tree`` costs ``ε_tree²/2``).
- With δ = 0 the marginals get discrete Laplace noise, ``ε/3`` for the one-way ones and
  ``ε/3`` for the pairs, split equally.

A unit with ``k`` rows changes each marginal by ``k`` and each pair's score by ``k`` (plus
the scores' rounding). The tree's and the pairs' measurements are *staged*: they read the
noisy one-way marginals (and the tree) released before them, which adaptive composition
allows. Everything here depends on public parameters only.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from pandas_dp.accounting.events import (
    GaussianMeasurement,
    LaplaceMeasurement,
    Measurement,
    SelectionMeasurement,
)
from pandas_dp.api.measurement.choices import SelectPart
from pandas_dp.api.measurement.keys import MeasurementKey
from pandas_dp.api.measurement.marginals import MarginalPart, release_rho
from pandas_dp.api.measurement.parts import Noise, Part, add_noise
from pandas_dp.engines.plan import Aggregate, Axis, JointCounts, ManyTables
from pandas_dp.mechanisms.exponential import ExponentialMechanism
from pandas_dp.mechanisms.gaussian import DiscreteGaussian, exact_sigma2
from pandas_dp.mechanisms.laplace import DiscreteLaplace
from pandas_dp.mechanisms.marginals import Clique
from pandas_dp.mechanisms.tree_model import SCORE_STEPS, independence_scores, joining

if TYPE_CHECKING:
    from pandas_dp.api.session import Session

#: The tree's key; ``level`` sets it (and the pairs' keys) apart from any column's marginal.
TREE = MeasurementKey("marginal", ("tree",), level=0)


def clique_tables(exact: Aggregate, cliques: Sequence[Clique], sizes: Sequence[int]) -> list[Any]:
    """The exact tables of ``cliques``, from their cells side by side."""
    flat = np.asarray(exact).reshape(-1)
    out, start = [], 0
    for clique in cliques:
        shape = [sizes[i] for i in clique]
        stop = start + math.prod(shape)
        out.append(flat[start:stop].reshape(shape))
        start = stop
    return out


@dataclass(frozen=True)
class TreeChoicePart(SelectPart):
    """The ``rounds`` pairs of a spanning tree, by the exponential mechanism (staged)."""

    pairs: tuple[Clique, ...] = ()
    oneway: tuple[MeasurementKey, ...] = ()
    sizes: tuple[int, ...] = ()

    def release_after(
        self, exact: Aggregate, session: Session, noisy: dict[MeasurementKey, Any]
    ) -> Aggregate:
        """Positions (among :attr:`pairs`) of the chosen pairs, in the order chosen."""
        oneway = {i: np.asarray(noisy[key], dtype=np.float64) for i, key in enumerate(self.oneway)}
        tables = clique_tables(exact, self.pairs, self.sizes)
        scores = independence_scores(self.pairs, tables, oneway)
        each = dataclasses.replace(self.mechanism, epsilon=self.mechanism.epsilon / self.rounds)
        chosen: list[int] = []
        for _ in range(self.rounds):
            candidates = joining(self.pairs, chosen, len(self.sizes))
            pick = session.choose(each, -scores[candidates][None, :], SCORE_STEPS)
            chosen.append(int(candidates[int(pick[0])]))
        return np.asarray(chosen, dtype=np.int64)


@dataclass(frozen=True)
class ChosenPairPart(Part):
    """The noisy marginal of the tree's ``position``-th pair (staged: it reads the tree)."""

    position: int = 0
    pairs: tuple[Clique, ...] = ()
    sizes: tuple[int, ...] = ()

    def release_after(
        self, exact: Aggregate, session: Session, noisy: dict[MeasurementKey, Any]
    ) -> Aggregate:
        """The chosen pair's cells with noise."""
        pair = int(np.asarray(noisy[TREE])[self.position])
        cells = np.asarray(clique_tables(exact, self.pairs, self.sizes)[pair]).reshape(-1)
        return add_noise(cast(Aggregate, cells), session.draw(self.mechanism, cells.size))


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


def mst_parts(
    axes: Sequence[Axis], epsilon: Fraction, delta: Fraction | None, gaussian: bool, k: int
) -> dict[MeasurementKey, Part | SelectPart]:
    """The calibrated parts of MST over ``axes``, in the order they are released."""
    d = len(axes)
    sizes = tuple(axis.size for axis in axes)
    rounds = d - 1
    pure_tree = epsilon / 3 if rounds else Fraction(0)
    marginals = epsilon - pure_tree  # the nominal ε of all marginals together
    rho = None
    if gaussian and delta is not None:
        rho = release_rho(marginals, delta)
    elif gaussian:  # a ρ session: ε²/2 in all, a third of it to the tree if there is one
        total = release_rho(epsilon, None)
        rho = total * (2 / 3 if rounds else 1)
        # A pure ε_tree costs ε_tree²/2 = ρ/3 (a hair less, so float rounding cannot exceed).
        pure_tree = Fraction(math.sqrt(2 * total / 3) * (1 - 1e-12)) if rounds else Fraction(0)
        marginals = epsilon - pure_tree
    stages = 2 if rounds else 1
    parts: dict[MeasurementKey, Part | SelectPart] = {}
    for i, axis in enumerate(axes):
        key = MeasurementKey("marginal", (axis.column,))
        share = Fraction(1, stages * d)
        others = tuple(a for n, a in enumerate(axes) if n != i)
        noise, record = marginal_noise(
            key.label, marginals * share, delta and delta * share,
            None if rho is None else rho * float(share), k,
        )  # fmt: skip
        measure = JointCounts((axis,), within=others)
        parts[key] = MarginalPart(key.label, measure, noise, record, clique=(i,), home=(i,))
    if not rounds:
        return parts
    pairs = tuple((i, j) for i in range(d) for j in range(i + 1, d))
    within = ManyTables(tuple(clique_counts(axes, pair) for pair in pairs))
    sensitivity = Fraction(k) + Fraction(1, SCORE_STEPS)
    chooser = ExponentialMechanism(pure_tree, sensitivity)
    record = SelectionMeasurement(
        "tree", chooser.name, pure_tree, k, 2 * sensitivity * rounds / pure_tree
    )
    oneway = tuple(parts)
    parts[TREE] = TreeChoicePart(
        "tree", within, chooser, record, no_score, same, rounds=rounds, pairs=pairs,
        oneway=oneway, sizes=sizes,
    )  # fmt: skip
    for r in range(rounds):
        key = MeasurementKey("marginal", (f"tree pair {r + 1}",), level=r + 1)
        share = Fraction(1, 2 * rounds)
        noise, record = marginal_noise(
            key.label, marginals * share, delta and delta * share,
            None if rho is None else rho * float(share), k,
        )  # fmt: skip
        parts[key] = ChosenPairPart(
            key.label, within, noise, record, position=r, pairs=pairs, sizes=sizes
        )
    return parts


def clique_counts(axes: Sequence[Axis], pair: Clique) -> JointCounts:
    """The table of ``pair`` (any clique), over the rows inside every axis."""
    others = tuple(a for n, a in enumerate(axes) if n not in pair)
    return JointCounts(tuple(axes[n] for n in pair), within=others)


def no_score(exact: Aggregate) -> tuple[np.ndarray, int]:
    """The score of a staged choice, which never runs (``release_after`` chooses)."""
    raise AssertionError("a staged choice is made by release_after")


def same(value: Any) -> Any:
    """Chosen positions are released as they are."""
    return value
