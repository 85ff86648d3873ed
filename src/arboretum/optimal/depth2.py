"""Exact axis-parallel trees of depth at most 2 over sorted features (issue 20, item 4; spec §3.13).

For axis-parallel rules, a tree of depth <= 2 is a root split and, on each
side, a leaf or one more split.  For every root split (feature ``d1`` and a
threshold between two consecutive distinct values), one scan of every
feature's sorted order gives, for both sides at once, the best single split
of that side; the best tree with 1, 2 or 3 splits under that root follows.
That is ``O(D**2 * N**2 * C)`` work with no combinations at all, against
``C(N*D, 3)`` combinations for the generic He & Little DP.

It solves the same problem as the DP over the axis rules ``x_d <= x_{n,d}``
under "at most K" semantics whenever every proper tree of the request has
depth <= 2 (``max_splits <= 2``, or ``max_depth <= 2``).  Proof sketch: a
depth-2 tree found here splits a child on ``x_d <= v``; the child's data are
partitioned the same way by ``x_d <= v'`` with ``v'`` the largest value
``<= v`` among the child's points, and that rule's defining point lies in
the child's region, so the tree is proper (spec §2.2).  If no child point is
``<= v`` the split is trivial (an empty leaf), and removing it gives a tree
with fewer splits and the same cost.  Conversely every proper tree of depth
<= 2 is a tree searched here.  Tests check it against the DP.

Ties go to fewer splits; among trees of equal cost and size, the first root
in (feature, threshold) order, then the first child split.
"""

from __future__ import annotations

import math
import time

import numpy as np
from numba import njit

from .solver import Node, Solution

__all__ = ["applies", "solve_depth2"]


def applies(split_type: str, max_splits: int, exact: bool, max_depth: int | None) -> bool:
    """Whether a request is a depth-<=2 axis-parallel "at most K" problem."""
    return (split_type == "axis" and not exact and max_splits >= 1
            and (max_splits <= 2 or (max_depth is not None and max_depth <= 2)))


@njit(cache=True, inline="always")
def _cost(stats, mode):
    """Leaf cost from its statistics: classification (weights per class): total - max;
    regression ``(sw, swy, swyy)``: the squared error around the mean."""
    if mode == 2:
        sw = stats[0]
        if sw <= 0.0:
            return 0.0
        c = stats[2] - stats[1] * stats[1] / sw
        return c if c > 0.0 else 0.0
    total = 0.0
    best = 0.0
    for c in range(stats.shape[0]):
        total += stats[c]
        if stats[c] > best:
            best = stats[c]
    return max(total - best, 0.0)


@njit(cache=True, inline="always")
def _add(stats, i, mode, label, weight, target, sign):
    if mode == 2:
        w = weight[i] * sign
        stats[0] += w
        stats[1] += w * target[i]
        stats[2] += w * target[i] * target[i]
    else:
        stats[label[i]] += weight[i] * sign


@njit(cache=True)
def depth2_roots(X, order, mode, n_stats, label, weight, target, nmin, max_k, d1, t_lo, t_hi, best, rec):
    """Try the root splits ``x[:, d1] <= x[order[d1, t], d1]`` for ``t`` in ``[t_lo, t_hi)``.

    ``best[k]`` (k = 1, 2, 3) holds the best cost found with k splits so far and
    ``rec[k]`` its tree: ``(d1, t1, d2 left, t2 left, d2 right, t2 right)``
    (-1 where that side is a leaf); only strictly better trees replace them.
    """
    N, D = X.shape
    inL = np.zeros(N, dtype=np.bool_)
    totL = np.zeros(n_stats)
    totR = np.zeros(n_stats)
    preL = np.zeros(n_stats)
    preR = np.zeros(n_stats)
    tmp = np.zeros(n_stats)
    col1 = order[d1]
    for t1 in range(t_lo, t_hi):
        if X[col1[t1], d1] == X[col1[t1 + 1], d1]:
            continue  # not a boundary between distinct values
        nL = t1 + 1
        nR = N - nL
        inL[:] = False
        for u in range(nL):
            inL[col1[u]] = True
        totL[:] = 0.0
        totR[:] = 0.0
        for i in range(N):
            if inL[i]:
                _add(totL, i, mode, label, weight, target, 1.0)
            else:
                _add(totR, i, mode, label, weight, target, 1.0)
        leafL = _cost(totL, mode) if nL >= nmin else np.inf
        leafR = _cost(totR, mode) if nR >= nmin else np.inf
        sL = np.inf
        sR = np.inf
        dL = -1
        tL = -1
        dR = -1
        tR = -1
        if max_k >= 2:
            for d2 in range(D):
                col = order[d2]
                preL[:] = 0.0
                preR[:] = 0.0
                cL = 0
                cR = 0
                for t in range(N - 1):
                    i = col[t]
                    if inL[i]:
                        _add(preL, i, mode, label, weight, target, 1.0)
                        cL += 1
                    else:
                        _add(preR, i, mode, label, weight, target, 1.0)
                        cR += 1
                    if X[i, d2] == X[col[t + 1], d2]:
                        continue
                    if cL >= nmin and nL - cL >= nmin and cL > 0 and cL < nL:
                        for s in range(n_stats):
                            tmp[s] = totL[s] - preL[s]
                        c = _cost(preL, mode) + _cost(tmp, mode)
                        if c < sL:
                            sL = c
                            dL = d2
                            tL = t
                    if cR >= nmin and nR - cR >= nmin and cR > 0 and cR < nR:
                        for s in range(n_stats):
                            tmp[s] = totR[s] - preR[s]
                        c = _cost(preR, mode) + _cost(tmp, mode)
                        if c < sR:
                            sR = c
                            dR = d2
                            tR = t
        # k = 1, 2 (left or right child split), 3
        c = leafL + leafR
        if c < best[1]:
            best[1] = c
            rec[1, 0] = d1
            rec[1, 1] = t1
            rec[1, 2] = -1
            rec[1, 3] = -1
            rec[1, 4] = -1
            rec[1, 5] = -1
        if max_k >= 2:
            c = sL + leafR
            if c < best[2]:
                best[2] = c
                rec[2, 0] = d1
                rec[2, 1] = t1
                rec[2, 2] = dL
                rec[2, 3] = tL
                rec[2, 4] = -1
                rec[2, 5] = -1
            c = leafL + sR
            if c < best[2]:
                best[2] = c
                rec[2, 0] = d1
                rec[2, 1] = t1
                rec[2, 2] = -1
                rec[2, 3] = -1
                rec[2, 4] = dR
                rec[2, 5] = tR
        if max_k >= 3:
            c = sL + sR
            if c < best[3]:
                best[3] = c
                rec[3, 0] = d1
                rec[3, 1] = t1
                rec[3, 2] = dL
                rec[3, 3] = tL
                rec[3, 4] = dR
                rec[3, 5] = tR


def _axis_rule(X: np.ndarray, order: np.ndarray, d: int, t: int, region: np.ndarray) -> int:
    """Index (in :func:`arboretum.optimal.rules.axis_rules`) of the rule ``x_d <= x[order[d, t], d]``
    rewritten with a defining point inside ``region``: the region's point of largest ``x_d`` at or
    below the threshold (first such sample)."""
    N = X.shape[0]
    v = X[order[d, t], d]
    cand = np.flatnonzero(region & (X[:, d] <= v))
    top = X[cand, d].max()
    n = int(cand[X[cand, d] == top][0])
    return d * N + n


def solve_depth2(X: np.ndarray, obj, max_splits: int, *, nmin: int = 0, depth: int | None = None,
                 deadline: float | None = None) -> Solution:
    """The optimal axis-parallel tree with at most ``max_splits`` splits and depth <= 2 (see the module).

    ``obj`` is the :class:`arboretum.optimal._kernels.Objective` of the DP
    (same leaf costs); returns a :class:`Solution` whose tree uses the rule
    indices of ``axis_rules(X)``.
    """
    from ._kernels import SQUARED, leaf_cost
    from .._numba import pack_rows_mask

    X = np.ascontiguousarray(X, dtype=np.float64)
    N, D = X.shape
    max_k = min(max_splits, 3 if depth is None or depth >= 2 else 1)
    mode = 2 if obj.mode == SQUARED else 1
    n_stats = 3 if mode == 2 else obj.counts.shape[0]
    order = np.ascontiguousarray(np.argsort(X, axis=0, kind="stable").T)
    best = np.full(4, np.inf)
    rec = np.full((4, 6), -1, dtype=np.int64)
    everything = np.ones(N, dtype=bool)
    best[0] = float(leaf_cost(pack_rows_mask(everything), obj)) if N >= nmin else np.inf
    optimal = True
    examined = 0
    step = max(1, 2_000_000 // max(1, N * D))  # roots per kernel call: about 2e6 point visits x D
    for d1 in range(D):
        for lo in range(0, N - 1, step):
            if deadline is not None and time.perf_counter() >= deadline:
                optimal = False
                break
            hi = min(N - 1, lo + step)
            depth2_roots(X, order, mode, n_stats, obj.label, obj.weight, obj.target, nmin, max_k, d1, lo, hi,
                         best, rec)
            examined += hi - lo
        if not optimal:
            break
    k = int(np.argmin(best))  # first minimum: fewest splits
    if not np.isfinite(best[k]):
        return Solution(math.inf, None, (), optimal, examined, D * (N - 1))

    def leaf(mask):
        return Node(-1, mask)

    if k == 0:
        return Solution(float(best[0]), leaf(everything), (), optimal, examined, D * (N - 1))
    d1, t1, dL, tL, dR, tR = (int(v) for v in rec[k])
    root_rule = _axis_rule(X, order, d1, t1, everything)
    left = X[:, d1] <= X[order[d1, t1], d1]

    def side(mask, d2, t2):
        if d2 < 0:
            return leaf(mask)
        r = _axis_rule(X, order, d2, t2, mask)
        go = X[:, d2] <= X[order[d2, t2], d2]
        return Node(r, mask, leaf(mask & go), leaf(mask & ~go))

    tree = Node(root_rule, everything, side(left, dL, tL), side(~left, dR, tR))
    return Solution(float(best[k]), tree, tuple(tree.rules()), optimal, examined, D * (N - 1))
