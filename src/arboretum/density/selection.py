"""Model selection by cross-validated log-likelihood (spec-004 §6.4, A9): :class:`DensityCV`, a
density estimator that chooses among density estimators and their parameters on training folds only,
then refits the best on all of ``X`` (scikit-learn's ``GridSearchCV`` habits: ``cv``, ``param_grid``,
``best_params_``, ``best_score_``, ``cv_results_``, ``best_estimator_``); :func:`select_rate` is the
functional form."""

from __future__ import annotations

import numbers
import time
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import KFold, ParameterGrid
from sklearn.utils.validation import check_is_fitted

from .. import data as _data
from ..base import TreeEstimator, constraints
from ..data import Check, Interval
from .base import CategoricalDensityMixin, DensityEstimator

__all__ = ["DensityCV", "select_rate", "DEFAULT_GRIDS"]

#: The grid each estimator is searched over when ``param_grid`` is None.  The paper's grids (spec §6.4:
#: Method I lam 5, 8, 10; Method II 2, 3; lists lam 3, 5, 7 x eta 1, 2) widened: the rate on a log
#: scale, the Dirichlet pseudocount ``alpha`` (the paper fixes 2 for trees, 1 for lists; on Titanic the
#: MAP tree is the same for every rate and only a smaller ``alpha`` changes it) and the leaf density
#: (spec A2-A3).
DEFAULT_GRIDS: dict = {
    "LeafSparseDensityTree": {"lam": [2, 5, 10, 20], "alpha": [0.25, 0.5, 1.0, 2.0],
                              "density": ["mle", "posterior_mean"]},
    "BranchSparseDensityTree": {"lam": [1, 2, 3, 5], "alpha": [0.25, 0.5, 1.0, 2.0],
                                "density": ["mle", "posterior_mean"]},
    "SparseDensityRuleList": {"lam": [3, 5, 7], "eta": [1, 2], "alpha": [0.5, 1.0]},
    "HistogramDensity": {"alpha": [0.5, 1.0, 2.0]},
    "CategoricalDET": {},
}
#: Relative tolerance under which two mean validation scores tie (the first setting of the grid wins:
#: settings that give the same model score equal up to rounding).
_TIE = 1e-9


def _candidates_ok(v: Any) -> bool:
    items = v if isinstance(v, (list, tuple)) else [v]
    return len(items) > 0 and all(isinstance(e, DensityEstimator) for e in items)


def _grid_ok(v: Any) -> bool:
    def one(g: Any) -> bool:
        return isinstance(g, dict) and all(isinstance(k, str) and isinstance(x, (list, tuple)) and len(x) > 0
                                           for k, x in g.items())
    return one(v) or (isinstance(v, (list, tuple)) and all(g is None or one(g) for g in v))


def _cv_ok(v: Any) -> bool:
    if isinstance(v, numbers.Integral) and not isinstance(v, bool):
        return v >= 2
    return hasattr(v, "split") and hasattr(v, "get_n_splits")


class DensityCV(CategoricalDensityMixin, TreeEstimator):
    """Choose a density model by cross-validated log-likelihood, then refit it on all of ``X``.

    Every candidate estimator and every setting of its grid is fitted on the training part of each fold
    and scored on the held-out part (mean log-likelihood per row, natural log: spec §6.4, A9); the
    setting of highest mean over the folds (the first of the grid among ties) is refitted on all of
    ``X`` and answers ``score_samples``, ``score``, ``sample``, ``export_text`` and the leaf attributes.
    Only ``X`` is used: hold a test set out of it.

    The folds use the domain of the whole of ``X`` (``categories=`` is set to the categories seen in
    ``X`` when a candidate's ``categories`` and ``n_bins`` are None), so a category missing from a
    training fold still has its volume, and a category unknown to a fold's model gets density 0
    (``handle_unknown="zero"`` inside the folds).

    Parameters
    ----------
    estimator : density estimator, list of them, or None, default=None
        The candidates (unfitted estimators of :mod:`arboretum.density`, cloned).  None: the three
        sparse models, :class:`LeafSparseDensityTree`, :class:`BranchSparseDensityTree` and
        :class:`SparseDensityRuleList` with their defaults.
    param_grid : dict, list or None, default=None
        With one candidate: a dict of lists of values (or a list of such dicts, scikit-learn's
        ``ParameterGrid``).  With a list of candidates: a list with one grid (or None) per candidate.
        None: :data:`DEFAULT_GRIDS` of each candidate's class (the paper's grids, widened over ``lam``,
        ``alpha`` and ``density``).
    cv : int or cross-validation splitter, default=5
        Number of shuffled folds (``KFold(cv, shuffle=True, random_state=random_state)``), or a splitter.
    n_repeats : int, default=1
        Fits per setting and fold, seeds ``random_state + 1000 * fold + r``; the one of highest
        ``log_posterior_`` is scored (the paper's 5 repeats).  Deterministic models need 1.
    random_state : int or None, default=0
        Seeds the folds and the candidates' ``random_state``.
    time_limit : float or None, default=None
        Seconds for the whole search and refit; each fit gets at most its own ``time_limit`` and what is
        left.  Settings not reached are left unscored (NaN); the best scored one is refitted.
    verbose : int, default=0
        > 0 prints one line per setting to standard error.

    Attributes
    ----------
    best_estimator_ : density estimator
        The chosen setting refitted on all of ``X``.
    best_params_ : dict
        Its parameters (the grid's keys only).
    best_index_ : int
        Its row of ``cv_results_``.
    best_score_ : float
        Its mean validation log-likelihood per row.
    cv_results_ : dict of arrays
        One entry per setting: ``estimator`` (class name), ``params``, ``split{k}_test_score``,
        ``mean_test_score``, ``std_test_score``, ``rank_test_score``, ``mean_fit_time`` and
        ``mean_n_leaves``.
    n_splits_ : int
    refit_time_ : float
    n_leaves_, leaf_boxes_, leaf_counts_, leaf_log_volumes_, leaf_probabilities_, leaf_log_densities_,
    leaves_, categories_, bin_edges_, log_posterior_, optimal_, tree_
        Those of ``best_estimator_`` (where it has them).
    n_features_in_, feature_names_in_, fit_time_, compile_time_, stop_reason_

    Examples
    --------
    >>> import numpy as np
    >>> from arboretum import DensityCV, LeafSparseDensityTree
    >>> X = np.array([[0, 1]] * 30 + [[1, 0]] * 10 + [[1, 1]] * 10)
    >>> cv = DensityCV(LeafSparseDensityTree(), {"lam": [1, 5]}, cv=3).fit(X)
    >>> sorted(cv.best_params_), cv.n_leaves_
    (['lam'], 3)
    """

    _kernel_family = "density"
    _uses_binary_questions = False

    def __init__(self, estimator: Any = None, param_grid: Any = None, *, cv: Any = 5, n_repeats: int = 1,
                 random_state: int | None = 0, time_limit: float | None = None, verbose: int = 0) -> None:
        self.estimator = estimator
        self.param_grid = param_grid
        self.cv = cv
        self.n_repeats = n_repeats
        self.random_state = random_state
        self.time_limit = time_limit
        self.verbose = verbose

    _parameter_constraints = constraints(
        "time_limit", "verbose",
        estimator=[None, Check(_candidates_ok, "None, a density estimator of arboretum.density or a list of them")],
        param_grid=[None, Check(_grid_ok, "None, a dict of non-empty lists of values, or a list of such dicts "
                                          "(or None)")],
        cv=[Check(_cv_ok, "an int >= 2 or a cross-validation splitter")],
        n_repeats=[Interval(numbers.Integral, 1, None)],
        random_state=[None, Interval(numbers.Integral, 0, None)],
    )

    # -- the search ----------------------------------------------------------------------------
    def _settings(self) -> list[tuple[Any, dict]]:
        from . import BranchSparseDensityTree, LeafSparseDensityTree, SparseDensityRuleList

        ests = self.estimator
        if ests is None:
            ests = [LeafSparseDensityTree(), BranchSparseDensityTree(), SparseDensityRuleList()]
        several = isinstance(ests, (list, tuple))
        ests = list(ests) if several else [ests]
        grids = self.param_grid
        if several and grids is not None:
            if not isinstance(grids, (list, tuple)) or len(grids) != len(ests):
                raise ValueError(f"param_grid must hold one grid (or None) per candidate estimator "
                                 f"({len(ests)}); got {grids!r}")
        else:
            grids = [grids] * len(ests) if not several else [None] * len(ests)
        out = []
        for est, grid in zip(ests, grids):
            if grid is None:
                grid = DEFAULT_GRIDS.get(type(est).__name__, {})
            names = set(est.get_params(deep=False))
            for g in grid if isinstance(grid, (list, tuple)) else [grid]:
                unknown = sorted(set(g) - names)
                if unknown:
                    raise ValueError(f"param_grid names {unknown} that {type(est).__name__} does not have")
            out.extend((est, dict(p)) for p in ParameterGrid(grid))
        return out

    def fit(self, X: Any, y: Any = None) -> "DensityCV":
        """Score every setting on the folds of ``X``, then refit the best on all of ``X``.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self
        """
        import sys

        self._validate_params()
        settings = self._settings()
        clock = self._start_clock()
        columns, n, names = _data.read_columns(X, self, reset=True)
        if n < 2:
            raise ValueError(f"{type(self).__name__} needs at least 2 samples to estimate a density; got {n}")
        from .space import CategoricalSpace

        rows = np.arange(n)
        take = (lambda idx: X.iloc[idx]) if hasattr(X, "iloc") else (
            lambda idx: np.asarray(X, dtype=object)[idx] if not isinstance(X, np.ndarray) else X[idx])
        splitter = KFold(int(self.cv), shuffle=True, random_state=self.random_state) if isinstance(
            self.cv, numbers.Integral) else self.cv
        folds = list(splitter.split(rows))
        seed0 = int(self.random_state or 0)
        space = CategoricalSpace(None, None)
        space.fit(columns, names)
        domain = [list(c) for c in space.categories_]
        k = len(folds)
        scores = np.full((len(settings), k), np.nan)
        seconds = np.full(len(settings), np.nan)
        leaves = np.full(len(settings), np.nan)
        stopped = False
        for i, (proto, params) in enumerate(settings):
            t0 = time.perf_counter()
            fold_leaves = []
            for f, (tr, va) in enumerate(folds):
                fits = []
                for r in range(int(self.n_repeats)):
                    if clock.expired():
                        stopped = True
                        break
                    est = self._make(proto, params, domain, seed0 + 1000 * f + r, clock)
                    est.set_params(handle_unknown="zero")
                    fits.append(est.fit(take(tr)))
                if stopped:
                    break
                best = max(fits, key=lambda e: getattr(e, "log_posterior_", 0.0))
                scores[i, f] = best.score(take(va)) / len(va)
                fold_leaves.append(best.n_leaves_)
            if stopped:
                scores[i] = np.nan
                break
            seconds[i] = (time.perf_counter() - t0) / k
            leaves[i] = float(np.mean(fold_leaves))
            if self.verbose:
                print(f"DensityCV: {type(proto).__name__} {params}: {np.mean(scores[i]):.6f} per row",
                      file=sys.stderr)
        mean = scores.mean(axis=1)
        scored = np.flatnonzero(~np.isnan(mean))
        if scored.size:
            top = np.nanmax(mean)
            ok = mean >= top - _TIE * max(1.0, abs(top)) if np.isfinite(top) else mean == top
            best_i = int(np.flatnonzero(ok & ~np.isnan(mean))[0])
        else:
            best_i = 0
        proto, params = settings[best_i]
        t0 = time.perf_counter()
        refits = [self._make(proto, params, None, seed0 + r, clock).fit(X) for r in range(int(self.n_repeats))]
        self.best_estimator_ = max(refits, key=lambda e: getattr(e, "log_posterior_", 0.0))
        self.refit_time_ = time.perf_counter() - t0
        self.best_params_ = dict(params)
        self.best_index_ = best_i
        self.best_score_ = float(mean[best_i])
        self.n_splits_ = k
        order = np.argsort(-np.where(np.isnan(mean), -np.inf, mean), kind="stable")
        rank = np.empty(len(settings), dtype=np.int64)
        rank[order] = np.arange(1, len(settings) + 1)
        self.cv_results_ = {
            "estimator": np.array([type(e).__name__ for e, _ in settings], dtype=object),
            "params": [dict(p) for _, p in settings],
            **{f"split{f}_test_score": scores[:, f].copy() for f in range(k)},
            "mean_test_score": mean,
            "std_test_score": _std(scores),
            "rank_test_score": rank,
            "mean_fit_time": seconds,
            "mean_n_leaves": leaves,
        }
        self.n_leaves_ = int(self.best_estimator_.n_leaves_)
        self.fit_time_ = clock.elapsed()
        self._set_stop("time_limit" if stopped or self.best_estimator_.stop_reason_ == "time_limit" else "completed",
                       f"{int(np.sum(~np.isnan(mean)))} of {len(settings)} settings scored; refitted "
                       f"{type(proto).__name__} {params}")
        return self

    def _make(self, proto: Any, params: dict, domain: list | None, seed: int, clock: Any) -> Any:
        est = clone(proto).set_params(**params)
        own = est.get_params(deep=False)
        if domain is not None and own.get("categories") is None and own.get("n_bins") is None:
            est.set_params(categories=domain)
        if "random_state" in own:
            est.set_params(random_state=seed)
        left = clock.remaining()
        if left is not None:
            limit = own.get("time_limit")
            est.set_params(time_limit=max(min(left, limit) if limit is not None else left, 1e-6))
        return est

    # -- the chosen model ----------------------------------------------------------------------
    _DELEGATED = ("leaf_boxes_", "leaf_counts_", "leaf_log_volumes_", "leaf_probabilities_",
                  "leaf_log_densities_", "leaf_densities_", "leaf_volumes_", "leaves_", "categories_",
                  "bin_edges_", "log_posterior_", "optimal_", "gap_", "tree_", "rules_")

    def __getattr__(self, name: str) -> Any:
        if name in DensityCV._DELEGATED and "best_estimator_" in self.__dict__:
            return getattr(self.__dict__["best_estimator_"], name)
        raise AttributeError(f"{type(self).__name__!s} has no attribute {name!r}")

    def score_samples(self, X: Any) -> np.ndarray:
        """Log probability mass of every row under ``best_estimator_``."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.score_samples(X)

    def score(self, X: Any, y: Any = None) -> float:
        """Total log-likelihood of ``X`` under ``best_estimator_`` (natural log)."""
        return float(np.sum(self.score_samples(X)))

    def sample(self, n_samples: int = 1, random_state: Any = None) -> np.ndarray:
        """Draw configurations from ``best_estimator_``."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.sample(n_samples, random_state)

    def export_text(self, decimals: int = 4) -> str:  # type: ignore[override]
        """``best_estimator_``'s text (the paper's form)."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.export_text(decimals=decimals)

    # -- persistence ---------------------------------------------------------------------------
    def _check_loaded(self) -> None:
        best = self.best_estimator_
        if not isinstance(best, DensityEstimator):
            raise ValueError("best_estimator_ must be a fitted density estimator")
        best._check_loaded()
        if self.n_leaves_ != best.n_leaves_ or self.n_features_in_ != best.n_features_in_:
            raise ValueError("n_leaves_ and n_features_in_ must be those of best_estimator_")
        n = len(self.cv_results_["params"])
        if not (isinstance(self.best_index_, int) and 0 <= self.best_index_ < n):
            raise ValueError(f"best_index_ must index one of the {n} settings of cv_results_")


def _std(scores: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):  # -inf folds (an empty leaf under "mle") have no spread
        return np.where(np.all(np.isfinite(scores), axis=1), scores.std(axis=1), np.nan)


def select_rate(estimator: Any, X: Any, param_grid: dict | None = None, *, cv: int = 5, n_repeats: int = 1,
                random_state: int | None = 0) -> tuple[Any, list[dict]]:
    """Choose hyperparameters by mean validation log-likelihood, then refit on all of ``X``
    (:class:`DensityCV` as a function).

    Returns
    -------
    best : the estimator refitted on all of ``X`` with the chosen parameters
    results : list of dict
        One per setting: ``params``, ``mean_log_likelihood`` (per validation row), ``fold_scores``.
    """
    cv_ = DensityCV(estimator, param_grid, cv=cv, n_repeats=n_repeats, random_state=random_state).fit(X)
    r = cv_.cv_results_
    k = cv_.n_splits_
    results = [{"params": p, "mean_log_likelihood": float(m), "fold_scores": [float(r[f"split{f}_test_score"][i])
                                                                               for f in range(k)]}
               for i, (p, m) in enumerate(zip(r["params"], r["mean_test_score"]))]
    return cv_.best_estimator_, results

