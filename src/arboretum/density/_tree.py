"""The density models as the shared :class:`arboretum.Tree` (task ``"density"``).

- A density tree's multiway split on feature ``j`` into blocks ``B_1 .. B_b`` becomes a chain of
  ``CATEGORY`` splits: ``x_j in B_1`` (yes: child 1; no: ``x_j in B_2`` ... the last block takes the
  last "no").  The leaves, and so the density, are the same.
- A rule list (and any model whose leaves are read in order, like the DET baseline) becomes a cascade
  of ``CONJUNCTION`` splits: rule ``i`` true -> leaf ``i``, else the next rule; the last leaf is the
  "else".

Every node's ``value`` is ``[P, f, V]`` (mass, mass per configuration, number of configurations) of its
region and ``counts`` its training rows, so ``export_text``, ``to_json`` and ``arboretum.plot`` print and
draw the paper's P, f and V.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tree import CATEGORY, CONJUNCTION, LEAF, Tree

__all__ = ["density_tree"]


def _codes(mask: int) -> list[int]:
    return [c for c in range(int(mask).bit_length()) if (int(mask) >> c) & 1]


class _Arrays:
    def __init__(self) -> None:
        self.rows: list[list] = []  # kind, feature, left, right, depth, P, V, n
        self.categories: dict[int, list[int]] = {}
        self.conjunctions: dict[int, list] = {}

    def add(self, kind: int, feature: int, depth: int, p: float, v: float, n: float) -> int:
        self.rows.append([kind, feature, -1, -1, depth, p, v, n])
        return len(self.rows) - 1

    def _tree(self, est: Any, kinds: list, p: np.ndarray, f: np.ndarray, v: np.ndarray) -> Tree:
        r = self.rows
        return Tree([x[2] for x in r], [x[3] for x in r], kinds, [x[1] for x in r],
                    [np.nan] * len(r), np.column_stack([p, f, v]), np.array([[x[7]] for x in r], dtype=np.float64),
                    [x[4] for x in r], len(est.categories_), task="density", feature_names=est._names(),
                    feature_categories=[list(c) for c in est.categories_], categories=self.categories,
                    conjunctions=self.conjunctions)


def _from_nodes(est: Any) -> Tree:
    parent, feature, boxes = est.node_parent_, est.node_feature_, est.node_boxes_
    n_nodes = len(parent)
    kids: list[list[int]] = [[] for _ in range(n_nodes)]
    for i in range(1, n_nodes):
        kids[int(parent[i])].append(i)
    leaf_of = {i: k for k, i in enumerate(i for i in range(n_nodes) if not kids[i])}
    P, V, N = np.zeros(n_nodes), np.zeros(n_nodes), np.zeros(n_nodes)
    for i in range(n_nodes - 1, -1, -1):  # children come after their parent in pre-order
        if not kids[i]:
            k = leaf_of[i]
            P[i], V[i], N[i] = est.leaf_probabilities_[k], est.leaf_volumes_[k], est.leaf_counts_[k]
        else:
            P[i], V[i], N[i] = (sum(A[c] for c in kids[i]) for A in (P, V, N))
    out = _Arrays()

    def emit(i: int, depth: int) -> int:
        if not kids[i]:
            return out.add(LEAF, -1, depth, P[i], V[i], N[i])
        return chain(kids[i], int(feature[i]), depth)

    def chain(group: list[int], j: int, depth: int) -> int:
        if len(group) == 1:
            return emit(group[0], depth)
        me = out.add(CATEGORY, j, depth, *(sum(A[c] for c in group) for A in (P, V, N)))
        out.categories[me] = _codes(boxes[group[0], j])
        left = emit(group[0], depth + 1)
        right = chain(group[1:], j, depth + 1)
        out.rows[me][2], out.rows[me][3] = left, right
        return me

    emit(0, 0)
    return out._tree(est, *_pvf(out))


def _from_leaves(est: Any) -> Tree:
    """Leaves read in order (first match): a cascade of CONJUNCTION splits."""
    full = est._full_box()
    k = est.n_leaves_
    P, V, N = est.leaf_probabilities_, est.leaf_volumes_, est.leaf_counts_
    out = _Arrays()
    prev = -1
    for r in range(k):
        rest = slice(r, k)
        if r < k - 1:
            me = out.add(CONJUNCTION, -1, r, P[rest].sum(), V[rest].sum(), N[rest].sum())
            conds = [(j, _codes(m)) for j, m in enumerate(int(x) for x in est.leaf_boxes_[r]) if m != full[j]]
            if not conds:
                raise ValueError(f"leaf {r} of {type(est).__name__} holds everything but is not the last one")
            out.conjunctions[me] = conds
            leaf = out.add(LEAF, -1, r + 1, P[r], V[r], N[r])
            out.rows[me][2] = leaf
        else:
            me = out.add(LEAF, -1, r, P[r], V[r], N[r])
        if prev >= 0:
            out.rows[prev][3] = me
        prev = me
    return out._tree(est, *_pvf(out))


def _pvf(out: _Arrays) -> tuple:
    kinds = [x[0] for x in out.rows]
    p = np.array([x[5] for x in out.rows], dtype=np.float64)
    v = np.array([x[6] for x in out.rows], dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        f = np.where(v > 0, p / v, 0.0)
    return kinds, p, f, v


def density_tree(est: Any) -> Tree:
    """The fitted density model ``est`` as a :class:`~arboretum.Tree` (module docstring)."""
    if hasattr(est, "node_parent_"):
        return _from_nodes(est)
    return _from_leaves(est)
