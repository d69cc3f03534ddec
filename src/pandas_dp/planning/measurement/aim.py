"""Calibration of AIM's measurements: one-way marginals, then rounds of choose-and-measure.

AIM (McKenna, Mullins, Sheldon & Miklau, "AIM: an adaptive and iterative mechanism for
differentially private synthetic data", VLDB 2022) measures every one-way marginal, then in
each round fits a graphical model to what was measured so far
(:mod:`pandas_dp.mechanisms.graphical_model`), chooses with the exponential mechanism the
workload clique the model explains worst, weighed against the noise a measurement of it would
add, and measures that clique with Gaussian noise.

The rounds' budgets are fixed in advance: ``rounds`` rounds (public; three per column by
default, as many measurements as the paper's annealing typically makes), every Gaussian
measurement the same σ, each choice the same ε. The paper instead halves σ when a measurement
barely changed the model (annealing), which makes how many rounds run, and at which σ,
depend on the data through the noisy answers; fixing them lets the ledger list every
measurement and its noise before anything is released, and keeps every accountant, PLD
included, exact. The choices' candidates are the workload's cliques (and their subsets of two
or more attributes) whose junction tree, joined to the model so far, stays within
:data:`MAX_MODEL_CELLS`, a limit that grows with the rounds as AIM's does; both depend only on
public inputs and on earlier choices, which are released.

Budget, as the paper plans it, in zCDP: ``ρ`` is the largest whose conversion fits the
release's ``(ε, δ)`` (``ε²/2`` in a ρ session). The ``d`` one-way marginals and the
``rounds`` measurements share ``0.9ρ`` equally (one σ for all, discrete Gaussian noise); the
``rounds`` choices share ``0.1ρ``, each the exponential mechanism with
``ε_c = sqrt(8 · 0.1ρ / rounds)`` accounted as ``ε_c``-bounded range (``ε_c²/8``; a
:class:`~pandas_dp.accounting.events.BoundedRangeMeasurement`). Each ledger line records its
ρ and its share of the release's (ε, δ). A unit with ``k`` rows moves each marginal by
``k`` cells and each choice's score by ``k`` times the candidate's workload weight (plus
the score's rounding).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from pandas_dp.accounting.events import BoundedRangeMeasurement
from pandas_dp.budget import epsilon_for_rho
from pandas_dp.measures.aggregates import Aggregate, Axis, ManyTables
from pandas_dp.mechanisms.exponential import ExponentialMechanism
from pandas_dp.mechanisms.graphical_model import Measured, Model, fit
from pandas_dp.mechanisms.marginals import Clique, cells, downward_closure
from pandas_dp.mechanisms.reconstruction import marginalize
from pandas_dp.mechanisms.tree_model import SCORE_EXPONENT, SCORE_STEPS
from pandas_dp.planning.measurement.choices import SelectPart
from pandas_dp.planning.measurement.keys import MeasurementKey
from pandas_dp.planning.measurement.kinds import Marginal
from pandas_dp.planning.measurement.marginals import (
    MarginalPart,
    clique_counts,
    marginal_noise,
    release_rho,
)
from pandas_dp.planning.measurement.parts import Part, add_noise
from pandas_dp.planning.measurement.synthesis import clique_tables, no_score, same

if TYPE_CHECKING:
    from pandas_dp.planning.noise import NoiseSource

#: The most cells the model's junction tree may hold after the last round.
MAX_MODEL_CELLS = 100_000
#: Mirror-descent steps of each round's fit (warm-started from the round before).
ROUND_ITERATIONS = 25
#: The share of the budget the choices get.
CHOICE_SHARE = Fraction(1, 10)


@dataclass(frozen=True)
class AimPlan:
    """What every round shares: the candidates, the measurements in order, their noise.

    ``counted`` are the candidates no other one holds: the tables counted from the data, in
    one pass, the others summed from them. ``measured`` lists each measurement's key and
    clique (None for a round's: its choice says which); ``models`` remembers each round's
    fit (post-processing), to warm-start the next one.
    """

    candidates: tuple[Clique, ...]
    weights: tuple[int, ...]
    sizes: tuple[int, ...]
    sigma: float
    counted: tuple[Clique, ...]
    measured: tuple[tuple[MeasurementKey, Clique | None], ...]
    models: dict[int, Model] = field(default_factory=dict, compare=False)

    def model(self, noisy: dict[MeasurementKey, Any], before: int, iterations: int) -> Model:
        """The model fitted to the one-way marginals and the rounds before round ``before``."""
        measured = []
        for key, clique in self.measured[: len(self.sizes) + before - 1]:
            if clique is None:
                clique = self.candidates[int(np.asarray(noisy[_choice_key(key.level or 0)])[0])]
            shape = [self.sizes[i] for i in clique]
            values = np.asarray(noisy[key], dtype=np.float64).reshape(shape)
            measured.append(Measured(clique, values, self.sigma))
        totals = [float(np.maximum(m.values, 0).sum()) for m in measured if len(m.clique) == 1]
        start = self.models.get(before - 1)
        model = fit(measured, self.sizes, float(np.mean(totals)), start=start,
                    iterations=iterations)  # fmt: skip
        self.models[before] = model
        return model

    def candidate(self, noisy: dict[MeasurementKey, Any], r: int) -> Clique:
        """The clique round ``r`` measured."""
        return self.candidates[int(np.asarray(noisy[_choice_key(r)])[0])]


@dataclass(frozen=True)
class AimChoicePart(SelectPart):
    """Round ``stage``'s choice: the position, among the candidates, of the clique to measure."""

    stage: int = 0
    plan: AimPlan | None = None
    limit: int = MAX_MODEL_CELLS

    def release_after(
        self, exact: Aggregate, source: NoiseSource, noisy: dict[MeasurementKey, Any]
    ) -> Aggregate:
        """Fit the model to the measurements so far, then choose where it errs most."""
        assert self.plan is not None
        model = self.plan.model(noisy, self.stage, ROUND_ITERATIONS)
        allowed, scores = self.scores(exact, model)
        pick = source.choose(self.mechanism, -scores[None, :], SCORE_STEPS)
        return np.asarray([allowed[int(pick[0])]], dtype=np.int64)

    def scores(self, exact: Aggregate, model: Model) -> tuple[list[int], np.ndarray]:
        """The candidates the model can grow by, and their integer scores (``1/16`` units).

        ``w_r (‖M_r(data) - M_r(model)‖₁ - sqrt(2/π) σ n_r)`` rounded down: one row moves a
        candidate's exact table by one cell, so its score by at most ``w_r`` (plus the
        rounding); the model and the penalty are public.
        """
        plan = self.plan
        assert plan is not None
        tables = candidate_tables(exact, plan.candidates, plan.counted, plan.sizes)
        allowed = self.allowed(model)
        penalty = math.sqrt(2 / math.pi) * plan.sigma
        scores = np.zeros(len(allowed), dtype=np.int64)
        for n, k in enumerate(allowed):
            clique = plan.candidates[k]
            error = float(np.abs(tables[k] - model.marginal(clique)).sum())
            quality = plan.weights[k] * (error - penalty * cells(clique, plan.sizes))
            scores[n] = math.floor(quality * SCORE_STEPS)
        return allowed, scores

    def allowed(self, model: Model) -> list[int]:
        """The candidates inside the model or growing it to at most :attr:`limit` cells.

        As the paper's: a candidate the model already holds costs no memory, and another's
        size is that of the tree of the model's factors and it, the tree the next fit uses.
        Never none (the exponential mechanism needs a candidate): if every candidate outgrows
        the limit, those that grow the model least. Public: the candidates, the model's
        cliques, the limit.
        """
        plan = self.plan
        assert plan is not None
        grown = [
            0 if model.tree.home(c) >= 0 else model.grown(c).size(plan.sizes)
            for c in plan.candidates
        ]
        allowed = [k for k, size in enumerate(grown) if size <= self.limit]
        return allowed or [k for k, size in enumerate(grown) if size == min(grown)]


@dataclass(frozen=True)
class AimMeasurePart(Part):
    """Round ``stage``'s noisy marginal of the clique its choice picked (staged)."""

    stage: int = 0
    candidates: tuple[Clique, ...] = ()
    counted: tuple[Clique, ...] = ()
    sizes: tuple[int, ...] = ()

    def release_after(
        self, exact: Aggregate, source: NoiseSource, noisy: dict[MeasurementKey, Any]
    ) -> Aggregate:
        """The chosen clique's cells with noise."""
        position = int(np.asarray(noisy[_choice_key(self.stage)])[0])
        clique = self.candidates[position]
        table = candidate_tables(exact, (clique,), self.counted, self.sizes)[0]
        flat = np.asarray(table).reshape(-1)
        return add_noise(cast(Aggregate, flat), source.draw(self.mechanism, flat.size))


def _choice_key(r: int) -> MeasurementKey:
    return Marginal((f"aim choice {r}",), level=r)


def round_key(r: int) -> MeasurementKey:
    """The key of round ``r``'s measurement (rounds count from 1)."""
    return Marginal((f"aim round {r}",), level=r)


def maximal(cliques: Sequence[Clique]) -> tuple[Clique, ...]:
    """The cliques that no other one holds, in their order: the tables counted from the data."""
    return tuple(c for c in cliques if not any(set(c) < set(d) for d in cliques))


def candidate_tables(
    exact: Aggregate, candidates: Sequence[Clique], counted: Sequence[Clique],
    sizes: Sequence[int],
) -> list[np.ndarray]:  # fmt: skip
    """The exact tables of ``candidates``, each summed from the first ``counted`` holding it.

    ``exact`` holds the tables of ``counted`` side by side, counted in one pass over the
    rows. Every table counts the same rows (those inside every axis), so a candidate's cells
    are exactly the sums of a larger table's (integers: no rounding).
    """
    tables = dict(zip(counted, clique_tables(exact, counted, sizes), strict=True))
    out = []
    for clique in candidates:
        top = next(t for t in counted if set(clique) <= set(t))
        out.append(marginalize(tables[top], top, clique))
    return out


def candidates_of(workload: Sequence[Clique], sizes: Sequence[int]) -> tuple[
    tuple[Clique, ...], tuple[int, ...]
]:  # fmt: skip
    """Cliques of two or more attributes under the workload, and their weights.

    A candidate's weight is how many attributes it shares with the workload's cliques, summed
    (AIM's ``w_r``): cliques that overlap much of the workload matter more.
    """
    closure = [c for c in downward_closure(workload) if len(c) >= 2]
    closure.sort(key=lambda c: (len(c), c))
    weights = tuple(sum(len(set(c) & set(w)) for w in workload) for c in closure)
    return tuple(closure), weights


def aim_parts(
    axes: Sequence[Axis], workload: Sequence[Clique], epsilon: Fraction,
    delta: Fraction | None, k: int, rounds: int,
) -> tuple[dict[MeasurementKey, Part | SelectPart], AimPlan]:  # fmt: skip
    """AIM's calibrated parts over ``axes``, in release order, and the plan its rounds share."""
    d = len(axes)
    sizes = tuple(axis.size for axis in axes)
    candidates, weights = candidates_of(workload, sizes)
    rounds = rounds if candidates else 0
    rho = Fraction(release_rho(epsilon, delta))  # ε²/2 in a ρ session (delta None)
    choices = CHOICE_SHARE if rounds else Fraction(0)
    share = (1 - choices) / (d + rounds)  # of ρ and of the nominal (ε, δ): each Gaussian
    each_share = choices / rounds if rounds else Fraction(0)  # each choice
    delta = delta or Fraction(0)
    parts: dict[MeasurementKey, Part | SelectPart] = {}
    sigma = 1.0
    measured: list[tuple[MeasurementKey, Clique | None]] = []
    for i, axis in enumerate(axes):
        key: MeasurementKey = Marginal((axis.column,))
        noise, record = marginal_noise(
            key.label, epsilon * share, delta * share, float(rho * share), k
        )
        sigma = math.sqrt(float(noise.variance()))
        parts[key] = MarginalPart(
            key.label, clique_counts(axes, (i,)), noise, record, clique=(i,), home=(i,)
        )
        measured.append((key, (i,)))
    measured += [(round_key(r), None) for r in range(1, rounds + 1)]
    counted = maximal(candidates)
    plan = AimPlan(candidates, weights, sizes, sigma, counted, tuple(measured))
    within = ManyTables(tuple(clique_counts(axes, c) for c in counted))
    # A score's sensitivity in units of 1/SCORE_STEPS; each choice is ε_c-bounded range.
    steps = k * max(weights, default=1) * SCORE_STEPS + 1
    each = epsilon_for_rho(4 * rho * each_share) if rounds else Fraction(0)
    for r in range(1, rounds + 1):
        chooser = ExponentialMechanism(each, Fraction(steps, SCORE_STEPS))
        key = _choice_key(r)
        record = BoundedRangeMeasurement(
            key.label, chooser.name, epsilon * each_share, steps, 2 * steps / each,
            exponent=-SCORE_EXPONENT, delta=delta * each_share,
        )  # fmt: skip
        parts[key] = AimChoicePart(
            key.label, within, chooser, record, no_score, same, stage=r, plan=plan,
            limit=MAX_MODEL_CELLS * r // rounds,
        )  # fmt: skip
        key = round_key(r)
        noise, record = marginal_noise(
            key.label, epsilon * share, delta * share, float(rho * share), k
        )
        parts[key] = AimMeasurePart(
            key.label,
            within,
            noise,
            record,
            stage=r,
            candidates=candidates,
            counted=counted,
            sizes=sizes,
        )
    return parts, plan
