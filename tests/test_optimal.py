"""He & Little's optimal trees (spec-002): the DP against brute force, the spec's oracle values,
invariants of the fitted trees and the estimators' errors.

The brute-force oracles here are independent of the library's DP: they enumerate
K-permutations with the validity predicate of spec §2.4 (BST insertion by Kmat, then
the left-first level order must give the permutation back), or labelled tree shapes
with every rule checked against every ancestor (spec T8), and cost leaves in NumPy.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arboretum import InvalidParameterError, LimitWarning, OptimalTreeClassifier, OptimalTreeRegressor
from arboretum.optimal import _kernels as K
from arboretum.optimal.rules import axis_rules, hyperplane_rules
from arboretum.optimal.solver import kmat, make_objective, solve, sodt_tree
from arboretum._numba import pack_rows_mask

# ---------------------------------------------------------------------------
# oracles
# ---------------------------------------------------------------------------


def np_cost(points, labels=None, target=None, weight=None):
    w = np.ones(points.shape[0]) if weight is None else weight
    if not points.any():
        return 0.0
    if labels is not None:
        counts = np.bincount(labels[points], weights=w[points])
        return float(w[points].sum() - counts.max())
    t, ww = target[points], w[points]
    mean = np.dot(ww, t) / ww.sum()
    return float(np.dot(ww, (t - mean) ** 2))


def insert_tree(perm, km):
    """BST insertion of ``perm`` by ``km`` (spec §2.4); None if rejected or if the level order differs."""
    children = {perm[0]: [None, None]}
    for r in perm[1:]:
        a = perm[0]
        while True:
            e = km(a, r)
            if e == 0:
                return None
            side = 0 if e > 0 else 1
            nxt = children[a][side]
            if nxt is None:
                children[a][side] = r
                children[r] = [None, None]
                break
            a = nxt
    order, queue = [], [perm[0]]
    while queue:
        a = queue.pop(0)
        order.append(a)
        queue.extend(c for c in children[a] if c is not None)
    return children if order == list(perm) else None


def tree_leaves(root, children, left, n):
    """Leaf point sets and depth of the tree ``children`` rooted at ``root``."""
    out = []

    def rec(node, pts, depth):
        if node is None:
            out.append((pts, depth))
            return
        rec(children[node][0], pts & left[node], depth + 1)
        rec(children[node][1], pts & ~left[node], depth + 1)

    rec(root, np.ones(n, dtype=bool), 0)
    return out


def perm_bruteforce(rules, K_, cost, nmin=0, depth=None, combos=None):
    """min over valid K-permutations (spec eq. 6, the reference oracle); also the number of proper trees."""
    n = rules.n_samples
    left = {r: rules.left_mask(r) for r in range(rules.n_rules)}
    best, n_trees = math.inf, 0
    for comb in combos if combos is not None else itertools.combinations(range(rules.n_rules), K_):
        for perm in itertools.permutations(comb):
            ch = insert_tree(perm, lambda a, b: kmat(rules, a, b))
            if ch is None:
                continue
            n_trees += 1
            leaves = tree_leaves(perm[0], ch, left, n)
            if any(p.sum() < nmin for p, _ in leaves):
                continue
            if depth is not None and max(d for _, d in leaves) > depth:
                continue
            best = min(best, sum(cost(p) for p, _ in leaves))
    return best, n_trees


def shape_bruteforce(rules, K_, cost, nmin=0, depth=None):
    """min over labelled shapes: every binary tree of K_ nodes, every assignment of distinct rules,
    each rule's defining points on its side of every ancestor (spec T8's second oracle)."""
    n = rules.n_samples
    left = [rules.left_mask(r) for r in range(rules.n_rules)]
    defs = [[int(p) for p in rules.defs[r] if p >= 0] for r in range(rules.n_rules)]

    def trees(pts, k, ancestors, used, d):
        """(cost) of the best subtree with k nodes, or inf."""
        if k == 0:
            return cost(pts) if pts.sum() >= nmin else math.inf
        if depth is not None and d >= depth:
            return math.inf
        best = math.inf
        for r in range(rules.n_rules):
            if r in used:
                continue
            if not all(check_side(left[a], defs[r], side) for a, side in ancestors):
                continue
            for k1 in range(k):
                cl = trees(pts & left[r], k1, ancestors + [(r, True)], used | {r}, d + 1)
                if cl == math.inf:
                    continue
                cr = trees(pts & ~left[r], k - 1 - k1, ancestors + [(r, False)], used | {r}, d + 1)
                best = min(best, cl + cr)
        return best

    return trees(np.ones(n, dtype=bool), K_, [], frozenset(), 0)


def check_side(left_a, pts, side):
    return left_a[pts].all() if side else not left_a[pts].any()


def random_data(rng, n, d=2, classes=2, grid=None):
    X = rng.integers(0, grid, size=(n, d)).astype(float) if grid else rng.normal(size=(n, d)).round(2)
    y = rng.integers(0, classes, size=n)
    return X, y


# ---------------------------------------------------------------------------
# the DP against brute force
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("family", ["axis", "hyperplane"])
def test_dp_matches_permutation_bruteforce(family):
    rng = np.random.default_rng(1 if family == "axis" else 2)
    n_cases = 0
    for trial in range(24):
        grid = 4 if trial % 3 == 0 else None  # ties and collinear points on a grid
        n = 6 if family == "axis" else 5
        X, y = random_data(rng, n, classes=2 + trial % 2, grid=grid)
        rules = axis_rules(X) if family == "axis" else hyperplane_rules(X)
        obj = make_objective(n, labels=y, n_classes=int(y.max()) + 1)
        cost = lambda p: np_cost(p, labels=y)  # noqa: E731
        for k in (1, 2, 3) if family == "axis" else (1, 2):
            for nmin, depth in [(0, None), (2, None), (0, 1), (1, 2)]:
                got = solve(rules, obj, k, exact=True, nmin=nmin, depth=depth)
                want, _ = perm_bruteforce(rules, k, cost, nmin, depth)
                assert got.cost == want, (trial, k, nmin, depth)
                if got.tree is not None:
                    assert got.cost == sum(cost(leaf.points) for leaf in got.tree.leaves())
                n_cases += 1
    assert n_cases >= 100


@pytest.mark.parametrize("family", ["axis", "hyperplane"])
def test_dp_matches_labelled_shape_bruteforce(family):
    rng = np.random.default_rng(5)
    for trial in range(10):
        n = 5 if family == "axis" else 4
        X, y = random_data(rng, n, grid=3 if trial % 2 else None)
        rules = axis_rules(X) if family == "axis" else hyperplane_rules(X)
        obj = make_objective(n, labels=y, n_classes=2)
        cost = lambda p: np_cost(p, labels=y)  # noqa: E731
        for k in (1, 2, 3):
            for nmin, depth in [(0, None), (1, None), (0, 2)]:
                got = solve(rules, obj, k, exact=True, nmin=nmin, depth=depth).cost
                assert got == shape_bruteforce(rules, k, cost, nmin, depth), (trial, k, nmin, depth)


def test_sodt_of_every_combination_matches_its_permutations():
    """The DP per combination (where the wrong fusion of spec §3.7 shows), kernel and Python."""
    rng = np.random.default_rng(7)
    for trial in range(6):
        X, y = random_data(rng, 7, classes=3, grid=5)
        rules = axis_rules(X)
        obj = make_objective(7, labels=y, n_classes=3)
        work = K.make_work(3, 1)
        all_bits = pack_rows_mask(np.ones(7, dtype=bool))
        for comb in itertools.combinations(range(rules.n_rules), 3):
            want, _ = perm_bruteforce(rules, 3, lambda p: np_cost(p, labels=y), combos=[comb])
            c = np.array(comb, dtype=np.int64)
            got = K.sodt_cost(c, rules.pos, rules.defs, all_bits, obj, 0, -1, np.inf, work)
            assert got == want, comb
            assert sodt_tree(comb, rules, obj)[0] == want


def test_incumbent_bound_keeps_the_first_optimum():
    rng = np.random.default_rng(41)
    for trial in range(10):
        X, y = random_data(rng, 9, classes=2 + trial % 2, grid=4 if trial % 2 else None)
        rules = axis_rules(X)
        obj = make_objective(9, labels=y, n_classes=int(y.max()) + 1)
        for k in (2, 3):
            plain = solve(rules, obj, k, nmin=1)
            bounded = solve(rules, obj, k, nmin=1, incumbent=plain.cost)
            assert (bounded.cost, bounded.combination) == (plain.cost, plain.combination)
            assert bounded.n_examined == plain.n_examined
            assert solve(rules, obj, k, nmin=1, incumbent=plain.cost - 0.5).tree is None


def test_regression_and_weights_match_bruteforce():
    rng = np.random.default_rng(11)
    for trial in range(8):
        X, _ = random_data(rng, 6)
        t = rng.normal(size=6)
        w = rng.integers(1, 4, size=6).astype(float)
        rules = axis_rules(X)
        for k in (1, 2):
            got = solve(rules, make_objective(6, target=t, weight=w), k, exact=True).cost
            want, _ = perm_bruteforce(rules, k, lambda p: np_cost(p, target=t, weight=w))
            assert got == pytest.approx(want, rel=1e-9, abs=1e-12)
            y = (t > 0).astype(int)
            got = solve(rules, make_objective(6, labels=y, n_classes=2, weight=w), k, exact=True).cost
            want, _ = perm_bruteforce(rules, k, lambda p: np_cost(p, labels=y, weight=w))
            assert got == want


def test_axis_rules_per_point_match_unconstrained_search():
    """T19: one rule per (feature, point) loses nothing against any threshold anywhere, with reuse."""
    rng = np.random.default_rng(3)
    for trial in range(12):
        X, y = random_data(rng, 7, classes=2, grid=4)
        cost = lambda p: np_cost(p, labels=y)  # noqa: E731
        thresholds = [(d, v) for d in range(2) for v in np.unique(X[:, d])]
        memo: dict = {}

        def best(pts, k):
            key = (pts.tobytes(), k)
            if key not in memo:
                if k == 0:
                    memo[key] = cost(pts)
                else:
                    memo[key] = min(best(pts & (X[:, d] <= v), k1) + best(pts & (X[:, d] > v), k - 1 - k1)
                                    for d, v in thresholds for k1 in range(k))
            return memo[key]

        rules = axis_rules(X)
        obj = make_objective(7, labels=y, n_classes=2)
        for k in (1, 2, 3):
            assert solve(rules, obj, k, exact=True).cost == best(np.ones(7, dtype=bool), k)


# ---------------------------------------------------------------------------
# the spec's oracle values
# ---------------------------------------------------------------------------

XOR_X = np.array([(0, 0), (1, 1), (0, 1), (1, 0)], dtype=float)
XOR_Y = np.array([0, 0, 1, 1])


def test_t14_xor():
    obj = make_objective(4, labels=XOR_Y, n_classes=2)
    axis = axis_rules(XOR_X)
    assert axis.n_rules == 8
    assert [solve(axis, obj, k, exact=True).cost for k in (1, 2, 3)] == [2, 1, 0]
    cost = lambda p: np_cost(p, labels=XOR_Y)  # noqa: E731
    assert [perm_bruteforce(axis, k, cost)[1] for k in (1, 2, 3)] == [8, 56, 288]
    hyper = hyperplane_rules(XOR_X)
    assert hyper.n_rules == 24
    assert [solve(hyper, obj, k, exact=True).cost for k in (1, 2, 3)] == [1, 0, 0]

    # the must-fail check: one orientation per pair (both defining points on one closed side) never
    # reaches 0; both closed orientations do at K = 2 (spec §3.11 (b))
    def only(keep):
        from dataclasses import replace

        return replace(hyper, pos=hyper.pos[keep], defs=hyper.defs[keep], kind=hyper.kind[keep],
                       feature=hyper.feature[keep], threshold=hyper.threshold[keep], planes=hyper.planes[keep],
                       assign=hyper.assign[keep])

    for single in (hyper.assign == 0, hyper.assign == 3):
        assert [solve(only(single), obj, k, exact=True).cost for k in (1, 2, 3)] == [1, 1, 1]
    both = only((hyper.assign == 0) | (hyper.assign == 3))
    assert both.n_rules == 12 and [solve(both, obj, k, exact=True).cost for k in (1, 2, 3)] == [1, 0, 0]


def test_t15_eight_points_three_classes():
    X = np.array([(6, 9), (12, 10), (8, 9), (9, 5), (4, 6), (8, 6), (3, 5), (10, 0)], dtype=float)
    y = np.array([2, 2, 0, 2, 2, 1, 1, 0])
    obj = make_objective(8, labels=y, n_classes=3)
    axis = axis_rules(X)
    assert [solve(axis, obj, k, exact=True).cost for k in (1, 2, 3)] == [3, 2, 2]
    cost = lambda p: np_cost(p, labels=y)  # noqa: E731
    assert [perm_bruteforce(axis, k, cost)[1] for k in (1, 2)] == [16, 240]
    hyper = hyperplane_rules(X)
    assert [solve(hyper, obj, k, exact=True).cost for k in (1, 2)] == [3, 2]


T13_X = np.array([(2, 1), (2, 3), (3, 7), (4, 5), (5, 0), (8, 2)], dtype=float)
T13_Y = np.array([1, 1, 1, 1, 0, 0])
T13_ABC = (0, 6, 7)  # a: x0 <= 2 (point 0), b: x1 <= 1 (point 0), c: x1 <= 3 (point 1)


def test_t16_and_t13_wrong_fusion():
    rules = axis_rules(T13_X)
    obj = make_objective(6, labels=T13_Y, n_classes=2)
    assert solve(rules, obj, 1, exact=True).cost == 0  # T16
    cost = lambda p: np_cost(p, labels=T13_Y)  # noqa: E731
    assert perm_bruteforce(rules, 3, cost, combos=[T13_ABC])[1] == 5
    assert [[kmat(rules, i, j) for j in T13_ABC] for i in T13_ABC] == [[0, 1, 1], [1, 0, -1], [1, 1, 0]]
    c, tree = sodt_tree(T13_ABC, rules, obj)
    assert c == 0 and tree.rule == 7 and tree.left.rule == 0 and tree.left.left.rule == 6
    work = K.make_work(3, 1)
    all_bits = pack_rows_mask(np.ones(6, dtype=bool))
    assert K.sodt_cost(np.array(T13_ABC), rules.pos, rules.defs, all_bits, obj, 0, -1, np.inf, work) == 0

    # variant (24): subtrees chosen on the whole data, then restricted: 1 error, whatever the ties
    n = 6
    full = np.ones(n, dtype=bool)

    def evaluate(tree, pts):
        if tree is None:
            return cost(pts)
        r, tl, tr = tree
        left = rules.left_mask(r)
        return evaluate(tl, pts & left) + evaluate(tr, pts & ~left)

    def wrong(S):
        if not S:
            return [None]
        out = []
        for i in S:
            others = [j for j in S if j != i]
            if any(kmat(rules, i, j) == 0 for j in others):
                continue
            plus = [j for j in others if kmat(rules, i, j) == 1]
            minus = [j for j in others if kmat(rules, i, j) == -1]
            for tl in _argmins(wrong(plus), full):
                for tr in _argmins(wrong(minus), full):
                    out.append((i, tl, tr))
        return out

    def _argmins(trees, pts):
        costs = [evaluate(t, pts) for t in trees]
        return [t for t, c in zip(trees, costs) if c == min(costs)]

    assert min(evaluate(t, full) for t in wrong(list(T13_ABC))) == 1


# ---------------------------------------------------------------------------
# the depth-2 axis-parallel path against the DP
# ---------------------------------------------------------------------------


def test_depth2_path_matches_the_dp():
    from arboretum.optimal.depth2 import applies, solve_depth2

    rng = np.random.default_rng(31)
    n_cases = 0
    for trial in range(30):
        n = 8 + trial % 5
        X, y = random_data(rng, n, d=2 + trial % 2, classes=2 + trial % 2, grid=4 if trial % 3 == 0 else None)
        w = rng.integers(1, 4, size=n).astype(float) if trial % 4 == 1 else None
        t = rng.normal(size=n)
        rules = axis_rules(X)
        objs = [make_objective(n, labels=y, n_classes=int(y.max()) + 1, weight=w),
                make_objective(n, target=t, weight=w)]
        for obj in objs:
            for k, depth, nmin in [(1, None, 1), (2, None, 1), (2, None, 3), (3, 2, 1), (3, 2, 2), (2, 1, 1),
                                   (3, 2, 0)]:
                assert applies("axis", k, False, depth)
                fast = solve_depth2(X, obj, k, nmin=nmin, depth=depth)
                dp = solve(rules, obj, k, nmin=nmin, depth=depth)
                assert fast.cost == pytest.approx(dp.cost, rel=1e-9, abs=1e-9), (trial, k, depth, nmin)
                if fast.tree is not None:
                    leaves = fast.tree.leaves()
                    assert sum(np_cost(leaf.points, labels=y if obj.mode != K.SQUARED else None, target=t, weight=w)
                               for leaf in leaves) == pytest.approx(fast.cost, rel=1e-9, abs=1e-9)
                    assert all(leaf.points.sum() >= nmin for leaf in leaves)
                    assert fast.tree.depth() <= (depth or 2) and len(fast.tree.rules()) <= k
                    # the tree is proper (every rule's defining point in its node's region): the DP over
                    # exactly its rules finds it, or one as good
                    used = fast.tree.rules()
                    if used:
                        c = sodt_tree(used, rules, obj, nmin=nmin, depth=depth)[0]
                        assert dp.cost - 1e-9 <= c <= fast.cost + 1e-9
                n_cases += 1
    assert n_cases >= 400


def test_depth2_estimator_agrees_with_the_generic_path():
    rng = np.random.default_rng(37)
    X = rng.normal(size=(40, 3))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    fast = OptimalTreeClassifier(max_splits=3, max_depth=2).fit(X, y)
    rules = axis_rules(X)
    obj = make_objective(40, labels=y, n_classes=2)
    assert fast.objective_ == solve(rules, obj, 3, depth=2, nmin=1).cost
    assert fast.objective_ == (fast.predict(X) != y).sum()


def test_single_hyperplane_path_matches_the_dp():
    from arboretum.optimal.hyper1 import solve_hyperplane1

    rng = np.random.default_rng(43)
    for trial in range(24):
        d = 1 + trial % 3
        n = 7 if d < 3 else 6
        X, y = random_data(rng, n, d=d, classes=2 + trial % 2, grid=3 if trial % 4 == 0 else None)
        if trial % 6 == 5:
            X[2] = X[0]  # duplicates
        w = rng.integers(1, 4, size=n).astype(float) if trial % 5 == 1 else None
        t = rng.normal(size=n)
        rules = hyperplane_rules(X)
        for obj in (make_objective(n, labels=y, n_classes=int(y.max()) + 1, weight=w),
                    make_objective(n, target=t, weight=w)):
            for exact, nmin in [(True, 0), (False, 1), (True, 2)]:
                got, rule1 = solve_hyperplane1(X, obj, exact=exact, nmin=nmin)
                want = solve(rules, obj, 1, exact=exact, nmin=nmin)
                assert got.cost == pytest.approx(want.cost, rel=1e-9, abs=1e-9), (trial, exact, nmin)
                if exact and np.isfinite(want.cost) and obj.mode != K.SQUARED:
                    assert got.cost == want.cost
                    # the same rule: first minimiser in (subset, assignment) order
                    r = want.combination[0]
                    assert tuple(rules.defs[r]) == tuple(rule1.defs[0]) and rules.assign[r] == rule1.assign[0]


def test_single_hyperplane_estimator_on_haberman_sized_data():
    rng = np.random.default_rng(47)
    X = rng.normal(size=(120, 2))
    y = (X[:, 0] + 0.7 * X[:, 1] + 0.4 * rng.normal(size=120) > 0).astype(int)
    clf = OptimalTreeClassifier(max_splits=1, split_type="hyperplane").fit(X, y)
    assert clf.optimal_ and clf.objective_ == (clf.predict(X) != y).sum()
    assert clf.objective_ <= OptimalTreeClassifier(max_splits=1).fit(X, y).objective_


# ---------------------------------------------------------------------------
# invariants of the fitted trees
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("split_type", ["axis", "hyperplane"])
def test_fitted_tree_partitions_the_data_as_the_rules_do(split_type):
    rng = np.random.default_rng(13)
    for trial in range(8):
        X, y = random_data(rng, 12, classes=3, grid=4 if trial % 2 else None)
        clf = OptimalTreeClassifier(max_splits=2, split_type=split_type, min_samples_leaf=0).fit(X, y)
        leaves = clf.apply(X)
        # every training point reaches exactly one leaf, and the leaves' counts are the data's
        counts = clf.tree_.counts[np.unique(leaves)]
        assert counts.sum() == len(y)
        for leaf in np.unique(leaves):
            np.testing.assert_array_equal(clf.tree_.counts[leaf], np.bincount(y[leaves == leaf], minlength=3))
        assert clf.objective_ == _min_error(y, leaves) == (clf.predict(X) != y).sum()


def _min_error(y, leaves):
    return sum(len(y[leaves == l]) - np.bincount(y[leaves == l]).max() for l in np.unique(leaves))


def test_hyperplane_routing_on_degenerate_data():
    """Collinear and duplicate points: the fitted tree routes every training point as the rule does."""
    X = np.array([[0, 0], [1, 1], [2, 2], [3, 3], [0, 1], [1, 0], [2, 2], [3, 0]], dtype=float)
    y = np.array([0, 1, 0, 1, 1, 0, 1, 0])
    clf = OptimalTreeClassifier(max_splits=2, split_type="hyperplane", min_samples_leaf=0).fit(X, y)
    assert clf.objective_ == _min_error(y, clf.apply(X))
    rules = hyperplane_rules(X)
    from arboretum.optimal.rules import routing_plane

    for r in range(rules.n_rules):
        coef, thr = routing_plane(rules, r, X)
        np.testing.assert_array_equal(X @ coef <= thr, rules.left_mask(r), err_msg=rules.describe(r))


def test_objective_non_increasing_in_k_and_never_worse_than_cart():
    from sklearn.tree import DecisionTreeClassifier

    rng = np.random.default_rng(17)
    for trial in range(6):
        X, y = random_data(rng, 30, d=3, classes=2)
        y = np.where(X[:, 0] + 0.5 * rng.normal(size=30) > X[:, 1], 1, 0)
        rules = axis_rules(X)
        obj = make_objective(30, labels=y, n_classes=2)
        exact = [solve(rules, obj, k, exact=True).cost for k in (1, 2, 3)]
        assert exact == sorted(exact, reverse=True)
        for k in (1, 2, 3):
            opt = OptimalTreeClassifier(max_splits=k).fit(X, y)
            cart = DecisionTreeClassifier(max_leaf_nodes=k + 1, random_state=0).fit(X, y)
            assert opt.objective_ <= (cart.predict(X) != y).sum()
            assert opt.objective_ == (opt.predict(X) != y).sum()
            assert opt.tree_.n_leaves <= k + 1


def test_regressor_objective_is_its_training_sse():
    rng = np.random.default_rng(19)
    X = rng.normal(size=(40, 2))
    y = np.where(X[:, 0] > 0.3, 2.0, -1.0) + 0.1 * rng.normal(size=40)
    reg = OptimalTreeRegressor(max_splits=2).fit(X, y * 1000)
    assert reg.objective_ == pytest.approx(((reg.predict(X) - 1000 * y) ** 2).sum(), rel=1e-9)
    assert reg.optimal_ and reg.stop_reason_ == "completed"


def test_integer_weights_are_repeated_rows():
    rng = np.random.default_rng(23)
    X, y = random_data(rng, 15, classes=2)
    w = rng.integers(1, 4, size=15)
    a = OptimalTreeClassifier(max_splits=2).fit(X, y, sample_weight=w)
    b = OptimalTreeClassifier(max_splits=2, min_samples_leaf=0).fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    assert a.objective_ == b.objective_


def test_max_depth_and_min_samples_leaf_hold():
    rng = np.random.default_rng(29)
    X, y = random_data(rng, 25, classes=2)
    clf = OptimalTreeClassifier(max_splits=3, max_depth=2, min_samples_leaf=4).fit(X, y)
    assert clf.tree_.max_depth <= 2
    leaves = clf.apply(X)
    assert np.bincount(leaves)[np.unique(leaves)].min() >= 4


# ---------------------------------------------------------------------------
# errors, limits, pre-flight
# ---------------------------------------------------------------------------


def test_bad_parameters_and_infeasible_requests():
    X, y = XOR_X, XOR_Y
    with pytest.raises(InvalidParameterError, match="split_type must be one of"):
        OptimalTreeClassifier(split_type="oblique").fit(X, y)
    with pytest.raises(InvalidParameterError, match="max_splits must be"):
        OptimalTreeClassifier(max_splits=-1).fit(X, y)
    with pytest.raises(ValueError, match="no tree with exactly 4 splits satisfies min_samples_leaf=1"):
        OptimalTreeClassifier(max_splits=4, exact_splits=True).fit(X, y)
    with pytest.raises(ValueError, match="at most 6 features"):
        OptimalTreeClassifier(split_type="hyperplane").fit(np.zeros((10, 7)), np.arange(10) % 2)


def test_preflight_refuses_absurd_requests_before_work():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 10))
    y = (X[:, 0] > 0).astype(int)
    est = OptimalTreeClassifier(max_splits=5)
    assert est.estimate_cost(X)["n_rules"] == 20000
    with pytest.raises(ValueError, match="combinations of rules .*lower max_splits"):
        est.fit(X, y)
    with pytest.raises(ValueError, match="GiB"):
        OptimalTreeClassifier(split_type="hyperplane", max_splits=2).fit(X[:, :3], y)


def test_time_limit_returns_the_best_tree_so_far():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(1500, 8))
    y = ((X[:, 0] > 0) ^ (X[:, 1] > 0) ^ (X[:, 2] > 0.5)).astype(int)
    y[rng.random(1500) < 0.2] ^= 1
    clf = OptimalTreeClassifier(max_splits=7, max_depth=3, time_limit=0.3)  # seconds for the axis search, even idle
    with pytest.warns(LimitWarning, match="stopped by time_limit=0.3"):
        clf.fit(X, y)
    assert clf.optimal_ is False and clf.stop_reason_ == "time_limit"
    assert clf.objective_ == (clf.predict(X) != y).sum()
    assert clf.fit_time_ < 0.3 * 1.1 + 0.5


def test_time_limit_stops_the_generation_of_plane_rules():
    """Generating the hyperplane rules of 300 points (~180,000 rules, seconds) watches the clock:
    a stopped generation gives an uncertified tree within the limit, with the trivial bound."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 2))
    y = (X[:, 0] + 0.3 * rng.normal(size=300) > 0).astype(int)
    clf = OptimalTreeClassifier(split_type="hyperplane", max_splits=2, time_limit=0.2)
    with pytest.warns(LimitWarning, match="stopped by time_limit=0.2"):
        clf.fit(X, y)
    assert clf.optimal_ is False and clf.stop_reason_ == "time_limit"
    assert clf.objective_ == (clf.predict(X) != y).sum() and clf.lower_bound_ <= clf.objective_
    assert clf.fit_time_ < 0.2 * 1.1 + 0.5


def test_completed_fit_is_optimal_and_silent():
    with warnings.catch_warnings():
        warnings.simplefilter("error", LimitWarning)
        clf = OptimalTreeClassifier(max_splits=2, split_type="hyperplane").fit(XOR_X, XOR_Y)
    assert clf.optimal_ and clf.objective_ == 0 and clf.n_rules_ == 24


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_a_stopped_search_fits_its_cart_fallback_on_a_draw_of_rows(monkeypatch, task):
    """After the time limit, the CART fallback is fitted on at most STOPPED_CART_ROWS rows and
    applied to every row: a proper tree (every leaf at least min_samples_leaf rows) whose
    objective is its cost on all the training rows."""
    import arboretum.optimal.estimator as est_mod
    from arboretum import OptimalTreeRegressor

    monkeypatch.setattr(est_mod, "STOPPED_CART_ROWS", 300)
    calls = []
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3000, 6))
    y = ((X[:, 0] > 0.3) ^ (X[:, 1] > -0.2)).astype(int)
    y[rng.random(3000) < 0.1] ^= 1
    Model = OptimalTreeClassifier if task == "classification" else OptimalTreeRegressor
    target = y if task == "classification" else y + 0.1 * X[:, 2]
    m = Model(max_splits=3, max_depth=2, min_samples_leaf=5, time_limit=1e-9)
    original = type(m)._greedy

    def spy(self, *args, **kw):
        calls.append(kw.get("max_rows"))
        return original(self, *args, **kw)

    monkeypatch.setattr(type(m), "_greedy", spy)
    with pytest.warns(LimitWarning):
        m.fit(X, target)
    assert calls == [300] and m.stop_reason_ == "time_limit"
    leaves = m.apply(X)
    assert np.bincount(leaves)[np.unique(leaves)].min() >= 5
    if task == "classification":
        assert m.objective_ == (m.predict(X) != y).sum()
    else:
        assert m.objective_ == pytest.approx(((m.predict(X) - target) ** 2).sum(), rel=1e-9)


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_lexsort_equals_numpy_lexsort(data):
    from arboretum.optimal.estimator import _lexsort

    n = data.draw(st.integers(0, 40))
    m = data.draw(st.integers(1, 4))
    values = st.sampled_from([0.0, -0.0, 1.0, 2.5, -3.0]) | st.floats(-5, 5, allow_nan=False)
    keys = [np.array(data.draw(st.lists(values, min_size=n, max_size=n)), dtype=np.float64) for _ in range(m)]
    np.testing.assert_array_equal(_lexsort(keys), np.lexsort(keys))
