"""Cost of one Metropolis-Hastings step of the rule list at the lengths the chains reach (Table 1's slow cells).

For Bank Full, Chess and Mushroom (the paper's Table 4 settings, alpha 1, antecedents of at most 2 literals)
a chain is first run for ``--warm`` steps (seed 0) so that its list has the length the posterior prefers
(75-250 rules, ``density_list_length.md``).  From that list, the incremental kernel of ``--before-rev`` and
the current one run the same ``--steps`` steps (same seed), alternating, ``--repeats`` times: microseconds
per step and whether the chains agree step for step (the same final list and trace of LP_III).  The current
kernel's breakdown: the fraction of proposals accepted, the fraction beyond the ``MAX_FREE_BOXES`` cap
(LP -inf), and the time per step when every proposal is also scored by box subtraction (``mh_chain``
with ``checks``: the cost the quick score saves) with the largest gap between the two scores.

Usage: python benchmarks/density_list_steps.py [--before-rev 3ddc9cb] [--warm 30000] [--steps 1000]
Writes benchmarks/results/density_list_steps.{csv,md}.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np
import pandas as pd

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from density_datasets import load  # noqa: E402

from arboretum import SparseDensityRuleList  # noqa: E402
from arboretum.density import _list_kernels as LK  # noqa: E402
from arboretum.density.rulelist import MAX_LIST_LENGTH, ListModel, mine_antecedents  # noqa: E402

OUT = os.path.join(HERE, "results")
CELLS = [("Bank Full", 5.0, 2.0), ("Chess", 7.0, 2.0), ("Mushroom", 3.0, 1.0)]


def kernel_of(rev: str):
    """The ``_list_kernels`` module of git revision ``rev``, imported inside the package (its own numba cache
    entries: another file name)."""
    root = os.path.dirname(HERE)
    text = subprocess.run(["git", "-C", root, "show", f"{rev}:src/arboretum/density/_list_kernels.py"],
                          check=True, capture_output=True, text=True).stdout
    path = os.path.join(tempfile.mkdtemp(prefix="list-kernels-"), f"_list_kernels_{rev}.py")
    with open(path, "w") as fh:
        fh.write(text)
    name = f"arboretum.density._list_kernels_{rev}"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def setup(name: str, lam: float, eta: float):
    tr, _, cats = load(name)
    est = SparseDensityRuleList(categories=cats, lam=lam, eta=eta, alpha=1.0)
    codes = est._fit_codes_density(tr)
    q = est._q
    ants = mine_antecedents(codes, q, 2, 0.0)
    model = ListModel(ants, q, codes.shape[0], lam, eta, 1.0, False)
    M = len(ants.sizes)
    full = np.array(model.full, dtype=np.uint64)
    args = (ants.bits, np.array(ants.boxes, dtype=np.uint64).reshape(M, len(full)),
            np.asarray(ants.sizes, dtype=np.int64), np.asarray(ants.available, dtype=np.int64), full, int(model.n),
            lam, eta, 1.0, False, True)
    return args, min(M, MAX_LIST_LENGTH)


def chain(kernel, args, cap, d, m, steps, seed, checks=None):
    d = d.copy()
    LK.seed(seed)
    lp = LK.list_log_posterior(d, m, *args)
    best = np.zeros(cap + 2)
    best[1] = -np.inf
    trace, lens = np.empty(steps), np.empty(steps, dtype=np.int64)
    rec = np.zeros((0, cap + 1), dtype=np.int64)
    t0 = time.perf_counter()
    if checks is None:
        m2, _ = kernel(d, m, lp, steps, *args, cap, best, trace, lens, 0, rec)
    else:
        m2, _ = LK.mh_chain(d, m, lp, steps, *args, cap, best, trace, lens, 0, rec, checks)
    return (time.perf_counter() - t0) / steps * 1e6, d[:m2].copy(), trace


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before-rev", default="3ddc9cb")
    ap.add_argument("--warm", type=int, default=30_000)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=2)
    args_ = ap.parse_args()
    old = kernel_of(args_.before_rev)
    rows = []
    for name, lam, eta in CELLS:
        args, cap = setup(name, lam, eta)
        LK.seed(0)
        d = np.zeros(cap, dtype=np.int64)
        m = int(LK.prior_list(args[2], args[3], lam, eta, cap, d))
        w = args_.warm
        t0 = time.perf_counter()
        m, _ = LK.mh_steps_incremental(d, m, LK.list_log_posterior(d, m, *args), w, *args, cap,
                                       np.full(cap + 2, -np.inf), np.empty(w), np.empty(w, dtype=np.int64), 0,
                                       np.zeros((0, cap + 1), dtype=np.int64))
        warm_s = time.perf_counter() - t0
        for kern in (old.mh_steps_incremental, LK.mh_steps_incremental):  # compile / load outside the timings
            chain(kern, args, cap, d, m, 3, 1)
        times = {"before": [], "after": []}
        outs = {}
        for _ in range(args_.repeats):
            for label, kern in (("before", old.mh_steps_incremental), ("after", LK.mh_steps_incremental)):
                per, lst, trace = chain(kern, args, cap, d, m, args_.steps, 1)
                times[label].append(per)
                outs[label] = (lst, trace)
        checks = np.zeros((args_.steps, 2))
        all_full, _, _ = chain(None, args, cap, d, m, args_.steps, 1, checks)
        fin = np.isfinite(checks).all(axis=1)
        trace = outs["after"][1]
        row = {"dataset": name, "lam": lam, "eta": eta, "rules": m, "warm_steps": w, "warm_s": warm_s,
               "before_us": float(np.median(times["before"])), "after_us": float(np.median(times["after"])),
               "same_chain": bool(np.array_equal(outs["before"][0], outs["after"][0])
                                  and np.array_equal(outs["before"][1], outs["after"][1])),
               "accepted": float(np.mean(np.diff(np.concatenate([[np.nan], trace])) != 0)),
               "beyond_cap": float(np.mean(~np.isfinite(checks[:, 1]))),
               "every_step_full_us": all_full,
               "max_quick_gap": float(np.abs(checks[fin, 0] - checks[fin, 1]).max()) if fin.any() else np.nan}
        row["speedup"] = row["before_us"] / row["after_us"]
        rows.append(row)
        print(row, flush=True)
    df = pd.DataFrame(rows)
    df.to_csv(os.path.join(OUT, "density_list_steps.csv"), index=False)
    cmd = " ".join(["python benchmarks/density_list_steps.py"] + sys.argv[1:])
    cols = ["dataset", "lam", "eta", "rules", "before_us", "after_us", "speedup", "same_chain", "accepted",
            "beyond_cap", "every_step_full_us", "max_quick_gap", "warm_s"]
    lines = [f"`{cmd}`  ",
             f"{platform.node()}, 2 cores shared by 3 engineers (loaded: load average {os.getloadavg()[0]:.1f} "
             f"when written, timings noisy; the two kernels alternate in one process), {time.strftime('%Y-%m-%d')}; "
             f"before = {args_.before_rev}; {args_.steps} steps from the list a {args_.warm}-step chain (seed 0) "
             f"reached; median of {args_.repeats}.\n",
             "before_us / after_us: microseconds per MH step; same_chain: identical final list and LP trace; "
             "accepted: fraction of steps that moved; beyond_cap: fraction of proposals whose free boxes exceed "
             "MAX_FREE_BOXES (LP -inf); every_step_full_us: the current kernel when every proposal is also "
             "scored by box subtraction; max_quick_gap: largest |quick score - box subtraction's LP_III|.\n",
             "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        lines.append("| " + " | ".join(f"{r[c]:.3g}" if isinstance(r[c], float) else str(r[c]) for c in cols) + " |")
    with open(os.path.join(OUT, "density_list_steps.md"), "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
