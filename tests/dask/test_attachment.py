"""How a session rides on a Dask collection, and where it refuses to go (fail closed).

The handle lives in the meta frame's ``attrs``, which dask derives with pandas' own
operations: derived collections share the session, combinations with other data lose it,
and anything that loses it raises ``NotProtectedError`` instead of minting a budget.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cloudpickle
import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import pandas_dp
from pandas_dp import DPError, DPTypeError, DPValueError, DuplicatedRowsError, NotProtectedError

from .conftest import COUNTRIES, MAX_ROWS


@pytest.fixture(autouse=True)
def threads() -> Any:
    with dask.config.set(scheduler="threads"):
        yield


@pytest.fixture
def raw(events: pd.DataFrame) -> Any:
    return dd.from_pandas(events, npartitions=4)


@pytest.fixture
def priv(raw: Any) -> Any:
    return raw.dp.protect(epsilon=10.0, privacy_unit="user_id", max_rows_per_unit=MAX_ROWS)


@pytest.fixture
def other(events: pd.DataFrame) -> Any:
    return dd.from_pandas(events.copy(), npartitions=3)


def test_accessor_is_registered_on_dask() -> None:
    assert dd.DataFrame.dp is pandas_dp.DataFrameDPAccessor
    assert dd.Series.dp is pandas_dp.SeriesDPAccessor


def test_protect_returns_a_new_collection_and_leaves_the_raw_one_alone(raw, priv) -> None:
    assert isinstance(priv, dd.DataFrame)
    assert priv is not raw
    with pytest.raises(NotProtectedError, match="not protected"):
        raw.dp.session  # noqa: B018
    assert priv.dp.session.total.epsilon == 10


DERIVED: dict[str, Callable[[Any], Any]] = {
    "filter": lambda p: p[p["age"] > 30],
    "query": lambda p: p.query("age > 30"),
    "columns": lambda p: p[["user_id", "amount"]],
    "assign": lambda p: p.assign(double=p["amount"] * 2),
    "astype": lambda p: p.astype({"age": "float64"}),
    "rename": lambda p: p.rename(columns={"amount": "spend"}),
    "dropna": lambda p: p.dropna(),
    "fillna": lambda p: p.fillna({"amount": 0.0}),
    "repartition": lambda p: p.repartition(npartitions=2),
    "persist": lambda p: p.persist(),
    "partitions": lambda p: p.partitions[1:3],
    "sample": lambda p: p.sample(frac=0.5, random_state=0),
    "concat-self": lambda p: dd.concat([p, p]),
    "pickle": lambda p: pickle.loads(pickle.dumps(p)),
    "cloudpickle": lambda p: cloudpickle.loads(cloudpickle.dumps(p)),
    "optimize": lambda p: p.optimize(),
}


@pytest.mark.parametrize("derive", DERIVED.values(), ids=DERIVED.keys())
def test_derived_collections_share_the_session(priv, derive, noise) -> None:
    derived = derive(priv)
    assert derived.dp.session is priv.dp.session
    with noise(priv):
        derived.dp.count(epsilon=1.0)  # releases work and are charged to the one session
    assert len(priv.dp.session.releases) == 1


def test_a_self_merge_keeps_the_session_or_fails_closed(priv) -> None:
    merged = priv.merge(priv[["user_id", "age"]], on="user_id")  # rows share their unit ids
    if int(pd.__version__.split(".")[0]) < 3:  # pandas 2 merges drop attrs altogether
        with pytest.raises(NotProtectedError):
            merged.dp.session  # noqa: B018
    else:
        assert merged.dp.session is priv.dp.session


def test_a_column_is_a_series_of_the_same_session(priv) -> None:
    assert priv["amount"].dp.session is priv.dp.session


LOST: dict[str, Callable[[Any, Any], Any]] = {
    "merge-other": lambda p, o: p.merge(o[["user_id", "device"]], on="user_id"),
    "join-other": lambda p, o: p.join(o[["age"]], rsuffix="_other"),
    "concat-other": lambda p, o: dd.concat([p, o]),
    "from_pandas(compute)": lambda p, o: dd.from_pandas(p.compute(), npartitions=2),
    "head": lambda p, o: p.head(50, npartitions=-1),
    "meta-replaced": lambda p, o: p.map_partitions(lambda part: part, meta=o._meta),
    "groupby-agg": lambda p, o: p.groupby("country").agg({"amount": "sum"}),
    "value_counts": lambda p, o: p["country"].value_counts().to_frame(),
    "from_dask_array": lambda p, o: dd.from_dask_array(p[["age"]].to_dask_array(True), ["age"]),
}


@pytest.mark.parametrize("lose", LOST.values(), ids=LOST.keys())
def test_collections_that_lost_the_session_fail_closed(priv, other, lose) -> None:
    lost = lose(priv, other)
    with pytest.raises(NotProtectedError, match="not protected"):
        lost.dp.count(epsilon=1.0)
    assert priv.dp.session.releases == ()


def test_two_sessions_do_not_mix(raw) -> None:
    first = raw.dp.protect(epsilon=1.0, privacy_unit="user_id", max_rows_per_unit=1)
    second = raw.dp.protect(epsilon=1.0, privacy_unit="user_id", max_rows_per_unit=1)
    assert first.dp.session is not second.dp.session
    with pytest.raises(NotProtectedError):
        dd.concat([first, second]).dp.session  # noqa: B018
    with pytest.raises(NotProtectedError):
        first.merge(second, on="user_id").dp.session  # noqa: B018


@pytest.mark.parametrize(
    "reshape",
    [lambda p: p.set_index("user_id"), lambda p: p.groupby("country").sum()],
    ids=["set_index", "groupby-sum"],
)
def test_aggregated_or_reindexed_rows_are_refused(priv, reshape) -> None:
    with pytest.raises(DuplicatedRowsError, match="index"):
        reshape(priv).dp.count(epsilon=1.0)
    assert priv.dp.session.releases == ()


def test_dropping_the_unit_column_is_refused(priv) -> None:
    with pytest.raises(NotProtectedError, match="privacy-unit column 'user_id'"):
        priv[["amount", "age"]].dp.sum("amount", bounds=(0, 1), epsilon=1.0)


def test_series_filtered_on_themselves_point_to_the_frame(priv) -> None:
    amount = priv["amount"]
    with pytest.raises(NotProtectedError, match=r"priv\[priv\['x'\] > 0\]\['x'\]"):
        amount[amount > 0].dp.sum(bounds=(0, 500), epsilon=0.2)
    with pytest.raises(NotProtectedError, match="Filter the frame first"):
        priv[["amount"]].dropna()["amount"].dp.count(epsilon=0.2)  # a frame without the unit
    assert priv.dp.session.releases == ()


def test_randomized_response_is_refused_before_any_charge(priv) -> None:
    with pytest.raises(DPTypeError, match="not supported on Dask"):
        priv["member"].dp.randomized_response(epsilon=1.0)
    assert priv.dp.session.releases == ()


def test_protect_checks_the_privacy_unit_column(raw) -> None:
    with pytest.raises(pandas_dp.DPKeyError, match="'person'"):
        raw.dp.protect(epsilon=1.0, privacy_unit="person", max_rows_per_unit=1)
    with pytest.raises(DPValueError, match="needs a DataFrame"):
        raw["amount"].dp.protect(epsilon=1.0, privacy_unit="user_id", max_rows_per_unit=1)


def test_protecting_again_needs_replace(priv) -> None:
    with pytest.raises(DPValueError, match="already protected"):
        priv.dp.protect(epsilon=5.0, privacy_unit="user_id", max_rows_per_unit=1)
    fresh = priv.dp.protect(epsilon=5.0, privacy_unit="user_id", max_rows_per_unit=1, replace=True)
    assert fresh.dp.session is not priv.dp.session
    assert priv[priv["age"] > 3].dp.session is priv.dp.session  # the old one is untouched


def test_schema_validation_is_refused_but_its_rules_are_used(raw) -> None:
    import pandera.pandas as pa

    schema = pa.DataFrameSchema({"amount": pa.Column(float, pa.Check.in_range(0, 500))})
    with pytest.raises(DPValueError, match="not yet supported"):
        raw.dp.protect(epsilon=1.0, privacy_unit="user_id", max_rows_per_unit=5, schema=schema)
    priv = raw.dp.protect(
        epsilon=1.0, privacy_unit="user_id", max_rows_per_unit=5, schema=schema, validate=False
    )
    priv.dp.sum("amount", epsilon=0.5)  # bounds from the schema
    assert priv.dp.session.releases[0].bounds == (("amount", 0.0, 500.0),)


def test_a_dask_frame_made_from_a_protected_pandas_frame_shares_its_session(events) -> None:
    first, second = events.iloc[:200], events.iloc[200:]
    pandas_priv = first.dp.protect(epsilon=1.0, privacy_unit="user_id", max_rows_per_unit=5)
    collection = dd.from_pandas(pandas_priv, npartitions=3)
    assert collection.dp.session is pandas_priv.dp.session
    rows = second.dp.protect(epsilon=1.0)  # one row per person: its guard needs the index
    with pytest.raises(DuplicatedRowsError, match="FromPandas"):  # no protect layer to trace
        dd.from_pandas(rows, npartitions=3).dp.count(epsilon=0.5)
    assert rows.dp.session.releases == ()


def test_dask_knows_pandas_frames_by_content_which_never_mints_a_budget(events) -> None:
    # dask names dd.from_pandas(frame) by the frame's values, not its attrs, and reuses a live
    # collection of the same name: equal contents share whichever meta came first.
    data = events.iloc[:50].copy()
    raw = dd.from_pandas(data, npartitions=2)
    late = dd.from_pandas(data.dp.protect(epsilon=1.0), npartitions=2)
    with pytest.raises(NotProtectedError):  # the unprotected twin came first: fail closed
        late.dp.session  # noqa: B018
    again = data.iloc[:40].dp.protect(epsilon=1.0, privacy_unit="user_id", max_rows_per_unit=5)
    first = dd.from_pandas(again, npartitions=2)
    twin = dd.from_pandas(data.iloc[:40], npartitions=2)
    assert twin.dp.session is again.dp.session  # an existing budget, never a new one
    assert raw.npartitions == first.npartitions == 2  # both stayed alive throughout


def test_parquet_round_trip_loses_the_session(priv, tmp_path: Path) -> None:
    priv.to_parquet(tmp_path / "events", write_index=False)
    back = dd.read_parquet(tmp_path / "events")
    with pytest.raises(NotProtectedError, match="not protected"):
        back.dp.count(epsilon=1.0)


def test_a_fresh_process_cannot_use_a_pickled_session(priv, tmp_path: Path) -> None:
    (tmp_path / "priv.pkl").write_bytes(pickle.dumps(priv))
    script = textwrap.dedent(
        f"""
        import pickle
        import pandas_dp
        priv = pickle.loads(open({str(tmp_path / "priv.pkl")!r}, "rb").read())
        try:
            priv.dp.count(epsilon=1.0)
        except pandas_dp.NotProtectedError as error:
            print("refused:", error)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert "refused:" in done.stdout
    assert "does not live in this process" in done.stdout


def test_failed_releases_charge_nothing(priv) -> None:
    session = priv.dp.session
    with pytest.raises(pandas_dp.DPKeyError):
        priv.dp.sum("missing", bounds=(0, 1), epsilon=1.0)
    with pytest.raises(DPValueError):
        priv.dp.sum("amount", bounds=(5, 1), epsilon=1.0)
    with pytest.raises(DPTypeError):
        priv.dp.sum("country", bounds=(0, 1), epsilon=1.0)
    with pytest.raises(pandas_dp.BudgetExceededError):
        priv.dp.count(epsilon=11.0)
    with pytest.raises(DPError):
        priv.dp.groupby("country").count(epsilon=1.0)  # private keys need δ > 0
    assert session.releases == ()
    assert session.spent.epsilon == 0


class Computes(dask.callbacks.Callback):
    """Counts the graphs the threaded scheduler runs."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def _start(self, dsk: Any) -> None:
        self.count += 1


def test_one_compute_per_release_and_none_before(raw, noise) -> None:
    with Computes() as computes:
        priv = raw.dp.protect(epsilon=10.0, privacy_unit="user_id", max_rows_per_unit=5)
        grouped = priv.dp.groupby("country", keys=COUNTRIES)
        grouped.count  # noqa: B018
        priv.dp.preview.mean("amount", bounds=(0, 1), epsilon=1.0)
        assert computes.count == 0
        with noise(priv):
            grouped.agg(n="count", spend=("amount", "mean"), bounds={"amount": (0, 500)}, epsilon=1)
        assert computes.count == 1
        with noise(priv):
            priv.dp.describe(bounds={"amount": (0, 500), "age": (0, 100)}, epsilon=1.0)
        assert computes.count == 2


def test_only_aggregates_reach_the_client(priv, noise, monkeypatch) -> None:
    from pandas_dp.engines.dask import engine as dask_engine

    combined = []
    original = dask_engine.combine

    def spy(parts: Any, observed: bool) -> Any:
        result = original(parts, observed)
        combined.append(result)
        return result

    monkeypatch.setattr(dask_engine, "combine", spy)
    with noise(priv):
        priv.dp.groupby("country", keys=COUNTRIES).sum("amount", bounds=(0, 500), epsilon=1.0)
    (result,) = combined
    assert [np.shape(v) for v in result.values] == [(len(COUNTRIES),)]


def test_the_accessor_is_cached_but_stateless(priv) -> None:
    accessor = priv.dp
    assert priv.dp is accessor  # dask caches accessors on the collection
    assert vars(accessor) == {"_obj": priv}


def test_dask_is_imported_lazily_and_in_either_order() -> None:
    checks = {
        "pandas_dp first": "import sys, pandas_dp; assert 'dask' not in sys.modules; "
        "import dask.dataframe as dd; assert dd.DataFrame.dp is pandas_dp.DataFrameDPAccessor",
        "dask first": "import dask.dataframe as dd, pandas_dp; "
        "assert dd.Series.dp is pandas_dp.SeriesDPAccessor",
        "without dask": "import sys; sys.modules['dask'] = None; import pandas_dp",
    }
    running = {
        name: subprocess.Popen(
            [sys.executable, "-W", "error", "-c", code], stderr=subprocess.PIPE, text=True
        )
        for name, code in checks.items()
    }
    for name, process in running.items():
        _, stderr = process.communicate(timeout=120)
        assert process.returncode == 0, f"{name}: {stderr}"


def _in_memory_session(events: pd.DataFrame) -> Any:
    """A collection made from a pandas frame protected under a unit (its ids pinned in memory)."""
    pinned = events.dp.protect(epsilon=10.0, privacy_unit="user_id", max_rows_per_unit=5)
    return dd.from_pandas(pinned, npartitions=3)


@pytest.mark.parametrize("made", ["from-pinned-pandas", "row-level-from-pandas"])
@pytest.mark.parametrize("how", ["inner", "left"])
def test_merge_of_a_collection_made_from_a_protected_pandas_frame_fails_closed(
    events, made, how
) -> None:
    """Issue 37: a collection whose session pinned ids in memory reached ``_pinned``, which
    asserted a pandas frame (a bare AssertionError; an AttributeError under ``python -O``).
    Merge works on Dask now; such a collection's lineage (``FromPandas``, never this
    session's protect on Dask) is refused before any work, as every release refuses it."""
    collection = {
        "from-pinned-pandas": lambda: _in_memory_session(events),
        "row-level-from-pandas": lambda: dd.from_pandas(events.dp.protect(epsilon=1.0), 3),
    }[made]()
    public = pd.DataFrame({"country": COUNTRIES, "name": list("abcde")})
    session = collection.dp.session
    with pytest.raises(NotProtectedError, match="FromPandas"):
        collection.dp.merge(public, on="country", how=how)
    assert session.releases == ()


def test_a_release_from_a_pinned_pandas_session_on_dask_fails_closed(events) -> None:
    """Its ids were pinned in memory; on Dask the lineage check refuses the FromPandas step."""
    collection = _in_memory_session(events)
    with pytest.raises(NotProtectedError, match="FromPandas"):
        collection.dp.count(epsilon=1.0)
    with pytest.raises(NotProtectedError, match="FromPandas"):
        collection["amount"].dp.sum(bounds=(0, 1), epsilon=1.0)
    assert collection.dp.session.releases == ()


def test_merge_on_dask_is_refused_under_python_O_too() -> None:
    """Without asserts the pinned-id lookup ran on a Dask Series (AttributeError)."""
    script = textwrap.dedent(
        """
        import dask, dask.dataframe as dd, pandas as pd
        import pandas_dp
        dask.config.set(scheduler="threads")
        frame = pd.DataFrame({"user_id": [1, 2, 3, 4], "country": ["DE", "FR", "DE", "NL"]})
        pinned = frame.dp.protect(epsilon=1.0, privacy_unit="user_id", max_rows_per_unit=2)
        collection = dd.from_pandas(pinned, npartitions=2)
        public = pd.DataFrame({"country": ["DE", "FR", "NL"], "name": ["G", "F", "N"]})
        try:
            collection.dp.merge(public, on="country", how="left")
        except pandas_dp.NotProtectedError as error:
            print("refused:", error)
        try:
            collection.dp.count(epsilon=0.1)
        except pandas_dp.NotProtectedError as error:
            print("count refused:", error)
        """
    )
    done = subprocess.run(
        [sys.executable, "-O", "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "refused: this Dask frame was derived" in done.stdout
    assert "FromPandas" in done.stdout
    assert "count refused:" in done.stdout
