"""The release invariant for weighted releases: a frame and its neighbour (issue 15).

As in ``test_differential.py``, whose runner and comparison this reuses: ``D`` and ``D'``
(``D`` plus one adversarial row; same columns, dtypes and arguments) must raise alike, warn
alike, and give pre-noise results that differ by at most the charged sensitivity (L1 over
the released vector; weighted counts are compared like sums, since one row moves them by
its clipped weight, up to ``W``). The adversarial row carries a hostile *weight* (NaN, ±inf,
negative, 0, huge, beyond the int64 range, the bound and just above it, missing) in every
dtype a weight column may take (every release in float64, three in the others), or a
hostile *value* with an ordinary weight. Weighted models (``ols``, ``logit``) release their
coefficients: the same names, order and dtype on both neighbours. The default run takes a
stratified sample (``grid.py``: at least one case per release, hostile column and dtype),
``--full-grid`` every case; ``REFUSALS`` states which cases both neighbours refuse, and why.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
import pytest

from .grid import Refusal, check_rules, expected, params
from .test_differential import NUMBER_DTYPES, NUMBERS, Case, Release, _column, _compare, _run

BOUNDS = (0.0, 100.0)
W = {"weights": "w", "weight_bounds": (0.0, 5.0)}
BASE = 24
NAMED: dict[str, Any] = {"n": "count", "s": ("x", "sum"), "m": ("x", "mean")}

#: Hostile weights (tried in every dtype that can hold them).
WEIGHTS: dict[str, Any] = {
    "NaN": np.nan,
    "missing": None,
    "+inf": np.inf,
    "-inf": -np.inf,
    "negative": -5.0,
    "-0": -0.0,
    "zero": 0.0,
    "bound": 5.0,
    "just above bound": float(np.nextafter(5.0, np.inf)),
    "huge": 1e308,
    "-huge": -1e308,
    "2**62": 2**62,
    "-2**63": -(2**63),
}

RELEASES: dict[str, tuple[str, Release]] = {
    "count": ("sum", lambda p: p.dp.count(epsilon=1.0, **W)),
    "sum": ("sum", lambda p: p.dp.sum("x", bounds=BOUNDS, epsilon=1.0, **W)),
    "mean": ("stat", lambda p: p.dp.mean("x", bounds=BOUNDS, epsilon=1.0, **W)),
    "mean ci": ("stat", lambda p: p.dp.mean("x", bounds=BOUNDS, epsilon=1.0, ci=0.9, **W)),
    "histogram": ("sum", lambda p: p.dp.histogram("x", [0, 10, 50, 100], epsilon=1.0, **W)),
    "group count": (
        "sum",
        lambda p: p.dp.groupby("g", keys=["a", "b"]).count(epsilon=1.0, **W),
    ),
    "group sum": (
        "sum",
        lambda p: p.dp.groupby("g", keys=["a", "b"]).sum("x", bounds=BOUNDS, epsilon=1.0, **W),
    ),
    "group agg ci": (
        "stat",
        lambda p: p.dp.groupby("g", keys=["a", "b"]).agg(
            **NAMED, bounds={"x": BOUNDS}, epsilon=1.0, ci=0.9, relative_error=True, **W
        ),
    ),
    "gaussian sum": (
        "sum",
        lambda p: p.dp.sum("x", bounds=BOUNDS, epsilon=1.0, mechanism="gaussian", **W),
    ),
    # Models: the coefficients (a post-processed vector) keep their names, order and dtype.
    "wls": (
        "stat",
        lambda p: (
            p.dp.ols(
                "x ~ C(g)", bounds={"x": BOUNDS}, keys={"g": ["a", "b"]}, epsilon=1.0, **W
            ).params
        ),
    ),
    "weighted logit": (
        "stat",
        lambda p: (
            p.dp.logit(
                "I(x > 50) ~ C(g)", bounds={"x": BOUNDS}, keys={"g": ["a", "b"]}, epsilon=1.0, **W
            ).params
        ),
    ),
}

#: What runs on the other dtypes of the weight column (every release runs on float64).
CORE = ("count", "histogram", "group agg ci")


def _frames(x: list[Any], w: list[Any], dtype_x: str, dtype_w: str) -> Any:
    """D (the first BASE rows) and D' (one row more), or None when a dtype cannot hold them."""
    columns = [
        _column(values, dtype)
        for values, dtype in ((x[:BASE], dtype_x), (w[:BASE], dtype_w), (x, dtype_x), (w, dtype_w))
    ]
    if any(column is None for column in columns):
        return None
    before_x, before_w, after_x, after_w = columns
    if (str(before_x.dtype), str(before_w.dtype)) != (str(after_x.dtype), str(after_w.dtype)):
        return None
    groups = ["a", "b"] * (BASE // 2)
    before = pd.DataFrame({"x": before_x, "w": before_w, "g": groups})
    return before, pd.DataFrame({"x": after_x, "w": after_w, "g": [*groups, "a"]})


def _cases() -> list[Case]:
    xs = [float(i * 4 % 101) for i in range(BASE)]
    ws = [float(1 + i % 5) for i in range(BASE)]
    hostile = [
        ("w", name, [*xs, 50.0], [*ws, value], "float64", dtype)
        for name, value in WEIGHTS.items()
        for dtype in NUMBER_DTYPES
    ]
    hostile += [
        ("x", name, [*xs, value], [*ws, 5.0], dtype, "float64")
        for name, value in NUMBERS.items()
        for dtype in ("float64", "Float64")
    ]
    cases = []
    for column, value, x, w, dtype_x, dtype_w in hostile:
        frames = _frames(x, w, dtype_x, dtype_w)
        if frames is None:
            continue
        dtype = dtype_w if column == "w" else dtype_x
        names = RELEASES if "float64" == dtype_x == dtype_w else CORE
        for name in names:
            kind, release = RELEASES[name]
            case = Case(f"{name}-{column} {value}-{dtype}", kind, release, *frames, name, value)
            cases.append(replace(case, dtype=dtype, grid=column))
    return cases


#: Why both neighbours of a case are refused: every other case releases on both.
REFUSALS = [
    Refusal(
        lambda c: c.grid == "w" and c.dtype == "object",
        "DPTypeError",
        r"column 'w' has dtype object; .*this release needs int, float or bool",
        "an object weight column is refused by its dtype (public), before any weight is read",
        never_runs=True,
    ),
]


def _stratum(case: Case) -> tuple[str, str, str]:
    return case.family, case.grid, case.dtype


ALL = [replace(c, refusal=expected(REFUSALS, c)) for c in _cases()]
PARAMS = params(
    ALL, name=lambda c: c.name, stratum=_stratum, refused=lambda c: c.refusal is not None
)


@pytest.mark.parametrize("case", PARAMS)
def test_a_weighted_frame_and_its_neighbour_look_alike(case: Case) -> None:
    _compare(case, _run(case.before, case.release), _run(case.after, case.release))


def test_the_weighted_catalogue_is_wide() -> None:
    assert len(ALL) >= 300, len(ALL)
    assert {c.name.split("-", 1)[0] for c in ALL} == set(RELEASES)


def test_every_weighted_release_runs_somewhere_and_every_refusal_rule_is_live() -> None:
    check_rules(ALL, REFUSALS, stratum=_stratum, release=lambda c: c.family)
