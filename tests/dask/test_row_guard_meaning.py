"""Row-level privacy on Dask accepts a step for what it provably does to the rows, not for its
name or declared dtype (PRIVACY.md section 9).

An outside audit repeated one person's row 1000 times through steps the guard accepted by
name: ``query`` of an expression that is no boolean mask (pandas then selects by label), and
``loc`` by a Series from ``map_partitions(..., meta=bool)`` that holds labels. Now a filter is
accepted only by a mask derived elementwise from the frame it filters, boolean by
construction where pandas would read other values as labels; ``query`` and ``eval`` only of
plain comparisons and arithmetic of columns; ``loc`` never with labels. Every refusal comes
before anything is read or charged; the honest spellings still release exact counts.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from pandas_dp import DuplicatedRowsError

PARTITIONS = 3
SECRET = 7  # the row whose "hiv" value the attacks try to amplify
COPIES = 1000


@pytest.fixture(autouse=True)
def threads() -> Any:
    with dask.config.set(scheduler="threads"):
        yield


@pytest.fixture
def data(census: pd.DataFrame) -> pd.DataFrame:
    """The census extract with a sensitive 0/1 column, set for row SECRET only."""
    hiv = np.zeros(len(census), dtype=np.int64)
    hiv[SECRET] = 1
    return census.assign(hiv=hiv)


@pytest.fixture
def priv(data: pd.DataFrame) -> Any:
    return dd.from_pandas(data, npartitions=PARTITIONS).dp.protect(epsilon=10.0)


def _repeat_the_secret_label(part: pd.DataFrame) -> pd.Series:
    """Each partition's labels as values, SECRET's COPIES times: ``loc`` reads them as labels."""
    labels = part.index.repeat(np.where(part.index == SECRET, COPIES, 1))
    return pd.Series(labels, index=labels)


def _audit_loc(p: Any) -> Any:
    return p.loc[p.map_partitions(_repeat_the_secret_label, meta=("mask", bool))]


AUDIT_QUERY = f"index.repeat((index == {SECRET}) * hiv * {COPIES} + 1)"


def test_the_audit_query_is_refused_before_any_charge(priv, data, charges_nothing) -> None:
    attack = priv.query(AUDIT_QUERY, engine="python")
    assert len(attack.compute()) == len(data) + COPIES  # SECRET's row 1 + COPIES times
    with charges_nothing(priv), pytest.raises(DuplicatedRowsError, match="boolean mask"):
        attack.dp.count(epsilon=0.1)


def test_the_audit_loc_by_a_map_partitions_mask_is_refused_before_any_charge(
    priv, data, charges_nothing
) -> None:
    attack = _audit_loc(priv)
    assert len(attack.compute()) == len(data) + COPIES - 1  # meta=bool, values are labels
    with charges_nothing(priv), pytest.raises(DuplicatedRowsError, match="another collection"):
        attack.dp.count(epsilon=0.1)


def _numexpr(expression: str) -> Callable[[Any], Any]:
    def derive(p: Any) -> Any:
        if importlib.util.find_spec("numexpr") is None:
            pytest.skip("numexpr is not installed (pandas' numexpr engine is unavailable)")
        return p.query(expression, engine="numexpr")

    return derive


def _label_mask(p: Any) -> Any:
    """A Series of labels declared boolean, derived elementwise from ``p`` itself."""
    return p["age"].map(lambda _: SECRET, meta=("age", bool))


#: Steps that may repeat rows (or that the guard cannot prove do not), whatever they are called.
REFUSED: dict[str, Callable[[Any], Any]] = {
    "query of the audit, numexpr": _numexpr(AUDIT_QUERY),
    "query of a bare column, numexpr": _numexpr("hiv"),
    "query of a bare column, python": lambda p: p.query("hiv", engine="python"),
    "query of & of integers": lambda p: p.query("hiv & age", engine="python"),
    "query of a call": lambda p: p.query("age.abs() > 30", engine="python"),
    "query of the index": lambda p: p.query("index >= 0"),
    "query with resolvers": lambda p: p.query("age > 30", resolvers=[{"limit": 30}]),
    "eval repeating a column": lambda p: p.eval("age.repeat(1000)", engine="python"),
    "loc by a repeated-label mask from map_partitions": _audit_loc,
    "loc by a genuine boolean mask from map_partitions": lambda p: p.loc[
        p.map_partitions(lambda part: part["age"] > 30, meta=("age", bool))
    ],
    "loc by labels declared boolean": lambda p: p.loc[_label_mask(p)],
    "series filtered by labels declared boolean": lambda p: p["age"][_label_mask(p)],
    "filter by a boolean column as is": lambda p: p[p.assign(old=p["age"] > 60)["old"]],
    "filter by astype(bool)": lambda p: p[p["married"].astype(bool)],
    "loc by astype(bool)": lambda p: p.loc[p["married"].astype(bool)],
    "filter by abs": lambda p: p[p["hiv"].abs()],
    "filter by a frame": lambda p: p[p[["sex", "married"]] == 1],
    "loc with a list of labels": lambda p: p.loc[[5, 3, 999]],
    "loc with repeated labels": lambda p: p.loc[[SECRET] * COPIES],
    "loc with a slice": lambda p: p.loc[5:10],
    "loc with a scalar label": lambda p: p.loc[SECRET],
    "filter by a mask from another frame with the same columns": lambda p: p[
        dd.from_pandas(p.compute(), npartitions=PARTITIONS)["age"] > 30
    ],
    "loc by a mask from another frame with the same columns": lambda p: p.loc[
        dd.from_pandas(p.compute(), npartitions=PARTITIONS)["age"] > 30
    ],
    "filter by a mask from the frame filtered differently": lambda p: p[p["age"] > 30][
        p["sex"] == 1
    ],
    "loc by a mask from the frame filtered differently": lambda p: p.query("age > 30").loc[
        p["sex"] == 1
    ],
    "series filtered by a mask from the frame filtered differently": lambda p: p[p["age"] > 30][
        "income"
    ][p["sex"] == 1],
}


@pytest.mark.parametrize("derive", REFUSED.values(), ids=REFUSED.keys())
def test_steps_not_proven_to_keep_each_row_once_are_refused(priv, derive, charges_nothing) -> None:
    derived = derive(priv)
    with charges_nothing(priv):
        with pytest.raises(DuplicatedRowsError):
            derived.dp.count(epsilon=0.1)
        if isinstance(derived, dd.DataFrame):
            with pytest.raises(DuplicatedRowsError):
                derived.dp.sum("age", bounds=(0, 100), epsilon=0.1)


def test_a_mask_that_dask_rewrites_to_labels_is_refused(data, charges_nothing) -> None:
    """Dask's optimizer pushes a filter through ``astype`` (``abs``, ``rename``, ...) even when
    that step is the mask: ``p[m.astype(bool)]`` runs as ``p[m]`` with ``m``'s values read as
    labels. With every label SECRET, each row becomes SECRET's row: its "hiv" counts len times.
    """
    priv = dd.from_pandas(data, npartitions=1).dp.protect(epsilon=10.0)
    attack = priv[(priv["age"] * 0 + SECRET).astype(bool)]
    assert set(attack.compute().index) == {SECRET}  # what Dask runs (dask 2026.8)
    with charges_nothing(priv), pytest.raises(DuplicatedRowsError, match="not a comparison"):
        attack.dp.sum("hiv", bounds=(0, 1), epsilon=0.1)


def _filtered_twice(p: Any) -> Any:
    adults = p[p["age"] > 30]
    return adults[adults["sex"] == 1]


def _series_of_a_filtered_frame(p: Any) -> Any:
    adults = p[p["age"] > 30]
    return adults["income"][adults["income"] > 20_000]


#: Honest derivations, each spelled alike on pandas and Dask: the same rows on both.
ACCEPTED: dict[str, Callable[[Any], Any]] = {
    "filter by a comparison": lambda p: p[p["income"] > 50_000],
    "filter by a logical combination": lambda p: p[
        (p["age"] > 30) & ~p["race"].isin([1, 2]) | p["income"].between(0, 1000)
    ],
    "filter by isna and notnull": lambda p: p[p["income"].notnull() & ~p["age"].isna()],
    "filter by a compared boolean column": lambda p: p[p.assign(old=p["age"] > 60)["old"] == True],  # noqa: E712
    "filter of a filter by its own mask": _filtered_twice,
    "loc by a mask with columns": lambda p: p.loc[p["sex"] == 1, ["age", "income"]],
    "loc by a comparison method": lambda p: p.loc[p["age"].gt(40)],
    "series filtered by its comparison": lambda p: p["income"][p["income"] > 20_000],
    "series of a filtered frame filtered by its own mask": _series_of_a_filtered_frame,
    "query of a comparison": lambda p: p.query("age > 30"),
    "query of and/or/not, python": lambda p: p.query(
        "age > 30 and not (sex == 1 or income < 1000)", engine="python"
    ),
    "query of & and in": lambda p: p.query("(age >= 18) & (race in [1, 2])"),
    "query of arithmetic": lambda p: p.query("income / 12 > age * 10 - 5"),
    "eval of a comparison as a filter": lambda p: p[p.eval("age > 30")],
    "eval assigning a column": lambda p: p.eval("monthly = income / 12"),
    "column selection": lambda p: p[["age", "income"]],
    "assign of elementwise expressions": lambda p: p.assign(r=(p["income"] / 1000).clip(0, 100)),
    "astype": lambda p: p.astype({"age": "float64"}),
    "fillna": lambda p: p.fillna({"income": 0}),
    "rename": lambda p: p.rename(columns={"income": "pay"}),
    "sort_values": lambda p: p.sort_values("age"),
    "dropna": lambda p: p.dropna(),
}


@pytest.mark.parametrize("derive", ACCEPTED.values(), ids=ACCEPTED.keys())
def test_honest_derivations_release_exact_counts(priv, data, derive, noise) -> None:
    derived = derive(priv)
    with noise(priv):
        released = derived.dp.count(epsilon=0.1)
    expected = derive(data)
    assert released == (expected.count() if isinstance(expected, pd.Series) else len(expected))
    assert priv.dp.session.spent.epsilon == Fraction(1, 10)


#: Honest derivations whose rows depend on the partitions: counted against their own rows.
ACCEPTED_BY_PARTITION: dict[str, Callable[[Any], Any]] = {
    "repartition": lambda p: p.repartition(npartitions=5).pipe(lambda f: f[f["age"] > 30]),
    "head": lambda p: p.head(100, compute=False),
    "sample without replacement": lambda p: p.sample(frac=0.5, random_state=3),
    "persist": lambda p: p.persist(),
    "persist then filter": lambda p: p.persist().pipe(lambda f: f[f["age"] > 30]),
}


@pytest.mark.parametrize("derive", ACCEPTED_BY_PARTITION.values(), ids=ACCEPTED_BY_PARTITION.keys())
def test_honest_partition_steps_release_exact_counts(priv, derive, noise) -> None:
    derived = derive(priv)
    with noise(priv):
        released = derived.dp.count(epsilon=0.1)
    assert released == len(derived.compute())
    assert priv.dp.session.spent.epsilon == Fraction(1, 10)
