"""The public session object: one budget, its ledger, and where its noise comes from."""

from __future__ import annotations

import contextlib
import dataclasses
import html
import uuid
import warnings
from collections.abc import Hashable, Iterator
from contextvars import ContextVar
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from pandas_dp.accounting.accountant import Accountant
from pandas_dp.accounting.composition import composition_for
from pandas_dp.accounting.events import LedgerEntry, Release
from pandas_dp.accounting.ledger_file import LedgerFile
from pandas_dp.api.attach import SessionHandle
from pandas_dp.api.noise import NoiseSource
from pandas_dp.api.outputs import output_to_json
from pandas_dp.api.rowguard import RowGuard
from pandas_dp.api.unit_ids import UnitIds
from pandas_dp.budget import AnyBudget
from pandas_dp.engines.bounding import PartitionPriorities, SeededPriorities, SystemPriorities
from pandas_dp.errors import DPTypeError, PrivacyLeakWarning
from pandas_dp.mechanisms.exponential import ExponentialMechanism
from pandas_dp.mechanisms.gaussian import DiscreteGaussian
from pandas_dp.mechanisms.laplace import DiscreteLaplace
from pandas_dp.mechanisms.random import I64, RandomSource, SeededRandomSource, SystemRandomSource
from pandas_dp.schema import SchemaRules
from pandas_dp.units import PrivacyUnit

LEDGER_COLUMNS = [
    "sequence", "time", "query", "columns", "epsilon", "delta", "rho", "composition", "groups",
    "mechanism", "noise", "bounds", "note", "tag", "by", "randomness",
]  # fmt: skip


#: The tag the releases made in this context carry (see :func:`tagged`).
RELEASE_TAG: ContextVar[str] = ContextVar("pandas_dp_release_tag", default="")


@contextlib.contextmanager
def tagged(tag: str) -> Iterator[None]:
    """Tag every release charged inside the block (a release spec's query id)."""
    token = RELEASE_TAG.set(tag)
    try:
        yield
    finally:
        RELEASE_TAG.reset(token)


def random_source(rng: Any) -> RandomSource:
    """The OS CSPRNG, or (for tests only, with a warning) a seeded generator."""
    if rng is None:
        return SystemRandomSource()
    if isinstance(rng, bool) or not isinstance(rng, int | np.integer):
        raise DPTypeError(f"rng must be None or an int seed, got {type(rng).__name__}")
    warnings.warn(
        "a seeded rng makes the noise predictable and voids the privacy guarantee; use it "
        "for reproducible tests only, never for a real release",
        PrivacyLeakWarning,
        stacklevel=4,
    )
    return SeededRandomSource(int(rng))


class Session:
    """The privacy budget shared by a protected frame and every frame derived from it.

    Obtain it with ``priv.dp.session``; it is created by ``df.dp.protect(...)``.

    Attributes
    ----------
    id : str
        Random identifier (not derived from the data).
    total, spent, remaining : Budget
        Exact budgets with ``.epsilon`` and ``.delta`` as :class:`fractions.Fraction`.
    """

    def __init__(
        self,
        total: AnyBudget,
        *,
        source: RandomSource,
        guard: RowGuard | None,
        unit: PrivacyUnit | None = None,
        accounting: str = "basic",
        schema: SchemaRules | None = None,
        ledger: LedgerFile | None = None,
        entries: tuple[LedgerEntry, ...] = (),
        unit_ids: UnitIds | None = None,
        columns: tuple[Hashable, ...] = (),
    ) -> None:
        self.id = uuid.uuid4().hex
        self.accountant = Accountant(
            total, composition_for(total, accounting), store=ledger, entries=entries
        )
        self.guard = guard
        self.unit = unit or PrivacyUnit()
        self.unit_ids = unit_ids  # the ids present at protect (in-memory frames under a unit)
        #: The expression name of a Dask ``protect`` layer, where lineage checks stop.
        self.origin = ""
        self.schema = schema
        #: The protected frame's column labels (public structure: for "did you mean").
        self.columns = columns
        self._source = source
        self._noise = NoiseSource.from_random(source)
        self.handle = SessionHandle(self)

    @property
    def noise_source(self) -> NoiseSource:
        """Where this session's noise comes from now (its ``kind`` goes in the ledger)."""
        return self._noise

    @contextlib.contextmanager
    def using_noise(self, source: NoiseSource) -> Iterator[NoiseSource]:
        """Draw from ``source`` inside the block (tests only: it replaces the private noise).

        Releases charged meanwhile record ``source.kind``; the previous source is restored
        on exit.
        """
        previous, self._noise = self._noise, source
        try:
            yield source
        finally:
            self._noise = previous

    @property
    def accounting(self) -> str:
        """The composition rule: ``basic``, ``advanced``, ``zcdp`` or ``pld``."""
        return self.accountant.composition.name

    def charge(self, release: Release, result: Any = None) -> None:
        """Charge ``release``; a ledger file also records ``result``, the released values.

        Inside :func:`tagged` the release carries that tag.
        """
        tag = RELEASE_TAG.get()
        release = dataclasses.replace(release, tag=tag or release.tag, randomness=self._noise.kind)
        output = output_to_json(result) if self.accountant.keeps_outputs else None
        self.accountant.charge(release, output)

    def draw(self, mechanism: DiscreteLaplace | DiscreteGaussian, n: int) -> I64:
        """Draw ``n`` noise variates for ``mechanism`` from this session's noise source."""
        return self._noise.draw(mechanism, n)

    def choose(
        self, mechanism: ExponentialMechanism, scores: npt.NDArray[np.int64], denominator: int
    ) -> I64:
        """One candidate per row of ``scores`` by the exponential mechanism."""
        return self._noise.choose(mechanism, scores, denominator)

    def priorities(self, n: int) -> npt.NDArray[np.uint64]:
        """``n`` uniform 64-bit words, for choosing at random which rows a unit keeps."""
        return self._source.randbytes(8 * n).view(np.uint64)

    def spawn_priorities(self) -> PartitionPriorities:
        """A picklable priority source for engines that bound rows in other processes.

        The OS CSPRNG of whichever process draws (nothing is decided here). A seeded
        session (tests only) instead draws 128 bits from its own stream, from which each
        partition seeds a PCG64 stream of its own, so seeded releases stay reproducible.
        """
        if isinstance(self._source, SeededRandomSource):
            words = self._source.randbytes(16).view(np.uint64)
            return SeededPriorities(tuple(int(word) for word in words))
        return SystemPriorities()

    @property
    def total(self) -> AnyBudget:
        """The budget the data owner granted."""
        return self.accountant.total

    @property
    def spent(self) -> AnyBudget:
        """What the releases so far have spent."""
        return self.accountant.spent

    @property
    def remaining(self) -> AnyBudget:
        """What is left to spend."""
        return self.accountant.remaining

    @property
    def releases(self) -> tuple[Release, ...]:
        """The charged releases, oldest first, as immutable records."""
        return tuple(entry.release for entry in self.accountant.entries)

    @property
    def ledger(self) -> pd.DataFrame:
        """One row per release: what was released, how, and what it cost."""
        rows = [_ledger_row(entry) for entry in self.accountant.entries]
        return pd.DataFrame(rows, columns=LEDGER_COLUMNS)

    def __repr__(self) -> str:
        return (
            f"<pandas-dp Session {self.id[:8]}: total {self.total}, spent {self.spent}, "
            f"{len(self.accountant.entries)} releases>"
        )

    def _repr_html_(self) -> str:
        """In a notebook: the budget (total, spent, remaining) over the ledger's main columns."""
        budget = html.escape(
            f"pandas-dp session {self.id[:8]}: total {self.total}, spent {self.spent}, "
            f"remaining {self.remaining}"
        )
        cost = ["rho"] if self.total.is_zcdp else ["epsilon", "delta"]  # the budget's own unit
        shown = ["sequence", "query", "columns", *cost, "groups", "note"]
        table = self.ledger[shown].to_html(index=False) if self.accountant.entries else ""
        return f"<p><strong>{budget}</strong></p>{table}"


def _ledger_row(entry: LedgerEntry) -> dict[str, Any]:
    release = entry.release
    cost = release.cost
    return {
        "sequence": entry.sequence,
        "time": entry.time,
        "query": release.query,
        "columns": ", ".join(release.columns),
        "epsilon": float(cost.epsilon),
        "delta": float(cost.delta),
        "rho": float(sum((m.rho for m in release.measurements), Fraction(0))),  # exact zCDP
        "composition": release.composition,
        "groups": release.groups,
        "mechanism": ", ".join(sorted({m.mechanism for m in release.measurements})),
        "noise": "; ".join(m.describe() for m in release.measurements),
        "bounds": "; ".join(f"{c}: [{lo:.6g}, {hi:.6g}]" for c, lo, hi in release.bounds),
        "note": release.note,
        "tag": release.tag,
        "by": entry.by,
        "randomness": release.randomness,
    }
