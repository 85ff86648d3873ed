#!/usr/bin/env python
"""CPT against CPT(K=1) depth by depth, from the ``by_depth`` column of ``polytope_real.py``'s CSVs.

With validation rows, ``polytope_real.py`` records every depth's greedy tree of a fit (its leaves and its
validation and test scores, ``by_depth``) beside the tree the validation rows chose.  The chosen trees'
comparison mixes two things: how good the splits are, and which depth a few hundred validation rows
happen to pick for each method.  This script separates the first: for every depth it pairs CPT's greedy
tree with CPT(K=1)'s of the same seed (same data, same depth, so nearly the same number of leaves) and
counts the seeds where CPT scores higher on the test rows and has no more leaves.  Nothing is chosen on
the test rows: this describes the fitted trees, it does not select one.

It also counts the seeds whose two trees score exactly the same at a depth: from the root down, the
trees share their splits as long as the untrained linear start wins every node on the held-out groups
(``init="linear"`` with ``groups``).

Usage::

    python benchmarks/polytope_equal_depth.py benchmarks/results/polytope_hiv_fresh.csv \\
        --methods "CPT linear+ES by scaffold" --out benchmarks/results/polytope_equal_depth.md

Several CSVs may be given; rows pair within each CSV only (same dataset, seed and CSV).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd


def pairs(path: Path, method: str) -> list[tuple[str, int, dict, dict]]:
    """``(dataset, seed, CPT's by_depth, CPT(K=1)'s by_depth)`` of every seed that has both rows."""
    df = pd.read_csv(path)
    k1 = method.replace("CPT", "CPT(K=1)", 1)
    out = []
    for (dataset, seed), rows in df[df.method.isin([method, k1])].groupby(["dataset", "seed"]):
        a, b = rows[rows.method == method], rows[rows.method == k1]
        if len(a) == 1 and len(b) == 1 and isinstance(a.by_depth.iloc[0], str) and isinstance(b.by_depth.iloc[0], str):
            out.append((dataset, int(seed), json.loads(a.by_depth.iloc[0]), json.loads(b.by_depth.iloc[0])))
    return out


def table(found: list[tuple[str, int, dict, dict]]) -> list[str]:
    depth = min(min(len(a["test"]), len(b["test"])) for _, _, a, b in found)
    lines = ["| depth | CPT test mean | CPT leaves | CPT(K=1) test mean | CPT(K=1) leaves | CPT higher | "
             "CPT higher with no more leaves | same score | paired difference ± s.e. |",
             "|---|---|---|---|---|---|---|---|---|"]
    for d in range(1, depth):
        ta = np.array([a["test"][d] for *_, a, _ in found])
        tb = np.array([b["test"][d] for *_, b in found])
        la = np.array([a["leaves"][d] for *_, a, _ in found])
        lb = np.array([b["leaves"][d] for *_, b in found])
        diff = ta - tb
        se = diff.std(ddof=1) / np.sqrt(diff.size) if diff.size > 1 else float("nan")
        lines.append(f"| {d} | {ta.mean():.4f} | {la.mean():.1f} | {tb.mean():.4f} | {lb.mean():.1f} | "
                     f"{int((diff > 0).sum())}/{diff.size} | {int(((diff > 0) & (la <= lb)).sum())}/{diff.size} | "
                     f"{int((diff == 0).sum())}/{diff.size} | {diff.mean():+.4f} ± {se:.4f} |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="+", type=Path)
    ap.add_argument("--methods", default="CPT linear+ES by scaffold", help="comma-separated CPT methods")
    ap.add_argument("--out", type=Path, help="write the Markdown here as well as to stdout")
    args = ap.parse_args()
    md = ["# CPT against CPT(K=1) at every depth", "",
          "Command: `python benchmarks/polytope_equal_depth.py " + " ".join(str(p) for p in args.csv)
          + f' --methods "{args.methods}"`', "",
          "Per depth, each seed's greedy tree of CPT against CPT(K=1)'s of the same seed (the `by_depth` column: "
          "test scores of every depth's greedy tree, recorded beside the tree the validation rows chose). "
          "Nothing here is chosen on the test rows."]
    for path in args.csv:
        for method in args.methods.split(","):
            found = pairs(path, method.strip())
            if not found:
                continue
            datasets = sorted({f[0] for f in found})
            md += ["", f"## {', '.join(datasets)}: {method.strip()} ({path.name}, {len(found)} seeds: "
                   f"{min(f[1] for f in found)}-{max(f[1] for f in found)})", "", *table(found)]
    text = "\n".join(md) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
