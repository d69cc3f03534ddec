"""The optimal partition-selection rule: its table, its exactness, and the API path.

The DP inequalities are checked in exact rational arithmetic, with e^ε bounded from above
(the stricter side for the check) by a Fraction, independently of the code under test.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from pandas_dp.errors import DPValueError
from pandas_dp.mechanisms.optimal_selection import ONE, first_at_least, keep, keep_table
from pandas_dp.mechanisms.random import SeededRandomSource
from pandas_dp.mechanisms.selection import keep_probability, selection_threshold

from ..statistical.auditing import epsilon_lower_bound

CASES = [(Fraction(1), Fraction(1, 10**6)), (Fraction(1, 5), Fraction(1, 5 * 10**6)),
         (Fraction(1, 10), Fraction(1, 10**9)), (Fraction(3), Fraction(1, 10**5))]  # fmt: skip


def exp_upper(epsilon: Fraction) -> Fraction:
    """A rational upper bound of e^ε (the float rounded up by two ulps)."""
    return Fraction(math.nextafter(math.nextafter(math.exp(float(epsilon)), math.inf), math.inf))


@pytest.mark.parametrize(("epsilon", "delta"), CASES)
def test_every_step_is_allowed_and_nearly_optimal(epsilon, delta):
    table = keep_table(epsilon, delta)
    assert table[0] == 0
    assert table[-1] == ONE
    assert (np.diff(table) > 0).all()
    # The realised probabilities satisfy both neighbour inequalities exactly (the reverse
    # ones follow from monotonicity), even with e^ε rounded *down* to the float below.
    e = Fraction(math.nextafter(math.exp(float(epsilon)), 0.0))
    for before, after in itertools.pairwise(table):
        p0, p1 = Fraction(int(before), ONE), Fraction(int(after), ONE)
        assert p1 <= e * p0 + delta
        assert 1 - p0 <= e * (1 - p1) + delta
    # ... and fall short of the recurrence in floats by a relative 1e-6 at most (a few units
    # of 2**-53 per step, grown by e^ε per step).
    grow, pi = math.exp(float(epsilon)), 0.0
    for n in range(1, len(table)):
        pi = min(grow * pi + float(delta), 1 - (1 - pi - float(delta)) / grow, 1.0)
        assert pi - table[n] / ONE <= 1e-6 * pi


def test_the_issues_numbers_against_the_threshold_rule():
    # ε = 1, δ = 1e-6, one key per unit; and 5 keys per unit (ε/5, δ/5 per key).
    optimal = keep_table(Fraction(1), Fraction(1, 10**6))
    assert (first_at_least(optimal, 0.5), first_at_least(optimal, 0.99)) == (14, 18)
    five = keep_table(Fraction(1, 5), Fraction(1, 5 * 10**6))
    assert (first_at_least(five, 0.5), first_at_least(five, 0.99)) == (67, 86)
    for keys, expected in ((1, (15, 19)), (5, (76, 96))):
        scale = Fraction(keys)  # L1 sensitivity = keys per unit, ε = 1
        threshold = selection_threshold(scale, Fraction(1, 10**6), keys, 1)
        curve = [keep_probability(n, threshold, scale) for n in range(200)]
        found = tuple(next(n for n, p in enumerate(curve) if p >= level) for level in (0.5, 0.99))
        assert found == expected


def test_the_draw_has_the_tables_law():
    table = keep_table(Fraction(1), Fraction(1, 100))
    n = 400_000
    units = np.tile(np.arange(len(table) + 2), n // (len(table) + 2))
    words = SeededRandomSource(3).randbytes(8 * len(units)).view(np.uint64)
    kept = keep(units, table, words)
    for count in range(len(table) + 2):
        p = table[min(count, len(table) - 1)] / ONE
        observed = kept[units == count].mean()
        m = int((units == count).sum())
        assert abs(observed - p) <= 6 * math.sqrt(p * (1 - p) / m) + 1e-12, count


def test_privacy_loss_audit_with_a_mutant():
    # Neighbours: a key with n - 1 and n units. The loss of {kept} is log(π(n)/π(n-1)),
    # at most ε once π(n-1) is well above δ; a table built for 2ε is caught.
    draws = 1_000_000
    for epsilon, factor, caught in ((Fraction(1), 1, False), (Fraction(1, 2), 4, True)):
        table = keep_table(epsilon * factor, Fraction(1, 1000))
        n = 3  # π(2) and π(3): well above δ, below 1
        source = SeededRandomSource(11 + factor)
        hits = []
        for units in (n, n - 1):
            words = source.randbytes(8 * draws).view(np.uint64)
            hits.append(int(keep(np.full(draws, units), table, words).sum()))
        bound = float(
            epsilon_lower_bound(np.array([hits[0]]), np.array([hits[1]]), draws, delta=1e-3)[0]
        )
        assert (bound > float(epsilon)) is caught, (epsilon, factor, hits, bound)


def test_the_api_path_charges_the_choice_and_keeps_the_threshold_default(protect_seeded):
    gen = np.random.default_rng(0)
    data = pd.DataFrame(
        {"g": gen.choice(list("abcdef"), 3000, p=[0.4, 0.3, 0.2, 0.05, 0.04, 0.01])}
    )
    priv = protect_seeded(data, epsilon=10, delta=1e-5)
    counts = priv.dp.groupby("g", selection="optimal").count(epsilon=1.0)
    release = priv.dp.session.releases[-1]
    labels = [m.label for m in release.measurements]
    assert labels == ["count", "keys"]
    choice = release.measurements[1]
    assert choice.mechanism == "optimal_selection"
    assert choice.epsilon == Fraction(1, 2)
    assert choice.extra_delta == Fraction(1, 10**6)
    assert release.cost.delta == Fraction(1, 10**6)
    assert "optimal rule" in release.note
    assert set(counts.index) <= set("abcdef")
    assert list(counts.index) == sorted(counts.index)  # a data-independent order
    priv.dp.groupby("g", selection="threshold").count(
        epsilon=1.0
    )  # the default stays the threshold rule
    assert [m.label for m in priv.dp.session.releases[-1].measurements] == ["count+selection"]
    with pytest.raises(DPValueError, match="selection"):
        priv.dp.groupby("g", selection="best")
    with pytest.raises(DPValueError, match="public"):
        priv.dp.groupby("g", keys=list("abc"), selection="optimal")
