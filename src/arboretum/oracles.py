"""Exact Bayesian CART oracles for small data: references to check any estimator against.

Everything here is exact and brute force, over every tree of a small data set
(a few dozen samples, a handful of binary features): the MAP tree by a
dynamic programme over sample subsets, every co-optimal MAP tree, the
enumeration of all trees with their posteriors, and the log evidence
``log P(Y | X)``, for classification (Dirichlet leaves, :class:`BCARTOracle`)
and regression (normal-inverse-gamma leaves, :class:`RegressionOracle`).
The test suite checks MAPTree's certificate, the samplers' frequencies and
BCART-PCFG's ``prior="chipman"`` against them; use them the same way to
verify a model on data of your own.

>>> import numpy as np
>>> from arboretum import MAPTreeClassifier
>>> from arboretum.oracles import exact_map, log_evidence
>>> rng = np.random.default_rng(0)
>>> X = rng.integers(0, 2, size=(30, 3))
>>> y = X[:, 0] ^ (rng.random(30) < 0.1)
>>> cost, tree = exact_map(X, y)                     # -log P(T, y | X) of a MAP tree
>>> clf = MAPTreeClassifier().fit(X, y)
>>> bool(np.isclose(clf.log_posterior_, -cost)), tree
(True, '(0)')
>>> bool(-cost <= log_evidence(X, y))                 # one tree's share of the evidence
True

Conventions
-----------
Costs
    The oracles work with **costs**, ``cost = -log P(T, Y | X)``; the MAP tree
    is the tree of minimal cost (:func:`arboretum.bayes.log_posterior` returns
    ``-cost``).
Trees as strings
    Trees are written in the spec's parenthesis notation: a leaf is ``""`` and
    a node splitting on feature ``f`` is ``"(" + left + str(f) + right + ")"``,
    where ``left`` is the subtree of the samples with ``x[f] == 0``
    (:meth:`arboretum.Tree.from_paren` reads it).
Subsets
    A set of sample indices ``I`` is a Python ``int`` bit mask whose bit ``i``
    is set when sample ``i`` is in ``I``; memoisation keys are ``(mask,
    depth)``, so there are no hash collisions (cf. spec-000 §3.8).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .bayes import (
    ChipmanPrior,
    NIGPrior,
    _validate_data,
    _validate_regression_data,
    leaf_cost,
    log_dirichlet_multinomial,
)

__all__ = [
    "BCARTOracle",
    "RegressionOracle",
    "co_optimal_trees",
    "co_optimal_trees_regression",
    "enumerate_trees",
    "exact_map",
    "exact_map_regression",
    "log_evidence",
]

#: Relative tolerance used by :meth:`BCARTOracle.best_tree` to treat two
#: candidate costs as tied (so that the tie rule "leaf first, then the lowest
#: feature" is not defeated by floating-point rounding).
_TIE_RTOL = 1e-12


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
        #: Depth limit of :meth:`value` and :meth:`best_tree` (None: none); the other
        #: programmes (evidence, enumeration, co-optimal trees) ignore it.
        self.max_depth: int | None = None

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
        if valid and (self.max_depth is None or d < self.max_depth):
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
        from .maptree.bounds import heuristic

        return float(heuristic(self.counts(mask), d, self.prior.alpha, self.prior.beta, self.rho))


def exact_map(
    X: ArrayLike,
    y: ArrayLike,
    *,
    alpha: float = 0.95,
    beta: float = 0.5,
    rho: ArrayLike = (2.5, 2.5),
    max_depth: int | None = None,
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
    max_depth : int, optional
        Only trees of at most this depth (a node at that depth is a leaf,
        with its usual prior ``1 - p_split(d)``).

    Returns
    -------
    opt_cost : float
        ``OPT = min_T -log P(T, Y | X)``, a non-negative cost.
    tree : str
        A MAP tree in parenthesis notation; ties go to the leaf first, then
        to the lowest feature index.
    """
    oracle = BCARTOracle(X, y, alpha=alpha, beta=beta, rho=rho)
    oracle.max_depth = max_depth
    return oracle.best_tree()


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
    max_depth: int | None = None,
) -> tuple[float, str]:
    """Exact MAP regression tree by dynamic programming (see :class:`RegressionOracle`).

    ``max_depth`` limits the depth of the trees as in :func:`exact_map`.

    Returns
    -------
    opt_cost : float
        ``min_T -log p(T, y | X)`` (may be negative: a density).
    tree : str
        A MAP tree in parenthesis notation (ties: leaf first, then lowest feature).
    """
    oracle = RegressionOracle(X, y, alpha=alpha, beta=beta, prior=prior, sample_weight=sample_weight)
    oracle.max_depth = max_depth
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
