"""Empirical privacy-loss audits of the fourth audit's shape leaks (issue 37), each with its mutant.

1. Matching rows to public keys. D: ``False``, 1,000 ones and 1,000 zeros in an object column;
   D' adds ``True`` as the first row. A count per public key ``[0, 1]`` at ε = 1 is audited
   as in ``test_privacy_audit.py`` (exact counts from the API with the noise captured, draws
   from the very mechanism the release used). Every row is matched in its canonical form, so
   the exact counts of key 1 are 1,000 and 1,001. The mutant is the old matching step, which
   hashed the raw column (keeping the first form it met) and looked those representatives up
   among the keys: on D' it saw only booleans and matched no row, so key 1 counted 0.
2. A left join's dtypes. D: every protected row has a public match; D' adds a row whose key
   has none. A sum of a public integer column after ``merge(how="left")`` is released through
   the API with real (seeded) noise; the event is "the released value is an int". The public
   columns' dtypes come from the public table alone, so both are floats. The mutant is the old
   join, which reindexed (widening ``int64`` to ``float64``) only when some row had no match:
   an int on D, a float on D', every time.

3. Formulas. D and D' are the audit's frames (D' adds one row at x = 7.77); the formula
   ``I(0*y + x.eq(7.77).any()) ~ x`` predicted about 0 on D and 1 on D'. The grammar of row-local
   terms refuses it on both (the event "predicts above 0.5" never happens); the mutant is the
   previous main's evaluation without the grammar.

The mutants are the code that was on main before this fix, kept here to show the audit bites.
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable

import numpy as np
import pandas as pd
import pytest
from pandas.api.extensions import ExtensionArray

import pandas_dp
from pandas_dp.engines import codes as codes_module
from pandas_dp.engines import lookup as lookup_module
from pandas_dp.testing import capture_noise

from .auditing import audit, epsilon_lower_bound, vectorised_runs

pytestmark = pytest.mark.statistical

EPSILON = 1.0


def _old_level_codes(column: pd.Series, keys: pd.Index) -> np.ndarray:
    """The mutant: the raw column hashed first (first form kept), then looked up."""
    codes, uniques = pd.factorize(column, use_na_sentinel=True)
    found = pd.Index(keys, tupleize_cols=False).get_indexer(
        pd.Index(np.asarray(uniques), tupleize_cols=False)
    )
    return np.asarray(np.append(found, -1)[codes], dtype=np.int64)


def _key_one(frame: pd.DataFrame) -> tuple[int, object]:
    priv = frame.dp.protect(epsilon=10.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
        with capture_noise(priv) as calls:
            counts = priv.dp.groupby("code", keys=[0, 1]).count(epsilon=EPSILON)
    (call,) = calls
    return int(counts.loc[1]), call.mechanism


def _matching_neighbours() -> tuple[pd.DataFrame, pd.DataFrame]:
    rows = [False] + [1] * 1000 + [0] * 1000
    return tuple(  # type: ignore[return-value]
        pd.DataFrame({"code": pd.Series(values, dtype=object)}) for values in (rows, [True, *rows])
    )


def test_matching_audit_and_the_first_form_mutant(monkeypatch: pytest.MonkeyPatch) -> None:
    d, d2 = _matching_neighbours()
    (exact_d, mechanism), (exact_d2, mechanism2) = _key_one(d), _key_one(d2)
    assert (exact_d, exact_d2) == (1000, 1001)
    assert mechanism == mechanism2
    real = audit(*vectorised_runs((exact_d, exact_d2), mechanism, 1.0, seed=9100))
    print(f"count per public key, canonical matching: {real}")
    assert real.epsilon_lb <= EPSILON, f"the count leaks more than ε: {real}"

    monkeypatch.setattr(codes_module, "level_codes", _old_level_codes)
    (old_d, _), (old_d2, _) = _key_one(d), _key_one(d2)
    assert (old_d, old_d2) == (1000, 0)  # the old step: no row of D' matched key 1
    caught = audit(*vectorised_runs((old_d, old_d2), mechanism, 1.0, seed=9100))
    print(f"count per public key, the first-form mutant: {caught}")
    assert caught.epsilon_lb > 10 * EPSILON, f"the first-form mutant was not caught: {caught}"


PUBLIC = pd.DataFrame({"code": [1, 2, 3], "n": [10, 20, 30]})
RUNS = 300
SUM_EPSILON = 0.05


def _old_looked_up(
    values: pd.DataFrame, positions: np.ndarray, how: str
) -> list[tuple[Hashable, ExtensionArray]]:
    """The mutant: the public columns reindexed only when some row has no match."""
    del how
    narrow = positions.astype(np.min_scalar_type(-max(len(values), 1)))
    complete = bool((positions >= 0).all())
    right = None if complete else values.reindex(positions)
    return [
        (name, values.iloc[:, j].array.take(narrow) if right is None else right.iloc[:, j].array)
        for j, name in enumerate(values.columns)
    ]


def _int_releases(codes: list[int], seed: int) -> int:
    """How many of RUNS left-join sums come out as Python ints (real, seeded noise)."""
    with pytest.warns(pandas_dp.PrivacyLeakWarning, match="seeded rng"):
        priv = pd.DataFrame({"code": codes}).dp.protect(epsilon=RUNS * SUM_EPSILON, rng=seed)
    joined = priv.dp.merge(PUBLIC, on="code", how="left")
    hits = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.NoiseDominatedWarning)
        for _ in range(RUNS):
            value = joined.dp.sum("n", bounds=(0, 100), epsilon=SUM_EPSILON)
            hits += isinstance(value, int | np.integer)
    return hits


def _dtype_bound() -> float:
    d, d2 = [1, 2, 3] * 30, [1, 2, 3] * 30 + [4]
    hits_d, hits_d2 = _int_releases(d, seed=11), _int_releases(d2, seed=12)
    bounds = [
        epsilon_lower_bound(np.array([more]), np.array([less]), RUNS)[0]
        for more, less in ((hits_d, hits_d2), (hits_d2, hits_d))
    ]
    return float(max(bounds))


def test_left_join_dtype_audit_and_the_reindex_mutant(monkeypatch: pytest.MonkeyPatch) -> None:
    real = _dtype_bound()
    print(f"left join then sum, dtypes from the public table: ε_lb = {real:.3f}")
    assert real <= SUM_EPSILON, f"the left join's dtype leaks: ε_lb = {real}"

    monkeypatch.setattr(lookup_module, "_looked_up", _old_looked_up)
    caught = _dtype_bound()
    print(f"left join then sum, the reindex mutant: ε_lb = {caught:.3f}")
    assert caught > 40 * SUM_EPSILON, f"the reindex mutant was not caught: ε_lb = {caught}"


# --- 3. formulas that read other rows -------------------------------------------------------

FORMULA = "I(0*y + x.eq(7.77).any()) ~ x"
FORMULA_RUNS = 60
FORMULA_EPSILON = 0.5


def _formula_neighbours() -> tuple[pd.DataFrame, pd.DataFrame]:
    """The audit's frames: D has no x = 7.77; D' adds one row holding it."""
    rng = np.random.default_rng(1)  # test data only
    x = rng.uniform(0, 10, 2000).round(2)
    x[x == 7.77] = 7.78
    d = pd.DataFrame({"x": x, "y": rng.uniform(0, 10, 2000).round(2)})
    return d, pd.concat([d, pd.DataFrame({"x": [7.77], "y": [5.0]})], ignore_index=True)


def _high_predictions(frame: pd.DataFrame, seed: int) -> int:
    """How many of FORMULA_RUNS fits predict above 0.5 at x = 5 (a refusal predicts nothing)."""
    with pytest.warns(pandas_dp.PrivacyLeakWarning, match="seeded rng"):
        priv = frame.dp.protect(epsilon=FORMULA_RUNS * FORMULA_EPSILON, rng=seed)
    hits = 0
    for _ in range(FORMULA_RUNS):
        try:
            model = priv.dp.ols(
                FORMULA, bounds={"x": (0, 10), "y": (0, 10)}, epsilon=FORMULA_EPSILON
            )
        except pandas_dp.DPError:
            continue
        hits += model.params["Intercept"] + 5 * model.params["x"] > 0.5
    return hits


def _formula_bound() -> float:
    d, d2 = _formula_neighbours()
    hits_d, hits_d2 = _high_predictions(d, seed=21), _high_predictions(d2, seed=22)
    return float(
        max(
            epsilon_lower_bound(np.array([more]), np.array([less]), FORMULA_RUNS)[0]
            for more, less in ((hits_d, hits_d2), (hits_d2, hits_d))
        )
    )


def test_formula_audit_and_the_whole_frame_mutant(monkeypatch: pytest.MonkeyPatch) -> None:
    from pandas_dp.api.queries import regression as regression_module
    from pandas_dp.transformations import design as design_module
    from pandas_dp.transformations.formula_grammar import FormulaVariables

    real = _formula_bound()
    print(f"ols with a whole-frame term, grammar on: ε_lb = {real:.3f}")
    assert real <= FORMULA_EPSILON, f"the formula leaks: ε_lb = {real}"

    # The mutant: the formula evaluated as the previous main did, without the grammar of
    # row-local terms (the public probe alone cannot see a term that fires on one value).
    def no_grammar(formula: str) -> FormulaVariables:
        return FormulaVariables(columns=("x", "y"), categories=())

    monkeypatch.setattr(design_module, "check_formula", no_grammar)
    monkeypatch.setattr(regression_module, "check_formula", no_grammar)
    caught = _formula_bound()
    print(f"ols with a whole-frame term, the no-grammar mutant: ε_lb = {caught:.3f}")
    assert caught > 2 * FORMULA_EPSILON, f"the whole-frame mutant was not caught: ε_lb = {caught}"
