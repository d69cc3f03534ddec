"""``priv.dp.groupby(pd.Grouper(key="t", freq="MS"), range=...)``: time bins as group keys.

pandas' ``df.groupby(pd.Grouper(key="t", freq="MS"))`` groups rows by the period their time
falls in, as ``df.resample("MS", on="t")`` does, with bins from the data's first to last
value. A release must not read those: here the bins are those of ``freq`` over the public
``range=(start, end)``, cut and labelled by :mod:`~pandas_dp.api.queries.resample`'s code.

Alone, the Grouper gives that resampler. Next to ordinary columns, the group-by is over
every bin with every public key of the other columns (``keys=``, in any form ``groupby``
takes for them, or a schema's ``isin``): the engine cuts the time column into the bins
(:class:`~pandas_dp.measures.aggregates.Binning`) and matches the other columns to their keys, so
no key is read from the data. Results are shaped as pandas shapes them: a MultiIndex whose
levels follow ``by`` (the time level named after the Grouper's key, holding the bins'
labels), rows in the order of the keys given, each with every bin (or every bin with each
of the keys, when the Grouper comes first). Every refusal here reads arguments, column names
and dtypes only, before anything is charged.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import replace

import numpy as np
import pandas as pd
from pandas._typing import DtypeObj
from pandas.tseries.frequencies import to_offset

from pandas_dp.api.keys import categories_as_keys, check_key_types, keys_example, parse_keys
from pandas_dp.api.queries.groupby import DPGroupBy, schema_domains, schema_keys
from pandas_dp.api.queries.resample import relabeller, resample, time_bins, time_kind
from pandas_dp.api.release import Target
from pandas_dp.api.release.arguments import Keys
from pandas_dp.api.release.consumers import Consumer
from pandas_dp.api.validation import did_you_mean
from pandas_dp.errors import DPKeyError, DPTypeError, DPValueError
from pandas_dp.measures.aggregates import Binning

#: Options of ``pd.Grouper`` that change how bins are cut or labelled, or which rows count:
#: each must keep the value a ``pd.Grouper(key=..., freq=...)`` of the same freq has.
_OPTIONS = ("closed", "label", "origin", "offset", "convention", "dropna", "how", "limit")


def has_grouper(by: object) -> bool:
    """Whether ``by`` (a label, Series or list of them) holds a ``pd.Grouper``."""
    labels = list(by) if isinstance(by, list | tuple) else [by]
    return any(isinstance(label, pd.Grouper) for label in labels)


def grouper_groupby(
    target: Target,
    by: object,
    keys: Keys,
    span: object,
    consumer: Consumer,
    *,
    max_groups_per_unit: int | None,
    max_rows_per_group: int | None,
    selection: object,
    dropna: object,
) -> DPGroupBy:
    """The group-by of ``by`` (which holds one ``pd.Grouper``) over public time bins."""
    labels = list(by) if isinstance(by, list | tuple) else [by]
    position, grouper = _the_grouper(labels)
    on, freq = _parts(grouper)
    if selection is not None:
        raise DPValueError(
            "selection= chooses keys from the data; a pd.Grouper's bins are public (from "
            "range=), so give the other columns' public keys as keys= instead"
        )
    if not isinstance(dropna, bool):
        raise DPTypeError(f"dropna must be True or False, got {type(dropna).__name__}")
    if not dropna:
        raise DPValueError(
            "dropna=False is not supported with a pd.Grouper: a missing time (or one outside "
            "range=) falls in no bin, as pandas' Grouper drops NaT whatever dropna says; "
            "remove dropna=False (keys of the other columns cannot be missing either)"
        )
    kind = time_kind(
        target, on, f"group by {on!r} itself (without pd.Grouper), or by pd.cut(...) over "
        "public edges", what="pd.Grouper(freq=...) bins time",
    )  # fmt: skip
    if span is None:
        raise DPValueError(
            f"groupby with pd.Grouper(key={on!r}, freq={freq!r}) needs range=(start, end): "
            "pandas takes the bins from the first to the last value, which are private; "
            "e.g. range=(pd.Timestamp('2024-01-01'), pd.Timestamp('2025-01-01')) for the "
            "periods of 2024"
        )
    others = labels[:position] + labels[position + 1 :]
    if not others:
        if keys is not None:
            raise DPValueError(
                f"keys= is for the other group-by columns; the bins of {on!r} come from "
                "range=(start, end), so leave keys out"
            )
        return resample(target, freq, on, span, consumer, max_groups_per_unit, max_rows_per_group)
    names = tuple(label.name if isinstance(label, pd.Series) else label for label in others)
    if on in names:
        raise DPValueError(f"by lists {on!r} twice (in the pd.Grouper and as a column)")
    inner, keys_from = _other_keys(target, on, others, names, keys)
    edges, intervals, time_labels = time_bins(freq, span, kind, on)
    full = _with_bins(intervals, inner)
    reorder = _reorderer(position, intervals, inner)
    relabel = relabeller(intervals, time_labels, level=position)

    def labelled(result: object) -> object:
        return relabel(reorder(result))

    grouped = DPGroupBy.of(
        target, [on, *others], full, binning=Binning(edges, right=False), consumer=consumer,
        relabel=labelled,
        max_groups_per_unit=max_groups_per_unit, max_rows_per_group=max_rows_per_group,
    )  # fmt: skip
    return replace(grouped, keys_from=keys_from)


def _the_grouper(labels: list[object]) -> tuple[int, pd.Grouper]:
    """The position of the one ``pd.Grouper`` among the labels, and the Grouper."""
    positions = [i for i, label in enumerate(labels) if isinstance(label, pd.Grouper)]
    if len(positions) > 1:
        raise DPValueError(
            "groupby takes one pd.Grouper; bin another time column into a column of public "
            "labels first, e.g. priv.assign(month=priv['u'].dt.to_period('M')), and group "
            "by that column with its public keys"
        )
    grouper = labels[positions[0]]
    assert isinstance(grouper, pd.Grouper)  # positions hold Groupers only (public labels)
    return positions[0], grouper


def _parts(grouper: pd.Grouper) -> tuple[Hashable, str]:
    """The Grouper's column and frequency, refusing what a release cannot bin."""
    if grouper.level is not None:
        raise DPValueError(
            "pd.Grouper(level=...) groups by the index, which a release does not read: "
            "reset_index() makes it a column of the protected frame, then "
            "pd.Grouper(key='<its name>', freq=...)"
        )
    if grouper.key is None:
        raise DPValueError(
            "pd.Grouper needs key=<a datetime column>, e.g. pd.Grouper(key='t', freq='MS')"
        )
    if grouper.freq is None:
        raise DPValueError(
            f"pd.Grouper(key={grouper.key!r}) without freq= groups by the column's values: "
            f"pass {grouper.key!r} itself, or give freq= (e.g. 'MS') to bin its times"
        )
    offset = to_offset(grouper.freq)
    plain = pd.Grouper(key=grouper.key, freq=offset)
    for option in _OPTIONS:
        given, default = getattr(grouper, option, None), getattr(plain, option, None)
        if not _same(given, default):
            raise DPValueError(
                f"pd.Grouper({option}={given!r}) is not supported: the bins are those "
                f"resample cuts for freq={offset.freqstr!r} by default, starting at range's "
                f"start; remove {option}= (or shift range= to move the bins)"
            )
    return grouper.key, str(offset.freqstr)


def _same(given: object, default: object) -> bool:
    """Whether an option keeps its default (compared by type and value, never raising)."""
    if given is None or default is None:
        return given is default
    return type(given) is type(default) and bool(given == default)


def _other_keys(
    target: Target, on: Hashable, others: list[object], names: tuple[Hashable, ...], keys: Keys
) -> tuple[pd.Index, str]:
    """The public keys of the columns grouped beside the time bins, and where they came from."""
    columns = target.engine.columns(target.data)
    dtypes = dict(target.engine.dtypes(target.data).items())
    kinds: dict[Hashable, DtypeObj] = {}
    for label, name in zip(others, names, strict=True):
        if isinstance(label, pd.Series):
            kinds[name] = label.dtype
            continue
        if label not in columns:
            hint = did_you_mean(label, target.session.columns)
            raise DPKeyError(f"group-by column {label!r} not found in this frame{hint}")
        kinds[name] = dtypes[label]
    if isinstance(keys, Mapping) and on in keys:
        raise DPValueError(
            f"keys= lists values for {on!r}, whose bins come from range=(start, end): give "
            f"keys for the other group-by columns only ({', '.join(map(repr, names))})"
        )
    keys_from = ""
    if keys is None:
        keys, keys_from = schema_keys(target, names, "; time bins from range=")
    keys, declared = categories_as_keys(keys, names, kinds)
    inner = parse_keys(names, keys)
    if inner is None:
        raise DPValueError(
            f"groupby with a pd.Grouper needs public keys for {', '.join(map(repr, names))} "
            f"({keys_example(names)}, or a schema's isin check); the time bins come from "
            "range=. Nothing was charged"
        )
    domains = schema_domains(target, [None if isinstance(o, pd.Series) else o for o in others])
    check_key_types(inner, [kinds[name] for name in names], domains)
    return inner, declared or keys_from


def _with_bins(intervals: pd.IntervalIndex, inner: pd.Index) -> pd.MultiIndex:
    """Every bin (outermost, in order) with every key of the other columns: the engine's keys.

    :class:`~pandas_dp.measures.aggregates.Grouping` cuts its first column into the bins and
    expects its keys in exactly this order.
    """
    width = len(inner)
    tiled = np.tile(np.arange(width), len(intervals))
    levels = [inner.get_level_values(i).take(tiled) for i in range(inner.nlevels)]
    return pd.MultiIndex.from_arrays(
        [intervals.repeat(width), *levels], names=[intervals.name, *inner.names]
    )


def _reorderer(
    position: int, intervals: pd.IntervalIndex, inner: pd.Index
) -> Callable[[object], object]:
    """Put the time level back at ``position`` in ``by`` (free post-processing).

    Rows come bins outermost (the engine's order); with the Grouper after other columns,
    they are re-sorted so that the other keys are outermost, in their order, each with its
    bins in order (stable: ``value_counts`` pairs keep their order within a group).
    """
    if position == 0:
        return lambda result: result
    bin_of = {interval: i for i, interval in enumerate(intervals)}
    key_of = {key: j for j, key in enumerate(inner)}
    width = inner.nlevels

    def reorder(result: object) -> object:
        if not isinstance(result, pd.Series | pd.DataFrame):
            return result
        index = result.index
        assert isinstance(index, pd.MultiIndex)
        rows = list(index)
        bins = np.fromiter((bin_of[row[0]] for row in rows), np.int64, len(rows))
        other = (row[1] if width == 1 else tuple(row[1 : 1 + width]) for row in rows)
        keys = np.fromiter((key_of[key] for key in other), np.int64, len(rows))
        positions = np.lexsort((np.arange(len(rows)), bins, keys))
        ordered = result.iloc[positions]
        order = [*range(1, position + 1), 0, *range(position + 1, index.nlevels)]
        ordered.index = index.take(positions).reorder_levels(order)
        return ordered

    return reorder
