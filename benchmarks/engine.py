"""The job engine behind ``python -m benchmarks.run``: resumable, local or on a dask cluster.

An experiment is a module of :mod:`benchmarks.experiments` with

* ``NAME`` and ``DESCRIPTION``;
* ``jobs(quick: bool) -> list[dict]``: the grid, one JSON-serialisable dict per
  (dataset, fold, method, seed, ...) job;
* ``run_job(job: dict) -> list[dict]``: runs one job and returns result rows
  (plain values only); it must be a module-level function so that joblib and
  dask workers can import it;
* ``summarize(rows: pandas.DataFrame, out_dir: Path, stem: str, meta: dict) -> None``:
  writes the figure (PNG) and the Markdown summary from all rows.

Every finished job is appended at once to ``<stem>.jobs.jsonl`` (one line per
job: its key, its time, the git commit of the sources it ran and its rows), so an interrupted run loses nothing and a rerun
only does the jobs still missing.  The CSV ``<stem>.csv`` is rewritten from
that log at the end, then ``summarize`` is called.
"""

from __future__ import annotations

import datetime as _dt
import importlib
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO_ROOT / "benchmarks" / "results"
EXPERIMENTS = ("speed", "cv", "synthetic", "prior")
ALIASES = {"fig4": "speed", "fig7": "speed", "fig5": "cv", "fig11": "cv", "fig6": "synthetic",
           "fig8": "synthetic", "fig9": "synthetic", "fig10": "synthetic", "fig12": "prior"}


def job_key(job: dict[str, Any]) -> str:
    """A stable identifier of a job: its parameters as canonical JSON."""
    return json.dumps(job, sort_keys=True, separators=(",", ":"))


def load_experiment(name: str):
    """The experiment module for ``name`` (an experiment name or a figure alias)."""
    resolved = ALIASES.get(name, name)
    if resolved not in EXPERIMENTS:
        choices = ", ".join(EXPERIMENTS + tuple(sorted(ALIASES)))
        raise ValueError(f"unknown experiment {name!r}; choose one of: {choices}")
    return importlib.import_module(f"benchmarks.experiments.{resolved}")


def read_log(path: Path) -> dict[str, list[dict]]:
    """Finished jobs recorded in a ``.jobs.jsonl`` log (a torn last line is ignored)."""
    done: dict[str, list[dict]] = {}
    if not path.exists():
        return done
    with path.open() as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue  # a run killed mid-write
            done[entry["key"]] = entry["rows"]
    return done


def _add_to_path(root: str) -> None:
    """Run on each dask worker so that ``benchmarks`` is importable there."""
    if root not in sys.path:
        sys.path.insert(0, root)


def _timed(run_job: Callable[[dict], list[dict]], job: dict) -> tuple[dict, list[dict], float]:
    t0 = time.perf_counter()
    rows = run_job(job)
    return job, rows, time.perf_counter() - t0


def _local(run_job, jobs: list[dict], n_jobs: int) -> Iterator[tuple[dict, list[dict], float]]:
    if n_jobs == 1:
        for job in jobs:
            yield _timed(run_job, job)
        return
    from joblib import Parallel, delayed

    parallel = Parallel(n_jobs=n_jobs, return_as="generator_unordered", backend="loky")
    yield from parallel(delayed(_timed)(run_job, job) for job in jobs)


def _dask(run_job, jobs: list[dict], address: str) -> Iterator[tuple[dict, list[dict], float]]:
    from distributed import Client, as_completed

    with Client(address) as client:
        client.run(_add_to_path, str(REPO_ROOT))
        futures = [client.submit(_timed, run_job, job, pure=False) for job in jobs]
        for future in as_completed(futures):
            yield future.result()


def _format_seconds(s: float) -> str:
    s = int(round(s))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def describe_job(job: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in job.items())


def machine_info() -> dict[str, str]:
    """Machine, library versions and git commit, for the result headers."""
    import numpy
    import sklearn

    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT,
                                capture_output=True, text=True, check=False).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "src"], cwd=REPO_ROOT,
                               capture_output=True, text=True, check=False).stdout.strip()
        if dirty:  # the results are not reproducible from the commit alone
            commit += " (with uncommitted changes in src/)"
    except OSError:
        commit = "unknown"
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "date": _dt.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "machine": f"{cpu}, {os.cpu_count()} CPUs",
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "scikit-learn": sklearn.__version__,
        "git": commit or "unknown",
    }


def run_experiment(
    name: str,
    *,
    quick: bool = False,
    n_jobs: int = 1,
    dask: str | None = None,
    out_dir: Path | str | None = None,
    fresh: bool = False,
    summarize_only: bool = False,
    max_jobs: int | None = None,
    filter_fn: Callable[[dict], bool] | None = None,
    progress: Callable[[str], None] | None = None,
) -> Path:
    """Run (or resume) an experiment and write its CSV, PNG and Markdown; return the CSV path.

    Parameters
    ----------
    name : str
        Experiment name (``speed``, ``cv``, ``synthetic``, ``prior``) or figure
        alias (``fig4``, ``fig5``, ...).
    quick : bool
        The CI-sized grid; results go to ``<name>_quick.*``.
    n_jobs : int
        Local worker processes (joblib); ignored with ``dask``.
    dask : str, optional
        Address of a dask.distributed scheduler to spread the jobs over.
    out_dir : path, optional
        Where results go (default ``benchmarks/results``).
    fresh : bool
        Forget previously finished jobs instead of resuming.
    summarize_only : bool
        Only rewrite CSV, figure and summary from the finished jobs.
    max_jobs : int, optional
        Run at most this many of the missing jobs (to spread a long grid over
        several sessions).
    filter_fn : callable, optional
        Keep only the jobs for which it returns True.
    progress : callable, optional
        Receives one line per finished job (default: print to stderr).
    """
    import pandas as pd

    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs < 1:
        raise ValueError(f"n_jobs must be an integer >= 1; got {n_jobs!r}")
    if max_jobs is not None and (not isinstance(max_jobs, int) or max_jobs < 0):
        raise ValueError(f"max_jobs must be None or an integer >= 0; got {max_jobs!r}")
    exp = load_experiment(name)
    say = progress or (lambda line: print(line, file=sys.stderr, flush=True))
    out = Path(out_dir) if out_dir is not None else RESULTS_DIR
    out.mkdir(parents=True, exist_ok=True)
    stem = exp.NAME + ("_quick" if quick else "")
    log_path = out / f"{stem}.jobs.jsonl"
    if fresh and log_path.exists():
        log_path.unlink()
    done = read_log(log_path)
    grid = exp.jobs(quick)
    if filter_fn is not None:
        grid = [job for job in grid if filter_fn(job)]
    keys = {job_key(job) for job in grid}
    todo = [job for job in grid if job_key(job) not in done]
    if max_jobs is not None:
        todo = todo[:max_jobs]
    if not summarize_only and todo:
        where = f"dask scheduler {dask}" if dask else f"{n_jobs} local process(es)"
        say(f"[{stem}] {len(grid)} jobs in the grid, {len(grid) - len(todo) - (0 if max_jobs is None else 0)}"
            f" already done, running {len(todo)} on {where}")
        t0 = time.perf_counter()
        results = _dask(exp.run_job, todo, dask) if dask else _local(exp.run_job, todo, n_jobs)
        commit = machine_info()["git"]  # the sources every job of this run measures
        with log_path.open("a") as fh:
            for i, (job, rows, seconds) in enumerate(results, 1):
                key = job_key(job)
                fh.write(json.dumps({"key": key, "seconds": seconds, "git": commit, "rows": rows}) + "\n")
                fh.flush()
                done[key] = rows
                elapsed = time.perf_counter() - t0
                eta = elapsed / i * (len(todo) - i)
                say(f"[{stem} {i}/{len(todo)}] {describe_job(job)}: {seconds:.1f} s "
                    f"(elapsed {_format_seconds(elapsed)}, eta {_format_seconds(eta)})")
    rows = [row for key, job_rows in done.items() if key in keys for row in job_rows]
    frame = pd.DataFrame(rows)
    csv_path = out / f"{stem}.csv"
    frame.to_csv(csv_path, index=False)
    n_done = sum(1 for key in keys if key in done)
    meta = machine_info() | {
        "command": f"python -m benchmarks.run {name}" + (" --quick" if quick else ""),
        "jobs_done": n_done,
        "jobs_total": len(keys),
        "quick": quick,
    }
    if len(frame):
        exp.summarize(frame, out, stem, meta)
    say(f"[{stem}] {n_done}/{len(keys)} jobs done; wrote {csv_path.relative_to(out.parent) if out.parent in csv_path.parents else csv_path}")
    return csv_path


def header_lines(title: str, meta: dict, extra: Iterable[str] = ()) -> list[str]:
    """The common Markdown header of a result summary."""
    lines = [f"# {title}", ""]
    status = "complete" if meta["jobs_done"] == meta["jobs_total"] else "PARTIAL"
    lines.append(f"Run {meta['date']} on {meta['machine']}; python {meta['python']}, numpy {meta['numpy']}, "
                 f"scikit-learn {meta['scikit-learn']}, arboretum git {meta['git']}.")
    lines.append(f"Command: `{meta['command']}`. Jobs: {meta['jobs_done']}/{meta['jobs_total']} ({status}).")
    lines.extend(extra)
    lines.append("")
    return lines
