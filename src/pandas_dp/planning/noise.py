"""Where a session's noise comes from: the OS CSPRNG, a test seed, or a test's recorder.

A :class:`NoiseSource` draws noise variates, exponential-mechanism choices and uniform
words for a session; the release runner hands it down to the parts it releases. Production
sessions draw from the operating system's CSPRNG; ``protect(rng=...)`` (tests only, with a
warning) from a seeded generator; and
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
from pandas_dp.mechanisms.gaussian.discrete import DiscreteGaussian
from pandas_dp.mechanisms.knorm import DiscreteLinfKNorm
from pandas_dp.mechanisms.laplace import DiscreteLaplace
from pandas_dp.mechanisms.random import (
    I64,
    RandomSource,
    SeededRandomSource,
    SystemRandomSource,
)

#: ``os`` (the OS CSPRNG: private), ``seeded`` (a test seed), ``captured`` (a test recorder).
Randomness = Literal["os", "seeded", "captured"]

U64 = npt.NDArray[np.uint64]
#: Any additive noise a part draws.
Additive = DiscreteLaplace | DiscreteGaussian | DiscreteLinfKNorm
Sampler = Callable[[Additive, int], I64]
Chooser = Callable[[ExponentialMechanism, npt.NDArray[np.int64], int], I64]
Words = Callable[[int], U64]


def os_words(n: int) -> U64:
    """``n`` uniform 64-bit words from the OS CSPRNG."""
    return SystemRandomSource().randbytes(8 * n).view(np.uint64)


@dataclass(frozen=True)
class NoiseSource:
    """Draws noise (``draw``), exponential-mechanism choices (``choose``) and words.

    The runner hands it to every calibrated part it releases (and to the finishing step,
    which samples synthetic rows from it); nothing below the runner reaches for a session.

    Attributes
    ----------
    kind : {"os", "seeded", "captured"}
        Recorded with every release charged while this source is in use.
    sampler : callable
        ``sampler(mechanism, n)``: ``n`` noise variates, in the mechanism's lattice units.
    chooser : callable
        ``chooser(mechanism, scores, denominator)``: one candidate index per row of scores.
    words_from : callable, default the OS CSPRNG
        ``words_from(n)``: ``n`` uniform 64-bit words (random choices that are not noise:
        which keys a selection keeps, the seed of synthetic rows).
    """

    kind: Randomness
    sampler: Sampler
    chooser: Chooser
    words_from: Words = os_words

    @classmethod
    def from_random(cls, source: RandomSource) -> NoiseSource:
        """Exact samplers reading ``source`` (seeded sources are marked as such)."""
        kind: Randomness = "seeded" if isinstance(source, SeededRandomSource) else "os"

        def draw(mechanism: Additive, n: int) -> I64:
            return mechanism.sample(n, source)

        def choose(
            mechanism: ExponentialMechanism, scores: npt.NDArray[np.int64], denominator: int
        ) -> I64:
            return mechanism.choose(scores, denominator, source)

        def words(n: int) -> U64:
            return source.randbytes(8 * n).view(np.uint64)

        return cls(kind, draw, choose, words)

    def draw(self, mechanism: Additive, n: int) -> I64:
        """``n`` noise variates for ``mechanism``, in its lattice units."""
        return self.sampler(mechanism, n)

    def choose(
        self, mechanism: ExponentialMechanism, scores: npt.NDArray[np.int64], denominator: int
    ) -> I64:
        """One candidate per row of ``scores`` by the exponential mechanism."""
        return self.chooser(mechanism, scores, denominator)

    def words(self, n: int) -> U64:
        """``n`` uniform 64-bit words."""
        return self.words_from(n)
