"""MAPTree's bounds: the Perfect Split heuristic and the regression bound tables.

* :func:`heuristic`: the paper's Perfect Split heuristic (spec-000 §2.7) as a
  cost, a lower bound on the optimal cost of a classification subproblem (the
  search's kernels use a stronger, sized form of it; see
  :mod:`arboretum.maptree._kernels`);
* :func:`nig_bound_tables` and :func:`group_spread_terms`: the tables of the
  admissible lower bound of MAPTreeRegressor's search (the paper gives none),
  with the proof in :func:`nig_bound_tables`'s docstring.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import gammaln

from ..bayes import ChipmanPrior, NIGPrior, _log_pure_likelihoods, log_dirichlet_multinomial, validate_rho

__all__ = ["group_spread_terms", "heuristic", "nig_bound_tables"]


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
    k_max = int(min(total, max(2, window_budget // max(total, 1))))
    m_small = _min_window_ss(y_arr, w, k_max)
    m = np.empty(total + 1, dtype=np.float64)
    m[: k_max + 1] = m_small
    m[k_max + 1 :] = m_small[-1]
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
