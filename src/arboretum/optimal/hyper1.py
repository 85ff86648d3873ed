"""One hyperplane split (K = 1) without storing rules: exact 0-1-loss (or least-squares) linear
classification by enumeration of ``D``-subsets (spec §3.11 (b); issue 20, B1).

For ``K = 1`` the DP has nothing to combine: the best rule is the best of the
``C(N, D) * 2**D`` hyperplane rules, each scored by its two leaves.  This
module scores them in a numba kernel as it enumerates the ``D``-subsets, so
no rule bitset is ever stored (``hyperplane_rules`` would need ``M * N`` bits:
1.5 GB on Haberman).  Per subset it computes the plane's cofactors and the
robust side of every point exactly as :func:`.rules._side_values` does, sums
the statistics of both open sides once, and adds the ``D`` defining points to
one side or the other for each of the ``2**D`` assignments; further points on
the plane (data not in general position) follow the on-plane policy of
:func:`.rules.hyperplane_rules` (the tilt ``delta``, through their barycentric
coordinates).  Ties: the first subset, then assignment, as in the DP.
``D <= 3``.
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


def applies(split_type: str, max_splits: int, n_features: int) -> bool:
    return split_type == "hyperplane" and max_splits == 1 and 1 <= n_features <= MAX_FAST_DIM


@njit(cache=True, inline="always")
def _a(P, i, c, k, absolute):
    """Entry ``(i, c)`` of ``[P, 1]`` with column ``k`` deleted (absolute value if asked); no allocation."""
    j = c if c < k else c + 1
    v = 1.0 if j == P.shape[0] else P[i, j]
    return abs(v) if absolute else v


@njit(cache=True)
def _plane(P, wb, absolute):
    """Cofactors ``(w, b)`` of ``det([[P, 1], [x, 1]])`` for D = 1, 2, 3 (as :func:`.rules._cofactors`,
    the same products in the same order); with ``absolute`` the permanents of ``|[P, 1]|``."""
    D = P.shape[0]
    for k in range(D + 1):
        if D == 1:
            m = _a(P, 0, 0, k, absolute)
        elif D == 2:
            p = _a(P, 0, 0, k, absolute) * _a(P, 1, 1, k, absolute)
            q = _a(P, 0, 1, k, absolute) * _a(P, 1, 0, k, absolute)
            m = p + q if absolute else p - q
        else:
            m = 0.0
            for c in range(3):
                c1 = 0 if c != 0 else 1
                c2 = 2 if c != 2 else 1
                p = _a(P, 1, c1, k, absolute) * _a(P, 2, c2, k, absolute)
                q = _a(P, 1, c2, k, absolute) * _a(P, 2, c1, k, absolute)
                term = _a(P, 0, c, k, absolute) * (p + q if absolute else p - q)
                m = m + term if absolute or c != 1 else m - term
        wb[k] = m if absolute or (D + k) % 2 == 0 else -m


@njit(cache=True)
def _barycentric(P, X, i, lam, row):
    """Barycentric coordinates of the on-plane point ``X[i]`` w.r.t. the rows of ``P`` (D <= 3):
    ``X[i] - p_0 = sum_k mu_k (p_k - p_0)`` by the normal equations (Cramer's rule), into ``lam[row]``."""
    D = P.shape[0]
    if D == 1:
        lam[row, 0] = 1.0
        return
    e1 = P[1] - P[0]
    r = X[i] - P[0]
    if D == 2:
        g = np.dot(e1, e1)
        mu1 = np.dot(e1, r) / g if g > 0 else 0.0
        lam[row, 0] = 1.0 - mu1
        lam[row, 1] = mu1
        return
    e2 = P[2] - P[0]
    g11 = np.dot(e1, e1)
    g12 = np.dot(e1, e2)
    g22 = np.dot(e2, e2)
    b1 = np.dot(e1, r)
    b2 = np.dot(e2, r)
    det = g11 * g22 - g12 * g12
    if det == 0.0:
        lam[row, 0] = 1.0
        lam[row, 1] = 0.0
        lam[row, 2] = 0.0
        return
    mu1 = (b1 * g22 - b2 * g12) / det
    mu2 = (g11 * b2 - g12 * b1) / det
    lam[row, 0] = 1.0 - mu1 - mu2
    lam[row, 1] = mu1
    lam[row, 2] = mu2


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
def hyperplane1_chunk(X, comb, max_count, mode, n_stats, label, weight, target, nmin, best, best_sub):
    """Score the hyperplane rules of up to ``max_count`` D-subsets from ``comb`` on.

    ``best[0]`` / ``best_sub`` (subset then assignment) are replaced only by
    strictly better rules.  Returns ``(solved, finished)``.
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
    extra_idx = np.empty(N, dtype=np.int64)
    lam = np.empty((N, D))
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
            # on-plane points other than the defining ones follow delta, the affine function with
            # delta(p_k) = -1 (left) or +1 (right): delta(q) = sum_k lam_k delta(p_k), lam the
            # barycentric coordinates of q (as rules.hyperplane_subset_rules, up to rounding)
            n_extra = 0
            for i in range(N):
                if side[i] == 0:
                    is_def = False
                    for k in range(D):
                        if comb[k] == i:
                            is_def = True
                    if not is_def:
                        extra_idx[n_extra] = i
                        _barycentric(P, X, i, lam, n_extra)
                        n_extra += 1
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
                for e in range(n_extra):
                    val = 0.0
                    for k in range(D):
                        val += lam[e, k] * (1.0 if (a >> (D - 1 - k)) & 1 else -1.0)
                    i = extra_idx[e]
                    if val <= 1e-9:
                        _add(left, i, mode, label, weight, target)
                        nl += 1
                    else:
                        _add(right, i, mode, label, weight, target)
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
                                            nmin, best, best_sub)
            examined += int(n)
            if time.perf_counter() - t0 < 0.05:
                chunk *= 2
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
