"""Where a session's noise comes from: the OS CSPRNG, a test seed, or a test's recorder.

A :class:`NoiseSource` draws noise variates and exponential-mechanism choices for a
session. Production sessions draw from the operating system's CSPRNG; ``protect(rng=...)``
(tests only, with a warning) from a seeded generator; and
:func:`pandas_dp.testing.capture_noise` swaps in a recorder through
:meth:`~pandas_dp.api.session.Session.using_noise`, the public seam for tests. Every
release records which kind of source it used, so the ledger tells test releases apart.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from pandas_dp.mechanisms.exponential import ExponentialMechanism
from pandas_dp.mechanisms.gaussian import DiscreteGaussian
from pandas_dp.mechanisms.laplace import DiscreteLaplace
from pandas_dp.mechanisms.random import I64, RandomSource, SeededRandomSource

#: ``os`` (the OS CSPRNG: private), ``seeded`` (a test seed), ``captured`` (a test recorder).
Randomness = Literal["os", "seeded", "captured"]

Sampler = Callable[[DiscreteLaplace | DiscreteGaussian, int], I64]
Chooser = Callable[[ExponentialMechanism, npt.NDArray[np.int64], int], I64]


@dataclass(frozen=True)
class NoiseSource:
    """Draws noise (``draw``) and exponential-mechanism choices (``choose``).

    Attributes
    ----------
    kind : {"os", "seeded", "captured"}
        Recorded with every release charged while this source is in use.
    draw : callable
        ``draw(mechanism, n)``: ``n`` noise variates, in the mechanism's lattice units.
    choose : callable
        ``choose(mechanism, scores, denominator)``: one candidate index per row of scores.
    """

    kind: Randomness
    draw: Sampler
    choose: Chooser

    @classmethod
    def from_random(cls, source: RandomSource) -> NoiseSource:
        """Exact samplers reading ``source`` (seeded sources are marked as such)."""
        kind: Randomness = "seeded" if isinstance(source, SeededRandomSource) else "os"

        def draw(mechanism: DiscreteLaplace | DiscreteGaussian, n: int) -> I64:
            return mechanism.sample(n, source)

        def choose(
            mechanism: ExponentialMechanism, scores: npt.NDArray[np.int64], denominator: int
        ) -> I64:
            return mechanism.choose(scores, denominator, source)

        return cls(kind, draw, choose)
