"""Tests of the BCART model pieces and exact oracles in :mod:`arboretum.bayes`.

Test ids (T-1 ...) refer to spec-000 §7.  Costs are ``-log P(T, Y | X)``.
"""

from __future__ import annotations

import itertools
import math
import time
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.integrate import quad
from scipy.special import gammaln
from scipy.stats import beta as beta_dist

from arboretum import bayes
from arboretum.bayes import (
    ChipmanPrior,
    leaf_cost,
    log_dirichlet_multinomial,
    log_marginal_likelihood,
    log_posterior,
    log_posterior_regression,
    log_prior,
)
from arboretum.maptree.bounds import heuristic
from arboretum.oracles import BCARTOracle, co_optimal_trees, enumerate_trees, exact_map, log_evidence
from arboretum.tree import BINARY, Tree
from fixtures import (
    FIXTURE_ORACLES,
    FIXTURE_RUNNERS_UP,
    FIXTURE_TREE_COUNTS,
    FIXTURES,
    fixture_a,
    fixture_b,
    fixture_c,
    fixture_d,
    fixture_e,
    fixture_h,
)

ATOL = 1e-8


def ll2(c1: int, c0: int, rho1: float, rho0: float) -> float:
    """``log l(c1, c0)`` in the spec's (label 1, label 0) order, via our class-index order."""
    return float(log_dirichlet_multinomial([c0, c1], [rho0, rho1]))


def arrays_from_paren(s: str) -> SimpleNamespace:
    """Minimal node arrays (pre-order, root 0) for a tree string, independent of ``Tree``."""
    left: list[int] = []
    right: list[int] = []
    feature: list[int] = []
    pos = 0

    def parse() -> int:
        nonlocal pos
        node = len(left)
        left.append(-1)
        right.append(-1)
        feature.append(-1)
        if pos < len(s) and s[pos] == "(":
            pos += 1
            left[node] = parse()
            end = pos
            while s[end].isdigit():
                end += 1
            feature[node] = int(s[pos:end])
            pos = end
            right[node] = parse()
            assert s[pos] == ")"
            pos += 1
        return node

    parse()
    assert pos == len(s)
    return SimpleNamespace(
        children_left=np.array(left), children_right=np.array(right), feature=np.array(feature)
    )


def random_dataset(rng: np.random.Generator, max_n: int = 12, max_f: int = 3, n_classes: int = 2):
    """Tiny binary data set; rows drawn with replacement so duplicates with conflicting labels occur."""
    n = int(rng.integers(2, max_n + 1))
    f = int(rng.integers(1, max_f + 1)) if rng.random() < 0.2 else max_f
    pool = rng.integers(0, 2, size=(int(rng.integers(max(1, n // 2), n + 1)), f))
    X = pool[rng.integers(0, pool.shape[0], size=n)]
    y = rng.integers(0, n_classes, size=n)
    return X, y


def random_params(rng: np.random.Generator, n_classes: int = 2):
    alpha = float(rng.choice([0.2, 0.5, 0.8, 0.95, 0.999, 1.0]))
    beta = float(rng.choice([0.0, 0.1, 0.5, 1.0, 2.0, 8.0]))
    rho = tuple(float(r) for r in rng.choice([0.5, 1.0, 2.5, 10.0], size=n_classes))
    return alpha, beta, rho


# ---------------------------------------------------------------------------
# T-1 leaf likelihood
# ---------------------------------------------------------------------------


def test_t1_log_beta_function():
    assert float(gammaln(3) + gammaln(5) - gammaln(8)) == pytest.approx(-4.6539603502, abs=ATOL)


@pytest.mark.parametrize(
    ("c1", "c0", "rho", "expected"),
    [
        (5, 3, 1.0, -6.2225762681),
        (3, 5, 1.0, -6.2225762681),
        (1, 1, 1.0, -1.7917594692),
        (10, 0, 1.0, -2.3978952728),
        (0, 0, 2.5, 0.0),
        (1, 0, 2.5, -0.6931471806),
        (2, 0, 2.5, -1.2321436813),
        (1, 1, 2.5, -1.5686159179),
        (5, 5, 2.5, -7.5138046198),
        (3, 5, 2.5, -5.8863482019),
        (10, 0, 2.5, -3.5635027109),
        (16, 16, 2.5, -23.2243748990),
    ],
)
def test_t1_leaf_likelihood_values(c1, c0, rho, expected):
    assert ll2(c1, c0, rho, rho) == pytest.approx(expected, abs=ATOL)
    # scalar rho is the same as a symmetric vector
    assert float(log_dirichlet_multinomial([c0, c1], rho)) == pytest.approx(expected, abs=ATOL)


def test_t1_leaf_likelihood_is_vectorised():
    counts = np.array([[[3, 5], [0, 0]], [[10, 0], [1, 1]]])
    got = log_dirichlet_multinomial(counts, [2.5, 2.5])
    assert got.shape == (2, 2)
    expected = [[-5.8863482019, 0.0], [-3.5635027109, -1.5686159179]]
    np.testing.assert_allclose(got, expected, atol=ATOL)


def test_t1_leaf_likelihood_properties():
    rho1, rho0 = 2.5, 1.5
    # l(1, 0) = rho1 / (rho1 + rho0): rho[k] pairs with class k
    assert math.exp(ll2(1, 0, rho1, rho0)) == pytest.approx(rho1 / (rho1 + rho0), rel=1e-12)
    assert float(log_dirichlet_multinomial([0, 1], [rho0, rho1])) == pytest.approx(math.log(rho1 / 4.0))
    # symmetry under swapping (c1, rho1) with (c0, rho0)
    assert ll2(7, 2, rho1, rho0) == pytest.approx(ll2(2, 7, rho0, rho1), abs=1e-12)
    # 0 < l <= 1, strictly below 1 once there is a sample
    counts = np.array([(a, b) for a in range(6) for b in range(6) if a + b > 0])
    assert np.all(log_dirichlet_multinomial(counts, [rho0, rho1]) < 0)
    # multi-class: all label sequences of length 3 sum to 1
    rho3 = [0.5, 1.0, 2.5]
    total = sum(
        math.exp(log_dirichlet_multinomial(np.bincount(seq, minlength=3), rho3))
        for seq in itertools.product(range(3), repeat=3)
    )
    assert total == pytest.approx(1.0, abs=1e-12)


def test_t1_reference_values():
    prior = ChipmanPrior(0.95, 0.5)
    assert float(prior.log_p_split(5)) == pytest.approx(-0.94717, abs=1e-5)
    assert float(prior.log_p_stop(5)) == pytest.approx(-0.490755, abs=1e-6)


# ---------------------------------------------------------------------------
# T-2 prior
# ---------------------------------------------------------------------------

PRIOR_TABLE = [
    (0, 0.95, -0.0512932944, 2.9957322736),
    (1, 0.6717514421, -0.3978668847, 1.1139841592),
    (2, 0.5484827557, -0.6005994387, 0.7951417136),
    (3, 0.4750000000, -0.7444404749, 0.6443570164),
    (4, 0.4248529157, -0.8560122506, 0.5531294722),
    (5, None, -0.9471730290, 0.4907548559),
]


@pytest.mark.parametrize(("d", "p_split", "log_p_split", "neg_log_stop"), PRIOR_TABLE)
def test_t2_prior_table(d, p_split, log_p_split, neg_log_stop):
    prior = ChipmanPrior(alpha=0.95, beta=0.5)
    if p_split is not None:
        assert float(prior.p_split(d)) == pytest.approx(p_split, abs=ATOL)
    assert float(prior.log_p_split(d)) == pytest.approx(log_p_split, abs=ATOL)
    assert -float(prior.log_p_stop(d)) == pytest.approx(neg_log_stop, abs=ATOL)


def test_t2_prior_is_vectorised_and_defaults():
    prior = ChipmanPrior()
    assert (prior.alpha, prior.beta) == (0.95, 0.5)
    depths = np.arange(6)
    np.testing.assert_allclose(prior.log_p_split(depths), [row[2] for row in PRIOR_TABLE], atol=ATOL)
    np.testing.assert_allclose(-prior.log_p_stop(depths), [row[3] for row in PRIOR_TABLE], atol=ATOL)


def test_t2_prior_is_frozen():
    prior = ChipmanPrior()
    with pytest.raises(AttributeError):
        prior.alpha = 0.5  # type: ignore[misc]


def test_t2_stop_probability_is_minus_inf_without_warning_when_split_is_certain():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ChipmanPrior(1.0, 0.5).log_p_stop(0) == -math.inf
        assert np.all(ChipmanPrior(1.0, 0.0).log_p_stop(np.arange(4)) == -math.inf)
        assert math.isfinite(ChipmanPrior(1.0, 0.5).log_p_stop(1))


# ---------------------------------------------------------------------------
# T-3 / T-16 heuristic and leaf cost
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("c1", "c0", "d", "h", "leaf_term", "split_term"),
    [
        (16, 16, 0, 9.0491527424, 23.2243748990, 9.0491527424),
        (5, 5, 1, 5.1460514516, 7.5138046198, 5.1460514516),
        (8, 0, 2, 3.1532183164, 3.1532183164, 3.7538177551),
        (1, 0, 3, 0.6931471806, 0.6931471806, None),
    ],
)
def test_t3_heuristic_values(c1, c0, d, h, leaf_term, split_term):
    counts = [c0, c1]
    assert float(heuristic(counts, d, 0.95, 0.5, (2.5, 2.5))) == pytest.approx(h, abs=ATOL)
    # the leaf term is the bare likelihood (no p_leaf)
    assert -float(log_dirichlet_multinomial(counts, 2.5)) == pytest.approx(leaf_term, abs=ATOL)
    if split_term is not None:
        # the perfect-split term uses p_split(d), not divided by |V|
        pure = ll2(c1, 0, 2.5, 2.5) + ll2(0, c0, 2.5, 2.5)
        assert -(float(ChipmanPrior().log_p_split(d)) + pure) == pytest.approx(split_term, abs=ATOL)


def test_t3_heuristic_vectorised_and_multiclass():
    counts = np.array([[16, 16], [5, 5], [0, 8], [0, 1]])
    depths = np.array([0, 1, 2, 3])
    np.testing.assert_allclose(
        heuristic(counts, depths), [9.0491527424, 5.1460514516, 3.1532183164, 0.6931471806], atol=ATOL
    )
    # multi-class form of §2.8
    c, rho, d = np.array([3, 4, 5]), np.array([0.5, 1.0, 2.5]), 2
    pure = sum(float(log_dirichlet_multinomial(np.eye(3, dtype=int)[k] * c[k], rho)) for k in range(3))
    expected = -max(float(log_dirichlet_multinomial(c, rho)), float(ChipmanPrior().log_p_split(d)) + pure)
    assert float(heuristic(c, d, rho=rho)) == pytest.approx(expected, abs=1e-12)


def test_leaf_cost_values():
    # splittable root: -log(1 - p_split(0)) - log l
    assert float(leaf_cost([16, 16], 0, 2)) == pytest.approx(2.9957322736 + 23.2243748990, abs=ATOL)
    # unsplittable node: p_leaf = 1
    assert float(leaf_cost([16, 16], 0, 0)) == pytest.approx(23.2243748990, abs=ATOL)
    np.testing.assert_allclose(
        leaf_cost(np.array([[16, 16], [16, 16]]), 0, np.array([0, 3])),
        [23.2243748990, 26.2201071726],
        atol=ATOL,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(leaf_cost([1, 1], 0, 1, alpha=1.0)) == math.inf
        assert math.isfinite(float(leaf_cost([1, 1], 0, 0, alpha=1.0)))


# ---------------------------------------------------------------------------
# T-4 Theorem 2 by quadrature
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(("c1", "c0"), [(3, 5), (0, 7), (10, 0), (4, 4)])
def test_t4_beta_bernoulli_marginal_by_quadrature(c1, c0):
    rho1, rho0 = 2.5, 1.5  # theta = P(y = 1) ~ Beta(rho1, rho0)
    integral, _ = quad(
        lambda t: t**c1 * (1 - t) ** c0 * beta_dist.pdf(t, rho1, rho0), 0.0, 1.0, epsabs=0, epsrel=1e-13
    )
    assert math.exp(ll2(c1, c0, rho1, rho0)) == pytest.approx(integral, rel=1e-9)


# ---------------------------------------------------------------------------
# T-5 normalisation and evidence
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["A", "C", "D", "E"])
@pytest.mark.parametrize(("alpha", "beta"), [(0.95, 0.5), (0.5, 4.0), (0.999, 0.1)])
def test_t5_prior_sums_to_one(name, alpha, beta):
    X, y = FIXTURES[name]()
    start = time.perf_counter()
    costs = [c for _, c in enumerate_trees(X, y, alpha=alpha, beta=beta, which="prior")]
    assert len(costs) == FIXTURE_TREE_COUNTS[name]
    assert math.fsum(math.exp(-c) for c in costs) == pytest.approx(1.0, abs=1e-12)
    assert time.perf_counter() - start < 20.0


def test_t5_tree_counts():
    for name, count in FIXTURE_TREE_COUNTS.items():
        X, y = FIXTURES[name]()
        assert BCARTOracle(X, y).count_trees() == count


def test_t5_likelihood_sums_to_one_over_label_vectors():
    X = np.array([[0, 0], [0, 1], [1, 0], [1, 1], [1, 1]])
    rho = (1.5, 2.5)  # class-index order: rho^0 = 1.5, rho^1 = 2.5
    for tree_string in ["", "(0)", "((1)0)"]:
        tree = arrays_from_paren(tree_string)
        total = math.fsum(
            math.exp(log_marginal_likelihood(tree, X, np.array(labels), rho=rho))
            for labels in itertools.product([0, 1], repeat=5)
        )
        assert total == pytest.approx(1.0, abs=1e-12)


def test_t5_evidence_fixture_a():
    X, y = fixture_a()
    evidence = log_evidence(X, y, alpha=0.95, beta=0.5, rho=(2.5, 2.5))
    assert evidence == pytest.approx(-16.6003926916, abs=ATOL)
    costs = np.array([c for _, c in enumerate_trees(X, y)])
    brute = -costs.min() + math.log(np.exp(costs.min() - costs).sum())
    assert evidence == pytest.approx(brute, abs=1e-10)
    opt, trees = co_optimal_trees(X, y)
    for t in trees:
        posterior = math.exp(log_posterior(Tree.from_paren(t, 3), X, y) - evidence)
        assert posterior == pytest.approx(0.0800598, abs=5e-8)
    assert math.exp(-opt - evidence) == pytest.approx(0.0800598, abs=5e-8)


# ---------------------------------------------------------------------------
# T-6 Lemmas 13 / 14 (and their multi-class forms)
# ---------------------------------------------------------------------------

_counts = st.integers(min_value=0, max_value=200)
_rhos = st.floats(min_value=1e-3, max_value=10.0, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(a=_counts, b=_counts, rho1=_rhos, rho0=_rhos)
def test_t6_lemma13_pure_leaves_beat_mixed_leaf(a, b, rho1, rho0):
    lhs = ll2(a, 0, rho1, rho0) + ll2(0, b, rho1, rho0)
    assert lhs >= ll2(a, b, rho1, rho0) - 1e-9 * max(1.0, abs(lhs))


@settings(max_examples=300, deadline=None)
@given(a=_counts, b=_counts, rho1=_rhos, rho0=_rhos)
def test_t6_lemma14_pure_likelihood_is_superadditive(a, b, rho1, rho0):
    for lab in (0, 1):
        def pure(c: int) -> float:
            return ll2(c, 0, rho1, rho0) if lab == 1 else ll2(0, c, rho1, rho0)

        rhs = pure(a) + pure(b)
        assert pure(a + b) >= rhs - 1e-9 * max(1.0, abs(rhs))


@settings(max_examples=200, deadline=None)
@given(
    a=st.lists(_counts, min_size=3, max_size=3),
    b=st.lists(_counts, min_size=3, max_size=3),
    rho=st.lists(_rhos, min_size=3, max_size=3),
)
def test_t6_multiclass_lemmas(a, b, rho):
    a_arr, b_arr, rho_arr = np.array(a), np.array(b), np.array(rho)
    eye = np.eye(3, dtype=np.int64)
    pure_a = log_dirichlet_multinomial(eye * a_arr[:, None], rho_arr)
    pure_b = log_dirichlet_multinomial(eye * b_arr[:, None], rho_arr)
    pure_ab = log_dirichlet_multinomial(eye * (a_arr + b_arr)[:, None], rho_arr)
    mixed = float(log_dirichlet_multinomial(a_arr, rho_arr))
    tol = 1e-9 * max(1.0, abs(mixed), float(np.abs(pure_ab).max()))
    assert pure_a.sum() >= mixed - tol  # generalised Lemma 13
    assert np.all(pure_ab >= pure_a + pure_b - tol)  # generalised Lemma 14


# ---------------------------------------------------------------------------
# T-7 consistency and admissibility of h
# ---------------------------------------------------------------------------


def assert_heuristic_consistent(oracle: BCARTOracle) -> int:
    """Check Thm 8 and Cor 15 on every reachable (I, d); return the number of states."""
    n_states = 0
    for mask, d in oracle.reachable_states():
        n_states += 1
        h = oracle.heuristic(mask, d)
        slack = 1e-9 * max(1.0, abs(h))
        assert h >= 0.0
        assert h <= oracle.leaf_cost(mask, d) + slack
        assert h <= oracle.value(mask, d) + slack
        if mask.bit_count() == 1:
            assert h == pytest.approx(oracle.value(mask, d), abs=1e-12)
        for f in oracle.valid_features(mask):
            left, right = oracle.split(mask, f)
            h_children = oracle.heuristic(left, d + 1) + oracle.heuristic(right, d + 1)
            and_bound = oracle.split_penalty(mask, d) + h_children
            assert h <= and_bound + slack
    return n_states


@pytest.mark.parametrize("row", FIXTURE_ORACLES, ids=lambda r: f"{r.fixture}-{r.alpha}-{r.beta}-{r.rho[0]}")
def test_t7_heuristic_consistent_on_fixtures(row):
    X, y = FIXTURES[row.fixture]()
    oracle = BCARTOracle(X, y, alpha=row.alpha, beta=row.beta, rho=row.rho)
    assert assert_heuristic_consistent(oracle) >= 1


@pytest.mark.parametrize("n_classes", [2, 3])
def test_t7_heuristic_consistent_on_random_data(n_classes):
    rng = np.random.default_rng(7 + n_classes)
    for _ in range(40):
        X, y = random_dataset(rng, max_n=20, max_f=4, n_classes=n_classes)
        alpha, beta, rho = random_params(rng, n_classes)
        assert_heuristic_consistent(BCARTOracle(X, y, alpha=alpha, beta=beta, rho=rho))


# ---------------------------------------------------------------------------
# DP oracle vs brute force
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("n_classes", [2, 3])
def test_dp_equals_brute_force_on_random_data(n_classes):
    rng = np.random.default_rng(2024 + n_classes)
    n_with_duplicate_conflicts = 0
    for trial in range(40):
        X, y = random_dataset(rng, n_classes=n_classes)
        alpha, beta, rho = random_params(rng, n_classes)
        params = dict(alpha=alpha, beta=beta, rho=rho)
        rows = {}
        for row, label in zip(map(tuple, X), y):
            rows.setdefault(row, set()).add(int(label))
        n_with_duplicate_conflicts += any(len(labels) > 1 for labels in rows.values())

        trees = list(enumerate_trees(X, y, **params))
        names = [t for t, _ in trees]
        costs = np.array([c for _, c in trees])
        assert len(set(names)) == len(names)
        best = costs.min()

        opt, best_tree = exact_map(X, y, **params)
        assert opt == pytest.approx(best, abs=1e-9)
        assert dict(trees)[best_tree] == pytest.approx(best, abs=1e-9)

        opt_co, co_opt = co_optimal_trees(X, y, **params)
        assert opt_co == pytest.approx(opt, abs=1e-12)
        assert co_opt == {t for t, c in trees if c <= best + 1e-9}

        finite = costs[np.isfinite(costs)]
        brute_evidence = -best + math.log(np.exp(best - finite).sum())
        assert log_evidence(X, y, **params) == pytest.approx(brute_evidence, abs=1e-9)

        # every enumerated cost equals -log_posterior of the tree
        check = names if trial < 10 else names[:: max(1, len(names) // 10)]
        for name in check:
            expected = dict(trees)[name]
            got = -log_posterior(arrays_from_paren(name), X, y, **params)
            if math.isinf(expected):
                assert got == math.inf
            else:
                assert got == pytest.approx(expected, abs=1e-9)
    assert n_with_duplicate_conflicts >= 5


def test_scalar_rho_and_multiclass_agree():
    rng = np.random.default_rng(3)
    X, y = random_dataset(rng, max_n=12, max_f=3, n_classes=3)
    y[0] = 2
    assert exact_map(X, y, rho=1.5) == exact_map(X, y, rho=(1.5, 1.5, 1.5))
    tree = arrays_from_paren("")
    assert log_posterior(tree, X, y, rho=1.5) == pytest.approx(log_posterior(tree, X, y, rho=[1.5] * 3))
    # a scalar rho with binary labels means two classes even if only class 0 occurs
    y0 = np.zeros(4, dtype=int)
    X0 = np.array([[0], [1], [0], [1]])
    assert log_posterior(arrays_from_paren(""), X0, y0, rho=2.5) == pytest.approx(
        log_posterior(arrays_from_paren(""), X0, y0, rho=(2.5, 2.5))
    )


# ---------------------------------------------------------------------------
# §7.2 fixture table
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("row", FIXTURE_ORACLES, ids=lambda r: f"{r.fixture}-{r.alpha}-{r.beta}-{r.rho[0]}")
def test_fixture_table(row):
    X, y = FIXTURES[row.fixture]()
    params = dict(alpha=row.alpha, beta=row.beta, rho=row.rho)
    opt, best = exact_map(X, y, **params)
    assert opt == pytest.approx(row.opt, abs=ATOL)

    opt_co, co_opt = co_optimal_trees(X, y, **params)
    assert opt_co == pytest.approx(row.opt, abs=ATOL)
    assert best in co_opt
    if row.n_co_optimal is not None:
        assert len(co_opt) == row.n_co_optimal
    if row.co_optimal is not None:
        assert co_opt == set(row.co_optimal)

    oracle = BCARTOracle(X, y, **params)
    assert oracle.heuristic(oracle.root, 0) == pytest.approx(row.h_root, abs=1e-6)
    assert oracle.leaf_cost(oracle.root, 0) == pytest.approx(row.root_leaf_cost, abs=1e-6)

    n_features = X.shape[1]
    for tree_string in co_opt:
        tree = Tree.from_paren(tree_string, n_features)
        assert tree.to_paren() == tree_string
        assert log_posterior(tree, X, y, **params) == pytest.approx(-row.opt, abs=ATOL)
    leaf = Tree.from_paren("", n_features)
    assert -log_posterior(leaf, X, y, **params) == pytest.approx(row.root_leaf_cost, abs=1e-6)


def test_fixture_tie_breaking():
    X, y = fixture_a()
    assert exact_map(X, y)[1] == "((1)0(1))"  # lowest feature among co-optimal roots
    assert exact_map(X, y, alpha=0.999, beta=0.1)[1] == "(((2)1(2))0((2)1(2)))"
    X, y = fixture_c()
    assert exact_map(X, y, alpha=0.5, beta=4.0)[1] == "(0)"
    X, y = fixture_d()
    assert exact_map(X, y) == (pytest.approx(3.3296037285, abs=ATOL), "")


@pytest.mark.parametrize(("name", "alpha", "beta", "rho", "tree_string", "cost"), FIXTURE_RUNNERS_UP)
def test_fixture_runners_up(name, alpha, beta, rho, tree_string, cost):
    X, y = FIXTURES[name]()
    tree = Tree.from_paren(tree_string, X.shape[1])
    assert -log_posterior(tree, X, y, alpha=alpha, beta=beta, rho=rho) == pytest.approx(cost, abs=1e-6)


def test_fixture_definitions():
    X, y = fixture_b()
    assert X.shape == (64, 6) and y.sum() == 25
    X, y = fixture_h()
    assert X.shape == (128, 3)
    differ = np.flatnonzero(X[:, 0] != X[:, 1])
    assert differ.tolist() == [63, 127]
    X, y = fixture_e()
    assert X.shape == (16, 4) and y.sum() == 8
    X, y = fixture_c()
    assert X.shape == (16, 2) and y.tolist() == [0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1]


# ---------------------------------------------------------------------------
# log_posterior of given trees
# ---------------------------------------------------------------------------


def test_log_posterior_matches_tree_and_plain_arrays():
    X, y = fixture_b()
    for tree_string in ["", "(0)", "(0((2)1))", "((1)0((5)2))"]:
        via_tree = log_posterior(Tree.from_paren(tree_string, 6), X, y)
        via_arrays = log_posterior(arrays_from_paren(tree_string), X, y)
        assert via_tree == pytest.approx(via_arrays, abs=1e-12)
        assert log_prior(arrays_from_paren(tree_string), X) + log_marginal_likelihood(
            arrays_from_paren(tree_string), X, y
        ) == pytest.approx(via_tree, abs=1e-12)


def test_log_posterior_by_hand():
    X, y = fixture_c()
    prior = ChipmanPrior()
    # "(0)": left = rows (0,0)x6 labels 000111 + (0,1)x4 labels 1111, right = (1,0)x4 0000 + (1,1)x2 01
    expected = (
        float(prior.log_p_split(0)) - math.log(2)
        + float(prior.log_p_stop(1)) + ll2(7, 3, 2.5, 2.5)
        + float(prior.log_p_stop(1)) + ll2(1, 5, 2.5, 2.5)
    )
    assert log_posterior(Tree.from_paren("(0)", 2), X, y) == pytest.approx(expected, abs=1e-12)


def test_log_posterior_degenerate_trees_are_minus_inf():
    X, y = fixture_a()
    assert log_posterior(Tree.from_paren("((0)0)", 3), X, y) == -math.inf
    assert log_prior(arrays_from_paren("((0)0)"), X) == -math.inf
    X, y = fixture_d()
    assert log_posterior(Tree.from_paren("(0)", 3), X, y) == -math.inf
    assert log_posterior(Tree.from_paren("", 3), X, y) == pytest.approx(-3.3296037285, abs=ATOL)


def test_log_posterior_uses_only_binary_splits():
    assert bayes._BINARY_SPLIT == BINARY
    X, y = fixture_c()
    tree = Tree.from_paren("(0)", 2)
    fake = SimpleNamespace(
        children_left=tree.children_left,
        children_right=tree.children_right,
        feature=tree.feature,
        split_kind=np.array([2, 0, 0], dtype=np.int8),
    )
    with pytest.raises(ValueError, match="needs candidates="):
        log_posterior(fake, X, y)


# ---------------------------------------------------------------------------
# log_posterior of trees on raw features (every split kind), moved names
# ---------------------------------------------------------------------------


def _mixed_frame(n=120, seed=0):
    import pandas as pd

    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "age": rng.normal(40, 10, n).round(1),
        "smoker": rng.random(n) < 0.4,
        "colour": pd.Categorical(rng.choice(["red", "green", "blue"], n)),
        "size": pd.Categorical(rng.choice(["S", "M", "L"], n), categories=["S", "M", "L"], ordered=True),
    })
    score = (df["age"] > 42).astype(int) + (df["colour"] == "red") + df["smoker"] + (df["size"] == "L")
    return df, score.to_numpy(), rng


def test_log_posterior_of_raw_trees_equals_the_estimators():
    from arboretum import MAPTreeClassifier
    from arboretum.tree import CATEGORY, THRESHOLD

    df, score, rng = _mixed_frame()
    labels = np.where(score + rng.normal(0, 0.5, len(score)) >= 2, "yes", "no")
    clf = MAPTreeClassifier(time_limit=20).fit(df, labels)
    kinds = set(clf.tree_.split_kind.tolist())
    assert THRESHOLD in kinds or CATEGORY in kinds
    y = np.searchsorted(clf.classes_, labels)
    lp = log_posterior(clf.tree_, df, y, alpha=clf.alpha, beta=clf.beta, rho=clf.rho_, candidates=clf.binarizer_)
    assert lp == pytest.approx(clf.log_posterior_, abs=1e-9)
    # the same through the 0/1 questions themselves, and the prior and likelihood parts add up
    Q = clf.binarizer_.transform(df)
    assert log_posterior(clf.tree_, df, y, rho=clf.rho_, candidates=Q) == pytest.approx(lp, abs=1e-12)
    parts = log_prior(clf.tree_, df, candidates=Q) + log_marginal_likelihood(clf.tree_, df, y, rho=clf.rho_,
                                                                           candidates=Q)
    assert parts == pytest.approx(lp, abs=1e-9)
    # and it is the binarised search tree's posterior on the questions
    assert log_posterior(clf.search_tree_, Q, y, rho=clf.rho_) == pytest.approx(lp, abs=1e-9)


@pytest.mark.filterwarnings("ignore::arboretum.LimitWarning")
def test_log_posterior_regression_of_raw_trees_equals_the_estimators():
    from arboretum import MAPTreeRegressor

    df, score, rng = _mixed_frame(seed=1)
    target = score + rng.normal(0, 0.3, len(score))
    reg = MAPTreeRegressor(max_expansions=300).fit(df, target)  # any tree: stopped early is fine

    lp = log_posterior_regression(reg.tree_, df, target, alpha=reg.alpha, beta=reg.beta, prior=reg.prior_,
                                  candidates=reg.binarizer_)
    assert lp == pytest.approx(reg.log_posterior_, abs=1e-9)


def test_log_posterior_hyperplane_tree_with_candidate_matrix():
    """A split kind no estimator produces yet: the tree routes, the matrix is counted."""
    from arboretum.tree import TreeBuilder

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = (X[:, 0] + X[:, 1] > 0).astype(np.int64)
    b = TreeBuilder(n_features=2, classes=[0, 1])
    root = b.add_node([20, 20], [0.5, 0.5], 0)
    left = b.add_node([20, 0], [1.0, 0.0], 1)
    right = b.add_node([0, 20], [0.0, 1.0], 1)
    b.set_split(root, "hyperplane", None, 0.0, left, right, coef=[1.0, 1.0])
    tree = b.build()
    goes_right = X[:, 0] + X[:, 1] > 0
    Q = np.column_stack([goes_right, X[:, 0] > 0, X[:, 1] > 0]).astype(np.uint8)
    expected = log_posterior(Tree.from_paren("(0)", 3), Q, y)
    assert log_posterior(tree, X, y, candidates=Q) == pytest.approx(expected, abs=1e-12)
    with pytest.raises(ValueError, match="one row per sample"):
        log_posterior(tree, X, y, candidates=Q[:5])


@pytest.mark.parametrize("name, module", [
    ("exact_map", "arboretum.oracles"), ("co_optimal_trees", "arboretum.oracles"),
    ("enumerate_trees", "arboretum.oracles"), ("log_evidence", "arboretum.oracles"),
    ("BCARTOracle", "arboretum.oracles"), ("RegressionOracle", "arboretum.oracles"),
    ("exact_map_regression", "arboretum.oracles"), ("co_optimal_trees_regression", "arboretum.oracles"),
    ("heuristic", "arboretum.maptree.bounds"), ("nig_bound_tables", "arboretum.maptree.bounds"),
    ("group_spread_terms", "arboretum.maptree.bounds"),
])
def test_moved_names_still_import_from_bayes_with_a_future_warning(name, module):
    import importlib

    with pytest.warns(FutureWarning, match=f"moved to {module}.{name}"):
        old = getattr(bayes, name)
    assert old is getattr(importlib.import_module(module), name)
    with pytest.raises(AttributeError):
        bayes.no_such_name  # noqa: B018


# ---------------------------------------------------------------------------
# T-17 alpha = 1 and validation
# ---------------------------------------------------------------------------


def _complete_tree(features: list[int]) -> str:
    if not features:
        return ""
    sub = _complete_tree(features[1:])
    return f"({sub}{features[0]}{sub})"


def test_t17_alpha_one():
    X, y = fixture_b()
    opt, best = exact_map(X, y, alpha=1.0, beta=0.5, rho=(2.5, 2.5))
    assert opt == pytest.approx(31.2418003560, abs=ATOL)
    assert best == "(0((2)1))"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt, best = exact_map(X, y, alpha=1.0, beta=0.0, rho=(2.5, 2.5))
    assert opt == pytest.approx(74.7964854927, abs=ATOL)
    assert best == _complete_tree(list(range(6)))
    tree = Tree.from_paren(best, 6)
    assert log_posterior(tree, X, y, alpha=1.0, beta=0.0) == pytest.approx(-opt, abs=ATOL)
    # a leaf of a splittable node has prior probability 0
    assert log_posterior(Tree.from_paren("", 6), X, y, alpha=1.0, beta=0.0) == -math.inf


@pytest.mark.parametrize(
    ("alpha", "beta", "match"),
    [
        (1.5, 0.5, "alpha"),
        (0.0, 0.5, "alpha"),
        (-0.2, 0.5, "alpha"),
        (float("nan"), 0.5, "alpha"),
        ("0.9", 0.5, "alpha"),
        (0.9, -0.1, "beta"),
        (0.9, float("nan"), "beta"),
        (0.9, float("inf"), "beta"),
    ],
)
def test_t17_prior_validation(alpha, beta, match):
    with pytest.raises(ValueError, match=match):
        ChipmanPrior(alpha, beta)
    X, y = fixture_c()
    with pytest.raises(ValueError, match=match):
        exact_map(X, y, alpha=alpha, beta=beta)
    with pytest.raises(ValueError, match=match):
        log_posterior(Tree.from_paren("", 2), X, y, alpha=alpha, beta=beta)


@pytest.mark.parametrize("rho", [(0.0, 1.0), (-1.0, 2.5), 0.0, (float("nan"), 1.0), (np.inf, 1.0)])
def test_t17_rho_validation(rho):
    X, y = fixture_c()
    with pytest.raises(ValueError, match="rho"):
        log_dirichlet_multinomial([1, 2], rho)
    with pytest.raises(ValueError, match="rho"):
        exact_map(X, y, rho=rho)
    with pytest.raises(ValueError, match="rho"):
        log_posterior(Tree.from_paren("", 2), X, y, rho=rho)
    with pytest.raises(ValueError, match="rho"):
        heuristic([1, 2], 0, rho=rho)


def test_data_validation():
    X, y = fixture_c()
    leaf = Tree.from_paren("", 2)
    with pytest.raises(ValueError, match="binary"):
        log_posterior(leaf, X * 2, y)
    with pytest.raises(ValueError, match="2-D"):
        exact_map(X[:, 0], y)
    with pytest.raises(ValueError, match="match X"):
        exact_map(X, y[:-1])
    with pytest.raises(ValueError, match=">= 0"):
        exact_map(X, y - 1)
    with pytest.raises(ValueError, match="rho has only 2"):
        exact_map(X, np.where(y == 1, 2, 0))
    with pytest.raises(ValueError, match="class indices"):
        exact_map(X, y + 0.5)
    with pytest.raises(ValueError, match="entries but there are"):
        log_dirichlet_multinomial([1, 2, 3], (1.0, 1.0))
    with pytest.raises(ValueError, match="which"):
        list(enumerate_trees(X, y, which="posterior"))
    with pytest.raises(ValueError, match="at least one row"):
        exact_map(np.zeros((0, 2)), np.zeros(0, dtype=int))
    with pytest.raises(ValueError, match="out of range|features"):
        log_posterior(arrays_from_paren("(5)"), X, y)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(st.tuples(st.integers(0, 7), st.integers(0, 2)), min_size=1, max_size=10),
    alpha=st.sampled_from([0.3, 0.95, 1.0]),
    beta=st.sampled_from([0.0, 0.5, 3.0]),
    rho=st.tuples(*[st.sampled_from([0.5, 1.0, 2.5])] * 3),
)
def test_dp_equals_brute_force_property(rows, alpha, beta, rho):
    X = np.array([[(code >> j) & 1 for j in range(3)] for code, _ in rows])
    y = np.array([label for _, label in rows])
    costs = dict(enumerate_trees(X, y, alpha=alpha, beta=beta, rho=rho))
    best = min(costs.values())
    opt, tree = exact_map(X, y, alpha=alpha, beta=beta, rho=rho)
    assert opt == pytest.approx(best, abs=1e-9)
    assert costs[tree] == pytest.approx(best, abs=1e-9)
    _, co_opt = co_optimal_trees(X, y, alpha=alpha, beta=beta, rho=rho)
    assert co_opt == {t for t, c in costs.items() if c <= best + 1e-9}


@pytest.mark.parametrize(
    "X",
    [
        np.array([[0, 1], [2, 0]], dtype=np.uint8),
        np.array([[0, 1], [1, 300]], dtype=np.uint16),
        np.array([[0, 1], [-1, 0]], dtype=np.int64),
        np.array([[0.0, 1.0], [0.5, 0.0]]),
    ],
)
def test_non_binary_features_are_refused_whatever_the_dtype(X):
    from arboretum.bayes import log_posterior
    from arboretum.tree import TreeBuilder

    b = TreeBuilder(2)
    b.add_node(np.zeros(2), np.full(2, 0.5), 0)
    with pytest.raises(ValueError, match="only binary values 0 and 1"):
        log_posterior(b.build(), X, np.array([0, 1]))
    ok = (X == 1).astype(X.dtype)
    assert np.isfinite(log_posterior(b.build(), ok, np.array([0, 1])))
    assert np.isfinite(log_posterior(b.build(), ok.astype(bool), np.array([0, 1])))
