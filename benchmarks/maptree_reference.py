#!/usr/bin/env python
"""Benchmark arboretum's MAPTree against the authors' reference C++ MAPTree.

Both implementations search the same Bayesian CART posterior (alpha, beta,
rho) on the same CP4IM datasets in one run of this script.  Every measured run
happens in a fresh subprocess, so the peak RSS is per run and nothing
accumulates between runs; runs of the two implementations alternate.

Usage::

    python benchmarks/maptree_reference.py                  # 4 datasets, 3 repeats, 600 s limit
    python benchmarks/maptree_reference.py --quick          # zoo-1 + hepatitis, 1 repeat, 60 s
    python benchmarks/maptree_reference.py --no-ref --datasets zoo-1 --repeats 1

The reference (``maptree`` Python module built from ThrunGroup/maptree) lives
in its own interpreter: ``--ref-python PATH``, else ``$MAPTREE_REF_PYTHON``,
else the current interpreter if it can ``import maptree``, else
``/work/ref/venv/bin/python`` if it exists.  When none works the reference is
skipped and its columns are left empty.

Worker mode (used internally, one JSON line on stdout)::

    python benchmarks/maptree_reference.py --worker ours --dataset NAME --time-limit T [--data X.npz]
    python benchmarks/maptree_reference.py --worker ref  --dataset NAME --time-limit T  --data X.npz
    python benchmarks/maptree_reference.py --worker compile

The ``ref`` worker needs only numpy and ``maptree`` (it never imports
arboretum): the parent writes ``X``, ``y`` to a temporary ``.npz`` file.

What is timed
-------------
* ours: ``search_time_`` (the AND/OR search loop only; the tree extraction and
  the log-posterior recomputation of ``fit`` are excluded) is the time to
  certificate; ``fit`` wall time is reported too.  Each ``ours`` worker first
  runs a small warm-up fit (which also grows the arrays once) so that loading
  the numba kernels from the on-disk cache is not counted; the compile and
  cache-load costs are measured separately, once per script run.
* ref: the wall time of the ``maptree.search`` call, which includes building
  its data structures and destroying its AND/OR graph (the C++ frees the graph
  inside the call).
* memory: the peak RSS of the worker after the search (``VmHWM`` on Linux, the
  high-water mark of the whole process; ``ru_maxrss`` is kept in the CSV but
  not used, because Linux carries it over fork + exec from the parent), the
  RSS just before the search (baseline), and their difference ("search RSS").  For ours also ``peak_memory_``, the bytes of the
  search-graph arrays.
"""

from __future__ import annotations

import argparse
import csv
import datetime as _dt
import gc
import hashlib
import importlib.util
import json
import math
import os
import platform
import resource
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
DEFAULT_OUT = HERE / "results" / "maptree_reference"
DEFAULT_DATASETS = ["zoo-1", "hepatitis", "primary-tumor", "vote"]
QUICK_DATASETS = ["zoo-1", "hepatitis"]
FALLBACK_REF_PYTHON = "/work/ref/venv/bin/python"
DEFAULT_REF_COMMIT = "0a5efe4"
AGREE_TOL = 1e-6

CSV_FIELDS = [
    "dataset", "n", "d", "impl", "repeat", "order", "time_limit", "status", "error",
    "certified", "log_posterior", "log_posterior_bound", "gap", "stop_reason",
    "time_s", "search_time_s", "call_wall_s",
    "expansions", "or_nodes", "and_nodes", "graph_mb",
    "rss_baseline_mb", "rss_peak_mb", "search_rss_mb", "ru_maxrss_mb",
    "tree", "import_s", "warmup_s", "worker_wall_s", "loadavg_1m_before", "started_at", "source_digest",
]


# ---------------------------------------------------------------------------------------------
# memory helpers (stdlib only: they run inside both workers)
# ---------------------------------------------------------------------------------------------
def _status_mb(field: str) -> float | None:
    """A ``VmXXX`` line of /proc/self/status in MiB (None when unavailable)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024.0  # kB
    except (OSError, ValueError, IndexError):
        pass
    return None


def _ru_maxrss_mb() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r / 2**20 if sys.platform == "darwin" else r / 1024.0  # bytes on macOS, KiB on Linux


def _peak_rss_mb() -> float:
    """Peak RSS of this process image.

    On Linux ``VmHWM`` (the high-water mark of the current address space).  Not
    ``ru_maxrss``: Linux carries ``ru_maxrss`` over ``fork`` + ``exec``, so a
    worker started by a 200 MB parent would report at least 200 MB.
    """
    hwm = _status_mb("VmHWM")
    return _ru_maxrss_mb() if hwm is None else hwm


def _current_rss_mb() -> float:
    rss = _status_mb("VmRSS")
    return _peak_rss_mb() if rss is None else rss


def _emit(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter finalisation: it is not part of any measurement.
    os._exit(0)


def _load_xy(args):
    import numpy as np

    if args.data:
        with np.load(args.data) as d:
            return np.asarray(d["X"]), np.asarray(d["y"])
    from arboretum import load_dataset

    return load_dataset(args.dataset, return_X_y=True)


def _warmup_data():
    """A small fixed problem whose search grows the arrays once (so every kernel is loaded)."""
    import numpy as np

    rng = np.random.default_rng(0)
    X = (rng.random((120, 12)) < 0.5).astype(np.uint8)
    y = (X[:, 0] ^ X[:, 1] ^ (rng.random(120) < 0.2)).astype(np.int64)
    return X, y


# ---------------------------------------------------------------------------------------------
# workers
# ---------------------------------------------------------------------------------------------
def worker_ours(args) -> None:
    t0 = time.perf_counter()
    import warnings

    from arboretum import LimitWarning, MAPTreeClassifier

    warnings.simplefilter("ignore", LimitWarning)  # the stop reason is recorded in the results

    import_s = time.perf_counter() - t0
    warmup_s = None
    if not args.no_warmup:
        Xw, yw = _warmup_data()
        t0 = time.perf_counter()
        MAPTreeClassifier(alpha=args.alpha, beta=args.beta, rho=tuple(args.rho), max_expansions=5000).fit(Xw, yw)
        warmup_s = time.perf_counter() - t0
        del Xw, yw
    X, y = _load_xy(args)
    clf = MAPTreeClassifier(
        alpha=args.alpha, beta=args.beta, rho=tuple(args.rho), time_limit=args.time_limit, max_expansions=None
    )
    gc.collect()
    rss_base = _current_rss_mb()
    t0 = time.perf_counter()
    clf.fit(X, y)
    wall = time.perf_counter() - t0
    rss_peak = _peak_rss_mb()
    ru_maxrss = _ru_maxrss_mb()
    _emit({
        "impl": "ours",
        "dataset": args.dataset,
        "n": int(X.shape[0]),
        "d": int(X.shape[1]),
        "certified": bool(clf.optimal_),
        "log_posterior": float(clf.log_posterior_),
        "log_posterior_bound": float(clf.log_posterior_bound_),
        "gap": float(clf.gap_),
        "stop_reason": str(clf.stop_reason_),
        "time_s": float(clf.search_time_),
        "search_time_s": float(clf.search_time_),
        "call_wall_s": wall,
        "expansions": int(clf.n_expansions_),
        "or_nodes": int(clf.n_or_nodes_),
        "and_nodes": int(clf.n_and_nodes_),
        "graph_mb": clf.peak_memory_ / 2**20,
        "rss_baseline_mb": rss_base,
        "rss_peak_mb": rss_peak,
        "ru_maxrss_mb": ru_maxrss,
        "tree": clf.tree_.to_paren(),
        "import_s": import_s,
        "warmup_s": warmup_s,
        "source_digest": _source_digest(),
    })


def worker_ref(args) -> None:
    import numpy as np

    t0 = time.perf_counter()
    import maptree

    import_s = time.perf_counter() - t0
    with np.load(args.data) as d:
        X = np.asarray(d["X"]).astype(bool)
        y = np.asarray(d["y"])
    if set(np.unique(y).tolist()) - {0, 1}:
        raise SystemExit("the reference MAPTree handles binary 0/1 labels only")
    Xl, yl = X.tolist(), y.astype(bool).tolist()
    limit = -1 if args.time_limit is None else int(math.ceil(args.time_limit))
    gc.collect()
    rss_base = _current_rss_mb()
    t0 = time.perf_counter()
    sol = maptree.search(Xl, yl, args.alpha, args.beta, [float(r) for r in args.rho], -1, limit)
    wall = time.perf_counter() - t0
    rss_peak = _peak_rss_mb()
    ru_maxrss = _ru_maxrss_mb()
    lb, ub = float(sol.lb), float(sol.ub)
    _emit({
        "impl": "ref",
        "dataset": args.dataset,
        "n": int(X.shape[0]),
        "d": int(X.shape[1]),
        "certified": lb == ub,
        "log_posterior": -ub,
        "log_posterior_bound": -lb,
        "gap": max(0.0, ub - lb),
        "stop_reason": "completed" if lb == ub else "time_limit",
        "time_s": wall,
        "search_time_s": None,
        "call_wall_s": wall,
        "rss_baseline_mb": rss_base,
        "rss_peak_mb": rss_peak,
        "ru_maxrss_mb": ru_maxrss,
        "tree": str(sol.tree),
        "import_s": import_s,
    })


def worker_compile(args) -> None:
    """Time ``import arboretum`` and the first calls (compile or cache load) in a fresh process."""
    t0 = time.perf_counter()
    from arboretum import MAPTreeClassifier, load_dataset

    import_s = time.perf_counter() - t0
    X, y = load_dataset("zoo-1", return_X_y=True)
    Xw, yw = _warmup_data()
    out = {"impl": "compile", "import_s": import_s, "numba_cache_dir": os.environ.get("NUMBA_CACHE_DIR")}
    for tag, (A, b, kw) in (("zoo", (X, y, {})), ("grow", (Xw, yw, {"max_expansions": 5000}))):
        for i in (1, 2):
            clf = MAPTreeClassifier(alpha=args.alpha, beta=args.beta, rho=tuple(args.rho), **kw)
            t0 = time.perf_counter()
            clf.fit(A, b)
            out[f"{tag}{i}_wall_s"] = time.perf_counter() - t0
            out[f"{tag}{i}_search_s"] = float(clf.search_time_)
        if tag == "zoo":
            out["zoo_log_posterior"] = float(clf.log_posterior_)
    _emit(out)


# ---------------------------------------------------------------------------------------------
# parent: environment
# ---------------------------------------------------------------------------------------------
def _read(path: str) -> str:
    try:
        with open(path) as fh:
            return fh.read()
    except OSError:
        return ""


def machine_info() -> dict:
    cpu = "unknown"
    for line in _read("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    if cpu == "unknown":
        cpu = platform.processor() or platform.machine()
    mem = {}
    for line in _read("/proc/meminfo").splitlines():
        k, _, v = line.partition(":")
        if k in ("MemTotal", "MemAvailable"):
            mem[k] = int(v.split()[0]) / 2**20  # kB -> GiB
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    return {
        "cpu": cpu,
        "logical_cpus": os.cpu_count(),
        "usable_cpus": usable,
        "ram_gib": mem.get("MemTotal"),
        "ram_available_gib": mem.get("MemAvailable"),
        "os": platform.platform(),
    }


def _package_dir() -> Path | None:
    try:
        import arboretum
    except Exception:  # pragma: no cover
        return None
    return Path(arboretum.__file__).resolve().parent


def _source_digest(root: Path | None = None) -> str:
    """Hash of the arboretum ``*.py`` sources under ``root`` (default: the imported package)."""
    root = root or _package_dir()
    if root is None:
        return "unknown"
    h = hashlib.sha256()
    for p in sorted(root.rglob("*.py")):
        h.update(str(p.relative_to(root)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:12]


def _git_describe() -> str:
    try:
        head = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no", "--", "src"],
            capture_output=True, text=True, timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if not head:
        return "unknown"
    return head + (" + uncommitted changes in src/" if dirty else "")


def our_versions() -> dict:
    import numba
    import numpy

    try:
        from importlib.metadata import version

        arb = version("arboretum")
    except Exception:  # pragma: no cover
        import arboretum

        arb = getattr(arboretum, "__version__", "unknown")
    return {
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "numba": numba.__version__,
        "arboretum": arb,
        "git": _git_describe(),
        "source_digest": _source_digest(),
    }


def _probe_ref(python: str) -> dict | None:
    code = (
        "import json, platform, numpy, maptree; "
        "print(json.dumps({'python': platform.python_version(), 'numpy': numpy.__version__, "
        "'module': getattr(maptree, '__file__', '?')}))"
    )
    try:
        p = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return None
    if p.returncode != 0:
        return None
    try:
        return json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None


def find_ref_python(explicit: str | None) -> tuple[str | None, dict | None, list[str]]:
    """Return (python, probe info, notes about the candidates tried)."""
    candidates: list[tuple[str, str]] = []
    if explicit:
        candidates.append(("--ref-python", explicit))
    elif os.environ.get("MAPTREE_REF_PYTHON"):
        candidates.append(("$MAPTREE_REF_PYTHON", os.environ["MAPTREE_REF_PYTHON"]))
    else:
        if importlib.util.find_spec("maptree") is not None:
            candidates.append(("current interpreter", sys.executable))
        if os.path.exists(FALLBACK_REF_PYTHON):
            candidates.append(("default location", FALLBACK_REF_PYTHON))
    notes = []
    for origin, py in candidates:
        info = _probe_ref(py)
        if info is not None:
            return py, info, notes
        notes.append(f"{origin} {py}: cannot `import numpy, maptree`")
    if not candidates:
        notes.append("no candidate interpreter (no --ref-python, no $MAPTREE_REF_PYTHON, "
                     "`import maptree` fails here, " + FALLBACK_REF_PYTHON + " absent)")
    return None, None, notes


# ---------------------------------------------------------------------------------------------
# parent: running workers
# ---------------------------------------------------------------------------------------------
def _log(msg: str) -> None:
    print(f"[{_dt.datetime.now().strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run_worker(python: str, argv: list[str], timeout: float, env: dict | None = None) -> tuple[dict | None, str, float]:
    """Run one worker subprocess; return (result or None, error text, wall seconds)."""
    cmd = [python, str(Path(__file__).resolve()), *argv]
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=str(REPO))
    except subprocess.TimeoutExpired:
        return None, f"timeout after {timeout:.0f} s", time.perf_counter() - t0
    wall = time.perf_counter() - t0
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = (p.stderr or p.stdout).strip().splitlines()[-3:]
        return None, f"exit {p.returncode}: " + " | ".join(tail), wall
    try:
        return json.loads(lines[-1]), "", wall
    except ValueError as exc:
        return None, f"bad worker output: {exc}", wall


def _prior_args(a) -> list[str]:
    return ["--alpha", repr(a.alpha), "--beta", repr(a.beta), "--rho", *[repr(r) for r in a.rho]]


def measure_compile(a, base_env: dict | None = None) -> dict:
    """Cold compile (fresh NUMBA_CACHE_DIR) and warm first-call overhead, each in a fresh process."""
    out: dict = {}
    tmp = tempfile.mkdtemp(prefix="numba-cold-")
    try:
        env = dict(base_env or os.environ, NUMBA_CACHE_DIR=tmp)
        _log("numba compile, cold cache (fresh NUMBA_CACHE_DIR) ...")
        out["cold"], out["cold_error"], _ = run_worker(sys.executable, ["--worker", "compile", *_prior_args(a)],
                                                       timeout=900, env=env)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    # First warm run primes the default on-disk cache if it is empty; report the second.
    for i in (1, 2):
        _log(f"numba first-call overhead, on-disk cache ({i}/2) ...")
        out["warm"], out["warm_error"], _ = run_worker(sys.executable, ["--worker", "compile", *_prior_args(a)],
                                                       timeout=900, env=base_env)
    return out


def _overheads(r: dict) -> tuple[float, float]:
    first = r["zoo1_wall_s"] - r["zoo2_wall_s"]
    grow = max(0.0, r["grow1_wall_s"] - r["grow2_wall_s"])
    return first, grow


def compile_lines(c: dict) -> list[str]:
    lines = []
    cold = c.get("cold")
    if cold:
        first, grow = _overheads(cold)
        lines.append(
            f"- **numba compile (cold cache)**: {first + grow:.2f} s in total = {first:.2f} s on the first fit "
            f"(zoo-1 first fit {cold['zoo1_wall_s']:.2f} s wall vs {cold['zoo2_wall_s']:.3f} s for the second; "
            f"the first fit's `search_time_` is {cold['zoo1_search_s']:.2f} s because `run_search` is compiled on "
            f"its first call, inside the search loop) + {grow:.2f} s on the first array growth; "
            f"`import arboretum` {cold['import_s']:.2f} s (fresh `NUMBA_CACHE_DIR`, fresh process)."
        )
    else:
        lines.append(f"- numba compile (cold cache): not measured ({c.get('cold_error') or 'skipped'}).")
    warm = c.get("warm")
    if warm:
        first, grow = _overheads(warm)
        lines.append(
            f"- **numba first-call overhead (warm on-disk cache)**: {first + grow:.2f} s = {first:.2f} s on the "
            f"first fit (zoo-1 {warm['zoo1_wall_s']:.3f} s vs {warm['zoo2_wall_s']:.3f} s; `search_time_` "
            f"{warm['zoo1_search_s']:.3f} s) + {grow:.2f} s on the first growth; `import arboretum` "
            f"{warm['import_s']:.2f} s."
        )
    else:
        lines.append(f"- numba first-call overhead (warm cache): not measured ({c.get('warm_error') or 'skipped'}).")
    lines.append(
        "- Neither is in the table below: every `ours` worker first runs a small warm-up fit "
        "(120 x 12 random data, grows the arrays once) before the measured fit."
    )
    return lines


# ---------------------------------------------------------------------------------------------
# parent: comparing trees
# ---------------------------------------------------------------------------------------------
def parse_paren(text: str):
    """Parse MAPTree notation: a leaf is "" and a split on f is "(" left f right ")".

    Returns None for a leaf and ``(f, left, right)`` for a split (left: x_f = 0).
    """
    pos = 0

    def tree():
        nonlocal pos
        if pos >= len(text) or text[pos] != "(":
            return None
        pos += 1
        left = tree()
        start = pos
        while pos < len(text) and text[pos].isdigit():
            pos += 1
        if start == pos:
            raise ValueError(f"bad tree string {text!r} at {pos}")
        f = int(text[start:pos])
        right = tree()
        if pos >= len(text) or text[pos] != ")":
            raise ValueError(f"bad tree string {text!r} at {pos}")
        pos += 1
        return (f, left, right)

    out = tree()
    if pos != len(text):
        raise ValueError(f"bad tree string {text!r}")
    return out


def leaf_partition(text: str, X) -> frozenset:
    """The non-empty sets of training samples that share a leaf."""
    import numpy as np

    parts = []
    stack = [(parse_paren(text), np.arange(X.shape[0]))]
    while stack:
        node, idx = stack.pop()
        if node is None:
            if idx.size:
                parts.append(frozenset(idx.tolist()))
            continue
        f, left, right = node
        on = X[idx, f] != 0
        stack.append((left, idx[~on]))
        stack.append((right, idx[on]))
    return frozenset(parts)


def compare_trees(ours: list[str], ref: list[str], X) -> str:
    if ours == ref:
        return "yes"
    try:
        po = {leaf_partition(t, X) for t in ours}
        pr = {leaf_partition(t, X) for t in ref}
    except (ValueError, IndexError):
        return "no"
    return "same partition" if po == pr else "no"


# ---------------------------------------------------------------------------------------------
# parent: summary
# ---------------------------------------------------------------------------------------------
def _f(v, fmt: str, empty: str = "") -> str:
    return empty if v is None or v == "" else format(v, fmt)


def _t(v) -> str:
    """Seconds: 3 decimals, or 2 significant digits below 0.1 s (zoo-1 takes well under 1 ms)."""
    if v is None:
        return ""
    return f"{v:.3f}" if v >= 0.1 else f"{v:.2g}"


def _med(rows, key):
    vals = [r[key] for r in rows if r.get(key) not in (None, "")]
    return statistics.median(vals) if vals else None


def summarize(rows: list[dict], datasets: list[str], ref_enabled: bool, time_limit,
              data: dict | None = None) -> tuple[list[dict], list[str]]:
    """Per (dataset, impl) summary dicts and the Markdown table lines (``data``: name -> X)."""
    summ = []
    data = data or {}
    for ds in datasets:
        per = {}
        for impl in ("ours", "ref"):
            runs = [r for r in rows if r["dataset"] == ds and r["impl"] == impl]
            ok = [r for r in runs if r["status"] == "ok"]
            s = {"dataset": ds, "impl": impl, "runs": len(runs), "ok": len(ok), "errors": len(runs) - len(ok)}
            if ok:
                n_cert = sum(bool(r["certified"]) for r in ok)
                s.update(
                    n=ok[0]["n"], d=ok[0]["d"],
                    certified="yes" if n_cert == len(ok) else ("no" if n_cert == 0 else f"{n_cert}/{len(ok)}"),
                    all_certified=n_cert == len(ok),
                    log_posterior=max(r["log_posterior"] for r in ok),
                    bound=min(r["log_posterior_bound"] for r in ok),
                    time_med=_med(ok, "time_s"),
                    time_min=min(r["time_s"] for r in ok),
                    time_max=max(r["time_s"] for r in ok),
                    wall_med=_med(ok, "call_wall_s"),
                    expansions=_med(ok, "expansions"),
                    or_nodes=_med(ok, "or_nodes"),
                    and_nodes=_med(ok, "and_nodes"),
                    graph_mb=_med(ok, "graph_mb"),
                    rss_peak=_med(ok, "rss_peak_mb"),
                    rss_search=_med(ok, "search_rss_mb"),
                    trees=sorted({r["tree"] for r in ok}),
                )
            per[impl] = s
        o, r = per["ours"], per["ref"]
        both = o.get("all_certified") and r.get("all_certified")
        if both:
            diff = abs(o["log_posterior"] - r["log_posterior"])
            o["agree"] = "yes" if diff <= AGREE_TOL else f"NO (diff {diff:.2e})"
            X = data.get(ds)
            if X is None:
                o["same_tree"] = "yes" if o["trees"] == r["trees"] else "no"
            else:
                o["same_tree"] = compare_trees(o["trees"], r["trees"], X)
            o["time_ratio"] = o["time_med"] / r["time_med"] if r["time_med"] else None
        else:
            o["agree"] = "n/a" if ref_enabled else ""
            o["same_tree"] = ""
            o["time_ratio"] = None
        if o.get("rss_peak") and r.get("rss_peak"):
            o["rss_ratio"] = o["rss_peak"] / r["rss_peak"]
        if o.get("rss_search") is not None and r.get("rss_search") is not None:
            # A search too small to move the RSS (zoo-1) has no meaningful ratio.
            o["search_rss_ratio"] = o["rss_search"] / r["rss_search"] if r["rss_search"] >= 1.0 else "n/a"
        summ += [o, r]

    hdr = [
        "dataset", "n x d", "impl", "runs", "certified", "log posterior", "bound",
        "time to certificate, median [min-max] (s)", "fit/call wall, median (s)", "expansions",
        "OR / AND nodes", "search graph (MB)", "peak RSS (MB)", "search RSS = peak - baseline (MB)",
        "time ours/ref", "peak RSS ours/ref", "search RSS ours/ref", "agree", "same tree",
    ]
    lines = ["| " + " | ".join(hdr) + " |", "|" + "|".join(["---"] * len(hdr)) + "|"]
    for s in summ:
        if s["impl"] == "ref" and not ref_enabled:
            cells = [s["dataset"], "", "ref", "0", "", "", "", "", "", "", "", "", "", "", "", "", "", "", ""]
            lines.append("| " + " | ".join(cells) + " |")
            continue
        if not s.get("ok"):
            cells = [s["dataset"], "", s["impl"], f"{s['runs']} ({s['errors']} failed)"] + [""] * (len(hdr) - 4)
            lines.append("| " + " | ".join(cells) + " |")
            continue
        ours = s["impl"] == "ours"
        tcell = f"{_t(s['time_med'])} [{_t(s['time_min'])}-{_t(s['time_max'])}]"
        if not s["all_certified"]:
            tcell += f" (stopped, limit {time_limit:g} s)"
        runs = str(s["runs"]) + (f" ({s['errors']} failed)" if s["errors"] else "")
        cells = [
            s["dataset"], f"{s['n']} x {s['d']}", s["impl"], runs, s["certified"],
            f"{s['log_posterior']:.6f}", f"{s['bound']:.6f}", tcell, _t(s["wall_med"]),
            _f(s["expansions"], ",.0f") if ours else "",
            f"{s['or_nodes']:,.0f} / {s['and_nodes']:,.0f}" if ours else "",
            _f(s["graph_mb"], ".1f") if ours else "",
            _f(s["rss_peak"], ".1f"), _f(s["rss_search"], ".1f"),
            _f(s.get("time_ratio"), ".3g", "n/a" if ref_enabled else "") if ours else "",
            _f(s.get("rss_ratio"), ".2f") if ours else "",
            (s["search_rss_ratio"] if isinstance(s.get("search_rss_ratio"), str)
             else _f(s.get("search_rss_ratio"), ".2f")) if ours else "",
            s.get("agree", "") if ours else "",
            s.get("same_tree", "") if ours else "",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return summ, lines


#: Bytes the reference C++ MAPTree (commit 0a5efe4, 64-bit glibc) allocates at the least, per OR
#: node, per AND node and per parent edge; see memory_per_node_lines for where each number comes from.
REF_OR_BYTES, REF_AND_BYTES, REF_EDGE_BYTES = 96 + 32 + 64 + 8, 48 + 32 + 8, 32
REF_MIN_BYTES_PER_OR = REF_OR_BYTES + REF_AND_BYTES / 2 + REF_EDGE_BYTES


def memory_per_node_lines(summ: list[dict]) -> list[str]:
    """The "memory per stored subproblem" section: ours measured, the reference's least possible."""
    lines = ["## Memory per stored subproblem (bytes per OR node)", "",
             "| dataset | ours: search graph / OR nodes (B) | ours: search RSS / OR nodes (B) | "
             "reference: at least (B) |", "|---|---|---|---|"]
    for s in summ:
        if s["impl"] != "ours" or not s.get("ok") or not s.get("or_nodes") or s["or_nodes"] < 1000:
            continue
        per_graph = s["graph_mb"] * 2**20 / s["or_nodes"]
        per_rss = s["rss_search"] * 2**20 / s["or_nodes"] if s.get("rss_search") is not None else None
        lines.append(f"| {s['dataset']} | {per_graph:.0f} | {_f(per_rss, '.0f')} | {REF_MIN_BYTES_PER_OR:.0f} |")
    lines += [
        "",
        "Ours: every array of the search graph (OR and AND nodes, edges, leaf statistics and the hash table, "
        "at their allocated capacity) over the OR nodes stored; medians over repeats. Datasets with fewer "
        "than 1000 OR nodes are left out.",
        "",
        "The reference does not report its node count, so its column is a lower bound read off its data "
        "structures (`include/search/befs_map_search.h`, `include/cache/approx_bitset_cache.h`; sizes "
        "checked with `sizeof` and `malloc_usable_size` on this machine, 64-bit glibc, whose heap chunks "
        "carry an 8-byte header and are rounded up to 16 bytes, 32 at the least). Per OR node: the "
        f"`OrNode` (80 bytes, a 96-byte chunk), its entry in the `orNodes_` list (a 32-byte chunk) and in "
        f"the subproblem cache, a `std::unordered_map` node holding the 24-byte key, the value pointer, the "
        f"next pointer and the cached hash (a 64-byte chunk) plus at least one 8-byte bucket: "
        f"{REF_OR_BYTES} bytes. Per AND node: the `AndNode` (32 bytes, a 48-byte chunk), its `andNodes_` "
        f"entry (32) and its slot in the parent's `children` vector (8): {REF_AND_BYTES} bytes. Per parent "
        f"edge: a `forward_list` node (32). Every OR node but the root is a child of an AND node and every "
        f"AND node has two children, so there are at least (OR - 1) / 2 AND nodes and OR - 1 edges: at "
        f"least {REF_OR_BYTES} + {REF_AND_BYTES}/2 + {REF_EDGE_BYTES} = {REF_MIN_BYTES_PER_OR:.0f} bytes "
        "per OR node, before vector slack, the `children` vectors' headers and allocator fragmentation.",
        "",
    ]
    return lines


# ---------------------------------------------------------------------------------------------
# parent: main loop
# ---------------------------------------------------------------------------------------------
def write_csv(path: Path, rows: list[dict]) -> None:
    tmp = path.with_suffix(".csv.tmp")
    with open(tmp, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=CSV_FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in CSV_FIELDS})
    os.replace(tmp, path)


def _out_base(out: str | None) -> Path:
    if not out:
        return DEFAULT_OUT
    p = Path(out)
    if p.suffix in (".md", ".csv"):
        p = p.with_suffix("")
    return p


def parent(a) -> int:
    if a.quick:
        datasets = a.datasets or QUICK_DATASETS
        repeats = a.repeats if a.repeats is not None else 1
        time_limit = a.time_limit if a.time_limit is not None else 60.0
    else:
        datasets = a.datasets or DEFAULT_DATASETS
        repeats = a.repeats if a.repeats is not None else 3
        time_limit = a.time_limit if a.time_limit is not None else 600.0
    if repeats < 1:
        raise SystemExit("--repeats must be >= 1")
    base = _out_base(a.out)
    base.parent.mkdir(parents=True, exist_ok=True)
    md_path, csv_path = base.with_suffix(".md"), base.with_suffix(".csv")

    from arboretum import list_datasets

    unknown = [d for d in datasets if d not in list_datasets()]
    if unknown:
        raise SystemExit(f"unknown dataset(s) {unknown}; choose from {list_datasets()}")

    command = shlex.join([sys.executable, *sys.argv])
    started = _dt.datetime.now().astimezone()
    load_start = os.getloadavg()
    mach = machine_info()
    vers = our_versions()
    _log(f"machine: {mach['cpu']}, {mach['usable_cpus']} usable CPUs, load average {load_start}")

    ref_python, ref_info, ref_notes = (None, None, ["disabled with --no-ref"])
    if not a.no_ref:
        ref_python, ref_info, ref_notes = find_ref_python(a.ref_python)
        if ref_python is None:
            msg = "reference MAPTree not available, skipping it: " + "; ".join(ref_notes)
            print(f"NOTICE: {msg}", file=sys.stderr, flush=True)
        else:
            _log(f"reference: {ref_python} (python {ref_info['python']}, numpy {ref_info['numpy']})")
    ref_enabled = ref_python is not None

    # Run every `ours` worker on a frozen copy of the package, so that edits made to the
    # (editable) sources while the benchmark runs cannot mix code versions.
    live_dir = _package_dir()
    snap_root = None
    ours_env = None
    if not a.no_freeze and live_dir is not None:
        snap_root = tempfile.mkdtemp(prefix="arboretum-src-")
        # __pycache__ is copied too (with mtimes): numba's on-disk cache stays valid for
        # unchanged sources, so the copy does not trigger a second cold compile.
        shutil.copytree(live_dir, Path(snap_root) / "arboretum")
        ours_env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [snap_root] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])))
        snap_digest = _source_digest(Path(snap_root) / "arboretum")
        _log(f"running ours from a snapshot of {live_dir} (digest {snap_digest}) in {snap_root}")
    else:
        snap_digest = vers["source_digest"]

    try:
        return _run(a, datasets, repeats, time_limit, md_path, csv_path, command, started, load_start, mach,
                    vers, ref_python, ref_info, ref_notes, ref_enabled, ours_env, snap_digest, live_dir)
    finally:
        if snap_root:
            shutil.rmtree(snap_root, ignore_errors=True)


def _run(a, datasets, repeats, time_limit, md_path, csv_path, command, started, load_start, mach,
         vers, ref_python, ref_info, ref_notes, ref_enabled, ours_env, snap_digest, live_dir) -> int:
    import numpy as np

    from arboretum import load_dataset

    compile_info = {} if a.no_compile else measure_compile(a, ours_env)

    rows: list[dict] = []
    data_by_name: dict = {}
    tmpdir = tempfile.mkdtemp(prefix="maptree-bench-")
    timeout = 2 * time_limit + 300
    try:
        total = len(datasets) * repeats * (2 if ref_enabled else 1)
        k = 0
        for ds in datasets:
            X, y = load_dataset(ds, return_X_y=True)
            data_by_name[ds] = np.asarray(X)
            npz = os.path.join(tmpdir, f"{ds}.npz")
            np.savez(npz, X=np.asarray(X, dtype=np.uint8), y=np.asarray(y, dtype=np.int64))
            for rep in range(repeats):
                impls = ["ours", "ref"] if rep % 2 == 0 else ["ref", "ours"]
                if not ref_enabled:
                    impls = ["ours"]
                for order, impl in enumerate(impls):
                    k += 1
                    py = sys.executable if impl == "ours" else ref_python
                    argv = ["--worker", impl, "--dataset", ds, "--time-limit", repr(float(time_limit)),
                            "--data", npz, *_prior_args(a)]
                    row = {"dataset": ds, "n": int(X.shape[0]), "d": int(X.shape[1]), "impl": impl,
                           "repeat": rep + 1, "order": order + 1, "time_limit": time_limit,
                           "loadavg_1m_before": round(os.getloadavg()[0], 2),
                           "started_at": _dt.datetime.now().astimezone().isoformat(timespec="seconds")}
                    res, err, wall = run_worker(py, argv, timeout=timeout, env=ours_env if impl == "ours" else None)
                    row["worker_wall_s"] = round(wall, 3)
                    if res is None:
                        row.update(status="error", error=err)
                        _log(f"[{k}/{total}] {ds} {impl} repeat {rep + 1}: FAILED {err}")
                    else:
                        row.update({kk: v for kk, v in res.items() if kk in CSV_FIELDS and kk not in ("n", "d")})
                        row["status"] = "ok"
                        row["error"] = ""
                        row["search_rss_mb"] = res["rss_peak_mb"] - res["rss_baseline_mb"]
                        if impl == "ours" and res.get("source_digest") != snap_digest:
                            _log(f"WARNING: worker ran sources {res.get('source_digest')}, expected {snap_digest}")
                        _log(
                            f"[{k}/{total}] {ds} {impl} repeat {rep + 1}: {_t(res['time_s'])} s, "
                            f"certified={res['certified']}, log posterior {res['log_posterior']:.6f}, "
                            f"peak RSS {res['rss_peak_mb']:.0f} MB (load {row['loadavg_1m_before']})"
                        )
                    rows.append(row)
                    write_csv(csv_path, rows)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)

    load_end = os.getloadavg()
    finished = _dt.datetime.now().astimezone()
    digest_end = _source_digest(live_dir) if live_dir is not None else "unknown"
    ours_digests = sorted({r.get("source_digest") for r in rows if r["impl"] == "ours" and r["status"] == "ok"})
    summ, table = summarize(rows, datasets, ref_enabled, time_limit, data=data_by_name)
    loads = [r["loadavg_1m_before"] for r in rows]

    md = ["# MAPTree: arboretum vs the reference C++ implementation", ""]
    md += [f"Generated {started.isoformat(timespec='seconds')} - {finished.isoformat(timespec='seconds')} "
           f"({(finished - started).total_seconds() / 60:.1f} min) by:", "", "```", f"cd {REPO} && {command}", "```", ""]
    md += ["## Machine", ""]
    md += [
        f"- CPU: {mach['cpu']}; {mach['logical_cpus']} logical CPUs ({mach['usable_cpus']} usable by this process)",
        f"- RAM: {_f(mach['ram_gib'], '.1f', '?')} GiB ({_f(mach['ram_available_gib'], '.1f', '?')} GiB available at start)",
        f"- OS: {mach['os']}",
        "- load average (1/5/15 min): at start " + " / ".join(f"{x:.2f}" for x in load_start)
        + ", at end " + " / ".join(f"{x:.2f}" for x in load_end)
        + (f"; 1-min load before each run: {min(loads):.2f}-{max(loads):.2f}" if loads else ""),
        "",
    ]
    md += ["## Versions", ""]
    md += [
        f"- ours: arboretum {vers['arboretum']} (git {vers['git']}; sources digest {snap_digest}"
        + (", run from a copy of the sources taken at start" if ours_env is not None else "")
        + ("" if ours_digests in ([], [snap_digest]) else
           f"; **the workers ran different sources: {', '.join(map(str, ours_digests))}**")
        + ("" if digest_end == snap_digest else
           f"; the live sources changed during the run (digest {digest_end} at end)"
           + (", which the benchmark did not use" if ours_env is not None else "") )
        + ")",
        f"  python {vers['python']}, numpy {vers['numpy']}, numba {vers['numba']}",
    ]
    if ref_enabled:
        md.append(f"- reference: ThrunGroup/maptree commit {a.ref_commit}, python {ref_info['python']}, "
                  f"numpy {ref_info['numpy']} (`{ref_python}`)")
    else:
        md.append("- reference: **not run** (" + "; ".join(ref_notes) + ")")
    md.append("")
    md += ["## Settings", ""]
    md += [
        f"- posterior: alpha = {a.alpha}, beta = {a.beta}, rho = ({', '.join(f'{r:g}' for r in a.rho)})",
        f"- datasets: {', '.join(datasets)}; {repeats} repeat(s) per implementation, alternating "
        f"(ours first on odd repeats, ref first on even ones), each run in a fresh process",
        f"- time limit: {time_limit:g} s (ours: `time_limit={time_limit:g}`; reference: "
        f"{-1 if time_limit is None else int(math.ceil(time_limit))} whole seconds), no expansion limit",
        "",
    ]
    md += ["## Numba compile time", ""]
    md += compile_lines(compile_info) if compile_info else ["- not measured (--no-compile)."]
    md += ["", "## Results", ""] + table + [""]
    md += [
        "Columns: *time to certificate* is `search_time_` for ours (the search loop only) and the wall time of "
        "`maptree.search(...)` for the reference (includes its data setup and the destruction of its AND/OR "
        "graph, which the C++ does inside the call); *fit/call wall* is the whole `fit` for ours. "
        "Log posterior: `log_posterior_` (ours), `-ub` (ref); bound: `log_posterior_bound_` (ours), `-lb` (ref); "
        "over repeats the best log posterior and the tightest bound are shown. "
        "*Search graph*: `peak_memory_` (bytes of the search-graph arrays). *Peak RSS*: `VmHWM` of the "
        "worker process (interpreter and libraries included: ours loads numpy, scipy, scikit-learn and numba; "
        "not `ru_maxrss`, which Linux carries over fork + exec from the parent); "
        "*search RSS*: peak RSS minus the RSS just before the search call. Medians over repeats. "
        f"*agree*: |log posterior ours - ref| <= {AGREE_TOL:g} when both certified in every run; *same tree*: "
        "\"yes\" when the MAPTree paren strings are identical, \"same partition\" when they differ but send the "
        "training samples to the same leaves (e.g. a split on a feature or on its complement), else \"no\". "
        "Raw runs: `" + csv_path.name + "`.",
        "",
    ]
    md += memory_per_node_lines(summ)
    errors = [r for r in rows if r["status"] != "ok"]
    if errors:
        md += ["Failed runs:", ""] + [f"- {r['dataset']} {r['impl']} repeat {r['repeat']}: {r['error']}" for r in errors] + [""]
    text = "\n".join(md)
    md_path.write_text(text)
    write_csv(csv_path, rows)
    print(text)
    _log(f"wrote {md_path} and {csv_path}")
    return 0


# ---------------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", nargs="+", default=None, help=f"default: {' '.join(DEFAULT_DATASETS)}")
    p.add_argument("--time-limit", type=float, default=None, help="seconds per run (default 600)")
    p.add_argument("--repeats", type=int, default=None, help="runs per implementation and dataset (default 3)")
    p.add_argument("--out", default=None,
                   help="output path without suffix; writes OUT.md and OUT.csv (default benchmarks/results/maptree_reference)")
    p.add_argument("--quick", action="store_true", help="zoo-1 and hepatitis, 1 repeat, 60 s limit")
    p.add_argument("--no-ref", action="store_true", help="do not run the reference implementation")
    p.add_argument("--ref-python", default=None, help="interpreter that can `import maptree` (else $MAPTREE_REF_PYTHON, ...)")
    p.add_argument("--ref-commit", default=DEFAULT_REF_COMMIT, help="reference commit to report (default %(default)s)")
    p.add_argument("--no-compile", action="store_true", help="skip the numba compile-time measurement")
    p.add_argument("--no-freeze", action="store_true",
                   help="run ours from the live package instead of a copy of its sources taken at start")
    p.add_argument("--alpha", type=float, default=0.95)
    p.add_argument("--beta", type=float, default=0.5)
    p.add_argument("--rho", type=float, nargs=2, default=[2.5, 2.5])
    # worker mode
    p.add_argument("--worker", choices=["ours", "ref", "compile"], default=None, help=argparse.SUPPRESS)
    p.add_argument("--dataset", default=None, help=argparse.SUPPRESS)
    p.add_argument("--data", default=None, help=argparse.SUPPRESS)
    p.add_argument("--no-warmup", action="store_true", help=argparse.SUPPRESS)
    return p


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    if a.worker == "ours":
        if not a.dataset:
            raise SystemExit("--worker ours needs --dataset")
        worker_ours(a)
    elif a.worker == "ref":
        if not a.data:
            raise SystemExit("--worker ref needs --data FILE.npz")
        worker_ref(a)
    elif a.worker == "compile":
        worker_compile(a)
    else:
        return parent(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
