"""Series releases under a privacy unit: Dask traces them to their frame, pandas refuses them.

Dask releases the Series from the frame it was derived from elementwise, its values next to
the unit column (its expression graph says so). A pandas Series has only its index labels,
which ``reset_index`` or ``set_axis`` renumber (the audit's relabelling leak, issue 23), so
it is refused before any charge unless it is the unit column itself; its frame releases it.
One unit with many rows moves a release by at most the declared bound: checked with the
noise replaced by zero (``capture_noise``), on a frame and on the same frame plus one heavy
unit, and by the scale the sampler was asked for.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from pandas_dp import NotProtectedError

CAP = 3
HEAVY_ROWS = 40
BOUNDS = (0.0, 10.0)
EPSILON = 0.5


@pytest.fixture(autouse=True)
def threads() -> Any:
    with dask.config.set(scheduler="threads"):
        yield


def _people(heavy: bool) -> pd.DataFrame:
    """60 people with 1-3 rows each; with ``heavy``, person 999 adds 40 rows at the bound."""
    pid = np.repeat(np.arange(60), np.arange(60) % CAP + 1)
    frame = pd.DataFrame({"pid": pid, "x": (pid % 7) * 1.5, "g": np.where(pid % 2, "a", "b")})
    if heavy:
        extra = pd.DataFrame({"pid": 999, "x": 1e6, "g": "a"}, index=range(HEAVY_ROWS))
        frame = pd.concat([frame, extra], ignore_index=True)
    return frame.sample(frac=1.0, random_state=2).reset_index(drop=True)


def _protect(frame: pd.DataFrame, engine: str, seed: int, protect_seeded: Callable) -> Any:
    data = frame if engine == "pandas" else dd.from_pandas(frame, npartitions=4)
    return protect_seeded(data, seed=seed, epsilon=100.0, privacy_unit="pid", max_rows_per_unit=CAP)


#: Series releases, each with the most one unit can move it (the declared bound).
SERIES_RELEASES: dict[str, tuple[Callable[[Any], Any], float]] = {
    "count": (lambda p: p["x"].dp.count(epsilon=EPSILON), CAP),
    "sum": (lambda p: p["x"].dp.sum(bounds=BOUNDS, epsilon=EPSILON), CAP * BOUNDS[1]),
    "sum of a derived Series": (
        lambda p: (p["x"] * 2 + 1).dp.sum(bounds=BOUNDS, epsilon=EPSILON),
        CAP * BOUNDS[1],
    ),
    "sum of a filtered frame's column": (
        lambda p: p[p["g"] == "a"]["x"].dp.sum(bounds=BOUNDS, epsilon=EPSILON),
        CAP * BOUNDS[1],
    ),
    "value_counts": (
        lambda p: p["g"].dp.value_counts(keys=["a", "b"], epsilon=EPSILON)["a"],
        CAP,
    ),
}


@pytest.mark.parametrize("release", SERIES_RELEASES.values(), ids=SERIES_RELEASES.keys())
def test_a_pandas_series_under_a_unit_is_refused(release, charges_nothing, protect_seeded) -> None:
    priv = _protect(_people(True), "pandas", 1, protect_seeded)
    with (
        charges_nothing(priv),
        pytest.raises(NotProtectedError, match="Release from the DataFrame"),
    ):
        release[0](priv)


@pytest.mark.parametrize("engine", ["dask"])
@pytest.mark.parametrize("release", SERIES_RELEASES.values(), ids=SERIES_RELEASES.keys())
def test_a_heavy_unit_moves_a_series_release_by_at_most_the_bound(
    engine, release, noise, protect_seeded
) -> None:
    run, bound = release
    results = []
    for heavy in (False, True):
        priv = _protect(_people(heavy), engine, 1, protect_seeded)
        with noise(priv) as calls:
            results.append(float(run(priv)))
        (call,) = calls  # one measurement, scaled to the unit's whole contribution
        (measured,) = priv.dp.session.releases[-1].measurements
        assert call.mechanism.scale == Fraction(measured.sensitivity) / Fraction(EPSILON)
        step = math.ldexp(1.0, measured.exponent)  # the lattice rounds a bound by < one step
        assert measured.sensitivity * step == pytest.approx(bound, abs=step)
    light, heavy = results
    assert abs(heavy - light) <= bound  # exact aggregates (zero noise): Δ is the cap's
    if engine == "dask" and bound == CAP:  # counts: the heavy unit adds exactly CAP rows
        assert heavy - light == CAP


def test_a_series_release_equals_its_frame_twin(noise, protect_seeded) -> None:
    """Same seed, same rows kept of the heavy unit: ``priv["x"].dp.sum`` is exactly
    ``priv.dp.sum("x")`` on Dask."""
    for engine in ("dask",):
        priv = _protect(_people(True), engine, 5, protect_seeded)
        with noise(priv):
            from_series = priv["x"].dp.sum(bounds=BOUNDS, epsilon=EPSILON)
        again = _protect(_people(True), engine, 5, protect_seeded)
        with noise(again):
            from_frame = again.dp.sum("x", bounds=BOUNDS, epsilon=EPSILON)
        assert from_series == from_frame


def test_dask_series_of_a_filtered_series_is_refused(charges_nothing, protect_seeded) -> None:
    priv = _protect(_people(False), "dask", 0, protect_seeded)
    x = priv["x"]
    with charges_nothing(priv), pytest.raises(NotProtectedError, match="Filter the frame first"):
        x[x > 1].dp.sum(bounds=BOUNDS, epsilon=EPSILON)
