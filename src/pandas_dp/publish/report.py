"""The release report: one self-contained HTML file (tables, intervals, budget, charts).

Everything in it is public: the released tables, the spec's parameters and the ledger's
records. Charts are drawn with matplotlib (``pandas-dp[report]``) and embedded as PNG data,
so the file needs no network access or companion files to view.
"""

from __future__ import annotations

import base64
import html
import io
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

import pandas_dp
from pandas_dp.accounting.accountant import Accountant
from pandas_dp.accounting.events import LedgerEntry
from pandas_dp.publish.files import write_atomic
from pandas_dp.publish.model import QuerySpec
from pandas_dp.publish.outcome import PlannedQuery, ReleaseOutcome

REPORT_NAME = "report.html"
#: Most groups drawn in one chart; larger tables are shown as tables only.
MAX_BARS = 60
#: Most charts per query.
MAX_CHARTS = 6

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto;
       max-width: 60rem; color: #1d232b; line-height: 1.45; padding: 0 1rem; }
h1 { margin-bottom: .2rem; } h2 { margin-top: 2.2rem; border-bottom: 2px solid #e3e7ec; }
.muted { color: #5d6875; font-size: .92rem; }
table { border-collapse: collapse; margin: .8rem 0; font-size: .9rem; }
th, td { padding: .3rem .7rem; border-bottom: 1px solid #e3e7ec; text-align: right; }
th { background: #f4f6f8; } td.text, th.text { text-align: left; }
.cards { display: flex; gap: 1rem; flex-wrap: wrap; margin: 1rem 0; }
.card { background: #f4f6f8; border-radius: .5rem; padding: .7rem 1rem; min-width: 9rem; }
.card b { display: block; font-size: 1.3rem; }
.status { font-size: .8rem; padding: .1rem .5rem; border-radius: 1rem; background: #e6f4ea; }
.status.pending { background: #fdecea; }
td.nowrap { white-space: nowrap; }
.charts { display: flex; flex-wrap: wrap; gap: .5rem; } img { max-width: 100%; }
/* A table wider than the page scrolls inside its own box; shadows at the edges show that
   there is more to the side (the light covers follow the content, the shadows stay put). */
.scroll { overflow-x: auto; max-width: 100%;
  background: linear-gradient(to right, #fff 30%, #fff0),
    linear-gradient(to left, #fff 30%, #fff0) 100% 0,
    radial-gradient(farthest-side at 0 50%, #0003, #0000),
    radial-gradient(farthest-side at 100% 50%, #0003, #0000) 100% 0;
  background-repeat: no-repeat;
  background-size: 2.5rem 100%, 2.5rem 100%, .8rem 100%, .8rem 100%;
  background-attachment: local, local, scroll, scroll; }
p, code { overflow-wrap: anywhere; }
code { background: #f4f6f8; padding: 0 .25rem; }
.rerun { background: #eef3fb; border-left: 4px solid #4c78a8; padding: .5rem .8rem; }
"""


def _esc(value: object) -> str:
    return html.escape(str(value))


def _fmt(value: object) -> str:
    if isinstance(value, float | np.floating):
        number = float(value)
        return (
            "" if np.isnan(number) else f"{number:,.6g}" if abs(number) < 1e6 else f"{number:,.0f}"
        )
    if isinstance(value, int | np.integer):
        return f"{value:,}"
    return _esc(value)


def _html_table(
    frame: pd.DataFrame, text: tuple[str, ...] = (), nowrap: tuple[str, ...] = ()
) -> str:
    """A plain HTML table; columns in ``text`` (and non-numeric ones) align left.

    Integer columns in ``text`` are keys (years, codes): written as they are, ``2004`` and
    not ``2,004``; values keep their thousands separators. Cells of ``nowrap`` columns
    (times) stay on one line. A table wider than the page scrolls in its own box.
    """
    left = {c for c in frame.columns if c in text or not pd.api.types.is_numeric_dtype(frame[c])}
    codes = {c for c in frame.columns if c in text and pd.api.types.is_integer_dtype(frame[c])}
    kind = {c: " ".join(["text"] * (c in left) + ["nowrap"] * (c in nowrap)) for c in frame}
    head = "".join(f'<th class="{"text" if c in left else ""}">{_esc(c)}</th>' for c in frame)
    rows = []
    for values in frame.itertuples(index=False):
        cells = "".join(
            f'<td class="{kind[c]}">{_esc(v) if c in codes else _fmt(v)}</td>'
            for c, v in zip(frame.columns, values, strict=True)
        )
        rows.append(f"<tr>{cells}</tr>")
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    return f"<div class='scroll'>{table}</div>"  # a wide table scrolls inside its column


def _labels(table: pd.DataFrame, keys: tuple[str, ...]) -> list[str]:
    """Group labels for a chart's axis: long ones wrapped on two lines and cut short."""
    labels = [" / ".join(str(v) for v in row) for row in table[list(keys)].itertuples(index=False)]
    return [textwrap.shorten(label, 36, placeholder="…") for label in labels]


def plural(count: int, word: str) -> str:
    """``1 row``, ``2 rows``, ``1 query``, ``3 queries`` (thousands separated)."""
    if count == 1:
        return f"1 {word}"
    many = word[:-1] + "ies" if word.endswith("y") else word + "s"
    return f"{count:,} {many}"


def spend_text(query: QuerySpec) -> str:
    """What a query may spend, as it states it: ``ε = 0.35``, or ``ρ = 0.01``."""
    if query.rho is not None:
        return f"ρ = {float(query.rho):g}"
    return f"ε = {float(query.epsilon or 0):g}"


def bar_chart(
    labels: list[str], values: np.ndarray, lower: np.ndarray | None, upper: np.ndarray | None,
    title: str,
) -> str:  # fmt: skip
    """A bar chart with error bars, as a ``data:image/png;base64`` URI."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(max(4.2, min(2.0 + 0.45 * len(labels), 9.5)), 3.4), dpi=110)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    positions = np.arange(len(labels))
    errors = None
    if lower is not None and upper is not None:
        errors = np.vstack([np.maximum(values - lower, 0), np.maximum(upper - values, 0)])
    axes.bar(positions, values, color="#4c78a8", yerr=errors, capsize=3, ecolor="#1d232b")
    wrapped = [textwrap.fill(label, 14, max_lines=2, placeholder="…") for label in labels]
    crowded = len(labels) > 6 or max(map(len, labels), default=0) > 10
    axes.set_xticks(
        positions, wrapped, rotation=35 if crowded else 0, ha="right" if crowded else "center"
    )
    axes.set_title(title, fontsize=10, loc="left")
    axes.spines[["top", "right"]].set_visible(False)
    axes.axhline(0, color="#8a949e", linewidth=0.8)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _charts(planned: PlannedQuery, table: pd.DataFrame) -> list[str]:
    """Charts of a grouped query's statistics, with their intervals as error bars."""
    query = planned.query
    if not query.groupby or not 0 < len(table) <= MAX_BARS:
        return []
    labels = _labels(table, query.groupby)
    errors = planned.preview.table["error"]
    images = []
    for name, (_, how) in list(query.aggs.items())[:MAX_CHARTS]:
        values = table[name].to_numpy(dtype=np.float64)
        lower = upper = None
        if f"{name}_lower" in table:
            lower = table[f"{name}_lower"].to_numpy(dtype=np.float64)
            upper = table[f"{name}_upper"].to_numpy(dtype=np.float64)
            what = f"{name} ({how}) with {planned.preview.confidence:.0%} intervals"
        elif how in ("count", "sum") and np.isfinite(errors.get(name, np.nan)):
            lower, upper = values - errors[name], values + errors[name]
            what = f"{name} ({how}) ± {planned.preview.confidence:.0%} error bound"
        else:
            what = f"{name} ({how})"
        image = bar_chart(labels, values, lower, upper, what)
        images.append(f'<img alt="{_esc(what)}" src="{image}">')
    return images


def _breakdown(outcome: ReleaseOutcome, entries: dict[str, LedgerEntry]) -> pd.DataFrame:
    rows = []
    zcdp = outcome.plan.total.is_zcdp  # a ρ budget charges ρ only: no ε derived from it
    for planned in outcome.plan.queries:
        entry = entries.get(planned.query.tag)
        release = entry.release if entry is not None else planned.preview.release
        assert release is not None
        rows.append(
            {
                "query": planned.query.name,
                "status": outcome.status.get(planned.query.name, "not run"),
                **(
                    {"rho": float(release.rho)}
                    if zcdp
                    else {
                        "epsilon": float(release.cost.epsilon),
                        "delta": float(release.cost.delta),
                    }
                ),
                "groups": release.groups,
                "noise": "; ".join(m.describe() for m in release.measurements),
                "charged": entry.time[:19].replace("T", " ") if entry is not None else "",
            }
        )
    return pd.DataFrame(rows)


def _query_section(
    planned: PlannedQuery, outcome: ReleaseOutcome, entry: LedgerEntry | None
) -> str:
    query = planned.query
    status = outcome.status.get(query.name, "not run")
    parts = [
        f'<h2 id="{_esc(query.name)}">{_esc(query.name)} '
        f'<span class="status {"" if query.name in outcome.outputs else "pending"}">'
        f"{_esc(status)}</span></h2>"
    ]
    if query.description:
        parts.append(f"<p>{_esc(query.description)}</p>")
    table = outcome.outputs.get(query.name)
    if table is None:
        parts.append("<p class='muted'>Not released (an earlier query failed).</p>")
        return "\n".join(parts)
    by = f" by {', '.join(query.groupby)}" if query.groupby else ""
    cost = planned.preview.release.cost if planned.preview.release else None
    parts.append(
        f"<p class='muted'>{plural(len(table), 'row')}{_esc(by)}; {spend_text(query)}"
        + (f", δ = {float(cost.delta):.3g}" if cost is not None and cost.delta else "")
        + (f"; ledger note: {_esc(entry.release.note)}" if entry is not None else "")
        + "</p>"
    )
    parts.append(_html_table(table, query.groupby))
    ranks = planned.preview.table[planned.preview.table["error_in"] == "ranks"]
    for name, error in ranks["error"].items():
        parts.append(
            f"<p class='muted'>{_esc(name)}: within {error:,.0f} ranks of the true quantile "
            f"with {planned.preview.confidence:.0%} probability (rank error of the "
            "exponential mechanism; its interval in the column's units is in the table when "
            "the query asks for one).</p>"
        )
    charts = _charts(planned, table) if outcome.charts else []
    if charts:
        parts.append(f"<div class='charts'>{''.join(charts)}</div>")
    return "\n".join(parts)


def render_report(outcome: ReleaseOutcome, accountant: Accountant) -> str:
    """The report's HTML text."""
    spec = outcome.plan.spec
    entries = {e.release.tag: e for e in accountant.entries if e.release.tag}
    spent, total = accountant.spent, accountant.total
    store = accountant.store
    head = store.head if store is not None else ""
    cards = [
        ("budget", str(total)), ("spent", str(spent)), ("remaining", str(total - spent)),
        ("accounting", accountant.composition.name), ("releases", str(len(entries))),
    ]  # fmt: skip
    card_html = "".join(f"<div class='card'>{_esc(k)}<b>{_esc(v)}</b></div>" for k, v in cards)
    sections = [_query_section(p, outcome, entries.get(p.query.tag)) for p in outcome.plan.queries]
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    rerun = outcome.rerun_note()
    text, nowrap = ("query", "status", "noise", "charged"), ("status", "charged")
    breakdown = _html_table(_breakdown(outcome, entries), text, nowrap)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_esc(spec.title)}: differentially private release</title>
<style>{_STYLE}</style></head>
<body>
<h1>{_esc(spec.title)}</h1>
<p class="muted">Differentially private release from <code>{_esc(spec.data_path.name)}</code>,
spec <code>{_esc(spec.path.name)}</code>; generated {now} by pandas-dp {pandas_dp.__version__}.</p>
<div class="cards">{card_html}</div>
{f'<p class="rerun">{_esc(rerun)}</p>' if rerun else ""}
<h2>Budget breakdown</h2>
{breakdown}
<p class="muted">Ledger <code>{_esc(store.path.name if store else "")}</code>, head hash
<code>{_esc(head)}</code>: keep this hash to detect later edits of the ledger.</p>
{"".join(sections)}
<h2>How to read this report</h2>
<p>Every number was computed from the data plus random noise drawn exactly from a discrete
Laplace or Gaussian distribution, so that no single person's data can be inferred from it.
Intervals (<code>_lower</code>, <code>_upper</code>) contain the noise-free value with the
stated probability; they cover the privacy noise only, not sampling error. Values were
clipped to the stated public bounds before aggregation; a mean is post-processed from a noisy
sum and a noisy count. Counts can be negative or inconsistent with each other: that is the
noise, left visible on purpose.</p>
</body></html>
"""


def write_report(outcome: ReleaseOutcome, accountant: Accountant) -> Path:
    """Write ``report.html`` into the release folder (atomically); returns its path."""
    path = outcome.out_dir / REPORT_NAME
    text = render_report(outcome, accountant)
    write_atomic(path, lambda p: p.write_text(text, encoding="utf-8"))
    return path
