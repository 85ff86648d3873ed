"""Helpers shared by the polytope tree tests (``test_polytope*.py``)."""

from __future__ import annotations

import numpy as np

from arboretum import ConvexPolytopeTreeClassifier


def t64(x):
    """``x`` as a float64 torch tensor (the tests' gradient checks run in float64)."""
    import torch

    return torch.tensor(x, dtype=torch.float64)


def ring(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The spec's replica (§4.2): U([-1, 1]^2), class 1 iff 0.5 < |x| < 0.8."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 2))
    r = np.hypot(*X.T)
    return X, ((r > 0.5) & (r < 0.8)).astype(int)


def quick(**kw):
    """A small, deterministic fit for behaviour tests."""
    return ConvexPolytopeTreeClassifier(**{"epochs": 15, "refine_epochs": 5, "n_restarts": 1, "max_facets": 8,
                                           "random_state": 0, "time_limit": None, **kw})
