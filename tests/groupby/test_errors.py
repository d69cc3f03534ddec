"""Every bad argument of a grouped release raises the right DPError subclass before anything
is charged: the session's spent budget and its ledger are unchanged."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

from pandas_dp.errors import BudgetExceededError, DPError, DPKeyError, DPTypeError, DPValueError

REGIONS = ["north", "south", "east", "west"]
BOUNDS = (0, 2e5)


def data() -> pd.DataFrame:
    rng = np.random.default_rng(8)
    n = 120
    return pd.DataFrame(
        {
            "region": rng.choice(REGIONS, n),
            "text": pd.Series(rng.choice(["x", "y"], n), dtype="string"),
            "objects": pd.Series(rng.choice(["x", "y"], n), dtype=object),
            "sex": rng.integers(0, 2, n),
            "income": rng.uniform(0, 1e5, n),
            "cat": pd.Categorical(rng.choice(["p", "q"], n)),
            "when": pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 3, n), "D"),
            "flag": rng.integers(0, 2, n).astype(bool),
        }
    )


def count_with(by: Any, keys: Any) -> Callable[[pd.DataFrame], Any]:
    return lambda p: p.dp.groupby(by, keys=keys).count(epsilon=0.5)


def grouped(p: pd.DataFrame):
    return p.dp.groupby("region", keys=REGIONS)


BAD_KEYS: dict[str, tuple[Callable[[pd.DataFrame], Any], type[DPError]]] = {
    "duplicates": (count_with("region", ["north", "north"]), DPValueError),
    "duplicates 1 and 1.0": (count_with("sex", [1, 1.0]), DPValueError),
    "duplicates in a dict level": (
        count_with(["region", "sex"], {"region": REGIONS, "sex": [0, 0]}),
        DPValueError,
    ),
    "duplicate tuples": (count_with(["region", "sex"], [("north", 0)] * 2), DPValueError),
    "NaN": (count_with("region", ["north", np.nan]), DPValueError),
    "None": (count_with("region", [None]), DPValueError),
    "pd.NA": (count_with("region", ["north", pd.NA]), DPValueError),
    "NaT": (count_with("when", [pd.NaT]), DPValueError),
    "NaN in a tuple": (count_with(["region", "sex"], [("north", np.nan)]), DPValueError),
    "NaN in a dict level": (
        count_with(["region", "sex"], {"region": REGIONS, "sex": [0, None]}),
        DPValueError,
    ),
    "NaN in a MultiIndex": (
        count_with(["region", "sex"], pd.MultiIndex.from_arrays([["north", None], [0, 1]])),
        DPValueError,
    ),
    "empty list": (count_with("region", []), DPValueError),
    "empty dict": (count_with("region", {}), DPValueError),
    "empty dict level": (count_with("region", {"region": []}), DPValueError),
    "empty MultiIndex": (
        count_with(["region", "sex"], pd.MultiIndex.from_arrays([[], []])),
        DPValueError,
    ),
    "unhashable list": (count_with("region", [["north"]]), DPTypeError),
    "unhashable dict": (count_with("region", [{"north": 1}]), DPTypeError),
    "unhashable set": (count_with("region", [{"north"}]), DPTypeError),
    "unhashable in a dict level": (
        count_with(["region", "sex"], {"region": [["north"]], "sex": [0]}),
        DPTypeError,
    ),
    "unhashable inside a tuple": (
        count_with(["region", "sex"], [("north", [0]), ("south", 1)]),
        DPTypeError,
    ),
    "bare string": (count_with("region", "north"), DPTypeError),
    "bytes": (count_with("region", b"north"), DPTypeError),
    "scalar": (count_with("sex", 1), DPTypeError),
    "strings for a number column": (count_with("sex", ["0", "1"]), DPTypeError),
    "strings for a float column": (count_with("income", ["1"]), DPTypeError),
    "numbers for a string column": (count_with("text", [0, 1]), DPTypeError),
    "mixed for a number column": (count_with("sex", [0, "1"]), DPTypeError),
    "dict for other columns": (count_with(["region", "sex"], {"region": REGIONS}), DPValueError),
    "dict with an extra column": (
        count_with("region", {"region": REGIONS, "sex": [0]}),
        DPValueError,
    ),
    "tuples too short": (count_with(["region", "sex"], [("north",)]), DPValueError),
    "tuples too long": (count_with(["region", "sex"], [("north", 0, 1)]), DPValueError),
    "not tuples": (count_with(["region", "sex"], ["north", "south"]), DPValueError),
    "MultiIndex with too many levels": (
        count_with(["region", "sex"], pd.MultiIndex.from_arrays([["north"], [0], [1]])),
        DPValueError,
    ),
    "MultiIndex for one column": (
        count_with("region", pd.MultiIndex.from_arrays([["north"], [0]])),
        DPValueError,
    ),
}

BAD_COLUMNS: dict[str, tuple[Callable[[pd.DataFrame], Any], type[DPError]]] = {
    "missing by column": (count_with("nope", ["a"]), DPKeyError),
    "one of two by columns missing": (
        count_with(["region", "nope"], [("north", 1)]),
        DPKeyError,
    ),
    "by empty": (count_with([], ["a"]), DPValueError),
    "by twice": (count_with(["region", "region"], [("north", "north")]), DPValueError),
    "by unhashable": (count_with([["region"]], ["north"]), DPTypeError),
    "missing sum column": (
        lambda p: grouped(p).sum("nope", bounds=BOUNDS, epsilon=0.5),
        DPKeyError,
    ),
    "missing mean column": (
        lambda p: grouped(p).mean("nope", bounds=BOUNDS, epsilon=0.5),
        DPKeyError,
    ),
    "missing agg column": (
        lambda p: grouped(p).agg(n=("nope", "count"), epsilon=0.5),
        DPKeyError,
    ),
    "sum of strings": (lambda p: grouped(p).sum("text", bounds=BOUNDS, epsilon=0.5), DPTypeError),
    "sum of objects": (
        lambda p: grouped(p).sum("objects", bounds=BOUNDS, epsilon=0.5),
        DPTypeError,
    ),
    "mean of a categorical": (
        lambda p: grouped(p).mean("cat", bounds=BOUNDS, epsilon=0.5),
        DPTypeError,
    ),
    "sum of datetimes": (lambda p: grouped(p).sum("when", bounds=BOUNDS, epsilon=0.5), DPTypeError),
    "agg mean of strings": (
        lambda p: grouped(p).agg(m=("text", "mean"), bounds={"text": BOUNDS}, epsilon=0.5),
        DPTypeError,
    ),
}

BAD_BOUNDS: dict[str, tuple[Callable[[pd.DataFrame], Any], type[DPError]]] = {
    name: (
        lambda p, b=bounds: grouped(p).sum("income", bounds=b, epsilon=0.5),
        error,
    )
    for name, bounds, error in [
        ("none", None, DPValueError),
        ("reversed", (2e5, 0), DPValueError),
        ("equal", (5, 5), DPValueError),
        ("NaN", (0, np.nan), DPValueError),
        ("inf", (-np.inf, 0), DPValueError),
        ("strings", ("0", "1"), DPTypeError),
        ("bools", (False, True), DPTypeError),
        ("three values", (0, 1, 2), DPValueError),
        ("scalar", 5, DPTypeError),
        ("too large", (0, 1e200), DPValueError),
    ]
}
BAD_BOUNDS |= {
    "mean reversed": (
        lambda p: grouped(p).mean("income", bounds=(1, 0), epsilon=0.5),
        DPValueError,
    ),
    "agg dict missing a column": (
        lambda p: grouped(p).agg(
            s=("income", "sum"), m=("sex", "mean"), bounds={"income": BOUNDS}, epsilon=0.5
        ),
        DPValueError,
    ),
    "agg one pair for two columns": (
        lambda p: grouped(p).agg(s=("income", "sum"), m=("sex", "mean"), bounds=BOUNDS, epsilon=1),
        DPValueError,
    ),
    "agg without bounds": (lambda p: grouped(p).agg(s=("income", "sum"), epsilon=1), DPValueError),
    "agg bad bounds in dict": (
        lambda p: grouped(p).agg(s=("income", "sum"), bounds={"income": (1, 0)}, epsilon=1),
        DPValueError,
    ),
    "bad fillna": (
        lambda p: grouped(p).mean("income", bounds=BOUNDS, epsilon=0.5, fillna="zero"),
        DPTypeError,
    ),
    "NaN fillna": (
        lambda p: grouped(p).sum("income", bounds=BOUNDS, epsilon=0.5, fillna=np.nan),
        DPValueError,
    ),
}

BAD_SPECS: dict[str, tuple[Callable[[pd.DataFrame], Any], type[DPError]]] = {
    name: (lambda p, s=spec: grouped(p).agg(x=s, bounds={"income": BOUNDS}, epsilon=0.5), error)
    for name, spec, error in [
        ("first", ("income", "first"), DPValueError),  # min and max are DP quantiles
        ("last", ("income", "last"), DPValueError),
        ("prod", ("income", "prod"), DPValueError),
        ("first", ("income", "first"), DPValueError),
        ("a misspelt statistic", ("income", "meen"), DPValueError),
        ("a function", ("income", np.sum), DPValueError),
        ("sum without a column", "sum", DPValueError),
        ("mean without a column", "mean", DPValueError),
        ("a number", 5, DPTypeError),
        ("a triple", ("income", "sum", "x"), DPTypeError),
        ("a list", ["income", "sum"], DPTypeError),
        ("a dict", {"income": "sum"}, DPTypeError),
        ("None", None, DPTypeError),
        ("a list of statistics", ("income", ["sum", "mean"]), DPValueError),
    ]
}
BAD_SPECS |= {
    "no statistics": (lambda p: grouped(p).agg(epsilon=0.5), DPValueError),
    "one good, one bad": (
        lambda p: grouped(p).agg(n="count", x=("income", "prod"), epsilon=0.5),
        DPValueError,
    ),
}

BAD_EPSILON: dict[str, tuple[Callable[[pd.DataFrame], Any], type[DPError]]] = {
    f"epsilon={value!r}": (lambda p, e=value: grouped(p).count(epsilon=e), error)
    for value, error in [
        (0, DPValueError),
        (-0.5, DPValueError),
        (np.nan, DPValueError),
        (np.inf, DPValueError),
        ("0.5", DPTypeError),
        (True, DPTypeError),
        (None, DPTypeError),
    ]
}
BAD_EPSILON |= {
    "over budget": (lambda p: grouped(p).count(epsilon=1.5), BudgetExceededError),
    "agg over budget": (
        lambda p: grouped(p).agg(n="count", m=("income", "mean"), bounds=BOUNDS, epsilon=2),
        BudgetExceededError,
    ),
}

BAD_DDOF: dict[str, tuple[Callable[[pd.DataFrame], Any], type[DPError]]] = {
    f"{how} ddof={ddof!r}": (
        lambda p, how=how, ddof=ddof: getattr(grouped(p), how)(
            "income", ddof=ddof, bounds=BOUNDS, epsilon=0.5
        ),
        DPValueError,
    )
    for how in ("var", "std")
    for ddof in (-1, 1.5, True)
}

CASES = BAD_KEYS | BAD_COLUMNS | BAD_BOUNDS | BAD_SPECS | BAD_EPSILON | BAD_DDOF


@pytest.mark.parametrize("name", list(CASES))
def test_bad_argument_raises_the_right_error_and_charges_nothing(
    protect_seeded, charges_nothing, name
):
    release, error = CASES[name]
    priv = protect_seeded(data(), epsilon=1.0)
    priv.dp.groupby("region", keys=REGIONS).count(epsilon=0.25)  # a ledger that is not empty
    with charges_nothing(priv), pytest.raises(error):
        release(priv)
    assert priv.dp.session.spent.epsilon == 0.25


@pytest.mark.parametrize(
    "keys",
    [["north", "north"], [np.nan], [], [["north"]], "north"],
    ids=["duplicates", "NaN", "empty", "unhashable", "string"],
)
def test_bad_keys_in_value_counts(protect_seeded, charges_nothing, keys):
    priv = protect_seeded(data(), epsilon=1.0)
    with charges_nothing(priv), pytest.raises(DPError):
        priv["region"].dp.value_counts(keys=keys, epsilon=0.5)
    assert len(priv.dp.session.ledger) == 0


@pytest.mark.parametrize(
    ("column", "keys", "matches"),
    [
        ("flag", [0, 1], lambda d: [(~d.flag).sum(), d.flag.sum()]),
        ("when", ["2024-01-01"], lambda d: [(d.when == pd.Timestamp("2024-01-01")).sum()]),
    ],
    ids=["ints for a bool column", "strings for a datetime column"],
)
def test_keys_that_could_never_match_are_refused_or_matched(
    protect_seeded, noise, column, keys, matches
):
    """Keys whose type the column's values can never equal (pandas matches ``0`` with
    ``False`` nowhere, nor a string with a Timestamp) must not yield silent zeros: either
    refuse them before any charge, or match them as the user meant."""
    frame = data()
    priv = protect_seeded(frame, epsilon=1.0)
    try:
        with noise(priv):
            counts = priv.dp.groupby(column, keys=keys).count(epsilon=0.5)
    except DPError:
        assert priv.dp.session.spent.epsilon == 0
        return
    assert counts.tolist() == [int(m) for m in matches(frame)]
