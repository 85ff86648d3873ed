"""Tests of arboretum.datasets: the bundled CP4IM datasets."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.utils import Bunch

from arboretum.datasets import list_datasets, load_dataset

# name: (rows, features, count of label 0, count of label 1), from /work/shared/datasets/README.md
EXPECTED = {
    "anneal": (812, 93, 187, 625),
    "audiology": (216, 148, 159, 57),
    "australian-credit": (653, 125, 296, 357),
    "german-credit": (1000, 112, 300, 700),
    "heart-cleveland": (296, 95, 136, 160),
    "hepatitis": (137, 68, 26, 111),
    "hypothyroid": (3247, 88, 277, 2970),
    "kr-vs-kp": (3196, 73, 1527, 1669),
    "lymph": (148, 68, 67, 81),
    "mushroom": (8124, 119, 3916, 4208),
    "primary-tumor": (336, 31, 254, 82),
    "soybean": (630, 50, 538, 92),
    "splice-1": (3190, 287, 1535, 1655),
    "tic-tac-toe": (958, 27, 332, 626),
    "vote": (435, 48, 168, 267),
    "zoo-1": (101, 36, 60, 41),
}


def test_list_datasets():
    names = list_datasets()
    assert names == sorted(EXPECTED)
    assert len(names) == 16
    names.append("mutated")
    assert "mutated" not in list_datasets()


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_load_dataset_shapes_and_class_counts(name):
    rows, features, n0, n1 = EXPECTED[name]
    bunch = load_dataset(name)
    assert isinstance(bunch, Bunch)
    X, y = bunch.data, bunch.target
    assert X.shape == (rows, features) and X.dtype == np.uint8
    assert y.shape == (rows,) and y.dtype == np.int64
    assert set(np.unique(X).tolist()) <= {0, 1}
    assert np.bincount(y, minlength=2).tolist() == [n0, n1]
    assert bunch.feature_names == [f"x{j}" for j in range(features)]
    assert bunch.target_names == ["0", "1"]
    assert bunch.name == name
    assert bunch.filename.endswith(f"{name}.txt.gz")
    assert name in bunch.DESCR and f"Samples: {rows}" in bunch.DESCR
    assert f"class 0: {n0}, class 1: {n1}" in bunch.DESCR
    assert "MIT" in bunch.DESCR and "Guns" in bunch.DESCR and "a7f0fee72b4c" in bunch.DESCR


def test_return_X_y_and_copies():
    X, y = load_dataset("zoo-1", return_X_y=True)
    assert X.shape == (101, 36) and y.shape == (101,)
    bunch = load_dataset("zoo-1")
    np.testing.assert_array_equal(X, bunch.data)
    np.testing.assert_array_equal(y, bunch.target)
    # callers get writable copies: mutating one does not leak into the next load
    assert X.flags.writeable
    X[:] = 7
    y[:] = 7
    X2, y2 = load_dataset("zoo-1", return_X_y=True)
    assert X2.max() == 1 and y2.max() == 1


def test_first_row_of_zoo_matches_file_layout():
    # the label is the first column of the file: "1 0 1 1 0 1 0 0 ..."
    X, y = load_dataset("zoo-1", return_X_y=True)
    assert y[0] == 1
    assert X[0, :7].tolist() == [0, 1, 1, 0, 1, 0, 0]


def test_name_normalisation():
    X, _ = load_dataset("KR_VS_KP", return_X_y=True)
    assert X.shape == (3196, 73)


def test_unknown_name_lists_available_and_suggests():
    with pytest.raises(ValueError) as info:
        load_dataset("zoo")
    msg = str(info.value)
    assert "unknown dataset 'zoo'" in msg and "Did you mean 'zoo-1'?" in msg
    for name in EXPECTED:
        assert name in msg
    with pytest.raises(ValueError, match="Did you mean 'mushroom'"):
        load_dataset("mushrom")
    with pytest.raises(ValueError, match="Available datasets: anneal"):
        load_dataset("qqqqqqqqqqqq")
    with pytest.raises(TypeError, match="name must be a str"):
        load_dataset(3)
