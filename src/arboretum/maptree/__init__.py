"""MAPTree: certified MAP trees of the Bayesian CART posterior by AND/OR best-first search."""

from .estimator import MAPTreeClassifier, MAPTreeRegressor
from .search import AndOrSearch, RegressionSearch, SearchResult

__all__ = ["MAPTreeClassifier", "MAPTreeRegressor", "AndOrSearch", "RegressionSearch", "SearchResult"]
