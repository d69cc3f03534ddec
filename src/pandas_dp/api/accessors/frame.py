"""The ``.dp`` accessors: thin, stateless doorways to :mod:`pandas_dp.api`.

pandas 3 builds a new accessor object on every ``df.dp`` access, so nothing is stored here
but the object itself; every method forwards to a plain function. This module holds the
DataFrame accessor and the registration; the shared base and the Series accessor live in
:mod:`pandas_dp.api.accessor_base` and :mod:`pandas_dp.api.series_accessor`.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, Literal, Unpack, overload

import pandas as pd

from pandas_dp.api.accessors.base import PreviewMixin
from pandas_dp.api.accessors.extremes import FrameExtremes
from pandas_dp.api.accessors.frame_statistics import FrameStatistics
from pandas_dp.api.accessors.joins_and_time import FrameJoinsAndTime
from pandas_dp.api.accessors.modelling import FrameModelling
from pandas_dp.api.accessors.pivots import FramePivots
from pandas_dp.api.accessors.protection import FrameProtection
from pandas_dp.api.accessors.tables import FrameTables
from pandas_dp.api.docstrings import shared_doc
from pandas_dp.api.outputs import Estimate
from pandas_dp.api.queries.counts import plan_histogram
from pandas_dp.api.queries.groupby import DPGroupBy
from pandas_dp.api.queries.grouper import grouper_groupby, has_grouper
from pandas_dp.api.release import Preview, ReleaseOptions, resolve
from pandas_dp.api.release.arguments import (
    CountArgs,
    EstimateT,
    Keys,
    NumberT,
    RatioArgs,
    ValueArgs,
)
from pandas_dp.errors import DPValueError
from pandas_dp.schema import rules_table


class FrameReleases(
    FrameTables[NumberT, EstimateT],
    FrameJoinsAndTime[NumberT, EstimateT],
    FrameModelling[NumberT, EstimateT],
    FramePivots[NumberT, EstimateT],
    FrameStatistics[NumberT, EstimateT],
    FrameExtremes[NumberT, EstimateT],
):
    """The release methods of ``df.dp``, shared by ``df.dp.preview``."""

    _obj: pd.DataFrame

    @property
    def bounds(self) -> pd.DataFrame:
        """What the session's schema supplies per column: bounds, keys, null rule, source.

        Empty without a schema. Explicit arguments to a release always take precedence; the
        ledger note of each release says where its bounds and keys came from.
        """
        return rules_table(self.session.schema)

    def groupby(
        self,
        by: Hashable | list[Hashable],
        keys: Keys = None,
        *,
        max_groups_per_unit: int | None = None,
        max_rows_per_group: int | None = None,
        selection: Literal["threshold", "optimal"] | None = None,
        dropna: bool = True,
        range: tuple[object, object] | None = None,
    ) -> DPGroupBy:
        """Group the protected frame by public keys, for grouped releases.

        Parameters
        ----------
        by : label, Series, pd.Grouper or list of them
            The column(s) to group by, or a Series derived from this protected frame (such
            as ``priv["t"].dt.to_period("M")``), aligned on the index as in pandas. One
            ``pd.Grouper(key="t", freq="MS")`` groups a datetime (timedelta) column by the
            periods of ``freq`` over the public ``range``, alone (as :meth:`resample`) or
            beside other columns (a MultiIndex: every bin with every key of the others).
        keys : list-like, dict, list of tuples or MultiIndex, optional
            The public keys: for one column a list of values; for several, a dict
            ``{column: values}`` (their cross product), a list of tuples or a MultiIndex.
            Results are indexed by exactly these keys, in this order. Without keys (and
            without a schema's keys) the call is refused unless ``selection`` asks for keys
            chosen from the data. Beside a ``pd.Grouper``: the keys of the other columns
            only (the bins come from ``range``).
        max_groups_per_unit : int, optional
            Under a privacy unit: the most groups one unit may contribute to (extra groups
            are dropped at random). Defaults to ``max_rows_per_unit``.
        max_rows_per_group : int, optional
            Under a privacy unit: the most rows one unit may add to one group.
        selection : {"threshold", "optimal"}, optional
            Choose the keys from the data by DP partition selection, for columns whose
            values are not public (needs a session with δ > 0; rare keys are dropped). Only
            when asked: without public keys and without ``selection``, the call is refused.
            How keys are chosen: a key is kept when its noisy row count
            clears a threshold (the count is released with that same noise), or by the
            optimal rule of Desfontaines, Voss, Gipson & Mandayam (2022), which keeps small
            keys more often but spends a share of ε on the choice alone. See the group-by
            guide's comparison of the two.
        dropna : bool, default True
            As pandas: ``False`` makes the rows whose key is missing one more group (its key
            NaN, after the public keys); one group-by column only.
        range : (start, end), optional
            With a ``pd.Grouper``, and only then: the public span of its bins, Timestamps
            (Timedeltas, or text pandas reads as one) from ``start`` up to ``end``
            (excluded), cut and labelled as ``resample`` cuts them (pandas spans the data's
            first to last value instead, which is private).

        Returns
        -------
        DPGroupBy
            With ``count``, ``sum``, ``mean`` and ``agg`` releases.

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> df = pd.DataFrame({"sex": [0, 1] * 500, "age": [30.0, 50.0] * 500})
        >>> priv = df.dp.protect(epsilon=1.0)
        >>> table = priv.dp.groupby("sex", keys=[0, 1]).agg(
        ...     n="count", avg=("age", "mean"), bounds={"age": (0, 100)}, epsilon=1.0
        ... )
        >>> list(table.columns), list(table.index)
        (['n', 'avg'], [0, 1])
        """
        if has_grouper(by):
            return grouper_groupby(
                resolve(self._obj), by, keys, range, self._execute,
                max_groups_per_unit=max_groups_per_unit, max_rows_per_group=max_rows_per_group,
                selection=selection, dropna=dropna,
            )  # fmt: skip
        if range is not None:
            raise DPValueError(
                "range= gives the public span of a pd.Grouper's time bins, e.g. "
                "groupby(pd.Grouper(key='t', freq='MS'), range=(start, end)); without a "
                "pd.Grouper, leave it out"
            )
        return DPGroupBy.of(
            resolve(self._obj), by, keys,
            max_groups_per_unit=max_groups_per_unit, max_rows_per_group=max_rows_per_group,
            selection=selection, execute=self._execute, dropna=dropna,
        )  # fmt: skip

    def histogram(
        self, column: Hashable, bins: object = None, *, range: object = None,
        freq: str | None = None, right: bool | None = None, include_lowest: bool = False,
        clip: bool = False, ci: float | None = None, **options: Unpack[CountArgs],
    ) -> Any:  # fmt: skip
        """Release noisy counts of ``column`` in public bins; see ``Series.dp.histogram``.

        The DataFrame form works under a privacy unit, whose column a Series cannot carry,
        and with ``weights="w", weight_bounds=(lower, upper)``: each bin's noisy sum of
        clipped weights, a float (pandas: ``np.histogram(x, bins, weights=w)``), with
        sensitivity ``W = upper`` for the whole vector (one row is in one bin).
        """
        return self._execute(
            plan_histogram(
                self._obj, bins, column=column, range=range, freq=freq, right=right,
                include_lowest=include_lowest, clip=clip, ci=ci, **options,
            )
        )  # fmt: skip

    @overload
    def sum(
        self, column: list[Hashable], *, ci: float | None = None, **options: Unpack[ValueArgs]
    ) -> Any: ...
    @overload
    def sum(
        self, column: Hashable, *, ci: None = None, **options: Unpack[ValueArgs]
    ) -> NumberT: ...
    @overload
    def sum(self, column: Hashable, *, ci: float, **options: Unpack[ValueArgs]) -> EstimateT: ...
    @shared_doc
    def sum(
        self,
        column: Hashable | list[Hashable],
        *,
        ci: float | None = None,
        **options: Unpack[ValueArgs],
    ) -> object:
        """Release the noisy sum of a column clipped to public bounds.

        Parameters
        ----------
        column : label or list of labels
            A numeric or bool column; for a list, one sum per column in one release (ε
            split among them), returned as a Series indexed by the columns like
            ``df[columns].sum()`` (a DataFrame with ``sum``, ``sum_lower``, ``sum_upper``
            with ``ci``); ``bounds`` is then a ``{column: (lower, upper)}`` dict.
        {bounds}
        {epsilon}
        {fillna}
        {delta}
        {mechanism}
        {ci}
        {weights}

        Returns
        -------
        float, int or Estimate
            A multiple of the lattice step ``g`` (a power of two chosen from the bounds and
            ε only); an ``int`` for an integer or boolean column with integer bounds, as
            pandas sums it (the noisy sum rounded: free post-processing).

        Notes
        -----
        Each value is clipped to ``[lower, upper]`` (±inf to the bounds) and rounded to a
        multiple of ``g = 2**k``, the smallest power of two with
        ``g >= max(Δ, Δ/ε) / 2**36`` where ``Δ = max(|lower|, |upper|)``. The rounded values are
        summed exactly as integers, so neither row order nor float rounding changes the
        result, and no sum can overflow. Each row's rounding error is at most ``g/2``.
        Sensitivity: ``max(|lower|, |upper|)`` rounded to the lattice. Mechanism: discrete
        Laplace on the lattice with scale ``Δ/ε``. Budget cost: ``epsilon``. Missing
        values contribute nothing (or ``fillna``), which does not change the sensitivity.
        With ``weights`` (weight bounds ``(wl, W)``): ``Σ clip(w)·clip(x)`` (pandas:
        ``(x.clip(lower, upper) * w.clip(wl, W)).sum()``), each row's product rounded to a
        lattice; sensitivity ``W·max(|lower|, |upper|)``.

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> priv = pd.DataFrame({"x": [1.0] * 1000}).dp.protect(epsilon=1.0)
        >>> s = priv.dp.sum("x", bounds=(0, 1), epsilon=0.5)
        >>> abs(s - 1000) < 100  # noise scale 2
        True
        """
        return self._scalar("sum", column, ReleaseOptions(ci=ci, **options))

    @overload
    def mean(
        self, column: list[Hashable], *, ci: float | None = None, **options: Unpack[RatioArgs]
    ) -> Any: ...
    @overload
    def mean(
        self, column: Hashable, *, ci: None = None, **options: Unpack[RatioArgs]
    ) -> NumberT: ...
    @overload
    def mean(self, column: Hashable, *, ci: float, **options: Unpack[RatioArgs]) -> EstimateT: ...
    @shared_doc
    def mean(
        self,
        column: Hashable | list[Hashable],
        *,
        ci: float | None = None,
        **options: Unpack[RatioArgs],
    ) -> object:
        """Release the noisy mean of a column clipped to public bounds.

        Parameters
        ----------
        column : label or list of labels
            A numeric, bool, datetime or timedelta column (with Timestamp or Timedelta
            bounds, or text pandas reads as one: ``("2020-01-01", "2021-01-01")``); a list
            gives a Series indexed by the columns, as ``df[columns].mean()`` (see
            :meth:`sum`).
        {bounds}
        {epsilon}
        {fillna}
        {delta}
        {mechanism}
        {ci}
            The mean's interval is conservative: each of its two measurements gets half of
            ``1 - ci``, and the ratio is bounded over both ranges.
        {min_count}
        {weights}

        Returns
        -------
        float or Estimate
            Always inside ``[lower, upper]``. A ``Timestamp`` (``Timedelta``) in the
            column's unit and time zone for a datetime (timedelta) column.

        Notes
        -----
        Never ``noisy sum / true count``. Values are clipped, centred at the midpoint ``c``
        of the bounds and rounded to a lattice as in :meth:`sum`. Half of ε buys a noisy
        centred sum (sensitivity ``(upper - lower) / 2``), half a noisy count of non-missing
        values (sensitivity 1), both with discrete Laplace noise. The release is
        ``c + noisy centred sum / max(noisy count, 1)``, clipped to the bounds (free
        post-processing). Budget cost: ``epsilon``. With ``weights`` (weight bounds
        ``(wl, W)``): ``c + noisy Σ w·(x - c) / max(noisy Σ w, 1)`` over rows where ``x`` is
        present, ``c`` the midpoint of the bounds (pandas: ``np.average(x, weights=w)``);
        sensitivities ``W·(upper - lower)/2`` and ``W``.

        Datetimes are read as nanoseconds since 1970-01-01 UTC (timedeltas as nanoseconds),
        bounds too, so sensitivities, the lattice and the ledger are in nanoseconds; float64
        holds those exactly to 256 ns until 2043, far finer than the lattice step (about
        ``2**-36`` of the bounds' width: a quarter of a millisecond for a year).

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> priv = pd.DataFrame({"age": [40.0] * 1000}).dp.protect(epsilon=1.0)
        >>> m = priv.dp.mean("age", bounds=(0, 100), epsilon=1.0)
        >>> 0 <= m <= 100 and abs(m - 40) < 5
        True
        """
        return self._scalar("mean", column, ReleaseOptions(ci=ci, **options))


class DataFrameDPAccessor(FrameProtection, FrameReleases[float, Estimate]):
    """Differentially private releases from a protected DataFrame (``df.dp``).

    The same accessor serves Dask DataFrames (``ddf.dp``); results are pandas objects.
    """

    @property
    def preview(self) -> DataFramePreview:
        """Preview releases without spending: ``priv.dp.preview.count(epsilon=0.1)``.

        The same release methods, returning a :class:`~pandas_dp.api.release.Preview` with
        the mechanism, noise scale, cost and the error bound at the release's confidence
        level (``ci``, 95% by default). It reads no data and charges nothing.
        """
        return DataFramePreview(self._obj)


class DataFramePreview(PreviewMixin, FrameReleases[Preview, Preview]):
    """``.dp.preview``: every release method of ``.dp``, returning a preview instead."""
