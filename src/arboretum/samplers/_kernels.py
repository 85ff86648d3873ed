"""Numba kernels of the BCART samplers (MCMC and SMC).

Everything here takes plain NumPy arrays and integers.

Data
----
Kernels receive the data set as one named tuple, :class:`Data`, built once per
data set by :class:`arboretum.samplers._base.Problem`: ``X`` (n, F) uint8,
``y`` (n,) int64 class indices, ``X_bits`` (F, W) and ``y_bits`` (K, W) the
columns of ``X`` and the class indicators packed as bitsets over the samples
(:mod:`arboretum._numba`), and the posterior tables below, read by field name
(``data.log_split``).

Node statistics (class counts and the number of ones of every feature over a
set of samples) are computed by scanning the rows of ``X`` for small sets and by
popcounts of the set's bitset against ``X_bits`` and ``y_bits`` for large ones
(cost ``|S| + F W`` instead of ``|S| F``).

Posterior tables
----------------
The BCART log posterior of a tree (see :func:`arboretum.bayes.log_posterior`)
is a sum of one term per node, and every term is read from tables:

``G``, ``Gsum``, ``lconst``
    the Dirichlet-multinomial tables of :func:`arboretum._numba.dirichlet_tables`
    for leaves of ``0 .. n`` samples, relative to the empty leaf
    (``G[k, c] = lgamma(c + rho_k) - lgamma(rho_k)``,
    ``Gsum[m] = lgamma(m + sum(rho)) - lgamma(sum(rho))``, ``lconst = 0``);
``log_split[d]``, ``log_stop[d]``
    ``log p_split(d)`` and ``log(1 - p_split(d))`` for ``d = 0 .. n_features + 1``.

A leaf with class counts ``c`` has log likelihood
:func:`arboretum._numba.dm_log_lik` ``(c, G, Gsum, lconst)`` (the Dirichlet-multinomial
marginal).  With ``V`` the number of valid splits of a node at depth ``d``
(features taking both values on its samples), the node's term is

* internal: ``log_split[d] - log(V)``;
* leaf: ``loglik + log_stop[d]`` if ``V > 0``, else ``loglik``.

Tree encoding
-------------
A tree with binary splits is passed around as its *pre-order encoding*: an
``int32`` vector listing the nodes in pre-order (node, left subtree, right
subtree), with the split feature of an internal node and ``-1`` for a leaf.
``[-1]`` is a single leaf and ``[3, -1, -1]`` a stump on ``x3`` (left child
``x3 == 0``).

Node table
----------
Kernels that route samples keep a tree in an ``int64`` table ``node`` of shape
``(capacity, N_COLS)`` whose columns are :data:`LEFT`, :data:`RIGHT`,
:data:`PARENT`, :data:`FEAT` (``-1`` at leaves), :data:`DEPTH`, :data:`START`,
:data:`END` and :data:`NVALID`, and a ``float64`` vector ``loglik`` (the leaf log
likelihood of each node's samples, kept for internal nodes too).  The samples
of node ``v`` are ``perm[START:END]`` of a permutation ``perm`` of the sample
indices; children split their parent's segment (left part: ``x_f == 0``).

Random numbers
--------------
The MCMC chain runs in chunks between which Python checks the time limit, so
it carries its own generator state: the xoshiro256** generator of
:mod:`arboretum._numba` in a ``uint64[4]`` array.  Results therefore do not
depend on how the run is cut into chunks.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from .._numba import dm_log_lik, popcount64, randint, uniform



class Data(NamedTuple):
    """One data set and its posterior tables, as the kernels take it (see the module docstring).

    ``G, Gsum, lconst`` are the fields of :class:`arboretum._numba.DirichletTables` held flat:
    numba counts references per array, and reading a nested tuple costs its arrays' counts again.
    """

    X: np.ndarray  #: (n, F) uint8 features
    y: np.ndarray  #: (n,) int64 class indices
    X_bits: np.ndarray  #: (F, W) uint64: the columns of X as bitsets over the samples
    y_bits: np.ndarray  #: (K, W) uint64: the class indicators as bitsets
    G: np.ndarray  #: lgamma(c + rho_k) - lgamma(rho_k)
    Gsum: np.ndarray  #: lgamma(m + sum(rho)) - lgamma(sum(rho))
    lconst: float  #: 0 (the tables are relative to the empty leaf)
    log_split: np.ndarray  #: log p_split(d), d = 0 .. F + 1
    log_stop: np.ndarray  #: log(1 - p_split(d))


# ---------------------------------------------------------------------------
# Node table layout
# ---------------------------------------------------------------------------

LEFT, RIGHT, PARENT, FEAT, DEPTH, START, END, NVALID = 0, 1, 2, 3, 4, 5, 6, 7
N_COLS = 8

# Moves of the MCMC chain (rows of ``move_stats``).
GROW, PRUNE, CHANGE, SWAP = 0, 1, 2, 3

# Integer state of a chain (``meta``).
M_FREE_TOP = 0  # number of ids on the free stack
M_N_NODES = 1  # nodes in the current tree
M_DIRTY = 2  # 1 when the tree changed since its last encoding was written
M_N_ENC = 3  # encodings written so far (over all chunks)
M_BEST_LEN = 4  # length of the best tree's encoding in ``best_enc``
M_SIZE = 5

# Float state of a chain (``fmeta``).
F_LOGPOST = 0  # log posterior of the current tree
F_BEST = 1  # best log posterior seen
F_SIZE = 2

# Chunk outputs (``out``).
O_N_REC = 0  # samples recorded in this chunk
O_N_ENC = 1  # encodings written in this chunk
O_ENC_USED = 2  # entries of ``enc_buf`` used in this chunk
O_SIZE = 3

_NEG_INF = -np.inf

# ---------------------------------------------------------------------------
# Node statistics
# ---------------------------------------------------------------------------


@njit(cache=True, inline="always")
def leaf_term(d, n_valid, loglik, log_stop):
    """Log posterior term of a leaf at depth ``d``."""
    if n_valid > 0:
        return loglik + log_stop[d]
    return loglik


@njit(cache=True, inline="always")
def split_term(d, n_valid, log_split):
    """Log posterior term of an internal node at depth ``d`` (``n_valid >= 1``)."""
    return log_split[d] - math.log(n_valid)


#: Use the bitset path when ``|S| F > _BITSET_FACTOR (|S| + F W)``.
_BITSET_FACTOR = 4
_U0 = np.uint64(0)
_U1 = np.uint64(1)
_U63 = np.uint64(63)


@njit(cache=True)
def _fill_bits(idx, a, b, seg):
    """Set the bits of samples ``idx[a:b]`` in ``seg``; return the range ``(lo, hi)`` of words touched."""
    lo = seg.shape[0]
    hi = -1
    for i in range(a, b):
        s = idx[i]
        w = s >> 6
        seg[w] |= _U1 << (np.uint64(s) & _U63)
        if w < lo:
            lo = w
        if w > hi:
            hi = w
    return lo, hi


@njit(cache=True)
def segment_stats(data, perm, a, b, counts, ones, seg):
    """Class counts and per-feature counts of ones of the samples ``perm[a:b]``.

    Fills ``counts`` (n_classes,) and ``ones`` (n_features,); ``seg`` is a
    zeroed scratch bitset of ``W`` words, left zeroed.  Returns
    ``(n_valid, loglik)``: the number of valid splits and the leaf log
    likelihood of the segment.
    """
    X = data.X
    y = data.y
    X_bits = data.X_bits
    y_bits = data.y_bits
    n_features = X.shape[1]
    m = b - a
    if m * n_features <= _BITSET_FACTOR * (m + n_features * X_bits.shape[1]):
        counts[:] = 0
        ones[:] = 0
        for i in range(a, b):
            s = perm[i]
            counts[y[s]] += 1
            row = X[s]
            for f in range(n_features):
                ones[f] += row[f]
    else:
        lo, hi = _fill_bits(perm, a, b, seg)
        for f in range(n_features):
            c = _U0
            for w in range(lo, hi + 1):
                c += popcount64(seg[w] & X_bits[f, w])
            ones[f] = c
        for k in range(counts.shape[0]):
            c = _U0
            for w in range(lo, hi + 1):
                c += popcount64(seg[w] & y_bits[k, w])
            counts[k] = c
        for w in range(lo, hi + 1):
            seg[w] = _U0
    n_valid = 0
    for f in range(n_features):
        if 0 < ones[f] < m:
            n_valid += 1
    return n_valid, dm_log_lik(counts, data.G, data.Gsum, data.lconst)


@njit(cache=True)
def partition(X, perm, a, b, f):
    """Reorder ``perm[a:b]`` so that samples with ``x_f == 0`` come first; return the boundary."""
    i = a
    j = b - 1
    while True:
        while i <= j and X[perm[i], f] == 0:
            i += 1
        while i <= j and X[perm[j], f] != 0:
            j -= 1
        if i >= j:
            return i
        tmp = perm[i]
        perm[i] = perm[j]
        perm[j] = tmp
        i += 1
        j -= 1


@njit(cache=True)
def subset_stats(data, idx, with_split):
    """Statistics of the sample subset ``idx`` used by the SMC node pool.

    Returns
    -------
    counts : int64 (n_classes,)
        Class counts.
    valid : int64 (n_valid,)
        The valid split features, increasing.
    split_loglik : float64 (n_valid,) or (0,)
        If ``with_split``: ``loglik(x_f == 0 part) + loglik(x_f == 1 part)`` of
        each valid feature (this needs the class counts of every feature, ``K``
        times the work of the rest on the bitset path); else empty.
    loglik : float
        Leaf log likelihood of the subset.
    """
    X = data.X
    y = data.y
    X_bits = data.X_bits
    y_bits = data.y_bits
    G = data.G
    Gsum = data.Gsum
    lconst = data.lconst
    n_features = X.shape[1]
    n_classes = y_bits.shape[0]
    n_words = X_bits.shape[1]
    m = idx.shape[0]
    n_rows = n_classes if with_split else 1  # ones[k, f]: by class, or all classes in row 0
    counts = np.zeros(n_classes, dtype=np.int64)
    ones = np.zeros((n_rows, n_features), dtype=np.int64)
    if m * n_features <= _BITSET_FACTOR * (m + n_rows * n_features * n_words):
        for i in range(m):
            s = idx[i]
            k = y[s]
            counts[k] += 1
            row = X[s]
            r = k if with_split else 0
            for f in range(n_features):
                ones[r, f] += row[f]
    else:
        seg = np.zeros(n_words, dtype=np.uint64)
        lo, hi = _fill_bits(idx, 0, m, seg)
        for k in range(n_classes):
            c = _U0
            for w in range(lo, hi + 1):
                c += popcount64(seg[w] & y_bits[k, w])
            counts[k] = c
        part = np.zeros(n_words, dtype=np.uint64)
        for r in range(n_rows):
            for w in range(lo, hi + 1):
                part[w] = seg[w] & y_bits[r, w] if with_split else seg[w]
            for f in range(n_features):
                c = _U0
                for w in range(lo, hi + 1):
                    c += popcount64(part[w] & X_bits[f, w])
                ones[r, f] = c
    n_valid = 0
    tot = np.zeros(n_features, dtype=np.int64)
    for f in range(n_features):
        t = 0
        for r in range(n_rows):
            t += ones[r, f]
        tot[f] = t
        if 0 < t < m:
            n_valid += 1
    valid = np.empty(n_valid, dtype=np.int64)
    split_loglik = np.empty(n_valid if with_split else 0, dtype=np.float64)
    c1 = np.empty(n_classes, dtype=np.int64)
    c0 = np.empty(n_classes, dtype=np.int64)
    j = 0
    for f in range(n_features):
        if 0 < tot[f] < m:
            valid[j] = f
            if with_split:
                for k in range(n_classes):
                    c1[k] = ones[k, f]
                    c0[k] = counts[k] - c1[k]
                split_loglik[j] = dm_log_lik(c0, G, Gsum, lconst) + dm_log_lik(c1, G, Gsum, lconst)
            j += 1
    return counts, valid, split_loglik, dm_log_lik(counts, G, Gsum, lconst)


@njit(cache=True)
def split_indices(X, idx, f):
    """Split the sample indices ``idx`` into those with ``x_f == 0`` and ``x_f == 1`` (order kept)."""
    n_right = 0
    for i in range(idx.shape[0]):
        n_right += X[idx[i], f] != 0
    left = np.empty(idx.shape[0] - n_right, dtype=idx.dtype)
    right = np.empty(n_right, dtype=idx.dtype)
    a = 0
    b = 0
    for i in range(idx.shape[0]):
        s = idx[i]
        if X[s, f] != 0:
            right[b] = s
            b += 1
        else:
            left[a] = s
            a += 1
    return left, right


@njit(cache=True)
def split_stats(data, idx, f, with_split):
    """:func:`split_indices` of ``idx`` on feature ``f`` and the :func:`subset_stats` of both sides.

    Returns ``(left, right, *subset_stats(left), *subset_stats(right))``.  One
    call instead of three: the SMC node pool makes one per new split, and a
    call from Python costs more than the work on a small subset.
    """
    left, right = split_indices(data.X, idx, f)
    c0, v0, s0, l0 = subset_stats(data, left, with_split)
    c1, v1, s1, l1 = subset_stats(data, right, with_split)
    return left, right, c0, v0, s0, l0, c1, v1, s1, l1


# ---------------------------------------------------------------------------
# Trees in a node table
# ---------------------------------------------------------------------------


@njit(cache=True)
def decode(enc, node):
    """Write the tree of a pre-order encoding into ``node`` (ids = pre-order positions).

    Sets LEFT, RIGHT, PARENT, FEAT and DEPTH.  Returns the number of nodes, or
    ``-1`` if the encoding is malformed or longer than the table.
    """
    n = enc.shape[0]
    if n == 0 or n > node.shape[0]:
        return -1
    stack = np.empty(n, dtype=np.int64)
    top = 0
    for i in range(n):
        if i > 0 and top == 0:
            return -1  # tokens after a complete tree
        node[i, LEFT] = -1
        node[i, RIGHT] = -1
        node[i, FEAT] = enc[i]
        if top > 0:
            p = stack[top - 1]
            if node[p, LEFT] == -1:
                node[p, LEFT] = i
            else:
                node[p, RIGHT] = i
                top -= 1
            node[i, PARENT] = p
            node[i, DEPTH] = node[p, DEPTH] + 1
        else:
            node[i, PARENT] = -1
            node[i, DEPTH] = 0
        if enc[i] >= 0:
            stack[top] = i
            top += 1
        elif enc[i] != -1:
            return -1
    if top != 0:
        return -1
    return n


@njit(cache=True)
def route_subtree(data, node, loglik, perm, v, top_known, counts, ones, seg, stack):
    """Route the samples of node ``v`` down its subtree; return the subtree's log posterior.

    The segment of ``v`` must be set.  Every node below ``v`` gets its segment
    and statistics recomputed; ``v``'s own statistics are recomputed too unless
    ``top_known`` (its sample set did not change).  Returns ``-inf`` as soon as
    an internal node's feature does not split its samples non-trivially (the
    tree has prior probability 0); the table is then partly updated.
    """
    X = data.X
    log_split = data.log_split
    log_stop = data.log_stop
    total = 0.0
    stack[0] = v
    top = 1
    while top > 0:
        top -= 1
        u = stack[top]
        a = node[u, START]
        b = node[u, END]
        d = node[u, DEPTH]
        f = node[u, FEAT]
        if u == v and top_known:
            nv = node[u, NVALID]
        else:
            nv, ll = segment_stats(data, perm, a, b, counts, ones, seg)
            node[u, NVALID] = nv
            loglik[u] = ll
            if f >= 0 and not (0 < ones[f] < b - a):
                return _NEG_INF
        if f < 0:
            total += leaf_term(d, nv, loglik[u], log_stop)
        else:
            total += split_term(d, nv, log_split)
            mid = partition(X, perm, a, b, f)
            left = node[u, LEFT]
            right = node[u, RIGHT]
            node[left, START] = a
            node[left, END] = mid
            node[right, START] = mid
            node[right, END] = b
            stack[top] = right
            stack[top + 1] = left
            top += 2
    return total


@njit(cache=True)
def subtree_terms(node, loglik, log_split, log_stop, v, stack):
    """Sum of the stored log posterior terms of the subtree of ``v``."""
    total = 0.0
    stack[0] = v
    top = 1
    while top > 0:
        top -= 1
        u = stack[top]
        d = node[u, DEPTH]
        if node[u, LEFT] < 0:
            total += leaf_term(d, node[u, NVALID], loglik[u], log_stop)
        else:
            total += split_term(d, node[u, NVALID], log_split)
            stack[top] = node[u, RIGHT]
            stack[top + 1] = node[u, LEFT]
            top += 2
    return total


@njit(cache=True)
def write_encoding(node, out, pos, stack):
    """Write the pre-order encoding of the tree rooted at node 0 into ``out[pos:]``; return the end."""
    stack[0] = 0
    top = 1
    while top > 0:
        top -= 1
        u = stack[top]
        out[pos] = node[u, FEAT]
        pos += 1
        if node[u, LEFT] >= 0:
            stack[top] = node[u, RIGHT]
            stack[top + 1] = node[u, LEFT]
            top += 2
    return pos


@njit(cache=True)
def encoding_log_posterior(enc, data):
    """Log posterior of the tree of a pre-order encoding (``nan`` if malformed, ``-inf`` if degenerate)."""
    X = data.X
    X_bits = data.X_bits
    n = X.shape[0]
    node = np.empty((enc.shape[0], N_COLS), dtype=np.int64)
    if decode(enc, node) < 0:
        return np.nan
    loglik = np.empty(enc.shape[0], dtype=np.float64)
    perm = np.arange(n)
    node[0, START] = 0
    node[0, END] = n
    counts = np.empty(data.y_bits.shape[0], dtype=np.int64)
    ones = np.empty(X.shape[1], dtype=np.int64)
    seg = np.zeros(X_bits.shape[1], dtype=np.uint64)
    stack = np.empty(enc.shape[0] + 2, dtype=np.int64)
    return route_subtree(data, node, loglik, perm, 0, False, counts, ones, seg, stack)


@njit(cache=True)
def accumulate_proba(encodings, offsets, weights, X, y, rho, X_test, out):
    """Add ``weights[j] * predict_proba_j(X_test)`` to ``out`` for every encoded tree ``j``.

    Tree ``j`` is ``encodings[offsets[j]:offsets[j + 1]]``; its leaves predict
    the posterior mean ``(c + rho) / (n + sum(rho))`` of their training counts.
    """
    n_classes = rho.shape[0]
    rho_sum = 0.0
    for k in range(n_classes):
        rho_sum += rho[k]
    for j in range(offsets.shape[0] - 1):
        enc = encodings[offsets[j]:offsets[j + 1]]
        m = enc.shape[0]
        node = np.empty((m, N_COLS), dtype=np.int64)
        decode(enc, node)
        leaf_counts = np.zeros((m, n_classes), dtype=np.float64)
        for i in range(X.shape[0]):
            u = 0
            while node[u, LEFT] >= 0:
                u = node[u, RIGHT] if X[i, node[u, FEAT]] != 0 else node[u, LEFT]
            leaf_counts[u, y[i]] += 1.0
        w = weights[j]
        for i in range(X_test.shape[0]):
            u = 0
            while node[u, LEFT] >= 0:
                u = node[u, RIGHT] if X_test[i, node[u, FEAT]] != 0 else node[u, LEFT]
            total = rho_sum
            for k in range(n_classes):
                total += leaf_counts[u, k]
            for k in range(n_classes):
                out[i, k] += w * (leaf_counts[u, k] + rho[k]) / total


# ---------------------------------------------------------------------------
# MCMC chain (Chipman, George & McCulloch 1998)
# ---------------------------------------------------------------------------


@njit(cache=True)
def chain_load(enc, data, node, loglik, perm, free, meta, fmeta, best_enc):
    """Make the tree of ``enc`` the current state of a chain; return its log posterior.

    Returns ``nan`` if the encoding is malformed or too long, ``-inf`` if it is
    degenerate on the data.  Resets the free list, the best tree and the
    encoding bookkeeping.
    """
    X = data.X
    X_bits = data.X_bits
    n = X.shape[0]
    capacity = node.shape[0]
    n_nodes = decode(enc, node)
    if n_nodes < 0:
        return np.nan
    for i in range(n):
        perm[i] = i
    node[0, START] = 0
    node[0, END] = n
    counts = np.empty(data.y_bits.shape[0], dtype=np.int64)
    ones = np.empty(X.shape[1], dtype=np.int64)
    seg = np.zeros(X_bits.shape[1], dtype=np.uint64)
    stack = np.empty(capacity + 2, dtype=np.int64)
    total = route_subtree(data, node, loglik, perm, 0, False, counts, ones, seg, stack)
    # Free ids, popped in increasing order.
    top = 0
    for i in range(capacity - 1, n_nodes - 1, -1):
        free[top] = i
        top += 1
    meta[M_FREE_TOP] = top
    meta[M_N_NODES] = n_nodes
    meta[M_DIRTY] = 1
    meta[M_N_ENC] = 0
    fmeta[F_LOGPOST] = total
    fmeta[F_BEST] = total
    meta[M_BEST_LEN] = write_encoding(node, best_enc, 0, stack)
    return total


@njit(cache=True)
def _tree_total(node, loglik, log_split, log_stop, stack):
    return subtree_terms(node, loglik, log_split, log_stop, 0, stack)


@njit(cache=True)
def _collect(node, stack, cand, kind):
    """Collect the candidates of a move into ``cand``; return how many.

    kind GROW: leaves with a valid split; PRUNE: internal nodes whose children
    are both leaves; CHANGE: internal nodes; SWAP: internal nodes whose parent
    is internal (the child of each parent-child pair).
    """
    n_cand = 0
    stack[0] = 0
    top = 1
    while top > 0:
        top -= 1
        u = stack[top]
        left = node[u, LEFT]
        if left < 0:
            if kind == GROW and node[u, NVALID] > 0:
                cand[n_cand] = u
                n_cand += 1
            continue
        right = node[u, RIGHT]
        if kind == PRUNE:
            if node[left, LEFT] < 0 and node[right, LEFT] < 0:
                cand[n_cand] = u
                n_cand += 1
        elif kind == CHANGE:
            cand[n_cand] = u
            n_cand += 1
        elif kind == SWAP:
            if node[left, LEFT] >= 0:
                cand[n_cand] = left
                n_cand += 1
            if node[right, LEFT] >= 0:
                cand[n_cand] = right
                n_cand += 1
        stack[top] = right
        stack[top + 1] = left
        top += 2
    return n_cand


@njit(cache=True)
def _accept(rng, cur, old_terms, new_terms, log_q):
    """Metropolis-Hastings decision for replacing terms ``old_terms`` by ``new_terms``."""
    if new_terms == _NEG_INF:
        return False
    if cur == _NEG_INF:
        return True  # leave a zero-probability state (only possible with alpha == 1)
    return math.log(uniform(rng)) < (new_terms - old_terms) + log_q


@njit(cache=True)
def _save_subtree(node, loglik, perm, v, sub, save_node, save_ll, save_perm, stack):
    """Copy the rows of the subtree of ``v`` and its segment of ``perm``; return the number of nodes."""
    n_sub = 0
    stack[0] = v
    top = 1
    while top > 0:
        top -= 1
        u = stack[top]
        sub[n_sub] = u
        for c in range(N_COLS):
            save_node[n_sub, c] = node[u, c]
        save_ll[n_sub] = loglik[u]
        n_sub += 1
        if node[u, LEFT] >= 0:
            stack[top] = node[u, RIGHT]
            stack[top + 1] = node[u, LEFT]
            top += 2
    a = node[v, START]
    for i in range(a, node[v, END]):
        save_perm[i - a] = perm[i]
    return n_sub


@njit(cache=True)
def _restore_subtree(node, loglik, perm, n_sub, sub, save_node, save_ll, save_perm):
    for j in range(n_sub):
        u = sub[j]
        for c in range(N_COLS):
            node[u, c] = save_node[j, c]
        loglik[u] = save_ll[j]
    v = sub[0]
    a = node[v, START]
    for i in range(a, node[v, END]):
        perm[i] = save_perm[i - a]


@njit(cache=True)
def _new_leaf(data, node, loglik, perm, c, parent, depth, a, b, counts, ones, seg):
    """Initialise row ``c`` as a leaf child of ``parent`` holding ``perm[a:b]``."""
    node[c, LEFT] = -1
    node[c, RIGHT] = -1
    node[c, PARENT] = parent
    node[c, FEAT] = -1
    node[c, DEPTH] = depth
    node[c, START] = a
    node[c, END] = b
    nv, ll = segment_stats(data, perm, a, b, counts, ones, seg)
    node[c, NVALID] = nv
    loglik[c] = ll


@njit(cache=True)
def _jth_valid(ones, m, j, skip):
    """The ``j``-th (0-based) feature ``f != skip`` with ``0 < ones[f] < m``."""
    for f in range(ones.shape[0]):
        if f != skip and 0 < ones[f] < m:
            if j == 0:
                return f
            j -= 1
    return -1


@njit(cache=True)
def mcmc_chain(data, move_cum, log_move, node, loglik, perm, free, meta, fmeta, rng, move_stats,
               n_iter, it0, burn_in, thin,
               rec_lp, rec_enc, enc_buf, out, best_enc):
    """Run up to ``n_iter`` Metropolis-Hastings iterations of the BCART chain.

    Each iteration draws a move (grow, prune, change, swap) with the
    cumulative probabilities ``move_cum`` and accepts the proposal with the
    Metropolis-Hastings probability, proposal ratio included (see
    :mod:`arboretum.samplers.mcmc`).  After global iteration ``t`` (1-based,
    ``t = it0 + 1, ...``) with ``t > burn_in`` and ``(t - burn_in) % thin == 0``
    the state is recorded: its log posterior in ``rec_lp`` and the id of its
    encoding in ``rec_enc``; a new encoding is written to ``enc_buf`` only when
    the tree changed since the last one written.

    Returns the number of iterations done: fewer than ``n_iter`` when the
    record or encoding buffers are full.  ``out`` receives the chunk's counts
    (``O_N_REC``, ``O_N_ENC``, ``O_ENC_USED``).
    """
    X = data.X
    X_bits = data.X_bits
    log_split = data.log_split
    log_stop = data.log_stop
    capacity = node.shape[0]
    counts = np.empty(data.y_bits.shape[0], dtype=np.int64)
    ones = np.empty(X.shape[1], dtype=np.int64)
    seg = np.zeros(X_bits.shape[1], dtype=np.uint64)
    stack = np.empty(capacity + 2, dtype=np.int64)
    cand = np.empty(capacity, dtype=np.int64)
    sub = np.empty(capacity, dtype=np.int64)
    save_node = np.empty((capacity, N_COLS), dtype=np.int64)
    save_ll = np.empty(capacity, dtype=np.float64)
    save_perm = np.empty(X.shape[0], dtype=np.int64)

    cur = fmeta[F_LOGPOST]
    n_rec = 0
    n_enc = 0
    enc_used = 0
    done = 0
    while done < n_iter:
        # Room for one record and one encoding of a tree grown by 2 nodes, plus its separator.
        if n_rec >= rec_lp.shape[0] or enc_used + meta[M_N_NODES] + 3 > enc_buf.shape[0]:
            break
        u = uniform(rng)
        move = 0
        while move < 3 and u >= move_cum[move]:
            move += 1
        accepted = False
        if move == GROW:
            n_grow = _collect(node, stack, cand, GROW)
            if n_grow > 0 and meta[M_FREE_TOP] >= 2:
                move_stats[GROW, 0] += 1
                v = cand[randint(rng, n_grow)]
                a = node[v, START]
                b = node[v, END]
                d = node[v, DEPTH]
                nv, ll = segment_stats(data, perm, a, b, counts, ones, seg)
                f = _jth_valid(ones, b - a, randint(rng, nv), -1)
                mid = partition(X, perm, a, b, f)
                meta[M_FREE_TOP] -= 1
                left = free[meta[M_FREE_TOP]]
                meta[M_FREE_TOP] -= 1
                right = free[meta[M_FREE_TOP]]
                _new_leaf(data, node, loglik, perm, left, v, d + 1, a, mid, counts, ones, seg)
                _new_leaf(data, node, loglik, perm, right, v, d + 1, mid, b, counts, ones, seg)
                old_terms = leaf_term(d, nv, ll, log_stop)
                new_terms = (split_term(d, nv, log_split)
                             + leaf_term(d + 1, node[left, NVALID], loglik[left], log_stop)
                             + leaf_term(d + 1, node[right, NVALID], loglik[right], log_stop))
                # Reverse move: prune v, chosen among the prunable nodes of the new tree.
                n_prune_new = _collect(node, stack, cand, PRUNE) + 1
                p = node[v, PARENT]
                if p >= 0:
                    sibling = node[p, RIGHT] if node[p, LEFT] == v else node[p, LEFT]
                    if node[sibling, LEFT] < 0:
                        n_prune_new -= 1  # p was prunable and no longer is
                log_q = (log_move[PRUNE] - math.log(n_prune_new)) - (
                    log_move[GROW] - math.log(n_grow) - math.log(nv))
                if _accept(rng, cur, old_terms, new_terms, log_q):
                    accepted = True
                    node[v, LEFT] = left
                    node[v, RIGHT] = right
                    node[v, FEAT] = f
                    meta[M_N_NODES] += 2
                else:
                    free[meta[M_FREE_TOP]] = right
                    meta[M_FREE_TOP] += 1
                    free[meta[M_FREE_TOP]] = left
                    meta[M_FREE_TOP] += 1
        elif move == PRUNE:
            n_prune = _collect(node, stack, cand, PRUNE)
            if n_prune > 0:
                move_stats[PRUNE, 0] += 1
                v = cand[randint(rng, n_prune)]
                d = node[v, DEPTH]
                nv = node[v, NVALID]
                left = node[v, LEFT]
                right = node[v, RIGHT]
                old_terms = (split_term(d, nv, log_split)
                             + leaf_term(d + 1, node[left, NVALID], loglik[left], log_stop)
                             + leaf_term(d + 1, node[right, NVALID], loglik[right], log_stop))
                new_terms = leaf_term(d, nv, loglik[v], log_stop)
                # Reverse move: grow v (now a leaf with a valid split) on its old feature.
                n_grow_new = _collect(node, stack, cand, GROW) + 1
                if node[left, NVALID] > 0:
                    n_grow_new -= 1
                if node[right, NVALID] > 0:
                    n_grow_new -= 1
                log_q = (log_move[GROW] - math.log(n_grow_new) - math.log(nv)) - (
                    log_move[PRUNE] - math.log(n_prune))
                if _accept(rng, cur, old_terms, new_terms, log_q):
                    accepted = True
                    node[v, LEFT] = -1
                    node[v, RIGHT] = -1
                    node[v, FEAT] = -1
                    free[meta[M_FREE_TOP]] = right
                    meta[M_FREE_TOP] += 1
                    free[meta[M_FREE_TOP]] = left
                    meta[M_FREE_TOP] += 1
                    meta[M_N_NODES] -= 2
        else:
            # CHANGE and SWAP keep the shape, so the proposal is symmetric (log_q = 0).
            n_cand = _collect(node, stack, cand, move)
            v = -1
            c = -1
            new_f = -1
            if move == CHANGE and n_cand > 0:
                w = cand[randint(rng, n_cand)]
                if node[w, NVALID] >= 2:
                    v = w
                    a = node[v, START]
                    b = node[v, END]
                    segment_stats(data, perm, a, b, counts, ones, seg)
                    new_f = _jth_valid(ones, b - a, randint(rng, node[v, NVALID] - 1), node[v, FEAT])
            elif move == SWAP and n_cand > 0:
                c = cand[randint(rng, n_cand)]
                v = node[c, PARENT]
            if v >= 0:
                move_stats[move, 0] += 1
                old_terms = subtree_terms(node, loglik, log_split, log_stop, v, stack)
                n_sub = _save_subtree(node, loglik, perm, v, sub, save_node, save_ll, save_perm, stack)
                if move == CHANGE:
                    node[v, FEAT] = new_f
                else:
                    fp = node[v, FEAT]
                    fc = node[c, FEAT]
                    sibling = node[v, RIGHT] if node[v, LEFT] == c else node[v, LEFT]
                    node[v, FEAT] = fc
                    node[c, FEAT] = fp
                    if node[sibling, LEFT] >= 0 and node[sibling, FEAT] == fc:
                        node[sibling, FEAT] = fp
                new_terms = route_subtree(data, node, loglik, perm, v, True, counts, ones, seg, stack)
                if _accept(rng, cur, old_terms, new_terms, 0.0):
                    accepted = True
                else:
                    _restore_subtree(node, loglik, perm, n_sub, sub, save_node, save_ll, save_perm)
        if accepted:
            move_stats[move, 1] += 1
            meta[M_DIRTY] = 1
            # Re-sum the stored node terms in tree order (as cheap as collecting the candidates):
            # no rounding drift, and equal trees get bit-identical values however they were reached.
            cur = _tree_total(node, loglik, log_split, log_stop, stack)
            if cur > fmeta[F_BEST]:
                fmeta[F_BEST] = cur
                meta[M_BEST_LEN] = write_encoding(node, best_enc, 0, stack)
        done += 1
        t = it0 + done
        if t > burn_in and (t - burn_in) % thin == 0:
            if meta[M_DIRTY] == 1:
                enc_used = write_encoding(node, enc_buf, enc_used, stack)
                n_enc += 1
                meta[M_N_ENC] += 1
                meta[M_DIRTY] = 0
                enc_buf[enc_used] = -2  # separator between encodings
                enc_used += 1
            rec_lp[n_rec] = cur
            rec_enc[n_rec] = meta[M_N_ENC] - 1
            n_rec += 1
    fmeta[F_LOGPOST] = cur
    out[O_N_REC] = n_rec
    out[O_N_ENC] = n_enc
    out[O_ENC_USED] = enc_used
    return done
