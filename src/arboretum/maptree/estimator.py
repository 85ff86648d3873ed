"""``MAPTreeClassifier`` and ``MAPTreeRegressor``: certified MAP trees of the Bayesian CART posterior."""

from __future__ import annotations

import math
import numbers
import sys
from typing import Any, Callable

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.utils.validation import _num_samples, check_is_fitted

from ..base import DEFAULT_TIME_LIMIT, FitClock, TreeEstimator, constraints
from ..bayes import (
    DEFAULT_PRIOR_KAPPA,
    DEFAULT_PRIOR_SHAPE,
    TargetScaling,
    log_posterior,
    log_posterior_regression,
    validate_rho,
)
from ..binarizer import Binarizer
from ..data import (
    Check,
    Interval,
    Options,
    check_classification_targets_encoded,
    check_integer_weights,
    check_regression_targets,
)
from ..tree import Tree
from .history import HISTORY_DTYPE
from .incumbents import (
    CART_DEPTHS,
    Candidates,
    SplitFn,
    cart_candidates,
    cart_regression_candidates,
    tree_splits,
)
from .search import AndOrSearch, RegressionSearch, SearchResult

__all__ = ["MAPTreeClassifier", "MAPTreeRegressor"]

#: Expansions tried before the initial trees are added (see ``initial_trees``).
PROBE_EXPANSIONS = 32
#: Share of ``time_limit`` that seeding (user trees, fitting and seeding CART candidates) may use;
#: the search gets the rest.
SEED_SHARE = 0.5
#: A CART candidate is fitted only if this many times the previous fit's time still fits before the
#: end of the seeding share (the next candidate is as deep or one level deeper: on 50,000 x 160
#: binary features depth d + 1 took 1.2-1.6 times depth d).
CART_GROWTH = 2.0
#: Values of the ``strategy`` parameter (see MAPTreeClassifier).
STRATEGIES = ("focused", "best-first")
#: Largest total weight of MAPTreeRegressor (two float tables of that length).
MAX_REGRESSION_WEIGHT = 10**7


def _trees_ok(trees: Any) -> bool:
    return isinstance(trees, (list, tuple)) and all(isinstance(t, Tree) for t in trees)


#: Parameters every MAPTree estimator has.
_COMMON = ("alpha", "beta", "time_limit", "memory_limit", "binarize", "binarizer", "verbose")
_OWN: dict = {
    "max_depth": [Interval(numbers.Integral, 1, None), None],
    "max_expansions": [Interval(numbers.Integral, 0, None), None],
    "initial_trees": [Options(("cart",)), None, Check(_trees_ok, "a list of arboretum.Tree")],
    "strategy": [Options(STRATEGIES)],
}


class _MAPTreeBase(TreeEstimator):
    """What the MAPTree estimators share: seeding, the search driver (probe, CART seeds,
    limits, progress), the fitted attributes.

    A subclass sets the task-specific parts: the targets and leaf prior, the
    search (:class:`AndOrSearch` or :class:`RegressionSearch`), the CART
    candidates and the log posterior of the returned tree.
    """

    _predict_methods = ("map",)

    def _default_binarizer(self) -> Binarizer:
        """``Binarizer(strategy="boosting")``: the cuts a small boosted ensemble uses on the target.

        Measured against the quantile default (``benchmarks/step_functions.py``; 5-fold CV on iris,
        wine, breast cancer, diabetes): the real cuts of step functions are found, test scores match
        or beat CART at depths 2-4 where quantile thresholds lost 0.05-0.06, and with fewer, better
        candidates the searches certify far more often and faster.
        """
        return Binarizer(strategy="boosting")

    def _user_trees(self, n_features: int) -> list:
        """Split functions of the user's ``initial_trees``; [] for "cart" and None."""
        if self.initial_trees is None or isinstance(self.initial_trees, str):
            return []  # "cart" trees are built only if a short probe does not certify (see _run_search)
        return [tree_splits(t, n_features) for t in self.initial_trees]

    def _drop_zero_weights(self, sample_weight, X, y):
        """Validate integer weights and leave out the samples of weight 0 (before binarisation)."""
        if sample_weight is None:
            return None, X, y
        weights = check_integer_weights(sample_weight, y.shape[0])
        keep = np.flatnonzero(weights > 0)
        if keep.size < y.shape[0]:
            y, weights = y[keep], weights[keep]
            X = X.iloc[keep] if hasattr(X, "iloc") else np.asarray(X)[keep]
        return weights, X, y

    def _search_features(self, X, y, weights) -> tuple[np.ndarray, list | None]:
        """The 0/1 search matrix of training ``X`` and its column names (sets ``binarizer_``)."""
        Xb = self._fit_questions(X, y, weights)
        names = self._search_feature_names()
        if Xb.shape[1] == 0:  # every raw column is constant: a single leaf, no valid split
            Xb = np.zeros((Xb.shape[0], 1), dtype=np.uint8)
            names = ["(constant)"]
        return Xb, names

    def _run_search(
        self, search: AndOrSearch, n_features: int, cart: Callable[[], Candidates], clock: FitClock,
        score: Callable[[SplitFn], tuple[Tree, float]],
    ) -> SearchResult:
        """Seed the user's trees, probe, seed the CART candidates ``cart()`` if needed, search.

        Every stage watches the fit's ``clock`` and the memory limit.  Seeding
        (user trees and CART candidates, cheapest first) may use the first
        ``SEED_SHARE`` of ``time_limit``; the search gets the rest.  A
        candidate that a limit kept out of the graph is scored as it is
        (``score``), and the best of them is kept in ``self._fallback`` so the
        answer is never worse than any candidate (see :meth:`_store`).
        """
        callback = self._progress if self.verbose else None
        t_start = self._clock()
        memory_limit = None if self.memory_limit is None else int(self.memory_limit * 2**20)
        seed_end = clock.share_end(SEED_SHARE)
        self._fallback: tuple[float, Tree] | None = None
        for splits in self._user_trees(n_features):
            complete = search.seed(splits, max_expansions=self.max_expansions, memory_limit=memory_limit,
                                   deadline=seed_end)
            if not complete:
                self._keep_fallback(score(splits))
        # Easy problems are certified within a few expansions: only pay for the
        # candidate trees (a dozen CART fits) when a short probe did not finish.
        probe = PROBE_EXPANSIONS if self.max_expansions is None else min(PROBE_EXPANSIONS, self.max_expansions)
        focus = self.strategy == "focused"
        result = search.run(
            max_expansions=probe, time_limit=clock.remaining(), memory_limit=memory_limit, focus=focus
        )
        if not result.optimal:
            if isinstance(self.initial_trees, str):
                self._seed_cart(search, cart(), memory_limit, seed_end, score)
            result = search.run(
                max_expansions=self.max_expansions,
                time_limit=clock.remaining(),
                memory_limit=memory_limit,
                callback=callback,
                focus=focus,
            )
        self.search_time_ = self._clock() - t_start
        return result

    def _seed_cart(
        self, search: AndOrSearch, candidates: Candidates, memory_limit: int | None,
        seed_end: float | None, score: Callable[[SplitFn], tuple[Tree, float]],
    ) -> None:
        """Fit and seed the CART candidates, cheapest first, until ``seed_end``.

        The depth-2 candidates (the first of :data:`CART_DEPTHS`) are always
        fitted and, when a limit keeps them out of the graph, scored as they
        are, so even ``max_expansions=1`` or a tiny ``time_limit`` returns a
        tree at least as good as them.  A deeper candidate is fitted only when
        it is expected (``CART_GROWTH`` times the previous fit) to be done by
        ``seed_end``, and scored only before then.
        """
        last = 0.0
        for depth, fit in candidates:
            always = depth == CART_DEPTHS[0]
            t = self._clock()
            if not always and seed_end is not None and t + CART_GROWTH * last >= seed_end:
                break
            splits = fit()
            last = self._clock() - t
            complete = search.seed(splits, max_expansions=self.max_expansions, memory_limit=memory_limit,
                                   deadline=seed_end)
            if not complete and (always or seed_end is None or self._clock() < seed_end):
                self._keep_fallback(score(splits))

    def _keep_fallback(self, scored: tuple[Tree, float]) -> None:
        """Keep ``(search tree, log posterior)`` of a candidate if it is the best so far."""
        tree, lp = scored
        if self._fallback is None or lp > self._fallback[0]:
            self._fallback = (lp, tree)

    def _progress(self, s: AndOrSearch) -> None:
        print(
            f"[{type(self).__name__}] expansions={s.n_expansions_:,} log posterior in "
            f"[{-s.upper_bound:.4f}, {-s.lower_bound:.4f}] "
            f"memory={s.nbytes / 2**20:.0f} MiB",
            file=sys.stderr,
        )

    def _store(
        self, search: AndOrSearch, result: SearchResult, clock: FitClock, search_names,
        log_post: Callable[[Tree], float], log_shift: float = 0.0, **solution_kw,
    ) -> None:
        """Set the fitted attributes from a finished search.

        ``tree_`` is the search's incumbent, or the best candidate tree that a
        limit kept out of the graph (``self._fallback``, see
        :meth:`_run_search`) when that one is more probable.

        ``log_shift`` is added to every log posterior the search reports (its bound, its history)
        and to ``log_post``'s value: MAPTreeRegressor searches standardised targets, whose log
        densities differ from those of ``y`` by that constant (see :class:`TargetScaling`).

        Raises
        ------
        FloatingPointError
            When the search certified a tree whose log posterior or bound is not finite: no such
            certificate is ever reported (the inputs are checked before the search so that this
            cannot happen; it would be a bug).
        """
        self.search_tree_ = search.solution(feature_names=search_names, **solution_kw)
        log_posterior = float(log_post(self.search_tree_))
        fallback = getattr(self, "_fallback", None)
        if fallback is not None and fallback[0] > log_posterior:
            log_posterior, self.search_tree_ = fallback
            self.search_tree_.feature_names = search_names
        self._fallback = None
        self.tree_ = self._raw_tree(self.search_tree_)
        self.log_posterior_ = log_posterior + log_shift
        self.log_posterior_bound_ = float(-result.lower_bound) + log_shift
        # A certificate always comes with finite values.  An uncertified -inf is a real answer: under
        # alpha = 1, beta = 0 every leaf that could split has prior probability 0.
        if result.optimal and not (math.isfinite(self.log_posterior_) and math.isfinite(self.log_posterior_bound_)):
            raise FloatingPointError(
                f"{type(self).__name__}: the search ended with a non-finite log posterior "
                f"({self.log_posterior_!r}, bound {self.log_posterior_bound_!r}); no certificate is "
                "reported for it. Please report this with your data."
            )
        self.optimal_ = bool(result.optimal)
        self.gap_ = 0.0 if self.optimal_ else max(0.0, self.log_posterior_bound_ - self.log_posterior_)
        self.n_expansions_ = result.n_expansions
        self.n_probes_ = result.n_probes
        self.n_or_nodes_ = result.n_or_nodes
        self.n_and_nodes_ = result.n_and_nodes
        self.peak_memory_ = result.peak_bytes
        # The search's last row holds the root's bounds; the tree's own log posterior is the same
        # up to rounding (or better, see AndOrSearch.solution), and is what log_posterior_ reports.
        self.history_ = result.history.copy()
        self.history_["log_posterior"] += log_shift
        self.history_["log_posterior_bound"] += log_shift
        self.history_[-1]["log_posterior"] = self.log_posterior_
        self.history_[-1]["log_posterior_bound"] = self.log_posterior_bound_
        if self.verbose:
            self._progress(search)
        self.fit_time_ = clock.elapsed()
        reason = "completed" if self.optimal_ else result.stop_reason
        self._set_stop(
            reason,
            f"returning the best tree found after {self.n_expansions_:,} expansions (log posterior "
            f"{self.log_posterior_:.4f}), not certified: no tree exceeds {self.log_posterior_bound_:.4f} "
            f"(gap {self.gap_:.4f} nats)",
        )

    def _check_loaded(self) -> None:
        """Check loaded fitted attributes (:func:`arboretum.load`), ``history_`` too."""
        super()._check_loaded()
        history = getattr(self, "history_", None)
        if history is not None and not (
            isinstance(history, np.ndarray) and history.ndim == 1 and history.size >= 1
            and history.dtype == HISTORY_DTYPE
        ):
            raise ValueError(f"history_ must be a non-empty 1-d array of dtype {HISTORY_DTYPE}")

    def predict(self, X) -> np.ndarray:
        """Prediction of ``tree_`` for each sample: the most probable class of its leaf
        (ties: the first class), or for regression the leaf's posterior mean."""
        leaves = self.apply(X)
        if self.tree_.task == "regression":
            return self.tree_.value[leaves, 0].copy()
        return self.classes_[np.argmax(self.tree_.value[leaves], axis=1)]


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
    first by a :class:`~arboretum.Binarizer` (``binarize="auto"``): the
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
    max_depth : int or None, default=None
        Only trees of at most this many levels of splits: the answer is the
        MAP tree among them (a node at that depth is a leaf, with the prior
        probability ``1 - p_split(d)`` it has in every tree), certified the
        same way.  None: any depth.  A limit shrinks the search, often by
        orders of magnitude, and is what DL8.5, STreeD and GOSDT users know.
    max_expansions : int or None, default=None
        Stop after this many node expansions.
    time_limit : float or None, default=60
        Seconds of wall clock for the whole ``fit``: reading and binarising
        ``X``, fitting and seeding the CART candidates (at most half of it),
        the search (checked between small chunks of expansions) and reading
        the tree off the graph.  None means no limit: a fit may then run for
        hours on large data.
    memory_limit : float or None, default=None
        Cap, in MiB, on the memory of the search graph; the search stops
        instead of growing past it.

        A limit never raises: the fit returns the best tree found so far with
        ``optimal_ = False``, ``stop_reason_`` naming the limit, and one
        :class:`~arboretum.LimitWarning`.
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
        How to binarise: an unfitted :class:`~arboretum.Binarizer` (cloned at
        fit), e.g. ``Binarizer(n_thresholds=4, categorical=["zip"])``; None
        means ``Binarizer(strategy="boosting")``: up to 8 thresholds per
        numeric column, those that a small boosted ensemble fitted to ``y``
        uses, most useful first (a column it never splits gets none), and
        one-hot categories.  The certificate is relative to these candidate
        splits (``binarizer_.get_feature_names_out()``): ``tree_`` is the MAP
        tree among the trees that ask only them.  Its parameters can be set and tuned as
        ``binarizer__n_thresholds`` and the like, also while it is None.
        Unused when ``X`` is not binarised.
    verbose : int, default=0
        If > 0, print the bounds about once a second while searching.

    Attributes
    ----------
    tree_ : arboretum.Tree
        The returned tree; leaves hold training class counts and the posterior
        mean class probabilities ``(c + rho) / (n + sum(rho))``.  When ``X``
        was binarised it splits the raw columns (``THRESHOLD`` splits ``x <=
        t``, ``CATEGORY`` splits on categories, ``BINARY`` splits on 0/1
        columns) and carries the feature names and category labels, so
        ``tree_.predict(X)`` and ``tree_.export_text()`` work on raw ``X``
        without the estimator; otherwise it is the search tree on the binary
        ``X``.
    search_tree_ : arboretum.Tree
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
        "completed" (certified), or the limit that stopped the search:
        "max_expansions", "time_limit" or "memory_limit".
    history_ : ndarray of shape (n_rows,), structured
        The anytime record of the search, one row per point where the best
        tree or the bound changed (checked between chunks of search, 100-200
        per decade of time, and after each seeded tree), the start first and
        the end last.  Fields: ``time`` (float64, seconds since the
        search started), ``n_expansions`` (int64), ``log_posterior``
        (float64, the best tree found by then: ``initial_trees`` count from
        when they are seeded, a list right at the start, "cart" after the
        first 32 expansions) and ``log_posterior_bound`` (float64, no tree
        exceeds it).  ``time``, ``n_expansions`` and ``log_posterior`` never
        decrease, ``log_posterior_bound`` never increases, and the last row
        holds ``log_posterior_`` and ``log_posterior_bound_`` (equal when
        ``optimal_``).  At most 4097 rows (longer searches are thinned, see
        :class:`arboretum.maptree.history.SearchHistory`).
        :func:`arboretum.plot.plot_anytime` draws it.
    n_expansions_, n_probes_, n_or_nodes_, n_and_nodes_ : int
        Search effort (expansions, and bound probes of nodes not expanded
        yet) and size of the explored graph.
    fit_time_ : float
        Seconds spent in ``fit``.
    search_time_ : float
        Seconds of ``fit_time_`` spent in the search itself (seeding included).
    peak_memory_ : int
        Bytes held by the search graph at its largest.
    rho_ : ndarray of shape (n_classes,)
        The Dirichlet concentration of every class.
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
        max_depth: int | None = None,
        max_expansions: int | None = None,
        time_limit: float | None = DEFAULT_TIME_LIMIT,
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
        self.max_depth = max_depth
        self.max_expansions = max_expansions
        self.time_limit = time_limit
        self.memory_limit = memory_limit
        self.initial_trees = initial_trees
        self.strategy = strategy
        self.binarize = binarize
        self.binarizer = binarizer
        self.verbose = verbose

    _parameter_constraints: dict = constraints(*_COMMON, "rho", **_OWN)
    _kernel_family = "maptree-classification"

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
        self._validate_params()
        y_enc, classes = check_classification_targets_encoded(
            y, n_samples=_num_samples(X), estimator_name=type(self).__name__
        )
        clock = self._start_clock()
        rho = validate_rho(self.rho, len(classes))
        weights, X, y_enc = self._drop_zero_weights(sample_weight, X, y_enc)
        Xb, search_names = self._search_features(X, y_enc, weights)
        self.classes_ = classes
        self.rho_ = rho
        search = AndOrSearch(
            Xb, y_enc, len(classes), self.alpha, self.beta, rho, sample_weight=weights, max_depth=self.max_depth
        )

        def log_post(tree: Tree) -> float:
            return log_posterior(tree, Xb, y_enc, alpha=self.alpha, beta=self.beta, rho=rho, sample_weight=weights)

        def score(splits: SplitFn) -> tuple[Tree, float]:
            tree = search.candidate_tree(splits, classes=classes)
            return tree, log_post(tree)

        result = self._run_search(search, Xb.shape[1], lambda: cart_candidates(Xb, y_enc), clock, score)
        self._store(search, result, clock, search_names, log_post, classes=self.classes_)
        return self

    def predict_proba(self, X, method: str = "map") -> np.ndarray:
        """Posterior mean class probabilities of the leaf of ``tree_`` each sample reaches.

        Parameters
        ----------
        X : array-like or pandas DataFrame of shape (n_samples, n_features_in_)
        method : {"map"}, default="map"
            The vocabulary of every Bayesian model of arboretum: MAPTree finds
            one tree, so only "map" (predict with ``tree_``) applies; for the
            posterior average over trees use ``PCFGTreeClassifier`` or a
            sampler.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        self._method(method)
        leaves = self.apply(X)  # checks that the estimator is fitted first
        return self.tree_.value[leaves].copy()

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
    :func:`arboretum.maptree.bounds.nig_bound_tables`.

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
        George & McCulloch 2010); ``var(y) = mean(y)**2`` (1 if ``y`` is 0)
        for a constant ``y``.
        With the data-derived defaults of ``prior_mean`` and ``prior_scale``
        the fitted tree does not change when ``y`` is replaced by ``c * y + s``
        (the log posterior of every tree shifts by ``-n log|c|``); with
        given values, the same holds when ``prior_mean`` becomes
        ``c * prior_mean + s`` and ``prior_scale`` becomes ``c**2 * prior_scale``
        (``kappa`` and ``shape`` are dimensionless).

        **Numerics.**  ``prior_mean`` and ``prior_scale`` are in the units of
        ``y``, but the search never computes in them: it works on the
        standardised targets ``z = (y - c) / u`` (``c``, ``u`` the weighted
        mean and standard deviation of ``y``, computed without overflow; see
        :class:`arboretum.bayes.TargetScaling`) with the prior moved along,
        which gives the same ranking of all trees, and reports
        ``log_posterior_``, ``log_posterior_bound_`` and ``history_`` in the
        units of ``y`` (those of ``z`` minus ``N log u``, ``N`` the total
        weight).  So any finite ``y`` works, from about ``1e-300`` to
        ``1e300`` (the tree found for ``y * 2**k`` is the same as for ``y``, bit
        for bit).  Refused with a ``ValueError``: non-finite ``y``, and a given
        ``prior_mean`` or ``prior_scale`` so far from the scale of ``y`` that
        the leaf likelihoods overflow.  Targets equal up to a relative
        ``4 n eps`` count as constant.  A certificate (``optimal_``) always
        comes with finite values.
    max_depth : int or None, default=None
        Only trees of at most this many levels of splits: the answer is the
        MAP tree among them (a node at that depth is a leaf, with the prior
        probability ``1 - p_split(d)`` it has in every tree), certified the
        same way.  None: any depth.  A limit shrinks the search, often by
        orders of magnitude, and is what DL8.5, STreeD and GOSDT users know.
    max_expansions : int or None, default=None
        Stop after this many node expansions.
    time_limit : float or None, default=60
        Seconds of wall clock for the whole ``fit``, as in
        :class:`MAPTreeClassifier`; None means no limit.  Real-valued targets
        rarely certify on more than a few dozen samples (the bound cannot see
        how the features will separate the targets), so the limit usually
        ends the fit.
    memory_limit : float or None, default=None
        Cap, in MiB, on the memory of the search graph.  A limit never raises
        (see :class:`MAPTreeClassifier`).
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
        As in :class:`MAPTreeClassifier` (default
        ``Binarizer(strategy="boosting")``: up to 8 thresholds per numeric
        column, those a small boosted ensemble fitted to ``y`` uses).
    verbose : int, default=0
        If > 0, print the bounds about once a second while searching.

    Attributes
    ----------
    tree_ : arboretum.Tree
        The returned regression tree; leaves hold the (weighted) number of
        training samples (``counts``) and the posterior mean of the leaf mean,
        ``(prior_kappa * prior_mean + sum y) / (prior_kappa + n)``
        (``value[:, 0]``), which ``predict`` returns.  It splits the raw
        columns when ``X`` was binarised.
    search_tree_ : arboretum.Tree
        The tree on the binary search features (node ids as in ``tree_``).
    binarizer_ : Binarizer or None
    prior_ : arboretum.bayes.NIGPrior or None
        The leaf prior used, in the units of ``y``, with the data-derived
        defaults filled in; None when its ``scale`` (units of ``y`` squared)
        is beyond float64 (``|y|`` above about ``1e154`` or below
        ``1e-154``; the search itself is unaffected, see ``prior_scale``).
    log_posterior_ : float
        ``log p(tree_, y | X)``, the unnormalised log posterior (a log
        *density* in ``y``: it depends on the units of ``y`` and can be
        positive; replacing ``y`` by ``c * y`` subtracts ``N log|c|``),
        recomputed from the tree.  Always finite.
    log_posterior_bound_ : float
        No tree has a higher log posterior than this.
    optimal_ : bool
        True when the search completed: ``tree_`` is a MAP tree.
    gap_ : float
        ``log_posterior_bound_ - log_posterior_`` (0 when certified).
    stop_reason_ : str
        "completed" (certified), "max_expansions", "time_limit" or "memory_limit".
    history_ : ndarray of shape (n_rows,), structured
        The anytime record of the search: fields ``time``, ``n_expansions``,
        ``log_posterior`` and ``log_posterior_bound``, as in
        :class:`MAPTreeClassifier`; the last row holds ``log_posterior_``
        and ``log_posterior_bound_``.
    n_expansions_, n_probes_, n_or_nodes_, n_and_nodes_ : int
        As in :class:`MAPTreeClassifier`.
    fit_time_, search_time_ : float
        Seconds in ``fit``, and in its search.
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
        max_depth: int | None = None,
        max_expansions: int | None = None,
        time_limit: float | None = DEFAULT_TIME_LIMIT,
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
        self.max_depth = max_depth
        self.max_expansions = max_expansions
        self.time_limit = time_limit
        self.memory_limit = memory_limit
        self.initial_trees = initial_trees
        self.strategy = strategy
        self.binarize = binarize
        self.binarizer = binarizer
        self.verbose = verbose

    _kernel_family = "maptree-regression"
    _parameter_constraints: dict = constraints(
        *_COMMON,
        **_OWN,
        prior_mean=[Interval(numbers.Real, None, None), None],
        prior_kappa=[Interval(numbers.Real, 0, None, closed="neither")],
        prior_shape=[Interval(numbers.Real, 0, None, closed="neither")],
        prior_scale=[Interval(numbers.Real, 0, None, closed="neither"), None],
    )

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
        self._validate_params()
        y = check_regression_targets(y, n_samples=_num_samples(X), estimator_name=type(self).__name__)
        clock = self._start_clock()
        weights, X, y = self._drop_zero_weights(sample_weight, X, y)
        if weights is not None and weights.sum() > MAX_REGRESSION_WEIGHT:
            raise ValueError(
                f"the weights sum to {weights.sum()}; MAPTreeRegressor supports at most "
                f"{MAX_REGRESSION_WEIGHT} (its bound tables are indexed by the total weight)"
            )
        # The search works on standardised targets z = (y - c) / u (TargetScaling): its sums and
        # likelihoods are then of order n at any scale of y, and every log density in y is the
        # one in z minus N log u, the same constant for every tree (see TargetScaling).
        scaling = TargetScaling.fit(y, weights)
        z = scaling.transform(y)
        prior = scaling.search_prior(
            y, weights, mean=self.prior_mean, kappa=self.prior_kappa, shape=self.prior_shape, scale=self.prior_scale
        )
        Xb, search_names = self._search_features(X, z, weights)  # z: the ensemble's cuts at any scale
        self.prior_ = scaling.data_prior(
            y, weights, mean=self.prior_mean, kappa=self.prior_kappa, shape=self.prior_shape, scale=self.prior_scale
        )
        # A limit already reached leaves no search to tighten the bound for: its costliest table,
        # the leaf shares, is then left out (the bound stays admissible; 0.5 s on 500,000 rows).
        search = RegressionSearch(
            Xb, z, self.alpha, self.beta, prior, sample_weight=weights, max_depth=self.max_depth,
            leaf_shares=not clock.expired(),
        )

        # Leaf values: the posterior mean of mu, moved back to data units; it lies between the
        # smallest and largest of the targets and the prior mean (clipped to them against rounding).
        mean_y = float(scaling.inverse(prior.mean))
        lo, hi = min(float(y.min()), mean_y), max(float(y.max()), mean_y)

        def value_fn(stats: np.ndarray) -> np.ndarray:
            return np.clip(scaling.inverse(prior.mean + stats[1] / (prior.kappa + stats[0])), lo, hi)

        def log_post(tree: Tree) -> float:  # in the units of z (see log_shift below)
            return log_posterior_regression(
                tree, Xb, z, alpha=self.alpha, beta=self.beta, prior=prior, sample_weight=weights
            )

        def score(splits: SplitFn) -> tuple[Tree, float]:
            tree = search.candidate_tree(splits, value_fn=value_fn)
            return tree, log_post(tree)

        result = self._run_search(
            search, Xb.shape[1], lambda: cart_regression_candidates(Xb, z, weights), clock, score
        )
        total = float(len(y) if weights is None else weights.sum())
        self._store(
            search, result, clock, search_names, log_post, log_shift=-total * scaling.log_unit, value_fn=value_fn
        )
        return self


