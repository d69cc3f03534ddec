"""``DataFrame.dp.merge`` and ``DataFrame.dp.resample``: public lookups and time bins.

Both give a frame or group-by to release from (shared by ``.dp.preview``): a join with a
public table that keeps every sensitivity, and a group-by over the periods of a frequency.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Literal

import pandas as pd

from pandas_dp.api.accessors.base import BaseDPAccessor
from pandas_dp.api.queries.merge import merge
from pandas_dp.api.queries.resample import DPResampler, resample
from pandas_dp.api.release import resolve
from pandas_dp.api.release.arguments import EstimateT, NumberT


class FrameJoinsAndTime(BaseDPAccessor[NumberT, EstimateT]):
    """Joins with public tables, and time bins."""

    _obj: pd.DataFrame

    def merge(
        self,
        public: pd.DataFrame,
        on: Hashable | list[Hashable],
        *,
        how: Literal["inner", "left"] = "inner",
        validate: str | None = None,
        suffixes: tuple[str, str] = ("_x", "_y"),
    ) -> pd.DataFrame:
        """Join a public lookup table, like ``df.merge(public, on=..., how=...)``.

        Parameters
        ----------
        public : DataFrame
            A public table (not protected): region names, a price list, a calendar. Its
            keys must be unique (a many-to-one join, checked on it alone), except under a
            privacy unit, whose caps bound each unit's rows whatever the join made of them.
        on : label or list of labels
            The key column(s), in both frames.
        how : {"inner", "left"}, default "inner"
            As pandas. ``"right"`` and ``"outer"`` are refused: they would add a row for
            each public key without a match, and whether a key has one is private.
        validate : {"many_to_one", "m:1", "many_to_many", "m:m"}, optional
            As pandas, on the public side only; checks on the protected side would read
            the data and are refused.
        suffixes : (str, str), default ("_x", "_y")
            For columns both frames hold, as pandas.

        Returns
        -------
        DataFrame
            Protected by the same session, shaped as pandas' merge (the protected columns,
            then the public ones, the protected rows' order), except that each row keeps
            its index label where pandas numbers the result afresh: the labels are how
            pandas-dp tells that no row was repeated. With ``how="left"`` the public
            columns always have the dtypes pandas gives them when some row has no match
            (``int64`` becomes ``float64``, ``bool`` ``object``): whether one has is
            private, so the dtypes come from the public table alone.

        Notes
        -----
        Stable: each protected row becomes at most one row (exactly one with ``"left"``),
        so every later release keeps its sensitivity and cost; the join itself reads
        nothing to release and costs nothing. Under a privacy unit a repeated public key
        makes a row several rows; every release caps each unit's rows by its id, so the
        sensitivities stay those of the caps (extra rows are dropped at random). Keys
        match by the canonical forms of group keys (``1``, ``1.0`` and ``True`` are one
        key); unlike pandas, a missing key matches nothing. Pandas frames only.

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> priv = pd.DataFrame({"code": [1, 2, 2, 3]}).dp.protect(epsilon=1.0)
        >>> regions = pd.DataFrame({"code": [1, 2, 3], "region": ["N", "S", "S"]})
        >>> joined = priv.dp.merge(regions, on="code")
        >>> list(joined.columns), joined.dp.session is priv.dp.session
        (['code', 'region'], True)
        """
        return merge(self._obj, public, on, how, validate, suffixes)

    def resample(
        self,
        freq: str,
        *,
        on: Hashable | None = None,
        range: tuple[object, object] | None = None,
        max_groups_per_unit: int | None = None,
        max_rows_per_group: int | None = None,
    ) -> DPResampler:
        """Group by the periods of a frequency over a public range, like ``df.resample``.

        Parameters
        ----------
        freq : str
            A pandas frequency (``"D"``, ``"W"``, ``"MS"``, ``"QS"``, ``"h"`` ...).
        on : label
            The datetime (or timedelta) column to bin. Unlike pandas there is no default:
            a frame's index is not read by a release (``reset_index()`` makes it a column).
        range : (start, end)
            The public span, as Timestamps (Timedeltas) or text pandas reads as one
            (``("2024-01-01", "2025-01-01")``): bins of ``freq`` from ``start``
            up to ``end`` (excluded), cut and labelled as ``resample`` cuts them. pandas
            spans the data's first to last value instead, which is private.
        max_groups_per_unit, max_rows_per_group : int, optional
            Under a privacy unit, as for :meth:`groupby`.

        Returns
        -------
        DPResampler
            A group-by over the bins: ``size``, ``count``, ``sum``, ``mean``, ``agg``,
            column selection and ``ci=`` as for :meth:`groupby`; results are indexed by the
            bins' labels (a ``DatetimeIndex`` with its ``freq``, named ``on``), every bin
            present, empty ones included.

        Notes
        -----
        Each row falls in at most one bin (rows outside the range in none): one release
        charges its ε once whatever the number of bins (parallel composition), with the
        sensitivities of a group-by over public keys.

        Examples
        --------
        >>> import numpy as np, pandas as pd, pandas_dp
        >>> t = pd.Timestamp("2024-01-01") + pd.to_timedelta(np.arange(366), unit="D")
        >>> priv = pd.DataFrame({"t": t, "x": 1.0}).dp.protect(epsilon=1.0)
        >>> months = priv.dp.resample(
        ...     "MS", on="t", range=(pd.Timestamp("2024-01-01"), pd.Timestamp("2025-01-01"))
        ... ).size(epsilon=0.5)
        >>> len(months), months.index.freqstr, months.index.name
        (12, 'MS', 't')
        """
        return resample(
            resolve(self._obj), freq, on, range, self._execute,
            max_groups_per_unit=max_groups_per_unit, max_rows_per_group=max_rows_per_group,
        )  # fmt: skip
