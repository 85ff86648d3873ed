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


@njit(cache=True, nogil=True)
def leaf_cost(idx, obj):
    """Cost of a leaf holding the points of ``idx``: weighted misclassification of the majority
    class, weighted squared error around the weighted mean (two passes), or a user's cost of the
    leaf's statistics (USER).  Empty leaf: 0 for the built-in objectives."""
    mode = obj.mode
    if mode == USER:
        return _user_leaf_cost(idx, obj)
    cls_bits = obj.cls_bits
    label = obj.label
    weight = obj.weight
    target = obj.target
    counts = obj.counts
    return _cost(idx, mode, cls_bits, label, weight, target, counts)


@njit(cache=True, inline="always")
def _cost(idx, mode, cls_bits, label, weight, target, counts):
    """:func:`leaf_cost` on the objective's arrays, for the kernels, which read the fields of
    the :class:`Objective` once (a field read in a hot loop costs a reference count each time,
    more than the popcounts themselves).  The unit-weight 0-1 loss is inlined; the weighted
    objectives, whose cost is a pass over the points anyway, are a call."""
    if mode == ZERO_ONE_UNIT:
        total = 0
        best = 0
        for c in range(cls_bits.shape[0]):
            k = 0
            for w in range(idx.shape[0]):
                k += np.int64(popcount64(idx[w] & cls_bits[c, w]))
            total += k
            if k > best:
                best = k
        return float(total - best)
    return _weighted_cost(idx, mode, label, weight, target, counts)


@njit(cache=True, nogil=True)
def _weighted_cost(idx, mode, label, weight, target, counts):
    """Weighted 0-1 loss (``mode == ZERO_ONE``) or weighted squared error of the points ``idx``."""
    W = idx.shape[0]
    if mode == ZERO_ONE:
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


@njit(cache=True, nogil=True)
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
    rb: np.ndarray  #: (M, 2, >= K) float64 root bounds (:mod:`.bounds`), or shape (0, 2, 1): none
    tally: np.ndarray  #: (2,) int64: roots of the last combination skipped by ``rb`` / tried


def make_work(K: int, n_words: int, rb: np.ndarray | None = None) -> Work:
    """Scratch of :func:`sodt_cost` for ``K`` rules over ``n_words`` words; ``rb[r, s, k]`` is a
    lower bound on the cost of any subtree with exactly ``k`` rules on side ``s`` (0: ``r+``,
    1: ``r-``) of the root ``r`` (see :func:`.bounds.root_bounds`)."""
    z = lambda: np.zeros(K + 2, dtype=np.int64)  # noqa: E731
    if rb is None:
        rb = np.zeros((0, 2, 1))
    return Work(np.zeros((max(K, 1), max(K, 1)), dtype=np.int64), np.zeros((K + 2, n_words), dtype=np.uint64),
                z(), z(), z(), z(), z(), z(), np.zeros(K + 2), np.zeros(K + 2), np.zeros(K + 2),
                np.ascontiguousarray(rb, dtype=np.float64), np.zeros(2, dtype=np.int64))


_ENTER = 0
_NEXT = 1
_AFTER_LEFT = 2
_AFTER_RIGHT = 3


@njit(cache=True, nogil=True)
def sodt_cost(comb, pos, defs, all_bits, obj, nmin, depth, ub, work):
    """``sodt`` of the combination ``comb`` (spec eq. 17) with the constraints fused (§3.9).

    Returns the optimal cost of a proper tree using exactly the rules of
    ``comb`` when it is below ``ub``, else ``inf`` (also when no proper tree
    satisfies the constraints).  ``nmin``: fewest points in a
    leaf; ``depth``: most splits on a root-to-leaf path (-1: any).

    With a root-bound table ``work.rb`` (rows for every rule), a root ``a`` of
    the whole combination whose ``k+`` rules go left and ``k-`` right is
    skipped when ``rb[a, 0, k+] + rb[a, 1, k-] >= ub``: every tree under that
    root costs at least that much (the table's entries are lower bounds), so
    none of them is below ``ub``.  ``work.tally`` counts the roots skipped
    so and the roots tried.
    """
    o_mode = obj.mode
    o_cls = obj.cls_bits
    o_label = obj.label
    o_weight = obj.weight
    o_target = obj.target
    o_counts = obj.counts
    K = comb.shape[0]
    km = work.km
    local_kmat(comb, pos, defs, km)
    rb = work.rb
    tally = work.tally
    tally[0] = 0
    tally[1] = 0
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
                    if o_mode == USER:
                        ret = _user_leaf_cost(idx[L], obj)
                    else:
                        ret = _cost(idx[L], o_mode, o_cls, o_label, o_weight, o_target, o_counts)
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
                    if ok and L == 0 and rb.shape[0] > 0:
                        k_plus = 0
                        k_minus = 0
                        for b in range(K):
                            if (plus >> b) & 1:
                                k_plus += 1
                            if (minus >> b) & 1:
                                k_minus += 1
                        r = comb[a]
                        if rb[r, 0, k_plus] + rb[r, 1, k_minus] >= f_best[0]:
                            tally[0] += 1
                            ok = False
                    if ok:
                        found = a
                        if L == 0:
                            tally[1] += 1
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


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
def search_chunk(comb, max_count, pos, defs, all_bits, obj, nmin, depth, best, best_comb, work):
    """Solve up to ``max_count`` combinations from ``comb`` on (lexicographic order).

    ``best[0]`` is the incumbent cost; a combination strictly better replaces it
    and is copied to ``best_comb``.  ``comb`` is left at the next combination
    to solve.  Returns ``(solved, finished)``; ``best[1]`` (when present)
    counts the combinations whose every root the root bounds excluded.
    """
    M = pos.shape[0]
    K = comb.shape[0]
    done = 0
    while done < max_count:
        c = sodt_cost(comb, pos, defs, all_bits, obj, nmin, depth, best[0], work)
        if work.tally[1] == 0 and work.tally[0] > 0 and best.shape[0] > 1:
            best[1] += 1.0
        done += 1
        if c < best[0]:
            best[0] = c
            for t in range(K):
                best_comb[t] = comb[t]
        if not next_combination(comb, M):
            return done, True
    return done, False


# ---------------------------------------------------------------------------
# bounds, single splits inside a subset, the K = 2 path (:mod:`.bounds`)
# ---------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def leaf_weight(idx, obj):
    """Total weight of the points of ``idx`` (their number for unit weights)."""
    if obj.mode == ZERO_ONE_UNIT:
        return float(_count(idx))
    weight = obj.weight
    total = 0.0
    for w in range(idx.shape[0]):
        b = idx[w]
        while b != 0:
            t = np.int64(ctz64(b))
            total += weight[w * 64 + t]
            b &= b - np.uint64(1)
    return total


@njit(cache=True, nogil=True)
def side_table(pos, all_bits, obj, nmin, f, wt):
    """``f[r, s]``: cost of the leaf ``r+`` (``s = 0``) or ``r-`` (``s = 1``), inf when it holds
    fewer than ``nmin`` points; ``wt[r, s]``: its weight."""
    o_mode = obj.mode
    o_cls = obj.cls_bits
    o_label = obj.label
    o_weight = obj.weight
    o_target = obj.target
    o_counts = obj.counts
    M = pos.shape[0]
    W = all_bits.shape[0]
    idx = np.empty(W, dtype=np.uint64)
    for r in range(M):
        for s in range(2):
            for w in range(W):
                idx[w] = all_bits[w] & (pos[r, w] if s == 0 else ~pos[r, w])
            if _count(idx) < nmin:
                f[r, s] = INF
            elif o_mode == USER:
                f[r, s] = _user_leaf_cost(idx, obj)
            else:
                f[r, s] = _cost(idx, o_mode, o_cls, o_label, o_weight, o_target, o_counts)
            wt[r, s] = leaf_weight(idx, obj)


@njit(cache=True, inline="always")
def _defs_in(defs, b, idx):
    for p in range(defs.shape[1]):
        n = defs[b, p]
        if n < 0:
            break
        if ((idx[n >> 6] >> np.uint64(n & 63)) & np.uint64(1)) == 0:
            return False
    return True


@njit(cache=True, inline="always")
def _defs_inside(defs, b, inside):
    for p in range(defs.shape[1]):
        n = defs[b, p]
        if n < 0:
            break
        if not inside[n]:
            return False
    return True


@njit(cache=True, nogil=True)
def _scan_unit(idx, inside, starts, pos, defs, cls_bits, nmin, ub, skip, lo, hi, out, collect):
    """:func:`best_split_in` / :func:`splits_reaching` for unit-weight 0-1 loss (popcounts only,
    no call in the loop)."""
    M = pos.shape[0]
    W = idx.shape[0]
    C = cls_bits.shape[0]
    best = ub
    found = -1
    n_out = 0
    b = -1
    while b + 1 < M:
        b += 1
        if starts.shape[0] > 0 and not inside[defs[b, 0]]:
            b = starts[defs[b, 0] + 1] - 1  # the rules of that first defining point all fail
            continue
        if b == skip or not _defs_inside(defs, b, inside):
            continue
        n_lo = 0
        n_hi = 0
        for w in range(W):
            lo[w] = idx[w] & pos[b, w]
            hi[w] = idx[w] & ~pos[b, w]
            n_lo += np.int64(popcount64(lo[w]))
            n_hi += np.int64(popcount64(hi[w]))
        if n_lo < nmin or n_hi < nmin:
            continue
        m_lo = 0
        m_hi = 0
        for c in range(C):
            k_lo = 0
            k_hi = 0
            for w in range(W):
                k_lo += np.int64(popcount64(lo[w] & cls_bits[c, w]))
                k_hi += np.int64(popcount64(hi[w] & cls_bits[c, w]))
            if k_lo > m_lo:
                m_lo = k_lo
            if k_hi > m_hi:
                m_hi = k_hi
        c = float(n_lo - m_lo + n_hi - m_hi)
        if collect:
            if c <= ub:
                out[n_out] = b
                n_out += 1
        elif c < best or (found < 0 and c <= best):
            best = c
            found = b
    return best, found, n_out


@njit(cache=True, nogil=True)
def _scan_weighted(idx, inside, starts, pos, defs, mode, label, weight, target, counts, nmin, ub, skip, lo, hi, out,
                   collect):
    """:func:`best_split_in` / :func:`splits_reaching` for the weighted objectives."""
    M = pos.shape[0]
    W = idx.shape[0]
    best = ub
    found = -1
    n_out = 0
    b = -1
    while b + 1 < M:
        b += 1
        if starts.shape[0] > 0 and not inside[defs[b, 0]]:
            b = starts[defs[b, 0] + 1] - 1  # the rules of that first defining point all fail
            continue
        if b == skip or not _defs_inside(defs, b, inside):
            continue
        for w in range(W):
            lo[w] = idx[w] & pos[b, w]
            hi[w] = idx[w] & ~pos[b, w]
        if nmin > 0 and (_count(lo) < nmin or _count(hi) < nmin):
            continue
        cl = _weighted_cost(lo, mode, label, weight, target, counts)
        if cl > (ub if collect else best):
            continue
        c = cl + _weighted_cost(hi, mode, label, weight, target, counts)
        if collect:
            if c <= ub:
                out[n_out] = b
                n_out += 1
        elif c < best or (found < 0 and c <= best):
            best = c
            found = b
    return best, found, n_out


@njit(cache=True, nogil=True)
def first_def_starts(defs, N):
    """``starts[p]``: the first rule whose first defining point is ``>= p`` (``N + 1`` entries),
    when the first defining points never decrease along the rules (hyperplanes: subsets in
    lexicographic order), so a scan skips every rule of a first point outside the subset at
    once; empty (no skipping) otherwise."""
    M = defs.shape[0]
    for b in range(1, M):
        if defs[b, 0] < defs[b - 1, 0] or defs[b, 0] < 0:
            return np.zeros(0, dtype=np.int64)
    starts = np.empty(N + 1, dtype=np.int64)
    b = 0
    for p in range(N + 1):
        while b < M and defs[b, 0] < p:
            b += 1
        starts[p] = b
    return starts


@njit(cache=True, nogil=True)
def _scan(idx, pos, defs, starts, obj, nmin, ub, skip, scratch, out, collect):
    N = obj.label.shape[0]
    inside = np.zeros(N, dtype=np.bool_)
    for w in range(idx.shape[0]):
        b = idx[w]
        while b != 0:
            inside[w * 64 + np.int64(ctz64(b))] = True
            b &= b - np.uint64(1)
    lo = scratch[0]
    hi = scratch[1]
    mode = obj.mode
    if mode == ZERO_ONE_UNIT:
        cls_bits = obj.cls_bits
        return _scan_unit(idx, inside, starts, pos, defs, cls_bits, nmin, ub, skip, lo, hi, out, collect)
    label = obj.label
    weight = obj.weight
    target = obj.target
    counts = obj.counts
    return _scan_weighted(idx, inside, starts, pos, defs, mode, label, weight, target, counts, nmin, ub, skip, lo, hi,
                          out, collect)


@njit(cache=True, nogil=True)
def best_split_in(idx, pos, defs, starts, obj, nmin, ub, skip, scratch):
    """The best single split of the points ``idx`` by a rule whose defining points all lie in
    ``idx`` (so that it may sit below the rules that made ``idx``; rule ``skip`` excluded).

    Returns ``(cost, rule)`` of the first rule (in rule order) of least cost
    among those costing at most ``ub``, or ``(inf, -1)`` when none does.
    Both leaves must hold ``nmin`` points.  ``scratch``: (2, n_words) uint64;
    ``starts``: :func:`first_def_starts` of ``defs``.
    """
    out = np.empty(0, dtype=np.int64)
    best, found, _ = _scan(idx, pos, defs, starts, obj, nmin, ub, skip, scratch, out, False)
    return (best if found >= 0 else INF), found


@njit(cache=True, nogil=True)
def splits_reaching(idx, pos, defs, starts, obj, nmin, target, skip, scratch, out):
    """Every rule (as :func:`best_split_in` admits them) whose split of ``idx`` costs at most
    ``target``, in rule order, into ``out``; returns how many."""
    _, _, n = _scan(idx, pos, defs, starts, obj, nmin, target, skip, scratch, out, True)
    return n


@njit(cache=True, nogil=True)
def k2_roots(roots, lb, start, stop, pos, defs, starts, all_bits, obj, nmin, ftab, best, tol, g, h1):
    """Score the roots ``roots[start:stop]`` of the K = 2 path (see :func:`.bounds.solve_pairs`).

    Root ``t`` is ``(a, s) = (roots[t] >> 1, roots[t] & 1)``: rule ``a`` at
    the root, the second rule on side ``s`` (0: ``a+``), the other side a
    leaf.  The roots come in increasing ``lb`` (a lower bound of their best
    tree); the scan stops at the first with ``lb > best[0] + tol`` (all later
    ones are no better) and returns its position (``stop`` if none).
    ``g[t]``: cost of the root's best tree (inf if none is at most
    ``best[0] + tol``); ``h1[t]``: a lower bound of the best single split of
    side ``s`` (exact when ``g[t]`` is finite).
    """
    W = all_bits.shape[0]
    idx = np.empty(W, dtype=np.uint64)
    scratch = np.empty((2, W), dtype=np.uint64)
    for t in range(start, stop):
        if lb[t] > best[0] + tol:
            return t
        a = roots[t] >> 1
        s = roots[t] & 1
        fo = ftab[a, 1 - s]
        g[t] = INF
        h1[t] = lb[t] - fo if fo < INF else INF
        if fo == INF:
            continue
        for w in range(W):
            idx[w] = all_bits[w] & (pos[a, w] if s == 0 else ~pos[a, w])
        ub = best[0] + tol - fo
        c, b = best_split_in(idx, pos, defs, starts, obj, nmin, ub, a, scratch)
        if b >= 0:
            h1[t] = c
            g[t] = fo + c
            if g[t] < best[0]:
                best[0] = g[t]
        elif ub > h1[t]:
            h1[t] = ub
    return stop
