"""The ``arboretum`` command: fit, save, predict, errors."""

from __future__ import annotations

import csv
import json
import re

import numpy as np
import pytest

from arboretum import load_dataset
from arboretum.cli import main


def _write_csv(path, X, y, names):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["label"] + list(names))
        for t, r in zip(y, X):
            w.writerow([t] + list(r))


def test_fit_dataset_prints_tree_certificate_and_cv(tmp_path, capsys):
    model = tmp_path / "model.json"
    assert main(["fit", "--dataset", "zoo-1", "--cv", "3", "--save", str(model)]) == 0
    out = capsys.readouterr().out
    assert "|--- x6" in out  # the MAP stump of zoo-1, with its feature name
    assert "log posterior of this tree:  -19.9180" in out
    assert "certificate: optimal" in out
    for name in ("MAPTree", "CART depth 4", "CART unpruned"):
        assert name in out
    assert "3-fold test acc" in out
    saved = json.loads(model.read_text())
    assert saved["format"] == "arboretum.estimator" and saved["fitted"]["optimal_"] is True
    import arboretum

    loaded = arboretum.load(model)
    X, y = load_dataset("zoo-1", return_X_y=True)
    assert loaded.optimal_ and loaded.score(X, y) > 0.9


def test_fit_reports_gap_when_stopped(capsys):
    main(["fit", "--dataset", "tic-tac-toe", "--max-expansions", "50", "--cv", "0"])
    out = capsys.readouterr().out
    assert "not certified (stopped by max_expansions)" in out and "gap" in out


def test_csv_fit_and_predict_round_trip(tmp_path, capsys):
    b = load_dataset("hepatitis")
    names = [f"feat_{j}" for j in range(b.data.shape[1])]
    train = tmp_path / "train.csv"
    _write_csv(train, b.data, b.target, names)
    model = tmp_path / "m.json"
    assert main(["fit", "--csv", str(train), "--target", "label", "--cv", "0", "--save", str(model)]) == 0
    out = capsys.readouterr().out
    assert "feat_" in out
    # Prediction CSV with the columns in another order and no label.
    test = tmp_path / "test.csv"
    order = np.random.default_rng(0).permutation(len(names))
    with open(test, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([names[j] for j in order])
        for r in b.data[:20]:
            w.writerow(list(r[order]))
    pred = tmp_path / "pred.csv"
    assert main(["predict", str(model), "--csv", str(test), "--output", str(pred)]) == 0
    rows = list(csv.reader(open(pred)))
    assert rows[0] == ["prediction", "p(0)", "p(1)"]
    from arboretum import MAPTreeClassifier

    clf = MAPTreeClassifier().fit(b.data, b.target)
    assert [int(r[0]) for r in rows[1:]] == clf.predict(b.data[:20]).tolist()


def test_cli_errors(tmp_path, capsys):
    with pytest.raises(SystemExit, match="Did you mean 'hepatitis'"):
        main(["fit", "--dataset", "hepatitus"])
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b,label\n0,1,1\n0,?,0\n")
    with pytest.raises(SystemExit, match=r"line 3, column 'b': missing value '\?'"):
        main(["fit", "--csv", str(bad), "--target", "label"])
    with pytest.raises(SystemExit, match="not a column"):
        main(["fit", "--csv", str(bad), "--target", "nope"])
    with pytest.raises(SystemExit, match="not found"):
        main(["predict", str(tmp_path / "missing.json"), "--csv", str(bad)])
    with pytest.raises(SystemExit, match="--categorical names 'zz'"):
        main(["fit", "--dataset", "zoo-1", "--categorical", "zz"])
    with pytest.raises(SystemExit, match="n_thresholds must be an integer >= 1"):
        nb = tmp_path / "nb.csv"
        nb.write_text("a,b,label\n0,2,1\n1,0,0\n1,1,0\n0,0,1\n")
        main(["fit", "--csv", str(nb), "--target", "label", "--n-thresholds", "0", "--cv", "0"])


def test_csv_with_non_binary_columns_is_binarised(tmp_path, capsys):
    nonbinary = tmp_path / "nb.csv"
    nonbinary.write_text("a,b,label\n0,2,1\n1,0,0\n1,1,0\n0,0,1\n")
    assert main(["fit", "--csv", str(nonbinary), "--target", "label", "--cv", "0"]) == 0
    out = capsys.readouterr().out
    assert "4 samples x 2 features -> 3 binary features" in out
    assert "certificate: optimal" in out


def _write_iris(path, rows, order=None, colours=("red", "green", "blue")):
    from sklearn.datasets import load_iris

    d = load_iris()
    header = ["sepal_length", "sepal_width", "petal_length", "petal_width", "colour", "species"]
    table = [list(r) + [colours[i % len(colours)], d.target_names[t]]
             for i, (r, t) in enumerate(zip(d.data, d.target))][:rows]
    order = order or list(range(len(header)))
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([header[j] for j in order])
        for r in table:
            w.writerow([r[j] for j in order])
    return d


def test_csv_real_and_text_columns_fit_save_predict(tmp_path, capsys):
    train = tmp_path / "iris.csv"
    d = _write_iris(train, 150)
    model = tmp_path / "m.json"
    args = ["fit", "--csv", str(train), "--target", "species", "--cv", "3", "--save", str(model),
            "--n-thresholds", "4", "--threshold-strategy", "quantile", "--time-limit", "10",
            "--strategy", "best-first"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "150 samples x 5 features -> 19 binary features" in out  # 4 x 4 thresholds + 3 colours
    assert "one-hot categories for colour" in out
    assert re.search(r"\n\|--- (sepal|petal)_(length|width) <= \d+(\.\d+)?\n", out)  # raw thresholds
    assert "certificate: optimal" in out and "3-fold test acc" in out
    import arboretum

    saved = arboretum.load(model)
    assert saved.binarizer.n_thresholds == 4 and saved.binarizer.strategy == "quantile"
    assert saved.strategy == "best-first"
    assert saved.tree_.feature_names[4] == "colour"
    assert saved.binarizer_.categories_[4].tolist() == ["blue", "green", "red"]
    # Predict from a CSV with the columns in another order: the same predictions as the estimator.
    test = tmp_path / "test.csv"
    _write_iris(test, 150, order=[4, 3, 2, 1, 0, 5])
    pred = tmp_path / "pred.csv"
    args = ["predict", str(model), "--csv", str(test), "--target", "species", "--output", str(pred)]
    assert main(args) == 0
    rows = list(csv.reader(open(pred)))
    assert rows[0] == ["prediction", "p(setosa)", "p(versicolor)", "p(virginica)"]
    from arboretum import MAPTreeClassifier
    from arboretum.data import Binarizer

    X = np.column_stack([d.data.astype(object), np.array(["red", "green", "blue"] * 50, dtype=object)])
    clf = MAPTreeClassifier(binarizer=Binarizer(n_thresholds=4), time_limit=10)
    clf.fit(X, d.target_names[d.target])
    assert [r[0] for r in rows[1:]] == clf.predict(X).tolist()
    # A colour the model has never seen is refused, naming it.
    unseen = tmp_path / "unseen.csv"
    _write_iris(unseen, 5, colours=("purple",))
    with pytest.raises(SystemExit, match="column 'colour' of X has the category 'purple' at row 0, which was not seen"):
        main(["predict", str(model), "--csv", str(unseen), "--target", "species"])
    # --categorical reads a numeric column as text; --threshold-strategy all takes every cut.
    assert main(["fit", "--csv", str(train), "--target", "species", "--cv", "0", "--time-limit", "5",
                 "--threshold-strategy", "all", "--categorical", "sepal_width"]) == 0
    out = capsys.readouterr().out
    n_binary = int(re.search(r"-> (\d+) binary features", out).group(1))
    n_cuts = sum(len(np.unique(d.data[:, j])) - 1 for j in (0, 2, 3))
    assert n_binary == n_cuts + len(np.unique(d.data[:, 1])) + 3
