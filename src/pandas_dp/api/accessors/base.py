"""The part of the ``.dp`` accessors that DataFrame and Series share.

Accessors are stateless: pandas 3 builds a new one on every access, so the base keeps only
the wrapped object and the consumer of its planned releases, and forwards every call to a
plain function.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, Generic, Self, TypeVar, Unpack, overload

from pandas_dp.api.attach import session_of
from pandas_dp.api.docstrings import shared_doc
from pandas_dp.api.queries.epsilon_for import epsilon_for
from pandas_dp.api.queries.ungrouped import plan_one, plan_spread
from pandas_dp.api.release import PlannedRelease, ReleaseOptions
from pandas_dp.api.release.arguments import EstimateT, NoiseArgs, NumberT, PlanningArgs
from pandas_dp.api.release.consumers import RUN, Consumer, checked_keywords
from pandas_dp.api.session import Session

T = TypeVar("T")

#: ``.dp`` members a preview lacks: a preview protects nothing and previews no previews.
RELEASE_ONLY = frozenset({"protect", "preview"})


def release_only(preview: object, name: str) -> AttributeError:
    """What a preview says when asked for a member only ``.dp`` itself has."""
    return AttributeError(
        f"{type(preview).__name__!r} object has no attribute {name!r}: a preview describes "
        f"releases; call {name} on .dp itself"
    )


class BaseDPAccessor(Generic[NumberT, EstimateT]):
    """What ``df.dp`` and ``s.dp`` share: the session, counts, previews and planning.

    Generic in what scalar releases return: ``NumberT`` without ``ci`` and ``EstimateT``
    with it (a float and an :class:`~pandas_dp.Estimate` on ``.dp``; a
    :class:`~pandas_dp.api.release.Preview` for both on ``.dp.preview``).
    """

    #: What the release methods hand their planned releases to: ``.dp`` runs them, and
    #: ``.dp.preview`` (whose class sets a :class:`~pandas_dp.api.release.consumers.Describe`)
    #: describes them.
    _consumer: Consumer = RUN

    def __init__(self, obj: Any) -> None:
        self._obj = obj

    def _consuming(self, consumer: Consumer) -> Self:
        """The same accessor, handing its planned releases to ``consumer``."""
        accessor = type(self)(self._obj)
        accessor._consumer = consumer
        return accessor

    def _consume(self, planned: PlannedRelease[T]) -> T:
        """Hand a planned release to the consumer: released on ``.dp``, described on a preview."""
        return self._consumer(planned)

    @property
    def session(self) -> Session:
        """The session (budget and ledger) this object is protected by.

        Raises
        ------
        NotProtectedError
            If the object carries no live session.
        """
        return session_of(self._obj)

    @overload
    def count(self, *, ci: None = None, **options: Unpack[NoiseArgs]) -> NumberT: ...
    @overload
    def count(self, *, ci: float, **options: Unpack[NoiseArgs]) -> EstimateT: ...
    @checked_keywords
    @shared_doc
    def count(
        self, *, ci: float | None = None, **options: Unpack[NoiseArgs]
    ) -> NumberT | EstimateT:
        """Release a noisy count: rows of a DataFrame, non-missing values of a Series.

        Parameters
        ----------
        {epsilon}
        {delta}
        {mechanism}
        {ci}
        {weights}

        Returns
        -------
        int or Estimate
            True count plus exact integer noise; may be negative. With ``weights``, a float:
            the noisy sum of the clipped weights (pandas: ``df["w"].clip(lower, upper).sum()``).

        Notes
        -----
        Nothing is clipped. Sensitivity 1 (one row more or less changes the count by one).
        Mechanism: discrete Laplace with scale ``1/epsilon``. Budget cost: ``epsilon``.
        With ``weights``: sensitivity ``W``, the upper weight bound, on a public lattice as
        for sums.

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> priv = pd.DataFrame({"age": range(1000)}).dp.protect(epsilon=1.0)
        >>> n = priv.dp.count(epsilon=0.5)
        >>> isinstance(n, int), abs(n - 1000) < 100  # noise scale 2: |noise| < 100 w.p. 1 - 1e-21
        (True, True)
        """
        return self._scalar("count", None, ReleaseOptions(ci=ci, **options))

    def _scalar(
        self, how: str, column: Hashable | list[Hashable] | None, options: ReleaseOptions
    ) -> Any:  # NumberT or EstimateT (or a Series for a list), as the caller's overloads say
        """Release one scalar statistic ``how`` of ``column`` (the Series itself when None)."""
        return self._consume(plan_one(self._obj, how, column, options))

    def _spread(
        self, column: Hashable | list[Hashable] | None, how: str, ddof: int,
        options: ReleaseOptions,
    ) -> Any:  # fmt: skip
        """Release the variance or standard deviation (``how``) of ``column``."""
        return self._consume(plan_spread(self._obj, column, how, options, ddof=ddof))

    @checked_keywords
    @shared_doc
    def epsilon_for(
        self, statistic: str, *, error: float, **options: Unpack[PlanningArgs]
    ) -> float:
        """The smallest ε for which a release's error stays within ``error``.

        Parameters
        ----------
        statistic : {"count", "sum", "mean"}
            What would be released (ungrouped; a group-by costs the same per group).
        error : float
            Largest acceptable error, in the statistic's units.
        alpha : float, default 0.05
            The error may exceed ``error`` with probability at most ``alpha``.
        bounds : (float, float), optional
            Clipping bounds, for sums and means.
        expected_rows : float, optional
            A planning value for the number of rows, for means (their error depends on it);
            the same name as on previews and in release files (``n=`` is its old name).
        mean : float, optional
            A planning value for the mean, for means (the count's noise weighs more the
            further it lies from the midpoint of the bounds); by default the worst case.
        {mechanism}
        {delta}

        Returns
        -------
        float
            ε rounded up to three significant digits. Nothing is read or spent.

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> priv = pd.DataFrame({"x": [1.0] * 10}).dp.protect(epsilon=1.0)
        >>> priv.dp.epsilon_for("count", error=50, alpha=0.05)
        0.0594
        """
        return epsilon_for(self._obj, statistic, error=error, **options)
