"""The combination loop and the tree of the winning combination (spec-002 §3.6, eq. 12).

``odt'_K = min_E . map(sodt) . kcombs_K``: every K-combination of candidate
rules is solved by the numba ``sodt`` (:mod:`._kernels`), in lexicographic
order, a chunk at a time so that a deadline can stop the loop between chunks;
the winning combination's tree is then rebuilt by :func:`sodt_tree`, a plain
Python transcription of the same recursion that also returns the argmin.

"At most K" (the default of the estimators) is ``min_{k = 0..K} odt'_k``;
ties go to the smaller ``k``, then to the earlier combination, then to the
earlier root in ``splits`` order (spec T11, G5, G20).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .._numba import n_words, pack_columns, pack_rows_mask
from ._kernels import (
    SQUARED,
    ZERO_ONE,
    ZERO_ONE_UNIT,
    Objective,
    leaf_cost,
    make_work,
    search_chunk,
)
from .rules import RuleSet

__all__ = ["Node", "Solution", "make_objective", "solve", "sodt_tree", "n_combinations", "leaf_value"]

#: Combinations solved per kernel call at first; doubled while a call takes under CHUNK_SECONDS.
FIRST_CHUNK = 256
CHUNK_SECONDS = 0.05


def make_objective(n_samples: int, *, labels: np.ndarray | None = None, n_classes: int = 0,
                   target: np.ndarray | None = None, weight: np.ndarray | None = None) -> Objective:
    """The leaf objective: 0-1 loss of ``labels`` (codes ``0 .. n_classes-1``) or squared error of ``target``.

    ``weight`` (non-negative floats) weighs each point; None means 1 each.
    """
    w = np.ones(n_samples) if weight is None else np.ascontiguousarray(weight, dtype=np.float64)
    if labels is not None:
        labels = np.ascontiguousarray(labels, dtype=np.int64)
        unit = weight is None or bool(np.all(w == 1.0))
        cls_bits = pack_columns(labels[:, None] == np.arange(n_classes)[None, :])
        return Objective(ZERO_ONE_UNIT if unit else ZERO_ONE, cls_bits, labels, w, np.zeros(n_samples),
                         np.zeros(n_classes))
    assert target is not None
    return Objective(SQUARED, np.zeros((1, n_words(n_samples)), dtype=np.uint64), np.zeros(n_samples, dtype=np.int64),
                     w, np.ascontiguousarray(target, dtype=np.float64), np.zeros(1))


def n_combinations(n_rules: int, max_splits: int, exact: bool) -> int:
    """Combinations the loop examines: ``C(M, K)``, or ``sum_{k <= K} C(M, k)`` for "at most K"."""
    if exact:
        return math.comb(n_rules, max_splits)
    return sum(math.comb(n_rules, k) for k in range(max_splits + 1))


@dataclass
class Node:
    """A node of a solved tree: a leaf (``rule == -1``) with its points, or a split."""

    rule: int
    points: np.ndarray  # boolean membership of the training points reaching the node
    left: "Node | None" = None
    right: "Node | None" = None

    def leaves(self) -> list["Node"]:
        if self.rule < 0:
            return [self]
        return self.left.leaves() + self.right.leaves()

    def rules(self) -> list[int]:
        if self.rule < 0:
            return []
        return [self.rule] + self.left.rules() + self.right.rules()

    def depth(self) -> int:
        return 0 if self.rule < 0 else 1 + max(self.left.depth(), self.right.depth())


def kmat(rules: RuleSet, i: int, j: int) -> int:
    """Kmat[i][j] (spec §2.2) from ``rules``' membership at the defining points of ``j``."""
    if i == j:
        return 0
    left = rules.left_mask(i)
    pts = [int(p) for p in rules.defs[j] if p >= 0]
    inside = left[pts]
    return 1 if inside.all() else (-1 if not inside.any() else 0)


def sodt_tree(comb, rules: RuleSet, obj: Objective, points: np.ndarray | None = None,
              nmin: int = 0, depth: int | None = None) -> tuple[float, Node | None]:
    """The optimal proper tree over exactly the rules ``comb`` (spec eq. 17), and its cost.

    A direct transcription of the spec's ``sodt`` with the constraints of
    §3.9; ``(inf, None)`` when no proper tree satisfies them.  Used to build
    the winning combination's tree, and as a reference in tests.
    """
    comb = [int(r) for r in comb]
    if points is None:
        points = np.ones(rules.n_samples, dtype=bool)
    left_masks = {r: rules.left_mask(r) for r in comb}
    K = {(i, j): kmat(rules, i, j) for i in comb for j in comb}

    def rec(S: list[int], pts: np.ndarray, dl: int | None) -> tuple[float, Node | None]:
        if not S:
            if int(pts.sum()) < nmin:
                return math.inf, None
            return float(leaf_cost(pack_rows_mask(pts), obj)), Node(-1, pts)
        if dl is not None and (dl == 0 or len(S) > 2 ** dl - 1):
            return math.inf, None
        best: tuple[float, Node | None] = (math.inf, None)
        for i in S:
            others = [j for j in S if j != i]
            if any(K[i, j] == 0 for j in others):
                continue
            plus = [j for j in others if K[i, j] == 1]
            minus = [j for j in others if K[i, j] == -1]
            nd = None if dl is None else dl - 1
            cl, tl = rec(plus, pts & left_masks[i], nd)
            if tl is None:
                continue
            cr, tr = rec(minus, pts & ~left_masks[i], nd)
            if tr is None:
                continue
            if cl + cr < best[0]:
                best = (cl + cr, Node(i, pts, tl, tr))
        return best

    return rec(comb, points, depth)


@dataclass
class Solution:
    """What :func:`solve` found."""

    cost: float
    tree: Node
    combination: tuple[int, ...]
    optimal: bool
    n_examined: int = 0
    n_total: int = 0
    history: list = field(default_factory=list)


def solve(rules: RuleSet, obj: Objective, max_splits: int, *, exact: bool = False, nmin: int = 0,
          depth: int | None = None, deadline: float | None = None,
          progress: Callable[[int, int, float], None] | None = None, incumbent: float | None = None) -> Solution:
    """The optimal proper tree with exactly (``exact``) or at most ``max_splits`` rules.

    Parameters
    ----------
    rules : RuleSet
    obj : Objective
    max_splits : int
        ``K``.
    exact : bool
        Only trees of exactly ``K`` rules (the paper's ``odt'_K``); else the
        best of ``k = 0 .. K``.
    nmin : int
        Fewest training points in a leaf.
    depth : int or None
        Most splits on a root-to-leaf path.
    deadline : float or None
        ``time.perf_counter()`` value at which to stop; the result is then the
        best found (``optimal=False``).
    progress : callable, optional
        Called between chunks with ``(examined, total, best cost)``.
    incumbent : float, optional
        The cost of a tree known to be feasible (e.g. a greedy tree over the
        same rules): the search starts with the bound just above it, so it
        skips every combination that cannot reach it (exact: a combination
        whose optimum is at most ``incumbent`` is still found, and the first
        minimiser in order still wins).  If no combination reaches it, the
        result has no tree.

    Returns
    -------
    Solution
        ``tree`` is None only when no tree satisfies the constraints and the
        loop completed (infeasible request); ``cost`` is then ``inf``.
    """
    M = rules.n_rules
    W = rules.pos.shape[1]
    all_bits = pack_rows_mask(np.ones(rules.n_samples, dtype=bool))
    pos = np.ascontiguousarray(rules.pos)
    defs = np.ascontiguousarray(rules.defs)
    dep = -1 if depth is None else int(depth)
    ks = [max_splits] if exact else list(range(0, max_splits + 1))
    total = sum(math.comb(M, k) for k in ks)
    best = np.array([math.inf if incumbent is None else float(np.nextafter(incumbent, math.inf))])
    best_k = -1
    best_comb = np.zeros(0, dtype=np.int64)
    examined = 0
    optimal = True
    chunk = FIRST_CHUNK
    for k in ks:
        if k > M:
            continue
        comb = np.arange(k, dtype=np.int64)
        this_best = np.zeros(k, dtype=np.int64)
        work = make_work(k, W)
        before = best[0]
        finished = False
        while not finished:
            if deadline is not None and time.perf_counter() >= deadline:
                optimal = False
                break
            t0 = time.perf_counter()
            n, finished = search_chunk(comb, chunk, pos, defs, all_bits, obj, nmin, dep, best, this_best, work)
            examined += int(n)
            if time.perf_counter() - t0 < CHUNK_SECONDS and chunk < 1 << 24:
                chunk *= 2
            if progress is not None:
                progress(examined, total, float(best[0]))
        if best[0] < before:
            best_k = k
            best_comb = this_best.copy()
        if not optimal:
            break
    if best_k < 0:
        return Solution(math.inf, None, (), optimal, examined, total)
    cost, tree = sodt_tree(best_comb, rules, obj, nmin=nmin, depth=depth)
    return Solution(cost, tree, tuple(int(r) for r in best_comb), optimal, examined, total)


def leaf_value(points: np.ndarray, *, labels=None, n_classes=0, target=None, weight=None):
    """``(counts, value)`` of a leaf for :class:`arboretum.tree.TreeBuilder`.

    Classification: weighted class counts and class proportions (uniform for
    an empty leaf); regression: ``[n]`` and ``[weighted mean]`` (0 for an empty leaf).
    """
    w = np.ones(points.shape[0]) if weight is None else weight
    if labels is not None:
        counts = np.bincount(labels[points], weights=w[points], minlength=n_classes)
        s = counts.sum()
        value = counts / s if s > 0 else np.full(n_classes, 1.0 / n_classes)
        return counts, value
    sw = float(w[points].sum())
    mean = float(np.dot(w[points], target[points]) / sw) if sw > 0 else 0.0
    return np.array([float(points.sum())]), np.array([mean])

