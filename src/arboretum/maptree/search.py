"""The MAPTree AND/OR best-first search: state, limits and the returned tree.

:class:`AndOrSearch` owns the struct-of-arrays search graph, calls the numba
kernel in chunks (so that the wall-clock limit, the memory limit and progress
reports are handled here, in plain Python), grows the arrays when the kernel
asks for room, and reads the incumbent tree off the explicit graph
(``getSolution``, spec §3.7).

:class:`AndOrSearch` has Dirichlet-multinomial leaves (classification);
:class:`RegressionSearch` is the same search with normal-inverse-gamma leaves
(regression).  They differ only in the leaf model handed to the kernels
(see :mod:`arboretum.maptree._kernels`) and in what the returned tree's
leaves hold.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .._compile import LEAN, register, tiny_problem
from .._numba import dirichlet_tables, pack_columns, pack_rows_mask
from ..bayes import ChipmanPrior, NIGPrior
from ..tree import BINARY, Tree, TreeBuilder
from . import _kernels as K
from .bounds import group_spread_terms, leaf_share_terms, nig_bound_tables
from .history import HISTORY_DTYPE, SearchHistory

__all__ = ["AndOrSearch", "RegressionSearch", "SearchResult"]

#: Iterations each target gets in the first round of a focused search (see AndOrSearch.run).
FOCUS_BUDGET = 64
#: Share of a focused round's iterations spent on the incumbent's subproblems; the root gets the rest.
#: The trade-off: the subproblems improve the tree, only the root's work tightens the bound.  A share
#: of 1.0 slowed certificates (lymph 77 s instead of 66 s) and left the 600 s bounds 1-20 nats weaker.
#: At 60 s, 0.5 and 0.25 found the same trees as 1.0 on mushroom, kr-vs-kp, soybean and splice-1; their
#: bounds were weaker than the plain search's by 1.3-7.5 nats (0.5) and 0.3-5.3 nats (0.25), so a
#: smaller share may be the better default; the committed tables measure 0.5.
FOCUS_SHARE = 0.5
#: A chunk of kernel iterations (see AndOrSearch.run) is about this share of the iterations run so
#: far (at least CHUNK_MIN): the history, recorded between chunks, then has evenly many rows per
#: decade of work (100-200), and the chunks, so the search, do not depend on the clock.  A chunk
#: that takes longer than CHUNK_SECONDS_MAX (or 1/50 of the time limit) halves the largest chunk,
#: so that limits stay honoured closely.  The first chunks hold 1, 2, 4, ... iterations up to
#: CHUNK_MIN, doubling while each takes under a quarter of that: near the root of 500,000 samples
#: one iteration takes 0.05-0.4 s, and a first chunk of 16 took 0.8 s.
CHUNK_SHARE = 0.02
CHUNK_MIN = 16
CHUNK_SECONDS_MAX = 0.2
#: Growth steps from at least this many bytes time the cost of growing (``_grow_would_pass``).
GROW_RATE_BYTES = 16 * 2**20
#: ``Tables.max_depth`` without a depth limit (deeper than any tree of 2**30 samples).
NO_DEPTH_LIMIT = 2**30
#: Whether RegressionSearch uses the leaf-share bound (:func:`~arboretum.maptree.bounds.leaf_share_terms`);
#: private, for the before/after benchmark (benchmarks/maptree_regression.py) only.
_LEAF_SHARES = True

_OR_FIELDS = (
    # name, dtype, extra shape
    ("or_depth", np.int32, ()),
    ("or_h1", np.uint64, ()),
    ("or_h2", np.uint64, ()),
    ("or_lb", np.float64, ()),
    ("or_ub", np.float64, ()),
    ("or_leaf", np.float64, ()),
    ("or_pen", np.float64, ()),
    ("or_expanded", np.uint8, ()),
    ("or_and_start", np.int32, ()),
    ("or_and_count", np.int32, ()),
    ("or_first_edge", np.int32, ()),
    ("or_stamp", np.int32, ()),
    ("or_best", np.int32, ()),
    ("or_flags", np.uint8, ()),
    ("buf_a", np.int32, ()),
    ("buf_b", np.int32, ()),
)
_AND_FIELDS = (
    ("and_feature", np.int32),
    ("and_parent", np.int32),
    ("and_child0", np.int32),
    ("and_child1", np.int32),
)


@dataclass
class SearchResult:
    """Outcome of a (possibly interrupted) search.

    Costs are ``-log P(T, Y | X)``: ``lower_bound <= OPT <= upper_bound``.

    Attributes
    ----------
    lower_bound, upper_bound : float
        Bounds on the cost of the MAP tree at the root (``lower_bound`` is at
        most ``upper_bound``).
    optimal : bool
        True when the bounds met: the incumbent is a MAP tree.
    stop_reason : str
        "optimal", "max_expansions", "time_limit" or "memory_limit".
    n_expansions, n_probes, n_or_nodes, n_and_nodes : int
        Work done and size of the graph, over all runs of the search so far.
    search_time : float
        Seconds of this run.
    peak_bytes : int
        Largest size of the graph's arrays.
    history : ndarray of dtype HISTORY_DTYPE
        The anytime record of the search since it started (all runs and seeded
        trees, not only this run): fields ``time`` (float64, seconds since the
        first seeded tree or run), ``n_expansions`` (int64),
        ``log_posterior`` (float64, ``-upper_bound`` then) and
        ``log_posterior_bound`` (float64, ``-lower_bound`` then); a row for
        the start, one for each chunk of kernel calls or seeded tree after
        which either value had changed, and the state at the end of this run
        last.  At most :data:`~arboretum.maptree.history.MAX_HISTORY_ROWS`
        rows plus the last (see :class:`~arboretum.maptree.history.SearchHistory`).
    """

    lower_bound: float
    upper_bound: float
    optimal: bool
    stop_reason: str
    n_expansions: int
    n_probes: int
    n_or_nodes: int
    n_and_nodes: int
    search_time: float
    peak_bytes: int
    history: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=HISTORY_DTYPE))


class AndOrSearch:
    """Best-first AND/OR search for the MAP tree of the BCART posterior.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Binary (0/1) features.
    y : ndarray of shape (n_samples,)
        Class indices ``0 .. n_classes - 1``.
    n_classes : int
        Number of classes (``len(rho)``).
    alpha, beta : float
        Chipman prior: ``p_split(d) = alpha * (1 + d) ** -beta``.
    rho : sequence of float
        Dirichlet (Beta for two classes) leaf prior, ``rho[k]`` for class ``k``.
    ub_semantics : {"leaf", "inf"}
        Upper bound of an unexpanded node: its leaf cost assuming a valid split
        exists (default, better anytime trees) or +inf (the paper's Lemma 16).
    tie_rule : {"paper", "reference"}
        Which child the descent takes when the two gaps are equal.
    sample_weight : ndarray of non-negative int, optional
        Integer weights: a sample of weight ``w`` counts as ``w`` copies of
        itself in the leaf likelihoods (exactly the posterior of the data with
        that row repeated ``w`` times, since the prior depends only on which
        distinct rows a node holds).  Zero-weight samples must be removed by
        the caller.
    probe : bool, default True
        Probe a node the first times the search reaches it: compute the bound
        its expansion would give without storing its children (then a depth-2
        bound on the second visit), record the best one-split incumbent it
        finds, and store its children only on the third visit (see
        ``_kernels._probe`` and ``_kernels._probe2``).  Same certificates, far
        smaller graphs; False gives the paper's search.
    max_depth : int, optional
        Only trees of at most this depth: a node at that depth is a leaf (its
        cost ``-log(1 - p_split(d)) - log l`` as in every tree), so the
        search certifies the MAP tree among trees of at most ``max_depth``
        levels of splits.  Seeded trees are cut at that depth.

    Attributes
    ----------
    history : SearchHistory
        The anytime record, kept across :meth:`seed` and :meth:`run` calls
        (and :meth:`step`); each :class:`SearchResult` holds it as an array.
    """

    def __init__(
        self,
        X: np.ndarray,
        y: np.ndarray,
        n_classes: int,
        alpha: float = 0.95,
        beta: float = 0.5,
        rho=(2.5, 2.5),
        *,
        ub_semantics: str = "leaf",
        tie_rule: str = "paper",
        sample_weight: np.ndarray | None = None,
        probe: bool = True,
        max_depth: int | None = None,
        _rootless: bool = False,
    ) -> None:
        self._rootless = _rootless  # see compile_kernel
        w = self._setup(X, alpha, beta, ub_semantics, tie_rule, sample_weight, probe, max_depth)
        y = np.asarray(y, dtype=np.int64)
        self.n_classes = int(n_classes)
        self.rho = np.asarray(rho, dtype=np.float64)
        # Bit planes of the integer weights, per class: Y[k, b] = {i : y_i = k, bit b of w_i}.
        n_bits = max(1, int(w.max()).bit_length())
        onehot = y[:, None] == np.arange(self.n_classes)[None, :]
        Y = np.stack(
            [pack_columns(onehot & ((w >> b) & 1).astype(bool)[:, None]) for b in range(n_bits)],
            axis=1,
        )
        self.Y, self.dm = Y, dirichlet_tables(self.rho, int(w.sum()))
        self.model = K.DirichletModel(Y, *self.dm)  # Dirichlet leaves (see _kernels)
        self._start(n_counts=self.n_classes, n_stats=0)

    def _setup(self, X, alpha, beta, ub_semantics, tie_rule, sample_weight, probe, max_depth) -> np.ndarray:
        """Everything that does not depend on the leaf model; returns the integer weights."""
        X = np.asarray(X, dtype=bool)
        n, F = X.shape
        self.n_samples, self.n_features = n, F
        # 0: no probes; 2: depth-1, then depth-2 probes (the kernel skips the depth-2 probe of
        # nodes of more than K.PROBE2_MAX_SAMPLES samples); 1 (depth-1 only) is for experiments.
        self.probe = 2 if probe else 0
        self.alpha, self.beta = float(alpha), float(beta)
        self.ub_inf = ub_semantics == "inf"
        self.tie_rule = 0 if tie_rule == "paper" else 1
        self.M1 = pack_columns(X)
        if sample_weight is None:
            w = np.ones(n, dtype=np.int64)
        else:
            w = np.asarray(sample_weight, dtype=np.int64)
        self.root_words = pack_rows_mask(np.ones(n, dtype=bool))
        # Duplicate feature rows: subsets inside one group of identical rows have no valid split.
        # One bytes string per row (packbits is big-endian, so the groups are numbered in the
        # lexicographic order of the rows, as np.unique(X, axis=0) numbers them, at a fraction of
        # its cost on large X: 1-d unique of n strings instead of a lexsort of n x F values).
        packed = np.ascontiguousarray(np.packbits(X, axis=1))
        rows = packed.view(np.dtype((np.void, packed.shape[1]))).ravel()
        _, self.row_group, group_sizes = np.unique(rows, return_inverse=True, return_counts=True)
        self.row_group = self.row_group.astype(np.int64).ravel()
        self._root_unsplittable = group_sizes.size == 1
        # The kernels need the groups of two or more rows only (a set of two or more samples with a
        # row of its own has a valid split): dup_group numbers those groups (-1 for a row of its
        # own) and group_size counts their samples, O(n) to build and hold.
        shared = np.flatnonzero(group_sizes > 1)
        dup_of_group = np.full(group_sizes.size, -1, dtype=np.int64)
        dup_of_group[shared] = np.arange(shared.size)
        self.dup_group = dup_of_group[self.row_group]
        self.group_size = group_sizes[shared].astype(np.int64)
        self.data = K.Data(self.M1, self.dup_group, self.group_size)
        prior = ChipmanPrior(self.alpha, self.beta)
        depths = np.arange(F + 2)
        self.log_ps = np.asarray(prior.log_p_split(depths), dtype=np.float64)
        self.log_pstop = np.asarray(prior.log_p_stop(depths), dtype=np.float64)
        # Prior bounds of the split terms: logv[m] <= log|V(I)| for a splittable node of m samples
        # (K.split_count_bounds), and E[d, m], the least prior cost below a split
        # (K.subtree_prior_bounds): nodes of more than gmax samples are splittable.  E saturates
        # after a few multiples of gmax; it is capped at 64 depths and 1024 sizes (O(depths *
        # sizes^2) to build), beyond which weaker values are used.
        self.gmax = int(group_sizes.max())
        rows = min(F + 2, 64)
        logv = K.split_count_bounds(group_sizes)
        if self._rootless:
            E = np.zeros((1, 1))  # the type of the real table, for compile_kernel
        else:
            E = K.subtree_prior_bounds(
                self.log_ps[:rows], self.log_pstop[:rows], self.gmax, min(n, 32 * (self.gmax + 1), 1024), logv
            )
        with np.errstate(divide="ignore"):
            self.log_int = np.log(np.arange(F + 1, dtype=np.float64))
        self.max_depth = None if max_depth is None else int(max_depth)
        self.tables = K.Tables(
            self.log_ps, self.log_pstop, self.log_int, E, logv, self.gmax,
            NO_DEPTH_LIMIT if max_depth is None else int(max_depth),
        )
        W = self.M1.shape[1]
        self.words = np.zeros(W, dtype=np.uint64)
        self.scratch = np.zeros(W, dtype=np.uint64)
        self.valid_f = np.zeros(F, dtype=np.int32)
        self.n1_buf = np.zeros(F, dtype=np.int32)
        self.counters = np.zeros(K.N_COUNTERS, dtype=np.int64)
        return w

    def _start(self, n_counts: int, n_stats: int) -> None:
        """Allocate the graph (``n_counts``/``n_stats`` columns of leaf statistics) and create the root."""
        self._n_counts, self._n_stats = n_counts, n_stats
        F = self.n_features
        self._alloc(cap_or=max(1024, 4 * F + 4), cap_and=max(1024, 2 * F + 2))
        if self._rootless:
            return
        # The root: all samples at depth 0.
        K.write_node_stats(self.model, self.root_words, self.graph, 0)
        K.new_or_node(0, 0, self._root_unsplittable, self.n_samples, self.model, self.tables, self.graph, self.ub_inf)
        h1, h2 = (np.uint64(h) for h in K.hash_words128(self.root_words))
        _, slot = K.ht_find(h1, h2, 0, self.ht_val, self.or_h1, self.or_h2, self.or_depth)
        self.or_h1[0], self.or_h2[0], self.ht_val[slot] = h1, h2, 0
        self.counters[K.C_N_OR] = 1
        self.counters[K.C_HT_USED] = 1
        self.n_expansions_ = 0
        self.peak_bytes = self.nbytes
        self._grow_rate = 0.0  # seconds per byte of the last large growth step (0: none yet)
        self.history = SearchHistory()

    # -- storage ---------------------------------------------------------------------------
    def _alloc(self, cap_or: int, cap_and: int) -> None:
        for name, dtype, _ in _OR_FIELDS:
            setattr(self, name, np.zeros(cap_or, dtype=dtype))
        self.or_counts = np.zeros((cap_or, self._n_counts), dtype=np.int32)
        self.or_stats = np.zeros((cap_or, self._n_stats), dtype=np.float64)
        for name, dtype in _AND_FIELDS:
            setattr(self, name, np.zeros(cap_and, dtype=dtype))
        self.edge_next = np.zeros(2 * cap_and, dtype=np.int32)
        cap_ht = 1 << max(10, int(math.ceil(math.log2(4 * cap_or))))
        self.ht_val = np.full(cap_ht, -1, dtype=np.int32)
        self._views()

    def _views(self) -> None:
        """Build the named tuples the kernels take (:class:`_kernels.Graph`, :class:`_kernels.Scratch`)
        of the current arrays; again after every allocation, since growth replaces the arrays."""
        self.graph = K.Graph(
            K.Nodes(*(getattr(self, name) for name in K.Nodes._fields)),
            K.Links(*(getattr(self, name) for name in K.Links._fields)),
        )
        self.bufs = K.Scratch(*(getattr(self, name) for name in K.Scratch._fields))

    @property
    def nbytes(self) -> int:
        """Bytes held by the search graph's arrays (their capacity, not just their use)."""
        names = [f[0] for f in _OR_FIELDS] + [f[0] for f in _AND_FIELDS]
        names += ["or_counts", "or_stats", "edge_next", "ht_val"]
        return int(sum(getattr(self, a).nbytes for a in names))

    def _growth_plan(self, factor: float) -> tuple[int, int, int]:
        """New (OR, AND, hash-table) capacities for one growth step by ``factor``.

        Only the capacities short of room for one more expansion grow, each to
        ``factor`` times its size (at least to that room); the hash table keeps
        a power-of-two size with load at most 1/2.
        """
        F = self.n_features
        n_or, n_and = int(self.counters[K.C_N_OR]), int(self.counters[K.C_N_AND])
        cap_or, cap_and = self.or_lb.shape[0], self.and_feature.shape[0]
        if n_or + 2 * F > cap_or:
            cap_or = max(int(factor * cap_or), n_or + 2 * F)
        if n_and + F > cap_and:
            cap_and = max(int(factor * cap_and), n_and + F)
        used = int(self.counters[K.C_HT_USED])
        cap_ht = self.ht_val.shape[0]
        while 2 * (used + 2 * F) > cap_ht:
            cap_ht *= 2
        return cap_or, cap_and, cap_ht

    def _plan_nbytes(self, plan: tuple[int, int, int]) -> int:
        """Bytes the graph's arrays would hold with the capacities of ``plan``."""
        cap_or, cap_and, cap_ht = plan
        per_or = sum(np.dtype(dt).itemsize for _, dt, _ in _OR_FIELDS)
        per_or += self.or_counts.itemsize * self.or_counts.shape[1] + self.or_stats.itemsize * self.or_stats.shape[1]
        per_and = sum(np.dtype(dt).itemsize for _, dt in _AND_FIELDS) + 2 * self.edge_next.itemsize
        return cap_or * per_or + cap_and * per_and + cap_ht * self.ht_val.itemsize

    def _grow_would_pass(self, deadline: float) -> bool:
        """Whether the next growth step is expected to end after ``deadline`` (a
        ``time.perf_counter()`` value), at the seconds per copied byte the last large step took.

        Growing copies every array into new memory and cannot be interrupted.  Its cost is the
        new memory's: on a virtual machine that maps fresh memory slowly, 2.3-2.7 s for 292 MB
        about 16 s into a 30 s search on mushroom, and a step after that ran the fit to 34.5 s.
        The caller passes its limit plus the share of the documented tolerance (10% + 0.5 s) that
        it leaves to growth."""
        if self._grow_rate <= 0.0:
            return False
        return time.perf_counter() + self._grow_rate * self.nbytes > deadline

    def _try_grow(self, memory_limit: int | None) -> bool:
        """Grow the arrays within ``memory_limit`` (bytes); False when even the smallest step
        would pass it or memory runs out.

        Capacities double while that fits; near the limit they grow by smaller
        factors (1.5, 1.25, ... down to just the room for one more expansion),
        so the search uses nearly all of ``memory_limit`` instead of stopping
        when a doubling would pass it.
        """
        for factor in (2.0, 1.5, 1.25, 1.125, 1.0625, 1.0):
            plan = self._growth_plan(factor)
            if memory_limit is None or self._plan_nbytes(plan) <= memory_limit:
                break
        else:
            return False
        try:
            self._grow(plan)
        except MemoryError:  # the machine (or the int32 node ids) ran out first
            return False
        return True

    def _grow(self, plan: tuple[int, int, int] | None = None) -> None:
        """Resize the arrays to the capacities of ``plan`` (default: a doubling step)."""
        cap_or, cap_and, cap_ht = self._growth_plan(2.0) if plan is None else plan
        if cap_and >= 2**30:  # AND ids and parent-edge ids are int32
            raise MemoryError("the search graph reached 2**30 AND nodes")
        t0, before = time.perf_counter(), self.nbytes
        if cap_or != self.or_lb.shape[0]:
            for name, _, _ in _OR_FIELDS:
                setattr(self, name, _resized(getattr(self, name), cap_or))
            self.or_counts = _resized(self.or_counts, cap_or)
            self.or_stats = _resized(self.or_stats, cap_or)
        if cap_and != self.and_feature.shape[0]:
            for name, _ in _AND_FIELDS:
                setattr(self, name, _resized(getattr(self, name), cap_and))
            self.edge_next = _resized(self.edge_next, 2 * cap_and)
        if cap_ht != self.ht_val.shape[0]:
            val = np.full(cap_ht, -1, np.int32)
            K.rehash(self.ht_val, val, self.or_h1, self.or_depth)
            self.ht_val = val
        self._views()
        self.peak_bytes = max(self.peak_bytes, self.nbytes)
        if before >= GROW_RATE_BYTES:  # small steps time the allocator, not the memory
            self._grow_rate = (time.perf_counter() - t0) / before  # seconds per byte copied

    # -- running ---------------------------------------------------------------------------
    @property
    def lower_bound(self) -> float:
        return float(self.or_lb[0])

    @property
    def upper_bound(self) -> float:
        return float(self.or_ub[0])

    @property
    def solved(self) -> bool:
        return bool(self.or_lb[0] >= self.or_ub[0])

    def _state(self) -> tuple[int, float, float]:
        """``(n_expansions, log posterior of the incumbent, bound)`` now, for :attr:`history`."""
        ub = self.upper_bound
        return self.n_expansions_, -ub, -min(self.lower_bound, ub)

    def _check_rooted(self) -> None:
        if self._rootless:
            raise RuntimeError("a search built with _rootless=True has no root: it can only compile_kernel()")

    def _chunk(self, max_iter: int, start: int, words: np.ndarray) -> int:
        """One call of the search kernel: at most ``max_iter`` iterations from ``start``."""
        status = K.run_search(
            self.data, self.model, self.tables, self.graph, self.bufs, words,
            max_iter, self.tie_rule, self.ub_inf, self.probe, start,
        )
        self.n_expansions_ = int(self.counters[K.C_N_EXP])
        if status == K.STATUS_INTERNAL_ERROR:
            raise RuntimeError(
                "MAPTree search reached an inconsistent state (an unsolved node "
                "without an unsolved child); please report this with your data."
            )
        self.history.observe(*self._state())
        return status

    def compile_kernel(self) -> None:
        """Compile (or load) the search kernel for this search's argument types, running nothing.

        With ``_rootless=True`` a search is built without calling any kernel (no root node, a
        placeholder prior table): the warm-up of :mod:`arboretum._compile` compiles the search
        kernel from such a search first, while its helper process compiles the node kernels that
        building a real search and ``expand_node`` need.  Such a search cannot run.
        """
        K.run_search(
            self.data, self.model, self.tables, self.graph, self.bufs, self.root_words,
            0, self.tie_rule, self.ub_inf, self.probe, 0,
        )

    def step(self, max_iter: int, start: int = 0, start_words: np.ndarray | None = None) -> int:
        """Run at most ``max_iter`` expansions; return a status.

        The descents start at OR node ``start`` (samples ``start_words``),
        the root by default; ``STATUS_SOLVED`` means that node is solved.
        ``STATUS_GROW`` asks the caller to grow the arrays (:meth:`_grow`).
        """
        self._check_rooted()
        words = self.root_words if start_words is None else start_words
        done = 0
        while done < max_iter:
            before = self.n_expansions_
            status = self._chunk(max_iter - done, start, words)
            done += self.n_expansions_ - before
            if status in (K.STATUS_GROW, K.STATUS_SOLVED):
                return status
        return K.STATUS_BUDGET

    def _focus_round(self) -> list[tuple[int, np.ndarray]]:
        """Targets of one round of focused search: the incumbent's subproblems, smallest first, then the root."""
        nodes = [t for t in self.incumbent_nodes() if t[0] != 0]
        nodes.sort(key=lambda t: float(self.or_counts[t[0]].sum()))
        return nodes + [(0, self.root_words)]

    def run(
        self,
        max_expansions: int | None = None,
        time_limit: float | None = None,
        memory_limit: int | None = None,
        callback: Callable[["AndOrSearch"], None] | None = None,
        callback_interval: float = 1.0,
        focus: bool = True,
    ) -> SearchResult:
        """Search until solved or a limit is reached; return the bounds and why it stopped.

        ``memory_limit`` is in bytes and caps the search graph's arrays: the
        search stops (returning its incumbent) rather than grow past it.
        The time limit is checked, and a row of :attr:`history` recorded
        when the bounds changed, between chunks of about ``CHUNK_SHARE``
        (1/50) of the iterations run so far (at least ``CHUNK_MIN``), so the
        history is about evenly spread on a logarithmic axis and the same
        data and limits give the same search; a chunk that takes longer than
        1/50 of the limit (or ``CHUNK_SECONDS_MAX``) halves the largest
        chunk, so the limit is honoured closely.

        With ``focus`` (default), the search runs in rounds.  A round visits
        the unsolved internal nodes of the current incumbent tree, smallest
        subproblem first, and the root last; each gets ``budget`` iterations
        (expansions or probes) of best-first search whose descents start at
        that node, and ``budget`` doubles every round (starting at
        ``FOCUS_BUDGET``).  The root gets as many iterations as the round's
        subproblems together (``FOCUS_SHARE``): half of the work goes to
        the plain search from the root.  Solving a subproblem of the
        incumbent puts its optimal subtree in place, so the incumbent improves far sooner than
        when every descent starts at the root, and the subproblems' solved
        bounds raise the root's bound too.  Only nodes of the same graph are
        expanded and every bound is propagated to all ancestors, so the
        certificate and the optimum are those of the plain search
        (``focus=False``, the paper's order).
        """
        self._check_rooted()
        t0 = time.perf_counter()
        self.history.start(*self._state())
        chunk = floor = 1  # the least chunk: doubled up to CHUNK_MIN by fast chunks
        cap = 1 << 20  # the largest chunk; halved by slow chunks
        total = 0  # iterations (expansions and probes) of this run
        longest = CHUNK_SECONDS_MAX
        if time_limit is not None:
            longest = min(longest, max(0.005, time_limit / 50))
        last_cb = t0
        reason = "optimal"
        queue: list[tuple[int, np.ndarray]] = []
        node, words, left = 0, self.root_words, 0
        budget = FOCUS_BUDGET // 2
        spent_round = 0
        while True:
            if self.solved:
                reason = "optimal"
                break
            if max_expansions is not None and self.n_expansions_ >= max_expansions:
                reason = "max_expansions"
                break
            now = time.perf_counter()
            if time_limit is not None and now - t0 >= time_limit:
                reason = "time_limit"
                break
            if focus:
                while left <= 0 or not (self.or_lb[node] < self.or_ub[node]):
                    if not queue:
                        queue = self._focus_round()
                        budget *= 2
                        spent_round = 0
                    node, words = queue.pop(0)
                    left = budget
                    if node == 0:  # the root gets (1 - FOCUS_SHARE) of the round's work
                        left = max(budget, int(spent_round * (1.0 - FOCUS_SHARE) / FOCUS_SHARE))
            n = chunk
            if focus:
                n = int(min(n, left))
            if max_expansions is not None:
                n = min(n, max_expansions - self.n_expansions_)
            t1 = time.perf_counter()
            before = int(self.counters[K.C_N_EXP] + self.counters[K.C_N_PROBE])
            status = self._chunk(n, node, words if focus else self.root_words)
            did = max(1, int(self.counters[K.C_N_EXP] + self.counters[K.C_N_PROBE]) - before)
            left -= did
            spent_round += did
            total += did
            dt = time.perf_counter() - t1
            if status == K.STATUS_GROW:
                # stop now rather than grow past the limit's tolerance (10% + 0.5 s), keeping 0.25 s
                # of it for what follows the search
                if time_limit is not None and self._grow_would_pass(t0 + 1.1 * time_limit + 0.25):
                    reason = "time_limit"
                    break
                if not self._try_grow(memory_limit):
                    reason = "memory_limit"
                    break
                continue
            if dt > longest:
                cap = max(1, n // 2)
            elif floor < CHUNK_MIN and dt < longest / 4:
                floor *= 2
            chunk = min(cap, max(floor, int(CHUNK_SHARE * total)))
            if callback is not None and time.perf_counter() - last_cb >= callback_interval:
                callback(self)
                last_cb = time.perf_counter()
        elapsed = time.perf_counter() - t0
        ub, lb = self.upper_bound, self.lower_bound
        # A certificate needs finite bounds (-inf >= -inf would certify an overflowed search).
        optimal = bool(
            math.isfinite(lb) and math.isfinite(ub) and (lb >= ub or ub - lb <= 1e-9 * max(1.0, abs(ub)))
        )
        if optimal:
            reason = "optimal"
        return SearchResult(
            lower_bound=min(lb, ub),
            upper_bound=ub,
            optimal=optimal,
            stop_reason=reason,
            n_expansions=self.n_expansions_,
            n_probes=int(self.counters[K.C_N_PROBE]),
            n_or_nodes=int(self.counters[K.C_N_OR]),
            n_and_nodes=int(self.counters[K.C_N_AND]),
            search_time=elapsed,
            peak_bytes=self.peak_bytes,
            history=self.history.to_array(*self._state()),
        )

    def incumbent_nodes(self) -> list[tuple[int, np.ndarray]]:
        """The unsolved internal OR nodes of the incumbent tree, as ``(node, samples)``.

        Internal means split in :meth:`solution`'s tree: an expanded node
        whose best-UB split beats its leaf, or an unexpanded node with a
        virtual incumbent.  Unsolved means ``LB < UB``.  The root comes first.
        """
        out = []
        stack = [(0, self.root_words)]
        while stack:
            o, words = stack.pop()
            if o < 0 or not (self.or_lb[o] < self.or_ub[o]):
                continue
            if self.or_expanded[o]:
                a, ub_a = self._best_ub_and(o)
                if a < 0 or self.or_leaf[o] <= ub_a:
                    continue
                out.append((o, words))
                f = int(self.and_feature[a])
                stack.append((int(self.and_child1[a]), words & self.M1[f]))
                stack.append((int(self.and_child0[a]), words & ~self.M1[f]))
            elif self.or_best[o] <= -2 and self.or_ub[o] < self.or_leaf[o]:
                out.append((o, words))  # a virtual incumbent: a focused search expands it first
        return out

    def _has_room(self) -> bool:
        F = self.n_features
        c = self.counters
        return (
            c[K.C_N_OR] + 2 * F <= self.or_lb.shape[0]
            and c[K.C_N_AND] + F <= self.and_feature.shape[0]
            and 2 * (c[K.C_HT_USED] + 2 * F) <= self.ht_val.shape[0]
        )

    def seed(
        self,
        splits,
        max_expansions: int | None = None,
        memory_limit: int | None = None,
        deadline: float | None = None,
    ) -> bool:
        """Put a candidate tree into the search graph by expanding the OR nodes along it.

        Every node of the candidate and every pruning of it then has its exact
        cost as an upper bound, so the incumbent is at least as good as the best
        of them; the certificate and the optimum are unaffected (only nodes of
        the same graph are expanded, in another order).

        Parameters
        ----------
        splits : callable
            ``splits(path) -> feature or -1 (leaf)`` where ``path`` is the tuple
            of ``(feature, side)`` pairs from the root (see
            :mod:`arboretum.maptree.incumbents`).
        max_expansions : int, optional
            Stop seeding after this many expansions in total.
        memory_limit : int, optional
            Stop seeding rather than grow the graph past this many bytes.
        deadline : float, optional
            ``time.perf_counter()`` value at which seeding stops (checked
            before every expansion, so it is honoured to within one).

        Returns
        -------
        bool
            True when the whole candidate was put in; False when a limit
            stopped seeding first (the nodes expanded until then stay, so the
            incumbent is at least as good as the best pruning of the part of
            the candidate put in).
        """
        self._check_rooted()
        self.history.start(*self._state())
        complete = True
        stack = [(0, self.root_words.copy(), ())]
        while stack:
            o, words, path = stack.pop()
            f = splits(path)
            if f < 0:
                continue
            if not self.or_expanded[o]:
                if (
                    (max_expansions is not None and self.n_expansions_ >= max_expansions)
                    or (deadline is not None and time.perf_counter() >= deadline)
                    or (not self._has_room() and not self._try_grow(memory_limit))
                ):
                    complete = False
                    break
                K.expand_node(o, words, self.data, self.model, self.tables, self.graph, self.bufs, self.ub_inf)
                self.n_expansions_ = int(self.counters[K.C_N_EXP])
            found = self._and_for_split(o, words, f)
            if found is None:  # not a valid split here: the candidate is degenerate below
                continue
            child0, child1 = found
            m = self.M1[f]
            stack.append((child1, words & m, path + ((f, 1),)))
            stack.append((child0, words & ~m, path + ((f, 0),)))
        self.history.observe(*self._state())
        return complete

    def _and_for_split(self, o: int, words: np.ndarray, f: int) -> tuple[int, int] | None:
        """The children ``(x_f = 0 side, x_f = 1 side)`` of expanded OR node ``o`` (samples
        ``words``) through the split on ``f``, or None when ``f`` is not a valid split there.

        The AND node stored for ``f`` may be that of an earlier feature with the same
        partition of ``words``, possibly with the sides swapped (``_kernels.expand_node``)."""
        s0, c = int(self.or_and_start[o]), int(self.or_and_count[o])
        for a in range(s0, s0 + c):
            g = int(self.and_feature[a])
            diff = self.M1[f] ^ self.M1[g]
            if not np.any(words & diff):  # x_f = x_g on the node
                return int(self.and_child0[a]), int(self.and_child1[a])
            if not np.any(words & ~diff):  # x_f = 1 - x_g on the node
                return int(self.and_child1[a]), int(self.and_child0[a])
        return None

    # -- reading the answer ------------------------------------------------------------------
    def _best_ub_and(self, o: int) -> tuple[int, float]:
        """The AND child of ``o`` with the smallest UB (lowest feature on ties), and that UB."""
        s, c = int(self.or_and_start[o]), int(self.or_and_count[o])
        if c == 0:
            return -1, math.inf
        a = np.arange(s, s + c)
        ubs = self.or_pen[o] + self.or_ub[self.and_child0[a]] + self.or_ub[self.and_child1[a]]
        j = int(np.argmin(ubs))  # first minimum = lowest feature (AND nodes are in feature order)
        return s + j, float(ubs[j])

    def _builder(self, classes, feature_names) -> TreeBuilder:
        """An empty tree of this search's task."""
        return TreeBuilder(self.n_features, classes=classes, feature_names=feature_names)

    def _node_data(self, o: int, value_fn: Callable | None) -> tuple[np.ndarray, np.ndarray]:
        """``(counts, value)`` of OR node ``o`` for the returned tree."""
        c = self.or_counts[o].astype(np.float64)
        if value_fn is None:
            return c, (c + self.rho) / (c.sum() + self.rho.sum())
        return c, value_fn(c)

    def solution(
        self, classes=None, feature_names=None, value_fn: Callable | None = None
    ) -> Tree:
        """The incumbent tree: the minimum-UB partial solution of the explicit graph.

        A leaf wins ties against splits.  An unexpanded node is a leaf, or, when
        a probe found a split that beats its leaf (a virtual incumbent, see
        ``_kernels._probe``), that split with its children's incumbents.  The
        tree's cost is at most the root's UB (equal unless a virtual split's
        stored children improved after the probe).  Leaves
        carry the training class counts and ``value_fn(counts)`` (default: the
        posterior mean ``(c + rho) / (n + sum(rho))``); for
        :class:`RegressionSearch` the weighted number of samples and the
        posterior mean of the leaf mean.
        """

        def split_of(o: int, words: np.ndarray, depth: int, path: tuple) -> tuple[int, int, int] | None:
            if o < 0:
                return None
            if self.or_expanded[o]:
                a, ub_a = self._best_ub_and(o)
                if a >= 0 and not (self.or_leaf[o] <= ub_a):
                    return int(self.and_feature[a]), int(self.and_child0[a]), int(self.and_child1[a])
            elif self.or_best[o] <= -2 and self.or_ub[o] < self.or_leaf[o]:
                # A virtual incumbent found by a probe: split on f; each child is its stored
                # incumbent if the graph has it, else a leaf (see _kernels._probe).
                f = -2 - int(self.or_best[o])
                found = []
                for child_words in (words & ~self.M1[f], words & self.M1[f]):
                    h1, h2 = (np.uint64(h) for h in K.hash_words128(child_words))
                    child, _ = K.ht_find(h1, h2, depth + 1, self.ht_val, self.or_h1, self.or_h2, self.or_depth)
                    found.append(int(child))
                return f, found[0], found[1]
            return None

        return self._build_tree(split_of, classes, feature_names, value_fn)

    def candidate_tree(
        self, splits, classes=None, feature_names=None, value_fn: Callable | None = None
    ) -> Tree:
        """The tree of a candidate's split function (as for :meth:`seed`), without the graph.

        Its leaves carry the same data as those of :meth:`solution`; no node
        is expanded, so it costs one pass over each node's samples.  Used to
        score a candidate that seeding could not put in whole (a limit
        stopped it), so that the answer is never worse than the candidate.
        """
        return self._build_tree(
            lambda o, words, depth, path: None if (f := splits(path)) < 0 else (f, -1, -1),
            classes, feature_names, value_fn,
        )

    def _build_tree(self, split_of: Callable, classes, feature_names, value_fn: Callable | None) -> Tree:
        """A tree from the root down: ``split_of(o, words, depth, path)`` gives the split of the node
        with OR node ``o`` (-1 when not in the graph) and samples ``words`` as ``(feature, OR node
        of the x_f = 0 side, OR node of the x_f = 1 side)`` (-1: not in the graph), or None for a
        leaf; ``path`` is the ``(feature, side)`` pairs from the root."""
        b = self._builder(classes, feature_names)
        # (or node or -1 for a node not in the graph, its samples, depth, path, parent tree node, is_right)
        stack = [(0, self.root_words, 0, (), -1, False)]
        pending: dict[int, list] = {}
        tmp = int(self.counters[K.C_N_OR])  # a free row for the statistics of nodes not in the graph
        while stack:
            o, words, depth, path, parent, is_right = stack.pop()
            if o < 0:
                K.write_node_stats(self.model, words, self.graph, tmp)
            counts, value = self._node_data(tmp if o < 0 else o, value_fn)
            node = b.add_node(counts, value, depth)
            if parent >= 0:
                pending[parent][1 if is_right else 0] = node
                left, right, feature = pending[parent]
                if left is not None and right is not None:
                    b.set_split(parent, BINARY, feature, 0.5, left, right)
            split = split_of(o, words, depth, path)
            if split is None:
                continue
            f, child0, child1 = split
            pending[node] = [None, None, f]
            m = self.M1[f]
            stack.append((child1, words & m, depth + 1, path + ((f, 1),), node, True))
            stack.append((child0, words & ~m, depth + 1, path + ((f, 0),), node, False))
        return b.build()

    # -- checking --------------------------------------------------------------------------
    def check_invariants(self, rtol: float = 1e-9) -> None:
        """Assert the bound invariants of spec §4.3 on every expanded OR node.

        INV-UB: UB = min(leaf cost, min over AND children of UB), up to rounding;
        INV-LB: LB >= min(leaf cost, min over AND children of LB);
        INV-ORD: LB <= UB (up to rounding).  Unexpanded nodes: LB <= UB.
        Raises AssertionError naming the first violating node.
        """
        n_or = int(self.counters[K.C_N_OR])
        lb, ub, leaf = self.or_lb[:n_or], self.or_ub[:n_or], self.or_leaf[:n_or]
        tol = rtol * np.maximum(1.0, np.abs(np.where(np.isfinite(ub), ub, 0.0)))
        bad = np.flatnonzero(lb > ub + tol)
        assert bad.size == 0, f"INV-ORD violated at OR node {bad[0]}: LB {lb[bad[0]]} > UB {ub[bad[0]]}"
        for o in np.flatnonzero(self.or_expanded[:n_or]):
            s, c = int(self.or_and_start[o]), int(self.or_and_count[o])
            a = np.arange(s, s + c)
            pen = self.or_pen[o]
            fresh_lb = min([leaf[o]] + list(pen + lb[self.and_child0[a]] + lb[self.and_child1[a]]))
            fresh_ub = min([leaf[o]] + list(pen + ub[self.and_child0[a]] + ub[self.and_child1[a]]))
            # Equal up to rounding: the kernels add the same three terms in another order.
            assert ub[o] == fresh_ub or abs(ub[o] - fresh_ub) <= tol[o], (
                f"INV-UB violated at OR node {o}: {ub[o]} != {fresh_ub}"
            )
            assert lb[o] >= fresh_lb - tol[o], f"INV-LB violated at OR node {o}: {lb[o]} < {fresh_lb}"


def _resized(a: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros((n,) + a.shape[1:], dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


class RegressionSearch(AndOrSearch):
    """Best-first AND/OR search for the MAP regression tree (normal-inverse-gamma leaves).

    The same search, graph, limits and bookkeeping as :class:`AndOrSearch`;
    a node's leaf statistics are the weighted sums ``(n, sum w (y - mu0),
    sum w (y - mu0)**2, sum w q, sum t)`` over its samples (``or_stats``), its leaf
    cost is ``-log p_leaf - log p(y_L)`` with the closed-form marginal of
    :meth:`arboretum.bayes.NIGPrior.log_marginal`, and its lower bound at
    creation is ``min(leaf cost, -log p_split(d) + [prior terms] + max(B[n], L0[n] + q, t))``
    with the tables and the proofs of :func:`arboretum.maptree.bounds.nig_bound_tables`
    and :func:`arboretum.maptree.bounds.leaf_share_terms`.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Binary (0/1) features.
    y : ndarray of shape (n_samples,)
        Real targets.
    alpha, beta : float
        Chipman prior: ``p_split(d) = alpha * (1 + d) ** -beta``.
    prior : NIGPrior, optional
        Leaf prior; default ``NIGPrior.from_data(y, sample_weight)``.
    ub_semantics, tie_rule, probe, max_depth :
        As in :class:`AndOrSearch`.
    sample_weight : ndarray of non-negative int, optional
        Integer replication weights; zero-weight samples must be removed by
        the caller.
    leaf_shares : bool, default=True
        Use the leaf-share bound (:func:`~arboretum.maptree.bounds.leaf_share_terms`), the
        tightest of the split bound's three terms; without it the bound is looser and still
        admissible.  Computing it costs O(samples x sizes) (0.5 s on 500,000 samples).
    """

    def __init__(
        self,
        X: np.ndarray,
        y: np.ndarray,
        alpha: float = 0.95,
        beta: float = 0.5,
        prior: NIGPrior | None = None,
        *,
        ub_semantics: str = "leaf",
        tie_rule: str = "paper",
        sample_weight: np.ndarray | None = None,
        probe: bool = True,
        max_depth: int | None = None,
        leaf_shares: bool = True,
        _rootless: bool = False,
    ) -> None:
        self._rootless = _rootless  # see AndOrSearch.compile_kernel
        leaf_shares = leaf_shares and not _rootless
        w = self._setup(X, alpha, beta, ub_semantics, tie_rule, sample_weight, probe, max_depth)
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        self.y = y
        self.prior = NIGPrior.from_data(y, w) if prior is None else prior
        wf = w.astype(np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            yc = y - self.prior.mean
            self.R = np.column_stack([wf, wf * yc, wf * yc * yc])
            finite = bool(np.all(np.isfinite(self.R)))
            if finite:
                q = group_spread_terms(y, w, self.row_group, self.prior)
                t = (
                    leaf_share_terms(y, w, self.row_group, self.prior) if _LEAF_SHARES and leaf_shares
                    else np.full(len(y), -np.inf)
                )
                self.R = np.ascontiguousarray(np.column_stack([self.R, wf * q, t]))
                B, L0 = nig_bound_tables(y, w, self.prior)
                finite = bool(np.all(np.isfinite(self.R[:, :4])) and np.all(np.isfinite(B)) and np.all(np.isfinite(L0)))
        if not finite:
            raise ValueError(
                "the regression targets overflow the search's sums or likelihoods at this scale "
                f"(max |y - prior mean| = {float(np.abs(yc).max())!r}, prior scale {self.prior.scale!r}); "
                "standardise y first (MAPTreeRegressor does)"
            )
        # normal-inverse-gamma leaves (see _kernels)
        self.model = K.NIGModel(
            self.R, B, L0, float(self.prior.shape), float(self.prior.scale), float(self.prior.kappa)
        )
        self._start(n_counts=0, n_stats=5)

    def _builder(self, classes, feature_names) -> TreeBuilder:
        return TreeBuilder(self.n_features, task="regression", feature_names=feature_names)

    def _node_data(self, o: int, value_fn: Callable | None) -> tuple[np.ndarray, np.ndarray]:
        n, s1 = float(self.or_stats[o, 0]), float(self.or_stats[o, 1])
        if value_fn is not None:
            return np.array([n]), np.atleast_1d(value_fn(self.or_stats[o].copy()))
        # Posterior mean of mu: (kappa mu0 + sum w y) / (kappa + n) = mu0 + sum w (y - mu0) / (kappa + n).
        return np.array([n]), np.array([self.prior.mean + s1 / (self.prior.kappa + n)])


# -- compiling the kernels before a fit's clock starts (arboretum._compile) ------------------------
# On a cold cache the warmer compiles the search kernel first, from a search built without calling
# any kernel (its compile reaches expand_node last), while the helper process builds a real search
# and seeds it: the node kernels and expand_node, which the warmer then loads from the cache.
def _tiny_seed(path: tuple) -> int:
    """The seed tree of the warm-ups: feature ``d`` at depth ``d``, two levels."""
    return len(path) if len(path) < 2 else -1


def _exercise(search: AndOrSearch) -> None:
    """Call every kernel a fit calls: seeding, focused and plain runs, growing, the answer."""
    search.seed(_tiny_seed)
    search.run(max_expansions=24, focus=True)
    search._grow((2 * search.or_lb.shape[0], 2 * search.and_feature.shape[0], 2 * search.ht_val.shape[0]))
    search.run(max_expansions=200)
    search.solution()


def _tiny_classification(rootless: bool = False) -> AndOrSearch:
    X, y = tiny_problem()
    return AndOrSearch(X, y, 2, sample_weight=np.arange(48) % 3 + 1, _rootless=rootless)


def _tiny_regression(rootless: bool = False) -> RegressionSearch:
    X, y = tiny_problem()
    return RegressionSearch(X, y + 0.1 * np.arange(48), sample_weight=np.arange(48) % 3 + 1, _rootless=rootless)


def _helper(search: AndOrSearch) -> None:
    """The helper process's part, in the order the warmer's compile of the search kernel reaches
    them last: the node kernels (building the search), ``expand_node`` (seeding), then the two
    kernels the depth-1 probe calls (compiled for the types it passes, without running them)."""
    from numba import typeof

    from .._numba import argsort_stable

    search.seed(_tiny_seed)
    n, tmp, d = np.int64(search.n_samples), np.int64(1), np.int64(1)
    args = (search.model, search.scratch, n, search.dup_group, search.group_size, search.or_counts, search.or_stats,
            tmp, d, search.log_ps, search.log_pstop, search.tables.E, search.tables.logv, search.ub_inf,
            search.tables.max_depth)
    K._bounds_from_stats.compile(tuple(typeof(a) for a in args))
    argsort_stable.compile((typeof(np.zeros(2)),))


@register(
    "maptree-classification",
    lambda: [(K.run_search, "DirichletModel"), (K.expand_node, "DirichletModel")],
    llvm=LEAN,
    helper=lambda: _helper(_tiny_classification()),
)
def _warm_classification() -> None:
    _tiny_classification(rootless=True).compile_kernel()
    _exercise(_tiny_classification())


@register(
    "maptree-regression",
    lambda: [(K.run_search, "NIGModel"), (K.expand_node, "NIGModel")],
    llvm=LEAN,
    helper=lambda: _helper(_tiny_regression()),
)
def _warm_regression() -> None:
    _tiny_regression(rootless=True).compile_kernel()
    _exercise(_tiny_regression())
