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


# --- max_groups_per_unit="auto": the cap on groups per unit, released in each release ------

KEYS = list("abcdefgh")


def visits(n: int = 3000, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    """People with 1 to 30 rows over 8 public keys; returns the frame and groups per person."""
    gen = np.random.default_rng(seed)  # test data only, never noise
    rows = gen.integers(1, 31, n)
    pid = np.repeat(np.arange(n), rows)
    spread = np.repeat(gen.integers(1, 9, n), rows)  # a person visits up to this many keys
    frame = pd.DataFrame(
        {"pid": pid, "g": [KEYS[j] for j in gen.integers(0, 8, len(pid)) % spread]}
    )
    frame["x"] = gen.uniform(0, 10, len(frame))
    groups = frame.groupby("pid")["g"].nunique().to_numpy()
    return frame, groups


def test_groups_cap_at_huge_epsilon_is_the_lattice_point_at_the_quantile(
    protect_seeded, noise
) -> None:
    frame, groups = visits()
    auto = protect_seeded(frame, epsilon=1e6, privacy_unit="pid", max_rows_per_unit=30)
    with noise(auto) as calls:
        ours = auto.dp.groupby("g", keys=KEYS, max_groups_per_unit="auto").count(epsilon=5e5)
    needed = unit_caps.CAP_QUANTILE * len(groups)
    point = next(c for c in POINTS if np.sum(groups <= c) >= needed)
    cap = max(1, min(30, len(KEYS), math.ceil(point)))
    manual = protect_seeded(frame, epsilon=1e6, privacy_unit="pid", max_rows_per_unit=30)
    with noise(manual):
        theirs = manual.dp.groupby("g", keys=KEYS, max_groups_per_unit=cap).count(
            epsilon=5e5 * (1 - float(unit_caps.GROUPS_SHARE))
        )
    pd.testing.assert_series_equal(ours, theirs)
    (row,) = auto.dp.session.releases
    assert row.asked == "epsilon=500000, max_groups_per_unit='auto'"
    assert row.note.startswith("max_groups_per_unit='auto': 0.1 of ε on bounds")
    assert f"≤ {cap} groups" in row.note
    # the count's noise: l1 = min(k, g·r) = min(30, cap·30) rows per unit at 0.9 ε
    count_scale = calls[-1].mechanism.scale
    assert float(count_scale) == pytest.approx(30 / (5e5 * 0.9))


def test_groups_cap_with_auto_bounds_is_one_charge(protect_seeded) -> None:
    frame, _ = visits(800)
    priv = protect_seeded(frame, epsilon=5.0, privacy_unit="pid", max_rows_per_unit=30)
    g = priv.dp.groupby("g", keys=KEYS, max_groups_per_unit="auto")
    shown = priv.dp.preview.groupby("g", keys=KEYS, max_groups_per_unit="auto").mean(
        "x", bounds="auto", epsilon=1.0
    )
    assert shown.epsilon == pytest.approx(1.0)
    assert set(shown.table["how"]) == {"bounds", "mean"}
    result = g.agg(n="count", m=("x", "mean"), bounds="auto", epsilon=1.0)
    assert list(result.columns) == ["n", "m"]
    assert list(result.index) == KEYS
    (row,) = priv.dp.session.releases
    assert row.cost.epsilon == 1
    assert row.asked == "epsilon=1, bounds='auto', max_groups_per_unit='auto'"
    scans = [m for m in row.measurements if m.mechanism == "sparse_vector"]
    assert len(scans) == 3  # groups per unit (upper only), x's two ends


GROUPS_REFUSALS = {
    "row level": (lambda f: f.dp.protect(epsilon=1.0), "privacy unit"),
    "no keys": (
        lambda f: f.dp.protect(epsilon=1.0, privacy_unit="pid", max_rows_per_unit=30),
        "public keys",
    ),
    "rho": (
        lambda f: f.dp.protect(rho=1.0, privacy_unit="pid", max_rows_per_unit=30),
        "epsilon=",
    ),
    "cov": (
        lambda f: f.dp.protect(epsilon=1.0, privacy_unit="pid", max_rows_per_unit=30),
        "fixed max_groups_per_unit",
    ),
    "a word": (
        lambda f: f.dp.protect(epsilon=1.0, privacy_unit="pid", max_rows_per_unit=30),
        "whole number or 'auto'",
    ),
}


@pytest.mark.parametrize("name", list(GROUPS_REFUSALS))
def test_groups_cap_refusals_charge_nothing(name: str, charges_nothing) -> None:
    frame, _ = visits(200)
    protect, match = GROUPS_REFUSALS[name]
    priv = protect(frame)
    calls = {
        "no keys": lambda: priv.dp.groupby(
            "g", max_groups_per_unit="auto", selection="threshold"
        ).count(epsilon=1.0),
        "rho": lambda: priv.dp.groupby("g", keys=KEYS, max_groups_per_unit="auto").count(rho=0.1),
        "cov": lambda: priv.dp.groupby("g", keys=KEYS, max_groups_per_unit="auto")[["x"]].cov(
            bounds={"x": (0, 10)}, epsilon=1.0
        ),
        "a word": lambda: priv.dp.groupby("g", keys=KEYS, max_groups_per_unit="some").count(
            epsilon=1.0
        ),
    }
    call = calls.get(
        name,
        lambda: priv.dp.groupby("g", keys=KEYS, max_groups_per_unit="auto").count(epsilon=1.0),
    )
    with charges_nothing(priv), pytest.raises(DPValueError, match=match):
        call()


def test_groups_cap_neighbours_agree_in_shape() -> None:
    frame, _ = visits(300)
    extra = pd.concat([frame, pd.DataFrame({"pid": [10**6] * 40, "g": KEYS * 5, "x": 1e9})])
    shapes = []
    for data in (frame, extra):
        priv = data.dp.protect(epsilon=10.0, privacy_unit="pid", max_rows_per_unit=30)
        out = priv.dp.groupby("g", keys=KEYS, max_groups_per_unit="auto").agg(
            n="count", m=("x", "mean"), bounds={"x": (0, 10)}, epsilon=1.0
        )
        shapes.append((list(out.index), list(out.columns), [str(t) for t in out.dtypes]))
    assert shapes[0] == shapes[1]
