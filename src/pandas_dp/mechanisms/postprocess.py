"""Free post-processing of released values: clamping, fitting to a total, integer rounding.

Post-processing a differentially private release with public information costs no budget
(Dwork & Roth 2014, Prop. 2.1). These functions only ever see released (noisy) values.
"""

from __future__ import annotations

from fractions import Fraction

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
        Also require every entry to be ``>= 0`` (a negative ``total`` is then read as 0).

    Returns
    -------
    numpy.ndarray of float64

    Notes
    -----
    Without the sign constraint the solution spreads the gap evenly:
    ``x = v + (T - sum(v)) / n``. With it, the solution is the Euclidean projection onto the
    scaled simplex ``{x >= 0, sum(x) = T}``: ``x = max(v - θ, 0)`` with the ``θ`` found by
    sorting (Held, Wolfe & Crowder 1974; Duchi et al. 2008). The function is total: it
    returns a vector for every finite input (it runs on released values, after the budget
    is spent, where a failure would be an observation of the data). When floating-point
    cancellation leaves no entry above ``θ`` (a total far below the entries' spacing), the
    largest entry takes the whole total, which is the projection's limit.
    """
    v = np.nan_to_num(np.asarray(values, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    if v.size == 0:
        return v.copy()
    if not nonnegative:
        return np.asarray(v + (total - v.sum()) / v.size, dtype=np.float64)
    total = max(float(total), 0.0)
    if total == 0:
        return np.zeros_like(v)
    ordered = np.sort(v)[::-1]
    cumulative = np.cumsum(ordered) - total
    ranks = np.arange(1, v.size + 1)
    active = np.flatnonzero(ordered - cumulative / ranks > 0)
    if active.size == 0:
        out = np.zeros_like(v)
        out[int(np.argmax(v))] = total
        return out
    rho = int(active[-1]) + 1
    theta = cumulative[rho - 1] / rho
    return np.asarray(np.maximum(v - theta, 0.0), dtype=np.float64)


def round_to_total(
    values: npt.ArrayLike, total: int
) -> npt.NDArray[np.int64] | npt.NDArray[np.object_]:
    """Round reals to integers that sum exactly to ``total``.

    Each entry is rounded down, then the missing units go to the entries with the largest
    fractional parts (ties to the earlier entry): the largest-remainder rule, which moves no
    entry by a full unit or more when the values sum to ``total``. Non-negative values give
    non-negative integers.

    Notes
    -----
    Total, like :func:`fit_to_total`: it answers for every input. Non-finite entries count
    as 0. When floating-point error leaves the floors more than ``n`` units away from
    ``total``, non-negative floors that overshoot are rescaled to ``total`` exactly
    (rationals), and any other gap is shared equally before the largest remainders are
    rounded up. Counts beyond int64 come back as Python integers (object dtype).
    """
    v = np.nan_to_num(np.asarray(values, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    total = int(total)
    if v.size == 0:
        return np.zeros(0, dtype=np.int64)
    floors = [int(x) for x in np.floor(v)]  # exact Python integers, whatever the magnitude
    # Equal fractional parts must tie exactly (to the earlier entry), whatever float error
    # the fit left behind: compare them at 1e-9 resolution.
    order = np.argsort(-np.round(v - np.floor(v), 9), kind="stable")
    missing = total - sum(floors)
    if missing < 0 and total >= 0 and min(floors) >= 0:  # overshoot: rescale, exactly
        whole = sum(floors)
        shares = [Fraction(f * total, whole) for f in floors]
        floors = [int(share) for share in shares]
        remainders = [share - int(share) for share in shares]
        order = np.asarray(sorted(range(v.size), key=lambda i: -remainders[i]))
        missing = total - sum(floors)
    even, extra = divmod(missing, v.size)
    out = [f + even for f in floors]
    for position in order[:extra]:
        out[int(position)] += 1
    if max(abs(x) for x in out) < 2**63:
        return np.asarray(out, dtype=np.int64)
    return np.asarray(out, dtype=object)


def nearest_psd(matrix: npt.ArrayLike) -> F64:
    """The positive semidefinite matrix nearest ``matrix`` in Frobenius norm (Higham 1988).

    The symmetric part, its negative eigenvalues set to 0. Rows and columns holding NaN are
    left out of the projection (a NaN variance, then those with most NaN) and kept as they
    are. A covariance matrix is positive semidefinite, so
    projecting a noisy one can only bring it closer to the truth in Frobenius norm.
    """
    values = np.asarray(matrix, dtype=np.float64)
    symmetric = (values + values.T) / 2
    keep = _finite_block(symmetric)
    out = np.full_like(symmetric, np.nan)
    if keep.any():
        inner = symmetric[np.ix_(keep, keep)]
        eigenvalues, vectors = np.linalg.eigh(inner)
        projected = (vectors * np.maximum(eigenvalues, 0.0)) @ vectors.T
        out[np.ix_(keep, keep)] = (projected + projected.T) / 2
    missing = ~keep  # rows left out keep their own finite values (they are not projected)
    out[missing, :] = symmetric[missing, :]
    out[:, missing] = symmetric[:, missing]
    return out


def _finite_block(matrix: F64) -> npt.NDArray[np.bool_]:
    """The rows of the largest block without NaN found by dropping the row with most NaN."""
    keep = ~np.isnan(np.diag(matrix))
    while keep.any():
        holes = np.isnan(matrix[np.ix_(keep, keep)]).sum(axis=1)
        if not holes.any():
            break
        keep[np.flatnonzero(keep)[np.argmax(holes)]] = False
    return keep


def correlation_of(covariance: npt.ArrayLike) -> F64:
    """``D^-1/2 C D^-1/2`` for a positive semidefinite ``C``: unit diagonal, entries in [-1, 1].

    Rows and columns whose variance is not positive are NaN (pandas' correlation of a
    constant column).
    """
    values = np.asarray(covariance, dtype=np.float64)
    scale = np.sqrt(np.where(np.diag(values) > 0, np.diag(values), np.nan))
    out = np.clip(values / np.outer(scale, scale), -1.0, 1.0)
    np.fill_diagonal(out, np.where(np.isnan(scale), np.nan, 1.0))
    return out
