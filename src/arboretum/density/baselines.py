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

    def _prune_sequence(self, nodes: list, n: int) -> list[tuple[float, frozenset]]:
        """Weakest-link pruning: (alpha, set of internal nodes collapsed) for increasing alpha."""
        collapsed: set = set()
        seq = [(0.0, frozenset())]

        def leaves_and_risk(i: int) -> tuple[int, float]:
            if nodes[i][2] < 0 or i in collapsed:
                return 1, self._risk(nodes[i], n)
            a, ra = leaves_and_risk(nodes[i][2])
            b, rb = leaves_and_risk(nodes[i][3])
            return a + b, ra + rb

        while nodes[0][2] >= 0 and 0 not in collapsed:
            best, arg = math.inf, None
            for i, nd in enumerate(nodes):
                if nd[2] < 0 or i in collapsed or not self._active(nodes, i, collapsed):
                    continue
                k, r_sub = leaves_and_risk(i)
                g = (self._risk(nd, n) - r_sub) / (k - 1)
                if g < best:
                    best, arg = g, i
            if arg is None:
                break
            collapsed.add(arg)
            seq.append((max(best, seq[-1][0]), frozenset(collapsed)))
        return seq

    @staticmethod
    def _active(nodes: list, i: int, collapsed: set) -> bool:
        # a node is in the pruned tree when no ancestor is collapsed
        parent = {c: p for p, nd in enumerate(nodes) for c in (nd[2], nd[3]) if c >= 0}
        while i in parent:
            i = parent[i]
            if i in collapsed:
                return False
        return True

    @staticmethod
    def _leaves(nodes: list, collapsed: frozenset) -> list[int]:
        out, stack = [], [0]
        while stack:
            i = stack.pop()
            if nodes[i][2] < 0 or i in collapsed:
                out.append(i)
            else:
                stack += [nodes[i][3], nodes[i][2]]
        return out

    @staticmethod
    def _pruned_at(seq: list, alpha: float) -> frozenset:
        chosen = seq[0][1]
        for a, col in seq:
            if a <= alpha:
                chosen = col
        return chosen

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
        seq = self._prune_sequence(nodes, n)
        alpha = 0.0
        if self.cv >= 2 and len(seq) > 1 and n >= self.cv:
            alphas = [a for a, _ in seq]
            # geometric midpoints, as in CART's cross-validation
            grid = [math.sqrt(max(a, 1e-300) * max(b, 1e-300)) if a > 0 else 0.0
                    for a, b in zip(alphas, alphas[1:] + [alphas[-1] * 2 + 1e-12])]
            loss = np.zeros(len(grid))
            rs = self.random_state
            folds = KFold(self.cv, shuffle=True, random_state=rs if isinstance(rs, numbers.Integral) else 0)
            for tr, te in folds.split(codes):
                if clock.expired():
                    break
                sub = self._grow(codes[tr], tr.size)
                sub_seq = self._prune_sequence(sub, tr.size)
                for g, a in enumerate(grid):
                    leaves = self._leaves(sub, self._pruned_at(sub_seq, a))
                    dens = [sub[i][1].size / (tr.size * math.exp(log_volume(sub[i][0]))) for i in leaves]
                    sq = sum(d * d * math.exp(log_volume(sub[i][0])) for d, i in zip(dens, leaves))
                    boxes = np.array([sub[i][0] for i in leaves], dtype=np.uint64)
                    from . import _kernels as K

                    which = K.first_match(codes[te], boxes)
                    loss[g] += sq - 2.0 * float(np.mean(np.asarray(dens)[which]))
            alpha = grid[int(np.argmin(loss))]
        leaves = self._leaves(nodes, self._pruned_at(seq, alpha))
        boxes = [nodes[i][0] for i in leaves]
        counts = np.array([nodes[i][1].size for i in leaves], dtype=np.float64)
        logv = np.array([log_volume(b) for b in boxes])
        self._set_leaves(boxes, counts, logv, n, "mle", 0.0)
        self.ccp_alpha_ = float(alpha)
        self.fit_time_ = clock.elapsed()
        self._set_stop("completed" if not clock.expired() else "time_limit")
        return self

