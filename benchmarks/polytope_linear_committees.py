"""Would a committee of linear models make a better untrained start than the one ridge direction?

By scaffold, CPT and CPT(K=1) both take the untrained linear start (one expert along a ridge
classifier's score) at the root, so the two trees tie there (``polytope_equal_depth.md``).  A start that
only a committee can hold might let CPT pull ahead.  This script checks two such committees offline on
the MoleculeNet scaffold splits, without training anything:

- ``bagged``: K ridge classifiers, each on a random half of the training scaffolds;
- ``actives clustered``: the training actives cut into k k-means clusters of their fingerprints, one
  ridge classifier per cluster (its actives against every inactive), so that the noisy-OR fires when
  any cluster's expert does.

Each expert is in logit units (a one-feature logistic regression of its labels on its score, as
``init="linear"`` does) and the committee's intensity is ``lambda = sum_k softplus(z_k)`` (every
``r_k = 1``).  Reported per committee: the test ROC AUC of ``lambda`` itself, and the validation and
test AUC of the depth-1 tree whose cut the threshold search puts on ``lambda`` on the training rows
(the root split the committee would offer).  The single ridge direction is the first row.

    python benchmarks/polytope_linear_committees.py [--datasets bace,hiv]
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

RESULTS = Path(__file__).resolve().parent / "results"
ALPHAS = np.logspace(-3, 4, 8)


def _logits(Z, rows, labels, alpha=None):
    """A ridge classifier of ``labels`` on ``Z[rows]``, in logit units, scored on every row of Z."""
    from sklearn.linear_model import LogisticRegression, RidgeClassifier, RidgeClassifierCV

    m = (RidgeClassifierCV(alphas=ALPHAS) if alpha is None else RidgeClassifier(alpha=alpha)).fit(Z[rows], labels)
    s = m.decision_function(Z)
    cal = LogisticRegression().fit(s[rows][:, None], labels)
    return cal.coef_[0, 0] * s + cal.intercept_[0], getattr(m, "alpha_", alpha)


def run(name: str) -> list[dict]:
    from sklearn.cluster import KMeans
    from sklearn.metrics import roc_auc_score

    from arboretum.polytope import search
    from arboretum.polytope.estimator import LINEAR_INIT_ROWS

    X, y, groups = C.molecule_features(name, 2048, 2, None)
    tr, va, te = C.scaffold_split(groups)
    X = X.astype(np.float64)
    Z = (X - X[tr].mean()) / X[tr].std()  # scaling="global", as the benchmarks fit CPT on fingerprints
    rng = np.random.RandomState(0)
    # init="linear" fits on at most LINEAR_INIT_ROWS rows; here one fixed random subset serves every committee
    rows = tr if tr.size <= LINEAR_INIT_ROWS else np.sort(rng.choice(tr, LINEAR_INIT_ROWS, replace=False))

    def record(kind, k, seed, Zs, t0):
        lam = np.logaddexp(0.0, np.atleast_2d(Zs)).sum(0)
        _, theta, _, _ = search.threshold_search(lam[tr], y[tr], "classification", 2, 1)
        left = lam <= theta
        p = np.where(left, y[tr][left[tr]].mean(), y[tr][~left[tr]].mean())
        return {"dataset": name, "committee": kind, "experts": k, "seed": seed,
                "score_test_auc": roc_auc_score(y[te], lam[te]), "stump_val_auc": roc_auc_score(y[va], p[va]),
                "stump_test_auc": roc_auc_score(y[te], p[te]), "fit_s": time.perf_counter() - t0}

    t0 = time.perf_counter()
    z, alpha = _logits(Z, rows, y[rows])
    out = [record("single ridge", 1, 0, z, t0)]
    g = groups[rows]
    scaffolds = np.unique(g)
    for k in (4, 8):
        for seed in range(3):
            t0, r = time.perf_counter(), np.random.RandomState(seed)
            Zs = []
            for _ in range(k):
                half = rows[np.isin(g, r.permutation(scaffolds)[: scaffolds.size // 2])]
                Zs.append(_logits(Z, half, y[half], alpha)[0])
            out.append(record("bagged (half the scaffolds each)", k, seed, np.array(Zs), t0))
    actives, inactives = rows[y[rows] == 1], rows[y[rows] == 0]
    for k in (2, 3, 4, 6):
        for seed in range(3):
            t0 = time.perf_counter()
            label = KMeans(k, n_init=4, random_state=seed).fit_predict(X[actives])
            Zs = []
            for j in range(k):
                part = np.concatenate([actives[label == j], inactives])
                Zs.append(_logits(Z, part, np.isin(part, actives[label == j]).astype(int), alpha)[0])
            out.append(record("actives clustered", k, seed, np.array(Zs), t0))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default="bace,hiv")
    args = ap.parse_args()
    df = pd.DataFrame([r for name in args.datasets.split(",") for r in run(name)])
    RESULTS.mkdir(exist_ok=True)
    df.to_csv(RESULTS / "polytope_linear_committees.csv", index=False)
    summary = (df.groupby(["dataset", "committee", "experts"], sort=False)
               .agg(seeds=("seed", "size"), score_test_auc=("score_test_auc", "mean"),
                    stump_val_auc=("stump_val_auc", "mean"), stump_test_auc=("stump_test_auc", "mean"),
                    stump_test_min=("stump_test_auc", "min"), stump_test_max=("stump_test_auc", "max"))
               .reset_index())
    lines = ["# Committees of linear models as the untrained start (offline)", "",
             f"Command: `python benchmarks/polytope_linear_committees.py --datasets {args.datasets}`", "",
             *[part.replace("``", "`") + "\n" for part in __doc__.split("\n\n")[1:4]],
             "| data set | committee | experts | seeds | lambda test AUC | depth-1 val AUC | depth-1 test AUC "
             "(min-max) |", "|---|---|---|---|---|---|---|"]
    for r in summary.itertuples():
        lines.append(f"| {r.dataset} | {r.committee} | {r.experts} | {r.seeds} | {r.score_test_auc:.4f} | "
                     f"{r.stump_val_auc:.4f} | {r.stump_test_auc:.4f} ({r.stump_test_min:.4f}-{r.stump_test_max:.4f}) |")
    text = "\n".join(lines) + "\n"
    (RESULTS / "polytope_linear_committees.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
