"""BCART-PCFG dynamic programmes against brute-force enumeration and the spec's oracle values.

The brute force here is written independently of the numba kernels: it works
on Python tuples of row indices, enumerates every split of every node by
feature and threshold, de-duplicates partitions with frozensets, and lists
every tree explicitly.  Other ``test_pcfg_*`` files import its helpers.

Spec references are to ``spec-001-bcart-pcfg.md`` §6 (T1-T18).
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
import pytest
from scipy.special import gammaln, logsumexp

from arboretum.bayes import ChipmanPrior, log_dirichlet_multinomial
from arboretum.pcfg import BoxGrammar, PhiPrior, build_node_store

LN_PHI = 2.0
D_XOR4 = (np.array([[0, 0], [0, 1], [1, 0], [1, 1]]), np.array([0, 1, 1, 0]))
D5 = (np.array([[0, 0], [0, 1], [1, 0], [1, 1], [2, 1]]), np.array([0, 1, 1, 0, 1]))
D2 = (np.array([[0, 0], [1, 1]]), np.array([0, 1]))


# ---------------------------------------------------------------------------
# brute force (independent of the kernels)
# ---------------------------------------------------------------------------


class BruteForce:
    """Every tree of the BCART-PCFG tree space (or the Chipman/MAPTree space) of integer data.

    A tree is a nested tuple: ``("leaf", rows)`` or
    ``("split", rows, f, lo, hi, left, right)`` where ``x_f <= lo`` goes left
    and ``hi`` is the next value of ``x_f`` present in ``rows``.
    """

    def __init__(self, X: np.ndarray, y: np.ndarray, n_classes: int, alpha: np.ndarray, dedupe: bool = True):
        self.X = np.asarray(X)
        self.y = np.asarray(y)
        self.n_classes = n_classes
        self.alpha = np.asarray(alpha, dtype=np.float64)
        self.dedupe = dedupe
        self.root = tuple(range(self.X.shape[0]))

    @functools.lru_cache(maxsize=None)
    def splits(self, rows: tuple[int, ...]) -> list[tuple[int, int, int, tuple, tuple]]:
        out, seen = [], set()
        for f in range(self.X.shape[1]):
            values = sorted({int(self.X[i, f]) for i in rows})
            for lo, hi in zip(values, values[1:]):
                left = tuple(i for i in rows if self.X[i, f] <= lo)
                right = tuple(i for i in rows if self.X[i, f] > lo)
                key = frozenset((left, right))
                if self.dedupe and key in seen:
                    continue
                seen.add(key)
                out.append((f, lo, hi, left, right))
        return out

    @functools.lru_cache(maxsize=None)
    def trees(self, rows: tuple[int, ...]) -> list[tuple]:
        out = [("leaf", rows)]
        for f, lo, hi, left, right in self.splits(rows):
            for tl in self.trees(left):
                for tr in self.trees(right):
                    out.append(("split", rows, f, lo, hi, tl, tr))
        return out

    def all_trees(self) -> list[tuple]:
        return self.trees(self.root)

    def log_l(self, rows: tuple[int, ...]) -> float:
        counts = np.bincount(self.y[list(rows)], minlength=self.n_classes)
        a = self.alpha
        return float(np.sum(gammaln(counts + a) - gammaln(a)) - (gammaln(len(rows) + a.sum()) - gammaln(a.sum())))

    @staticmethod
    def leaves(tree: tuple) -> list[tuple[int, ...]]:
        if tree[0] == "leaf":
            return [tree[1]]
        return BruteForce.leaves(tree[5]) + BruteForce.leaves(tree[6])

    @staticmethod
    def nodes(tree: tuple) -> list[tuple[int, ...]]:
        if tree[0] == "leaf":
            return [tree[1]]
        return [tree[1]] + BruteForce.nodes(tree[5]) + BruteForce.nodes(tree[6])

    def log_weight_phi(self, tree: tuple, log_phi: float) -> float:
        """``log(phi ** -b * prod L)``."""
        leaves = self.leaves(tree)
        return sum(self.log_l(r) for r in leaves) - len(leaves) * log_phi

    def log_weight_chipman(self, tree: tuple, prior: ChipmanPrior, depth: int = 0) -> float:
        """``log P(T, Y | X)`` under the Chipman prior (uniform feature, then uniform threshold)."""
        rows = tree[1]
        splits = self.splits(rows)
        if tree[0] == "leaf":
            stop = float(prior.log_p_stop(depth)) if splits else 0.0
            return stop + self.log_l(rows)
        f = tree[2]
        per_feature = {}
        for g, *_ in splits:
            per_feature[g] = per_feature.get(g, 0) + 1
        log_choice = -math.log(len(per_feature)) - math.log(per_feature[f])
        return (float(prior.log_p_split(depth)) + log_choice
                + self.log_weight_chipman(tree[5], prior, depth + 1)
                + self.log_weight_chipman(tree[6], prior, depth + 1))

    def route(self, tree: tuple, q: np.ndarray) -> tuple[int, ...]:
        """Leaf of ``q``: left iff ``q_f < (lo + hi) / 2`` (the node-local midpoint, spec §4.2)."""
        while tree[0] != "leaf":
            _, _, f, lo, hi, tl, tr = tree
            tree = tl if q[f] < (lo + hi) / 2 else tr
        return tree[1]

    def predictive(self, rows: tuple[int, ...]) -> np.ndarray:
        counts = np.bincount(self.y[list(rows)], minlength=self.n_classes)
        return (counts + self.alpha) / (len(rows) + self.alpha.sum())


def grammar_of(X, y, n_classes=None, alpha=1.0, prior=None, **kwargs):
    """The store and grammar of integer data used directly as codes."""
    X = np.asarray(X, dtype=np.int32)
    y = np.asarray(y, dtype=np.int64)
    n_classes = int(y.max()) + 1 if n_classes is None else n_classes
    prior = PhiPrior(LN_PHI) if prior is None else prior
    chipman = isinstance(prior, ChipmanPrior)
    store = build_node_store(X, y, n_classes, dedupe=not chipman, chipman_weights=chipman, **kwargs)
    a = np.broadcast_to(np.asarray(alpha, dtype=np.float64), (n_classes,)).copy()
    return store, BoxGrammar(store, a, prior)


def node_index(store) -> dict[tuple[int, ...], int]:
    """Grammar node id of every point set."""
    return {tuple(store.members(v).tolist()): v for v in range(store.n_nodes)}


def derivation_probability(store, grammar, tree: tuple, index: dict) -> float:
    """Product of the PCFG* production probabilities used by a brute-force tree."""
    stop_p, edge_p = grammar.probabilities()
    prob, stack = 1.0, [(tree, 0)]
    while stack:
        t, d = stack.pop()
        v = index[t[1]]
        if t[0] == "leaf":
            prob *= stop_p[v, d]
            continue
        children = {index[t[5][1]], index[t[6][1]]}
        matches = [e for e in store.splits(v) if {int(store.edge_a[e]), int(store.edge_b[e])} == children
                   and (store.deduplicated or int(store.edge_f[e]) == t[2])]
        assert len(matches) == 1, "every brute-force split is exactly one grammar edge"
        prob *= edge_p[matches[0], d]
        stack += [(t[5], d + grammar.level_step), (t[6], d + grammar.level_step)]
    return prob


def random_tiny(seed: int):
    """A random tiny dataset with ties, duplicate rows and repeated columns, plus parameters."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 7))
    F = int(rng.integers(1, 4))
    C = int(rng.integers(1, 4))
    X = rng.integers(0, int(rng.integers(2, 5)), (n, F))
    if F >= 2 and rng.random() < 0.25:
        X[:, 1] = X[:, 0] if rng.random() < 0.5 else X[:, 0].max() - X[:, 0]
    y = rng.integers(0, C, n)
    alpha = rng.uniform(0.3, 3.0, C)
    log_phi = float(rng.choice([math.log(0.5), 0.0, 2.0]))
    return X, y, C, alpha, log_phi


# ---------------------------------------------------------------------------
# formula level (T1-T8, T14)
# ---------------------------------------------------------------------------


def test_t1_leaf_likelihood_values():
    a = np.ones(2)
    fig1 = sum(float(log_dirichlet_multinomial(c, a)) for c in ([1, 2], [0, 2], [3, 1]))
    assert fig1 == pytest.approx(math.log(1 / 720), abs=1e-12)
    for counts, value in (([2, 2], 1 / 30), ([1, 1], 1 / 6), ([1, 0], 1 / 2), ([2, 1], 1 / 12)):
        assert float(log_dirichlet_multinomial(counts, a)) == pytest.approx(math.log(value), abs=1e-12)


def test_t2_properness_and_t3_closed_forms():
    store, g = grammar_of(*D_XOR4)
    stop_p, edge_p = g.probabilities()
    for v in range(store.n_nodes):
        assert stop_p[v, 0] + edge_p[list(store.splits(v)), 0].sum() == pytest.approx(1.0, abs=1e-12)
    phi = math.exp(2.0)
    closed = 1 / 30 + (2 / phi) * (1 / 6 + 1 / (4 * phi)) ** 2
    assert g.log_Q_root == pytest.approx(math.log(closed), abs=1e-12)
    assert g.log_Q_root == pytest.approx(-3.1187045094759, abs=1e-12)
    _, g1 = grammar_of(*D_XOR4, prior=PhiPrior(0.0))
    assert math.exp(g1.log_Q_root) == pytest.approx(137 / 360, abs=1e-14)
    _, g5 = grammar_of(*D5)
    assert g5.log_Q_root == pytest.approx(-3.66307096515151, abs=1e-12)


def test_t7_root_productions_d5():
    store, g = grammar_of(*D5)
    stop_p, edge_p = g.probabilities()
    assert stop_p[0, 0] == pytest.approx(0.649681135600955, abs=1e-12)
    root = list(store.splits(0))
    assert [(int(store.edge_f[e]), int(store.edge_m[e])) for e in root] == [(0, 0), (0, 1), (1, 0)]
    expected = [0.116846296885439, 0.116626270628167, 0.116846296885439]
    np.testing.assert_allclose(edge_p[root, 0], expected, atol=1e-12)
    members = [sorted(store.members(int(store.edge_a[e])).tolist()) for e in root]
    assert members == [[0, 1], [0, 1, 2, 3], [0, 2]]  # {a,b} | {a,b,c,d} | {a,c}


def test_t8_map_values_and_tie_break():
    _, g = grammar_of(*D_XOR4)
    assert g.log_Qmax_root == pytest.approx(math.log(1 / 30), abs=1e-12)
    assert g.best[0, 0] == -1
    assert math.exp(g.log_Qmax_root - g.log_Q_root) == pytest.approx(0.753902015613322, abs=1e-12)
    store, g1 = grammar_of(*D_XOR4, prior=PhiPrior(0.0))
    assert math.exp(g1.log_Qmax_root) == pytest.approx(1 / 16, abs=1e-14)
    assert math.exp(g1.log_Qmax_root - g1.log_Q_root) == pytest.approx(22.5 / 137, abs=1e-12)
    md = g1.map_derivation()
    assert md.node.size == 7 and store.edge_f[md.edge[0]] == 0  # canonical tie-break: x_0 at the root
    _, g5 = grammar_of(*D5)
    assert g5.log_Qmax_root == pytest.approx(-4.0943445622221, abs=1e-12)
    assert math.exp(g5.log_Qmax_root - g5.log_Q_root) == pytest.approx(0.649681135600955, abs=1e-12)


def test_t14_derived_quantities_d5():
    _, g = grammar_of(*D5)
    assert g.log_prior_inside() - LN_PHI == pytest.approx(-1.53986442353349, abs=1e-12)  # log Z(X)
    assert g.log_evidence() == pytest.approx(-4.12320654161801, abs=1e-12)
    assert g.expected_leaves() == pytest.approx(1.49523135957337, abs=1e-12)
    p_node, p_leaf = g.node_marginals()
    assert p_node[0] == pytest.approx(1.0) and p_leaf.sum() == pytest.approx(g.expected_leaves(), abs=1e-12)


# ---------------------------------------------------------------------------
# tree counts and de-duplication (T4, T5)
# ---------------------------------------------------------------------------


def test_t4_tree_counts_one_dimension():
    expected = [1, 2, 5, 15, 51, 188, 731, 2950]
    for m, count in enumerate(expected, start=1):
        store, g = grammar_of(np.arange(m)[:, None], np.zeros(m, dtype=int), n_classes=1)
        assert g.n_trees() == count
        assert g.log_n_trees() == pytest.approx(math.log(count), abs=1e-9)
    # the recursion c(m) = 1 + sum_k c(k) c(m - k) continues the sequence
    c = [0, 1]
    for m in range(2, 16):
        c.append(1 + sum(c[k] * c[m - k] for k in range(1, m)))
    _, g = grammar_of(np.arange(15)[:, None], np.zeros(15, dtype=int), n_classes=1)
    assert g.n_trees() == c[15]


@pytest.mark.parametrize("data, count", [(D_XOR4, 9), (D5, 30), (D2, 2),
                                         ((np.array([[0], [0], [1], [2]]), np.zeros(4, dtype=int)), 5)])
def test_t4_tree_counts_small(data, count):
    X, y = data
    _, g = grammar_of(X, y, n_classes=2)
    assert g.n_trees() == count == len(BruteForce(X, y, 2, np.ones(2)).all_trees())


def test_t5_deduplication_of_duplicate_and_reversed_columns():
    x = np.arange(4)[:, None]
    y = np.array([0, 1, 1, 0])
    _, base = grammar_of(x, y)
    for extra in (x, 3 - x):
        X = np.hstack([x, extra])
        store, g = grammar_of(X, y)
        assert g.n_trees() == 15
        assert g.log_Q_root == pytest.approx(base.log_Q_root, abs=1e-12)
        assert g.log_Qmax_root == pytest.approx(base.log_Qmax_root, abs=1e-12)
        assert set(store.edge_f.tolist()) == {0}  # the representative is on the first feature
        plain = build_node_store(X.astype(np.int32), y, 2, dedupe=False, chipman_weights=True)
        assert BoxGrammar(plain, np.ones(2), ChipmanPrior()).n_trees() == 71


def test_canonical_representative_is_first_feature_then_threshold():
    # D2: both features separate the two points; one split, on feature 0, left = the point with x_0 = 0
    store, g = grammar_of(*D2)
    assert store.n_edges == 1 and int(store.edge_f[0]) == 0 and int(store.edge_m[0]) == 0
    assert store.members(int(store.edge_a[0])).tolist() == [0]
    # a reversed copy in front: the representative is on feature 0 with feature 0's orientation
    X = np.array([[1, 0], [0, 1]])
    store, _ = grammar_of(X, np.array([0, 1]))
    assert store.n_edges == 1 and int(store.edge_f[0]) == 0
    assert store.members(int(store.edge_a[0])).tolist() == [1]
    # the spec's D2 query pins the convention: q = (0, 1) goes left on x_0 (T13)
    np.testing.assert_allclose(g.predict_bma(np.array([[0, 1]], dtype=np.int32)),
                               [[0.52812447, 0.47187553]], atol=1e-8)


# ---------------------------------------------------------------------------
# DP == brute force on many tiny datasets (T3, T6, T8, T14)
# ---------------------------------------------------------------------------

TINY_SEEDS = list(range(130))


@pytest.mark.parametrize("seed", TINY_SEEDS)
def test_dp_equals_bruteforce_on_tiny_data(seed):
    X, y, C, alpha, log_phi = random_tiny(seed)
    store, g = grammar_of(X, y, n_classes=C, alpha=alpha, prior=PhiPrior(log_phi))
    bf = BruteForce(X, y, C, alpha)
    trees = bf.all_trees()
    weights = np.array([bf.log_weight_phi(t, log_phi) for t in trees])
    # T3: Q(N_0) = phi * sum_T phi**-b prod L;  T8: Q_max = max
    assert g.log_Q_root == pytest.approx(log_phi + logsumexp(weights), rel=1e-10, abs=1e-10)
    assert g.log_Qmax_root == pytest.approx(log_phi + weights.max(), rel=1e-10, abs=1e-10)
    # the extracted MAP tree attains the maximum
    md = g.map_derivation()
    map_leaves = [tuple(store.members(int(v)).tolist()) for v, e in zip(md.node, md.edge) if e < 0]
    map_weight = sum(bf.log_l(r) for r in map_leaves) - len(map_leaves) * log_phi
    assert map_weight == pytest.approx(weights.max(), abs=1e-9)
    # counts, evidence, expected leaves
    assert g.n_trees() == len(trees)
    log_prior = np.array([-len(bf.leaves(t)) * log_phi for t in trees])
    assert g.log_evidence() == pytest.approx(logsumexp(weights) - logsumexp(log_prior), abs=1e-9)
    post = np.exp(weights - logsumexp(weights))
    b = np.array([len(bf.leaves(t)) for t in trees])
    assert g.expected_leaves() == pytest.approx(float(post @ b), rel=1e-9)
    assert g.expected_leaves(prior=True) == pytest.approx(float(np.exp(log_prior - logsumexp(log_prior)) @ b),
                                                          rel=1e-9)
    # T6: each tree's derivation probability is its posterior probability (and they sum to 1)
    index = node_index(store)
    probs = np.array([derivation_probability(store, g, t, index) for t in trees])
    np.testing.assert_allclose(probs, post, rtol=1e-9, atol=1e-15)
    assert probs.sum() == pytest.approx(1.0, abs=1e-12)
    # node marginals
    p_node, p_leaf = g.node_marginals()
    for rows, v in index.items():
        occurs = sum(p for p, t in zip(post, trees) if rows in bf.nodes(t))
        as_leaf = sum(p for p, t in zip(post, trees) if rows in bf.leaves(t))
        assert p_node[v] == pytest.approx(occurs, abs=1e-10)
        assert p_leaf[v] == pytest.approx(as_leaf, abs=1e-10)


@pytest.mark.parametrize("seed", TINY_SEEDS[:40])
def test_chipman_grammar_equals_bruteforce(seed):
    X, y, C, alpha, _ = random_tiny(seed)
    prior = ChipmanPrior(*[(0.95, 0.5), (0.5, 2.0), (1.0, 0.0)][seed % 3])
    store, g = grammar_of(X, y, n_classes=C, alpha=alpha, prior=prior)
    bf = BruteForce(X, y, C, alpha, dedupe=False)
    trees = bf.all_trees()
    weights = np.array([bf.log_weight_chipman(t, prior) for t in trees])
    assert g.n_trees() == len(trees)
    assert g.log_evidence() == pytest.approx(logsumexp(weights), abs=1e-9)
    assert g.log_Qmax_root == pytest.approx(weights.max(), abs=1e-9)
    post = np.exp(weights - logsumexp(weights))
    index = node_index(store)
    probs = np.array([derivation_probability(store, g, t, index) for t in trees])
    np.testing.assert_allclose(probs, post, rtol=1e-9, atol=1e-15)
    b = np.array([len(bf.leaves(t)) for t in trees])
    assert g.expected_leaves() == pytest.approx(float(post @ b), rel=1e-9)


# ---------------------------------------------------------------------------
# node set (T18) and degenerate data (A17)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_t18_node_set_equals_all_box_point_sets(seed):
    rng = np.random.default_rng(100 + seed)
    X = rng.integers(0, 4, (12, 2))
    store, _ = grammar_of(X, rng.integers(0, 2, 12), n_classes=2)
    boxes = set()
    for lo0, hi0, lo1, hi1 in itertools.product(range(4), repeat=4):
        if lo0 <= hi0 and lo1 <= hi1:
            inside = (X[:, 0] >= lo0) & (X[:, 0] <= hi0) & (X[:, 1] >= lo1) & (X[:, 1] <= hi1)
            if inside.any():
                boxes.add(tuple(np.flatnonzero(inside).tolist()))
    assert set(node_index(store)) == boxes


def test_degenerate_data():
    # identical rows with different labels never separate; n = 1 is a single leaf with probability 1
    store, g = grammar_of(np.zeros((3, 2)), np.array([0, 1, 1]))
    assert store.n_nodes == 1 and g.n_trees() == 1
    assert g.log_Q_root == pytest.approx(g.logL[0]) and g.map_derivation().node.size == 1
    store, g = grammar_of(np.array([[5, 7]]), np.array([0]), n_classes=2)
    assert g.n_trees() == 1 and g.log_Qmax_root == g.log_Q_root
    # a constant feature contributes no splits
    X = np.array([[0, 3], [1, 3], [2, 3]])
    store, _ = grammar_of(X, np.array([0, 1, 0]))
    assert set(store.edge_f.tolist()) == {0}
