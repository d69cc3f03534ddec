"""The public API is declared in ``pandas_dp.__all__`` and nothing else is promised."""

from __future__ import annotations

import importlib

import pandas as pd
import pytest

import pandas_dp

PUBLIC = {
    "Budget",
    "BudgetExceededError",
    "DPError",
    "DPKeyError",
    "DPTypeError",
    "DPValueError",
    "DataFrameDPAccessor",
    "DuplicatedRowsError",
    "Estimate",
    "LedgerError",
    "MissingExtraError",
    "NotProtectedError",
    "Preview",
    "NoiseDominatedWarning",
    "plot_intervals",
    "PrivacyLeakWarning",
    "ReleaseFailedError",
    "SeriesDPAccessor",
    "Session",
    "SpecError",
    "__version__",
}


def test_all_is_exactly_the_public_set() -> None:
    assert set(pandas_dp.__all__) == PUBLIC
    assert len(pandas_dp.__all__) == len(PUBLIC)  # no name listed twice


def test_every_public_name_is_importable() -> None:
    module = importlib.import_module("pandas_dp")
    for name in pandas_dp.__all__:
        assert getattr(module, name) is not None, name
    namespace: dict[str, object] = {}
    exec("from pandas_dp import *", namespace)
    assert set(namespace) - {"__builtins__"} == PUBLIC


def test_public_classes_say_where_they_live() -> None:
    for name in pandas_dp.__all__:
        member = getattr(pandas_dp, name)
        if isinstance(member, type):
            assert member.__module__.startswith("pandas_dp."), name
            assert member.__doc__, f"{name} has no docstring"


def test_version_is_a_string() -> None:
    assert isinstance(pandas_dp.__version__, str)
    assert pandas_dp.__version__.count(".") >= 2


def test_import_registers_the_accessors() -> None:
    assert pd.DataFrame.dp is pandas_dp.DataFrameDPAccessor
    assert pd.Series.dp is pandas_dp.SeriesDPAccessor
    pandas_dp.api.accessors.register()  # idempotent: registering again changes nothing
    assert pd.DataFrame.dp is pandas_dp.DataFrameDPAccessor


SUBPACKAGES = [
    "pandas_dp.api.accessors",
    "pandas_dp.api.release",
    "pandas_dp.planning.statistics",
    "pandas_dp.engines",
    "pandas_dp.publish",
    "pandas_dp.local",
]


@pytest.mark.parametrize("name", SUBPACKAGES)
def test_every_subpackage_declares_what_it_exports(name: str) -> None:
    module = importlib.import_module(name)
    exported = module.__all__
    assert exported, name
    assert len(set(exported)) == len(exported)
    for member in exported:
        assert hasattr(module, member), f"{name}.{member}"
