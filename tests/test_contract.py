"""The contract every public estimator of arboretum keeps (docs/conventions.md).

A new estimator joins by adding one ``Case`` line to ``CASES``; it then gets
every check below: scikit-learn's ``check_estimator``, a parameter table that
covers every parameter and is checked before the data is read, DataFrames of
mixed column types in and names and labels out, ``arboretum.save`` /
``arboretum.load`` and pickle round trips with identical predictions, limits
that stop cleanly with a ``LimitWarning``, the same errors for the same bad
inputs, ``binarizer__*`` in ``GridSearchCV``, the common fitted attributes
and the ``predict_proba(method=...)`` vocabulary.
"""

from __future__ import annotations

import io
import pickle
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pandas as pd
import pytest
from sklearn.model_selection import GridSearchCV
from sklearn.utils.estimator_checks import check_estimator

import arboretum
import arboretum.io
from arboretum import (
    InvalidParameterError,
    LimitWarning,
    MAPTreeClassifier,
    MAPTreeRegressor,
    MCMCTreeSampler,
    ConvexPolytopeTreeClassifier,
    ConvexPolytopeTreeRegressor,
    ModelFormatError,
    OptimalTreeClassifier,
    OptimalTreeRegressor,
    PCFGTreeClassifier,
    SMCTreeSampler,
    Tree,
)


@dataclass
class Case:
    """How the contract drives one estimator."""

    make: Callable[..., Any]  # make(**params) -> an estimator set up to be quick on small data
    task: str  # "classification" or "regression"
    limit: dict  # parameters under which a fit of ``hard_data`` stops early
    stop_reason: str  # the stop_reason_ that limit gives
    methods: tuple = ("map",)  # predict_proba methods; the first is the default
    check_params: dict = field(default_factory=dict)  # parameters for check_estimator
    hard: Callable[[], tuple] | None = None  # data on which ``limit`` binds (default: hard_data)
    score: str = "log_posterior_"  # the fitted attribute scoring tree_ (finite after a fit)


CASES = {
    "MAPTreeClassifier": Case(lambda **kw: MAPTreeClassifier(**{"time_limit": 5, **kw}), "classification",
                              {"max_expansions": 1}, "max_expansions"),
    "MAPTreeRegressor": Case(lambda **kw: MAPTreeRegressor(**{"max_expansions": 300, **kw}), "regression",
                             {"max_expansions": 1}, "max_expansions"),
    "PCFGTreeClassifier": Case(lambda **kw: PCFGTreeClassifier(**{"random_state": 0, **kw}), "classification",
                               {"memory_limit": 0.05}, "memory_limit", methods=("average", "map", "sample"),
                               hard=lambda: arboretum.load_dataset("iris", return_X_y=True)),
    "MCMCTreeSampler": Case(lambda **kw: MCMCTreeSampler(**{"n_iterations": 300, "random_state": 0, **kw}),
                            "classification", {"time_limit": 1e-9}, "time_limit", methods=("average", "map")),
    "SMCTreeSampler": Case(lambda **kw: SMCTreeSampler(**{"n_particles": 20, "random_state": 0, **kw}),
                           "classification", {"time_limit": 1e-9}, "time_limit", methods=("average", "map")),
    "OptimalTreeClassifier": Case(lambda **kw: OptimalTreeClassifier(**{"max_splits": 2, "time_limit": 20, **kw}),
                                  "classification", {"time_limit": 1e-9}, "time_limit", score="objective_"),
    "OptimalTreeRegressor": Case(lambda **kw: OptimalTreeRegressor(**{"max_splits": 2, "time_limit": 20, **kw}),
                                 "regression", {"time_limit": 1e-9}, "time_limit", score="objective_"),
    **{c.__name__: Case(lambda c=c, **kw: c(**{"epochs": 4, "refine_epochs": 2, "max_facets": 4, "n_restarts": 1,
                                                "max_depth": 2, "random_state": 0, **kw}),
                        "classification" if c is ConvexPolytopeTreeClassifier else "regression",
                        {"time_limit": 1e-9}, "time_limit", score="objective_",
                        check_params={"epochs": 10, "learning_rate": 0.05, "batch_size": 100})
       for c in (ConvexPolytopeTreeClassifier, ConvexPolytopeTreeRegressor)},
}
IDS = list(CASES)
# Checks scikit-learn itself may skip in this environment, with the reason it gives.
ALLOWED_SKIPS = {"check_array_api_input": "SCIPY_ARRAY_API is not set"}


def mixed_frame(n: int = 90, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """A DataFrame with one column of every supported type, and targets that depend on several."""
    rng = np.random.default_rng(seed)
    size = pd.Categorical(rng.choice(["S", "M", "L"], n), categories=["S", "M", "L"], ordered=True)
    df = pd.DataFrame({
        "age": rng.normal(40, 10, n).round(1),
        "visits": rng.integers(0, 6, n),
        "smoker": rng.random(n) < 0.4,
        "member": pd.array(rng.random(n) < 0.5, dtype="boolean"),
        "colour": pd.Categorical(rng.choice(["red", "green", "blue"], n)),
        "city": rng.choice(["Oslo", "Lima", "Pune"], n).astype(object),
        "size": size,
        "count": pd.array(rng.integers(0, 9, n), dtype="Int64"),
    })
    score = (df["age"] > 42).astype(int) + (df["colour"] == "red") + df["smoker"]
    y_class = np.where(score >= 2, "yes", "no")
    y_real = 2.0 * (df["age"] > 42) + 1.5 * (df["colour"] == "red") + rng.normal(0, 0.3, n)
    return df, y_class, np.asarray(y_real, dtype=float)


def targets(case: Case, y_class, y_real):
    return y_class if case.task == "classification" else y_real


def quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LimitWarning)
        return fn(*args, **kwargs)


@pytest.fixture(params=IDS)
def case(request) -> Case:
    return CASES[request.param]


# ---------------------------------------------------------------------------
# scikit-learn's own checks
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", IDS)
def test_check_estimator_passes(name):
    est = CASES[name].make(**CASES[name].check_params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(est, on_fail=None)
    assert len(results) >= 40
    for r in results:
        if r["status"] == "skipped":
            assert ALLOWED_SKIPS.get(r["check_name"], "<not allowed>") in str(r["exception"]), (
                f"{r['check_name']} was skipped: {r['exception']}"
            )
        else:
            assert r["status"] == "passed", f"{r['check_name']} failed: {r['exception']}"


# ---------------------------------------------------------------------------
# parameters: one table, checked before the data
# ---------------------------------------------------------------------------


def test_parameter_table_covers_every_parameter(case):
    est = case.make()
    table = type(est)._parameter_constraints
    assert set(est.get_params(deep=False)) == set(table), set(est.get_params(deep=False)) ^ set(table)


def test_bad_parameters_are_refused_before_the_data_is_read(case):
    est = case.make()
    for name in est.get_params(deep=False):
        bad = case.make()
        bad.set_params(**{name: object()})
        with pytest.raises(InvalidParameterError, match=f"^{name} must be "):
            bad.fit("not a matrix", None)  # the data would fail too: the parameter must be named first


@pytest.mark.parametrize("name, value", [("time_limit", -1), ("time_limit", float("nan")), ("verbose", 1.5)])
def test_shared_parameter_messages_are_the_same(name, value):
    messages = set()
    for case in CASES.values():
        est = case.make()
        if name not in est.get_params(deep=False):
            continue
        with pytest.raises(InvalidParameterError) as info:
            est.set_params(**{name: value}).fit([[0.0]], [0])
        messages.add(str(info.value))
    assert len(messages) == 1, messages


# ---------------------------------------------------------------------------
# DataFrames in, names and labels out
# ---------------------------------------------------------------------------


def test_mixed_dataframe_in_names_and_labels_out(case):
    df, y_class, y_real = mixed_frame()
    y = targets(case, y_class, y_real)
    est = quiet(case.make().fit, df, y)
    tree = est.tree_
    assert isinstance(tree, Tree)
    assert tree.feature_names == list(df.columns)
    assert list(est.feature_names_in_) == list(df.columns) and est.n_features_in_ == df.shape[1]
    # the tree alone predicts from the raw DataFrame, as the estimator does with method="map"
    leaves = est.apply(df)
    np.testing.assert_array_equal(tree.apply(df), leaves)
    np.testing.assert_array_equal(tree.predict(df), est.predict(df, **({"method": "map"} if case.methods[0] != "map" else {})))
    # category labels travel in the tree
    colour = tree.feature_categories[list(df.columns).index("colour")]
    assert sorted(colour.tolist()) == ["blue", "green", "red"]
    text = tree.export_text()
    assert text == est.export_text()
    for i in np.flatnonzero(tree.split_kind != 0):
        left, _ = tree.split_text(int(i))
        assert left.split(" ")[0] in df.columns
        assert "x[" not in left
    # a tree that splits a category prints its label, not a code
    if (tree.split_kind == 3).any():
        assert any(label in text for label in ("red", "green", "blue", "Oslo", "Lima", "Pune"))
    # columns in another order are matched by name by the tree
    np.testing.assert_array_equal(tree.apply(df[df.columns[::-1]]), leaves)


def test_numpy_object_array_gives_the_same_tree(case):
    df, y_class, y_real = mixed_frame()
    y = targets(case, y_class, y_real)
    a = quiet(case.make().fit, df, y)
    X = df.astype(object).to_numpy()
    X[:, 3] = X[:, 3].astype(bool)
    X[:, 7] = X[:, 7].astype(int)
    b = quiet(case.make().fit, X, y)
    # the same questions, in x0, x1, ... names (ordered categories become one-hot without pandas' order)
    assert b.tree_.feature_names is None and b.export_text().count("x0") >= 0
    assert np.asarray(b.predict(X)).shape == (X.shape[0],)
    assert a.tree_.n_features == b.tree_.n_features


# ---------------------------------------------------------------------------
# persistence
# ---------------------------------------------------------------------------


def predictions(est, case, X):
    out = {"predict": np.asarray(est.predict(X)), "apply": est.apply(X), "text": est.export_text()}
    if case.task == "classification":
        for m in case.methods:
            kw = {"random_state": 0} if m == "sample" else {}
            out[f"proba-{m}"] = est.predict_proba(X, method=m, **kw)
    return out


def assert_same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for k in a:
        if isinstance(a[k], str):
            assert a[k] == b[k], k
        else:
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)


def test_save_load_round_trip(case, tmp_path):
    df, y_class, y_real = mixed_frame()
    y = targets(case, y_class, y_real)
    est = quiet(case.make().fit, df, y)
    path = tmp_path / "model.json"
    arboretum.save(est, path)
    loaded = arboretum.load(path)
    assert type(loaded) is type(est) and loaded.get_params().keys() == est.get_params().keys()
    assert_same(predictions(est, case, df), predictions(loaded, case, df))
    assert loaded.tree_.to_dict() == est.tree_.to_dict()
    # and once more, from the loaded one: the format is stable
    assert arboretum.io.dumps(loaded) == arboretum.io.dumps(est)
    # pickle too
    assert_same(predictions(est, case, df), predictions(pickle.loads(pickle.dumps(est)), case, df))


def test_save_load_binary_numpy(case):
    rng = np.random.default_rng(1)
    X = rng.integers(0, 2, size=(60, 5))
    y = X[:, 0] ^ X[:, 1] if case.task == "classification" else X[:, 0] * 2.0 + rng.normal(0, 0.1, 60)
    est = quiet(case.make().fit, X, y)
    loaded = arboretum.io.loads(arboretum.io.dumps(est))
    assert_same(predictions(est, case, X), predictions(loaded, case, X))


def test_unfitted_round_trip_keeps_parameters(case):
    kw = {"binarizer": arboretum.Binarizer(n_thresholds=3, categorical=["city"])}
    est = case.make(**(kw if "binarizer" in case.make().get_params() else {}))
    loaded = arboretum.io.loads(arboretum.io.dumps(est))
    assert repr(loaded) == repr(est)
    with pytest.raises(Exception, match="not fitted"):
        loaded.predict([[0.0]])


@pytest.mark.parametrize("mutate, match", [
    (lambda d: d.update(version=99), "unsupported arboretum.estimator version 99"),
    (lambda d: d.update(format="arboretum.model"), "arboretum 0.1"),
    (lambda d: d.update(estimator="os.system"), "unknown estimator 'os.system'"),
    (lambda d: d.pop("params"), "'params' must be an object"),
    (lambda d: d["fitted"].pop("tree_"), "tree_"),
    (lambda d: d["fitted"].update(n_features_in_=99), "n_features_in_"),
    (lambda d: d["params"].update(alpha=7), "invalid parameter: alpha must be"),
    (lambda d: d["fitted"].update(tree_={"__tree__": {"format": "arboretum.Tree", "version": 7}}), "version 7"),
    (lambda d: d["fitted"].update(classes_={"__ndarray__": {"dtype": "|O", "shape": [2], "data": "AAAA"}}),
     "numeric dtype"),
])
def test_malformed_files_give_one_clear_error(mutate, match):
    df, y_class, _ = mixed_frame()
    est = quiet(MAPTreeClassifier(max_expansions=50).fit, df, y_class)
    import json

    d = json.loads(arboretum.io.dumps(est))
    mutate(d)
    with pytest.raises(ModelFormatError, match=match):
        arboretum.io.loads(json.dumps(d))
    with pytest.raises(ModelFormatError, match="not a JSON document"):
        arboretum.io.loads("{not json")


# ---------------------------------------------------------------------------
# limits stop cleanly
# ---------------------------------------------------------------------------


def hard_data(case: Case):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 6))
    if case.task == "classification":
        return X, np.where(X[:, 0] * X[:, 1] + 0.5 * rng.normal(size=300) > 0, "a", "b")
    return X, X[:, 0] * X[:, 1] + rng.normal(size=300)


def test_limit_stops_cleanly_with_the_warning(case):
    X, y = case.hard() if case.hard is not None else hard_data(case)
    est = case.make(**case.limit)
    with pytest.warns(LimitWarning, match=f"stopped by {case.stop_reason}") as record:
        est.fit(X, y)
    # the warning points at the caller's line, not into the library
    assert {w.filename for w in record if w.category is LimitWarning} == {__file__}
    assert est.stop_reason_ == case.stop_reason
    if hasattr(est, "optimal_"):
        assert est.optimal_ is False
    assert est.predict(X).shape == (len(y),)
    assert isinstance(est.tree_, Tree)


def test_completed_fit_does_not_warn(case):
    X = np.array([[0, 0], [0, 1], [1, 0], [1, 1]] * 5)
    y = X[:, 0] if case.task == "classification" else X[:, 0].astype(float)
    est = case.make()
    with warnings.catch_warnings():
        warnings.simplefilter("error", LimitWarning)
        est.fit(X, y)
    assert est.stop_reason_ == "completed"


# ---------------------------------------------------------------------------
# the same bad inputs give the same errors
# ---------------------------------------------------------------------------


def test_bad_inputs_same_errors(case):
    df, y_class, y_real = mixed_frame()
    y = targets(case, y_class, y_real)
    est = quiet(case.make().fit, df, y)
    bad = df.copy()
    bad.loc[3, "age"] = np.nan
    with pytest.raises(ValueError, match=r"column 'age' of X has a missing value \(NaN\) at row 3"):
        case.make().fit(bad, y)
    with pytest.raises(ValueError, match=r"column 'age' of X has a missing value \(NaN\) at row 3"):
        est.predict(bad)
    unseen = df.copy()
    unseen["city"] = unseen["city"].replace("Oslo", "Rome")
    with pytest.raises(ValueError, match="column 'city' of X has the category 'Rome' at row"):
        est.predict(unseen)
    with pytest.raises(ValueError, match="X has 7 features, but .* is expecting 8 features"):
        est.predict(df.iloc[:, :7].to_numpy())
    from scipy import sparse

    with pytest.raises(TypeError, match="sparse"):
        case.make().fit(sparse.csr_matrix(np.ones((4, 2))), y[:4])
    with pytest.raises(ValueError, match="(?i)sample"):
        case.make().fit(df.iloc[:0], y[:0])
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        case.make().fit(df, y[:-1])
    if case.task == "classification":
        with pytest.raises(ValueError, match="at least 2 classes"):
            case.make().fit(df, np.full(len(df), "yes"))


# ---------------------------------------------------------------------------
# grid search, fitted attributes, predict_proba vocabulary
# ---------------------------------------------------------------------------


def test_grid_search_tunes_the_default_binarizer(case):
    if "binarizer" not in case.make().get_params():
        pytest.skip("this model splits raw values (no discretiser)")
    df, y_class, y_real = mixed_frame()
    y = targets(case, y_class, y_real)
    grid = GridSearchCV(case.make(), {"binarizer__n_thresholds": [2, 4]}, cv=2)
    quiet(grid.fit, df, y)
    assert grid.best_params_["binarizer__n_thresholds"] in (2, 4)
    assert grid.best_estimator_.binarizer_.n_thresholds == grid.best_params_["binarizer__n_thresholds"]
    # setting it does not touch other instances' defaults
    a = case.make()
    a.set_params(binarizer__n_thresholds=3)
    assert case.make().binarizer is None and a.binarizer.n_thresholds == 3


def test_common_fitted_attributes(case):
    df, y_class, y_real = mixed_frame()
    est = quiet(case.make().fit, df, targets(case, y_class, y_real))
    for attr in ("tree_", "n_features_in_", "feature_names_in_", "fit_time_", "stop_reason_",
                 case.score, "binarizer_"):
        assert hasattr(est, attr), attr
    assert est.fit_time_ > 0 and np.isfinite(getattr(est, case.score))
    if case.task == "classification":
        assert list(est.classes_) == ["no", "yes"]


@pytest.mark.parametrize("name", [n for n in IDS if CASES[n].task == "classification"])
def test_predict_proba_vocabulary(name):
    case = CASES[name]
    df, y_class, _ = mixed_frame()
    est = quiet(case.make().fit, df, y_class)
    default = est.predict_proba(df)
    first = est.predict_proba(df, method=case.methods[0], **({"random_state": 0} if case.methods[0] == "sample" else {}))
    np.testing.assert_allclose(default, first)
    np.testing.assert_allclose(est.predict_proba(df, method="map"), est.tree_.predict_proba(df))
    for m in case.methods:
        p = est.predict_proba(df, method=m, **({"random_state": 0} if m == "sample" else {}))
        np.testing.assert_allclose(p.sum(axis=1), 1.0)
    with pytest.raises(InvalidParameterError, match="method must be one of"):
        est.predict_proba(df, method="bogus")
    if "average" not in case.methods:
        with pytest.raises(InvalidParameterError, match="method must be one of \\['map'\\]"):
            est.predict_proba(df, method="average")


def test_deprecated_names_warn():
    df, y_class, _ = mixed_frame()
    smc = quiet(SMCTreeSampler(n_particles=10, random_state=0).fit, df, y_class)
    with pytest.warns(FutureWarning, match="best_tree_ was renamed tree_"):
        assert smc.best_tree_ is smc.tree_
    with pytest.warns(FutureWarning, match="method='best' was renamed method='map'"):
        smc.predict_proba(df, method="best")
    pcfg = PCFGTreeClassifier().fit(df[["age", "visits"]], y_class)
    with pytest.warns(FutureWarning, match="map_log_posterior_ was renamed log_posterior_"):
        assert pcfg.map_log_posterior_ == pcfg.log_posterior_
    with pytest.warns(FutureWarning, match="method='bma' was renamed method='average'"):
        pcfg.predict_proba(df[["age", "visits"]], method="bma")
    with pytest.warns(FutureWarning, match=r"max_values=\.\.\.\) is deprecated"):
        old = PCFGTreeClassifier(max_values=5).fit(df[["age", "visits"]], y_class)
    assert old.binarizer_.n_thresholds == 4
    with pytest.warns(FutureWarning, match="now rho") as record:
        PCFGTreeClassifier(alpha=0.5).fit(df[["age", "visits"]], y_class)
    assert [w.filename for w in record] == [__file__]
