"""Privacy-loss audit of ``max_rows_per_unit="auto"``'s cap step (issue 41).

The cap is the bounds scan (audited in ``test_bounds_audit.py``) over one number per unit,
its rows (:func:`~pandas_dp.api.queries.unit_caps.rows_per_unit`): a unit more adds one
value, whatever its number of rows. Here the per-unit counts come from the library on two
neighbouring frames (D: 8,000 units of 2 rows; D' adds a unit of 64 rows), and the scan runs
as the release calibrates it (``bound_part`` at the cap's level and the release's ε) on
them; its output (the stopping point) is audited as in :mod:`tests.statistical.auditing`.

The mutant counts rows instead of units (each row carrying its unit's count, as a release
that forgot to collapse a unit's rows would): the added unit then adds 64 values, which
moves the scan's stopping point past 2, and is caught.

The points from 0 up to the first at 1 (128 of them, below every value) are not simulated:
every score there is ``-qn·n``, thousands of noise scales below the threshold, so the scan
stops there with probability below ``e**-1000``.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from pandas_dp.api.queries import unit_caps
from pandas_dp.measures.grids import lattice
from pandas_dp.mechanisms.bounds import bound_scores, scan_index
from pandas_dp.mechanisms.random import SeededRandomSource
from pandas_dp.planning.measurement.choices import bound_part

from .auditing import audit, paired_runs

pytestmark = pytest.mark.statistical

EPSILON = Fraction(1)
LEVEL = Fraction(unit_caps.CAP_QUANTILE).limit_denominator(10_000)
POINTS = lattice()
ZERO = int(np.searchsorted(POINTS, 0.0))  # the scan upwards starts at the point 0
FROM = int(np.searchsorted(POINTS, 1.0)) - ZERO  # in scan order: the first point at 1
K = 32  # points from 1 upwards: 1 .. 2**7 and more, past every count here


def counts(extra_rows: int | None, per_row: bool) -> np.ndarray:
    """The per-unit counts the library computes (or, ``per_row``, one per row: the mutant)."""
    units = np.repeat(np.arange(8000), 2)
    if extra_rows is not None:
        units = np.concatenate([units, np.full(extra_rows, 10**6)])
    frame = pd.DataFrame({"pid": units})
    priv = frame.dp.protect(epsilon=1.0, privacy_unit="pid", max_rows_per_unit=1)
    per_unit = unit_caps.rows_per_unit(priv, priv.dp.session).to_numpy()
    return np.repeat(per_unit, per_unit.astype(np.int64)) if per_row else per_unit


def edge_ranks(values: np.ndarray) -> np.ndarray:
    """``#{x < c}`` then ``#{x <= c}`` at every lattice point (written from the definition)."""
    ordered = np.sort(values)
    below = np.searchsorted(ordered, POINTS, side="left")
    at_most = np.searchsorted(ordered, POINTS, side="right")
    return np.concatenate([below, at_most])[None, :]


def outputs(values: np.ndarray, n: int, seed: int) -> np.ndarray:
    part = bound_part(unit_caps.COLUMN, LEVEL, EPSILON, 1, "cap")
    scores = bound_scores(edge_ranks(values), part.q, part.side)[:, FROM : FROM + K]
    source = SeededRandomSource(seed)
    rho = part.threshold_noise.sample(n, source)
    nu = part.query_noise.sample(n * K, source).reshape(n, K)
    return scan_index(np.tile(np.asarray(scores, dtype=np.int64), (n, 1)), part.threshold, rho, nu)


def test_cap_step_audit_and_the_rows_not_units_mutant() -> None:
    assert POINTS[ZERO] == 0.0
    assert POINTS[ZERO + FROM] == 1.0
    assert POINTS[ZERO + FROM + K - 1] > 64  # every count lies on the simulated points
    d, d2 = counts(None, per_row=False), counts(64, per_row=False)
    assert (len(d), len(d2)) == (8000, 8001)  # a unit more: one value more

    def real(dataset: int, n: int, seed: int) -> np.ndarray:
        return outputs(d if dataset == 0 else d2, n, seed)

    honest = audit(*paired_runs(real, seed=1300, n_calibration=100_000, n_evaluation=200_000))
    print(f"cap step, real: {honest}")
    assert honest.epsilon_lb <= float(EPSILON), f"the cap step leaks more than ε: {honest}"

    m, m2 = counts(None, per_row=True), counts(64, per_row=True)
    assert len(m2) - len(m) == 64  # the mutant's neighbour: 64 values more

    def mutant(dataset: int, n: int, seed: int) -> np.ndarray:
        return outputs(m if dataset == 0 else m2, n, seed)

    caught = audit(*paired_runs(mutant, seed=1400, n_calibration=100_000, n_evaluation=200_000))
    print(f"cap step, rows-not-units mutant: {caught}")
    assert caught.epsilon_lb > 2 * float(EPSILON), f"the mutant was not caught: {caught}"
