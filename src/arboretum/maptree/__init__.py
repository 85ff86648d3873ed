"""MAPTree: certified MAP trees of the Bayesian CART posterior by AND/OR best-first search."""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

# Imported on first use: the kernels' module (``search``) is imported alone by the compile helper
# of :mod:`arboretum._compile`, without the estimators and scikit-learn.
__getattr__, __dir__ = lazy_exports(__name__, {
    "MAPTreeClassifier": ".estimator",
    "MAPTreeRegressor": ".estimator",
    "AndOrSearch": ".search",
    "RegressionSearch": ".search",
    "SearchResult": ".search",
})

if TYPE_CHECKING:
    from .estimator import MAPTreeClassifier, MAPTreeRegressor
    from .search import AndOrSearch, RegressionSearch, SearchResult

__all__ = ["MAPTreeClassifier", "MAPTreeRegressor", "AndOrSearch", "RegressionSearch", "SearchResult"]
