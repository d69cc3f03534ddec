"""Counts of a group-by: rows (``count``, ``size``) and values within groups (``value_counts``).

Counts over disjoint groups have sensitivity 1 for the whole vector (a privacy unit's
contribution bound under a unit), so each call charges its ε once.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal, Unpack, cast

import numpy as np
import pandas as pd

from pandas_dp.api.docstrings import shared_doc
from pandas_dp.api.keys import categories_as_keys, check_key_types, parse_keys
from pandas_dp.api.queries.grouped import GroupedStatistics
from pandas_dp.api.release import PlannedRelease, ReleaseOptions
from pandas_dp.api.release.arguments import CountArgs, Keys, NoiseArgs, Real
from pandas_dp.api.release.consumers import checked_keywords
from pandas_dp.api.release.selection import asked_selection
from pandas_dp.api.release.types import Table
from pandas_dp.api.statistics import Count, Size
from pandas_dp.api.statistics.postprocess import PostProcess
from pandas_dp.engines import Grouping
from pandas_dp.engines.plan import OtherCells
from pandas_dp.errors import DPTypeError, DPValueError

__all__ = ["GroupedCounts", "count_options"]


def count_options(options: CountArgs, ci: float | None, clamp: bool = False) -> ReleaseOptions:
    """The options of a release of counts: ``nonnegative`` and ``total`` post-process them."""
    post = PostProcess.of(options.get("nonnegative", False) or clamp, options.get("total"))
    return ReleaseOptions.of_noise(options, ci=ci, post=post)


class GroupedCounts(GroupedStatistics):
    """``count``, ``size`` and ``value_counts`` of :class:`~.groupby.DPGroupBy`."""

    @checked_keywords
    @shared_doc
    def count(
        self, *, ci: float | None = None, nonnegative: bool = False, total: Real | None = None,
        **options: Unpack[NoiseArgs],
    ) -> pd.Series | pd.DataFrame:  # fmt: skip
        """Release the noisy number of rows in each group (non-missing values once selected).

        Parameters
        ----------
        {epsilon}
        {delta}
        {mechanism}
        {ci_table}
        {nonnegative}
        {total}
        {weights}

        Returns
        -------
        Series or DataFrame
            Indexed by the keys, in their order, named ``"count"``. After a selection, as
            pandas: the non-missing values of each selected column (``g["x"].count()`` is a
            Series named ``x``). Unlike pandas, ``g.count()`` without a selection counts rows
            (``g.size()``): a DP release of every column's count would split ε needlessly.
            With ``weights``, each group's noisy sum of clipped weights (floats; sensitivity
            ``W`` for the whole vector).

        Notes
        -----
        Rows outside the keys (and rows with a missing key) are dropped silently; keys
        without rows get a noisy 0. Sensitivity: 1 for the whole vector of counts (one row
        is in one group), ``k`` under a privacy unit capped at ``k`` rows. Mechanism:
        discrete Laplace with scale ``sensitivity/ε`` on every group (or discrete Gaussian).
        Budget cost: ``ε`` (plus ``δ`` when keys are selected privately or noise is
        Gaussian).

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> df = pd.DataFrame({"region": ["north"] * 600 + ["south"] * 400})
        >>> priv = df.dp.protect(epsilon=1.0)
        >>> counts = priv.dp.groupby("region", keys=["north", "south", "east"]).count(epsilon=1.0)
        >>> list(counts.index), bool(abs(counts["north"] - 600) < 50)  # scale 1
        (['north', 'south', 'east'], True)
        """
        release = ReleaseOptions.of_noise(options, ci=ci, post=PostProcess.of(nonnegative, total))
        if self._selected is not None:
            return self._per_column(lambda c: Count(c, c), None, "count", release)
        return self._consume(self.plan_counts("groupby.count", release))

    @checked_keywords
    def size(
        self, *, ci: float | None = None, nonnegative: bool = False, total: Real | None = None,
        **options: Unpack[NoiseArgs],
    ) -> pd.Series | pd.DataFrame:  # fmt: skip
        """Release the noisy number of rows in each group, like ``GroupBy.size``.

        An unnamed Series (a DataFrame named ``size``, ``size_lower``, ``size_upper`` with
        ``ci``); see :meth:`count` for the noise and the cost (``epsilon``).
        """
        release = ReleaseOptions.of_noise(options, ci=ci, post=PostProcess.of(nonnegative, total))
        planned = self._plan([Size("size")], "series", "groupby.size", release)
        return self._consume(planned if ci is not None else planned.then(lambda s: s.rename(None)))

    @checked_keywords
    def plan_counts(self, query: str, options: ReleaseOptions) -> PlannedRelease[Table]:
        """The planned release of the groups' row counts (for value counts and histograms)."""
        return self._plan([Count("count")], "series", query, options)

    @checked_keywords
    @shared_doc
    def value_counts(
        self, keys: Keys = None, *, normalize: bool = False, sort: bool = True,
        ascending: bool = False, ci: float | None = None,
        selection: Literal["threshold", "optimal"] | None = None,
        **options: Unpack[CountArgs],
    ) -> pd.Series | pd.DataFrame:  # fmt: skip
        """Release noisy counts of each value within each group: ``g["x"].value_counts()``.

        Parameters
        ----------
        keys : list-like, optional
            The selected column's public values; every group gets every value. Without
            them the call is refused, unless ``selection`` asks for the pairs to be chosen
            by DP partition selection (needs δ > 0), or the group-by already chose its keys
            from the data (then the pairs are chosen too).
        normalize : bool, default False
            Shares of each group's rows with a value (as pandas: values outside ``keys``
            included), of the counts clamped at 0 (NaN for a group whose clamped counts are
            all 0), named ``"proportion"``.
        sort : bool, default True
            Within each group, by noisy count (groups stay in key order), as pandas.
        ascending : bool, default False
            Sort order.
        selection : {"threshold", "optimal"}, optional
            Choose the (group, value) pairs from the data, as ``groupby(selection=...)``.
        {epsilon}
        {delta}
        {nonnegative}
        {mechanism}
        {ci_table}

        Returns
        -------
        Series or DataFrame
            Indexed by (group keys..., value), named ``"count"``.

        Notes
        -----
        The group-by's counts over the pairs (group, value): sensitivity 1 for the whole
        vector, discrete Laplace noise of scale ``1/ε`` per pair; cost ``ε``. With
        ``normalize=True`` and public keys, each group has one more cell, its rows whose
        value is not missing and matches no key; each row is in one cell, so sensitivity
        stays 1 and the cost ``ε``. It counts in the group's total and is not shown.
        """
        if not self._series or self._selected is None:
            raise DPTypeError("value_counts counts one selected column: g['x'].value_counts(...)")
        if normalize and ci is not None:
            raise DPTypeError("ci is for counts; it cannot be combined with normalize=True")
        column = self._selected[0]
        dtypes = dict(self._target.engine.dtypes(self._target.data).items())
        keys, declared = categories_as_keys(keys, (column,), dtypes)
        inner = parse_keys((column,), keys)
        if inner is not None:
            schema = self._target.session.schema
            domain = None if schema is None else schema.rules(column).keys
            check_key_types(inner, [dtypes[column]], [domain])
        chosen = self.selection
        if self.keys is not None:  # public group keys: the values' keys decide
            chosen = asked_selection(inner, None, selection, (column,), "value_counts", True)
        elif selection is not None:
            raise DPValueError(
                "this group-by already chooses its keys from the data (selection="
                f"{self.selection!r}), and the (group, value) pairs with them: leave selection "
                "out of value_counts"
            )
        by = (*self.by, column)
        keys = None if inner is None or self.keys is None else _product(self.keys, inner)
        grouping = Grouping(by, keys)
        other = None
        if normalize and keys is not None and inner is not None and self.keys is not None:
            # Shares of each group's rows, as pandas: one more cell per group for its rows
            # whose value is not among the keys (each row in one cell: sensitivity 1).
            other = OtherCells(self.keys, inner)
            grouping = Grouping(by, pd.RangeIndex(other.size), other=other)
        pairs = replace(
            self, by=by, keys=keys, _selected=None, _series=False, selection=chosen,
            keys_from="; ".join(note for note in (self.keys_from, declared) if note),
            _grouping=grouping,
        )  # fmt: skip
        release = count_options(options, ci, clamp=normalize)
        planned = pairs.plan_counts("groupby.value_counts", release)
        outer = list(range(len(self.by)))

        def shaped(counts: pd.Series | pd.DataFrame) -> pd.Series | pd.DataFrame:
            if other is None or keys is None:
                return _within(counts, outer, normalize, sort, ascending)
            listed, outside = _relabelled(cast(pd.Series, counts), keys)
            return _within(listed, outer, normalize, sort, ascending, outside)

        return self._consume(planned.then(shaped))


def _product(outer: pd.Index, inner: pd.Index) -> pd.MultiIndex:
    """Every outer key with every inner value, outer keys first (in their order)."""
    repeated = outer.repeat(len(inner))
    arrays = [repeated.get_level_values(i) for i in range(outer.nlevels)]
    return pd.MultiIndex.from_arrays(
        [*arrays, np.tile(inner.to_numpy(dtype=object), len(outer))],
        names=[*outer.names, inner.name],
    )


def _relabelled(counts: pd.Series, keys: pd.Index) -> tuple[pd.Series, np.ndarray]:
    """The listed pairs' counts by their keys, each group's "other" cell kept aside.

    ``counts`` holds the pairs' cells (in ``keys``' order), then one per group for its
    rows with a value outside the keys (see ``OtherCells``); :func:`_within` adds those
    (clamped at 0) to the group's total, as pandas divides by all of the group's rows.
    """
    values = counts.to_numpy()
    listed = pd.Series(values[: len(keys)], index=keys, name=counts.name)
    return listed, np.asarray(values[len(keys) :], dtype=np.float64)


def _within(
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
