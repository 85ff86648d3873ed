"""MAPTree: certified MAP trees of the Bayesian CART posterior by AND/OR best-first search."""

from .estimator import MAPTreeClassifier
from .search import AndOrSearch, SearchResult

__all__ = ["MAPTreeClassifier", "AndOrSearch", "SearchResult"]
