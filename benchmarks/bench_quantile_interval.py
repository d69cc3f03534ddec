"""A median's 95% interval on the bundled census ages (issue 25): width, coverage, and cost.

For ε in {0.1, 1}, ``runs`` seeded releases each of ``priv["age"].dp.median(bounds=(0, 100),
epsilon=ε)`` and of the same call with ``ci=0.95``. Reported:

- **width**: the interval's mean width, in years;
- **range at the stated rank error**: the width of ``[x_(n/2 - r), x_(n/2 + r)]`` on the
  sorted ages, where ``r`` is the rank error the estimate states at 95% (``2Δ(ln K + ln 20)/ε``
  at the estimate's own share of ε, a third): the interval a user could draw if the rank
  error were converted to years exactly, with no budget spent on it; and the same at the
  whole ε (the plain median's stated rank error);
- **range at the observed rank error**: the same with ``r`` the 95th percentile of the rank
  errors the plain median (no ``ci``) actually made in these runs;
- **coverage** of the sample median (``Series.median``), and the median's mean absolute error
  with and without ``ci`` (``ci`` takes two thirds of ε for the interval's ends).

Every number is computed in the run.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd

import pandas_dp
from _util import table
from pandas_dp.cli.demo import load_census
from pandas_dp.mechanisms.quantile import rank_error

RUNS = 400
CANDIDATES = 101  # the integers 0..100: an integer column with integer bounds


def _release(ages: pd.Series, epsilon: float, seed: int, ci: float | None) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)  # seeded: test-only
        warnings.simplefilter("ignore", pandas_dp.NoiseDominatedWarning)  # ε = 0.1's ends
        priv = pd.DataFrame({"age": ages}).dp.protect(epsilon=1e6, rng=seed)
        return priv["age"].dp.median(bounds=(0, 100), epsilon=epsilon, ci=ci)


def _range(ordered: np.ndarray, ranks: float) -> float:
    """Width of ``[x_(n/2 - r), x_(n/2 + r)]`` (clipped to the data)."""
    n = ordered.size
    low = ordered[max(0, int(np.floor(n / 2 - ranks)))]
    high = ordered[min(n - 1, int(np.ceil(n / 2 + ranks)))]
    return float(high - low)


def run(runs: int = RUNS) -> str:
    """The report (markdown)."""
    ages = load_census()["age"]
    ordered = np.sort(ages.to_numpy())
    truth = float(ages.median())
    n = ordered.size

    def ranks_off(value: float) -> float:
        below, at_most = (ordered < value).sum(), (ordered <= value).sum()
        return float(max(0.0, below - n / 2, n / 2 - at_most))

    rows = []
    for epsilon in (0.1, 1.0):
        plain = [float(_release(ages, epsilon, 1000 + i, None)) for i in range(runs)]
        with_ci = [_release(ages, epsilon, 5000 + i, 0.95) for i in range(runs)]
        widths = np.array([e.upper - e.lower for e in with_ci])
        covered = np.mean([e.lower <= truth <= e.upper for e in with_ci])
        stated = rank_error(epsilon / 3, CANDIDATES, 0.05, 0.5)  # the estimate's share
        alone = rank_error(epsilon, CANDIDATES, 0.05, 0.5)  # the plain median's
        observed = float(np.quantile([ranks_off(v) for v in plain], 0.95))
        error_plain = float(np.mean(np.abs(np.array(plain) - truth)))
        error_ci = float(np.mean([abs(e.value - truth) for e in with_ci]))
        rows.append([
            epsilon, float(widths.mean()), _range(ordered, stated),
            float(widths.mean()) / max(_range(ordered, stated), 1e-12),
            _range(ordered, alone), _range(ordered, observed), float(covered),
            error_plain, error_ci,
        ])  # fmt: skip
    headers = [
        "ε", "width (years)", "range at stated rank error", "width ÷ that range",
        "range at the plain median's stated rank error",
        "range at observed rank error", "coverage", "median error, plain", "median error, ci",
    ]  # fmt: skip
    intro = f"Median of {n:,} census ages on (0, 100), 95% intervals, {runs} runs per row."
    return intro + "\n\n" + table(headers, rows)


if __name__ == "__main__":
    print(run())
