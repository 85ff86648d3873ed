"""One hyperplane split (K = 1) without storing rules: exact 0-1-loss (or least-squares) linear
classification by an angular sweep around every ``(D - 1)``-subset of points (spec §3.11 (b); issue 20, B1).

For ``K = 1`` the DP has nothing to combine: the best tree is the best of the
``C(N, D) * 2**D`` hyperplane rules of :func:`.rules.hyperplane_rules`, each
scored by its two leaves.  This module finds it without storing a rule.

The sweep
---------
A ``D``-subset in lexicographic order is a *hinge* ``H = (h_1 < ... < h_{D-1})``
followed by one more point ``q > h_{D-1}``.  With ``x~ = (x, 1)``, the side of
``x`` for the plane through ``H`` and ``q`` is the sign of

    ``det([h~_1; ...; h~_{D-1}; q~; x~]) = q~' M x~``,

``M`` the antisymmetric rank-2 matrix of the hinge (``M_ab = det([H~; e_a;
e_b])``, signed ``(D-1)``-minors of ``H~``, computed once per hinge by an
exterior product that reuses the hinge's common prefix).  A rank-2
antisymmetric matrix factors through two of its rows: for a pivot ``M_ij !=
0``, ``q~' M x~ = cross(u_q, u_x) / M_ij`` with ``u_x = (M_i . x~, M_j . x~)``
(proof: ``M = (M e_j e_i' M - M e_i e_j' M) / M_ij`` for any rank-2
antisymmetric ``M``; expand ``M = a b' - b a'``).  So around a hinge every
point is a 2-vector ``u_x``, the plane through ``q`` is the line of ``u_q``,
and its two open sides are the two half-turns ``(theta_q, theta_q + pi)`` and
``(theta_q + pi, theta_q + 2 pi)`` of the angles ``theta_x``.  After sorting
the points by angle (``O(N log N)`` per hinge), the class statistics of both
sides of every plane through the hinge are differences of prefix sums found by
binary search: ``O(log N)`` per ``D``-subset instead of ``O(N D)``, so
``O(N^D log N)`` in all (``D = 2``: ``O(N^2 log N)``).

Robust signs (spec G2, G3)
--------------------------
Every ``M_ab`` is computed with the same expansion of ``|H~|`` beside it
(sums of products only: the error of the computed ``M_ab`` is at most
``gamma`` times the absolute expansion, ``gamma = 1.01 (2 D + 6) eps``), which
bounds the errors ``e_x`` of the computed ``u_x`` and then the error ``E_qx``
of the computed ``cross(u_q, u_x)``.  A point whose computed cross product is
within ``E_qx`` counts as *on the plane* (the same rule as
:func:`.rules._side_values`, with this computation's own error bound); every
other sign is the exact sign of the determinant.  With integer data below
``2**20`` or so every value is exact.  The sweep uses floating-point angles
only where that cannot change a sign: points whose angular uncertainty
``(e_x0 + e_x1) / |u_x|`` exceeds ``1e-7`` (the hinge's own points, points in
its affine hull, duplicates) are tested one by one for every plane, and so are
the points whose angle lies within ``alpha = 16 (max uncertainty + 8 eps)`` of
either end of a half-turn; a point farther inside a half-turn has
``|cross| >= |u_q| |u_x| (2 / pi)(alpha / 2) > 2 E_qx``, so the one-by-one
test would give it the same, certain, sign.  The partition of every plane is
therefore the one the one-by-one robust test gives (:func:`subset_sides`).

Defining points and on-plane points
-----------------------------------
As in :func:`.rules.hyperplane_rules`: the ``D`` defining points take every
one of the ``2**D`` assignments; any other on-plane point follows the affine
function ``delta`` with ``delta(p_k) = -1`` (left) or ``+1`` (right) at the
defining points (through its barycentric coordinates; ``|delta| < 1e-9`` counts
as 0 and goes left).  For the 0-1 loss without such extra points and with
both open sides already holding ``min_samples_leaf`` points, the best
assignment is closed-form: for leaf classes ``(c_L, c_R)``, a defining point
of class ``c_L`` goes left and one of class ``c_R`` right at no cost, any
other costs its weight on either side, so

    ``cost = min_{c_L, c_R} (W_L - w_L[c_L]) + (W_R - w_R[c_R]) + W_P - w_P[c_L] - [c_R != c_L] w_P[c_R]``

(``W``, ``w[c]``: total and per-class weight of the open left side, the open
right side and the defining points ``P``; repeated rows are merged into one
point of several classes before the sweep, and such a point goes wholly to the
side where it costs less: :func:`_merge_duplicates`, :func:`_closed_form`).
Otherwise (regression, extra
on-plane points, or a side short of points) the ``2**D`` assignments are
enumerated, after the admissible bound of :func:`_closed_form` (every on-plane
point placed freely) fails to exclude the subset.  On degenerate data (integer
features: Caesarian's planes hold 20-30 points) this enumeration is most of the
work, so it is done for all assignments at once (:func:`_assignments`): the
barycentric coordinates of the extra points through one linear map per subset
(:func:`_bary_factor`), ``delta`` for every assignment by a tree of prefix sums,
and the two sides' statistics accumulated with the assignment as the innermost,
vectorised index.

Skipping hinges
---------------
Before sorting a hinge's points, :func:`_hinge_bound` bounds every plane through
the hinge from the points' angles in 32 sectors (admissible: proof in its
docstring); a hinge whose bound reaches the incumbent is skipped whole (a new
hinge needs a strictly lower cost, so the tie rule below is unchanged).  Each plane
is then bounded again before its one-by-one tests and before its assignments are
enumerated.

Ties: the first minimiser in (subset, assignment) order, as in the DP (spec
T11, G20): a plane replaces the best only when strictly better or, within the
same hinge, equally good with a smaller ``q``; the assignment of the winning
subset is the first that reaches its optimum.  With non-integer weights or
squared error, sums are formed in another order than the DP's, so "equal"
means equal up to rounding.  The search is stopped by ``deadline``, read between
planes inside the kernel (and between its calls), and returns the best plane so
far with ``optimal=False``.
"""

from __future__ import annotations

from dataclasses import dataclass

import math
import time

import numpy as np
from numba import njit

from .._numba import monotonic, pack_rows_mask, seconds_left, stop_time
from ._kernels import SQUARED, Objective, leaf_cost
from .rules import HYPER, MAX_HYPERPLANE_DIM, RuleSet
from .solver import Node, Solution

__all__ = ["applies", "solve_hyperplane1", "subset_sides", "MAX_DIM"]

#: Largest dimension of the single-hyperplane path (that of the hyperplane family).
MAX_DIM = MAX_HYPERPLANE_DIM
_EPS = 2.220446049250313e-16
#: Angular uncertainty above which a point is tested one by one against every plane of a hinge.
_SPECIAL = 1e-7
#: Number of D-subsets above which the incumbent also tries a logistic regression's direction.
_LOGISTIC_ABOVE = 1_000_000
#: Sectors of :func:`_hinge_bound` (even), the angle where the first begins (integer data puts
#: many points at multiples of pi/4: not there) and how close to a boundary a computed angle must
#: be to count as undetermined (more than a regular point's angular uncertainty, ``_SPECIAL``).
_BUCKETS = 32
_BUCKET_OFFSET = 0.1234567
_BUCKET_TOL = 4e-7
#: Hinges with at most this many planes (points after the hinge) test them one by one instead of
#: sorting the points by angle (the sort costs about as much as this many one-by-one tests).
_FEW = 6


def applies(split_type: str, max_splits: int, n_features: int) -> bool:
    """Whether a request is a single hyperplane split this module solves."""
    return split_type == "hyperplane" and max_splits == 1 and 1 <= n_features <= MAX_DIM


def _gamma(D: int) -> float:
    return 1.01 * (2 * D + 6) * _EPS


def _mask_table(C: int) -> tuple[np.ndarray, np.ndarray]:
    """The subsets of ``C`` columns as bit masks ordered by size, and where each size starts."""
    masks = sorted(range(1 << C), key=lambda s: (bin(s).count("1"), s))
    start = np.zeros(C + 2, dtype=np.int64)
    for k in range(C + 1):
        start[k + 1] = start[k] + math.comb(C, k)
    return np.array(masks, dtype=np.int64), start


# ---------------------------------------------------------------------------
# numba kernels
# ---------------------------------------------------------------------------


@njit(cache=True)
def _wedge_level(W, Wa, k, row, masks, start, C):
    """Level ``k`` of the exterior product: ``W[k, S]`` = the minor of the first ``k`` hinge rows on
    the columns ``S`` (expansion along row ``k``, the point ``row``), ``Wa`` the same for ``|rows|``."""
    for t in range(start[k], start[k + 1]):
        s = masks[t]
        v = 0.0
        va = 0.0
        pos = 0
        for c in range(C):
            if (s >> c) & 1:
                r = row[c]
                prev = s ^ (1 << c)
                term = r * W[k - 1, prev]
                v = v + term if (k - 1 + pos) % 2 == 0 else v - term
                va += abs(r) * Wa[k - 1, prev]
                pos += 1
        W[k, s] = v
        Wa[k, s] = va


@njit(cache=True, inline="always")
def _m_entry(W, m, full, a, c):
    """``M_ac = det([H~; e_a; e_c])`` from the top level of the exterior product (``a != c``)."""
    v = W[m, full ^ (1 << a) ^ (1 << c)]
    if a < c:
        return v if (a + c + 1) % 2 == 0 else -v
    return v if (a + c) % 2 == 0 else -v


@njit(cache=True)
def _frame(W, Wa, m, C, gamma, R, Ra):
    """The two pivot rows of the hinge's ``M`` into ``R`` (and their absolute bounds into ``Ra``);
    returns the sign of the pivot ``M_ij``, or 0 when the hinge is affinely dependent."""
    full = (1 << C) - 1
    best = -1.0
    piv = -1
    degenerate = True
    for s in range(1 << C):
        if _popcount(s) != m:
            continue
        if abs(W[m, s]) > gamma * Wa[m, s]:
            degenerate = False
        if abs(W[m, s]) > best:
            best = abs(W[m, s])
            piv = s
    if degenerate:
        return 0
    pair = full ^ piv
    i = -1
    j = -1
    for c in range(C):
        if (pair >> c) & 1:
            if i < 0:
                i = c
            else:
                j = c
    for c in range(C):
        if c == i:
            R[0, c] = 0.0
            Ra[0, c] = 0.0
        else:
            R[0, c] = _m_entry(W, m, full, i, c)
            Ra[0, c] = Wa[m, full ^ (1 << i) ^ (1 << c)]
        if c == j:
            R[1, c] = 0.0
            Ra[1, c] = 0.0
        else:
            R[1, c] = _m_entry(W, m, full, j, c)
            Ra[1, c] = Wa[m, full ^ (1 << j) ^ (1 << c)]
    return 1 if _m_entry(W, m, full, i, j) > 0 else -1


@njit(cache=True, inline="always")
def _popcount(s):
    k = 0
    while s:
        s &= s - 1
        k += 1
    return k


@njit(cache=True)
def _project(Xt, R, Ra, gamma, u, e):
    """``u_x`` and its error bounds ``e_x`` for every point."""
    N, C = Xt.shape
    for x in range(N):
        u0 = 0.0
        u1 = 0.0
        a0 = 0.0
        a1 = 0.0
        for c in range(C):
            v = Xt[x, c]
            u0 += R[0, c] * v
            u1 += R[1, c] * v
            a0 += Ra[0, c] * abs(v)
            a1 += Ra[1, c] * abs(v)
        u[x, 0] = u0
        u[x, 1] = u1
        e[x, 0] = gamma * a0
        e[x, 1] = gamma * a1


@njit(cache=True, inline="always")
def _robust(u, e, q, x):
    """Sign of ``cross(u_q, u_x)``, 0 when within its error bound (on the plane)."""
    a = u[q, 0] * u[x, 1]
    b = u[q, 1] * u[x, 0]
    c = a - b
    err = (abs(u[q, 0]) * e[x, 1] + e[q, 0] * abs(u[x, 1]) + e[q, 0] * e[x, 1]
           + abs(u[q, 1]) * e[x, 0] + e[q, 1] * abs(u[x, 0]) + e[q, 1] * e[x, 0]
           + 3.0 * 2.220446049250313e-16 * (abs(a) + abs(b))) * 1.01
    if abs(c) <= err:
        return 0
    return 1 if c > 0 else -1


@njit(cache=True)
def _leaf(vec, n_val, mode):
    """Leaf cost from summed statistics: classification ``total - max`` over the class weights;
    regression ``(sw, swy, swyy)``: squared error around the mean."""
    if mode == 2:
        sw = vec[0]
        if sw <= 0.0:
            return 0.0
        c = vec[2] - vec[1] * vec[1] / sw
        return c if c > 0.0 else 0.0
    total = 0.0
    best = 0.0
    for c in range(n_val):
        total += vec[c]
        if vec[c] > best:
            best = vec[c]
    return max(total - best, 0.0)


@njit(cache=True)
def _bary_factor(X, sub, G, E, B, rhs):
    """The linear map ``B`` of the barycentric coordinates in the plane of ``X[sub]``: for ``z`` in
    that plane, ``z - p_0 = sum_k mu_k (p_k - p_0)`` with ``mu = B (z - p_0)``, ``B = G^-1 E`` from the
    normal equations (``E[k] = p_{k+1} - p_0``, ``G = E E'``; Gaussian elimination with partial
    pivoting, one column of ``E`` at a time).  Returns False when a pivot is 0 (every point then gets
    the coordinates ``(1, 0, ...)``).  Once per subset; :func:`_barycentric` then costs one
    ``(D - 1) x D`` product per on-plane point (``rhs``: scratch)."""
    D = sub.shape[0]
    n = D - 1
    d = X.shape[1]
    for a in range(n):
        for j in range(d):
            E[a, j] = X[sub[a + 1], j] - X[sub[0], j]
    for a in range(n):
        for b in range(n):
            s = 0.0
            for j in range(d):
                s += E[a, j] * E[b, j]
            G[a, b] = s
    for j in range(d):
        for a in range(n):
            B[a, j] = E[a, j]
    for col in range(n):  # partial pivoting, the same operations on every column of B
        p = col
        for r in range(col + 1, n):
            if abs(G[r, col]) > abs(G[p, col]):
                p = r
        if G[p, col] == 0.0:
            return False
        if p != col:
            for b in range(n):
                G[col, b], G[p, b] = G[p, b], G[col, b]
            for j in range(d):
                B[col, j], B[p, j] = B[p, j], B[col, j]
        for r in range(col + 1, n):
            f = G[r, col] / G[col, col]
            for b in range(col, n):
                G[r, b] -= f * G[col, b]
            for j in range(d):
                B[r, j] -= f * B[col, j]
    for j in range(d):
        for r in range(n - 1, -1, -1):
            s = B[r, j]
            for b in range(r + 1, n):
                s -= G[r, b] * B[b, j]
            B[r, j] = s / G[r, r]
    return True


@njit(cache=True)
def _barycentric(X, sub, z, lam, row, B, ok, dz):
    """Barycentric coordinates of ``X[z]`` (projected on the affine hull of ``X[sub]``) into
    ``lam[row]``, with the map ``B`` of :func:`_bary_factor` (``ok``: its result; ``dz``: scratch)."""
    D = sub.shape[0]
    n = D - 1
    d = X.shape[1]
    if not ok:
        lam[row, 0] = 1.0
        for k in range(1, D):
            lam[row, k] = 0.0
        return
    for j in range(d):
        dz[j] = X[z, j] - X[sub[0], j]
    total = 0.0
    for r in range(n):
        s = 0.0
        for j in range(d):
            s += B[r, j] * dz[j]
        lam[row, r + 1] = s
        total += s
    lam[row, 0] = 1.0 - total


@njit(cache=True)
def _sign_table(D):
    """``T[k, a]`` = +1.0 when bit ``D - 1 - k`` of assignment ``a`` is set (point ``k`` goes right), else -1.0."""
    A = 1 << D
    T = np.empty((D, A))
    for k in range(D):
        for a in range(A):
            T[k, a] = 1.0 if (a >> (D - 1 - k)) & 1 else -1.0
    return T


@njit(cache=True)
def _assignments(left0, right0, pt, sub, extras, lam, n_extra, n_val, mode, nmin, VL, VR, sign, val, bits, cost):
    """Best (cost, assignment) over the ``2**D`` assignments of the defining points ``sub``
    (bit ``D - 1 - k`` set: point ``k`` goes right) with the extra on-plane points following
    ``delta = sum_k lam[t, k] * sign[k, a]`` (left when ``|delta| < 1e-9`` or ``delta <= 0``); the
    first assignment wins ties.  ``(inf, -1)`` when none keeps ``nmin`` per leaf.

    All assignments at once, the assignment the innermost (vectorised) index: ``delta`` is summed
    over ``k`` in order and every side's statistics get the same additions in the same order (open
    side, defining points, extra points) as for each assignment on its own, a point on the other
    side adding an exact ``0.0``: the same bits.  ``sign``: :func:`_sign_table`; ``VL``, ``VR``:
    scratch ``(S, 2**D)``; ``val``, ``bits``, ``cost``: scratch ``2**D``."""
    D = sub.shape[0]
    S = pt.shape[1]
    A = 1 << D
    for s in range(S):
        for a in range(A):
            VL[s, a] = left0[s]
            VR[s, a] = right0[s]
    for k in range(D):
        i = sub[k]
        for s in range(S):
            w = pt[i, s]
            for a in range(A):
                r = 0.5 + 0.5 * sign[k, a]  # 1.0: point k goes right
                VL[s, a] += w * (1.0 - r)
                VR[s, a] += w * r
    for t in range(n_extra):
        i = extras[t]
        for a in range(A):
            val[a] = 0.0
        for k in range(D):
            lk = lam[t, k]
            for a in range(A):
                val[a] += lk * sign[k, a]
        for a in range(A):
            v = val[a]
            bits[a] = 1.0 if (abs(v) < 1e-9 or v <= 0.0) else 0.0  # 1.0: goes left
        for s in range(S):
            w = pt[i, s]
            for a in range(A):
                VL[s, a] += w * bits[a]
                VR[s, a] += w * (1.0 - bits[a])
    if mode == 2:
        for a in range(A):
            cost[a] = 0.0
            for side in range(2):
                V = VL if side == 0 else VR
                sw = V[0, a]
                if sw > 0.0:
                    c = V[2, a] - V[1, a] * V[1, a] / sw
                    if c > 0.0:
                        cost[a] += c
    else:  # as _leaf: total - max over the classes, per side
        for a in range(A):
            cost[a] = 0.0
        for side in range(2):
            V = VL if side == 0 else VR
            for a in range(A):
                val[a] = 0.0  # total
                bits[a] = 0.0  # max
            for c in range(n_val):
                for a in range(A):
                    x = V[c, a]
                    val[a] += x
                    if x > bits[a]:
                        bits[a] = x
            for a in range(A):
                d = val[a] - bits[a]
                cost[a] += d if d > 0.0 else 0.0
    best = np.inf
    best_a = -1
    for a in range(A):
        if VL[S - 1, a] < nmin or VR[S - 1, a] < nmin:
            continue
        if cost[a] < best:
            best = cost[a]
            best_a = a
    return best, best_a


@njit(cache=True)
def _closed_form(vl, vr, pt, sub, n_val, dvec, extras, n_extra):
    """The 0-1 loss of the best placement of the on-plane points (the defining points ``sub`` and
    ``extras[:n_extra]``), each put wholly on either side freely (module docstring; a point may
    hold several classes when repeated rows are merged, :func:`_merge_duplicates`): for leaf
    classes ``(c_L, c_R)`` a point ``p`` costs ``min(W_p - w_p[c_L], W_p - w_p[c_R])``.

    Without extra points and with ``min_samples_leaf`` met by the open sides, every placement is
    an assignment of a rule, so this is the subset's optimum.  Otherwise it is an admissible lower
    bound on it: the rules' placements (assignments, with the extra points following ``delta``,
    and only those keeping ``min_samples_leaf`` points per leaf) are some of the free placements,
    and a minimum over more placements is no larger.  (``dvec``: scratch of length ``n_val``.)
    """
    WL = 0.0
    WR = 0.0
    for c in range(n_val):
        WL += vl[c]
        WR += vr[c]
    best = np.inf
    D = sub.shape[0]
    for cl in range(n_val):
        for cr in range(n_val):
            v = (WL - vl[cl]) + (WR - vr[cr])
            for k in range(D + n_extra):
                i = sub[k] if k < D else extras[k - D]
                Wp = 0.0
                for c in range(n_val):
                    Wp += pt[i, c]
                a = Wp - pt[i, cl]
                b = Wp - pt[i, cr]
                v += a if a < b else b
            if v < best:
                best = v
    return best


@njit(cache=True)
def _free_placement(vl, vr, dvec, n_val):
    """``min_{c_L, c_R}`` of the 0-1 loss with the points of ``dvec`` placed freely (see :func:`_closed_form`)."""
    WL = 0.0
    WR = 0.0
    WP = 0.0
    for c in range(n_val):
        WL += vl[c]
        WR += vr[c]
        WP += dvec[c]
    best = np.inf
    for cl in range(n_val):
        for cr in range(n_val):
            v = (WL - vl[cl]) + (WR - vr[cr]) + (WP - dvec[cl] - (dvec[cr] if cr != cl else 0.0))
            if v < best:
                best = v
    return best


@njit(cache=True)
def _hinge_wedge(Xt, hinge, W, Wa, masks, start, from_level):
    C = Xt.shape[1]
    for k in range(from_level + 1, hinge.shape[0] + 1):
        _wedge_level(W, Wa, k, Xt[hinge[k - 1]], masks, start, C)


@njit(cache=True)
def _side_of(u, e, q, x, sgn):
    return _robust(u, e, q, x) * sgn


@njit(cache=True)
def subset_sides(X, Xt, sub, masks, start, gamma):
    """Robust sides of every point for the plane through ``X[sub]`` (``sub`` sorted), as the sweep
    sees them: -1 (left, ``r+``), +1 (right), 0 on the plane (the defining points among them), in
    the orientation of :func:`.rules.hyperplane_rules` (the sign of ``det([[P, 1], [x, 1]])``).
    Returns ``(sides, ok)``; ``ok`` is False when the points are affinely dependent."""
    N, D = X.shape
    C = D + 1
    m = D - 1
    W = np.zeros((D + 1, 1 << C))
    Wa = np.zeros((D + 1, 1 << C))
    W[0, 0] = 1.0
    Wa[0, 0] = 1.0
    _hinge_wedge(Xt, sub[:m], W, Wa, masks, start, 0)
    R = np.zeros((2, C))
    Ra = np.zeros((2, C))
    sides = np.zeros(N, dtype=np.int64)
    sgn = _frame(W, Wa, m, C, gamma, R, Ra)
    if sgn == 0:
        return sides, False
    u = np.empty((N, 2))
    e = np.empty((N, 2))
    _project(Xt, R, Ra, gamma, u, e)
    q = sub[m]
    if abs(u[q, 0]) <= e[q, 0] and abs(u[q, 1]) <= e[q, 1]:
        return sides, False
    for x in range(N):
        sides[x] = _side_of(u, e, q, x, sgn)
    for k in range(D):
        sides[sub[k]] = 0
    return sides, True


@njit(cache=True)
def _bisect_left(a, n, v):
    lo = 0
    hi = n
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < v:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True)
def _bisect_right(a, n, v):
    lo = 0
    hi = n
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] <= v:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True)
def _hinge_bound(ang, reg, n_reg, special, n_spec, pt, n_val, mode, P, stop):
    """An admissible lower bound on the cost of every plane through a hinge, from the angles of its
    points around it in ``_BUCKETS`` sectors (no sort; ``P``: scratch ``(2 * _BUCKETS + 1, S)``).

    Proof.  A plane through the hinge is a line through the origin of the ``u``-plane, of exact
    direction ``phi``: the points of exact angle in ``(phi, phi + pi)`` are on one side, those in
    ``(phi + pi, phi + 2 pi)`` on the other, and those on the line (angle ``phi`` or ``phi + pi``,
    or ``u = 0``) anywhere (defining points) or where ``delta`` sends them.  Cut the circle into
    ``B`` sectors ``[o + b w, o + (b + 1) w)`` (``w = 2 pi / B``, ``o`` an offset that integer data
    does not hit); say ``phi`` lies in sector ``b``.  A point of exact angle in sector ``b + j``,
    ``1 <= j < B / 2``, has ``phi < angle < phi + pi`` (its angle is at least ``o + (b + 1) w > phi``
    and below ``o + (b + B / 2) w <= phi + pi``), and likewise sectors ``b + B / 2 + j`` are on the
    other side; so only the points of sectors ``b`` and ``b + B / 2`` are undetermined.  The sweep's
    special points (uncertain angles, ``u = 0``) and the regular points whose computed angle lies
    within ``_BUCKET_TOL`` (more than their angular uncertainty, at most ``_SPECIAL``, plus the error
    of ``atan2``) of a sector boundary are undetermined too; every other regular point lies in the
    sector of its computed angle.  Placing the undetermined points freely (0-1 loss:
    :func:`_free_placement`) or leaving them out (squared error: adding points to a leaf never
    lowers its squared error), as the bound of a single plane in :func:`hyperplane1_sweep`, bounds
    every plane whose direction is in sector ``b`` (``min_samples_leaf`` only raises costs); the
    minimum over ``b`` bounds every plane through the hinge (returned as soon as it is below ``stop``:
    the caller only asks whether it reaches ``stop``)."""
    B = _BUCKETS
    S = pt.shape[1]
    w = 2.0 * np.pi / B
    for i in range(2 * B + 1):
        for s in range(S):
            P[i, s] = 0.0
    free = np.zeros(S)
    for t in range(n_spec):
        for s in range(S):
            free[s] += pt[special[t], s]
    for k in range(n_reg):
        x = reg[k]
        f = (ang[x] - _BUCKET_OFFSET) / w
        if f < 0.0:
            f += B
        b = int(f)
        if b >= B or (f - b) * w < _BUCKET_TOL or (b + 1 - f) * w < _BUCKET_TOL:
            for s in range(S):
                free[s] += pt[x, s]
        else:
            for s in range(S):
                P[b + 1, s] += pt[x, s]
    for i in range(B):  # two turns: P[i + 1] = sector i mod B, then prefix sums
        for s in range(S):
            P[B + i + 1, s] = P[i + 1, s]
    for i in range(2 * B):
        for s in range(S):
            P[i + 1, s] += P[i, s]
    H2 = B // 2
    vl = np.empty(S)
    vr = np.empty(S)
    dv = np.empty(S)
    best = np.inf
    for b in range(B):
        for s in range(S):
            vl[s] = P[b + H2, s] - P[b + 1, s]  # sectors b + 1 .. b + B/2 - 1
            vr[s] = P[b + B, s] - P[b + H2 + 1, s]  # sectors b + B/2 + 1 .. b + B - 1
            dv[s] = free[s] + (P[b + 1, s] - P[b, s]) + (P[b + H2 + 1, s] - P[b + H2, s])
        if mode != 2:
            c = _free_placement(vl, vr, dv, n_val)
        else:
            c = _leaf(vl, n_val, mode) + _leaf(vr, n_val, mode)
        if c < best:
            best = c
            if best < stop:
                return best
    return best


@njit(cache=True)
def hyperplane1_sweep(X, Xt, hinge, state, max_hinges, masks, start, W, Wa, pt, n_val, mode, nmin, gamma,
                      best, best_sub, counts, seconds):
    """Sweep up to ``max_hinges`` hinges from ``hinge`` on (lexicographic ``(D-1)``-subsets of
    ``0 .. N-2``).  ``state[0]``: the first level of the hinge's exterior product to recompute
    (``W``, ``Wa`` keep the levels of the current prefix).  ``best[0]`` and ``best_sub`` (the
    subset) are replaced by strictly better planes (ties: see the module docstring; ``best[1]``
    holds the serial number of the best plane's hinge).  ``counts[0]`` += D-subsets examined.
    Returns 1 when every hinge is done, 0 when ``max_hinges`` were swept, and 2 when ``seconds``
    ran out inside a hinge (read between planes: one hinge of a large ``N`` takes seconds); the
    sweep cannot resume then, and ``best`` holds the best plane so far."""
    stop = stop_time(seconds)
    N, D = X.shape
    C = D + 1
    m = D - 1
    S = pt.shape[1]
    TWO_PI = 2.0 * np.pi
    R = np.zeros((2, C))
    Ra = np.zeros((2, C))
    u = np.empty((N, 2))
    e = np.empty((N, 2))
    ang = np.empty(N)
    reg = np.empty(N, dtype=np.int64)
    regang = np.empty(N)
    special = np.empty(N, dtype=np.int64)
    A3 = np.empty(3 * N)
    I3 = np.empty(3 * N, dtype=np.int64)
    PS = np.zeros((3 * N + 1, S))
    vl = np.empty(S)
    vr = np.empty(S)
    dvec = np.empty(S)
    spec_sum = np.empty(S)
    sub = np.empty(D, dtype=np.int64)
    extras = np.empty(N, dtype=np.int64)
    lam = np.empty((N, D))
    G = np.empty((D, D))
    rhs = np.empty(D)
    bucket = np.empty((2 * _BUCKETS + 1, S))
    sign = _sign_table(D)
    aval = np.empty(1 << D)
    acost = np.empty(1 << D)
    bits = np.empty(1 << D)
    Ed = np.empty((D, D))
    Bm = np.empty((D, D))
    dz = np.empty(D)
    VL = np.empty((S, 1 << D))
    VR = np.empty((S, 1 << D))
    done = 0
    while done < max_hinges:
        done += 1
        _hinge_wedge(Xt, hinge, W, Wa, masks, start, state[0])
        h_last = hinge[m - 1] if m > 0 else -1
        serial = state[1]
        state[1] += 1
        sgn = _frame(W, Wa, m, C, gamma, R, Ra)
        if sgn == 0:
            counts[0] += N - 1 - h_last
        else:
            for k in range(m):
                sub[k] = hinge[k]
            _project(Xt, R, Ra, gamma, u, e)
            n_reg = 0
            n_spec = 0
            maxd = 0.0
            # few planes through this hinge: test them one by one rather than sort (same result)
            few = N - 1 - h_last <= _FEW
            for x in range(N):
                nrm = math.hypot(u[x, 0], u[x, 1])
                unc = e[x, 0] + e[x, 1]
                if few or nrm == 0.0 or unc > _SPECIAL * nrm:
                    special[n_spec] = x
                    n_spec += 1
                else:
                    reg[n_reg] = x
                    a = math.atan2(u[x, 1], u[x, 0])
                    ang[x] = a
                    regang[n_reg] = a
                    n_reg += 1
                    if unc / nrm > maxd:
                        maxd = unc / nrm
            if not few and _hinge_bound(ang, reg, n_reg, special, n_spec, pt, n_val, mode, bucket, best[0]) >= best[0]:
                # no plane through this hinge can be accepted (a new hinge needs a strictly lower cost)
                counts[0] += N - 1 - h_last
                counts[3] += 1
                skip = True
            else:
                skip = False
            if not skip:
                alpha = 16.0 * (maxd + 8.0 * 2.220446049250313e-16)
                for s in range(S):
                    spec_sum[s] = 0.0
                for t in range(n_spec):
                    for s in range(S):
                        spec_sum[s] += pt[special[t], s]
                order = np.argsort(regang[:n_reg])
                for t in range(3):
                    for k in range(n_reg):
                        x = reg[order[k]]
                        A3[t * n_reg + k] = ang[x] + (t - 1) * TWO_PI
                        I3[t * n_reg + k] = x
                n3 = 3 * n_reg
                for k in range(n3):
                    x = I3[k]
                    for s in range(S):
                        PS[k + 1, s] = PS[k, s] + pt[x, s]
                # every q > h_last: the regular ones by the sweep, the special ones one by one
                for k in range(n_reg + n_spec):
                    direct = k >= n_reg
                    q = special[k - n_reg] if direct else reg[order[k]]
                    if q <= h_last:
                        continue
                    if monotonic() >= stop:
                        return 2
                    counts[0] += 1
                    if direct and abs(u[q, 0]) <= e[q, 0] and abs(u[q, 1]) <= e[q, 1]:
                        continue  # affinely dependent subset
                    sub[m] = q
                    n_extra = 0
                    if not direct:
                        th = ang[q]
                        i0 = _bisect_left(A3, n3, th - alpha)
                        i1 = _bisect_right(A3, n3, th + alpha)
                        i2 = _bisect_left(A3, n3, th + np.pi - alpha)
                        i3 = _bisect_right(A3, n3, th + np.pi + alpha)
                        i4 = i0 + n_reg
                        if i1 > i2 or i3 > i4:
                            direct = True
                    if direct:
                        for s in range(S):
                            vl[s] = 0.0
                            vr[s] = 0.0
                        for x in range(N):
                            sd = _side_of(u, e, q, x, sgn)
                            if sd == 0:
                                is_def = x == q
                                for t in range(m):
                                    if hinge[t] == x:
                                        is_def = True
                                if not is_def:
                                    extras[n_extra] = x
                                    n_extra += 1
                            elif sd < 0:
                                for s in range(S):
                                    vl[s] += pt[x, s]
                            else:
                                for s in range(S):
                                    vr[s] += pt[x, s]
                    else:
                        # open half-turns: (th, th + pi) has cross > 0, i.e. side sgn
                        for s in range(S):
                            pos_s = PS[i2, s] - PS[i1, s]
                            neg_s = PS[i4, s] - PS[i3, s]
                            if sgn > 0:
                                vr[s] = pos_s
                                vl[s] = neg_s
                            else:
                                vl[s] = pos_s
                                vr[s] = neg_s
                        # admissible bound before any one-by-one test: the points of the bands and the
                        # special points (the defining points among them) placed freely, or left out
                        # (squared error); the subset's optimum places them somehow (_closed_form)
                        if mode != 2:
                            for s in range(n_val):
                                dvec[s] = PS[i1, s] - PS[i0, s] + PS[i3, s] - PS[i2, s] + spec_sum[s]
                            lb = _free_placement(vl, vr, dvec, n_val)
                        else:
                            lb = _leaf(vl, n_val, mode) + _leaf(vr, n_val, mode)
                        if not (lb < best[0] or (lb == best[0] and best[1] == serial and q < best_sub[m])):
                            continue
                        for band in range(2):
                            lo = i0 if band == 0 else i2
                            hi = i1 if band == 0 else i3
                            for t in range(lo, hi):
                                x = I3[t]
                                if x == q:
                                    continue
                                sd = _side_of(u, e, q, x, sgn)
                                if sd == 0:
                                    extras[n_extra] = x
                                    n_extra += 1
                                elif sd < 0:
                                    for s in range(S):
                                        vl[s] += pt[x, s]
                                else:
                                    for s in range(S):
                                        vr[s] += pt[x, s]
                        for t in range(n_spec):
                            x = special[t]
                            is_def = False
                            for h in range(m):
                                if hinge[h] == x:
                                    is_def = True
                            if is_def:
                                continue
                            sd = _side_of(u, e, q, x, sgn)
                            if sd == 0:
                                extras[n_extra] = x
                                n_extra += 1
                            elif sd < 0:
                                for s in range(S):
                                    vl[s] += pt[x, s]
                            else:
                                for s in range(S):
                                    vr[s] += pt[x, s]
                    if mode != 2 and n_extra == 0 and vl[S - 1] >= nmin and vr[S - 1] >= nmin:
                        c = _closed_form(vl, vr, pt, sub, n_val, dvec, extras, 0)
                    else:
                        # admissible bound (see _closed_form / _lower_bound): skip the enumeration when
                        # even a free placement of every on-plane point cannot be accepted
                        if mode != 2:
                            lb = _closed_form(vl, vr, pt, sub, n_val, dvec, extras, n_extra)
                        else:
                            lb = _leaf(vl, n_val, mode) + _leaf(vr, n_val, mode)
                        counts[1] += 1
                        if not (lb < best[0] or (lb == best[0] and best[1] == serial and q < best_sub[m])):
                            continue
                        counts[2] += 1
                        ok = _bary_factor(X, sub, G, Ed, Bm, rhs)
                        for t in range(n_extra):
                            _barycentric(X, sub, extras[t], lam, t, Bm, ok, dz)
                        c, _ = _assignments(vl, vr, pt, sub, extras, lam, n_extra, n_val, mode, nmin, VL, VR, sign, aval,
                                            bits, acost)
                    if c < best[0] or (c == best[0] and best[1] == serial and q < best_sub[m]):
                        best[0] = c
                        best[1] = serial
                        for t in range(D):
                            best_sub[t] = sub[t]
        # next hinge: (D-1)-subsets of 0 .. N-2
        if m == 0:
            return 1
        t = m - 1
        while t >= 0 and hinge[t] == N - 1 - m + t:
            t -= 1
        if t < 0:
            return 1
        hinge[t] += 1
        for v in range(t + 1, m):
            hinge[v] = hinge[v - 1] + 1
        state[0] = t
    return 0


@njit(cache=True)
def _final_assignment(X, sides, sub, pt, n_val, mode, nmin):
    """The first best assignment of the plane with robust ``sides``; returns (cost, a, left mask)."""
    N, D = X.shape
    S = pt.shape[1]
    vl = np.zeros(S)
    vr = np.zeros(S)
    extras = np.empty(N, dtype=np.int64)
    n_extra = 0
    for x in range(N):
        if sides[x] < 0:
            for s in range(S):
                vl[s] += pt[x, s]
        elif sides[x] > 0:
            for s in range(S):
                vr[s] += pt[x, s]
        else:
            is_def = False
            for k in range(D):
                if sub[k] == x:
                    is_def = True
            if not is_def:
                extras[n_extra] = x
                n_extra += 1
    lam = np.empty((max(n_extra, 1), D))
    G = np.empty((D, D))
    rhs = np.empty(D)
    Ed = np.empty((D, D))
    Bm = np.empty((D, D))
    ok = _bary_factor(X, sub, G, Ed, Bm, rhs)
    for t in range(n_extra):
        _barycentric(X, sub, extras[t], lam, t, Bm, ok, np.empty(D))
    c, a = _assignments(vl, vr, pt, sub, extras, lam, n_extra, n_val, mode, nmin, np.empty((S, 1 << D)),
                        np.empty((S, 1 << D)), _sign_table(D), np.empty(1 << D), np.empty(1 << D), np.empty(1 << D))
    left = sides < 0
    if a >= 0:
        for k in range(D):
            left[sub[k]] = not ((a >> (D - 1 - k)) & 1)
        for t in range(n_extra):
            val = 0.0
            for k in range(D):
                val += lam[t, k] * (1.0 if (a >> (D - 1 - k)) & 1 else -1.0)
            left[extras[t]] = abs(val) < 1e-9 or val <= 0.0
    return c, a, left


# ---------------------------------------------------------------------------
# Python driver
# ---------------------------------------------------------------------------


def _point_stats(obj: Objective, mode: int) -> tuple[np.ndarray, int]:
    """Per-point statistics ``pt`` (last column: the count 1) and the number of value columns."""
    n = obj.label.shape[0]
    if mode == 2:
        w, t = obj.weight, obj.target
        return np.ascontiguousarray(np.c_[w, w * t, w * t * t, np.ones(n)]), 3
    n_cls = obj.cls_bits.shape[0]
    pt = np.zeros((n, n_cls + 1))
    pt[np.arange(n), obj.label] = obj.weight
    pt[:, n_cls] = 1.0
    return pt, n_cls


def _restrict(obj: Objective, rows: np.ndarray) -> Objective:
    from .._numba import pack_columns

    n_cls = obj.cls_bits.shape[0]
    label = np.ascontiguousarray(obj.label[rows])
    cls_bits = pack_columns(label[:, None] == np.arange(n_cls)[None, :]) if obj.mode != SQUARED else \
        np.zeros((1, (len(rows) + 63) // 64), dtype=np.uint64)
    return Objective(obj.mode, cls_bits, label, np.ascontiguousarray(obj.weight[rows]),
                     np.ascontiguousarray(obj.target[rows]), np.zeros_like(obj.counts))


def _best_threshold(z: np.ndarray, pt: np.ndarray, n_val: int, mode: int, nmin: int) -> tuple[float, float]:
    """``(cost, t)`` of the best two-leaf split ``z <= t`` of the projections ``z`` (``t`` halfway
    between two distinct values, both leaves with at least ``nmin`` points); ``(inf, nan)`` if
    there is none."""
    order = np.argsort(z, kind="stable")
    zs = z[order]
    cs = np.cumsum(pt[order], axis=0)[:-1]
    gap = np.diff(zs) > 1e-9 * max(1.0, float(np.abs(zs).max()))
    at = np.flatnonzero(gap)  # the split after sorted position at[i]
    left = cs[gap]
    right = cs[-1] + pt[order[-1]] - left if left.size else left
    if not left.size:
        return math.inf, math.nan
    ok = (left[:, -1] >= nmin) & (right[:, -1] >= nmin)
    if not ok.any():
        return math.inf, math.nan
    left, right, at = left[ok], right[ok], at[ok]

    def cost(v: np.ndarray) -> np.ndarray:
        if mode == 2:
            with np.errstate(divide="ignore", invalid="ignore"):
                c = v[:, 2] - np.where(v[:, 0] > 0, v[:, 1] ** 2 / v[:, 0], 0.0)
            return np.maximum(c, 0.0)
        return np.maximum(v[:, :n_val].sum(axis=1) - v[:, :n_val].max(axis=1), 0.0)

    c = cost(left) + cost(right)
    j = int(np.argmin(c))
    return float(c[j]), 0.5 * (float(zs[at[j]]) + float(zs[at[j] + 1]))


@dataclass
class SeedPlane:
    """The search's seed split ``coef . x <= threshold`` (:func:`incumbent_split`), returned in
    place of a rule when a stopped search found no plane as good."""

    coef: np.ndarray
    threshold: float


def incumbent_cost(X: np.ndarray, obj: Objective, nmin: int = 0, logistic: bool = True) -> float:
    """The cost of :func:`incumbent_split`, an upper bound on the optimum over the hyperplane rules."""
    return incumbent_split(X, obj, nmin, logistic)[0]


def incumbent_split(X: np.ndarray, obj: Objective, nmin: int = 0, logistic: bool = True,
                    deadline: float | None = None) -> tuple[float, np.ndarray | None, float]:
    """``(cost, coef, threshold)`` of a good linear split ``coef . x <= threshold``, whose cost is
    an upper bound on the optimum over the hyperplane rules (``(inf, None, nan)`` if none).

    The best threshold along the directions of a weighted least-squares fit (of the target, or of
    the one-hot classes), with ``logistic`` of a (one-vs-rest) logistic regression, on standardised
    columns, and along each axis (ties: the first of these) (the logistic fit costs 0.01-0.1 s: worth it only for
    large searches).  Each such split
    separates its two sides strictly, so (moving the plane until it touches ``D`` points, with
    those points assigned to their sides) some hyperplane rule induces the same partition: the
    optimum is at most this cost.  (If rounding ever made that false, the caller searches again
    without it.)  Past ``deadline`` (a :func:`time.perf_counter` value) the logistic fit is skipped
    and no further direction is tried once one has been (on 100,000 rows they take about 1 s).
    """
    mode = 2 if obj.mode == SQUARED else 1
    pt, n_val = _point_stats(obj, mode)
    N, D = X.shape
    dirs = [np.eye(D)[j] for j in range(D)]
    sd = X.std(axis=0)
    sd[sd == 0] = 1.0
    Z = (X - X.mean(axis=0)) / sd
    # weighted least squares on the targets (regression) or on the one-hot classes (the Fisher
    # direction for two classes): closed form, a fraction of a millisecond
    sw = np.sqrt(obj.weight)
    T = obj.target[:, None] if mode == 2 else (obj.label[:, None] == np.unique(obj.label)[None, :]).astype(float)
    A = np.c_[Z, np.ones(N)] * sw[:, None]
    coef = np.linalg.lstsq(A, T * sw[:, None], rcond=None)[0][:D].T
    late = (lambda: False) if deadline is None else (lambda: time.perf_counter() >= deadline)
    if logistic and mode != 2 and np.unique(obj.label).size > 1 and not late():
        try:
            import warnings

            from sklearn.exceptions import ConvergenceWarning
            from sklearn.linear_model import LogisticRegression

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                lr = LogisticRegression(C=100.0, max_iter=300).fit(Z, obj.label, sample_weight=obj.weight)
            coef = np.r_[coef, lr.coef_]
        except Exception:  # noqa: BLE001 - an incumbent is only a speed-up
            pass
    # the fitted directions first: usually the best, and all a tight deadline leaves time for
    dirs = [c / sd for c in coef if np.all(np.isfinite(c)) and np.any(c != 0)] + dirs
    best = (math.inf, None, math.nan)
    for d in dirs:
        if best[1] is not None and late():
            break
        c, t = _best_threshold(X @ d, pt, n_val, mode, nmin)
        if c < best[0]:
            best = (c, d, t)
    return best


def _merge_duplicates(X: np.ndarray, pt: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct rows of ``X`` (``keep``: the first copy of each, in increasing order) and their
    summed statistics.

    The sweep may search these instead of all rows: copies of a point are on the same side of
    every rule whose subset holds at most one of them (off the plane: the same sign; on it: the
    same side as the defining copy, as ``delta`` takes the defining point's value there, or the
    same value of ``delta``), and a subset with two copies is affinely dependent.  A subset using a
    later copy induces the partition of the subset with the first copy instead, which comes
    earlier in lexicographic order (each sorted position no larger), so the first minimiser over
    the merged points, mapped back by ``keep``, is the first minimiser over all rows.  A merged
    point may hold several classes: :func:`_closed_form` places it wholly on one side.
    """
    _, first, inverse = np.unique(X, axis=0, return_index=True, return_inverse=True)
    if first.size == X.shape[0]:
        return np.arange(X.shape[0]), X, pt
    keep = np.sort(first)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first)] = np.arange(first.size)  # unique-row id -> position in keep
    pts = np.zeros((keep.size, pt.shape[1]))
    np.add.at(pts, rank[inverse.ravel()], pt)
    return keep, np.ascontiguousarray(X[keep]), pts


@njit(cache=True)
def _plane_of(Xt, sub, masks, start):
    """``(w, b)`` of the plane through the rows ``sub`` of ``Xt = [X, 1]``: ``w . x + b =
    det([[X[sub], 1], [x, 1]])``, expanded along its last row (as :func:`.rules._cofactors`, by the
    exterior product of the sweep instead of a Laplace recursion in Python)."""
    D = sub.shape[0]
    C = D + 1
    W = np.zeros((D + 1, 1 << C))
    Wa = np.zeros((D + 1, 1 << C))
    W[0, 0] = 1.0
    Wa[0, 0] = 1.0
    _hinge_wedge(Xt, sub, W, Wa, masks, start, 0)
    full = (1 << C) - 1
    wb = np.empty(C)
    for c in range(C):
        v = W[D, full ^ (1 << c)]
        wb[c] = v if (D + c) % 2 == 0 else -v
    return wb


def _rule_of(X: np.ndarray, sub: tuple[int, ...], a: int, left: np.ndarray, plane: np.ndarray) -> RuleSet:
    """The one-rule set of the winning plane ``plane`` (:func:`_plane_of`), with the sweep's
    partition ``left`` of the points."""
    D = X.shape[1]
    return RuleSet(
        pos=pack_rows_mask(left)[None, :], defs=np.asarray([sub], dtype=np.int64),
        kind=np.array([HYPER], dtype=np.int8), feature=np.array([-1], dtype=np.int64), threshold=np.zeros(1),
        planes=plane.reshape(1, D + 1), assign=np.array([a], dtype=np.int64),
        n_samples=X.shape[0],
    )


def solve_hyperplane1(X: np.ndarray, obj: Objective, *, exact: bool = False, nmin: int = 0,
                      deadline: float | None = None, rows: np.ndarray | None = None,
                      upper_bound: float | None = None, _seed: bool = True) -> tuple[Solution, RuleSet | None]:
    """The best tree with (at most, or exactly) one hyperplane split.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), ``1 <= n_features <= 6``
    obj : Objective
        The leaf objective over the rows of ``X`` (:func:`.solver.make_objective`).
    exact : bool
        Exactly one split (else the single leaf competes, and wins ties).
    nmin : int
        Fewest points (unweighted) in a leaf.
    deadline : float or None
        ``time.perf_counter()`` value at which to stop; the best plane so far is then
        returned with ``optimal=False``.
    rows : array of int, optional
        Solve on these rows of ``X`` (and ``obj``) only; the returned masks are over all
        rows of ``X`` (False outside ``rows``) and the rule's defining points are indices of ``X``.
    upper_bound : float, optional
        Only a plane of cost strictly below this is of interest: the search keeps it as
        its incumbent, and returns no tree (``cost = inf``) when nothing beats it.

    Returns
    -------
    (Solution, RuleSet or SeedPlane or None)
        The solution (its tree's rule 0 is the plane) and the one-rule set the tree
        uses, whose ``pos`` is the solver's partition (for :func:`.rules.routing_plane`);
        a stopped search that found no plane as good as its seed (:func:`incumbent_split`)
        returns the seed split, as a :class:`SeedPlane`, never anything worse.
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    n_all = X.shape[0]
    if rows is not None:
        rows = np.asarray(rows)
        rows = np.flatnonzero(rows) if rows.dtype == bool else rows.astype(np.int64)
        sol, rule = solve_hyperplane1(X[rows], _restrict(obj, rows), exact=exact, nmin=nmin, deadline=deadline,
                                      upper_bound=upper_bound)
        return _lift(sol, rule, rows, n_all, X)
    N, D = X.shape
    if not 1 <= D <= MAX_DIM:
        raise ValueError(f"the single-hyperplane path needs 1 to {MAX_DIM} features; got {D}")
    mode = 2 if obj.mode == SQUARED else 1
    pt, n_val = _point_stats(obj, mode)
    everything = np.ones(N, dtype=bool)
    leaf = float(leaf_cost(pack_rows_mask(everything), obj)) if N >= nmin else math.inf
    bound = math.inf if upper_bound is None else float(upper_bound)
    total = math.comb(N, D)
    seed, seed_coef, seed_t = (incumbent_split(X, obj, nmin, logistic=total > _LOGISTIC_ABOVE, deadline=deadline)
                               if _seed and N > D else (math.inf, None, math.nan))
    if seed < bound:  # planes of cost <= seed are accepted (the optimum is one of them)
        seed = seed * (1 + 1e-9) + 1e-12 if obj.mode != 0 else seed + 0.5
    best = np.array([min(bound, seed), -1.0])
    best_sub = np.full(D, -1, dtype=np.int64)
    counts = np.zeros(4, dtype=np.int64)  # subsets examined, bounded, enumerated; hinges skipped
    optimal = True
    gamma = _gamma(D)
    masks, start = _mask_table(D + 1)
    keep, Xs, pts = _merge_duplicates(X, pt)
    Ns = Xs.shape[0]
    Xt = np.ascontiguousarray(np.c_[Xs, np.ones(Ns)])
    if Ns >= D:
        m = D - 1
        hinge = np.arange(m, dtype=np.int64)
        state = np.zeros(2, dtype=np.int64)
        W = np.zeros((D + 1, 1 << (D + 1)))
        Wa = np.zeros((D + 1, 1 << (D + 1)))
        W[0, 0] = Wa[0, 0] = 1.0
        chunk = 1  # hinges per kernel call, doubled while a call is short: on large N one hinge is 0.2 s
        status = 0
        while status == 0:
            if deadline is not None and time.perf_counter() >= deadline:
                status = 2
                continue
            t0 = time.perf_counter()
            status = hyperplane1_sweep(Xs, Xt, hinge, state, chunk, masks, start, W, Wa, pts, n_val, mode, nmin,
                                       gamma, best, best_sub, counts, seconds_left(deadline))
            if time.perf_counter() - t0 < 0.05 and chunk < 1 << 22:
                chunk *= 2
        optimal = status == 1
    examined = int(counts[0])
    if optimal:  # the subsets with a repeated point: covered by the merged points (_merge_duplicates)
        examined += total - math.comb(Ns, D)
    if best_sub[0] >= 0:
        best_sub = keep[best_sub]
    if best_sub[0] < 0 and seed < bound and optimal:  # nothing reached the seed (rounding): search again
        return solve_hyperplane1(X, obj, exact=exact, nmin=nmin, deadline=deadline, upper_bound=upper_bound,
                                 _seed=False)
    if best_sub[0] < 0 and not optimal and seed_coef is not None and seed < bound and (exact or seed < leaf):
        # stopped before any plane as good as the seed: the seed split itself (never worse than it)
        left = X @ seed_coef <= seed_t
        tree = Node(0, everything, Node(-1, left), Node(-1, ~left))
        cost = float(leaf_cost(pack_rows_mask(left), obj)) + float(leaf_cost(pack_rows_mask(~left), obj))
        return Solution(cost, tree, (0,), False, examined, total), SeedPlane(seed_coef, seed_t)
    plane = best[0] if best_sub[0] >= 0 else math.inf
    if not exact and leaf <= plane and (upper_bound is None or leaf < upper_bound):
        return Solution(leaf, Node(-1, everything), (), optimal, examined, total), None
    if best_sub[0] < 0:
        return Solution(math.inf, None, (), optimal, examined, total), None
    sub = tuple(int(v) for v in best_sub)
    Xt_all = Xt if Ns == N else np.ascontiguousarray(np.c_[X, np.ones(N)])
    sides, ok = subset_sides(X, Xt_all, best_sub, masks, start, gamma)
    assert ok
    _, a, left = _final_assignment(X, sides, best_sub, pt, n_val, mode, nmin)
    rule = _rule_of(X, sub, int(a), left, _plane_of(Xt_all, best_sub, masks, start))
    left = _routed(rule, X, left, sides)
    rule.pos = pack_rows_mask(left)[None, :]
    tree = Node(0, everything, Node(-1, left), Node(-1, ~left))
    cost = float(leaf_cost(pack_rows_mask(left), obj)) + float(leaf_cost(pack_rows_mask(~left), obj))
    return Solution(cost, tree, (0,), optimal, examined, total), rule


def _routed(rule: RuleSet, X: np.ndarray, left: np.ndarray, sides: np.ndarray) -> np.ndarray:
    """The training partition of the plane the fitted tree will store (:func:`.rules.routing_plane`):
    the solver's own partition whenever a real plane reproduces it (always, up to points within
    rounding distance of the plane that no float plane separates)."""
    from .rules import routing_plane

    coef, thr = routing_plane(rule, 0, X, side=sides)
    return X @ coef <= thr


def _lift(sol: Solution, rule: RuleSet | None, rows: np.ndarray, n_all: int, X: np.ndarray):
    def lift_mask(mask: np.ndarray) -> np.ndarray:
        full = np.zeros(n_all, dtype=bool)
        full[rows] = mask
        return full

    def lift_node(node: Node | None) -> Node | None:
        if node is None:
            return None
        return Node(node.rule, lift_mask(node.points), lift_node(node.left), lift_node(node.right))

    sol = Solution(sol.cost, lift_node(sol.tree), sol.combination, sol.optimal, sol.n_examined, sol.n_total)
    if rule is not None and not isinstance(rule, SeedPlane):  # (a seed plane routes any row itself)
        left = lift_mask(rule.left_mask(0))
        rule = RuleSet(pack_rows_mask(left)[None, :], rows[rule.defs], rule.kind, rule.feature, rule.threshold,
                       rule.planes, rule.assign, n_all)
    return sol, rule
