"""``priv.dp.tables``: shapes like pandas, exact counts before noise, consistency and
non-negativity after it, and previews from the same plan.

With the ``noise`` fixture every variate is a constant. With 0 the noisy marginals *are* the
exact ones, which are consistent and non-negative already, so the post-processing must return
them unchanged (up to float rounding): the released tables are compared with plain pandas.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pandas as pd
import pytest

from .conftest import WORKLOAD

#: Float rounding in least squares over counts of a few hundred: far below one count.
ATOL = 1e-8


def test_zero_noise_gives_the_exact_tables_shaped_like_pandas(
    people, options, reference, protect_seeded, noise
):
    priv = protect_seeded(people, epsilon=2.0, delta=1e-6)
    workload = [*WORKLOAD, ["sex"], ["tenure", "age"]]
    with noise(priv):
        tables = priv.dp.tables(workload, **options, epsilon=1.0)
    assert list(tables) == [tuple(t) for t in workload]
    for table in workload:
        got, expected = tables[tuple(table)], reference(people, table)
        assert type(got) is type(expected)
        pd.testing.assert_index_equal(got.index, expected.index)
        if isinstance(got, pd.DataFrame):
            pd.testing.assert_index_equal(got.columns, expected.columns)
            assert got.columns.name == table[-1]
        assert got.to_numpy() == pytest.approx(expected.to_numpy(), abs=ATOL)
        assert got.to_numpy().dtype == np.float64
    assert tables[("sex",)].name is None  # like groupby().size()
    # The four planted rows outside a domain are not counted anywhere.
    assert tables[("sex",)].sum() == pytest.approx(400, abs=ATOL)


def consistent(tables: dict) -> None:
    """Every pair of tables agrees on the columns they share, and nothing is negative."""
    flat = {}
    for columns, table in tables.items():
        frame = table.stack(future_stack=True) if isinstance(table, pd.DataFrame) else table
        flat[columns] = frame.rename("n").reset_index()
        assert (flat[columns]["n"] >= 0).all(), columns
    for (a, x), (b, y) in itertools.combinations(flat.items(), 2):
        shared = [c for c in a if c in b]
        left = x.groupby(shared, observed=True)["n"].sum() if shared else x["n"].sum()
        right = y.groupby(shared, observed=True)["n"].sum() if shared else y["n"].sum()
        assert np.asarray(left) == pytest.approx(np.asarray(right), rel=1e-9, abs=ATOL), (a, b)


@pytest.mark.parametrize("value", [-40, -3, 5])
def test_noisy_tables_are_consistent_and_non_negative(
    people, options, protect_seeded, noise, value
):
    """Constant noise on every cell makes the measured marginals disagree (a marginal and the
    sum of a larger one differ by ``value`` times the cells summed); -40 also drives many
    cells negative. The tables must still agree exactly and be non-negative."""
    priv = protect_seeded(people, epsilon=2.0, delta=1e-6)
    with noise(priv, value=value):
        tables = priv.dp.tables([*WORKLOAD, ["sex"]], **options, epsilon=1.0)
    consistent(tables)


def test_random_noise_is_made_consistent_and_non_negative(people, options, protect_seeded):
    priv = protect_seeded(people, seed=3, epsilon=2.0, delta=1e-6)
    tables = priv.dp.tables(WORKLOAD, **options, epsilon=0.2)
    consistent(tables)


def test_preview_reads_the_plan_the_release_runs(people, options, protect_seeded, noise):
    priv = protect_seeded(people, epsilon=2.0, delta=1e-6)
    preview = priv.dp.preview.tables(WORKLOAD, **options, epsilon=1.0)
    assert priv.dp.session.spent.epsilon == 0  # a preview charges nothing
    assert list(preview.table.index) == [str(tuple(t)) for t in WORKLOAD]
    assert (preview.table["mechanism"] == "discrete_laplace").all()  # three tables: Laplace
    assert preview.epsilon == pytest.approx(1.0)
    assert preview.delta == 0
    errors = preview.table["error"].to_numpy()
    assert np.all(errors > 0)
    assert np.all(np.isfinite(errors))
    with noise(priv):
        priv.dp.tables(WORKLOAD, **options, epsilon=1.0)
    (entry,) = priv.dp.session.releases
    fields = {f.name: getattr(entry, f.name) for f in dataclasses.fields(entry)}
    assert entry == preview.release.__class__(**fields)  # same record type
    assert entry.measurements == preview.release.measurements
    assert entry.note == preview.release.note


def test_preview_errors_match_the_errors_of_many_releases(people, options, protect_seeded):
    """The previewed 95% half-width is 2.12 times each cell's RMSE (every cell of a table
    has the same variance σ²; Laplace noise). Against 200 real releases of the linear estimate
    (``Table.value``, before clamping) of the 18-cell table: the mean over releases of the
    mean squared cell error has expectation σ² and, cells of one release being correlated
    at worst perfectly, a standard deviation of at most ``σ² sqrt(2/200) = 0.1 σ²``, so the
    ratio lies in [0.6, 1.4] (4 standard deviations) but for a chance below 1e-4."""
    from pandas_dp.api.queries.tables import plan_tables

    priv = protect_seeded(people, seed=5, epsilon=10_000.0, delta=1e-6)
    table = ("age", "region", "tenure")
    planned = plan_tables(priv, WORKLOAD, epsilon=1.0, delta=1e-6, **options)
    out = next(o for o in planned.outputs if o.stat.name == table)
    width = out.stat.preview_error(out.inputs(), 0.05)
    # Laplace noise here (three tables): the Laplace quantile, ln(20)/√2 = 2.118 SDs.
    assert width == pytest.approx(np.log(20) / np.sqrt(2) * out.stat.rmse(out.inputs()))
    exact = reference_table_values(people, list(table))
    source = priv.dp.session.noise_source
    squares = []
    for _ in range(200):
        noisy = {
            key: part.release(np.asarray(exact_marginal(people, part)), source)
            for key, part in planned.parts.items()
        }
        estimate = out.stat.value(out.inputs(noisy), None)
        squares.append(np.mean((estimate - exact) ** 2))
    assert 0.6 <= np.mean(squares) / out.stat.rmse(out.inputs()) ** 2 <= 1.4


def reference_table_values(people, table):
    from .conftest import reference_table

    return reference_table(people, table).to_numpy().reshape(-1)


def exact_marginal(people, part):
    from pandas_dp.engines.pandas_engine import aggregate_frame
    from pandas_dp.mechanisms.reconstruction import marginalize

    (counts,) = aggregate_frame(people, (part.measure,)).values
    sizes = [axis.size for axis in part.measure.axes]
    positions = part.home
    home = counts.reshape(sizes)
    return marginalize(home, positions, part.clique).reshape(-1)


def test_a_ledger_file_keeps_the_released_tables(people, options, tmp_path):
    from pandas_dp.accounting.ledger_file import read_ledger
    from pandas_dp.api.outputs import output_from_json

    path = tmp_path / "ledger.jsonl"
    priv = people.dp.protect(epsilon=2.0, delta=1e-6, ledger=path)
    tables = priv.dp.tables(WORKLOAD, **options, epsilon=1.0)
    _, entries = read_ledger(path)
    back = output_from_json(entries[0].output)
    assert list(back) == list(tables)
    for key, table in tables.items():
        assert back[key].to_numpy() == pytest.approx(table.to_numpy())


def test_a_one_key_column_and_a_huge_epsilon_release_instead_of_failing(protect_seeded):
    # Found by a sweep of random small tables. A one-key column makes its tables add
    # nothing, and the optimal split gave them about 1e-10 of ε, which rounded to 0 (a raw
    # ZeroDivisionError at planning). At ε = 10^5 the Laplace noise's variance underflows to
    # 0.0 and the reconstruction divided by it after the charge (ReleaseFailedError).
    gen = np.random.default_rng(5)
    data = pd.DataFrame({
        "a": gen.integers(0, 7, 40), "one": np.zeros(40, dtype=np.int64),
        "b": gen.integers(0, 7, 40), "c": gen.integers(0, 4, 40),
    })  # fmt: skip
    keys = {"a": range(7), "one": [0], "b": range(7), "c": range(4)}
    workload = [list(t) for t in itertools.combinations(data.columns, 3)]
    priv = protect_seeded(data, seed=3, epsilon=200_000)
    tables = priv.dp.tables(workload, keys=keys, epsilon=0.01)
    assert len(tables) == len(workload)
    shares = [m.epsilon for m in priv.dp.session.releases[-1].measurements]
    assert all(share > 0 for share in shares)
    exact = priv.dp.tables([["a", "b"], ["a", "c"]], keys=keys, epsilon=100_000)
    # Noise of scale 1e-5 or so is 0 but with a probability far below 1e-1000: exact tables.
    truth = pd.crosstab(data["a"], data["b"]).reindex(index=range(7), columns=range(7))
    np.testing.assert_allclose(exact[("a", "b")].to_numpy(), truth.fillna(0).to_numpy(), atol=1e-9)
