"""The release invariant on Dask, differentially: a collection and its neighbour.

The same comparison as ``test_differential.py`` (same adversarial values, same rules), for
the Dask releases that have no pandas twin in that suite's path: row-level protection
(traced through the expression graph, no shuffle) and Series releases under a unit
(released from their frame next to the unit ids). A subset of dtypes keeps it fast, and the
default run a stratified sample (``grid.py``: at least one case per release and dtype);
``--full-grid`` runs every case. Every case releases on both neighbours.
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
import pytest

from pandas_dp.testing import capture_noise

from .grid import params
from .test_differential import BASE, BOUNDS, NUMBERS, Case, Outcome, _column, _compare, _warnings

dd = pytest.importorskip("dask.dataframe")  # the optional extra pandas-dp[dask]

RELEASES = {
    "rows sum": ("rows", "sum", lambda p: p.dp.sum("x", bounds=BOUNDS, epsilon=1.0)),
    "rows series sum": ("rows", "sum", lambda p: (p["x"] * 1).dp.sum(bounds=BOUNDS, epsilon=1.0)),
    "rows group count": (
        "rows",
        "count",
        lambda p: p.dp.groupby("g", keys=["a", "b"]).count(epsilon=1.0),
    ),
    "unit series sum": ("unit", "sum", lambda p: p["x"].dp.sum(bounds=BOUNDS, epsilon=1.0)),
}
DTYPES = ["float64", "int64"]
#: The adversarial values that reach different code (the rest behave like one of these).
VALUES = ["-0", "NaN", "+inf", "-huge", "just above upper", "2**62", "-2**63", "missing"]


def _cases() -> list[tuple[str, Case]]:
    cases = []
    base = [float(i % 90) for i in range(BASE)]
    for value_name in VALUES:
        value = NUMBERS[value_name]
        for dtype in DTYPES:
            before_x, after_x = _column(base, dtype), _column([*base, value], dtype)
            if before_x is None or after_x is None or str(before_x.dtype) != str(after_x.dtype):
                continue
            groups = ["a", "b"] * (BASE // 2)
            before = pd.DataFrame({"x": before_x, "g": groups, "pid": np.arange(BASE)})
            after = pd.DataFrame({"x": after_x, "g": [*groups, "a"], "pid": np.arange(BASE + 1)})
            for name, (unit, kind, release) in RELEASES.items():
                case = Case(f"{name}-{value_name}-{dtype}", kind, release, before, after)
                cases.append((unit, replace(case, family=name, value=value_name, dtype=dtype)))
    return cases


ALL = _cases()
PARAMS = params(
    ALL,
    name=lambda uc: uc[1].name,
    stratum=lambda uc: (uc[1].family, uc[1].dtype),
    values=lambda uc: uc,
)


def _run(frame: pd.DataFrame, unit: str, release: Any) -> Outcome:
    collection = dd.from_pandas(frame, npartitions=2)
    options: dict[str, Any] = {"epsilon": 100.0, "delta": 1e-6}
    if unit == "unit":
        options.update(privacy_unit="pid", max_rows_per_unit=1)
    priv = collection.dp.protect(**options)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with capture_noise(priv):
                result = release(priv)
        except Exception as error:  # the type is what is compared
            return Outcome(type(error).__name__, _warnings(caught), text=str(error))
    records = priv.dp.session.releases
    sensitivity = max(
        (m.sensitivity * 2.0**m.exponent for r in records for m in r.measurements), default=0.0
    )
    return Outcome(None, _warnings(caught), result, sensitivity)


@pytest.mark.parametrize(("unit", "case"), PARAMS)
def test_a_collection_and_its_neighbour_look_alike(unit: str, case: Case) -> None:
    import dask

    with dask.config.set(scheduler="sync"):
        before, after = _run(case.before, unit, case.release), _run(case.after, unit, case.release)
    assert before.error is None, case.name  # these releases succeed on every value
    _compare(case, before, after)


def test_the_dask_catalogue_covers_every_release() -> None:
    assert {c.name.split("-", 1)[0] for _, c in ALL} == set(RELEASES)
    assert len(ALL) >= 40
