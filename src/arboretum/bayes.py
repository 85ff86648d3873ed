"""Bayesian CART (BCART) building blocks and exact small-data oracles.

This module implements the probability model behind MAPTree (spec-000, §2):

* leaf marginal likelihoods with the leaf parameters integrated out
  (Dirichlet-multinomial; Beta-Bernoulli for two classes),
* the Chipman, George & McCulloch (1998) tree prior
  ``p_split(d) = alpha * (1 + d) ** -beta``,
* :func:`log_posterior`, the unnormalised log posterior ``log P(T, Y | X)``
  of any tree with binary splits,
* exact oracles for small data sets (spec-000, §3.11): a dynamic programme
  for the MAP tree, the set of co-optimal trees, brute-force enumeration of
  all trees, the log evidence ``log P(Y | X)`` and the Perfect Split
  heuristic of MAPTree;
* regression (spec-000 §2.8, left open there): the normal-inverse-gamma leaf
  :class:`NIGPrior` with its closed-form marginal likelihood and data-derived
  defaults, :func:`log_posterior_regression`, the exact
  :class:`RegressionOracle` (same subset DP as :class:`BCARTOracle`) and the
  tables of MAPTree's admissible regression bound, :func:`nig_bound_tables`
  (whose docstring holds the proof).

Conventions
-----------
Classes
    Labels are class indices ``0 .. K-1``.  A concentration vector
    ``rho`` is given in **class-index order**: ``rho[k]`` pairs with class
    ``k``, so for binary labels ``rho = (rho_for_label_0, rho_for_label_1)``.
    The spec and the MAPTree paper write ``rho = (rho^1, rho^0)`` with the
    label-1 parameter first; the two orders agree for the symmetric values
    used in practice, e.g. ``(2.5, 2.5)`` or ``(1, 1)``.  A scalar ``rho``
    means the same concentration for every class.
Costs
    The oracles work with **costs**, ``cost = -log P(T, Y | X)`` (natural
    logarithms).  Costs are non-negative; smaller is better, and the MAP tree
    is the tree of minimal cost.  :func:`log_posterior` returns the negated
    quantity, ``-cost``.
Trees as strings
    Oracles describe trees in the spec's parenthesis notation: a leaf is
    ``""`` and a node splitting on feature ``f`` is
    ``"(" + left + str(f) + right + ")"``, where ``left`` is the subtree of the
    samples with ``x[f] == 0``.
Subsets
    :class:`BCARTOracle` represents a set of sample indices ``I`` exactly, as
    a Python ``int`` bit mask whose bit ``i`` is set when sample ``i`` is in
    ``I``.  Memoisation keys are ``(mask, depth)``, so there are no hash
    collisions (cf. spec-000 §3.8).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import gammainccinv, gammaln

__all__ = [
    "BCARTOracle",
    "ChipmanPrior",
    "NIGPrior",
    "RegressionOracle",
    "co_optimal_trees",
    "co_optimal_trees_regression",
    "enumerate_trees",
    "exact_map",
    "exact_map_regression",
    "group_spread_terms",
    "heuristic",
    "leaf_cost",
    "log_dirichlet_multinomial",
    "log_evidence",
    "log_marginal_likelihood",
    "log_posterior",
    "log_posterior_regression",
    "log_prior",
    "nig_bound_tables",
]

#: Split kind code of a binary-feature split in :mod:`arboretum.tree`
#: (left child iff ``x[feature] == 0``).
_BINARY_SPLIT = 1

#: Relative tolerance used by :meth:`BCARTOracle.best_tree` to treat two
#: candidate costs as tied (so that the tie rule "leaf first, then the lowest
#: feature" is not defeated by floating-point rounding).
_TIE_RTOL = 1e-12


# ---------------------------------------------------------------------------
# Leaf marginal likelihood
# ---------------------------------------------------------------------------


def validate_rho(rho: ArrayLike, n_classes: int | None = None) -> NDArray[np.float64]:
    """Return ``rho`` as a float vector after checking it.

    Parameters
    ----------
    rho : float or array-like of float
        Concentration parameter(s).  A scalar is broadcast to ``n_classes``
        entries.
    n_classes : int, optional
        Required length of the vector.  Mandatory when ``rho`` is a scalar.

    Returns
    -------
    ndarray of float64, shape (n_classes,)

    Raises
    ------
    ValueError
        If an entry is not a finite positive number or the length is wrong.
    """
    try:
        arr = np.asarray(rho, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            f"rho must be a positive number or a sequence of positive numbers, one per class; got {rho!r}"
        ) from None
    if arr.ndim == 0:
        if n_classes is None:
            raise ValueError("a scalar rho needs the number of classes")
        arr = np.full(n_classes, float(arr))
    elif arr.ndim != 1:
        raise ValueError(f"rho must be a scalar or a 1-D sequence, got shape {arr.shape}")
    if arr.size < 1:
        raise ValueError("rho must have at least one entry")
    if n_classes is not None and arr.size != n_classes:
        raise ValueError(f"rho has {arr.size} entries but there are {n_classes} classes")
    if not np.all(np.isfinite(arr) & (arr > 0)):
        raise ValueError(f"every rho entry must be a finite number > 0, got {arr.tolist()}")
    return arr


def log_dirichlet_multinomial(counts: ArrayLike, rho: ArrayLike) -> np.float64 | NDArray[np.float64]:
    """Log marginal likelihood of a leaf's labels under a Dirichlet prior.

    For class counts ``c`` (with ``n = sum(c)``) and concentrations ``rho``
    this is ``log B(c + rho) - log B(rho)`` with
    ``B(v) = prod_k Gamma(v_k) / Gamma(sum_k v_k)``, i.e. the probability of
    one particular label sequence with these counts when the class
    probabilities ``theta ~ Dirichlet(rho)`` are integrated out.  For two
    classes it is the Beta-Bernoulli marginal ``B(c1 + rho1, c0 + rho0) /
    B(rho1, rho0)`` of spec-000 §2.3.

    Parameters
    ----------
    counts : array-like of shape (..., K)
        Non-negative class counts; ``counts[..., k]`` counts class ``k``.
        Leading axes are vectorised over.
    rho : float or array-like of shape (K,)
        Positive concentrations in class-index order (``rho[k]`` pairs with
        class ``k``).  A scalar uses the same value for every class.

    Returns
    -------
    float or ndarray
        ``log l(counts)``, with the leading shape of ``counts``.  It is ``0``
        for all-zero counts and negative otherwise.

    Examples
    --------
    >>> round(float(log_dirichlet_multinomial([1, 0], [2.5, 2.5])), 10)
    -0.6931471806
    """
    c = np.asarray(counts, dtype=np.float64)
    if c.ndim == 0:
        raise ValueError("counts must have a class axis (shape (..., K))")
    r = validate_rho(rho, c.shape[-1])
    r_sum = r.sum()
    log_b_prior = gammaln(r).sum() - gammaln(r_sum)
    log_b_post = gammaln(c + r).sum(axis=-1) - gammaln(c.sum(axis=-1) + r_sum)
    return log_b_post - log_b_prior


def _log_pure_likelihoods(counts: NDArray[np.float64], rho: NDArray[np.float64]) -> NDArray[np.float64]:
    """Return ``sum_k log l(c_k e_k)``: each class alone in its own leaf.

    ``l(c_k e_k) = Gamma(c_k + rho_k) Gamma(rho_0) / (Gamma(rho_k) Gamma(c_k + rho_0))``
    with ``rho_0 = sum(rho)``; vectorised over the leading axes of ``counts``.
    """
    r_sum = rho.sum()
    per_class = gammaln(counts + rho) - gammaln(counts + r_sum) - gammaln(rho) + gammaln(r_sum)
    return per_class.sum(axis=-1)


# ---------------------------------------------------------------------------
# Tree prior
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ChipmanPrior:
    """The BCART tree prior of Chipman, George & McCulloch (1998).

    A node at depth ``d`` (the root has depth 0) that has at least one valid
    split splits with probability ``p_split(d) = alpha * (1 + d) ** -beta``
    and stops (becomes a leaf) otherwise; its split feature is uniform over
    the valid splits.  A node without valid split is a leaf with
    probability 1 (spec-000 §2.4).

    Parameters
    ----------
    alpha : float, default=0.95
        Base split probability, ``0 < alpha <= 1``.
    beta : float, default=0.5
        Depth decay, a finite number ``>= 0``.

    Raises
    ------
    ValueError
        If a parameter is outside its domain.

    Examples
    --------
    >>> prior = ChipmanPrior(alpha=0.95, beta=0.5)
    >>> round(float(prior.log_p_stop(0)), 10)
    -2.9957322736
    """

    alpha: float = 0.95
    beta: float = 0.5

    def __post_init__(self) -> None:
        alpha, beta = self.alpha, self.beta
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.integer, np.floating)):
            raise ValueError(f"alpha must be a real number with 0 < alpha <= 1, got {alpha!r}")
        if isinstance(beta, bool) or not isinstance(beta, (int, float, np.integer, np.floating)):
            raise ValueError(f"beta must be a real number with beta >= 0, got {beta!r}")
        if not 0.0 < alpha <= 1.0:
            raise ValueError(f"alpha must satisfy 0 < alpha <= 1, got {alpha!r}")
        if not (0.0 <= beta < math.inf):
            raise ValueError(f"beta must be a finite number >= 0, got {beta!r}")
        object.__setattr__(self, "alpha", float(alpha))
        object.__setattr__(self, "beta", float(beta))

    def log_p_split(self, d: ArrayLike) -> np.float64 | NDArray[np.float64]:
        """Return ``log p_split(d) = log(alpha) - beta * log(1 + d)``.

        Parameters
        ----------
        d : int or array-like of int
            Node depth(s), ``>= 0``.

        Returns
        -------
        float or ndarray
            Log split probability, ``<= 0``.
        """
        depth = np.asarray(d, dtype=np.float64)
        if np.any(depth < 0):
            raise ValueError("depth must be >= 0")
        return np.log(self.alpha) - self.beta * np.log1p(depth)

    def log_p_stop(self, d: ArrayLike) -> np.float64 | NDArray[np.float64]:
        """Return ``log(1 - p_split(d))``, the log leaf probability of a splittable node.

        Computed as ``log1p(-exp(log p_split(d)))``.  It is ``-inf`` (never an
        error) where ``p_split(d) == 1``, i.e. ``alpha == 1`` at depth 0, or
        at every depth when also ``beta == 0``.

        Parameters
        ----------
        d : int or array-like of int
            Node depth(s), ``>= 0``.

        Returns
        -------
        float or ndarray
            Log stop probability, ``<= 0`` and possibly ``-inf``.
        """
        with np.errstate(divide="ignore"):
            return np.log1p(-np.exp(self.log_p_split(d)))

    def p_split(self, d: ArrayLike) -> np.float64 | NDArray[np.float64]:
        """Return ``p_split(d) = alpha * (1 + d) ** -beta``.

        Parameters
        ----------
        d : int or array-like of int
            Node depth(s), ``>= 0``.

        Returns
        -------
        float or ndarray
        """
        return np.exp(self.log_p_split(d))


# ---------------------------------------------------------------------------
# Input validation shared by the data-level functions
# ---------------------------------------------------------------------------


def _validate_data(
    X: ArrayLike, y: ArrayLike, rho: ArrayLike
) -> tuple[NDArray[np.uint8], NDArray[np.int64], NDArray[np.float64]]:
    """Check binary features, class-index labels and ``rho``; return them as arrays.

    The number of classes is ``len(rho)`` when ``rho`` is a sequence, and
    ``max(max(y) + 1, 2)`` when it is a scalar.
    """
    X_arr = np.asarray(X)
    if X_arr.ndim != 2:
        raise ValueError(f"X must be a 2-D array, got shape {X_arr.shape}")
    n_samples, n_features = X_arr.shape
    if n_samples < 1 or n_features < 1:
        raise ValueError(f"X must have at least one row and one column, got shape {X_arr.shape}")
    if X_arr.dtype.kind not in "biuf":
        raise ValueError(f"X must be numeric or boolean, got dtype {X_arr.dtype}")
    if not np.all((X_arr == 0) | (X_arr == 1)):
        raise ValueError("X must contain only binary values 0 and 1")
    X_bin = X_arr.astype(np.uint8)

    y_arr = np.asarray(y)
    if y_arr.ndim != 1 or y_arr.shape[0] != n_samples:
        raise ValueError(f"y must be 1-D with {n_samples} entries to match X, got shape {y_arr.shape}")
    if y_arr.dtype.kind == "b":
        y_arr = y_arr.astype(np.int64)
    if y_arr.dtype.kind == "f":
        if not np.all(np.isfinite(y_arr)) or np.any(y_arr != np.round(y_arr)):
            raise ValueError("y must contain integer class indices 0 .. K-1")
    elif y_arr.dtype.kind not in "iu":
        raise ValueError(f"y must contain integer class indices, got dtype {y_arr.dtype}")
    y_int = y_arr.astype(np.int64)
    if np.any(y_int < 0):
        raise ValueError("y must contain class indices >= 0")

    if np.ndim(rho) == 0:
        rho_vec = validate_rho(rho, max(int(y_int.max()) + 1, 2))
    else:
        rho_vec = validate_rho(rho)
        if y_int.max() >= rho_vec.size:
            raise ValueError(
                f"y contains class index {int(y_int.max())} but rho has only {rho_vec.size} entries"
            )
    return X_bin, y_int, rho_vec


# ---------------------------------------------------------------------------
# Log posterior of a given tree
# ---------------------------------------------------------------------------


def _dirichlet_leaf(
    y: NDArray[np.int64], rho: NDArray[np.float64], sample_weight: NDArray[np.float64] | None = None
) -> Callable[[NDArray[np.intp]], float]:
    """Leaf log marginal likelihood of the samples ``idx`` under a Dirichlet(``rho``) leaf."""

    def leaf_loglik(idx: NDArray[np.intp]) -> float:
        w = None if sample_weight is None else sample_weight[idx]
        counts = np.bincount(y[idx], weights=w, minlength=rho.size)
        return float(log_dirichlet_multinomial(counts, rho))

    return leaf_loglik


def _tree_log_terms(
    tree: Any,
    X: NDArray[np.uint8],
    prior: ChipmanPrior,
    leaf_loglik: Callable[[NDArray[np.intp]], float],
) -> tuple[float, float]:
    """Route the training samples through ``tree``; return (log prior, log likelihood).

    Only ``children_left``, ``children_right``, ``feature`` and (when
    present) ``split_kind`` of ``tree`` are used; node 0 is the root.  The
    log prior is ``-inf`` for a degenerate tree (an internal node whose
    feature does not split its samples non-trivially).  ``leaf_loglik(idx)``
    is the log marginal likelihood of the samples ``idx`` in one leaf (the
    Dirichlet leaf of classification or the normal-inverse-gamma leaf of
    regression).
    """
    left = np.asarray(tree.children_left, dtype=np.int64)
    right = np.asarray(tree.children_right, dtype=np.int64)
    feature = np.asarray(tree.feature, dtype=np.int64)
    split_kind = getattr(tree, "split_kind", None)
    kinds = None if split_kind is None else np.asarray(split_kind)
    n_nodes = left.shape[0]
    if n_nodes < 1 or right.shape[0] != n_nodes or feature.shape[0] != n_nodes:
        raise ValueError("tree node arrays must be non-empty and of equal length")

    log_prior_total = 0.0
    log_lik_total = 0.0
    stack: list[tuple[int, NDArray[np.intp], int]] = [(0, np.arange(X.shape[0]), 0)]
    while stack:
        node, idx, depth = stack.pop()
        X_node = X[idx]
        if idx.size > 0:
            n_valid = int(np.count_nonzero(X_node.min(axis=0) != X_node.max(axis=0)))
        else:
            n_valid = 0
        is_leaf = left[node] == -1
        if is_leaf != (right[node] == -1):
            raise ValueError(f"node {node} has exactly one child; the tree is malformed")
        if is_leaf:
            if n_valid > 0:
                log_prior_total += float(prior.log_p_stop(depth))
            log_lik_total += leaf_loglik(idx)
            continue
        if kinds is not None and int(kinds[node]) != _BINARY_SPLIT:
            raise ValueError(
                f"node {node} has split kind {int(kinds[node])}; only binary-feature splits "
                f"(kind {_BINARY_SPLIT}) are supported"
            )
        f = int(feature[node])
        if not 0 <= f < X.shape[1]:
            raise ValueError(f"node {node} splits on feature {f}, but X has {X.shape[1]} features")
        column = X_node[:, f] if idx.size > 0 else np.zeros(0, dtype=np.uint8)
        goes_right = column != 0
        if idx.size == 0 or goes_right.all() or not goes_right.any():
            # Trivial split: the tree lies outside the support of the prior.
            log_prior_total = -math.inf
        else:
            log_prior_total += float(prior.log_p_split(depth)) - math.log(n_valid)
        stack.append((int(left[node]), idx[~goes_right], depth + 1))
        stack.append((int(right[node]), idx[goes_right], depth + 1))
    return log_prior_total, log_lik_total


def log_prior(tree: Any, X: ArrayLike, *, alpha: float = 0.95, beta: float = 0.5) -> float:
    """Log prior probability ``log P(T | X)`` of a tree under the BCART prior.

    Parameters
    ----------
    tree : Tree
        A tree with binary-feature splits (an :class:`arboretum.tree.Tree`
        or any object with ``children_left``, ``children_right`` and
        ``feature`` arrays, node 0 being the root).
    X : array-like of shape (n_samples, n_features)
        Binary training features.
    alpha, beta : float
        Parameters of the :class:`ChipmanPrior`.

    Returns
    -------
    float
        ``log P(T | X)``; ``-inf`` when the tree is degenerate (some split
        does not separate the samples reaching it).
    """
    X_arr = np.asarray(X)
    dummy_y = np.zeros(X_arr.shape[0] if X_arr.ndim == 2 else 0, dtype=np.int64)
    X_bin, y_int, rho_vec = _validate_data(X_arr, dummy_y, 1.0)
    prior = ChipmanPrior(alpha, beta)
    return _tree_log_terms(tree, X_bin, prior, _dirichlet_leaf(y_int, rho_vec))[0]


def log_marginal_likelihood(tree: Any, X: ArrayLike, y: ArrayLike, *, rho: ArrayLike = (2.5, 2.5)) -> float:
    """Log marginal likelihood ``log P(Y | X, T)`` of the labels given a tree.

    The leaf class probabilities are integrated out under independent
    ``Dirichlet(rho)`` priors, so this is the sum over leaves of
    :func:`log_dirichlet_multinomial` of the leaf's label counts.

    Parameters
    ----------
    tree : Tree
        See :func:`log_prior`.
    X : array-like of shape (n_samples, n_features)
        Binary training features.
    y : array-like of shape (n_samples,)
        Class indices ``0 .. K-1``.
    rho : float or sequence of float, default=(2.5, 2.5)
        Concentrations in class-index order; a scalar means
        ``(rho,) * K`` with ``K = max(max(y) + 1, 2)``.

    Returns
    -------
    float
    """
    X_bin, y_int, rho_vec = _validate_data(X, y, rho)
    return _tree_log_terms(tree, X_bin, ChipmanPrior(), _dirichlet_leaf(y_int, rho_vec))[1]


def log_posterior(
    tree: Any,
    X: ArrayLike,
    y: ArrayLike,
    *,
    alpha: float = 0.95,
    beta: float = 0.5,
    rho: ArrayLike = (2.5, 2.5),
    sample_weight: ArrayLike | None = None,
) -> float:
    """Unnormalised log posterior ``log P(T, Y | X)`` of a tree (spec-000 §2.5).

    With ``I(n)`` the training samples reaching node ``n`` at depth ``d``
    and ``V(I)`` the features taking both values on ``I``:

    * internal node: ``log p_split(d) - log |V(I)|``;
    * leaf: ``log p_leaf + log l(counts of y in I)``, where
      ``p_leaf = 1`` if ``V(I)`` is empty and ``1 - p_split(d)`` otherwise.

    This equals ``-cost(T)`` of the exact oracles, and ``log P(T | X, Y)``
    up to the constant ``log P(Y | X)`` (see :func:`log_evidence`).

    Parameters
    ----------
    tree : Tree
        A tree with binary-feature splits (left child iff ``x[f] == 0``):
        an :class:`arboretum.tree.Tree` or any object with
        ``children_left``, ``children_right`` (``-1`` at leaves) and
        ``feature`` arrays, node 0 being the root.
    X : array-like of shape (n_samples, n_features)
        Binary training features.
    y : array-like of shape (n_samples,)
        Class indices ``0 .. K-1``.
    alpha, beta : float, default=(0.95, 0.5)
        Parameters of the :class:`ChipmanPrior`.
    rho : float or sequence of float, default=(2.5, 2.5)
        Dirichlet concentrations in class-index order (``rho[k]`` pairs
        with class ``k``; ``K = len(rho)``).  A scalar means
        ``(rho,) * K`` with ``K = max(max(y) + 1, 2)``.
    sample_weight : array-like of shape (n_samples,), optional
        Non-negative weights that multiply each sample's contribution to its
        leaf's class counts (an integer weight ``w`` is the same as ``w``
        copies of the row; the prior depends only on which distinct rows a
        node holds, so it is unchanged).  Samples of weight 0 still count for
        ``V(I)``: remove them first if they should not.

    Returns
    -------
    float
        ``log P(T, Y | X)``; ``-inf`` for a degenerate tree (a split that
        does not separate the samples reaching it has prior probability 0).

    Raises
    ------
    ValueError
        On invalid data or parameters, or a tree with non-binary splits.
    """
    prior = ChipmanPrior(alpha, beta)
    X_bin, y_int, rho_vec = _validate_data(X, y, rho)
    w = None
    if sample_weight is not None:
        w = np.asarray(sample_weight, dtype=np.float64)
        if w.shape != y_int.shape or not np.all(np.isfinite(w) & (w >= 0)):
            raise ValueError("sample_weight must be a finite non-negative vector with one value per sample")
    lp, ll = _tree_log_terms(tree, X_bin, prior, _dirichlet_leaf(y_int, rho_vec, w))
    return lp + ll


# ---------------------------------------------------------------------------
# Heuristic and leaf cost (cost form)
# ---------------------------------------------------------------------------


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


def leaf_cost(
    counts: ArrayLike,
    d: ArrayLike,
    n_valid: ArrayLike,
    alpha: float = 0.95,
    beta: float = 0.5,
    rho: ArrayLike = (2.5, 2.5),
) -> np.float64 | NDArray[np.float64]:
    """Cost ``-log p_leaf - log l(c)`` of making a subproblem a leaf.

    Parameters
    ----------
    counts : array-like of shape (..., K)
        Class counts of the subproblem.
    d : int or array-like of int
        Depth of the subproblem.
    n_valid : int or array-like of int
        Number of valid (non-trivial) splits ``|V(I)|`` of the subproblem;
        ``p_leaf = 1`` when it is 0 and ``1 - p_split(d)`` otherwise.
    alpha, beta : float
        Parameters of the :class:`ChipmanPrior`.
    rho : float or array-like of shape (K,)
        Concentrations in class-index order.

    Returns
    -------
    float or ndarray
        The leaf cost, ``+inf`` when ``p_split(d) == 1`` and a valid split
        exists.
    """
    prior = ChipmanPrior(alpha, beta)
    c = np.asarray(counts, dtype=np.float64)
    if c.ndim == 0:
        raise ValueError("counts must have a class axis (shape (..., K))")
    r = validate_rho(rho, c.shape[-1])
    log_p_leaf = np.where(np.asarray(n_valid) > 0, prior.log_p_stop(d), 0.0)
    return -(log_p_leaf + log_dirichlet_multinomial(c, r))


# ---------------------------------------------------------------------------
# Exact oracles
# ---------------------------------------------------------------------------


def _logsumexp(values: Sequence[float]) -> float:
    """Return ``log(sum(exp(values)))`` of Python floats, allowing ``-inf`` entries."""
    top = max(values)
    if top == -math.inf:
        return -math.inf
    return top + math.log(math.fsum(math.exp(v - top) for v in values))


class _SubsetOracle:
    """Exact dynamic programmes over the BCART AND/OR graph of a small data set.

    The subproblem ``(I, d)`` -- the samples ``I`` reaching a node at depth
    ``d`` -- is solved exactly by recursion over its valid splits, with
    memoisation on the exact key ``(mask, d)``, where ``mask`` is the bit
    mask of ``I`` (bit ``i`` set iff sample ``i`` is in ``I``).  All values
    are **costs**, ``-log`` probabilities.  Intended for tests and small data
    (the number of reachable subproblems grows exponentially).

    This base class holds everything that depends only on the binary
    features and the :class:`ChipmanPrior`; a subclass supplies the leaf
    model through :meth:`log_likelihood` (:class:`BCARTOracle`: Dirichlet
    leaves for classification; :class:`RegressionOracle`: normal-inverse-gamma
    leaves for regression).
    """

    def _init_subsets(self, X_bin: NDArray[np.uint8], alpha: float, beta: float) -> None:
        """Set up the subset machinery for binary features ``X_bin``."""
        self.prior = ChipmanPrior(alpha, beta)
        self.n_samples, self.n_features = X_bin.shape
        self.root = (1 << self.n_samples) - 1
        self._ones = [self._mask_of(X_bin[:, f] == 1) for f in range(self.n_features)]
        max_depth = self.n_features + 1
        self._log_split = [float(self.prior.log_p_split(d)) for d in range(max_depth + 1)]
        self._log_stop = [float(self.prior.log_p_stop(d)) for d in range(max_depth + 1)]
        # Memo tables: per subset, and per (subset, depth).
        self._log_lik: dict[int, float] = {}
        self._valid: dict[int, tuple[int, ...]] = {}
        self._best: dict[tuple[int, int], tuple[float, int]] = {}
        self._evidence: dict[tuple[int, int], float] = {}
        self._coopt: dict[tuple[int, int, float], frozenset[str]] = {}

    def log_likelihood(self, mask: int) -> float:  # pragma: no cover - abstract
        """Leaf log marginal likelihood of the subset ``mask``."""
        raise NotImplementedError

    @staticmethod
    def _mask_of(selected: NDArray[np.bool_]) -> int:
        """Return the bit mask of the ``True`` positions of a boolean vector."""
        mask = 0
        for i in np.flatnonzero(selected):
            mask |= 1 << int(i)
        return mask

    # -- subproblem descriptors ---------------------------------------------

    def subset_mask(self, indices: Sequence[int]) -> int:
        """Return the bit mask of a collection of sample indices."""
        mask = 0
        for i in indices:
            if not 0 <= int(i) < self.n_samples:
                raise ValueError(f"sample index {i} out of range")
            mask |= 1 << int(i)
        return mask

    def valid_features(self, mask: int) -> tuple[int, ...]:
        """Features ``V(I)`` that split the subset ``mask`` non-trivially, in increasing order."""
        if mask not in self._valid:
            size = mask.bit_count()
            self._valid[mask] = tuple(
                f for f, ones in enumerate(self._ones) if 0 < (mask & ones).bit_count() < size
            )
        return self._valid[mask]

    def split(self, mask: int, f: int) -> tuple[int, int]:
        """Return the subsets ``(I|x_f=0, I|x_f=1)`` of ``mask``."""
        ones = mask & self._ones[f]
        return mask & ~ones, ones

    def leaf_cost(self, mask: int, d: int) -> float:
        """Cost ``-log p_leaf(d, I) - log l(c(I))`` of making ``(I, d)`` a leaf."""
        log_p_leaf = self._log_stop[d] if self.valid_features(mask) else 0.0
        return -log_p_leaf - self.log_likelihood(mask)

    def split_penalty(self, mask: int, d: int) -> float:
        """Cost ``-log p_split(d) + log |V(I)|`` of the edge to any AND child of ``(I, d)``."""
        return -self._log_split[d] + math.log(len(self.valid_features(mask)))

    # -- optimisation --------------------------------------------------------

    def _solve(self, mask: int, d: int) -> tuple[float, int]:
        """Return ``(best cost, choice)`` of ``(I, d)``; ``choice`` is -1 for a leaf or the feature."""
        key = (mask, d)
        if key in self._best:
            return self._best[key]
        best_cost, choice = self.leaf_cost(mask, d), -1
        valid = self.valid_features(mask)
        if valid:
            penalty = self.split_penalty(mask, d)
            for f in valid:
                left, right = self.split(mask, f)
                cost = penalty + self._solve(left, d + 1)[0] + self._solve(right, d + 1)[0]
                # Replace only on a clear improvement: ties keep the leaf, then the lowest feature.
                if cost < best_cost - _TIE_RTOL * max(1.0, abs(cost)):
                    best_cost, choice = cost, f
        self._best[key] = (best_cost, choice)
        return best_cost, choice

    def value(self, mask: int, d: int) -> float:
        """Optimal cost ``val(I, d)`` of the subproblem (spec-000 §2.6 Bellman equation)."""
        return self._solve(mask, d)[0]

    def best_tree(self, mask: int | None = None, d: int = 0) -> tuple[float, str]:
        """Return ``(optimal cost, tree)`` of ``(I, d)``; the root problem by default.

        Ties are broken towards the leaf first, then the lowest feature index
        (costs equal up to a relative ``1e-12`` count as ties).
        """
        mask = self.root if mask is None else mask
        cost, choice = self._solve(mask, d)
        return cost, self._tree_string(mask, d, choice)

    def _tree_string(self, mask: int, d: int, choice: int) -> str:
        if choice < 0:
            return ""
        left, right = self.split(mask, choice)
        left_tree = self._tree_string(left, d + 1, self._solve(left, d + 1)[1])
        right_tree = self._tree_string(right, d + 1, self._solve(right, d + 1)[1])
        return f"({left_tree}{choice}{right_tree})"

    def co_optimal(self, mask: int | None = None, d: int = 0, tol: float = 1e-9) -> frozenset[str]:
        """All trees for ``(I, d)`` whose cost is within ``tol`` of the optimum.

        Computed by the same recursion as :meth:`value`: a split is kept when
        its best cost is within ``tol`` of the optimum, and its co-optimal
        trees are all pairs of co-optimal child trees.  The tolerance is
        therefore applied at each level, which identifies trees whose costs
        agree up to floating-point rounding.
        """
        mask = self.root if mask is None else mask
        key = (mask, d, tol)
        if key in self._coopt:
            return self._coopt[key]
        target = self.value(mask, d) + tol
        trees: set[str] = set()
        if self.leaf_cost(mask, d) <= target:
            trees.add("")
        valid = self.valid_features(mask)
        if valid:
            penalty = self.split_penalty(mask, d)
            for f in valid:
                left, right = self.split(mask, f)
                if penalty + self.value(left, d + 1) + self.value(right, d + 1) <= target:
                    left_trees = self.co_optimal(left, d + 1, tol)
                    right_trees = self.co_optimal(right, d + 1, tol)
                    trees.update(f"({a}{f}{b})" for a in left_trees for b in right_trees)
        result = frozenset(trees)
        self._coopt[key] = result
        return result

    def log_evidence(self, mask: int | None = None, d: int = 0) -> float:
        """Log of the sum of ``P(T, Y_I | X_I)`` over all subtrees ``T`` of ``(I, d)``.

        At the root this is the evidence ``log P(Y | X)``.
        """
        mask = self.root if mask is None else mask
        key = (mask, d)
        if key in self._evidence:
            return self._evidence[key]
        terms = [-self.leaf_cost(mask, d)]
        valid = self.valid_features(mask)
        if valid:
            penalty = self.split_penalty(mask, d)
            for f in valid:
                left, right = self.split(mask, f)
                terms.append(-penalty + self.log_evidence(left, d + 1) + self.log_evidence(right, d + 1))
        result = _logsumexp(terms)
        self._evidence[key] = result
        return result

    # -- enumeration ---------------------------------------------------------

    def enumerate(
        self,
        mask: int | None = None,
        d: int = 0,
        which: Literal["joint", "prior", "likelihood"] = "joint",
    ) -> Iterator[tuple[str, float]]:
        """Yield ``(tree, cost)`` for every non-degenerate tree of ``(I, d)``.

        Trees come in a fixed order: the leaf, then the splits by increasing
        feature, each with every (left, right) pair of subtrees.  The cost of
        each tree is the sum of its own node terms (no minimisation), so this
        is an independent check of the dynamic programmes.

        Parameters
        ----------
        mask : int, optional
            Subset bit mask; the full data set by default.
        d : int, default=0
            Depth of the subproblem.
        which : {"joint", "prior", "likelihood"}, default="joint"
            ``"joint"`` yields ``-log P(T, Y | X)``, ``"prior"``
            ``-log P(T | X)`` and ``"likelihood"`` ``-log P(Y | X, T)``.
        """
        if which not in ("joint", "prior", "likelihood"):
            raise ValueError(f"which must be 'joint', 'prior' or 'likelihood', got {which!r}")
        mask = self.root if mask is None else mask
        memo: dict[tuple[int, int], list[tuple[str, float]]] = {}
        yield from self._enumerate(mask, d, which, memo)

    def _node_costs(self, mask: int, d: int, which: str) -> tuple[float, float]:
        """Return the (leaf, split-penalty) costs of ``(I, d)`` for the requested part."""
        valid = self.valid_features(mask)
        log_p_leaf = self._log_stop[d] if valid else 0.0
        penalty = -self._log_split[d] + math.log(len(valid)) if valid else math.inf
        if which == "prior":
            return -log_p_leaf, penalty
        if which == "likelihood":
            return -self.log_likelihood(mask), 0.0
        return -log_p_leaf - self.log_likelihood(mask), penalty

    def _enumerate(
        self, mask: int, d: int, which: str, memo: dict[tuple[int, int], list[tuple[str, float]]]
    ) -> Iterator[tuple[str, float]]:
        leaf, penalty = self._node_costs(mask, d, which)
        yield "", leaf
        for f in self.valid_features(mask):
            left, right = self.split(mask, f)
            left_trees = self._subtrees(left, d + 1, which, memo)
            right_trees = self._subtrees(right, d + 1, which, memo)
            for left_tree, left_cost in left_trees:
                for right_tree, right_cost in right_trees:
                    yield f"({left_tree}{f}{right_tree})", penalty + left_cost + right_cost

    def _subtrees(
        self, mask: int, d: int, which: str, memo: dict[tuple[int, int], list[tuple[str, float]]]
    ) -> list[tuple[str, float]]:
        key = (mask, d)
        if key not in memo:
            memo[key] = list(self._enumerate(mask, d, which, memo))
        return memo[key]

    def count_trees(self, mask: int | None = None, d: int = 0) -> int:
        """Number of non-degenerate trees of ``(I, d)`` (all trees by default)."""
        mask = self.root if mask is None else mask
        memo: dict[tuple[int, int], int] = {}

        def count(m: int, depth: int) -> int:
            key = (m, depth)
            if key not in memo:
                total = 1
                for f in self.valid_features(m):
                    left, right = self.split(m, f)
                    total += count(left, depth + 1) * count(right, depth + 1)
                memo[key] = total
            return memo[key]

        return count(mask, d)

    def reachable_states(self) -> Iterator[tuple[int, int]]:
        """Yield every subproblem ``(mask, d)`` reachable from the root, each once."""
        seen = {(self.root, 0)}
        frontier = [(self.root, 0)]
        while frontier:
            mask, d = frontier.pop()
            yield mask, d
            for f in self.valid_features(mask):
                for child in self.split(mask, f):
                    key = (child, d + 1)
                    if key not in seen:
                        seen.add(key)
                        frontier.append(key)


class BCARTOracle(_SubsetOracle):
    """Exact dynamic programmes over the BCART AND/OR graph of a small classification data set.

    The subproblem ``(I, d)`` -- the samples ``I`` reaching a node at depth
    ``d`` -- is solved exactly by recursion over its valid splits, with
    memoisation on the exact key ``(mask, d)``, where ``mask`` is the bit
    mask of ``I`` (bit ``i`` set iff sample ``i`` is in ``I``).  All values
    are **costs**, ``-log`` probabilities.  Intended for tests and small data
    (the number of reachable subproblems grows exponentially).  Leaves have
    Dirichlet(``rho``) class probabilities, integrated out.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Binary features.
    y : array-like of shape (n_samples,)
        Class indices ``0 .. K-1``.
    alpha, beta : float, default=(0.95, 0.5)
        Parameters of the :class:`ChipmanPrior`.
    rho : float or sequence of float, default=(2.5, 2.5)
        Dirichlet concentrations in class-index order (see
        :func:`log_posterior`).

    Attributes
    ----------
    n_samples, n_features, n_classes : int
    prior : ChipmanPrior
    rho : ndarray of shape (n_classes,)
    root : int
        Bit mask of all samples; the root subproblem is ``(root, 0)``.
    """

    def __init__(
        self,
        X: ArrayLike,
        y: ArrayLike,
        *,
        alpha: float = 0.95,
        beta: float = 0.5,
        rho: ArrayLike = (2.5, 2.5),
    ) -> None:
        ChipmanPrior(alpha, beta)  # parameter errors before data errors
        X_bin, y_int, self.rho = _validate_data(X, y, rho)
        self._init_subsets(X_bin, alpha, beta)
        self.n_classes = self.rho.size
        self._class_masks = [self._mask_of(y_int == k) for k in range(self.n_classes)]
        self._counts: dict[int, tuple[int, ...]] = {}

    def counts(self, mask: int) -> tuple[int, ...]:
        """Class counts ``(c_0, ..., c_{K-1})`` of the subset ``mask``."""
        if mask not in self._counts:
            self._counts[mask] = tuple((mask & m).bit_count() for m in self._class_masks)
        return self._counts[mask]

    def log_likelihood(self, mask: int) -> float:
        """Leaf log marginal likelihood ``log l(c(I))`` of the subset ``mask``."""
        if mask not in self._log_lik:
            self._log_lik[mask] = float(log_dirichlet_multinomial(self.counts(mask), self.rho))
        return self._log_lik[mask]

    def heuristic(self, mask: int, d: int) -> float:
        """Perfect Split heuristic ``h(I, d)`` (see :func:`heuristic`)."""
        return float(heuristic(self.counts(mask), d, self.prior.alpha, self.prior.beta, self.rho))


def exact_map(
    X: ArrayLike,
    y: ArrayLike,
    *,
    alpha: float = 0.95,
    beta: float = 0.5,
    rho: ArrayLike = (2.5, 2.5),
) -> tuple[float, str]:
    """Exact MAP tree of the BCART posterior by dynamic programming.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Binary features.
    y : array-like of shape (n_samples,)
        Class indices ``0 .. K-1``.
    alpha, beta : float, default=(0.95, 0.5)
        Parameters of the :class:`ChipmanPrior`.
    rho : float or sequence of float, default=(2.5, 2.5)
        Dirichlet concentrations in class-index order.

    Returns
    -------
    opt_cost : float
        ``OPT = min_T -log P(T, Y | X)``, a non-negative cost.
    tree : str
        A MAP tree in parenthesis notation; ties go to the leaf first, then
        to the lowest feature index.
    """
    return BCARTOracle(X, y, alpha=alpha, beta=beta, rho=rho).best_tree()


def co_optimal_trees(
    X: ArrayLike,
    y: ArrayLike,
    *,
    alpha: float = 0.95,
    beta: float = 0.5,
    rho: ArrayLike = (2.5, 2.5),
    tol: float = 1e-9,
) -> tuple[float, set[str]]:
    """All MAP trees: the trees whose cost is within ``tol`` of ``OPT``.

    Computed by dynamic programming (sets of co-optimal subtrees per
    subproblem), not by enumeration; see :meth:`BCARTOracle.co_optimal`.

    Returns
    -------
    opt_cost : float
        ``OPT``, a non-negative cost.
    trees : set of str
        The co-optimal trees in parenthesis notation.
    """
    oracle = BCARTOracle(X, y, alpha=alpha, beta=beta, rho=rho)
    return oracle.value(oracle.root, 0), set(oracle.co_optimal(tol=tol))


def enumerate_trees(
    X: ArrayLike,
    y: ArrayLike,
    *,
    alpha: float = 0.95,
    beta: float = 0.5,
    rho: ArrayLike = (2.5, 2.5),
    which: Literal["joint", "prior", "likelihood"] = "joint",
) -> Iterator[tuple[str, float]]:
    """Brute force: yield ``(tree, cost)`` for every non-degenerate tree.

    ``cost = -log P(T, Y | X)`` by default (see
    :meth:`BCARTOracle.enumerate` for ``which``).  The number of trees grows
    super-exponentially; use only on tiny data sets.
    """
    return BCARTOracle(X, y, alpha=alpha, beta=beta, rho=rho).enumerate(which=which)


def log_evidence(
    X: ArrayLike,
    y: ArrayLike,
    *,
    alpha: float = 0.95,
    beta: float = 0.5,
    rho: ArrayLike = (2.5, 2.5),
) -> float:
    """Log evidence ``log P(Y | X) = log sum_T P(T, Y | X)`` by a log-sum-exp DP.

    ``log_posterior(T) - log_evidence`` is the normalised log posterior
    probability ``log P(T | X, Y)`` of a tree.
    """
    return BCARTOracle(X, y, alpha=alpha, beta=beta, rho=rho).log_evidence()


# ---------------------------------------------------------------------------
# Regression leaves: the normal-inverse-gamma marginal likelihood
# ---------------------------------------------------------------------------

#: Default ``kappa`` of :class:`NIGPrior`: the prior standard deviation of a
#: leaf mean is ``sqrt(3)`` noise standard deviations.
DEFAULT_PRIOR_KAPPA = 1.0 / 3.0
#: Default ``shape`` of :class:`NIGPrior` (``nu = 3`` degrees of freedom).
DEFAULT_PRIOR_SHAPE = 1.5
#: Default prior probability that the leaf noise variance is below ``var(y)``.
DEFAULT_SCALE_QUANTILE = 0.9

_LOG_2PI = math.log(2.0 * math.pi)


def _check_real(value: Any, name: str, *, positive: bool) -> float:
    """A finite real number (``> 0`` when ``positive``), else a ValueError naming ``name``."""
    what = "a finite number > 0" if positive else "a finite number"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be {what}; got {value!r}")
    x = float(value)
    if not math.isfinite(x) or (positive and not x > 0):
        raise ValueError(f"{name} must be {what}; got {value!r}")
    return x


@dataclass(frozen=True)
class NIGPrior:
    """Normal-inverse-gamma prior of a regression leaf (conjugate Bayesian CART leaf).

    Within a leaf the targets are ``y_i | mu, s2 ~ N(mu, s2)`` independently,
    with ``mu | s2 ~ N(mean, s2 / kappa)`` and ``s2 ~ InvGamma(shape, scale)``
    (density proportional to ``s2 ** (-shape - 1) * exp(-scale / s2)``); each
    leaf has its own ``(mu, s2)``.  Integrating them out gives the closed form
    of :meth:`log_marginal`.

    Parameters
    ----------
    mean : float, default=0.0
        Prior mean ``mu0`` of a leaf mean.
    kappa : float, default=1/3
        Prior precision of a leaf mean, in units of the noise: ``mu`` has prior
        variance ``s2 / kappa``; > 0.
    shape : float, default=1.5
        Shape ``a0`` of the inverse-gamma prior of the noise variance; > 0.
    scale : float, default=1.0
        Scale ``b0`` of the inverse-gamma prior of the noise variance; > 0.

    See Also
    --------
    NIGPrior.from_data : scale-aware defaults derived from ``y``.

    Examples
    --------
    >>> prior = NIGPrior(mean=0.0, kappa=1.0, shape=2.0, scale=1.0)
    >>> round(prior.log_marginal([0.5, -0.3]), 6)
    -2.147904
    """

    mean: float = 0.0
    kappa: float = DEFAULT_PRIOR_KAPPA
    shape: float = DEFAULT_PRIOR_SHAPE
    scale: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "mean", _check_real(self.mean, "mean", positive=False))
        for name in ("kappa", "shape", "scale"):
            object.__setattr__(self, name, _check_real(getattr(self, name), name, positive=True))

    @classmethod
    def from_data(
        cls,
        y: ArrayLike,
        sample_weight: ArrayLike | None = None,
        *,
        mean: float | None = None,
        kappa: float = DEFAULT_PRIOR_KAPPA,
        shape: float = DEFAULT_PRIOR_SHAPE,
        scale: float | None = None,
        quantile: float = DEFAULT_SCALE_QUANTILE,
    ) -> "NIGPrior":
        """A prior whose location and scale follow the data (``None`` means "from ``y``").

        ``mean=None`` is the (weighted) mean of ``y``.  ``scale=None`` is
        ``v * Q^{-1}(shape, quantile)``, where ``v`` is the (weighted,
        population) variance of ``y`` and ``Q^{-1}`` the inverse of the
        regularised upper incomplete gamma function, so that the prior puts
        probability ``quantile`` on a leaf noise variance below ``v``
        (BART's calibration, Chipman, George & McCulloch 2010, with
        ``nu = 2 * shape = 3`` and ``q = 0.9`` by default).  A constant ``y``
        (up to rounding) uses ``v = 1``.  With both defaults, replacing ``y`` by ``c * y + s``
        (``c != 0``) adds the same constant ``-n log|c|`` to the log marginal
        likelihood of every tree, so the posterior over trees is unchanged.

        Parameters
        ----------
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative weights (a weight ``w`` counts the sample ``w`` times).
        mean, kappa, shape, scale : float or None
            As in :class:`NIGPrior`; ``mean`` and ``scale`` may be None.
        quantile : float, default=0.9
            In (0, 1); see above.

        Returns
        -------
        NIGPrior
        """
        y_arr = np.asarray(y, dtype=np.float64).reshape(-1)
        w = np.ones_like(y_arr) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        if not 0.0 < float(quantile) < 1.0:
            raise ValueError(f"quantile must be a number in (0, 1); got {quantile!r}")
        shape = _check_real(shape, "shape", positive=True)
        total = float(w.sum())
        if y_arr.size == 0 or not total > 0:
            raise ValueError("NIGPrior.from_data needs at least one sample of positive weight")
        m = float(np.dot(w, y_arr) / total)
        v = float(np.dot(w, (y_arr - m) ** 2) / total)
        # Deviations below the rounding error of the mean count as zero: a constant y.
        rounding = 4.0 * y_arr.size * np.finfo(np.float64).eps * float(np.abs(y_arr).max())
        if not v > rounding * rounding or not math.isfinite(v):
            v = 1.0
        if mean is None:
            mean = m
        if scale is None:
            scale = v * float(gammainccinv(shape, float(quantile)))
        return cls(mean=mean, kappa=kappa, shape=shape, scale=scale)

    def log_marginal(self, y: ArrayLike, sample_weight: ArrayLike | None = None) -> float:
        """Log marginal likelihood ``log p(y_L)`` of the targets of one leaf.

        With weighted count ``n``, mean ``ybar`` and sum of squares
        ``SS = sum w (y - ybar)**2``, and ``kappa_n = kappa + n``,
        ``a_n = shape + n / 2``,
        ``b_n = scale + SS / 2 + kappa * n * (ybar - mean)**2 / (2 kappa_n)``::

            log p(y_L) = lgamma(a_n) - lgamma(shape) + shape log(scale) - a_n log(b_n)
                         + log(kappa / kappa_n) / 2 - (n / 2) log(2 pi).

        An integer weight ``w`` is the same as ``w`` copies of the sample.  The
        empty leaf has likelihood 1 (log 0).

        Parameters
        ----------
        y : array-like of shape (n,)
        sample_weight : array-like of shape (n,), optional

        Returns
        -------
        float
        """
        y_arr = np.asarray(y, dtype=np.float64).reshape(-1)
        w = np.ones_like(y_arr) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        n = float(w.sum())
        if n == 0.0:
            return 0.0
        ybar = float(np.dot(w, y_arr) / n)
        ss = float(np.dot(w, (y_arr - ybar) ** 2))
        k0, a0, b0 = self.kappa, self.shape, self.scale
        kn, an = k0 + n, a0 + 0.5 * n
        bn = b0 + 0.5 * ss + k0 * n * (ybar - self.mean) ** 2 / (2.0 * kn)
        return (
            math.lgamma(an) - math.lgamma(a0) + a0 * math.log(b0) - an * math.log(bn)
            + 0.5 * math.log(k0 / kn) - 0.5 * n * _LOG_2PI
        )

    def perfect_cost(self, n: ArrayLike) -> np.float64 | NDArray[np.float64]:
        """``L0(n)``: the cost ``-log p`` of a leaf of weight ``n`` whose targets all equal ``mean``.

        ``L0(n) = lgamma(shape) - lgamma(shape + n/2) + (n/2) log(2 pi scale) + log((kappa + n)/kappa) / 2``,
        the smallest cost any leaf of weight ``n`` can have (see
        :func:`nig_bound_tables`).  Vectorised over ``n``.
        """
        n = np.asarray(n, dtype=np.float64)
        a0, b0, k0 = self.shape, self.scale, self.kappa
        return (
            gammaln(a0) - gammaln(a0 + 0.5 * n) + 0.5 * n * math.log(2.0 * math.pi * b0)
            + 0.5 * np.log1p(n / k0)
        )

    def posterior_mean(self, n: float, sum_y: float) -> float:
        """Posterior mean of a leaf's ``mu``: ``(kappa * mean + sum_y) / (kappa + n)``."""
        return (self.kappa * self.mean + sum_y) / (self.kappa + n)


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


def _validate_regression_data(
    X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None
) -> tuple[NDArray[np.uint8], NDArray[np.float64], NDArray[np.float64] | None]:
    """Binary features, finite real targets and optional non-negative weights."""
    X_bin, _, _ = _validate_data(X, np.zeros(np.shape(X)[0] if np.ndim(X) == 2 else 0, dtype=np.int64), 1.0)
    y_arr = np.asarray(y)
    if y_arr.ndim != 1 or y_arr.shape[0] != X_bin.shape[0]:
        raise ValueError(f"y must be 1-D with {X_bin.shape[0]} entries to match X, got shape {y_arr.shape}")
    if y_arr.dtype.kind not in "biuf":
        raise ValueError(f"y must contain real numbers, got dtype {y_arr.dtype}")
    y_arr = y_arr.astype(np.float64)
    if not np.all(np.isfinite(y_arr)):
        raise ValueError("y must contain finite numbers (no NaN or infinity)")
    w = None
    if sample_weight is not None:
        w = np.asarray(sample_weight, dtype=np.float64)
        if w.shape != y_arr.shape or not np.all(np.isfinite(w) & (w >= 0)):
            raise ValueError("sample_weight must be a finite non-negative vector with one value per sample")
    return X_bin, y_arr, w


def _nig_leaf(
    y: NDArray[np.float64], prior: NIGPrior, sample_weight: NDArray[np.float64] | None = None
) -> Callable[[NDArray[np.intp]], float]:
    def leaf_loglik(idx: NDArray[np.intp]) -> float:
        return prior.log_marginal(y[idx], None if sample_weight is None else sample_weight[idx])

    return leaf_loglik


def log_posterior_regression(
    tree: Any,
    X: ArrayLike,
    y: ArrayLike,
    *,
    alpha: float = 0.95,
    beta: float = 0.5,
    prior: NIGPrior | None = None,
    sample_weight: ArrayLike | None = None,
) -> float:
    """Unnormalised log posterior ``log p(T, y | X)`` of a regression tree.

    The same Chipman prior over trees as :func:`log_posterior`, with
    normal-inverse-gamma leaves (:meth:`NIGPrior.log_marginal`): internal
    nodes contribute ``log p_split(d) - log |V(I)|``, leaves ``log p_leaf +
    log p(y_L)``.  It is a log *density* in ``y``, so it can be positive.

    Parameters
    ----------
    tree : Tree
        A tree with binary-feature splits (left child iff ``x[f] == 0``).
    X : array-like of shape (n_samples, n_features)
        Binary training features.
    y : array-like of shape (n_samples,)
        Real targets.
    alpha, beta : float, default=(0.95, 0.5)
        Parameters of the :class:`ChipmanPrior`.
    prior : NIGPrior, optional
        Leaf prior; default ``NIGPrior.from_data(y, sample_weight)``.
    sample_weight : array-like of shape (n_samples,), optional
        Non-negative weights (an integer weight ``w`` is ``w`` copies of the
        row).  Samples of weight 0 still count for ``V(I)``: remove them
        first if they should not.

    Returns
    -------
    float
        ``log p(T, y | X)``; ``-inf`` for a degenerate tree.
    """
    chip = ChipmanPrior(alpha, beta)
    X_bin, y_arr, w = _validate_regression_data(X, y, sample_weight)
    if prior is None:
        prior = NIGPrior.from_data(y_arr, w)
    lp, ll = _tree_log_terms(tree, X_bin, chip, _nig_leaf(y_arr, prior, w))
    return lp + ll


class RegressionOracle(_SubsetOracle):
    """Exact dynamic programmes over the BCART AND/OR graph with normal-inverse-gamma leaves.

    The regression sibling of :class:`BCARTOracle` (same subset DP, same
    Chipman prior and valid-split rules); the leaf likelihood is
    :meth:`NIGPrior.log_marginal` of the leaf's (weighted) targets.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Binary features.
    y : array-like of shape (n_samples,)
        Real targets.
    alpha, beta : float, default=(0.95, 0.5)
        Parameters of the :class:`ChipmanPrior`.
    prior : NIGPrior, optional
        Leaf prior; default ``NIGPrior.from_data(y, sample_weight)``.
    sample_weight : array-like of shape (n_samples,), optional
        Non-negative weights multiplying each sample's contribution to its
        leaf's statistics (integer ``w``: ``w`` copies of the row).

    Attributes
    ----------
    n_samples, n_features : int
    prior : ChipmanPrior
    leaf_prior : NIGPrior
    root : int
        Bit mask of all samples.
    """

    def __init__(
        self,
        X: ArrayLike,
        y: ArrayLike,
        *,
        alpha: float = 0.95,
        beta: float = 0.5,
        prior: NIGPrior | None = None,
        sample_weight: ArrayLike | None = None,
    ) -> None:
        ChipmanPrior(alpha, beta)
        X_bin, self.y, self.sample_weight = _validate_regression_data(X, y, sample_weight)
        self._init_subsets(X_bin, alpha, beta)
        self.leaf_prior = NIGPrior.from_data(self.y, self.sample_weight) if prior is None else prior

    def indices(self, mask: int) -> NDArray[np.intp]:
        """Sample indices of the subset ``mask``."""
        return np.array([i for i in range(self.n_samples) if mask >> i & 1], dtype=np.intp)

    def log_likelihood(self, mask: int) -> float:
        """Leaf log marginal likelihood ``log p(y_I)`` of the subset ``mask``."""
        if mask not in self._log_lik:
            idx = self.indices(mask)
            w = None if self.sample_weight is None else self.sample_weight[idx]
            self._log_lik[mask] = self.leaf_prior.log_marginal(self.y[idx], w)
        return self._log_lik[mask]


def exact_map_regression(
    X: ArrayLike,
    y: ArrayLike,
    *,
    alpha: float = 0.95,
    beta: float = 0.5,
    prior: NIGPrior | None = None,
    sample_weight: ArrayLike | None = None,
) -> tuple[float, str]:
    """Exact MAP regression tree by dynamic programming (see :class:`RegressionOracle`).

    Returns
    -------
    opt_cost : float
        ``min_T -log p(T, y | X)`` (may be negative: a density).
    tree : str
        A MAP tree in parenthesis notation (ties: leaf first, then lowest feature).
    """
    oracle = RegressionOracle(X, y, alpha=alpha, beta=beta, prior=prior, sample_weight=sample_weight)
    return oracle.best_tree()


def co_optimal_trees_regression(
    X: ArrayLike,
    y: ArrayLike,
    *,
    alpha: float = 0.95,
    beta: float = 0.5,
    prior: NIGPrior | None = None,
    sample_weight: ArrayLike | None = None,
    tol: float = 1e-9,
) -> tuple[float, set[str]]:
    """All MAP regression trees: the trees whose cost is within ``tol`` of the optimum."""
    oracle = RegressionOracle(X, y, alpha=alpha, beta=beta, prior=prior, sample_weight=sample_weight)
    return oracle.value(oracle.root, 0), set(oracle.co_optimal(tol=tol))
