"""The Dask path releases exactly what the pandas path releases, given the same noise.

Each query of the catalogue (``conftest.QUERIES``) runs on a protected pandas frame and on
the same rows as a Dask collection of several partitions, with the session's noise replaced
by a constant; results, their index and dtypes, and the ledger rows must be identical. No
unit exceeds its caps in this data, so contribution bounding keeps every row on both paths
whatever its random choices (the bound itself is tested in ``test_bounding.py``).
"""

from __future__ import annotations

from typing import Any

import dask
import pytest


@pytest.fixture(autouse=True)
def threads() -> Any:
    with dask.config.set(scheduler="threads"):
        yield


@pytest.mark.parametrize(
    ("npartitions", "value"), [(5, 0), (1, 3), (12, -2)], ids=["5-parts", "1-part", "12-parts"]
)
def test_every_query_agrees_before_noise(query, twins, agree, npartitions, value) -> None:
    dask_priv, pandas_priv = twins(npartitions=npartitions)
    agree(query, dask_priv, pandas_priv, value)
