"""MAPTreeRegressor: exactness against the oracle, the admissible bound, limits and the estimator contract."""

from __future__ import annotations

import json
import math
import pickle
import re
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arboretum import MAPTreeRegressor
from arboretum.bayes import NIGPrior, log_posterior_regression
from arboretum.maptree.bounds import group_spread_terms, leaf_share_terms, nig_bound_tables
from arboretum.oracles import RegressionOracle, co_optimal_trees_regression, exact_map_regression
from arboretum.maptree import RegressionSearch
from arboretum.tree import Tree


PRIORS = [(0.95, 0.5), (0.5, 4.0), (0.999, 0.1), (0.8, 1.0), (0.2, 8.0)]
LEAF_PRIORS = [  # (prior_mean, prior_kappa, prior_shape, prior_scale); None = from the data
    (None, 1 / 3, 1.5, None),
    (0.0, 1.0, 2.0, 1.0),
    (None, 0.05, 0.5, None),
    (2.0, 5.0, 4.0, 0.1),
    (None, 1.0, 1.0, 3.0),
]


def _random_dataset(rng, *, duplicates=False):
    """Binary X (n <= 14, p <= 4) and real y of varied scale, with ties and constant targets at times."""
    n = int(rng.integers(1, 15))
    p = int(rng.integers(1, 5))
    X = (rng.random((n, p)) < rng.uniform(0.2, 0.8)).astype(np.uint8)
    if duplicates and n >= 4:
        src, dst = rng.integers(0, n, size=n // 3), rng.integers(0, n, size=n // 3)
        X[dst] = X[src]
    kind = int(rng.integers(0, 4))
    if kind == 0:  # signal on the first feature
        y = 3.0 * X[:, 0] + rng.normal(size=n)
    elif kind == 1:  # integer targets with ties
        y = rng.integers(0, 4, size=n).astype(float)
    elif kind == 2:  # constant
        y = np.full(n, float(rng.normal()))
    else:  # large offset, small scale
        y = 1e4 + 1e-2 * rng.normal(size=n) + 5e-2 * X[:, -1]
    return X, y


def _prior_kwargs(i):
    mean, kappa, shape, scale = LEAF_PRIORS[i % len(LEAF_PRIORS)]
    return dict(prior_mean=mean, prior_kappa=kappa, prior_shape=shape, prior_scale=scale)


def _nig(y, w, kw):
    return NIGPrior.from_data(
        y, w, mean=kw["prior_mean"], kappa=kw["prior_kappa"], shape=kw["prior_shape"], scale=kw["prior_scale"]
    )


def _node_subsets(s, X) -> dict:
    """Sample set of every stored OR node, rebuilt from the AND structure (parents come first)."""
    subsets = {0: np.ones(X.shape[0], bool)}
    for a in range(int(s.counters[1])):
        p, f = int(s.and_parent[a]), int(s.and_feature[a])
        subsets[int(s.and_child0[a])] = subsets[p] & (X[:, f] == 0)
        subsets[int(s.and_child1[a])] = subsets[p] & (X[:, f] == 1)
    return subsets


@pytest.fixture(scope="module")
def diabetes():
    from sklearn.datasets import load_diabetes

    return load_diabetes(return_X_y=True, as_frame=True)


# ---------------------------------------------------------------------------------------------
# The leaf likelihood
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "y,w,prior",
    [
        ([0.5, -0.3], None, NIGPrior(mean=0.0, kappa=1.0, shape=2.0, scale=1.0)),
        ([1.2, 2.0, 0.7], [1, 2, 1], NIGPrior(mean=1.0, kappa=0.3, shape=1.5, scale=0.4)),
    ],
)
def test_closed_form_matches_quadrature(y, w, prior):
    """log p(y_L) = log of the double integral over (mu, s2) of the NIG model (s2 = exp(t))."""
    from scipy import integrate

    y = [float(v) for v in y]
    w = [1.0] * len(y) if w is None else [float(v) for v in w]
    a0, b0, k0, m0 = prior.shape, prior.scale, prior.kappa, prior.mean

    def integrand(mu, t):
        s2 = math.exp(t)
        log_lik = sum(wi * (-0.5 * math.log(2 * math.pi * s2) - (yi - mu) ** 2 / (2 * s2)) for yi, wi in zip(y, w))
        log_mu = -0.5 * math.log(2 * math.pi * s2 / k0) - k0 * (mu - m0) ** 2 / (2 * s2)
        log_s2 = a0 * math.log(b0) - math.lgamma(a0) - (a0 + 1) * t - b0 / s2  # inverse-gamma density
        return math.exp(log_lik + log_mu + log_s2 + t)  # ds2 = s2 dt

    value, err = integrate.dblquad(integrand, -25, 12, -30, 30, epsabs=0, epsrel=1e-9)
    assert err < 1e-8 * value
    assert math.log(value) == pytest.approx(prior.log_marginal(y, w), abs=1e-7)
    # Integer weights are replication.
    rep = np.repeat(y, np.asarray(w, dtype=int))
    assert prior.log_marginal(rep) == pytest.approx(prior.log_marginal(y, w), abs=1e-12)


def test_leaf_identity_and_perfect_leaf():
    """NLL(L) = L0(n) + a_n log(b_n / b0), and L0(n) is the cost of n targets equal to the prior mean."""
    rng = np.random.default_rng(3)
    prior = NIGPrior(mean=0.7, kappa=0.5, shape=1.5, scale=0.8)
    for n in (1, 2, 5, 30):
        y = rng.normal(size=n)
        ybar, ss = y.mean(), ((y - y.mean()) ** 2).sum()
        bn = prior.scale + ss / 2 + prior.kappa * n * (ybar - prior.mean) ** 2 / (2 * (prior.kappa + n))
        nll = -prior.log_marginal(y)
        assert nll == pytest.approx(prior.perfect_cost(n) + (prior.shape + n / 2) * math.log(bn / prior.scale))
        assert -prior.log_marginal(np.full(n, prior.mean)) == pytest.approx(prior.perfect_cost(n))


# ---------------------------------------------------------------------------------------------
# The bound, directly: below the best cut of the targets into leaves
# ---------------------------------------------------------------------------------------------
def _set_partitions(items):
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for part in _set_partitions(rest):
        for i in range(len(part)):
            yield part[:i] + [[first] + part[i]] + part[i + 1 :]
        yield [[first]] + part


def test_bound_tables_never_exceed_the_best_partition():
    """B[N] and L0[N] + Q are below min over all partitions (respecting groups for Q) of sum NLL."""
    rng = np.random.default_rng(7)
    for trial in range(25):
        n = int(rng.integers(1, 8))
        y = np.round(rng.normal(size=n) * rng.choice([0.1, 1.0, 30.0]), int(rng.integers(0, 3)))
        w = rng.integers(1, 4, size=n) if trial % 2 else np.ones(n, dtype=np.int64)
        groups = rng.integers(0, max(1, n // 2), size=n)
        prior = NIGPrior.from_data(y, w, kappa=rng.choice([0.1, 1 / 3, 3.0]), shape=rng.choice([0.5, 1.5, 5.0]))
        B, L0 = nig_bound_tables(y, w, prior)
        q = group_spread_terms(y, w, groups, prior)
        assert B.shape == (w.sum() + 1,) and np.all(B >= L0 - 1e-9 * (1 + np.abs(L0)))
        best = best_grouped = math.inf
        for part in _set_partitions(list(range(n))):
            cost = sum(-prior.log_marginal(y[list(L)], w[list(L)]) for L in part)
            best = min(best, cost)
            if all(len({int(groups[i]) for i in L} & {int(groups[j]) for M in part if M is not L for j in M}) == 0
                   for L in part):
                best_grouped = min(best_grouped, cost)
        N = int(w.sum())
        assert B[N] <= best + 1e-9
        assert L0[N] + float(np.dot(w, q)) <= best_grouped + 1e-9


@settings(max_examples=60, deadline=None)
@given(
    y=st.lists(st.floats(-5, 5).filter(lambda v: v == 0 or abs(v) > 1e-100), min_size=1, max_size=7),
    data=st.data(),
    kappa=st.sampled_from([0.05, 1 / 3, 3.0]),
    shape=st.sampled_from([0.5, 1.5, 5.0]),
    prior_mean=st.one_of(st.none(), st.floats(-8, 8)),
)
def test_leaf_shares_never_exceed_the_best_partition_of_any_node(y, data, kappa, shape, prior_mean):
    """sum_{i in S} t_i <= min over cuts of S (whole groups per leaf) of sum NLL, for every union S of groups."""
    y = np.asarray(y)
    n = y.size
    w = np.asarray(data.draw(st.lists(st.integers(1, 3), min_size=n, max_size=n)))
    groups = np.unique(np.asarray(data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))),
                       return_inverse=True)[1]
    prior = NIGPrior.from_data(y, w, mean=prior_mean, kappa=kappa, shape=shape)
    budget = data.draw(st.sampled_from([100_000_000, 0]))  # windows, or the group-only fallback
    t = leaf_share_terms(y, w, groups, prior, work_budget=budget)
    G = groups.max() + 1
    for mask in range(1, 2**G):
        chosen = [g for g in range(G) if mask >> g & 1]
        best = min(
            sum(-prior.log_marginal(y[np.isin(groups, L)], w[np.isin(groups, L)]) for L in part)
            for part in _set_partitions(chosen)
        )
        assert t[np.isin(groups, chosen)].sum() <= best + 1e-9 * (1 + abs(best))


def test_leaf_shares_beat_the_tables_on_a_noise_cluster():
    """A cluster of 40 noisy targets away from the prior mean: the shares close over half of the gap
    between the tables' bound and its leaf cost (8.98 between 4.00 and 13.03)."""
    rng = np.random.default_rng(0)
    y = np.r_[rng.normal(0, 0.3, 40), rng.normal(3, 0.3, 40)]
    prior = NIGPrior.from_data(y)
    t = leaf_share_terms(y, None, np.arange(80), prior)
    B, L0 = nig_bound_tables(y, None, prior)
    leaf = -prior.log_marginal(y[:40])
    assert t[:40].sum() <= leaf and t[:40].sum() - B[40] > 0.5 * (leaf - B[40])


def test_bound_is_stronger_than_the_perfect_leaf_on_spread_targets():
    y = np.linspace(-3, 3, 40)
    prior = NIGPrior.from_data(y)
    B, L0 = nig_bound_tables(y, None, prior)
    assert B[40] > L0[40] + 5.0


# ---------------------------------------------------------------------------------------------
# Exactness against the DP oracle
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(8))
def test_matches_oracle_on_random_small_data(seed):
    """120 random datasets: certified, optimal value to 1e-8, a co-optimal tree, -UB == log posterior."""
    rng = np.random.default_rng(500 + seed)
    for i in range(15):
        X, y = _random_dataset(rng, duplicates=bool(i % 2))
        alpha, beta = PRIORS[(seed + i) % len(PRIORS)]
        kw = _prior_kwargs(seed + 2 * i)
        w = rng.integers(0, 4, size=len(y)) if i % 3 == 0 else None
        if w is not None:
            w[0] = max(w[0], 1)
        strategy = "best-first" if i % 4 == 1 else "focused"  # the paper's order on a quarter of them
        reg = MAPTreeRegressor(alpha=alpha, beta=beta, strategy=strategy, **kw).fit(X, y, sample_weight=w)
        keep = np.ones(len(y), bool) if w is None else w > 0  # zero weights are left out, as in fit
        Xk, yk, wk = X[keep], y[keep], None if w is None else w[keep]
        prior = _nig(yk, wk, kw)
        opt, trees = co_optimal_trees_regression(Xk, yk, alpha=alpha, beta=beta, prior=prior, sample_weight=wk)
        assert reg.optimal_ and reg.stop_reason_ == "completed"
        assert reg.log_posterior_ == pytest.approx(-opt, abs=1e-8)
        assert reg.log_posterior_bound_ == pytest.approx(-opt, abs=1e-8)
        assert reg.gap_ == 0.0
        assert reg.tree_.to_paren() in trees
        assert reg.prior_ == prior


def test_without_leaf_shares_the_bound_is_looser_and_the_answer_the_same(monkeypatch):
    """``leaf_shares=False`` leaves out the costliest bound table: the root bound is no tighter and
    the certified optimum is the oracle's.  The estimator leaves it out when its limit has passed
    before the search is built (no search follows to use it)."""
    from arboretum.maptree import estimator as est_mod

    rng = np.random.default_rng(5)
    for i in range(6):
        X, y = _random_dataset(rng, duplicates=bool(i % 2))
        prior = _nig(y, None, _prior_kwargs(i))
        oracle = RegressionOracle(X, y, alpha=0.95, beta=0.5, prior=prior)
        opt = oracle.value(oracle.root, 0)
        full = RegressionSearch(X, y, 0.95, 0.5, prior)
        loose = RegressionSearch(X, y, 0.95, 0.5, prior, leaf_shares=False)
        assert np.all(loose.R[:, 4] == -np.inf) and np.all(np.isfinite(full.R[:, 4]))
        assert loose.lower_bound <= full.lower_bound + 1e-12
        loose.run()
        assert loose.solved and loose.upper_bound == pytest.approx(opt, abs=1e-8)
    seen = []
    real = est_mod.RegressionSearch

    def spy(*args, **kwargs):
        seen.append(kwargs["leaf_shares"])
        return real(*args, **kwargs)

    monkeypatch.setattr(est_mod, "RegressionSearch", spy)
    X, y = _random_dataset(np.random.default_rng(6))
    MAPTreeRegressor(time_limit=None).fit(X, y)
    with pytest.warns(Warning, match="time_limit"):
        MAPTreeRegressor(time_limit=1e-9).fit(X, y)
    assert seen == [True, False]


@pytest.mark.parametrize("probe", [True, False])
def test_search_invariants_and_admissibility_on_every_node(probe):
    """After every expansion: spec §4.3 invariants, monotone bounds, UB = exact cost of the incumbent;
    at the end every stored node's LB (probed or not) is <= the oracle's optimal value of its subproblem."""
    rng = np.random.default_rng(11)
    checked = 0
    for i in range(24):
        X, y = _random_dataset(rng, duplicates=bool(i % 2))
        alpha, beta = PRIORS[i % len(PRIORS)]
        prior = _nig(y, None, _prior_kwargs(i))
        oracle = RegressionOracle(X, y, alpha=alpha, beta=beta, prior=prior)
        opt = oracle.value(oracle.root, 0)
        s = RegressionSearch(X, y, alpha, beta, prior, ub_semantics="inf" if i % 4 == 3 else "leaf",
                             tie_rule="reference" if i % 3 == 2 else "paper", probe=probe)
        prev_lb, prev_ub = s.lower_bound, s.upper_bound
        for _ in range(20_000):
            if s.step(1) == 2:
                s._grow()
            s.check_invariants()
            lb, ub = s.lower_bound, s.upper_bound
            assert lb >= prev_lb and ub <= prev_ub
            assert lb <= opt + 1e-9
            if np.isfinite(ub):
                cost = -log_posterior_regression(s.solution(), X, y, alpha=alpha, beta=beta, prior=prior)
                assert opt - 1e-9 <= cost <= ub + 1e-8
            prev_lb, prev_ub = lb, ub
            if s.solved:
                break
        assert s.solved and s.upper_bound == pytest.approx(opt, abs=1e-8)
        for o, members in _node_subsets(s, X).items():
            mask = oracle.subset_mask(np.flatnonzero(members))
            assert s.or_lb[o] <= oracle.value(mask, int(s.or_depth[o])) + 1e-9
            checked += 1
    assert checked > (50 if probe else 100)  # probes (and the leaf-share bound) leave far fewer stored nodes


def test_integer_weights_equal_replicated_rows():
    rng = np.random.default_rng(21)
    for _ in range(20):
        X, y = _random_dataset(rng, duplicates=True)
        w = rng.integers(1, 6, size=len(y))
        Xr, yr = np.repeat(X, w, axis=0), np.repeat(y, w)
        opt, trees = co_optimal_trees_regression(Xr, yr)
        reg = MAPTreeRegressor().fit(X, y, sample_weight=w)
        assert reg.optimal_ and reg.log_posterior_ == pytest.approx(-opt, abs=1e-8)
        assert reg.tree_.to_paren() in trees
        assert reg.tree_.counts[0, 0] == w.sum()
        rep = MAPTreeRegressor().fit(Xr, yr)
        assert np.allclose(rep.predict(X), reg.predict(X), atol=1e-9)


def test_leaf_values_are_posterior_means():
    rng = np.random.default_rng(4)
    X = rng.integers(0, 2, size=(40, 3))
    y = 2.0 * X[:, 0] + rng.normal(size=40)
    reg = MAPTreeRegressor(prior_mean=1.0, prior_kappa=2.0).fit(X, y)
    leaves = reg.apply(X)
    for leaf in np.unique(leaves):
        members = y[leaves == leaf]
        expected = (2.0 * 1.0 + members.sum()) / (2.0 + members.size)
        assert reg.tree_.value[leaf, 0] == pytest.approx(expected)
        assert reg.tree_.counts[leaf, 0] == members.size
    assert np.allclose(reg.predict(X), reg.tree_.value[leaves, 0])


# ---------------------------------------------------------------------------------------------
# Invariance of the data-derived defaults
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("scale,shift", [(1000.0, -7.0), (1e-3, 5e5), (-2.5, 0.0)])
def test_affine_rescaling_of_y_gives_the_same_tree(scale, shift):
    rng = np.random.default_rng(12)
    for _ in range(5):
        Xr = rng.integers(0, 5, size=(50, 3)).astype(float)
        y = np.where(Xr[:, 0] > 2, 2.0, 0.0) + 0.7 * Xr[:, 1] + rng.normal(size=50)
        a = MAPTreeRegressor().fit(Xr, y)
        b = MAPTreeRegressor().fit(Xr, scale * y + shift)
        assert a.optimal_ and b.optimal_
        # The log posterior of every tree shifts by -n log|scale|.
        assert b.log_posterior_ == pytest.approx(a.log_posterior_ - 50 * math.log(abs(scale)), abs=1e-6)
        if a.search_tree_.to_paren() != b.search_tree_.to_paren():
            # Only an exact tie (up to rounding) may be broken differently: both trees are MAP trees.
            Xb = a.binarizer_.transform(Xr)
            lp = [log_posterior_regression(t.search_tree_, Xb, y, prior=a.prior_) for t in (a, b)]
            assert lp[0] == pytest.approx(lp[1], abs=1e-9)
            continue
        assert np.allclose(b.predict(Xr), scale * a.predict(Xr) + shift, rtol=1e-9, atol=1e-9 * abs(shift))


# ---------------------------------------------------------------------------------------------
# Limits, anytime behaviour, determinism
# ---------------------------------------------------------------------------------------------
def test_max_expansions_gives_an_uncertified_valid_tree(diabetes):
    X, y = diabetes
    previous = -np.inf
    for k in (1, 10, 100, 1000):
        reg = MAPTreeRegressor(max_expansions=k).fit(X, y)
        assert reg.n_expansions_ == k and not reg.optimal_ and reg.stop_reason_ == "max_expansions"
        assert reg.gap_ > 0 and reg.log_posterior_ <= reg.log_posterior_bound_
        assert reg.log_posterior_ >= previous - 1e-9  # the incumbent never gets worse
        previous = reg.log_posterior_
        Xb = reg.binarizer_.transform(X)
        assert reg.log_posterior_ == pytest.approx(
            log_posterior_regression(reg.search_tree_, Xb, y.to_numpy(), prior=reg.prior_), abs=1e-9
        )


def test_time_and_memory_limits(diabetes):
    X, y = diabetes
    MAPTreeRegressor(max_expansions=5).fit(X, y)  # compile outside the timed region
    t0 = time.perf_counter()
    reg = MAPTreeRegressor(time_limit=1.0).fit(X, y)
    wall = time.perf_counter() - t0
    assert reg.stop_reason_ == "time_limit" and not reg.optimal_
    # the limit is on the whole fit, which the search fills up to the limit
    assert wall <= 1.1 * 1.0 + 0.5 and reg.fit_time_ >= 1.0 and reg.search_time_ <= reg.fit_time_
    assert reg.log_posterior_ <= reg.log_posterior_bound_
    reg = MAPTreeRegressor(memory_limit=4).fit(X, y)  # MiB
    assert reg.stop_reason_ == "memory_limit" and not reg.optimal_
    assert reg.peak_memory_ <= 4 * 2**20
    assert reg.log_posterior_ <= reg.log_posterior_bound_


def test_deterministic(diabetes):
    X, y = diabetes
    a = MAPTreeRegressor(max_expansions=1500).fit(X, y)
    b = MAPTreeRegressor(max_expansions=1500).fit(X, y)
    assert a.search_tree_.to_paren() == b.search_tree_.to_paren()
    assert a.log_posterior_bound_ == b.log_posterior_bound_ and a.log_posterior_ == b.log_posterior_
    assert a.n_or_nodes_ == b.n_or_nodes_


def test_initial_trees_do_not_change_the_optimum():
    rng = np.random.default_rng(5)
    for _ in range(15):
        X, y = _random_dataset(rng, duplicates=True)
        a = MAPTreeRegressor(initial_trees=None).fit(X, y)
        b = MAPTreeRegressor(initial_trees="cart").fit(X, y)
        assert a.optimal_ and b.optimal_
        assert a.log_posterior_ == pytest.approx(b.log_posterior_, abs=1e-9)
    X = np.array([[0, 0], [0, 1], [1, 0], [1, 1]] * 3)
    y = np.array([0.0, 1.0, 5.0, 6.0] * 3) + np.arange(12) * 0.01
    seeded = MAPTreeRegressor(initial_trees=[Tree.from_paren("((1)0(1))", n_features=2)], max_expansions=3)
    seeded.fit(X, y)
    assert seeded.tree_.n_leaves >= 2
    with pytest.raises(ValueError, match="initial_trees"):
        MAPTreeRegressor(initial_trees="greedy").fit(X, y)


def test_single_leaf_cases():
    X = np.ones((6, 2))
    reg = MAPTreeRegressor().fit(X, np.arange(6.0))  # constant features: nothing to split
    assert reg.optimal_ and reg.tree_.n_leaves == 1
    reg = MAPTreeRegressor().fit(np.eye(6), np.full(6, 3.25))  # constant target
    assert reg.optimal_ and np.allclose(reg.predict(np.eye(6)), 3.25)
    one = MAPTreeRegressor().fit([[0.0, 1.0]], [2.0])
    assert one.optimal_ and one.predict([[1.0, 0.0]])[0] == pytest.approx(2.0)


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "params,match",
    [
        ({"alpha": 0.0}, "alpha"),
        ({"beta": -1.0}, "beta"),
        ({"prior_mean": np.nan}, "prior_mean must be a finite number or None"),
        ({"prior_mean": "zero"}, "prior_mean"),
        ({"prior_kappa": 0.0}, r"prior_kappa must be a number in \(0, inf\); got 0.0"),
        ({"prior_kappa": None}, "prior_kappa"),
        ({"prior_shape": -1}, r"prior_shape must be a number in \(0, inf\); got -1"),
        ({"prior_shape": np.inf}, "prior_shape"),
        ({"prior_scale": 0}, r"prior_scale must be a number in \(0, inf\) or None; got 0"),
        ({"prior_scale": "auto"}, "prior_scale"),
        ({"max_expansions": -1}, "max_expansions"),
        ({"time_limit": 0}, "time_limit"),
        ({"memory_limit": -5}, "memory_limit"),
        ({"binarize": "sometimes"}, "binarize"),
        ({"strategy": "greedy"}, "strategy must be one of"),
    ],
)
def test_bad_parameters(params, match):
    X, y = np.eye(4), np.arange(4.0)
    with pytest.raises(ValueError, match=match):
        MAPTreeRegressor(**params).fit(X, y)


def test_bad_targets_and_inputs():
    X = np.array([[0, 1], [1, 0], [1, 1], [0, 0]])
    y = np.array([1.0, 2.0, 3.0, 4.0])
    reg = MAPTreeRegressor()
    with pytest.raises(ValueError, match="NaN"):
        reg.fit(X, [1.0, np.nan, 3.0, 4.0])
    with pytest.raises(ValueError, match="infinity|NaN"):
        reg.fit(X, [1.0, np.inf, 3.0, 4.0])
    with pytest.raises(ValueError, match="real-valued targets"):
        reg.fit(X, ["a", "b", "c", "d"])
    with pytest.raises(ValueError):
        reg.fit(X, np.ones((4, 2)))
    with pytest.raises(ValueError, match="inconsistent"):
        reg.fit(X, y[:-1])
    with pytest.raises(ValueError):
        reg.fit(X[:0], y[:0])
    with pytest.raises(ValueError, match="binary"):
        MAPTreeRegressor(binarize=False).fit(X + 0.5, y)
    Xn = X.astype(float)
    Xn[1, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        reg.fit(Xn, y)
    for bad, match in [(np.full(4, 0.5), "integers"), (-np.ones(4), "integers"), (np.zeros(4), "zero"),
                       (np.ones(3), "shape"), (np.array([10**7, 1, 1, 1]), "at most")]:
        with pytest.raises(ValueError, match=match):
            reg.fit(X, y, sample_weight=bad)
    reg.fit(X, y)
    with pytest.raises(ValueError, match="features"):
        reg.predict(X[:, :1])
    assert reg.fit(X, np.array([1, 2, 3, 4])).predict(X).dtype == np.float64  # integer targets are fine


# ---------------------------------------------------------------------------------------------
# Real data, persistence and the command line
# ---------------------------------------------------------------------------------------------
def _walk_text(text: str, row: dict) -> float:
    """Follow the printed thresholds of ``export_text`` for one sample; return the printed leaf value."""
    lines = text.rstrip("\n").split("\n")
    i, depth = 0, 0
    while True:
        line = lines[i]
        body = line[4 * depth + 5 :]
        if body.startswith("value: "):
            return float(body.split()[1])
        m = re.fullmatch(r"(.+) <= (\S+)", body)
        name, thr = m.group(1), float(m.group(2))
        if row[name] <= thr:
            i, depth = i + 1, depth + 1
            continue
        # Skip the left subtree: find the sibling line "name >  thr" at the same depth.
        prefix = "|   " * depth + "|--- "
        j = i + 1
        while not (lines[j].startswith(prefix) and lines[j][len(prefix):] == f"{name} >  {m.group(2)}"):
            j += 1
        i, depth = j + 1, depth + 1


@pytest.mark.filterwarnings("ignore:X does not have valid feature names")
def test_diabetes_raw_fit_predictions_follow_the_printed_tree(diabetes):
    X, y = diabetes  # 442 x 10 real-valued columns, as loaded
    reg = MAPTreeRegressor(time_limit=3).fit(X, y)
    assert reg.binarizer_ is not None and reg.tree_.n_leaves >= 2
    assert reg.log_posterior_ <= reg.log_posterior_bound_
    text = reg.export_text(decimals=6)
    pred = reg.predict(X)
    for r in range(0, len(X), 7):
        assert _walk_text(text, X.iloc[r].to_dict()) == pytest.approx(pred[r], abs=1e-6)
    # The tree predicts from raw values (numpy input works too) and round-trips through JSON.
    assert np.array_equal(reg.predict(X.to_numpy()), pred)
    tree = Tree.from_json(reg.tree_.to_json())
    assert np.array_equal(tree.predict(X.to_numpy()), pred)
    json.loads(reg.tree_.to_json())
    assert np.array_equal(pickle.loads(pickle.dumps(reg)).predict(X), pred)


def test_diabetes_held_out_r2_beats_a_constant(diabetes):
    from sklearn.model_selection import KFold, cross_val_score

    X, y = diabetes
    scores = cross_val_score(MAPTreeRegressor(max_expansions=2000), X, y, cv=KFold(3, shuffle=True, random_state=0))
    assert np.all(scores > 0.0)  # a constant prediction scores <= 0 on held-out data
    assert scores.mean() > 0.2


def test_cli_fit_regression_and_predict(tmp_path, capsys):
    from arboretum.cli import main

    rng = np.random.default_rng(0)
    X = rng.integers(0, 4, size=(80, 2))
    y = np.where(X[:, 0] >= 2, 10.0, 0.0) + rng.normal(size=80)
    train = tmp_path / "train.csv"
    train.write_text("a,b,price\n" + "".join(f"{a},{b},{float(t)!r}\n" for (a, b), t in zip(X, y)))
    model = tmp_path / "m.json"
    assert main(["fit", "--csv", str(train), "--target", "price", "--task", "regression", "--cv", "3",
                 "--time-limit", "5", "--save", str(model)]) == 0
    out = capsys.readouterr().out
    assert "normal-inverse-gamma leaves" in out and "certificate: optimal" in out
    assert "train R^2" in out and "3-fold test R^2" in out and "|--- a <= 1.5" in out
    saved = json.loads(model.read_text())
    assert saved["estimator"] == "MAPTreeRegressor" and saved["fitted"]["tree_"]["__tree__"]["task"] == "regression"
    pred = tmp_path / "pred.csv"
    assert main(["predict", str(model), "--csv", str(train), "--target", "price", "--output", str(pred)]) == 0
    rows = pred.read_text().split()
    reg = MAPTreeRegressor(time_limit=5).fit(X.astype(float), y)
    assert rows[0] == "prediction" and np.allclose([float(v) for v in rows[1:]], reg.predict(X))
    assert "R^2 against column 'price'" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    bad.write_text("a,price\n0,1.5\n1,expensive\n")
    with pytest.raises(SystemExit, match="'expensive' is not a number"):
        main(["fit", "--csv", str(bad), "--target", "price", "--task", "regression"])


def test_exact_map_regression_helper():
    X = np.array([[0, 0], [0, 1], [1, 0], [1, 1]] * 2)
    y = np.array([0.0, 0.1, 5.0, 5.1, 0.05, 0.12, 4.9, 5.2])
    cost, tree = exact_map_regression(X, y)
    reg = MAPTreeRegressor().fit(X, y)
    assert reg.log_posterior_ == pytest.approx(-cost, abs=1e-9)
    assert tree.startswith("(") and "0" in tree
