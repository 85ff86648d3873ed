"""``OptimalTreeClassifier`` and ``OptimalTreeRegressor``: He & Little's provably optimal trees."""

from __future__ import annotations

import numbers
import sys
import time
from typing import Any

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.utils.validation import _num_samples

from .. import data as _data
from .._compile import register
from ..base import DEFAULT_TIME_LIMIT, FitClock, TreeEstimator, constraints
from ..binarizer import short_threshold
from ..data import InstanceOf, Interval, Options, check_classification_targets_encoded, check_regression_targets
from ..tree import HYPERPLANE, QUADRATIC, THRESHOLD, Tree, TreeBuilder, quadratic_features
from . import _kernels as K
from . import axis, depth2, hyper1
from .rules import (AXIS, HYPER, MAX_HYPERPLANE_DIM, MAX_QUADRATIC_FEATURES, QUAD, bytes_per_rule,
                    lifted_dim, make_rules, n_family_rules, routing_plane)
from .solver import Node, Solution, leaf_value, make_objective, n_combinations, solve
from .user import CandidateRules, LeafObjective

__all__ = ["OptimalTreeClassifier", "OptimalTreeRegressor", "MAX_COMBINATIONS", "MAX_RULE_BYTES"]

#: A request implying more K-combinations than this is refused before any work (at a billion
#: combinations a second it would take over a week).
MAX_COMBINATIONS = 10**15
#: A request whose rule bitsets would take more bytes than this is refused before any work.
MAX_RULE_BYTES = 4 * 2**30
SPLIT_TYPES = ("axis", "hyperplane", "quadratic")
#: A search that the time limit stopped gets its CART fallback fitted on at most this many rows (a
#: seeded draw; the tree is then routed and scored on every row): on 500,000 rows the fit on all of
#: them ran 4.4 s past the limit.
STOPPED_CART_ROWS = 50_000


def _lexsort(keys: list[np.ndarray]) -> np.ndarray:
    """``np.lexsort(keys)`` (the last key primary, stable), sorting only the rows whose primary key
    ties by the other keys: on 500,000 rows of real values lexsort's 21 passes took a second."""
    primary = np.asarray(keys[-1])
    order = np.argsort(primary, kind="stable")
    if len(keys) == 1 or order.size < 2:
        return order
    tie = primary[order[1:]] == primary[order[:-1]]
    if not tie.any():
        return order
    in_run = np.zeros(order.size, dtype=bool)  # sorted positions inside a run of equal primary keys
    in_run[1:] |= tie
    in_run[:-1] |= tie
    pos = np.flatnonzero(in_run)
    rows = order[pos]  # the runs, each in index order: a stable sort keeps that order among equal keys
    order[pos] = rows[np.lexsort([np.asarray(k)[rows] for k in keys])]
    return order

_OWN: dict = {
    "max_splits": [Interval(numbers.Integral, 0, None)],
    "exact_splits": ["boolean"],
    "split_type": [Options(SPLIT_TYPES), InstanceOf(CandidateRules, "an arboretum.optimal.CandidateRules")],
    "max_depth": [Interval(numbers.Integral, 1, None), None],
    "min_samples_leaf": [Interval(numbers.Integral, 0, None)],
    "objective": [None, Options(("zero_one", "squared_error")),
                  InstanceOf(LeafObjective, "an arboretum.optimal.LeafObjective")],
}


def _check_weights(sample_weight: Any, n: int) -> np.ndarray | None:
    if sample_weight is None:
        return None
    w = np.asarray(sample_weight, dtype=np.float64)
    if w.shape != (n,):
        raise ValueError(f"sample_weight must have shape ({n},); got {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError("sample_weight must hold finite non-negative numbers")
    if not w.sum() > 0:
        raise ValueError("sample_weight sums to zero: at least one sample must have a positive weight")
    return w


class _OptimalTreeBase(TreeEstimator):
    """What both optimal-tree estimators share: pre-flight, rules, the search, the fitted tree."""

    _uses_binary_questions = False

    @property
    def _kernel_family(self) -> str:
        """The numba kernels this fit runs (:mod:`arboretum._compile`): the axis-parallel search's
        alone (``"optimal-axis"``, the default ``split_type``) or the rules' search (``"optimal"``),
        so that a first fit compiles only what it runs."""
        if self._user_objective() is None and axis.applies(self.split_type, self.max_splits, self.exact_splits):
            return "optimal-axis"
        return "optimal"

    # Both estimators take the same parameters (scikit-learn reads them off this signature).
    def __init__(self, max_splits: int = 3, exact_splits: bool = False, split_type: str = "axis",
                 max_depth: int | None = None, min_samples_leaf: int = 1, objective: Any = None,
                 time_limit: float | None = DEFAULT_TIME_LIMIT, memory_limit: float | None = None,
                 n_jobs: int | None = None, verbose: int = 0) -> None:
        self.max_splits = max_splits
        self.exact_splits = exact_splits
        self.split_type = split_type
        self.max_depth = max_depth
        self.min_samples_leaf = min_samples_leaf
        self.objective = objective
        self.time_limit = time_limit
        self.memory_limit = memory_limit
        self.n_jobs = n_jobs
        self.verbose = verbose

    _parameter_constraints: dict = constraints("time_limit", "memory_limit", "n_jobs", "verbose", **_OWN)
    #: The name of the built-in objective (``objective=None`` or this).
    _builtin_objective = ""

    def _n_rules(self, n: int, d: int) -> int:
        if isinstance(self.split_type, CandidateRules):
            return len(self.split_type)
        return n_family_rules(self.split_type, n, d)

    @property
    def _family(self) -> str:
        """The rule family's name in messages."""
        return "user" if isinstance(self.split_type, CandidateRules) else self.split_type

    def _user_objective(self) -> LeafObjective | None:
        return self.objective if isinstance(self.objective, LeafObjective) else None

    def _validate_params(self) -> None:
        super()._validate_params()
        if isinstance(self.objective, str) and self.objective != self._builtin_objective:
            raise ValueError(
                f"{type(self).__name__}: objective must be None, {self._builtin_objective!r} or a LeafObjective; "
                f"got {self.objective!r}"
            )
        if isinstance(self.objective, LeafObjective):
            self.objective.compiled()  # numba compiles the user's cost now, before the clock starts
            _warm_user_kernels()

    def estimate_cost(self, X: Any) -> dict:
        """What fitting ``X`` implies, before any work: rules, combinations, rule memory.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        dict
            ``n_rules`` (candidate rules ``M``; for hyperplanes an upper bound:
            affinely dependent subsets are skipped), ``n_combinations`` (the
            K-combinations of rules the search examines without pruning) and
            ``rule_bytes`` (memory of the stored rules: bitsets, defining
            points, planes).
        """
        self._validate_params()
        columns, n, _ = _data.read_columns(X, None)
        return self._cost(n, len(columns))

    def _cost(self, n: int, d: int) -> dict:
        m = self._n_rules(n, d)
        return {
            "n_rules": m,
            "n_combinations": n_combinations(m, self.max_splits, self.exact_splits),
            "rule_bytes": m * (bytes_per_rule(self.split_type, n, d) if isinstance(self.split_type, str)
                               else 8 * ((n + 63) // 64) + 64),
        }

    def _preflight(self, n: int, d: int, fast: bool = False) -> None:
        """Refuse, before any work and with advice, a request that cannot finish (``fast``: the
        depth-2 axis path, which enumerates no combinations and stores no rules)."""
        if self.split_type == "hyperplane" and d > MAX_HYPERPLANE_DIM:
            raise ValueError(
                f"split_type='hyperplane' supports at most {MAX_HYPERPLANE_DIM} features; X has {d}. "
                f"Select a few features first, or use split_type='axis'."
            )
        if self.split_type == "quadratic" and d > MAX_QUADRATIC_FEATURES:
            raise ValueError(
                f"split_type='quadratic' supports at most {MAX_QUADRATIC_FEATURES} features (their degree-2 "
                f"monomials span {lifted_dim(MAX_QUADRATIC_FEATURES)} dimensions; {d} features would give "
                f"{lifted_dim(d)} and C(N, {lifted_dim(d)}) * 2**{lifted_dim(d)} rules); X has {d}. Select one or "
                f"two features first, or use split_type='hyperplane'."
            )
        if isinstance(self.split_type, CandidateRules):
            self.split_type.check(n, d)
        cost = self._cost(n, d)
        advice = (
            "lower max_splits, set max_depth, subsample the rows"
            + (", select fewer features or use split_type='axis'" if self.split_type == "hyperplane" else "")
            + (", or use split_type='hyperplane' (C(N, D) * 2**D rules)" if self.split_type == "quadratic" else "")
            + (", or give fewer rules" if isinstance(self.split_type, CandidateRules) else "")
        )
        if fast:
            return
        if cost["rule_bytes"] > MAX_RULE_BYTES:
            raise ValueError(
                f"{type(self).__name__}: {cost['n_rules']:,} candidate {self._family} rules on {n} samples "
                f"would take {cost['rule_bytes'] / 2**30:.1f} GiB (more than {MAX_RULE_BYTES / 2**30:.0f} GiB); "
                f"{advice}."
            )
        if cost["n_combinations"] > MAX_COMBINATIONS:
            raise ValueError(
                f"{type(self).__name__}: max_splits={self.max_splits} over {cost['n_rules']:,} candidate "
                f"{self._family} rules means {cost['n_combinations']:.3g} combinations of rules (more than "
                f"{MAX_COMBINATIONS:.0e}: weeks even at a billion a second); {advice}."
            )

    def _progress(self, examined: int, total: int, best: float) -> None:
        now = time.perf_counter()
        if now - getattr(self, "_last_print", 0.0) >= 1.0:
            self._last_print = now
            print(f"[{type(self).__name__}] combinations {examined:,} / {total:,}  best objective {best:.6g}",
                  file=sys.stderr)

    def _fit_common(self, X: Any, clock: FitClock, *, weight: np.ndarray | None, labels: np.ndarray | None = None,
                    n_classes: int = 0, target: np.ndarray | None = None, raw_target: np.ndarray | None = None,
                    scale: float = 1.0) -> None:
        """Read ``X``, generate the rules, search, and set the fitted attributes.

        Samples of weight 0 are left out, and the rest are put in a canonical
        order (rows sorted by their values, then by target) before the rules
        are generated, so that the tree returned among equally good ones (the
        first minimiser in rule order, spec G20) depends neither on the order
        of the rows nor on whether a sample is repeated or weighted.
        """
        E, cats = _data.raw_columns(X, self, borrow=True)  # reordered below (a copy): X is never written
        self.binarizer_ = None
        keep = None if weight is None else weight > 0
        y_key = labels if labels is not None else target
        keys = [y_key] + [E[:, j] for j in reversed(range(E.shape[1]))]
        if keep is not None:
            keys = [k[keep] for k in keys]
        order = _lexsort(keys)
        if keep is not None:
            order = np.flatnonzero(keep)[order]
        E = E[order]
        pick = lambda a: None if a is None else a[order]  # noqa: E731
        labels, target, raw_target, weight = pick(labels), pick(target), pick(raw_target), pick(weight)
        n, d = E.shape
        user_obj = self._user_objective()
        quadratic = self.split_type == "quadratic"
        # the lifted points of the quadratic family: its rules are hyperplanes of this space
        Z = quadratic_features(E) if quadratic and d <= MAX_QUADRATIC_FEATURES else E
        fast = user_obj is None and axis.applies(self.split_type, self.max_splits, self.exact_splits)
        single = user_obj is None and self.split_type in ("hyperplane", "quadratic") and hyper1.applies(
            "hyperplane", self.max_splits, Z.shape[1])
        # the axis search enumerates no combinations; very large requests still get the combination count's advice
        self._preflight(n, d, single or (fast and (self.max_splits <= 4 or (self.max_depth or 9) <= 3)))
        if user_obj is not None:
            y_user = labels if labels is not None else raw_target
            obj = _user_objective(user_obj, y_user, weight, n_classes)
            scale = 1.0
        else:
            obj = make_objective(n, labels=labels, n_classes=n_classes, target=target, weight=weight)
        if fast:  # axis-parallel, at most K: branch-and-bound over root splits (optimal/axis.py)
            self.n_rules_ = n * d
            sol = axis.solve_axis(E, obj, self.max_splits, nmin=self.min_samples_leaf, depth=self.max_depth,
                                  deadline=clock.deadline, progress=self._progress if self.verbose else None)
            greedy = None if sol.optimal else self._greedy(
                E, obj, labels, target, weight, max_rows=STOPPED_CART_ROWS if clock.expired() else None)
            if greedy is not None and (sol.tree is None or greedy.cost < sol.cost):  # stopped early: CART is better
                greedy.optimal, greedy.n_examined, greedy.n_total = False, sol.n_examined, sol.n_total
                sol = greedy

            def split_of(r: int) -> tuple:  # axis_thresholds' threshold, for the tree's rules only (all N * D
                col, v = E[:, r // n], float(E[r % n, r // n])  # of them can cost more than the search)
                above = col[col > v]
                return THRESHOLD, r // n, short_threshold(v, float(above.min())) if above.size else v, None
        elif single:
            self.n_rules_ = n_family_rules(self.split_type, n, d)
            sol, rule1 = hyper1.solve_hyperplane1(Z, obj, exact=self.exact_splits, nmin=self.min_samples_leaf,
                                                  deadline=clock.deadline)

            def split_of(r: int) -> tuple:
                if isinstance(rule1, hyper1.SeedPlane):  # stopped: the search's seed split
                    return QUADRATIC if quadratic else HYPERPLANE, None, rule1.threshold, rule1.coef
                return _plane_split(rule1, r, Z, QUADRATIC if quadratic else HYPERPLANE)
        else:
            if isinstance(self.split_type, CandidateRules):
                rules = self.split_type.rule_set(E, rows=order)
            else:
                # the plane families' generation watches the clock: stopped, the rules made so far
                rules = make_rules(E, self.split_type, deadline=clock.deadline)
            self.n_rules_ = rules.n_rules
            # user objectives: plain enumeration (the bounds assume a built-in loss)
            bounded = self._memory_check(rules, n) and user_obj is None
            greedy = self._incumbent(rules, E, obj, labels, target, weight) if bounded and rules.complete else None
            incumbent = None
            if greedy is not None:  # a little above its cost: the DP may sum the same leaves in another order
                incumbent = greedy.cost * (1 + 1e-12) + 1e-300 if obj.mode != K.ZERO_ONE_UNIT else greedy.cost
            sol = solve(rules, obj, self.max_splits, exact=self.exact_splits, nmin=self.min_samples_leaf,
                        depth=self.max_depth, deadline=clock.deadline,
                        progress=self._progress if self.verbose else None, incumbent=incumbent,
                        bounds=bounded, n_jobs=self.n_jobs if user_obj is None else 1)  # user costs share scratch
            if sol.tree is None and greedy is not None:  # nothing beat the greedy tree (stopped, or rounding)
                greedy.optimal, greedy.n_examined, greedy.n_total = sol.optimal, sol.n_examined, sol.n_total
                greedy.n_pruned, greedy.lower_bound = sol.n_pruned, min(sol.lower_bound, greedy.cost)
                sol = greedy
            if not rules.complete:  # the optimum over part of the family certifies nothing
                sol.optimal = False
                sol.lower_bound = 0.0

            def split_of(r: int) -> tuple:
                if rules.kind[r] == AXIS:
                    return THRESHOLD, int(rules.feature[r]), float(rules.threshold[r]), None
                if rules.kind[r] == HYPER:
                    return _plane_split(rules, r, E, HYPERPLANE)
                if rules.kind[r] == QUAD:
                    return _plane_split(rules, r, Z, QUADRATIC)
                return rules.splits[r]
        if sol.tree is None and sol.optimal:
            raise ValueError(
                f"{type(self).__name__}: no tree with {'exactly' if self.exact_splits else 'at most'} "
                f"{self.max_splits} splits satisfies min_samples_leaf={self.min_samples_leaf}"
                f"{'' if self.max_depth is None else f' and max_depth={self.max_depth}'} on {n} samples; "
                f"lower min_samples_leaf or max_splits"
                + (", or set exact_splits=False" if self.exact_splits else "")
            )
        if sol.tree is None:  # stopped before any feasible tree: a single leaf
            root = Node(-1, np.ones(n, dtype=bool))
            sol = Solution(float(K.leaf_cost(_all_bits(n), obj)), root, (), False, sol.n_examined, sol.n_total)
        leaf_kw = {"weight": weight}
        if labels is not None:
            leaf_kw.update(labels=labels, n_classes=n_classes)
        else:
            leaf_kw["target"] = raw_target
        if user_obj is not None and user_obj.value is not None:
            leaf_kw["value_of"] = _user_value(user_obj, labels if labels is not None else raw_target, weight,
                                              n_classes if labels is not None else 1)
        self.tree_ = self._build_tree(sol.tree, split_of, E.shape[1], cats, leaf_kw)
        self.objective_ = float(sol.cost) * scale
        self.optimal_ = bool(sol.optimal)
        self.n_combinations_ = sol.n_examined
        self.n_pruned_ = int(getattr(sol, "n_pruned", 0))
        lower = sol.lower_bound if getattr(sol, "lower_bound", None) is not None else 0.0
        self.lower_bound_ = self.objective_ if sol.optimal else min(float(lower) * scale, self.objective_)
        self.fit_time_ = clock.elapsed()
        self._set_stop(
            "completed" if sol.optimal else "time_limit",
            f"returning the best tree of {sol.n_examined:,} of {sol.n_total:,} combinations of rules "
            f"(objective {self.objective_:.6g}), not certified optimal",
        )

    def _memory_check(self, rules, n: int) -> bool:
        """Whether the bounds' tables fit in ``memory_limit`` beside the rules (else the plain,
        slower enumeration runs, which needs no more than the rules); rules alone over the
        limit are refused, with advice."""
        if self.memory_limit is None:
            return True
        limit = float(self.memory_limit) * 2**20
        have = sum(a.nbytes for a in (rules.pos, rules.defs, rules.kind, rules.feature, rules.threshold,
                                      rules.assign) if a is not None)
        if rules.planes is not None:
            have += rules.planes.nbytes
        if have > limit:
            raise ValueError(
                f"{type(self).__name__}: the {rules.n_rules:,} candidate rules on {n} samples take "
                f"{have / 2**20:.1f} MiB, more than memory_limit={self.memory_limit!r} MiB; raise memory_limit, "
                f"subsample the rows or select fewer features"
            )
        from .bounds import table_bytes

        return have + table_bytes(rules.n_rules, self.max_splits) <= limit

    def _incumbent(self, rules, E: np.ndarray, obj, labels, target, weight) -> Solution | None:
        """The better of a greedy tree over the same rules (any family) and, for axis rules in
        "at most K" requests, CART's tree: a feasible tree whose cost bounds the search."""
        from .bounds import greedy_tree

        cands = [greedy_tree(rules, obj, self.max_splits, exact=self.exact_splits, nmin=self.min_samples_leaf,
                             depth=self.max_depth)]
        if self.split_type == "axis" and not self.exact_splits and self.max_splits >= 1:
            cands.append(self._greedy(E, obj, labels, target, weight))
        cands = [c for c in cands if c is not None]
        return min(cands, key=lambda c: c.cost) if cands else None

    def _greedy(self, E: np.ndarray, obj, labels, target, weight, max_rows: int | None = None) -> Solution | None:
        """A CART tree with at most ``max_splits`` splits under the same constraints, as a tree of
        the axis rules (each threshold moved to the largest value of its node at or below it, whose
        point defines the rule): a feasible proper tree whose cost bounds the search (spec item 4).

        With ``max_rows``, CART is fitted on at most that many rows (drawn with seed 0) and its
        thresholds are then applied to every row: each node keeps the drawn rows it had, so both
        sides of every split stay non-empty and hold at least ``min_samples_leaf`` rows."""
        from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

        from .._numba import pack_rows_mask

        n = E.shape[0]
        if n < 2 * max(1, self.min_samples_leaf):
            return None
        kw = dict(max_leaf_nodes=self.max_splits + 1, max_depth=self.max_depth,
                  min_samples_leaf=max(1, self.min_samples_leaf), random_state=0)
        cart = DecisionTreeClassifier(**kw) if labels is not None else DecisionTreeRegressor(**kw)
        fit_rows = slice(None)
        if max_rows is not None and n > max_rows:
            fit_rows = _data.seeded_rows(n, max_rows)
        cart.fit(E[fit_rows], (labels if labels is not None else target)[fit_rows],
                 sample_weight=None if weight is None else weight[fit_rows])
        t = cart.tree_

        def node(i: int, mask: np.ndarray) -> Node:
            if t.children_left[i] < 0:
                return Node(-1, mask)
            f = int(t.feature[i])
            go = E[:, f] <= t.threshold[i]
            cand = np.flatnonzero(mask & go)
            v = E[cand, f].max()
            r = f * n + int(cand[E[cand, f] == v][0])
            return Node(r, mask, node(int(t.children_left[i]), mask & go), node(int(t.children_right[i]), mask & ~go))

        root = node(0, np.ones(n, dtype=bool))
        cost = sum(float(K.leaf_cost(pack_rows_mask(leaf.points), obj)) for leaf in root.leaves())
        return Solution(cost, root, tuple(root.rules()), False)

    def _build_tree(self, root: Node, split_of, n_features: int, cats: list, leaf_kw: dict) -> Tree:
        """The :class:`Tree` of ``root``; ``split_of(rule)`` gives ``(kind, feature, threshold, coef)``."""
        classes = getattr(self, "classes_", None)
        builder = TreeBuilder(
            n_features=n_features, classes=classes,
            task="classification" if classes is not None else "regression",
            feature_names=self._feature_names(), feature_categories=cats,
        )
        leaf_kw = dict(leaf_kw)
        value_of = leaf_kw.pop("value_of", None)

        def add(node: Node, depth: int) -> int:
            counts, value = leaf_value(node.points, **leaf_kw)
            if value_of is not None:
                value = value_of(node.points)
            i = builder.add_node(counts, value, depth)
            if node.rule >= 0:
                left = add(node.left, depth + 1)
                right = add(node.right, depth + 1)
                kind, feature, threshold, coef = split_of(node.rule)
                builder.set_split(i, kind, feature, threshold, left, right, coef=coef)
            return i

        add(root, 0)
        return builder.build()


def _plane_split(rules, r: int, Z: np.ndarray, kind: int) -> tuple:
    """The ``HYPERPLANE`` (``Z = X``) or ``QUADRATIC`` (``Z`` the lifted points) split of plane rule
    ``r``: its routing plane (:func:`.rules.routing_plane`); a quadratic one scaled by a power of two
    so that its largest coefficient is in [0.5, 1) (readable, and the very same test in floating point)."""
    coef, thr = routing_plane(rules, r, Z)
    top = float(np.max(np.abs(coef))) if coef.size else 0.0
    if kind == QUADRATIC and top > 0 and np.isfinite(top):
        e = -int(np.frexp(top)[1])
        if np.all(np.isfinite(np.ldexp(coef, e))) and np.isfinite(np.ldexp(thr, e)):
            coef, thr = np.ldexp(coef, e), float(np.ldexp(thr, e))
    return kind, None, thr, coef


def _user_objective(user: LeafObjective, y: np.ndarray, weight: np.ndarray | None, n_classes: int) -> K.Objective:
    """The kernels' objective of a user's :class:`LeafObjective` on the search's points."""
    n = y.shape[0]
    w = np.ones(n) if weight is None else weight
    S = user.point_stats(y, w)
    cost = user.compiled()
    labels = y.astype(np.int64) if n_classes else np.zeros(n, dtype=np.int64)
    obj = K.UserObjective(K.USER, np.zeros((1, (n + 63) // 64), dtype=np.uint64), labels, w, np.zeros(n),
                          np.zeros(max(n_classes, 1)), S, np.zeros(S.shape[1]), np.zeros(n, dtype=np.int64), cost)
    root = float(K.leaf_cost(_all_bits(n), obj))
    if not (np.isfinite(root) and root >= 0):
        raise ValueError(f"LeafObjective {user.name!r}: the cost of the leaf of all {n} training points is {root}; "
                         f"a leaf's cost must be a finite number >= 0")
    return obj


def _user_value(user: LeafObjective, y: np.ndarray, weight: np.ndarray | None, size: int):
    """``points -> value`` of a leaf by the user's ``value(y, sample_weight)``, checked."""
    w = np.ones(y.shape[0]) if weight is None else weight

    def value_of(points: np.ndarray) -> np.ndarray:
        v = np.atleast_1d(np.asarray(user.value(y[points], w[points]), dtype=np.float64))
        if v.shape != (size,) or not np.all(np.isfinite(v)) or (size > 1 and np.any(v < 0)):
            raise ValueError(f"LeafObjective {user.name!r}: value(y, sample_weight) must return "
                             f"{'one number' if size == 1 else f'{size} non-negative numbers (one per class)'}; "
                             f"got {v.tolist()}")
        return v

    return value_of


_USER_WARM: list = []


def _zero_cost(sums, members, n_members, stats):  # pragma: no cover - compiled as a cfunc
    return 0.0


def _warm_user_kernels() -> None:
    """Compile (or load from numba's cache) the kernels' specialisation for user objectives once per
    process, before a fit's clock starts (it is shared by every user cost, so only the first fit
    of a process with a :class:`LeafObjective` pays it)."""
    if _USER_WARM:
        return
    from numba import cfunc

    from .rules import axis_rules

    X = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 2.0], [3.0, 1.0]])
    labels = np.array([0, 1, 1, 0])
    cost = cfunc(K.USER_COST_SIGNATURE, cache=True)(_zero_cost)
    obj = K.UserObjective(K.USER, np.zeros((1, 1), dtype=np.uint64), labels, np.ones(4), np.zeros(4), np.zeros(2),
                          np.ones((4, 1)), np.zeros(1), np.zeros(4, dtype=np.int64), cost)
    solve(axis_rules(X), obj, 2, depth=2, nmin=1)
    _USER_WARM.append(True)


def _all_bits(n: int) -> np.ndarray:
    from .._numba import pack_rows_mask

    return pack_rows_mask(np.ones(n, dtype=bool))


_DOC_PARAMS = """
    max_splits : int, default=3
        ``K``, the number of splitting rules (branch nodes): at most ``K``
        (the best tree with 0, 1, ..., ``K`` splits; ties go to fewer), or
        exactly ``K`` with ``exact_splits=True``.  Axis-parallel "at most
        ``K``" requests use a branch-and-bound search whose ties go instead to
        the first optimal tree it finds (deterministic, ConTree's rule), in
        which every split lowers the cost below a leaf at its node.
    exact_splits : bool, default=False
        Only trees with exactly ``max_splits`` rules (the paper's ``odt_K``);
        then a tree may need an empty leaf, which ``min_samples_leaf=0`` allows.
    split_type : {"axis", "hyperplane", "quadratic"} or CandidateRules, default="axis"
        The candidate rules (spec-002 §3.11).  "axis": ``x_d <= x_{n,d}``, one
        per (feature, training point), ``N * D`` rules.  "hyperplane": the
        hyperplane through every affinely independent ``D``-subset of training
        points with each of the ``2**D`` assignments of those points to the
        two sides, ``C(N, D) * 2**D`` rules (at most 6 features); exact sign
        tests.  "quadratic": degree-2 hypersurfaces, the hyperplanes of the
        lifted points ``(x_j, x_j x_k)`` (``G = D + D (D + 1) / 2``
        dimensions) through ``G``-subsets, ``C(N, G) * 2**G`` rules (at most
        2 features, ``G = 5``: small ``N`` only, e.g. ``N = 20`` gives 496,128
        rules); ``QUADRATIC`` splits.  A
        :class:`~arboretum.optimal.CandidateRules`: the user's own rules.  The
        optimum is over the proper trees built from these rules (every rule
        below another lies wholly on one side of it), which for axis rules is
        the optimum over all axis-parallel trees.
    max_depth : int or None, default=None
        Most splits on a root-to-leaf path; None: any.
    min_samples_leaf : int, default=1
        Fewest training samples (unweighted) in a leaf.
    objective : None, "zero_one", "squared_error" or LeafObjective, default=None
        The training objective: None or the built-in name (the classifier's
        weighted 0-1 loss "zero_one", the regressor's weighted squared error
        "squared_error"), or any objective that is a sum over the leaves of
        a function of each leaf's points, as a
        :class:`~arboretum.optimal.LeafObjective` (e.g. weighted Gini, a
        cost-sensitive 0-1 loss, absolute error; spec-002 §3.5).
    time_limit : float or None, default=60
        Seconds of wall clock for the whole ``fit`` (numba compilation
        excluded): reading ``X``, generating the rules, the search (checked
        between chunks of combinations) and building the tree.  When it stops
        the search, the best tree found so far is returned with ``optimal_ =
        False``, ``stop_reason_ = "time_limit"`` and a
        :class:`~arboretum.LimitWarning`.  None: no limit.
    memory_limit : float or None, default=None
        MiB for the candidate rules' bitsets and the search's tables.  Rules
        alone over it: a ``ValueError`` before the search, with advice; rules
        that fit but leave no room for the bounds' tables
        (:func:`arboretum.optimal.bounds.table_bytes`): the plain enumeration
        runs (same tree, slower; ``n_pruned_ = 0``).  None: no limit.
    n_jobs : int or None, default=None
        Workers for the combination loop (joblib; threads, the numba kernels
        release the GIL): ``-1`` all cores; None one, unless inside a
        ``joblib.parallel_backend`` (e.g. ``"dask"``, which spreads one fit
        over a cluster).  The tree is the same for any value.  With a
        user ``objective`` the loop runs in one worker (its compiled cost
        shares scratch arrays).
    verbose : int, default=0
        If > 0, print progress about once a second.

    Requests that cannot finish (more than ``MAX_COMBINATIONS`` combinations
    of rules, or rule bitsets over ``MAX_RULE_BYTES``) are refused with a
    ``ValueError`` before any work; :meth:`estimate_cost` tells the numbers.
"""

_DOC_ATTRS = """
    optimal_ : bool
        True when the search examined every combination: ``tree_`` is optimal.
    stop_reason_ : str
        "completed" or "time_limit".
    n_rules_ : int
        Candidate rules ``M``.
    n_combinations_ : int
        Work units of the search examined: combinations of rules, except on
        the K = 2 path (spec §3.13 item 7), where a unit is a (root rule,
        side) pair standing for every 2-combination with that root.
    n_pruned_ : int
        Those of ``n_combinations_`` that admissible bounds (proved in
        :mod:`arboretum.optimal.bounds`) excluded without solving them.
    lower_bound_ : float
        A lower bound of the optimal objective: ``objective_`` when
        ``optimal_``, else what the bounds certify for the part not searched
        (0 where nothing is known).
    fit_time_, compile_time_ : float
    binarizer_ : None
        These trees split raw values (no discretiser).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` had string column names.
"""


class OptimalTreeClassifier(ClassifierMixin, _OptimalTreeBase):
    _builtin_objective = "zero_one"

    __doc__ = f"""Provably optimal classification tree with at most (or exactly) K splitting rules.

    He & Little (2025), "Provably optimal decision trees with arbitrary
    splitting rules in polynomial time" (spec-002): the proper decision tree
    of least weighted misclassification among all trees whose ``K`` branch
    nodes are candidate rules generated from the data, found by enumerating
    the ``K``-combinations of rules and solving each with the paper's dynamic
    programme over proper trees (with exact pruning against the best tree so
    far).  Columns are split on their raw values (categories on the codes of
    their sorted labels).

    Parameters
    ----------{_DOC_PARAMS}
    Attributes
    ----------
    tree_ : arboretum.Tree
        The tree: ``THRESHOLD`` or ``HYPERPLANE`` splits, leaves with the
        weighted class counts and proportions.
    classes_ : ndarray of shape (n_classes,)
    objective_ : float
        Weighted training misclassification of ``tree_``.{_DOC_ATTRS}
    Examples
    --------
    >>> from arboretum import OptimalTreeClassifier
    >>> X = [[0, 0], [1, 1], [0, 1], [1, 0]]
    >>> clf = OptimalTreeClassifier(max_splits=1, split_type="hyperplane").fit(X, [0, 0, 1, 1])
    >>> clf.objective_, clf.optimal_
    (1.0, True)
    """

    def fit(self, X, y, sample_weight=None) -> "OptimalTreeClassifier":
        """Find the optimal tree of ``(X, y)``.

        Parameters
        ----------
        X : array-like or pandas DataFrame of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative weights: the objective is the total weight of the
            misclassified samples.

        Returns
        -------
        self
        """
        self._validate_params()
        y_enc, classes = check_classification_targets_encoded(
            y, n_samples=_num_samples(X), estimator_name=type(self).__name__
        )
        clock = self._start_clock()
        w = _check_weights(sample_weight, len(y_enc))
        self.classes_ = classes
        self._fit_common(X, clock, weight=w, labels=y_enc, n_classes=len(classes))
        return self

    _predict_methods = ("map",)

    def predict_proba(self, X, method: str = "map") -> np.ndarray:
        """Class proportions (weighted) of the training samples in each sample's leaf.

        Parameters
        ----------
        X : array-like or pandas DataFrame of shape (n_samples, n_features_in_)
        method : {"map"}, default="map"
            The shared ``predict_proba`` vocabulary: one tree is found, so
            only "map" (predict with ``tree_``) applies.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        self._method(method)
        leaves = self.apply(X)  # checks that the estimator is fitted first
        return self.tree_.value[leaves].copy()

    def predict(self, X) -> np.ndarray:
        """The majority class of each sample's leaf (ties: the first class)."""
        proba = self.predict_proba(X)  # checks that the estimator is fitted first
        return self.classes_[np.argmax(proba, axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = True
        return tags


class OptimalTreeRegressor(RegressorMixin, _OptimalTreeBase):
    _builtin_objective = "squared_error"

    __doc__ = f"""Provably optimal regression tree (least squared error) with at most (or exactly) K splitting rules.

    The regression counterpart of :class:`OptimalTreeClassifier`: the leaf
    cost is the weighted squared error around the leaf's weighted mean.  The
    search runs on standardised targets (the same ranking of trees).

    Parameters
    ----------{_DOC_PARAMS}
    Attributes
    ----------
    tree_ : arboretum.Tree
        Leaves hold the number of samples and the weighted mean target.
    objective_ : float
        Weighted training sum of squared errors of ``tree_`` (units of ``y`` squared).{_DOC_ATTRS}
    """

    def fit(self, X, y, sample_weight=None) -> "OptimalTreeRegressor":
        """Find the optimal regression tree of ``(X, y)``.

        Parameters
        ----------
        X : array-like or pandas DataFrame of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative weights of the squared errors.

        Returns
        -------
        self
        """
        self._validate_params()
        y = check_regression_targets(y, n_samples=_num_samples(X), estimator_name=type(self).__name__)
        clock = self._start_clock()
        w = _check_weights(sample_weight, len(y))
        ww = np.ones(len(y)) if w is None else w
        sw = float(ww.sum())
        center = float(np.dot(ww, y) / sw) if sw > 0 else 0.0
        spread = float(np.sqrt(np.dot(ww, (y - center) ** 2) / sw)) if sw > 0 else 0.0
        if not (np.isfinite(spread) and spread > 0):
            spread = 1.0
        self._fit_common(X, clock, weight=w, target=(y - center) / spread, raw_target=y, scale=spread**2)
        return self

    def predict(self, X) -> np.ndarray:
        """The weighted mean training target of each sample's leaf."""
        leaves = self.apply(X)  # checks that the estimator is fitted first
        return self.tree_.value[leaves, 0].copy()


def _tiny_objectives():
    """Tiny problems with the argument types of real fits: 4 and 8 points, with the objectives of
    classification with and without weights and of regression."""
    X = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 2.0], [3.0, 1.0]])
    labels = np.array([0, 1, 1, 0])
    for kw in ({"labels": labels, "n_classes": 2}, {"labels": labels, "n_classes": 2, "weight": np.arange(1.0, 5.0)},
               {"target": X[:, 0]}):
        obj8 = make_objective(8, **{a: (np.r_[v, v] if isinstance(v, np.ndarray) else v) for a, v in kw.items()})
        yield X, make_objective(4, **kw), np.r_[X, X + 0.5], obj8


@register("optimal-axis", lambda: [(K.leaf_cost, None), (depth2.depth2_features, None), (depth2.eval_root, None),
                                    (depth2.depth2_prepare, None), (depth2.depth2_solve, None),
                                    (depth2.level_solve, None), (depth2.feature_best_splits, None),
                                    (depth2.best_single_root, None), (depth2.split_subset, None),
                                    (depth2.leaf_of, None)])
def _warm_axis() -> None:
    """Compile the axis-parallel search (:mod:`.axis`: the depth-2 kernel and the levels above it,
    with and without leaf sizes, whole and a chunk of features at a time) and the leaf cost of
    its CART incumbent.  The default ``split_type="axis"`` needs only these: a third of the
    compiling of all the optimal trees' kernels (:func:`_warm`)."""
    from .._numba import pack_rows_mask

    for _, _, X8, obj8 in _tiny_objectives():
        for k, depth, nmin in ((3, 2, 1), (3, None, 0), (4, None, 2)):
            axis.solve_axis(X8, obj8, k, depth=depth, nmin=nmin)
        # large problems solve a depth-2 problem a chunk of features at a time (the deadline is
        # read between chunks): the same search with chunks of one feature compiles those kernels
        chunk, axis._KERNEL_CHUNK = axis._KERNEL_CHUNK, 1
        try:
            for k, depth, nmin in ((3, 2, 1), (3, None, 0)):
                axis.solve_axis(X8, obj8, k, depth=depth, nmin=nmin)
        finally:
            axis._KERNEL_CHUNK = chunk
        K.leaf_cost(pack_rows_mask(np.arange(8) < 5), obj8)  # a stopped search's CART incumbent (_greedy)


@register("optimal", lambda: [(K.search_chunk, None), (K.leaf_cost, None), (hyper1.hyperplane1_sweep, None),
                               (K.k2_roots, None), (K.splits_reaching, None), (K.side_table, None)])
def _warm() -> None:
    """Compile the rules' search on a tiny problem: the generic DP and its bounds (the K = 2 path,
    root bounds, the greedy incumbent) and the single-hyperplane path; hyperplane, quadratic and
    user rules, ``exact_splits`` and user objectives run these."""
    from .bounds import greedy_tree
    from .rules import axis_rules

    for X, obj, _, _ in _tiny_objectives():
        rules = axis_rules(X)
        solve(rules, obj, 2, depth=2, nmin=1)
        solve(rules, obj, 3, nmin=0)  # the bounds: K = 2 path, root bounds, greedy incumbent
        solve(rules, obj, 3, nmin=1, exact=True)
        greedy_tree(rules, obj, 2, exact=False, nmin=1, depth=None)
        for dim in range(1, 4):
            hyper1.solve_hyperplane1(np.c_[X, X[::-1]][:, :dim], obj, nmin=1)
