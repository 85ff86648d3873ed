"""BCART-PCFG sampling and prediction: exact samples, paths, the exact posterior predictive.

Spec ``spec-001-bcart-pcfg.md`` §6 T10-T15.  Statistical tests use fixed seeds
and a chi-square goodness-of-fit test at level 0.001.
"""

from __future__ import annotations

import collections

import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp
from test_pcfg_oracle import D5, BruteForce, grammar_of, node_index, random_tiny

from arboretum.bayes import ChipmanPrior
from arboretum.datasets import load_dataset
from arboretum.pcfg import PCFGTreeClassifier, PhiPrior
from arboretum.tree import Tree


def _sample_keys(samples) -> list[tuple]:
    """Identity of every sampled derivation: its sorted (node, edge) pairs."""
    ptr = samples.ptr.tolist()
    pairs = list(zip(samples.node.tolist(), samples.edge.tolist()))
    return [tuple(sorted(pairs[ptr[t]:ptr[t + 1]])) for t in range(samples.n_trees)]


def _bruteforce_key(store, tree, index) -> tuple:
    """The same identity for a brute-force tree (matching edges by children, and feature)."""
    out, stack = [], [tree]
    while stack:
        t = stack.pop()
        v = index[t[1]]
        if t[0] == "leaf":
            out.append((v, -1))
            continue
        kids = {index[t[5][1]], index[t[6][1]]}
        (e,) = [e for e in store.splits(v) if {int(store.edge_a[e]), int(store.edge_b[e])} == kids
                and (store.deduplicated or int(store.edge_f[e]) == t[2])]
        out.append((v, e))
        stack += [t[5], t[6]]
    return tuple(sorted(out))


def _chi_square(keys: list[tuple], expected_p: dict[tuple, float]) -> float:
    """p-value of a chi-square goodness-of-fit test, pooling cells with expected count < 5."""
    n = len(keys)
    observed = collections.Counter(keys)
    assert set(observed) <= set(expected_p), "a sampled tree is outside the tree space"
    big = [k for k, p in expected_p.items() if p * n >= 5]
    obs = [observed[k] for k in big]
    exp = [expected_p[k] * n for k in big]
    rest_exp = n - sum(exp)
    if rest_exp >= 5:
        obs.append(n - sum(obs))
        exp.append(rest_exp)
    return float(stats.chisquare(obs, exp).pvalue)


@pytest.mark.parametrize("log_phi", [2.0, 0.0])
def test_t11_sampled_tree_frequencies_match_the_exact_posterior(log_phi):
    X, y = D5
    store, g = grammar_of(X, y, prior=PhiPrior(log_phi))
    bf = BruteForce(X, y, 2, np.ones(2))
    index = node_index(store)
    trees = bf.all_trees()
    w = np.array([bf.log_weight_phi(t, log_phi) for t in trees])
    post = np.exp(w - logsumexp(w))
    expected = {_bruteforce_key(store, t, index): p for t, p in zip(trees, post)}
    assert len(expected) == 30
    keys = _sample_keys(g.sample(200_000, seed=12345))
    freq = collections.Counter(keys)
    assert max(abs(freq[k] / len(keys) - p) for k, p in expected.items()) < 4e-3
    assert _chi_square(keys, expected) > 1e-3


def test_t11_chipman_sampling_matches_bruteforce():
    # a duplicated column: the Chipman (MAPTree) space keeps both copies of every split
    X = np.array([[0, 0, 0], [0, 1, 0], [1, 0, 1], [1, 1, 1], [2, 1, 2]])
    y = np.array([0, 1, 1, 0, 1])
    prior = ChipmanPrior(0.95, 0.5)
    store, g = grammar_of(X, y, prior=prior, alpha=(2.5, 2.5))
    bf = BruteForce(X, y, 2, np.full(2, 2.5), dedupe=False)
    index = node_index(store)
    trees = bf.all_trees()
    w = np.array([bf.log_weight_chipman(t, prior) for t in trees])
    expected = {_bruteforce_key(store, t, index): p for t, p in zip(trees, np.exp(w - logsumexp(w)))}
    keys = _sample_keys(g.sample(100_000, seed=7))
    assert _chi_square(keys, expected) > 1e-3


def test_t12_path_sampling_converges_to_the_exact_predictive():
    _, g = grammar_of(*D5)
    q = np.array([[1, 1]], dtype=np.int32)
    exact = g.predict_bma(q)[0]
    np.testing.assert_allclose(exact, [0.4383868859, 0.5616131141], atol=1e-10)
    paths = g.predict_paths(q, 100_000, seed=3)[0]
    assert np.abs(paths - exact).max() < 3e-3
    trees = g.predict_trees(q, g.sample(50_000, seed=4))[0]
    assert np.abs(trees - exact).max() < 4e-3


def test_t13_exact_predictive_values_d5():
    _, g = grammar_of(*D5)
    queries = np.array([[0, 0], [2, 0], [5, 5], [-1, -1]], dtype=np.int32)
    expected = [[0.4609738994, 0.5390261006], [0.4172721902, 0.5827278098],
                [0.4109367356, 0.5890632644], [0.4609738994, 0.5390261006]]
    np.testing.assert_allclose(g.predict_bma(queries), expected, atol=1e-10)


@pytest.mark.parametrize("seed", range(40))
def test_bma_equals_the_enumerated_posterior_average(seed):
    X, y, C, alpha, log_phi = random_tiny(seed)
    for prior in (PhiPrior(log_phi), ChipmanPrior(0.9, 1.0)):
        chipman = isinstance(prior, ChipmanPrior)
        store, g = grammar_of(X, y, n_classes=C, alpha=alpha, prior=prior)
        bf = BruteForce(X, y, C, alpha, dedupe=not chipman)
        trees = bf.all_trees()
        w = np.array([bf.log_weight_chipman(t, prior) if chipman else bf.log_weight_phi(t, log_phi)
                      for t in trees])
        post = np.exp(w - logsumexp(w))
        rng = np.random.default_rng(seed)
        queries = np.vstack([X, rng.integers(-1, 5, (6, X.shape[1]))]).astype(np.int32)
        expected = [sum(p * bf.predictive(bf.route(t, q)) for p, t in zip(post, trees)) for q in queries]
        np.testing.assert_allclose(g.predict_bma(queries), expected, atol=1e-12)


# ---------------------------------------------------------------------------
# estimator-level sampling and prediction
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def iris_model():
    X, y = load_dataset("iris", return_X_y=True)
    return PCFGTreeClassifier(random_state=0).fit(X, y), X, y


def test_t15_sampled_trees_are_valid_and_partition_the_data(iris_model):
    clf, X, y = iris_model
    trees = clf.sample_trees(200, random_state=1, validate=True)
    for tree in trees:
        assert isinstance(tree, Tree)
        leaves = tree.apply(X)
        for i in range(tree.n_nodes):
            if tree.split_kind[i] == 0:
                # the leaves partition the training set, each leaf holds its recorded counts
                np.testing.assert_array_equal(np.bincount(y[leaves == i], minlength=3), tree.counts[i])
            else:
                left, right = tree.children_left[i], tree.children_right[i]
                assert tree.counts[left].sum() > 0 and tree.counts[right].sum() > 0
        assert tree.counts[tree.split_kind == 0].sum() == len(y)


def test_fast_tree_construction_equals_validated_trees(iris_model):
    clf = iris_model[0]
    checked = clf.sample_trees(300, random_state=5, validate=True)
    fast = clf.sample_trees(300, random_state=5)
    assert len(checked) == len(fast) == 300
    for a, b in zip(checked, fast):
        assert type(a) is type(b) is Tree
        assert set(vars(a)) == set(vars(b))
        assert a.to_dict() == b.to_dict()


def test_sampling_is_deterministic_given_random_state(iris_model):
    clf, X, _ = iris_model
    a = [t.to_dict() for t in clf.sample_trees(20, random_state=3)]
    b = [t.to_dict() for t in clf.sample_trees(20, random_state=3)]
    c = [t.to_dict() for t in clf.sample_trees(20, random_state=4)]
    assert a == b and a != c
    p1 = clf.predict_proba(X, method="sample", n_samples=50, random_state=9)
    p2 = clf.predict_proba(X, method="sample", n_samples=50, random_state=9)
    np.testing.assert_array_equal(p1, p2)


def test_mean_leaf_count_of_samples_matches_expected_leaves(iris_model):
    clf = iris_model[0]
    b = clf._sample_derivations(40_000, random_state=11).n_leaves()
    assert clf.expected_n_leaves_ == pytest.approx(7.997582847061912, abs=1e-9)  # spec §2.4 table
    assert abs(b.mean() - clf.expected_n_leaves_) < 5 * b.std() / np.sqrt(b.size)


def test_sample_ensembles_converge_to_bma(iris_model):
    clf, X, _ = iris_model
    rng = np.random.default_rng(0)
    Xq = X[rng.integers(0, len(X), 25)] + rng.normal(0, 0.3, (25, 4))
    exact = clf.predict_proba(Xq, method="bma")
    np.testing.assert_allclose(exact.sum(axis=1), 1.0, atol=1e-12)
    for ensemble in ("paths", "trees"):
        approx = clf.predict_proba(Xq, method="sample", n_samples=20_000, random_state=2, ensemble=ensemble)
        assert np.abs(approx - exact).max() < 0.02


def test_t10_map_tree_routes_raw_data_like_the_grammar(iris_model):
    clf, X, _ = iris_model
    rng = np.random.default_rng(0)
    cuts = np.concatenate([t for t in clf.binarizer_.thresholds_])
    Xq = np.vstack([X, X + rng.normal(0, 0.2, X.shape), rng.uniform(0, 8, (200, 4)),
                    np.tile(cuts[:, None], (1, 4))])  # values exactly on the thresholds
    nodes = clf.grammar_.predict_map_nodes(clf.binarizer_.ordinal_transform(Xq))
    np.testing.assert_allclose(clf.predict_proba(Xq, method="map"), clf.grammar_.leaf_predictive(nodes),
                               atol=1e-15)


def test_bma_of_a_map_concentrated_posterior_is_close_to_map():
    # with a huge phi the posterior is (nearly) the single-leaf tree
    X, y = load_dataset("iris", return_X_y=True)
    clf = PCFGTreeClassifier(log_phi=200.0).fit(X, y)
    assert clf.tree_.n_nodes == 1
    np.testing.assert_allclose(clf.predict_proba(X, method="average"), clf.predict_proba(X, method="map"), atol=1e-12)
