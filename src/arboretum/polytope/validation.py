"""Validation scores of the polytope trees' hard predictions, weighted, and the paired bootstrap
that decides whether the refined tree's better validation score is more than noise.

The scores are those :meth:`~arboretum.polytope.estimator._ConvexPolytopeTreeBase._select` compares (higher
is better): ROC AUC for two classes (when both occur), accuracy otherwise, minus the mean squared
error for regression.  Each takes row weights, one row of weights per bootstrap replicate, so that
one call scores every replicate: a tree's predictions take at most one value per leaf, and the AUC
over those few values is a cumulative sum, not a sort per replicate."""

from __future__ import annotations

import numpy as np

#: Bootstrap replicates of the validation rows behind the refinement's choice.
N_BOOTSTRAP = 500

#: The share of those replicates in which the refined tree must score better than the greedy
#: tree for the refined one to be kept.
REFINE_CONFIDENCE = 0.9

#: Bootstrap weights held at once (replicates times rows), about 16 MB.
CHUNK_CELLS = 2_000_000


def scores(pred: np.ndarray, y: np.ndarray, task: str, weights: np.ndarray | None = None) -> np.ndarray:
    """The validation score of ``pred`` against ``y`` under each row of ``weights``.

    Parameters
    ----------
    pred : ndarray of shape (n,) or (n, n_classes)
        Class probabilities (classification) or values (regression), one row per validation row.
    y : ndarray of shape (n,)
        Class codes (``0 .. n_classes - 1``) or values.
    task : {"classification", "regression"}
    weights : ndarray of shape (n_weights, n), optional
        Non-negative row weights, one row per score wanted; None: one row of ones.

    Returns
    -------
    ndarray of shape (n_weights,)
        ROC AUC when there are two classes and both occur in ``y`` (ties count one half), else
        accuracy (the first of tied classes predicted); minus the mean squared error for regression.
        A weighting that leaves one class without weight scores 0.5 (AUC).
    """
    w = np.ones((1, y.shape[0])) if weights is None else np.asarray(weights, dtype=np.float64)
    auc, columns = _columns(pred, y, task)
    return _from_sums(w @ columns, auc)


def _columns(pred: np.ndarray, y: np.ndarray, task: str) -> tuple[bool, np.ndarray]:
    """Whether the score is an AUC, and per-row columns whose weighted sums give it
    (:func:`_from_sums`): ``[-squared error, 1]`` for regression, ``[correct, 1]`` for accuracy, and
    for AUC one column per distinct predicted probability of class 1 marking the positives at it,
    then one per such value marking the negatives."""
    ones = np.ones(y.shape[0])
    if task == "regression":
        return False, np.c_[-(np.asarray(pred, dtype=np.float64) - y) ** 2, ones]
    if pred.shape[1] == 2 and np.unique(y).size == 2:
        levels, at = np.unique(pred[:, 1], return_inverse=True)
        onehot = np.zeros((y.shape[0], levels.size))
        onehot[np.arange(y.shape[0]), at.reshape(-1)] = 1.0
        return True, np.c_[onehot * (y == 1)[:, None], onehot * (y == 0)[:, None]]
    return False, np.c_[np.argmax(pred, 1) == y, ones]


def _from_sums(sums: np.ndarray, auc: bool) -> np.ndarray:
    """Scores from the weighted sums of :func:`_columns` (one row per weighting)."""
    if not auc:  # a mean: accuracy, or minus the squared error
        return sums[:, 0] / np.maximum(sums[:, 1], np.finfo(float).tiny)
    pos, neg = np.split(sums, 2, axis=1)  # each level's weight of positives and of negatives
    below = np.cumsum(neg, 1) - neg  # negatives' weight strictly below each level
    pairs = pos.sum(1) * neg.sum(1)
    won = (pos * (below + 0.5 * neg)).sum(1)
    return np.where(pairs > 0, won / np.where(pairs > 0, pairs, 1.0), 0.5)


def bootstrap_weights(n: int, rng: np.random.Generator, n_bootstrap: int) -> np.ndarray:
    """How often each of ``n`` rows is drawn in ``n`` draws with replacement, one row per replicate."""
    draws = rng.integers(0, n, size=(n_bootstrap, n))
    return np.stack([np.bincount(d, minlength=n) for d in draws]).astype(np.float64)


def share_better(pred_new: np.ndarray, pred_old: np.ndarray, y: np.ndarray, task: str, seed: int,
                 n_bootstrap: int = N_BOOTSTRAP) -> float:
    """The share of bootstrap replicates of the validation rows (the same rows for both, paired) in
    which ``pred_new`` scores strictly better than ``pred_old``."""
    rng = np.random.default_rng(seed)
    auc, new = _columns(pred_new, y, task)
    both = np.c_[new, _columns(pred_old, y, task)[1]]
    n, better = y.shape[0], 0
    chunk = max(1, min(n_bootstrap, CHUNK_CELLS // max(n, 1)))  # replicates at a time (memory)
    for start in range(0, n_bootstrap, chunk):
        sums = bootstrap_weights(n, rng, min(chunk, n_bootstrap - start)) @ both
        better += int(np.sum(_from_sums(sums[:, :new.shape[1]], auc) > _from_sums(sums[:, new.shape[1]:], auc)))
    return better / n_bootstrap
