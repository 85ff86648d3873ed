"""The paper's baselines (spec §7): the high-dimensional histogram and a density estimation tree
(Ram & Gray 2011) on categorical volumes."""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
from sklearn.model_selection import KFold

from ..base import constraints
from ..data import Interval
from .base import DENSITY_CONSTRAINTS, DensityEstimator, log_volume

__all__ = ["HistogramDensity", "CategoricalDET"]

#: The most pruning penalties CategoricalDET cross-validates (all of them for trees with fewer steps).
MAX_CV_PENALTIES = 64


class HistogramDensity(DensityEstimator):
    """One bin per configuration: ``f(x) = n_x / n`` (``alpha=0``, the paper's histogram) or the
    Dirichlet-smoothed ``(n_x + alpha) / (n + |X| alpha)`` (spec A2).

    ``n_leaves_`` is the number of bins, ``|X| = prod_j q_j`` (spec A18); the leaf arrays hold the
    non-empty bins, then (with ``alpha > 0``) one leaf for all the empty bins together.

    Parameters
    ----------
    alpha : float, default=0.0
    categories, n_bins, handle_unknown, time_limit, verbose
        As :class:`LeafSparseDensityTree`.
    """

    def __init__(self, alpha: float = 0.0, *, categories: Any = None, n_bins: int | None = None,
                 handle_unknown: str = "error", time_limit: float | None = 60.0, verbose: int = 0) -> None:
        self.alpha = alpha
        self.categories = categories
        self.n_bins = n_bins
        self.handle_unknown = handle_unknown
        self.time_limit = time_limit
        self.verbose = verbose

    _parameter_constraints = constraints(
        "time_limit", "verbose", alpha=[Interval(numbers.Real, 0, None, closed="left")], **DENSITY_CONSTRAINTS)

    def fit(self, X: Any, y: Any = None) -> "HistogramDensity":
        """Count the configurations of ``X``."""
        self._validate_params()
        clock = self._start_clock()
        codes = self._fit_codes_density(X)
        n = codes.shape[0]
        q = self._q
        uniq, counts = np.unique(codes, axis=0, return_counts=True)
        boxes = [tuple(1 << int(c) for c in row) for row in uniq]
        log_dom = float(np.sum(np.log(q)))
        n_empty = math.exp(log_dom) - len(uniq) if log_dom < 700 else math.inf
        a = float(self.alpha)
        logv = np.zeros(len(boxes))
        cnt = counts.astype(np.float64)
        if a > 0 and n_empty > 0:  # the empty bins share one leaf (the whole domain, matched last)
            boxes.append(self._full_box())
            cnt = np.append(cnt, 0.0)
            logv = np.append(logv, math.log(n_empty))
        self.leaf_boxes_ = np.array(boxes, dtype=np.uint64)
        self.leaf_counts_ = cnt
        self.leaf_log_volumes_ = logv
        if a > 0:
            log_total = math.log(n + a * math.exp(log_dom)) if log_dom < 700 else log_dom + math.log(a)
            logp_bin = np.log(cnt + a) - log_total  # per configuration
            self.leaf_log_densities_ = logp_bin
            prob = np.exp(logp_bin + logv)
        else:
            prob = cnt / n
            self.leaf_log_densities_ = np.log(prob)
        self.leaf_probabilities_ = prob / prob.sum()
        self.n_leaves_ = int(len(boxes))
        self.n_bins_ = math.exp(log_dom) if log_dom < 700 else math.inf
        self.fit_time_ = clock.elapsed()
        self._set_stop("completed")
        return self

    def _check_loaded(self) -> None:
        super()._check_loaded()

    @property
    def tree_(self) -> "Any":
        raise AttributeError("HistogramDensity has no tree_: it is one bin per configuration")

    def export_text(self, decimals: int = 4) -> str:  # type: ignore[override]
        """One line per non-empty bin (then the empty bins together): its configuration, P, f and V."""
        return self._export_leaves(decimals)


class CategoricalDET(DensityEstimator):
    """A density estimation tree (Ram & Gray 2011) on categorical volumes (spec §7.2).

    Greedy binary splits ``x_j = c`` / ``x_j != c`` (the family MLPACK's DET builds on one-hot data)
    that most reduce the integrated-squared-error risk ``R(t) = -n_t**2 / (n**2 V_t)``, grown while a node
    holds more than ``max_leaf_size`` rows and both children at least ``min_leaf_size``; then
    cost-complexity pruning with the penalty chosen by ``cv``-fold cross-validation of the held-out ISE
    estimate.  Leaf densities ``n_l / (n V_l)`` with categorical volumes, so never above 1 (spec C18).

    Parameters
    ----------
    min_leaf_size : int, default=5
    max_leaf_size : int, default=10
    cv : int, default=10
        Folds of the pruning cross-validation (0 or 1: no pruning).
    categories, n_bins, handle_unknown, time_limit, random_state, verbose
    """

    def __init__(self, min_leaf_size: int = 5, max_leaf_size: int = 10, *, cv: int = 10, categories: Any = None,
                 n_bins: int | None = None, handle_unknown: str = "error", time_limit: float | None = 60.0,
                 random_state: Any = None, verbose: int = 0) -> None:
        self.min_leaf_size = min_leaf_size
        self.max_leaf_size = max_leaf_size
        self.cv = cv
        self.categories = categories
        self.n_bins = n_bins
        self.handle_unknown = handle_unknown
        self.time_limit = time_limit
        self.random_state = random_state
        self.verbose = verbose

    _parameter_constraints = constraints(
        "time_limit", "random_state", "verbose",
        min_leaf_size=[Interval(numbers.Integral, 1, None)],
        max_leaf_size=[Interval(numbers.Integral, 1, None)],
        cv=[Interval(numbers.Integral, 0, None)],
        **DENSITY_CONSTRAINTS,
    )

    # a grown tree: list of nodes [box, rows (index array), left, right]
    def _grow(self, codes: np.ndarray, n_total: int) -> list:
        full = self._full_box()
        nodes = [[full, np.arange(codes.shape[0]), -1, -1]]
        stack = [0]
        while stack:
            i = stack.pop()
            box, rows = nodes[i][0], nodes[i][1]
            if rows.size <= self.max_leaf_size:
                continue
            best, arg = 0.0, None
            r_parent = -(rows.size ** 2) / math.exp(log_volume(box))
            for j, m in enumerate(box):
                if int(m).bit_count() < 2:
                    continue
                col = codes[rows, j]
                cnt = np.bincount(col, minlength=len(self.categories_[j]))
                v_rest = math.exp(log_volume(box))
                v_cat = v_rest / int(m).bit_count()
                for c in range(len(cnt)):
                    if not (int(m) >> c) & 1:
                        continue
                    nl, nr = int(cnt[c]), rows.size - int(cnt[c])
                    if nl < self.min_leaf_size or nr < self.min_leaf_size:
                        continue
                    gain = r_parent + nl ** 2 / v_cat + nr ** 2 / (v_rest - v_cat)
                    if gain > best + 1e-12:  # the reduction of the risk R(t) - R(left) - R(right), times n**2
                        best, arg = gain, (j, c)
            if arg is None:
                continue
            j, c = arg
            left_box = box[:j] + (1 << c,) + box[j + 1:]
            right_box = box[:j] + (int(box[j]) & ~(1 << c),) + box[j + 1:]
            mask = codes[rows, j] == c
            nodes[i][2], nodes[i][3] = len(nodes), len(nodes) + 1
            nodes.append([left_box, rows[mask], -1, -1])
            nodes.append([right_box, rows[~mask], -1, -1])
            stack += [len(nodes) - 1, len(nodes) - 2]
        del n_total
        return nodes

    @staticmethod
    def _risk(node: list, n: int) -> float:
        return -(node[1].size ** 2) / (n * n * math.exp(log_volume(node[0])))

    def _prune_sequence(self, nodes: list, n: int) -> tuple[list[float], np.ndarray]:
        """Weakest-link pruning (cost-complexity, as CART and Ram & Gray): the penalties at which subtrees
        collapse, increasing, and for every node the penalty at which it becomes a leaf (inf: never).

        Each step collapses the internal node of smallest ``g(t) = (R(t) - R(T_t)) / (|T_t| - 1)`` and
        updates its ancestors' subtree risks and leaf counts (O(nodes) per step, vectorised)."""
        m = len(nodes)
        left = np.array([nd[2] for nd in nodes])
        right = np.array([nd[3] for nd in nodes])
        parent = np.full(m, -1)
        for i in range(m):
            if left[i] >= 0:
                parent[left[i]] = parent[right[i]] = i
        R = np.array([self._risk(nd, n) for nd in nodes])
        S, L = R.copy(), np.ones(m)
        for i in range(m - 1, -1, -1):  # children come after their parent
            if left[i] >= 0:
                S[i], L[i] = S[left[i]] + S[right[i]], L[left[i]] + L[right[i]]
        live = left >= 0  # internal nodes of the current pruned tree
        collapse = np.full(m, np.inf)
        alphas = [0.0]
        while live.any():
            with np.errstate(divide="ignore", invalid="ignore"):
                g = np.where(live, (R - S) / (L - 1), np.inf)
            t = int(np.argmin(g))
            a = max(float(g[t]), alphas[-1])
            alphas.append(a)
            collapse[t] = a
            dS, dL = R[t] - S[t], 1 - L[t]
            stack = [t]
            while stack:  # the subtree of t leaves the pruned tree
                i = stack.pop()
                live[i] = False
                if left[i] >= 0:
                    stack += [left[i], right[i]]
            S[t], L[t] = R[t], 1
            p = parent[t]
            while p >= 0:
                S[p] += dS
                L[p] += dL
                p = parent[p]
        return alphas, collapse

    @staticmethod
    def _leaves(nodes: list, collapse: np.ndarray, alpha: float) -> list[int]:
        """Leaves of the tree pruned at penalty ``alpha``, left to right."""
        out, stack = [], [0]
        while stack:
            i = stack.pop()
            if nodes[i][2] < 0 or collapse[i] <= alpha:
                out.append(i)
            else:
                stack += [nodes[i][3], nodes[i][2]]
        return out

    def fit(self, X: Any, y: Any = None) -> "CategoricalDET":
        """Grow, cross-validate the pruning penalty, prune."""
        self._validate_params()
        if self.min_leaf_size > self.max_leaf_size:
            raise ValueError(f"min_leaf_size must be at most max_leaf_size={self.max_leaf_size}; "
                             f"got {self.min_leaf_size}")
        clock = self._start_clock()
        codes = self._fit_codes_density(X)
        n = codes.shape[0]
        nodes = self._grow(codes, n)
        alphas, collapse = self._prune_sequence(nodes, n)
        alpha = 0.0
        if self.cv >= 2 and len(alphas) > 1 and n >= self.cv:
            # geometric midpoints, as in CART's cross-validation
            grid = [math.sqrt(max(a, 1e-300) * max(b, 1e-300)) if a > 0 else 0.0
                    for a, b in zip(alphas, alphas[1:] + [alphas[-1] * 2 + 1e-12])]
            if len(grid) > MAX_CV_PENALTIES:  # large trees: an evenly spread subset of the penalties
                grid = [grid[i] for i in np.unique(np.linspace(0, len(grid) - 1, MAX_CV_PENALTIES).astype(int))]
            loss = np.zeros(len(grid))
            rs = self.random_state
            folds = KFold(self.cv, shuffle=True, random_state=rs if isinstance(rs, numbers.Integral) else 0)
            for tr, te in folds.split(codes):
                if clock.expired():
                    break
                sub = self._grow(codes[tr], tr.size)
                _, sub_collapse = self._prune_sequence(sub, tr.size)
                for g, a in enumerate(grid):
                    leaves = self._leaves(sub, sub_collapse, a)
                    dens = [sub[i][1].size / (tr.size * math.exp(log_volume(sub[i][0]))) for i in leaves]
                    sq = sum(d * d * math.exp(log_volume(sub[i][0])) for d, i in zip(dens, leaves))
                    boxes = np.array([sub[i][0] for i in leaves], dtype=np.uint64)
                    from . import _kernels as K

                    which = K.first_match(codes[te], boxes)
                    loss[g] += sq - 2.0 * float(np.mean(np.asarray(dens)[which]))
            alpha = grid[int(np.argmin(loss))]
        leaves = self._leaves(nodes, collapse, alpha)
        boxes = [nodes[i][0] for i in leaves]
        counts = np.array([nodes[i][1].size for i in leaves], dtype=np.float64)
        logv = np.array([log_volume(b) for b in boxes])
        self._set_leaves(boxes, counts, logv, n, "mle", 0.0)
        self.ccp_alpha_ = float(alpha)
        self.fit_time_ = clock.elapsed()
        self._set_stop("completed" if not clock.expired() else "time_limit")
        return self

