"""Survey weights on ``ols`` and ``logit`` (issue 42), and statsmodels' order of coefficients.

``priv.dp.ols(..., weights="w", weight_bounds=(L, U))`` is statsmodels' WLS
(``smf.wls(formula, df, weights=df.w).fit()``) and ``priv.dp.logit(..., weights=...)`` its
GLM Binomial with ``freq_weights`` (a row counts ``w`` times). Under zero noise, against
statsmodels on the clipped complete rows (weights clipped to their bounds; rows missing a
weight dropped), data on a 1/8 lattice and weights on a 1/8 lattice within ``[0, 4]``, so
every value, weight and product is exact on the measurement's lattices:

- WLS coefficients to ``1e-9`` (relative) and ``nobs``, ``df_resid`` exactly, as the
  unweighted ``ols`` test (``test_ols.py``);
- ``bse`` and R² to ``1e-4``: they cannot be exact because zero noise is not no noise: the
  covariance keeps the noise's variance (delta method) and the residual sum of squares its
  upper bound, both set by the calibrated scale (``test_model_surface.py``'s argument);
- logit: within the L2 distance the unweighted comparison with ``smf.logit`` allows
  (0.05, ``test_logit.py``): the fit reads the maximum-entropy design of the weighted moments,
  an approximation of maximum likelihood, not the exact fit. ``nobs`` is the sum of weights.

The sampler's scale is ``(p + 1) U / ε`` for WLS (the ``p`` weighted sums and the count of
rows, each moved by at most ``U`` by one row) and ``p U / ε`` for logit, in the measurement's
units; refusals cost nothing; the audit of the weighted sums (and of a mutant that ignores
the weight bound) is in ``tests/statistical/test_products_audit.py``, the neighbour test in
``tests/invariant/test_differential_weights.py``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

import pandas_dp
from pandas_dp.engines.pandas_engine import aggregate_frame
from pandas_dp.errors import DPKeyError, DPTypeError, DPValueError
from pandas_dp.planning.measurement.products import DIGITS, UNIT, ProductLayout
from pandas_dp.planning.measurement.weighted import Weights

BOUNDS = {"x": (0.0, 16.0), "z": (0.0, 16.0), "y": (-16.0, 48.0)}
KEYS = {"g": ["a", "b", "c"]}
FORMULA = "y ~ x + C(g) + z"
W = {"weights": "w", "weight_bounds": (0, 4)}
EPSILON = 5e5  # zero noise keeps the noise's variance in bse: the largest ε makes it small


def data(rows: int = 1200, seed: int = 5) -> pd.DataFrame:
    """A linear model on a 1/8 lattice; weights 1/8 to 5 (some above the bound 4), some missing."""
    gen = np.random.default_rng(seed)  # test data only, never noise
    x = gen.integers(0, 129, rows) / 8
    z = gen.integers(0, 129, rows) / 8
    g = np.array(["a", "b", "c"])[gen.integers(0, 3, rows)]
    y = 2 + 1.5 * x - 0.5 * z + np.where(g == "b", 3.0, 0.0) + gen.integers(-64, 65, rows) / 8
    w = gen.integers(1, 41, rows) / 8
    frame = pd.DataFrame({"x": x, "z": z, "g": g, "y": np.clip(y, -16, 48), "w": w})
    frame.loc[::17, "z"] = np.nan  # left out, as statsmodels drops rows missing a variable
    frame.loc[3::29, "w"] = np.nan  # a row missing its weight counts nowhere
    return frame


def kept(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows statsmodels fits: complete, with a weight, the weight clipped to [0, 4]."""
    rows = frame.dropna(subset=["z", "w"])
    return rows.assign(w=rows["w"].clip(0, 4))


def test_ols_coefficients_in_statsmodels_order(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    smf = pytest.importorskip("statsmodels.formula.api")
    frame = data(300)
    formula = "y ~ x + C(g) + x:z + z"  # formulaic's order: x, C(g), z, x:z
    priv = protect_seeded(frame, epsilon=10.0)
    with noise(priv):
        model = priv.dp.ols(formula, bounds=BOUNDS, keys=KEYS, epsilon=1.0)
    names = list(smf.ols(formula, data=frame).fit().params.index)
    assert names == ["Intercept", "C(g)[T.b]", "C(g)[T.c]", "x", "x:z", "z"]  # patsy's
    assert list(model.params.index) == names
    assert list(model.bse.index) == names
    assert list(model.conf_int().index) == names
    assert list(model.cov_params().columns) == names
    assert list(model.summary().coefficients.index) == names


@pytest.mark.parametrize(
    "formula",
    [
        "y ~ x:z + x + C(g)",  # a bucket is placed where the formula first names it
        "y ~ x * z + C(g)",
        "y ~ x + C(g):x + C(g) + z",  # within a bucket, by degree
        "y ~ z + g + g:x + I(x ** 2)",  # a text column with keys, a transform
        "y ~ C(g) * x + np.log1p(z)",
    ],
)
def test_design_columns_in_patsy_order(formula: str) -> None:
    """The one ordering (the design's) against patsy's, formula by formula (no release)."""
    smf = pytest.importorskip("statsmodels.formula.api")
    from pandas_dp.transformations.design import design_of

    frame = data(200)
    design = design_of(formula, {c: BOUNDS[c] for c in "xzy"}, {"g": pd.Index(KEYS["g"])})
    expected = list(smf.ols(formula, data=frame).fit().params.index)
    assert ["Intercept", *design.columns] == expected


def test_wls_at_zero_noise_is_statsmodels_wls(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    smf = pytest.importorskip("statsmodels.formula.api")
    frame = data()
    priv = protect_seeded(frame, epsilon=1e6)
    with noise(priv):
        model = priv.dp.ols(FORMULA, bounds=BOUNDS, keys=KEYS, epsilon=EPSILON, **W)
    rows = kept(frame)
    exact = smf.wls(FORMULA, data=rows, weights=rows["w"]).fit()
    assert model.ridge == 0
    assert list(model.params.index) == list(exact.params.index)
    pd.testing.assert_series_equal(model.params, exact.params, check_names=False, rtol=1e-9)
    assert model.nobs == exact.nobs == len(rows)
    assert model.df_resid == exact.df_resid
    pd.testing.assert_series_equal(model.bse, exact.bse, check_names=False, rtol=1e-4)
    assert model.rsquared == pytest.approx(exact.rsquared, abs=1e-4)
    assert model.scale == pytest.approx(exact.scale, rel=1e-4)
    text = str(model.summary())
    assert "WLS Regression Results" in text
    assert "rows weighted by w, clipped to [0, 4]" in text


def test_weights_of_one_give_the_unweighted_model(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    frame = data(400).assign(w=1.0)
    priv = protect_seeded(frame, epsilon=1e6)
    with noise(priv):
        plain = priv.dp.ols(FORMULA, bounds=BOUNDS, keys=KEYS, epsilon=EPSILON)
        weighted = priv.dp.ols(
            FORMULA, bounds=BOUNDS, keys=KEYS, epsilon=EPSILON, weights="w", weight_bounds=(0, 1)
        )
    pd.testing.assert_series_equal(weighted.params, plain.params, rtol=1e-12)
    assert weighted.nobs == plain.nobs


def test_weighted_logit_at_zero_noise_is_glm_binomial_with_freq_weights(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    sm = pytest.importorskip("statsmodels.api")
    smf = pytest.importorskip("statsmodels.formula.api")
    frame = data(8000, seed=8)
    gen = np.random.default_rng(9)  # test data only, never noise
    score = -0.5 + 0.4 * (frame["x"] - 8) - 0.2 * (frame["z"].fillna(8) - 8)
    frame["e"] = (gen.uniform(size=len(frame)) < 1 / (1 + np.exp(-score))).astype(np.int64)
    formula = "e ~ x + C(g) + z"
    priv = protect_seeded(frame, epsilon=1e6)
    with noise(priv):
        model = priv.dp.logit(formula, bounds=BOUNDS, keys=KEYS, epsilon=EPSILON, **W)
    rows = kept(frame)
    binomial = sm.families.Binomial()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exact = smf.glm(formula, data=rows, family=binomial, freq_weights=rows["w"]).fit()
    assert list(model.params.index) == list(exact.params.index)
    distance = float(np.linalg.norm(model.params - exact.params))
    assert distance < 0.05, distance  # test_logit.py's bound against smf.logit
    # nobs: the sum of the clipped weights, statsmodels' wnobs (its nobs counts the rows)
    assert model.nobs == pytest.approx(exact.model.wnobs, rel=1e-9)
    assert model.df_resid == pytest.approx(exact.df_resid, rel=1e-9)
    np.testing.assert_allclose(model.bse, exact.bse, rtol=0.1)  # the fit's curvature, approx.
    assert "Weights:" in str(model.summary())


def _sums(m: int) -> int:
    """The Gram matrix of ``(1, z_1..z_m, z_y)``: ``(m + 2)(m + 3) / 2`` sums."""
    return (m + 2) * (m + 3) // 2


@pytest.mark.parametrize(("query", "counted"), [("ols", 1), ("logit", 0)])
def test_scale_charge_ledger_and_preview(
    query: str, counted: int, noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    frame = data(300).assign(e=lambda f: (f["y"] > 10).astype(np.int64))
    formula = "y ~ x + C(g) + z" if query == "ols" else "e ~ x + C(g) + z"
    priv = protect_seeded(frame, epsilon=4.0)
    options = {"bounds": BOUNDS, "keys": KEYS, "weights": "w", "weight_bounds": (0.5, 3)}
    release = getattr(priv.dp, query)
    with noise(priv) as calls:
        release(formula, epsilon=0.5, **options)
    size = _sums(4) + counted  # 4 design columns; ols counts the rows holding a weight too
    # U = 3 on the weights' lattice: 2**-14 steps (2**-16 of the power of two above, 4), so
    # one row moves a sum by 3·2**14 · 2**32 units; the sums are rounded to 2**16 units
    # before the noise: one step more per sum.
    per_sum = 3 * 2**14 * UNIT // 2**16 + 1
    # logit: a twentieth of ε releases the row count first (300 rows: too few for two steps,
    # so one fit takes the rest, see test_logit_steps.py)
    epsilon = Fraction(1, 2) * (Fraction(19, 20) if query == "logit" else 1)
    # ols: per-sum Laplace noise calibrated to the L1 bound over its sums; logit: one ℓ∞
    # K-norm vector, calibrated to each sum's bound
    sensitivity = size * per_sum if query == "ols" else per_sum
    shown = size * 3 if query == "ols" else 3
    *counted_first, call = calls
    assert [c.size for c in counted_first] == ([1] if query == "logit" else [])
    assert call.size == size
    assert call.mechanism.scale == Fraction(sensitivity) / epsilon
    (record,) = priv.dp.session.releases
    assert record.cost.epsilon == Fraction(1, 2)
    measurement = record.measurements[-1]
    assert len(record.measurements) == 1 + len(counted_first)
    assert measurement.sensitivity == sensitivity
    # In the weights' units: each sum moved by at most U = 3 (the sensitivity p·U, or U).
    assert measurement.sensitivity * 2.0**measurement.exponent == pytest.approx(shown, 1e-9)
    assert measurement.label == "products(C(g)[T.b], C(g)[T.c], x, z, y, weights=w)".replace(
        "y,", "y," if query == "ols" else "e,"
    )
    assert ("w (weights)", 0.5, 3.0) in record.bounds
    assert "rows weighted by w, clipped to [0.5, 3]" in record.note
    assert f"sensitivity {shown};" in record.note
    preview = getattr(priv.dp.preview, query)(formula, epsilon=0.5, **options)
    assert preview.table["scale"].iloc[-1] == pytest.approx(shown / epsilon, rel=1e-9)
    assert preview.release is not None
    assert "rows weighted by w, clipped to [0.5, 3]" in preview.release.note
    assert priv.dp.session.spent.epsilon == Fraction(1, 2)  # the preview charged nothing


REFUSED: dict[str, tuple[dict[str, Any], type[Exception], str]] = {
    "negative lower bound": (
        {"weights": "w", "weight_bounds": (-1, 4)}, DPValueError, "lower >= 0"
    ),
    "missing column": ({"weights": "v", "weight_bounds": (0, 4)}, DPKeyError, "'v' not found"),
    "no weight bounds": ({"weights": "w"}, DPValueError, "needs weight_bounds"),
    "bounds without weights": ({"weight_bounds": (0, 4)}, DPValueError, "needs weights="),
    "text weights": ({"weights": "g", "weight_bounds": (0, 4)}, DPTypeError, "has dtype"),
    "weights as a Series": (
        {"weights": pd.Series([1.0]), "weight_bounds": (0, 4)}, DPTypeError, "got a Series"
    ),
    "negative bound with auto bounds": (
        {"weights": "w", "weight_bounds": (-1, 4), "bounds": "auto"}, DPValueError, "lower >= 0"
    ),
}  # fmt: skip


@pytest.mark.parametrize("query", ["ols", "logit"])
@pytest.mark.parametrize("case", REFUSED.values(), ids=REFUSED.keys())
def test_refusals_charge_nothing(
    query: str, case: Any, charges_nothing: Callable[..., Any]
) -> None:
    options, error, match = case
    frame = data(100).assign(e=lambda f: (f["y"] > 10).astype(np.int64))
    priv = frame.dp.protect(epsilon=4.0)
    formula = "y ~ x + C(g)" if query == "ols" else "e ~ x + C(g)"
    options = {"bounds": BOUNDS, **options}
    with charges_nothing(priv), pytest.raises(error, match=match):
        getattr(priv.dp, query)(formula, keys=KEYS, epsilon=1.0, **options)


def test_weight_bounds_from_the_schema(noise: Callable[..., Any]) -> None:
    pa = pytest.importorskip("pandera.pandas")
    schema = pa.DataFrameSchema({"w": pa.Column(float, pa.Check.in_range(0, 4), nullable=True)})
    frame = data(200)
    with pytest.warns(pandas_dp.PrivacyLeakWarning):
        priv = frame.dp.protect(epsilon=4.0, schema=schema, validate=False, rng=1)
    with noise(priv):
        from_schema = priv.dp.ols(FORMULA, bounds=BOUNDS, keys=KEYS, epsilon=1.0, weights="w")
        given = priv.dp.ols(FORMULA, bounds=BOUNDS, keys=KEYS, epsilon=1.0, **W)
    pd.testing.assert_series_equal(from_schema.params, given.params)
    assert "(bounds from the schema" in priv.dp.session.ledger["note"].iloc[0]


def test_gaussian_noise_and_privacy_units_scale_with_the_weight_bound(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    frame = data(300).assign(pid=lambda f: np.arange(len(f)) // 2)
    priv = protect_seeded(frame, epsilon=4.0, delta=1e-6, privacy_unit="pid", max_rows_per_unit=2)
    with noise(priv) as calls:
        priv.dp.ols(FORMULA, bounds=BOUNDS, keys=KEYS, epsilon=0.5, **W)
        priv.dp.ols(FORMULA, bounds=BOUNDS, keys=KEYS, epsilon=0.5, mechanism="gaussian", **W)
    laplace, gauss = (r.measurements[0] for r in priv.dp.session.releases)
    per_sum = 2 * UNIT + 1  # U = 4: 2**16 weight units, two rows, rounded to 2**16 units
    assert calls[0].mechanism.scale == Fraction((_sums(4) + 1) * per_sum) / Fraction(1, 2)
    expected = 2 * (_sums(4) + 1) * 4
    assert laplace.sensitivity * 2.0**laplace.exponent == pytest.approx(expected, rel=1e-9)
    # Gaussian: L∞ U · 2 rows per coordinate in the weights' units (one grid step more for
    # the plan's coarser lattice), in p coordinates.
    assert gauss.sensitivity * 2.0**gauss.exponent == pytest.approx(2 * 4, rel=0.01)
    assert gauss.coordinates == _sums(4) + 1  # one group: l0 = 1


def test_grouped_weighted_sums_count_one_rounding_step_per_group(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    """A unit in up to two groups: each group's rounded sums move by its rows' weight plus
    one rounding step, so the bound carries ``l0`` steps (Laplace: per sum; K-norm: per
    coordinate, summed over the groups the unit reaches)."""
    frame = data(300).assign(pid=lambda f: np.arange(len(f)) // 3, e=lambda f: f["y"] > 10)
    priv = protect_seeded(frame, epsilon=4.0, privacy_unit="pid", max_rows_per_unit=3)
    grouped = priv.dp.groupby("g", keys=KEYS["g"], max_groups_per_unit=2)
    options = {"bounds": BOUNDS, "epsilon": 0.5, **W}
    with noise(priv):
        grouped.ols("y ~ x + z", **options)
        grouped.logit("e ~ x + z", **options)
    ols, logit = (r.measurements[-1] for r in priv.dp.session.releases)
    # U = 4: 2**16 weight units; three rows; rounded to 2**16 units; two groups' steps
    reach = 3 * UNIT + 2
    assert (ols.kind, ols.sensitivity) == ("laplace", (_sums(2) + 1) * reach)  # and the rows
    assert (logit.kind, logit.sensitivity) == ("linf_knorm", reach)


def test_weighted_sums_are_exact_integers_across_blocks() -> None:
    """20,000 rows (three of the engine's exact blocks of 2**13): the weighted sums, far
    beyond float64's exact integers, equal Python integers computed row by row from the
    documented lattices."""
    gen = np.random.default_rng(3)  # test data only, never noise
    rows = 20_000
    frame = pd.DataFrame(
        {
            "x": gen.uniform(-1, 11, rows),  # some outside the bounds: clipped
            "y": gen.uniform(-5, 5, rows),
            "w": gen.uniform(-1, 4, rows),  # negative weights clipped to 0, above 3 to 3
        }
    )
    frame.loc[::13, "w"] = np.nan  # counts nowhere
    frame.loc[::7, "x"] = np.nan  # not a complete row
    bounds = ((0.0, 10.0), (-5.0, 5.0))
    layout = ProductLayout.of(
        ("x", "y"), bounds, (True, True), complete=True, squares=False,
        weights=Weights("w", 0.0, 3.0), rows=True,
    )  # fmt: skip
    measure = layout.ordered().measure()
    got = aggregate_frame(frame, (measure,)).values[0][0]
    scale = 2**DIGITS
    units = [
        np.rint(np.clip((frame[c] - (lo + hi) / 2) / ((hi - lo) / 2), -1, 1) * scale)
        for c, (lo, hi) in zip("xy", bounds, strict=True)
    ]
    weight = np.rint(frame["w"].clip(0, 3) * 2**14)  # U = 3: steps of 2**-14
    keep = frame["x"].notna() & frame["y"].notna() & frame["w"].notna()
    row = [np.full(rows, scale), *units]  # the constant, then the values
    vectors = [[int(v) for v in column[keep]] for column in row]
    weights = [int(v) for v in weight[keep]]
    for position, (i, k) in enumerate(measure.pairs):
        expected = sum(w * a * b for w, a, b in zip(weights, vectors[i], vectors[k], strict=True))
        assert got[position] == expected, (i, k)
    assert got[-1] == int(keep.sum()) * 3 * 2**14 * UNIT  # the rows holding a weight
    assert max(abs(int(v)) for v in got) > 2**60  # far beyond float64's exact integers
