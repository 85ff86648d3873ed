"""What the convex polytope tree benchmarks share: data sets (offline), methods side by side,
timing and the throughput profile (epochs per second, share of time outside matrix products).

Methods (one name each in the result tables):

- ``CPT``: :class:`arboretum.ConvexPolytopeTreeClassifier` with its defaults (``time_limit=None``)
  at the given depth; ``CPT(K=1)``: the same with ``max_facets=1`` (oblique splits, the paper's
  ablation);
- ``CART dN``: scikit-learn's entropy tree at depth N;
- ``obliquetree``: ``obliquetree.Classifier`` (greedy oblique tree, PyPI) at the same depth;
- ``SDT soft`` / ``SDT hard``: ``neural_trees.SoftDecisionTree`` (soft decision tree, PyPI) at the
  same depth, predicting softly, and its ``to_hard_tree()`` export.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

RESULTS = Path(__file__).resolve().parent / "results"
#: Every torch model of a run (ours and neural-trees') uses one CPU thread: the machine is shared, and
#: extra threads only spin there.
THREADS = 1
#: The offline data sets; ``ARBORETUM_DATASETS`` points elsewhere (e.g. a copy carried to a GPU machine).
DATA = Path(os.environ.get("ARBORETUM_DATASETS", "/work/shared/datasets"))
#: Where the RDKit fingerprints are cached (``ARBORETUM_ECFP_CACHE``): a machine without RDKit reads them there.
ECFP_CACHE = Path(os.environ.get("ARBORETUM_ECFP_CACHE", "/tmp"))


# ---------------------------------------------------------------------------
# data sets (offline copies only; nothing is downloaded)
# ---------------------------------------------------------------------------


def ring(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Spec-003 §4.2 replica: U([-1, 1]^2), class 1 iff 0.5 < |x| < 0.8."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 2))
    r = np.hypot(*X.T)
    return X, ((r > 0.5) & (r < 0.8)).astype(int)


def connect4() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Connect-4 as CPT's LibSVM copy (42 cells one-hot: 126 0/1 features), the reference code's split:
    one seed-0 permutation, the first 20% test, the rest (train + validation, merged) train."""
    import pandas as pd

    d = pd.read_csv(DATA / "pmlb-2017" / "connect-4.tsv.gz", sep="\t")
    cells = d.drop(columns="target").to_numpy()
    X = np.concatenate([(cells == v).astype(np.float64)[:, :, None] for v in (0, 1, 2)], 2).reshape(len(d), -1)
    y = d["target"].to_numpy()
    perm = np.random.RandomState(0).permutation(len(d))
    n_test = int(0.2 * len(d))
    return X[perm[n_test:]], y[perm[n_test:]], X[perm[:n_test]], y[perm[:n_test]]


def letter() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """UCI Letter: the first 16,000 rows train, the last 4,000 test (the paper's split)."""
    rows = []
    with open(DATA / "uci-arff-liac" / "letter.arff") as fh:
        data = False
        for line in fh:
            line = line.strip()
            if not line or line.startswith("%"):
                continue
            if line.lower().startswith("@data"):
                data = True
                continue
            if data:
                rows.append(line.split(","))
    X = np.array([[float(v) for v in r[:-1]] for r in rows])
    y = np.array([r[-1].strip("'\"") for r in rows])
    return X[:16000], y[:16000], X[16000:], y[16000:]


def digits(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """scikit-learn's 8x8 digits (the MNIST stand-in: no installed package ships MNIST), 75/25 split."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    X, y = load_digits(return_X_y=True)
    Xa, Xb, ya, yb = train_test_split(X, y, test_size=0.25, random_state=seed, stratify=y)
    return Xa, ya, Xb, yb


def molecule_features(name: str, n_bits: int = 2048, radius: int = 2, cache: Path | None = None):
    """Bace or HIV as 2048-bit ECFP4 (RDKit Morgan, radius 2): ``(X, y, groups)``, ``groups`` the
    index of every molecule's Bemis-Murcko scaffold (cached in ``ECFP_CACHE``)."""
    path = DATA / "moleculenet" / ("bace.csv" if name == "bace" else "HIV.csv")
    cache = cache or ECFP_CACHE / f"polytope_ecfp_{name}.npz"
    if cache.exists():
        z = np.load(cache)
        return z["X"], z["y"], z["groups"]
    import pandas as pd
    from rdkit import Chem, RDLogger
    from rdkit.Chem import AllChem
    from rdkit.Chem.Scaffolds import MurckoScaffold

    RDLogger.DisableLog("rdApp.*")
    d = pd.read_csv(path)
    smiles = d["smiles"] if "smiles" in d else d["mol"]
    target = d["Class"] if name == "bace" else d["target"]
    fps, ys, scaffolds = [], [], []
    for s, t in zip(smiles, target):
        mol = Chem.MolFromSmiles(s)
        if mol is None:
            continue
        fp = AllChem.GetMorganFingerprintAsBitVect(mol, radius, nBits=n_bits)
        arr = np.zeros(n_bits, dtype=np.uint8)
        arr[list(fp.GetOnBits())] = 1
        fps.append(arr)
        ys.append(int(t))
        scaffolds.append(MurckoScaffold.MurckoScaffoldSmiles(mol=mol, includeChirality=False))
    X, y = np.array(fps), np.array(ys)
    _, groups = np.unique(np.array(scaffolds), return_inverse=True)
    np.savez_compressed(cache, X=X, y=y, groups=groups)
    return X, y, groups


def scaffold_split(groups: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """DeepChem's ScaffoldSplitter (MoleculeNet, used by LCN and hence the paper): scaffold sets,
    largest first, fill 80% train, 10% valid, the rest test.  Returns sorted row indices."""
    sets: dict[int, list[int]] = {}
    for i, g in enumerate(groups):
        sets.setdefault(int(g), []).append(i)
    order = sorted(sets.values(), key=lambda s: (len(s), s[0]), reverse=True)
    n = len(groups)
    train, valid, test = [], [], []
    for s in order:
        if len(train) + len(s) <= 0.8 * n:
            train.extend(s)
        elif len(train) + len(valid) + len(s) <= 0.9 * n:
            valid.extend(s)
        else:
            test.extend(s)
    return tuple(np.array(sorted(a), dtype=np.int64) for a in (train, valid, test))


def molecule_train_groups(name: str) -> np.ndarray:
    """The scaffold of every training row of :func:`molecules` with ``with_valid=True`` (the
    ``groups`` that ``fit`` takes to hold out whole scaffolds)."""
    _, _, groups = molecule_features(name)
    return groups[scaffold_split(groups)[0]]


def molecules(name: str, n_bits: int = 2048, radius: int = 2, cache: Path | None = None, with_valid: bool = False):
    """Bace or HIV (:func:`molecule_features`) with the deterministic scaffold split of
    :func:`scaffold_split`.  Returns (train, test) with train and valid merged, or (train, valid,
    test) with ``with_valid``."""
    X, y, groups = molecule_features(name, n_bits, radius, cache)
    train, valid, test = scaffold_split(groups)
    if with_valid:
        return (X[train].astype(np.float64), y[train], X[valid].astype(np.float64), y[valid],
                X[test].astype(np.float64), y[test])
    train = np.union1d(train, valid)
    return X[train].astype(np.float64), y[train], X[test].astype(np.float64), y[test]


# ---------------------------------------------------------------------------
# methods
# ---------------------------------------------------------------------------


def cpt(depth: int, seed: int, **kw: Any):
    from arboretum import ConvexPolytopeTreeClassifier

    return ConvexPolytopeTreeClassifier(max_depth=depth, random_state=seed, time_limit=None, **kw)


class SelectThenRefit:
    """The paper's protocol (spec §3.7, §4.1): choose the depth (up to ``max_depth``) and greedy or
    refined tree on a validation share of the training data (``validation_fraction``), then fit that
    choice again on all the training data (train and validation merged, as the reference code does
    for its final run).  ``fit_s`` counts both fits."""

    def __init__(self, depth: int, seed: int, validation_fraction: float, **kw: Any) -> None:
        self.depth, self.seed, self.fraction, self.kw = depth, seed, validation_fraction, kw

    def fit(self, X, y):
        probe = cpt(self.depth, self.seed, validation_fraction=self.fraction, **self.kw).fit(X, y)
        self.best_depth_, self.refined_choice_ = probe.best_depth_, bool(probe.refined_)
        self.validation_scores_ = probe.validation_scores_
        self.final_ = cpt(self.best_depth_, self.seed, **{**self.kw, "refine": self.refined_choice_}).fit(X, y)
        for name in ("classes_", "tree_", "n_facets_", "epoch_history_", "refined_"):
            setattr(self, name, getattr(self.final_, name))
        self.epoch_history_ = {k: probe.epoch_history_[k] + v for k, v in self.final_.epoch_history_.items()}
        return self

    def predict_proba(self, X):
        return self.final_.predict_proba(X)

    def apply(self, X):
        return self.final_.apply(X)


class WithValidation:
    """A CPT fitted with given validation rows (``fit(X, y, X_val=..., y_val=...)``: depth and greedy or
    refined tree chosen on them, spec §3.7), e.g. MoleculeNet's scaffold validation split."""

    def __init__(self, est: Any, X_val: np.ndarray, y_val: np.ndarray, groups: np.ndarray | None = None) -> None:
        self.est, self.X_val, self.y_val, self.groups = est, X_val, y_val, groups
        #: (X, y) of test rows to score every depth's greedy tree on (``by_depth_``), set by :func:`evaluate`.
        self.test_rows: tuple[np.ndarray, np.ndarray] | None = None

    def fit(self, X, y):
        select = self.est._select

        def scored_depths(nodes, E_val, y_val, seed):  # every depth's greedy tree scored, for :func:`evaluate`
            from arboretum.polytope.estimator import _truncate

            trees = [_truncate(nodes, d) for d in range(max(nd.depth for nd in nodes) + 1)]
            score = self.est._val_score
            self.by_depth_ = {"leaves": [sum(nd.committee is None for nd in t) for t in trees],
                              "val": [score(t, E_val, y_val) for t in trees]}
            if self.test_rows is not None:  # scored only: nothing is chosen on them
                X_test, y_test = self.test_rows
                self.by_depth_["test"] = [score(t, np.asarray(X_test, np.float64), y_test) for t in trees]
            nodes = select(nodes, E_val, y_val, seed)
            scores = self.est.validation_scores_  # the refined tree's score and the bootstrap's share
            self.by_depth_["refined"] = None if math.isnan(scores["refined"]) else scores["refined"]
            share = scores["refined_share_better"]
            self.by_depth_["refined_share_better"] = None if math.isnan(share) else share
            return nodes

        self.est._select = scored_depths  # an instance attribute: the class's method is left alone
        try:
            self.est.fit(X, y, X_val=self.X_val, y_val=self.y_val,
                         **({} if self.groups is None else {"groups": self.groups}))
        finally:
            del self.est._select
        for name in ("classes_", "tree_", "n_facets_", "epoch_history_", "refined_", "best_depth_"):
            setattr(self, name, getattr(self.est, name))
        return self

    def predict_proba(self, X):
        return self.est.predict_proba(X)

    def apply(self, X):
        return self.est.apply(X)


def no_more_leaves(auc: float, leaves: int, by_depth: dict | None, budget: int) -> tuple[float, int]:
    """A method's test score and leaves at no more than ``budget`` leaves: its own tree where it fits, otherwise
    its greedy tree of the best validation score among those that fit (the shallowest of ties)."""
    if leaves <= budget:
        return auc, leaves
    fits = [i for i, n in enumerate(by_depth["leaves"]) if n <= budget]
    best = max(fits, key=lambda i: (by_depth["val"][i], -i))
    return by_depth["test"][best], by_depth["leaves"][best]


def protocol_cpt(depth: int, seed: int, X_val=None, y_val=None, select: float | None = None,
                 groups: np.ndarray | None = None, **kw: Any):
    """CPT under a data set's protocol: chosen on given validation rows (:class:`WithValidation`, which
    passes ``groups`` to ``fit``), on a share of the training rows then refitted
    (:class:`SelectThenRefit`, ``select``), or plain."""
    if X_val is not None:
        return WithValidation(cpt(depth, seed, **kw), X_val, y_val, groups)
    if select:
        return SelectThenRefit(depth, seed, select, **kw)
    return cpt(depth, seed, **kw)


def cart(depth: int, seed: int):
    from sklearn.tree import DecisionTreeClassifier

    return DecisionTreeClassifier(max_depth=depth, criterion="entropy", random_state=seed)


class Oblique:
    """obliquetree's ``Classifier`` on integer-coded labels: it converts ``y`` to floats, so string labels
    (Letter's) fail there; ``classes_`` maps its class columns back."""

    def __init__(self, depth: int, seed: int) -> None:
        from obliquetree import Classifier

        self.model = Classifier(max_depth=depth, random_state=seed)

    def fit(self, X, y):
        self.classes_, codes = np.unique(y, return_inverse=True)
        self.model.fit(X, codes)
        return self

    def predict_proba(self, X):
        return self.model.predict_proba(X)


def obliquetree(depth: int, seed: int):
    return Oblique(depth, seed)


class SDT:
    """neural-trees' soft decision tree; ``hard=True`` predicts with its ``to_hard_tree()`` export."""

    def __init__(self, depth: int, seed: int, hard: bool = False, **kw: Any) -> None:
        from neural_trees import SoftDecisionTree

        self.model, self.hard = SoftDecisionTree(depth=depth, random_state=seed, **kw), hard

    def fit(self, X, y):
        from sklearn.preprocessing import StandardScaler

        self.scaler = StandardScaler().fit(X)
        self.model.fit(self.scaler.transform(X), y)
        self.classes_ = self.model.classes_
        self.tree = self.model.to_hard_tree() if self.hard else self.model
        return self

    def predict_proba(self, X):
        return self.tree.predict_proba(self.scaler.transform(X))

    def predict(self, X):
        return self.classes_[np.argmax(self.predict_proba(X), 1)]


def n_leaves(est: Any, X: np.ndarray) -> tuple[int, int]:
    """(structural leaves, leaves reached by the training data); -1 where a peer does not say."""
    if isinstance(est, SDT):
        return 2 ** est.model.depth, -1
    if hasattr(est, "tree_") and hasattr(est.tree_, "apply_encoded"):
        return est.tree_.n_leaves, len(np.unique(est.apply(X)))
    if hasattr(est, "get_n_leaves"):
        return est.get_n_leaves(), len(np.unique(est.apply(X)))
    return -1, -1


def evaluate(make: Callable[[], Any], Xtr, ytr, Xte, yte, binary_auc: bool) -> dict:
    """Fit, time (wall and process CPU) and score one method."""
    from sklearn.metrics import accuracy_score, roc_auc_score

    import torch

    torch.set_num_threads(THREADS)
    est = make()
    if isinstance(est, WithValidation):
        est.test_rows = (Xte, yte)
    t0, c0 = time.perf_counter(), time.process_time()
    est.fit(Xtr, ytr)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    proba = np.asarray(est.predict_proba(Xte))
    classes = np.asarray(getattr(est, "classes_", np.unique(ytr)))
    row = {"fit_s": wall, "cpu_s": cpu, "acc": accuracy_score(yte, classes[np.argmax(proba, 1)])}
    if binary_auc:
        row["auc"] = roc_auc_score(yte, proba[:, list(classes).index(1)])
    row["leaves"], row["used_leaves"] = n_leaves(est, Xtr)
    if hasattr(est, "n_facets_"):
        row["facets"] = " ".join(str(int(k)) for k in est.n_facets_[est.tree_.split_kind != 0])
        row["epochs"] = len(est.epoch_history_["epoch"])
        row["epochs_per_s"] = row["epochs"] / wall
        row["refined"] = bool(est.refined_)
    if hasattr(est, "best_depth_"):
        row["selected_depth"] = int(est.best_depth_)
    if hasattr(est, "by_depth_"):
        row["by_depth"] = json.dumps(est.by_depth_)
    return row


def throughput(make: Callable[[], Any], X, y) -> dict:
    """Epochs per second of a fit and the share of its CPU time outside matrix products (torch profiler)."""
    from torch.profiler import ProfilerActivity, profile

    est = make()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        t0 = time.perf_counter()
        est.fit(X, y)
        wall = time.perf_counter() - t0
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events)
    matmul = sum(e.self_cpu_time_total for e in events if e.key in ("aten::mm", "aten::bmm", "aten::addmm"))
    torch_ms = total / 1e3
    return {"epochs": len(est.epoch_history_["epoch"]), "wall_s": wall, "epochs_per_s": len(est.epoch_history_["epoch"]) / wall,
            "torch_cpu_s": torch_ms / 1e3, "matmul_share_of_torch": matmul / total if total else float("nan"),
            "outside_matmul_share_of_wall": 1 - (matmul / 1e6) / wall}


def arithmetic() -> str:
    """The float arithmetic torch's CPU kernels use here: the processor, torch's vector instruction set
    (``ATEN_CPU_CAPABILITY`` can lower it) and MKL's code path where ``MKL_CBWR`` fixes it.  Gradient
    training rounds differently under each, so the same seed gives different trees on different
    processors; a run with ``MKL_CBWR=AVX2 ATEN_CPU_CAPABILITY=avx2`` rounds as on a processor without
    AVX-512."""
    import os

    import torch
    from engine import machine_info

    cpu = machine_info()["machine"].rsplit(",", 1)[0]
    cbwr = os.environ.get("MKL_CBWR")
    return f"{cpu}, torch {torch.backends.cpu.get_cpu_capability()}" + (f", MKL_CBWR={cbwr}" if cbwr else "")


def header(title: str, command: str, notes: list[str], gpu: str | None = None) -> list[str]:
    from engine import machine_info

    import torch

    meta = machine_info()
    try:
        load = open("/proc/loadavg").read().split()[:3]
    except OSError:
        load = ["?"]
    return [f"# {title}", "",
            f"Command: `{command}`",
            "",
            f"Run {meta['date']} on {meta['machine']} (shared by several engineers; load average at start "
            f"{' '.join(load)}: timings are noisy, compare within a run); python {meta['python']}, "
            f"numpy {meta['numpy']}, scikit-learn {meta['scikit-learn']}, torch {torch.__version__}, "
            f"arboretum git {meta['git']}. "
            + (gpu or ("This run used the CPU only; GPU timings: polytope_gpu.md."
                       if (RESULTS / "polytope_gpu.md").exists() else
                       "This run used the CPU only; no GPU was lent to this task, so no GPU timings exist.")),
            "", *notes, ""]


def summary_table(rows: list[dict], metric: str, paper: dict[str, str] | None = None) -> list[str]:
    """Markdown table: mean and standard error over seeds of ``metric``, leaves, fit time, per method."""
    import pandas as pd

    df = pd.DataFrame(rows)
    out = [f"| method | {metric} mean ± s.e. | seeds | leaves (used) | fit s (CPU s) | paper |",
           "|---|---|---|---|---|---|"]
    for method, g in df.groupby("method", sort=False):
        m = g[metric]
        se = m.std(ddof=1) / np.sqrt(len(m)) if len(m) > 1 else float("nan")
        out.append(f"| {method} | {m.mean():.4f} ± {se:.4f} | {len(m)} | {g['leaves'].mean():.1f} "
                   f"({g['used_leaves'].mean():.1f}) | {g['fit_s'].mean():.1f} ({g['cpu_s'].mean():.1f}) | "
                   f"{(paper or {}).get(method, '')} |")
    return out
