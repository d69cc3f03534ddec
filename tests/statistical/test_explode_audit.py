"""Empirical privacy-loss audit of a count after ``priv.dp.explode(column, max_items=c)``.

Under row-level privacy ``explode`` keeps at most ``c`` items of each row's list, so one
protected row becomes at most ``c`` rows of the result: its stability is ``c``, and every
later release multiplies its sensitivity by it. D holds rows whose lists have one item each;
D' adds one row whose list has ``c`` items (and more, cut to ``c``): after the explode it is
``c`` rows, and the exact count moves by ``c``. The release is audited as in
``test_join_audit.py`` (exact counts from the API with the noise captured, the very mechanism
it drew from, 10^6 vectorised releases, event chosen on an independent run).

The mutant "forgot the stability" calibrates the count as if each protected row stayed one
row (sensitivity 1 instead of ``c``): really ``cε``-DP, and caught.
"""

from __future__ import annotations

from fractions import Fraction

import pandas as pd
import pytest

from pandas_dp.mechanisms.laplace import DiscreteLaplace

from .auditing import audit, vectorised_runs

pytestmark = pytest.mark.statistical

EPSILON = Fraction(1)
C = 3  # max_items: the items kept per row


def neighbours() -> tuple[pd.DataFrame, pd.DataFrame]:
    """D: 40 rows of one tag each; D': D plus one row of 2c tags (cut to c)."""
    d = pd.DataFrame({"tags": [["a"], ["b"]] * 20})
    added = pd.DataFrame({"tags": [["a", "b", "c", "d", "e", "f"]]})
    return d, pd.concat([d, added], ignore_index=True)


def exploded_count(frame: pd.DataFrame, protect_seeded, noise, seed: int):
    priv = protect_seeded(frame, seed=seed, epsilon=1.0)
    with noise(priv, value=0) as calls:
        exact = priv.dp.explode("tags", max_items=C).dp.count(epsilon=float(EPSILON))
    (call,) = calls
    return exact, call.mechanism


def test_explode_audit_and_the_forgot_the_stability_mutant(protect_seeded, noise) -> None:
    d, d2 = neighbours()
    exact_d, mechanism = exploded_count(d, protect_seeded, noise, seed=1)
    exact_d2, mechanism2 = exploded_count(d2, protect_seeded, noise, seed=2)
    assert (exact_d, exact_d2) == (40, 40 + C)  # the added row became c rows
    assert mechanism == mechanism2  # the noise does not depend on the data
    assert mechanism.scale == C / EPSILON  # the stability, not one row

    real = audit(*vectorised_runs((exact_d, exact_d2), mechanism, 1.0, seed=7400))
    print(f"count after explode (c = {C}), real mechanism: {real}")
    assert real.epsilon_lb <= EPSILON, f"the exploded count leaks more than ε: {real}"
    assert real.epsilon_lb >= 0.8, f"the exploded count is noisier than calibrated: {real}"

    forgot = DiscreteLaplace(1 / EPSILON)  # as if each protected row stayed one row
    caught = audit(*vectorised_runs((exact_d, exact_d2), forgot, 1.0, seed=7400))
    print(f"count after explode, the 'forgot the stability' mutant: {caught}")
    assert caught.epsilon_lb > 2 * EPSILON, (
        f"the forgot-the-stability mutant was not caught: {caught}"
    )
