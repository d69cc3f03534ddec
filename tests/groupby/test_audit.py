"""Empirical privacy-loss audit of a grouped count (house style of
``tests/statistical/test_privacy_audit.py``; the audit is ``tests/statistical/auditing.py``).

Method (black-box audits of Jagielski, Ullman & Oprea 2020; Nasr et al. 2021): release the
grouped count many times on neighbouring datasets D and D' (D' = D plus one row in one
group), pick an event E = {output >= T} or {output <= T} on a calibration run, bound
P(E | D) from below and P(E | D') from above with one-sided Clopper–Pearson intervals on a
separate evaluation run, and report ε_lb = log(lower / upper). An ε-DP release satisfies
P(E | D) <= e^ε P(E | D') for every event, so if both bounds hold ε_lb <= ε. Each bound fails
with probability at most ALPHA / 2, so an honest mechanism reports ε_lb > ε with probability
at most ALPHA = 1e-6; the seeds are fixed, so the outcome never changes between runs.

Which output is audited. The release is a vector, one noisy count per key, with independent
noise per key. D and D' differ in one key's exact count only, so the other coordinates have
the same distribution under both and are independent of the differing one: the likelihood
ratio of the whole vector equals that of the differing coordinate, and the most telling
events are events on that coordinate. The audit looks at it alone.

Vectorised releases. The differing coordinate of a release is ``exact count + Z`` with Z one
discrete Laplace variate drawn from the mechanism object the planner built (captured with
the ``noise`` fixture, together with the exact counts); successive releases use independent
draws. So 10^6 variates from that very object added to the exact count have exactly the
distribution of 10^6 releases. The public API is also audited end to end, on fewer samples.

Power. For discrete Laplace noise at ε = 1 the best events have probabilities 0.73 vs 0.27
and privacy loss exactly ε; with 10^6 releases per dataset the confidence bounds cost about
0.011 and the standard error is about 0.002, so the real mechanism scores about 0.99 and a
half-noise mutant (truly ε = 2) about 1.98.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from pandas_dp.mechanisms.laplace import DiscreteLaplace

from ..statistical.auditing import audit, half_noise, vectorised_runs

pytestmark = pytest.mark.statistical

EPSILON = Fraction(1)
# The vectorised audits calibrate on 200,000 and evaluate on 1,000,000 releases per dataset
# (the defaults of auditing.vectorised_runs) at confidence 1 - auditing.ALPHA = 1 - 1e-6.
N_PUBLIC = 2_000
#: With 10^6 releases the real mechanism scores ε - 0.011 ± 0.002: 0.9 is 40 standard
#: errors away. With 2,000 releases the bounds cost about 0.23 and the standard error is
#: 0.04: 0.5 is 6.7 standard errors below the expected 0.77. Failing these means too much
#: noise (e.g. the ε of one group spent on each of several), which the upper check misses.
TIGHT_VECTORISED, TIGHT_PUBLIC = 0.9, 0.5
KEYS = ["a", "b", "c"]


# --- the datasets ----------------------------------------------------------------------------


def neighbours(extra_in: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """D: 50 rows in keys a and b plus rows outside the keys; D' = D plus one row in
    ``extra_in`` (an occupied key, or the empty key c)."""
    d = pd.DataFrame({"g": ["a"] * 30 + ["b"] * 20 + ["zz"] * 5, "x": 1.0})
    d2 = pd.concat([d, pd.DataFrame({"g": [extra_in], "x": [1.0]})], ignore_index=True)
    return d, d2


def captured(priv: pd.DataFrame, noise) -> tuple[pd.Series, DiscreteLaplace]:
    with noise(priv, value=0) as calls:
        exact = priv.dp.groupby("g", keys=KEYS).count(epsilon=float(EPSILON))
    (call,) = calls
    assert call.size == len(KEYS)
    return exact, call.mechanism


@pytest.mark.parametrize("extra_in", ["b", "c"])
def test_grouped_count_audit_vectorised(protect_seeded, noise, extra_in):
    d, d2 = neighbours(extra_in)
    exact_d, mechanism = captured(protect_seeded(d, seed=1, epsilon=1), noise)
    exact_d2, mechanism2 = captured(protect_seeded(d2, seed=2, epsilon=1), noise)
    difference = (exact_d2 - exact_d).to_dict()
    assert difference == {k: int(k == extra_in) for k in KEYS}  # neighbours: one row apart
    assert mechanism == mechanism2  # the noise does not depend on the data
    assert mechanism.scale == 1 / EPSILON  # L1 sensitivity 1 for the whole vector

    values = (float(exact_d[extra_in]), float(exact_d2[extra_in]))
    real = audit(*vectorised_runs(values, mechanism, seed=5000))
    print(f"grouped count (extra row in {extra_in}), real mechanism: {real}")
    assert real.epsilon_lb <= EPSILON, f"grouped count leaks more than ε = 1: {real}"
    assert real.epsilon_lb >= TIGHT_VECTORISED, f"grouped count is noisier than calibrated: {real}"

    mutant = audit(*vectorised_runs(values, half_noise(mechanism), seed=5000))
    print(f"grouped count (extra row in {extra_in}), half-noise mutant: {mutant}")
    assert mutant.epsilon_lb > EPSILON, f"the half-noise mutant was not caught: {mutant}"


def test_grouped_count_audit_through_the_public_api(protect_seeded, noise):
    d, d2 = neighbours("b")
    budget = N_PUBLIC + 1
    priv = protect_seeded(d, seed=3, epsilon=budget)
    priv2 = protect_seeded(d2, seed=4, epsilon=budget)
    exact_d, mechanism = captured(priv, noise)
    exact_d2, _ = captured(priv2, noise)
    values = (float(exact_d["b"]), float(exact_d2["b"]))
    # The event is chosen on a separate, vectorised calibration run of the same mechanism.
    calibration, _ = vectorised_runs(values, mechanism, seed=6000)
    grouped = [p.dp.groupby("g", keys=KEYS) for p in (priv, priv2)]
    releases = [
        np.array([g.count(epsilon=float(EPSILON)).to_numpy() for _ in range(N_PUBLIC)])
        for g in grouped
    ]
    result = audit(calibration, (releases[0][:, 1] * 1.0, releases[1][:, 1] * 1.0))
    print(f"grouped count, public API ({N_PUBLIC} releases per dataset): {result}")
    assert result.epsilon_lb <= EPSILON, f"grouped count leaks more than ε = 1: {result}"
    assert result.epsilon_lb >= TIGHT_PUBLIC, f"grouped count is noisier than calibrated: {result}"
    # The untouched keys have the same law on both sides: an audit of key a finds nothing.
    same = audit(
        vectorised_runs((30.0, 30.0), mechanism, seed=7000)[0],
        (releases[0][:, 0] * 1.0, releases[1][:, 0] * 1.0),
    )
    assert same.epsilon_lb <= 0.0, same
    # The noise of different keys is independent: correlation of a's and c's noise ~ N(0, 1/n)
    # per dataset; |r| < 5/√2000 ≈ 0.11 fails for independent noise with p < 1e-6.
    for r in releases:
        assert abs(np.corrcoef(r[:, 0], r[:, 2])[0, 1]) < 5 / np.sqrt(N_PUBLIC)
    # Every release was charged once, whatever the number of keys.
    assert priv.dp.session.spent.epsilon == budget
    assert (priv.dp.session.ledger["groups"] == len(KEYS)).all()
