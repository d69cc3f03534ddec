"""``priv.dp.ols``: formula terms read one row (issue 37, item 3; PRIVACY.md section 10).

An audit found formula terms evaluated over the whole private frame: ``I(x - x.mean())``,
``I(x.eq(7.77).any())`` and the like gave each row a value that depended on the other rows,
so a model released on D and on D plus one row told the row apart (150 trials out of 150).
Now every factor must pass a grammar of row-local terms
(:mod:`pandas_dp.transformations.formula_grammar`), checked on the formula text before
anything is charged, and the design is checked on a public probe, whole against row by row.
What the grammar allows (``Q('x')``, ``np.log``, ``I(x**2)``, ``x:z``, ``C(g)``) still gives,
under zero noise, the least-squares fit of the clipped complete rows, on the design formulaic
builds from those rows and on one built here by hand.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

import pandas_dp  # noqa: F401  (registers the accessors)
from pandas_dp.api.queries.regression import plan_ols
from pandas_dp.api.release import resolve
from pandas_dp.errors import DPValueError

KEYS = {"g": ["a", "b", "c"]}
BOUNDS = {"x": (0.0, 16.0), "z": (0.0, 16.0), "w": (1.0, 16.0), "y": (-16.0, 48.0)}


def reproducer_frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    """The audit's D and D' (D plus one row at x = 7.77, a value no row of D holds)."""
    rng = np.random.default_rng(1)  # test data only, never noise
    x = rng.uniform(0, 10, 2000).round(2)
    x[x == 7.77] = 7.78
    frame = pd.DataFrame({"x": x, "y": rng.uniform(0, 10, 2000).round(2)})
    extra = pd.DataFrame({"x": [7.77], "y": [5.0]})
    return frame, pd.concat([frame, extra], ignore_index=True)


def data(rows: int = 1500) -> pd.DataFrame:
    """Multiples of 1/8 (exact on the lattice of the sums), some beyond the bounds."""
    gen = np.random.default_rng(37)  # test data only, never noise
    x = gen.integers(-16, 145, rows) / 8  # [-2, 18]: clipped to [0, 16]
    z = gen.integers(0, 129, rows) / 8
    w = gen.integers(8, 129, rows) / 8
    g = np.array(["a", "b", "c", "d"])[gen.integers(0, 4, rows)]  # "d": not a key, left out
    y = 1 + 0.75 * x - 0.25 * z + np.where(g == "b", 2.0, 0.0) + gen.integers(-16, 17, rows) / 8
    frame = pd.DataFrame({"x": x, "z": z, "w": w, "g": g, "y": np.clip(y, -20, 48)})
    frame.loc[::19, "w"] = np.nan  # rows missing a variable are left out
    return frame


def clipped_complete(frame: pd.DataFrame, variables: list[str]) -> pd.DataFrame:
    """The rows a model of ``variables`` keeps, every numeric variable clipped to its bounds."""
    keep = frame[variables].notna().all(axis=1)
    if "g" in variables:
        keep &= frame["g"].isin(KEYS["g"])
    kept = frame[keep].copy()
    for name, (lower, upper) in BOUNDS.items():
        kept[name] = kept[name].clip(lower, upper)
    if "g" in variables:
        kept["g"] = pd.Categorical(kept["g"], categories=KEYS["g"])
    return kept


def least_squares(design: pd.DataFrame, response: pd.Series) -> pd.Series:
    coef, *_ = np.linalg.lstsq(design.to_numpy(np.float64), response.to_numpy(), rcond=None)
    return pd.Series(coef, index=design.columns)


# (a) The audit's reproducer, refused the same way on D and D', before any charge.


def test_reproducer_is_refused_before_the_charge_on_both_neighbours(
    charges_nothing: Callable[..., Any],
) -> None:
    messages = []
    for frame in reproducer_frames():
        priv = frame.dp.protect(epsilon=0.5)
        remaining = priv.dp.session.remaining
        with charges_nothing(priv), pytest.raises(DPValueError) as refused:
            priv.dp.ols(
                "I(0*y + x.eq(7.77).any()) ~ x",
                bounds={"x": (0, 10), "y": (0, 10)},
                epsilon=0.5,
            )
        assert priv.dp.session.remaining == remaining
        messages.append(str(refused.value))
    assert messages[0] == messages[1]  # the refusal reads the formula, not the rows
    assert "'x.eq(7.77).any()'" in messages[0]
    assert "reads other rows" in messages[0]
    assert "I(x - 5)" in messages[0]  # the fix


# (b) The audit's list, and the other ways of reading other rows, refused before any charge.

AUDIT = [
    ("y ~ I(x - x.mean())", "'x.mean()'"),
    ("y ~ I(x / x.max())", "'x.max()'"),
    ("y ~ I(x > x.median())", "'x.median()'"),
    ("y ~ I(x.rank())", "'x.rank()'"),
    ("y ~ np.cumsum(x)", "'np.cumsum(x)'"),
    ("y ~ I(x.shift(1))", "'x.shift(1)'"),
    ("y ~ I(x.eq(7.77).any())", "'x.eq(7.77).any()'"),
]
OTHERS = [
    ("y ~ center(x)", "learns from the data"),
    ("y ~ scale(x)", "learns from the data"),
    ("y ~ standardize(x)", "learns from the data"),
    ("y ~ x + lag(z)", "reads other rows"),
    ("y ~ poly(x, 2)", "learns from the data"),
    ("y ~ numpy.cumsum(x)", "'numpy.cumsum(x)'"),
    ("y ~ I(x - np.mean(x))", "'np.mean(x)'"),
    ("y ~ I(x / sum(x))", "'sum(x)'"),
    ("y ~ I(x * len(x))", "'len(x)'"),
    ("y ~ x.mean()", "'x.mean()'"),
    ("y ~ I(x.iloc[0] + x)", "Subscript"),
    ("y ~ I(x[0])", "Subscript"),
    ("y ~ I((lambda v: v.mean())(x))", "outside the elementwise list"),
    ("y ~ I([v for v in x])", "ListComp"),
    ("y ~ I(0 < x < 5)", "chained comparison"),
    ("y ~ I(x and z)", "whole column's truth"),
    ("y ~ I(x if z else 0)", "whole column's truth"),
    ("y ~ I(x @ z)", "operator"),
    ("y ~ C(x > 5)", "levels of an expression"),
    ("y ~ np.clip(x, 0, z)", "number bounds"),
    ("y ~ I(x ** 9 ** 9)", "exponent"),
    ("y ~ I(pd)", "not found"),
]


@pytest.mark.parametrize(("formula", "named"), AUDIT + OTHERS)
def test_terms_reading_other_rows_are_refused_before_the_charge(
    formula: str, named: str, charges_nothing: Callable[..., Any],
    protect_seeded: Callable[..., Any],
) -> None:  # fmt: skip
    priv = protect_seeded(data(), epsilon=4.0)
    with charges_nothing(priv), pytest.raises(Exception, match=re.escape(named)) as refused:
        priv.dp.ols(formula, bounds=BOUNDS, keys=KEYS, epsilon=1.0)
    if "not found" not in named:
        assert isinstance(refused.value, DPValueError)


@pytest.mark.parametrize(("formula", "named"), AUDIT)
def test_audit_refusals_name_why_and_the_fix(
    formula: str, named: str, protect_seeded: Callable[..., Any]
) -> None:
    priv = protect_seeded(data(), epsilon=4.0)
    with pytest.raises(DPValueError) as refused:
        priv.dp.ols(formula, bounds=BOUNDS, keys=KEYS, epsilon=1.0)
    message = str(refused.value)
    assert named in message
    assert "reads other rows" in message
    assert "I(x - 5)" in message


# (c) What the grammar allows still works, and equals the least squares of the clipped rows.

EXACT = "y ~ Q('x') + I(x**2) + x:z + C(g)"


def test_allowed_terms_equal_formulaic_and_hand_built_designs_under_zero_noise(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    from formulaic import model_matrix

    frame = data()
    kept = clipped_complete(frame, ["x", "z", "g", "y"])
    x, z = kept["x"], kept["z"]
    by_hand = pd.DataFrame(
        {
            "Intercept": 1.0,
            "C(g)[T.b]": (kept["g"] == "b").astype(float),
            "C(g)[T.c]": (kept["g"] == "c").astype(float),
            "Q('x')": x,
            "I(x ** 2)": x**2,
            "x:z": x * z,
        }
    )
    formulaic = model_matrix(EXACT, kept).rhs
    pd.testing.assert_frame_equal(
        formulaic[list(by_hand.columns)], by_hand, check_dtype=False, check_names=False
    )
    priv = protect_seeded(frame, epsilon=100.0)
    planned = plan_ols(resolve(priv), EXACT, bounds=BOUNDS, keys=KEYS, epsilon=50.0)
    (part,) = planned.parts.values()
    engine = part.measure.design(frame).dropna()  # the design the engine sums, per row
    assert list(engine.index) == list(kept.index)
    np.testing.assert_array_equal(
        engine[list(formulaic.columns.drop("Intercept"))].to_numpy(),
        formulaic.drop(columns="Intercept").to_numpy(),
    )
    with noise(priv):
        model = priv.dp.ols(EXACT, bounds=BOUNDS, keys=KEYS, epsilon=50.0)
    assert model.ridge == 0
    expected = least_squares(by_hand, kept["y"])
    assert sorted(model.params.index) == sorted(expected.index)
    pd.testing.assert_series_equal(
        model.params[expected.index], expected, check_names=False, rtol=1e-9, atol=1e-10
    )
    assert model.nobs == len(kept)


SMOOTH = "y ~ np.log(w) + numpy.sqrt(z) + np.clip(x, 2, 12) + abs(x - 8) + I(x > 4) + x:z"


def test_elementwise_functions_equal_the_hand_built_fit_under_zero_noise(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    frame = data()
    kept = clipped_complete(frame, ["x", "z", "w", "y"])
    x, z, w = kept["x"], kept["z"], kept["w"]
    by_hand = pd.DataFrame(
        {
            "Intercept": 1.0,
            "np.log(w)": np.log(w),
            "numpy.sqrt(z)": np.sqrt(z),
            "np.clip(x, 2, 12)": np.clip(x, 2, 12),
            "abs(x - 8)": (x - 8).abs(),
            "I(x > 4)": (x > 4).astype(float),
            "x:z": x * z,
        }
    )
    priv = protect_seeded(frame, epsilon=100.0)
    with noise(priv):
        model = priv.dp.ols(SMOOTH, bounds=BOUNDS, keys=KEYS, epsilon=50.0)
    assert model.ridge == 0
    assert model.nobs == len(kept)
    expected = least_squares(by_hand, kept["y"])
    assert sorted(model.params.index) == sorted(expected.index)
    # np.log and np.sqrt are off the lattice: each value is rounded to 2**-16 of its range's
    # half-width: the coefficients move by about 1e-5 here.
    pd.testing.assert_series_equal(
        model.params[expected.index], expected, check_names=False, rtol=0, atol=1e-4
    )


# (d) The leak is gone: on D and D' every audit formula gets the same refusal.


@pytest.mark.parametrize(("formula", "_"), AUDIT)
def test_neighbours_get_identical_refusals(formula: str, _: str) -> None:
    outcomes = []
    for frame in reproducer_frames():
        priv = frame.dp.protect(epsilon=0.5)
        with pytest.raises(DPValueError) as refused:
            priv.dp.ols(formula, bounds={"x": (0, 10), "y": (0, 10)}, epsilon=0.5)
        outcomes.append((type(refused.value), str(refused.value), priv.dp.session.remaining))
    assert outcomes[0] == outcomes[1]
    assert str(outcomes[0][2]) == "ε=0.5, δ=0"


def test_accepted_formula_reads_one_row_on_the_neighbours(
    protect_seeded: Callable[..., Any],
) -> None:
    """The engine's design of D's rows is the same whether or not D' adds its row."""
    before, after = reproducer_frames()
    bounds = {"x": (0, 10), "y": (0, 10)}
    formula = "y ~ I(x - 5) + I(x > 7.77) + np.log1p(x) + x:y"
    priv = protect_seeded(after, epsilon=1.0)
    planned = plan_ols(resolve(priv), formula, bounds=bounds, epsilon=0.5)
    (part,) = planned.parts.values()
    design = part.measure.design
    pd.testing.assert_frame_equal(design(after).iloc[: len(before)], design(before))


# The probe backing the grammar: whole against row by row, on public rows only.


@pytest.mark.parametrize(
    "formula",
    [
        "y ~ I(x - x.mean())",
        "y ~ I(x / x.max())",
        "y ~ I(x > x.median())",
        "y ~ I(x.rank())",
        "y ~ np.cumsum(x)",
        "y ~ I(x.shift(1))",
        "y ~ I(x * len(x))",
        "I(y - y.mean()) ~ x",
    ],
)
def test_probe_refuses_what_the_grammar_would_miss(
    formula: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pandas_dp.transformations import design
    from pandas_dp.transformations.formula_grammar import FormulaVariables

    monkeypatch.setattr(design, "check_formula", lambda _: FormulaVariables((), ()))
    with pytest.raises(DPValueError, match="depends on the other rows"):
        design.design_of(formula, {"x": (0.0, 10.0), "y": (0.0, 10.0)}, {})


def test_probe_is_public_and_deterministic() -> None:
    from pandas_dp.transformations.design import row_probe

    numeric = {"x": (0.0, 10.0), "y": (-1.0, 1.0)}
    categorical = {"g": pd.Index(["a", "b", "c"])}
    first, second = row_probe(numeric, categorical), row_probe(numeric, categorical)
    pd.testing.assert_frame_equal(first, second)
    assert 8 <= len(first) <= 16
    assert first["x"].min() < 0  # clipping is probed too
    assert first["x"].max() > 10
    assert first.iloc[-1].isna().all()  # a row missing every variable
    assert set(first["g"].dropna()) >= {"a", "b", "c"}


def test_quoted_column_is_no_longer_refused(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    frame = data()
    priv = protect_seeded(frame, epsilon=100.0)
    with noise(priv):
        quoted = priv.dp.ols("y ~ Q('x') + z", bounds=BOUNDS, epsilon=10.0)
        plain = priv.dp.ols("y ~ x + z", bounds=BOUNDS, epsilon=10.0)
    assert list(quoted.params.index) == ["Intercept", "Q('x')", "z"]
    np.testing.assert_allclose(quoted.params.to_numpy(), plain.params.to_numpy(), rtol=1e-12)
    new = pd.DataFrame({"x": [1.0, 3.0], "z": [2.0, 5.0]})
    pd.testing.assert_series_equal(quoted.predict(new), plain.predict(new))


# (e) A term that turns or kinks between the bounds keeps its whole range: the design's column
# bounds came from the bounds and midpoints alone, (9, 169) for I((x - 3)**2) on (0, 16), and
# every row with x in (0, 6) was clipped to 9: wrong coefficients under zero noise.

TURNING = "y ~ I((x - 3)**2) + np.abs(z - 2.5) + np.square(x - 12.5)"


def test_design_bounds_hold_the_range_of_terms_that_turn_between_the_bounds() -> None:
    from pandas_dp.transformations.design import design_of

    design = design_of(TURNING, {name: BOUNDS[name] for name in ("x", "z", "y")}, {})
    spans = dict(zip([*design.columns, design.response], design.bounds, strict=True))
    assert spans["I((x - 3) ** 2)"] == (0.0, 169.0)
    assert spans["np.abs(z - 2.5)"] == (0.0, 13.5)
    assert spans["np.square(x - 12.5)"] == (0.0, 156.25)


def test_terms_that_turn_between_the_bounds_equal_the_hand_built_fit_under_zero_noise(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    frame = data()
    kept = clipped_complete(frame, ["x", "z", "y"])
    x, z = kept["x"], kept["z"]
    by_hand = pd.DataFrame(
        {
            "Intercept": 1.0,
            "I((x - 3) ** 2)": (x - 3) ** 2,
            "np.abs(z - 2.5)": (z - 2.5).abs(),
            "np.square(x - 12.5)": (x - 12.5) ** 2,
        }
    )
    priv = protect_seeded(frame, epsilon=100.0)
    with noise(priv):
        model = priv.dp.ols(TURNING, bounds=BOUNDS, epsilon=50.0)
    assert model.nobs == len(kept)
    expected = least_squares(by_hand, kept["y"])
    # The squares of multiples of 1/8 are off the lattice of 2**-16 of their range's
    # half-width (84.5 for (0, 169)): rounding moves the coefficients by about 1e-5. Clipping
    # at 9, as before, moved the intercept by 0.011.
    pd.testing.assert_series_equal(
        model.params[expected.index], expected, check_names=False, rtol=0, atol=1e-4
    )


def test_a_design_whose_regressors_are_all_categorical_has_its_response_range() -> None:
    """Every numeric variable in the response alone: nothing to cross (it raised)."""
    from pandas_dp.transformations.design import design_of

    design = design_of("y ~ C(g)", {"y": BOUNDS["y"]}, {"g": pd.Index(KEYS["g"])})
    assert design.bounds[-1] == BOUNDS["y"]
