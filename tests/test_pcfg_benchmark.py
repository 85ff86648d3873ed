"""Smoke test of benchmarks/pcfg_tables.py (one small dataset, no performance runs)."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "pcfg_tables.py"


def test_pcfg_tables_script_runs(tmp_path):
    out = tmp_path / "tables"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--datasets", "caesarian", "--trials", "1", "--folds", "3", "--no-perf",
         "--out", str(out)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = list(csv.DictReader(Path(str(out) + "_folds.csv").open()))
    assert len(rows) == 3 and {r["dataset"] for r in rows} == {"caesarian"}
    summary = list(csv.DictReader(out.with_suffix(".csv").open()))
    assert len(summary) == 1 and 0.0 <= float(summary[0]["map_acc"]) <= 1.0
    assert float(summary[0]["cart_size"]) > float(summary[0]["map_size"]) >= 1
