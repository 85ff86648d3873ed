"""MCMC and SMC samplers of the BCART posterior: exactness against the oracle, limits, estimator contract.

Statistical tests used (all with fixed seeds, so they are deterministic):

* **MCMC, batch-means Hotelling T².**  On data small enough to enumerate every
  tree (``arboretum.oracles.enumerate_trees``), take the J most probable trees
  (exact posterior >= 0.5 %, at most 8; the remaining mass is left out so the
  covariance is not singular).  The kept chain is cut into B = 50 consecutive
  batches and each batch gives the vector of its J visit frequencies.  The
  chain's integrated autocorrelation time on these data is 2-16 iterations and
  a batch holds 4 000, so batch means are nearly independent and normal, and
  ``T² = B d' S^-1 d`` (``d`` = mean batch frequency minus the exact posterior,
  ``S`` = covariance of the batch vectors) gives
  ``(B - J) / (J (B - 1)) T² ~ F(J, B - J)``.  We require p > 1e-3.
  (Checked while writing the samplers: dropping the ``1 / V`` term of the
  grow/prune proposal ratio gives p ~ 1e-20, forgetting that growing a node
  can make its parent non-prunable gives p < 1e-7; 60 correct runs give
  uniform p-values, KS p = 0.13.)
* **SMC, unbiasedness across islands.**  An SMC run's evidence estimate Z_i
  and its normalised weights ``W_i`` make ``x_i(T) = (Z_i / Z) * W_i(T)``
  an unbiased estimate of the exact ``P(T | X, y)`` for every tree ``T``
  (``Z`` from ``arboretum.oracles.log_evidence``).  With R = 400 independent
  islands of 50 particles, Hotelling's T² test of ``E[x_i] = exact`` on the J
  trees above (F(J, R - J)), p > 1e-3; the mean of ``Z_i / Z`` is tested
  against 1 by a z-test (|z| < 3.29, i.e. two-sided p > 1e-3), and the pooled
  ``log_evidence_estimate_`` must be within 0.05 nats of ``log Z``.  (With the
  ``1 / |V|`` factor dropped from the optimal proposal, p = 0 and z > 60.)
"""

from __future__ import annotations

import math
import pickle
import time

import numpy as np
import pytest
from fixtures import FIXTURES
from scipy import stats

from arboretum.bayes import log_posterior
from arboretum.oracles import enumerate_trees, log_evidence
from arboretum.datasets import load_dataset
from arboretum.samplers import MCMCTreeSampler, SMCTreeSampler, TreeSamples
from arboretum.samplers import mcmc as mcmc_module
from arboretum.samplers._base import Problem, encoding_from_tree, encoding_to_paren
from arboretum.tree import Tree

HEPATITIS_MAP = -63.297138069489954  # certified by MAPTree (tests/test_maptree.py)


def _random_data(seed: int, n: int = 12, f: int = 3, k: int = 2):
    rng = np.random.default_rng(seed)
    X = (rng.random((n, f)) < 0.5).astype(np.uint8)
    y = rng.integers(0, k, n)
    y[:k] = np.arange(k)
    return X, y


# name -> (X, y, prior parameters); every case has few enough trees to enumerate.
CASES = {
    "random-binary": (*_random_data(0), dict(alpha=0.95, beta=0.5, rho=(2.5, 2.5))),
    "random-3-class": (*_random_data(2, k=3), dict(alpha=0.95, beta=0.5, rho=(1.0, 1.0, 1.0))),
    "duplicates-C": (*FIXTURES["C"](), dict(alpha=0.95, beta=0.5, rho=(2.5, 2.5))),
    "xor-A": (*FIXTURES["A"](), dict(alpha=0.95, beta=0.5, rho=(2.5, 2.5))),
    "asymmetric-rho": (*_random_data(3), dict(alpha=0.8, beta=1.0, rho=(0.5, 3.0))),
    "alpha-one": (*_random_data(1), dict(alpha=1.0, beta=1.0, rho=(2.5, 2.5))),
}


def _exact(X, y, prior):
    """Exact posterior of every tree (paren -> probability), the log evidence and the test bins."""
    costs = dict(enumerate_trees(X, y, **prior))
    log_z = log_evidence(X, y, **prior)
    post = {t: math.exp(-c - log_z) for t, c in costs.items()}
    bins = [t for t in sorted(post, key=post.get, reverse=True) if post[t] >= 0.005][:8]
    return post, log_z, bins


def _hotelling_pvalue(samples: np.ndarray, mean: np.ndarray) -> float:
    """p-value of Hotelling's one-sample T² test of ``E[samples] == mean`` (rows are observations)."""
    n, dim = samples.shape
    d = samples.mean(axis=0) - mean
    cov = np.cov(samples, rowvar=False)
    t2 = n * d @ np.linalg.solve(cov, d)
    return float(stats.f.sf((n - dim) / (dim * (n - 1)) * t2, dim, n - dim))


def _distinct_ids(samples: TreeSamples) -> dict[str, int]:
    return {samples.paren(j): j for j in range(samples.n_distinct)}


# ---------------------------------------------------------------------------------------------
# Exactness against the enumerated posterior
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", list(CASES))
def test_mcmc_matches_exact_posterior(case):
    X, y, prior = CASES[case]
    post, _, bins = _exact(X, y, prior)
    m = MCMCTreeSampler(n_iterations=201_000, burn_in=1_000, random_state=0, **prior).fit(X, y)
    s = m.samples_
    assert len(s) == 200_000 and m.n_iterations_ == 201_000 and m.stop_reason_ == "completed"
    ids = _distinct_ids(s)
    assert set(ids) <= set(post)  # every visited tree is a non-degenerate tree
    # Frequencies of the J most probable trees in 50 batches of 4 000 iterations.
    hits = np.stack([s.index == ids.get(t, -1) for t in bins], axis=1).astype(float)
    batches = hits.reshape(50, -1, len(bins)).mean(axis=1)
    mean = np.array([post[t] for t in bins])
    assert _hotelling_pvalue(batches, mean) > 1e-3
    # Total variation over all trees, against 3 x the sum of per-tree standard errors
    # sqrt(p (1 - p) tau / N), tau the largest batch-means autocorrelation time of the bins.
    tau = np.max(len(s) / 50 * batches.var(axis=0, ddof=1) / (mean * (1 - mean)))
    p = np.array(list(post.values()))
    freq = np.bincount(s.index, minlength=s.n_distinct) / len(s)
    est = np.array([freq[ids[t]] if t in ids else 0.0 for t in post])
    assert 0.5 * np.abs(est - p).sum() < 3 * 0.5 * np.sqrt(p * (1 - p) * tau / len(s)).sum()
    # The recorded log posteriors are those of the trees.
    for j in np.unique(s.index)[:20]:
        i = int(np.flatnonzero(s.index == j)[0])
        assert m.log_posteriors_[i] == pytest.approx(log_posterior(s[i], X, y, **prior), abs=1e-9)
    assert m.log_posterior_ == pytest.approx(math.log(max(post.values())) + log_evidence(X, y, **prior))


@pytest.mark.parametrize("proposal", ["prior", "optimal"])
@pytest.mark.parametrize("case", list(CASES))
def test_smc_matches_exact_posterior_and_evidence(case, proposal):
    X, y, prior = CASES[case]
    post, log_z, bins = _exact(X, y, prior)
    n, islands = 50, 400
    smc = SMCTreeSampler(n_particles=n, n_islands=islands, proposal=proposal, random_state=0, **prior).fit(X, y)
    s = smc.samples_
    assert len(s) == n * islands and smc.weights_.sum() == pytest.approx(1.0)
    assert np.array_equal(smc.islands_, np.repeat(np.arange(islands), n))
    ids = _distinct_ids(s)
    assert set(ids) <= set(post)
    # Per island: x_i(T) = (Z_i / Z) W_i(T), unbiased for the exact posterior.
    w = smc.weights_.reshape(islands, n)
    w = w / w.sum(axis=1, keepdims=True)
    z_ratio = np.exp(smc.island_log_evidence_ - log_z)
    index = s.index.reshape(islands, n)
    x = np.stack([(w * (index == ids.get(t, -1))).sum(axis=1) for t in bins], axis=1) * z_ratio[:, None]
    assert _hotelling_pvalue(x, np.array([post[t] for t in bins])) > 1e-3
    z_score = (z_ratio.mean() - 1.0) / (z_ratio.std(ddof=1) / math.sqrt(islands))
    assert abs(z_score) < 3.29
    assert smc.log_evidence_estimate_ == pytest.approx(log_z, abs=0.05)
    # The pooled weighted particles (islands weighted by Z_i) are close to the posterior in total
    # variation: below 3 x the sum of per-tree standard errors of the ratio estimator (delta method
    # over islands, floored at the i.i.d. value for n * islands draws).
    trees = list(post)
    p = np.array([post[t] for t in trees])
    per_island = np.stack([(w * (index == ids.get(t, -1))).sum(axis=1) for t in trees], axis=1)
    pooled = np.bincount(s.index, weights=smc.weights_, minlength=s.n_distinct)
    est = np.array([pooled[ids[t]] if t in ids else 0.0 for t in trees])
    assert np.allclose(est, (z_ratio[:, None] * per_island).sum(axis=0) / z_ratio.sum())
    resid = z_ratio[:, None] * (per_island - est)
    se = np.maximum(resid.std(axis=0, ddof=1) / (z_ratio.mean() * math.sqrt(islands)),
                    np.sqrt(p * (1 - p) / (n * islands)))
    assert 0.5 * np.abs(est - p).sum() < 3 * 0.5 * se.sum()
    for i in range(0, len(s), 997):
        assert smc.log_posteriors_[i] == pytest.approx(log_posterior(s[i], X, y, **prior), abs=1e-9)


def test_single_tree_posterior():
    """Fixture D: all rows equal, so the single leaf is the only tree and Z is its likelihood."""
    X, y = FIXTURES["D"]()
    (leaf, cost), = list(enumerate_trees(X, y))
    for sampler in (MCMCTreeSampler(n_iterations=50, random_state=0), SMCTreeSampler(random_state=0)):
        sampler.fit(X, y)
        assert {t.to_paren() for t in sampler.samples_} == {leaf}
        assert sampler.log_posterior_ == pytest.approx(-cost)
    assert sampler.log_evidence_estimate_ == pytest.approx(-cost)


# ---------------------------------------------------------------------------------------------
# Best tree, samples and predictions
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda: MCMCTreeSampler(n_iterations=3000, burn_in=500, thin=5, random_state=1),
    lambda: SMCTreeSampler(n_particles=200, proposal="optimal", random_state=1),
])
def test_best_tree_and_samples_are_consistent(make):
    X, y = load_dataset("hepatitis", return_X_y=True)
    est = make().fit(X, y)
    assert est.log_posterior_ == pytest.approx(log_posterior(est.tree_, X, y), rel=1e-12, abs=1e-9)
    assert est.log_posterior_ >= est.log_posteriors_.max() - 1e-9
    assert est.log_posterior_ <= HEPATITIS_MAP + 1e-9
    s = est.samples_
    assert len(s) == len(est.log_posteriors_)
    for i in np.linspace(0, len(s) - 1, 7).astype(int):
        assert est.log_posteriors_[i] == pytest.approx(log_posterior(s[i], X, y), abs=1e-8)
    # Leaves hold the training counts and the posterior mean (c + rho) / (n + sum rho).
    tree = est.tree_
    assert tree.counts[0].sum() == len(y)
    leaves = tree.apply(X)
    assert np.array_equal(np.bincount(leaves, minlength=tree.n_nodes), tree.counts.sum(axis=1).astype(int)
                          * (tree.children_left == -1))
    assert np.allclose(tree.value, (tree.counts + 2.5) / (tree.counts.sum(1, keepdims=True) + 5.0))


def test_mcmc_sample_count_burn_in_and_thin():
    X, y = _random_data(5, n=20, f=4)
    m = MCMCTreeSampler(n_iterations=1003, burn_in=100, thin=7, random_state=0).fit(X, y)
    assert len(m.samples_) == (1003 - 100) // 7 == len(m.log_posteriors_)
    assert m.n_iterations_ == 1003
    assert set(m.acceptance_rates_) == {"grow", "prune", "change", "swap"}
    assert m.move_counts_.shape == (4, 2) and np.all(m.move_counts_[:, 1] <= m.move_counts_[:, 0])


def test_tree_samples_sequence():
    X, y = _random_data(0)
    m = MCMCTreeSampler(n_iterations=400, random_state=0).fit(X, y)
    s = m.samples_
    assert isinstance(s, TreeSamples) and len(s) == 400
    trees = list(s)
    assert all(isinstance(t, Tree) for t in trees)
    assert s[-1] is trees[-1] and s[5:8] == trees[5:8]
    same = np.flatnonzero(s.index == s.index[0])
    assert all(s[int(i)] is s[0] for i in same)  # identical trees are one object
    assert s.paren(s.index[3]) == s[3].to_paren()
    assert np.array_equal(encoding_from_tree(s[3], X.shape[1]), s.encoding(s.index[3]))
    with pytest.raises(IndexError):
        s[400]
    with pytest.raises(TypeError):
        s["a"]


def test_encoding_helpers_round_trip():
    X, y = _random_data(1)
    problem = Problem(X, y, np.array([2.5, 2.5]), 0.95, 0.5)
    for paren in ["", "(0)", "((1)0)", "(0(2))", "((1)0((2)1))", "(((2)1)0(2))"]:
        tree = Tree.from_paren(paren, 3)
        enc = encoding_from_tree(tree, 3)
        assert encoding_to_paren(enc) == paren
        built = problem.tree(enc)
        assert built.to_paren() == paren
        value, expected = problem.log_posterior(enc), log_posterior(tree, X, y)
        assert value == pytest.approx(expected, abs=1e-10) if np.isfinite(expected) else value == expected


def test_predict_proba_map_and_average():
    X, y = load_dataset("zoo-1", return_X_y=True)
    for est in (MCMCTreeSampler(n_iterations=500, burn_in=100, random_state=0).fit(X, y),
                SMCTreeSampler(n_particles=50, random_state=0).fit(X, y)):
        best = est.predict_proba(X, method="map")
        assert np.array_equal(best, est.tree_.predict_proba(X))
        assert np.array_equal(est.predict(X, method="map"), est.tree_.predict(X))
        avg = est.predict_proba(X)  # the posterior average is the default
        assert np.array_equal(avg, est.predict_proba(X, method="average"))
        assert np.allclose(avg.sum(axis=1), 1.0)
        weights = getattr(est, "weights_", np.full(len(est.samples_), 1.0 / len(est.samples_)))
        manual = sum(w * t.predict_proba(X) for w, t in zip(weights, est.samples_))
        assert np.allclose(avg, manual)
        assert np.array_equal(est.predict(X, method="average"), est.classes_[np.argmax(avg, axis=1)])
        assert est.score(X, y) > 0.9
        with pytest.raises(ValueError, match="method"):
            est.predict_proba(X, method="mean")


def test_multiclass_string_labels_and_dataframe():
    pd = pytest.importorskip("pandas")
    X, y = _random_data(4, n=40, f=5, k=3)
    labels = np.array(["ant", "bee", "cat"])[y]
    df = pd.DataFrame(X, columns=[f"f{j}" for j in range(5)])
    for est in (MCMCTreeSampler(rho=1.0, n_iterations=2000, random_state=0),
                SMCTreeSampler(rho=(1.0, 2.0, 3.0), n_particles=100, random_state=0)):
        est.fit(df, labels)
        assert list(est.classes_) == ["ant", "bee", "cat"] and est.rho_.shape == (3,)
        assert list(est.feature_names_in_) == list(df.columns)
        assert est.predict_proba(df).shape == (40, 3)
        assert est.predict_proba(df, method="average").shape == (40, 3)
        assert set(est.predict(df)) <= {"ant", "bee", "cat"}
        assert est.log_posterior_ == pytest.approx(
            log_posterior(est.tree_, X, y, alpha=0.95, beta=0.5, rho=est.rho_), rel=1e-12, abs=1e-9
        )
        if est.tree_.n_nodes > 1:
            assert "f" in est.export_text()
    with pytest.raises(ValueError, match="rho"):
        MCMCTreeSampler(rho=(2.5, 2.5)).fit(X, y)  # 2 entries, but there are 3 classes
    default = MCMCTreeSampler(n_iterations=50, random_state=0).fit(X, y)  # scalar default: any K
    assert np.array_equal(default.rho_, [2.5, 2.5, 2.5])


# ---------------------------------------------------------------------------------------------
# Real data
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_smc_reaches_hepatitis_map(seed):
    """Sanity: 100 particles find a tree within 3 nats of the certified MAP value -63.297."""
    X, y = load_dataset("hepatitis", return_X_y=True)
    smc = SMCTreeSampler(n_particles=100, random_state=seed).fit(X, y)
    assert HEPATITIS_MAP - 3.0 <= smc.log_posterior_ <= HEPATITIS_MAP + 1e-9
    assert np.isfinite(smc.log_evidence_estimate_) and smc.log_evidence_estimate_ > HEPATITIS_MAP


def test_mcmc_hepatitis_reaches_map_and_init_options():
    X, y = load_dataset("hepatitis", return_X_y=True)
    m = MCMCTreeSampler(n_iterations=20_000, random_state=0).fit(X, y)
    assert m.log_posterior_ >= HEPATITIS_MAP - 3.0
    map_tree = Tree.from_paren("((48)35)", X.shape[1])  # MAPTree's certified answer (README)
    started = MCMCTreeSampler(n_iterations=200, init=map_tree, random_state=0).fit(X, y)
    assert started.log_posterior_ == pytest.approx(HEPATITIS_MAP, abs=1e-9)
    leaf = MCMCTreeSampler(n_iterations=200, init="leaf", random_state=0).fit(X, y)
    assert leaf.log_posterior_ > -100


def test_alpha_one_starts_from_impossible_leaf():
    """With alpha = 1 the root must split; a chain started at the leaf leaves it at once."""
    X, y, prior = CASES["alpha-one"]
    m = MCMCTreeSampler(n_iterations=500, init="leaf", random_state=0, **prior).fit(X, y)
    finite = np.isfinite(m.log_posteriors_)
    first = int(np.argmax(finite))
    assert finite[-1] and np.all(finite[first:]) and first < 50  # it leaves and never comes back
    assert all(t.n_nodes > 1 for t in m.samples_[first:])
    assert np.isfinite(m.log_posterior_)


# ---------------------------------------------------------------------------------------------
# Determinism and limits
# ---------------------------------------------------------------------------------------------
def _signature(est):
    s = est.samples_
    return [s.paren(j) for j in s.index], est.log_posteriors_.tolist(), est.tree_.to_paren()


@pytest.mark.parametrize("make", [
    lambda seed: MCMCTreeSampler(n_iterations=5000, burn_in=100, random_state=seed),
    lambda seed: SMCTreeSampler(n_particles=60, n_islands=3, random_state=seed),
    lambda seed: SMCTreeSampler(n_particles=60, proposal="optimal", resampling="multinomial", random_state=seed),
])
def test_deterministic_given_random_state(make):
    X, y = load_dataset("zoo-1", return_X_y=True)
    a, b, c = make(7).fit(X, y), make(7).fit(X, y), make(8).fit(X, y)
    assert _signature(a) == _signature(b)
    assert _signature(a) != _signature(c)
    rs = np.random.RandomState(3)
    assert _signature(make(rs).fit(X, y)) == _signature(make(np.random.RandomState(3)).fit(X, y))


def test_mcmc_result_does_not_depend_on_chunking(monkeypatch):
    """The chain carries its own generator, so cutting it into many kernel calls changes nothing."""
    X, y = load_dataset("hepatitis", return_X_y=True)
    params = dict(n_iterations=30_000, burn_in=1000, thin=3, random_state=11)
    reference = MCMCTreeSampler(**params).fit(X, y)
    monkeypatch.setattr(mcmc_module, "_CHUNK_SECONDS", 1e-6)
    chunked = MCMCTreeSampler(**params).fit(X, y)
    assert _signature(chunked) == _signature(reference)
    assert np.array_equal(chunked.move_counts_, reference.move_counts_)


def _compile_samplers(X, y) -> None:
    """Compile both samplers' kernels outside a timed fit.

    On a clean clone (no numba cache) a test run alone would otherwise spend its time limit compiling.
    """
    MCMCTreeSampler(n_iterations=20, random_state=0).fit(X[:50], y[:50])
    SMCTreeSampler(n_particles=20, random_state=0).fit(X[:50], y[:50])


def test_time_limit_honoured():
    X, y = load_dataset("mushroom", return_X_y=True)
    _compile_samplers(X, y)
    # The SMC limit is a third of a complete run's time on this machine, so the limited run stops
    # part-way with steps done on any machine (a fixed 0.5 s left a slow CI runner no full step).
    t0 = time.perf_counter()
    complete = SMCTreeSampler(n_particles=20_000, random_state=0).fit(X, y)
    smc_limit = (time.perf_counter() - t0) / 3
    assert complete.stop_reason_ == "completed" and complete.n_steps_ >= 6
    for est, limit in ((MCMCTreeSampler(n_iterations=10**9, time_limit=0.5, random_state=0), 0.5),
                       (SMCTreeSampler(n_particles=20_000, time_limit=smc_limit, random_state=0), smc_limit)):
        t0 = time.perf_counter()
        est.fit(X, y)
        wall = time.perf_counter() - t0
        assert est.stop_reason_ == "time_limit"
        assert wall < limit * 1.1 + 1.0
        assert est.log_posterior_ == pytest.approx(log_posterior(est.tree_, X, y))
        assert len(est.samples_) > 0
        i = int(np.argmax(est.log_posteriors_))
        assert est.log_posteriors_[i] == pytest.approx(log_posterior(est.samples_[i], X, y), abs=1e-6)
    assert 1 <= est.n_steps_ < complete.n_steps_ and math.isnan(est.log_evidence_estimate_)
    assert np.isclose(est.weights_.sum(), 1.0)


def test_time_limit_during_burn_in_keeps_best_tree():
    X, y = load_dataset("hepatitis", return_X_y=True)
    _compile_samplers(X, y)
    m = MCMCTreeSampler(n_iterations=10**9, burn_in=10**9 - 1, time_limit=0.2, random_state=0).fit(X, y)
    assert m.stop_reason_ == "time_limit" and len(m.samples_) == 0 and m.n_iterations_ > 0
    assert m.log_posterior_ == log_posterior(m.tree_, X, y)
    assert m.predict(X, method="map").shape == (len(y),)
    with pytest.raises(ValueError, match="no samples"):
        m.predict_proba(X, method="average")


# ---------------------------------------------------------------------------------------------
# Estimator contract and errors
# ---------------------------------------------------------------------------------------------
def test_clone_pickle_and_grid_search():
    from sklearn.base import clone
    from sklearn.model_selection import GridSearchCV

    X, y = load_dataset("zoo-1", return_X_y=True)
    for est in (MCMCTreeSampler(alpha=0.9, n_iterations=300, random_state=0),
                SMCTreeSampler(alpha=0.9, n_particles=30, random_state=0)):
        assert clone(est).get_params() == est.get_params()
        est.fit(X, y)
        again = pickle.loads(pickle.dumps(est))
        assert np.array_equal(again.predict_proba(X, method="average"), est.predict_proba(X, method="average"))
        assert again.samples_[0].to_paren() == est.samples_[0].to_paren()
        gs = GridSearchCV(clone(est), {"beta": [0.5, 2.0]}, cv=3).fit(X, y)
        assert gs.best_score_ > 0.8


COMMON_BAD = [
    ({"alpha": 0.0}, ValueError, "alpha"),
    ({"alpha": 1.5}, ValueError, "alpha"),
    ({"beta": -1.0}, ValueError, "beta"),
    ({"rho": (0.0, 1.0)}, ValueError, "rho"),
    ({"rho": (1.0, 1.0, 1.0)}, ValueError, "rho"),
    ({"time_limit": 0}, ValueError, "time_limit"),
    ({"time_limit": "soon"}, TypeError, "time_limit"),
    ({"random_state": "x"}, ValueError, "random_state must be an integer"),
]
MCMC_BAD = COMMON_BAD + [
    ({"n_iterations": 0}, ValueError, "n_iterations"),
    ({"n_iterations": 10.0}, TypeError, "n_iterations"),
    ({"burn_in": -1}, ValueError, "burn_in"),
    ({"n_iterations": 10, "burn_in": 10}, ValueError, "burn_in"),
    ({"thin": 0}, ValueError, "thin"),
    ({"move_probabilities": (1, 1, 1)}, ValueError, "move_probabilities"),
    ({"move_probabilities": (1, 0, 1, 1)}, ValueError, "prune"),
    ({"move_probabilities": (1, 1, -1, 1)}, ValueError, "move_probabilities"),
    ({"init": "random"}, ValueError, "init"),
]
SMC_BAD = COMMON_BAD + [
    ({"n_particles": 0}, ValueError, "n_particles"),
    ({"n_islands": 0}, ValueError, "n_islands"),
    ({"n_islands": 2.5}, TypeError, "n_islands"),
    ({"ess_threshold": 1.5}, ValueError, "ess_threshold"),
    ({"ess_threshold": -0.1}, ValueError, "ess_threshold"),
    ({"proposal": "greedy"}, ValueError, "proposal"),
    ({"resampling": "stratified"}, ValueError, "resampling"),
]


@pytest.mark.parametrize("cls,params,error,match",
                         [(MCMCTreeSampler, *case) for case in MCMC_BAD]
                         + [(SMCTreeSampler, *case) for case in SMC_BAD])
def test_bad_parameters(cls, params, error, match):
    X, y = _random_data(0)
    with pytest.raises(error, match=match):
        cls(**params).fit(X, y)


@pytest.mark.parametrize("cls", [MCMCTreeSampler, SMCTreeSampler])
def test_bad_input(cls):
    from sklearn.exceptions import NotFittedError

    X, y = FIXTURES["B"]()
    est = cls(random_state=0)
    with pytest.raises(NotFittedError):
        est.predict(X)
    with pytest.raises(ValueError, match="binary"):
        cls(random_state=0, binarize=False).fit(X + 0.5, y)
    assert cls(random_state=0).fit(X + 0.5, y).binarizer_ is not None  # binarised by default
    Xn = X.astype(float)
    Xn[3, 2] = np.nan
    with pytest.raises(ValueError, match="missing value"):
        est.fit(Xn, y)
    with pytest.raises(ValueError, match="class"):
        est.fit(X, np.zeros(len(y)))
    with pytest.raises(ValueError):
        est.fit(X[:0], y[:0])
    with pytest.raises(ValueError):
        est.fit(X, y[:-1])
    with pytest.raises(ValueError):
        est.fit(X[:, 0], y)
    est.fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.predict(X[:, :3])
    with pytest.raises(ValueError, match="binary"):
        est.predict(X * 2)


def test_bad_initial_tree():
    X, y = _random_data(0)
    degenerate = Tree.from_paren("((0)0)", 3)  # splits on x0 twice on the same path
    with pytest.raises(ValueError, match="probability 0"):
        MCMCTreeSampler(init=degenerate).fit(X, y)
    with pytest.raises(ValueError, match="n_features"):
        MCMCTreeSampler(init=Tree.from_paren("(0)", 5)).fit(X, y)


# ---------------------------------------------------------------------------------------------
# Longer runs
# ---------------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("seed", range(5))
def test_mcmc_exactness_more_seeds(seed):
    X, y = _random_data(100 + seed, n=14, f=3, k=2 + seed % 2)
    prior = dict(alpha=0.95, beta=0.5, rho=(1.5,) * (2 + seed % 2))
    post, _, bins = _exact(X, y, prior)
    m = MCMCTreeSampler(n_iterations=1_001_000, burn_in=1000, random_state=seed, **prior).fit(X, y)
    ids = _distinct_ids(m.samples_)
    hits = np.stack([m.samples_.index == ids.get(t, -1) for t in bins], axis=1).astype(float)
    batches = hits.reshape(100, -1, len(bins)).mean(axis=1)
    assert _hotelling_pvalue(batches, np.array([post[t] for t in bins])) > 1e-3


@pytest.mark.slow
@pytest.mark.parametrize("name", ["anneal", "audiology", "australian-credit", "german-credit", "mushroom"])
def test_samplers_on_cp4im(name):
    X, y = load_dataset(name, return_X_y=True)
    for est in (MCMCTreeSampler(n_iterations=1000, random_state=0),
                SMCTreeSampler(n_particles=100, random_state=0)):
        est.fit(X, y)
        assert est.log_posterior_ == pytest.approx(log_posterior(est.tree_, X, y), rel=1e-12, abs=1e-9)
        assert np.all(np.isfinite(est.log_posteriors_))


def test_sklearn_check_estimator_failures_are_only_the_binary_refusal():
    """As for MAPTree (tests/test_sklearn_checks.py): scikit-learn's checks use continuous X."""
    import warnings

    from sklearn.utils.estimator_checks import check_estimator

    wrapped = {"check_positive_only_tag_during_fit", "check_fit2d_1sample", "check_fit2d_1feature"}
    for est in (MCMCTreeSampler(n_iterations=200, random_state=0), SMCTreeSampler(n_particles=20, random_state=0)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results = check_estimator(est, on_fail=None)
        assert sum(r["status"] == "passed" for r in results) >= 15
        for r in results:
            if r["status"] == "failed":
                msg = str(r["exception"])
                assert "requires binary (0/1) features" in msg or r["check_name"] in wrapped, (
                    f"{r['check_name']} failed for another reason: {msg}"
                )


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
def test_smc_exactness_more_seeds(seed):
    X, y = _random_data(200 + seed, n=14, f=3, k=2 + seed % 2)
    prior = dict(alpha=0.9, beta=0.8, rho=(1.5,) * (2 + seed % 2))
    post, log_z, bins = _exact(X, y, prior)
    n, islands = 30, 2000
    smc = SMCTreeSampler(n_particles=n, n_islands=islands, proposal=("prior", "optimal")[seed % 2],
                         random_state=seed, **prior).fit(X, y)
    ids = _distinct_ids(smc.samples_)
    w = smc.weights_.reshape(islands, n)
    w = w / w.sum(axis=1, keepdims=True)
    z_ratio = np.exp(smc.island_log_evidence_ - log_z)
    index = smc.samples_.index.reshape(islands, n)
    x = np.stack([(w * (index == ids.get(t, -1))).sum(axis=1) for t in bins], axis=1) * z_ratio[:, None]
    assert _hotelling_pvalue(x, np.array([post[t] for t in bins])) > 1e-3
    assert smc.log_evidence_estimate_ == pytest.approx(log_z, abs=0.03)


@pytest.mark.slow
def test_parity_fixture_e():
    """Fixture E (3-parity, 238 145 trees): both samplers against the enumerated posterior."""
    X, y = FIXTURES["E"]()
    prior = dict(alpha=0.95, beta=0.5, rho=(2.5, 2.5))
    post, log_z, bins = _exact(X, y, prior)
    mean = np.array([post[t] for t in bins])
    m = MCMCTreeSampler(n_iterations=2_001_000, burn_in=1000, random_state=0, **prior).fit(X, y)
    ids = _distinct_ids(m.samples_)
    hits = np.stack([m.samples_.index == ids.get(t, -1) for t in bins], axis=1).astype(float)
    assert _hotelling_pvalue(hits.reshape(100, -1, len(bins)).mean(axis=1), mean) > 1e-3
    smc = SMCTreeSampler(n_particles=100, n_islands=1000, proposal="optimal", random_state=0, **prior).fit(X, y)
    ids = _distinct_ids(smc.samples_)
    w = smc.weights_.reshape(1000, 100)
    w = w / w.sum(axis=1, keepdims=True)
    z_ratio = np.exp(smc.island_log_evidence_ - log_z)
    index = smc.samples_.index.reshape(1000, 100)
    x = np.stack([(w * (index == ids.get(t, -1))).sum(axis=1) for t in bins], axis=1) * z_ratio[:, None]
    assert _hotelling_pvalue(x, mean) > 1e-3
    assert smc.log_evidence_estimate_ == pytest.approx(log_z, abs=0.05)
