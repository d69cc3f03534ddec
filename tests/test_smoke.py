"""The README example runs as written."""

from fractions import Fraction

import pandas as pd

import pandas_dp


def test_readme_example_runs(census: pd.DataFrame) -> None:
    priv = census.dp.protect(epsilon=1.0)
    assert isinstance(priv.dp.count(epsilon=0.1), int)
    assert isinstance(priv.dp.sum("income", bounds=(0, 200_000), epsilon=0.2), float)
    assert isinstance(priv["income"].dp.sum(bounds=(0, 200_000), epsilon=0.2), float)
    assert 0 <= priv["age"].dp.mean(bounds=(0, 100), epsilon=0.3) <= 100
    assert isinstance(priv[priv.age >= 65].dp.count(epsilon=0.1), int)
    session = priv.dp.session
    assert session.spent.epsilon == Fraction(9, 10)
    assert session.remaining.epsilon == Fraction(1, 10)
    assert len(session.ledger) == 5
    assert "pandas_dp" not in census.attrs  # the caller's frame is untouched
    assert isinstance(pandas_dp.__version__, str)
