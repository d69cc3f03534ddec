"""Keys chosen from the data are chosen only when asked for: the public-input check.

What such a choice spends and how it chooses is planned in
:mod:`pandas_dp.planning.selection`.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Literal

import pandas as pd

from pandas_dp.api.keys import keys_example
from pandas_dp.api.release.option_values import parse_selection
from pandas_dp.errors import DPValueError
from pandas_dp.measures.aggregates import Binning


def asked_selection(
    keys: pd.Index | None,
    binning: Binning | None,
    selection: object,
    by: tuple[Hashable, ...],
    called: str,
    may_select: bool,
) -> Literal["threshold", "optimal"]:
    """How keys are chosen from the data: only when asked for, never as a silent fallback.

    Choosing keys from the data drops the rare ones (and spends δ): a call without public
    keys that does not ask for it is refused, whatever the session's δ. Tables shaped by
    their keys (``crosstab``, ``pivot_table``: ``may_select=False``) always need them.
    """
    if keys is not None or binning is not None:
        if selection is not None:
            raise DPValueError(
                f"selection={selection!r} chooses keys from the data; these keys are public "
                "(given or from the schema), so leave selection out"
            )
        return "threshold"
    columns = ", ".join(repr(label) for label in by)
    if not may_select:
        raise DPValueError(
            f"{called} needs public keys for every row and column variable: "
            f"keys={{{', '.join(f'{label!r}: [...]' for label in by)}}} (or a schema's isin)"
        )
    if selection is None:
        raise DPValueError(
            f"{called}() got no keys for {columns}, and pandas-dp never takes keys from the "
            f"data unasked. Pass the public keys ({keys_example(by)}, or a schema's isin "
            "check); or ask for keys chosen from the data by DP partition selection with "
            "selection='threshold' (or 'optimal'): it drops rare keys and needs a session "
            "with δ > 0. Nothing was charged"
        )
    return parse_selection(selection)
