"""The polytope trees' validation scores (weighted, one score per bootstrap replicate) and the paired
bootstrap that decides whether the refined tree is kept.  Needs no torch."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import accuracy_score, mean_squared_error, roc_auc_score

from arboretum.polytope import validation


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(2, 60), st.integers(1, 6))
def test_weighted_auc_matches_scikit_learn(seed, n, levels):
    """A tree's predictions take few values (ties count one half), under arbitrary row weights."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    y[:2] = [0, 1]
    p1 = rng.integers(0, levels, n) / levels
    w = rng.integers(0, 4, (3, n)).astype(float)
    w[:, :2] += 1.0  # both classes keep some weight
    got = validation.scores(np.c_[1 - p1, p1], y, "classification", w)
    want = [roc_auc_score(y, p1, sample_weight=wi) for wi in w]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert validation.scores(np.c_[1 - p1, p1], y, "classification")[0] == pytest.approx(roc_auc_score(y, p1))


def test_accuracy_regression_and_degenerate_weights():
    rng = np.random.default_rng(0)
    y3 = rng.integers(0, 3, 50)
    proba = rng.random((50, 3))
    w = rng.integers(0, 3, (2, 50)).astype(float)
    np.testing.assert_allclose(validation.scores(proba, y3, "classification", w),
                               [accuracy_score(y3, proba.argmax(1), sample_weight=wi) for wi in w])
    y = rng.normal(size=50)
    pred = y + rng.normal(size=50)
    assert validation.scores(pred, y, "regression")[0] == pytest.approx(-mean_squared_error(y, pred))
    # two classes of which one occurs: accuracy, as the estimator scores it
    one = np.zeros(10, dtype=int)
    assert validation.scores(np.tile([0.7, 0.3], (10, 1)), one, "classification")[0] == 1.0
    # a replicate that draws one class only: AUC 0.5, not a division by zero
    y2 = np.array([0, 0, 1, 1])
    only_negatives = np.array([[1.0, 1.0, 0.0, 0.0]])
    assert validation.scores(np.tile([0.5, 0.5], (4, 1)), y2, "classification", only_negatives)[0] == 0.5


def test_share_better_is_paired_and_seeded():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 400)
    good = np.where(y == 1, 0.8, 0.2)
    noisy = np.where(rng.random(400) < 0.7, good, 1 - good)
    flat = np.full(400, 0.5)
    c = lambda p: np.c_[1 - p, p]  # noqa: E731
    assert validation.share_better(c(good), c(noisy), y, "classification", 0) == 1.0
    assert validation.share_better(c(noisy), c(good), y, "classification", 0) == 0.0
    assert validation.share_better(c(good), c(good), y, "classification", 0) == 0.0  # ties are not better
    # a difference of a single row is noise: better in about half of the replicates
    one_off = noisy.copy()
    one_off[np.flatnonzero(noisy != good)[0]] = good[np.flatnonzero(noisy != good)[0]]
    share = validation.share_better(c(one_off), c(noisy), y, "classification", 0)
    assert 0.3 < share < validation.REFINE_CONFIDENCE
    assert share == validation.share_better(c(one_off), c(noisy), y, "classification", 0)  # seeded
    assert validation.share_better(c(one_off), c(noisy), y, "classification", 0, n_bootstrap=7) in {
        k / 7 for k in range(8)}


def test_share_better_does_not_depend_on_the_chunk_size(monkeypatch):
    """Replicates are drawn a chunk at a time (bounded memory on large validation sets), from one stream."""
    rng = np.random.default_rng(2)
    y = rng.integers(0, 3, 300)
    a, b = rng.random((300, 3)), rng.random((300, 3))
    whole = validation.share_better(a, b, y, "classification", 5)
    monkeypatch.setattr(validation, "CHUNK_CELLS", 300 * 7)  # 7 replicates at a time
    assert validation.share_better(a, b, y, "classification", 5) == whole
