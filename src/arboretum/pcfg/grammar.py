"""PCFG*: the probabilistic grammar of bounding boxes and its dynamic programmes.

Given a :class:`~arboretum.pcfg.store.NodeStore`, a Dirichlet ``alpha`` and a
tree prior, :class:`BoxGrammar` computes in log space (spec-001 §2.6-2.11)

* ``log L(N)``, the leaf marginal likelihood of every node
  (:func:`arboretum.bayes.log_dirichlet_multinomial`),
* the inside scores ``log Q`` (sum) and ``log Q_max`` (max) with the MAP
  choice of every node,
* the production probabilities (eq. 15-16), and from them exact ancestral
  sampling of trees and query paths, the exact posterior predictive, the
  outside (node-occurrence) probabilities and expected leaf counts,
* exact posterior summaries: the probability that a tree splits on a group of
  features (one inside pass without the group's splits) and the distribution
  of the number of leaves (a convolution DP over the states),
* prior quantities from the same recursion with ``L == 1``: the prior
  normaliser ``Z(X)`` and, with ``phi = 1`` too, the number of trees.

Two priors share this engine:

:class:`PhiPrior` (the paper's)
    ``P(T | X) ∝ phi ** -b(T)``: one level, stop weight 1, split weight
    ``1 / phi``.
:class:`arboretum.bayes.ChipmanPrior` (MAPTree's)
    A node at depth ``d`` with a valid split splits with probability
    ``p(d) = alpha_s (1 + d) ** -beta_s``, choosing the feature uniformly among
    valid features and then the threshold uniformly among that feature's valid
    thresholds.  The grammar's symbols carry the depth (spec §7: states
    ``(N, d)``), and splits with identical partitions stay distinct, as in
    MAPTree.  The prior is normalised, so ``Q_C(N_0, 0)`` is the evidence.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numba
import numpy as np

from .._numba import rng_state
from ..bayes import ChipmanPrior, log_dirichlet_multinomial
from . import _kernels as K
from .store import GrammarLimitReached, NodeStore

__all__ = ["BoxGrammar", "PhiPrior", "SampledTrees"]

#: Most leaves :meth:`BoxGrammar.n_leaves_distribution` keeps when ``max_leaves`` is None.
_AUTO_MAX_LEAVES = 4096


@dataclass(frozen=True)
class PhiPrior:
    """The BCART-PCFG tree prior ``P(T | X) ∝ phi ** -b(T)`` (paper eq. 9).

    Parameters
    ----------
    log_phi : float, default=2.0
        ``ln phi``, any finite real number (the paper uses 2; ``phi < 1`` is
        legal because the tree space is finite, but favours large trees).
    """

    log_phi: float = 2.0

    def __post_init__(self) -> None:
        if isinstance(self.log_phi, bool) or not isinstance(self.log_phi, (int, float, np.integer,
                                                                           np.floating)):
            raise TypeError(f"log_phi must be a finite real number; got {self.log_phi!r}")
        if not math.isfinite(float(self.log_phi)):
            raise ValueError(f"log_phi must be a finite real number; got {self.log_phi!r}")
        object.__setattr__(self, "log_phi", float(self.log_phi))


@dataclass
class SampledTrees:
    """Derivations drawn from PCFG*, stored flat (see :func:`_kernels.sample_trees`).

    Tree ``t`` occupies positions ``ptr[t] .. ptr[t + 1] - 1`` (root first).
    ``node`` is the grammar node, ``edge`` the split (-1 at leaves) and
    ``left``/``right`` absolute positions of the children.
    """

    ptr: np.ndarray
    node: np.ndarray
    level: np.ndarray
    depth: np.ndarray
    edge: np.ndarray
    left: np.ndarray
    right: np.ndarray

    @property
    def n_trees(self) -> int:
        return int(self.ptr.shape[0] - 1)

    def n_leaves(self) -> np.ndarray:
        """Leaves per tree."""
        leaf = (self.edge < 0).astype(np.int64)
        return np.add.reduceat(leaf, self.ptr[:-1]) if self.n_trees else np.zeros(0, dtype=np.int64)


class BoxGrammar:
    """Inside tables and queries of PCFG* for one node store.

    Parameters
    ----------
    store : NodeStore
        De-duplicated for :class:`PhiPrior`; not de-duplicated, with Chipman
        weights, for :class:`~arboretum.bayes.ChipmanPrior`.
    alpha : ndarray of float, shape (n_classes,)
        Dirichlet concentrations of the leaves.
    prior : PhiPrior or ChipmanPrior
    memory_limit : int or None, default=None
        Bytes that the store plus the tables may hold; checked before each
        table is allocated (:class:`~arboretum.pcfg.store.GrammarLimitReached`).
    deadline : float or None, default=None
        ``time.perf_counter()`` value after which building the tables stops
        (:class:`~arboretum.pcfg.store.GrammarLimitReached`).
    advice : str, default=""
        End of the error message when the memory limit is hit.

    Attributes
    ----------
    logL : ndarray, shape (n_nodes,)
        Leaf log marginal likelihood of every node.
    logQ, logQmax : ndarray, shape (n_nodes, n_levels)
        Inside scores (sum and max).
    best : ndarray of int64, shape (n_nodes, n_levels)
        MAP split of every state, -1 to stop.
    n_levels, level_step : int
        1 and 0 for the phi prior; ``1 + longest path`` and 1 for Chipman.
    """

    def __init__(self, store: NodeStore, alpha: np.ndarray, prior: PhiPrior | ChipmanPrior,
                 memory_limit: int | None = None, advice: str = "", deadline: float | None = None) -> None:
        self.store = store
        self.deadline = deadline
        self.memory_limit = memory_limit
        self.advice = advice
        self._probs: tuple[np.ndarray, np.ndarray] | None = None
        self._prior_probs: tuple[np.ndarray, np.ndarray] | None = None
        self._logQ1: np.ndarray | None = None
        self.alpha = np.asarray(alpha, dtype=np.float64)
        self.prior = prior
        if isinstance(prior, PhiPrior):
            if not store.deduplicated:
                raise ValueError("the phi prior needs a de-duplicated node store")
            self.n_levels, self.level_step = 1, 0
            self.stop_w = np.zeros(1)
            self.split_w = np.array([-prior.log_phi])
        elif isinstance(prior, ChipmanPrior):
            if store.deduplicated or store.edge_w.shape[0] != store.n_edges:
                raise ValueError("the Chipman prior needs a store without de-duplication, with weights")
            height = int(K.heights(store.edge_start, store.edge_a, store.edge_b)[0])
            self.n_levels, self.level_step = height + 1, 1
            depths = np.arange(self.n_levels)
            self.stop_w = np.asarray(prior.log_p_stop(depths), dtype=np.float64)
            self.split_w = np.asarray(prior.log_p_split(depths), dtype=np.float64)
        else:
            raise TypeError(f"prior must be a PhiPrior or a ChipmanPrior; got {type(prior).__name__}")
        self._reserve(store.n_nodes * 8 * (1 + 3 * self.n_levels), "the inside tables")
        self.logL = np.asarray(log_dirichlet_multinomial(store.counts, self.alpha), dtype=np.float64)
        self._check_time()
        self.logQ = self._inside(self.logL, maximize=False)[0]
        self._check_time()
        self.logQmax, self.best = self._inside(self.logL, maximize=True)
        self.deadline = None  # the fit is over; later queries are not limited

    def _check_time(self) -> None:
        """Raise :class:`GrammarLimitReached` when the fit's deadline has passed."""
        if self.deadline is not None and time.perf_counter() >= self.deadline:
            raise GrammarLimitReached(
                f"BCART-PCFG: the time limit was reached before the inside tables of {self.store.n_nodes:,} "
                f"nodes were complete; to fit, {self.advice}",
                "time_limit",
            )

    def _reserve(self, n_bytes: int, what: str) -> None:
        """Raise if allocating ``n_bytes`` more would pass the memory limit."""
        if self.memory_limit is None:
            return
        have = self.nbytes if hasattr(self, "best") else self.store.nbytes
        if have + n_bytes > self.memory_limit:
            raise GrammarLimitReached(
                f"BCART-PCFG grammar too large: {what} need {n_bytes / 2**20:,.0f} MiB on top of "
                f"{have / 2**20:,.0f} MiB, over the memory limit of {self.memory_limit / 2**20:,.0f} MiB "
                f"({self.store.n_nodes:,} nodes, {self.store.n_edges:,} splits, {self.n_levels} depth "
                f"levels). The method is exact and never approximates; to fit, {self.advice}",
                "memory_limit",
            )
    # -- inside passes --------------------------------------------------------------------

    def _inside(self, logL: np.ndarray, *, maximize: bool, stop_w: np.ndarray | None = None,
                split_w: np.ndarray | None = None, edge_w: np.ndarray | None = None,
                n_levels: int | None = None, level_step: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        s = self.store
        n_levels = self.n_levels if n_levels is None else n_levels
        out = np.empty((s.n_nodes, n_levels), dtype=np.float64)
        best = np.empty((s.n_nodes, n_levels), dtype=np.int64)
        K.inside(logL, s.edge_start, s.edge_a, s.edge_b,
                 s.edge_w if edge_w is None else edge_w,
                 self.stop_w if stop_w is None else stop_w,
                 self.split_w if split_w is None else split_w,
                 self.level_step if level_step is None else level_step, maximize, out, best)
        return out, best

    @property
    def nbytes(self) -> int:
        """Bytes held by the store and the tables computed so far."""
        total = self.store.nbytes + self.logL.nbytes + self.logQ.nbytes + self.logQmax.nbytes + self.best.nbytes
        if self._probs is not None:
            total += sum(a.nbytes for a in self._probs)
        if self._prior_probs is not None:
            total += sum(a.nbytes for a in self._prior_probs)
        if self._logQ1 is not None:
            total += self._logQ1.nbytes
        return int(total)

    @property
    def log_Q_root(self) -> float:
        """``log Q(N_0)`` (phi prior: ``log phi + log sum_T phi**-b prod L``; Chipman: the evidence)."""
        return float(self.logQ[0, 0])

    @property
    def log_Qmax_root(self) -> float:
        """``log Q_max(N_0)``."""
        return float(self.logQmax[0, 0])

    def log_prior_inside(self) -> float:
        """``log Q^{(L=1)}(N_0)``: the inside score with every leaf likelihood 1.

        For the phi prior this is ``log(phi * Z(X))``; for the (normalised)
        Chipman prior it is 0.
        """
        if self._logQ1 is None:
            self._reserve(2 * 8 * self.store.n_nodes * self.n_levels, "the prior inside table")
            self._logQ1 = self._inside(np.zeros(self.store.n_nodes), maximize=False)[0]
        return float(self._logQ1[0, 0])

    def log_evidence(self) -> float:
        """``log P(Y | X)`` under this prior (spec §2.9)."""
        return self.log_Q_root - self.log_prior_inside()

    def log_n_trees(self) -> float:
        """Natural log of the number of trees in the tree space (``L == 1, phi == 1``)."""
        s = self.store
        zeros = np.zeros(s.n_nodes)
        out, _ = self._inside(zeros, maximize=False, stop_w=np.zeros(1), split_w=np.zeros(1),
                              edge_w=np.zeros(0), n_levels=1, level_step=0)
        return float(out[0, 0])

    def n_trees(self) -> int:
        """Exact number of trees (Python integers; slow for large stores)."""
        s = self.store
        count = [0] * s.n_nodes
        start, a, b = s.edge_start.tolist(), s.edge_a.tolist(), s.edge_b.tolist()
        for v in range(s.n_nodes - 1, -1, -1):
            total = 1
            for e in range(start[v], start[v + 1]):
                total += count[a[e]] * count[b[e]]
            count[v] = total
        return count[0]

    # -- production probabilities ----------------------------------------------------------

    def _probabilities(self, logL: np.ndarray, logQ: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        s = self.store
        self._reserve(8 * self.n_levels * (s.n_nodes + s.n_edges), "the production probabilities")
        stop_p = np.empty((s.n_nodes, self.n_levels), dtype=np.float64)
        edge_p = np.empty((s.n_edges, self.n_levels), dtype=np.float64)
        K.production_probabilities(logL, logQ, s.edge_start, s.edge_a, s.edge_b, s.edge_w, self.stop_w,
                                   self.split_w, self.level_step, stop_p, edge_p)
        return stop_p, edge_p

    def probabilities(self) -> tuple[np.ndarray, np.ndarray]:
        """``(stop_p, edge_p)``: PCFG* production probabilities of every state (cached).

        ``stop_p[v, d] = L(v) w_stop / Q(v, d)`` and
        ``edge_p[e, d] = w_split Q(a) Q(b) / Q(v, d)``; each state's
        probabilities sum to 1 up to rounding.
        """
        if self._probs is None:
            self._probs = self._probabilities(self.logL, self.logQ)
        return self._probs

    def _tables(self, prior: bool) -> tuple[np.ndarray, np.ndarray]:
        if prior:
            if self._prior_probs is None:
                self.log_prior_inside()
                self._prior_probs = self._probabilities(np.zeros(self.store.n_nodes), self._logQ1)
            return self._prior_probs
        return self.probabilities()

    # -- derived quantities ------------------------------------------------------------------

    def occurrence(self, prior: bool = False) -> np.ndarray:
        """Outside pass: probability that each state occurs in a tree drawn from the posterior
        (or the prior), shape (n_nodes, n_levels)."""
        s = self.store
        stop_p, edge_p = self._tables(prior)
        return K.outside(s.edge_start, s.edge_a, s.edge_b, stop_p, edge_p, self.level_step)

    def expected_leaves(self, prior: bool = False) -> float:
        """Expected number of leaves ``E[b(T)]`` under the posterior (or the prior)."""
        s = self.store
        stop_p, edge_p = self._tables(prior)
        table = K.expected_leaves(s.edge_start, s.edge_a, s.edge_b, stop_p, edge_p, self.level_step)
        return float(table[0, 0])

    def node_marginals(self, prior: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """``(p_node, p_leaf)``: probability that each node occurs, and occurs as a leaf."""
        stop_p, _ = self._tables(prior)
        occ = self.occurrence(prior)
        return occ.sum(axis=1), (occ * stop_p).sum(axis=1)

    def expected_feature_splits(self, prior: bool = False) -> np.ndarray:
        """Expected number of internal nodes splitting on each feature.

        Splits that induce the same partition as a split on an earlier feature
        are credited to that earlier feature (the canonical representative).
        """
        s = self.store
        _, edge_p = self._tables(prior)
        occ = self.occurrence(prior)
        return K.feature_split_expectations(s.edge_start, s.edge_f, edge_p, occ, s.n_features)

    def feature_inclusion_probabilities(self, groups: Sequence[Sequence[int]]) -> np.ndarray:
        """Posterior probability that the tree splits at least once on a feature of each group.

        For a group ``G`` this is ``1 - Q_G(N_0) / Q(N_0)``, where ``Q_G`` is the
        inside sum over the trees without a split on a feature of ``G`` (the
        grammar with those splits removed; one extra inside pass per group,
        in log space).  It is exact for both priors: the phi prior's trees
        and the Chipman prior's (whose split weights, including the uniform
        choice among *all* valid features, are products over nodes, so
        removing splits removes exactly the trees that use them).

        With the phi prior, equivalent splits (the same two child point sets)
        on different features are one split of the grammar, credited to the
        earliest feature (lowest index, then lowest threshold), as in
        :meth:`expected_feature_splits`.  So a later feature that cuts the
        data exactly like an earlier one gets no credit for that cut: the
        probabilities describe the canonical representative of each tree.
        The Chipman grammar keeps equivalent splits apart and has no such
        convention.

        Parameters
        ----------
        groups : sequence of sequences of int
            Grammar feature indices (columns of the training matrix); one
            result per group.  An empty group has probability 0.

        Returns
        -------
        p : ndarray of float64, shape (n_groups,)
            In [0, 1].
        """
        s = self.store
        drops = []
        for g, group in enumerate(groups):
            drop = np.zeros(s.n_features, dtype=np.bool_)
            for f in group:
                if (isinstance(f, (bool, np.bool_)) or not isinstance(f, (int, np.integer))
                        or not 0 <= f < s.n_features):
                    raise ValueError(
                        f"group {g} has {f!r}; features are integers in [0, {s.n_features - 1}]"
                    )
                drop[int(f)] = True
            drops.append(drop)
        out = np.empty(len(drops), dtype=np.float64)
        if not drops:
            return out
        self._reserve(8 * s.n_nodes * self.n_levels, "the inside table of the split inclusion probabilities")
        table = np.empty((s.n_nodes, self.n_levels), dtype=np.float64)
        for g, drop in enumerate(drops):
            if not drop.any():
                out[g] = 0.0
                continue
            K.inside_without(self.logL, s.edge_start, s.edge_a, s.edge_b, s.edge_f, s.edge_w, self.stop_w,
                             self.split_w, self.level_step, drop, table)
            # P(no split in G) = Q_G / Q; -expm1 keeps tiny inclusion probabilities accurate
            out[g] = -math.expm1(min(0.0, float(table[0, 0]) - self.log_Q_root))
        return np.clip(out, 0.0, 1.0)

    def n_leaves_distribution(self, max_leaves: int | None = None) -> tuple[np.ndarray, float]:
        """Exact posterior distribution of the number of leaves ``b(T)``.

        A dynamic programme over the states in bottom-up order: the
        distribution of a state's subtree is ``stop_p * [k == 1] + sum_e
        edge_p[e] * (dist_a * dist_b)`` (``*`` a convolution), using the
        production probabilities.  A node that holds ``m`` points has at most
        ``m`` leaves (exactly: at most the largest tree below it, computed
        first), which keeps the convolutions short; states that no posterior
        tree visits are skipped.

        Parameters
        ----------
        max_leaves : int or None, default=None
            Largest number of leaves kept (entries up to it are exact; the
            mass above it is returned as ``tail``).  ``None``: start at about
            twice the posterior mean and double until the tail holds at most
            ``1e-12`` of the mass, the largest possible tree fits, or 4096
            leaves are kept.

        Returns
        -------
        p : ndarray of float64, shape (K + 1,)
            ``p[k] = P(b(T) = k | X, y)``; ``p[0] == 0``.  ``K = max_leaves``
            when given.
        tail : float
            ``P(b(T) > K)``, computed as ``1 - p.sum()`` (so exact to
            rounding, about 1e-15), and exactly 0 when ``K`` is at least the
            largest possible number of leaves.
        """
        s = self.store
        stop_p, edge_p = self.probabilities()
        most_below = K.max_leaves(s.edge_start, s.edge_a, s.edge_b)
        most = int(most_below[0])
        reach = self.occurrence()
        if max_leaves is None:
            cap = min(most, _AUTO_MAX_LEAVES)
            k = min(cap, max(32, int(math.ceil(2.0 * self.expected_leaves())) + 16))
            while True:
                p = self._leaf_counts(k, most_below, stop_p, edge_p, reach)
                tail = 0.0 if k >= most else max(0.0, 1.0 - float(p.sum()))
                if tail <= 1e-12 or k >= cap:
                    return p, tail
                k = min(2 * k, cap)
        if isinstance(max_leaves, (bool, np.bool_)) or not isinstance(max_leaves, (int, np.integer)):
            raise TypeError(f"max_leaves must be an integer >= 1 or None; got {max_leaves!r}")
        if max_leaves < 1:
            raise ValueError(f"max_leaves must be an integer >= 1 or None; got {max_leaves!r}")
        k = int(max_leaves)
        p = np.zeros(k + 1, dtype=np.float64)
        q = self._leaf_counts(min(k, most), most_below, stop_p, edge_p, reach)
        p[: q.shape[0]] = q
        tail = 0.0 if k >= most else max(0.0, 1.0 - float(p.sum()))
        return p, tail

    def _leaf_counts(self, k: int, most_below: np.ndarray, stop_p: np.ndarray, edge_p: np.ndarray,
                     reach: np.ndarray) -> np.ndarray:
        """``P(b = 0 .. k)`` at the root, every state's distribution cut at ``k`` leaves."""
        s = self.store
        length = np.minimum(most_below, k)
        offset = np.zeros(s.n_nodes + 1, dtype=np.int64)
        np.cumsum(length * self.n_levels, out=offset[1:])
        self._reserve(8 * int(offset[-1]), f"the leaf-count distributions (up to {k} leaves)")
        table = np.empty(int(offset[-1]), dtype=np.float64)
        K.leaf_count_distribution(s.edge_start, s.edge_a, s.edge_b, stop_p, edge_p, self.level_step, reach,
                                  length, offset, table)
        p = np.zeros(k + 1, dtype=np.float64)
        p[1: int(length[0]) + 1] = table[: int(length[0])]
        return p

    # -- MAP, sampling, prediction ------------------------------------------------------------

    def map_derivation(self) -> SampledTrees:
        """The MAP tree as a one-tree :class:`SampledTrees` (Algorithm 2 applied everywhere)."""
        s = self.store
        node, level, depth, edge, left, right = [0], [0], [0], [], [], []
        i = 0
        while i < len(node):
            v, d = node[i], level[i]
            e = int(self.best[v, d])
            edge.append(e)
            if e < 0:
                left.append(-1)
                right.append(-1)
            else:
                left.append(len(node))
                right.append(len(node) + 1)
                cl = d + self.level_step
                node += [int(s.edge_a[e]), int(s.edge_b[e])]
                level += [cl, cl]
                depth += [depth[i] + 1, depth[i] + 1]
            i += 1
        as_array = lambda x: np.asarray(x, dtype=np.int64)  # noqa: E731
        return SampledTrees(np.array([0, len(node)]), as_array(node), as_array(level), as_array(depth),
                            as_array(edge), as_array(left), as_array(right))

    def sample(self, n_trees: int, seed: int) -> SampledTrees:
        """Draw ``n_trees`` exact, independent posterior trees (the xoshiro256** stream of ``seed``,
        :func:`arboretum._numba.rng_state`)."""
        s = self.store
        stop_p, edge_p = self.probabilities()
        state = rng_state(seed)
        return SampledTrees(*K.sample_trees(n_trees, state, s.edge_start, s.edge_a, s.edge_b, stop_p, edge_p,
                                            self.level_step))

    def predict_map_nodes(self, qcodes: np.ndarray) -> np.ndarray:
        """Grammar node of the MAP tree's leaf reached by each query (Algorithm 2)."""
        s = self.store
        return K.map_route(qcodes, self.best, s.edge_a, s.edge_b, s.edge_f, s.edge_m, self.level_step)

    def leaf_predictive(self, nodes: np.ndarray) -> np.ndarray:
        """Dirichlet posterior predictive ``(n_c + alpha_c) / (|N| + sum(alpha))`` of nodes."""
        counts = self.store.counts[nodes]
        return (counts + self.alpha) / (counts.sum(axis=-1, keepdims=True) + self.alpha.sum())

    def predict_bma(self, qcodes: np.ndarray) -> np.ndarray:
        """Exact posterior predictive ``P(y | q, X, Y)`` of every query (distinct rows computed once)."""
        s = self.store
        stop_p, edge_p = self.probabilities()
        unique, inverse = np.unique(qcodes, axis=0, return_inverse=True)
        out = K.posterior_predictive(np.ascontiguousarray(unique, dtype=np.int32), s.edge_start, s.edge_a,
                                     s.edge_b, s.edge_f, s.edge_m, stop_p, edge_p, self.level_step,
                                     s.counts, s.size, self.alpha, max(1, min(numba.get_num_threads(),
                                                                              unique.shape[0] // 8)))
        return out[inverse.reshape(-1)]

    def predict_paths(self, qcodes: np.ndarray, n_paths: int, seed: int) -> np.ndarray:
        """Mean leaf predictive over ``n_paths`` independent query paths (Algorithm 1) per query."""
        s = self.store
        stop_p, edge_p = self.probabilities()
        state = rng_state(seed)
        return K.sample_paths(np.ascontiguousarray(qcodes, dtype=np.int32), n_paths, state, s.edge_start,
                              s.edge_a, s.edge_b, s.edge_f, s.edge_m, stop_p, edge_p, self.level_step,
                              s.counts, s.size, self.alpha)

    def predict_trees(self, qcodes: np.ndarray, trees: SampledTrees) -> np.ndarray:
        """Mean leaf predictive of each query over the sampled trees ``trees``."""
        s = self.store
        return K.predict_sampled_trees(np.ascontiguousarray(qcodes, dtype=np.int32), trees.ptr, trees.node,
                                       trees.edge, trees.left, trees.right, s.edge_f, s.edge_m, s.counts,
                                       s.size, self.alpha)
