"""Coverage of the confidence intervals (``ci=0.95``) of every mechanism.

What is checked. A release with ``ci=1 - α`` claims that its interval contains the exact
statistic (the clipped count, sum or mean of the *real* values, before any lattice rounding)
with probability at least ``1 - α``. We release many times and count how often it does.

Two paths, for two purposes:

* **Public API, seeded.** ``protect_seeded`` with a huge budget (ε = 1e6, δ = 0.9) and the
  same release repeated many times in one session, each at ε = 0.5: this exercises exactly
  what users run (planner, engine, rounding, noise, interval post-processing). Grouped
  releases over 20 public keys give 20 independent intervals per call (each group gets its
  own noise draw). Each path costs about a millisecond per release, so it gives a few
  thousand intervals: enough to catch a broken interval, not to pin the coverage down.
* **Vectorised, through the planner's own Parts.** A release is ``r0 + 2**e · Z`` where
  ``r0`` is the release with zero noise (obtained with the ``noise`` fixture: exact lattice
  sum, rounded to the noise lattice) and ``Z`` one draw of the Part's mechanism; its interval
  is ``r ± Part.halfwidth(α)`` (``ratio_interval`` on the two Parts for a mean). We rebuild
  the Parts with ``count_part`` / ``sum_part`` exactly as the planner does, check that they
  are the ones the release used (same mechanism object, same half-width as the released
  interval), and draw 10^6 variates at once. This gives coverage to ±0.0011 (5 sd), where
  the exact coverage of counts and sums is also computed here from the noise's pmf.

Tolerances. With ``m`` independent intervals of true coverage ``p >= 1 - α``, the observed
coverage has sd ``sqrt(p (1 - p) / m)``; we accept down to ``1 - α - 5 sd`` (one-sided normal
tail 2.9e-7; the seeds are fixed, so the outcome is deterministic), and require the observed
coverage to lie within 5 sd of the exact one where that is known.

"Not grossly more". A count's interval is ``±k`` with ``k`` the smallest integer with
``P(|Z| > k) <= α``, so its coverage ``1 - P(|Z| > k)`` is below ``1 - α + P(|Z| = k)`` (the
discreteness of the noise); sums add a rounding allowance of ``2**32 · g/2`` (about
``max(Δ, b)/16`` or less), which adds at most a few tenths of a percent. Both stay far below
0.995, which is asserted. Means: the interval is conservative by construction (a union bound
over two parts, then the worst corner of a box): its measured coverage is documented below
and asserted to be at most 0.9999 and at most 3 times as wide as a plug-in interval.

Measured (vectorised, 10^6 draws; exact value from the pmf in brackets): Laplace count
0.9627 (0.96241), Laplace sum 0.9514 (0.95154), Laplace mean 0.9776, Gaussian count 0.9595
(0.95967), Gaussian sum 0.9509 (0.95090); mean width / plug-in width 1.26. Public API
(1,000 or 600 releases): 0.959, 0.954, 0.965, 0.953, 0.953; grouped (200 calls × 20 groups):
Laplace count 0.957, sum 0.951, mean 0.978; Gaussian count 0.956, sum 0.953; Gaussian count
with two groups per person (zCDP calibration) 0.952 (public API), 0.9544 (vectorised).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

from pandas_dp.mechanisms.accuracy import ratio_interval
from pandas_dp.mechanisms.gaussian.discrete import DiscreteGaussian
from pandas_dp.mechanisms.laplace import DiscreteLaplace
from pandas_dp.mechanisms.random import SeededRandomSource
from pandas_dp.planning.measurement.parts import NoiseChoice, Part, count_part, sum_part
from pandas_dp.units import Contribution

pytestmark = pytest.mark.statistical

ALPHA = 0.05
CI = 1 - ALPHA
EPSILON = 0.5
DELTA = 1e-6
BOUNDS = (0.0, 2.0)
GROUPS = 20
ROWS = 1000
N_VECTOR = 1_000_000
Z_MAX = 5.0
GAUSSIAN = {"mechanism": "gaussian", "delta": DELTA}


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    """1,000 rows, 20 groups of 50; x spreads over (-0.5, 2.5), so some rows are clipped,
    and its values are arbitrary doubles, so every row is rounded onto the lattice."""
    rng = np.random.default_rng(20240601)
    return pd.DataFrame(
        {"x": rng.uniform(-0.5, 2.5, ROWS), "g": np.repeat(np.arange(GROUPS), ROWS // GROUPS)}
    )


def truth(frame: pd.DataFrame) -> dict[str, float]:
    """The exact clipped statistics, from the real values (math.fsum: correctly rounded)."""
    clipped = np.clip(frame["x"].to_numpy(), *BOUNDS)
    total = math.fsum(clipped)
    return {"count": float(len(frame)), "sum": total, "mean": total / len(frame)}


def group_truths(frame: pd.DataFrame) -> dict[str, np.ndarray]:
    per_group = [truth(part) for _, part in frame.groupby("g", sort=True)]
    return {k: np.array([t[k] for t in per_group]) for k in ("count", "sum", "mean")}


def lower_limit(m: int) -> float:
    """Smallest acceptable coverage over ``m`` intervals: 1 - α - 5 sd."""
    return CI - Z_MAX * math.sqrt(ALPHA * (1 - ALPHA) / m)


def check(covered: np.ndarray, exact: float | None = None, ceiling: float = 0.995) -> float:
    m = covered.size
    rate = float(np.mean(covered))
    assert rate >= lower_limit(m), f"coverage {rate:.4f} over {m} intervals"
    assert rate <= ceiling, f"coverage {rate:.4f} is grossly above {CI}"
    if exact is not None:
        assert exact >= CI
        sd = math.sqrt(exact * (1 - exact) / m)
        assert abs(rate - exact) <= Z_MAX * sd, f"coverage {rate:.5f}, exact {exact:.5f}"
    return rate


# --- exact coverage of integer noise, from the pmf ---------------------------------------------


def laplace_interval_probability(scale: Fraction, low: int, high: int) -> float:
    """P(low <= Z <= high) for discrete Laplace noise ``P(z) ∝ exp(-|z|/scale)``."""
    a = 1 / float(scale)
    q, one_minus_q = math.exp(-a), -math.expm1(-a)

    def cdf(z: int) -> float:  # P(Z <= z) = q^-z/(1+q) for z < 0, 1 - q^(z+1)/(1+q) else
        if z < 0:
            return math.exp(z * a) / (1 + q)
        return 1 - math.exp(-(z + 1) * a) / (1 + q)

    assert one_minus_q > 0
    return cdf(high) - cdf(low - 1)


def gaussian_interval_probability(sigma2: Fraction, low: int, high: int) -> float:
    s2 = float(sigma2)
    half = math.ceil(15 * math.sqrt(s2)) + 2
    y = np.arange(-half, half + 1)
    weights = np.exp(-(y.astype(np.float64) ** 2) / (2 * s2))
    inside = (y >= low) & (y <= high)
    return math.fsum(weights[inside]) / math.fsum(weights)


def exact_coverage(part: Part, offset: float) -> float:
    """P(|offset + 2**e Z| <= halfwidth): ``offset`` is the zero-noise release minus the truth."""
    step = math.ldexp(1.0, part.exponent)
    width = part.halfwidth(ALPHA)
    low, high = math.ceil((-width - offset) / step), math.floor((width - offset) / step)
    mechanism = part.mechanism
    if isinstance(mechanism, DiscreteLaplace):
        return laplace_interval_probability(mechanism.effective_scale, low, high)
    assert isinstance(mechanism, DiscreteGaussian)
    return gaussian_interval_probability(mechanism.sigma2, low, high)


# --- the Parts the planner builds, checked against a real release ------------------------------


def planned(how: str, gaussian: bool) -> tuple[Part, ...]:
    """The Parts of an ungrouped release at ε = 0.5, built as ``aggregation._build`` does."""
    noise = NoiseChoice()
    if gaussian:
        shares = 2 if how == "mean" else 1
        noise = NoiseChoice(gaussian=True, delta=Fraction(str(DELTA)) / shares)
    eps = Fraction(str(EPSILON))
    if how == "count":
        return (count_part(eps, noise=noise),)
    if how == "sum":
        return (sum_part("x", BOUNDS, eps, noise=noise),)
    half = eps / 2
    centred = sum_part("x", BOUNDS, half, centered=True, label="centred_sum", noise=noise)
    return centred, count_part(half, "x", "count(x)", noise=noise)


def release(priv: pd.DataFrame, how: str, gaussian: bool) -> Any:
    extra = GAUSSIAN if gaussian else {}
    if how == "count":
        return priv.dp.count(epsilon=EPSILON, ci=CI, **extra)
    method = getattr(priv.dp, how)
    return method("x", bounds=BOUNDS, epsilon=EPSILON, ci=CI, **extra)


def zero_noise_release(priv, noise, how: str, gaussian: bool) -> tuple[Any, tuple[Part, ...]]:
    """The release with all noise 0, after checking the planner used exactly our Parts."""
    parts = planned(how, gaussian)
    with noise(priv, value=0) as calls:
        result = release(priv, how, gaussian)
    assert [c.mechanism for c in calls] == [p.mechanism for p in parts]
    if how != "mean":
        assert result.upper - result.value == parts[0].halfwidth(ALPHA)
        assert result.value - result.lower == parts[0].halfwidth(ALPHA)
    return result, parts


def vectorised_covered(
    how: str, parts: tuple[Part, ...], zero: Any, exact: dict[str, float], seed: int
) -> np.ndarray:
    """Coverage indicators of N_VECTOR releases drawn at once."""
    draws = [
        np.ldexp(p.mechanism.sample(N_VECTOR, SeededRandomSource(seed + i)), p.exponent)
        for i, p in enumerate(parts)
    ]
    if how != "mean":
        values = zero.value + draws[0]
        width = parts[0].halfwidth(ALPHA)
        return np.abs(values - exact[how]) <= width
    centred, count = parts
    assert centred.lattice is not None
    centre = centred.lattice.to_real(centred.lattice.offset)
    noisy_sum = zero_centred_sum(zero, centre, exact) + draws[0]
    noisy_count = exact["count"] + draws[1]
    lower, upper = ratio_interval(
        noisy_sum, centred.halfwidth(ALPHA / 2), noisy_count, count.halfwidth(ALPHA / 2),
        (BOUNDS[0] - centre, BOUNDS[1] - centre),
    )  # fmt: skip
    target = exact["mean"] - centre
    return (lower <= target) & (target <= upper)


def zero_centred_sum(zero: Any, centre: float, exact: dict[str, float]) -> float:
    """The centred lattice sum a zero-noise mean release used: its value is
    ``centre + S0 / n`` (n exact with zero noise), so ``S0 = (value - centre) n``."""
    return (zero.value - centre) * exact["count"]


# --- public API, ungrouped ---------------------------------------------------------------------

UNGROUPED = [
    ("count", False, 1000),
    ("sum", False, 1000),
    ("mean", False, 600),
    ("count", True, 600),
    ("sum", True, 600),
]


IDS = [f"{how}-{'gauss' if gaussian else 'lap'}" for how, gaussian, _ in UNGROUPED]


@pytest.mark.parametrize(("how", "gaussian", "repeats"), UNGROUPED, ids=IDS)
def test_coverage_through_the_public_api(data, protect_seeded, noise, how, gaussian, repeats):
    priv = protect_seeded(data, seed=17, epsilon=1e6, delta=0.9)
    exact = truth(data)
    zero, parts = zero_noise_release(priv, noise, how, gaussian)
    results = [release(priv, how, gaussian) for _ in range(repeats)]
    lower = np.array([r.lower for r in results])
    upper = np.array([r.upper for r in results])
    covered = (lower <= exact[how]) & (exact[how] <= upper)
    if how == "mean":
        rate = check(covered, ceiling=0.9999)
    else:
        rate = check(covered, exact_coverage(parts[0], zero.value - exact[how]))
    print(f"{how} ({'gaussian' if gaussian else 'laplace'}), public API: {rate:.4f}")
    assert all(r.confidence == pytest.approx(CI) for r in results)
    assert len(priv.dp.session.releases) == repeats + 1


# --- vectorised, through the planner's Parts ---------------------------------------------------


@pytest.mark.parametrize(("how", "gaussian"), [(h, g) for h, g, _ in UNGROUPED], ids=IDS)
def test_coverage_vectorised(data, protect_seeded, noise, how, gaussian):
    priv = protect_seeded(data, seed=18, epsilon=10, delta=1e-3)
    exact = truth(data)
    zero, parts = zero_noise_release(priv, noise, how, gaussian)
    covered = vectorised_covered(how, parts, zero, exact, seed=1000)
    if how == "mean":
        rate = check(covered, ceiling=0.9999)
    else:
        expected = exact_coverage(parts[0], zero.value - exact[how])
        rate = check(covered, expected)
        print(f"exact {expected:.5f}")
    print(f"{how} ({'gaussian' if gaussian else 'laplace'}), vectorised: {rate:.5f}")


def test_zero_noise_mean_is_the_lattice_mean(data, protect_seeded, noise):
    # The helper zero_centred_sum relies on this: with zero noise the mean release is
    # centre + S0/n with n the exact count (so S0 is recovered exactly, up to float rounding).
    priv = protect_seeded(data, seed=19, epsilon=10)
    zero, _ = zero_noise_release(priv, noise, "mean", False)
    assert zero.value == pytest.approx(truth(data)["mean"], abs=ROWS * 2.0**-34)


def test_mean_interval_is_not_grossly_wide(data, protect_seeded, noise):
    # Compared with the plug-in interval one would naively use: the noisy mean ± the
    # centred sum's own (1 - α) half-width over the noisy count (treating the count as
    # exact and spending all of α on the sum). The released interval spends α/2 on each
    # part and takes the worst corner, so it is wider; it must stay below 3× (measured 1.26).
    priv = protect_seeded(data, seed=20, epsilon=10)
    zero, (centred, count) = zero_noise_release(priv, noise, "mean", False)
    assert centred.lattice is not None
    centre = centred.lattice.to_real(centred.lattice.offset)
    exact = truth(data)
    rng_sum = np.ldexp(centred.mechanism.sample(100_000, SeededRandomSource(5)), centred.exponent)
    rng_count = count.mechanism.sample(100_000, SeededRandomSource(6)).astype(np.float64)
    sums = zero_centred_sum(zero, centre, exact) + rng_sum
    counts = exact["count"] + rng_count
    lower, upper = ratio_interval(
        sums, centred.halfwidth(ALPHA / 2), counts, count.halfwidth(ALPHA / 2),
        (BOUNDS[0] - centre, BOUNDS[1] - centre),
    )  # fmt: skip
    plug_in = 2 * centred.halfwidth(ALPHA) / np.maximum(counts, 1.0)
    ratio = float(np.mean((upper - lower) / plug_in))
    print(f"mean interval width / plug-in width: {ratio:.3f}")
    assert 1.0 < ratio <= 3.0


# --- public API, grouped -----------------------------------------------------------------------


def grouped_release(priv: pd.DataFrame, gaussian: bool) -> pd.DataFrame:
    extra = GAUSSIAN if gaussian else {}
    named: dict[str, Any] = {"n": "count", "s": ("x", "sum")}
    if not gaussian:
        named["m"] = ("x", "mean")
    return priv.dp.groupby("g", keys=list(range(GROUPS))).agg(
        **named, bounds={"x": BOUNDS}, epsilon=EPSILON, ci=CI, **extra
    )


@pytest.mark.parametrize("gaussian", [False, True], ids=["laplace", "gaussian"])
def test_grouped_coverage_through_the_public_api(data, protect_seeded, gaussian):
    priv = protect_seeded(data, seed=21, epsilon=1e6, delta=0.9)
    exact = group_truths(data)
    repeats = 200
    tables = [grouped_release(priv, gaussian) for _ in range(repeats)]
    stats = {"n": "count", "s": "sum"} if gaussian else {"n": "count", "s": "sum", "m": "mean"}
    for name, how in stats.items():
        lower = np.concatenate([t[f"{name}_lower"].to_numpy() for t in tables])
        upper = np.concatenate([t[f"{name}_upper"].to_numpy() for t in tables])
        target = np.tile(exact[how], repeats)
        covered = (lower <= target) & (target <= upper)
        assert covered.size == repeats * GROUPS
        rate = check(covered, ceiling=0.9999 if how == "mean" else 0.995)
        print(f"grouped {how} ({'gaussian' if gaussian else 'laplace'}): {rate:.4f}")
    # One charge per call, whatever the number of groups.
    assert len(priv.dp.session.releases) == repeats


def test_grouped_gaussian_coverage_under_a_privacy_unit(protect_seeded, noise):
    # Each person has two rows in two different groups and the caps (2 groups, 1 row in
    # each) allow exactly that, so no row is dropped and the truth is the plain group
    # count. Gaussian noise is then calibrated through zCDP for 2 coordinates (a person
    # moves two counts by one each). Planning such a release costs about 50 ms (the zCDP
    # calibration is not cached), so the public API gives only 60 × 20 intervals; the Part
    # it used is then drawn 10^6 times.
    people = 500
    frame = pd.DataFrame(
        {
            "id": np.repeat(np.arange(people), 2),
            "g": np.concatenate([[i % GROUPS, (i + 7) % GROUPS] for i in range(people)]),
        }
    )
    priv = protect_seeded(frame, seed=22, epsilon=1e6, delta=0.9, privacy_unit="id",
                          max_rows_per_unit=2)  # fmt: skip
    exact = frame.groupby("g").size().reindex(range(GROUPS)).to_numpy()

    def grouped() -> pd.DataFrame:
        keys = list(range(GROUPS))
        grouping = priv.dp.groupby("g", keys=keys, max_groups_per_unit=2, max_rows_per_group=1)
        return grouping.count(epsilon=EPSILON, ci=CI, **GAUSSIAN)

    part = count_part(
        Fraction(str(EPSILON)), contribution=Contribution(l1=2, l0=2, linf=1),
        noise=NoiseChoice(gaussian=True, delta=Fraction(str(DELTA))),
    )  # fmt: skip
    with noise(priv, value=0) as calls:
        zero = grouped()
    assert [c.mechanism for c in calls] == [part.mechanism]
    assert (zero["count"].to_numpy() == exact).all()
    assert (zero["count_upper"] - zero["count"] == part.halfwidth(ALPHA)).all()
    (measurement,) = priv.dp.session.releases[0].measurements
    assert measurement.coordinates == 2

    repeats = 60
    tables = [grouped() for _ in range(repeats)]
    lower = np.concatenate([t["count_lower"].to_numpy() for t in tables])
    upper = np.concatenate([t["count_upper"].to_numpy() for t in tables])
    target = np.tile(exact, repeats)
    rate = check((lower <= target) & (target <= upper))
    print(f"grouped count (gaussian, 2 groups per person), public API: {rate:.4f}")

    draws = part.mechanism.sample(N_VECTOR, SeededRandomSource(2000))
    expected = exact_coverage(part, 0.0)
    rate = check(np.abs(draws) <= part.halfwidth(ALPHA), expected)
    print(f"grouped count (gaussian, 2 groups per person), vectorised: {rate:.5f}")
