"""Shared fixtures. Tests run with warnings as errors (pyproject.toml); the two sanctioned
privacy hazards of testing, seeds and captured noise, go through these fixtures, which assert
the PrivacyLeakWarning they must raise."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from importlib import resources
from typing import Any

import pandas as pd
import pytest

import pandas_dp
from pandas_dp.testing import NoiseCall, capture_noise


@pytest.fixture(scope="session")
def census_data() -> pd.DataFrame:
    """The bundled 1,000-person census extract (read once; copy before mutating)."""
    with resources.files("pandas_dp.data").joinpath("pums_california_1000.csv").open() as f:
        return pd.read_csv(f)


@pytest.fixture
def census(census_data: pd.DataFrame) -> pd.DataFrame:
    """A fresh copy of the census extract, unprotected."""
    return census_data.copy()


@pytest.fixture
def protect_seeded() -> Callable[..., Any]:
    """``protect_seeded(obj, seed=0, **kwargs)``: protect with a seed, asserting the warning."""

    def protect(obj: Any, seed: int = 0, **kwargs: Any) -> Any:
        with pytest.warns(pandas_dp.PrivacyLeakWarning, match="seeded rng"):
            return obj.dp.protect(rng=seed, **kwargs)

    return protect


@pytest.fixture
def noise() -> Callable[..., AbstractContextManager[list[NoiseCall]]]:
    """``with noise(priv, value=0) as calls:`` replaces noise by ``value`` and records calls."""

    @contextmanager
    def capture(target: Any, value: int = 0) -> Iterator[list[NoiseCall]]:
        manager = capture_noise(target, value)
        with pytest.warns(pandas_dp.PrivacyLeakWarning, match="capture_noise"):
            calls = manager.__enter__()
        try:
            yield calls
        finally:
            manager.__exit__(None, None, None)

    return capture


@pytest.fixture
def charges_nothing() -> Callable[[Any], AbstractContextManager[None]]:
    """``with charges_nothing(priv): ...`` asserts the block left the budget and ledger as is."""

    @contextmanager
    def check(priv: Any) -> Iterator[None]:
        session = priv.dp.session
        spent, releases = session.spent, len(session.releases)
        yield
        assert session.spent == spent
        assert len(session.releases) == releases
        assert len(session.ledger) == releases

    return check


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--full-grid",
        action="store_true",
        help="run every case of the differential neighbour grids (tests/invariant), not only "
        "their stratified sample; with -m full_grid, only the cases the sample leaves out",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the grid cases outside the sample; run the statistical tests first.

    The differential neighbour grids mark the cases outside their seeded, stratified sample
    ``full_grid`` (``tests/invariant/grid.py``): they run with ``--full-grid`` only.

    The seeded statistical tests run first, the rest in their usual order. They are a few
    dozen of the suite's ten thousand tests but hold its longest ones (audits of a million
    releases take up to a minute each). Under ``pytest -n`` the workers take tests
    in this order, so the long ones start while many short ones are left to balance the
    workers' ends; collected last, as their folder sorts, one could start when the other
    worker has nothing left to do.
    """
    if not config.getoption("--full-grid"):
        left_out = [item for item in items if item.get_closest_marker("full_grid") is not None]
        if left_out:
            config.hook.pytest_deselected(items=left_out)
            items[:] = [item for item in items if item.get_closest_marker("full_grid") is None]
    items.sort(key=lambda item: item.get_closest_marker("statistical") is None)
