"""Calibration of MST's measurements: one-way marginals, a tree chosen privately, its pairs.

A third of the budget measures every one-way marginal, a third chooses the ``d - 1`` pairs of
a spanning tree (the exponential mechanism, one round per pair, each joining two parts of the
tree so far), and a third measures the chosen pairs (McKenna, Miklau & Sheldon 2021).

- With δ > 0 (or in a ρ session) the release is planned in zCDP, as the paper does: ``ρ`` is
  the largest whose conversion fits the release's ``(ε, δ)`` (``ε²/2`` in a ρ session); a
  third of it to the one-way marginals, a third to the tree's pairs (discrete Gaussian
  noise), a third to the tree's ``d - 1`` choices, each the exponential mechanism accounted
  as bounded range (``ε_c²/8``; see :func:`_mst_zcdp`).
- With δ = 0 the marginals get discrete Laplace noise, ``ε/3`` for the one-way ones and
  ``ε/3`` for the pairs, split equally, and the tree ``ε/3`` (pure).

A unit with ``k`` rows changes each marginal by ``k`` and each pair's score by ``k`` (plus
the scores' rounding). The tree's and the pairs' measurements are *staged*: they read the
noisy one-way marginals (and the tree) released before them, which adaptive composition
allows. As the paper's code does, both work on *compressed* domains: each column's values
whose noisy one-way count is below three noise standard deviations are merged into one
(:mod:`pandas_dp.mechanisms.compression`; post-processing of those released counts), so the
pairs have fewer cells, each with the same noise. Everything here depends on public
parameters and released values only.
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
    BoundedRangeMeasurement,
    Measurement,
    SelectionMeasurement,
)
from pandas_dp.budget import epsilon_for_rho
from pandas_dp.measures.aggregates import Aggregate, Axis, ManyTables
from pandas_dp.mechanisms.compression import Compressed, compress, compress_table
from pandas_dp.mechanisms.exponential import ExponentialMechanism
from pandas_dp.mechanisms.marginals import Clique
from pandas_dp.mechanisms.tree_model import (
    SCORE_EXPONENT,
    SCORE_STEPS,
    independence_scores,
    joining,
)
from pandas_dp.planning.measurement.choices import SelectPart
from pandas_dp.planning.measurement.keys import MeasurementKey
from pandas_dp.planning.measurement.kinds import Marginal
from pandas_dp.planning.measurement.marginals import (
    MarginalPart,
    clique_counts,
    marginal_noise,
    release_rho,
)
from pandas_dp.planning.measurement.parts import Noise, Part, add_noise

if TYPE_CHECKING:
    from pandas_dp.planning.noise import NoiseSource

#: The tree's key; ``level`` sets it (and the pairs' keys) apart from any column's marginal.
TREE = Marginal(("tree",), level=0)


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
class Compressing:
    """Where MST's compressed domains come from: the one-way measurements and their noise.

    Each column's values whose noisy count is below three noise standard deviations are
    merged into one (:mod:`pandas_dp.mechanisms.compression`): post-processing of released
    counts, which the tree's choice and its pairs read (staged).
    """

    oneway: tuple[MeasurementKey, ...]
    deviations: tuple[float, ...]

    def columns(self, noisy: dict[MeasurementKey, Any]) -> list[Compressed]:
        """Each column's compressed domain, from its released noisy one-way counts."""
        pairs = zip(self.oneway, self.deviations, strict=True)
        return [compress(np.asarray(noisy[key], dtype=np.float64), sd) for key, sd in pairs]

    def oneway_tables(self, noisy: dict[MeasurementKey, Any]) -> dict[int, np.ndarray]:
        """The noisy one-way counts on the compressed domains (merged values summed)."""
        columns = self.columns(noisy)
        return {
            i: columns[i].table(np.asarray(noisy[key], dtype=np.float64), 0)
            for i, key in enumerate(self.oneway)
        }


@dataclass(frozen=True)
class TreeChoicePart(SelectPart):
    """The ``rounds`` pairs of a spanning tree, by the exponential mechanism (staged).

    Scored on the compressed domains: a row moves one cell of a compressed exact table by
    one, as of the full one, so the sensitivity is unchanged.
    """

    pairs: tuple[Clique, ...] = ()
    compressing: Compressing = Compressing((), ())
    sizes: tuple[int, ...] = ()

    def release_after(
        self, exact: Aggregate, source: NoiseSource, noisy: dict[MeasurementKey, Any]
    ) -> Aggregate:
        """Positions (among :attr:`pairs`) of the chosen pairs, in the order chosen."""
        columns = self.compressing.columns(noisy)
        exact_tables = clique_tables(exact, self.pairs, self.sizes)
        tables = [
            compress_table(table, pair, columns)
            for pair, table in zip(self.pairs, exact_tables, strict=True)
        ]
        scores = independence_scores(self.pairs, tables, self.compressing.oneway_tables(noisy))
        each = dataclasses.replace(self.mechanism, epsilon=self.mechanism.epsilon / self.rounds)
        chosen: list[int] = []
        for _ in range(self.rounds):
            candidates = joining(self.pairs, chosen, len(self.sizes))
            pick = source.choose(each, -scores[candidates][None, :], SCORE_STEPS)
            chosen.append(int(candidates[int(pick[0])]))
        return np.asarray(chosen, dtype=np.int64)


@dataclass(frozen=True)
class ChosenPairPart(Part):
    """The noisy marginal of the tree's ``position``-th pair, on the compressed domains.

    Staged: it reads the tree and the noisy one-way marginals.
    """

    position: int = 0
    pairs: tuple[Clique, ...] = ()
    sizes: tuple[int, ...] = ()
    compressing: Compressing = Compressing((), ())

    def release_after(
        self, exact: Aggregate, source: NoiseSource, noisy: dict[MeasurementKey, Any]
    ) -> Aggregate:
        """The chosen pair's cells with noise."""
        pair = self.pairs[int(np.asarray(noisy[TREE])[self.position])]
        table = clique_tables(exact, self.pairs, self.sizes)[self.pairs.index(pair)]
        cells = compress_table(table, pair, self.compressing.columns(noisy)).reshape(-1)
        return add_noise(cast(Aggregate, cells), source.draw(self.mechanism, cells.size))


def mst_parts(
    axes: Sequence[Axis], epsilon: Fraction, delta: Fraction | None, gaussian: bool, k: int
) -> dict[MeasurementKey, Part | SelectPart]:
    """The calibrated parts of MST over ``axes``, in the order they are released."""
    if gaussian:
        return _mst_zcdp(axes, epsilon, delta, k)
    d = len(axes)
    rounds = d - 1
    tree = epsilon / 3 if rounds else Fraction(0)
    stages = 2 if rounds else 1
    parts: dict[MeasurementKey, Part | SelectPart] = {}
    for i, axis in enumerate(axes):
        share = (epsilon - tree) / (stages * d)
        noise, record = marginal_noise(_oneway_key(axis).label, share, None, None, k)
        parts[_oneway_key(axis)] = _oneway_part(axes, i, noise, record)
    if not rounds:
        return parts
    sensitivity = Fraction(k) + Fraction(1, SCORE_STEPS)
    chooser = ExponentialMechanism(tree, sensitivity)
    record = SelectionMeasurement("tree", chooser.name, tree, k, 2 * sensitivity * rounds / tree)
    within = _pair_tables(axes)  # counted once, read by the tree and its pairs
    compressing = _compressing(parts)
    parts[TREE] = _tree_part(axes, within, chooser, record, compressing)
    for r in range(rounds):
        share = (epsilon - tree) / (2 * rounds)
        noise, record = marginal_noise(_pair_key(r).label, share, None, None, k)
        parts[_pair_key(r)] = _pair_part(axes, within, r, noise, record, compressing)
    return parts


def _mst_zcdp(
    axes: Sequence[Axis], epsilon: Fraction, delta: Fraction | None, k: int
) -> dict[MeasurementKey, Part | SelectPart]:
    """MST as the paper plans it, in zCDP: a third of ρ to each stage.

    ``ρ`` is the largest whose conversion fits the release's ``(ε, δ)`` (``ε²/2`` in a ρ
    session). The one-way marginals get ``ρ/(3d)`` each, the ``d - 1`` tree pairs
    ``ρ/(3(d-1))`` each (discrete Gaussian noise), and each of the ``d - 1`` choices of the
    tree is the exponential mechanism with ``ε_c = sqrt(8 (ρ/3) / (d - 1))``, accounted as
    ``ε_c``-bounded range: ``ε_c²/8`` each (:class:`BoundedRangeMeasurement`). Every
    measurement's ρ is at most its share (rounded down where it is sampled), so the ledger's ρ
    adds up to at most the release's; each line's (ε, δ) is its share of the release's.
    """
    d = len(axes)
    rounds = d - 1
    rho = Fraction(release_rho(epsilon, delta))
    third = Fraction(1, 3) if rounds else Fraction(1)
    parts: dict[MeasurementKey, Part | SelectPart] = {}
    for i, axis in enumerate(axes):
        share = third / d
        noise, record = marginal_noise(
            _oneway_key(axis).label, epsilon * share, delta and delta * share,
            float(rho * share), k,
        )  # fmt: skip
        parts[_oneway_key(axis)] = _oneway_part(axes, i, noise, record)
    if not rounds:
        return parts
    steps = k * SCORE_STEPS + 1  # a score's sensitivity, in units of 1/SCORE_STEPS
    each = epsilon_for_rho(4 * rho * third / rounds)  # ε_c <= sqrt(8 ρ_tree / rounds)
    chooser = ExponentialMechanism(each * rounds, Fraction(steps, SCORE_STEPS))
    record = BoundedRangeMeasurement(
        "tree", chooser.name, epsilon * third, steps, 2 * steps / each,
        exponent=-SCORE_EXPONENT, delta=(delta or Fraction(0)) * third, coordinates=rounds,
    )  # fmt: skip
    within = _pair_tables(axes)  # counted once, read by the tree and its pairs
    compressing = _compressing(parts)
    parts[TREE] = _tree_part(axes, within, chooser, record, compressing)
    for r in range(rounds):
        share = third / rounds
        noise, record = marginal_noise(
            _pair_key(r).label, epsilon * share, delta and delta * share, float(rho * share), k
        )
        parts[_pair_key(r)] = _pair_part(axes, within, r, noise, record, compressing)
    return parts


def _oneway_key(axis: Axis) -> MeasurementKey:
    return Marginal((axis.column,))


def _pair_key(r: int) -> MeasurementKey:
    return Marginal((f"tree pair {r + 1}",), level=r + 1)


def _pairs(d: int) -> tuple[Clique, ...]:
    return tuple((i, j) for i in range(d) for j in range(i + 1, d))


def _oneway_part(axes: Sequence[Axis], i: int, noise: Noise, record: Measurement) -> MarginalPart:
    label = _oneway_key(axes[i]).label
    return MarginalPart(label, clique_counts(axes, (i,)), noise, record, clique=(i,), home=(i,))


def _pair_tables(axes: Sequence[Axis]) -> ManyTables:
    """Every pair's table, side by side: what the tree and the chosen pairs read."""
    return ManyTables(tuple(clique_counts(axes, pair) for pair in _pairs(len(axes))))


def _compressing(oneway: dict[MeasurementKey, Part | SelectPart]) -> Compressing:
    """The one-way measurements, whose noisy counts and noise compress the domains."""
    marginals = {key: part for key, part in oneway.items() if isinstance(part, MarginalPart)}
    deviations = (math.sqrt(float(part.mechanism.variance())) for part in marginals.values())
    return Compressing(tuple(marginals), tuple(deviations))


def _tree_part(
    axes: Sequence[Axis], within: ManyTables, chooser: ExponentialMechanism,
    record: Measurement, compressing: Compressing,
) -> TreeChoicePart:  # fmt: skip
    pairs = _pairs(len(axes))
    return TreeChoicePart(
        "tree", within, chooser, record, no_score, same, rounds=len(axes) - 1, pairs=pairs,
        compressing=compressing, sizes=tuple(axis.size for axis in axes),
    )  # fmt: skip


def _pair_part(
    axes: Sequence[Axis], within: ManyTables, r: int, noise: Noise, record: Measurement,
    compressing: Compressing,
) -> ChosenPairPart:  # fmt: skip
    pairs = _pairs(len(axes))
    sizes = tuple(axis.size for axis in axes)
    label = _pair_key(r).label
    return ChosenPairPart(
        label, within, noise, record, position=r, pairs=pairs, sizes=sizes,
        compressing=compressing,
    )  # fmt: skip


def no_score(exact: Aggregate) -> tuple[np.ndarray, int]:
    """The score of a staged choice, which never runs (``release_after`` chooses)."""
    raise AssertionError("a staged choice is made by release_after")


def same(value: Any) -> Any:
    """Chosen positions are released as they are."""
    return value
