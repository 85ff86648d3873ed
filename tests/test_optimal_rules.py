"""Optimal trees beyond axis and hyperplane rules: quadratic surfaces, a user's rules, a user's objective.

* ``split_type="quadratic"`` (spec-002 §3.11 (c)): the DP over the lifted hyperplane rules against the
  brute force over labelled shapes; the K = 1 optimum against an independent oracle (every dichotomy
  of the points, separable by a conic or not, decided by a linear programme); invariants (the family
  contains the hyperplane dichotomies; the fitted ``QUADRATIC`` splits route the training points as
  the rules do); the ``QUADRATIC`` kind of ``Tree`` (predict, text, JSON, validation);
* :class:`CandidateRules`: the paper's axis family written by hand is the axis family; random mixed
  rules with given defining points against the brute force; saving without the user's code;
* :class:`LeafObjective`: weighted Gini and absolute error against the brute force; the 0-1 loss as a
  user objective gives the built-in optimum;
* 2-D decision regions of every kind; bad input.
"""

from __future__ import annotations

import itertools
import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from scipy.optimize import linprog  # noqa: E402
from test_optimal import np_cost, shape_bruteforce  # noqa: E402

import arboretum  # noqa: E402
from arboretum import InvalidParameterError, OptimalTreeClassifier, OptimalTreeRegressor, Tree  # noqa: E402
from arboretum.exceptions import ModelFormatError  # noqa: E402
from arboretum.optimal import CandidateRules, LeafObjective, hyper1  # noqa: E402
from arboretum.optimal.rules import (  # noqa: E402
    axis_rules, hyperplane_rules, lifted_dim, quadratic_rules,
)
from arboretum.optimal.solver import make_objective, solve  # noqa: E402
from arboretum.plot import plot_decision_regions  # noqa: E402
from arboretum.tree import QUADRATIC, TreeBuilder, quadratic_features, quadratic_terms  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _data(rng, n, d=2, grid=None, classes=2):
    X = rng.integers(0, grid, size=(n, d)).astype(float) if grid else rng.normal(size=(n, d)).round(2)
    return X, rng.integers(0, classes, size=n)


# ---------------------------------------------------------------------------
# the quadratic family
# ---------------------------------------------------------------------------


def test_lifting_and_rule_counts():
    assert [lifted_dim(d) for d in (1, 2, 3, 4)] == [2, 5, 9, 14]  # spec §3.11 (c) table, deg = 2
    assert quadratic_terms(2) == [(0,), (1,), (0, 0), (0, 1), (1, 1)]
    X = np.array([[2.0, 3.0], [-1.0, 0.5]])
    assert np.array_equal(quadratic_features(X), [[2, 3, 4, 6, 9], [-1, 0.5, 1, -0.5, 0.25]])
    rng = np.random.default_rng(0)
    X, _ = _data(rng, 8)
    rules = quadratic_rules(X)
    assert rules.n_rules == math.comb(8, 5) * 2**5  # general position: no subset skipped (T21)
    assert OptimalTreeClassifier(max_splits=2, split_type="quadratic").estimate_cost(X)["n_rules"] == rules.n_rules
    # five points on a line are affinely dependent once lifted: degenerate subsets are skipped (G16)
    line = np.c_[np.arange(7.0), 2 * np.arange(7.0) + 1]
    assert quadratic_rules(line).n_rules == 0


@pytest.mark.parametrize("grid", [None, 3])
def test_quadratic_dp_matches_labelled_shape_bruteforce(grid):
    """T8 for hypersurfaces: exactly K rules, with and without min_samples_leaf and depth."""
    rng = np.random.default_rng(11 if grid is None else 12)
    checked = 0
    for trial in range(4):
        X, y = _data(rng, 6, grid=grid)
        rules = quadratic_rules(X)
        obj = make_objective(6, labels=y, n_classes=2)
        cost = lambda p: np_cost(p, labels=y)  # noqa: E731
        for k, nmin, depth in [(1, 0, None), (1, 2, None), (2, 0, None), (2, 1, None), (2, 0, 1)]:
            got = solve(rules, obj, k, exact=True, nmin=nmin, depth=depth).cost
            assert got == shape_bruteforce(rules, k, cost, nmin, depth), (trial, k, nmin, depth)
            checked += 1
    assert checked == 20


def _conic_separable(X: np.ndarray, left: np.ndarray) -> bool:
    """Is there a quadratic q with q < 0 on ``left`` and q > 0 elsewhere?  (LP with a unit margin)."""
    Z = np.c_[quadratic_features(X), np.ones(len(X))]
    sgn = np.where(left, 1.0, -1.0)
    res = linprog(np.zeros(Z.shape[1]), A_ub=sgn[:, None] * Z, b_ub=-np.ones(len(X)),
                  bounds=[(None, None)] * Z.shape[1], method="highs")
    return res.status == 0


def test_quadratic_k1_is_the_best_conic_dichotomy():
    """Completeness of the 2**G assignments (spec §3.11 (b) in the lifted space): the K = 1 optimum is
    the least error over *every* dichotomy of the points that a conic separates, found by LP."""
    rng = np.random.default_rng(3)
    for trial in range(3):
        X, y = _data(rng, 8, classes=2)
        best = math.inf
        for bits in range(2 ** 8):
            left = np.array([(bits >> i) & 1 for i in range(8)], dtype=bool)
            if 0 < left.sum() < 8 and _conic_separable(X, left):
                best = min(best, np_cost(left, labels=y) + np_cost(~left, labels=y))
        clf = OptimalTreeClassifier(max_splits=1, exact_splits=True, split_type="quadratic", min_samples_leaf=1)
        assert clf.fit(X, y).objective_ == best, trial


def test_quadratic_contains_hyperplanes_and_routes_like_its_rules():
    rng = np.random.default_rng(4)
    for trial in range(3):
        X, y = _data(rng, 9)
        kw = dict(max_splits=1, min_samples_leaf=1)
        quad = OptimalTreeClassifier(split_type="quadratic", **kw).fit(X, y)
        line = OptimalTreeClassifier(split_type="hyperplane", **kw).fit(X, y)
        axis = OptimalTreeClassifier(split_type="axis", **kw).fit(X, y)
        assert quad.objective_ <= line.objective_ <= axis.objective_
        assert quad.optimal_
        # the fitted tree reproduces the training partition of its rules: its error is the objective
        assert np.sum(quad.predict(X) != y) == quad.objective_
    # K = 2 on a curved boundary: a circle is one quadratic rule
    X = np.array([[np.cos(a), np.sin(a)] for a in np.linspace(0, 2 * np.pi, 8, endpoint=False)] + [[0.1, 0.0]])
    X = np.r_[2 * X[:8], X[8:]]
    y = np.r_[np.zeros(8, dtype=int), [1]]
    clf = OptimalTreeClassifier(max_splits=2, split_type="quadratic").fit(X[[0, 2, 4, 6, 8]], y[[0, 2, 4, 6, 8]])
    assert clf.objective_ == 0 and clf.tree_.n_leaves == 2
    assert clf.tree_.split_kind[0] == QUADRATIC


def test_quadratic_one_feature_uses_the_single_hyperplane_path():
    """D = 1 lifts to G = 2, where today's one-hyperplane kernel applies: same optimum as the DP."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(30, 1)).round(2)
    y = (np.abs(X[:, 0]) < 0.6).astype(int) ^ (rng.random(30) < 0.1)
    assert hyper1.applies("hyperplane", 1, 2)
    fast = OptimalTreeClassifier(max_splits=1, split_type="quadratic").fit(X, y)
    rules = quadratic_rules(X)
    want = solve(rules, make_objective(30, labels=y.astype(int), n_classes=2), 1).cost
    assert fast.objective_ == want
    assert np.sum(fast.predict(X) != y) == want


# ---------------------------------------------------------------------------
# the QUADRATIC split kind of Tree
# ---------------------------------------------------------------------------


def _circle_tree(feature_names=None) -> Tree:
    b = TreeBuilder(2, classes=["in", "out"], feature_names=feature_names)
    root = b.add_node([3, 3], [0.5, 0.5], 0)
    left = b.add_node([3, 0], [1.0, 0.0], 1)
    right = b.add_node([0, 3], [0.0, 1.0], 1)
    b.set_split(root, "QUADRATIC", None, 1.0, left, right, coef=[0.3, 0, 0.51, -1.2, 1.0])
    return b.build()


def test_quadratic_tree_predicts_prints_and_round_trips():
    t = _circle_tree(["a", "b"])
    X = np.array([[0.0, 0.0], [2.0, 0.0], [1.0, 1.0], [np.nan, 0.0]])
    q = 0.3 * X[:, 0] + 0.51 * X[:, 0] ** 2 - 1.2 * X[:, 0] * X[:, 1] + X[:, 1] ** 2
    assert t.predict(X).tolist() == np.where(q <= 1.0, "in", "out").tolist()
    assert t.predict(X)[-1] == "out"  # NaN fails the test and goes right
    assert t.split_text(0) == ("0.51*a^2 - 1.2*a*b + 1*b^2 + 0.3*a <= 1", "0.51*a^2 - 1.2*a*b + 1*b^2 + 0.3*a >  1")
    assert "a^2" in t.export_text() and "a*b" in t.to_dot()
    u = Tree.from_json(t.to_json())
    assert u.structurally_equal(t) and np.array_equal(u.predict(X), t.predict(X))
    assert "QUADRATIC" in repr(t)
    bad = t.to_dict()
    bad["coefs"]["0"] = [1.0, 2.0]
    with pytest.raises(ModelFormatError, match="QUADRATIC node must hold 5 coefficients"):
        Tree.from_dict(bad)
    bad = t.to_dict()
    bad["feature"][0] = 1
    with pytest.raises(ModelFormatError, match="QUADRATIC node 0 must have feature -1"):
        Tree.from_dict(bad)
    b = TreeBuilder(2, classes=[0, 1])
    nodes = [b.add_node([1, 1], [0.5, 0.5], d) for d in (0, 1, 1)]
    with pytest.raises(ValueError, match="length the number of monomials of degree 1 and 2=5"):
        b.set_split(nodes[0], QUADRATIC, None, 0.0, nodes[1], nodes[2], coef=[1.0, 2.0])


def test_fitted_quadratic_estimator_saves_and_loads(tmp_path):
    rng = np.random.default_rng(6)
    X, y = _data(rng, 7)
    clf = OptimalTreeClassifier(max_splits=2, split_type="quadratic").fit(X, y)
    path = tmp_path / "quad.json"
    arboretum.save(clf, path)
    back = arboretum.load(path)
    assert back.tree_.structurally_equal(clf.tree_)
    grid = rng.normal(size=(50, 2)) * 2
    assert np.array_equal(back.predict(grid), clf.predict(grid))
    coefs = [clf.tree_.coefs[i] for i in np.flatnonzero(clf.tree_.split_kind == QUADRATIC)]
    assert coefs and all(0.5 <= np.abs(c).max() < 1 for c in coefs)  # normalised for reading


# ---------------------------------------------------------------------------
# user rules
# ---------------------------------------------------------------------------


def test_candidate_rules_of_the_axis_family_are_the_axis_family():
    """The paper's axis rules x_d <= x_{n,d} written by hand: same optimum with the given defining
    points, and with the default ones (the nearest point of r+, which is n) on data without ties."""
    rng = np.random.default_rng(8)
    for trial in range(4):
        X, y = _data(rng, 6, grid=3 if trial % 2 else None, classes=3)
        hand = [("threshold", d, float(X[n, d])) for d in range(2) for n in range(6)]
        given = [[n] for d in range(2) for n in range(6)]
        # the default defining point is the *first* row at the boundary: with tied values two hand rules
        # of the same threshold share it, which loses optima (spec T19); given points keep them apart
        for defs in ((None, given) if trial % 2 == 0 else (given,)):
            for k in (2, 3):
                kw = dict(max_splits=k, exact_splits=True, min_samples_leaf=0)
                user = OptimalTreeClassifier(split_type=CandidateRules(hand, defs), **kw).fit(X, y)
                axis = OptimalTreeClassifier(split_type="axis", **kw).fit(X, y)
                assert user.objective_ == axis.objective_, (trial, k, defs is None)
                assert np.sum(user.predict(X) != y) == user.objective_


def test_mixed_user_rules_with_defining_points_match_the_bruteforce():
    rng = np.random.default_rng(9)
    for trial in range(5):
        X, y = _data(rng, 7)
        rules = [("threshold", int(rng.integers(2)), float(rng.normal())) for _ in range(3)]
        rules += [("hyperplane", rng.normal(size=2).round(2).tolist(), float(rng.normal())) for _ in range(3)]
        rules += [("quadratic", rng.normal(size=5).round(2).tolist(), float(rng.normal())) for _ in range(2)]
        defs = [sorted(rng.choice(7, size=int(rng.integers(1, 3)), replace=False).tolist()) for _ in rules]
        cr = CandidateRules(rules, defs)
        rs = cr.rule_set(X)
        cost = lambda p: np_cost(p, labels=y)  # noqa: E731
        obj = make_objective(7, labels=y, n_classes=2)
        for k, nmin in [(2, 0), (3, 0), (2, 1)]:
            got = solve(rs, obj, k, exact=True, nmin=nmin).cost
            assert got == shape_bruteforce(rs, k, cost, nmin), (trial, k)
        # the estimator (rows reordered internally, defining points follow them) finds the same optimum
        est = OptimalTreeClassifier(max_splits=3, exact_splits=True, min_samples_leaf=0, split_type=cr)
        perm = rng.permutation(7)
        inv = np.argsort(perm)
        moved = CandidateRules(rules, [[int(inv[p]) for p in d] for d in defs])
        first = est.fit(X, y).objective_
        assert first == shape_bruteforce(rs, 3, cost, 0)
        assert est.set_params(split_type=moved).fit(X[perm], y[perm]).objective_ == first


def test_user_rules_fit_saves_and_predicts_without_the_rules(tmp_path):
    X = np.array([[0, 0], [1, 1], [0, 1], [1, 0]], dtype=float)
    rules = CandidateRules([("hyperplane", [1, -1], 0.5), ("hyperplane", [1, -1], -0.5), ("threshold", 0, 0.5)])
    clf = OptimalTreeClassifier(max_splits=2, split_type=rules).fit(X, [0, 0, 1, 1])
    assert clf.objective_ == 0 and clf.n_rules_ == 3
    text = arboretum.io.dumps(clf)
    back = arboretum.io.loads(text)
    assert isinstance(back.split_type, CandidateRules) and back.split_type.rules == rules.rules
    assert np.array_equal(back.predict(X), clf.predict(X))
    tree = Tree.from_json(clf.tree_.to_json())
    assert np.array_equal(tree.predict(X), [0, 0, 1, 1])


@pytest.mark.parametrize("rules, defs, match", [
    ([], None, "at least one rule"),
    ([("oblique", 0, 1.0)], None, "has kind 'oblique'"),
    ([("threshold", -1, 1.0)], None, "feature index >= 0"),
    ([("threshold", 0, float("nan"))], None, "finite number as threshold"),
    ([("hyperplane", [0, 0], 1.0)], None, "non-zero 1-D vector"),
    ([("quadratic", [1, 2, 3], 1.0)], None, "D \\+ D \\(D \\+ 1\\) / 2"),
    ([("threshold", 0, 1.0)], [[0], [1]], "one list of row indices per rule"),
    ([("threshold", 0, 1.0)], [[]], "non-empty list of row indices"),
])
def test_candidate_rules_refuse_bad_rules(rules, defs, match):
    with pytest.raises(ValueError, match=match):
        CandidateRules(rules, defs)


def test_candidate_rules_that_do_not_fit_the_data_are_refused_before_work():
    X = np.zeros((4, 2))
    X[:, 0] = np.arange(4)
    y = [0, 0, 1, 1]
    for rules, defs, match in [
        ([("threshold", 2, 1.0)], None, "tests feature 2, but X has 2 features"),
        ([("hyperplane", [1, 2, 3], 1.0)], None, "has 3 coefficients, but X has 2 features"),
        ([("quadratic", [1, 0], 1.0)], None, "has 2 coefficients, but X has 2 features and so 5"),
        ([("threshold", 0, 1.0)], [[9]], "defining point 9, but X has 4 rows"),
    ]:
        with pytest.raises(ValueError, match=match):
            OptimalTreeClassifier(max_splits=1, split_type=CandidateRules(rules, defs)).fit(X, y)
    with pytest.raises(ValueError, match="sample_weight 0"):
        OptimalTreeClassifier(max_splits=1, split_type=CandidateRules([("threshold", 0, 1.0)], [[0]])).fit(
            X, y, sample_weight=[0, 1, 1, 1])
    with pytest.raises(InvalidParameterError, match="split_type"):
        OptimalTreeClassifier(split_type=[("threshold", 0, 1.0)]).fit(X, y)


# ---------------------------------------------------------------------------
# user objectives
# ---------------------------------------------------------------------------


def _gini(sums, members, n, stats):
    total = 0.0
    sq = 0.0
    for c in range(sums.shape[0]):
        total += sums[c]
        sq += sums[c] * sums[c]
    return total - sq / total if total > 0 else 0.0


def _counts(y, w):
    return w[:, None] * (y[:, None] == np.arange(int(y.max()) + 1))


def _abs_error(sums, members, n, stats):
    if n == 0:
        return 0.0
    v = np.sort(stats[members[:n], 0])
    med = v[(n - 1) // 2]
    return np.sum(np.abs(v - med))


GINI = LeafObjective(_gini, _counts, name="weighted gini")
ABS = LeafObjective(_abs_error, lambda y, w: y[:, None], lambda y, w: np.median(y), name="absolute error")


def test_user_objectives_match_the_bruteforce():
    rng = np.random.default_rng(10)
    for trial in range(4):
        X, y = _data(rng, 6, grid=4 if trial % 2 else None, classes=3)
        w = rng.integers(1, 4, size=6).astype(float)
        rules = axis_rules(X) if trial < 2 else hyperplane_rules(X)
        gini_np = lambda p: 0.0 if not p.any() else float(  # noqa: E731
            w[p].sum() - (np.bincount(y[p], weights=w[p], minlength=3) ** 2).sum() / w[p].sum())
        t = rng.normal(size=6).round(1)
        abs_np = lambda p: float(np.abs(t[p] - np.sort(t[p])[(p.sum() - 1) // 2]).sum()) if p.any() else 0.0  # noqa: E731
        for k in (1, 2):
            est = OptimalTreeClassifier(max_splits=k, exact_splits=True, min_samples_leaf=0, objective=GINI,
                                        split_type="axis" if trial < 2 else "hyperplane")
            got = est.fit(X, y, sample_weight=w).objective_
            assert got == pytest.approx(shape_bruteforce(rules, k, gini_np, 0), abs=1e-9), (trial, k)
            reg = OptimalTreeRegressor(max_splits=k, exact_splits=True, min_samples_leaf=0, objective=ABS,
                                       split_type="axis" if trial < 2 else "hyperplane").fit(X, t)
            assert reg.objective_ == pytest.approx(shape_bruteforce(rules, k, abs_np, 0), abs=1e-9), (trial, k)
    # the leaves of the absolute-error tree predict their medians
    leaves = reg.apply(X)
    for leaf in np.unique(leaves):
        assert reg.tree_.value[leaf, 0] == np.median(t[leaves == leaf])


def test_zero_one_as_a_user_objective_is_the_built_in():
    def zero_one(sums, members, n, stats):
        total = 0.0
        best = 0.0
        for c in range(sums.shape[0]):
            total += sums[c]
            best = max(best, sums[c])
        return total - best

    user = LeafObjective(zero_one, _counts)
    rng = np.random.default_rng(12)
    X, y = _data(rng, 30, d=3, classes=3)
    w = rng.integers(1, 3, size=30).astype(float)
    for kw in (dict(max_splits=2), dict(max_splits=3, max_depth=2), dict(max_splits=2, split_type="hyperplane")):
        if kw.get("split_type") == "hyperplane":
            Xk = X[:12, :2]
            yk, wk = y[:12], w[:12]
        else:
            Xk, yk, wk = X, y, w
        a = OptimalTreeClassifier(objective=user, **kw).fit(Xk, yk, sample_weight=wk)
        b = OptimalTreeClassifier(**kw).fit(Xk, yk, sample_weight=wk)
        assert a.objective_ == b.objective_ and a.optimal_


def test_bad_objectives_are_refused():
    X, y = np.arange(6.0).reshape(-1, 1), [0, 0, 1, 0, 1, 1]
    with pytest.raises(ValueError, match="objective must be None, 'zero_one' or a LeafObjective"):
        OptimalTreeClassifier(objective="squared_error").fit(X, y)
    with pytest.raises(InvalidParameterError, match="objective"):
        OptimalTreeRegressor(objective="gini").fit(X, y)
    neg = LeafObjective(lambda s, m, n, st: -1.0, _counts, name="negative")
    with pytest.raises(ValueError, match="must be a finite number >= 0"):
        OptimalTreeClassifier(objective=neg).fit(X, y)
    with pytest.raises(ValueError, match="must return an array of shape"):
        OptimalTreeClassifier(objective=LeafObjective(_gini, lambda y, w: np.ones((3, 2)))).fit(X, y)
    with pytest.raises(TypeError, match="numba cannot compile"):
        OptimalTreeClassifier(objective=LeafObjective(lambda s, m, n, st: {"a": s}, _counts)).fit(X, y)
    with pytest.raises(TypeError, match="must be a function"):
        LeafObjective(1.0, _counts)
    clf = OptimalTreeClassifier(max_splits=1, objective=GINI).fit(X, y)
    with pytest.raises(TypeError, match="LeafObjective"):
        arboretum.io.dumps(clf)  # code is not data; clf.tree_ saves
    Tree.from_json(clf.tree_.to_json())


def test_quadratic_preflight_and_errors():
    rng = np.random.default_rng(13)
    X3 = rng.normal(size=(10, 3))
    with pytest.raises(ValueError, match="supports at most 2 features"):
        OptimalTreeClassifier(split_type="quadratic").fit(X3, rng.integers(0, 2, 10))
    cost = OptimalTreeClassifier(max_splits=3, split_type="quadratic").estimate_cost(rng.normal(size=(200, 2)))
    assert cost["n_rules"] == math.comb(200, 5) * 32
    with pytest.raises(ValueError, match="split_type='hyperplane'"):
        OptimalTreeClassifier(max_splits=3, split_type="quadratic").fit(rng.normal(size=(200, 2)),
                                                                        rng.integers(0, 2, 200))


# ---------------------------------------------------------------------------
# decision regions of every kind
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("split_type", ["axis", "hyperplane", "quadratic"])
def test_decision_regions_of_every_split_kind(split_type, tmp_path):
    rng = np.random.default_rng(14)
    X = rng.normal(size=(9, 2)).round(2)
    y = (X[:, 0] ** 2 + X[:, 1] ** 2 < 1).astype(int)
    clf = OptimalTreeClassifier(max_splits=2 if split_type != "quadratic" else 1, split_type=split_type).fit(X, y)
    for model in (clf, clf.tree_):
        ax = plot_decision_regions(model, X, y, resolution=60)
        images = ax.get_images()
        assert len(images) == 2  # the regions, then the leaf borders
        border = images[1].get_array()
        leaves = clf.tree_.n_leaves
        assert (border[..., 3] > 0).any() == (leaves > 1)
        path = tmp_path / f"{split_type}.png"
        ax.figure.savefig(path, dpi=50)
        assert path.read_bytes()[:4] == b"\x89PNG"
    ax = plot_decision_regions(clf, X, y, resolution=30, boundaries=False)
    assert len(ax.get_images()) == 1
