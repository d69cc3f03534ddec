"""Quantiles for any level q (issue 13).

``quantile(1/3)`` used to fail with a plain ValueError ("ε or the score denominator too
fine") and, with ``cells=16``, to return garbage once int64 scores wrapped (n > ~900): the
level 0.3333333333333333 was read with denominator 10**16.
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import pandas_dp
from pandas_dp.mechanisms.exponential import ExponentialMechanism, coarser_rate
from pandas_dp.mechanisms.quantile import quantile_scores, rank_error
from pandas_dp.mechanisms.random import SeededRandomSource


def _seeded(frame: pd.DataFrame, epsilon: float, seed: int = 0) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
        return frame.dp.protect(epsilon=epsilon, rng=seed)


@pytest.mark.parametrize("cells", [None, 16])
def test_one_third_quantile_is_close_to_the_true_one(cells: int | None) -> None:
    values = np.arange(5000, dtype=float)
    priv = _seeded(pd.DataFrame({"x": values}), 10.0)
    released = priv.dp.quantile("x", 1 / 3, bounds=(0, 5000), epsilon=2.0, cells=cells)
    grid = 5000 / (4096 if cells is None else cells)
    # rank error at 1 - 1e-6 (sensitivity max(q, 1 - q) = 2/3), plus one grid cell
    ranks = rank_error(2.0, (4096 if cells is None else cells) + 1, 1e-6, 2 / 3)
    assert abs(released - 5000 / 3) <= ranks + grid
    (record,) = priv.dp.session.releases
    assert record.measurements[0].label == "quantile(x, 0.3333333333333333)"


@pytest.mark.parametrize("q", [1 / 3, 0.1, 0.999999, 1e-9, 2 / 7, 0.123456789012])
def test_every_level_releases(q: float) -> None:
    priv = _seeded(pd.DataFrame({"x": np.linspace(0, 1, 2000)}), 5.0)
    released = priv.dp.quantile("x", q, bounds=(0, 1), epsilon=0.37, cells=64)
    assert 0 <= released <= 1


def test_scores_are_exact_beyond_int64() -> None:
    q = Fraction(10**15 + 1, 3 * 10**15)  # a denominator that overflows int64 products
    ranks = [0, 7, 7, 90_007, 90_010]  # no value on an edge: #{x < c} = #{x <= c}
    scores, denominator = quantile_scores(np.array([ranks + ranks], dtype=np.int64), q)
    expected = [abs(q.denominator * r - q.numerator * 90_010) for r in ranks]
    assert denominator == q.denominator
    assert [int(s) for s in scores[0]] == expected


def test_a_rate_too_fine_for_int64_is_rounded_down_never_up() -> None:
    rate = Fraction(10**30 + 7, 3 * 10**30)
    coarse = coarser_rate(rate, 10**6)
    assert coarse <= rate
    assert rate - coarse < Fraction(1, 10**12)
    assert coarse.denominator * 10**6 < 2**62
    assert coarser_rate(Fraction(1, 3), 1) == Fraction(1, 3)


@pytest.mark.statistical
def test_sampling_with_a_fine_rate_follows_the_exact_distribution() -> None:
    mechanism = ExponentialMechanism(Fraction(10**30 + 7, 10**30), Fraction(3, 2))
    scores = np.array([[0, 1, 2, 3, 5]], dtype=np.int64)
    source = SeededRandomSource(2024)
    draws = np.concatenate(
        [mechanism.choose(np.repeat(scores, 1000, axis=0), 1, source) for _ in range(20)]
    )
    observed = np.bincount(draws, minlength=5)
    rate = float(mechanism.rate)
    weights = np.exp(-rate * scores[0])
    expected = weights / weights.sum() * draws.size
    assert stats.chisquare(observed, expected).pvalue > 1e-6
    assert math.isclose(observed.sum(), 20_000)
