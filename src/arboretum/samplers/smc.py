"""``SMCTreeSampler``: top-down particle filtering for Bayesian decision trees.

The sampler of Lakshminarayanan, Roy & Teh (2013), "Top-down particle
filtering for Bayesian decision trees", on the BCART posterior that MAPTree
searches (binary features, Chipman prior, Dirichlet leaves).

Algorithm
---------
Every particle is a partly grown tree with a first-in-first-out queue of
*pending* nodes, initially the root.  The intermediate target of a particle is

``gamma(T) = prod over decided nodes of their prior probability
            * prod over leaves and pending nodes of l(samples)``,

the BCART joint with every pending node treated, for the likelihood, as a leaf
whose split/stop decision has not been made yet.  Once nothing is pending,
``gamma(T) = P(T) P(Y | T, X)``, the unnormalised posterior.

At each step every particle with a pending node takes the first one and decides
it with the proposal:

* ``proposal="prior"``: split with probability ``p_split(d)`` on a feature
  uniform among the node's valid splits, else stop; the incremental weight is
  ``l(left) l(right) / l(node)`` for a split, 1 for a stop;
* ``proposal="optimal"``: choose among stop and every valid split with
  probability proportional to prior probability times the likelihood of the
  resulting leaves; the incremental weight is the normaliser of these
  probabilities divided by ``l(node)``.

Children that have no valid split are leaves with prior probability 1 and are
never queued.  After each step an island whose effective sample size
``(sum w)^2 / sum w^2`` falls below ``ess_threshold * n_particles`` is
resampled (systematic or multinomial resampling) and its weights reset; the
mean weight before resampling is a factor of the island's evidence estimate
``Z_i``, which is unbiased for ``P(Y | X)``.

Islands are independent particle systems of ``n_particles`` particles each.
Their results are pooled by weighting island ``i`` by ``Z_i`` (the importance
weight of the whole island), so ``log_evidence_estimate_`` is the log of the
mean of the ``Z_i`` and the pooled weighted particles estimate the posterior
consistently as the number of islands grows, even at a fixed number of
particles.

All particles share one :class:`~arboretum.samplers._pool.NodePool`, so the
data are scanned once per distinct subproblem, not once per particle.
"""

from __future__ import annotations

import math
import numbers
import sys
import time
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.special import logsumexp

from .._compile import exercise_predictions, register, tiny_problem
from ..base import DEFAULT_TIME_LIMIT
from ..data import Interval, Options
from . import _kernels
from ._base import SAMPLER_CONSTRAINTS, BaseTreeSampler, Problem, SampleSet
from ._pool import NodePool

__all__ = ["SMCTreeSampler"]

_PROPOSALS = ("prior", "optimal")
_RESAMPLING = ("systematic", "multinomial")


def _resample(weights: NDArray[np.float64], rng: np.random.Generator, scheme: str) -> NDArray[np.int64]:
    """Ancestor indices for normalised ``weights`` (systematic or multinomial resampling)."""
    n = weights.shape[0]
    cum = np.cumsum(weights)
    cum[-1] = 1.0
    if scheme == "systematic":
        positions = (rng.random() + np.arange(n)) / n
    else:
        positions = np.sort(rng.random(n))
    return np.minimum(np.searchsorted(cum, positions, side="right"), n - 1)


class SMCTreeSampler(BaseTreeSampler):
    """Sequential Monte Carlo sampler of the Bayesian CART posterior.

    Grows a population of trees top-down, node by node, with importance
    weights and resampling (Lakshminarayanan, Roy & Teh, 2013), and returns the
    weighted final trees: a sample of the same posterior ``P(T | X, y)`` that
    :class:`~arboretum.MAPTreeClassifier` maximises, together with an unbiased
    estimate of the evidence ``P(y | X)``.  See the module docstring for the
    algorithm.

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
    n_particles : int, default=100
        Particles per island.
    n_islands : int, default=1
        Independent particle systems, pooled at the end by their evidence
        estimates.  The total number of particles is
        ``n_particles * n_islands``.
    ess_threshold : float, default=0.5
        Resample an island when its effective sample size drops below
        ``ess_threshold * n_particles``; 0 never resamples, 1 resamples after
        every step unless the weights are all equal.
    proposal : {"prior", "optimal"}, default="prior"
        How a pending node is decided: by the prior, or by the one-step
        optimal proposal that also looks at the likelihood of the children.
    resampling : {"systematic", "multinomial"}, default="systematic"
        Resampling scheme.
    time_limit : float or None, default=60
        Seconds of wall clock for the whole ``fit`` (None: no limit; checked
        every 256 node expansions).  When reached, pending nodes
        then become leaves: the trees are valid but the weights are those of
        the unfinished run and ``log_evidence_estimate_`` is NaN
        (``stop_reason_ = "time_limit"`` and a :class:`~arboretum.LimitWarning`).
    random_state : int, RandomState instance or None, default=None
        Seed; the result is deterministic given an int.
    binarize : "auto", True, "always", False or None, default="auto"
        As in :class:`~arboretum.MAPTreeClassifier`.
    binarizer : Binarizer or None, default=None
        As in :class:`~arboretum.MAPTreeClassifier`.
    predict_method : {"average", "map"}, default="average"
        Default ``method`` of :meth:`predict_proba` and :meth:`predict`: the
        weighted average over the particles, or ``tree_``.
    verbose : int, default=0
        If > 0, print progress about once a second.

    Attributes
    ----------
    samples_ : TreeSamples
        The final particles (``n_particles * n_islands`` trees, list-like;
        island ``i`` holds samples ``i * n_particles`` to ``(i + 1) * n_particles - 1``),
        on the raw columns like ``tree_``.
    weights_ : ndarray of shape (n_samples,)
        Normalised importance weights of the particles, islands pooled.
    log_posteriors_ : ndarray of shape (n_samples,)
        ``log P(T, y | X)`` of every particle's tree.
    tree_ : Tree
        The particle tree with the highest log posterior (``best_tree_`` is
        its deprecated name).
    log_posterior_ : float
        Its log posterior, recomputed with :func:`arboretum.bayes.log_posterior`
        (``best_log_posterior_`` is its deprecated name).
    binarizer_ : Binarizer or None
        The fitted binarizer, or None when ``X`` was used as it is.
    log_evidence_estimate_ : float
        ``log`` of the mean of the islands' evidence estimates (unbiased for
        ``P(y | X)`` before the log); NaN after a time limit.
    island_log_evidence_ : ndarray of shape (n_islands,)
        Log evidence estimate of every island.
    islands_ : ndarray of shape (n_samples,)
        Island of every particle.
    ess_ : ndarray of shape (n_islands,)
        Effective sample size of every island's final weights.
    n_steps_ : int
        Expansion steps run (each particle expands at most one node per step).
    n_resamples_ : int
        Island resampling events.
    n_pool_nodes_ : int
        Distinct subproblems evaluated.
    stop_reason_ : str
        "completed" or "time_limit".
    fit_time_ : float
        Seconds spent in ``fit``.
    classes_, n_features_in_, feature_names_in_, rho_
        As for :class:`~arboretum.MAPTreeClassifier`.

    Examples
    --------
    >>> from arboretum.datasets import load_dataset
    >>> from arboretum.samplers import SMCTreeSampler
    >>> X, y = load_dataset("zoo-1", return_X_y=True)
    >>> smc = SMCTreeSampler(n_particles=50, random_state=0).fit(X, y)
    >>> len(smc.samples_), round(float(smc.weights_.sum()), 6)
    (50, 1.0)
    """

    def __init__(
        self,
        alpha: float = 0.95,
        beta: float = 0.5,
        rho: Any = 2.5,
        n_particles: int = 100,
        n_islands: int = 1,
        ess_threshold: float = 0.5,
        proposal: str = "prior",
        resampling: str = "systematic",
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
        self.n_particles = n_particles
        self.n_islands = n_islands
        self.ess_threshold = ess_threshold
        self.proposal = proposal
        self.resampling = resampling
        self.time_limit = time_limit
        self.random_state = random_state
        self.binarize = binarize
        self.binarizer = binarizer
        self.predict_method = predict_method
        self.verbose = verbose

    _kernel_family = "smc"
    _parameter_constraints: dict = {
        **SAMPLER_CONSTRAINTS,
        "n_particles": [Interval(numbers.Integral, 1, None)],
        "n_islands": [Interval(numbers.Integral, 1, None)],
        "ess_threshold": [Interval(numbers.Real, 0, 1)],
        "proposal": [Options(_PROPOSALS)],
        "resampling": [Options(_RESAMPLING)],
    }

    def _stop_detail(self) -> str:
        return (
            f"{self.n_steps_:,} steps run; pending nodes became leaves, the weights are those of the "
            f"unfinished run and log_evidence_estimate_ is NaN"
        )

    def _sample_weights(self) -> NDArray[np.float64]:
        return self.weights_

    def _sample(self, problem: Problem, rng: np.random.Generator, deadline: float | None) -> SampleSet:
        pool = NodePool(problem, with_split_loglik=self.proposal == "optimal")
        n, n_islands = int(self.n_particles), int(self.n_islands)
        total = n * n_islands
        step = pool.prior_step if self.proposal == "prior" else pool.optimal_step
        n_valid = pool.n_valid
        n_features = problem.n_features
        threshold = float(self.ess_threshold) * n
        log_n = math.log(n)

        # Particle state, in plain lists (the loop below is per-particle Python).
        root = pool.root
        log_w = [pool.loglik[root]] * total  # importance weights (log)
        log_z = [0.0] * n_islands  # log of the product of the mean weights at past resamplings
        pending: list[list[int]] = [[root] if n_valid[root] else [] for _ in range(total)]
        head = [0] * total  # pending[i][head[i]] is the next node to expand
        # Split decisions, coded ``pool node * n_features + feature``, in expansion order; the
        # expansion order is a function of the tree, so equal lists mean equal trees.
        decisions: list[list[int]] = [[] for _ in range(total)]
        n_steps = n_resamples = 0
        stop_reason = "completed"
        active = [i for i in range(total) if pending[i]]
        last_print = time.perf_counter()
        while active:
            if deadline is not None and time.perf_counter() >= deadline:
                stop_reason = "time_limit"
                break
            if self.verbose and time.perf_counter() - last_print >= 1.0:
                last_print = time.perf_counter()
                print(f"[{type(self).__name__}] step {n_steps:,}: {len(active):,} of {total:,} particles "
                      f"still growing, {n_resamples:,} resamplings", file=sys.stderr)
            n_steps += 1
            for k, (i, (u0, u1)) in enumerate(zip(active, rng.random((len(active), 2)).tolist())):
                if deadline is not None and not k & 255 and k and time.perf_counter() >= deadline:
                    break  # the rest of this step is skipped; the loop ends below
                queue = pending[i]
                p = queue[head[i]]
                head[i] += 1
                f, inc, left, right = step(p, u0, u1)
                log_w[i] += inc
                if f >= 0:
                    decisions[i].append(p * n_features + f)
                    if n_valid[left]:
                        queue.append(left)
                    if n_valid[right]:
                        queue.append(right)
            for isl in range(n_islands):
                lo, hi = isl * n, (isl + 1) * n
                if all(head[i] >= len(pending[i]) for i in range(lo, hi)):
                    continue  # the island is finished; its weights are final
                w = np.asarray(log_w[lo:hi])
                top = w.max()
                e = np.exp(w - top)
                if e.sum() ** 2 / (e @ e) >= threshold:
                    continue
                log_z[isl] += float(top + math.log(e.sum()) - log_n)
                src = (_resample(e / e.sum(), rng, self.resampling) + lo).tolist()
                pending[lo:hi] = [pending[j][head[j]:] for j in src]
                decisions[lo:hi] = [decisions[j][:] for j in src]
                head[lo:hi] = [0] * n
                log_w[lo:hi] = [0.0] * n
                n_resamples += 1
            active = [i for i in range(total) if head[i] < len(pending[i])]

        # Pool the islands.
        lw = np.asarray(log_w).reshape(n_islands, n)
        island_lse = logsumexp(lw, axis=1)
        island_log_z = np.asarray(log_z) + island_lse - log_n
        within = np.exp(lw - island_lse[:, None])
        between = np.exp(island_log_z - logsumexp(island_log_z))
        weights = (within * between[:, None]).ravel()
        weights /= weights.sum()
        ess = 1.0 / np.sum(within**2, axis=1)
        log_evidence = float(logsumexp(island_log_z) - math.log(n_islands))
        if stop_reason != "completed":
            log_evidence = math.nan
            island_log_z[:] = math.nan

        # Distinct trees (pending nodes of an unfinished run are leaves).
        by_key: dict[tuple[int, ...], int] = {}
        encodings: list[NDArray[np.int32]] = []
        tree_log_post: list[float] = []
        index = np.empty(total, dtype=np.int64)
        for i in range(total):
            key = tuple(decisions[i])
            j = by_key.get(key)
            if j is None:
                j = by_key[key] = len(encodings)
                tree = dict(divmod(code, n_features) for code in key)
                encodings.append(pool.encoding(tree))
                tree_log_post.append(pool.log_posterior(tree))
            index[i] = j
        log_posteriors = np.asarray(tree_log_post)[index]
        best = int(np.argmax(log_posteriors))
        return SampleSet(
            encodings=encodings,
            index=index,
            log_posteriors=log_posteriors,
            best=encodings[index[best]],
            stop_reason=stop_reason,
            extra={
                "weights_": weights,
                "log_evidence_estimate_": log_evidence,
                "island_log_evidence_": island_log_z,
                "islands_": np.repeat(np.arange(n_islands), n),
                "ess_": ess,
                "n_steps_": n_steps,
                "n_resamples_": n_resamples,
                "n_pool_nodes_": len(pool),
            },
        )


@register("smc", lambda: [(_kernels.subset_stats, None), (_kernels.split_stats, None)])
def _warm_up() -> None:
    """Compile the kernels of a fit (:mod:`arboretum._compile`) on a tiny problem."""
    X, y = tiny_problem()
    exercise_predictions(SMCTreeSampler(n_particles=8, time_limit=None, random_state=0).fit(X, y), X)
