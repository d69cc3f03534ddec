"""One model per public group key, from one noisy Gram matrix per group.

A grouped ``ols`` or ``logit`` measures exactly what the ungrouped one does (the sums of
products of :class:`~pandas_dp.planning.statistics.regression.LinearModel`), once per group
over the rows of that group: one noisy matrix per key, one measurement in all. Each group's
model is then fitted from its own matrix by the ungrouped fit, as pandas users fit
``{k: smf.ols(f, d).fit() for k, d in df.groupby("g")}``; everything here is
post-processing of the noisy sums.

A group whose noisy count of complete rows says it may well be empty is not fitted: below
its noise's own 95% half-width (the rule by which means call a count too small), or below
the number of coefficients plus one, its model is NaN throughout (:func:`emptied`), so that
noise is never shown as a fit.
"""

from __future__ import annotations

import dataclasses
import html
import math
from collections.abc import Callable, Hashable, Iterator, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np
import pandas as pd

from pandas_dp.planning.statistics.base import DOMINATED_ALPHA, Inputs
from pandas_dp.planning.statistics.logistic import LogitResults
from pandas_dp.planning.statistics.regression import LinearModel, OLSResults

Model = TypeVar("Model", OLSResults, LogitResults)

#: What a model's result keeps when it is emptied: public facts, not values.
_PUBLIC = frozenset({"alpha", "df_model", "laplace"})


def group_inputs(inputs: Inputs) -> list[Inputs]:
    """Each group's inputs: the same measurement, that group's row of noisy sums."""
    (noisy,) = inputs.noisy
    rows = np.asarray(noisy).reshape(np.shape(noisy)[0], -1)
    return [dataclasses.replace(inputs, noisy=(row,)) for row in rows]  # type: ignore[arg-type]


def looks_empty(gram: np.ndarray, inputs: Inputs) -> bool:
    """Whether a group's noisy count of complete rows (``gram[0, 0]``) is too small to fit.

    Below the count's own 95% noise half-width (there the group may well be empty), or
    below the number of coefficients plus one (no residual degree of freedom). Reads the
    noisy value and public parameters only.
    """
    rows = float(gram[0, 0])
    fewest = max(float(gram.shape[0]), inputs.halfwidth(0, DOMINATED_ALPHA))
    return not (math.isfinite(rows) and rows >= fewest)


def emptied(result: Model) -> Model:
    """``result`` with every value NaN (coefficients, errors, counts, fit statistics).

    The labels (coefficient names), the design and the public settings are kept, so that
    an empty group's model has the shape of every other group's.
    """
    changes: dict[str, object] = {}
    for field in dataclasses.fields(result):
        value = getattr(result, field.name)
        if field.name in _PUBLIC:
            continue
        if isinstance(value, pd.Series | pd.DataFrame):
            changes[field.name] = value.astype(np.float64) * math.nan
        elif isinstance(value, float):
            changes[field.name] = math.nan
    return dataclasses.replace(result, **changes)  # type: ignore[arg-type]


def fit_by_group(
    keys: pd.Index,
    stat: LinearModel,
    inputs: Inputs,
    fitted: Callable[[np.ndarray, Inputs], Model],
) -> ModelsByGroup[Model]:
    """Each group's model from its noisy Gram matrix, NaN where the group looks empty.

    ``fitted(gram, group's inputs)`` (the inputs give a weighted model its count of rows).
    A group that looks empty is not fitted: it gets an emptied copy of another group's model
    (the same labels and design), or of the first group's when every group looks empty.
    """
    parts = group_inputs(inputs)
    grams = [np.asarray(stat.value(part, None)) for part in parts]
    fits = {
        i: fitted(gram, parts[i]) for i, gram in enumerate(grams) if not looks_empty(gram, inputs)
    }
    if len(fits) == len(grams):
        return ModelsByGroup(keys, tuple(fits.values()))
    blank = emptied(next(iter(fits.values())) if fits else fitted(grams[0], parts[0]))
    return ModelsByGroup(keys, tuple(fits.get(i, blank) for i in range(len(grams))))


@dataclass(frozen=True, eq=False)
class ModelsByGroup(Mapping[Hashable, Model], Generic[Model]):
    """Released models, one per public group key: a read-only mapping, in the keys' order.

    What ``{k: smf.ols(f, d).fit() for k, d in df.groupby("g")}`` gives in statsmodels,
    with every public key present (a group without rows is NaN, not missing): each value
    is the ungrouped result (``OLSResults`` or ``LogitResults``), with its ``summary()``,
    ``conf_int()``, ``predict()`` and tests. The frames below put the groups side by side.

    Attributes
    ----------
    index : Index
        The public keys, named after the group-by column(s), in the order given (what
        ``keys()`` iterates).
    params, bse, tvalues, pvalues : DataFrame
        One row per key (index: :attr:`index`), one column per coefficient in statsmodels'
        order (each model's: the intercept, categorical terms, then the others); NaN rows
        for groups that look empty.
    nobs : Series
        Each group's noisy number of complete rows (NaN where the group looks empty).
    """

    index: pd.Index
    models: tuple[Model, ...]

    def __getitem__(self, key: Hashable) -> Model:
        """The model of group ``key`` (a tuple for several group-by columns)."""
        try:
            at = self.index.get_loc(key)
        except (KeyError, TypeError):
            raise KeyError(key) from None
        if not isinstance(at, int):  # a partial key of a MultiIndex: not one group
            raise KeyError(key)
        return self.models[at]

    def __iter__(self) -> Iterator[Hashable]:
        return iter(self.index)

    def __len__(self) -> int:
        return len(self.models)

    def _table(self, read: Callable[[Model], pd.Series]) -> pd.DataFrame:
        """One row per key of ``read(model)``, its columns in statsmodels' order (the models')."""
        values = np.vstack([read(model).to_numpy(np.float64) for model in self.models])
        names = list(read(self.models[0]).index)
        return pd.DataFrame(values, index=self.index.copy(), columns=pd.Index(names))

    @property
    def params(self) -> pd.DataFrame:
        """The coefficients: one row per key, one column per coefficient."""
        return self._table(lambda model: model.params)

    @property
    def bse(self) -> pd.DataFrame:
        """The standard errors (sampling and noise), shaped as :attr:`params`."""
        return self._table(lambda model: model.bse)

    @property
    def tvalues(self) -> pd.DataFrame:
        """``params / bse``, shaped as :attr:`params`."""
        return self._table(lambda model: model.tvalues)

    @property
    def pvalues(self) -> pd.DataFrame:
        """Two-sided p-values of :attr:`tvalues`, shaped as :attr:`params`."""
        return self._table(lambda model: model.pvalues)

    @property
    def nobs(self) -> pd.Series:
        """Each group's noisy number of complete rows."""
        values = [model.nobs for model in self.models]
        return pd.Series(values, index=self.index.copy(), dtype=np.float64, name="nobs")

    def conf_int(self, alpha: float = 0.05) -> pd.DataFrame:
        """Every group's ``1 - alpha`` intervals, stacked: columns ``0`` and ``1``.

        The rows are a MultiIndex of the key (level(s) named after the group-by columns)
        and the coefficient, as ``pd.concat({k: m.conf_int() for k, m in models.items()})``
        stacks statsmodels' intervals; ``.loc[key]`` gives one group's table.
        """
        tables = [model.conf_int(alpha) for model in self.models]
        return pd.concat(tables, keys=list(self.index), names=[*self.index.names, None])

    def _header(self) -> str:
        kind = type(self.models[0]).__name__.removesuffix("Results")
        by = ", ".join(map(str, self.index.names))
        return f"ModelsByGroup: {len(self)} {kind} models by {by}"

    def __repr__(self) -> str:
        return f"<{self._header()}>\n{self.params!r}"

    def _repr_html_(self) -> str:
        """The coefficients' table in a notebook, under the header."""
        return f"<p>{html.escape(self._header())}</p>{self.params.to_html()}"
