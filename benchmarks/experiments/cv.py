"""Figures 5 and 11: stratified 10-fold CV on the 16 CP4IM datasets (spec-000 §6.5).

Every method gets the same folds (``StratifiedKFold(10, shuffle=True,
random_state=84)``, as the reference) and the same 60 s limit.  Accuracy and
per-sample test log-likelihood are reported relative to CART at depth 4 on
the same dataset; size is the total node count.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.model_selection import StratifiedKFold

from arboretum import load_dataset

from ..engine import header_lines
from .common import CP4IM, MAIN_METHODS, WIDE_METHODS, fit_method, method_label, score_tree, warm_up

NAME = "cv"
DESCRIPTION = "Stratified 10-fold CV accuracy, test log-likelihood and size on CP4IM (Figures 5 and 11)"
N_FOLDS, CV_SEED = 10, 84
TIME_LIMIT, QUICK_TIME_LIMIT = 60.0, 5.0
QUICK_DATASETS = ("zoo-1", "hepatitis")
QUICK_FOLDS = (0, 1)


def jobs(quick: bool) -> list[dict[str, Any]]:
    datasets = QUICK_DATASETS if quick else CP4IM
    folds = QUICK_FOLDS if quick else range(N_FOLDS)
    methods = MAIN_METHODS if quick else WIDE_METHODS
    limit = QUICK_TIME_LIMIT if quick else TIME_LIMIT
    return [{"dataset": d, "fold": f, **m, "time_limit": limit}
            for d in datasets for f in folds for m in methods]


def fold_indices(y: np.ndarray, fold: int) -> tuple[np.ndarray, np.ndarray]:
    """Train and test indices of ``fold`` of the reference's stratified 10-fold split."""
    splitter = StratifiedKFold(N_FOLDS, shuffle=True, random_state=CV_SEED)
    return list(splitter.split(np.zeros(len(y)), y))[fold]


def run_job(job: dict[str, Any]) -> list[dict[str, Any]]:
    X, y = load_dataset(job["dataset"], return_X_y=True)
    train, test = fold_indices(y, job["fold"])
    spec = {k: v for k, v in job.items() if k not in ("dataset", "fold", "time_limit")}
    warm_up()
    fit = fit_method(spec, X[train], y[train], job["time_limit"])
    scores = score_tree(fit["tree"], X[train], y[train], X[test], y[test],
                        alpha=spec.get("alpha", 0.95), beta=spec.get("beta", 0.5))
    row = {"dataset": job["dataset"], "fold": job["fold"], "method": method_label(spec),
           "fit_time": fit["fit_time"], "status": fit["status"], **scores}
    if "gap" in fit:
        row["gap"] = fit["gap"]
    return [row]


def relative_table(rows: pd.DataFrame, reference: str = "CART d4") -> pd.DataFrame:
    """Fold means per (dataset, method) with accuracy and log-likelihood relative to ``reference``."""
    means = rows.groupby(["dataset", "method"], as_index=False).agg(
        test_acc=("test_acc", "mean"), test_loglik=("test_loglik", "mean"),
        test_loglik_pp=("test_loglik_pp", "mean"), size=("size", "mean"),
        fit_time=("fit_time", "mean"), folds=("fold", "count"),
        timeouts=("status", lambda s: int(sum(str(v) in ("time_limit", "timeout", "memory_limit") for v in s))),
        failures=("status", lambda s: int(sum(str(v).startswith("failed") for v in s))),
    )
    ref = means[means["method"] == reference].set_index("dataset")
    means["rel_acc"] = means["test_acc"] - means["dataset"].map(ref["test_acc"])
    means["rel_loglik"] = means["test_loglik"] - means["dataset"].map(ref["test_loglik"])
    return means


def boxplot_figure(table: pd.DataFrame, methods: list[str], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = [m for m in methods if m in set(table["method"])]
    fig, axes = plt.subplots(1, 3, figsize=(max(12, 1.2 * len(methods) * 3), 4.5))
    for ax, (col, label) in zip(axes, [("rel_acc", "test accuracy - CART d4"),
                                       ("rel_loglik", "test log-likelihood - CART d4"),
                                       ("size", "tree size (nodes)")]):
        data = [table.loc[table["method"] == m, col].dropna().to_numpy() for m in methods]
        ax.boxplot(data, whis=1.5)
        ax.set_xticks(range(1, len(methods) + 1), methods, rotation=60, ha="right", fontsize=8)
        ax.set_title(label, fontsize=10)
        if col != "size":
            ax.axhline(0.0, color="grey", lw=0.8, ls="--")
        else:
            ax.set_yscale("log")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def claim_table(table: pd.DataFrame, ours: str = "MAPTree", tol: float = 0.005) -> list[str]:
    """The paper's claim per baseline: better accuracy or log-likelihood, or comparable with smaller trees."""
    lines = [f"| baseline | datasets | {ours} better acc | better loglik | comparable acc (within {tol:.1%}) and smaller | "
             "claim holds on | median rel acc (base) | median size (base / ours) |",
             "|---|---|---|---|---|---|---|---|"]
    mine = table[table["method"] == ours].set_index("dataset")
    for base in sorted(set(table["method"]) - {ours}):
        other = table[table["method"] == base].set_index("dataset")
        common = mine.index.intersection(other.index)
        if len(common) == 0:
            continue
        a, b = mine.loc[common], other.loc[common]
        better_acc = a["test_acc"] > b["test_acc"] + 1e-12
        better_ll = a["test_loglik"] > b["test_loglik"] + 1e-12
        comp_small = ((a["test_acc"] - b["test_acc"]).abs() <= tol) & (a["size"] < b["size"])
        holds = better_acc | better_ll | comp_small
        lines.append(f"| {base} | {len(common)} | {int(better_acc.sum())} | {int(better_ll.sum())} | "
                     f"{int(comp_small.sum())} | {int(holds.sum())}/{len(common)} | "
                     f"{b['rel_acc'].median():+.4f} | {b['size'].median():.1f} / {a['size'].median():.1f} |")
    return lines


def summarize(rows: pd.DataFrame, out_dir: Path, stem: str, meta: dict) -> None:
    table = relative_table(rows)
    table.to_csv(out_dir / f"{stem}_means.csv", index=False)
    main = [method_label(m) for m in MAIN_METHODS]
    wide = [method_label(m) for m in WIDE_METHODS]
    boxplot_figure(table, main, out_dir / f"{stem}_fig5.png", "Figure 5: CP4IM, 10-fold CV")
    boxplot_figure(table, sorted(set(wide), key=wide.index), out_dir / f"{stem}_fig11.png",
                   "Figure 11: CP4IM, 10-fold CV, wider grids")
    lines = header_lines("CP4IM 10-fold CV: accuracy, test log-likelihood and size (Figures 5 and 11)", meta, [
        "",
        f"Figures: `{stem}_fig5.png` (the paper's methods) and `{stem}_fig11.png` (wider grids). "
        "Per-fold rows: `" + stem + ".csv`; fold means: `" + stem + "_means.csv`.",
        "Accuracy and log-likelihood (spec §3.12: test labels' Beta-Bernoulli marginal per leaf, per sample) "
        "are fold means minus CART d4's on the same dataset. Prior alpha=0.95, beta=0.5, rho=(2.5, 2.5).",
    ])
    lines += ["## Median over datasets", "",
              "| method | datasets | median rel acc | median rel loglik | median size | mean fit time (s) | timeouts | failures |",
              "|---|---|---|---|---|---|---|---|"]
    for m in sorted(set(table["method"]), key=lambda x: (wide + [x]).index(x)):
        t = table[table["method"] == m]
        lines.append(f"| {m} | {len(t)} | {t['rel_acc'].median():+.4f} | {t['rel_loglik'].median():+.4f} | "
                     f"{t['size'].median():.1f} | {t['fit_time'].mean():.2f} | {int(t['timeouts'].sum())} | "
                     f"{int(t['failures'].sum())} |")
    lines += ["", "## The paper's claim, per baseline", "",
              "Claim (spec §6.5): against every baseline MAPTree has better test accuracy or log-likelihood, "
              "or comparable accuracy with smaller trees. Counted per dataset on fold means.", ""]
    lines += claim_table(table)
    lines += ["", "## Per dataset (fold means: accuracy / log-likelihood / size)", ""]
    methods_present = [m for m in wide if m in set(table["method"])]
    lines.append("| dataset | " + " | ".join(methods_present) + " |")
    lines.append("|---" * (len(methods_present) + 1) + "|")
    for d in sorted(set(table["dataset"])):
        cells = []
        for m in methods_present:
            r = table[(table["dataset"] == d) & (table["method"] == m)]
            cells.append("" if r.empty else
                         f"{r['test_acc'].iloc[0]:.3f} / {r['test_loglik'].iloc[0]:.3f} / {r['size'].iloc[0]:.1f}")
        lines.append(f"| {d} | " + " | ".join(cells) + " |")
    (out_dir / f"{stem}.md").write_text("\n".join(lines) + "\n")
