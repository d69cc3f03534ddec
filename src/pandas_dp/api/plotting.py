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
    **kwargs: Any,
) -> Any:
    """Plot ``table[column]`` with error bars from its ``_lower``/``_upper`` columns.

    Parameters
    ----------
    table : DataFrame
        A released table with intervals (``ci=`` on a group-by, ``value_counts`` or
        histogram).
    column : label, optional
        The released column; by default the first one that has interval columns.
    kind : {"bar", "barh", "line"}, default "bar"
        As for ``Series.plot``.
    **kwargs
        Passed to ``Series.plot`` (``ax=``, ``title=``, ``color=``, ...).

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
    values = table[column].to_numpy(dtype=np.float64)
    below = np.maximum(values - table[f"{column}_lower"].to_numpy(dtype=np.float64), 0.0)
    above = np.maximum(table[f"{column}_upper"].to_numpy(dtype=np.float64) - values, 0.0)
    kwargs.setdefault("capsize", 3)
    plot: Any = table[column].plot  # pandas' own plotting (matplotlib, as any pandas plot)
    return plot(kind=kind, yerr=np.vstack([below, above]), **kwargs)
