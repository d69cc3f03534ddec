"""``max_rows_per_unit="auto"``: the cap released at ``protect`` (issue 41).

The cap is the scan of ``priv.dp.bounds`` over the rows per unit (one row per unit, so one
unit moves one row): at huge ε (the scan's margin vanishes) it is the lattice point at or
above the 0.999 quantile of the rows per unit, rounded up. It is the session's first
release: charged a tenth of the budget, tagged, and named in every later release's note;
refused before anything is charged where it cannot be released.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from pandas_dp.api.queries import unit_caps
from pandas_dp.errors import DPValueError

#: The documented lattice's non-negative points (0, then m·2**e).
POINTS = sorted([0.0] + [m * 2.0**e for e in range(-32, 64) for m in (1.0, 1.25, 1.5, 1.75)])


def people(n: int = 3000, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    gen = np.random.default_rng(seed)  # test data only, never noise
    rows = np.ceil(gen.lognormal(np.log(3), 1, n)).astype(np.int64)
    frame = pd.DataFrame({"pid": np.repeat(np.arange(n), rows)})
    frame["x"] = gen.uniform(0, 10, len(frame))
    return frame.sample(frac=1.0, random_state=1), rows  # ids spread over the rows


def test_at_huge_epsilon_the_cap_is_the_lattice_point_at_the_quantile(protect_seeded) -> None:
    frame, rows = people()
    priv = protect_seeded(frame, epsilon=1e6, privacy_unit="pid", max_rows_per_unit="auto")
    needed = unit_caps.CAP_QUANTILE * len(rows)  # the scan's rank condition, no margin left
    point = next(c for c in POINTS if np.sum(rows <= c) >= needed)
    assert priv.dp.session.unit.max_rows == max(1, math.ceil(point))


def test_the_cap_is_the_sessions_first_release(protect_seeded) -> None:
    frame, _ = people()
    priv = protect_seeded(frame, epsilon=2.0, privacy_unit="pid", max_rows_per_unit="auto")
    (release,) = priv.dp.session.releases
    assert release.query == "bounds"
    assert release.columns == ("rows per unit",)
    assert release.cost.epsilon == pytest.approx(2.0 * float(unit_caps.CAP_SHARE))
    assert release.tag == "max_rows_per_unit='auto'"
    cap = priv.dp.session.unit.max_rows
    assert 1 <= cap <= unit_caps.MAX_CAP
    priv.dp.count(epsilon=0.5)
    assert f"privacy unit pid: ≤ {cap} rows" in priv.dp.session.ledger["note"].iloc[-1]


def test_a_unit_more_moves_the_scan_by_one_row(protect_seeded, noise) -> None:
    # The counts frame has one row per unit: the scan's sensitivity is a row-level bounds
    # release's, whatever the unit's own number of rows (here 500).
    frame, _ = people(400)
    extra = pd.concat([frame, pd.DataFrame({"pid": [10**6] * 500, "x": 1.0})])
    scales = []
    for data in (frame, extra):
        priv = protect_seeded(data, epsilon=1.0, privacy_unit="pid", max_rows_per_unit="auto")
        (release,) = priv.dp.session.releases
        scales.append([(m.sensitivity, m.scale, m.exponent) for m in release.measurements])
    assert scales[0] == scales[1]


REFUSALS = {
    "no unit": ({"max_rows_per_unit": "auto"}, "privacy_unit"),
    "another word": ({"privacy_unit": "pid", "max_rows_per_unit": "max"}, "max_rows_per_unit"),
}


@pytest.mark.parametrize("name", list(REFUSALS))
def test_refusals(name: str) -> None:
    kwargs, match = REFUSALS[name]
    frame, _ = people(50)
    with pytest.raises((DPValueError, TypeError), match=match):
        frame.dp.protect(epsilon=1.0, **kwargs)


def test_refused_for_a_table_added_to_a_session_and_on_dask(charges_nothing) -> None:
    frame, _ = people(50)
    first = frame.dp.protect(epsilon=1.0, privacy_unit="pid", max_rows_per_unit=3)
    with charges_nothing(first), pytest.raises(DPValueError, match="an int"):
        frame.dp.protect(session=first.dp.session, privacy_unit="pid", max_rows_per_unit="auto")
    dd = pytest.importorskip("dask.dataframe")
    with pytest.raises(DPValueError, match="pandas DataFrame"):
        dd.from_pandas(frame, npartitions=2).dp.protect(
            epsilon=1.0, privacy_unit="pid", max_rows_per_unit="auto"
        )
