"""The contract of the density estimators (sibling of tests/test_contract.py, whose checks assume a
classifier or regressor): one line per estimator in ``CASES``."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

import arboretum
from arboretum import (BranchSparseDensityTree, CategoricalDET, DensityCV, HistogramDensity,
                       InvalidParameterError, LeafSparseDensityTree, SparseDensityRuleList)

CASES = {
    "LeafSparseDensityTree": (lambda **kw: LeafSparseDensityTree(**{"random_state": 0, **kw}), {"lam": -1}),
    "BranchSparseDensityTree": (lambda **kw: BranchSparseDensityTree(**{"random_state": 0, **kw}), {"alpha": 0}),
    "SparseDensityRuleList": (lambda **kw: SparseDensityRuleList(**{"n_iter": 300, "random_state": 0, **kw}),
                              {"max_rule_size": 0}),
    "HistogramDensity": (lambda **kw: HistogramDensity(**kw), {"alpha": -1.0}),
    "CategoricalDET": (lambda **kw: CategoricalDET(**{"cv": 3, "random_state": 0, **kw}), {"cv": -2}),
    "DensityCV": (lambda **kw: DensityCV(**{"estimator": [LeafSparseDensityTree(), HistogramDensity()],
                                            "param_grid": [{"lam": [2, 5]}, None], "cv": 3, **kw}), {"cv": 1}),
}
IDS = list(CASES)


def frame(n: int = 120, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    colour = rng.choice(["red", "green", "blue"], n, p=[0.6, 0.3, 0.1])
    return pd.DataFrame({
        "colour": pd.Categorical(colour),
        "city": np.where(colour == "red", rng.choice(["Oslo", "Lima"], n), "Pune").astype(object),
        "smoker": rng.random(n) < 0.3,
        "visits": rng.integers(0, 3, n),
    })


@pytest.fixture(params=IDS)
def name(request):
    return request.param


def test_params_validated_before_data(name):
    make, bad = CASES[name]
    est = make(**bad)
    with pytest.raises(InvalidParameterError, match=list(bad)[0]):
        est.fit("not data at all")


def test_clone_and_params(name):
    est = CASES[name][0]()
    twin = clone(est)
    # repr: a meta-estimator's candidates are cloned (equal, not identical)
    assert {k: repr(v) for k, v in twin.get_params().items()} == {k: repr(v) for k, v in est.get_params().items()}
    key = next(iter(CASES[name][1]))
    assert est.set_params(**{key: est.get_params()[key]}) is est


def test_not_fitted(name):
    with pytest.raises(NotFittedError):
        CASES[name][0]().score_samples(frame())


def test_fit_score_pickle_save_load_deterministic(name, tmp_path):
    X = frame()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", arboretum.LimitWarning)
        est = CASES[name][0]().fit(X)
        again = CASES[name][0]().fit(X)
    s = est.score_samples(X)
    assert s.shape == (len(X),) and np.all(s <= 0)
    assert est.score(X) == pytest.approx(s.sum())
    np.testing.assert_array_equal(again.score_samples(X), s)  # determinism
    assert list(est.feature_names_in_) == list(X.columns) and est.n_features_in_ == 4
    assert est.leaf_probabilities_.sum() == pytest.approx(1.0) and est.n_leaves_ >= 1
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(est)).score_samples(X), s)
    arboretum.save(est, tmp_path / "m.json")
    loaded = arboretum.load(tmp_path / "m.json")
    np.testing.assert_array_equal(loaded.score_samples(X), s)
    assert loaded.export_text() == est.export_text()
    assert np.asarray(est.sample(7, random_state=0)).shape == (7, 4)
    with warnings.catch_warnings():  # an array after a DataFrame: scikit-learn warns, the labels still read
        warnings.simplefilter("ignore", UserWarning)
        np.testing.assert_array_equal(est.score_samples(X.to_numpy()), s)


def test_load_refuses_inconsistent_state(name, tmp_path):
    est = CASES[name][0]().fit(frame())
    d = arboretum.io.to_dict(est)
    d["fitted"]["n_leaves_"] = 10**6
    with pytest.raises(arboretum.ModelFormatError):
        arboretum.io.from_dict(d)
