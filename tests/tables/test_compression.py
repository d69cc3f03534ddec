"""MST's compressed domains: a pure function of the released noisy counts and the noise's
deviation, tables summed onto them exactly, rows mapped back, and a release that measures
its tree's pairs on them with the same ledger."""

from __future__ import annotations

import numpy as np
import pytest

from pandas_dp.mechanisms.compression import THRESHOLD, Compressed, compress, compress_table
from pandas_dp.mechanisms.gaussian.discrete import DiscreteGaussian

from .test_synthesize import COLUMNS, dependent


def test_values_below_three_deviations_merge_into_one_last_value():
    noisy = np.array([31.0, 29.9, -4.0, 30.0, 500.0])
    column = compress(noisy, 10.0)
    assert THRESHOLD == 3.0
    assert column == Compressed((0, 3, 4), (1, 2))  # 30 = 3σ is kept
    assert column.size == 4
    assert compress(noisy, 10.0) == column  # nothing but the counts and σ
    assert compress(noisy, 1.0) == Compressed((0, 1, 3, 4), (2,))
    assert compress(noisy, 1.0).size == 5  # one merged value is still its own value
    everything = compress(np.abs(noisy), 0.0)
    assert everything.size == 5
    assert everything.table(noisy, 0) is noisy  # a column with nothing merged: as it is
    nothing = compress(noisy, 1e6)
    assert nothing.size == 1
    assert nothing.table(noisy, 0).tolist() == [noisy.sum()]


def test_tables_are_summed_onto_the_compressed_domains_exactly():
    rng = np.random.default_rng(4)  # test-only data
    columns = [compress(rng.normal(50, 40, n), 10.0) for n in (5, 3, 4)]
    table = rng.integers(0, 9, (5, 3, 4))
    out = compress_table(table, (0, 1, 2), columns)
    assert out.shape == tuple(c.size for c in columns)
    assert out.sum() == table.sum()
    assert out.dtype == table.dtype
    pair = compress_table(table.sum(axis=1), (0, 2), columns)
    assert (pair == out.sum(axis=1)).all()  # compressing commutes with summing out
    added = table.copy()
    added[tuple(int(rng.integers(0, n)) for n in table.shape)] += 1  # one more row
    moved = compress_table(added, (0, 1, 2), columns) - out
    assert np.abs(moved).sum() == 1  # one cell by one: the sensitivity is unchanged


def test_rows_map_back_kept_values_exactly_and_rare_ones_uniformly():
    column = Compressed((0, 3, 4), (1, 2, 5))
    codes = np.array([0, 1, 2] * 6000 + [3] * 30000)
    values = column.values(codes, np.random.default_rng(0))  # test-only: a seeded draw
    assert values[:18000].tolist() == [0, 3, 4] * 6000
    rare = np.bincount(values[18000:], minlength=6)
    assert rare[[0, 3, 4]].sum() == 0
    # Uniform over the three merged values: 10,000 each, binomial sd 82; 6 sd = 490.
    assert np.abs(rare[[1, 2, 5]] - 10_000).max() < 490
    unchanged = Compressed((0, 1), ()).values(np.array([1, 0]), np.random.default_rng(0))
    assert unchanged.tolist() == [1, 0]


def test_mst_measures_its_pairs_on_the_compressed_domains(options, protect_seeded, noise):
    """Two region keys that no row has (counts 0 < 3σ) merge into one value: the pairs with
    region have 4 region cells, not 5; the ledger is unchanged; no row gets either key."""
    keys = {**options["keys"], "region": ["north", "south", "east", "west", "central"]}
    priv = protect_seeded(dependent(), epsilon=3.0, delta=1e-6)
    with noise(priv) as calls:
        synth = priv.dp.synthesize(COLUMNS, keys=keys, bins=options["bins"], epsilon=1.0)
    labels = [m.label for m in priv.dp.session.releases[0].measurements]
    assert labels[4:] == ["tree", *(f"marginal(tree pair {r})" for r in (1, 2, 3))]
    sizes = [c.size for c in calls if isinstance(c.mechanism, DiscreteGaussian)]
    assert sizes[:4] == [3, 2, 5, 2]  # the one-way marginals: full domains
    tree = synth.attrs["synthesis"]["tree"]
    full = {"age": 3, "sex": 2, "region": 4, "tenure": 2}  # region compressed: 3 kept + 1
    assert sizes[4:] == [full[a] * full[b] for a, b in tree]
    assert any("region" in edge for edge in tree)
    assert synth.attrs["synthesis"]["merged"] == {"age": 0, "sex": 0, "region": 2, "tenure": 0}
    assert set(synth["region"]) <= {"north", "south", "east"}


@pytest.mark.parametrize("seed", [0, 1])
def test_a_merged_value_is_drawn_when_its_noisy_count_is_positive(seed):
    """The merged cell's estimate spreads over the merged values: every one can appear."""
    column = compress(np.array([100.0, 1.0, 2.0, 3.0]), 10.0)
    values = column.values(np.ones(300, dtype=np.int64), np.random.default_rng(seed))
    assert set(values.tolist()) == {1, 2, 3}  # test-only seeded draws
