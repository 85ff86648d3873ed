"""The exact axis-parallel path (optimal/axis.py, optimal/depth2.py) against the generic He & Little DP
over the axis rules and against an independent brute force over all axis-parallel trees.

The brute force enumerates every tree with at most K splits whose thresholds are data
values (any feature, any value, at any node: spec T19's unconstrained search), with the
leaf-size and depth constraints, and costs leaves in NumPy.
"""

from __future__ import annotations

import functools
import time
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arboretum import OptimalTreeClassifier, OptimalTreeRegressor
from arboretum.optimal import _kernels as K
from arboretum.optimal import axis as axis_module
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
    """The returned tree is consistent: its cost, leaf sizes, depth and split count, and every split
    lowers the cost below a leaf at its node (the search's tie rule keeps no useless split)."""
    leaves = sol.tree.leaves()
    w = np.ones(X.shape[0]) if weight is None else weight

    def subtree_cost(node):
        if node.rule < 0:
            return leaf_np(node.points, labels, target, w)
        here = subtree_cost(node.left) + subtree_cost(node.right)
        assert here < leaf_np(node.points, labels, target, w) - 1e-9
        return here

    subtree_cost(sol.tree)
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
    ref = brute_force(X, k, depth, nmin, labels, target, weight)
    for numba_level in (True, False):  # the level above depth-2 problems in numba (small problems) or Python
        with mock.patch.object(axis_module, "_LEVEL_IN_NUMBA", 10**9 if numba_level else 0):
            sol = solve_axis(X, obj, k, nmin=nmin, depth=depth)
        if not np.isfinite(ref):
            assert sol.tree is None and sol.optimal
            continue
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
    # (the trees may differ when several are optimal: the axis search returns the first it finds)


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
        ref = brute_force(X, 7, 3, 1, labels=y)
        for level in (10**9, 0):  # numba level, Python level
            with mock.patch.object(axis_module, "_LEVEL_IN_NUMBA", level):
                sol = solve_axis(X, obj, 7, nmin=1, depth=3)
            assert sol.cost == ref and sol.tree.depth() <= 3


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


def test_deadline_is_read_between_the_columns_of_the_presort(monkeypatch):
    # Sorting every column is the search's preparation (0.85 s for 20 columns of 500,000 rows here):
    # the clock is read before each column, and a search stopped there returns no tree (the
    # estimator then returns its CART fallback, on the 0/1 loss no worse than CART's).
    from arboretum.optimal import axis as axis_mod

    rng = np.random.default_rng(4)
    X = rng.normal(size=(400, 6))
    y = (X[:, 0] > 0).astype(int)
    obj = make_objective(400, labels=y, n_classes=2)
    sorted_columns = []
    real_argsort = np.argsort

    def counting_argsort(a, *args, **kw):
        sorted_columns.append(a.shape)
        return real_argsort(a, *args, **kw)

    clock = iter([0.0, 0.0, 10.0])  # past the deadline from the third reading on
    monkeypatch.setattr(axis_mod.np, "argsort", counting_argsort)
    monkeypatch.setattr(axis_mod.time, "perf_counter", lambda: next(clock, 10.0))
    sol = solve_axis(X, obj, 3, nmin=1, deadline=5.0)
    assert sol.tree is None and not sol.optimal and sol.n_examined == 0
    assert sorted_columns == [(400,), (400,)]  # two columns sorted, then the clock said stop
    monkeypatch.undo()
    clf = OptimalTreeClassifier(max_splits=3, time_limit=1e-9)
    with pytest.warns(Warning, match="time_limit"):
        clf.fit(X, y)
    assert not clf.optimal_ and clf.objective_ == (clf.predict(X) != y).sum() == 0


@pytest.mark.parametrize("n_features", [300, 2000])
def test_deadline_holds_on_wide_data(n_features):
    # 60 rows: the level above depth-2 problems runs in one numba call, whose features each cost
    # about 60 * 60 * n_features; at 300 features it took 280 s under time_limit=2 before the kernel
    # read the clock itself (and the depth-2 chunks were sized by m * m alone).
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, n_features))
    y = rng.integers(0, 2, 60)  # labels unrelated to X: no small tree is perfect, nothing ends early
    clf = OptimalTreeClassifier(time_limit=0.3)  # max_splits=3: depth 3, the numba level
    t0 = time.perf_counter()
    with pytest.warns(Warning, match="time_limit"):
        clf.fit(X, y)
    assert time.perf_counter() - t0 - clf.compile_time_ < 0.3 * 1.1 + 0.5 + 1.0  # + 1 s for a loaded CI
    assert not clf.optimal_ and clf.objective_ == (clf.predict(X) != y).sum() < 30


def test_deadline_holds_on_tall_data():
    # 50,000 rows: one root feature of a depth-2 side of 40,000 points takes about a second, so the
    # depth-2 kernel reads the clock between roots (it overshot time_limit=2 by 1 s before).
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50_000, 5))
    y = X[:, 0] + rng.normal(size=50_000)
    reg = OptimalTreeRegressor(time_limit=0.3)
    t0 = time.perf_counter()
    with pytest.warns(Warning, match="time_limit"):
        reg.fit(X, y)
    assert time.perf_counter() - t0 - reg.compile_time_ < 0.3 * 1.1 + 0.5 + 1.0
    assert not reg.optimal_ and reg.tree_.n_leaves >= 2


def test_level_kernel_stops_at_once_with_the_leaf_and_says_so():
    from arboretum.optimal.depth2 import level_solve

    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 5))
    y = (X[:, 0] > 0).astype(np.int64)
    obj = make_objective(40, labels=y, n_classes=2)
    search = axis_module._Search(X, obj, 1, None, None)
    order = np.argsort(X, axis=0, kind="stable").T
    ords = np.ascontiguousarray(order, dtype=np.int64)
    vals = np.ascontiguousarray(np.take_along_axis(X.T, order, axis=1))
    opts = np.array([(1, 1), (0, 2), (2, 0)], dtype=np.int64)
    runs = {}
    for seconds in (0.0, np.inf):
        state, tree, counts = np.array([np.inf, -1.0, np.inf]), np.full(17, -1.0), np.zeros(4, dtype=np.int64)
        done = level_solve(ords, vals, 40, *search._args(), 1, opts, True, True, search.gain, state, tree, counts,
                           seconds)
        runs[seconds] = done, state.copy()
    assert runs[0.0][0] is False and runs[0.0][1][1] == 0.0  # stopped before any root: the leaf (20 errors)
    assert runs[0.0][1][0] == min(y.sum(), 40 - y.sum())
    assert runs[np.inf][0] is True and runs[np.inf][1][0] < runs[0.0][1][0]


def test_pruning_skips_roots_and_keeps_the_optimum():
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    obj = make_objective(len(y), labels=y, n_classes=3)
    sol = solve_axis(X, obj, 3, nmin=1, depth=2)
    assert sol.cost == 6 and sol.optimal  # ConTree's depth-2 optimum on iris
    assert sol.n_examined < sol.n_total  # some root splits were skipped by the bounds


def side_optimum(X, mask, labels, target, weight, nmin, k=1, depth=1):
    """Brute-force optimum of the points ``mask`` with at most ``k`` splits and depth ``depth``."""
    if not mask.any():
        return 0.0
    sub = lambda a: None if a is None else a[mask]  # noqa: E731
    return brute_force(X[mask], k, depth, nmin, sub(labels), sub(target), sub(weight))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(problems())
def test_root_evaluation_and_its_bounds_against_brute_force(problem):
    """:func:`eval_root` gives each side's leaf and best single split (with and without the leaf
    size), and the bounds the bisection uses hold: along a feature the left side's optimum does not
    fall and the right one's does not grow (0-1 loss and squared error), and for the 0-1 loss each
    changes by at most the weight of the points that move."""
    from arboretum.optimal.depth2 import eval_root, sorted_columns

    X, labels, target, weight, _, _, nmin = problem
    n, d = X.shape
    w = np.ones(n) if weight is None else weight
    obj = objective(X, labels, target, weight)
    mode = 2 if obj.mode == K.SQUARED else 1
    n_stats = 3 if mode == 2 else obj.counts.shape[0]
    order = np.argsort(X, axis=0, kind="stable").T.copy()
    vals = np.take_along_axis(X.T, order, axis=1).copy()
    lab, ws, ys, brk = sorted_columns(order, vals, n, obj.label, obj.weight, obj.target)
    work, out, pos = np.zeros((2, 2 * n_stats)), np.empty(8), np.empty(4, dtype=np.int64)
    for d1 in range(d):
        rank = np.empty(n, dtype=np.int64)
        rank[order[d1]] = np.arange(n)
        prev = None
        for t in np.flatnonzero(brk[d1]):
            go = rank <= t
            eval_root(order, n, d1, t, rank, lab, ws, ys, brk, mode, n_stats, nmin, True, work, out, pos, 1e-9)
            ref = []
            for side in (go, ~go):
                relaxed = (side_optimum(X, side, labels, target, weight, 0, 0, 0),
                           side_optimum(X, side, labels, target, weight, 0))
                fixed = (side_optimum(X, side, labels, target, weight, nmin, 0, 0),
                         side_optimum(X, side, labels, target, weight, nmin))
                ref.append((relaxed, fixed))
            (rl, fl), (rr, fr) = ref
            assert out[4] == pytest.approx(rl[0], abs=1e-7) and out[5] == pytest.approx(rr[0], abs=1e-7)
            assert min(out[4], out[6]) == pytest.approx(rl[1], abs=1e-7)
            assert min(out[5], out[7]) == pytest.approx(rr[1], abs=1e-7)
            assert min(out[0], out[2]) == pytest.approx(fl[1], abs=1e-7)  # inf when infeasible on both
            assert min(out[1], out[3]) == pytest.approx(fr[1], abs=1e-7)
            here = (rl[1], rr[1], w[go].sum())
            if prev is not None:
                assert here[0] >= prev[0] - 1e-9 and here[1] <= prev[1] + 1e-9  # monotone
                if mode == 1:
                    moved = here[2] - prev[2]
                    assert prev[0] >= here[0] - moved - 1e-9 and here[1] >= prev[1] - moved - 1e-9
            prev = here


@pytest.mark.parametrize("k, depth", [(2, None), (3, 2), (3, None)])
def test_level_bounds_hold_for_deeper_sides(k, depth):
    """The bounds of the levels above depth 2, on brute-force optima of the sides of every root:
    the left side's optimum with ``k`` splits grows and the right one's falls as the threshold moves
    right, each by at most the moved weight (weighted 0-1 loss)."""
    rng = np.random.default_rng(k * 10 + (depth or 0))
    X = rng.integers(0, 4, size=(9, 2)).astype(float)
    y = rng.integers(0, 2, size=9)
    w = rng.integers(1, 3, size=9).astype(float)
    for j in range(2):
        prev = None
        for v in np.unique(X[:, j])[:-1]:
            go = X[:, j] <= v
            here = (side_optimum(X, go, y, None, w, 1, k, depth or 9),
                    side_optimum(X, ~go, y, None, w, 1, k, depth or 9), w[go].sum())
            if prev is not None:
                moved = here[2] - prev[2]
                assert prev[0] <= here[0] <= prev[0] + moved
                assert prev[1] - moved <= here[1] <= prev[1]
            prev = here


def test_depth2_bisection_matches_the_exhaustive_root_scan():
    """On a real data set the bisection (both bounds) finds the cost of scanning every root."""
    import math

    from sklearn.datasets import load_wine

    from arboretum.optimal.depth2 import depth2_features, depth2_prepare

    X, y = load_wine(return_X_y=True)
    obj = make_objective(len(y), labels=y, n_classes=3)
    order = np.argsort(X, axis=0, kind="stable").T.copy()
    vals = np.take_along_axis(X.T, order, axis=1).copy()
    m = len(y)
    lab, w, ys, brk, feats, first = depth2_prepare(order, vals, m, obj.label, obj.weight, obj.target, 1, 3, 1, 1e-9)
    for max_k in (2, 3):
        costs = []
        for lip, mono in ((False, False), (True, True)):
            state, rec, counts = np.array([math.inf, -1.0, math.inf]), np.full(6, -1), np.zeros(2, dtype=np.int64)
            assert depth2_features(order, m, lab, w, ys, brk, 1, 3, 1, max_k, feats, first, lip, mono, 1e-9, state,
                                   rec, counts, np.inf)
            costs.append((state[0], counts[0], counts[1]))
        assert costs[0][0] == costs[1][0] and costs[0][1] == costs[0][2] and costs[1][1] < costs[1][2] / 5
