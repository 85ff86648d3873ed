"""Convex polytope trees (Armandpour & Zhou 2020; spec-003): every split is a learned convex polytope.

Fitting needs PyTorch (the optional extra: ``pip install "arboretum[polytope]"``); importing this
package, predicting, printing, plotting and loading a fitted model do not.
"""

from .estimator import ConvexPolytopeTreeClassifier, ConvexPolytopeTreeRegressor

__all__ = ["ConvexPolytopeTreeClassifier", "ConvexPolytopeTreeRegressor"]
