"""The random-tree generator of the MAPTree synthetic experiment (spec-000 §6.4)."""

import numpy as np
import pytest

from arboretum.datasets.synthetic import make_tree_benchmark, random_tree_shape
from arboretum.tree import LEAF


@pytest.fixture(scope="module")
def bench():
    return make_tree_benchmark(n_trees=5, n_pool=300)


def _paths(tree, node=0, used=()):
    if tree.split_kind[node] == LEAF:
        yield used
        return
    f = int(tree.feature[node])
    yield from _paths(tree, int(tree.children_left[node]), used + (f,))
    yield from _paths(tree, int(tree.children_right[node]), used + (f,))


def _leaf_labels(tree, node=0):
    if tree.split_kind[node] == LEAF:
        return [int(np.argmax(tree.value[node]))]
    return _leaf_labels(tree, int(tree.children_left[node])) + _leaf_labels(tree, int(tree.children_right[node]))


def test_trees_have_16_leaves_no_repeated_feature_on_a_path_and_alternating_labels(bench):
    for tree in bench.trees:
        assert tree.n_leaves == 16 and tree.n_nodes == 31
        for path in _paths(tree):
            assert len(path) == len(set(path))
        labels = _leaf_labels(tree)
        assert all(a != b for a, b in zip(labels, labels[1:]))


def test_labels_follow_the_trees_and_shapes(bench):
    assert bench.X_train.shape == (5, 300, 40) and bench.X_test.shape == (5, 300, 40)
    assert set(np.unique(bench.X_train)) == {0, 1}
    for t, tree in enumerate(bench.trees):
        np.testing.assert_array_equal(tree.predict(bench.X_test[t]), bench.y_test[t])
        X, y = bench.training_set(t, 300, 0.0)
        np.testing.assert_array_equal(tree.predict(X), y)


def test_training_sets_are_prefixes_and_noise_flips_are_nested(bench):
    X100, y100 = bench.training_set(1, 100, 0.25)
    X200, y200 = bench.training_set(1, 200, 0.25)
    np.testing.assert_array_equal(X100, X200[:100])
    np.testing.assert_array_equal(y100, y200[:100])
    clean = bench.y_train[1, :300]
    flips_low = bench.training_set(1, 300, 0.1)[1] != clean
    flips_high = bench.training_set(1, 300, 0.25)[1] != clean
    assert np.all(flips_high[flips_low])
    assert 0.15 < flips_high.mean() < 0.35


def test_generator_is_deterministic_and_validates():
    a, b = make_tree_benchmark(n_trees=2, n_pool=50), make_tree_benchmark(n_trees=2, n_pool=50)
    assert all(x.structurally_equal(y) for x, y in zip(a.trees, b.trees))
    np.testing.assert_array_equal(a.X_train, b.X_train)
    with pytest.raises(ValueError, match="n_trees"):
        make_tree_benchmark(n_trees=0)
    with pytest.raises(ValueError, match="noise"):
        a.training_set(0, 10, 1.5)
    with pytest.raises(ValueError, match="n_samples"):
        a.training_set(0, 51, 0.0)
    with pytest.raises(ValueError, match="n_features"):
        random_tree_shape(5, 2, np.random.default_rng(0))
