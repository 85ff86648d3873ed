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
from sklearn.tree import BaseDecisionTree, DecisionTreeClassifier, DecisionTreeRegressor

from ..tree import BINARY, Tree, TreeBuilder

__all__ = ["cart_candidates", "cart_regression_candidates", "sklearn_tree", "tree_splits"]

SplitFn = Callable[[tuple], int]

#: Depths of the CART candidates (None: grown until pure).
CART_DEPTHS = (2, 3, 4, 5, 6, None)


def cart_candidates(X: np.ndarray, y: np.ndarray) -> list[SplitFn]:
    """CART trees (Gini and entropy, depths 2-6 and unlimited) on binary ``X``."""
    out = []
    for depth in CART_DEPTHS:
        for criterion in ("gini", "entropy"):
            est = DecisionTreeClassifier(max_depth=depth, criterion=criterion, random_state=0)
            out.append(tree_splits(sklearn_tree(est.fit(X, y), X.shape[1]), X.shape[1]))
    return out


def cart_regression_candidates(
    X: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None = None
) -> list[SplitFn]:
    """CART regression trees (squared and absolute error, depths 2-6 and unlimited) on binary ``X``.

    ``sample_weight`` (integer replication weights) is passed to CART, which
    then grows the same trees as on the replicated rows.
    """
    out = []
    for depth in CART_DEPTHS:
        for criterion in ("squared_error", "absolute_error"):
            if criterion == "absolute_error" and X.shape[0] > 5000:
                continue  # CART's absolute error is quadratic in the number of samples
            est = DecisionTreeRegressor(max_depth=depth, criterion=criterion, random_state=0)
            est.fit(X, y, sample_weight=sample_weight)
            out.append(tree_splits(sklearn_tree(est, X.shape[1]), X.shape[1]))
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


def sklearn_tree(estimator: BaseDecisionTree, n_features: int) -> Tree:
    """A fitted scikit-learn tree (classifier or regressor) on binary features as a :class:`~arboretum.tree.Tree`.

    Every split becomes a BINARY split (scikit-learn sends ``x <= t`` left,
    which for 0/1 features with ``0 <= t < 1`` is ``x == 0``).  Counts and
    values are left empty: the tree is meant for scoring, e.g. with
    :func:`arboretum.bayes.log_posterior`.
    """
    t = estimator.tree_
    b = TreeBuilder(n_features)
    stack = [(0, b.add_node(np.zeros(2), np.full(2, 0.5), 0), 0)]
    while stack:
        node, me, depth = stack.pop()
        if t.children_left[node] < 0:
            continue
        if not 0.0 <= t.threshold[node] < 1.0:
            raise ValueError(f"node {node} has threshold {t.threshold[node]}: not a binary-feature split")
        left = b.add_node(np.zeros(2), np.full(2, 0.5), depth + 1)
        right = b.add_node(np.zeros(2), np.full(2, 0.5), depth + 1)
        b.set_split(me, BINARY, int(t.feature[node]), 0.5, left, right)
        stack += [(t.children_left[node], left, depth + 1), (t.children_right[node], right, depth + 1)]
    return b.build()
