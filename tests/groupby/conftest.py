"""Helpers for the grouped-release tests: a lattice from the documented rule, data with
planted secrets, and a "charged nothing" check.

The lattice is written from the documented rule (``sum_lattice`` Notes in
``pandas_dp.mechanisms.lattice``), not imported from it, so the glue tests compare the
implementation with its specification:

- ``Δ`` is the largest contribution of one row: ``max(|L|, |U|)`` for a plain sum,
  ``(U - L)/2`` for a centred one; ``ε`` is the ε of that sum *per row*, i.e. the
  measurement's ε divided by the L1 contribution bound of a privacy unit (1 for rows);
- the step ``g = 2**k`` is the smallest power of two with ``g >= max(Δ, Δ/ε) / 2**36``,
  capped at the largest power of two ``<= (U - L)/4`` and never below
  ``max(|L|, |U|) / 2**61``;
- a value becomes ``rint(clip(x, L, U) / g)`` (half to even), minus the offset
  ``(rint(L/g) + rint(U/g)) // 2`` when centred;
- a call that needs both the plain and the centred sum of one column uses the finer of the
  two steps for both, unless at that step one row of the plain sum would exceed ``2**37``
  units (or ``|bounds| / g`` would exceed ``2**61``); then each keeps its own step.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest

from ..oracles.lattice import Lattice, shared_lattices

RefLattice = Lattice


@pytest.fixture
def lattices() -> Callable[..., dict[str, RefLattice]]:
    """``lattices(lower, upper, epsilon_per_row, plain=..., centred=...)``."""
    return shared_lattices


@pytest.fixture
def regional(census: pd.DataFrame) -> pd.DataFrame:
    """The census extract with a region, a string column, missing incomes and outliers.

    Regions are spread unevenly; ``west`` has no rows (an empty group), and 17 rows sit in
    an ``elsewhere`` region that no public key names. Every 7th income is missing.
    """
    data = census.copy()
    rng = np.random.default_rng(20240601)
    region = rng.choice(["north", "south", "east"], size=len(data), p=[0.5, 0.3, 0.2])
    region[rng.choice(len(data), size=17, replace=False)] = "elsewhere"
    data["region"] = region
    data["income"] = data["income"].astype("float64")
    data.loc[data.index[::7], "income"] = np.nan
    data.loc[[1, 2, 3], "income"] = [1e9, -5e4, 123456.789]
    return data
