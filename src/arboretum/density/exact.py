"""The exact MAP density tree over categorical boxes (spec §6.5), as a real solver.

LP_I and LP_II decompose over regions (boxes), so the MAP tree is a dynamic
programme over every box ``(m_0, ..., m_{p-1})`` of the domain, children
(sub-boxes along one feature) before parents:

- Method I keeps, for every box and every ``k``, the best sum of leaf terms
  with exactly ``k`` leaves (a knapsack over binary bipartitions: LP_I depends
  on the leaves only, and every multiway partition is reached by binary
  ones); the root then adds the terms that depend on ``k`` and keeps the best
  ``k`` (the fewest leaves among ties, spec A16).
- Method II keeps the best subtree of every box over multiway set partitions
  into ``b >= 2`` blocks (spec A15), through a subset DP per feature.

Bounds.  Before Method I's knapsack, :func:`leaf_sparse_lagrangian` bounds the
MAP for every number of leaves by Lagrangian relaxation (one value per box, the
cost of one Method II pass): its best tree is often certified at once (Titanic,
Balance, Car, COMPAS), and otherwise the knapsack table is capped at the most
leaves the bound leaves open.  Method II's programme keeps a box as a leaf
without trying its partitions when the box's histogram likelihood shows that no
split can beat it (:func:`._kernels.branch_sparse_dp`).

Limits.  The programmes run in chunks of boxes between which they watch the
fit's clock, and the memory need is checked against ``memory_limit`` *before*
allocating (:func:`exact_size`).  Stopped early, Method I returns the
Lagrangian's tree with its bound (``optimal=False``: the estimator keeps the
better of it and annealing, and reports the bound as ``gap_``), Method II
returns None (annealing's tree; ``gap_`` from the histogram bound).

What this is not: a best-first search.  The issue asks for a search memoised
over boxes with admissible bounds "in the style of MAPTree", anytime, with
``time_limit``/``memory_limit`` and ``optimal_``/gap.  Here the memo is the
bottom-up table over *every* box (work and memory ~ the number of boxes,
``prod 2**q_j``, so up to 2**22-2**24 boxes), the bounds prune work inside it
(Method I's number of leaves, Method II's leaf-certain boxes) and certify, the
limits are honoured, and the anytime answer with a gap comes from the
Lagrangian tree or annealing plus the bounds, not from the search itself.  A
top-down search pays off only where a per-box bound prunes most splits; with
the library's bounds it does not on the small full-factorial domains where the
table's fixed cost shows (Balance, Car): even given every box's exact value, a
search would open 77-96% of the boxes, the bound being n log(V/D) (87 and 239
nats) above the root's value (``benchmarks/density_bestfirst_reach.py``).  So
the table stays, made cheap instead: counts by a blocked zeta transform, leaf
terms from tables of whole counts, boxes in flat-index order (a sub-box has a
smaller index) with odometer masks, splits recomputed only along the answer.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from . import _kernels as K
from .posterior import leaf_sparse_constant
from .space import distinct_configurations

__all__ = ["DensityNode", "ExactResult", "LagrangeResult", "exact_size", "solve_exact", "region_tables",
           "box_counts", "leaf_sparse_lagrangian"]


@dataclass
class DensityNode:
    """A node of a density tree: its box, and (internal nodes) the feature it splits and its children."""

    box: tuple
    feature: int = -1
    children: list = field(default_factory=list)

    def leaves(self) -> list["DensityNode"]:
        if not self.children:
            return [self]
        return [leaf for c in self.children for leaf in c.leaves()]

    def internal(self) -> list["DensityNode"]:
        if not self.children:
            return []
        return [self] + [n for c in self.children for n in c.internal()]


@dataclass
class ExactResult:
    """The solver's tree and its log posterior; ``optimal`` False for Method I's anytime answer (the
    Lagrangian relaxation's best tree, ``upper`` an admissible bound on the MAP, ``stop`` the limit that
    kept the knapsack programme from running)."""

    root: DensityNode
    log_posterior: float
    n_regions: int
    seconds: float
    optimal: bool = True
    upper: float = math.nan
    stop: str = ""


def exact_size(q: np.ndarray, method: str, k_cap: int) -> tuple[int, int]:
    """(number of boxes of the grid, bytes the solver needs) for a domain with ``q`` categories."""
    grid = 1
    for qj in q:
        grid *= 1 << int(qj)
    per = 8 + 2 * 4 if method == "branch" else (k_cap + 1) * (8 + 1 + 8 + 4)
    return grid, grid * (per + 8 * 3)


def _strides(q: np.ndarray) -> np.ndarray:
    """Flat-index strides of the box grid ``prod_j 2**q_j`` (the last feature varies fastest)."""
    strides = np.ones(len(q), dtype=np.int64)
    for j in range(len(q) - 2, -1, -1):
        strides[j] = strides[j + 1] * (1 << int(q[j + 1]))
    return strides


def _box_sums(codes: np.ndarray, q: np.ndarray, weights: np.ndarray | float) -> np.ndarray:
    """``sum`` of the rows' ``weights`` inside every box of the grid (a zeta transform, flat index;
    :func:`._kernels.box_sums_into`)."""
    q = np.asarray(q, dtype=np.int64)
    w = np.broadcast_to(np.asarray(weights, dtype=np.float64), (codes.shape[0],))
    out = np.empty(int(np.prod([1 << int(x) for x in q], dtype=np.int64)))
    K.box_sums_into(np.ascontiguousarray(codes, dtype=np.int64), np.ascontiguousarray(w), q, _strides(q), out)
    return out


def _by_count(counts: np.ndarray, fn) -> np.ndarray:
    """``fn(n)`` for the whole counts ``n`` of ``counts``, evaluated once per value ``0 .. max`` (numpy)."""
    table = fn(np.arange(int(np.max(counts, initial=0)) + 1, dtype=np.float64))
    out = np.empty(counts.shape[0])
    K.lookup_by_count(counts, table, out)
    return out


def _configs(codes: np.ndarray, q: np.ndarray, config_counts: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """``(distinct configurations, their counts)``: ``codes`` itself when ``config_counts`` is given (the
    caller already counted, :func:`.space.distinct_configurations`), else counted here."""
    if config_counts is not None:
        return codes, np.asarray(config_counts)
    configs, counts, _ = distinct_configurations(codes, q)
    return configs, counts


def histogram_log_likelihood(codes: np.ndarray, q: np.ndarray, counts: np.ndarray,
                             config_counts: np.ndarray | None = None) -> np.ndarray:
    """``H(R) = sum_{x in R} n_x log(n_x / n_R)`` for every box ``R`` (the log-likelihood of the
    histogram of the box's rows, the largest any pmf on ``R`` gives them; 0 for an empty box).
    ``config_counts``: ``codes`` are distinct configurations with these counts."""
    configs, cnt = _configs(codes, q, config_counts)
    cnt = cnt.astype(np.float64)
    nlogn = _box_sums(configs, np.asarray(q, dtype=np.int64), cnt * np.log(cnt))
    with np.errstate(divide="ignore"):
        log_table = np.log(np.arange(int(np.max(counts, initial=0)) + 1, dtype=np.float64))
    K.histogram_into(counts, nlogn, log_table)
    return nlogn


def box_counts(codes: np.ndarray, q: np.ndarray,
               config_counts: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Counts, log volumes and strides of every box (``config_counts``: ``codes`` are distinct
    configurations with these counts): all that Method I's Lagrangian bound reads."""
    q = np.asarray(q, dtype=np.int64)
    dims = tuple(int(1 << int(x)) for x in q)
    counts = _box_sums(codes, q, 1.0 if config_counts is None else np.asarray(config_counts, dtype=np.float64))
    logv = np.zeros(1, dtype=np.float64)
    for d in dims:
        with np.errstate(divide="ignore"):
            lj = np.log(_popcounts(d).astype(np.float64))
        logv = (logv[:, None] + lj[None, :]).ravel()
    return counts, logv, _strides(q)


def leaf_terms(codes: np.ndarray, q: np.ndarray, alpha: float,
               config_counts: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(term, strides)``: Method I's leaf term ``lgamma(n_r + alpha) - lgamma(alpha) - n_r log V_r`` of
    every box (0 when empty), all that :func:`leaf_sparse_lagrangian` reads, in two numba passes
    (:func:`._kernels.box_sums_into`, :func:`._kernels.leaf_terms_into`) with the same floating-point
    operations as the numpy path from :func:`box_counts`."""
    from scipy.special import gammaln

    q = np.asarray(q, dtype=np.int64)
    dims = [1 << int(x) for x in q]
    strides = _strides(q)
    w = np.ones(codes.shape[0]) if config_counts is None else np.asarray(config_counts, dtype=np.float64)
    counts = np.empty(int(np.prod(dims, dtype=np.int64)))
    K.box_sums_into(np.ascontiguousarray(codes, dtype=np.int64), w, q, strides, counts)
    log_pc = np.full((len(q), max(dims)), -np.inf)
    with np.errstate(divide="ignore"):
        for j, d in enumerate(dims):
            log_pc[j, :d] = np.log(_popcounts(d).astype(np.float64))
    lg = gammaln(np.arange(int(round(float(np.sum(w)))) + 1, dtype=np.float64) + alpha)
    term = counts  # overwritten in place: the counts are not needed after
    K.leaf_terms_into(counts, log_pc, q, strides, lg, math.lgamma(alpha), term)
    return term, strides


def _popcounts(d: int) -> np.ndarray:
    return np.array([bin(m).count("1") for m in range(d)], dtype=np.int64)


def region_tables(codes: np.ndarray, q: np.ndarray,
                  config_counts: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    """Counts, log volumes, volumes (capped), strides and the processing order of every box
    (``config_counts``: ``codes`` are distinct configurations with these counts)."""
    counts, logv, strides = box_counts(codes, q, config_counts)
    return (counts, logv, *_volumes_and_order(q, strides))


def _volumes_and_order(q: np.ndarray, strides: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(volumes capped at 2**40, strides, processing order)`` of every box (:func:`_order`)."""
    vol = np.ones(1, dtype=np.int64)
    for qj in q:
        vol = np.minimum(vol[:, None] * _popcounts(1 << int(qj))[None, :], 1 << 40).ravel()
    return vol, strides, _order(q)


def _order(q: np.ndarray) -> np.ndarray:
    """The boxes with no empty mask in increasing flat index: children before parents (a sub-box's masks
    are subsets of its parent's, so its index is smaller)."""
    valid = np.ones(1, dtype=bool)
    for qj in q:
        valid = (valid[:, None] & (np.arange(1 << int(qj)) > 0)[None, :]).ravel()
    return np.flatnonzero(valid).astype(np.int64)


def _box(r: int, strides: np.ndarray, q: np.ndarray) -> tuple:
    return tuple(int((r // int(s)) % (1 << int(qj))) for s, qj in zip(strides, q))


def _run_chunks(fn, order: np.ndarray, deadline: float | None, chunk: int = 4096) -> bool:
    for start in range(0, order.shape[0], chunk):
        if deadline is not None and time.perf_counter() >= deadline:
            return False
        fn(start, min(start + chunk, order.shape[0]))
    return True


def solve_exact(codes: np.ndarray, q: np.ndarray, method: str, lam: float, alpha: float,
                max_leaves: int | None, deadline: float | None = None,
                memory_limit: float | None = None, lower: float | None = None,
                config_counts: np.ndarray | None = None) -> ExactResult | None:
    """The MAP tree of Method I (``method="leaf"``) or II (``"branch"``), or None when the clock
    (``deadline``, a ``time.perf_counter()`` value) or ``memory_limit`` (MiB) stops it.

    ``max_leaves`` caps the leaves of Method I's trees (None: the domain size); Method II's search
    is over all trees.  Method I first bounds every number of leaves by Lagrangian relaxation
    (:func:`leaf_sparse_lagrangian`; ``lower``, the log posterior of a known tree, helps it): when
    that certifies its own tree no ``k`` table is built; else the knapsack programme runs capped at the
    most leaves the bound leaves open.  With ``config_counts``, ``codes`` are the distinct configurations
    of the data and these their counts (:func:`.space.distinct_configurations`; the same answer, faster).
    """
    t0 = time.perf_counter()
    q = np.asarray(q, dtype=np.int64)
    dom = int(np.prod([int(x) for x in q], dtype=object))
    k_cap = int(min(dom, max_leaves if max_leaves is not None else dom, 4096))
    n_regions, need = exact_size(q, method, 1 if method == "leaf" else k_cap)
    if memory_limit is not None and need > memory_limit * 2**20:
        return None
    n = float(codes.shape[0] if config_counts is None else np.sum(config_counts))
    if method == "leaf":
        term, strides = leaf_terms(codes, q, alpha, config_counts)
        lag = leaf_sparse_lagrangian((None, None, None, strides, None), q, n, lam, alpha, k_cap, deadline,
                                     term=term)
        del term
        if lag is None:
            return None
        if lag.certified:
            return ExactResult(lag.root, lag.lower, n_regions, time.perf_counter() - t0)
    counts, logv, strides = box_counts(codes, q, config_counts)
    root = int(sum(((1 << int(qj)) - 1) * int(s) for qj, s in zip(q, strides)))
    if method == "leaf":
        vol, _, order = _volumes_and_order(q, strides)  # the knapsack programme's tables
        floor = max(lag.lower, -math.inf if lower is None else lower)
        open_k = np.flatnonzero(lag.upper >= floor - _tol(floor))
        k_cap = int(open_k.max()) + 1 if open_k.size else max(lag.k, 1)

        def anytime(stop: str) -> ExactResult | None:
            if lag.root is None:
                return None
            return ExactResult(lag.root, lag.lower, n_regions, time.perf_counter() - t0, optimal=False,
                               upper=float(np.max(lag.upper)), stop=stop)

        if memory_limit is not None and exact_size(q, method, k_cap)[1] > memory_limit * 2**20:
            return anytime("memory_limit")
        best = np.full((counts.shape[0], k_cap + 1), -np.inf)
        arg_j = np.full((counts.shape[0], k_cap + 1), -1, dtype=np.int8)
        arg_a = np.zeros((counts.shape[0], k_cap + 1), dtype=np.int64)
        arg_k1 = np.zeros((counts.shape[0], k_cap + 1), dtype=np.int32)
        done = _run_chunks(lambda a, b: K.leaf_sparse_dp(order, a, b, counts, logv, vol, strides, q, k_cap,
                                                          float(alpha), best, arg_j, arg_a, arg_k1),
                           order, deadline)
        if not done:
            return anytime("time_limit")
        scores = [best[root, k] + leaf_sparse_constant(k, n, lam, alpha) if best[root, k] > -np.inf else -np.inf
                  for k in range(1, k_cap + 1)]
        k_best = int(np.argmax(scores)) + 1  # the first maximum: the fewest leaves
        if lag.root is not None and lag.lower >= scores[k_best - 1] - _tol(lag.lower) and lag.k <= k_best:
            return ExactResult(lag.root, lag.lower, n_regions, time.perf_counter() - t0)

        def build(r: int, k: int) -> DensityNode:
            node = DensityNode(_box(r, strides, q))
            if k == 1:
                return node
            j, a, k1 = int(arg_j[r, k]), int(arg_a[r, k]), int(arg_k1[r, k])
            m = node.box[j]
            ra, rb = r + (a - m) * int(strides[j]), r + ((m ^ a) - m) * int(strides[j])
            node.feature = j
            node.children = [build(ra, k1), build(rb, k - k1)]
            return node

        tree = _merge_chains(build(root, k_best))
        return ExactResult(tree, float(scores[k_best - 1]), n_regions, time.perf_counter() - t0)

    order = _order(q)
    best = np.full(counts.shape[0], -np.inf)
    choice_j = np.full(counts.shape[0], -1, dtype=np.int32)
    choice_b = np.zeros(counts.shape[0], dtype=np.int32)
    from scipy.special import gammaln

    lg = _by_count(counts, lambda c: gammaln(c + alpha))
    hist = histogram_log_likelihood(codes, q, counts, config_counts)
    done = _run_chunks(lambda a, b: K.branch_sparse_dp(order, a, b, counts, logv, lg, hist, strides, q, float(lam),
                                                        float(alpha), best, choice_j, choice_b),
                       order, deadline)
    if not done:
        return None

    def build2(r: int) -> DensityNode:
        node = DensityNode(_box(r, strides, q))
        j = int(choice_j[r])
        if j < 0:
            return node
        node.feature = j
        for blk in _best_partition(node.box[j], int(choice_b[r]), r, int(strides[j]), counts, best, alpha):
            node.children.append(build2(r + (blk - node.box[j]) * int(strides[j])))
        return node

    return ExactResult(build2(root), float(best[root] - math.log(lam)), n_regions, time.perf_counter() - t0)


def _tol(x: float) -> float:
    return 1e-9 * max(1.0, abs(x))


@dataclass
class LagrangeResult:
    """Method I by Lagrangian relaxation of the number of leaves: the best tree met (``root``, ``k``
    leaves, log posterior ``lower``), ``upper[k - 1]`` >= the log posterior of every tree with ``k``
    leaves (``k = 1 .. k_cap``), ``certified`` when no ``k`` can beat ``lower``."""

    root: DensityNode | None
    k: int
    lower: float
    upper: np.ndarray
    certified: bool


def leaf_sparse_lagrangian(tables: tuple, q: np.ndarray, n: float, lam: float, alpha: float, k_cap: int,
                           deadline: float | None = None, max_rounds: int = 12,
                           term: np.ndarray | None = None) -> LagrangeResult | None:
    """Bound Method I's MAP for every number of leaves without a ``k`` table.

    Write ``LP_I(T) = c(K) + S(T)``, ``S`` the sum of leaf terms and ``c(K)`` the part that depends on the
    number of leaves ``K`` only.  For any multiplier ``mu``, ``F(mu) = max_T [S(T) + mu K_T]`` is a dynamic
    programme over boxes like Method II's (one value per box, :func:`._kernels.leaf_sparse_lagrange_grid`),
    and every tree with ``K`` leaves has ``S(T) <= F(mu) - mu K``, so ``LP_I <= c(K) + F(mu) - mu K``
    (weak duality; admissible for any ``alpha``).  The maximiser ``T_mu`` is a tree: ``c(K_mu) + F(mu) -
    mu K_mu`` is its exact log posterior, a lower bound on the MAP.  The multipliers are the marginal
    costs ``c(K + 1) - c(K)`` of the current tree's ``K`` (iterated until ``K`` repeats), then of the
    numbers of leaves whose bound still exceeds the best tree.  When every ``K <= k_cap`` is bounded
    below the best tree, that tree is the MAP among trees of at most ``k_cap`` leaves (``certified``).
    None when ``deadline`` passes.  ``tables``: :func:`region_tables` (its counts, log volumes and strides
    are read), or, with ``term`` (:func:`leaf_terms`, the leaf term of every box), only its strides.
    """
    from scipy.special import gammaln

    counts, logv, strides = tables[0], tables[1], tables[3]
    if term is None:
        with np.errstate(invalid="ignore"):
            term = np.where(counts > 0, gammaln(counts + alpha) - math.lgamma(alpha) - counts * logv, 0.0)
    N = term.shape[0]
    val = np.empty(N)
    nleaf = np.empty(N, dtype=np.int32)  # a box has at most its volume of leaves (< 2**31 here)
    root = int(sum(((1 << int(qj)) - 1) * int(s) for qj, s in zip(q, strides)))
    ks = np.arange(1, k_cap + 1)
    c = np.array([leaf_sparse_constant(int(k), n, lam, alpha) for k in range(1, k_cap + 2)])
    upper = np.full(k_cap, np.inf)
    best = (None, 0, -math.inf)
    tried: set = set()

    def run(k0: int) -> int:
        nonlocal best
        mu = float(c[k0] - c[k0 - 1])  # c(k0 + 1) - c(k0)
        K.leaf_sparse_lagrange_grid(term, strides, q, mu, val, nleaf)
        F, k_mu = float(val[root]), int(nleaf[root])
        np.minimum(upper, c[:k_cap] + F - mu * ks, out=upper)
        if k_mu <= k_cap and c[k_mu - 1] + F - mu * k_mu > best[2]:
            split = lambda r: K.lagrange_split(r, term, strides, q, mu, val, nleaf)  # noqa: E731
            best = (_build_bipartitions(root, split, strides, q), k_mu, float(c[k_mu - 1] + F - mu * k_mu))
        return k_mu

    k0 = 1
    for _ in range(max_rounds):
        if deadline is not None and time.perf_counter() >= deadline:
            return None
        tried.add(k0)
        k_mu = min(max(run(k0), 1), k_cap)
        if k_mu in tried:
            break
        k0 = k_mu
    for _ in range(max_rounds):
        open_k = [int(k) for k in ks[upper >= best[2] - _tol(best[2])] if int(k) != best[1] and int(k) not in tried]
        if not open_k or (deadline is not None and time.perf_counter() >= deadline):
            break
        k0 = max(open_k, key=lambda k: upper[k - 1])
        tried.add(k0)
        run(k0)
    root_node, k_best, lower = best
    certified = bool(root_node is not None and np.all(upper[ks != k_best] < lower - _tol(lower))
                     and upper[k_best - 1] <= lower + _tol(lower))
    return LagrangeResult(None if root_node is None else _merge_chains(root_node), k_best, lower, upper, certified)


def _build_bipartitions(r: int, split, strides: np.ndarray, q: np.ndarray) -> DensityNode:
    """The tree of region ``r`` whose first bipartition is ``split(r)`` (``(feature, mask)``; -1: a leaf)."""
    node = DensityNode(_box(r, strides, q))
    j, a = (int(x) for x in split(r))
    if j < 0:
        return node
    m = node.box[j]
    node.feature = j
    node.children = [_build_bipartitions(r + (a - m) * int(strides[j]), split, strides, q),
                     _build_bipartitions(r + ((m ^ a) - m) * int(strides[j]), split, strides, q)]
    return node


def _best_partition(m: int, b: int, r: int, stride: int, counts: np.ndarray, best: np.ndarray,
                    alpha: float) -> list[int]:
    """The blocks (category masks) of the best partition of ``m`` into ``b`` blocks (Method II)."""
    cats = [c for c in range(m.bit_length()) if (m >> c) & 1]
    memo: dict = {}

    def g(mask: int) -> float:
        rc = r + (mask - m) * stride
        return math.lgamma(counts[rc] + alpha) + best[rc]

    def h(rest: int, k: int) -> tuple[float, list[int]]:
        if rest == 0:
            return (0.0, []) if k == 0 else (-math.inf, [])
        if k == 0:
            return -math.inf, []
        key = (rest, k)
        if key in memo:
            return memo[key]
        low = rest & -rest
        others = rest ^ low
        top = (-math.inf, [])
        sub = others
        while True:
            blk = low | sub
            v, blocks = h(rest ^ blk, k - 1)
            if v > -math.inf and g(blk) + v > top[0]:
                top = (g(blk) + v, [blk] + blocks)
            if sub == 0:
                break
            sub = (sub - 1) & others
        memo[key] = top
        return top

    del cats
    return sorted(h(m, b)[1])


def _merge_chains(node: DensityNode) -> DensityNode:
    """Method I: fold a binary split whose child splits the same feature again into one multiway
    split (same leaves, fewer internal nodes; spec A16)."""
    if not node.children:
        return node
    node.children = [_merge_chains(c) for c in node.children]
    merged = []
    for c in node.children:
        if c.children and c.feature == node.feature:
            merged.extend(c.children)
        else:
            merged.append(c)
    node.children = merged
    return node


def branch_sparse_upper_bound(codes: np.ndarray, q: np.ndarray, lam: float, alpha: float,
                              config_counts: np.ndarray | None = None) -> float:
    """An upper bound on LP_II over every tree (Method II, any ``alpha``): the root as a leaf scores
    ``-lam - n log |X|``; a tree with a split has at least 3 nodes (``-lam + log lam`` each, one
    ``-log lam`` overall), a ``-lgamma(b + 1) <= -log 2`` term, and Dirichlet and volume terms whose sum
    is the log of a Bayesian marginal likelihood of the rows, at most the histogram's
    ``H = sum_x n_x log(n_x / n)`` (:func:`._kernels.branch_sparse_dp` uses the same bound box by box)."""
    _, counts = _configs(codes, q, config_counts)
    n = int(np.sum(counts))
    H = float(np.sum(counts * np.log(counts / n)))
    node = -lam + math.log(lam)
    leaf = -lam - n * float(np.sum(np.log(np.asarray(q, dtype=np.float64))))
    return max(leaf, 3 * node - math.log(2.0) + H - math.log(lam))


def leaf_sparse_upper_bound(codes: np.ndarray, q: np.ndarray, lam: float, alpha: float,
                            config_counts: np.ndarray | None = None) -> float:
    """An upper bound on LP_I over every tree (Method I, any number of leaves), for ``alpha >= 1``
    (NaN otherwise): with an annealing answer it gives a finite optimality gap where the exact solver
    does not run.

    Proof.  Write ``LP_I(T) = c(K) + sum_l h(n_l, V_l)`` with ``c(K) = log Poisson(K; lam) +
    lgamma(K alpha) - lgamma(n + K alpha)`` and ``h(n, V) = lgamma(n + alpha) - lgamma(alpha) - n log V``.

    1. A leaf holding ``d_l`` distinct observed configurations has ``V_l >= d_l``, and by the log-sum
       inequality ``n_l log(n_l / d_l) <= sum_{x in l} n_x log n_x``; so ``-n_l log V_l <=
       sum_{x in l} n_x log n_x - n_l log n_l`` and ``sum_l h <= H + sum_l g(n_l)`` with
       ``H = sum_x n_x log n_x`` and ``g(m) = lgamma(m + alpha) - lgamma(alpha) - m log m`` (``g(0) = 0``).
    2. ``g''(m) = psi'(m + alpha) - 1/m`` and ``psi'(m + alpha) <= psi'(m + 1) = sum_{k>=1} (m + k)**-2 <
       1/m`` for ``alpha >= 1``: ``g`` is concave on ``m > 0``.  Over at most ``K`` non-empty leaves (at most
       ``D``, the number of distinct observed configurations) whose counts sum to ``n``, Jensen's
       inequality on the continuous relaxation gives ``sum_l g(n_l) <= max_{1<=j<=min(K, D)} j g(n / j)``.
    3. Hence ``LP_I(T) <= max_K [c(K) + H + max_{j<=min(K,D)} j g(n/j)]`` over ``K = 1 .. |X|``.  Every
       step only enlarges the set maximised over, so the bound is admissible.
    4. The maximum is reached at ``K <= max(D, ceil(lam))``: beyond, the inner maximum is constant and
       ``c(K+1) - c(K) = log(lam / (K+1)) + [lgamma((K+1) alpha) - lgamma(K alpha)] - [lgamma(n + (K+1)
       alpha) - lgamma(n + K alpha)] < 0`` (the first term is negative for ``K + 1 > lam``, and the
       brackets differ by a non-positive amount since ``lgamma(x + alpha) - lgamma(x)`` grows with ``x``).
    """
    if alpha < 1.0:
        return math.nan
    return float(np.max(leaf_sparse_bound_by_k(codes, q, lam, alpha, config_counts=config_counts)))


def leaf_sparse_bound_by_k(codes: np.ndarray, q: np.ndarray, lam: float, alpha: float,
                           above: float | None = None, config_counts: np.ndarray | None = None) -> np.ndarray:
    """``UB(K)`` for ``K = 1, 2, ...`` (:func:`leaf_sparse_upper_bound`'s step 3, ``alpha >= 1``): up to
    ``max(D, ceil(lam))`` leaves, and further while ``UB(K) >= above`` (then ``UB`` only decreases, step
    4), so every ``K`` past the array has ``UB(K) < above``: no tree with that many leaves beats ``above``.
    With ``config_counts``, ``codes`` are the distinct configurations and these their counts."""
    from scipy.special import gammaln

    _, counts = _configs(codes, q, config_counts)
    n = int(np.sum(counts))
    counts = counts.astype(np.float64)
    H = float(np.sum(counts * np.log(counts)))
    D = len(counts)
    dom = math.exp(float(np.sum(np.log(np.asarray(q, dtype=np.float64)))))
    k_easy = int(min(dom, max(D, math.ceil(lam))))
    la = math.lgamma(alpha)

    def c(k: np.ndarray) -> np.ndarray:  # leaf_sparse_constant, vectorised
        return -lam + k * math.log(lam) - gammaln(k + 1.0) + gammaln(k * alpha) - gammaln(n + k * alpha)

    kd = np.arange(1, min(k_easy, D) + 1, dtype=np.float64)
    best_j = np.maximum.accumulate(kd * (gammaln(n / kd + alpha) - la - (n / kd) * np.log(n / kd)))
    ks = np.arange(1, k_easy + 1, dtype=np.float64)
    best_k = np.concatenate([best_j, np.full(k_easy - kd.size, best_j[-1])])
    out = list(c(ks) + H + best_k)
    k = k_easy + 1
    while k <= dom and above is not None and out[-1] >= above:  # beyond D the inner maximum is constant
        out.append(leaf_sparse_constant(k, n, lam, alpha) + H + float(best_j[-1]))
        k += 1
    return np.array(out)
