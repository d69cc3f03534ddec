"""``pd.Grouper(key="t", freq=...)`` as a group key of ``priv.dp.groupby`` (issue 29).

The bins are those of ``freq`` over the public ``range=(start, end)``, never from the data.
Under zero noise every release equals pandas' ``df.groupby(pd.Grouper(...))`` on the rows
inside the range, with pandas' index: the bins' labels named after the key column, and a
MultiIndex (levels in ``by``'s order) beside ordinary columns, where every bin is crossed
with every public key (pandas lists the observed pairs only: the rest are zeros here).
Refusals name the fix and charge nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

import pandas_dp  # noqa: F401  (registers the accessors)
from pandas_dp.errors import DPKeyError, DPTypeError, DPValueError

START, END = pd.Timestamp("2024-01-01"), pd.Timestamp("2025-01-01")
FREQS = ["D", "W", "MS", "QS"]
ZONES = [None, "Europe/Paris"]
REGIONS = ["north", "south", "east"]  # "east" never occurs: a public key without rows


def events(tz: str | None = None, rows: int = 6000) -> pd.DataFrame:
    """Instants over 2024 and a little beyond both ends, a region and a value in [0, 100]."""
    gen = np.random.default_rng(29)  # test data only, never noise
    seconds = gen.integers(-10 * 86_400, int((END - START).total_seconds()) + 10 * 86_400, rows)
    t = START + pd.to_timedelta(np.sort(seconds), unit="s")
    t = t.tz_localize("UTC").tz_convert(tz) if tz else t
    region = np.array(["north", "south"])[gen.integers(0, 2, rows)]
    return pd.DataFrame({"t": t, "region": region, "x": gen.uniform(0, 100, rows)})


def span(tz: str | None) -> tuple[pd.Timestamp, pd.Timestamp]:
    return (START, END) if tz is None else (START.tz_localize(tz), END.tz_localize(tz))


def inside(data: pd.DataFrame, tz: str | None) -> pd.DataFrame:
    start, end = span(tz)
    return data[(data["t"] >= start) & (data["t"] < end)]


@pytest.mark.parametrize("tz", ZONES)
@pytest.mark.parametrize("freq", FREQS)
def test_a_grouper_alone_is_pandas_under_zero_noise(
    freq: str, tz: str | None, noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    data = events(tz)
    priv = protect_seeded(data, epsilon=3.0)
    grouped = priv.dp.groupby(pd.Grouper(key="t", freq=freq), range=span(tz))
    with noise(priv):
        sizes = grouped.size(epsilon=1.0)
        sums = grouped["x"].sum(bounds=(0, 100), epsilon=1.0)
        means = grouped["x"].mean(bounds=(0, 100), epsilon=1.0)
    expected = inside(data, tz).groupby(pd.Grouper(key="t", freq=freq))
    pd.testing.assert_series_equal(sizes, expected.size(), check_names=False)
    pd.testing.assert_series_equal(sums, expected["x"].sum(), rtol=1e-6)
    pd.testing.assert_series_equal(means, expected["x"].mean(), rtol=1e-6)
    assert sizes.index.name == "t"
    assert sizes.index.freq == expected.size().index.freq
    assert priv.dp.session.ledger["epsilon"].tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("tz", ZONES)
@pytest.mark.parametrize("freq", FREQS)
def test_a_grouper_beside_a_column_is_pandas_under_zero_noise(
    freq: str, tz: str | None, noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    data = events(tz)
    priv = protect_seeded(data, epsilon=2.0)
    by = [pd.Grouper(key="t", freq=freq), "region"]
    grouped = priv.dp.groupby(by, keys=REGIONS, range=span(tz))
    with noise(priv):
        sizes = grouped.size(epsilon=1.0)
        sums = grouped["x"].sum(bounds=(0, 100), epsilon=1.0)
    expected = inside(data, tz).groupby(by)
    bins = inside(data, tz).groupby(pd.Grouper(key="t", freq=freq)).size().index
    assert list(sizes.index.names) == ["t", "region"]
    assert sizes.index.equals(pd.MultiIndex.from_product([bins, REGIONS], names=["t", "region"]))
    assert sizes.index.levels[0].dtype == data["t"].dtype
    # pandas lists the observed pairs; every other public pair is a (noisy) zero here
    pd.testing.assert_series_equal(
        sizes, expected.size().reindex(sizes.index, fill_value=0), check_names=False
    )
    pd.testing.assert_series_equal(
        sums, expected["x"].sum().reindex(sums.index, fill_value=0.0), rtol=1e-6
    )
    assert (sizes.xs("east", level="region") == 0).all()
    assert priv.dp.session.ledger["groups"].tolist() == [3 * len(bins)] * 2


@pytest.mark.parametrize("tz", ZONES)
def test_the_grouper_keeps_its_place_in_by(
    tz: str | None, noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    data = events(tz)
    priv = protect_seeded(data, epsilon=2.0)
    by = ["region", pd.Grouper(key="t", freq="MS")]
    grouped = priv.dp.groupby(by, keys=["south", "north"], range=span(tz))
    with noise(priv):
        table = grouped.agg(n="count", m=("x", "mean"), bounds={"x": (0, 100)}, epsilon=1.0, ci=0.9)
    expected = inside(data, tz).groupby(by)
    months = inside(data, tz).groupby(pd.Grouper(key="t", freq="MS")).size().index
    # the keys' order as given, each with every month
    assert table.index.equals(
        pd.MultiIndex.from_product([["south", "north"], months], names=["region", "t"])
    )
    assert list(table.columns) == ["n", "n_lower", "n_upper", "m", "m_lower", "m_upper"]
    np.testing.assert_array_equal(table["n"], expected.size().reindex(table.index))
    np.testing.assert_allclose(table["m"], expected["x"].mean().reindex(table.index), rtol=1e-6)
    assert (table["n_lower"] <= table["n"]).all()
    assert (table["n"] <= table["n_upper"]).all()


def test_a_grouper_between_columns_and_several_other_keys(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    data = events().assign(big=lambda d: d["x"] > 50)
    priv = protect_seeded(data, epsilon=1.0)
    by = ["region", pd.Grouper(key="t", freq="QS"), "big"]
    keys = [("north", True), ("south", False), ("north", False)]
    with noise(priv):
        sizes = priv.dp.groupby(by, keys=keys, range=(START, END)).size(epsilon=1.0)
    quarters = pd.date_range(START, periods=4, freq="QS")
    assert list(sizes.index.names) == ["region", "t", "big"]
    assert list(sizes.index) == [(r, q, b) for r, b in keys for q in quarters]
    expected = inside(data, None).groupby(by).size()
    pd.testing.assert_series_equal(sizes, expected.reindex(sizes.index), check_names=False)


def test_the_bins_come_from_the_range_never_from_the_data(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    data = events()
    march = data[data["t"].dt.month.eq(3) & data["t"].dt.year.eq(2024)]
    priv = protect_seeded(march, epsilon=1.0)
    with noise(priv):
        alone = priv.dp.groupby(pd.Grouper(key="t", freq="MS"), range=(START, END))
        sizes = alone.size(epsilon=0.5)
        mixed = priv.dp.groupby(
            [pd.Grouper(key="t", freq="MS"), "region"], keys=REGIONS, range=(START, END)
        ).size(epsilon=0.5)
    assert sizes.index.equals(pd.date_range(START, periods=12, freq="MS", name="t"))
    assert sizes.sum() == sizes["2024-03-01"] == len(march)
    assert len(mixed) == 12 * 3
    assert mixed.sum() == len(march)


def test_a_series_beside_the_grouper_and_value_counts_within(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    data = events()
    priv = protect_seeded(data, epsilon=1.0)
    big = priv["x"].gt(50).rename("big")
    quarter = pd.Grouper(key="t", freq="QS")
    with noise(priv):
        sizes = priv.dp.groupby([quarter, big], keys=[True, False], range=(START, END)).size(
            epsilon=0.5
        )
        pairs = priv.dp.groupby(["region", quarter], keys=REGIONS[:2], range=(START, END))[
            "region"
        ].value_counts(REGIONS[:2], sort=False, epsilon=0.5)
    rows = inside(data, None)
    expected = rows.groupby([quarter, rows["x"].gt(50).rename("big")]).size()
    pd.testing.assert_series_equal(sizes, expected.reindex(sizes.index), check_names=False)
    assert list(pairs.index.names) == ["region", "t", "region"]
    assert pairs.xs(("north", "south"), level=[0, 2]).eq(0).all()
    counted = rows.groupby(["region", quarter]).size()
    np.testing.assert_array_equal(pairs.xs("north", level=0).xs("north", level=1), counted["north"])


def test_timedeltas_bin_by_a_grouper_too(
    frame: Callable[..., pd.DataFrame],
    noise: Callable[..., Any],
    protect_seeded: Callable[..., Any],
) -> None:
    data = frame()
    day = (pd.Timedelta(0), pd.Timedelta(days=1))
    priv = protect_seeded(data, epsilon=1.0)
    with noise(priv):
        sizes = priv.dp.groupby(
            [pd.Grouper(key="d", freq="6h"), "g"], keys=["a", "b"], range=day
        ).size(epsilon=1.0)
    expected = data[data["d"] < day[1]].groupby([pd.Grouper(key="d", freq="6h"), "g"]).size()
    pd.testing.assert_series_equal(sizes, expected.reindex(sizes.index), check_names=False)


def test_a_preview_reads_nothing_and_charges_nothing() -> None:
    priv = events().dp.protect(epsilon=1.0)
    by = [pd.Grouper(key="t", freq="MS"), "region"]
    shown = priv.dp.preview.groupby(by, keys=REGIONS, range=(START, END)).size(epsilon=0.5)
    assert shown.query == "groupby.size"
    assert shown.epsilon == 0.5
    assert len(priv.dp.session.releases) == 0


REFUSALS: dict[str, tuple[Callable[[Any], Any], type, str]] = {
    "no range": (
        lambda p: p.dp.groupby(pd.Grouper(key="t", freq="MS")),
        DPValueError,
        r"needs range=\(start, end\)",
    ),
    "no range, mixed": (
        lambda p: p.dp.groupby([pd.Grouper(key="t", freq="MS"), "region"], keys=REGIONS),
        DPValueError,
        r"needs range=\(start, end\)",
    ),
    "no key": (
        lambda p: p.dp.groupby(pd.Grouper(freq="MS"), range=(START, END)),
        DPValueError,
        r"pd.Grouper needs key=<a datetime column>",
    ),
    "no freq": (
        lambda p: p.dp.groupby(pd.Grouper(key="t"), range=(START, END)),
        DPValueError,
        r"without freq= groups by the column's values: pass 't' itself",
    ),
    "level": (
        lambda p: p.dp.groupby(pd.Grouper(level=0, freq="MS"), range=(START, END)),
        DPValueError,
        r"reset_index\(\)",
    ),
    "numbers": (
        lambda p: p.dp.groupby(pd.Grouper(key="x", freq="MS"), range=(START, END)),
        DPTypeError,
        r"bins time: column 'x' holds numbers.*group by 'x' itself",
    ),
    "strings": (
        lambda p: p.dp.groupby(pd.Grouper(key="region", freq="MS"), range=(START, END)),
        DPTypeError,
        "column 'region' has dtype",
    ),
    "unknown column": (
        lambda p: p.dp.groupby(pd.Grouper(key="tt", freq="MS"), range=(START, END)),
        DPKeyError,
        "did you mean 't'",
    ),
    "closed": (
        lambda p: p.dp.groupby(pd.Grouper(key="t", freq="MS", closed="right"), range=(START, END)),
        DPValueError,
        r"pd.Grouper\(closed='right'\) is not supported.*remove closed=",
    ),
    "label": (
        lambda p: p.dp.groupby(pd.Grouper(key="t", freq="W", label="left"), range=(START, END)),
        DPValueError,
        r"pd.Grouper\(label='left'\) is not supported",
    ),
    "origin": (
        lambda p: p.dp.groupby(pd.Grouper(key="t", freq="D", origin="epoch"), range=(START, END)),
        DPValueError,
        r"pd.Grouper\(origin='epoch'\) is not supported",
    ),
    "two groupers": (
        lambda p: p.dp.groupby(
            [pd.Grouper(key="t", freq="MS"), pd.Grouper(key="t", freq="D")], range=(START, END)
        ),
        DPValueError,
        "one pd.Grouper",
    ),
    "range without a grouper": (
        lambda p: p.dp.groupby("region", keys=REGIONS, range=(START, END)),
        DPValueError,
        "without a pd.Grouper, leave it out",
    ),
    "keys for a grouper alone": (
        lambda p: p.dp.groupby(pd.Grouper(key="t", freq="MS"), keys=[START], range=(START, END)),
        DPValueError,
        "leave keys out",
    ),
    "keys naming the time column": (
        lambda p: p.dp.groupby(
            [pd.Grouper(key="t", freq="MS"), "region"],
            keys={"t": [START], "region": REGIONS},
            range=(START, END),
        ),
        DPValueError,
        "keys for the other group-by columns only",
    ),
    "no keys for the other column": (
        lambda p: p.dp.groupby([pd.Grouper(key="t", freq="MS"), "region"], range=(START, END)),
        DPValueError,
        r"needs public keys for 'region' \(keys=\[...\]",
    ),
    "selection": (
        lambda p: p.dp.groupby(
            [pd.Grouper(key="t", freq="MS"), "region"], range=(START, END), selection="threshold"
        ),
        DPValueError,
        "give the other columns' public keys as keys=",
    ),
    "dropna": (
        lambda p: p.dp.groupby(pd.Grouper(key="t", freq="MS"), range=(START, END), dropna=False),
        DPValueError,
        "dropna=False is not supported with a pd.Grouper",
    ),
    "the time column twice": (
        lambda p: p.dp.groupby(
            [pd.Grouper(key="t", freq="MS"), "t"], keys=[START], range=(START, END)
        ),
        DPValueError,
        "lists 't' twice",
    ),
    "keys of the wrong type": (
        lambda p: p.dp.groupby(
            [pd.Grouper(key="t", freq="MS"), "x"], keys=["a", "b"], range=(START, END)
        ),  # texts for a float column (an object column, as pandas 2 makes "region", takes any)
        DPTypeError,
        "'x'",
    ),
    "reversed range": (
        lambda p: p.dp.groupby(pd.Grouper(key="t", freq="MS"), range=(END, START)),
        DPValueError,
        "start < end",
    ),
    "naive range, aware column": (
        lambda p: p.dp.groupby(pd.Grouper(key="z", freq="MS"), range=(START, END)),
        DPTypeError,
        "tz='Europe/Paris'",
    ),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_refusals_name_the_fix_and_charge_nothing(
    case: str, charges_nothing: Callable[[Any], Any]
) -> None:
    call, error, text = REFUSALS[case]
    data = events().assign(z=lambda d: d["t"].dt.tz_localize("UTC").dt.tz_convert("Europe/Paris"))
    priv = data.dp.protect(epsilon=1.0)
    with charges_nothing(priv), pytest.raises(error, match=text):
        call(priv).size(epsilon=0.5)


NEIGHBOURS = {
    "missing time": {"t": pd.NaT, "region": "north", "x": 1.0},
    "at the end": {"t": END, "region": "north", "x": 1.0},
    "before the start": {"t": START - pd.Timedelta(1, "ns"), "region": "south", "x": 1.0},
    "at the start": {"t": START, "region": "south", "x": 1e300},
    "region outside the keys": {"t": START, "region": "west", "x": 1.0},
    "missing region": {"t": START, "region": None, "x": np.nan},
}


@pytest.mark.parametrize("row", list(NEIGHBOURS))
def test_a_neighbour_moves_one_cell_by_at_most_one(
    row: str, noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    data = events(rows=500)
    neighbour = pd.concat([data, pd.DataFrame([NEIGHBOURS[row]])], ignore_index=True)
    results = []
    for frame in (data, neighbour):
        priv = protect_seeded(frame.astype(data.dtypes.to_dict()), epsilon=1.0)
        by = ["region", pd.Grouper(key="t", freq="MS")]
        with noise(priv):
            results.append(priv.dp.groupby(by, keys=REGIONS, range=(START, END)).size(epsilon=1.0))
    assert results[0].index.equals(results[1].index)
    assert (results[1] - results[0]).abs().sum() <= 1
