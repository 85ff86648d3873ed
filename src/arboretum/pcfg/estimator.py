"""``PCFGTreeClassifier``: the exact Bayesian posterior over decision trees (BCART-PCFG)."""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from ..bayes import ChipmanPrior
from ..data import (
    check_classification_targets_encoded,
    check_int,
    check_numeric_features,
    check_positive_number,
)
from ..tree import Tree
from .binning import BINNINGS, FeatureBinner
from .grammar import BoxGrammar, PhiPrior, SampledTrees
from .store import GrammarTooLargeError, build_node_store, preflight
from .trees import TreeFactory

__all__ = ["PCFGTreeClassifier"]

PREDICT_METHODS = ("map", "bma", "sample")
ENSEMBLES = ("paths", "trees")
PRIORS = ("phi", "chipman")


def _check_choice(value: Any, name: str, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}; got {value!r}")
    return value


def _check_max_values(value: Any, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer >= 2 or None; got {value!r} ({type(value).__name__})")
    if value < 2:
        raise ValueError(f"{name} must be an integer >= 2 or None; got {value!r}")
    return int(value)


class PCFGTreeClassifier(ClassifierMixin, BaseEstimator):
    """Exact Bayesian decision trees through a probabilistic grammar of bounding boxes (BCART-PCFG).

    The posterior over trees is ``P(T | X, y) ∝ phi ** -b(T) * prod_leaves
    L(leaf)`` (Sullivan, Tiwari, Thrun & Piech): ``b(T)`` is the number of
    leaves, and ``L`` is the Dirichlet-multinomial marginal likelihood of a
    leaf's labels under a Dirichlet(``alpha``) prior.  Trees are counted up to
    the partition they induce on the training points (two splits producing the
    same two child point sets are one split).  Every quantity is exact: the fit
    enumerates every point set cut out by an axis-aligned box (the grammar's
    nonterminals) and runs sum- and max-product dynamic programmes over them,
    so the MAP tree is certified, samples are exact and independent, and the
    posterior-averaged prediction (the "infinite ensemble") is computed, not
    estimated.

    Real-valued features are first mapped to small integer codes (the paper
    buckets every feature with more than 10 distinct values to 10); the cost
    grows roughly like the number of boxes, exponential in the number of
    features, so bucketing is what makes a fit feasible.  Limits are checked
    and reported as :class:`~arboretum.pcfg.GrammarTooLargeError`, never
    silently approximated.

    Parameters
    ----------
    log_phi : float, default=2.0
        ``ln phi``, the per-leaf log penalty of the prior ``phi ** -b(T)``
        (the paper's single hyperparameter, ``ln phi = 2``).  Any finite
        real; larger values give smaller MAP trees.  Ignored by the Chipman
        prior.
    alpha : float or array-like of float, default=1.0
        Dirichlet concentration of every leaf's class probabilities, one
        positive value per class in the order of ``classes_`` (a scalar is
        used for every class).
    prior : {"phi", "chipman"} or arboretum.bayes.ChipmanPrior, default="phi"
        ``"phi"``: the paper's prior.  ``"chipman"`` (``ChipmanPrior(0.95,
        0.5)``) or a :class:`~arboretum.bayes.ChipmanPrior`: Chipman, George &
        McCulloch's depth prior as used by MAPTree (a node at depth ``d``
        splits with probability ``alpha_s (1 + d) ** -beta_s`` on a feature
        chosen uniformly, then a threshold chosen uniformly); the grammar's
        symbols then carry the depth and equivalent splits on different
        features are kept apart, exactly as in MAPTree.
    max_values : int or None, default=10
        Bucket every feature with more than this many distinct training values
        to this many values; ``None`` never buckets.
    feature_max_values : dict or None, default=None
        Per-feature overrides of ``max_values``: ``{column index or column
        name: int >= 2 or None}``.
    binning : {"uniform", "quantile"}, default="uniform"
        Equal-width or equal-frequency buckets, fitted on the training data.
    max_nodes : int, default=5_000_000
        Largest number of grammar nodes (distinct point sets) allowed.
    memory_limit : float or None, default=4096
        MiB that the node store and the dynamic-programme tables may hold;
        ``None`` for no limit beyond ``max_nodes``.
    predict_method : {"map", "bma", "sample"}, default="map"
        Default ``method`` of :meth:`predict_proba` and :meth:`predict`:
        the MAP tree, the exact posterior predictive (Bayesian model
        averaging over every tree), or a finite ensemble of posterior samples.
    n_samples : int, default=100
        Ensemble size of ``method="sample"``.
    ensemble : {"paths", "trees"}, default="paths"
        ``method="sample"``: draw ``n_samples`` independent query paths per
        query (Algorithm 1 of the paper), or ``n_samples`` whole trees shared
        by all queries.  Both average the leaves' posterior predictive.
    random_state : int, RandomState or None, default=None
        Seed of ``method="sample"`` when :meth:`predict_proba` gets none.

    Attributes
    ----------
    tree_, map_tree_ : arboretum.tree.Tree
        The MAP tree (the same object).  Thresholds are in raw units; leaves
        carry the training class counts and the posterior predictive
        ``(n_c + alpha_c) / (n + sum(alpha))``.
    log_evidence_ : float
        ``log P(y | X)``, the marginal likelihood under the prior.
    map_log_probability_ : float
        ``log P(map_tree_ | X, y)``, the normalised posterior probability of
        the MAP tree (``log Q_max(N_0) - log Q(N_0)``).
    map_log_posterior_ : float
        ``log P(map_tree_, y | X)`` (prior times likelihood);
        ``map_log_probability_ + log_evidence_``.  With a Chipman prior this
        equals MAPTree's ``log_posterior_``.
    log_prior_normalizer_ : float
        ``log Z(X)`` of the phi prior, ``log sum_T phi ** -b(T)`` (0 for the
        normalised Chipman prior).
    log_n_trees_ : float
        Natural log of the number of trees in the (data-dependent) tree space.
    expected_n_leaves_ : float
        Posterior mean of the number of leaves.
    expected_splits_per_feature_ : ndarray of shape (n_features_in_,)
        Posterior expected number of internal nodes splitting on each feature
        (a Bayesian feature importance; a split equivalent to one on an
        earlier feature is credited to the earlier one).
    n_nodes_ : int
        Grammar nodes: distinct non-empty point sets cut out by boxes.
    n_split_edges_ : int
        Splits over all nodes (after de-duplication for the phi prior).
    n_values_ : ndarray of int
        Distinct codes per feature after bucketing (``t_f``).
    binner_ : FeatureBinner
        The fitted feature coding (edges, raw thresholds).
    grammar_ : BoxGrammar
        The node store, inside tables and production probabilities.
    preflight_ : Preflight
        The pre-flight size estimate.
    fit_time_ : float
        Seconds spent in :meth:`fit`.
    peak_memory_ : int
        Bytes held by the store and tables at their largest.
    classes_, n_features_in_, feature_names_in_
        As in scikit-learn.

    Examples
    --------
    >>> from arboretum.datasets import load_dataset
    >>> from arboretum.pcfg import PCFGTreeClassifier
    >>> X, y = load_dataset("iris", return_X_y=True)
    >>> clf = PCFGTreeClassifier().fit(X, y)
    >>> clf.tree_.n_nodes, round(clf.map_log_probability_, 4)
    (7, -4.4067)
    """

    def __init__(
        self,
        log_phi: float = 2.0,
        alpha: float | Any = 1.0,
        prior: str | ChipmanPrior = "phi",
        max_values: int | None = 10,
        feature_max_values: Mapping[int | str, int | None] | None = None,
        binning: str = "uniform",
        max_nodes: int = 5_000_000,
        memory_limit: float | None = 4096,
        predict_method: str = "map",
        n_samples: int = 100,
        ensemble: str = "paths",
        random_state: Any = None,
    ) -> None:
        self.log_phi = log_phi
        self.alpha = alpha
        self.prior = prior
        self.max_values = max_values
        self.feature_max_values = feature_max_values
        self.binning = binning
        self.max_nodes = max_nodes
        self.memory_limit = memory_limit
        self.predict_method = predict_method
        self.n_samples = n_samples
        self.ensemble = ensemble
        self.random_state = random_state

    # -- validation ------------------------------------------------------------------------

    def _check_alpha(self, n_classes: int) -> np.ndarray:
        expected = f"a positive number or a sequence of {n_classes} positive numbers (one per class)"
        try:
            arr = np.asarray(self.alpha, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"alpha must be {expected}; got {self.alpha!r}") from None
        if arr.ndim == 0:
            arr = np.full(n_classes, float(arr))
        if arr.ndim != 1 or arr.size != n_classes or not np.all(np.isfinite(arr) & (arr > 0)):
            raise ValueError(f"alpha must be {expected}; got {self.alpha!r}")
        return arr

    def _prior_object(self) -> PhiPrior | ChipmanPrior:
        if isinstance(self.prior, ChipmanPrior):
            return self.prior
        _check_choice(self.prior, "prior", PRIORS + ("ChipmanPrior(alpha, beta)",))
        if self.prior == "chipman":
            return ChipmanPrior()
        if isinstance(self.log_phi, (bool, np.bool_)) or not isinstance(self.log_phi, numbers.Real):
            raise TypeError(f"log_phi must be a finite real number; got {self.log_phi!r}")
        if not math.isfinite(float(self.log_phi)):
            raise ValueError(f"log_phi must be a finite real number; got {self.log_phi!r}")
        return PhiPrior(float(self.log_phi))

    def _check_params(self, n_classes: int) -> tuple[np.ndarray, PhiPrior | ChipmanPrior]:
        alpha = self._check_alpha(n_classes)
        prior = self._prior_object()
        _check_max_values(self.max_values, "max_values")
        _check_choice(self.binning, "binning", BINNINGS)
        check_int(self.max_nodes, "max_nodes", minimum=1)
        check_positive_number(self.memory_limit, "memory_limit", allow_none=True)
        _check_choice(self.predict_method, "predict_method", PREDICT_METHODS)
        check_int(self.n_samples, "n_samples", minimum=1)
        _check_choice(self.ensemble, "ensemble", ENSEMBLES)
        return alpha, prior

    def _max_values_per_feature(self, n_features: int) -> list[int | None]:
        values: list[int | None] = [self.max_values] * n_features
        overrides = self.feature_max_values
        if overrides is None:
            return values
        if not isinstance(overrides, Mapping):
            raise TypeError(
                "feature_max_values must be None or a dict {column index or name: int >= 2 or None}; "
                f"got {type(overrides).__name__}"
            )
        names = list(getattr(self, "feature_names_in_", []))
        for key, value in overrides.items():
            if isinstance(key, str):
                if key not in names:
                    known = f"the column names {names}" if names else "no column names (X has none)"
                    raise ValueError(f"feature_max_values names column {key!r}, but X has {known}")
                index = names.index(key)
            elif isinstance(key, numbers.Integral) and not isinstance(key, (bool, np.bool_)):
                index = int(key)
                if not 0 <= index < n_features:
                    raise ValueError(
                        f"feature_max_values has column index {index}, outside [0, {n_features - 1}]"
                    )
            else:
                raise TypeError(f"feature_max_values keys must be column indices or names; got {key!r}")
            values[index] = _check_max_values(value, f"feature_max_values[{key!r}]")
        return values

    def _validate_X(self, X: Any) -> np.ndarray:
        X = validate_data(self, X, reset=False, dtype=None, ensure_all_finite=False)
        return check_numeric_features(X, estimator_name=type(self).__name__)

    # -- fitting ---------------------------------------------------------------------------

    def fit(self, X: Any, y: Any) -> PCFGTreeClassifier:
        """Build the grammar of ``(X, y)``: every node, the inside tables and the MAP tree.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Real-valued features (finite).
        y : array-like of shape (n_samples,)
            Class labels, at least two distinct values.

        Returns
        -------
        self : PCFGTreeClassifier

        Raises
        ------
        GrammarTooLargeError
            If the grammar would exceed ``max_nodes`` or ``memory_limit``.
        """
        t0 = time.perf_counter()
        name = type(self).__name__
        X, y = validate_data(self, X, y, dtype=None, ensure_all_finite=False, reset=True)
        X = check_numeric_features(X, estimator_name=name)
        y_enc, classes = check_classification_targets_encoded(y, n_samples=X.shape[0], estimator_name=name)
        alpha, prior = self._check_params(len(classes))
        max_values = self._max_values_per_feature(X.shape[1])

        binner = FeatureBinner(max_values, self.binning).fit(X)
        codes = binner.transform(X)
        chipman = isinstance(prior, ChipmanPrior)
        memory = None if self.memory_limit is None else int(self.memory_limit * 2**20)
        pre = preflight(codes, len(classes), max_nodes=self.max_nodes, dedupe=not chipman,
                        n_codes=binner.n_codes_)
        advice = (
            f"bucket the features more coarsely (values per feature now {binner.n_values_.tolist()}; "
            f"lower max_values={self.max_values!r} or set feature_max_values for the widest features), "
            f"use fewer features, or raise max_nodes={self.max_nodes:,}"
            + ("" if memory is None else f" / memory_limit={self.memory_limit} MiB") + "."
        )
        if pre.refuse:
            raise GrammarTooLargeError(
                f"BCART-PCFG node store too large: the pre-flight estimate is "
                f"{'at least ' if pre.lower_bound else 'about '}{pre.estimate:,.0f} nodes, over "
                f"max_nodes={self.max_nodes:,} (pre-flight: {pre.describe()}). The method is exact and never "
                f"approximates; to fit, {advice}"
            )
        store = build_node_store(codes, y_enc, len(classes), n_codes=binner.n_codes_, dedupe=not chipman,
                                 chipman_weights=chipman, max_nodes=self.max_nodes, memory_limit=memory,
                                 advice=advice, pre=pre)
        grammar = BoxGrammar(store, alpha, prior, memory_limit=memory, advice=advice)

        self.classes_ = classes
        self.alpha_ = alpha
        self.binner_ = binner
        self.n_values_ = binner.n_values_.copy()
        self.grammar_ = grammar
        self.preflight_ = pre
        self.n_nodes_ = store.n_nodes
        self.n_split_edges_ = store.n_edges
        names = list(self.feature_names_in_) if hasattr(self, "feature_names_in_") else None
        self._factory = TreeFactory(store, binner, alpha, classes, names)
        self.map_tree_ = self._factory.build(grammar.map_derivation(), 0)
        self.tree_ = self.map_tree_
        log_prior = grammar.log_prior_inside()
        self.log_evidence_ = grammar.log_Q_root - log_prior
        self.map_log_probability_ = grammar.log_Qmax_root - grammar.log_Q_root
        self.map_log_posterior_ = grammar.log_Qmax_root - log_prior
        self.log_prior_normalizer_ = log_prior - prior.log_phi if not chipman else 0.0
        self.log_n_trees_ = grammar.log_n_trees()
        self.expected_n_leaves_ = grammar.expected_leaves()
        self.expected_splits_per_feature_ = grammar.expected_feature_splits()
        self.peak_memory_ = int(max(store.peak_bytes, grammar.nbytes))
        self.fit_time_ = time.perf_counter() - t0
        return self

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
        trees : list of arboretum.tree.Tree
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

    def predict_proba(self, X: Any, method: str | None = None, n_samples: int | None = None,
                      random_state: Any = None, ensemble: str | None = None) -> np.ndarray:
        """Class probabilities of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
        method : {"map", "bma", "sample"}, optional
            ``"map"``: the MAP tree's leaf predictive.  ``"bma"``: the exact
            posterior predictive, the average over *all* trees weighted by
            their posterior probability (spec §3.7).  ``"sample"``: the average
            over ``n_samples`` posterior samples (paths or trees, see
            ``ensemble``).  Defaults to ``predict_method``.
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
        check_is_fitted(self)
        method = _check_choice(self.predict_method if method is None else method, "method", PREDICT_METHODS)
        X = self._validate_X(X)
        if method == "map":
            return self.tree_.predict_proba(X)
        codes = self.binner_.transform(X)
        if method == "bma":
            return self.grammar_.predict_bma(codes)
        n = check_int(self.n_samples if n_samples is None else n_samples, "n_samples", minimum=1)
        how = _check_choice(self.ensemble if ensemble is None else ensemble, "ensemble", ENSEMBLES)
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

    def apply(self, X: Any) -> np.ndarray:
        """Index (in ``tree_``) of the MAP-tree leaf each sample reaches."""
        check_is_fitted(self)
        return self.tree_.apply(self._validate_X(X))

    def export_text(self, feature_names: Any = None, **kwargs: Any) -> str:
        """The MAP tree as indented text (see :meth:`arboretum.tree.Tree.export_text`)."""
        check_is_fitted(self)
        return self.tree_.export_text(feature_names=feature_names, **kwargs)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = True
        return tags

    # -- posterior summaries (issue 18, item 5; used by arboretum.plot) ----------------------
    # One self-contained block: it needs only ``grammar_`` and ``n_features_in_``.

    def split_inclusion_probabilities(self) -> np.ndarray:
        """Exact posterior probability that the tree splits on each feature at least once.

        For feature ``f`` this is ``P(some internal node of T splits on f | X, y)``,
        computed exactly as ``1 - Q_f(N_0) / Q(N_0)``: ``Q_f`` is the inside sum
        over the trees without a split on ``f`` (one extra inside pass per
        feature; see :meth:`arboretum.pcfg.BoxGrammar.feature_inclusion_probabilities`).
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
        return self.grammar_.feature_inclusion_probabilities([[f] for f in range(self.n_features_in_)])

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
