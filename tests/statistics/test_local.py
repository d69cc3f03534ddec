"""Randomized response through the public API (``Series.dp.randomized_response``) and the
estimators of :mod:`pandas_dp.local`.

Budget rule (module docstring of ``pandas_dp.local``): randomizing unprotected data is the
respondents' side of a survey and charges nothing; randomizing a protected Series releases
ε-DP data from its session and is charged ε. Distribution and estimator properties at scale
are in ``tests/mechanisms/test_randomized_response.py``; here they go through the API.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import pandas_dp
from pandas_dp.errors import (
    DPError,
    DPTypeError,
    DPValueError,
    NotProtectedError,
)
from pandas_dp.local import LOCAL_KEY, estimate_proportion, randomized_response


def seeded(series: pd.Series, seed: int, **kwargs: Any) -> pd.Series:
    """Randomized response with a test seed (which must warn)."""
    with pytest.warns(pandas_dp.PrivacyLeakWarning, match="seeded rng"):
        return series.dp.randomized_response(rng=seed, **kwargs)


def keep_probability(epsilon: float, k: int) -> float:
    """``p = e^ε / (e^ε + k - 1)`` (Warner 1965; generalized randomized response)."""
    return math.exp(epsilon) / (math.exp(epsilon) + k - 1)


def halfwidth(n: int, epsilon: float, k: int, beta: float) -> float:
    """Hoeffding: ``sqrt(ln(2/β) / (2n)) / (p - q)`` with ``q = (1 - p) / (k - 1)``."""
    p = keep_probability(epsilon, k)
    q = (1 - p) / (k - 1)
    return math.sqrt(math.log(2 / beta) / (2 * n)) / (p - q)


# --- output and budget -----------------------------------------------------------------------


def test_unprotected_data_is_randomized_without_a_session(rng):
    answers = pd.Series(rng.random(1000) < 0.3, index=np.arange(1000) * 7, name="smoker")
    noisy = answers.dp.randomized_response(epsilon=1.0)
    assert noisy.dtype == bool
    assert noisy.name == "smoker"
    assert noisy.index.equals(answers.index)
    assert noisy.attrs == {
        LOCAL_KEY: {"mechanism": "randomized_response", "epsilon": "1", "categories": [False, True]}
    }
    with pytest.raises(NotProtectedError):  # no budget was created on the way
        answers.dp.session  # noqa: B018
    # About a quarter of the answers flip at ε = 1 (1 - p = 0.269): not a copy, not noise.
    flipped = float((noisy != answers).mean())
    assert 0.2 < flipped < 0.34


def test_a_protected_series_is_refused_and_nothing_is_charged(rng, protect_seeded):
    # Randomized response releases one record per row: the row count and which rows exist
    # would leave without noise, which the add/remove-one-row guarantee does not allow. The
    # refusal names the central alternative.
    priv = protect_seeded(pd.DataFrame({"smoker": rng.random(300) < 0.3}), epsilon=2)
    for series in (priv["smoker"], priv[priv["smoker"]]["smoker"]):  # whole or filtered
        with pytest.raises(DPValueError, match="value_counts"):
            series.dp.randomized_response(epsilon=0.75)
    assert priv.dp.session.spent.epsilon == 0
    assert priv.dp.session.releases == ()


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"categories": None}, DPValueError),  # not bool: categories are required
        ({"categories": ["x"]}, DPValueError),  # at least two
        ({"categories": []}, DPValueError),
        ({"categories": ["x", "x"]}, DPValueError),
        ({"categories": "xy"}, DPTypeError),
        ({"categories": ["x", None]}, DPValueError),
        ({"categories": ["x", "y"], "epsilon": 0}, DPValueError),
        ({"categories": ["x", "y"], "epsilon": math.nan}, DPValueError),
        ({"categories": ["x", "y"], "epsilon": "1"}, DPTypeError),
        ({"categories": ["x", "y"], "epsilon": True}, DPTypeError),
        ({"categories": ["x", "y"], "rng": 1.5}, DPTypeError),
    ],
)
def test_bad_arguments_are_refused(kwargs, error):
    arguments = {"epsilon": 1.0, **kwargs}
    with pytest.raises(error):
        pd.Series(["x", "y", "z"], name="c").dp.randomized_response(**arguments)
    with pytest.raises(error):
        randomized_response(pd.Series(["x", "y"], name="c"), **arguments)
    with pytest.raises(DPTypeError):
        randomized_response(pd.DataFrame({"c": ["x"]}), epsilon=1.0)


def test_categories_output_and_values_outside_them_are_uniform():
    """Values outside the categories (and missing ones) are reported as a uniformly random
    category (documented): 30,000 such rows, χ² against 1/3 each (p > 1e-6)."""
    odd = pd.Series(["w", None, "v"] * 10_000, name="c")
    noisy = seeded(odd, 5, epsilon=2.0, categories=["x", "y", "z"])
    assert isinstance(noisy.dtype, pd.CategoricalDtype)
    assert list(noisy.cat.categories) == ["x", "y", "z"]
    counts = noisy.value_counts().reindex(["x", "y", "z"]).to_numpy()
    assert stats.chisquare(counts).pvalue > 1e-6
    # Known values keep their category with probability e^2 / (e^2 + 2) = 0.787.
    known = seeded(pd.Series(["y"] * 30_000, name="c"), 6, epsilon=2.0, categories=["x", "y", "z"])
    kept = int((known == "y").sum())
    p = keep_probability(2.0, 3)
    assert abs(kept - 30_000 * p) < 5.3 * math.sqrt(30_000 * p * (1 - p))  # |z| < 5.3: 1e-7


# --- estimators ------------------------------------------------------------------------------


@pytest.mark.statistical  # a seeded distribution test: runs once in CI (.ci/run)
def test_estimates_are_unbiased_and_intervals_cover(rng):
    """300 seeded surveys of n = 2,000 answers (true share 0.3) through the public API.

    Unbiased: the mean of the estimates has standard deviation at most
    ``1 / (2 (p - q) sqrt(n R))`` = 1.4e-3 (the observed share's variance is at most
    ``1/(4n)``); 5.3 of them (6.6e-3) bound it with probability 1 - 1e-7.
    Coverage: each interval misses with probability at most β = 0.05 (exact), so more
    than ``binom.ppf(1 - 1e-6, 300, 0.05)`` misses has probability below 1e-6.
    """
    n, runs, eps, truth = 2000, 300, 1.0, 0.3
    answers = pd.Series(np.arange(n) < truth * n, name="smoker")
    estimates = [estimate_proportion(seeded(answers, seed, epsilon=eps)) for seed in range(runs)]
    values = np.array([e.value for e in estimates])
    p = keep_probability(eps, 2)
    sd = 1 / (2 * (2 * p - 1) * math.sqrt(n * runs))
    assert abs(values.mean() - truth) < 5.3 * sd
    misses = sum(not e.lower <= truth <= e.upper for e in estimates)
    print(f"randomized response n={n}: {misses}/{runs} intervals missed the truth")
    assert misses <= stats.binom.ppf(1 - 1e-6, runs, 0.05)
    for e in estimates:
        assert e.confidence == pytest.approx(0.95)
        assert 0.0 <= e.lower <= e.upper <= 1.0
        assert e.upper - e.lower <= 2 * halfwidth(n, eps, 2, 0.05) + 1e-12


def test_many_categories_give_one_row_each():
    categories = ["a", "b", "c", "d"]
    n, truth = 8000, np.array([0.4, 0.3, 0.2, 0.1])
    answers = pd.Series(np.repeat(categories, (truth * n).astype(int)), name="c")
    noisy = seeded(answers, 11, epsilon=2.0, categories=categories)
    table = estimate_proportion(noisy, beta=0.1)
    assert isinstance(table, pd.DataFrame)
    assert list(table.index) == categories
    assert list(table.columns) == ["estimate", "lower", "upper"]
    width = halfwidth(n, 2.0, 4, 0.1)
    unclipped = table[(table["lower"] > 0) & (table["upper"] < 1)]
    assert len(unclipped) == 4
    # Exact intervals (tests/mechanisms/test_rr_intervals.py): inside Hoeffding's, around π̂.
    assert np.all(table["upper"] - table["estimate"] <= width + 1e-12)
    assert np.all(table["estimate"] - table["lower"] <= width + 1e-12)
    assert np.all((table["lower"] <= table["estimate"]) & (table["estimate"] <= table["upper"]))
    # Estimates are unbiased per category; shares add up to 1 exactly (linear estimator).
    assert table["estimate"].sum() == pytest.approx(1.0, abs=1e-12)
    assert np.all(np.abs(table["estimate"].to_numpy() - truth) < width)


def test_a_million_answers_at_epsilon_one():
    """n = 10^6, ε = 1, β = 0.05: Hoeffding's half-width ``sqrt(ln 40 / 2e6)/(p - q)``
    = 2.94e-3; the exact interval is inside it and covers the truth (repetitions at this size
    are in tests/mechanisms/test_randomized_response.py)."""
    n, truth = 1_000_000, 0.237
    answers = pd.Series(np.arange(n) < truth * n, name="x")
    estimate = estimate_proportion(seeded(answers, 2024, epsilon=1.0))
    width = halfwidth(n, 1.0, 2, 0.05)
    assert width == pytest.approx(math.sqrt(math.log(40) / 2e6) * (math.e + 1) / (math.e - 1))
    # The exact interval is inside Hoeffding's (about 0.7 of its width at this size).
    assert 0 < estimate.upper - estimate.value <= width
    assert 0 < estimate.value - estimate.lower <= width
    assert (estimate.upper - estimate.lower) / (2 * width) < 0.75
    print(f"n=1e6: error {abs(estimate.value - truth):.2e}, half-width {width:.3e}")
    assert estimate.lower <= truth <= estimate.upper


def test_estimate_needs_epsilon_and_a_valid_beta(rng):
    plain = pd.Series(rng.random(100) < 0.5)
    with pytest.raises(DPValueError, match="epsilon"):
        estimate_proportion(plain)
    assert estimate_proportion(plain, epsilon=1.0).lower >= 0
    for beta in (0, 1, 1.5, math.nan):
        with pytest.raises(DPValueError):
            estimate_proportion(plain, epsilon=1.0, beta=beta)


# --- bugs ------------------------------------------------------------------------------------


@pytest.mark.parametrize("eps", [0.5, 1.5, 1 / 3])
def test_estimate_reads_any_recorded_epsilon(rng, eps):
    # attrs record ε as exact text ("1/2" for 0.5); reading it back must work for every ε,
    # not only for integers, and give the same answer as passing ε explicitly.
    noisy = pd.Series(rng.random(500) < 0.5, name="s").dp.randomized_response(epsilon=eps)
    recorded = estimate_proportion(noisy)
    explicit = estimate_proportion(noisy, epsilon=eps)
    assert recorded.value == pytest.approx(explicit.value, rel=1e-12)


def test_randomizing_duplicated_rows_is_refused(protect_seeded):
    # Each row of a protected Series is one person: concat([s, s]) would randomize every
    # person twice (2ε) while charging ε. Every other release refuses such a frame.
    priv = protect_seeded(pd.DataFrame({"smoker": [True, False] * 50}), epsilon=5)
    doubled = pd.concat([priv["smoker"], priv["smoker"]])
    with pytest.raises(NotProtectedError):
        doubled.dp.mode(candidates=[True, False], epsilon=1.0)
    with pytest.raises(DPError):  # DuplicatedRowsError, like every other release
        doubled.dp.randomized_response(epsilon=1.0)
    assert priv.dp.session.spent.epsilon == 0


def test_randomizing_rows_of_a_privacy_unit_is_refused(protect_seeded):
    # Under a privacy unit, one person may own several rows; randomizing each row with ε
    # releases up to (rows per person) × ε about that person, so protected data is refused
    # (central releases such as the mode cap each person instead).
    data = pd.DataFrame({"pid": [1, 1, 1, 2, 2, 3], "smoker": [True] * 3 + [False] * 3})
    priv = protect_seeded(data, epsilon=5, privacy_unit="pid", max_rows_per_unit=1)
    with pytest.raises(DPError):
        priv["smoker"].dp.randomized_response(epsilon=1.0)
    assert priv.dp.session.spent.epsilon == 0
    assert priv.dp.mode("smoker", candidates=[True, False], epsilon=1.0) in (True, False)
