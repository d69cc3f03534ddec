"""Plot a released table with its error bars, through pandas' own plotting.

A released column ``x`` with ``ci=`` comes with ``x_lower`` and ``x_upper``; the bars are
drawn from the value to each end (``yerr``), so an interval that is not symmetric (a
clamped count, a mean near a bound, a quantile) is shown as it is. Plotting is
post-processing of released values: it reads nothing private and costs nothing.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, Literal

import numpy as np
import pandas as pd

from pandas_dp.errors import DPKeyError, DPTypeError

__all__ = ["plot_intervals"]


def plot_intervals(
    table: pd.DataFrame,
    column: Hashable | None = None,
    *,
    kind: Literal["bar", "barh", "line"] = "bar",
    unstack: Hashable | None = -1,
    **kwargs: Any,
) -> Any:
    """Plot ``table[column]`` with error bars from its ``_lower``/``_upper`` columns.

    The bars run along the values' axis (``xerr`` for ``kind="barh"``). A table grouped
    by two or more keys (rows on a MultiIndex) is drawn as pandas draws
    ``table[column].unstack(unstack).plot(kind=kind, yerr=...)``: the unstacked level
    becomes the series (a legend entry each: side-by-side bars, or one line each), the
    other levels the axis, and the error bars are unstacked the same way.

    Parameters
    ----------
    table : DataFrame
        A released table with intervals (``ci=`` on a group-by, ``value_counts`` or
        histogram).
    column : label, optional
        The released column; by default the first one that has interval columns.
    kind : {"bar", "barh", "line"}, default "bar"
        As for ``Series.plot``.
    unstack : level name or number, or None, default -1
        For a MultiIndex: the level drawn as series, as in ``Series.unstack`` (the last
        key by default). ``None`` draws one flat series labelled by tuples.
    **kwargs
        Passed to pandas' ``plot`` (``ax=``, ``title=``, ``color=``, ...).

    Returns
    -------
    matplotlib.axes.Axes
        Needs matplotlib (``pip install 'pandas-dp[report]'``), as any pandas plot.

    Examples
    --------
    >>> import pandas as pd, pandas_dp
    >>> priv = pd.DataFrame({"g": ["a", "b"] * 500}).dp.protect(epsilon=1.0)
    >>> counts = priv.dp.groupby("g", keys=["a", "b"]).count(epsilon=1.0, ci=0.95)
    >>> ax = pandas_dp.plot_intervals(counts, title="rows per group")
    >>> [t.get_text() for t in ax.get_xticklabels()]
    ['a', 'b']
    """
    if not isinstance(table, pd.DataFrame):
        raise DPTypeError("plot_intervals needs a released DataFrame with interval columns")
    if column is None:
        column = next((c for c in table.columns if f"{c}_lower" in table.columns), None)
        if column is None:
            raise DPKeyError("no column with intervals: release the table with ci=0.95")
    for name in (column, f"{column}_lower", f"{column}_upper"):
        if name not in table.columns:
            raise DPKeyError(f"column {name!r} not found; release the table with ci=0.95")
    values = table[column].astype(np.float64)
    below = (values - table[f"{column}_lower"].astype(np.float64)).clip(lower=0.0)
    above = (table[f"{column}_upper"].astype(np.float64) - values).clip(lower=0.0)
    kwargs.setdefault("capsize", 3)
    bars = "xerr" if kind == "barh" else "yerr"  # along the values' axis
    if isinstance(table.index, pd.MultiIndex) and unstack is not None:
        # As pandas would: one series per key of the unstacked level, errors alike.
        wide = values.unstack(unstack)
        low, high = (part.unstack(unstack).reindex_like(wide) for part in (below, above))
        errors = np.stack([np.vstack([low[c], high[c]]) for c in wide.columns])
        plot: Any = wide.plot  # pandas' own plotting (matplotlib, as any pandas plot)
        return plot(kind=kind, **{bars: errors}, **kwargs)
    plot = values.plot
    return plot(kind=kind, **{bars: np.vstack([below.to_numpy(), above.to_numpy()])}, **kwargs)
