"""Does ``time_limit`` hold for the whole fit of every density model on large data (issue 22)?

200,000 rows x 6 categorical columns of 4 labels (uniform), ``time_limit`` 0.5 and 2 s; the rule of issue 19:
wall clock within ``1.1 * limit + 0.5`` s, numba compilation excluded (every model is warmed on 300 rows
first).  Each source tree (``--src``: this checkout's ``src`` and, for a before/after comparison, an
exported older one) runs in its own process, side by side in one run.

    PYTHONPATH=src python benchmarks/density_time_limits.py --src before=/tmp/base/src --src after=src
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import json, sys, time, warnings
import numpy as np, pandas as pd
import arboretum as ab
warnings.simplefilter("ignore")
rng = np.random.default_rng(0)
X = pd.DataFrame({c: rng.choice(list("abcd"), 200000) for c in "pqrstu"})
makers = {
    "LeafSparseDensityTree": lambda t: ab.LeafSparseDensityTree(time_limit=t, random_state=0),
    "BranchSparseDensityTree": lambda t: ab.BranchSparseDensityTree(time_limit=t, random_state=0),
    "SparseDensityRuleList": lambda t: ab.SparseDensityRuleList(time_limit=t, random_state=0),
    "HistogramDensity": lambda t: ab.HistogramDensity(time_limit=t),
    "CategoricalDET": lambda t: ab.CategoricalDET(time_limit=t, random_state=0),
    "DensityCV": lambda t: ab.DensityCV(time_limit=t),
}
for name, make in makers.items():
    make(1.0).fit(X[:300])
    for limit in (0.5, 2.0):
        t0 = time.perf_counter()
        est = make(limit).fit(X)
        wall = time.perf_counter() - t0
        ok = bool(np.all(np.isfinite(est.score_samples(X[:20]))))
        print(json.dumps({"model": name, "limit": limit, "wall": round(wall, 2), "stop": est.stop_reason_,
                          "leaves": int(est.n_leaves_), "predicts": ok}), flush=True)
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", action="append", required=True, help="label=path of a src directory")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "density_time_limits"))
    args = ap.parse_args()
    rows = []
    for item in args.src:
        label, path = item.split("=", 1)
        env = dict(os.environ, PYTHONPATH=str(Path(path).resolve()))
        res = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True)
        for line in res.stdout.splitlines():
            rows.append({"src": label, **json.loads(line)})
            print(label, line, flush=True)
    out = Path(args.out)
    with open(out.with_suffix(".csv"), "w") as f:
        f.write("src,model,limit,wall,bound,within,stop,leaves,predicts\n")
        for r in rows:
            bound = 1.1 * r["limit"] + 0.5
            f.write(f"{r['src']},{r['model']},{r['limit']},{r['wall']},{bound:.2f},{r['wall'] <= bound},"
                    f"{r['stop']},{r['leaves']},{r['predicts']}\n")
    labels = [s.split("=", 1)[0] for s in args.src]
    lines = ["# Density models: time_limit on 200,000 rows x 6 columns of 4 labels", "",
             "```", "PYTHONPATH=src python benchmarks/density_time_limits.py " + " ".join(f"--src {s}" for s in args.src),
             "```", "", "Machine: 2 cores shared by 4 engineers (loaded; timings noisy). Wall seconds of `fit` "
             "(compilation excluded); the issue-19 bound is `1.1 * limit + 0.5`.", "",
             "| model | limit | bound | " + " | ".join(f"{lab} wall (stop)" for lab in labels) + " |",
             "|---|---|---|" + "---|" * len(labels)]
    by = {(r["src"], r["model"], r["limit"]): r for r in rows}
    for model in dict.fromkeys(r["model"] for r in rows):
        for limit in (0.5, 2.0):
            cells = []
            for lab in labels:
                r = by.get((lab, model, limit))
                mark = "" if r is None or r["wall"] <= 1.1 * limit + 0.5 else " **over**"
                cells.append("-" if r is None else f"{r['wall']:.2f} ({r['stop']}){mark}")
            lines.append(f"| {model} | {limit} | {1.1 * limit + 0.5:.2f} | " + " | ".join(cells) + " |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
