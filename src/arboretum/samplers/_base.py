"""Pieces shared by the BCART samplers: the posterior tables, sampled trees, the estimator base.

* :class:`Problem` holds one validated data set and the lookup tables of its
  BCART posterior, turns tree encodings into :class:`~arboretum.tree.Tree`
  objects and evaluates their log posterior;
* :class:`TreeSamples` is the read-only, list-like sequence of sampled trees
  that the samplers return (trees are built on first access, identical trees
  share one object);
* :class:`BaseTreeSampler` is the scikit-learn estimator skeleton: input and
  parameter validation, seeding, the best tree, and prediction by the best tree
  or by the posterior average over the samples.

Trees travel between the kernels and Python as *pre-order encodings* (see
:mod:`arboretum.samplers._kernels`): an ``int32`` vector with the split feature
of each internal node and ``-1`` for each leaf, in pre-order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import ClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import _num_samples, check_is_fitted

from .._numba import dirichlet_tables, pack_columns
from ..base import TreeEstimator, constraints, deprecated_attribute
from ..bayes import ChipmanPrior, validate_rho
from ..data import Options, check_classification_targets_encoded
from ..tree import BINARY, Tree, TreeBuilder
from . import _kernels

__all__ = ["BaseTreeSampler", "Problem", "TreeSamples", "encoding_from_tree", "encoding_to_paren"]


# ---------------------------------------------------------------------------
# Encodings
# ---------------------------------------------------------------------------


def encoding_from_tree(tree: Tree, n_features: int) -> NDArray[np.int32]:
    """Pre-order encoding of a tree with binary-feature splits.

    Parameters
    ----------
    tree : Tree
        A tree whose splits are all ``BINARY`` (left child iff ``x[f] == 0``).
    n_features : int
        Number of features of the data the tree will be used on.

    Returns
    -------
    ndarray of int32
        Split feature of each internal node and ``-1`` for each leaf, in pre-order.

    Raises
    ------
    TypeError
        If ``tree`` is not a :class:`~arboretum.tree.Tree`.
    ValueError
        If a split is not a binary-feature split or tests a feature ``>= n_features``.
    """
    if not isinstance(tree, Tree):
        raise TypeError(f"expected an arboretum.tree.Tree; got {type(tree).__name__}")
    enc: list[int] = []
    stack = [0]
    while stack:
        node = stack.pop()
        if tree.children_left[node] < 0:
            enc.append(-1)
            continue
        if int(tree.split_kind[node]) != BINARY:
            raise ValueError(
                f"node {node} of the tree is not a binary-feature split; the BCART samplers only use "
                f"BINARY splits (left iff x[f] == 0)"
            )
        f = int(tree.feature[node])
        if f >= n_features:
            raise ValueError(f"node {node} of the tree splits on feature {f}, but X has {n_features} features")
        enc.append(f)
        stack.extend((int(tree.children_right[node]), int(tree.children_left[node])))
    return np.asarray(enc, dtype=np.int32)


def _check_encoding(enc: NDArray[np.int32], n_features: int) -> None:
    """Raise ValueError unless ``enc`` is a valid pre-order encoding over ``n_features`` features."""
    enc = np.asarray(enc)
    if enc.ndim != 1 or enc.size == 0 or enc.min() < -1 or enc.max() >= n_features:
        raise ValueError(f"malformed tree encoding {enc.tolist()[:20]}")
    # open slots after each token: 1 at the start, +1 for a split (two children, one slot used), -1 for a leaf
    slots = 1 + np.cumsum(np.where(enc >= 0, 1, -1))
    if slots[-1] != 0 or (slots[:-1] <= 0).any():
        raise ValueError(f"malformed tree encoding {enc.tolist()[:20]}")


def encoding_to_paren(enc: Sequence[int]) -> str:
    """MAPTree parenthesis notation of an encoded tree (see :meth:`arboretum.tree.Tree.to_paren`).

    Examples
    --------
    >>> encoding_to_paren([0, 1, -1, -1, -1])
    '((1)0)'
    """
    out: list[str] = []
    # Frames [feature, children seen]; a leaf is the empty string.
    stack: list[list[int]] = []
    for token in enc:
        token = int(token)
        if token >= 0:
            out.append("(")
            stack.append([token, 0])
            continue
        while stack:
            frame = stack[-1]
            frame[1] += 1
            if frame[1] == 1:
                out.append(str(frame[0]))
                break
            out.append(")")
            stack.pop()
    return "".join(out)


# ---------------------------------------------------------------------------
# The posterior of one data set
# ---------------------------------------------------------------------------


class Problem:
    """One data set and the lookup tables of its BCART posterior.

    Parameters
    ----------
    X : ndarray of uint8, shape (n_samples, n_features)
        Validated binary features.
    y : ndarray of int, shape (n_samples,)
        Class indices ``0 .. n_classes - 1``.
    rho : ndarray of float64, shape (n_classes,)
        Dirichlet concentrations, one per class.
    alpha, beta : float
        Parameters of the :class:`~arboretum.bayes.ChipmanPrior`.
    classes : ndarray, optional
        Class labels written into the trees.
    feature_names : list of str, optional
        Feature names written into the trees.

    Attributes
    ----------
    dm : arboretum._numba.DirichletTables
        The leaf likelihood tables (relative to the empty leaf).
    log_split, log_stop : ndarray
        The prior tables described in :mod:`arboretum.samplers._kernels`.
    data : arboretum.samplers._kernels.Data
        The named tuple of the data and tables that the kernels take.
    capacity : int
        Maximum number of nodes of a tree with non-degenerate splits:
        ``min(2 n - 1, 2 ** (F + 1) - 1)`` (every leaf holds a sample and a
        feature is used at most once on a path).
    """

    def __init__(
        self,
        X: NDArray[np.uint8],
        y: NDArray[np.integer],
        rho: NDArray[np.float64],
        alpha: float,
        beta: float,
        classes: NDArray[Any] | None = None,
        feature_names: list[str] | None = None,
    ) -> None:
        self.X = np.ascontiguousarray(X, dtype=np.uint8)
        self.y = np.ascontiguousarray(y, dtype=np.int64)
        self.rho = np.asarray(rho, dtype=np.float64)
        self.n_samples, self.n_features = self.X.shape
        self.n_classes = int(self.rho.shape[0])
        self.alpha, self.beta = float(alpha), float(beta)
        self.classes = np.arange(self.n_classes) if classes is None else np.asarray(classes)
        self.feature_names = feature_names
        prior = ChipmanPrior(alpha, beta)
        depths = np.arange(self.n_features + 2)
        self.log_split = np.asarray(prior.log_p_split(depths), dtype=np.float64)
        self.log_stop = np.asarray(prior.log_p_stop(depths), dtype=np.float64)
        self.dm = dirichlet_tables(self.rho, self.n_samples, relative=True)
        one_hot = self.y[:, None] == np.arange(self.n_classes)[None, :]
        #: The named tuple the kernels take (see :mod:`arboretum.samplers._kernels`).
        self.data = _kernels.Data(
            self.X, self.y, pack_columns(self.X), pack_columns(one_hot), *self.dm, self.log_split, self.log_stop,
        )
        by_samples = 2 * self.n_samples - 1
        self.capacity = by_samples if self.n_features >= 40 else min(by_samples, 2 ** (self.n_features + 1) - 1)

    def log_posterior(self, enc: NDArray[np.int32]) -> float:
        """``log P(T, Y | X)`` of an encoded tree (``-inf`` if a split is degenerate)."""
        value = _kernels.encoding_log_posterior(np.asarray(enc, dtype=np.int32), self.data)
        if np.isnan(value):
            raise ValueError(f"malformed tree encoding {np.asarray(enc).tolist()}")
        return float(value)

    def tree(self, enc: NDArray[np.int32]) -> Tree:
        """Build the :class:`~arboretum.tree.Tree` of an encoding.

        Leaves (and internal nodes) hold the training class counts ``c`` of
        their samples and the posterior mean ``(c + rho) / (n + sum(rho))``.
        """
        builder = TreeBuilder(self.n_features, classes=self.classes, feature_names=self.feature_names)
        rho, rho_sum, K = self.rho, float(self.rho.sum()), self.n_classes
        enc = np.asarray(enc)

        def add(idx: NDArray[np.intp], depth: int) -> int:
            counts = np.bincount(self.y[idx], minlength=K).astype(np.float64)
            return builder.add_node(counts, (counts + rho) / (counts.sum() + rho_sum), depth)

        root = add(np.arange(self.n_samples), 0)
        # Frames (node id, samples, depth, feature, left child id or -1).
        stack: list[list[Any]] = []
        pos = 0
        current = (root, np.arange(self.n_samples), 0)
        while True:
            f = int(enc[pos])
            pos += 1
            if f >= 0:
                node, idx, depth = current
                stack.append([node, idx, depth, f, -1])
                goes_right = self.X[idx, f] != 0
                child = add(idx[~goes_right], depth + 1)
                current = (child, idx[~goes_right], depth + 1)
                continue
            # A leaf: climb until a frame still needs its right child.
            finished = current[0]
            while stack:
                frame = stack[-1]
                if frame[4] < 0:
                    frame[4] = finished
                    node, idx, depth, f = frame[0], frame[1], frame[2], frame[3]
                    goes_right = self.X[idx, f] != 0
                    child = add(idx[goes_right], depth + 1)
                    current = (child, idx[goes_right], depth + 1)
                    break
                stack.pop()
                builder.set_split(frame[0], BINARY, frame[3], 0.5, frame[4], finished)
                finished = frame[0]
            else:
                return builder.build()


# ---------------------------------------------------------------------------
# Sampled trees
# ---------------------------------------------------------------------------


class TreeSamples(Sequence):
    """Read-only, list-like sequence of sampled trees.

    Sampling visits the same trees many times, and turning a tree into a
    :class:`~arboretum.tree.Tree` costs far more than an MCMC iteration, so the
    samples are stored as indices into their *distinct* trees, which are built on
    first access and cached: ``samples[i] is samples[j]`` when both are the same
    tree.  Indexing, slicing, ``len``, iteration and ``list(samples)`` behave as
    for a list of trees.

    Parameters
    ----------
    encodings : list of ndarray of int32
        Pre-order encodings of the distinct trees.
    index : array-like of int
        ``index[i]`` is the distinct tree of sample ``i``.
    problem : Problem
        Builds the trees (on the searched 0/1 columns).
    to_raw : callable, optional
        Rewrites a tree on the searched columns as a tree on the raw columns
        (the estimator's binarizer); the samples are those raw trees.

    Attributes
    ----------
    index : ndarray of int64, shape (n_samples,)
        Distinct-tree id of every sample.
    n_distinct : int
        Number of distinct trees.
    """

    def __init__(
        self,
        encodings: list[NDArray[np.int32]],
        index: ArrayLike,
        problem: Problem,
        to_raw: Callable[[Tree], Tree] | None = None,
    ) -> None:
        self._encodings = list(encodings)
        self.index = np.asarray(index, dtype=np.int64)
        self.index.setflags(write=False)
        self._problem = problem
        self._to_raw = to_raw
        self._cache: dict[int, Tree] = {}

    @property
    def n_distinct(self) -> int:
        """Number of distinct trees among the samples."""
        return len(self._encodings)

    def distinct(self, j: int) -> Tree:
        """The ``j``-th distinct tree (built on first access)."""
        j = int(j)
        if not 0 <= j < len(self._encodings):
            raise IndexError(f"distinct tree index {j} out of range [0, {len(self._encodings)})")
        if j not in self._cache:
            tree = self._problem.tree(self._encodings[j])
            self._cache[j] = tree if self._to_raw is None else self._to_raw(tree)
        return self._cache[j]

    def encoding(self, j: int) -> NDArray[np.int32]:
        """Pre-order encoding of the ``j``-th distinct tree (a copy)."""
        return self._encodings[int(j)].copy()

    def paren(self, j: int) -> str:
        """MAPTree parenthesis notation of the ``j``-th distinct tree."""
        return encoding_to_paren(self._encodings[int(j)])

    def __len__(self) -> int:
        return int(self.index.shape[0])

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self.distinct(j) for j in self.index[i]]
        if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)):
            raise TypeError(f"sample indices must be integers or slices; got {type(i).__name__}")
        return self.distinct(self.index[i])

    def __iter__(self) -> Iterator[Tree]:
        for j in self.index:
            yield self.distinct(j)

    def __repr__(self) -> str:
        return f"TreeSamples({len(self)} samples, {self.n_distinct} distinct trees)"


@dataclass
class SampleSet:
    """What a sampler returns to :meth:`BaseTreeSampler.fit`."""

    encodings: list[NDArray[np.int32]]  # distinct trees
    index: NDArray[np.int64]  # distinct-tree id of every sample
    log_posteriors: NDArray[np.float64]  # of every sample
    best: NDArray[np.int32]  # encoding of the best tree seen
    stop_reason: str  # "completed" or "time_limit"
    extra: dict[str, Any] = field(default_factory=dict)  # sampler-specific fitted attributes


# ---------------------------------------------------------------------------
# The estimator skeleton
# ---------------------------------------------------------------------------


#: Parameters every sampler has.
SAMPLER_PARAMETERS = ("alpha", "beta", "rho", "time_limit", "random_state", "binarize", "binarizer", "verbose")
SAMPLER_CONSTRAINTS: dict = constraints(*SAMPLER_PARAMETERS, predict_method=[Options(("average", "map"))])


class BaseTreeSampler(ClassifierMixin, TreeEstimator):
    """Shared skeleton of the BCART samplers (not an estimator on its own).

    Subclasses define ``__init__`` (storing the parameters of
    ``SAMPLER_CONSTRAINTS`` among their own), ``_parameter_constraints``,
    :meth:`_check_sampler_params` and :meth:`_sample`.
    """

    alpha: float
    beta: float
    rho: Any
    time_limit: float | None
    random_state: Any
    _predict_methods = ("average", "map")

    best_tree_ = deprecated_attribute("tree_")
    best_log_posterior_ = deprecated_attribute("log_posterior_")

    # -- hooks -----------------------------------------------------------------------------
    def _check_sampler_params(self) -> None:
        """Check what the parameter table cannot (relations between parameters)."""

    def _sample(self, problem: Problem, rng: np.random.Generator, deadline: float | None) -> SampleSet:
        """Run the sampler on ``problem``; stop at ``deadline`` (``time.perf_counter()`` value)."""
        raise NotImplementedError

    def _sample_weights(self) -> NDArray[np.float64]:
        """Weight of every sample in posterior averages (uniform unless overridden)."""
        n = len(self.samples_)
        return np.full(n, 1.0 / n) if n else np.zeros(0)

    def _stop_detail(self) -> str:
        """What a stopped run returns, for the limit warning."""
        return f"{len(self.samples_):,} samples kept; tree_ is the most probable tree seen"

    # -- fitting ---------------------------------------------------------------------------
    def fit(self, X: Any, y: Any) -> BaseTreeSampler:
        """Sample trees from the BCART posterior of ``(X, y)``.

        Parameters
        ----------
        X : array-like or pandas DataFrame of shape (n_samples, n_features)
            Binary (0/1 or boolean) features, or, unless ``binarize`` is False,
            any numbers, booleans, strings or categories without missing
            values (binarised as in :class:`~arboretum.MAPTreeClassifier`).
        y : array-like of shape (n_samples,)
            Class labels (at least two distinct values).

        Returns
        -------
        self
        """
        self._validate_params()
        self._check_sampler_params()
        y_enc, classes = check_classification_targets_encoded(
            y, n_samples=_num_samples(X), estimator_name=type(self).__name__
        )
        clock = self._start_clock()
        rho = validate_rho(self.rho, len(classes))
        Xb = self._fit_questions(X, y_enc)
        if Xb.shape[1] == 0:  # every raw column is constant: only the single leaf is possible
            Xb = np.zeros((Xb.shape[0], 1), dtype=np.uint8)
        deadline = clock.deadline
        seed = check_random_state(self.random_state).randint(0, 2**32, size=4, dtype=np.uint64)
        rng = np.random.default_rng(seed)

        problem = Problem(Xb, y_enc, rho, self.alpha, self.beta, classes=classes,
                          feature_names=self._search_feature_names())
        result = self._sample(problem, rng, deadline)

        self.classes_ = classes
        self.rho_ = rho
        self.samples_ = TreeSamples(result.encodings, result.index, problem, to_raw=self._raw_tree)
        self.log_posteriors_ = np.asarray(result.log_posteriors, dtype=np.float64)
        search_tree = problem.tree(result.best)
        # the kernels' value (bayes.log_posterior's to rounding): that one spent 0.3-0.9 s after the
        # clock on 500,000 rows
        self.log_posterior_ = problem.log_posterior(result.best)
        self.tree_ = self._raw_tree(search_tree)
        for name, value in result.extra.items():
            setattr(self, name, value)
        self.fit_time_ = clock.elapsed()
        self._set_stop(result.stop_reason, self._stop_detail())
        return self

    # -- persistence -----------------------------------------------------------------------
    def _get_fitted_state(self) -> dict[str, Any]:
        state = super()._get_fitted_state()
        samples = state.pop("samples_")
        problem = samples._problem
        encs = samples._encodings
        state["samples_"] = {
            "encodings": np.concatenate(encs).astype(np.int32) if encs else np.zeros(0, dtype=np.int32),
            "lengths": np.array([e.shape[0] for e in encs], dtype=np.int64),
            "index": samples.index.copy(),
            "X": problem.X,
            "y": problem.y,
            "feature_names": problem.feature_names,
        }
        return state

    def _set_fitted_state(self, state: dict[str, Any]) -> None:
        s = dict(state)
        data = s.pop("samples_")
        super()._set_fitted_state(s)
        if not isinstance(data, dict):
            raise ValueError("samples_ must hold the encodings, index and training data")
        X = np.asarray(data["X"], dtype=np.uint8)
        y = np.asarray(data["y"], dtype=np.int64)
        if X.ndim != 2 or y.shape != (X.shape[0],) or (y.size and not 0 <= y.min() <= y.max() < len(self.classes_)):
            raise ValueError("samples_ holds inconsistent training data")
        problem = Problem(X, y, self.rho_, self.alpha, self.beta, classes=self.classes_,
                          feature_names=data["feature_names"])
        lengths = np.asarray(data["lengths"], dtype=np.int64)
        flat = np.asarray(data["encodings"], dtype=np.int32)
        if lengths.sum() != flat.shape[0] or (lengths < 1).any():
            raise ValueError("samples_ encodings do not match their lengths")
        encs = np.split(flat, np.cumsum(lengths)[:-1]) if lengths.size else []
        for e in encs:
            _check_encoding(e, problem.n_features)
        index = np.asarray(data["index"], dtype=np.int64)
        if index.size and not 0 <= index.min() <= index.max() < len(encs):
            raise ValueError("samples_ index refers to trees that are not stored")
        self.samples_ = TreeSamples(encs, index, problem, to_raw=self._raw_tree)

    # -- prediction ------------------------------------------------------------------------
    def predict_proba(self, X: Any, method: str | None = None) -> NDArray[np.float64]:
        """Class probabilities.

        Parameters
        ----------
        X : array-like or pandas DataFrame of shape (n_samples, n_features_in_)
            Raw features, as in ``fit``.
        method : {"average", "map"}, optional
            ``"average"``: the average of the leaf predictive probabilities
            over the sampled trees, weighted by the sample weights (uniform for
            MCMC, the particle weights for SMC): a Monte Carlo estimate of the
            posterior predictive.  ``"map"``: the posterior mean class
            probabilities of the leaf of ``tree_`` (the most probable tree
            seen) that each sample reaches.  Default: ``predict_method``, or
            ``"map"`` when a time limit stopped the sampler before it kept any
            sample.  (``"best"`` is the deprecated name of ``"map"``.)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        if method is None and self.predict_method == "average" and len(getattr(self, "samples_", [1])) == 0:
            method = "map"  # a limit stopped the sampler before it kept a sample: tree_ is all there is
        method = self._method(method)
        if method == "map":
            leaves = self.apply(X)  # checks that the estimator is fitted first
            return self.tree_.value[leaves].copy()
        Xb = self._binary_X(X)
        weights = self._sample_weights()
        if len(weights) == 0:
            raise ValueError(
                "no samples were kept (the time limit stopped the sampler during burn-in); "
                "use method='map' or a longer time_limit"
            )
        samples = self.samples_
        per_tree = np.bincount(samples.index, weights=weights, minlength=samples.n_distinct)
        used = np.flatnonzero(per_tree > 0)
        encs = [samples._encodings[j] for j in used]
        offsets = np.zeros(len(encs) + 1, dtype=np.int64)
        offsets[1:] = np.cumsum([e.shape[0] for e in encs])
        problem = samples._problem
        if Xb.shape[1] != problem.n_features:  # constant training columns: the placeholder column
            Xb = np.zeros((Xb.shape[0], problem.n_features), dtype=np.uint8)
        out = np.zeros((Xb.shape[0], problem.n_classes), dtype=np.float64)
        _kernels.accumulate_proba(
            np.concatenate(encs).astype(np.int32), offsets, per_tree[used] / per_tree[used].sum(),
            problem.X, problem.y, problem.rho, np.ascontiguousarray(Xb, dtype=np.uint8), out,
        )
        return out

    def predict(self, X: Any, method: str | None = None) -> NDArray[Any]:
        """Most probable class under :meth:`predict_proba` (ties: the first class)."""
        proba = self.predict_proba(X, method=method)
        return self.classes_[np.argmax(proba, axis=1)]

    def __sklearn_tags__(self):  # noqa: D105
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = True
        tags.non_deterministic = self.random_state is None
        return tags
