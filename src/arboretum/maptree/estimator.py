"""``MAPTreeClassifier`` and ``MAPTreeRegressor``: certified MAP trees of the Bayesian CART posterior."""

from __future__ import annotations

import math
import sys
import time
from typing import Callable

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, clone
from sklearn.utils.validation import check_is_fitted, validate_data

from ..bayes import (
    DEFAULT_PRIOR_KAPPA,
    DEFAULT_PRIOR_SHAPE,
    ChipmanPrior,
    NIGPrior,
    log_posterior,
    log_posterior_regression,
    validate_rho,
)
from ..data import (
    Binarizer,
    _is_dataframe,
    _is_missing,
    _is_number,
    check_binary_features,
    check_classification_targets_encoded,
    check_int,
    check_positive_number,
)
from ..tree import BINARY, CATEGORY, LEAF, THRESHOLD, Tree, TreeBuilder
from .incumbents import cart_candidates, cart_regression_candidates, tree_splits
from .search import AndOrSearch, RegressionSearch, SearchResult

__all__ = ["MAPTreeClassifier", "MAPTreeRegressor"]


class _MAPTreeBase(BaseEstimator):
    """What the MAPTree estimators share: parameter checks, binarisation, the search driver
    (probe, seeding, limits, progress), the rewrite of the search tree on the raw columns,
    the fitted attributes, ``apply`` and ``export_text``.

    A subclass sets the task-specific parts: the target and leaf-prior checks,
    the search (:class:`AndOrSearch` or :class:`RegressionSearch`), the CART
    candidates, the log posterior of the returned tree and ``_tree_kind``.
    """

    # -- validation ------------------------------------------------------------------------
    def _check_common_params(self) -> None:
        """Validate the parameters every MAPTree estimator has."""
        ChipmanPrior(self.alpha, self.beta)  # raises ValueError naming alpha or beta
        if self.max_expansions is not None:
            check_int(self.max_expansions, "max_expansions", minimum=0)
        for name in ("time_limit", "memory_limit"):
            check_positive_number(getattr(self, name), name, allow_none=True)
        check_int(self.verbose, "verbose", minimum=0)
        if not (isinstance(self.strategy, str) and self.strategy in STRATEGIES):
            allowed = ", ".join(map(repr, STRATEGIES))
            raise ValueError(f"strategy must be one of {allowed}; got {self.strategy!r}")
        if self.binarizer is not None and not isinstance(self.binarizer, Binarizer):
            raise TypeError(
                f"binarizer must be an arboretum.data.Binarizer or None; got {self.binarizer!r} "
                f"({type(self.binarizer).__name__})"
            )

    def _binarize_mode(self) -> str:
        """"auto", "always" or "never" from the ``binarize`` parameter."""
        b = self.binarize
        if isinstance(b, str) and b in ("auto", "always"):
            return b
        if isinstance(b, (bool, np.bool_)):
            return "always" if b else "never"
        if b is None:
            return "never"
        raise ValueError(f"binarize must be 'auto', True or 'always', False or None; got {b!r}")

    def _user_trees(self, n_features: int) -> list:
        """Split functions of the user's ``initial_trees`` (validated); [] for "cart" and None."""
        if self.initial_trees is None:
            return []
        if isinstance(self.initial_trees, str):
            if self.initial_trees != "cart":
                raise ValueError(
                    f"initial_trees must be 'cart', None or a list of Tree; got {self.initial_trees!r}"
                )
            return []  # built only if a short probe does not certify (see _run_search)
        return [tree_splits(t, n_features) for t in self.initial_trees]

    def _validate_X(self, X, reset: bool) -> np.ndarray:
        """The matrix ``tree_`` works on: binary ``X``, or the encoded raw ``X``."""
        X_raw = X
        X = validate_data(self, X, reset=reset, dtype=None, ensure_all_finite=False)
        if getattr(self, "binarizer_", None) is not None:
            return self.binarizer_._encode(X_raw, check_names=False)
        return check_binary_features(X, estimator_name=type(self).__name__)

    def _tree_kind(self) -> dict:
        """Keyword arguments of :class:`TreeBuilder` that fix the task of ``tree_``."""
        raise NotImplementedError

    def _raw_tree(self, search_tree: Tree, names: list[str] | None) -> Tree:
        """Rewrite the search tree's BINARY splits on binarised columns as raw splits.

        The search sends binary value 0 left and 1 right.  A ``x <= t`` column
        (THRESHOLD) or ``x == c`` column (CATEGORY) has value 1 on the *left*
        branch of its raw split, so those nodes swap their children; 0/1
        columns keep a BINARY split on the raw column.  Node ids are kept.
        """
        t = search_tree
        b = TreeBuilder(self.n_features_in_, feature_names=names, **self._tree_kind())
        for i in range(t.n_nodes):
            b.add_node(t.counts[i], t.value[i], int(t.depth[i]))
        for i in np.flatnonzero(t.split_kind != LEAF).tolist():
            s = self.binarizer_.splits_[int(t.feature[i])]
            zero, one = int(t.children_left[i]), int(t.children_right[i])
            if s.kind == BINARY:
                b.set_split(i, BINARY, s.column, 0.5, zero, one)
            elif s.kind == THRESHOLD:
                b.set_split(i, THRESHOLD, s.column, s.threshold, one, zero)
            else:
                b.set_split(i, CATEGORY, s.column, None, one, zero, categories=s.categories)
        return b.build()

    # -- fitting (shared steps) ----------------------------------------------------------------
    @staticmethod
    def _drop_zero_weights(sample_weight, X, X_raw, y):
        """Validate integer weights and leave out the samples of weight 0 (before binarisation)."""
        if sample_weight is None:
            return None, X, X_raw, y
        weights = _check_integer_weights(sample_weight, X.shape[0])
        keep = np.flatnonzero(weights > 0)
        if keep.size < X.shape[0]:
            X, y, weights = X[keep], y[keep], weights[keep]
            X_raw = X_raw.iloc[keep] if _is_dataframe(X_raw) else X
        return weights, X, X_raw, y

    def _use_as_is(self, X_raw, X: np.ndarray, mode: str) -> tuple[np.ndarray, bool]:
        """Whether ``X`` is used as it is (then checked to be binary): ``(X, as_is)``."""
        as_is = mode == "never" or (mode == "auto" and _is_binary(X_raw, X))
        if as_is:
            X = check_binary_features(X, estimator_name=type(self).__name__)
        return X, as_is

    def _binarized(self, X_raw, X: np.ndarray, as_is: bool) -> tuple[np.ndarray, list | None, list | None]:
        """The binary search features; sets ``binarizer_``.

        Returns ``(X_search, raw column names or None, search feature names or None)``.
        """
        binarizer = None
        if not as_is:
            binarizer = clone(self.binarizer) if self.binarizer is not None else Binarizer()
            X = binarizer.fit_transform(X_raw)
        self.binarizer_ = binarizer
        names = list(self.feature_names_in_) if hasattr(self, "feature_names_in_") else None
        search_names = names if binarizer is None else list(binarizer.get_feature_names_out())
        if X.shape[1] == 0:  # every raw column is constant: a single leaf, no valid split
            X = np.zeros((X.shape[0], 1), dtype=np.uint8)
            search_names = ["(constant)"]
        return X, names, search_names

    def _run_search(
        self, search: AndOrSearch, n_features: int, cart: Callable[[], list]
    ) -> tuple[SearchResult, float]:
        """Seed the user's trees, probe, seed the CART candidates ``cart()`` if needed, search.

        Returns the search result and the start time.
        """
        callback = self._progress if self.verbose else None
        t_start = time.perf_counter()
        memory_limit = None if self.memory_limit is None else int(self.memory_limit * 2**20)
        # Easy problems are certified within a few expansions: only pay for the
        # candidate trees (a dozen CART fits) when a short probe did not finish.
        for splits in self._user_trees(n_features):
            search.seed(splits, max_expansions=self.max_expansions, memory_limit=memory_limit)
        probe = PROBE_EXPANSIONS if self.max_expansions is None else min(PROBE_EXPANSIONS, self.max_expansions)
        focus = self.strategy == "focused"
        result = search.run(
            max_expansions=probe, time_limit=self.time_limit, memory_limit=memory_limit, focus=focus
        )
        if not result.optimal and result.stop_reason == "max_expansions":
            if isinstance(self.initial_trees, str):
                for splits in cart():
                    search.seed(splits, max_expansions=self.max_expansions, memory_limit=memory_limit)
            time_limit = self.time_limit
            if time_limit is not None:
                time_limit = max(0.0, time_limit - (time.perf_counter() - t_start))
            result = search.run(
                max_expansions=self.max_expansions,
                time_limit=time_limit,
                memory_limit=memory_limit,
                callback=callback,
                focus=focus,
            )
        return result, t_start

    def _progress(self, s: AndOrSearch) -> None:
        print(
            f"[MAPTree] expansions={s.n_expansions_:,} log posterior in "
            f"[{-s.upper_bound:.4f}, {-s.lower_bound:.4f}] "
            f"memory={s.nbytes / 2**20:.0f} MiB",
            file=sys.stderr,
        )

    def _store(
        self, search: AndOrSearch, result: SearchResult, t_start: float, names, search_names,
        log_post: Callable[[Tree], float], **solution_kw,
    ) -> None:
        """Set the fitted attributes from a finished search."""
        self.search_tree_ = search.solution(feature_names=search_names, **solution_kw)
        self.tree_ = self.search_tree_ if self.binarizer_ is None else self._raw_tree(self.search_tree_, names)
        self.log_posterior_ = float(log_post(self.search_tree_))
        self.log_posterior_bound_ = float(-result.lower_bound)
        self.optimal_ = bool(result.optimal)
        self.gap_ = 0.0 if self.optimal_ else max(0.0, self.log_posterior_bound_ - self.log_posterior_)
        self.stop_reason_ = result.stop_reason
        self.n_expansions_ = result.n_expansions
        self.n_probes_ = result.n_probes
        self.n_or_nodes_ = result.n_or_nodes
        self.n_and_nodes_ = result.n_and_nodes
        self.search_time_ = time.perf_counter() - t_start
        self.peak_memory_ = result.peak_bytes
        if self.verbose:
            self._progress(search)

    # -- prediction ------------------------------------------------------------------------
    def apply(self, X) -> np.ndarray:
        """Index (in ``tree_``) of the leaf each sample reaches."""
        check_is_fitted(self)
        return self.tree_.apply(self._validate_X(X, reset=False))

    def export_text(
        self, feature_names=None, decimals: int = 3, show_counts: bool = True
    ) -> str:
        """The fitted tree as indented text.

        Without binarisation this is :meth:`arboretum.tree.Tree.export_text`
        of ``tree_``.  With it, the splits read on the raw columns, with
        thresholds printed exactly and categories by their labels::

            |--- petal length (cm) <= 2.45
            |   |--- class: setosa  (counts [50, 0, 0], p=0.913)
            |--- petal length (cm) >  2.45
            ...
            |--- colour == red
            ...

        Regression leaves read ``value: 152.133  (n=42)``: the posterior mean
        of the leaf mean and the (weighted) number of training samples.

        Parameters
        ----------
        feature_names : list of str, optional
            Names of the (raw) columns; default ``feature_names_in_``, else
            ``x[j]`` (binary input) or ``x0, x1, ...`` (binarised input).
        decimals : int, default=3
            Decimal places of counts and probabilities (and of thresholds
            without binarisation).
        show_counts : bool, default=True
            Show the training counts (and, for classification, the predicted
            probability) at leaves.

        Returns
        -------
        text : str
        """
        check_is_fitted(self)
        if self.binarizer_ is None:
            return self.tree_.export_text(
                feature_names=feature_names, decimals=decimals, show_counts=show_counts
            )
        if feature_names is None and self.tree_.feature_names is not None:
            feature_names = self.tree_.feature_names
        t = self.tree_

        def condition(i: int) -> tuple[str, str]:
            return self.binarizer_.condition_text(
                int(t.feature[i]), int(t.split_kind[i]), float(t.threshold[i]),
                t.categories.get(i, ()), feature_names,
            )

        return t.export_text(
            feature_names=feature_names, decimals=decimals, show_counts=show_counts,
            condition=condition,
        )



class MAPTreeClassifier(ClassifierMixin, _MAPTreeBase):
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

    The search works on binary (0/1) features.  Other features (numbers,
    categories, strings; numpy arrays or pandas DataFrames) are binarised
    first by a :class:`~arboretum.data.Binarizer` (``binarize="auto"``): the
    search runs on its questions ``"age <= 42.5"``, ``"colour == red"``, and
    the returned tree is rewritten as a tree on the raw columns, so
    ``predict`` takes the same raw ``X`` as ``fit`` and ``export_text`` shows
    ``age <= 42.5``.

    Parameters
    ----------
    alpha : float, default=0.95
        Split probability at the root, in (0, 1].
    beta : float, default=0.5
        Decay of the split probability with depth, >= 0.
    rho : float or sequence of float, default=2.5
        Dirichlet prior of the leaves, one positive value per class in the
        order of ``classes_``; a scalar means the same value for every class,
        so the default works for any number of classes (Beta(2.5, 2.5) for two).
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
        starts (:mod:`arboretum.maptree.incumbents`), once a first 32
        expansions have not certified the answer: the answer is then never
        worse than the best pruning of any of them, which matters when a limit
        stops the search early.  "cart" uses CART trees (Gini and entropy,
        depths 2 to 6 and unlimited); a list gives your own trees with binary
        splits; None starts from the root alone, as in the paper.  The optimum
        and the certificate do not depend on this.  When ``X`` is binarised,
        user trees split on the binarised columns.
    strategy : {"focused", "best-first"}, default="focused"
        Order of the search.  "best-first" is the paper's: every descent
        starts at the root.  "focused" runs rounds of best-first searches
        rooted at the subproblems of the current best tree, smallest first,
        then at the root, which gets half of each round's work; budgets
        double every round (see :meth:`AndOrSearch.run`).  Both certify the
        same optimum; "focused" finds far better trees under a time limit
        (mushroom at 60 s: log posterior -125.8 instead of -142.5), but its
        bound tightens more slowly, since only the root's half of the work
        raises it (60 s bounds up to 7 nats weaker on the CP4IM datasets not
        certified by then; lymph certified in 77 s instead of 66 s).  Use
        "best-first" when the certificate matters more than the tree found
        within a limit.
    binarize : "auto", True, "always", False or None, default="auto"
        "auto": use ``X`` as it is when every value is 0 or 1 (or boolean),
        else binarise it.  True or "always": always binarise (a 0/1 column
        stays one binary column, so only the tree's form changes).  False or
        None: ``X`` must be binary, as before; anything else is an error.
    binarizer : Binarizer or None, default=None
        How to binarise: an unfitted :class:`~arboretum.data.Binarizer`
        (cloned at fit), e.g. ``Binarizer(n_thresholds=4, categorical=["zip"])``;
        None means ``Binarizer()`` (8 quantile thresholds per numeric column,
        one-hot categories).  Its parameters can be tuned through
        ``binarizer__n_thresholds`` and the like once one is given.  Unused when
        ``X`` is not binarised.
    verbose : int, default=0
        If > 0, print the bounds about once a second while searching.

    Attributes
    ----------
    tree_ : arboretum.tree.Tree
        The returned tree; leaves hold training class counts and the posterior
        mean class probabilities ``(c + rho) / (n + sum(rho))``.  When ``X``
        was binarised it splits the raw columns (``THRESHOLD`` splits ``x <=
        t``, ``CATEGORY`` splits on category codes, ``BINARY`` splits on 0/1
        columns) and works on the *encoded* raw matrix
        ``binarizer_.encode(X)`` (categories as integer codes); otherwise it
        is the search tree on the binary ``X``.
    search_tree_ : arboretum.tree.Tree
        The tree as the search found it, with BINARY splits on the columns of
        ``binarizer_.transform(X)`` (the same object as ``tree_`` when ``X``
        was not binarised).  Node ids are the same as in ``tree_``.
    binarizer_ : Binarizer or None
        The fitted binarizer, or None when ``X`` was used as it is.
    log_posterior_ : float
        ``log P(tree_, y | X)`` (unnormalised log posterior), recomputed from the
        tree.  When ``X`` was binarised this is the posterior of
        ``search_tree_`` on the binarised problem ``binarizer_.transform(X)``:
        the prior counts the binary columns as the features.
    log_posterior_bound_ : float
        No tree has a higher log posterior than this (``-LB`` at the root).
    optimal_ : bool
        True when the search completed: ``tree_`` is a MAP tree.
    gap_ : float
        ``log_posterior_bound_ - log_posterior_`` (0 when certified).
    stop_reason_ : str
        "optimal", "max_expansions", "time_limit" or "memory_limit".
    n_expansions_, n_probes_, n_or_nodes_, n_and_nodes_ : int
        Search effort (expansions, and bound probes of nodes not expanded
        yet) and size of the explored graph.
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
        rho=2.5,
        max_expansions: int | None = None,
        time_limit: float | None = None,
        memory_limit: float | None = None,
        initial_trees="cart",
        strategy: str = "focused",
        binarize="auto",
        binarizer: Binarizer | None = None,
        verbose: int = 0,
    ) -> None:
        self.alpha = alpha
        self.beta = beta
        self.rho = rho
        self.max_expansions = max_expansions
        self.time_limit = time_limit
        self.memory_limit = memory_limit
        self.initial_trees = initial_trees
        self.strategy = strategy
        self.binarize = binarize
        self.binarizer = binarizer
        self.verbose = verbose

    def _check_params(self, n_classes: int) -> np.ndarray:
        """Validate the parameters; return ``rho`` as one value per class."""
        self._check_common_params()
        return validate_rho(self.rho, n_classes)

    def _tree_kind(self) -> dict:
        return {"classes": self.classes_}

    def fit(self, X, y, sample_weight=None) -> "MAPTreeClassifier":
        """Search for the MAP tree of ``(X, y)``.

        Parameters
        ----------
        X : array-like or pandas DataFrame of shape (n_samples, n_features)
            Binary (0/1 or boolean) features, or, unless ``binarize`` is False,
            any numbers, booleans, strings or categories without missing values.
        y : array-like of shape (n_samples,)
            Class labels (at least two distinct values).
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative **integer** weights.  A sample of weight ``w`` counts
            as ``w`` copies of itself, which is exactly the Bayesian CART
            posterior of the data with that row repeated (the prior depends
            only on which distinct rows a node holds; the leaf likelihoods see
            weighted class counts).  Samples of weight 0 are left out, before
            binarisation too.  Fractional weights are refused: the
            Beta/Dirichlet likelihood counts samples and has no such reading.

        Returns
        -------
        self : MAPTreeClassifier
        """
        mode = self._binarize_mode()
        X_raw = X
        X, y = validate_data(self, X, y, dtype=None, ensure_all_finite=False, reset=True)
        y_enc, classes = check_classification_targets_encoded(
            y, estimator_name=type(self).__name__
        )
        weights, X, X_raw, y_enc = self._drop_zero_weights(sample_weight, X, X_raw, y_enc)
        X, as_is = self._use_as_is(X_raw, X, mode)
        rho = self._check_params(len(classes))
        X, names, search_names = self._binarized(X_raw, X, as_is)
        self.classes_ = classes

        search = AndOrSearch(
            X, y_enc, len(classes), self.alpha, self.beta, rho, sample_weight=weights
        )
        result, t_start = self._run_search(search, X.shape[1], lambda: cart_candidates(X, y_enc))
        self.rho_ = rho
        self._store(
            search, result, t_start, names, search_names,
            lambda tree: log_posterior(
                tree, X, y_enc, alpha=self.alpha, beta=self.beta, rho=rho, sample_weight=weights
            ),
            classes=self.classes_,
        )
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

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = True
        return tags


class MAPTreeRegressor(RegressorMixin, _MAPTreeBase):
    """Maximum-a-posteriori regression tree under the Bayesian CART posterior (certified).

    The regression sibling of :class:`MAPTreeClassifier`: the same Chipman,
    George & McCulloch (1998) prior over trees (a node at depth ``d`` splits
    with probability ``alpha * (1 + d) ** -beta`` on a feature drawn
    uniformly among those that split its samples non-trivially), and leaves
    with a conjugate **normal-inverse-gamma** prior, integrated out:
    within a leaf ``y_i | mu, s2 ~ N(mu, s2)``, ``mu | s2 ~ N(prior_mean,
    s2 / prior_kappa)``, ``s2 ~ InvGamma(prior_shape, prior_scale)``, each leaf
    with its own ``(mu, s2)``.  The AND/OR best-first search of MAPTree finds
    the tree maximising ``p(T | X, y)``; when it completes the tree is
    *certified* optimal (``optimal_``).  Its admissible bound is proved in
    :func:`arboretum.bayes.nig_bound_tables`.

    Features are handled as in :class:`MAPTreeClassifier`: binary ``X`` is
    used as it is, anything else is binarised by a
    :class:`~arboretum.data.Binarizer` and the returned tree reads (and
    predicts) on the raw columns.

    Parameters
    ----------
    alpha : float, default=0.95
        Split probability at the root, in (0, 1].
    beta : float, default=0.5
        Decay of the split probability with depth, >= 0.
    prior_mean : float or None, default=None
        Prior mean ``mu0`` of a leaf mean; None: the (weighted) mean of ``y``.
    prior_kappa : float, default=1/3
        Prior precision of a leaf mean in units of the noise (``mu`` has prior
        variance ``s2 / prior_kappa``, so leaf means may lie about
        ``sqrt(3)`` noise standard deviations from ``prior_mean``); > 0.
        Dimensionless, so it needs no rescaling with ``y``.
    prior_shape : float, default=1.5
        Shape of the inverse-gamma prior of a leaf's noise variance (``nu =
        3`` degrees of freedom); > 0.
    prior_scale : float or None, default=None
        Scale of that inverse-gamma prior, in units of ``y`` squared; None:
        ``var(y) * Q^{-1}(prior_shape, 0.9)``, which puts prior probability 0.9
        on a noise variance below ``var(y)`` (BART's calibration, Chipman,
        George & McCulloch 2010); ``var(y) = 1`` for a constant ``y``.
        With the data-derived defaults of ``prior_mean`` and ``prior_scale``
        the fitted tree does not change when ``y`` is replaced by ``c * y + s``
        (the log posterior of every tree shifts by ``-n log|c|``).
    max_expansions : int or None, default=None
        Stop after this many node expansions.
    time_limit : float or None, default=None
        Stop after this many seconds of search.  Real-valued targets rarely
        certify on more than a few dozen samples (the bound cannot see how the
        features will separate the targets), so set a limit for real data.
    memory_limit : float or None, default=None
        Cap, in MiB, on the memory of the search graph.
    initial_trees : "cart", None or list of Tree, default="cart"
        Candidate trees put into the search graph before the best-first
        search (after a first 32 expansions did not certify): "cart" uses
        CART regression trees (squared and absolute error, depths 2 to 6 and
        unlimited), a list your own trees with binary splits on the (binarised)
        columns, None none.  The optimum and the certificate do not depend on it.
    strategy : {"focused", "best-first"}, default="focused"
        Order of the search, as in :class:`MAPTreeClassifier`.
    binarize : "auto", True, "always", False or None, default="auto"
        As in :class:`MAPTreeClassifier`.
    binarizer : Binarizer or None, default=None
        As in :class:`MAPTreeClassifier` (default ``Binarizer()``: up to 8
        quantile thresholds per numeric column).
    verbose : int, default=0
        If > 0, print the bounds about once a second while searching.

    Attributes
    ----------
    tree_ : arboretum.tree.Tree
        The returned regression tree; leaves hold the (weighted) number of
        training samples (``counts``) and the posterior mean of the leaf mean,
        ``(prior_kappa * prior_mean + sum y) / (prior_kappa + n)``
        (``value[:, 0]``), which ``predict`` returns.  It splits the raw
        (encoded) columns when ``X`` was binarised.
    search_tree_ : arboretum.tree.Tree
        The tree on the binary search features (node ids as in ``tree_``).
    binarizer_ : Binarizer or None
    prior_ : arboretum.bayes.NIGPrior
        The leaf prior used, with the data-derived defaults filled in.
    log_posterior_ : float
        ``log p(tree_, y | X)``, the unnormalised log posterior (a log
        *density* in ``y``: it depends on the units of ``y`` and can be
        positive), recomputed from the tree.
    log_posterior_bound_ : float
        No tree has a higher log posterior than this.
    optimal_ : bool
        True when the search completed: ``tree_`` is a MAP tree.
    gap_ : float
        ``log_posterior_bound_ - log_posterior_`` (0 when certified).
    stop_reason_ : str
        "optimal", "max_expansions", "time_limit" or "memory_limit".
    n_expansions_, n_probes_, n_or_nodes_, n_and_nodes_ : int
        As in :class:`MAPTreeClassifier`.
    search_time_ : float
    peak_memory_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` had string column names.

    Examples
    --------
    >>> import numpy as np
    >>> from arboretum import MAPTreeRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.integers(0, 5, size=(60, 2))
    >>> y = np.where(X[:, 0] >= 2, 3.0, -1.0) + 0.1 * rng.normal(size=60)
    >>> reg = MAPTreeRegressor().fit(X, y)
    >>> print(reg.export_text(), end="")
    |--- x0 <= 1.5
    |   |--- value: -0.973  (n=21)
    |--- x0 >  1.5
    |   |--- value: 3.009  (n=39)
    >>> reg.optimal_
    True
    """

    def __init__(
        self,
        alpha: float = 0.95,
        beta: float = 0.5,
        prior_mean: float | None = None,
        prior_kappa: float = DEFAULT_PRIOR_KAPPA,
        prior_shape: float = DEFAULT_PRIOR_SHAPE,
        prior_scale: float | None = None,
        max_expansions: int | None = None,
        time_limit: float | None = None,
        memory_limit: float | None = None,
        initial_trees="cart",
        strategy: str = "focused",
        binarize="auto",
        binarizer: Binarizer | None = None,
        verbose: int = 0,
    ) -> None:
        self.alpha = alpha
        self.beta = beta
        self.prior_mean = prior_mean
        self.prior_kappa = prior_kappa
        self.prior_shape = prior_shape
        self.prior_scale = prior_scale
        self.max_expansions = max_expansions
        self.time_limit = time_limit
        self.memory_limit = memory_limit
        self.initial_trees = initial_trees
        self.strategy = strategy
        self.binarize = binarize
        self.binarizer = binarizer
        self.verbose = verbose

    def _check_params(self) -> None:
        """Validate every parameter (ValueError naming it and its allowed values)."""
        self._check_common_params()
        _check_real_param(self.prior_mean, "prior_mean", positive=False, allow_none=True)
        _check_real_param(self.prior_kappa, "prior_kappa", positive=True)
        _check_real_param(self.prior_shape, "prior_shape", positive=True)
        _check_real_param(self.prior_scale, "prior_scale", positive=True, allow_none=True)

    def _tree_kind(self) -> dict:
        return {"task": "regression"}

    def fit(self, X, y, sample_weight=None) -> "MAPTreeRegressor":
        """Search for the MAP regression tree of ``(X, y)``.

        Parameters
        ----------
        X : array-like or pandas DataFrame of shape (n_samples, n_features)
            Binary features, or, unless ``binarize`` is False, any numbers,
            booleans, strings or categories without missing values.
        y : array-like of shape (n_samples,)
            Real targets (finite numbers).
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative **integer** weights: a weight ``w`` is exactly ``w``
            copies of the sample (in the leaf sums, in the data-derived prior
            defaults and in the CART candidates).  Samples of weight 0 are left
            out, before binarisation too; fractional weights are refused, and
            the weights may sum to at most ``10**7``.

        Returns
        -------
        self : MAPTreeRegressor
        """
        mode = self._binarize_mode()
        X_raw = X
        X, y = validate_data(self, X, y, dtype=None, ensure_all_finite=False, reset=True)
        y = _check_regression_target(y, type(self).__name__)
        weights, X, X_raw, y = self._drop_zero_weights(sample_weight, X, X_raw, y)
        if weights is not None and weights.sum() > MAX_REGRESSION_WEIGHT:
            raise ValueError(
                f"the weights sum to {weights.sum()}; MAPTreeRegressor supports at most "
                f"{MAX_REGRESSION_WEIGHT} (its bound tables are indexed by the total weight)"
            )
        X, as_is = self._use_as_is(X_raw, X, mode)
        self._check_params()
        prior = NIGPrior.from_data(
            y, weights, mean=self.prior_mean, kappa=self.prior_kappa, shape=self.prior_shape,
            scale=self.prior_scale,
        )
        X, names, search_names = self._binarized(X_raw, X, as_is)

        search = RegressionSearch(X, y, self.alpha, self.beta, prior, sample_weight=weights)
        result, t_start = self._run_search(
            search, X.shape[1], lambda: cart_regression_candidates(X, y, weights)
        )
        self.prior_ = prior
        self._store(
            search, result, t_start, names, search_names,
            lambda tree: log_posterior_regression(
                tree, X, y, alpha=self.alpha, beta=self.beta, prior=prior, sample_weight=weights
            ),
        )
        return self

    def predict(self, X) -> np.ndarray:
        """Posterior mean of the leaf mean of the leaf each sample reaches."""
        check_is_fitted(self)
        return self.tree_.predict(self._validate_X(X, reset=False))


def _check_real_param(value, name: str, *, positive: bool, allow_none: bool = False) -> float | None:
    """A finite real parameter (> 0 when ``positive``), else a ValueError naming it and its allowed values."""
    what = "a finite number > 0" if positive else "a finite number"
    if allow_none:
        what += " or None"
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be {what}; got {value!r} ({type(value).__name__})")
    x = float(value)
    if not math.isfinite(x) or (positive and not x > 0):
        raise ValueError(f"{name} must be {what}; got {value!r}")
    return x


def _check_regression_target(y, estimator_name: str) -> np.ndarray:
    """Real, finite, 1-D targets as float64 (a clear error for text or missing values)."""
    y = np.asarray(y)
    if y.dtype.kind not in "biuf":
        try:
            y = y.astype(np.float64)
        except (TypeError, ValueError):
            example = next((v for v in y.ravel().tolist() if not _is_number(v)), y.ravel()[0])
            raise ValueError(
                f"{estimator_name} needs real-valued targets y; got dtype {y.dtype} with the value "
                f"{example!r}. For class labels use MAPTreeClassifier."
            ) from None
    y = y.astype(np.float64).reshape(-1)
    bad = np.flatnonzero(~np.isfinite(y))
    if bad.size:
        raise ValueError(f"y contains NaN or infinity (first at index {int(bad[0])}: {y[bad[0]]})")
    return y


def _is_binary(X_raw, X: np.ndarray) -> bool:
    """Whether every value of ``X`` is 0, 1 or a boolean (and no column is categorical)."""
    if _is_dataframe(X_raw):
        import pandas as pd

        for dt in X_raw.dtypes:
            if isinstance(dt, pd.CategoricalDtype) or pd.api.types.is_complex_dtype(dt):
                return False
            if not (pd.api.types.is_bool_dtype(dt) or pd.api.types.is_numeric_dtype(dt)):
                return False
    kind = X.dtype.kind
    if kind == "b":
        return True
    if kind in "iuf":
        return bool(np.all((X == 0) | (X == 1)))
    if kind == "O":
        return all(_is_number(v) and not _is_missing(v) and v in (0, 1) for v in X.flat)
    return False


#: Expansions tried before the initial trees are added (see ``initial_trees``).
PROBE_EXPANSIONS = 32
#: Values of the ``strategy`` parameter (see MAPTreeClassifier).
STRATEGIES = ("focused", "best-first")

#: Largest total weight: the search tabulates log-gamma values up to it.
MAX_TOTAL_WEIGHT = 10**8
#: Largest total weight of MAPTreeRegressor (two float tables of that length).
MAX_REGRESSION_WEIGHT = 10**7


def _check_integer_weights(sample_weight, n_samples: int) -> np.ndarray:
    """Validate ``sample_weight``: finite, non-negative integers, not all zero."""
    try:
        w = np.asarray(sample_weight, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"sample_weight must be numbers; got {sample_weight!r}") from None
    if w.ndim != 1 or w.shape[0] != n_samples:
        raise ValueError(f"sample_weight must have shape ({n_samples},); got {w.shape}")
    bad = np.flatnonzero(~np.isfinite(w) | (w < 0) | (w != np.round(w)))
    if bad.size:
        i = int(bad[0])
        raise ValueError(
            f"sample_weight must hold non-negative integers (a weight w means w copies of the "
            f"sample in the Beta/Dirichlet leaf likelihood); got {w[i]!r} at index {i}"
        )
    if w.sum() <= 0:
        raise ValueError("sample_weight is zero for every sample")
    if w.sum() > MAX_TOTAL_WEIGHT:
        raise ValueError(f"the weights sum to {w.sum():.0f}; at most {MAX_TOTAL_WEIGHT} is supported")
    return w.astype(np.int64)
