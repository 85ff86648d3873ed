"""Sparse density trees and lists (Goh, Semenova & Rudin): interpretable density estimation for
categorical data (spec-004).

- :class:`LeafSparseDensityTree` (Method I) and :class:`BranchSparseDensityTree` (Method II): MAP trees,
  found exactly by a dynamic programme over categorical boxes where the domain allows (certified,
  ``optimal_``), else by simulated annealing;
- :class:`SparseDensityRuleList` (Method III): Metropolis-Hastings over rule lists;
- baselines :class:`HistogramDensity` and :class:`CategoricalDET`;
- :class:`DensityCV` (and :func:`select_rate`, its functional form): model selection by cross-validated
  log-likelihood over the candidates, the prior's rate, ``alpha`` and the leaf density (spec §6.4).

Pieces: :mod:`.space` (the categorical domain), :mod:`.posterior` (LP_I, LP_II, LP_III, list volumes),
:mod:`.exact` (the exact solver), :mod:`.anneal`, :mod:`.rulelist`, :mod:`._kernels` (numba).
"""

from .baselines import CategoricalDET, HistogramDensity
from .lists import SparseDensityRuleList
from .selection import DensityCV, select_rate
from .trees import BranchSparseDensityTree, LeafSparseDensityTree
from . import _warm  # noqa: F401  (registers the "density" numba family)

__all__ = [
    "LeafSparseDensityTree",
    "BranchSparseDensityTree",
    "SparseDensityRuleList",
    "HistogramDensity",
    "CategoricalDET",
    "DensityCV",
    "select_rate",
]
