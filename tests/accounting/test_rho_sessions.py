"""ρ sessions end to end (issue 38): every release family takes ``rho=``, charged its zCDP cost.

In a session protected with ``rho=``, a release given ``rho=`` measures additive statistics
with discrete Gaussian noise calibrated to ρ (``σ² >= Δ₂²/(2ρ)``) and chooses (quantiles,
mode, top-k) by the exponential mechanism at ``ε = sqrt(8ρ)``, priced by bounded range
(``ε²/8``-zCDP, Cesar & Rogers 2021). For every family the test reads the noise handed to the
sampler (:func:`pandas_dp.testing.capture_noise`) and checks that the ρ charged is exactly
the mechanisms' zCDP cost, at most what was asked and within rounding of it, and that the
ledger says so (ρ charged, what was asked, no ε derived from ρ).
"""

from __future__ import annotations

import json
import math
import re
import warnings
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import pandas_dp
from pandas_dp import BudgetExceededError, DPValueError
from pandas_dp.accounting.events import BoundedRangeMeasurement, Measurement
from pandas_dp.mechanisms.exponential import ExponentialMechanism
from pandas_dp.mechanisms.gaussian.discrete import DiscreteGaussian
from pandas_dp.testing import NoiseCall, capture_noise

KEYS = ["a", "b"]
ASKED = Fraction(1, 100)
T0, T1 = pd.Timestamp("2024-01-01"), pd.Timestamp("2024-01-06")


def frame() -> pd.DataFrame:
    n = 120
    return pd.DataFrame(
        {
            "g": np.repeat(KEYS, n // 2),
            "h": np.tile(KEYS, n // 2),
            "x": np.linspace(0.0, 10.0, n),
            "y": np.linspace(10.0, 0.0, n) ** 1.1 % 10,
            "t": pd.date_range(T0, periods=n, freq="h"),
        }
    )


def protected() -> pd.DataFrame:
    return frame().dp.protect(rho=1.0)


Family = Callable[[pd.DataFrame], object]
B = {"bounds": (0, 10)}
XY = {"bounds": {"x": (0, 10), "y": (0, 10)}}
GH = {"g": KEYS, "h": KEYS}

#: One call per release family, each asking for ρ = 0.01.
FAMILIES: dict[str, Family] = {
    "count": lambda p: p.dp.count(rho=0.01),
    "sum": lambda p: p.dp.sum("x", **B, rho=0.01),
    "mean": lambda p: p["x"].dp.mean(**B, rho=0.01),
    "var": lambda p: p.dp.var("x", **B, rho=0.01),
    "std": lambda p: p["x"].dp.std(**B, rho=0.01),
    "quantile": lambda p: p.dp.quantile("x", [0.25, 0.75], **B, rho=0.01),
    "median": lambda p: p["x"].dp.median(**B, rho=0.01),
    "mode": lambda p: p["g"].dp.mode(candidates=KEYS, rho=0.01),
    "top_k": lambda p: p.dp.top_k("g", 2, candidates=KEYS, rho=0.01),
    "describe": lambda p: p[["x"]].dp.describe(bounds={"x": (0, 10)}, rho=0.01),
    "agg": lambda p: p.dp.agg(n="count", m=("x", "mean"), bounds={"x": (0, 10)}, rho=0.01),
    "nunique": lambda p: p["g"].dp.nunique(rho=0.01),
    "groupby.count": lambda p: p.dp.groupby("g", keys=KEYS).count(rho=0.01),
    "groupby.mean": lambda p: p.dp.groupby("g", keys=KEYS)["x"].mean(**B, rho=0.01),
    "groupby.agg": lambda p: p.dp.groupby("g", keys=KEYS).agg(
        n="count", s=("x", "sum"), bounds={"x": (0, 10)}, rho=0.01
    ),
    "groupby.median": lambda p: p.dp.groupby("g", keys=KEYS).median("x", **B, rho=0.01),
    "value_counts": lambda p: p["g"].dp.value_counts(keys=KEYS, rho=0.01),
    "crosstab": lambda p: p.dp.crosstab("g", "h", keys=GH, rho=0.01),
    "pivot_table": lambda p: p.dp.pivot_table(
        values="x", index="g", columns="h", keys=GH, aggfunc="mean", bounds=(0, 10), rho=0.01
    ),
    "histogram": lambda p: p.dp.histogram("x", bins=5, range=(0, 10), rho=0.01),
    "cov": lambda p: p[["x", "y"]].dp.cov(**XY, rho=0.01),
    "corr": lambda p: p[["x", "y"]].dp.corr(**XY, rho=0.01),
    "ols": lambda p: p.dp.ols("y ~ x", **XY, rho=0.01),
    "resample.size": lambda p: p.dp.resample("D", on="t", range=(T0, T1)).size(rho=0.01),
    "running totals": lambda p: p.dp.resample("D", on="t", range=(T0, T1)).size(
        cumulative=True, rho=0.01
    ),
    "tables": lambda p: p.dp.tables([["g", "h"], ["g"]], keys=GH, rho=0.01),
    "hierarchy": lambda p: p.dp.hierarchy(["g", "h"], keys={"a": KEYS, "b": KEYS}).count(rho=0.01),
    "synthesize": lambda p: p.dp.synthesize(["g", "h"], keys=GH, rho=0.01, rows=10),
    "synthesize aim": lambda p: p.dp.synthesize(
        ["g", "h"], keys=GH, rho=0.01, rows=10, method="aim"
    ),
}


def _zcdp_cost(m: Measurement) -> Fraction:
    """The mechanism's zCDP cost from its noise parameters, independently of ``m.rho``."""
    if m.mechanism == "discrete_gaussian":
        assert m.sigma2 is not None
        return Fraction(m.coordinates * m.sensitivity**2) / (2 * m.sigma2)  # Δ₂²/(2σ²)
    assert isinstance(m, BoundedRangeMeasurement), m  # a choice: ε_c²/8 per round
    return m.coordinates * (2 * Fraction(m.sensitivity) / m.scale) ** 2 / 8


def _release(family: str) -> tuple[pd.DataFrame, list[NoiseCall]]:
    priv = protected()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
        with capture_noise(priv) as calls:
            FAMILIES[family](priv)
    return priv, calls


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_family_is_charged_its_mechanisms_zcdp_cost(family: str) -> None:
    priv, calls = _release(family)
    session = priv.dp.session
    (release,) = session.releases
    charged = session.spent.rho
    # The charge is exactly the sum of the mechanisms' zCDP costs ...
    assert charged == sum((_zcdp_cost(m) for m in release.measurements), Fraction(0))
    # ... at most what was asked, and within the samplers' rounding of it (σ² rounded up by
    # under 0.1%, ε rounded down to 2**-40).
    assert ASKED * Fraction(999, 1000) < charged <= ASKED
    # Additive noise is discrete Gaussian, choices the exponential mechanism: nothing else.
    assert {m.mechanism for m in release.measurements} <= {"discrete_gaussian", "exponential"}
    # What the sampler received is what the ledger prices.
    gaussians = {m.sigma2 for m in release.measurements if m.mechanism == "discrete_gaussian"}
    choices = [m for m in release.measurements if isinstance(m, BoundedRangeMeasurement)]
    for call in calls:
        if isinstance(call.mechanism, DiscreteGaussian):
            assert call.mechanism.sigma2 in gaussians
        else:
            assert isinstance(call.mechanism, ExponentialMechanism)
            assert not call.mechanism.flip  # bounded range is the exponential mechanism's
            # Each round's ε (top-k peels at ε/k) is a choice's ε_c.
            assert any(
                call.mechanism.epsilon == m.choice_epsilon
                or call.mechanism.epsilon * m.coordinates == m.choice_epsilon * m.coordinates
                for m in choices
            )
    # The ledger: ρ charged, what was asked, and no ε or δ derived from ρ.
    row = session.ledger.iloc[-1]
    assert row["rho"] == float(charged)
    assert row["asked"] == "rho=0.01"
    assert math.isnan(row["epsilon"])
    assert math.isnan(row["delta"])
    assert not re.search(r"\d{4,}/\d", row["note"])  # no raw Fraction (shares read 1/2)


@pytest.mark.parametrize(
    ("family", "sigma2_at_least"),
    [("count", 50), ("groupby.count", 50), ("value_counts", 50), ("histogram", 50)],
)
def test_counts_get_gaussian_noise_calibrated_to_rho(family: str, sigma2_at_least: int) -> None:
    """Δ₂ = 1 for a count (or a vector of disjoint counts): σ² = 1/(2 · 0.01) = 50."""
    _, calls = _release(family)
    (call,) = calls
    assert isinstance(call.mechanism, DiscreteGaussian)
    assert sigma2_at_least <= call.mechanism.sigma2 < sigma2_at_least * Fraction(1001, 1000)


@pytest.mark.parametrize("family", ["median", "mode"])
def test_a_choice_gets_epsilon_sqrt_8_rho(family: str) -> None:
    """Bounded range: ρ = 0.01 gives the exponential mechanism ε = sqrt(0.08), not sqrt(0.02)."""
    priv, calls = _release(family)
    (call,) = calls
    assert isinstance(call.mechanism, ExponentialMechanism)
    epsilon = call.mechanism.epsilon
    assert epsilon**2 / 8 <= ASKED < (epsilon + Fraction(1, 2**39)) ** 2 / 8
    assert "bounded range" in priv.dp.session.ledger["note"].iloc[-1]


@pytest.mark.parametrize("family", ["median", "quantile", "describe"])
def test_quantiles_in_a_rho_session_keep_the_exponential_mechanism(family: str) -> None:
    """ε²/8 (bounded range) is proved for the exponential mechanism's law, not for
    permute-and-flip, which quantiles use in pure-ε sessions: a ρ session samples by the
    exponential mechanism and its ledger says so."""
    priv, calls = _release(family)
    choices = [c for c in calls if isinstance(c.mechanism, ExponentialMechanism)]
    assert choices
    assert all(not c.mechanism.flip for c in choices)
    records = [
        m for m in priv.dp.session.releases[-1].measurements
        if isinstance(m, BoundedRangeMeasurement)
    ]  # fmt: skip
    assert records
    assert {m.mechanism for m in records} == {"exponential"}
    assert "permute-and-flip" not in priv.dp.session.ledger["note"].iloc[-1]


def test_top_k_rounds_share_rho() -> None:
    """k rounds at ε/k each cost k (ε/k)²/8 = ε²/(8k): rho= gives them ε = sqrt(8ρk)."""
    priv, calls = _release("top_k")
    assert len(calls) == 2
    (m,) = priv.dp.session.releases[-1].measurements
    assert isinstance(m, BoundedRangeMeasurement)
    assert m.coordinates == 2
    for call in calls:
        assert call.mechanism.epsilon == m.choice_epsilon  # each round's ε
    assert m.rho == 2 * m.choice_epsilon**2 / 8


# Regression tests for what issue 38 found (each fails on the code before it).


def test_exponential_mechanism_at_epsilon_is_charged_epsilon_squared_over_8() -> None:
    """A median at ε = 0.2 was charged ε²/2 = 0.02; bounded range gives ε²/8 = 0.005."""
    for release in (
        lambda p: p["x"].dp.median(bounds=(0, 10), epsilon=0.2),
        lambda p: p.dp.quantile("x", 0.3, bounds=(0, 10), epsilon=0.2),
        lambda p: p["g"].dp.mode(candidates=KEYS, epsilon=0.2),
        lambda p: p["g"].dp.top_k(1, candidates=KEYS, epsilon=0.2),
    ):
        priv = protected()
        release(priv)
        assert priv.dp.session.spent.rho == Fraction(1, 200)


def test_epsilon_in_a_gaussian_mean_is_asked_not_charged() -> None:
    """A Gaussian mean at ε = 0.2 showed ε = 0.2828 (derived from ρ) in the epsilon column."""
    priv = protected()
    priv["x"].dp.mean(bounds=(0, 10), epsilon=0.2, mechanism="gaussian")
    row = priv.dp.session.ledger.iloc[0]
    assert math.isnan(row["epsilon"])
    assert row["asked"] == "epsilon=0.2"
    assert Fraction(2, 100) * Fraction(999, 1000) < Fraction(row["rho"]) <= Fraction(2, 100)
    assert "0.2828" not in row.to_string()


def test_count_with_rho_uses_gaussian_noise_and_a_readable_note() -> None:
    """count(rho=0.01) used Laplace noise and wrote ``ε 77747212799/549755813888``."""
    priv, calls = _release("count")
    (call,) = calls
    assert isinstance(call.mechanism, DiscreteGaussian)
    row = priv.dp.session.ledger.iloc[0]
    assert row["mechanism"] == "discrete_gaussian"
    assert "77747212799" not in row["note"]
    assert row["note"].startswith("ρ 0.01 on the row count")


@pytest.mark.parametrize(
    "family", ["synthesize", "tables", "hierarchy", "mode", "top_k", "running totals"]
)
def test_families_that_refused_rho_take_it(family: str) -> None:
    """synthesize, tables, hierarchy, mode and top_k took no ``rho=``."""
    priv = protected()
    FAMILIES[family](priv)
    assert 0 < priv.dp.session.spent.rho <= ASKED


def test_synthesize_refusal_speaks_rho() -> None:
    """It said "needs ε=1 ... only ρ=0.34 remains" without converting."""
    priv = frame().dp.protect(rho=0.34)
    with pytest.raises(BudgetExceededError, match=r"needs ρ=0\.5 but only ρ=0\.34 of"):
        priv.dp.synthesize(["g", "h"], keys=GH, epsilon=1.0, rows=10)


def test_gaussian_running_totals_in_a_rho_session() -> None:
    """They were refused with "Gaussian noise needs a δ" though the docs say they work."""
    priv = protected()
    totals = priv.dp.resample("D", on="t", range=(T0, T1)).size(
        cumulative=True, mechanism="gaussian", epsilon=0.1
    )
    assert len(totals) == 5
    (release,) = priv.dp.session.releases
    assert release.measurements[0].mechanism == "discrete_gaussian"
    assert Fraction(5, 1000) * Fraction(999, 1000) < priv.dp.session.spent.rho <= Fraction(5, 1000)


def test_randomized_response_refuses_rho_and_says_why() -> None:
    answers = pd.Series([True, False] * 10)
    with pytest.raises(DPValueError, match="local DP on an unprotected Series"):
        answers.dp.randomized_response(rho=0.1)


@pytest.mark.parametrize("family", ["tables", "synthesize", "running totals", "median", "count"])
def test_rho_outside_a_zcdp_session_is_refused_before_the_charge(family: str) -> None:
    priv = frame().dp.protect(epsilon=1.0, delta=1e-6)
    with pytest.raises(DPValueError, match="rho"):
        FAMILIES[family](priv)
    assert priv.dp.session.releases == ()


def _zcdp_session() -> pd.DataFrame:
    """An (ε, δ) budget accounted in zCDP: ``rho=`` is promised there as in a ρ session."""
    return frame().dp.protect(epsilon=1.0, delta=1e-6, accounting="zcdp")


def _zcdp_cost_any(m: Measurement) -> Fraction:
    """:func:`_zcdp_cost`, with Laplace noise at ``(Δ/b)²/2`` (pure ε-DP, Bun & Steinke)."""
    if m.mechanism == "discrete_laplace":
        return (Fraction(m.sensitivity) / m.scale) ** 2 / 2
    return _zcdp_cost(m)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_rho_in_an_epsilon_delta_session_accounted_by_zcdp_is_charged_rho(family: str) -> None:
    """``accounting="zcdp"``: every family takes ``rho=`` (running totals, tables and
    synthesize refused it; synthesize then spent 5% of it) and spends it: the release's ρ,
    the mechanisms' zCDP costs (choices by bounded range, ε²/8), is the ρ asked."""
    priv = _zcdp_session()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
        FAMILIES[family](priv)
    (release,) = priv.dp.session.releases
    rho = sum((m.rho for m in release.measurements), Fraction(0))
    assert rho == sum((_zcdp_cost_any(m) for m in release.measurements), Fraction(0))
    assert ASKED * Fraction(999, 1000) < rho <= ASKED
    assert priv.dp.session.ledger.iloc[-1]["asked"] == "rho=0.01"


@pytest.mark.parametrize(
    "release",
    [
        lambda p: p["x"].dp.median(bounds=(0, 10), epsilon=0.2),
        lambda p: p["g"].dp.mode(candidates=KEYS, epsilon=0.2),
        lambda p: p["g"].dp.top_k(1, candidates=KEYS, epsilon=0.2),
    ],
)
def test_a_choice_accounted_by_zcdp_is_priced_by_bounded_range(release) -> None:
    """Under ``accounting="zcdp"`` a choice at ε = 0.2 counted ε²/2 = 0.02, not ε²/8."""
    priv = _zcdp_session()
    release(priv)
    ((m,),) = (r.measurements for r in priv.dp.session.releases)
    assert isinstance(m, BoundedRangeMeasurement)
    assert m.rho == Fraction(1, 200)
    assert "bounded range" in priv.dp.session.ledger["note"].iloc[-1]


def test_rho_and_epsilon_are_exclusive_everywhere() -> None:
    priv = protected()
    with pytest.raises(DPValueError, match="not both"):
        priv["g"].dp.mode(candidates=KEYS, rho=0.01, epsilon=0.1)
    with pytest.raises(DPValueError, match="not both"):
        priv.dp.tables([["g"]], keys=GH, rho=0.01, epsilon=0.1)
    assert priv.dp.session.releases == ()


def test_the_notebook_view_and_ledger_render_in_a_rho_session() -> None:
    priv = protected()
    FAMILIES["median"](priv)
    FAMILIES["count"](priv)
    html = priv.dp.session._repr_html_()
    assert "<th>asked</th>" in html
    assert "rho=0.01" in html
    assert "ρ=0.02" in repr(priv.dp.session) or "ρ=0.0199" in repr(priv.dp.session)


RHO_SPEC = """\
[data]
path = "people.csv"

[privacy]
rho = 0.5

[release]
formats = ["csv"]

[[query]]
name = "counts"
groupby = ["g"]
keys = ["a", "b"]
aggs = { n = "count" }
epsilon = 0.2
"""


def _release_file(tmp_path, spec: str) -> tuple[int, object]:
    """Run ``pandas-dp release`` on ``spec`` over the test frame; its exit code and folder."""
    from pandas_dp.cli import main

    frame()[["g", "x"]].to_csv(tmp_path / "people.csv", index=False)
    (tmp_path / "release.toml").write_text(spec)
    out = tmp_path / "out"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.NoiseDominatedWarning)
        return main(["release", str(tmp_path / "release.toml"), "--out", str(out)]), out


def test_a_rho_release_file_reports_rho(tmp_path, capsys) -> None:
    """The CLI's release, ledger and report render a ρ session's charges (ρ, not a derived ε)."""
    from pandas_dp.cli import main

    code, out = _release_file(tmp_path, RHO_SPEC)
    assert code == 0
    capsys.readouterr()
    assert main(["ledger", str(out / "ledger.jsonl"), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    (entry,) = summary["entries"]
    assert entry["rho"] == pytest.approx(0.02)
    assert "epsilon" not in entry
    report = next(out.glob("*.html")).read_text()
    assert '<th class="">rho</th>' in report
    assert '<th class="">epsilon</th>' not in report


RHO_QUERIES_SPEC = """\
[data]
path = "people.csv"

[privacy]
{privacy}

[[query]]
name = "counts"
groupby = ["g"]
keys = ["a", "b"]
aggs = {{ n = "count" }}
rho = 0.01

[[query]]
name = "centres"
groupby = ["g"]
keys = ["a", "b"]
aggs = {{ mean_x = ["x", "mean"], median_x = ["x", "median"] }}
bounds = {{ x = [0, 10] }}
rho = 0.01
"""


@pytest.mark.parametrize(
    "privacy", ["rho = 0.5", 'epsilon = 1.0\ndelta = 1e-6\naccounting = "zcdp"'],
    ids=["rho budget", "zcdp accounting"],
)  # fmt: skip
def test_a_release_file_query_may_spend_rho(tmp_path, capsys, privacy: str) -> None:
    """``rho = 0.01`` in a ``[[query]]``: charged ρ ≤ 0.01 (within 0.1%), the report says ρ."""
    from pandas_dp.accounting.ledger_file import read_ledger
    from pandas_dp.cli import main

    code, out = _release_file(tmp_path, RHO_QUERIES_SPEC.format(privacy=privacy))
    assert code == 0
    capsys.readouterr()
    _, entries = read_ledger(out / "ledger.jsonl")
    assert [e.release.tag.split("@")[0] for e in entries] == ["counts", "centres"]
    for entry in entries:
        assert ASKED * Fraction(999, 1000) < entry.release.rho <= ASKED
        assert "rho=0.01" in entry.release.asked
    assert main(["ledger", str(out / "ledger.jsonl"), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    if privacy.startswith("rho"):  # the CLI's ledger shows ρ for a ρ budget
        assert [e["query"] for e in summary["entries"]] == ["groupby.agg", "groupby.agg"]
        for entry in summary["entries"]:
            assert 0.01 * 0.999 < entry["rho"] <= 0.01
    report = (out / "report.html").read_text()
    for name in ("counts", "centres"):
        section = report.split(f'<h2 id="{name}">')[1].split("<h2")[0]
        assert "2 rows by g; ρ = 0.01" in section
        assert "ε =" not in section


BAD_SPEND_SPEC = """\
[data]
path = "people.csv"

[privacy]
epsilon = 1.0

[[query]]
name = "both"
aggs = { n = "count" }
epsilon = 0.1
rho = 0.01

[[query]]
name = "neither"
aggs = { n = "count" }

[[query]]
name = "rho_in_an_epsilon_session"
aggs = { n = "count" }
rho = 0.01
"""


def test_a_release_file_query_states_epsilon_or_rho(tmp_path, capsys) -> None:
    """Both, neither, or ρ without a zCDP budget: every problem listed, nothing charged."""
    code, out = _release_file(tmp_path, BAD_SPEND_SPEC)
    assert code == 2
    problems = capsys.readouterr().err.splitlines()[1:]
    fix = 'or give [privacy] rho = ... (or accounting = "zcdp")'
    assert [p.strip() for p in problems] == [
        "query[1]: give what this query may spend: epsilon (and delta), or rho, not both",
        "query[1].rho: rho prices a query in zero-concentrated DP, but [privacy] gives an "
        f"epsilon budget under basic accounting: state epsilon = ... in this query instead, {fix}",
        "query[2].epsilon: missing: every query states what it may spend",
        "query[3].rho: rho prices a query in zero-concentrated DP, but [privacy] gives an "
        f"epsilon budget under basic accounting: state epsilon = ... in this query instead, {fix}",
    ]
    assert not out.exists()  # nothing read, charged or written


def test_a_rho_query_in_a_zcdp_release_file_needs_no_delta(tmp_path, capsys) -> None:
    """In a ρ session a ρ query is fine, but not with a δ; a missing budget names both."""
    from pandas_dp.cli import main

    spec = BAD_SPEND_SPEC.replace("epsilon = 1.0\n", "rho = 0.5\n", 1) + "delta = 1e-6\n"
    (tmp_path / "release.toml").write_text(spec)
    assert main(["plan", str(tmp_path / "release.toml")]) == 2
    problems = [p.strip() for p in capsys.readouterr().err.splitlines()[1:]]
    assert problems == [
        "query[1]: give what this query may spend: epsilon (and delta), or rho, not both",
        "query[2].epsilon: missing: every query states what it may spend: epsilon = ..., or "
        "rho = ... in this zCDP session",
        "query[3].delta: a query priced in rho needs no delta: leave it out",
    ]
