"""Notebook display and error-bar plots of released numbers (rendered to an image)."""

from __future__ import annotations

import io
from html.parser import HTMLParser

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


def test_notebook_views_write_costs_for_people(protect_seeded):
    data = pd.DataFrame({"g": ["a", "b", "c"] * 300})
    priv = protect_seeded(data, seed=4, epsilon=3, delta=1e-5)
    priv.dp.count(epsilon=0.5)
    priv.dp.groupby("g", selection="threshold").count(epsilon=0.5, delta=1e-6)
    priv.dp.count(epsilon=pandas_dp.budget.Fraction(1, 3), delta=1e-7, mechanism="gaussian")
    page = priv.dp.session._repr_html_()
    assert "e+00" not in page
    assert "0.000000" not in page
    head, *rows = _cells(page)
    assert head == ["sequence", "query", "columns", "epsilon", "delta", "groups", "noise", "note"]
    cells = pd.DataFrame(rows, columns=head)
    assert cells["delta"].tolist() == ["0", "1e-06", "1e-07"]  # was 0.000000e+00, 1.000000e-06
    assert cells["epsilon"].tolist() == ["0.5", "0.5", "1/3"]  # was 0.500000, 0.333333
    assert "discrete_gaussian" in cells["noise"].iloc[2]  # the noise column is shown
    assert "white-space: normal" in page  # long text wraps, whatever the notebook's CSS
    assert priv.dp.session.ledger["delta"].tolist() == [0.0, 1e-06, 1e-07]  # unchanged
    preview = priv.dp.preview.groupby("g", selection="threshold").count(epsilon=0.5, delta=1e-6)
    page = preview._repr_html_()
    assert "costs ε=0.5, δ=1e-06" in page
    assert "e+00" not in page


def _cells(page):
    """The text of each table row's cells in an HTML page."""

    class Cells(HTMLParser):
        rows: list[list[str]] = []  # noqa: RUF012 (one parser per call)
        inside = False

        def handle_starttag(self, tag, attrs):
            if tag == "tr":
                self.rows.append([])
            elif tag in ("td", "th"):
                self.inside = True
                self.rows[-1].append("")

        def handle_endtag(self, tag):
            self.inside = self.inside and tag not in ("td", "th")

        def handle_data(self, data):
            if self.inside:
                self.rows[-1][-1] += data

    parser = Cells()
    parser.rows = []
    parser.feed(page)
    return parser.rows


@pytest.fixture
def two_keys(protect_seeded):
    data = pd.DataFrame(
        {"sex": ["F", "M"] * 600, "edu": ["hs"] * 500 + ["ba"] * 400 + ["phd"] * 300}
    )
    priv = protect_seeded(data, seed=5, epsilon=10)
    keys = {"sex": ["F", "M"], "edu": ["hs", "ba", "phd"]}
    return priv.dp.groupby(["sex", "edu"], keys=keys).count(epsilon=1, ci=0.95)


def _bar_errors(ax):
    return [c for c in ax.containers if hasattr(c, "has_yerr")]


def test_a_two_key_table_plots_as_pandas_plots_it_unstacked(two_keys):
    table = two_keys
    wide = table["count"].unstack()  # what pandas would draw: edu as series, sex on the axis
    ax = pandas_dp.plot_intervals(table, ax=Figure().subplots())
    own = wide.plot(kind="bar", ax=Figure().subplots())
    bars = [c for c in ax.containers if not hasattr(c, "has_yerr")]
    assert len(bars) == 3  # one container per edu key, each of two bars
    assert [len(c) for c in bars] == [2, 2, 2]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [str(c) for c in wide.columns]
    assert ax.get_legend().get_title().get_text() == "edu"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["F", "M"]
    theirs = [c for c in own.containers if not hasattr(c, "has_yerr")]
    for mine, pandas_bars in zip(bars, theirs, strict=True):  # same places, same heights
        assert [b.get_x() for b in mine] == pytest.approx([b.get_x() for b in pandas_bars])
        assert [b.get_height() for b in mine] == pytest.approx(
            [b.get_height() for b in pandas_bars]
        )
    errors = _bar_errors(ax)
    assert len(errors) == 3
    for container, edu in zip(errors, wide.columns, strict=True):
        segments = container.lines[2][0].get_segments()
        assert len(segments) == 2  # one error bar per sex
        for segment, sex in zip(segments, wide.index, strict=True):
            row = table.loc[(sex, edu)]
            assert segment[0][1] == pytest.approx(row["count_lower"])
            assert segment[1][1] == pytest.approx(row["count_upper"])
            assert segment[1][1] - segment[0][1] == pytest.approx(
                row["count_upper"] - row["count_lower"]
            )


def test_a_two_key_table_draws_one_line_per_series_or_unstacks_another_level(two_keys):
    table = two_keys
    ax = pandas_dp.plot_intervals(table, kind="line", ax=Figure().subplots())
    errors = _bar_errors(ax)
    assert len(errors) == 3  # one line (with its error bars) per edu key
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["ba", "hs", "phd"]
    own = table["count"].unstack().plot(kind="line", ax=Figure().subplots())
    for axes in (ax, own):
        axes.figure.draw_without_rendering()  # a line plot's tick labels are set when drawn
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks == [t.get_text() for t in own.get_xticklabels()]  # as pandas labels them
    assert "F" in ticks  # (pandas itself labels only some ticks of a two-point line)
    for container, edu in zip(errors, ["ba", "hs", "phd"], strict=True):
        line = container.lines[0]
        assert line.get_xdata().tolist() == [0, 1]  # sex on the axis
        assert line.get_ydata().tolist() == table["count"].xs(edu, level="edu").tolist()
        lengths = [s[1][1] - s[0][1] for s in container.lines[2][0].get_segments()]
        widths = table.xs(edu, level="edu")
        assert lengths == pytest.approx((widths["count_upper"] - widths["count_lower"]).tolist())
    by_sex = pandas_dp.plot_intervals(table, unstack="sex", ax=Figure().subplots())
    assert [t.get_text() for t in by_sex.get_legend().get_texts()] == ["F", "M"]
    assert [t.get_text() for t in by_sex.get_xticklabels()] == ["ba", "hs", "phd"]
    flat = pandas_dp.plot_intervals(table, unstack=None, ax=Figure().subplots())
    assert len(_bar_errors(flat)) == 1
    assert flat.get_xticklabels()[0].get_text() == "(F, hs)"  # the table's own order


def test_horizontal_bars_get_horizontal_error_bars(two_keys):
    ax = pandas_dp.plot_intervals(two_keys, kind="barh", ax=Figure().subplots())
    errors = _bar_errors(ax)
    assert len(errors) == 3
    assert all(c.has_xerr and not c.has_yerr for c in errors)
    (first, _) = errors[0].lines[2][0].get_segments()
    row = two_keys.loc[("F", "ba")]
    assert [first[0][0], first[1][0]] == pytest.approx([row["count_lower"], row["count_upper"]])
