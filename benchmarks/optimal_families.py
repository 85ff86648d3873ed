"""B3 of spec-002 (the paper's Figure 7): axis-parallel vs hyperplane vs quadratic optimal trees in 2-D.

Two synthetic problems in the square ``[-1, 1]^2``: an *oblique* class boundary (the line
``x0 + 0.5 x1 = 0.1``) and a *curved* one (the disc ``x0^2 + x1^2 < 0.45``), each with a few flipped
labels (``--noise``).  For every family, the optimal tree with at most ``K`` splits is fitted on
``N`` training points (``OptimalTreeClassifier``, certified unless the time limit stops it) and scored
on 4,000 fresh test points; sklearn's CART with the same number of leaves is the greedy reference.
The figure shows the partitions (``arboretum.plot.plot_decision_regions`` with the leaf borders) of
the largest ``K`` of each family.

Usage::

    python benchmarks/optimal_families.py [--n 30] [--noise 0.05] [--time-limit 300]

Writes ``benchmarks/results/optimal_families.{csv,md,png}``.
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"

#: (family, the values of K fitted); the largest K of each family is drawn.
PLAN = (("axis", (1, 2, 3)), ("hyperplane", (1, 2)), ("quadratic", (1,)))


def problems(n: int, noise: float, seed: int = 0) -> dict:
    """Training and test sets of the two boundaries (the same points for both, other labels)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 2)).round(3)
    T = rng.uniform(-1, 1, size=(4000, 2))
    rules = {
        "oblique": lambda Z: (Z[:, 0] + 0.5 * Z[:, 1] > 0.1).astype(int),
        "curved": lambda Z: (Z[:, 0] ** 2 + Z[:, 1] ** 2 < 0.45).astype(int),
    }
    out = {}
    for name, rule in rules.items():
        y = rule(X) ^ (rng.random(n) < noise)
        yt = rule(T) ^ (rng.random(T.shape[0]) < noise)
        out[name] = (X, y.astype(int), T, yt.astype(int))
    return out


def run(n: int, noise: float, time_limit: float) -> tuple[list[dict], dict]:
    from sklearn.tree import DecisionTreeClassifier

    from arboretum import OptimalTreeClassifier

    OptimalTreeClassifier(max_splits=1).fit([[0.0], [1.0]], [0, 1])  # compile outside the timings
    rows, drawn = [], {}
    for pname, (X, y, T, yt) in problems(n, noise).items():
        for family, ks in PLAN:
            for k in ks:
                clf = OptimalTreeClassifier(max_splits=k, split_type=family, time_limit=time_limit)
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    clf.fit(X, y)
                seconds = time.perf_counter() - t0
                rows.append(dict(problem=pname, method=f"optimal {family}", K=k, n_splits=clf.tree_.n_leaves - 1,
                                 n_rules=clf.n_rules_, n_combinations=clf.n_combinations_,
                                 train_error=float(np.mean(clf.predict(X) != y)),
                                 test_error=float(np.mean(clf.predict(T) != yt)),
                                 optimal=clf.optimal_, seconds=round(seconds, 3)))
                print(rows[-1], flush=True)
                drawn[(pname, family)] = clf
            if family == "axis":
                for k in ks:
                    cart = DecisionTreeClassifier(max_leaf_nodes=k + 1, random_state=0).fit(X, y)
                    rows.append(dict(problem=pname, method="CART (sklearn)", K=k, n_splits=cart.tree_.node_count // 2,
                                     n_rules="", n_combinations="",
                                     train_error=float(np.mean(cart.predict(X) != y)),
                                     test_error=float(np.mean(cart.predict(T) != yt)), optimal="", seconds=""))
    return rows, drawn


def figure(drawn: dict, data: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from arboretum.plot import plot_decision_regions

    fig, axes = plt.subplots(2, 3, figsize=(13, 8.2))
    for i, pname in enumerate(("oblique", "curved")):
        X, y, _, _ = data[pname]
        for j, (family, ks) in enumerate(PLAN):
            clf = drawn[(pname, family)]
            ax = plot_decision_regions(clf.tree_, X, y, ax=axes[i, j], resolution=300)
            ax.get_legend().remove()
            ax.set_title(f"{pname}: {family}, K <= {ks[-1]} ({clf.tree_.n_leaves - 1} used), "
                         f"{int(clf.objective_)} errors", fontsize=10)
    fig.suptitle("Optimal trees (He & Little) with axis-parallel, hyperplane and quadratic rules")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=30, help="training points (default 30)")
    parser.add_argument("--noise", type=float, default=0.05, help="fraction of flipped labels (default 0.05)")
    parser.add_argument("--time-limit", type=float, default=300.0, help="seconds per fit (default 300)")
    args = parser.parse_args(argv)
    RESULTS.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    rows, drawn = run(args.n, args.noise, args.time_limit)
    total = time.perf_counter() - t0
    with open(RESULTS / "optimal_families.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    figure(drawn, problems(args.n, args.noise), RESULTS / "optimal_families.png")
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = [
        "# Optimal trees: axis vs hyperplane vs quadratic rules in 2-D (spec-002 B3, the paper's Figure 7)",
        "",
        f"Command: `python benchmarks/optimal_families.py --n {args.n} --noise {args.noise} "
        f"--time-limit {args.time_limit:g}`.",
        f"Run {time.strftime('%Y-%m-%d %H:%M')} on {platform.machine()}, {os.cpu_count()} CPUs (load average "
        f"{load:.1f} at the end: a shared machine, so seconds are indicative; compare rows of this run only); "
        f"python {platform.python_version()}; arboretum git {rev}; {total:.0f} s in all.",
        "",
        f"{args.n} training points uniform in [-1, 1]^2 (rounded to 3 decimals), {args.noise:.0%} of the labels "
        "flipped; test error on 4,000 fresh points of the same distribution. *oblique*: class 1 iff "
        "`x0 + 0.5 x1 > 0.1`; *curved*: class 1 iff `x0^2 + x1^2 < 0.45`. Optimal trees: "
        "`OptimalTreeClassifier(max_splits=K, split_type=...)` (at most K splits; `optimal` says whether the "
        "fit was certified); CART: sklearn with K + 1 leaves. `rules`: candidate rules M; `combinations`: "
        "K-combinations solved (after the pruning of the generic DP; the one-hyperplane and depth-2 paths "
        "count their own units).",
        "",
        "| problem | method | K | splits used | rules | combinations | train error | test error | optimal | seconds |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        fmt = lambda v: f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else str(v)  # noqa: E731
        lines.append(f"| {r['problem']} | {r['method']} | {r['K']} | {r['n_splits']} | {fmt(r['n_rules'])} | "
                     f"{fmt(r['n_combinations'])} | {r['train_error']:.3f} | {r['test_error']:.3f} | "
                     f"{r['optimal']} | {r['seconds']} |")
    lines += ["", "![partitions](optimal_families.png)", "",
              "The figure: the training points on the decision regions of the largest K of each family, with "
              "the borders between leaves."]
    (RESULTS / "optimal_families.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    main()
