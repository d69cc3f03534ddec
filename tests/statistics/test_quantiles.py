"""Glue and behaviour of ``.dp.quantile`` and ``.dp.median`` (grouped too).

With the ``noise`` fixture the exponential mechanism picks a best-scoring candidate, so a
release must be a grid edge whose rank (values strictly below it) is closest to ``q n``,
computed independently in ``conftest.py``. Seeded runs check the output distribution
against the exact exponential-mechanism law and the documented rank-error bound.
"""

from __future__ import annotations

import bisect
import math
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from pandas_dp.errors import DPTypeError, DPValueError
from pandas_dp.measures.grids import quantile_candidates
from pandas_dp.mechanisms.exponential import ExponentialMechanism
from pandas_dp.mechanisms.quantile import rank_error

BOUNDS = (0.0, 200_000.0)


@pytest.fixture
def incomes(rng: np.random.Generator) -> pd.DataFrame:
    values = rng.uniform(-20_000, 230_000, 301)
    values[::17] = np.nan
    values[[1, 2, 3, 4]] = [1e9, -50.0, np.inf, -np.inf]
    return pd.DataFrame({"income": values, "region": rng.choice(list("NSEW"), 301)})


def quantiles(priv: pd.DataFrame, path: str, q: Any, **kwargs: Any) -> Any:
    if path == "frame":
        return priv.dp.quantile("income", q, **kwargs)
    return priv["income"].dp.quantile(q, **kwargs)


LEVELS_AND_GRIDS = [
    (0, None), (0.1, 1), (0.25, 7), (0.5, None), (0.5, 65536), (0.9, 1000), (1, None),
    (1, 65536), (0.5, 1), (0.37, 4096), (0.75, 2),
]  # fmt: skip


@pytest.mark.parametrize(("q", "cells"), LEVELS_AND_GRIDS)
@pytest.mark.parametrize("path", ["frame", "series"])
def test_zero_noise_picks_the_edge_whose_rank_is_closest(
    ref, incomes, protect_seeded, noise, path, q, cells
):
    priv = protect_seeded(incomes, epsilon=10)
    with noise(priv, value=0) as calls:
        released = quantiles(priv, path, q, bounds=BOUNDS, epsilon=0.5, cells=cells)
    assert isinstance(released, float)
    grid = 4096 if cells is None else cells
    best = ref.best_edges(incomes["income"].tolist(), BOUNDS, q, grid)
    ref.assert_on_edges(released, best, BOUNDS, grid)
    (call,) = calls
    assert call.size == 1
    # One row moves |rank - q n| by 1 - q (below the edge) or q (above): Δ = max(q, 1 - q).
    sensitivity = ref.quantile_sensitivity(q)
    # Permute-and-flip (a pure-ε session) with the exponential mechanism's weights.
    assert call.mechanism == ExponentialMechanism(
        Fraction(1, 2), sensitivity, monotone=False, flip=True
    )
    # ε / (2Δ): the scores are not monotone.
    assert call.mechanism.rate == ref.quantile_rate(Fraction(1, 2), q) == 1 / (4 * sensitivity)


def test_a_small_example_by_hand(protect_seeded, noise):
    # Grid 0, 4, ..., 40, plus the round values (multiples of 10 and of 2): the candidates are
    # the even numbers. Values 1, 5, 6, 13, 30 (n = 5); candidate c scores
    # max(#{x < c} - q n, q n - #{x <= c}). Ties: the lowest best candidate (argmin).
    data = pd.DataFrame({"x": [1.0, 5.0, 6.0, 13.0, 30.0, np.nan]})
    priv = protect_seeded(data, epsilon=10)

    def quantile(q: float) -> float:
        return priv.dp.quantile("x", q, bounds=(0, 40), epsilon=1, cells=10)

    with noise(priv, value=0):
        assert quantile(0.0) == 0.0  # q n = 0: only 0 has the interval [0, 0]
        assert quantile(0.2) in (2.0, 4.0)  # q n = 1: [1, 1]
        assert quantile(0.5) == 6.0  # q n = 2.5 lies 0.5 deep in 6's interval [2, 3]
        assert 6.0 <= quantile(0.7) <= 30.0  # q n = 3.5: 6-30 all score 0.5 ([2, 3] to [4, 5])
        assert quantile(1.0) in (30.0, 32.0, 34.0, 36.0, 38.0, 40.0)  # q n = 5: score 0
        assert priv.dp.median("x", bounds=(0, 40), epsilon=1, cells=10) == 6.0


def test_levels_release_a_series_indexed_by_q_with_epsilon_split(
    ref, incomes, protect_seeded, noise
):
    levels = [0.9, 0.1, 0.5]  # not sorted: the order is kept
    priv = protect_seeded(incomes, epsilon=10)
    with noise(priv, value=0) as calls:
        released = priv["income"].dp.quantile(levels, bounds=BOUNDS, epsilon=0.6, cells=512)
    assert isinstance(released, pd.Series)
    assert released.name == "income"
    assert list(released.index) == levels
    for q in levels:
        best = ref.best_edges(incomes["income"].tolist(), BOUNDS, q, 512)
        ref.assert_on_edges(released[q], best, BOUNDS, 512)
    each = Fraction(1, 5)  # 0.6 / 3
    assert [c.mechanism.epsilon for c in calls] == [each] * 3
    (record,) = priv.dp.session.releases
    assert record.query == "quantile"
    assert record.cost.epsilon == Fraction(3, 5)
    assert [m.label for m in record.measurements] == [
        "quantile(income, 0.9)",
        "quantile(income, 0.1)",
        "quantile(income, 0.5)",
    ]
    # The ledger's integer sensitivity counts rows (l1 = 1); the "scale" 2Δ/ε of the weights
    # exp(-ε s / (2Δ)) uses the scores' Δ = max(q, 1 - q): 9/10, 9/10 and 1/2 here.
    for m, q in zip(record.measurements, levels, strict=True):
        assert (m.mechanism, m.epsilon, m.sensitivity) == ("permute_and_flip", each, 1)
        assert m.scale == 2 * ref.quantile_sensitivity(q) / each
    assert [m.scale for m in record.measurements] == [9, 9, 5]
    assert [c.mechanism.sensitivity for c in calls] == [Fraction(9, 10)] * 2 + [Fraction(1, 2)]
    assert [share for _, share in record.shares] == [Fraction(1, 3)] * 3
    with noise(priv, value=0):
        frame_form = priv.dp.quantile("income", levels, bounds=BOUNDS, epsilon=0.6, cells=512)
    pd.testing.assert_series_equal(frame_form, released, check_exact=False, rtol=0, atol=0)


def test_missing_values_are_skipped(ref, protect_seeded, noise, rng):
    values = rng.uniform(0, 10, 101)
    with_gaps = np.concatenate([values, [np.nan] * 60])
    rng.shuffle(with_gaps)
    nullable = pd.array(list(with_gaps), dtype="Float64")
    nullable[np.isnan(with_gaps)] = pd.NA
    for data in (values, with_gaps, nullable):
        priv = protect_seeded(pd.DataFrame({"x": data}), epsilon=10)
        with noise(priv, value=0):
            released = priv.dp.quantile("x", [0.25, 0.5], bounds=(0, 10), epsilon=1.0)
        for q in (0.25, 0.5):
            best = ref.best_edges(values.tolist(), (0, 10), q, 4096)
            ref.assert_on_edges(released[q], best, (0, 10), 4096)


def test_grouped_medians(ref, incomes, protect_seeded, noise):
    keys = ["N", "S", "E", "W", "empty"]
    priv = protect_seeded(incomes, epsilon=10)
    with noise(priv, value=0) as calls:
        table = priv.dp.groupby("region", keys=keys).agg(
            med=("income", "median"), bounds={"income": BOUNDS}, epsilon=0.4
        )
    assert list(table.index) == keys
    assert [c.size for c in calls] == [len(keys)]  # one vectorised draw per group
    for key in keys[:-1]:
        rows = incomes.loc[incomes["region"] == key, "income"].tolist()
        ref.assert_on_edges(
            table.loc[key, "med"], ref.best_edges(rows, BOUNDS, 0.5, 4096), BOUNDS, 4096
        )
    # No rows: every edge scores 0; the release is still a grid edge inside the bounds.
    assert BOUNDS[0] <= table.loc["empty", "med"] <= BOUNDS[1]
    (record,) = priv.dp.session.releases
    assert (record.composition, record.groups, record.cost.epsilon) == (
        "parallel",
        5,
        Fraction(2, 5),
    )
    assert [m.label for m in record.measurements] == ["quantile(income, 0.5)"]


# --- arguments -------------------------------------------------------------------------------

BAD_LEVELS = {
    "above one": (1.5, DPValueError),
    "below zero": (-0.1, DPValueError),
    "one bad in a list": ([0.5, 1.01], DPValueError),
    "duplicates": ([0.5, 0.5], DPValueError),
    "equal as numbers": ([0.5, Fraction(1, 2)], DPValueError),
    "empty": ([], DPValueError),
    "string": ("0.5", DPTypeError),
    "strings": (["0.5"], DPTypeError),
    "bool": (True, DPTypeError),
    "bools": ([False, True], DPTypeError),
    "nan": (math.nan, DPValueError),
    "inf in a list": ([0.5, math.inf], DPValueError),
    "none": (None, DPTypeError),
    "set": ({0.5}, DPTypeError),
}


@pytest.mark.parametrize(("q", "error"), BAD_LEVELS.values(), ids=BAD_LEVELS.keys())
def test_bad_levels_are_refused_before_any_charge(incomes, protect_seeded, q, error):
    priv = protect_seeded(incomes, epsilon=10)
    with pytest.raises(error):
        priv["income"].dp.quantile(q, bounds=BOUNDS, epsilon=1.0)
    with pytest.raises(error):
        priv.dp.quantile("income", q, bounds=BOUNDS, epsilon=1.0)
    assert priv.dp.session.releases == ()


@pytest.mark.parametrize(
    ("cells", "error"),
    [(0, DPValueError), (-3, DPValueError), (65537, DPValueError), (10**12, DPValueError),
     (2.0, DPTypeError), ("8", DPTypeError), (True, DPTypeError)],
)  # fmt: skip
def test_cells_limits(incomes, protect_seeded, cells, error):
    priv = protect_seeded(incomes, epsilon=10)
    with pytest.raises(error, match="cells"):
        priv["income"].dp.median(bounds=BOUNDS, epsilon=1.0, cells=cells)
    with pytest.raises(error, match="cells"):
        priv.dp.describe(bounds={"income": BOUNDS}, epsilon=1.0, cells=cells)
    assert priv.dp.session.releases == ()


def test_ci_gives_an_interval_in_every_form(incomes, protect_seeded):
    priv = protect_seeded(incomes, epsilon=10)
    one = priv["income"].dp.quantile(0.5, bounds=BOUNDS, epsilon=1.5, ci=0.9)
    assert one.lower <= one.value <= one.upper
    assert one.confidence == 0.9
    median = priv.dp.median("income", bounds=BOUNDS, epsilon=1.5, ci=0.9)
    assert median.lower <= median.value <= median.upper
    several = priv["income"].dp.quantile([0.25, 0.75], bounds=BOUNDS, epsilon=3.0, ci=0.9)
    assert list(several.index) == [0.25, 0.75]
    assert list(several.columns) == ["income", "income_lower", "income_upper"]
    assert (several["income_lower"] <= several["income"]).all()
    assert (several["income"] <= several["income_upper"]).all()
    grouped = priv.dp.groupby("region", keys=list("NSEW"))
    table = grouped.agg(m=("income", "median"), bounds={"income": BOUNDS}, epsilon=1.5, ci=0.9)
    assert list(table.columns) == ["m", "m_lower", "m_upper"]
    # Each estimate and each end gets a third of its level's ε (a median alone).
    for release, levels in zip(priv.dp.session.releases, (1, 1, 2, 1), strict=True):
        assert [m.epsilon for m in release.measurements] == [
            release.cost.epsilon / (3 * levels)
        ] * (3 * levels)


def test_bounds_are_required_and_checked(incomes, protect_seeded):
    priv = protect_seeded(incomes, epsilon=10)
    for bounds in (None, (5, 1), (0, math.inf), (0, 1, 2)):
        with pytest.raises(DPValueError):
            priv["income"].dp.median(bounds=bounds, epsilon=1.0)
    with pytest.raises(DPTypeError):
        priv["region"].dp.median(bounds=(0, 1), epsilon=1.0)
    assert priv.dp.session.releases == ()


# --- seeded behaviour ------------------------------------------------------------------------


def test_outputs_follow_the_exponential_mechanism_on_a_small_grid(ref, protect_seeded):
    """1,500 seeded releases of the 0.3-quantile on 17 candidates (the 9 grid edges and the
    round halves), against the exact law
    ``P(k) ∝ exp(-ε |rank_k - 0.3 n| / (2Δ))`` with ``Δ = max(0.3, 0.7) = 0.7`` (rate 5/7),
    computed from independently counted ranks.

    χ² with every expected count above 5 (bins merged from the tail), p > 1e-6: a correct
    release fails with probability 1e-6, the seeds are fixed. The same counts must reject two
    mutants, so the test has power both ways: the old calibration ``Δ = 1`` (rate ε/2, too
    much noise: noncentrality ``1500 Σ (p - p_mutant)² / p_mutant`` = 101 on 9 bins, against
    a critical value of 43) and monotone weights (rate ε/Δ = 10/7, a leak: noncentrality
    2,076 on 5 bins, critical value 33). Neither was missed in 20,000 simulated runs.
    """
    values = [0.5, 1.2, 1.3, 2.7, 3.9, 4.1, 4.2, 4.4, 6.6, 7.5, 7.9, np.nan]
    bounds, cells, q, eps, runs = (0.0, 8.0), 8, 0.3, 1.0, 1500
    priv = protect_seeded(pd.DataFrame({"x": values}), seed=21, epsilon=runs)
    released = np.array(
        [priv.dp.quantile("x", q, bounds=bounds, epsilon=eps, cells=cells) for _ in range(runs)]
    )
    candidates = [float(c) for c in ref.candidate_values(bounds, cells)]  # halves 0-8
    assert candidates == [k / 2 for k in range(17)]
    index = released * 2
    assert np.array_equal(index, np.round(index))  # every output is a candidate
    counts = np.bincount(index.astype(np.int64), minlength=len(candidates))
    present = sorted(v for v in values if not np.isnan(v))  # no value on a candidate
    below = np.array([bisect.bisect_left(present, c) for c in candidates], dtype=np.int64)
    scores = ref.quantile_scores(below, Fraction(3, 10)) / 10
    rate = ref.quantile_rate(eps, q)
    assert rate == Fraction(5, 7)
    expected = ref.em_probabilities(scores, float(rate))
    assert stats.chisquare(*merged(counts, runs * expected)).pvalue > 1e-6
    for mutant_rate in (eps / 2, 2 * float(rate)):
        mutant = ref.em_probabilities(scores, mutant_rate)
        assert stats.chisquare(*merged(counts, runs * mutant)).pvalue < 1e-6, mutant_rate


def merged(observed: np.ndarray, expected: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge the bin of smallest expected count into the next smallest until each holds 5."""
    order = np.argsort(expected)
    obs, exp = list(observed[order]), list(expected[order])
    while len(exp) > 1 and exp[0] < 5:
        smallest_obs, smallest_exp = obs.pop(0), exp.pop(0)
        obs[0] += smallest_obs
        exp[0] += smallest_exp
        pairs = sorted(zip(exp, obs, strict=True))
        exp, obs = [p[0] for p in pairs], [p[1] for p in pairs]
    assert sum(obs) == observed.sum()  # nothing lost in the merge
    total = sum(obs)
    return np.array(obs), np.array(exp) * total / sum(exp)


def test_rank_error_of_grouped_medians_stays_within_the_documented_bound(ref, protect_seeded, rng):
    """600 independent medians in one grouped release (each group holds the same 301 values).

    The exponential mechanism's utility theorem: the chosen edge scores more than
    ``min score + rank_error(ε, K, α, Δ)`` with probability at most α; the median's scores
    have Δ = 1/2. With α = 0.05 and 600 draws, more than ``binom.ppf(1 - 1e-6, 600, 0.05)``
    misses has probability below 1e-6 for a correct release.

    That bound is loose (at rate ε/(2Δ) = 1 a miss has probability 7e-6 here), so the mean
    excess is also checked against its exact expectation under the law, computed from the
    independently counted ranks: 0.92 ranks, with a standard deviation of 0.042 for the mean
    of 600 draws. Six of those (a correct release fails with probability about 2e-9, normal
    approximation) separate it from the old calibration Δ = 1 (rate 1/2, mean 2.00) and from
    monotone weights (rate 2, mean 0.37).
    """
    groups, alpha, eps = 600, 0.05, 1.0
    values = rng.uniform(0, 100, 301)
    data = pd.DataFrame({"x": np.tile(values, groups), "g": np.repeat(np.arange(groups), 301)})
    priv = protect_seeded(data, seed=31, epsilon=1)
    table = priv.dp.groupby("g", keys=range(groups)).agg(
        m=("x", "median"), bounds={"x": (0, 100)}, epsilon=eps
    )
    index = np.round(table["m"].to_numpy() * 4096 / 100).astype(np.int64)
    scores = ref.quantile_scores(ref.ranks(values, (0, 100), 4096), Fraction(1, 2)) / 2
    excess = scores[index] - scores.min()
    bound = rank_error(eps, 4097, alpha, float(ref.quantile_sensitivity(0.5)))
    assert bound == pytest.approx(math.log(4097) + math.log(20))  # 11.3 ranks
    misses = int(np.count_nonzero(excess > bound))
    worst = float(excess.max())
    print(f"median rank error: max {worst:.1f} ranks, {misses}/{groups} beyond {bound:.1f}")
    assert misses <= stats.binom.ppf(1 - 1e-6, groups, alpha)

    law = ref.em_probabilities(scores, float(ref.quantile_rate(eps, 0.5)))
    all_excess = scores - scores.min()
    mean = float(law @ all_excess)
    sd = math.sqrt(float(law @ (all_excess - mean) ** 2) / groups)
    assert (round(mean, 2), round(sd, 3)) == (0.92, 0.042)
    realised = float(np.mean(excess))
    print(f"mean rank error {realised:.3f}, expected {mean:.3f} ± {sd:.3f}")
    assert abs(realised - mean) < 6 * sd


# --- bugs --------------------------------------------------------------------------------------


def test_close_levels_are_released_independently(protect_seeded, rng):
    # 0.5 and 0.5000001 print alike with 6 significant digits; they are distinct levels and
    # each must get its own draw. Two independent draws here coincide with probability
    # about 1/400 (the law spreads over hundreds of edges), so 25 coincidences in 25 runs
    # would mean one draw served both levels.
    priv = protect_seeded(pd.DataFrame({"x": rng.uniform(0, 1, 200)}), seed=3, epsilon=100)
    same = 0
    for _ in range(25):
        released = priv["x"].dp.quantile([0.5, 0.5000001], bounds=(0, 1), epsilon=1.0)
        same += released.iloc[0] == released.iloc[1]
    assert same < 5, f"the two levels coincided in {same} of 25 releases"


@pytest.mark.parametrize("rows", [1000, 2000])
def test_whether_a_selection_succeeds_never_depends_on_the_data(protect_seeded, rows):
    # ε = 1/3 as a float is the exact rational 3333333333333333/10**16; the exact sampler
    # must cope with it whatever the number of rows (an error that appears only for larger
    # data would itself reveal the data, and charges nothing).
    data = pd.DataFrame({"x": np.linspace(0, 1, rows), "c": ["a"] * rows})
    priv = protect_seeded(data, epsilon=10)
    assert 0 <= priv.dp.median("x", bounds=(0, 1), epsilon=1 / 3) <= 1
    assert priv.dp.mode("c", candidates=["a", "b"], epsilon=1 / 3) in ("a", "b")


def test_preview_of_a_grouped_median_reports_the_whole_cost(protect_seeded, incomes):
    priv = protect_seeded(incomes, epsilon=10)
    preview = priv.dp.preview.groupby("region", keys=list("NSEW")).agg(
        med=("income", "median"), n="count", bounds={"income": BOUNDS}, epsilon=1.0
    )
    assert preview.table.loc["med", "epsilon"] == pytest.approx(0.5)
    assert preview.table.loc["med", "error_in"] == "ranks"
    # ε/2 = 0.5 for the median (ε split with the count), and the median's Δ = 1/2:
    # 2 (1/2) (ln K + ln 20) / 0.5 ranks, K the candidates (4,097 edges and the round values).
    count = quantile_candidates(*BOUNDS, 4096, "number").size
    assert count > 4097
    expected = rank_error(0.5, count, 0.05, sensitivity=0.5)
    assert expected == pytest.approx(2 * (math.log(count) + math.log(20)))
    assert preview.table.loc["med", "error"] == pytest.approx(expected)
    assert preview.epsilon == pytest.approx(1.0)  # what the release would charge
    assert priv.dp.session.releases == ()
