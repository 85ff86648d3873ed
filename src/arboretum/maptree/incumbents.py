"""Candidate trees that seed MAPTree's search with good incumbents.

Seeding expands the OR nodes along a candidate tree before the best-first
search starts, so that the candidate and every pruning of it are partial
solutions with exact upper bounds.  The search's answer is then never worse
than the best pruning of any candidate, from the very first second; the
certificate is unaffected.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from sklearn.tree import DecisionTreeClassifier

from ..tree import BINARY, Tree

__all__ = ["cart_candidates", "tree_splits"]

SplitFn = Callable[[tuple], int]

#: Depths of the CART candidates (None: grown until pure).
CART_DEPTHS = (2, 3, 4, 5, 6, None)


def _sklearn_splits(estimator: DecisionTreeClassifier) -> SplitFn:
    t = estimator.tree_

    def splits(path: tuple) -> int:
        node = 0
        for _, side in path:  # binary features: x <= 0.5 goes left (x = 0)
            node = t.children_right[node] if side else t.children_left[node]
        return int(t.feature[node]) if t.children_left[node] >= 0 else -1

    return splits


def cart_candidates(X: np.ndarray, y: np.ndarray) -> list[SplitFn]:
    """CART trees (Gini and entropy, depths 2-6 and unlimited) on binary ``X``."""
    out = []
    for depth in CART_DEPTHS:
        for criterion in ("gini", "entropy"):
            est = DecisionTreeClassifier(max_depth=depth, criterion=criterion, random_state=0)
            out.append(_sklearn_splits(est.fit(X, y)))
    return out


def tree_splits(tree: Tree, n_features: int) -> SplitFn:
    """Split function of a user-given :class:`~arboretum.tree.Tree` with BINARY splits."""
    if not isinstance(tree, Tree):
        raise TypeError(f"initial_trees must hold arboretum.Tree objects; got {type(tree).__name__}")
    internal = tree.children_left >= 0
    if np.any(tree.split_kind[internal] != BINARY):
        raise ValueError("initial_trees: only trees with binary-feature splits can seed MAPTree")
    if tree.n_features != n_features:
        raise ValueError(
            f"initial_trees: a tree has {tree.n_features} features but X has {n_features}"
        )

    def splits(path: tuple) -> int:
        node = 0
        for _, side in path:
            node = tree.children_right[node] if side else tree.children_left[node]
        return int(tree.feature[node]) if tree.children_left[node] >= 0 else -1

    return splits
