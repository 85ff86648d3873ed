"""CPT against CPT(K=1) by scaffold-grouped cross-validation over all of Bace or HIV.

The goal "CPT beats CPT(K=1)" was scored on MoleculeNet's one scaffold split, whose test sets (Bace 152
molecules, HIV 155 actives) resolve a paired AUC difference of about 0.012 in one seed and 0.006 in the
seeds' mean (``polytope_ablation_power.md``): less than any variant reached.  Here every molecule is
tested once per repeat: the scaffolds are dealt at random into five folds (whole scaffolds, folds of
near-equal size); each fold in turn is the test set, and the other four are split as MoleculeNet
splits its training rows (DeepChem's rule: the largest scaffolds train, the smallest ninth of the rows
validates, as 80:10 does).  Both methods are fitted exactly as ``polytope_real.py``'s ``linear+ES by
scaffold`` rows (same settings; the validation rows choose the depth; early stopping holds out whole
scaffolds of each node's rows), with the repeat as the seed.

Per fold: each method's test AUC and leaves, the paired difference with DeLong's standard error over the
fold's molecules, and CPT against CPT(K=1) at no more leaves (CPT's greedy tree chosen on the validation
rows among those with at most CPT(K=1)'s leaves, as ``polytope_common.no_more_leaves``; test rows choose
nothing), and the other way round (CPT(K=1)'s tree with at most CPT's leaves, chosen alike).  Per repeat, the folds' mean difference has a test-molecule standard error of
sqrt(sum of the folds' squared errors) / 5, since the folds' molecules are disjoint.

How these folds differ from MoleculeNet's split: its test set is the smallest scaffolds (mostly
singletons), here a fold holds a random fifth of the scaffolds, large ones included; so the levels are
not the goal's numbers (those stay on MoleculeNet's split), only the comparison of the two methods is.

    python benchmarks/polytope_scaffold_cv.py --dataset bace --repeats 3
    python benchmarks/polytope_scaffold_cv.py --dataset hiv --repeats 1 --folds 0,2,4   # one process
    python benchmarks/polytope_scaffold_cv.py --dataset hiv --repeats 1 --folds 1,3     # another
    python benchmarks/polytope_scaffold_cv.py --report

(Bace: about 3 minutes of CPU a repeat; HIV: about an hour, 10-13 minutes a fold.)  Rows are merged into
``results/polytope_scaffold_cv.csv`` by (dataset, repeat, fold), so folds and repeats may run in
separate processes; ``--report`` writes ``results/polytope_scaffold_cv.md`` from the CSV.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

import polytope_common as C  # noqa: E402
from polytope_common import no_more_leaves  # noqa: E402
from polytope_ablation_power import delong  # noqa: E402
from polytope_real import CONFIGS, LINEAR_ES  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
CSV = RESULTS / "polytope_scaffold_cv.csv"
#: Per (dataset, repeat, fold) the test rows and both methods' test probabilities, for the error over repeats.
PROBA = RESULTS / "polytope_scaffold_cv"
N_FOLDS = 5
KEY = ["dataset", "repeat", "fold"]


def scaffold_folds(groups: np.ndarray, n_folds: int, seed: int) -> np.ndarray:
    """Each row's fold: the scaffolds in a random order (``seed``), each dealt whole to the fold with the
    fewest rows so far (the lowest-numbered of ties)."""
    ids, sizes = np.unique(groups, return_counts=True)
    order = np.random.RandomState(seed).permutation(ids.size)
    fill, of_group = np.zeros(n_folds, np.int64), np.empty(ids.size, np.int64)
    for g in order:
        f = int(np.argmin(fill))
        of_group[g], fill[f] = f, fill[f] + sizes[g]
    return of_group[np.searchsorted(ids, groups)]


def validation_rows(groups: np.ndarray, share: float = 1 / 9) -> np.ndarray:
    """Mask of the validation rows among training rows, by DeepChem's rule (as
    ``polytope_common.scaffold_split``): the scaffolds, largest first, fill ``1 - share`` of the rows; the
    ones that no longer fit validate."""
    sets: dict[int, list[int]] = {}
    for i, g in enumerate(groups):
        sets.setdefault(int(g), []).append(i)
    keep, valid = 0, np.zeros(groups.size, bool)
    for s in sorted(sets.values(), key=lambda s: (len(s), s[0]), reverse=True):
        if keep + len(s) <= (1 - share) * groups.size:
            keep += len(s)
        else:
            valid[s] = True
    return valid


def run(name: str, repeat: int, folds: list[int]) -> list[dict]:
    """Fit both methods on the given folds of one repeat; one row per fold."""
    import torch

    from engine import machine_info

    cfg, meta = CONFIGS[name], machine_info()
    X, y, groups = C.molecule_features(name)
    fold_of = scaffold_folds(groups, N_FOLDS, repeat)
    torch.set_num_threads(C.THREADS)
    out = []
    for fold in folds:
        test, rest = np.flatnonzero(fold_of == fold), np.flatnonzero(fold_of != fold)
        valid = validation_rows(groups[rest])
        tr, va = rest[~valid], rest[valid]
        Xtr, Xva, Xte = (X[i].astype(np.float64) for i in (tr, va, test))
        proba, leaves, cpu, by_depth, depth = {}, {}, {}, {}, {}
        for method, kw in (("CPT", {}), ("CPT(K=1)", {"max_facets": 1})):
            est = C.protocol_cpt(cfg["depth"], repeat, Xva, y[va], None, groups[tr],
                                 **{**cfg["cpt"], **LINEAR_ES, **kw})
            est.test_rows = (Xte, y[test])  # scored at every depth only; nothing is chosen on them
            c0 = time.process_time()
            est.fit(Xtr, y[tr])
            cpu[method] = time.process_time() - c0
            p = np.asarray(est.predict_proba(Xte))
            proba[method] = p[:, list(est.classes_).index(1)]
            leaves[method] = C.n_leaves(est, Xtr)[0]
            by_depth[method], depth[method] = est.by_depth_, int(est.best_depth_)
        PROBA.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(PROBA / f"{name}_r{repeat}_f{fold}.npz", test=test, cpt=proba["CPT"], k1=proba["CPT(K=1)"])
        auc_a, auc_b, se_a, se_b, se_d = delong(proba["CPT"], proba["CPT(K=1)"], y[test])
        nml_auc, nml_leaves = no_more_leaves(auc_a, leaves["CPT"], by_depth["CPT"], leaves["CPT(K=1)"])
        k1_auc, k1_leaves = no_more_leaves(auc_b, leaves["CPT(K=1)"], by_depth["CPT(K=1)"], leaves["CPT"])
        row = {"dataset": name, "repeat": repeat, "fold": fold, "train_rows": tr.size, "valid_rows": va.size,
               "test_rows": test.size, "test_actives": int(y[test].sum()),
               "cpt_auc": auc_a, "k1_auc": auc_b, "cpt_leaves": leaves["CPT"], "k1_leaves": leaves["CPT(K=1)"],
               "cpt_depth": depth["CPT"], "k1_depth": depth["CPT(K=1)"],
               "difference": auc_a - auc_b, "se_cpt": se_a, "se_k1": se_b, "se_difference": se_d,
               "cpt_auc_no_more_leaves": nml_auc, "cpt_leaves_no_more_leaves": nml_leaves,
               "k1_auc_no_more_leaves": k1_auc, "k1_leaves_no_more_leaves": k1_leaves,
               "cpu_s_cpt": cpu["CPT"], "cpu_s_k1": cpu["CPT(K=1)"],
               "cpt_by_depth": json.dumps(by_depth["CPT"]), "k1_by_depth": json.dumps(by_depth["CPT(K=1)"]),
               "git": meta["git"], "cpu": meta["machine"].split(",")[0]}
        print(f"{name} repeat {repeat} fold {fold}: CPT {auc_a:.4f} ({leaves['CPT']} leaves) CPT(K=1) {auc_b:.4f} "
              f"({leaves['CPT(K=1)']} leaves) difference {auc_a - auc_b:+.4f} ± {se_d:.4f} (DeLong); at no more "
              f"leaves CPT {nml_auc:.4f} ({nml_leaves} leaves); CPU {cpu['CPT']:.0f} s and {cpu['CPT(K=1)']:.0f} s",
              flush=True)
        out.append(row)
    return out


def merge(rows: list[dict], path: Path = CSV) -> pd.DataFrame:
    """The CSV with ``rows`` in place of any earlier rows of the same (dataset, repeat, fold)."""
    new = pd.DataFrame(rows)
    if path.exists():
        old = pd.read_csv(path)
        if len(new):
            done = set(map(tuple, new[KEY].to_numpy().tolist()))
            old = old[[tuple(k) not in done for k in old[KEY].to_numpy().tolist()]]
        new = pd.concat([old, new], ignore_index=True)
    return new.sort_values(KEY, ignore_index=True)


def repeats_mean_difference(folds: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]], y: np.ndarray,
                            n_folds: int = N_FOLDS) -> tuple[float, float]:
    """The mean over repeats and folds of the paired AUC differences, and its standard error over the
    molecules.  ``folds``: (repeat, test rows, a's and b's test scores) per fold.

    Each fold's difference is the mean of its actives' placement differences (and of its inactives');
    a molecule's influence on the grand mean is its placement difference less the fold's, over the fold's
    count of its class (times sqrt(m / (m - 1)), DeLong's unbiased variance), summed over the repeats
    it is tested in and divided by folds x repeats.  Since every repeat tests the same molecules, their
    influences add before squaring.  For one repeat this is sqrt(sum of the folds' DeLong variances) / folds.
    """
    from polytope_ablation_power import _placements

    repeats = sorted({r for r, *_ in folds})
    psi, total = np.zeros(y.size), 0.0
    for _, test, a, b in folds:
        yt = y[test]
        (a10, a01), (b10, b01) = _placements(a, yt), _placements(b, yt)
        for mask, d in ((yt == 1, a10 - b10), (yt == 0, a01 - b01)):
            m = d.size
            psi[test[mask]] += (d - d.mean()) / m * np.sqrt(m / (m - 1))
        total += (a10 - b10).mean()
    scale = n_folds * len(repeats)
    return total / scale, float(np.sqrt(np.sum((psi / scale) ** 2)))


def k1_no_more_leaves(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with CPT(K=1)'s test AUC and leaves at no more than CPT's leaves (the other direction of
    :func:`no_more_leaves`, from the recorded ``k1_by_depth``) where a row lacks them."""
    df = df.copy()
    for col in ("k1_auc_no_more_leaves", "k1_leaves_no_more_leaves"):
        if col not in df:
            df[col] = np.nan
    for i in df.index[df.k1_auc_no_more_leaves.isna()]:
        r = df.loc[i]
        by_depth = json.loads(r.k1_by_depth) if isinstance(r.get("k1_by_depth"), str) else None
        if by_depth is None and r.k1_leaves > r.cpt_leaves:
            continue  # nothing recorded to choose a smaller tree from
        df.loc[i, ["k1_auc_no_more_leaves", "k1_leaves_no_more_leaves"]] = no_more_leaves(
            r.k1_auc, int(r.k1_leaves), by_depth, int(r.cpt_leaves))
    return df


def summary(df: pd.DataFrame, exact: dict[str, tuple[float, float]] | None = None) -> list[str]:
    """Per data set and repeat with all folds done: the folds' means and the paired difference with its
    test-molecule error; then over the repeats, with ``exact[dataset]`` (:func:`repeats_mean_difference`
    over those repeats) where the test probabilities were kept, else the bound the folds' errors give."""
    df = k1_no_more_leaves(df)
    lines = ["| data set | repeat | folds | CPT AUC (leaves) | CPT(K=1) AUC (leaves) | mean paired difference ± s.e. "
             "(test molecules) | folds CPT higher | CPT at no more leaves than CPT(K=1): AUC (leaves) | folds "
             "CPT higher | CPT(K=1) at no more leaves than CPT: AUC (leaves) | folds CPT higher |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    totals = []
    for (name, repeat), d in df.groupby(["dataset", "repeat"], sort=False):
        if len(d) < N_FOLDS:
            continue
        se = np.sqrt((d.se_difference ** 2).sum()) / len(d)
        lines.append(f"| {name} | {repeat} | {len(d)} | {d.cpt_auc.mean():.4f} ({d.cpt_leaves.mean():.1f}) | "
                     f"{d.k1_auc.mean():.4f} ({d.k1_leaves.mean():.1f}) | {d.difference.mean():+.4f} ± {se:.4f} | "
                     f"{int((d.cpt_auc > d.k1_auc).sum())}/{len(d)} | {d.cpt_auc_no_more_leaves.mean():.4f} "
                     f"({d.cpt_leaves_no_more_leaves.mean():.1f}) | "
                     f"{int((d.cpt_auc_no_more_leaves > d.k1_auc).sum())}/{len(d)} | "
                     f"{d.k1_auc_no_more_leaves.mean():.4f} ({d.k1_leaves_no_more_leaves.mean():.1f}) | "
                     f"{int((d.cpt_auc > d.k1_auc_no_more_leaves).sum())}/{len(d)} |")
        totals.append((name, d.difference.mean(), se, (d.cpt_auc_no_more_leaves - d.k1_auc).mean(),
                       (d.cpt_auc - d.k1_auc_no_more_leaves).mean(), d))
    if not totals:
        return [f"No repeat has all its {N_FOLDS} folds yet."]
    out = []
    for name in dict.fromkeys(t[0] for t in totals):
        t = [x for x in totals if x[0] == name]
        diffs = np.array([x[1] for x in t])
        spread = diffs.std(ddof=1) / np.sqrt(len(t)) if len(t) > 1 else float("nan")
        if exact and name in exact:
            molecules = exact[name][1]
            error = (f"its standard error over the molecules is {molecules:.4f} (each molecule's influence summed "
                     f"over the repeats, which all test it)")
        else:
            molecules = np.mean([x[2] for x in t])
            error = (f"its standard error over the molecules is at most {molecules:.4f} (the repeats' mean; "
                     f"they test the same molecules, so it does not shrink with them)")
        both = np.hypot(molecules, spread) if len(t) > 1 else molecules
        d = pd.concat([x[5] for x in t])
        levels = (f"All {len(d)} folds: CPT {d.cpt_auc.mean():.4f} with {d.cpt_leaves.mean():.1f} leaves, CPT(K=1) "
                  f"{d.k1_auc.mean():.4f} with {d.k1_leaves.mean():.1f}; CPT higher in {int((d.difference > 0).sum())}, "
                  f"at no more leaves in {int((d.cpt_auc_no_more_leaves > d.k1_auc).sum())}. ")
        out.append(f"{name}: {levels}Over {len(t)} repeat(s), mean paired difference CPT − CPT(K=1) {diffs.mean():+.4f}; "
                   f"{error}, the repeats' spread (folds and seeds) {spread:.4f}, so {diffs.mean() / both:+.1f} "
                   f"standard errors of both together; with CPT at no more leaves than CPT(K=1) "
                   f"{np.mean([x[3] for x in t]):+.4f}, with CPT(K=1) at no more leaves than CPT "
                   f"{np.mean([x[4] for x in t]):+.4f}.")
    return lines + [""] + [line for o in out for line in (o, "")][:-1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", choices=["bace", "hiv"], default="bace")
    ap.add_argument("--repeats", type=int, default=3, help="repeats first-repeat .. repeats-1")
    ap.add_argument("--first-repeat", type=int, default=0)
    ap.add_argument("--folds", default=",".join(map(str, range(N_FOLDS))))
    ap.add_argument("--report", action="store_true", help="write the Markdown from the CSV; fit nothing")
    args = ap.parse_args()
    RESULTS.mkdir(exist_ok=True)
    if not args.report:
        for repeat in range(args.first_repeat, args.repeats):
            rows = run(args.dataset, repeat, [int(f) for f in args.folds.split(",")])
            merge(rows).to_csv(CSV, index=False)  # after every repeat, so that a stopped run keeps its folds
        return
    df = pd.read_csv(CSV)
    notes = [part.replace("``", "`") for part in __doc__.split("\n\n")[1:4]]
    lines = C.header("CPT against CPT(K=1) by scaffold-grouped cross-validation",
                     "python benchmarks/polytope_scaffold_cv.py --report (fits: see the module docstring)",
                     [line for part in notes for line in (part, "")][:-1])
    exact = {}
    for name, d in df.groupby("dataset", sort=False):
        done = [r for r, f in d.groupby("repeat") if len(f) == N_FOLDS]
        files = [PROBA / f"{name}_r{r}_f{f}.npz" for r in done for f in range(N_FOLDS)]
        if done and all(p.exists() for p in files):
            y = C.molecule_features(name)[1]
            folds = [(r, z["test"], z["cpt"], z["k1"]) for r, p in zip(np.repeat(done, N_FOLDS), files)
                     for z in [np.load(p)]]
            exact[name] = repeats_mean_difference(folds, y)
    lines += summary(df, exact)
    lines += ["", "Per fold:", "", "| data set | repeat | fold | test rows (actives) | CPT AUC (leaves, depth) | "
              "CPT(K=1) AUC (leaves, depth) | paired difference ± s.e. | CPT at no more leaves | CPU s CPT, CPT(K=1) "
              "| processor, git |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in df.itertuples():
        lines.append(f"| {r.dataset} | {r.repeat} | {r.fold} | {r.test_rows} ({r.test_actives}) | {r.cpt_auc:.4f} "
                     f"({r.cpt_leaves}, {r.cpt_depth}) | {r.k1_auc:.4f} ({r.k1_leaves}, {r.k1_depth}) | "
                     f"{r.difference:+.4f} ± {r.se_difference:.4f} | {r.cpt_auc_no_more_leaves:.4f} "
                     f"({r.cpt_leaves_no_more_leaves}) | {r.cpu_s_cpt:.0f}, {r.cpu_s_k1:.0f} | {r.cpu}, {r.git} |")
    text = "\n".join(lines) + "\n"
    (RESULTS / "polytope_scaffold_cv.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
