"""Empirical privacy-loss audit of the selections (median, quantiles, mode) and of
randomized response, in the style of ``test_privacy_audit.py`` (the audit is ``auditing.py``).

Method (Jagielski, Ullman & Oprea 2020; Nasr et al. 2021): run the mechanism many times on
neighbouring datasets D and D' (D' has one more row), choose an event E = {output >= T} or
{output <= T} on a separate calibration run, bound P(E | D) from below and P(E | D') from
above with one-sided Clopper–Pearson intervals at ALPHA / 2 each, and report
``ε_lb = log(lower / upper)``. For an ε-DP mechanism ε_lb <= ε except with probability
ALPHA = 1e-6; the seeds are fixed, so the outcome never changes.

Vectorised selections. A selection release draws one candidate with the exponential
mechanism from the scores the release computed. A test double around
``ExponentialMechanism.choose`` records those scores and the mechanism object (and still
samples for real); drawing N candidates from that very mechanism on N copies of the scores
(one row each, in one vectorised call) gives N outputs with the law of N releases. Outputs
are candidate indices, which the release maps monotonically to grid values, so threshold
events on indices are threshold events on released values.

What the audits can and cannot see (derived in the comments of each design):

* The quantile scores ``|rank_k - q n|`` move by at most ``1 - q`` (a value added below the
  edge) or ``q`` (above it) when a value is added, so their sensitivity is
  ``Δ = max(q, 1 - q)`` (1/2 at the median) and the release draws at rate ``ε/(2Δ)``: rate
  ε at the median, 5ε/9 at q = 0.9. Score changes then span at most ``2Δ``, so the true
  privacy loss can reach ε, and a mutant at twice the correct rate (monotone weights, which
  these scores are not) is caught at both levels. The median's design also shows that it is
  not over-noised: the old calibration ``Δ = 1`` (rate ε/2) cannot reach its floor. At
  q = 0.9 the old calibration was only 10% noisier (rate ε/2 against 5ε/9), which an audit
  of this size cannot resolve; ``tests/statistics/test_quantiles.py`` checks that law.
* On a tie block (values equal to a candidate) the score is the distance from ``q n`` to the
  candidate's rank interval, minus its depth inside it: a value added at the candidate moves
  it by ``q`` or ``1 - q`` as elsewhere. A mutant that also rewards the candidate's own ties
  (by half their number) moves by 1 at the median and is caught.
* Mode scores (counts) are monotone, so the real release can reach ε; the mutant doubles
  the rate.
* Randomized response has loss exactly ε on the event {output = true value}; the mutant
  computes its keep probability from 2ε.

A quantile in a pure-ε session samples by permute-and-flip (the exponential mechanism's
weights as acceptance coins, a uniform accepted candidate); in a ρ session, or above
``FLIP_MAX_COINS``, by the exponential mechanism. The quantile designs audit both samplers
at the release's rate (``sampler``); their mutant doubles the rate (monotone weights for the
exponential mechanism, half the sensitivity for permute-and-flip, which has no monotone
variant). The exact losses quoted are the largest of any threshold event, from
:meth:`ExponentialMechanism.probabilities`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import pandas_dp
from pandas_dp.measures.grids import quantile_candidates
from pandas_dp.mechanisms.exponential import ExponentialMechanism
from pandas_dp.mechanisms.random import SeededRandomSource
from pandas_dp.mechanisms.randomized_response import randomize

from .auditing import Event, Runs, audit, evaluate, paired_runs

pytestmark = pytest.mark.statistical

EPSILON = Fraction(1)
N_CALIBRATION = 10_000  # selections cost about 11 µs per draw
N_EVALUATION = 40_000
N_RR_CALIBRATION = 200_000  # randomized response is much cheaper
N_RR_EVALUATION = 1_000_000
CHUNK = 20_000
#: The quantile releases' samplers: pure ε (permute-and-flip) and bounded range (exponential).
SAMPLERS = ["permute_and_flip", "exponential"]


def sampled_by(mechanism: ExponentialMechanism, sampler: str) -> ExponentialMechanism:
    """The release's mechanism with the given sampler (same ε, sensitivity and rate)."""
    return dataclasses.replace(mechanism, flip=sampler == "permute_and_flip")


def twice_the_rate(mechanism: ExponentialMechanism) -> ExponentialMechanism:
    """The rate-doubling mutant: monotone weights, or half the sensitivity with flip."""
    if mechanism.flip:
        return dataclasses.replace(mechanism, sensitivity=mechanism.sensitivity / 2)
    return dataclasses.replace(mechanism, monotone=True)


# --- selections ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Selection:
    """What one selection release drew from: its mechanism and score numerators."""

    mechanism: ExponentialMechanism
    scores: np.ndarray  # (groups, candidates)
    denominator: int


@pytest.fixture
def selections(monkeypatch) -> list[Selection]:
    """Records every exponential-mechanism draw of the releases (which still sample)."""
    seen: list[Selection] = []
    original = ExponentialMechanism.choose

    def recording(self, scores, denominator, source):
        seen.append(Selection(self, np.array(scores, copy=True), denominator))
        return original(self, scores, denominator, source)

    monkeypatch.setattr(ExponentialMechanism, "choose", recording)
    return seen


def draws(mechanism: ExponentialMechanism, row: np.ndarray, denominator: int, n: int, seed: int):
    """``n`` independent draws for one score row, vectorised in chunks."""
    source = SeededRandomSource(seed)
    out = []
    for start in range(0, n, CHUNK):
        size = min(CHUNK, n - start)
        out.append(mechanism.choose(np.repeat(row[None, :], size, axis=0), denominator, source))
    return np.concatenate(out).astype(np.float64)


def selection_runs(
    mechanism: ExponentialMechanism,
    rows: tuple[np.ndarray, np.ndarray],
    denominator: int,
    seed: int,
    evaluation: int = N_EVALUATION,
) -> Runs:
    """Calibration and evaluation outputs on D and D': four independent seeded streams."""

    def outputs(dataset: int, n: int, stream: int) -> np.ndarray:
        return draws(mechanism, rows[dataset], denominator, n, stream)

    return paired_runs(outputs, seed, N_CALIBRATION, evaluation)


def captured(selections: list[Selection], release) -> Selection:
    """Run one real release and return what it drew from."""
    before = len(selections)
    release()
    (selection,) = selections[before:]
    assert selection.scores.shape[0] == 1
    return selection


def quantile_neighbours(
    protect_seeded, selections, values, extra, q, seeds
) -> tuple[ExponentialMechanism, tuple[np.ndarray, np.ndarray], int]:
    """Capture the scores of the q-quantile release on D = ``values`` and D' = D + ``extra``
    (bounds (0, 1), 8 cells), checked against independently counted ranks."""
    results = []
    for data, seed in ((values, seeds[0]), ([*values, extra], seeds[1])):
        priv = protect_seeded(pd.DataFrame({"x": data}), seed=seed, epsilon=1)
        selection = captured(
            selections,
            lambda priv=priv: priv.dp.quantile("x", q, bounds=(0, 1), epsilon=EPSILON, cells=8),
        )
        # The candidates: the 9 edges and the round values (tenths and sixteenths, issue 38);
        # score max(#{x < c} - q n, q n - #{x <= c}), with the values clipped to the bounds.
        edges = quantile_candidates(0.0, 1.0, 8, "number")
        kept = [min(max(v, 0.0), 1.0) for v in data]
        target = Fraction(str(q)) * len(data)  # the decimal level
        expected = [
            max(sum(v < e for v in kept) - target, target - sum(v <= e for v in kept))
            for e in edges
        ]
        got = [Fraction(int(s), selection.denominator) for s in selection.scores[0]]
        assert got == list(expected)
        results.append(selection)
    (first, second) = results
    assert first.mechanism == second.mechanism  # public parameters only
    sensitivity = max(Fraction(str(q)), 1 - Fraction(str(q)))  # Δ = max(q, 1 - q)
    # Permute-and-flip: a pure-ε session, 25 candidates (far below FLIP_MAX_COINS).
    assert first.mechanism == ExponentialMechanism(EPSILON, sensitivity, flip=True)
    assert first.denominator == second.denominator
    return first.mechanism, (first.scores[0], second.scores[0]), first.denominator


#: Median design (n = 10, q n = 5): five values in the first cell, one in the second, four
#: in the last; D' adds a value in the last cell. Edge 1 has rank 5 (score 0 on D, 1/2 on
#: D'), edges 2..7 rank 6 (score 1, then 1/2). At the correct rate ε/(2 · 1/2) = 1 the event
#: {output <= edge 1} has probability 0.313 on D and 0.143 on D' (loss 0.78 <= ε); the largest
#: loss of any threshold event is 0.78, and 0.40 at the old over-noised rate 1/2. The mutant
#: at twice the rate (2ε) gives 0.552 vs 0.143 (loss 1.35). Permute-and-flip's largest
#: losses (over the 25 candidates): 0.79 at rate 1 ({output <= 0.1875}: 0.367 vs 0.167),
#: 0.41 at rate 1/2, 1.48 at rate 2.
MEDIAN_D = [0.01, 0.02, 0.03, 0.04, 0.05, 0.2, 0.9, 0.91, 0.92, 0.93]
MEDIAN_EXTRA = 0.95
#: q = 0.9 design (n = 10, q n = 9): nine values in the first cell, one in the second; D'
#: adds a value in the last cell. At the correct rate ε/(2 · 0.9) = 5/9, {output <= edge 1}
#: has probability 0.200 on D and 0.089 on D' (loss 0.81); the mutant at twice the rate
#: (10/9) gives 0.303 vs 0.061 (loss 1.60 > ε). Permute-and-flip's largest losses: 0.84 at
#: rate 5/9 ({output <= 0.1875}: 0.216 vs 0.093), 1.66 at rate 10/9.
HIGH_D = [0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.2]
HIGH_EXTRA = 0.95


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_median_audit_vectorised(protect_seeded, selections, sampler):
    mechanism, rows, denominator = quantile_neighbours(
        protect_seeded, selections, MEDIAN_D, MEDIAN_EXTRA, 0.5, seeds=(1, 2)
    )
    mechanism = sampled_by(mechanism, sampler)
    assert mechanism.rate == EPSILON  # ε / (2Δ) with Δ = 1/2
    real = audit(*selection_runs(mechanism, rows, denominator, seed=100))
    print(f"median ({sampler}), real mechanism: {real}")
    assert real.epsilon_lb <= EPSILON, f"the median leaks more than ε = 1: {real}"
    # Expected about 0.78 (0.79 by permute-and-flip) less the bounds' cost (about 0.1). No
    # threshold event of the old calibration (Δ = 1, rate 1/2) has a loss above 0.40 (0.41
    # by permute-and-flip), so it stays below 0.5 whenever
    # the bounds hold (probability 1 - 1e-6): a floor of 0.5 catches that over-noising.
    assert real.epsilon_lb >= 0.5, f"the median is noisier than calibrated: {real}"
    over = dataclasses.replace(mechanism, sensitivity=Fraction(1))
    assert over.rate == EPSILON / 2
    noisier = audit(*selection_runs(over, rows, denominator, seed=100))
    print(f"median ({sampler}), old calibration Δ = 1: {noisier}")
    assert noisier.epsilon_lb < 0.5, f"the floor does not separate Δ = 1: {noisier}"

    mutant = twice_the_rate(mechanism)  # rate 2ε: twice the correct rate
    assert mutant.rate == 2 * mechanism.rate == 2 * EPSILON
    caught = audit(*selection_runs(mutant, rows, denominator, seed=100))
    print(f"median ({sampler}), rate-2ε mutant: {caught}")
    assert caught.epsilon_lb > EPSILON, f"the rate-2ε mutant was not caught: {caught}"


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_quantile_audit_catches_the_monotone_rate(protect_seeded, selections, sampler):
    mechanism, rows, denominator = quantile_neighbours(
        protect_seeded, selections, HIGH_D, HIGH_EXTRA, 0.9, seeds=(3, 4)
    )
    mechanism = sampled_by(mechanism, sampler)
    assert mechanism.rate == Fraction(5, 9) * EPSILON  # ε / (2Δ) with Δ = 9/10
    real = audit(*selection_runs(mechanism, rows, denominator, seed=200))
    print(f"0.9-quantile ({sampler}), real mechanism: {real}")
    assert real.epsilon_lb <= EPSILON, f"the 0.9-quantile leaks more than ε = 1: {real}"
    # Expected about 0.81 (0.84) less the bounds' cost; far below means over-noising.
    assert real.epsilon_lb >= 0.5, f"the quantile is noisier than calibrated: {real}"

    mutant = twice_the_rate(mechanism)  # rate 10ε/9: twice the correct
    assert mutant.rate == 2 * mechanism.rate
    caught = audit(*selection_runs(mutant, rows, denominator, seed=200))
    print(f"0.9-quantile ({sampler}), rate-10ε/9 mutant: {caught}")
    assert caught.epsilon_lb > EPSILON, f"the twice-the-rate mutant was not caught: {caught}"


#: Tie-block design (issue 38: the score ranks a tie block above its neighbours): two values
#: at 0.05 and five at 0.5, a round value and so a candidate; D' adds a sixth 0.5, which moves
#: only that candidate's ``#{x <= c}`` (and ``n``). At the median's rate 1 the largest loss of
#: a threshold event is 0.72 <= ε. The mutant rewards a candidate's own ties, scoring
#: ``s_k - T_k / 2`` (``T_k = #{x = c_k}``): the block's score then moves by a whole row's
#: worth (1) where the calibration allows 1/2, and its largest loss is 1.46. By
#: permute-and-flip: 0.88 for the real score, 1.49 for the mutant, but only on rare events
#: (every threshold event of loss 1.49 has probability at most 0.022 on D and 0.005 on D'):
#: 40,000 draws bound it at about 0.9. With n draws the one-sided Clopper–Pearson bounds at
#: 5e-7 cost about 4.9 (1/sqrt(0.022 n) + 1/sqrt(0.005 n)) of the log ratio, 0.23 at
#: n = 200,000 (ε_lb about 1.26 > ε), so that sampler's mutant is evaluated on 200,000.
TIE_MUTANT_EVALUATION = {"permute_and_flip": 200_000, "exponential": N_EVALUATION}
TIE_D = [0.05, 0.05, 0.5, 0.5, 0.5, 0.5, 0.5]
TIE_EXTRA = 0.5


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_median_audit_on_a_tie_block(protect_seeded, selections, sampler):
    mechanism, rows, denominator = quantile_neighbours(
        protect_seeded, selections, TIE_D, TIE_EXTRA, 0.5, seeds=(5, 6)
    )
    mechanism = sampled_by(mechanism, sampler)
    assert mechanism.rate == EPSILON
    edges = quantile_candidates(0.0, 1.0, 8, "number")
    block = int(np.flatnonzero(edges == 0.5)[0])
    assert rows[0][block] == min(rows[0]) < 0  # the block is the best candidate, by its depth
    real = audit(*selection_runs(mechanism, rows, denominator, seed=400))
    print(f"median on a tie block ({sampler}), real mechanism: {real}")
    assert real.epsilon_lb <= EPSILON, f"the median leaks more than ε = 1 on ties: {real}"
    assert real.epsilon_lb >= 0.4, f"the median is noisier than calibrated on ties: {real}"

    def favouring_ties(values: list[float], row: np.ndarray) -> np.ndarray:
        ties = np.array([sum(v == e for v in values) for e in edges], dtype=np.int64)
        return row - ties * denominator // 2  # s_k - T_k / 2, over the same denominator

    mutant_rows = (favouring_ties(TIE_D, rows[0]), favouring_ties([*TIE_D, TIE_EXTRA], rows[1]))
    evaluation = TIE_MUTANT_EVALUATION[sampler]
    caught = audit(*selection_runs(mechanism, mutant_rows, denominator, 400, evaluation))
    print(f"median on a tie block ({sampler}), score favouring ties: {caught}")
    assert caught.epsilon_lb > EPSILON, f"the tie-favouring score was not caught: {caught}"


def test_mode_audit_vectorised(protect_seeded, selections):
    """Candidates ("c", "o"); D has 5 c, 7 o and 10 rows outside the candidates, D' one more
    c. Monotone rate ε: P(c) = 1/(1 + e^2) = 0.119 on D and 0.269 on D' (loss 0.81); the
    rate-2ε mutant gives 0.018 vs 0.119 (loss 1.89)."""
    d = ["c"] * 5 + ["o"] * 7 + ["x"] * 10
    found = []
    for data, seed in ((d, 5), ([*d, "c"], 6)):
        priv = protect_seeded(pd.DataFrame({"code": data}), seed=seed, epsilon=1)
        found.append(
            captured(
                selections,
                lambda priv=priv: priv.dp.mode("code", candidates=["c", "o"], epsilon=EPSILON),
            )
        )
    first, second = found
    assert first.mechanism == second.mechanism
    assert first.mechanism == ExponentialMechanism(EPSILON, Fraction(1), monotone=True)
    assert first.denominator == second.denominator == 1
    assert first.scores[0].tolist() == [-5, -7]  # scores are minus the counts
    assert second.scores[0].tolist() == [-6, -7]
    rows = (first.scores[0], second.scores[0])

    real = audit(*selection_runs(first.mechanism, rows, first.denominator, seed=300))
    print(f"mode, real mechanism: {real}")
    assert real.epsilon_lb <= EPSILON, f"the mode leaks more than ε = 1: {real}"
    assert real.epsilon_lb >= 0.55, f"the mode is noisier than calibrated: {real}"

    mutant = dataclasses.replace(first.mechanism, epsilon=2 * EPSILON)
    caught = audit(*selection_runs(mutant, rows, first.denominator, seed=300))
    print(f"mode, rate-2ε mutant: {caught}")
    assert caught.epsilon_lb > EPSILON, f"the rate-2ε mutant was not caught: {caught}"


def test_median_audit_through_grouped_releases(protect_seeded):
    """End to end: one grouped release of 3,000 medians (default 4,096 cells) per dataset,
    each group holding a copy of D (or D'), gives 3,000 independent draws per dataset.

    Design on the default grid: five values near 0.01, one at 0.5, four near 0.99; D' adds
    0.995. About 2,000 edges have rank 5 (score 0 on D) and 2,000 rank 6 (score 1): at the
    median's rate ε/(2 · 1/2) = 1 the event {median <= 0.5}, fixed in advance, has
    probability 0.729 on D and 0.498 on D' (loss 0.38). A frequency of 3,000 draws has a
    standard deviation of at most 0.0092, so ±0.05 (5.4 of them) fails a correct release
    with probability below 2e-7 (both frequencies, normal approximation) and rejects the
    old calibration Δ = 1 (0.621 on D) and the rate-2ε mutant (0.880 on D)."""
    groups = 3000
    d = [0.01, 0.011, 0.012, 0.013, 0.014, 0.5, 0.99, 0.991, 0.992, 0.993]
    outputs = []
    for values, seed in ((d, 7), ([*d, 0.995], 8)):
        data = pd.DataFrame(
            {"x": np.tile(values, groups), "g": np.repeat(np.arange(groups), len(values))}
        )
        priv = protect_seeded(data, seed=seed, epsilon=1)
        table = priv.dp.groupby("g", keys=range(groups)).agg(
            m=("x", "median"), bounds={"x": (0, 1)}, epsilon=EPSILON
        )
        assert priv.dp.session.spent.epsilon == EPSILON  # parallel composition: charged once
        # 3,000 groups × 4,097+ candidates exceed FLIP_MAX_COINS: the exponential mechanism.
        (measurement,) = priv.dp.session.releases[-1].measurements
        assert measurement.mechanism == "exponential"
        outputs.append(table["m"].to_numpy())
    event = Event(0.5, at_least=False, favours_d=True)
    result = evaluate(event, outputs[0], outputs[1])
    print(f"median, public API ({groups} grouped draws per dataset): {result}")
    assert result.epsilon_lb <= EPSILON, f"the median leaks more than ε = 1: {result}"
    assert result.frequencies[0] == pytest.approx(0.729, abs=0.05)  # the law of rate ε
    assert result.frequencies[1] == pytest.approx(0.498, abs=0.05)


# --- randomized response ---------------------------------------------------------------------


def rr_runs(epsilon: Fraction, seed: int) -> Runs:
    """Outputs for true value 0 (D) and 1 (D'), k = 2, through the exact sampler."""

    def outputs(value: int, n: int, stream: int) -> np.ndarray:
        codes = np.full(n, value, dtype=np.int64)
        return randomize(SeededRandomSource(stream), codes, 2, epsilon).astype(np.float64)

    return paired_runs(outputs, seed, N_RR_CALIBRATION, N_RR_EVALUATION)


def test_randomized_response_audit_vectorised():
    """P(report 0 | 0) = e/(1 + e) = 0.731 vs P(report 0 | 1) = 0.269: loss exactly ε, and
    10^6 draws per side estimate it to about 0.011 after the confidence bounds."""
    real = audit(*rr_runs(EPSILON, seed=400))
    print(f"randomized response, real mechanism: {real}")
    assert real.epsilon_lb <= EPSILON, f"randomized response leaks more than ε: {real}"
    assert real.epsilon_lb >= 0.95, f"randomized response is noisier than calibrated: {real}"

    caught = audit(*rr_runs(2 * EPSILON, seed=400))  # keep probability from 2ε
    print(f"randomized response, 2ε mutant: {caught}")
    assert caught.epsilon_lb > EPSILON, f"the 2ε mutant was not caught: {caught}"


def test_randomized_response_audit_through_the_public_api():
    # Every row of a randomized Series is one independent run of the mechanism on that row.
    calibration, _ = rr_runs(EPSILON, seed=500)
    outputs = []
    for value, seed in ((False, 11), (True, 12)):
        answers = pd.Series([value] * N_RR_EVALUATION, name="a")
        with pytest.warns(pandas_dp.PrivacyLeakWarning, match="seeded rng"):
            noisy = answers.dp.randomized_response(epsilon=float(EPSILON), rng=seed)
        outputs.append(noisy.to_numpy().astype(np.float64))
    result = audit(calibration, (outputs[0], outputs[1]))
    print(f"randomized response, public API: {result}")
    assert result.epsilon_lb <= EPSILON, f"randomized response leaks more than ε: {result}"
    assert result.epsilon_lb >= 0.95, f"randomized response is noisier than calibrated: {result}"


def test_audit_of_identical_distributions_finds_no_loss():
    mechanism = ExponentialMechanism(EPSILON, Fraction(1))
    row = np.array([0, 1, 2, 1, 0], dtype=np.int64)
    assert audit(*selection_runs(mechanism, (row, row), 1, seed=600)).epsilon_lb <= 0.0
