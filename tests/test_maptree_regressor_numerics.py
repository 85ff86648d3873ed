"""MAPTreeRegressor at any scale of y: the same certified tree, finite values, clear refusals (issue 19, item 3)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arboretum import MAPTreeRegressor
from arboretum.bayes import NIGPrior, TargetScaling
from arboretum.maptree import RegressionSearch
from arboretum.oracles import co_optimal_trees_regression

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def patterns(draw, max_n: int = 9):
    """Tiny binary X, a target pattern of order 1 (ties and constants included) and optional integer weights."""
    n = draw(st.integers(1, max_n))
    p = draw(st.integers(1, 3))
    X = np.array(draw(st.lists(st.lists(st.integers(0, 1), min_size=p, max_size=p), min_size=n, max_size=n)))
    kind = draw(st.sampled_from(["real", "levels", "constant"]))
    if kind == "real":
        y = draw(st.lists(st.floats(-1.0, 1.0).filter(lambda v: v == 0 or abs(v) > 1e-3), min_size=n, max_size=n))
    elif kind == "levels":
        y = [float(v) for v in draw(st.lists(st.integers(-2, 2), min_size=n, max_size=n))]
    else:
        y = [draw(st.sampled_from([0.0, 0.75, -1.0]))] * n
    w = None
    if draw(st.booleans()):
        w = np.array(draw(st.lists(st.integers(1, 4), min_size=n, max_size=n)))
    return X.astype(np.uint8), np.array(y, dtype=np.float64), w


def _fit(X, y, w, **kw):
    return MAPTreeRegressor(initial_trees=None, **kw).fit(X, y, sample_weight=w)


@SETTINGS
@given(data=patterns(), k=st.integers(-300, 300))
def test_any_scale_gives_the_certified_map_tree_of_the_pattern(data, k):
    """y * 10**k for k in [-300, 300]: certified, finite, a MAP tree of the pattern (the oracle at scale 1),
    log posterior = the pattern's optimum - N k log 10."""
    X, y, w = data
    scale = 10.0**k
    reg = _fit(X, y * scale, w)
    opt, trees = co_optimal_trees_regression(X, y, sample_weight=w, tol=1e-7)
    N = float(len(y) if w is None else w.sum())
    assert reg.optimal_ and reg.stop_reason_ == "completed"
    assert math.isfinite(reg.log_posterior_) and math.isfinite(reg.log_posterior_bound_)
    assert reg.search_tree_.to_paren() in trees
    expected = -opt - (N * math.log(scale) if np.any(y != 0) else 0.0)  # y = 0 does not scale
    assert reg.log_posterior_ == pytest.approx(expected, abs=1e-7 * max(1.0, abs(expected)))
    assert reg.log_posterior_bound_ == pytest.approx(reg.log_posterior_ + reg.gap_, rel=1e-12, abs=1e-12)
    pred = reg.predict(X)
    assert np.all(np.isfinite(pred))
    lo, hi = (y * scale).min(), (y * scale).max()
    assert np.all(pred >= lo - 1e-12 * abs(lo)) and np.all(pred <= hi + 1e-12 * abs(hi))


@SETTINGS
@given(data=patterns(), k=st.integers(-990, 990))
def test_power_of_two_scales_give_the_same_search_bit_for_bit(data, k):
    X, y, w = data
    a, b = _fit(X, y, w), _fit(X, np.ldexp(y, k), w)
    N = float(len(y) if w is None else w.sum())
    assert a.search_tree_.to_paren() == b.search_tree_.to_paren()
    assert a.n_expansions_ == b.n_expansions_ and a.optimal_ and b.optimal_
    shift = N * k * math.log(2.0) if np.any(y != 0) else 0.0
    assert b.log_posterior_ == pytest.approx(a.log_posterior_ - shift, rel=1e-12, abs=1e-9)
    assert np.array_equal(np.ldexp(a.predict(X), k), b.predict(X))


@pytest.mark.parametrize("magnitude", [1e-300, 1e-160, 1e-20, 1.0, 1e20, 1e160, 1e300, 1.7e308])
def test_extreme_magnitudes_fit_quickly_and_finitely(magnitude):
    """The issue's cases: 1e300 used to hang, 1e160 to certify -inf."""
    rng = np.random.default_rng(0)
    X = rng.integers(0, 4, size=(60, 2)).astype(float)
    y = np.where(X[:, 0] >= 2, 3.0, -1.0) + 0.1 * rng.normal(size=60)
    y = y / np.abs(y).max() * magnitude
    reg = MAPTreeRegressor(time_limit=20).fit(X, y)
    assert reg.optimal_ and math.isfinite(reg.log_posterior_)
    assert reg.tree_.n_leaves == 2 and np.all(np.isfinite(reg.predict(X)))
    assert (reg.prior_ is None) == (magnitude > 1e154 or magnitude < 1e-154)


def test_spread_beyond_float64_is_fine():
    """y from -1.7e308 to 1.7e308: its range and variance overflow, the standardised search does not."""
    X = np.array([[0], [0], [1], [1], [1]])
    y = np.array([-1.7e308, -1.6e308, 1.7e308, 1.6e308, 1.65e308])
    reg = MAPTreeRegressor().fit(X, y)
    assert reg.optimal_ and math.isfinite(reg.log_posterior_) and reg.prior_ is None
    assert np.all(np.isfinite(reg.predict(X)))


# ---------------------------------------------------------------------------------------------
# Degenerate inputs
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [0.0, 3.25, -1e300, 1e-300])
def test_constant_targets(value):
    X = np.array([[0, 1], [1, 0], [1, 1], [0, 0], [1, 1]])
    y = np.full(5, value)
    reg = MAPTreeRegressor().fit(X, y)
    assert reg.optimal_ and reg.tree_.n_leaves == 1 and math.isfinite(reg.log_posterior_)
    assert np.all(reg.predict(X) == value)
    opt, trees = co_optimal_trees_regression(X, y / value if value else y)
    shift = 5 * math.log(abs(value)) if value else 0.0
    assert reg.log_posterior_ == pytest.approx(-opt - shift, abs=1e-9 * max(1.0, abs(opt) + shift))


def test_constant_targets_use_their_own_magnitude_as_variance():
    assert NIGPrior.from_data([3.0, 3.0]).scale == pytest.approx(9.0 * NIGPrior.from_data([0.0, 2.0]).scale)
    assert NIGPrior.from_data([0.0, 0.0]).scale == pytest.approx(NIGPrior.from_data([-1.0, 1.0]).scale)


@pytest.mark.parametrize("y", [[5.0], [1e300], [-2.0, 7.0], [1e-300, -1e-300], [4.0, 4.0]])
def test_one_or_two_samples(y):
    X = np.eye(len(y), dtype=np.uint8)
    reg = MAPTreeRegressor().fit(X, y)
    opt, trees = co_optimal_trees_regression(X, np.asarray(y) / max(abs(v) for v in y))
    assert reg.optimal_ and math.isfinite(reg.log_posterior_) and reg.tree_.to_paren() in trees


def test_duplicate_rows_with_conflicting_targets():
    X = np.array([[0, 1]] * 4 + [[1, 0]] * 3)
    y = np.array([1.0, -1.0, 2.0, 0.5, 1e-3, 2e-3, 3e-3]) * 1e250
    reg = MAPTreeRegressor().fit(X, y)
    opt, trees = co_optimal_trees_regression(X, y / 1e250)
    assert reg.optimal_ and reg.tree_.to_paren() in trees
    assert reg.log_posterior_ == pytest.approx(-opt - 7 * math.log(1e250), rel=1e-12)


def test_huge_and_small_integer_weights():
    X = np.array([[0], [0], [1], [1]])
    y = np.array([0.0, 0.1, 5.0, 5.2]) * 1e-200
    w = np.array([3_000_000, 1, 1, 6_000_000])
    reg = MAPTreeRegressor().fit(X, y, sample_weight=w)
    opt, trees = co_optimal_trees_regression(X, y * 1e200, sample_weight=w)
    assert reg.optimal_ and reg.tree_.to_paren() in trees and math.isfinite(reg.log_posterior_)
    assert reg.log_posterior_ == pytest.approx(-opt + w.sum() * math.log(1e200), rel=1e-10)


# ---------------------------------------------------------------------------------------------
# Refusals and guards
# ---------------------------------------------------------------------------------------------
def test_unrepresentable_prior_values_are_refused_before_the_search():
    X, y = np.eye(4), np.array([1.0, 2.0, 3.0, 4.0]) * 1e-300
    with pytest.raises(ValueError, match=r"prior_scale=1\.0 cannot be represented"):
        MAPTreeRegressor(prior_scale=1.0).fit(X, y)
    with pytest.raises(ValueError, match=r"prior_mean=1e\+100 cannot be represented"):
        MAPTreeRegressor(prior_mean=1e100).fit(X, y)
    with pytest.raises(ValueError, match="prior_mean and prior_scale cannot be represented"):
        MAPTreeRegressor(prior_mean=1e200, prior_scale=1e-200).fit(X, y * 1e300)
    # In range, the same values are used as given.
    reg = MAPTreeRegressor(prior_mean=1e-299, prior_scale=4e-300).fit(X, y)
    assert reg.optimal_ and math.isfinite(reg.log_posterior_)
    for bad in ([1.0, np.nan, 2.0, 3.0], [1.0, np.inf, 2.0, 3.0]):
        with pytest.raises(ValueError, match="NaN or infinity"):
            MAPTreeRegressor().fit(X, bad)


def test_search_refuses_targets_whose_sums_overflow():
    X = np.array([[0], [1], [1]])
    with pytest.raises(ValueError, match="overflow"):
        RegressionSearch(X, np.array([1e200, -1e200, 3e200]), prior=NIGPrior(mean=0.0, scale=1.0))


def test_target_scaling_round_trip_and_log_unit():
    y = np.array([-3e250, 1e250, 7e250, 2e250])
    s = TargetScaling.fit(y)
    z = s.transform(y)
    assert abs(z.mean()) < 1e-15 and z.var() == pytest.approx(1.0)
    assert np.allclose(s.inverse(z), y, rtol=1e-14)
    assert s.log_unit == pytest.approx(math.log((y * 1e-250).std()) + 250 * math.log(10))  # y.std() overflows
    assert TargetScaling.fit([0.0, 0.0]).log_unit == 0.0 and TargetScaling.fit([2.0, 2.0]).log_unit == pytest.approx(math.log(2.0))
