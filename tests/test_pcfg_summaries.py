"""Exact BCART-PCFG posterior summaries: split inclusion probabilities and the leaf-count distribution.

Checked against the independent brute force of ``test_pcfg_oracle`` (every tree
listed explicitly, weighted by its own prior and likelihood) on tiny data, and
against exact posterior samples and ``expected_n_leaves_`` on Iris.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp
from sklearn.exceptions import NotFittedError
from test_pcfg_oracle import BruteForce, grammar_of, random_tiny

from arboretum import Binarizer
from arboretum.bayes import ChipmanPrior
from arboretum.datasets import load_dataset
from arboretum.pcfg import PCFGTreeClassifier, PhiPrior


def _features(tree: tuple) -> set[int]:
    """Features split on anywhere in a brute-force tree."""
    if tree[0] == "leaf":
        return set()
    return {tree[2]} | _features(tree[5]) | _features(tree[6])


def _enumerated(seed: int, chipman: bool):
    """Grammar of a random tiny data set, and its posterior over explicitly listed trees."""
    X, y, C, alpha, log_phi = random_tiny(seed)
    if chipman:
        prior = ChipmanPrior(*[(0.95, 0.5), (0.5, 2.0), (1.0, 0.0)][seed % 3])
        _, g = grammar_of(X, y, n_classes=C, alpha=alpha, prior=prior)
        bf = BruteForce(X, y, C, alpha, dedupe=False)
        trees = bf.all_trees()
        w = np.array([bf.log_weight_chipman(t, prior) for t in trees])
    else:
        _, g = grammar_of(X, y, n_classes=C, alpha=alpha, prior=PhiPrior(log_phi))
        bf = BruteForce(X, y, C, alpha)
        trees = bf.all_trees()
        w = np.array([bf.log_weight_phi(t, log_phi) for t in trees])
    post = np.exp(w - logsumexp(w))
    leaves = np.array([len(bf.leaves(t)) for t in trees])
    return X, g, trees, post, leaves


@pytest.mark.parametrize("chipman", [False, True], ids=["phi", "chipman"])
@pytest.mark.parametrize("seed", range(30))
def test_summaries_equal_bruteforce_on_tiny_data(seed, chipman):
    X, g, trees, post, leaves = _enumerated(seed, chipman)
    # the leaf-count distribution, untruncated: the whole tree space fits
    p, tail = g.n_leaves_distribution()
    assert tail == 0.0 and p[0] == 0.0 and p.size == leaves.max() + 1
    np.testing.assert_allclose(p, np.bincount(leaves, weights=post), rtol=0, atol=1e-12)
    # cut at 2 leaves: the first entries are exact, the rest is the tail
    p2, tail2 = g.n_leaves_distribution(max_leaves=2)
    ref = np.bincount(leaves, weights=post, minlength=3)
    np.testing.assert_allclose(p2, ref[:3], rtol=0, atol=1e-12)
    assert tail2 == pytest.approx(ref[3:].sum(), abs=1e-12)
    # inclusion of every feature, all features together and the empty group
    F = X.shape[1]
    groups = [[f] for f in range(F)] + [list(range(F)), []]
    used = [_features(t) for t in trees]
    expected = [sum(q for q, u in zip(post, used) if u & set(group)) for group in groups]
    np.testing.assert_allclose(g.feature_inclusion_probabilities(groups), expected, rtol=0, atol=1e-12)


def test_inclusion_of_a_duplicate_column_goes_to_the_first_copy():
    # phi prior: the copy's splits are the same partitions, credited to feature 0
    x = np.arange(4)[:, None]
    X, y = np.hstack([x, x]), np.array([0, 1, 1, 0])
    _, g = grammar_of(X, y)
    p = g.feature_inclusion_probabilities([[0], [1]])
    assert p[0] > 0.1 and p[1] == 0.0
    # Chipman prior: both copies are used, with the same probability
    _, gc = grammar_of(X, y, prior=ChipmanPrior())
    pc = gc.feature_inclusion_probabilities([[0], [1]])
    assert pc[0] == pytest.approx(pc[1], rel=1e-12) and pc[0] > 0.1


def test_group_errors():
    _, g = grammar_of(np.array([[0, 1], [1, 0], [1, 1]]), np.array([0, 1, 1]))
    with pytest.raises(ValueError, match="features are integers in"):
        g.feature_inclusion_probabilities([[2]])
    with pytest.raises(ValueError, match="group 1"):
        g.feature_inclusion_probabilities([[0], ["a"]])
    assert g.feature_inclusion_probabilities([]).shape == (0,)
    with pytest.raises(ValueError, match="max_leaves"):
        g.n_leaves_distribution(0)
    with pytest.raises(TypeError, match="max_leaves"):
        g.n_leaves_distribution(2.5)


@pytest.fixture(scope="module")
def iris_model():
    X, y = load_dataset("iris", return_X_y=True)
    return PCFGTreeClassifier(random_state=0).fit(X, y)


def test_iris_distribution_matches_expected_leaves_and_samples(iris_model):
    clf = iris_model
    p = clf.n_leaves_distribution()
    tail = 1.0 - p.sum()
    assert p[0] == 0.0 and np.all(p >= 0) and abs(tail) <= 1e-12
    mean = float(p @ np.arange(p.size))
    assert mean == pytest.approx(clf.expected_n_leaves_, rel=1e-9)
    # truncation keeps the first entries exactly
    p10 = clf.n_leaves_distribution(max_leaves=10)
    assert p10.shape == (11,)
    np.testing.assert_allclose(p10, p[:11], rtol=1e-12, atol=1e-300)
    # exact samples: 20,000 trees, every frequency within 5 standard errors
    samples = clf._sample_derivations(20_000, random_state=1)
    freq = np.bincount(samples.n_leaves(), minlength=p.size)[: p.size] / samples.n_trees
    se = np.sqrt(p * (1 - p) / samples.n_trees) + 1e-4
    assert np.all(np.abs(freq - p) <= 5 * se)


def test_iris_inclusion_matches_samples(iris_model):
    clf = iris_model
    inc = clf.split_inclusion_probabilities()
    assert inc.shape == (clf.n_features_in_,) and np.all((inc >= 0) & (inc <= 1))
    samples = clf._sample_derivations(20_000, random_state=2)
    edge_f = clf.grammar_.store.edge_f
    hits = np.zeros((samples.n_trees, clf.n_features_in_), dtype=bool)
    tree_of = np.repeat(np.arange(samples.n_trees), np.diff(samples.ptr))
    internal = samples.edge >= 0
    hits[tree_of[internal], edge_f[samples.edge[internal]]] = True
    freq = hits.mean(axis=0)
    se = np.sqrt(inc * (1 - inc) / samples.n_trees) + 1e-4
    assert np.all(np.abs(freq - inc) <= 5 * se)
    # a feature used in the MAP tree is used by most posterior trees here
    assert inc[3] > 0.99


def test_iris_chipman_summaries():
    X, y = load_dataset("iris", return_X_y=True)
    clf = PCFGTreeClassifier(prior="chipman", binarizer=Binarizer(n_thresholds=4, strategy="uniform")).fit(X, y)
    p = clf.n_leaves_distribution()
    assert abs(1.0 - p.sum()) <= 1e-12
    assert float(p @ np.arange(p.size)) == pytest.approx(clf.expected_n_leaves_, rel=1e-9)
    inc = clf.split_inclusion_probabilities()
    assert np.all((inc >= 0) & (inc <= 1))
    # E[number of splits on f] >= P(at least one split on f)
    assert np.all(clf.expected_splits_per_feature_ >= inc - 1e-12)


def test_unfitted_estimator_raises():
    clf = PCFGTreeClassifier()
    with pytest.raises(NotFittedError):
        clf.split_inclusion_probabilities()
    with pytest.raises(NotFittedError):
        clf.n_leaves_distribution()
