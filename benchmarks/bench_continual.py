"""Running totals (issue 29): the largest error over all prefix sums, three strategies.

For T = 365 and T = 4096 bins, the largest absolute error over all T prefix sums of one
release, median over ``RUNS`` releases with fresh CSPRNG noise: noisy daily counts
(discrete Laplace 1/ε, ε = 1), the binary tree (ε = 1; least squares and plain), and the
square-root factorization (discrete Gaussian, ρ = ε²/2 = 0.5; zCDP, not pure DP, so not the
same guarantee as the other rows). The error of a release does not depend on the counts
(the decoders are linear and exact without noise), so the noise alone is decoded.
"""

from __future__ import annotations

import numpy as np

from _util import table
from pandas_dp.mechanisms.continual.sqrt import SqrtFactorization
from pandas_dp.mechanisms.continual.strategies import NoisyBins
from pandas_dp.mechanisms.continual.tree import BinaryTree
from pandas_dp.mechanisms.random import SystemRandomSource

RUNS = 100


def median_max_error(plan, runs: int = RUNS) -> float:
    """Median over ``runs`` releases of the largest absolute prefix error."""
    noise = plan.mechanism.sample(runs * plan.size, SystemRandomSource())
    errors = plan.decode(noise.reshape(runs, plan.size))
    return float(np.median(np.max(np.abs(errors), axis=1)))


def main() -> str:
    """The markdown table."""
    rows = []
    for bins in (365, 4096):
        plans = {
            "noisy daily counts (Laplace 1/ε, ε = 1)": NoisyBins.plan(bins, epsilon=1),
            "binary tree, least squares (ε = 1)": BinaryTree.plan(bins, epsilon=1),
            "binary tree, plain (ε = 1)": BinaryTree.plan(bins, epsilon=1, least_squares=False),
            "square-root factorization (ρ = 0.5)": SqrtFactorization.plan(bins, rho=0.5),
        }
        for name, plan in plans.items():
            rows.append([bins, name, median_max_error(plan), float(plan.stddev().max())])
    return table(["T", "strategy", "median max error", "largest stddev"], rows)


if __name__ == "__main__":
    print(main())
