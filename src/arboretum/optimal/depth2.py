"""Numba kernels of the axis-parallel exact path: trees of depth <= 2 over sorted features (issue 20, item 4).

A subset of the training points is held as ``ords[d, :m]`` (its point indices
in increasing order of feature ``d``) and ``vals[d, :m]`` (their values).  For
axis-parallel rules a tree of depth <= 2 is a root split and, on each side, a
leaf or one more split.  :func:`scan_root` evaluates one root split
``x_d1 <= vals[d1, t]``: one pass over every feature's sorted order gives, for
both sides at once, the leaf cost and the best single split, so the best tree
with 1, 2 or 3 splits under that root (MurTree's and ConTree's depth-2
specialisation).  :func:`depth2_search` runs over the root splits of one or
more root features in (feature, threshold) order and skips the roots that a
bound proves useless:

**Similarity bound** (ConTree's, MurTree's "similarity lower bound").  Let
``a(t)`` be the cost of the best tree with at most ``k`` splits and depth <= 2
whose root is ``x_d1 <= v_t``, and let ``t < t'`` be two roots of the same
feature; ``M`` are the points that move from the right side to the left.  For
the weighted 0-1 loss with ``min_samples_leaf <= 1``,
``a(t') >= a(t) - w(M)``.  Proof: take the best tree under root ``t'`` and
keep its two subtrees under root ``t``.  The left subtree now sees a subset of
its points (``L_t`` is ``L_t'`` minus ``M``): its cost cannot grow (each
leaf's misclassified weight over a subset is at most that over the superset,
and re-labelling the leaf by its new majority only lowers it).  The right
subtree sees its points plus ``M``: its cost grows by at most ``w(M)``.  A
split left with an empty side is dropped (fewer splits, same cost, no deeper,
and no leaf is empty, so ``min_samples_leaf <= 1`` still holds).  So a tree
of cost ``<= a(t') + w(M)`` exists under root ``t``.  Hence a root whose
bound ``a(t) - w(M)`` is at least the best cost found (plus a hair, so that
ties with fewer splits or earlier rules are still examined) cannot improve on
it and is skipped.  The bound is valid for every ``k``, so the search also
skips roots against an external bound ``bound`` (from a parent problem).
For squared error, or ``min_samples_leaf >= 2``, the bound does not hold and
no root is skipped (the search is still exact).

**Incumbent**: before the ordered scan the best single split (the greedy root)
is evaluated once, so the skipping starts with a good bound.

The result is the first minimiser of ``(cost, number of splits)`` in root
order (feature, then threshold), then in the order left child before right
child, which is the tie rule of the former depth-2 solver.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["applies", "solve_depth2", "scan_root", "depth2_search", "leaf_of", "split_subset"]


def applies(split_type: str, max_splits: int, exact: bool, max_depth: int | None) -> bool:
    """Whether a request is a depth-<=2 axis-parallel "at most K" problem (kept for callers of the
    former depth-2 solver; :func:`arboretum.optimal.axis.applies` covers every axis request)."""
    return (split_type == "axis" and not exact and max_splits >= 1
            and (max_splits <= 2 or (max_depth is not None and max_depth <= 2)))


@njit(cache=True, inline="always")
def _cost_at(stats, lo, n_stats, mode):
    """Leaf cost from ``stats[lo:lo + n_stats]``: classification (weights per class): total - max;
    regression ``(sw, swy, swyy)``: the squared error around the weighted mean."""
    if mode == 2:
        sw = stats[lo]
        if sw <= 0.0:
            return 0.0
        c = stats[lo + 2] - stats[lo + 1] * stats[lo + 1] / sw
        return c if c > 0.0 else 0.0
    total = 0.0
    best = 0.0
    for c in range(n_stats):
        v = stats[lo + c]
        total += v
        if v > best:
            best = v
    return max(total - best, 0.0)


@njit(cache=True, inline="always")
def _cost(stats, mode):
    """Leaf cost from its statistics: classification (weights per class): total - max;
    regression ``(sw, swy, swyy)``: the squared error around the mean (used by :mod:`.hyper1`)."""
    return _cost_at(stats, 0, stats.shape[0], mode)


@njit(cache=True, inline="always")
def _add(stats, lo, i, mode, label, weight, target):
    if mode == 2:
        w = weight[i]
        stats[lo] += w
        stats[lo + 1] += w * target[i]
        stats[lo + 2] += w * target[i] * target[i]
    else:
        stats[lo + label[i]] += weight[i]


@njit(cache=True)
def leaf_of(ords, m, label, weight, target, mode, n_stats, nmin):
    """Cost of the subset as one leaf (inf if it has fewer than ``nmin`` points)."""
    if m < nmin:
        return np.inf
    st = np.zeros(n_stats)
    for u in range(m):
        _add(st, 0, ords[0, u], mode, label, weight, target)
    return _cost_at(st, 0, n_stats, mode)


@njit(cache=True, inline="always")
def _sse(sw, swy, swyy):
    if sw <= 0.0:
        return 0.0
    c = swyy - swy * swy / sw
    return c if c > 0.0 else 0.0


@njit(cache=True)
def scan_root(ords, vals, m, d1, t1, side, label, weight, target, mode, n_stats, nmin, want, work, pos):
    """Leaf costs and best single splits of both sides of the root ``x_d1 <= vals[d1, t1]``.

    Returns ``(leafL, leafR, sL, sR)`` (inf where infeasible); with ``want``
    False the splits are not searched (``sL = sR = inf``).  ``pos`` receives
    ``(dL, tL, dR, tR)``: the feature and sorted position (in ``ords``) of each
    side's best split, whose rule is ``x_d <= vals[d, t]``.  ``side`` (one byte
    per training point) is left marking the sides (0 left, 1 right).  The hot
    loops are written out (no helper taking arrays: its reference counting
    would cost more than the loop body).
    """
    D = ords.shape[0]
    tot = work[0]
    pre = work[1]
    col1 = ords[d1]
    for u in range(m):
        side[col1[u]] = 0 if u <= t1 else 1
    nL = t1 + 1
    nR = m - nL
    for s in range(2 * n_stats):
        tot[s] = 0.0
    for u in range(m):
        i = col1[u]
        lo = 0 if u <= t1 else n_stats
        if mode == 2:
            w = weight[i]
            y = target[i]
            tot[lo] += w
            tot[lo + 1] += w * y
            tot[lo + 2] += w * y * y
        else:
            tot[lo + label[i]] += weight[i]
    leafL = _cost_at(tot, 0, n_stats, mode) if nL >= nmin else np.inf
    leafR = _cost_at(tot, n_stats, n_stats, mode) if nR >= nmin else np.inf
    sL = np.inf
    sR = np.inf
    for s in range(4):
        pos[s] = -1
    if not want:
        return leafL, leafR, sL, sR
    totL = 0.0
    totR = 0.0
    if mode != 2:
        for s in range(n_stats):
            totL += tot[s]
            totR += tot[n_stats + s]
    for d2 in range(D):
        col = ords[d2]
        xcol = vals[d2]
        for s in range(2 * n_stats):
            pre[s] = 0.0
        cL = 0
        cR = 0
        sumL = 0.0
        sumR = 0.0
        doneL = -1  # the left prefix size last evaluated (each prefix is evaluated once)
        doneR = -1
        for t in range(m - 1):
            i = col[t]
            sd = side[i]
            if mode == 2:
                w = weight[i]
                y = target[i]
                lo = 0 if sd == 0 else 3
                pre[lo] += w
                pre[lo + 1] += w * y
                pre[lo + 2] += w * y * y
            elif sd == 0:
                pre[label[i]] += weight[i]
                sumL += weight[i]
            else:
                pre[n_stats + label[i]] += weight[i]
                sumR += weight[i]
            if sd == 0:
                cL += 1
            else:
                cR += 1
            if xcol[t] == xcol[t + 1]:
                continue
            if cL != doneL and cL >= nmin and nL - cL >= nmin and cL < nL:
                doneL = cL
                if mode == 2:
                    c = (_sse(pre[0], pre[1], pre[2])
                         + _sse(tot[0] - pre[0], tot[1] - pre[1], tot[2] - pre[2]))
                else:
                    m1 = 0.0
                    m2 = 0.0
                    for s in range(n_stats):
                        a = pre[s]
                        b = tot[s] - a
                        if a > m1:
                            m1 = a
                        if b > m2:
                            m2 = b
                    c = max(sumL - m1, 0.0) + max(totL - sumL - m2, 0.0)
                if c < sL:
                    sL = c
                    pos[0] = d2
                    pos[1] = t
            if cR != doneR and cR >= nmin and nR - cR >= nmin and cR < nR:
                doneR = cR
                if mode == 2:
                    c = (_sse(pre[3], pre[4], pre[5])
                         + _sse(tot[3] - pre[3], tot[4] - pre[4], tot[5] - pre[5]))
                else:
                    m1 = 0.0
                    m2 = 0.0
                    for s in range(n_stats):
                        a = pre[n_stats + s]
                        b = tot[n_stats + s] - a
                        if a > m1:
                            m1 = a
                        if b > m2:
                            m2 = b
                    c = max(sumR - m1, 0.0) + max(totR - sumR - m2, 0.0)
                if c < sR:
                    sR = c
                    pos[2] = d2
                    pos[3] = t
    return leafL, leafR, sL, sR


@njit(cache=True)
def _root_candidate(leafL, leafR, sL, sR, max_k):
    """The first minimiser of (cost, splits) under one root: ``(cost, k, which)`` with ``which``
    0: both leaves, 1: left split, 2: right split, 3: both split; ``a`` the cost (at most max_k)."""
    c = leafL + leafR
    k = 1
    which = 0
    if max_k >= 2:
        v = sL + leafR
        if v < c:
            c = v
            k = 2
            which = 1
        v = leafL + sR
        if v < c:
            c = v
            k = 2
            which = 2
    if max_k >= 3:
        v = sL + sR
        if v < c:
            c = v
            k = 3
            which = 3
    return c, k, which


@njit(cache=True)
def depth2_search(ords, vals, m, label, weight, target, mode, n_stats, nmin, max_k, d_lo, d_hi, lipschitz, eps,
                  side, state, rec, counts):
    """Search the roots of features ``d_lo .. d_hi - 1`` for the best tree of depth <= 2 with at
    most ``max_k`` (1 to 3) splits (see the module).

    ``state = [best cost, best k, bound]`` is read and updated: a root
    replaces the best when its ``(cost, k)`` is smaller (so the first
    minimiser in order wins) and its cost is below ``bound``; roots whose
    similarity bound reaches ``min(bound, best + eps)`` are skipped when
    ``lipschitz``.  ``rec = (d1, t1, dL, tL, dR, tR)`` is the best tree's
    rules as (feature, sorted position) pairs, -1 for a leaf side.
    ``counts[0]`` += roots evaluated, ``counts[1]`` += roots considered.
    """
    work = np.zeros((3, 2 * n_stats))
    pos = np.empty(4, dtype=np.int64)
    for d1 in range(d_lo, d_hi):
        col = ords[d1]
        xs = vals[d1]
        last = -np.inf  # a(t) of the last evaluated root: a lower bound carried forward with -w(M)
        moved = 0.0
        for t in range(m - 1):
            moved += weight[col[t]]
            if xs[t] == xs[t + 1]:
                continue
            counts[1] += 1
            if lipschitz and last - moved >= min(state[2], state[0] + eps):
                continue
            counts[0] += 1
            leafL, leafR, sL, sR = scan_root(ords, vals, m, d1, t, side, label, weight, target, mode, n_stats,
                                             nmin, max_k >= 2, work, pos)
            c, k, which = _root_candidate(leafL, leafR, sL, sR, max_k)
            last = c if c < np.inf else -np.inf
            moved = 0.0
            if c < state[2] and (c < state[0] or (c == state[0] and k < state[1])):
                state[0] = c
                state[1] = k
                rec[0] = d1
                rec[1] = t
                rec[2] = pos[0] if which == 1 or which == 3 else -1
                rec[3] = pos[1] if which == 1 or which == 3 else -1
                rec[4] = pos[2] if which == 2 or which == 3 else -1
                rec[5] = pos[3] if which == 2 or which == 3 else -1


@njit(cache=True)
def best_single_root(ords, vals, m, label, weight, target, mode, n_stats, nmin):
    """The best single split (the greedy root): ``(cost, feature, sorted position)``, the first
    minimiser in (feature, position) order; ``(inf, -1, -1)`` if no split is feasible."""
    D = ords.shape[0]
    tot = np.zeros(n_stats)
    for u in range(m):
        _add(tot, 0, ords[0, u], mode, label, weight, target)
    total = 0.0
    for s in range(n_stats):
        total += tot[s]
    pre = np.zeros(n_stats)
    best = np.inf
    bd = -1
    bt = -1
    for d in range(D):
        for s in range(n_stats):
            pre[s] = 0.0
        acc = 0.0
        for t in range(m - 1):
            i = ords[d, t]
            if mode == 2:
                w = weight[i]
                y = target[i]
                pre[0] += w
                pre[1] += w * y
                pre[2] += w * y * y
            else:
                pre[label[i]] += weight[i]
                acc += weight[i]
            if vals[d, t] == vals[d, t + 1] or t + 1 < nmin or m - t - 1 < nmin:
                continue
            if mode == 2:
                c = _sse(pre[0], pre[1], pre[2]) + _sse(tot[0] - pre[0], tot[1] - pre[1], tot[2] - pre[2])
            else:
                m1 = 0.0
                m2 = 0.0
                for s in range(n_stats):
                    a = pre[s]
                    b = tot[s] - a
                    if a > m1:
                        m1 = a
                    if b > m2:
                        m2 = b
                c = max(acc - m1, 0.0) + max(total - acc - m2, 0.0)
            if c < best:
                best = c
                bd = d
                bt = t
    return best, bd, bt


@njit(cache=True)
def split_subset(ords, vals, m, d1, t1, side):
    """The two sides of the root ``x_d1 <= vals[d1, t1]`` as sorted orders (stable filters)."""
    D = ords.shape[0]
    nL = t1 + 1
    nR = m - nL
    col1 = ords[d1]
    for u in range(m):
        side[col1[u]] = 0 if u <= t1 else 1
    oL = np.empty((D, nL), dtype=np.int64)
    vL = np.empty((D, nL))
    oR = np.empty((D, nR), dtype=np.int64)
    vR = np.empty((D, nR))
    for d in range(D):
        a = 0
        b = 0
        for u in range(m):
            i = ords[d, u]
            if side[i] == 0:
                oL[d, a] = i
                vL[d, a] = vals[d, u]
                a += 1
            else:
                oR[d, b] = i
                vR[d, b] = vals[d, u]
                b += 1
    return oL, vL, oR, vR


def solve_depth2(X: np.ndarray, obj, max_splits: int, *, nmin: int = 0, depth: int | None = None,
                 deadline: float | None = None):
    """The optimal axis-parallel tree with at most ``max_splits`` splits and depth <= 2.

    Kept for callers of the former solver: :func:`arboretum.optimal.axis.solve_axis`
    with ``depth`` capped at 2 (``max_splits <= 2`` trees have depth <= 2 anyway).
    """
    from .axis import solve_axis

    d = 2 if depth is None else min(depth, 2)
    return solve_axis(X, obj, max_splits, nmin=nmin, depth=d, deadline=deadline)
