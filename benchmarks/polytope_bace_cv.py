#!/usr/bin/env python
"""Which training budget for CPT on Bace, chosen as the paper chooses hyperparameters (spec §3.7:
cross-validation on train + validation, never the test rows).

Scaffold-grouped 5-fold CV (scikit-learn's ``GroupKFold`` on the Bemis-Murcko scaffolds) over the
training and validation rows of the scaffold split of ``polytope_real.py``, CPT greedy at a fixed
depth, ROC AUC of each held-out fold.  Budgets: ``auto`` (the estimator's default: about 1,600 Adam
steps per level, batches of n/8) and ``reference`` (spec §3.0's defaults, the reference code's: 40
epochs of batches of 1,000, i.e. 80 steps at the root of 1,210 rows), each with K=30 and K=1.

Usage::

    python benchmarks/polytope_bace_cv.py [--depth 3] [--folds 5]

Results: ``benchmarks/results/polytope_bace_cv.{csv,md}``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import polytope_common as C  # noqa: E402

BUDGETS = {"auto": {}, "reference": dict(epochs=40, batch_size=1000)}
BASE = dict(use_prior=False, scaling="global", refine=False, time_limit=None)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--depth", type=int, default=3)
    ap.add_argument("--folds", type=int, default=5)
    args = ap.parse_args(argv)
    import pandas as pd
    import torch
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import GroupKFold

    from arboretum import ConvexPolytopeTreeClassifier

    torch.set_num_threads(C.THREADS)
    X, y, groups = C.molecule_features("bace")
    train, valid, _ = C.scaffold_split(groups)
    pool = np.union1d(train, valid)
    X, y, groups = X[pool].astype(np.float64), y[pool], groups[pool]
    rows = []
    for fold, (fit, held) in enumerate(GroupKFold(args.folds).split(X, y, groups)):
        for budget, kw in BUDGETS.items():
            for K in (30, 1):
                t0 = time.process_time()
                m = ConvexPolytopeTreeClassifier(max_depth=args.depth, max_facets=K, random_state=fold,
                                                 **BASE, **kw).fit(X[fit], y[fit])
                auc = roc_auc_score(y[held], m.predict_proba(X[held])[:, 1])
                rows.append(dict(fold=fold, budget=budget, K=K, auc=auc, leaves=m.tree_.n_leaves,
                                 cpu_s=time.process_time() - t0))
                print(rows[-1], flush=True)
    df = pd.DataFrame(rows)
    C.RESULTS.mkdir(exist_ok=True)
    df.to_csv(C.RESULTS / "polytope_bace_cv.csv", index=False)
    g = df.groupby(["budget", "K"])
    table = g.auc.agg(["mean", "sem"]).join(g.leaves.mean()).join(g.cpu_s.mean()).reset_index()
    command = "python benchmarks/polytope_bace_cv.py" + (f" --depth {args.depth}" if args.depth != 3 else "") + \
        (f" --folds {args.folds}" if args.folds != 5 else "")
    notes = [f"{len(pool)} rows (scaffold train + validation of polytope_real.py's split; the test rows are not "
             f"used), {args.folds} scaffold-grouped folds, CPT greedy at max_depth={args.depth} with {BASE}."]
    lines = C.header("CPT training budget on Bace by scaffold-grouped cross-validation", command, notes)
    lines += ["| budget | K | CV AUC mean ± s.e. | leaves | CPU s per fit |", "|---|---|---|---|---|"]
    lines += [f"| {r.budget} | {r.K} | {r['mean']:.4f} ± {r['sem']:.4f} | {r.leaves:.1f} | {r.cpu_s:.1f} |"
              for _, r in table.iterrows()]
    (C.RESULTS / "polytope_bace_cv.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
