"""``priv.dp.merge(public, on=...)``: joins with public lookup tables (issue 29, part).

The result equals ``df.merge(public, ...)`` (values, dtypes, columns, index, order) and
stays protected by the same session; the join is stable (each protected row at most one
row), so later releases keep their sensitivities; what would break that is refused before
anything is charged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

import pandas_dp
from pandas_dp.errors import DPKeyError, DPTypeError, DPValueError

REGIONS = pd.DataFrame({"code": [3, 1, 2, 5], "region": ["N", "S", "S", "E"], "pop": [1, 2, 3, 4]})


def survey(rows: int = 400) -> pd.DataFrame:
    gen = np.random.default_rng(8)  # test data only, never noise
    return pd.DataFrame(
        {
            "pid": np.arange(rows) // 2,
            "code": gen.choice([1, 2, 3, 4], rows),
            "hours": gen.uniform(0, 60, rows),
            "pop": gen.integers(0, 9, rows),  # overlaps a public column: suffixes
            "text": gen.choice(["a", "b"], rows),
        }
    )


def plain(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    out.attrs = {}
    return out


CASES = {
    "inner int": (REGIONS, "code", "inner"),
    "left int": (REGIONS, "code", "left"),
    "left text key": (pd.DataFrame({"text": ["b", "a"], "label": ["B", "A"]}), "text", "left"),
    "two keys": (
        pd.DataFrame({"code": [1, 2, 1], "text": ["a", "a", "b"], "w": [0.5, 1.5, 2.5]}),
        ["code", "text"],
        "inner",
    ),
    "float public keys": (REGIONS.assign(code=REGIONS["code"].astype(float)), "code", "left"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_result_is_pandas_merge_and_stays_protected(case: str) -> None:
    public, on, how = CASES[case]
    data = survey()
    priv = data.dp.protect(epsilon=1.0)
    joined = priv.dp.merge(public, on=on, how=how)
    expected = data.merge(public, on=on, how=how)
    kept = (
        data.index
        if how == "left"
        else data.index[data.set_index(on).index.isin(public.set_index(on).index)]
    )
    assert joined.index.equals(kept)  # each row keeps its label (pandas numbers afresh)
    pd.testing.assert_frame_equal(plain(joined).reset_index(drop=True), expected)
    assert joined.dp.session is priv.dp.session
    joined.dp.count(epsilon=0.1)
    assert priv.dp.session.spent.epsilon == pytest.approx(0.1)  # one budget for both


def test_one_one_point_zero_and_true_are_one_key_and_no_row_matches_twice() -> None:
    data = pd.DataFrame({"k": pd.array([1, 0, 1], dtype=object), "x": [1.0, 2.0, 3.0]})
    public = pd.DataFrame({"k": pd.array([1.0, -0.0], dtype=object), "v": ["one", "zero"]})
    joined = data.dp.protect(epsilon=1.0).dp.merge(public, on="k", how="left")
    assert joined["v"].tolist() == ["one", "zero", "one"]
    # 1 and True are one public key, twice: a one-to-many join, stability 2
    twice = data.dp.protect(epsilon=1.0).dp.merge(
        pd.DataFrame({"k": pd.array([1, True], dtype=object), "v": [1, 2]}), on="k"
    )
    assert twice.dp.session.stability == 2
    assert twice["v"].tolist() == [1, 2, 1, 2]


def test_releases_keep_their_sensitivity_and_cost(
    noise: Callable[..., Any], protect_seeded
) -> None:
    # Stable: the same release on the merged frame and on the frame the public columns
    # were assigned to by hand draws the same scale and is charged the same, under a unit.
    data = survey()
    by_hand = data.assign(
        region=data["code"].map(dict(zip(REGIONS.code, REGIONS.region, strict=True)))
    )
    scales, sums = [], []
    for frame, merged in ((data, True), (by_hand, False)):
        priv = protect_seeded(frame, epsilon=1.0, privacy_unit="pid", max_rows_per_unit=2)
        source = (
            priv.dp.merge(REGIONS[["code", "region"]], on="code", how="left") if merged else priv
        )
        with noise(priv) as calls:
            sums.append(
                source.dp.groupby("region", keys=["N", "S", "E"]).sum(
                    "hours", bounds=(0, 60), epsilon=0.5
                )
            )
        scales.append([call.mechanism.scale for call in calls])
        assert priv.dp.session.ledger["epsilon"].tolist() == [0.5]
    assert scales[0] == scales[1]
    pd.testing.assert_series_equal(sums[0], sums[1])


def test_a_neighbour_moves_every_merged_count_by_at_most_one(
    noise: Callable[..., Any], protect_seeded
) -> None:
    data = survey()
    counts = []
    for frame in (data, data.drop(index=17)):  # neighbours: one row less
        priv = protect_seeded(frame, epsilon=1.0)
        with noise(priv):
            counts.append(
                priv.dp.merge(REGIONS, on="code", how="left")
                .dp.groupby("region", keys=["N", "S", "E"])
                .count(epsilon=1.0)
            )
    assert (counts[0] - counts[1]).abs().sum() <= 1


REFUSALS = {
    "missing public key": (
        lambda p: p.dp.merge(REGIONS.assign(code=[1.0, None, 2.0, 3.0]), on="code"),
        DPValueError,
        "missing keys",
    ),
    "right": (lambda p: p.dp.merge(REGIONS, on="code", how="right"), DPValueError, "refused"),
    "outer": (lambda p: p.dp.merge(REGIONS, on="code", how="outer"), DPValueError, "refused"),
    "one_to_one": (
        lambda p: p.dp.merge(REGIONS, on="code", validate="one_to_one"),
        DPValueError,
        "would read the data",
    ),
    "protected right": (
        lambda p: p.dp.merge(REGIONS.dp.protect(epsilon=1.0), on="code"),
        DPValueError,
        "protected",
    ),
    "no such key": (lambda p: p.dp.merge(REGIONS, on="zip"), DPKeyError, "'zip'"),
    "not a frame": (lambda p: p.dp.merge(REGIONS["code"], on="code"), DPTypeError, "DataFrame"),
    "suffixes that collide": (  # pandas refuses them too (its result would repeat a name)
        lambda p: p.dp.merge(REGIONS, on="code", suffixes=("", "")),
        DPValueError,
        "suffixes",
    ),
    "a suffix that names an existing column": (
        lambda p: p.dp.merge(REGIONS.assign(pop_y=1), on="code"),
        DPValueError,
        "suffixes",
    ),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_refusals_say_why_and_charge_nothing(case: str, charges_nothing) -> None:
    call, error, text = REFUSALS[case]
    priv = survey().dp.protect(epsilon=1.0)
    with charges_nothing(priv), pytest.raises(error, match=text):
        call(priv)


def test_an_unprotected_frame_is_refused() -> None:
    with pytest.raises(pandas_dp.NotProtectedError):
        survey().dp.merge(REGIONS, on="code")


DAYS = pd.DataFrame({"code": [1, 1, 2, 2, 2, 3], "day": ["Mo", "Tu", "Mo", "We", "Fr", "Mo"]})


@pytest.mark.parametrize("how", ["inner", "left"])
def test_one_to_many_under_a_unit_is_pandas_merge(how: str) -> None:
    data = survey()
    priv = data.dp.protect(epsilon=1.0, privacy_unit="pid", max_rows_per_unit=6)
    joined = priv.dp.merge(DAYS, on="code", how=how)
    expected = data.merge(DAYS, on="code", how=how)
    pd.testing.assert_frame_equal(plain(joined).reset_index(drop=True), expected)
    assert joined.dp.session is priv.dp.session


def test_validate_many_to_one_checks_the_public_side_under_a_unit(charges_nothing) -> None:
    priv = survey().dp.protect(epsilon=1.0, privacy_unit="pid", max_rows_per_unit=6)
    with charges_nothing(priv), pytest.raises(DPValueError, match="keys \\['code'\\] repeat"):
        priv.dp.merge(DAYS, on="code", validate="many_to_one")


def test_one_to_many_keeps_each_units_influence_within_its_caps(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    # Neighbours differ by one whole unit (pid 7: two rows, each matching up to 3 public
    # rows, so up to 6 joined rows). The release is calibrated for the caps
    # (max_rows_per_unit = 6 rows in at most 6 groups: L1 sensitivity 6); here no unit
    # exceeds them, so no row is dropped at random and the exact counts of the neighbours
    # differ by what pid 7's joined rows add: within the sensitivity charged for.
    data = survey()
    totals, scales = [], []
    for frame in (data, data[data["pid"] != 7]):
        priv = protect_seeded(frame, epsilon=1.0, privacy_unit="pid", max_rows_per_unit=6)
        with noise(priv) as calls:
            counts = (
                priv.dp.merge(DAYS, on="code")
                .dp.groupby("day", keys=["Mo", "Tu", "We", "Fr"])
                .count(epsilon=1.0)
            )
        totals.append(counts)
        scales.append([call.mechanism.scale for call in calls])
    moved = int((totals[0] - totals[1]).abs().sum())
    joined_rows = int(
        data[data["pid"] == 7]["code"].map(DAYS["code"].value_counts()).fillna(0).sum()
    )
    assert 0 < moved == joined_rows <= 6
    assert scales[0] == scales[1] == [6]  # sensitivity 6 (the caps) at ε = 1
