"""MAPTree: exactness against the oracle, spec fixtures, bounds, limits and the estimator contract."""

from __future__ import annotations

import json
import pickle
import time

import numpy as np
import pytest
from fixtures import FIXTURE_ORACLES, FIXTURES
from numba import njit

from arboretum import MAPTreeClassifier
from arboretum._numba import dm_log_lik, pack_rows_mask, unpack
from arboretum.bayes import ChipmanPrior, log_dirichlet_multinomial, log_posterior
from arboretum.oracles import BCARTOracle, co_optimal_trees, exact_map
from arboretum.datasets import load_dataset
from arboretum.maptree import AndOrSearch
from arboretum.maptree import _kernels as K
from arboretum.tree import Tree


# Some of the search's inner kernels have no CPython wrapper (``no_cpython_wrapper=True``: they are
# only called from other kernels, and the wrappers cost compile time); the tests call them through shims.
@njit
def _node_columns(words, n, M1, Y, vf, nv):
    """_probe2's node columns and class planes as 2-D arrays (one row per column or plane)."""
    W = M1.shape[1]
    Wc = K._column_words(n, nv, W)
    Mc = np.empty(nv * Wc, np.uint64)
    planes = np.empty(Y.shape[0] * Y.shape[1] * Wc, np.uint64)
    K._node_columns(words, M1, Y, vf, nv, Wc, Mc, planes)
    return Mc.reshape((nv, Wc)), planes.reshape((Y.shape[0] * Y.shape[1], Wc))


def _fit(X, y, **kw):
    return MAPTreeClassifier(**kw).fit(X, y)


def _random_dataset(rng, *, n_classes=2, duplicates=False):
    n = int(rng.integers(max(2, n_classes), 41))
    f = int(rng.integers(1, 6))
    X = (rng.random((n, f)) < rng.uniform(0.2, 0.8)).astype(np.uint8)
    if duplicates and n >= 4:
        # Copy some rows so identical feature vectors carry conflicting labels.
        src = rng.integers(0, n, size=n // 3)
        dst = rng.integers(0, n, size=n // 3)
        X[dst] = X[src]
    y = rng.integers(0, n_classes, size=n)
    y[: n_classes] = np.arange(n_classes)  # every class present
    return X, y


def _node_subsets(s, X) -> dict:
    """Sample set of every stored OR node, rebuilt from the AND structure (parents come first)."""
    subsets = {0: np.ones(X.shape[0], bool)}
    for a in range(int(s.counters[1])):
        p, f = int(s.and_parent[a]), int(s.and_feature[a])
        subsets[int(s.and_child0[a])] = subsets[p] & (X[:, f] == 0)
        subsets[int(s.and_child1[a])] = subsets[p] & (X[:, f] == 1)
    return subsets


PRIORS = [(0.95, 0.5), (0.5, 4.0), (0.999, 0.1), (0.8, 1.0), (0.2, 8.0)]
RHOS = [(2.5, 2.5), (1.0, 1.0), (0.5, 3.0), (10.0, 1.0)]


# ---------------------------------------------------------------------------------------------
# Exactness against the DP oracle
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(8))
def test_matches_oracle_on_random_small_data(seed):
    """>= 200 random datasets in all: certified, optimal value, a co-optimal tree, -UB == log posterior."""
    rng = np.random.default_rng(1000 + seed)
    for i in range(30):
        X, y = _random_dataset(rng, duplicates=bool(i % 2))
        alpha, beta = PRIORS[(seed + i) % len(PRIORS)]
        rho = RHOS[i % len(RHOS)]
        opt, trees = co_optimal_trees(X, y, alpha=alpha, beta=beta, rho=rho)
        clf = _fit(X, y, alpha=alpha, beta=beta, rho=rho)
        assert clf.optimal_
        assert clf.log_posterior_ == pytest.approx(-opt, abs=1e-8)
        assert clf.log_posterior_bound_ == pytest.approx(-opt, abs=1e-8)
        assert clf.tree_.to_paren() in trees


@pytest.mark.parametrize("seed", range(5))
def test_matches_oracle_multiclass(seed):
    """100 random 3-class datasets (Dirichlet-multinomial leaves, spec §2.8)."""
    rng = np.random.default_rng(77 + seed)
    for i in range(20):
        X, y = _random_dataset(rng, n_classes=3, duplicates=bool(i % 2))
        alpha, beta = PRIORS[i % len(PRIORS)]
        opt, trees = co_optimal_trees(X, y, alpha=alpha, beta=beta, rho=(1.0, 2.0, 0.5))
        clf = _fit(X, y, alpha=alpha, beta=beta, rho=(1.0, 2.0, 0.5))
        assert clf.optimal_
        assert clf.log_posterior_ == pytest.approx(-opt, abs=1e-8)
        assert clf.tree_.to_paren() in trees


@pytest.mark.parametrize("row", FIXTURE_ORACLES, ids=lambda r: f"{r.fixture}-{r.alpha}-{r.beta}-{r.rho[0]}")
def test_spec_fixtures(row):
    """Spec §7.2: OPT, a co-optimal tree, h(root) and the root's leaf cost (T-8, T-12, T-14, T-16)."""
    X, y = FIXTURES[row.fixture]()
    s = AndOrSearch(X, y, 2, row.alpha, row.beta, row.rho)
    if np.unique(X, axis=0).shape[0] > 1:  # fixture D's root is unsplittable: solved at creation
        # h'(root) = min(exact leaf cost, perfect-split term + E(0, n)) >= the paper's h(root).
        counts = np.bincount(y, minlength=2)
        pure = sum(log_dirichlet_multinomial(counts[k] * np.eye(2)[k], row.rho) for k in range(2))
        E, logv = s.tables.E, s.tables.logv
        ext = E[0, min(len(y), E.shape[1] - 1)] + logv[len(y)]
        split_term = -ChipmanPrior(row.alpha, row.beta).log_p_split(0) - pure + ext
        assert s.lower_bound == pytest.approx(min(row.root_leaf_cost, split_term), abs=1e-6)
        assert s.lower_bound >= row.h_root - 1e-6
        assert s.upper_bound == pytest.approx(row.root_leaf_cost, abs=1e-6)
    clf = _fit(X, y, alpha=row.alpha, beta=row.beta, rho=row.rho)
    assert clf.optimal_
    assert -clf.log_posterior_ == pytest.approx(row.opt, abs=1e-8)
    if row.co_optimal is not None:
        assert clf.tree_.to_paren() in row.co_optimal


@pytest.mark.parametrize(
    "alpha,beta,opt,tree",
    [(1.0, 0.5, 31.2418003560, "(0((2)1))"), (1.0, 0.0, 74.7964854927, None)],
)
def test_alpha_one_forces_splits(alpha, beta, opt, tree):
    """T-17: with alpha = 1 the leaf cost of a splittable root is +inf; still exact."""
    X, y = FIXTURES["B"]()
    clf = _fit(X, y, alpha=alpha, beta=beta)
    assert clf.optimal_
    assert -clf.log_posterior_ == pytest.approx(opt, abs=1e-8)
    if tree is not None:
        assert clf.tree_.to_paren() == tree
    else:  # every leaf holds one sample
        assert np.all(clf.tree_.counts[clf.tree_.children_left < 0].sum(1) == 1)


def test_hash_collision_trap():
    """T-14: the paper's linear hash merges {x0=1} and {x1=1} in fixture H; ours must not."""
    X, y = FIXTURES["H"]()
    clf = _fit(X, y)
    assert clf.tree_.to_paren() == "(1)"
    assert -clf.log_posterior_ == pytest.approx(18.3763939626, abs=1e-8)


# ---------------------------------------------------------------------------------------------
# Bitsets and n % 64 == 0
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 63, 64, 65, 128, 130])
def test_bitset_round_trip_and_root_counts(n):
    rng = np.random.default_rng(n)
    mask = rng.random(n) < 0.5
    words = pack_rows_mask(mask)
    assert words.shape == ((n + 63) // 64,)
    assert np.array_equal(unpack(words, n), mask)
    full = pack_rows_mask(np.ones(n, bool))
    assert sum(int(w).bit_count() for w in full) == n  # padding bits never set
    X = rng.integers(0, 2, size=(n, 3))
    y = rng.integers(0, 2, size=n)
    s = AndOrSearch(X, y, 2)
    assert list(s.or_counts[0]) == [n - y.sum(), y.sum()]


@pytest.mark.parametrize("n", [64, 128, 192])
def test_signal_only_in_last_rows(n):
    """The reference drops the last 64 rows when n % 64 == 0; the signal lives only there."""
    rng = np.random.default_rng(0)
    X = np.zeros((n, 3), dtype=np.uint8)
    y = np.zeros(n, dtype=np.int64)
    tail = np.arange(n - 64, n)
    X[tail, 0] = rng.integers(0, 2, size=64)
    X[tail[X[tail, 0] == 0], 1] = 1  # keep the root splittable in both directions
    y[tail] = X[tail, 0]
    clf = _fit(X, y)
    opt, trees = exact_map(X, y, alpha=0.95, beta=0.5, rho=(2.5, 2.5))
    assert clf.optimal_
    assert clf.log_posterior_ == pytest.approx(-opt, abs=1e-8)
    assert clf.tree_.n_leaves > 1
    assert clf.score(X, y) == 1.0


# ---------------------------------------------------------------------------------------------
# Bounds and anytime behaviour
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("probe", [True, False])
@pytest.mark.parametrize("ub_semantics", ["leaf", "inf"])
@pytest.mark.parametrize("tie_rule", ["paper", "reference"])
def test_invariants_after_every_expansion(ub_semantics, tie_rule, probe):
    """T-9 and spec §4.3 invariants after every single expansion, both UB semantics and tie rules.

    Also checks admissibility of the splittable Perfect Split bound h' on every created node:
    LB <= the exact optimum of that node's subproblem (recomputed by the oracle)."""
    rng = np.random.default_rng(5)
    cases = [FIXTURES["B"](), FIXTURES["C"](), FIXTURES["A"]()]
    cases += [_random_dataset(rng, duplicates=True) for _ in range(6)]
    for X, y in cases:
        opt, _ = exact_map(X, y, alpha=0.95, beta=0.5, rho=(2.5, 2.5))
        s = AndOrSearch(X, y, 2, ub_semantics=ub_semantics, tie_rule=tie_rule, probe=probe)
        prev_lb, prev_ub = s.lower_bound, s.upper_bound
        for _ in range(10_000):
            s.step(1) if s.step(1) != 2 else (s._grow(), s.step(1))
            s.check_invariants()
            lb, ub = s.lower_bound, s.upper_bound
            assert lb >= prev_lb and ub <= prev_ub
            assert lb <= opt + 1e-9
            if np.isfinite(ub):
                tree = s.solution()
                cost = -log_posterior(tree, X, y)
                assert opt - 1e-9 <= cost <= ub + 1e-9
                if ub_semantics == "leaf":  # UB is the exact cost of the incumbent; with probes at
                    assert cost <= ub + 1e-9  # most (a virtual split's stored children can improve)
                    if not probe:
                        assert cost == pytest.approx(ub, abs=1e-9)
            prev_lb, prev_ub = lb, ub
            if s.solved:
                break
        assert s.solved
        assert s.upper_bound == pytest.approx(opt, abs=1e-9)
        # Every stored node's LB (h' when created, raised since) is <= its subproblem's optimum.
        oracle = BCARTOracle(X, y, alpha=0.95, beta=0.5, rho=(2.5, 2.5))
        for o, members in _node_subsets(s, X).items():
            mask = oracle.subset_mask(np.flatnonzero(members))
            assert s.or_lb[o] <= oracle.value(mask, int(s.or_depth[o])) + 1e-9


@pytest.mark.parametrize("gmax", [1, 3])
def test_subtree_prior_bounds(gmax):
    """E[d, m] (least prior cost below a split of m samples): hand values, monotone in m and
    0 when both sides may be unsplittable; the search adds it to every split bound."""
    from arboretum.maptree import _kernels as K

    prior = ChipmanPrior(0.95, 0.5)
    depths = np.arange(12)
    lps, lpst = np.asarray(prior.log_p_split(depths)), np.asarray(prior.log_p_stop(depths))
    logv = K.split_count_bounds(np.full(64, gmax))  # 64 groups of gmax identical rows
    E = K.subtree_prior_bounds(lps, lpst, gmax, 60, logv)
    assert np.all(np.diff(E, axis=1) >= 0) and np.all(E >= 0) and np.all(E[-1] == 0)
    assert np.all(E[:, : 2 * gmax + 1] == 0)  # two sides of <= gmax samples may both be leaves of cost 0
    # 2 gmax + 1 samples: best is gmax + 1 (splittable, 2 distinct rows so |V| >= 1; its own
    # split may have two sides of cost 0) and gmax (cost 0), so E = T[d + 1, gmax + 1].
    d = np.arange(10)
    assert logv[gmax + 1] == 0.0
    assert E[d, 2 * gmax + 1] == pytest.approx(np.minimum(-lpst[d + 1], -lps[d + 1]))
    # A large node: one side saturates at min(leaf, split + logv + E) one level down.
    sat = np.minimum(-lpst[d + 1], -lps[d + 1] + logv[59] + E[d + 1, 59])
    assert E[d, 60] == pytest.approx(sat)
    # Without the split-count bound the table is never stronger; with a prior that splits
    # readily (leaves dear, splits cheap) it is weaker.
    E0 = K.subtree_prior_bounds(lps, lpst, gmax, 60, np.zeros_like(logv))
    assert np.all(E0 <= E)
    eager = ChipmanPrior(0.999, 0.1)
    lps, lpst = np.asarray(eager.log_p_split(depths)), np.asarray(eager.log_p_stop(depths))
    E = K.subtree_prior_bounds(lps, lpst, gmax, 60, logv)
    E0 = K.subtree_prior_bounds(lps, lpst, gmax, 60, np.zeros_like(logv))
    assert np.all(E0 <= E) and np.any(E0 < E)


def test_split_count_bounds_hand_values():
    """logv[m] = log ceil(log2 k(m)), k(m) the fewest distinct rows m samples can have."""
    from arboretum.maptree import _kernels as K

    logv = K.split_count_bounds(np.ones(20, dtype=np.int64))  # all rows distinct: k(m) = m
    want = [0, 0, 0, np.log(2), np.log(2), np.log(3), np.log(3), np.log(3), np.log(3), np.log(4)]
    assert logv[:10] == pytest.approx(want)
    assert logv[16] == pytest.approx(np.log(4)) and logv[17] == pytest.approx(np.log(5))
    # Groups of 5, 1, 1, 1, ...: up to 5 samples may share a row, 6 need 2 rows, 7 need 3.
    logv = K.split_count_bounds(np.array([1, 5, 1, 1, 1, 1]))
    assert logv[:8] == pytest.approx([0, 0, 0, 0, 0, 0, 0, np.log(2)])
    assert logv.shape == (11,) and np.all(np.diff(logv) >= 0)


@pytest.mark.parametrize("seed", range(6))
def test_split_count_bound_holds_on_every_subset(seed):
    """|V(I)| >= exp(logv[|I|]) for random subsets I (with duplicate rows) that have a valid split."""
    from arboretum.maptree import _kernels as K

    rng = np.random.default_rng(seed)
    n, f = int(rng.integers(8, 60)), int(rng.integers(2, 9))
    X = rng.random((n, f)) < rng.uniform(0.2, 0.8)
    X[rng.integers(0, n, n // 3)] = X[rng.integers(0, n, n // 3)]  # duplicates
    _, sizes = np.unique(X, axis=0, return_counts=True)
    logv = K.split_count_bounds(sizes)
    assert logv.shape == (n + 1,)
    for _ in range(300):
        members = rng.random(n) < rng.uniform(0.05, 1.0)
        Xi = X[members]
        nv = int(np.sum(Xi.any(axis=0) & ~Xi.all(axis=0)))
        if nv > 0:
            assert np.log(nv) >= logv[members.sum()] - 1e-12


def test_subtree_prior_table_is_capped():
    """Heavy duplicates and many features: the E table stays at most 64 depths x 1025 sizes."""
    rng = np.random.default_rng(3)
    X = np.repeat(rng.random((3, 200)) < 0.5, 1500, axis=0)
    y = rng.integers(0, 2, X.shape[0])
    s = AndOrSearch(X, y, 2)
    E, logv = s.tables.E, s.tables.logv
    assert s.gmax == 1500 and E.shape == (64, 1025) and logv.shape == (4501,)
    assert np.all(np.diff(E, axis=1) >= 0)


@pytest.mark.parametrize("size", [40, 150, 900])
def test_node_columns_compacted_counts(size):
    """_probe2's node columns (compacted for small nodes, masked otherwise) give the exact pair
    and class counts of the node's samples."""
    from arboretum.maptree import _kernels as K

    rng = np.random.default_rng(size)
    n, f = 1000, 120
    X = rng.random((n, f)) < 0.3
    y = rng.integers(0, 3, n)
    s = AndOrSearch(X, y, 3)
    members = np.zeros(n, dtype=bool)
    members[rng.choice(n, size, replace=False)] = True
    vf = np.flatnonzero(X[members].any(0) & ~X[members].all(0)).astype(np.int32)
    Mc, planes = _node_columns(pack_rows_mask(members), size, s.M1, s.Y, vf, np.int64(vf.size))
    assert (Mc.shape[1] < s.M1.shape[1]) == (size < 900)  # compacted only when it pays
    bits = lambda a: np.unpackbits(a.view(np.uint8), bitorder="little").astype(bool)  # noqa: E731
    cols = np.array([bits(r) for r in Mc])
    want = X[members][:, vf].T if Mc.shape[1] < s.M1.shape[1] else (X[:, vf] & members[:, None]).T
    assert np.array_equal(cols[:, : want.shape[1]], want) and not cols[:, want.shape[1]:].any()
    classes = np.array([bits(r) for r in planes])[:, : want.shape[1]]
    ym = y[members] if Mc.shape[1] < s.M1.shape[1] else np.where(members, y, -1)
    assert np.array_equal(classes, np.array([ym == k for k in range(3)]))


@pytest.mark.parametrize("n_classes,weighted", [(2, False), (3, False), (2, True)])
def test_probe_bounds_are_admissible_and_ordered(n_classes, weighted):
    """The two probe bounds of every stored unexpanded node, computed directly: the creation
    bound <= the depth-1 probe (``_probe``) <= the depth-2 probe (``_probe2``) <= the node's exact
    optimum (oracle); with integer weights as replicated rows in the oracle."""
    from arboretum.maptree import _kernels as K

    rng = np.random.default_rng(40 + n_classes + 7 * weighted)
    checked = 0
    for _ in range(12):
        n, f = int(rng.integers(6, 15)), int(rng.integers(3, 8))
        X = (rng.random((n, f)) < rng.uniform(0.3, 0.7)).astype(np.uint8)
        X[rng.integers(0, n, n // 4)] = X[rng.integers(0, n, n // 4)]  # some identical rows
        y = rng.integers(0, n_classes, n)
        y[:n_classes] = np.arange(n_classes)
        w = rng.integers(1, 4, n) if weighted else None
        Xo, yo = (np.repeat(X, w, axis=0), np.repeat(y, w)) if weighted else (X, y)
        s = AndOrSearch(X, y, n_classes, rho=[1.5] * n_classes, sample_weight=w, probe=False)
        s.run(max_expansions=int(rng.integers(1, 6)))
        oracle = BCARTOracle(Xo, yo, alpha=0.95, beta=0.5, rho=[1.5] * n_classes)
        rows = np.repeat(np.arange(n), w) if weighted else np.arange(n)
        subsets = _node_subsets(s, X)
        stored = {(int(s.or_depth[o]), m.tobytes()): o for o, m in subsets.items()}
        for o, members in subsets.items():
            if s.or_expanded[o]:
                continue
            words = pack_rows_mask(members)
            p1, u1, f1 = K._probe(o, words, s.scratch, s.data, s.model, s.tables, s.graph.nodes, False)
            p2 = K._probe2(s.model, o, words, s.scratch, s.data, s.tables, s.graph.nodes, s.ub_inf, 10**9)
            exact = oracle.value(oracle.subset_mask(np.flatnonzero(members[rows])), int(s.or_depth[o]))
            assert s.or_lb[o] <= p1 + 1e-9
            assert p1 <= p2 + 1e-9
            assert p2 <= exact + 1e-9
            # The virtual incumbent: split on f1, children as stored incumbents or leaves; it costs
            # u1, at least the optimum and at most the split into two leaves.
            left, right = members & (X[:, f1] == 1), members & (X[:, f1] == 0)
            depth = int(s.or_depth[o])
            two_leaves = oracle.split_penalty(oracle.subset_mask(np.flatnonzero(members[rows])), depth) + sum(
                oracle.leaf_cost(oracle.subset_mask(np.flatnonzero(m[rows])), depth + 1) for m in (left, right))
            assert exact - 1e-9 <= u1 <= two_leaves + 1e-9
            # The depth-1 probe looks up only the splits that can attain the minimum; its LB is
            # still exactly the expansion's: pen + min over valid f of the children's stored LB
            # (or creation bound when not stored).
            assert p1 == pytest.approx(_expansion_lb(s, K, X, o, members, stored), abs=1e-12)
            checked += 1
    assert checked > 100


def _expansion_lb(s, K, X, o, members, stored):
    """What expanding ``o`` would make its LB, computed split by split in Python."""
    d = int(s.or_depth[o])
    tmp = int(s.counters[K.C_N_OR])
    leaf = -s.log_pstop[d] + (-dm_log_lik(s.or_counts[o], *s.dm))
    valid = [f for f in range(X.shape[1]) if 0 < X[members, f].sum() < members.sum()]
    best = np.inf
    for f in valid:
        pair = 0.0
        for side in (0, 1):
            child = members & (X[:, f] == side)
            key = (d + 1, child.tobytes())
            if key in stored:
                pair += s.or_lb[stored[key]]
            else:
                lb, _ = K._creation_bound(s.model, s.data, s.tables, s.graph, pack_rows_mask(child),
                                          int(child.sum()), tmp, d + 1, False)
                pair += lb
        best = min(best, pair)
    return min(leaf, -s.log_ps[d] + np.log(len(valid)) + best)


@pytest.mark.parametrize("name", ["hepatitis", "primary-tumor"])
def test_probe_keeps_the_certificate_and_shrinks_the_graph(name):
    X, y = load_dataset(name, return_X_y=True)
    y = np.unique(y, return_inverse=True)[1]
    plain = AndOrSearch(X, y, 2, probe=False).run()
    probed = AndOrSearch(X, y, 2).run()
    assert plain.optimal and probed.optimal
    assert probed.upper_bound == pytest.approx(plain.upper_bound, abs=1e-9)
    assert probed.n_probes > 0 and plain.n_probes == 0
    assert probed.n_or_nodes < plain.n_or_nodes
    assert probed.n_expansions < plain.n_expansions


@pytest.mark.parametrize("seed", range(3))
def test_best_first_strategy_matches_oracle(seed):
    """The paper's order (strategy='best-first') certifies the same optima as the default focused search."""
    rng = np.random.default_rng(4000 + seed)
    for i in range(20):
        X, y = _random_dataset(rng, n_classes=2 + i % 2, duplicates=bool(i % 2))
        alpha, beta = PRIORS[(seed + i) % len(PRIORS)]
        opt, trees = co_optimal_trees(X, y, alpha=alpha, beta=beta, rho=2.5)
        for strategy in ("best-first", "focused"):
            clf = _fit(X, y, alpha=alpha, beta=beta, rho=2.5, strategy=strategy)
            assert clf.optimal_
            assert clf.log_posterior_ == pytest.approx(-opt, abs=1e-8)
            assert clf.tree_.to_paren() in trees


@pytest.mark.parametrize("name", ["tic-tac-toe", "soybean"])
def test_focused_rounds_keep_the_invariants(name):
    """Focused search, stopped and resumed many times: invariants, monotone bounds, incumbent nodes."""
    X, y = load_dataset(name, return_X_y=True)
    y = np.unique(y, return_inverse=True)[1]
    s = AndOrSearch(X, y, 2)
    X = np.asarray(X, dtype=bool)
    prev_lb, prev_ub = s.lower_bound, s.upper_bound
    for k in range(1, 40):
        s.run(max_expansions=40 * k * k, focus=True)
        s.check_invariants()
        lb, ub = s.lower_bound, s.upper_bound
        assert prev_lb <= lb <= ub <= prev_ub
        assert -log_posterior(s.solution(), X, y) <= ub + 1e-9
        nodes = s.incumbent_nodes()
        for o, words in nodes:
            assert s.or_lb[o] < s.or_ub[o]  # unsolved
            members = unpack(words, X.shape[0])
            assert s.or_counts[o].tolist() == np.bincount(y[members], minlength=2).tolist()
        if nodes:
            assert nodes[0][0] == 0  # the root comes first when the incumbent splits it
        rounds = s._focus_round()
        assert rounds[-1][0] == 0 and all(o != 0 for o, _ in rounds[:-1])
        sizes = [s.or_counts[o].sum() for o, _ in rounds[:-1]]
        assert sizes == sorted(sizes)  # smallest subproblem first
        prev_lb, prev_ub = lb, ub
        if s.solved:
            break


def test_anytime_never_worse_as_budget_grows():
    X, y = load_dataset("tic-tac-toe", return_X_y=True)
    previous = -np.inf
    for k in [1, 3, 10, 30, 100, 300, 1000, 3000]:
        clf = _fit(X, y, max_expansions=k)
        assert clf.n_expansions_ == k
        assert not clf.optimal_
        assert clf.stop_reason_ == "max_expansions"
        assert clf.log_posterior_ >= previous - 1e-9
        assert clf.log_posterior_ <= clf.log_posterior_bound_
        previous = clf.log_posterior_


def test_max_expansions_exact_and_flag():
    """T-10/T-11: one expansion gives an uncertified but valid tree; no limit certifies."""
    X, y = FIXTURES["B"]()
    clf = _fit(X, y, max_expansions=1)
    assert clf.n_expansions_ == 1 and not clf.optimal_ and clf.gap_ > 0
    assert clf.log_posterior_ == pytest.approx(log_posterior(clf.tree_, X, y))
    full = _fit(X, y)
    assert full.optimal_ and full.gap_ == 0.0
    assert _fit(X, y, max_expansions=10**6).n_expansions_ == full.n_expansions_


def test_time_limit_honoured():
    X, y = load_dataset("tic-tac-toe", return_X_y=True)
    _fit(X, y, max_expansions=5)  # compile outside the timed region
    for limit in (0.3, 1.5):
        t0 = time.perf_counter()
        clf = _fit(X, y, time_limit=limit)
        wall = time.perf_counter() - t0
        assert clf.stop_reason_ == "time_limit" and not clf.optimal_
        assert wall <= 1.1 * limit + 0.5
        assert clf.fit_time_ >= limit and clf.search_time_ <= clf.fit_time_  # the limit is on the whole fit
        assert clf.log_posterior_ <= clf.log_posterior_bound_


def test_memory_limit_respected():
    X, y = load_dataset("tic-tac-toe", return_X_y=True)
    clf = _fit(X, y, memory_limit=8)  # MiB
    assert clf.stop_reason_ == "memory_limit" and not clf.optimal_
    assert clf.peak_memory_ <= 8 * 2**20
    assert clf.tree_.n_nodes >= 1
    assert clf.log_posterior_ == pytest.approx(log_posterior(clf.tree_, X, y))


@pytest.mark.parametrize("limit", [16, 40, 100])
def test_memory_limit_is_used_nearly_in_full(limit):
    # Growth slows down near the limit instead of stopping when a doubling would pass it.
    X, y = load_dataset("tic-tac-toe", return_X_y=True)
    clf = _fit(X, y, memory_limit=limit)
    assert clf.stop_reason_ == "memory_limit"
    assert 0.9 * limit * 2**20 <= clf.peak_memory_ <= limit * 2**20
    assert clf.log_posterior_ == pytest.approx(log_posterior(clf.tree_, X, y))


def test_deterministic():
    X, y = load_dataset("hepatitis", return_X_y=True)
    a = _fit(X, y, max_expansions=2000)
    b = _fit(X, y, max_expansions=2000)
    assert a.tree_.to_paren() == b.tree_.to_paren()
    assert a.log_posterior_bound_ == b.log_posterior_bound_
    assert a.n_or_nodes_ == b.n_or_nodes_


def test_no_duplicate_subproblems():
    """T-13: every (subset, depth) is stored once."""
    X, y = FIXTURES["B"]()
    s = AndOrSearch(X, y, 2)
    s.run()
    n_or = int(s.counters[0])
    seen = set()
    subsets = _node_subsets(s, X)
    for o in range(n_or):
        key = (subsets[o].tobytes(), int(s.or_depth[o]))
        assert key not in seen
        seen.add(key)
    assert len(subsets) == n_or


@pytest.mark.parametrize("seed", range(3))
def test_equivalent_splits_are_stored_once(seed):
    """Features that cut a node into the same two sets (equal or complementary on it, as the two
    one-hot columns of a binary attribute) share one AND node; the optimum, the co-optimal tree
    and the split penalty (which counts every valid feature) are unchanged."""
    rng = np.random.default_rng(500 + seed)
    for i in range(20):
        X, y = _random_dataset(rng, duplicates=bool(i % 2))
        X = np.column_stack([X, 1 - X[:, 0], X[:, -1]])  # a complement and a copy
        opt, trees = co_optimal_trees(X, y)
        s = AndOrSearch(X, y, 2)
        r = s.run()
        assert r.optimal and r.upper_bound == pytest.approx(opt, abs=1e-8)
        assert s.solution().to_paren() in trees
        subsets = _node_subsets(s, X)
        for o in np.flatnonzero(s.or_expanded[: int(s.counters[0])]):
            members = subsets[o]
            valid = [f for f in range(X.shape[1]) if 0 < X[members, f].sum() < members.sum()]
            parts = {frozenset((X[members, f] == 1).nonzero()[0].tolist()) for f in valid}
            parts = {frozenset(p) for p in parts} | {
                frozenset(set(range(int(members.sum()))) - p) for p in parts
            }
            st, c = int(s.or_and_start[o]), int(s.or_and_count[o])
            assert 2 * c == len(parts)  # one AND per unordered pair of sides
            if valid:
                feats = s.and_feature[st : st + c].tolist()
                assert feats == sorted(feats) and feats[0] == valid[0]  # the lowest feature is kept
                d = int(s.or_depth[o])
                assert s.or_pen[o] == pytest.approx(-s.log_ps[d] + np.log(len(valid)))


def test_seeding_through_an_equivalent_split():
    """A seeded tree that splits on the dropped twin of a stored split is found through it."""
    X, y = FIXTURES["B"]()
    X = np.column_stack([X, 1 - X[:, 0]])
    start = Tree.from_paren(f"({X.shape[1] - 1}((2)1))", n_features=X.shape[1])
    clf = _fit(X, y, initial_trees=[start], max_expansions=3)
    assert clf.log_posterior_ >= log_posterior(start, X, y) - 1e-9


# ---------------------------------------------------------------------------------------------
# Real data: the reference's certified values
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name,value", [("zoo-1", -19.918), ("hepatitis", -63.297), ("primary-tumor", -164.619)]
)
def test_reference_values(name, value):
    X, y = load_dataset(name, return_X_y=True)
    clf = _fit(X, y, time_limit=120)
    assert clf.optimal_
    assert clf.log_posterior_ == pytest.approx(value, abs=5e-4)


@pytest.mark.slow
def test_reference_value_vote():
    X, y = load_dataset("vote", return_X_y=True)
    clf = _fit(X, y, time_limit=300)
    assert clf.optimal_
    assert clf.log_posterior_ == pytest.approx(-84.465, abs=5e-4)


# ---------------------------------------------------------------------------------------------
# Estimator contract, prediction, persistence, errors
# ---------------------------------------------------------------------------------------------
def test_predict_proba_is_posterior_mean_and_sums_to_one():
    X, y = load_dataset("zoo-1", return_X_y=True)
    clf = _fit(X, y, rho=(1.0, 3.0))
    P = clf.predict_proba(X)
    assert np.allclose(P.sum(1), 1.0)
    leaves = clf.apply(X)
    c = clf.tree_.counts[leaves]
    assert np.allclose(P, (c + [1.0, 3.0]) / (c.sum(1, keepdims=True) + 4.0))
    assert np.array_equal(clf.predict(X), clf.classes_[np.argmax(P, 1)])


def test_string_labels_and_dataframe_names():
    pd = pytest.importorskip("pandas")
    X, y = FIXTURES["B"]()
    df = pd.DataFrame(X, columns=[f"col{j}" for j in range(X.shape[1])])
    labels = np.where(y == 1, "yes", "no")
    clf = _fit(df, labels)
    assert list(clf.classes_) == ["no", "yes"]
    assert list(clf.feature_names_in_) == list(df.columns)
    assert set(clf.predict(df)) <= {"no", "yes"}
    assert "col0" in clf.export_text()


def test_json_round_trip_identical_predictions(tmp_path):
    X, y = load_dataset("hepatitis", return_X_y=True)
    clf = _fit(X, y)
    path = tmp_path / "tree.json"
    clf.tree_.to_json(path)
    tree = Tree.from_json(path)
    assert np.array_equal(tree.predict(X), clf.predict(X))
    assert np.array_equal(tree.predict_proba(X), clf.predict_proba(X))
    json.loads(path.read_text())  # plain JSON
    again = pickle.loads(pickle.dumps(clf))
    assert np.array_equal(again.predict(X), clf.predict(X))


@pytest.mark.parametrize(
    "params,match",
    [
        ({"alpha": 0.0}, "alpha"),
        ({"alpha": 1.5}, "alpha"),
        ({"beta": -1.0}, "beta"),
        ({"rho": (0.0, 1.0)}, "rho"),
        ({"rho": (1.0, 1.0, 1.0)}, "rho"),
        ({"rho": "big"}, "rho"),
        ({"max_expansions": -1}, "max_expansions"),
        ({"time_limit": 0}, "time_limit"),
        ({"memory_limit": -5}, "memory_limit"),
        ({"strategy": "depth-first"}, r"strategy must be one of \['focused', 'best-first'\]"),
        ({"strategy": None}, "strategy"),
    ],
)
def test_bad_parameters(params, match):
    X, y = FIXTURES["B"]()
    with pytest.raises(ValueError, match=match):
        MAPTreeClassifier(**params).fit(X, y)


def test_bad_input():
    X, y = FIXTURES["B"]()
    clf = MAPTreeClassifier()
    with pytest.raises(ValueError, match="binary"):
        MAPTreeClassifier(binarize=False).fit(X + 0.5, y)
    Xn = X.astype(float)
    Xn[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        clf.fit(Xn, y)
    with pytest.raises(ValueError, match="class"):
        clf.fit(X, np.zeros(len(y)))
    with pytest.raises(ValueError):
        clf.fit(X[:0], y[:0])
    with pytest.raises(ValueError):
        clf.fit(X, y[:-1])
    clf.fit(X, y)
    with pytest.raises(ValueError, match="features"):
        clf.predict(X[:, :3])
    with pytest.raises(ValueError, match="binary"):
        clf.predict(X * 2)


def test_sklearn_clone_and_grid_search():
    from sklearn.base import clone
    from sklearn.model_selection import GridSearchCV

    X, y = load_dataset("zoo-1", return_X_y=True)
    clf = MAPTreeClassifier(alpha=0.9, time_limit=5)
    assert clone(clf).get_params() == clf.get_params()
    gs = GridSearchCV(clf, {"beta": [0.5, 2.0]}, cv=3).fit(X, y)
    assert gs.best_score_ > 0.9


# ---------------------------------------------------------------------------------------------
# Initial incumbents
# ---------------------------------------------------------------------------------------------
def test_initial_trees_do_not_change_the_optimum():
    rng = np.random.default_rng(11)
    for _ in range(30):
        X, y = _random_dataset(rng, duplicates=True)
        a = _fit(X, y, initial_trees=None)
        b = _fit(X, y, initial_trees="cart")
        assert a.optimal_ and b.optimal_
        assert a.log_posterior_ == pytest.approx(b.log_posterior_, abs=1e-9)


def test_cart_seeding_beats_every_cart_depth_under_the_posterior():
    from sklearn.tree import DecisionTreeClassifier

    from arboretum.maptree.incumbents import sklearn_tree

    X, y = load_dataset("tic-tac-toe", return_X_y=True)
    clf = _fit(X, y, max_expansions=200)
    assert not clf.optimal_
    for depth in range(2, 7):
        est = DecisionTreeClassifier(max_depth=depth, random_state=0).fit(X, y)
        cart_lp = log_posterior(sklearn_tree(est, X.shape[1]), X, y)
        assert clf.log_posterior_ >= cart_lp - 1e-9, depth
    # Without seeding, 200 expansions are far worse than CART depth 4 (the reference's weakness).
    plain = _fit(X, y, max_expansions=200, initial_trees=None)
    assert plain.log_posterior_ < clf.log_posterior_ - 50


def test_user_initial_trees_and_errors():
    X, y = FIXTURES["B"]()
    start = Tree.from_paren("(0((2)1))", n_features=6)
    clf = _fit(X, y, initial_trees=[start], max_expansions=3)
    assert clf.log_posterior_ == pytest.approx(-31.1180671038, abs=1e-8)
    with pytest.raises(ValueError, match="initial_trees"):
        _fit(X, y, initial_trees="greedy")
    with pytest.raises(ValueError, match="initial_trees"):
        _fit(X, y, initial_trees=[Tree.from_paren("(0)", n_features=3)])
    with pytest.raises(TypeError, match="initial_trees"):
        _fit(X, y, initial_trees=["(0)"])


# ---------------------------------------------------------------------------------------------
# Sample weights
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n_classes", [2, 3])
def test_integer_weights_equal_replicated_rows(n_classes):
    """An integer weight w is exactly w copies of the row: same optimum, same co-optimal trees."""
    rng = np.random.default_rng(21 + n_classes)
    rho = (2.5,) * n_classes
    for _ in range(25):
        X, y = _random_dataset(rng, n_classes=n_classes, duplicates=True)
        w = rng.integers(1, 9, size=len(y))
        Xr, yr = np.repeat(X, w, axis=0), np.repeat(y, w)
        opt, trees = co_optimal_trees(Xr, yr, rho=rho)
        s = AndOrSearch(X, y, n_classes, rho=rho, sample_weight=w)
        r = s.run()
        tree = s.solution()
        assert r.optimal and r.upper_bound == pytest.approx(opt, abs=1e-8)
        assert tree.to_paren() in trees
        assert np.array_equal(tree.counts[0], np.bincount(y, weights=w, minlength=n_classes))
        assert -log_posterior(tree, X, y, rho=rho, sample_weight=w) == pytest.approx(opt, abs=1e-8)


def test_estimator_sample_weight():
    rng = np.random.default_rng(8)
    for _ in range(10):
        X, y = _random_dataset(rng, duplicates=True)
        w = rng.integers(0, 5, size=len(y))
        w[:2] = 1  # keep both classes
        keep = w > 0
        Xr, yr = np.repeat(X[keep], w[keep], axis=0), np.repeat(y[keep], w[keep])
        opt, trees = co_optimal_trees(Xr, yr)
        clf = MAPTreeClassifier().fit(X, y, sample_weight=w)
        assert clf.optimal_ and clf.log_posterior_ == pytest.approx(-opt, abs=1e-8)
        assert clf.tree_.to_paren() in trees
        ones = MAPTreeClassifier().fit(X, y, sample_weight=np.ones(len(y)))
        assert ones.log_posterior_ == pytest.approx(_fit(X, y).log_posterior_, abs=1e-12)
    X, y = FIXTURES["B"]()
    for bad, match in [(np.full(len(y), 0.5), "integers"), (-np.ones(len(y)), "integers"),
                       (np.zeros(len(y)), "zero"), (np.ones(3), "shape")]:
        with pytest.raises(ValueError, match=match):
            MAPTreeClassifier().fit(X, y, sample_weight=bad)


def test_a_certificate_with_a_non_finite_value_is_refused():
    """The last guard (``_store``): a certified search whose tree scores -inf is a bug, never an answer."""
    from arboretum.base import FitClock

    X, y = FIXTURES["B"]()
    s = AndOrSearch(X, y, 2)
    result = s.run()
    assert result.optimal
    clf = MAPTreeClassifier()
    clf.binarizer_ = None  # as a fit on 0/1 X leaves it
    with pytest.raises(FloatingPointError, match="non-finite log posterior"):
        clf._store(s, result, FitClock(None, time.perf_counter()), None, lambda tree: -np.inf)


def test_infinite_upper_bound_is_never_certified():
    """Regression: with UB = +inf (paper semantics, or alpha = 1 and beta = 0) a stopped search
    must not report a certificate (inf - LB <= tol * inf is true in floating point)."""
    X, y = FIXTURES["B"]()
    s = AndOrSearch(X, y, 2, ub_semantics="inf")
    r = s.run(max_expansions=0)  # the root is unexpanded: no partial solution yet
    assert not r.optimal and r.upper_bound == np.inf and r.stop_reason == "max_expansions"
    s = AndOrSearch(X, y, 2, alpha=1.0, beta=0.0)
    r = s.run(max_expansions=32)
    assert not r.optimal and r.upper_bound == np.inf
    clf = _fit(X, y, alpha=1.0, beta=0.0, max_expansions=32, initial_trees=None)
    assert not clf.optimal_ and clf.log_posterior_ == -np.inf


def test_no_split_is_one_group_of_equal_rows_and_the_groups_take_linear_memory():
    """``_no_split`` (a node's samples all share one feature vector) against brute force on random
    subsets of rows with many duplicates, and the search's groups in O(n) memory: a sample set per
    group took O(G n / 64) words (45 MiB on 50,000 rows of make_regression)."""
    rng = np.random.default_rng(3)
    for trial in range(30):
        n, f = int(rng.integers(2, 200)), int(rng.integers(1, 5))
        X = (rng.random((n, f)) < 0.5).astype(np.uint8)
        s = AndOrSearch(X, rng.integers(0, 2, n), 2, rho=[1.0, 1.0], probe=False)
        assert s.data.group_size.shape == (int((s.data.dup_group.max(initial=-1)) + 1),)
        for _ in range(20):
            members = rng.random(n) < rng.choice([0.02, 0.2, 0.9])
            if trial % 3 == 0 and members.any():  # a subset of one group of equal rows
                first = np.flatnonzero(members)[0]
                members &= (X == X[first]).all(axis=1)
            total = int(members.sum())
            if total == 0:
                continue
            expected = total == 1 or bool((X[members] == X[members][0]).all())
            got = K._no_split(pack_rows_mask(members), total, s.data.dup_group, s.data.group_size)
            assert got == expected
    X = (rng.random((20_000, 6)) < 0.5).astype(np.uint8)  # 64 distinct rows: every row shares its group
    s = AndOrSearch(X, rng.integers(0, 2, 20_000), 2, rho=[1.0, 1.0], probe=False)
    assert s.data.group_size.sum() == 20_000 and s.data.group_size.nbytes <= 8 * 64
