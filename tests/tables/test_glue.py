"""Glue of ``priv.dp.tables``: the noise each marginal gets, the charge, the ledger, and a
strategy that reads public inputs only.

Expected values are derived here from the documented rule: the release's ρ is the largest
whose zCDP conversion (CKS20, Cor. 13) gives its (ε, δ); marginal ``B`` gets ``σ_B² =
k² / (2 ρ s_B)`` (rounded up by the exact sampler, so ``Σ k²/(2σ_B²) <= ρ``); the ledger
records each marginal's share ``s_B`` of (ε, δ).
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from pandas_dp.budget import Budget, zcdp_to_epsilon
from pandas_dp.mechanisms.gaussian.discrete import DiscreteGaussian
from pandas_dp.mechanisms.laplace import DiscreteLaplace
from pandas_dp.mechanisms.marginals import laplace_strategy
from pandas_dp.mechanisms.residuals.planner import ResidualPlan, choose_plan, row_norms
from pandas_dp.planning.measurement.marginals import release_rho

from .conftest import WORKLOAD


def pairs_frame(columns: int = 8) -> tuple[pd.DataFrame, list[list[str]], dict]:
    """Binary columns and every pair of them: many overlapping tables, where Gaussian noise
    (composing by the square root of the number of marginals) beats Laplace noise."""
    names = [f"c{i}" for i in range(columns)]
    rng = np.random.default_rng(11)
    frame = pd.DataFrame({c: rng.integers(0, 2, 300) for c in names})
    workload = [list(p) for p in itertools.combinations(names, 2)]
    return frame, workload, {name: [0, 1] for name in names}


def test_gaussian_residuals_get_their_share_of_rho(protect_seeded, noise):
    """Many overlapping tables: ResidualPlanner. Residual ``A`` gets ``σ_A² = d_A/(2 ρ s_A)``
    on each of its basis values (``d_A = Π(n_i - 1)`` of them move by 1 per row), and the
    ledger records ``coordinates = d_A``: each line's ρ is ``d_A / (2σ_A²) <= s_A ρ``."""
    frame, workload, keys = pairs_frame()
    priv = protect_seeded(frame, epsilon=2.0, delta=2e-6)
    with noise(priv) as calls:
        priv.dp.tables(workload, keys=keys, epsilon=1.0)
    (release,) = priv.dp.session.releases
    cliques = [tuple(sorted((int(a[1]), int(b[1])))) for a, b in workload]
    plan = choose_plan(cliques, (2,) * 8, 1.0, release_rho(Fraction(1), Fraction(1, 10**6)))
    assert isinstance(plan, ResidualPlan)
    assert len(calls) == len(plan.cliques) == len(release.measurements) == 1 + 8 + 28
    labels = [f"residual({' × '.join(f'c{i}' for i in b) or 'total'})" for b in plan.cliques]
    assert [m.label for m in release.measurements] == labels
    assert [c.size for c in calls] == [1] * 37  # binary columns: one basis value each
    delta = Fraction(1, 10**6)  # the session's δ in proportion to ε
    rho = sum(m.rho for m in release.measurements)
    assert zcdp_to_epsilon(float(rho), float(delta)) <= 1.0
    assert zcdp_to_epsilon(float(rho) * 1.001, float(delta)) > 1.0  # and none is wasted
    for call, measurement, share in zip(calls, release.measurements, plan.shares, strict=True):
        assert isinstance(call.mechanism, DiscreteGaussian)
        assert call.mechanism.sigma2 == measurement.sigma2
        assert measurement.sensitivity == 1
        assert measurement.coordinates == 1
        assert float(measurement.rho) / float(rho) == pytest.approx(share, rel=1e-6)
    # The charge is exactly the release's (ε, δ): the lines' shares add up to one.
    assert release.cost.epsilon == 1
    assert release.cost.delta == delta
    assert priv.dp.session.spent.epsilon == 1
    assert release.columns == tuple(keys)
    assert "zCDP" in release.note
    assert "ResidualPlanner" in release.note


def test_residual_coordinates_are_the_residual_dimension(protect_seeded, noise):
    """Columns of 3 and 5 keys: the pair's residual has d = 2·4 = 8 coordinates moved by one
    row, released as 8 basis values in 4 draws, one per row norm N (8, 24, 40, 120: 3, 3,
    1 and 1 values), each of σ² at least the ledger's base variance v times N/15 and the
    smallest ratio exactly v; a 4-key column uses 3 Hadamard rows (norm 4: σ² = v)."""
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"a": rng.integers(0, 3, 200), "b": rng.integers(0, 5, 200),
                          "c": rng.integers(0, 4, 200), "d": rng.integers(0, 2, 200)})  # fmt: skip
    keys = {"a": [0, 1, 2], "b": list(range(5)), "c": list(range(4)), "d": [0, 1]}
    workload = [list(p) for p in itertools.combinations(keys, 2)]
    priv = protect_seeded(frame, rho=1.0)  # at equal ρ, Gaussian noise beats Laplace noise
    with noise(priv) as calls:
        priv.dp.tables(workload, keys=keys, epsilon=1.0)
    (release,) = priv.dp.session.releases
    sizes = tuple(len(k) for k in keys.values())
    by_label, rest = {}, list(calls)
    for m in release.measurements:  # each residual draws once per distinct row norm, in order
        names = m.label.removeprefix("residual(").removesuffix(")").split(" × ")
        clique = tuple(i for i, c in enumerate(keys) if c in names)
        distinct = sorted(set(row_norms(clique, sizes).tolist()))
        by_label[m.label] = (m, distinct, rest[: len(distinct)])
        rest = rest[len(distinct) :]
    assert rest == []
    pair, distinct, drawn = by_label["residual(a × b)"]
    assert pair.coordinates == 8
    assert distinct == [8, 24, 40, 120]
    assert [c.size for c in drawn] == [3, 3, 1, 1]
    ratios = [c.mechanism.sigma2 * 15 / n for c, n in zip(drawn, distinct, strict=True)]
    assert min(ratios) == pair.sigma2
    assert max(ratios) <= pair.sigma2 * Fraction(1001, 1000)
    single, distinct, drawn = by_label["residual(c)"]
    assert single.coordinates == 3
    assert distinct == [4]
    assert [c.size for c in drawn] == [3]
    assert drawn[0].mechanism.sigma2 == single.sigma2


def test_laplace_marginals_for_a_few_tables(people, options, protect_seeded, noise):
    """Three tables at ε = 1: Laplace noise has the smaller variance (and a pure session
    could not use Gaussian noise at all). Marginal ``B`` gets scale ``1/(ε s_B)``."""
    priv = protect_seeded(people, epsilon=2.0)
    with noise(priv) as calls:
        priv.dp.tables(WORKLOAD, **options, epsilon=1.0)
    (release,) = priv.dp.session.releases
    # age, sex, region, tenure in order of first appearance: sizes 3, 2, 3, 2.
    strategy = laplace_strategy([(0, 1), (1, 2), (0, 2, 3)], (3, 2, 3, 2))
    assert strategy.cliques == ((0, 1), (1, 2), (0, 2, 3))  # the three tables themselves
    assert [c.size for c in calls] == [6, 6, 18]
    for call, measurement, share in zip(calls, release.measurements, strategy.shares, strict=True):
        assert isinstance(call.mechanism, DiscreteLaplace)
        assert float(measurement.epsilon) == pytest.approx(share, rel=1e-6)
        assert call.mechanism.scale == 1 / measurement.epsilon
    assert release.cost == Budget(Fraction(1))  # pure ε, charged exactly
    assert "Laplace" in release.note


def test_a_rho_session_spends_epsilon_squared_over_two(people, options, protect_seeded, noise):
    """At equal ρ, Gaussian noise always beats Laplace noise: it is chosen."""
    priv = protect_seeded(people, rho=0.5)
    with noise(priv) as calls:
        priv.dp.tables(WORKLOAD, **options, epsilon=0.4)
    (release,) = priv.dp.session.releases
    assert all(isinstance(c.mechanism, DiscreteGaussian) for c in calls)
    spent = priv.dp.session.spent
    assert spent.rho <= Fraction(8, 100)  # 0.4² / 2
    assert float(spent.rho) == pytest.approx(0.08, rel=1e-5)
    assert all(m.delta == 0 for m in release.measurements)


@pytest.mark.parametrize("budget", [{"epsilon": 2.0}, {"rho": 2.0}])
def test_a_privacy_unit_scales_every_noise(people, options, protect_seeded, noise, budget):
    """A unit with 3 rows moves each marginal by 3: every scale (Laplace) or σ (Gaussian, in a
    ρ session) triples; the strategy does not change."""
    one = protect_seeded(people, **budget)
    ids = people.assign(pid=np.arange(len(people)) // 3)
    three = protect_seeded(ids, **budget, privacy_unit="pid", max_rows_per_unit=3)
    with noise(one) as calls_one:
        one.dp.tables(WORKLOAD, **options, epsilon=1.0)
    with noise(three) as calls_three:
        tables = three.dp.tables(WORKLOAD, **options, epsilon=1.0)
    assert len(calls_one) == len(calls_three)
    for a, b in zip(calls_one, calls_three, strict=True):
        spread = "sigma" if isinstance(a.mechanism, DiscreteGaussian) else "scale"
        tripled = 3 * float(getattr(a.mechanism, spread))
        assert float(getattr(b.mechanism, spread)) == pytest.approx(tripled, rel=1e-5)
    assert {m.sensitivity for m in three.dp.session.releases[0].measurements} == {3}
    assert tables[("sex", "region")].to_numpy().sum() == pytest.approx(400)


def test_the_plan_does_not_depend_on_the_data(people, options, protect_seeded):
    """Two frames with the same columns and dtypes but different values (and sizes) get the
    same measurements, noise and ledger record; planning never calls the engine."""
    from pandas_dp.api.queries.tables import plan_tables

    other = people.sample(frac=0.5, random_state=1).reset_index(drop=True)
    other["region"] = "north"
    plans = [
        plan_tables(protect_seeded(frame, epsilon=2.0, delta=1e-6), WORKLOAD, epsilon=1.0,
                    **options)
        for frame in (people, other)
    ]  # fmt: skip
    a, b = plans
    assert list(a.parts) == list(b.parts)
    assert [p.mechanism for p in a.parts.values()] == [p.mechanism for p in b.parts.values()]
    assert [p.measure for p in a.parts.values()] == [p.measure for p in b.parts.values()]
    assert a.release == b.release


class SchemaOnlyEngine:
    """A fake engine that knows the frame's columns and dtypes and nothing else."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self.schema = frame.iloc[:0]

    def columns(self, data):
        return self.schema.columns

    def dtypes(self, data):
        return self.schema.dtypes

    def __getattr__(self, name):
        raise AssertionError(f"planning asked the engine for {name}")


def test_planning_asks_the_engine_for_columns_and_dtypes_only(people, options, protect_seeded):
    import dataclasses

    from pandas_dp.api.queries.tables import plan_tables, plan_workload
    from pandas_dp.api.release import resolve

    priv = protect_seeded(people, epsilon=2.0, delta=1e-6)
    planned = plan_tables(priv, WORKLOAD, epsilon=1.0, **options)
    target = dataclasses.replace(resolve(priv), engine=SchemaOnlyEngine(people), data=None)
    blind = plan_workload(target, WORKLOAD, options["keys"], options["bins"], 1.0, None)
    assert blind.release == planned.release
    assert [p.mechanism for p in blind.parts.values()] == [
        p.mechanism for p in planned.parts.values()
    ]


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda p, o: p.dp.tables([["sex", "age"]], keys=o["keys"], epsilon=1.0),
         "DPValueError", "bins="),
        (lambda p, o: p.dp.tables([["sex", "region"]], keys={"sex": [0, 1]}, epsilon=1.0),
         "DPValueError", "no public keys"),
        (lambda p, o: p.dp.tables("sex", **o, epsilon=1.0), "DPTypeError", "list of tables"),
        (lambda p, o: p.dp.tables([], **o, epsilon=1.0), "DPValueError", "empty"),
        (lambda p, o: p.dp.tables([["sex"], ["sex"]], **o, epsilon=1.0), "DPValueError", "twice"),
        (lambda p, o: p.dp.tables([["sex", "sex"]], **o, epsilon=1.0), "DPValueError", "twice"),
        (lambda p, o: p.dp.tables([["nope"]], **o, epsilon=1.0), "DPKeyError", "nope"),
        (lambda p, o: p.dp.tables([["sex"]], **o, epsilon=float("nan")), "DPValueError", "finite"),
        (lambda p, o: p.dp.tables([["region"]], bins={"region": [0, 1]}, epsilon=1.0),
         "DPTypeError", "dtype"),
        (lambda p, o: p.dp.tables([["sex"]], keys={"sex": ["a", "b"]}, epsilon=1.0),
         "DPTypeError", "numbers"),
        (lambda p, o: p.dp.tables([["sex"]], keys=o["keys"], epsilon=3.0), "BudgetExceededError",
         "remains"),
    ],
)  # fmt: skip
def test_refusals_charge_nothing(people, options, protect_seeded, call, error, match):
    import pandas_dp

    priv = protect_seeded(people, epsilon=2.0, delta=1e-6)
    with pytest.raises(getattr(pandas_dp, error), match=match):
        call(priv, options)
    assert priv.dp.session.releases == ()
    assert priv.dp.session.spent.epsilon == 0


def test_keys_from_the_schema(people, protect_seeded, noise, reference):
    pa = pytest.importorskip("pandera.pandas")
    schema = pa.DataFrameSchema(
        {
            "sex": pa.Column(int, pa.Check.isin([0, 1])),
            "region": pa.Column(object, pa.Check.isin(["north", "south", "east"]), nullable=True),
        }
    )
    frame = people[["sex", "region"]]
    priv = protect_seeded(frame, epsilon=2.0, delta=1e-6, schema=schema, validate=False)
    with noise(priv):
        tables = priv.dp.tables([["sex", "region"]], epsilon=1.0)
    got = tables[("sex", "region")]
    assert list(got.columns) == ["north", "south", "east"]
    assert "from the schema" in priv.dp.session.releases[0].note
    assert isinstance(got, pd.DataFrame)


@pytest.mark.parametrize("accounting", ["basic", "advanced", "zcdp", "pld"])
def test_every_accountant_charges_the_joint_gaussian_release(protect_seeded, noise, accounting):
    """The release is (ε, δ) as a whole; tighter accountants may charge less, never more."""
    frame, workload, keys = pairs_frame()
    priv = protect_seeded(frame, epsilon=2.0, delta=2e-6, accounting=accounting)
    with noise(priv):
        priv.dp.tables(workload, keys=keys, epsilon=1.0)
    spent = priv.dp.session.spent
    assert spent.epsilon <= 1
    assert spent.delta <= Fraction(1, 10**6)
