"""Candidate splitting rules of He & Little's optimal trees (spec-002 §3.11).

A rule ``r`` cuts the space into ``r+`` (the left child) and ``r-`` (the right
child).  Every rule is *defined by data points* (one for an axis-parallel rule,
``D`` for a hyperplane in ``R^D``); the ancestry relation between two rules
(``Kmat``, spec §2.2) is read off those points: ``r_j`` may sit in the left
subtree of ``r_i`` iff all defining points of ``r_j`` lie in ``r_i+``, in the
right subtree iff all lie in ``r_i-``, and not below ``r_i`` at all otherwise.

A :class:`RuleSet` stores, for every rule, its membership bitset over the
training points (``pos``: the set ``r+ ∩ X``, packed as in
:mod:`arboretum._numba`), its defining points, and what the fitted
:class:`arboretum.Tree` needs to route new points the same way.

Families
--------
``axis`` (:func:`axis_rules`)
    ``x_d <= x_{n,d}``, one rule per (feature ``d``, sample ``n``) in that
    order, so ``M = N * D``.  Rules are **never** merged by value: two samples
    with the same ``x_d`` give two rules, because they have different
    defining points and so different places in a proper tree; merging them
    loses optima on tied data (spec T19, G4).
``hyperplane`` (:func:`hyperplane_rules`)
    For every affinely independent ``D``-subset of samples (lexicographic
    order), the hyperplane through them, once per assignment of the ``D``
    defining points to the two sides (``2**D`` rules per subset): a single
    orientation is not exact (spec T14, XOR).  Sign tests are robust: a
    floating-point evaluation with a forward error bound; a point within the
    bound is on the plane and follows the on-plane policy (spec G2, G3; see
    :func:`_side_values`).
``quadratic`` (:func:`quadratic_rules`)
    Degree-2 hypersurfaces: the hyperplane rules above in the lifted space of
    the monomials ``x_j`` and ``x_j x_k`` (:func:`arboretum.tree.quadratic_features`,
    ``G = D + D (D + 1) / 2`` dimensions), through every affinely independent
    ``G``-subset of *lifted* points, with all ``2**G`` assignments of the
    defining points; the same robust sign tests on the lifted coordinates (the
    very floats the fitted tree's ``QUADRATIC`` split evaluates), and
    rank-deficient lifted subsets (e.g. four collinear points in 2-D) skipped
    (spec §3.11 (c), G16).  Nothing is copied: one lifting map and the
    hyperplane machinery (:func:`_plane_rules`).

Rules with the same partition
-----------------------------
Two rules that cut the training points the same way are handled once only
where that provably loses no optimum: with a single rule (``max_splits=1``,
:mod:`.hyper1` merges repeated points into one weighted point), and
in the axis-parallel branch-and-bound (:mod:`.axis`, which enumerates
thresholds between distinct sorted values and has no ancestry relation).
The generic DP keeps them all: the ancestry relation reads the *defining
points*, so two rules with one partition of the training points may have
different places in a proper tree, and dropping either can lose the optimum
(spec T19 shows it for axis rules merged by value; the paper's Figures 3-4
and spec G21 say the DP cannot remove duplicate partitions).
"""

from __future__ import annotations

import itertools
import time
import math
from dataclasses import dataclass

import numpy as np

from .._numba import n_words, pack_columns

__all__ = ["RuleSet", "axis_rules", "axis_thresholds", "hyperplane_rules", "hyperplane_subset_rules", "make_rules",
           "n_hyperplane_subsets", "quadratic_rules", "lifted_dim", "n_family_rules", "bytes_per_rule",
           "MAX_HYPERPLANE_DIM", "MAX_QUADRATIC_FEATURES", "AXIS", "HYPER", "QUAD", "USER"]

#: Rule kinds.
AXIS = 0
HYPER = 1
QUAD = 2  #: a hyperplane of the lifted space (degree-2 hypersurface); ``planes`` in lifted coordinates
USER = 3  #: a rule of a user's :class:`.user.CandidateRules`
#: Largest dimension of the hyperplane family (cofactors by Laplace expansion, D! terms each).
MAX_HYPERPLANE_DIM = 6
#: Largest dimension of the numba single-hyperplane path (:mod:`.hyper1`, explicit cofactors).
MAX_FAST_DIM = 3
#: Most features of the quadratic family (its lifted dimension must stay <= MAX_HYPERPLANE_DIM: D = 2 gives G = 5).
MAX_QUADRATIC_FEATURES = 2
#: D-subsets whose planes are computed in one vectorised batch.
_BATCH = 2048
_EPS = np.finfo(np.float64).eps


@dataclass
class RuleSet:
    """Candidate rules over ``n_samples`` training points.

    Attributes
    ----------
    pos : ndarray of uint64, shape (n_rules, n_words)
        ``pos[r]``: the training points in ``r+`` (sent left).
    defs : ndarray of int64, shape (n_rules, max_defining)
        Defining points of every rule, padded with -1.
    kind : ndarray of int8, shape (n_rules,)
        :data:`AXIS` or :data:`HYPER`.
    feature : ndarray of int64, shape (n_rules,)
        Feature of an axis rule (-1 for hyperplanes).
    threshold : ndarray of float64, shape (n_rules,)
        An axis rule sends ``x[feature] <= threshold`` left (the threshold lies
        between the defining value and the next larger training value, so the
        training partition is ``x_d <= x_{n,d}``).  For hyperplanes, see
        :meth:`hyperplane`.
    planes : ndarray of float64, shape (n_rules, n_features + 1) or None
        ``(w, b)`` of every hyperplane rule: the plane is ``w . x + b = 0``,
        ``r+`` its side ``w . x + b < 0`` plus the on-plane points assigned to
        it (see :func:`hyperplane_rules`).
    assign : ndarray of int64, shape (n_rules,)
        On-plane assignment of a hyperplane rule's defining points: bit
        ``D - 1 - k`` set means defining point ``k`` goes right.
    n_samples : int
    splits : list or None
        For :data:`USER` rules, the fitted tree's split of every rule
        ``(kind, feature, threshold, coef)`` (:mod:`.user`); None otherwise.
    """

    pos: np.ndarray
    defs: np.ndarray
    kind: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    planes: np.ndarray | None
    assign: np.ndarray
    n_samples: int
    splits: list | None = None
    #: False when a deadline stopped the generation: the rules of the subsets generated so far
    complete: bool = True

    @property
    def n_rules(self) -> int:
        return int(self.pos.shape[0])

    def left_mask(self, r: int) -> np.ndarray:
        """Boolean membership of the training points in ``r+``."""
        from .._numba import unpack

        return unpack(self.pos[r], self.n_samples)

    def describe(self, r: int) -> str:
        if self.kind[r] == AXIS:
            return f"x{self.feature[r]} <= {self.threshold[r]:g} (point {self.defs[r, 0]})"
        pts = [int(p) for p in self.defs[r] if p >= 0]
        if self.kind[r] == USER:
            return f"user rule {self.feature[r]} (defining points {pts})"
        what = "hyperplane" if self.kind[r] == HYPER else "quadratic surface"
        return f"{what} through {pts} (assignment {self.assign[r]})"


def _empty(n_samples: int, n_features: int, max_defs: int, planes: bool) -> RuleSet:
    return RuleSet(
        np.zeros((0, n_words(n_samples)), dtype=np.uint64), np.zeros((0, max_defs), dtype=np.int64),
        np.zeros(0, dtype=np.int8), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64),
        np.zeros((0, n_features + 1)) if planes else None, np.zeros(0, dtype=np.int64), n_samples,
    )


def axis_thresholds(col: np.ndarray) -> np.ndarray:
    """For every value of ``col``, the threshold ``t`` the fitted tree uses for ``x <= value``: a short
    decimal between the value and the next larger value of the column (the value itself for the
    largest), so that ``x <= t`` and ``x <= value`` send the same training points left."""
    from ..binarizer import short_threshold

    values = np.unique(col)
    nxt = np.empty(values.size)
    nxt[:-1] = [short_threshold(float(a), float(b)) for a, b in zip(values[:-1], values[1:])]
    nxt[-1] = values[-1]
    return nxt[np.searchsorted(values, col)]


def axis_rules(X: np.ndarray) -> RuleSet:
    """The axis-parallel rules ``x_d <= x_{n,d}``, one per (feature ``d``, sample ``n``), feature-major.

    Parameters
    ----------
    X : ndarray of float64, shape (n_samples, n_features)

    Returns
    -------
    RuleSet
        ``n_samples * n_features`` rules; rule ``d * n_samples + n`` is defined by sample ``n``.
    """
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    pos = np.empty((n * d, n_words(n)), dtype=np.uint64)
    for j in range(d):  # one feature at a time: n x n booleans at most
        col = X[:, j]
        pos[j * n:(j + 1) * n] = pack_columns(col[:, None] <= col[None, :])
    return RuleSet(
        pos=pos,
        defs=np.tile(np.arange(n, dtype=np.int64), d).reshape(-1, 1),
        kind=np.full(n * d, AXIS, dtype=np.int8),
        feature=np.repeat(np.arange(d, dtype=np.int64), n),
        threshold=np.concatenate([axis_thresholds(X[:, j]) for j in range(d)]),
        planes=None,
        assign=np.zeros(n * d, dtype=np.int64),
        n_samples=n,
    )


def n_hyperplane_subsets(n_samples: int, n_features: int) -> int:
    """``C(N, D)``: the number of ``D``-subsets the hyperplane family examines."""
    return math.comb(int(n_samples), int(n_features))


# ---------------------------------------------------------------------------
# Exact-enough orientation predicates
# ---------------------------------------------------------------------------


def _laplace_det(A: np.ndarray) -> np.ndarray:
    """Determinants of stacked square matrices ``A`` (..., k, k) by Laplace expansion along the first row.

    Only products and sums: with small integer entries the result is exact, and
    in general its error is at most ``(k + 1) * eps`` times the permanent of
    ``|A|`` (each of the ``k!`` terms is a product of ``k`` factors, and the sum
    has at most ``k!`` terms; spelled out in :func:`_side_values`).
    """
    k = A.shape[-1]
    if k == 0:
        return np.ones(A.shape[:-2])
    if k == 1:
        return A[..., 0, 0].copy()
    if k == 2:
        return A[..., 0, 0] * A[..., 1, 1] - A[..., 0, 1] * A[..., 1, 0]
    total = np.zeros(A.shape[:-2])
    cols = np.arange(k)
    for j in range(k):
        minor = A[..., 1:, :][..., cols != j]
        term = A[..., 0, j] * _laplace_det(minor)
        total = total + term if j % 2 == 0 else total - term
    return total


def _cofactors(P: np.ndarray, absolute: bool = False) -> np.ndarray:
    """``(w, b)`` of the hyperplanes through the rows of ``P`` (B, D, D): ``w . x + b`` is the
    determinant of ``[[P, 1], [x, 1]]`` (so it vanishes on the defining points).

    With ``absolute``, the same expansion of ``|[P, 1]|`` (permanents): the scale of the
    rounding errors.
    """
    B, D, _ = P.shape
    A = np.concatenate([P, np.ones((B, D, 1))], axis=2)  # (B, D, D + 1)
    if absolute:
        A = np.abs(A)
    out = np.empty((B, D + 1))
    cols = np.arange(D + 1)
    for k in range(D + 1):
        # Expansion of det([[P, 1], [x, 1]]) along its last row: entry (D, k) has sign (-1)**(D + k).
        minor = A[:, :, cols != k]
        m = _laplace_det(minor) if not absolute else _laplace_perm(minor)
        out[:, k] = m if absolute or (D + k) % 2 == 0 else -m
    return out


def _laplace_perm(A: np.ndarray) -> np.ndarray:
    """Permanents of stacked non-negative square matrices (the error scale of :func:`_laplace_det`)."""
    k = A.shape[-1]
    if k == 0:
        return np.ones(A.shape[:-2])
    if k == 1:
        return A[..., 0, 0].copy()
    total = np.zeros(A.shape[:-2])
    cols = np.arange(k)
    for j in range(k):
        total = total + A[..., 0, j] * _laplace_perm(A[..., 1:, :][..., cols != j])
    return total


def _batch_sides(X: np.ndarray, subsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Planes through the rows ``X[subsets[b]]`` of a batch of ``D``-subsets (B, D), vectorised.

    Returns ``(wb, sides, ok)``: the cofactors ``(w, b)`` (B, D + 1), the
    robust signs (B, N) of ``w . x_n + b`` (0: on the plane, always so at the
    defining points) and whether each subset is affinely independent.

    The floating-point value ``v = w . x + b`` (cofactors by Laplace expansion)
    differs from the exact determinant by less than ``(D + 3) * eps`` (plus a
    relative 1 % margin) times the permanent of the absolute matrix, which is
    ``|x| . |W| + |B|`` with ``|W|, |B|`` the absolute cofactors.  A sample
    whose ``|v|`` is within that bound counts as *on the plane*: its side is
    then decided by the on-plane policy (:func:`hyperplane_rules`), never by
    rounding noise.  So every sign is either certain or the point is treated
    as on the plane, and the partitions are those a floating-point test of a
    slightly tilted plane reproduces (data that are collinear in decimal, such
    as ``(0.74, 0.24), (0.88, 0.35), (1.16, 0.57)``, are collinear here, although
    their binary floats are not exactly).  With integer data below ``2**20`` or
    so every value is exact and so is every sign.  Points are affinely
    dependent when every cofactor is within its bound.
    """
    D = X.shape[1]
    P = X[subsets]  # (B, D, D)
    wb = _cofactors(P)
    wa = _cofactors(P, absolute=True)
    gamma = 1.01 * (D + 3) * _EPS
    ok = ~np.all(np.abs(wb) <= gamma * wa, axis=1)
    v = wb[:, :D] @ X.T + wb[:, D:]
    bound = gamma * (wa[:, :D] @ np.abs(X).T + wa[:, D:])
    s = np.sign(v).astype(np.int64)
    s[np.abs(v) <= bound] = 0
    np.put_along_axis(s, subsets, 0, axis=1)
    return wb, s, ok


def _side_values(X: np.ndarray, P: np.ndarray, subset: tuple[int, ...]) -> np.ndarray | None:
    """Robust signs (-1, 0, +1) of ``w . x_n + b`` for every sample, for the plane through the
    points ``subset`` (``P = X[subset]``); None when they are affinely dependent (see :func:`_batch_sides`)."""
    _, s, ok = _batch_sides(X, np.asarray(subset, dtype=np.int64)[None])
    return s[0] if ok[0] else None


def hyperplane_rules(X: np.ndarray, deadline: float | None = None) -> RuleSet:
    """Hyperplane rules through every affinely independent ``D``-subset, with all ``2**D`` on-plane
    assignments of the defining points.

    For the subset ``p_1 < ... < p_D`` (lexicographic order) the plane is
    ``w . x + b = 0`` with ``(w, b)`` its cofactors (:func:`_cofactors`); a
    point goes to ``r+`` (left) when ``w . x + b < 0``, to ``r-`` when ``> 0``.
    Points on the plane:

    * defining point ``p_k`` goes left or right as the assignment says (rule
      ``a`` of the subset, ``a = 0 .. 2**D - 1``, sends ``p_k`` right iff bit
      ``D - 1 - k`` of ``a`` is set), so every linearly separable dichotomy of
      the training points is the partition of some rule;
    * any other on-plane point (data not in general position) follows the
      affine function ``delta`` with ``delta(p_k) = -1`` (left) or ``+1``
      (right), i.e. the rule is the plane tilted infinitesimally towards its
      assignment; a point where ``delta`` is 0 too goes left.

    Orientation flips of ``w`` are not generated: the assignment already
    covers both sides (spec §3.11 (b)).

    Parameters
    ----------
    X : ndarray of float64, shape (n_samples, n_features), ``1 <= n_features <= 6``

    Returns
    -------
    RuleSet
    """
    X = np.asarray(X, dtype=np.float64)
    D = X.shape[1]
    if not 1 <= D <= MAX_HYPERPLANE_DIM:
        raise ValueError(
            f"hyperplane rules need 1 to {MAX_HYPERPLANE_DIM} features; got {D} (C(N, D) * 2**D rules "
            f"would be far too many: select a few features first)"
        )
    return _family_rules(X, HYPER, deadline)


def lifted_dim(n_features: int) -> int:
    """``G``: the dimension of the lifted space of the quadratic family (spec §3.11 (c))."""
    from ..tree import quadratic_terms

    return len(quadratic_terms(n_features))


def quadratic_rules(X: np.ndarray, deadline: float | None = None) -> RuleSet:
    """Degree-2 hypersurface rules: :func:`hyperplane_rules` of the lifted points
    ``quadratic_features(X)``, through every affinely independent ``G``-subset of them with all
    ``2**G`` assignments of the defining points (kind :data:`QUAD`; ``planes`` in lifted coordinates).

    Parameters
    ----------
    X : ndarray of float64, shape (n_samples, n_features), ``1 <= n_features <= 2``

    Returns
    -------
    RuleSet
        ``C(N, G) * 2**G`` rules at most (degenerate lifted subsets skipped).
    """
    from ..tree import quadratic_features

    X = np.asarray(X, dtype=np.float64)
    D = X.shape[1]
    if not 1 <= D <= MAX_QUADRATIC_FEATURES:
        raise ValueError(
            f"quadratic rules need 1 to {MAX_QUADRATIC_FEATURES} features; got {D} (the lifted space "
            f"would have {lifted_dim(D)} dimensions and C(N, {lifted_dim(D)}) * 2**{lifted_dim(D)} rules: "
            f"select one or two features first)"
        )
    return _family_rules(quadratic_features(X), QUAD, deadline)


def _family_rules(Z: np.ndarray, kind: int, deadline: float | None = None) -> RuleSet:
    """The plane rules of every ``G``-subset of the rows of ``Z`` (lexicographic order), in batches;
    a ``deadline`` (``time.perf_counter()`` seconds) checked between batches stops the generation
    with the rules made so far (``complete=False``)."""
    n, G = Z.shape
    parts = []
    complete = True
    it = itertools.combinations(range(n), G)
    while True:
        if deadline is not None and time.perf_counter() >= deadline:
            complete = False
            break
        batch = np.array(list(itertools.islice(it, _BATCH)), dtype=np.int64).reshape(-1, G)
        if batch.shape[0] == 0:
            break
        part = _plane_rules(Z, batch, kind)
        if part.n_rules:
            parts.append(part)
    if not parts:
        empty = _empty(n, G, G, planes=True)
        empty.complete = complete
        return empty
    return RuleSet(
        pos=np.concatenate([p.pos for p in parts]),
        defs=np.concatenate([p.defs for p in parts]),
        kind=np.concatenate([p.kind for p in parts]),
        feature=np.concatenate([p.feature for p in parts]),
        threshold=np.concatenate([p.threshold for p in parts]),
        planes=np.concatenate([p.planes for p in parts]),
        assign=np.concatenate([p.assign for p in parts]),
        n_samples=n,
        complete=complete,
    )


def hyperplane_subset_rules(X: np.ndarray, subset: tuple[int, ...], only: int | None = None) -> RuleSet:
    """The ``2**D`` rules of the plane through the points ``subset`` (none when they are affinely
    dependent), in assignment order, or only assignment ``only``; see :func:`hyperplane_rules`."""
    return _plane_rules(np.asarray(X, dtype=np.float64), np.asarray(subset, dtype=np.int64)[None], HYPER, only)


def _plane_rules(Z: np.ndarray, subsets: np.ndarray, kind: int, only: int | None = None) -> RuleSet:
    """The rules of the planes through the rows of ``Z`` indexed by each row of ``subsets`` (B, G):
    ``2**G`` per affinely independent subset (assignment order), or only assignment ``only``."""
    n, G = Z.shape
    wb, s, ok = _batch_sides(Z, subsets)
    subsets, wb, s = subsets[ok], wb[ok], s[ok]
    B = subsets.shape[0]
    assigns = np.arange(2**G, dtype=np.int64) if only is None else np.array([only], dtype=np.int64)
    A = assigns.shape[0]
    bits = ((assigns[:, None] >> (G - 1 - np.arange(G))[None, :]) & 1).astype(bool)  # (A, G): point k right
    left = np.repeat((s < 0)[:, None, :], A, axis=1)  # (B, A, N)
    rows = np.arange(B)[:, None, None]
    left[rows, np.arange(A)[None, :, None], subsets[:, None, :]] = ~bits[None, :, :]
    # other on-plane points (data not in general position) follow the tilt delta
    for b in np.flatnonzero(np.count_nonzero(s == 0, axis=1) > G).tolist():
        extra = np.flatnonzero(s[b] == 0)
        extra = extra[~np.isin(extra, subsets[b])]
        P = Z[subsets[b]]
        for t in range(A):
            delta = np.where(bits[t], 1.0, -1.0)
            left[b, t, extra] = _delta_values(P, delta, Z[extra]) <= 0
    m = B * A
    return RuleSet(
        pos=pack_columns(left.reshape(m, n).T),
        defs=np.repeat(subsets, A, axis=0),
        kind=np.full(m, kind, dtype=np.int8),
        feature=np.full(m, -1, dtype=np.int64),
        threshold=np.zeros(m),
        planes=np.repeat(wb, A, axis=0),
        assign=np.tile(assigns, B),
        n_samples=n,
    )


def _delta_affine(P: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """``(u, c)`` of the minimum-norm affine function with ``u . p_k + c = delta_k``."""
    A = np.concatenate([P, np.ones((P.shape[0], 1))], axis=1)
    sol, *_ = np.linalg.lstsq(A, delta, rcond=None)
    return sol


def _delta_values(P: np.ndarray, delta: np.ndarray, Z: np.ndarray) -> np.ndarray:
    uc = _delta_affine(P, delta)
    vals = Z @ uc[:-1] + uc[-1]
    vals[np.abs(vals) < 1e-9] = 0.0
    return vals


def routing_plane(rules: RuleSet, r: int, X: np.ndarray, side: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """A real hyperplane ``coef . x <= threshold`` that sends exactly the training points of ``r+`` left.

    First the rule's plane tilted towards its on-plane assignment by ``eps *
    delta`` (see :func:`hyperplane_rules`), with ``eps`` half the largest tilt
    that moves no off-plane training point across.  When floating-point
    evaluation of that plane does not reproduce the rule's training partition
    (points within rounding distance of the plane, or on-plane points where
    ``delta`` vanishes), the maximum-margin separator of the partition (a
    linear programme on standardised columns) is used instead.  The tree
    routes new points by the plane returned; only training points are
    guaranteed to go where the rule sends them.  The answer is kept on ``rules`` (per rule and
    ``X``), as the single-hyperplane path and the tree builder both ask for it.  ``side``: the
    robust sides of the points (:func:`_side_values`) when the caller has them already.
    """
    cache = rules.__dict__.setdefault("_routing", {})
    key = (r, id(X), X.shape)
    if key not in cache or cache[key][0] is not X:
        cache[key] = (X, _routing_plane(rules, r, X, side))
    return cache[key][1]


def _routing_plane(rules: RuleSet, r: int, X: np.ndarray, side: np.ndarray | None) -> tuple[np.ndarray, float]:
    D = X.shape[1]
    subset = [int(p) for p in rules.defs[r]]
    P = X[subset]
    left = rules.left_mask(r)
    a = int(rules.assign[r])
    delta = np.array([1.0 if (a >> (D - 1 - k)) & 1 else -1.0 for k in range(D)])
    uc = _delta_affine(P, delta)
    wb = rules.planes[r]
    if side is None:
        side = _side_values(X, P, tuple(subset))
    v = X @ wb[:D] + wb[D]
    d = X @ uc[:D] + uc[D]
    # an off-plane point is at risk only if the tilt pushes it towards the other side
    risk = (side != 0) & (np.sign(d) != side) & (d != 0)
    eps = 1.0
    if risk.any():
        eps = 0.5 * float(np.min(np.abs(v[risk]) / np.abs(d[risk])))
    u_norm = float(np.linalg.norm(uc[:D]))
    if u_norm > 0:
        eps = min(eps, 0.5 * float(np.linalg.norm(wb[:D])) / u_norm)  # a tilt, not a new plane
    coef = wb[:D] + eps * uc[:D]
    thr = float(-(wb[D] + eps * uc[D]))
    if np.array_equal(X @ coef <= thr, left):
        return coef, thr
    found = _max_margin_plane(X, left)
    if found is not None and np.array_equal(X @ found[0] <= found[1], left):
        return found
    return coef, thr


def _max_margin_plane(X: np.ndarray, left: np.ndarray) -> tuple[np.ndarray, float] | None:
    """The separator ``coef . x <= thr`` of ``left`` from the rest with the largest margin in
    standardised coordinates (``|w|_inf <= 1``), by linear programming; None if none separates."""
    from scipy.optimize import linprog

    n, D = X.shape
    m = X.mean(axis=0)
    sd = X.std(axis=0)
    sd[sd == 0] = 1.0
    Z = (X - m) / sd
    sgn = np.where(left, 1.0, -1.0)  # left: w.z + b <= -t ; right: w.z + b >= t
    # variables (w, b, t); minimise -t subject to sgn * (w.z + b) + t <= 0
    A = np.concatenate([sgn[:, None] * Z, sgn[:, None], np.ones((n, 1))], axis=1)
    bounds = [(-1, 1)] * D + [(None, None), (None, 1)]
    res = linprog(np.r_[np.zeros(D + 1), -1.0], A_ub=A, b_ub=np.zeros(n), bounds=bounds, method="highs")
    if res.status != 0 or res.x[-1] <= 0:
        return None
    w, b = res.x[:D], res.x[D]
    coef = w / sd
    return coef, float(-(b - float(np.dot(coef, m))))


def n_family_rules(split_type: str, n_samples: int, n_features: int) -> int:
    """Candidate rules of a built-in family (an upper bound for the plane families, whose
    affinely dependent subsets are skipped): ``N D``, ``C(N, D) 2**D`` or ``C(N, G) 2**G``."""
    if split_type == "axis":
        return n_samples * n_features
    g = n_features if split_type == "hyperplane" else lifted_dim(n_features)
    return math.comb(int(n_samples), g) * 2**g


def bytes_per_rule(split_type: str, n_samples: int, n_features: int) -> int:
    """Memory of one rule of a built-in family in a :class:`RuleSet`: its bitset, defining points,
    plane (plane families), kind, feature, threshold and assignment."""
    g = {"axis": 0, "hyperplane": n_features}.get(split_type)
    g = lifted_dim(n_features) if g is None else g
    return 8 * n_words(n_samples) + 8 * max(g, 1) + (8 * (g + 1) if g else 0) + 25


def make_rules(X: np.ndarray, split_type: str, deadline: float | None = None) -> RuleSet:
    """The rule family ``split_type`` ("axis", "hyperplane" or "quadratic") of ``X``; the plane
    families stop at ``deadline`` with the rules made so far (``complete=False``)."""
    if split_type == "axis":
        return axis_rules(X)
    if split_type == "hyperplane":
        return hyperplane_rules(X, deadline)
    if split_type == "quadratic":
        return quadratic_rules(X, deadline)
    raise ValueError(f"split_type must be 'axis', 'hyperplane' or 'quadratic'; got {split_type!r}")
