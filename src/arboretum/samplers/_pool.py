"""The node pool: memoised subproblems of the BCART posterior, shared by the particles.

A *pool node* is the set of training samples that reach a tree node through
one particular sequence of splits from the root, at its depth ``d`` -- an OR
node of the BCART AND/OR graph.  Its statistics (class counts, valid split
features, leaf log likelihood and, for the optimal SMC proposal, the log
likelihood of both children of every valid split) are computed once, by a numba
kernel, when the node is created; its children for a feature ``f`` are created
on first request and then shared.

Sequential Monte Carlo particles are copies of one another after resampling,
so most of them expand the same pool nodes in the same ways; with the pool the
data are touched once per distinct subproblem instead of once per particle.
The pool also draws whole trees from the prior (the MCMC chain's initial
state).

Trees made of pool nodes are described by *decisions*: a mapping from pool node
to split feature; a pool node of the tree without a decision is a leaf.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Mapping

import numpy as np
from numpy.typing import NDArray

from . import _kernels
from ._base import Problem

__all__ = ["NodePool"]


class NodePool:
    """Memo of the subproblems reached from the root by splits.

    Parameters
    ----------
    problem : Problem
        The data and posterior tables.
    with_split_loglik : bool, default=False
        Also compute, for every node, the log likelihood of the children of
        each valid split (needed by :meth:`optimal_step` only).

    Attributes
    ----------
    root : int
        Pool id of the root (all samples, depth 0).
    depth, n_valid : list of int
        Depth and number of valid splits of every pool node.
    loglik : list of float
        Leaf log likelihood of every pool node.
    leaf_term : list of float
        Log posterior term of every pool node as a leaf (``loglik`` plus
        ``log(1 - p_split(d))`` when it has a valid split).
    counts : list of ndarray
        Class counts of every pool node.
    """

    def __init__(self, problem: Problem, with_split_loglik: bool = False) -> None:
        self.problem = problem
        self.with_split_loglik = bool(with_split_loglik)
        self._p_split = np.exp(problem.log_split).tolist()
        self._log_split = problem.log_split.tolist()
        self._log_stop = problem.log_stop.tolist()
        self.depth: list[int] = []
        self.n_valid: list[int] = []
        self.loglik: list[float] = []
        self.leaf_term: list[float] = []
        self.counts: list[NDArray[np.int64]] = []
        self._samples: list[NDArray[np.int32] | None] = []
        self._valid: list[NDArray[np.int64]] = []
        self._split_loglik: list[NDArray[np.float64]] = []
        self._children: dict[tuple[int, int], tuple[int, int, float]] = {}
        self._optimal: dict[int, tuple[list[float], float]] = {}
        self.root = self._add(np.arange(problem.n_samples, dtype=np.int32), 0)

    def __len__(self) -> int:
        return len(self.depth)

    def _add(self, samples: NDArray[np.int32], depth: int, stats: tuple | None = None) -> int:
        """Add the pool node of ``samples`` at ``depth``; ``stats`` is its :func:`_kernels.subset_stats`
        when the caller has it already."""
        if stats is None:
            stats = _kernels.subset_stats(self.problem.data, samples, self.with_split_loglik)
        counts, valid, split_loglik, loglik = stats
        nv = int(valid.shape[0])
        loglik = float(loglik)
        self.depth.append(depth)
        self.n_valid.append(nv)
        self.loglik.append(loglik)
        self.leaf_term.append(loglik + (self._log_stop[depth] if nv else 0.0))
        self.counts.append(counts)
        # A node without valid split is a leaf for good: its samples are never needed again.
        self._samples.append(samples if nv else None)
        self._valid.append(valid)
        self._split_loglik.append(split_loglik)
        return len(self.depth) - 1

    def valid_features(self, p: int) -> list[int]:
        """Valid split features of pool node ``p`` (increasing)."""
        return self._valid[p].tolist()

    def split(self, p: int, f: int) -> tuple[int, int, float]:
        """Split ``p`` on the valid feature ``f``.

        Returns
        -------
        left, right : int
            Pool ids of the ``x_f == 0`` and ``x_f == 1`` children.
        log_ratio : float
            ``log l(left) + log l(right) - log l(p)``.
        """
        key = (p, f)
        entry = self._children.get(key)
        if entry is None:
            out = _kernels.split_stats(self.problem.data, self._samples[p], f, self.with_split_loglik)
            d = self.depth[p] + 1
            left = self._add(out[0], d, out[2:6])
            right = self._add(out[1], d, out[6:10])
            entry = (left, right, self.loglik[left] + self.loglik[right] - self.loglik[p])
            self._children[key] = entry
        return entry

    # -- one expansion of a node -------------------------------------------------------------
    def prior_step(self, p: int, u_stop: float, u_feature: float) -> tuple[int, float, int, int]:
        """Expand ``p`` (with a valid split) by the prior.

        The node splits with probability ``p_split(d)`` on a feature uniform
        among its valid splits.  The incremental importance weight is the
        likelihood ratio ``l(left) l(right) / l(p)`` for a split and 1 for a
        stop.

        Returns
        -------
        feature, log_weight, left, right
            ``(-1, 0.0, -1, -1)`` for a stop.
        """
        if u_stop >= self._p_split[self.depth[p]]:
            return -1, 0.0, -1, -1
        nv = self.n_valid[p]
        j = int(u_feature * nv)
        f = int(self._valid[p][j if j < nv else nv - 1])
        left, right, log_ratio = self.split(p, f)
        return f, log_ratio, left, right

    def optimal_step(self, p: int, u: float, _unused: float = 0.0) -> tuple[int, float, int, int]:
        """Expand ``p`` by the one-step optimal proposal (needs ``with_split_loglik``).

        Options are drawn with probability proportional to their prior
        probability times the likelihood of the resulting leaves:
        ``(1 - p_split(d)) l(p)`` for a stop, ``p_split(d) / |V| l(left) l(right)``
        for a split on each valid feature.  The incremental weight is the sum of
        these over the options divided by ``l(p)``, whatever is drawn.

        Returns
        -------
        feature, log_weight, left, right
            ``feature = left = right = -1`` for a stop.
        """
        table = self._optimal.get(p)
        if table is None:
            d, nv, ll = self.depth[p], self.n_valid[p], self.loglik[p]
            logits = np.empty(nv + 1)
            logits[0] = self._log_stop[d] + ll
            logits[1:] = self._log_split[d] - math.log(nv) + self._split_loglik[p]
            top = float(logits.max())
            cum = np.cumsum(np.exp(logits - top))
            table = self._optimal[p] = (cum.tolist(), top + math.log(float(cum[-1])) - ll)
        cum, log_inc = table
        j = bisect_right(cum, u * cum[-1])
        if j == 0:
            return -1, log_inc, -1, -1
        f = int(self._valid[p][min(j, len(cum) - 1) - 1])
        left, right, _ = self.split(p, f)
        return f, log_inc, left, right

    # -- whole trees ---------------------------------------------------------------------------
    def sample_prior_tree(self, rng: np.random.Generator) -> dict[int, int]:
        """Draw a tree from the BCART prior; return its decisions."""
        decisions: dict[int, int] = {}
        frontier = [self.root] if self.n_valid[self.root] else []
        while frontier:
            p = frontier.pop()
            u = rng.random(2)
            f, _, left, right = self.prior_step(p, float(u[0]), float(u[1]))
            if f >= 0:
                decisions[p] = f
                frontier.extend(c for c in (left, right) if self.n_valid[c])
        return decisions

    def encoding(self, decisions: Mapping[int, int]) -> NDArray[np.int32]:
        """Pre-order encoding of the tree described by ``decisions``."""
        enc: list[int] = []
        stack = [self.root]
        while stack:
            p = stack.pop()
            f = decisions.get(p, -1)
            enc.append(f)
            if f >= 0:
                left, right, _ = self._children[(p, f)]
                stack.append(right)
                stack.append(left)
        return np.asarray(enc, dtype=np.int32)

    def log_posterior(self, decisions: Mapping[int, int]) -> float:
        """``log P(T, Y | X)`` of the tree described by ``decisions``, from the stored statistics."""
        log_split = self._log_split
        total = 0.0
        stack = [self.root]
        while stack:
            p = stack.pop()
            f = decisions.get(p, -1)
            if f >= 0:
                total += log_split[self.depth[p]] - math.log(self.n_valid[p])
                stack.extend(self._children[(p, f)][:2])
            else:
                total += self.leaf_term[p]
        return total
