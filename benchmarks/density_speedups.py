"""Before/after timings of the density models' slow Table 1 cells, measured in one run, alternating.

The cells of ``benchmarks/results/density_table1.md`` that were above the paper's "best" time: the trees
on Balance, Car, COMPAS (the exact solvers) and Chess (annealing), and the rule lists on Bank Full, Chess, Mushroom (the
Metropolis-Hastings step).  Timings on this shared 2-core machine move by 2-4x with the load, so both
versions run here side by side (each from its own ``src``, its own numba cache, warmed up first), and the
answers must agree: the same log posterior for the trees (``optimal_`` shown), the same list for the
chains (a fixed ``n_iter``, one chain, seed 0).

Usage: python benchmarks/density_speedups.py [--before-rev a2b774f] [--repeats 2] [--cells leaf,branch,list]
[--out density_speedups]
Writes benchmarks/results/<out>.{csv,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import pandas as pd

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "results")
CELLS = [("leaf", "Balance", {"lam": 5}), ("leaf", "Car", {"lam": 8}), ("leaf", "COMPAS", {"lam": 8}),
         ("leaf", "Chess", {"lam": 5}), ("branch", "Balance", {"lam": 3}), ("branch", "Car", {"lam": 3}),
         ("branch", "Chess", {"lam": 3}),
         ("list", "Bank Full", {"lam": 5, "eta": 2}), ("list", "Chess", {"lam": 7, "eta": 2}),
         ("list", "Mushroom", {"lam": 3, "eta": 1})]
LIST_STEPS = 4000

WORKER = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, {bench!r})
from density_datasets import load
import arboretum
from arboretum import BranchSparseDensityTree, LeafSparseDensityTree, SparseDensityRuleList
LeafSparseDensityTree().fit(load("Titanic")[0]); SparseDensityRuleList(n_iter=10).fit(load("Titanic")[0])
method, name, params = json.loads(sys.argv[1])
tr, va, cats = load(name)
if method == "list":
    est = SparseDensityRuleList(categories=cats, n_iter={steps}, n_chains=1, time_limit=None, random_state=0,
                                **params)
else:
    cls = LeafSparseDensityTree if method == "leaf" else BranchSparseDensityTree
    est = cls(alpha=2.0, categories=cats, density="posterior_mean", random_state=0, **params)
t0 = time.perf_counter()
est.fit(tr)
print(json.dumps({{"seconds": time.perf_counter() - t0, "log_posterior": est.log_posterior_,
                  "leaves": est.n_leaves_, "optimal": getattr(est, "optimal_", None),
                  "src": arboretum.__file__}}))
"""


def run(src: str, cache: str, cell: tuple) -> dict:
    env = {**os.environ, "PYTHONPATH": src, "NUMBA_CACHE_DIR": cache}
    code = WORKER.format(bench=HERE, steps=LIST_STEPS)
    out = subprocess.run([sys.executable, "-c", code, json.dumps(cell)], env=env, capture_output=True, text=True,
                         check=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["src"].startswith(src), (res["src"], src)
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before-rev", default="a2b774f")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--cells", default=None, help="methods to run, e.g. leaf,branch (default: all)")
    ap.add_argument("--out", default="density_speedups", help="results file name (.csv/.md) in benchmarks/results")
    args = ap.parse_args()
    cells = [c for c in CELLS if args.cells is None or c[0] in args.cells.split(",")]
    root = os.path.dirname(HERE)
    tmp = tempfile.mkdtemp(prefix="density-before-")
    subprocess.run(["git", "-C", root, "worktree", "add", "--detach", tmp, args.before_rev], check=True,
                   capture_output=True)
    cache = os.environ.get("NUMBA_CACHE_DIR", "/tmp/numba-density")  # each version its own numba cache
    versions = {"before": (os.path.join(tmp, "src"), cache + "-before"), "after": (os.path.join(root, "src"), cache)}
    rows = []
    try:
        for cell in cells:
            for r in range(args.repeats):
                for label, (src, cache) in versions.items():
                    res = run(src, cache, cell)
                    rows.append({"method": cell[0], "dataset": cell[1], "params": str(cell[2]), "version": label,
                                 "repeat": r, **{k: v for k, v in res.items() if k != "src"}})
                    print(rows[-1], flush=True)
    finally:
        subprocess.run(["git", "-C", root, "worktree", "remove", "--force", tmp], capture_output=True)
    df = pd.DataFrame(rows)
    df.to_csv(os.path.join(OUT, args.out + ".csv"), index=False)
    g = df.groupby(["method", "dataset", "params", "version"], sort=False).agg(
        seconds=("seconds", "median"), log_posterior=("log_posterior", "first"), leaves=("leaves", "first"),
        optimal=("optimal", "first")).unstack("version")
    cmd = " ".join(["python benchmarks/density_speedups.py"] + sys.argv[1:])
    lines = [f"`{cmd}`  ",
             f"{platform.node()}, 2 cores shared by 4 engineers (load average {os.getloadavg()[0]:.1f} when "
             f"written), {time.strftime('%Y-%m-%d')}; median of {args.repeats} alternating runs per version; "
             f"trees: one fit (solver='auto'); lists: {LIST_STEPS} MH steps, one chain, no time limit.\n",
             "| method | dataset | params | before s | after s | speed-up | same answer | leaves | optimal before/after |",
             "|---|---|---|---|---|---|---|---|---|"]
    for (method, dataset, params), row in g.iterrows():
        b, a = row[("seconds", "before")], row[("seconds", "after")]
        same = abs(row[("log_posterior", "before")] - row[("log_posterior", "after")]) <= 1e-6 * max(
            1.0, abs(row[("log_posterior", "after")]))
        lines.append(f"| {method} | {dataset} | {params} | {b:.2f} | {a:.2f} | {b / a:.1f}x | {same} | "
                     f"{int(row[('leaves', 'after')])} | {row[('optimal', 'before')]}/{row[('optimal', 'after')]} |")
    with open(os.path.join(OUT, args.out + ".md"), "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
