"""``resample(...).size(cumulative=True)``: running totals by continual counting (issue 29).

Under zero noise the release is ``df.resample(...).size().cumsum()``; the scale handed to the
sampler and the charge are those of the plan (the tree: ``k L / ε`` on every dyadic block;
the square-root factorization: ``σ² >= k² Δ² / (2ρ)``); previews and refusals as for any
release.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

import pandas_dp  # noqa: F401  (registers the accessors)
from pandas_dp.errors import DPTypeError, DPValueError
from pandas_dp.mechanisms.continual.sqrt import sensitivity_squared
from pandas_dp.mechanisms.continual.tree import tree_levels
from pandas_dp.planning.measurement.marginals import release_rho

START, END = pd.Timestamp("2024-01-01"), pd.Timestamp("2025-01-01")


def events(rows: int = 5000) -> pd.DataFrame:
    gen = np.random.default_rng(21)  # test data only, never noise
    seconds = gen.integers(0, int((END - START).total_seconds()), rows)
    return pd.DataFrame(
        {"t": START + pd.to_timedelta(seconds, unit="s"), "pid": np.arange(rows) // 3}
    )


@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
@pytest.mark.parametrize("freq", ["D", "W", "MS"])
def test_zero_noise_gives_pandas_cumsum(
    freq: str, mechanism: str, noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    data = events()
    priv = protect_seeded(data, epsilon=2.0, delta=1e-6)
    with noise(priv):
        totals = priv.dp.resample(freq, on="t", range=(START, END)).size(
            epsilon=1.0, cumulative=True, mechanism=mechanism
        )
    expected = data.resample(freq, on="t").size().cumsum()
    pd.testing.assert_series_equal(totals, expected, check_names=False)  # int64, as pandas
    assert totals.index.freq == expected.index.freq
    assert totals.index.name == "t"


def test_the_tree_is_charged_and_scaled_as_planned(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    priv = protect_seeded(events(), epsilon=1.0)
    resampler = priv.dp.resample("D", on="t", range=(START, END))
    with noise(priv) as calls:
        resampler.size(epsilon=0.5, cumulative=True)
    (call,) = calls
    levels = tree_levels(366)
    assert call.mechanism.effective_scale == Fraction(levels) / Fraction(1, 2)  # kL/ε, k = 1
    assert call.size == 2 * 366 - bin(366).count("1")  # every complete dyadic block
    ledger = priv.dp.session.ledger
    assert ledger["epsilon"].tolist() == [0.5]
    assert "binary tree" in ledger["note"].iloc[0]


def test_the_factorization_is_calibrated_from_rho_exactly(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    priv = protect_seeded(
        events(), epsilon=2.0, delta=1e-6, privacy_unit="pid", max_rows_per_unit=3
    )
    with noise(priv) as calls:
        priv.dp.resample("MS", on="t", range=(START, END)).size(
            epsilon=1.0, cumulative=True, mechanism="gaussian", delta=1e-7
        )
    (call,) = calls
    (release,) = priv.dp.session.releases
    (measurement,) = release.measurements
    squared = sensitivity_squared(12)
    assert measurement.coordinates == squared
    assert measurement.sensitivity == 3  # three rows per unit
    assert measurement.sigma2 == call.mechanism.sigma2
    assert measurement.rho == Fraction(9 * squared) / (2 * call.mechanism.sigma2)  # k²Δ²/(2σ²)
    assert float(measurement.rho) <= release_rho(Fraction(1), Fraction(1, 10**7))
    assert release.cost.delta == Fraction(1, 10**7)


def test_intervals_cover_and_previews_spend_nothing() -> None:
    priv = events().dp.protect(epsilon=1.0, delta=1e-6)
    resampler = priv.dp.resample("W", on="t", range=(START, END))
    preview = priv.dp.preview.resample("W", on="t", range=(START, END)).size(
        epsilon=0.5, cumulative=True, mechanism="gaussian"
    )
    assert preview.table.loc["size", "error"] > 0
    assert priv.dp.session.spent.epsilon == 0
    table = resampler.size(epsilon=0.5, cumulative=True, mechanism="gaussian", ci=0.95)
    assert list(table.columns) == ["size", "size_lower", "size_upper"]
    assert (table["size_lower"] <= table["size"]).all()
    assert (table["size"] <= table["size_upper"]).all()


def test_refusals_charge_nothing(charges_nothing: Callable[[Any], Any]) -> None:
    priv = events().dp.protect(epsilon=1.0)
    resampler = priv.dp.resample("D", on="t", range=(START, END))
    with charges_nothing(priv), pytest.raises(DPValueError, match="needs a δ"):
        resampler.size(epsilon=0.5, cumulative=True, mechanism="gaussian")
    with charges_nothing(priv), pytest.raises(DPTypeError, match="takes epsilon"):
        resampler.size(epsilon=0.5, cumulative=True, nonnegative=True)
