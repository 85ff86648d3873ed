"""The UCI datasets of the BCART-PCFG paper, the ARFF reader, hidden XOR, and feature coding."""

from __future__ import annotations

import gzip

import numpy as np
import pytest
from sklearn.utils import Bunch

from arboretum.datasets import list_datasets, list_uci_datasets, load_dataset, make_hidden_xor
from arboretum.datasets.uci import UCI_DATASETS, read_arff
from arboretum import Binarizer

# name: (rows, features, class counts) -- spec-001 §5.1 and /work/shared/datasets/README.md
EXPECTED = {
    "caesarian": (80, 5, [34, 46]),
    "haberman": (306, 3, [225, 81]),
    "iris": (150, 4, [50, 50, 50]),
    "vertebral": (310, 6, [210, 100]),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_uci_datasets_load_with_shapes_classes_and_provenance(name):
    rows, features, counts = EXPECTED[name]
    bunch = load_dataset(name)
    assert isinstance(bunch, Bunch)
    assert bunch.data.shape == (rows, features) and bunch.data.dtype == np.float64
    assert bunch.target.dtype == np.int64 and np.bincount(bunch.target).tolist() == counts
    assert len(bunch.feature_names) == features and len(bunch.target_names) == len(counts)
    source = UCI_DATASETS[name]
    assert source.commit in bunch.DESCR and source.repository in bunch.DESCR and "BCART-PCFG" in bunch.DESCR
    assert bunch.filename.endswith(source.filename)
    X, y = load_dataset(name.upper(), return_X_y=True)
    np.testing.assert_array_equal(X, bunch.data)
    X[:] = -1  # copies: the cache is untouched
    assert load_dataset(name).data.min() > -1 or name == "vertebral"


def test_uci_values_and_label_order():
    iris = load_dataset("iris")
    assert iris.target_names == ["Iris-setosa", "Iris-versicolor", "Iris-virginica"]
    np.testing.assert_allclose(iris.data[0], [5.1, 3.5, 1.4, 0.2])
    caesarian = load_dataset("caesarian")
    np.testing.assert_array_equal(caesarian.data[0], [22, 1, 0, 2, 0])  # nominal numbers read as numbers
    haberman = load_dataset("haberman")
    assert haberman.target_names == ["1", "2"] and sorted(np.unique(haberman.data[:, 1])) == list(range(58, 70))
    assert load_dataset("vertebral").target_names == ["Abnormal", "Normal"]


def test_uci_names_are_listed_separately_and_in_error_hints():
    assert list_uci_datasets() == ["caesarian", "haberman", "iris", "vertebral"]
    assert "iris" not in list_datasets()  # the CP4IM listing is unchanged
    with pytest.raises(ValueError, match="Did you mean 'iris'"):
        load_dataset("irs")


def test_bundled_files_are_the_shared_copies():
    from hashlib import sha256
    from importlib import resources

    for source in UCI_DATASETS.values():
        raw = gzip.decompress(resources.files("arboretum.datasets").joinpath("data", source.filename).read_bytes())
        assert sha256(raw).hexdigest() == source.sha256


def test_read_arff_parses_and_rejects():
    text = """% comment
@RELATION 'toy'
@attribute 'a b' NUMERIC
@attribute c {x, 'y z'}
@attribute label {no,yes}
@data
1.5,x,no
2,'y z',yes
"""
    relation, attributes, rows = read_arff(text)
    assert relation == "toy"
    assert attributes == [("a b", "numeric"), ("c", ["x", "y z"]), ("label", ["no", "yes"])]
    assert rows == [["1.5", "x", "no"], ["2", "y z", "yes"]]
    with pytest.raises(ValueError, match="has 2 values but the header declares 3"):
        read_arff(text + "3,x\n")
    with pytest.raises(ValueError, match="sparse ARFF"):
        read_arff(text + "{0 1}\n")
    with pytest.raises(ValueError, match="not an ARFF file"):
        read_arff("% only a comment\n")
    with pytest.raises(ValueError, match="unexpected header line 1"):
        read_arff("hello")


def test_make_hidden_xor():
    X, y = make_hidden_xor(64, random_state=0)
    assert X.shape == (64, 20) and X.dtype == np.uint8 and y.dtype == np.int64
    np.testing.assert_array_equal(y, X[:, 0] ^ X[:, 1] ^ X[:, 2] ^ X[:, 3])
    np.testing.assert_array_equal(X, np.random.default_rng(0).integers(0, 2, (64, 20)))  # the spec's generator
    X2, y2 = make_hidden_xor(64, n_features=5, n_relevant=2, random_state=1)
    assert X2.shape == (64, 5) and np.array_equal(y2, X2[:, 0] ^ X2[:, 1])
    with pytest.raises(ValueError, match="n_relevant must be <= n_features=3"):
        make_hidden_xor(10, n_features=3, n_relevant=4)
    with pytest.raises(ValueError, match="n_samples must be an integer >= 1"):
        make_hidden_xor(0)


# ---------------------------------------------------------------------------
# feature coding
# ---------------------------------------------------------------------------


def test_equal_width_buckets_values_on_an_edge_go_up():
    # 4 equal-width buckets of [0, 10]: edges 2.5, 5, 7.5; a training value on an edge goes up
    x = np.array([0.0, 1.0, 2.5, 5.0, 7.5, 10.0, 3.0, 4.0, 6.0, 9.0, 8.0, 2.0])[:, None]
    b = Binarizer(n_thresholds=3, strategy="uniform").fit(x)
    # each cut lies in the gap below the first value at or above its edge: [2, 2.5), [4, 5), [6, 7.5)
    assert [len(g) for g in b.groups_] == [3] and b.n_codes_.tolist() == [4]
    np.testing.assert_array_equal(b.ordinal_transform(x)[:, 0], [0, 0, 1, 2, 3, 3, 1, 1, 2, 3, 3, 0])
    t = b.thresholds_[0]
    assert 2.0 <= t[0] < 2.5 and 4.0 <= t[1] < 5.0 and 6.0 <= t[2] < 7.5


def test_rank_codes_binary_features_and_quantiles():
    x = np.array([[0.0, 1.0, 3.0], [1.0, 1.0, 7.0], [0.0, 0.0, 5.0]])
    b = Binarizer(n_thresholds=9, strategy="uniform").fit(x)
    assert b.column_kinds_ == ["binary", "binary", "numeric"]
    np.testing.assert_array_equal(b.ordinal_transform(x), [[0, 1, 0], [1, 1, 2], [0, 0, 1]])
    # rank-coded between the values (the cut between 3 and 5 is 4); binary: 0.5 goes left
    np.testing.assert_array_equal(b.ordinal_transform(np.array([[0.5, 0.5, 4.5]])), [[0, 0, 1]])
    q = Binarizer(n_thresholds=4, strategy="quantile").fit(np.arange(100.0)[:, None])
    assert q.n_codes_[0] == 5
    ties = Binarizer(n_thresholds=4, strategy="quantile").fit(np.r_[np.zeros(90), np.arange(1.0, 21.0)][:, None])
    assert ties.thresholds_[0].size == np.unique(ties.thresholds_[0]).size


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_raw_thresholds_route_exactly_like_codes(strategy):
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.normal(size=200), rng.integers(0, 4, 200), rng.integers(0, 2, 200),
                         np.round(rng.uniform(0, 5, 200), 1)])
    b = Binarizer(n_thresholds=5, strategy=strategy).fit(X)
    probes = np.concatenate([X.ravel(), np.concatenate(b.thresholds_), rng.uniform(-4, 6, 500)])
    codes = b.ordinal_transform(np.tile(probes[:, None], (1, 4)))
    for g, cols in enumerate(b.groups_):
        for m, k in enumerate(cols.tolist()):
            s = b.splits_[k]
            goes_left = probes <= s.threshold  # BINARY (0.5) and THRESHOLD send x <= t left
            np.testing.assert_array_equal(goes_left, codes[:, g] <= m)


def test_midpoints_of_adjacent_doubles_stay_between_the_values():
    a = 1.0
    b = np.nextafter(a, 2.0)
    binner = Binarizer(strategy="all").fit(np.array([[a], [b]]))
    np.testing.assert_array_equal(binner.ordinal_transform(np.array([[a], [b]]))[:, 0], [0, 1])
