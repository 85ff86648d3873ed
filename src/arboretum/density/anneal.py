"""Simulated annealing over density trees (spec §6.1) for Methods I and II.

The five moves of the paper, with the spec's semantics (A6):

=================  ========  =================================================================
move               share     what it does (infeasible draws leave the tree as it is and count)
=================  ========  =================================================================
shrink             (1-e)/4   a parent whose children are all leaves loses its children
expand             (1-e)/4   a random leaf, a random feature: one child per allowed category
                             (skipped when the feature is used up, the leaf is empty, or the
                             tree has ``max_leaves`` leaves)
regroup            (1-e)/4   half the time the paper's move (a node's subtree is replaced by a
                             random two-block split on a random usable feature), half the time
                             the reference code's (a node gives a random part of its block to a
                             new sibling leaf; both parts must hold data)
merge              (1-e)/4   two leaf children of a parent with >= 3 leaf children become one
structural change  e         a node with >= 2 descendants loses its subtree
=================  ========  =================================================================

Schedule (the reference code's constants, spec §6.1): energy ``E = -LP``; a
worse move whose ``|dE|`` equals the running mean of accepted ``|dE|`` is
accepted with probability ``p_start = 0.7`` at the first temperature and
``p_end = 0.001`` at the last, geometric cooling over ``n_cycles`` levels of
``trials_per_cycle`` proposals; after cycle 100, every 50 cycles the chain
restarts from the best tree or the root (1/2 each); a run stops early when
the energy has not changed for ``stop_window`` cycles.  ``n_restarts``
independent runs; the best tree of all is returned.

The objective is updated incrementally (spec C14): a move touches one node's
subtree, and the change of the objective is the change of that subtree's
sum of node terms (and of the number of leaves).
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass

import numpy as np

from . import _kernels as K
from .exact import DensityNode
from .posterior import internal_term, leaf_sparse_constant, leaf_term

__all__ = ["Problem", "anneal", "AnnealResult"]


class Problem:
    """Training data as bitsets (spec §12.1) and the objective of one method.

    Parameters
    ----------
    codes : ndarray of int64, shape (n, p)
    q : ndarray of int64, shape (p,)
    method : {"leaf", "branch"}
    lam, alpha : float
    """

    def __init__(self, codes: np.ndarray, q: np.ndarray, method: str, lam: float, alpha: float) -> None:
        from .._numba import pack_columns

        self.q = np.asarray(q, dtype=np.int64)
        self.p = len(self.q)
        self.n = int(codes.shape[0])
        self.offsets = np.concatenate([[0], np.cumsum(self.q)[:-1]]).astype(np.int64)
        onehot = np.zeros((self.n, int(self.q.sum())), dtype=bool)
        for j in range(self.p):
            onehot[np.arange(self.n), self.offsets[j] + codes[:, j]] = True
        self.cat_bits = pack_columns(onehot)
        self.n_words = self.cat_bits.shape[1]
        self.all_bits = np.zeros(self.n_words, dtype=np.uint64)
        full_rows = np.ones(self.n, dtype=bool)
        self.all_bits[:] = pack_columns(full_rows.reshape(-1, 1))[0]
        self.method, self.lam, self.alpha = method, float(lam), float(alpha)
        self.node_const = -self.lam + math.log(self.lam)
        self.log_q = np.log(self.q.astype(np.float64))
        self._la = math.lgamma(self.alpha)

    def block(self, parent_bits: np.ndarray, j: int, mask: int) -> tuple[np.ndarray, int]:
        """Bits and count of the rows of ``parent_bits`` whose feature ``j`` is in ``mask``."""
        tmp = np.empty(self.n_words, dtype=np.uint64)
        K.block_bits(self.cat_bits, int(self.offsets[j]), np.uint64(mask), tmp)
        out = np.empty(self.n_words, dtype=np.uint64)
        c = K.and_into(parent_bits, tmp, out)
        return out, int(c)

    # node terms --------------------------------------------------------------------------
    def term(self, node: "_Node") -> float:
        if self.method == "leaf":
            if node.children:
                return 0.0
            return leaf_term(node.n, node.logv, self.alpha)
        if node.children:
            return self.node_const + internal_term([c.n for c in node.children], self.alpha)
        return self.node_const - (node.n * node.logv if node.n else 0.0)

    def total(self, k: int, s: float) -> float:
        if self.method == "leaf":
            return leaf_sparse_constant(k, self.n, self.lam, self.alpha) + s
        return s - math.log(self.lam)


class _Node:
    __slots__ = ("box", "bits", "n", "logv", "feature", "children", "parent")

    def __init__(self, box: tuple, bits: np.ndarray, n: int, logv: float, parent: "_Node | None") -> None:
        self.box, self.bits, self.n, self.logv, self.parent = box, bits, n, logv, parent
        self.feature = -1
        self.children: list[_Node] = []

    def walk(self) -> list["_Node"]:
        """This node and its descendants in pre-order (iterative: a recursive generator costs O(depth)
        per node)."""
        out, stack = [], [self]
        while stack:
            v = stack.pop()
            out.append(v)
            stack.extend(reversed(v.children))
        return out


@functools.lru_cache(maxsize=1 << 16)
def _logv(box: tuple) -> float:
    """``log V`` of a box (memoised: the moves meet the same boxes again and again)."""
    return sum(math.log(int(m).bit_count()) for m in box)


def _stats(prob: Problem, node: _Node) -> tuple[int, float]:
    """(leaves, sum of node terms) of the subtree of ``node``; Method I's internal nodes add nothing."""
    k, s = 0, 0.0
    if prob.method == "leaf":
        alpha = prob.alpha
        for v in node.walk():
            if not v.children:
                s += leaf_term(v.n, v.logv, alpha)
                k += 1
        return k, s
    for v in node.walk():
        s += prob.term(v)
        if not v.children:
            k += 1
    return k, s


def _copy(node: _Node, parent: _Node | None = None) -> _Node:
    c = _Node(node.box, node.bits, node.n, node.logv, parent)
    c.feature = node.feature
    c.children = [_copy(ch, c) for ch in node.children]
    return c


def _root(prob: Problem) -> _Node:
    box = tuple((1 << int(qj)) - 1 for qj in prob.q)
    return _Node(box, prob.all_bits, prob.n, float(np.sum(prob.log_q)), None)


def _split(prob: Problem, node: _Node, j: int, blocks: list[int]) -> None:
    node.feature = j
    node.children = []
    for blk in blocks:
        bits, c = prob.block(node.bits, j, blk)
        box = node.box[:j] + (blk,) + node.box[j + 1:]
        node.children.append(_Node(box, bits, c, _logv(box), node))


def _random_bipartition(rng: np.random.Generator, mask: int) -> tuple[int, int]:
    cats = [c for c in range(mask.bit_length()) if (mask >> c) & 1]
    k = int(rng.integers(1, len(cats)))
    pick = rng.choice(len(cats), size=k, replace=False)
    g1 = sum(1 << cats[i] for i in pick)
    return g1, mask ^ g1


def _view(root: _Node) -> tuple[list, list, list]:
    """(every node, the leaves, the parents whose children are all leaves) of a tree, in pre-order."""
    nodes = root.walk()
    leaves, bottom = [], []
    for v in nodes:
        if not v.children:
            leaves.append(v)
        elif not any(c.children for c in v.children):
            bottom.append(v)
    return nodes, leaves, bottom


class _Move:
    """A proposal applied in place: ``at`` (the node whose subtree changed) and how to undo it."""

    def __init__(self, at: _Node, snapshot: list) -> None:
        self.at, self.snapshot = at, snapshot

    def undo(self) -> None:
        for node, fields in reversed(self.snapshot):
            node.box, node.bits, node.n, node.logv, node.feature, node.children = fields


def _save(node: _Node) -> tuple:
    return node, (node.box, node.bits, node.n, node.logv, node.feature, list(node.children))


def propose(prob: Problem, root: _Node, rng: np.random.Generator, epsilon: float, max_leaves: int | None,
            regroup_mode: str = "both", view: tuple | None = None) -> _Move | None:
    """Apply one random move to the tree of ``root`` in place; None when the draw is infeasible.

    ``view`` = ``(nodes, leaves, bottom)`` of the current tree in pre-order (see :func:`_view`), when the caller
    keeps it between proposals (it only changes when a move is accepted)."""
    nodes, leaves, bottom = view if view is not None else _view(root)
    n_leaves = len(leaves)
    r = rng.random()
    share = (1.0 - epsilon) / 4.0
    if r < share:  # shrink
        cands = bottom
        if not cands:
            return None
        v = cands[int(rng.integers(len(cands)))]
        mv = _Move(v, [_save(v)])
        v.children, v.feature = [], -1
        return mv
    if r < 2 * share:  # expand
        if max_leaves is not None and n_leaves >= max_leaves:
            return None
        v = leaves[int(rng.integers(n_leaves))]
        j = int(rng.integers(prob.p))
        m = v.box[j]
        if v.n == 0 or m.bit_count() < 2:
            return None
        mv = _Move(v, [_save(v)])
        _split(prob, v, j, [1 << c for c in range(m.bit_length()) if (m >> c) & 1])
        return mv
    if r < 3 * share:  # regroup
        if max_leaves is not None and n_leaves >= max_leaves - 1:
            return None
        if regroup_mode == "paper" or (regroup_mode == "both" and rng.random() < 0.5):
            v = nodes[int(rng.integers(len(nodes)))]
            usable = [j for j in range(prob.p) if v.box[j].bit_count() >= 2]
            if not usable:
                return None
            j = usable[int(rng.integers(len(usable)))]
            g1, g2 = _random_bipartition(rng, v.box[j])
            mv = _Move(v, [_save(v)])
            _split(prob, v, j, [g1, g2])
            return mv
        non_root = nodes[1:]
        if len(non_root) <= 1:
            return None
        v = non_root[int(rng.integers(len(non_root)))]
        parent = v.parent
        j = parent.feature
        if v.box[j].bit_count() < 2:
            return None
        g1, g2 = _random_bipartition(rng, v.box[j])
        bits1, c1 = prob.block(parent.bits, j, g1)
        bits2, c2 = prob.block(parent.bits, j, g2)
        if c1 == 0 or c2 == 0:
            return None
        mv = _Move(parent, [_save(parent), _save(v)])
        v.box = v.box[:j] + (g1,) + v.box[j + 1:]
        v.bits, v.n, v.logv, v.children, v.feature = bits1, c1, _logv(v.box), [], -1
        box2 = v.box[:j] + (g2,) + v.box[j + 1:]
        sib = _Node(box2, bits2, c2, _logv(box2), parent)
        parent.children = list(parent.children) + [sib]
        return mv
    if r < 4 * share:  # merge two leaf siblings
        cands = [v for v in bottom if len(v.children) >= 3]
        if not cands:
            return None
        v = cands[int(rng.integers(len(cands)))]
        a, b = (int(i) for i in rng.choice(len(v.children), size=2, replace=False))
        ca, cb = v.children[a], v.children[b]
        mv = _Move(v, [_save(v)])
        j = v.feature
        box = ca.box[:j] + (ca.box[j] | cb.box[j],) + ca.box[j + 1:]
        merged = _Node(box, ca.bits | cb.bits, ca.n + cb.n, _logv(box), v)
        v.children = [c for i, c in enumerate(v.children) if i not in (a, b)] + [merged]
        return mv
    cands = [v for v in nodes if v.children]  # >= 2 descendants: every split has >= 2 children
    if not cands:
        return None
    v = cands[int(rng.integers(len(cands)))]
    mv = _Move(v, [_save(v)])
    v.children, v.feature = [], -1
    return mv


@dataclass
class AnnealResult:
    root: DensityNode
    log_posterior: float
    n_proposals: int
    history: list
    stopped: bool  # True when the clock stopped it


def _export(node: _Node) -> DensityNode:
    return DensityNode(node.box, node.feature, [_export(c) for c in node.children])


def anneal(prob: Problem, *, n_cycles: int = 100, trials_per_cycle: int = 100, n_restarts: int = 5,
           epsilon: float = 0.01, p_start: float = 0.7, p_end: float = 0.001, max_leaves: int | None = 100,
           stop_window: int = 50, regroup_mode: str = "both", restart_every: int = 50,
           restart_after: int = 100, random_state: int | None = 0, deadline: float | None = None,
           check_incremental: bool = False) -> AnnealResult:
    """Best tree over ``n_restarts`` annealing runs (module docstring); ``deadline`` is a
    ``time.perf_counter()`` value after which the runs stop and the best tree so far is returned."""
    rng = np.random.default_rng(random_state)
    t_start, t_end = -1.0 / math.log(p_start), -1.0 / math.log(p_end)
    rho = (t_end / t_start) ** (1.0 / max(n_cycles - 1, 1))
    best_root, best_lp = None, -math.inf
    history: list = []
    n_prop = 0
    stopped = False
    for _ in range(n_restarts):
        cur = _root(prob)
        k, s = _stats(prob, cur)
        e_cur = -prob.total(k, s)
        run_best, e_best = _copy(cur), e_cur
        temp, mean_d, n_acc = t_start, 0.0, 1
        view = None
        hist: list = []
        for cycle in range(n_cycles):
            if deadline is not None and time.perf_counter() >= deadline:
                stopped = True
                break
            for trial in range(trials_per_cycle):
                if restart_every and cycle > restart_after and cycle % restart_every == 1 and trial == 0:
                    cur = _copy(run_best) if rng.random() < 0.5 else _root(prob)
                    k, s = _stats(prob, cur)
                    e_cur = -prob.total(k, s)
                    view = None
                n_prop += 1
                if view is None:  # the tree changed: walk it again
                    view = _view(cur)
                mv = propose(prob, cur, rng, epsilon, max_leaves, regroup_mode, view)
                if mv is None:
                    continue
                at = mv.at
                # the touched subtree's stats after the move, then before it (undo, measure, redo)
                after_k, after_s = _stats(prob, at)
                redo = [(node, (node.box, node.bits, node.n, node.logv, node.feature, list(node.children)))
                        for node, _ in mv.snapshot]
                mv.undo()
                before_k, before_s = _stats(prob, at)
                for node, fields in redo:
                    node.box, node.bits, node.n, node.logv, node.feature, node.children = fields
                k_new, s_new = k - before_k + after_k, s - before_s + after_s
                e_new = -prob.total(k_new, s_new)
                if check_incremental:
                    kk, ss = _stats(prob, cur)
                    assert abs(prob.total(kk, ss) + e_new) < 1e-9 * max(1.0, abs(e_new)), (kk, k_new)
                d = abs(e_new - e_cur)
                if e_new > e_cur:
                    if cycle == 0 and trial == 0:
                        mean_d = d + 1e-9
                    if mean_d == 0:
                        mean_d = 1e-16
                    accept = rng.random() < math.exp(-d / (mean_d * temp))
                else:
                    accept = True
                if accept:
                    view = None
                    k, s, e_cur = k_new, s_new, e_new
                    n_acc += 1
                    mean_d = (mean_d * (n_acc - 1) + d) / n_acc
                    if e_cur < e_best - 1e-12:
                        run_best, e_best = _copy(cur), e_cur
                else:
                    mv.undo()
            temp *= rho
            hist.append(-e_cur)
            if stop_window and len(hist) >= stop_window and len(set(hist[-stop_window:])) == 1:
                break
        history.append(hist)
        if -e_best > best_lp + 1e-12:
            best_root, best_lp = run_best, -e_best
        if stopped:
            break
    return AnnealResult(_export(best_root), best_lp, n_prop, history, stopped)
