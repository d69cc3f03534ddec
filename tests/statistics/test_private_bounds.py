"""``priv.dp.bounds``: a charged DP release of (lower, upper) per column (issue 41).

- Zero-noise oracle: with the noise replaced by 0 the release is, per column, the lattice
  point nearest each aimed quantile on its outer side, computed here from the documented
  rule (the lattice and the rank conditions of ``DataFrame.dp.bounds``' Notes), not from the
  library's scan.
- Glue: the scales handed to the sampler (threshold ``2Δ/ε_i``, queries ``4Δ/ε_i``), the
  number of variates, the ledger's measurements and the charge; under a privacy unit
  everything is multiplied by ``max_rows_per_unit``.
- Refusals before any charge; a differential test (D and D plus one adversarial row give the
  same schema, warnings and refusals); the result works as ``bounds=`` of later releases.
"""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import pandas_dp
from pandas_dp.errors import DPKeyError, DPTypeError, DPValueError

#: The documented lattice: 0 and ±m·2**e, m in {1, 1.25, 1.5, 1.75}, e in -32..63, ±2**64.
POSITIVE = sorted([m * 2.0**e for e in range(-32, 64) for m in (1.0, 1.25, 1.5, 1.75)] + [2.0**64])
UPPER_SCAN = [0.0, *POSITIVE]  # from 0 upwards
LOWER_SCAN = [0.0, *(-p for p in POSITIVE)]  # from 0 downwards
POINTS = len(UPPER_SCAN)  # 386


def margin(level: Fraction, epsilon: Fraction) -> Fraction:
    """The documented threshold in ranks: ``round(4Δ/ε) / qd``, ``Δ = qd·max(q, 1 - q)``."""
    delta = level.denominator * max(level, 1 - level)
    return Fraction(round(4 * delta / epsilon), level.denominator)


def oracle(
    values: np.ndarray, p: Fraction, q: Fraction, epsilon: Fraction | None = None
) -> tuple[float, float]:
    """The zero-noise release: the first point from 0 outwards past each aimed quantile (by
    the threshold's margin of a scan of ``epsilon``; none when None, as at huge ε)."""
    x = np.asarray(values, dtype=np.float64)
    x = np.clip(x[~np.isnan(x)], -(2.0**64), 2.0**64)
    n = x.size
    high = q * n + (0 if epsilon is None else margin(q, epsilon))
    low = (1 - p) * n + (0 if epsilon is None else margin(p, epsilon))
    upper = next((c for c in UPPER_SCAN if Fraction(int(np.sum(x <= c))) >= high), 2.0**64)
    lower = next((c for c in LOWER_SCAN if Fraction(int(np.sum(x >= c))) >= low), -(2.0**64))
    return lower, upper


P, Q = Fraction(1, 1000), Fraction(999, 1000)


def heavy(seed: int = 0, n: int = 3000) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "income": rng.lognormal(10, 1.2, n).round(),
        "balance": rng.normal(0, 1e4, n),
        "tiny": rng.uniform(-1e-6, 3e-6, n),
        "count": rng.integers(0, 40, n),
        "name": ["a"] * n,
    })  # fmt: skip


def test_the_lattice_is_as_documented() -> None:
    from pandas_dp.measures.grids import lattice, scan_points

    assert list(scan_points(1)) == UPPER_SCAN
    assert list(scan_points(-1)) == LOWER_SCAN
    points = lattice()
    assert points.size == 2 * POINTS - 1
    assert np.all(np.diff(points) > 0)
    assert all(float(v).hex().count("p") == 1 for v in points)
    ratios = np.asarray(POSITIVE[1:]) / np.asarray(POSITIVE[:-1])
    assert ratios.max() <= 1.25


def test_hand_computed_cases(protect_seeded, noise) -> None:
    data = pd.DataFrame({
        "up": np.arange(1, 1001, dtype=np.float64),  # 0.999 quantile: 999 -> 1024 (2**10)
        "down": -np.arange(1, 1001, dtype=np.float64),  # lower 0.001: -999 -> -1024
        "mid": np.linspace(100, 200, 1000),  # upper: 200 -> 224 (1.75 · 2**7)
    })  # fmt: skip
    priv = protect_seeded(data, epsilon=1e6)
    with noise(priv):  # at huge ε the threshold's margin rounds to 0 (4·999·6/1e5 < 1/2)
        table = priv.dp.bounds(epsilon=1e5)
    expected = pd.DataFrame(
        {"lower": [0.0, -1024.0, 0.0], "upper": [1024.0, 0.0, 224.0]},
        index=pd.Index(["up", "down", "mid"]),
    )
    pd.testing.assert_frame_equal(table, expected)


@pytest.mark.parametrize("levels", [None, (0.01, 0.99), (0.25, 0.75)])
def test_zero_noise_release_is_the_oracle(protect_seeded, noise, levels) -> None:
    data = heavy()
    data.loc[[3, 7], "income"] = [np.nan, np.inf]
    data.loc[[5], "balance"] = -np.inf
    priv = protect_seeded(data, epsilon=1e6)
    kwargs = {} if levels is None else {"q": levels}
    with noise(priv):
        table = priv.dp.bounds(epsilon=1.0, **kwargs)
    p, q = (P, Q) if levels is None else tuple(Fraction(str(v)) for v in levels)
    assert list(table.index) == ["income", "balance", "tiny", "count"]  # numeric columns
    assert list(table.columns) == ["lower", "upper"]
    assert (table.dtypes == np.float64).all()
    for column in table.index:
        values = data[column].to_numpy(np.float64)
        assert tuple(table.loc[column]) == oracle(values, p, q, Fraction(1, 8))
    with noise(priv):  # huge ε: the aimed quantiles themselves
        table = priv.dp.bounds(epsilon=1e5, **kwargs)
    for column in table.index:
        assert tuple(table.loc[column]) == oracle(data[column].to_numpy(np.float64), p, q)


def test_scales_variates_and_charge(protect_seeded, noise) -> None:
    data = heavy()
    priv = protect_seeded(data, epsilon=10.0)
    with noise(priv) as calls:
        priv.dp.bounds(["income", "balance"], epsilon=0.8)
    each = Fraction(1, 5)  # 0.8 split among 2 columns × 2 ends
    delta = 999  # qd · max(q, 1 - q) = 1000 · 0.999
    assert [call.size for call in calls] == [1, POINTS] * 4
    assert [call.mechanism.scale for call in calls] == [2 * delta / each, 4 * delta / each] * 4
    release = priv.dp.session.releases[-1]
    assert len(release.measurements) == 4
    for measurement in release.measurements:
        assert measurement.mechanism == "sparse_vector"
        assert measurement.epsilon == each
        assert measurement.sensitivity == delta
    assert priv.dp.session.spent.epsilon == Fraction(4, 5)
    assert priv.dp.session.spent.delta == 0
    (row,) = priv.dp.session.ledger.to_dict("records")
    assert row["query"] == "bounds"


def test_a_privacy_unit_multiplies_the_sensitivity(protect_seeded, noise) -> None:
    data = heavy(n=600)
    data["id"] = np.arange(600) % 200
    priv = protect_seeded(data, epsilon=10.0, privacy_unit="id", max_rows_per_unit=3)
    with noise(priv) as calls:
        table = priv.dp.bounds(epsilon=1.0)
    assert list(table.index) == ["income", "balance", "tiny", "count"]  # not the unit's ids
    each = Fraction(1, 8)
    assert [call.mechanism.scale for call in calls[:2]] == [3 * 2 * 999 / each, 3 * 4 * 999 / each]
    for measurement in priv.dp.session.releases[-1].measurements:
        assert measurement.sensitivity == 3 * 999


def test_series_form_and_preview(protect_seeded, noise, charges_nothing) -> None:
    data = heavy()
    priv = protect_seeded(data, epsilon=10.0)
    with charges_nothing(priv):
        preview = priv.dp.preview.bounds(["income"], epsilon=1.0)
    assert "sparse_vector" in str(preview)
    with noise(priv):
        pair = priv["income"].dp.bounds(epsilon=1.0)
    assert pair == oracle(data["income"].to_numpy(), P, Q, Fraction(1, 2))
    assert priv.dp.session.spent.epsilon == 1


def test_the_result_is_usable_as_bounds(protect_seeded, noise) -> None:
    data = heavy()
    priv = protect_seeded(data, epsilon=10.0)
    with noise(priv):
        b = priv.dp.bounds(["income", "balance"], epsilon=1.0)
        from_table = priv.dp.mean("income", bounds=b, epsilon=1.0)
        from_pair = priv.dp.mean("income", bounds=tuple(b.loc["income"]), epsilon=1.0)
        sums = priv.dp.sum(["income", "balance"], bounds=b, epsilon=1.0)
        described = priv.dp.describe(bounds=b, epsilon=1.0)
        matrix = priv.dp.cov(bounds=b, epsilon=1.0)
        grouped = priv.dp.groupby("count", keys=[0, 1]).mean("income", bounds=b, epsilon=1.0)
        series = priv["income"].dp.mean(bounds=priv["income"].dp.bounds(epsilon=1.0), epsilon=1)
    assert from_table == from_pair
    assert list(sums.index) == ["income", "balance"]
    assert list(described.columns) == ["income", "balance"]
    assert list(matrix.columns) == ["income", "balance"]
    assert list(grouped.index) == [0, 1]
    lower, upper = b.loc["income"]
    assert lower <= series <= upper
    with pytest.raises(DPTypeError, match="'lower' and 'upper'"):
        priv.dp.mean("income", bounds=pd.DataFrame({"lo": [0]}, index=["income"]), epsilon=1)


def test_rules_moved_to_their_own_property() -> None:
    priv = pd.DataFrame({"x": [1.0, 2.0]}).dp.protect(epsilon=1.0)
    assert priv.dp.rules.empty
    assert callable(priv.dp.bounds)


REFUSALS = [
    ({"columns": ["t"], "epsilon": 1.0, "lower": 0}, DPValueError, "hold dates"),
    ({"columns": ["name"], "epsilon": 1.0}, DPTypeError, "name"),
    ({"columns": ["nope"], "epsilon": 1.0}, DPKeyError, "nope"),
    ({"columns": [], "epsilon": 1.0}, DPValueError, "empty"),
    ({"columns": ["x", "x"], "epsilon": 1.0}, DPValueError, "distinct"),
    ({"columns": ["x"]}, DPTypeError, "epsilon"),
    ({"columns": ["x"], "epsilon": float("nan")}, DPValueError, "epsilon"),
    ({"columns": ["x"], "epsilon": 100.0}, pandas_dp.BudgetExceededError, "budget"),
    ({"columns": ["x"], "epsilon": 1.0, "q": (0.6, 0.9)}, DPValueError, "0.5"),
    ({"columns": ["x"], "epsilon": 1.0, "q": 0.5}, DPTypeError, "pair"),
    ({"columns": ["x"], "epsilon": 1.0, "bounds": (0, 1)}, TypeError, "bounds"),
]


def _refusal_frame(extra: object = None) -> pd.DataFrame:
    frame = pd.DataFrame({
        "x": np.linspace(0.0, 50.0, 200),
        "t": pd.date_range("2020-01-01", periods=200, freq="D"),
        "name": ["a"] * 200,
    })  # fmt: skip
    if extra is not None:
        frame.loc[len(frame), "x"] = extra
    return frame


@pytest.mark.parametrize(("kwargs", "error", "match"), REFUSALS)
def test_refusals_charge_nothing(kwargs, error, match, charges_nothing) -> None:
    priv = _refusal_frame().dp.protect(epsilon=5.0)
    with charges_nothing(priv), pytest.raises(error, match=match):
        priv.dp.bounds(**kwargs)
    assert priv.dp.session.spent.epsilon == 0


ADVERSARIAL = [np.nan, np.inf, -np.inf, 1e308, -1e308, -0.0, 2.0**64, 2.0**64 * 1.25, 5e-324]


@pytest.mark.parametrize("extra", ADVERSARIAL, ids=repr)
def test_a_neighbour_gives_the_same_schema_warnings_and_refusals(extra) -> None:
    outcomes = []
    for frame in (_refusal_frame(), _refusal_frame(extra)):
        priv = frame.dp.protect(epsilon=50.0)
        seen = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            table = priv.dp.bounds(["x"], epsilon=1.0)
            seen.append((list(table.index), list(table.columns), list(table.dtypes)))
            for kwargs, error, _ in REFUSALS:
                try:
                    priv.dp.bounds(**kwargs)
                except error as exc:
                    seen.append((type(exc), str(exc)))
        seen.append([(w.category, str(w.message)) for w in caught])
        outcomes.append(seen)
        assert priv.dp.session.spent.epsilon == 1
    assert outcomes[0] == outcomes[1]


def test_pandas_and_dask_agree_without_noise(protect_seeded, noise) -> None:
    dd = pytest.importorskip("dask.dataframe")
    data = heavy().drop(columns="name")
    priv = protect_seeded(data, epsilon=10.0)
    lazy = protect_seeded(dd.from_pandas(data, npartitions=3), epsilon=10.0)
    with noise(priv):
        eager = priv.dp.bounds(epsilon=1.0)
    with noise(lazy):
        spread = lazy.dp.bounds(epsilon=1.0)
    pd.testing.assert_frame_equal(eager, spread)


def test_noisy_bounds_cover_most_of_a_large_column(protect_seeded) -> None:
    data = pd.DataFrame({"x": np.random.default_rng(1).lognormal(8, 1, 50_000)})
    priv = protect_seeded(data, epsilon=10.0, seed=3)
    lower, upper = priv["x"].dp.bounds(epsilon=1.0)
    assert lower == 0.0
    true = np.quantile(data["x"], [0.99, 0.999])
    assert true[0] <= upper <= 1.25 * 1.25 * true[1]


def test_a_given_end_is_kept_and_its_share_goes_to_the_other(protect_seeded, noise) -> None:
    data = heavy()
    priv = protect_seeded(data, epsilon=10.0)
    with noise(priv) as calls:
        table = priv.dp.bounds(["income", "balance"], epsilon=0.9, lower={"income": 0})
    assert len(calls) == 2 * 3  # three scans: income's upper, balance's two ends
    each = Fraction(3, 10)
    assert [call.mechanism.scale for call in calls[:2]] == [2 * 999 / each, 4 * 999 / each]
    assert tuple(table.loc["income"]) == (0.0, oracle(data["income"].to_numpy(), P, Q, each)[1])
    assert tuple(table.loc["balance"]) == oracle(data["balance"].to_numpy(), P, Q, each)
    labels = [m.label for m in priv.dp.session.releases[-1].measurements]
    assert labels == [
        "bound(income, 0.999, upper)",
        "bound(balance, 0.001, lower)",
        "bound(balance, 0.999, upper)",
    ]
    # The released end lies beyond the given one (the next lattice point past it); at huge ε
    # the threshold's margin is 0.
    priv = protect_seeded(data, epsilon=1e6)
    with noise(priv):
        # 1.75·2**29 < 1e9 <= 2**30
        assert priv["income"].dp.bounds(epsilon=1e5, lower=1e9) == (1e9, 2.0**30)
        assert priv["income"].dp.bounds(epsilon=1e5, upper=-5) == (-6.0, -5.0)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"lower": 0, "upper": 1}, DPValueError),
        ({"lower": "0"}, DPTypeError),
        ({"lower": True}, DPTypeError),
        ({"lower": {"nope": 0}}, DPValueError),
        ({"upper": np.inf}, DPValueError),
        ({"upper": 2.0**64}, DPValueError),
    ],
)
def test_bad_given_ends_are_refused_before_any_charge(kwargs, error, charges_nothing) -> None:
    priv = _refusal_frame().dp.protect(epsilon=5.0)
    with charges_nothing(priv), pytest.raises(error):
        priv.dp.bounds(["x"], epsilon=1.0, **kwargs)


def test_both_scans_at_zero_give_usable_bounds(protect_seeded) -> None:
    # Every answer "yes" at once (query noise far above the threshold's): both scans stop at
    # 0, and the pair is widened to (0, 2**-32) so that it can be passed as bounds=.
    from pandas_dp.testing import capture_noise

    priv = protect_seeded(pd.DataFrame({"x": [5.0, 7.0, 9.0]}), epsilon=10.0)
    script = [[0], [10**9] * POINTS] * 2
    with pytest.warns(pandas_dp.PrivacyLeakWarning), capture_noise(priv, script=script):
        pair = priv["x"].dp.bounds(epsilon=1.0)
    assert pair == (0.0, 2.0**-32)
    assert 0.0 <= priv["x"].dp.mean(bounds=pair, epsilon=1.0) <= 2.0**-32
