"""Glue of ``.dp.var`` and ``.dp.std``: the documented construction, exactly.

The reference (``conftest.py``) clips, centres at the *public* lattice midpoint, rounds and
caps each row's square and applies the documented post-processing, all in exact rationals.
With the ``noise`` fixture every additive noise is a constant number of noise units, so a
release must equal the reference with the same constant added to each measurement.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import pandas_dp
from pandas_dp.errors import DPTypeError, DPValueError

from ..oracles import split

BOUNDS = (0.0, 200_000.0)


def release(priv: pd.DataFrame, path: str, how: str, column: str, **kwargs: Any) -> Any:
    if path == "frame":
        return getattr(priv.dp, how)(column, **kwargs)
    return getattr(priv[column].dp, how)(**kwargs)


def reference(ref: Any, data: pd.DataFrame, column: str, bounds: Any, eps: Any) -> Any:
    """Moments of ``column`` with the lattice a third of ``eps`` selects (the documented split:
    squares, centred sum and count share ε equally)."""
    lattice = ref.centred_lattice(*bounds, ref.as_fraction(eps) / 3)
    return ref.moments(data[column].astype("float64").tolist(), bounds, lattice)


def check(released: float, how: str, moments: Any, ddof: int, noise: int = 0, **kw: Any) -> None:
    expected, tolerance = moments.variance(ddof, noise), moments.tolerance(ddof, noise, **kw)
    if how == "std":
        # |a² - b| <= t for the square of the released std: squaring a float adds at most
        # 2**-52 relative, and the sqrt's own rounding as much again.
        assert released >= 0.0
        assert abs(released * released - float(expected)) <= tolerance + 1e-15 * float(expected)
    else:
        assert abs(released - float(expected)) <= tolerance, (released, float(expected))


# --- exact pre-noise values ------------------------------------------------------------------


@pytest.mark.parametrize("ddof", [0, 1, 3])
@pytest.mark.parametrize("how", ["var", "std"])
@pytest.mark.parametrize("path", ["frame", "series"])
def test_zero_noise_equals_the_documented_construction(
    ref, incomes, protect_seeded, noise, path, how, ddof
):
    priv = protect_seeded(incomes, epsilon=10)
    with noise(priv, value=0) as calls:
        released = release(priv, path, how, "income", bounds=BOUNDS, epsilon=0.5, ddof=ddof)
    assert len(calls) == 3  # squares, centred sum, count: one draw each
    assert all(c.size == 1 for c in calls)
    mom = reference(ref, incomes, "income", BOUNDS, 0.5)
    assert mom.count == incomes["income"].notna().sum()
    check(released, how, mom, ddof)
    # And the construction is a faithful variance: pandas' variance of the clipped values
    # differs only by lattice rounding (|ΔS1| <= N g/2, |ΔS2| <= N 2**e/2; the bound below
    # is (N 2**e + 2 N g reach) / (N - ddof), far above both) and by the clamp.
    clipped = incomes["income"].clip(*BOUNDS)
    truth = min(clipped.var(ddof=ddof), ((BOUNDS[1] - BOUNDS[0]) / 2) ** 2)
    step, square_step = float(mom.lattice.step), float(mom.squares.step)
    n = mom.count
    slack = (n * square_step + 2 * n * step * float(mom.reach)) / (n - ddof)
    value = released if how == "var" else released**2
    assert value == pytest.approx(truth, abs=slack + 1e-9 * truth)


@pytest.mark.parametrize("noise_value", [-7, -1, 2, 25])
def test_constant_noise_enters_each_measurement_once(
    ref, incomes, protect_seeded, noise, noise_value
):
    priv = protect_seeded(incomes, epsilon=10)
    with noise(priv, value=noise_value):
        released = priv.dp.var("income", bounds=BOUNDS, epsilon=0.9)
    check(released, "var", reference(ref, incomes, "income", BOUNDS, 0.9), 1, noise_value)


def test_exact_values_on_a_dyadic_grid(ref, protect_seeded, noise):
    # Quarters in [0, 100]: every deviation from the centre 50 and its square are exact in
    # float64, so only the final formula's rounding separates release and reference.
    data = pd.DataFrame({"x": np.arange(0, 401) / 4.0})
    priv = protect_seeded(data, epsilon=10)
    with noise(priv, value=0):
        var = priv.dp.var("x", bounds=(0, 100), epsilon=1.0)
    mom = reference(ref, data, "x", (0, 100), 1.0)
    assert mom.lattice.centre == 50
    check(var, "var", mom, 1, exact_rows=True)
    # The population variance of 0, 1/4, ..., 100 is known in closed form; with ddof=1:
    # Var = (m² - 1)/12 · h² · m/(m - 1) for m = 401 points of spacing h = 1/4.
    assert var == pytest.approx((401**2 - 1) / 12 / 16 * 401 / 400, rel=1e-12)


def test_integer_column_uses_the_row_count(ref, incomes, protect_seeded, noise):
    priv = protect_seeded(incomes, epsilon=10)
    with noise(priv, value=4):
        var = priv.dp.var("age", bounds=(0, 100), epsilon=0.3)
    mom = reference(ref, incomes, "age", (0, 100), 0.3)
    check(var, "var", mom, 1, 4)
    labels = [m.label for m in priv.dp.session.releases[-1].measurements]
    assert sorted(labels) == ["centred_sum(age)", "count", "squares(age)"]


def test_fillna_imputes_before_clipping_and_counts_every_row(ref, incomes, protect_seeded, noise):
    priv = protect_seeded(incomes, epsilon=10)
    with noise(priv, value=0):
        var = priv.dp.var("income", bounds=BOUNDS, epsilon=0.6, fillna=250_000.0)
    filled = incomes.assign(income=incomes["income"].fillna(250_000.0))
    mom = reference(ref, filled, "income", BOUNDS, 0.6)
    assert mom.count == len(incomes)
    check(var, "var", mom, 1)


# --- the ledger ------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["var", "std"])
@pytest.mark.parametrize(
    ("eps", "bounds"), [(0.5, BOUNDS), (3.0, (-1.0, 0.25)), (1e-3, (30, 60.5))]
)
def test_release_records_split_labels_sensitivities_and_scales(
    ref, incomes, protect_seeded, noise, how, eps, bounds
):
    data = incomes.assign(income=incomes["income"] / 1e5 if bounds[1] < 1 else incomes["income"])
    priv = protect_seeded(data, epsilon=10)
    with noise(priv, value=0):
        getattr(priv.dp, how)("income", bounds=bounds, epsilon=eps)
    (record,) = priv.dp.session.releases
    assert record.query == how
    assert record.columns == ("income",)
    assert record.composition == "sequential"
    assert record.groups == 1
    assert record.bounds == (("income", float(bounds[0]), float(bounds[1])),)
    assert record.cost.epsilon == ref.as_fraction(eps)
    assert priv.dp.session.spent.epsilon == ref.as_fraction(eps)
    each = ref.as_fraction(eps) / 3
    assert sorted(m.label for m in record.measurements) == [
        "centred_sum(income)",
        "count(income)",
        "squares(income)",
    ]
    assert all(m.epsilon == each for m in record.measurements)
    assert all(m.mechanism == "discrete_laplace" for m in record.measurements)
    assert [share for _, share in record.shares] == [Fraction(1, 3)] * 3

    count = ref.measurement(record, "count(income)")
    assert (count.sensitivity, count.scale, count.exponent) == (1, 1 / each, 0)

    # Centred sum: the documented lattice for ε/3; one row moves it by at most
    # max(|rint(L/g) - offset|, |rint(U/g) - offset|) steps.
    lattice = ref.centred_lattice(*bounds, each)
    centred = ref.measurement(record, "centred_sum(income)")
    assert centred.exponent == lattice.exponent
    reach_units = max(abs(lattice.lower - lattice.offset), abs(lattice.upper - lattice.offset))
    assert centred.sensitivity == reach_units
    assert centred.scale == Fraction(reach_units) / each

    # Squares: step 2**e and cap from the public centre only; a row adds at most the cap.
    squares = ref.square_lattice(*bounds, lattice.centre)
    sq = ref.measurement(record, "squares(income)")
    assert sq.exponent == squares.exponent
    assert sq.sensitivity == squares.cap
    assert sq.scale == Fraction(squares.cap) / each
    # The cap is one row's largest square, ((U - L)/2)² up to the centre's rounding.
    half = (Fraction(bounds[1]) - Fraction(bounds[0])) / 2
    assert squares.cap * squares.step >= half * half
    assert squares.cap < 2**36 + 2


def test_the_centre_is_the_public_lattice_midpoint_never_the_data_mean(ref, protect_seeded, noise):
    # Values far from the midpoint of (0, 100): a data-dependent centre (the mean, 90) would
    # give a different release as soon as the measurements carry noise.
    data = pd.DataFrame({"x": 90.0 + np.linspace(-3, 3, 50) ** 3 / 9})
    priv = protect_seeded(data, epsilon=10)
    with noise(priv, value=3):
        var = priv.dp.var("x", bounds=(0, 100), epsilon=1.0)
    (record,) = priv.dp.session.releases
    exponent = ref.measurement(record, "centred_sum(x)").exponent
    lattice = ref.centred_lattice_at(0, 100, exponent)
    assert lattice == ref.centred_lattice(0, 100, Fraction(1, 3))
    assert lattice.centre == 50
    mom = ref.moments(data["x"].tolist(), (0, 100), lattice)
    check(var, "var", mom, 1, 3)

    # The same construction about the data's mean is far away, so this test can fail.
    mean = Fraction(float(data["x"].mean()))
    shifted = ref.Moments(
        mom.count,
        sum(round((Fraction(v) - mean) / lattice.step) for v in data["x"]),
        sum(round((Fraction(v) - mean) ** 2 / mom.squares.step) for v in data["x"]),
        lattice,
        mom.squares,
        mom.reach,
    )
    assert abs(float(shifted.variance(1, 3)) - var) > 100 * mom.tolerance(1, 3)


def test_grouped_spreads_and_medians_in_one_release(ref, incomes, protect_seeded, noise):
    regions = ["N", "S", "E", "W", "none"]
    priv = protect_seeded(incomes, epsilon=10)
    with noise(priv, value=0):
        table = priv.dp.groupby("region", keys=regions).agg(
            sd=("income", "std"),
            v=("income", "var"),
            med=("income", "median"),
            n="count",
            bounds={"income": BOUNDS},
            epsilon=1.0,
        )
    assert list(table.columns) == ["sd", "v", "med", "n"]
    assert list(table.index) == regions
    (record,) = priv.dp.session.releases
    assert record.composition == "parallel"
    assert record.groups == len(regions)
    assert record.cost.epsilon == 1
    labels = sorted(m.label for m in record.measurements)
    assert labels == [
        "centred_sum(income)",
        "count",
        "count(income)",
        "quantile(income, 0.5)",
        "squares(income)",
    ]
    # The documented split: std and var weigh their three moments equally, the median its
    # quantile, the count the row count.
    order = [m.label for m in record.measurements]
    moments = {"squares(income)": 1.0, "centred_sum(income)": 1.0, "count(income)": 1.0}
    models = [(1.0, moments), (1.0, moments), (1.0, {"quantile(income, 0.5)": 1.0})]
    models.append((1.0, {"count": 1.0}))
    assert split.close([m.epsilon for m in record.measurements], split.shares(order, models))
    each = next(m.epsilon for m in record.measurements if m.label == "centred_sum(income)")
    lattice = ref.centred_lattice(*BOUNDS, each)
    for key in regions[:-1]:
        rows = incomes[incomes["region"] == key]
        mom = ref.moments(rows["income"].tolist(), BOUNDS, lattice)
        check(table.loc[key, "v"], "var", mom, 1)
        check(table.loc[key, "sd"], "std", mom, 1)
        assert table.loc[key, "n"] == len(rows)
    # An empty group: no spread and no median (NaN, as pandas: the median shares the
    # spreads' count), count 0.
    none = table.loc["none"]
    assert np.isnan(none["sd"])
    assert np.isnan(none["v"])
    assert np.isnan(none["med"])
    assert none["n"] == 0


# --- bounds of the output --------------------------------------------------------------------


def test_clamped_to_zero_and_to_the_largest_possible_variance(protect_seeded, noise):
    # Half the values at each bound: the sample variance (ddof=1) is (U-L)²/4 · n/(n-1),
    # above the documented ceiling ((U - L)/2)², so the release is the ceiling exactly.
    data = pd.DataFrame({"x": [0.0, 10.0] * 5})
    priv = protect_seeded(data, epsilon=10)
    with noise(priv, value=0):
        assert priv.dp.var("x", bounds=(0, 10), epsilon=1.0) == 25.0
        assert priv.dp.std("x", bounds=(0, 10), epsilon=1.0) == 5.0
    # A large negative noise on the squares drives the numerator below zero: clamped to 0.
    with noise(priv, value=-(2**40)):  # min_count=0: show it despite its negative count
        assert priv.dp.var("x", bounds=(0, 10), epsilon=1.0, min_count=0) == 0.0
        assert np.isnan(priv.dp.var("x", bounds=(0, 10), epsilon=1.0))


def test_real_noise_always_lands_in_the_documented_range(protect_seeded, rng):
    data = pd.DataFrame({"x": rng.uniform(-5, 15, 30)})
    priv = protect_seeded(data, seed=11, epsilon=1000)
    # ε = 0.01 on 30 rows: the noise dwarfs the data and both clamps are hit.
    # min_count=0: every value is shown, however small its noisy count, to reach both clamps.
    values = [priv.dp.var("x", bounds=(0, 10), epsilon=0.01, min_count=0) for _ in range(200)]
    assert min(values) >= 0.0
    assert max(values) <= 25.0
    assert 0.0 in values
    assert 25.0 in values
    stds = [priv["x"].dp.std(bounds=(0, 10), epsilon=0.01, min_count=0) for _ in range(100)]
    assert 0.0 <= min(stds) <= max(stds) <= 5.0


# --- floats ----------------------------------------------------------------------------------

AWKWARD = {
    "huge": [1e300, -1e300, 1e150, -1e150, 3.0, 7.25],
    "infinite": [np.inf, -np.inf, np.inf, 4.0, np.nan, 6.5],
    "near the bounds": [
        math.nextafter(10.0, math.inf),
        math.nextafter(10.0, 0.0),
        math.nextafter(0.0, 1.0),
        math.nextafter(0.0, -1.0),
        5e-324,
        10.0 - 1e-15,
    ],
    "all missing": [np.nan, np.nan, np.nan],
    "tiny spread": [5.0 + k * 2.0**-40 for k in range(6)],
}


@pytest.mark.parametrize("values", AWKWARD.values(), ids=AWKWARD.keys())
def test_awkward_floats(ref, protect_seeded, noise, values):
    data = pd.DataFrame({"x": values})
    priv = protect_seeded(data, epsilon=10)
    with noise(priv, value=0):
        var = priv.dp.var("x", bounds=(0, 10), epsilon=1.0, min_count=0)
        std = priv.dp.std("x", bounds=(0, 10), epsilon=1.0, ci=0.9, min_count=0)
    assert 0.0 <= var <= 25.0
    mom = reference(ref, data, "x", (0, 10), 1.0)
    check(var, "var", mom, 1)
    assert std.lower <= std.value <= std.upper
    assert std.lower >= 0.0
    assert std.upper <= 5.0
    assert all(math.isfinite(v) for v in std[:3])


def test_extreme_public_bounds(ref, protect_seeded, noise):
    # The widest bounds accepted (±1e150): squares reach 1e300 without overflowing.
    data = pd.DataFrame({"x": [1e150, -1e150, 3.0, 1e300, np.inf]})
    priv = protect_seeded(data, epsilon=10)
    with noise(priv, value=0):
        var = priv.dp.var("x", bounds=(-1e150, 1e150), epsilon=1.0)
    check(var, "var", reference(ref, data, "x", (-1e150, 1e150), 1.0), 1)
    assert var == pytest.approx(8e299, rel=1e-9)  # the sample variance of the clipped values


def test_row_order_never_changes_the_release(incomes, protect_seeded, noise, rng):
    shuffled = incomes.iloc[rng.permutation(len(incomes))]
    results = []
    for frame in (incomes, shuffled, incomes.iloc[::-1]):
        priv = protect_seeded(frame, epsilon=10)
        with noise(priv, value=5):
            results.append(
                (
                    priv.dp.var("income", bounds=BOUNDS, epsilon=0.7),
                    priv["income"].dp.std(bounds=BOUNDS, epsilon=0.7, ddof=0),
                )
            )
    assert results[0] == results[1] == results[2]  # bit for bit


# --- confidence intervals --------------------------------------------------------------------


@pytest.mark.parametrize("how", ["var", "std"])
def test_ci_returns_an_estimate_around_the_value(incomes, protect_seeded, noise, how):
    priv = protect_seeded(incomes, epsilon=10)
    with noise(priv, value=0):
        plain = release(priv, "series", how, "income", bounds=BOUNDS, epsilon=0.5)
        estimate = release(priv, "frame", how, "income", bounds=BOUNDS, epsilon=0.5, ci=0.9)
    assert isinstance(estimate, pandas_dp.Estimate)
    assert estimate.value == plain
    assert estimate.confidence == pytest.approx(0.9)
    assert 0.0 <= estimate.lower < estimate.value < estimate.upper
    top = (BOUNDS[1] - BOUNDS[0]) / 2
    assert estimate.upper <= (top**2 if how == "var" else top)
    if how == "std":  # the square roots of the variance's interval
        with noise(priv, value=0):
            var = priv.dp.var("income", bounds=BOUNDS, epsilon=0.5, ci=0.9)
        assert estimate.value == pytest.approx(math.sqrt(var.value), rel=1e-15)
        assert estimate.lower == pytest.approx(math.sqrt(var.lower), rel=1e-15)
        assert estimate.upper == pytest.approx(math.sqrt(var.upper), rel=1e-15)


def test_variance_intervals_cover_the_true_clipped_variance(protect_seeded, rng):
    """Coverage of ``ci=0.95`` over 400 seeded releases.

    The interval is built by interval arithmetic from three 1 - α/3 intervals, so its true
    coverage is at least 95% (and, being conservative, much higher). If it were exactly 95%,
    more than ``binom.ppf(1 - 1e-6, 400, 0.05)`` = 43 misses would occur with probability
    below 1e-6: the test cannot flake for a correct implementation.
    """
    data = pd.DataFrame({"x": rng.normal(40, 15, 2000)})
    runs = 400
    priv = protect_seeded(data, seed=5, epsilon=runs)
    truth = data["x"].clip(0, 100).var(ddof=1)
    estimates = [priv.dp.var("x", bounds=(0, 100), epsilon=1.0, ci=0.95) for _ in range(runs)]
    covered = sum(e.lower <= truth <= e.upper for e in estimates)
    print(f"variance ci=0.95: covered the true clipped variance in {covered}/{runs} runs")
    assert runs - covered <= stats.binom.ppf(1 - 1e-6, runs, 0.05)
    # The intervals are informative: well inside [0, 2500].
    assert np.median([e.upper - e.lower for e in estimates]) < 0.5 * truth


# --- arguments -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"ddof": -1}, DPValueError),
        ({"ddof": 1.0}, DPValueError),
        ({"ddof": True}, DPValueError),
        ({"ddof": "1"}, DPValueError),
        ({"bounds": (10, 0)}, DPValueError),
        ({"bounds": (0, np.nan)}, DPValueError),
        ({"epsilon": 0}, DPValueError),
        ({"epsilon": "1"}, DPTypeError),
        ({"ci": 1.5}, DPValueError),
        ({"mechanism": "gauss"}, DPValueError),
    ],
)
def test_bad_arguments_charge_nothing(incomes, protect_seeded, kwargs, error):
    priv = protect_seeded(incomes, epsilon=10)
    arguments = {"bounds": BOUNDS, "epsilon": 1.0, **kwargs}
    for how in ("var", "std"):
        with pytest.raises(error):
            getattr(priv.dp, how)("income", **arguments)
        with pytest.raises(error):
            getattr(priv["income"].dp, how)(**arguments)
    assert priv.dp.session.spent.epsilon == 0
    assert priv.dp.session.releases == ()


def test_gaussian_noise_records_gaussian_measurements(ref, incomes, protect_seeded, noise):
    priv = protect_seeded(incomes, epsilon=10, delta=1e-6)
    with noise(priv, value=0):
        var = priv.dp.var("income", bounds=BOUNDS, epsilon=0.5, mechanism="gaussian")
    (record,) = priv.dp.session.releases
    assert {m.mechanism for m in record.measurements} == {"discrete_gaussian"}
    assert all(m.epsilon == Fraction(1, 6) for m in record.measurements)
    # Without delta=, the release takes the share of the session's δ that its ε takes of ε.
    assert sum(m.delta for m in record.measurements) == ref.as_fraction(1e-6) * Fraction(1, 20)
    # Gaussian noise may live on a coarser lattice: each exact aggregate is first rounded
    # (half up) to a multiple of 2**shift of its steps, shift = the measurement's noise
    # exponent minus the aggregate's own. The reference does the same, exactly.
    mom = reference(ref, incomes, "income", BOUNDS, 0.5)

    def coarse(units: int, label: str, exponent: int) -> int:
        shift = ref.measurement(record, label).exponent - exponent
        assert shift >= 0
        return (units + (1 << shift >> 1)) >> shift << shift

    rounded = ref.Moments(
        coarse(mom.count, "count(income)", 0),
        coarse(mom.centred_units, "centred_sum(income)", mom.lattice.exponent),
        coarse(mom.square_units, "squares(income)", mom.squares.exponent),
        mom.lattice,
        mom.squares,
        mom.reach,
    )
    check(var, "var", rounded, 1)
