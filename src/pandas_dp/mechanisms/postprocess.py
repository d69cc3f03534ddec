"""Free post-processing of released values: clamping, fitting to a total, integer rounding.

Post-processing a differentially private release with public information costs no budget
(Dwork & Roth 2014, Prop. 2.1). These functions only ever see released (noisy) values.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]


def fit_to_total(values: npt.ArrayLike, total: float, *, nonnegative: bool = False) -> F64:
    """Closest vector (least squares) to ``values`` whose entries sum to ``total``.

    Parameters
    ----------
    values : array-like
        Released values (e.g. noisy group counts).
    total : float
        The sum to match (e.g. a separately released noisy total).
    nonnegative : bool, default False
        Also require every entry to be ``>= 0``. Then ``total`` must be ``>= 0``.

    Returns
    -------
    numpy.ndarray of float64

    Notes
    -----
    Without the sign constraint the solution spreads the gap evenly:
    ``x = v + (T - sum(v)) / n``. With it, the solution is the Euclidean projection onto the
    scaled simplex ``{x >= 0, sum(x) = T}``: ``x = max(v - θ, 0)`` with the ``θ`` found by
    sorting (Held, Wolfe & Crowder 1974; Duchi et al. 2008).
    """
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        return v.copy()
    if not nonnegative:
        return np.asarray(v + (total - v.sum()) / v.size, dtype=np.float64)
    if total < 0:
        raise ValueError(f"a non-negative fit needs a non-negative total, got {total}")
    if total == 0:
        return np.zeros_like(v)
    ordered = np.sort(v)[::-1]
    cumulative = np.cumsum(ordered) - total
    ranks = np.arange(1, v.size + 1)
    active = ordered - cumulative / ranks > 0
    rho = int(np.flatnonzero(active)[-1]) + 1
    theta = cumulative[rho - 1] / rho
    return np.asarray(np.maximum(v - theta, 0.0), dtype=np.float64)


def round_to_total(values: npt.ArrayLike, total: int) -> npt.NDArray[np.int64]:
    """Round non-negative reals to integers that sum exactly to ``total``.

    Each entry is rounded down, then the missing units go to the entries with the largest
    fractional parts (ties to the earlier entry): the largest-remainder rule, which moves no
    entry by a full unit or more.
    """
    v = np.asarray(values, dtype=np.float64)
    floors = np.floor(v)
    missing = int(total - floors.sum())
    if missing < 0 or missing > v.size:
        raise ValueError("values must be non-negative and sum to total (within one unit each)")
    # Equal fractional parts must tie exactly (to the earlier entry), whatever float error
    # the fit left behind: compare them at 1e-9 resolution.
    order = np.argsort(-np.round(v - floors, 9), kind="stable")
    out = floors.astype(np.int64)
    out[order[:missing]] += 1
    return out
