"""The node store of BCART-PCFG: every reachable bounding box, keyed by its point set.

A node of the grammar is a set of training points cut out by an axis-aligned
box (spec-001 §2.2).  :func:`build_node_store` discovers all of them from the
root by applying every split, keeps each distinct point set once (never a
dense grid of boxes), and records the de-duplicated splits of every node as
edges.  The heavy lifting is :func:`arboretum.pcfg._kernels.discover`; this
module owns the arrays, grows them, enforces ``max_nodes`` and the memory
limit, and renumbers nodes so that children come after their parents.

Limits are never an approximation: when the store would exceed a limit,
:class:`GrammarTooLargeError` is raised with the pre-flight estimate and
advice (coarser bucketing).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from .._numba import n_words, pack_columns, seconds_left, unpack
from . import _kernels as K

__all__ = ["GrammarLimitReached", "GrammarTooLargeError", "NodeStore", "Preflight", "build_node_store", "preflight"]

_INITIAL_NODES = 1 << 12


class GrammarTooLargeError(RuntimeError):
    """The grammar is too large for the limits: refused before any work (the pre-flight estimate)."""


class GrammarLimitReached(GrammarTooLargeError):
    """A limit (``max_nodes``, ``memory_limit`` or ``time_limit``) was reached while building.

    :class:`~arboretum.PCFGTreeClassifier` catches it and fits a coarser
    grammar instead (a limit never makes ``fit`` raise); ``reason`` names the
    limit.
    """

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass
class Preflight:
    """Size estimate of a node store, made before building it.

    Attributes
    ----------
    grid_bound : float
        ``prod_f t_f (t_f + 1) / 2``, the number of distinct code boxes
        (spec §3.0); the node count never exceeds it, nor ``2**n - 1``.
    bound : float
        ``min(grid_bound, 2**n - 1)``.
    estimate : float or None
        Node count extrapolated from the stores of nested random row samples
        of sizes ``n / 2**k`` (see :func:`preflight`); None when not computed.
    lower_bound : bool
        True when the largest sample already hit the sampling cap, so that
        ``estimate`` is extrapolated from a lower bound.
    stages : list of (int, int)
        ``(rows, nodes)`` of every sample built.
    refuse : bool
        True when the estimate is large enough to refuse the fit before
        building the store (see :func:`preflight`).
    bytes_per_node : float
        Rough memory per node, edges included.
    """

    grid_bound: float
    bound: float
    estimate: float | None = None
    lower_bound: bool = False
    stages: list[tuple[int, int]] = field(default_factory=list)
    refuse: bool = False
    bytes_per_node: float = 0.0

    def describe(self) -> str:
        """One line for error messages."""
        text = f"upper bound {self.bound:.3g} nodes (grid bound {self.grid_bound:.3g})"
        if self.estimate is not None:
            samples = ", ".join(f"{m} rows: {k:,}" for m, k in self.stages)
            text += (f", estimate {'at least ' if self.lower_bound else 'about '}{self.estimate:.3g} nodes "
                     f"extrapolated from row samples ({samples} nodes)")
        return text


@dataclass
class NodeStore:
    """All nodes and de-duplicated splits of PCFG* for one training set.

    Node ids are sorted by decreasing size: the root is node 0 and every
    child has a larger id than its parent.

    Attributes
    ----------
    bits : ndarray of uint64, shape (n_nodes, n_words)
        The point set of every node (packed bitset).
    size : ndarray of int64, shape (n_nodes,)
    counts : ndarray of int64, shape (n_nodes, n_classes)
        Label counts of every node.
    edge_start : ndarray of int64, shape (n_nodes + 1,)
        The splits of node ``v`` are edges ``edge_start[v] .. edge_start[v + 1] - 1``,
        in canonical order (feature ascending, then threshold ascending).
    edge_a, edge_b : ndarray of int32, shape (n_edges,)
        Left child (``code[f] <= m``) and right child of every edge.
    edge_f, edge_m : ndarray of int32, shape (n_edges,)
        Feature and threshold code of every edge.
    edge_w : ndarray of float64, shape (n_edges,) or (0,)
        Per-split log weight ``-log |F_valid(N)| - log |thr_f(N)|`` of the
        Chipman grammar; empty for the phi grammar.
    deduplicated : bool
        Whether splits inducing the same unordered partition were merged.
    n_samples, n_features : int
    build_time : float
        Seconds spent discovering the nodes.
    peak_bytes : int
        Largest number of bytes held by the store's arrays while building.
    """

    bits: np.ndarray
    size: np.ndarray
    counts: np.ndarray
    edge_start: np.ndarray
    edge_a: np.ndarray
    edge_b: np.ndarray
    edge_f: np.ndarray
    edge_m: np.ndarray
    edge_w: np.ndarray
    deduplicated: bool
    n_samples: int
    n_features: int
    build_time: float = 0.0
    peak_bytes: int = 0
    preflight: Preflight | None = field(default=None, repr=False)

    @property
    def n_nodes(self) -> int:
        """Number of nodes ``|N|``."""
        return int(self.size.shape[0])

    @property
    def n_edges(self) -> int:
        """Number of splits over all nodes (``E`` of the spec)."""
        return int(self.edge_a.shape[0])

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays."""
        return int(sum(a.nbytes for a in (self.bits, self.size, self.counts, self.edge_start, self.edge_a,
                                          self.edge_b, self.edge_f, self.edge_m, self.edge_w)))

    def members(self, node: int) -> np.ndarray:
        """Indices of the training points in ``node``."""
        return np.flatnonzero(unpack(self.bits[node], self.n_samples))

    def splits(self, node: int) -> range:
        """Edge indices of the splits of ``node``."""
        return range(int(self.edge_start[node]), int(self.edge_start[node + 1]))


def _code_bitsets(codes: np.ndarray, n_codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``le[code_off[f] + c] = {i : codes[i, f] <= c}`` as packed bitsets."""
    code_off = np.zeros(codes.shape[1] + 1, dtype=np.int64)
    code_off[1:] = np.cumsum(n_codes)
    columns = [codes[:, f:f + 1] <= np.arange(n_codes[f])[None, :] for f in range(codes.shape[1])]
    le = pack_columns(np.concatenate(columns, axis=1))
    return le, code_off


def _grid_bound(codes: np.ndarray) -> float:
    t = np.array([np.unique(codes[:, f]).size for f in range(codes.shape[1])], dtype=np.float64)
    with np.errstate(over="ignore"):  # inf on wide data: the bound is then 2**n - 1
        return float(np.prod(t * (t + 1) / 2))


def _table_size(cap_nodes: int) -> int:
    """Slots of the node hash table for ``cap_nodes`` nodes: a power of two (the probes wrap with a
    mask) of at least twice as many."""
    return 1 << (2 * max(cap_nodes, 1) - 1).bit_length()


def _bytes_per_node(n_samples: int, n_classes: int, edges_per_node: float, weights: bool) -> float:
    """Memory per node while building: bitset, size, counts, hash, table, edges (+ DP tables)."""
    node = n_words(n_samples) * 8 + 8 + n_classes * 8 + 8 + 8 + 16 + 5 * 8
    edge = 16 + (8 if weights else 0) + 8
    return node + edges_per_node * edge


class _Arrays:
    """The growable arrays of a store being built."""

    def __init__(self, n_samples: int, n_classes: int, cap_nodes: int, cap_edges: int, weights: bool):
        W = n_words(n_samples)
        self.node_bits = np.zeros((cap_nodes, W), dtype=np.uint64)
        self.node_size = np.zeros(cap_nodes, dtype=np.int64)
        self.node_counts = np.zeros((cap_nodes, n_classes), dtype=np.int64)
        self.node_hash = np.zeros(cap_nodes, dtype=np.uint64)
        self.edge_start = np.zeros(cap_nodes + 1, dtype=np.int64)
        self.ht = np.full(_table_size(cap_nodes), -1, dtype=np.int64)
        self.edge_a = np.zeros(cap_edges, dtype=np.int32)
        self.edge_b = np.zeros(cap_edges, dtype=np.int32)
        self.edge_f = np.zeros(cap_edges, dtype=np.int32)
        self.edge_m = np.zeros(cap_edges, dtype=np.int32)
        self.edge_w = np.zeros(cap_edges if weights else 0, dtype=np.float64)
        self.weights = weights

    @property
    def nbytes(self) -> int:
        return int(sum(a.nbytes for a in vars(self).values() if isinstance(a, np.ndarray)))

    def bytes_after_growth(self, cap_nodes: int, cap_edges: int) -> int:
        W = self.node_bits.shape[1]
        C = self.node_counts.shape[1]
        per_node = W * 8 + 8 + C * 8 + 8 + 8 + 2 * 8
        per_edge = 16 + (8 if self.weights else 0)
        return cap_nodes * per_node + cap_edges * per_edge

    def grow(self, cap_nodes: int, cap_edges: int, n_nodes: int, n_edges: int) -> None:
        def bigger(a: np.ndarray, n: int, used: int, fill: float = 0) -> np.ndarray:
            b = np.full((n,) + a.shape[1:], fill, dtype=a.dtype)
            b[:used] = a[:used]
            return b

        if cap_nodes > self.node_size.shape[0]:
            self.node_bits = bigger(self.node_bits, cap_nodes, n_nodes)
            self.node_size = bigger(self.node_size, cap_nodes, n_nodes)
            self.node_counts = bigger(self.node_counts, cap_nodes, n_nodes)
            self.node_hash = bigger(self.node_hash, cap_nodes, n_nodes)
            self.edge_start = bigger(self.edge_start, cap_nodes + 1, n_nodes + 1)
            self.ht = np.full(_table_size(cap_nodes), -1, dtype=np.int64)
            K.rehash(self.node_hash, n_nodes, self.ht)
        if cap_edges > self.edge_a.shape[0]:
            self.edge_a = bigger(self.edge_a, cap_edges, n_edges)
            self.edge_b = bigger(self.edge_b, cap_edges, n_edges)
            self.edge_f = bigger(self.edge_f, cap_edges, n_edges)
            self.edge_m = bigger(self.edge_m, cap_edges, n_edges)
            if self.weights:
                self.edge_w = bigger(self.edge_w, cap_edges, n_edges)


def _too_large(what: str, n_nodes: int, pre: Preflight, advice: str, reason: str) -> GrammarLimitReached:
    return GrammarLimitReached(
        f"BCART-PCFG node store too large: {what} after discovering {n_nodes:,} nodes "
        f"(pre-flight: {pre.describe()}). The method is exact and never approximates; to fit, "
        f"{advice}",
        reason,
    )


#: Nodes discovered between two looks at the clock (adapted to about 0.05 s per call).
_FIRST_CHUNK_NODES = 1 << 14


def _discover(codes: np.ndarray, n_codes: np.ndarray, y: np.ndarray, n_classes: int, *, dedupe: bool,
              chipman_weights: bool, max_nodes: int, memory_limit: int | None, pre: Preflight,
              advice: str, deadline: float | None = None) -> tuple[_Arrays, int, int, int]:
    n_samples, n_features = codes.shape
    le, code_off = _code_bitsets(codes, n_codes)
    class_bits = pack_columns(y[:, None] == np.arange(n_classes)[None, :])
    max_splits = int(max(1, np.sum(np.maximum(np.minimum(n_codes, n_samples) - 1, 0))))
    cap_nodes = max(_INITIAL_NODES, 4 * max_splits + 2)
    arrays = _Arrays(n_samples, n_classes, cap_nodes, cap_nodes * 4, chipman_weights)
    root = np.zeros(n_words(n_samples), dtype=np.uint64)
    root[:] = pack_columns(np.ones((n_samples, 1), dtype=bool))[0]
    _, n_nodes = K.find_or_insert(root, arrays.node_bits, arrays.node_size, arrays.node_counts,
                                  arrays.node_hash, arrays.ht, class_bits, 0)
    counters = np.array([n_nodes, 0, 0], dtype=np.int64)
    peak = arrays.nbytes
    chunk = _FIRST_CHUNK_NODES
    while True:
        cap = max_nodes if deadline is None else min(max_nodes, int(counters[0]) + chunk)
        t_call = time.perf_counter()
        status = K.discover(le, code_off, class_bits, dedupe, chipman_weights,
                            arrays.node_bits, arrays.node_size, arrays.node_counts, arrays.node_hash,
                            arrays.ht, arrays.edge_start, arrays.edge_a, arrays.edge_b, arrays.edge_f,
                            arrays.edge_m, arrays.edge_w, counters, cap, max_splits, seconds_left(deadline))
        n_nodes, n_edges, head = (int(c) for c in counters)
        if status == K.STATUS_DONE:
            break
        if deadline is not None and time.perf_counter() >= deadline:
            raise _too_large("the time limit was reached", n_nodes, pre, advice, "time_limit")
        if status == K.STATUS_LIMIT and n_nodes > max_nodes:
            raise _too_large(f"more than max_nodes={max_nodes:,} nodes", n_nodes, pre, advice, "max_nodes")
        if status == K.STATUS_LIMIT:  # a pause to look at the clock
            elapsed = time.perf_counter() - t_call
            chunk = int(min(max(chunk * 0.05 / max(elapsed, 1e-4), 1024), 1 << 22))
            continue
        cap_nodes = arrays.node_size.shape[0]
        cap_edges = arrays.edge_a.shape[0]
        if n_nodes + 2 * max_splits > cap_nodes or 2 * (n_nodes + 2 * max_splits) > arrays.ht.shape[0]:
            cap_nodes = 2 * cap_nodes
        if n_edges + max_splits > cap_edges:
            cap_edges = max(2 * cap_edges, n_edges + max_splits)
        wanted = arrays.bytes_after_growth(cap_nodes, cap_edges)
        if memory_limit is not None and wanted > memory_limit:
            raise _too_large(
                f"the arrays would need {wanted / 2**20:,.0f} MiB, over memory_limit="
                f"{memory_limit / 2**20:,.0f} MiB,", n_nodes, pre, advice, "memory_limit")
        arrays.grow(cap_nodes, cap_edges, n_nodes, n_edges)
        peak = max(peak, arrays.nbytes)
    return arrays, n_nodes, n_edges, peak


def preflight(codes: np.ndarray, n_classes: int, *, max_nodes: int | None = None, dedupe: bool = True,
              n_codes: np.ndarray | None = None, random_state: int = 0, deadline: float | None = None) -> Preflight:
    """Estimate the size of the node store of ``codes`` before building it.

    The bound ``min(prod_f t_f (t_f + 1) / 2, 2**n - 1)`` is always computed.
    When it exceeds ``max_nodes``, the stores of nested random row samples of
    ``m = n / 2**k`` rows (``8 <= m <= n / 2``, smallest first) are built, each
    capped at ``max_nodes / 50`` nodes (a sample's count never exceeds the full
    count: a box's point set in the sample determines its point set in the full
    data).  The count is extrapolated as ``N_m * r ** log2(n / m)`` with ``r``
    the growth of the last doubling (spec §3.12).  Extrapolations from small
    samples overestimate (the count saturates towards the bound; up to ~200x
    at ``n / 16`` rows on the paper's datasets, <= 1.5x at ``n / 2``), so
    :attr:`Preflight.refuse` only trusts an estimate from ``m`` rows when it
    exceeds ``max_nodes * (n / m) ** 2``, or ``4 * max_nodes`` when the sample
    hit the cap (its count then grows fast, without sign of saturation).
    Sampling stops when a sample hits the cap or the estimate is refused.  The
    exact guard is the ``max_nodes`` check during discovery; this only saves
    time on hopeless fits.

    Parameters
    ----------
    codes : ndarray of int, shape (n_samples, n_features)
    n_classes : int
    max_nodes : int, optional
        Without it only the bound is computed.
    dedupe : bool, default=True
    n_codes : ndarray of int, optional
        Codes per feature (default ``codes.max(axis=0) + 1``).
    random_state : int, default=0
        Seed of the row samples.
    deadline : float, optional
        ``time.perf_counter()`` value at which the sample stores stop.

    Returns
    -------
    Preflight

    Raises
    ------
    GrammarLimitReached
        With ``reason="time_limit"`` when ``deadline`` passes.
    """
    codes = np.asarray(codes)
    n_samples = codes.shape[0]
    grid = _grid_bound(codes)
    bound = min(grid, math.ldexp(1.0, min(n_samples, 1023)) - 1)
    pre = Preflight(grid_bound=grid, bound=bound,
                    bytes_per_node=_bytes_per_node(n_samples, n_classes, 10.0, not dedupe))
    if max_nodes is None or bound <= max_nodes:
        return pre
    if n_codes is None:
        n_codes = codes.max(axis=0).astype(np.int64) + 1
    sizes = []
    m = n_samples // 2
    while m >= 8:
        sizes.append(m)
        m //= 2
    order = np.random.default_rng(random_state).permutation(n_samples)
    cap = max(1000, max_nodes // 50)
    previous = None
    for m in reversed(sizes):
        rows = np.sort(order[:m])
        try:
            _, nodes, edges, _ = _discover(codes[rows], n_codes, np.zeros(m, dtype=np.int64), 1, dedupe=dedupe,
                                           chipman_weights=False, max_nodes=cap, memory_limit=None, pre=pre,
                                           advice="", deadline=deadline)
        except GrammarLimitReached as exc:
            if exc.reason == "time_limit":
                raise
            nodes, edges, pre.lower_bound = cap, cap * 10, True
        pre.stages.append((m, nodes))
        pre.bytes_per_node = _bytes_per_node(n_samples, n_classes, edges / max(nodes, 1), not dedupe)
        if previous is not None:
            growth = max(nodes / max(previous, 1), 1.0)
            pre.estimate = float(min(bound, nodes * growth ** math.log2(n_samples / m)))
            factor = 4.0 if pre.lower_bound else (n_samples / m) ** 2
            if pre.estimate > max_nodes * factor:
                pre.refuse = True
                break
        if pre.lower_bound:
            break
        previous = nodes
    return pre


def build_node_store(
    codes: np.ndarray,
    y: np.ndarray,
    n_classes: int,
    *,
    n_codes: np.ndarray | None = None,
    dedupe: bool = True,
    chipman_weights: bool = False,
    max_nodes: int = 5_000_000,
    memory_limit: int | None = None,
    advice: str = "bucket the features more coarsely (fewer values per feature) or use fewer features.",
    pre: Preflight | None = None,
    deadline: float | None = None,
) -> NodeStore:
    """Discover every node and split of PCFG* for integer codes ``codes`` and labels ``y``.

    Parameters
    ----------
    codes : ndarray of int, shape (n_samples, n_features)
        Feature codes ``0 .. n_codes[f] - 1``.
    y : ndarray of int, shape (n_samples,)
        Class indices ``0 .. n_classes - 1``.
    n_classes : int
    n_codes : ndarray of int, optional
        Codes per feature (default ``codes.max(axis=0) + 1``).
    dedupe : bool, default=True
        Merge splits that induce the same unordered partition of a node (the
        paper's Tree Constraint 2).  The Chipman grammar keeps them apart.
    chipman_weights : bool, default=False
        Record the per-split weight ``-log|F_valid(N)| - log|thr_f(N)|``.
    max_nodes : int, default=5_000_000
    memory_limit : int or None
        Bytes the store's arrays may hold.
    advice : str
        End of the error message when a limit is hit.
    pre : Preflight, optional
        Pre-flight estimate quoted in error messages.
    deadline : float, optional
        ``time.perf_counter()`` value at which to stop.

    Returns
    -------
    NodeStore

    Raises
    ------
    GrammarLimitReached
        If the store would exceed ``max_nodes`` or ``memory_limit``, or the
        deadline passes.
    """
    t0 = time.perf_counter()
    codes = np.ascontiguousarray(codes, dtype=np.int32)
    y = np.ascontiguousarray(y, dtype=np.int64)
    n_samples, n_features = codes.shape
    if n_codes is None:
        n_codes = codes.max(axis=0).astype(np.int64) + 1
    n_codes = np.asarray(n_codes, dtype=np.int64)
    if pre is None:
        pre = preflight(codes, n_classes, dedupe=dedupe, n_codes=n_codes)
    arrays, n_nodes, n_edges, peak = _discover(
        codes, n_codes, y, n_classes, dedupe=dedupe, chipman_weights=chipman_weights,
        max_nodes=max_nodes, memory_limit=memory_limit, pre=pre, advice=advice, deadline=deadline)
    perm, inv = K.size_order(arrays.node_size, n_nodes)
    edge_start, edge_a, edge_b, edge_f, edge_m, edge_w = K.permute_edges(
        perm, inv, arrays.edge_start[: n_nodes + 1], arrays.edge_a[:n_edges], arrays.edge_b[:n_edges],
        arrays.edge_f[:n_edges], arrays.edge_m[:n_edges], arrays.edge_w[:n_edges])
    store = NodeStore(
        bits=arrays.node_bits[perm],
        size=arrays.node_size[perm],
        counts=arrays.node_counts[perm],
        edge_start=edge_start,
        edge_a=edge_a,
        edge_b=edge_b,
        edge_f=edge_f,
        edge_m=edge_m,
        edge_w=edge_w,
        deduplicated=bool(dedupe),
        n_samples=int(n_samples),
        n_features=int(n_features),
        preflight=pre,
    )
    store.peak_bytes = int(max(peak, arrays.nbytes + store.nbytes))
    store.build_time = time.perf_counter() - t0
    return store
