"""Helpers for the API tests: a from-the-docs lattice and a "charged nothing" check.

The lattice here is written from the documented rule (``DataFrame.dp.sum`` Notes), not from
``pandas_dp.mechanisms.lattice``, so glue tests compare the implementation with the spec:
the step ``g = 2**k`` is the smallest power of two with ``g >= max(Δ, Δ/ε) / 2**36``,
capped at the largest power of two ``<= (U - L) / 4``, and never below
``max(|L|, |U|) / 2**61``; each value is clipped to the bounds and rounded to a multiple of
``g``; a mean centres the values on the lattice point nearest the midpoint and
spends ``ε · share`` on that sum.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest

from ..oracles.lattice import Lattice, reference_lattice

ReferenceLattice = Lattice


@pytest.fixture
def lattice() -> Callable[..., ReferenceLattice]:
    """``lattice(lower, upper, epsilon, centered=False)``: the documented lattice."""
    return reference_lattice


@pytest.fixture
def glue_data(census: pd.DataFrame) -> pd.DataFrame:
    """The census extract with missing incomes, outliers on both sides, and off-lattice reals.

    ``frac`` holds reals in [-0.5, 1.5] that no coarse lattice represents exactly.
    """
    data = census.copy()
    data["income"] = data["income"].astype("float64")
    data.loc[data.index[::9], "income"] = np.nan
    data.loc[[1, 2, 4, 5], "income"] = [12345.678, 1e9, -50.0, 4999.9996]
    data["frac"] = np.random.default_rng(20240611).uniform(-0.5, 1.5, len(data))
    data.loc[[3, 6], "frac"] = [np.inf, -np.inf]
    return data
