"""Numba kernels of BCART-PCFG: node discovery and the grammar's dynamic programmes.

Everything here takes plain NumPy arrays and numbers (spec-001 notation).

Node store
    A node (bounding box, nonterminal of PCFG*) is the *set of training
    points* it holds, a packed bitset row of ``W = ceil(n / 64)`` words
    (:mod:`arboretum._numba` layout).  Nodes live in an open-addressing hash
    table keyed by the full bitset (compared word by word, so there are no
    false merges).  :func:`discover` expands nodes breadth-first; it stops with
    ``STATUS_GROW`` when the caller must enlarge the arrays and with
    ``STATUS_LIMIT`` past ``max_nodes``.
Splits (edges)
    Edge ``e`` of node ``v`` sends ``code[f] <= m`` to child ``a`` (left) and
    the rest to ``b`` (right), with ``f = edge_f[e]``, ``m = edge_m[e]``.
    Per feature the splits of a node are the gaps between consecutive codes
    ``k < k'`` present in it; ``m = ceil((k + k') / 2) - 1`` encodes the
    node-local midpoint ``(k + k') / 2`` of spec §4.2 (``code < (k + k') / 2``).
    With ``dedupe`` on, a split whose unordered pair of children ``{a, b}``
    equals that of an earlier split of the same node is dropped, so the kept
    representative of each partition is the first in the order (feature
    ascending, threshold ascending): spec §8 A1.
Order
    After discovery, :func:`size_order` renumbers nodes by decreasing size, so
    every child has a larger id than its parents: bottom-up passes run over ids
    downwards, top-down passes upwards.
Levels
    Tables have shape ``(n_nodes, n_levels)``.  The phi grammar of the paper
    has one level and ``level_step = 0``; the Chipman grammar carries the
    depth, ``level_step = 1``, ``n_levels = 1 + longest root-to-node path``.
    A state's production weights are ``stop_w[d]`` (added to ``log L`` when the
    node has splits), and ``split_w[d] + edge_w[e]`` per split ``e``
    (``edge_w`` may be empty, meaning zeros).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._numba import hash_words, mix64, monotonic, popcount64, stop_time, uniform

STATUS_DONE = 0
STATUS_GROW = 1
STATUS_LIMIT = 2

# indices into ``counters``
C_NODES, C_EDGES, C_HEAD = 0, 1, 2

#: Seed of the node table's hash (:func:`arboretum._numba.hash_words`).
_HASH_SEED = np.uint64(0x2545F4914F6CDD1D)


# ---------------------------------------------------------------------------
# node store
# ---------------------------------------------------------------------------


@njit(cache=True)
def find_or_insert(bits, node_bits, node_size, node_counts, node_hash, ht, class_bits, n_nodes):
    """Return ``(id, n_nodes)``: the id of the node with point set ``bits``, inserted if new."""
    h = hash_words(bits, _HASH_SEED)
    mask = ht.shape[0] - 1
    i = np.int64(h & np.uint64(mask))
    W = bits.shape[0]
    while True:
        v = ht[i]
        if v < 0:
            break
        if node_hash[v] == h:
            same = True
            for w in range(W):
                if node_bits[v, w] != bits[w]:
                    same = False
                    break
            if same:
                return v, n_nodes
        i = (i + 1) & mask
    v = n_nodes
    size = 0
    for w in range(W):
        node_bits[v, w] = bits[w]
        size += popcount64(bits[w])
    node_size[v] = size
    for c in range(class_bits.shape[0]):
        k = 0
        for w in range(W):
            k += popcount64(bits[w] & class_bits[c, w])
        node_counts[v, c] = k
    node_hash[v] = h
    ht[i] = v
    return v, n_nodes + 1


@njit(cache=True)
def rehash(node_hash, n_nodes, ht):
    """Insert nodes ``0 .. n_nodes - 1`` into the empty (all -1) table ``ht``."""
    mask = ht.shape[0] - 1
    for v in range(n_nodes):
        i = np.int64(node_hash[v] & np.uint64(mask))
        while ht[i] >= 0:
            i = (i + 1) & mask
        ht[i] = v


@njit(cache=True)
def discover(le_bits, code_off, class_bits, dedupe, chipman_weights,
             node_bits, node_size, node_counts, node_hash, ht,
             edge_start, edge_a, edge_b, edge_f, edge_m, edge_w,
             counters, max_nodes, max_splits, seconds):
    """Expand nodes breadth-first from ``counters[C_HEAD]`` until done or out of room.

    ``le_bits[code_off[f] + c]`` is the bitset ``{i : code[i, f] <= c}``.
    Returns a status code; ``counters`` holds the node count, edge count and
    the next node to expand.  After ``seconds`` (read between nodes: on wide
    data one node has thousands of splits) it pauses with ``STATUS_LIMIT``, as
    at ``max_nodes``.
    """
    stop = stop_time(seconds)
    W = node_bits.shape[1]
    F = code_off.shape[0] - 1
    n_nodes = counters[C_NODES]
    n_edges = counters[C_EDGES]
    head = counters[C_HEAD]
    left = np.empty(W, dtype=np.uint64)
    right = np.empty(W, dtype=np.uint64)
    present = np.empty(code_off[F], dtype=np.int64)
    n_present = np.zeros(F, dtype=np.int64)
    # per-node set of child pairs {a, b} already used (open addressing, stamped by node)
    dd_size = 1
    while dd_size < 2 * max_splits + 2:
        dd_size *= 2
    dd_mask = dd_size - 1
    dd_key = np.empty(dd_size, dtype=np.int64)
    dd_stamp = np.full(dd_size, -1, dtype=np.int64)
    status = STATUS_DONE
    while head < n_nodes:
        if n_nodes > max_nodes or monotonic() >= stop:
            status = STATUS_LIMIT
            break
        if (n_nodes + 2 * max_splits > node_bits.shape[0]
                or n_edges + max_splits > edge_a.shape[0]
                or 2 * (n_nodes + 2 * max_splits) > ht.shape[0]):
            status = STATUS_GROW
            break
        size = node_size[head]
        n_valid = 0
        # codes present in the node, per feature, ascending
        for f in range(F):
            o = code_off[f]
            t = code_off[f + 1] - o
            k = 0
            prev = 0
            for c in range(t):
                if c == t - 1:
                    cnt = size
                else:
                    cnt = 0
                    for w in range(W):
                        cnt += popcount64(node_bits[head, w] & le_bits[o + c, w])
                if cnt > prev:
                    present[o + k] = c
                    k += 1
                    prev = cnt
                    if cnt == size:
                        break
            n_present[f] = k
            if k >= 2:
                n_valid += 1
        for f in range(F):
            o = code_off[f]
            k_f = n_present[f]
            if k_f < 2:
                continue
            w_f = 0.0
            if chipman_weights:
                w_f = -np.log(np.float64(n_valid)) - np.log(np.float64(k_f - 1))
            for j in range(k_f - 1):
                lo = present[o + j]
                hi = present[o + j + 1]
                for w in range(W):
                    x = node_bits[head, w]
                    y = le_bits[o + lo, w]
                    left[w] = x & y
                    right[w] = x & ~y
                a, n_nodes = find_or_insert(left, node_bits, node_size, node_counts, node_hash, ht,
                                            class_bits, n_nodes)
                b, n_nodes = find_or_insert(right, node_bits, node_size, node_counts, node_hash, ht,
                                            class_bits, n_nodes)
                if dedupe:
                    lo_id = a if a < b else b
                    key = lo_id * np.int64(node_bits.shape[0]) + (a + b - lo_id)
                    i = np.int64(mix64(np.uint64(key)) & np.uint64(dd_mask))
                    dup = False
                    while dd_stamp[i] == head:
                        if dd_key[i] == key:
                            dup = True
                            break
                        i = (i + 1) & dd_mask
                    if dup:
                        continue
                    dd_stamp[i] = head
                    dd_key[i] = key
                edge_a[n_edges] = a
                edge_b[n_edges] = b
                edge_f[n_edges] = f
                edge_m[n_edges] = (lo + hi - 1) // 2
                if chipman_weights:
                    edge_w[n_edges] = w_f
                n_edges += 1
        edge_start[head + 1] = n_edges
        head += 1
    counters[C_NODES] = n_nodes
    counters[C_EDGES] = n_edges
    counters[C_HEAD] = head
    return status


@njit(cache=True)
def size_order(node_size, n_nodes):
    """Return ``(perm, inv)``: ``perm[new] = old`` sorting nodes by decreasing size (stable)."""
    n_max = 0
    for v in range(n_nodes):
        if node_size[v] > n_max:
            n_max = node_size[v]
    start = np.zeros(n_max + 2, dtype=np.int64)
    for v in range(n_nodes):
        start[n_max - node_size[v] + 1] += 1
    for s in range(1, n_max + 2):
        start[s] += start[s - 1]
    perm = np.empty(n_nodes, dtype=np.int64)
    inv = np.empty(n_nodes, dtype=np.int64)
    for v in range(n_nodes):
        r = n_max - node_size[v]
        perm[start[r]] = v
        inv[v] = start[r]
        start[r] += 1
    return perm, inv


@njit(cache=True)
def permute_edges(perm, inv, edge_start, edge_a, edge_b, edge_f, edge_m, edge_w):
    """Edges regrouped in the new node order, children renamed; returns the new arrays."""
    n_nodes = perm.shape[0]
    n_edges = edge_start[n_nodes]
    has_w = edge_w.shape[0] > 0
    new_start = np.empty(n_nodes + 1, dtype=np.int64)
    new_a = np.empty(n_edges, dtype=np.int32)
    new_b = np.empty(n_edges, dtype=np.int32)
    new_f = np.empty(n_edges, dtype=np.int32)
    new_m = np.empty(n_edges, dtype=np.int32)
    new_w = np.empty(n_edges if has_w else 0, dtype=np.float64)
    k = 0
    new_start[0] = 0
    for v in range(n_nodes):
        old = perm[v]
        for e in range(edge_start[old], edge_start[old + 1]):
            new_a[k] = inv[edge_a[e]]
            new_b[k] = inv[edge_b[e]]
            new_f[k] = edge_f[e]
            new_m[k] = edge_m[e]
            if has_w:
                new_w[k] = edge_w[e]
            k += 1
        new_start[v + 1] = k
    return new_start, new_a, new_b, new_f, new_m, new_w


@njit(cache=True)
def heights(edge_start, edge_a, edge_b):
    """Longest chain of splits below every node (0 for a node without splits)."""
    n_nodes = edge_start.shape[0] - 1
    h = np.zeros(n_nodes, dtype=np.int64)
    for v in range(n_nodes - 1, -1, -1):
        best = 0
        for e in range(edge_start[v], edge_start[v + 1]):
            x = h[edge_a[e]]
            y = h[edge_b[e]]
            c = 1 + (x if x > y else y)
            if c > best:
                best = c
        h[v] = best
    return h


# ---------------------------------------------------------------------------
# inside passes
# ---------------------------------------------------------------------------


@njit(cache=True)
def inside(logL, edge_start, edge_a, edge_b, edge_w, stop_w, split_w, level_step, maximize,
           out, best):
    """Inside scores in log space: ``log Q`` (sum) or ``log Q_max`` (max), bottom-up.

    ``out`` and ``best`` have shape (n_nodes, n_levels).  With ``maximize``,
    ``best`` gets the first maximising split, or -1 when stopping wins
    (stopping needs a strictly larger score: exact ties split, Algorithm 2).
    """
    n_nodes, n_levels = out.shape
    has_w = edge_w.shape[0] > 0
    max_deg = 0
    for v in range(n_nodes):
        deg = edge_start[v + 1] - edge_start[v]
        if deg > max_deg:
            max_deg = deg
    terms = np.empty(max_deg, dtype=np.float64)
    for v in range(n_nodes - 1, -1, -1):
        e0 = edge_start[v]
        e1 = edge_start[v + 1]
        for d in range(n_levels):
            best[v, d] = -1
            cl = d + level_step
            if e1 == e0:
                out[v, d] = logL[v]
                continue
            stop = logL[v] + stop_w[d]
            if cl >= n_levels:  # deeper than any path: an unreachable state
                out[v, d] = stop
                continue
            sw = split_w[d]
            top = -np.inf
            arg = -1
            for e in range(e0, e1):
                t = sw + out[edge_a[e], cl] + out[edge_b[e], cl]
                if has_w:
                    t += edge_w[e]
                terms[e - e0] = t
                if t > top:
                    top = t
                    arg = e
            if maximize:
                if stop > top:
                    out[v, d] = stop
                else:
                    out[v, d] = top
                    best[v, d] = arg
            else:
                m = stop if stop > top else top
                if m == -np.inf:
                    out[v, d] = -np.inf
                    continue
                s = np.exp(stop - m)
                for j in range(e1 - e0):
                    s += np.exp(terms[j] - m)
                out[v, d] = m + np.log(s)
    return out, best


@njit(cache=True)
def production_probabilities(logL, logQ, edge_start, edge_a, edge_b, edge_w, stop_w, split_w,
                             level_step, stop_p, edge_p):
    """Fill the PCFG* production probabilities (eq. 15-16) of every state.

    ``stop_p`` has shape (n_nodes, n_levels) and ``edge_p`` (n_edges, n_levels).
    Unreachable states (Chipman levels deeper than any path) get stop 1.
    """
    n_nodes, n_levels = logQ.shape
    has_w = edge_w.shape[0] > 0
    for v in range(n_nodes):
        e0 = edge_start[v]
        e1 = edge_start[v + 1]
        for d in range(n_levels):
            cl = d + level_step
            if e1 == e0 or cl >= n_levels:
                stop_p[v, d] = 1.0
                for e in range(e0, e1):
                    edge_p[e, d] = 0.0
                continue
            q = logQ[v, d]
            stop_p[v, d] = np.exp(logL[v] + stop_w[d] - q)
            sw = split_w[d]
            for e in range(e0, e1):
                t = sw + logQ[edge_a[e], cl] + logQ[edge_b[e], cl] - q
                if has_w:
                    t += edge_w[e]
                edge_p[e, d] = np.exp(t)


@njit(cache=True)
def outside(edge_start, edge_a, edge_b, stop_p, edge_p, level_step):
    """Posterior probability that each state (node, level) occurs in the tree (top-down)."""
    n_nodes, n_levels = stop_p.shape
    out = np.zeros((n_nodes, n_levels), dtype=np.float64)
    out[0, 0] = 1.0
    for v in range(n_nodes):
        for d in range(n_levels):
            o = out[v, d]
            if o == 0.0:
                continue
            cl = d + level_step
            if cl >= n_levels:
                continue
            for e in range(edge_start[v], edge_start[v + 1]):
                p = o * edge_p[e, d]
                out[edge_a[e], cl] += p
                out[edge_b[e], cl] += p
    return out


@njit(cache=True)
def feature_split_expectations(edge_start, edge_f, edge_p, occ, n_features):
    """Expected number of nodes of the tree that split on each feature."""
    n_nodes, n_levels = occ.shape
    out = np.zeros(n_features, dtype=np.float64)
    for v in range(n_nodes):
        for d in range(n_levels):
            o = occ[v, d]
            if o == 0.0:
                continue
            for e in range(edge_start[v], edge_start[v + 1]):
                out[edge_f[e]] += o * edge_p[e, d]
    return out


@njit(cache=True)
def expected_leaves(edge_start, edge_a, edge_b, stop_p, edge_p, level_step):
    """Expected number of leaves of the subtree of every state (bottom-up)."""
    n_nodes, n_levels = stop_p.shape
    out = np.empty((n_nodes, n_levels), dtype=np.float64)
    for v in range(n_nodes - 1, -1, -1):
        for d in range(n_levels):
            cl = d + level_step
            s = stop_p[v, d]
            if cl < n_levels:
                for e in range(edge_start[v], edge_start[v + 1]):
                    s += edge_p[e, d] * (out[edge_a[e], cl] + out[edge_b[e], cl])
            out[v, d] = s
    return out


# ---------------------------------------------------------------------------
# sampling and prediction
# ---------------------------------------------------------------------------


@njit(cache=True, inline="always")
def _choose(v, d, edge_start, stop_p, edge_p, state):
    """Draw a production of state (v, d): -1 for stop, else the edge index."""
    e0 = edge_start[v]
    e1 = edge_start[v + 1]
    total = stop_p[v, d]
    for e in range(e0, e1):
        total += edge_p[e, d]
    u = uniform(state) * total
    acc = stop_p[v, d]
    if u < acc:
        return -1
    last = -1
    for e in range(e0, e1):
        p = edge_p[e, d]
        if p > 0.0:
            last = e
            acc += p
            if u < acc:
                return e
    return last  # rounding at the very top of the range


@njit(cache=True)
def _grow_int(a, n):
    b = np.empty(max(2 * a.shape[0], n), dtype=a.dtype)
    b[: a.shape[0]] = a
    return b


@njit(cache=True)
def sample_trees(n_trees, state, edge_start, edge_a, edge_b, stop_p, edge_p, level_step):
    """Draw ``n_trees`` independent derivations of PCFG* (ancestral sampling).

    Returns ``(tree_ptr, node, level, depth, edge, left, right)``.  Tree ``t``
    occupies positions ``tree_ptr[t] .. tree_ptr[t + 1] - 1``, its root first;
    ``edge`` is -1 at leaves and ``left``/``right`` are absolute positions
    (-1 at leaves).
    """
    n_levels = stop_p.shape[1]
    cap = max(16, 8 * n_trees)
    node = np.empty(cap, dtype=np.int64)
    level = np.empty(cap, dtype=np.int64)
    depth = np.empty(cap, dtype=np.int64)
    edge = np.empty(cap, dtype=np.int64)
    left = np.empty(cap, dtype=np.int64)
    right = np.empty(cap, dtype=np.int64)
    tree_ptr = np.empty(n_trees + 1, dtype=np.int64)
    count = 0
    for t in range(n_trees):
        tree_ptr[t] = count
        if count + 1 > node.shape[0]:
            node = _grow_int(node, count + 1)
            level = _grow_int(level, count + 1)
            depth = _grow_int(depth, count + 1)
            edge = _grow_int(edge, count + 1)
            left = _grow_int(left, count + 1)
            right = _grow_int(right, count + 1)
        node[count] = 0
        level[count] = 0
        depth[count] = 0
        count += 1
        i = tree_ptr[t]
        while i < count:
            v = node[i]
            d = level[i]
            cl = d + level_step
            e = -1
            if cl < n_levels:
                e = _choose(v, d, edge_start, stop_p, edge_p, state)
            edge[i] = e
            if e < 0:
                left[i] = -1
                right[i] = -1
            else:
                if count + 2 > node.shape[0]:
                    node = _grow_int(node, count + 2)
                    level = _grow_int(level, count + 2)
                    depth = _grow_int(depth, count + 2)
                    edge = _grow_int(edge, count + 2)
                    left = _grow_int(left, count + 2)
                    right = _grow_int(right, count + 2)
                for side in range(2):
                    node[count] = edge_a[e] if side == 0 else edge_b[e]
                    level[count] = cl
                    depth[count] = depth[i] + 1
                    count += 1
                left[i] = count - 2
                right[i] = count - 1
            i += 1
    tree_ptr[n_trees] = count
    return (tree_ptr, node[:count].copy(), level[:count].copy(), depth[:count].copy(),
            edge[:count].copy(), left[:count].copy(), right[:count].copy())


@njit(cache=True, inline="always")
def _add_predictive(acc, v, node_counts, node_size, alpha, alpha_sum, weight):
    """``acc += weight * (counts[v] + alpha) / (size[v] + sum(alpha))`` (Dirichlet predictive)."""
    denom = node_size[v] + alpha_sum
    for c in range(acc.shape[0]):
        acc[c] += weight * (node_counts[v, c] + alpha[c]) / denom


@njit(cache=True)
def sample_paths(qcodes, n_paths, state, edge_start, edge_a, edge_b, edge_f, edge_m, stop_p,
                 edge_p, level_step, node_counts, node_size, alpha):
    """Algorithm 1: mean leaf predictive over ``n_paths`` sampled query paths per query."""
    n_q = qcodes.shape[0]
    C = alpha.shape[0]
    n_levels = stop_p.shape[1]
    alpha_sum = alpha.sum()
    out = np.zeros((n_q, C), dtype=np.float64)
    acc = np.empty(C, dtype=np.float64)
    w = 1.0 / n_paths
    for q in range(n_q):
        acc[:] = 0.0
        for r in range(n_paths):
            v = 0
            d = 0
            while True:
                cl = d + level_step
                e = -1
                if cl < n_levels:
                    e = _choose(v, d, edge_start, stop_p, edge_p, state)
                if e < 0:
                    _add_predictive(acc, v, node_counts, node_size, alpha, alpha_sum, w)
                    break
                v = edge_a[e] if qcodes[q, edge_f[e]] <= edge_m[e] else edge_b[e]
                d = cl
        for c in range(C):  # not out[q] = acc: its shape check compiles string formatting (~1.7 s)
            out[q, c] = acc[c]
    return out


@njit(cache=True)
def predict_sampled_trees(qcodes, tree_ptr, t_node, t_edge, t_left, t_right, edge_f, edge_m,
                          node_counts, node_size, alpha):
    """Mean leaf predictive of each query over a finite ensemble of sampled trees."""
    n_q = qcodes.shape[0]
    n_trees = tree_ptr.shape[0] - 1
    C = alpha.shape[0]
    alpha_sum = alpha.sum()
    out = np.zeros((n_q, C), dtype=np.float64)
    acc = np.empty(C, dtype=np.float64)
    w = 1.0 / n_trees
    for q in range(n_q):
        acc[:] = 0.0
        for t in range(n_trees):
            i = tree_ptr[t]
            while t_edge[i] >= 0:
                e = t_edge[i]
                i = t_left[i] if qcodes[q, edge_f[e]] <= edge_m[e] else t_right[i]
            _add_predictive(acc, t_node[i], node_counts, node_size, alpha, alpha_sum, w)
        for c in range(C):  # not out[q] = acc: its shape check compiles string formatting (~1.7 s)
            out[q, c] = acc[c]
    return out


@njit(cache=True)
def _predictive_chunk(qcodes, q0, q1, edge_start, edge_a, edge_b, edge_f, edge_m, stop_p, edge_p,
                      level_step, node_counts, node_size, alpha, out):
    n_nodes, n_levels = stop_p.shape
    C = alpha.shape[0]
    alpha_sum = alpha.sum()
    reach = np.zeros((n_nodes, n_levels), dtype=np.float64)
    acc = np.empty(C, dtype=np.float64)
    for q in range(q0, q1):
        acc[:] = 0.0
        reach[0, 0] = 1.0
        last = 0
        v = 0
        while v <= last:
            for d in range(n_levels):
                o = reach[v, d]
                if o == 0.0:
                    continue
                reach[v, d] = 0.0
                _add_predictive(acc, v, node_counts, node_size, alpha, alpha_sum, o * stop_p[v, d])
                cl = d + level_step
                if cl >= n_levels:
                    continue
                for e in range(edge_start[v], edge_start[v + 1]):
                    child = edge_a[e] if qcodes[q, edge_f[e]] <= edge_m[e] else edge_b[e]
                    reach[child, cl] += o * edge_p[e, d]
                    if child > last:
                        last = child
            v += 1
        for c in range(C):  # not out[q] = acc: its shape check compiles string formatting (~1.7 s)
            out[q, c] = acc[c]


@njit(cache=True, parallel=True)
def posterior_predictive(qcodes, edge_start, edge_a, edge_b, edge_f, edge_m, stop_p, edge_p,
                         level_step, node_counts, node_size, alpha, n_chunks):
    """Exact posterior predictive of every query (spec §2.11 / §3.7, the infinite ensemble).

    Top-down over node ids (parents first): ``reach[v, d]`` is the probability
    that the query's path in a posterior tree visits state ``(v, d)``; the
    answer is ``sum reach * stop_p * p(.|v)``.  Only nodes up to the largest id
    reached are scanned, and every visited entry is reset for the next query.
    Queries are split into ``n_chunks`` chunks run in parallel.
    """
    n_q = qcodes.shape[0]
    out = np.empty((n_q, alpha.shape[0]), dtype=np.float64)
    step = (n_q + n_chunks - 1) // n_chunks
    for k in prange(n_chunks):
        q0 = k * step
        q1 = min(n_q, q0 + step)
        if q0 < q1:
            _predictive_chunk(qcodes, q0, q1, edge_start, edge_a, edge_b, edge_f, edge_m, stop_p,
                              edge_p, level_step, node_counts, node_size, alpha, out)
    return out


@njit(cache=True)
def map_route(qcodes, best, edge_a, edge_b, edge_f, edge_m, level_step):
    """Algorithm 2: the node (of the MAP tree) where each query stops."""
    n_q = qcodes.shape[0]
    out = np.empty(n_q, dtype=np.int64)
    for q in range(n_q):
        v = 0
        d = 0
        while True:
            e = best[v, d]
            if e < 0:
                break
            v = edge_a[e] if qcodes[q, edge_f[e]] <= edge_m[e] else edge_b[e]
            d += level_step
        out[q] = v
    return out


# ---------------------------------------------------------------------------
# posterior summaries: split inclusion and the distribution of the number of leaves
# ---------------------------------------------------------------------------


@njit(cache=True)
def inside_without(logL, edge_start, edge_a, edge_b, edge_f, edge_w, stop_w, split_w, level_step, drop,
                   out):
    """Inside sums ``log Q`` over the trees that never split on a feature with ``drop[f]``.

    The same recursion as :func:`inside` (sum) with the splits of the dropped
    features left out: a node keeps its stop weight ``stop_w[d]`` whenever it
    has splits in the full grammar (the prior's stop probability does not
    change), and a node whose only splits are dropped must stop.  So
    ``out[0, 0] - logQ[0, 0]`` is the log posterior probability that the tree
    has no split on a dropped feature.  ``out`` has shape (n_nodes, n_levels).
    """
    n_nodes, n_levels = out.shape
    has_w = edge_w.shape[0] > 0
    for v in range(n_nodes - 1, -1, -1):
        e0 = edge_start[v]
        e1 = edge_start[v + 1]
        for d in range(n_levels):
            if e1 == e0:
                out[v, d] = logL[v]
                continue
            stop = logL[v] + stop_w[d]
            cl = d + level_step
            if cl >= n_levels:
                out[v, d] = stop
                continue
            sw = split_w[d]
            # one-pass log-sum-exp: running maximum m and sum s of exp(t - m)
            m = stop
            s = 1.0
            if m == -np.inf:
                s = 0.0
            for e in range(e0, e1):
                if drop[edge_f[e]]:
                    continue
                t = sw + out[edge_a[e], cl] + out[edge_b[e], cl]
                if has_w:
                    t += edge_w[e]
                if t == -np.inf:
                    continue
                if t > m:
                    s = s * np.exp(m - t) + 1.0
                    m = t
                else:
                    s += np.exp(t - m)
            out[v, d] = m + np.log(s) if s > 0.0 else -np.inf
    return out


@njit(cache=True)
def max_leaves(edge_start, edge_a, edge_b):
    """Largest number of leaves of any tree rooted at every node (1 for a node without splits)."""
    n_nodes = edge_start.shape[0] - 1
    out = np.ones(n_nodes, dtype=np.int64)
    for v in range(n_nodes - 1, -1, -1):
        best = 1
        for e in range(edge_start[v], edge_start[v + 1]):
            c = out[edge_a[e]] + out[edge_b[e]]
            if c > best:
                best = c
        out[v] = best
    return out


@njit(cache=True)
def leaf_count_distribution(edge_start, edge_a, edge_b, stop_p, edge_p, level_step, reach, length,
                            offset, out):
    """Distribution of the number of leaves of the subtree of every reachable state (bottom-up).

    State ``(v, d)`` owns ``out[offset[v] + d * length[v] + k - 1]`` for
    ``k = 1 .. length[v]``: the probability that the subtree drawn from the
    state has ``k`` leaves.  Its distribution is ``stop_p * [k == 1]`` plus,
    for every split, ``edge_p`` times the convolution of the children's
    distributions, cut at ``length[v]`` leaves; with ``length[v] >=
    min(K, max leaves below v)`` the entries up to ``K`` are exact (a child
    of a subtree with ``k <= K`` leaves has fewer than ``K`` leaves).
    States with ``reach[v, d] == 0`` (never in a posterior tree, or with a
    probability that underflows) are skipped and stay zero.
    """
    n_nodes, n_levels = stop_p.shape
    for v in range(n_nodes - 1, -1, -1):
        Lv = length[v]
        for d in range(n_levels):
            base = offset[v] + d * Lv
            for k in range(Lv):
                out[base + k] = 0.0
            if reach[v, d] == 0.0:
                continue
            out[base] = stop_p[v, d]
            cl = d + level_step
            if cl >= n_levels:
                continue
            for e in range(edge_start[v], edge_start[v + 1]):
                p = edge_p[e, d]
                if p == 0.0:
                    continue
                a = edge_a[e]
                b = edge_b[e]
                La = length[a]
                Lb = length[b]
                ba = offset[a] + cl * La
                bb = offset[b] + cl * Lb
                # leaves i + 1 (left) and j + 1 (right) give i + j + 2 leaves, index i + j + 1
                for i in range(min(La, Lv - 1)):
                    pa = p * out[ba + i]
                    if pa == 0.0:
                        continue
                    top = min(Lb, Lv - 1 - i)
                    o = base + i + 1
                    for j in range(top):
                        out[o + j] += pa * out[bb + j]
    return out
