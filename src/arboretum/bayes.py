"""The Bayesian CART (BCART) model: leaf likelihoods, the tree prior, log posteriors.

This module is the probability model behind MAPTree, the samplers and
BCART-PCFG's ``prior="chipman"`` (spec-000, §2):

* leaf marginal likelihoods with the leaf parameters integrated out:
  Dirichlet-multinomial (:func:`log_dirichlet_multinomial`; Beta-Bernoulli for
  two classes) and, for regression, the normal-inverse-gamma leaf
  :class:`NIGPrior` with its closed-form marginal and data-derived defaults;
* the Chipman, George & McCulloch (1998) tree prior :class:`ChipmanPrior`,
  ``p_split(d) = alpha * (1 + d) ** -beta``;
* :func:`log_prior`, :func:`log_marginal_likelihood`, :func:`log_posterior`
  and :func:`log_posterior_regression`: the unnormalised log posterior
  ``log P(T, Y | X)`` of any :class:`arboretum.Tree`, with binary splits on 0/1
  features or with threshold and category splits on raw features (then the
  prior's count of valid splits comes from ``candidates``, e.g. the
  estimator's fitted :class:`arboretum.Binarizer`);
* :func:`leaf_cost`, the cost of making a subproblem a leaf.

The exact small-data oracles (the MAP tree by dynamic programming, co-optimal
trees, enumeration, the log evidence) are in :mod:`arboretum.oracles`, and
MAPTree's bounds (the Perfect Split heuristic, the regression bound tables) in
:mod:`arboretum.maptree.bounds`.  Importing those names from here still works
in this release, with a ``FutureWarning``.

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
    Costs are ``cost = -log P(T, Y | X)`` (natural logarithms); smaller is
    better.  :func:`log_posterior` returns the negated quantity, ``-cost``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import gammainccinv, gammaln

__all__ = [
    "ChipmanPrior",
    "NIGPrior",
    "TargetScaling",
    "leaf_cost",
    "log_dirichlet_multinomial",
    "log_marginal_likelihood",
    "log_posterior",
    "log_posterior_regression",
    "log_prior",
]

#: Names that moved in arboretum 0.2: the name -> its new module.  Importing them
#: from here works for one release, with a FutureWarning (:func:`__getattr__`).
_MOVED = {
    "BCARTOracle": "arboretum.oracles",
    "RegressionOracle": "arboretum.oracles",
    "co_optimal_trees": "arboretum.oracles",
    "co_optimal_trees_regression": "arboretum.oracles",
    "enumerate_trees": "arboretum.oracles",
    "exact_map": "arboretum.oracles",
    "exact_map_regression": "arboretum.oracles",
    "log_evidence": "arboretum.oracles",
    "heuristic": "arboretum.maptree.bounds",
    "nig_bound_tables": "arboretum.maptree.bounds",
    "group_spread_terms": "arboretum.maptree.bounds",
}

#: Split kind code of a binary-feature split in :mod:`arboretum.tree`
#: (left child iff ``x[feature] == 0``).
_BINARY_SPLIT = 1



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
    if X_arr.dtype.kind in "bu":  # no negative values: 0/1 iff the maximum is at most 1 (no temporaries)
        binary = X_arr.dtype.kind == "b" or int(X_arr.max()) <= 1
    else:
        binary = bool(np.all((X_arr == 0) | (X_arr == 1)))
    if not binary:
        raise ValueError("X must contain only binary values 0 and 1")
    X_bin = X_arr.astype(np.uint8, copy=False)  # read only: the caller's matrix when it is uint8

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


def _questions(
    tree: Any, X: ArrayLike, candidates: Any
) -> tuple[ArrayLike, Callable[[int, NDArray[np.intp]], NDArray[np.bool_]] | None]:
    """The 0/1 matrix whose columns the prior counts as the candidate splits, and how ``tree`` routes.

    A tree of binary-feature splits with ``candidates=None`` reads ``X`` itself
    (0/1) for both; routing is then ``X[:, feature] != 0`` (returned as None).
    Otherwise ``tree`` (an :class:`arboretum.Tree`) routes the raw ``X`` with
    its own splits (thresholds, categories, hyperplanes: as :meth:`Tree.apply`)
    and ``candidates`` gives the questions: a fitted discretiser with
    ``transform`` (an :class:`arboretum.Binarizer`, such as an estimator's
    ``binarizer_``) or a 0/1 matrix of one row per sample.
    """
    from .tree import BINARY, LEAF, Tree

    kinds = getattr(tree, "split_kind", None)
    binary = kinds is None or bool(np.isin(np.asarray(kinds), (LEAF, BINARY)).all())
    if candidates is None:
        if binary:
            return X, None
        raise ValueError(
            "the tree has threshold, category or hyperplane splits, so the prior's count of valid "
            "splits needs candidates=: the binary questions a split is chosen from (a fitted "
            "Binarizer such as the estimator's binarizer_, or their 0/1 matrix)"
        )
    if not isinstance(tree, Tree):
        raise TypeError(f"with candidates, tree must be an arboretum.Tree; got {type(tree).__name__}")
    E = tree.encode(X)
    Q = candidates.transform(X) if hasattr(candidates, "transform") else np.asarray(candidates)
    if np.ndim(Q) != 2 or np.shape(Q)[0] != E.shape[0]:
        raise ValueError(f"candidates must give a 2-D 0/1 matrix with one row per sample ({E.shape[0]}); "
                         f"got shape {np.shape(Q)}")

    def route(node: int, idx: NDArray[np.intp]) -> NDArray[np.bool_]:
        return ~tree._goes_left(node, E, idx)

    return Q, route


def _tree_log_terms(
    tree: Any,
    X: NDArray[np.uint8],
    prior: ChipmanPrior,
    leaf_loglik: Callable[[NDArray[np.intp]], float],
    route: Callable[[int, NDArray[np.intp]], NDArray[np.bool_]] | None = None,
) -> tuple[float, float]:
    """Route the training samples through ``tree``; return (log prior, log likelihood).

    Only ``children_left``, ``children_right``, ``feature`` and (when
    present) ``split_kind`` of ``tree`` are used; node 0 is the root.  The
    log prior is ``-inf`` for a degenerate tree (an internal node whose
    split does not separate its samples).  ``leaf_loglik(idx)`` is the log
    marginal likelihood of the samples ``idx`` in one leaf (the Dirichlet
    leaf of classification or the normal-inverse-gamma leaf of regression).
    ``X`` holds the candidate questions (``|V(I)|`` counts its columns that
    take both values on ``I``); ``route(node, idx)``, when given, says which
    of the samples ``idx`` go right at ``node`` (else ``X[idx, feature] != 0``).
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
        if route is not None:
            goes_right = route(node, idx)
        else:
            if kinds is not None and int(kinds[node]) != _BINARY_SPLIT:
                raise ValueError(
                    f"node {node} has split kind {int(kinds[node])}; only binary-feature splits "
                    f"(kind {_BINARY_SPLIT}) are supported without candidates"
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


def log_prior(
    tree: Any, X: ArrayLike, *, alpha: float = 0.95, beta: float = 0.5, candidates: Any = None
) -> float:
    """Log prior probability ``log P(T | X)`` of a tree under the BCART prior.

    Parameters
    ----------
    tree : Tree
        See :func:`log_posterior`.
    X : array-like or DataFrame of shape (n_samples, n_features)
        Training features: 0/1, or raw values when ``candidates`` is given.
    alpha, beta : float
        Parameters of the :class:`ChipmanPrior`.
    candidates : Binarizer or array-like, optional
        The questions the prior counts (see :func:`log_posterior`).

    Returns
    -------
    float
        ``log P(T | X)``; ``-inf`` when the tree is degenerate (some split
        does not separate the samples reaching it).
    """
    Q, route = _questions(tree, X, candidates)
    X_arr = np.asarray(Q)
    dummy_y = np.zeros(X_arr.shape[0] if X_arr.ndim == 2 else 0, dtype=np.int64)
    X_bin, y_int, rho_vec = _validate_data(X_arr, dummy_y, 1.0)
    prior = ChipmanPrior(alpha, beta)
    return _tree_log_terms(tree, X_bin, prior, _dirichlet_leaf(y_int, rho_vec), route)[0]


def log_marginal_likelihood(
    tree: Any, X: ArrayLike, y: ArrayLike, *, rho: ArrayLike = (2.5, 2.5), candidates: Any = None
) -> float:
    """Log marginal likelihood ``log P(Y | X, T)`` of the labels given a tree.

    The leaf class probabilities are integrated out under independent
    ``Dirichlet(rho)`` priors, so this is the sum over leaves of
    :func:`log_dirichlet_multinomial` of the leaf's label counts.

    Parameters
    ----------
    tree : Tree
        See :func:`log_posterior`.
    X : array-like or DataFrame of shape (n_samples, n_features)
        Training features: 0/1, or raw values when ``candidates`` is given
        (the likelihood does not depend on them, only the routing does).
    y : array-like of shape (n_samples,)
        Class indices ``0 .. K-1``.
    rho : float or sequence of float, default=(2.5, 2.5)
        Concentrations in class-index order; a scalar means
        ``(rho,) * K`` with ``K = max(max(y) + 1, 2)``.
    candidates : Binarizer or array-like, optional
        See :func:`log_posterior`.

    Returns
    -------
    float
    """
    Q, route = _questions(tree, X, candidates)
    X_bin, y_int, rho_vec = _validate_data(Q, y, rho)
    return _tree_log_terms(tree, X_bin, ChipmanPrior(), _dirichlet_leaf(y_int, rho_vec), route)[1]


def log_posterior(
    tree: Any,
    X: ArrayLike,
    y: ArrayLike,
    *,
    alpha: float = 0.95,
    beta: float = 0.5,
    rho: ArrayLike = (2.5, 2.5),
    sample_weight: ArrayLike | None = None,
    candidates: Any = None,
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
        An :class:`arboretum.Tree` with splits of any kind (with
        ``candidates``), or a tree with binary-feature splits (left child iff
        ``x[f] == 0``): an :class:`arboretum.Tree` or any object with
        ``children_left``, ``children_right`` (``-1`` at leaves) and
        ``feature`` arrays, node 0 being the root.
    X : array-like or DataFrame of shape (n_samples, n_features)
        Training features: 0/1, or raw values when ``candidates`` is given.
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
    candidates : Binarizer or array-like of shape (n_samples, n_questions), optional
        The binary questions that the prior counts as the candidate splits:
        ``V(I)`` is the set of questions that take both values on ``I``.
        Needed when ``tree`` has threshold, category or hyperplane splits on
        raw ``X`` (a tree of an estimator fitted on raw data): pass the
        estimator's fitted ``binarizer_`` (its ``transform(X)`` gives the
        questions) or the 0/1 matrix itself; ``tree`` then routes ``X`` with
        its own splits, as :meth:`arboretum.Tree.apply` does.  With the
        questions the estimator searched, the value equals the estimator's
        ``log_posterior_``.  None (default): ``X`` is 0/1 and is both.

    Returns
    -------
    float
        ``log P(T, Y | X)``; ``-inf`` for a degenerate tree (a split that
        does not separate the samples reaching it has prior probability 0).

    Raises
    ------
    ValueError
        On invalid data or parameters, or a tree with non-binary splits and
        no ``candidates``.

    Examples
    --------
    A tree fitted on raw values, scored with the questions it was searched over:

    >>> from sklearn.datasets import load_iris
    >>> from arboretum import MAPTreeClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = MAPTreeClassifier().fit(X, y)
    >>> lp = log_posterior(clf.tree_, X, y, rho=clf.rho_, candidates=clf.binarizer_)
    >>> bool(abs(lp - clf.log_posterior_) < 1e-9)
    True
    """
    prior = ChipmanPrior(alpha, beta)
    Q, route = _questions(tree, X, candidates)
    X_bin, y_int, rho_vec = _validate_data(Q, y, rho)
    w = None
    if sample_weight is not None:
        w = np.asarray(sample_weight, dtype=np.float64)
        if w.shape != y_int.shape or not np.all(np.isfinite(w) & (w >= 0)):
            raise ValueError("sample_weight must be a finite non-negative vector with one value per sample")
    lp, ll = _tree_log_terms(tree, X_bin, prior, _dirichlet_leaf(y_int, rho_vec, w), route)
    return lp + ll


# ---------------------------------------------------------------------------
# Leaf cost (cost form)
# ---------------------------------------------------------------------------


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
        (equal up to a relative ``4 n eps``) uses ``v = mean(y)**2``, or
        ``v = 1`` when ``y`` is 0, so that ``v`` scales with ``y`` in every
        case.  With both defaults, replacing ``y`` by ``c * y + s`` (``c != 0``;
        for a constant ``y``, ``s = 0``) adds the same constant ``-n log|c|``
        to the log marginal likelihood of every tree, so the posterior over
        trees is unchanged.  The moments are computed without overflow (see
        :class:`TargetScaling`); a variance outside the range of float64
        (``|y|`` beyond about ``1e154`` or below ``1e-154``) raises a
        ``ValueError``.

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
        if not 0.0 < float(quantile) < 1.0:
            raise ValueError(f"quantile must be a number in (0, 1); got {quantile!r}")
        shape = _check_real(shape, "shape", positive=True)
        m, v = _mean_and_variance(y_arr, sample_weight)
        if mean is None:
            mean = m
        if scale is None:
            scale = v * float(gammainccinv(shape, float(quantile)))
            if not float(np.finfo(np.float64).tiny) <= scale < math.inf:  # normal, not subnormal
                raise ValueError(
                    f"the variance of y ({_binary_magnitude(v)}) is outside the range of float64, so "
                    "the prior's scale (in units of y squared) cannot be represented; rescale y "
                    "(MAPTreeRegressor does this itself)"
                )
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


def _binary_magnitude(v: float) -> str:
    """``"about 2**k"`` for a positive float that may have overflowed or underflowed."""
    if v == 0.0:
        return "0, underflowed"
    if not math.isfinite(v):
        return "inf, overflowed"
    return f"about 2**{math.frexp(v)[1]}"


def _scaled_moments(
    y: NDArray[np.float64], sample_weight: ArrayLike | None
) -> tuple[int, NDArray[np.float64], NDArray[np.float64], float, float, bool]:
    """``(e, y1, w, m1, v1, constant)``: the weighted mean ``m1`` and variance ``v1`` of
    ``y1 = y * 2**-e``, where ``2**e`` is the binary magnitude of ``max|y|`` (so ``|y1| < 1`` and
    the scaling is exact), and whether ``y`` is constant up to a relative ``4 n eps``."""
    w = np.ones_like(y) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64).reshape(-1)
    total = float(w.sum())
    if y.size == 0 or not total > 0:
        raise ValueError("the targets need at least one sample of positive weight")
    if not np.all(np.isfinite(y)):
        raise ValueError("the targets must be finite numbers (no NaN or infinity)")
    amax = float(np.abs(y).max())
    e = math.frexp(amax)[1] if amax > 0 else 0
    y1 = np.ldexp(y, -e)
    m1 = float(np.dot(w, y1) / total)
    v1 = float(np.dot(w, (y1 - m1) ** 2) / total)
    # Deviations below the rounding error of the mean count as zero: a constant y.
    rounding = 4.0 * y.size * np.finfo(np.float64).eps * float(np.abs(y1).max())
    return e, y1, w, m1, v1, not v1 > rounding * rounding


def _mean_and_variance(y: NDArray[np.float64], sample_weight: ArrayLike | None) -> tuple[float, float]:
    """Weighted mean and population variance of ``y`` without overflow in the intermediate sums;
    a constant ``y`` has variance ``mean**2`` (1 when it is 0), see :meth:`NIGPrior.from_data`."""
    e, _, _, m1, v1, constant = _scaled_moments(y, sample_weight)
    if constant:
        v1 = m1 * m1 if m1 != 0.0 else math.ldexp(1.0, -2 * e)
    try:
        v = math.ldexp(v1, 2 * e)
    except OverflowError:
        v = math.inf
    return math.ldexp(m1, e), v


@dataclass(frozen=True)
class TargetScaling:
    """The affine map ``y = 2**exponent * (center + spread * z)`` between regression targets ``y``
    and the standardised targets ``z`` that MAPTreeRegressor's search works on.

    ``2**exponent`` is the binary magnitude of ``max|y|``, so that dividing by it is exact and
    leaves ``|y * 2**-exponent| < 1``; ``center`` and ``spread`` are then the weighted mean and
    standard deviation of those values, so ``z`` has mean 0 and variance 1 (a constant ``y``
    gets ``spread = |center|``, or 1 when ``y`` is 0, and ``z = 0``).  Every quantity of the
    search (sums of ``z`` and ``z**2``, leaf likelihoods, the bound tables) is then of order
    ``n`` whatever the scale of ``y``, from the smallest normal float to the largest.

    **Why the search may work on ``z``.**  Write ``u = 2**exponent * spread`` and ``c = 2**exponent
    * center``, so ``y = c + u z``.  The normal-inverse-gamma marginal of a leaf is invariant
    under this map once the prior moves with it: with ``mean_z = (mean - c) / u``,
    ``scale_z = scale / u**2`` and the same ``kappa`` and ``shape``, a leaf of weight ``n`` has
    ``SS_y = u**2 SS_z``, ``(ybar - mean)**2 = u**2 (zbar - mean_z)**2``, hence
    ``b_n(y) = u**2 b_n(z)``, and :meth:`NIGPrior.log_marginal` gives
    ``log p(y_L) = log p(z_L) - n log u`` (the ``a0 log b0 - a_n log b_n`` terms shift by
    ``(a0 - a_n) log u**2 = -n log u``; it is the change of variables of a density).  Summed over
    the leaves of any tree this is the same constant ``-N log u`` (``N`` the total weight), and the
    tree prior does not see ``y``: every tree's log posterior shifts by ``-N log u``, so the MAP
    tree, the ranking of all trees and every gap are the same for ``y`` and ``z``.  The data-derived
    defaults move with the map (``mean(y) = c + u mean(z)``, ``var(y) = u**2 var(z)``), so the
    prior that :meth:`NIGPrior.from_data` gives on ``y`` is the one it gives on ``z``, moved.

    Attributes
    ----------
    exponent : int
    center, spread : float
        ``spread > 0``; both in units of ``2**exponent``.
    constant : bool
        True when ``y`` is constant up to a relative ``4 n eps`` (then ``z = 0``).
    """

    exponent: int
    center: float
    spread: float
    constant: bool = False

    @classmethod
    def fit(cls, y: ArrayLike, sample_weight: ArrayLike | None = None) -> "TargetScaling":
        """The map of targets ``y`` (finite) with non-negative weights."""
        y_arr = np.asarray(y, dtype=np.float64).reshape(-1)
        e, _, _, m1, v1, constant = _scaled_moments(y_arr, sample_weight)
        if constant:
            return cls(e, m1, abs(m1) if m1 != 0.0 else 1.0, True)
        return cls(e, m1, math.sqrt(v1))

    @property
    def log_unit(self) -> float:
        """``log u``, ``u = 2**exponent * spread``: every log density in ``y`` is the one in ``z``
        minus ``n log u``."""
        return self.exponent * math.log(2.0) + math.log(self.spread)

    def transform(self, y: ArrayLike) -> NDArray[np.float64]:
        """``z = (y - c) / u``, computed as ``(y * 2**-exponent - center) / spread`` (0 when constant)."""
        y1 = np.ldexp(np.asarray(y, dtype=np.float64), -self.exponent)
        if self.constant:
            return np.zeros_like(y1)
        return (y1 - self.center) / self.spread

    def inverse(self, z: ArrayLike) -> NDArray[np.float64]:
        """``y = c + u z`` (may overflow to infinity only when the result is beyond float64)."""
        with np.errstate(over="ignore"):
            return np.ldexp(self.center + self.spread * np.asarray(z, dtype=np.float64), self.exponent)

    def _to_z(self, value: float, power: int, name: str) -> float:
        """``value`` in data units (``power`` 1: a location, 2: a squared scale) in units of ``z``."""
        with np.errstate(over="ignore", under="ignore"):
            if power == 1:
                out = (float(np.ldexp(value, -self.exponent)) - self.center) / self.spread
            else:
                out = float(np.ldexp(value, -2 * self.exponent)) / (self.spread * self.spread)
        if not math.isfinite(out) or (power == 2 and not out >= np.finfo(np.float64).tiny):
            what = "its distance from the mean of y" if power == 1 else "it"
            raise ValueError(
                f"{name}={value!r} cannot be represented next to the targets: {what} is "
                f"{_binary_magnitude(abs(out))} times the spread of y"
                f"{' squared' if power == 2 else ''}, beyond the range of float64"
            )
        return out

    def search_prior(
        self,
        y: ArrayLike,
        sample_weight: ArrayLike | None,
        *,
        mean: float | None,
        kappa: float,
        shape: float,
        scale: float | None,
        names: tuple[str, str] = ("prior_mean", "prior_scale"),
    ) -> "NIGPrior":
        """The prior of the standardised targets ``z = transform(y)``: ``mean`` and ``scale`` in
        data units (None: from the data, :meth:`NIGPrior.from_data`) moved to units of ``z``.

        Raises a ``ValueError`` naming ``names`` when ``mean`` or ``scale`` cannot be represented
        next to the targets (the leaf likelihoods of ``z`` would overflow or underflow)."""
        z = self.transform(y)
        prior = NIGPrior.from_data(
            z, sample_weight, kappa=kappa, shape=shape,
            mean=None if mean is None else self._to_z(mean, 1, names[0]),
            scale=None if scale is None else self._to_z(scale, 2, names[1]),
        )
        w = np.ones_like(z) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        with np.errstate(over="ignore"):
            worst = float(np.dot(w, (z - prior.mean) ** 2)) / (2.0 * prior.scale)
        if not math.isfinite(worst):
            name = names[1] if scale is not None and mean is None else " and ".join(
                n for n, v in zip(names, (mean, scale)) if v is not None
            )
            raise ValueError(
                f"{name} cannot be represented next to the targets: a leaf's squared distance from "
                f"the prior mean, over the prior scale, overflows float64"
            )
        return prior

    def data_prior(
        self, y: ArrayLike, sample_weight: ArrayLike | None, *, mean: float | None, kappa: float, shape: float,
        scale: float | None,
    ) -> "NIGPrior | None":
        """The prior of :meth:`search_prior` in data units: :meth:`NIGPrior.from_data` of ``y``
        with the same arguments, or None when its scale (units of ``y`` squared) is outside
        float64 (``|y|`` beyond about ``1e154`` or below ``1e-154``)."""
        try:
            return NIGPrior.from_data(y, sample_weight, mean=mean, kappa=kappa, shape=shape, scale=scale)
        except ValueError:
            return None


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
    candidates: Any = None,
) -> float:
    """Unnormalised log posterior ``log p(T, y | X)`` of a regression tree.

    The same Chipman prior over trees as :func:`log_posterior`, with
    normal-inverse-gamma leaves (:meth:`NIGPrior.log_marginal`): internal
    nodes contribute ``log p_split(d) - log |V(I)|``, leaves ``log p_leaf +
    log p(y_L)``.  It is a log *density* in ``y``, so it can be positive.

    Parameters
    ----------
    tree : Tree
        See :func:`log_posterior`.
    X : array-like or DataFrame of shape (n_samples, n_features)
        Training features: 0/1, or raw values when ``candidates`` is given.
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
    candidates : Binarizer or array-like, optional
        The questions the prior counts (see :func:`log_posterior`); with an
        estimator's ``binarizer_`` the value equals its ``log_posterior_``.

    Returns
    -------
    float
        ``log p(T, y | X)``; ``-inf`` for a degenerate tree.
    """
    chip = ChipmanPrior(alpha, beta)
    Q, route = _questions(tree, X, candidates)
    X_bin, y_arr, w = _validate_regression_data(Q, y, sample_weight)
    if prior is None:
        prior = NIGPrior.from_data(y_arr, w)
    lp, ll = _tree_log_terms(tree, X_bin, chip, _nig_leaf(y_arr, prior, w), route)
    return lp + ll


def __getattr__(name: str) -> Any:
    """The names that moved (``_MOVED``), with a FutureWarning naming their new module."""
    module = _MOVED.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    from .exceptions import warn_user

    warn_user(
        f"arboretum.bayes.{name} moved to {module}.{name}; importing it from arboretum.bayes "
        "will stop working in the next release",
        FutureWarning,
    )
    return getattr(importlib.import_module(module), name)
