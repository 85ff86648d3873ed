"""BCART-PCFG: the exact posterior over decision trees via a grammar of bounding boxes.

Sullivan, Tiwari, Thrun & Piech, "Bayesian Decision Trees via Tractable Priors
and Probabilistic Context-Free Grammars"; implementation notes in
``spec-001-bcart-pcfg.md``.

Modules
-------
store
    :func:`build_node_store`: every node (point set) and de-duplicated split;
    limits and the pre-flight estimate.
grammar
    :class:`BoxGrammar`: inside (sum / max) tables, production probabilities,
    sampling, exact posterior predictive, derived quantities; the priors
    :class:`PhiPrior` and :class:`arboretum.bayes.ChipmanPrior`.
trees
    :class:`TreeFactory`: derivations to :class:`arboretum.tree.Tree`.
estimator
    :class:`PCFGTreeClassifier`, the scikit-learn classifier.
"""

from .estimator import PCFGTreeClassifier
from .grammar import BoxGrammar, PhiPrior, SampledTrees
from .store import GrammarLimitReached, GrammarTooLargeError, NodeStore, Preflight, build_node_store, preflight

__all__ = [
    "BoxGrammar",
    "GrammarLimitReached",
    "GrammarTooLargeError",
    "NodeStore",
    "PCFGTreeClassifier",
    "PhiPrior",
    "Preflight",
    "SampledTrees",
    "build_node_store",
    "preflight",
]
