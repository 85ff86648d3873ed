"""The exact axis-parallel path (optimal/axis.py, optimal/depth2.py) against the generic He & Little DP
over the axis rules and against an independent brute force over all axis-parallel trees.

The brute force enumerates every tree with at most K splits whose thresholds are data
values (any feature, any value, at any node: spec T19's unconstrained search), with the
leaf-size and depth constraints, and costs leaves in NumPy.
"""

from __future__ import annotations

import functools
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arboretum import OptimalTreeClassifier, OptimalTreeRegressor
from arboretum.optimal import _kernels as K
from arboretum.optimal.axis import applies, solve_axis
from arboretum.optimal.rules import axis_rules
from arboretum.optimal.solver import make_objective, solve


def leaf_np(pts, labels, target, weight):
    if not pts.any():
        return 0.0
    w = weight[pts]
    if labels is not None:
        return float(w.sum() - np.bincount(labels[pts], weights=w).max())
    t = target[pts]
    mean = np.dot(w, t) / w.sum()
    return float(np.dot(w, (t - mean) ** 2))


def brute_force(X, k, depth, nmin, labels=None, target=None, weight=None):
    """Least cost over all axis-parallel trees with <= k splits at data-value thresholds."""
    n, d = X.shape
    weight = np.ones(n) if weight is None else weight
    splits = [(j, v) for j in range(d) for v in np.unique(X[:, j])]

    @functools.lru_cache(maxsize=None)
    def best(key, k, dl):
        pts = np.frombuffer(key, dtype=bool)
        c = leaf_np(pts, labels, target, weight) if pts.sum() >= nmin else np.inf
        if k == 0 or dl == 0:
            return c
        for j, v in splits:
            go = X[:, j] <= v
            left, right = pts & go, pts & ~go
            if not left.any() or not right.any():
                continue
            for k1 in range(k):
                cl = best(left.tobytes(), k1, dl - 1)
                if cl < c:
                    c = min(c, cl + best(right.tobytes(), k - 1 - k1, dl - 1))
        return c

    return best(np.ones(n, dtype=bool).tobytes(), k, 99 if depth is None else depth)


def check_tree(sol, X, obj, labels, target, weight, k, depth, nmin):
    """The returned tree is consistent: its cost, leaf sizes, depth and split count."""
    leaves = sol.tree.leaves()
    w = np.ones(X.shape[0]) if weight is None else weight
    assert sum(leaf_np(leaf.points, labels, target, w) for leaf in leaves) == pytest.approx(sol.cost, abs=1e-7)
    assert all(leaf.points.sum() >= nmin for leaf in leaves)
    assert len(sol.tree.rules()) <= k and sol.tree.depth() <= (depth or k)
    assert np.logical_or.reduce([leaf.points for leaf in leaves]).all()
    assert sum(int(leaf.points.sum()) for leaf in leaves) == X.shape[0]


@st.composite
def problems(draw):
    n = draw(st.integers(4, 9))
    d = draw(st.integers(1, 3))
    grid = draw(st.sampled_from([2, 3, 5, None]))  # small grids make ties in X
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    X = rng.integers(0, grid, size=(n, d)).astype(float) if grid else rng.normal(size=(n, d)).round(2)
    task = draw(st.sampled_from(["clf", "clf", "wclf", "reg"]))
    classes = draw(st.integers(2, 4))
    labels = rng.integers(0, classes, size=n) if task != "reg" else None
    target = rng.normal(size=n).round(2) if task == "reg" else None
    weight = rng.integers(1, 4, size=n).astype(float) if task == "wclf" or (task == "reg" and seed % 2) else None
    k = draw(st.integers(1, 4))
    depth = draw(st.sampled_from([1, 2, 3, None]))
    nmin = draw(st.sampled_from([0, 1, 1, 3]))
    return X, labels, target, weight, k, depth, nmin


def objective(X, labels, target, weight):
    n = X.shape[0]
    if labels is not None:
        return make_objective(n, labels=labels, n_classes=int(labels.max()) + 1, weight=weight)
    return make_objective(n, target=target, weight=weight)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(problems())
def test_axis_search_matches_brute_force(problem):
    X, labels, target, weight, k, depth, nmin = problem
    obj = objective(X, labels, target, weight)
    sol = solve_axis(X, obj, k, nmin=nmin, depth=depth)
    ref = brute_force(X, k, depth, nmin, labels, target, weight)
    if not np.isfinite(ref):
        assert sol.tree is None and sol.optimal
        return
    assert sol.optimal and sol.cost == pytest.approx(ref, abs=1e-7)
    check_tree(sol, X, obj, labels, target, weight, k, depth, nmin)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(problems())
def test_axis_search_matches_the_generic_dp(problem):
    X, labels, target, weight, k, depth, nmin = problem
    k = min(k, 3)
    obj = objective(X, labels, target, weight)
    sol = solve_axis(X, obj, k, nmin=nmin, depth=depth)
    dp = solve(axis_rules(X), obj, k, nmin=nmin, depth=depth)
    assert sol.cost == pytest.approx(dp.cost, abs=1e-7)
    if sol.tree is not None and obj.mode != K.SQUARED and weight is None:
        # integer costs: the same number of splits wins a tie (ties go to fewer splits on both paths)
        assert len(sol.tree.rules()) == len(dp.tree.rules())


def test_larger_problems_match_the_dp_and_cart():
    from sklearn.tree import DecisionTreeClassifier

    rng = np.random.default_rng(5)
    for trial in range(2):
        X = rng.normal(size=(30, 3)).round(1)
        y = ((X[:, 0] > 0) ^ (X[:, 1] + 0.3 * rng.normal(size=30) > 0)).astype(int)
        obj = make_objective(30, labels=y, n_classes=2)
        rules = axis_rules(X)
        for k, depth in [(2, None), (3, 2), (3, None)]:
            sol = solve_axis(X, obj, k, nmin=1, depth=depth)
            assert sol.cost == solve(rules, obj, k, nmin=1, depth=depth).cost
        for k in (1, 2, 3, 4):
            clf = OptimalTreeClassifier(max_splits=k).fit(X, y)
            cart = DecisionTreeClassifier(max_leaf_nodes=k + 1, random_state=0).fit(X, y)
            assert clf.optimal_ and clf.objective_ <= (cart.predict(X) != y).sum()
            assert clf.objective_ == (clf.predict(X) != y).sum()


def test_depth3_seven_splits_matches_brute_force_on_tied_data():
    rng = np.random.default_rng(11)
    for trial in range(3):
        X = rng.integers(0, 3, size=(12, 2)).astype(float)
        y = rng.integers(0, 3, size=12)
        obj = make_objective(12, labels=y, n_classes=3)
        sol = solve_axis(X, obj, 7, nmin=1, depth=3)
        assert sol.cost == brute_force(X, 7, 3, 1, labels=y)
        assert sol.tree.depth() <= 3


def test_regressor_on_the_axis_path():
    rng = np.random.default_rng(13)
    X = rng.normal(size=(30, 2))
    y = np.where(X[:, 0] > 0, 3.0, 0.0) + np.where(X[:, 1] > 0.5, 1.0, 0.0) + 0.1 * rng.normal(size=30)
    reg = OptimalTreeRegressor(max_splits=3).fit(X, y)
    assert reg.optimal_
    assert reg.objective_ == pytest.approx(((reg.predict(X) - y) ** 2).sum(), rel=1e-9)
    ref = brute_force(X, 3, None, 1, target=(y - y.mean()) / y.std()) * y.var()
    assert reg.objective_ == pytest.approx(ref, rel=1e-7)


def test_applies_only_to_at_most_k_axis_requests():
    assert applies("axis", 3, False) and applies("axis", 7, False)
    assert not applies("axis", 3, True) and not applies("hyperplane", 1, False) and not applies("axis", 0, False)


def test_deadline_returns_a_valid_tree_not_certified():
    rng = np.random.default_rng(3)  # a request that takes seconds (not 0.3 s) even on an idle machine
    X = rng.normal(size=(1500, 8))
    y = ((X[:, 0] > 0) ^ (X[:, 1] > 0) ^ (X[:, 2] > 0.5)).astype(int)
    y[rng.random(1500) < 0.2] ^= 1
    obj = make_objective(1500, labels=y, n_classes=2)
    t0 = time.perf_counter()
    sol = solve_axis(X, obj, 7, nmin=1, depth=3, deadline=t0 + 0.3)
    assert time.perf_counter() - t0 < 0.3 + 2.0
    assert not sol.optimal and sol.tree is not None
    check_tree(sol, X, obj, y, None, None, 7, 3, 1)
    clf = OptimalTreeClassifier(max_splits=7, max_depth=3, time_limit=0.3)
    with pytest.warns(Warning, match="time_limit"):
        clf.fit(X, y)
    assert not clf.optimal_ and clf.objective_ == (clf.predict(X) != y).sum()


def test_pruning_skips_roots_and_keeps_the_optimum():
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    obj = make_objective(len(y), labels=y, n_classes=3)
    sol = solve_axis(X, obj, 3, nmin=1, depth=2)
    assert sol.cost == 6 and sol.optimal  # ConTree's depth-2 optimum on iris
    assert sol.n_examined < sol.n_total  # some root splits were skipped by the bounds
