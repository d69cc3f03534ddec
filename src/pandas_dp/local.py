"""Local differential privacy: randomized response, and estimates from randomized data.

The public home of :func:`randomized_response` and :func:`estimate_proportion`; they are
implemented in :mod:`pandas_dp.api.local`, beside the accessors that offer them as
``Series.dp.randomized_response``.
"""

from pandas_dp.api.local import LOCAL_KEY, estimate_proportion, randomized_response

__all__ = ["LOCAL_KEY", "estimate_proportion", "randomized_response"]
