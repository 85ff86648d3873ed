"""Smoke test of benchmarks/maptree_reference.py (ours only, zoo-1, one repeat)."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "maptree_reference.py"


def test_benchmark_script_no_ref(tmp_path):
    out = tmp_path / "x"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--no-ref", "--datasets", "zoo-1", "--repeats", "1",
         "--time-limit", "10", "--out", str(out)],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    md, csv_path = out.with_suffix(".md"), out.with_suffix(".csv")
    assert md.exists() and csv_path.exists()

    rows = list(csv.DictReader(csv_path.open()))
    assert len(rows) == 1
    row = rows[0]
    assert row["dataset"] == "zoo-1" and row["impl"] == "ours" and row["status"] == "ok"
    assert row["certified"] == "True"
    assert float(row["log_posterior"]) == pytest.approx(-19.918, abs=1e-3)
    assert float(row["rss_peak_mb"]) >= float(row["rss_baseline_mb"]) > 0

    text = md.read_text()
    assert "zoo-1" in text and "-19.917999" in text
    assert "| zoo-1 | 101 x 36 | ours | 1 | yes |" in text
    assert "reference: **not run**" in text
    assert "numba compile (cold cache)" in text
    assert text.strip() in proc.stdout  # the Markdown is printed too
