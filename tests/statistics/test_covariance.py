"""``priv.dp.cov`` and ``priv.dp.corr`` (issue 30): one measurement of sums of products.

Under zero noise the release is pandas' ``df.cov()`` / ``df.corr()`` (pairwise-complete
rows, as pandas); data are multiples of 1/8 within bounds (0, 16), exact on the lattice
(values scaled by 2**16 / 8), so only float rounding separates the two. The scale handed to
the sampler is ``p / ε`` sums (Laplace) and the Gaussian ``σ² >= p Δ² / (2ρ)``; the matrix
is symmetric, positive semidefinite, correlations in [-1, 1]; refusals charge nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

import pandas_dp  # noqa: F401  (registers the accessors)
from pandas_dp.errors import DPTypeError, DPValueError
from pandas_dp.planning.measurement.marginals import release_rho
from pandas_dp.planning.measurement.products import UNIT, ProductLayout

BOUNDS = (0.0, 16.0)


def data(rows: int = 400, missing: bool = False) -> pd.DataFrame:
    gen = np.random.default_rng(30)  # test data only, never noise
    x = gen.integers(0, 129, rows) / 8
    frame = pd.DataFrame(
        {
            "x": x,
            "y": np.clip(np.round((x + gen.integers(-16, 17, rows) / 8) * 8) / 8, 0, 16),
            "n": gen.integers(0, 17, rows),
            "b": gen.integers(0, 2, rows).astype(bool),
        }
    )
    if missing:
        frame.loc[gen.random(rows) < 0.2, "x"] = np.nan
        frame.loc[gen.random(rows) < 0.3, "y"] = np.nan
    return frame


def bounds_for(columns: list[str]) -> dict[str, tuple[float, float]]:
    return {c: (0.0, 1.0) if c == "b" else BOUNDS for c in columns}


@pytest.mark.parametrize("how", ["cov", "corr"])
@pytest.mark.parametrize("missing", [False, True], ids=["complete", "with-nan"])
@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
def test_zero_noise_gives_pandas(
    how: str, missing: bool, mechanism: str, noise: Callable[..., Any],
    protect_seeded: Callable[..., Any],
) -> None:  # fmt: skip
    frame = data(missing=missing)
    columns = ["x", "y", "n", "b"]
    priv = protect_seeded(frame, epsilon=4.0, delta=1e-6)
    with noise(priv):
        got = getattr(priv.dp, how)(bounds=bounds_for(columns), epsilon=1.0, mechanism=mechanism)
    expected = getattr(frame[columns], how)()
    # Gaussian noise is added on a coarser lattice: each sum rounded to 2**exponent
    # products of scaled values (half of it at most), which moves a covariance by at most
    # about 4 r² of that over n - 1 (a correlation by that over the variances).
    (measurement,) = priv.dp.session.releases[0].measurements
    rounding = 2.0 ** (measurement.exponent - 1) if mechanism == "gaussian" else 0.0
    tolerance = 4 * 64 * rounding / (len(frame) * 0.5 - 1) * (1 if how == "cov" else 0.1)
    pd.testing.assert_frame_equal(got, expected, rtol=1e-9, atol=1e-12 + tolerance)


def test_complete_rows_and_ddof_and_min_periods(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    frame = data(missing=True)
    priv = protect_seeded(frame, epsilon=4.0)
    with noise(priv):
        listwise = priv.dp.cov(
            ["x", "y"], bounds=bounds_for(["x", "y"]), epsilon=1.0, use="complete"
        )
        biased = priv.dp.cov(["x", "n"], bounds=bounds_for(["x", "n"]), epsilon=1.0, ddof=0)
        hidden = priv.dp.corr(
            ["x", "y"], bounds=bounds_for(["x", "y"]), epsilon=1.0, min_periods=10**6
        )
    pd.testing.assert_frame_equal(listwise, frame[["x", "y"]].dropna().cov(), rtol=1e-9)
    pairs = {  # pairwise-complete rows, ddof 0 (pandas ignores ddof when values are missing)
        (a, b): float(np.cov(frame[[a, b]].dropna().T, ddof=0)[0, 1])
        for a in ("x", "n") for b in ("x", "n")
    }  # fmt: skip
    expected = pd.Series(pairs).unstack().loc[["x", "n"], ["x", "n"]]
    pd.testing.assert_frame_equal(biased, expected, rtol=1e-9, check_names=False)
    assert hidden.isna().all().all()


def test_constant_column_correlation_is_nan(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    frame = data().assign(c=4.0)
    priv = protect_seeded(frame, epsilon=4.0)
    with noise(priv):
        got = priv.dp.corr(["x", "c"], bounds=bounds_for(["x", "c"]), epsilon=1.0)
    expected = frame[["x", "c"]].corr()
    pd.testing.assert_frame_equal(got, expected, rtol=1e-9)
    assert got.loc["c"].isna().all()


def test_scale_and_charge_laplace(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    frame = data(missing=True)
    priv = protect_seeded(frame, epsilon=4.0)
    with noise(priv) as calls:
        priv.dp.corr(["x", "n"], bounds=bounds_for(["x", "n"]), epsilon=0.5)
    # x may be missing, n (int64) may not: n_xn = n_x, so the sums are
    # rows, Σx, Σn, Σx², Σxn, Σn², Σn·[x present], Σn²·[x present], [x present] count.
    layout = ProductLayout.of(
        ("x", "n"), (BOUNDS, BOUNDS), (True, False), complete=False, squares=True
    )
    sums = len(layout.monomials)
    assert sums == 9
    (call,) = calls
    assert call.size == sums
    assert call.mechanism.scale == Fraction(sums * UNIT) / Fraction(1, 2)
    (release,) = priv.dp.session.releases
    assert release.cost.epsilon == Fraction(1, 2)
    assert release.cost.delta == 0
    (measurement,) = release.measurements
    assert measurement.sensitivity == sums * UNIT
    assert measurement.label == "products(x, n)"


def test_scale_and_charge_gaussian_zcdp(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    frame = data()
    priv = protect_seeded(frame, rho=1.0)
    with noise(priv) as calls:
        priv.dp.cov(
            ["x", "y", "n"],
            bounds=bounds_for(["x", "y", "n"]),
            rho=0.25,
            mechanism="gaussian",
            use="complete",
        )
    # Complete rows: 1 + 3 + 6 sums (the Gram matrix of (1, x, y, n)).
    (call,) = calls
    assert call.size == 10
    (release,) = priv.dp.session.releases
    (measurement,) = release.measurements
    assert measurement.coordinates == 10
    assert measurement.rho <= Fraction(1, 4)
    assert float(measurement.rho) == pytest.approx(0.25, rel=1e-3)
    sigma2 = float(call.mechanism.sigma2) * 4.0 ** (measurement.exponent + 32)
    assert sigma2 >= 10 * (measurement.sensitivity * 2.0 ** (measurement.exponent + 32)) ** 2 / (
        2 * 0.25
    ) * (1 - 1e-9)


def test_gaussian_delta_scale(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    priv = protect_seeded(data(), epsilon=4.0, delta=1e-6)
    with noise(priv):
        priv.dp.cov(["x", "y"], bounds=bounds_for(["x", "y"]), epsilon=1.0, mechanism="gaussian")
    (release,) = priv.dp.session.releases
    (measurement,) = release.measurements
    assert release.cost.epsilon == 1
    assert release.cost.delta == Fraction(1, 4) * Fraction(1, 10**6)
    assert float(measurement.rho) <= release_rho(Fraction(1), release.cost.delta) * (1 + 1e-9)


def test_noisy_matrix_is_psd_symmetric_and_correlations_bounded(
    protect_seeded: Callable[..., Any],
) -> None:
    frame = data(rows=300, missing=True)
    columns = ["x", "y", "n", "b"]
    priv = protect_seeded(frame, epsilon=100.0, seed=3)
    checked = 0
    for _ in range(20):  # small data, small ε: the raw noisy matrix is far from PSD
        cov = priv.dp.cov(bounds=bounds_for(columns), epsilon=2.0)
        corr = priv.dp.corr(bounds=bounds_for(columns), epsilon=2.0)
        for matrix in (cov, corr):
            values = matrix.to_numpy()
            finite = ~np.isnan(values).any(axis=1)
            inner = values[np.ix_(finite, finite)]
            checked += inner.shape[0]
            if not inner.size:  # every variance noisy to <= 0 (NaN, as pandas' constant)
                continue
            np.testing.assert_array_equal(inner, inner.T)
            assert np.linalg.eigvalsh(inner).min() >= -1e-9 * max(1.0, np.abs(inner).max())
        inner = corr.to_numpy()
        assert not (np.abs(inner) > 1.0).any()
        assert all(np.isnan(v) or v == 1.0 for v in np.diag(inner))
    assert checked >= 100  # most matrices are whole


def test_intervals_shape_and_contain_the_value(protect_seeded: Callable[..., Any]) -> None:
    frame = data(rows=2000)
    priv = protect_seeded(frame, epsilon=10.0, seed=4)
    got = priv.dp.corr(["x", "y"], bounds=bounds_for(["x", "y"]), epsilon=2.0, ci=0.9)
    assert list(got.columns) == ["corr", "corr_lower", "corr_upper"]
    assert list(got.index) == [("x", "x"), ("x", "y"), ("y", "x"), ("y", "y")]
    assert (got["corr_lower"] <= got["corr"]).all()
    assert (got["corr"] <= got["corr_upper"]).all()
    exact = frame[["x", "y"]].corr().stack()
    assert ((got["corr_lower"] <= exact + 1e-12) & (exact <= got["corr_upper"] + 1e-12)).all()


def test_interval_coverage(protect_seeded: Callable[..., Any]) -> None:
    """Conservative intervals: every one of 200 releases at 90% holds the exact values
    (each fails with probability at most 0.1; seeded, so the count is fixed)."""
    frame = data(rows=300, missing=True)
    priv = protect_seeded(frame, epsilon=1000.0, seed=5)
    exact = frame[["x", "y"]].cov().stack()
    misses = 0
    for _ in range(200):
        got = priv.dp.cov(["x", "y"], bounds=bounds_for(["x", "y"]), epsilon=2.0, ci=0.9)
        inside = (got["cov_lower"] <= exact + 1e-9) & (exact <= got["cov_upper"] + 1e-9)
        misses += int(not inside.all())
    assert misses <= 20  # at most α = 10% of 200 in expectation; conservative: far fewer


def test_preview_states_the_planned_error(protect_seeded: Callable[..., Any]) -> None:
    priv = protect_seeded(data(), epsilon=4.0)
    before = len(priv.dp.session.releases)
    preview = priv.dp.preview.cov(
        ["x", "y"], bounds=bounds_for(["x", "y"]), epsilon=1.0, expected_rows=1000
    )
    assert list(preview.table.index) == ["('x', 'x')", "('x', 'y')", "('y', 'y')"]
    assert (preview.table["error"] > 0).all()
    assert np.isfinite(preview.table["error"]).all()
    more = priv.dp.preview.cov(
        ["x", "y"], bounds=bounds_for(["x", "y"]), epsilon=1.0, expected_rows=10_000
    )
    assert (more.table["error"] < preview.table["error"]).all()
    assert len(priv.dp.session.releases) == before


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda p: p.dp.cov(epsilon=1.0), DPValueError, "needs its columns"),
        (lambda p: p.dp.cov(["x", "y"], bounds=BOUNDS, epsilon=1.0), DPValueError, "dict"),
        (lambda p: p.dp.cov(["x"], bounds={"y": BOUNDS}, epsilon=1.0), DPValueError, "bounds"),
        (
            lambda p: p.dp.cov("x", bounds={"x": BOUNDS}, epsilon=1.0),
            DPTypeError,
            "list of columns",
        ),
        (
            lambda p: p.dp.cov(["x", "x"], bounds={"x": BOUNDS}, epsilon=1.0),
            DPValueError,
            "each once",
        ),
        (lambda p: p.dp.cov(["t"], bounds={"t": BOUNDS}, epsilon=1.0), DPTypeError, "datetime"),
        (lambda p: p.dp.cov(["s"], bounds={"s": BOUNDS}, epsilon=1.0), DPTypeError, "dtype"),
        (lambda p: p.dp.cov(["q"], bounds={"q": BOUNDS}, epsilon=1.0), Exception, "not found"),
        (
            lambda p: p.dp.cov(["x"], bounds={"x": BOUNDS}, epsilon=1.0, use="all"),
            DPValueError,
            "pairwise",
        ),
        (
            lambda p: p.dp.cov(["x"], bounds={"x": BOUNDS}, epsilon=1.0, ddof=-1),
            DPValueError,
            "ddof",
        ),
        (
            lambda p: p.dp.corr(["x"], bounds={"x": BOUNDS}, epsilon=1.0, method="spearman"),
            DPValueError,
            "rank",
        ),
        (
            lambda p: p.dp.cov(["x"], bounds={"x": BOUNDS}, epsilon=1.0, mechanism="gaussian"),
            DPValueError,
            "δ",
        ),
        (lambda p: p.dp.cov(["x"], bounds={"x": BOUNDS}, epsilon=99.0), Exception, "budget|exceed"),
    ],
)
def test_refusals_charge_nothing(
    call: Callable[[Any], Any], error: type[Exception], match: str,
    charges_nothing: Callable[..., Any], protect_seeded: Callable[..., Any],
) -> None:  # fmt: skip
    frame = data().assign(t=pd.Timestamp("2024-01-01"), s="a")
    priv = protect_seeded(frame, epsilon=4.0)
    with charges_nothing(priv), pytest.raises(error, match=match):
        call(priv)


@pytest.mark.parametrize("how", ["cov", "corr"])
def test_grouped_zero_noise_gives_pandas_and_charges_once(
    how: str, noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    frame = data(rows=1200, missing=True).assign(
        g=lambda d: np.where(d["n"] < 8, "lo", "hi"), h=lambda d: d["b"].astype(int)
    )
    priv = protect_seeded(frame, epsilon=4.0)
    with noise(priv):
        one = getattr(priv.dp.groupby("g", keys=["hi", "lo"])[["x", "y"]], how)(
            bounds=bounds_for(["x", "y"]), epsilon=1.0
        )
        two = getattr(
            priv.dp.groupby(["g", "h"], keys={"g": ["hi", "lo"], "h": [0, 1]})[["x", "y"]], how
        )(bounds=bounds_for(["x", "y"]), epsilon=1.0)
    pd.testing.assert_frame_equal(one, getattr(frame.groupby("g")[["x", "y"]], how)(), rtol=1e-9)
    pd.testing.assert_frame_equal(
        two, getattr(frame.groupby(["g", "h"])[["x", "y"]], how)(), rtol=1e-9
    )
    first, second = priv.dp.session.releases
    assert (first.groups, second.groups) == (2, 4)
    assert first.query == f"groupby.{how}"
    assert priv.dp.session.spent.epsilon == 2  # once per release, whatever the groups


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (
            lambda p: p.dp.groupby("g", keys=["u", "v"]).cov(bounds={"x": BOUNDS}, epsilon=1.0),
            "select",
        ),
        (
            lambda p: p.dp.groupby("g", keys=["u", "v"])["x"].cov(
                bounds={"x": BOUNDS}, epsilon=1.0
            ),
            "select",
        ),
        (
            lambda p: p.dp.groupby("g", selection="threshold")[["x"]].cov(
                bounds={"x": BOUNDS}, epsilon=1.0
            ),
            "public keys",
        ),
    ],
)
def test_grouped_refusals_charge_nothing(
    call: Callable[[Any], Any], match: str, charges_nothing: Callable[..., Any],
    protect_seeded: Callable[..., Any],
) -> None:  # fmt: skip
    frame = data().assign(g=lambda d: np.where(d["n"] < 8, "u", "v"))
    priv = protect_seeded(frame, epsilon=4.0, delta=1e-6)
    with charges_nothing(priv), pytest.raises(DPValueError, match=match):
        call(priv)


@pytest.mark.parametrize("how", ["cov", "corr"])
def test_the_note_says_what_use_costs(how: str) -> None:
    """Float columns may hold missing values: the note gives the sums of both choices."""
    frame = data()
    floats, whole = ["x", "y"], ["n", "b"]
    priv = frame.dp.protect(epsilon=10.0)
    for use in ("pairwise", "complete"):
        getattr(priv.dp, how)(
            floats + whole, bounds=bounds_for(floats + whole), epsilon=1.0, use=use
        )
        note = priv.dp.session.ledger["note"].iloc[-1]
        layouts = {
            complete: ProductLayout.of(
                tuple(floats + whole),
                tuple(bounds_for(floats + whole).values()),
                (True, True, False, False),
                complete=complete,
                squares=how == "corr" and not complete,
            )
            for complete in (False, True)
        }
        pairwise, complete = (len(layouts[c].monomials) for c in (False, True))
        assert pairwise > complete
        other = "complete" if use == "pairwise" else "pairwise"
        chosen_sums, other_sums = (
            (pairwise, complete) if use == "pairwise" else (complete, pairwise)
        )
        assert f"use={use!r} measures {chosen_sums} sums, use={other!r} {other_sums}" in note
        assert "the difference comes from x, y" in note
    # integer and bool columns cannot hold missing values: both choices measure the same sums
    getattr(priv.dp, how)(whole, bounds=bounds_for(whole), epsilon=1.0)
    assert "use='complete'" not in priv.dp.session.ledger["note"].iloc[-1]
