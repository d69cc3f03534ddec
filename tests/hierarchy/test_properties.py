"""Property tests through the public API: random hierarchies, random data, real noise.

For any public hierarchy (one to three columns, uneven fan-out, labels shared between
parents, nodes without rows) and any frame (rows inside and outside the leaf paths, missing
values), the released table has exactly the nodes of the hierarchy in pre-order, and its
counts are non-negative integers in which every parent equals the sum of its children,
exactly. With zero noise it equals a plain-pandas count of the rows whose whole path is a
leaf. Hypothesis runs derandomised, and the noise is seeded, so the suite is deterministic.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pandas_dp
from pandas_dp.testing import capture_noise

SETTINGS = settings(
    derandomize=True,
    max_examples=60,
    deadline=None,
    database=None,
    # The fixtures used here are pure functions; sharing them across examples is safe.
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
COLUMNS = ["c0", "c1", "c2"]
LABELS = ["a", "b", "c", "d"]


@st.composite
def hierarchies(draw):
    """A nested dict over 1 to 3 columns (a list of labels for one column)."""
    depth = draw(st.integers(1, 3))

    def node(level: int):
        labels = draw(st.lists(st.sampled_from(LABELS), min_size=1, max_size=3, unique=True))
        if level == depth - 1:
            return labels
        return {label: node(level + 1) for label in labels}

    return COLUMNS[:depth], node(0)


def leaf_paths(tree, prefix=()):
    if isinstance(tree, list):
        return [(*prefix, leaf) for leaf in tree]
    return [path for key, sub in tree.items() for path in leaf_paths(sub, (*prefix, key))]


def node_order(tree, prefix=()):
    """Node paths below ``prefix`` in pre-order."""
    out = []
    for child in tree if isinstance(tree, list) else list(tree):
        path = (*prefix, child)
        out.append(path)
        if not isinstance(tree, list):
            out.extend(node_order(tree[child], path))
    return out


@st.composite
def frames(draw, by, leaves):
    n = draw(st.integers(0, 60))
    inside = draw(st.lists(st.sampled_from(leaves), min_size=n, max_size=n))
    outside_n = draw(st.integers(0, 10))
    other = st.sampled_from([*LABELS, "zz", None])
    outside = [tuple(draw(other) for _ in by) for _ in range(outside_n)]  # maybe leaf paths
    rows = inside + outside
    return pd.DataFrame(
        {column: pd.Series([row[i] for row in rows], dtype=object) for i, column in enumerate(by)}
    )


def expand(path, width, margins="All"):
    return (*path, *([margins] * (width - len(path))))


@SETTINGS
@given(data=st.data(), seed=st.integers(0, 2**16))
def test_random_hierarchies_release_consistent_tables(data, seed, consistent, reference):
    by, keys = data.draw(hierarchies())
    leaves = leaf_paths(keys)
    frame = data.draw(frames(by, leaves))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
        priv = frame.dp.protect(epsilon=100.0, rng=seed)
    table = priv.dp.hierarchy(by, keys=keys).count(epsilon=1.0)
    consistent(table)
    order = [expand(p, len(by)) for p in [(), *node_order(keys)]]
    got = [key if isinstance(key, tuple) else (key,) for key in table.index]
    assert got == order
    assert len(priv.dp.session.releases) == 1

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
        with capture_noise(priv):
            exact = priv.dp.hierarchy(by, keys=keys).count(epsilon=1.0, output="levels")
    expected = reference(frame, by, leaves)
    assert [view.tolist() for view in exact.values()] == [s.tolist() for s in expected]


@SETTINGS
@given(data=st.data(), seed=st.integers(0, 2**16))
def test_leaf_paths_and_nested_dicts_agree(data, seed):
    by, keys = data.draw(hierarchies().filter(lambda h: len(h[0]) > 1))
    leaves = leaf_paths(keys)
    frame = data.draw(frames(by, leaves))
    tables = []
    for form in (keys, leaves, pd.MultiIndex.from_tuples(leaves)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
            priv = frame.dp.protect(epsilon=10.0, rng=seed)  # the same noise for each form
        tables.append(priv.dp.hierarchy(by, keys=form).count(epsilon=1.0))
    pd.testing.assert_series_equal(tables[0], tables[1])
    pd.testing.assert_series_equal(tables[0], tables[2])
    assert np.all(tables[0].to_numpy() >= 0)
