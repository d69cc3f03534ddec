"""Pure noise mathematics: exact samplers, calibration and accuracy. numpy and stdlib only."""

from pandas_dp.mechanisms.laplace import DiscreteLaplace
from pandas_dp.mechanisms.lattice import Lattice, sum_lattice
from pandas_dp.mechanisms.random import RandomSource, SeededRandomSource, SystemRandomSource

__all__ = [
    "DiscreteLaplace",
    "Lattice",
    "RandomSource",
    "SeededRandomSource",
    "SystemRandomSource",
    "sum_lattice",
]
