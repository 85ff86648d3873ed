#!/usr/bin/env python
"""Draw the README's figures into docs/images/ (run: python docs/make_figures.py).

* ``maptree_iris_tree.png``: the certified MAP tree of Iris (MAPTree), ``plot_tree``;
* ``pcfg_iris_posterior.png``: exact BCART-PCFG posterior summaries of Iris,
  ``plot_split_inclusion`` and ``plot_tree_sizes`` side by side;
* ``decision_regions.png``: the decision regions of two models of Iris's two petal
  measurements, the MAP tree (MAPTree) and the exact posterior predictive
  (BCART-PCFG, shaded by confidence), ``plot_decision_regions``;
* ``anytime.png``: MAPTree's anytime curve on the bundled primary-tumor data (336
  rows, 31 binary features), certified after a few seconds, ``plot_anytime``.

Everything is deterministic but the times of ``anytime.png``, which are this
machine's (its trees, bounds and expansions are not); MAPTree certifies Iris well
within its time limit.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from sklearn.datasets import load_iris  # noqa: E402

from arboretum import MAPTreeClassifier, PCFGTreeClassifier, load_dataset  # noqa: E402
from arboretum.plot import (  # noqa: E402
    plot_anytime,
    plot_decision_regions,
    plot_split_inclusion,
    plot_tree,
    plot_tree_sizes,
)

OUT = Path(__file__).resolve().parent / "images"
DPI = 100


def save(fig, name: str) -> None:
    path = OUT / name
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    print(f"{path.relative_to(OUT.parents[1])}: {path.stat().st_size / 1024:.0f} KB")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    iris = load_iris(as_frame=True)
    X, y = iris.data, iris.target_names[iris.target]

    clf = MAPTreeClassifier(time_limit=10).fit(X, y)
    ax = plot_tree(clf)
    ax.set_title(f"MAPTree on Iris: log posterior {clf.log_posterior_:.2f}, certified: {clf.optimal_}",
                 fontsize="medium", pad=28)
    save(ax.figure, "maptree_iris_tree.png")

    pcfg = PCFGTreeClassifier().fit(X, y)
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), width_ratios=[1, 1.15])
    plot_split_inclusion(pcfg, ax=axes[0])
    plot_tree_sizes(pcfg, ax=axes[1])
    fig.tight_layout()
    save(fig, "pcfg_iris_posterior.png")

    petals = X[["petal length (cm)", "petal width (cm)"]]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    models = [("MAPTree: the MAP tree", MAPTreeClassifier(time_limit=10)),
              ("BCART-PCFG: exact posterior predictive", PCFGTreeClassifier())]
    for ax, (title, model) in zip(axes, models):
        plot_decision_regions(model.fit(petals, y), petals, y, ax=ax)
        ax.set_title(title, fontsize="medium")
    axes[1].set_ylabel("")
    fig.tight_layout()
    save(fig, "decision_regions.png")

    X, y = load_dataset("primary-tumor", return_X_y=True)
    clf = MAPTreeClassifier().fit(X, y)
    if not clf.optimal_:
        raise RuntimeError("MAPTree did not certify primary-tumor; the figure would not show a certificate")
    ax = plot_anytime(clf)
    ax.set_title(f"MAPTree on primary-tumor ({X.shape[0]} rows, {X.shape[1]} binary features): "
                 f"{len(clf.history_)} recorded points", fontsize="medium")
    save(ax.figure, "anytime.png")


if __name__ == "__main__":
    main()
