"""Immutable records of what was released and what it cost.

A :class:`Measurement` is one application of a noise mechanism; a :class:`Release` is one
user call (a count, a mean, a group-by table) made of one or more measurements and charged as
a unit. The accountant stores :class:`LedgerEntry` objects, which add a sequence number and a
timestamp. None of them holds anything computed from the private data: only public parameters
(bounds, ε, δ, sensitivities, noise scales) and public names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from fractions import Fraction
from functools import cached_property
from typing import Any, ClassVar

from pandas_dp.budget import Budget

#: Composition of the measurements *inside* one release.
SEQUENTIAL = "sequential"
#: One release over disjoint groups: each row affects one group, so ε is charged once.
PARALLEL = "parallel"
#: Where a release's noise came from: the OS CSPRNG, a test seed, a test recorder.
RANDOMNESS = ("os", "seeded", "captured")


def _negative(x: Fraction) -> bool:
    """``x < 0``; a Fraction's sign is its numerator's (cheaper than comparing with 0)."""
    return x.numerator < 0 if type(x) is Fraction else bool(x < 0)


def _positive(x: Fraction) -> bool:
    """``x > 0``, read off a Fraction's numerator as :func:`_negative` does."""
    return x.numerator > 0 if type(x) is Fraction else bool(x > 0)


def _probability(x: Fraction) -> bool:
    """``0 <= x < 1``; for a Fraction (positive denominator) by integer comparisons."""
    return 0 <= x.numerator < x.denominator if type(x) is Fraction else bool(0 <= x < 1)


@dataclass(frozen=True)
class Measurement:
    """One application of a noise mechanism.

    Attributes
    ----------
    label : str
        What was measured (``"count"``, ``"sum"``, ...).
    mechanism : str
        Noise distribution: ``"discrete_laplace"`` or ``"discrete_gaussian"``.
    epsilon, delta : Fraction
        Nominal privacy cost of this measurement on its own: exact for Laplace (δ = 0), the
        calibration target for Gaussian noise. Basic composition charges these.
    sensitivity : int
        Largest change one privacy unit can make, in noise units: L1 for Laplace; per
        coordinate for Gaussian noise (see :attr:`coordinates`).
    scale : Fraction
        Noise scale in noise units as sampled: ``b`` for Laplace, ``σ`` (rounded down) for
        Gaussian noise.
    exponent : int
        A noise unit is ``2**exponent`` in the column's units (0 for counts).
    coordinates : int
        How many outputs (groups) one unit can change by ``sensitivity`` each (Gaussian
        noise: L2 sensitivity ``sqrt(coordinates) * sensitivity``).
    sigma2 : Fraction, optional
        Exact ``σ²`` of Gaussian noise.
    extra_delta : Fraction
        δ spent beyond the noise itself (private key selection), under every accountant.
    """

    #: The ledger's tag for this event class (one class per mechanism; see below).
    kind: ClassVar[str] = "measurement"
    #: The mechanism names this class records (empty: any, for a generic ε-DP event).
    mechanisms: ClassVar[frozenset[str]] = frozenset()
    #: Whether the noise is discrete Gaussian: no pure ε, priced by its ρ (or its δ).
    is_gaussian: ClassVar[bool] = False

    label: str
    mechanism: str
    epsilon: Fraction
    sensitivity: int
    scale: Fraction
    exponent: int = 0
    delta: Fraction = Fraction(0)
    coordinates: int = 1
    sigma2: Fraction | None = None
    extra_delta: Fraction = Fraction(0)

    def __post_init__(self) -> None:
        if (
            _negative(self.epsilon)
            or not _probability(self.delta)
            or not _probability(self.extra_delta)
        ):
            raise ValueError(f"invalid cost ε={self.epsilon}, δ={self.delta}")
        if self.sensitivity < 0 or not _positive(self.scale) or self.coordinates < 1:
            raise ValueError(f"invalid noise: sensitivity={self.sensitivity}, scale={self.scale}")
        if self.mechanisms and self.mechanism not in self.mechanisms:
            raise ValueError(f"a {type(self).__name__} records {sorted(self.mechanisms)}, "
                             f"not {self.mechanism!r}")  # fmt: skip
        if (self.sigma2 is None) == self.is_gaussian:
            raise ValueError("Gaussian noise, and only it, records its exact sigma2")

    @property
    def cost(self) -> Budget:
        """The (ε, δ) this measurement spends under basic composition."""
        return Budget(self.epsilon, self.delta + self.extra_delta)

    @property
    def pure_epsilon(self) -> Fraction | None:
        """Exact ε of a pure ε-DP measurement, or None when it has none (Gaussian noise).

        A generic event: its calibrated ε.
        """
        return self.epsilon

    @property
    def rho(self) -> Fraction:
        """Exact zCDP ρ: ``ε²/2`` for pure ε-DP (Bun & Steinke 2016, Prop. 1.4)."""
        pure = self.pure_epsilon
        assert pure is not None, "an event without a pure ε prices its own ρ"
        return pure * pure / 2

    def _cost_text(self) -> str:
        cost = f"ε={float(self.epsilon):.6g}"
        return cost + (f", δ={float(self.delta):.3g}" if self.delta else "")

    def describe(self) -> str:
        """One line a person can read (a choice's weights are ``exp(-score / scale)``)."""
        return f"{self.label}: {self.mechanism}(scale={float(self.scale):.6g}, {self._cost_text()})"

    def _describe_noise(self, spread: str) -> str:
        """Additive noise, in the column's units."""
        step = math.ldexp(1.0, self.exponent)
        return (
            f"{self.label}: {self.mechanism}(sensitivity={self.sensitivity * step:.6g}, "
            f"{spread}={float(self.scale) * step:.6g}, {self._cost_text()})"
        )


@dataclass(frozen=True)
class LaplaceMeasurement(Measurement):
    """Discrete Laplace noise: pure ε-DP with ``ε = sensitivity / scale``."""

    kind: ClassVar[str] = "laplace"
    mechanisms: ClassVar[frozenset[str]] = frozenset({"discrete_laplace"})

    @property
    def pure_epsilon(self) -> Fraction:
        """``Δ/b``."""
        return Fraction(self.sensitivity) / self.scale

    def describe(self) -> str:
        """One line a person can read, in the column's units."""
        return self._describe_noise("scale")


@dataclass(frozen=True)
class KNormMeasurement(Measurement):
    """The discrete ℓ∞ K-norm mechanism: pure ε-DP with ``ε = sensitivity / scale``.

    ``sensitivity`` bounds what one unit moves *each* of the ``coordinates`` (ℓ∞), which the
    vector's noise, ``P(b) ∝ exp(-‖b‖∞ / scale)``, covers as a whole.
    """

    kind: ClassVar[str] = "linf_knorm"
    mechanisms: ClassVar[frozenset[str]] = frozenset({"discrete_linf_knorm"})

    @property
    def pure_epsilon(self) -> Fraction:
        """``Δ∞/b``."""
        return Fraction(self.sensitivity) / self.scale

    def describe(self) -> str:
        """One line a person can read, in the column's units."""
        return self._describe_noise("scale")


@dataclass(frozen=True)
class GaussianMeasurement(Measurement):
    """Discrete Gaussian noise: ``coordinates · sensitivity² / (2σ²)``-zCDP."""

    kind: ClassVar[str] = "gaussian"
    mechanisms: ClassVar[frozenset[str]] = frozenset({"discrete_gaussian"})
    is_gaussian: ClassVar[bool] = True

    @property
    def pure_epsilon(self) -> None:
        """None: Gaussian noise is not pure ε-DP."""
        return None

    @property
    def rho(self) -> Fraction:
        """``coordinates Δ² / (2σ²)`` (Canonne, Kamath & Steinke 2020)."""
        assert self.sigma2 is not None
        return Fraction(self.coordinates * self.sensitivity**2) / (2 * self.sigma2)

    def _cost_text(self) -> str:
        # Priced in zCDP (no δ), or for the δ it was calibrated to.
        return super()._cost_text() if self.delta else f"ρ={float(self.rho):.6g}"

    def describe(self) -> str:
        """One line a person can read, in the column's units."""
        return self._describe_noise("sigma")


@dataclass(frozen=True)
class SelectionMeasurement(Measurement):
    """A choice among public candidates, pure ε-DP.

    By the exponential mechanism (quantile, mode, top-k) or permute-and-flip (a quantile in a
    pure-ε release; the same weights as acceptance coins), by the sparse vector technique (the
    end of a quantile's interval), or by the optimal partition-selection rule (which keys to
    release; (ε, δ)-DP, its δ in ``extra_delta``).
    """

    kind: ClassVar[str] = "selection"
    mechanisms: ClassVar[frozenset[str]] = frozenset(
        {"exponential", "permute_and_flip", "sparse_vector", "optimal_selection"}
    )


@dataclass(frozen=True)
class BoundedRangeMeasurement(SelectionMeasurement):
    """Choices by the exponential mechanism in a release planned in zCDP (bounded range).

    ``coordinates`` choices, each by the exponential mechanism with weights
    ``exp(-score / scale)`` over scores of sensitivity ``sensitivity`` (both in units of
    ``2**exponent``): each is ``ε_c``-bounded-range with ``ε_c = 2 · sensitivity / scale``
    (Durfee & Rogers 2019), hence ``ε_c²/8``-zCDP (Cesar & Rogers 2021, Lemma 3.2), so
    :attr:`rho` is ``coordinates · ε_c² / 8``. As for Gaussian noise, ``epsilon`` and
    ``delta`` are its share of its release's (ε, δ), which the release's ρ converts to; it
    is not a pure ε on its own (:attr:`pure_epsilon` is None, :attr:`choice_epsilon` is).
    """

    kind: ClassVar[str] = "bounded_range"
    mechanisms: ClassVar[frozenset[str]] = frozenset({"exponential"})

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.sensitivity < 1:
            raise ValueError(f"a bounded-range choice needs a sensitivity, not {self.sensitivity}")

    @property
    def choice_epsilon(self) -> Fraction:
        """``ε_c`` of each choice (its exact pure ε, and its bounded-range parameter)."""
        return 2 * Fraction(self.sensitivity) / self.scale

    @property
    def pure_epsilon(self) -> None:
        """None: priced in zCDP with its release, like Gaussian noise."""
        return None

    @property
    def rho(self) -> Fraction:
        """``coordinates · ε_c² / 8`` (exact)."""
        return self.coordinates * self.choice_epsilon**2 / 8


#: The event class of each mechanism, by the ``kind`` tag a ledger file records.
MEASUREMENT_KINDS: dict[str, type[Measurement]] = {
    cls.kind: cls
    for cls in (
        LaplaceMeasurement, GaussianMeasurement, SelectionMeasurement, BoundedRangeMeasurement,
        KNormMeasurement,
    )
}  # fmt: skip


@dataclass(frozen=True)
class Release:
    """One user call, charged as a unit.

    Attributes
    ----------
    query : str
        The public name of the call (``"count"``, ``"sum"``, ``"groupby.agg"`` ...).
    columns : tuple of str
        The columns it read.
    measurements : tuple of Measurement
        The noise it added; costs add up (sequential composition inside the release).
    composition : str
        ``"sequential"``, or ``"parallel"`` when the measurements were applied to each of
        :attr:`groups` disjoint groups and charged once.
    groups : int
        Number of disjoint groups released (1 for an ungrouped statistic).
    bounds : tuple of (str, float, float)
        Clipping bounds per column, with where they came from in :attr:`note`.
    note : str
        Free-text detail (how ε was split, where bounds came from).
    tag : str
        Public identifier given by the caller (a release spec's ``<spec id>/<query name>``),
        so a re-run can recognise what was already released.
    randomness : str
        Where the noise came from: ``"os"`` (the OS CSPRNG, the only private choice),
        ``"seeded"`` (a test seed) or ``"captured"`` (a test's recorder).
    asked : str
        The budget the call asked for, as typed (``"epsilon=0.2"``, ``"rho=0.01"``): in a
        ρ session it is not what was charged (the ledger's ``rho`` is), so it is kept apart.
    """

    query: str
    columns: tuple[str, ...]
    measurements: tuple[Measurement, ...]
    composition: str = SEQUENTIAL
    groups: int = 1
    bounds: tuple[tuple[str, float, float], ...] = ()
    note: str = ""
    tag: str = ""
    randomness: str = "os"
    asked: str = ""

    def __post_init__(self) -> None:
        if self.randomness not in RANDOMNESS:
            raise ValueError(f"unknown randomness {self.randomness!r}; one of {RANDOMNESS}")
        if not self.measurements:
            raise ValueError("a release needs at least one measurement")
        if self.composition not in (SEQUENTIAL, PARALLEL):
            raise ValueError(f"unknown composition {self.composition!r}")
        if self.groups < 0:
            raise ValueError(f"groups must be >= 0, got {self.groups}")

    @property
    def shares(self) -> tuple[tuple[str, Fraction], ...]:
        """Each measurement's label and share of the release's ε, in order (they sum to 1).

        The ledger note's "ε split" line is written from the same structure.
        """
        total = sum((m.epsilon for m in self.measurements), Fraction(0))
        return tuple(
            (m.label, m.epsilon / total if total else Fraction(0)) for m in self.measurements
        )

    def with_origin(self, tag: str, randomness: str) -> Release:
        """The same release with its tag and randomness (a cost already computed is kept)."""
        release = replace(self, tag=tag, randomness=randomness)
        if "cost" in self.__dict__:  # the measurements, hence the cost, are unchanged
            release.__dict__["cost"] = self.__dict__["cost"]
        return release

    @property
    def rho(self) -> Fraction:
        """Exact zCDP ρ of the release: the sum of its measurements' (what a ρ session charges)."""
        return sum((m.rho for m in self.measurements), Fraction(0))

    @cached_property
    def cost(self) -> Budget:
        """Total (ε, δ) of the release under basic composition of its measurements.

        Computed once: the release is frozen, and the accountant reads it at the check and
        again at the charge.
        """
        epsilon, delta = Fraction(0), Fraction(0)
        for m in self.measurements:
            own = m.delta + m.extra_delta
            if own >= 1:  # refused as the measurement's own cost would be
                return m.cost
            epsilon, delta = epsilon + m.epsilon, delta + own
            if delta >= 1:  # refused with the first partial sum that reaches 1
                break
        return Budget(epsilon, delta)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


@dataclass(frozen=True)
class LedgerEntry:
    """A release as recorded by the accountant.

    Attributes
    ----------
    sequence : int
        1, 2, ... in the order charged (across processes sharing a ledger file).
    release : Release
        What was released and how.
    time : str
        When it was charged (UTC, ISO 8601).
    by : str
        Who charged it: ``user@host`` and the process id (a ledger file records it).
    output : object
        The released values in plain JSON, when a ledger file keeps them (they are public:
        that is what was released); None otherwise.
    """

    sequence: int
    release: Release
    time: str = field(default_factory=_now)
    by: str = ""
    output: Any = None
