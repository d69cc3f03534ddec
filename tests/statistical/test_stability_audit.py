"""Empirical privacy-loss audit of a count after a one-to-many join without a privacy unit.

Row-level privacy, a public table in which key 3 matches ``k = 3`` rows: the joined frame's
stability is 3 (:mod:`pandas_dp.transformations.stability`), so a count on it is calibrated
to 3 rows. D holds rows whose keys match one public row each; D' adds one row of key 3,
which the join makes three rows: the exact count moves by 3. The release is audited as in
``test_join_audit.py`` (exact counts from the API with the noise captured, the very
mechanism it drew from, 10^6 vectorised releases, event chosen on an independent run).

The mutant "forgot the stability" calibrates the count to one row: really ``3ε``-DP, and
caught.
"""

from __future__ import annotations

from fractions import Fraction

import pandas as pd
import pytest

from pandas_dp.mechanisms.laplace import DiscreteLaplace

from .auditing import audit, vectorised_runs

pytestmark = pytest.mark.statistical

EPSILON = Fraction(1)
K = 3
PUBLIC = pd.DataFrame({"code": [1, 2, 3, 3, 3], "day": ["Mo", "Tu", "Mo", "We", "Fr"]})


def joined_count(frame: pd.DataFrame, protect_seeded, noise, seed: int):
    priv = protect_seeded(frame, seed=seed, epsilon=1.0)
    with noise(priv, value=0) as calls:
        exact = priv.dp.merge(PUBLIC, on="code").dp.count(epsilon=float(EPSILON))
    (call,) = calls
    return exact, call.mechanism


def test_row_level_join_audit_and_the_forgot_the_stability_mutant(protect_seeded, noise) -> None:
    d = pd.DataFrame({"code": [1, 2] * 20})
    d2 = pd.concat([d, pd.DataFrame({"code": [3]})], ignore_index=True)
    exact_d, mechanism = joined_count(d, protect_seeded, noise, seed=1)
    exact_d2, mechanism2 = joined_count(d2, protect_seeded, noise, seed=2)
    assert (exact_d, exact_d2) == (40, 43)  # the added row became three
    assert mechanism == mechanism2  # the noise does not depend on the data
    assert mechanism.scale == K / EPSILON  # the stability, not one row

    real = audit(*vectorised_runs((exact_d, exact_d2), mechanism, 1.0, seed=7310))
    print(f"count after a row-level one-to-many join, real mechanism: {real}")
    assert real.epsilon_lb <= EPSILON, f"the joined count leaks more than ε: {real}"
    assert real.epsilon_lb >= 0.8, f"the joined count is noisier than calibrated: {real}"

    forgot = DiscreteLaplace(1 / EPSILON)  # as if each protected row stayed one row
    caught = audit(*vectorised_runs((exact_d, exact_d2), forgot, 1.0, seed=7310))
    print(f"count after a row-level one-to-many join, 'forgot the stability': {caught}")
    assert caught.epsilon_lb > 2 * EPSILON, f"the mutant was not caught: {caught}"
