"""Model selection over the prior's rate by cross-validated log-likelihood (spec §6.4, A9)."""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import KFold

__all__ = ["select_rate"]


def select_rate(estimator: Any, X: Any, param_grid: dict | None = None, *, cv: int = 5, n_repeats: int = 1,
                random_state: int | None = 0) -> tuple[Any, list[dict]]:
    """Choose hyperparameters by mean validation log-likelihood, then refit on all of ``X``.

    Parameters
    ----------
    estimator : a density estimator of :mod:`arboretum.density`
    X : array-like or DataFrame
    param_grid : dict of lists, default=None
        Default: the paper's grid, ``lam`` in {5, 8, 10} (leaf-sparse), {2, 3} (branch-sparse),
        {3, 5, 7} x ``eta`` in {1, 2} (rule list).
    cv : int, default=5
    n_repeats : int, default=1
        Fits per setting and fold with different seeds (the paper's 5 repeats): the one of highest
        log posterior is scored.
    random_state : int or None, default=0

    Returns
    -------
    best : the estimator refitted on all of ``X`` with the chosen parameters
    results : list of dict
        One per setting: ``params``, ``mean_log_likelihood`` (per validation row), ``fold_scores``.
    """
    from itertools import product

    if param_grid is None:
        name = type(estimator).__name__
        param_grid = {"LeafSparseDensityTree": {"lam": [5, 8, 10]},
                      "BranchSparseDensityTree": {"lam": [2, 3]},
                      "SparseDensityRuleList": {"lam": [3, 5, 7], "eta": [1, 2]}}.get(name, {})
    keys = sorted(param_grid)
    settings = [dict(zip(keys, vals)) for vals in product(*(param_grid[k] for k in keys))] or [{}]
    rows = np.arange(len(X))
    take = (lambda idx: X.iloc[idx]) if hasattr(X, "iloc") else (lambda idx: np.asarray(X, dtype=object)[idx]
                                                                   if not isinstance(X, np.ndarray) else X[idx])
    folds = list(KFold(cv, shuffle=True, random_state=random_state).split(rows))
    results = []
    for params in settings:
        scores = []
        for f, (tr, va) in enumerate(folds):
            fits = []
            for r in range(n_repeats):
                est = clone(estimator).set_params(**params)
                if "random_state" in est.get_params():
                    est.set_params(random_state=(random_state or 0) + 1000 * f + r)
                if "handle_unknown" in est.get_params():
                    est.set_params(handle_unknown="zero")
                fits.append(est.fit(take(tr)))
            best = max(fits, key=lambda e: getattr(e, "log_posterior_", 0.0))
            scores.append(best.score(take(va)) / len(va))
        results.append({"params": params, "mean_log_likelihood": float(np.mean(scores)), "fold_scores": scores})
    top = max(results, key=lambda r: r["mean_log_likelihood"])
    fits = []
    for r in range(n_repeats):
        est = clone(estimator).set_params(**top["params"])
        if "random_state" in est.get_params():
            est.set_params(random_state=(random_state or 0) + r)
        fits.append(est.fit(X))
    return max(fits, key=lambda e: getattr(e, "log_posterior_", 0.0)), results
