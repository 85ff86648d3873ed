"""``PCFGTreeClassifier``: the exact Bayesian posterior over decision trees (BCART-PCFG)."""

from __future__ import annotations

import numbers
import sys
from collections.abc import Mapping
from typing import Any

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import _num_samples, check_is_fitted

from .._compile import LEAN, exercise_predictions, register, tiny_problem
from ..base import DEFAULT_TIME_LIMIT, TreeEstimator, constraints, deprecated_attribute
from ..bayes import ChipmanPrior, log_dirichlet_multinomial, validate_rho
from ..exceptions import warn_user
from ..binarizer import Binarizer
from ..data import (
    Check,
    InstanceOf,
    Interval,
    Options,
    check_classification_targets_encoded,
    check_int,
    check_positive_number,
)
from ..tree import Tree
from .grammar import BoxGrammar, PhiPrior, SampledTrees
from .store import GrammarLimitReached, GrammarTooLargeError, build_node_store, preflight
from .trees import TreeFactory
from . import _kernels as K

#: Share of ``time_limit`` within which the requested grammar must be built; when it is not,
#: the rest of the time goes to coarser grammars, coarsest first (see ``fit``).
FIRST_GRAMMAR_SHARE = 0.5
#: Share of ``time_limit`` by which a coarser grammar must be built: its inside tables and the
#: fitted summaries take up to about a fifth of that time again.
BUILD_SHARE = 0.9
#: A coarser grammar whose whole node store provably fits in this many bytes (its upper bound
#: times the bytes per node) is built without looking at the clock, like the single leaf: it
#: takes milliseconds, so a limit is never answered with a leaf only because the first grammar's
#: last step overran (the first touch of freshly allocated memory can take tenths of a second
#: on a virtual machine, between two looks at the clock).
ALWAYS_FIT_BYTES = 4 * 2**20

__all__ = ["PCFGTreeClassifier"]

PRIORS = ("phi", "chipman")
ENSEMBLES = ("paths", "trees")
_DEFAULT_ALPHA = 0.95


def _max_values_ok(v: Any) -> bool:
    return v is None or Interval(numbers.Integral, 2, None).accepts(v)


def _feature_max_values_ok(d: Any) -> bool:
    return isinstance(d, Mapping) and all(
        (isinstance(k, str) or Interval(numbers.Integral, 0, None).accepts(k)) and _max_values_ok(v)
        for k, v in d.items()
    )


class PCFGTreeClassifier(ClassifierMixin, TreeEstimator):
    """Exact Bayesian decision trees through a probabilistic grammar of bounding boxes (BCART-PCFG).

    The posterior over trees is ``P(T | X, y) ∝ phi ** -b(T) * prod_leaves
    L(leaf)`` (Sullivan, Tiwari, Thrun & Piech): ``b(T)`` is the number of
    leaves, and ``L`` is the Dirichlet-multinomial marginal likelihood of a
    leaf's labels under a Dirichlet(``rho``) prior.  Trees are counted up to
    the partition they induce on the training points (two splits producing the
    same two child point sets are one split).  Every quantity is exact: the fit
    enumerates every point set cut out by an axis-aligned box (the grammar's
    nonterminals) and runs sum- and max-product dynamic programmes over them,
    so the MAP tree is certified, samples are exact and independent, and the
    posterior-averaged prediction (the "infinite ensemble") is computed, not
    estimated.

    The grammar splits the thresholds of a :class:`~arboretum.Binarizer`
    (``binarizer_``): by default, as in the paper, a numeric column with more
    than 10 distinct values is cut at 9 equal-width positions (10 buckets),
    any other between every two of its values; categorical columns give one
    yes/no question per category.  The cost grows roughly like the number of
    boxes, exponential in the number of columns, so this bucketing is what
    makes a fit feasible.  A request that the pre-flight estimate shows to be
    hopeless is refused before any work with a
    :class:`~arboretum.GrammarTooLargeError`; a limit reached during the
    work never raises: the fit then halves the thresholds of every column
    (keeping each column's middle one) and fits that smaller grammar exactly,
    as often as needed; below one threshold per column it keeps only the
    best ``2**k`` columns (by the marginal likelihood of one split on them),
    ``k`` decreasing to 0, then a single leaf; with ``optimal_ = False``,
    ``stop_reason_`` naming the limit and a :class:`~arboretum.LimitWarning`.
    ``binarizer_`` lists the thresholds of the grammar fitted.

    Parameters
    ----------
    log_phi : float, default=2.0
        ``ln phi``, the per-leaf log penalty of the prior ``phi ** -b(T)``
        (the paper's single hyperparameter, ``ln phi = 2``).  Any finite
        real; larger values give smaller MAP trees.  Used by ``prior="phi"``.
    prior : {"phi", "chipman"}, default="phi"
        ``"phi"``: the paper's prior.  ``"chipman"``: Chipman, George &
        McCulloch's depth prior as used by MAPTree (a node at depth ``d``
        splits with probability ``alpha (1 + d) ** -beta`` on a feature chosen
        uniformly, then a threshold chosen uniformly); the grammar's symbols
        then carry the depth and equivalent splits on different features are
        kept apart, exactly as in MAPTree.
    alpha : float, default=0.95
        Split probability at the root of the Chipman prior, in (0, 1].
    beta : float, default=0.5
        Decay of the Chipman split probability with depth, >= 0.
    rho : float or array-like of float, default=1.0
        Dirichlet concentration of every leaf's class probabilities, one
        positive value per class in the order of ``classes_`` (a scalar is
        used for every class).  (Before arboretum 0.2 this was ``alpha``.)
    binarizer : Binarizer or None, default=None
        The thresholds the grammar splits (cloned at fit); None means
        ``Binarizer(n_thresholds=9, strategy="uniform")``, the paper's
        bucketing to at most 10 values.  ``binarizer__n_thresholds`` and the
        like can be set and tuned while it is None.
    max_nodes : int, default=5_000_000
        Largest number of grammar nodes (distinct point sets) allowed.
    time_limit : float or None, default=60
        Seconds of wall clock for the whole ``fit`` (binarising ``X``,
        building the grammar and its tables, and any coarser grammar fitted
        when a limit stops it); None means no limit.
    memory_limit : float or None, default=4096
        MiB that the node store and the dynamic-programme tables may hold;
        ``None`` for no limit beyond ``max_nodes``.
    predict_method : {"average", "map", "sample"}, default="average"
        Default ``method`` of :meth:`predict_proba` and :meth:`predict`: the
        exact posterior predictive (Bayesian model averaging over every tree),
        the MAP tree, or a finite ensemble of posterior samples.
    n_samples : int, default=100
        Ensemble size of ``method="sample"``.
    ensemble : {"paths", "trees"}, default="paths"
        ``method="sample"``: draw ``n_samples`` independent query paths per
        query (Algorithm 1 of the paper), or ``n_samples`` whole trees shared
        by all queries.  Both average the leaves' posterior predictive.
    random_state : int, RandomState or None, default=None
        Seed of ``method="sample"`` when :meth:`predict_proba` gets none.
    verbose : int, default=0
        If > 0, print the size of the grammar and each fallback.
    max_values, feature_max_values, binning : deprecated
        The discretisation before arboretum 0.2: ``max_values=k`` is
        ``binarizer=Binarizer(n_thresholds=k - 1, strategy="uniform")``
        (``None``: ``strategy="all"``), ``binning`` is ``strategy``, and
        ``feature_max_values={column: k}`` is ``column_n_thresholds={column: k - 1}``.

    Attributes
    ----------
    tree_ : arboretum.Tree
        The MAP tree (``map_tree_`` is its deprecated name), on the raw
        columns.  Leaves carry the training class counts and the posterior
        predictive ``(n_c + rho_c) / (n + sum(rho))``.
    log_posterior_ : float
        ``log P(tree_, y | X)`` (prior times likelihood);
        ``map_log_probability_ + log_evidence_`` (``map_log_posterior_`` is
        its deprecated name).  With ``prior="chipman"`` on 0/1 features this
        equals MAPTree's ``log_posterior_`` for the same tree; on raw columns
        it does not in general, since the grammar's Chipman prior picks a
        column first and then one of its thresholds, where MAPTree picks
        uniformly among all binary questions.
    log_evidence_ : float
        ``log P(y | X)``, the marginal likelihood under the prior.
    map_log_probability_ : float
        ``log P(tree_ | X, y)``, the normalised posterior probability of the
        MAP tree (``log Q_max(N_0) - log Q(N_0)``).
    log_prior_normalizer_ : float
        ``log Z(X)`` of the phi prior, ``log sum_T phi ** -b(T)`` (0 for the
        normalised Chipman prior).
    log_n_trees_ : float
        Natural log of the number of trees in the (data-dependent) tree space.
    expected_n_leaves_ : float
        Posterior mean of the number of leaves.
    expected_splits_per_feature_ : ndarray of shape (n_features_in_,)
        Posterior expected number of internal nodes splitting on each raw
        column (a Bayesian feature importance; a split equivalent to one on an
        earlier column is credited to the earlier one).
    optimal_ : bool
        True when the requested grammar was fitted: every quantity above is
        exact for it.  False after a limit: they are exact for the coarser
        grammar of ``binarizer_``.
    stop_reason_ : str
        "completed", or the limit that forced a coarser grammar:
        "max_nodes", "memory_limit" or "time_limit".
    n_nodes_ : int
        Grammar nodes: distinct non-empty point sets cut out by boxes.
    n_split_edges_ : int
        Splits over all nodes (after de-duplication for the phi prior).
    n_values_ : ndarray of int
        Distinct codes of every grammar feature (``t_f`` of the spec).
    binarizer_ : Binarizer
        The fitted discretisation the grammar splits (``binner_`` is its
        deprecated name).
    grammar_ : BoxGrammar
        The node store, inside tables and production probabilities.
    preflight_ : Preflight
        The pre-flight size estimate.
    rho_ : ndarray of shape (n_classes,)
        The Dirichlet concentrations (``alpha_`` is the deprecated name).
    fit_time_ : float
        Seconds spent in :meth:`fit`.
    peak_memory_ : int
        Bytes held by the store and tables at their largest.
    classes_, n_features_in_, feature_names_in_
        As in scikit-learn.

    Examples
    --------
    >>> from arboretum.datasets import load_dataset
    >>> from arboretum import PCFGTreeClassifier
    >>> X, y = load_dataset("iris", return_X_y=True)
    >>> clf = PCFGTreeClassifier().fit(X, y)
    >>> clf.tree_.n_nodes, round(clf.map_log_probability_, 4)
    (7, -4.4067)
    """

    _uses_binary_questions = False
    _predict_methods = ("average", "map", "sample")
    _kernel_family = "pcfg"
    _parameter_constraints: dict = constraints(
        "alpha", "beta", "rho", "binarizer", "time_limit", "memory_limit", "random_state", "verbose",
        log_phi=[Interval(numbers.Real, None, None)],
        prior=[Options(PRIORS), InstanceOf(ChipmanPrior, "a ChipmanPrior (deprecated)")],
        max_nodes=[Interval(numbers.Integral, 1, None)],
        predict_method=[Options(("average", "map", "sample"))],
        n_samples=[Interval(numbers.Integral, 1, None)],
        ensemble=[Options(ENSEMBLES)],
        max_values=[Options(("deprecated",)), Check(_max_values_ok, "an integer >= 2 or None")],
        feature_max_values=[
            Options(("deprecated",)), None,
            Check(_feature_max_values_ok, "a dict {column index or name: int >= 2 or None}"),
        ],
        binning=[Options(("deprecated", "uniform", "quantile"))],
    )
    _deprecated_params = {
        "max_values": "use binarizer=Binarizer(n_thresholds=max_values - 1, strategy='uniform') "
                      "(or set binarizer__n_thresholds)",
        "feature_max_values": "use binarizer=Binarizer(column_n_thresholds={column: max_values - 1})",
        "binning": "use binarizer=Binarizer(strategy=...) (or set binarizer__strategy)",
    }

    map_tree_ = deprecated_attribute("tree_")
    map_log_posterior_ = deprecated_attribute("log_posterior_")
    binner_ = deprecated_attribute("binarizer_")
    alpha_ = deprecated_attribute("rho_")

    def __init__(
        self,
        log_phi: float = 2.0,
        prior: str = "phi",
        alpha: float = _DEFAULT_ALPHA,
        beta: float = 0.5,
        rho: Any = 1.0,
        binarizer: Binarizer | None = None,
        max_nodes: int = 5_000_000,
        time_limit: float | None = DEFAULT_TIME_LIMIT,
        memory_limit: float | None = 4096,
        predict_method: str = "average",
        n_samples: int = 100,
        ensemble: str = "paths",
        random_state: Any = None,
        verbose: int = 0,
        max_values: Any = "deprecated",
        feature_max_values: Any = "deprecated",
        binning: Any = "deprecated",
    ) -> None:
        self.log_phi = log_phi
        self.prior = prior
        self.alpha = alpha
        self.beta = beta
        self.rho = rho
        self.binarizer = binarizer
        self.max_nodes = max_nodes
        self.time_limit = time_limit
        self.memory_limit = memory_limit
        self.predict_method = predict_method
        self.n_samples = n_samples
        self.ensemble = ensemble
        self.random_state = random_state
        self.verbose = verbose
        self.max_values = max_values
        self.feature_max_values = feature_max_values
        self.binning = binning

    # -- parameters ------------------------------------------------------------------------

    def _default_binarizer(self) -> Binarizer:
        """The paper's bucketing: numeric columns with more than 10 values cut at 9 equal widths.

        The deprecated ``max_values``, ``feature_max_values`` and ``binning``
        parameters, when given, shape it.
        """
        n, strategy = 9, "uniform"
        if self.max_values != "deprecated":
            n, strategy = (9, "all") if self.max_values is None else (self.max_values - 1, "uniform")
        if self.binning != "deprecated" and strategy != "all":
            strategy = self.binning
        per_column = None
        if self.feature_max_values not in ("deprecated", None):
            per_column = {k: (None if v is None else v - 1) for k, v in self.feature_max_values.items()}
        return Binarizer(n_thresholds=n, strategy=strategy, column_n_thresholds=per_column)

    def _prior_object(self) -> PhiPrior | ChipmanPrior:
        if isinstance(self.prior, ChipmanPrior):
            warn_user(
                "PCFGTreeClassifier(prior=ChipmanPrior(a, b)) is deprecated since arboretum 0.2; use "
                "prior='chipman', alpha=a, beta=b",
                FutureWarning,
            )
            return self.prior
        if self.prior == "chipman":
            return ChipmanPrior(self.alpha, self.beta)
        return PhiPrior(float(self.log_phi))

    def _rho(self, n_classes: int) -> np.ndarray:
        """``rho`` per class; under the phi prior a non-default ``alpha`` is the deprecated name of rho."""
        if self.prior == "phi" and self.alpha != _DEFAULT_ALPHA:
            if np.ndim(self.rho) == 0 and float(self.rho) == 1.0:
                warn_user(
                    "PCFGTreeClassifier's alpha is the Chipman split probability since arboretum 0.2, which "
                    "prior='phi' does not use; the Dirichlet leaf concentration, which alpha was before, is "
                    f"now rho: alpha={self.alpha!r} is used as rho for this release",
                    FutureWarning,
                )
                return validate_rho(self.alpha, n_classes)
        return validate_rho(self.rho, n_classes)

    # -- fitting ---------------------------------------------------------------------------

    def fit(self, X: Any, y: Any) -> PCFGTreeClassifier:
        """Build the grammar of ``(X, y)``: every node, the inside tables and the MAP tree.

        Parameters
        ----------
        X : array-like or pandas DataFrame of shape (n_samples, n_features)
            Numbers, booleans, strings or categories, without missing values.
        y : array-like of shape (n_samples,)
            Class labels, at least two distinct values.

        Returns
        -------
        self : PCFGTreeClassifier

        Raises
        ------
        GrammarTooLargeError
            Before any work, when the pre-flight estimate of the grammar is far
            over ``max_nodes`` (a limit reached later never raises; see the
            class docstring).
        """
        self._validate_params()
        name = type(self).__name__
        y_enc, classes = check_classification_targets_encoded(y, n_samples=_num_samples(X), estimator_name=name)
        clock = self._start_clock()
        rho = self._rho(len(classes))
        prior = self._prior_object()
        binarizer, E = self._fit_binarizer(X, y_enc)
        codes, n_codes = _grammar_codes(binarizer, E)
        chipman = isinstance(prior, ChipmanPrior)
        memory = None if self.memory_limit is None else int(self.memory_limit * 2**20)
        reason = "completed"
        try:
            # The pre-flight's sample stores count against the first grammar's share of the limit too:
            # on wide data (thousands of columns) they alone can take minutes.
            pre = preflight(codes, len(classes), max_nodes=self.max_nodes, dedupe=not chipman, n_codes=n_codes,
                            deadline=clock.share_end(FIRST_GRAMMAR_SHARE))
            if pre.refuse:
                raise GrammarTooLargeError(
                    f"BCART-PCFG node store too large: the pre-flight estimate is "
                    f"{'at least ' if pre.lower_bound else 'about '}{pre.estimate:,.0f} nodes, over "
                    f"max_nodes={self.max_nodes:,} (pre-flight: {pre.describe()}). The method is exact and never "
                    f"approximates; to fit, {self._advice(binarizer)}"
                )
            store, grammar = self._build(codes, n_codes, y_enc, len(classes), rho, prior, binarizer, pre,
                                         memory, clock.share_end(FIRST_GRAMMAR_SHARE))
        except GrammarLimitReached as exc:
            # A limit never raises: fit the exact posterior of the finest coarser grid that fits
            # instead, down to a single leaf (which no limit can stop).  The coarser grids (every
            # column's thresholds halved, as often as needed, then only the best 2**k columns of
            # the coarsest: _column_rungs) are tried coarsest first, each much cheaper than the
            # next finer one, until one hits a limit.
            reason = exc.reason
            if self.verbose:
                print(f"[{name}] {exc.reason} reached; trying coarser grammars", file=sys.stderr)
            ladder = []
            coarser = binarizer.coarsened()
            while coarser is not None:
                ladder.append(coarser)
                coarser = coarser.coarsened()
            ladder = _column_rungs(ladder[-1] if ladder else binarizer, E, y_enc, len(classes), rho) + ladder[::-1]
            fitted = None
            for candidate in [binarizer._subset([])] + ladder:
                c_codes, c_n_codes = _grammar_codes(candidate, E)
                c_pre = preflight(c_codes, len(classes), dedupe=not chipman, n_codes=c_n_codes)
                # The single leaf, and grammars too small to matter, are fitted without the clock;
                # only the leaf also without the memory limit.
                timed = fitted is not None and c_pre.bound * c_pre.bytes_per_node > ALWAYS_FIT_BYTES
                if timed and clock.expired():
                    break
                try:
                    built = self._build(c_codes, c_n_codes, y_enc, len(classes), rho, prior, candidate, c_pre,
                                        memory if fitted is not None else None,
                                        clock.share_end(BUILD_SHARE) if timed else None)
                except GrammarLimitReached:
                    break
                fitted = (candidate, c_codes, c_n_codes, c_pre, built)
            binarizer, codes, n_codes, pre, (store, grammar) = fitted
            if self.verbose:
                print(f"[{name}] fitted a grammar on {sum(len(g) for g in binarizer.groups_)} thresholds",
                      file=sys.stderr)
        self.binarizer_ = binarizer
        self._fit_data = (codes, n_codes, y_enc)  # what arboretum.save keeps to rebuild the grammar
        self._store_fit(store, grammar, pre, classes, rho, prior, binarizer)
        self.optimal_ = reason == "completed"
        self.fit_time_ = clock.elapsed()
        self._set_stop(
            reason,
            f"fitted the exact posterior of a coarser grammar instead ({sum(len(g) for g in binarizer.groups_)} "
            f"thresholds in binarizer_; {self.n_nodes_:,} nodes)",
        )
        return self

    def _advice(self, binarizer: Binarizer) -> str:
        return (
            f"bucket the features more coarsely (thresholds per column now "
            f"{[len(g) for g in binarizer.groups_]}; lower binarizer__n_thresholds or set "
            f"binarizer__column_n_thresholds for the widest columns), use fewer features, or raise "
            f"max_nodes={self.max_nodes:,}"
            + ("" if self.memory_limit is None else f" / memory_limit={self.memory_limit} MiB") + "."
        )

    def _build(self, codes, n_codes, y_enc, n_classes, rho, prior, binarizer, pre, memory, deadline):
        """The node store and the inside tables of one grammar (may raise GrammarLimitReached)."""
        chipman = isinstance(prior, ChipmanPrior)
        advice = self._advice(binarizer)
        store = build_node_store(codes, y_enc, n_classes, n_codes=n_codes, dedupe=not chipman,
                                 chipman_weights=chipman, max_nodes=self.max_nodes, memory_limit=memory,
                                 advice=advice, pre=pre, deadline=deadline)
        grammar = BoxGrammar(store, rho, prior, memory_limit=memory, advice=advice, deadline=deadline)
        if self.verbose:
            print(f"[{type(self).__name__}] grammar of {store.n_nodes:,} nodes and {store.n_edges:,} splits",
                  file=sys.stderr)
        return store, grammar

    def _store_fit(self, store, grammar, pre, classes, rho, prior, binarizer) -> None:
        chipman = isinstance(prior, ChipmanPrior)
        self.classes_ = classes
        self.rho_ = rho
        self.n_values_ = binarizer.n_codes_.copy()
        self.grammar_ = grammar
        self.preflight_ = pre
        self.n_nodes_ = store.n_nodes
        self.n_split_edges_ = store.n_edges
        self._factory = TreeFactory(store, binarizer, rho, classes, self._feature_names())
        self.tree_ = self._factory.build(grammar.map_derivation(), 0)
        log_prior = grammar.log_prior_inside()
        self.log_evidence_ = grammar.log_Q_root - log_prior
        self.map_log_probability_ = grammar.log_Qmax_root - grammar.log_Q_root
        self.log_posterior_ = grammar.log_Qmax_root - log_prior
        self.log_prior_normalizer_ = log_prior - prior.log_phi if not chipman else 0.0
        self.log_n_trees_ = grammar.log_n_trees()
        self.expected_n_leaves_ = grammar.expected_leaves()
        per_group = grammar.expected_feature_splits()
        per_column = np.zeros(self.n_features_in_)
        for g, cols in enumerate(binarizer.groups_):
            per_column[binarizer.splits_[int(cols[0])].column] += per_group[g]
        self.expected_splits_per_feature_ = per_column
        self.peak_memory_ = int(max(store.peak_bytes, grammar.nbytes))

    # -- persistence -------------------------------------------------------------------------

    def _get_fitted_state(self) -> dict[str, Any]:
        state = super()._get_fitted_state()
        codes, n_codes, y_enc = self._fit_data
        state["grammar_"] = {"codes": codes, "n_codes": n_codes, "y": y_enc}
        return state

    def _set_fitted_state(self, state: dict[str, Any]) -> None:
        s = dict(state)
        data = s.pop("grammar_")
        super()._set_fitted_state(s)
        codes = np.ascontiguousarray(data["codes"], dtype=np.int32)
        n_codes = np.asarray(data["n_codes"], dtype=np.int64)
        y_enc = np.asarray(data["y"], dtype=np.int64)
        if (codes.ndim != 2 or n_codes.shape != (codes.shape[1],) or y_enc.shape != (codes.shape[0],)
                or codes.min(initial=0) < 0 or (codes >= n_codes).any()
                or not 0 <= y_enc.min(initial=0) <= y_enc.max(initial=0) < len(self.classes_)):
            raise ValueError("grammar_ holds inconsistent training codes")
        expected = _grammar_codes(self.binarizer_, np.zeros((0, self.n_features_in_)))[1]
        if not np.array_equal(expected, n_codes):
            raise ValueError("grammar_ codes do not match binarizer_")
        prior = self._prior_object()
        chipman = isinstance(prior, ChipmanPrior)
        store = build_node_store(codes, y_enc, len(self.classes_), n_codes=n_codes, dedupe=not chipman,
                                 chipman_weights=chipman, max_nodes=max(self.n_nodes_, 1))
        if store.n_nodes != self.n_nodes_ or store.n_edges != self.n_split_edges_:
            raise ValueError("the rebuilt grammar differs from the saved one")
        self.grammar_ = BoxGrammar(store, self.rho_, prior)
        self._fit_data = (codes, n_codes, y_enc)
        self._factory = TreeFactory(store, self.binarizer_, self.rho_, self.classes_, self._feature_names())

    # -- posterior queries -------------------------------------------------------------------

    def _seed(self, random_state: Any) -> int:
        rng = check_random_state(self.random_state if random_state is None else random_state)
        return int(rng.randint(0, 2**62, dtype=np.int64))

    def sample_trees(self, n: int, random_state: Any = None, validate: bool = False) -> list[Tree]:
        """Draw ``n`` exact, independent trees from the posterior (ancestral sampling of PCFG*).

        Parameters
        ----------
        n : int
            Number of trees, >= 1.
        random_state : int, RandomState or None
            Seed (defaults to the estimator's ``random_state``).
        validate : bool, default=False
            Run every tree through :class:`~arboretum.tree.Tree`'s checks.  By
            default only the first one is (the checks cost more than the
            sampling; the trees are valid by construction).

        Returns
        -------
        trees : list of arboretum.Tree
            On the raw columns, like ``tree_``.
        """
        check_is_fitted(self)
        n = check_int(n, "n", minimum=1)
        samples = self.grammar_.sample(n, self._seed(random_state))
        return self._factory.build_all(samples, validate=bool(validate))

    def _sample_derivations(self, n: int, random_state: Any = None) -> SampledTrees:
        """The raw derivations behind :meth:`sample_trees` (for speed-sensitive callers)."""
        check_is_fitted(self)
        return self.grammar_.sample(check_int(n, "n", minimum=1), self._seed(random_state))

    def n_trees(self) -> int:
        """Exact number of trees in the tree space (a Python integer; ``exp(log_n_trees_)``)."""
        check_is_fitted(self)
        return self.grammar_.n_trees()

    def node_marginals(self, min_probability: float = 0.01) -> list[dict[str, Any]]:
        """Posterior probability of every node (point set) that occurs with at least ``min_probability``.

        Returns
        -------
        nodes : list of dict
            Sorted by decreasing probability; each has ``"samples"`` (training
            row indices), ``"p_node"`` (probability that the tree has this node)
            and ``"p_leaf"`` (probability that it is a leaf of the tree).
        """
        check_is_fitted(self)
        check_positive_number(min_probability, "min_probability", strictly=False, upper=1.0)
        p_node, p_leaf = self.grammar_.node_marginals()
        keep = np.flatnonzero(p_node >= min_probability)
        keep = keep[np.argsort(-p_node[keep], kind="stable")]
        store = self.grammar_.store
        return [{"samples": store.members(int(v)), "p_node": float(p_node[v]), "p_leaf": float(p_leaf[v])}
                for v in keep]

    # -- prediction --------------------------------------------------------------------------

    def _codes(self, X: Any) -> np.ndarray:
        """The grammar's codes of raw ``X`` (one column per ordinal group)."""
        E = self._encoded_X(X)
        return _grammar_codes(self.binarizer_, E)[0]

    def predict_proba(self, X: Any, method: str | None = None, n_samples: int | None = None,
                      random_state: Any = None, ensemble: str | None = None) -> np.ndarray:
        """Class probabilities of ``X``.

        Parameters
        ----------
        X : array-like or pandas DataFrame of shape (n_queries, n_features_in_)
            Raw features, as in ``fit``.
        method : {"average", "map", "sample"}, optional
            ``"average"``: the exact posterior predictive, the average over
            *all* trees weighted by their posterior probability (spec §3.7;
            ``"bma"`` is its deprecated name).  ``"map"``: the MAP tree's leaf
            predictive.  ``"sample"``: the average over ``n_samples`` posterior
            samples (paths or trees, see ``ensemble``).  Defaults to
            ``predict_method``.
        n_samples : int, optional
            Ensemble size for ``"sample"`` (defaults to ``n_samples``).
        random_state : int, RandomState or None
            Seed for ``"sample"`` (defaults to ``random_state``).
        ensemble : {"paths", "trees"}, optional
            Defaults to ``ensemble``.

        Returns
        -------
        proba : ndarray of shape (n_queries, n_classes)
        """
        method = self._method(method)
        if method == "map":
            leaves = self.apply(X)  # checks that the estimator is fitted first
            return self.tree_.value[leaves].copy()
        codes = self._codes(X)
        if method == "average":
            return self.grammar_.predict_bma(codes)
        n = check_int(self.n_samples if n_samples is None else n_samples, "n_samples", minimum=1)
        how = self.ensemble if ensemble is None else ensemble
        if how not in ENSEMBLES:
            raise ValueError(f"ensemble must be one of {list(ENSEMBLES)}; got {how!r}")
        seed = self._seed(random_state)
        if how == "paths":
            return self.grammar_.predict_paths(codes, n, seed)
        return self.grammar_.predict_trees(codes, self.grammar_.sample(n, seed))

    def predict(self, X: Any, method: str | None = None, n_samples: int | None = None,
                random_state: Any = None, ensemble: str | None = None) -> np.ndarray:
        """Most probable class (ties go to the first class); arguments as :meth:`predict_proba`."""
        proba = self.predict_proba(X, method=method, n_samples=n_samples, random_state=random_state,
                                   ensemble=ensemble)
        return self.classes_[np.argmax(proba, axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = True
        return tags

    # -- posterior summaries (used by arboretum.plot) ----------------------------------------

    def _column_groups(self) -> list[list[int]]:
        """The grammar features (ordinal groups of ``binarizer_``) of every raw column."""
        groups: list[list[int]] = [[] for _ in range(self.n_features_in_)]
        for g, cols in enumerate(self.binarizer_.groups_):
            groups[self.binarizer_.splits_[int(cols[0])].column].append(g)
        return groups

    def split_inclusion_probabilities(self) -> np.ndarray:
        """Exact posterior probability that the tree splits on each column at least once.

        For column ``f`` this is ``P(some internal node of T splits on f | X, y)``,
        computed exactly as ``1 - Q_f(N_0) / Q(N_0)``: ``Q_f`` is the inside sum
        over the trees without a split on ``f`` (one extra inside pass per
        column; see :meth:`arboretum.pcfg.BoxGrammar.feature_inclusion_probabilities`).
        A categorical column's one-hot questions count together.
        Unlike ``expected_splits_per_feature_`` (the expected *number* of such
        nodes), it is a probability, comparable across features.

        With the default phi prior, splits that cut a node's points into the
        same two sets are one split of the grammar, credited to the earliest
        feature (lowest column index): a feature whose cuts always coincide
        with an earlier feature's cuts gets probability 0, and, on small
        nodes where several features separate the same points, earlier
        columns collect the credit.  With ``prior="chipman"`` equivalent
        splits stay apart and no such convention applies.

        Returns
        -------
        p : ndarray of float64, shape (n_features_in_,)
            Probabilities in [0, 1], in the order of the training columns.

        Examples
        --------
        >>> from arboretum.datasets import load_dataset
        >>> from arboretum.pcfg import PCFGTreeClassifier
        >>> X, y = load_dataset("iris", return_X_y=True)
        >>> clf = PCFGTreeClassifier().fit(X, y)
        >>> clf.split_inclusion_probabilities().round(3)
        array([0.774, 0.768, 0.991, 1.   ])
        """
        check_is_fitted(self)
        return self.grammar_.feature_inclusion_probabilities(self._column_groups())

    def n_leaves_distribution(self, max_leaves: int | None = None) -> np.ndarray:
        """Exact posterior distribution of the number of leaves of the tree.

        A dynamic programme over the grammar's states, children before
        parents, convolving the children's leaf-count distributions with the
        production probabilities (see
        :meth:`arboretum.pcfg.BoxGrammar.n_leaves_distribution`).  Its mean is
        ``expected_n_leaves_``.

        Parameters
        ----------
        max_leaves : int or None, default=None
            Largest number of leaves kept; the entries up to it are exact.
            ``None`` keeps enough to hold all but at most ``1e-12`` of the
            posterior mass (or the largest possible tree; at most 4096
            leaves).

        Returns
        -------
        p : ndarray of float64, shape (K + 1,)
            ``p[k]`` is the posterior probability that the tree has ``k``
            leaves (``p[0] == 0``); ``K`` is ``max_leaves`` when given.  The
            mass of larger trees, cut off, is ``1 - p.sum()`` (to rounding).

        Examples
        --------
        >>> from arboretum.datasets import load_dataset
        >>> from arboretum.pcfg import PCFGTreeClassifier
        >>> X, y = load_dataset("iris", return_X_y=True)
        >>> clf = PCFGTreeClassifier().fit(X, y)
        >>> p = clf.n_leaves_distribution()
        >>> int(p.argmax()), round(float(p @ range(p.size)), 4), round(clf.expected_n_leaves_, 4)
        (7, 7.9976, 7.9976)
        """
        check_is_fitted(self)
        return self.grammar_.n_leaves_distribution(max_leaves)[0]

def _column_rungs(coarsest: Binarizer, E: np.ndarray, y: np.ndarray, n_classes: int,
                  rho: np.ndarray) -> list[Binarizer]:
    """The rungs between a single leaf and the coarsest grid: its best 1, 2, 4, ... columns.

    ``coarsest`` holds one question per column (every group of one).  Its
    columns are ranked by the log marginal likelihood of one split on them
    (two Dirichlet leaves against one), and the copies keeping the best
    ``1, 2, 4, ...`` of them (fewer than all) are returned, coarsest first.
    On many rows even the coarsest grid's store can be too large for a limit,
    and a few good columns are a better fallback than a leaf.
    """
    n_groups = len(coarsest.groups_)
    if n_groups <= 1:
        return []
    goes_right = coarsest.ordinal_encoded(E) > 0
    right = np.stack([goes_right[y == k].sum(axis=0) for k in range(n_classes)], axis=1).astype(np.float64)
    total = np.bincount(y, minlength=n_classes).astype(np.float64)
    gain = (log_dirichlet_multinomial(right, rho) + log_dirichlet_multinomial(total - right, rho)
            - log_dirichlet_multinomial(total, rho))
    order = np.argsort(-gain, kind="stable")
    rungs, k = [], 1
    while k < n_groups:
        rungs.append(coarsest._subset(sorted(int(coarsest.groups_[g][0]) for g in order[:k])))
        k *= 2
    return rungs


def _grammar_codes(binarizer: Binarizer, E: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The grammar's codes of an encoded matrix and the number of codes per grammar feature.

    Without any threshold (every column constant, or the single-leaf
    fallback) the grammar gets one feature with a single code: no split, one leaf.
    """
    codes = binarizer.ordinal_encoded(E)
    if codes.shape[1] == 0:
        return np.zeros((E.shape[0], 1), dtype=np.int32), np.ones(1, dtype=np.int64)
    return codes, binarizer.n_codes_


@register("pcfg", lambda: [(K.discover, None), (K.inside, None)], llvm=LEAN)
def _warm_up() -> None:
    """Compile the kernels of a fit (:mod:`arboretum._compile`) on a tiny problem."""
    X, y = tiny_problem()
    exercise_predictions(PCFGTreeClassifier(time_limit=None, random_state=0).fit(X, y), X)
    K.rehash(np.zeros(1, np.uint64), 1, np.full(2, -1, np.int64))  # the node store's growth
