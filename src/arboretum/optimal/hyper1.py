"""One hyperplane split (K = 1) without storing rules: exact 0-1-loss (or least-squares) linear
classification by enumeration of ``D``-subsets (spec §3.11 (b); issue 20, B1).

For ``K = 1`` the DP has nothing to combine: the best rule is the best of the
``C(N, D) * 2**D`` hyperplane rules, each scored by its two leaves.  This
module scores them in a numba kernel as it enumerates the ``D``-subsets, so
no rule bitset is ever stored (``hyperplane_rules`` would need ``M * N`` bits:
1.5 GB on Haberman).  Per subset it computes the plane's cofactors and the
robust side of every point exactly as :func:`.rules._side_values` does, sums
the statistics of both open sides once, and adds the ``D`` defining points to
one side or the other for each of the ``2**D`` assignments.  A subset with
further points on its plane (data not in general position) is left to
:func:`.rules.hyperplane_rules`'s policy in Python, and the best of both is
kept with the same order of ties (subset, then assignment).  ``D <= 3``.
"""

from __future__ import annotations

import math
import time

import numpy as np
from numba import njit

from ._kernels import SQUARED, leaf_cost, next_combination
from .depth2 import _cost
from .rules import MAX_FAST_DIM, hyperplane_subset_rules
from .solver import Node, Solution

__all__ = ["applies", "solve_hyperplane1"]
_EPS = np.finfo(np.float64).eps


def applies(split_type: str, max_splits: int, n_features: int) -> bool:
    return split_type == "hyperplane" and max_splits == 1 and 1 <= n_features <= MAX_FAST_DIM


@njit(cache=True, inline="always")
def _det2(a, b, c, d):
    return a * d - b * c


@njit(cache=True)
def _plane(P, wb, absolute):
    """Cofactors ``(w, b)`` of ``det([[P, 1], [x, 1]])`` for D = 1, 2, 3 (as :func:`.rules._cofactors`)."""
    D = P.shape[0]
    A = np.empty((D, D + 1))
    for i in range(D):
        for j in range(D):
            A[i, j] = abs(P[i, j]) if absolute else P[i, j]
        A[i, D] = 1.0
    for k in range(D + 1):
        # minor without column k
        cols = np.empty(D, dtype=np.int64)
        c = 0
        for j in range(D + 1):
            if j != k:
                cols[c] = j
                c += 1
        if D == 1:
            m = A[0, cols[0]]
        elif D == 2:
            if absolute:
                m = A[0, cols[0]] * A[1, cols[1]] + A[0, cols[1]] * A[1, cols[0]]
            else:
                m = _det2(A[0, cols[0]], A[0, cols[1]], A[1, cols[0]], A[1, cols[1]])
        else:
            a0 = A[0, cols[0]]
            a1 = A[0, cols[1]]
            a2 = A[0, cols[2]]
            if absolute:
                m = (a0 * (A[1, cols[1]] * A[2, cols[2]] + A[1, cols[2]] * A[2, cols[1]])
                     + a1 * (A[1, cols[0]] * A[2, cols[2]] + A[1, cols[2]] * A[2, cols[0]])
                     + a2 * (A[1, cols[0]] * A[2, cols[1]] + A[1, cols[1]] * A[2, cols[0]]))
            else:
                m = (a0 * _det2(A[1, cols[1]], A[1, cols[2]], A[2, cols[1]], A[2, cols[2]])
                     - a1 * _det2(A[1, cols[0]], A[1, cols[2]], A[2, cols[0]], A[2, cols[2]])
                     + a2 * _det2(A[1, cols[0]], A[1, cols[1]], A[2, cols[0]], A[2, cols[1]]))
        wb[k] = m if absolute or (D + k) % 2 == 0 else -m


@njit(cache=True, inline="always")
def _add(stats, i, mode, label, weight, target):
    if mode == 2:
        w = weight[i]
        stats[0] += w
        stats[1] += w * target[i]
        stats[2] += w * target[i] * target[i]
    else:
        stats[label[i]] += weight[i]


@njit(cache=True)
def hyperplane1_chunk(X, comb, max_count, mode, n_stats, label, weight, target, nmin, best, best_sub, degenerate):
    """Score the hyperplane rules of up to ``max_count`` D-subsets from ``comb`` on.

    ``best[0]`` / ``best_sub`` (subset then assignment) are replaced only by
    strictly better rules.  Subsets with other points on their plane are
    appended to ``degenerate`` (``degenerate[0, 0]`` counts them) for Python.
    Returns ``(solved, finished)``.
    """
    N, D = X.shape
    wb = np.empty(D + 1)
    wa = np.empty(D + 1)
    P = np.empty((D, D))
    side = np.empty(N, dtype=np.int64)
    negs = np.zeros(n_stats)
    poss = np.zeros(n_stats)
    left = np.zeros(n_stats)
    right = np.zeros(n_stats)
    gamma = 1.01 * (D + 3) * 2.220446049250313e-16
    done = 0
    while done < max_count:
        done += 1
        for k in range(D):
            for j in range(D):
                P[k, j] = X[comb[k], j]
        _plane(P, wb, False)
        _plane(P, wa, True)
        degen = True
        for k in range(D + 1):
            if abs(wb[k]) > gamma * wa[k]:
                degen = False
        if not degen:
            n_on = 0
            negs[:] = 0.0
            poss[:] = 0.0
            n_neg = 0
            for i in range(N):
                v = wb[D]
                bound = wa[D]
                for j in range(D):
                    v += X[i, j] * wb[j]
                    bound += abs(X[i, j]) * wa[j]
                if abs(v) <= gamma * bound:
                    side[i] = 0
                    n_on += 1
                elif v < 0:
                    side[i] = -1
                    n_neg += 1
                    _add(negs, i, mode, label, weight, target)
                else:
                    side[i] = 1
                    _add(poss, i, mode, label, weight, target)
            # the defining points are on the plane; any other on-plane point goes to Python
            extra = n_on
            for k in range(D):
                if side[comb[k]] == 0:
                    extra -= 1
            if extra > 0:
                m = degenerate[0, 0] + 1
                for k in range(D):
                    degenerate[m, k] = comb[k]
                degenerate[0, 0] = m
                if m == degenerate.shape[0] - 1:  # full: let Python empty it
                    if not next_combination(comb, N):
                        return done, True
                    return done, False
            else:
                for a in range(1 << D):
                    left[:] = negs
                    right[:] = poss
                    nl = n_neg
                    for k in range(D):
                        i = comb[k]
                        if (a >> (D - 1 - k)) & 1:
                            _add(right, i, mode, label, weight, target)
                        else:
                            _add(left, i, mode, label, weight, target)
                            nl += 1
                    if nl < nmin or N - nl < nmin:
                        continue
                    c = _cost(left, mode) + _cost(right, mode)
                    if c < best[0]:
                        best[0] = c
                        for k in range(D):
                            best_sub[k] = comb[k]
                        best_sub[D] = a
        if not next_combination(comb, N):
            return done, True
    return done, False


def solve_hyperplane1(X: np.ndarray, obj, *, exact: bool = False, nmin: int = 0,
                      deadline: float | None = None) -> tuple[Solution, object]:
    """The best tree with (at most, or exactly) one hyperplane split; returns the solution and the
    one-rule :class:`.rules.RuleSet` its tree uses (rule 0), for routing."""
    from .._numba import pack_rows_mask

    X = np.ascontiguousarray(X, dtype=np.float64)
    N, D = X.shape
    mode = 2 if obj.mode == SQUARED else 1
    n_stats = 3 if mode == 2 else obj.counts.shape[0]
    everything = np.ones(N, dtype=bool)
    leaf = float(leaf_cost(pack_rows_mask(everything), obj)) if N >= nmin else math.inf
    best = np.array([math.inf])
    best_sub = np.full(D + 1, -1, dtype=np.int64)
    degenerate = np.zeros((1 << 16, D), dtype=np.int64)
    total = math.comb(N, D)
    examined = 0
    optimal = True
    if N >= D:
        comb = np.arange(D, dtype=np.int64)
        finished = False
        chunk = 4096
        while not finished:
            if deadline is not None and time.perf_counter() >= deadline:
                optimal = False
                break
            t0 = time.perf_counter()
            n, finished = hyperplane1_chunk(X, comb, chunk, mode, n_stats, obj.label, obj.weight, obj.target,
                                            nmin, best, best_sub, degenerate)
            examined += int(n)
            if time.perf_counter() - t0 < 0.05:
                chunk *= 2
            # subsets with extra on-plane points: the generic rules' policy, in Python
            m = int(degenerate[0, 0])
            for s in degenerate[1:m + 1]:
                sub = tuple(int(v) for v in s)
                rules = hyperplane_subset_rules(X, sub)
                for r in range(rules.n_rules):
                    pts = rules.left_mask(r)
                    if pts.sum() < nmin or N - pts.sum() < nmin:
                        continue
                    c = float(leaf_cost(rules.pos[r], obj)) + float(leaf_cost(pack_rows_mask(~pts), obj))
                    key = (c, sub, int(rules.assign[r]))
                    cur = (best[0], tuple(int(v) for v in best_sub[:D]), int(best_sub[D]))
                    if key < cur:
                        best[0] = c
                        best_sub[:D] = sub
                        best_sub[D] = int(rules.assign[r])
            degenerate[0, 0] = 0
    if not exact and leaf <= best[0]:
        return Solution(leaf, Node(-1, everything), (), optimal, examined, total), None
    if not np.isfinite(best[0]):
        return Solution(math.inf, None, (), optimal, examined, total), None
    sub = tuple(int(v) for v in best_sub[:D])
    rules = hyperplane_subset_rules(X, sub, only=int(best_sub[D]))
    pts = rules.left_mask(0)
    tree = Node(0, everything, Node(-1, pts), Node(-1, ~pts))
    cost = float(leaf_cost(pack_rows_mask(pts), obj)) + float(leaf_cost(pack_rows_mask(~pts), obj))
    return Solution(cost, tree, (0,), optimal, examined, total), rules
