"""``priv.dp.synthesize(method="aim")``: the rounds' measurements, charge and ledger, the
choice's sensitivity on neighbouring data, the rows, and refusals that charge nothing.

With the ``noise`` fixture the noise is 0 and the exponential mechanism picks the best
score, so each round measures the candidate the model misses most.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import pandas_dp
from pandas_dp.accounting.events import BoundedRangeMeasurement
from pandas_dp.api.queries.domains import parse_domains
from pandas_dp.api.release import resolve
from pandas_dp.budget import zcdp_to_epsilon
from pandas_dp.engines.pandas_engine import aggregate_frame
from pandas_dp.mechanisms.exponential import ExponentialMechanism
from pandas_dp.mechanisms.gaussian.discrete import DiscreteGaussian
from pandas_dp.mechanisms.graphical_model import Measured, fit
from pandas_dp.planning.measurement.aim import (
    AimChoicePart,
    aim_parts,
    candidate_tables,
    candidates_of,
)
from pandas_dp.planning.measurement.marginals import release_rho

from .test_synthesize import COLUMNS, dependent

#: A 4-cycle whose tree, grown by a chord, differs from the tree of its factors and the chord.
CYCLE = [(1, 3), (0, 3), (1, 2), (0, 2)]
LABELS = [
    "marginal(age)", "marginal(sex)", "marginal(region)", "marginal(tenure)",
    *(f"marginal(aim {what} {r})" for r in range(1, 13) for what in ("choice", "round")),
]  # fmt: skip


def test_aim_measurements_charge_and_ledger(options, protect_seeded, noise):
    priv = protect_seeded(dependent(), epsilon=3.0, delta=1e-6)
    with noise(priv) as calls:
        synth = priv.dp.synthesize(COLUMNS, **options, epsilon=1.0, method="aim")
    (release,) = priv.dp.session.releases
    assert [m.label for m in release.measurements] == LABELS
    assert release.cost.epsilon == 1
    assert release.cost.delta == Fraction(1, 3 * 10**6)
    # Planned in zCDP: ρ converts to (1, δ); 0.9ρ to 4 one-way marginals and 12 rounds (three
    # per column), equal shares; 0.1ρ to the 12 choices, each ε_c-bounded range (ε_c²/8).
    rho = release_rho(Fraction(1), release.cost.delta)
    choices = [m for m in release.measurements if "choice" in m.label]
    assert all(isinstance(m, BoundedRangeMeasurement) for m in choices)
    assert [m.epsilon for m in choices] == [Fraction(1, 120)] * 12  # shares of ε
    each = choices[0].choice_epsilon
    assert each**2 / 8 <= Fraction(rho) / 120
    assert float(each) == pytest.approx(math.sqrt(8 * rho / 120), rel=1e-9)
    gaussian = [m for m in release.measurements if m.is_gaussian]
    assert len(gaussian) == 16  # 4 one-way marginals and 12 rounds, equal shares
    assert float(sum(m.rho for m in gaussian)) == pytest.approx(0.9 * rho, rel=1e-6)
    total = sum((m.rho for m in release.measurements), Fraction(0))
    assert total <= Fraction(rho)
    assert zcdp_to_epsilon(float(total), float(release.cost.delta)) <= 1
    assert len({m.sigma2 for m in gaussian}) == 1
    chosen = [c.mechanism for c in calls if isinstance(c.mechanism, ExponentialMechanism)]
    # Pairs of 4 columns: each shares 2 attributes with itself and 1 with 4 others: weight 6.
    assert chosen == [ExponentialMechanism(each, 6 + Fraction(1, 16))] * 12
    sizes = [c.size for c in calls if isinstance(c.mechanism, DiscreteGaussian)]
    assert sizes[:4] == [3, 2, 3, 2]
    report = synth.attrs["synthesis"]
    assert report["method"] == "aim"
    assert report["measured"][0] == ["region", "tenure"]  # the strongest dependence first
    assert math.isclose(report["sigma"], math.sqrt(float(gaussian[0].sigma2)), rel_tol=1e-6)
    assert [len(report["measured"]), report["rows"]] == [12, 3000]


def test_aim_rows_follow_the_measured_marginals(options, protect_seeded, noise):
    """Zero noise: the fitted model reproduces region × tenure; 20,000 rows' frequencies are
    within 0.022 of the exact ones (as for MST: 6 binomial standard errors, plus the fit's
    convergence, measured below 1e-3)."""
    frame = dependent()
    priv = protect_seeded(frame, epsilon=3.0, delta=1e-6)
    with noise(priv):
        synth = priv.dp.synthesize(COLUMNS, **options, epsilon=1.0, method="aim", rows=20_000)
    exact = pd.crosstab(frame["region"], frame["tenure"], normalize=True)
    got = pd.crosstab(synth["region"], synth["tenure"], normalize=True)
    assert np.abs(got.reindex_like(exact).to_numpy() - exact.to_numpy()).max() < 0.022


def test_a_rho_session_spends_its_share(options, protect_seeded, noise):
    zcdp = protect_seeded(dependent(), rho=1.0)
    with noise(zcdp):
        zcdp.dp.synthesize(COLUMNS, **options, epsilon=0.6, method="aim")
    spent = zcdp.dp.session.spent.rho
    assert spent <= Fraction(18, 100)  # 0.6² / 2
    assert float(spent) == pytest.approx(0.18, rel=1e-6)


def test_a_workload_sets_the_candidates_and_their_weights():
    candidates, weights = candidates_of([(0, 1, 2), (2, 3)], [2, 2, 2, 2])
    assert candidates == ((0, 1), (0, 2), (1, 2), (2, 3), (0, 1, 2))
    assert weights == (2, 3, 3, 3, 4)


def neighbours_scores(options, protect_seeded, added):
    """Round 1's integer scores on ``dependent()`` and on it with ``added`` rows, same model."""
    out = []
    for frame in (dependent(), pd.concat([dependent(), added], ignore_index=True)):
        priv = protect_seeded(frame, epsilon=3.0, delta=1e-6)
        target = resolve(priv)
        domains = parse_domains(target, COLUMNS, options["keys"], options["bins"])
        workload = [(0, 1, 2), (1, 2, 3)]
        parts, plan = aim_parts(domains.axes, workload, Fraction(1), Fraction(1, 10**6), 1, 3)
        choice = next(p for p in parts.values() if isinstance(p, AimChoicePart))
        exact = aggregate_frame(frame, (choice.measure,)).values[0]
        public = [Measured((i,), np.full(n, 10.0), plan.sigma) for i, n in enumerate(plan.sizes)]
        model = fit(public, plan.sizes, 1000.0, iterations=5)
        out.append((choice, choice.scores(exact, model)))
    return out


@pytest.mark.parametrize("row", [0, 5, 17])
def test_a_row_moves_each_score_by_at_most_the_sensitivity(options, protect_seeded, row):
    """One more row moves candidate r's score by at most ``w_r`` (+ rounding): the exponential
    mechanism's declared sensitivity covers it, and one that ignored the weights would not."""
    (choice, (allowed, before)), (_, (same, after)) = neighbours_scores(
        options, protect_seeded, dependent().iloc[[row]]
    )
    assert allowed == same
    moved = np.abs(after - before) / 16  # in score units
    assert moved.max() <= float(choice.mechanism.sensitivity)
    assert choice.mechanism.sensitivity == max(choice.plan.weights) + Fraction(1, 16)
    assert moved.max() > 1 + 1 / 16  # a sensitivity of k alone (the mutant) is exceeded


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"workload": [["age", "nope"]]}, "DPValueError", "workload"),
        ({"workload": [["age", "age"]]}, "DPValueError", "distinct"),
        ({"workload": []}, "DPTypeError", "non-empty"),
        ({"workload": "age"}, "DPTypeError", "non-empty"),
        ({"method": "mst", "workload": [["age", "sex"]]}, "DPValueError", "AIM"),
        ({"epsilon": 5.0}, "BudgetExceededError", "remains"),
    ],
)
def test_refusals_charge_nothing(options, protect_seeded, kwargs, error, match):
    priv = protect_seeded(dependent(), epsilon=3.0, delta=1e-6)
    arguments = {"columns": COLUMNS, **options, "epsilon": 1.0, "method": "aim", **kwargs}
    with pytest.raises(getattr(pandas_dp, error), match=match):
        priv.dp.synthesize(**arguments)
    assert priv.dp.session.releases == ()


def test_a_pure_session_is_refused_before_any_charge(options, protect_seeded):
    priv = protect_seeded(dependent(), epsilon=3.0)
    with pytest.raises(pandas_dp.DPValueError, match="delta > 0"):
        priv.dp.synthesize(COLUMNS, **options, epsilon=1.0, method="aim")
    assert priv.dp.session.releases == ()


def test_one_column_has_no_rounds(options, protect_seeded, noise):
    priv = protect_seeded(dependent(), epsilon=3.0, delta=1e-6)
    with noise(priv):
        synth = priv.dp.synthesize(["region"], **options, epsilon=1.0, method="aim", rows=100)
    assert list(synth.columns) == ["region"]
    assert [m.label for m in priv.dp.session.releases[0].measurements] == ["marginal(region)"]


def test_candidates_are_summed_from_the_maximal_tables_counted_in_one_pass(
    people, options, protect_seeded, reference
):
    """A workload of two triples: only they are counted from the rows (one table each, in
    one measure), and every candidate's table, pairs included, equals plain pandas' count
    over the rows inside every domain, exactly."""
    priv = protect_seeded(people, epsilon=3.0, delta=1e-6)
    domains = parse_domains(resolve(priv), COLUMNS, options["keys"], options["bins"])
    workload = [(0, 1, 2), (1, 2, 3)]
    parts, plan = aim_parts(domains.axes, workload, Fraction(1), Fraction(1, 10**6), 1, 3)
    choice = next(p for p in parts.values() if isinstance(p, AimChoicePart))
    assert plan.counted == ((0, 1, 2), (1, 2, 3))
    assert [t.axes for t in choice.measure.tables] == [
        tuple(domains.axes[i] for i in c) for c in plan.counted
    ]
    exact = aggregate_frame(people, (choice.measure,)).values[0]
    tables = candidate_tables(exact, plan.candidates, plan.counted, plan.sizes)
    assert len(plan.candidates) == 7
    for clique, table in zip(plan.candidates, tables, strict=True):
        expected = reference(people, [COLUMNS[i] for i in clique]).to_numpy()
        assert table.dtype == np.int64
        assert (table == expected.reshape(table.shape)).all()


def test_a_choice_always_has_candidates_and_the_model_stays_within_its_limit(
    options, protect_seeded
):
    """A round whose every candidate outgrows the limit chooses among those that grow the
    model least (it used to offer none: the release failed after the charge); a candidate
    the model holds is always allowed; and the model refitted with the chosen clique is the
    tree the choice checked, not a larger triangulation of the factors alone."""
    priv = protect_seeded(dependent(), epsilon=3.0, delta=1e-6)
    domains = parse_domains(resolve(priv), COLUMNS, options["keys"], options["bins"])
    parts, plan = aim_parts(domains.axes, [(0, 1), (1, 2), (2, 3), (0, 3)], Fraction(1), None, 1, 3)
    choice = next(p for p in parts.values() if isinstance(p, AimChoicePart))
    oneway = [Measured((i,), np.full(n, 10.0), 1.0) for i, n in enumerate(plan.sizes)]
    model = fit(oneway, plan.sizes, 100.0, iterations=2)
    tight = dataclasses.replace(choice, limit=0)
    cells = [plan.sizes[a] * plan.sizes[b] for a, b in plan.candidates]
    assert tight.allowed(model) == [k for k, n in enumerate(cells) if n == min(cells)]
    grown = fit([*oneway, Measured((0, 1), np.ones((3, 2)), 1.0)], plan.sizes, 100.0,
                start=model, iterations=2)  # fmt: skip
    assert tight.allowed(grown) == [plan.candidates.index((0, 1))]
    # A 4-cycle and its chord 0-1: the cycle's own tree, grown by the chord, is one clique of
    # all four; the refit's tree (of the factors) is two triples: the size to check.
    cycle = [Measured(c, np.ones([plan.sizes[a] for a in c]), 1.0) for c in CYCLE]
    last = fit([*oneway, *cycle], plan.sizes, 100.0, iterations=2)
    chord = Measured((0, 1), np.ones((3, 2)), 1.0)
    again = fit([*oneway, *cycle, chord], plan.sizes, 100.0, start=last, iterations=2)
    assert last.grown((0, 1)).cliques == ((0, 1, 2), (0, 1, 3))
    assert again.tree == last.grown((0, 1))
