"""Samplers of the Bayesian CART posterior that MAPTree maximises.

MCMCTreeSampler
    Metropolis-Hastings with grow, prune, change and swap moves
    (Chipman, George & McCulloch, 1998).
SMCTreeSampler
    Top-down particle filtering (Lakshminarayanan, Roy & Teh, 2013).
TreeSamples
    The list-like sequence of sampled trees both return as ``samples_``.

Both sample ``P(T | X, y) ∝ exp(arboretum.bayes.log_posterior(T, X, y))`` over
trees with binary-feature splits: a node at depth ``d`` with at least one valid
split (a feature taking both values on its samples) splits with probability
``alpha * (1 + d) ** -beta`` on a feature uniform among its valid splits, a
node without valid split is a leaf, and each leaf's class probabilities have a
Dirichlet(``rho``) prior that is integrated out.
"""

from ._base import TreeSamples
from .mcmc import MCMCTreeSampler
from .smc import SMCTreeSampler

__all__ = ["MCMCTreeSampler", "SMCTreeSampler", "TreeSamples"]
