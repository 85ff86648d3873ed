"""The quick (CI-sized) mode of each of the four reproductions runs end to end and writes its files."""

import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import engine  # noqa: E402


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    path = tmp_path_factory.mktemp("quick")
    for name in ("speed", "cv", "synthetic", "prior"):  # prior reads cv's log
        engine.run_experiment(name, quick=True, out_dir=path, n_jobs=2, progress=lambda line: None)
    return path


@pytest.mark.parametrize("stem, figures", [
    ("speed_quick", ["speed_quick_fig4.png", "speed_quick_fig7.png"]),
    ("cv_quick", ["cv_quick_fig5.png", "cv_quick_fig11.png"]),
    ("synthetic_quick", ["synthetic_quick_fig6.png", "synthetic_quick_fig8_10.png"]),
    ("prior_quick", ["prior_quick_fig12.png"]),
])
def test_quick_mode_writes_csv_png_and_markdown(out, stem, figures):
    frame = pd.read_csv(out / f"{stem}.csv")
    assert len(frame) > 0
    md = (out / f"{stem}.md").read_text()
    assert "(complete)" in md and "Command: `python -m benchmarks.run" in md
    for fig in figures:
        assert (out / fig).stat().st_size > 5000


def test_quick_results_are_sane(out):
    cv = pd.read_csv(out / "cv_quick.csv")
    assert set(cv["dataset"]) == {"zoo-1", "hepatitis"}
    ok = cv[~cv["status"].astype(str).str.startswith("failed")]
    assert ok["test_acc"].between(0, 1).all() and (ok["test_loglik"] < 0).all()
    mt = cv[cv["method"] == "MAPTree"]
    assert (mt["status"] == "certified").all()  # both certify within seconds
    # MAPTree's tree is the most probable under the posterior it maximises, fold by fold
    for (d, f), g in cv.groupby(["dataset", "fold"]):
        best_other = g.loc[g["method"] != "MAPTree", "train_logpost"].max()
        assert g.loc[g["method"] == "MAPTree", "train_logpost"].iloc[0] >= best_other - 1e-9
    speed = pd.read_csv(out / "speed_quick.csv")
    for d, g in speed.groupby("dataset"):
        top = g.loc[g["method"] == "maptree", "log_posterior"].max()
        assert g["log_posterior"].max() <= top + 1e-9  # samplers never beat a certified MAP tree
    syn = pd.read_csv(out / "synthetic_quick.csv")
    assert set(syn["noise"]) == {0.0, 0.25} and set(syn["n"]) == {100, 300}
    prior = (out / "prior_quick.md").read_text()
    assert "(0.2, 8.0)" in prior and "(found)" in prior
    # every setting, the default included, is fitted by the prior grid itself (same sources for all seven)
    runs = pd.read_csv(out / "prior_quick.csv")
    assert set(zip(runs["alpha"], runs["beta"])) == {
        (0.999, 0.1), (0.99, 0.2), (0.95, 0.5), (0.9, 1.0), (0.8, 2.0), (0.5, 4.0), (0.2, 8.0)}
