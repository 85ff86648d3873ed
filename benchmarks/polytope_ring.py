#!/usr/bin/env python
"""Convex polytope trees on the ring (spec-003 §4.2 / §5.4 replica of the paper's Figure 1).

U([-1, 1]^2), class 1 iff 0.5 < |x| < 0.8; 2,000 training and 10,000 test points per seed.
Side by side in one run, seeds 0-4: CPT at depth 2 with its defaults, CPT(K=1) at depth 2 (oblique
splits), CART (entropy) at depths 2-10, obliquetree and neural-trees' soft decision tree at depth 2.
Goals (issue 21): CPT test AUC >= 0.98 in >= 4/5 seeds with <= 4 leaves, fit < 10 s; CART needs
depth >= 8 for 0.9; CPT(K=1) at depth 2 <= 0.75.

Usage::

    python benchmarks/polytope_ring.py            # 5 seeds
    python benchmarks/polytope_ring.py --quick    # 2 seeds, no peers

Results: ``benchmarks/results/polytope_ring[_quick].{csv,md,png}`` (the PNG: the fitted polytopes of
seed 0 and the training curves).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import polytope_common as C  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--figure-only", action="store_true", help="only redraw the PNG (fits seed 0 again)")
    args = ap.parse_args(argv)
    seeds = range(2 if args.quick else args.seeds)
    stem = "polytope_ring" + ("_quick" if args.quick else "")
    if args.figure_only:
        Xtr, ytr = C.ring(2000, 0)
        figure(C.cpt(2, 0).fit(Xtr, ytr), Xtr, ytr, stem)
        return
    rows = []
    fitted = None
    for seed in seeds:
        Xtr, ytr = C.ring(2000, seed)
        Xte, yte = C.ring(10000, 10_000 + seed)
        methods = {"CPT d2": lambda: C.cpt(2, seed), "CPT(K=1) d2": lambda: C.cpt(2, seed, max_facets=1)}
        methods.update({f"CART d{d}": (lambda d=d: C.cart(d, seed)) for d in range(2, 11)})
        if not args.quick:
            methods.update({"obliquetree d2": lambda: C.obliquetree(2, seed),
                            "SDT soft d2": lambda: C.SDT(2, seed, max_epochs=100, batch_size=250),
                            "SDT hard d2": lambda: C.SDT(2, seed, hard=True, max_epochs=100, batch_size=250)})
        for name, make in methods.items():
            row = {"method": name, "seed": seed, **C.evaluate(make, Xtr, ytr, Xte, yte, binary_auc=True)}
            rows.append(row)
            print(f"seed {seed} {name}: auc {row['auc']:.4f} acc {row['acc']:.4f} leaves {row['leaves']} "
                  f"fit {row['fit_s']:.1f}s", flush=True)
        if seed == 0:
            fitted = (C.cpt(2, 0).fit(Xtr, ytr), Xtr, ytr)
    import pandas as pd

    df = pd.DataFrame(rows)
    C.RESULTS.mkdir(exist_ok=True)
    df.to_csv(C.RESULTS / f"{stem}.csv", index=False)
    cpt = df[df.method == "CPT d2"]
    k1 = df[df.method == "CPT(K=1) d2"]
    cart_mean = df[df.method.str.startswith("CART")].groupby("method", sort=False)["auc"].mean()
    first_cart_09 = next((m for m, v in cart_mean.items() if v >= 0.9), "none")
    goals = [
        f"- CPT d2 AUC >= 0.98 with <= 4 leaves in {int(((cpt.auc >= 0.98) & (cpt.leaves <= 4)).sum())}/"
        f"{len(cpt)} seeds (goal >= 4/5); fit time mean {cpt.fit_s.mean():.1f} s wall, "
        f"{cpt.cpu_s.mean():.1f} s CPU (goal < 10 s); {cpt.epochs_per_s.mean():.0f} epochs/s.",
        f"- Effective facets per node (root, second node) by seed: {', '.join(cpt.facets.astype(str))}; "
        f"refined tree kept in {int(cpt.refined.sum())}/{len(cpt)} seeds.",
        f"- CART: first depth with mean AUC >= 0.9: {first_cart_09} (goal: >= 8).",
        f"- CPT(K=1) d2 mean AUC {k1.auc.mean():.4f}, max {k1.auc.max():.4f} (goal <= 0.75).",
    ]
    paper = {"CPT d2": "highest AUC, 3 leaves, heptagons (number stripped)",
             "CART d10": "needs depth ≈ 10 (number stripped)"}
    lines = C.header("Convex polytope trees: the ring (spec-003 §4.2 replica)",
                     f"python benchmarks/polytope_ring.py{' --quick' if args.quick else ''}",
                     ["U([-1,1]^2), class 1 iff 0.5 < |x| < 0.8; 2,000 train / 10,000 test per seed; "
                      "CPT with its defaults (K=30, prior with warm-up, lr 0.01, epochs/batch 'auto', "
                      "3 restarts, refinement) at max_depth=2.", "", *goals])
    lines += C.summary_table(rows, "auc", paper)
    lines += ["", "Test accuracy:", ""] + C.summary_table(rows, "acc")
    (C.RESULTS / f"{stem}.md").write_text("\n".join(lines) + "\n")
    if fitted is not None:
        figure(*fitted, stem)
    print((C.RESULTS / f"{stem}.md").read_text())


def figure(clf, X, y, stem: str) -> None:
    """The fitted polytopes of seed 0 over the training data, and the training curves."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from arboretum.plot import plot_polytopes, plot_training_curves

    fig, axes = plt.subplots(1, 2, figsize=(12, 5))
    plot_polytopes(clf, X, y, ax=axes[0], resolution=300)
    axes[0].set_title(f"CPT depth 2 on the ring (seed 0): {clf.tree_.n_leaves} leaves")
    plot_training_curves(clf, ax=axes[1])
    axes[1].set_title("soft training objective per epoch")
    fig.tight_layout()
    fig.savefig(C.RESULTS / f"{stem}.png", dpi=110)


if __name__ == "__main__":
    main()
