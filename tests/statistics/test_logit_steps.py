"""``priv.dp.logit`` in two steps (issue 42): a first fit, then the score measured at it.

With pure ε on one model, a twentieth of ε releases the row count; when the noisy count
times ε reaches ``STEP_RATE`` times the Gram matrix's sums, a first fit takes 3/10 of the
rest and the score ``Σ (σ(x̃ᵀθ₁) - y) x̃`` at it (``k`` sums, each moved by at most one unit by
a row) the remainder; a first fit whose design sums are too noisy (``FirstFit.steady``)
measures the Gram matrix again instead. Shown here: the scale passed to the sampler and the
charge of each branch, one ledger row costing ε; the score's exact sums are the gradient by
hand and move by at most one unit per sum for an adversarial row; at zero noise the two-step
fit is maximum likelihood (within 2e-4 of statsmodels, where one fit is 0.01-0.02 away);
refusals charge nothing.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

from pandas_dp.api.queries import regression
from pandas_dp.api.release import ReleaseOptions, resolve
from pandas_dp.engines.pandas_engine import aggregate_frame
from pandas_dp.errors import BudgetExceededError, DPValueError
from pandas_dp.mechanisms.knorm import DiscreteLinfKNorm
from pandas_dp.planning.measurement.products import DIGITS, UNIT

from .test_logit import (
    ADVERSARIAL,
    BOUNDS,
    FORMULA,
    KEYS,
    data,
    kept_design,
    newton_raphson,
    released_and_statsmodels,
)

#: m = 4 design columns: the Gram matrix of (1, z_1..z_4, z_y), and the score's k = 5 sums.
GRAM_SUMS = (4 + 2) * (4 + 3) // 2
SCORE_SUMS = 5


def release(priv: pd.DataFrame, **kwargs: Any) -> Any:
    options = {"bounds": BOUNDS, "keys": KEYS, "epsilon": 1.0, **kwargs}
    return priv.dp.logit(FORMULA, **options)


def concentrated(
    rows: int, seed: int = 2024
) -> tuple[pd.DataFrame, dict[str, tuple[float, float]]]:
    """Normal regressors on wide bounds [-4, 4]: each scaled column's variance is 1/16."""
    gen = np.random.default_rng(seed)  # test data only
    x = np.clip(gen.normal(0, 1, (rows, 3)), -4, 4)
    beta = np.array([-0.5, 0.6, 0.5, -0.4])
    y = gen.uniform(size=rows) < 1 / (1 + np.exp(-(beta[0] + x @ beta[1:])))
    return pd.DataFrame(x, columns=["a", "b", "c"]).assign(y=y), dict.fromkeys("abc", (-4.0, 4.0))


def test_large_data_take_two_steps_scale_and_charge(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    """20,000 rows at ε = 1 (count·ε = 20,000 >= 150 · 21): count, first fit, score."""
    priv = protect_seeded(data(20_000), epsilon=4.0)
    with noise(priv) as calls:
        release(priv, epsilon=1.0)
    count, gram, score = calls
    rest = Fraction(19, 20)
    assert (count.size, gram.size, score.size) == (1, GRAM_SUMS, SCORE_SUMS)
    assert count.mechanism.scale == Fraction(1) / Fraction(1, 20)
    # the Gram matrix and the score: one ℓ∞ K-norm vector each, a row moving each sum by at
    # most one unit
    assert gram.mechanism == DiscreteLinfKNorm(Fraction(UNIT) / (rest * Fraction(3, 10)), 21)
    assert score.mechanism.name == "discrete_linf_knorm"
    assert score.mechanism.dimension == SCORE_SUMS
    assert score.mechanism.scale == Fraction(UNIT) / (rest * Fraction(7, 10))
    (logit,) = priv.dp.session.releases
    assert logit.query == "logit"
    assert logit.cost.epsilon == 1
    assert priv.dp.session.spent.epsilon == 1
    _, first, scored = logit.measurements
    assert first.sensitivity == UNIT
    assert first.kind == "linf_knorm"
    assert first.coordinates == GRAM_SUMS
    assert scored.sensitivity == UNIT  # ℓ∞: a row moves each score sum by one unit
    assert scored.kind == "linf_knorm"
    assert scored.coordinates == SCORE_SUMS
    assert scored.pure_epsilon == rest * Fraction(7, 10)
    assert scored.label == "products(C(g)[T.b], C(g)[T.c], x, z, score residual)"
    assert logit.asked == "epsilon=1"
    assert "a row count (choosing one fit or two steps): 0.05 of ε on count" in logit.note
    assert "a first fit (the score measured at it): 0.3 of ε on logit" in logit.note
    assert "the score of Logit y ~ x + z + C(g) at the first fit" in logit.note


def test_an_unsteady_first_fit_measures_the_gram_matrix_again(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    """5,000 rows pass the count's test, but the scaled design's spread (1/16 per column)
    is under 1.5 times the first fit's noise: the rest of ε measures the sums again."""
    frame, bounds = concentrated(5_000)
    priv = protect_seeded(frame, epsilon=4.0)
    with noise(priv) as calls:
        model = priv.dp.logit("y ~ a + b + c", bounds=bounds, epsilon=1.0)
    sums = (3 + 2) * (3 + 3) // 2
    rest = Fraction(19, 20)
    count, first, again = calls
    assert count.size == 1
    assert first.mechanism == DiscreteLinfKNorm(Fraction(UNIT) / (rest * Fraction(3, 10)), sums)
    assert again.mechanism == DiscreteLinfKNorm(Fraction(UNIT) / (rest * Fraction(7, 10)), sums)
    (logit,) = priv.dp.session.releases
    assert logit.cost.epsilon == 1
    assert "the sums measured again, the two averaged by their noise's variance" in logit.note
    assert np.isfinite(model.params).all()


def test_small_data_take_one_fit(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    """2,000 rows at ε = 1 (count·ε under 150 · 21): the rest of ε on one fit."""
    priv = protect_seeded(data(2_000), epsilon=4.0)
    with noise(priv) as calls:
        release(priv)
    assert [c.size for c in calls] == [1, GRAM_SUMS]
    (logit,) = priv.dp.session.releases
    assert logit.cost.epsilon == 1
    assert "a first fit" not in logit.note


@pytest.mark.parametrize(
    ("session", "options"),
    [
        ({"rho": 2.0}, {"rho": 0.5}),
        ({"epsilon": 4.0, "delta": 1e-5}, {"epsilon": 1.0, "delta": 1e-6, "mechanism": "gaussian"}),
    ],
    ids=["rho", "gaussian"],
)
def test_other_noise_takes_one_fit(
    session: dict[str, Any], options: dict[str, Any], noise: Callable[..., Any],
    protect_seeded: Callable[..., Any],
) -> None:  # fmt: skip
    """Two steps are for pure ε (ε splits exactly; ρ or δ would not): one release else."""
    priv = protect_seeded(data(20_000), **session)
    with noise(priv) as calls:
        priv.dp.logit(FORMULA, bounds=BOUNDS, keys=KEYS, **options)
    assert [c.size for c in calls] == [GRAM_SUMS]


@pytest.mark.parametrize("normal", [True, False], ids=["normal design", "uniform design"])
def test_zero_noise_two_steps_are_maximum_likelihood(
    normal: bool, noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    """The step reads the exact score at the first fit: at zero noise it lands on the
    maximum likelihood fit (measured 7e-5 and 9e-5 in L2; one fit: 0.008 and 0.019)."""
    frame = data(20_000, normal=normal)
    priv = protect_seeded(frame, epsilon=10.0)
    with noise(priv) as calls:
        model = release(priv)
    assert len(calls) == 3
    exact = newton_raphson(*kept_design(frame))
    assert float(np.linalg.norm(model.params.to_numpy() - exact)) < 2e-4


def test_zero_noise_against_statsmodels(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    model, exact = released_and_statsmodels(noise, protect_seeded)
    assert list(model.params.index) == list(exact.params.index)
    np.testing.assert_allclose(model.params, exact.params, atol=2e-4)
    np.testing.assert_allclose(model.bse, exact.bse, rtol=0.25)  # the noise's variance added


def _score_measure(priv: pd.DataFrame, theta: np.ndarray) -> Any:
    """The score's measurement at scaled coefficients ``theta`` (as the second step plans it)."""
    options = ReleaseOptions(epsilon=1.0, bounds={**BOUNDS, "y": (0, 1)})
    _, part, _, _ = regression._measure(
        resolve(priv), FORMULA, KEYS, options, "logit", response=regression._binary_response,
        score=theta,
    )  # fmt: skip
    return part.measure


def test_score_sums_are_the_gradient_by_hand(protect_seeded: Callable[..., Any]) -> None:
    frame = data(3_000)
    frame.loc[3, "y"] = 5  # clipped into [0, 1]
    priv = protect_seeded(frame, epsilon=4.0)
    theta = np.array([-0.3, 0.4, -0.2, 1.5, -0.7])
    sums = aggregate_frame(frame, (_score_measure(priv, theta),)).values[0][0]
    design, y = kept_design(frame)
    scaled = np.column_stack([design[:, :3], (design[:, 3] - 8) / 8, (design[:, 4] - 8) / 8])
    centred = scaled.copy()
    centred[:, 1:3] = 2 * scaled[:, 1:3] - 1  # 0/1 columns on their bounds [0, 1]
    residual = 1 / (1 + np.exp(-(centred @ theta))) - y
    gradient = centred.T @ residual
    # Each value is rounded to 2**-DIGITS: a product is off by at most 2**-DIGITS per row.
    np.testing.assert_allclose(
        np.asarray(sums, dtype=np.float64) / UNIT, gradient, atol=len(y) * 2.0**-DIGITS
    )


@pytest.mark.parametrize("row", ADVERSARIAL)
def test_adversarial_row_moves_each_score_sum_by_at_most_one_unit(
    row: dict[str, Any], protect_seeded: Callable[..., Any]
) -> None:
    frame = data(200).astype({"y": np.float64})
    after = pd.concat([frame, pd.DataFrame([row], index=[10**6])])
    theta = np.array([30.0, -30.0, 30.0, -30.0, 30.0])  # residuals at ±1 for some rows
    moved = []
    for version in (frame, after):
        priv = protect_seeded(version, epsilon=4.0)
        measure = _score_measure(priv, theta)
        moved.append(aggregate_frame(version, (measure,)).values[0][0].astype(object))
    assert (np.abs(moved[1] - moved[0]) <= UNIT).all()


def test_refusal_charges_nothing(
    charges_nothing: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    """Every step is planned before anything is read: a budget too small for ε is refused
    whole, and a call refused by validation leaves the session as it was."""
    priv = protect_seeded(data(20_000), epsilon=0.5)
    with charges_nothing(priv), pytest.raises(BudgetExceededError):
        release(priv, epsilon=1.0)
    with charges_nothing(priv), pytest.raises(DPValueError, match="'z'"):
        priv.dp.logit(FORMULA, bounds={"x": (0, 16)}, keys=KEYS, epsilon=0.4)
    assert math.isclose(float(priv.dp.session.spent.epsilon), 0.0)


@pytest.mark.parametrize("row", ADVERSARIAL)
def test_neighbours_release_alike_in_two_steps(
    row: dict[str, Any], protect_seeded: Callable[..., Any]
) -> None:
    """D (20,000 rows: two steps) and D plus one adversarial row, real noise: the same shape,
    dtypes, warnings (none) and ledger columns; only the noisy values differ."""
    frame = data(20_000).astype({"y": np.float64})
    after = pd.concat([frame, pd.DataFrame([row], index=[10**6])])
    outcomes = []
    for version in (frame, after):
        priv = protect_seeded(version, epsilon=4.0, seed=5)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            model = release(priv)
        (record,) = priv.dp.session.releases
        outcomes.append((model, [str(w.message) for w in seen], record))
    (one, warned_one, first), (two, warned_two, second) = outcomes
    assert warned_one == warned_two == []
    assert list(one.params.index) == list(two.params.index)
    assert one.params.dtype == two.params.dtype == np.float64
    assert np.isfinite(two.params).all()
    assert np.isfinite(two.bse).all()
    assert [m.label for m in first.measurements] == [m.label for m in second.measurements]
    assert first.cost == second.cost


def test_grouped_models_take_one_vector_per_group(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    """``groupby(...).logit`` takes one fit per group (no count, no second step), each
    group's sums one K-norm vector at the whole ε (parallel composition: a row is in one
    group); ``ols`` keeps per-sum Laplace noise."""
    priv = protect_seeded(data(3_000), epsilon=4.0)
    formula = "y ~ x + z"
    with noise(priv) as calls:
        models = priv.dp.groupby("g", keys=KEYS["g"]).logit(formula, bounds=BOUNDS, epsilon=1.0)
    sums = (2 + 2) * (2 + 3) // 2
    (call,) = calls
    assert call.mechanism == DiscreteLinfKNorm(Fraction(UNIT), sums)
    assert call.size == 3 * sums  # three vectors, one per group (each group's sums in a row)
    (logit,) = priv.dp.session.releases
    (measurement,) = logit.measurements
    assert (measurement.kind, measurement.sensitivity, measurement.pure_epsilon) == (
        "linf_knorm",
        UNIT,
        1,
    )
    assert "one K-norm noise vector per group" in logit.note
    assert logit.cost.epsilon == 1
    assert len(models) == 3
    with noise(priv) as calls:
        priv.dp.groupby("g", keys=KEYS["g"]).ols(formula, bounds={**BOUNDS, "y": (0, 1)}, epsilon=1)
    assert calls[0].mechanism.name == "discrete_laplace"


@pytest.mark.parametrize("row", ADVERSARIAL)
def test_score_residuals_read_each_row_alone(
    row: dict[str, Any], protect_seeded: Callable[..., Any]
) -> None:
    """The derived frame the score sums (PRIVACY.md §10): its columns and dtypes come from
    public inputs, and each row's values from that row alone (D's rows are unchanged when an
    odd row joins them); a row missing an input is all NaN in the residual."""
    from pandas_dp.transformations.design import ScoreResiduals

    frame = data(200).astype({"y": np.float64})
    after = pd.concat([frame, pd.DataFrame([row], index=[10**6])])
    measure = _score_measure(protect_seeded(frame, epsilon=4.0), np.array([0.5, -1, 2, 1, -3]))
    applied = measure.design
    assert isinstance(applied, ScoreResiduals)
    alone, joined = applied(frame), applied(after)
    assert list(alone.columns) == list(joined.columns) == list(applied.labels)
    assert (alone.dtypes == np.float64).all()
    assert (joined.dtypes == np.float64).all()
    pd.testing.assert_frame_equal(joined.loc[frame.index], alone)
    residual = joined[applied.label].dropna()
    assert residual.between(-1, 1).all()
