#!/usr/bin/env python
"""Issue 3's scorecard: the speed, memory, certificate and anytime goals, measured in one run.

Runs the three MAPTree benchmarks one after the other on the same sources
(the git commit is recorded and checked), then writes
``benchmarks/results/maptree_scorecard.md`` with every goal, our figure, the
reference's and whether the goal is met:

1. ``maptree_certify.py``: each CP4IM dataset for up to ``--certify-limit``
   seconds (goal: at least 8 of 16 certified);
2. ``maptree_anytime.py``: ours, the reference and CART depths 2-6 after 60 s
   (goal: ours at least the best of them on every dataset);
3. ``maptree_reference.py``: time to certificate and memory against the
   reference C++ MAPTree on zoo-1, hepatitis, primary-tumor and vote (goals:
   median time at most 0.5x the reference's on hepatitis, primary-tumor and
   vote; bytes per stored OR node at most the reference's).

Usage::

    python benchmarks/maptree_scorecard.py                  # all three, then the scorecard (~1.5 h)
    python benchmarks/maptree_scorecard.py --summarize-only # the scorecard from the committed results
    python benchmarks/maptree_scorecard.py --n-jobs 1       # certify one dataset at a time

The certify table runs ``--n-jobs`` datasets at once with ``--memory-limit``
each, except the ``--alone`` datasets (default mushroom), which run last, one
at a time with ``--alone-memory-limit``, beside the anytime table; the
reference benchmark follows.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
sys.path.insert(0, str(HERE.parent))

from benchmarks.maptree_certify import CP4IM  # noqa: E402
from benchmarks.maptree_reference import REF_MIN_BYTES_PER_OR  # noqa: E402

SPEED_DATASETS = ("hepatitis", "primary-tumor", "vote")
TIME_RATIO_GOAL = 0.5
CERTIFY_GOAL = 8


def _git_commit() -> str:
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE.parent, capture_output=True,
                          text=True, check=False).stdout.strip() or "unknown"


def _read_csv(name: str) -> list[dict]:
    with open(RESULTS / f"{name}.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def run_all(a) -> None:
    """Certify table (``--alone`` datasets last, one at a time with more memory, beside the anytime
    table), then the reference benchmark."""
    py = sys.executable
    certify = [py, str(HERE / "maptree_certify.py"), "--time-limit", str(a.certify_limit)]
    first = [d for d in CP4IM if d not in a.alone]
    subprocess.run([*certify, "--datasets", *first, "--memory-limit", str(a.memory_limit),
                    "--n-jobs", str(a.n_jobs)], check=True)
    anytime = subprocess.Popen([py, str(HERE / "maptree_anytime.py")])
    if a.alone:
        subprocess.run([*certify, "--datasets", *a.alone, "--memory-limit", str(a.alone_memory_limit),
                        "--n-jobs", "1", "--resume"], check=True)
    subprocess.run([py, str(HERE / "maptree_reference.py")], check=True)
    if anytime.wait() != 0:
        raise SystemExit("maptree_anytime.py failed")


def scorecard(commit: str) -> list[str]:
    """The scorecard's Markdown lines from the three benchmarks' committed results."""
    cert = _read_csv("maptree_certify")
    any_rows = _read_csv("maptree_anytime")
    ref_rows = [r for r in _read_csv("maptree_reference") if r["status"] == "ok"]
    with open(RESULTS / "maptree_certify.jsonl") as fh:
        cert_commits = sorted({json.loads(line).get("git", "?") for line in fh if line.strip()})
    n_cert = sum(r["certified"] == "True" for r in cert)
    n_any = sum(r["ours_at_least_best"] == "True" for r in any_rows)

    def med(ds: str, impl: str, key: str) -> float | None:
        vals = [float(r[key]) for r in ref_rows if r["dataset"] == ds and r["impl"] == impl and r[key] != ""]
        return statistics.median(vals) if vals else None

    lines = ["# MAPTree scorecard (issue 3)", "",
             f"Sources: git {commit}. Certify rows measured at {', '.join(cert_commits)}; the anytime and "
             "reference files name theirs in their headers. Command: `python benchmarks/maptree_scorecard.py`.",
             "", "| goal | ours | reference | met |", "|---|---|---|---|"]
    ratios = []
    for ds in SPEED_DATASETS:
        o, r = med(ds, "ours", "time_s"), med(ds, "ref", "time_s")
        ratio = o / r if o is not None and r else None
        ratios.append(ratio)
        lines.append(f"| median time to certificate on {ds} <= {TIME_RATIO_GOAL}x the reference's | "
                     f"{o:.3g} s ({ratio:.3g}x) | {r:.3g} s | {ratio is not None and ratio <= TIME_RATIO_GOAL} |"
                     if ratio is not None else f"| time to certificate on {ds} | not measured | | False |")
    per_node = []
    for ds in SPEED_DATASETS:
        g, n = med(ds, "ours", "graph_mb"), med(ds, "ours", "or_nodes")
        if g is not None and n:
            per_node.append((ds, g * 2**20 / n))
    worst = max((b for _, b in per_node), default=None)
    lines.append("| bytes per stored OR node <= the reference's | "
                 + ", ".join(f"{ds} {b:.0f}" for ds, b in per_node)
                 + f" | at least {REF_MIN_BYTES_PER_OR:.0f} (from its data structures) | "
                 + f"{worst is not None and worst <= REF_MIN_BYTES_PER_OR} |")
    lines.append(f"| CP4IM datasets certified within 10 minutes >= {CERTIFY_GOAL} of 16 | {n_cert} of {len(cert)} "
                 f"| 4 of 16 within 60 s (anchors.md) | {n_cert >= CERTIFY_GOAL} |")
    lines.append(f"| 60 s log posterior >= the reference's and CART d2-d6's, every dataset | {n_any} of "
                 f"{len(any_rows)} | | {n_any == len(any_rows) == 16} |")
    lines += ["", "Details: `maptree_certify.md` (all 16 datasets with gap, expansions, peak memory), "
              "`maptree_anytime.md`, `maptree_reference.md` (bytes per OR node: its last section)."]
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--summarize-only", action="store_true", help="only write the scorecard")
    p.add_argument("--n-jobs", type=int, default=2, help="datasets the certify table runs at once (default 2)")
    p.add_argument("--certify-limit", type=float, default=600.0, help="seconds per dataset (default 600)")
    p.add_argument("--memory-limit", type=float, default=8192.0,
                   help="MiB of search graph per certify run (default 8192, two run at once on 24 GiB)")
    p.add_argument("--alone", nargs="*", default=["mushroom"],
                   help="datasets certified last, one at a time (default: mushroom, whose graph "
                        "outgrows 8 GiB before its certificate)")
    p.add_argument("--alone-memory-limit", type=float, default=16384.0,
                   help="MiB of search graph for the --alone datasets (default 16384)")
    a = p.parse_args(argv)
    commit = _git_commit()
    if not a.summarize_only:
        run_all(a)
    lines = scorecard(commit)
    (RESULTS / "maptree_scorecard.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
