"""How large a difference between CPT and CPT(K=1) can the MoleculeNet scaffold test sets resolve?

The goal "CPT beats CPT(K=1)" is scored on one fixed scaffold split, where Bace's test set has 152
molecules and HIV's 155 actives.  For each seed this script fits both methods as
``polytope_real.py``'s ``linear+ES by scaffold`` rows do (same settings, the validation rows choosing
the depth), keeps their test probabilities, and measures the paired difference of their test AUCs
against the test set's own sampling error:

- DeLong's standard error of the paired difference (the two AUCs on the same molecules, their
  correlation included), and of each AUC alone;
- a stratified bootstrap of the test molecules (actives and inactives resampled apart, 2,000
  replicates): the share of replicates in which CPT's AUC is the higher;
- over the seeds, DeLong's standard error of the mean paired difference: the test molecules' share of
  its error, which more seeds do not remove, since every seed is scored on the same molecules.

A paired difference under about two standard errors is one that another draw of test molecules from
the same scaffolds could reverse.  Seeds vary the models, not the split.

    python benchmarks/polytope_ablation_power.py [--datasets bace,hiv] [--seeds 5] [--hiv-seeds 3]

(Bace: about a minute a seed; HIV: about 15 minutes of CPU a seed.)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

import polytope_common as C  # noqa: E402
from polytope_real import CONFIGS, LINEAR_ES  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
REPLICATES = 2000


def _placements(score: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """DeLong's structural components: for each active the share of inactives it outranks (ties
    count half), and for each inactive the share of actives that outrank it."""
    pos, neg = score[y == 1], score[y == 0]
    order = np.sort(neg)
    below = np.searchsorted(order, pos, "left")
    tied = np.searchsorted(order, pos, "right") - below
    v10 = (below + 0.5 * tied) / neg.size
    order = np.sort(pos)
    above = pos.size - np.searchsorted(order, neg, "right")
    tied = np.searchsorted(order, neg, "right") - np.searchsorted(order, neg, "left")
    v01 = (above + 0.5 * tied) / pos.size
    return v10, v01


def delong(a: np.ndarray, b: np.ndarray, y: np.ndarray) -> tuple[float, float, float, float, float]:
    """(AUC of a, AUC of b, s.e. of a's, s.e. of b's, s.e. of the paired difference a - b)."""
    (a10, a01), (b10, b01) = _placements(a, y), _placements(b, y)
    s10 = np.cov(np.vstack([a10, b10]))
    s01 = np.cov(np.vstack([a01, b01]))
    S = s10 / a10.size + s01 / a01.size
    return (float(a10.mean()), float(b10.mean()), float(np.sqrt(S[0, 0])), float(np.sqrt(S[1, 1])),
            float(np.sqrt(max(S[0, 0] + S[1, 1] - 2 * S[0, 1], 0.0))))


def delong_mean_difference(pairs: list[tuple[np.ndarray, np.ndarray]], y: np.ndarray) -> tuple[float, float]:
    """The mean over seeds of the paired differences AUC(a) - AUC(b) on the same test rows, and its
    DeLong standard error over the test rows: an AUC is the mean of its placement values, so the mean
    difference is the mean of the seeds' averaged placement differences, and the test rows' error of
    the seeds' mean follows from those (the models' own variation from seed to seed is not in it)."""
    parts = [(_placements(a, y), _placements(b, y)) for a, b in pairs]
    d10 = np.mean([a10 - b10 for (a10, _), (b10, _) in parts], axis=0)
    d01 = np.mean([a01 - b01 for (_, a01), (_, b01) in parts], axis=0)
    return float(d10.mean()), float(np.sqrt(d10.var(ddof=1) / d10.size + d01.var(ddof=1) / d01.size))


def bootstrap_share(a: np.ndarray, b: np.ndarray, y: np.ndarray, seed: int) -> float:
    """Share of stratified bootstrap replicates of the test rows in which a's AUC beats b's (ties half)."""
    from sklearn.metrics import roc_auc_score

    rng = np.random.RandomState(seed)
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    wins = 0.0
    for _ in range(REPLICATES):
        rows = np.concatenate([rng.choice(pos, pos.size), rng.choice(neg, neg.size)])
        da = roc_auc_score(y[rows], a[rows]) - roc_auc_score(y[rows], b[rows])
        wins += 1.0 if da > 0 else 0.5 if da == 0 else 0.0
    return wins / REPLICATES


def run(name: str, seeds: int) -> tuple[list[dict], tuple[float, float]]:
    """Per seed one row; and the seeds' mean paired difference with its test rows' s.e."""
    cfg = CONFIGS[name]
    Xtr, ytr, Xva, yva, Xte, yte = cfg["load"]()
    groups = C.molecule_train_groups(name)
    import torch

    torch.set_num_threads(C.THREADS)  # as polytope_real.py's fits, so that a seed gives the same trees
    out, pairs = [], []
    for seed in range(seeds):
        proba, leaves, cpu = {}, {}, {}
        for method, kw in (("CPT", {}), ("CPT(K=1)", {"max_facets": 1})):
            est = C.protocol_cpt(cfg["depth"], seed, Xva, yva, None, groups, **{**cfg["cpt"], **LINEAR_ES, **kw})
            c0 = time.process_time()
            est.fit(Xtr, ytr)
            cpu[method] = time.process_time() - c0
            p = np.asarray(est.predict_proba(Xte))
            proba[method] = p[:, list(est.classes_).index(1)]
            leaves[method] = C.n_leaves(est, Xtr)[0]
        a, b = proba["CPT"], proba["CPT(K=1)"]
        pairs.append((a, b))
        auc_a, auc_b, se_a, se_b, se_d = delong(a, b, yte)
        row = {"dataset": name, "seed": seed, "test_rows": yte.size, "test_actives": int(yte.sum()),
               "cpt_auc": auc_a, "k1_auc": auc_b, "cpt_leaves": leaves["CPT"], "k1_leaves": leaves["CPT(K=1)"],
               "difference": auc_a - auc_b, "se_cpt": se_a, "se_k1": se_b, "se_difference": se_d,
               "z": (auc_a - auc_b) / se_d if se_d > 0 else float("nan"),
               "bootstrap_share_cpt_higher": bootstrap_share(a, b, yte, seed),
               "cpu_s_cpt": cpu["CPT"], "cpu_s_k1": cpu["CPT(K=1)"]}
        print(f"{name} seed {seed}: CPT {auc_a:.4f} ({leaves['CPT']} leaves) CPT(K=1) {auc_b:.4f} "
              f"({leaves['CPT(K=1)']} leaves) difference {auc_a - auc_b:+.4f} ± {se_d:.4f} (DeLong), "
              f"CPT higher in {row['bootstrap_share_cpt_higher']:.0%} of bootstrap replicates", flush=True)
        out.append(row)
    return out, delong_mean_difference(pairs, yte)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default="bace,hiv")
    ap.add_argument("--seeds", type=int, default=5, help="seeds on Bace")
    ap.add_argument("--hiv-seeds", type=int, default=3, help="seeds on HIV")
    args = ap.parse_args()
    runs = {name: run(name, args.hiv_seeds if name == "hiv" else args.seeds) for name in args.datasets.split(",")}
    df = pd.DataFrame([r for rows, _ in runs.values() for r in rows])
    RESULTS.mkdir(exist_ok=True)
    df.to_csv(RESULTS / "polytope_ablation_power.csv", index=False)
    command = "python benchmarks/polytope_ablation_power.py" + (
        f" --datasets {args.datasets}" if args.datasets != "bace,hiv" else "") + (
        f" --seeds {args.seeds}" if args.seeds != 5 else "") + (
        f" --hiv-seeds {args.hiv_seeds}" if args.hiv_seeds != 3 else "")
    notes = [part.replace("``", "`") for part in __doc__.split("\n\n")[1:4]]
    lines = C.header("CPT against CPT(K=1): the scaffold test sets' resolution", command,
                     [line for part in notes for line in (part, "")][:-1])
    lines += ["| data set | seed | test rows (actives) | CPT AUC ± s.e. (leaves) | CPT(K=1) AUC ± s.e. (leaves) "
              "| paired difference ± s.e. | z | bootstrap share CPT higher |", "|---|---|---|---|---|---|---|---|"]
    for r in df.itertuples():
        lines.append(f"| {r.dataset} | {r.seed} | {r.test_rows} ({r.test_actives}) | {r.cpt_auc:.4f} ± {r.se_cpt:.4f} "
                     f"({r.cpt_leaves}) | {r.k1_auc:.4f} ± {r.se_k1:.4f} ({r.k1_leaves}) | "
                     f"{r.difference:+.4f} ± {r.se_difference:.4f} | {r.z:+.2f} | {r.bootstrap_share_cpt_higher:.2f} |")
    for name, d in df.groupby("dataset", sort=False):
        mean, se = runs[name][1]
        lines += ["", f"{name}: mean paired difference {mean:+.4f} over {len(d)} seeds; its standard error from "
                  f"the seeds' spread is {d.difference.std(ddof=1) / np.sqrt(len(d)):.4f} (the models' variation), "
                  f"from the test molecules {se:.4f} (DeLong on the seeds' averaged placements; one seed's "
                  f"difference: {d.se_difference.mean():.4f} on average, one AUC {d.se_cpt.mean():.4f}); "
                  f"|z| > 2 in {int((d.z.abs() > 2).sum())} of {len(d)} seeds."]
    text = "\n".join(lines) + "\n"
    (RESULTS / "polytope_ablation_power.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
