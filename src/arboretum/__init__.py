"""arboretum: decision trees searched, sampled or optimised as a whole.

Public API
----------
MAPTreeClassifier
    The certified maximum-a-posteriori tree of the Bayesian CART posterior.
MAPTreeRegressor
    The same for regression (normal-inverse-gamma leaves).
OptimalTreeClassifier, OptimalTreeRegressor
    He & Little's provably optimal trees with K axis-parallel or hyperplane splits.
ConvexPolytopeTreeClassifier, ConvexPolytopeTreeRegressor
    Convex polytope trees: each split a learned convex polytope (fitting needs PyTorch).
PCFGTreeClassifier
    BCART-PCFG: the exact posterior over trees (exact sampling, MAP tree, exact model averaging).
MCMCTreeSampler, SMCTreeSampler
    Samplers of the same posterior (Chipman et al. 1998; Lakshminarayanan, Roy & Teh 2013).
LeafSparseDensityTree, BranchSparseDensityTree, SparseDensityRuleList, HistogramDensity, CategoricalDET
    Sparse density trees and lists for categorical data (Goh, Semenova & Rudin), certified where
    the domain allows, with the paper's baselines; DensityCV chooses among them by cross-validation.
Binarizer
    The one discretiser: numbers and categories to readable binary questions
    ("age <= 42.5") and ordinal codes.
Tree
    The flat-array tree every model returns (printing, JSON, DOT, prediction).
LimitWarning, InvalidParameterError, ModelFormatError, InputWarning
    What a stopped fit warns, what a bad parameter raises, what a bad file raises,
    what input read as documented but probably not as meant warns.
GrammarTooLargeError
    What PCFGTreeClassifier raises, before any work, for a grammar whose
    pre-flight estimate is far over ``max_nodes`` (with advice).
save, load
    Whole fitted estimators to and from versioned JSON (:mod:`arboretum.io`).
load_dataset, list_datasets
    Bundled benchmark datasets.
"""

from typing import TYPE_CHECKING

from ._lazy import lazy_exports

# The estimators are imported when first used (``arboretum.MAPTreeClassifier``, ``from arboretum
# import ...``): ``import arboretum`` stays light, and a process that needs one model family (the
# compile helper of :mod:`arboretum._compile`) does not import scikit-learn and every other family.
_EXPORTS = {
    "Binarizer": ".binarizer",
    "InputWarning": ".exceptions",
    "InvalidParameterError": ".exceptions",
    "LimitWarning": ".exceptions",
    "ModelFormatError": ".exceptions",
    "list_datasets": ".datasets",
    "load_dataset": ".datasets",
    "load": ".io",
    "save": ".io",
    "MAPTreeClassifier": ".maptree",
    "MAPTreeRegressor": ".maptree",
    "OptimalTreeClassifier": ".optimal",
    "OptimalTreeRegressor": ".optimal",
    "GrammarTooLargeError": ".pcfg",
    "PCFGTreeClassifier": ".pcfg",
    "ConvexPolytopeTreeClassifier": ".polytope",
    "ConvexPolytopeTreeRegressor": ".polytope",
    "MCMCTreeSampler": ".samplers",
    "SMCTreeSampler": ".samplers",
    "Tree": ".tree",
    "BranchSparseDensityTree": ".density",
    "CategoricalDET": ".density",
    "DensityCV": ".density",
    "HistogramDensity": ".density",
    "LeafSparseDensityTree": ".density",
    "SparseDensityRuleList": ".density",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # what the names are, for type checkers and editors
    from .binarizer import Binarizer
    from .datasets import list_datasets, load_dataset
    from .exceptions import InputWarning, InvalidParameterError, LimitWarning, ModelFormatError
    from .density import (BranchSparseDensityTree, CategoricalDET, DensityCV, HistogramDensity,
                          LeafSparseDensityTree, SparseDensityRuleList)
    from .io import load, save
    from .maptree import MAPTreeClassifier, MAPTreeRegressor
    from .optimal import OptimalTreeClassifier, OptimalTreeRegressor
    from .pcfg import GrammarTooLargeError, PCFGTreeClassifier
    from .polytope import ConvexPolytopeTreeClassifier, ConvexPolytopeTreeRegressor
    from .samplers import MCMCTreeSampler, SMCTreeSampler
    from .tree import Tree

__all__ = [
    "MAPTreeClassifier",
    "MAPTreeRegressor",
    "OptimalTreeClassifier",
    "OptimalTreeRegressor",
    "PCFGTreeClassifier",
    "ConvexPolytopeTreeClassifier",
    "ConvexPolytopeTreeRegressor",
    "MCMCTreeSampler",
    "SMCTreeSampler",
    "Binarizer",
    "Tree",
    "LeafSparseDensityTree",
    "BranchSparseDensityTree",
    "SparseDensityRuleList",
    "HistogramDensity",
    "CategoricalDET",
    "DensityCV",
    "InvalidParameterError",
    "LimitWarning",
    "ModelFormatError",
    "InputWarning",
    "GrammarTooLargeError",
    "save",
    "load",
    "load_dataset",
    "list_datasets",
]
__version__ = "0.1.0"
