"""Empirical privacy-loss audit of a synthetic-data choice accounted as bounded range.

MST's tree and AIM's rounds choose with the exponential mechanism and are now accounted as
``ε_c``-bounded range (``ε_c²/8`` in zCDP, a ``BoundedRangeMeasurement``), with ``ε_c`` read
back from the ledger line as ``2 · sensitivity / scale``. The accounting is right only if the
mechanism that runs is no more than ``ε_c``-DP per choice (bounded range ``ε_c`` implies it,
and the exponential mechanism at ``ε_c`` is ``ε_c``-bounded range): this audits exactly that.

Worst case for one choice among ``K`` candidates: on D every score is 0; on D' one unit
lowers candidate 0's score by the sensitivity and raises every other one's by it (each score
moves by at most Δ, in either direction, as the L1 scores can). Then
``P(0 | D') / P(0 | D) = K e^{ε_c} / (e^{ε_c} + K - 1)``, near ``e^{ε_c}`` for large ``K``.
With ``ε_c = 1`` and ``K = 50`` the real loss is 0.97; on 40,000 choices per dataset the
audit (one-sided Clopper–Pearson at ALPHA/2 each, fixed seeds) bounds it from below by about
0.85, below 1. A mutant that chooses at twice the rate (really ``2ε_c``, loss 1.88) is caught:
its bound is about 1.75.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from pandas_dp.accounting.events import BoundedRangeMeasurement
from pandas_dp.mechanisms.exponential import ExponentialMechanism
from pandas_dp.mechanisms.random import SeededRandomSource
from pandas_dp.mechanisms.tree_model import SCORE_EXPONENT, SCORE_STEPS

from .auditing import epsilon_lower_bound

pytestmark = pytest.mark.statistical

CANDIDATES = 50
DRAWS = 40_000


def _recorded() -> tuple[ExponentialMechanism, BoundedRangeMeasurement]:
    """A choice as MST plans it (k = 1: sensitivity 17/16), with its ledger line."""
    steps = SCORE_STEPS + 1
    each = Fraction(1)
    chooser = ExponentialMechanism(each, Fraction(steps, SCORE_STEPS))
    record = BoundedRangeMeasurement(
        "tree", chooser.name, Fraction(1, 3), steps, 2 * steps / each,
        exponent=-SCORE_EXPONENT, coordinates=1,
    )  # fmt: skip
    return chooser, record


def _audit(chooser: ExponentialMechanism, seed: int) -> float:
    steps = SCORE_STEPS + 1  # Δ in score units of 1/SCORE_STEPS
    d = np.zeros((DRAWS, CANDIDATES), dtype=np.int64)
    neighbour = np.full((DRAWS, CANDIDATES), steps, dtype=np.int64)
    neighbour[:, 0] = -steps
    on_d = chooser.choose(d, SCORE_STEPS, SeededRandomSource(seed))
    on_neighbour = chooser.choose(neighbour, SCORE_STEPS, SeededRandomSource(seed + 1))
    more = np.asarray([np.count_nonzero(on_neighbour == 0)])
    less = np.asarray([np.count_nonzero(on_d == 0)])
    return float(epsilon_lower_bound(more, less, DRAWS)[0])


def test_the_recorded_choice_epsilon_is_the_mechanisms():
    chooser, record = _recorded()
    assert record.choice_epsilon == chooser.epsilon
    assert record.rho == chooser.epsilon**2 / 8
    assert record.pure_epsilon is None  # priced with its release in zCDP


def test_a_choice_stays_within_its_bounded_range_epsilon():
    chooser, record = _recorded()
    bound = _audit(chooser, seed=2501)
    assert 0.6 < bound <= float(record.choice_epsilon)


def test_a_mutant_choosing_at_twice_the_rate_is_caught():
    chooser, record = _recorded()
    mutant = ExponentialMechanism(2 * chooser.epsilon, chooser.sensitivity)
    assert _audit(mutant, seed=2503) > float(record.choice_epsilon)
