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

__all__ = ["Node", "Solution", "make_objective", "solve", "sodt_tree", "n_combinations", "leaf_value",
           "run_tasks", "task_count", "combination_at"]

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
    n_pruned: int = 0
    lower_bound: float = 0.0
    stop: str = "completed"


def task_count(n_jobs: int | None) -> int:
    """Workers the combination loop feeds at once: ``joblib.effective_n_jobs(n_jobs)`` (so that
    ``None`` follows an enclosing ``joblib.parallel_backend``), 1 without joblib."""
    if n_jobs == 1:
        return 1
    try:
        import joblib
    except ImportError:  # pragma: no cover
        return 1
    return max(1, int(joblib.effective_n_jobs(n_jobs)))


def run_tasks(fn, tasks: list, n_jobs: int | None) -> list:
    """``[fn(*t) for t in tasks]``, spread over joblib workers (threads by default; the kernels
    release the GIL) unless one worker; results in task order."""
    if task_count(n_jobs) == 1 or len(tasks) <= 1:
        return [fn(*t) for t in tasks]
    from joblib import Parallel, delayed

    return Parallel(n_jobs=n_jobs, prefer="threads")(delayed(fn)(*t) for t in tasks)


def combination_at(rank: int, M: int, k: int) -> np.ndarray:
    """The ``rank``-th ``k``-combination of ``0 .. M-1`` in lexicographic order."""
    out = np.empty(k, dtype=np.int64)
    x = 0
    for i in range(k):
        while True:
            c = math.comb(M - x - 1, k - i - 1)
            if rank < c:
                break
            rank -= c
            x += 1
        out[i] = x
        x += 1
    return out


def _search_block(comb, count, pos, defs, all_bits, obj, nmin, dep, rb, bound, deadline):
    """Solve ``count`` combinations from ``comb`` on with the incumbent ``bound`` (one task of
    :func:`solve`).  Returns ``(solved, best, best_comb, n_pruned, stopped)``."""
    obj = obj._replace(counts=np.zeros_like(obj.counts))  # the scratch is per task
    k = comb.shape[0]
    comb = comb.copy()
    work = make_work(k, pos.shape[1], rb)
    best = np.array([bound, 0.0])
    best_comb = np.full(k, -1, dtype=np.int64)
    done = 0
    step = FIRST_CHUNK
    while done < count:
        if deadline is not None and time.perf_counter() >= deadline:
            return done, float(best[0]), best_comb, int(best[1]), True
        t0 = time.perf_counter()
        n, finished = search_chunk(comb, min(step, count - done), pos, defs, all_bits, obj, nmin, dep, best,
                                   best_comb, work)
        done += int(n)
        if finished:
            break
        if time.perf_counter() - t0 < CHUNK_SECONDS and step < 1 << 22:
            step *= 2
    return done, float(best[0]), best_comb, int(best[1]), False


def _level(k, M, pos, defs, all_bits, obj, nmin, dep, rb, bound, deadline, n_jobs, progress, counters,
           floor=-math.inf):
    """One level of the loop: every ``k``-combination, blocks of them spread over workers.

    Blocks run with the incumbent ``bound`` known when their batch starts and
    their results are merged in block order (a strictly better block replaces
    the best), so the first minimiser in lexicographic order wins whatever
    the number of workers.  ``floor`` is a lower bound of every combination of
    the level: once the best is at most ``floor``, no later combination can be
    strictly better and the rest of the level is skipped (counted as pruned).
    Returns ``(best, combination or None, stopped)``.
    """
    total = math.comb(M, k)
    workers = task_count(n_jobs)
    best, best_comb = bound, None
    rank = 0
    block = FIRST_CHUNK * 16
    while rank < total:
        if deadline is not None and time.perf_counter() >= deadline:
            return best, best_comb, True
        t0 = time.perf_counter()
        tasks = []
        for _ in range(workers):
            if rank >= total:
                break
            count = min(block, total - rank)
            tasks.append((combination_at(rank, M, k), count, pos, defs, all_bits, obj, nmin, dep, rb, best,
                          deadline))
            rank += count
        stopped = False
        for done, b, bc, pruned, stop in run_tasks(_search_block, tasks, n_jobs):
            counters[0] += done
            counters[1] += pruned
            if b < best:
                best, best_comb = b, bc.copy()
            stopped = stopped or stop
        if progress is not None:
            progress(counters[0], counters[2], best)
        if stopped:
            return best, best_comb, True
        if best <= floor and rank < total:
            counters[0] += total - rank
            counters[1] += total - rank
            break
        if time.perf_counter() - t0 < 0.25 and block < 1 << 24:
            block *= 2
    return best, best_comb, False


def _root_bound_min(rb: np.ndarray, k: int) -> float:
    """``min_a min_{k1 + k2 = k - 1} rb[a, 0, k1] + rb[a, 1, k2]``: a lower bound of every tree with
    exactly ``k`` rules (its root ``a`` has ``k1`` rules on the left, ``k2`` on the right; F1)."""
    if rb.shape[0] == 0:
        return 0.0
    return float(min(np.min(rb[:, 0, k1] + rb[:, 1, k - 1 - k1]) for k1 in range(k)))


def solve(rules: RuleSet, obj: Objective, max_splits: int, *, exact: bool = False, nmin: int = 0,
          depth: int | None = None, deadline: float | None = None,
          progress: Callable[[int, int, float], None] | None = None, incumbent: float | None = None,
          bounds: bool = True, n_jobs: int | None = 1) -> Solution:
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
        best found (``optimal=False``) with a lower bound.
    progress : callable, optional
        Called between chunks with ``(examined, total, best cost)``.
    incumbent : float, optional
        The cost of a tree known to be feasible (e.g. a greedy tree over the
        same rules): the search starts with the bound just above it, so it
        skips every combination that cannot reach it (exact: a combination
        whose optimum is at most ``incumbent`` is still found, and the first
        minimiser in order still wins).  If no combination reaches it, the
        result has no tree.
    bounds : bool
        Use the admissible bounds of :mod:`.bounds` (the K = 2 path, root
        bounds); False runs the plain enumeration (the reference the bounds
        are tested and timed against).  Same answer either way.
    n_jobs : int or None
        Workers for the combination loop (:func:`run_tasks`); same answer.

    Returns
    -------
    Solution
        ``tree`` is None only when no tree satisfies the constraints and the
        loop completed (infeasible request); ``cost`` is then ``inf``.
        ``n_examined`` / ``n_total``: work units done / in all (K-combinations;
        on the K = 2 path, (root, side) pairs, ``2 M`` per level), ``n_pruned``
        those of them the bounds excluded without solving.
    """
    from . import bounds as B

    M = rules.n_rules
    n = rules.n_samples
    all_bits = pack_rows_mask(np.ones(n, dtype=bool))
    pos = np.ascontiguousarray(rules.pos)
    defs = np.ascontiguousarray(rules.defs)
    dep = -1 if depth is None else int(depth)
    ks = [max_splits] if exact else list(range(0, max_splits + 1))
    pair_level = bounds and M >= 2 and (depth is None or depth >= 2)
    use_pairs = lambda k: pair_level and k == 2  # noqa: E731
    total = sum(2 * M if use_pairs(k) else math.comb(M, k) for k in ks if k <= M)
    start = math.inf if incumbent is None else float(np.nextafter(incumbent, math.inf))
    counters = [0, 0, total]  # examined, pruned, total
    ftab = wtab = h1 = None
    tol = 0.0
    opts: list[float] = []  # opts[k] <= opt_k(all): the best found with at most k rules (bounds)
    if bounds and max_splits >= 2:
        ftab, wtab = B.side_costs(rules, obj, all_bits, nmin)
        tol = B.tolerance(obj, float(leaf_cost(all_bits, obj)))
        leaf = float(leaf_cost(all_bits, obj)) if n >= nmin else math.inf
        single = float(np.min(ftab.sum(axis=1))) if M else math.inf
        if depth is not None and depth < 1:
            single = math.inf
        opts = [leaf, min(leaf, single)]
    best, best_k, best_comb = start, -1, np.zeros(0, dtype=np.int64)
    optimal = True
    lower = 0.0
    stop_level = None

    # exact K >= 3: the levels below K only build bounds (their answers are not returned)
    if exact and bounds and max_splits >= 3 and not (deadline is not None and time.perf_counter() >= deadline):
        sub = solve(rules, obj, max_splits - 1, nmin=nmin, depth=depth, deadline=deadline, bounds=True,
                    n_jobs=n_jobs)
        h1 = sub._h1
        opts = sub._opts
    for k in ks:
        if k > M:
            continue
        if use_pairs(k):
            res = B.solve_pairs(rules, obj, ftab, wtab, nmin=nmin, opt1=opts[1], ub=best, deadline=deadline,
                                n_jobs=n_jobs)
            h1 = res.h1
            counters[0] += res.n_scored + res.n_skipped if res.finished else res.n_scored
            counters[1] += res.n_skipped if res.finished else 0
            if res.combination and res.cost < best:
                best, best_k, best_comb = res.cost, k, np.array(res.combination, dtype=np.int64)
            stopped = not res.finished
            level_lower = res.lower_bound
        else:
            rb = None
            floor = 0.0 if bounds else -math.inf  # leaf costs are non-negative (F1)
            if bounds and k >= 3 and ftab is not None:
                rb = B.root_bounds(ftab, wtab, h1, opts, k, obj, tol)
                floor = max(floor, _root_bound_min(rb, k))
            if floor >= best:  # no combination of this level is strictly better: skip it whole
                counters[0] += math.comb(M, k)
                counters[1] += math.comb(M, k)
                continue
            b, bc, stopped = _level(k, M, pos, defs, all_bits, obj, nmin, dep, rb, best, deadline, n_jobs,
                                    progress, counters, floor)
            if bc is not None and b < best:
                best, best_k, best_comb = b, k, bc
            level_lower = 0.0
            if stopped and rb is not None:  # every unexamined combination has a root with its bound
                level_lower = _root_bound_min(rb, k)
        if not exact and ftab is not None and not stopped:  # the running best is <= opt_k(all) (F3)
            while len(opts) <= k:
                opts.append(math.inf)
            opts[k] = min(opts[k], best)
        if stopped:
            optimal = False
            stop_level = k
            lower = level_lower
            break
    sol_lower = best
    if not optimal:  # the stopped level's bound, and the root bounds of the levels not started
        later = [kk for kk in ks if kk > stop_level]
        sol_lower = min([best, lower] + [_root_bound_min(B.root_bounds(ftab, wtab, h1, opts, kk, obj, tol), kk)
                                         if ftab is not None and kk >= 2 else 0.0 for kk in later])
    if best_k < 0:
        sol = Solution(math.inf, None, (), optimal, counters[0], total, n_pruned=counters[1],
                       lower_bound=sol_lower if not optimal else math.inf)
    else:
        cost, tree = sodt_tree(best_comb, rules, obj, nmin=nmin, depth=depth)
        sol = Solution(cost, tree, tuple(int(r) for r in best_comb), optimal, counters[0], total,
                       n_pruned=counters[1], lower_bound=min(sol_lower, cost))
    if obj.mode == ZERO_ONE_UNIT and np.isfinite(sol.lower_bound):  # integer costs: round the bound up
        sol.lower_bound = float(math.ceil(sol.lower_bound - 1e-9))
    sol._h1, sol._opts = h1, opts
    return sol


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

