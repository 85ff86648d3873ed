"""The generic He & Little path beyond the paper: admissible bounds, the K = 2 path, the greedy
incumbent, anytime lower bounds, n_jobs, memory_limit; and the spec's generator tests (T1-T7b,
T9, T10, T17, T20-T24) not in test_optimal.py.

Every bound is checked against brute force, and the bounded search against the plain
enumeration: the same cost *and the same combination* (the first optimum in lexicographic
order), ties included.
"""

from __future__ import annotations

import itertools
import math
import time
import warnings

import numpy as np
import pytest

from arboretum import LimitWarning, OptimalTreeClassifier, OptimalTreeRegressor
from arboretum._numba import pack_rows_mask
from arboretum.optimal import _kernels as K
from arboretum.optimal import bounds as B
from arboretum.optimal.rules import axis_rules, hyperplane_rules
from arboretum.optimal.solver import combination_at, kmat, make_objective, solve, sodt_tree
from optimal_generators import (
    all_perms_valid,
    bsp_size,
    budget_best,
    catalan,
    count_trees,
    gen_trees,
    level_order,
    mcmp_trees,
    sodt_calls,
    sodt_memo,
    splits,
    splits_mcmp,
    tree_partition,
)


from test_optimal import np_cost  # noqa: E402  (the brute-force leaf cost, shared)


def data(rng, n, d=2, classes=2, grid=None):
    X = rng.integers(0, grid, size=(n, d)).astype(float) if grid else rng.normal(size=(n, d)).round(2)
    return X, rng.integers(0, classes, size=n)


def objectives(rng, n, y):
    w = rng.integers(1, 4, size=n).astype(float)
    t = np.round(rng.normal(size=n), 1)
    return [make_objective(n, labels=y, n_classes=int(y.max()) + 1),
            make_objective(n, labels=y, n_classes=int(y.max()) + 1, weight=w),
            make_objective(n, target=t, weight=w)]


# ---------------------------------------------------------------------------
# bounded search == plain enumeration (same first optimum), any n_jobs
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("family", ["axis", "hyperplane"])
def test_bounds_keep_the_first_optimum_of_the_plain_enumeration(family):
    rng = np.random.default_rng(101 if family == "axis" else 102)
    n_cases = 0
    for trial in range(8):
        n = 8 if family == "axis" else 6
        X, y = data(rng, n, classes=2 + trial % 2, grid=3 if trial % 2 == 0 else None)  # ties on the grid
        rules = axis_rules(X) if family == "axis" else hyperplane_rules(X)
        for obj in objectives(rng, n, y):
            for k, exact, nmin, depth in [(2, False, 0, None), (2, True, 1, None), (3, False, 1, None),
                                          (3, True, 0, 2), (3, False, 0, 2)]:
                plain = solve(rules, obj, k, exact=exact, nmin=nmin, depth=depth, bounds=False)
                fast = solve(rules, obj, k, exact=exact, nmin=nmin, depth=depth)
                assert (fast.cost, fast.combination) == (plain.cost, plain.combination), (trial, k, exact)
                assert fast.n_total == fast.n_examined and 0 <= fast.n_pruned <= fast.n_examined
                if trial < 2:
                    par = solve(rules, obj, k, exact=exact, nmin=nmin, depth=depth, n_jobs=2)
                    assert (par.cost, par.combination) == (plain.cost, plain.combination)
                n_cases += 1
    assert n_cases >= 100


def test_bounds_prune_and_agree_with_brute_force_on_t15():
    X = np.array([(6, 9), (12, 10), (8, 9), (9, 5), (4, 6), (8, 6), (3, 5), (10, 0)], dtype=float)
    y = np.array([2, 2, 0, 2, 2, 1, 1, 0])
    obj = make_objective(8, labels=y, n_classes=3)
    axis = axis_rules(X)
    sols = [solve(axis, obj, k, exact=True) for k in (1, 2, 3)]
    assert [s.cost for s in sols] == [3, 2, 2]
    assert sols[2].n_pruned > 0
    assert solve(hyperplane_rules(X), obj, 2, exact=True).cost == 2


def test_removal_bound_and_h1_table_against_brute_force():
    """F3 with k = 1 and the h(a^s) table of the K = 2 path: lower bounds of the best single split
    of every side (exact where scored)."""
    rng = np.random.default_rng(7)
    for trial in range(3):
        X, y = data(rng, 7, classes=2, grid=4 if trial % 2 else None)
        for rules in (axis_rules(X), hyperplane_rules(X)):
            M = rules.n_rules
            obj = make_objective(7, labels=y, n_classes=2)
            cost = lambda p: np_cost(p, labels=y)  # noqa: E731
            all_bits = pack_rows_mask(np.ones(7, dtype=bool))
            f, w = B.side_costs(rules, obj, all_bits, 0)
            opt1 = min(cost(np.ones(7, bool)), min(f.sum(axis=1)))
            res = B.solve_pairs(rules, obj, f, w, nmin=0, opt1=opt1, ub=math.inf)
            for a in range(M):
                la = rules.left_mask(a)
                for s, side in enumerate((la, ~la)):
                    true_h = min((cost(side & rules.left_mask(b)) + cost(side & ~rules.left_mask(b))
                                  for b in range(M) if b != a and side[[p for p in rules.defs[b] if p >= 0]].all()),
                                 default=math.inf)
                    assert B.removal_bound(opt1, np.array([(~side).sum()], float), obj, 0.0)[0] <= true_h
                    assert res.h1[a, s] <= true_h + 1e-12
            want = min(sodt_tree(c, rules, obj)[0] for c in itertools.combinations(range(M), 2))
            assert res.cost == want and res.finished


def test_root_bounds_are_admissible():
    """rb[a, s, k] never exceeds the best subtree with k rules on side s of a, for every root of
    every 3-combination (the DP's subtrees, solved on the restricted points)."""
    rng = np.random.default_rng(9)
    for trial in range(3):
        X, y = data(rng, 6, classes=2, grid=4 if trial else None)
        rules = axis_rules(X)
        obj = make_objective(6, labels=y, n_classes=2)
        sol = solve(rules, obj, 2)  # builds h1 and opts
        f, w = B.side_costs(rules, obj, pack_rows_mask(np.ones(6, bool)), 0)
        rb = B.root_bounds(f, w, sol._h1, sol._opts, 3, obj, 0.0)
        for comb in itertools.combinations(range(rules.n_rules), 3):
            for plus, a, minus in splits(comb, {i: {j: kmat(rules, i, j) for j in comb} for i in comb}):
                la = rules.left_mask(a)
                cl = sodt_tree(plus, rules, obj, points=la)[0]
                cr = sodt_tree(minus, rules, obj, points=~la)[0]
                assert rb[a, 0, len(plus)] <= cl + 1e-12 and rb[a, 1, len(minus)] <= cr + 1e-12


def test_greedy_incumbent_is_a_proper_tree_of_the_family():
    rng = np.random.default_rng(13)
    for trial in range(4):
        X, y = data(rng, 8, classes=3)
        for rules in (axis_rules(X), hyperplane_rules(X)):
            obj = make_objective(8, labels=y, n_classes=3)
            for exact in (False, True):
                g = B.greedy_tree(rules, obj, 3, exact=exact, nmin=1, depth=None)
                assert g is not None
                used = g.tree.rules()
                assert len(set(used)) == len(used) and (len(used) == 3 if exact else len(used) <= 3)
                assert g.cost == sum(np_cost(leaf.points, labels=y) for leaf in g.tree.leaves())
                # proper: the DP over exactly its rules finds it or better
                assert sodt_tree(used, rules, obj, nmin=1)[0] <= g.cost
                assert solve(rules, obj, 3, exact=exact, nmin=1).cost <= g.cost


def test_k2_path_on_hyperplanes_matches_plain_enumeration():
    rng = np.random.default_rng(17)
    for trial in range(3):
        X = rng.uniform(-1, 1, size=(14, 2)).round(1)  # collinear triples and duplicates occur
        y = ((X[:, 0] + X[:, 1] > 0) ^ (X[:, 0] > 0.4)).astype(int)
        rules = hyperplane_rules(X)
        obj = make_objective(14, labels=y, n_classes=2)
        for exact in (False, True):
            plain = solve(rules, obj, 2, exact=exact, bounds=False)
            fast = solve(rules, obj, 2, exact=exact)
            assert (fast.cost, fast.combination) == (plain.cost, plain.combination)
            assert fast.n_pruned > 0


# ---------------------------------------------------------------------------
# anytime: a stopped search returns its best tree and a valid lower bound
# ---------------------------------------------------------------------------


def test_stopped_search_has_a_valid_lower_bound():
    rng = np.random.default_rng(19)
    X = rng.uniform(-1, 1, size=(9, 2)).round(2)
    y = ((X[:, 0] > 0.1) ^ (X[:, 1] > -0.2)).astype(int)
    y[:3] = 1 - y[:3]
    rules = hyperplane_rules(X)
    obj = make_objective(9, labels=y, n_classes=2)
    full = solve(rules, obj, 3)
    assert full.optimal and full.lower_bound == full.cost
    for delay in (0.0, 0.01, 0.03, 0.1):
        part = solve(rules, obj, 3, deadline=time.perf_counter() + delay)
        if part.optimal:
            continue
        assert part.lower_bound <= full.cost
        if part.tree is not None:
            assert part.cost >= full.cost >= part.lower_bound


def test_estimator_anytime_attributes():
    rng = np.random.default_rng(23)
    X = rng.uniform(-1, 1, size=(60, 2)).round(2)
    y = ((X[:, 0] > 0.1) ^ (X[:, 1] > -0.2)).astype(int)
    clf = OptimalTreeClassifier(max_splits=3, split_type="hyperplane", time_limit=0.5)
    with pytest.warns(LimitWarning):
        clf.fit(X, y)
    assert clf.optimal_ is False and 0 <= clf.lower_bound_ <= clf.objective_
    assert clf.objective_ == (clf.predict(X) != y).sum()
    done = OptimalTreeClassifier(max_splits=2).fit(X, y)
    assert done.optimal_ and done.lower_bound_ == done.objective_ and done.n_pruned_ >= 0


# ---------------------------------------------------------------------------
# n_jobs and memory_limit
# ---------------------------------------------------------------------------


def test_n_jobs_and_dask_backend_give_the_same_tree():
    joblib = pytest.importorskip("joblib")
    distributed = pytest.importorskip("distributed")
    rng = np.random.default_rng(29)
    X = rng.normal(size=(14, 2)).round(1)
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    kw = dict(max_splits=3, split_type="hyperplane", min_samples_leaf=1)
    one = OptimalTreeClassifier(**kw, n_jobs=1).fit(X, y)
    two = OptimalTreeClassifier(**kw, n_jobs=2).fit(X, y)
    with distributed.Client(processes=False, n_workers=2, threads_per_worker=1, dashboard_address=None):
        with joblib.parallel_backend("dask"):
            dk = OptimalTreeClassifier(**kw, n_jobs=-1).fit(X, y)
    for other in (two, dk):
        assert other.objective_ == one.objective_
        assert other.tree_.export_text() == one.tree_.export_text()


def test_memory_limit_refuses_rules_and_drops_tables():
    rng = np.random.default_rng(31)
    X = rng.normal(size=(22, 2)).round(2)
    y = (X[:, 0] > X[:, 1]).astype(int)
    with pytest.raises(ValueError, match="more than memory_limit=0.01 MiB; raise memory_limit"):
        OptimalTreeClassifier(max_splits=2, split_type="hyperplane", memory_limit=0.01).fit(X, y)
    rules = hyperplane_rules(X)
    need = (rules.pos.nbytes + rules.defs.nbytes + rules.planes.nbytes + rules.kind.nbytes + rules.feature.nbytes
            + rules.threshold.nbytes + rules.assign.nbytes) / 2**20
    tight = OptimalTreeClassifier(max_splits=2, split_type="hyperplane", memory_limit=need * 1.01).fit(X, y)
    roomy = OptimalTreeClassifier(max_splits=2, split_type="hyperplane", memory_limit=need * 10).fit(X, y)
    assert tight.optimal_ and tight.n_pruned_ == 0 and roomy.n_pruned_ > 0
    assert tight.objective_ == roomy.objective_
    assert tight.tree_.export_text() == roomy.tree_.export_text()


def test_regressor_bounded_equals_plain():
    rng = np.random.default_rng(37)
    X = rng.normal(size=(9, 2)).round(1)
    t = np.round(rng.normal(size=9), 1)
    rules = axis_rules(X)
    obj = make_objective(9, target=t)
    for k in (2, 3):
        a, b = solve(rules, obj, k, bounds=False), solve(rules, obj, k)
        assert (a.cost, a.combination) == (b.cost, b.combination)
    reg = OptimalTreeRegressor(max_splits=2, split_type="hyperplane").fit(X, t)
    assert reg.optimal_ and reg.lower_bound_ == reg.objective_


# ---------------------------------------------------------------------------
# the spec's generator tests (§6)
# ---------------------------------------------------------------------------


def test_t1_combinations_and_permutations():
    for M, k in [(5, 2), (6, 3), (7, 4)]:
        combs = [tuple(combination_at(r, M, k)) for r in range(math.comb(M, k))]
        assert combs == list(itertools.combinations(range(M), k))
        assert len(list(itertools.permutations(range(M), k))) == math.factorial(k) * math.comb(M, k)


def _random_kmat(rng, k, zeros=True):
    vals = [-1, 0, 1] if zeros else [-1, 1]
    km = rng.choice(vals, size=(k, k))
    np.fill_diagonal(km, 0)
    return km.tolist()


def test_t2_t3_characterization_and_lemma_3_2():
    rng = np.random.default_rng(41)
    for trial in range(300):
        k = 1 + trial % 5
        km = _random_kmat(rng, k, zeros=trial % 3 != 0)
        S = tuple(range(k))
        trees = gen_trees(S, km)
        valid = all_perms_valid(S, km)
        assert len(trees) == count_trees(S, km) == len(valid) <= math.factorial(k)  # T2, T3
        orders = [tuple(level_order(t)) for t in trees]
        assert len(set(orders)) == len(orders) and set(orders) == set(valid)  # injective, onto the valid
    chain = lambda k: [[0 if i == j else 1 for j in range(k)] for i in range(k)]  # noqa: E731
    assert [count_trees(tuple(range(k)), chain(k)) for k in range(1, 8)] == [1, 2, 6, 24, 120, 720, 5040]


def test_t4_chain_call_count():
    chain = lambda k: [[0 if i == j else 1 for j in range(k)] for i in range(k)]  # noqa: E731
    assert [sodt_calls(tuple(range(k)), chain(k)) for k in range(1, 7)] == [3, 9, 31, 129, 651, 3913]


def test_t5_root_feasibility_fig1_and_t6_splits_partition():
    km = [[0, 1, 0, -1], [1, 0, 1, 1], [-1, -1, 0, 1], [1, 1, -1, 0]]
    S = (0, 1, 2, 3)
    assert {r for _, r, _ in splits(S, km)} == {1, 2, 3}
    rng = np.random.default_rng(43)
    for trial in range(100):
        km = _random_kmat(rng, 5)
        S = tuple(range(5))
        for plus, r, minus in splits(S, km):
            assert set(plus) | {r} | set(minus) == set(S) and len(plus) + 1 + len(minus) == 5
            assert set(plus) == {j for j in S if km[r][j] == 1}


def test_t7_labelled_trees_are_distinct_and_t7b_no_root():
    X = np.array([(0, 0), (1, 2), (2, 1), (3, 3)], dtype=float)
    rules = axis_rules(X)
    pairs = [(a, b) for a, b in itertools.combinations(range(rules.n_rules), 2)
             if kmat(rules, a, b) == kmat(rules, b, a) == 1]
    assert pairs
    differ = 0
    for a, b in pairs:
        km = {i: {j: kmat(rules, i, j) for j in (a, b)} for i in (a, b)}
        trees = gen_trees((a, b), km)
        assert len(trees) == 2
        left = {r: rules.left_mask(r) for r in (a, b)}
        parts = [set(tree_partition(t, left, np.ones(4, bool))) for t in trees]
        differ += parts[0] != parts[1]
    assert differ > 0  # labelled trees over the same rules are different partitions (spec §2.5)
    km0 = [[0, 0, 0], [0, 0, 0], [0, 0, 0]]
    assert gen_trees((0, 1, 2), km0) == [] and count_trees((0, 1, 2), km0) == 0
    # the kernel: a combination with no possible root is INF, not a crash (hyperplanes crossing)
    Xh = np.array([(0, 0), (2, 2), (0, 2), (2, 0)], dtype=float)
    hr = hyperplane_rules(Xh)
    obj = make_objective(4, labels=np.array([0, 0, 1, 1]), n_classes=2)
    cross = [r for r in range(hr.n_rules) if set(hr.defs[r]) in ({0, 1}, {2, 3})]
    pair = (cross[0], cross[-1])
    assert kmat(hr, *pair) == 0 and kmat(hr, pair[1], pair[0]) == 0
    work = K.make_work(2, 1)
    c = K.sodt_cost(np.array(pair), hr.pos, hr.defs, pack_rows_mask(np.ones(4, bool)), obj, 0, -1, np.inf, work)
    assert c == np.inf


def test_t9_memoized_sodt_and_t10_budget_recursion():
    rng = np.random.default_rng(47)
    for trial in range(5):
        X, y = data(rng, 6, classes=2, grid=3 if trial % 2 else None)
        rules = axis_rules(X) if trial % 2 else hyperplane_rules(X[:5])
        n = rules.n_samples
        yy = y[:n]
        obj = make_objective(n, labels=yy, n_classes=2)
        cost = lambda p: np_cost(p, labels=yy)  # noqa: E731
        for comb in list(itertools.combinations(range(rules.n_rules), 3))[:: 7]:
            km = {i: {j: kmat(rules, i, j) for j in comb} for i in comb}
            assert sodt_memo(comb, rules, cost, km, np.ones(n, bool)) == sodt_tree(comb, rules, obj)[0]  # T9
        for k in (1, 2, 3):
            assert budget_best(rules, cost, k) == solve(rules, obj, k, exact=True).cost  # T10


def test_t17_monotone_in_k_and_t20_oblique_at_least_axis():
    rng = np.random.default_rng(53)
    for trial in range(4):
        X = rng.normal(size=(8, 2)).round(3)  # general position
        y = rng.integers(0, 2, size=8)
        obj = make_objective(8, labels=y, n_classes=2)
        axis = [solve(axis_rules(X), obj, k, exact=True).cost for k in (1, 2, 3)]
        assert axis == sorted(axis, reverse=True)  # T17
        hyper = [solve(hyperplane_rules(X), obj, k, exact=True).cost for k in (1, 2)]
        assert all(h <= a for h, a in zip(hyper, axis))  # T20


def test_t21_rule_counts_and_t22_infeasible():
    rng = np.random.default_rng(59)
    X = rng.normal(size=(7, 3))
    assert axis_rules(X).n_rules == 21 and hyperplane_rules(X).n_rules == math.comb(7, 3) * 8
    with pytest.raises(ValueError, match="no tree with exactly 2 splits satisfies min_samples_leaf=3"):
        OptimalTreeClassifier(max_splits=2, exact_splits=True, min_samples_leaf=3,
                              split_type="hyperplane").fit(X[:, :2], np.arange(7) % 2)
    obj = make_objective(7, labels=np.arange(7) % 2, n_classes=2)
    assert solve(axis_rules(X), obj, 2, exact=True, nmin=3).tree is None  # 3 leaves of >= 3 of 7 points


def test_t23_mcmp_contrast_and_t24_bsp_objective():
    for n in range(2, 7):
        assert len(splits_mcmp(tuple(range(n)))) == n - 1
        assert len(mcmp_trees(tuple(range(n)))) == catalan(n - 1)
    assert len(mcmp_trees("ABCD")) == 5
    rng = np.random.default_rng(61)
    for trial in range(50):
        k = 1 + trial % 5
        km = _random_kmat(rng, k, zeros=False)
        for t in gen_trees(tuple(range(k)), km):
            assert bsp_size(t) == 2 * k + 1
            assert bsp_size(t, fragment=lambda r: 1) == 3 * k + 1
