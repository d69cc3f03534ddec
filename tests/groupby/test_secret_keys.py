"""Keys that exist only in the data never leave the library.

A frame holds group values no public key names (``SECRET-CITY``, on many rows, so it is
not dropped for being rare), missing keys, a Categorical whose categories include a value
no row holds (``SECRET-DISTRICT``: categories are data-derived, never keys) and a secret
outlier value. Every grouped release is run with public keys that exclude them, plus a
series of failing calls, and the secret must appear nowhere: results (values, index, index
dtype, names, repr), exception texts, warnings, the ledger and the session's repr.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

import pandas_dp
from pandas_dp.errors import DPError

SECRETS = ("SECRET-CITY", "SECRET-DISTRICT", "31415926", "3.14159e+07", "SECRET")
CITIES = ["paris", "lyon", "nice"]
DISTRICTS = ["d1", "d2"]


def secret_frame() -> pd.DataFrame:
    rng = np.random.default_rng(99)
    n = 600
    city = rng.choice(CITIES, n).astype(object)
    city[:100] = "SECRET-CITY"
    city[100:110] = None
    district = pd.Categorical(
        rng.choice(DISTRICTS, n), categories=["d1", "SECRET-DISTRICT", "d2"]
    )  # the secret category is held by no row
    income = rng.uniform(0, 1e5, n)
    income[5] = 31415926.5  # an outlier far outside the bounds
    return pd.DataFrame(
        {
            "city": pd.Series(city, dtype=object),
            "district": district,
            "sex": rng.integers(0, 2, n),
            "income": income,
            "age": rng.integers(18, 90, n),
        }
    )


def text_of(result: Any) -> str:
    """Everything a user can read off a release."""
    parts = [repr(result), str(result)]
    if isinstance(result, pd.Series | pd.DataFrame):
        index = result.index
        parts += [repr(index), str(index.tolist()), str(index.dtype), str(index.names)]
        if isinstance(index, pd.MultiIndex):
            parts += [repr(level) for level in index.levels]
            parts += [str(level.dtype) for level in index.levels]
        if isinstance(index.dtype, pd.CategoricalDtype):
            parts.append(str(index.dtype.categories.tolist()))
        parts += [str(getattr(result, "name", "")), result.to_string()]
        if isinstance(result, pd.DataFrame):
            parts += [str(result.columns.tolist()), str(result.dtypes)]
    return "\n".join(parts)


def assert_no_secret(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret!r} leaked:\n{text[:2000]}"


RELEASES: dict[str, Callable[[pd.DataFrame], Any]] = {
    "count": lambda p: p.dp.groupby("city", keys=CITIES).count(epsilon=0.1),
    "count nonnegative total": lambda p: p.dp.groupby("city", keys=CITIES).count(
        epsilon=0.1, nonnegative=True, total=400
    ),
    "sum": lambda p: p.dp.groupby("city", keys=CITIES).sum("income", bounds=(0, 1e5), epsilon=0.1),
    "mean": lambda p: p.dp.groupby("city", keys=CITIES).mean(
        "income", bounds=(0, 1e5), epsilon=0.1
    ),
    "agg": lambda p: p.dp.groupby("city", keys=CITIES).agg(
        n="count",
        s=("income", "sum"),
        m=("income", "mean"),
        c=("city", "count"),
        bounds={"income": (0, 1e5)},
        epsilon=0.1,
    ),
    "multi dict": lambda p: p.dp.groupby(
        ["city", "district"], keys={"city": CITIES, "district": DISTRICTS}
    ).count(epsilon=0.1),
    "multi tuples": lambda p: p.dp.groupby(
        ["district", "city"], keys=[("d2", "lyon"), ("d1", "paris")]
    ).sum("age", bounds=(0, 100), epsilon=0.1),
    "categorical by": lambda p: p.dp.groupby("district", keys=DISTRICTS).count(epsilon=0.1),
    "categorical by, key absent from categories": lambda p: p.dp.groupby(
        "district", keys=["d1", "d3"]
    ).mean("age", bounds=(0, 100), epsilon=0.1),
    "value_counts": lambda p: p["city"].dp.value_counts(keys=CITIES, epsilon=0.1),
    "value_counts normalize": lambda p: p["city"].dp.value_counts(
        keys=CITIES, epsilon=0.1, normalize=True
    ),
    "value_counts categorical": lambda p: p["district"].dp.value_counts(
        keys=DISTRICTS, epsilon=0.1, ascending=True
    ),
    "histogram": lambda p: p["income"].dp.histogram([0, 5e4, 1e5], epsilon=0.1),
    "histogram clip": lambda p: p["income"].dp.histogram(
        [0, 5e4, 1e5], epsilon=0.1, clip=True, total=600
    ),
}


def run_quietly(release: Callable[[pd.DataFrame], Any], priv: pd.DataFrame) -> tuple[Any, str]:
    """The result, and every warning but NoiseDominatedWarning (checked for secrets here:
    it is about released values, so it may appear, but it must not name a key)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = release(priv)
    for w in caught:
        assert_no_secret(str(w.message))
    others = [w for w in caught if not issubclass(w.category, pandas_dp.NoiseDominatedWarning)]
    return result, "\n".join(str(w.message) for w in others)


@pytest.mark.parametrize("name", list(RELEASES))
def test_no_release_shows_a_secret_key(protect_seeded, name):
    priv = protect_seeded(secret_frame(), epsilon=10.0)  # the seed's warning is caught here
    result, warned = run_quietly(RELEASES[name], priv)
    assert warned == ""
    assert_no_secret(text_of(result))
    if isinstance(result, pd.Series | pd.DataFrame):
        assert not isinstance(result.index.dtype, pd.CategoricalDtype)
        assert all(v is not None and v == v for v in result.index.tolist())  # no NaN key
    session = priv.dp.session
    assert_no_secret(session.ledger.to_string())
    assert_no_secret(repr(session.ledger.to_dict()))
    assert_no_secret(repr(session))
    assert_no_secret(repr(session.releases))


def test_secret_values_are_counted_nowhere(protect_seeded, noise):
    data = secret_frame()
    priv = protect_seeded(data, seed=1, epsilon=10.0)
    with noise(priv):
        counts = priv.dp.groupby("city", keys=CITIES).count(epsilon=0.5)
        districts = priv.dp.groupby("district", keys=["d1", "d2"]).count(epsilon=0.5)
    assert counts.tolist() == [int((data.city == c).sum()) for c in CITIES]
    assert counts.sum() == len(data) - 110  # 100 secret rows and 10 missing keys dropped
    assert districts.tolist() == [int((data.district == d).sum()) for d in ("d1", "d2")]
    assert districts.index.dtype != "category"


FAILURES: dict[str, Callable[[pd.DataFrame], Any]] = {
    "bad bounds": lambda p: p.dp.groupby("city", keys=CITIES).sum(
        "income", bounds=(1e5, 0), epsilon=0.1
    ),
    "missing column": lambda p: p.dp.groupby("city", keys=CITIES).sum(
        "nope", bounds=(0, 1), epsilon=0.1
    ),
    "text sum": lambda p: p.dp.groupby("district", keys=DISTRICTS).sum(
        "city", bounds=(0, 1), epsilon=0.1
    ),
    "key type": lambda p: p.dp.groupby("sex", keys=["paris"]).count(epsilon=0.1),
    "NaN key": lambda p: p.dp.groupby("city", keys=["paris", np.nan]).count(epsilon=0.1),
    "duplicate key": lambda p: p.dp.groupby("city", keys=["nice", "nice"]).count(epsilon=0.1),
    "bad spec": lambda p: p.dp.groupby("city", keys=CITIES).agg(x=("income", "prod"), epsilon=1),
    "no keys, pure DP": lambda p: p.dp.groupby("city", selection="threshold").count(epsilon=0.1),
    "no keys, pure DP, value_counts": lambda p: p["district"].dp.value_counts(
        epsilon=0.1, selection="threshold"
    ),
    "over budget": lambda p: p.dp.groupby("city", keys=CITIES).count(epsilon=11),
    "bad edges": lambda p: p["income"].dp.histogram([1e5, 0], epsilon=0.1),
    "text histogram": lambda p: p["city"].dp.histogram([0, 1], epsilon=0.1),
    "total not a number": lambda p: p["city"].dp.value_counts(keys=CITIES, epsilon=1, total="x"),
}


@pytest.mark.parametrize("name", list(FAILURES))
def test_no_error_shows_a_secret_key(name):
    priv = secret_frame().dp.protect(epsilon=10.0)
    with pytest.raises(DPError) as caught:
        run_quietly(FAILURES[name], priv)
    assert_no_secret(str(caught.value))
    assert_no_secret(repr(caught.value))
    assert priv.dp.session.spent.epsilon == 0
    assert_no_secret(priv.dp.session.ledger.to_string())


def test_no_secret_under_a_privacy_unit(protect_seeded):
    data = secret_frame().assign(pid=np.arange(600) // 3)
    priv = protect_seeded(data, epsilon=10.0, privacy_unit="pid", max_rows_per_unit=3)
    result, warned = run_quietly(
        lambda p: p.dp.groupby("city", keys=CITIES, max_groups_per_unit=1).agg(
            n="count", m=("income", "mean"), bounds={"income": (0, 1e5)}, epsilon=1
        ),
        priv,
    )
    assert warned == ""
    assert_no_secret(text_of(result))
    assert_no_secret(priv.dp.session.ledger.to_string())
    # The frame's value counts under the unit: the same keys, no secret either.
    counts, warned = run_quietly(lambda p: p.dp.groupby("city", keys=CITIES).size(epsilon=1), priv)
    assert warned == ""
    assert_no_secret(text_of(counts))


def test_no_secret_from_partition_selection(protect_seeded):
    """Without public keys, a key held by one row is released with probability at most δ
    per release (here 20 seeded releases, δ = 1e-6 each: a leak has probability < 2e-5), and
    a category no row holds can never be released."""
    data = secret_frame()
    data.loc[:110, "city"] = "paris"
    data.loc[7, "city"] = "SECRET-CITY"
    priv = protect_seeded(data, seed=5, epsilon=20.0, delta=2e-5)
    results = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(5):
            results.append(priv.dp.groupby("city", selection="threshold").count(epsilon=1))
            results.append(
                priv.dp.groupby(["district", "city"], selection="threshold").count(epsilon=1)
            )
            results.append(priv["city"].dp.value_counts(epsilon=1, selection="threshold"))
            results.append(
                priv.dp.groupby("district", selection="threshold").agg(
                    n="count", m=("income", "mean"), bounds={"income": (0, 1e5)}, epsilon=1
                )
            )
    assert not caught
    for result in results:
        assert_no_secret(text_of(result))
        assert len(result) > 0  # the common keys do come through
    assert_no_secret(priv.dp.session.ledger.to_string())
    assert_no_secret(repr(priv.dp.session))
