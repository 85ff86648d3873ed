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
        [sys.executable, str(SCRIPT), "--no-ref", "--datasets", "zoo-1", "hepatitis", "--repeats", "1",
         "--time-limit", "10", "--out", str(out)],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    md, csv_path = out.with_suffix(".md"), out.with_suffix(".csv")
    assert md.exists() and csv_path.exists()

    rows = list(csv.DictReader(csv_path.open()))
    assert len(rows) == 2
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
    # Bytes per stored OR node: ours measured (hepatitis stores ~50,000), the reference's floor.
    section = text.split("## Memory per stored subproblem (bytes per OR node)")[1]
    hep = next(line for line in section.splitlines() if line.startswith("| hepatitis |"))
    cells = [c.strip() for c in hep.strip("|").split("|")]
    assert 50 < float(cells[1]) < 1000 and cells[3] == "276"
    assert "| zoo-1 |" not in section  # too small a graph to say anything


def test_scorecard_from_committed_results():
    """benchmarks/maptree_scorecard.py --summarize-only reads the three committed result files."""
    sys.path.insert(0, str(SCRIPT.parents[1]))
    from benchmarks.maptree_scorecard import scorecard

    text = "\n".join(scorecard("test"))
    for goal in ("median time to certificate on hepatitis", "median time to certificate on vote",
                 "bytes per stored OR node", "certified within 10 minutes", "60 s log posterior"):
        assert goal in text
