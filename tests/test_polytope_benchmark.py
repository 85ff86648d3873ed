"""benchmarks/polytope_real.py's comparison of CPT with CPT(K=1) at no more leaves (no fit, no torch)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import polytope_real  # noqa: E402


def _row(method, seed, auc, leaves, by_depth=None):
    return {"method": method, "seed": seed, "auc": auc, "leaves": leaves,
            "by_depth": json.dumps(by_depth) if by_depth is not None else np.nan}


def _table(lines):
    rows = [line for line in lines if line.startswith("| CPT")]
    return {r.split("|")[1].strip(): [c.strip() for c in r.split("|")[2:-1]] for r in rows}


def test_cpt_is_chosen_on_validation_among_trees_with_no_more_leaves():
    df = pd.DataFrame([
        # seed 0: CPT chose 8 leaves, K=1 has 4: the best validation tree with <= 4 leaves is depth 2
        _row("CPT x", 0, 0.90, 8, {"leaves": [1, 2, 4, 8], "val": [0.5, 0.70, 0.75, 0.80],
                                   "test": [0.5, 0.60, 0.81, 0.90]}),
        _row("CPT(K=1) x", 0, 0.70, 4),
        # seed 1: CPT chose 2 leaves, no more than K=1's 5: its own choice stands
        _row("CPT x", 1, 0.66, 2, {"leaves": [1, 2, 4, 7], "val": [0.5, 0.7, 0.6, 0.9],
                                   "test": [0.5, 0.66, 0.7, 0.99]}),
        _row("CPT(K=1) x", 1, 0.72, 5),
        # seed 2: a validation tie between depths 1 and 2: the shallower wins
        _row("CPT x", 2, 0.80, 8, {"leaves": [1, 2, 4, 8], "val": [0.5, 0.7, 0.7, 0.9],
                                   "test": [0.5, 0.71, 0.75, 0.80]}),
        _row("CPT(K=1) x", 2, 0.60, 4),
        # seed 3: no by-depth record (an older row): left out
        _row("CPT x", 3, 0.99, 9),
        _row("CPT(K=1) x", 3, 0.50, 4),
        # a CPT method without its K=1 partner gives no row
        _row("CPT y", 0, 0.9, 3, {"leaves": [1, 2, 3], "val": [0.5, 0.6, 0.7], "test": [0.5, 0.6, 0.9]}),
    ])
    table = _table(polytope_real._no_more_leaves(df, "auc"))
    assert set(table) == {"CPT x"}
    ours, our_leaves, theirs, their_leaves, wins = table["CPT x"]
    expected = [0.81, 0.66, 0.71]
    se = np.std(expected, ddof=1) / np.sqrt(3)
    assert ours == f"{np.mean(expected):.4f} ± {se:.4f}"
    assert float(our_leaves) == pytest.approx(np.mean([4, 2, 2]), abs=0.05)
    assert theirs.startswith(f"{np.mean([0.70, 0.72, 0.60]):.4f}")
    assert float(their_leaves) == pytest.approx(np.mean([4, 5, 4]), abs=0.05)
    assert wins == "2/3"


def test_no_table_without_by_depth_records():
    df = pd.DataFrame([{"method": "CPT", "seed": 0, "auc": 0.9, "leaves": 4},
                       {"method": "CPT(K=1)", "seed": 0, "auc": 0.8, "leaves": 4}])
    assert polytope_real._no_more_leaves(df, "auc") == []


def test_hiv_depths_summary_gives_the_mean_per_arithmetic(tmp_path, monkeypatch):
    import polytope_hiv_depths

    def fit(seed, auc, arithmetic=None):
        row = {"seed": seed, "chosen": 2, "refined": False, "test_auc": auc, "fit_s": 1.0, "git": "abc",
               "leaves": [1, 2, 4], "val": [0.5, 0.6, 0.7], "test": [0.5, 0.6, auc]}
        return row if arithmetic is None else {**row, "arithmetic": arithmetic}

    rows = [fit(1, 0.74, "X, torch AVX512"), fit(0, 0.72, "X, torch AVX512"), fit(0, 0.70, "X, torch AVX2"),
            fit(1, 0.71, "X, torch AVX2"), fit(2, 0.73)]  # the last from before the field was recorded
    monkeypatch.setattr(polytope_hiv_depths, "RESULTS", tmp_path / "depths")
    monkeypatch.setattr(polytope_hiv_depths, "MAX_DEPTH", 2)
    (tmp_path / "depths.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    polytope_hiv_depths.summary()
    text = (tmp_path / "depths.md").read_text()
    assert "- X, torch AVX512: **0.7300 ± 0.0100** (mean ± s.e., 2 seeds)" in text
    assert "- X, torch AVX2: **0.7050 ± 0.0050** (mean ± s.e., 2 seeds)" in text
    assert "- not recorded: **0.7300 ± nan** (mean ± s.e., 1 seed)" in text
    assert "- all: **0.7200 ± 0.0071** (mean ± s.e., 5 fits)" in text
    table = [line for line in text.splitlines() if line.startswith("| 1 ") or line.startswith("| 2 ")]
    assert [line.split("|")[2].strip() for line in table] == ["0", "1", "0", "1"]  # by arithmetic, then seed


def test_a_row_without_by_depth_counts_where_cpt_has_no_more_leaves():
    # a row rebuilt from a run's log has no by-depth record; it is needed only where CPT has more leaves
    df = pd.DataFrame([
        _row("CPT x", 0, 0.73, 16), _row("CPT(K=1) x", 0, 0.74, 16),
        _row("CPT x", 1, 0.80, 8, {"leaves": [1, 2, 4, 8], "val": [0.5, 0.7, 0.8, 0.9],
                                   "test": [0.5, 0.6, 0.75, 0.80]}), _row("CPT(K=1) x", 1, 0.70, 4),
        _row("CPT x", 2, 0.99, 9), _row("CPT(K=1) x", 2, 0.50, 4),  # more leaves, no record: left out
    ])
    ours, our_leaves, theirs, _, wins = _table(polytope_real._no_more_leaves(df, "auc"))["CPT x"]
    assert ours.startswith(f"{np.mean([0.73, 0.75]):.4f}")
    assert float(our_leaves) == pytest.approx(10.0)
    assert wins == "1/2"


def test_selected_marks_rows_without_a_recorded_choice():
    df = pd.DataFrame([{"method": "CPT", "seed": 1, "selected_depth": 3.0, "refined": False},
                       {"method": "CPT", "seed": 0, "selected_depth": np.nan, "refined": np.nan}])
    assert polytope_real._selected(df, ("CPT",)) == "Selected (depth, refined) by seed: CPT: (?) (3,g)."


def test_equal_depth_pairs_seeds_and_counts_wins_with_no_more_leaves(tmp_path):
    """benchmarks/polytope_equal_depth.py: per depth, CPT's greedy tree against CPT(K=1)'s of the same
    seed; a win counts only where CPT has no more leaves, and equal scores are counted apart."""
    import polytope_equal_depth

    def depths(test, leaves):
        return {"leaves": leaves, "val": [0.5] * len(test), "test": test}

    rows = [
        _row("CPT x", 0, 0.8, 4, depths([0.5, 0.70, 0.80], [1, 2, 4])),
        _row("CPT(K=1) x", 0, 0.7, 4, depths([0.5, 0.70, 0.75], [1, 2, 4])),
        _row("CPT x", 1, 0.9, 4, depths([0.5, 0.60, 0.90], [1, 2, 4])),
        _row("CPT(K=1) x", 1, 0.7, 3, depths([0.5, 0.65, 0.70], [1, 2, 3])),  # CPT higher, more leaves
        _row("CPT x", 2, 0.9, 4, depths([0.5, 0.60, 0.90], [1, 2, 4])),  # no CPT(K=1) row: left out
    ]
    path = tmp_path / "r.csv"
    pd.DataFrame([{**r, "dataset": "d"} for r in rows]).to_csv(path, index=False)
    found = polytope_equal_depth.pairs(path, "CPT x")
    assert [(d, s) for d, s, *_ in found] == [("d", 0), ("d", 1)]
    lines = polytope_equal_depth.table(found)
    cells = {int(r.split("|")[1]): [c.strip() for c in r.split("|")[2:-1]] for r in lines[2:]}
    # depth 1: seed 0 ties, seed 1 loses; depth 2: both higher, only seed 0 with no more leaves
    assert cells[1][4:7] == ["0/2", "0/2", "1/2"]
    assert cells[2][4:7] == ["2/2", "1/2", "0/2"]
    assert cells[2][0] == "0.8500" and cells[2][3] == "3.5"
    assert cells[2][7].startswith("+0.1250")


@pytest.mark.parametrize("seed", range(4))
def test_delong_matches_brute_force_placements(seed):
    """benchmarks/polytope_ablation_power.py: DeLong's AUCs are scikit-learn's (ties count half), and its
    standard errors are those of the placement values computed pair by pair."""
    from sklearn.metrics import roc_auc_score

    from polytope_ablation_power import delong

    rng = np.random.RandomState(seed)
    y = (rng.rand(60) < 0.4).astype(int)
    a = np.round(y + rng.randn(60), 1)  # rounded: tied scores
    b = np.round(y + 2 * rng.randn(60), 1)
    auc_a, auc_b, se_a, se_b, se_d = delong(a, b, y)
    assert auc_a == pytest.approx(roc_auc_score(y, a)) and auc_b == pytest.approx(roc_auc_score(y, b))

    def placements(s):
        psi = (s[y == 1][:, None] > s[y == 0][None, :]) + 0.5 * (s[y == 1][:, None] == s[y == 0][None, :])
        return psi.mean(1), psi.mean(0)

    (a10, a01), (b10, b01) = placements(a), placements(b)
    m, n = a10.size, a01.size
    d10, d01 = a10 - b10, a01 - b01
    assert se_a == pytest.approx(np.sqrt(a10.var(ddof=1) / m + a01.var(ddof=1) / n))
    assert se_b == pytest.approx(np.sqrt(b10.var(ddof=1) / m + b01.var(ddof=1) / n))
    assert se_d == pytest.approx(np.sqrt(d10.var(ddof=1) / m + d01.var(ddof=1) / n))
    assert delong(a, a, y)[4] == pytest.approx(0.0, abs=1e-12)  # a model against itself: no difference


def test_delong_mean_difference_is_one_seeds_for_one_seed_and_averages_placements():
    """The seeds' mean difference and its test-row error: for one seed DeLong's paired values; for two
    copies of the same pair the same (the test rows' error does not shrink by repeating a model)."""
    from polytope_ablation_power import delong, delong_mean_difference

    rng = np.random.RandomState(7)
    y = (rng.rand(80) < 0.3).astype(int)
    a, b, c = (y + s * rng.randn(80) for s in (1.0, 1.5, 1.2))
    auc_a, auc_b, _, _, se_d = delong(a, b, y)
    assert delong_mean_difference([(a, b)], y) == pytest.approx((auc_a - auc_b, se_d))
    assert delong_mean_difference([(a, b), (a, b)], y) == pytest.approx((auc_a - auc_b, se_d))
    mean, se = delong_mean_difference([(a, b), (c, b)], y)
    assert mean == pytest.approx(0.5 * (auc_a - auc_b) + 0.5 * (delong(c, b, y)[0] - auc_b))
    assert 0 < se


@pytest.mark.parametrize("seed", range(3))
def test_scaffold_folds_keep_scaffolds_whole_and_balance_the_rows(seed):
    """benchmarks/polytope_scaffold_cv.py: every scaffold lies in one fold, every fold is used, and the folds'
    sizes differ by at most the largest scaffold; a seed gives the same folds again, another seed others."""
    from polytope_scaffold_cv import scaffold_folds

    rng = np.random.RandomState(seed)
    groups = rng.choice(rng.randint(0, 10**6, 80), size=600, p=np.r_[[0.2], np.full(79, 0.8 / 79)])
    fold = scaffold_folds(groups, 5, seed)
    assert set(fold) == set(range(5))
    assert all(len(set(fold[groups == g])) == 1 for g in np.unique(groups))
    sizes = np.bincount(fold, minlength=5)
    assert sizes.max() - sizes.min() <= np.bincount(np.unique(groups, return_inverse=True)[1]).max()
    assert np.array_equal(fold, scaffold_folds(groups, 5, seed))
    assert not np.array_equal(fold, scaffold_folds(groups, 5, seed + 10))


def test_validation_rows_are_the_smallest_scaffolds_as_deepchem_splits():
    """The training folds split as MoleculeNet's training rows: the largest scaffolds train (up to 8/9 of the
    rows), the scaffolds that no longer fit validate, whole."""
    from polytope_scaffold_cv import validation_rows

    groups = np.repeat([7, 3, 9, 1, 4, 5], [40, 30, 10, 5, 3, 2])  # 90 rows; 80 fit into 8/9
    valid = validation_rows(groups)
    assert sorted(set(groups[valid])) == [1, 4, 5] and sorted(set(groups[~valid])) == [3, 7, 9]
    assert valid.sum() == 10 and set(groups[valid]).isdisjoint(groups[~valid])


def test_scaffold_cv_no_more_leaves_and_summary():
    """CPT at no more leaves is its best validation tree within CPT(K=1)'s leaves; the summary averages the
    folds and gives the folds' mean difference a test-molecule error of sqrt(sum se^2) / 5."""
    from polytope_scaffold_cv import merge, no_more_leaves, summary

    d = {"leaves": [1, 2, 4, 8], "val": [0.5, 0.7, 0.7, 0.9], "test": [0.5, 0.6, 0.8, 0.85]}
    assert no_more_leaves(0.85, 8, d, 8) == (0.85, 8)
    assert no_more_leaves(0.85, 8, d, 5) == (0.6, 2)  # depths 1 and 2 tie on validation: the shallower
    rows = [{"dataset": "bace", "repeat": 0, "fold": f, "cpt_auc": 0.8 + 0.01 * f, "k1_auc": 0.8,
             "cpt_leaves": 8, "k1_leaves": 8, "difference": 0.01 * f, "se_difference": 0.01,
             "cpt_auc_no_more_leaves": 0.8 + 0.01 * f, "cpt_leaves_no_more_leaves": 8} for f in range(5)]
    df = merge(rows, Path("/nonexistent/polytope_scaffold_cv.csv"))
    lines = summary(df)
    cells = [c.strip() for c in lines[2].split("|")[1:-1]]
    assert cells[:5] == ["bace", "0", "5", "0.8200 (8.0)", "0.8000 (8.0)"]
    assert cells[5] == f"+0.0200 ± {np.sqrt(5 * 0.01 ** 2) / 5:.4f}" and cells[6] == "4/5" and cells[8] == "4/5"
    assert cells[9:] == ["0.8000 (8.0)", "4/5"]
    assert summary(df[df.fold < 4]) == ["No repeat has all its 5 folds yet."]  # an unfinished repeat is left out
    # the other direction, from CPT(K=1)'s recorded trees: in fold 0 it has 16 leaves against CPT's 8
    df.loc[0, ["k1_leaves", "k1_auc"]] = 16, 0.83
    df["k1_by_depth"] = [json.dumps({"leaves": [1, 2, 4, 8, 16], "val": [0.5, 0.6, 0.7, 0.65, 0.8],
                                     "test": [0.5, 0.6, 0.78, 0.79, 0.83]})] + [np.nan] * 4
    cells = [c.strip() for c in summary(df)[2].split("|")[1:-1]]
    assert cells[9] == f"{(0.78 + 0.8 * 4) / 5:.4f} ({(4 + 8 * 4) / 5:.1f})" and cells[10] == "5/5"


def test_scaffold_cv_merge_replaces_the_folds_that_ran(tmp_path):
    from polytope_scaffold_cv import merge

    path = tmp_path / "cv.csv"
    pd.DataFrame([{"dataset": "hiv", "repeat": 0, "fold": f, "cpt_auc": 0.7} for f in range(3)]).to_csv(path, index=False)
    df = merge([{"dataset": "hiv", "repeat": 0, "fold": 1, "cpt_auc": 0.9},
                {"dataset": "bace", "repeat": 0, "fold": 1, "cpt_auc": 0.8}], path)
    assert len(df) == 4 and df.set_index(["dataset", "fold"]).cpt_auc.to_dict() == {
        ("bace", 1): 0.8, ("hiv", 0): 0.7, ("hiv", 1): 0.9, ("hiv", 2): 0.7}


def test_repeats_mean_difference_is_delong_per_fold_for_one_repeat_and_does_not_shrink_by_repeating():
    """The error over repeats: for one repeat sqrt(sum of the folds' DeLong variances) / folds; a repeat
    run twice (the same molecules, the same scores) leaves it unchanged; another repeat whose scores
    disagree with the first's lowers it."""
    from polytope_ablation_power import delong
    from polytope_scaffold_cv import repeats_mean_difference, scaffold_folds

    rng = np.random.RandomState(3)
    n = 400
    y = (rng.rand(n) < 0.3).astype(int)
    groups = rng.randint(0, 150, n)

    def repeat(r, noise):
        fold = scaffold_folds(groups, 5, r)
        a, b = y + noise * rng.randn(n), y + 1.5 * rng.randn(n)
        return [(r, np.flatnonzero(fold == f), a[fold == f], b[fold == f]) for f in range(5)]

    one = repeat(0, 1.0)
    per_fold = [delong(a, b, y[t]) for _, t, a, b in one]
    mean, se = repeats_mean_difference(one, y)
    assert mean == pytest.approx(np.mean([p[0] - p[1] for p in per_fold]))
    assert se == pytest.approx(np.sqrt(sum(p[4] ** 2 for p in per_fold)) / 5)
    twice = one + [(1, t, a, b) for _, t, a, b in one]
    assert repeats_mean_difference(twice, y) == pytest.approx((mean, se))
    second = repeat(1, 1.0)
    assert repeats_mean_difference(one + second, y)[1] < max(se, repeats_mean_difference(second, y)[1])
