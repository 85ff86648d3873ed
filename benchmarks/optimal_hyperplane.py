#!/usr/bin/env python
"""B1 (issue 20, spec-002 §5): exact depth-1 hyperplanes (exact 0-1-loss linear classification),
``OptimalTreeClassifier(max_splits=1, split_type="hyperplane")`` against ``e01loss`` (PyPI, He &
Little's own exact linear classifier, ``exact_classify01loss_cell``) in the same run.

Every fit runs in its own subprocess, so that peaks of memory are separate: the reported peak is
the worker's maximum resident set (``ru_maxrss``) minus its resident set just before the fit (after
imports and, for ours, the numba warm-up).  e01loss workers get an address-space cap
(``RLIMIT_AS``, ``--cap-gb``, default 4 GB) and a wall-clock timeout (``--timeout``), so that a
failure is recorded (``MemoryError``, ``timeout``, any exception by name) instead of taking the
machine down.  One extra row records e01loss's ``max_margin=False`` path on a small problem.

Data: Haberman (306 x 3) and Caesarian (80 x 5) from :func:`arboretum.datasets.uci.load_uci`
(binary targets), and synthetic data: ``y = [x . beta + noise > 0]`` with standard normal ``x``
(D = 2: N = 100 .. 1000; D = 3: N = 50 .. 300; D = 4 and 5: small N).

Usage::

    python benchmarks/optimal_hyperplane.py            # the full table (about 20-40 minutes)
    python benchmarks/optimal_hyperplane.py --quick    # a few small problems

Writes ``benchmarks/results/optimal_hyperplane{,_quick}.{csv,md,png}``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
sys.path.insert(0, str(ROOT))

#: e01loss's README: 0-1 loss of its exact algorithm on these two datasets.
PUBLISHED = {"haberman": 0.216, "caesarian": 0.225}
FULL = [("haberman", 0, 0), ("caesarian", 0, 0)] + [("synthetic", n, 2) for n in (100, 200, 400, 700, 1000)] + [
    ("synthetic", n, 3) for n in (50, 100, 200, 300)] + [("synthetic", n, 4) for n in (30, 60)] + [
    ("synthetic", n, 5) for n in (20, 40)]
QUICK = [("synthetic", 100, 2), ("synthetic", 50, 3), ("synthetic", 20, 4)]


def load(name: str, n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """The data of one problem, labels in {0, 1}."""
    if name == "synthetic":
        rng = np.random.default_rng(1000 * d + n)
        X = rng.normal(size=(n, d))
        beta = rng.normal(size=d)
        y = (X @ beta + 0.6 * rng.normal(size=n) > 0).astype(int)
        return X, y
    from arboretum.datasets.uci import load_uci

    X, y = load_uci(name, return_X_y=True)
    X = np.asarray(X, dtype=float)
    _, y = np.unique(np.asarray(y), return_inverse=True)
    return X, y.astype(int)


def _rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _current_rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def worker(spec: dict) -> dict:
    """Run one fit in this process; return time, memory and 0-1 loss."""
    X, y = load(spec["name"], spec["n"], spec["d"])
    out: dict = {}
    if spec["solver"] == "ours":
        from arboretum import OptimalTreeClassifier

        OptimalTreeClassifier(max_splits=1, split_type="hyperplane").fit(X[:12], y[:12])  # warm-up / numba cache
        base = _current_rss_mb()
        clf = OptimalTreeClassifier(max_splits=1, split_type="hyperplane", time_limit=spec["time_limit"])
        t0, c0 = time.perf_counter(), time.process_time()
        clf.fit(X, y)
        out["time_s"] = time.perf_counter() - t0
        out["cpu_s"] = time.process_time() - c0
        out["errors"] = int((clf.predict(X) != y).sum())
        out["objective"] = float(clf.objective_)
        out["certified"] = bool(clf.optimal_)
        out["subsets"] = int(clf.n_combinations_)
    else:
        import warnings

        warnings.filterwarnings("ignore")
        from e01loss.exact_classify01loss import exact_classify01loss_cell

        ypm = np.where(y == 1, 1, -1)
        base = _current_rss_mb()
        t0 = time.perf_counter()
        res = exact_classify01loss_cell(X, ypm, max_margin=spec.get("max_margin", True))
        out["time_s"] = time.perf_counter() - t0
        _, loss, w, b = res
        out["objective"] = float(loss)
        pred = np.where(X @ np.ravel(w) + float(np.ravel(b)[0]) > 0, 1, 0) if w is not None else None
        out["errors"] = int(loss) if pred is None else int(min((pred != y).sum(), (pred == y).sum()))
        out["certified"] = True
    out["peak_mb"] = max(0.0, _rss_mb() - base)
    out["maxrss_mb"] = _rss_mb()  # the whole worker process (Python, imports, numba) at its peak
    return out


def run_one(spec: dict, timeout: float, cap_gb: float) -> dict:
    """One fit in a subprocess (capped for e01loss); a failure becomes a status string."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")

    def limit() -> None:
        if spec["solver"] == "e01loss":
            import resource

            cap = int(cap_gb * 2**30)
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, __file__, "--worker", json.dumps(spec)], capture_output=True,
                              text=True, timeout=timeout, env=env, preexec_fn=limit)
    except subprocess.TimeoutExpired:
        return {"status": f"timeout ({timeout:.0f} s)", "time_s": time.perf_counter() - t0}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode == 0 and lines:
        return {"status": "ok", **json.loads(lines[-1])}
    err = proc.stderr.strip().splitlines()
    last = err[-1] if err else f"exit {proc.returncode}"
    if "MemoryError" in proc.stderr or "Unable to allocate" in proc.stderr:
        last = f"MemoryError (address space capped at {cap_gb:g} GB)"
    elif proc.returncode < 0:
        last = f"killed by signal {-proc.returncode}"
    return {"status": last[:120], "time_s": time.perf_counter() - t0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per e01loss fit")
    ap.add_argument("--cap-gb", type=float, default=4.0, help="address-space cap of an e01loss fit")
    ap.add_argument("--time-limit", type=float, default=600.0, help="time_limit of our fits")
    ap.add_argument("--render", action="store_true", help="only rewrite the .md and .png from the .csv")
    ap.add_argument("--only", help="re-run only these problems (comma-separated NAME or synthetic:N:D, or 'finished'"
                    " for the synthetic rows where e01loss finished) and replace their rows in the existing CSV")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))), flush=True)
        return
    import pandas as pd

    if args.render:
        suffix = "_quick" if args.quick else ""
        df = pd.read_csv(RESULTS / f"optimal_hyperplane{suffix}.csv")
        write_markdown(df, suffix, args)
        plot(df, suffix)
        return

    from benchmarks.engine import machine_info

    problems = QUICK if args.quick else FULL
    suffix = "_quick" if args.quick else ""
    old = None
    if args.only:
        old = pd.read_csv(RESULTS / f"optimal_hyperplane{suffix}.csv")
        problems = [p for p in problems if _selected(p, args.only.split(","), old)]
    run = f"{machine_info().get('git', '?')} {time.strftime('%Y-%m-%d %H:%M')}"
    rows = []
    for name, n, d in problems:
        X, y = load(name, n, d)
        for solver in ("ours", "e01loss"):
            spec = {"solver": solver, "name": name, "n": n, "d": d, "time_limit": args.time_limit}
            res = run_one(spec, args.timeout if solver == "e01loss" else args.time_limit + 120, args.cap_gb)
            row = {"dataset": name if name != "synthetic" else f"synthetic D={d}", "N": len(y), "D": X.shape[1],
                   "solver": solver, "run": run, **res}
            if "errors" in res:
                row["loss01"] = res["errors"] / len(y)
            rows.append(row)
            print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
    if old is None:  # e01loss's max_margin=False path, once
        spec = {"solver": "e01loss", "name": "synthetic", "n": 50, "d": 2, "max_margin": False}
        res = run_one(spec, args.timeout, args.cap_gb)
        rows.append({"dataset": "synthetic D=2 (max_margin=False)", "N": 50, "D": 2, "solver": "e01loss", "run": run,
                     **res})
    df = pd.DataFrame(rows)
    if old is not None:  # replace the re-run rows, keep the order of the earlier table
        if "run" not in old:
            old["run"] = "earlier run (see the note)"
        new = {(r.dataset, r.N, r.D, r.solver): r for r in df.itertuples(index=False)}
        df = pd.DataFrame([new.get((r.dataset, r.N, r.D, r.solver), r)._asdict() for r in old.itertuples(index=False)])
    RESULTS.mkdir(exist_ok=True)
    df.to_csv(RESULTS / f"optimal_hyperplane{suffix}.csv", index=False)
    write_markdown(df, suffix, args)
    plot(df, suffix)


def _selected(problem: tuple[str, int, int], names: list[str], old) -> bool:
    name, n, d = problem
    if name in names or f"{name}:{n}:{d}" in names:
        return True
    if "finished" in names and name == "synthetic":
        e = old[(old.dataset == f"synthetic D={d}") & (old.N == n) & (old.solver == "e01loss")]
        return bool(len(e)) and e.iloc[0]["status"] == "ok"
    return False


def write_markdown(df, suffix: str, args) -> None:
    cmd = "python benchmarks/optimal_hyperplane.py" + (" --quick" if args.quick else "") + (
        f" --only {args.only}" if getattr(args, "only", None) else "")
    from benchmarks.engine import machine_info

    try:
        load_avg = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    except OSError:
        load_avg = "n/a"
    lines = [
        "# B1: exact depth-1 hyperplanes (exact 0-1-loss linear classification) vs e01loss",
        "",
        f"Command: `{cmd}` (e01loss: address space capped at {args.cap_gb:g} GB, timeout {args.timeout:.0f} s per fit;"
        f" ours: `time_limit={args.time_limit:g}`).",
        "",
        "Machine: " + ", ".join(f"{k}: {v}" for k, v in machine_info().items())
        + f"; load average at the end {load_avg} (2 cores shared with other jobs: timings are noisy, compare"
        " within a row, and ratios only from the same run).",
        "",
        "Every fit in its own subprocess; time = wall clock of the fit (ours: numba kernels loaded from"
        " the cache by a warm-up fit first); peak = maximum resident set minus the resident set before"
        " the fit (ours: below the resolution, as the process's peak comes from the imports and the warm-up;"
        " its whole-process maximum is given beside it). loss01 = training 0-1 loss (ours: the fitted tree's; e01loss: its returned loss,"
        " re-checked with its returned max-margin plane, and in brackets the loss it returns).",
        "",
    ]
    piv = []
    for (ds, n, d), g in df[df["dataset"].str.contains("max_margin") == False].groupby(  # noqa: E712
            ["dataset", "N", "D"], sort=False):
        o = g[g.solver == "ours"].iloc[0]
        e = g[g.solver == "e01loss"].iloc[0]
        ratio = e["time_s"] / o["time_s"] if e["status"] == "ok" and o["status"] == "ok" else float("nan")
        pub = PUBLISHED.get(ds)
        piv.append({
            "dataset": ds, "N": n, "D": d,
            "ours time (s)": _sec(o["time_s"]) if o["status"] == "ok" else o["status"],
            "ours CPU (s)": _sec(o["cpu_s"]) if o["status"] == "ok" and np.isfinite(o.get("cpu_s", np.nan)) else "-",
            "ours peak (MB)": _mb(o, "peak_mb"),
            "ours process max RSS (MB)": _mb(o, "maxrss_mb"),
            "ours loss01": f"{o.get('loss01', float('nan')):.4f}" + ("" if o.get("certified", True) else " (not certified)"),
            "e01loss time (s)": _sec(e["time_s"]) if e["status"] == "ok" else "-",
            "e01loss peak (MB)": _mb(e, "peak_mb"),
            "e01loss loss01 (claimed)": f"{e['loss01']:.4f} ({e['objective'] / n:.4f})" if e["status"] == "ok" else "-",
            "e01loss status": e["status"],
            "speed-up": f"{ratio:.1f}x" if np.isfinite(ratio) else "-",
            "published": f"{pub:.3f}" if pub else "",
        })
    import pandas as pd

    table = pd.DataFrame(piv)
    cols = list(table.columns)
    lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(v) for v in r) + " |" for r in table.itertuples(index=False)] + [""]
    if "run" in df and df["run"].nunique() > 1:
        lines += ["Rows from several runs (commit, date; ratios are within a row, whose two fits ran one after the"
                  " other): " + "; ".join(f"{r}: {', '.join(sorted(set(g.dataset + ' N=' + g.N.astype(str))))}"
                                          for r, g in df.groupby("run", sort=False)) + ".", ""]
    mm = df[df["dataset"].str.contains("max_margin")]
    if len(mm):
        lines += [f"e01loss with `max_margin=False` (N = 50, D = 2): {mm.iloc[0]['status']}.", ""]
    (RESULTS / f"optimal_hyperplane{suffix}.md").write_text("\n".join(lines))


def _sec(v: float) -> str:
    return f"{v:.2f}" if v >= 1 else f"{v:.3f}"


def _mb(row, key: str) -> str:
    v = row.get(key, float("nan"))
    return "-" if row["status"] != "ok" or not np.isfinite(v) else f"{v:.0f}"


def plot(df, suffix: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    syn = df[df["dataset"].str.startswith("synthetic D=") & (df["status"] == "ok")
             & ~df["dataset"].str.contains("max_margin")]
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for (ds, solver), g in syn.groupby(["dataset", "solver"]):
        ax.plot(g["N"], g["time_s"], marker="o" if solver == "ours" else "s",
                linestyle="-" if solver == "ours" else "--", label=f"{solver}, {ds[10:]}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("N")
    ax.set_ylabel("fit time (s)")
    ax.set_title("Exact 0-1 loss linear classification (depth-1 hyperplane)")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(RESULTS / f"optimal_hyperplane{suffix}.png", dpi=120)


if __name__ == "__main__":
    main()
