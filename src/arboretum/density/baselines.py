"""The paper's baselines (spec §7): the high-dimensional histogram and a density estimation tree
(Ram & Gray 2011) on categorical volumes."""

from __future__ import annotations

import math
import numbers
import time
from typing import Any

import numpy as np
from sklearn.model_selection import KFold

from ..base import constraints
from ..data import Interval
from .base import DENSITY_CONSTRAINTS, DensityEstimator, log_volume
from .space import distinct_configurations

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
        uniq, counts, _ = distinct_configurations(codes, q)
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

    # A grown tree: a list of nodes [box, configs (indices of distinct configurations), left, right, count,
    # log volume, split feature, split category].  The risk, the splits and the pruning depend on the rows
    # only through the counts of the distinct configurations, so the tree is grown over those (the same
    # tree as over the rows, in time ~ the number of distinct configurations instead of rows).
    def _grow(self, configs: np.ndarray, weights: np.ndarray, deadline: float | None = None) -> list:
        full = self._full_box()
        held = np.flatnonzero(weights > 0)
        nodes = [[full, held, -1, -1, int(weights[held].sum()), log_volume(full), -1, -1]]
        stack = [0]
        while stack:
            if deadline is not None and time.perf_counter() >= deadline:
                break  # stopped: the tree grown so far (every node a valid box)
            i = stack.pop()
            box, idx, size, logv = nodes[i][0], nodes[i][1], nodes[i][4], nodes[i][5]
            if size <= self.max_leaf_size:
                continue
            best, arg = 0.0, None
            v_rest = math.exp(logv)
            r_parent = -(size ** 2) / v_rest
            w = weights[idx]
            for j, m in enumerate(box):
                if int(m).bit_count() < 2:
                    continue
                cnt = np.bincount(configs[idx, j], weights=w, minlength=len(self.categories_[j]))
                v_cat = v_rest / int(m).bit_count()
                for c in range(len(cnt)):
                    if not (int(m) >> c) & 1:
                        continue
                    nl = int(cnt[c])
                    nr = size - nl
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
            mask = configs[idx, j] == c
            nl = int(w[mask].sum())
            nodes[i][2], nodes[i][3], nodes[i][6], nodes[i][7] = len(nodes), len(nodes) + 1, j, c
            nodes.append([left_box, idx[mask], -1, -1, nl, log_volume(left_box), -1, -1])
            nodes.append([right_box, idx[~mask], -1, -1, size - nl, log_volume(right_box), -1, -1])
            stack += [len(nodes) - 1, len(nodes) - 2]
        return nodes

    @staticmethod
    def _risk(node: list, n: int) -> float:
        return -(node[4] ** 2) / (n * n * math.exp(node[5]))

    def _prune_sequence(self, nodes: list, n: int, deadline: float | None = None) -> tuple[list[float], np.ndarray]:
        """Weakest-link pruning (cost-complexity, as CART and Ram & Gray): the penalties at which subtrees
        collapse, increasing, and for every node the penalty at which it becomes a leaf (inf: never).

        Each step collapses the internal node of smallest ``g(t) = (R(t) - R(T_t)) / (|T_t| - 1)`` and
        updates its ancestors' subtree risks and leaf counts (O(nodes) per step, vectorised).  Stopped by
        ``deadline``, the sequence so far (the nodes not yet collapsed never are)."""
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
            if deadline is not None and len(alphas) % 64 == 0 and time.perf_counter() >= deadline:
                break
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

    @staticmethod
    def _held_out_terms(nodes: list, collapse: np.ndarray, configs: np.ndarray, test_weights: np.ndarray,
                        n_train: int, n_test: int, grid: list) -> np.ndarray:
        """The held-out ISE estimate ``int f**2 - 2 mean_test f`` of the tree pruned at every penalty of
        ``grid`` (the tree grown on the training fold, ``f = n_l / (n_train V_l)``).

        Every test configuration is sent down the grown tree once; the leaf of a pruned tree is then the
        highest ancestor already collapsed, found level by level (numpy over the nodes)."""
        m = len(nodes)
        left = np.array([nd[2] for nd in nodes])
        right = np.array([nd[3] for nd in nodes])
        size = np.array([nd[4] for nd in nodes], dtype=np.float64)
        vol = np.exp(np.array([nd[5] for nd in nodes]))
        parent = np.full(m, -1)
        depth = np.zeros(m, dtype=np.int64)
        test = np.flatnonzero(test_weights > 0)
        grown_leaf = np.zeros(test.size, dtype=np.int64)
        members = {0: np.arange(test.size)}
        for i in range(m):  # parents come before their children
            if left[i] >= 0:
                parent[left[i]] = parent[right[i]] = i
                depth[left[i]] = depth[right[i]] = depth[i] + 1
                here = members.pop(i)
                go_left = configs[test[here], nodes[i][6]] == nodes[i][7]
                members[left[i]], members[right[i]] = here[go_left], here[~go_left]
        for i, here in members.items():
            grown_leaf[here] = i
        levels = [np.flatnonzero(depth == d) for d in range(1, int(depth.max()) + 1)]
        dens = size / (n_train * vol)
        w = test_weights[test].astype(np.float64)
        out = np.zeros(len(grid))
        rep = np.arange(m)
        for g, a in enumerate(grid):
            rep[:] = np.arange(m)
            for lev in levels:  # a node in a collapsed subtree belongs to its collapsed ancestor's leaf
                par = parent[lev]
                inside = (rep[par] != par) | (collapse[par] <= a)
                rep[lev] = np.where(inside, rep[par], lev)
            leaf = (rep == np.arange(m)) & ((left < 0) | (collapse <= a))
            sq = float(np.sum(dens[leaf] ** 2 * vol[leaf]))
            out[g] = sq - 2.0 * float(np.dot(w, dens[rep[grown_leaf]])) / n_test
        return out

    def fit(self, X: Any, y: Any = None) -> "CategoricalDET":
        """Grow, cross-validate the pruning penalty, prune; each step watches ``time_limit`` (stopped, the
        tree so far: grown part-way, or pruned at the penalty the folds done so far chose)."""
        self._validate_params()
        if self.min_leaf_size > self.max_leaf_size:
            raise ValueError(f"min_leaf_size must be at most max_leaf_size={self.max_leaf_size}; "
                             f"got {self.min_leaf_size}")
        clock = self._start_clock()
        codes = self._fit_codes_density(X)
        n = codes.shape[0]
        configs, weights, inverse = distinct_configurations(codes, self._q)
        deadline = clock.deadline
        nodes = self._grow(configs, weights, deadline)
        alphas, collapse = self._prune_sequence(nodes, n, deadline)
        alpha = 0.0
        if self.cv >= 2 and len(alphas) > 1 and n >= self.cv and not clock.expired():
            # geometric midpoints, as in CART's cross-validation
            grid = [math.sqrt(max(a, 1e-300) * max(b, 1e-300)) if a > 0 else 0.0
                    for a, b in zip(alphas, alphas[1:] + [alphas[-1] * 2 + 1e-12])]
            if len(grid) > MAX_CV_PENALTIES:  # large trees: an evenly spread subset of the penalties
                grid = [grid[i] for i in np.unique(np.linspace(0, len(grid) - 1, MAX_CV_PENALTIES).astype(int))]
            loss = np.zeros(len(grid))
            rs = self.random_state
            folds = KFold(self.cv, shuffle=True, random_state=rs if isinstance(rs, numbers.Integral) else 0)
            D = configs.shape[0]
            for tr, te in folds.split(codes):
                if clock.expired():
                    break
                sub = self._grow(configs, np.bincount(inverse[tr], minlength=D), deadline)
                _, sub_collapse = self._prune_sequence(sub, tr.size, deadline)
                if clock.expired():
                    break  # a fold cut short would bias the estimate: only whole folds count
                loss += self._held_out_terms(sub, sub_collapse, configs, np.bincount(inverse[te], minlength=D),
                                             tr.size, te.size, grid)
            alpha = grid[int(np.argmin(loss))]
        leaves = self._leaves(nodes, collapse, alpha)
        boxes = [nodes[i][0] for i in leaves]
        counts = np.array([nodes[i][4] for i in leaves], dtype=np.float64)
        logv = np.array([nodes[i][5] for i in leaves])
        self._set_leaves(boxes, counts, logv, n, "mle", 0.0)
        self.ccp_alpha_ = float(alpha)
        self.fit_time_ = clock.elapsed()
        self._set_stop("completed" if not clock.expired() else "time_limit",
                       f"returning the tree so far ({self.n_leaves_} leaves, pruning penalty {alpha:.3g})")
        return self

