"""Turn derivations of PCFG* into :class:`arboretum.tree.Tree` objects.

A grammar split sends ``code[f] <= m`` left; :class:`~arboretum.pcfg.binning.FeatureBinner`
knows the raw threshold ``t`` with ``x <= t  <=>  code(x) <= m``, so the
resulting ``THRESHOLD`` split (``BINARY`` for 0/1 features) routes raw data
exactly as the grammar routes codes.  Leaves (and internal nodes) carry the
training label counts and the Dirichlet posterior predictive
``(n_c + alpha_c) / (|N| + sum(alpha))``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..tree import BINARY, LEAF, THRESHOLD, Tree
from .binning import FeatureBinner
from .grammar import SampledTrees
from .store import NodeStore

__all__ = ["TreeFactory"]


class TreeFactory:
    """Build :class:`~arboretum.tree.Tree` objects from sampled or MAP derivations.

    Parameters
    ----------
    store : NodeStore
    binner : FeatureBinner
    alpha : ndarray of float, shape (n_classes,)
    classes : ndarray
        Class labels, in the order of the count columns.
    feature_names : sequence of str, optional
    """

    def __init__(self, store: NodeStore, binner: FeatureBinner, alpha: np.ndarray, classes: np.ndarray,
                 feature_names: Sequence[str] | None = None) -> None:
        self.store = store
        self.classes = classes
        self.feature_names = None if feature_names is None else [str(n) for n in feature_names]
        width = max(1, max(t.size for t in binner.thresholds_))
        self.thresholds = np.full((store.n_features, width), np.nan)
        for f, t in enumerate(binner.thresholds_):
            self.thresholds[f, : t.size] = t
        self.kind_of_feature = np.where(binner.binary_, BINARY, THRESHOLD).astype(np.int8)
        counts = store.counts.astype(np.float64)
        self.counts = counts
        self.value = (counts + alpha) / (counts.sum(axis=1, keepdims=True) + alpha.sum())

    def _columns(self, trees: SampledTrees, p0: int, p1: int) -> tuple[np.ndarray, ...]:
        """Node columns of positions ``p0 .. p1 - 1`` of ``trees`` (vectorised over many trees)."""
        s = self.store
        edge = trees.edge[p0:p1]
        internal = edge >= 0
        e = np.where(internal, edge, 0)
        edge_f, edge_m = (s.edge_f, s.edge_m) if s.n_edges else (np.zeros(1, np.int32), np.zeros(1, np.int32))
        feature = np.where(internal, edge_f[e], -1)
        safe = np.maximum(feature, 0)
        kind = np.where(internal, self.kind_of_feature[safe], LEAF).astype(np.int8)
        threshold = np.where(internal, self.thresholds[safe, edge_m[e]], np.nan)
        threshold[kind == BINARY] = 0.5
        nodes = trees.node[p0:p1]
        left = np.where(internal, trees.left[p0:p1], -1)
        right = np.where(internal, trees.right[p0:p1], -1)
        return left, right, kind, feature, threshold, self.value[nodes], self.counts[nodes], trees.depth[p0:p1]

    def _tree(self, columns: tuple[np.ndarray, ...], offset: int, template: Tree | None = None) -> Tree:
        """One tree from its node columns; validated by :class:`Tree` unless ``template`` is given.

        With a ``template`` (a validated tree of the same factory) the node
        arrays are set on a shallow copy of it instead: :class:`Tree`'s checks
        cost about 80 microseconds per tree, more than drawing it, and the
        derivations of the grammar are valid by construction (the tests compare
        both paths on many samples).
        """
        left, right, kind, feature, threshold, value, counts, depth = columns
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
        if template is None:
            return Tree(**arrays, n_features=self.store.n_features, classes=self.classes,
                        feature_names=self.feature_names)
        tree = object.__new__(Tree)
        tree.__dict__.update(template.__dict__)
        tree.__dict__.update(arrays)
        tree.categories = {}
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
