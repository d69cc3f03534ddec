"""Exact discrete Laplace and Gaussian sampler throughput next to numpy's float samplers.

numpy's Laplace and normal are the speed a user would otherwise get; they are attackable
(Mironov 2012) and not CSPRNG-backed, so they are a yardstick, not an alternative.
OpenDP's exact samplers are timed too when the ``opendp`` package is installed.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from _util import best_time, table
from pandas_dp.mechanisms.gaussian.discrete import DiscreteGaussian
from pandas_dp.mechanisms.laplace import DiscreteLaplace
from pandas_dp.mechanisms.random import SystemRandomSource

DRAWS = 1_000_000


def opendp_rate(scale: float, draws: int, gaussian: bool = False) -> float | None:
    """Draws per second of OpenDP's exact integer Laplace (or Gaussian), None if not installed."""
    try:
        import opendp.prelude as dp
    except ImportError:
        return None
    dp.enable_features("contrib")
    if gaussian:
        space = dp.vector_domain(dp.atom_domain(T=int)), dp.l2_distance(T=int)
        meas = dp.m.make_gaussian(*space, scale=scale)
    else:
        space = dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int)
        meas = dp.m.make_laplace(*space, scale=scale)
    zeros = [0] * draws
    return draws / best_time(lambda: meas(zeros), repeat=1, warmup=0)


def _rates(draws: int, mechanisms, float_sampler) -> list[list[object]]:
    """Rows ``[label, ours, numpy, numpy/ours]`` for ``(label, mechanism, float scale)``."""
    source = SystemRandomSource()
    rows = []
    for label, mech, scale in mechanisms:
        ours = draws / best_time(lambda m=mech: m.sample(draws, source), repeat=3)
        base = draws / best_time(lambda s=scale: float_sampler(0.0, s, draws), repeat=3)
        rows.append([label, ours, base, base / ours])
    return rows


def _peer_line(name: str, scale: str, peer: float | None, ours: float) -> str:
    if peer is None:
        return f"OpenDP not installed: its exact {name} sampler was not timed."
    return (
        f"OpenDP exact integer {name} at scale {scale}: {peer:,.0f} draws/s "
        f"(pandas-dp is {ours / peer:,.1f}x faster)."
    )


def run(draws: int = DRAWS) -> str:
    """Time 10**6 draws at several scales; return a markdown report."""
    numpy_gen = np.random.default_rng()  # test-only: the insecure yardstick being compared
    headers = ["scale", "pandas-dp (exact, CSPRNG)", "numpy (float, insecure)", "numpy/ours"]
    laplace = [
        (label, DiscreteLaplace(scale), float(scale))
        for label, scale in [
            ("2^20", Fraction(2**20)),
            ("10", Fraction(10)),
            ("10/3", Fraction(10, 3)),
        ]
    ]
    gaussian = [
        (label, DiscreteGaussian(sigma2), float(sigma2) ** 0.5)
        for label, sigma2 in [
            ("σ = 2^20", Fraction(2**40)),
            ("σ = 10", Fraction(100)),
            ("σ² = 10/3", Fraction(10, 3)),
        ]
    ]
    laplace_rows = _rates(draws, laplace, numpy_gen.laplace)
    gaussian_rows = _rates(draws, gaussian, numpy_gen.normal)
    return "\n".join(
        [
            f"### Sampler throughput ({draws:,} draws, best of 3, draws/s)",
            "",
            "Discrete Laplace (counts, sums and means):",
            "",
            table(headers, laplace_rows),
            "",
            _peer_line(
                "Laplace", "2^20", opendp_rate(float(2**20), draws // 5), laplace_rows[0][1]
            ),
            "",
            'Discrete Gaussian (`mechanism="gaussian"`), next to numpy\'s normal:',
            "",
            table(headers, gaussian_rows),
            "",
            _peer_line(
                "Gaussian",
                "σ = 10",
                opendp_rate(10.0, draws // 5, gaussian=True),
                gaussian_rows[1][1],
            ),
        ]
    )


if __name__ == "__main__":
    print(run())
