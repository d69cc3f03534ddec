"""Optional dependencies, loaded lazily through one helper with an install hint."""

from __future__ import annotations

import importlib
from types import ModuleType

from pandas_dp.errors import MissingExtraError


def require(module: str, extra: str) -> ModuleType:
    """Import ``module``, or explain exactly how to install the extra that provides it."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise MissingExtraError(
            f"this feature needs the optional dependency {module.split('.')[0]!r}: "
            f"pip install 'pandas-dp[{extra}]'"
        ) from error
