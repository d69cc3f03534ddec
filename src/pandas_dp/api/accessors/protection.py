"""``df.dp.protect``: the data owner's one call that puts a budget on a frame (a mixin)."""

from __future__ import annotations

from typing import Unpack

import pandas as pd

from pandas_dp.api.protect import protect
from pandas_dp.api.release.arguments import FrameProtectArgs, KeywordChecked, Real


class FrameProtection(KeywordChecked):
    """``DataFrame.dp.protect``."""

    _obj: pd.DataFrame

    def protect(
        self, epsilon: Real | None = None, delta: Real = 0, **options: Unpack[FrameProtectArgs]
    ) -> pd.DataFrame:
        """Return a protected copy of the frame with a privacy budget of ``(epsilon, delta)``.

        The caller's frame is not modified. The copy, and every frame derived from it by
        filtering, selecting, copying and similar operations, share one session: every
        release from any of them is charged to the same budget.

        Parameters
        ----------
        epsilon : float
            Total ε of the budget (at least 1e-9).
        delta : float, default 0
            Total δ, ``0 <= delta < 1``; 0 means pure ε-DP.
        rho : float, optional
            Instead of ε and δ: a ρ-zCDP budget (Bun & Steinke 2016).
        accounting : {"basic", "advanced", "zcdp", "pld"}, default "basic"
            How releases compose against an (ε, δ) budget: sums of ε and δ; advanced
            composition of the pure-ε releases; zCDP; or privacy-loss distributions (needs
            ``pandas-dp[pld]``). The tight accountants need ``delta > 0``.
        rng : int, optional
            Seed for reproducible *tests*. Voids the privacy guarantee and emits
            :class:`~pandas_dp.PrivacyLeakWarning`. By default noise comes from the OS CSPRNG.
        replace : bool, default False
            Allow protecting a frame that already carries a session, starting a new,
            independent budget. Only the data owner should do this.
        privacy_unit : label, optional
            A column identifying the person behind each row (user-level privacy). Every
            release then caps each person's rows at ``max_rows_per_unit`` (dropping extra
            rows at random) and scales its sensitivity accordingly.
        max_rows_per_unit : int, optional
            Required with ``privacy_unit``: the most rows one person may contribute.
        schema : pandera DataFrameModel, DataFrameSchema or YAML path, optional
            Public knowledge about the columns: bounds from ``in_range``/``ge``/``le``/``gt``/
            ``lt`` checks, keys from ``isin``, null rules from ``nullable``. Releases use them
            when no explicit argument is given (needs ``pandas-dp[pandera]``).
        validate : bool, default True
            With a schema: validate the data first, raising an error that names only the
            failing columns and checks (never a value). ``False`` skips validation; values
            are then clipped to the schema's bounds at release time.
        ledger : str or path, optional
            A ledger file that keeps the budget across processes and restarts. A new file
            is created with this budget; an existing one is resumed with what it says was
            spent (omit ``epsilon`` to adopt its budget; a different budget is refused). Every
            charge is on disk before its release is returned; processes sharing the file
            are serialised by a lock. Inspect it with ``pandas-dp ledger FILE``.

        Returns
        -------
        DataFrame

        Raises
        ------
        DPValueError
            For an out-of-range budget, a frame that is already protected, or an index with
            repeated labels.
        DPTypeError
            For a budget that is not a real number (bools and strings included).

        Notes
        -----
        By default one row is one privacy unit (add/remove-one-row neighbours) and the
        protect-time index is recorded so that frames whose rows were later duplicated are
        refused. With ``privacy_unit``, neighbours differ in all rows of one unit; since the
        library caps each unit's rows itself, duplicated rows are harmless and accepted.

        Only ``.dp`` is private. The copy is still a DataFrame: plain pandas on it
        (``priv["age"].mean()``, ``priv.head()``) returns exact values and charges nothing,
        as the threat model allows (whoever holds the frame holds the data). When analysts
        must see nothing but private releases, do not hand them the frame: have them write a
        release file (``pandas-dp plan`` / ``pandas-dp release``, the "Publishing a release"
        guide), which the data owner runs and whose author learns only its noisy tables.

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> priv = pd.DataFrame({"age": [30, 40, 50]}).dp.protect(epsilon=1.0)
        >>> priv.dp.session.total.epsilon
        Fraction(1, 1)
        """
        return protect(self._obj, epsilon, delta, **options)
