"""The sparse density rule list (Method III of Goh, Semenova & Rudin; spec-004 §5, §6.2)."""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from ..base import constraints
from ..data import Interval, Options
from .base import DENSITY_CONSTRAINTS, DensityEstimator, rule_list_pieces
from .posterior import log_volumes
from .rulelist import ListModel, metropolis_hastings, mine_antecedents

__all__ = ["SparseDensityRuleList"]


class SparseDensityRuleList(DensityEstimator):
    """Sparse density rule list (Method III): "if a_1 then f_1, else if a_2 then f_2, ..., else f_0".

    Antecedents are conjunctions of at most ``max_rule_size`` literals ``feature = category`` (all of
    them, or those with ``min_support``); the prior is Poisson(``lam``) on the length, Poisson(``eta``)
    on each rule's size and uniform on the antecedent (spec §5.2); the leaf probabilities are
    Dirichlet(``alpha``).  ``n_chains`` seeded Metropolis-Hastings chains of ``n_iter`` add / cut / move
    proposals (spec §6.2) search the lists; the fit keeps the list of highest posterior visited
    (``point_estimate="map"``) or BRL's point estimate, and reports the chains' Gelman-Rubin statistic
    ``r_hat_`` (values above 1.1 mean the chains disagree).  Leaf ``i`` holds the configurations that
    satisfy rule ``i`` and no earlier rule; its volume is computed exactly by box subtraction.

    Parameters
    ----------
    lam : float, default=5.0
        Prior mean of the list length (the paper's grid 3, 5, 7).
    eta : float, default=1.0
        Prior mean of the number of literals per rule.
    alpha : float, default=1.0
    max_rule_size : int, default=2
    min_support : float, default=0.0
        Fewest training rows an antecedent must cover (a fraction when < 1); 0 mines them all.
    n_iter : int, default=50000
    burn_in : int or None, default=None (``n_iter // 2``)
    n_chains : int, default=3
    point_estimate : {"map", "brl_point"}, default="map"
    exact_dirichlet_normalizer : bool, default=False
        Add the factor the paper drops (spec §5.3).
    density : {"posterior_mean", "mle"}, default="posterior_mean"
        ``(n_l + alpha) / (n + (m+1) alpha)`` per leaf (the reference code, Figure 5) or ``n_l / n``,
        renormalised over leaves of non-zero volume.
    categories, n_bins, handle_unknown, time_limit, random_state, verbose
        As :class:`LeafSparseDensityTree`.

    Notes
    -----
    The likelihood grows with the number of rows and the prior's cost per rule does not (about 10 nats per
    rule at the paper's settings), so on thousands of rows the posterior's best lists are long: on Bank Full,
    Chess and Mushroom it prefers lists of 120-256 rules to the best 6-8-rule lists by 30 000-140 000 nats, and
    they score better on held-out rows too (``benchmarks/results/density_list_length.md``). ``lam`` barely
    changes that (ln(lam'/lam) nats per rule); fewer candidates do (``min_support=0.3``: 7 rules on Bank Full).
Lists whose uncovered region needs more than ``MAX_FREE_BOXES`` (512) disjoint boxes are outside the search
space (:mod:`._list_kernels`); the chains on Chess and Mushroom reach that bound (about a third of their
proposals there go beyond it).  A step costs 40-250 microseconds at these lengths
(``benchmarks/results/density_list_steps.md``): 50 000 steps x 3 chains fit in 7-26 s on those data sets.

    Attributes
    ----------
    rules_ : list of list of str
        The antecedents in order (the default rule is the last leaf).
    r_hat_ : float
    n_antecedents_ : int
    log_posterior_, n_leaves_ (``m + 1``), leaf arrays, stop_reason_, fit_time_ ...
    """

    _is_list = True

    def __init__(self, lam: float = 5.0, eta: float = 1.0, alpha: float = 1.0, *, max_rule_size: int = 2,
                 min_support: float = 0.0, n_iter: int = 50_000, burn_in: int | None = None, n_chains: int = 3,
                 point_estimate: str = "map", exact_dirichlet_normalizer: bool = False,
                 density: str = "posterior_mean", categories: Any = None, n_bins: int | None = None,
                 handle_unknown: str = "error", time_limit: float | None = 60.0, random_state: Any = None,
                 verbose: int = 0) -> None:
        self.lam = lam
        self.eta = eta
        self.alpha = alpha
        self.max_rule_size = max_rule_size
        self.min_support = min_support
        self.n_iter = n_iter
        self.burn_in = burn_in
        self.n_chains = n_chains
        self.point_estimate = point_estimate
        self.exact_dirichlet_normalizer = exact_dirichlet_normalizer
        self.density = density
        self.categories = categories
        self.n_bins = n_bins
        self.handle_unknown = handle_unknown
        self.time_limit = time_limit
        self.random_state = random_state
        self.verbose = verbose

    _parameter_constraints = constraints(
        "time_limit", "random_state", "verbose",
        lam=[Interval(numbers.Real, 0, None, closed="neither")],
        eta=[Interval(numbers.Real, 0, None, closed="neither")],
        alpha=[Interval(numbers.Real, 0, None, closed="neither")],
        max_rule_size=[Interval(numbers.Integral, 1, None)],
        min_support=[Interval(numbers.Real, 0, None, closed="left")],
        n_iter=[Interval(numbers.Integral, 1, None)],
        burn_in=[Interval(numbers.Integral, 0, None), None],
        n_chains=[Interval(numbers.Integral, 1, None)],
        point_estimate=[Options(("map", "brl_point"))],
        exact_dirichlet_normalizer=["boolean"],
        density=[Options(("mle", "posterior_mean"))],
        **DENSITY_CONSTRAINTS,
    )

    def fit(self, X: Any, y: Any = None) -> "SparseDensityRuleList":
        """Search rule lists for ``X`` by Metropolis-Hastings; keep the point estimate.

        Returns
        -------
        self
        """
        self._validate_params()
        if self.burn_in is not None and self.burn_in >= self.n_iter:
            raise ValueError(f"burn_in must be smaller than n_iter={self.n_iter}; got {self.burn_in}")
        clock = self._start_clock()
        codes = self._fit_codes_density(X)
        q = self._q
        n = codes.shape[0]
        reason = "completed"
        try:
            ants = mine_antecedents(codes, q, int(self.max_rule_size), float(self.min_support), clock.deadline)
        except TimeoutError:
            ants = mine_antecedents(codes, q, 1, float(self.min_support))
            reason = "time_limit"
        model = ListModel(ants, q, n, float(self.lam), float(self.eta), float(self.alpha),
                          bool(self.exact_dirichlet_normalizer))
        rs = self.random_state
        seed = rs if rs is None or isinstance(rs, numbers.Integral) else int(rs.randint(2**31 - 1))
        res = metropolis_hastings(model, n_iter=int(self.n_iter), burn_in=self.burn_in, n_chains=int(self.n_chains),
                                  point_estimate=self.point_estimate, random_state=seed, deadline=clock.deadline)
        if res.stopped:
            reason = "time_limit"
        rules = res.rules
        boxes = [ants.boxes[a] for a in rules] + [self._full_box()]
        counts = model.counts(rules).astype(np.float64)
        self._set_leaves(boxes, counts, log_volumes(model.volumes(rules)), n, self.density, float(self.alpha))
        self.rules_ = [self._conditions(b) for b in boxes[:-1]]
        self.r_hat_ = float(res.r_hat)
        self.n_antecedents_ = int(len(ants.sizes))
        self.log_posterior_ = float(res.log_posterior)
        self.fit_time_ = clock.elapsed()
        self._set_stop(reason, f"returning the best list visited ({len(rules)} rules)")
        return self

    def _leaf_pieces(self, i: int) -> list[tuple]:
        return rule_list_pieces(self, i)

    def _check_loaded(self) -> None:
        super()._check_loaded()
        if not np.all(self.leaf_boxes_[-1] == np.array(self._full_box(), dtype=np.uint64)):
            raise ValueError("the last leaf of a rule list must be the default rule (the whole domain)")
        if not isinstance(self.r_hat_, float) or math.isinf(self.n_leaves_):
            raise ValueError("r_hat_ must be a number")
