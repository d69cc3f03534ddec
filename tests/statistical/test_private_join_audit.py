"""Empirical privacy-loss audits of releases after joins of two protected tables (issue 40).

- **The join on the unit.** ``people`` (``max_rows_per_unit=1``) and ``visits``
  (``max_rows_per_unit=3``) in one budget, joined on ``pid``: the joined frame caps each
  unit at ``1·3`` rows. D holds 40 units with one visit each; D' adds unit 99 with one person
  row and three visits, so the exact joined count moves by three, and the count's scale must
  be the cap 3/ε. The mutant "forgot the stability" calibrates as if each unit were one
  joined row (scale 1/ε): really 3ε-DP, and caught.
- **The private join** (row-level, ``max_rows_per_key = m = 2``, stability ``2·m = 4``). Key
  7 holds two left rows at x = -1 and two right rows; D' adds a left row of key 7 at x = +1
  which the truncation keeps (its priority comes first) and which evicts a -1 row: the sum
  of x over the joined rows moves by ``m·(1 - (-1)) = 4``, the stability times the sum's
  sensitivity 1. Priorities are fixed per row (the coupling of the privacy argument); the
  audit is of the noise, given them, exactly as the bound is claimed for every draw. The
  mutant "forgot the stability" (sensitivity 1 instead of 4) is really 4ε-DP, and caught.

Each release is audited as in ``test_join_audit.py`` (exact values from the API with the
noise captured, the very mechanism it drew from, 10^6 vectorised releases, the event chosen
on an independent run).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from pandas_dp.api.session import Session
from pandas_dp.mechanisms.laplace import DiscreteLaplace

from .auditing import audit, vectorised_runs

pytestmark = pytest.mark.statistical

EPSILON = Fraction(1)
M = 2


# --- the join on the unit ---------------------------------------------------------------------


def unit_tables(extra: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    people = pd.DataFrame({"pid": range(40), "age": [30, 40] * 20})
    visits = pd.DataFrame({"pid": range(40), "cost": [1.0] * 40})
    if extra:
        people = pd.concat([people, pd.DataFrame({"pid": [99], "age": [50]})], ignore_index=True)
        more = pd.DataFrame({"pid": [99] * 3, "cost": [2.0] * 3})
        visits = pd.concat([visits, more], ignore_index=True)
    return people, visits


def unit_join_count(extra: bool, protect_seeded, noise, seed: int):
    people, visits = unit_tables(extra)
    priv = protect_seeded(people, seed=seed, epsilon=1.0, privacy_unit="pid", max_rows_per_unit=1)
    seen = visits.dp.protect(session=priv.dp.session, privacy_unit="pid", max_rows_per_unit=3)
    with noise(priv, value=0) as calls:
        exact = priv.dp.merge(seen, on="pid").dp.count(epsilon=float(EPSILON))
    (call,) = calls
    return exact, call.mechanism


def test_unit_join_audit_and_the_forgot_the_stability_mutant(protect_seeded, noise) -> None:
    exact_d, mechanism = unit_join_count(False, protect_seeded, noise, seed=1)
    exact_d2, mechanism2 = unit_join_count(True, protect_seeded, noise, seed=2)
    assert (exact_d, exact_d2) == (40, 43)  # the added unit has three joined rows
    assert mechanism == mechanism2  # the noise does not depend on the data
    assert mechanism.scale == 3 / EPSILON  # the cap 1·3, not one row

    real = audit(*vectorised_runs((exact_d, exact_d2), mechanism, 1.0, seed=7400))
    print(f"count after the join on the unit, real mechanism: {real}")
    assert real.epsilon_lb <= EPSILON, f"the joined count leaks more than ε: {real}"
    assert real.epsilon_lb >= 0.8, f"the joined count is noisier than calibrated: {real}"

    forgot = DiscreteLaplace(1 / EPSILON)  # as if each unit were one joined row
    caught = audit(*vectorised_runs((exact_d, exact_d2), forgot, 1.0, seed=7400))
    print(f"count after the join on the unit, 'forgot the stability' mutant: {caught}")
    assert caught.epsilon_lb > 2 * EPSILON, f"the mutant was not caught: {caught}"


# --- the private join -------------------------------------------------------------------------


def private_tables(extra: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    left = pd.DataFrame({"k": [1, 2, 3, 4, 7, 7], "x": [0.5, -0.5, 1.0, 0.0, -1.0, -1.0]})
    right = pd.DataFrame({"k": [1, 2, 2, 5, 7, 7]})
    if extra:  # last: the other rows keep their priorities
        left = pd.concat([left, pd.DataFrame({"k": [7], "x": [1.0]})], ignore_index=True)
    return left, right


def private_join_sum(extra: bool, protect_seeded, noise, monkeypatch, seed: int):
    left, right = private_tables(extra)
    priv = protect_seeded(left, seed=seed, epsilon=2.0)
    other = right.dp.protect(session=priv.dp.session)
    # fixed priorities per row: the added row (position 6) comes first, row 5 last
    words = iter(
        [np.array([5, 6, 7, 8, 9, 10, 1], dtype=np.uint64), np.arange(10, 20, dtype=np.uint64)]
    )
    with monkeypatch.context() as patch:
        patch.setattr(Session, "priorities", lambda self, n: next(words)[:n].copy())
        joined = priv.dp.merge(other, on="k", max_rows_per_key=M)
    assert joined.dp.session.stability == 2 * M
    with noise(joined, value=0) as calls:
        exact = joined.dp.sum("x", bounds=(-1.0, 1.0), epsilon=float(EPSILON))
    with noise(joined, value=1):
        step = joined.dp.sum("x", bounds=(-1.0, 1.0), epsilon=float(EPSILON)) - exact
    (call,) = calls
    return exact, step, call.mechanism


def test_private_join_audit_and_the_forgot_the_stability_mutant(
    protect_seeded, noise, monkeypatch
) -> None:
    exact_d, step, mechanism = private_join_sum(False, protect_seeded, noise, monkeypatch, 3)
    exact_d2, step2, mechanism2 = private_join_sum(True, protect_seeded, noise, monkeypatch, 4)
    assert exact_d2 - exact_d == 2 * M  # the kept +1 row and the evicted -1 row, m times each
    assert (step, mechanism) == (step2, mechanism2)  # public parameters only
    # scale (lattice units) · g = stability · Δ / ε, Δ = 1
    assert mechanism.scale * Fraction(step) == 2 * M / EPSILON

    real = audit(*vectorised_runs((exact_d, exact_d2), mechanism, step, seed=7500))
    print(f"sum after a private join, real mechanism: {real}")
    assert real.epsilon_lb <= EPSILON, f"the joined sum leaks more than ε: {real}"
    assert real.epsilon_lb >= 0.8, f"the joined sum is noisier than calibrated: {real}"

    forgot = DiscreteLaplace(mechanism.scale / (2 * M))  # as if a row moved one joined row
    caught = audit(*vectorised_runs((exact_d, exact_d2), forgot, step, seed=7500))
    print(f"sum after a private join, 'forgot the stability' mutant: {caught}")
    assert caught.epsilon_lb > 2 * EPSILON, f"the mutant was not caught: {caught}"
