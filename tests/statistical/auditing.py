"""Shared machinery of the empirical privacy-loss audits (``test_privacy_audit.py``,
``test_gaussian_audit.py``, ``test_selection_audit.py`` and ``tests/groupby/test_audit.py``).

Method (the black-box audits of Jagielski, Ullman & Oprea 2020 and Nasr et al. 2021): run a
mechanism many times on neighbouring datasets D and D', fix an event E = {output >= T} or
{output <= T}, bound P(E | D) from below and P(E | D') from above with one-sided exact
binomial (Clopper–Pearson) bounds, and report

    ε_lb = log((lower bound of P(E | D) - δ) / upper bound of P(E | D'))

with δ = 0 for pure DP (D and D' swap roles when E is likelier under D'). An (ε, δ)-DP
mechanism satisfies P(E | D) <= e^ε P(E | D') + δ for *every* event, so if both bounds hold,
ε_lb <= ε.

Confidence. The total confidence 1 - ALPHA is split between the two datasets: each one-sided
bound fails with probability at most ALPHA / 2, so by the union bound an honest mechanism
reports ε_lb > ε with probability at most ALPHA = 1e-6. That holds for one event fixed in
advance, not for the best of many events scored on the same outputs. So :func:`audit` chooses
the event (threshold, tail and direction) on a separate *calibration* run with its own seeds
and bounds ε with that single event on the *evaluation* run. The seeds are fixed, so an
audit's outcome never changes between runs; the level says that an honest mechanism would fail
for at most one seed in a million.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pytest
from scipy import stats

from pandas_dp.mechanisms.laplace import DiscreteLaplace
from pandas_dp.mechanisms.random import RandomSource, SeededRandomSource

ALPHA = 1e-6  # probability that an honest mechanism's ε_lb exceeds its ε
N_CALIBRATION = 200_000  # default releases per dataset to choose the event on
N_EVALUATION = 1_000_000  # default releases per dataset to bound ε on

#: A calibration run and an evaluation run, each the outputs on (D, D').
Runs = tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def clopper_pearson(hits: np.ndarray, n: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided exact binomial (Clopper–Pearson) bounds on the success probability p of
    ``hits`` successes in ``n`` trials: P(p < lower) <= alpha and P(p > upper) <= alpha.

    ``lower`` is the p at which P(X >= hits) = alpha (0 when hits = 0) and ``upper`` the p at
    which P(X <= hits) = alpha (1 when hits = n), from the beta quantiles. Vectorised."""
    hits = np.asarray(hits, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        lower = np.where(hits > 0, stats.beta.ppf(alpha, hits, n - hits + 1), 0.0)
        upper = np.where(hits < n, stats.beta.ppf(1 - alpha, hits + 1, n - hits), 1.0)
    return lower, upper


def epsilon_lower_bound(
    hits_more: np.ndarray, hits_less: np.ndarray, n: int, *, delta: float = 0.0
) -> np.ndarray:
    """ε_lb for an event seen ``hits_more`` times on one dataset and ``hits_less`` times on
    the other, each out of ``n`` releases, at total confidence 1 - ALPHA.

    The lower bound on the first frequency and the upper bound on the second are one-sided
    Clopper–Pearson bounds at ALPHA / 2 each. With ``delta`` > 0 (an (ε, δ) claim), δ is
    subtracted from the lower bound before the ratio; a lower bound at or below δ gives
    -inf (no evidence). Vectorised over the hit counts."""
    lower, _ = clopper_pearson(hits_more, n, ALPHA / 2)
    _, upper = clopper_pearson(hits_less, n, ALPHA / 2)
    if delta:
        lower = np.maximum(lower - delta, 0.0)
    with np.errstate(divide="ignore"):
        return np.log(lower) - np.log(upper)


@dataclass(frozen=True)
class Event:
    """``output >= threshold`` (``at_least``) or ``output <= threshold``; ``favours_d`` says
    whether the event is likelier under D (then D is the numerator of the ratio)."""

    threshold: float
    at_least: bool
    favours_d: bool

    def hits(self, outputs: np.ndarray) -> int:
        """How many of ``outputs`` fall in the event."""
        if self.at_least:
            return int(np.count_nonzero(outputs >= self.threshold))
        return int(np.count_nonzero(outputs <= self.threshold))


def hits_at(sorted_outputs: np.ndarray, thresholds: np.ndarray, at_least: bool) -> np.ndarray:
    """:meth:`Event.hits` for every threshold at once, on outputs sorted ascending."""
    if at_least:
        return sorted_outputs.size - np.searchsorted(sorted_outputs, thresholds, side="left")
    return np.searchsorted(sorted_outputs, thresholds, side="right")


def choose_event(
    outputs_d: np.ndarray,
    outputs_d2: np.ndarray,
    *,
    delta: float = 0.0,
    quantiles: int | None = 999,
) -> Event:
    """The event with the largest ε_lb (at ``delta``) on a calibration run.

    Candidates: both tails and both directions at thresholds at ``quantiles`` equally spaced
    levels of the pooled outputs (inverted CDF, so every value the outputs take when there are
    few), or at every value the outputs take when ``quantiles`` is None (for (ε, δ) audits,
    whose telling events lie far out in the tails). The scores on this run are optimistic for
    the chosen event: only a separate evaluation run bounds ε validly (see :func:`audit`)."""
    assert outputs_d.size == outputs_d2.size
    n = outputs_d.size
    pooled = np.concatenate([outputs_d, outputs_d2])
    if quantiles is None:
        thresholds = np.unique(pooled)
    else:
        levels = np.linspace(1 / (quantiles + 1), quantiles / (quantiles + 1), quantiles)
        thresholds = np.unique(np.quantile(pooled, levels, method="inverted_cdf"))
    sorted_outputs = (np.sort(outputs_d), np.sort(outputs_d2))
    hits = {
        at_least: tuple(hits_at(outputs, thresholds, at_least) for outputs in sorted_outputs)
        for at_least in (True, False)
    }
    score = _scorer(np.concatenate([h for pair in hits.values() for h in pair]), n, delta)
    best: tuple[float, Event] | None = None
    for at_least, (hits_d, hits_d2) in hits.items():
        for favours_d, more, less in ((True, hits_d, hits_d2), (False, hits_d2, hits_d)):
            scores = score(more, less)
            i = int(np.nanargmax(scores))
            if best is None or scores[i] > best[0]:
                best = (float(scores[i]), Event(float(thresholds[i]), at_least, favours_d))
    assert best is not None
    return best[1]


def _scorer(
    every_hit_count: np.ndarray, n: int, delta: float
) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """:func:`epsilon_lower_bound` as a lookup: the bounds computed once per distinct count.

    With ``quantiles=None`` an audit scores every value the outputs take (hundreds of
    thousands of thresholds, four ways), but the hit counts repeat; the beta quantiles are
    the slow part, so each distinct count gets them once. Same numbers, bit for bit.
    """
    values = np.unique(every_hit_count)
    lower, upper = clopper_pearson(values, n, ALPHA / 2)
    if delta:
        lower = np.maximum(lower - delta, 0.0)
    with np.errstate(divide="ignore"):
        log_lower, log_upper = np.log(lower), np.log(upper)

    def score(more: np.ndarray, less: np.ndarray) -> np.ndarray:
        return np.asarray(
            log_lower[np.searchsorted(values, more)] - log_upper[np.searchsorted(values, less)]
        )

    return score


@dataclass(frozen=True)
class AuditResult:
    """The ε_lb of one evaluated event, with the event and its frequencies on D and D'."""

    epsilon_lb: float
    event: Event
    frequencies: tuple[float, float]  # of the event under D and D'
    delta: float = 0.0

    def __str__(self) -> str:
        side = ">=" if self.event.at_least else "<="
        p, p2 = self.frequencies
        # (ε, δ) audits use tail events of about 1%: their frequencies get one more digit.
        at, digits = (f" at δ = {self.delta:g}", 5) if self.delta else ("", 4)
        return (
            f"ε_lb = {self.epsilon_lb:.4f}{at} for output {side} {self.event.threshold:g} "
            f"(frequency {p:.{digits}f} on D, {p2:.{digits}f} on D')"
        )


def evaluate(
    event: Event, outputs_d: np.ndarray, outputs_d2: np.ndarray, *, delta: float = 0.0
) -> AuditResult:
    """Bound ε (at ``delta``) with one event fixed in advance on outputs (D, D') that played
    no part in choosing it; ε_lb <= ε fails for an honest mechanism with probability at most
    ALPHA."""
    assert outputs_d.size == outputs_d2.size
    n = outputs_d.size
    hits_d, hits_d2 = event.hits(outputs_d), event.hits(outputs_d2)
    more, less = (hits_d, hits_d2) if event.favours_d else (hits_d2, hits_d)
    epsilon_lb = float(epsilon_lower_bound(np.array([more]), np.array([less]), n, delta=delta)[0])
    return AuditResult(epsilon_lb, event, (hits_d / n, hits_d2 / n), delta)


def audit(
    calibration: tuple[np.ndarray, np.ndarray],
    evaluation: tuple[np.ndarray, np.ndarray],
    *,
    delta: float = 0.0,
    quantiles: int | None = 999,
) -> AuditResult:
    """Choose the event on ``calibration`` (D, D'), bound ε with it on ``evaluation``.

    Calibration and evaluation must be independent runs (own seeds): the event is then fixed
    before the evaluation outputs exist, and the evaluation's ε_lb keeps the confidence
    1 - ALPHA of a single event despite the search over many on the calibration run.
    ``delta`` and ``quantiles`` as in :func:`choose_event`."""
    event = choose_event(*calibration, delta=delta, quantiles=quantiles)
    return evaluate(event, *evaluation, delta=delta)


def paired_runs(
    outputs: Callable[[int, int, int], np.ndarray],
    seed: int,
    n_calibration: int = N_CALIBRATION,
    n_evaluation: int = N_EVALUATION,
) -> Runs:
    """Calibration and evaluation runs on D and D' from ``outputs(dataset, n, seed)``
    (``dataset`` 0 for D, 1 for D'): four independent seeded streams, ``seed`` and
    ``seed + 1`` for the calibration on D and D', ``seed + 2`` and ``seed + 3`` for the
    evaluation."""
    calibration = (outputs(0, n_calibration, seed), outputs(1, n_calibration, seed + 1))
    evaluation = (outputs(0, n_evaluation, seed + 2), outputs(1, n_evaluation, seed + 3))
    return calibration, evaluation


class Sampler(Protocol):
    """An additive noise mechanism (discrete Laplace, discrete Gaussian)."""

    def sample(self, n: int, source: RandomSource) -> np.ndarray: ...


def vectorised_runs(
    exact: tuple[float, float], mechanism: Sampler, step: float = 1.0, *, seed: int
) -> Runs:
    """Calibration and evaluation outputs ``exact + step · Z`` on D and D' (:func:`paired_runs`
    with the default sizes), Z drawn in one call from the mechanism object a release used.

    A release ``exact + step · Z`` with one fresh draw Z per release (a count, or a sum on a
    lattice of step g) has exactly the law of these outputs, however many releases are
    simulated; the values are exact for |values| < 2^53 · step."""

    def outputs(dataset: int, n: int, stream: int) -> np.ndarray:
        noise = mechanism.sample(n, SeededRandomSource(stream))
        return exact[dataset] + step * noise.astype(np.float64)

    return paired_runs(outputs, seed)


def half_noise(mechanism: DiscreteLaplace) -> DiscreteLaplace:
    """The mutant: half the calibrated scale, i.e. really 2ε-DP while claiming ε."""
    return DiscreteLaplace(mechanism.scale / 2)


def assert_clopper_pearson_exact() -> None:
    """Check :func:`clopper_pearson` against exact binomial tails (n = 1000, alpha = 1e-3):
    P(X >= k | p = lower) = alpha = P(X <= k | p = upper) for k = 3 and 500, lower = 0 for
    no hits and upper = 1 for n hits."""
    lower, upper = clopper_pearson(np.array([0, 3, 500, 1000]), 1000, 1e-3)
    assert lower[0] == 0.0, lower
    assert upper[3] == 1.0, upper
    for i, k in enumerate((3, 500)):
        tail_above = stats.binom.sf(k - 1, 1000, lower[i + 1])
        tail_below = stats.binom.cdf(k, 1000, upper[i + 1])
        assert tail_above == pytest.approx(1e-3, rel=1e-6), (k, lower[i + 1], tail_above)
        assert tail_below == pytest.approx(1e-3, rel=1e-6), (k, upper[i + 1], tail_below)
