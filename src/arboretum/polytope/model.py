"""The soft convex polytope tree in PyTorch (spec-003 §2-3): gates, leaf probabilities, objectives,
the gamma-process prior and the training loop.

Everything is batched over *units*: ``U`` independent trees of the same shape (the restarts of a
stump, or the one tree being refined), each with ``M`` internal nodes of ``K`` experts on ``D``
standardised features.  One mini-batch step is one matrix product ``X~ @ B^T`` for all experts of
all nodes of all units (for a level of more than ``DENSE_LEVEL`` stumps, or a refined tree's pruned
paths, one batched product of each row with its own node's experts: :func:`block_product`), a few
element-wise operations and two small products with the tree's path matrices; there is no Python loop
over samples or nodes inside an epoch.

Shapes: ``B`` (U, M, K, D+1) with the bias in column 0, ``rho = ln r`` (U, M, K), ``t`` (U, M),
``tau`` (U, M), ``mask`` (U, M, K) (0 for pruned experts).  With the reference code's gate
(``gate="reference"``, spec §3.1) a node has no ``rho`` but one slope ``a`` (U, M), and the ``t`` slot
holds its offset ``c``: ``g = sigmoid(tau (c - a mean_k softplus(beta_k . x~)))``.  This module imports
torch: it is imported only by ``fit``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

#: Gates are clamped to [GATE_EPS, 1 - GATE_EPS] in the soft objective (spec §6.3).
GATE_EPS = 1e-5
#: ``rho = ln r`` is kept >= ln(1e-8), so that r never underflows (spec §6.3).
RHO_MIN = math.log(1e-8)
#: Refinement follows a sample down a branch only while its path probability exceeds this (spec §6.1's
#: path pruning): a branch that the gate clamp closes carries no gradient and at most GATE_EPS of a sample.
PATH_CUT = GATE_EPS
#: A level of at most this many stumps computes every node's experts for every sample (one dense
#: product, each sample keeping its node's: cheapest while F is small, whatever D); beyond,
#: :func:`block_product` computes each sample's own node's experts only.
DENSE_LEVEL = 4


# ---------------------------------------------------------------------------
# formulas
# ---------------------------------------------------------------------------


def intensity(Xt: torch.Tensor, B: torch.Tensor, rho: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Committee intensity ``lambda = sum_k r_k softplus(beta_k . x~)`` (spec eq. 1'), shape (n, U, M).

    ``Xt`` is (n, D+1) with a leading column of ones.
    """
    U, M, K, D1 = B.shape
    Z = (Xt @ B.reshape(U * M * K, D1).T).reshape(-1, U, M, K)
    r = torch.exp(rho)
    if mask is not None:
        r = r * mask
    return (F.softplus(Z) * r).sum(-1)


def noisy_or(lam: torch.Tensor) -> torch.Tensor:
    """``P(Yes | x) = 1 - exp(-lambda)``, computed as ``-expm1(-lambda)``."""
    return -torch.expm1(-lam)


def gate(lam: torch.Tensor, t: torch.Tensor, tau: torch.Tensor, clamp: bool = True) -> torch.Tensor:
    """Annealed gate ``g = sigmoid(tau (lambda - t))`` (spec eq. 23): the probability of going right."""
    g = torch.sigmoid(tau * (lam - t))
    return g.clamp(GATE_EPS, 1 - GATE_EPS) if clamp else g


def reference_gate(lam_bar: torch.Tensor, a: torch.Tensor, c: torch.Tensor, tau: torch.Tensor,
                   clamp: bool = True) -> torch.Tensor:
    """The reference code's gate ``g = sigmoid(tau (c - a lambda_bar))`` (spec §3.1 [REF]), with
    ``lambda_bar = mean_k softplus(beta_k . x~)``: the probability of going right.

    With ``a < 0`` it is the paper's gate with every ``r_k = |a| / K`` and ``t = -c`` (right is
    outside the polytope); with ``a > 0`` right is the inside.
    """
    g = torch.sigmoid(tau * (c - a * lam_bar))
    return g.clamp(GATE_EPS, 1 - GATE_EPS) if clamp else g


def expert_weights(rho: torch.Tensor, mask: torch.Tensor, reference: bool) -> torch.Tensor:
    """The weights of the experts in a committee's sum: ``r_k = exp(rho_k)`` of the experts kept
    (``mask``), or, for the reference gate, the mask alone (its mean is taken in :func:`committee_gate`)."""
    return mask if reference else torch.exp(rho) * mask


def committee_gate(Z: torch.Tensor, w: torch.Tensor, t: torch.Tensor, tau: torch.Tensor,
                   a: torch.Tensor | None = None) -> torch.Tensor:
    """The gate of committees whose expert pre-activations are ``Z`` (..., K), with expert weights
    ``w`` (:func:`expert_weights`, Z's shape): the paper's (:func:`gate` of ``lambda = sum_k w_k
    softplus(z_k)``) or, when the slopes ``a`` are given, the reference code's (:func:`reference_gate`
    of the mean over the kept experts, ``t`` holding ``c``); ``t``, ``tau``, ``a`` have Z's shape
    without K."""
    lam = (F.softplus(Z) * w).sum(-1)
    if a is None:
        return gate(lam, t, tau)
    return reference_gate(lam / w.sum(-1).clamp_min(1.0), a, t, tau)


def leaf_log_probs(g: torch.Tensor, right: torch.Tensor, left: torch.Tensor) -> torch.Tensor:
    """``ln pi_l = sum over the path of ln g (right turns) + ln(1 - g) (left turns)`` (spec eq. 6-7).

    ``g`` is (n, U, M); ``right``/``left`` are (M, L) 0/1 path matrices; returns (n, U, L).
    """
    return torch.log(g) @ right + torch.log1p(-g) @ left


def entropy_loss(pi: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
    """Empirical conditional entropy ``H(Y | Z)`` from soft counts (spec eq. 9-12), one per unit.

    ``pi`` (n, U, L) leaf probabilities, ``Y`` (n, C) one-hot labels; returns (U,) in nats:
    ``(sum_l S_l ln S_l - sum_lc n_lc ln n_lc) / n``.
    """
    counts = torch.einsum("nul,nc->ulc", pi, Y)
    S = counts.sum(-1)
    return (_xlogx(S).sum(-1) - _xlogx(counts).sum((-1, -2))) / pi.shape[0]


def _xlogx(c: torch.Tensor) -> torch.Tensor:
    """``c ln c`` with 0 at 0 and a finite gradient there (a class absent from a mini-batch)."""
    return c * torch.log(c.clamp_min(1e-30))


def level_leaf_probs(Xt: torch.Tensor, node: torch.Tensor, B: torch.Tensor, rho: torch.Tensor, t: torch.Tensor,
                     tau: torch.Tensor, mask: torch.Tensor, a: torch.Tensor | None = None) -> torch.Tensor:
    """Leaf probabilities (left, right) of the stumps of one level of the greedy growth, shape (b, R, 2).

    ``B`` is (F, R, K, D+1): R restarts of a stump for each of the F frontier nodes; sample ``i`` of
    the batch reaches node ``node[i]`` and only that node's stumps see it.  With few nodes one
    matrix product computes every node's experts and each sample keeps its node's (``F <= DENSE_LEVEL``);
    otherwise one batched product computes only each sample's node's experts (:func:`block_product`).
    ``a`` (F, R): the reference gate's slopes (``t`` holds ``c``).
    """
    F_, R, K, D1 = B.shape
    if F_ <= DENSE_LEVEL:
        Z = (Xt @ B.reshape(F_ * R * K, D1).T).reshape(-1, F_, R, K)
        Z = Z[torch.arange(Xt.shape[0], device=Xt.device), node]
    else:
        Z = block_product(Xt, node, B.reshape(F_, R * K, D1)).reshape(-1, R, K)
    w = expert_weights(rho, mask, a is not None)[node]
    g = committee_gate(Z, w, t[node], tau[node], None if a is None else a[node])
    return torch.stack([1 - g, g], -1)


def grouped_entropy(pi: torch.Tensor, Y: torch.Tensor, node: torch.Tensor, n_groups: int,
                    per_node: bool = False) -> torch.Tensor:
    """Sum over the level's nodes of their soft conditional entropies, each from its own samples'
    soft counts, divided by the batch size (the level's ``H(Y | Z)``); one value per restart (R,),
    or with ``per_node`` one per node and restart (F, R), not summed."""
    counts = torch.zeros((n_groups,) + pi.shape[1:] + (Y.shape[1],), dtype=pi.dtype, device=pi.device)
    counts = counts.index_add(0, node, pi[..., None] * Y[:, None, None, :])
    S = counts.sum(-1)
    per = (_xlogx(S).sum(-1) - _xlogx(counts).sum((-1, -2))) / pi.shape[0]
    return per if per_node else per.sum(0)


def block_product(rows: torch.Tensor, block: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """``rows[i] @ W[block[i]].T`` for every row, with ``W`` (n_blocks, k, D1): each block's k weight vectors.

    One batched product: the rows, grouped by block, are cut into chunks of at most ``m`` rows (``m``
    the mean rows per non-empty block), each chunk padded to ``m`` rows and multiplied by its block's
    weights, so that the work is at most about twice that of one dense product of the rows, however
    many blocks there are and however unevenly the rows fall into them.  The gradient of ``W`` is
    autograd's (the chunks' products, added into their blocks).  The sparse product used before (each
    row holding its sample in its block's columns) took 1.1 to 10 times as long on 2,048 columns, the
    most with few blocks.
    """
    P, D1 = rows.shape
    n_blocks, k = W.shape[0], W.shape[1]
    dev = rows.device
    if P == 0:
        return rows.new_zeros((0, k))
    order = torch.argsort(block, stable=True)
    count = torch.bincount(block, minlength=n_blocks)
    m = -(-P // int((count > 0).sum()))
    chunks = (count + m - 1) // m  # per block
    first_row, first_chunk = torch.cumsum(count, 0) - count, torch.cumsum(chunks, 0) - chunks
    sb = block[order]
    within = torch.arange(P, device=dev) - first_row[sb]
    dest = torch.empty_like(order)  # each row's place among the chunks' padded rows
    dest[order] = (first_chunk[sb] + torch.div(within, m, rounding_mode="floor")) * m + within % m
    n_chunks = int(chunks.sum())
    padded = rows.new_zeros((n_chunks * m, D1)).index_copy(0, dest, rows).view(n_chunks, m, D1)
    owner = torch.repeat_interleave(torch.arange(n_blocks, device=dev), chunks)
    Z = torch.bmm(padded, W[owner].transpose(1, 2))
    return Z.reshape(n_chunks * m, k).index_select(0, dest)


def pruned_leaf_probs(Xt: torch.Tensor, B: torch.Tensor, rho: torch.Tensor, t: torch.Tensor, tau: torch.Tensor,
                      mask: torch.Tensor, children: torch.Tensor, cut: float = PATH_CUT,
                      a: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Leaf probabilities of one soft tree, computed only where they matter (spec §6.1 path pruning).

    Sends the batch down level by level as (sample, node) pairs, dropping a pair once its path
    probability is at most ``cut``; a node's experts are evaluated only on the pairs that reach it,
    by one batched product (:func:`block_product`).  On a
    deep tree whose gates are nearly hard this touches a few nodes per sample instead of all.

    ``B`` (M, K, D+1), ``rho``/``mask`` (M, K), ``t``/``tau`` (M,) of the tree's internal nodes (root
    0); ``children`` (M, 2) the (left, right) child of every node: an internal node's index, or
    ``-1 - l`` for leaf ``l``; ``a`` (M,) the reference gate's slopes (``t`` holding ``c``).  Returns
    ``(sample, leaf, pi)`` of the surviving pairs.
    """
    M, K, D1 = B.shape
    n = Xt.shape[0]
    w = expert_weights(rho, mask, a is not None)
    samp = torch.arange(n, device=Xt.device)
    node = torch.zeros(n, dtype=torch.long, device=Xt.device)
    logpi = torch.zeros(n, dtype=Xt.dtype, device=Xt.device)
    floor = math.log(cut) if cut > 0 else -math.inf
    out_s, out_l, out_p = [], [], []
    while samp.numel():
        rows = Xt[samp]
        Z = rows @ B[node[0]].T if bool((node == node[0]).all()) else block_product(rows, node, B)
        g = committee_gate(Z, w[node], t[node], tau[node], None if a is None else a[node])
        nxt_s, nxt_n, nxt_p = [], [], []
        for side, logg in ((0, torch.log1p(-g)), (1, torch.log(g))):
            lp = logpi + logg
            keep = lp.detach() > floor
            child = children[node[keep], side]
            inner = child >= 0
            s_keep, lp_keep = samp[keep], lp[keep]
            nxt_s.append(s_keep[inner]), nxt_n.append(child[inner]), nxt_p.append(lp_keep[inner])
            out_s.append(s_keep[~inner]), out_l.append(-1 - child[~inner]), out_p.append(lp_keep[~inner])
        samp, node, logpi = torch.cat(nxt_s), torch.cat(nxt_n), torch.cat(nxt_p)
    return torch.cat(out_s), torch.cat(out_l), torch.exp(torch.cat(out_p))


def pair_entropy(samp: torch.Tensor, leaf: torch.Tensor, pi: torch.Tensor, Y: torch.Tensor, n_leaves: int,
                 n: int) -> torch.Tensor:
    """``H(Y | Z)`` of a batch of ``n`` samples from (sample, leaf, pi) pairs; shape (1,)."""
    counts = torch.zeros((n_leaves, Y.shape[1]), dtype=pi.dtype, device=pi.device)
    counts = counts.index_add(0, leaf, pi[:, None] * Y[samp])
    return ((_xlogx(counts.sum(-1)).sum() - _xlogx(counts).sum()) / n)[None]


def pair_variance(samp: torch.Tensor, leaf: torch.Tensor, pi: torch.Tensor, y: torch.Tensor, n_leaves: int,
                  n: int) -> torch.Tensor:
    """The soft within-leaf sum of squares over ``n`` from (sample, leaf, pi) pairs; shape (1,)."""
    z = torch.zeros(n_leaves, dtype=pi.dtype, device=pi.device)
    S = z.index_add(0, leaf, pi).clamp_min(1e-12)
    sy, syy = z.index_add(0, leaf, pi * y[samp]), z.index_add(0, leaf, pi * y[samp] ** 2)
    return ((syy - sy**2 / S).sum() / n)[None]


def grouped_variance(pi: torch.Tensor, y: torch.Tensor, node: torch.Tensor, n_groups: int,
                     per_node: bool = False) -> torch.Tensor:
    """The soft within-leaf sum of squares of every node of the level, summed, over the batch size; (R,),
    or with ``per_node`` (F, R), not summed over the nodes."""
    shape = (n_groups,) + pi.shape[1:]
    S = torch.zeros(shape, dtype=pi.dtype, device=pi.device).index_add(0, node, pi).clamp_min(1e-12)
    sy = torch.zeros(shape, dtype=pi.dtype, device=pi.device).index_add(0, node, pi * y[:, None, None])
    syy = torch.zeros(shape, dtype=pi.dtype, device=pi.device).index_add(0, node, pi * (y**2)[:, None, None])
    per = (syy - sy**2 / S).sum(-1) / pi.shape[0]
    return per if per_node else per.sum(0)


def variance_loss(pi: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Soft within-leaf variance ``(1/n) sum_l sum_i pi_il (y_i - mu_l)^2`` (spec eq. 13-14), one per unit."""
    S = pi.sum(0).clamp_min(1e-12)
    mu = torch.einsum("nul,n->ul", pi, y) / S
    return torch.einsum("nul,nul->u", pi, (y[:, None, None] - mu) ** 2) / pi.shape[0]


def prior_penalty(B: torch.Tensor, rho: torch.Tensor | None, gamma0: float, c0: float, a_beta: float, b_beta: float,
                  mask: torch.Tensor | None = None) -> torch.Tensor:
    """Negative log prior ``sum_nodes R_nu`` (spec §2.7), one per unit (constants dropped).

    ``R = sum_k [-(gamma0/K - 1) rho_k + c0 r_k] + (a_beta + 1/2) sum_jk ln(1 + beta_jk^2 / (2 b_beta))``,
    over the experts that are not pruned (``mask``).  ``rho=None`` (the reference gate, which has
    no expert weights): the coefficients' Student-t part only.
    """
    K = B.shape[2]
    per_expert = (a_beta + 0.5) * torch.log1p(B**2 / (2.0 * b_beta)).sum(-1)
    if rho is not None:
        per_expert = per_expert - (gamma0 / K - 1.0) * rho + c0 * torch.exp(rho)
    if mask is not None:
        per_expert = per_expert * mask
    return per_expert.sum((-1, -2))


# ---------------------------------------------------------------------------
# training
# ---------------------------------------------------------------------------


@dataclass
class Settings:
    """What the training loop needs from the estimator's parameters."""

    task: str
    lr: float
    epochs: int
    batch_size: int
    steepness_inc: float
    use_prior: bool
    prior_weight: float
    prior_warmup: float
    gamma0: float
    c0: float
    a_beta: float
    b_beta: float
    expired: Callable[[], bool] = lambda: False
    progress: Callable[[int, float, float], None] | None = None


def prior_schedule(epoch: int, epochs: int, weight: float, warmup: float) -> float:
    """Weight of the prior in ``epoch`` (0-based): 0 for the first ``warmup`` share of the epochs, then a
    linear ramp over a quarter of the epochs up to ``weight`` (spec R1)."""
    if epochs <= 0:
        return weight
    start, ramp = warmup * epochs, 0.25 * epochs
    if epoch < start:
        return 0.0
    return weight * min(1.0, (epoch - start + 1) / max(ramp, 1.0))


@dataclass
class Params:
    """The trainable parameters of U soft trees and their fixed parts."""

    B: torch.Tensor
    rho: torch.Tensor
    t: torch.Tensor
    tau: torch.Tensor
    mask: torch.Tensor
    right: torch.Tensor | None = None  # (M, L) path matrices of a tree (refinement)
    left: torch.Tensor | None = None
    node_of: torch.Tensor | None = None  # (n,) frontier node of every sample (a level of the growth)
    children: torch.Tensor | None = None  # (M, 2) children of a tree's nodes: path-pruned refinement
    a: torch.Tensor | None = None  # (U, M) slopes of the reference gate (then ``t`` holds its offsets c)
    history: list = field(default_factory=list)
    steps: int = 0  # optimiser steps taken (a stopped training learned something iff > 0)

    def trainable(self) -> list[torch.Tensor]:
        """What Adam updates: ``B``, ``rho`` and ``t``, or ``B``, ``a`` and ``c`` for the reference gate."""
        return [self.B, self.rho, self.t] if self.a is None else [self.B, self.a, self.t]


def objective(p: Params, Xt: torch.Tensor, target: torch.Tensor, s: Settings, w: float, n_total: int,
              idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The data loss of every unit (restart or tree) on the batch ``idx``, and the penalised scalar
    loss (the sum over units, which are independent, plus ``(w / n_total) L_reg``)."""
    if p.children is not None:
        samp, leaf, pi = pruned_leaf_probs(Xt, p.B[0], p.rho[0], p.t[0], p.tau[0], p.mask[0], p.children,
                                           a=None if p.a is None else p.a[0])
        pair = pair_entropy if s.task == "classification" else pair_variance
        data = pair(samp, leaf, pi, target, p.right.shape[1], Xt.shape[0])
    elif p.node_of is None:
        U, M, K, D1 = p.B.shape
        Z = (Xt @ p.B.reshape(U * M * K, D1).T).reshape(-1, U, M, K)
        w = expert_weights(p.rho, p.mask, p.a is not None)
        pi = torch.exp(leaf_log_probs(committee_gate(Z, w, p.t, p.tau, p.a), p.right, p.left))
        data = entropy_loss(pi, target) if s.task == "classification" else variance_loss(pi, target)
    else:
        node = p.node_of[idx]
        pi = level_leaf_probs(Xt, node, p.B, p.rho, p.t, p.tau, p.mask, p.a)
        group = grouped_entropy if s.task == "classification" else grouped_variance
        data = group(pi, target, node, p.B.shape[0])
    total = data.sum()
    if s.use_prior and w > 0:
        rho = p.rho if p.a is None else None  # the reference gate has no expert weights
        total = total + (w / n_total) * prior_penalty(p.B, rho, s.gamma0, s.c0, s.a_beta, s.b_beta, p.mask).sum()
    return data, total


def held_out_loss(p: Params, X: torch.Tensor, target: torch.Tensor, node: torch.Tensor | None,
                  s: Settings) -> torch.Tensor:
    """The soft data loss of every unit on held-out rows, without gradient: one value per node and
    restart (F, R) for a level of stumps (``node``: each row's frontier node), or (1,) for a tree."""
    with torch.no_grad():
        if node is None:
            return objective(p, X, target, s, 0.0, X.shape[0], torch.arange(X.shape[0], device=X.device))[0]
        pi = level_leaf_probs(X, node, p.B, p.rho, p.t, p.tau, p.mask, p.a)
        group = grouped_entropy if s.task == "classification" else grouped_variance
        return group(pi, target, node, p.B.shape[0], per_node=True)


class _Best:
    """Early stopping: the parameters of every unit at its lowest held-out loss so far.

    ``monitor`` is ``(X, target, node)`` (:func:`held_out_loss`).  A unit's parameters are taken
    whenever its held-out loss is at most its best (ties go to the later epoch, so a unit whose loss
    cannot change trains on); training stops once no unit has improved by more than a relative 1e-6
    for ``patience`` epochs in a row.  The parameters before the first epoch count: a unit whose
    training never lowers its held-out loss keeps its initialisation.
    """

    def __init__(self, p: Params, monitor: tuple, s: Settings, patience: int) -> None:
        self.p, self.monitor, self.s, self.patience = p, monitor, s, patience
        self.tensors = p.trainable() + [p.tau]
        self.loss = held_out_loss(p, *monitor, s)
        self.saved = [a.detach().clone() for a in self.tensors]
        self.stale = 0

    def update(self, epoch: int) -> bool:
        """Record the epoch; False once ``patience`` epochs have passed without an improvement."""
        loss = held_out_loss(self.p, *self.monitor, self.s)
        take = loss <= self.loss
        improved = bool((loss < self.loss - 1e-6 * self.loss.abs()).any())
        with torch.no_grad():
            for a, best in zip(self.tensors, self.saved):
                best[take] = a.detach()[take]
        self.loss = torch.where(take, loss, self.loss)
        self.stale = 0 if improved else self.stale + 1
        return self.stale < self.patience

    def restore(self) -> None:
        with torch.no_grad():
            for a, best in zip(self.tensors, self.saved):
                a.copy_(best)


def train(p: Params, Xt: torch.Tensor, target: torch.Tensor, s: Settings, generator: torch.Generator,
          monitor: tuple | None = None, patience: int = 10) -> str:
    """Algorithm 1 (spec §3.2): mini-batch Adam on the soft objective, annealing ``tau`` after every epoch.

    A fresh Adam per call (spec A4).  Returns ``"completed"``, ``"time_limit"`` (``s.expired()``
    became true between two epochs, or between two batches after the first step: the steps of
    that part of an epoch are kept, with no row in ``p.history``; ``p.steps`` counts them) or
    ``"failed"`` (the loss became NaN; the parameters of the last finite epoch are kept).  Appends
    one ``(epoch, data loss, penalised loss, tau)`` row per epoch to ``p.history`` (means over the
    epoch's batches; the data loss is the mean over units, the penalised loss their sum).

    ``monitor`` (held-out rows, see :class:`_Best`): early stopping; every unit ends with its
    parameters of the epoch with the lowest held-out soft loss, and training ends after ``patience``
    epochs without an improvement (returning ``"completed"``).
    """
    best = None if monitor is None else _Best(p, monitor, s, patience)
    try:
        return _epochs(p, Xt, target, s, generator, best)
    finally:
        if best is not None:
            best.restore()


def _epochs(p: Params, Xt: torch.Tensor, target: torch.Tensor, s: Settings, generator: torch.Generator,
            best: _Best | None) -> str:
    params = p.trainable()
    for tensor in params:
        tensor.requires_grad_(True)
    opt = torch.optim.Adam(params, lr=s.lr, fused=Xt.device.type == "cpu" or None)
    n = Xt.shape[0]
    n_batches = max(1, math.ceil(n / s.batch_size))
    for epoch in range(s.epochs):
        if s.expired():
            return "time_limit"
        w = prior_schedule(epoch, s.epochs, s.prior_weight, s.prior_warmup)
        saved = [a.detach().clone() for a in params]
        perm = torch.randperm(n, generator=generator).to(Xt.device)
        sum_data = torch.zeros((), device=Xt.device)
        sum_total = torch.zeros((), device=Xt.device)
        stopped = False
        for idx in torch.tensor_split(perm, n_batches):
            if p.steps > 0 and s.expired():  # after the first step the clock is read between batches too
                stopped = True
                break
            data, loss = objective(p, Xt[idx], target[idx], s, w, n, idx)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            p.steps += 1
            with torch.no_grad():
                if p.a is None:
                    p.rho.clamp_(min=RHO_MIN)
                sum_data += data.detach().mean()
                sum_total += loss.detach()
        mean_data, mean_total = float(sum_data) / n_batches, float(sum_total) / n_batches
        finite = all(bool(torch.isfinite(a).all()) for a in params)
        if not (finite and math.isfinite(mean_total)):
            with torch.no_grad():
                for a, old in zip(params, saved):
                    a.copy_(old)
            return "failed"
        if stopped:  # a part of an epoch: its steps are kept, with no history row and no annealing
            return "time_limit"
        p.tau += s.steepness_inc
        p.history.append((epoch, mean_data, mean_total, float(p.tau.mean())))
        if s.progress is not None:
            s.progress(epoch, mean_data, mean_total)
        if best is not None and not best.update(epoch):
            break
    return "completed"


def init_level(n_nodes: int, n_restarts: int, K: int, D: int, Xt: torch.Tensor, node_of: torch.Tensor, tau0: float,
               generator: torch.Generator, dtype: torch.dtype, reference: bool = False,
               directions: torch.Tensor | None = None) -> Params:
    """Fresh stumps for the ``n_nodes`` frontier nodes of a level, ``n_restarts`` each (spec §3.0):
    beta ~ U(-1/sqrt(D), 1/sqrt(D)), rho ~ N(0, 0.1^2), t at the median of lambda over the node's
    samples (a balanced first split), tau = tau0.  ``reference``: the reference gate, its slope
    a ~ U(-1, 1) (the reference code's initialisation) and c = a median(lambda_bar), so that its
    first split is balanced too.

    ``directions`` (J, D+1), a linear model's coefficients (``init="linear"``): expert ``k`` of
    restart ``u`` starts at direction ``(u K + k) mod J`` plus a tenth of the random draw above, so
    that a committee's experts differ slightly and its first cut lies along the linear model's score."""
    bound = 1.0 / math.sqrt(max(D, 1))
    shape = (n_nodes, n_restarts, K)
    B = ((torch.rand(shape + (D + 1,), generator=generator, dtype=dtype) * 2 - 1) * bound).to(Xt.device)
    if directions is not None:
        pick = torch.arange(n_restarts * K, device=Xt.device).reshape(n_restarts, K) % directions.shape[0]
        B = directions.to(device=Xt.device, dtype=dtype)[pick][None] + 0.1 * B
    rho = (torch.randn(shape, generator=generator, dtype=dtype) * 0.1).to(Xt.device)
    mask = torch.ones_like(rho)
    t = torch.empty((n_nodes, n_restarts), dtype=dtype, device=Xt.device)
    a = (torch.rand((n_nodes, n_restarts), generator=generator, dtype=dtype) * 2 - 1).to(Xt.device) \
        if reference else None
    with torch.no_grad():
        for f in range(n_nodes):
            rows = Xt[node_of == f]
            if a is None:
                t[f] = intensity(rows, B[f : f + 1], rho[f : f + 1])[:, 0].median(0).values
            else:
                lam_bar = intensity(rows, B[f : f + 1], torch.full_like(rho[f : f + 1], -math.log(K)))[:, 0]
                t[f] = a[f] * lam_bar.median(0).values
    tau = torch.full((n_nodes, n_restarts), float(tau0), dtype=dtype, device=Xt.device)
    return Params(B, rho, t, tau, mask, node_of=node_of, a=a)


def path_matrices(parents: list[tuple[int, int]], n_internal: int, n_leaves: int) -> tuple[np.ndarray, np.ndarray]:
    """0/1 matrices (M, L): ``right[m, l] = 1`` when leaf ``l``'s path turns right at internal node ``m``.

    ``parents[l]`` lists ``(m, went_right)`` along the path of leaf ``l``.
    """
    right = np.zeros((n_internal, n_leaves))
    left = np.zeros((n_internal, n_leaves))
    for leaf, path in enumerate(parents):
        for m, went_right in path:
            (right if went_right else left)[m, leaf] = 1.0
    return right, left
