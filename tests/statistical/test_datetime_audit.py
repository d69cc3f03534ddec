"""Empirical privacy-loss audit of the datetime mean at ε = 1, with caught mutants.

A datetime mean is a numeric mean of nanoseconds since 1970: a centred lattice sum (with
ε/2, sensitivity ``(U - L)/2`` in lattice steps of ``2**k`` ns) over a count of non-missing
values (ε/2, sensitivity 1), post-processed into ``centre + sum / max(count, 1)`` clipped
to the bounds. The audit (``auditing.py``: event chosen on a calibration run, ε bounded on
an independent evaluation run, confidence 1 - 1e-6) runs on neighbours D and D' = D plus
one row at the upper bound (2020-12-31 23:59:59, the largest move of the centred sum).

Vectorised releases. The release's own plan gives the exact aggregates (one per
measurement) and the mechanisms; 10^6 independent draws per measurement are added to them
and the release's own post-processing (:func:`~pandas_dp.api.release.finish.columns_of`)
turns each pair into a mean: exactly the law of 10^6 separate releases. A check ties this
to the public path (the same constant noise gives the same Timestamp).

Mutants. (a) The sensitivity taken in days while the values are in nanoseconds (the
noise scale divided by the 8.64e13 ns of a day): almost no noise, caught at once. (b) Half
the calibrated noise on both measurements (truly 2ε): the audit's power near ε.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

from pandas_dp.api.queries.ungrouped import plan_one
from pandas_dp.api.release import ReleaseOptions
from pandas_dp.api.release.finish import columns_of
from pandas_dp.mechanisms.laplace import DiscreteLaplace
from pandas_dp.mechanisms.random import SeededRandomSource
from pandas_dp.planning.measurement.parts import add_noise
from pandas_dp.planning.statistics.postprocess import PostProcess

from .auditing import audit, paired_runs

pytestmark = pytest.mark.statistical

EPSILON = 1.0
YEAR = (pd.Timestamp("2020-01-01"), pd.Timestamp("2021-01-01"))
NANOSECONDS_PER_DAY = 86_400 * 10**9
#: The real mean must not look noisier than calibrated: it scores 0.854 with these
#: neighbours (the mean hides a little of what its two measurements reveal; the bounds'
#: confidence costs about 0.02), and the same mean with twice the noise scores 0.39.
TIGHT = 0.6

Mutation = Callable[[str, DiscreteLaplace], DiscreteLaplace]


def _neighbours() -> tuple[pd.DataFrame, pd.DataFrame]:
    """D: 8 instants (one NaT, one before the bounds); D' adds one at the upper bound."""
    stamps = pd.to_datetime(
        ["2020-02-01", "2020-03-15", "2020-06-30", "2020-07-01", "2020-11-11", "2019-05-05",
         "2020-12-01", None]
    )  # fmt: skip
    d = pd.DataFrame({"t": stamps})
    d2 = pd.concat([d, pd.DataFrame({"t": [pd.Timestamp("2020-12-31 23:59:59")]})])
    return d, d2.reset_index(drop=True)


def _planned(priv: pd.DataFrame) -> Any:
    return plan_one(priv, "mean", "t", ReleaseOptions(bounds=YEAR, epsilon=EPSILON))


def _exact(planned: Any) -> list[int]:
    """The exact aggregates the release computes (one per measurement, in plan order)."""
    target = planned.target
    measures = tuple(part.measure for part in planned.parts.values())
    values = target.engine.aggregate(target.data, measures, None, None).values
    return [int(v[0]) for v in values]


def _means(planned: Any, exact: list[int], noise: list[np.ndarray]) -> np.ndarray:
    """The release's post-processing of noisy measurements: means in nanoseconds."""
    noisy = {
        key: add_noise(np.full(z.size, value, dtype=np.int64), z)
        for key, value, z in zip(planned.parts, exact, noise, strict=True)
    }
    (means,) = columns_of(planned.outputs, noisy, PostProcess(min_count=0), None).values()
    return np.asarray(means, dtype=np.float64)


def _runs(
    protect_seeded: Callable[..., Any], mutate: Mutation | None, seed: int, *sizes: int
) -> Any:
    plans, exact = [], []
    for index, data in enumerate(_neighbours()):
        planned = _planned(protect_seeded(data, seed=index, epsilon=EPSILON))
        plans.append(planned)
        exact.append(_exact(planned))
    mechanisms = [part.mechanism for part in plans[0].parts.values()]
    assert mechanisms == [part.mechanism for part in plans[1].parts.values()]  # public
    if mutate is not None:
        mechanisms = [
            mutate(key.kind, m) for key, m in zip(plans[0].parts, mechanisms, strict=True)
        ]

    def outputs(dataset: int, n: int, stream: int) -> np.ndarray:
        source = SeededRandomSource(stream)
        draws = [mechanism.sample(n, source) for mechanism in mechanisms]
        return _means(plans[dataset], exact[dataset], draws)

    return paired_runs(outputs, seed, *sizes)


def _days_for_nanoseconds(kind: str, mechanism: DiscreteLaplace) -> DiscreteLaplace:
    if kind != "centred_sum":
        return mechanism
    return DiscreteLaplace(mechanism.scale / NANOSECONDS_PER_DAY)


def _half(kind: str, mechanism: DiscreteLaplace) -> DiscreteLaplace:
    return DiscreteLaplace(mechanism.scale / 2)


def test_the_simulation_is_the_public_release(
    protect_seeded: Callable[..., Any], noise: Callable
) -> None:
    d, _ = _neighbours()
    priv = protect_seeded(d, epsilon=EPSILON)
    planned = _planned(priv)
    exact = _exact(planned)
    with noise(priv, value=3) as calls:
        released = priv.dp.mean("t", bounds=YEAR, epsilon=EPSILON)
    simulated = _means(planned, exact, [np.full(1, 3, dtype=np.int64)] * 2)[0]
    per_tick = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1.0}[released.unit]  # the column's unit
    assert released == pd.Timestamp(int(np.rint(simulated / per_tick)), unit=released.unit)
    # Scales: (U - L)/2 over ε/2 in lattice steps; 1 over ε/2 for the count.
    step = 2.0 ** next(iter(planned.parts.values())).lattice.exponent
    sum_scale, count_scale = (float(call.mechanism.scale) for call in calls)
    assert sum_scale * step == pytest.approx((YEAR[1] - YEAR[0]).value / 2 / 0.5, rel=2**-30)
    assert count_scale == 2.0
    assert exact[1] == 7  # the count of non-missing values


def test_datetime_mean_audit_and_mutants(protect_seeded: Callable[..., Any]) -> None:
    real = audit(*_runs(protect_seeded, None, 6000))
    print(f"datetime mean, real mechanism: {real}")
    assert real.epsilon_lb <= EPSILON, f"the datetime mean leaks more than ε = 1: {real}"
    assert real.epsilon_lb >= TIGHT, f"the datetime mean is noisier than calibrated: {real}"

    # Mutants on fewer releases (20,000 and 100,000; 200,000 and 500,000): enough to catch
    # them by a wide margin, in a fraction of the time.
    days = audit(*_runs(protect_seeded, _days_for_nanoseconds, 6000, 20_000, 100_000))
    print(f"datetime mean, sensitivity in days: {days}")
    assert days.epsilon_lb > EPSILON, f"the days-for-ns mutant was not caught: {days}"

    half = audit(*_runs(protect_seeded, _half, 6000, 200_000, 500_000))
    print(f"datetime mean, half noise: {half}")
    assert half.epsilon_lb > EPSILON, f"the half-noise mutant was not caught: {half}"
