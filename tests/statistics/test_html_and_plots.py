"""Notebook display and error-bar plots of released numbers (rendered to an image)."""

from __future__ import annotations

import io

import matplotlib
import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

import pandas_dp
from pandas_dp.errors import DPKeyError

matplotlib.use("Agg")  # no display in tests


@pytest.fixture
def priv(protect_seeded):
    data = pd.DataFrame({"g": ["a", "b", "c"] * 300, "x": np.arange(900) % 100})
    return protect_seeded(data, seed=3, epsilon=10)


def test_previews_and_sessions_render_as_html(priv):
    preview = priv.dp.preview.agg(n="count", m=("x", "mean"), bounds={"x": (0, 100)}, epsilon=1)
    page = preview._repr_html_()
    assert page.startswith("<p><strong>Preview of agg: costs ε=1")
    assert "(nothing spent)" in page
    assert "<table" in page
    assert ">m<" in page
    assert "<table" not in priv.dp.session._repr_html_()  # nothing released yet
    priv.dp.count(epsilon=0.5)
    page = priv.dp.session._repr_html_()
    assert "spent ε=0.5, δ=0" in page
    assert "remaining ε=9.5, δ=0" in page
    assert page.count("<tr") == 2  # the header and one release


def test_a_released_table_plots_with_its_error_bars(priv):
    table = priv.dp.groupby("g", keys=["a", "b", "c"]).agg(
        n="count", m=("x", "mean"), bounds={"x": (0, 100)}, epsilon=1, ci=0.9
    )
    fresh = Figure().subplots()  # not pyplot's current axes, which other tests may have used
    ax = pandas_dp.plot_intervals(table, "m", title="mean x", ax=fresh)
    assert ax is fresh
    (bars,) = [c for c in ax.containers if hasattr(c, "has_yerr")]
    segments = bars.lines[2][0].get_segments()  # one vertical bar per group
    assert len(segments) == 3
    for segment, (_, row) in zip(segments, table.iterrows(), strict=True):
        assert segment[0][1] == pytest.approx(row["m_lower"])
        assert segment[1][1] == pytest.approx(row["m_upper"])
    buffer = io.BytesIO()
    ax.figure.savefig(buffer, format="png")
    assert buffer.getvalue().startswith(b"\x89PNG")
    assert len(buffer.getvalue()) > 5_000  # something was drawn
    default = pandas_dp.plot_intervals(table, ax=Figure().subplots())  # the first one: n
    assert default.get_xticklabels()[0].get_text() == "a"
    with pytest.raises(DPKeyError, match=r"ci=0\.95"):
        pandas_dp.plot_intervals(table[["n", "m"]])
