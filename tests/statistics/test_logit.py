"""``priv.dp.logit`` (issue 42): a logistic model from ``ols``' one noisy Gram matrix.

The measurement's exact sums are ``ols``' (the response's range ``[0, 1]``); their noise is
one discrete ℓ∞ K-norm vector at ``1/p`` of ``ols``' per-sum Laplace scale (``p`` sums, each
moved by at most one unit by a row); the fit is post-processing. Under zero noise the
coefficients are that post-processing of the exact sums (computed here by hand, from a
design built with numpy), and within a documented distance of the maximum likelihood fit of
the clipped rows (a Newton-Raphson fit written here): the fit reads the design through its
ranges and first two moments, so it approximates the exact fit (bounds measured on normal
and uniform designs). Data are multiples of 1/8 within bounds exact on the lattice. Refusals
charge nothing; one adversarial row moves every exact sum by at most one unit and changes
neither the release's shape nor its warnings; results are shaped as statsmodels'
``LogitResults``.
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

import pandas_dp
from pandas_dp.api.queries.regression import plan_logit, plan_ols
from pandas_dp.api.release import resolve
from pandas_dp.engines.pandas_engine import aggregate_frame
from pandas_dp.errors import DPTypeError, DPValueError
from pandas_dp.mechanisms.knorm import DiscreteLinfKNorm
from pandas_dp.planning.measurement.products import UNIT
from pandas_dp.planning.statistics.logistic import fit_logit

BOUNDS = {"x": (0.0, 16.0), "z": (0.0, 16.0)}
KEYS = {"g": ["a", "b", "c"]}
FORMULA = "y ~ x + z + C(g)"
#: statsmodels' order (patsy's): the intercept, categorical terms, then numeric ones.
NAMES = ["Intercept", "C(g)[T.b]", "C(g)[T.c]", "x", "z"]


def data(rows: int = 4000, *, normal: bool = True, seed: int = 42) -> pd.DataFrame:
    """A known logistic model; ``x`` normal (or uniform) on a 1/8 lattice of [0, 16]."""
    gen = np.random.default_rng(seed)  # test data only, never noise
    if normal:
        x = np.clip(np.round(gen.normal(8, 2.5, rows) * 8) / 8, 0, 16)
    else:
        x = gen.integers(0, 129, rows) / 8
    z = np.clip(np.round(gen.normal(8, 3, rows) * 8) / 8, 0, 16)
    g = np.array(["a", "b", "c"])[gen.integers(0, 3, rows)]
    score = -0.5 + 0.4 * (x - 8) - 0.2 * (z - 8) + np.where(g == "b", 0.7, 0.0)
    y = gen.uniform(size=rows) < 1 / (1 + np.exp(-score))
    frame = pd.DataFrame({"x": x, "z": z, "g": g, "y": y.astype(np.int64)})
    frame.loc[::17, "z"] = np.nan  # rows missing a variable are left out, as statsmodels does
    frame.loc[5::23, "g"] = "d"  # a level that is not among the keys: left out too
    return frame


def kept_design(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The complete rows' design in statsmodels' order (by hand) and the response."""
    kept = frame[frame["g"].isin(KEYS["g"]) & frame["z"].notna()]
    design = np.column_stack(
        [
            np.ones(len(kept)),
            (kept["g"] == "b").astype(float),
            (kept["g"] == "c").astype(float),
            np.clip(kept["x"], 0, 16),
            np.clip(kept["z"], 0, 16),
        ]
    )
    return design, np.clip(kept["y"].to_numpy(np.float64), 0, 1)


def newton_raphson(design: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The maximum likelihood logistic fit (statsmodels' ``Logit.fit`` method)."""
    theta = np.zeros(design.shape[1])
    for _ in range(100):
        p = 1 / (1 + np.exp(-design @ theta))
        step = np.linalg.solve((design * (p * (1 - p))[:, None]).T @ design, design.T @ (y - p))
        theta += step
        if np.abs(step).max() < 1e-12:
            break
    return theta


def exact_gram(frame: pd.DataFrame) -> np.ndarray:
    """The Gram matrix of ``(1, z_b, z_c, z_x, z_z, 2y - 1)``, in statsmodels' order."""
    design, y = kept_design(frame)
    scaled = np.column_stack(
        [
            np.ones(len(y)),
            2 * design[:, 1] - 1,
            2 * design[:, 2] - 1,
            (design[:, 3] - 8) / 8,
            (design[:, 4] - 8) / 8,
            2 * y - 1,
        ]
    )
    return scaled.T @ scaled


def release(priv: pd.DataFrame, **kwargs: Any) -> Any:
    options = {"bounds": BOUNDS, "keys": KEYS, "epsilon": 1.0, **kwargs}
    return priv.dp.logit(FORMULA, **options)


def released_and_statsmodels(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> tuple[Any, Any]:
    """A zero-noise release on 20,000 rows (uniform ``x``) and ``smf.logit`` on its clipped
    complete rows (skipped without statsmodels, which is not a dependency)."""
    smf = pytest.importorskip("statsmodels.formula.api")
    frame = data(20_000, normal=False)
    priv = protect_seeded(frame, epsilon=10.0)
    with noise(priv):
        model = release(priv)
    kept = frame[frame["g"].isin(KEYS["g"]) & frame["z"].notna()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exact = smf.logit(FORMULA, data=kept).fit(disp=0)
    return model, exact


def test_zero_noise_is_the_post_processing_of_the_exact_sums(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    frame = data(2000)  # count·ε under 150 times the 21 sums: one fit (test_logit_steps.py)
    priv = protect_seeded(frame, epsilon=10.0)
    with noise(priv):
        model = release(priv)
    design, _ = kept_design(frame)
    assert model.nobs == len(design)
    assert list(model.params.index) == NAMES  # statsmodels' names and order
    assert model.params.name is None  # as statsmodels'
    # The same post-processing of the exact sums, computed by hand: equal to rounding.
    reference = fit_logit(exact_gram(frame), 0.0, model.design)
    pd.testing.assert_series_equal(model.params, reference.params, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(
    ("normal", "bound"),
    [(True, 0.03), (False, 0.05)],
    ids=["normal design", "uniform design"],
)
def test_zero_noise_distance_to_maximum_likelihood(
    normal: bool, bound: float, noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    """The documented bound: the maximum-entropy-design fit against the exact one, 20,000 rows.

    Measured: L2 distance 0.008 (x normal) and 0.017 (x uniform, its score spread 6.4 on
    [0, 16]) for coefficients of norm about 2.2; the sampling error of the
    exact fit itself is about 0.1 here. The fit reads the design's maximum-entropy law given
    its ranges and pairwise moments: what the law holds beyond them (here the exclusivity
    of g's levels) is the distance left, which more rows do not shrink (the fit's Notes).
    """
    frame = data(20_000, normal=normal)
    priv = protect_seeded(frame, epsilon=10.0)
    with noise(priv):
        model = release(priv)
    exact = newton_raphson(*kept_design(frame))
    distance = float(np.linalg.norm(model.params.to_numpy() - exact))
    print(f"normal={normal}: L2 distance to the exact fit {distance:.4f}")
    assert distance < bound


def test_scale_and_charge_are_ols_measurement(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    priv = protect_seeded(data(), epsilon=4.0)
    with noise(priv) as calls:
        release(priv, epsilon=0.5)
    sums = (4 + 2) * (4 + 3) // 2  # m = 4 design columns: the Gram matrix of (1, z_1..z_4, z_y)
    # A twentieth of ε on the row count; 4,000 rows at ε = 0.5 are too few for two steps
    # (test_logit_steps.py), so one fit takes the rest.
    count, call = calls
    assert count.size == 1
    assert count.mechanism.scale == Fraction(1) / Fraction(1, 40)
    assert call.size == sums
    assert call.mechanism == DiscreteLinfKNorm(Fraction(UNIT) / Fraction(19, 40), sums)
    (logit,) = priv.dp.session.releases
    assert logit.query == "logit"
    assert logit.cost.epsilon == Fraction(1, 2)
    _, measurement = logit.measurements
    assert measurement.kind == "linf_knorm"
    assert measurement.sensitivity == UNIT  # each sum's (ℓ∞), not the L1 bound sums * UNIT
    assert measurement.pure_epsilon == Fraction(19, 40)
    assert measurement.label == "products(C(g)[T.b], C(g)[T.c], x, z, y)"
    assert ("y", 0.0, 1.0) in logit.bounds
    assert "post-processing" in logit.note


def test_the_exact_sums_are_ols_ones(protect_seeded: Callable[..., Any]) -> None:
    """A logit's one fit measures ``ols``' Gram matrix with the response on [0, 1] (after a
    twentieth of ε on the row count, whose plan's placeholder is that fit).

    The same measure and exact sums; the noise is one K-norm vector at ``1/p`` of ``ols``'
    per-sum Laplace scale (audited in tests/statistical/test_products_audit.py).
    """
    frame = data(500)
    frame.loc[3, "y"] = 5  # clipped into [0, 1] alike
    priv = protect_seeded(frame, epsilon=4.0)
    logit = plan_logit(resolve(priv), FORMULA, bounds=BOUNDS, keys=KEYS, epsilon=1.0)
    ols = plan_ols(resolve(priv), FORMULA, bounds={**BOUNDS, "y": (0, 1)}, keys=KEYS, epsilon=0.95)
    (mine,), (theirs,) = logit.parts.values(), ols.parts.values()
    assert mine.layout == theirs.layout
    assert mine.measurement.label == theirs.measurement.label
    sums = mine.layout.size
    assert isinstance(mine.mechanism, DiscreteLinfKNorm)
    assert mine.mechanism.scale * sums == theirs.mechanism.scale
    assert mine.measurement.sensitivity * sums == theirs.measurement.sensitivity
    assert mine.measurement.pure_epsilon == theirs.measurement.pure_epsilon
    ours = aggregate_frame(frame, (mine.measure,)).values[0]
    reference = aggregate_frame(frame, (theirs.measure,)).values[0]
    np.testing.assert_array_equal(ours, reference)


@pytest.mark.parametrize(
    "response",
    [
        lambda y: y.astype(bool),
        lambda y: y.astype("boolean"),
        lambda y: y.astype(np.float64),
        lambda y: y.astype("Int64"),
    ],
    ids=["bool", "nullable boolean", "float", "nullable int"],
)
def test_binary_dtypes_give_the_same_fit(
    response: Callable[[pd.Series], pd.Series],
    noise: Callable[..., Any],
    protect_seeded: Callable[..., Any],
) -> None:
    frame = data(800)
    priv = protect_seeded(frame, epsilon=10.0)
    with noise(priv):
        expected = release(priv).params
    other = protect_seeded(frame.assign(y=response(frame["y"])), epsilon=10.0)
    with noise(other):
        got = release(other).params
    pd.testing.assert_series_equal(got, expected)


def test_values_outside_zero_one_are_clipped_and_events_are_responses(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    frame = data(800)
    priv = protect_seeded(frame, epsilon=10.0)
    with noise(priv):
        expected = release(priv).params
    wild = frame.assign(y=frame["y"].map({0: -3.0, 1: 7.0}))  # clipped into [0, 1], unread
    other = protect_seeded(wild, epsilon=10.0)
    with noise(other):
        got = other.dp.logit(FORMULA, bounds={**BOUNDS, "y": (0, 1)}, keys=KEYS, epsilon=1.0)
    pd.testing.assert_series_equal(got.params, expected)
    event = protect_seeded(frame.assign(v=frame["y"] * 40.0), epsilon=10.0)
    with noise(event):
        model = event.dp.logit(
            "I(v > 20) ~ x + z + C(g)", bounds={**BOUNDS, "v": (0, 40)}, keys=KEYS, epsilon=1.0
        )
    pd.testing.assert_series_equal(model.params, expected)


def test_statsmodels_surface(protect_seeded: Callable[..., Any]) -> None:
    priv = protect_seeded(data(), epsilon=10.0, seed=1)
    model = release(priv, epsilon=5.0)
    assert list(model.bse.index) == NAMES
    assert list(model.conf_int().columns) == [0, 1]
    assert list(model.cov_params().index) == NAMES
    ends = model.conf_int(0.1)
    assert (ends[0] < model.params).all()
    assert (model.params < ends[1]).all()
    assert model.pvalues.between(0, 1).all()
    pd.testing.assert_series_equal(model.tvalues, model.params / model.bse)
    assert model.df_model == 4
    assert model.df_resid == pytest.approx(model.nobs - 5)
    assert 0 <= model.prsquared <= 1
    text = str(model.summary())
    for part in ("Logit Regression Results", "Dep. Variable:", "No. Observations:", "P>|z|"):
        assert part in text
    assert "[0.025" in text
    assert "<table>" in model._repr_html_()
    new = pd.DataFrame({"x": [1.0, 9.0], "z": [3.0, 4.0], "g": ["a", "b"]}, index=[7, 9])
    score = (
        model.params["Intercept"] + model.params["x"] * new["x"] + model.params["z"] * new["z"]
        + model.params["C(g)[T.b]"] * (new["g"] == "b")
    )  # fmt: skip
    pd.testing.assert_series_equal(model.predict(new, which="linear"), score)
    pd.testing.assert_series_equal(model.predict(new), 1 / (1 + np.exp(-score)))


@pytest.mark.parametrize(
    "name", ["resid", "fittedvalues", "resid_response", "resid_pearson", "resid_dev"]
)
def test_per_row_results_are_private(name: str, protect_seeded: Callable[..., Any]) -> None:
    model = release(protect_seeded(data(300), epsilon=10.0))
    with pytest.raises(DPValueError, match=f"{name} is per row"):
        getattr(model, name)


def _frame_with_text_response() -> pd.DataFrame:
    return data(300).assign(y=lambda f: f["y"].map({0: "no", 1: "yes"}))


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda p: p.dp.logit("label ~ x", bounds=BOUNDS, epsilon=1.0), DPTypeError, "binary"),
        (lambda p: p.dp.logit("y ~ x", bounds={**BOUNDS, "y": (0, 5)}, epsilon=1.0),
         DPValueError, "within \\[0, 1\\]"),
        (lambda p: p.dp.logit("I(2 * y) ~ x", bounds={**BOUNDS, "y": (0, 1)}, epsilon=1.0),
         DPValueError,
         "within \\[0, 1\\]"),
        (lambda p: p.dp.logit("I(x > 3) ~ z", bounds={"z": (0, 16)}, epsilon=1.0),
         DPValueError, "bounds"),
        (lambda p: p.dp.logit("y ~ center(x)", bounds=BOUNDS, epsilon=1.0), DPValueError,
         "learn"),
        (lambda p: p.dp.logit("y ~ x + lag(z)", bounds=BOUNDS, epsilon=1.0), DPValueError,
         "rows"),
        (lambda p: p.dp.logit("y ~ I(x - x.mean())", bounds=BOUNDS, epsilon=1.0), DPValueError,
         "reads other rows"),
        (lambda p: p.dp.logit("y ~ x + g", bounds=BOUNDS, epsilon=1.0), DPValueError, "levels"),
        (lambda p: p.dp.logit("y ~ x", epsilon=1.0), DPValueError, "bounds"),
        (lambda p: p.dp.logit("y ~ x - 1", bounds=BOUNDS, epsilon=1.0), DPValueError,
         "intercept"),
        (lambda p: p.dp.logit("y ~ x", p, bounds=BOUNDS, epsilon=1.0), DPTypeError,
         "logit\\(\\) takes no data"),
        (lambda p: p.dp.logit(bounds=BOUNDS, epsilon=1.0), DPTypeError, "logit\\(\\) needs"),
        (lambda p: p.dp.logit("y ~ x", bounds=BOUNDS, epsilon=1.0, alpha=2), DPValueError,
         "alpha"),
        (lambda p: p.dp.logit("y ~ x", bounds=BOUNDS, epsilon=99.0), Exception, "budget|exceed"),
    ],
)  # fmt: skip
def test_refusals_charge_nothing(
    call: Callable[[Any], Any], error: type[Exception], match: str,
    charges_nothing: Callable[..., Any], protect_seeded: Callable[..., Any],
) -> None:  # fmt: skip
    frame = data(300).assign(label=lambda f: f["y"].map({0: "no", 1: "yes"}))
    priv = protect_seeded(frame, epsilon=4.0)
    with charges_nothing(priv), pytest.raises(error, match=match):
        call(priv)


def test_preview_charges_nothing(protect_seeded: Callable[..., Any]) -> None:
    priv = protect_seeded(data(), epsilon=4.0)
    preview = priv.dp.preview.logit(FORMULA, bounds=BOUNDS, keys=KEYS, epsilon=1.0)
    assert preview.epsilon == 1.0
    assert list(preview.table["how"]) == ["count", "logit"]  # the row count, then one fit
    assert not priv.dp.session.releases


ADVERSARIAL = [
    {"x": np.inf, "z": -1e308, "g": "b", "y": np.nan},
    {"x": 1e300, "z": 16.0, "g": "c", "y": -7},
    {"x": 16.0, "z": 16.0, "g": "b", "y": 1},
    {"x": -5.0, "z": 0.0, "g": "zz", "y": 3},
    {"x": np.nan, "z": np.nan, "g": None, "y": np.nan},
    {"x": 0.0, "z": 0.0, "g": "a", "y": 0},
]


@pytest.mark.parametrize("row", ADVERSARIAL)
def test_neighbour_moves_each_sum_by_at_most_one_unit_and_keeps_the_shape(
    row: dict[str, Any], protect_seeded: Callable[..., Any]
) -> None:
    """D and D plus one adversarial row: same shape, warnings and refusals; sums within 1."""
    frame = data(200).astype({"y": np.float64})
    after = pd.concat([frame, pd.DataFrame([row], index=[10**6])])
    outcomes = []
    for version in (frame, after):
        priv = protect_seeded(version, epsilon=4.0)
        planned = plan_logit(resolve(priv), FORMULA, bounds=BOUNDS, keys=KEYS, epsilon=1.0)
        (part,) = planned.parts.values()
        sums = aggregate_frame(version, (part.measure,)).values[0].astype(object)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            model = release(priv)
        outcomes.append((sums, model, [str(w.message) for w in seen]))
    (before, one, warned_one), (moved, two, warned_two) = outcomes
    assert (np.abs(moved - before) <= UNIT).all()
    assert warned_one == warned_two == []
    assert list(one.params.index) == list(two.params.index)
    assert one.params.dtype == two.params.dtype
    assert list(one.conf_int().columns) == list(two.conf_int().columns)
    assert np.isfinite(two.params).all()
    assert np.isfinite(two.bse).all()
    with pytest.raises(DPValueError, match="per row"):
        two.resid  # noqa: B018


def test_post_processing_is_total_under_wild_noise() -> None:
    """Any noisy matrix (all-zero, negative, huge) gives finite coefficients, never raises."""
    priv = pd.DataFrame({"x": [1.0], "y": [1]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
        design = plan_logit(
            resolve(priv.dp.protect(epsilon=1.0, rng=0)), "y ~ x", bounds={"x": (0, 1)},
            epsilon=1.0,
        )  # fmt: skip
    (part,) = design.parts.values()
    model_design = part.measure.design
    gen = np.random.default_rng(3)  # test data only
    for gram in (np.zeros((3, 3)), -np.ones((3, 3)) * 1e6, gen.normal(0, 1e9, (3, 3))):
        model = fit_logit((gram + gram.T) / 2, 50.0, model_design)
        assert np.isfinite(model.params).all()
        assert np.isfinite(model.bse).all()


def test_intervals_cover_sampled() -> None:
    """A sampled version of tests/statistical/test_logit_coverage.py: 60 runs, ε = 1.

    Coverage of the 95% intervals for the true coefficients of a normal design; asserted
    at least 0.95 - 3 sd of a binomial over 60 runs x 4 coefficients (0.908).
    """
    runs, rows = 60, 5_000
    beta = np.array([-0.5, 0.6, 0.5, -0.4])
    gen = np.random.default_rng(2024)  # data and seeds
    hits = 0
    for _ in range(runs):
        x = np.clip(gen.normal(0, 1, (rows, 3)), -4, 4)
        y = gen.uniform(size=rows) < 1 / (1 + np.exp(-(beta[0] + x @ beta[1:])))
        frame = pd.DataFrame(x, columns=["a", "b", "c"]).assign(y=y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)  # seeded noise
            priv = frame.dp.protect(epsilon=1.0, rng=int(gen.integers(1 << 62)))
        bounds = {name: (-4.0, 4.0) for name in "abc"}
        ends = priv.dp.logit("y ~ a + b + c", bounds=bounds, epsilon=1.0).conf_int().to_numpy()
        hits += int(((ends[:, 0] <= beta) & (beta <= ends[:, 1])).sum())
    coverage = hits / (runs * beta.size)
    print(f"coverage {coverage:.3f}")
    assert coverage >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / (runs * beta.size))


def test_zero_noise_against_statsmodels(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    """statsmodels' ``smf.logit`` on the clipped complete rows: same names and order; values
    within the documented distance (the fit approximates maximum likelihood, module Notes).

    statsmodels is not a dependency (``pandas-dp[bench]``): skipped without it; the
    Newton-Raphson reference above checks the same distance always.
    """
    model, exact = released_and_statsmodels(noise, protect_seeded)
    assert list(model.params.index) == list(exact.params.index)
    assert model.params.name == exact.params.name
    distance = float(np.linalg.norm(model.params - exact.params))
    assert distance < 0.05, distance
    # the standard errors: statsmodels' sampling ones, ours add no noise at zero noise but
    # keep the noise's share (the noise drawn was zero, its variance is not)
    assert (model.bse >= exact.bse * 0.9).all()


def test_privacy_unit_caps_multiply_the_sensitivity(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    """Under a privacy unit with up to 3 rows each, the sums' sensitivity is 3 rows' (caps_for)."""
    frame = data(600).assign(pid=lambda f: np.arange(len(f)) // 4)
    priv = protect_seeded(frame, epsilon=4.0, privacy_unit="pid", max_rows_per_unit=3)
    with noise(priv) as calls:
        model = release(priv, epsilon=1.0)
    sums = (4 + 2) * (4 + 3) // 2
    count, call = calls  # the row count first (a unit moves it by 3), then one fit
    assert count.mechanism.scale == Fraction(3) / Fraction(1, 20)
    assert call.mechanism == DiscreteLinfKNorm(Fraction(3 * UNIT) / Fraction(19, 20), sums)
    (logit,) = priv.dp.session.releases
    _, measurement = logit.measurements
    assert measurement.sensitivity == 3 * UNIT  # each of the sums moved by 3 rows' units
    assert model.nobs <= 3 * 150  # at most 3 of each unit's 4 rows are kept


@pytest.mark.parametrize("case", ["empty", "all ones", "all zeros"])
def test_degenerate_data_release_finite_and_uninformative_where_they_should(
    case: str, protect_seeded: Callable[..., Any]
) -> None:
    """No rows, or one outcome only: released like any data (same shape, no error, no
    warning). With one outcome the exact log-odds are infinite; the fit takes the count of
    ones within (0.5, n - 0.5) and predicts that outcome, with wide intervals. (How close to
    0 or 1 depends on the noise drawn: within 0.015 for seeds 0-5; asserted within 0.05.)"""
    frame = data(2000)
    ones = case == "all ones"
    frame = frame.iloc[:0] if case == "empty" else frame.assign(y=int(ones))
    model = release(protect_seeded(frame, epsilon=4.0))
    assert list(model.params.index) == NAMES
    assert np.isfinite(model.params).all()
    assert np.isfinite(model.bse).all()
    if case != "empty":
        row = pd.DataFrame({"x": [8.0], "z": [8.0], "g": ["a"]})
        probability = float(model.predict(row).iloc[0])
        assert probability > 0.95 if ones else probability < 0.05
        assert model.bse["Intercept"] > 1


def test_get_prediction_as_statsmodels(protect_seeded: Callable[..., Any]) -> None:
    model = release(protect_seeded(data(), epsilon=10.0, seed=3), epsilon=2.0)
    rows = pd.DataFrame(
        {"x": [0.0, 9.0, np.nan], "z": [0.0, 4.0, 1.0], "g": ["a", "c", "b"]}, index=[4, 5, 6]
    )
    frame = model.get_prediction(rows).summary_frame(0.1)
    assert list(frame.columns) == ["predicted", "se", "ci_lower", "ci_upper"]
    assert list(frame.index) == [4, 5, 6]
    pd.testing.assert_series_equal(frame["predicted"], model.predict(rows), check_names=False)
    assert frame.iloc[2].isna().all()  # a row missing a variable, as statsmodels gives
    known = frame.iloc[:2]
    assert (
        (known["ci_lower"] < known["predicted"]) & (known["predicted"] < known["ci_upper"])
    ).all()
    # The first row's design is the intercept alone: its log-odds interval is conf_int's.
    linear = model.get_prediction(rows, which="linear")
    ends = linear.conf_int(0.1)
    np.testing.assert_allclose(ends[0], model.conf_int(0.1).loc["Intercept"].to_numpy())
    np.testing.assert_allclose(linear.se[0], model.bse["Intercept"])
    p = frame["predicted"].to_numpy()[:2]
    np.testing.assert_allclose(frame["se"].to_numpy()[:2], p * (1 - p) * linear.se[:2])
    np.testing.assert_allclose(
        frame[["ci_lower", "ci_upper"]].to_numpy()[:2], 1 / (1 + np.exp(-ends[:2]))
    )
    with pytest.raises(DPValueError, match="which="):
        model.get_prediction(rows, which="var")


def test_predict_gives_nan_for_missing_and_refuses_unknown_levels(
    protect_seeded: Callable[..., Any],
) -> None:
    model = release(protect_seeded(data(), epsilon=10.0, seed=2), epsilon=2.0)
    rows = pd.DataFrame({"x": [1.0, 2.0, np.nan], "z": [3.0, 4.0, 5.0], "g": ["a", None, "c"]})
    predicted = model.predict(rows)
    assert 0 < predicted.iloc[0] < 1
    assert predicted.iloc[1:].isna().all()
    with pytest.raises(DPValueError, match="'g' holds \\['zz'\\] outside the model's levels"):
        model.predict(pd.DataFrame({"x": [1.0], "z": [3.0], "g": ["zz"]}))
