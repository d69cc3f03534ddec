"""Frames and comparisons for the zero-noise oracle (``test_zero_noise.py``, issue 24).

With the noise captured as zero and bounds wide enough that nothing is clipped, a release is
the pandas computation of the same thing on the same rows. Written from the documentation
(README, ``docs/cheat-sheet.md``, the how-to guides), never from pandas_dp's code.

The data are integers or dyadic rationals (multiples of 1/8, weights multiples of 1/4), so
every documented lattice (steps ``2**k`` with ``k <= 0`` for these bounds) holds them
exactly: sums and counts must then be equal, ratios equal up to float rounding. Datetimes are
not on the nanosecond lattice; their tolerance is half a lattice step, read from the
release's measurements (``Measurement.exponent``: a step is ``2**exponent`` ns).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np
import pandas as pd

import pandas_dp
from pandas_dp.testing import capture_noise

ROWS = 600
GROUPS = ["a", "b", "c", "d"]  # "d" holds no row
NUMBER_BOUNDS = (0, 100)
YEAR = (pd.Timestamp("2020-01-01"), pd.Timestamp("2021-01-01"))
SPAN = (pd.Timedelta(0), pd.Timedelta(hours=2))
#: quantiles are grid edges: the documented grid has 4,096 cells between the bounds
CELLS = 4096
#: ratios (means, spreads) of exact sums: pandas' float result within this relative error
RATIO = 1e-9

NUMERIC = ["int64", "float64", "Int64", "Float64"]
TEMPORAL = ["datetime", "timedelta"]
KEYLIKE = ["object", "category", "string", "int64", "bool"]
ALL = [*NUMERIC, "bool", "category", "string", *TEMPORAL]


def exact(priv: Any, release: Callable[[Any], Any]) -> Any:
    """``release(priv)`` with the noise captured as zero (warnings about it silenced)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
        with capture_noise(priv):
            return release(priv)


# --- data -------------------------------------------------------------------------------------
@cache
def _base() -> pd.DataFrame:
    gen = np.random.default_rng(24)  # test data only, never noise
    n = ROWS
    hours = gen.integers(0, 366 * 24, n)
    t = YEAR[0] + pd.to_timedelta(hours, unit="h")
    # a few values exactly on month starts: they tell left-closed bins from right-closed ones
    starts = pd.date_range(YEAR[0], periods=12, freq="MS")
    t = t.where(np.arange(n) % 50 != 7, starts[(np.arange(n) // 50) % 12])
    return pd.DataFrame(
        {
            "g": gen.choice(GROUPS[:3], n),
            "k": gen.choice(["p", "q", "r"], n),
            "x": gen.integers(0, 101, n),
            "y": gen.integers(0, 801, n) / 8,
            "w": gen.integers(0, 17, n) / 4,
            "t": t,
            "d": pd.to_timedelta(gen.integers(0, 121, n), unit="min"),
            "missing": gen.random(n) < 0.05,
            "flag": gen.random(n) < 0.4,
        }
    )


def value_column(dtype: str) -> pd.Series:
    """Column ``v`` of ``dtype``: values within :func:`bounds_of` (missing ones where the dtype
    can hold them)."""
    base = _base()
    missing = base["missing"].to_numpy()
    if dtype == "int64":
        return base["x"].astype("int64")
    if dtype == "float64":
        return base["y"].mask(missing)
    if dtype == "Int64":
        return base["x"].astype("Int64").mask(missing)
    if dtype == "Float64":
        return base["y"].astype("Float64").mask(missing)
    if dtype == "bool":
        return base["flag"].astype(bool)
    if dtype == "category":
        return base["k"].astype(pd.CategoricalDtype(["p", "q", "r", "s"]))
    if dtype == "string":
        return base["k"].astype("string").mask(missing)
    if dtype == "datetime":
        return base["t"].mask(missing)
    if dtype == "timedelta":
        return base["d"].mask(missing)
    if dtype == "object":
        return base["k"].astype(object)
    raise AssertionError(dtype)


def key_column(dtype: str) -> tuple[pd.Series, list[Any]]:
    """Column ``k`` as ``dtype`` with its public keys (one key that holds no row)."""
    k = _base()["k"]
    if dtype == "object":
        return k.astype(object), ["p", "q", "r", "s"]
    if dtype == "category":
        return k.astype(pd.CategoricalDtype(["p", "q", "r", "s"])), ["p", "q", "r", "s"]
    if dtype == "string":
        return k.astype("string"), ["p", "q", "r", "s"]
    if dtype == "int64":
        return k.map({"p": 1, "q": 2, "r": 3}).astype("int64"), [1, 2, 3, 4]
    if dtype == "bool":
        return (k == "p").astype(bool), [False, True]
    raise AssertionError(dtype)


def frame(dtype: str, key_dtype: str = "object") -> pd.DataFrame:
    """The test frame: ``v`` of ``dtype``, ``k`` of ``key_dtype``; ``g``, ``x`` (int), ``y``
    (dyadic, with NaN), ``w`` (weights in [0, 4]), ``t`` (datetimes), ``d`` (durations)."""
    base = _base()
    k, _ = key_column(key_dtype)
    return pd.DataFrame(
        {
            "g": base["g"].astype(object),
            "k": k,
            "v": value_column(dtype),
            "x": base["x"],
            "y": base["y"].mask(base["missing"].to_numpy()[::-1]),
            "w": base["w"],
            "t": base["t"],
            "d": base["d"],
        }
    )


def bounds_of(dtype: str) -> tuple[Any, Any]:
    if dtype == "datetime":
        return YEAR
    if dtype == "timedelta":
        return SPAN
    if dtype == "bool":
        return (0, 1)
    return NUMBER_BOUNDS


def cell_of(dtype: str) -> float:
    """Width of one grid cell, in the numbers the comparisons use (ns for time)."""
    lower, upper = bounds_of(dtype)
    return _number(upper) / CELLS - _number(lower) / CELLS


def keyed(result: Any, keys: Any = GROUPS, name: str = "g") -> Any:
    """A pandas group-by result over exactly the public keys, in their order."""
    return result.reindex(pd.Index(keys, name=name))


def counts(result: Any, keys: Any = GROUPS, name: str = "g") -> Any:
    """Counts over the public keys: 0 for a key without rows, int64 as pandas' counts."""
    return keyed(result, keys, name).fillna(0).astype(np.int64)


def lattice_step(priv: Any, *, labels: tuple[str, ...] = ("sum",)) -> float:
    """The largest lattice step of the session's last release among measurements whose label
    contains one of ``labels`` (a step is ``2**exponent`` in the column's units, ns for time)."""
    release = priv.dp.session.releases[-1]
    steps = [
        2.0**m.exponent for m in release.measurements if any(label in m.label for label in labels)
    ]
    assert steps, [m.label for m in release.measurements]
    return max(steps)


# --- comparisons ------------------------------------------------------------------------------
def _number(value: Any) -> float:
    """A released or pandas scalar as a float: time as ns, any missing value as NaN."""
    if value is None or (pd.api.types.is_scalar(value) and pd.isna(value)):
        return np.nan
    if isinstance(value, np.datetime64):
        value = pd.Timestamp(value)
    if isinstance(value, np.timedelta64):
        value = pd.Timedelta(value)
    if isinstance(value, pd.Timestamp | pd.Timedelta):
        return float(value.as_unit("ns").value)
    return float(value)


def numbers(values: Any) -> np.ndarray:
    return np.array([_number(v) for v in values], dtype=np.float64)


def _plain(label: Any) -> Any:
    """A label as a plain Python value; every kind of missing value as the string "<NA>"."""
    if isinstance(label, tuple):
        return tuple(_plain(part) for part in label)
    if pd.api.types.is_scalar(label) and pd.isna(label):
        return "<NA>"
    return label.item() if isinstance(label, np.generic) else label


def same_labels(ours: pd.Index, theirs: pd.Index) -> None:
    assert list(ours.names) == list(theirs.names), (ours.names, theirs.names)
    assert [_plain(v) for v in ours] == [_plain(v) for v in theirs], (list(ours), list(theirs))


def _pairs(ours: Any, theirs: Any, integers: bool = True) -> list[tuple[Any, Any]]:
    """Same kind of object, labels and names (integer dtypes where pandas has them, unless
    ``integers`` is false: grid values); then the (ours, theirs) value vectors."""
    if not isinstance(theirs, pd.Series | pd.DataFrame):
        assert not isinstance(ours, pd.Series | pd.DataFrame), type(ours)
        ours_int, theirs_int = (isinstance(x, int | np.integer) for x in (ours, theirs))
        assert not integers or ours_int == theirs_int, (
            type(ours),
            type(theirs),
        )
        kinds = (pd.Timestamp, pd.Timedelta)
        assert [isinstance(ours, k) for k in kinds] == [isinstance(theirs, k) for k in kinds], (
            type(ours),
            type(theirs),
        )
        return [([ours], [theirs])]
    assert type(ours) is type(theirs), (type(ours), type(theirs))
    same_labels(ours.index, theirs.index)
    if isinstance(theirs, pd.DataFrame):
        same_labels(ours.columns, theirs.columns)
        pairs = [(ours[c], theirs[c]) for c in theirs.columns]
    else:
        assert ours.name == theirs.name, (ours.name, theirs.name)
        pairs = [(ours, theirs)]
    for mine, reference in pairs:
        assert not integers or pd.api.types.is_integer_dtype(
            mine.dtype
        ) == pd.api.types.is_integer_dtype(reference.dtype), (mine.dtype, reference.dtype)
        assert (mine.dtype.kind in "mM") == (reference.dtype.kind in "mM"), (
            mine.dtype,
            reference.dtype,
        )
    return pairs


def assert_equal(ours: Any, theirs: Any, *, rtol: float = 0.0, atol: float = 0.0) -> None:
    """Same structure; values equal within ``atol + rtol·|pandas|`` (NaN exactly where NaN)."""
    for mine, reference in _pairs(ours, theirs):
        got, want = numbers(mine), numbers(reference)
        assert np.array_equal(np.isnan(got), np.isnan(want)), (got, want)
        ok = np.isnan(want) | (np.abs(got - want) <= atol + rtol * np.abs(want))
        assert ok.all(), (got[~ok], want[~ok])


def assert_bracketed(ours: Any, lower: Any, higher: Any, cell: float) -> None:
    """Grid values: ``lower - cell <= ours <= higher + cell`` (pandas' quantiles with
    interpolation "lower" and "higher"), NaN exactly where pandas gives NaN."""
    pairs = _pairs(ours, lower, integers=False)
    highs = [h for _, h in _pairs(ours, higher, integers=False)]
    for (mine, low), high in zip(pairs, highs, strict=True):
        got, lo, hi = numbers(mine), numbers(low), numbers(high)
        assert np.array_equal(np.isnan(got), np.isnan(lo)), (got, lo)
        slack = cell * (1 + 1e-9)
        ok = np.isnan(lo) | ((lo - slack <= got) & (got <= hi + slack))
        assert ok.all(), {"released": got[~ok], "lower": lo[~ok], "higher": hi[~ok]}
