"""HIV, CPT linear+ES by scaffold: validation and test AUC of the grown tree at every depth, one seed a run.

The method is ``polytope_real.py``'s "CPT linear+ES by scaffold" (``init="linear"``,
``early_stopping=0.2``, scaffolds as ``groups``, depth and greedy/refined tree chosen on the
scaffold validation rows); this script also scores every depth's truncated greedy tree on the
validation and the test rows, to see whether the depth choice or the tree itself limits the AUC.

Usage::

    python benchmarks/polytope_hiv_depths.py SEED        # appends a line to results/polytope_hiv_depths.jsonl
    python benchmarks/polytope_hiv_depths.py --summary   # writes results/polytope_hiv_depths.md
    python benchmarks/polytope_hiv_depths.py --max-depth 7 SEED   # deeper trees: results/polytope_hiv_depths_d7.*
    python benchmarks/polytope_hiv_depths.py --max-depth 7 --summary

One fit takes about 10 minutes of one core here.  Each line records the arithmetic it ran under
(``polytope_common.arithmetic``: processor, torch's vector instruction set, ``MKL_CBWR``); the summary
gives the mean per arithmetic and over all lines.  To see how much the result owes to this processor's
rounding, run the seeds again as a processor without AVX-512 would round::

    MKL_CBWR=AVX2 ATEN_CPU_CAPABILITY=avx2 python benchmarks/polytope_hiv_depths.py SEED
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "polytope_hiv_depths"
MAX_DEPTH = 5


def run(seed: int) -> dict:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import polytope_common as C
    from sklearn.metrics import roc_auc_score

    Xtr, ytr, Xva, yva, Xte, yte = C.molecules("hiv", with_valid=True)
    groups = C.molecule_train_groups("hiv")
    m = C.WithValidation(C.cpt(MAX_DEPTH, seed, use_prior=False, scaling="global", init="linear", early_stopping=0.2),
                         Xva, yva, groups)
    m.test_rows = (Xte, yte)  # every depth's tree scored on them (``by_depth_``); nothing chosen on them
    t = time.perf_counter()
    m.fit(Xtr, ytr)
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    return {**m.by_depth_, "seed": seed, "chosen": int(m.best_depth_), "refined": bool(m.refined_),
            "test_auc": float(roc_auc_score(yte, m.predict_proba(Xte)[:, 1])), "fit_s": time.perf_counter() - t,
            "git": rev.strip(), "arithmetic": C.arithmetic()}


def summary() -> None:
    rows = [json.loads(line) for line in RESULTS.with_suffix(".jsonl").read_text().splitlines() if line.strip()]
    for r in rows:
        r.setdefault("arithmetic", "not recorded")
    kinds = list(dict.fromkeys(r["arithmetic"] for r in rows))
    rows.sort(key=lambda r: (kinds.index(r["arithmetic"]), r["seed"]))

    def mean_se(values: list[float], unit: str = "seed") -> str:
        a = np.asarray(values)
        se = a.std(ddof=1) / np.sqrt(a.size) if a.size > 1 else float("nan")
        return f"**{a.mean():.4f} ± {se:.4f}** (mean ± s.e., {a.size} {unit}{'s' if a.size != 1 else ''})"

    auc = [r["test_auc"] for r in rows]
    option = "" if MAX_DEPTH == 5 else f"--max-depth {MAX_DEPTH} "
    lines = [f"# HIV: CPT linear+ES by scaffold (max_depth={MAX_DEPTH}), every depth's validation and test AUC", "",
             f"Command: `python benchmarks/polytope_hiv_depths.py {option}SEED` for each seed, then "
             f"`{option}--summary`. "
             "Depth d is the greedy tree grown to depth d; the chosen one (*) is the best on validation.", "",
             "Test AUC of the chosen trees (paper 73.1 ± 1.4):", "",
             *[f"- {kind}: {mean_se([r['test_auc'] for r in rows if r['arithmetic'] == kind])}" for kind in kinds],
             *([f"- all: {mean_se(auc, 'fit')}"] if len(kinds) > 1 else []), "",
             f"| arithmetic | seed | git | chosen depth (leaves) | test AUC | validation AUC by depth 1..{MAX_DEPTH} | "
             f"test AUC by depth 1..{MAX_DEPTH} | fit s |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        star = lambda vals: " ".join(f"{v:.3f}{'*' if d == r['chosen'] else ''}"  # noqa: E731
                                     for d, v in enumerate(vals) if d > 0)
        lines.append(f"| {kinds.index(r['arithmetic']) + 1} | {r['seed']} | {r.get('git', '')} | "
                     f"{r['chosen']} ({r['leaves'][r['chosen']]}) | "
                     f"{r['test_auc']:.4f} | {star(r['val'])} | {star(r['test'])} | {r['fit_s']:.0f} |")
    lines += ["", "Arithmetic: " + "; ".join(f"{i + 1}: {kind}" for i, kind in enumerate(kinds)) + "."]
    RESULTS.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--max-depth"]:
        MAX_DEPTH = int(sys.argv[2])
        RESULTS = RESULTS.with_name(f"{RESULTS.name}_d{MAX_DEPTH}")
        del sys.argv[1:3]
    if sys.argv[1:] == ["--summary"]:
        summary()
    else:
        result = run(int(sys.argv[1]))
        with open(RESULTS.with_suffix(".jsonl"), "a") as f:
            f.write(json.dumps(result) + "\n")
        print(json.dumps(result))
