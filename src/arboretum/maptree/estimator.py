"""``MAPTreeClassifier``: the certified MAP tree of the Bayesian CART posterior."""

from __future__ import annotations

import sys
import time
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from ..bayes import ChipmanPrior, log_posterior, validate_rho
from ..data import (
    check_binary_features,
    check_classification_targets_encoded,
    check_int,
    check_positive_number,
)
from .incumbents import cart_candidates, tree_splits
from .search import AndOrSearch

__all__ = ["MAPTreeClassifier"]


class MAPTreeClassifier(ClassifierMixin, BaseEstimator):
    """Maximum-a-posteriori decision tree under the Bayesian CART posterior (MAPTree).

    Finds the tree ``T`` maximising ``P(T | X, y)`` under Chipman, George &
    McCulloch's (1998) prior, where a node at depth ``d`` splits with
    probability ``alpha * (1 + d) ** -beta`` on a feature drawn uniformly among
    those that split its samples non-trivially, and each leaf's class
    probabilities have a Dirichlet(``rho``) prior that is integrated out
    (Sullivan, Tiwari & Thrun, "MAPTree", 2023).  The search is an AND/OR
    best-first search with the Perfect Split heuristic; when it completes, the
    tree is *certified* optimal (``optimal_ is True``).  When a limit stops it
    first, it returns the best tree found so far together with an upper bound on
    the log posterior of any tree (``log_posterior_bound_``).

    Features must be binary (0/1).

    Parameters
    ----------
    alpha : float, default=0.95
        Split probability at the root, in (0, 1].
    beta : float, default=0.5
        Decay of the split probability with depth, >= 0.
    rho : float or sequence of float, default=(2.5, 2.5)
        Dirichlet prior of the leaves, one positive value per class in the
        order of ``classes_`` (a scalar means the same value for every class).
        For two classes this is the Beta prior; the paper writes it
        ``(rho^1, rho^0)``, label 1 first, while here ``rho[0]`` goes with
        ``classes_[0]``.
    max_expansions : int or None, default=None
        Stop after this many node expansions.
    time_limit : float or None, default=None
        Stop after this many seconds of search (checked between small chunks of
        expansions, so it is honoured to within a few percent).
    memory_limit : float or None, default=None
        Cap, in MiB, on the memory of the search graph; the search stops
        instead of growing past it.
    initial_trees : "cart", None or list of Tree, default="cart"
        Candidate trees put into the search graph before the best-first search
        starts (:mod:`arboretum.maptree.incumbents`): the answer is then never
        worse than the best pruning of any of them, which matters when a limit
        stops the search early.  "cart" uses CART trees (Gini and entropy,
        depths 2 to 6 and unlimited); a list gives your own trees with binary
        splits; None starts from the root alone, as in the paper.  The optimum
        and the certificate do not depend on this.
    verbose : int, default=0
        If > 0, print the bounds about once a second while searching.

    Attributes
    ----------
    tree_ : arboretum.tree.Tree
        The returned tree; leaves hold training class counts and the posterior
        mean class probabilities ``(c + rho) / (n + sum(rho))``.
    log_posterior_ : float
        ``log P(tree_, y | X)`` (unnormalised log posterior), recomputed from the tree.
    log_posterior_bound_ : float
        No tree has a higher log posterior than this (``-LB`` at the root).
    optimal_ : bool
        True when the search completed: ``tree_`` is a MAP tree.
    gap_ : float
        ``log_posterior_bound_ - log_posterior_`` (0 when certified).
    stop_reason_ : str
        "optimal", "max_expansions", "time_limit" or "memory_limit".
    n_expansions_, n_or_nodes_, n_and_nodes_ : int
        Search effort and size of the explored graph.
    search_time_ : float
        Seconds spent in the search (numba compilation happens once per
        machine, on first use, and is not included).
    peak_memory_ : int
        Bytes held by the search graph at its largest.
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` had string column names.

    Examples
    --------
    >>> from arboretum import MAPTreeClassifier
    >>> from arboretum.datasets import load_dataset
    >>> data = load_dataset("zoo-1")
    >>> clf = MAPTreeClassifier().fit(data.data, data.target)
    >>> clf.optimal_, round(clf.log_posterior_, 3)
    (True, -19.918)
    """

    def __init__(
        self,
        alpha: float = 0.95,
        beta: float = 0.5,
        rho=(2.5, 2.5),
        max_expansions: int | None = None,
        time_limit: float | None = None,
        memory_limit: float | None = None,
        initial_trees="cart",
        verbose: int = 0,
    ) -> None:
        self.alpha = alpha
        self.beta = beta
        self.rho = rho
        self.max_expansions = max_expansions
        self.time_limit = time_limit
        self.memory_limit = memory_limit
        self.initial_trees = initial_trees
        self.verbose = verbose

    # -- validation ------------------------------------------------------------------------
    def _check_params(self, n_classes: int) -> np.ndarray:
        """Validate the parameters; return ``rho`` as one value per class."""
        ChipmanPrior(self.alpha, self.beta)  # raises ValueError naming alpha or beta
        rho = validate_rho(self.rho, n_classes)
        if self.max_expansions is not None:
            check_int(self.max_expansions, "max_expansions", minimum=0)
        for name in ("time_limit", "memory_limit"):
            check_positive_number(getattr(self, name), name, allow_none=True)
        check_int(self.verbose, "verbose", minimum=0)
        return rho

    def _candidates(self, X: np.ndarray, y: np.ndarray) -> list:
        if self.initial_trees is None:
            return []
        if isinstance(self.initial_trees, str):
            if self.initial_trees != "cart":
                raise ValueError(
                    f"initial_trees must be 'cart', None or a list of Tree; got {self.initial_trees!r}"
                )
            return cart_candidates(X, y)
        return [tree_splits(t, X.shape[1]) for t in self.initial_trees]

    def _validate_X(self, X, reset: bool) -> np.ndarray:
        X = validate_data(self, X, reset=reset, dtype=None, ensure_all_finite=True)
        return check_binary_features(X, estimator_name=type(self).__name__)

    # -- fitting ---------------------------------------------------------------------------
    def fit(self, X, y) -> "MAPTreeClassifier":
        """Search for the MAP tree of ``(X, y)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Binary (0/1 or boolean) features.
        y : array-like of shape (n_samples,)
            Class labels (at least two distinct values).

        Returns
        -------
        self : MAPTreeClassifier
        """
        X, y = validate_data(self, X, y, dtype=None, ensure_all_finite=True, reset=True)
        y_enc, classes = check_classification_targets_encoded(
            y, estimator_name=type(self).__name__
        )
        X = check_binary_features(X, estimator_name=type(self).__name__)
        rho = self._check_params(len(classes))
        self.classes_ = classes

        search = AndOrSearch(X, y_enc, len(classes), self.alpha, self.beta, rho)
        callback = None
        if self.verbose:
            def callback(s: AndOrSearch) -> None:
                print(
                    f"[MAPTree] expansions={s.n_expansions_:,} log posterior in "
                    f"[{-s.upper_bound:.4f}, {-s.lower_bound:.4f}] "
                    f"memory={s.nbytes / 2**20:.0f} MiB",
                    file=sys.stderr,
                )
        t_seed = time.perf_counter()
        for splits in self._candidates(X, y_enc):
            search.seed(splits, max_expansions=self.max_expansions)
        time_limit = self.time_limit
        if time_limit is not None:
            time_limit = max(0.0, time_limit - (time.perf_counter() - t_seed))
        result = search.run(
            max_expansions=self.max_expansions,
            time_limit=time_limit,
            memory_limit=None if self.memory_limit is None else int(self.memory_limit * 2**20),
            callback=callback,
        )
        names = list(self.feature_names_in_) if hasattr(self, "feature_names_in_") else None
        self.tree_ = search.solution(classes=self.classes_, feature_names=names)
        self.log_posterior_ = float(
            log_posterior(self.tree_, X, y_enc, alpha=self.alpha, beta=self.beta, rho=rho)
        )
        self.log_posterior_bound_ = float(-result.lower_bound)
        self.optimal_ = bool(result.optimal)
        self.gap_ = 0.0 if self.optimal_ else max(0.0, self.log_posterior_bound_ - self.log_posterior_)
        self.stop_reason_ = result.stop_reason
        self.n_expansions_ = result.n_expansions
        self.n_or_nodes_ = result.n_or_nodes
        self.n_and_nodes_ = result.n_and_nodes
        self.search_time_ = time.perf_counter() - t_seed
        self.peak_memory_ = result.peak_bytes
        self.rho_ = rho
        if self.verbose:
            callback(search)
        return self

    # -- prediction ------------------------------------------------------------------------
    def predict_proba(self, X) -> np.ndarray:
        """Posterior mean class probabilities of the leaf each sample reaches."""
        check_is_fitted(self)
        return self.tree_.predict_proba(self._validate_X(X, reset=False))

    def predict(self, X) -> np.ndarray:
        """Most probable class of the leaf each sample reaches (ties: first class)."""
        check_is_fitted(self)
        return self.tree_.predict(self._validate_X(X, reset=False))

    def apply(self, X) -> np.ndarray:
        """Index (in ``tree_``) of the leaf each sample reaches."""
        check_is_fitted(self)
        return self.tree_.apply(self._validate_X(X, reset=False))

    def export_text(self, feature_names=None, **kwargs) -> str:
        """The fitted tree as indented text (see :meth:`arboretum.tree.Tree.export_text`)."""
        check_is_fitted(self)
        return self.tree_.export_text(feature_names=feature_names, **kwargs)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = True
        return tags

