"""The exact single-hyperplane path (:mod:`arboretum.optimal.hyper1`, issue 20 B1): the angular sweep
against the generic DP over :func:`.rules.hyperplane_rules` and a NumPy brute force over the same
rules, on tiny random data with ties, duplicates, collinear points, weights, regression and
``min_samples_leaf``; the spec's T14 and T20; the fitted tree's partition; deadlines and keywords.
"""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arboretum import OptimalTreeClassifier, OptimalTreeRegressor
from arboretum.optimal import _kernels as K
from arboretum.optimal import hyper1
from arboretum.optimal.hyper1 import solve_hyperplane1, subset_sides
from arboretum.optimal.rules import _cofactors, _side_values, axis_rules, hyperplane_rules
from arboretum.optimal.solver import make_objective, solve
from test_optimal import np_cost  # noqa: E402  (the brute-force leaf cost, shared)


def brute_force(rules, nmin, **kw):
    """min over the rules of the two leaves' costs (NumPy; no DP)."""
    best = np.inf
    for r in range(rules.n_rules):
        left = rules.left_mask(r)
        if left.sum() < nmin or (~left).sum() < nmin:
            continue
        best = min(best, np_cost(left, **kw) + np_cost(~left, **kw))
    return best


@st.composite
def tiny_data(draw):
    d = draw(st.integers(1, 4))
    n = draw(st.integers(d + 1, {1: 9, 2: 8, 3: 7, 4: 7}[d]))
    grid = draw(st.sampled_from([2, 3, 5, None]))  # small grids: ties, duplicates, collinear points
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    X = rng.integers(0, grid, size=(n, d)).astype(float) if grid else rng.normal(size=(n, d)).round(2)
    if draw(st.booleans()):
        X[-1] = X[0]  # a duplicate
    n_cls = draw(st.integers(2, 3))
    y = rng.integers(0, n_cls, size=n)
    w = rng.integers(1, 4, size=n).astype(float) if draw(st.booleans()) else None
    t = rng.normal(size=n).round(3)
    return X, y, n_cls, w, t


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=tiny_data(), nmin=st.integers(0, 3), exact=st.booleans())
def test_sweep_matches_the_dp_and_a_brute_force(data, nmin, exact):
    X, y, n_cls, w, t = data
    n = len(y)
    rules = hyperplane_rules(X)
    for obj, kw in ((make_objective(n, labels=y, n_classes=n_cls, weight=w), dict(labels=y, weight=w)),
                    (make_objective(n, target=t, weight=w), dict(target=t, weight=w))):
        got, rule = solve_hyperplane1(X, obj, exact=exact, nmin=nmin)
        want = solve(rules, obj, 1, exact=exact, nmin=nmin)
        assert got.optimal
        assert got.cost == pytest.approx(want.cost, rel=1e-9, abs=1e-9)
        if exact:
            assert got.cost == pytest.approx(brute_force(rules, nmin, **kw), rel=1e-9, abs=1e-9)
        if rule is None:
            continue
        left = rule.left_mask(0)
        # the tree's leaves are the rule's partition, and it is the partition the cost is of
        np.testing.assert_array_equal(got.tree.left.points, left)
        assert got.cost == pytest.approx(np_cost(left, **kw) + np_cost(~left, **kw), abs=1e-9)
        assert left.sum() >= nmin and (~left).sum() >= nmin
        if obj.mode != K.SQUARED and np.isfinite(want.cost) and exact:
            # ties: the first minimiser in (subset, assignment) order, as the DP
            r = want.combination[0]
            assert tuple(rules.defs[r]) == tuple(rule.defs[0]) and rules.assign[r] == rule.assign[0]
            np.testing.assert_array_equal(rules.left_mask(r), left)


@pytest.mark.parametrize("d", [5, 6])
def test_five_and_six_dimensions_match_the_dp(d):
    rng = np.random.default_rng(d)
    for trial in range(3 if d == 5 else 2):
        n = d + 2 if d == 5 else d + 1
        X = rng.integers(0, 3, size=(n, d)).astype(float) if trial == 0 else rng.normal(size=(n, d)).round(2)
        y = rng.integers(0, 2, size=n)
        rules = hyperplane_rules(X)
        for obj in (make_objective(n, labels=y, n_classes=2), make_objective(n, target=rng.normal(size=n))):
            got, _ = solve_hyperplane1(X, obj, exact=True, nmin=1)
            want = solve(rules, obj, 1, exact=True, nmin=1)
            assert got.cost == pytest.approx(want.cost, rel=1e-9, abs=1e-12)


def test_robust_sides_agree_with_the_rules_module():
    """The sweep's sign predicate and rules._side_values (orientation included) on integer and
    2-decimal data: identical signs, the same affinely dependent subsets."""
    rng = np.random.default_rng(5)
    masks = {}
    for trial in range(40):
        d = 1 + trial % 4
        n = 9
        X = rng.integers(0, 3, size=(n, d)).astype(float) if trial % 2 else rng.normal(size=(n, d)).round(2)
        Xt = np.ascontiguousarray(np.c_[X, np.ones(n)])
        if d not in masks:
            masks[d] = hyper1._mask_table(d + 1)
        for sub in itertools.combinations(range(n), d):
            s_rules = _side_values(X, X[list(sub)], sub)
            s_ours, ok = subset_sides(X, Xt, np.array(sub, dtype=np.int64), *masks[d], hyper1._gamma(d))
            assert ok == (s_rules is not None), (trial, sub)
            if ok:
                np.testing.assert_array_equal(s_ours, s_rules)


XOR_X = np.array([[0.0, 0.0], [1.0, 1.0], [0.0, 1.0], [1.0, 0.0]])
XOR_Y = np.array([0, 0, 1, 1])


def test_t14_xor():
    obj = make_objective(4, labels=XOR_Y, n_classes=2)
    assert solve_hyperplane1(XOR_X, obj, exact=True)[0].cost == 1.0
    clf = OptimalTreeClassifier(max_splits=1, split_type="hyperplane").fit(XOR_X, XOR_Y)
    assert clf.objective_ == 1.0 and clf.optimal_


def test_t20_hyperplane_never_worse_than_axis():
    rng = np.random.default_rng(20)
    strictly = 0
    for _ in range(30):
        X = rng.normal(size=(9, 2))
        y = rng.integers(0, 2, size=9)
        obj = make_objective(9, labels=y, n_classes=2)
        hyp = solve_hyperplane1(X, obj, exact=True)[0].cost
        axis = solve(axis_rules(X), obj, 1, exact=True).cost
        assert hyp <= axis
        strictly += hyp < axis
    assert strictly > 0


@pytest.mark.parametrize("d", [1, 2, 3, 4])
def test_fitted_tree_routes_the_training_points_as_the_solver(d, monkeypatch):
    """The predicted partition of the fitted tree is the solver's partition of the training points."""
    seen = []

    def spy(E, obj, **kw):
        sol, rule = solve_hyperplane1(E, obj, **kw)
        seen.append((E.copy(), sol, rule))
        return sol, rule

    monkeypatch.setattr(hyper1, "solve_hyperplane1", spy)
    rng = np.random.default_rng(100 + d)
    for trial in range(3):
        n = 30
        X = rng.integers(0, 4, size=(n, d)).astype(float) if trial == 0 else rng.normal(size=(n, d)).round(2)
        y = (X.sum(axis=1) + rng.normal(size=n) > 0.5 * d).astype(int)
        clf = OptimalTreeClassifier(max_splits=1, split_type="hyperplane", min_samples_leaf=0).fit(X, y)
        assert clf.optimal_ and clf.objective_ == (clf.predict(X) != y).sum()
        E, sol, rule = seen[-1]
        if rule is None:
            assert len(clf.tree_.children_left) == 1
            continue
        leaves = clf.apply(E)
        np.testing.assert_array_equal(leaves == leaves[np.flatnonzero(rule.left_mask(0))[0]], rule.left_mask(0))
        np.testing.assert_array_equal(sol.tree.left.points, rule.left_mask(0))


def test_regressor_single_hyperplane():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(40, 3))
    y = np.where(X[:, 0] - X[:, 2] > 0.2, 2.0, -1.0) + 0.1 * rng.normal(size=40)
    reg = OptimalTreeRegressor(max_splits=1, split_type="hyperplane").fit(X, y)
    assert reg.optimal_
    assert reg.objective_ == pytest.approx(float(((reg.predict(X) - y) ** 2).sum()), rel=1e-9)
    assert reg.objective_ <= OptimalTreeRegressor(max_splits=1).fit(X, y).objective_ + 1e-9


def test_deadline_returns_best_so_far():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 3))
    y = (X[:, 0] + X[:, 1] + rng.normal(size=400) > 0).astype(int)
    obj = make_objective(400, labels=y, n_classes=2)
    t0 = time.perf_counter()
    sol, _ = solve_hyperplane1(X, obj, exact=True, deadline=time.perf_counter() + 0.3)
    assert time.perf_counter() - t0 < 10.0
    assert not sol.optimal and sol.n_examined < sol.n_total
    # a deadline already past: nothing examined, the seed split (better than the leaf here)
    sol, rule = solve_hyperplane1(X, obj, deadline=time.perf_counter() - 1)
    assert not sol.optimal and sol.n_examined == 0 and sol.tree.rule == 0
    # past its deadline the seed tries one direction only, the least-squares one (the full seed: 82)
    late_seed = hyper1.incumbent_split(X, obj, 0, deadline=time.perf_counter() - 1)[0]
    assert isinstance(rule, hyper1.SeedPlane) and sol.cost == late_seed >= hyper1.incumbent_cost(X, obj, 0)
    assert sol.cost < min(y.sum(), 400 - y.sum())  # the leaf's errors


def test_rows_and_upper_bound_keywords():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(25, 2))
    y = rng.integers(0, 2, size=25)
    obj = make_objective(25, labels=y, n_classes=2)
    rows = np.flatnonzero(rng.random(25) < 0.6)
    sub_sol, sub_rule = solve_hyperplane1(X[rows], make_objective(len(rows), labels=y[rows], n_classes=2),
                                          exact=True)
    sol, rule = solve_hyperplane1(X, obj, exact=True, rows=rows)
    assert sol.cost == sub_sol.cost
    assert set(rule.defs[0]) <= set(rows) and not rule.left_mask(0)[np.setdiff1d(np.arange(25), rows)].any()
    np.testing.assert_array_equal(rule.left_mask(0)[rows], sub_rule.left_mask(0))
    best = solve_hyperplane1(X, obj, exact=True)[0].cost
    assert solve_hyperplane1(X, obj, exact=True, upper_bound=best)[0].tree is None
    assert solve_hyperplane1(X, obj, exact=True, upper_bound=best + 1)[0].cost == best


def test_incumbent_is_an_upper_bound():
    rng = np.random.default_rng(6)
    for d in (1, 2, 3):
        X = rng.normal(size=(30, d))
        y = (X[:, 0] > 0).astype(int) ^ (rng.random(30) < 0.2)
        obj = make_objective(30, labels=y, n_classes=2)
        assert hyper1.incumbent_cost(X, obj, 1) >= solve_hyperplane1(X, obj, exact=True, nmin=1)[0].cost


def test_estimator_uses_the_path_up_to_six_features():
    rng = np.random.default_rng(11)
    X = rng.normal(size=(14, 5))
    y = (X[:, 0] + X[:, 4] > 0).astype(int) ^ (np.arange(14) % 5 == 0)
    clf = OptimalTreeClassifier(max_splits=1, split_type="hyperplane").fit(X, y)
    assert clf.optimal_ and clf.objective_ == (clf.predict(X) != y).sum()
    assert clf.n_combinations_ == 2002  # C(14, 5) subsets examined, no rule stored


@pytest.mark.parametrize("seed", range(4))
def test_merged_duplicates_keep_the_optimum_and_the_first_minimiser(seed):
    # many repeated rows, of the same and of different classes: the sweep merges copies of a class
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 3, size=(5, 2)).astype(float)
    X = base[rng.integers(0, 5, size=9)]
    y = rng.integers(0, 2, size=9)
    rules = hyperplane_rules(X)
    obj = make_objective(9, labels=y, n_classes=2)
    got, rule = solve_hyperplane1(X, obj, exact=True)
    want = solve(rules, obj, 1, exact=True)
    assert got.cost == want.cost == brute_force(rules, 0, labels=y, weight=None)
    r = want.combination[0]
    assert tuple(rules.defs[r]) == tuple(rule.defs[0]) and rules.assign[r] == rule.assign[0]
    assert got.n_examined == got.n_total


@pytest.mark.parametrize("d", range(1, 7))
def test_plane_of_matches_the_rules_cofactors(d):
    rng = np.random.default_rng(d)
    X = np.r_[rng.normal(size=(6, d)), rng.integers(-3, 4, size=(6, d))]
    masks, start = hyper1._mask_table(d + 1)
    Xt = np.ascontiguousarray(np.c_[X, np.ones(len(X))])
    for sub in (np.arange(d), np.arange(6, 6 + d)):
        np.testing.assert_allclose(hyper1._plane_of(Xt, sub, masks, start), _cofactors(X[sub][None])[0],
                                   rtol=1e-12, atol=1e-12)


def _assignments_one_by_one(left0, right0, pt, sub, extras, lam, n_val, mode, nmin):
    """The reference of :func:`hyper1._assignments`: every assignment on its own, ``delta`` summed
    point by point (the definition in the module docstring)."""
    D = len(sub)
    best, best_a = np.inf, -1
    for a in range(1 << D):
        vl, vr = left0.copy(), right0.copy()
        for k in range(D):
            if (a >> (D - 1 - k)) & 1:
                vr += pt[sub[k]]
            else:
                vl += pt[sub[k]]
        for t, i in enumerate(extras):
            val = 0.0
            for k in range(D):
                val += lam[t, k] * (1.0 if (a >> (D - 1 - k)) & 1 else -1.0)
            if abs(val) < 1e-9 or val <= 0.0:
                vl += pt[i]
            else:
                vr += pt[i]
        if vl[-1] < nmin or vr[-1] < nmin:
            continue
        c = hyper1._leaf(vl, n_val, mode) + hyper1._leaf(vr, n_val, mode)
        if c < best:
            best, best_a = c, a
    return best, best_a


@pytest.mark.parametrize("d", [2, 3, 4, 5])
def test_all_assignments_at_once_match_one_by_one(d):
    """Planes holding many data points (integer grids, where the enumeration is most of the work):
    the barycentric map and the all-assignments enumeration give the coordinates of a direct
    least-squares solve and the same (cost, first assignment) as enumerating one by one, with
    fractional weights (every side summed in the same order: the same bits)."""
    rng = np.random.default_rng(d)
    for trial in range(30):
        n = 14
        X = rng.integers(0, 3, size=(n, d)).astype(float)
        X[:, -1] = 1.0  # every point on the plane x_d = 1, most of them extra on-plane points
        sub = np.sort(rng.choice(n, d, replace=False)).astype(np.int64)
        P = X[sub]
        if np.linalg.matrix_rank(P[1:, :-1] - P[0, :-1]) < d - 1:
            continue
        extras = np.array([i for i in range(n) if i not in sub], dtype=np.int64)
        lam = np.empty((len(extras), d))
        B, E = np.empty((d, d)), np.empty((d, d))
        ok = hyper1._bary_factor(X, sub, np.empty((d, d)), E, B, np.empty(d))
        assert ok
        for t, z in enumerate(extras):
            hyper1._barycentric(X, sub, z, lam, t, B, ok, np.empty(d))
            want = np.linalg.lstsq((P[1:] - P[0]).T, X[z] - P[0], rcond=None)[0]
            np.testing.assert_allclose(lam[t, 1:], want, atol=1e-9)
            np.testing.assert_allclose(lam[t] @ P, X[z], atol=1e-9)
        n_val = 2
        pt = np.zeros((n, n_val + 1))
        pt[np.arange(n), rng.integers(0, n_val, size=n)] = rng.random(n) + 0.5
        pt[:, -1] = 1.0
        left0, right0 = rng.random(n_val + 1), rng.random(n_val + 1)
        w, yt = rng.random(n) + 0.5, rng.normal(size=n)
        reg = np.ascontiguousarray(np.c_[w, w * yt, w * yt * yt, np.ones(n)])  # (sw, swy, swyy, count)
        reg0, reg1 = np.array([1.5, 0.3, 2.0, 1.0]), np.array([0.7, -0.2, 1.1, 1.0])
        for nmin in (0, 6):
            for mode, stats in ((1, pt), (2, reg)):
                S = stats.shape[1]
                got = hyper1._assignments(left0 if mode == 1 else reg0, right0 if mode == 1 else reg1, stats,
                                          sub, extras, lam, len(extras), n_val, mode, nmin, np.empty((S, 1 << d)),
                                          np.empty((S, 1 << d)), hyper1._sign_table(d), np.empty(1 << d),
                                          np.empty(1 << d), np.empty(1 << d))
                want = _assignments_one_by_one(left0 if mode == 1 else reg0, right0 if mode == 1 else reg1,
                                               stats, sub, extras, lam, n_val, mode, nmin)
                assert got == want


def _hinge_bound_of(X, hinge, pt, n_val, mode):
    """:func:`hyper1._hinge_bound` of one hinge, with the sweep's projection and point classes."""
    N, D = X.shape
    Xt = np.ascontiguousarray(np.c_[X, np.ones(N)])
    masks, start = hyper1._mask_table(D + 1)
    W, Wa = np.zeros((D + 1, 1 << (D + 1))), np.zeros((D + 1, 1 << (D + 1)))
    W[0, 0] = Wa[0, 0] = 1.0
    hyper1._hinge_wedge(Xt, np.asarray(hinge, dtype=np.int64), W, Wa, masks, start, 0)
    R, Ra = np.zeros((2, D + 1)), np.zeros((2, D + 1))
    if hyper1._frame(W, Wa, D - 1, D + 1, hyper1._gamma(D), R, Ra) == 0:
        return None  # affinely dependent hinge
    u, e = np.empty((N, 2)), np.empty((N, 2))
    hyper1._project(Xt, R, Ra, hyper1._gamma(D), u, e)
    nrm = np.hypot(u[:, 0], u[:, 1])
    special = (nrm == 0) | (e.sum(axis=1) > hyper1._SPECIAL * nrm)
    ang = np.arctan2(u[:, 1], u[:, 0])
    reg, spec = np.flatnonzero(~special), np.flatnonzero(special)
    P = np.empty((2 * hyper1._BUCKETS + 1, pt.shape[1]))
    return hyper1._hinge_bound(ang, reg, len(reg), spec, len(spec), pt, n_val, mode, P, -np.inf)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=tiny_data(), nmin=st.integers(0, 2))
def test_hinge_bound_is_admissible(data, nmin):
    """The sector bound of a hinge (:func:`hyper1._hinge_bound`) is at most the cost of every rule
    whose defining points hold the hinge, by a brute force over the rules (every assignment)."""
    X, y, n_cls, w, t = data
    n, d = X.shape
    if d < 2:
        return
    rules = hyperplane_rules(X)
    for obj, kw in ((make_objective(n, labels=y, n_classes=n_cls, weight=w), dict(labels=y, weight=w)),
                    (make_objective(n, target=t, weight=w), dict(target=t, weight=w))):
        mode = 2 if obj.mode == K.SQUARED else 1
        pt, n_val = hyper1._point_stats(obj, mode)
        for hinge in itertools.combinations(range(n), d - 1):
            bound = _hinge_bound_of(X, hinge, pt, n_val, mode)
            if bound is None:
                continue
            for r in range(rules.n_rules):
                if not set(hinge) <= set(rules.defs[r].tolist()):
                    continue
                left = rules.left_mask(r)
                if left.sum() < nmin or (~left).sum() < nmin:
                    continue
                assert bound <= np_cost(left, **kw) + np_cost(~left, **kw) + 1e-9


@pytest.mark.parametrize("split_type, d", [("hyperplane", 3), ("quadratic", 2)])
def test_a_search_stopped_at_once_returns_its_seed_split_not_a_leaf(split_type, d):
    """Stopped before any plane as good as its seed, the single-plane search returns the seed split
    itself (a real tree of that cost that predicts the same partition), never the worse leaf."""
    import warnings

    from arboretum.exceptions import LimitWarning
    from arboretum.optimal.solver import make_objective
    from arboretum.tree import quadratic_features

    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, d))
    y = (X @ np.arange(1.0, d + 1) + 0.3 * rng.normal(size=3000) > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("error", LimitWarning)
        with pytest.raises(LimitWarning):
            OptimalTreeClassifier(max_splits=1, split_type=split_type, time_limit=1e-9).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LimitWarning)
        clf = OptimalTreeClassifier(max_splits=1, split_type=split_type, time_limit=1e-9).fit(X, y)
    assert not clf.optimal_ and clf.tree_.n_leaves == 2
    Z = X if split_type == "hyperplane" else quadratic_features(X)
    obj = make_objective(len(y), labels=y, n_classes=2)
    # at once past its deadline, the seed is its first (least-squares) direction's split
    seed = hyper1.incumbent_split(Z, obj, 1, deadline=0.0)[0]
    assert clf.objective_ == seed < min(y.sum(), len(y) - y.sum())
    assert seed >= hyper1.incumbent_split(Z, obj, 1)[0]
    assert (clf.predict(X) != y).sum() == clf.objective_
