"""PCFGTreeClassifier: data-scale oracles, invariances, the Chipman/MAPTree cross-check, API and errors.

Spec ``spec-001-bcart-pcfg.md`` §6 T9, T16, T17, §7 and the issue's
requirements on limits and bad input.
"""

from __future__ import annotations

import math
import pickle
import time
import warnings

import numpy as np
import pytest
from fixtures import FIXTURE_ORACLES, FIXTURE_TREE_COUNTS, FIXTURES
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from arboretum import MAPTreeClassifier
from arboretum.oracles import co_optimal_trees, log_evidence
from arboretum.datasets import load_dataset, make_hidden_xor
from arboretum import Binarizer, LimitWarning
from arboretum.pcfg import GrammarTooLargeError, PCFGTreeClassifier
from arboretum.tree import BINARY, LEAF, THRESHOLD

# spec §6 T17 (alpha = 1, ln phi = 2, equal-width buckets fitted on the full data)
T17 = {
    "caesarian": (10, 6101, 40479, -56.534171, -41.336956, -54.776911, 3, 1.4558e-6),
    "haberman": (10, 20450, 189564, -179.607369, -146.859052, -170.930280, 7, 3.5156e-11),
    "iris": (10, 32166, 421952, -168.934818, -38.701301, -43.107986, 7, 0.0121955),
    "vertebral": (5, 29689, 256319, -197.639852, -149.133490, -163.634622, 9, 5.0378e-7),
}


@pytest.fixture(scope="module")
def caesarian_codes():
    X, y = load_dataset("caesarian", return_X_y=True)
    clf = PCFGTreeClassifier().fit(X, y)
    return clf.binarizer_.ordinal_transform(X).astype(np.float64), y, clf


# ---------------------------------------------------------------------------
# data-scale oracles (T17, T9)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(T17))
def test_t17_data_scale_oracles(name):
    k, n_nodes, n_edges, log_l, log_q, log_qmax, map_nodes, map_post = T17[name]
    X, y = load_dataset(name, return_X_y=True)
    clf = PCFGTreeClassifier(binarizer=Binarizer(n_thresholds=k - 1, strategy="uniform")).fit(X, y)
    g = clf.grammar_
    assert (clf.n_nodes_, clf.n_split_edges_) == (n_nodes, n_edges)
    assert g.logL[0] == pytest.approx(log_l, abs=1e-6)
    assert g.log_Q_root == pytest.approx(log_q, abs=1e-6)
    assert g.log_Qmax_root == pytest.approx(log_qmax, abs=1e-6)
    assert clf.tree_.n_nodes == map_nodes
    assert math.exp(clf.map_log_probability_) == pytest.approx(map_post, rel=1e-4)
    assert clf.log_posterior_ == pytest.approx(clf.map_log_probability_ + clf.log_evidence_, abs=1e-9)
    assert clf.optimal_ and clf.stop_reason_ == "completed"


def test_t17_iris_map_tree_in_raw_units():
    b = load_dataset("iris")
    clf = PCFGTreeClassifier().fit(b.data, b.target)
    t = clf.tree_
    text = clf.export_text(feature_names=b.feature_names)
    # the spec's tree: petal length < 2.18, petal width < 1.78, petal length < 5.13 (equal-width edges,
    # values on an edge go up); each cut is printed as the shortest decimal in the gap of training
    # values that holds the edge, which routes the training data exactly as the edge does
    assert "petallength <= 2.45" in text and "petalwidth <= 1.75" in text and "petallength <= 5.15" in text
    for node, edge in ((0, 2.18),):
        x = b.data[:, t.feature[node]]
        below, above = x[x < edge].max(), x[x >= edge].min()
        assert below <= t.threshold[node] < above
    leaves = t.counts[t.split_kind == LEAF].tolist()
    assert sorted(leaves) == sorted([[50, 0, 0], [0, 49, 3], [0, 0, 2], [0, 1, 45]])
    assert set(t.split_kind[t.split_kind != LEAF].tolist()) == {THRESHOLD}


def test_t9_map_size_is_monotone_in_log_phi(caesarian_codes):
    Xc, y, _ = caesarian_codes
    leaves = [PCFGTreeClassifier(log_phi=lp).fit(Xc, y).tree_.n_leaves
              for lp in (0, 0.5, 1, 1.5, 2, 3, 4, 6)]
    assert leaves == [25, 13, 5, 2, 2, 2, 1, 1]


# ---------------------------------------------------------------------------
# invariances (T16)
# ---------------------------------------------------------------------------


def _summary(clf):
    g = clf.grammar_
    return np.array([g.log_Q_root, g.log_Qmax_root, clf.log_evidence_, clf.expected_n_leaves_,
                     clf.log_n_trees_, clf.n_nodes_, clf.n_split_edges_])


def test_t16_invariances(caesarian_codes):
    Xc, y, _ = caesarian_codes
    base = _summary(PCFGTreeClassifier().fit(Xc, y))
    rng = np.random.default_rng(0)
    rows = rng.permutation(len(y))
    variants = {
        "rows permuted": (Xc[rows], y[rows]),
        "features permuted": (Xc[:, [3, 0, 4, 2, 1]], y),
        "increasing transform": (np.column_stack([np.exp(Xc[:, 0]), Xc[:, 1:] ** 3]), y),
        "decreasing transform": (np.column_stack([-2.0 * Xc[:, 0] + 1, Xc[:, 1:]]), y),
        "constant feature": (np.column_stack([Xc, np.full(len(y), 4.0)]), y),
        "duplicated feature": (np.column_stack([Xc, Xc[:, 0]]), y),
        "reversed duplicate": (np.column_stack([Xc, 9 - Xc[:, 0]]), y),
        "classes relabelled": (Xc, 1 - y),
    }
    for name, (X, yy) in variants.items():
        np.testing.assert_allclose(_summary(PCFGTreeClassifier().fit(X, yy)), base, rtol=1e-9, err_msg=name)


def test_raw_data_and_duplicated_raw_column_give_the_same_posterior():
    X, y = load_dataset("iris", return_X_y=True)
    a = PCFGTreeClassifier().fit(X, y)
    b = PCFGTreeClassifier().fit(np.column_stack([X, X[:, 2]]), y)
    np.testing.assert_allclose(_summary(a)[:5], _summary(b)[:5], rtol=1e-9)
    assert b.expected_splits_per_feature_[4] == 0.0  # equivalent splits are credited to feature 2
    np.testing.assert_allclose(b.expected_splits_per_feature_[:4], a.expected_splits_per_feature_, rtol=1e-9)


def _paren(clf):
    """The MAPTree notation of a PCFG tree on 0/1 features (the fixtures' notation)."""
    return clf.tree_.to_paren()


# ---------------------------------------------------------------------------
# Chipman prior: the same engine computes the MAPTree posterior (spec §7)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("oracle", FIXTURE_ORACLES, ids=lambda o: f"{o.fixture}-{o.alpha}-{o.beta}-{o.rho[0]}")
def test_chipman_prior_reproduces_the_maptree_oracles(oracle):
    X, y = FIXTURES[oracle.fixture]()
    clf = PCFGTreeClassifier(prior="chipman", alpha=oracle.alpha, beta=oracle.beta, rho=oracle.rho).fit(X, y)
    assert clf.log_posterior_ == pytest.approx(-oracle.opt, abs=1e-8)
    assert set(clf.tree_.split_kind[clf.tree_.split_kind != LEAF].tolist()) <= {BINARY}
    assert _paren(clf) in oracle.co_optimal
    assert clf.log_evidence_ == pytest.approx(
        log_evidence(X, y, alpha=oracle.alpha, beta=oracle.beta, rho=oracle.rho), abs=1e-8)
    if oracle.fixture in FIXTURE_TREE_COUNTS:
        assert clf.n_trees() == FIXTURE_TREE_COUNTS[oracle.fixture]


@pytest.mark.parametrize("name", ["A", "B", "C", "E", "H"])
def test_chipman_map_equals_maptree_classifier(name):
    X, y = FIXTURES[name]()
    ours = PCFGTreeClassifier(prior="chipman", rho=(2.5, 2.5)).fit(X, y)
    theirs = MAPTreeClassifier(alpha=0.95, beta=0.5, rho=(2.5, 2.5)).fit(X, y)
    assert theirs.optimal_
    assert ours.log_posterior_ == pytest.approx(theirs.log_posterior_, abs=1e-9)
    _, co_optimal = co_optimal_trees(X, y, alpha=0.95, beta=0.5, rho=(2.5, 2.5))
    assert _paren(ours) in co_optimal
    if len(co_optimal) == 1:
        assert _paren(ours) == theirs.tree_.to_paren()
        np.testing.assert_allclose(ours.predict_proba(X, method="map"), theirs.predict_proba(X), atol=1e-12)


def test_chipman_on_random_binary_data_equals_maptree():
    rng = np.random.default_rng(1)
    for _ in range(5):
        X = rng.integers(0, 2, (40, 5))
        y = (X[:, 0] ^ X[:, 1] ^ (rng.random(40) < 0.15)).astype(int)
        ours = PCFGTreeClassifier(prior="chipman", alpha=0.95, beta=0.5, rho=(1.0, 1.0)).fit(X, y)
        theirs = MAPTreeClassifier(alpha=0.95, beta=0.5, rho=(1.0, 1.0)).fit(X, y)
        assert ours.log_posterior_ == pytest.approx(theirs.log_posterior_, abs=1e-9)
        _, co_optimal = co_optimal_trees(X, y, alpha=0.95, beta=0.5, rho=(1.0, 1.0))
        assert _paren(ours) in co_optimal


def test_chipman_bma_and_sampling_work():
    X, y = FIXTURES["B"]()
    clf = PCFGTreeClassifier(prior="chipman", random_state=0).fit(X, y)
    p = clf.predict_proba(X, method="average")
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    q = clf.predict_proba(X, method="sample", n_samples=20_000)
    assert np.abs(p - q).max() < 0.02
    assert all(t.max_depth <= X.shape[1] for t in clf.sample_trees(50, random_state=1))


# ---------------------------------------------------------------------------
# hidden XOR (T22)
# ---------------------------------------------------------------------------


def test_hidden_xor_small():
    # CI-sized version of T22: 8 features (4 noise), 96 rows
    X, y = make_hidden_xor(96, n_features=8, random_state=0)
    clf = PCFGTreeClassifier().fit(X, y)
    assert clf.tree_.n_nodes == 31
    assert set(clf.tree_.feature[clf.tree_.split_kind != LEAF].tolist()) == {0, 1, 2, 3}
    Xt, yt = make_hidden_xor(500, n_features=8, random_state=1)
    assert clf.score(Xt, yt) == 1.0
    assert "x0 = 0" in clf.export_text()


@pytest.mark.slow
def test_hidden_xor_full_size():
    X, y = make_hidden_xor(128, n_features=20, random_state=0)
    clf = PCFGTreeClassifier().fit(X, y)
    assert clf.n_nodes_ == 389_800 and clf.n_split_edges_ == 3_776_197  # spec §3.12, seed 0
    assert clf.tree_.n_nodes == 31
    Xt, yt = make_hidden_xor(2000, random_state=1)
    assert np.mean(clf.predict(Xt, method="map") == yt) == 1.0


# ---------------------------------------------------------------------------
# preprocessing options
# ---------------------------------------------------------------------------


def test_bucketing_options():
    X, y = load_dataset("vertebral", return_X_y=True)
    five = PCFGTreeClassifier(binarizer=Binarizer(n_thresholds=4, strategy="uniform")).fit(X, y)
    assert five.n_values_.tolist() == [5, 5, 5, 5, 5, 3]
    per_column = Binarizer(n_thresholds=9, strategy="uniform", column_n_thresholds={j: 4 for j in range(6)})
    override = PCFGTreeClassifier(binarizer=per_column).fit(X, y)
    assert override.n_nodes_ == five.n_nodes_ == 29689
    quantile = PCFGTreeClassifier(binarizer=Binarizer(n_thresholds=4, strategy="quantile")).fit(X, y)
    assert quantile.n_values_.tolist() == [5] * 6 and quantile.n_nodes_ == 357_508  # spec §3.12
    rows = np.r_[0:20, 290:310]
    one = PCFGTreeClassifier(
        binarizer=Binarizer(n_thresholds=2, strategy="uniform", column_n_thresholds={0: None})
    ).fit(X[rows, :2], y[rows])
    assert one.n_values_[0] == np.unique(X[rows, 0]).size and one.n_values_[1] == 3


def test_deprecated_bucketing_parameters_still_work():
    X, y = load_dataset("vertebral", return_X_y=True)
    with pytest.warns(FutureWarning, match="max_values"):
        five = PCFGTreeClassifier(max_values=5).fit(X, y)
    assert five.n_nodes_ == 29689
    with pytest.warns(FutureWarning, match="binning"):
        quantile = PCFGTreeClassifier(max_values=5, binning="quantile").fit(X, y)
    assert quantile.n_nodes_ == 357_508
    with pytest.warns(FutureWarning, match="feature_max_values"):
        override = PCFGTreeClassifier(feature_max_values={j: 5 for j in range(6)}).fit(X, y)
    assert override.n_nodes_ == 29689


def test_dataframe_names_and_name_overrides():
    pd = pytest.importorskip("pandas")
    b = load_dataset("iris")
    df = pd.DataFrame(b.data, columns=b.feature_names)
    binarizer = Binarizer(n_thresholds=9, strategy="uniform", column_n_thresholds={"sepalwidth": 3})
    clf = PCFGTreeClassifier(binarizer=binarizer).fit(df, b.target)
    assert list(clf.feature_names_in_) == b.feature_names
    assert clf.n_values_[1] == 4
    assert clf.tree_.feature_names == b.feature_names and "petallength" in clf.export_text()
    with pytest.raises(ValueError, match="column_n_thresholds names column 'nope'"):
        PCFGTreeClassifier(binarizer=Binarizer(column_n_thresholds={"nope": 3})).fit(df, b.target)


def test_string_labels_and_rho_vector():
    X, y = load_dataset("iris", return_X_y=True)
    labels = np.array(["setosa", "versicolor", "virginica"])[y]
    clf = PCFGTreeClassifier(rho=[1.0, 2.0, 0.5]).fit(X, labels)
    assert clf.classes_.tolist() == ["setosa", "versicolor", "virginica"]
    assert set(clf.predict(X)) <= set(labels)
    assert clf.rho_.tolist() == [1.0, 2.0, 0.5]


# ---------------------------------------------------------------------------
# scikit-learn API
# ---------------------------------------------------------------------------


def test_sklearn_api_clone_pickle_pipeline_gridsearch():
    X, y = load_dataset("iris", return_X_y=True)
    clf = PCFGTreeClassifier(log_phi=1.5, predict_method="average")
    assert clone(clf).get_params() == clf.get_params()
    clf.fit(X, y)
    restored = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(restored.predict_proba(X), clf.predict_proba(X))
    assert clf.score(X, y) > 0.9
    pipe = make_pipeline(FunctionTransformer(lambda Z: Z[:, 2:]), PCFGTreeClassifier()).fit(X, y)
    assert pipe.score(X, y) > 0.9
    search = GridSearchCV(PCFGTreeClassifier(), {"log_phi": [1.0, 3.0]}, cv=3).fit(X, y)
    assert search.best_params_["log_phi"] in (1.0, 3.0)


# ---------------------------------------------------------------------------
# limits (never a silent approximation, never an error after the pre-flight)
# ---------------------------------------------------------------------------


def test_max_nodes_falls_back_to_a_coarser_exact_grammar():
    X, y = load_dataset("iris", return_X_y=True)
    with pytest.warns(LimitWarning, match="stopped by max_nodes=10000: fitted the exact posterior of a coarser"):
        clf = PCFGTreeClassifier(max_nodes=10_000).fit(X, y)
    assert clf.stop_reason_ == "max_nodes" and not clf.optimal_
    assert clf.n_nodes_ <= 10_000 and [len(g) for g in clf.binarizer_.groups_] == [5, 5, 4, 5]
    # what it holds is exact for the coarser grid
    exact = PCFGTreeClassifier().fit(clf.binarizer_.ordinal_transform(X), y)  # rank codes of the coarse grid
    assert exact.n_nodes_ == clf.n_nodes_ and exact.log_evidence_ == pytest.approx(clf.log_evidence_)
    assert PCFGTreeClassifier(max_nodes=40_000).fit(X, y).n_nodes_ == 32166


def test_below_the_coarsest_grid_the_fallback_keeps_the_best_columns():
    # One threshold per column is already the coarsest grid (729 nodes here); under max_nodes=200 the
    # fallback used to be a single leaf.  Now the rungs below it keep the 1, 2, 4 columns whose one
    # split has the highest marginal likelihood: here the two that make the label, and two others.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 6))
    y = ((X[:, 3] > 0) & (X[:, 5] > 0)).astype(int)
    y = np.where(rng.random(600) < 0.05, 1 - y, y)
    coarsest = Binarizer(n_thresholds=1, strategy="quantile")
    assert PCFGTreeClassifier(binarizer=coarsest).fit(X, y).n_nodes_ == 729
    with pytest.warns(LimitWarning, match="stopped by max_nodes=200: fitted the exact posterior of a coarser"):
        clf = PCFGTreeClassifier(max_nodes=200, binarizer=coarsest).fit(X, y)
    columns = [s.column for s in clf.binarizer_.splits_]
    assert len(columns) == 4 and {3, 5} <= set(columns) and clf.n_nodes_ == 81
    assert clf.score(X, y) > 0.9
    exact = PCFGTreeClassifier().fit(clf.binarizer_.ordinal_transform(X), y)  # the same grammar, asked for
    assert exact.n_nodes_ == clf.n_nodes_ and exact.log_evidence_ == pytest.approx(clf.log_evidence_)


def test_memory_and_time_limits_fall_back():
    X, y = load_dataset("iris", return_X_y=True)
    with pytest.warns(LimitWarning, match="memory_limit"):
        clf = PCFGTreeClassifier(memory_limit=1).fit(X, y)
    assert clf.stop_reason_ == "memory_limit" and clf.predict(X).shape == (150,)
    with pytest.warns(LimitWarning, match="time_limit"):
        clf = PCFGTreeClassifier(time_limit=1e-6).fit(X, y)
    assert clf.stop_reason_ == "time_limit" and clf.tree_.n_leaves >= 1
    np.testing.assert_allclose(clf.predict_proba(X).sum(axis=1), 1.0)


def test_an_overrun_first_grammar_still_leaves_a_coarser_grammar_than_a_leaf(monkeypatch):
    # The first touch of freshly allocated memory took 0.65 s on a CI machine, inside one growth of
    # the first grammar's arrays, between two looks at the clock: no time was left, and the fit
    # used to fall back to a single leaf.  Tiny coarser grammars are now fitted without the clock.
    from arboretum.pcfg import store

    X, y = load_dataset("iris", return_X_y=True)
    grow = store._Arrays.grow
    calls = []

    def slow_first_growth(self, *args):
        if not calls:
            time.sleep(0.6)
        calls.append(args)
        grow(self, *args)

    monkeypatch.setattr(store._Arrays, "grow", slow_first_growth)
    with pytest.warns(LimitWarning, match="time_limit=0.2: fitted the exact posterior of a coarser"):
        clf = PCFGTreeClassifier(time_limit=0.2, binarizer=Binarizer(strategy="all")).fit(X, y)
    assert calls and clf.stop_reason_ == "time_limit" and not clf.optimal_
    assert sum(len(g) for g in clf.binarizer_.groups_) > 0 and clf.n_nodes_ > 1
    assert clf.score(X, y) > 0.9


def test_preflight_refuses_hopeless_problems_quickly():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 8))
    y = rng.integers(0, 2, 300)
    with pytest.raises(GrammarTooLargeError, match="pre-flight estimate"):
        PCFGTreeClassifier(binarizer=Binarizer(strategy="all"), max_nodes=100_000).fit(X, y)
    clf = PCFGTreeClassifier().fit(X[:60, :2], y[:60])
    assert clf.preflight_.bound >= clf.n_nodes_


def test_node_hash_table_is_a_power_of_two_whatever_the_capacity():
    # The probes wrap with ``size - 1`` as a mask: a table of 2 * 5602 slots (60 rows x 200 columns of
    # 8 codes gave that capacity) let a probe cycle through full slots forever, in the pre-flight.
    from arboretum.pcfg.store import _Arrays

    for cap in (1, 3, 4096, 4097, 5602):
        arrays = _Arrays(60, 2, cap, 4 * cap, False)
        size = arrays.ht.shape[0]
        assert size >= 2 * cap and size & (size - 1) == 0
        arrays.grow(3 * cap, 12 * cap, 0, 0)
        size = arrays.ht.shape[0]
        assert size >= 6 * cap and size & (size - 1) == 0


def test_wide_data_honours_time_limit():
    # 60 x 300: the pre-flight's sample stores (not watched by the clock before) and the coarser
    # grammars' binarizers (a scan per column: quadratic) took minutes; now the limit holds.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 300))
    y = ((X[:, 0] + rng.normal(size=60)) > 0).astype(int)
    PCFGTreeClassifier().fit(X[:, :2], y)  # compiled before the clock
    t0 = time.perf_counter()
    with pytest.warns(LimitWarning, match="time_limit"):
        clf = PCFGTreeClassifier(time_limit=0.5).fit(X, y)
    assert time.perf_counter() - t0 < 0.5 * 1.1 + 0.5 + 1.0  # + 1 s for a loaded CI machine
    assert clf.stop_reason_ == "time_limit"
    np.testing.assert_allclose(clf.predict_proba(X).sum(axis=1), 1.0)


# ---------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------


def test_bad_input_errors():
    X, y = load_dataset("iris", return_X_y=True)
    clf = PCFGTreeClassifier()
    X_nan = X.copy()
    X_nan[3, 1] = np.nan
    with pytest.raises(ValueError, match=r"column 1 of X has a missing value \(NaN\) at row 3"):
        clf.fit(X_nan, y)
    X_inf = X.copy()
    X_inf[0, 0] = np.inf
    with pytest.raises(ValueError, match="column 0 of X contains infinity"):
        clf.fit(X_inf, y)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        clf.fit(X, y[:-1])
    with pytest.raises(ValueError, match="at least 2 classes"):
        clf.fit(X, np.zeros(len(y)))
    with pytest.raises(ValueError, match="2D array"):
        clf.fit(X[:, 0], y)
    with pytest.raises(ValueError, match="Unknown label type"):
        clf.fit(X, y + 0.5)
    clf.fit(X, y)
    with pytest.raises(ValueError, match="4 features"):
        clf.predict(X[:, :3])
    with pytest.raises(ValueError, match="missing value"):
        clf.predict_proba(X_nan, method="average")
    with pytest.raises(ValueError, match=r"method must be one of \['average', 'map', 'sample'\]; got 'mean'"):
        clf.predict_proba(X, method="mean")
    with pytest.raises(ValueError, match=r"ensemble must be one of \['paths', 'trees'\]"):
        clf.predict_proba(X, method="sample", ensemble="forest")
    with pytest.raises(ValueError, match="n_samples must be an integer >= 1"):
        clf.predict_proba(X, method="sample", n_samples=0)
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        clf.sample_trees(0)


def test_not_fitted():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        PCFGTreeClassifier().predict(np.zeros((2, 2)))
    with pytest.raises(NotFittedError):
        PCFGTreeClassifier().sample_trees(3)


@pytest.mark.parametrize("params, message", [
    ({"log_phi": float("nan")}, r"log_phi must be a finite number; got nan"),
    ({"log_phi": "2"}, r"log_phi must be a finite number; got '2' \(str\)"),
    ({"rho": -1.0}, "rho must be a positive number or a sequence of positive numbers"),
    ({"rho": [1.0, 1.0]}, "rho has 2 entries but there are 3 classes"),
    ({"alpha": 1.5, "prior": "chipman"}, r"alpha must be a number in \(0, 1\]; got 1.5"),
    ({"prior": "bart"}, r"prior must be one of \['phi', 'chipman'\]"),
    ({"max_values": 1}, "max_values must be .*an integer >= 2 or None; got 1"),
    ({"binning": "kmeans"}, r"binning must be one of \['deprecated', 'uniform', 'quantile'\]; got 'kmeans'"),
    ({"binarizer": "uniform"}, r"binarizer must be an arboretum.Binarizer or None; got 'uniform' \(str\)"),
    ({"max_nodes": 0}, "max_nodes must be an integer >= 1"),
    ({"memory_limit": -5}, r"memory_limit must be a number in \(0, inf\) or None"),
    ({"time_limit": 0}, r"time_limit must be a number in \(0, inf\) or None"),
    ({"predict_method": "vote"}, r"predict_method must be one of \['average', 'map', 'sample'\]"),
    ({"n_samples": 0}, "n_samples must be an integer >= 1"),
    ({"ensemble": "all"}, r"ensemble must be one of \['paths', 'trees'\]"),
])
def test_bad_parameters_name_the_parameter_and_allowed_values(params, message):
    X, y = load_dataset("iris", return_X_y=True)
    with pytest.raises(ValueError, match=message):
        PCFGTreeClassifier(**params).fit(X, y)
