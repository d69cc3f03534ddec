"""Covariance and correlation matrices on Dask equal the pandas ones, given the same noise.

The sums of products are exact integers added across partitions; the queries run on the
pandas frame and on the same rows as a Dask collection protected with a privacy unit, and
results and ledger rows must be identical (see ``test_agreement.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dask
import numpy as np
import pandas as pd
import pytest

from .conftest import COUNTRIES, Query

BOUNDS = {"amount": (0.0, 500.0), "age": (18.0, 90.0), "member": (0.0, 1.0)}

PRODUCT_QUERIES = [
    Query("cov", lambda p: p.dp.cov(bounds=BOUNDS, epsilon=1)),
    Query("corr-ci", lambda p: p.dp.corr(bounds=BOUNDS, epsilon=1, ci=0.9)),
    Query("cov-complete", lambda p: p.dp.cov(bounds=BOUNDS, epsilon=1, use="complete")),
]


@pytest.fixture(autouse=True)
def threads() -> Any:
    with dask.config.set(scheduler="threads"):
        yield


@pytest.mark.parametrize("product_query", PRODUCT_QUERIES, ids=[q.name for q in PRODUCT_QUERIES])
@pytest.mark.parametrize("value", [0, 3])
def test_matrices_agree_on_dask(
    product_query: Query, value: int, twins: Callable[..., Any], agree: Callable[..., Any]
) -> None:
    dask_priv, pandas_priv = twins(npartitions=4)
    agree(product_query, dask_priv, pandas_priv, value)


def test_linear_model_agrees_on_dask(twins: Callable[..., Any], agree: Callable[..., Any]) -> None:
    """The design is computed per partition from the rows read; the sums add up exactly."""
    query = Query(
        "ols",
        lambda p: p.dp.ols(
            "amount ~ age + C(country) + member", bounds=BOUNDS, keys={"country": COUNTRIES},
            epsilon=1,
        ).params,
    )  # fmt: skip
    dask_priv, pandas_priv = twins(npartitions=4)
    agree(query, dask_priv, pandas_priv, 3)


@pytest.mark.parametrize("model", ["ols", "logit"])
def test_weighted_models_agree_on_dask(
    model: str, twins: Callable[..., Any], agree: Callable[..., Any]
) -> None:
    """Survey weights: the weight column is read per partition; the weighted sums (Python
    integers beyond int64) add up exactly across partitions."""
    formula = "amount ~ age + C(country)" if model == "ols" else "member ~ age + C(country)"
    run = Query(
        model,
        lambda p: getattr(p.dp, model)(
            formula, bounds=BOUNDS, keys={"country": COUNTRIES}, epsilon=1, weights="age",
            weight_bounds=(0, 90),
        ).params,
    )  # fmt: skip
    dask_priv, pandas_priv = twins(npartitions=4)
    agree(run, dask_priv, pandas_priv, 3)


@pytest.mark.parametrize("value", [0, 3])
def test_logit_in_two_steps_agrees_on_dask(
    value: int, twins: Callable[..., Any], agree: Callable[..., Any], noise: Callable[..., Any]
) -> None:
    """A logit on 20,000 rows takes two steps (count, first fit, score at it): the score's
    row-local residual is computed per partition and its sums add up exactly."""
    gen = np.random.default_rng(11)  # test data only
    rows = 20_000
    x = gen.uniform(0, 10, rows)
    z = gen.uniform(-5, 5, rows)
    y = gen.uniform(size=rows) < 1 / (1 + np.exp(-(-0.5 + 0.2 * x - 0.3 * z)))
    frame = pd.DataFrame({"user_id": np.arange(rows), "x": x, "z": z, "y": y.astype(np.int64)})
    run = Query(
        "logit",
        lambda p: p.dp.logit("y ~ x + z", bounds={"x": (0, 10), "z": (-5, 5)}, epsilon=1).params,
    )
    dask_priv, pandas_priv = twins(npartitions=4, data=frame)
    with noise(pandas_priv, value=value) as calls:
        run.run(pandas_priv)
    assert [c.size for c in calls] == [1, 10, 3]  # the count, the Gram matrix, the score
    dask_priv, pandas_priv = twins(npartitions=4, data=frame)
    agree(run, dask_priv, pandas_priv, value)
