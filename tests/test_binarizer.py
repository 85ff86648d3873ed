"""The Binarizer, and MAPTreeClassifier on raw (real-valued and categorical) features."""

from __future__ import annotations

import pickle
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.datasets import load_iris, load_wine

from arboretum import MAPTreeClassifier, Tree
from arboretum.bayes import log_posterior
from arboretum.data import Binarizer, BinarySplit
from arboretum.tree import BINARY, CATEGORY, LEAF, THRESHOLD, TreeBuilder

pd = pytest.importorskip("pandas")


def _frame(n: int = 40, seed: int = 0):
    """A DataFrame with every supported column type."""
    rng = np.random.default_rng(seed)
    sizes = pd.Categorical(rng.choice(["S", "M", "L"], n), categories=["S", "M", "L", "XL"], ordered=True)
    return pd.DataFrame(
        {
            "age": rng.integers(18, 80, n),
            "income": rng.normal(50.0, 10.0, n).round(2),
            "smoker": rng.random(n) < 0.3,
            "member": rng.integers(0, 2, n),
            "colour": rng.choice(["red", "green", "blue"], n).astype(object),
            "sex": pd.Series(rng.choice(["F", "M"], n), dtype="string"),
            "size": sizes,
            "city": pd.Categorical(rng.choice(["Oslo", "Rome", "Lima"], n)),
        }
    )


def _between_consecutive(values: np.ndarray, t: float) -> bool:
    """t separates two consecutive distinct values: lo <= t < hi with no value in between.

    (t == lo only when lo and hi are adjacent doubles, with no number strictly between.)"""
    v = np.unique(values)
    lo, hi = v[v <= t], v[v > t]
    if lo.size and t == lo.max():
        assert np.nextafter(lo.max(), np.inf) == hi.min(), "t may equal lo only for adjacent doubles"
    return lo.size > 0 and hi.size > 0 and not np.any((v > lo.max()) & (v < hi.min()))


# ---------------------------------------------------------------------------------------------
# Thresholds
# ---------------------------------------------------------------------------------------------
def test_thresholds_all_are_short_midpoints():
    X = np.array([[1.9], [2.0], [2.0], [1000.0], [1001.0], [0.1], [0.2]])
    b = Binarizer(strategy="all").fit(X)
    assert b.thresholds_[0].tolist() == [0.15, 1.05, 1.95, 501.0, 1000.5]
    assert [s.kind for s in b.splits_] == [THRESHOLD] * 5
    np.testing.assert_array_equal(b.transform(X), X <= b.thresholds_[0])


def test_thresholds_quantile_nearest_levels_deduplicated():
    X = np.arange(1.0, 101.0).reshape(-1, 1)  # 100 distinct values
    b = Binarizer(n_thresholds=3).fit(X)
    assert b.thresholds_[0].tolist() == [25.5, 50.5, 75.5]  # quartiles
    skewed = np.r_[np.zeros(90), np.arange(1.0, 11.0)].reshape(-1, 1)
    t = Binarizer(n_thresholds=8).fit(skewed).thresholds_[0]
    assert t[0] == 0.5 and t.size < 8 and np.all(np.diff(t) > 0)  # the 8 levels collapse
    few = np.array([[1.0], [2.0], [3.0]])
    assert Binarizer(n_thresholds=8).fit(few).thresholds_[0].tolist() == [1.5, 2.5]
    assert Binarizer().fit(np.ones((5, 1))).splits_ == []  # a constant column gives no question


@settings(max_examples=60, deadline=None)
@given(
    x=arrays(np.float64, st.integers(2, 60), elements=st.floats(-1e6, 1e6, allow_subnormal=False)),
    n=st.integers(1, 10),
    strategy=st.sampled_from(["quantile", "all"]),
)
@example(x=np.array([999999.9999999999, 1e6]), n=1, strategy="quantile")  # adjacent floats: a long cut, named exactly
def test_thresholds_property(x, n, strategy):
    X = x.reshape(-1, 1)
    b = Binarizer(n_thresholds=n, strategy=strategy).fit(X)
    distinct = np.unique(x)
    if set(distinct.tolist()) == {0.0, 1.0}:
        assert b.column_kinds_ == ["binary"]
        return
    t = b.thresholds_[0]
    assert np.all(np.diff(t) > 0)
    assert all(_between_consecutive(x, ti) for ti in t)
    if strategy == "all":
        assert t.size == distinct.size - 1
    else:
        assert t.size <= n and (t.size > 0) == (distinct.size > 1)
    np.testing.assert_array_equal(b.transform(X), X <= t[None, :])
    names = b.get_feature_names_out()
    assert [float(nm.split(" <= ")[1]) for nm in names] == t.tolist()  # names are exact


# ---------------------------------------------------------------------------------------------
# Names, kinds, encoding, round trips
# ---------------------------------------------------------------------------------------------
def test_mixed_dataframe_kinds_names_and_encoding():
    df = _frame()
    b = Binarizer(n_thresholds=2).fit(df)
    assert b.column_kinds_ == [
        "numeric", "numeric", "binary", "binary", "categorical", "categorical", "ordered", "categorical"
    ]
    names = b.get_feature_names_out().tolist()
    assert names[:4] == [f"age <= {b.thresholds_[0][0]:g}", f"age <= {b.thresholds_[0][1]:g}",
                         names[2], names[3]]
    assert "smoker" in names and "member" in names
    assert [n for n in names if n.startswith("colour")] == [
        "colour == blue", "colour == green", "colour == red"
    ]
    assert [n for n in names if n.startswith("sex")] == ["sex == M"]  # two categories: one column
    assert [n for n in names if n.startswith("size")] == ["size <= S", "size <= M"]
    assert [n for n in names if n.startswith("city")] == ["city == Lima", "city == Oslo", "city == Rome"]
    assert b.categories_[6].tolist() == ["S", "M", "L"]  # declared order, unseen "XL" dropped
    onehot = Binarizer(n_thresholds=2, encoding="onehot").fit(df)
    assert [n for n in onehot.get_feature_names_out() if n.startswith("size")] == [
        "size == S", "size == M", "size == L"
    ]
    E = b.encode(df)
    np.testing.assert_array_equal(E[:, 0], df["age"])
    np.testing.assert_array_equal(E[:, 2], df["smoker"].astype(float))
    np.testing.assert_array_equal(b.categories_[4][E[:, 4].astype(int)], df["colour"])
    np.testing.assert_array_equal(b.categories_[6][E[:, 6].astype(int)], df["size"].astype(object))


def test_every_column_is_its_raw_split():
    """Binary column k is 1 exactly when the raw split splits_[k] says so, on any data."""
    df = _frame(60, seed=1)
    b = Binarizer(n_thresholds=3).fit(df)
    test = _frame(30, seed=2)
    B, E = b.transform(test), b.encode(test)
    for k, s in enumerate(b.splits_):
        assert isinstance(s, BinarySplit)
        tb = TreeBuilder(b.n_features_in_, classes=[0, 1])
        ids = [tb.add_node([0, 0], [0.5, 0.5], d) for d in (0, 1, 1)]
        tb.set_split(ids[0], s.kind, s.column, s.threshold, ids[1], ids[2],
                     categories=s.categories if s.kind == CATEGORY else None)
        goes_left = tb.build().apply(E) == ids[1]
        np.testing.assert_array_equal(B[:, k] == 1, goes_left == s.one_goes_left)


def test_round_trips():
    df = _frame()
    b = Binarizer(n_thresholds=3).fit(df)
    np.testing.assert_array_equal(Binarizer(n_thresholds=3).fit_transform(df), b.transform(df))
    again = pickle.loads(pickle.dumps(b))
    np.testing.assert_array_equal(again.transform(df), b.transform(df))
    np.testing.assert_array_equal(again.get_feature_names_out(), b.get_feature_names_out())
    # The same data as a numpy object array (no dtypes) gives the same numeric/one-hot columns.
    plain = df.drop(columns=["size", "city", "smoker"])
    arr = plain.to_numpy(dtype=object)
    a = Binarizer(n_thresholds=3).fit(arr)
    np.testing.assert_array_equal(a.transform(arr), Binarizer(n_thresholds=3).fit_transform(plain))
    assert a.get_feature_names_out(list(plain.columns)).tolist() == (
        Binarizer(n_thresholds=3).fit(plain).get_feature_names_out().tolist()
    )


def test_numpy_names_lists_and_categorical_parameter():
    X = np.array([[0.5, 7, 0], [1.5, 7, 1], [2.5, 9, 1], [3.5, 11, 0]])
    assert Binarizer(n_thresholds=1).fit(X).get_feature_names_out().tolist() == [
        "x0 <= 2", "x1 <= 8", "x2"
    ]
    cat = Binarizer(categorical=[1]).fit(X)
    assert cat.get_feature_names_out().tolist()[3:] == ["x1 == 7", "x1 == 9", "x1 == 11", "x2"]
    assert Binarizer(categorical=[False, True, False]).fit(X).column_kinds_[1] == "categorical"
    mixed = [[1.0, "a"], [2.0, "b"], [3.0, "a"]]
    assert Binarizer().fit(mixed).get_feature_names_out().tolist() == ["x0 <= 1.5", "x0 <= 2.5", "x1 == b"]
    df = pd.DataFrame({"zip": [10115, 20095, 10115, 80331], "n": [1, 2, 3, 4]})
    assert Binarizer(categorical=["zip"]).fit(df).column_kinds_ == ["categorical", "numeric"]


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------
def test_unseen_category_names_column_and_value():
    df = _frame()
    b = Binarizer().fit(df)
    bad = df.head(3).copy()
    bad.loc[bad.index[1], "colour"] = "purple"
    msg = r"column 'colour' of X has the category 'purple' at row 1.*not seen"
    with pytest.raises(ValueError, match=msg):
        b.transform(bad)
    with pytest.raises(ValueError, match="'purple'"):
        b.encode(bad)


@pytest.mark.parametrize(
    "column,value,match",
    [
        ("income", np.nan, r"column 'income' of X has a missing value \(NaN\) at row 2"),
        ("colour", None, r"column 'colour' of X has a missing value \((None|NaN)\) at row 2"),
        ("income", np.inf, r"column 'income' of X contains infinity"),
    ],
)
def test_missing_values_are_refused(column, value, match):
    df = _frame()
    df.loc[2, column] = value
    with pytest.raises(ValueError, match=match):
        Binarizer().fit(df)
    ok = Binarizer().fit(_frame())
    with pytest.raises(ValueError, match=match):
        ok.transform(df)


def test_nan_in_numpy_and_nullable_columns():
    X = np.array([[1.0, 2.0], [np.nan, 3.0]])
    with pytest.raises(ValueError, match=r"column 0 of X has a missing value \(NaN\) at row 1.*impute"):
        Binarizer().fit(X)
    with pytest.raises(ValueError, match=r"column 0 of X has a missing value \(None\) at row 1"):
        Binarizer().fit(np.array([["a"], [None]], dtype=object))
    df = pd.DataFrame({"k": pd.Series([1, None, 3], dtype="Int64")})
    with pytest.raises(ValueError, match="column 'k' of X has a missing value"):
        Binarizer().fit(df)


@pytest.mark.parametrize(
    "params,exc,match",
    [
        ({"n_thresholds": 0}, ValueError, "n_thresholds must be an integer >= 1; got 0"),
        ({"n_thresholds": 2.5}, TypeError, "n_thresholds must be an integer"),
        ({"strategy": "median"}, ValueError, r"strategy must be one of \['quantile', 'uniform', 'all', 'boosting', 'mixed'\]"),
        ({"encoding": "binary"}, ValueError, r"encoding must be one of \['ordered', 'onehot'\]"),
        ({"categorical": [5]}, ValueError, r"categorical holds column index 5, outside \[0, 1\]"),
        ({"categorical": ["b"]}, ValueError, "categorical names column 'b'"),
        ({"categorical": [True]}, ValueError, "one entry per column"),
        ({"categorical": [1.5]}, TypeError, "categorical must be"),
        ({"subsample": 1}, ValueError, "subsample must be an integer >= 2 or None; got 1"),
        ({"subsample": 2.5}, TypeError, "subsample must be an integer >= 2 or None"),
    ],
)
def test_bad_parameters(params, exc, match):
    with pytest.raises(exc, match=match):
        Binarizer(**params).fit(np.array([[1.0, 2.0], [3.0, 4.0]]))


def test_bad_values_and_shapes():
    X = np.array([[1.0, "a"], [{"no": 1}, "b"]], dtype=object)
    with pytest.raises(TypeError, match=r"column 0 of X holds \{'no': 1\} \(dict\) at row 1"):
        Binarizer().fit(X)
    b = Binarizer().fit(np.array([[1.0], [2.0]]))
    with pytest.raises(ValueError, match="holds the string 'x' at row 0, but it is a numeric column"):
        b.transform(np.array([["x"]], dtype=object))
    with pytest.raises(ValueError, match="X has 2 features, but Binarizer is expecting 1"):
        b.transform(np.ones((3, 2)))
    with pytest.raises(ValueError, match="Reshape your data"):
        b.transform(np.ones(3))
    with pytest.raises(ValueError, match="0 sample"):
        Binarizer().fit(pd.DataFrame({"a": []}))


# ---------------------------------------------------------------------------------------------
# MAPTreeClassifier on raw features
# ---------------------------------------------------------------------------------------------
def _same_as_search_tree(clf, X) -> None:
    """The raw tree and the search tree on the binarised matrix reach the same leaves."""
    B = clf.binarizer_.transform(X)
    if B.shape[1] == 0:  # constant X: the search ran on one constant column, "(constant)"
        B = np.zeros((B.shape[0], 1), dtype=np.uint8)
    np.testing.assert_array_equal(clf.apply(X), clf.search_tree_.apply(B))
    np.testing.assert_array_equal(clf.predict(X), clf.search_tree_.predict(B))
    np.testing.assert_array_equal(clf.predict_proba(X), clf.search_tree_.predict_proba(B))


def test_orientation_threshold_and_category():
    """x <= t goes left in the raw tree; the search put binary value 1 (x <= t) right."""
    x = np.arange(1.0, 21.0)
    colour = np.where(np.arange(20) % 2 == 0, "red", "blue").astype(object)
    y = (x > 10).astype(int)
    clf = MAPTreeClassifier(binarizer=Binarizer(n_thresholds=3)).fit(x.reshape(-1, 1), y)
    t = clf.tree_
    assert t.split_kind[0] == THRESHOLD and t.threshold[0] == 10.5
    assert t.counts[t.children_left[0]].tolist() == [10, 0]
    assert clf.search_tree_.counts[clf.search_tree_.children_right[0]].tolist() == [10, 0]
    assert clf.export_text().startswith("|--- x0 <= 10.5\n|   |--- class: 0")
    clf = MAPTreeClassifier().fit(colour.reshape(-1, 1), (colour == "red").astype(int))
    t = clf.tree_
    assert t.split_kind[0] == CATEGORY and t.categories[0].tolist() == [1.0]  # the code of "red"
    assert t.counts[t.children_left[0]].tolist() == [0, 10]
    assert clf.export_text().splitlines()[0] == "|--- x0 == red"
    _same_as_search_tree(clf, np.array([["red"], ["blue"]], dtype=object))


@st.composite
def _raw_data(draw):
    n = draw(st.integers(6, 40))
    d = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    X = rng.normal(size=(n, d)).round(draw(st.integers(0, 3)))
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int)
    cats = draw(st.booleans())
    if cats:
        colour = rng.choice(["a", "b", "c"], n).astype(object)
        y = np.where(colour == "a", 1 - y, y)
        X = np.column_stack([X.astype(object), colour])
    y[:2] = [0, 1]  # both classes present (after the flip, which could undo it)
    X_new = rng.normal(size=(15, d)) * 2
    if cats:
        X_new = np.column_stack([X_new.astype(object), rng.choice(np.unique(colour), 15)])
    return X, y, X_new


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=_raw_data(), k=st.integers(1, 4), strategy=st.sampled_from(["quantile", "all"]))
@example(data=(np.zeros((6, 1)), np.array([0, 1, 0, 1, 0, 1]), np.ones((15, 1))), k=1, strategy="quantile")
def test_raw_tree_equals_search_tree_on_binarised_data(data, k, strategy):
    X, y, X_new = data
    clf = MAPTreeClassifier(
        alpha=0.99, beta=0.2, binarize="always",  # raw X may happen to be all 0/1
        binarizer=Binarizer(n_thresholds=k, strategy=strategy), time_limit=2,
    ).fit(X, y)
    _same_as_search_tree(clf, X)
    _same_as_search_tree(clf, X_new)  # values never seen in fit, both sides of every threshold
    B = clf.binarizer_.transform(X)
    if B.shape[1] == 0:
        B = np.zeros((B.shape[0], 1), dtype=np.uint8)
    lp = log_posterior(clf.search_tree_, B, np.searchsorted(clf.classes_, y), alpha=0.99, beta=0.2, rho=2.5)
    assert clf.log_posterior_ == pytest.approx(lp)


_LINE = re.compile(r"^(?P<name>.+?) (?P<op><=|>|==|!=|=) +(?P<value>.+)$")


def _parse_export_text(text: str):
    """The printed tree as nested ("leaf", label) / ("split", cond, left, cond, right) tuples."""
    lines = text.rstrip("\n").split("\n")

    def parse(pos: int, depth: int):
        content = lines[pos][len("|   " * depth + "|--- "):]
        if content.startswith("class: "):
            return ("leaf", content[len("class: "):].split("  (")[0]), pos + 1
        left, after = parse(pos + 1, depth + 1)
        right_cond = lines[after][len("|   " * depth + "|--- "):]
        right, end = parse(after + 1, depth + 1)
        return ("split", content, left, right_cond, right), end

    tree, end = parse(0, 0)
    assert end == len(lines)
    return tree


def _holds(cond: str, row: dict) -> bool:
    m = _LINE.match(cond)
    name, op, value = m["name"], m["op"], m["value"]
    x = row[name]
    if op in ("<=", ">"):
        return (float(x) <= float(value)) == (op == "<=")
    return (str(x) == value) == (op in ("==", "="))


def _classify_by_text(node, row: dict) -> str:
    while node[0] == "split":
        _, left_cond, left, right_cond, right = node
        goes_left, goes_right = _holds(left_cond, row), _holds(right_cond, row)
        assert goes_left != goes_right, (left_cond, right_cond, row)
        node = left if goes_left else right
    return node[1]


@pytest.mark.parametrize(
    "loader,k,accuracy", [(load_iris, 8, 0.95), (load_wine, 4, 0.95)], ids=["iris", "wine"]
)
def test_real_data_from_raw_values_follows_printed_thresholds(loader, k, accuracy):
    data = loader(as_frame=True)
    X, y = data.data, data.target_names[data.target]
    clf = MAPTreeClassifier(binarizer=Binarizer(n_thresholds=k), time_limit=10).fit(X, y)
    assert clf.optimal_
    assert clf.score(X, y) >= accuracy
    assert list(clf.feature_names_in_) == list(X.columns)
    text = clf.export_text()
    assert re.match(r"\|--- [a-z_ ()/0-9]+ <= \d+(\.\d+)?\n", text)
    tree = _parse_export_text(text)
    printed = [_classify_by_text(tree, row) for row in X.to_dict("records")]
    assert printed == clf.predict(X).tolist()
    # The same fit from a plain numpy array (names x0, x1, ...) gives the same tree.
    plain = MAPTreeClassifier(binarizer=Binarizer(n_thresholds=k), time_limit=10).fit(X.to_numpy(), y)
    assert plain.tree_.structurally_equal(clf.tree_)
    assert plain.log_posterior_ == pytest.approx(clf.log_posterior_)


def test_mixed_dataframe_fit_predict_and_errors():
    df = _frame(80, seed=3)
    y = np.where((df["colour"] == "red") ^ (df["age"] > 50), "yes", "no")
    clf = MAPTreeClassifier(time_limit=5).fit(df, y)
    assert clf.score(df, y) > 0.9
    assert clf.tree_.feature_names == list(df.columns)
    text = clf.export_text()
    assert "colour == red" in text or "colour != red" in text
    assert re.search(r"age <= \d+(\.5)?\n", text)
    _same_as_search_tree(clf, df)
    np.testing.assert_array_equal(clf.tree_.predict(df), clf.predict(df))
    # JSON round trip of the raw tree (labels inside): identical predictions on the raw frame.
    again = Tree.from_json(clf.tree_.to_json())
    np.testing.assert_array_equal(again.predict(df), clf.predict(df))
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(clf)).predict(df), clf.predict(df))
    bad = df.head(2).copy()
    bad.loc[bad.index[0], "colour"] = "purple"
    with pytest.raises(ValueError, match="column 'colour' of X has the category 'purple'"):
        clf.predict(bad)
    with pytest.raises(ValueError, match="missing value"):
        clf.predict(df.head(2).assign(income=[np.nan, 1.0]))


def test_binarize_modes():
    rng = np.random.default_rng(0)
    Xb = rng.integers(0, 2, size=(40, 5))
    y = Xb[:, 0] ^ (rng.random(40) < 0.1)
    auto = MAPTreeClassifier().fit(Xb, y)
    never = MAPTreeClassifier(binarize=False).fit(Xb, y)
    always = MAPTreeClassifier(binarize="always").fit(Xb, y)
    assert auto.binarizer_ is None and never.binarizer_ is None and auto.tree_ is auto.search_tree_
    assert auto.tree_.to_paren() == never.tree_.to_paren()
    assert always.binarizer_ is not None and always.binarizer_.column_kinds_ == ["binary"] * 5
    assert always.tree_.to_paren() == auto.tree_.to_paren()  # 0/1 columns stay BINARY splits
    assert always.log_posterior_ == auto.log_posterior_
    assert MAPTreeClassifier(binarize=True).fit(Xb, y).log_posterior_ == auto.log_posterior_
    with pytest.raises(ValueError, match="binary"):
        MAPTreeClassifier(binarize=None).fit(Xb + 0.5, y)
    msg = r"binarize must be one of \['auto', 'always'\], a boolean or None; got 'yes'"
    with pytest.raises(ValueError, match=msg):
        MAPTreeClassifier(binarize="yes").fit(Xb, y)
    with pytest.raises(TypeError, match="binarizer must be an arboretum.Binarizer or None"):
        MAPTreeClassifier(binarizer="quantile").fit(Xb + 0.5, y)
    with pytest.raises(ValueError, match="n_thresholds"):
        MAPTreeClassifier(binarizer=Binarizer(n_thresholds=0)).fit(Xb + 0.5, y)
    # auto on binary data refuses non-binary values at predict time, as before
    with pytest.raises(ValueError, match="binary"):
        auto.predict(Xb * 2)


def test_binarizer_parameter_is_cloned_and_tunable():
    from sklearn.model_selection import GridSearchCV

    X, y = load_iris(return_X_y=True)
    given_binarizer = Binarizer(n_thresholds=2)
    clf = MAPTreeClassifier(binarizer=given_binarizer, time_limit=5).fit(X, y)
    assert not hasattr(given_binarizer, "splits_") and clf.binarizer_ is not given_binarizer
    assert clf.get_params()["binarizer__n_thresholds"] == 2
    gs = GridSearchCV(clf, {"binarizer__n_thresholds": [1, 3]}, cv=3).fit(X, y)
    assert gs.best_params_["binarizer__n_thresholds"] in (1, 3) and gs.best_score_ > 0.85


def test_constant_columns_give_a_leaf():
    X = np.column_stack([np.full(10, 3.0), np.array(["a"] * 10, dtype=object)])
    y = np.array([0, 1] * 5)
    clf = MAPTreeClassifier().fit(X, y)
    assert clf.tree_.split_kind.tolist() == [LEAF] and clf.optimal_
    assert clf.predict(X[:2]).tolist() == [0, 0]


def test_single_leaf_and_binary_split_text():
    df = pd.DataFrame({"smoker": [True, False] * 10, "age": np.arange(20.0)})
    y = df["smoker"].astype(int).to_numpy()
    clf = MAPTreeClassifier(binarize=True).fit(df, y)
    assert clf.tree_.split_kind[0] == BINARY
    assert clf.export_text().splitlines()[0] == "|--- smoker = 0"


def test_binarizer_passes_sklearn_estimator_checks():
    # fit's sample_weight steers only the supervised strategies' ensemble (test_thresholds.py)
    WEIGHTS_XFAIL = {"check_sample_weight_equivalence_on_dense_data": "weights steer only the ensemble"}

    import warnings

    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(Binarizer(), on_fail=None, expected_failed_checks=WEIGHTS_XFAIL)
    assert len(results) >= 40
    for r in results:
        if r["status"] == "xfail":
            continue
        if r["status"] == "skipped":
            assert "SCIPY_ARRAY_API is not set" in str(r["exception"]), r["check_name"]
        else:
            assert r["status"] == "passed", f"{r['check_name']} failed: {r['exception']}"


@pytest.mark.parametrize("n_thresholds", [2, 3, 8, 9, 16])
def test_coarsening_halves_each_column_down_to_its_middle_threshold(n_thresholds):
    # PCFG's fallback ladder: every rung a subset of the one before, about half its thresholds, and the
    # last one each column's middle threshold (it used to be the largest: on uniform thresholds a
    # cut near the maximum that split off a handful of rows).
    X = np.random.default_rng(0).normal(size=(2000, 3))
    b = Binarizer(n_thresholds=n_thresholds, strategy="uniform").fit(X)
    original = [np.sort(t) for t in b.thresholds_]
    assert all(t.size == n_thresholds for t in original)
    rung = b
    while (coarser := rung.coarsened()) is not None:
        for before, after in zip(rung.thresholds_, coarser.thresholds_):
            assert set(after) <= set(before) and after.size == (before.size + 1) // 2 - (before.size % 4 == 3)
        rung = coarser
    assert [list(t) for t in rung.thresholds_] == [[t[n_thresholds // 2]] for t in original]


# -- subsample: thresholds from a fixed draw of rows on large data ------------------------------------


@pytest.mark.parametrize("strategy", ["quantile", "uniform", "boosting", "mixed"])
def test_subsample_is_every_row_up_to_its_size(strategy):
    X = _frame(300, seed=3)
    y = (X["income"] > 50).to_numpy().astype(int)
    full = Binarizer(strategy=strategy, subsample=None).fit(X, y)
    for subsample in (300, 10**6):
        b = Binarizer(strategy=strategy, subsample=subsample).fit(X, y)
        assert b.splits_ == full.splits_
        assert [c is None or c.tolist() for c in b.categories_] == [c is None or c.tolist() for c in full.categories_]


@pytest.mark.parametrize("strategy", ["quantile", "uniform", "boosting", "mixed"])
def test_subsample_cuts_between_consecutive_values_of_the_drawn_rows(strategy):
    rng = np.random.default_rng(0)
    n, m = 3000, 500
    X = rng.normal(size=(n, 3)).round(3)
    y = (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int)
    b = Binarizer(n_thresholds=6, strategy=strategy, subsample=m).fit(X, y)
    rows = b._threshold_rows(n)
    assert rows.size == m and np.all(np.diff(rows) > 0)
    for j in range(3):
        drawn = np.unique(X[rows, j])
        for t in b.thresholds_[j]:
            k = np.searchsorted(drawn, t, side="right")  # drawn[k - 1] <= t < drawn[k]
            assert 0 < k < drawn.size
    again = Binarizer(n_thresholds=6, strategy=strategy, subsample=m).fit(X, y)
    assert again.splits_ == b.splits_  # the same draw on every fit
    assert len(b.splits_) >= 3  # every column is cut


def test_subsample_keeps_kinds_categories_and_rare_values_of_every_row():
    rng = np.random.default_rng(1)
    n, m = 2000, 50
    rows = Binarizer(subsample=m)._threshold_rows(n)
    outside = np.setdiff1d(np.arange(n), rows)
    flag = np.zeros(n, bool)
    flag[outside[0]] = True  # a boolean True only outside the drawn rows
    zero_one_two = rng.integers(0, 2, n).astype(float)
    zero_one_two[outside[1]] = 2.0  # 0/1 on the drawn rows, not on every row
    rare = np.full(n, 5.0)
    rare[outside[2]] = 7.0  # constant on the drawn rows
    colour = np.where(rng.random(n) < 0.5, "red", "blue").astype(object)
    colour[outside[3]] = "green"  # a category seen only outside the drawn rows
    X = pd.DataFrame({"flag": flag, "zot": zero_one_two, "rare": rare, "colour": colour,
                      "x": rng.normal(size=n)})
    b = Binarizer(n_thresholds=4, subsample=m).fit(X)
    assert b.column_kinds_ == ["binary", "numeric", "numeric", "categorical", "numeric"]
    assert "green" in b.categories_[3].tolist()
    names = b.get_feature_names_out().tolist()
    assert "flag" in names and "colour == green" in names
    assert b.thresholds_[1].tolist() == [0.5, 1.5] and b.thresholds_[2].tolist() == [6.0]
    assert b.transform(X).shape == (n, len(names))


def test_subsample_does_not_apply_to_every_cut():
    rng = np.random.default_rng(2)
    X = rng.integers(0, 400, size=(1000, 2)).astype(float)
    k = [np.unique(X[:, j]).size - 1 for j in range(2)]
    b = Binarizer(strategy="all", subsample=100).fit(X)
    assert [t.size for t in b.thresholds_] == k
    b = Binarizer(n_thresholds=3, subsample=100, column_n_thresholds={1: None}).fit(X)
    assert b.thresholds_[0].size == 3 and b.thresholds_[1].size == k[1]


def _questions_one_by_one(b, E):
    """The questions and ordinal codes of ``E``, one question at a time (the definition)."""
    B = np.empty((E.shape[0], len(b.splits_)), dtype=np.uint8)
    for k, s in enumerate(b.splits_):
        x = E[:, s.column]
        B[:, k] = x > 0.5 if s.kind == BINARY else (x <= s.threshold if s.kind == THRESHOLD else np.isin(x, s.categories))
    codes = np.empty((E.shape[0], len(b.groups_)), dtype=np.int32)
    for g, cols in enumerate(b.groups_):
        codes[:, g] = (B[:, cols] if b.splits_[cols[0]].kind == BINARY else 1 - B[:, cols]).sum(axis=1)
    return B, codes


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), n_thresholds=st.integers(1, 9), strategy=st.sampled_from(["quantile", "uniform", "all"]))
def test_grouped_questions_and_codes_equal_one_question_at_a_time(seed, n_thresholds, strategy):
    X = _frame(60, seed=seed)
    b = Binarizer(n_thresholds=n_thresholds, strategy=strategy).fit(X)
    E = b.encode(X)
    # values between, at and beyond the thresholds, and NaN (a Tree sends it right)
    E = np.vstack([E, E + 0.25, np.full((1, E.shape[1]), np.nan), np.full((1, E.shape[1]), -np.inf),
                   np.full((1, E.shape[1]), np.inf)])
    for j, t in enumerate(b.thresholds_):
        if t.size:
            E[: t.size, j] = t  # exactly at each threshold: x <= t holds
    B, codes = _questions_one_by_one(b, E)
    np.testing.assert_array_equal(b.binarize_encoded(E), B)
    np.testing.assert_array_equal(b.ordinal_encoded(E), codes)
    # groups in any order of their columns (a loaded model need not number them consecutively)
    perm = np.random.default_rng(seed).permutation(len(b.splits_))
    b.splits_ = [b.splits_[k] for k in perm]
    inverse = np.argsort(perm)
    b.groups_ = [inverse[np.asarray(g)] for g in b.groups_]
    B, codes = _questions_one_by_one(b, E)
    np.testing.assert_array_equal(b.binarize_encoded(E), B)
    np.testing.assert_array_equal(b.ordinal_encoded(E), codes)
