"""Empirical privacy-loss audit of a count after a one-to-many join with a public table.

Under ``privacy_unit="pid", max_rows_per_unit=K`` a join may turn one protected row into
several (here ``k = 3`` public rows share the key of the added unit's row), and every later
release caps each unit's rows by its id, so its sensitivity is the cap ``K``, whatever the
join made of the rows (Tumult's truncation). D holds units whose keys match one public row
each; D' adds one unit with one row whose key matches three: after the join it holds three
rows, within the cap, and the exact count moves by three. The release is audited as in
``test_privacy_audit.py`` (exact counts from the API with the noise captured, the very
mechanism it drew from, 10^6 vectorised releases, event chosen on an independent run).

The mutant "forgot k" calibrates the count as if the join kept one row per protected row
(sensitivity 1 instead of the cap): really ``3ε``-DP, and caught.
"""

from __future__ import annotations

from fractions import Fraction

import pandas as pd
import pytest

from pandas_dp.mechanisms.laplace import DiscreteLaplace

from .auditing import audit, vectorised_runs

pytestmark = pytest.mark.statistical

EPSILON = Fraction(1)
K = 3  # max_rows_per_unit: the cap every release applies to a unit's joined rows
PUBLIC = pd.DataFrame(
    {"code": [1, 2, 3, 3, 3], "day": ["Mo", "Tu", "Mo", "We", "Fr"]}
)  # code 3 matches k = 3 public rows


def neighbours() -> tuple[pd.DataFrame, pd.DataFrame]:
    """D: 40 units of one row each, codes 1 and 2; D': D plus unit 99 with one row of code 3."""
    d = pd.DataFrame({"pid": range(40), "code": [1, 2] * 20})
    d2 = pd.concat([d, pd.DataFrame({"pid": [99], "code": [3]})], ignore_index=True)
    return d, d2


def joined_count(frame: pd.DataFrame, protect_seeded, noise, seed: int):
    priv = protect_seeded(frame, seed=seed, epsilon=1.0, privacy_unit="pid", max_rows_per_unit=K)
    with noise(priv, value=0) as calls:
        exact = priv.dp.merge(PUBLIC, on="code").dp.count(epsilon=float(EPSILON))
    (call,) = calls
    return exact, call.mechanism


def test_join_audit_and_the_forgot_k_mutant(protect_seeded, noise) -> None:
    d, d2 = neighbours()
    exact_d, mechanism = joined_count(d, protect_seeded, noise, seed=1)
    exact_d2, mechanism2 = joined_count(d2, protect_seeded, noise, seed=2)
    assert (exact_d, exact_d2) == (40, 43)  # the added unit's row became three
    assert mechanism == mechanism2  # the noise does not depend on the data
    assert mechanism.scale == K / EPSILON  # the cap, not one row

    real = audit(*vectorised_runs((exact_d, exact_d2), mechanism, 1.0, seed=7300))
    print(f"count after a one-to-many join, real mechanism: {real}")
    assert real.epsilon_lb <= EPSILON, f"the joined count leaks more than ε: {real}"
    assert real.epsilon_lb >= 0.8, f"the joined count is noisier than calibrated: {real}"

    forgot_k = DiscreteLaplace(1 / EPSILON)  # as if each protected row stayed one row
    caught = audit(*vectorised_runs((exact_d, exact_d2), forgot_k, 1.0, seed=7300))
    print(f"count after a one-to-many join, the 'forgot k' mutant: {caught}")
    assert caught.epsilon_lb > 2 * EPSILON, f"the forgot-k mutant was not caught: {caught}"
