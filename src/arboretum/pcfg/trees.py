"""Turn derivations of PCFG* into :class:`arboretum.tree.Tree` objects.

A grammar split sends ``code[g] <= m`` left, where ``g`` is an ordinal group
of the estimator's :class:`~arboretum.binarizer.Binarizer` and ``m`` indexes
its questions in increasing order (:meth:`Binarizer.ordinal_transform`).  The
question ``splits_[groups_[g][m]]`` is the raw split that sends exactly those
values left (``x <= t`` for a numeric column, ``colour == red`` for a one-hot
question, ``x == 0`` for a 0/1 column), so the resulting tree routes raw data
exactly as the grammar routes codes.  Leaves (and internal nodes) carry the
training label counts and the Dirichlet posterior predictive
``(n_c + rho_c) / (|N| + sum(rho))``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..binarizer import Binarizer
from ..tree import CATEGORY, LEAF, Tree
from .grammar import SampledTrees
from .store import NodeStore

__all__ = ["TreeFactory"]


class TreeFactory:
    """Build :class:`~arboretum.tree.Tree` objects from sampled or MAP derivations.

    Parameters
    ----------
    store : NodeStore
    binarizer : Binarizer
        The fitted discretiser whose ordinal groups are the grammar's features.
    rho : ndarray of float, shape (n_classes,)
        Dirichlet concentrations of the leaves.
    classes : ndarray
        Class labels, in the order of the count columns.
    feature_names : sequence of str, optional
        Names of the raw columns.
    """

    def __init__(self, store: NodeStore, binarizer: Binarizer, rho: np.ndarray, classes: np.ndarray,
                 feature_names: Sequence[str] | None = None) -> None:
        self.store = store
        self.classes = classes
        self.n_features = int(binarizer.n_features_in_)
        self.feature_names = None if feature_names is None else [str(n) for n in feature_names]
        self.feature_categories = binarizer.feature_categories()
        groups = binarizer.groups_
        width = max([1] + [len(g) for g in groups])
        n_groups = max(1, len(groups))
        self.kind = np.full((n_groups, width), LEAF, dtype=np.int8)
        self.column = np.full((n_groups, width), -1, dtype=np.int64)
        self.threshold = np.full((n_groups, width), np.nan)
        self.category = np.full((n_groups, width), np.nan)
        for g, cols in enumerate(groups):
            for m, k in enumerate(cols.tolist()):
                s = binarizer.splits_[k]
                self.kind[g, m], self.column[g, m], self.threshold[g, m] = s.kind, s.column, s.threshold
                if s.kind == CATEGORY:
                    self.category[g, m] = s.categories[0]
        counts = store.counts.astype(np.float64)
        self.counts = counts
        self.value = (counts + rho) / (counts.sum(axis=1, keepdims=True) + rho.sum())

    def _columns(self, trees: SampledTrees, p0: int, p1: int) -> tuple[np.ndarray, ...]:
        """Node columns of positions ``p0 .. p1 - 1`` of ``trees`` (vectorised over many trees)."""
        s = self.store
        edge = trees.edge[p0:p1]
        internal = edge >= 0
        e = np.where(internal, edge, 0)
        edge_f, edge_m = (s.edge_f, s.edge_m) if s.n_edges else (np.zeros(1, np.int32), np.zeros(1, np.int32))
        g = np.where(internal, edge_f[e], 0)
        m = np.where(internal, edge_m[e], 0)
        kind = np.where(internal, self.kind[g, m], LEAF).astype(np.int8)
        feature = np.where(internal, self.column[g, m], -1)
        threshold = np.where(internal, self.threshold[g, m], np.nan)
        category = np.where(internal, self.category[g, m], np.nan)
        nodes = trees.node[p0:p1]
        left = np.where(internal, trees.left[p0:p1], -1)
        right = np.where(internal, trees.right[p0:p1], -1)
        return (left, right, kind, feature, threshold, self.value[nodes], self.counts[nodes], trees.depth[p0:p1],
                category)

    def _tree(self, columns: tuple[np.ndarray, ...], offset: int, template: Tree | None = None) -> Tree:
        """One tree from its node columns; validated by :class:`Tree` unless ``template`` is given.

        With a ``template`` (a validated tree of the same factory) the node
        arrays are set on a shallow copy of it instead: :class:`Tree`'s checks
        cost about 80 microseconds per tree, more than drawing it, and the
        derivations of the grammar are valid by construction (the tests compare
        both paths on many samples).
        """
        left, right, kind, feature, threshold, value, counts, depth, category = columns
        internal = kind != LEAF
        arrays = {
            "children_left": np.where(internal, left - offset, -1).astype(np.int64, copy=False),
            "children_right": np.where(internal, right - offset, -1).astype(np.int64, copy=False),
            "split_kind": kind.astype(np.int8),
            "feature": feature.astype(np.int64),
            "threshold": threshold.astype(np.float64),
            "value": value.copy(),
            "counts": counts.copy(),
            "depth": depth.astype(np.int64),
        }
        categories = {int(i): np.array([category[i]]) for i in np.flatnonzero(kind == CATEGORY).tolist()}
        if template is None:
            return Tree(**arrays, n_features=self.n_features, classes=self.classes,
                        feature_names=self.feature_names, categories=categories,
                        feature_categories=self.feature_categories)
        tree = object.__new__(Tree)
        tree.__dict__.update(template.__dict__)
        tree.__dict__.update(arrays)
        tree.categories = categories
        tree.coefs = {}
        return tree

    def build(self, trees: SampledTrees, t: int) -> Tree:
        """Return tree ``t`` of ``trees`` as a :class:`~arboretum.tree.Tree`."""
        p0, p1 = int(trees.ptr[t]), int(trees.ptr[t + 1])
        return self._tree(self._columns(trees, p0, p1), p0)

    def build_all(self, trees: SampledTrees, validate: bool = False) -> list[Tree]:
        """All trees of ``trees``, in order.

        The first tree is always built through the validating :class:`Tree`
        constructor; with ``validate=False`` the others reuse it as a template
        (see :meth:`_tree`).
        """
        if trees.n_trees == 0:
            return []
        columns = self._columns(trees, 0, int(trees.ptr[-1]))
        ptr = trees.ptr.tolist()
        out: list[Tree] = []
        template = None
        for t in range(trees.n_trees):
            tree = self._tree(tuple(c[ptr[t]:ptr[t + 1]] for c in columns), ptr[t], template)
            if not validate and template is None:
                template = tree
            out.append(tree)
        return out
