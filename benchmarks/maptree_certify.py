#!/usr/bin/env python
"""How many CP4IM datasets MAPTree certifies within a time limit (issue 3: 10 minutes each).

Each dataset runs in a fresh subprocess (``--n-jobs`` of them at a time) with
``MAPTreeClassifier(time_limit=T, memory_limit=M)`` on the full data and the
default posterior (alpha=0.95, beta=0.5, rho=(2.5, 2.5)).  The table reports
whether the optimum was certified, the final gap between the incumbent and
the bound (nats), expansions, stored OR nodes, the search graph's peak size,
the process's peak RSS and the wall time.

Usage::

    python benchmarks/maptree_certify.py                          # 16 datasets, 600 s, 16 GiB
    python benchmarks/maptree_certify.py --datasets lymph --time-limit 120 --memory-limit 4096
    python benchmarks/maptree_certify.py --resume                 # only the datasets not measured yet

Every finished dataset is appended to ``<out>.jsonl`` (with the git commit it
measured), so a run can be split over several invocations: ``--resume`` skips
the datasets already there, and the table always covers every row of the log.
Without ``--resume`` the log is started afresh.
"""

from __future__ import annotations

import argparse
import csv
import json
import resource
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.engine import machine_info  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
CP4IM = ("anneal", "audiology", "australian-credit", "german-credit", "heart-cleveland", "hepatitis",
         "hypothyroid", "kr-vs-kp", "lymph", "mushroom", "primary-tumor", "soybean", "splice-1",
         "tic-tac-toe", "vote", "zoo-1")


def worker(name: str, time_limit: float, memory_limit: float) -> None:
    import warnings

    from arboretum import LimitWarning, MAPTreeClassifier, load_dataset

    warnings.simplefilter("ignore", LimitWarning)  # the stop reason is recorded in the results

    X, y = load_dataset(name, return_X_y=True)
    # Load the numba kernels first, on 50 rows of both classes (the files are sorted by class).
    warm = np.r_[np.flatnonzero(y == y[0])[:25], np.flatnonzero(y != y[0])[:25]]
    MAPTreeClassifier(max_expansions=100).fit(X[warm], y[warm])
    clf = MAPTreeClassifier(time_limit=time_limit, memory_limit=memory_limit)
    t0 = time.perf_counter()
    clf.fit(X, y)
    wall = time.perf_counter() - t0
    print(json.dumps({
        "dataset": name, "n": int(X.shape[0]), "d": int(X.shape[1]), "certified": bool(clf.optimal_),
        "log_posterior": clf.log_posterior_, "bound": clf.log_posterior_bound_, "gap": clf.gap_,
        "stop_reason": clf.stop_reason_, "time_s": wall, "expansions": int(clf.n_expansions_), "probes": int(clf.n_probes_),
        "or_nodes": int(clf.n_or_nodes_), "and_nodes": int(clf.n_and_nodes_),
        "graph_peak_mib": clf.peak_memory_ / 2**20,
        "rss_peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "tree": clf.search_tree_.to_paren(),
    }))


def _limit(row: dict) -> str:
    """A row's memory limit and concurrency (rows logged before they were recorded: unknown)."""
    if "memory_limit_mib" not in row:
        return "?"
    return f"{row['memory_limit_mib']:.0f}, {row['runs_at_once']} at once"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--datasets", nargs="+", default=list(CP4IM))
    p.add_argument("--time-limit", type=float, default=600.0, help="seconds per dataset (default 600)")
    p.add_argument("--memory-limit", type=float, default=16384.0, help="MiB of search graph (default 16384)")
    p.add_argument("--n-jobs", type=int, default=1, help="datasets run at once (default 1)")
    p.add_argument("--out", default=str(RESULTS / "maptree_certify"))
    p.add_argument("--resume", action="store_true",
                   help="keep <out>.jsonl and run only the datasets not in it yet")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.worker:
        worker(a.worker, a.time_limit, a.memory_limit)
        return 0
    out = Path(a.out)
    log = out.with_suffix(".jsonl")
    meta = machine_info()
    done: dict[str, dict] = {}
    if a.resume and log.exists():
        for line in log.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                done[r["dataset"]] = r
    else:
        log.write_text("")
    todo = [d for d in a.datasets if d not in done]
    print(f"{len(todo)} dataset(s) to run, {len(done)} already in {log.name}", file=sys.stderr, flush=True)

    def run_one(name: str) -> dict:
        cmd = [sys.executable, __file__, "--worker", name, "--time-limit", repr(a.time_limit),
               "--memory-limit", repr(a.memory_limit)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=2 * a.time_limit + 300)
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
        if proc.returncode != 0 or not lines:
            row = {"dataset": name, "error": (proc.stderr or "").strip().splitlines()[-1:]}
            print(f"{name}: failed: {row['error']}", file=sys.stderr, flush=True)
            return row
        r = json.loads(lines[-1])
        r["git"] = meta["git"]
        r["memory_limit_mib"] = a.memory_limit
        r["runs_at_once"] = a.n_jobs
        with open(log, "a") as fh:
            fh.write(json.dumps(r) + "\n")
        print(f"{name}: certified={r['certified']} gap={r['gap']:.3f} time={r['time_s']:.1f}s "
              f"stop={r['stop_reason']} graph={r['graph_peak_mib']:.0f} MiB", file=sys.stderr, flush=True)
        return r

    # Each dataset in its own process; --n-jobs of them at once (each search is single-threaded,
    # so on a 2-core machine two run side by side; give each half the memory).
    with ThreadPoolExecutor(max_workers=a.n_jobs) as pool:
        fresh = list(pool.map(run_one, todo))
    by_name = done | {r["dataset"]: r for r in fresh}
    order = [d for d in CP4IM if d in by_name] + sorted(d for d in by_name if d not in CP4IM)
    rows = [by_name[d] for d in order]
    keys = [k for k in rows[0]] if rows else []
    for r in rows:
        keys += [k for k in r if k not in keys]
    with open(out.with_suffix(".csv"), "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    ok = [r for r in rows if "certified" in r]
    commits = sorted({r.get("git", "?") for r in ok})
    n_cert = sum(r["certified"] for r in ok)
    lines = [
        f"# MAPTree certificates within {a.time_limit:g} s per dataset", "",
        f"Run {meta['date']} on {meta['machine']}; python {meta['python']}, numpy {meta['numpy']}, "
        f"arboretum git {', '.join(commits)} (the rows' sources; `{log.name}` gives each row's). "
        f"A fresh process per dataset, {a.n_jobs} at a time in the last invocation"
        + (f" ({len(done)} of the {len(rows)} rows come from earlier invocations, `--resume`)." if done else "."),
        f"Command: `python benchmarks/maptree_certify.py --time-limit {a.time_limit:g} "
        f"--memory-limit {a.memory_limit:g} --n-jobs {a.n_jobs}`. Prior alpha=0.95, beta=0.5, rho=(2.5, 2.5); full data.", "",
        "`gap` = bound minus incumbent log posterior (nats; 0 when certified). `graph` = peak size of the "
        "search graph's arrays; `RSS` = the process's peak resident memory. `probes` = bound "
        "probes of nodes not expanded (`_kernels._probe`, `_probe2`). `limit` = the row's memory limit "
        "for the search graph (MiB) and how many datasets ran at once in its invocation.", "",
        "| dataset | n | features | certified | log posterior | bound | gap | stop | time (s) | expansions | "
        "probes | OR nodes | graph (MiB) | RSS (MiB) | limit |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "certified" not in r:
            lines.append(f"| {r['dataset']} | failed: {r['error']} |")
            continue
        lines.append(
            f"| {r['dataset']} | {r['n']} | {r['d']} | {'yes' if r['certified'] else 'no'} | "
            f"{r['log_posterior']:.4f} | {r['bound']:.4f} | {r['gap']:.3f} | {r['stop_reason']} | "
            f"{r['time_s']:.1f} | {r['expansions']:,} | {r.get('probes', 0):,} | {r['or_nodes']:,} | {r['graph_peak_mib']:.0f} | "
            f"{r['rss_peak_mib']:.0f} | {_limit(r)} |")
    lines += ["", f"Certified: {n_cert} of {len(rows)} datasets."]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
