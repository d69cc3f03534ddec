"""Glue of datetime releases: the scale passed to the sampler, the charge and the lattice,
in nanoseconds, against the documented rules (``tests/oracles/lattice.py``).

A datetime column is its instants in nanoseconds since 1970 (UTC); its bounds are the
Timestamps' nanoseconds. So a mean of ``t`` with bounds ``(L, U)`` is exactly the numeric
mean of those nanoseconds: a centred lattice sum of sensitivity ``(U - L)/2`` (in lattice
steps of ``2**k`` ns) with half of ε, and a count of non-missing values with the other half.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import pandas as pd
import pytest

from ..oracles.lattice import reference_lattice
from .conftest import DAY, YEAR

L, U = (float(bound.value) for bound in YEAR)  # 1.5778368e18 and 1.6094592e18 ns


@pytest.mark.parametrize("tz", [None, "Asia/Tokyo"])
@pytest.mark.parametrize("unit", ["s", "ns"])
def test_datetime_mean_scale_charge_and_value_in_nanoseconds(
    frame: Callable[..., pd.DataFrame], protect_seeded: Callable[..., Any], noise: Callable,
    unit: str, tz: Any,
) -> None:  # fmt: skip
    data = frame(unit, tz)
    priv = protect_seeded(data, epsilon=1.0)
    bounds = YEAR if tz is None else tuple(b.tz_localize("UTC").tz_convert(tz) for b in YEAR)
    with noise(priv) as calls:
        released = priv.dp.mean("t", bounds=bounds, epsilon=0.5)
    share = Fraction(1, 4)  # ε/2 each for the centred sum and the count (a lone mean)
    ref = reference_lattice(L, U, share, centered=True)
    sum_scale = Fraction(ref.sensitivity) / share  # in lattice steps of 2**k ns
    assert sorted(call.mechanism.scale for call in calls) == sorted([sum_scale, 1 / share])
    # In nanoseconds: the sensitivity (U - L)/2 over ε/2, up to one lattice step.
    assert float(sum_scale) * ref.granularity == pytest.approx((U - L) / 2 / 0.25, rel=2**-30)

    (record,) = priv.dp.session.releases
    by_label = {m.label: m for m in record.measurements}
    assert set(by_label) == {"centred_sum(t)", "count(t)"}
    centred = by_label["centred_sum(t)"]
    assert (centred.sensitivity, centred.exponent, centred.epsilon) == (
        ref.sensitivity, ref.exponent, share,
    )  # fmt: skip
    assert by_label["count(t)"].epsilon == share
    assert priv.dp.session.spent.epsilon == Fraction(1, 2)
    assert record.bounds == (("t", L, U),)
    assert "nanoseconds since 1970-01-01 UTC" in record.note

    # The documented value with zero noise: centre + Σ units × step / n, in the column's
    # unit and zone (float64 arithmetic on ~1.6e18 ns: within a microsecond).
    present = data["t"].dropna()
    if tz is not None:
        present = present.dt.tz_convert(None)
    per_tick = 1e9 if unit == "s" else 1.0
    nanoseconds = [float(v) * per_tick for v in present.astype("int64")]
    mean = ref.centre + ref.total(nanoseconds) * ref.step / len(nanoseconds)
    expected = pd.Timestamp(round(mean), unit="ns")
    got = released.tz_convert(None) if tz else released
    assert abs(got - expected) <= pd.Timedelta(seconds=1 if unit == "s" else 1e-6)
    assert released.unit == unit


def test_timedelta_sum_scale_is_the_largest_bound_over_epsilon(
    frame: Callable[..., pd.DataFrame], protect_seeded: Callable[..., Any], noise: Callable
) -> None:
    data = frame("us")
    priv = protect_seeded(data, epsilon=1.0)
    with noise(priv) as calls:
        released = priv["d"].dp.sum(bounds=DAY, epsilon=0.5)
    ref = reference_lattice(0.0, float(DAY[1].value), Fraction(1, 2))
    (call,) = calls
    assert call.mechanism.scale == Fraction(ref.sensitivity) / Fraction(1, 2)
    assert float(call.mechanism.scale) * ref.granularity == pytest.approx(2 * 86_400e9, rel=2**-30)
    expected = ref.total([float(v) * 1e3 for v in data["d"].astype("int64")]) * ref.step
    assert abs(released - pd.Timedelta(round(expected), unit="ns")) <= pd.Timedelta(1, unit="us")
    (measurement,) = priv.dp.session.releases[0].measurements
    assert measurement.sensitivity == ref.sensitivity
    assert measurement.exponent == ref.exponent


def test_quantile_of_datetimes_is_charged_like_any_quantile(
    frame: Callable[..., pd.DataFrame], protect_seeded: Callable[..., Any], noise: Callable
) -> None:
    priv = protect_seeded(frame("us"), epsilon=1.0)
    with noise(priv) as calls:
        priv["t"].dp.quantile([0.25, 0.5], bounds=YEAR, epsilon=0.5)
        priv["t"].dp.max(bounds=YEAR, epsilon=0.25)
    # ε split equally between the levels; sensitivity max(q, 1 - q), 1 for the maximum.
    assert [call.mechanism.epsilon for call in calls] == [Fraction(1, 4)] * 3
    assert [call.mechanism.sensitivity for call in calls] == [
        Fraction(3, 4), Fraction(1, 2), Fraction(1),
    ]  # fmt: skip
    assert priv.dp.session.spent.epsilon == Fraction(3, 4)
    preview = priv.dp.preview.mean("t", bounds=YEAR, epsilon=0.5)
    assert preview.table.loc["mean", "scale"] == pytest.approx((U - L) / 2 / 0.25, rel=2**-30)
