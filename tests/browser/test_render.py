"""The release report and the notebook views, rendered by a real browser (headless Chromium).

Each page is opened 1000 CSS pixels wide and checked by JavaScript run in the page: nothing
sticks out of its box or out of the window (a wide table may scroll inside its own box,
never the page), every image loaded, integer keys print as ``2004`` (not ``2,004``) and a
δ of 0 prints as ``0`` (not ``0.000000e+00``).

The notebook page is built from the objects' ``_repr_html_`` outputs (nbconvert is not a
dependency), placed as JupyterLab places outputs: a prompt column, then an output area that
scrolls sideways (``overflow: auto``), under table rules modelled on JupyterLab's own
stylesheet (cells ``white-space: normal``); a chart is an ``image/png`` output in an
``<img>``, as Jupyter shows matplotlib figures.

Screenshots go to a temporary folder; with ``PANDAS_DP_SAVE_SCREENSHOTS=1`` they replace
``docs/assets/release-report.png`` and ``docs/assets/notebook-views.png`` (the docs'
screenshots come from here: ``python docs/_ext/report_screenshot.py``).

Without Chromium the tests skip, saying how to install it; CI installs it and fails on a skip.
"""

from __future__ import annotations

import base64
import html
import io
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import pandas_dp

from .chromium import Chromium, find_chromium

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "how-to" / "publishing-a-release.md"
ASSETS = ROOT / "docs" / "assets"
WIDTH = 1000  # CSS pixels: a laptop's notebook or browser window
SAVE = os.environ.get("PANDAS_DP_SAVE_SCREENSHOTS") == "1"

#: Everything that sticks out sideways, of its own box or of the window, and a page that
#: scrolls sideways. What a scrolling box holds may scroll in it (a report's wide table, a
#: notebook's output area); whether our own views need to is checked apart.
OVERFLOWS = r"""
(() => {
  const width = document.documentElement.clientWidth;
  const holds = (e) =>
    ["auto", "scroll", "hidden", "clip"].includes(getComputedStyle(e).overflowX);
  const held = (e) => {
    for (let p = e.parentElement; p; p = p.parentElement) if (holds(p)) return true;
    return false;
  };
  const classes = (e) => typeof e.className === "string" && e.className.trim()
    ? "." + e.className.trim().split(/\s+/).join(".") : "";
  const name = (e) => e.tagName.toLowerCase() + classes(e)
    + ' "' + (e.textContent || "").trim().replace(/\s+/g, " ").slice(0, 50) + '"';
  const found = [];
  for (const e of document.body.querySelectorAll("*")) {
    const style = getComputedStyle(e);
    if (!(e instanceof HTMLElement) || ["inline", "none"].includes(style.display)) continue;
    if (held(e)) continue;  // it may scroll inside a box that scrolls (its own or an ancestor)
    if (!holds(e) && e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1)
      found.push(`wider than its box (${e.scrollWidth} > ${e.clientWidth} px): ${name(e)}`);
    const right = e.getBoundingClientRect().right;
    if (right > width + 1)
      found.push(`past the window's right edge (${Math.round(right)} > ${width} px): ${name(e)}`);
  }
  const page = document.documentElement.scrollWidth;
  if (page > width + 1) found.push(`the page scrolls sideways (${page} > ${width} px)`);
  return found;
})()
"""

#: Every image: whether it loaded, and its size.
IMAGES = """
Array.from(document.images).map((i) => ({
  alt: i.alt, complete: i.complete, natural: i.naturalWidth, shown: i.getBoundingClientRect().width,
}))
"""

#: The cells of each table under ``selector``: {"head": [...], "rows": [[...], ...]}.
TABLES = """
((selector) => Array.from(document.querySelectorAll(selector + " table")).map((t) => ({
  head: Array.from(t.querySelectorAll("thead tr:first-child th")).map((c) => c.innerText.trim()),
  rows: Array.from(t.querySelectorAll("tbody tr")).map(
    (r) => Array.from(r.children).map((c) => c.innerText.trim())),
})))
"""


def column(table: dict[str, Any], name: str) -> list[str]:
    """The texts of a column of a table read by ``TABLES`` (header cells as pandas writes)."""
    at = table["head"].index(name)
    return [row[at] for row in table["rows"]]


@pytest.fixture(scope="module")
def browser() -> Iterator[Chromium]:
    executable = find_chromium()
    if executable is None:
        print("chromium not found: apt-get install chromium")
        pytest.skip("chromium not found: apt-get install chromium")
    with Chromium(executable) as chromium:
        yield chromium


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where screenshots go: docs/assets with PANDAS_DP_SAVE_SCREENSHOTS=1, else a tmp dir."""
    return ASSETS if SAVE else tmp_path_factory.mktemp("screenshots")


def census() -> pd.DataFrame:
    with resources.files("pandas_dp.data").joinpath("pums_california_1000.csv").open() as f:
        return pd.read_csv(f)


def release(folder: Path, spec: str, data: pd.DataFrame) -> Path:
    """Run ``pandas-dp release`` on ``spec`` over ``data`` (as people.csv); the report's path."""
    folder.mkdir()
    (folder / "release.toml").write_text(spec, encoding="utf-8")
    data.to_csv(folder / "people.csv", index=False)
    command = [sys.executable, "-m", "pandas_dp", "release", "release.toml", "--out", "out"]
    done = subprocess.run(
        [*command, "--quiet"], cwd=folder, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return folder / "out" / "report.html"


def release_again(folder: Path) -> Path:
    """Run ``pandas-dp release`` in ``folder`` once more (a re-run); the report's path."""
    command = [sys.executable, "-m", "pandas_dp", "release", "release.toml", "--out", "out"]
    done = subprocess.run(
        [*command, "--quiet"], cwd=folder, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return folder / "out" / "report.html"


def guide_spec() -> str:
    found = re.search(r"```toml\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.S)
    assert found is not None, f"no TOML spec in {GUIDE}"
    return found.group(1)


#: A wide table (16 columns) keyed by year: the case of a table wider than the page.
WIDE_SPEC = """
[data]
path = "people.csv"

[privacy]
epsilon = 2.0
delta = 1e-6

[release]
title = "Census extract by year"
confidence = 0.95

[[query]]
name = "by_year"
description = "People, income and age by survey year: a table wider than the page."
groupby = ["year"]
keys = [2004, 2005, 2006, 2007]
bounds = { income = [0, 300000], age = [0, 100] }
epsilon = 2.0

[query.aggs]
people = "count"
mean_income = ["income", "mean"]
total_income = ["income", "sum"]
mean_age = ["age", "mean"]
median_age = ["age", "median"]
"""


def check_page(browser: Chromium) -> None:
    overflows = browser.evaluate(OVERFLOWS)
    assert overflows == [], "\n".join(overflows)
    images = browser.evaluate(IMAGES)
    assert images, "no image on the page"
    for image in images:
        assert image["complete"], f"image not loaded: {image}"
        assert image["natural"] > 0, f"image not loaded: {image}"
        assert 0 < image["shown"] <= WIDTH


def test_release_report_fits_and_reads_well(browser, shots, tmp_path):
    report = release(tmp_path / "guide", guide_spec(), census())
    browser.open(report, width=WIDTH)
    check_page(browser)
    tables = browser.evaluate(TABLES + "('body')")
    breakdown = tables[0]
    assert breakdown["head"][:5] == ["query", "status", "epsilon", "delta", "groups"]
    assert set(column(breakdown, "delta")) == {"0"}  # not 0.0 or 0.000000e+00
    assert "e+00" not in browser.evaluate("document.body.innerText")
    browser.screenshot(shots / "release-report.png")


def test_a_rerun_report_says_when_each_query_was_released_and_that_it_is_a_rerun(
    browser, shots, tmp_path
):
    """A re-run's statuses read as facts ("released on <date>"), its note stands apart."""
    release(tmp_path / "guide", guide_spec(), census())
    report = release_again(tmp_path / "guide")
    browser.open(report, width=WIDTH)
    check_page(browser)
    breakdown = browser.evaluate(TABLES + "('body')")[0]
    stamp = r"released on \d{4}-\d\d-\d\d \d\d:\d\d UTC"
    statuses = column(breakdown, "status")
    assert len(statuses) == 3
    assert all(re.fullmatch(stamp, status) for status in statuses), statuses
    headings = browser.evaluate(
        "Array.from(document.querySelectorAll('h2 .status')).map((s) => s.innerText.trim())"
    )
    assert headings == statuses  # each query's heading says the same
    notes = browser.evaluate(
        "Array.from(document.querySelectorAll('p.rerun')).map((p) => p.innerText.trim())"
    )
    assert notes == [
        "This run is a re-run: every query had been released by an earlier run, on the date "
        "shown with each; their tables are the ones released then (kept in the ledger) and "
        "nothing was charged for them again."
    ]
    text = browser.evaluate("document.body.innerText")
    assert "already" not in text
    browser.screenshot(shots / "release-report-rerun.png" if not SAVE else tmp_path / "rerun.png")


def test_a_wide_report_table_scrolls_in_its_own_box_and_keeps_years_plain(browser, shots, tmp_path):
    data = census()
    data["year"] = 2004 + data.index % 4  # public survey years, as integer keys
    report = release(tmp_path / "wide", WIDE_SPEC, data)
    browser.open(report, width=WIDTH)
    check_page(browser)
    (by_year,) = [t for t in browser.evaluate(TABLES + "('body')") if t["head"][0] == "year"]
    assert column(by_year, "year") == ["2004", "2005", "2006", "2007"]  # not 2,004
    assert len(by_year["head"]) == 16
    box = browser.evaluate(
        """(() => { const t = Array.from(document.querySelectorAll("table"))
              .find((t) => t.querySelector("th").innerText.trim() === "year");
            const box = t.parentElement, style = getComputedStyle(box);
            return {overflow: style.overflowX, inner: box.scrollWidth, outer: box.clientWidth,
                    right: box.getBoundingClientRect().right}; })()"""
    )
    assert box["inner"] > box["outer"]  # wider than the page's column: the case under test
    assert box["overflow"] == "auto"  # ... so it scrolls in its own box
    assert box["right"] <= WIDTH
    browser.screenshot(shots / "release-report-wide.png" if not SAVE else tmp_path / "wide.png")


#: JupyterLab-like placement: prompt column, output areas that scroll sideways, table rules
#: modelled on JupyterLab's rendermime stylesheet (white-space: normal, right-aligned cells).
NOTEBOOK_STYLE = """
body { margin: 0; font: 13px system-ui, -apple-system, "Segoe UI", sans-serif; color: #212121; }
.jp-Notebook { padding: 8px 16px 32px 8px; }
.jp-Cell { margin: 0 0 14px; }
.jp-InputArea, .jp-OutputArea-child { display: flex; flex-direction: row; }
.jp-InputPrompt, .jp-OutputPrompt { flex: 0 0 64px; width: 64px; color: #616161;
  font: 12px monospace; text-align: right; padding: 4px 6px 0 0; box-sizing: border-box; }
.jp-InputPrompt { color: #307fc1; } .jp-OutputPrompt { color: #bf5b3d; }
.jp-Editor { flex: 1 1 auto; min-width: 0; background: #f5f5f5; border: 1px solid #e0e0e0;
  font: 12.5px/1.4 monospace; padding: 4px 8px; white-space: pre-wrap; }
.jp-OutputArea-output { flex: 1 1 auto; min-width: 0; width: 100%; height: auto;
  overflow: auto; padding: 4px 0; }
.jp-RenderedHTMLCommon { font-size: 14px; line-height: 1.4; padding-right: 20px; }
.jp-RenderedHTMLCommon table { border-collapse: collapse; border-spacing: 0; border: none;
  font-size: 12px; table-layout: fixed; margin: 0 0 1em; }
.jp-RenderedHTMLCommon thead { border-bottom: 1px solid #bdbdbd; vertical-align: bottom; }
.jp-RenderedHTMLCommon td, .jp-RenderedHTMLCommon th, .jp-RenderedHTMLCommon tr {
  vertical-align: middle; padding: .5em; line-height: normal; white-space: normal;
  max-width: none; border: none; text-align: right; }
.jp-RenderedHTMLCommon th { font-weight: bold; }
.jp-RenderedHTMLCommon tbody tr:nth-child(even) { background: #f5f5f5; }
.jp-RenderedHTMLCommon p { text-align: left; margin: 0 0 1em; }
.jp-RenderedImage img { max-width: 100%; height: auto; }
.jp-RenderedText pre { margin: 0; font: 12.5px/1.35 monospace; }
"""


def notebook_page(cells: list[tuple[str, str, str]]) -> str:
    """A page of cells ``(code, kind, output)``: kind "html", "text" or "png" (base64 data)."""
    parts = []
    for number, (code, kind, output) in enumerate(cells, start=1):
        if kind == "png":
            rendered = f'<img alt="{html.escape(code)}" src="data:image/png;base64,{output}">'
            classes = "jp-RenderedImage"
        elif kind == "text":
            rendered, classes = f"<pre>{html.escape(output)}</pre>", "jp-RenderedText"
        else:
            rendered, classes = output, "jp-RenderedHTMLCommon"
        parts.append(
            f'<div class="jp-Cell" data-cell="{number}">'
            f'<div class="jp-InputArea"><div class="jp-InputPrompt">[{number}]:</div>'
            f'<div class="jp-Editor">{html.escape(code)}</div></div>'
            f'<div class="jp-OutputArea-child"><div class="jp-OutputPrompt">[{number}]:</div>'
            f'<div class="jp-OutputArea-output {classes}">'
            f"{rendered}</div></div></div>"
        )
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>notebook</title>'
        f"<style>{NOTEBOOK_STYLE}</style></head><body><div class='jp-Notebook'>"
        + "".join(parts)
        + "</div></body></html>"
    )


def png(axes: Any) -> str:
    buffer = io.BytesIO()
    axes.figure.savefig(buffer, format="png", dpi=80, bbox_inches="tight")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def test_notebook_views_fit_a_notebook_and_write_costs_for_people(browser, shots, tmp_path):
    from matplotlib.figure import Figure

    priv = census().dp.protect(epsilon=3, delta=1e-5)
    keys = {"sex": [0, 1], "married": [0, 1]}
    aggs = {"n": "count", "mean_income": ("income", "mean")}
    bounds = {"income": (0, 300_000)}
    preview = priv.dp.preview.groupby(["sex", "married"], keys=keys).agg(
        **aggs, bounds=bounds, epsilon=1
    )
    table = priv.dp.groupby(["sex", "married"], keys=keys).agg(
        **aggs, bounds=bounds, epsilon=1, ci=0.95
    )
    races = priv.dp.groupby("race", selection="threshold").count(epsilon=0.5, delta=1e-6)
    chart = pandas_dp.plot_intervals(table, "n", ax=Figure(figsize=(6, 3.2)).subplots())
    session = priv.dp.session
    cells = [
        ("priv.dp.preview.groupby(['sex', 'married'], ...).agg(...)", "html", preview),
        ("table = priv.dp.groupby(['sex', 'married'], ...).agg(..., ci=.95); table", "html", table),
        ("priv.dp.groupby('race', selection='threshold').count(...)", "text", races),
        ("pandas_dp.plot_intervals(table, 'n')", "png", png(chart)),
        ("priv.dp.session", "html", session),
        ("priv.dp.session.ledger", "html", session.ledger),
    ]  # fmt: skip
    page = notebook_page(
        [
            (c, k, o if k == "png" else repr(o) if k == "text" else o._repr_html_())
            for c, k, o in cells
        ]
    )  # as Jupyter: _repr_html_ where there is one (a Series has none), else the repr
    path = tmp_path / "notebook.html"
    path.write_text(page, encoding="utf-8")
    browser.open(path, width=WIDTH)
    check_page(browser)
    # Our own views fit the notebook's width: nothing to scroll to, the noise column shown.
    # (The raw ledger DataFrame is pandas' own view: it may scroll in its output area.)
    for number, (code, _, _) in enumerate(cells[:5], start=1):
        area = browser.evaluate(
            f"""(() => {{ const a = document.querySelector(
                  '[data-cell="{number}"] .jp-OutputArea-output');
                return [a.scrollWidth, a.clientWidth]; }})()"""
        )
        assert area[0] <= area[1], f"{code}: scrolls sideways ({area[0]} > {area[1]} px)"
    (ledger,) = browser.evaluate(TABLES + "('[data-cell=\"5\"]')")
    assert column(ledger, "delta") == ["0", "1e-06"]  # were 0.000000e+00 and 1.000000e-06
    assert column(ledger, "epsilon") == ["1", "0.5"]  # were 1.000000 and 0.500000
    assert all("discrete_laplace" in text for text in column(ledger, "noise"))
    text = browser.evaluate("document.body.innerText")
    assert "0.000000e+00" not in text
    (previewed,) = browser.evaluate(TABLES + "('[data-cell=\"1\"]')")
    assert column(previewed, "delta") == ["0", "0"]
    browser.screenshot(shots / "notebook-views.png")
