"""``MCMCTreeSampler``: the Metropolis-Hastings tree sampler of Chipman, George & McCulloch (1998).

The chain samples the BCART posterior that MAPTree searches (binary features,
Chipman prior, Dirichlet leaves).  Each iteration draws one of four moves with
the probabilities ``move_probabilities`` ``(p_grow, p_prune, p_change, p_swap)``
and accepts the proposed tree ``T'`` with probability
``min(1, P(T' | X, y) q(T' -> T) / (P(T | X, y) q(T -> T')))``:

GROW
    Pick a leaf uniformly among the ``G(T)`` leaves that have a valid split,
    and split it on a feature uniform among its ``V`` valid splits:
    ``q(T -> T') = p_grow / (G(T) V)``.  The reverse move is a prune of that
    node: ``q(T' -> T) = p_prune / P(T')``.
PRUNE
    Pick uniformly one of the ``P(T)`` internal nodes whose two children are
    leaves and make it a leaf: ``q(T -> T') = p_prune / P(T)``; the reverse is
    the grow ``q(T' -> T) = p_grow / (G(T') V)``.
CHANGE
    Pick an internal node uniformly and give it a new split feature uniform
    among its other valid splits; the subtree keeps its shape and features and
    the samples are routed again.  The number of internal nodes and the node's
    valid splits are the same in ``T`` and ``T'``, so the proposal is
    symmetric.
SWAP
    Pick uniformly a parent-child pair of internal nodes and exchange their
    split features; if the other child is internal with the same feature as the
    chosen child, the parent exchanges with both children.  The shape is
    unchanged and applying the move to the same pair of ``T'`` gives back
    ``T``, so the proposal is symmetric.

A proposal whose splits do not all separate their samples has prior
probability 0 and is rejected.  A move that has no candidate (e.g. no prunable
node) leaves the tree unchanged, which keeps detailed balance.

The chain itself runs in a numba kernel (:func:`arboretum.samplers._kernels.mcmc_chain`)
over a node table whose samples are segments of one permutation array, so a
move touches only the samples below the node it changes.  The kernel runs in
chunks of about 0.1 s, between which the time limit is checked.
"""

from __future__ import annotations

import math
import numbers
import sys
import time
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._compile import exercise_predictions, register, tiny_problem
from ..base import DEFAULT_TIME_LIMIT
from ..data import Check, Interval, Options
from ..tree import Tree
from . import _kernels
from ._base import SAMPLER_CONSTRAINTS, BaseTreeSampler, Problem, SampleSet, encoding_from_tree
from ._pool import NodePool

__all__ = ["MCMCTreeSampler"]

_MOVES = ("grow", "prune", "change", "swap")
_CHUNK_SECONDS = 0.1


def _moves_ok(p: Any) -> bool:
    probs = np.asarray(p, dtype=np.float64)
    return probs.shape == (4,) and bool(np.all(np.isfinite(probs)) and np.all(probs >= 0))


class MCMCTreeSampler(BaseTreeSampler):
    """Metropolis-Hastings sampler of the Bayesian CART posterior (Chipman, George & McCulloch, 1998).

    Runs a Markov chain over trees whose stationary distribution is the
    posterior ``P(T | X, y)`` that :class:`~arboretum.MAPTreeClassifier`
    maximises, with the grow, prune, change and swap moves (see the module
    docstring for the proposal ratios), and keeps the visited trees after a
    burn-in, every ``thin``-th iteration.

    Binary (0/1) features are used as they are; numbers, categories and
    strings are binarised first, as in :class:`~arboretum.MAPTreeClassifier`,
    and the trees read on the raw columns.

    Parameters
    ----------
    alpha : float, default=0.95
        Split probability at the root, in (0, 1].
    beta : float, default=0.5
        Decay of the split probability with depth, >= 0.
    rho : float or sequence of float, default=2.5
        Dirichlet prior of the leaves, one positive value per class in the
        order of ``classes_`` (a scalar means the same value for every class).
    n_iterations : int, default=1000
        Metropolis-Hastings iterations, burn-in included.
    burn_in : int, default=0
        Iterations discarded at the start; must be smaller than ``n_iterations``.
    thin : int, default=1
        Keep the state after iterations ``burn_in + thin``, ``burn_in + 2 thin``, ...
    move_probabilities : sequence of 4 floats, default=(0.25, 0.25, 0.25, 0.25)
        Probabilities of the grow, prune, change and swap moves (normalised to
        sum to 1).  Grow and prune must both be positive.
    init : {"prior", "leaf"} or Tree, default="prior"
        Initial tree: drawn from the prior, the single leaf, or a given tree
        with binary splits on these features.
    time_limit : float or None, default=60
        Seconds of wall clock for the whole ``fit`` (None: no limit); when
        reached, keep what was sampled so far (the
        run ends with ``stop_reason_ = "time_limit"`` and a
        :class:`~arboretum.LimitWarning`, never an error).
    random_state : int, RandomState instance or None, default=None
        Seed; the result is deterministic given an int.
    binarize : "auto", True, "always", False or None, default="auto"
        As in :class:`~arboretum.MAPTreeClassifier`: 0/1 ``X`` is used as it
        is, anything else binarised.
    binarizer : Binarizer or None, default=None
        As in :class:`~arboretum.MAPTreeClassifier` (``binarizer__*``
        parameters can be tuned).
    predict_method : {"average", "map"}, default="average"
        Default ``method`` of :meth:`predict_proba` and :meth:`predict`: the
        average over the samples (the posterior predictive), or ``tree_``.
    verbose : int, default=0
        If > 0, print progress about once a second.

    Attributes
    ----------
    samples_ : TreeSamples
        The kept states, ``(n_iterations - burn_in) // thin`` trees (fewer
        after a time limit); list-like, identical trees are one object.
        They split the raw columns, like ``tree_``.
    log_posteriors_ : ndarray of shape (n_samples,)
        ``log P(T, y | X)`` of every kept state.
    tree_ : Tree
        The highest-posterior tree visited (burn-in included).
        (``best_tree_`` is its deprecated name.)
    log_posterior_ : float
        Its log posterior, recomputed with :func:`arboretum.bayes.log_posterior`
        (``best_log_posterior_`` is its deprecated name).
    binarizer_ : Binarizer or None
        The fitted binarizer, or None when ``X`` was used as it is.
    n_iterations_ : int
        Iterations run.
    acceptance_rates_ : dict of str to float
        Accepted / proposed for each move (NaN if never proposed).
    move_counts_ : ndarray of shape (4, 2)
        Proposed and accepted counts of grow, prune, change and swap.
    stop_reason_ : str
        "completed" or "time_limit".
    fit_time_ : float
        Seconds spent in ``fit``.
    classes_, n_features_in_, feature_names_in_, rho_
        As for :class:`~arboretum.MAPTreeClassifier`.

    Examples
    --------
    >>> from arboretum.datasets import load_dataset
    >>> from arboretum.samplers import MCMCTreeSampler
    >>> X, y = load_dataset("zoo-1", return_X_y=True)
    >>> mcmc = MCMCTreeSampler(n_iterations=2000, burn_in=1000, random_state=0).fit(X, y)
    >>> len(mcmc.samples_)
    1000
    """

    def __init__(
        self,
        alpha: float = 0.95,
        beta: float = 0.5,
        rho: Any = 2.5,
        n_iterations: int = 1000,
        burn_in: int = 0,
        thin: int = 1,
        move_probabilities: Any = (0.25, 0.25, 0.25, 0.25),
        init: Any = "prior",
        time_limit: float | None = DEFAULT_TIME_LIMIT,
        random_state: Any = None,
        binarize: Any = "auto",
        binarizer: Any = None,
        predict_method: str = "average",
        verbose: int = 0,
    ) -> None:
        self.alpha = alpha
        self.beta = beta
        self.rho = rho
        self.n_iterations = n_iterations
        self.burn_in = burn_in
        self.thin = thin
        self.move_probabilities = move_probabilities
        self.init = init
        self.time_limit = time_limit
        self.random_state = random_state
        self.binarize = binarize
        self.binarizer = binarizer
        self.predict_method = predict_method
        self.verbose = verbose

    _kernel_family = "mcmc"
    _parameter_constraints: dict = {
        **SAMPLER_CONSTRAINTS,
        "n_iterations": [Interval(numbers.Integral, 1, None)],
        "burn_in": [Interval(numbers.Integral, 0, None)],
        "thin": [Interval(numbers.Integral, 1, None)],
        "move_probabilities": [
            Check(_moves_ok, "4 finite non-negative numbers (grow, prune, change, swap)")
        ],
        "init": [Options(("prior", "leaf")), Check(lambda t: isinstance(t, Tree), "an arboretum Tree")],
    }

    # -- validation ------------------------------------------------------------------------
    def _move_probabilities(self) -> NDArray[np.float64]:
        probs = np.asarray(self.move_probabilities, dtype=np.float64)
        return probs / probs.sum()

    def _check_sampler_params(self) -> None:
        if self.burn_in >= self.n_iterations:
            raise ValueError(
                f"burn_in must be smaller than n_iterations ({self.n_iterations}) so that samples are kept; "
                f"got {self.burn_in}"
            )
        probs = np.asarray(self.move_probabilities, dtype=np.float64)
        if probs[0] <= 0 or probs[1] <= 0:
            raise ValueError(
                "move_probabilities must give grow and prune positive probabilities (each is the "
                f"reverse move of the other); got {self.move_probabilities!r}"
            )

    def _stop_detail(self) -> str:
        return (
            f"{self.n_iterations_:,} of {self.n_iterations:,} iterations run, {len(self.samples_):,} samples "
            f"kept; tree_ is the most probable tree seen"
        )

    def _initial_encoding(self, problem: Problem, rng: np.random.Generator) -> NDArray[np.int32]:
        if isinstance(self.init, Tree):
            if self.init.n_features != problem.n_features:
                raise ValueError(
                    f"init tree has n_features={self.init.n_features}, but X has {problem.n_features} features"
                )
            enc = encoding_from_tree(self.init, problem.n_features)
            if problem.log_posterior(enc) == -math.inf:
                raise ValueError(
                    "init tree has probability 0 under the posterior on this data: one of its splits "
                    "does not separate the samples reaching it (or alpha == 1 forbids one of its leaves)"
                )
            return enc
        if self.init == "leaf":
            return np.array([-1], dtype=np.int32)
        pool = NodePool(problem)
        return pool.encoding(pool.sample_prior_tree(rng))

    # -- sampling --------------------------------------------------------------------------
    def _sample(self, problem: Problem, rng: np.random.Generator, deadline: float | None) -> SampleSet:
        n_iterations, burn_in, thin = int(self.n_iterations), int(self.burn_in), int(self.thin)
        probs = self._move_probabilities()
        move_cum = np.cumsum(probs)
        move_cum[-1] = 1.0
        with np.errstate(divide="ignore"):
            log_move = np.log(probs)
        K = _kernels
        cap = problem.capacity
        node = np.zeros((cap, K.N_COLS), dtype=np.int64)
        loglik = np.zeros(cap)
        perm = np.arange(problem.n_samples, dtype=np.int64)
        free = np.zeros(cap, dtype=np.int64)
        meta = np.zeros(K.M_SIZE, dtype=np.int64)
        fmeta = np.zeros(K.F_SIZE)
        best_enc = np.zeros(cap, dtype=np.int32)
        move_stats = np.zeros((4, 2), dtype=np.int64)
        state = rng.integers(0, np.iinfo(np.uint64).max, size=4, dtype=np.uint64, endpoint=True)
        if not state.any():
            state[0] = 1

        init = self._initial_encoding(problem, rng)
        value = K.chain_load(init, problem.data, node, loglik, perm, free, meta, fmeta, best_enc)
        if math.isnan(value):
            raise ValueError("the initial tree is too large for this data")

        # Encodings written by the kernel, deduplicated: kernel id -> distinct id.
        seen: dict[bytes, int] = {}
        distinct: list[NDArray[np.int32]] = []
        kernel_to_distinct: list[int] = []
        rec_ids: list[NDArray[np.int64]] = []
        rec_lps: list[NDArray[np.float64]] = []
        out = np.zeros(K.O_SIZE, dtype=np.int64)
        enc_cap = max(1 << 16, 8 * cap)
        done = 0
        chunk = 4  # then sized from the measured speed: on 500,000 rows 256 iterations took 2.5 s
        stop_reason = "completed"
        last_print = time.perf_counter()
        while done < n_iterations:
            now = time.perf_counter()
            if deadline is not None and now >= deadline:
                stop_reason = "time_limit"
                break
            k = min(chunk, n_iterations - done)
            rec_lp = np.empty(k // thin + 1)
            rec_enc = np.empty(k // thin + 1, dtype=np.int64)
            enc_buf = np.empty(enc_cap, dtype=np.int32)
            ran = K.mcmc_chain(problem.data, move_cum, log_move, node, loglik, perm, free, meta, fmeta, state,
                               move_stats, k, done, burn_in, thin, rec_lp, rec_enc, enc_buf, out, best_enc)
            done += ran
            n_rec, used = int(out[K.O_N_REC]), int(out[K.O_ENC_USED])
            if used:
                buf = enc_buf[:used]
                ends = np.flatnonzero(buf == -2)
                starts = np.concatenate(([0], ends[:-1] + 1))
                for a, b in zip(starts.tolist(), ends.tolist()):
                    enc = buf[a:b]
                    key = enc.tobytes()
                    j = seen.get(key)
                    if j is None:
                        j = seen[key] = len(distinct)
                        distinct.append(enc.copy())
                    kernel_to_distinct.append(j)
            rec_ids.append(rec_enc[:n_rec].copy())
            rec_lps.append(rec_lp[:n_rec].copy())
            # Aim the next chunk at about _CHUNK_SECONDS (or half the remaining time).
            elapsed = max(time.perf_counter() - now, 1e-6)
            target = _CHUNK_SECONDS
            if deadline is not None:
                target = min(target, max((deadline - time.perf_counter()) / 2, 1e-3))
            chunk = int(min(max(ran * target / elapsed, 1), 1 << 20))
            if self.verbose and time.perf_counter() - last_print >= 1.0:
                last_print = time.perf_counter()
                print(
                    f"[{type(self).__name__}] iteration {done:,} of {n_iterations:,}, best log posterior "
                    f"{fmeta[K.F_BEST]:.4f}",
                    file=sys.stderr,
                )

        ids = np.concatenate(rec_ids) if rec_ids else np.zeros(0, dtype=np.int64)
        mapping = np.asarray(kernel_to_distinct, dtype=np.int64)
        with np.errstate(invalid="ignore", divide="ignore"):
            rates = move_stats[:, 1] / move_stats[:, 0]
        return SampleSet(
            encodings=distinct,
            index=mapping[ids] if ids.size else np.zeros(0, dtype=np.int64),
            log_posteriors=np.concatenate(rec_lps) if rec_lps else np.zeros(0),
            best=best_enc[: meta[K.M_BEST_LEN]].copy(),
            stop_reason=stop_reason,
            extra={
                "n_iterations_": done,
                "acceptance_rates_": {m: float(r) for m, r in zip(_MOVES, rates)},
                "move_counts_": move_stats.copy(),
            },
        )


@register("mcmc", lambda: [(_kernels.mcmc_chain, None), (_kernels.chain_load, None)])
def _warm_up() -> None:
    """Compile the kernels of a fit (:mod:`arboretum._compile`) on a tiny problem."""
    X, y = tiny_problem()
    exercise_predictions(MCMCTreeSampler(n_iterations=50, time_limit=None, random_state=0).fit(X, y), X)
