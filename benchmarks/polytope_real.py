#!/usr/bin/env python
"""Convex polytope trees on the paper's real data sets (spec-003 §4.5-4.6), peers side by side.

Data sets (offline copies, nothing is downloaded): Connect-4 (126 one-hot features, the reference
code's seed-0 split, train + validation merged), Letter (first 16,000 rows train), Bace and HIV
(2048-bit ECFP4 from RDKit, a deterministic Bemis-Murcko scaffold split 80/10/10 -- MoleculeNet's rule,
not the LCN authors' pickled split, which is not available), and scikit-learn's digits as the
stand-in for MNIST (no installed package ships MNIST in its wheel).

Methods, one fixed setting each (no tuning), seeds varying the models only: CPT at the dataset's
depth, CPT(K=1) at the same depth, CART at the same depth and at the depth CART needs (its tuned
depth in the paper), obliquetree and neural-trees' soft decision tree (soft, and its hard export)
at the same depth.  The paper's numbers and TnT's (NeurIPS 2021) are printed beside ours.

Usage::

    python benchmarks/polytope_real.py --dataset connect4              # 5 seeds
    python benchmarks/polytope_real.py --dataset letter --quick        # 1 seed, smaller depth
    python benchmarks/polytope_real.py --dataset all --quick
    python benchmarks/polytope_real.py --dataset hiv --seeds 1 --methods "CPT linear+ES,CPT(K=1) linear+ES"

``--methods`` runs only the named methods and keeps the other rows of the previous run's CSV (only the
(method, seed) pairs that ran are replaced, so runs of disjoint methods or seeds may go at once);
``--first-seed K`` with it runs seeds K and up; ``--report`` fits nothing and rewrites the Markdown from
the CSV (after rows of several runs were merged into it).  Where CPT was chosen on validation rows (Bace, HIV), a
second table compares it with CPT(K=1) at no more leaves (see ``_no_more_leaves``).
On Bace and HIV two more rows go beyond the paper: ``CPT linear+ES`` and ``CPT(K=1) linear+ES`` start
every node's experts along one ridge classifier (``init="linear"``) and keep each stump's epoch of lowest
soft loss on a held-out fifth of its rows (``early_stopping=0.2``); the ``by scaffold`` rows hold out
whole scaffolds instead (``fit(..., groups=...)``).

Results: ``benchmarks/results/polytope_<dataset>[_quick].{csv,md}``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import polytope_common as C  # noqa: E402

#: Per data set: loader, metric, CPT depth (the paper's, Table 3), CPT settings, CART's deep depth,
#: the paper's numbers (Table 2/3) and TnT's, and the quick variant (depth, rows of the training set).
CONFIGS = {
    "connect4": dict(load=C.connect4, metric="acc", depth=2, cpt=dict(max_facets=40, epochs=40, refine_epochs=40),
                     select=0.2,
                     cart_deep=33, quick=(2, None),
                     paper={"CPT": "81.16 ± 0.51 (4 leaves, D2)", "CPT(K=1)": "78.89 ± 0.23 (342 leaves, D10)",
                            "CART deep": "78.29 ± 0.21 (5744 leaves, D33)", "TnT": "78.85"}),
    "letter": dict(load=C.letter, metric="acc", depth=11, cpt=dict(use_prior=False), cart_deep=27, quick=(6, None),
                   paper={"CPT": "90.51 ± 0.81 (463 leaves, D11)", "CPT(K=1)": "84.13 ± 0.32 (705 leaves, D17)",
                          "CART deep": "86.07 ± 0.14 (1580 leaves, D27)", "TnT": "86.62"}),
    "bace": dict(load=lambda: C.molecules("bace", with_valid=True), metric="auc", depth=7,
                 cpt=dict(use_prior=False, scaling="global"),
                 cart_deep=12,
                 quick=(3, None),
                 paper={"CPT": "84.7 ± 1.6 (21 leaves, D7)", "CPT(K=1)": "82.06 ± 2.4 (19 leaves, D9)",
                        "CART deep": "65.2 ± 2.4"}),
    "hiv": dict(load=lambda: C.molecules("hiv", with_valid=True), metric="auc", depth=5,
                cpt=dict(use_prior=False, scaling="global"),
                cart_deep=12,
                quick=(3, 8000),
                paper={"CPT": "73.1 ± 1.4 (24 leaves, D5)", "CPT(K=1)": "71.12 ± 2.3 (25 leaves, D7)",
                       "CART deep": "54.4 ± 0.9"}),
    "digits": dict(load=C.digits, metric="acc", depth=6, cpt=dict(), cart_deep=12, quick=(4, None),
                   paper={"CPT": "MNIST: 97.01 ± 0.20 (98 leaves, D8)", "CPT(K=1)": "MNIST: 95.74 ± 0.10 (D11)",
                          "CART deep": "MNIST: 88.05 ± 0.02 (D19)", "TnT": "MNIST: 90.87"}),
}
#: neural-trees' soft decision tree: Adam at lr 0.01 (its default), 20 epochs of batches of 256.
SDT_KW = {"max_epochs": 20, "batch_size": 256}


#: Beyond the paper, on the molecule sets: a linear start and early stopping (see the module docstring).
LINEAR_ES = dict(init="linear", early_stopping=0.2)


def _selected(df, methods: tuple[str, ...]) -> str:
    """'Selected (depth, refined) by seed: ...' for the methods chosen on validation rows."""
    import pandas as pd

    if "selected_depth" not in df:
        return ""

    def one(r) -> str:  # '(?)' for a row that did not record its choice
        return "(?)" if pd.isna(r.selected_depth) else f"({int(r.selected_depth)},{'r' if r.refined else 'g'})"

    return "Selected (depth, refined) by seed: " + ", ".join(
        f"{m}: " + " ".join(one(r) for r in df[df.method == m].sort_values("seed").itertuples())
        for m in methods) + "."


def _no_more_leaves(df, metric: str) -> list[str]:
    """CPT against CPT(K=1) at no more leaves: per seed, CPT's tree chosen on the validation rows among its
    greedy trees (every depth, ``by_depth``) with at most the leaves of CPT(K=1)'s chosen tree of the same
    seed; CPT's own choice where it already has no more.  Test scores choose nothing."""
    import json

    if "by_depth" not in df:
        return []
    out = []
    for cpt in df.method.unique():
        k1 = cpt.replace("CPT", "CPT(K=1)", 1)
        if not (cpt == "CPT" or cpt.startswith("CPT ")) or k1 not in set(df.method):
            continue
        a, b = df[df.method == cpt].set_index("seed"), df[df.method == k1].set_index("seed")
        # by_depth is needed only where CPT's own tree has more leaves
        seeds = sorted(s for s in set(a.index) & set(b.index)
                       if isinstance(a.at[s, "by_depth"], str) or a.at[s, "leaves"] <= b.at[s, "leaves"])
        if not seeds:
            continue
        ours, leaves, theirs, their_leaves = [], [], [], []
        for s in seeds:
            budget, by_depth = int(b.at[s, "leaves"]), a.at[s, "by_depth"]
            score, n = C.no_more_leaves(float(a.at[s, metric]), int(a.at[s, "leaves"]),
                                        json.loads(by_depth) if isinstance(by_depth, str) else None, budget)
            ours.append(score)
            leaves.append(n)
            theirs.append(float(b.at[s, metric]))
            their_leaves.append(budget)
        se = lambda v: np.std(v, ddof=1) / np.sqrt(len(v)) if len(v) > 1 else float("nan")  # noqa: E731
        out.append(f"| {cpt} | {np.mean(ours):.4f} ± {se(ours):.4f} | {np.mean(leaves):.1f} | "
                   f"{np.mean(theirs):.4f} ± {se(theirs):.4f} | {np.mean(their_leaves):.1f} | "
                   f"{sum(x > y for x, y in zip(ours, theirs))}/{len(seeds)} |")
    if not out:
        return []
    return ["", "CPT against CPT(K=1) with no more leaves: in each seed, CPT's tree is chosen on the validation "
            "rows among its greedy trees of every depth that have at most the leaves of CPT(K=1)'s tree of the "
            "same seed (CPT's own choice where it has no more); the test rows choose nothing.", "",
            f"| method | CPT {metric} | CPT leaves | CPT(K=1) {metric} | CPT(K=1) leaves | seeds CPT wins |",
            "|---|---|---|---|---|---|", *out]


def run(name: str, seeds: int, quick: bool, only: list[str] | None = None, first_seed: int = 0,
        report: bool = False) -> None:
    cfg = CONFIGS[name]
    data = cfg["load"]()
    Xtr, ytr, Xte, yte = data[0], data[1], data[-2], data[-1]
    Xva, yva = (data[2], data[3]) if len(data) == 6 else (None, None)
    depth = cfg["quick"][0] if quick else cfg["depth"]
    scaffolds = C.molecule_train_groups(name) if name in ("bace", "hiv") else None
    if quick and cfg["quick"][1] is not None and len(ytr) > cfg["quick"][1]:
        keep = np.random.RandomState(0).choice(len(ytr), cfg["quick"][1], replace=False)
        Xtr, ytr = Xtr[keep], ytr[keep]
        scaffolds = None if scaffolds is None else scaffolds[keep]
    binary = cfg["metric"] == "auc"
    rows, profile = [], None
    for seed in range(0) if report else range(first_seed, seeds):  # --report fits nothing
        def make_cpt(groups=None, **kw):
            return C.protocol_cpt(depth, seed, Xva, yva, cfg.get("select"), groups, **{**cfg["cpt"], **kw})

        methods = {
            "CPT": lambda: make_cpt(),
            "CPT(K=1)": lambda: make_cpt(max_facets=1),
            **({"CPT linear+ES": lambda: make_cpt(**LINEAR_ES),
                "CPT(K=1) linear+ES": lambda: make_cpt(max_facets=1, **LINEAR_ES),
                "CPT linear+ES by scaffold": lambda: make_cpt(scaffolds, **LINEAR_ES),
                "CPT(K=1) linear+ES by scaffold": lambda: make_cpt(scaffolds, max_facets=1, **LINEAR_ES)}
               if name in ("bace", "hiv") else {}),
            f"CART d{depth}": lambda: C.cart(depth, seed),
            "CART deep": lambda: C.cart(cfg["cart_deep"], seed),
            **({f"obliquetree d{depth}": lambda: C.obliquetree(depth, seed)} if Xtr.shape[1] <= 200 else {}),
            f"SDT soft d{min(depth, 8)}": lambda: C.SDT(min(depth, 8), seed, **SDT_KW),
            f"SDT hard d{min(depth, 8)}": lambda: C.SDT(min(depth, 8), seed, hard=True, **SDT_KW),
        }
        for method, make in methods.items():
            if only is not None and method not in only:
                continue
            try:
                row = C.evaluate(make, Xtr, ytr, Xte, yte, binary)
            except Exception as exc:  # a peer that fails is reported, not fatal
                print(f"{name} seed {seed} {method} failed: {exc!r}", flush=True)
                continue
            rows.append({"dataset": name, "method": method, "seed": seed, "depth": depth, **row})
            print(f"{name} seed {seed} {method}: {cfg['metric']} {row[cfg['metric']]:.4f} leaves {row['leaves']} "
                  f"fit {row['fit_s']:.1f}s cpu {row['cpu_s']:.1f}s", flush=True)
    if not report and (not quick or name == "connect4") and (only is None or "CPT" in only):
        profile = C.throughput(lambda: C.cpt(depth, 0, **{**cfg["cpt"], "refine": False,
                                                          "epochs": 5}), Xtr, ytr)
    import pandas as pd

    stem = f"polytope_{name}" + ("_quick" if quick else "")
    C.RESULTS.mkdir(exist_ok=True)
    df = pd.DataFrame(rows)
    kept = ""
    if report:
        if not (C.RESULTS / f"{stem}.csv").exists():
            raise SystemExit(f"--report: no {C.RESULTS / stem}.csv to rewrite the Markdown from; run the benchmark first")
        df = pd.read_csv(C.RESULTS / f"{stem}.csv")
        rows = df.to_dict("records")
    elif only is not None and (C.RESULTS / f"{stem}.csv").exists():
        old = pd.read_csv(C.RESULTS / f"{stem}.csv")
        # Only the (method, seed) pairs this run produced replace earlier rows, so that runs of disjoint
        # seeds or methods may go at once (the CSV is read back just before it is written).
        ran = set(zip(df.method, df.seed)) if len(df) else set()
        old = old[[(m, s) not in ran for m, s in zip(old.method, old.seed)]]
        named = old.method.isin(only)
        reused = ", ".join(f"{m} seeds {sorted(int(s) for s in old[old.method == m].seed)}"
                           for m in only if (old.method == m).any())
        kept = ", ".join(old[~named].method.unique()) + (f"; and of {reused}" if reused else "")
        df = pd.concat([old, df], ignore_index=True)
        rows = df.to_dict("records")
    df.to_csv(C.RESULTS / f"{stem}.csv", index=False)
    command = f"python benchmarks/polytope_real.py --dataset {name}" + (" --quick" if quick else "") + \
        (" --report" if report else "") + \
        (f" --seeds {seeds}" if seeds != (1 if quick else 5) else "") + \
        (f" --methods \"{','.join(only)}\"" if only is not None else "") + \
        (f" --first-seed {first_seed}" if first_seed else "")
    cpt = df[df.method == "CPT"]
    notes = [f"Only {', '.join(only)} ran in this run; the rows of {kept} are the previous run's (same CSV)."] \
        if kept else []
    if report:
        notes.append("Rewritten from the CSV (`--report`), nothing fitted here: each (method, seed) row is the one of "
                     "the run that made it (the notes by hand below say which).")
    notes += [f"Train {Xtr.shape[0]} x {Xtr.shape[1]}, test {Xte.shape[0]}; CPT at max_depth={depth} with "
             f"{cfg['cpt'] or 'its defaults'} (time_limit=None); seeds vary the models, not the split."]
    if cfg.get("select"):
        notes.append(f"CPT and CPT(K=1) follow the paper's protocol (spec §3.7): a stratified {cfg['select']:.0%} "
                     "of the training rows (never the test rows) selects the depth and the greedy or refined tree "
                     "(`validation_fraction`), then that choice is fitted again on all training rows; fit times "
                     "count both fits. "
                     + _selected(df, ("CPT", "CPT(K=1)")))
    if Xtr.shape[1] > 200:
        notes.append("obliquetree is left out on these 2048 features (it warns that its pairs of features are "
                     "too many to search). CPT runs as the reference code does on these sets: no prior and one "
                     "global mean/spread for all 2,048 bits (`scaling='global'`, spec A11). With the default "
                     "Student-t prior (b_beta = 1e-6) on 2,049 coefficients per expert the penalty is ~100 nats per "
                     "stump against a data term under ln 2, and its gradient ~1/(N beta) per coefficient outweighs "
                     "the data's on sparse bits: it swamps the data when the warm-up ends (Bace root stump: soft "
                     "entropy 0.33 -> 0.50), spec risk R1 in many dimensions.")
    if name in ("bace", "hiv"):
        notes.append(f"DeepChem/MoleculeNet scaffold split 80/10/10 ({len(ytr)}/{len(yva)}/{len(yte)}): CPT and "
                     "CPT(K=1) take max_depth as the paper's depth and choose the depth and the greedy or refined "
                     "tree on the scaffold validation rows (`fit(X_val=, y_val=)`); peers fit on the training "
                     "rows. "
                     + _selected(df, ("CPT", "CPT(K=1)")))
        notes.append("Beyond the paper: `CPT linear+ES` and `CPT(K=1) linear+ES` add `init='linear'` (every node's "
                     "experts start along one ridge classifier of the training rows, penalty by leave-one-out CV, "
                     "in logit units) and `early_stopping=0.2` (each stump keeps its epoch of lowest soft loss on a "
                     "random fifth of its rows, its start included), selected on the same validation rows; the "
                     "`by scaffold` rows hold out whole scaffolds of each node's rows instead "
                     "(`fit(..., groups=scaffolds)`). "
                     + _selected(df, ("CPT linear+ES", "CPT(K=1) linear+ES", "CPT linear+ES by scaffold",
                                      "CPT(K=1) linear+ES by scaffold")))
    if len(cpt):
        notes.append(f"CPT: {cfg['metric']} {cpt[cfg['metric']].mean():.4f}, {cpt.leaves.mean():.1f} leaves, "
                     f"fit {cpt.fit_s.mean():.1f} s wall / {cpt.cpu_s.mean():.1f} s CPU, "
                     f"{cpt.epochs_per_s.mean():.2f} epochs/s (all stumps and refinement; effective facets "
                     f"{'; '.join(cpt.facets.astype(str).tolist()[:3])}).")
    if profile is not None:
        notes.append(f"Profile of a 5-epoch greedy fit (torch profiler): {profile['epochs_per_s']:.2f} epochs/s; "
                     f"matrix products are {100 * profile['matmul_share_of_torch']:.0f}% of torch's CPU time, so "
                     f"{100 * profile['outside_matmul_share_of_wall']:.0f}% of the wall time is outside them.")
    if name == "digits":
        notes.append("scikit-learn's 8 x 8 digits stand in for MNIST: no installed package ships MNIST inside its "
                     "wheel, and nothing may download at run time; the paper's MNIST numbers are beside ours for "
                     "reference only.")
    paper = {"CPT": cfg["paper"].get("CPT"), "CPT(K=1)": cfg["paper"].get("CPT(K=1)"),
             "CART deep": cfg["paper"].get("CART deep")}
    lines = C.header(f"Convex polytope trees on {name}", command, notes)
    lines += C.summary_table(rows, cfg["metric"], paper)
    lines += _no_more_leaves(df, cfg["metric"])
    if "TnT" in cfg["paper"]:
        lines += ["", f"TnT (NeurIPS 2021, published single tree): {cfg['paper']['TnT']}."]
    (C.RESULTS / f"{stem}.md").write_text("\n".join(lines) + "\n")
    print((C.RESULTS / f"{stem}.md").read_text(), flush=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", choices=[*CONFIGS, "all"], default="connect4")
    ap.add_argument("--seeds", type=int, default=None)
    ap.add_argument("--quick", action="store_true", help="1 seed, smaller depth (and HIV subsampled)")
    ap.add_argument("--methods", default=None,
                    help="comma-separated methods to run; the others' rows are kept from the previous CSV")
    ap.add_argument("--report", action="store_true",
                    help="fit nothing: rewrite the Markdown from the CSV (after runs whose rows were merged into it)")
    ap.add_argument("--first-seed", type=int, default=0,
                    help="with --methods: run seeds from this one on, keeping the named methods' earlier seeds "
                         "from the previous CSV")
    args = ap.parse_args(argv)
    if args.first_seed and args.methods is None:
        ap.error("--first-seed needs --methods")
    if args.report and (args.methods or args.first_seed or args.seeds):
        ap.error("--report fits nothing: it takes no --methods, --seeds or --first-seed")
    seeds = args.seeds or (1 if args.quick else 5)
    only = None if args.methods is None else [m.strip() for m in args.methods.split(",")]
    for name in CONFIGS if args.dataset == "all" else [args.dataset]:
        run(name, seeds, args.quick, only, args.first_seed, args.report)


if __name__ == "__main__":
    main()
