"""Private-PGM's ``mechanisms/`` scripts, written for ``mbi`` 1.x, run on ``mbi`` 2.x.

The scripts (``mst.py``, ``aim.py``) read ``Dataset.df`` and ``Domain.attrs``, build a
``Dataset`` from a DataFrame whose mapped columns may come out as objects, extend a model's
cliques with a list, and call ``estimation.mirror_descent(domain, measurements, iters=...,
potentials=...)``. Here those
names are added back on top of the 2.x API, each the 2.x equivalent: nothing of the
reference's algorithm is changed. Importing this module does it once; with ``mbi`` 1.x it
does nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd


class _Cliques(tuple):  # type: ignore[type-arg]
    """A model's cliques as 2.x gives them (a tuple) that 1.x code may extend with a list."""

    def __add__(self, other: Any) -> _Cliques:
        return _Cliques((*self, *other))


def install() -> None:
    """Add the 1.x names the reference scripts use; nothing with 1.x or when already done."""
    import mbi
    from mbi import estimation

    if hasattr(estimation, "mirror_descent"):  # mbi 1.x, or installed already
        return
    original = mbi.Dataset.__post_init__

    def post_init(self: Any) -> None:
        data = {k: np.asarray(v).astype(np.int64) for k, v in self.data.items()}
        object.__setattr__(self, "data", data)  # 1.x took any integer-valued columns
        original(self)

    def mirror_descent(
        domain: Any, measurements: Any, iters: int = 1000, potentials: Any = None,
        callback_fn: Any = None, **_: Any,
    ) -> Any:  # fmt: skip
        return estimation.MirrorDescent().estimate(
            domain, list(measurements), iters=iters, warm_start=potentials,
            callback_fn=callback_fn,
        )  # fmt: skip

    cliques = mbi.MarkovRandomField.cliques.fget
    mbi.Dataset.__post_init__ = post_init
    mbi.Dataset.df = property(lambda self: pd.DataFrame(self.to_dict()))
    mbi.Domain.attrs = property(lambda self: self.attributes)
    # 1.x code writes ``model.cliques + [clique]``: a tuple that also adds a list.
    mbi.MarkovRandomField.cliques = property(lambda self: _Cliques(cliques(self)))
    estimation.mirror_descent = mirror_descent
