"""Candidate trees that seed MAPTree's search with good incumbents.

Seeding expands the OR nodes along a candidate tree before the best-first
search starts, so that the candidate and every pruning of it are partial
solutions with exact upper bounds.  The search's answer is then never worse
than the best pruning of any candidate, from the very first second; the
certificate is unaffected.
"""

from __future__ import annotations

from typing import Callable, Iterator

import numpy as np
from sklearn.tree import BaseDecisionTree, DecisionTreeClassifier, DecisionTreeRegressor

from ..tree import BINARY, Tree, TreeBuilder

__all__ = [
    "Candidates", "SplitFn", "cart_candidates", "cart_regression_candidates", "sklearn_tree", "tree_splits",
]

SplitFn = Callable[[tuple], int]
#: What the CART candidate generators yield: ``(depth, fit)``, ``fit()`` returning a split function.
Candidates = Iterator[tuple[int | None, Callable[[], SplitFn]]]

#: Depths of the CART candidates (None: grown until pure).
CART_DEPTHS = (2, 3, 4, 5, 6, None)


def cart_candidates(
    X: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None = None
) -> Candidates:
    """CART trees (Gini and entropy, depths 2-6 and unlimited) on binary ``X``, cheapest first.

    A generator of ``(depth, fit)``, shallowest first (depth 2 Gini, depth 2
    entropy, depth 3 Gini, ...): ``fit()`` fits the tree and returns its
    split function, so a caller under a time limit fits only those that fit
    in its budget.
    """
    yield from _cart_trees(DecisionTreeClassifier, ("gini", "entropy"), X, y, sample_weight)


def cart_regression_candidates(
    X: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None = None
) -> Candidates:
    """CART regression trees (squared and absolute error, depths 2-6 and unlimited) on binary ``X``.

    A generator, cheapest first, as :func:`cart_candidates`.  ``sample_weight``
    (integer replication weights) is passed to CART, which then grows the
    same trees as on the replicated rows.  Absolute error is left out above
    5,000 samples (CART's absolute error is quadratic in the number of samples).
    """
    criteria = ("squared_error",) if X.shape[0] > 5000 else ("squared_error", "absolute_error")
    yield from _cart_trees(DecisionTreeRegressor, criteria, X, y, sample_weight)


def _cart_trees(
    cls: type[BaseDecisionTree], criteria: tuple[str, ...], X: np.ndarray, y: np.ndarray,
    sample_weight: np.ndarray | None,
) -> Candidates:
    """``(depth, fit)`` of ``cls`` trees of every depth of :data:`CART_DEPTHS` and criterion, in that
    order: ``fit()`` fits the tree and returns its split function."""
    Xf = np.asarray(X, dtype=np.float32)  # converted once, not by every fit

    def fit(depth: int | None, criterion: str) -> SplitFn:
        est = cls(max_depth=depth, criterion=criterion, random_state=0)
        est.fit(Xf, y, sample_weight=sample_weight)
        return tree_splits(sklearn_tree(est, X.shape[1]), X.shape[1])

    for depth in CART_DEPTHS:
        for criterion in criteria:
            yield depth, lambda depth=depth, criterion=criterion: fit(depth, criterion)


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
