"""Input types as pandas and scikit-learn users expect them (docs/conventions.md, Input).

Every estimator takes DataFrame columns of any mix of dtypes -- float, ``bool``, nullable
``boolean`` / ``Int64`` / ``Float64``, ``category`` (ordered too), ``string`` and ``object`` --
and gives the same predictions as on the same data in plain columns (numbers, or object labels).
Numbers stored as text are read as numbers, by one rule (``arboretum.data.parse_number``) in
Python and on the command line, so they give the same tree as the numbers themselves; a column
with text that is not a number stays categorical, and a categorical column with very many labels
draws an ``InputWarning``.  Missing values in nullable columns and categories unseen in ``fit``
are refused with the column, the row and the value.
"""

from __future__ import annotations

import csv
import re
import warnings
from typing import Any, Callable

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import arboretum
from arboretum import (
    Binarizer,
    InputWarning,
    LimitWarning,
    MAPTreeClassifier,
    MAPTreeRegressor,
    ConvexPolytopeTreeClassifier,
    ConvexPolytopeTreeRegressor,
    MCMCTreeSampler,
    OptimalTreeClassifier,
    OptimalTreeRegressor,
    PCFGTreeClassifier,
    SMCTreeSampler,
)
from arboretum.cli import main
from arboretum.data import column_kind, parse_number, text_as_numbers

# Every estimator of the contract (tests/test_contract.py), set up to be quick and deterministic
# on tiny data: a fixed search budget rather than a time limit, few thresholds.
SMALL = lambda: Binarizer(n_thresholds=3, strategy="quantile")  # noqa: E731
ESTIMATORS: dict[str, Callable[[], Any]] = {
    "MAPTreeClassifier": lambda: MAPTreeClassifier(max_expansions=2000, binarizer=SMALL()),
    "MAPTreeRegressor": lambda: MAPTreeRegressor(max_expansions=300, binarizer=SMALL()),
    "PCFGTreeClassifier": lambda: PCFGTreeClassifier(random_state=0, binarizer=SMALL()),
    "SMCTreeSampler": lambda: SMCTreeSampler(n_particles=20, random_state=0, binarizer=SMALL()),
    "MCMCTreeSampler": lambda: MCMCTreeSampler(n_iterations=200, random_state=0, binarizer=SMALL()),
    "OptimalTreeClassifier": lambda: OptimalTreeClassifier(max_splits=2),  # raw values: no binarizer
    "OptimalTreeRegressor": lambda: OptimalTreeRegressor(max_splits=2),
    "ConvexPolytopeTreeClassifier": lambda: ConvexPolytopeTreeClassifier(epochs=4, refine_epochs=2, max_facets=4,
                                                                         n_restarts=1, random_state=0),
    "ConvexPolytopeTreeRegressor": lambda: ConvexPolytopeTreeRegressor(epochs=4, refine_epochs=2, max_facets=4,
                                                                       n_restarts=1, random_state=0),
}
NAMES = list(ESTIMATORS)


def test_every_contract_estimator_is_covered():
    from test_contract import CASES

    assert set(ESTIMATORS) == set(CASES)


def is_regressor(name: str) -> bool:
    return name in ("MAPTreeRegressor", "OptimalTreeRegressor", "ConvexPolytopeTreeRegressor")


# ---------------------------------------------------------------------------
# columns of every dtype, each with its plain twin
# ---------------------------------------------------------------------------


def _column(kind: str, rng: np.random.Generator, n: int) -> tuple[Any, Any]:
    """A column of dtype ``kind`` and the same data as a plain column (float or object labels)."""
    if kind == "float":
        x = rng.normal(40, 10, n).round(1)
        return x, x
    if kind == "bool":
        b = rng.random(n) < 0.5
        return b, b.astype(np.int64)
    if kind == "boolean":
        b = rng.random(n) < 0.5
        return pd.array(b, dtype="boolean"), b.astype(np.int64)
    if kind == "Int64":
        i = rng.integers(0, 6, n)
        return pd.array(i, dtype="Int64"), i.astype(np.float64)
    if kind == "Float64":
        x = rng.normal(0, 1, n).round(2)
        return pd.array(x, dtype="Float64"), x
    if kind == "category":
        c = rng.choice(["blue", "green", "red"], n)
        return pd.Categorical(c), c.astype(object)
    if kind == "ordered":  # thresholds over the declared order: the same as the codes as numbers
        codes = rng.integers(0, 3, n)
        return pd.Categorical.from_codes(codes, categories=["S", "M", "L"], ordered=True), codes.astype(float)
    if kind == "string":
        s = rng.choice(["Lima", "Oslo", "Pune"], n)
        return pd.array(s, dtype="string"), s.astype(object)
    if kind == "object":
        s = rng.choice(["a", "b", "c"], n)
        return s.astype(object), s.astype(object)
    if kind == "numtext":  # numbers stored as text in a pandas string column
        x = rng.normal(5, 2, n).round(2)
        return pd.array([repr(float(v)) for v in x], dtype="string"), x
    if kind == "numobject":  # numbers stored as text in an object column, with spaces
        x = rng.integers(-20, 20, n) / 4
        return np.array([f" {v:g}" for v in x], dtype=object), x
    raise ValueError(kind)


KINDS = ["float", "bool", "boolean", "Int64", "Float64", "category", "ordered", "string", "object",
         "numtext", "numobject"]


def frames(kinds: list[str], n: int = 40, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A DataFrame with one column of every kind (named after it) and its plain twin."""
    rng = np.random.default_rng(seed)
    typed, plain = {}, {}
    for k in kinds:
        typed[k], plain[k] = _column(k, rng, n)
    return pd.DataFrame(typed), pd.DataFrame(plain)


def target(name: str, plain: pd.DataFrame, seed: int = 0) -> np.ndarray:
    """Targets that depend on the first columns of ``plain`` (as codes), with some noise."""
    rng = np.random.default_rng(seed + 1)
    n = len(plain)
    score = np.zeros(n)
    for j in range(min(2, plain.shape[1])):
        col = plain.iloc[:, j]
        v = col.to_numpy(dtype=float) if col.dtype.kind in "biuf" else pd.factorize(col, sort=True)[0]
        score += v > np.median(v)
    flip = rng.random(n) < 0.1
    if is_regressor(name):
        return score + rng.normal(0, 0.2, n)
    return np.where((score >= 1) ^ flip, "yes", "no")


def fit(name: str, X: Any, y: Any):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LimitWarning)
        return ESTIMATORS[name]().fit(X, y)


def outputs(name: str, est, X) -> dict[str, np.ndarray]:
    out = {"predict": np.asarray(est.predict(X)), "apply": est.apply(X)}
    if not is_regressor(name):
        out["proba"] = est.predict_proba(X)
    return out


def assert_same_outputs(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


# ---------------------------------------------------------------------------
# every dtype, alone and mixed, for every estimator
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_column_kinds_of_each_dtype(kind):
    typed, plain = frames([kind])
    expected = {"float": "numeric", "bool": "binary", "boolean": "binary", "Int64": "numeric",
                "Float64": "numeric", "category": "categorical", "ordered": "ordered",
                "string": "categorical", "object": "categorical", "numtext": "numeric",
                "numobject": "numeric"}[kind]
    assert column_kind(typed.iloc[:, 0], 0)[0] == expected
    b = Binarizer(n_thresholds=3).fit(typed)
    assert b.column_kinds_ == [expected]
    # the same questions as on the plain twin, and the same 0/1 matrix
    np.testing.assert_array_equal(b.transform(typed), Binarizer(n_thresholds=3).fit(plain).transform(plain))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("kind", KINDS)
def test_each_dtype_alone(name, kind):
    typed, plain = frames([kind])
    y = target(name, plain)
    a, b = fit(name, typed, y), fit(name, plain, y)
    assert_same_outputs(outputs(name, a, typed), outputs(name, b, plain))
    assert np.isfinite(a.score(typed, y))


@pytest.mark.parametrize("name", NAMES)
def test_every_dtype_mixed(name):
    typed, plain = frames(KINDS, n=50, seed=3)
    y = target(name, plain, seed=3)
    est = fit(name, typed, y)
    assert list(est.feature_names_in_) == KINDS
    # predict, predict_proba and score on another frame with the same dtypes
    new_typed, new_plain = frames(KINDS, n=20, seed=4)
    assert np.isfinite(est.score(new_typed, target(name, new_plain, seed=4)))
    if not is_regressor(name):
        np.testing.assert_allclose(est.predict_proba(new_typed).sum(axis=1), 1.0)
    assert_same_outputs(outputs(name, est, new_typed), outputs(name, fit(name, plain, y), new_plain))
    # the estimator's tree alone reads the typed frame too
    np.testing.assert_array_equal(est.tree_.apply(new_typed), est.apply(new_typed))


def test_category_beside_bool_reported_crash():
    """The report of issue 19: a category column beside a bool (or nullable boolean) column."""
    rng = np.random.default_rng(0)
    n = 40
    for other in (rng.random(n) < 0.5, pd.array(rng.random(n) < 0.5, dtype="boolean")):
        df = pd.DataFrame({"c": pd.Categorical(rng.choice(list("abc"), n)), "b": other})
        y = np.where(df["b"].astype(bool) ^ (df["c"] == "a"), 1, 0)
        for name in NAMES:
            est = fit(name, df, y)
            assert est.score(df, y) >= 0.5 or is_regressor(name)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kinds=st.lists(st.sampled_from(KINDS), min_size=1, max_size=4, unique=True),
    seed=st.integers(0, 2**16),
)
def test_random_mixes_match_plain_columns(kinds, seed):
    """Any mix of dtypes fits, predicts as the same data in plain columns, and reads the typed
    frame back at predict time."""
    typed, plain = frames(kinds, n=30, seed=seed)
    name = "MAPTreeClassifier"
    y = target(name, plain, seed=seed)
    if len(np.unique(y)) < 2:
        y[0] = "yes" if y[0] == "no" else "no"
    assert_same_outputs(outputs(name, fit(name, typed, y), typed), outputs(name, fit(name, plain, y), plain))


# ---------------------------------------------------------------------------
# numbers stored as text
# ---------------------------------------------------------------------------


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_parse_number_reads_what_python_writes(x):
    for text in (repr(x), str(x), f"{x:.6e}", f"  {x!r}\t"):
        assert parse_number(text) == float(text)
    assert parse_number(x) == x


def test_parse_number_rules():
    assert parse_number("5") == 5.0 and parse_number("-.5") == -0.5 and parse_number("+1E3") == 1000.0
    assert parse_number("inf") == np.inf and np.isnan(parse_number("NaN")) and np.isnan(parse_number(None))
    assert parse_number(True) == 1.0 and parse_number(b"2.5") == 2.5
    for text in ("", " ", "5 cm", "5,1", "1_000", "0x10", "٣", "1e", ".", "--1", "True", "abc"):
        assert parse_number(text) is None, text
    assert parse_number(object()) is None
    np.testing.assert_array_equal(text_as_numbers(np.array(["1", " 2.5", "-3"])), [1.0, 2.5, -3.0])
    np.testing.assert_array_equal(text_as_numbers(np.array([1, "2", 3.5], dtype=object)), [1.0, 2.0, 3.5])
    assert text_as_numbers(np.array(["1", "2", "x"])) is None


@pytest.mark.parametrize("name", NAMES)
def test_numbers_as_text_give_the_same_tree_as_the_numbers(name):
    X, y = arboretum.load_dataset("iris", return_X_y=True)
    if is_regressor(name):
        X, y = X[:, 1:], X[:, 0]
    a, b = fit(name, X, y), fit(name, X.astype(str), y)
    if b.binarizer_ is not None:  # models that split raw values have none
        assert b.binarizer_.column_kinds_ == ["numeric"] * X.shape[1]
    assert a.export_text() == b.export_text()
    assert_same_outputs(outputs(name, a, X), outputs(name, b, X.astype(str)))
    # either form predicts through either model
    np.testing.assert_array_equal(a.predict(X.astype(str)), b.predict(X))
    # the same in a DataFrame of object or string columns
    df = pd.DataFrame(X.astype(str), columns=[f"x{j}" for j in range(X.shape[1])])
    for frame in (df.astype(object), df.astype("string")):
        assert fit(name, frame, y).export_text() == a.export_text()


def test_iris_as_text_is_no_longer_one_hot():
    """The report of issue 19: iris.data.astype(str) gave 123 one-hot columns and accuracy 0.65.
    With the default binarizer (supervised thresholds) the text gives the tree of the numbers."""
    X, y = arboretum.load_dataset("iris", return_X_y=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LimitWarning)
        a = MAPTreeClassifier(max_expansions=3000).fit(X, y)
        b = MAPTreeClassifier(max_expansions=3000).fit(X.astype(str), y)
    assert b.binarizer_.get_feature_names_out().tolist() == a.binarizer_.get_feature_names_out().tolist()
    assert b.export_text() == a.export_text()
    assert b.score(X.astype(str), y) == a.score(X, y) > 0.9


def test_numbers_mixed_with_text_stay_categorical():
    X = np.array([["1", "a"], ["2", "1.5"], ["3", "b"], ["1", "1.5"]], dtype=object)
    b = Binarizer().fit(X)
    assert b.column_kinds_ == ["numeric", "categorical"]
    assert b.categories_[1].tolist() == ["1.5", "a", "b"]
    # declared categorical keeps numbers stored as text as labels (postcodes, codes)
    assert Binarizer(categorical=[0]).fit(X).categories_[0].tolist() == ["1", "2", "3"]
    df = pd.DataFrame({"zip": pd.Categorical(["10115", "20095", "10115"]), "n": ["1", "2", "3"]})
    assert Binarizer().fit(df).column_kinds_ == ["categorical", "numeric"]


def test_numeric_column_refuses_text_that_is_not_a_number_at_predict():
    X, y = arboretum.load_dataset("iris", return_X_y=True)
    est = fit("MAPTreeClassifier", X.astype(str), y)
    bad = X.astype(str).astype(object)
    bad[2, 1] = "3,5"
    with pytest.raises(ValueError, match="column 1 of X holds the string '3,5' at row 2, but it is a numeric column"):
        est.predict(bad)


def _write_csv(path, header, rows):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)


def test_cli_and_python_read_the_same_csv_the_same_way(tmp_path, capsys):
    d = arboretum.load_dataset("iris")
    rng = np.random.default_rng(0)
    colour = rng.choice(["red", "green", "blue"], len(d.target))
    header = ["sepal_length", "sepal_width", "petal_length", "petal_width", "colour", "code", "species"]
    code = rng.choice(["7", "11", "13.0"], len(d.target))  # numbers as text
    rows = [[*(repr(float(v)) for v in x), c, k, d.target_names[t]]
            for x, c, k, t in zip(d.data, colour, code, d.target)]
    path = tmp_path / "iris.csv"
    _write_csv(path, header, rows)
    model = tmp_path / "model.json"
    args = ["fit", "--csv", str(path), "--target", "species", "--cv", "0", "--max-expansions", "3000",
            "--n-thresholds", "4", "--threshold-strategy", "quantile"]
    assert main(args + ["--save", str(model)]) == 0
    capsys.readouterr()
    cli = arboretum.load(model)
    as_text = pd.read_csv(path, dtype=str, keep_default_na=False)  # every cell as text
    X_text, y = as_text.drop(columns="species"), as_text["species"].to_numpy()

    def py_fit(X, **binarizer):
        b = Binarizer(n_thresholds=4, strategy="quantile", **binarizer)
        return MAPTreeClassifier(max_expansions=3000, time_limit=60, binarizer=b).fit(X, y)

    py = py_fit(X_text)
    assert py.binarizer_.column_kinds_ == cli.binarizer_.column_kinds_ == [
        "numeric", "numeric", "numeric", "numeric", "categorical", "numeric"
    ]
    assert py.export_text() == cli.export_text()
    np.testing.assert_array_equal(py.predict(X_text), cli.predict(X_text.to_numpy()))
    # pandas' own number parsing gives the same tree
    assert py_fit(pd.read_csv(path).drop(columns="species")).export_text() == py.export_text()
    # --categorical on both sides: the column's text as labels
    assert main(args + ["--categorical", "code", "--save", str(model)]) == 0
    capsys.readouterr()
    cli = arboretum.load(model)
    py = py_fit(X_text, categorical=["code"])
    assert cli.binarizer_.column_kinds_[5] == py.binarizer_.column_kinds_[5] == "categorical"
    assert cli.binarizer_.categories_[5].tolist() == py.binarizer_.categories_[5].tolist() == ["11", "13.0", "7"]
    assert py.export_text() == cli.export_text()
    # predict on the command line: numbers as text again
    out = tmp_path / "pred.csv"
    assert main(["predict", str(model), "--csv", str(path), "--target", "species", "--output", str(out)]) == 0
    pred = pd.read_csv(out)["prediction"].to_numpy()
    np.testing.assert_array_equal(pred, py.predict(X_text))


# ---------------------------------------------------------------------------
# errors: missing values in nullable columns, unseen categories
# ---------------------------------------------------------------------------


MISSING = {
    "boolean": (pd.array([True, False, None, True, False, True], dtype="boolean"), "<NA>"),
    "Int64": (pd.array([1, 2, 3, None, 1, 2], dtype="Int64"), "<NA>"),
    "Float64": (pd.array([0.5, 1.5, None, 2.5, 1.0, 0.0], dtype="Float64"), "<NA>"),
    "string": (pd.array(["a", "b", None, "a", "b", "a"], dtype="string"), "<NA>"),
    "category": (pd.Categorical(["a", "b", None, "a", "b", "a"]), "NaN"),
    "object": (np.array(["a", "b", None, "a", "b", "a"], dtype=object), "None|NaN"),  # pandas 3 infers str
    "numtext": (pd.array(["1.5", "2", "7", None, "3", "1"], dtype="string"), "<NA>"),
}


@pytest.mark.parametrize("kind", list(MISSING))
@pytest.mark.parametrize("name", NAMES)
def test_missing_values_are_refused_naming_column_and_row(name, kind):
    col, shown = MISSING[kind]
    row = int(np.flatnonzero(pd.isna(np.asarray(col, dtype=object)))[0])
    clean = pd.Series(col).fillna(pd.Series(col).dropna().iloc[0])
    df = pd.DataFrame({"x": np.arange(6.0), "col": clean})
    y = np.arange(6.0) if is_regressor(name) else np.array([0, 1, 0, 1, 0, 1])
    bad = df.assign(col=col)
    msg = rf"column 'col' of X has a missing value \(({shown})\) at row {row}"
    with pytest.raises(ValueError, match=msg):
        ESTIMATORS[name]().fit(bad, y)
    est = fit(name, df, y)
    with pytest.raises(ValueError, match=msg):
        est.predict(bad)


@pytest.mark.parametrize("kind", ["category", "string", "object"])
@pytest.mark.parametrize("name", NAMES)
def test_unseen_categories_are_refused_at_predict(name, kind):
    typed, plain = frames(["float", kind], n=30)
    y = target(name, plain)
    est = fit(name, typed, y)
    new = typed.copy()
    labels = new[kind].to_numpy(dtype=object, copy=True)
    labels[4] = "Rome"
    new[kind] = pd.Categorical(labels) if kind == "category" else pd.array(labels, dtype=typed[kind].dtype)
    with pytest.raises(ValueError, match=f"column '{kind}' of X has the category 'Rome' at row 4, which was not seen in fit"):
        est.predict(new)


# ---------------------------------------------------------------------------
# many labels: a warning, not a silent one-hot encoding into hundreds of questions
# ---------------------------------------------------------------------------


def test_many_labels_warn_naming_the_column():
    n = 100
    df = pd.DataFrame({"id": [f"p{i:03d}" for i in range(n)], "x": np.arange(n) % 7})
    with pytest.warns(InputWarning, match="column 'id' of X has 100 distinct labels in 100 rows and is one-hot encoded"):
        Binarizer().fit(df)
    y = np.arange(n) % 2
    with pytest.warns(InputWarning, match="column 'id'") as record:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LimitWarning)
            MAPTreeClassifier(max_expansions=50).fit(df, y)
    assert [w.filename for w in record if w.category is InputWarning] == [__file__]  # the caller's line
    # a few labels, or many labels each with enough rows, do not warn
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputWarning)
        Binarizer().fit(pd.DataFrame({"c": np.arange(n) % 32}).astype(str).assign(c=lambda d: "c" + d.c))
        Binarizer().fit(np.array([f"c{i % 40}" for i in range(400)], dtype=object)[:, None])
        Binarizer().fit(np.arange(n, dtype=float).astype(str)[:, None])  # numbers as text are numbers
