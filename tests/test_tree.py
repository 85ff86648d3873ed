"""Tests of arboretum.tree: the Tree shared by every model, and its builder."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse

from arboretum.exceptions import ModelFormatError
from arboretum.tree import BINARY, CATEGORY, HYPERPLANE, LEAF, POLYTOPE, QUADRATIC, THRESHOLD, Tree, TreeBuilder

ALL_KINDS = (BINARY, THRESHOLD, CATEGORY, HYPERPLANE)


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def reference_leaf(tree: Tree, x: np.ndarray) -> int:
    """Route one sample by reading the split semantics literally."""
    i = 0
    while tree.split_kind[i] != LEAF:
        kind = tree.split_kind[i]
        if kind == BINARY:
            left = x[tree.feature[i]] <= 0.5
        elif kind == THRESHOLD:
            left = x[tree.feature[i]] <= tree.threshold[i]
        elif kind == CATEGORY:
            left = x[tree.feature[i]] in set(tree.categories[i].tolist())
        else:
            left = float(np.dot(tree.coefs[i], x)) <= tree.threshold[i]
        i = tree.children_left[i] if left else tree.children_right[i]
    return int(i)


def random_tree(
    rng: np.random.Generator,
    n_features: int,
    kinds: tuple[int, ...],
    max_depth: int,
    n_classes: int = 3,
    classes=None,
    task: str = "classification",
    p_split: float = 0.7,
) -> Tree:
    """A random tree whose splits use small integer parameters (exact arithmetic)."""
    if task == "classification" and classes is None:
        classes = np.arange(n_classes) * 10
    builder = TreeBuilder(n_features, classes=classes, task=task)

    def leaf(depth: int) -> int:
        if task == "regression":
            return builder.add_node([rng.integers(1, 20)], [rng.normal()], depth)
        counts = rng.integers(0, 10, n_classes).astype(float)
        return builder.add_node(counts, (counts + 1) / (counts + 1).sum(), depth)

    depth = {leaf(0): 0}
    frontier = [0]
    while frontier:
        node = frontier.pop()
        d = depth[node]
        if d >= max_depth or rng.random() > p_split:
            continue
        kind = int(rng.choice(kinds))
        left, right = leaf(d + 1), leaf(d + 1)
        depth[left] = depth[right] = d + 1
        f = int(rng.integers(n_features))
        if kind == BINARY:
            builder.set_split(node, BINARY, f, None, left, right)
        elif kind == THRESHOLD:
            t = int(rng.integers(-2, 3)) + float(rng.choice([0.0, 0.5]))
            builder.set_split(node, THRESHOLD, f, t, left, right)
        elif kind == CATEGORY:
            cats = rng.choice(np.arange(-2, 3), size=int(rng.integers(1, 4)), replace=False)
            builder.set_split(node, CATEGORY, f, None, left, right, categories=cats)
        else:
            coef = rng.integers(-2, 3, n_features).astype(float)
            builder.set_split(node, HYPERPLANE, None, float(rng.integers(-3, 4)), left, right, coef=coef)
        frontier += [left, right]
    return builder.build()


def stump(kind: int, **kw) -> Tree:
    """A one-split tree on 3 features: left leaf predicts class 'a', right 'b'."""
    b = TreeBuilder(3, classes=["a", "b"], feature_names=["age", "smoker", "colour"])
    root = b.add_node([5, 5], [0.5, 0.5], 0)
    left = b.add_node([4, 1], [0.8, 0.2], 1)
    right = b.add_node([1, 4], [0.2, 0.8], 1)
    args = {
        BINARY: (1, None),
        THRESHOLD: (0, 42.5),
        CATEGORY: (2, None),
        HYPERPLANE: (None, 2.0),
    }[kind]
    b.set_split(root, kind, *args, left, right, **kw)
    return b.build()


def mixed_tree() -> Tree:
    """Depth-3 tree using every split kind, with float and integer values."""
    b = TreeBuilder(4, classes=[0, 1])
    ids = [b.add_node([i, 10 - i], [i / 10, 1 - i / 10], d) for i, d in
           enumerate([0, 1, 1, 2, 2, 2, 2, 3, 3])]
    b.set_split(ids[0], THRESHOLD, 0, 0.25, ids[1], ids[2])
    b.set_split(ids[1], BINARY, 1, 0.5, ids[3], ids[4])
    b.set_split(ids[2], CATEGORY, 2, None, ids[5], ids[6], categories=[3, 1])
    b.set_split(ids[5], HYPERPLANE, -1, -0.125, ids[7], ids[8], coef=[0.5, 0.0, -1.25, 2.0])
    return b.build()


# ---------------------------------------------------------------------------
# builder and validation
# ---------------------------------------------------------------------------


def test_single_leaf_tree():
    b = TreeBuilder(2)
    b.add_node([3, 1], [0.75, 0.25], 0)
    tree = b.build()
    assert tree.n_nodes == 1 and tree.n_leaves == 1 and tree.max_depth == 0
    assert tree.is_leaf(0)
    np.testing.assert_array_equal(tree.apply(np.zeros((4, 2))), 0)
    np.testing.assert_array_equal(tree.predict(np.zeros((2, 2))), [0, 0])  # classes None -> index
    assert tree.export_text() == "|--- class: 0  (counts [3, 1], p=0.75)\n"


def test_basic_properties_and_dtypes():
    tree = mixed_tree()
    assert tree.n_nodes == 9 and tree.n_leaves == 5 and tree.max_depth == 3
    assert [tree.is_leaf(i) for i in range(9)] == [False, False, False, True, True, False, True, True, True]
    assert tree.children_left.dtype == np.int64 and tree.children_right.dtype == np.int64
    assert tree.split_kind.dtype == np.int8 and tree.feature.dtype == np.int64
    assert tree.threshold.dtype == np.float64 and tree.depth.dtype == np.int64
    assert tree.value.shape == (9, 2) and tree.counts.shape == (9, 2)
    assert tree.feature[5] == -1 and np.isnan(tree.threshold[2]) and tree.threshold[1] == 0.5
    assert np.isnan(tree.threshold[tree.split_kind == LEAF]).all()
    assert (tree.children_left[tree.split_kind == LEAF] == -1).all()
    np.testing.assert_array_equal(tree.categories[2], [1.0, 3.0])  # sorted
    np.testing.assert_array_equal(tree.coefs[5], [0.5, 0.0, -1.25, 2.0])
    assert tree.n_classes == 2
    with pytest.raises(IndexError, match="out of range"):
        tree.is_leaf(9)


def test_split_kind_given_by_name():
    b = TreeBuilder(2)
    r, left, right = (b.add_node([1, 1], [0.5, 0.5], d) for d in (0, 1, 1))
    b.set_split(r, "threshold", 1, 3.0, left, right)
    assert b.build().split_kind[0] == THRESHOLD


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda b, n: b.set_split(n[0], 99, 0, 0.5, n[1], n[2]), "kind must be one of"),
        (lambda b, n: b.set_split(n[0], LEAF, 0, 0.5, n[1], n[2]), "kind must be one of"),
        (lambda b, n: b.set_split(n[0], BINARY, 3, None, n[1], n[2]), r"feature must be an integer in \[0, 2\]"),
        (lambda b, n: b.set_split(n[0], BINARY, -1, None, n[1], n[2]), "feature must be"),
        (lambda b, n: b.set_split(n[0], BINARY, 0, 0.7, n[1], n[2]), "None or 0.5"),
        (lambda b, n: b.set_split(n[0], THRESHOLD, 0, None, n[1], n[2]), "needs a threshold"),
        (lambda b, n: b.set_split(n[0], THRESHOLD, 0, float("nan"), n[1], n[2]), "needs a threshold"),
        (lambda b, n: b.set_split(n[0], CATEGORY, 0, None, n[1], n[2]), "needs categories"),
        (lambda b, n: b.set_split(n[0], CATEGORY, 0, None, n[1], n[2], categories=[]), "at least one"),
        (lambda b, n: b.set_split(n[0], CATEGORY, 0, 1.0, n[1], n[2], categories=[1]), "None for a CATEGORY"),
        (lambda b, n: b.set_split(n[0], THRESHOLD, 0, 1.0, n[1], n[2], categories=[1]), "only used by CATEGORY"),
        (lambda b, n: b.set_split(n[0], HYPERPLANE, 0, 1.0, n[1], n[2], coef=[1, 1, 1]), "None or -1"),
        (lambda b, n: b.set_split(n[0], HYPERPLANE, None, 1.0, n[1], n[2]), "needs coef"),
        (lambda b, n: b.set_split(n[0], HYPERPLANE, None, 1.0, n[1], n[2], coef=[1, 2]), "length n_features=3"),
        (lambda b, n: b.set_split(n[0], HYPERPLANE, None, 1.0, n[1], n[2], coef=[1, np.inf, 2]), "finite"),
        (lambda b, n: b.set_split(n[0], BINARY, 0, None, n[1], n[2], coef=[1, 1, 1]), "only used by HYPERPLANE"),
        (lambda b, n: b.set_split(n[0], BINARY, 0, None, n[1], n[1]), "three different nodes"),
        (lambda b, n: b.set_split(n[0], BINARY, 0, None, n[0], n[1]), "three different nodes"),
        (lambda b, n: b.set_split(n[1], BINARY, 0, None, n[0], n[2]), "root and cannot be a child"),
        (lambda b, n: b.set_split(n[0], BINARY, 0, None, n[1], 17), r"right must be the id of an added node"),
        (lambda b, n: b.add_node([1, 1, 1], [0.3, 0.3, 0.4], 1), "need 2 entries"),
        (lambda b, n: b.add_node([-1, 1], [0.5, 0.5], 1), "non-negative"),
        (lambda b, n: b.add_node([1, 1], [np.nan, 0.5], 1), "finite"),
        (lambda b, n: b.add_node([1, 1], [0.5, 0.5], -1), "depth must be"),
        (lambda b, n: b.add_node([[1, 1]], [0.5, 0.5], 1), "1-D"),
    ],
)
def test_builder_rejects_bad_calls(call, match):
    b = TreeBuilder(3, classes=[0, 1])
    nodes = [b.add_node([1, 1], [0.5, 0.5], d) for d in (0, 1, 1)]
    with pytest.raises(ValueError, match=match):
        call(b, nodes)


def test_builder_rejects_resplit_and_second_parent():
    b = TreeBuilder(2)
    n = [b.add_node([1, 1], [0.5, 0.5], d) for d in (0, 1, 1, 2, 2)]
    b.set_split(n[0], BINARY, 0, None, n[1], n[2])
    with pytest.raises(ValueError, match="node 0 is already a split"):
        b.set_split(n[0], BINARY, 0, None, n[3], n[4])
    with pytest.raises(ValueError, match="node 2 already has a parent"):
        b.set_split(n[1], BINARY, 1, None, n[2], n[3])


def test_builder_constructor_errors():
    with pytest.raises(ValueError, match="n_features must be an integer >= 1"):
        TreeBuilder(0)
    with pytest.raises(ValueError, match="task must be one of"):
        TreeBuilder(2, task="ranking")
    with pytest.raises(ValueError, match="classes must be None"):
        TreeBuilder(2, classes=[0, 1], task="regression")
    with pytest.raises(ValueError, match="feature_names has 1 names"):
        TreeBuilder(2, feature_names=["a"])
    with pytest.raises(ValueError, match="regression, counts must hold one number"):
        TreeBuilder(2, task="regression").add_node([1, 2], [0.5], 0)


def test_build_rejects_empty_orphans_cycles_and_bad_depths():
    with pytest.raises(ValueError, match="without nodes"):
        TreeBuilder(2).build()

    b = TreeBuilder(2)
    for d in (0, 1, 1, 1):
        b.add_node([1, 1], [0.5, 0.5], d)
    b.set_split(0, BINARY, 0, None, 1, 2)
    with pytest.raises(ValueError, match=r"exactly one root \(node 0\), but nodes \[3\] have no parent"):
        b.build()

    # nodes 1 and 2 point at each other: each has a parent, neither is reachable from 0
    b = TreeBuilder(2)
    for d in (0, 1, 2, 3, 3):
        b.add_node([1, 1], [0.5, 0.5], d)
    b.set_split(1, BINARY, 0, None, 2, 3)
    b.set_split(2, BINARY, 1, None, 1, 4)
    with pytest.raises(ValueError, match="cycle"):
        b.build()

    b = TreeBuilder(2)
    for d in (0, 1, 2):
        b.add_node([1, 1], [0.5, 0.5], d)
    b.set_split(0, BINARY, 0, None, 1, 2)
    with pytest.raises(ValueError, match="node 2 has depth 2, but its parent node 0 has depth 0"):
        b.build()

    b = TreeBuilder(2)
    b.add_node([1, 1], [0.5, 0.5], 1)
    with pytest.raises(ValueError, match="root must have depth 0"):
        b.build()


def test_tree_constructor_validates_arrays():
    good = mixed_tree().to_dict()

    def tampered(**changes):
        d = json.loads(json.dumps(good))
        d.update(changes)
        return d

    cases = [
        (dict(children_left=[1, 3, 5, -1, -1, 7, -1, -1, 2]), "leaf node 8 must have children -1/-1"),
        (dict(feature=[0, 1, 2, -1, -1, -1, -1, -1, 0]), "leaf node 8 must have feature -1"),
        (dict(feature=[9, 1, 2, -1, -1, -1, -1, -1, -1]), "tests feature 9"),
        (dict(split_kind=[2, 1, 3, 0, 0, 4, 0, 0, 9]), "not a valid split kind"),
        (dict(children_right=[2, 4, 6, -1, -1, 8, -1, -1, -1][:8]), r"must have shape \(9,\)"),
        (dict(children_left=[1, 3, 5, -1, -1, 7, -1, -1, -1], children_right=[2, 4, 6, -1, -1, 1, -1, -1, -1]),
         "node 1 is the child of 2 nodes"),
        (dict(children_left=[1, 3, 0, -1, -1, 7, -1, -1, -1], children_right=[2, 4, 5, -1, -1, 8, -1, -1, -1]),
         r"CATEGORY node 2 must have two children with ids in \[1, 8\] other than itself; got 0 and 5"),
        (dict(categories={}), "CATEGORY node 2 has no entry in categories"),
        (dict(coefs={"5": [1.0, 2.0]}), "coefs\\[5\\] must be a vector of length n_features=4"),
        (dict(coefs={"5": [1.0, 2.0, 3.0, 4.0], "1": [1.0, 2.0, 3.0, 4.0]}), "not a HYPERPLANE node"),
        (dict(threshold=[0.25, 0.7, None, None, None, -0.125, None, None, None]), "BINARY node 1 must have threshold 0.5"),
        (dict(classes=[0, 1, 2]), "classes must be a 1-D array of 2 labels"),
        (dict(value=[[0.5]] * 9), "counts and value need one column per class"),
        (dict(depth=[0, 1, 1, 2, 2, 2, 2, 3, 4]), "node 8 has depth 4"),
        (dict(feature_names=["a"]), "feature_names has 1 names"),
        (dict(task="regression"), "classes must be None for a regression tree"),
    ]
    for changes, match in cases:
        with pytest.raises(ValueError, match=match):
            Tree.from_dict(tampered(**changes))


# ---------------------------------------------------------------------------
# apply / predict / predict_proba
# ---------------------------------------------------------------------------


def test_binary_split_semantics():
    tree = stump(BINARY)
    X = np.array([[7, 0, 3], [7, 1, 3], [-5, 0, 0], [0, 1, 1]])
    np.testing.assert_array_equal(tree.apply(X), [1, 2, 1, 2])
    np.testing.assert_array_equal(tree.predict(X), ["a", "b", "a", "b"])
    np.testing.assert_allclose(tree.predict_proba(X), [[0.8, 0.2], [0.2, 0.8], [0.8, 0.2], [0.2, 0.8]])
    # booleans work as 0/1
    np.testing.assert_array_equal(tree.apply(np.array([[False, True, False]])), [2])


def test_threshold_split_semantics_boundary_goes_left():
    tree = stump(THRESHOLD)
    X = np.array([[42.5, 0, 0], [42.500001, 0, 0], [-np.inf, 0, 0], [np.nan, 0, 0]])
    np.testing.assert_array_equal(tree.apply(X), [1, 2, 1, 2])  # NaN goes right


def test_category_split_semantics():
    tree = stump(CATEGORY, categories=[3, 1])
    X = np.array([[0, 0, 1], [0, 0, 2], [0, 0, 3], [0, 0, 3.5], [0, 0, np.nan]])
    np.testing.assert_array_equal(tree.apply(X), [1, 2, 1, 2, 2])


def test_hyperplane_split_semantics():
    tree = stump(HYPERPLANE, coef=[0.5, 0.0, 1.0])
    X = np.array([[4, 9, 0], [2, -5, 1], [2, 0, 1.5], [0, 0, 2.25]])
    # dot products: 2, 2, 2.5, 2.25 against threshold 2
    np.testing.assert_array_equal(tree.apply(X), [1, 1, 2, 2])


def test_mixed_tree_against_hand_computed_leaves():
    tree = mixed_tree()
    X = np.array(
        [
            [0.0, 0, 9, 9],  # x0 <= .25 -> node 1, x1 = 0 -> 3
            [0.25, 1, 9, 9],  # node 1, x1 = 1 -> 4
            [1.0, 0, 2, 0],  # node 2, x2 = 2 not in {1, 3} -> 6
            [1.0, 0, 3, 0],  # node 5: 0.5 - 3.75 + 0 = -3.25 <= -0.125 -> 7
            [1.0, 0, 1, 0.5],  # node 5: 0.5 - 1.25 + 1 = 0.25 > -0.125 -> 8
        ]
    )
    np.testing.assert_array_equal(tree.apply(X), [3, 4, 6, 7, 8])
    np.testing.assert_array_equal(tree.predict(X), [1, 1, 0, 0, 0])
    np.testing.assert_allclose(tree.predict_proba(X), tree.value[[3, 4, 6, 7, 8]])


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    kinds=st.sets(st.sampled_from(ALL_KINDS), min_size=1).map(lambda s: tuple(sorted(s))),
    max_depth=st.integers(0, 6),
    n_samples=st.integers(0, 60),
    n_features=st.integers(1, 5),
)
def test_apply_matches_reference_traversal(seed, kinds, max_depth, n_samples, n_features):
    rng = np.random.default_rng(seed)
    tree = random_tree(rng, n_features, kinds, max_depth)
    # small integers make ties with thresholds (and exact hyperplane sums) frequent
    X = rng.integers(-3, 4, size=(n_samples, n_features)).astype(float)
    leaves = tree.apply(X)
    assert leaves.dtype == np.int64 and leaves.shape == (n_samples,)
    expected = [reference_leaf(tree, x) for x in X]
    np.testing.assert_array_equal(leaves, np.asarray(expected, dtype=np.int64))
    assert np.all(tree.split_kind[leaves] == LEAF)
    pred = tree.predict(X)
    np.testing.assert_array_equal(pred, tree.classes[np.argmax(tree.value[leaves], axis=1)])
    np.testing.assert_array_equal(tree.predict_proba(X), tree.value[leaves])


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_features=st.integers(1, 6))
def test_binary_tree_on_binary_data(seed, n_features):
    rng = np.random.default_rng(seed)
    tree = random_tree(rng, n_features, (BINARY,), 5)
    X = rng.integers(0, 2, size=(40, n_features)).astype(np.uint8)
    for x, leaf in zip(X, tree.apply(X)):
        i = 0
        while not tree.is_leaf(i):
            i = tree.children_left[i] if x[tree.feature[i]] == 0 else tree.children_right[i]
        assert i == leaf


def test_apply_on_continuous_data_and_input_types():
    rng = np.random.default_rng(0)
    tree = random_tree(rng, 4, ALL_KINDS, 6, p_split=0.9)
    X = rng.normal(scale=2, size=(500, 4))
    leaves = tree.apply(X)
    np.testing.assert_array_equal(leaves, [reference_leaf(tree, x) for x in X])
    np.testing.assert_array_equal(tree.apply(X.tolist()), leaves)
    X32 = X.astype(np.float32)
    np.testing.assert_array_equal(tree.apply(X32), [reference_leaf(tree, x.astype(np.float64)) for x in X32])
    np.testing.assert_array_equal(tree.apply(np.round(X).astype(np.int16)),
                                  [reference_leaf(tree, x) for x in np.round(X)])
    pd = pytest.importorskip("pandas")
    np.testing.assert_array_equal(tree.apply(pd.DataFrame(X)), leaves)
    # a subset of rows reaches the same leaves
    np.testing.assert_array_equal(tree.apply(X[::7]), leaves[::7])


def test_predict_ties_go_to_lowest_index_and_classes_none():
    b = TreeBuilder(1)
    r = b.add_node([2, 2, 2], [0.3, 0.35, 0.35], 0)
    left = b.add_node([1, 1, 1], [1 / 3, 1 / 3, 1 / 3], 1)
    right = b.add_node([0, 2, 2], [0.0, 0.5, 0.5], 1)
    b.set_split(r, THRESHOLD, 0, 0.0, left, right)
    tree = b.build()
    assert tree.classes is None
    np.testing.assert_array_equal(tree.predict([[-1.0], [1.0]]), [0, 1])


def test_regression_tree():
    b = TreeBuilder(2, task="regression", feature_names=["a", "b"])
    r = b.add_node([10], [1.5], 0)
    left = b.add_node([4], [-2.0], 1)
    right = b.add_node([6], [3.25], 1)
    b.set_split(r, THRESHOLD, 1, 0.0, left, right)
    tree = b.build()
    assert tree.n_classes is None
    pred = tree.predict([[0, -1], [0, 1]])
    assert pred.dtype == np.float64
    np.testing.assert_array_equal(pred, [-2.0, 3.25])
    with pytest.raises(ValueError, match="only available for classification"):
        tree.predict_proba([[0, 1]])
    text = tree.export_text()
    assert "|--- b <= 0\n" in text and "value: -2  (n=4)" in text and "value: 3.25  (n=6)" in text
    assert "regression" in repr(tree)


def test_bad_X_is_rejected_with_clear_errors():
    tree = stump(THRESHOLD)
    with pytest.raises(ValueError, match=r"(?s)Expected 2D array, got 1D array.*reshape"):
        tree.apply([1, 2, 3])
    with pytest.raises(ValueError, match=r"2-D array of shape \(n_samples, 3\); got 1 dimension.*reshape"):
        tree.apply(np.array([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="got 3 dimension"):
        tree.predict(np.zeros((2, 3, 1)))
    with pytest.raises(ValueError, match="X has 2 features .* n_features=3"):
        tree.predict_proba(np.zeros((4, 2)))
    with pytest.raises(TypeError, match="sparse"):
        tree.apply(sparse.csr_matrix(np.zeros((2, 3))))
    with pytest.raises(ValueError, match="column 'age' of X holds the string 'a' at row 0, but it is a numeric column"):
        tree.apply(np.array([["a", "b", "c"]]))
    with pytest.raises(ValueError, match="column 'smoker' of X holds the string 'b' at row 0"):
        tree.apply(np.array([[1, "b", None]], dtype=object))
    # None is a missing value, which goes right like NaN
    np.testing.assert_array_equal(tree.apply(np.array([[None, 0, 0]], dtype=object)), [2])
    assert tree.apply(np.zeros((0, 3))).shape == (0,)
    assert tree.predict(np.zeros((0, 3))).shape == (0,)


# ---------------------------------------------------------------------------
# text, DOT and parenthesised exports
# ---------------------------------------------------------------------------


def test_export_text_every_split_kind():
    text = stump(BINARY).export_text()
    assert text == (
        "|--- smoker = 0\n"
        "|   |--- class: a  (counts [4, 1], p=0.8)\n"
        "|--- smoker = 1\n"
        "|   |--- class: b  (counts [1, 4], p=0.8)\n"
    )
    text = stump(THRESHOLD).export_text()
    assert "|--- age <= 42.5\n" in text and "|--- age >  42.5\n" in text
    text = stump(CATEGORY, categories=[3, 1]).export_text()
    assert "|--- colour in {1, 3}\n" in text and "|--- colour not in {1, 3}\n" in text
    text = stump(HYPERPLANE, coef=[0.5, 0.0, -1.2]).export_text()
    assert "|--- 0.5*age - 1.2*colour <= 2\n" in text
    assert "|--- 0.5*age - 1.2*colour >  2\n" in text


def test_export_text_gives_the_codes_of_categories_in_oblique_splits():
    """A hyperplane, quadratic or polytope weighs a category by its code: a closing line says which
    label each code is, for the categorical features those splits use, and only then."""

    def tree(kind, *args, **kw):
        b = TreeBuilder(3, classes=[0, 1], feature_names=["age", "city", "plan"],
                        feature_categories=[None, ["Lima", "Oslo", "Pune"], [f"p{k}" for k in range(14)]])
        ids = [b.add_node([4, 1], [0.8, 0.2], d) for d in (0, 1, 1)]
        b.set_split(ids[0], kind, *args, ids[1], ids[2], **kw)
        return b.build()

    text = tree(HYPERPLANE, None, 2.0, coef=[0.5, -1.0, 0.0]).export_text()
    assert text.splitlines()[0] == "|--- 0.5*age - 1*city <= 2"
    assert text.endswith("\n(category codes in the oblique splits: city: Lima=0, Oslo=1, Pune=2)\n")
    text = tree(HYPERPLANE, None, 2.0, coef=[0.5, 0.0, 1.0]).export_text()  # plan: 14 labels
    assert text.endswith("plan: p0=0, p1=1, p2=2, p3=3, p4=4, p5=5, p6=6, p7=7, p8=8, p9=9, p10=10, p11=11, "
                         "... (14 labels in feature_categories[2]))\n")
    assert "codes" not in tree(HYPERPLANE, None, 2.0, coef=[0.5, 0.0, 0.0]).export_text()  # age only
    text = tree(CATEGORY, 1, None, categories=[0]).export_text()  # labels printed already
    assert "city == Lima" in text and "codes" not in text
    quadratic = np.zeros(3 + 6)
    quadratic[[0, 3 + 5]] = 1.0  # age + plan^2
    assert tree(QUADRATIC, None, 2.0, coef=quadratic).export_text().endswith("(14 labels in feature_categories[2]))\n")
    poly = {"r": [1.0, 0.5], "bias": [0.0, 1.0], "coefs": [[2.0, 0.0, 0.0], [0.0, -4.0, 0.0]]}
    assert tree(POLYTOPE, None, 1.0, polytope=poly).export_text().endswith("city: Lima=0, Oslo=1, Pune=2)\n")
    with_codes = tree(HYPERPLANE, None, 2.0, coef=[0.5, -1.0, 0.0])
    assert "codes" not in with_codes.export_text(condition=lambda i: ("yes", "no"))
    assert 'label="category codes in the oblique splits: city: Lima=0, Oslo=1, Pune=2"; labelloc="b";' \
        in with_codes.to_dot()
    assert "codes" not in tree(HYPERPLANE, None, 2.0, coef=[0.5, 0.0, 0.0]).to_dot()


def test_export_text_options_and_names():
    tree = mixed_tree()
    text = tree.export_text()
    lines = text.splitlines()
    assert lines[0] == "|--- x0 <= 0.25"
    assert lines[1] == "|   |--- x1 = 0"
    assert lines[2] == "|   |   |--- class: 1  (counts [3, 7], p=0.7)"
    assert "|   |   |--- 0.5*x0 - 1.25*x2 + 2*x3 <= -0.125" in lines
    assert "|   |   |   |--- class: 1  (counts [7, 3], p=0.7)" not in lines  # class 0 has p=0.7 there
    assert "|   |   |   |--- class: 0  (counts [7, 3], p=0.7)" in lines
    # one line per node plus one per split (two conditions, one leaf line each)
    assert len(lines) == tree.n_leaves + 2 * (tree.n_nodes - tree.n_leaves)
    named = tree.export_text(feature_names=["a", "b", "c", "d"], decimals=1, show_counts=False)
    assert named.splitlines()[0] == "|--- a <= 0.25"  # short thresholds print exactly
    assert "counts" not in named and "|   |   |--- class: 1\n" in named
    with pytest.raises(ValueError, match="feature_names has 2 names"):
        tree.export_text(feature_names=["a", "b"])
    with pytest.raises(ValueError, match="decimals must be an integer >= 0"):
        tree.export_text(decimals=-1)


def test_export_text_weighted_counts():
    b = TreeBuilder(1, classes=[False, True])
    b.add_node([1.25, 3.5], [0.2631, 0.7369], 0)
    assert b.build().export_text(decimals=2) == "|--- class: True  (counts [1.25, 3.5], p=0.74)\n"


def test_to_dot_contains_every_node_and_edge():
    tree = mixed_tree()
    dot = tree.to_dot(feature_names=["a", 'b"q', "c", "d"])
    assert dot.startswith("digraph Tree {") and dot.rstrip().endswith("}")
    for i in range(tree.n_nodes):
        assert re.search(rf"^{i} \[label=", dot, flags=re.M), i
    n_internal = tree.n_nodes - tree.n_leaves
    assert dot.count("->") == 2 * n_internal
    assert dot.count('[label="True"]') == n_internal
    assert '\\"' in dot  # quote in a feature name is escaped
    for i in np.flatnonzero(tree.split_kind != LEAF):
        assert f"{i} -> {tree.children_left[i]} [label=\"True\"]" in dot
        assert f"{i} -> {tree.children_right[i]} [label=\"False\"]" in dot


@pytest.mark.parametrize("s", ["", "(0)", "((1)0(1))", "(1(2))", "((((3)2)1)0)", "(12(0(11)))"])
def test_paren_round_trip_examples(s):
    tree = Tree.from_paren(s, n_features=13)
    assert tree.to_paren() == s
    assert tree.n_nodes == 2 * s.count("(") + 1
    assert np.all(tree.counts == 0) and np.allclose(tree.value, 0.5)
    assert np.all(tree.split_kind[tree.split_kind != LEAF] == BINARY)


def test_from_paren_structure():
    tree = Tree.from_paren("(1(2))", 3)
    assert tree.feature[0] == 1
    left, right = tree.children_left[0], tree.children_right[0]
    assert tree.is_leaf(left) and not tree.is_leaf(right) and tree.feature[right] == 2
    np.testing.assert_array_equal(tree.depth, [0, 1, 1, 2, 2])
    np.testing.assert_array_equal(tree.apply([[0, 0, 0], [0, 1, 0], [0, 1, 1]]),
                                  [left, tree.children_left[right], tree.children_right[right]])
    three = Tree.from_paren("(0)", 1, classes=["x", "y", "z"])
    np.testing.assert_allclose(three.value, 1 / 3)
    np.testing.assert_array_equal(three.classes, ["x", "y", "z"])
    assert Tree.from_paren(" ( 0 ) ", 1).to_paren() == "(0)"


@pytest.mark.parametrize(
    "s, match",
    [
        ("(", "expected a feature index"),
        ("()", "expected a feature index"),
        ("(0", "expected '\\)'"),
        ("(0))", "unexpected"),
        ("(0)(1)", "unexpected"),
        ("0", "unexpected"),
        ("(a)", "invalid character"),
        ("(5)", "out of range"),
        ("((0)(1))", "expected a feature index"),
    ],
)
def test_from_paren_rejects_malformed(s, match):
    with pytest.raises(ValueError, match=match):
        Tree.from_paren(s, n_features=3)


def test_to_paren_every_split_kind_and_deep_trees():
    assert stump(BINARY).to_paren() == "(1)"
    assert stump(THRESHOLD).to_paren() == "([age <= 42.5])"
    assert stump(CATEGORY, categories=[3, 1]).to_paren() == "([colour in {1, 3}])"
    assert stump(HYPERPLANE, coef=[0.5, 0.0, -1.2]).to_paren() == "([0.5*age - 1.2*colour <= 2])"
    expected = "((1)[a <= 0.25](([0.5*a - 1.25*c + 2*d <= -0.125])[c in {1, 3}]))"
    assert mixed_tree().to_paren(feature_names=["a", "b", "c", "d"]) == expected
    deep = "(0" * 3000 + ")" * 3000  # a right-leaning chain, deeper than the recursion limit
    tree = Tree.from_paren(deep, 1)
    assert tree.max_depth == 3000 and tree.to_paren() == deep
    assert tree.apply(np.ones((2, 1)))[0] == tree.n_nodes - 1
    assert len(tree.export_text().splitlines()) == 3 * 3000 + 1


paren_trees = st.recursive(
    st.just(""),
    lambda sub: st.tuples(sub, st.integers(0, 11), sub).map(lambda t: f"({t[0]}{t[1]}{t[2]})"),
    max_leaves=40,
)


@settings(max_examples=200, deadline=None)
@given(s=paren_trees)
def test_paren_round_trip_property(s):
    tree = Tree.from_paren(s, n_features=12)
    assert tree.to_paren() == s
    rebuilt = Tree.from_dict(tree.to_dict())
    assert rebuilt.to_paren() == s and rebuilt.structurally_equal(tree)
    assert tree.max_depth == _paren_depth(s)


def _paren_depth(s: str) -> int:
    depth = best = 0
    for ch in s:
        depth += ch == "("
        depth -= ch == ")"
        best = max(best, depth)
    return best


# ---------------------------------------------------------------------------
# serialisation
# ---------------------------------------------------------------------------


def _assert_same_tree(a: Tree, b: Tree) -> None:
    for name in ("children_left", "children_right", "split_kind", "feature", "threshold", "value",
                 "counts", "depth"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype, name
        np.testing.assert_array_equal(x, y, err_msg=name)
    assert a.n_features == b.n_features and a.task == b.task and a.feature_names == b.feature_names
    if a.classes is None:
        assert b.classes is None
    else:
        assert a.classes.dtype == b.classes.dtype
        np.testing.assert_array_equal(a.classes, b.classes)
    for table in ("categories", "coefs"):
        ta, tb = getattr(a, table), getattr(b, table)
        assert ta.keys() == tb.keys()
        for k in ta:
            np.testing.assert_array_equal(ta[k], tb[k])


def _all_json_types(obj) -> bool:
    if isinstance(obj, dict):
        return all(isinstance(k, str) and _all_json_types(v) for k, v in obj.items())
    if isinstance(obj, list):
        return all(_all_json_types(v) for v in obj)
    return obj is None or type(obj) in (int, float, str, bool)


@pytest.mark.parametrize("kinds", [(BINARY,), (THRESHOLD,), (CATEGORY,), (HYPERPLANE,), ALL_KINDS])
@pytest.mark.parametrize("classes", [None, [0, 1, 2], ["cat", "dog", "eel"], [0.5, 1.5, 2.5]])
def test_json_round_trip_every_split_kind(kinds, classes, tmp_path):
    rng = np.random.default_rng(len(kinds) * 7 + (0 if classes is None else len(str(classes))))
    b = random_tree(rng, 4, kinds, 5, classes=classes, p_split=0.9)
    tree = Tree(b.children_left, b.children_right, b.split_kind, b.feature, b.threshold, b.value / 3,
                b.counts, b.depth, b.n_features, classes=classes, categories=b.categories, coefs=b.coefs,
                feature_names=["a", "b", "c", "d"])
    d = tree.to_dict()
    assert d["format"] == "arboretum.Tree" and d["version"] == 2
    assert _all_json_types(d)
    assert None in d["threshold"]  # NaN at leaves becomes None
    text = json.dumps(d, allow_nan=False)
    for rebuilt in (Tree.from_dict(json.loads(text)), Tree.from_json(tree.to_json()),
                    Tree.from_json(text)):
        _assert_same_tree(tree, rebuilt)
    path = tmp_path / "tree.json"
    tree.to_json(path)
    rebuilt = Tree.from_json(path)
    _assert_same_tree(tree, rebuilt)
    assert Tree.from_json(str(path)).structurally_equal(tree)
    X = rng.integers(-3, 4, size=(200, 4)).astype(float)
    np.testing.assert_array_equal(rebuilt.apply(X), tree.apply(X))
    np.testing.assert_array_equal(rebuilt.predict(X), tree.predict(X))
    np.testing.assert_array_equal(rebuilt.predict_proba(X), tree.predict_proba(X))


def test_json_round_trip_regression_and_special_floats():
    rng = np.random.default_rng(3)
    tree = random_tree(rng, 3, ALL_KINDS, 4, task="regression", p_split=0.9)
    tree.value[-1, 0] = np.inf  # unusual but representable
    rebuilt = Tree.from_json(tree.to_json())
    _assert_same_tree(tree, rebuilt)
    X = rng.normal(size=(50, 3))
    np.testing.assert_array_equal(rebuilt.predict(X), tree.predict(X))


def test_from_dict_rejects_foreign_documents():
    d = mixed_tree().to_dict()
    with pytest.raises(ModelFormatError, match="'format' must be 'arboretum.Tree'"):
        Tree.from_dict({**d, "format": "sklearn"})
    with pytest.raises(ModelFormatError, match="version 3; this arboretum reads versions 1, 2"):
        Tree.from_dict({**d, "version": 3})
    with pytest.raises(ModelFormatError, match=r"missing keys \['value'\]"):
        Tree.from_dict({k: v for k, v in d.items() if k != "value"})
    with pytest.raises(ModelFormatError, match="must be a JSON object; got list"):
        Tree.from_dict([1, 2])
    with pytest.raises(ModelFormatError, match="not a JSON document"):
        Tree.from_json("{oops")
    # version 1 (before feature_categories) is still read
    v1 = {k: v for k, v in d.items() if k != "feature_categories"}
    assert Tree.from_dict({**v1, "version": 1}).structurally_equal(mixed_tree())


# ---------------------------------------------------------------------------
# comparison and repr
# ---------------------------------------------------------------------------


def test_structurally_equal_ignores_numbering_and_values():
    a = Tree.from_paren("((1)0(2))", 3)
    # the same tree, numbered breadth-first and with other counts/values
    b = TreeBuilder(3)
    n = [b.add_node([i, 1], [0.9, 0.1], d) for i, d in enumerate([0, 1, 1, 2, 2, 2, 2])]
    b.set_split(n[0], BINARY, 0, None, n[1], n[2])
    b.set_split(n[1], BINARY, 1, None, n[3], n[4])
    b.set_split(n[2], BINARY, 2, None, n[5], n[6])
    other = b.build()
    assert a.structurally_equal(other) and other.structurally_equal(a)
    assert not a.structurally_equal(Tree.from_paren("((2)0(1))", 3))
    assert not a.structurally_equal(Tree.from_paren("((1)0(2))", 4))
    assert not a.structurally_equal(Tree.from_paren("((1)0)", 3))
    assert not a.structurally_equal("((1)0(2))")
    t1, t2 = stump(THRESHOLD), stump(THRESHOLD)
    assert t1.structurally_equal(t2)
    t2.threshold[0] = 42.0
    assert not t1.structurally_equal(t2)
    h1, h2 = stump(HYPERPLANE, coef=[1, 0, 0]), stump(HYPERPLANE, coef=[1, 0, 1e-9])
    assert not h1.structurally_equal(h2)
    c1, c2 = stump(CATEGORY, categories=[1, 2]), stump(CATEGORY, categories=[2, 1])
    assert c1.structurally_equal(c2)
    assert not c1.structurally_equal(stump(CATEGORY, categories=[1]))


def test_repr():
    r = repr(mixed_tree())
    assert r.startswith("Tree(task='classification', n_nodes=9, n_leaves=5, max_depth=3, n_features=4")
    assert "'HYPERPLANE': 1" in r and "'BINARY': 1" in r



@st.composite
def _small_threshold_arrays(draw):
    """The arrays of a random small tree of LEAF and THRESHOLD nodes, and whether one entry was
    then corrupted."""
    n_leaves = draw(st.integers(1, 6))
    left, right, kind, feature, thr, depth = [-1], [-1], [LEAF], [-1], [np.nan], [0]
    leaves = [0]
    while len(leaves) < n_leaves:
        i = leaves.pop(draw(st.integers(0, len(leaves) - 1)))
        a, b = len(kind), len(kind) + 1
        for lst, v in ((left, -1), (right, -1), (kind, LEAF), (feature, -1), (thr, np.nan)):
            lst += [v, v]
        depth += [depth[i] + 1] * 2
        left[i], right[i], kind[i] = a, b, THRESHOLD
        feature[i], thr[i] = draw(st.integers(0, 2)), draw(st.floats(-5, 5))
        leaves += [a, b]
    arrays = dict(children_left=left, children_right=right, split_kind=kind, feature=feature, threshold=thr,
                  depth=depth)
    corrupted = draw(st.booleans())
    if corrupted:
        name = draw(st.sampled_from(sorted(arrays)))
        at = draw(st.integers(0, len(kind) - 1))
        values = [np.nan, 0.0, 1.5] if name == "threshold" else [-2, -1, 0, 1, 2, 3, 5, 9]
        arrays[name][at] = draw(st.sampled_from(values))
    return arrays, corrupted


@settings(max_examples=400, deadline=None)
@given(case=_small_threshold_arrays())
def test_small_tree_fast_accept_implies_the_full_checks(case):
    """Tree._small_threshold_tree_ok, the plain-Python fast accept of small LEAF/THRESHOLD trees
    that spares a fit the vectorised checks' fixed cost, accepts only what _validate_nodes and
    _validate_shape accept, and accepts every such tree that is well formed."""
    arrays, corrupted = case
    t = object.__new__(Tree)
    for name, dtype in (("children_left", np.int64), ("children_right", np.int64), ("split_kind", np.int8),
                        ("feature", np.int64), ("threshold", np.float64), ("depth", np.int64)):
        setattr(t, name, np.asarray(arrays[name], dtype=dtype))
    t.n_features = 3
    t.categories, t.coefs, t.polytopes, t.conjunctions = {}, {}, {}, {}
    fast = t._small_threshold_tree_ok()
    try:
        t._validate_nodes()
        t._validate_shape()
        full = True
    except ValueError:
        full = False
    assert full or not fast
    if not corrupted:
        assert fast and full
