"""The Binarizer's supervised threshold strategies ("boosting", "mixed") and the step-function benchmark."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_iris
from sklearn.tree import DecisionTreeRegressor

import arboretum
from arboretum import Binarizer, MAPTreeClassifier, MAPTreeRegressor, PCFGTreeClassifier
from arboretum.binarizer import SUPERVISED

pd = pytest.importorskip("pandas")
ROOT = Path(__file__).resolve().parent.parent
#: Binarizer.fit takes sample_weight for the ensemble only; the candidate values and quantiles come
#: from every row of X, so weights are not equivalent to repeated or removed rows (documented).
WEIGHTS_XFAIL = {"check_sample_weight_equivalence_on_dense_data": "weights steer only the ensemble"}


def _step(n: int = 700, seed: int = 0):
    """The issue's step function: 3 features on [0, 10], steps at x0 = 3.3 and x1 = 6.1."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 10.0, size=(n, 3))
    y = 2.0 * (X[:, 0] > 3.3) + 1.0 * (X[:, 1] > 6.1) + rng.normal(0.0, 0.1, n)
    return X, y


def _within_one_gap(x: np.ndarray, thresholds: np.ndarray, cut: float) -> bool:
    """Some threshold lies in the gap of the training values around ``cut`` or in a gap next to it."""
    v = np.unique(x)
    i = np.searchsorted(v, cut)  # v[i - 1] < cut <= v[i]
    lo, hi = v[max(i - 2, 0)], v[min(i + 1, v.size - 1)]
    return bool(np.any((thresholds >= lo) & (thresholds < hi)))


@pytest.mark.parametrize("strategy", SUPERVISED)
@pytest.mark.parametrize("task", ["regression", "classification"])
def test_finds_the_true_cuts_of_a_step_function(strategy, task):
    X, y = _step()
    target = y if task == "regression" else np.round(y).astype(int)  # classes 0-3: the cells
    b = Binarizer(strategy=strategy).fit(X, target)
    assert _within_one_gap(X[:, 0], b.thresholds_[0], 3.3)
    assert _within_one_gap(X[:, 1], b.thresholds_[1], 6.1)
    quantile = Binarizer().fit(X)
    assert not _within_one_gap(X[:, 1], quantile.thresholds_[1], 6.1)  # what the quantiles miss
    if strategy == "boosting":  # the ensemble needs no cut on the noise column
        assert [t.size for t in b.thresholds_] == [1, 1, 0]


def test_maptree_regressor_on_the_step_function_matches_cart():
    X, y = _step()
    Xt, yt = _step(seed=1)
    model = MAPTreeRegressor(time_limit=30, binarizer=Binarizer(strategy="boosting")).fit(X, y)
    cart = DecisionTreeRegressor(max_depth=2).fit(X, y)
    assert model.optimal_ and model.tree_.n_leaves == 4
    assert model.score(Xt, yt) >= cart.score(Xt, yt) - 0.01


@pytest.mark.parametrize("strategy", SUPERVISED)
def test_deterministic_and_the_same_for_float32(strategy):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(6000, 5))  # over ENSEMBLE["max_rows"]: the fixed subsample
    y = (X[:, 0] > 0.2).astype(float) + X[:, 3] + rng.normal(size=6000)
    a = Binarizer(strategy=strategy).fit(X, y)
    b = Binarizer(strategy=strategy).fit(X, y)
    assert all(np.array_equal(s, t) for s, t in zip(a.thresholds_, b.thresholds_))
    assert a.splits_ == b.splits_


@settings(max_examples=40, deadline=None)
@given(
    x=st.lists(st.floats(-1e300, 1e300, allow_subnormal=False), min_size=2, max_size=80),
    labels=st.booleans(),
    n=st.integers(1, 10),
    strategy=st.sampled_from(SUPERVISED),
    data=st.data(),
)
def test_thresholds_are_capped_sorted_midpoints(x, labels, n, strategy, data):
    x = np.asarray(x)
    if labels:
        y = np.asarray(data.draw(st.lists(st.integers(0, 3), min_size=x.size, max_size=x.size)))
    else:
        y = np.asarray(data.draw(st.lists(st.floats(-1e300, 1e300), min_size=x.size, max_size=x.size)))
    b = Binarizer(n_thresholds=n, strategy=strategy).fit(x.reshape(-1, 1), y)
    if set(np.unique(x).tolist()) == {0.0, 1.0}:
        assert b.column_kinds_ == ["binary"]
        return
    t = b.thresholds_[0]
    k = np.unique(x).size
    assert t.size <= n and np.all(np.diff(t) > 0)
    for ti in t:  # between two consecutive training values
        assert x[x <= ti].size and x[x > ti].size and not np.any((x > x[x <= ti].max()) & (x < x[x > ti].min()))
    if k - 1 <= n:
        assert t.size == k - 1  # few values: cut between every two, as for the other strategies
    elif strategy == "mixed":
        quantile = Binarizer(n_thresholds=n).fit(x.reshape(-1, 1)).thresholds_[0]
        assert t.size >= quantile.size  # topped up with quantile cuts
    np.testing.assert_array_equal(b.transform(x.reshape(-1, 1)), x[:, None] <= t[None, :])


def test_constant_columns_and_constant_target():
    rng = np.random.default_rng(0)
    X = np.column_stack([np.full(50, 2.0), rng.uniform(size=50)])
    b = Binarizer(strategy="boosting").fit(X, np.zeros(50))
    assert b.thresholds_[0].size == 0 and b.thresholds_[1].size == 0  # nothing to explain: no cut
    m = Binarizer(strategy="mixed", n_thresholds=3).fit(X, np.zeros(50))
    q = Binarizer(n_thresholds=3).fit(X)
    assert m.thresholds_[0].size == 0 and np.array_equal(m.thresholds_[1], q.thresholds_[1])


def test_categorical_and_binary_columns_are_unchanged():
    rng = np.random.default_rng(1)
    n = 120
    df = pd.DataFrame({
        "x": rng.uniform(0, 10, n),
        "colour": rng.choice(["red", "green", "blue"], n).astype(object),
        "size": pd.Categorical(rng.choice(["S", "M", "L"], n), categories=["S", "M", "L"], ordered=True),
        "smoker": rng.random(n) < 0.4,
    })
    y = np.where(df["colour"] == "red", 1, 0) + (df["x"] > 4.2)
    q, b = Binarizer().fit(df), Binarizer(strategy="boosting").fit(df, y)
    keep = [s for s in q.splits_ if s.column != 0]
    assert [s for s in b.splits_ if s.column != 0] == keep and b.categories_[1].tolist() == q.categories_[1].tolist()
    assert _within_one_gap(df["x"].to_numpy(), b.thresholds_[0], 4.2)


def test_sample_weights_steer_the_ensemble():
    rng = np.random.default_rng(2)
    n = 400
    X = rng.uniform(0, 10, size=(n, 1))
    first = np.arange(n) < n // 2
    y = np.where(first, X[:, 0] > 3.3, X[:, 0] > 7.7).astype(float)  # two halves with different steps
    w = first.astype(float)
    b = Binarizer(strategy="boosting", n_thresholds=1).fit(X, y, sample_weight=w)
    assert _within_one_gap(X[first, 0], b.thresholds_[0], 3.3)
    b = Binarizer(strategy="boosting", n_thresholds=1).fit(X, y, sample_weight=1 - w)
    assert _within_one_gap(X[~first, 0], b.thresholds_[0], 7.7)
    # the estimators pass the weights on (after leaving out the samples of weight 0)
    clf = MAPTreeClassifier(binarizer=Binarizer(strategy="boosting", n_thresholds=1), time_limit=10)
    clf.fit(X, y.astype(int), sample_weight=first.astype(int))
    ref = Binarizer(strategy="boosting", n_thresholds=1).fit(X[first], y[first].astype(int))
    assert np.array_equal(clf.binarizer_.thresholds_[0], ref.thresholds_[0])


@pytest.mark.parametrize("fit_kw, exc, match", [
    ({}, ValueError, "requires y to be passed, but the target y is None"),
    ({"y": np.zeros(3)}, ValueError, r"y must be 1-d with one value per row of X \(4\); got shape \(3,\)"),
    ({"y": np.array([0.0, np.nan, 1.0, 2.0])}, ValueError, "y has a missing or infinite value"),
    ({"y": np.arange(4.0), "sample_weight": [1, -1, 1, 1]}, ValueError, "sample_weight must hold 4 finite"),
])
def test_bad_targets_and_weights(fit_kw, exc, match):
    X = np.arange(8.0).reshape(4, 2)
    with pytest.raises(exc, match=match):
        Binarizer(strategy="boosting").fit(X, **fit_kw)


def test_bad_strategy_lists_the_new_ones():
    with pytest.raises(ValueError, match=r"strategy must be one of \['quantile', 'uniform', 'all', 'boosting', "):
        Binarizer(strategy="cart").fit(np.eye(3))


def test_estimators_with_the_supervised_strategies(tmp_path):
    from arboretum.samplers import SMCTreeSampler

    X, y = load_iris(return_X_y=True)
    binarizer = Binarizer(strategy="boosting", n_thresholds=3)
    for model in (MAPTreeClassifier(binarizer=binarizer, time_limit=10),
                  PCFGTreeClassifier(binarizer=binarizer, time_limit=10),
                  SMCTreeSampler(binarizer=binarizer, n_particles=20, random_state=0)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X, y)
        assert model.binarizer_.strategy == "boosting" and model.score(X, y) > 0.9
        path = tmp_path / f"{type(model).__name__}.json"
        arboretum.save(model, path)
        loaded = arboretum.load(path)
        assert np.array_equal(loaded.predict(X), model.predict(X))
        assert loaded.binarizer_.splits_ == model.binarizer_.splits_
    X, y = _step(200)
    reg = MAPTreeRegressor(binarizer=Binarizer(strategy="mixed"), time_limit=10).fit(X, y)
    arboretum.save(reg, tmp_path / "reg.json")
    assert np.array_equal(arboretum.load(tmp_path / "reg.json").predict(X), reg.predict(X))


def test_grid_search_over_the_strategy():
    from sklearn.model_selection import GridSearchCV

    X, y = _step(300)
    gs = GridSearchCV(MAPTreeRegressor(time_limit=10), {"binarizer__strategy": ["quantile", "boosting"]}, cv=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gs.fit(X, y)
    assert gs.best_params_ == {"binarizer__strategy": "boosting"} and gs.best_score_ > 0.95


def test_supervised_binarizer_passes_sklearn_estimator_checks():
    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(Binarizer(strategy="boosting"), on_fail=None, expected_failed_checks=WEIGHTS_XFAIL)
    for r in results:
        if r["status"] == "xfail":
            continue
        if r["status"] == "skipped":
            assert "SCIPY_ARRAY_API is not set" in str(r["exception"]), r["check_name"]
        else:
            assert r["status"] == "passed", f"{r['check_name']} failed: {r['exception']}"


def test_step_function_benchmark_quick_mode(tmp_path):
    sys.path.insert(0, str(ROOT))
    from benchmarks import step_functions

    out = tmp_path / "sf"
    step_functions.main(["--quick", "--seeds", "1", "--n-range", "60", "80", "--d-range", "2", "3",
                         "--time-limit", "5", "--strategies", "boosting", "--out", str(out)])
    frame = pd.read_csv(out.with_suffix(".csv"))
    assert len(frame) == 10 * 4 and set(frame["method"]) == {"MAPTree[boosting]", "CART-2", "CART-3", "CART-4"}
    assert frame["score"].le(1).all() and frame["n"].between(60, 80).all()
    md = out.with_suffix(".md").read_text()
    assert "| **all** | all |  | 10 |" in md and "Command: `python benchmarks/step_functions.py --quick" in md


def test_benchmark_problems_have_their_cuts():
    sys.path.insert(0, str(ROOT))
    from benchmarks.step_functions import STRUCTURES, make_problem

    for form, n_cuts in STRUCTURES:
        Xtr, ytr, Xte, yte, info = make_problem(4, form, n_cuts, "classification")
        assert info["cuts"].count(">") == n_cuts and 200 <= info["n"] <= 2000 and 2 <= info["d"] <= 8
        assert Xtr.shape == Xte.shape == (info["n"], info["d"])
        n_cells = n_cuts + 1 if form == "tree" else 2**n_cuts
        assert set(np.unique(ytr)) <= set(range(n_cells))
        again = make_problem(4, form, n_cuts, "classification")
        assert np.array_equal(again[0], Xtr) and np.array_equal(again[1], ytr)
