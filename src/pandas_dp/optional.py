"""Optional dependencies, loaded lazily through one helper with an install hint.

:func:`require` imports an extra's module or explains how to install it;
:func:`when_imported` runs a callback once a module has been imported by someone else
(the ``.dp`` accessor is registered on Dask collections that way, without importing Dask).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable, Sequence
from types import ModuleType

from pandas_dp.errors import MissingExtraError, warn

Callback = Callable[[ModuleType], None]


def require(module: str, extra: str) -> ModuleType:
    """Import ``module``, or explain exactly how to install the extra that provides it."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise MissingExtraError(
            f"this feature needs the optional dependency {module.split('.')[0]!r}: "
            f"pip install 'pandas-dp[{extra}]'"
        ) from error


def when_imported(module: str, callback: Callback) -> None:
    """Call ``callback(module)`` now if ``module`` is imported, else right after its import.

    Never imports ``module`` itself. Registering the same pair twice has no effect.
    """
    loaded = sys.modules.get(module)
    if loaded is not None:
        _run(callback, loaded)
        return
    for finder in sys.meta_path:
        if isinstance(finder, _AfterImport) and (finder.name, finder.callback) == (
            module,
            callback,
        ):
            return
    sys.meta_path.insert(0, _AfterImport(module, callback))


def _run(callback: Callback, module: ModuleType) -> None:
    try:
        callback(module)
    except Exception as error:  # never break the user's own import of the other library
        warn(f"pandas-dp could not hook into {module.__name__}: {error}", RuntimeWarning)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the real loader of one module to run a callback after it."""

    def __init__(self, name: str, callback: Callback) -> None:
        self.name = name
        self.callback = callback

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        """The module's real spec with a loader that calls back once it has run."""
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)  # one shot, and no recursion below
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = None if find is None else find(fullname, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _CallbackLoader(spec.loader, self.callback)
                return spec
        return None


class _CallbackLoader(importlib.abc.Loader):
    """Delegates to the real loader, then restores it on the module and calls back."""

    def __init__(self, loader: importlib.abc.Loader, callback: Callback) -> None:
        self.loader = loader
        self.callback = callback

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        """Whatever the real loader creates."""
        module: ModuleType | None = self.loader.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Run the module, then the callback."""
        module.__loader__ = self.loader
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        _run(self.callback, module)

    def __getattr__(self, name: str) -> object:
        return getattr(self.loader, name)
