#!/usr/bin/env python
"""Time to a certificate of MAPTreeRegressor, with and without the leaf-share bound (issue 19, item 7).

Each problem is fitted twice in the same process, one run right after the other:
``before`` with the private switch ``arboretum.maptree.search._LEAF_SHARES = False`` (the
regression bound of main at d75ba45: ``max(B[n], L0[n] + q)``) and ``after`` with it on (``max(B[n],
L0[n] + q, t)``, :func:`arboretum.maptree.bounds.leaf_share_terms`).  Both runs use the same
standardised targets (item 3), so only the bound differs.  The numba kernels are loaded on a
small problem first; the clock of each fit is MAPTree's own ``search_time_``, and ``fit_time_``
includes the leaf-share precomputation.

Problems: the step functions of issue 19 (``X = normal(200, 3)``, ``y = 2[x0 > 0] + 0.3 N``; and
``X = uniform(300, 4)``, ``y = 3[x0 > 0.5] + 1.5[x1 > 0.3] + N(0, 0.3)``; seeds 0-2),
``sklearn.datasets.load_diabetes`` and the bundled regression examples of the README and of the
estimator's docstring.

Usage::

    python benchmarks/maptree_regression.py                       # time limit 60 s per fit
    python benchmarks/maptree_regression.py --time-limit 10 --quick

Writes ``results/maptree_regression.csv`` and ``.md`` (``--out`` changes the stem).
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.engine import machine_info  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def problems(quick: bool):
    """``(name, X, y)`` of every problem."""
    for seed in range(1 if quick else 3):
        rng = np.random.default_rng(seed)
        X = rng.normal(size=(200, 3))
        yield f"step 200x3 seed {seed}", X, 2.0 * (X[:, 0] > 0) + 0.3 * rng.normal(size=200)
    for seed in range(1 if quick else 3):
        rng = np.random.default_rng(seed)
        X = rng.random((300, 4))
        yield f"step 300x4 seed {seed}", X, 3.0 * (X[:, 0] > 0.5) + 1.5 * (X[:, 1] > 0.3) + rng.normal(0, 0.3, 300)
    rng = np.random.default_rng(0)  # README, "Regression: MAPTreeRegressor"
    X = rng.integers(0, 6, size=(200, 3))
    yield "README example 200x3", X, np.where(X[:, 0] <= 2, 1.0, np.where(X[:, 1] <= 3, 3.0, 6.0)) + rng.normal(0, 0.5, 200)
    rng = np.random.default_rng(0)  # MAPTreeRegressor's docstring
    X = rng.integers(0, 5, size=(60, 2))
    yield "docstring example 60x2", X, np.where(X[:, 0] >= 2, 3.0, -1.0) + 0.1 * rng.normal(size=60)
    if not quick:
        from sklearn.datasets import load_diabetes

        X, y = load_diabetes(return_X_y=True)
        yield "load_diabetes 442x10", X, y


def fit(X, y, time_limit: float, shares: bool) -> dict:
    from arboretum import LimitWarning, MAPTreeRegressor
    from arboretum.maptree import search

    search._LEAF_SHARES = shares
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LimitWarning)
        reg = MAPTreeRegressor(time_limit=time_limit).fit(X, y)
    return {
        "bound": "leaf shares" if shares else "before (d75ba45 bound)",
        "certified": reg.optimal_,
        "search_s": round(reg.search_time_, 3),
        "fit_s": round(reg.fit_time_, 3),
        "gap_nats": round(reg.gap_, 3),
        "log_posterior": round(reg.log_posterior_, 4),
        "bound_log_posterior": round(reg.log_posterior_bound_, 4),
        "expansions": reg.n_expansions_,
        "leaves": reg.tree_.n_leaves,
        "r2_train": round(reg.score(X, y), 4),
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--quick", action="store_true", help="one seed of each step problem, no diabetes")
    ap.add_argument("--out", default=str(RESULTS / "maptree_regression"))
    args = ap.parse_args(argv)
    from arboretum import MAPTreeRegressor

    MAPTreeRegressor(max_expansions=50).fit(np.eye(8), np.arange(8.0))  # load the kernels
    rows = []
    for name, X, y in problems(args.quick):
        for shares in (False, True):
            row = {"problem": name, **fit(X, y, args.time_limit, shares)}
            rows.append(row)
            print(row, flush=True)
    out = Path(args.out)
    with open(out.with_suffix(".csv"), "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    cols = list(rows[0])
    lines = [
        "# MAPTreeRegressor: time to a certificate, before and after the leaf-share bound",
        "",
        f"`python benchmarks/maptree_regression.py --time-limit {args.time_limit:g}"
        f"{' --quick' if args.quick else ''}`; {machine_info()}; {time.strftime('%Y-%m-%d')}.",
        "Both bounds run in the same process on the same standardised targets (switch "
        "`arboretum.maptree.search._LEAF_SHARES`); `search_s` is the search's own clock, `fit_s` the "
        "whole fit. Timings are noisy (shared machine): compare the two rows of a problem.",
        "",
        "| " + " | ".join(cols) + " |",
        "|" + "---|" * len(cols),
    ]
    lines += ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in rows]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
