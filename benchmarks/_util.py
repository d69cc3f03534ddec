"""Timing helpers shared by the benchmarks: best-of-k wall time and ratio tables."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def best_time(fn: Callable[[], Any], repeat: int = 5, warmup: int = 1) -> float:
    """Best wall-clock time of ``fn()`` over ``repeat`` runs (seconds), after warm-up runs."""
    for _ in range(warmup):
        fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def table(headers: list[str], rows: list[list[Any]]) -> str:
    """A GitHub-flavoured markdown table (readable in a terminal too)."""
    cells = [[str(h) for h in headers]] + [[_fmt(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = [
        "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in cells
    ]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        if value == 0 or 1e-3 <= abs(value) < 1e6:
            return f"{value:,.3f}" if abs(value) < 100 else f"{value:,.0f}"
        return f"{value:.3g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)
