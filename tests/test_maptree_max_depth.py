"""MAPTree's ``max_depth``: the certified MAP tree among trees of at most that depth.

Checked against the exact dynamic programme of :mod:`arboretum.oracles` with the same limit, on
random small data sets (classification and regression, every search strategy, probes on and off).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arboretum import InvalidParameterError, MAPTreeClassifier, MAPTreeRegressor
from arboretum.maptree import AndOrSearch, RegressionSearch
from arboretum.oracles import exact_map, exact_map_regression


def _depth(tree) -> int:
    return int(tree.depth.max())


def _data(seed: int, n_max: int = 12, p_max: int = 5):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, n_max + 1))
    p = int(rng.integers(1, p_max + 1))
    X = (rng.random((n, p)) < rng.uniform(0.25, 0.75)).astype(np.uint8)
    y = (X[:, 0] ^ X[:, -1]) if rng.random() < 0.5 else rng.integers(0, 2, size=n)
    flip = rng.random(n) < 0.15
    return X, np.where(flip, 1 - y, y).astype(np.int64)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), max_depth=st.integers(1, 4), focused=st.booleans())
def test_classifier_matches_depth_limited_oracle(seed, max_depth, focused):
    X, y = _data(seed)
    if np.unique(y).size < 2:
        y[0] = 1 - y[0]
    clf = MAPTreeClassifier(
        max_depth=max_depth, binarize=False, time_limit=None, strategy="focused" if focused else "best-first"
    ).fit(X, y)
    cost, _ = exact_map(X, y, rho=(2.5, 2.5), max_depth=max_depth)
    assert clf.optimal_
    assert _depth(clf.tree_) <= max_depth
    assert clf.log_posterior_ == pytest.approx(-cost, rel=1e-9, abs=1e-9)
    # The limit only removes trees: never better than the unlimited optimum.
    assert -cost <= -exact_map(X, y, rho=(2.5, 2.5))[0] + 1e-9


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), max_depth=st.integers(1, 3), probe=st.booleans())
def test_search_matches_oracle_with_and_without_probes(seed, max_depth, probe):
    X, y = _data(seed, n_max=14)
    s = AndOrSearch(X, y, 2, probe=probe, max_depth=max_depth)
    result = s.run()
    s.check_invariants()
    cost, _ = exact_map(X, y, max_depth=max_depth)
    assert result.optimal
    assert s.upper_bound == pytest.approx(cost, rel=1e-9, abs=1e-9)
    assert _depth(s.solution()) <= max_depth


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), max_depth=st.integers(1, 3))
def test_regressor_matches_depth_limited_oracle(seed, max_depth):
    rng = np.random.default_rng(seed)
    n, p = int(rng.integers(2, 11)), int(rng.integers(1, 4))
    X = (rng.random((n, p)) < 0.5).astype(np.uint8)
    y = 2.0 * X[:, 0] - 1.5 * X[:, -1] + rng.normal(scale=0.3, size=n)
    reg = MAPTreeRegressor(max_depth=max_depth, binarize=False, time_limit=None).fit(X, y)
    cost, _ = exact_map_regression(X, y, max_depth=max_depth)
    assert reg.optimal_
    assert _depth(reg.tree_) <= max_depth
    assert reg.log_posterior_ == pytest.approx(-cost, rel=1e-9, abs=1e-9)
    s = RegressionSearch(X, y, max_depth=max_depth)
    s.run()
    s.check_invariants()


def test_large_limit_is_no_limit():
    X, y = _data(7, n_max=14)
    a = MAPTreeClassifier(binarize=False).fit(X, y)
    b = MAPTreeClassifier(binarize=False, max_depth=X.shape[1] + 1).fit(X, y)
    assert a.log_posterior_ == b.log_posterior_
    assert a.tree_.to_paren() == b.tree_.to_paren()


def test_depth_limit_binds_on_real_data():
    """On hepatitis the MAP tree has depth 2: a stump is certified, and costs more; depth 3 is the same tree."""
    from arboretum.datasets import load_dataset

    data = load_dataset("hepatitis")
    full = MAPTreeClassifier().fit(data.data, data.target)
    stump = MAPTreeClassifier(max_depth=1).fit(data.data, data.target)
    deep = MAPTreeClassifier(max_depth=3).fit(data.data, data.target)
    assert _depth(full.tree_) == 2
    assert stump.optimal_ and _depth(stump.tree_) == 1
    assert stump.log_posterior_ < full.log_posterior_
    assert deep.optimal_ and deep.tree_.to_paren() == full.tree_.to_paren()
    assert deep.n_expansions_ < full.n_expansions_


def test_seeded_cart_trees_are_cut_at_the_limit():
    """CART seeds deeper than the limit are cut: even a search stopped at once returns a shallow tree."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 6))
    y = ((X[:, 0] > 0) ^ (X[:, 1] > 0.3) ^ (X[:, 2] > -0.2)).astype(int)
    for limit in (1, 2):
        clf = MAPTreeClassifier(max_depth=limit, max_expansions=40).fit(X, y)
        assert _depth(clf.tree_) <= limit


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2"])
@pytest.mark.parametrize("cls", [MAPTreeClassifier, MAPTreeRegressor])
def test_bad_max_depth_is_refused_before_the_data(cls, bad):
    with pytest.raises(InvalidParameterError, match="max_depth"):
        cls(max_depth=bad).fit([[0], [1]], [0, 1])
