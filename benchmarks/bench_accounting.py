"""How many releases fit in one budget under each accountant?

Counts (sensitivity 1) are released one after another against a session budget of
(ε = 1, δ = 1e-6) until the accountant refuses: discrete Laplace counts at ε = 0.1, and
discrete Gaussian counts with σ = 10. For basic composition a Gaussian release is charged
the (ε, δ) it was calibrated for; here each gets δ = 1e-7 and the ε that σ = 10 buys at that
δ. The tighter accountants compose the noise itself.
"""

from __future__ import annotations

from fractions import Fraction

from _util import table
from pandas_dp.accounting.accountant import Accountant
from pandas_dp.accounting.composition import ACCOUNTANTS, composition_for
from pandas_dp.accounting.events import Measurement, Release
from pandas_dp.budget import Budget
from pandas_dp.errors import BudgetExceededError
from pandas_dp.mechanisms.gaussian.calibration import discrete_gaussian_delta
from pandas_dp.mechanisms.gaussian.discrete import DiscreteGaussian
from pandas_dp.mechanisms.laplace import DiscreteLaplace

TOTAL = Budget.of(1.0, 1e-6)
LIMIT = 5_000


def laplace_count(epsilon: Fraction = Fraction(1, 10)) -> Release:
    """A discrete Laplace count at ``epsilon``."""
    mech = DiscreteLaplace.calibrated(1, epsilon)
    measurement = Measurement("count", mech.name, epsilon, 1, mech.effective_scale)
    return Release("count", (), (measurement,))


def gaussian_count(sigma: float = 10.0, delta: float = 1e-7) -> Release:
    """A σ = 10 discrete Gaussian count, charged for basic composition at ``delta``."""
    mech = DiscreteGaussian(Fraction(int(sigma * sigma)))
    low, high = 1e-6, 10.0  # the ε this σ gives at `delta` (CKS20 Thm. 7), by bisection
    for _ in range(100):
        mid = (low + high) / 2
        low, high = (
            (low, mid) if discrete_gaussian_delta(sigma**2, mid, 1) <= delta else (mid, high)
        )
    measurement = Measurement(
        "count", mech.name, Fraction(high).limit_denominator(10**9) + Fraction(1, 10**9), 1,
        mech.scale, delta=Fraction(delta), sigma2=mech.sigma2,
    )  # fmt: skip
    return Release("count", (), (measurement,))


def admitted(accounting: str, release: Release) -> int:
    """Number of copies of ``release`` the accountant admits before refusing."""
    accountant = Accountant(TOTAL, composition_for(TOTAL, accounting))
    for k in range(LIMIT):
        try:
            accountant.charge(release)
        except BudgetExceededError:
            return k
    return LIMIT


def run() -> str:
    """The comparison table (markdown)."""
    rows = []
    for accounting in ACCOUNTANTS:
        try:
            rows.append([accounting, admitted(accounting, laplace_count()),
                         admitted(accounting, laplace_count(Fraction(1, 100))),
                         admitted(accounting, gaussian_count())])  # fmt: skip
        except ImportError as error:  # dp-accounting not installed
            rows.append([accounting, f"n/a ({error})", "n/a", "n/a"])
    return "\n".join(
        [
            "### Releases admitted by a budget of (ε = 1, δ = 1e-6)",
            "",
            table(
                [
                    "accountant",
                    "Laplace counts, ε = 0.1",
                    "Laplace counts, ε = 0.01",
                    "Gaussian counts, σ = 10",
                ],
                rows,
            ),
        ]
    )


if __name__ == "__main__":
    print(run())
