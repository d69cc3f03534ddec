"""Exact discrete Laplace sampler throughput next to numpy's (insecure, float) Laplace.

numpy's Laplace is the speed a user would otherwise get; it is attackable (Mironov 2012) and
not CSPRNG-backed, so it is a yardstick, not an alternative. OpenDP's exact sampler is timed
too when the ``opendp`` package is installed.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from _util import best_time, table
from pandas_dp.mechanisms.laplace import DiscreteLaplace
from pandas_dp.mechanisms.random import SystemRandomSource

DRAWS = 1_000_000


def opendp_rate(scale: float, draws: int) -> float | None:
    """Draws per second of OpenDP's exact integer Laplace, or None if it is not installed."""
    try:
        import opendp.prelude as dp
    except ImportError:
        return None
    dp.enable_features("contrib")
    space = dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int)
    meas = dp.m.make_laplace(*space, scale=scale)
    zeros = [0] * draws
    return draws / best_time(lambda: meas(zeros), repeat=1, warmup=0)


def run(draws: int = DRAWS) -> str:
    """Time 10**6 draws at several scales; return a markdown report."""
    source = SystemRandomSource()
    numpy_gen = np.random.default_rng()  # test-only: the insecure yardstick being compared
    rows = []
    scales = [("2^20", Fraction(2**20)), ("10", Fraction(10)), ("10/3", Fraction(10, 3))]
    for label, scale in scales:
        mech = DiscreteLaplace(scale)
        ours = draws / best_time(lambda m=mech: m.sample(draws, source), repeat=3)
        base = draws / best_time(lambda s=float(scale): numpy_gen.laplace(0.0, s, draws), repeat=3)
        rows.append([label, ours, base, base / ours])
    peer = opendp_rate(float(2**20), draws // 5)
    lines = [
        f"### Sampler throughput ({draws:,} draws, best of 3, draws/s)",
        "",
        table(
            ["scale", "pandas-dp (exact, CSPRNG)", "numpy (float, insecure)", "numpy/ours"], rows
        ),
    ]
    if peer is not None:
        lines += [
            "",
            f"OpenDP exact integer Laplace at scale 2^20: {peer:,.0f} draws/s "
            f"(pandas-dp is {rows[0][1] / peer:,.1f}x faster).",
        ]
    else:
        lines += ["", "OpenDP not installed: peer sampler not timed."]
    return "\n".join(lines)


if __name__ == "__main__":
    print(run())
