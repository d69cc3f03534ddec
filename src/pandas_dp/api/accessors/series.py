"""The ``s.dp`` accessor: releases from a protected Series (pandas or Dask)."""

from __future__ import annotations

from typing import Any, Literal, Unpack, overload

import pandas as pd

from pandas_dp.api.accessors.base import PreviewMixin
from pandas_dp.api.accessors.extremes import SeriesExtremes
from pandas_dp.api.accessors.statistics import SeriesStatistics
from pandas_dp.api.docstrings import shared_doc
from pandas_dp.api.outputs import Estimate
from pandas_dp.api.protect import protect
from pandas_dp.api.queries.counts import plan_histogram, plan_value_counts
from pandas_dp.api.release import Preview, ReleaseOptions
from pandas_dp.api.release.arguments import (
    CountArgs,
    EstimateT,
    Keys,
    NumberT,
    ProtectArgs,
    RatioArgs,
    Real,
    ValueArgs,
    passes_on,
)


class SeriesReleases(SeriesStatistics[NumberT, EstimateT], SeriesExtremes[NumberT, EstimateT]):
    """The release methods of ``s.dp``, shared by ``s.dp.preview``."""

    _obj: pd.Series

    @shared_doc
    def value_counts(
        self, keys: Keys = None, *, normalize: bool = False, sort: bool = True,
        ascending: bool = False, dropna: bool = True, ci: float | None = None,
        selection: Literal["threshold", "optimal"] | None = None,
        **options: Unpack[CountArgs],
    ) -> Any:  # fmt: skip
        """Release noisy counts of each public key, like ``Series.value_counts``.

        Parameters
        ----------
        keys : list-like or "categories", optional
            The public values to count. ``"categories"`` takes a categorical column's
            categories as the keys (they often come from the data: say so only when they
            are public). Without keys (or a schema's), the call is refused unless
            ``selection`` asks for values chosen from the data.
        {epsilon}
        {delta}
        normalize : bool, default False
            Return shares of all rows instead of counts, as pandas: of every non-missing
            value (every value with ``dropna=False``), the values outside ``keys`` included.
        sort : bool, default True
            Sort by noisy count (post-processing, free).
        ascending : bool, default False
            Sort order.
        dropna : bool, default True
            ``False`` also counts the missing values, under a NaN key (public keys only).
        selection : {"threshold", "optimal"}, optional
            Choose the values to count from the data by DP partition selection (needs a
            session with δ > 0; rare values are dropped): only when asked, as in
            :meth:`DataFrameDPAccessor.groupby`.
        {nonnegative}
        {total}
        {mechanism}
        {ci_table}

        Returns
        -------
        Series or DataFrame
            Named ``"count"`` (``"proportion"`` with ``normalize``), indexed by the keys.

        Notes
        -----
        Values outside ``keys`` and missing values are dropped silently. Sensitivity 1 for
        the vector of counts; discrete Laplace noise of scale ``1/ε`` per key; cost ``ε``.

        With ``normalize=True`` and public keys, one more cell is measured: the rows whose
        value is not missing and matches no key ("other"; unprocessable values too). Each
        row is in one cell, so the vector keeps sensitivity 1 and the cost stays ``ε``
        (parallel composition). The shares are the counts clamped at 0 over the sum of all
        cells, "other" (and with ``dropna=False`` the missing values' cell) included, as
        pandas divides by every row; "other" is not shown. With keys chosen from the data
        (``selection``), the shares are of the released keys' counts.

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> s = pd.Series(["a"] * 300 + ["b"] * 100, name="letter").dp.protect(epsilon=1.0)
        >>> counts = s.dp.value_counts(keys=["a", "b", "c"], epsilon=1.0)
        >>> counts.index[0], counts.name
        ('a', 'count')
        """
        return self._execute(plan_value_counts(
            self._obj, keys, normalize=normalize, sort=sort, ascending=ascending, ci=ci,
            dropna=dropna, selection=selection, **options,
        ))  # fmt: skip

    @shared_doc
    def histogram(
        self, bins: object = None, *, range: object = None, freq: str | None = None,
        right: bool | None = None, include_lowest: bool = False, clip: bool = False,
        ci: float | None = None, **options: Unpack[CountArgs],
    ) -> Any:  # fmt: skip
        """Release noisy counts of the values falling in public bins.

        Parameters
        ----------
        bins : sequence of float, or int
            Public, strictly increasing bin edges; or a number of equal bins over ``range``.
            For a datetime (timedelta) column, edges are Timestamps (Timedeltas), e.g. a
            ``pd.DatetimeIndex``.
        range : (float, float), optional
            With ``bins=int``: the public limits, as in :func:`numpy.histogram` (bins are
            then ``[a, b)``, the last one ``[a, b]``, and the index is left-closed). With
            ``freq``: ``(start, end)`` as Timestamps (Timedeltas), or text pandas reads as
            one (``("2020-01-01", "2021-01-01")``).
        freq : str, optional
            Datetime and timedelta columns: bins of a pandas frequency (``"D"``, ``"W"``,
            ``"MS"`` ...) over ``range``, cut and labelled like ``resample(freq)``: each bin
            is ``[a, b)``, the index holds resample's labels (a ``DatetimeIndex`` with its
            ``freq``), and ``range=(start, end)`` counts ``start <= t < end``: a value at
            exactly ``end`` begins the next period and is not counted, so
            ``range=(pd.Timestamp("2020-01-01"), pd.Timestamp("2021-01-01"))`` gives the
            twelve months of 2020.
        {epsilon}
        right : bool, optional
            With edges, bins are ``(a, b]`` like :func:`pandas.cut` (the default); ``False``
            makes them ``[a, b)``. Bins of a ``freq`` are always ``[a, b)``.
        include_lowest : bool, default False
            With ``right=True``, also count values equal to the first edge in the first bin.
        clip : bool, default False
            Count values outside the edges in the first or last bin instead of dropping them.
        {nonnegative}
        {total}
        {mechanism}
        {delta}
        {ci_table}

        Returns
        -------
        Series or DataFrame
            Indexed by an IntervalIndex of the bins (of Timestamps for a datetime column,
            like ``pd.cut``), or with ``freq`` by the bins' labels as
            ``df.set_index(col).resample(freq).size()`` gives them; named ``"count"``.

        Notes
        -----
        Missing values are dropped; out-of-range values are dropped unless ``clip``.
        Sensitivity 1 for the vector of counts; discrete Laplace noise of scale ``1/ε`` per
        bin; cost ``ε``. Datetimes are compared with the edges as nanoseconds since 1970
        in float64 (exact to 256 ns until 2043).

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> ages = pd.Series([10, 20, 40, 70] * 250, name="age").dp.protect(epsilon=1.0)
        >>> hist = ages.dp.histogram(bins=[0, 18, 65, 120], epsilon=1.0)
        >>> [str(i) for i in hist.index]
        ['(0.0, 18.0]', '(18.0, 65.0]', '(65.0, 120.0]']
        """
        return self._execute(plan_histogram(
            self._obj, bins, range=range, freq=freq, right=right,
            include_lowest=include_lowest, clip=clip, ci=ci, **options,
        ))  # fmt: skip

    @overload
    def sum(self, *, ci: None = None, **options: Unpack[ValueArgs]) -> NumberT: ...
    @overload
    def sum(self, *, ci: float, **options: Unpack[ValueArgs]) -> EstimateT: ...
    def sum(self, *, ci: float | None = None, **options: Unpack[ValueArgs]) -> object:
        """Release the noisy sum of the values clipped to public bounds.

        Same as ``DataFrame.dp.sum`` on this column; see its Notes for clipping, lattice,
        sensitivity ``max(|lower|, |upper|)``, discrete Laplace noise and cost ``epsilon``.

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> priv = pd.DataFrame({"x": [2.0] * 500}).dp.protect(epsilon=1.0)
        >>> abs(priv["x"].dp.sum(bounds=(0, 2), epsilon=1.0) - 1000) < 100
        True
        """
        return self._scalar("sum", None, ReleaseOptions(ci=ci, **options))

    @overload
    def mean(self, *, ci: None = None, **options: Unpack[RatioArgs]) -> NumberT: ...
    @overload
    def mean(self, *, ci: float, **options: Unpack[RatioArgs]) -> EstimateT: ...
    def mean(self, *, ci: float | None = None, **options: Unpack[RatioArgs]) -> object:
        """Release the noisy mean of the values clipped to public bounds.

        Same as ``DataFrame.dp.mean`` on this column: noisy centred sum over noisy count,
        ε split in half, result clipped to the bounds; cost ``epsilon``.

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> priv = pd.DataFrame({"x": [2.0] * 500}).dp.protect(epsilon=1.0)
        >>> 0 <= priv["x"].dp.mean(bounds=(0, 10), epsilon=1.0) <= 10
        True
        """
        return self._scalar("mean", None, ReleaseOptions(ci=ci, **options))


class SeriesDPAccessor(SeriesReleases[float, Estimate]):
    """Differentially private releases from a protected Series (``s.dp``), pandas or Dask."""

    @passes_on("privacy_unit", "max_rows_per_unit", "schema", "validate")
    def protect(
        self, epsilon: Real | None = None, delta: Real = 0, **options: Unpack[ProtectArgs]
    ) -> pd.Series:
        """Return a protected copy of the Series; see ``DataFrame.dp.protect``."""
        return protect(self._obj, epsilon, delta, **options)

    @property
    def preview(self) -> SeriesPreview:
        """Preview releases without spending; see ``DataFrame.dp.preview``."""
        return SeriesPreview(self._obj)


class SeriesPreview(PreviewMixin, SeriesReleases[Preview, Preview]):
    """``.dp.preview``: every release method of ``.dp``, returning a preview instead."""
