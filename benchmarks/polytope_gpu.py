#!/usr/bin/env python
"""Convex polytope trees on a GPU against the same machine's CPU (issue 21: "where a GPU is available,
the same fits on it and the speed-up").

The same fits as ``polytope_ring.py`` and ``polytope_real.py`` (same depth, settings, protocol and
seeds), once with ``device="cpu"`` (torch on one thread, as every CPU figure of the polytope
benchmarks) and once with ``device="cuda"``, in one process on one machine; the speed-up is CPU wall
over GPU wall of the same fit.  Each finished fit is appended to ``<out>/polytope_gpu.csv`` at once,
so a run cut short keeps what it did; ``--budget`` skips the fits that would start after it.

On a machine without RDKit the molecule fingerprints are read from ``ARBORETUM_ECFP_CACHE`` (the
``polytope_ecfp_<name>.npz`` files that ``polytope_common.molecule_features`` writes), and
``ARBORETUM_DATASETS`` points to a copy of the offline data sets.

Status: this script has run here on the CPU only.  No GPU has been lent to the sessions that built
the polytope trees (the device tool refused every request), so no ``polytope_gpu.md`` results exist
yet and the CUDA path of ``ConvexPolytopeTreeClassifier`` is unmeasured; the script is what a session
with a GPU runs (one command, data carried with ``ARBORETUM_DATASETS``/``ARBORETUM_ECFP_CACHE``).

Usage::

    python benchmarks/polytope_gpu.py                                   # ring, connect4, letter, bace, hiv
    python benchmarks/polytope_gpu.py --datasets hiv,bace --devices cuda --seeds 5 --k1
    python benchmarks/polytope_gpu.py --report benchmarks/results/polytope_gpu.csv   # Markdown only

Results: ``benchmarks/results/polytope_gpu.{csv,md}`` (or ``--out``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import polytope_common as C  # noqa: E402
from polytope_real import CONFIGS  # noqa: E402

DATASETS = ("ring", "connect4", "letter", "bace", "hiv")


def load(name: str):
    """(Xtr, ytr, Xva, yva, Xte, yte, depth, settings, metric); validation rows None where the protocol has none."""
    if name == "ring":
        Xtr, ytr = C.ring(2000, 0)
        Xte, yte = C.ring(10000, 10_000)
        return Xtr, ytr, None, None, Xte, yte, 2, {}, "auc", None
    cfg = CONFIGS[name]
    data = cfg["load"]()
    Xva, yva = (data[2], data[3]) if len(data) == 6 else (None, None)
    return data[0], data[1], Xva, yva, data[-2], data[-1], cfg["depth"], cfg["cpt"], cfg["metric"], cfg.get("select")


def make(depth: int, seed: int, settings: dict, Xva, yva, select, device: str, k1: bool):
    """The benchmark's CPT (``polytope_common.protocol_cpt``) on ``device``; ``k1``: one facet per split."""
    return C.protocol_cpt(depth, seed, Xva, yva, select, **{**settings, "device": device,
                                                             **({"max_facets": 1} if k1 else {})})


def run(args: argparse.Namespace) -> Path:
    import pandas as pd
    import torch

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    csv = out / "polytope_gpu.csv"
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    start = time.perf_counter()
    for name in args.datasets.split(","):
        Xtr, ytr, Xva, yva, Xte, yte, depth, settings, metric, select = load(name)
        for seed in range(args.seeds):
            for k1 in ([False, True] if args.k1 else [False]):
                for device in args.devices.split(","):
                    if time.perf_counter() - start > args.budget:
                        print(f"budget spent: {name} seed {seed} {device} skipped", flush=True)
                        continue
                    if device == "cuda" and not torch.cuda.is_available():
                        print("no GPU here: cuda fits skipped", flush=True)
                        continue
                    method = "CPT(K=1)" if k1 else "CPT"
                    try:
                        row = C.evaluate(lambda: make(depth, seed, settings, Xva, yva, select, device, k1),
                                         Xtr, ytr, Xte, yte, metric == "auc")
                    except Exception as exc:  # reported, not fatal: the other fits still run
                        print(f"{name} seed {seed} {method} {device} failed: {exc!r}", flush=True)
                        continue
                    row = {"dataset": name, "method": method, "device": device, "seed": seed, "depth": depth,
                           "metric": metric, "score": row[metric], "gpu": gpu, "torch": torch.__version__,
                           "n_train": len(ytr), "n_features": Xtr.shape[1], **row}
                    pd.DataFrame([row]).to_csv(csv, mode="a", header=not csv.exists(), index=False)
                    print(f"{name} seed {seed} {method} {device}: {metric} {row['score']:.4f} leaves "
                          f"{row['leaves']} fit {row['fit_s']:.1f}s ({row['epochs']} epochs, "
                          f"{row['epochs_per_s']:.1f}/s)", flush=True)
    return csv


def report(csv: Path, command: str) -> str:
    """The Markdown table of a results CSV: per data set and method, CPU and GPU wall and the speed-up."""
    import pandas as pd

    df = pd.read_csv(csv)
    lines = ["# Convex polytope trees on a GPU and on the same machine's CPU", "",
             f"Command: `{command}`", ""]
    gpu = ", ".join(sorted(set(df.gpu.astype(str)) - {"none"})) or "none"
    lines += [f"GPU: {gpu}; torch {', '.join(sorted(set(df.torch.astype(str))))}. CPU fits use one torch "
              "thread (as every CPU figure of the polytope benchmarks); the GPU fits use the same settings, "
              "seeds and protocol (`polytope_real.py`'s per data set; the ring's is `polytope_ring.py`'s). "
              "Speed-up: mean CPU wall over mean GPU wall of the seeds run on both.", ""]
    lines += ["| data set | method | train rows x features | seeds (cpu/gpu) | score cpu | score gpu | leaves gpu "
              "| fit s cpu | fit s gpu | speed-up | epochs/s cpu | epochs/s gpu |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for (name, method), g in df.groupby(["dataset", "method"], sort=False):
        cpu, cuda = g[g.device == "cpu"], g[g.device == "cuda"]
        both = sorted(set(cpu.seed) & set(cuda.seed))

        def fmt(frame, col, digits=4):
            if not len(frame):
                return "-"
            m = frame[col].mean()
            se = frame[col].std(ddof=1) / np.sqrt(len(frame)) if len(frame) > 1 else None
            return f"{m:.{digits}f}" + (f" ± {se:.{digits}f}" if se is not None else "")

        speed = (cpu[cpu.seed.isin(both)].fit_s.mean() / cuda[cuda.seed.isin(both)].fit_s.mean()) if both else None
        lines.append(f"| {name} | {method} | {g.n_train.iloc[0]} x {g.n_features.iloc[0]} | {len(cpu)}/{len(cuda)} "
                     f"| {fmt(cpu, 'score')} | {fmt(cuda, 'score')} | {fmt(cuda, 'leaves', 1)} "
                     f"| {fmt(cpu, 'fit_s', 1)} | {fmt(cuda, 'fit_s', 1)} "
                     f"| {'-' if speed is None else f'{speed:.1f}x'} | {fmt(cpu, 'epochs_per_s', 1)} "
                     f"| {fmt(cuda, 'epochs_per_s', 1)} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--devices", default="cpu,cuda")
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--k1", action="store_true", help="also CPT(K=1) (max_facets=1)")
    ap.add_argument("--budget", type=float, default=float("inf"), help="seconds after which no fit starts")
    ap.add_argument("--out", default=str(C.RESULTS))
    ap.add_argument("--report", default=None, help="only write the Markdown of this CSV")
    args = ap.parse_args(argv)
    command = "python benchmarks/polytope_gpu.py " + " ".join(argv if argv is not None else sys.argv[1:])
    csv = Path(args.report) if args.report else run(args)
    text = report(csv, command.strip())
    csv.with_suffix(".md").write_text(text)
    print(text, flush=True)


if __name__ == "__main__":
    main()
