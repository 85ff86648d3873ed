"""The experiment runner `python -m benchmarks.run`: resumable grids, joblib and dask, result files."""

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import engine  # noqa: E402
from benchmarks.experiments import common  # noqa: E402
from benchmarks.run import main  # noqa: E402

from arboretum import MAPTreeClassifier, load_dataset  # noqa: E402
from arboretum.bayes import log_dirichlet_multinomial, log_posterior  # noqa: E402


def _zoo(job):
    return job.get("dataset") == "zoo-1"


def test_job_keys_are_canonical_and_grids_are_unique():
    assert engine.job_key({"b": 1, "a": 2}) == engine.job_key({"a": 2, "b": 1})
    for name in engine.EXPERIMENTS:
        exp = engine.load_experiment(name)
        for quick in (True, False):
            grid = exp.jobs(quick)
            assert len({engine.job_key(j) for j in grid}) == len(grid)
            json.dumps(grid)  # plain values only, so jobs travel to any worker
    full = {n: len(engine.load_experiment(n).jobs(False)) for n in engine.EXPERIMENTS}
    assert full["cv"] == 16 * 10 * 14 and full["prior"] == 16 * 10 * 7
    assert full["synthetic"] == 20 * 10 * 3 * 14 and full["speed"] == 16 * 21
    # prior runs the CP4IM datasets cheapest first, but every one of them, once
    prior_datasets = [j["dataset"] for j in engine.load_experiment("prior").jobs(False)]
    assert sorted(set(prior_datasets)) == sorted(common.CP4IM)
    assert prior_datasets[0] == "zoo-1" and prior_datasets[-1] == "mushroom"


def test_unknown_experiment_and_bad_arguments():
    with pytest.raises(ValueError, match="unknown experiment 'fig99'"):
        engine.load_experiment("fig99")
    assert engine.load_experiment("fig4").NAME == "speed"
    with pytest.raises(ValueError, match="n_jobs"):
        engine.run_experiment("speed", quick=True, n_jobs=0)
    with pytest.raises(SystemExit):
        main(["speed", "--n-jobs", "0"])


def test_resume_runs_only_missing_jobs(tmp_path):
    lines = []
    engine.run_experiment("speed", quick=True, out_dir=tmp_path, filter_fn=_zoo, max_jobs=2,
                          progress=lines.append)
    log = engine.read_log(tmp_path / "speed_quick.jobs.jsonl")
    assert len(log) == 2
    # every logged job names the sources it ran
    entries = [json.loads(line) for line in (tmp_path / "speed_quick.jobs.jsonl").read_text().splitlines()]
    assert all(e["git"] == engine.machine_info()["git"] for e in entries)
    assert any("2/5 jobs done" in line for line in lines)
    lines.clear()
    engine.run_experiment("speed", quick=True, out_dir=tmp_path, filter_fn=_zoo, progress=lines.append)
    assert any("running 3 on 1 local" in line for line in lines)
    assert len(engine.read_log(tmp_path / "speed_quick.jobs.jsonl")) == 5
    # a torn last line (a run killed mid-write) is ignored, not fatal
    with (tmp_path / "speed_quick.jobs.jsonl").open("a") as fh:
        fh.write('{"key": "x", "ro')
    assert len(engine.read_log(tmp_path / "speed_quick.jobs.jsonl")) == 5
    frame = pd.read_csv(tmp_path / "speed_quick.csv")
    assert set(frame["method"]) == {"maptree", "smc", "mcmc"}
    md = (tmp_path / "speed_quick.md").read_text()
    assert "zoo-1" in md and "Jobs: 5/5 (complete)" in md
    assert (tmp_path / "speed_quick_fig7.png").stat().st_size > 1000


def test_joblib_processes(tmp_path):
    engine.run_experiment("speed", quick=True, out_dir=tmp_path, filter_fn=_zoo, n_jobs=2,
                          progress=lambda line: None)
    frame = pd.read_csv(tmp_path / "speed_quick.csv")
    certified = frame[(frame["method"] == "maptree") & frame["certified"].astype(bool)]
    assert len(certified) >= 1
    np.testing.assert_allclose(certified["log_posterior"], -19.91799883370918, atol=1e-8)


def test_dask_local_cluster(tmp_path):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        engine.run_experiment("speed", quick=True, out_dir=tmp_path, filter_fn=_zoo,
                              dask=cluster.scheduler_address, progress=lambda line: None)
    frame = pd.read_csv(tmp_path / "speed_quick.csv")
    assert len(engine.read_log(tmp_path / "speed_quick.jobs.jsonl")) == 5
    assert set(frame["seed"].dropna().astype(int)) == {42, 43}


def test_score_tree_matches_direct_computation():
    X, y = load_dataset("hepatitis", return_X_y=True)
    train, test = np.arange(0, 137, 2), np.arange(1, 137, 2)
    tree = MAPTreeClassifier(time_limit=5).fit(X[train], y[train]).search_tree_
    s = common.score_tree(tree, X[train], y[train], X[test], y[test])
    leaves = tree.apply(X[test])
    pred = np.argmax(tree.counts[leaves], axis=1)
    assert s["test_acc"] == pytest.approx(np.mean(pred == y[test]))
    expected = sum(float(log_dirichlet_multinomial(np.bincount(y[test][leaves == l], minlength=2), [2.5, 2.5]))
                   for l in np.unique(leaves)) / len(test)
    assert s["test_loglik"] == pytest.approx(expected, abs=1e-10)
    assert s["train_logpost"] == pytest.approx(float(log_posterior(tree, X[train], y[train])), abs=1e-9)
    assert s["size"] == tree.n_nodes and s["test_loglik_pp"] < 0
    assert np.isnan(common.score_tree(None, X, y, X, y)["test_acc"])


def test_method_labels():
    assert common.method_label({"method": "gosdt", "reg": 0.03125}) == "GOSDT 1/32"
    assert common.method_label({"method": "dl85", "depth": 5}) == "DL8.5 d5"
    assert common.method_label({"method": "maptree", "alpha": 0.2, "beta": 8.0}) == "MAPTree (0.2, 8.0)"


def test_synthetic_robustness_table_uses_common_pairs_only():
    from benchmarks.experiments import synthetic

    rows = []
    for tree in (0, 1):
        for n in (100, 400):
            for noise, acc_a, acc_b in ((0.0, 0.9, 0.7), (0.25, 0.6, 0.65)):
                rows.append({"tree": tree, "n": n, "noise": noise, "method": "A", "test_acc": acc_a + 0.01 * tree})
                rows.append({"tree": tree, "n": n, "noise": noise, "method": "B", "test_acc": acc_b})
    # a pair only A has: it must not enter either method's numbers
    rows.append({"tree": 2, "n": 100, "noise": 0.0, "method": "A", "test_acc": 0.0})
    rows.append({"tree": 2, "n": 100, "noise": 0.25, "method": "A", "test_acc": 0.0})
    table = synthetic.robustness_table(pd.DataFrame(rows)).set_index("method")
    assert (table["pairs"] == 4).all() and (table["trees"] == 2).all()
    assert table.loc["A", "acc@0.0"] == pytest.approx(0.905)
    assert table.loc["A", "drop"] == pytest.approx(0.3) and table.loc["B", "drop"] == pytest.approx(0.05)
    assert table.loc["B", "acc_small"] == pytest.approx(0.675)  # n = 100 at both noise levels
    assert table["vs_ref"].isna().all()  # no MAPTree here
    paired = synthetic.robustness_table(pd.DataFrame(rows), reference="A").set_index("method")
    assert paired.loc["A", "vs_ref"] == 0 and paired.loc["B", "vs_ref"] == pytest.approx(-0.25)
    assert paired.loc["B", "vs_ref_high"] == pytest.approx(-0.25)  # same difference on both trees
    lines = synthetic.robustness_lines(pd.DataFrame(rows), ["A", "B"], reference="A")
    assert lines[-2].startswith("| B |") and lines[-1].startswith("| A |")  # most robust first
    assert lines[-2].endswith("| -0.250 (-0.250, -0.250) |") and lines[-1].endswith("| - |")


def test_synthetic_tie_counts():
    from benchmarks.experiments import synthetic

    table = pd.DataFrame([
        # noise 0, n 100: A best, B inside A's CI, C outside
        {"noise": 0.0, "n": 100, "method": "A", "acc": 0.90, "ci_low": 0.85, "ci_high": 0.95},
        {"noise": 0.0, "n": 100, "method": "B", "acc": 0.85, "ci_low": 0.80, "ci_high": 0.90},
        {"noise": 0.0, "n": 100, "method": "C", "acc": 0.70, "ci_low": 0.60, "ci_high": 0.80},
        # noise 0.25, n 100: C best alone
        {"noise": 0.25, "n": 100, "method": "A", "acc": 0.60, "ci_low": 0.55, "ci_high": 0.65},
        {"noise": 0.25, "n": 100, "method": "B", "acc": 0.50, "ci_low": 0.45, "ci_high": 0.55},
        {"noise": 0.25, "n": 100, "method": "C", "acc": 0.80, "ci_low": 0.75, "ci_high": 0.85},
    ])
    counts = synthetic.tie_counts(table)
    assert counts.loc["A"].tolist() == [1, 0] and counts.loc["B"].tolist() == [1, 0]
    assert counts.loc["C"].tolist() == [0, 1]
    assert synthetic.tie_lines(table, ["C", "A"])[-1] == "| A | 1 | 0 | 1 |"
