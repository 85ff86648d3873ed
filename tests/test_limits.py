"""Limits hold for the whole fit (issue 19, item 2).

Every stage of a fit (binarisation, CART seeding, probes, the search or the
sampling, building the tree) watches one clock, so a tiny ``time_limit`` is
honoured even on data where binarisation and CART seeding alone take far
longer; a stopped fit is never worse than the CART candidates it was seeded
with; the default ``time_limit`` is 60 s and None means no limit.

Timing assertions use generous margins (a loaded 2-core machine) and warm the
numba kernels first, so compilation is outside the timed region.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification, make_regression
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from arboretum import (
    Binarizer,
    LimitWarning,
    MAPTreeClassifier,
    MAPTreeRegressor,
    MCMCTreeSampler,
    PCFGTreeClassifier,
    SMCTreeSampler,
)
from arboretum.base import DEFAULT_TIME_LIMIT, FitClock
from arboretum.bayes import log_posterior, log_posterior_regression
from arboretum.datasets import load_dataset
from arboretum.maptree.incumbents import CART_DEPTHS, sklearn_tree

#: Slack on top of a time limit: the cheapest CART candidates are always fitted, and the machine is loaded.
MARGIN = 1.5
ESTIMATORS = [MAPTreeClassifier, MAPTreeRegressor, PCFGTreeClassifier, MCMCTreeSampler, SMCTreeSampler]


@pytest.fixture(scope="module")
def big_classification():
    """20,000 x 20 real features: binarising them and fitting all CART candidates take seconds."""
    return make_classification(20_000, 20, random_state=0)


@pytest.fixture(scope="module")
def warm():
    """Compile (or load) every kernel before anything is timed."""
    X, y = make_classification(200, 5, random_state=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LimitWarning)
        MAPTreeClassifier(max_expansions=50).fit(X, y)
        MAPTreeRegressor(max_expansions=50).fit(X, y.astype(float) + X[:, 0])
        PCFGTreeClassifier().fit(X[:60, :2], y[:60])
        SMCTreeSampler(n_particles=10, random_state=0).fit(X, y)
        MCMCTreeSampler(n_iterations=50, random_state=0).fit(X, y)


def _timed_fit(est, X, y, **kw):
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LimitWarning)
        est.fit(X, y, **kw)
    return time.perf_counter() - t0


# ---------------------------------------------------------------------------
# the clock
# ---------------------------------------------------------------------------


def test_fit_clock():
    clock = FitClock(None, time.perf_counter())
    assert clock.deadline is None and clock.remaining() is None and not clock.expired()
    assert clock.share_end(0.5) is None
    start = time.perf_counter() - 2.0
    clock = FitClock(1.0, start)
    assert clock.deadline == start + 1.0 and clock.expired() and clock.remaining() == 0.0
    assert clock.elapsed() >= 2.0 and clock.share_end(0.5) == start + 0.5


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_default_time_limit_is_60_seconds(cls):
    assert DEFAULT_TIME_LIMIT == 60
    assert cls().get_params()["time_limit"] == 60
    assert clone(cls(time_limit=None)).get_params()["time_limit"] is None
    assert "time_limit : float or None, default=60" in cls.__doc__


def test_no_time_limit_means_no_limit(warm):
    X, y = load_dataset("zoo-1", return_X_y=True)
    clf = MAPTreeClassifier(time_limit=None).fit(X, y)
    assert clf.optimal_ and clf.stop_reason_ == "completed"


# ---------------------------------------------------------------------------
# every stage honours a tiny limit
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("limit", [0.05, 0.5])
def test_maptree_classifier_whole_fit_within_limit(big_classification, warm, limit):
    X, y = big_classification
    clf = MAPTreeClassifier(time_limit=limit)
    wall = _timed_fit(clf, X, y)
    assert clf.stop_reason_ == "time_limit" and not clf.optimal_
    assert wall < limit + MARGIN, f"time_limit={limit} took {wall:.2f} s"
    assert clf.search_time_ <= clf.fit_time_ <= wall
    assert clf.log_posterior_ <= clf.log_posterior_bound_


def test_maptree_regressor_whole_fit_within_limit(warm):
    X, y = make_regression(20_000, 20, noise=5.0, random_state=0)
    reg = MAPTreeRegressor(time_limit=0.3)
    wall = _timed_fit(reg, X, y)
    assert reg.stop_reason_ == "time_limit"
    assert wall < 0.3 + MARGIN, f"took {wall:.2f} s"


def test_pcfg_within_limit_and_finer_than_a_leaf(warm):
    rng = np.random.default_rng(0)
    n = 3000
    df = pd.DataFrame({
        "age": rng.integers(18, 80, n),
        "income": rng.lognormal(10, 0.5, n).round(-2),
        "smoker": rng.random(n) < 0.3,
        "region": rng.choice(["north", "south", "east", "west"], n),
    })
    label = np.where((df.age > 50) & df.smoker | (df.region == "south") ^ (rng.random(n) < 0.1), "a", "b")
    clf = PCFGTreeClassifier(time_limit=0.5, random_state=0)
    wall = _timed_fit(clf, df, label)
    assert wall < 0.5 + MARGIN, f"took {wall:.2f} s"
    if clf.stop_reason_ == "time_limit":  # the requested grammar did not fit: a coarser one, not a leaf
        assert sum(len(g) for g in clf.binarizer_.groups_) > 0 and clf.n_nodes_ > 1
        assert not clf.optimal_


@pytest.mark.parametrize("cls, params", [(SMCTreeSampler, {"n_particles": 2000}),
                                         (MCMCTreeSampler, {"n_iterations": 10**7})])
def test_samplers_within_limit(big_classification, warm, cls, params):
    X, y = big_classification
    est = cls(time_limit=0.3, random_state=0, **params)
    wall = _timed_fit(est, X, y)
    assert est.stop_reason_ == "time_limit"
    assert wall < 0.3 + MARGIN, f"took {wall:.2f} s"


def test_memory_limit_honoured(warm):
    X, y = make_classification(3000, 10, random_state=0)
    # Quantile thresholds: with the boosting default's few questions this problem certifies in 1 MiB.
    clf = MAPTreeClassifier(memory_limit=1, time_limit=None, binarizer=Binarizer(strategy="quantile"))
    _timed_fit(clf, X, y)
    assert clf.stop_reason_ == "memory_limit" and not clf.optimal_
    assert clf.peak_memory_ <= 1 * 2**20
    assert clf.log_posterior_ == pytest.approx(
        log_posterior(clf.tree_, X, np.searchsorted(clf.classes_, y), rho=clf.rho_, candidates=clf.binarizer_)
    )


# ---------------------------------------------------------------------------
# never worse than the CART seeds
# ---------------------------------------------------------------------------


def _cart_log_posteriors(est, X, y_enc, depths, regression=False):
    """Log posterior of every CART candidate (as MAPTree builds them) on the estimator's questions."""
    Xb = est.binarizer_.transform(X)
    out = []
    for depth in depths:
        for criterion in (("squared_error",) if regression else ("gini", "entropy")):
            cls = DecisionTreeRegressor if regression else DecisionTreeClassifier
            tree = sklearn_tree(cls(max_depth=depth, criterion=criterion, random_state=0).fit(Xb, y_enc), Xb.shape[1])
            if regression:
                out.append(log_posterior_regression(tree, Xb, y_enc, prior=est.prior_))
            else:
                out.append(log_posterior(tree, Xb, y_enc, rho=est.rho_))
    return out


def _own_log_posterior(est, X, y_enc, regression=False):
    if regression:
        return log_posterior_regression(est.tree_, X, y_enc, prior=est.prior_, candidates=est.binarizer_)
    return log_posterior(est.tree_, X, y_enc, rho=est.rho_, candidates=est.binarizer_)


def test_one_expansion_is_never_worse_than_any_cart_seed(warm):
    X, y = make_classification(2000, 10, n_informative=6, random_state=2)
    clf = MAPTreeClassifier(max_expansions=1)
    _timed_fit(clf, X, y)
    assert clf.stop_reason_ == "max_expansions" and clf.n_expansions_ <= 1
    own = _own_log_posterior(clf, X, y)
    assert own == pytest.approx(clf.log_posterior_)
    assert own >= max(_cart_log_posteriors(clf, X, y, CART_DEPTHS)) - 1e-6


def test_regressor_one_expansion_is_never_worse_than_any_cart_seed(warm):
    X, y = make_regression(1500, 6, noise=10.0, random_state=0)
    reg = MAPTreeRegressor(max_expansions=1)
    _timed_fit(reg, X, y)
    own = _own_log_posterior(reg, X, y, regression=True)
    assert own == pytest.approx(reg.log_posterior_)
    assert own >= max(_cart_log_posteriors(reg, X, y, CART_DEPTHS, regression=True)) - 1e-6


def test_tiny_time_limit_is_never_worse_than_depth_two_cart(big_classification, warm):
    X, y = big_classification
    clf = MAPTreeClassifier(time_limit=0.01)
    wall = _timed_fit(clf, X, y)
    assert clf.stop_reason_ == "time_limit" and wall < 0.01 + MARGIN
    assert _own_log_posterior(clf, X, y) >= max(_cart_log_posteriors(clf, X, y, (2,))) - 1e-6


def test_search_stops_before_a_growth_step_that_would_pass_the_limit():
    """Growing the graph copies every array into new memory and cannot be interrupted: when the last
    large step's seconds per copied byte say the next one would end past the limit's tolerance, the
    search stops there (stop reason time_limit) instead of growing past it."""
    from arboretum.maptree.search import GROW_RATE_BYTES, AndOrSearch

    rng = np.random.default_rng(0)
    X = rng.random((400, 40)) < 0.5
    y = (X[:, 0] ^ X[:, 1] ^ X[:, 2] ^ (rng.random(400) < 0.3)).astype(np.int64)
    grown = AndOrSearch(X, y, 2)
    before = grown.nbytes
    grown.run(max_expansions=3000, time_limit=60)
    assert grown.nbytes > before  # this problem needs growth steps
    slow = AndOrSearch(X, y, 2)
    slow._grow_rate = 1.0  # one second per byte: any step would pass any limit
    t0 = time.perf_counter()
    result = slow.run(max_expansions=3000, time_limit=60)
    assert result.stop_reason == "time_limit" and time.perf_counter() - t0 < 30
    assert slow.nbytes == before and not result.optimal
    assert GROW_RATE_BYTES >= 2**20  # small steps are not timed


def test_first_chunks_of_a_run_start_at_one_iteration():
    """One iteration near the root of a very large data set takes a good share of a short limit, so
    a run's first chunks hold 1, 2, 4, ... iterations, doubling while they are fast, up to
    CHUNK_MIN (the search itself does not depend on the chunks)."""
    from arboretum.maptree.search import CHUNK_MIN, AndOrSearch

    rng = np.random.default_rng(1)
    X = rng.random((300, 20)) < 0.5
    y = (X[:, 0] ^ X[:, 1] ^ (rng.random(300) < 0.2)).astype(np.int64)
    sizes = []
    s = AndOrSearch(X, y, 2)
    real = s._chunk
    s._chunk = lambda n, *a: (sizes.append(n), real(n, *a))[1]
    s.run(max_expansions=400, focus=False)
    assert sizes[:5] == [1, 2, 4, 8, 16] and CHUNK_MIN == 16
    t = AndOrSearch(X, y, 2)  # the same 400 iterations in four runs: other chunks, the same search
    for cap in (100, 200, 300, 400):
        t.run(max_expansions=cap, focus=False)
    assert t.n_expansions_ == s.n_expansions_
    assert t.upper_bound == s.upper_bound and t.lower_bound == s.lower_bound
