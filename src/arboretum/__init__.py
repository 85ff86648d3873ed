"""arboretum: decision trees searched, sampled or optimised as a whole.

Public API
----------
MAPTreeClassifier
    The certified maximum-a-posteriori tree of the Bayesian CART posterior.
Tree
    The flat-array tree every model returns (printing, JSON, DOT, prediction).
load_dataset, list_datasets
    Bundled benchmark datasets.
"""

from .datasets import list_datasets, load_dataset
from .maptree import MAPTreeClassifier
from .tree import Tree

__all__ = ["MAPTreeClassifier", "Tree", "load_dataset", "list_datasets"]
__version__ = "0.1.0"
