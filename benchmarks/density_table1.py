"""The paper's Table 1 (run time of the three methods) on every data set of it that we have offline.

For each data set (benchmarks/density_datasets.py: the paper's preprocessing and train/validation
fractions) and method, every setting of the paper's grid (Method I lam in {5, 8, 10}, Method II {2, 3},
Method III lam {3, 5, 7} x eta {1, 2}; alpha 2 for trees, 1 for lists) is fitted on the training part
with the domain of the whole data set (``categories=``), and scored on the validation part.  "best" is
the fit time of the setting with the highest validation log-likelihood (the paper's Table 4 choice),
"multiple" the time of all settings; the paper's seconds (one i7-6700 core, mean of 5 runs) stand beside
ours.  Test log-likelihoods use posterior-mean leaf densities (spec A2: no -inf for empty leaves).
Baselines: the Dirichlet-smoothed histogram (alpha=1), our CategoricalDET, and mlpack's DET on one-hot
data with its leaves rescored by categorical volumes (as the paper did): a leaf's allowed categories are
found by probing its one-hot box (flip one coordinate of a training point of the leaf, see whether it
stays), its volume is their product, its density n_l / (n V_l).

Where the exact solver applies (solver="auto" certified the tree), the anytime annealer alone
(solver="anneal", seeds 0-4) is run too: how often it reaches the certified optimum.

Usage: python benchmarks/density_table1.py [--quick] [--datasets Titanic,Car] [--grid best|all]
    --quick: the small data sets, the paper's best setting only, 20000 MH steps.
Writes benchmarks/results/density_table1{_quick}.{csv,md}.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import time
import warnings

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.dirname(__file__))
from density_datasets import LOADERS, load  # noqa: E402

from arboretum import (BranchSparseDensityTree, CategoricalDET, HistogramDensity,  # noqa: E402
                       LeafSparseDensityTree, SparseDensityRuleList)

OUT = os.path.join(os.path.dirname(__file__), "results")

#: Table 1 "best" and "multiple" seconds (leaf, branch, list) and Table 4's chosen settings.
PAPER = {
    "Balance": ((0.207, 1.036, 8.226), (0.587, 2.166, 82.402), (5, 3, (3, 1))),
    "Bank Full": ((19.652, 21.115, 31.340), (61.567, 42.971, 189.415), (8, 2, (5, 2))),
    "Car": ((0.276, 1.324, 7.123), (0.826, 2.610, 88.097), (8, 3, (3, 1))),
    "Chess": ((2.808, 3.631, 58.269), (8.683, 7.147, 246.194), (5, 3, (7, 2))),
    "COMPAS": ((1.225, 2.171, 14.503), (3.606, 4.345, 95.327), (8, 2, (3, 1))),
    "Connect-4": ((53.692, 58.286, 404.347), (143.833, 111.995, 882.699), (10, 3, (7, 2))),
    "HELOC": ((19.402, 23.349, 111.346), (62.415, 48.889, 607.118), (8, 3, (7, 1))),
    "Mushroom": ((5.317, 6.362, 31.890), (16.360, 12.685, 699.592), (10, 2, (3, 1))),
    "Nursery": ((1.196, 4.418, 10.667), (3.587, 8.571, 106.414), (8, 3, (3, 2))),
    "Telco": ((6.405, 7.402, 138.462), (17.196, 14.860, 370.096), (8, 3, (7, 1))),
    "Titanic": ((0.324, 0.425, 7.323), (0.947, 0.804, 41.436), (5, 2, (5, 1))),
}
#: The DET baselines (pure-Python pruning, mlpack with 10-fold CV on one-hot data) run up to this many rows.
DET_MAX_ROWS = 15_000
QUICK = ["Titanic", "Balance", "Car", "COMPAS", "Nursery"]
GRIDS = {"leaf-sparse": [{"lam": v} for v in (5, 8, 10)], "branch-sparse": [{"lam": v} for v in (2, 3)],
         "rule list": [{"lam": lam, "eta": eta} for lam in (3, 5, 7) for eta in (1, 2)]}


def make(method: str, cats: list, params: dict, n_iter: int, **kw):
    if method == "leaf-sparse":
        return LeafSparseDensityTree(alpha=2.0, categories=cats, density="posterior_mean", random_state=0,
                                     **params, **kw)
    if method == "branch-sparse":
        return BranchSparseDensityTree(alpha=2.0, categories=cats, density="posterior_mean", random_state=0,
                                       **params, **kw)
    return SparseDensityRuleList(alpha=1.0, categories=cats, n_iter=n_iter, random_state=0, **params, **kw)


def timed_fit(est, X):
    t0 = time.perf_counter()
    est.fit(X)
    return time.perf_counter() - t0


def mlpack_det(tr: pd.DataFrame, va: pd.DataFrame, cats: list) -> dict:
    """mlpack's DET on one-hot data, leaves rescored by categorical volumes (the paper's protocol)."""
    from mlpack import det

    def onehot(df: pd.DataFrame) -> np.ndarray:
        return np.hstack([(df[c].to_numpy()[:, None] == np.array(cv, dtype=object)[None, :]).astype(float)
                          for c, cv in zip(df.columns, cats)])

    A, B = onehot(tr), onehot(va)
    t0 = time.perf_counter()
    res = det(training=A, folds=10, min_leaf_size=5, max_leaf_size=10)
    fit_s = time.perf_counter() - t0
    model = res["output_model"]
    D = A.shape[1]
    starts = np.concatenate([[0], np.cumsum([len(c) for c in cats])])

    def leaf_of(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(raw estimate, leaf signature, log categorical volume) of every row: flip each one-hot
        coordinate of the row and see whether the estimate stays (the leaf's box allows that value)."""
        raw = np.asarray(det(input_model=model, test=rows)["test_set_estimates"]).ravel()
        probes = np.repeat(rows, D, axis=0)
        idx = np.arange(len(rows) * D)
        probes[idx, idx % D] = 1.0 - probes[idx, idx % D]
        stays = np.asarray(det(input_model=model, test=probes)["test_set_estimates"]).ravel().reshape(len(rows), D)
        stays = stays == raw[:, None]
        log_v = np.zeros(len(rows))
        for j in range(len(cats)):
            blk = slice(starts[j], starts[j + 1])
            own = rows[:, blk].argmax(axis=1)  # the row's own category
            one_ok = stays[:, blk]  # coordinate c can be 1 (c != own) / can be 0 (c == own)
            own_zero_ok = one_ok[np.arange(len(rows)), own]
            log_v += np.log(1 + np.where(own_zero_ok, one_ok.sum(axis=1) - 1, 0))
        # the box a row's leaf allows: its own one-hot values plus the flips that stay
        sig = np.where(stays, 2, rows.astype(int))
        return raw, np.array([hash((r, s.tobytes())) for r, s in zip(raw, sig)]), log_v

    uA, invA = np.unique(A, axis=0, return_inverse=True)
    rawA, sigA, logvA = leaf_of(uA)
    sig_tr = sigA[invA.ravel()]
    keys, counts = np.unique(sig_tr, return_counts=True)
    count_of = dict(zip(keys.tolist(), counts.tolist()))
    logv_of = dict(zip(sigA.tolist(), logvA.tolist()))
    n = len(tr)
    uB, invB = np.unique(B, axis=0, return_inverse=True)
    _, sigB, logvB = leaf_of(uB)
    log_f = np.array([math.log(count_of[s] / n) - lv if s in count_of else -np.inf for s, lv in zip(sigB, logvB)])
    ll = float(log_f[invB.ravel()].sum())
    f_leaves = [math.exp(math.log(c / n) - logv_of[k]) for k, c in count_of.items()]
    n_raw = len(np.unique(rawA))
    # leaves with equal raw estimates make the probing ambiguous (a flip may land in a twin leaf): the
    # signatures then outnumber the estimates and rescored scores are not reported
    ambiguous = len(count_of) != n_raw or not np.isfinite(ll)
    return {"leaves": n_raw, "fit_s": fit_s, "test_ll": math.nan if ambiguous else ll,
            "max_raw_density": float(rawA.max()),
            "max_rescored_density": math.nan if ambiguous else float(max(f_leaves)), "ambiguous": ambiguous}


def run_dataset(name: str, grid: str, n_iter: int, rows: list) -> None:
    tr, va, cats = load(name)
    paper_best, paper_multi, table4 = PAPER[name]
    pairs = sum(len(c) for c in cats)
    for mi, method in enumerate(GRIDS):
        settings = GRIDS[method]
        if grid == "best":
            t4 = table4[mi]
            settings = [{"lam": t4[0], "eta": t4[1]} if method == "rule list" else {"lam": t4}]
        fits = []
        for params in settings:
            est = make(method, cats, params, n_iter)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                sec = timed_fit(est, tr)
            fits.append((est.score(va), sec, params, est))
            print(f"  {name} {method} {params}: {sec:.2f} s, ll {fits[-1][0]:.1f}, {est.n_leaves_} leaves",
                  flush=True)
        ll, sec, params, est = max(fits, key=lambda f: f[0])
        rows.append({"dataset": name, "n_train": len(tr), "pairs": pairs, "method": method, "params": str(params),
                     "best_s": sec, "paper_best_s": paper_best[mi],
                     "multiple_s": sum(f[1] for f in fits) if grid == "all" else np.nan,
                     "paper_multiple_s": paper_multi[mi], "test_ll": ll, "leaves": est.n_leaves_,
                     "optimal": getattr(est, "optimal_", ""), "stop": est.stop_reason_})
        if method != "rule list" and getattr(est, "optimal_", False):
            hits = []
            for seed in range(5):
                sa = make(method, cats, params, n_iter, solver="anneal").set_params(random_state=seed)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    sa_s = timed_fit(sa, tr)
                hits.append(abs(sa.log_posterior_ - est.log_posterior_) < 1e-6)
            rows[-1]["anneal_hits"] = f"{sum(hits)}/5 ({sa_s:.2f} s each)"
    baselines = [("histogram", HistogramDensity(alpha=1.0, categories=cats))]
    if len(tr) <= DET_MAX_ROWS:
        baselines.append(("CategoricalDET", CategoricalDET(categories=cats, random_state=0)))
    for label, est in baselines:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sec = timed_fit(est, tr)
        rows.append({"dataset": name, "n_train": len(tr), "pairs": pairs, "method": label, "best_s": sec,
                     "test_ll": est.score(va), "leaves": est.n_leaves_ if label != "histogram" else est.n_bins_,
                     "stop": est.stop_reason_})
        print(f"  {name} {label}: {sec:.2f} s", flush=True)
    try:
        if len(tr) > DET_MAX_ROWS:
            raise RuntimeError(f"not run: more than {DET_MAX_ROWS} rows (time)")
        m = mlpack_det(tr, va, cats)
        rows.append({"dataset": name, "n_train": len(tr), "pairs": pairs, "method": "mlpack DET (rescored)",
                     "best_s": m["fit_s"], "test_ll": m["test_ll"], "leaves": m["leaves"],
                     "stop": f"max raw density {m['max_raw_density']:.3g}, " + (
                         "leaves with equal raw estimates: rescoring ambiguous" if m["ambiguous"] else
                         f"rescored {m['max_rescored_density']:.3g}")})
    except Exception as exc:  # noqa: BLE001  (a baseline's failure is reported, not fatal)
        rows.append({"dataset": name, "method": "mlpack DET (rescored)", "stop": f"failed: {exc}"[:120]})


def certify_scaling(rows: list, sizes: tuple = (4, 6, 8, 9, 10, 11, 12, 13)) -> None:
    """Time to certificate of the exact solver on growing domains of ``sizes`` binary features (the box grid
    has 2^(sum q_j) = 4^features boxes): 2000 rows from a random product of skewed Bernoullis, solver="auto",
    time_limit 60 s, the default memory_limit (2 GiB)."""
    rng = np.random.default_rng(0)
    for bits in sizes:
        q = [2] * bits
        X = (rng.random((2000, bits)) < np.where(rng.random(bits) < 0.5, 0.1, 0.5)).astype(np.int64)
        cats = [[0, 1]] * bits
        for method, est in (("leaf-sparse", LeafSparseDensityTree(lam=8, categories=cats, random_state=0)),
                            ("branch-sparse", BranchSparseDensityTree(lam=2, categories=cats, random_state=0))):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                sec = timed_fit(est, X)
            rows.append({"method": method, "sum_q": sum(q), "boxes": f"2^{sum(q)}", "domain": 2 ** bits,
                         "certified": bool(est.optimal_), "seconds": sec, "leaves": est.n_leaves_,
                         "stop": est.stop_reason_})
            print(rows[-1], flush=True)


def md(df: pd.DataFrame) -> str:
    fmt = lambda v: f"{v:.3f}" if isinstance(v, float) else ("" if v is None else str(v))  # noqa: E731
    df = df.astype(object).where(df.notna(), "")
    lines = ["| " + " | ".join(map(str, df.columns)) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(fmt(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--datasets", default=None)
    ap.add_argument("--grid", choices=("best", "all"), default=None)
    ap.add_argument("--certify", action="store_true", help="only the time-to-certificate scaling")
    ap.add_argument("--mlpack", action="store_true", help="recompute the mlpack DET rows of density_table1.csv")
    args = ap.parse_args()
    if args.mlpack:
        path = os.path.join(OUT, "density_table1.csv")
        df = pd.read_csv(path)
        rows = [r for r in df.to_dict("records") if r["method"] != "mlpack DET (rescored)"]
        for name in dict.fromkeys(df["dataset"]):
            tr, va, cats = load(name)
            if len(tr) > DET_MAX_ROWS:
                rows.append({"dataset": name, "method": "mlpack DET (rescored)",
                             "stop": f"not run: more than {DET_MAX_ROWS} rows (time)"})
                continue
            try:
                m = mlpack_det(tr, va, cats)
            except Exception as exc:  # noqa: BLE001  (a baseline's failure is reported, not fatal)
                rows.append({"dataset": name, "method": "mlpack DET (rescored)", "stop": f"failed: {exc}"[:120]})
                continue
            print(name, m, flush=True)
            rows.append({"dataset": name, "n_train": len(tr), "pairs": sum(len(c) for c in cats),
                         "method": "mlpack DET (rescored)", "best_s": m["fit_s"], "test_ll": m["test_ll"],
                         "leaves": m["leaves"], "stop": f"max raw density {m['max_raw_density']:.3g}, " + (
                             "leaves with equal raw estimates: rescoring ambiguous" if m["ambiguous"] else
                             f"rescored {m['max_rescored_density']:.3g}")})
        order = {name: k for k, name in enumerate(dict.fromkeys(df["dataset"]))}
        rows.sort(key=lambda r: order[r["dataset"]])
        args.datasets = None
        write([{k: v for k, v in r.items() if k != "ratio"} for r in rows], args, "best", 50_000, math.nan, [])
        return
    if args.certify:
        rows: list = []
        LeafSparseDensityTree().fit(load("Titanic")[0])
        certify_scaling(rows)
        with open(os.path.join(OUT, "density_table1_certify.md"), "w") as fh:
            fh.write(f"`python benchmarks/density_table1.py --certify`  \n{platform.node()}, loaded 2-core machine "
                     f"(7 engineers), {time.strftime('%Y-%m-%d')}\n\nsolver='auto' (plain dynamic programme over "
                     f"all 2^sum(q) boxes up to 2^22; Method I: annealing + bound + capped programme up to 2^24), "
                     f"2000 rows, time_limit=60 s, memory_limit=2048 MiB.\n\n")
            fh.write(md(pd.DataFrame(rows)) + "\n")
        return
    names = args.datasets.split(",") if args.datasets else (QUICK if args.quick else list(LOADERS))
    grid = args.grid or ("best" if args.quick else "all")
    n_iter = 20_000 if args.quick else 50_000
    LeafSparseDensityTree().fit(load("Titanic")[0])  # compile outside the timings
    SparseDensityRuleList(n_iter=10).fit(load("Titanic")[0])
    rows: list = []
    t_all = time.perf_counter()
    for k, name in enumerate(names):
        print(name, flush=True)
        run_dataset(name, grid, n_iter, rows)
        write(rows, args, grid, n_iter, time.perf_counter() - t_all, names[k + 1:])  # partial results survive
    print(open(os.path.join(OUT, f"density_table1{_suffix(args)}.md")).read())


def _suffix(args: argparse.Namespace) -> str:
    return "_quick" if args.quick else ("" if args.datasets is None else "_part")


def write(rows: list, args: argparse.Namespace, grid: str, n_iter: int, seconds: float, missing: list) -> None:
    df = pd.DataFrame(rows)
    df["ratio"] = df["best_s"] / df.get("paper_best_s", np.nan)
    suffix = _suffix(args)
    df.to_csv(os.path.join(OUT, f"density_table1{suffix}.csv"), index=False)
    cmd = "python benchmarks/density_table1.py" + "".join(f" {a}" for a in sys.argv[1:])
    with open(os.path.join(OUT, f"density_table1{suffix}.md"), "w") as fh:
        fh.write(f"`{cmd}`  \n{platform.node()}, {platform.machine()}, 2 cores shared by 4 engineers (loaded, "
                 f"load average {os.getloadavg()[0]:.1f} when written: timings noisy), {time.strftime('%Y-%m-%d')}; "
                 f"grid: {grid}; rule lists {n_iter} MH steps x 3 chains, time_limit 60 s per fit; total "
                 f"{seconds:.0f} s" + (f"; not yet run: {', '.join(missing)}" if missing else "") + "\n\n")
        fh.write("best_s: fit time of the setting with the best validation log-likelihood (paper_best_s: Table 1, "
                 "one i7-6700 core); ratio = best_s / paper_best_s (goal <= 1). test_ll: validation "
                 "log-likelihood (sum of ln f, posterior-mean leaves for the trees). anneal_hits: single "
                 "annealing fits (solver='anneal', seeds 0-4) reaching the certified optimum.\n\n")
        cols = ["dataset", "n_train", "pairs", "method", "params", "best_s", "paper_best_s", "ratio", "multiple_s",
                "paper_multiple_s", "test_ll", "leaves", "optimal", "anneal_hits", "stop"]
        fh.write(md(df[[c for c in cols if c in df.columns]]) + "\n")


if __name__ == "__main__":
    main()
