"""The ``arboretum`` command: fit, save, predict, errors."""

from __future__ import annotations

import csv
import json

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
    assert saved["format"] == "arboretum.model" and saved["optimal"] is True


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
    bad.write_text("a,b,label\n0,1,1\n0,x,0\n")
    with pytest.raises(SystemExit, match="not a number"):
        main(["fit", "--csv", str(bad), "--target", "label"])
    with pytest.raises(SystemExit, match="not a column"):
        main(["fit", "--csv", str(bad), "--target", "nope"])
    with pytest.raises(SystemExit, match="not found"):
        main(["predict", str(tmp_path / "missing.json"), "--csv", str(bad)])
    nonbinary = tmp_path / "nb.csv"
    nonbinary.write_text("a,b,label\n0,2,1\n1,0,0\n1,1,0\n0,0,1\n")
    with pytest.raises(SystemExit, match="binary"):
        main(["fit", "--csv", str(nonbinary), "--target", "label", "--cv", "0"])
