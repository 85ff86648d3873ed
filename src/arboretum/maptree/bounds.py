"""MAPTree's bounds: the Perfect Split heuristic and the regression bound tables.

* :func:`heuristic`: the paper's Perfect Split heuristic (spec-000 §2.7) as a
  cost, a lower bound on the optimal cost of a classification subproblem (the
  search's kernels use a stronger, sized form of it; see
  :mod:`arboretum.maptree._kernels`);
* :func:`nig_bound_tables` and :func:`group_spread_terms`: the tables of the
  admissible lower bound of MAPTreeRegressor's search (the paper gives none),
  with the proof in :func:`nig_bound_tables`'s docstring;
* :func:`leaf_share_terms`: per-sample terms whose sum over a node's samples
  is a lower bound on the leaf costs of every tree below it (a feasible
  solution of the dual of the partition problem), proved in its docstring.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray
from numba import njit
from scipy.special import gammaln

from ..bayes import ChipmanPrior, NIGPrior, _log_pure_likelihoods, log_dirichlet_multinomial, validate_rho

__all__ = ["group_spread_terms", "heuristic", "leaf_share_terms", "nig_bound_tables"]


def heuristic(
    counts: ArrayLike,
    d: ArrayLike,
    alpha: float = 0.95,
    beta: float = 0.5,
    rho: ArrayLike = (2.5, 2.5),
) -> np.float64 | NDArray[np.float64]:
    """Perfect Split heuristic of MAPTree, as a cost (spec-000 §2.7, §2.8).

    ``h = -max( log l(c), log p_split(d) + sum_k log l(c_k e_k) )``: the cost
    of the best conceivable subtree, which is either a leaf (charged the bare
    likelihood, without ``p_leaf``) or one split that puts every class into
    its own pure, unsplittable leaf (charged ``p_split(d)``, not divided by
    the number of valid splits).  It is consistent and therefore a lower
    bound on the optimal cost of the subproblem.

    Parameters
    ----------
    counts : array-like of shape (..., K)
        Class counts of the subproblem; vectorised over leading axes.
    d : int or array-like of int
        Depth of the subproblem (broadcast against ``counts[..., 0]``).
    alpha, beta : float
        Parameters of the :class:`ChipmanPrior`.
    rho : float or array-like of shape (K,)
        Concentrations in class-index order.

    Returns
    -------
    float or ndarray
        ``h >= 0``.
    """
    prior = ChipmanPrior(alpha, beta)
    c = np.asarray(counts, dtype=np.float64)
    if c.ndim == 0:
        raise ValueError("counts must have a class axis (shape (..., K))")
    r = validate_rho(rho, c.shape[-1])
    leaf_term = log_dirichlet_multinomial(c, r)
    split_term = prior.log_p_split(d) + _log_pure_likelihoods(c, r)
    return -np.maximum(leaf_term, split_term)


def _min_window_ss(y: NDArray[np.float64], w: NDArray[np.int64], k_max: int) -> NDArray[np.float64]:
    """Lower bounds ``m[k] <= SSmin(k)`` for ``k = 0 .. k_max``, non-decreasing in ``k``.

    ``SSmin(k)`` is the smallest sum of squares about their mean of any ``k``
    values of the multiset holding ``y[i]`` ``w[i]`` times.  A minimising
    subset is a run of ``k`` consecutive values in sorted order, so
    ``SSmin(k)`` is the minimum over sliding windows of the sorted, replicated
    values.  (If a subset skips a value ``v`` lying strictly between two of
    its members, replace whichever extreme member lies farther from the
    subset mean ``c`` by ``v``, which is closer to ``c``; ``sum (y - c)**2``
    decreases and the sum of squares about the new mean is smaller still.
    Repeating this ends in a window.)  Each window's sum of squares is lowered
    by a worst-case rounding margin, and the running maximum keeps ``m``
    non-decreasing (``SSmin`` is: a set's sum of squares is at least that of
    any of its subsets, since adding ``x`` to ``A`` adds
    ``|A| / (|A| + 1) (x - mean_A)**2 >= 0``).
    Replication is capped: beyond ``4_000_000`` values ``m = 0``, a valid and
    weaker bound.
    """
    out = np.zeros(k_max + 1, dtype=np.float64)
    total = int(w.sum())
    if total > 4_000_000 or k_max < 2:
        return out
    order = np.argsort(y, kind="stable")
    z = np.repeat(y[order] - float(np.dot(w, y) / total), w[order])
    p1 = np.concatenate(([0.0], np.cumsum(z)))
    p2 = np.concatenate(([0.0], np.cumsum(z * z)))
    # First-order worst case of the rounding of sequential prefix sums and of
    # s2 - s1**2 / k (|s1| / k <= max|z|): subtracted from every window.
    eps = np.finfo(np.float64).eps
    margin = 4.0 * (z.size + 2) * eps * (p2[-1] + np.abs(z).max() * np.abs(z).sum())
    for k in range(2, k_max + 1):
        s1 = p1[k:] - p1[:-k]
        s2 = p2[k:] - p2[:-k]
        ss = s2 - s1 * s1 / k
        out[k] = max(out[k - 1], float(ss.min()) - margin, 0.0)
    return out


def nig_bound_tables(
    y: ArrayLike,
    sample_weight: ArrayLike | None,
    prior: NIGPrior,
    *,
    dp_max: int = 2048,
    window_budget: int = 20_000_000,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Tables of the admissible split bound of MAPTree regression (normal-inverse-gamma leaves).

    Returns ``(B, L0)``, arrays indexed by a total weight ``n = 0 .. sum(w)``:
    ``L0[n]`` is :meth:`NIGPrior.perfect_cost` and ``B[n]`` a lower bound on
    ``sum_L -log p(y_L)`` over every way of cutting ``n`` (replicated) training
    targets into leaves.  The search's lower bound of a splittable OR node
    ``(S, d)`` with total weight ``N`` is then

        h(S, d) = min( leafcost(S, d),  -log p_split(d) + max(B[N], L0[N] + Q(S)) )

    where ``Q(S) = sum over groups g of identical feature rows in S of
    w_g * q_g`` and ``q_g = log(1 + SS_g / (2 b0)) / 2``, ``SS_g`` the
    weighted sum of squares of the targets of group ``g``.

    **Proof that h(S, d) <= val(S, d)** (the optimal cost of the subproblem).
    ``val`` is the minimum of the exact leaf cost, which is the first term,
    and of the costs of the trees that split at ``(S, d)``.  Take such a tree.
    Its cost is ``-log p_split(d) + log|V(S)|`` plus, for every internal node
    below, ``-log p_split + log|V| >= 0``, plus for every leaf ``L``,
    ``-log p_leaf >= 0`` and ``NLL(L) = -log p(y_L)``.  Dropping the
    non-negative prior terms, it costs at least ``-log p_split(d) + sum_L NLL(L)``
    over its leaves, which partition the (replicated) samples of ``S``.  Write
    ``a0, b0, kappa0`` for shape, scale and kappa; a leaf of weight ``n`` has
    ``a_n = a0 + n/2``, ``kappa_n = kappa0 + n`` and
    ``b_n = b0 + SS_L/2 + kappa0 n (ybar - mu0)^2 / (2 kappa_n) >= b0 + SS_L / 2``.
    Comparing the closed form with ``L0`` gives the identity

        NLL(L) = L0(n) + a_n log(b_n / b0).                                  (1)

    *Step 1 (c_k decreases).*  ``L0(n) = sum_{k<n} c_k`` with
    ``c_k = lgamma(a0 + k/2) - lgamma(a0 + (k+1)/2) + log(2 pi b0)/2 + log((kappa0+k+1)/(kappa0+k))/2``;
    ``lgamma(x) - lgamma(x + 1/2)`` decreases in ``x`` (the digamma function
    increases) and so does the last term, so ``c_k`` is strictly decreasing.
    Hence ``L0`` is superadditive: ``L0(m) + L0(n) >= L0(m + n)`` because
    ``L0(m+n) - L0(m) = sum_{k<n} c_{m+k} <= sum_{k<n} c_k``.

    *Step 2 (groups).*  Samples with identical feature rows are never
    separated by a split, so each group ``g`` of ``S`` lies in one leaf, and
    ``SS_L >= sum_{g in L} SS_g`` (the within-group parts of the sum of
    squares).  In (1), ``log(b_n/b0) >= 0`` and ``a_n >= n/2 = sum_g w_g / 2``,
    and ``b_n / b0 >= 1 + SS_g / (2 b0)`` for each ``g`` in ``L``, so
    ``NLL(L) >= L0(n_L) + sum_{g in L} w_g q_g``.  Summing over the leaves and
    using Step 1: ``sum_L NLL(L) >= L0(N) + Q(S)``.

    *Step 3 (spread).*  Let ``m(n) <= SSmin(n)`` be the non-decreasing lower
    bound of :func:`_min_window_ss`: no ``n`` of the training targets (with
    replication) have a sum of squares below ``SSmin(n)``, in particular no
    leaf's.  By (1), ``NLL(L) >= phi(n_L)`` with
    ``phi(n) = L0(n) + (a0 + n/2) log(1 + m(n) / (2 b0))``, so
    ``sum_L NLL(L) >= Phi(N) := min over compositions N = n_1 + ... + n_r of
    sum_j phi(n_j)``, computed exactly by dynamic programming for
    ``N <= dp_max``.  For larger ``N`` a chain-rule relaxation is used:
    since ``m`` is non-decreasing and ``a0 > 0``,
    ``phi(n) >= sum_{i<n} c'_i`` with ``c'_i = c_i + log(1 + m(i)/(2 b0))/2``.
    Sort the multiset of positions ``{i : 0 <= i < n_j, j = 1..r}`` as
    ``u_1 <= ... <= u_N``: for every ``t`` at least ``min(N, t + 1)``
    positions are ``<= t`` (a part of size ``> t`` has ``t + 1`` of them,
    otherwise all of them are), so ``u_k <= k - 1`` and
    ``c'_{u_k} >= d_{k-1} := min_{j <= k-1} c'_j``.  Hence every composition
    costs at least ``D(N) := sum_{k<N} d_k``.

    So ``sum_L NLL(L) >= max(B[N], L0(N) + Q(S))`` with ``B = Phi`` (``N <=
    dp_max``) or ``D``, and ``h(S, d) <= val(S, d)``.  ``B`` is lowered by a
    relative ``1e-10`` against rounding.  The bound ignores the prior terms
    below the split, the pull of ``kappa0`` towards ``mu0`` and which cuts the
    features can make; for a node whose targets all equal ``mu0`` it is
    ``-log p_split(d) + L0(N)``, the cost of one leaf holding them all.  Every
    quantity shifts by the same ``N log|c|`` when ``y``, ``mean`` and
    ``sqrt(scale)`` are rescaled by ``c`` together, so the search makes the
    same decisions.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Training targets.
    sample_weight : array-like of int, shape (n_samples,), or None
        Integer replication weights (None: all 1).
    prior : NIGPrior
    dp_max : int, default=2048
        Largest total weight for which ``Phi`` is computed (``O(dp_max**2)``).
    window_budget : int, default=20_000_000
        Work budget of the sliding-window minimum (``m`` is computed for
        window sizes up to ``window_budget / sum(w)`` and held constant beyond).

    Returns
    -------
    B, L0 : ndarray of float64, shape (sum(w) + 1,)
    """
    y_arr = np.asarray(y, dtype=np.float64).reshape(-1)
    w = np.ones(y_arr.shape[0], dtype=np.int64) if sample_weight is None else np.asarray(sample_weight, dtype=np.int64)
    total = int(w.sum())
    n = np.arange(total + 1, dtype=np.float64)
    L0 = np.asarray(prior.perfect_cost(n), dtype=np.float64)
    a0, b0, k0 = prior.shape, prior.scale, prior.kappa
    m = _ss_floor(y_arr, w, total, window_budget)
    spread = np.log1p(m / (2.0 * b0))
    # Chain-rule bound D (every N).
    k = n[:-1]
    c = (
        gammaln(a0 + 0.5 * k) - gammaln(a0 + 0.5 * (k + 1.0)) + 0.5 * math.log(2.0 * math.pi * b0)
        + 0.5 * np.log1p(1.0 / (k0 + k))
    )
    d = np.minimum.accumulate(c + 0.5 * spread[:-1])
    B = np.concatenate(([0.0], np.cumsum(d)))
    # Exact minimum over compositions, Phi (N <= dp_max).
    T = int(min(total, dp_max))
    phi = L0[: T + 1] + (a0 + 0.5 * n[: T + 1]) * spread[: T + 1]
    Phi = np.zeros(T + 1, dtype=np.float64)
    for N in range(1, T + 1):
        Phi[N] = np.min(phi[1 : N + 1] + Phi[N - 1 :: -1])
    B[: T + 1] = np.maximum(B[: T + 1], Phi)
    B -= 1e-10 * (1.0 + np.abs(B))
    return B, L0


def group_spread_terms(
    y: ArrayLike, sample_weight: ArrayLike | None, groups: ArrayLike, prior: NIGPrior
) -> NDArray[np.float64]:
    """Per-sample terms ``q_g(i) = log(1 + SS_g / (2 b0)) / 2`` of the group bound (see :func:`nig_bound_tables`).

    ``groups[i]`` numbers the distinct feature rows; ``SS_g`` is the weighted
    sum of squares of the targets of group ``g`` about their mean.  The terms
    are lowered by a relative ``1e-9`` against rounding.
    """
    y_arr = np.asarray(y, dtype=np.float64).reshape(-1)
    w = np.ones_like(y_arr) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    g = np.asarray(groups, dtype=np.int64).reshape(-1)
    n_groups = int(g.max()) + 1 if g.size else 0
    wsum = np.bincount(g, weights=w, minlength=n_groups)
    mean = np.bincount(g, weights=w * y_arr, minlength=n_groups) / np.where(wsum > 0, wsum, 1.0)
    ss = np.bincount(g, weights=w * (y_arr - mean[g]) ** 2, minlength=n_groups)
    return 0.5 * np.log1p(ss / (2.0 * prior.scale))[g] * (1.0 - 1e-9)


@njit(cache=True)
def _leaf_shares(z, copy_group, g_w, g_s1, g_s2, L0, m, a0, b0, k0, k_cap, margin):
    """Per-weight leaf-share cost ``min_n c_g(n)`` of every group (see :func:`leaf_share_terms`).

    ``z`` are the sorted replicated targets centred at the prior mean, ``copy_group`` the group
    of each copy; ``g_w, g_s1, g_s2`` the weight and centred sums of each group; ``m[n]`` the
    non-decreasing lower bound on the sum of squares of any ``n`` copies; windows are tried for
    ``k <= k_cap`` added copies (``k_cap < 0``: none)."""
    N = L0.shape[0] - 1  # the total weight (z is a dummy when k_cap <= 0)
    G = g_w.shape[0]
    out = np.empty(G)
    rest = np.empty(z.shape[0])
    p1 = np.zeros(z.shape[0] + 1)
    p2 = np.zeros(z.shape[0] + 1)
    for g in range(G):
        Wg = np.int64(g_w[g])
        s1g = g_s1[g]
        s2g = g_s2[g]
        e = max(s2g - s1g * s1g / (k0 + Wg) - margin, 0.0)  # the group alone: k = 0
        best = (L0[Wg] + (a0 + 0.5 * Wg) * np.log1p(e / (2.0 * b0))) / Wg
        K = 0
        if k_cap > 0:
            r = 0
            for j in range(z.shape[0]):
                if copy_group[j] != g:
                    rest[r] = z[j]
                    r += 1
            for j in range(r):
                p1[j + 1] = p1[j] + rest[j]
                p2[j + 1] = p2[j] + rest[j] * rest[j]
            K = min(r, k_cap)
            for k in range(1, K + 1):
                n = Wg + k
                emin = np.inf
                for a in range(r - k + 1):
                    t1 = s1g + (p1[a + k] - p1[a])
                    v = s2g + (p2[a + k] - p2[a]) - t1 * t1 / (k0 + n)
                    if v < emin:
                        emin = v
                e = max(emin - margin, e, m[n])  # E_g(k) is non-decreasing in k and >= m[n]
                c = (L0[n] + (a0 + 0.5 * n) * np.log1p(e / (2.0 * b0))) / n
                if c < best:
                    best = c
        # Larger leaves: E >= max(e, m[n]); exactly per size for 256 sizes, then per block
        # [n1, n2] (n2 about 1.05 n1) with L0(n)/n >= L0(n2)/n2 and a_n/n >= 1/2 + a0/n2.
        n1 = Wg + K + 1
        while n1 <= N:
            if n1 <= Wg + K + 256:
                n2 = n1
            else:
                n2 = min(N, n1 + n1 // 20)
            ee = max(e, m[n1])
            c = L0[n2] / n2 + (0.5 + a0 / n2) * np.log1p(ee / (2.0 * b0))
            if c < best:
                best = c
            n1 = n2 + 1
        out[g] = best * Wg
    return out


def leaf_share_terms(
    y: ArrayLike,
    sample_weight: ArrayLike | None,
    groups: ArrayLike,
    prior: NIGPrior,
    *,
    work_budget: int = 100_000_000,
) -> NDArray[np.float64]:
    """Per-sample terms ``t_i`` with ``sum_{i in S} t_i <= sum_L NLL(L)`` for every cut of a node's
    samples ``S`` into leaves: a lower bound, summed over the node like its other statistics.

    ``NLL(L) = -log p(y_L)`` is the normal-inverse-gamma leaf cost (:meth:`NIGPrior.log_marginal`).
    The search's split bound of a node ``(S, d)`` becomes
    ``-log p_split(d) + [prior terms] + max(B[N], L0[N] + Q(S), sum_{i in S} t_i)`` (the other two
    from :func:`nig_bound_tables`, whose proof covers everything but the new term).

    **The bound (a dual solution of the partition problem).**  Let ``g`` run over the groups of
    identical feature rows; a leaf is a union of whole groups.  Put, for each group of weight
    ``W_g``,

        t_g = W_g * min over leaves L ⊇ g of NLL(L) / n_L,

    and give each sample of ``g`` the share ``w_i t_g / W_g``.  For any cut of ``S`` into leaves,
    ``sum_L NLL(L) = sum_L sum_{g in L} W_g NLL(L) / n_L >= sum_L sum_{g in L} t_g = sum_{i in S} t_i``
    (each group lies in exactly one leaf, and ``NLL(L) / n_L >= t_g / W_g`` for the leaf that holds
    it; signs do not matter, densities can make costs negative).  Unlike ``B``, which charges every
    leaf the tightest targets of the whole data set again and again, each sample here pays for its
    own best leaf once, so the bound follows the node's own targets.

    **Computing a lower bound on t_g.**  By the identity (1) of :func:`nig_bound_tables`,
    ``NLL(L) = L0(n) + (a0 + n/2) log(1 + E(L) / (2 b0))`` with
    ``E(L) = sum_L w (y - mu0)**2 - (sum_L w (y - mu0))**2 / (kappa0 + n)``: the sum of squares of
    ``L`` together with a pseudo-sample of weight ``kappa0`` at ``mu0``.  Relax ``L`` to any multiset
    of unit copies of the training targets (an integer weight ``w`` is ``w`` copies) holding all of
    ``g``: ``L = g ∪ W``, ``W`` a set of ``k`` copies of the targets outside ``g``.  Then

    * *windows*: for fixed ``k``, a minimising ``W`` is a run of ``k`` consecutive values of the sorted
      copies outside ``g``.  Replacing a member ``u`` of ``W`` by a value ``v`` outside ``L`` changes
      the sum of squares about the combined mean by ``(M / (M + 1)) (v - u) (v + u - 2 m_u)``,
      ``M``, ``m_u`` the weight and mean of the rest (``SS(R ∪ {x}) = SS(R) + M/(M+1) (x - m_R)**2``).
      If ``v`` lay strictly between two members ``u1 < u2`` of ``W`` and neither replacement
      helped, then ``v + u1 > 2 m_{u1}`` and ``v + u2 < 2 m_{u2}`` with ``m_u = (T - u) / M`` (``T`` the
      total), whence ``u2 - u1 < -2 (u2 - u1) / M``, impossible.  So some optimal ``W`` is a window;
      ``g`` and the pseudo-sample stay fixed (they are why the window need not contain ``g``'s values);
    * *monotone*: ``E`` only grows when copies are added, so ``E_g(k) := min E`` is non-decreasing
      in ``k``, and ``E(L) >= SS(L) >= m(n)``, the bound on any ``n`` copies of
      :func:`_min_window_ss`;
    * so ``NLL(L) / n >= c_g(n) := (L0(n) + (a0 + n/2) log(1 + e_n / (2 b0))) / n`` for every leaf of
      weight ``n`` holding ``g``, with ``e_n`` the running maximum of the window minima (less a
      rounding margin) and ``m(n)``; windows are searched for ``k <= k_cap`` (chosen so that the
      work is about ``work_budget``) and ``e_n = max(e_{W_g + k_cap}, m(n))`` beyond;
    * beyond 256 exact sizes, sizes are taken in blocks ``[n1, n2]``, using that ``L0(n)/n``
      does not increase (``L0(n) = sum_{k<n} c_k`` with ``c_k`` decreasing, Step 1 of
      :func:`nig_bound_tables`) and ``(a0 + n/2)/n >= 1/2 + a0/n2``.

    ``t_g = W_g min_n c_g(n)`` and the shares are lowered by ``1e-9 (|t| + w)`` against rounding.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
    sample_weight : array-like of int, shape (n_samples,), or None
    groups : array-like of int, shape (n_samples,)
        ``groups[i]`` numbers the distinct feature rows.
    prior : NIGPrior
    work_budget : int, default=100_000_000
        About how many window sums to evaluate (``O(groups * copies * k_cap)``).

    Returns
    -------
    ndarray of float64, shape (n_samples,)
        ``t_i`` (already multiplied by the sample's weight).
    """
    y_arr = np.asarray(y, dtype=np.float64).reshape(-1)
    w = np.ones(y_arr.shape[0], dtype=np.int64) if sample_weight is None else np.asarray(sample_weight, dtype=np.int64)
    g = np.asarray(groups, dtype=np.int64).reshape(-1)
    total = int(w.sum())
    G = int(g.max()) + 1 if g.size else 0
    zc = y_arr - prior.mean
    wf = w.astype(np.float64)
    g_w = np.bincount(g, weights=wf, minlength=G)
    g_s1 = np.bincount(g, weights=wf * zc, minlength=G)
    g_s2 = np.bincount(g, weights=wf * zc * zc, minlength=G)
    L0 = np.asarray(prior.perfect_cost(np.arange(total + 1, dtype=np.float64)), dtype=np.float64)
    m = _ss_floor(y_arr, w, total)
    k_cap = -1
    if total <= 4_000_000 and G * total <= work_budget:
        k_cap = int(min(total, work_budget // max(1, G * total)))
    order = np.argsort(zc, kind="stable")
    z = np.repeat(zc[order], w[order]) if k_cap > 0 else np.zeros(1)
    copy_group = np.repeat(g[order], w[order]) if k_cap > 0 else np.zeros(1, np.int64)
    eps = np.finfo(np.float64).eps
    margin = 4.0 * (total + 2) * eps * (float(np.dot(wf, zc * zc)) + float(np.abs(zc).max()) * float(np.dot(wf, np.abs(zc))))
    t_g = _leaf_shares(z, copy_group, g_w, g_s1, g_s2, L0, m, prior.shape, prior.scale, prior.kappa, k_cap, margin)
    t_g = t_g - 1e-9 * (np.abs(t_g) + g_w)
    return t_g[g] * wf / g_w[g]


def _ss_floor(y: NDArray[np.float64], w: NDArray[np.int64], total: int, window_budget: int = 20_000_000) -> NDArray[np.float64]:
    """``m[n]`` for ``n = 0 .. total``: :func:`_min_window_ss` up to its work budget, held constant beyond."""
    k_max = int(min(total, max(2, window_budget // max(total, 1))))
    m_small = _min_window_ss(y, w, k_max)
    m = np.empty(total + 1, dtype=np.float64)
    m[: k_max + 1] = m_small
    m[k_max + 1 :] = m_small[-1]
    return m
