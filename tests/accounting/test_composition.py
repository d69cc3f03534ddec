"""The composition rules: basic, advanced, zCDP, PLD and ρ budgets.

Every expectation is computed here from the rule's published formula, independently of
``pandas_dp.accounting.composition``:

* basic (Dwork et al. 2006): ε and δ add up, exactly (Fractions);
* advanced (Dwork, Rothblum & Vadhan 2010, heterogeneous form of Kairouz, Oh & Viswanath
  2015): pure costs ε_i compose to ``Σ ε_i tanh(ε_i/2) + sqrt(2 ln(1/δ') Σ ε_i²)`` (or Σ ε_i
  if smaller) at the slack δ' = total δ - explicit δ - δ of the Gaussian releases, which are
  added with their nominal (ε, δ);
* zCDP (Bun & Steinke 2016): ρ adds up, ε²/2 for pure ε-DP, Δ²/(2σ²) per coordinate for the
  discrete Gaussian (Canonne, Kamath & Steinke 2020), converted to (ε, δ) with CKS20
  Corollary 13, minimised over α here on a dense grid;
* PLD: Google's ``dp_accounting`` called directly: exact PLDs of discrete Laplace (the
  parameter 1/scale rounded up to the next float, i.e. less noise: the safe side) and discrete
  Gaussian noise (σ rounded down) on a few coordinates with a small σ, otherwise one
  continuous Gaussian PLD of the L2 sensitivity (``gaussian_pld_of``), generic ε-DP PLDs for
  Laplace noise whose sensitivity exceeds 1,024 noise units (lattice sums), composed in
  order and read at δ'.

Every tight rule also reports the basic sum when that is smaller and fits, so its guarantee
is ``min(basic, tight)``; a release is admitted iff the guarantee including it fits the total.
"""

from __future__ import annotations

import functools
import math
import random
import threading
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest
from dp_accounting.pld import common as dp_common
from dp_accounting.pld import privacy_loss_distribution as pld

from pandas_dp import Budget, BudgetExceededError, DPValueError
from pandas_dp.accounting import Accountant, Measurement, Release
from pandas_dp.accounting.composition import (
    AdvancedComposition,
    BasicComposition,
    PLDComposition,
    RhoComposition,
    ZCDPComposition,
    composition_for,
)
from pandas_dp.accounting.events import GaussianMeasurement, LaplaceMeasurement
from pandas_dp.mechanisms.gaussian.discrete import DiscreteGaussian
from pandas_dp.mechanisms.laplace import DiscreteLaplace

TOTAL = Budget.of(1.0, 1e-6)
TIGHT = ("advanced", "zcdp", "pld")
LIMIT = 2_000

# --- releases built by hand ------------------------------------------------------------------


def laplace_count(epsilon: Fraction, extra_delta: Fraction = Fraction(0)) -> Release:
    """A discrete Laplace count (sensitivity 1); ``extra_delta`` as private selection has."""
    mechanism = DiscreteLaplace.calibrated(1, epsilon)
    measurement = LaplaceMeasurement(
        "count", mechanism.name, epsilon, 1, mechanism.effective_scale, extra_delta=extra_delta
    )
    return Release("count", (), (measurement,))


def laplace_sum(epsilon: Fraction) -> Release:
    """A lattice sum: sensitivity 2**34 noise units (beyond the exact Laplace PLD's range)."""
    sensitivity = 2**34
    mechanism = DiscreteLaplace.calibrated(sensitivity, epsilon)
    measurement = LaplaceMeasurement(
        "sum", mechanism.name, epsilon, sensitivity, mechanism.effective_scale, exponent=-34
    )
    return Release("sum", ("x",), (measurement,))


def reference_delta(sigma2: float, epsilon: float, sensitivity: int = 1) -> float:
    """Hockey-stick δ(ε) of discrete Gaussian noise for a shift by ``sensitivity``."""
    half = math.ceil(15 * math.sqrt(sigma2)) + sensitivity + 2
    y = np.arange(-half, half + 1).astype(np.float64)
    weights = np.exp(-(y * y) / (2 * sigma2))
    loss = ((y - sensitivity) ** 2 - y * y) / (2 * sigma2)
    hot = loss > epsilon
    return math.fsum(weights[hot] * -np.expm1(epsilon - loss[hot])) / math.fsum(weights)


def gaussian_count(sigma2: int = 100, delta: Fraction = Fraction(1, 10**7)) -> Release:
    """A discrete Gaussian count with σ² = ``sigma2``, charged for basic composition at
    ``delta`` and the ε this σ buys there (bisection on the exact curve, rounded up)."""
    low, high = 1e-6, 50.0
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (low, mid) if reference_delta(sigma2, mid) <= delta else (mid, high)
    epsilon = Fraction(high).limit_denominator(10**9) + Fraction(1, 10**9)
    mechanism = DiscreteGaussian(Fraction(sigma2))
    measurement = GaussianMeasurement(
        "count", mechanism.name, epsilon, 1, mechanism.scale, delta=delta,
        sigma2=mechanism.sigma2,
    )  # fmt: skip
    return Release("count", (), (measurement,))


# --- the rules, written from their formulas --------------------------------------------------


def cks_epsilon(rho: float, delta: float) -> float:
    """CKS20 Cor. 13 minimised over α on a dense log grid, or Bun & Steinke's simple bound.

    The grid has α - 1 from e^-25 to e^25 in steps of 0.001 in log space: the minimum over
    it exceeds the true one by (0.0005)²/2 ≈ 1.3e-7 relative at most (the second derivative
    in log(α - 1) is about the value itself at the minimum)."""
    if rho <= 0:
        return 0.0
    a1 = np.exp(np.arange(-25, 25, 0.001))
    alpha = a1 + 1
    values = alpha * rho + (math.log(1 / delta) + alpha * np.log1p(-1 / alpha) - np.log(a1)) / a1
    return min(float(values.min()), rho + 2 * math.sqrt(rho * math.log(1 / delta)))


def advanced_epsilon(measurements: Sequence[Measurement], delta: float) -> float:
    pure = [float(Fraction(m.sensitivity) / m.scale) for m in measurements if not m.is_gaussian]
    gaussian = [m for m in measurements if m.is_gaussian]
    slack = delta - sum(float(m.delta) for m in gaussian)
    if slack <= 0:
        return math.inf
    drift = sum(e * math.tanh(e / 2) for e in pure)
    spread = math.sqrt(2 * math.log(1 / slack) * sum(e * e for e in pure))
    return sum(float(m.epsilon) for m in gaussian) + min(sum(pure), drift + spread)


def rho_of(m: Measurement) -> Fraction:
    if m.is_gaussian:
        assert m.sigma2 is not None
        return Fraction(m.coordinates * m.sensitivity**2) / (2 * m.sigma2)
    return (Fraction(m.sensitivity) / m.scale) ** 2 / 2


def zcdp_epsilon(measurements: Sequence[Measurement], delta: float) -> float:
    distinct = set(measurements)
    rho = sum((rho_of(m) * measurements.count(m) for m in distinct), Fraction(0))
    return cks_epsilon(float(rho), delta)


def smallest_float_at_least(x: Fraction) -> float:
    """The safe float for a Laplace parameter or an ε: never below the exact value."""
    candidate = float(x)
    return candidate if Fraction(candidate) >= x else math.nextafter(candidate, math.inf)


def largest_sigma_at_most(sigma2: Fraction) -> float:
    """The safe float σ: its square never exceeds the exact σ²."""
    candidate = math.sqrt(sigma2)
    return candidate if Fraction(candidate) ** 2 <= sigma2 else math.nextafter(candidate, 0.0)


def smoothing_log_ratio(b: float) -> float:
    """``ln((1 + β)/(1 - β))``, ``β = 2q/(1 - q)``, ``q = exp(-2π² b²)``."""
    q = math.exp(-2 * math.pi**2 * b * b)
    beta = 2 * q / (1 - q)
    return math.log1p(beta) - math.log1p(-beta)


@functools.cache
def gaussian_pld_of(m: Measurement) -> tuple[Any, float]:
    """Discrete Gaussian noise: the exact PLD self-composed per coordinate for at most 16
    coordinates and a support (24σ + 2Δ + 5 points) of at most 2**16; otherwise one continuous
    Gaussian PLD of the L2 sensitivity sqrt(c)Δ and σ² - b², within a pointwise factor R per
    moved coordinate: ``ln R = c Δ² ln((1+β)/(1-β))``, b the first of 1, 1.25, 1.5, 2, 2.5,
    3, 4 (at most σ/2) with ``ln R <= 1e-10``."""
    assert m.sigma2 is not None
    sigma = math.sqrt(m.sigma2)
    support = 2 * (12 * sigma + m.sensitivity + 2) + 1
    if m.coordinates <= 16 and support <= 2**16:
        one = pld.from_discrete_gaussian_mechanism(
            largest_sigma_at_most(m.sigma2), sensitivity=m.sensitivity
        )
        return (one.self_compose(m.coordinates) if m.coordinates > 1 else one), 0.0
    moved = m.coordinates * m.sensitivity**2
    usable = [b for b in (1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0) if b <= sigma / 2]
    b = next((b for b in usable if moved * smoothing_log_ratio(b) <= 1e-10), usable[-1])
    l2 = math.sqrt(moved)
    if Fraction(l2) ** 2 < moved:
        l2 = math.nextafter(l2, math.inf)
    one = pld.from_gaussian_mechanism(
        largest_sigma_at_most(m.sigma2 - Fraction(b) ** 2), sensitivity=l2
    )
    return one, moved * smoothing_log_ratio(b)


@functools.cache
def pld_of(m: Measurement) -> Any:
    if m.is_gaussian:
        return gaussian_pld_of(m)[0]
    if m.sensitivity <= 1024:
        parameter = smallest_float_at_least(1 / m.scale)
        return pld.from_discrete_laplace_mechanism(parameter, sensitivity=m.sensitivity)
    epsilon = smallest_float_at_least(Fraction(m.sensitivity) / m.scale)
    return pld.from_privacy_parameters(dp_common.DifferentialPrivacyParameters(epsilon, 0.0))


#: Recent compositions by prefix, so that checking a sequence one release at a time costs
#: one composition per step (each step extends a recent prefix by one release).
_recent_plds: dict[tuple[Measurement, ...], Any] = {}


def pld_epsilon(measurements: Sequence[Measurement], delta: float) -> float:
    key = tuple(measurements)
    if not key:
        return 0.0
    if key[:-1] in _recent_plds:
        previous = _recent_plds[key[:-1]]
        composed = pld_of(key[-1]) if previous is None else previous.compose(pld_of(key[-1]))
    else:
        composed = None
        for m in measurements:
            composed = pld_of(m) if composed is None else composed.compose(pld_of(m))
    _recent_plds[key] = composed
    while len(_recent_plds) > 4:  # keep memory flat: drop the oldest
        del _recent_plds[next(iter(_recent_plds))]
    ratio = sum(gaussian_pld_of(m)[1] for m in measurements if m.is_gaussian)
    return float(composed.get_epsilon_for_delta(delta * math.exp(-ratio))) + 2 * ratio


RULES: dict[str, Callable[[Sequence[Measurement], float], float]] = {
    "advanced": advanced_epsilon,
    "zcdp": zcdp_epsilon,
    "pld": pld_epsilon,
}


def expected_spent(accounting: str, releases: Sequence[Release], total: Budget) -> Budget:
    """The guarantee the rule states for ``releases`` (floats inside exact Fractions)."""
    return candidates(accounting, releases, total)[0]


def candidates(accounting: str, releases: Sequence[Release], total: Budget) -> list[Budget]:
    """The rule's guarantee first; when basic and tight ε tie to 1e-9 relative (e.g. the
    advanced bound falls back to Σ ε_i), either report is right, so both are listed."""
    basic = Budget(Fraction(0))
    for release in releases:
        basic = basic + release.cost
    if accounting == "basic":
        return [basic]
    measurements = [m for r in releases for m in r.measurements]
    explicit = sum((m.extra_delta for m in measurements), Fraction(0))
    room = float(total.delta - explicit)
    tight_epsilon = RULES[accounting](measurements, room) if room > 0 else math.inf
    tight = Budget(
        Fraction(tight_epsilon) if math.isfinite(tight_epsilon) else Fraction(10**9), explicit
    )
    basic_fits = basic.delta <= total.delta
    if basic_fits and math.isclose(basic.epsilon, tight_epsilon, rel_tol=1e-9):
        return [basic, tight]
    return [basic] if basic_fits and basic.epsilon <= tight_epsilon else [tight]


def fits(spent: Budget, total: Budget) -> bool:
    return spent.epsilon <= total.epsilon and spent.delta <= total.delta


def matches(spent: Budget, wanted: list[Budget]) -> bool:
    return any(
        spent.delta == w.delta and math.isclose(spent.epsilon, w.epsilon, rel_tol=1e-6)
        for w in wanted
    )


def admitted(accounting: str, release: Release, total: Budget = TOTAL) -> int:
    accountant = Accountant(total, composition_for(total, accounting))
    for k in range(LIMIT):
        try:
            accountant.charge(release)
        except BudgetExceededError:
            return k
    return LIMIT


def expected_admitted(accounting: str, release: Release, total: Budget = TOTAL) -> int:
    """How many copies of ``release`` the rule admits, one copy at a time."""
    (m,) = release.measurements
    delta = float(total.delta)
    if accounting == "pld":  # compose in order, as the accountant does (rounding differs)
        one, composed, k = pld_of(m), None, 0
        while True:
            nxt = one if composed is None else composed.compose(one)
            basic = release.cost * (k + 1)
            if not (fits(basic, total) or nxt.get_epsilon_for_delta(delta) <= total.epsilon):
                return k
            composed, k = nxt, k + 1
    assert m.extra_delta == 0

    def ok(k: int) -> bool:  # k copies fit: the basic sum does, or the tight bound does
        if fits(release.cost * k, total):
            return True
        return accounting != "basic" and RULES[accounting]([m] * k, delta) <= total.epsilon

    low, high = 0, LIMIT  # every rule grows with k: bisect for the last k that fits
    assert not ok(high)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if ok(mid) else (low, mid)
    return low


# --- the rules, release by release -----------------------------------------------------------


def mixed_releases(seed: int, n: int) -> list[Release]:
    """Many Laplace counts and sums at tiny ε (where advanced composition pays), a few
    Gaussian counts (where zCDP and PLD pay), and one count with explicit δ."""
    rng = random.Random(seed)
    gaussians = [
        gaussian_count(10_000, Fraction(1, 10**8)),
        gaussian_count(40_000, Fraction(1, 10**8)),
    ]
    out: list[Release] = []
    for i in range(n):
        roll = rng.random()
        if i == 3:
            out.append(laplace_count(Fraction(1, 500), extra_delta=Fraction(1, 10**7)))
        elif roll < 0.03:
            out.append(rng.choice(gaussians))
        elif roll < 0.25:
            out.append(laplace_sum(Fraction(rng.choice([1, 2]), 1000)))
        else:
            out.append(laplace_count(Fraction(rng.choice([1, 2, 3]), 1000)))
    return out


@pytest.mark.parametrize("accounting", ["basic", *TIGHT])
def test_each_rule_admits_exactly_what_its_formula_says(accounting: str) -> None:
    # Release by release, a mixed sequence against a small budget: the accountant admits a
    # release iff the formula's guarantee including it fits, and then reports exactly that
    # guarantee; it is never above basic composition's.
    total = Budget.of(0.1, 1e-6)
    accountant = Accountant(total, composition_for(total, accounting))
    basic = Accountant(Budget.of(10**6, 0.5))
    charged: list[Release] = []
    refusals = 0
    for release in mixed_releases(seed=11, n=200):
        wanted = candidates(accounting, [*charged, release], total)
        try:
            accountant.charge(release)
        except BudgetExceededError:
            refusals += 1
            assert not any(fits(w, total) for w in wanted), f"refused; the rule gives {wanted}"
            continue
        assert any(fits(w, total) for w in wanted), f"admitted; the rule gives {wanted}"
        charged.append(release)
        basic.charge(release)
        spent = accountant.spent
        assert matches(spent, wanted), f"reports {spent}; the rule gives {wanted}"
        assert spent.epsilon <= basic.spent.epsilon
        assert spent.delta <= basic.spent.delta
    assert refusals > 0
    assert len(charged) > 10
    assert len(accountant.entries) == len(charged)


#: Releases admitted by (ε = 1, δ = 1e-6), as in benchmarks/bench_accounting.py.
COMPARISON = {
    "basic": (10, 100, 2),
    "advanced": (10, 349, 2),
    "zcdp": (10, 487, 4),
    "pld": (10, 562, 5),
}


@pytest.mark.parametrize("accounting", list(COMPARISON))
def test_comparison_numbers(accounting: str) -> None:
    releases = (laplace_count(Fraction(1, 10)), laplace_count(Fraction(1, 100)), gaussian_count())
    counts = tuple(admitted(accounting, r) for r in releases)
    assert counts == tuple(expected_admitted(accounting, r) for r in releases)
    assert counts == COMPARISON[accounting]


def test_tight_rules_admit_more_and_pld_most() -> None:
    laplace = [COMPARISON[a][1] for a in ("basic", "advanced", "zcdp", "pld")]
    assert laplace == sorted(laplace)
    assert len(set(laplace)) == 4
    assert COMPARISON["pld"][2] > COMPARISON["zcdp"][2] > COMPARISON["basic"][2]


def test_pld_never_admits_more_than_the_exact_mechanism_allows() -> None:
    # The Laplace parameter is rounded up only when the float falls below the exact 1/scale
    # (safe side), so the accountant admits as many ε = 0.01 counts as the PLD of the exact
    # parameter (pessimistic discretisation, an upper bound on the true ε): 562. Nudging
    # 0.01 up by one ulp regardless would move every loss to the next 1e-4 step (531).
    exact = pld.from_discrete_laplace_mechanism(0.01, sensitivity=1)
    composed, k = exact, 1
    while composed.get_epsilon_for_delta(1e-6) <= 1.0:
        composed, k = composed.compose(exact), k + 1
    assert COMPARISON["pld"][1] == k - 1


def test_explicit_delta_shrinks_the_room_of_tight_rules() -> None:
    # Private key selection spends δ under every rule; what is left converts the rest.
    for accounting in TIGHT:
        accountant = Accountant(TOTAL, composition_for(TOTAL, accounting))
        accountant.charge(laplace_count(Fraction(1, 100), extra_delta=Fraction(999, 10**9)))
        assert accountant.spent.delta == Fraction(999, 10**9)
        with pytest.raises(BudgetExceededError):  # δ' = 1e-9 left: any more δ is refused
            accountant.charge(laplace_count(Fraction(1, 100), extra_delta=Fraction(2, 10**9)))
        accountant.charge(laplace_count(Fraction(1, 100)))
        assert len(accountant.entries) == 2


def test_tight_rules_need_a_delta() -> None:
    frame = pd.DataFrame({"x": [1.0, 2.0]})
    for accounting in TIGHT:
        with pytest.raises(DPValueError, match="delta > 0"):
            frame.dp.protect(epsilon=1.0, accounting=accounting)
    with pytest.raises(DPValueError, match="accounting"):
        frame.dp.protect(epsilon=1.0, delta=1e-6, accounting="renyi")
    with pytest.raises(DPValueError, match="rho"):
        frame.dp.protect(rho=0.5, accounting="pld")


def test_composition_for_picks_the_rule() -> None:
    assert isinstance(composition_for(TOTAL, "basic"), BasicComposition)
    assert isinstance(composition_for(TOTAL, "advanced"), AdvancedComposition)
    assert isinstance(composition_for(TOTAL, "zcdp"), ZCDPComposition)
    assert isinstance(composition_for(TOTAL, "pld"), PLDComposition)
    for accounting in ("basic", "zcdp"):
        assert isinstance(composition_for(Budget.of_rho(0.5), accounting), RhoComposition)


# --- threads ---------------------------------------------------------------------------------


@pytest.mark.parametrize("accounting", TIGHT)
def test_tight_accountants_are_thread_safe(accounting: str) -> None:
    # 32 threads released at once by a barrier, each charging ε = 0.01 counts until refused:
    # together they get exactly the sequential number, never one more.
    accountant = Accountant(TOTAL, composition_for(TOTAL, accounting))
    release = laplace_count(Fraction(1, 100))
    barrier = threading.Barrier(32)
    successes: list[int] = []
    lock = threading.Lock()

    def worker() -> None:
        mine = 0
        barrier.wait()
        while True:
            try:
                accountant.charge(release)
            except BudgetExceededError:
                break
            mine += 1
        with lock:
            successes.append(mine)

    threads = [threading.Thread(target=worker) for _ in range(32)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    expected = COMPARISON[accounting][1]
    assert sum(successes) == len(accountant.entries) == expected
    assert [e.sequence for e in accountant.entries] == list(range(1, expected + 1))
    assert TOTAL.covers(accountant.spent)


def test_public_api_race_under_zcdp(census: pd.DataFrame) -> None:
    # The same race through priv.dp.count (the OS CSPRNG: nothing is asserted about values).
    priv = census.dp.protect(epsilon=1.0, delta=1e-6, accounting="zcdp")
    expected = expected_admitted("zcdp", laplace_count(Fraction(1, 50)))
    assert expected > 50  # more than basic composition would allow
    barrier = threading.Barrier(32)
    results: list[int] = []
    lock = threading.Lock()

    def worker() -> None:
        barrier.wait()
        while True:
            try:
                value = priv.dp.count(epsilon=0.02)
            except BudgetExceededError:
                return
            with lock:
                results.append(value)

    threads = [threading.Thread(target=worker) for _ in range(32)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    session = priv.dp.session
    assert len(results) == len(session.releases) == expected
    assert session.total.covers(session.spent)


# --- ρ budgets -------------------------------------------------------------------------------


def test_rho_budget_charges_exact_rho(census: pd.DataFrame, protect_seeded) -> None:
    priv = protect_seeded(census, rho=0.5)
    session = priv.dp.session
    assert session.accounting == "zcdp"
    assert session.total == Budget.of_rho(0.5)
    priv.dp.count(epsilon=0.5)  # pure ε-DP costs ε²/2
    assert session.spent.rho == Fraction(1, 8)
    priv.dp.count(epsilon=0.5, mechanism="gaussian")  # priced in ρ too: ε²/2, no δ (issue 24)
    gaussian = session.releases[-1].measurements[0]
    assert gaussian.is_gaussian
    assert gaussian.sensitivity == 1
    assert gaussian.sigma2 is not None
    expected = Fraction(1, 8) + 1 / (2 * gaussian.sigma2)  # Δ²/(2σ²) with the exact σ²
    assert gaussian.sigma2 == 4  # calibrated from ρ = 0.5²/2 exactly
    assert session.spent.rho == expected
    # A Gaussian sum on a coarser lattice: Δ is the planned sensitivity in noise units.
    priv.dp.sum("age", bounds=(0, 100), epsilon=0.5, mechanism="gaussian")
    shifted = session.releases[-1].measurements[0]
    assert shifted.sigma2 is not None
    assert shifted.sensitivity > 64
    expected += Fraction(shifted.sensitivity**2) / (2 * shifted.sigma2)
    assert session.spent.rho == expected
    assert session.spent.epsilon == 0
    assert session.spent.delta == 0
    assert session.remaining.rho == Fraction(1, 2) - expected


def test_rho_budget_fills_exactly_and_refuses_beyond(census: pd.DataFrame, protect_seeded):
    priv = protect_seeded(census, rho=0.5)
    for _ in range(4):
        priv.dp.count(epsilon=0.5)  # 4 × 1/8 = 1/2 exactly
    assert priv.dp.session.remaining.rho == 0
    with pytest.raises(BudgetExceededError):
        priv.dp.count(epsilon=1e-9)
    assert len(priv.dp.session.releases) == 4


def test_rho_budget_refuses_private_key_selection(census: pd.DataFrame, protect_seeded):
    priv = protect_seeded(census, rho=0.5)
    with pytest.raises(DPValueError):
        priv.dp.groupby("sex").count(epsilon=0.1)
    with pytest.raises(DPValueError):
        priv.dp.groupby("sex").count(epsilon=0.1, delta=1e-6)
    # ... and the accountant itself refuses explicit δ under a ρ budget.
    accountant = Accountant(Budget.of_rho(0.5), composition_for(Budget.of_rho(0.5), "basic"))
    with pytest.raises(DPValueError, match="ρ"):
        accountant.charge(laplace_count(Fraction(1, 10), extra_delta=Fraction(1, 10**7)))
    assert priv.dp.session.spent.rho == 0
    assert accountant.entries == ()


def test_pure_epsilon_session_refuses_gaussian_noise(census: pd.DataFrame, protect_seeded):
    priv = protect_seeded(census, epsilon=1.0)
    with pytest.raises(DPValueError, match="δ"):
        priv.dp.count(epsilon=0.5, mechanism="gaussian")
    with pytest.raises(DPValueError, match="δ"):
        priv.dp.count(epsilon=0.5, mechanism="gaussian", delta=1e-6)
    with pytest.raises(DPValueError, match="δ"):
        priv.dp.groupby("sex", keys=[1, 2]).count(epsilon=0.5, mechanism="gaussian", delta=1e-6)
    assert priv.dp.session.spent == Budget(Fraction(0))
    assert len(priv.dp.session.ledger) == 0


# --- group-by releases compose in parallel ---------------------------------------------------

BUDGETS = [
    {"epsilon": 1.0, "delta": 1e-6, "accounting": a} for a in ("basic", *TIGHT)
] + [{"rho": 0.5}]  # fmt: skip


@pytest.mark.parametrize("budget", BUDGETS, ids=lambda b: b.get("accounting", "rho"))
@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
def test_groupby_is_one_event_per_measurement(census, protect_seeded, budget, mechanism):
    gaussian: dict = {"mechanism": "gaussian"} if mechanism == "gaussian" else {}
    if gaussian and "rho" not in budget:  # a ρ session prices Gaussian noise in ρ, no δ
        gaussian["delta"] = 1e-7
    keys = list(range(20))
    grouped = protect_seeded(census, **budget)
    grouped.dp.groupby("age", keys=keys).count(epsilon=0.1, **gaussian)
    grouped.dp.groupby("age", keys=keys).agg(
        n="count", total=("income", "sum"), bounds={"income": (0, 10**5)}, epsilon=0.2,
        **gaussian,
    )  # fmt: skip
    single = protect_seeded(census, **budget)
    single.dp.count(epsilon=0.1, **gaussian)
    single.dp.groupby("age", keys=[0]).agg(
        n="count", total=("income", "sum"), bounds={"income": (0, 10**5)}, epsilon=0.2,
        **gaussian,
    )  # fmt: skip
    releases = grouped.dp.session.releases
    assert [len(r.measurements) for r in releases] == [1, 2]
    assert [r.groups for r in releases] == [20, 20]
    assert all(r.composition == "parallel" for r in releases)
    assert all(m.coordinates == 1 for r in releases for m in r.measurements)
    # Twenty groups cost what one group (or an ungrouped release) costs.
    assert grouped.dp.session.spent == single.dp.session.spent


# --- the ledger is enough to recompute the guarantee -----------------------------------------


def spend_a_mixture(priv: pd.DataFrame) -> None:
    # A ρ session prices Gaussian noise in ρ (no δ); an (ε, δ) session takes a δ.
    delta = {} if priv.dp.session.total.is_zcdp else {"delta": 1e-8}
    priv.dp.count(epsilon=0.05)
    priv.dp.count(epsilon=0.1, mechanism="gaussian", **delta)
    priv.dp.sum("income", bounds=(0, 10**5), epsilon=0.05)
    priv.dp.sum("age", bounds=(0, 100), epsilon=0.1, mechanism="gaussian", **delta)
    priv.dp.mean("age", bounds=(0, 100), epsilon=0.05)
    priv.dp.groupby("sex", keys=[1, 2]).count(epsilon=0.05, mechanism="gaussian", **delta)
    for _ in range(10):
        priv.dp.groupby("educ", keys=list(range(1, 17))).count(epsilon=0.01)


@pytest.mark.parametrize("accounting", ["basic", *TIGHT])
def test_spent_is_recomputable_from_the_ledger(census, protect_seeded, accounting) -> None:
    priv = protect_seeded(census, epsilon=1.0, delta=1e-6, accounting=accounting)
    spend_a_mixture(priv)
    session = priv.dp.session
    assert session.accounting == accounting
    wanted = candidates(accounting, session.releases, session.total)
    assert matches(session.spent, wanted), f"{session.spent}; recomputed {wanted}"
    basic = expected_spent("basic", session.releases, session.total)
    assert session.spent.epsilon <= basic.epsilon
    if accounting in ("zcdp", "pld"):  # Gaussian noise is where these rules pay off
        assert session.spent.epsilon < basic.epsilon
    # The ledger table agrees with the records.
    ledger = session.ledger
    assert len(ledger) == len(session.releases) == 16
    assert ledger["epsilon"].sum() == pytest.approx(
        float(sum(r.cost.epsilon for r in session.releases))
    )


def test_rho_ledger_sums_to_spent(census, protect_seeded) -> None:
    priv = protect_seeded(census, rho=0.5)
    spend_a_mixture(priv)
    releases = priv.dp.session.releases
    total = sum((rho_of(m) for r in releases for m in r.measurements), Fraction(0))
    assert priv.dp.session.spent.rho == total
