"""``ConvexPolytopeTreeClassifier`` and ``ConvexPolytopeTreeRegressor`` (Armandpour & Zhou 2020, spec-003).

The fit has two phases (spec §3): greedy top-down growth, where each node's committee is trained as
a soft stump on the samples that reach it and then cut at the hard threshold that minimises the
children's impurity, and an optional end-to-end refinement of all committees with the structure
fixed.  Fitting needs PyTorch; the fitted ``tree_`` (``POLYTOPE`` splits on the raw columns) predicts,
prints, plots and saves with NumPy alone.
"""

from __future__ import annotations

import copy
import math
import numbers
import os
import sys
import time
from typing import Any

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import _num_samples

from .. import data as _data
from .._compile import register
from ..base import DEFAULT_TIME_LIMIT, FitClock, TreeEstimator, constraints
from ..data import Interval, Options, check_classification_targets_encoded, check_regression_targets
from ..exceptions import warn_user
from ..tree import BLOCK_ROWS, POLYTOPE, Tree, TreeBuilder, polytope_intensity
from . import search, validation
from ._torch import flush_denormals, import_torch, resolve_device

__all__ = ["ConvexPolytopeTreeClassifier", "ConvexPolytopeTreeRegressor", "auto_epochs", "auto_batch_size"]

#: ``init="linear"`` fits its linear model on at most this many rows (a seeded random subset).
LINEAR_INIT_ROWS = 10_000
#: Optimizer steps a stump gets with ``epochs="auto"`` (and half of them for ``refine_epochs="auto"``).
AUTO_STEPS = 1600
#: A level whose training the time limit stopped picks each node's restart by its soft loss on at
#: most this many of the level's rows (a seeded subset).
STOPPED_LOSS_ROWS = 10_000
#: A level's training stops this many initialisation passes before the time limit, the time its cut
#: takes after training (the threshold search and the facets: about 3.3 passes on 500,000 rows).
CUT_PASSES = 3

_AUTO = Options(("auto",))
_OWN: dict = {
    "max_depth": [Interval(numbers.Integral, 0, None)],
    "max_facets": [Interval(numbers.Integral, 1, None)],
    "use_prior": ["boolean"],
    "prior_weight": [Interval(numbers.Real, 0, None, closed="left")],
    "prior_warmup": [Interval(numbers.Real, 0, 1, closed="both")],
    "gamma0": [Interval(numbers.Real, 0, None, closed="neither")],
    "c0": [Interval(numbers.Real, 0, None, closed="neither")],
    "a_beta": [Interval(numbers.Real, 0, None, closed="neither")],
    "b_beta": [Interval(numbers.Real, 0, None, closed="neither")],
    "initial_steepness": [Interval(numbers.Real, 0, None, closed="neither")],
    "steepness_inc": [Interval(numbers.Real, 0, None, closed="left")],
    "learning_rate": [Interval(numbers.Real, 0, None, closed="neither")],
    "epochs": [Interval(numbers.Integral, 1, None), _AUTO],
    "batch_size": [Interval(numbers.Integral, 1, None), _AUTO],
    "refine": ["boolean"],
    "refine_epochs": [Interval(numbers.Integral, 1, None), _AUTO],
    "n_restarts": [Interval(numbers.Integral, 1, None)],
    "threshold_mode": [Options(("search", "half"))],
    "min_samples_split": [Interval(numbers.Integral, 2, None)],
    "min_samples_leaf": [Interval(numbers.Integral, 1, None)],
    "device": [Options(("cpu", "cuda", "auto"))],
    "validation_fraction": [Interval(numbers.Real, 0, 1, closed="neither"), None],
    "scaling": [Options(("feature", "global"))],
    "gate": [Options(("paper", "reference"))],
    "max_leaves": [Interval(numbers.Integral, 1, None), None],
    "init": [Options(("random", "linear"))],
    "early_stopping": [Interval(numbers.Real, 0, 1, closed="neither"), None],
    "n_iter_no_change": [Interval(numbers.Integral, 1, None)],
}


def auto_batch_size(n: int) -> int:
    """``batch_size="auto"``: at most 1000 (spec §3.0) and at least 8 mini-batches an epoch."""
    return max(1, min(1000, math.ceil(n / 8)))


def auto_epochs(n: int, batch_size: int, steps: int = AUTO_STEPS, low: int = 40, high: int = 300) -> int:
    """``epochs="auto"``: enough epochs for about ``steps`` Adam steps, within [low, high]."""
    per_epoch = max(1, math.ceil(n / batch_size))
    return int(min(high, max(low, math.ceil(steps / per_epoch))))


def hold_out_groups(groups: np.ndarray, share: float, permutation: Any) -> np.ndarray:
    """Which rows to hold out, as whole groups: a boolean mask over ``groups`` (each row's group).

    The groups are taken in the order ``permutation(k)`` gives (a permutation of ``range(k)`` for
    the ``k`` distinct groups) until the held-out rows reach ``share`` of the rows; a group that
    would take them past twice the share is passed over, and at least one group always stays in.
    A row-level hold-out scores rows whose relatives (same scaffold, same patient) are trained on;
    whole groups show the shift that data from new groups has."""
    _, codes, sizes = np.unique(groups, return_inverse=True, return_counts=True)
    target, cap = share * groups.size, 2 * share * groups.size
    out = np.zeros(sizes.size, dtype=bool)
    n_out = n_groups = 0
    for g in permutation(sizes.size):
        if n_out >= target or n_groups == sizes.size - 1:
            break
        if n_out + sizes[g] <= cap:
            out[g] = True
            n_out += sizes[g]
            n_groups += 1
    return out[codes.reshape(-1)]



def _column_std(E: np.ndarray, rows: int = BLOCK_ROWS) -> np.ndarray:
    """``E.std(0)``, the same values, a block of rows at a time (no ``n x d`` temporaries: on
    500,000 x 20, 160 MB of fresh memory that a virtual machine took a second to provide).

    NumPy sums a C-ordered matrix over axis 0 row after row, so carrying the running sums into the
    next block as its first row adds in the same order; a single column is summed pairwise, so it
    (and a single block) is left to ``E.std(0)``."""
    n, d = E.shape
    if d < 2 or n <= rows or not E.flags.c_contiguous:
        return E.std(0)
    mean = E.mean(0)
    acc = np.zeros((1, d))
    for a in range(0, n, rows):
        dev = E[a:a + rows] - mean
        dev *= dev
        acc = np.add.reduce(np.concatenate([acc, dev]), axis=0, keepdims=True)
    return np.sqrt(acc[0] / n)

class _Node:
    """A node of the tree being grown: its training samples and, once split, its committee."""

    def __init__(self, idx: np.ndarray, depth: int) -> None:
        self.idx, self.depth = idx, depth
        self.left = self.right = -1
        self.B = self.rho = self.mask = None  # (K, D+1), (K,), (K,) in standardised space
        self.t = self.tau = 0.0
        self.committee: dict | None = None  # on the raw columns (POLYTOPE split of Tree)
        self.gain = 0.0  # drop in hard training impurity by its split (n H nats, or squared error)


def _children(nodes: list[_Node], internal: list[int], leaves: list[int]) -> np.ndarray:
    """(M, 2) (left, right) child of every internal node, as an internal index or ``-1 - leaf``."""
    pos = {i: m for m, i in enumerate(internal)} | {i: -1 - l for l, i in enumerate(leaves)}
    return np.array([[pos[nodes[i].left], pos[nodes[i].right]] for i in internal], dtype=np.int64)


def _truncate(nodes: list[_Node], depth: int | None = None, keep: set[int] | None = None) -> list[_Node]:
    """The grown tree cut at ``depth`` (its nodes there become leaves), or with only the splits of the
    nodes in ``keep`` (indices into ``nodes``; a best-first prefix), in breadth-first order."""
    out: list[_Node] = []
    queue = [0]
    while queue:
        i = queue.pop(0)
        new = copy.copy(nodes[i])
        out.append(new)
        if new.committee is None or (depth is not None and new.depth >= depth) or (keep is not None and i not in keep):
            new.committee, new.left, new.right = None, -1, -1
            continue
        slot = len(out) + len(queue)  # the children's future positions
        new.left, new.right = slot, slot + 1
        queue += [nodes[i].left, nodes[i].right]
    return out


class _ConvexPolytopeTreeBase(TreeEstimator):
    """What both convex polytope tree estimators share: growth, refinement, the fitted tree."""

    _uses_binary_questions = False
    _kernel_family = "polytope"  # PyTorch's first-use set-up, run before the clock (:func:`_warm`)
    _task = "classification"

    def __init__(self, max_depth: int = 3, max_facets: int = 30, use_prior: bool = True, prior_weight: float = 1.0,
                 prior_warmup: float = 0.5, gamma0: float = 1.0, c0: float = 1.0, a_beta: float = 1e-6,
                 b_beta: float = 1e-6, initial_steepness: float = 1.0, steepness_inc: float = 0.01,
                 learning_rate: float = 0.01, epochs: int | str = "auto", batch_size: int | str = "auto",
                 refine: bool = True, refine_epochs: int | str = "auto", n_restarts: int = 3,
                 threshold_mode: str = "search", min_samples_split: int = 10, min_samples_leaf: int = 1,
                 validation_fraction: float | None = None, scaling: str = "feature", gate: str = "paper",
                 max_leaves: int | None = None, init: str = "random", early_stopping: float | None = None,
                 n_iter_no_change: int = 10, random_state: Any = None, device: str = "cpu",
                 n_jobs: int | None = None,
                 time_limit: float | None = DEFAULT_TIME_LIMIT, verbose: int = 0) -> None:
        self.max_depth = max_depth
        self.max_facets = max_facets
        self.use_prior = use_prior
        self.prior_weight = prior_weight
        self.prior_warmup = prior_warmup
        self.gamma0 = gamma0
        self.c0 = c0
        self.a_beta = a_beta
        self.b_beta = b_beta
        self.initial_steepness = initial_steepness
        self.steepness_inc = steepness_inc
        self.learning_rate = learning_rate
        self.epochs = epochs
        self.batch_size = batch_size
        self.refine = refine
        self.refine_epochs = refine_epochs
        self.n_restarts = n_restarts
        self.threshold_mode = threshold_mode
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.validation_fraction = validation_fraction
        self.scaling = scaling
        self.gate = gate
        self.max_leaves = max_leaves
        self.init = init
        self.early_stopping = early_stopping
        self.n_iter_no_change = n_iter_no_change
        self.random_state = random_state
        self.device = device
        self.n_jobs = n_jobs
        self.time_limit = time_limit
        self.verbose = verbose

    _parameter_constraints: dict = constraints("random_state", "n_jobs", "time_limit", "verbose", **_OWN)

    # -- the fit -----------------------------------------------------------------------------
    def _fit(self, X: Any, y: np.ndarray, n_classes: int, val: tuple | None = None,
             groups: np.ndarray | None = None) -> None:
        """Common fit after the targets are checked: ``y`` are class indices or float targets,
        ``groups`` None or checked by :meth:`_check_groups`."""
        # The warm-up first: it imports PyTorch (seconds on a process's first fit), so that the
        # import counts in compile_time_ like the rest of torch's first use, never in the clock.
        clock = self._start_clock()
        self._torch = torch = import_torch(type(self).__name__)
        from . import model

        self._model = model
        device = resolve_device(self.device)
        threads = torch.get_num_threads()
        try:
            torch.set_num_threads(self._n_threads(X, threads))
            with flush_denormals(torch):
                self._fit_torch(X, y, n_classes, torch, device, val, clock, groups)
        finally:
            torch.set_num_threads(threads)

    def _n_threads(self, X: Any, default: int) -> int:
        """Torch threads of the fit: 1 with ``n_jobs=None`` (mini-batch steps are small, and extra threads
        only spin on a busy machine), ``n_jobs`` when positive, all but ``-n_jobs - 1`` cores when negative."""
        if self.n_jobs is None or self.n_jobs == 0:
            return 1
        if self.n_jobs > 0:
            return int(self.n_jobs)
        return max(1, (os.cpu_count() or 1) + 1 + int(self.n_jobs))

    def _fit_torch(self, X: Any, y: np.ndarray, n_classes: int, torch: Any, device: Any, val: tuple | None,
                   clock: Any, groups: np.ndarray | None) -> None:
        self._clock_ = clock
        seed = int(check_random_state(self.random_state).randint(2**31 - 1))
        self._gen = torch.Generator().manual_seed(seed)
        E, cats = _data.raw_columns(X, self, borrow=True)  # only read, never written
        held_out = None if val is not None else self._validation_split(y, seed, groups)
        if held_out is not None:
            E, y, E_val, y_val = E[held_out[0]], y[held_out[0]], E[held_out[1]], y[held_out[1]]
            groups = None if groups is None else groups[held_out[0]]
        elif val is not None:
            columns, _, names = _data.read_columns(val[0], self, reset=False)
            E_val, y_val = _data.encode_columns(columns, cats, names or self._feature_names()), val[1]
            held_out = ()
        self.binarizer_ = None
        n, d = E.shape
        if self.scaling == "global":  # one mean and spread over all entries (spec A11, the reference's molecules)
            self._mean, scale = np.full(d, E.mean()), np.full(d, E.std())
        else:
            self._mean, scale = E.mean(0), _column_std(E)
        self._scale = np.where(scale > 0, scale, 1.0)
        self._Xt = torch.from_numpy(self._standardised(E)).to(device)
        self._directions = None if self.init == "random" else torch.tensor(
            self._linear_directions(E, y, seed), dtype=torch.float32)
        if self._task == "classification":
            self._target = torch.nn.functional.one_hot(torch.as_tensor(y), n_classes).to(torch.float32).to(device)
        else:
            center, spread = float(y.mean()), float(y.std())
            self._target = torch.tensor((y - center) / (spread if spread > 0 else 1.0), dtype=torch.float32,
                                        device=device)
        self._E, self._y, self._n_classes, self._groups = E, y, n_classes, groups
        self.epoch_history_ = {"phase": [], "level": [], "epoch": [], "loss": [], "objective": [], "tau": []}
        self.device_ = str(device)
        self._last_print = 0.0
        stop = "completed"
        nodes = self._grow(n, d)
        if self._stopped:
            stop = "time_limit"
        self.refined_ = False
        if held_out is not None:
            nodes = self._select(nodes, E_val, y_val, seed)
        elif self.refine and not self._stopped and any(nd.committee is not None for nd in nodes):
            greedy_cost = self._tree_cost(nodes)
            refined = self._refine(nodes)
            if refined is not None and self._tree_cost(refined) <= greedy_cost + 1e-9 * max(1.0, abs(greedy_cost)):
                nodes, self.refined_ = refined, True
        if self._stopped:
            stop = "time_limit"
        self.tree_ = self._build_tree(nodes, d, cats)
        self.objective_ = self._tree_cost(nodes) / n
        self.n_facets_ = np.array([int(self.tree_.polytopes[i]["facet"].sum()) if i in self.tree_.polytopes else 0
                                   for i in range(self.tree_.n_nodes)])
        self.fit_time_ = clock.elapsed()
        for name in ("_torch", "_model", "_gen", "_Xt", "_directions", "_target", "_E", "_y", "_clock_", "_mean",
                     "_scale", "_stopped", "_last_print", "_n_classes", "_split_order", "_groups"):
            delattr(self, name)
        self._set_stop(stop, "returning the tree grown so far" if stop != "completed" else "")

    def _standardised(self, E: np.ndarray, rows: int = BLOCK_ROWS) -> np.ndarray:
        """``[1, (E - mean) / scale]`` as float32, computed in float64 a block of rows at a time: the
        same values as at once, without two float64 copies of ``E`` (on 500,000 x 20, 160 MB of fresh
        memory, which a virtual machine may take seconds to provide)."""
        n, d = E.shape
        out = np.empty((n, d + 1), dtype=np.float32)
        out[:, 0] = 1.0
        for a in range(0, n, rows):
            out[a:a + rows, 1:] = (E[a:a + rows] - self._mean) / self._scale
        return out

    def _linear_directions(self, E: np.ndarray, y: np.ndarray, seed: int) -> np.ndarray:
        """``init="linear"``: the coefficients (J, D+1), bias first, of a ridge model on the standardised
        training columns, its penalty chosen by efficient leave-one-out cross-validation (scikit-learn's
        ``RidgeCV`` / ``RidgeClassifierCV``, penalties 1e-3 to 1e4): for regression one direction, in
        units of the target's spread; for classification one per class against the rest (one for two
        classes), each rescaled into logit units by a one-feature logistic regression of its class on
        its score.  At most ``LINEAR_INIT_ROWS`` rows (a seeded random subset) are used."""
        from sklearn.linear_model import LogisticRegression, RidgeClassifierCV, RidgeCV

        rows = np.arange(E.shape[0])
        if rows.size > LINEAR_INIT_ROWS:
            rows = _data.seeded_rows(rows.size, LINEAR_INIT_ROWS, seed)
        X, yy = (E[rows] - self._mean) / self._scale, y[rows]  # the standardised columns of those rows
        alphas = np.logspace(-3, 4, 8)
        if self._task == "regression":
            spread = float(yy.std())
            m = RidgeCV(alphas=alphas).fit(X, (yy - yy.mean()) / (spread if spread > 0 else 1.0))
            return np.c_[np.atleast_1d(m.intercept_), np.atleast_2d(m.coef_)]
        if np.unique(yy).size < 2:  # one class: no direction to learn, a flat start
            return np.zeros((1, E.shape[1] + 1))
        m = RidgeClassifierCV(alphas=alphas).fit(X, yy)
        W = np.c_[np.atleast_1d(m.intercept_), np.atleast_2d(m.coef_)]
        score = m.decision_function(X).reshape(len(yy), -1)
        for j in range(W.shape[0]):  # ridge's +-1 units into logits: a and b of sigmoid(a score + b)
            is_class = yy == (m.classes_[j] if W.shape[0] > 1 else m.classes_[1])
            if is_class.all() or not is_class.any():
                continue
            cal = LogisticRegression().fit(score[:, j : j + 1], is_class)
            W[j] *= cal.coef_[0, 0]
            W[j, 0] += cal.intercept_[0]
        return W

    def _check_groups(self, groups: Any, n_samples: int, given_val: bool) -> np.ndarray | None:
        """``groups`` as one label per row (checked), or None; warns when nothing uses it (no
        ``early_stopping``, and no ``validation_fraction`` or validation rows given instead)."""
        if groups is None:
            return None
        groups = np.asarray(groups)
        if groups.ndim != 1 or groups.shape[0] != n_samples:
            raise ValueError(f"groups must be one-dimensional with one label per row of X ({n_samples}), "
                             f"got shape {groups.shape}")
        if groups.dtype == object:
            try:
                groups = np.unique(groups, return_inverse=True)[1].reshape(-1)
            except TypeError as exc:
                raise ValueError(f"groups must hold comparable labels (numbers or strings): {exc}") from None
        if groups.dtype.kind == "f" and not np.all(np.isfinite(groups)):
            raise ValueError("groups holds NaN or infinite labels")
        if self.early_stopping is None and (self.validation_fraction is None or given_val):
            warn_user("groups is used only by early_stopping and validation_fraction (which X_val replaces): "
                      "it has no effect here", UserWarning)
        return groups

    def _val_pair(self, X_val: Any, y_val: Any, classes: np.ndarray | None) -> tuple | None:
        """``(X_val, y_val as class indices or floats)``, or None; checks that both or neither are given."""
        if X_val is None and y_val is None:
            return None
        if X_val is None or y_val is None:
            raise ValueError("fit needs both X_val and y_val, or neither")
        y_val = np.asarray(y_val)
        if y_val.ndim != 1 or y_val.shape[0] != _num_samples(X_val):
            raise ValueError(f"y_val must be one-dimensional with one value per row of X_val "
                             f"({_num_samples(X_val)}), got shape {y_val.shape}")
        if classes is None:
            return X_val, y_val.astype(np.float64)
        unseen = np.setdiff1d(y_val, classes)
        if unseen.size:
            raise ValueError(f"y_val holds labels that y does not: {unseen[:5].tolist()}")
        return X_val, np.searchsorted(classes, y_val)

    # -- validation-based selection (spec §3.7) -------------------------------------------------
    def _validation_split(self, y: np.ndarray, seed: int,
                          groups: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray] | None:
        """(fit rows, validation rows) when ``validation_fraction`` is set: a shuffled split of the
        training data, stratified by class for classification when every class has two samples;
        with ``groups``, whole groups (:func:`hold_out_groups`), not stratified."""
        if self.validation_fraction is None:
            return None
        from sklearn.model_selection import train_test_split

        rows = np.arange(y.shape[0])
        if groups is not None:
            val = hold_out_groups(groups, float(self.validation_fraction),
                                  np.random.RandomState(seed % 2**31).permutation)
            if not val.any():
                raise ValueError(f"validation_fraction={self.validation_fraction} holds out no whole group of "
                                 f"{np.unique(groups).size} groups (one group, or every group larger than twice "
                                 "that share)")
            return rows[~val], rows[val]
        strata = None
        if self._task == "classification" and np.bincount(y).min(initial=2) >= 2:
            strata = y
        try:
            fit, val = train_test_split(rows, test_size=float(self.validation_fraction), random_state=seed % 2**31,
                                        stratify=strata)
        except ValueError as exc:
            raise ValueError(f"validation_fraction={self.validation_fraction} leaves no rows to fit or to "
                             f"validate on {y.shape[0]} samples: {exc}") from None
        return np.sort(fit), np.sort(val)

    def _select(self, nodes: list[_Node], E_val: np.ndarray, y_val: np.ndarray, seed: int) -> list[_Node]:
        """Spec §3.7: the depth whose greedy tree scores best on the validation rows (the shallowest of
        ties), then the refinement of that tree, kept only if it scores better there in at least
        ``validation.REFINE_CONFIDENCE`` of the paired bootstrap replicates of those rows
        (:func:`validation.share_better`, seeded by ``seed``).  Best-first (``max_leaves``): the number
        of leaves instead, the trees being the prefixes of the split order.

        The depth and the refinement are chosen on the same rows, and the refinement (every committee
        trained again, together) can fit them by chance: on HIV by scaffold (131 validation actives)
        CPT's refined trees beat their greedy trees on validation in 4 of 15 seeds and lost 0.009-0.027
        test AUC in each (two of them, +0.009 and +0.015 validation AUC, were better in 73% and 78% of
        the replicates), while CPT's refinements on Connect-4 (10,810 validation rows, +0.4 to +1.1
        points of accuracy) were better in 99-100% (``benchmarks/results/polytope_refine_gate.md``)."""
        if self.max_leaves is None:
            sizes = list(range(max(nd.depth for nd in nodes) + 1))
            trees = [_truncate(nodes, depth) for depth in sizes]
        else:
            sizes = list(range(1, len(self._split_order) + 2))
            trees = [_truncate(nodes, keep=set(self._split_order[: k - 1])) for k in sizes]
        preds = [self._val_predictions(tree, E_val) for tree in trees]
        greedy = [float(validation.scores(pred, y_val, self._task)[0]) for pred in preds]
        best = int(np.argmax(greedy))
        nodes = trees[best]
        refined_score, share = math.nan, math.nan
        if self.refine and not self._stopped and any(nd.committee is not None for nd in nodes):
            refined = self._refine(nodes)
            if refined is not None:
                pred = self._val_predictions(refined, E_val)
                refined_score = float(validation.scores(pred, y_val, self._task)[0])
                if refined_score > greedy[best] and not self._clock_.expired():  # no bootstrap past the limit
                    share = validation.share_better(pred, preds[best], y_val, self._task, seed)
                    if share >= validation.REFINE_CONFIDENCE:
                        nodes, self.refined_ = refined, True
        self.best_depth_ = max(nd.depth for nd in nodes)
        self.best_n_leaves_ = sum(nd.committee is None for nd in nodes)
        self.validation_scores_ = {"depth" if self.max_leaves is None else "n_leaves": sizes, "greedy": greedy,
                                   "refined": refined_score, "refined_share_better": share}
        return nodes

    def _val_predictions(self, nodes: list[_Node], E: np.ndarray) -> np.ndarray:
        """A grown tree's hard predictions for the rows ``E``: each leaf's class proportions (or mean)
        among the training rows it holds; an empty child predicts as its parent."""
        value = {}
        for i, nd in enumerate(nodes):  # parents first
            if nd.idx.size or i == 0:
                yy = self._y[nd.idx]
                value[i] = (np.bincount(yy, minlength=self._n_classes) / max(yy.size, 1)
                            if self._task == "classification" else float(yy.mean()) if yy.size else 0.0)
            if nd.committee is not None:
                for child in (nd.left, nd.right):
                    if not nodes[child].idx.size:
                        value[child] = value[i]
        at = np.zeros(E.shape[0], dtype=np.int64)
        for i, nd in enumerate(nodes):
            if nd.committee is None:
                continue
            rows = np.flatnonzero(at == i)
            if rows.size:
                left = polytope_intensity(nd.committee, E[rows]) <= nd.t
                at[rows] = np.where(left, nd.left, nd.right)
        return np.array([value[i] for i in at]) if self._task == "regression" else np.stack([value[i] for i in at])

    def _val_score(self, nodes: list[_Node], E: np.ndarray, y: np.ndarray) -> float:
        """Validation score of a grown tree (higher is better): ROC AUC for two classes (accuracy when
        the validation rows hold one class), accuracy, or minus the mean squared error."""
        return float(validation.scores(self._val_predictions(nodes, E), y, self._task)[0])

    def _settings(self, n: int, epochs: Any, low: int, high: int, steps: int) -> Any:
        bs = auto_batch_size(n) if self.batch_size == "auto" else min(int(self.batch_size), n)
        ep = auto_epochs(n, bs, steps, low, high) if epochs == "auto" else int(epochs)
        return self._model.Settings(
            task=self._task, lr=float(self.learning_rate), epochs=ep, batch_size=bs,
            steepness_inc=float(self.steepness_inc), use_prior=bool(self.use_prior),
            prior_weight=float(self.prior_weight), prior_warmup=float(self.prior_warmup), gamma0=float(self.gamma0),
            c0=float(self.c0), a_beta=float(self.a_beta), b_beta=float(self.b_beta), expired=self._clock_.expired)

    def _progress(self, phase: str, node: int, s: Any):
        def report(epoch: int, loss: float, total: float) -> None:
            now = time.perf_counter()
            if self.verbose >= 2 or now - self._last_print >= 1.0 or epoch + 1 == s.epochs:
                self._last_print = now
                where = f"level {node}" if phase == "grow" else "refine"
                print(f"[{type(self).__name__}] {where} epoch {epoch + 1}/{s.epochs}: loss {loss:.5f} "
                      f"(with prior {total:.5f}), {self._clock_.elapsed():.1f} s", file=sys.stderr, flush=True)
        return report if self.verbose > 0 else None

    def _record(self, phase: str, node: int, rows: list) -> None:
        h = self.epoch_history_
        for epoch, loss, total, tau in rows:
            h["phase"].append(phase)
            h["level"].append(node)
            h["epoch"].append(int(epoch))
            h["loss"].append(float(loss))
            h["objective"].append(float(total))
            h["tau"].append(float(tau))

    def _leaf_cost(self, idx: np.ndarray) -> float:
        return search.impurity(self._y[idx], self._task, self._n_classes)

    def _tree_cost(self, nodes: list[_Node]) -> float:
        """Hard training impurity of the tree: n H(Y | leaf) in nats, or the sum of squared errors."""
        return float(sum(self._leaf_cost(nd.idx) for nd in nodes if nd.committee is None))

    # -- greedy growth (spec §3.3-3.5), one level at a time ------------------------------------
    def _grow(self, n: int, d: int) -> list[_Node]:
        """Breadth-first growth: the stumps of all frontier nodes of a level train together (each on
        the samples that reach it), then each node is cut at its best hard threshold.

        With ``max_leaves`` (best-first, spec §3.5): every frontier leaf gets its stump, and the leaf
        whose cut lowers the training impurity most is split, until ``max_leaves`` leaves exist (the
        two children of a split train together).  ``self._split_order`` lists the split nodes in order.
        """
        nodes = [_Node(np.arange(n), 0)]
        self._stopped = False
        self._split_order: list[int] = []
        best_first = self.max_leaves is not None
        frontier, pending = [0], []  # best-first: fitted leaves waiting for their turn
        while not self._stopped:
            if best_first and len(self._split_order) + 1 >= self.max_leaves:
                break
            todo = []
            for i in frontier:
                nd = nodes[i]
                y = self._y[nd.idx]
                if nd.depth < self.max_depth and nd.idx.size >= self.min_samples_split and not np.all(y == y[0]):
                    todo.append(i)
            fitted = list(todo)
            attempts = 1 if self.threshold_mode == "search" else 5  # retry one-sided splits (spec §3.3)
            for _ in range(attempts):
                if not todo or self._stopped:
                    break
                done = self._fit_level([nodes[i] for i in todo])
                todo = [i for i, ok in zip(todo, done) if not ok]
            ready = [i for i in fitted if nodes[i].committee is not None]
            if best_first:
                pending += ready
                if not pending:
                    break
                ready = [max(pending, key=lambda i: (nodes[i].gain, -i))]  # the largest gain, the oldest of ties
                pending.remove(ready[0])
            elif not ready:
                break
            frontier = []
            for i in ready:
                nd = nodes[i]
                left = nd.idx[polytope_intensity(nd.committee, self._rows(self._E, nd.idx)) <= nd.t]
                right = np.setdiff1d(nd.idx, left, assume_unique=True)
                nd.left, nd.right = len(nodes), len(nodes) + 1
                nodes += [_Node(left, nd.depth + 1), _Node(right, nd.depth + 1)]
                frontier += [nd.left, nd.right]
                self._split_order.append(i)
        for i in pending:  # fitted but never split: leaves
            nodes[i].committee = None
        return nodes

    def _fit_level(self, level: list[_Node]) -> list[bool]:
        """Train ``n_restarts`` soft stumps for every node of ``level`` at once; keep each node's best
        hard cut (when it lowers the node's impurity).  Returns which nodes were split."""
        torch, model = self._torch, self._model
        parts = [self._hold_out(nd.idx) for nd in level]  # (fit rows, held-out rows) of every node
        idx = np.concatenate([fit for fit, _ in parts])
        node_of = np.repeat(np.arange(len(level)), [fit.size for fit, _ in parts])
        # one node's rows are sorted, several nodes' concatenated are not: only then may _rows skip the copy
        Xt, target = (self._rows(self._Xt, idx), self._rows(self._target, idx)) if len(level) == 1 else (
            self._Xt[idx], self._target[idx])
        monitor = None
        if self.early_stopping is not None:
            held = np.concatenate([out for _, out in parts])
            node_held = np.repeat(np.arange(len(level)), [out.size for _, out in parts])
            monitor = (self._Xt[held], self._target[held], torch.as_tensor(node_held, device=Xt.device))
        depth = level[0].depth
        s = self._settings(idx.size, self.epochs, 40, 300, AUTO_STEPS)
        s.progress = self._progress("grow", depth, s)
        t0 = time.perf_counter()
        p = model.init_level(len(level), int(self.n_restarts), int(self.max_facets), self._E.shape[1], Xt,
                             torch.as_tensor(node_of, device=Xt.device), float(self.initial_steepness), self._gen,
                             torch.float32, reference=self.gate == "reference", directions=self._directions)
        if self._clock_.deadline is not None:
            # Training stops early enough to leave the cut its time: CUT_PASSES times what the
            # initialisation took (one pass of the committees over the level's rows, for the medians).
            stop = self._clock_.deadline - CUT_PASSES * (time.perf_counter() - t0)
            s.expired = lambda: time.perf_counter() >= stop or self._clock_.expired()
        status = model.train(p, Xt, target, s, self._gen, monitor, int(self.n_iter_no_change))
        self._record("grow", depth, p.history)
        restart = None  # every restart is cut, and each node keeps its best
        if status == "time_limit":
            # Anytime: stumps stopped after at least one step are still cut at their best hard
            # threshold, and kept where that lowers the node's impurity (as after a full training);
            # the growth then ends.  Before any step there is nothing learned to cut on.  Only the
            # restart of least soft loss is cut (a cut costs a pass over the node's rows: 0.25 s
            # each on 500,000 rows, after the limit).
            self._stopped = True
            if p.steps == 0:
                return [False] * len(level)
            restart = self._least_loss_restarts(p, idx, node_of, s)
        B, rho, t, tau = (a.detach().cpu().numpy().astype(np.float64) for a in (p.B, p.rho, p.t, p.tau))
        slope = None if p.a is None else p.a.detach().cpu().numpy().astype(np.float64)
        K = rho.shape[-1]
        done = []
        for f, nd in enumerate(level):
            E, y = self._rows(self._E, nd.idx), self._rows(self._y, nd.idx)
            parent = self._leaf_cost(nd.idx)
            parent_J = parent / nd.idx.size if self._task == "classification" else parent
            fit_rows, held_rows = parts[f]
            # With groups, early stopping's held-out groups also pick the restart (see _held_out_cost),
            # and with init="linear" the linear start itself is one more candidate (_linear_candidates).
            starts = self._linear_candidates(K) if held_rows.size and self._groups is not None else []
            on_held = self._groups is not None and held_rows.size > 0 and B.shape[1] + len(starts) > 1
            best = None
            for u in range(B.shape[1] + len(starts)):
                if restart is not None and u != restart[f]:
                    continue
                if u >= B.shape[1]:  # a linear start: one expert along the linear model's score
                    B_u, rho_u, mask, tau_u = starts[u - B.shape[1]]
                    t_u = math.nan  # no learned threshold: only the searched cut (threshold_mode="search")
                elif slope is None:
                    B_u, tau_u = B[f, u], float(tau[f, u])
                    rho_u, t_u, mask = rho[f, u], float(t[f, u]), search.prune_mask(rho[f, u], np.ones(K))
                else:  # as the paper's gate with tied weights, the convex side left (spec R2)
                    B_u, tau_u = B[f, u], float(tau[f, u])
                    rho_u, t_u, _ = search.reference_as_paper(slope[f, u], t[f, u], K)
                    mask = np.ones(K)
                committee = search.raw_committee(B_u, rho_u, mask, self._mean, self._scale)
                cut, cost = self._cut(polytope_intensity(committee, E), y, t_u)
                if cut is None or not cost < parent_J - 1e-12 * max(1.0, abs(parent_J)):
                    continue
                key = (self._held_out_cost(committee, fit_rows, held_rows, t_u), cost) if on_held else (cost,)
                if best is None or key < best[0]:
                    best = (key, cost, B_u, tau_u, cut, mask, committee, rho_u)
            done.append(best is not None)
            if best is None:
                continue
            _, cost, B_u, tau_u, cut, mask, committee, rho_u = best
            committee["facet"] = search.effective_facets(committee, E, cut)
            committee.update(search.printed_polytope(committee, E, cut))
            nd.B, nd.rho, nd.mask, nd.t, nd.tau, nd.committee = B_u, rho_u, mask, cut, tau_u, committee
            nd.gain = parent - (cost * nd.idx.size if self._task == "classification" else cost)
        return done

    def _linear_candidates(self, K: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, float]]:
        """``init="linear"`` with ``groups`` and ``early_stopping``: the untrained linear start as
        candidate stumps beside a node's trained restarts, one per direction of the linear model, each
        as ``(B, rho, mask, tau)`` of K experts of which only the first (the direction itself) is
        kept.  Its cut is the threshold search's on the linear score, so the held-out groups choose
        between that cut and the trained ones: on HIV's large node of inactive molecules the trained
        committees can fit a few training scaffolds and cut a tiny group off, while the cut along the
        linear score carries over to new scaffolds (``benchmarks/results/polytope_hiv_depths.md``).
        Only with ``threshold_mode="search"`` (the linear start has no learned threshold) and the
        paper's gate."""
        if self._directions is None or self.threshold_mode != "search" or self.gate != "paper":
            return []
        W = self._directions.cpu().numpy().astype(np.float64)
        mask = np.zeros(K)
        mask[0] = 1.0
        return [(np.repeat(w[None], K, axis=0), np.zeros(K), mask, float(self.initial_steepness)) for w in W]

    def _least_loss_restarts(self, p: Any, idx: np.ndarray, node_of: np.ndarray, s: Any) -> np.ndarray:
        """For each node of a level whose training the limit stopped, the restart of least soft loss
        on (at most ``STOPPED_LOSS_ROWS`` seeded) rows of the level that it trained on."""
        torch, model = self._torch, self._model
        rows = np.arange(idx.size)
        if rows.size > STOPPED_LOSS_ROWS:
            rows = _data.seeded_rows(rows.size, STOPPED_LOSS_ROWS)
        dev = self._Xt.device
        sel = torch.as_tensor(idx[rows], device=dev)
        loss = model.held_out_loss(p, self._Xt[sel], self._target[sel],
                                   torch.as_tensor(node_of[rows], device=dev), s)  # (nodes, restarts)
        return loss.argmin(1).cpu().numpy()

    def _held_out_cost(self, committee: dict, fit_rows: np.ndarray, held_rows: np.ndarray, t_learned: float) -> float:
        """``early_stopping`` with ``groups``: the choice among a node's restarts.  The value is the hard
        impurity on the held-out groups (per row for classification, as :meth:`_cut`'s) of the cut
        searched on the rows trained on; +inf when those give no cut.  The restart of lowest value is
        kept (ties: the lower training impurity), so that a stump that only fits its training groups
        better loses to one that carries over to groups it has not seen.  Without groups the held-out
        rows are a random share of the node's, from the same groups as the rest, and the training
        impurity on all of the node's rows (more rows, no shift to see) chooses.  Measured on
        MoleculeNet's scaffold splits (test AUC, 5 seeds, an Intel Xeon): with scaffolds as groups HIV
        0.714 -> 0.740 and Bace 0.838 -> 0.849 (``benchmarks/results/polytope_hiv_depths_2d6d201.md``);
        Bace with random rows held out fell 0.846 -> 0.833 on this choice, hence not without groups.  On
        an AMD EPYC, whose float32 products round differently, that code gave HIV 0.723 and Bace 0.838
        (``polytope_hiv.md``'s notes).  With the linear start as a candidate too (:meth:`_linear_candidates`):
        HIV 0.744, and 0.734 rounding as a processor without AVX-512 (``polytope_hiv_depths.md``)."""
        cut, _ = self._cut(polytope_intensity(committee, self._E[fit_rows]), self._y[fit_rows], t_learned)
        if cut is None:
            return math.inf
        yh = self._y[held_rows]
        left = polytope_intensity(committee, self._E[held_rows]) <= cut
        h = (search.impurity(yh[left], self._task, self._n_classes)
             + search.impurity(yh[~left], self._task, self._n_classes))
        return h / yh.size if self._task == "classification" else h

    @staticmethod
    def _rows(a, idx: np.ndarray):
        """``a[idx]`` for the rows ``idx`` of one node, without a copy when they are every row: a node's
        rows are a sorted subset of ``range(n)``, so a node of ``n`` rows (the root) holds exactly
        ``range(n)`` and ``a`` itself serves (on 500,000 x 20 the copies cost 0.3 s, and up to seconds
        on freshly mapped memory)."""
        return a if idx.size == a.shape[0] else a[idx]

    def _hold_out(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``early_stopping``: ``(rows trained on, rows held out)`` of ``idx``, else ``(idx, [])``.

        The held-out rows are a seeded random share of ``idx`` (at least one row; none when ``idx``
        has fewer than two); with ``groups``, whole groups (:func:`hold_out_groups`), unless ``idx``
        holds a single group or no group fits the share, when rows are drawn as without groups."""
        if self.early_stopping is None or idx.size < 2:
            return idx, idx[:0]
        share = float(self.early_stopping)
        if self._groups is not None:
            out = hold_out_groups(self._groups[idx], share,
                                  lambda k: self._torch.randperm(k, generator=self._gen).numpy())
            if out.any():
                return idx[~out], idx[out]
        n_out = min(idx.size - 1, max(1, round(share * idx.size)))
        perm = idx[self._torch.randperm(idx.size, generator=self._gen).numpy()]
        return np.sort(perm[n_out:]), np.sort(perm[:n_out])

    def _cut(self, lam: np.ndarray, y: np.ndarray, t_learned: float) -> tuple[float | None, float]:
        """The hard threshold on lambda (left = ``lambda <= t``) and its child impurity J (spec §2.14)."""
        msl = int(self.min_samples_leaf)
        if self.threshold_mode == "search":
            n_left, theta, cost, _ = search.threshold_search(lam, y, self._task, self._n_classes, msl)
            if n_left == 0:
                return None, math.inf
            above = lam[lam > theta]
            return 0.5 * (theta + float(above.min())), cost  # midway to the next value: same training cut
        left = lam <= t_learned
        if min(left.sum(), (~left).sum()) < msl:
            return None, math.inf
        cost = search.impurity(y[left], self._task, self._n_classes) + search.impurity(y[~left], self._task,
                                                                                           self._n_classes)
        return t_learned, cost / y.size if self._task == "classification" else cost

    # -- refinement with the structure fixed (spec §3.6) --------------------------------------
    def _refine(self, nodes: list[_Node]) -> list[_Node] | None:
        torch, model = self._torch, self._model
        internal = [i for i, nd in enumerate(nodes) if nd.committee is not None]
        leaves = [i for i, nd in enumerate(nodes) if nd.committee is None]
        pos = {i: m for m, i in enumerate(internal)}
        paths: dict[int, list] = {0: []}
        for i in range(len(nodes)):  # children come after their parents
            nd = nodes[i]
            if nd.committee is not None:
                paths[nd.left] = paths[i] + [(pos[i], False)]
                paths[nd.right] = paths[i] + [(pos[i], True)]
        right, left = model.path_matrices([paths[i] for i in leaves], len(internal), len(leaves))
        dev, f32 = self._Xt.device, torch.float32

        def stack(attr: str) -> Any:
            return torch.tensor(np.stack([getattr(nodes[i], attr) for i in internal])[None], dtype=f32, device=dev)

        reference = self.gate == "reference"
        t = np.array([nodes[i].t for i in internal])
        if reference:  # each node's (a, c) from its tied weights and threshold (a < 0: the convex side left)
            a, t = np.array([search.paper_as_reference(nodes[i].rho, nodes[i].t) for i in internal]).T
        p = model.Params(stack("B"), stack("rho"), torch.tensor(t[None], dtype=f32, device=dev),
                         torch.tensor([[nodes[i].tau for i in internal]], dtype=f32, device=dev), stack("mask"),
                         right=torch.tensor(right, dtype=f32, device=dev), left=torch.tensor(left, dtype=f32, device=dev),
                         children=torch.tensor(_children(nodes, internal, leaves), device=dev),
                         a=torch.tensor(a[None], dtype=f32, device=dev) if reference else None)
        n = self._E.shape[0]
        fit, out = self._hold_out(np.arange(n))
        Xt, target, monitor = self._Xt, self._target, None
        if out.size:
            Xt, target, monitor = Xt[fit], target[fit], (Xt[out], target[out], None)
        s = self._settings(fit.size, self.refine_epochs, 20, 150, AUTO_STEPS // 2)
        s.progress = self._progress("refine", -1, s)
        status = model.train(p, Xt, target, s, self._gen, monitor, int(self.n_iter_no_change))
        self._record("refine", -1, p.history)
        if status == "time_limit":
            self._stopped = True
        if p.steps == 0:
            return None
        B, rho, t, tau, mask = (a.detach().cpu().numpy().astype(np.float64) for a in (p.B, p.rho, p.t, p.tau,
                                                                                      p.mask))
        slope = None if p.a is None else p.a.detach().cpu().numpy().astype(np.float64)
        out = [_Node(np.arange(0), nd.depth) for nd in nodes]
        out[0].idx = np.arange(n)
        for i, nd in enumerate(nodes):  # parents first: route the training set down the refined tree
            new = out[i]
            if nd.committee is None:
                continue
            m = pos[i]
            new.left, new.right = nd.left, nd.right
            new.B, new.tau = B[0, m], float(tau[0, m])
            if slope is None:
                new.mask = search.prune_mask(rho[0, m], mask[0, m])
                new.rho, new.t = rho[0, m], float(t[0, m])
            else:  # a slope that turned positive makes the gate's right child the convex side
                new.rho, new.t, swap = search.reference_as_paper(slope[0, m], t[0, m], rho.shape[-1])
                new.mask = mask[0, m]
                if swap:
                    new.left, new.right = nd.right, nd.left
            new.committee = search.raw_committee(new.B, new.rho, new.mask, self._mean, self._scale)
            E = self._E[new.idx]
            goes_left = polytope_intensity(new.committee, E) <= new.t
            out[new.left].idx, out[new.right].idx = new.idx[goes_left], new.idx[~goes_left]
            new.committee["facet"] = search.effective_facets(new.committee, E, new.t) if E.shape[0] else \
                np.ones_like(new.committee["r"])
            new.committee.update(search.printed_polytope(new.committee, E, new.t))
        return out

    # -- the fitted tree ---------------------------------------------------------------------
    def _leaf_params(self, idx: np.ndarray, fallback: tuple | None) -> tuple:
        y = self._y[idx]
        if self._task == "classification":
            counts = np.bincount(y, minlength=self._n_classes).astype(np.float64)
            if idx.size == 0 and fallback is not None:
                return counts, fallback[1]
            return counts, counts / max(counts.sum(), 1.0)
        if idx.size == 0 and fallback is not None:
            return np.array([0.0]), fallback[1]
        return np.array([float(idx.size)]), np.array([float(y.mean()) if idx.size else 0.0])

    def _build_tree(self, nodes: list[_Node], d: int, cats: list) -> Tree:
        builder = TreeBuilder(d, classes=getattr(self, "classes_", None), task=self._task,
                              feature_names=self._feature_names(), feature_categories=cats)
        ids: dict[int, int] = {}
        params: dict[int, tuple] = {}
        stack = [(0, None)]
        while stack:
            i, parent = stack.pop()
            params[i] = self._leaf_params(nodes[i].idx, None if parent is None else params[parent])
            ids[i] = builder.add_node(*params[i], depth=nodes[i].depth)
            nd = nodes[i]
            if nd.committee is not None:
                stack += [(nd.right, i), (nd.left, i)]
        for i, nd in enumerate(nodes):
            if nd.committee is not None:
                builder.set_split(ids[i], POLYTOPE, None, nd.t, ids[nd.left], ids[nd.right], polytope=nd.committee)
        return builder.build()


_DOC_PARAMS = """
    max_depth : int, default=3
        Levels of splits (0 gives a single leaf).
    max_facets : int, default=30
        K, the truncation of each node's gamma process: at most K experts, hence facets, per node.
    use_prior : bool, default=True
        Add the gamma-process / Student-t prior (spec §2.7) to the objective; False reproduces the
        reference code's unpenalised training.  On very wide data (thousands of features) the
        Student-t term, summed over every coefficient, can swamp the data term once the warm-up
        ends (seen on 2048-bit fingerprints): use False there, or a smaller ``prior_weight``.
    prior_weight : float, default=1.0
        ``w`` in ``H(Y|Z) + (w / N) L_reg`` (N the samples of the fit).
    prior_warmup : float, default=0.5
        Share of each fit's epochs with no prior, after which its weight ramps up linearly over a
        quarter of the epochs (spec R1: a prior from the first step collapses the committees).
    gamma0, c0 : float, default=1.0
        Mass and rate of the gamma process (``r_k ~ Gamma(gamma0 / K, c0)``).
    a_beta, b_beta : float, default=1e-6
        Shape and scale of the inverse-gamma variance of every coefficient (sparse facets).
    initial_steepness : float, default=1.0
        tau at the creation of a node's gate ``sigmoid(tau (lambda - t))``.
    steepness_inc : float, default=0.01
        tau grows by this after every epoch (annealing, spec §2.11); it carries on into refinement.
    learning_rate : float, default=0.01
        Adam's step size.
    epochs : int or "auto", default="auto"
        Epochs of each level's stumps; "auto" gives about 1,600 Adam steps (within [40, 300] epochs).
    batch_size : int or "auto", default="auto"
        Mini-batch size; "auto" is ``min(1000, ceil(n / 8))`` for a fit on n samples.
    refine : bool, default=True
        Fine-tune all committees of the grown tree together (spec §3.6); the refined tree is kept
        when its hard training impurity is not worse than the greedy tree's (``refined_``).
    refine_epochs : int or "auto", default="auto"
        Epochs of refinement; "auto" gives about 800 steps (within [20, 150] epochs).
    n_restarts : int, default=3
        Stumps trained at once (in one batch) per node; the one with the best hard cut is kept (with
        ``early_stopping`` and ``groups``: the best on the held-out groups).
        The stumps of all nodes of a level train together: an epoch of a level is one pass over the
        samples that reach it, so a deep tree costs about one epoch per level, not per node.
    threshold_mode : {"search", "half"}, default="search"
        "search" cuts each trained stump where the children's impurity is least (the paper's
        deterministic threshold search); "half" at the learned gate's 0.5 (the reference code).
    min_samples_split : int, default=10
        Nodes with fewer training samples are not split (nor pure ones).
    min_samples_leaf : int, default=1
        Fewest training samples on either side of a greedy cut.
    validation_fraction : float or None, default=None
        Ignored when ``fit`` is given ``X_val`` and ``y_val``, which then play its part.  Hold out
        this share of the training data (stratified for classification; whole groups with
        ``fit(..., groups=...)``) and select on it
        (spec §3.7, the paper's "early stopping for trees"): the depth up to ``max_depth`` whose
        greedy tree scores best there (accuracy; ROC AUC for two classes; minus the squared error
        for regression), then the refined tree only if it scores better there in at least 90% of
        500 paired bootstrap replicates of the validation rows (a gain within the noise of the
        rows that also chose the depth is not taken).  The tree is fitted on the
        other rows and not refitted.  None: the full depth, and the refined tree when its training
        impurity is not worse.
    scaling : {"feature", "global"}, default="feature"
        How the committees see the columns while training: each standardised on its own, or all
        with one mean and spread over every entry (the reference code's choice for molecular
        fingerprints, where standardising a rare bit on its own makes it a huge outlier).  The
        fitted splits are on the raw columns either way.
    gate : {"paper", "reference"}, default="paper"
        The committee's gate.  "paper": ``sigmoid(tau (sum_k r_k softplus(beta_k . x~) - t))`` with
        one weight ``r_k = exp(rho_k)`` per expert under the gamma-process prior (spec R2).
        "reference": the reference code's ``sigmoid(tau (c - a mean_k softplus(beta_k . x~)))``
        (spec §3.1 [REF]): no expert weights (hence no gamma-process term in the prior, only the
        coefficients' Student-t), a free slope ``a`` whose sign picks the side that is convex, and
        the offset ``c``.  Either way the fitted split is a ``POLYTOPE`` of ``tree_`` with the convex
        side left (a reference gate is stored with every ``r_k = |a| / K`` and ``t = -c``, or
        ``t = c`` with its children swapped when ``a > 0``), so prediction, ``export_text``, plots
        and saved files are the same for both.
    max_leaves : int or None, default=None
        Best-first growth (spec §3.5): every frontier leaf gets its stump, and the leaf whose cut
        lowers the training impurity most (``n`` times the information gain for classification,
        the drop in squared error for regression) is split, until there are ``max_leaves`` leaves
        or no leaf can be split.  Unlike the reference code, ``max_depth`` still applies: no node
        deeper than ``max_depth`` is split (raise it to let the gains alone shape the tree).  With
        validation rows (``validation_fraction`` or ``X_val``) the selection is over the number of
        leaves (the trees after the first k splits) instead of the depth.  None: level-by-level
        growth to ``max_depth``.
    init : {"random", "linear"}, default="random"
        How each node's experts start.  "random": the paper's draw (spec §3.0).  "linear" (beyond the
        paper): every node's experts start at the coefficients of one ridge model of the whole
        training set (for classification one direction per class against the rest, one for two
        classes, in logit units; penalty by leave-one-out cross-validation; at most 10,000 rows)
        plus a small random perturbation, so that the first cut of every stump lies along that
        model's score.  On wide, nearly separable data (thousands of fingerprint bits, fewer rows)
        the entropy objective alone picks directions that do not generalise; pair it with
        ``early_stopping`` so that training moves away from the linear start only while held-out
        rows agree; with ``groups`` too, the untrained linear start (one expert along the linear
        score, cut by the threshold search) is one more candidate beside the trained restarts, kept
        where its cut does best on the held-out groups.  (The linear model is fit before any group
        is held out, so it has seen the held-out groups' labels: the choice leans towards it.  Fit
        without them, the choice lost 0.03-0.06 test AUC on Bace by scaffold:
        ``benchmarks/results/polytope_bace_honest_linear.md``.)  The
        linear fit counts towards ``time_limit`` but is not interrupted
        by it (about 20 s on 10,000 rows of 2,048 columns here).
    early_stopping : float or None, default=None
        Beyond the paper: hold out this share of each node's rows (and, in refinement, of all rows)
        from the soft training; every stump (or the refined tree) keeps its parameters of the epoch
        whose soft loss on the held-out rows is lowest, its initialisation included, and training
        stops after ``n_iter_no_change`` epochs without improvement.  The hard cuts are still searched
        on all of the node's rows.  With ``fit(..., groups=...)`` whole groups are held out, and they
        also choose among a node's ``n_restarts`` stumps (and, with ``init="linear"``, the linear
        start): the one whose cut, searched on the rows trained on, has the lowest impurity on the
        held-out groups
        (rows again where a node holds one group).  None: train every epoch on every row (the paper).
    n_iter_no_change : int, default=10
        Patience of ``early_stopping`` in epochs.
    random_state : int, RandomState or None, default=None
        Seeds the initialisation and the mini-batches; a fixed int gives the same tree on one CPU
        (float32 products round differently on other processors, so not bit for bit across machines).
    device : {"cpu", "cuda", "auto"}, default="cpu"
        Where PyTorch trains ("auto": a GPU when one is visible).  Prediction is always NumPy.
    n_jobs : int or None, default=None
        PyTorch CPU threads during the fit (None: 1; -1: every core).  Restored afterwards.
    time_limit : float or None, default=60
        Seconds for the whole fit, checked between optimiser steps; when it runs out the tree
        grown so far is returned (with a ``LimitWarning``), unrefined if refinement had not
        finished.  Stumps whose training it stopped after at least one step are still cut at their
        best threshold (one restart per node: the one of least soft loss) and kept where that
        lowers the node's impurity, so a short limit on many rows returns a split, not a single
        leaf.  A level's training stops early enough to leave that cut its time (three times what
        its initialisation took, one pass over its rows).
    verbose : int, default=0
        > 0 prints per-epoch progress to standard error about once a second (2: every epoch).
"""

_DOC_ATTRS = """
    n_facets_ : ndarray of int, shape (tree_.n_nodes,)
        Effective facets of every node's polytope (spec §3.9; 0 at leaves).
    epoch_history_ : dict of lists
        One entry per epoch: ``phase`` ("grow" or "refine"), ``level`` (the depth of the nodes being
        grown, whose stumps train together; -1 in refinement), ``epoch``, ``loss`` (soft data objective
        of the level or the tree, mean over the epoch's batches and the restarts), ``objective``
        (with the prior, summed over the restarts) and ``tau`` (mean).
    refined_ : bool
        Whether ``tree_`` is the refined tree.
    best_depth_, best_n_leaves_, validation_scores_ : int, int, dict
        With ``validation_fraction`` (or ``X_val``): the depth and leaves of the selected tree, and
        the validation scores of the greedy tree at every depth (``"depth"``, ``"greedy"``; with
        ``max_leaves``, at every number of leaves, ``"n_leaves"``) and of the refined one
        (``"refined"``, NaN when not refined), with the share of bootstrap replicates of the
        validation rows in which the refined tree scores better (``"refined_share_better"``, NaN
        unless it scores better on the rows themselves; NaN, and the greedy tree kept, when
        ``time_limit`` had passed before the bootstrap).
    device_ : str
        Where it was trained.
    n_features_in_, feature_names_in_, binarizer_ (None), fit_time_, compile_time_, stop_reason_
        As for every arboretum estimator.
"""


class ConvexPolytopeTreeClassifier(ClassifierMixin, _ConvexPolytopeTreeBase):
    __doc__ = f"""Convex polytope tree classifier (Armandpour & Zhou 2020): each split is a convex polytope.

    At each node a committee of K linear experts votes with a noisy-OR,
    ``P(right | x) = 1 - exp(-lambda(x))`` with ``lambda(x) = sum_k r_k softplus(beta_k . x~)``;
    samples with ``lambda(x) <= t`` (inside a convex polytope of at most K facets) go left.  The
    gamma-process prior on the experts' weights ``r_k`` leaves few facets per node.  Trained by
    maximising the mutual information between label and leaf of the soft tree (spec-003),
    greedily node by node, then refined end to end.  Fitting needs PyTorch
    (``pip install "arboretum[polytope]"``); prediction does not.

    Parameters
    ----------{_DOC_PARAMS}
    Attributes
    ----------
    tree_ : arboretum.Tree
        ``POLYTOPE`` splits on the raw columns; leaves hold the class counts and proportions of the
        training samples that reach them (hard routing).
    classes_ : ndarray of shape (n_classes,)
    objective_ : float
        Conditional entropy of the label given the leaf on the training data (nats).{_DOC_ATTRS}
    Examples
    --------
    >>> import numpy as np
    >>> from arboretum import ConvexPolytopeTreeClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(400, 2))
    >>> y = (np.hypot(*X.T) < 0.6).astype(int)
    >>> clf = ConvexPolytopeTreeClassifier(max_depth=1, random_state=0).fit(X, y)
    >>> bool(clf.score(X, y) > 0.95)
    True
    """

    def fit(self, X, y, *, X_val=None, y_val=None, groups=None) -> "ConvexPolytopeTreeClassifier":
        """Grow (and refine) the tree on ``(X, y)``.

        Parameters
        ----------
        X : array-like or pandas DataFrame of shape (n_samples, n_features)
            Numbers, booleans and categories (split on the codes of their labels).
        y : array-like of shape (n_samples,)
        X_val, y_val : array-like, optional
            Validation rows that select the depth and the greedy or refined tree, as
            ``validation_fraction`` does with rows it holds out (scikit-learn's
            ``HistGradientBoosting`` convention).  Their labels must occur in ``y``.
        groups : array-like of shape (n_samples,), optional
            A group label per row (a molecule's scaffold, a patient, a site): the rows that
            ``early_stopping`` and ``validation_fraction`` hold out are then whole groups, so that the
            held-out scores see the shift that data from unseen groups has.  Without one of those
            two it has no effect (with a warning).

        Returns
        -------
        self
        """
        self._validate_params()
        y_enc, classes = check_classification_targets_encoded(
            y, n_samples=_num_samples(X), estimator_name=type(self).__name__
        )
        groups = self._check_groups(groups, _num_samples(X), X_val is not None)
        self.classes_ = classes
        self._fit(X, y_enc, len(classes), self._val_pair(X_val, y_val, classes), groups)
        return self

    _predict_methods = ("map",)

    def predict_proba(self, X, method: str = "map") -> np.ndarray:
        """Class proportions of the training samples in each sample's leaf (NumPy only).

        Parameters
        ----------
        X : array-like or pandas DataFrame of shape (n_samples, n_features_in_)
        method : {"map"}, default="map"
            The shared vocabulary: one tree, so only "map".

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        self._method(method)
        leaves = self.apply(X)
        return self.tree_.value[leaves].copy()

    def predict(self, X) -> np.ndarray:
        """The majority class of each sample's leaf."""
        proba = self.predict_proba(X)  # checks that the estimator is fitted first
        return self.classes_[np.argmax(proba, axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = True
        tags.non_deterministic = self.device != "cpu"
        return tags


class ConvexPolytopeTreeRegressor(RegressorMixin, _ConvexPolytopeTreeBase):
    __doc__ = f"""Convex polytope tree regressor: polytope splits trained on the soft within-leaf variance.

    The regression counterpart of :class:`ConvexPolytopeTreeClassifier` (spec-003 §2.10): the
    soft tree minimises ``(1/N) sum_l sum_i pi_l(x_i) (y_i - mu_l)^2`` on standardised targets and
    the greedy cut minimises the children's squared error.

    Parameters
    ----------{_DOC_PARAMS}
    Attributes
    ----------
    tree_ : arboretum.Tree
        Leaves hold the number of samples and the mean target.
    objective_ : float
        Training mean squared error of ``tree_`` (units of ``y`` squared).{_DOC_ATTRS}
    """

    _task = "regression"

    def fit(self, X, y, *, X_val=None, y_val=None, groups=None) -> "ConvexPolytopeTreeRegressor":
        """Grow (and refine) the tree on ``(X, y)``.

        Parameters
        ----------
        X : array-like or pandas DataFrame of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        X_val, y_val : array-like, optional
            Validation rows that select the depth and the greedy or refined tree (see
            ``validation_fraction``).
        groups : array-like of shape (n_samples,), optional
            A group label per row (a molecule's scaffold, a patient, a site): the rows that
            ``early_stopping`` and ``validation_fraction`` hold out are then whole groups, so that the
            held-out scores see the shift that data from unseen groups has.  Without one of those
            two it has no effect (with a warning).

        Returns
        -------
        self
        """
        self._validate_params()
        y = check_regression_targets(y, n_samples=_num_samples(X), estimator_name=type(self).__name__)
        groups = self._check_groups(groups, _num_samples(X), X_val is not None)
        self._fit(X, np.asarray(y, dtype=np.float64), 0, self._val_pair(X_val, y_val, None), groups)
        return self

    def predict(self, X) -> np.ndarray:
        """The mean training target of each sample's leaf (NumPy only)."""
        leaves = self.apply(X)
        return self.tree_.value[leaves, 0].copy()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.device != "cpu"
        return tags


@register("polytope", lambda: [])
def _warm() -> None:
    """PyTorch's first use in a process (autograd engine, optimiser, lazily imported modules:
    several seconds here) on two tiny fits, so that it counts in ``compile_time_`` and not against
    ``time_limit``, like the numba families' compilation.  Nothing to do without PyTorch."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(40, 2))
    kw = dict(max_depth=2, max_facets=2, epochs=2, batch_size=20, refine_epochs=1, n_restarts=1,
              min_samples_split=2, random_state=0, time_limit=None)
    ConvexPolytopeTreeClassifier(**kw).fit(X, (X[:, 0] > 0).astype(int))
    ConvexPolytopeTreeRegressor(**kw).fit(X, X[:, 0])
