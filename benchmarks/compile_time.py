"""Numba compile time of each model family: cold (empty cache), warm (loaded from the cache).

Each measurement is a fresh Python process.  *Cold*: an empty ``NUMBA_CACHE_DIR``, so the first fit
of the family compiles every kernel; *warm*: a second process on the cache the first one filled.
The figure is what :func:`arboretum._compile.warm_up` takes (the estimators' ``compile_time_``):
compiling or loading the kernels and running them once on a tiny problem.  CPU seconds are quoted
beside the wall clock because other work on a shared machine inflates the wall clock; on a cold
cache the MAPTree warm-ups run a helper process on the second CPU (:mod:`arboretum._compile`), whose
CPU seconds are quoted after a "+" (``--no-helper``: compile in one process only).

With ``--before-rev REV`` the same is measured on an older revision checked out in a temporary
worktree, which has no warm-up of its own: there the figure is the first fit of the same tiny
problem minus a second fit in the same process (the compilation the first fit paid inside its clock).

Usage::

    python benchmarks/compile_time.py [--families F ...] [--before-rev d75ba45] [--repeats 1] [--no-helper]

Writes ``benchmarks/results/compile_time.{csv,md}``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
FAMILIES = ("maptree-classification", "maptree-regression", "pcfg", "smc", "mcmc", "optimal-axis", "optimal", "density",
            "polytope")

# Current code: the family's warm-up, as the estimators run it before their clock.
_NOW = """
import json, resource, time, warnings
warnings.simplefilter("ignore")
c0, t0 = time.process_time(), time.perf_counter()
import arboretum
from arboretum import _compile
if hasattr(_compile, "_load"):  # import arboretum imports the family's module lazily since f4489c3
    _compile._load(FAMILY)
c1, t1 = time.process_time(), time.perf_counter()
cached = _compile.is_cached(FAMILY)
seconds = _compile.warm_up(FAMILY)
ch = resource.getrusage(resource.RUSAGE_CHILDREN)  # the helper process, reaped by the warm-up
print(json.dumps(dict(import_s=t1 - t0, compile_s=seconds, compile_cpu_s=time.process_time() - c1, cached=cached,
                      helper_cpu_s=ch.ru_utime + ch.ru_stime)))
"""

# An older revision: the first fit of the tiny problem minus a second fit (same process).
_BEFORE = """
import json, time, warnings
warnings.simplefilter("ignore")
import numpy as np
import arboretum
rng = np.random.default_rng(0)
X = rng.random((48, 6)) < 0.5
X[:8] = X[8:16]
y = (X[:, 0] ^ X[:, 1] ^ (rng.random(48) < 0.2)).astype(np.int64)
make = {
    "maptree-classification": lambda: arboretum.MAPTreeClassifier(time_limit=None).fit(X, y),
    "maptree-regression": lambda: arboretum.MAPTreeRegressor(time_limit=None).fit(X, y + 0.1 * np.arange(48)),
    "pcfg": lambda: arboretum.PCFGTreeClassifier().fit(X, y),
    "smc": lambda: arboretum.SMCTreeSampler(n_particles=8, random_state=0).fit(X, y),
    "mcmc": lambda: arboretum.MCMCTreeSampler(n_iterations=50, random_state=0).fit(X, y),
}[FAMILY]
c0, t0 = time.process_time(), time.perf_counter()
make()
c1, t1 = time.process_time(), time.perf_counter()
make()
c2, t2 = time.process_time(), time.perf_counter()
print(json.dumps(dict(import_s=0.0, compile_s=(t1 - t0) - (t2 - t1), compile_cpu_s=(c1 - c0) - (c2 - c1),
                      cached=None, helper_cpu_s=0.0)))
"""


def _run(code: str, family: str, src: Path, cache: str, helper: bool = True) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=str(src))
    if not helper:
        env["ARBORETUM_COMPILE_HELPER"] = "0"
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", code.replace("FAMILY", repr(family))],
        env=env, capture_output=True, text=True, cwd=tempfile.gettempdir(),
    )
    if out.returncode != 0:  # e.g. a family that an older revision does not have
        nan = float("nan")
        return dict(import_s=nan, compile_s=nan, compile_cpu_s=nan, cached=None, helper_cpu_s=nan, process_s=nan)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    r.setdefault("helper_cpu_s", 0.0)
    r["process_s"] = time.perf_counter() - t0
    return r


def measure(versions: list[tuple[str, Path, str]], families, repeats: int, helper: bool = True) -> list[dict]:
    """Cold then warm for each family, repeat and version, the versions interleaved (now, before, now,
    before...) so that a shared machine's drift in speed falls on both alike."""
    rows = []
    for family in families:
        for rep in range(repeats):
            for version, src, code in versions:
                cache = tempfile.mkdtemp(prefix="arboretum-ct-")
                for phase in ("cold", "warm"):
                    r = _run(code, family, src, cache, helper)
                    rows.append(dict(version=version, family=family, repeat=rep, phase=phase, **r))
                    print(f"{version:>8} {family:<24} {phase}: {r['compile_s']:6.2f} s "
                          f"({r['compile_cpu_s']:6.2f} CPU s + {r['helper_cpu_s']:5.2f} helper)", flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--families", nargs="*", default=list(FAMILIES))
    ap.add_argument("--before-rev", default=None, help="also measure this git revision (e.g. d75ba45)")
    ap.add_argument("--before-warm-up", action="store_true",
                    help="the older revision has arboretum._compile: measure its warm-up as for the current code")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--no-helper", action="store_true", help="ARBORETUM_COMPILE_HELPER=0: compile in one process")
    ap.add_argument("--out", default=str(RESULTS / "compile_time"))
    args = ap.parse_args(argv)

    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    versions_run = [("now", ROOT / "src", _NOW)]
    wt = None
    if args.before_rev:
        wt = Path(tempfile.mkdtemp(prefix="arboretum-before-")) / "tree"
        subprocess.run(["git", "worktree", "add", "--detach", str(wt), args.before_rev], cwd=ROOT, check=True,
                       capture_output=True)
        versions_run.append((args.before_rev, wt / "src", _NOW if args.before_warm_up else _BEFORE))
    try:
        rows = measure(versions_run, args.families, args.repeats, helper=not args.no_helper)
    finally:
        if wt is not None:
            subprocess.run(["git", "worktree", "remove", "--force", str(wt)], cwd=ROOT, capture_output=True)

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.with_suffix(".csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    versions = ["now"] + ([args.before_rev] if args.before_rev else [])

    def median(version, family, phase, key):
        v = sorted(r[key] for r in rows if r["version"] == version and r["family"] == family and r["phase"] == phase)
        return (v[(len(v) - 1) // 2] + v[len(v) // 2]) / 2 if v else float("nan")

    lines = [
        "# Numba compile time per model family",
        "",
        f"Run {time.strftime('%Y-%m-%d %H:%M')} on {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} CPUs; python {platform.python_version()}; arboretum git {rev}; "
        f"load average at the end {os.getloadavg()[0]:.1f}.",
        f"Command: `python benchmarks/compile_time.py {' '.join(argv or sys.argv[1:])}`.",
        "",
        f"Fresh process each; *cold*: empty `NUMBA_CACHE_DIR`; *warm*: the cache the cold run filled; the median "
        f"of {args.repeats} repeat(s), the versions interleaved. "
        "Seconds of `arboretum._compile.warm_up(family)` (the estimators' `compile_time_`, spent before "
        "the fit's clock starts); for an older revision without `--before-warm-up`, first fit minus second "
        "fit of the same tiny problem (compilation paid inside the fit). CPU seconds in parentheses, "
        "with the helper process's after a + where it ran; nan: the family does not exist in that revision.",
        "",
        "| family | " + " | ".join(f"{v} cold | {v} warm" for v in versions) + " |",
        "|---|" + "---|---|" * len(versions),
    ]
    for family in args.families:
        cells = []
        for v in versions:
            for phase in ("cold", "warm"):
                helper = median(v, family, phase, "helper_cpu_s")
                extra = f" + {helper:.2f}" if helper > 0.05 else ""
                cells.append(f"{median(v, family, phase, 'compile_s'):.2f} ({median(v, family, phase, 'compile_cpu_s'):.2f}{extra})")
        lines.append(f"| {family} | " + " | ".join(cells) + " |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
