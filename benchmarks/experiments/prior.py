"""Figure 12: sensitivity of MAPTree to the prior's (alpha, beta), on CP4IM 10-fold CV (spec-000 §6.6).

All seven settings, the default (0.95, 0.5) included, run here inside the CV
harness of :mod:`.cv` (same folds, 60 s), so every setting is measured by the
same sources: a 60 s MAPTree answer depends on how fast the search is, and the
``cv`` run's own MAPTree column is from an earlier commit. The CART d4
reference, which does not depend on our sources, is read from the ``cv`` log,
so run ``cv`` first (the summary says when it is missing). The summary also
lists the ``cv`` log's MAPTree column beside the default setting, to show how
much the sources changed the 60 s answers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..engine import header_lines, read_log
from . import cv

NAME = "prior"
DESCRIPTION = "MAPTree's sensitivity to the 7 (alpha, beta) prior settings (Figure 12)"
SETTINGS = ((0.999, 0.1), (0.99, 0.2), (0.95, 0.5), (0.9, 1.0), (0.8, 2.0), (0.5, 4.0), (0.2, 8.0))
DEFAULT = (0.95, 0.5)
QUICK_DATASETS = ("hepatitis",)
#: The full grid's dataset order: cheapest first, by MAPTree's mean fit time at the default prior in
#: the ``cv`` run (``cv.md``). Jobs run in list order, so a run stopped part-way (the grid takes about
#: six hours on two cores) has whole datasets done, and as many of them as possible.
FULL_ORDER = (
    "zoo-1", "hepatitis", "primary-tumor", "vote", "audiology", "tic-tac-toe", "heart-cleveland",
    "german-credit", "australian-credit", "lymph", "anneal", "soybean", "hypothyroid", "kr-vs-kp",
    "splice-1", "mushroom",
)


def jobs(quick: bool) -> list[dict[str, Any]]:
    datasets = QUICK_DATASETS if quick else FULL_ORDER
    folds = cv.QUICK_FOLDS if quick else range(cv.N_FOLDS)
    limit = cv.QUICK_TIME_LIMIT if quick else cv.TIME_LIMIT
    return [{"dataset": d, "fold": f, "method": "maptree", "alpha": a, "beta": b, "time_limit": limit}
            for d in datasets for f in folds for (a, b) in SETTINGS]


def run_job(job: dict[str, Any]) -> list[dict[str, Any]]:
    rows = cv.run_job(job)
    for row in rows:
        row["alpha"], row["beta"] = job["alpha"], job["beta"]
    return rows


def _setting_label(alpha: float, beta: float) -> str:
    return f"MAPTree ({alpha}, {beta})"


#: the ``cv`` log's MAPTree column (default prior, earlier sources), shown for comparison only
CV_LOG_LABEL = f"MAPTree {DEFAULT}, cv log"


def summarize(rows: pd.DataFrame, out_dir: Path, stem: str, meta: dict) -> None:
    from scipy.stats import friedmanchisquare

    cv_stem = "cv_quick" if meta["quick"] else "cv"
    cv_rows = [r for rs in read_log(out_dir / f"{cv_stem}.jobs.jsonl").values() for r in rs
               if r["method"] in ("MAPTree", "CART d4") and r["dataset"] in set(rows["dataset"])]
    extra = pd.DataFrame(cv_rows)
    if len(extra):
        extra.loc[extra["method"] == "MAPTree", "method"] = CV_LOG_LABEL
    found = len(extra) and (extra["method"] == "CART d4").any()
    allrows = pd.concat([rows, extra], ignore_index=True)
    table = cv.relative_table(allrows)
    table.to_csv(out_dir / f"{stem}_means.csv", index=False)
    labels = [_setting_label(a, b) for a, b in SETTINGS]
    cv.boxplot_figure(table, labels, out_dir / f"{stem}_fig12.png",
                      "Figure 12: MAPTree under 7 priors (alpha, beta), CP4IM 10-fold CV")
    notes = ["", f"Figure: `{stem}_fig12.png`. Fold means: `{stem}_means.csv`. "
             f"Every setting, the default ({DEFAULT[0]}, {DEFAULT[1]}) included, ran in this grid; the CART d4 "
             f"reference comes from the `{cv_stem}` experiment's log ({'found' if found else 'MISSING: run cv first'}). "
             f"The last row is the `{cv_stem}` log's own MAPTree column (default prior, the sources of that run), "
             "for comparison; it is not part of the Friedman test."]
    lines = header_lines("MAPTree prior sensitivity (Figure 12)", meta, notes)
    lines += ["| setting (alpha, beta) | datasets | median rel acc | median rel loglik | median size | "
              "mean fit time (s) | certified folds |", "|---|---|---|---|---|---|---|"]
    shown = [(f"({a}, {b})", lab) for (a, b), lab in zip(SETTINGS, labels)]
    if (allrows["method"] == CV_LOG_LABEL).any():
        shown.append((f"{DEFAULT}, `{cv_stem}` log", CV_LOG_LABEL))
    for name, lab in shown:
        t = table[table["method"] == lab]
        sub = allrows[allrows["method"] == lab]
        cert = int((sub["status"] == "certified").sum()) if len(sub) else 0
        lines.append(f"| {name} | {len(t)} | {t['rel_acc'].median():+.4f} | {t['rel_loglik'].median():+.4f} | "
                     f"{t['size'].median():.1f} | {t['fit_time'].mean():.2f} | {cert}/{len(sub)} |")
    lines += ["", "Friedman test across the seven settings, blocks = datasets having all seven "
              "(a small p-value means the setting matters):", ""]
    for col in ("rel_acc", "rel_loglik", "size"):
        wide = table[table["method"].isin(labels)].pivot(index="dataset", columns="method", values=col)
        wide = wide.reindex(columns=labels).dropna()
        if len(wide) >= 3:
            stat, p = friedmanchisquare(*[wide[c].to_numpy() for c in labels])
            lines.append(f"- {col}: {len(wide)} datasets, chi2 = {stat:.2f}, p = {p:.3g}")
        else:
            lines.append(f"- {col}: fewer than 3 complete datasets")
    (out_dir / f"{stem}.md").write_text("\n".join(lines) + "\n")
