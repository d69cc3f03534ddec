"""``ddf.dp.merge(public, on=...)`` on Dask: the pandas path's calls and results, on every route.

The rows are joined per partition by the pandas engine's own row-local function (the one
canonical matching step, never Dask's hash join of raw values), so the merged collection
computes to the pandas result (values, dtypes, columns, labels). It stays protected by the
same session, and the lineage checks of every Dask route accept it because of what the
step is (the library's own ``map_partitions`` of ``join_rows`` with a public lookup): at row
level with unique public keys, under a unit whether or not the keys repeat (the caps bound
each unit's rows), exchanged by unit or bounded partition by partition. What stays refused
is refused before anything is charged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from pandas_dp import DPKeyError, DPTypeError, DPValueError, DuplicatedRowsError, NotProtectedError
from pandas_dp.engines.lookup import Lookup, join_rows

from .conftest import assert_same, ledger_of

REGIONS = pd.DataFrame({"code": [3, 1, 2, 5], "region": ["N", "S", "S", "E"], "pop": [1, 2, 3, 4]})
DAYS = pd.DataFrame({"code": [1, 1, 2, 2, 2, 3], "day": ["Mo", "Tu", "Mo", "We", "Fr", "Mo"]})
CAP = 8  # no unit exceeds it after a one-to-many join: nothing is dropped at random


@pytest.fixture(autouse=True)
def threads() -> Any:
    with dask.config.set(scheduler="threads"):
        yield


def survey(rows: int = 120) -> pd.DataFrame:
    gen = np.random.default_rng(8)  # test data only, never noise
    return pd.DataFrame(
        {
            "pid": np.arange(rows) // 2,
            "code": gen.choice([1, 2, 3, 4], rows),
            "hours": np.round(gen.uniform(0, 60, rows), 1),
            "pop": gen.integers(0, 9, rows),  # overlaps a public column: suffixes
        }
    )


def plain(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    out.attrs = {}
    return out


ROUTES = ["rows", "exchange", "partition-local"]


def twins(route: str, npartitions: int, data: pd.DataFrame | None = None) -> tuple[Any, Any]:
    """Protected Dask and pandas frames holding the same rows, protected alike."""
    data = survey() if data is None else data
    if route == "partition-local":  # indexed by unit, with known divisions
        data = data.set_index("pid", drop=False).sort_index(kind="stable")
    raw = dd.from_pandas(data, npartitions=npartitions, sort=route == "partition-local")
    options: dict[str, Any] = {"epsilon": 50.0, "delta": 1e-6}
    if route != "rows":
        options.update(privacy_unit="pid", max_rows_per_unit=CAP)
    return raw.dp.protect(**options), raw.compute().dp.protect(**options)


def releases(joined: Any) -> list[Any]:
    """A count, a sum, a grouped count and a filtered sum of a merged frame."""
    by_region = joined.dp.groupby("region", keys=["N", "S", "E"]) if "region" in joined else None
    by_day = joined.dp.groupby("day", keys=["Mo", "Tu", "We", "Fr"]) if "day" in joined else None
    grouped = by_region if by_region is not None else by_day
    assert grouped is not None
    return [
        joined.dp.count(epsilon=1),
        joined.dp.sum("hours", bounds=(0, 60), epsilon=1),
        grouped.count(epsilon=1),
        joined[joined["hours"] > 30].dp.sum("hours", bounds=(0, 60), epsilon=1),
    ]


CASES = {
    "unique inner": (REGIONS, "inner"),
    "unique left": (REGIONS, "left"),
    "one-to-many inner": (DAYS, "inner"),
    "one-to-many left": (DAYS, "left"),
}


#: One-to-many joins only under a unit (at row level they are refused: REFUSALS below).
AGREEMENT = [
    (case, route)
    for case in CASES
    for route in ROUTES
    if route != "rows" or CASES[case][0] is not DAYS
]


@pytest.mark.parametrize("npartitions", [1, 3])
@pytest.mark.parametrize(("case", "route"), AGREEMENT)
def test_merge_and_releases_equal_the_pandas_path(
    case: str, route: str, npartitions: int, noise: Callable[..., Any], moved: list[str]
) -> None:
    public, how = CASES[case]
    dask_priv, pandas_priv = twins(route, npartitions)
    dask_joined = dask_priv.dp.merge(public, on="code", how=how)
    pandas_joined = pandas_priv.dp.merge(public, on="code", how=how)
    assert dask_joined.dp.session is dask_priv.dp.session
    pd.testing.assert_series_equal(dask_joined.dtypes, pandas_joined.dtypes)  # the schema
    pd.testing.assert_frame_equal(plain(dask_joined.compute()), plain(pandas_joined))  # labels
    results = []
    for priv, joined in ((pandas_priv, pandas_joined), (dask_priv, dask_joined)):
        with noise(priv, value=0):
            results.append(releases(joined))
    for expected, actual in zip(*results, strict=True):
        assert_same(expected, actual)
    pd.testing.assert_frame_equal(ledger_of(dask_priv), ledger_of(pandas_priv))
    expected_moves = {"rows": [], "exchange": ["exchange"] * 4, "partition-local": []}[route]
    assert moved == expected_moves


def test_the_result_is_pandas_merge_with_the_protected_rows_labels() -> None:
    data = survey()
    priv = dd.from_pandas(data, npartitions=3).dp.protect(epsilon=1.0)
    joined = priv.dp.merge(REGIONS, on="code", suffixes=("", "_public")).compute()
    expected = data.merge(REGIONS, on="code", suffixes=("", "_public"))
    pd.testing.assert_frame_equal(plain(joined).reset_index(drop=True), expected)
    assert list(joined.index) == list(data.index[data["code"].isin(REGIONS["code"])])


def test_merges_chain_and_filter_on_every_route(noise: Callable[..., Any]) -> None:
    sizes = pd.DataFrame({"region": ["N", "S", "E"], "size": [10, 20, 30]})
    for route in ROUTES:
        dask_priv, pandas_priv = twins(route, 3)
        out = []
        for priv in (pandas_priv, dask_priv):
            joined = priv[priv["hours"] > 10].dp.merge(REGIONS, on="code", how="left")
            joined = joined.dp.merge(sizes, on="region")
            with noise(priv, value=0):
                out.append(joined.dp.sum("size", bounds=(0, 30), epsilon=1))
        assert out[0] == out[1]


def test_keys_match_canonically_per_partition_never_by_raw_value() -> None:
    # 1, 1.0, True are one key wherever they sit; NaN and "1" match nothing; partitions
    # split the forms apart, so a per-partition factorisation would decide differently.
    # (Object columns stay objects here; by default Dask turns them into text at the source,
    # before protect, and then the pandas twin of the computed rows holds the same texts.)
    codes = pd.array([True, 1.0, 1, "1", np.nan, 2, 2.0, False], dtype=object)
    data = pd.DataFrame({"code": codes, "hours": np.arange(8.0)})
    public = pd.DataFrame({"code": [1, 2], "label": ["one", "two"]})
    expected = data.dp.protect(epsilon=1.0).dp.merge(public, on="code", how="left")
    assert expected["label"].tolist() == ["one"] * 3 + [np.nan] * 2 + ["two"] * 2 + [np.nan]
    for npartitions in (1, 3, 8):
        with dask.config.set({"dataframe.convert-string": False}):
            raw = dd.from_pandas(data, npartitions=npartitions, sort=False)
        priv = raw.dp.protect(epsilon=1.0)
        joined = priv.dp.merge(public, on="code", how="left").compute()
        pd.testing.assert_frame_equal(plain(joined), plain(expected))
    for how in ("inner", "left"):  # Dask's default: texts at the source, the twin agrees
        raw = dd.from_pandas(data, npartitions=3, sort=False)
        joined = raw.dp.protect(epsilon=1.0).dp.merge(public, on="code", how=how)
        twin = raw.compute().dp.protect(epsilon=1.0).dp.merge(public, on="code", how=how)
        pd.testing.assert_frame_equal(plain(joined.compute()), plain(twin))


ADVERSARIAL = {
    "unmatched key": 99,
    "True first": True,
    "1.0 first": 1.0,
    "'1' first": "1",
    "NaN key": np.nan,
}


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("how", ["inner", "left"])
@pytest.mark.parametrize("row", list(ADVERSARIAL))
def test_one_adversarial_row_changes_no_schema_and_no_refusal(
    row: str, how: str, route: str, noise: Callable[..., Any]
) -> None:
    base = survey(40).assign(code=lambda d: d["code"].astype(object))
    extra = pd.DataFrame({"pid": [1000], "code": [ADVERSARIAL[row]], "hours": [5.0], "pop": [1]})
    neighbour = pd.concat([extra.astype({"code": object}), base], ignore_index=True)
    outcomes = []
    for data in (base, neighbour):
        dask_priv, _ = twins(route, 3, data)
        joined = dask_priv.dp.merge(REGIONS, on="code", how=how)
        computed = joined.compute()
        refusals = []
        for public in (pd.concat([REGIONS, REGIONS]), REGIONS.assign(code=[1.0, None, 2, 3])):
            try:
                dask_priv.dp.merge(public, on="code", how=how)
            except DPValueError as error:
                refusals.append(str(error))
            else:
                refusals.append("")
        with noise(dask_priv, value=0):
            count = joined.dp.groupby("region", keys=["N", "S", "E"]).count(epsilon=1)
        outcomes.append((joined.dtypes, computed.dtypes, type(computed.index), refusals, count))
    (d_meta, d_dtypes, d_index, d_refusals, d_count) = outcomes[0]
    (n_meta, n_dtypes, n_index, n_refusals, n_count) = outcomes[1]
    pd.testing.assert_series_equal(d_meta, n_meta)
    pd.testing.assert_series_equal(d_dtypes, n_dtypes)
    pd.testing.assert_series_equal(d_meta, d_dtypes)
    assert d_index is n_index
    assert d_refusals == n_refusals
    assert (n_count - d_count).abs().sum() <= 1  # the row moves one count at most


REFUSALS = {
    "repeated public keys, row-level": (
        lambda p: p.dp.merge(pd.concat([REGIONS, REGIONS]), on="code"),
        DPValueError,
        "one-to-many join needs a privacy unit",
    ),
    "missing public key": (
        lambda p: p.dp.merge(REGIONS.assign(code=[1.0, None, 2.0, 3.0]), on="code"),
        DPValueError,
        "missing keys",
    ),
    "right": (lambda p: p.dp.merge(REGIONS, on="code", how="right"), DPValueError, "refused"),
    "outer": (lambda p: p.dp.merge(REGIONS, on="code", how="outer"), DPValueError, "refused"),
    "one_to_one": (
        lambda p: p.dp.merge(REGIONS, on="code", validate="one_to_one"),
        DPValueError,
        "would read the data",
    ),
    "protected right": (
        lambda p: p.dp.merge(REGIONS.dp.protect(epsilon=1.0), on="code"),
        DPTypeError,
        "two protected frames joins pandas DataFrames",
    ),
    "no such key": (lambda p: p.dp.merge(REGIONS, on="zip"), DPKeyError, "'zip'"),
    "not a frame": (lambda p: p.dp.merge(REGIONS["code"], on="code"), DPTypeError, "DataFrame"),
    "a Dask public table": (
        lambda p: p.dp.merge(dd.from_pandas(REGIONS, npartitions=1), on="code"),
        DPTypeError,
        "DataFrame",
    ),
    "suffixes that collide": (
        lambda p: p.dp.merge(REGIONS, on="code", suffixes=("", "")),
        DPValueError,
        "suffixes",
    ),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_refusals_charge_nothing(case: str, charges_nothing) -> None:
    call, error, text = REFUSALS[case]
    priv = dd.from_pandas(survey(), npartitions=3).dp.protect(epsilon=1.0)
    with charges_nothing(priv), pytest.raises(error, match=text):
        call(priv)
    assert priv.dp.session.ledger.empty


def test_one_to_many_checks_validate_under_a_unit_too(charges_nothing) -> None:
    priv, _ = twins("exchange", 3)
    with charges_nothing(priv), pytest.raises(DPValueError, match="keys \\['code'\\] repeat"):
        priv.dp.merge(DAYS, on="code", validate="many_to_one")
    assert priv.dp.session.ledger.empty


def test_a_merge_that_renames_the_unit_column_cannot_be_released(charges_nothing) -> None:
    # A public column named like the unit renames the protected one ("pid_x"): without the
    # unit column, releases refuse; with suffixes that keep its name, they run.
    priv, _ = twins("exchange", 3)
    public = REGIONS.assign(pid=0)
    joined = priv.dp.merge(public, on="code")
    with charges_nothing(priv), pytest.raises(NotProtectedError, match="privacy-unit"):
        joined.dp.count(epsilon=1)
    kept = priv.dp.merge(public, on="code", suffixes=("", "_public"))
    assert kept.dp.count(epsilon=1) > 0


def _user_lookup(public: pd.DataFrame) -> Lookup:
    return Lookup.from_public(public, ["code"], "inner", ("_x", "_y"))


USER_STEPS = {
    "dask's own merge": lambda p: p.merge(REGIONS, on="code"),
    "a map_partitions of the caller's": lambda p: p.map_partitions(
        lambda part: part.merge(REGIONS, on="code"), enforce_metadata=False,
        meta=join_rows(p._meta, _user_lookup(REGIONS)),  # the session's attrs, kept
    ),
    "join_rows of a repeating lookup": lambda p: p.map_partitions(
        join_rows, _user_lookup(pd.concat([REGIONS, REGIONS])), enforce_metadata=False,
        meta=join_rows(p._meta, _user_lookup(pd.concat([REGIONS, REGIONS]))),
    ),
    "join_rows with another collection": lambda p: p.map_partitions(
        join_rows, _user_lookup(REGIONS), p, enforce_metadata=False,
        meta=join_rows(p._meta, _user_lookup(REGIONS)),
    ),
}  # fmt: skip


@pytest.mark.parametrize("step", list(USER_STEPS))
def test_user_built_merges_stay_refused_at_row_level(step: str, charges_nothing) -> None:
    priv = dd.from_pandas(survey(), npartitions=3).dp.protect(epsilon=1.0)
    derived = USER_STEPS[step](priv)
    if step == "dask's own merge":  # pandas 3 drops attrs the inputs do not share
        with pytest.raises(NotProtectedError):
            derived.dp.session  # noqa: B018
        return
    with (
        charges_nothing(priv),
        pytest.raises(DuplicatedRowsError, match=r"MapPartitions|one-to-many"),
    ):
        derived.dp.count(epsilon=1)
    assert priv.dp.session.ledger.empty


@pytest.mark.parametrize("step", list(USER_STEPS)[1:])
def test_user_built_merges_stay_refused_under_a_unit(step: str, charges_nothing) -> None:
    priv, _ = twins("exchange", 3)
    derived = USER_STEPS[step](priv)
    if step == "join_rows of a repeating lookup":  # the library's join, repeats bounded by caps
        assert derived.dp.count(epsilon=1) > 0
        return
    with charges_nothing(priv), pytest.raises(NotProtectedError, match="MapPartitions"):
        derived.dp.count(epsilon=1)


@pytest.mark.parametrize("route", ROUTES)
def test_a_series_of_the_merged_collection_releases_like_its_frame(
    route: str, noise: Callable[..., Any]
) -> None:
    # Under a unit a Dask Series releases from the frame it was taken from (the merged
    # one), its values next to the unit ids; at row level it releases as it is.
    dask_priv, _ = twins(route, 3)
    joined = dask_priv.dp.merge(REGIONS, on="code", how="left")
    with noise(dask_priv, value=0):
        from_series = joined["pop_y"].dp.sum(bounds=(0, 4), epsilon=1)
        from_frame = joined.dp.sum("pop_y", bounds=(0, 4), epsilon=1)
    assert from_series == from_frame


def test_the_lookup_travels_to_workers_by_pickle() -> None:
    import pickle

    lookup = Lookup.from_public(DAYS, ["code"], "left", ("_x", "_y"))
    copy = pickle.loads(pickle.dumps(lookup))
    data = survey(10)
    pd.testing.assert_frame_equal(join_rows(data, copy), join_rows(data, lookup))
    assert copy.repeats
    assert not Lookup.from_public(REGIONS, ["code"], "left", ("", "_")).repeats
