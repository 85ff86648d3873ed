"""The exact axis-parallel path: branch-and-bound over root splits with a depth-2 kernel at the bottom.

For axis-parallel rules the He & Little problem ("at most K" rules ``x_d <=
x_{n,d}``, proper trees, ``max_depth``, ``min_samples_leaf``) is the optimal
axis-parallel tree with thresholds at data values (spec T19: keeping one rule
per (feature, point) loses nothing, and a split of a node on ``x_d <= v`` is
the rule of the node's point with the largest ``x_d <= v``, which lies in the
node, so every such tree is proper).  So it can be solved the MurTree / STreeD
way, over subsets of the data instead of combinations of rules::

    best(S, k, depth) = leaf(S)                                      if k = 0 or depth = 0
                      = min( leaf(S),
                             min over root splits x_d <= v of S (non-trivial),
                                 over k1 + k2 = k - 1 (k1, k2 <= 2**(depth-1) - 1),
                             of best(S_left, k1, depth - 1) + best(S_right, k2, depth - 1) )

with the minimum taken on ``(cost, number of splits)`` (ties go to fewer
splits), then on the first root in (feature, threshold) order, then on the
first budget split ``k1`` in increasing order.  A trivial split (an empty side)
never helps under "at most K" (dropping it keeps the cost with one split less),
so only thresholds between distinct values of ``S`` are tried.

- When every tree of the request has depth <= 2 (``depth <= 2`` or ``k <= 2``)
  :func:`arboretum.optimal.depth2.depth2_search` solves ``best`` directly
  (one scan per root split gives both sides' best single split).
- **Upper bounds**: each call gets ``bound`` and looks only for trees of cost
  ``< bound`` (else it reports that none exists); a parent passes its best
  cost so far (plus a hair, so that ties with fewer splits still count) minus
  what the other side already costs.  The greedy root (best single split) is
  evaluated first in every call, which gives a good incumbent at once.
- **Lower bounds**: the similarity bound of :mod:`.depth2` holds at every level
  (same proof: ``best`` of the left side grows, of the right side falls by at
  most the weight of the moved points), so roots near a bad root are skipped
  (weighted 0-1 loss with ``min_samples_leaf <= 1``); a call that found
  nothing below its bound proves the cost of its problem is at least the bound.
- **Cache**: results per (subset of points, k, depth): the optimum, or the
  lower bound a pruned call proved.

The search reports ``n_examined`` root splits evaluated out of ``n_total``
root splits considered (the rest were skipped by bounds), over all levels.
"""

from __future__ import annotations

import math
import time
from typing import Callable

import numpy as np

from .depth2 import best_single_root, depth2_search, leaf_of, scan_root, split_subset
from .solver import Node, Solution

__all__ = ["applies", "solve_axis"]

#: Point visits (``m * m * features``) per depth-2 kernel call, so that a deadline is checked often enough.
_KERNEL_CHUNK = 20_000_000


def applies(split_type: str, max_splits: int, exact: bool) -> bool:
    """Whether a request goes to this path: axis-parallel rules, "at most K", ``K >= 1``.

    ``exact_splits=True`` keeps the generic He & Little DP (exactly K rules
    needs empty leaves and trivial splits, which this search leaves out).
    """
    return split_type == "axis" and not exact and max_splits >= 1


class _Search:
    """One search: the data in sorted orders, the cache and the counters."""

    def __init__(self, X: np.ndarray, obj, nmin: int, deadline: float | None,
                 progress: Callable[[int, int, float], None] | None) -> None:
        from ._kernels import SQUARED

        self.X = X
        N, D = X.shape
        self.mode = 2 if obj.mode == SQUARED else 1
        self.n_stats = 3 if self.mode == 2 else max(1, obj.counts.shape[0])
        self.label, self.weight, self.target = obj.label, obj.weight, obj.target
        self.nmin = int(nmin)
        self.lipschitz = self.mode == 1 and self.nmin <= 1
        scale = float(self.weight.sum()) if self.mode == 1 else float(np.dot(self.weight, self.target ** 2)) + 1.0
        self.eps = 1e-9 * max(scale, 1e-300)
        self.deadline = deadline
        self.progress = progress
        self.side = np.zeros(N, dtype=np.int8)
        self.cache: dict = {}
        self.counts = np.zeros(2, dtype=np.int64)
        self.stopped = False
        self.levels = 0  # _level calls so far: the first is the top one, which reports progress

    # -- helpers ---------------------------------------------------------------------------------

    def _out_of_time(self) -> bool:
        if not self.stopped and self.deadline is not None and time.perf_counter() >= self.deadline:
            self.stopped = True
        return self.stopped

    def _args(self):
        return self.label, self.weight, self.target, self.mode, self.n_stats

    def _key(self, ords: np.ndarray, k: int, depth: int | None) -> tuple:
        mask = np.zeros(self.X.shape[0], dtype=bool)
        mask[ords[0]] = True
        return np.packbits(mask).tobytes(), k, depth

    # -- the recursion ---------------------------------------------------------------------------

    def solve(self, ords: np.ndarray, vals: np.ndarray, k: int, depth: int | None, bound: float):
        """``(cost, splits, tree)`` of ``best(S, k, depth)`` if its cost is below ``bound``, else None.

        ``tree`` is None for a leaf or ``(feature, value, left, right)``.
        """
        m = ords.shape[1]
        if depth is not None:
            k = min(k, 2 ** depth - 1)
        if k == 0 or m < max(2, 2 * self.nmin):
            c = leaf_of(ords, m, *self._args(), self.nmin)
            return (c, 0, None) if c < bound else None
        key = self._key(ords, k, depth)
        hit = self.cache.get(key)
        if hit is not None:
            if hit[0] == "lb":
                if bound <= hit[1]:
                    return None
            else:
                return hit[1] if hit[1][0] < bound else None
        if k == 1:
            res = self._single(ords, vals, bound)
        elif k <= 2 or (depth is not None and depth <= 2):
            res = self._depth2(ords, vals, min(k, 3), bound)
        else:
            res = self._level(ords, vals, k, depth, bound)
        if not self.stopped:
            self.cache[key] = ("lb", bound) if res is None else ("opt", res)
        return res

    def _single(self, ords, vals, bound):
        m = ords.shape[1]
        leaf = leaf_of(ords, m, *self._args(), self.nmin)
        c, d, t = best_single_root(ords, vals, m, *self._args(), self.nmin)
        self.counts[1] += 1
        self.counts[0] += 1
        if leaf <= c:
            return (leaf, 0, None) if leaf < bound else None
        if c < bound:
            return c, 1, (int(d), float(vals[d, t]), None, None)
        return None

    def _depth2(self, ords, vals, max_k, bound):
        m, D = ords.shape[1], ords.shape[0]
        args = self._args()
        leaf = leaf_of(ords, m, *args, self.nmin)
        state = np.array([leaf if leaf < bound else math.inf, 0.0 if leaf < bound else -1.0, bound])
        rec = np.full(6, -1, dtype=np.int64)
        # the greedy root first: its tree's cost bounds the ordered scan (it is found again in order)
        g_c, g_d, g_t = best_single_root(ords, vals, m, *args, self.nmin)
        g_rec = None
        if g_d >= 0:
            work = np.zeros((3, 2 * self.n_stats))
            pos = np.empty(4, dtype=np.int64)
            lL, lR, sL, sR = scan_root(ords, vals, m, g_d, g_t, self.side, *args, self.nmin, max_k >= 2, work, pos)
            self.counts[0] += 1
            cands = [(lL + lR, 1, (-1, -1, -1, -1))]
            if max_k >= 2:
                cands += [(sL + lR, 2, (pos[0], pos[1], -1, -1)), (lL + sR, 2, (-1, -1, pos[2], pos[3]))]
            if max_k >= 3:
                cands.append((sL + sR, 3, tuple(pos)))
            g_cost, g_k, g_sub = min(cands, key=lambda c: (c[0], c[1]))
            if g_cost < state[2]:
                state[2] = min(state[2], g_cost + self.eps)
                g_rec = (g_cost, g_k, np.array([g_d, g_t, *g_sub], dtype=np.int64))
        step = max(1, min(D, _KERNEL_CHUNK // max(1, m * m)))
        for lo in range(0, D, step):
            if self._out_of_time():
                break
            depth2_search(ords, vals, m, *args, self.nmin, max_k, lo, min(D, lo + step), self.lipschitz,
                          self.eps, self.side, state, rec, self.counts)
        if self.stopped and g_rec is not None and (state[1] < 0 or g_rec[0] < state[0]):
            state[0], state[1], rec = g_rec[0], g_rec[1], g_rec[2]  # stopped before reaching it in order
        if state[1] < 0 or not state[0] < bound:
            return None
        if state[1] == 0:
            return state[0], 0, None
        d1, t1, dL, tL, dR, tR = (int(v) for v in rec)

        def sub(d, t):
            return None if d < 0 else (d, float(vals[d, t]), None, None)

        tree = (d1, float(vals[d1, t1]), sub(dL, tL), sub(dR, tR))
        return float(state[0]), int(state[1]), tree

    def _level(self, ords, vals, k, depth, bound):
        """Roots in (feature, threshold) order, each with its best budget split; similarity skips."""
        m, D = ords.shape[1], ords.shape[0]
        args = self._args()
        dd = None if depth is None else depth - 1
        cap = k - 1 if dd is None else min(k - 1, 2 ** dd - 1)
        options = [(k1, k - 1 - k1) for k1 in range(k) if k1 <= cap and k - 1 - k1 <= cap]
        options.sort(key=lambda o: (abs(o[0] - o[1]), o[0]))  # balanced first: usually the best bound
        leaf = leaf_of(ords, m, *args, self.nmin)
        best = (leaf, 0, None, -1) if leaf < bound else None
        top = self.levels == 0
        self.levels += 1

        def ub() -> float:
            return bound if best is None else min(bound, best[0] + self.eps)

        prev: dict = {}  # option -> lower bounds (left, right) on its sides' costs at the last evaluated root

        def root(d1: int, t: int, moved: float):
            """The best tree under root (d1, t) with cost below ub(), and a lower bound on its cost.

            ``moved``: weight of the points moved to the left since the last evaluated root of
            this feature (inf for none); with the similarity bound, the left side's best cost
            cannot fall and the right side's falls by at most ``moved``, so the last root's side
            costs (or the bounds its pruned calls proved) bound this root's sides from below.
            """
            oL, vL, oR, vR = split_subset(ords, vals, m, d1, t, self.side)
            if oL.shape[1] < self.nmin or oR.shape[1] < self.nmin:
                return None, math.inf
            entry = u = ub()
            here = None
            for k1, k2 in options:
                lbL, lbR = 0.0, 0.0
                if self.lipschitz and moved < math.inf and (k1, k2) in prev:
                    lbL, lbR = prev[k1, k2][0], max(0.0, prev[k1, k2][1] - moved)
                if lbL + lbR >= u:
                    prev[k1, k2] = (lbL, lbR)
                    continue
                rl = self.solve(oL, vL, k1, dd, u - lbR)
                if rl is None:
                    prev[k1, k2] = (max(lbL, u - lbR), lbR)
                    continue
                rr = self.solve(oR, vR, k2, dd, u - rl[0])
                if rr is None:
                    prev[k1, k2] = (rl[0], max(lbR, u - rl[0]))
                    continue
                prev[k1, k2] = (rl[0], rr[0])
                cand = (rl[0] + rr[0], 1 + rl[1] + rr[1], k1, (d1, float(vals[d1, t]), rl[2], rr[2]))
                if here is None or cand[:3] < here[:3]:
                    here = cand
                    u = min(u, cand[0] + self.eps)
            return here, (here[0] if here is not None else entry)

        # the greedy root first (its cost bounds the ordered scan; it is found again in order)
        g_c, g_d, g_t = best_single_root(ords, vals, m, *args, self.nmin)
        greedy = None
        if g_d >= 0:
            self.counts[0] += 1
            here, _ = root(int(g_d), int(g_t), math.inf)
            if here is not None and here[0] < ub():
                greedy = here
                bound = min(bound, here[0] + self.eps)
        weight = self.weight
        for d1 in range(D):
            xs = vals[d1]
            cw = np.cumsum(weight[ords[d1]])
            last, last_w = -math.inf, None
            for t in np.flatnonzero(xs[:-1] != xs[1:]):
                self.counts[1] += 1
                if self.lipschitz and last_w is not None and last - (cw[t] - last_w) >= ub():
                    continue
                if self._out_of_time():
                    break
                self.counts[0] += 1
                here, lower = root(d1, int(t), math.inf if last_w is None else cw[t] - last_w)
                last, last_w = (lower if lower < math.inf else -math.inf), cw[t]
                if here is not None and here[0] < bound and (best is None or here[:2] < best[:2]):
                    best = here[:2] + (here[3], 0)
                if top and self.progress is not None:
                    self.progress(int(self.counts[0]), int(self.counts[1]), math.inf if best is None else best[0])
            if self.stopped:
                break
        if self.stopped and greedy is not None and (best is None or greedy[:2] < best[:2]):
            best = greedy[:2] + (greedy[3], 0)
        if best is None:
            return None
        return best[0], best[1], best[2]


def _rule_index(X: np.ndarray, d: int, v: float, region: np.ndarray) -> int:
    """Index in :func:`arboretum.optimal.rules.axis_rules` of ``x_d <= v`` rewritten with a defining
    point inside ``region``: the region's first point of largest ``x_d`` at or below ``v``."""
    cand = np.flatnonzero(region & (X[:, d] <= v))
    top = X[cand, d].max()
    return d * X.shape[0] + int(cand[X[cand, d] == top][0])


def solve_axis(X: np.ndarray, obj, max_splits: int, *, nmin: int = 0, depth: int | None = None,
               deadline: float | None = None, progress: Callable[[int, int, float], None] | None = None,
               incumbent: float | None = None) -> Solution:
    """The optimal axis-parallel tree with at most ``max_splits`` splits (see the module).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    obj : Objective
        The DP's objective (:func:`arboretum.optimal.solver.make_objective`).
    max_splits : int
        ``K`` (at most).
    nmin : int
        Fewest training points in a leaf.
    depth : int or None
        Most splits on a root-to-leaf path.
    deadline : float or None
        ``time.perf_counter()`` value at which to stop and return the best tree
        found (``optimal=False``).
    progress : callable, optional
        Called with ``(roots evaluated, roots considered, best cost)``.
    incumbent : float, optional
        The cost of a known feasible tree: only trees at most as good are
        looked for (none found: the result has no tree).

    Returns
    -------
    Solution
        Rules indexed as in :func:`arboretum.optimal.rules.axis_rules`;
        ``n_examined`` root splits evaluated of ``n_total`` considered.
    """
    from .._numba import pack_rows_mask
    from ._kernels import leaf_cost

    X = np.ascontiguousarray(X, dtype=np.float64)
    N, D = X.shape
    order = np.argsort(X, axis=0, kind="stable").T
    ords = np.ascontiguousarray(order, dtype=np.int64)
    vals = np.ascontiguousarray(np.take_along_axis(X.T, order, axis=1))
    search = _Search(X, obj, nmin, deadline, progress)
    bound = math.inf if incumbent is None else incumbent * (1 + 1e-12) + search.eps
    res = search.solve(ords, vals, max_splits, depth, bound) if N > 0 else None
    optimal = not search.stopped
    n_eval, n_total = int(search.counts[0]), int(search.counts[1])
    if res is None:
        return Solution(math.inf, None, (), optimal, n_eval, n_total)

    def build(desc, mask: np.ndarray) -> Node:
        if desc is None:
            return Node(-1, mask)
        d, v, left, right = desc
        go = X[:, d] <= v
        return Node(_rule_index(X, d, v, mask), mask, build(left, mask & go), build(right, mask & ~go))

    tree = build(res[2], np.ones(N, dtype=bool))
    cost = float(sum(leaf_cost(pack_rows_mask(leaf.points), obj) for leaf in tree.leaves()))
    return Solution(cost, tree, tuple(tree.rules()), optimal, n_eval, n_total)
