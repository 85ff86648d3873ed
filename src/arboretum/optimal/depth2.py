"""Numba kernels of the axis-parallel exact path: trees of depth <= 2 over sorted features (issue 20, item 4).

A subset of the training points is held as ``ords[d, :m]`` (its point indices
in increasing order of feature ``d``) and ``vals[d, :m]`` (their values).  For
axis-parallel rules a tree of depth <= 2 is a root split and, on each side, a
leaf or one more split.  :func:`eval_root` evaluates one root split
``x_d1 <= vals[d1, t]``: one pass over every feature's sorted order gives, for
both sides at once, the leaf cost and the best single split, so the best tree
with 1, 2 or 3 splits under that root (MurTree's and ConTree's depth-2
specialisation; the binary 0-1 loss has its own loop with the class counts in
scalars).  :func:`depth2_features` searches the roots of each feature by
bisection (ConTree's interval search): it evaluates the feature's best single
split, then the middle root of every interval of roots that the bounds below
do not discard, and so on.  Let ``L(t)`` and ``R(t)`` be the optima of the two
sides of the root at threshold position ``t`` (the leaf, or the best tree
with at most one split), and ``a < t < b`` evaluated roots of the same feature.

**Monotone bound** (ConTree's sub-interval pruning): ``L(t) >= L(a)`` and
``R(t) >= R(b)``.  Proof: the left side at ``a`` is a subset of the left side
at ``t``.  Keep the best tree of the larger set on the subset: every leaf sees
a subset of its points, and a leaf's cost over a subset is at most its cost
over the superset, for the weighted 0-1 loss (misclassified weight, then the
majority re-chosen) and for the weighted squared error (adding a point of
weight ``w_p`` to a leaf of weight ``W`` and mean ``mu`` adds
``W w_p / (W + w_p) (y_p - mu)**2 >= 0``); a split left with an empty side is
dropped (same cost, fewer splits).  So the subset's optimum is at most the
superset's.  Same on the right.

**Similarity bound** (ConTree's neighbourhood pruning, MurTree's similarity
bound), weighted 0-1 loss: ``L(t) >= L(b) - w(M)`` and ``R(t) >= R(a) -
w(M')`` where ``M`` (``M'``) are the points between ``t`` and ``b`` (``a`` and
``t``).  Proof: keep the best tree of the left side at ``t`` for the left side
at ``b`` (which adds ``M``): each point of ``M`` costs at most its weight.

So every root in ``(a, b)`` costs at least the sum of the two sides' bounds,
which are combined with the options a root has (leaves or one split per side,
at most ``max_k`` splits); an interval whose roots all reach the best cost
found (less a hair ``gain``) or the caller's ``bound`` is discarded whole.
With ``min_samples_leaf >= 2`` the sides' optima are not monotone (a subset
may have no feasible split), so the bounds use the same quantities without the
leaf-size constraint, which :func:`eval_root` computes in the same pass: they
are lower bounds of the constrained ones and satisfy both properties.

**Ties.** A root must beat the best cost found by more than ``gain`` to be
examined (ConTree's rule: examining the roots that can only tie cost 2-10x
more roots on problems of small error), and the search stops at a tree of cost
0.  So among several optimal trees the first found is returned (the search is
deterministic); under one root fewer splits win, and a split is only ever
kept when it lowers the cost below its node's leaf.  ``gain`` is ``1e-9`` of
the total weight (0-1 loss) or of the weighted squared targets: a tree better
by less than that is not looked for (none exists for unweighted 0-1 loss).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._numba import monotonic, stop_time

__all__ = ["applies", "solve_depth2", "eval_root", "depth2_features", "depth2_prepare", "depth2_solve", "leaf_of",
           "split_subset"]


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
def sorted_columns(ords, vals, m, label, weight, target):
    """Per feature, the labels, weights and targets of the points in sorted order, and ``brk[d, u]``:
    whether a threshold lies after sorted position ``u`` (the next value differs)."""
    D = ords.shape[0]
    lab = np.empty((D, m), dtype=np.int64)
    w = np.empty((D, m))
    y = np.empty((D, m))
    brk = np.zeros((D, m), dtype=np.bool_)
    for d in range(D):
        for u in range(m):
            i = ords[d, u]
            lab[d, u] = label[i]
            w[d, u] = weight[i]
            y[d, u] = target[i]
            if u < m - 1 and vals[d, u] != vals[d, u + 1]:
                brk[d, u] = True
    return lab, w, y, brk


@njit(cache=True, inline="always")
def _split_cost(pre, tot, lo, n_stats, mode, pw, tw):
    """Cost of a side cut in two: prefix statistics ``pre[lo:lo + n_stats]`` (weight ``pw``) and the rest
    of ``tot[lo:lo + n_stats]`` (weight ``tw - pw``)."""
    if mode == 2:
        return (_sse(pre[lo], pre[lo + 1], pre[lo + 2])
                + _sse(tot[lo] - pre[lo], tot[lo + 1] - pre[lo + 1], tot[lo + 2] - pre[lo + 2]))
    m1 = 0.0
    m2 = 0.0
    for s in range(n_stats):
        a = pre[lo + s]
        b = tot[lo + s] - a
        if a > m1:
            m1 = a
        if b > m2:
            m2 = b
    return max(pw - m1, 0.0) + max(tw - pw - m2, 0.0)


@njit(cache=True)
def eval_root(ords, m, d1, t1, rank, lab, w, y, brk, mode, n_stats, nmin, want, work, out, pos, tol):
    """Both sides of the root ``x_d1 <= vals[d1, t1]`` as depth-<=1 problems, in one pass per feature.

    ``rank[i]`` is point ``i``'s position in ``ords[d1]`` (a point goes left iff
    ``rank[i] <= t1``).  ``out`` receives ``(leafL, leafR, splitL, splitR,
    rleafL, rleafR, rsplitL, rsplitR)``: each side's leaf cost and best single
    split under ``min_samples_leaf`` (inf where infeasible), then the same
    without the leaf-size constraint (the relaxation whose values the bounds
    use).  With ``want`` False no split is searched (inf).  ``pos`` receives
    ``(dL, tL, dR, tR)``, each side's best split as (feature, sorted position):
    the first in (feature, position) order, a later one only when lower by
    more than ``tol`` (so that rounding does not decide between equal costs).
    The loops are written out (helpers taking arrays in the innermost loop cost
    more than its body) and stop once both sides are pure.
    """
    D = ords.shape[0]
    tot = work[0]
    pre = work[1]
    S = n_stats
    nL = t1 + 1
    nR = m - nL
    for s in range(2 * S):
        tot[s] = 0.0
    twL = 0.0
    twR = 0.0
    for u in range(m):
        lo = 0 if u <= t1 else S
        if mode == 2:
            ww = w[d1, u]
            yy = y[d1, u]
            tot[lo] += ww
            tot[lo + 1] += ww * yy
            tot[lo + 2] += ww * yy * yy
        else:
            tot[lo + lab[d1, u]] += w[d1, u]
        if u <= t1:
            twL += w[d1, u]
        else:
            twR += w[d1, u]
    rleafL = _cost_at(tot, 0, S, mode)
    rleafR = _cost_at(tot, S, S, mode)
    out[0] = rleafL if nL >= nmin else np.inf
    out[1] = rleafR if nR >= nmin else np.inf
    out[4] = rleafL
    out[5] = rleafR
    bL = np.inf
    bR = np.inf
    rbL = np.inf
    rbR = np.inf
    for s in range(4):
        pos[s] = -1
    if want and (rleafL > 0.0 or rleafR > 0.0):
        relax = nmin >= 2
        if mode != 2 and S == 2 and not relax:
            tL0 = tot[0]
            tL1 = tot[1]
            tR0 = tot[2]
            tR1 = tot[3]
            for d2 in range(D):
                a0 = 0.0
                a1 = 0.0
                b0 = 0.0
                b1 = 0.0
                cL = 0
                cR = 0
                dL = False
                dR = False
                for u in range(m - 1):
                    i = ords[d2, u]
                    ww = w[d2, u]
                    one = ww * lab[d2, u]
                    if rank[i] <= t1:
                        a0 += ww - one
                        a1 += one
                        cL += 1
                        dL = True
                    else:
                        b0 += ww - one
                        b1 += one
                        cR += 1
                        dR = True
                    if not brk[d2, u]:
                        continue
                    if dL:
                        dL = False
                        if cL < nL:
                            c = min(a0, a1) + min(tL0 - a0, tL1 - a1)
                            if c < bL - tol:
                                bL = c
                                pos[0] = d2
                                pos[1] = u
                    if dR:
                        dR = False
                        if cR < nR:
                            c = min(b0, b1) + min(tR0 - b0, tR1 - b1)
                            if c < bR - tol:
                                bR = c
                                pos[2] = d2
                                pos[3] = u
                if (rleafL <= 0.0 or bL <= 0.0) and (rleafR <= 0.0 or bR <= 0.0):
                    break
            rbL = bL
            rbR = bR
        else:
            for d2 in range(D):
                for s in range(2 * S):
                    pre[s] = 0.0
                pwL = 0.0
                pwR = 0.0
                cL = 0
                cR = 0
                dirtyL = False
                dirtyR = False
                for u in range(m - 1):
                    i = ords[d2, u]
                    ww = w[d2, u]
                    if rank[i] <= t1:
                        if mode == 2:
                            yy = y[d2, u]
                            pre[0] += ww
                            pre[1] += ww * yy
                            pre[2] += ww * yy * yy
                        else:
                            pre[lab[d2, u]] += ww
                        pwL += ww
                        cL += 1
                        dirtyL = True
                    else:
                        if mode == 2:
                            yy = y[d2, u]
                            pre[S] += ww
                            pre[S + 1] += ww * yy
                            pre[S + 2] += ww * yy * yy
                        else:
                            pre[S + lab[d2, u]] += ww
                        pwR += ww
                        cR += 1
                        dirtyR = True
                    if not brk[d2, u]:
                        continue
                    if dirtyL:
                        dirtyL = False
                        if cL < nL:
                            c = _split_cost(pre, tot, 0, S, mode, pwL, twL)
                            if c < rbL:
                                rbL = c
                            if c < bL - tol and (not relax or (cL >= nmin and nL - cL >= nmin)):
                                bL = c
                                pos[0] = d2
                                pos[1] = u
                    if dirtyR:
                        dirtyR = False
                        if cR < nR:
                            c = _split_cost(pre, tot, S, S, mode, pwR, twR)
                            if c < rbR:
                                rbR = c
                            if c < bR - tol and (not relax or (cR >= nmin and nR - cR >= nmin)):
                                bR = c
                                pos[2] = d2
                                pos[3] = u
                if (rleafL <= 0.0 or rbL <= 0.0) and (rleafR <= 0.0 or rbR <= 0.0) and not relax:
                    break
    out[2] = bL
    out[3] = bR
    out[6] = rbL
    out[7] = rbR


@njit(cache=True)
def _root_candidate(leafL, leafR, sL, sR, max_k, tol):
    """The first minimiser of (cost, splits) under one root: ``(cost, k, which)`` with ``which``
    0: both leaves, 1: left split, 2: right split, 3: both split (at most ``max_k`` splits); more splits
    only when cheaper by more than ``tol``."""
    c = leafL + leafR
    k = 1
    which = 0
    if max_k >= 2:
        v = sL + leafR
        if v < c - tol:
            c = v
            k = 2
            which = 1
        v = leafL + sR
        if v < c - tol:
            c = v
            k = 2
            which = 2
    if max_k >= 3:
        v = sL + sR
        if v < c - tol:
            c = v
            k = 3
            which = 3
    return c, k, which


@njit(cache=True, inline="always")
def _pair_bound(l0, l1, r0, r1, max_k):
    """Least root cost from lower bounds on each side's leaf (``l0``, ``r0``) and best tree with at most
    one split (``l1``, ``r1``)."""
    if max_k >= 3:
        return l1 + r1
    if max_k == 2:
        return min(l0 + r1, l1 + r0)
    return l0 + r0


@njit(cache=True)
def _try_root(ords, m, d1, t, rank, lab, w, y, brk, mode, n_stats, nmin, max_k, state, rec, work, out, pos, tol):
    """Evaluate one root and keep it when it beats the best cost by more than ``tol`` (ties: the first found)."""
    eval_root(ords, m, d1, t, rank, lab, w, y, brk, mode, n_stats, nmin, max_k >= 2, work, out, pos, tol)
    c, k, which = _root_candidate(out[0], out[1], out[2], out[3], max_k, tol)
    if c < state[2] and c < state[0] - tol:
        state[0] = c
        state[1] = k
        rec[0] = d1
        rec[1] = t
        rec[2] = pos[0] if which == 1 or which == 3 else -1
        rec[3] = pos[1] if which == 1 or which == 3 else -1
        rec[4] = pos[2] if which == 2 or which == 3 else -1
        rec[5] = pos[3] if which == 2 or which == 3 else -1


@njit(cache=True)
def feature_best_splits(ords, m, lab, w, y, brk, mode, n_stats, nmin, tol):
    """Per feature, the cost and sorted position of its best single split (inf, -1 where none; the first
    one unless a later one is lower by more than ``tol``)."""
    D = ords.shape[0]
    S = n_stats
    tot = np.zeros(S)
    tw = 0.0
    for u in range(m):
        if mode == 2:
            tot[0] += w[0, u]
            tot[1] += w[0, u] * y[0, u]
            tot[2] += w[0, u] * y[0, u] * y[0, u]
        else:
            tot[lab[0, u]] += w[0, u]
        tw += w[0, u]
    pre = np.zeros(S)
    cost = np.full(D, np.inf)
    where = np.full(D, -1, dtype=np.int64)
    for d in range(D):
        for s in range(S):
            pre[s] = 0.0
        pw = 0.0
        for u in range(m - 1):
            if mode == 2:
                pre[0] += w[d, u]
                pre[1] += w[d, u] * y[d, u]
                pre[2] += w[d, u] * y[d, u] * y[d, u]
            else:
                pre[lab[d, u]] += w[d, u]
            pw += w[d, u]
            if not brk[d, u] or u + 1 < nmin or m - u - 1 < nmin:
                continue
            c = _split_cost(pre, tot, 0, S, mode, pw, tw)
            if c < cost[d] - tol:
                cost[d] = c
                where[d] = u
    return cost, where


@njit(cache=True)
def depth2_prepare(ords, vals, m, label, weight, target, mode, n_stats, nmin, tol):
    """One call's setup of a depth-2 problem: the sorted columns (:func:`sorted_columns`), the root
    features ordered by their best single split (features with none left out; ties in feature order)
    and each one's best single split position (searched first); ``tol > 0`` the rounding tolerance."""
    lab, w, y, brk = sorted_columns(ords, vals, m, label, weight, target)
    cost, where = feature_best_splits(ords, m, lab, w, y, brk, mode, n_stats, nmin, tol)
    order = np.argsort(np.floor(cost / tol + 0.5), kind="mergesort")  # costs equal up to rounding: feature order
    n = 0
    for q in range(order.shape[0]):
        if cost[order[q]] < np.inf:
            n += 1
    feats = order[:n].copy()
    return lab, w, y, brk, feats, where[feats]


@njit(cache=True)
def depth2_features(ords, m, lab, w, y, brk, mode, n_stats, nmin, max_k, feats, first, lipschitz, monotone, gain,
                    state, rec, counts, seconds):
    """Search the roots of features ``feats`` for the best tree of depth <= 2 with at most ``max_k``
    (1 to 3) splits (see the module).

    Per feature, the roots (thresholds between distinct values, both sides at
    least ``nmin`` points) are searched by bisection over intervals whose end
    roots are evaluated: feature ``feats[q]``'s root at sorted position
    ``first[q]`` first (its best single split), then the middle of each
    interval of roots that the bounds do not discard.  ``state = [best cost,
    best k, bound]`` is read and updated (only trees of cost ``< bound``);
    ``rec = (d1, t1, dL, tL, dR, tR)``.  The search stops at a tree of cost 0.
    ``counts[0]`` += roots evaluated, ``counts[1]`` += roots considered.
    Stops after ``seconds`` (read between roots: one feature of 40,000 points
    takes a second) and returns False then, True when every feature is done.
    """
    stop = stop_time(seconds)
    D = ords.shape[0]
    N = 0
    for u in range(m):
        if ords[0, u] + 1 > N:
            N = ords[0, u] + 1
    rank = np.empty(N, dtype=np.int64)
    work = np.zeros((2, 2 * n_stats))
    out = np.empty(8)
    pos = np.empty(4, dtype=np.int64)
    roots = np.empty(m, dtype=np.int64)
    cw = np.empty(m)
    l0 = np.empty(m)
    l1 = np.empty(m)
    r0 = np.empty(m)
    r1 = np.empty(m)
    stack = np.empty((m + 2, 4), dtype=np.int64)
    for q in range(feats.shape[0]):
        if state[0] <= 0.0:
            return True
        d1 = feats[q]
        nT = 0
        acc = 0.0
        for u in range(m):
            rank[ords[d1, u]] = u
            acc += w[d1, u]
            cw[u] = acc
            if brk[d1, u] and u + 1 >= nmin and m - u - 1 >= nmin:
                roots[nT] = u
                nT += 1
        counts[1] += nT
        if nT == 0:
            continue
        # the feature's best single split first, then bisection of the intervals around it
        j0 = nT // 2
        for j in range(nT):
            if roots[j] == first[q]:
                j0 = j
        # a stack of intervals of unevaluated roots [lo, hi] with their evaluated neighbours a < lo, b > hi
        # (-1 and nT: none); the feature's best single split is evaluated first
        top = 0
        stack[0, 0] = 0
        stack[0, 1] = nT - 1
        stack[0, 2] = -1
        stack[0, 3] = nT
        pick = j0
        while True:
            if pick >= 0:
                if monotonic() >= stop:
                    return False
                t = roots[pick]
                counts[0] += 1
                _try_root(ords, m, d1, t, rank, lab, w, y, brk, mode, n_stats, nmin, max_k, state, rec, work, out,
                          pos, gain)
                if state[0] <= 0.0:
                    return True
                l0[pick] = out[4]
                r0[pick] = out[5]
                l1[pick] = min(out[4], out[6])
                r1[pick] = min(out[5], out[7])
                # the two halves replace the interval on the stack
                hi = stack[top, 1]
                b = stack[top, 3]
                stack[top, 1] = pick - 1
                stack[top, 3] = pick
                top += 1
                stack[top, 0] = pick + 1
                stack[top, 1] = hi
                stack[top, 2] = pick
                stack[top, 3] = b
                pick = -1
            if top < 0:
                break
            lo = stack[top, 0]
            hi = stack[top, 1]
            a = stack[top, 2]
            b = stack[top, 3]
            top -= 1
            if lo > hi:
                continue
            # lower bounds of the interval's roots from its evaluated neighbours
            ub = min(state[2], state[0] - gain)
            f = -1
            g = -1
            for j in range(lo, hi + 1):
                bl0 = 0.0
                bl1 = 0.0
                br0 = 0.0
                br1 = 0.0
                if monotone:
                    if a >= 0:
                        bl0 = l0[a]
                        bl1 = l1[a]
                    if b < nT:
                        br0 = r0[b]
                        br1 = r1[b]
                if lipschitz:
                    if b < nT:
                        mv = cw[roots[b]] - cw[roots[j]]
                        bl0 = max(bl0, l0[b] - mv)
                        bl1 = max(bl1, l1[b] - mv)
                    if a >= 0:
                        mv = cw[roots[j]] - cw[roots[a]]
                        br0 = max(br0, r0[a] - mv)
                        br1 = max(br1, r1[a] - mv)
                if _pair_bound(bl0, bl1, br0, br1, max_k) < ub:
                    if f < 0:
                        f = j
                    g = j
            if f < 0:
                continue
            pick = (f + g) // 2
            top += 1
            stack[top, 0] = f
            stack[top, 1] = g
            stack[top, 2] = a
            stack[top, 3] = b
    return True


@njit(cache=True)
def best_single_root(ords, vals, m, label, weight, target, mode, n_stats, nmin, tol):
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
            if c < best - tol:
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


@njit(cache=True)
def depth2_solve(ords, vals, m, label, weight, target, mode, n_stats, nmin, max_k, lipschitz, gain, state, rec,
                 counts):
    """A whole depth-2 problem in one call (small problems: no deadline check inside): the leaf, then
    :func:`depth2_prepare` and :func:`depth2_features` over every feature; ``state[2]`` is the bound
    and ``state[:2]``, ``rec`` receive the best tree (``state[1] = -1``: none below the bound)."""
    leaf = leaf_of(ords, m, label, weight, target, mode, n_stats, nmin)
    if leaf < state[2]:
        state[0] = leaf
        state[1] = 0.0
    if state[0] <= 0.0:
        return
    lab, w, y, brk, feats, first = depth2_prepare(ords, vals, m, label, weight, target, mode, n_stats, nmin, gain)
    depth2_features(ords, m, lab, w, y, brk, mode, n_stats, nmin, max_k, feats, first, lipschitz, True, gain, state,
                    rec, counts, np.inf)


@njit(cache=True)
def _side_solve(o, v, mm, kk, bound, label, weight, target, mode, n_stats, nmin, lipschitz, gain, out, counts):
    """The best tree of at most ``kk`` (0 to 3) splits and depth <= 2 on one side, below ``bound``:
    returns its cost (inf if none) and writes ``(k, d, v, dL, vL, dR, vR)`` to ``out`` (-1: a leaf)."""
    for s in range(7):
        out[s] = -1.0
    if kk == 0:
        c = leaf_of(o, mm, label, weight, target, mode, n_stats, nmin)
        if c < bound:
            out[0] = 0.0
            return c
        return np.inf
    st = np.empty(3)
    st[0] = np.inf
    st[1] = -1.0
    st[2] = bound
    rec = np.full(6, -1, dtype=np.int64)
    depth2_solve(o, v, mm, label, weight, target, mode, n_stats, nmin, min(kk, 3), lipschitz, gain, st, rec, counts)
    if st[1] < 0 or not st[0] < bound:
        return np.inf
    out[0] = st[1]
    for s in range(3):
        d = rec[2 * s]
        if d >= 0:
            out[1 + 2 * s] = d
            out[2 + 2 * s] = v[d, rec[2 * s + 1]]
    return st[0]


@njit(cache=True)
def level_solve(ords, vals, m, label, weight, target, mode, n_stats, nmin, opts, lipschitz, monotone, gain, state,
                tree, counts, seconds):
    """A level above depth-2 problems in one call (see :mod:`.axis`, whose Python level this mirrors for
    small problems): roots by bisection per feature, each root's sides solved (larger first, below a
    bound raised by the interval's half distance) with :func:`depth2_solve`; ``opts`` the budget options
    ``(k1, k2)`` (each at most 3, depth-2 trees).  ``state = [best cost, best k, bound]``; ``tree``
    receives ``(d1, v1, k1, left's (k, d, v, dL, vL, dR, vR), right's)``.  Stops after ``seconds``
    (read between roots: one feature's roots can take seconds on wide data) with the best tree found
    so far in ``state``/``tree``; returns False then, True when the level was searched to the end."""
    stop = stop_time(seconds)
    D = ords.shape[0]
    n_opt = opts.shape[0]
    leaf = leaf_of(ords, m, label, weight, target, mode, n_stats, nmin)
    if leaf < state[2]:
        state[0] = leaf
        state[1] = 0.0
    if state[0] <= 0.0:
        return True
    lab, w, y, brk, feats, first = depth2_prepare(ords, vals, m, label, weight, target, mode, n_stats, nmin, gain)
    N = 0
    for u in range(m):
        if ords[0, u] + 1 > N:
            N = ords[0, u] + 1
    side = np.zeros(N, dtype=np.int8)
    roots = np.empty(m, dtype=np.int64)
    cw = np.empty(m)
    LL = np.zeros((n_opt, m))
    RR = np.zeros((n_opt, m))
    lbL = np.zeros(n_opt)
    lbR = np.zeros(n_opt)
    outA = np.empty(7)
    outB = np.empty(7)
    stack = np.empty((m + 2, 4), dtype=np.int64)
    for q in range(feats.shape[0]):
        d1 = feats[q]
        nT = 0
        acc = 0.0
        for u in range(m):
            acc += w[d1, u]
            if brk[d1, u] and u + 1 >= nmin and m - u - 1 >= nmin:
                roots[nT] = u
                cw[nT] = acc
                nT += 1
        counts[1] += nT
        if nT == 0:
            continue
        j0 = nT // 2
        for j in range(nT):
            if roots[j] == first[q]:
                j0 = j
        top = 0
        stack[0, 0] = 0
        stack[0, 1] = nT - 1
        stack[0, 2] = -1
        stack[0, 3] = nT
        pick = j0
        while True:
            if pick >= 0:
                if monotonic() >= stop:
                    return False
                lo = stack[top, 0]
                hi = stack[top, 1]
                a = stack[top, 2]
                b = stack[top, 3]
                counts[0] += 1
                for o in range(n_opt):
                    bl = 0.0
                    br = 0.0
                    if monotone:
                        if a >= 0:
                            bl = LL[o, a]
                        if b < nT:
                            br = RR[o, b]
                    if lipschitz:
                        if b < nT:
                            bl = max(bl, LL[o, b] - (cw[b] - cw[pick]))
                        if a >= 0:
                            br = max(br, RR[o, a] - (cw[pick] - cw[a]))
                    lbL[o] = bl
                    lbR[o] = br
                hL = cw[pick] - cw[lo] if lipschitz else 0.0
                hR = cw[hi] - cw[pick] if lipschitz else 0.0
                t = roots[pick]
                oL, vL, oR, vR = split_subset(ords, vals, m, d1, t, side)
                nL = t + 1
                nR = m - nL
                left_first = nL >= nR
                u = min(state[2], state[0] - gain)
                for o in range(n_opt):
                    if lbL[o] + lbR[o] >= u:
                        continue
                    k1 = opts[o, 0]
                    k2 = opts[o, 1]
                    # the first side (larger), then the other one
                    if left_first:
                        cap = u - lbR[o]
                        cA = _side_solve(oL, vL, nL, k1, cap + hL, label, weight, target, mode, n_stats, nmin,
                                         lipschitz, gain, outA, counts)
                        if cA == np.inf:
                            lbL[o] = max(lbL[o], cap + hL)
                            continue
                        lbL[o] = cA
                        cap = u - cA
                        if cap <= lbR[o]:
                            continue
                        cB = _side_solve(oR, vR, nR, k2, cap + hR, label, weight, target, mode, n_stats, nmin,
                                         lipschitz, gain, outB, counts)
                        if cB == np.inf:
                            lbR[o] = max(lbR[o], cap + hR)
                            continue
                        lbR[o] = cB
                        cl = cA
                        cr = cB
                        outl = outA
                        outr = outB
                    else:
                        cap = u - lbL[o]
                        cA = _side_solve(oR, vR, nR, k2, cap + hR, label, weight, target, mode, n_stats, nmin,
                                         lipschitz, gain, outA, counts)
                        if cA == np.inf:
                            lbR[o] = max(lbR[o], cap + hR)
                            continue
                        lbR[o] = cA
                        cap = u - cA
                        if cap <= lbL[o]:
                            continue
                        cB = _side_solve(oL, vL, nL, k1, cap + hL, label, weight, target, mode, n_stats, nmin,
                                         lipschitz, gain, outB, counts)
                        if cB == np.inf:
                            lbL[o] = max(lbL[o], cap + hL)
                            continue
                        lbL[o] = cB
                        cl = cB
                        cr = cA
                        outl = outB
                        outr = outA
                    c = cl + cr
                    kk = 1.0 + outl[0] + outr[0]
                    if c < u:
                        state[0] = c
                        state[1] = kk
                        tree[0] = d1
                        tree[1] = vals[d1, t]
                        tree[2] = k1
                        for s in range(7):
                            tree[3 + s] = outl[s]
                            tree[10 + s] = outr[s]
                        u = min(state[2], c - gain)
                        if c <= 0.0:
                            return True
                for o in range(n_opt):
                    LL[o, pick] = lbL[o]
                    RR[o, pick] = lbR[o]
                stack[top, 1] = pick - 1
                stack[top, 3] = pick
                top += 1
                stack[top, 0] = pick + 1
                stack[top, 1] = hi
                stack[top, 2] = pick
                stack[top, 3] = b
                pick = -1
            if top < 0:
                break
            lo = stack[top, 0]
            hi = stack[top, 1]
            a = stack[top, 2]
            b = stack[top, 3]
            top -= 1
            if lo > hi:
                continue
            ub = min(state[2], state[0] - gain)
            f = -1
            g = -1
            for j in range(lo, hi + 1):
                best_lb = np.inf
                for o in range(n_opt):
                    bl = 0.0
                    br = 0.0
                    if monotone:
                        if a >= 0:
                            bl = LL[o, a]
                        if b < nT:
                            br = RR[o, b]
                    if lipschitz:
                        if b < nT:
                            bl = max(bl, LL[o, b] - (cw[b] - cw[j]))
                        if a >= 0:
                            br = max(br, RR[o, a] - (cw[j] - cw[a]))
                    if bl + br < best_lb:
                        best_lb = bl + br
                if best_lb < ub:
                    if f < 0:
                        f = j
                    g = j
            if f < 0:
                continue
            pick = (f + g) // 2
            top += 1
            stack[top, 0] = f
            stack[top, 1] = g
            stack[top, 2] = a
            stack[top, 3] = b
    return True
