"""The sparse density trees: :class:`LeafSparseDensityTree` (Method I) and :class:`BranchSparseDensityTree`
(Method II) of Goh, Semenova & Rudin (spec-004 §3-4, §6.1, §6.5)."""

from __future__ import annotations

import math
import numbers
import time
from typing import Any

import numpy as np

from ..base import constraints
from ..data import Interval, Options
from . import _kernels as K
from .anneal import Problem, anneal
from .base import DENSITY_CONSTRAINTS, DensityEstimator, log_volume
from .exact import (DensityNode, branch_sparse_upper_bound, exact_size, leaf_sparse_bound_by_k,
                    leaf_sparse_upper_bound, solve_exact)
from .posterior import log_posterior_branch_sparse, log_posterior_leaf_sparse
from .space import distinct_configurations

__all__ = ["LeafSparseDensityTree", "BranchSparseDensityTree"]

#: The exact solver is tried (solver="auto") on domains with at most this many boxes (prod 2**q_j).
EXACT_MAX_BOXES = 1 << 22
#: Method I: after annealing, the exact solver capped at the leaves the bound allows runs up to this many boxes.
BOUNDED_MAX_BOXES = 1 << 24


class _DensityTree(DensityEstimator):
    _method = "leaf"

    def __init__(self, lam: float = 8.0, alpha: float = 2.0, *, solver: str = "auto", max_leaves: int | None = 100,
                 n_cycles: int = 100, trials_per_cycle: int = 100, n_restarts: int = 5, epsilon: float = 0.01,
                 density: str = "mle", categories: Any = None, n_bins: int | None = None,
                 handle_unknown: str = "error", time_limit: float | None = 60.0,
                 memory_limit: float | None = 2048.0, random_state: Any = None, verbose: int = 0) -> None:
        self.lam = lam
        self.alpha = alpha
        self.solver = solver
        self.max_leaves = max_leaves
        self.n_cycles = n_cycles
        self.trials_per_cycle = trials_per_cycle
        self.n_restarts = n_restarts
        self.epsilon = epsilon
        self.density = density
        self.categories = categories
        self.n_bins = n_bins
        self.handle_unknown = handle_unknown
        self.time_limit = time_limit
        self.memory_limit = memory_limit
        self.random_state = random_state
        self.verbose = verbose

    _parameter_constraints = constraints(
        "time_limit", "memory_limit", "random_state", "verbose",
        lam=[Interval(numbers.Real, 0, None, closed="neither")],
        alpha=[Interval(numbers.Real, 0, None, closed="neither")],
        solver=[Options(("auto", "exact", "anneal"))],
        max_leaves=[Interval(numbers.Integral, 1, None), None],
        n_cycles=[Interval(numbers.Integral, 1, None)],
        trials_per_cycle=[Interval(numbers.Integral, 1, None)],
        n_restarts=[Interval(numbers.Integral, 1, None)],
        epsilon=[Interval(numbers.Real, 0, 1, closed="both")],
        density=[Options(("mle", "posterior_mean"))],
        **DENSITY_CONSTRAINTS,
    )

    def _seed(self) -> int | None:
        rs = self.random_state
        if rs is None or isinstance(rs, numbers.Integral):
            return rs
        return int(rs.randint(2**31 - 1))

    def fit(self, X: Any, y: Any = None) -> "_DensityTree":
        """Find the MAP tree of ``X`` (exactly where the domain allows, else by annealing).

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Categories (labels, integer codes, booleans), or numbers with ``n_bins``.
        y : ignored

        Returns
        -------
        self
        """
        self._validate_params()
        clock = self._start_clock()
        codes = self._fit_codes_density(X)
        q = self._q
        # the likelihoods see the rows only through the distinct configurations and their counts: count once
        configs, weights, _ = distinct_configurations(codes, q)
        data = (configs, weights)
        lam, alpha = float(self.lam), float(self.alpha)
        max_leaves = self.max_leaves if self._method == "leaf" else None
        n_boxes, need = exact_size(q, self._method, 1)  # Method I: the k table is sized after the bound
        fits_memory = self.memory_limit is None or need <= self.memory_limit * 2**20
        try_exact = self.solver == "exact" or (self.solver == "auto" and n_boxes <= EXACT_MAX_BOXES and fits_memory)
        result = None
        reason = "completed"
        self.optimal_ = False
        partial, upper = None, math.inf  # Method I's anytime answer when the knapsack cannot run
        if try_exact:
            share = clock.share_end(1.0 if self.solver == "exact" else 0.5)
            ex = solve_exact(configs, q, self._method, lam, alpha, max_leaves, share, self.memory_limit,
                             config_counts=weights)
            if ex is not None and ex.optimal:
                root, lp, self.optimal_ = ex.root, ex.log_posterior, True
                result = (root, lp)
            else:
                if ex is not None:
                    partial, upper = (ex.root, ex.log_posterior), ex.upper
                if self.solver == "exact":
                    reason = ex.stop if ex is not None else ("memory_limit" if not fits_memory else "time_limit")
        if result is None:
            prob = Problem(codes, q, self._method, lam, alpha)
            sa = anneal(prob, n_cycles=self.n_cycles, trials_per_cycle=self.trials_per_cycle,
                        n_restarts=self.n_restarts, epsilon=float(self.epsilon), max_leaves=self.max_leaves,
                        random_state=self._seed(), deadline=clock.deadline)
            result = (sa.root, sa.log_posterior)
            if partial is not None and partial[1] > sa.log_posterior:
                result = partial
            if sa.stopped:
                reason = "time_limit"
        root, lp = result
        if self._method == "leaf" and not self.optimal_ and self.solver != "anneal" and alpha >= 1:
            bounded = self._bounded_exact(data, q, lam, alpha, lp, clock)
            if bounded is not None:
                root, lp = bounded
                self.optimal_ = True
                reason = "completed"
        self._set_tree(root, data, lam, alpha)
        self.log_posterior_ = float(lp)
        self.gap_ = 0.0 if self.optimal_ else self._gap(data, q, lam, alpha, upper)
        self.fit_time_ = clock.elapsed()
        self._set_stop(reason, f"returning the best tree found ({self.n_leaves_} leaves, log posterior "
                               f"{self.log_posterior_:.4f}), not certified")
        return self

    def _bounded_exact(self, data: tuple, q: np.ndarray, lam: float, alpha: float, lp: float,
                       clock: Any) -> tuple | None:
        """Method I beyond the plain exact solver's reach: the upper bound by number of leaves
        (:func:`.exact.leaf_sparse_bound_by_k`) says no tree of more than ``k`` leaves beats the annealing
        answer ``lp``; the dynamic programme over trees of at most ``k`` leaves (memory ~ boxes x k) then
        finds the MAP.  None when the domain, ``memory_limit`` or the clock does not allow it (nothing
        runs once the deadline has passed).  ``data``: the distinct configurations and their counts."""
        if clock.expired():
            return None
        configs, weights = data
        ub = leaf_sparse_bound_by_k(configs, q, lam, alpha, above=lp - 1e-9, config_counts=weights)
        k = int(np.flatnonzero(ub >= lp - 1e-9).max()) + 1 if np.any(ub >= lp - 1e-9) else 1
        n_boxes, need = exact_size(q, "leaf", k)
        if n_boxes > BOUNDED_MAX_BOXES or clock.expired() or (
                self.memory_limit is not None and need > self.memory_limit * 2**20):
            return None
        ex = solve_exact(configs, q, "leaf", lam, alpha, k, clock.deadline, self.memory_limit, lower=lp,
                         config_counts=weights)
        if ex is None:
            return None
        return (ex.root, ex.log_posterior) if ex.log_posterior >= lp - 1e-9 * max(1.0, abs(lp)) else None

    def _gap(self, data: tuple, q: np.ndarray, lam: float, alpha: float, upper: float = math.inf) -> float:
        """``upper bound - log_posterior_``: Method I the least of ``upper`` (the Lagrangian bound) and
        :func:`.exact.leaf_sparse_upper_bound` (``alpha >= 1``); Method II :func:`.exact.branch_sparse_upper_bound`.
        0 when the bound meets the answer (then ``optimal_`` is True).  The closed-form bounds read only
        the counts of the distinct configurations (``data``), O(their number) vectorised, so they run
        even past the deadline (milliseconds; the rows were counted once before the search)."""
        configs, weights = data
        if self._method == "leaf":
            ub = min(upper, leaf_sparse_upper_bound(configs, q, lam, alpha, config_counts=weights)
                     if alpha >= 1 else math.inf)
        else:
            ub = branch_sparse_upper_bound(configs, q, lam, alpha, config_counts=weights)
        if not math.isfinite(ub):
            return math.nan
        gap = max(ub - self.log_posterior_, 0.0)
        if gap <= 1e-9 * max(1.0, abs(ub)):
            self.optimal_, gap = True, 0.0
        return gap

    def _set_tree(self, root: DensityNode, data: tuple, lam: float, alpha: float) -> None:
        nodes, parent = [], []

        def walk(node: DensityNode, par: int) -> None:
            nodes.append(node)
            parent.append(par)
            me = len(nodes) - 1
            for c in node.children:
                walk(c, me)

        walk(root, -1)
        boxes = np.array([n.box for n in nodes], dtype=np.uint64)
        leaves = [i for i, nd in enumerate(nodes) if not nd.children]
        configs, weights = data
        leaf_counts = np.bincount(K.first_match(configs, boxes[leaves]), weights=weights.astype(np.float64),
                                  minlength=len(leaves))
        counts = np.zeros(len(nodes))
        for li, i in enumerate(leaves):
            counts[i] = leaf_counts[li]
        for i in range(len(nodes) - 1, 0, -1):  # children come after parents in pre-order
            counts[parent[i]] += counts[i]
        self.node_parent_ = np.array(parent, dtype=np.int64)
        self.node_feature_ = np.array([nd.feature for nd in nodes], dtype=np.int64)
        self.node_boxes_ = boxes
        self.node_counts_ = counts
        logv = np.array([log_volume(nodes[i].box) for i in leaves])
        self._set_leaves([nodes[i].box for i in leaves], leaf_counts, logv, int(weights.sum()), self.density,
                         alpha)

    def log_posterior_of_leaves(self) -> float:
        """The objective recomputed from scratch from the fitted leaves (and, Method II, internal nodes)."""
        if self._method == "leaf":
            return log_posterior_leaf_sparse(self.leaf_counts_, self.leaf_log_volumes_, float(self.lam),
                                             float(self.alpha))
        children = [[self.node_counts_[c] for c in np.flatnonzero(self.node_parent_ == i)]
                    for i in range(len(self.node_parent_)) if np.any(self.node_parent_ == i)]
        return log_posterior_branch_sparse(children, self.leaf_counts_, self.leaf_log_volumes_, float(self.lam),
                                           float(self.alpha))


class LeafSparseDensityTree(_DensityTree):
    """Leaf-sparse density tree (Method I of Goh, Semenova & Rudin): a Poisson(``lam``) prior on the number
    of leaves, Dirichlet(``alpha``) leaf probabilities, the MAP tree.

    Each leaf is a box of categories (one allowed set per feature); every configuration in a leaf has
    the same probability mass ``P / V`` (``V`` the number of configurations of the leaf).  The MAP tree is
    found exactly (``solver="exact"``; ``optimal_`` True) where the domain is small enough
    (``solver="auto"``: at most 2**22 boxes, within ``memory_limit`` and half of ``time_limit``): a
    Lagrangian relaxation of the number of leaves (a dynamic programme with one value per box,
    :func:`arboretum.density.exact.leaf_sparse_lagrangian`) bounds every number of leaves and often
    certifies its own tree at once; otherwise a knapsack programme over boxes and numbers of leaves,
    capped at the most leaves the bound leaves open, finds the MAP (:mod:`arboretum.density.exact`).
    Beyond that, simulated annealing over the paper's five moves (``n_restarts`` runs of ``n_cycles`` x
    ``trials_per_cycle`` proposals) gives the tree; then (``alpha >= 1``) an admissible upper bound
    (:func:`arboretum.density.exact.leaf_sparse_upper_bound`) gives ``gap_`` and the most leaves a better
    tree could have, and unless ``solver="anneal"`` the capped programme certifies the MAP when it fits
    (up to 2**24 boxes, ``memory_limit``, the rest of ``time_limit``).

    Parameters
    ----------
    lam : float, default=8.0
        Prior mean of the number of leaves (the paper's grid: 5, 8, 10).
    alpha : float, default=2.0
        Dirichlet pseudocount of the leaf probabilities (any real > 0).
    solver : {"auto", "exact", "anneal"}, default="auto"
    max_leaves : int or None, default=100
        No expansion of a tree with this many leaves (the reference code's soft cap; also the most
        leaves the exact solver considers).
    n_cycles, trials_per_cycle, n_restarts, epsilon
        Annealing budget and the probability of a structural change (spec §6.1).
    density : {"mle", "posterior_mean"}, default="mle"
        Leaf mass ``n_l / n`` (the paper) or ``(n_l + alpha) / (n + K alpha)`` (no zero densities).
    categories : None, list or dict, default=None
        The domain: None for the categories seen in ``fit``; else labels per column.
    n_bins : int or None, default=None
        Equal-width bins of numeric columns (the paper uses 10 for HELOC and Telco).
    handle_unknown : {"error", "zero"}, default="error"
        A category outside the domain at score time raises, or gets density 0.
    time_limit : float or None, default=60
    memory_limit : float or None, default=2048
        MiB the exact solver may allocate.
    random_state : int, RandomState or None, default=None
    verbose : int, default=0

    Attributes
    ----------
    n_leaves_, leaf_boxes_, leaf_counts_, leaf_log_volumes_, leaf_probabilities_, leaf_log_densities_
        The leaves (``leaves_``, ``leaf_densities_`` and ``leaf_volumes_`` derive from them).
    node_parent_, node_feature_, node_boxes_, node_counts_
        The tree, nodes in pre-order (multiway splits).
    categories_, bin_edges_
        The domain.
    log_posterior_ : float
        LP_I of the tree (spec §3.4, constants included).
    optimal_ : bool
        True when the exact solver certified the tree.
    gap_ : float
        0 when certified; else an admissible upper bound on the MAP's log posterior minus
        ``log_posterior_``: Method I the Lagrangian bound (:func:`arboretum.density.exact.leaf_sparse_lagrangian`,
        when it ran) or :func:`arboretum.density.exact.leaf_sparse_upper_bound` (``alpha >= 1``), Method II
        :func:`arboretum.density.exact.branch_sparse_upper_bound` (loose: the histogram likelihood).
    stop_reason_, fit_time_, compile_time_, n_features_in_, feature_names_in_

    Examples
    --------
    >>> import numpy as np
    >>> from arboretum import LeafSparseDensityTree
    >>> X = np.array([[0, 1]] * 30 + [[1, 0]] * 10 + [[1, 1]] * 10)
    >>> est = LeafSparseDensityTree(lam=3).fit(X)
    >>> est.n_leaves_, est.optimal_
    (3, True)
    """

    _method = "leaf"


class BranchSparseDensityTree(_DensityTree):
    """Branch-sparse density tree (Method II): a Poisson(``lam``) prior on the number of branches of every
    node and a Dirichlet(``alpha``) at every internal node; the MAP tree (spec §4).

    Parameters and attributes as :class:`LeafSparseDensityTree` (the default ``lam`` is 2, the paper's
    grid 2 and 3); ``log_posterior_`` is LP_II (spec §4.3).  The exact solver searches multiway set
    partitions into at least 2 blocks (spec A15) and every tree size; ``max_leaves`` only caps
    annealing.
    """

    _method = "branch"

    def __init__(self, lam: float = 2.0, alpha: float = 2.0, *, solver: str = "auto", max_leaves: int | None = 100,
                 n_cycles: int = 100, trials_per_cycle: int = 100, n_restarts: int = 5, epsilon: float = 0.01,
                 density: str = "mle", categories: Any = None, n_bins: int | None = None,
                 handle_unknown: str = "error", time_limit: float | None = 60.0,
                 memory_limit: float | None = 2048.0, random_state: Any = None, verbose: int = 0) -> None:
        # the same parameters as Method I with Method II's default lam (scikit-learn reads the signature)
        super().__init__(lam, alpha, solver=solver, max_leaves=max_leaves, n_cycles=n_cycles,
                         trials_per_cycle=trials_per_cycle, n_restarts=n_restarts, epsilon=epsilon,
                         density=density, categories=categories, n_bins=n_bins, handle_unknown=handle_unknown,
                         time_limit=time_limit, memory_limit=memory_limit, random_state=random_state,
                         verbose=verbose)
