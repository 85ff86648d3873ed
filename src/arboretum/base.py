"""The estimator base every arboretum model builds on.

:class:`TreeEstimator` holds what the conventions (``docs/conventions.md``)
make the same in every estimator, so that each model writes only what is its
own:

- parameters validated from the class's ``_parameter_constraints`` table
  before any data is read (:meth:`TreeEstimator._validate_params`), with
  deprecated parameters announced by a ``FutureWarning``;
- raw ``X`` (arrays or DataFrames with any mix of column types) turned into
  what the model searches: 0/1 columns as they are, anything else through
  the estimator's :class:`~arboretum.binarizer.Binarizer` (``binarizer_``),
  whose ``binarizer__*`` parameters can be set (and tuned in ``GridSearchCV``)
  even when ``binarizer`` is left at its default;
- the fitted tree rewritten on the raw columns, so ``predict``, ``apply`` and
  ``export_text`` take and show raw values, and ``tree_`` carries the
  feature names and category labels;
- the stopping semantics: ``stop_reason_`` is ``"completed"`` or the name of
  the limit that stopped the fit, in which case one
  :class:`~arboretum.exceptions.LimitWarning` says so;
- ``fit_time_``, ``apply``, ``export_text``, ``to_dot``.
"""

from __future__ import annotations

import numbers
import time
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.utils.validation import check_is_fitted

from . import data as _data
from ._compile import warm_up
from .binarizer import Binarizer
from .data import Check, InstanceOf, Interval, Options
from .exceptions import LimitWarning, warn_user
from .tree import Tree

__all__ = [
    "DEFAULT_TIME_LIMIT",
    "FitClock",
    "PREDICT_METHODS",
    "SHARED_CONSTRAINTS",
    "TreeEstimator",
    "constraints",
    "deprecated_attribute",
]

#: The default ``time_limit`` of every estimator (seconds of wall clock for the whole ``fit``), so that
#: no fit with default parameters runs without bound; ``time_limit=None`` is the explicit "no limit".
DEFAULT_TIME_LIMIT = 60.0

#: The ``method`` vocabulary of ``predict_proba`` / ``predict`` of the Bayesian models:
#: "map" predicts with ``tree_`` (the MAP tree, or the most probable tree found),
#: "average" with the posterior average over trees (exact or over samples),
#: "sample" with an average over a finite set of posterior samples.
PREDICT_METHODS = ("map", "average", "sample")
#: Deprecated ``method`` values and their replacements.
_METHOD_ALIASES = {"best": "map", "bma": "average"}

def _rho_ok(rho: Any) -> bool:
    arr = np.asarray(rho, dtype=np.float64)
    return arr.ndim <= 1 and arr.size >= 1 and bool(np.all(np.isfinite(arr) & (arr > 0)))


#: The accepted forms of every parameter name shared by several estimators (docs/conventions.md):
#: the same name accepts the same values everywhere.
SHARED_CONSTRAINTS: dict = {
    "alpha": [Interval(numbers.Real, 0, 1, closed="right")],
    "beta": [Interval(numbers.Real, 0, None, closed="left")],
    "rho": [Check(_rho_ok, "a positive number or a sequence of positive numbers (one per class)")],
    "time_limit": [Interval(numbers.Real, 0, None, closed="neither"), None],
    "memory_limit": [Interval(numbers.Real, 0, None, closed="neither"), None],
    "random_state": ["random_state"],
    "verbose": [Interval(numbers.Integral, 0, None)],
    "n_jobs": [Interval(numbers.Integral, None, None), None],
    "binarize": [Options(("auto", "always")), "boolean", None],
    "binarizer": [None, InstanceOf(Binarizer, "an arboretum.Binarizer")],
}


def constraints(*shared: str, **own: list) -> dict:
    """A ``_parameter_constraints`` table: the ``shared`` names' forms, then the estimator's ``own``."""
    return {**{name: SHARED_CONSTRAINTS[name] for name in shared}, **own}


class FitClock:
    """The one clock of a fit, started once by :meth:`TreeEstimator._start_clock`.

    Every stage of a fit (reading and binarising ``X``, CART seeding, probes,
    the search or sampling, tree extraction) asks this clock how much of
    ``time_limit`` is left, so that the limit holds for the whole fit.

    Parameters
    ----------
    time_limit : float or None
        Seconds the fit may take; None for no limit.
    start : float
        ``time.perf_counter()`` when the clock started.

    Attributes
    ----------
    start : float
    deadline : float or None
        ``time.perf_counter()`` value at which the limit is reached; None
        without a limit.
    """

    def __init__(self, time_limit: float | None, start: float) -> None:
        self.time_limit = None if time_limit is None else float(time_limit)
        self.start = float(start)
        self.deadline = None if time_limit is None else self.start + self.time_limit

    def elapsed(self) -> float:
        """Seconds since the clock started."""
        return time.perf_counter() - self.start

    def remaining(self) -> float | None:
        """Seconds left (at least 0), or None without a limit."""
        return None if self.deadline is None else max(0.0, self.deadline - time.perf_counter())

    def expired(self) -> bool:
        """Whether the time limit has been reached."""
        return self.deadline is not None and time.perf_counter() >= self.deadline

    def share_end(self, share: float) -> float | None:
        """``time.perf_counter()`` value when ``share`` (in (0, 1]) of the limit has passed; None without one."""
        return None if self.time_limit is None else self.start + share * self.time_limit


class deprecated_attribute:  # noqa: N801 - used like a property
    """A fitted attribute kept under an old name for one release (reading it warns).

    Parameters
    ----------
    new : str
        The attribute to read instead.
    since : str
        The release that renamed it.
    """

    def __init__(self, new: str, since: str = "0.2") -> None:
        self.new, self.since = new, since

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        if obj is None:
            return self
        value = getattr(obj, self.new)  # AttributeError when not fitted, as for any fitted attribute
        warn_user(
            f"{type(obj).__name__}.{self.name} was renamed {self.new} in arboretum {self.since}; "
            f"the old name will be removed in the next release",
            FutureWarning,
        )
        return value


class TreeEstimator(BaseEstimator):
    """Base of every arboretum estimator (not an estimator on its own).

    Subclasses declare ``_parameter_constraints`` and, where they rename
    parameters, ``_deprecated_params = {old: advice}`` (the old parameter
    stays in ``__init__`` with the default ``"deprecated"``).
    """

    _parameter_constraints: dict = {}
    _deprecated_params: dict[str, str] = {}
    #: Whether the model searches 0/1 questions (MAPTree, samplers) and may use 0/1 X as it is.
    _uses_binary_questions = True

    # -- parameters ------------------------------------------------------------------------
    def _validate_params(self) -> None:
        """Check every parameter (before the data is read) and warn about deprecated ones."""
        _data.validate_params(self)
        for name, advice in self._deprecated_params.items():
            if getattr(self, name, "deprecated") != "deprecated":
                warn_user(
                    f"{type(self).__name__}({name}=...) is deprecated since arboretum 0.2 and will be "
                    f"removed in the next release; {advice}",
                    FutureWarning,
                )

    def _default_binarizer(self) -> Binarizer:
        """The discretiser used when ``binarizer`` is None."""
        return Binarizer()

    def set_params(self, **params: Any) -> "TreeEstimator":
        """Set parameters; ``binarizer__*`` works with the default ``binarizer=None`` too.

        ``set_params(binarizer__n_thresholds=4)`` on an estimator whose
        ``binarizer`` is None first sets ``binarizer`` to the default
        discretiser (:meth:`_default_binarizer`), so grid searches can tune it
        without naming one.
        """
        nested = {k: v for k, v in params.items() if k.startswith("binarizer__")}
        rest = {k: v for k, v in params.items() if k not in nested}
        super().set_params(**rest)
        if nested and "binarizer" in self.get_params(deep=False):
            if self.binarizer is None:
                self.binarizer = self._default_binarizer()
            self.binarizer.set_params(**{k[len("binarizer__"):]: v for k, v in nested.items()})
        elif nested:
            super().set_params(**nested)  # raises scikit-learn's invalid-parameter error
        return self

    # -- features --------------------------------------------------------------------------
    def _binarize_mode(self) -> str:
        """"auto", "always" or "never" from the ``binarize`` parameter."""
        b = getattr(self, "binarize", "always")
        if isinstance(b, str):
            return b
        if isinstance(b, (bool, np.bool_)):
            return "always" if b else "never"
        return "never"

    def _fit_binarizer(
        self, X: Any, y: np.ndarray | None = None, sample_weight: np.ndarray | None = None
    ) -> tuple[Binarizer | None, np.ndarray]:
        """Read ``X`` at fit; set ``n_features_in_``, ``feature_names_in_`` and ``binarizer_``.

        ``y`` (encoded class labels as integers, or regression targets as
        floats) and ``sample_weight`` go to :meth:`Binarizer.fit`, for the
        strategies that choose thresholds from the target.

        Returns ``(None, X as 0/1 uint8)`` when ``X`` is used as it is
        (``binarize="auto"`` on 0/1 data, or ``binarize=False``), else
        ``(the fitted binarizer, X encoded for it)`` (:meth:`Binarizer.encode`;
        a float64 ``X`` itself, not a copy: read it only).
        """
        columns, _, names = _data.read_columns(X, self, reset=True)
        mode = self._binarize_mode() if self._uses_binary_questions else "always"
        if mode == "never" or (mode == "auto" and _data.all_binary(columns, names)):
            E = _data.encode_columns(columns, None, names)
            self.binarizer_ = None
            return None, _data.check_binary_features(E, estimator_name=type(self).__name__)
        binarizer = clone(self.binarizer) if self.binarizer is not None else self._default_binarizer()
        binarizer.fit(X, y, sample_weight=sample_weight)
        self.binarizer_ = binarizer
        # read only (binarised or coded at once): a float64 X itself, not a copy
        return binarizer, _data.encode_columns(columns, binarizer.categories_, names, borrow=True)

    def _fit_questions(
        self, X: Any, y: np.ndarray | None = None, sample_weight: np.ndarray | None = None
    ) -> np.ndarray:
        """The 0/1 matrix a model of binary questions searches (MAPTree, samplers); sets ``binarizer_``."""
        binarizer, E = self._fit_binarizer(X, y, sample_weight)
        return E if binarizer is None else binarizer.binarize_encoded(E)

    def _fit_codes(self, X: Any, y: np.ndarray | None = None) -> np.ndarray:
        """The ordinal codes of the binarizer's groups (BCART-PCFG); sets ``binarizer_``."""
        binarizer, E = self._fit_binarizer(X, y)
        return binarizer.ordinal_encoded(E)

    def _encoded_X(self, X: Any) -> np.ndarray:
        """Raw ``X`` at predict time as the matrix ``tree_`` splits (labels as codes).

        Checks the number of columns and their names as scikit-learn does, and
        refuses missing values, infinities and unseen categories.
        """
        check_is_fitted(self)
        columns, _, names = _data.read_columns(X, self, reset=False)
        E = _data.encode_columns(columns, self.tree_.feature_categories, names or self.tree_.feature_names)
        if self.binarizer_ is None and self._uses_binary_questions:
            E = _data.check_binary_features(E, estimator_name=type(self).__name__).astype(np.float64)
        return E

    def _binary_X(self, X: Any) -> np.ndarray:
        """The 0/1 questions of raw ``X`` at predict time (the search's features)."""
        E = self._encoded_X(X)
        if self.binarizer_ is None:
            return E.astype(np.uint8)
        return self.binarizer_.binarize_encoded(E)

    def _feature_names(self) -> list[str] | None:
        return [str(n) for n in self.feature_names_in_] if hasattr(self, "feature_names_in_") else None

    def _search_feature_names(self) -> list[str] | None:
        """Names of the 0/1 columns the model searched over."""
        if self.binarizer_ is None:
            return self._feature_names()
        return [str(n) for n in self.binarizer_.get_feature_names_out()]

    def _raw_tree(self, search_tree: Tree) -> Tree:
        """``search_tree`` (BINARY splits on the searched columns) on the raw columns."""
        if self.binarizer_ is None:
            search_tree.feature_names = self._feature_names()
            return search_tree
        return self.binarizer_.raw_tree(search_tree, self._feature_names())

    # -- stopping --------------------------------------------------------------------------
    def _set_stop(self, reason: str, detail: str = "") -> None:
        """Set ``stop_reason_``; warn (:class:`LimitWarning`) when a limit stopped the fit."""
        self.stop_reason_ = reason
        if reason != "completed":
            value = getattr(self, reason, None)
            setting = f"{reason}={value!r}" if value is not None else reason
            warn_user(
                f"{type(self).__name__} was stopped by {setting}{': ' + detail if detail else ''}",
                LimitWarning,
            )

    @staticmethod
    def _clock() -> float:
        return time.perf_counter()

    #: The family of numba kernels a fit runs (:mod:`arboretum._compile`), or None.
    _kernel_family: str | None = None

    def _start_clock(self) -> FitClock:
        """Compile the kernels, then start the fit's one clock: ``time_limit`` and ``fit_time_``
        count from here.

        Every ``fit`` calls this once, right after its parameters (and targets)
        are validated and before it reads ``X``: reading and binarising ``X``
        and everything after count against ``time_limit``.  Compiling (or
        loading from numba's cache) the kernels of this estimator's family
        (:mod:`arboretum._compile`) comes first and never counts; it sets
        ``compile_time_`` (seconds; 0.0 when the kernels were ready in this
        process).
        """
        family = self._kernel_family
        self.compile_time_ = 0.0 if family is None else warm_up(family)
        t_start = self._clock()  # the fit's clock starts here
        return FitClock(getattr(self, "time_limit", None), t_start)

    # -- persistence (arboretum.save / arboretum.load) ----------------------------------------
    def _get_fitted_state(self) -> dict[str, Any]:
        """The fitted attributes :func:`arboretum.save` writes (public names ending in ``_``)."""
        return {k: v for k, v in vars(self).items() if k.endswith("_") and not k.startswith("_")}

    def _set_fitted_state(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`_get_fitted_state` returned (from :func:`arboretum.load`)."""
        for k, v in state.items():
            setattr(self, k, v)

    def _check_loaded(self) -> None:
        """Check that loaded fitted attributes fit together (raise on anything inconsistent)."""
        tree = getattr(self, "tree_", None)
        if not isinstance(tree, Tree):
            raise ValueError("tree_ must be a Tree")
        n = getattr(self, "n_features_in_", None)
        if not isinstance(n, int) or n != tree.n_features:
            raise ValueError(f"n_features_in_ = {n!r} does not match tree_.n_features = {tree.n_features}")
        names = getattr(self, "feature_names_in_", None)
        if names is not None and (not isinstance(names, np.ndarray) or names.shape != (n,)
                                  or not all(isinstance(x, str) for x in names)):
            raise ValueError("feature_names_in_ must hold one name (a string) per feature")
        classes = getattr(self, "classes_", None)
        if (classes is not None or tree.task == "classification") and (
            not isinstance(classes, np.ndarray) or classes.shape != (tree.n_classes,)
        ):
            raise ValueError(f"classes_ must hold the {tree.n_classes} classes of tree_")
        if not hasattr(self, "binarizer_"):
            raise ValueError("binarizer_ is missing (None when the model used no discretiser)")
        binarizer = self.binarizer_
        if binarizer is not None:
            if not isinstance(binarizer, Binarizer) or getattr(binarizer, "n_features_in_", None) != n:
                raise ValueError("binarizer_ must be a fitted Binarizer of the same columns")
            binarizer._check_loaded()

    # -- predictions and display -------------------------------------------------------------
    def apply(self, X: Any) -> np.ndarray:
        """Index (in ``tree_``) of the leaf each sample reaches.

        Parameters
        ----------
        X : array-like or pandas DataFrame of shape (n_samples, n_features_in_)
            Raw features, as in ``fit``.

        Returns
        -------
        leaves : ndarray of int64, shape (n_samples,)
        """
        E = self._encoded_X(X)  # checks that the estimator is fitted
        return self.tree_.apply_encoded(E)

    def export_text(self, feature_names: Any = None, decimals: int = 3, show_counts: bool = True) -> str:
        """The fitted tree as indented text (:meth:`arboretum.Tree.export_text`).

        Splits read on the raw columns (``petal length (cm) <= 2.45``,
        ``colour == red``); leaves show the prediction, the training counts
        and (classification) the predicted class's probability::

            |--- petal length (cm) <= 2.45
            |   |--- class: setosa  (counts [50, 0, 0], p=0.913)
            |--- petal length (cm) >  2.45
            ...

        Parameters
        ----------
        feature_names : list of str, optional
            Names of the raw columns; default ``feature_names_in_``, else
            ``x0, x1, ...``.
        decimals : int, default=3
            Decimal places of counts, probabilities and values.
        show_counts : bool, default=True
            Show the training counts (and probability) at leaves.

        Returns
        -------
        text : str
        """
        check_is_fitted(self)
        return self.tree_.export_text(feature_names=feature_names, decimals=decimals, show_counts=show_counts)

    def to_dot(self, feature_names: Any = None, decimals: int = 3) -> str:
        """Graphviz DOT source of the fitted tree (:meth:`arboretum.Tree.to_dot`)."""
        check_is_fitted(self)
        return self.tree_.to_dot(feature_names=feature_names, decimals=decimals)

    def _method(self, method: str | None) -> str:
        """Validate a ``predict_proba`` method (with the deprecated aliases); default ``predict_method``."""
        allowed = getattr(self, "_predict_methods", PREDICT_METHODS)
        if method is None:
            method = getattr(self, "predict_method", allowed[0])
        if isinstance(method, str) and method in _METHOD_ALIASES and _METHOD_ALIASES[method] in allowed:
            new = _METHOD_ALIASES[method]
            warn_user(
                f"method={method!r} was renamed method={new!r} in arboretum 0.2; the old name will be "
                f"removed in the next release",
                FutureWarning,
            )
            method = new
        _data.check_param(method, "method", [Options(allowed)])
        return method
