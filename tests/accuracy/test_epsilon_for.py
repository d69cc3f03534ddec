"""``priv.dp.epsilon_for``: the smallest ε whose (1 - α) error bound meets a target.

Contract (accessor docstring): the returned ε achieves ``error`` at level ``1 - alpha`` and is
rounded *up* to three significant digits, so it is minimal up to that rounding: rounding up
to 3 digits adds less than one unit in the third digit, i.e. under 1% of the value, so
``0.99 ε`` lies below the true minimum and must miss the target. "Achieves" is checked with
the preview of the same release (whose error equals the released interval's half-width, see
``test_preview.py``); for a mean, with ``Preview.mean_error(n)`` at the same planning ``n``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import optimize

from pandas_dp import DPError

BOUNDS = (0.0, 2.0)
N = 1000


@pytest.fixture
def priv(protect_seeded) -> pd.DataFrame:
    frame = pd.DataFrame({"x": np.linspace(-1.0, 3.0, N)})
    return protect_seeded(frame, epsilon=1.0, delta=1e-5)


def error_at(priv: pd.DataFrame, statistic: str, epsilon: float, alpha: float, **kw: Any):
    """The error bound the preview announces for this release at ``epsilon``."""
    n = kw.pop("expected_rows", None)
    preview_kw = {"epsilon": epsilon, "ci": 1 - alpha, **kw}
    if statistic == "count":
        return float(priv.dp.preview.count(**preview_kw).table.loc["count", "error"])
    if statistic == "sum":
        return float(
            priv.dp.preview.sum("x", bounds=BOUNDS, **preview_kw).table.loc["sum", "error"]
        )
    return float(priv.dp.preview.mean("x", bounds=BOUNDS, **preview_kw).mean_error(n)["mean"])


GAUSS = {"mechanism": "gaussian", "delta": 1e-6}
CASES = [
    ("count", 5.0, {}),
    ("count", 50.0, {}),
    ("count", 10.0, GAUSS),
    ("sum", 5.0, {}),
    ("sum", 0.5, {}),
    ("sum", 10.0, GAUSS),
    ("mean", 0.05, {"expected_rows": N}),
    ("mean", 0.5, {"expected_rows": 20}),
    ("mean", 0.02, {"expected_rows": N, **GAUSS}),
]


@pytest.mark.parametrize(("statistic", "error", "kw"), CASES)
@pytest.mark.parametrize("alpha", [0.05, 0.01])
def test_returned_epsilon_achieves_the_error_and_is_minimal(priv, statistic, error, kw, alpha):
    bounds = {} if statistic == "count" else {"bounds": BOUNDS}
    epsilon = priv.dp.epsilon_for(statistic, error=error, alpha=alpha, **bounds, **kw)
    # Three significant digits.
    digits = 2 - math.floor(math.log10(epsilon))
    assert round(epsilon * 10**digits) == pytest.approx(epsilon * 10**digits, abs=1e-6)
    assert error_at(priv, statistic, epsilon, alpha, **kw) <= error
    assert error_at(priv, statistic, epsilon * 0.99, alpha, **kw) > error
    # Nothing was read or spent (see also test_preview.py).
    assert priv.dp.session.releases == ()


def test_count_epsilon_from_the_closed_form(priv) -> None:
    # Discrete Laplace, b = 1/ε: the 95% error is <= 5 iff P(|Z| > 5) = 2 q^6 / (1 + q) <= α
    # with q = e^-ε. Solve for ε and round up to three digits.
    alpha = 0.05
    exact = optimize.brentq(
        lambda e: 2 * math.exp(-6 * e) / (1 + math.exp(-e)) - alpha, 1e-3, 10, xtol=1e-14
    )
    expected = math.ceil(exact * 1000) / 1000  # exact = 0.5389...: three digits are 1e-3
    assert 0.1 <= exact < 1
    assert priv.dp.epsilon_for("count", error=5, alpha=alpha) == pytest.approx(expected)


def test_user_level_bounds_scale_the_answer(protect_seeded) -> None:
    # With up to 3 rows per person a count's sensitivity is 3: the same accuracy costs 3×.
    frame = pd.DataFrame({"id": np.arange(300) // 3, "x": np.ones(300)})
    row = protect_seeded(frame, epsilon=1.0).dp.epsilon_for("count", error=20)
    unit = protect_seeded(
        frame, epsilon=1.0, privacy_unit="id", max_rows_per_unit=3
    ).dp.epsilon_for("count", error=20)
    assert unit / row == pytest.approx(3, rel=0.01)


@pytest.mark.parametrize(
    ("statistic", "errors", "kw"),
    [
        ("count", [1, 2, 5, 10, 20, 50, 100, 1000], {}),
        ("count", [5, 10], GAUSS),
        ("sum", [0.2, 0.5, 1, 5, 20, 100], {}),
        ("sum", [1, 2, 5, 20, 100], GAUSS),
        ("mean", [0.01, 0.03, 0.1, 0.3], {"expected_rows": N}),
    ],
)
def test_monotone_in_the_error(priv, statistic, errors, kw) -> None:
    bounds = {} if statistic == "count" else {"bounds": BOUNDS}
    values = [priv.dp.epsilon_for(statistic, error=e, **bounds, **kw) for e in errors]
    assert values == sorted(values, reverse=True), dict(zip(errors, values, strict=True))
    assert values[0] > values[-1]


@pytest.mark.parametrize(
    ("statistic", "error", "kw"),
    [("count", 20, {}), ("sum", 5, {}), ("sum", 5, GAUSS)],
)
def test_monotone_in_alpha(priv, statistic, error, kw) -> None:
    # A smaller α asks for more confidence, so it can only cost more.
    alphas = [0.3, 0.1, 0.05, 0.01, 1e-4]
    bounds = {} if statistic == "count" else {"bounds": BOUNDS}
    values = [priv.dp.epsilon_for(statistic, error=error, alpha=a, **bounds, **kw) for a in alphas]
    assert values == sorted(values), dict(zip(alphas, values, strict=True))
    assert values[0] < values[-1]


BAD = [
    ("median", {"error": 5}),
    ("count", {"error": 0}),
    ("count", {"error": -1}),
    ("count", {"error": math.nan}),
    ("count", {"error": math.inf}),
    ("count", {"error": "5"}),
    ("count", {"error": None}),
    ("count", {"error": True}),
    ("count", {"error": 5, "alpha": 0}),
    ("count", {"error": 5, "alpha": 1}),
    ("count", {"error": 5, "alpha": -0.1}),
    ("count", {"error": 5, "alpha": math.nan}),
    ("count", {"error": 5, "alpha": "0.05"}),
    ("count", {"error": 5, "mechanism": "cauchy"}),
    ("count", {"error": 5, "mechanism": "gaussian"}),  # Gaussian noise needs its δ
    ("count", {"error": 5, "delta": 1e-6}),  # δ is for Gaussian noise only
    ("count", {"error": 5, "mechanism": "gaussian", "delta": 1.5}),
    ("count", {"error": 5, "mechanism": "gaussian", "delta": -1e-6}),
    ("sum", {"error": 5}),  # bounds are required
    ("sum", {"error": 5, "bounds": (2, 0)}),
    ("sum", {"error": 5, "bounds": (0, math.inf)}),
    ("mean", {"error": 0.1, "bounds": BOUNDS}),  # a mean's error needs a planning n
    ("mean", {"error": 0.1, "bounds": BOUNDS, "expected_rows": 0}),
    ("mean", {"error": 0.1, "bounds": BOUNDS, "expected_rows": math.nan}),
    ("sum", {"error": 1e-3, "bounds": BOUNDS}),  # below what any ε reaches
]


@pytest.mark.parametrize(("statistic", "kw"), BAD, ids=[f"{s}-{k}" for s, k in BAD])
def test_bad_arguments_raise(priv, statistic, kw) -> None:
    with pytest.raises(DPError):
        priv.dp.epsilon_for(statistic, **kw)
    assert priv.dp.session.releases == ()
