"""A released model predicts public rows only (issue 42's "per-row and private: say so").

``model.predict(priv)`` on the protected frame (or a frame derived from it, pandas or Dask)
would hand out one prediction per protected row, as ``fittedvalues`` would, and an error
naming a row's category outside the model's levels: both are refused, before any row is
read, for ``ols`` and ``logit``, ``predict`` and ``get_prediction``. Public rows still work.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

from pandas_dp.errors import DPValueError
from pandas_dp.marks import carries_mark


def data(n: int = 400) -> pd.DataFrame:
    gen = np.random.default_rng(3)  # test data only, never noise
    return pd.DataFrame({
        "y": gen.integers(0, 2, n),
        "x": gen.normal(size=n).clip(-3, 3),
        "h": gen.choice(["u", "v"], n),
    })  # fmt: skip


FITS: dict[str, Callable[[Any], Any]] = {
    "ols": lambda p: p.dp.ols(
        "y ~ x + C(h)", bounds={"x": (-3, 3), "y": (0, 1)}, keys={"h": ["u", "v"]}, epsilon=1.0
    ),
    "logit": lambda p: p.dp.logit(
        "y ~ x + C(h)", bounds={"x": (-3, 3)}, keys={"h": ["u", "v"]}, epsilon=1.0
    ),
}
ROWS: dict[str, Callable[[Any], Any]] = {
    "the protected frame": lambda p: p,
    "a filter of it": lambda p: p[p["x"] > 0],
    "a column selection": lambda p: p[["x", "h"]],
    "a row with an unknown level": lambda p: p.assign(h="secret"),
}


@pytest.mark.parametrize("fit", list(FITS))
@pytest.mark.parametrize("rows", list(ROWS))
def test_protected_rows_are_refused(fit: str, rows: str) -> None:
    priv = data().dp.protect(epsilon=10.0)
    model = FITS[fit](priv)
    exog = ROWS[rows](priv)
    assert carries_mark(exog)
    spent = priv.dp.session.spent
    with pytest.raises(DPValueError, match="predict takes public rows") as caught:
        model.predict(exog)
    assert "secret" not in str(caught.value)
    with pytest.raises(DPValueError, match="predict takes public rows"):
        model.get_prediction(exog)
    assert priv.dp.session.spent == spent


def test_dask_rows_are_refused_too() -> None:
    dd = pytest.importorskip("dask.dataframe")
    model = FITS["logit"](data().dp.protect(epsilon=10.0))
    lazy = dd.from_pandas(data(), npartitions=2).dp.protect(epsilon=1.0)
    with pytest.raises(DPValueError, match="predict takes public rows"):
        model.predict(lazy)


@pytest.mark.parametrize("fit", list(FITS))
def test_public_rows_still_predict(fit: str) -> None:
    model = FITS[fit](data().dp.protect(epsilon=10.0))
    grid = pd.DataFrame({"x": [-1.0, 0.0, 1.0], "h": ["u", "v", "u"]})
    assert not carries_mark(grid)
    predicted = model.predict(grid)
    assert list(predicted.index) == [0, 1, 2]
    assert np.isfinite(predicted.to_numpy()).all()
    frame = model.get_prediction(grid).summary_frame()
    assert len(frame) == 3
