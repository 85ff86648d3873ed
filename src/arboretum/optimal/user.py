"""What a user can plug into the optimal trees: a family of rules and a decomposable objective.

:class:`CandidateRules`
    ``split_type=CandidateRules([...])``: the candidate rules are the user's,
    written in the split kinds of :class:`arboretum.Tree` (a threshold on a
    feature, a hyperplane, a degree-2 hypersurface), so the fitted tree is an
    ordinary ``Tree`` that predicts and saves without the user's code.
:class:`LeafObjective`
    ``objective=LeafObjective(cost, stats)``: any objective of spec-002 §3.5,
    ``E(leaf) = f(the leaf's points)`` and ``E(node) = E(left) + E(right)``,
    with ``f`` a numba-compiled function of the per-leaf sums of per-point
    statistics (and, when a sum is not enough, of the leaf's point indices).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..tree import HYPERPLANE, QUADRATIC, THRESHOLD, quadratic_features, quadratic_terms

__all__ = ["CandidateRules", "LeafObjective"]

_KINDS = {"threshold": THRESHOLD, "hyperplane": HYPERPLANE, "quadratic": QUADRATIC}


def _rule_error(r: int, msg: str) -> ValueError:
    return ValueError(f"CandidateRules: rule {r} {msg}")


@dataclass(eq=False)
class CandidateRules:
    """A user-supplied family of candidate splitting rules (``split_type=CandidateRules(...)``).

    Every rule is written as a split of :class:`arboretum.Tree` and sends a
    point left (``r+``) when its test is true:

    * ``("threshold", feature, t)``: ``x[feature] <= t``;
    * ``("hyperplane", coef, t)``: ``dot(coef, x) <= t`` (``coef`` of length
      ``n_features``);
    * ``("quadratic", coef, t)``: ``dot(coef, quadratic_features(x)) <= t``
      (one coefficient per monomial of :func:`arboretum.tree.quadratic_terms`:
      ``x_j``, then ``x_j x_k`` for ``j <= k``).

    The search finds the optimal proper tree (spec-002 §2.3) over these rules
    exactly as for the built-in families: the DP only needs each rule's
    training partition and the ancestry matrix ``Kmat``, which is read off
    each rule's *defining points*.

    Parameters
    ----------
    rules : sequence of tuples
        The rules, in the order that breaks ties (the first minimiser wins).
    defining_points : sequence of sequences of int, optional
        For every rule, the indices of the training rows (rows of ``X`` as
        given to ``fit``) that define it: a rule may sit below another only on
        the side holding all its defining points (spec §2.2).  When None, each
        rule's defining point is **the training point of ``r+`` nearest its
        boundary**: the one with the largest value of the rule's function
        (``x[feature]``, ``dot(coef, x)`` or ``dot(coef, phi(x))``) not above
        ``t``, the first such row on ties (the point of ``r-`` with the
        smallest value when ``r+`` holds no training point).  For a threshold
        rule ``x_d <= t`` that is exactly the defining point of the paper's
        axis rule ``x_d <= x_{n,d}`` with the same training partition, so a
        family of thresholds at data values is the paper's axis family and
        its optimum is the optimum over all axis-parallel trees of those
        thresholds (spec T19) -- on data without ties: tied rules (two
        thresholds at the same value of a feature) then share their
        defining point, the deduplication that spec T19 shows can lose optima;
        give ``defining_points`` to keep them apart.

    Notes
    -----
    **Which trees are searched.**  Whatever the defining points, the result
    is the optimum over the trees that are proper for the ``Kmat`` they
    induce: ``sodt`` is exact for *every* ancestry matrix with entries in
    ``{-1, 0, +1}`` (spec T2: the generated trees are exactly the valid
    K-permutations of the combination, for any ``Kmat``), and the outer loop
    takes every K-combination of the rules.  With one defining point per rule
    (the default) every ``Kmat`` entry is ``+1`` or ``-1``, never 0: every
    rule of a combination may be its root, and a rule below another goes to
    the side of its defining point.

    A fitted tree stores each used rule as a ``THRESHOLD``, ``HYPERPLANE`` or
    ``QUADRATIC`` split with the user's numbers, so ``tree_.predict`` routes
    new points exactly as the rule does, and the estimator saves (the rules
    are plain numbers) and loads without the user's code.

    Examples
    --------
    >>> from arboretum import OptimalTreeClassifier
    >>> from arboretum.optimal import CandidateRules
    >>> X = [[0, 0], [1, 1], [0, 1], [1, 0]]
    >>> rules = CandidateRules([("hyperplane", [1, -1], 0.5), ("hyperplane", [1, -1], -0.5)])
    >>> clf = OptimalTreeClassifier(max_splits=2, split_type=rules).fit(X, [0, 0, 1, 1])
    >>> clf.objective_
    0.0
    """

    rules: Any
    defining_points: Any = None

    def __post_init__(self) -> None:
        if isinstance(self.rules, (str, bytes)) or not hasattr(self.rules, "__len__"):
            raise TypeError(f"CandidateRules: rules must be a list of (kind, feature or coef, threshold) tuples; "
                            f"got {type(self.rules).__name__}")
        if len(self.rules) == 0:
            raise ValueError("CandidateRules: rules must hold at least one rule")
        norm = []
        for r, rule in enumerate(self.rules):
            if isinstance(rule, (str, bytes)) or not hasattr(rule, "__len__") or len(rule) != 3:
                raise _rule_error(r, f"must be a tuple (kind, feature or coef, threshold); got {rule!r}")
            kind, arg, t = rule
            if kind not in _KINDS:
                raise _rule_error(r, f"has kind {kind!r}; kinds are {sorted(_KINDS)}")
            if isinstance(t, bool) or not isinstance(t, numbers.Real) or not np.isfinite(float(t)):
                raise _rule_error(r, f"needs a finite number as threshold; got {t!r}")
            if kind == "threshold":
                if isinstance(arg, (bool, np.bool_)) or not isinstance(arg, numbers.Integral) or arg < 0:
                    raise _rule_error(r, f"(a threshold) needs a feature index >= 0; got {arg!r}")
                norm.append((kind, int(arg), float(t)))
                continue
            try:
                coef = np.asarray(arg, dtype=np.float64)
            except (TypeError, ValueError):
                raise _rule_error(r, f"(a {kind}) needs a vector of numbers as coef; got {arg!r}") from None
            if coef.ndim != 1 or coef.size == 0 or not np.all(np.isfinite(coef)) or not np.any(coef != 0):
                raise _rule_error(r, f"(a {kind}) needs a non-zero 1-D vector of finite coefficients; got {arg!r}")
            if kind == "quadratic" and not any(len(quadratic_terms(d)) == coef.size for d in range(1, coef.size + 1)):
                raise _rule_error(r, f"(quadratic) has {coef.size} coefficients, which is D + D (D + 1) / 2 for no "
                                     f"number of features D (2, 5, 9, 14, ...)")
            norm.append((kind, tuple(float(c) for c in coef), float(t)))
        self.rules = tuple(norm)
        if self.defining_points is not None:
            dp = self.defining_points
            if isinstance(dp, (str, bytes)) or not hasattr(dp, "__len__") or len(dp) != len(self.rules):
                raise ValueError(f"CandidateRules: defining_points must hold one list of row indices per rule "
                                 f"({len(self.rules)}); got {dp!r}")
            out = []
            for r, pts in enumerate(dp):
                arr = np.atleast_1d(np.asarray(pts))
                if arr.size == 0 or arr.ndim != 1 or arr.dtype.kind not in "iu" or np.any(arr < 0):
                    raise _rule_error(r, f"needs a non-empty list of row indices >= 0 as defining points; got {pts!r}")
                out.append(tuple(int(v) for v in arr))
            self.defining_points = tuple(out)

    def __len__(self) -> int:
        return len(self.rules)

    def __repr__(self) -> str:
        return f"CandidateRules(<{len(self.rules)} rules>{'' if self.defining_points is None else ', defining_points=...'})"

    def check(self, n_samples: int, n_features: int) -> None:
        """Refuse, naming the rule, rules that do not fit data of this shape."""
        g = len(quadratic_terms(n_features))
        for r, (kind, arg, _) in enumerate(self.rules):
            if kind == "threshold" and arg >= n_features:
                raise _rule_error(r, f"tests feature {arg}, but X has {n_features} features")
            if kind == "hyperplane" and len(arg) != n_features:
                raise _rule_error(r, f"(hyperplane) has {len(arg)} coefficients, but X has {n_features} features")
            if kind == "quadratic" and len(arg) != g:
                raise _rule_error(r, f"(quadratic) has {len(arg)} coefficients, but X has {n_features} features "
                                     f"and so {g} monomials of degree 1 and 2")
        if self.defining_points is not None:
            for r, pts in enumerate(self.defining_points):
                if max(pts) >= n_samples:
                    raise _rule_error(r, f"has defining point {max(pts)}, but X has {n_samples} rows")

    def split(self, r: int) -> tuple:
        """Rule ``r`` as a split of :class:`arboretum.Tree`: ``(kind, feature, threshold, coef)``."""
        kind, arg, t = self.rules[r]
        if kind == "threshold":
            return THRESHOLD, arg, t, None
        return _KINDS[kind], None, t, np.array(arg)

    def values(self, r: int, X: np.ndarray) -> np.ndarray:
        """The rule's function at the rows of ``X``: the point goes left when it is ``<= threshold``
        (the very arithmetic of :meth:`arboretum.Tree.apply`)."""
        kind, arg, _ = self.rules[r]
        if kind == "threshold":
            return X[:, arg]
        if kind == "hyperplane":
            return X @ np.asarray(arg)
        return quadratic_features(X) @ np.asarray(arg)

    def rule_set(self, X: np.ndarray, rows: np.ndarray | None = None):
        """The :class:`.rules.RuleSet` of these rules on the training points ``X`` (in the order the
        search uses); ``rows[i]`` is the row of the user's ``X`` that ``X[i]`` is (None: the same)."""
        from .._numba import pack_columns
        from .rules import USER, RuleSet

        n = X.shape[0]
        M = len(self.rules)
        left = np.empty((n, M), dtype=bool)
        where = np.full(n if rows is None else int(rows.max()) + 1, -1, dtype=np.int64)
        where[np.arange(n) if rows is None else rows] = np.arange(n)
        defs_list = []
        for r in range(M):
            v = self.values(r, X)
            t = self.rules[r][2]
            left[:, r] = v <= t
            if self.defining_points is not None:
                pts = [p for p in self.defining_points[r]]
                bad = [p for p in pts if p >= where.size or where[p] < 0]
                if bad:
                    raise _rule_error(r, f"has defining point {bad[0]}, a row that is not in the search "
                                         f"(out of range, or of sample_weight 0)")
                defs_list.append([int(where[p]) for p in pts])
                continue
            # default: the point of r+ nearest the boundary (largest value), else of r- (smallest)
            if left[:, r].any():
                cand = np.flatnonzero(left[:, r])
                best = cand[v[cand] == v[cand].max()]
            else:
                best = np.flatnonzero(v == v.min())
            first = best[np.argmin(_where_rows(best, rows))]
            defs_list.append([int(first)])
        width = max(len(d) for d in defs_list)
        defs = np.full((M, width), -1, dtype=np.int64)
        for r, d in enumerate(defs_list):
            defs[r, :len(d)] = d
        return RuleSet(
            pos=pack_columns(left), defs=defs, kind=np.full(M, USER, dtype=np.int8),
            feature=np.arange(M, dtype=np.int64), threshold=np.array([t for _, _, t in self.rules]),
            planes=None, assign=np.zeros(M, dtype=np.int64), n_samples=n,
            splits=[self.split(r) for r in range(M)],
        )


def _where_rows(idx: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
    """The user's row numbers of the search's points ``idx`` (for "the first row" on ties)."""
    return idx if rows is None else rows[idx]


class LeafObjective:
    """A decomposable objective for the optimal trees (spec-002 §3.5): ``objective=LeafObjective(...)``.

    The cost of a tree is the sum over its leaves of ``cost(leaf)`` (the
    combiner is ``+``).  A leaf's cost is computed, inside the numba search,
    from the sums over its points of per-point statistics (``stats``), and if
    need be from the indices of its points:

    ``cost(sums, members, n_members, stats) -> float``
        ``sums`` (n_stats,): the column sums of ``stats`` over the leaf's
        points; ``members[:n_members]``: the leaf's point indices (rows of
        ``stats``); ``stats`` (n_samples, n_stats): every point's statistics.
        It must return a **finite number >= 0** (the exact pruning of the
        search relies on it: a subtree costs at least as much as any of its
        parts) and be numba-compilable: a plain Python function in numba's
        subset, a ``numba.njit`` function or a ``numba.cfunc`` of
        :data:`SIGNATURE`.  It must not keep references to its arguments
        (the arrays are reused).
    ``stats(y, sample_weight) -> ndarray (n_samples, n_stats)``
        Plain Python, called once per fit: ``y`` the class codes ``0 ..
        n_classes - 1`` (position in ``classes_``) for a classifier, the
        targets for a regressor; ``sample_weight`` the weights (ones when
        none were given).  Samples of weight 0 are left out of the search.
    ``value(y, sample_weight) -> ndarray``, optional
        The prediction stored in a leaf, from its points' ``y`` and weights:
        for a classifier ``n_classes`` non-negative numbers (``predict`` takes
        the largest, ``predict_proba`` returns them); for a regressor one
        number.  Default: the weighted class proportions or mean.

    Any leaf function of the leaf's points qualifies; objectives that are not
    sums over leaves (AUC, F1 of the whole tree) do not (spec §3.5).  The fast
    paths of the built-in objectives (the depth-2 axis solver, the
    one-hyperplane kernel) are not used: the generic DP runs.  An estimator
    with a ``LeafObjective`` cannot be saved with :func:`arboretum.save` (its
    code is not data); its ``tree_`` can (``tree_.to_json()``).

    Parameters
    ----------
    cost : callable
    stats : callable
    value : callable, optional
    name : str, optional
        Shown in ``repr``.

    Examples
    --------
    A cost-sensitive 0-1 loss (a false negative costs 5, a false positive 1):
    the leaf predicts the class of least cost.

    >>> import numpy as np
    >>> from arboretum import OptimalTreeClassifier
    >>> from arboretum.optimal import LeafObjective
    >>> COST = np.array([[0.0, 1.0], [5.0, 0.0]])  # COST[true class, predicted class]
    >>> def cost(sums, members, n, stats):
    ...     best = np.inf
    ...     for k in range(2):
    ...         best = min(best, COST[0, k] * sums[0] + COST[1, k] * sums[1])
    ...     return best
    >>> def stats(y, w):
    ...     return w[:, None] * (y[:, None] == np.arange(2))  # weighted class counts
    >>> def value(y, w):
    ...     counts = np.bincount(y, weights=w, minlength=2)
    ...     c = COST.T @ counts  # expected cost of predicting each class
    ...     return (c == c.min()) / np.count_nonzero(c == c.min())
    >>> obj = LeafObjective(cost, stats, value, name="cost-sensitive 0-1")
    >>> X = [[0], [1], [2], [3], [4], [5]]
    >>> clf = OptimalTreeClassifier(max_splits=1, objective=obj).fit(X, [0, 0, 1, 0, 1, 1])
    >>> clf.objective_, clf.predict([[2], [3]]).tolist()
    (1.0, [1, 1])

    Weighted Gini impurity (``|leaf| * Gini``) is ``stats`` as above and
    ``cost = total - sum(sums**2) / total``; the absolute error of a
    regression leaf around its median uses ``members`` to read the leaf's
    targets from ``stats[:, 0]``.
    """

    #: Signature of the compiled cost.
    from ._kernels import USER_COST_SIGNATURE as SIGNATURE

    def __init__(self, cost: Callable, stats: Callable, value: Callable | None = None, *, name: str | None = None):
        if not callable(cost):
            raise TypeError(f"LeafObjective: cost must be a function; got {type(cost).__name__}")
        if not callable(stats):
            raise TypeError(f"LeafObjective: stats must be a function; got {type(stats).__name__}")
        if value is not None and not callable(value):
            raise TypeError(f"LeafObjective: value must be a function or None; got {type(value).__name__}")
        self.cost = cost
        self.stats = stats
        self.value = value
        self.name = name if name is not None else getattr(cost, "__name__", "cost")
        self._compiled = None

    def __repr__(self) -> str:
        return f"LeafObjective({self.name!r})"

    def __deepcopy__(self, memo: dict) -> "LeafObjective":  # clone(): the same functions, compiled once
        return self

    def compiled(self):
        """The cost as a numba ``cfunc`` of :data:`SIGNATURE` (compiled on first use)."""
        if self._compiled is None:
            from numba import cfunc

            f = self.cost
            if hasattr(f, "address") and hasattr(f, "_sig"):  # already a cfunc
                if f._sig != self.SIGNATURE:
                    raise TypeError(f"LeafObjective: cost is a cfunc of signature {f._sig}; it must be {self.SIGNATURE}")
                self._compiled = f
            else:
                py = getattr(f, "py_func", f)  # an njit dispatcher: recompile its Python function
                try:
                    self._compiled = cfunc(self.SIGNATURE)(py)
                except Exception as exc:  # noqa: BLE001 - numba's typing errors are many
                    raise TypeError(
                        f"LeafObjective: numba cannot compile cost {self.name!r} as "
                        f"cost(sums: float64[:], members: int64[:], n_members: int64, stats: float64[:, :]) "
                        f"-> float64: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                    ) from None
        return self._compiled

    def point_stats(self, y: np.ndarray, weight: np.ndarray) -> np.ndarray:
        """``stats(y, weight)`` checked: a finite (n_samples, n_stats) float matrix."""
        S = np.asarray(self.stats(y, weight), dtype=np.float64)
        if S.ndim == 1:
            S = S[:, None]
        if S.ndim != 2 or S.shape[0] != y.shape[0] or S.shape[1] < 1:
            raise ValueError(f"LeafObjective {self.name!r}: stats(y, sample_weight) must return an array of shape "
                             f"(n_samples={y.shape[0]}, n_stats); got shape {S.shape}")
        if not np.all(np.isfinite(S)):
            raise ValueError(f"LeafObjective {self.name!r}: stats(y, sample_weight) returned non-finite values")
        return np.ascontiguousarray(S)
