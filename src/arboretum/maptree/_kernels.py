"""Numba kernels of the MAPTree AND/OR best-first search.

Everything here takes plain NumPy arrays and numbers, grouped in named tuples
(numba compiles them to structs and the kernels read their fields by name):

* :class:`Data` ``(M1, dup_group, group_size)``: the binary features as
  packed columns and the groups of identical feature rows;
* the leaf model, :class:`DirichletModel` or :class:`NIGModel` (below);
* :class:`Tables`: the prior tables (``log p_split``, ``log p_stop``,
  ``log n``, and the prior bounds ``E`` and ``logv`` of the split terms);
* :class:`Graph`: the search graph, a struct of arrays (OR nodes, AND nodes,
  parent edges, hash table, ``counters``);
* :class:`Scratch`: work buffers.

The search state is owned by :class:`arboretum.maptree.search.AndOrSearch`,
which grows the arrays between kernel calls (and then builds a new
:class:`Graph` of the new arrays); a kernel call runs at most ``max_iter``
expansions and returns a status code.

Costs are negative log probabilities (``cost = -log P(T, Y | X)``), so the
search minimises.  Notation follows ``spec-000-maptree.md``:

* an OR node is a subproblem ``(I, d)``: the samples ``I`` (a packed bitset,
  never stored, rebuilt by replaying the split path from the root) at depth
  ``d``;
* an AND node is a split of an OR node on a valid feature ``f``, with OR
  children for ``x_f = 0`` (child0) and ``x_f = 1`` (child1);
* ``LB``/``UB`` of an AND node are derived from its children with one
  floating-point expression, ``pen + bound(child0) + bound(child1)``, so that
  "both children solved" implies ``LB == UB`` exactly.

The leaf model is a tuple chosen by the caller, and its *type* selects the
leaf model at compile time (``numba.extending.overload`` on
:func:`_node_stats`, :func:`_leaf_nll` and :func:`_split_bound`), so each task
gets its own specialisation of the search kernels and the classification
path contains no regression code at all:

* :class:`DirichletModel` ``(Y, G, Gsum, lconst)``: Dirichlet-multinomial
  leaves (classification).  A node's statistics are its integer class counts
  ``or_counts[o]``, obtained by popcounts against the class/weight bit planes
  ``Y``; ``G, Gsum, lconst`` are the log-gamma tables of
  :func:`arboretum._numba.dirichlet_tables`, read by
  :func:`arboretum._numba.dm_log_lik`.
* :class:`NIGModel` ``(R, B, L0, shape, scale, kappa)``: normal-inverse-gamma
  leaves (regression).  A node's statistics ``or_stats[o] = (n, s1, s2, q, t)``
  are the sums over its samples of the rows of ``R`` (weight ``w``,
  ``w (y - mu0)``, ``w (y - mu0)**2``, the group term ``w q`` of
  :func:`arboretum.maptree.bounds.nig_bound_tables` and the leaf share ``t`` of
  :func:`arboretum.maptree.bounds.leaf_share_terms`), obtained by iterating the set
  bits of the node's sample set.  ``B[n]`` is the split bound and ``L0[n]``
  the perfect-leaf cost; ``shape, scale, kappa`` are the prior's.

The statistics array of the other task has zero columns.

Subproblems are identified by depth plus a 128-bit *non-linear* hash of the
sample set (two independent 64-bit mixers summed over the non-zero words,
:func:`arboretum._numba.hash_words128`).
The paper's linear polynomial hash collides by construction (spec §3.8); this
one has no known structured collisions, so a false merge has probability of
order 2**-128 per pair of subsets.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np
from numba import njit
from numba.core.errors import NumbaIRAssumptionWarning
from numba.extending import overload

from .._numba import argsort_stable, ctz64, dm_log_lik, hash_words128, popcount64

# Inlining the small bound helpers (``inline="always"``), which themselves inline the leaf-model
# overloads, makes numba's pedantic IR check report that a renamed local of the inner inlined
# function "is not in scope" when the kernels are compiled (numba 0.68).  The generated code
# is correct (every oracle test runs through it); the check only compares variable names across
# the two inlining passes.  Only that message, for these helpers, is silenced.
warnings.filterwarnings(
    "ignore",
    message=r"variable '_(leaf_nll|node_stats|split_bound)_impl__locals",
    category=NumbaIRAssumptionWarning,
)

# Status codes returned by :func:`run_search`.
STATUS_BUDGET = 0  # ``max_iter`` expansions done, not solved yet
STATUS_SOLVED = 1  # LB >= UB at the root: certified optimum
STATUS_GROW = 2  # the caller must grow the node arrays before continuing
STATUS_INTERNAL_ERROR = -1  # an invariant of the search was violated

# Indices into the ``counters`` array (``N_COUNTERS`` entries).
C_N_OR, C_N_AND, C_N_EXP, C_HT_USED, C_STAMP, C_N_PROBE = 0, 1, 2, 3, 4, 5
N_COUNTERS = 6

# How many splits :func:`_probe2` evaluates to depth 2 (best cheap bound first); the others
# count with their cheap bound.  Measured on audiology, vote and lymph: 2 gives the fastest
# bound progress (0 loses the depth-2 term, 8 or all spend too long per probe).
PROBE2_ROWS = 2
# Nodes of more samples skip the depth-2 probe: its O(|V|^2 n / 64) pair counts cost more search
# time than they save there.  The value comes from the earlier per-data-set rule (measured on
# mushroom and kr-vs-kp, where depth-2 probes of every node lost); it was not re-tuned per node.
PROBE2_MAX_SAMPLES = 2048

_DEPTH_SALT = np.uint64(0xA0761D6478BD642F)

# Inlining policy (compile time, issue 19): numba's ``inline="always"`` copies a helper's IR into
# every call site and types it again there, so a helper inlined at k sites is compiled k times.
# Only the small helpers of the innermost loops are inlined (hash-table probes, popcount sweeps,
# the split-prior terms); the leaf-model operations and the node bounds (``new_or_node``,
# ``_bounds_from_stats``, ``_sized_bound``, the ``_leaf_nll``/``_node_stats``/``_split_bound``
# overloads...) are ordinary calls, which LLVM still inlines where it pays.  Measured on the
# classification path (CPU seconds, cold cache, loaded 2-core machine): compilation 36.3 -> 24.9 s;
# primary-tumor 3.26 -> 2.83 s and vote 6.81 -> 6.71 s to certify.  Each kernel is called with one
# set of argument types (``np.int64(...)``, ``np.uint8(...)`` at the call sites where an int32 count
# or a literal would otherwise make numba compile a second specialisation).
#
# Turning the helpers into ``numba.extending.register_jitable`` (or ``overload``) functions does
# not cut compile time (tried for issue 19): numba compiles an overload's implementation as a
# dispatcher of its own too (``typing.templates._OverloadFunctionTemplate._build_impl``), and a
# library linked into a caller is finalised first (``codegen.CPUCodeLibrary.add_linking_library``
# and ``_get_module_for_linking`` call ``_ensure_finalized``), so each helper still gets its own
# module optimisation and machine code.  Measured (cold cache, CPU s, loaded machine, 2 runs):
# classification 17.6/17.4 -> 17.1/17.1 with the seven plain helpers converted, 60 finalisations
# either way; regression 11.2/11.4 -> 11.2/11.0.  Inlining the single-call-site helpers
# (``_sized_bound``, ``_node_columns``) saves nothing either (17.3 s); inlining the overloads with a
# single call site (``_valid_split_stats``, ``_side_stats``, ``_sibling_stats``, ``_lookahead``)
# costs 13 s more (30.5 s).

# ``_probe`` is the exception among the large kernels: it has one call site (in ``run_search``) and
# is inlined there, which saves its own module (a library of its own is optimised and compiled to
# machine code once for itself and again inside each caller that links it).  Measured (cold
# warm-up, wall s, quiet 2-core machine, 2 runs each): classification 12.4/12.5 -> 12.0/12.0,
# regression 8.3 -> 7.9; certification times unchanged (``compare_versions.py``, 3 repeats:
# hepatitis 1.01x, primary-tumor 0.99x, vote 0.95x).  Inlining ``expand_node`` (also called from
# Python when seeding) or ``_propagate`` (two callers) costs more than it saves (14.3 s, 12.7 s).
# The kernels bind ``nodes = graph.nodes`` once rather than reading ``graph.nodes.x`` field by
# field: every ``graph.nodes`` temporary counts references on all of its arrays (19% less LLVM
# IR on the classification path; compile time unchanged).

# Kernels called only from other kernels and calling no ``overload`` (``_propagate``,
# ``_node_columns``, ``_sized_bound``) are compiled without a CPython wrapper
# (``no_cpython_wrapper=True``, as numba compiles every ``overload``): the wrapper unboxes each array
# of the named-tuple arguments, half of ``_propagate``'s module.  Measured on the cold warm-ups (LLVM
# IR of all final modules, deterministic): classification 4.46M -> 4.31M characters, regression
# 2.99M -> 2.90M.  Not on ``_probe`` and ``_bounds_from_stats``, though their wrappers are larger:
# numba compiles an ``overload`` again for each set of caller flags, so the leaf-model overloads they
# call would be compiled twice (regression: 3.9% more Python work for 5.8% less IR).  The tests call
# ``_node_columns`` through a jitted shim.

# Named tuples are for the kernels and the functions called once per iteration; the small
# helpers called per split or per child (``ht_find``, the leaf-model operations, the bounds)
# take the few arrays they read.  Numba counts references per array: binding a named tuple of
# ``k`` arrays to an inlined helper's argument costs ``k`` reference increments and decrements,
# which made the depth-1 probe three times slower when the helpers took the whole ``Graph``.
#
# The kernels read the fields of these named tuples one per statement (``or_lb = graph.nodes.or_lb``),
# never several in one tuple assignment: with numba 0.68, a function that unpacks four or more
# fields at once (``a, b, c, d = g.a, g.b, g.c, g.d``) and inlines an ``overload`` drops the
# writes to an unpacked array that is not read afterwards (dead-code elimination does not see
# that the array aliases an argument).  See :mod:`arboretum._numba`.


class Data(NamedTuple):
    """The training data as the search sees it."""

    M1: np.ndarray  #: (F, W) uint64: the samples with x_f = 1, per feature
    dup_group: np.ndarray  #: (n,) int64: the group of rows equal to the sample's, -1 when its row is unique
    group_size: np.ndarray  #: (G,) int64: the number of samples of each group of 2+ equal rows; (0,): none


class Tables(NamedTuple):
    """The prior tables of the search's costs."""

    log_ps: np.ndarray  #: log p_split(d), d = 0 .. F + 1
    log_pstop: np.ndarray  #: log(1 - p_split(d))
    log_int: np.ndarray  #: log(v), v = 0 .. F (the split penalty's log|V(I)|)
    E: np.ndarray  #: E[d, m], :func:`subtree_prior_bounds`
    logv: np.ndarray  #: logv[m], :func:`split_count_bounds`
    gmax: int  #: the most samples sharing one feature row
    max_depth: int  #: nodes at this depth are leaves (the ``max_depth`` constraint; a huge value: none)


class Nodes(NamedTuple):
    """The OR nodes' table: what a lookup, a bound or a probe reads.

    ``or_counts`` (classification) or ``or_stats`` (regression) holds a node's
    leaf statistics (the other has zero columns).  ``ht_val`` is the
    open-addressing table of node ids keyed by ``(or_h1, or_h2, or_depth)``;
    ``counters`` the ``C_*`` counts of the whole graph.
    """

    or_depth: np.ndarray
    or_counts: np.ndarray
    or_stats: np.ndarray
    or_lb: np.ndarray
    or_ub: np.ndarray
    or_h1: np.ndarray
    or_h2: np.ndarray
    ht_val: np.ndarray
    counters: np.ndarray


class Links(NamedTuple):
    """The AND/OR structure and the search's bookkeeping: what expansions and propagation add.

    An expanded OR node ``o`` has the AND children ``or_and_start[o] ..
    or_and_start[o] + or_and_count[o] - 1`` (one per kept split, feature
    ``and_feature``), its exact leaf cost ``or_leaf`` and split penalty
    ``or_pen``.  An AND node ``a`` has the parent ``and_parent[a]`` and the
    parent edges ``2 a`` (to ``and_child0``) and ``2 a + 1`` (to
    ``and_child1``); the edges into an OR node form a list through
    ``or_first_edge`` and ``edge_next``.
    """

    or_leaf: np.ndarray
    or_pen: np.ndarray
    or_expanded: np.ndarray
    or_and_start: np.ndarray
    or_and_count: np.ndarray
    or_first_edge: np.ndarray
    or_stamp: np.ndarray
    or_best: np.ndarray
    or_flags: np.ndarray
    and_feature: np.ndarray
    and_parent: np.ndarray
    and_child0: np.ndarray
    and_child1: np.ndarray
    edge_next: np.ndarray


class Graph(NamedTuple):
    """The explicit AND/OR graph, a struct of arrays in two parts (each one array per field).

    A function that only reads the node table takes ``graph.nodes``: numba counts
    references per array, so passing the whole graph to a function called per
    probe would cost a reference increment and decrement for every array.
    """

    nodes: Nodes
    links: Links


class Scratch(NamedTuple):
    """Work buffers of the kernels (``buf_a``/``buf_b`` have the OR nodes' capacity)."""

    buf_a: np.ndarray  #: int32: one level of nodes in :func:`_propagate`
    buf_b: np.ndarray  #: int32: the next level
    words: np.ndarray  #: (W,) uint64: the sample set of the current node
    scratch: np.ndarray  #: (W,) uint64: a child's sample set
    valid_f: np.ndarray  #: (F,) int32: the valid splits of a node
    n1_buf: np.ndarray  #: (F,) int32: their x_f = 1 side sizes


@njit(cache=True, inline="always")
def _slot(h1, d, mask):
    return np.int64((h1 ^ (np.uint64(d) * _DEPTH_SALT)) & mask)


@njit(cache=True, inline="always")
def ht_find(h1, h2, d, ht_val, or_h1, or_h2, or_depth):
    """Look up the subproblem ``(h1, h2, d)``; return ``(node_id or -1, slot)``.

    The table ``ht_val`` (a :class:`Graph`'s) holds only node ids (open
    addressing, linear probing); the 128-bit keys live with the nodes
    (``or_h1``, ``or_h2``), 16 bytes a node instead of 16 bytes a slot.
    """
    mask = np.uint64(ht_val.shape[0] - 1)
    i = _slot(h1, d, mask)
    while True:
        v = ht_val[i]
        if v < 0:
            return -1, i
        if or_h1[v] == h1 and or_h2[v] == h2 and or_depth[v] == d:
            return v, i
        i = (i + 1) & (ht_val.shape[0] - 1)


@njit(cache=True)
def rehash(old_val, new_val, or_h1, or_depth):
    """Re-insert every node id of an old open-addressing table into a larger one."""
    mask = np.uint64(new_val.shape[0] - 1)
    for j in range(old_val.shape[0]):
        v = old_val[j]
        if v < 0:
            continue
        i = _slot(or_h1[v], or_depth[v], mask)
        while new_val[i] >= 0:
            i = (i + 1) & (new_val.shape[0] - 1)
        new_val[i] = v


class DirichletModel(NamedTuple):
    """Dirichlet-multinomial leaves (classification), the leaf model the kernels take.

    ``G, Gsum, lconst`` are the fields of :class:`arboretum._numba.DirichletTables`, held flat:
    a nested tuple would cost its arrays' reference counts again at every read.
    """

    Y: np.ndarray  #: (n_classes, n_weight_bits, W) uint64: samples of class k with bit b of their weight set
    G: np.ndarray  #: lgamma(c + rho_k)
    Gsum: np.ndarray  #: lgamma(m + sum(rho))
    lconst: float  #: sum_k lgamma(rho_k) - lgamma(sum(rho))


class NIGModel(NamedTuple):
    """Normal-inverse-gamma leaves (regression), the leaf model the kernels take."""

    R: np.ndarray  #: (n_samples, 5): w, w (y - mu0), w (y - mu0)**2, w q, leaf share t
    B: np.ndarray  #: split bound B[n] of :func:`arboretum.maptree.bounds.nig_bound_tables`
    L0: np.ndarray  #: perfect-leaf cost L0[n]
    shape: float
    scale: float
    kappa: float


@njit(cache=True, inline="always")
def _split_term(counts_row, d, G, Gsum, log_ps):
    """log p_split(d) + sum_k log l(c_k e_k): the Perfect Split value (log form), from the tables
    ``G, Gsum`` of :func:`arboretum._numba.dirichlet_tables`."""
    s = log_ps[d]
    for k in range(counts_row.shape[0]):
        c = counts_row[k]
        s += G[k, c] - G[k, 0] - Gsum[c] + Gsum[0]
    return s


@njit(cache=True, inline="always")
def _nig_leaf_nll(row, model):
    """``-log p(y_L)`` of a normal-inverse-gamma leaf with sums ``row = (n, s1, s2, q)``.

    Uses the identity ``NLL = L0(n) + a_n log(b_n / b0)`` with
    ``a_n = a0 + n/2`` and ``b_n - b0 = (s2 - s1**2 / (kappa0 + n)) / 2``
    (``s1``, ``s2`` centred at ``mu0``), which equals ``SS/2 + kappa0 n
    (ybar - mu0)**2 / (2 kappa_n) >= 0``; the clamp only removes rounding.
    """
    n = row[0]
    k = np.int64(n + 0.5)
    excess = 0.5 * (row[2] - row[1] * row[1] / (model.kappa + n))
    if excess < 0.0:
        excess = 0.0
    return model.L0[k] + (model.shape + 0.5 * n) * np.log1p(excess / model.scale)


def is_regression_model(model) -> bool:
    """Whether a leaf model (or its numba type, in an ``overload``) is the regression one, :class:`NIGModel`."""
    return isinstance(model, NIGModel) or getattr(model, "instance_class", None) is NIGModel


# The three leaf-model operations.  The Python bodies are never run: numba
# replaces each call by the implementation its ``overload`` picks from the
# type of ``model``.
def _node_stats(model, words, or_counts, or_stats, node):  # pragma: no cover
    """Write the leaf statistics of the sample set ``words`` into row ``node``."""
    raise NotImplementedError("compiled by numba only")


def _leaf_nll(model, or_counts, or_stats, node):  # pragma: no cover
    """``-log`` marginal likelihood of node ``node``'s samples in one leaf."""
    raise NotImplementedError("compiled by numba only")


def _split_bound(model, or_counts, or_stats, node, d, m, log_ps, E, logv):  # pragma: no cover
    """Lower bound on the cost of every tree that splits at ``(node, d)``."""
    raise NotImplementedError("compiled by numba only")


@overload(_node_stats)
def _node_stats_impl(model, words, or_counts, or_stats, node):
    """Classification: weighted class counts ``sum_b popcount(I & Y[k, b]) << b``
    (``Y[k, b]`` holds the samples of class ``k`` whose integer weight has bit
    ``b`` set).  Regression: the sums of the rows of ``R`` over the set bits, in
    increasing sample order."""
    if is_regression_model(model):

        def nig(model, words, or_counts, or_stats, node):
            R = model.R
            s0 = 0.0
            s1 = 0.0
            s2 = 0.0
            s3 = 0.0
            s4 = 0.0
            for w in range(words.shape[0]):
                b = words[w]
                while b != 0:
                    i = w * 64 + np.int64(ctz64(b))
                    s0 += R[i, 0]
                    s1 += R[i, 1]
                    s2 += R[i, 2]
                    s3 += R[i, 3]
                    s4 += R[i, 4]
                    b &= b - np.uint64(1)
            or_stats[node, 0] = s0
            or_stats[node, 1] = s1
            or_stats[node, 2] = s2
            or_stats[node, 3] = s3
            or_stats[node, 4] = s4

        return nig

    def dirichlet(model, words, or_counts, or_stats, node):
        Y = model.Y
        K, B, W = Y.shape[0], Y.shape[1], Y.shape[2]
        for k in range(K):
            c = 0
            for b in range(B):
                cb = 0
                for w in range(W):
                    cb += popcount64(words[w] & Y[k, b, w])
                c += cb << b
            or_counts[node, k] = c

    return dirichlet


@overload(_leaf_nll)
def _leaf_nll_impl(model, or_counts, or_stats, node):
    if is_regression_model(model):
        return lambda model, or_counts, or_stats, node: _nig_leaf_nll(or_stats[node], model)
    return lambda model, or_counts, or_stats, node: -dm_log_lik(
        or_counts[node], model.G, model.Gsum, model.lconst
    )


@overload(_split_bound)
def _split_bound_impl(model, or_counts, or_stats, node, d, m, log_ps, E, logv):
    """Classification: the Perfect Split term ``-log p_split(d) - sum_k log
    l(c_k e_k)`` (proof in :func:`new_or_node`).  Regression:
    ``-log p_split(d) + max(B[n], L0[n] + q, t)``, proved in
    :func:`arboretum.maptree.bounds.nig_bound_tables` and (``t``)
    :func:`arboretum.maptree.bounds.leaf_share_terms`.  Both plus ``logv(m) + E(d, m)``
    (:func:`_split_prior`): a lower bound on ``log|V(I)|`` (:func:`split_count_bounds`) and the
    least prior cost of the two subtrees below a split of ``m`` samples
    (:func:`subtree_prior_bounds`); each function proves its part."""
    if is_regression_model(model):

        def nig(model, or_counts, or_stats, node, d, m, log_ps, E, logv):
            row = or_stats[node]
            k = np.int64(row[0] + 0.5)
            return -log_ps[d] + _split_prior(E, logv, d, m) + max(model.B[k], model.L0[k] + row[3], row[4])

        return nig
    return lambda model, or_counts, or_stats, node, d, m, log_ps, E, logv: _split_prior(
        E, logv, d, m
    ) - _split_term(or_counts[node], d, model.G, model.Gsum, log_ps)


@njit(cache=True, inline="always")
def _ext(E, d, m):
    """``E(d, m)`` from the table of :func:`subtree_prior_bounds` (constant past its last column;
    0, a valid bound, past its last row)."""
    if d >= E.shape[0]:
        return 0.0
    last = E.shape[1] - 1
    return E[d, m if m < last else last]


@njit(cache=True, inline="always")
def _split_prior(E, logv, d, m):
    """``logv(m) + E(d, m)``: a lower bound on the prior cost of every split of a node of ``m``
    samples at depth ``d`` beyond its ``-log p_split(d)``, i.e. on ``log|V(I)|`` (see
    :func:`split_count_bounds`) plus the prior terms of the two subtrees below it."""
    last = logv.shape[0] - 1
    return logv[m if m < last else last] + _ext(E, d, m)


def split_count_bounds(group_sizes: np.ndarray) -> np.ndarray:
    """Table ``logv[m]`` (``m = 0 .. n``): ``log`` of a lower bound on ``|V(I)|``, the number of
    valid splits of any node of ``m`` samples that has a valid split.

    Proof.  A feature outside ``V(I)`` takes one value on all of ``I``, so the
    rows of ``I`` differ only in the ``|V(I)|`` valid coordinates and ``I`` holds
    at most ``2 ** |V(I)|`` distinct feature rows; hence
    ``|V(I)| >= ceil(log2 r(I))`` with ``r(I)`` the number of distinct rows in
    ``I``.  The samples of ``I`` sharing one row are a subset of that row's group
    in the training data, so ``I`` holds at least ``k(m)`` distinct rows, the
    least ``k`` whose ``k`` largest groups hold ``m`` samples together
    (``k(m) >= ceil(m / gmax)``).  So ``log|V(I)| >= log ceil(log2 k(m))``
    whenever ``k(m) >= 2``; otherwise ``|V(I)| >= 1`` (the node has a valid
    split) and ``logv = 0``.  ``logv`` is non-decreasing in ``m``.

    The split edge of a node costs ``-log p_split(d) + log|V(I)|``; the
    Perfect Split heuristic (spec §2.7) drops ``log|V(I)|``, which is 2-2.6 nats
    for nodes of hundreds or thousands of distinct rows.

    ``group_sizes`` are the sizes of the groups of identical feature rows
    (sample counts, not weights: ``m`` is always a number of samples).
    """
    sizes = np.sort(np.asarray(group_sizes, dtype=np.int64))[::-1]
    cover = np.cumsum(sizes)  # cover[k - 1] = samples in the k largest groups
    m = np.arange(int(cover[-1]) + 1)
    k = np.searchsorted(cover, m, side="left") + 1  # least k with cover[k - 1] >= m
    many = k >= 2
    # ceil(log2 k) = bit length of k - 1, read exactly off frexp's exponent.
    bits = np.frexp((k[many] - 1).astype(np.float64))[1]
    out = np.zeros(m.shape[0], dtype=np.float64)
    out[many] = np.log(bits)
    return out


@njit(cache=True)
def subtree_prior_bounds(log_ps, log_pstop, gmax, M, logv):
    """Table ``E[d, m]`` (``m = 0 .. M``): a lower bound on the prior cost of the two subtrees
    below any split of a node of ``m`` samples at depth ``d``.

    The cost of a tree is its prior terms (``-log p_split + log|V|`` per internal
    node, ``-log p_leaf`` per leaf, all ``>= 0``) plus its leaves'
    ``-log l(c_L)``.  The split bounds (:func:`new_or_node`, :func:`_probe2`)
    bound the likelihood part of every split tree by the Perfect Split value,
    which uses no prior term below the split, so any lower bound on the
    children's prior terms can be added to them.

    Let ``gmax`` be the largest number of training samples sharing one feature
    row.  A node of ``m > gmax`` samples holds two distinct rows, so it has a
    valid split and its leaf has ``p_leaf = 1 - p_split(d)``; a node of
    ``m <= gmax`` samples may have none, and then its cost can be its bare
    likelihood (prior cost 0).  So the least prior cost of a subtree on ``m``
    samples at depth ``d`` is at least

        T[d, m] = 0                                                  if m <= gmax,
                = min( -log(1 - p_split(d)),  -log p_split(d) + logv[m] + E[d, m] )   otherwise,

        E[d, m] = min over 1 <= m0 < m of T[d+1, m0] + T[d+1, m - m0],

    with ``logv[m] <= log|V|`` for every splittable node of ``m`` samples
    (:func:`split_count_bounds`); a split sends ``m0 >= 1`` samples to one side
    and the rest to the other, whatever the feature.  At the deepest tabulated depth
    ``T = E = 0``.  ``T`` and ``E`` are non-decreasing in ``m`` (induction on
    the depth: for ``m' > m`` every split ``(m0', m' - m0')`` dominates the split
    ``(min(m0', m - 1), max(m - m0', 1))`` of ``m`` side by side), so
    ``E[d, M]`` bounds every ``m > M`` and the table can stop at ``M`` (``logv``
    is non-decreasing too).  It
    saturates after a few multiples of ``gmax``.
    """
    D = log_ps.shape[0]
    T = np.zeros((D, M + 1))
    E = np.zeros((D, M + 1))
    for d in range(D - 2, -1, -1):
        for m in range(2, M + 1):
            e = np.inf
            for m0 in range(1, m // 2 + 1):
                v = T[d + 1, m0] + T[d + 1, m - m0]
                if v < e:
                    e = v
            E[d, m] = e
            if m > gmax:
                T[d, m] = min(-log_pstop[d], -log_ps[d] + logv[min(m, logv.shape[0] - 1)] + e)
    return E


@njit(cache=True, no_cpython_wrapper=True)
def _sized_bound(counts_row, d, m, G, Gsum, lconst, log_ps, log_pstop, E, logv, gmax):
    """A lower bound on the value of a node of ``m`` samples with class counts ``counts_row`` at
    depth ``d`` whose valid splits are unknown: the Perfect Split heuristic (spec §2.7) with
    ``logv(m) + E(d, m)`` added to its split term (:func:`_split_prior`), and the leaf prior
    ``p_leaf = 1 - p_split(d)`` when ``m > gmax`` (the node then has a valid split; see
    :func:`subtree_prior_bounds`)."""
    nll = -dm_log_lik(counts_row, G, Gsum, lconst)
    split = _split_prior(E, logv, d, m) - _split_term(counts_row, d, G, Gsum, log_ps)
    leaf = nll - log_pstop[d] if m > gmax else nll
    return min(leaf, split)


@njit(cache=True)
def write_node_stats(model, words, graph, node):
    """:func:`_node_stats` into row ``node`` of ``graph``, for callers outside the kernels."""
    nodes = graph.nodes
    _node_stats(model, words, nodes.or_counts, nodes.or_stats, node)


@njit(cache=True)
def new_or_node(node, d, no_split, m, model, tables, graph, ub_inf):
    """Initialise OR node ``node`` (its statistics already written) at depth ``d``.

    If ``no_split`` (the node's samples all share one feature vector, so
    ``V(I)`` is empty), the node's exact value is its leaf cost with
    ``p_leaf = 1``: it is created solved (``LB = UB``) and marked expanded
    without AND children, so the search never visits it.  A node at depth
    ``tables.max_depth`` is created solved the same way, with its leaf cost
    ``-log(1 - p_split(d)) - log l``: under the ``max_depth`` constraint that
    is its exact value (the MAP tree among trees of at most that depth is the
    tree of least cost among them, the prior being the same Chipman prior).

    Otherwise a valid split exists, and UB is the exact leaf cost with
    ``p_leaf = 1 - p_split(d)`` (reference semantics), or +inf with ``ub_inf``
    (the paper's semantics, where an unexpanded node has no partial solution).
    With these two rules the UB of every partial solution is the exact cost of
    its tree (a virtual incumbent, :func:`_probe`, can make the tree read off
    cheaper than UB when its stored children improve later; never dearer).

    LB is ``h'(o) = min(exact leaf cost, split bound)`` where the split bound
    (:func:`_split_bound`) is at most the cost of every tree that splits at
    ``o``; so ``h'(o) <= val(o)``.  Once ``o`` is expanded the search keeps
    ``LB = max(h'(o), min(leaf cost, min over AND children of pen + LB0 + LB1))``
    (:func:`_propagate` only ever raises LB), which is admissible whenever
    every child's LB is, so admissibility of ``h'`` at creation is all the
    search needs.

    Classification: the split bound is the *splittable* Perfect Split term,

        h'(o) = min( -log(1 - p_split(d)) - log l(c),
                     -log p_split(d) + logv(m) + E(d, m) - sum_k log l(c_k e_k) ),

    with ``m`` the node's number of samples, ``logv(m) <= log|V(I)|``
    (:func:`split_count_bounds`) and ``E`` the least prior cost of the two
    subtrees below a split (:func:`subtree_prior_bounds`).

    Proof of admissibility (h' <= val(o)): val(o) is the minimum of the leaf
    cost, which is exactly the first term because V(I) is not empty, and of
    ``-log p_split(d) + log|V(I)| + val(o_0) + val(o_1)`` over the splits.  For
    any split, ``log|V| >= logv(m)``; every child value is its subtree's prior terms,
    together at least ``E(d, m)`` for the two children, plus the ``-log l(c_L)``
    of its leaves; each is at least ``sum_k -log l(c_Lk e_k)`` by Lemma 13, and
    by Lemma 14 (superadditivity of pure likelihoods) these sum over all the
    leaves below the split to at least ``sum_k -log l(c_k e_k)``.  So every
    split costs at least the second term.  The paper's heuristic uses the bare
    likelihood ``-log l(c)`` in the first term because it does not know
    whether V(I) is empty; we know, so ``h' >= h`` with equality only when the
    split term is the smaller one.

    Regression: the split bound is ``-log p_split(d) + max(B[n], L0[n] + q, t)``
    from :func:`arboretum.maptree.bounds.nig_bound_tables` and
    :func:`arboretum.maptree.bounds.leaf_share_terms`, whose docstrings prove it.
    Leaf likelihoods are densities there, so costs can be negative; only the
    prior terms are known to be non-negative, and the proofs use no more.
    """
    nodes = graph.nodes
    links = graph.links
    nll = _leaf_nll(model, nodes.or_counts, nodes.or_stats, node)
    nodes.or_depth[node] = d
    links.or_and_count[node] = 0
    links.or_first_edge[node] = -1
    links.or_stamp[node] = 0
    links.or_best[node] = -1
    links.or_flags[node] = 0
    if no_split or d >= tables.max_depth:
        if not no_split:
            nll -= tables.log_pstop[d]  # a leaf by the depth limit: p_leaf = 1 - p_split(d)
        nodes.or_lb[node] = nll
        nodes.or_ub[node] = nll
        links.or_leaf[node] = nll
        links.or_expanded[node] = 1
        return
    leaf = -tables.log_pstop[d] + nll
    nodes.or_lb[node] = min(
        leaf,
        _split_bound(
            model, nodes.or_counts, nodes.or_stats, node, d, np.int64(m), tables.log_ps, tables.E, tables.logv
        ),
    )
    nodes.or_ub[node] = np.inf if ub_inf else leaf
    links.or_leaf[node] = nodes.or_ub[node]
    links.or_expanded[node] = 0


@njit(cache=True, inline="always")
def _no_split(words, total, dup_group, group_size):
    """True when the ``total`` samples in ``words`` all share one feature vector.

    ``dup_group[i]`` numbers the groups of two or more equal feature rows
    (-1 for a row no other sample has) and ``group_size[g]`` counts the
    samples of group ``g`` (:class:`Data`); an empty ``group_size`` means
    the rows are all distinct, so only single samples qualify.  The set is
    one group's when it is no larger than the group of its first sample and
    every sample in it is of that group: O(W + total) work, and O(n) memory
    for the groups (a sample set per group took O(G n / 64) words, 45 MiB on
    50,000 rows of make_regression).
    """
    if total <= 1:
        return True
    if group_size.shape[0] == 0:
        return False
    w0 = 0
    while words[w0] == 0:
        w0 += 1
    grp = dup_group[w0 * 64 + np.int64(ctz64(words[w0]))]
    if grp < 0 or total > group_size[grp]:
        return False  # the first sample has a row of its own, or its group is too small to hold them all
    for w in range(w0, words.shape[0]):
        x = words[w]
        while x:
            if dup_group[w * 64 + np.int64(ctz64(x))] != grp:
                return False
            x &= x - np.uint64(1)
    return True


@njit(cache=True, inline="always")
def _valid_splits(words, M1, valid_f, n1_buf):
    """The valid splits ``V(I)`` of the sample set ``words`` (both sides non-empty): writes the
    features to ``valid_f[:nv]`` and their ``|I ∩ {x_f = 1}|`` to ``n1_buf[:nv]``; returns
    ``(n, nv)`` with ``n = |I|`` (samples, not weights: validity is about non-empty sides)."""
    F, W = M1.shape
    n = 0
    for w in range(W):
        n += popcount64(words[w])
    nv = 0
    for f in range(F):
        n1 = 0
        for w in range(W):
            n1 += popcount64(words[w] & M1[f, w])
        if n1 > 0 and n1 < n:
            valid_f[nv] = f
            n1_buf[nv] = n1
            nv += 1
    return n, nv


@njit(cache=True)
def expand_node(o, words, data, model, tables, graph, bufs, ub_inf):
    """One expansion of the unexpanded OR node ``o`` whose sample set is ``words``: create one
    AND child per distinct partition of ``I`` by a valid split, propagate the bounds
    (:func:`_propagate`), count the expansion.  The caller guarantees room for the new nodes.
    (One compile unit with the propagation call: a wrapper around a jitted expansion would
    compile the expansion's code a second time, see :func:`_lookahead`.)

    New children get their leaf statistics from :func:`_node_stats` (weighted
    class counts, or regression sums) and their bounds from
    :func:`new_or_node`.

    Two valid features ``f`` and ``g`` whose splits cut ``I`` into the same
    two sets (``x_f = x_g`` on ``I``, or ``x_f = 1 - x_g``, as for the two
    one-hot columns of a binary attribute) give AND nodes with the same
    children and so the same value ``pen + val(I_0) + val(I_1)``, the same LB
    and the same UB at all times.  Only the first of them in feature order is
    stored.  This is exact: ``pen`` still counts every valid feature
    (``|V(I)|`` is the number of valid features, not of partitions), the
    minimum over the AND children is unchanged, and so is the incumbent (ties
    go to the lowest feature, which is the one kept).  It saves the two hash
    lookups and the AND node of every duplicate.  Two splits are compared
    only when their ``x = 1`` sides have the same size (or complementary
    sizes), so the check costs O(nv) integer comparisons per split.
    """
    nodes = graph.nodes
    links = graph.links
    M1 = data.M1
    dup_group = data.dup_group
    group_size = data.group_size
    scratch = bufs.scratch
    valid_f = bufs.valid_f
    n1_buf = bufs.n1_buf
    or_counts = nodes.or_counts
    or_stats = nodes.or_stats
    or_depth = nodes.or_depth
    or_h1 = nodes.or_h1
    or_h2 = nodes.or_h2
    ht_val = nodes.ht_val
    or_expanded = links.or_expanded
    or_leaf = links.or_leaf
    or_and_count = links.or_and_count
    or_first_edge = links.or_first_edge
    and_feature = links.and_feature
    and_parent = links.and_parent
    and_child0 = links.and_child0
    and_child1 = links.and_child1
    edge_next = links.edge_next
    counters = nodes.counters
    F, W = M1.shape
    d = or_depth[o]
    n, nv = _valid_splits(words, M1, valid_f, n1_buf)
    nll = _leaf_nll(model, or_counts, or_stats, o)
    or_expanded[o] = 1
    if nv == 0:
        or_leaf[o] = nll  # no valid split: p_leaf = 1
        or_and_count[o] = 0
    else:
        or_leaf[o] = -tables.log_pstop[d] + nll
        links.or_pen[o] = -tables.log_ps[d] + tables.log_int[nv]
        a0 = counters[C_N_AND]
        links.or_and_start[o] = a0
        kept = 0
        for j in range(nv):
            f = valid_f[j]
            if _same_partition_as_kept(words, f, n1_buf[j], n, M1, and_feature, n1_buf, a0, kept):
                continue
            a = a0 + kept
            n1_buf[kept] = n1_buf[j]  # n1_buf[:kept] now holds the kept splits' counts (kept <= j)
            kept += 1
            for side in range(2):
                if side == 1:
                    for w in range(W):
                        scratch[w] = words[w] & M1[f, w]
                    total = n1_buf[kept - 1]
                else:
                    for w in range(W):
                        scratch[w] = words[w] & ~M1[f, w]
                    total = n - n1_buf[kept - 1]
                h1, h2 = hash_words128(scratch)
                child, slot = ht_find(h1, h2, d + 1, ht_val, or_h1, or_h2, or_depth)
                if child < 0:
                    child = counters[C_N_OR]
                    counters[C_N_OR] += 1
                    _node_stats(model, scratch, or_counts, or_stats, child)
                    no_split = _no_split(scratch, total, dup_group, group_size)
                    new_or_node(child, d + 1, no_split, total, model, tables, graph, ub_inf)
                    or_h1[child] = h1
                    or_h2[child] = h2
                    ht_val[slot] = child
                    counters[C_HT_USED] += 1
                e = 2 * a + side
                edge_next[e] = or_first_edge[child]
                or_first_edge[child] = e
                if side == 0:
                    and_child0[a] = child
                else:
                    and_child1[a] = child
            and_feature[a] = f
            and_parent[a] = o
        or_and_count[o] = kept
        counters[C_N_AND] = a0 + kept
    _propagate(o, graph, bufs, np.uint8(0))
    counters[C_N_EXP] += 1


@njit(cache=True, inline="always")
def _same_partition_as_kept(words, f, n1, n, M1, and_feature, n1_kept, a0, kept):
    """True when feature ``f`` (``n1`` samples of ``I`` on its ``x = 1`` side) cuts the sample
    set ``words`` (``n`` samples) into the same two sets as one of the ``kept`` splits already
    stored (features ``and_feature[a0:a0 + kept]``, side sizes ``n1_kept[:kept]``)."""
    W = M1.shape[1]
    for i in range(kept):
        m = n1_kept[i]
        if m != n1 and m != n - n1:
            continue
        g = and_feature[a0 + i]
        if m == n1:  # same sides: x_f = x_g on I?
            same = True
            for w in range(W):
                if words[w] & (M1[f, w] ^ M1[g, w]):
                    same = False
                    break
            if same:
                return True
        if m == n - n1:  # swapped sides: x_f = 1 - x_g on I?
            same = True
            for w in range(W):
                if words[w] & ~(M1[f, w] ^ M1[g, w]):
                    same = False
                    break
            if same:
                return True
    return False


@njit(cache=True)
def _creation_bound(model, data, tables, graph, words, total, tmp, d, ub_inf):
    """The (LB, UB) :func:`new_or_node` would give a new node with sample set ``words`` (``total``
    samples) at depth ``d``; its statistics go to the scratch row ``tmp`` of ``graph``."""
    nodes = graph.nodes
    _node_stats(model, words, nodes.or_counts, nodes.or_stats, tmp)
    return _bounds_from_stats(
        model, words, total, data.dup_group, data.group_size, nodes.or_counts, nodes.or_stats, tmp, d,
        tables.log_ps, tables.log_pstop, tables.E, tables.logv, ub_inf, tables.max_depth,
    )


@njit(cache=True)
def _bounds_from_stats(
    model, words, total, dup_group, group_size, or_counts, or_stats, row, d, log_ps, log_pstop, E, logv, ub_inf,
    max_depth,
):
    """:func:`_creation_bound` for a node whose statistics are in row ``row`` already (``words`` is
    read only when the node has more than one sample and the data have duplicate rows)."""
    nll = _leaf_nll(model, or_counts, or_stats, row)
    if _no_split(words, total, dup_group, group_size):
        return nll, nll
    leaf = -log_pstop[d] + nll
    if d >= max_depth:
        return leaf, leaf
    return min(leaf, _split_bound(model, or_counts, or_stats, row, d, total, log_ps, E, logv)), (
        np.inf if ub_inf else leaf
    )


def _sibling_stats(model, words, or_counts, or_stats, parent, first, out):  # pragma: no cover
    """Write into row ``out`` the statistics of the sample set ``words``, the samples of node
    ``parent`` that are not in the set whose statistics are in row ``first``."""
    raise NotImplementedError("compiled by numba only")


@overload(_sibling_stats)
def _sibling_stats_impl(model, words, or_counts, or_stats, parent, first, out):
    """Classification: the parent's integer class counts minus the other side's (exact, and
    ``words`` is not read).  Regression: summed from ``words`` (a difference of float sums
    would not equal the sums a stored node gets)."""
    if is_regression_model(model):

        def direct(model, words, or_counts, or_stats, parent, first, out):
            _node_stats(model, words, or_counts, or_stats, out)

        return direct

    def difference(model, words, or_counts, or_stats, parent, first, out):
        for k in range(or_counts.shape[1]):
            or_counts[out, k] = or_counts[parent, k] - or_counts[first, k]

    return difference


def _sibling_reads_words(model):  # pragma: no cover
    """Whether :func:`_sibling_stats` reads its ``words`` argument (a compile-time constant)."""
    raise NotImplementedError("compiled by numba only")


@overload(_sibling_reads_words, inline="always")
def _sibling_reads_words_impl(model):
    reads = is_regression_model(model)
    return lambda model: reads


def _valid_split_stats(model, words, M1, valid_f, n1_buf, cnt):  # pragma: no cover
    """:func:`_valid_splits`, and for classification also the weighted class counts of every
    valid split's ``x_f = 1`` side in ``cnt[j]``, in the same sweep over the words."""
    raise NotImplementedError("compiled by numba only")


@overload(_valid_split_stats)
def _valid_split_stats_impl(model, words, M1, valid_f, n1_buf, cnt):
    """Classification: one pass per feature computes ``n1 = |I ∩ {x_f = 1}|`` and the class
    counts of that side (``popcount(I & M1[f] & Y[k, b]) << b``).  With unit weights
    (``B = 1``) the last class's count is ``n1`` minus the others', so a binary problem
    costs two popcounts per word and feature instead of the three, plus a stored copy of
    the side, of :func:`_valid_splits` followed by :func:`_node_stats`.  Regression:
    :func:`_valid_splits` (``cnt`` is not touched; the probe sums each side's rows)."""
    if is_regression_model(model):

        def plain(model, words, M1, valid_f, n1_buf, cnt):
            return _valid_splits(words, M1, valid_f, n1_buf)

        return plain

    def fused(model, words, M1, valid_f, n1_buf, cnt):
        Y = model.Y
        F, W = M1.shape
        K, B = Y.shape[0], Y.shape[1]
        Kc = K - 1 if B == 1 else K  # with unit weights the last class is n1 minus the rest
        n = 0
        for w in range(W):
            n += popcount64(words[w])
        acc = np.zeros(K, np.int64)
        nv = 0
        for f in range(F):
            n1 = 0
            for k in range(K):
                acc[k] = 0
            if Kc == 1 and B == 1:  # two classes, unit weights: a straight loop LLVM vectorises
                c0 = 0
                for w in range(W):
                    t = words[w] & M1[f, w]
                    n1 += popcount64(t)
                    c0 += popcount64(t & Y[0, 0, w])
                acc[0] = c0
            else:
                for w in range(W):
                    t = words[w] & M1[f, w]
                    n1 += popcount64(t)
                    for k in range(Kc):
                        for b in range(B):
                            acc[k] += popcount64(t & Y[k, b, w]) << b
            if n1 > 0 and n1 < n:
                valid_f[nv] = f
                n1_buf[nv] = n1
                rest = n1
                for k in range(Kc):
                    cnt[nv, k] = acc[k]
                    rest -= acc[k]
                if Kc < K:
                    cnt[nv, K - 1] = rest
                nv += 1
        return n, nv

    return fused


def _side_stats(model, words, M1, f, cnt, j, scratch, need_words, or_counts, or_stats, out):  # pragma: no cover
    """Write into row ``out`` the statistics of ``I ∩ {x_f = 1}`` (``words`` is ``I``), and
    that set into ``scratch`` when ``need_words`` or when the statistics are summed from it."""
    raise NotImplementedError("compiled by numba only")


@overload(_side_stats)
def _side_stats_impl(model, words, M1, f, cnt, j, scratch, need_words, or_counts, or_stats, out):
    """Classification: copied from ``cnt[j]`` (:func:`_valid_split_stats`).  Regression: summed
    from the side's samples (:func:`_node_stats`)."""
    if is_regression_model(model):

        def summed(model, words, M1, f, cnt, j, scratch, need_words, or_counts, or_stats, out):
            for w in range(words.shape[0]):
                scratch[w] = words[w] & M1[f, w]
            _node_stats(model, scratch, or_counts, or_stats, out)

        return summed

    def copied(model, words, M1, f, cnt, j, scratch, need_words, or_counts, or_stats, out):
        for k in range(or_counts.shape[1]):
            or_counts[out, k] = cnt[j, k]
        if need_words:
            for w in range(words.shape[0]):
                scratch[w] = words[w] & M1[f, w]

    return copied


@njit(cache=True, inline="always")
def _probe(o, words, scratch, data, model, tables, nodes, ub_inf):
    """The lower bound that expanding OR node ``o`` (sample set ``words``) would give, without
    creating any node: ``min(leaf cost, pen + min over valid f of (b(o_f0) + b(o_f1)))``.

    Returns ``(lb, ub, f)``: the bound, and the best upper bound the expansion
    would give through one split, ``pen + u(o_f0) + u(o_f1)`` with ``u`` the
    child's UB in the graph or its creation UB (its exact leaf cost), for the
    split ``f`` attaining it.  The caller may record that split as the node's
    *virtual* incumbent (``or_best = -2 - f``): the tree that splits ``o`` on
    ``f`` into two leaves (or into the children's stored incumbents) costs
    exactly that, so UB stays the cost of a real tree without storing a node,
    and the anytime answer improves as fast as with expansions.

    ``pen = -log p_split(d) + log|V(I)|`` is the exact cost of the edge to every
    AND child, and ``b(c)`` is the LB the child has in the graph if it is
    stored there already, else the creation bound ``h'(c)`` that
    :func:`new_or_node` would give it.  This is exactly the LB the node would
    get from :func:`_propagate` right after :func:`expand_node`, so it is
    admissible by the same argument (every child's bound is admissible, and
    ``val(o) = min(leaf, min_f pen + val(o_f0) + val(o_f1))``); and it is only
    used through ``max(LB, probe)``, so no consistency is needed.

    Why: best-first search expands many nodes only to learn that their bound
    rises and the search moves elsewhere; each such expansion stores up to
    ``2|V(I)|`` OR and ``|V(I)|`` AND nodes that are never looked at again.  A
    probe raises the LB at the price of the expansion's counting work and no
    memory; the node is expanded only when the search comes back to it.
    The statistics of a child not yet in the graph go to the scratch rows
    ``counters[C_N_OR]`` and the one after it (free slots; the caller
    guarantees room for ``2 F`` more nodes).

    Cost: hashing a child's sample set to look it up costs about three times
    its class counts, so the probe first computes every child's creation
    bounds without hashing (for classification the ``x_f = 1`` sides' class
    counts come from the same sweep that finds the valid splits,
    :func:`_valid_split_stats`), then looks up the children of the splits in
    increasing order of their creation pair ``h'(o_f0) + h'(o_f1)``, stopping
    at the first split whose creation pair is at least the best pair found.
    The LB is exactly the one described above: a stored child's LB is its
    creation bound raised since, so a split not looked up cannot attain the
    minimum.  The UB is the best of the looked-up pairs and of the two-leaf
    trees of every split (a stored child's UB is at most its leaf cost, so a
    split not looked up may be reported dearer than its stored children make
    it; the UB is still the cost of a real tree).
    """
    M1 = data.M1
    dup_group = data.dup_group
    group_size = data.group_size
    log_ps = tables.log_ps
    log_pstop = tables.log_pstop
    E = tables.E
    logv = tables.logv
    max_depth = tables.max_depth
    or_counts = nodes.or_counts
    or_stats = nodes.or_stats
    or_depth = nodes.or_depth
    or_lb = nodes.or_lb
    or_ub = nodes.or_ub
    ht_val = nodes.ht_val
    or_h1 = nodes.or_h1
    or_h2 = nodes.or_h2
    F, W = M1.shape
    d = or_depth[o]
    tmp = nodes.counters[C_N_OR]
    valid_f = np.empty(F, np.int32)
    n1_buf = np.empty(F, np.int32)
    cnt = np.empty((F, or_counts.shape[1]), np.int32)
    n, nv = _valid_split_stats(model, words, M1, valid_f, n1_buf, cnt)
    leaf = -log_pstop[d] + _leaf_nll(model, or_counts, or_stats, o)
    if nv == 0:
        return leaf, np.inf, -1
    # Pass 1: every split's creation bounds, without hashing: side s of split j gets
    # h'(o_fs) = lbs[j, s] and the creation UB ubs[j, s] (its leaf cost, or +inf).  A stored
    # child's LB is at least its creation bound (the same h' when it was created, raised since)
    # and its UB at most its leaf cost, so lbs[j, 0] + lbs[j, 1] <= the split's pair in the graph.
    # The x_f = 0 side's statistics are the node's minus the x_f = 1 side's (classification), so
    # its sample set is built only when something reads it (duplicate rows, or regression).
    lbs = np.empty((nv, 2))
    ubs = np.empty((nv, 2))
    dups = group_size.shape[0] > 0
    for j in range(nv):
        f = valid_f[j]
        n1 = n1_buf[j]
        _side_stats(model, words, M1, f, cnt, j, scratch, dups and n1 > 1, or_counts, or_stats, tmp)
        lbs[j, 1], ubs[j, 1] = _bounds_from_stats(
            model, scratch, np.int64(n1), dup_group, group_size, or_counts, or_stats, tmp, d + 1,
            log_ps, log_pstop, E, logv, ub_inf, max_depth,
        )
        if _sibling_reads_words(model) or (dups and n - n1 > 1):
            for w in range(W):
                scratch[w] = words[w] & ~M1[f, w]
        _sibling_stats(model, scratch, or_counts, or_stats, o, tmp, tmp + 1)
        lbs[j, 0], ubs[j, 0] = _bounds_from_stats(
            model, scratch, np.int64(n - n1), dup_group, group_size, or_counts, or_stats, tmp + 1, d + 1,
            log_ps, log_pstop, E, logv, ub_inf, max_depth,
        )
    cb = lbs[:, 0] + lbs[:, 1]
    # Pass 2: look the children up in the graph (two hashes a split, most of a probe's cost), in
    # increasing cb and only while cb is below the best pair found: no later split can be the
    # minimum.  The upper bound is the best of the two-leaf trees and of the looked-up pairs.
    best = np.inf
    best_j = -1
    best_ub = np.inf
    for j in range(nv):
        u = ubs[j, 0] + ubs[j, 1]
        if u < best_ub:
            best_ub = u
            best_j = j
    order = argsort_stable(cb)
    for r in range(nv):
        j = order[r]
        if cb[j] >= best:
            break
        f = valid_f[j]
        pair = 0.0
        pair_ub = 0.0
        for side in range(2):
            if side == 1:
                for w in range(W):
                    scratch[w] = words[w] & M1[f, w]
            else:
                for w in range(W):
                    scratch[w] = words[w] & ~M1[f, w]
            h1, h2 = hash_words128(scratch)
            child, _ = ht_find(h1, h2, d + 1, ht_val, or_h1, or_h2, or_depth)
            if child >= 0:
                pair += or_lb[child]
                pair_ub += or_ub[child]
            else:
                pair += lbs[j, side]
                pair_ub += ubs[j, side]
        if pair < best:
            best = pair
        if pair_ub < best_ub:
            best_ub = pair_ub
            best_j = j
    pen = -log_ps[d] + tables.log_int[nv]
    return min(leaf, pen + best), pen + best_ub, (valid_f[best_j] if best_j >= 0 else -1)


@njit(cache=True, inline="always")
def _column_words(n, nv, W):
    """The words per column of :func:`_node_columns` for a node of ``n`` samples and ``nv`` valid
    features: ``ceil(n / 64)`` (compacted) when the bit copy costs less than the ``nv^2 / 2``
    pair counts it shortens, else ``W`` (the data set's words)."""
    Wc = (n + 63) >> 6
    return Wc if Wc * (64 + nv // 2) < W * (nv // 2) else W


@njit(cache=True, no_cpython_wrapper=True)
def _node_columns(words, M1, Y, vf, nv, Wc, Mc, planes):
    """Write the valid feature columns ``Mc[i] = words & M1[vf[i]]`` and the class/weight planes
    ``planes[k B + b] = words & Y[k, b]`` of a node, for :func:`_probe2`'s pair counts: row ``i``
    of ``Mc`` is ``Mc[i Wc : (i + 1) Wc]`` (flat arrays: one allocation shape for every buffer
    of the probe, which compiles faster), ``Wc`` from :func:`_column_words`.

    With ``Wc < W`` (a node small next to the data set, whose ``W`` words per column are mostly
    zero) the columns are *compacted*: sample ``j`` of the node (in index order) becomes bit ``j``
    of ``Wc = ceil(n / 64)`` words.  Popcounts of intersections are the same in both layouts."""
    F, W = M1.shape
    K, B = Y.shape[0], Y.shape[1]
    if Wc == W:
        for i in range(nv):
            for w in range(W):
                Mc[i * W + w] = words[w] & M1[vf[i], w]
        for k in range(K):
            for b in range(B):
                for w in range(W):
                    planes[(k * B + b) * W + w] = words[w] & Y[k, b, w]
        return
    for q in range(nv * Wc):
        Mc[q] = 0
    for q in range(K * B * Wc):
        planes[q] = 0
    j = 0
    one = np.uint64(1)
    for w in range(W):
        bw = words[w]
        while bw:
            t = ctz64(bw)
            bw &= bw - one
            jw = j >> 6
            jb = np.uint64(j & 63)
            for i in range(nv):
                Mc[i * Wc + jw] |= ((M1[vf[i], w] >> np.uint64(t)) & one) << jb
            for k in range(K):
                for b in range(B):
                    planes[(k * B + b) * Wc + jw] |= ((Y[k, b, w] >> np.uint64(t)) & one) << jb
            j += 1


def _probe2_body(model, o, words, scratch, data, tables, nodes, ub_inf, max_rows):
    """Depth-2 lookahead bound of OR node ``o`` (classification), from pair counts.

    For every valid split ``f`` of ``I`` and both of its children ``I_fs``,
    the class counts of every grandchild ``I_fs ∩ {x_g = t}`` follow from the
    pair counts ``c_k(I ∩ {x_f = 1} ∩ {x_g = 1})`` (one popcount sweep over the
    valid feature pairs), and so do ``V(I_fs)`` (``g`` is valid in ``I_fs``
    iff both grandchildren are non-empty).  The bound is

        probe(o) = min( leaf(o),  -log p_split(d) + log|V(I)| + min_f [ b(I_f0) + b(I_f1) ] ),

        b(I_fs) = nll(I_fs)                                     if V(I_fs) is empty,
                = min( -log(1 - p_split(d+1)) + nll(I_fs),
                       -log p_split(d+1) + log|V(I_fs)|
                       + min_{g in V(I_fs)} [ h(I_fsg0) + h(I_fsg1) ] )   otherwise,

    raised to the child's LB in the graph when the child is stored already.
    ``h`` is :func:`_sized_bound`, the Perfect Split heuristic of spec §2.7
    with the prior bounds ``logv + E`` of :func:`split_count_bounds` and
    :func:`subtree_prior_bounds` added to its split term, admissible for every node.

    Cost control: the sample counts of every pair of valid features give each
    child's ``V(I_fs)`` and a cheap bound ``cheap(I_fs) = min(leaf,
    -log p_split(d+1) + log|V(I_fs)| + E(d+1, |I_fs|) + Perfect Split value)``
    (or ``nll`` when ``V(I_fs)`` is empty), which is at most ``b(I_fs)``: each
    ``h(I_fsg)`` is at least ``T(d+2, |I_fsg|)`` plus the grandchild's Perfect
    Split value (:func:`subtree_prior_bounds`), the two ``T`` sum to at least
    ``E(d+1, |I_fs|)``, and the two Perfect Split values to at least the
    child's (spec §2.7).  Splits are
    visited in increasing ``cheap(I_f0) + cheap(I_f1)``; only the first
    ``max_rows`` get the depth-2 term (it needs one row of class pair
    counts), and the rest count with the cheap sum of the first one not
    visited, a lower bound on all of them, so the bound stays admissible.
    The counts run on the node's own columns (:func:`_node_columns`), compacted
    to ``ceil(|I| / 64)`` words for nodes much smaller than the data set.

    Proof of admissibility: ``val(I_fs)`` is either its leaf cost, which is
    the first term (with ``p_leaf = 1`` exactly when ``V(I_fs)`` is empty), or,
    for some ``g`` in ``V(I_fs)``, ``-log p_split(d+1) + log|V(I_fs)| +
    val(I_fsg0) + val(I_fsg1)``, and ``val >= h`` for every node.  So
    ``b(I_fs) <= val(I_fs)`` and the same argument one level up gives
    ``probe(o) <= val(o)``.  The features that are not valid in ``I`` are
    constant on ``I`` and so on every subset of it, and ``f`` is constant on
    ``I_fs``: only the other valid features of ``I`` can split a child.
    Under a depth limit that makes the children leaves (``d + 1 >=
    max_depth``), ``b(I_fs)`` is the leaf cost, exactly the child's value;
    the grandchildren's ``h`` stays admissible at any limit (it is a minimum
    over more trees than the limit allows).
    """
    Y = model.Y
    G = model.G
    Gsum = model.Gsum
    lconst = model.lconst
    M1 = data.M1
    log_ps = tables.log_ps
    log_pstop = tables.log_pstop
    log_int = tables.log_int
    E = tables.E
    logv = tables.logv
    gmax = tables.gmax
    or_lb = nodes.or_lb
    or_depth = nodes.or_depth
    ht_val = nodes.ht_val
    or_h1 = nodes.or_h1
    or_h2 = nodes.or_h2
    F, W = M1.shape
    K, B = Y.shape[0], Y.shape[1]
    d = or_depth[o]
    leaf_children = d + 1 >= tables.max_depth  # the depth limit makes both children leaves
    # Every buffer is flat and one of three allocation types (int32, int64, float64 and the
    # uint64 columns): each allocation type is a compile of numba's np.empty.
    vf = np.empty(F, np.int32)
    n, nv = _valid_splits(words, M1, vf, np.empty(F, np.int32))
    if nv == 0:
        return np.inf  # (not reached: unexpanded nodes have a valid split)
    # The node's columns Mc[i] = I ∩ {x_vf[i] = 1} and class/weight planes, on the node's own
    # samples: compacted to ceil(n / 64) words when the pair counts saved pay for the bit copy.
    Wc = _column_words(np.int64(n), np.int64(nv), np.int64(W))
    Mc = np.empty(nv * Wc, np.uint64)
    planes = np.empty(K * B * Wc, np.uint64)
    _node_columns(words, M1, Y, vf, np.int64(nv), Wc, Mc, planes)
    c = np.empty(K, np.int64)
    for k in range(K):
        c[k] = 0
        for b in range(B):
            for w in range(Wc):
                c[k] += popcount64(planes[(k * B + b) * Wc + w]) << b
    # N[i nv + j] = |I ∩ {x_vf[i] = 1} ∩ {x_vf[j] = 1}| for every pair (the diagonal: single
    # features), and D[i K + k] the weighted class-k count of I ∩ {x_vf[i] = 1}.
    N = np.empty(nv * nv, np.int64)
    D = np.empty(nv * K, np.int64)
    a = np.empty(Wc, np.uint64)
    for i in range(nv):
        for j in range(i, nv):
            m = 0
            for w in range(Wc):
                m += popcount64(Mc[i * Wc + w] & Mc[j * Wc + w])
            N[i * nv + j] = m
            N[j * nv + i] = m
        for k in range(K):
            D[i * K + k] = 0
            for b in range(B):
                m = 0
                for w in range(Wc):
                    m += popcount64(planes[(k * B + b) * Wc + w] & Mc[i * Wc + w])
                D[i * K + k] += m << b
    # Cheap bound of every child (side s of split i at cheap[2 i + s]), with the exact
    # log|V(I_fs)| (nvcs) from the pair counts: b(I_fs) >= its leaf cost or its split cost with a
    # perfect split; need[2 i + s] when the split side is the smaller one (only then can the
    # depth-2 term change it).
    cc = np.empty(K, np.int64)
    g1 = np.empty(K, np.int64)
    g0 = np.empty(K, np.int64)
    cheap = np.empty(2 * nv)
    need = np.empty(2 * nv, np.int64)
    nvcs = np.empty(2 * nv, np.int64)
    for i in range(nv):
        for s in range(2):
            ns = N[i * nv + i] if s == 1 else n - N[i * nv + i]
            for k in range(K):
                cc[k] = D[i * K + k] if s == 1 else c[k] - D[i * K + k]
            nll = -dm_log_lik(cc, G, Gsum, lconst)
            nvc = 0
            for j in range(nv):
                if j != i:
                    q = N[i * nv + j] if s == 1 else N[j * nv + j] - N[i * nv + j]
                    if q > 0 and q < ns:
                        nvc += 1
            nvcs[2 * i + s] = nvc
            need[2 * i + s] = 0
            if nvc == 0:
                cheap[2 * i + s] = nll
            elif leaf_children:
                cheap[2 * i + s] = -log_pstop[d + 1] + nll  # exact: a leaf with a valid split
            else:
                leaf = -log_pstop[d + 1] + nll
                split = log_int[nvc] + _ext(E, d + 1, ns) - _split_term(cc, d + 1, G, Gsum, log_ps)
                if split < leaf:
                    cheap[2 * i + s] = split
                    need[2 * i + s] = 1
                else:
                    cheap[2 * i + s] = leaf
    # Branch and bound over the splits, best cheap bound first (ties in feature order); the class
    # counts of the grandchildren (one row of pair counts) are computed only for the splits looked
    # at.  The next split is found by a scan of the ones not looked at yet: at most max_rows + 1
    # scans in a search, cheaper than sorting.
    row = np.empty(nv * K, np.int64)
    seen = np.empty(nv, np.int64)
    for i in range(nv):
        seen[i] = 0
    best = np.inf
    for r in range(nv):
        i = -1
        for j in range(nv):
            if seen[j] == 0 and (i < 0 or cheap[2 * j] + cheap[2 * j + 1] < cheap[2 * i] + cheap[2 * i + 1]):
                i = j
        seen[i] = 1
        if cheap[2 * i] + cheap[2 * i + 1] >= best:
            break  # every remaining split is at least its cheap bound
        if r == max_rows:
            best = cheap[2 * i] + cheap[2 * i + 1]  # the same bound for the splits not looked at
            break
        fi = vf[i]
        if need[2 * i] or need[2 * i + 1]:
            # row[j K + k] = weighted class-k count of I ∩ {x_fi = 1} ∩ {x_vf[j] = 1}
            for k in range(K):
                for b in range(B):
                    for w in range(Wc):
                        a[w] = planes[(k * B + b) * Wc + w] & Mc[i * Wc + w]
                    for j in range(nv):
                        m = 0
                        for w in range(Wc):
                            m += popcount64(a[w] & Mc[j * Wc + w])
                        if b == 0:
                            row[j * K + k] = m
                        else:
                            row[j * K + k] += m << b
        pair = 0.0
        for s in range(2):
            bnd = cheap[2 * i + s]
            if need[2 * i + s]:
                ns = N[i * nv + i] if s == 1 else n - N[i * nv + i]
                for k in range(K):
                    cc[k] = D[i * K + k] if s == 1 else c[k] - D[i * K + k]
                leaf = -log_pstop[d + 1] - dm_log_lik(cc, G, Gsum, lconst)
                inner = np.inf
                for j in range(nv):
                    if j == i:
                        continue
                    q = N[i * nv + j] if s == 1 else N[j * nv + j] - N[i * nv + j]
                    if not (q > 0 and q < ns):
                        continue
                    for k in range(K):
                        g1[k] = row[j * K + k] if s == 1 else D[j * K + k] - row[j * K + k]
                        g0[k] = cc[k] - g1[k]
                    v = _sized_bound(g1, d + 2, q, G, Gsum, lconst, log_ps, log_pstop, E, logv, gmax) + _sized_bound(
                        g0, d + 2, ns - q, G, Gsum, lconst, log_ps, log_pstop, E, logv, gmax
                    )
                    if v < inner:
                        inner = v
                bnd = min(leaf, -log_ps[d + 1] + log_int[nvcs[2 * i + s]] + inner)
            # A child already in the graph may know better.
            for w in range(W):
                scratch[w] = words[w] & M1[fi, w] if s == 1 else words[w] & ~M1[fi, w]
            h1, h2 = hash_words128(scratch)
            child, _ = ht_find(h1, h2, d + 1, ht_val, or_h1, or_h2, or_depth)
            if child >= 0 and or_lb[child] > bnd:
                bnd = or_lb[child]
            pair += bnd
            if s == 0 and pair + cheap[2 * i + 1] >= best:
                pair = np.inf
                break
        if pair < best:
            best = pair
    leaf = -log_pstop[d] - dm_log_lik(c, G, Gsum, lconst)
    return min(leaf, -log_ps[d] + log_int[nv] + best)


# The depth-2 probe compiled on its own, for the tests (a search compiles it as the body of
# :func:`_lookahead` instead: one compile unit fewer on the cold path).
_probe2 = njit(cache=True)(_probe2_body)


def _lookahead(model, o, words, scratch, data, tables, nodes, ub_inf, max_rows):  # pragma: no cover
    """The depth-2 probe bound of ``o`` (:func:`_probe2`, at most ``max_rows`` splits looked at
    to depth 2); classification only (:func:`_has_depth2`)."""
    raise NotImplementedError("compiled by numba only")


def _has_depth2(model):  # pragma: no cover
    """Whether the leaf model has a depth-2 probe (:func:`_lookahead`): classification only."""
    raise NotImplementedError("compiled by numba only")


@overload(_has_depth2)
def _has_depth2_impl(model):
    if is_regression_model(model):
        return lambda model: False
    return lambda model: True


@overload(_lookahead)
def _lookahead_impl(model, o, words, scratch, data, tables, nodes, ub_inf, max_rows):
    if is_regression_model(model):
        # Never called: without a depth-2 probe the second visit probes to depth 1 again through
        # the same call of _probe as the first (run_search).  A wrapper here calling _probe
        # would compile _probe's code a second time.
        return lambda model, o, words, scratch, data, tables, nodes, ub_inf, max_rows: -np.inf

    # The body itself, not a wrapper calling a jitted _probe2: numba links a callee's code into
    # its caller's module and optimises it again there, so a wrapper costs a second compile
    # of the whole probe (about 1.2 s of a cold start).
    return _probe2_body


_LB_DIRTY = np.uint8(1)  # the node's best-LB AND got worse: rescan its AND children
_UB_DOWN = np.uint8(2)  # the node's UB already decreased: pass it on to its parents
_PROBED = np.uint8(4)  # an unexpanded node whose lookahead bound (:func:`_probe`) is already in its LB
_LB_UP = np.uint8(8)  # the node's LB already rose (a probe): pass it on without a rescan
_PROBED2 = np.uint8(16)  # an unexpanded node whose depth-2 lookahead bound is already in its LB


@njit(cache=True, inline="always")
def _rescan_lb(o, or_lb, or_leaf, or_pen, or_and_start, or_and_count, or_best, and_child0, and_child1):
    """Fresh ``min(leaf cost, min over AND children of LB)`` of ``o``; caches the argmin AND
    (the first in feature order, -1 when the leaf attains it) in ``or_best``."""
    best = or_leaf[o]
    besta = -1
    pen = or_pen[o]
    s = or_and_start[o]
    for a in range(s, s + or_and_count[o]):
        v = pen + or_lb[and_child0[a]] + or_lb[and_child1[a]]
        if v < best or (besta < 0 and v <= best):
            best = v
            besta = a
    or_best[o] = besta
    return best


@njit(cache=True, no_cpython_wrapper=True)
def _propagate(start, graph, bufs, probed):
    """Propagate bound changes from the just-expanded node ``start`` upwards (spec §3.6).

    With ``probed`` (``_LB_UP`` and/or ``_UB_DOWN``), ``start`` is instead an
    unexpanded node whose LB a probe has just raised and/or whose UB it has
    lowered (a virtual split, :func:`_probe`): only those changes are passed on.

    All parents of a node at depth ``d`` are at depth ``d - 1``, so processing
    level by level visits every changed ancestor once, after all of its
    changed descendants.  LB only ever increases and UB only ever decreases.
    The work is incremental, edge by edge: a child whose UB fell lowers its
    parent's UB in O(1) if the AND through it is now the parent's best; a child
    whose LB rose forces a rescan of the parent's AND children only when that
    AND is the parent's cached best-LB AND (any other AND's LB rising cannot
    change the minimum, because LBs only rise).  The LB jump of an expanded
    node without valid splits is passed on like any other change (the
    reference forgets it, spec §3.6).
    """
    nodes = graph.nodes
    links = graph.links
    or_lb = nodes.or_lb
    or_ub = nodes.or_ub
    or_leaf = links.or_leaf
    or_pen = links.or_pen
    or_and_start = links.or_and_start
    or_and_count = links.or_and_count
    or_first_edge = links.or_first_edge
    or_stamp = links.or_stamp
    or_best = links.or_best
    or_flags = links.or_flags
    and_parent = links.and_parent
    and_child0 = links.and_child0
    and_child1 = links.and_child1
    edge_next = links.edge_next
    counters = nodes.counters
    counters[C_STAMP] += 1
    stamp = counters[C_STAMP]
    cur = bufs.buf_a
    nxt = bufs.buf_b
    n_cur = 1
    cur[0] = start
    if probed:
        or_flags[start] |= probed
    else:
        or_flags[start] = _LB_DIRTY
        # The expanded node's UB: the minimum over its new AND children and its exact leaf cost.
        ubv = or_leaf[start]
        pen = or_pen[start]
        a0 = or_and_start[start]
        for a in range(a0, a0 + or_and_count[start]):
            uv = pen + or_ub[and_child0[a]] + or_ub[and_child1[a]]
            if uv < ubv:
                ubv = uv
        if ubv < or_ub[start]:
            or_ub[start] = ubv
            or_flags[start] |= _UB_DOWN
    while n_cur > 0:
        n_nxt = 0
        for q in range(n_cur):
            o = cur[q]
            flags = or_flags[o]
            or_flags[o] = flags & (_PROBED | _PROBED2)
            lb_up = (flags & _LB_UP) != 0
            if flags & _LB_DIRTY:
                v = _rescan_lb(o, or_lb, or_leaf, or_pen, or_and_start, or_and_count, or_best, and_child0, and_child1)
                if v > or_lb[o]:
                    or_lb[o] = v
                    lb_up = True
            ub_down = (flags & _UB_DOWN) != 0
            if not (lb_up or ub_down):
                continue
            e = or_first_edge[o]
            while e >= 0:
                a = e >> 1
                p = and_parent[a]
                mark = np.uint8(0)
                if ub_down:
                    uv = or_pen[p] + or_ub[and_child0[a]] + or_ub[and_child1[a]]
                    if uv < or_ub[p]:
                        or_ub[p] = uv
                        mark |= _UB_DOWN
                if lb_up and or_best[p] == a:
                    mark |= _LB_DIRTY
                if mark:
                    or_flags[p] |= mark
                    if or_stamp[p] != stamp:
                        or_stamp[p] = stamp
                        nxt[n_nxt] = p
                        n_nxt += 1
                e = edge_next[e]
        cur, nxt = nxt, cur
        n_cur = n_nxt


@njit(cache=True)
def run_search(data, model, tables, graph, bufs, root_words, max_iter, tie_rule, ub_inf, probe, start):
    """Run up to ``max_iter`` iterations of MAPTree's best-first search.

    One iteration: descend from the root along the minimum-LB split into the
    child with the larger UB - LB gap until an unexpanded OR node (Alg. 3),
    expand it (Alg. 1), propagate the bounds (Alg. 4, 5).  ``tie_rule`` 0 is the
    paper's gap tie rule (ties go to the ``x_f = 1`` child), 1 the reference's
    (ties go to ``x_f = 0``).  With ``probe`` >= 1, a node reached for the
    first time is probed instead (:func:`_probe`): if that raises its LB, the
    rise is propagated and the iteration ends without an expansion.  With
    ``probe`` == 2 the second visit probes to depth 2 (:func:`_lookahead`).
    The node is expanded when a later descent reaches it again.  Returns a
    status code (``STATUS_*``).

    ``start`` is the OR node the descents start from and ``root_words`` its
    samples: 0 and the full data for the search itself; an internal node of
    the incumbent for a focused search of that subproblem (STATUS_SOLVED then
    means that node is solved).  Bounds are propagated to every ancestor
    either way, so the graph stays consistent.
    """
    nodes = graph.nodes
    links = graph.links
    M1 = data.M1
    or_lb = nodes.or_lb
    or_ub = nodes.or_ub
    or_expanded = links.or_expanded
    or_best = links.or_best
    or_flags = links.or_flags
    and_feature = links.and_feature
    and_child0 = links.and_child0
    and_child1 = links.and_child1
    counters = nodes.counters
    words = bufs.words
    scratch = bufs.scratch
    F, W = M1.shape
    cap_or = or_lb.shape[0]
    cap_and = and_feature.shape[0]
    cap_ht = nodes.ht_val.shape[0]
    for _ in range(max_iter):
        if or_lb[start] >= or_ub[start]:
            return STATUS_SOLVED
        if (
            counters[C_N_OR] + 2 * F > cap_or
            or counters[C_N_AND] + F > cap_and
            or 2 * (counters[C_HT_USED] + 2 * F) > cap_ht
        ):
            return STATUS_GROW
        for w in range(W):
            words[w] = root_words[w]
        o = start
        while or_expanded[o]:
            abest = or_best[o]  # the first minimum-LB AND child, kept current by _propagate
            if abest < 0:
                return STATUS_INTERNAL_ERROR
            c0 = and_child0[abest]
            c1 = and_child1[abest]
            g0 = or_ub[c0] - or_lb[c0]
            g1 = or_ub[c1] - or_lb[c1]
            if tie_rule == 0:
                go_right = not (g0 > g1)
            else:
                go_right = g0 < g1
            f = and_feature[abest]
            if go_right:
                for w in range(W):
                    words[w] &= M1[f, w]
                o = c1
                gap = g1
            else:
                for w in range(W):
                    words[w] &= ~M1[f, w]
                o = c0
                gap = g0
            if not (gap > 0.0):
                return STATUS_INTERNAL_ERROR
        do_probe = probe > 0 and not (or_flags[o] & _PROBED2)
        if do_probe and (or_flags[o] & _PROBED):
            # The second visit: a depth-2 probe, unless the node is too large for pair counts.
            if probe == 1:
                do_probe = False
            else:
                size = 0
                for w in range(W):
                    size += popcount64(words[w])
                do_probe = size <= PROBE2_MAX_SAMPLES
        if do_probe:
            vub = np.inf
            vf = -1
            first = not (or_flags[o] & _PROBED)
            if first or not _has_depth2(model):
                # Depth 1: the first visit, or regression's second (children stored since may
                # know more).  One call site: _probe is inlined (see the inlining policy above).
                or_flags[o] |= _PROBED if first else _PROBED2
                v, vub, vf = _probe(o, words, scratch, data, model, tables, nodes, ub_inf)
            else:
                or_flags[o] |= _PROBED2
                v = _lookahead(model, o, words, scratch, data, tables, nodes, ub_inf, PROBE2_ROWS)
            counters[C_N_PROBE] += 1
            changed = np.uint8(0)
            if vub < or_ub[o]:
                or_ub[o] = vub
                or_best[o] = -2 - vf  # the virtual incumbent: split on vf (see _probe)
                changed |= _UB_DOWN
            if v > or_lb[o]:
                or_lb[o] = v
                changed |= _LB_UP
            if changed:
                _propagate(o, graph, bufs, np.uint8(changed))
            if (changed & _LB_UP) or or_lb[o] >= or_ub[o]:
                continue
        expand_node(o, words, data, model, tables, graph, bufs, ub_inf)
    if or_lb[start] >= or_ub[start]:
        return STATUS_SOLVED
    return STATUS_BUDGET
