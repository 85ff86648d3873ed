"""Numba kernels of He & Little's dynamic programme (spec-002 §3.6, §3.9, §3.13).

Data subsets are packed bitsets over the training points
(:mod:`arboretum._numba`); a rule is its bitset ``pos[r]`` of ``r+`` and its
defining points ``defs[r]``.

* :func:`leaf_cost` -- the objective of one leaf (0-1 loss with weights,
  squared error, or a user's compiled leaf cost: :class:`.user.LeafObjective`);
* :func:`sodt_cost` -- ``sodt`` (spec eq. 17) of one K-combination, with the
  leaf-size and depth constraints fused into the recursion (§3.9), run on an
  explicit stack of at most ``K + 1`` frames;
* :func:`search_chunk` -- the outer loop over K-combinations in lexicographic
  order, a chunk at a time (the caller checks the clock between chunks).

Pruning (exact).  All leaf costs are non-negative and the combiner is ``+``,
so a tree costs at least the cost of any of its subtrees.  Every frame of the
recursion carries an upper bound ``ub``: the value below which its result can
still improve the caller's best.  A frame returns its exact optimum when it is
below ``ub``, and ``inf`` otherwise; a root candidate whose left
subtree already costs ``>= best`` is skipped without solving its right
subtree, whose bound is ``best - left``.  The top frame's bound is the
incumbent over all combinations, so a combination that cannot beat it stops as
soon as that is known.  This changes no result: a combination is accepted only
when it is strictly better, so the first minimiser in lexicographic order wins
as in the paper's ``min_E`` (spec T11).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, types
from numba.extending import overload

from .._numba import ctz64, popcount64

INF = np.inf

#: Objective modes.
ZERO_ONE_UNIT = 0  # 0-1 loss, every weight 1: class counts by popcount
ZERO_ONE = 1  # weighted 0-1 loss
SQUARED = 2  # weighted squared error around the leaf's weighted mean
USER = 3  # a user's leaf cost over the per-leaf sums of per-point statistics (and the member indices)

#: Signature of a user's leaf cost: ``cost(sums, members, n_members, stats) -> float``
#: (:class:`.user.LeafObjective`).
USER_COST_SIGNATURE = types.float64(types.float64[:], types.int64[:], types.int64, types.float64[:, :])



class Objective(NamedTuple):
    """What a leaf's cost needs (a numba-compatible named tuple)."""

    mode: int
    cls_bits: np.ndarray  #: (n_classes, n_words) uint64: the points of each class (classification)
    label: np.ndarray  #: (n_samples,) int64 class codes (0 for regression)
    weight: np.ndarray  #: (n_samples,) float64
    target: np.ndarray  #: (n_samples,) float64 (regression; zeros for classification)
    counts: np.ndarray  #: (n_classes,) float64 scratch


class UserObjective(NamedTuple):
    """A user's objective (mode USER): the fields of :class:`Objective`, the per-point statistics
    and the compiled cost.  A type of its own, so that the kernels compiled for the built-in
    objectives are exactly what they were (the user's kernels are a second specialisation, shared
    by every user cost: the cost is a first-class function of :data:`USER_COST_SIGNATURE`)."""

    mode: int
    cls_bits: np.ndarray
    label: np.ndarray
    weight: np.ndarray
    target: np.ndarray
    counts: np.ndarray
    stats: np.ndarray  #: (n_samples, n_stats) float64: per-point statistics
    sums: np.ndarray  #: (n_stats,) float64 scratch: their sums over a leaf
    members: np.ndarray  #: (n_samples,) int64 scratch: a leaf's point indices
    user_cost: object  #: the compiled leaf cost (a numba cfunc)


@njit(cache=True)
def leaf_cost(idx, obj):
    """Cost of a leaf holding the points of ``idx``: weighted misclassification of the majority
    class, weighted squared error around the weighted mean (two passes), or a user's cost of the
    leaf's statistics (USER).  Empty leaf: 0 for the built-in objectives."""
    W = idx.shape[0]
    mode = obj.mode
    if mode == ZERO_ONE_UNIT:
        cls_bits = obj.cls_bits
        total = 0
        best = 0
        for c in range(cls_bits.shape[0]):
            k = 0
            for w in range(W):
                k += np.int64(popcount64(idx[w] & cls_bits[c, w]))
            total += k
            if k > best:
                best = k
        return float(total - best)
    weight = obj.weight
    if mode == ZERO_ONE:
        counts = obj.counts
        label = obj.label
        counts[:] = 0.0
        total = 0.0
        for w in range(W):
            b = idx[w]
            while b != 0:
                t = np.int64(ctz64(b))
                i = w * 64 + t
                counts[label[i]] += weight[i]
                total += weight[i]
                b &= b - np.uint64(1)
        best = 0.0
        for c in range(counts.shape[0]):
            if counts[c] > best:
                best = counts[c]
        return max(total - best, 0.0)
    if mode == USER:
        return _user_leaf_cost(idx, obj)
    target = obj.target
    sw = 0.0
    swy = 0.0
    for w in range(W):
        b = idx[w]
        while b != 0:
            t = np.int64(ctz64(b))
            i = w * 64 + t
            sw += weight[i]
            swy += weight[i] * target[i]
            b &= b - np.uint64(1)
    if sw <= 0.0:
        return 0.0
    mean = swy / sw
    sse = 0.0
    for w in range(W):
        b = idx[w]
        while b != 0:
            t = np.int64(ctz64(b))
            i = w * 64 + t
            d = target[i] - mean
            sse += weight[i] * d * d
            b &= b - np.uint64(1)
    return sse


def _user_leaf_cost(idx, obj):  # pragma: no cover - replaced by its overload in compiled code
    """A USER leaf: the sums of ``obj.stats`` over its points and their indices, given to the
    user's compiled cost (0 for the built-in :class:`Objective`, where it is never called)."""


@overload(_user_leaf_cost)
def _user_leaf_cost_impl(idx, obj):
    if isinstance(obj, types.BaseNamedTuple) and "user_cost" in obj.fields:
        return lambda idx, obj: _user_leaf_cost_of(idx, obj)
    return lambda idx, obj: 0.0


@njit(cache=True)
def _user_leaf_cost_of(idx, obj):
    sums = obj.sums
    stats = obj.stats
    members = obj.members
    sums[:] = 0.0
    n = 0
    for w in range(idx.shape[0]):
        b = idx[w]
        while b != 0:
            i = w * 64 + np.int64(ctz64(b))
            for s in range(stats.shape[1]):
                sums[s] += stats[i, s]
            members[n] = i
            n += 1
            b &= b - np.uint64(1)
    return obj.user_cost(sums, members, n, stats)


@njit(cache=True, inline="always")
def _count(idx):
    k = 0
    for w in range(idx.shape[0]):
        k += np.int64(popcount64(idx[w]))
    return k


@njit(cache=True)
def local_kmat(comb, pos, defs, km):
    """``km[a, b]`` = Kmat of rules ``comb[a]``, ``comb[b]`` (spec §2.2): +1 when every defining
    point of ``comb[b]`` is in ``comb[a]+``, -1 when none is, 0 otherwise; 0 on the diagonal."""
    K = comb.shape[0]
    for a in range(K):
        i = comb[a]
        for b in range(K):
            if a == b:
                km[a, b] = 0
                continue
            j = comb[b]
            n_in = 0
            n_all = 0
            for p in range(defs.shape[1]):
                n = defs[j, p]
                if n < 0:
                    break
                n_all += 1
                n_in += np.int64((pos[i, n >> 6] >> np.uint64(n & 63)) & np.uint64(1))
            km[a, b] = 1 if n_in == n_all else (-1 if n_in == 0 else 0)


class Work(NamedTuple):
    """Scratch arrays of :func:`sodt_cost` (one set per thread)."""

    km: np.ndarray  #: (K, K) int64
    idx: np.ndarray  #: (K + 2, n_words) uint64: the data of each frame
    f_set: np.ndarray  #: (K + 2,) int64: rule subset (bitmask over positions in comb)
    f_depth: np.ndarray  #: (K + 2,) int64: depth left (-1: unlimited)
    f_next: np.ndarray  #: (K + 2,) int64: next root position to try
    f_root: np.ndarray  #: (K + 2,) int64: the root being tried
    f_minus: np.ndarray  #: (K + 2,) int64: its right rule subset
    f_phase: np.ndarray  #: (K + 2,) int64
    f_best: np.ndarray  #: (K + 2,) float64
    f_ub: np.ndarray  #: (K + 2,) float64: the frame's bound as given
    f_left: np.ndarray  #: (K + 2,) float64: cost of the left subtree of the root being tried


def make_work(K: int, n_words: int) -> Work:
    z = lambda: np.zeros(K + 2, dtype=np.int64)  # noqa: E731
    return Work(np.zeros((max(K, 1), max(K, 1)), dtype=np.int64), np.zeros((K + 2, n_words), dtype=np.uint64),
                z(), z(), z(), z(), z(), z(), np.zeros(K + 2), np.zeros(K + 2), np.zeros(K + 2))


_ENTER = 0
_NEXT = 1
_AFTER_LEFT = 2
_AFTER_RIGHT = 3


@njit(cache=True)
def sodt_cost(comb, pos, defs, all_bits, obj, nmin, depth, ub, work):
    """``sodt`` of the combination ``comb`` (spec eq. 17) with the constraints fused (§3.9).

    Returns the optimal cost of a proper tree using exactly the rules of
    ``comb`` when it is below ``ub``, else ``inf`` (also when no proper tree
    satisfies the constraints).  ``nmin``: fewest points in a
    leaf; ``depth``: most splits on a root-to-leaf path (-1: any).
    """
    K = comb.shape[0]
    km = work.km
    local_kmat(comb, pos, defs, km)
    idx = work.idx
    f_set = work.f_set
    f_depth = work.f_depth
    f_next = work.f_next
    f_root = work.f_root
    f_minus = work.f_minus
    f_phase = work.f_phase
    f_best = work.f_best
    f_ub = work.f_ub
    f_left = work.f_left
    W = all_bits.shape[0]
    for w in range(W):
        idx[0, w] = all_bits[w]
    f_set[0] = (1 << K) - 1
    f_depth[0] = depth
    f_phase[0] = _ENTER
    f_best[0] = ub
    f_ub[0] = ub
    L = 0
    ret = INF
    while True:
        phase = f_phase[L]
        if phase == _ENTER:
            S = f_set[L]
            if S == 0:
                if nmin > 0 and _count(idx[L]) < nmin:
                    ret = INF
                else:
                    ret = leaf_cost(idx[L], obj)
                L -= 1
                if L < 0:
                    return ret
                continue
            dl = f_depth[L]
            if dl >= 0:
                size = 0
                s = S
                while s != 0:
                    size += 1
                    s &= s - 1
                if dl == 0 or size > (1 << min(dl, 62)) - 1:
                    ret = INF
                    L -= 1
                    if L < 0:
                        return ret
                    continue
            f_next[L] = 0
            f_phase[L] = _NEXT
            continue
        if phase == _NEXT:
            S = f_set[L]
            a = f_next[L]
            found = -1
            plus = 0
            minus = 0
            while a < K:
                if (S >> a) & 1:
                    plus = 0
                    minus = 0
                    ok = True
                    for b in range(K):
                        if b != a and (S >> b) & 1:
                            e = km[a, b]
                            if e == 0:
                                ok = False
                                break
                            if e > 0:
                                plus |= 1 << b
                            else:
                                minus |= 1 << b
                    if ok:
                        found = a
                        break
                a += 1
            if found < 0:
                # "no improvement" is inf, never the bound itself: a right subtree's bound is
                # best - left, and left + (best - left) may round below best
                ret = f_best[L] if f_best[L] < f_ub[L] else INF
                L -= 1
                if L < 0:
                    return ret
                continue
            f_next[L] = found + 1
            f_root[L] = found
            f_minus[L] = minus
            f_phase[L] = _AFTER_LEFT
            r = comb[found]
            for w in range(W):
                idx[L + 1, w] = idx[L, w] & pos[r, w]
            f_set[L + 1] = plus
            f_depth[L + 1] = f_depth[L] - 1 if f_depth[L] > 0 else -1
            f_phase[L + 1] = _ENTER
            f_best[L + 1] = f_best[L]
            f_ub[L + 1] = f_best[L]
            L += 1
            continue
        if phase == _AFTER_LEFT:
            if ret >= f_best[L]:
                f_phase[L] = _NEXT
                continue
            f_left[L] = ret
            f_phase[L] = _AFTER_RIGHT
            r = comb[f_root[L]]
            for w in range(W):
                idx[L + 1, w] = idx[L, w] & ~pos[r, w]
            f_set[L + 1] = f_minus[L]
            f_depth[L + 1] = f_depth[L] - 1 if f_depth[L] > 0 else -1
            f_phase[L + 1] = _ENTER
            f_best[L + 1] = f_best[L] - ret
            f_ub[L + 1] = f_best[L + 1]
            L += 1
            continue
        # _AFTER_RIGHT
        c = f_left[L] + ret
        if c < f_best[L]:
            f_best[L] = c
        f_phase[L] = _NEXT


@njit(cache=True)
def next_combination(comb, M):
    """Advance ``comb`` to the next K-combination of ``0 .. M-1`` in lexicographic order; False at the end."""
    K = comb.shape[0]
    t = K - 1
    while t >= 0 and comb[t] == M - K + t:
        t -= 1
    if t < 0:
        return False
    comb[t] += 1
    for u in range(t + 1, K):
        comb[u] = comb[u - 1] + 1
    return True


@njit(cache=True)
def search_chunk(comb, max_count, pos, defs, all_bits, obj, nmin, depth, best, best_comb, work):
    """Solve up to ``max_count`` combinations from ``comb`` on (lexicographic order).

    ``best[0]`` is the incumbent cost; a combination strictly better replaces it
    and is copied to ``best_comb``.  ``comb`` is left at the next combination
    to solve.  Returns ``(solved, finished)``.
    """
    M = pos.shape[0]
    K = comb.shape[0]
    done = 0
    while done < max_count:
        c = sodt_cost(comb, pos, defs, all_bits, obj, nmin, depth, best[0], work)
        done += 1
        if c < best[0]:
            best[0] = c
            for t in range(K):
                best_comb[t] = comb[t]
        if not next_combination(comb, M):
            return done, True
    return done, False
