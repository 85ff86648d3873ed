"""Admissible bounds, a greedy incumbent and the K = 2 path of the generic search (issue 20, item 4).

He & Little enumerate every K-combination of rules (spec eq. 12) and have no
bounds.  Everything here only lets the search skip work that provably cannot
change its answer: the tree returned stays the first optimum of the plain
enumeration (combinations in lexicographic order, roots in ``splits`` order),
ties included (tests check it against the plain loop and brute force).

Notation: ``f(T)`` the cost of a leaf holding the points ``T`` (0-1 loss or
squared error, :func:`._kernels.leaf_cost`), ``w(T)`` their weight, ``a+`` /
``a-`` the points a rule sends left / right, ``opt_k(T)`` the least cost of a
proper tree with at most ``k`` rules on the points ``T`` whose rules are
defined by points of ``T`` (under the request's ``min_samples_leaf`` and
depth), ``h(T)`` that of exactly one rule.

Facts used (each proved where it is used):

(F1) *Leaf costs are non-negative and the objective is their sum*, so a
     tree costs at least the cost of any part of its leaves.
(F2) *Removal* (0-1 loss only): for sets ``A`` and ``B``,
     ``f(A u B) <= f(A) + w(B)``: the majority class of ``A`` misclassifies in
     ``A u B`` at most ``f(A)`` plus all of ``B``, and the majority of ``A u B``
     does no worse.  Squared error has no such bound (one far point costs
     anything), so F2-based bounds are 0 for regression.
(F3) *A subtree moved to more data*: a proper tree ``t`` whose rules are
     defined by points of ``T`` is also a proper tree on all the points (every
     rule's defining points lie in its region, which only grows; leaves only
     gain points, so ``min_samples_leaf`` still holds; the depth is the same).
     Its leaves on all points are its leaves on ``T`` plus a partition of the
     rest ``Z``, so by F2 ``cost_all(t) <= cost_T(t) + w(Z)``; hence
     ``opt_k(T) >= opt_k(all) - w(all minus T)``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from .._numba import pack_rows_mask
from ._kernels import (
    SQUARED,
    ZERO_ONE_UNIT,
    Objective,
    best_split_in,
    first_def_starts,
    k2_roots,
    leaf_cost,
    make_work,
    side_table,
    sodt_cost,
    splits_reaching,
)
from .rules import RuleSet

__all__ = ["table_bytes", "tolerance", "side_costs", "removal_bound", "greedy_tree", "solve_pairs", "root_bounds", "PairResult"]

#: Most candidate pairs the K = 2 tie resolution collects (float objectives only).
MAX_TIE_PAIRS = 1 << 20


def table_bytes(n_rules: int, max_splits: int) -> int:
    """Bytes of the bounds' tables of a search over ``n_rules`` rules: leaf costs and weights
    (``4 M`` floats), the K = 2 path's roots (``10 M``) and the root bounds (``2 M K``)."""
    return 8 * n_rules * (14 + 2 * max(max_splits, 1))


def tolerance(obj: Objective, scale: float) -> float:
    """Slack for comparing costs summed in different orders: 0 for unit-weight 0-1 loss (integers),
    else ``1e-9 * (1 + |scale|)`` (far above rounding, far below any real difference)."""
    return 0.0 if obj.mode == ZERO_ONE_UNIT else 1e-9 * (1.0 + abs(scale))


def side_costs(rules: RuleSet, obj: Objective, all_bits: np.ndarray, nmin: int) -> tuple[np.ndarray, np.ndarray]:
    """``f[r, s]`` (cost of the leaf ``r+`` for ``s = 0``, ``r-`` for ``s = 1``; inf below
    ``nmin`` points) and ``w[r, s]`` (its weight), computed once per fit."""
    M = rules.n_rules
    f = np.empty((M, 2))
    w = np.empty((M, 2))
    side_table(np.ascontiguousarray(rules.pos), all_bits, obj, nmin, f, w)
    return f, w


def removal_bound(opt: float, w_rest: np.ndarray, obj: Objective, tol: float) -> np.ndarray:
    """``max(0, opt - w_rest - tol)``: by F3, a lower bound of ``opt_k(T)`` when ``opt <= opt_k(all)``
    and ``w_rest`` is the weight of the points outside ``T`` (0-1 loss; zeros for squared error or
    an unknown ``opt``)."""
    if obj.mode == SQUARED or not np.isfinite(opt):
        return np.zeros_like(w_rest)
    return np.maximum(0.0, opt - w_rest - tol)


def greedy_tree(rules: RuleSet, obj: Objective, max_splits: int, *, exact: bool, nmin: int,
                depth: int | None):
    """A greedy tree over the same rules: an incumbent for the search (spec item 4).

    Starting from one leaf, split, ``max_splits`` times, the leaf whose best
    split (:func:`._kernels.best_split_in`: a rule defined by points of the
    leaf, so the tree stays proper, both leaves with ``nmin`` points, depth
    respected) lowers the cost most; without ``exact`` only while that lowers
    the cost.  Any rule family works (axis, hyperplanes, user rules).

    Returns a :class:`.solver.Solution` (``optimal=False``) or None when no
    such tree exists (``exact`` and fewer than ``max_splits`` splits possible).
    """
    from .solver import Node, Solution

    n = rules.n_samples
    pos = np.ascontiguousarray(rules.pos)
    defs = np.ascontiguousarray(rules.defs)
    W = pos.shape[1]
    starts = first_def_starts(defs, n)
    scratch = np.empty((2, W), dtype=np.uint64)
    root = Node(-1, np.ones(n, dtype=bool))
    depth_of = {id(root): 0}
    used: set[int] = set()
    if int(root.points.sum()) < nmin:
        return None
    for _ in range(max_splits):
        choice = None
        for leaf in root.leaves():
            if depth is not None and depth_of[id(leaf)] >= depth:
                continue
            bits = pack_rows_mask(leaf.points)
            here = float(leaf_cost(bits, obj))
            c, r = best_split_in(bits, pos, defs, starts, obj, nmin, math.inf, -1, scratch)
            if r < 0:
                continue
            if r in used:  # an ancestor (a trivial split here): the first unused rule as good
                out = np.empty(rules.n_rules, dtype=np.int64)
                k = splits_reaching(bits, pos, defs, starts, obj, nmin, c, -1, scratch, out)
                free = [int(b) for b in out[:k] if int(b) not in used]
                if not free:
                    continue
                r = free[0]
            gain = here - c
            if choice is None or gain > choice[0]:
                choice = (gain, leaf, r)
        if choice is None or (not exact and not choice[0] > 0):
            break
        _, leaf, r = choice
        left = rules.left_mask(r)
        leaf.rule = r
        leaf.left = Node(-1, leaf.points & left)
        leaf.right = Node(-1, leaf.points & ~left)
        depth_of[id(leaf.left)] = depth_of[id(leaf.right)] = depth_of[id(leaf)] + 1
        used.add(r)
    rules_used = root.rules()
    if exact and len(rules_used) != max_splits:
        return None
    cost = float(sum(float(leaf_cost(pack_rows_mask(leaf.points), obj)) for leaf in root.leaves()))
    return Solution(cost, root, tuple(sorted(rules_used)), False)


@dataclass
class PairResult:
    """What :func:`solve_pairs` found."""

    cost: float  #: the least DP cost of a 2-combination at most ``ub`` (inf: none)
    combination: tuple  #: the first such combination in lexicographic order
    finished: bool
    lower_bound: float  #: a lower bound of the optimum over all 2-combinations
    n_scored: int  #: (root, side) pairs scored
    n_skipped: int  #: (root, side) pairs the bound excluded
    h1: np.ndarray  #: (M, 2) lower bounds of h(a+), h(a-) (exact where scored)


def _score_block(roots, lb, start, stop, pos, defs, starts, all_bits, obj, nmin, ftab, bound, tol, deadline):
    """One task of :func:`solve_pairs` (a module-level function, so that joblib backends can ship it)."""
    obj = obj._replace(counts=np.zeros_like(obj.counts))  # the scratch is per task
    best = np.array([bound])
    g = np.full(stop, math.inf)  # written at absolute positions start .. stop - 1
    h1 = np.full(stop, math.nan)
    t = start
    step = 64
    while t < stop:
        if deadline is not None and time.perf_counter() >= deadline:
            break
        end = min(stop, t + step)
        reached = k2_roots(roots, lb, t, end, pos, defs, starts, all_bits, obj, nmin, ftab, best, tol, g, h1)
        if reached < end:
            return reached, g[start:], h1[start:], float(best[0]), True
        t = end
        step = min(step * 2, 4096)
    return t, g[start:], h1[start:], float(best[0]), t >= stop


def solve_pairs(rules: RuleSet, obj: Objective, ftab: np.ndarray, wtab: np.ndarray, *, nmin: int,
                opt1: float, ub: float, deadline: float | None = None, n_jobs: int | None = 1) -> PairResult:
    """The K = 2 path (spec §3.13 item 7) for any rule family, with bounds.

    A tree of exactly two rules is a root ``a``, the other rule ``b`` on the
    side ``s`` of ``a`` holding ``b``'s defining points (``Kmat[a][b] = s``),
    and a leaf on the other side, so

        ``odt_2 = min_{a, s} f(a^{-s}) + h(a^s)``,

    ``h(a^s)`` the best split of ``a^s`` by a rule ``b != a`` defined by points
    of ``a^s`` (:func:`._kernels.best_split_in`; for hyperplanes that is the
    one-hyperplane problem on those points).  That is ``2 M`` single-split
    scans of ``M`` rules instead of ``C(M, 2)`` DPs, and each (root, side)
    has the lower bound

        ``lb(a, s) = f(a^{-s}) + max(0, opt1 - w(a^{-s}))``

    (F1, and F3 with ``k = 1``: ``opt1 <= opt_1(all)``).  Roots are scored in
    increasing ``lb``; the scan stops at the first ``lb > best + tol``: every
    later root has no tree below the best found (or ``ub``).

    Ties: the search's answer is the *first* 2-combination in lexicographic
    order whose DP cost is least.  Every combination of cost at most ``c*``
    (the least ``g``) has a root ``(a, s)`` with ``g(a, s) <= c*``, all of
    which were scored (their ``lb <= c*``); for each, the rules ``b`` reaching
    ``c*`` are listed (:func:`._kernels.splits_reaching`) and the listed
    combinations re-solved by the DP (:func:`._kernels.sodt_cost`), whose
    costs decide.  For unit weights the first ``b`` of each root suffices
    (``{a, b'}`` with ``b' < b`` is lexicographically smaller and as good).
    """
    M = rules.n_rules
    pos = np.ascontiguousarray(rules.pos)
    defs = np.ascontiguousarray(rules.defs)
    all_bits = pack_rows_mask(np.ones(rules.n_samples, dtype=bool))
    starts = first_def_starts(defs, rules.n_samples)
    tol = tolerance(obj, opt1 if np.isfinite(opt1) else 0.0)
    roots = np.arange(2 * M, dtype=np.int64)
    a, s = roots >> 1, roots & 1
    fo = ftab[a, 1 - s]
    rem = removal_bound(opt1, wtab[a, 1 - s], obj, tol)
    lb_all = fo + rem
    order = np.argsort(lb_all, kind="stable")
    roots_s = roots[order]
    lb_s = lb_all[order]
    g_s = np.full(2 * M, math.inf)
    h1_s = np.full(2 * M, math.nan)
    best = ub
    t = 0
    finished = False
    from .solver import run_tasks, task_count

    workers = task_count(n_jobs)
    block = 256
    while t < 2 * M:
        if deadline is not None and time.perf_counter() >= deadline:
            break
        if lb_s[t] > best + tol:
            finished = True
            break
        t0 = time.perf_counter()
        cuts = [min(2 * M, t + i * block) for i in range(workers + 1)]
        tasks = [(roots_s, lb_s, cuts[i], cuts[i + 1], pos, defs, starts, all_bits, obj, nmin, ftab, best, tol, deadline)
                 for i in range(workers) if cuts[i] < cuts[i + 1]]
        results = run_tasks(_score_block, tasks, n_jobs)
        stop_all = None
        for (start, stop), (reached, g, h1, b, done) in zip([(x[2], x[3]) for x in tasks], results):
            g_s[start:reached] = g[:reached - start]
            h1_s[start:reached] = h1[:reached - start]
            best = min(best, b)
            if reached < stop and stop_all is None:
                stop_all = (reached, done)
        if stop_all is not None:
            t, finished = stop_all[0], stop_all[1]
            break
        t = cuts[-1]
        if time.perf_counter() - t0 < 0.2:
            block = min(block * 2, 1 << 16)
    else:
        finished = True
    scored = ~np.isnan(h1_s)
    h1 = np.empty((M, 2))
    with np.errstate(invalid="ignore"):
        h1_flat = np.where(scored, h1_s, np.maximum(lb_s - fo[order], 0.0))
    h1_flat[~np.isfinite(h1_flat)] = 0.0
    h1.reshape(-1)[order] = np.maximum(h1_flat, 0.0)
    n_scored = int(scored.sum())
    c_star = float(g_s.min()) if n_scored else math.inf
    rest = ~scored
    lower = min(c_star, float(lb_s[rest].min())) if rest.any() else c_star
    if finished:
        lower = min(c_star, ub) if np.isfinite(c_star) else ub
    result = PairResult(math.inf, (), finished, lower, n_scored, 2 * M - n_scored, h1)
    if not np.isfinite(c_star):
        return result
    # tie resolution: the first 2-combination in lexicographic order of least DP cost
    W = pos.shape[1]
    scratch = np.empty((2, W), dtype=np.uint64)
    out = np.empty(M, dtype=np.int64)
    target = c_star + tol
    pairs: set = set()
    idx = np.empty(W, dtype=np.uint64)
    for t_ in np.flatnonzero(g_s <= target):
        r = int(roots_s[t_])
        ra, rs = r >> 1, r & 1
        idx[:] = all_bits & (pos[ra] if rs == 0 else ~pos[ra])
        k = splits_reaching(idx, pos, defs, starts, obj, nmin, target - ftab[ra, 1 - rs], ra, scratch, out)
        take = out[:1] if obj.mode == ZERO_ONE_UNIT else out[:k]
        for b in take[:k]:
            pairs.add((min(ra, int(b)), max(ra, int(b))))
        if len(pairs) > MAX_TIE_PAIRS:
            break
    work = make_work(2, W)
    best_pair, best_cost = (), math.inf
    for pair in sorted(pairs):
        c = sodt_cost(np.array(pair, dtype=np.int64), pos, defs, all_bits, obj, nmin, -1, math.inf, work)
        if c < best_cost:
            best_pair, best_cost = pair, c
    if best_cost <= ub:
        result.cost, result.combination = float(best_cost), best_pair
    return result


def root_bounds(ftab: np.ndarray, wtab: np.ndarray, h1: np.ndarray | None, opts: list[float], K: int,
                obj: Objective, tol: float) -> np.ndarray:
    """``rb[a, s, k]``: a lower bound on the cost of any subtree with exactly ``k`` rules on side
    ``s`` of a root ``a`` (``k < K``), for :func:`._kernels.sodt_cost`.

    * ``k = 0``: the leaf, ``f(a^s)`` exactly;
    * ``k = 1``: ``h(a^s)`` (exact or a lower bound, from :func:`solve_pairs`),
      or else F3 with ``opts[1]``;
    * ``k >= 2``: F3, ``max(0, opts[k] - w(a^{-s}))`` where ``opts[k] <=
      opt_k(all)`` (the best cost found with at most ``k`` rules, or less),
      0 when unknown.

    A root ``a`` with ``k+`` rules on its left and ``k-`` on its right has
    only trees costing at least ``rb[a, 0, k+] + rb[a, 1, k-]`` (F1: the cost
    is the sum of the two subtrees' costs), which is what the kernel prunes
    with.
    """
    M = ftab.shape[0]
    rb = np.zeros((M, 2, max(K, 1)))
    rb[:, :, 0] = ftab
    w_rest = wtab[:, ::-1]
    for k in range(1, K):
        opt = opts[k] if k < len(opts) else math.inf
        rem = removal_bound(opt, w_rest, obj, tol)
        if k == 1 and h1 is not None:
            rem = np.maximum(rem, h1)
        rb[:, :, k] = rem
    return rb


