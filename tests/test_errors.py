"""The exception tree: every pandas-dp error is a DPError and the stdlib error users expect."""

from __future__ import annotations

import pytest

import pandas_dp
from pandas_dp import errors

HIERARCHY = [
    (errors.DPError, Exception),
    (errors.DPValueError, errors.DPError),
    (errors.DPValueError, ValueError),
    (errors.DPTypeError, errors.DPError),
    (errors.DPTypeError, TypeError),
    (errors.DPKeyError, errors.DPError),
    (errors.DPKeyError, KeyError),
    (errors.BudgetExceededError, errors.DPError),
    (errors.BudgetExceededError, RuntimeError),
    (errors.NotProtectedError, errors.DPError),
    (errors.NotProtectedError, RuntimeError),
    (errors.DuplicatedRowsError, errors.NotProtectedError),
    (errors.DuplicatedRowsError, RuntimeError),
    (errors.LedgerError, errors.DPError),
    (errors.LedgerError, RuntimeError),
    (errors.SpecError, errors.DPValueError),
    (errors.SpecError, ValueError),
    (errors.MissingExtraError, ImportError),
    (errors.PrivacyLeakWarning, UserWarning),
]


@pytest.mark.parametrize(
    ("child", "parent"), HIERARCHY, ids=[f"{c.__name__}<{p.__name__}" for c, p in HIERARCHY]
)
def test_exception_hierarchy(child: type, parent: type) -> None:
    assert issubclass(child, parent)


@pytest.mark.parametrize(
    ("child", "other"),
    [
        (errors.DPValueError, errors.DPTypeError),
        (errors.BudgetExceededError, errors.NotProtectedError),
        (errors.NotProtectedError, errors.BudgetExceededError),
        (errors.DPKeyError, ValueError),
        (errors.PrivacyLeakWarning, errors.DPError),
        (errors.DPError, ValueError),
        (errors.LedgerError, errors.BudgetExceededError),
        (errors.SpecError, errors.LedgerError),
    ],
)
def test_branches_stay_apart(child: type, other: type) -> None:
    assert not issubclass(child, other)


def test_public_names_are_the_same_objects() -> None:
    for name in (
        "DPError",
        "DPValueError",
        "DPTypeError",
        "DPKeyError",
        "BudgetExceededError",
        "NotProtectedError",
        "DuplicatedRowsError",
        "LedgerError",
        "SpecError",
        "PrivacyLeakWarning",
    ):
        assert getattr(pandas_dp, name) is getattr(errors, name)


def test_key_error_shows_its_message_without_quotes() -> None:
    error = errors.DPKeyError("column 'x' not found")
    assert str(error) == "column 'x' not found"
    assert str(errors.DPKeyError()) == ""
    with pytest.raises(KeyError, match=r"^column 'x' not found$"):
        raise error


@pytest.mark.parametrize(
    "error", [errors.DPValueError, errors.DPTypeError, errors.BudgetExceededError]
)
def test_errors_are_catchable_as_dp_error(error: type[Exception]) -> None:
    with pytest.raises(errors.DPError, match="boom"):
        raise error("boom")
