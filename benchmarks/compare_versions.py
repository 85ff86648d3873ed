#!/usr/bin/env python
"""Compare the speed of two versions of arboretum on the same machine, in one run.

Issue 18 asks that nothing gets slower: MAPTree's time to certificate on
hepatitis, primary-tumor and vote (the settings of ``maptree_reference.py``)
and PCFG's full-data fit times (the settings of ``pcfg_tables.py``) must stay
within 10% of the earlier version.  Timings taken on different days on a
shared machine are not comparable, so this script measures both versions in
the same run, alternating between them.

Usage::

    # before = a git worktree of 5f4f938 made under /tmp, after = this checkout's src
    python benchmarks/compare_versions.py --before-rev 5f4f938
    python benchmarks/compare_versions.py --before /path/to/old/src --after /path/to/new/src --repeats 5
    python benchmarks/compare_versions.py --quick        # hepatitis + iris, caesarian; 1 repeat
    python benchmarks/compare_versions.py --maptree-datasets vote --pcfg-datasets xor --repeats 3

``--before`` and ``--after`` are ``src`` directories (the folder holding the
``arboretum`` package).  Without ``--before`` the script makes a detached
``git worktree`` of ``--before-rev`` (default 5f4f938) under /tmp and removes it
at the end (``--keep-tmp`` keeps it and the other temporary files).

How it measures
---------------
* Each version runs from a frozen copy of its ``arboretum`` package, with
  ``PYTHONPATH`` pointing at that copy (the worker checks that this is the
  package it imported) and its own ``NUMBA_CACHE_DIR``.
* Data: each version loads every data set with its own loaders; the parent
  checks that both versions produce byte-identical ``X`` and ``y`` and then
  gives every measured worker the same ``.npz`` file.
* Warm-up: one worker per version first fills its numba cache (the cold
  compile times are reported, not compared).  Every measured worker then does
  the small warm-up fit of the benchmark it copies before the timed fit.
* Every measurement is a fresh subprocess.  Runs alternate: for repeat r and
  task i, "before" goes first when r + i is odd, "after" first otherwise.
* MAPTree: ``MAPTreeClassifier(alpha, beta, rho, time_limit=600,
  max_expansions=None)`` with alpha/beta/rho the defaults of
  ``maptree_reference.py`` (0.95, 0.5, (2.5, 2.5)), after its warm-up fit
  (``maptree_reference._warmup_data``).  Time to certificate =
  ``search_time_``; the ``fit`` wall time is reported too.
* PCFG: the full-data fit of ``pcfg_tables.py``'s performance section (each
  data set at the paper's bucketing, hidden XOR with 256 rows; ln phi = 2,
  Dirichlet 1), after its 4-row warm-up fit.  The constructor is translated per
  version: old ``PCFGTreeClassifier(log_phi=2, alpha=1, max_values=k,
  binning=s)``, new ``PCFGTreeClassifier(log_phi=2, rho=1,
  binarizer=Binarizer(k - 1, s))``.  Both versions must build the same grammar
  (same codes per feature, nodes, split edges and log evidence); the table says
  so.
* Per version: median and min over repeats; after/before ratio of the medians
  (and of the mins); "within 10%" = median ratio <= 1.10.  The numbers recorded
  in ``results/maptree_reference.csv`` and ``results/pcfg_tables_perf.csv``
  are quoted as a third column (other day, other sources: for context only).

Outputs ``benchmarks/results/compare_versions.{md,csv}`` (summary) and
``compare_versions_runs.csv`` (every run); ``--quick`` writes
``compare_versions_quick*`` instead.  The Markdown is printed at the end.  A
worker that fails has its command and the tail of its output printed to
stderr at once and listed in the Markdown; the exit status is then 1.

Worker mode (internal; one ``@@RESULT {json}`` line on stdout)::

    python benchmarks/compare_versions.py --worker data|warm|maptree|pcfg --expect-src DIR ...
"""

from __future__ import annotations

import argparse
import csv
import datetime as _dt
import hashlib
import inspect
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS = HERE / "results"
sys.path.insert(0, str(HERE))

import maptree_reference as mref  # noqa: E402  (stdlib only at import time)
import pcfg_tables as ptab  # noqa: E402  (numpy only at import time)

DEFAULT_BEFORE_REV = "5f4f938"
MAPTREE_DATASETS = ["hepatitis", "primary-tumor", "vote"]
PCFG_DATASETS = list(ptab.DATASETS)  # the rows of results/pcfg_tables_perf.csv
QUICK_MAPTREE_DATASETS = ["hepatitis"]
QUICK_PCFG_DATASETS = ["iris", "caesarian"]

# MAPTree: the settings of maptree_reference.py (its defaults; 600 s is its full-run time limit)
_MREF_DEFAULTS = mref.build_parser().parse_args([])
MAPTREE_ALPHA = _MREF_DEFAULTS.alpha
MAPTREE_BETA = _MREF_DEFAULTS.beta
MAPTREE_RHO = tuple(_MREF_DEFAULTS.rho)
MAPTREE_TIME_LIMIT = 600.0

# PCFG: the settings of pcfg_tables.py's full-data fits (PCFGTreeClassifier defaults: ln phi = 2,
# Dirichlet 1; hidden XOR with --perf-xor-n 256 rows)
PCFG_LOG_PHI = 2.0
PCFG_DIRICHLET = 1.0
PCFG_XOR_N = 256

WITHIN = 1.10  # "within 10%": after/before ratio of the medians at most this
RESULT_MARK = "@@RESULT "
VERSIONS = ("before", "after")

RUN_FIELDS = [
    "task", "dataset", "version", "repeat", "order", "status", "error",
    "time_s", "fit_wall_s", "n", "d", "certified", "stop_reason", "log_posterior", "expansions",
    "or_nodes", "and_nodes", "tree", "n_values", "n_nodes", "n_edges", "build_s", "log_evidence",
    "map_nodes", "rss_peak_mb", "warmup_s", "worker_wall_s", "loadavg_1m_before", "started_at",
    "constructor", "error_tail",
]


def _log(msg: str) -> None:
    print(f"[{_dt.datetime.now().strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# workers: run with PYTHONPATH=<one version's src>; print one "@@RESULT {json}" line
# ---------------------------------------------------------------------------------------------
def _emit(obj: dict) -> None:
    sys.stdout.write(RESULT_MARK + json.dumps(obj) + "\n")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # interpreter shutdown is not part of any measurement


def _import_checked(expect_src: str):
    """Import arboretum and make sure it is the copy under ``expect_src``; silence LimitWarning."""
    import warnings

    import arboretum

    path = Path(arboretum.__file__).resolve()
    if Path(expect_src).resolve() not in path.parents:
        raise SystemExit(f"imported arboretum from {path}, expected it under {expect_src} (PYTHONPATH problem)")
    try:
        from arboretum import LimitWarning  # new versions only; the stop reason is recorded anyway

        warnings.simplefilter("ignore", LimitWarning)
    except ImportError:
        pass
    return arboretum


def _array_digest(*arrays) -> str:
    import numpy as np

    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def _load_npz(path: str):
    import numpy as np

    with np.load(path) as d:
        return np.asarray(d["X"]), np.asarray(d["y"])


def make_pcfg(name: str):
    """The PCFG of pcfg_tables.py's full-data fit of ``name`` in this version's API; (estimator, text)."""
    from arboretum.pcfg import PCFGTreeClassifier

    k = ptab.MAX_VALUES[name]
    strategy = ptab.BINNING.get(name, "uniform")
    if "binarizer" in inspect.signature(PCFGTreeClassifier).parameters:
        from arboretum import Binarizer

        clf = PCFGTreeClassifier(log_phi=PCFG_LOG_PHI, rho=PCFG_DIRICHLET,
                                 binarizer=Binarizer(n_thresholds=k - 1, strategy=strategy))
        text = (f"PCFGTreeClassifier(log_phi={PCFG_LOG_PHI:g}, rho={PCFG_DIRICHLET:g}, "
                f"binarizer=Binarizer(n_thresholds={k - 1}, strategy={strategy!r}))")
    else:
        clf = PCFGTreeClassifier(log_phi=PCFG_LOG_PHI, alpha=PCFG_DIRICHLET, max_values=k, binning=strategy)
        text = (f"PCFGTreeClassifier(log_phi={PCFG_LOG_PHI:g}, alpha={PCFG_DIRICHLET:g}, "
                f"max_values={k}, binning={strategy!r})")
    return clf, text


def worker_data(a) -> None:
    """Load every data set with this version's loaders, save them as .npz, report their digests."""
    import numpy as np

    arboretum = _import_checked(a.expect_src)
    out_dir = Path(a.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    result = {}
    for key in a.keys:
        task, name = key.split(":", 1)
        if task == "maptree":
            X, y = arboretum.load_dataset(name, return_X_y=True)  # what maptree_reference._load_xy does
        else:
            X, y = ptab.load(name, PCFG_XOR_N)  # pcfg_tables' loader (hidden XOR seed 0)
        X, y = np.asarray(X), np.asarray(y)
        path = out_dir / f"{task}-{name}.npz"
        np.savez(path, X=X, y=y)
        result[key] = {"path": str(path), "digest": _array_digest(X, y), "n": int(X.shape[0]),
                       "d": int(X.shape[1]), "X_dtype": X.dtype.str, "y_dtype": y.dtype.str}
    _emit({"data": result})


def worker_warm(a) -> None:
    """Fill this version's numba cache: MAPTree fits on the warm-up data, PCFG fits on iris.

    The first fit of each is the cold compile; its time is reported, not compared.
    """
    import numba
    import numpy

    arboretum = _import_checked(a.expect_src)
    from arboretum import MAPTreeClassifier

    out = {"numba": numba.__version__, "numpy": numpy.__version__, "arboretum_file": arboretum.__file__}
    Xw, yw = mref._warmup_data()
    for i in (1, 2):
        t0 = time.perf_counter()
        MAPTreeClassifier(alpha=MAPTREE_ALPHA, beta=MAPTREE_BETA, rho=MAPTREE_RHO, max_expansions=5000).fit(Xw, yw)
        out[f"maptree_fit{i}_s"] = time.perf_counter() - t0
    Xp, yp = ptab.load("iris", PCFG_XOR_N)
    for i in (1, 2):
        clf, _ = make_pcfg("iris")
        t0 = time.perf_counter()
        clf.fit(Xp, yp)
        out[f"pcfg_fit{i}_s"] = time.perf_counter() - t0
    _emit(out)


def worker_maptree(a) -> None:
    """maptree_reference.py's `ours` worker: warm-up fit, then the timed fit."""
    _import_checked(a.expect_src)
    from arboretum import MAPTreeClassifier

    Xw, yw = mref._warmup_data()
    t0 = time.perf_counter()
    MAPTreeClassifier(alpha=MAPTREE_ALPHA, beta=MAPTREE_BETA, rho=MAPTREE_RHO, max_expansions=5000).fit(Xw, yw)
    warmup_s = time.perf_counter() - t0
    X, y = _load_npz(a.data)
    clf = MAPTreeClassifier(alpha=MAPTREE_ALPHA, beta=MAPTREE_BETA, rho=MAPTREE_RHO,
                            time_limit=a.time_limit, max_expansions=None)
    t0 = time.perf_counter()
    clf.fit(X, y)
    wall = time.perf_counter() - t0
    _emit({
        "time_s": float(clf.search_time_),
        "fit_wall_s": wall,
        "n": int(X.shape[0]),
        "d": int(X.shape[1]),
        "certified": bool(clf.optimal_),
        "stop_reason": str(clf.stop_reason_),
        "log_posterior": float(clf.log_posterior_),
        "expansions": int(clf.n_expansions_),
        "or_nodes": int(clf.n_or_nodes_),
        "and_nodes": int(clf.n_and_nodes_),
        "tree": clf.tree_.to_paren(),
        "rss_peak_mb": mref._peak_rss_mb(),
        "warmup_s": warmup_s,
        "constructor": (f"MAPTreeClassifier(alpha={MAPTREE_ALPHA:g}, beta={MAPTREE_BETA:g}, rho={MAPTREE_RHO}, "
                        f"time_limit={a.time_limit:g}, max_expansions=None)"),
    })


def worker_pcfg(a) -> None:
    """pcfg_tables.py's `fit` worker: 4-row warm-up fit, then the timed full-data fit."""
    import numpy as np

    _import_checked(a.expect_src)
    from arboretum.pcfg import PCFGTreeClassifier

    t0 = time.perf_counter()
    PCFGTreeClassifier().fit(np.array([[0.0, 1], [1, 0], [2, 2], [3, 1]]), [0, 1, 0, 1])  # load the kernels
    warmup_s = time.perf_counter() - t0
    X, y = _load_npz(a.data)
    clf, text = make_pcfg(a.dataset)
    t0 = time.perf_counter()
    clf.fit(X, y)
    wall = time.perf_counter() - t0
    _emit({
        "time_s": wall,
        "fit_wall_s": wall,
        "n": int(X.shape[0]),
        "d": int(X.shape[1]),
        "n_values": [int(v) for v in clf.n_values_],
        "n_nodes": int(clf.n_nodes_),
        "n_edges": int(clf.n_split_edges_),
        "build_s": float(clf.grammar_.store.build_time),
        "log_evidence": float(clf.log_evidence_),
        "map_nodes": int(clf.tree_.n_nodes),
        "rss_peak_mb": mref._peak_rss_mb(),
        "warmup_s": warmup_s,
        "constructor": text,
    })


# ---------------------------------------------------------------------------------------------
# parent: sources
# ---------------------------------------------------------------------------------------------
def _git(cwd: Path, *args: str) -> str:
    p = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} in {cwd} failed: {p.stderr.strip()}")
    return p.stdout.strip()


def describe_source(src: Path) -> dict:
    """Commit, uncommitted changes and digest of the arboretum package under ``src``."""
    info = {"src": str(src), "commit": "unknown", "subject": "", "dirty": ""}
    try:
        info["commit"] = _git(src, "rev-parse", "HEAD")
        info["subject"] = _git(src, "log", "-1", "--format=%s", "HEAD")[:60]
        changed = _git(src, "status", "--porcelain", "--untracked-files=no", "--", ".")
        info["dirty"] = "uncommitted changes under src/" if changed else ""
    except (OSError, RuntimeError, subprocess.SubprocessError):
        pass
    info["digest"] = mref._source_digest(src / "arboretum")
    return info


def check_src(path: Path, what: str) -> Path:
    path = path.resolve()
    if not (path / "arboretum" / "__init__.py").is_file():
        raise SystemExit(f"{what} {path} is not a src directory (no arboretum/__init__.py in it)")
    return path


def make_worktree(rev: str, tmp: Path) -> Path:
    """A detached git worktree of ``rev`` under ``tmp``; returns its src directory."""
    commit = _git(REPO, "rev-parse", "--verify", rev + "^{commit}")
    path = tmp / f"worktree-{commit[:10]}"
    _log(f"git worktree add --detach {path} {commit[:10]}")
    _git(REPO, "worktree", "add", "--detach", str(path), commit)
    return check_src(path / "src", f"worktree of {rev}")


def freeze(src: Path, dest: Path) -> Path:
    """Copy ``src/arboretum`` to ``dest/arboretum`` so that edits during the run cannot leak in."""
    shutil.copytree(src / "arboretum", dest / "arboretum", ignore=shutil.ignore_patterns("__pycache__"))
    return dest


# ---------------------------------------------------------------------------------------------
# parent: running workers
# ---------------------------------------------------------------------------------------------
def run_worker(python: str, version: dict, argv: list[str], timeout: float, what: str) -> tuple[dict | None, str, float]:
    """Run one worker of ``version``; return (result or None, error text, wall seconds).

    A failure (exit status, timeout, no result line) is printed to stderr at once, with the
    worker's command and the tail of its output; the error text is the last line of stderr
    followed, after a newline, by the last lines of its output.
    """
    cmd = [python, str(Path(__file__).resolve()), *argv, "--expect-src", version["frozen"]]
    env = dict(os.environ, PYTHONPATH=version["frozen"], NUMBA_CACHE_DIR=version["numba_cache"])
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=str(REPO))
    except subprocess.TimeoutExpired as exc:
        wall = time.perf_counter() - t0
        out = (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err = (exc.stderr or b"").decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        _show_crash(what, cmd, env, f"timed out after {timeout:.0f} s", out, err)
        return None, f"timeout after {timeout:.0f} s\n" + _tail(err or out, 15), wall
    wall = time.perf_counter() - t0
    lines = [ln[len(RESULT_MARK):] for ln in p.stdout.splitlines() if ln.startswith(RESULT_MARK)]
    if p.returncode != 0 or not lines:
        _show_crash(what, cmd, env, f"exit status {p.returncode}", p.stdout, p.stderr)
        last = [ln for ln in (p.stderr or p.stdout or "").strip().splitlines() if ln.strip()]
        return None, (f"exit {p.returncode}: " + (last[-1].strip() if last else "no output")
                      + "\n" + _tail(p.stderr or p.stdout, 15)), wall
    try:
        return json.loads(lines[-1]), "", wall
    except ValueError as exc:
        _show_crash(what, cmd, env, f"unreadable result line ({exc})", p.stdout, p.stderr)
        return None, f"bad worker output: {exc}", wall


def _tail(text: str | None, n: int) -> str:
    return "\n".join((text or "").rstrip().splitlines()[-n:]) or "(empty)"


def _show_crash(what: str, cmd: list[str], env: dict, why: str, stdout: str, stderr: str, n: int = 60) -> None:
    bar = "!" * 100
    print(f"\n{bar}\nWORKER FAILED: {what}: {why}\n"
          f"command: PYTHONPATH={env['PYTHONPATH']} NUMBA_CACHE_DIR={env['NUMBA_CACHE_DIR']} {shlex.join(cmd)}\n"
          f"--- stderr (last {n} lines) ---\n{_tail(stderr, n)}\n"
          f"--- stdout (last {n} lines) ---\n{_tail(stdout, n)}\n{bar}\n",
          file=sys.stderr, flush=True)


def prepare_data(python: str, versions: dict, keys: list[str], tmp: Path) -> dict:
    """Each version loads every data set; they must agree byte for byte.  Returns key -> info."""
    found = {}
    for label, v in versions.items():
        _log(f"loading the data sets with {label}'s loaders ...")
        res, err, _ = run_worker(python, v, ["--worker", "data", "--out-dir", str(tmp / f"data-{label}"),
                                             "--keys", *keys], timeout=600, what=f"data ({label})")
        if res is None:
            raise SystemExit(f"cannot load the data sets with {label}: {err.splitlines()[0]}")
        found[label] = res["data"]
    bad = [k for k in keys if found["before"][k]["digest"] != found["after"][k]["digest"]]
    if bad:
        for k in bad:
            print(f"DATA MISMATCH {k}: before {found['before'][k]}, after {found['after'][k]}", file=sys.stderr)
        raise SystemExit("the two versions load different data; the comparison would not be fair")
    _log("both versions load identical data: " + ", ".join(f"{k} {found['after'][k]['digest']}" for k in keys))
    return found["after"]


# ---------------------------------------------------------------------------------------------
# parent: recorded numbers (results/ of this checkout)
# ---------------------------------------------------------------------------------------------
def _read_csv(path: Path) -> list[dict]:
    try:
        with path.open(newline="") as fh:
            return list(csv.DictReader(fh))
    except OSError:
        return []


def _last_commit(path: Path) -> str:
    try:
        return _git(REPO, "log", "-1", "--format=%h %cs", "--", str(path.relative_to(REPO)))
    except (OSError, RuntimeError, subprocess.SubprocessError, ValueError):
        return "?"


def recorded_numbers() -> dict:
    """(task, dataset) -> recorded medians, plus 'sources' -> where they come from."""
    out: dict = {}
    mcsv = RESULTS / "maptree_reference.csv"
    rows = [r for r in _read_csv(mcsv) if r.get("impl") == "ours" and r.get("status") == "ok"]
    for ds in {r["dataset"] for r in rows}:
        mine = [r for r in rows if r["dataset"] == ds]
        out[("maptree", ds)] = {
            "time_s": statistics.median(float(r["time_s"]) for r in mine),
            "fit_wall_s": statistics.median(float(r["call_wall_s"]) for r in mine),
            "runs": len(mine),
        }
    md = ""
    try:
        md = (RESULTS / "maptree_reference.md").read_text()
    except OSError:
        pass
    import re

    m = re.search(r"\(git ([0-9a-f]{6,40})", md)
    g = re.search(r"Generated (\S+)", md)
    msrc = (f"`results/maptree_reference.csv` (ours, median of {len(rows) // max(1, len(out)) or '?'} runs; "
            f"sources {m.group(1) if m else '?'}, run {g.group(1)[:10] if g else '?'}; file last committed "
            f"{_last_commit(mcsv)})")
    pcsv = RESULTS / "pcfg_tables_perf.csv"
    for r in _read_csv(pcsv):
        if r.get("fit_s"):
            out[("pcfg", r["dataset"])] = {"time_s": float(r["fit_s"]), "n_nodes": int(r["n_nodes"]),
                                           "n_edges": int(r["n_edges"]), "runs": 1}
    psrc = f"`results/pcfg_tables_perf.csv` (one run each; file last committed {_last_commit(pcsv)})"
    out["sources"] = {"maptree": msrc, "pcfg": psrc}
    return out


# ---------------------------------------------------------------------------------------------
# parent: summary and report
# ---------------------------------------------------------------------------------------------
def _t(v) -> str:
    if v is None or v == "":
        return ""
    return f"{v:.3f}" if v >= 0.1 else f"{v:.2g}"


def _r(v) -> str:
    return "" if v is None else f"{v:.3f}"


def summarize(rows: list[dict], tasks: list[tuple[str, str]], recorded: dict) -> list[dict]:
    """One summary dict per (task, dataset, metric)."""
    out = []
    for task, ds in tasks:
        per = {}
        for label in VERSIONS:
            per[label] = [r for r in rows if (r["task"], r["dataset"], r["version"]) == (task, ds, label)
                          and r["status"] == "ok"]
        metrics = [("time_s", "time to certificate (search_time_)"), ("fit_wall_s", "fit wall")] \
            if task == "maptree" else [("time_s", "full fit (fit wall)")]
        check, detail = consistency(task, per)
        for key, title in metrics:
            s = {"task": task, "dataset": ds, "metric": title, "key": key, "same_result": check,
                 "same_result_detail": detail}
            for label in VERSIONS:
                vals = [r[key] for r in per[label]]
                s[f"{label}_runs"] = len(vals)
                s[f"{label}_median"] = statistics.median(vals) if vals else None
                s[f"{label}_min"] = min(vals) if vals else None
            ok = s["before_median"] and s["after_median"] is not None
            s["ratio_median"] = s["after_median"] / s["before_median"] if ok else None
            s["ratio_min"] = s["after_min"] / s["before_min"] if ok and s["before_min"] else None
            s["within_10pct"] = "" if s["ratio_median"] is None else ("yes" if s["ratio_median"] <= WITHIN else "NO")
            rec = recorded.get((task, ds), {}).get(key)
            s["recorded"] = rec
            s["ratio_after_recorded"] = s["after_median"] / rec if rec and s["after_median"] is not None else None
            first = (per["after"] or per["before"] or [{}])[0]
            s["n"], s["d"] = first.get("n"), first.get("d")
            for label in VERSIONS:
                f = per[label][0] if per[label] else {}
                for k in ("n_values", "n_nodes", "n_edges", "log_evidence", "certified", "log_posterior",
                          "expansions", "or_nodes", "and_nodes", "map_nodes"):
                    s[f"{label}_{k}"] = f.get(k)
            rec_all = recorded.get((task, ds), {})
            s["recorded_n_nodes"], s["recorded_n_edges"] = rec_all.get("n_nodes"), rec_all.get("n_edges")
            out.append(s)
    return out


def consistency(task: str, per: dict) -> tuple[str, str]:
    """Did both versions solve the same problem?  ("yes"/"NO"/"", what differs)."""
    b, a = per["before"], per["after"]
    if not b or not a:
        return "", "a version has no successful run"
    if task == "maptree":
        lp = {label: {round(r["log_posterior"], 6) for r in per[label]} for label in VERSIONS}
        cert = all(r["certified"] for r in b + a)
        same_lp = len(lp["before"] | lp["after"]) == 1
        exp = {label: sorted({r["expansions"] for r in per[label]}) for label in VERSIONS}
        detail = (f"log posterior {'equal' if same_lp else 'DIFFERS'}; "
                  f"{'all certified' if cert else 'NOT all certified'}; expansions before {exp['before']}, "
                  f"after {exp['after']}")
        return ("yes" if same_lp and cert else "NO"), detail
    keys = ("n_values", "n_nodes", "n_edges")
    sig = {label: {json.dumps([r[k] for k in keys]) for r in per[label]} for label in VERSIONS}
    ev = [r["log_evidence"] for r in b + a]
    same_ev = max(ev) - min(ev) <= 1e-6 * max(1.0, abs(ev[0]))
    same = len(sig["before"] | sig["after"]) == 1 and same_ev
    detail = ("same codes per feature, nodes, split edges" if len(sig["before"] | sig["after"]) == 1
              else f"grammars DIFFER: before {sorted(sig['before'])}, after {sorted(sig['after'])}")
    detail += "; log evidence " + ("equal" if same_ev else f"DIFFERS ({min(ev):.6f} .. {max(ev):.6f})")
    return ("yes" if same else "NO"), detail


def markdown(summ: list[dict], rows: list[dict], ctx: dict) -> str:
    rec_src = ctx["recorded"]["sources"]
    v = ctx["versions"]
    md = [
        "# Speed of two arboretum versions, measured in one run" + (" (quick mode)" if ctx["quick"] else ""),
        "",
        f"Generated {ctx['started']} - {ctx['ended']} ({ctx['elapsed_min']:.1f} min) by:",
        "",
        "```",
        ctx["command"],
        "```",
        "",
        "## Machine",
        "",
        f"- CPU: {ctx['machine']['cpu']}; {ctx['machine']['logical_cpus']} logical CPUs "
        f"({ctx['machine']['usable_cpus']} usable by this process)",
        f"- RAM: {ctx['machine']['ram_gib']:.1f} GiB ({ctx['machine']['ram_available_gib']:.1f} GiB available at start)"
        if ctx["machine"].get("ram_gib") else "- RAM: unknown",
        f"- OS: {ctx['machine']['os']}",
        f"- load average (1/5/15 min): at start {' / '.join(f'{x:.2f}' for x in ctx['load_start'])}, "
        f"at end {' / '.join(f'{x:.2f}' for x in ctx['load_end'])}"
        + (f"; 1-min load before each run: {min(ctx['loads']):.2f}-{max(ctx['loads']):.2f}" if ctx["loads"] else ""),
        f"- python {platform.python_version()} (`{ctx['python']}`), numpy {ctx['numpy']}, numba {ctx['numba']} "
        "(one interpreter for both versions)",
        "",
        "## Versions",
        "",
        "| version | source | commit | uncommitted changes | sources digest | numba cold compile: MAPTree / PCFG first fit (s) |",
        "|---|---|---|---|---|---|",
    ]
    for label in VERSIONS:
        s, w = v[label], ctx["warm"].get(label) or {}
        comp = (f"{w['maptree_fit1_s']:.1f} / {w['pcfg_fit1_s']:.1f}" if "maptree_fit1_s" in w else "failed")
        md.append(f"| {label} | `{s['src']}` | {s['commit'][:10]} {s['subject']} | {s['dirty'] or 'none'} | "
                  f"{s['digest']} | {comp} |")
    md += [
        "",
        "Each version ran from a frozen copy of its `arboretum` package (`PYTHONPATH`), with its own "
        "`NUMBA_CACHE_DIR`, filled by one warm-up worker before the measurements (the cold compile times above "
        "are not part of any timing).",
        "",
        "## Settings",
        "",
        f"- {ctx['repeats']} repeat(s) per version and task, each in a fresh process; alternating (for repeat r "
        "and task i, before runs first when r + i is odd).",
        f"- data: loaded by each version's own loaders and found byte-identical ({', '.join(ctx['data_digests'])}); "
        "every worker read the same `.npz`.",
    ]
    if "maptree" in ctx["constructors"]:
        md.append(
            f"- MAPTree (settings of `maptree_reference.py`): `{ctx['constructors']['maptree']}`; a warm-up fit "
            "on 120 x 12 random data (`maptree_reference._warmup_data`, `max_expansions=5000`) first in every "
            "worker. Time to certificate = `search_time_`; fit wall = the whole `fit` call.")
    if ctx["pcfg_datasets"]:
        md.append(
            "- PCFG (full-data fits of `pcfg_tables.py`, the paper's bucketing, hidden XOR with "
            f"{PCFG_XOR_N} rows): before `{_pcfg_template(ctx['constructors'].get('pcfg-before'))}`, after "
            f"`{_pcfg_template(ctx['constructors'].get('pcfg-after'))}` with k, s per data set: "
            + ", ".join(f"{d} {ptab.MAX_VALUES[d]}, {ptab.BINNING.get(d, 'uniform')}" for d in ctx["pcfg_datasets"])
            + "; a 4-row warm-up fit first in every worker. Time = wall time of `fit`.")
    md += [
        "",
        "## MAPTree: time to certificate",
        "",
        "| dataset | n x d | metric | before median [min] (s) | after median [min] (s) | after/before median "
        "| after/before min | within 10% | recorded median (s) | after/recorded | runs b/a | same result |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in [s for s in summ if s["task"] == "maptree"]:
        md.append(_row(s, [f"{s['n']} x {s['d']}" if s["n"] else "", s["metric"]]))
    md += ["", f"Recorded: {rec_src['maptree']}.", ""]
    if not any(s["task"] == "maptree" for s in summ):
        md = md[:md.index("## MAPTree: time to certificate")]
    pcfg_start = len(md)
    md += [
        "## PCFG: full-data fit",
        "",
        "| dataset | n x F | codes per feature | nodes b / a [recorded] | split edges b / a [recorded] | "
        "before median [min] (s) | after median [min] (s) | after/before median | after/before min | within 10% "
        "| recorded (s) | after/recorded | runs b/a | same grammar |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in [s for s in summ if s["task"] == "pcfg"]:
        nv = s["after_n_values"] or s["before_n_values"]
        nv_text = "binary" if nv and len(nv) > 6 else (str(nv) if nv else "")
        md.append(_row(s, [
            f"{s['n']} x {s['d']}" if s["n"] else "", nv_text,
            f"{_int(s['before_n_nodes'])} / {_int(s['after_n_nodes'])} [{_int(s['recorded_n_nodes'])}]",
            f"{_int(s['before_n_edges'])} / {_int(s['after_n_edges'])} [{_int(s['recorded_n_edges'])}]",
        ]))
    md += ["", f"Recorded: {rec_src['pcfg']}.", ""]
    if not any(s["task"] == "pcfg" for s in summ):
        md = md[:pcfg_start]
    gated = [s for s in summ if s["key"] == "time_s"]
    n_ok = sum(s["within_10pct"] == "yes" for s in gated)
    md += [
        "## Verdict",
        "",
        f"{n_ok} of {len(gated)} gated timings (MAPTree time to certificate, PCFG full fit) are within 10% "
        "(after/before ratio of the medians <= 1.10)"
        + ("." if n_ok == len(gated) else ": **not all**."),
        "",
        "*same result*: both versions certified the same log posterior (to 1e-6) in every run; the expansion counts "
        "are listed. *same grammar*: both versions built the same grammar (codes per feature, nodes, split edges) "
        "and the same log evidence. Details:",
        "",
    ]
    md += [f"- {s['task']} {s['dataset']}: {s['same_result_detail']}" for s in gated]
    errors = [r for r in rows if r["status"] != "ok"]
    if errors:
        md += ["", "## Failed runs", ""]
        for r in errors:
            md += [f"- {r['task']} {r['dataset']} {r['version']} repeat {r['repeat']}: `{r['error']}`", "",
                   "  ```", *["  " + ln for ln in r["error_tail"].splitlines()], "  ```", ""]
    md += ["", f"Every run: `{ctx['runs_csv']}`; summary: `{ctx['summary_csv']}`.", ""]
    return "\n".join(md)


def _pcfg_template(text: str | None) -> str:
    """The constructor of make_pcfg with k (values per feature) and s (strategy) left symbolic."""
    if text is None:
        return "?"
    if "binarizer=" in text:
        return f"PCFGTreeClassifier(log_phi={PCFG_LOG_PHI:g}, rho={PCFG_DIRICHLET:g}, binarizer=Binarizer(k - 1, s))"
    return f"PCFGTreeClassifier(log_phi={PCFG_LOG_PHI:g}, alpha={PCFG_DIRICHLET:g}, max_values=k, binning=s)"


def _int(v) -> str:
    return "" if v is None or v == "" else f"{v:,}"


def _row(s: dict, lead: list[str]) -> str:
    cells = [s["dataset"], *lead]
    for label in VERSIONS:
        cells.append(f"{_t(s[f'{label}_median'])} [{_t(s[f'{label}_min'])}]" if s[f"{label}_median"] is not None
                     else "failed")
    within = s["within_10pct"]
    cells += [_r(s["ratio_median"]), _r(s["ratio_min"]), "**NO**" if within == "NO" else within,
              _t(s["recorded"]), _r(s["ratio_after_recorded"]), f"{s['before_runs']}/{s['after_runs']}",
              "**NO**" if s["same_result"] == "NO" else s["same_result"]]
    return "| " + " | ".join(str(c) for c in cells) + " |"


def print_table(summ: list[dict]) -> None:
    print(f"{'task':8} {'dataset':14} {'metric':36} {'before med':>11} {'after med':>11} {'ratio':>7} "
          f"{'within':>6} {'recorded':>9} {'same':>5}")
    for s in summ:
        print(f"{s['task']:8} {s['dataset']:14} {s['metric']:36} {_t(s['before_median']):>11} "
              f"{_t(s['after_median']):>11} {_r(s['ratio_median']):>7} {s['within_10pct']:>6} "
              f"{_t(s['recorded']):>9} {s['same_result']:>5}")


def write_csv(path: Path, rows: list[dict], fields: list[str] | None = None) -> None:
    fields = fields or list(dict.fromkeys(k for r in rows for k in r))
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: (json.dumps(v) if isinstance(v, (list, tuple)) else v) for k, v in r.items()})


# ---------------------------------------------------------------------------------------------
# parent: main loop
# ---------------------------------------------------------------------------------------------
def parent(a) -> int:
    maptree_ds = a.maptree_datasets if a.maptree_datasets is not None else (
        QUICK_MAPTREE_DATASETS if a.quick else MAPTREE_DATASETS)
    pcfg_ds = a.pcfg_datasets if a.pcfg_datasets is not None else (QUICK_PCFG_DATASETS if a.quick else PCFG_DATASETS)
    repeats = a.repeats if a.repeats is not None else (1 if a.quick else 5)
    if repeats < 1:
        raise SystemExit("--repeats must be >= 1")
    unknown = [d for d in pcfg_ds if d not in ptab.MAX_VALUES]
    if unknown:
        raise SystemExit(f"unknown PCFG data set(s) {unknown}; choose from {list(ptab.MAX_VALUES)}")
    tasks = [("maptree", d) for d in maptree_ds] + [("pcfg", d) for d in pcfg_ds]
    if not tasks:
        raise SystemExit("nothing to measure")
    base = Path(a.out) if a.out else RESULTS / ("compare_versions_quick" if a.quick else "compare_versions")
    base.parent.mkdir(parents=True, exist_ok=True)
    md_path, csv_path = base.with_suffix(".md"), base.with_suffix(".csv")
    runs_path = base.parent / (base.name + "_runs.csv")

    import numba
    import numpy

    command = "cd " + shlex.quote(os.getcwd()) + " && " + shlex.join([a.python, *sys.argv])
    started = _dt.datetime.now().astimezone()
    t_start = time.perf_counter()
    load_start = os.getloadavg()
    machine = mref.machine_info()
    _log(f"machine: {machine['cpu']}, {machine['usable_cpus']} usable CPUs, load average {load_start}")

    tmp = Path(tempfile.mkdtemp(prefix="compare-versions-"))
    worktree = None
    try:
        if a.before:
            before_src = check_src(Path(a.before), "--before")
        else:
            before_src = make_worktree(a.before_rev, tmp)
            worktree = before_src.parent
        after_src = check_src(Path(a.after), "--after")
        versions = {}
        for label, src in (("before", before_src), ("after", after_src)):
            info = describe_source(src)
            frozen = freeze(src, tmp / f"src-{label}")
            info.update(frozen=str(frozen), numba_cache=str(tmp / f"numba-{label}"))
            if mref._source_digest(frozen / "arboretum") != info["digest"]:
                raise SystemExit(f"the frozen copy of {src} differs from it (sources changing?)")
            versions[label] = info
            _log(f"{label}: {src} at {info['commit'][:10]} {info['dirty']} (digest {info['digest']})")
        if versions["before"]["digest"] == versions["after"]["digest"]:
            _log("NOTE: before and after have identical sources")

        keys = [f"{t}:{d}" for t, d in tasks]
        data = prepare_data(a.python, versions, keys, tmp)

        warm = {}
        for label, v in versions.items():
            _log(f"{label}: filling the numba cache (cold compile) ...")
            warm[label], err, wall = run_worker(a.python, v, ["--worker", "warm"], timeout=1800,
                                                what=f"warm-up ({label})")
            if warm[label] is None:
                raise SystemExit(f"{label}: the warm-up worker failed ({err.splitlines()[0]}); see its output above")
            _log(f"{label}: cache filled in {wall:.1f} s (MAPTree first fit {warm[label]['maptree_fit1_s']:.1f} s, "
                 f"PCFG first fit {warm[label]['pcfg_fit1_s']:.1f} s)")

        rows: list[dict] = []
        constructors: dict = {}
        n_runs = repeats * len(tasks) * 2
        for rep in range(1, repeats + 1):
            for i, (task, ds) in enumerate(tasks):
                order = VERSIONS if (rep + i) % 2 == 1 else VERSIONS[::-1]
                for pos, label in enumerate(order, 1):
                    argv = ["--worker", task, "--dataset", ds, "--data", data[f"{task}:{ds}"]["path"]]
                    timeout = 900.0
                    if task == "maptree":
                        argv += ["--time-limit", repr(a.time_limit)]
                        timeout = a.time_limit * 1.5 + 300
                    load1 = os.getloadavg()[0]
                    at = _dt.datetime.now().astimezone().isoformat(timespec="seconds")
                    what = f"{task} {ds} {label} repeat {rep}"
                    res, err, wall = run_worker(a.python, versions[label], argv, timeout, what)
                    row = {"task": task, "dataset": ds, "version": label, "repeat": rep, "order": pos,
                           "status": "ok" if res else "error", "error": err.split("\n", 1)[0],
                           "error_tail": err.split("\n", 1)[-1] if err else "", "worker_wall_s": round(wall, 3),
                           "loadavg_1m_before": load1, "started_at": at, **(res or {})}
                    rows.append(row)
                    if res:
                        constructors[task if task == "maptree" else f"pcfg-{label}"] = res["constructor"]
                    write_csv(runs_path, rows, RUN_FIELDS)  # keep what was measured if interrupted
                    msg = (f"time {_t(res['time_s'])} s" + (f", fit {_t(res['fit_wall_s'])} s"
                                                            if task == "maptree" else "")) if res else f"FAILED: {err.splitlines()[0]}"
                    _log(f"[{len(rows)}/{n_runs}] {what}: {msg}")

        recorded = recorded_numbers()
        summ = summarize(rows, tasks, recorded)
        ended = _dt.datetime.now().astimezone()
        ctx = {
            "quick": a.quick, "command": command, "started": started.isoformat(timespec="seconds"),
            "ended": ended.isoformat(timespec="seconds"), "elapsed_min": (time.perf_counter() - t_start) / 60,
            "machine": machine, "load_start": load_start, "load_end": os.getloadavg(),
            "loads": [r["loadavg_1m_before"] for r in rows], "python": a.python,
            "numpy": numpy.__version__, "numba": numba.__version__, "versions": versions, "warm": warm,
            "repeats": repeats, "constructors": constructors, "pcfg_datasets": pcfg_ds,
            "data_digests": [f"{k} {data[k]['digest']}" for k in keys], "recorded": recorded,
            "runs_csv": runs_path.name, "summary_csv": csv_path.name,
        }
        for label in VERSIONS:
            w = warm[label]
            if (w["numba"], w["numpy"]) != (numba.__version__, numpy.__version__):
                _log(f"WARNING: {label} workers report numba {w['numba']}, numpy {w['numpy']}")
        text = markdown(summ, rows, ctx)
        md_path.write_text(text)
        summary_rows = [{k: v for k, v in s.items() if k != "key"} for s in summ]
        for s in summary_rows:
            s["before_commit"] = versions["before"]["commit"]
            s["after_commit"] = versions["after"]["commit"]
        write_csv(csv_path, summary_rows)
        print(text)
        print_table(summ)
        _log(f"wrote {md_path}, {csv_path} and {runs_path}")
        failed = [r for r in rows if r["status"] != "ok"]
        if failed:
            _log(f"{len(failed)} run(s) failed; their output is printed above")
        return 1 if failed else 0
    finally:
        if a.keep_tmp:
            _log(f"kept the temporary files in {tmp}" + (f" (git worktree {worktree})" if worktree else ""))
        else:
            if worktree is not None:
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(worktree)],
                               capture_output=True, text=True)
            shutil.rmtree(tmp, ignore_errors=True)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--before", default=None, help="src directory of the old version (default: a worktree of --before-rev)")
    p.add_argument("--before-rev", default=DEFAULT_BEFORE_REV,
                   help="commit to check out under /tmp when --before is not given (default %(default)s)")
    p.add_argument("--after", default=str(REPO / "src"), help="src directory of the new version (default %(default)s)")
    p.add_argument("--repeats", type=int, default=None, help="runs per version and task (default 5, --quick 1)")
    p.add_argument("--maptree-datasets", nargs="*", default=None,
                   help=f"default: {' '.join(MAPTREE_DATASETS)} (--quick: {' '.join(QUICK_MAPTREE_DATASETS)})")
    p.add_argument("--pcfg-datasets", nargs="*", default=None,
                   help=f"default: {' '.join(PCFG_DATASETS)} (--quick: {' '.join(QUICK_PCFG_DATASETS)})")
    p.add_argument("--time-limit", type=float, default=MAPTREE_TIME_LIMIT,
                   help="MAPTree time limit in seconds (default %(default)s, as maptree_reference.py)")
    p.add_argument("--quick", action="store_true",
                   help="hepatitis, iris and caesarian, 1 repeat; writes compare_versions_quick*")
    p.add_argument("--out", default=None,
                   help="output path without suffix (default benchmarks/results/compare_versions)")
    p.add_argument("--python", default=sys.executable, help="interpreter of the workers (default: this one)")
    p.add_argument("--keep-tmp", action="store_true", help="keep the worktree, frozen sources, caches and data")
    # worker mode
    p.add_argument("--worker", choices=["data", "warm", "maptree", "pcfg"], default=None, help=argparse.SUPPRESS)
    p.add_argument("--expect-src", default=None, help=argparse.SUPPRESS)
    p.add_argument("--dataset", default=None, help=argparse.SUPPRESS)
    p.add_argument("--data", default=None, help=argparse.SUPPRESS)
    p.add_argument("--out-dir", default=None, help=argparse.SUPPRESS)
    p.add_argument("--keys", nargs="*", default=None, help=argparse.SUPPRESS)
    return p


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    workers = {"data": worker_data, "warm": worker_warm, "maptree": worker_maptree, "pcfg": worker_pcfg}
    if a.worker:
        workers[a.worker](a)
        return 0
    return parent(a)


if __name__ == "__main__":
    sys.exit(main())
