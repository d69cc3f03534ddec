"""User-level privacy in grouped releases: the library enforces the contribution bounds.

Under ``privacy_unit="pid", max_rows_per_unit=k`` a grouped release keeps, for each person,
at most ``g = max_groups_per_unit`` groups (default k), at most ``r = max_rows_per_group``
rows per group (default k) and at most ``k`` rows in all, chosen at random; sensitivities
are multiplied by ``L1 = min(k, g·r)``.

The neighbouring datasets are D (200 people, one row each) and D' = D plus one heavy person
with 1,000 rows. With the ``noise`` fixture the releases are exact, so the difference
between D' and D is exactly what the heavy person got through the caps.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from pandas_dp.errors import DPError, DPValueError, NotProtectedError

from ..oracles import split

REGIONS = ["north", "south", "east", "west"]
K = 10
U = 2e5


def base_frame() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    return pd.DataFrame(
        {
            "pid": np.arange(200),
            "region": rng.choice(REGIONS, 200),
            "income": rng.uniform(0, 1e5, 200),
        }
    )


def heavy_person(rows_per_region: int = 250, income: float = 1e9) -> pd.DataFrame:
    """One person with rows in every region, income far above the upper bound."""
    n = rows_per_region * len(REGIONS)
    return pd.DataFrame(
        {"pid": 10_000, "region": np.repeat(REGIONS, rows_per_region), "income": income},
        index=pd.RangeIndex(1000, 1000 + n),
    )


def neighbours() -> tuple[pd.DataFrame, pd.DataFrame]:
    d = base_frame()
    return d, pd.concat([d, heavy_person()])


def protect_unit(protect_seeded, data: pd.DataFrame, seed: int = 0, k: int = K) -> pd.DataFrame:
    return protect_seeded(data, seed=seed, epsilon=100.0, privacy_unit="pid", max_rows_per_unit=k)


CAPS = [(None, None), (2, None), (None, 3), (2, 3), (1, 1), (50, 50)]


def l1_of(g: int | None, r: int | None) -> int:
    g = K if g is None else min(g, K)
    r = K if r is None else min(r, K)
    return min(K, g * r)


@pytest.mark.parametrize(("g", "r"), CAPS)
def test_one_person_moves_grouped_counts_by_at_most_l1(protect_seeded, noise, g, r):
    caps = {"max_groups_per_unit": g, "max_rows_per_group": r}
    results, scales = [], []
    for data in neighbours():
        priv = protect_unit(protect_seeded, data)
        with noise(priv) as calls:
            results.append(priv.dp.groupby("region", keys=REGIONS, **caps).count(epsilon=0.5))
        scales.append(calls[0].mechanism.scale)
    diff = (results[1] - results[0]).to_numpy()
    l1 = l1_of(g, r)
    assert scales == [Fraction(l1) / Fraction(1, 2)] * 2
    assert (diff >= 0).all()
    assert diff.sum() <= l1
    assert np.count_nonzero(diff) <= (K if g is None else g)
    assert diff.max() <= (K if r is None else r)
    # The person has rows to spare everywhere, so the caps are met exactly: L1 is tight.
    assert diff.sum() == l1


def test_one_person_moves_the_ungrouped_count_by_at_most_k(protect_seeded, noise):
    counts, calls_seen = [], []
    for data in neighbours():
        priv = protect_unit(protect_seeded, data)
        with noise(priv) as calls:
            counts.append(priv.dp.count(epsilon=0.5))
        calls_seen.append(calls[0].mechanism.scale)
    assert counts[1] - counts[0] == K
    assert calls_seen == [Fraction(2 * K)] * 2


@pytest.mark.parametrize(("g", "r"), CAPS)
def test_one_person_moves_grouped_sums_by_at_most_l1_times_the_bound(
    protect_seeded, noise, lattices, g, r
):
    caps = {"max_groups_per_unit": g, "max_rows_per_group": r}
    sums, scales = [], []
    for data in neighbours():
        priv = protect_unit(protect_seeded, data)
        with noise(priv) as calls:
            sums.append(
                priv.dp.groupby("region", keys=REGIONS, **caps).sum(
                    "income", bounds=(0, U), epsilon=0.5
                )
            )
        scales.append(calls[0].mechanism.scale)
    l1 = l1_of(g, r)
    lat = lattices(0, U, Fraction(1, 2) / l1, plain=True, centred=False)["sum"]
    # Scale in lattice units: L1 · (the lattice's per-row sensitivity) / ε.
    assert scales == [Fraction(l1 * lat.sensitivity) / Fraction(1, 2)] * 2
    diff = (sums[1] - sums[0]).to_numpy()
    # U is on the lattice, so each kept row of the heavy person adds exactly U.
    assert np.abs(diff).sum() <= l1 * U
    assert diff.sum() == l1 * U
    assert set(np.unique(diff / U)) <= set(range(l1 + 1))


@pytest.mark.parametrize(("g", "r"), [(None, None), (2, 3)])
def test_one_person_moves_the_inputs_of_a_mean_by_at_most_l1(protect_seeded, noise, lattices, g, r):
    """The mean is computed from a count of non-missing values and a centred sum; the
    agg below releases the count it shares with the mean, so both inputs can be read."""
    caps = {"max_groups_per_unit": g, "max_rows_per_group": r}
    l1 = l1_of(g, r)
    # ε 0.5 split between the count (which `n` and the mean share) and the centred sum, by
    # the documented rule; the split does not depend on the caps.
    shares = split.shares(
        ["n", "c"], [(1.0, {"n": 1.0}), (1.0, split.mean_model((0, U), "c", "n"))]
    )
    inputs, scales = [], []
    for data in neighbours():
        priv = protect_unit(protect_seeded, data)
        with noise(priv) as calls:
            table = priv.dp.groupby("region", keys=REGIONS, **caps).agg(
                n=("income", "count"), m=("income", "mean"), bounds={"income": (0, U)}, epsilon=0.5
            )
        measurements = priv.dp.session.releases[-1].measurements
        assert [m.label for m in measurements] == ["count(income)", "centred_sum(income)"]
        eps = [m.epsilon for m in measurements]
        assert split.close([e * 2 for e in eps], shares)
        lat = lattices(0, U, eps[1] / l1, plain=False, centred=True)["centred_sum"]
        scales.append([c.mechanism.scale for c in calls])
        n = table["n"].to_numpy()
        # m = centre + C·g / max(n, 1) (not clipped here: every mean is inside the bounds),
        # so the centred sum C in lattice units is recovered exactly by rounding.
        assert ((table["m"] > 0) & (table["m"] < U)).all()
        centred = np.rint(
            (table["m"].to_numpy() - lat.centre_real) * np.maximum(n, 1) / lat.granularity
        )
        inputs.append((n, centred))
    assert scales == [[l1 / eps[0], l1 * lat.sensitivity / eps[1]]] * 2
    count_diff = inputs[1][0] - inputs[0][0]
    centred_diff = inputs[1][1] - inputs[0][1]
    assert np.abs(count_diff).sum() == l1
    # Each kept row of the heavy person sits at U: it moves the centred sum by U - centre.
    assert np.abs(centred_diff).sum() == l1 * lat.sensitivity
    assert lat.sensitivity * lat.granularity == U / 2


def test_rows_outside_the_keys_do_not_use_up_the_allowance(protect_seeded, noise):
    # The heavy person has 1,000 rows in a region no key names and 5 in "north": the keys
    # filter comes before the caps, so all 5 of the latter count (k = 10).
    d = base_frame()
    heavy = pd.DataFrame(
        {"pid": 10_000, "region": ["elsewhere"] * 1000 + ["north"] * 5, "income": 1.0},
        index=pd.RangeIndex(1000, 2005),
    )
    out = []
    for data in (d, pd.concat([d, heavy])):
        priv = protect_unit(protect_seeded, data)
        with noise(priv):
            out.append(priv.dp.groupby("region", keys=REGIONS).count(epsilon=1))
    assert (out[1] - out[0]).tolist() == [5, 0, 0, 0]


# --- which rows are kept -------------------------------------------------------------------


def ordered_person() -> pd.DataFrame:
    """One person with 1,000 rows whose incomes 0, 1, ..., 999 identify each row."""
    person = pd.DataFrame({"pid": 1, "region": "north", "income": np.arange(1000.0)})
    others = pd.DataFrame(
        {"pid": np.arange(2, 52), "region": "north", "income": 0.0}, index=range(1000, 1050)
    )
    return pd.concat([person, others])


def kept_sum(protect_seeded, noise, seed: int) -> float:
    priv = protect_unit(protect_seeded, ordered_person(), seed=seed)
    with noise(priv):
        sums = priv.dp.groupby("region", keys=["north"]).sum("income", bounds=(0, 1000), epsilon=1)
    return float(sums["north"])


def test_rows_kept_are_chosen_at_random(protect_seeded, noise):
    sums = [kept_sum(protect_seeded, noise, seed) for seed in range(20)]
    # Same seed, same rows.
    assert kept_sum(protect_seeded, noise, 3) == sums[3]
    # Different seeds, different rows: a sum of 10 of the values 0..999 pins the subset
    # down almost surely (a collision of two seeds has probability about 1/2,300).
    assert len(set(sums)) >= 18
    # Random, not the first or last k rows: the mean kept value over 200 kept rows is
    # 499.5 with a standard deviation of 288.7/√200 ≈ 20.4; first-k gives 4.5, last-k 994.5.
    assert abs(sum(sums) / (20 * K) - 499.5) < 5 * 20.4
    for total in sums:
        assert sum(range(K)) <= total <= sum(range(1000 - K, 1000))


def test_groups_kept_are_chosen_at_random(protect_seeded, noise):
    heavy = heavy_person(rows_per_region=5, income=1.0)
    chosen = []
    for seed in range(40):
        priv = protect_unit(protect_seeded, heavy, seed=seed)
        with noise(priv):
            counts = priv.dp.groupby("region", keys=REGIONS, max_groups_per_unit=1).count(epsilon=1)
        assert sorted(counts.tolist()) == [0, 0, 0, 5]
        chosen.append(counts.idxmax())
    # Each region is the kept one with probability 1/4; P(one never chosen in 40) < 4·0.75^40.
    assert set(chosen) == set(REGIONS)


def test_rows_with_a_missing_unit_id_are_dropped(protect_seeded, noise):
    data = base_frame()
    data["pid"] = data["pid"].astype("float64")
    data.loc[::4, "pid"] = np.nan
    priv = protect_unit(protect_seeded, data)
    with noise(priv):
        counts = priv.dp.groupby("region", keys=REGIONS).count(epsilon=1)
        total = priv.dp.count(epsilon=1)
    kept = data[data["pid"].notna()]
    assert counts.tolist() == kept.groupby("region").size().reindex(REGIONS, fill_value=0).tolist()
    assert total == len(kept) == 150
    # Object ids with None behave the same.
    objects = base_frame().astype({"pid": object})
    objects.loc[::5, "pid"] = None
    priv = protect_unit(protect_seeded, objects)
    with noise(priv):
        assert priv.dp.groupby("region", keys=REGIONS).count(epsilon=1).sum() == 160


def test_duplicated_frames_are_accepted_and_still_bounded(protect_seeded, noise):
    data = base_frame()
    priv = protect_unit(protect_seeded, data, k=1)
    for copies in (2, 5):
        doubled = pd.concat([priv] * copies)
        with noise(priv) as calls:
            counts = doubled.dp.groupby("region", keys=REGIONS).count(epsilon=1)
        # Each person now has `copies` identical rows; k = 1 keeps one: the original counts.
        expected = data.groupby("region").size().reindex(REGIONS, fill_value=0)
        assert counts.tolist() == expected.tolist()
        assert calls[0].mechanism.scale == 1
    # Row-level privacy, by contrast, refuses the duplicated frame.
    rows = protect_seeded(data, epsilon=1.0)
    with pytest.raises(NotProtectedError):
        pd.concat([rows, rows]).dp.groupby("region", keys=REGIONS).count(epsilon=1)


# --- refusals and the ledger -------------------------------------------------------------


def test_frame_without_the_unit_column_is_refused(protect_seeded, charges_nothing):
    """Which unit a row belongs to is read from the unit column, never from index labels
    (reset_index renumbers them): a selection without the column is refused, uncharged."""
    data = pd.concat([base_frame(), heavy_person()], ignore_index=True)
    priv = protect_unit(protect_seeded, data, k=1)
    with charges_nothing(priv), pytest.raises(NotProtectedError, match="lacks the privacy-unit"):
        priv[["region", "income"]].dp.groupby("region", keys=REGIONS).count(epsilon=1)


@pytest.mark.parametrize(
    "derive",
    [
        lambda p: p.sort_values("income").reset_index(drop=True),
        lambda p: p.sample(frac=1.0, random_state=0).reset_index(drop=True),
        lambda p: p.set_axis(range(len(p))[::-1]),
        lambda p: p[p["income"] > 0].reset_index(drop=True),
    ],
    ids=["sort then reset", "shuffle then reset", "set_axis", "filter then reset"],
)
def test_relabelled_frames_keep_their_units(protect_seeded, noise, derive):
    """A heavy person stays one person however the rows are renumbered."""
    data = pd.concat([base_frame(), heavy_person()], ignore_index=True)
    priv = protect_unit(protect_seeded, data, k=1)
    with noise(priv) as calls:
        counts = derive(priv).dp.groupby("region", keys=REGIONS).count(epsilon=1)
    assert counts.sum() == 201  # 200 people and the heavy one, one row each
    assert calls[0].mechanism.scale == 1


@pytest.mark.parametrize(
    ("column", "release"),
    [
        ("region", lambda s: s.dp.value_counts(keys=REGIONS, epsilon=1, sort=False).sum()),
        ("income", lambda s: s.dp.histogram([0, 1e5, 2e9], epsilon=1).sum()),
        ("income", lambda s: s.dp.count(epsilon=1)),
    ],
    ids=["value_counts", "histogram", "count"],
)
def test_series_releases_are_refused_but_the_unit_column_itself(
    protect_seeded, noise, charges_nothing, column, release
):
    """A Series' labels cannot say whose rows it holds: refused before any charge. The
    Series of the unit column carries the ids themselves and releases (one row per unit)."""
    data = pd.concat([base_frame(), heavy_person()], ignore_index=True)
    priv = protect_unit(protect_seeded, data, k=2)
    with (
        charges_nothing(priv),
        pytest.raises(NotProtectedError, match="Release from the DataFrame"),
    ):
        release(priv[column])
    with noise(priv) as calls:
        people = priv["pid"].dp.count(epsilon=1)
    assert 200 <= people <= 202  # 200 one-row people, and at most 2 rows of the heavy one
    assert calls[0].mechanism.scale == 2  # sensitivity: the unit's 2 rows


@pytest.mark.parametrize("option", ["max_groups_per_unit", "max_rows_per_group"])
def test_caps_need_a_privacy_unit(protect_seeded, charges_nothing, option):
    priv = protect_seeded(base_frame(), epsilon=1.0)
    with charges_nothing(priv), pytest.raises(DPValueError, match="privacy unit"):
        priv.dp.groupby("region", keys=REGIONS, **{option: 2}).count(epsilon=1)


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "2", np.nan])
@pytest.mark.parametrize("option", ["max_groups_per_unit", "max_rows_per_group"])
def test_bad_caps_are_refused(protect_seeded, charges_nothing, option, value):
    priv = protect_unit(protect_seeded, base_frame())
    with charges_nothing(priv), pytest.raises(DPError):
        priv.dp.groupby("region", keys=REGIONS, **{option: value}).count(epsilon=1)


def test_the_ledger_describes_the_caps(protect_seeded):
    priv = protect_unit(protect_seeded, base_frame())
    priv.dp.groupby("region", keys=REGIONS, max_groups_per_unit=2, max_rows_per_group=3).count(
        epsilon=1
    )
    note = priv.dp.session.ledger["note"].iloc[-1]
    assert "privacy unit pid: ≤ 2 groups, ≤ 3 rows per group, ≤ 6 rows in all" in note
    (measurement,) = priv.dp.session.releases[-1].measurements
    assert (measurement.sensitivity, measurement.scale) == (6, 6)


@pytest.mark.parametrize("option", ["max_groups_per_unit", "max_rows_per_group"])
def test_an_empty_frame_and_its_one_row_neighbour_release_alike(protect_seeded, noise, option):
    # The caps once read the largest group code of the rows, which an empty frame (or an
    # empty Dask partition after a shuffle) does not have: the release failed, and was
    # charged, exactly when the frame had no rows.
    for rows in (0, 1):
        priv = protect_unit(protect_seeded, base_frame().iloc[:rows])
        with noise(priv):
            counts = priv.dp.groupby("region", keys=REGIONS, **{option: 1}).count(epsilon=1)
        assert counts.sum() == rows
