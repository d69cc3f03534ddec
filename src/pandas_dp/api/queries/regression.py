"""``priv.dp.ols`` and ``priv.dp.logit``: models from one noisy Gram matrix.

The formula's design is fixed on public inputs (:mod:`pandas_dp.transformations.design`);
the engine computes it from the private rows and sums the products of every pair of its
columns (and the response) over the complete rows, exactly; one noisy measurement of those
sums is the release, charged once. The fit is post-processing
(:mod:`pandas_dp.planning.statistics.regression`, least squares;
:mod:`pandas_dp.planning.statistics.logistic`, a logistic model of a response in ``[0, 1]``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from pandas_dp.api.caps import caps_for
from pandas_dp.api.keys import parse_keys
from pandas_dp.api.queries.ungrouped import plan_one, with_auto_bounds
from pandas_dp.api.release import PlannedRelease, ReleaseOptions, Target, plan, validate
from pandas_dp.api.release.arguments import Bound, Bounds, Mechanism, Real
from pandas_dp.api.release.options import parse_weights
from pandas_dp.api.release.types import Finish, Finisher
from pandas_dp.api.validation import bounds_mapping, check_column, is_summable
from pandas_dp.budget import exact
from pandas_dp.errors import DPTypeError, DPValueError, holds_data, shown
from pandas_dp.measures.aggregates import Aggregate, Grouping, ProductSums
from pandas_dp.planning.measurement.keys import MeasurementKey
from pandas_dp.planning.measurement.products import (
    DIGITS,
    ProductLayout,
    ProductsPart,
    products_part,
    score_layout,
    weight_lattice,
)
from pandas_dp.planning.measurement.weighted import Weights
from pandas_dp.planning.noise import NoiseSource
from pandas_dp.planning.planner import noise_choice
from pandas_dp.planning.request import Caps, PlannedOutput, Presentation, Request
from pandas_dp.planning.statistics.grouped_models import fit_by_group
from pandas_dp.planning.statistics.logistic import (
    STEADY,
    FirstFit,
    LogisticModel,
    LogitResults,
    LogitScore,
    first_fit,
    fit_logit,
    refine_logit,
    refit_logit,
)
from pandas_dp.planning.statistics.products import PairCovariance
from pandas_dp.planning.statistics.regression import LinearModel, OLSResults, fit
from pandas_dp.transformations.design import FormulaDesign, ScoreResiduals, design_of
from pandas_dp.transformations.formula_grammar import check_formula

Model = TypeVar("Model", OLSResults, LogitResults)


@dataclass(frozen=True)
class PerGroup:
    """A model per public group key: the group-by's grouping, caps and keys' source.

    Given to :func:`plan_ols` or :func:`plan_logit` by ``DPGroupBy.ols`` / ``.logit``: the
    sums are measured per group (parallel composition, one charge) and the result is a
    :class:`~pandas_dp.planning.statistics.grouped_models.ModelsByGroup`.
    """

    grouping: Grouping
    caps: Caps
    keys_from: str = ""


def plan_ols(
    target: Target,
    formula: str | None = None,
    *,
    y: Hashable | None = None,
    x: str | Iterable[Hashable] | None = None,
    bounds: Bounds = None,
    keys: Mapping[Hashable, Sequence[object]] | None = None,
    epsilon: Real | None = None,
    delta: Real | None = None,
    rho: Real | None = None,
    mechanism: Mechanism = "laplace",
    alpha: float = 0.05,
    per_group: PerGroup | None = None,
    weights: Hashable | None = None,
    weight_bounds: Bound | None = None,
) -> PlannedRelease[Any]:
    """The planned release of a linear model (see ``DataFrame.dp.ols``).

    An ``OLSResults``; with ``per_group``, a ``ModelsByGroup`` of them (``DPGroupBy.ols``).
    With ``weights``, statsmodels' WLS: the sums are weighted, and the rows holding a
    weight are counted too (one more sum), for the residual degrees of freedom.
    """
    text = _formula(formula, y, x, "ols")
    level = _alpha(alpha)
    weighing = parse_weights(target, weights, weight_bounds)  # before any bounds are released
    if isinstance(bounds, str) and bounds == "auto":
        return _auto(
            target, text, keys, epsilon, rho,
            lambda given: plan_ols(
                target, text, bounds=given.bounds, keys=keys, epsilon=given.epsilon,
                delta=delta, rho=rho, mechanism=mechanism, alpha=alpha, per_group=per_group,
                weights=weights, weight_bounds=weight_bounds,
            ),
        )  # fmt: skip
    options = ReleaseOptions(
        epsilon=epsilon, bounds=bounds, delta=delta, mechanism=mechanism, rho=rho
    )
    request, part, design, categorical = _measure(
        target, text, keys, options, "ols", per_group=per_group, weights=weighing
    )
    stat = LinearModel("ols", None, layout=part.layout)
    notes = _notes(request, part, design, categorical, per_group=per_group)
    shown = "" if weighing is None else weighing.describe().split(";")[0]

    def fitted(gram: np.ndarray, rows: float | None, noise_sd: float, laplace: bool) -> OLSResults:
        return fit(gram, noise_sd, design, level, laplace=laplace, rows=rows, weights=shown)

    return _planned(target, request, part, stat, notes, fitted)


def plan_logit(
    target: Target,
    formula: str | None = None,
    *,
    y: Hashable | None = None,
    x: str | Iterable[Hashable] | None = None,
    bounds: Bounds = None,
    keys: Mapping[Hashable, Sequence[object]] | None = None,
    epsilon: Real | None = None,
    delta: Real | None = None,
    rho: Real | None = None,
    mechanism: Mechanism = "laplace",
    alpha: float = 0.05,
    per_group: PerGroup | None = None,
    weights: Hashable | None = None,
    weight_bounds: Bound | None = None,
) -> PlannedRelease[Any]:
    """The planned release of a logistic model (see ``DataFrame.dp.logit``).

    The measurement is :func:`plan_ols`'s, the response's public range ``[0, 1]``; the fit
    is :func:`~pandas_dp.planning.statistics.logistic.fit_logit`. A ``LogitResults``; with
    ``per_group``, a ``ModelsByGroup`` of them (``DPGroupBy.logit``). With ``weights``, the
    sums are weighted (statsmodels' GLM Binomial with ``freq_weights``).
    """
    text = _formula(formula, y, x, "logit")
    level = _alpha(alpha)
    response = _response_column(target, text)
    weighing = parse_weights(target, weights, weight_bounds)  # before any bounds are released
    if isinstance(bounds, str) and bounds == "auto":  # the response's range is [0, 1]
        return _auto(
            target, text, keys, epsilon, rho,
            lambda given: plan_logit(
                target, text, bounds=given.bounds, keys=keys, epsilon=given.epsilon,
                delta=delta, rho=rho, mechanism=mechanism, alpha=alpha, per_group=per_group,
                weights=weights, weight_bounds=weight_bounds,
            ),
            fixed=response,
        )  # fmt: skip
    bounds = bounds_mapping(bounds)  # type: ignore[assignment]  # a table from priv.dp.bounds
    if response is not None:
        if not is_summable(target.dtype(response)):
            raise DPTypeError(
                f"logit: the response {response!r} has dtype {target.dtype(response)}; it must "
                "be binary: bool, or numbers 0/1 (values are clipped into [0, 1]). For a "
                f"category, write the event as a row-local term: 'I({_quoted(response)} == "
                '"yes") ~ ...\''
            )
        if isinstance(bounds, Mapping) and response not in bounds:
            bounds = {**bounds, response: (0, 1)}
        elif bounds is None:
            bounds = {response: (0, 1)}
    options = ReleaseOptions(
        epsilon=epsilon, bounds=bounds, delta=delta, mechanism=mechanism, rho=rho
    )
    shown = "" if weighing is None else weighing.describe().split(";")[0]
    built: list[FormulaDesign] = []  # every step's design is the first's (public inputs)

    def measured(asked: ReleaseOptions, step: Step = None) -> PlannedRelease[Any]:
        """The Gram matrix's release and its fit, or the score at a first fit.

        ``None``: one fit; ``"first"``: a fit to refine; a first fit: the score at it and
        the refinement; coefficients alone: the score's placeholder plan.
        """
        steady = isinstance(step, FirstFit) and step.steady
        theta = step.theta if isinstance(step, FirstFit) and steady else step
        theta = theta if isinstance(theta, np.ndarray) else None
        request, part, design, categorical = _measure(
            target, text, keys, asked, "logit", response=_binary_response,
            per_group=per_group, weights=weighing, score=theta,
            design=built[0] if built else None,
        )  # fmt: skip
        built[:] = [design]
        if isinstance(step, FirstFit) and not steady:  # the Gram matrix again
            unsteady = step
            notes = (*_notes(request, part, design, categorical, logit=True), _AGAIN)
            return _planned(
                target, request, part, LogisticModel("logit", None, layout=part.layout),
                notes, lambda gram, rows, noise_sd, laplace: refit_logit(unsteady, gram, noise_sd),
            )  # fmt: skip
        if isinstance(step, FirstFit):
            first = step
            notes = _notes(request, part, design, categorical, logit=True, scored=True)
            return _planned(
                target, request, part, LogitScore("logit", None, layout=part.layout), notes,
                lambda score, rows, noise_sd, laplace: refine_logit(first, score, noise_sd),
            )  # fmt: skip
        notes = _notes(request, part, design, categorical, logit=True, per_group=per_group)
        fit = first_fit if isinstance(step, str) else fit_logit

        def fitted(gram: np.ndarray, rows: float | None, noise_sd: float, laplace: bool) -> Any:
            return fit(gram, noise_sd, design, level, laplace=laplace, weights=shown)

        stat = LogisticModel("logit", None, layout=part.layout)
        return _planned(target, request, part, stat, notes, fitted)

    return _in_two_steps(target, options, per_group, measured)


#: A logit's two-step fit (pure ε, one model; see :func:`_in_two_steps`): the share of ε on a
#: row count that chooses it, then of the rest the first fit's (the score gets the others).
COUNT_SHARE = Fraction(1, 20)
FIRST_SHARE = Fraction(3, 10)
#: The two-step fit runs when the noisy count times ε is at least this many times the
#: number of the Gram matrix's sums; below, the first fit's design moments are too noisy
#: for a step from it to beat one fit on the whole of ε.
STEP_RATE = 150

_AGAIN = (
    "the first fit's design sums were too noisy for a step from it (their smallest "
    f"eigenvalue under {STEADY:g} times the noise's): the sums measured again, the two "
    "averaged by their noise's variance"
)
#: What :func:`plan_logit`'s ``measured`` plans: one fit (None), a first fit ("first"), the
#: score at a first fit (its refinement), or at coefficients alone (a placeholder).
Step = str | FirstFit | np.ndarray | None


def _in_two_steps(
    target: Target,
    options: ReleaseOptions,
    per_group: PerGroup | None,
    measured: Callable[[ReleaseOptions, Step], PlannedRelease[Any]],
) -> PlannedRelease[Any]:
    """A logistic model in one release, or in two steps where that is more accurate.

    One release measures the Gram matrix and fits the maximum-entropy likelihood
    (:func:`~pandas_dp.planning.statistics.logistic.fit_logit`). Its error at equal ε is
    mostly the noise on the design's sums, ``(k + 1)(k + 2) / 2`` of them sharing ε (one ℓ∞
    K-norm vector, :func:`~pandas_dp.planning.measurement.products.products_part`). With
    pure ε on one model, a twentieth of ε first releases the row count. When that count
    times ε is at least :data:`STEP_RATE` times the Gram's sums, a first fit takes
    :data:`FIRST_SHARE` of the rest and the score ``Σ (σ(x̃ᵀθ₁) - y) x̃`` at it, ``k`` sums
    of which one row moves each by at most 1 (one K-norm vector too), the remainder; the
    coefficients are one step from the first fit
    (:func:`~pandas_dp.planning.statistics.logistic.refine_logit`). Measured against one release
    on the whole of ε (five regressors, 100 seeded runs): 0.46 to 0.61 times its median error at
    n = 10^4 and 10^5 (ε = 0.5, 1, 2). The threshold, from four designs (40 seeded runs each,
    K-norm noise on both routes): two steps measured better at count·ε / sums of 167 (the census
    extract, ε = 5), 178 (five uniform regressors, 10^4 rows, ε = 0.5) and 154
    (tests/statistics/test_logit.py's uniform design; its normal one equal), one fit at 67
    (census, ε = 2), 89 (10^4 rows, ε = 0.25), 103 (both test designs) and 141 (the normal one;
    the uniform one then favours two steps). A split of ε between the steps that follows the
    count (``(n ε)^(-2/5)``, as the step's error terms suggest) measured no better than this
    fixed one (with Laplace noise on the score). Below the count's threshold the rest of ε goes
    to one release. Everything is planned (and every public input checked) before anything is
    read; the three releases are charged as one: ``epsilon`` in all.
    """
    plain = options.rho is None and options.delta is None and options.epsilon is not None
    if per_group is not None or not plain:
        return measured(options, None)
    epsilon = exact(options.epsilon, "epsilon")
    rest = epsilon * (1 - COUNT_SHARE)
    single = measured(dataclasses.replace(options, epsilon=rest), None)
    if any(part.measurement.is_gaussian for part in single.parts.values()):
        return measured(options, None)  # mechanism="gaussian": ε does not split exactly
    first = measured(dataclasses.replace(options, epsilon=rest * FIRST_SHARE), "first")
    later = dataclasses.replace(options, epsilon=rest * (1 - FIRST_SHARE))
    (gram,) = [part for part in single.parts.values() if isinstance(part, ProductsPart)]
    assert gram.layout is not None
    k = len(gram.layout.columns)
    two = measured(later, np.zeros(k)).after(
        first,
        lambda fit: measured(later, fit),
        auto="a first fit (the score measured at it)",
        ends=False,
    )
    if two.charged.cost != single.charged.cost:  # pragma: no cover - pure ε adds exactly
        return measured(options, None)
    count = plan_one(target.data, "count", None, ReleaseOptions(epsilon=epsilon * COUNT_SHARE))
    needed = STEP_RATE * len(gram.layout.monomials)

    def chosen(rows: object) -> PlannedRelease[Any]:
        noisy = float(rows)  # type: ignore[arg-type]  # released
        return two if math.isfinite(noisy) and noisy * float(epsilon) >= needed else single

    return single.after(
        count, chosen, auto="a row count (choosing one fit or two steps)", ends=False
    )


def _variable_kinds(
    target: Target, text: str, keys: Mapping[Hashable, Sequence[object]] | None
) -> tuple[dict[Hashable, pd.Index], list[Hashable]]:
    """The formula's categorical variables (with their public levels) and numeric ones."""
    variables = _variables(text)
    given = dict(keys) if isinstance(keys, Mapping) else {}
    if keys is not None and not isinstance(keys, Mapping):
        raise DPTypeError("keys must be a dict {column: [public levels]}")
    schema = target.session.schema
    categorical: dict[Hashable, pd.Index] = {}
    numeric: list[Hashable] = []
    for name in variables:
        check_column(target.engine, target.data, name, numeric=False, known=target.session.columns)
        levels = given.get(name)
        if levels is None and schema is not None and schema.rules(name).keys:
            levels = list(schema.rules(name).keys or ())
        parsed = None if levels is None else parse_keys((name,), levels)
        if parsed is not None:
            categorical[name] = parsed
        elif is_summable(target.dtype(name)):
            numeric.append(name)
        else:
            raise DPValueError(
                f"{name!r} holds categories: give its public levels with keys={{{name!r}: "
                "[...]} (or a schema's isin); pandas-dp never reads them off the data"
            )
    return categorical, numeric


def _auto(
    target: Target,
    text: str,
    keys: Mapping[Hashable, Sequence[object]] | None,
    epsilon: Real | None,
    rho: Real | None,
    planned: Callable[[ReleaseOptions], PlannedRelease[Model]],
    fixed: Hashable | None = None,
) -> PlannedRelease[Model]:
    """``bounds="auto"``: every numeric variable's bounds (but ``fixed``'s) released first."""
    _, numeric = _variable_kinds(target, text, keys)
    reads = [PairCovariance((c, c), c) for c in numeric if c != fixed]
    asked = ReleaseOptions(epsilon=epsilon, rho=rho, bounds="auto")
    return with_auto_bounds(target.data, reads, asked, planned)


def _response_column(target: Target, formula: str) -> Hashable | None:
    """The response's column when the left side is one column's name, else None."""
    left = formula.split("~", 1)[0].strip()
    if len(left) > 1 and left[0] == left[-1] == "`":
        left = left[1:-1]
    return left if left in target.session.columns else None


def _measure(
    target: Target,
    text: str,
    keys: Mapping[Hashable, Sequence[object]] | None,
    options: ReleaseOptions,
    query: str,
    *,
    response: Callable[[FormulaDesign], FormulaDesign] | None = None,
    per_group: PerGroup | None = None,
    weights: Weights | None = None,
    score: np.ndarray | None = None,
    design: FormulaDesign | None = None,
) -> tuple[Request, ProductsPart, FormulaDesign, dict[Hashable, pd.Index]]:
    """Validate a model's formula and variables; plan the one noisy Gram matrix it needs.

    ``response`` checks (and may narrow) the design's response, on its public bounds. With
    ``per_group``, one matrix per group (the group-by's caps). ``weights`` weighs every sum
    (and, for ``ols``, counts the rows holding a weight). With ``score`` (a logistic fit's
    released coefficients, scaled), the likelihood's gradient there instead: the sums of
    each row's residual alone and times each design column (:func:`score_layout`).
    ``design``: the design an earlier step of the same release built from the same public
    inputs (its formula probes are the planning's largest cost).
    """
    categorical, numeric = _variable_kinds(target, text, keys)
    placeholders = [PairCovariance((c, c), c) for c in numeric]
    if per_group is None:
        request = validate(target, placeholders, options, query=query, caps=caps_for(target, False))
    else:
        _check_grouping(per_group.grouping, [*categorical, *numeric], query)
        request = validate(
            target, placeholders, options, query=f"groupby.{query}", caps=per_group.caps,
            grouping=per_group.grouping, keys_from=per_group.keys_from,
        )  # fmt: skip
    if design is None:
        design = design_of(text, {c: request.columns.bounds[c] for c in numeric}, categorical)
        if response is not None:
            design = response(design)
    applied: FormulaDesign | ScoreResiduals = design
    if score is None:
        size = len(design.labels)
        layout = ProductLayout.of(
            design.labels, design.bounds, (True,) * size, complete=True, squares=False,
            weights=weights, rows=query == "ols",
        )  # fmt: skip
    else:
        applied = ScoreResiduals(design, tuple(float(t) for t in score))
        layout = score_layout(applied.labels, applied.bounds, weights)
    shares = (Fraction(1),)
    part = products_part(
        layout, request.pricing.budget_of(shares[0]), request.caps.contribution,
        noise_choice(target.session, request, shares), vector=query == "logit",
    )  # fmt: skip
    assert isinstance(part.measure, ProductSums)
    measure = dataclasses.replace(part.measure, design=applied, reads=applied.reads)
    part = dataclasses.replace(part, measure=measure)
    pricing = dataclasses.replace(request.pricing, shares=shares)
    columns = dataclasses.replace(request.columns, weights=weights)
    return (
        dataclasses.replace(request, pricing=pricing, columns=columns),
        part,
        design,
        categorical,
    )


def _check_grouping(grouping: Grouping, variables: list[Hashable], query: str) -> None:
    """Refuse, on public inputs, what a model per group cannot be fitted over."""
    if grouping.keys is None:
        raise DPValueError(
            f"groupby(...).{query}() needs public keys: pass keys=[...] to groupby (or a "
            "schema's isin); keys chosen from the data are for counts and sums"
        )
    inside = [column for column in grouping.by if column in variables]
    if inside:
        raise DPValueError(
            f"groupby(...).{query}(): the group-by column(s) {inside} are also in the "
            "formula; within a group they are constant. Leave them out of the formula, or "
            f"fit one model with them as regressors: priv.dp.{query}('y ~ x + C(g)', keys=...)"
        )


def _binary_response(design: FormulaDesign) -> FormulaDesign:
    """The design with its response's public range ``[0, 1]``, or refused (public bounds).

    The response's range on the public probe must lie within ``[0, 1]`` (a 0/1 or bool
    column, bounds ``(0, 1)``, or an indicator such as ``I(income > 50000)``); it is then
    widened to ``[0, 1]`` so that the scaled response is ``2 y - 1``, and each row's value is
    clipped into it.
    """
    lower, upper = design.bounds[-1]
    if not (0 <= lower <= upper <= 1):
        raise DPValueError(
            f"logit: the response {design.response!r} ranges over [{lower:g}, {upper:g}] on its "
            "public bounds; it must be binary, within [0, 1]: a bool or 0/1 column (bounds "
            "(0, 1), the default), or an event such as 'I(income > 50000) ~ ...'"
        )
    return dataclasses.replace(design, bounds=(*design.bounds[:-1], (0.0, 1.0)))


def _planned(
    target: Target,
    request: Request,
    part: ProductsPart,
    stat: LinearModel,
    notes: tuple[str, ...],
    fitted: Callable[[np.ndarray, float | None, float, bool], Model],
) -> PlannedRelease[Model]:
    request = dataclasses.replace(request, stats=(stat,), notes=notes)
    assert part.layout is not None
    return plan(target, request, _finisher(part, fitted), calibrated={part.layout.key: part})


def _finisher(
    part: ProductsPart, fitted: Callable[[np.ndarray, float | None, float, bool], Model]
) -> Finisher:
    """Fit the model from the noisy Gram matrix; grouped (``keys``): one per group.

    ``laplace``: the noise's heavier quantile in intervals for pure-ε noise (per-sum Laplace,
    or a K-norm vector, whose coordinate ``M U`` is heavier-tailed than a normal below six
    sums and lighter above: the Laplace quantile is kept for both, conservatively).
    """
    noise_sd = math.ldexp(math.sqrt(part.mechanism.variance()), part.exponent)
    laplace = not part.measurement.is_gaussian

    def finisher(outputs: tuple[PlannedOutput, ...], shown: Presentation) -> Finish:
        (out,) = outputs
        assert isinstance(out.stat, LinearModel)
        stat = out.stat

        def finish(
            keys: pd.Index | None, noisy: dict[MeasurementKey, Aggregate], source: NoiseSource
        ) -> Any:
            inputs = out.inputs(noisy)
            if keys is not None:  # one model per group, each with its own count of rows
                return fit_by_group(
                    keys, stat, inputs,
                    lambda g, part: fitted(g, stat.weighted_rows(part), noise_sd, laplace),
                )  # fmt: skip
            gram = stat.value(inputs, None)
            return fitted(np.asarray(gram), stat.weighted_rows(inputs), noise_sd, laplace)

        return finish

    return finisher


def _formula(formula: object, y: object, x: str | Iterable[Hashable] | None, query: str) -> str:
    """The formula given, or ``y ~ x1 + x2`` built from ``y=`` and ``x=`` (names quoted)."""
    if formula is not None:
        if y is not None or x is not None:
            raise DPValueError("give a formula or y= and x=, not both")
        if not isinstance(formula, str):
            raise DPTypeError(
                f"formula must be a string such as 'y ~ x', got {type(formula).__name__}"
            )
        return formula
    if y is None or x is None:
        raise DPTypeError(f"{query}() needs a formula ('y ~ x + C(g)'), or y= and x=[...]")
    if holds_data(y) or holds_data(x):
        raise DPTypeError(
            f"{query}(): y= and x= name columns, got y={shown(y)}, x={shown(x)}: pass their "
            "labels (y='income', x=['age', 'educ']), as in statsmodels' formulas"
        )
    columns = [x] if isinstance(x, str) else list(x)
    return f"{_quoted(y)} ~ {' + '.join(_quoted(c) for c in columns)}"


def _quoted(name: object) -> str:
    text = str(name)
    return text if text.isidentifier() else f"`{text}`"


def _variables(formula: str) -> list[Hashable]:
    """The columns ``formula`` reads, once its every term passed the grammar of row-local terms."""
    found = sorted(check_formula(formula).columns, key=formula.find)
    return [*found]


def _alpha(alpha: object) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, float | int) or not 0 < alpha < 1:
        raise DPValueError(f"alpha must be a number in (0, 1), got {alpha!r}")
    return float(alpha)


def _notes(
    request: Request,
    part: ProductsPart,
    design: FormulaDesign,
    categorical: dict[Hashable, pd.Index],
    *,
    logit: bool = False,
    per_group: PerGroup | None = None,
    scored: bool = False,
) -> tuple[str, ...]:
    layout = part.layout
    assert layout is not None
    fitted = (
        "coefficients (maximum likelihood on the maximum-entropy design those sums and the "
        "public ranges give) and standard errors (the rows' and the noise's, delta method) "
        "are post-processing"
        if logit
        else "coefficients, ridge (AdaSSP's rule on the noisy Gram matrix) and standard "
        "errors are post-processing"
    )
    if scored:
        fitted = (
            "coefficients: one step from the first fit, its maximum-entropy likelihood "
            "corrected to the measured score; standard errors the rows', the noise's and the "
            "first fit's (post-processing)"
        )
    weights = layout.weights
    model = ("Logit" if logit else "OLS") if weights is None else ("Logit" if logit else "WLS")
    moved = "1" if weights is None else f"{layout.weight_unit:g} (the upper weight bound)"
    if part.measurement.kind == "linf_knorm":
        each = "" if per_group is None else " per group"
        moved += f" (ℓ∞ sensitivity: one K-norm noise vector{each})"
    notes = [
        f"{model} {design.formula} over the complete rows from {len(layout.monomials)} noisy "
        f"{'weighted ' if weights is not None else ''}sums "
        f"of products of its {len(design.columns)} design columns and the response, each "
        f"scaled to [-1, 1] over its public range and rounded to 2^-{DIGITS}; one row moves "
        f"each sum by at most {moved}",
        fitted,
    ]
    if scored:
        measured = (
            f"the score of {model} {design.formula} at the first fit θ₁, Σ (σ(x̃ᵀθ₁) - y) x̃ over "
            f"the complete rows: {len(layout.monomials)} noisy "
            f"{'weighted ' if weights is not None else ''}sums of each row's residual (in "
            f"[-1, 1]) times its design columns, each scaled to [-1, 1] over its public range and "
            f"rounded to 2^-{DIGITS}; one row moves each sum by at most {moved}"
        )
        notes[0] = measured
    if weights is not None:
        notes.insert(1, _weights_text(weights, logit=logit))
    if logit:
        notes.insert(1, "the response clipped into [0, 1] (scaled: 2y - 1)")
    if categorical:
        notes.append(f"levels of {', '.join(map(str, categorical))} public (keys)")
    if per_group is not None:
        by = ", ".join(map(str, per_group.grouping.by))
        notes.append(
            f"one model per public key of {by}, from its own group's sums (parallel "
            "composition: one charge); a group whose noisy row count is below its 95% noise "
            "half-width (or the coefficients + 1) is NaN"
        )
    if request.caps.noteworthy:
        notes.append(request.caps.describe())
    return tuple(notes)


def _weights_text(weights: Weights, *, logit: bool = False) -> str:
    """What the weights do, for the ledger note (the planner adds their bounds' line)."""
    shift, _ = weight_lattice(weights)
    twin = "GLM Binomial freq_weights" if logit else "WLS"
    return (
        f"each row's products times its weight ({weights.column}) clipped to "
        f"[{weights.lower:g}, {weights.upper:g}] on a lattice of step 2^{shift} (statsmodels' "
        f"{twin})"
    )
