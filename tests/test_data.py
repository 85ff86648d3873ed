"""Tests of arboretum.data: input validation shared by the estimators."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import sparse
from sklearn.exceptions import DataConversionWarning

from arboretum.data import (
    check_binary_features,
    check_classification_targets_encoded,
    check_int,
    check_numeric_features,
    check_positive_number,
)

# ---------------------------------------------------------------------------
# check_binary_features
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "X",
    [
        [[0, 1], [1, 0]],
        np.array([[0.0, 1.0], [1.0, -0.0]]),
        np.array([[True, False], [False, True]]),
        np.array([[0, 1], [1, 0]], dtype=np.int8),
        np.array([[0, 1], [1, 0]], dtype=object),
    ],
)
def test_binary_features_accepts_01_and_bools(X):
    out = check_binary_features(X)
    assert out.dtype == np.uint8 and out.flags.c_contiguous
    np.testing.assert_array_equal(out, np.asarray(X, dtype=float))


def test_binary_features_accepts_dataframes():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"a": [0, 1, 1], "b": [True, False, True]})
    np.testing.assert_array_equal(check_binary_features(df), [[0, 1], [1, 0], [1, 1]])
    fortran = np.asfortranarray(np.eye(3, dtype=np.uint8))
    assert check_binary_features(fortran).flags.c_contiguous


def test_binary_features_names_the_offending_column_and_value():
    X = np.zeros((5, 4))
    X[3, 2] = 0.5
    X[4, 3] = 7
    with pytest.raises(ValueError) as info:
        check_binary_features(X, estimator_name="MAPTreeClassifier")
    msg = str(info.value)
    assert msg.startswith("MAPTreeClassifier requires binary (0/1) features; column 2 of X has value 0.5 (row 3)")
    with pytest.raises(ValueError, match="This estimator requires binary .* column 0 of X_test has value 2"):
        check_binary_features([[2, 0]], name="X_test")
    with pytest.raises(ValueError, match="column 1 of X has value -1"):
        check_binary_features(np.array([[0, -1]], dtype=np.int64))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_binary_features_locates_nan_and_inf(bad):
    X = np.zeros((6, 7))
    X[3, 5] = bad
    X[4, 1] = bad
    with pytest.raises(ValueError, match=r"X contains NaN or infinity \(first at row 3, column 5"):
        check_binary_features(X)


def test_binary_features_none_in_object_array_is_reported_as_nan():
    with pytest.raises(ValueError, match=r"NaN or infinity \(first at row 0, column 1"):
        check_binary_features(np.array([[0, None]], dtype=object))


@pytest.mark.parametrize(
    "X, exc, match",
    [
        ([0, 1, 1], ValueError, "2D array"),
        (np.zeros((0, 3)), ValueError, "0 sample"),
        (np.zeros((3, 0)), ValueError, "0 feature"),
        (np.zeros((2, 2, 2)), ValueError, "dim"),
        ([["a", "b"]], ValueError, "string"),
        (sparse.csr_matrix(np.eye(3)), TypeError, "[Ss]parse"),
    ],
)
def test_binary_features_rejects_bad_shapes_and_types(X, exc, match):
    with pytest.raises(exc, match=match):
        check_binary_features(X)


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 8), st.integers(1, 8)),
              elements=st.sampled_from([0.0, 1.0, 0.5, 2.0, -1.0])))
def test_binary_features_property(X):
    bad = (X != 0) & (X != 1)
    if bad.any():
        column = int(np.flatnonzero(bad.any(axis=0))[0])
        with pytest.raises(ValueError, match=f"column {column} of X"):
            check_binary_features(X)
    else:
        np.testing.assert_array_equal(check_binary_features(X), X)


def test_numeric_features():
    out = check_numeric_features([[1, 2.5], [3, 4]])
    assert out.dtype == np.float64 and out.shape == (2, 2)
    with pytest.raises(ValueError, match=r"X_new contains NaN or infinity \(first at row 1, column 0"):
        check_numeric_features([[1, 2], [np.nan, 1]], name="X_new")
    with pytest.raises(ValueError, match="2D array"):
        check_numeric_features([1, 2])


# ---------------------------------------------------------------------------
# check_classification_targets_encoded
# ---------------------------------------------------------------------------


def test_targets_encoded_with_sorted_classes():
    y_enc, classes = check_classification_targets_encoded(["b", "a", "c", "a"])
    np.testing.assert_array_equal(classes, ["a", "b", "c"])
    np.testing.assert_array_equal(y_enc, [1, 0, 2, 0])
    assert y_enc.dtype == np.int64
    y_enc, classes = check_classification_targets_encoded(np.array([3.0, 1.0, 3.0]))
    np.testing.assert_array_equal(classes, [1.0, 3.0])
    np.testing.assert_array_equal(y_enc, [1, 0, 1])
    y_enc, classes = check_classification_targets_encoded([True, False])
    assert classes.dtype == bool and y_enc.tolist() == [1, 0]


def test_targets_column_vector_warns_like_sklearn():
    with pytest.warns(DataConversionWarning, match="column-vector y"):
        y_enc, classes = check_classification_targets_encoded(np.array([[0], [1], [1]]))
    assert y_enc.shape == (3,)


def test_targets_one_class():
    with pytest.raises(ValueError, match=r"needs samples of at least 2 classes; got 1 class: \[7\]") as info:
        check_classification_targets_encoded([7, 7, 7])
    assert "class" in str(info.value)  # what sklearn's check_classifiers_one_label looks for
    with pytest.raises(ValueError, match=r"^MAPTreeClassifier needs samples of at least 3 classes; got 2 classes"):
        check_classification_targets_encoded([0, 1], min_classes=3, estimator_name="MAPTreeClassifier")
    y_enc, classes = check_classification_targets_encoded([7, 7], min_classes=1)
    assert classes.tolist() == [7] and y_enc.tolist() == [0, 0]


@pytest.mark.parametrize(
    "y, match",
    [
        ([0.0, np.nan, 1.0], r"y contains NaN or infinity \(first at index 1"),
        ([0.0, 1.0, np.inf], r"y contains NaN or infinity \(first at index 2"),
        (np.array(["a", None], dtype=object), r"missing value.*index 1"),
        (np.zeros((3, 2)), "1d array"),
        ([], "y is empty"),
        ([0.1, 0.7, 1.3], "Unknown label type"),
    ],
)
def test_targets_rejected(y, match):
    with pytest.raises(ValueError, match=match):
        check_classification_targets_encoded(y)


def test_targets_length_must_match_X():
    with pytest.raises(ValueError, match="X has 4, y has 3"):
        check_classification_targets_encoded([0, 1, 0], n_samples=4)


def test_targets_bad_min_classes():
    with pytest.raises(ValueError, match="min_classes must be an integer >= 1; got 0"):
        check_classification_targets_encoded([0, 1], min_classes=0)


# ---------------------------------------------------------------------------
# scalar parameter checks
# ---------------------------------------------------------------------------


def test_positive_number_accepts_and_converts():
    assert check_positive_number(0.5, "alpha", upper=1) == 0.5
    assert check_positive_number(1, "alpha", upper=1) == 1.0
    assert isinstance(check_positive_number(np.float32(2), "rho"), float)
    assert check_positive_number(0, "beta", strictly=False) == 0.0
    assert check_positive_number(None, "time_limit", allow_none=True) is None
    assert check_positive_number(np.inf, "time_limit", allow_inf=True) == np.inf


@pytest.mark.parametrize(
    "value, kwargs, exc, message",
    [
        (1.5, dict(upper=1), ValueError, "alpha must be a number in (0, 1]; got 1.5"),
        (1, dict(upper=1, upper_inclusive=False), ValueError, "alpha must be a number in (0, 1); got 1"),
        (0, {}, ValueError, "alpha must be a number in (0, inf); got 0"),
        (-0.1, dict(strictly=False), ValueError, "alpha must be a number in [0, inf); got -0.1"),
        (float("nan"), {}, ValueError, "alpha must be a number in (0, inf); got nan"),
        (float("inf"), {}, ValueError, "alpha must be a number in (0, inf); got inf"),
        ("0.5", {}, TypeError, "alpha must be a number in (0, inf); got '0.5' (str)"),
        (True, {}, TypeError, "alpha must be a number in (0, inf); got True (bool)"),
        (None, {}, TypeError, "alpha must be a number in (0, inf); got None (NoneType)"),
        (0, dict(allow_none=True), ValueError, "alpha must be a number in (0, inf) or None; got 0"),
        (2.5, dict(upper=2.25), ValueError, "alpha must be a number in (0, 2.25]; got 2.5"),
    ],
)
def test_positive_number_errors(value, kwargs, exc, message):
    with pytest.raises(exc) as info:
        check_positive_number(value, "alpha", **kwargs)
    assert str(info.value) == message


def test_int_accepts():
    assert check_int(3, "max_depth", minimum=1) == 3
    assert type(check_int(np.int32(3), "max_depth")) is int
    assert check_int(None, "max_depth", minimum=0, allow_none=True) is None
    assert check_int(-5, "offset") == -5


@pytest.mark.parametrize(
    "value, kwargs, exc, message",
    [
        (0, dict(minimum=1), ValueError, "max_depth must be an integer >= 1; got 0"),
        (11, dict(minimum=1, maximum=10), ValueError, "max_depth must be an integer in [1, 10]; got 11"),
        (3, dict(maximum=2), ValueError, "max_depth must be an integer <= 2; got 3"),
        (2.0, dict(minimum=1), TypeError, "max_depth must be an integer >= 1; got 2.0 (float)"),
        (True, {}, TypeError, "max_depth must be an integer; got True (bool)"),
        ("3", dict(minimum=0, allow_none=True), TypeError, "max_depth must be an integer >= 0 or None; got '3' (str)"),
        (None, {}, TypeError, "max_depth must be an integer; got None (NoneType)"),
    ],
)
def test_int_errors(value, kwargs, exc, message):
    with pytest.raises(exc) as info:
        check_int(value, "max_depth", **kwargs)
    assert str(info.value) == message


def test_no_warnings_on_clean_input():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_binary_features([[0, 1]])
        check_classification_targets_encoded([0, 1])


_MIXED_VALUES = st.sampled_from(["a", "b", "3.5", b"x", 1, 2.5, True, np.False_, np.int8(3), np.float32(1.5),
                                 float("nan"), np.float64("nan"), None, object(), 1 + 2j])


@settings(max_examples=200, deadline=None)
@given(st.lists(_MIXED_VALUES, min_size=1, max_size=12))
def test_object_column_check_agrees_with_a_row_by_row_scan(values):
    """The type-level check of object columns (one pass over the distinct types, pandas.isna for
    floats) accepts and refuses exactly what a scan of every row does, and names the same row."""
    import pandas as pd

    from arboretum import data as D

    col = np.empty(len(values), dtype=object)
    col[:] = values
    expected = None
    for i, v in enumerate(values):
        if v is None or (isinstance(v, (float, np.floating)) and np.isnan(v)):
            expected = (ValueError, f"at row {i}")
            break
        if not (isinstance(v, (str, bytes)) or isinstance(v, (int, float, bool, np.number, np.bool_))) or (
            isinstance(v, complex)
        ):
            expected = (TypeError, f"at row {i}")
            break
    for read in (lambda c: D.label_values(c, 0), lambda c: D.label_values(pd.Series(c), 0),
                 lambda c: D.column_kind(c, 0)):
        if expected is None:
            read(col)
        else:
            with pytest.raises(expected[0], match=expected[1]):
                read(col)


def test_encode_columns_borrows_a_float_matrix_only_when_asked_and_checked():
    from arboretum.data import encode_columns, read_columns

    X = np.arange(15.0).reshape(5, 3)
    for view in (X, X[1:4]):
        cols, _, _ = read_columns(view)
        out = encode_columns(cols, None, borrow=True)
        assert np.shares_memory(out, view) and out.flags.c_contiguous and np.array_equal(out, view)
        copy = encode_columns(cols, None)
        assert not np.shares_memory(copy, view) and np.array_equal(copy, view)
    # anything but the columns of one C-ordered float64 matrix is copied as before
    for other in (X.astype(np.float32), np.asfortranarray(X), X[:, ::-1], X[:, :2], X[::2]):
        cols, _, _ = read_columns(other)
        out = encode_columns(cols, None, borrow=True)
        assert not np.shares_memory(out, X) and np.array_equal(out, other)
    cols, _, _ = read_columns(X)
    assert not np.shares_memory(encode_columns(cols[::-1], None, borrow=True), X)  # columns out of order
    bad = X.copy()
    bad[2, 1] = np.nan
    cols, _, _ = read_columns(bad)
    with pytest.raises(ValueError, match="row 2"):
        encode_columns(cols, None, borrow=True)
    assert np.shares_memory(encode_columns(cols, None, borrow=True, allow_nan=True), bad)


def test_the_raw_value_models_read_a_float_matrix_without_copying_it():
    """The optimal and polytope trees only read ``X``: a C-ordered float64 array is used as it is
    (no 80 MB copy on 500,000 x 20), and left unchanged by the fit."""
    import pandas as pd

    from arboretum import ConvexPolytopeTreeClassifier, OptimalTreeClassifier
    from arboretum.data import raw_columns

    X = np.random.default_rng(0).normal(size=(60, 3))
    E, cats = raw_columns(X, OptimalTreeClassifier(), borrow=True)
    assert np.shares_memory(E, X) and cats == [None, None, None]
    assert not np.shares_memory(raw_columns(X, OptimalTreeClassifier())[0], X)
    df = pd.DataFrame({"a": X[:, 0], "c": pd.Categorical(np.where(X[:, 1] > 0, "u", "v"))})
    E, cats = raw_columns(df, OptimalTreeClassifier(), borrow=True)  # a category column: encoded, a copy
    assert E.shape == (60, 2) and list(cats[1]) == ["u", "v"]
    y = (X[:, 0] > 0).astype(int)
    before = X.copy()
    estimators = [OptimalTreeClassifier(max_depth=2)]
    try:
        import torch  # noqa: F401

        estimators.append(ConvexPolytopeTreeClassifier(max_depth=1, epochs=2, random_state=0))
    except ImportError:
        pass
    for est in estimators:
        est.fit(X, y)
        assert np.array_equal(X, before)
