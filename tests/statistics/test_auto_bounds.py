"""``bounds="auto"``: a release clips to bounds it releases first, in the same charge (issue 41).

A fifth of ``epsilon`` goes to ``priv.dp.bounds`` on the columns the release clips, the rest
to the statistic, clipped to the released bounds; one ledger row records both (its note gives
the bounds and their share, its ``bounds`` column the bounds). Checked here:

- zero noise: the release equals the same statistic at the bounds ``priv.dp.bounds`` releases
  at a fifth of ε, and ledger, cost and measurements are those of the two releases together;
- everything is checked before anything is read: refusals (and the budget's, for both steps
  together) charge nothing;
- a failure after the check is charged and says nothing of the data;
- previews show the bounds' share; group-bys and several statistics work the same way.
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import pandas_dp
from pandas_dp.api.queries import ungrouped
from pandas_dp.api.release import ReleaseOptions, run
from pandas_dp.errors import BudgetExceededError, DPValueError, ReleaseFailedError
from pandas_dp.testing import capture_noise


def data(n: int = 20_000) -> pd.DataFrame:
    gen = np.random.default_rng(41)  # test data only, never noise
    return pd.DataFrame(
        {
            "x": gen.lognormal(8, 1, n).round(2),
            "y": gen.lognormal(2, 0.5, n).round(2),
            "b": gen.integers(0, 2, n),
            "g": gen.choice(["a", "b"], n),
            "t": pd.Timestamp("2024-01-01") + pd.to_timedelta(gen.integers(0, 9, n), unit="D"),
        }
    )


#: ε of the releases below: a fifth of it, split between two scans, resolves the 0.1% and
#: 99.9% quantiles of 20,000 rows even without noise (the scans' margin is 4Δ/ε ranks).
EPSILON = 20.0


def by_hand(
    frame: pd.DataFrame, release, protect_seeded, noise, columns: list[str]
) -> tuple[object, ...]:
    """The release with bounds="auto", and by hand: bounds at ε/5, then the rest at 4ε/5."""
    auto = protect_seeded(frame, epsilon=100.0)
    with noise(auto):
        ours = release(auto, "auto", EPSILON)
    manual = protect_seeded(frame, epsilon=100.0)
    with noise(manual):
        table = manual.dp.bounds(columns, epsilon=EPSILON / 5)
        theirs = release(manual, table, EPSILON * 4 / 5)
    return ours, theirs, auto, manual, table


RELEASES = {
    "mean": lambda p, b, e: p.dp.mean("x", bounds=b, epsilon=e),
    "sum": lambda p, b, e: p.dp.sum("x", bounds=b, epsilon=e),
    "median": lambda p, b, e: p.dp.median("x", bounds=b, epsilon=e),
    "series std": lambda p, b, e: p["x"].dp.std(bounds=b, epsilon=e),
    "agg": lambda p, b, e: p.dp.agg(m=("x", "mean"), s=("x", "sum"), bounds=b, epsilon=e),
    "group mean": lambda p, b, e: p.dp.groupby("g", keys=["a", "b"]).mean("x", bounds=b, epsilon=e),
    "group agg": lambda p, b, e: p.dp.groupby("g", keys=["a", "b"]).agg(
        {"x": ["sum", "median"]}, bounds=b, epsilon=e
    ),
    "corr": lambda p, b, e: p.dp.corr(["x", "y"], bounds=b, epsilon=e),
    "ols": lambda p, b, e: p.dp.ols("y ~ x", bounds=b, epsilon=e).params,
    "describe": lambda p, b, e: p.dp.describe(bounds=b, epsilon=e),
    "logit": lambda p, b, e: p.dp.logit("b ~ y", bounds=b, epsilon=e).params,
    "group cov": lambda p, b, e: p.dp.groupby("g", keys=["a", "b"])[["x", "y"]].cov(
        bounds=b, epsilon=e
    ),
    "pivot_table": lambda p, b, e: p.dp.pivot_table(
        values="x",
        index="g",
        columns="b",
        aggfunc=["mean", "sum"],
        keys={"g": ["a", "b"], "b": [0, 1]},
        bounds=b,
        epsilon=e,
    ),
    "crosstab": lambda p, b, e: p.dp.crosstab(
        "g",
        "b",
        values="x",
        aggfunc="median",
        keys={"g": ["a", "b"], "b": [0, 1]},
        bounds=b,
        epsilon=e,
    ),
}


@pytest.mark.parametrize("name", list(RELEASES))
def test_zero_noise_equals_bounds_then_the_statistic(name: str, protect_seeded, noise) -> None:
    frame = data()
    columns = {"ols": ["y", "x"], "logit": ["y"], "describe": ["x", "y", "b"]}.get(
        name, ["x", "y"] if "cov" in name or "corr" in name else ["x"]
    )
    ours, theirs, auto, manual, table = by_hand(
        frame, RELEASES[name], protect_seeded, noise, columns
    )
    first = columns[0]
    lower, upper = table.loc[first, "lower"], table.loc[first, "upper"]
    assert lower <= frame[first].quantile(0.001)  # the bounds the scans aim at: not the
    assert frame[first].quantile(0.999) <= upper < 2 * frame[first].max()  # lattice's ends
    if isinstance(ours, pd.Series | pd.DataFrame):
        assert ours.equals(theirs)
    else:
        assert ours == theirs
    (row,) = auto.dp.session.releases
    first, second = manual.dp.session.releases
    assert row.cost == first.cost + second.cost  # one charge for both: ε = 1
    assert row.measurements == first.measurements + second.measurements
    assert row.bounds == second.bounds
    assert row.note.startswith(
        f"bounds='auto': 0.2 of ε on bounds released from the data ({columns[0]}: ["
    )
    assert row.columns[: len(columns)] == tuple(columns)
    assert row.asked == "epsilon=20, bounds='auto'"
    if name == "mean":  # and the answer is the data's, up to clipping at those bounds
        assert ours == pytest.approx(frame["x"].clip(lower, upper).mean(), rel=1e-6)


def test_the_share_and_the_ledger(protect_seeded) -> None:
    priv = protect_seeded(data(), epsilon=5.0)
    priv.dp.mean("x", bounds="auto", epsilon=0.5)
    ledger = priv.dp.session.ledger
    assert len(ledger) == 1
    assert ledger["epsilon"].iloc[0] == pytest.approx(0.5)
    assert ledger["bounds"].iloc[0].startswith("x: [")
    (release,) = priv.dp.session.releases
    shares = dict(release.shares)
    assert sum(v for k, v in shares.items() if "lower" in k or "upper" in k) == Fraction(1, 5)
    assert Fraction(1, 5) == ungrouped.AUTO_SHARE


def test_a_preview_shows_the_bounds_share_and_reads_nothing(charges_nothing) -> None:
    priv = data().dp.protect(epsilon=1.0)
    with charges_nothing(priv):
        shown = priv.dp.preview.mean("x", bounds="auto", epsilon=1.0)
    assert shown.epsilon == pytest.approx(1.0)
    assert set(shown.table["how"]) >= {"bounds", "mean"}
    assert shown.table.loc[shown.table["how"] == "bounds", "epsilon"].sum() == pytest.approx(0.2)


REFUSALS = {
    "rho": (lambda p: p.dp.mean("x", bounds="auto", rho=0.1), DPValueError, "epsilon="),
    "no epsilon": (lambda p: p.dp.mean("x", bounds="auto"), DPValueError, "epsilon="),
    "a count": (lambda p: p.dp.agg(n="count", bounds="auto", epsilon=1.0), DPValueError, "clips"),
    "negative epsilon": (
        lambda p: p.dp.mean("x", bounds="auto", epsilon=-1.0),
        DPValueError,
        "epsilon",
    ),
    "the budget for both": (
        lambda p: p.dp.mean("x", bounds="auto", epsilon=1.5),
        BudgetExceededError,
        "budget",
    ),
}


@pytest.mark.parametrize("name", list(REFUSALS))
def test_refusals_charge_nothing(name: str, charges_nothing) -> None:
    call, error, match = REFUSALS[name]
    priv = data().dp.protect(epsilon=1.0, delta=1e-6)
    with charges_nothing(priv), pytest.raises(error, match=match):
        call(priv)


def test_a_failure_after_the_check_is_charged_and_data_free() -> None:
    # A replanning that fails (here on purpose) after the bounds were read is charged in full
    # and raises a data-free error, as any failure after the budget check.
    priv = data().dp.protect(epsilon=1.0)
    planned = ungrouped.plan_one(priv, "mean", "x", ReleaseOptions(epsilon=1.0, bounds="auto"))
    assert planned.prior is not None

    def replan(found: object) -> object:
        raise RuntimeError(f"private detail {found}")

    with pytest.raises(ReleaseFailedError) as caught:
        run(replace(planned, replan=replan))
    assert "private detail" not in str(caught.value)
    assert caught.value.__context__ is None
    assert priv.dp.session.spent.epsilon == 1  # charged in full


def test_a_neighbour_gives_the_same_schema_and_warnings() -> None:
    base = data(600)
    outcomes = []
    for extra in (None, 1e308, np.nan, -np.inf):
        frame = (
            base
            if extra is None
            else pd.concat(
                [base, pd.DataFrame({"x": [extra], "g": ["a"], "t": [base["t"].iloc[0]]})],
                ignore_index=True,
            )
        )
        priv = frame.dp.protect(epsilon=10.0)
        with pytest.warns(pandas_dp.PrivacyLeakWarning), capture_noise(priv):
            result = priv.dp.groupby("g", keys=["a", "b"]).mean("x", bounds="auto", epsilon=1.0)
        outcomes.append((type(result).__name__, str(result.dtype), list(result.index)))
    assert all(o == outcomes[0] for o in outcomes)


def test_pandas_and_dask_agree_without_noise() -> None:
    dd = pytest.importorskip("dask.dataframe")
    frame = data()
    results = []
    for source in (frame, dd.from_pandas(frame, npartitions=3)):
        priv = source.dp.protect(epsilon=100.0)
        with pytest.warns(pandas_dp.PrivacyLeakWarning), capture_noise(priv):
            results.append(
                (
                    priv.dp.mean("x", bounds="auto", epsilon=EPSILON),
                    priv.dp.groupby("g", keys=["a", "b"])
                    .sum("x", bounds="auto", epsilon=EPSILON)
                    .tolist(),
                )
            )
    assert results[0] == results[1]


def test_histogram_range_auto_cuts_the_released_range(protect_seeded, noise) -> None:
    # range="auto": the column's bounds released first (a fifth of ε), then bins=k equal
    # bins over them, as numpy.histogram(x, bins=k, range=(lower, upper)); one ledger row.
    frame = data()

    def histogram(priv: pd.DataFrame, span: object, epsilon: float) -> pd.Series:
        return priv.dp.histogram("x", bins=6, range=span, epsilon=epsilon)

    auto = protect_seeded(frame, epsilon=100.0)
    with noise(auto):
        ours = histogram(auto, "auto", EPSILON)
    manual = protect_seeded(frame, epsilon=100.0)
    with noise(manual):
        table = manual.dp.bounds(["x"], epsilon=EPSILON / 5)
        span = (table.loc["x", "lower"], table.loc["x", "upper"])
        theirs = histogram(manual, span, EPSILON * 4 / 5)
    assert ours.equals(theirs)
    counts, _ = np.histogram(frame["x"], bins=6, range=span)
    assert ours.to_numpy().tolist() == counts.tolist()  # zero noise: numpy's counts
    assert frame["x"].quantile(0.999) <= span[1] < 2 * frame["x"].max()
    (row,) = auto.dp.session.releases
    first, second = manual.dp.session.releases
    assert row.cost == first.cost + second.cost
    assert row.measurements == first.measurements + second.measurements
    assert row.asked.startswith("epsilon=20")
    assert row.asked.endswith("range='auto'")
    assert row.note.startswith(
        f"range='auto': 0.2 of ε on bounds released from the data (x: [{span[0]:.6g}, "
        f"{span[1]:.6g}])"
    )


def test_series_histogram_range_auto_and_its_preview(charges_nothing) -> None:
    priv = data().dp.protect(epsilon=10.0)
    with charges_nothing(priv):
        shown = priv["x"].dp.preview.histogram(bins=4, range="auto", epsilon=1.0)
    assert shown.epsilon == pytest.approx(1.0)
    assert shown.table.loc[shown.table["how"] == "bounds", "epsilon"].sum() == pytest.approx(0.2)
    with pytest.warns(pandas_dp.PrivacyLeakWarning), capture_noise(priv):
        counts = priv["x"].dp.histogram(bins=4, range="auto", epsilon=1.0)
    assert isinstance(counts.index, pd.IntervalIndex)
    assert len(counts) == 4
    assert counts.sum() == len(priv) - int((priv["x"] > counts.index[-1].right).sum())


HISTOGRAM_REFUSALS = {
    "edges": (lambda p: p.dp.histogram("x", [0, 1, 2], range="auto", epsilon=1.0), "number"),
    "dates": (lambda p: p.dp.histogram("t", bins=3, range="auto", epsilon=1.0), "numeric"),
    "rho": (lambda p: p.dp.histogram("x", bins=3, range="auto", rho=0.1), "epsilon="),
}


@pytest.mark.parametrize("name", list(HISTOGRAM_REFUSALS))
def test_histogram_range_auto_refusals_charge_nothing(name: str, charges_nothing) -> None:
    call, match = HISTOGRAM_REFUSALS[name]
    priv = data(100).dp.protect(epsilon=1.0, delta=1e-6, accounting="zcdp")
    with charges_nothing(priv), pytest.raises(DPValueError, match=match):
        call(priv)


def test_an_integer_column_gets_whole_bounds_and_an_integer_sum(protect_seeded, noise) -> None:
    # The released bounds are rounded outwards to whole numbers within ±2**53, so a sum of an
    # integer column stays an exact integer (int64 per group), as pandas sums it, whatever
    # the scans found; at zero noise on few rows the scans reach the lattice's ends (2**64).
    gen = np.random.default_rng(5)  # test data only, never noise
    frame = pd.DataFrame({"n": gen.integers(0, 1000, 40), "g": gen.choice(["a", "b"], 40)})
    odd = pd.concat([frame, pd.DataFrame({"n": [2**62], "g": ["a"]})], ignore_index=True)
    for data in (frame, odd):
        priv = protect_seeded(data, epsilon=100.0)
        with noise(priv):
            total = priv.dp.sum("n", bounds="auto", epsilon=1.0)
            table = priv.dp.groupby("g", keys=["a", "b"]).sum("n", bounds="auto", epsilon=1.0)
        assert isinstance(total, int)
        assert str(table.dtype) == "int64"
        for release in priv.dp.session.releases:
            ((_, lower, upper),) = release.bounds
            assert float(lower).is_integer()
            assert float(upper).is_integer()
            assert -(2**53) <= lower < upper <= 2**53


def test_a_scan_that_finds_no_end_is_said_after_the_charge(protect_seeded, noise) -> None:
    # On 30 rows a fifth of ε = 1 cannot see the 99.9% quantile: at zero noise both scans
    # run to the lattice's end (±2**64). The release goes through, charged, and says so in
    # a NoiseDominatedWarning read off the released bounds alone; bounds the scans resolve
    # (20,000 rows at ε = 20) give no such warning.
    small = data(30)
    priv = protect_seeded(small, epsilon=10.0)
    with noise(priv), pytest.warns(pandas_dp.NoiseDominatedWarning, match="found no end"):
        priv.dp.mean("x", bounds="auto", epsilon=1.0)
    assert priv.dp.session.spent.epsilon == 1
    table = priv.dp.session.releases[-1]
    assert table.bounds[0][2] >= 2.0**64
    large = protect_seeded(data(), epsilon=100.0)
    with noise(large), warnings.catch_warnings():
        warnings.simplefilter("error", pandas_dp.NoiseDominatedWarning)
        large.dp.mean("x", bounds="auto", epsilon=EPSILON)
