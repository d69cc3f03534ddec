"""``priv.dp.groupby(...).ols`` and ``.logit`` (issue 42): one model per public key.

The grouped release measures the ungrouped model's sums of products once per group and
charges ε once (parallel composition). Under zero noise each group's model is statsmodels'
fit of that group's clipped complete rows (data on the 1/8 lattice, within bounds); the scale
handed to the sampler is ``p·l1/ε`` for the whole table of groups; refusals charge nothing;
a frame and its neighbour give the same result shape; a group that looks empty is NaN.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

import pandas_dp  # noqa: F401  (registers the accessors)
from pandas_dp.errors import DPTypeError, DPValueError
from pandas_dp.planning.measurement.products import UNIT
from pandas_dp.planning.statistics.grouped_models import ModelsByGroup
from pandas_dp.planning.statistics.logistic import LogitResults
from pandas_dp.planning.statistics.regression import OLSResults

BOUNDS = {"x": (0.0, 16.0), "y": (-48.0, 80.0)}  # z = (y - 16) / 64: on the lattice
LEVELS = {"h": ["u", "v"]}
GROUPS = ["a", "b", "c"]
FORMULA = "y ~ x + C(h)"
#: Three design columns (x, C(h)[T.v]) and the response: the Gram matrix of (1, z1, z2, zy).
SUMS = (2 + 2) * (2 + 3) // 2


def data(rows: int = 3000, seed: int = 7) -> pd.DataFrame:
    """A different line per group; ``x`` and ``y`` multiples of 1/8 inside the bounds."""
    gen = np.random.default_rng(seed)  # test data only, never noise
    x = gen.integers(0, 129, rows) / 8
    g = np.array(GROUPS)[gen.integers(0, 3, rows)]
    h = np.array(["u", "v"])[gen.integers(0, 2, rows)]
    slope = pd.Series(g).map({"a": 2.0, "b": -1.0, "c": 0.5}).to_numpy()
    y = 1 + slope * x + np.where(h == "v", 3.0, 0.0) + gen.integers(-16, 17, rows) / 8
    frame = pd.DataFrame({"g": g, "h": h, "x": x, "y": np.clip(y, -48, 80)})
    frame.loc[::19, "x"] = np.nan  # left out in its group, as statsmodels leaves it out
    return frame


def release(priv: Any, keys: list[str] = GROUPS, **options: Any) -> ModelsByGroup[Any]:
    options = {"bounds": BOUNDS, "keys": LEVELS, "epsilon": 1.0, **options}
    return priv.dp.groupby("g", keys=keys).ols(FORMULA, **options)


def test_zero_noise_gives_statsmodels_per_group(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    smf = pytest.importorskip("statsmodels.formula.api")
    frame = data()
    priv = protect_seeded(frame, epsilon=10.0)
    with noise(priv):
        models = release(priv)
    assert isinstance(models, ModelsByGroup)
    assert list(models) == GROUPS
    for key, part in frame.dropna().groupby("g"):
        exact = smf.ols(FORMULA, data=part).fit()
        model = models[key]
        assert isinstance(model, OLSResults)
        assert model.ridge == 0
        pd.testing.assert_series_equal(
            model.params[exact.params.index],
            exact.params,
            check_names=False,
            rtol=1e-9,
            atol=1e-10,
        )
        assert model.nobs == exact.nobs
    expected = pd.DataFrame(
        {key: smf.ols(FORMULA, data=part).fit().params for key, part in frame.dropna().groupby("g")}
    ).T
    table = models.params
    assert table.index.name == "g"
    assert list(table.columns) == ["Intercept", "C(h)[T.v]", "x"]  # statsmodels' order
    pd.testing.assert_frame_equal(table, expected, check_names=False, rtol=1e-9, atol=1e-10)
    assert list(models.bse.columns) == list(table.columns)
    assert list(models.nobs.index) == GROUPS


def test_logit_zero_noise_against_statsmodels_per_group(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    """statsmodels' ``smf.logit`` per group, within the ungrouped test's distance (0.05)."""
    smf = pytest.importorskip("statsmodels.formula.api")
    gen = np.random.default_rng(11)  # test data only, never noise
    rows = 16_000
    x = gen.integers(0, 129, rows) / 8
    g = np.array(["a", "b"])[gen.integers(0, 2, rows)]
    slope = np.where(g == "a", 0.4, -0.3)
    y = gen.uniform(size=rows) < 1 / (1 + np.exp(-(slope * (x - 8) + 0.2)))
    frame = pd.DataFrame({"g": g, "x": x, "y": y.astype(np.int64)})
    priv = protect_seeded(frame, epsilon=10.0)
    with noise(priv):
        models = priv.dp.groupby("g", keys=["a", "b"]).logit(
            "y ~ x", bounds={"x": (0, 16)}, epsilon=1.0
        )
    for key, part in frame.groupby("g"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exact = smf.logit("y ~ x", data=part).fit(disp=0)
        model = models[key]
        assert isinstance(model, LogitResults)
        assert list(model.params.index) == list(exact.params.index)
        distance = float(np.linalg.norm(model.params - exact.params))
        assert distance < 0.05, (key, distance)
    with noise(priv):  # a key without rows: its noisy count 0, below the half-width
        empty = priv.dp.groupby("g", keys=["none"]).logit(
            "y ~ x", bounds={"x": (0, 16)}, epsilon=1.0
        )
    assert np.isnan(empty["none"].prsquared)  # NaN throughout, never a pseudo R² of 0
    assert "Logit Regression Results" in str(empty["none"].summary())


def test_charged_once_at_the_grouped_scale(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    priv = protect_seeded(data(), epsilon=4.0)
    with noise(priv) as calls:
        release(priv, epsilon=0.5)
    (call,) = calls  # one draw: every sum of every group
    assert call.size == SUMS * len(GROUPS)
    assert call.mechanism.scale == Fraction(SUMS * UNIT) / Fraction(1, 2)
    (entry,) = priv.dp.session.releases
    assert entry.cost.epsilon == Fraction(1, 2)  # not 0.5 × 3 groups
    assert entry.query == "groupby.ols"
    (measurement,) = entry.measurements
    assert measurement.sensitivity == SUMS * UNIT
    assert len(priv.dp.session.ledger) == 1


@pytest.mark.parametrize(
    ("caps", "l1"),
    [({}, 3), ({"max_rows_per_group": 1}, 2), ({"max_groups_per_unit": 1}, 3)],
)
def test_privacy_unit_caps_scale_the_noise(
    caps: dict[str, int], l1: int, noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    """``k = 3`` rows per unit, ``g`` groups, ``r`` rows per group: ``l1 = min(k, g·r)``."""
    frame = data(600).assign(pid=lambda f: np.arange(len(f)) // 4)
    priv = protect_seeded(frame, epsilon=4.0, privacy_unit="pid", max_rows_per_unit=3)
    with noise(priv) as calls:
        priv.dp.groupby("g", keys=GROUPS, max_groups_per_unit=caps.get("max_groups_per_unit", 2),
                        max_rows_per_group=caps.get("max_rows_per_group")).ols(
            FORMULA, bounds=BOUNDS, keys=LEVELS, epsilon=1.0
        )  # fmt: skip
    (call,) = calls
    assert call.mechanism.scale == Fraction(l1 * SUMS * UNIT)


def test_empty_and_tiny_groups_are_nan(protect_seeded: Callable[..., Any]) -> None:
    """A key without rows (and one with 3) gets NaN values, its labels kept; others do not."""
    frame = data()
    tiny = frame[frame["g"] == "a"].head(3).assign(g="t")
    priv = protect_seeded(pd.concat([frame, tiny], ignore_index=True), epsilon=10.0, seed=3)
    models = release(priv, keys=[*GROUPS, "t", "none"], epsilon=5.0)
    assert list(models.params.index) == [*GROUPS, "t", "none"]
    assert models.params.loc[["t", "none"]].isna().all().all()
    assert models.params.loc[GROUPS].notna().all().all()
    empty = models["none"]
    assert list(empty.params.index) == ["Intercept", "C(h)[T.v]", "x"]  # statsmodels' order
    assert np.isnan(empty.nobs)
    assert empty.conf_int().isna().all().all()
    assert "OLS Regression Results" in repr(empty)  # the summary prints NaN, never raises


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (
            lambda p: p.dp.groupby("g", keys=GROUPS).ols(
                "y ~ x + C(g)", bounds=BOUNDS, keys={"g": GROUPS}, epsilon=1.0
            ),
            DPValueError,
            "group-by column",
        ),
        (
            lambda p: p.dp.groupby("g", selection="threshold").ols(
                "y ~ x", bounds=BOUNDS, epsilon=1.0
            ),
            DPValueError,
            "public keys",
        ),
        (
            lambda p: p.dp.groupby("g", keys=GROUPS)[["x", "y"]].ols(
                "y ~ x", bounds=BOUNDS, epsilon=1.0
            ),
            DPValueError,
            "formula",
        ),
        (
            lambda p: p.dp.groupby("g", keys=GROUPS).ols("y ~ x", epsilon=1.0),
            DPValueError,
            "bounds",
        ),
        (
            lambda p: p.dp.groupby("g", keys=GROUPS).ols(
                "y ~ np.cumsum(x)", bounds=BOUNDS, epsilon=1.0
            ),
            DPValueError,
            "cumsum",
        ),
        (
            lambda p: p.dp.groupby("g", keys=GROUPS).logit("y ~ x", bounds=BOUNDS, epsilon=1.0),
            DPValueError,
            "binary",
        ),
        (
            lambda p: p.dp.groupby("g", keys=GROUPS).ols(
                "y ~ x + C(g)", bounds="auto", keys={"g": GROUPS}, epsilon=1.0
            ),
            DPValueError,
            "group-by column",
        ),
        (
            lambda p: p.dp.groupby("g", keys=GROUPS).ols(bounds=BOUNDS, epsilon=1.0),
            DPTypeError,
            "formula",
        ),
    ],
)
def test_refusals_charge_nothing(
    call: Callable[[Any], Any], error: type[Exception], match: str,
    charges_nothing: Callable[..., Any], protect_seeded: Callable[..., Any],
) -> None:  # fmt: skip
    priv = protect_seeded(data(300), epsilon=4.0, delta=1e-6)
    with charges_nothing(priv), pytest.raises(error, match=match):
        call(priv)


def test_time_bins_refused_before_any_charge(
    charges_nothing: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    frame = data(300).assign(t=pd.Timestamp("2024-01-01") + pd.to_timedelta(np.arange(300), "h"))
    priv = protect_seeded(frame, epsilon=4.0)
    grouped = priv.dp.groupby(pd.Grouper(key="t", freq="D"), range=("2024-01-01", "2024-01-14"))
    with charges_nothing(priv), pytest.raises(DPValueError, match="time bins"):
        grouped.ols("y ~ x", bounds=BOUNDS, epsilon=1.0)


@pytest.mark.parametrize(
    "row",
    [
        {"g": "b", "h": "v", "x": 16.0, "y": 48.0},
        {"g": "a", "h": "u", "x": np.nan, "y": 1e308},
        {"g": "c", "h": "w", "x": -np.inf, "y": -1e308},
        {"g": "zzz", "h": "u", "x": 3.0, "y": 2.0},
        {"g": None, "h": None, "x": 2.0**60, "y": np.nan},
    ],
)
def test_neighbours_give_the_same_shape(
    row: dict[str, Any], protect_seeded: Callable[..., Any]
) -> None:
    frame = data(400)
    shapes = []
    for table in (frame, pd.concat([frame, pd.DataFrame([row])], ignore_index=True)):
        priv = protect_seeded(table, epsilon=10.0, seed=5)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            models = release(priv, keys=[*GROUPS, "d"])
        params, ends = models.params, models.conf_int()
        shapes.append(
            (list(models), params.index.tolist(), params.columns.tolist(), params.dtypes.tolist(),
             ends.index.tolist(), ends.dtypes.tolist(), [type(w.message) for w in caught])
        )  # fmt: skip
    assert shapes[0] == shapes[1]


def test_mapping_surface_and_per_group_results(protect_seeded: Callable[..., Any]) -> None:
    priv = protect_seeded(data(), epsilon=10.0, seed=2)
    models = release(priv, epsilon=5.0)
    assert len(models) == 3
    assert "b" in models
    assert "zzz" not in models
    with pytest.raises(KeyError):
        models["zzz"]
    assert dict(models)["a"] is models["a"]
    ends = models.conf_int(0.1)
    assert ends.index.names == ["g", None]
    assert list(ends.columns) == [0, 1]
    pd.testing.assert_frame_equal(ends.loc["b"], models["b"].conf_int(0.1))
    new = pd.DataFrame({"x": [1.0, 2.0], "h": ["u", "v"]})
    assert models["c"].predict(new).notna().all()
    assert "ModelsByGroup: 3 OLS models by g" in repr(models)
    assert "ModelsByGroup: 3 OLS models by g" in models._repr_html_()


def test_several_group_columns_and_preview(protect_seeded: Callable[..., Any]) -> None:
    frame = data().assign(k=lambda f: (f.index % 2).astype(np.int64))
    priv = protect_seeded(frame, epsilon=10.0)
    preview = priv.dp.preview.groupby("g", keys=GROUPS).ols(
        FORMULA, bounds=BOUNDS, keys=LEVELS, epsilon=1.0
    )
    assert preview.epsilon == 1.0
    assert not priv.dp.session.releases
    models = priv.dp.groupby(["g", "k"], keys={"g": GROUPS, "k": [0, 1]}).ols(
        FORMULA, bounds=BOUNDS, keys=LEVELS, epsilon=1.0
    )
    assert models.params.index.names == ["g", "k"]
    assert list(models) == [(g, k) for g in GROUPS for k in (0, 1)]
    assert isinstance(models[("a", 1)], OLSResults)
    assert models.conf_int().index.names == ["g", "k", None]


@pytest.mark.statistical
def test_audit_catches_a_sensitivity_that_ignores_the_groups_of_a_unit(
    protect_seeded: Callable[..., Any],
) -> None:
    """A unit of two rows in two groups moves ``2p`` sums: the noise must cover both groups.

    ``y ~ 1`` measures ``p = 3`` sums per group (rows, ``Σ z_y``, ``Σ z_y²``). D' adds one
    unit with a row at the upper bound in group a and one in group b: all six sums of the two
    groups move by one unit (checked on the engine's exact sums). The statistic is the
    smallest of the six noisy differences from D's sums (``tests/statistical/
    test_products_audit.py``'s method): its likelihood ratio is ``e^ε`` exactly at the
    calibrated scale ``p·l1/ε`` (``l1 = min(k, g·r) = 2``). The mutant calibrated for one
    group's rows (``l1 = 1``: the unit's groups ignored, really 2ε) is caught.
    """
    from pandas_dp.api.queries.regression import PerGroup, plan_ols
    from pandas_dp.api.release import resolve
    from pandas_dp.mechanisms.laplace import DiscreteLaplace
    from pandas_dp.mechanisms.random import SeededRandomSource

    from ..statistical import auditing

    d = pd.DataFrame({"g": ["a", "b", "a", "b"], "y": [0.0, 1.0, 2.0, -1.0], "pid": [0, 0, 1, 2]})
    unit = pd.DataFrame({"g": ["a", "b"], "y": [4.0, 4.0], "pid": [9, 9]})
    sums = []
    mechanisms = []
    for seed, frame in enumerate((d, pd.concat([d, unit], ignore_index=True))):
        priv = protect_seeded(
            frame, seed=seed, epsilon=1.0, privacy_unit="pid", max_rows_per_unit=2
        )
        grouped = priv.dp.groupby("g", keys=["a", "b"])
        target = resolve(priv)
        planned = plan_ols(
            target, "y ~ 1", bounds={"y": (-4.0, 4.0)}, epsilon=1.0,
            per_group=PerGroup(grouped._grouping, grouped._caps),
        )  # fmt: skip
        (part,) = planned.parts.values()
        exact = target.engine.aggregate(
            target.data, (part.measure,), planned.grouping, planned.bounding
        )
        sums.append(np.asarray(exact.values[0], dtype=np.int64).reshape(-1))
        mechanisms.append(part.mechanism)
    np.testing.assert_array_equal(sums[1] - sums[0], UNIT)  # six sums, one unit each
    real = mechanisms[0]
    assert real == mechanisms[1]
    assert real.scale == 3 * 2 * UNIT  # p · l1 / ε

    def runs(mechanism: Any, seed: int) -> Any:
        def outputs(dataset: int, n: int, stream: int) -> np.ndarray:
            noise = mechanism.sample(n * 6, SeededRandomSource(stream)).reshape(n, 6)
            return np.min((sums[dataset] - sums[0] + noise) / UNIT, axis=1)

        return auditing.paired_runs(outputs, seed, n_calibration=50_000, n_evaluation=250_000)

    found = auditing.audit(*runs(real, seed=9900))
    print(f"grouped ols under a unit in two groups: {found}")
    assert found.epsilon_lb <= 1.0, f"the grouped model leaks more than ε: {found}"
    assert found.epsilon_lb >= 0.6, f"the grouped model is noisier than calibrated: {found}"
    mutant = DiscreteLaplace.calibrated(3 * UNIT, Fraction(1))  # l1 = 1: one group's rows
    caught = auditing.audit(*runs(mutant, seed=9900))
    print(f"grouped ols, the mutant that ignores the unit's groups: {caught}")
    assert caught.epsilon_lb > 1.3, f"the mutant was not caught: {caught}"


def test_dask_and_a_grouping_series_give_the_same_models(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    """Zero noise: the same exact sums on a Dask collection, and grouped by a derived Series
    (the result's index named after the Series, as pandas names it)."""
    dd = pytest.importorskip("dask.dataframe")
    frame = data(900)
    priv = protect_seeded(frame, epsilon=10.0)
    with noise(priv):
        expected = release(priv).params
        upper = priv.dp.groupby(priv["g"].str.upper().rename("G"), keys=["A", "B", "C"]).ols(
            FORMULA, bounds=BOUNDS, keys=LEVELS, epsilon=1.0
        )
    assert upper.params.index.name == "G"
    np.testing.assert_allclose(upper.params.to_numpy(), expected.to_numpy(), rtol=1e-12)
    lazy = protect_seeded(dd.from_pandas(frame, npartitions=3), epsilon=10.0)
    with noise(lazy):
        on_dask = release(lazy).params
    pd.testing.assert_frame_equal(on_dask, expected, rtol=1e-12)


def test_keys_and_bounds_from_a_schema(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    """The group keys (``isin``) and the bounds (``in_range``) from the session's schema."""
    pa = pytest.importorskip("pandera.pandas")
    schema = pa.DataFrameSchema(
        {
            "g": pa.Column(str, pa.Check.isin(GROUPS)),
            "h": pa.Column(str, pa.Check.isin(LEVELS["h"])),
            "x": pa.Column(float, pa.Check.in_range(*BOUNDS["x"]), nullable=True),
            "y": pa.Column(float, pa.Check.in_range(*BOUNDS["y"])),
        }
    )
    frame = data(600)
    given = protect_seeded(frame, epsilon=10.0)
    from_schema = protect_seeded(frame, epsilon=10.0, schema=schema)
    with noise(given):
        expected = release(given).params
    with noise(from_schema):
        models = from_schema.dp.groupby("g").ols(FORMULA, epsilon=1.0)
    pd.testing.assert_frame_equal(models.params, expected)
    (entry,) = from_schema.dp.session.releases
    assert "schema" in entry.note


def test_auto_bounds_are_released_in_the_same_charge(protect_seeded: Callable[..., Any]) -> None:
    priv = protect_seeded(data(), epsilon=10.0, seed=4)
    models = priv.dp.groupby("g", keys=GROUPS).ols("y ~ x", bounds="auto", epsilon=2.0)
    assert list(models.params.columns) == ["Intercept", "x"]
    (entry,) = priv.dp.session.releases  # the bounds and the models: one ledger row
    assert entry.query == "groupby.ols"
    assert entry.cost.epsilon == 2


def test_weighted_models_per_group_are_wls_per_group(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    """``weights=`` per group: each group's WLS (and its count of weighted rows), one charge."""
    smf = pytest.importorskip("statsmodels.formula.api")
    frame = data()
    gen = np.random.default_rng(11)  # test data only, never noise
    frame["w"] = gen.integers(1, 9, len(frame)) / 2  # within the public bounds (0, 4)
    priv = protect_seeded(frame, epsilon=10.0)
    with noise(priv):
        models = release(priv, weights="w", weight_bounds=(0, 4))
    (row,) = priv.dp.session.releases
    assert row.cost.epsilon == 1
    for key, part in frame.dropna().groupby("g"):
        exact = smf.wls(FORMULA, data=part, weights=part["w"]).fit()
        model = models[key]
        pd.testing.assert_series_equal(
            model.params[exact.params.index], exact.params, check_names=False, rtol=1e-9
        )
        assert model.nobs == exact.nobs  # the rows holding a weight, per group
        assert model.df_resid == exact.df_resid
    assert models.params.notna().all().all()
