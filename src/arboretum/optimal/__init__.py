"""He & Little's provably optimal decision trees with arbitrary splitting rules (spec-002).

:class:`OptimalTreeClassifier` and :class:`OptimalTreeRegressor` (:mod:`.estimator`); the
candidate rules (:mod:`.rules`), the numba dynamic programme (:mod:`._kernels`) and the
combination loop (:mod:`.solver`); a user's rules and objective (:mod:`.user`).
"""

from .estimator import OptimalTreeClassifier, OptimalTreeRegressor
from .user import CandidateRules, LeafObjective

__all__ = ["OptimalTreeClassifier", "OptimalTreeRegressor", "CandidateRules", "LeafObjective"]
