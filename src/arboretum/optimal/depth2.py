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
def depth2_roots(X, order, xs, stat_s, mode, n_stats, label, weight, target, nmin, max_k, d1, t_lo, t_hi,
                 best, rec):
    """Try the root splits ``x[:, d1] <= x[order[d1, t], d1]`` for ``t`` in ``[t_lo, t_hi)``.

    ``xs[d, t]`` is ``X[order[d, t], d]`` and ``stat_s[d, t]`` the index of
    ``order[d, t]``'s statistic (its class, or 0 for regression), both in
    sorted order so that the inner scan reads memory in sequence.
    ``best[k]`` (k = 1, 2, 3) holds the best cost found with k splits so far and
    ``rec[k]`` its tree: ``(d1, t1, d2 left, t2 left, d2 right, t2 right)``
    (-1 where that side is a leaf); only strictly better trees replace them.
    """
    N, D = X.shape
    side = np.zeros(N, dtype=np.int64)  # 0: left of the root, 1: right
    tot = np.zeros(2 * n_stats)
    pre = np.zeros(2 * n_stats)
    tmp = np.zeros(n_stats)
    cnt = np.zeros(2, dtype=np.int64)
    col1 = order[d1]
    for t1 in range(t_lo, t_hi):
        if xs[d1, t1] == xs[d1, t1 + 1]:
            continue  # not a boundary between distinct values
        nL = t1 + 1
        nR = N - nL
        side[:] = 1
        for u in range(nL):
            side[col1[u]] = 0
        tot[:] = 0.0
        for i in range(N):
            _add(tot[side[i] * n_stats:(side[i] + 1) * n_stats], i, mode, label, weight, target, 1.0)
        totL = tot[:n_stats]
        totR = tot[n_stats:]
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
                xcol = xs[d2]
                scol = stat_s[d2]
                pre[:] = 0.0
                cnt[:] = 0
                doneL = -1  # the left prefix size last evaluated (a prefix is evaluated once)
                doneR = -1
                for t in range(N - 1):
                    i = col[t]
                    sd = side[i]
                    cnt[sd] += 1
                    if mode == 2:
                        w = weight[i]
                        y = target[i]
                        base = sd * 3
                        pre[base] += w
                        pre[base + 1] += w * y
                        pre[base + 2] += w * y * y
                    else:
                        pre[sd * n_stats + scol[t]] += weight[i]
                    if xcol[t] == xcol[t + 1]:
                        continue
                    cL = cnt[0]
                    cR = cnt[1]
                    if cL != doneL and cL >= nmin and nL - cL >= nmin and cL < nL:
                        doneL = cL
                        for s in range(n_stats):
                            tmp[s] = totL[s] - pre[s]
                        c = _cost(pre[:n_stats], mode) + _cost(tmp, mode)
                        if c < sL:
                            sL = c
                            dL = d2
                            tL = t
                    if cR != doneR and cR >= nmin and nR - cR >= nmin and cR < nR:
                        doneR = cR
                        for s in range(n_stats):
                            tmp[s] = totR[s] - pre[n_stats + s]
                        c = _cost(pre[n_stats:], mode) + _cost(tmp, mode)
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
    xs = np.ascontiguousarray(np.take_along_axis(X.T, order, axis=1))
    stat_s = np.ascontiguousarray(obj.label[order]) if mode != 2 else np.zeros_like(order)
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
            depth2_roots(X, order, xs, stat_s, mode, n_stats, obj.label, obj.weight, obj.target, nmin, max_k,
                         d1, lo, hi, best, rec)
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
