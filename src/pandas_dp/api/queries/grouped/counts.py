"""Counts of a group-by: their options, and the shape of ``value_counts`` within groups.

Counts over disjoint groups have sensitivity 1 for the whole vector (a privacy unit's
contribution bound under a unit), so each call charges its ε once. The releases are methods
of :class:`~pandas_dp.api.queries.groupby.DPGroupBy`; what they share with
``Series.dp.value_counts`` and histograms is here.
"""

from __future__ import annotations

from typing import cast

import numpy as np
import pandas as pd

from pandas_dp.api.release import ReleaseOptions
from pandas_dp.api.release.arguments import CountArgs
from pandas_dp.planning.statistics.postprocess import PostProcess

__all__ = ["count_options", "product_index", "relabelled", "within"]


def count_options(options: CountArgs, ci: float | None, clamp: bool = False) -> ReleaseOptions:
    """The options of a release of counts: ``nonnegative`` and ``total`` post-process them."""
    post = PostProcess.of(options.get("nonnegative", False) or clamp, options.get("total"))
    return ReleaseOptions.of_noise(options, ci=ci, post=post)


def product_index(outer: pd.Index, inner: pd.Index) -> pd.MultiIndex:
    """Every outer key with every inner value, outer keys first (in their order)."""
    repeated = outer.repeat(len(inner))
    arrays = [repeated.get_level_values(i) for i in range(outer.nlevels)]
    return pd.MultiIndex.from_arrays(
        [*arrays, np.tile(inner.to_numpy(dtype=object), len(outer))],
        names=[*outer.names, inner.name],
    )


def relabelled(counts: pd.Series, keys: pd.Index) -> tuple[pd.Series, np.ndarray]:
    """The listed pairs' counts by their keys, each group's "other" cell kept aside.

    ``counts`` holds the pairs' cells (in ``keys``' order), then one per group for its
    rows with a value outside the keys (see ``OtherCells``); :func:`within` adds those
    (clamped at 0) to the group's total, as pandas divides by all of the group's rows.
    """
    values = counts.to_numpy()
    listed = pd.Series(values[: len(keys)], index=keys, name=counts.name)
    return listed, np.asarray(values[len(keys) :], dtype=np.float64)


def within(
    counts: pd.Series | pd.DataFrame, outer: list[int], normalize: bool, sort: bool,
    ascending: bool, outside: np.ndarray | None = None,
) -> pd.Series | pd.DataFrame:  # fmt: skip
    """Proportions and order within each group (free post-processing).

    ``outside``: each group's noisy count of rows whose value is not listed (clamped at 0,
    it counts in the group's total).
    """
    index = cast(pd.MultiIndex, counts.index)  # (group keys..., value), as built above
    groups = pd.factorize(index.droplevel(-1))[0]
    values = (counts["count"] if isinstance(counts, pd.DataFrame) else counts).to_numpy(float)
    if normalize:
        clamped = np.maximum(values, 0.0)
        extra = np.zeros(int(groups.max(initial=-1)) + 1)
        if outside is not None:  # groups are numbered in key order, as the other cells
            extra[:] = np.maximum(outside, 0.0)[: extra.size]
        totals = (np.bincount(groups, weights=clamped, minlength=extra.size) + extra)[groups]
        with np.errstate(invalid="ignore", divide="ignore"):
            values = np.where(totals > 0, clamped / totals, np.nan)
        counts = pd.Series(values, index=counts.index, name="proportion")
    if sort:
        order = np.lexsort((values if ascending else -values, groups))
        counts = counts.iloc[order]
    return counts
