"""Empirical privacy-loss audits of the audit's identity shapes (issue 23), each with its mutant.

1. Relabelling: person 0 has 50 rows at x = 1, people 1-100 one row at x = 0, one row per
   person (``max_rows_per_unit=1``), and the analyst releases
   ``priv.sort_values("x").reset_index(drop=True).dp.sum("x", bounds=(0, 1))``. D' lacks
   person 0. A row belongs to the id it holds, so the exact sums are 1 and 0. The mutant is
   the old attribution by index label: each renumbered row takes the id the protected frame
   held under its new label (person 0's rows become people 51-100), and the sums are 50 and 0.
2. The Dask exchange: object ids ``2 .. 39`` and person 1 as ``1``, ``1.0`` and ``True``
   (three rows), a count under ``max_rows_per_unit=1``; D' lacks person 1. The ids are made
   canonical before rows are moved, so the exact counts are 39 and 38. The mutant is the old
   bucketing by ``hash_pandas_object``, which told the three forms apart (emulated by ids
   spelt as their ``repr``): 41 and 38, the audit's ε ≥ 2.15 at a budget of 1.

The exact values come from the public API with the noise captured (zero); the outputs are
those values plus draws from the very mechanism the release used, as in
``test_privacy_audit.py``; the event is chosen on a calibration run and ε bounded on an
independent evaluation run (``auditing``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import dask
import dask.dataframe as dd
import pandas as pd
import pytest

import pandas_dp
from pandas_dp.testing import capture_noise

from .auditing import audit, vectorised_runs

pytestmark = pytest.mark.statistical

EPSILON = 1.0


def _released(priv: Any, release: Callable[[Any], Any]) -> tuple[float, Any, float]:
    """The exact (zero-noise) value, the mechanism and the lattice step of one release."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
        with capture_noise(priv) as calls:
            value = float(release(priv))
    (call,) = calls
    (measured,) = priv.dp.session.releases[-1].measurements
    return value, call.mechanism, math.ldexp(1.0, measured.exponent)


def _people(with_person_0: bool) -> pd.DataFrame:
    heavy = pd.DataFrame({"u": [0] * 50, "x": 1.0})
    others = pd.DataFrame({"u": range(1, 101), "x": 0.0})
    return pd.concat([heavy, others] if with_person_0 else [others], ignore_index=True)


def _relabelled(frame: pd.DataFrame, by_label: bool) -> Any:
    priv = frame.dp.protect(epsilon=100, privacy_unit="u", max_rows_per_unit=1)
    derived = priv.sort_values("x").reset_index(drop=True)
    if by_label:  # the old attribution: the id the protected frame held under each label
        derived = derived.assign(u=priv["u"].reindex(derived.index).to_numpy())
    return derived


def _sum(p: Any) -> Any:
    return p.dp.sum("x", bounds=(0, 1), epsilon=EPSILON)


def _relabelling_runs(by_label: bool) -> Any:
    d, mechanism, step = _released(_relabelled(_people(True), by_label), _sum)
    d2, _, _ = _released(_relabelled(_people(False), by_label), _sum)
    return (d, d2), vectorised_runs((d, d2), mechanism, step, seed=5300)


def test_relabelled_rows_stay_with_their_person_and_the_label_mutant_is_caught() -> None:
    exact, runs = _relabelling_runs(by_label=False)
    assert exact == (1.0, 0.0)
    real = audit(*runs)
    print(f"relabelling, ids read from the rows: {real}")
    assert real.epsilon_lb <= EPSILON, f"the relabelled sum leaks more than ε: {real}"
    exact, runs = _relabelling_runs(by_label=True)
    assert exact == (50.0, 0.0)  # the audit's pre-noise sum
    mutant = audit(*runs)
    print(f"relabelling, ids looked up by label (old): {mutant}")
    assert mutant.epsilon_lb > 5 * EPSILON, f"the label mutant was not caught: {mutant}"


def _ids(with_person_1: bool, spelt: bool) -> pd.Series:
    """Ids as values, or (the mutant) as texts of their type and value, which no canonical
    form merges (texts such as "1.0" and "True" are read as the numbers they spell)."""
    forms: list[Any] = [1, 1.0, True] if with_person_1 else []
    values = list(range(2, 40)) + forms
    return pd.Series([f"{type(v).__name__}:{v!r}" if spelt else v for v in values], dtype=object)


def _exchanged_count(with_person_1: bool, spelt: bool) -> tuple[float, Any, float]:
    frame = pd.DataFrame({"u": _ids(with_person_1, spelt), "x": 1.0})
    with dask.config.set({"dataframe.convert-string": False, "scheduler": "sync"}):
        collection = dd.from_pandas(frame, npartitions=3, sort=False)
        priv = collection.dp.protect(epsilon=100, privacy_unit="u", max_rows_per_unit=1)
        return _released(priv, lambda p: p.dp.count(epsilon=EPSILON))


def test_one_id_in_three_forms_is_one_unit_on_dask_and_the_hash_mutant_is_caught() -> None:
    (d, mechanism, step), (d2, _, _) = (_exchanged_count(w, False) for w in (True, False))
    assert (d, d2) == (39.0, 38.0)
    real = audit(*vectorised_runs((d, d2), mechanism, step, seed=5400))
    print(f"Dask exchange, canonical ids: {real}")
    assert real.epsilon_lb <= EPSILON, f"the exchanged count leaks more than ε: {real}"
    (d, mechanism, step), (d2, _, _) = (_exchanged_count(w, True) for w in (True, False))
    assert (d, d2) == (41.0, 38.0)  # the audit's pre-noise count
    mutant = audit(*vectorised_runs((d, d2), mechanism, step, seed=5400))
    print(f"Dask exchange, ids hashed as spelt (old): {mutant}")
    assert mutant.epsilon_lb > 2 * EPSILON, f"the hash mutant was not caught: {mutant}"
