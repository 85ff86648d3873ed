"""Numba kernels of the density models (hot loops over plain arrays, ``cache=True``).

- bitsets over training rows (spec §12.1): the OR of a feature's category rows
  (:func:`block_bits`), the size of an intersection (:func:`and_count`), the
  leaf counts of a rule list (:func:`list_counts`);
- the first leaf (or rule) whose box holds a configuration (:func:`first_match`);
- the exact dynamic programmes over categorical boxes (spec §6.5):
  :func:`leaf_sparse_dp` (Method I, best sum of leaf terms with exactly k
  leaves, knapsack over binary bipartitions), :func:`leaf_sparse_lagrange_grid`
  (its Lagrangian relaxation, one value per box) and :func:`branch_sparse_dp`
  (Method II, best subtree over multiway set partitions);
- the box tables they read: :func:`box_sums_into` (counts of every box),
  :func:`leaf_terms_into` (Method I's leaf terms).

Regions are boxes ``(m_0, ..., m_{p-1})`` of category masks, indexed
``r = sum_j m_j * stride_j`` over the grid ``prod_j 2**q_j``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .._numba import popcount64

_NEG_INF = -np.inf


@njit(cache=True)
def block_bits(cat_bits, start, mask, out):
    """``out`` = OR of the bitset rows ``start + c`` for every bit ``c`` of ``mask``."""
    out[:] = 0
    c = 0
    m = mask
    while m != 0:
        if m & np.uint64(1):
            row = cat_bits[start + c]
            for w in range(out.shape[0]):
                out[w] |= row[w]
        m >>= np.uint64(1)
        c += 1


@njit(cache=True)
def and_into(a, b, out):
    """``out = a & b``; returns the popcount."""
    total = 0
    for w in range(a.shape[0]):
        x = a[w] & b[w]
        out[w] = x
        total += popcount64(x)
    return total


@njit(cache=True)
def and_count(a, b):
    """Popcount of ``a & b``."""
    total = 0
    for w in range(a.shape[0]):
        total += popcount64(a[w] & b[w])
    return total


@njit(cache=True)
def list_counts(rule_bits, order, n_words, counts):
    """Leaf counts of a rule list: rule ``order[i]`` (rows of ``rule_bits``) captures the rows no earlier
    rule captured; ``counts[i]`` for the rules, ``counts[len(order)]`` for the default leaf."""
    covered = np.zeros(n_words, dtype=np.uint64)
    total = 0
    for i in range(order.shape[0]):
        row = rule_bits[order[i]]
        c = 0
        for w in range(n_words):
            x = row[w] & ~covered[w]
            c += popcount64(x)
            covered[w] |= x
        counts[i] = c
        total += c
    return total


@njit(cache=True)
def first_match(codes, masks):
    """Index of the first box of ``masks`` ((K, p) uint64) that holds each row of ``codes``; -1 for none
    (or for a row with an unknown category, code -1)."""
    n, p = codes.shape
    out = np.full(n, -1, dtype=np.int64)
    for i in range(n):
        for k in range(masks.shape[0]):
            ok = True
            for j in range(p):
                c = codes[i, j]
                if c < 0 or (masks[k, j] >> np.uint64(c)) & np.uint64(1) == 0:
                    ok = False
                    break
            if ok:
                out[i] = k
                break
    return out


@njit(cache=True)
def _popcount_small(m):
    return popcount64(np.uint64(m))


@njit(cache=True)
def leaf_sparse_dp(order, start, stop, counts, logv, nvol, strides, q, k_cap, alpha,
                   best, arg_j, arg_a, arg_k1):
    """Method I: ``best[r, k]`` = the largest sum of leaf terms ``lgamma(n_l + alpha) - lgamma(alpha)
    - n_l log V_l`` over partitions of region ``r`` into exactly ``k`` leaves by a tree (binary
    bipartitions suffice: the objective depends on the leaves only).  Processes regions
    ``order[start:stop]`` (children come before parents in ``order``)."""
    p = q.shape[0]
    la = math.lgamma(alpha)
    for t in range(start, stop):
        r = order[t]
        n = counts[r]
        kmax = min(k_cap, nvol[r])
        best[r, 1] = (math.lgamma(n + alpha) - la - n * logv[r]) if n > 0 else 0.0
        for j in range(p):
            m = (r // strides[j]) % (1 << q[j])
            if _popcount_small(m) < 2:
                continue
            low = m & (-m)
            rest = m ^ low
            sub = rest
            while True:
                a = low | sub
                b = m ^ a
                if b != 0:
                    ra = r + (a - m) * strides[j]
                    rb = r + (b - m) * strides[j]
                    ka = min(kmax - 1, nvol[ra])
                    for k1 in range(1, ka + 1):
                        va = best[ra, k1]
                        if va == _NEG_INF:
                            continue
                        kb = min(kmax - k1, nvol[rb])
                        for k2 in range(1, kb + 1):
                            v = va + best[rb, k2]
                            if v > best[r, k1 + k2]:
                                best[r, k1 + k2] = v
                                arg_j[r, k1 + k2] = j
                                arg_a[r, k1 + k2] = a
                                arg_k1[r, k1 + k2] = k1
                if sub == 0:
                    break
                sub = (sub - 1) & rest


@njit(cache=True)
def _partition_table(m, r, sj, q_j, lg, best, g, h, cats, masks, pcs):
    """Fill ``h[s, b]`` = best sum of block values over partitions of the compressed subset ``s`` of
    the categories of ``m`` into ``b`` blocks (block value ``lgamma(n_child + alpha) + best[child]``).
    ``cats``, ``masks`` are scratch; ``pcs[s]`` the popcount of ``s``."""
    t = 0
    for c in range(q_j):
        if (m >> c) & 1:
            cats[t] = c
            t += 1
    full = (1 << t) - 1
    masks[0] = 0
    for s in range(1, full + 1):
        low = s & (-s)
        i = 0
        while (low >> i) != 1:
            i += 1
        masks[s] = masks[s ^ low] | (1 << cats[i])
        rc = r + (masks[s] - m) * sj
        g[s] = lg[rc] + best[rc]
    h[0, 0] = 0.0
    for s in range(1, full + 1):
        ps = pcs[s]
        for b in range(ps + 1):
            h[s, b] = _NEG_INF
        low = s & (-s)
        rest = s ^ low
        sub = rest
        while True:
            blk = low | sub
            other = s ^ blk
            gb = g[blk]
            for b in range(1, pcs[other] + 2):
                prev = h[other, b - 1]
                if prev != _NEG_INF:
                    v = gb + prev
                    if v > h[s, b]:
                        h[s, b] = v
            if sub == 0:
                break
            sub = (sub - 1) & rest
    return full, t


@njit(cache=True)
def branch_sparse_dp(order, start, stop, counts, logv, lg, hist, strides, q, lam, alpha, best, choice_j, choice_b):
    """Method II: ``best[r]`` = the largest sum of node terms of a subtree on region ``r``: every node
    ``-lam + log(lam)``, a leaf ``- n log V``, an internal node with ``b`` children
    ``-lgamma(b+1) + lgamma(b alpha) - b lgamma(alpha) + sum_c lgamma(n_c + alpha) - lgamma(n + b alpha)``
    (``lg[r] = lgamma(counts[r] + alpha)``).

    A leaf is kept without trying splits when no split can beat it: any subtree with a split has at
    least 3 nodes and a ``-lgamma(b + 1) <= -log 2`` term, and its Dirichlet and volume terms together
    are the log of a Bayesian marginal likelihood of the box's rows, at most ``hist[r]`` (the box's
    histogram log-likelihood); so a split scores at most ``3 node - log 2 + hist[r]``."""
    p = q.shape[0]
    qmax = 1
    for j in range(p):
        qmax = max(qmax, q[j])
    g = np.empty(1 << qmax, dtype=np.float64)
    h = np.empty((1 << qmax, qmax + 1), dtype=np.float64)
    cats = np.empty(qmax, dtype=np.int64)
    masks = np.empty(1 << qmax, dtype=np.int64)
    pcs = np.empty(1 << qmax, dtype=np.int64)
    for s in range(1 << qmax):
        pcs[s] = _popcount_small(s)
    const_b = np.empty(qmax + 1)  # -lgamma(b + 1) + lgamma(b alpha) - b lgamma(alpha)
    for b in range(2, qmax + 1):
        const_b[b] = -math.lgamma(b + 1.0) + math.lgamma(b * alpha) - b * math.lgamma(alpha)
    norm_b = np.empty(qmax + 1)
    node = -lam + math.log(lam)
    la = math.lgamma(alpha)
    for t in range(start, stop):
        r = order[t]
        n = counts[r]
        top = -n * logv[r] if n > 0 else 0.0
        cj = -1
        cb = 0
        if top >= 2.0 * node - math.log(2.0) + hist[r]:  # no split can beat the leaf
            best[r] = node + top
            choice_j[r] = -1
            choice_b[r] = 0
            continue
        for b in range(2, qmax + 1):
            norm_b[b] = const_b[b] - math.lgamma(n + b * alpha)
        for j in range(p):
            m = (r // strides[j]) % (1 << q[j])
            if _popcount_small(m) < 2:
                continue
            full, tt = _partition_table(m, r, strides[j], q[j], lg, best, g, h, cats, masks, pcs)
            for b in range(2, tt + 1):
                if h[full, b] == _NEG_INF:
                    continue
                v = norm_b[b] + h[full, b]
                if v > top:
                    top = v
                    cj = j
                    cb = b
        best[r] = node + top
        choice_j[r] = cj
        choice_b[r] = cb


@njit(cache=True)
def _lagrange_box(r, digits, term, strides, q, mu, val, nleaf):
    """One box of :func:`leaf_sparse_lagrange_grid`: ``(value, leaves, feature, mask)`` of the best
    tree on region ``r`` (``digits[j]`` its category mask of feature ``j``; every sub-box solved)."""
    v = term[r] + mu
    kk = 1
    bj = -1
    ba = 0
    for j in range(q.shape[0]):
        m = digits[j]
        if m & (m - 1) == 0:  # one category: no split along j
            continue
        sj = strides[j]
        low = m & (-m)
        rest = m ^ low
        sub = rest
        while True:
            a = low | sub
            if a != m:
                ra = r + (a - m) * sj
                rb = r - a * sj
                s = val[ra] + val[rb]
                nl = nleaf[ra] + nleaf[rb]
                if s > v or (s == v and nl < kk):
                    v = s
                    kk = nl
                    bj = j
                    ba = a
            if sub == 0:
                break
            sub = (sub - 1) & rest
    return v, kk, bj, ba


@njit(cache=True)
def leaf_sparse_lagrange_grid(term, strides, q, mu, val, nleaf):
    """Method I, Lagrangian relaxation of the number of leaves: ``val[r]`` = the largest sum over the
    leaves of a tree on region ``r`` of ``leaf term + mu`` (no ``k`` dimension), ``nleaf[r]`` its number
    of leaves (the fewest among ties; then the first feature, then the first bipartition in the
    enumeration order).  Then ``max over trees with K leaves of sum(leaf terms) <= val[root] - mu K`` for
    every ``K`` (``term[r]``: the leaf term of region ``r``).

    The boxes run in increasing flat index (a sub-box has a smaller index: each of its masks is a
    subset, so no larger), their masks kept by an odometer rather than divisions, boxes with an empty mask
    skipped (no tree reads them); the first bipartition of a box is recomputed on demand
    (:func:`lagrange_split`) rather than stored."""
    p = q.shape[0]
    digits = np.ones(p, dtype=np.int64)
    r = 0
    for j in range(p):
        r += strides[j]
    while True:
        v, kk, _, _ = _lagrange_box(r, digits, term, strides, q, mu, val, nleaf)
        val[r] = v
        nleaf[r] = kk
        j = p - 1  # next box: increment the last mask, carry (masks run 1 .. 2**q_j - 1)
        while j >= 0:
            if digits[j] < (1 << q[j]) - 1:
                digits[j] += 1
                r += strides[j]
                break
            r -= (digits[j] - 1) * strides[j]
            digits[j] = 1
            j -= 1
        if j < 0:
            return


@njit(cache=True)
def lagrange_split(r, term, strides, q, mu, val, nleaf):
    """``(feature, mask)`` of the first bipartition of region ``r``'s best tree after
    :func:`leaf_sparse_lagrange_grid` (feature -1: a leaf)."""
    p = q.shape[0]
    digits = np.empty(p, dtype=np.int64)
    for j in range(p):
        digits[j] = (r // strides[j]) % (1 << q[j])
    _, _, bj, ba = _lagrange_box(r, digits, term, strides, q, mu, val, nleaf)
    return bj, ba


@njit(cache=True)
def box_sums_into(configs, weights, q, strides, out):
    """``out[r]`` = the sum of ``weights`` of the rows ``configs`` inside box ``r``, for every box of the
    grid (flat index): the rows scattered to their singleton boxes, then a subset-sum (zeta) transform
    along every feature, one pass over memory per feature (blocks of the contiguous inner index stay in
    cache while all of the feature's bits are summed)."""
    out[:] = 0.0
    p = q.shape[0]
    for i in range(configs.shape[0]):
        r = 0
        for j in range(p):
            r += (np.int64(1) << configs[i, j]) * strides[j]
        out[r] += weights[i]
    N = out.shape[0]
    block = 256
    for j in range(p):
        d = np.int64(1) << q[j]
        s = strides[j]
        span = d * s
        for high in range(0, N, span):
            for i0 in range(0, s, block):
                i1 = min(i0 + block, s)
                for b in range(q[j]):
                    bit = np.int64(1) << b
                    for m in range(d):
                        if m & bit:
                            dst = high + m * s
                            src = high + (m ^ bit) * s
                            for i in range(i0, i1):
                                out[dst + i] += out[src + i]


@njit(cache=True)
def leaf_terms_into(counts, log_pc, q, strides, lg, lg_alpha, term):
    """``term[r] = lg[n_r] - lg_alpha - n_r log V_r`` (0 for an empty box): Method I's leaf term of every
    box with whole counts ``counts``, ``lg[n] = lgamma(n + alpha)``, ``log V_r`` summed feature by feature
    from ``log_pc[j, m] = log(popcount(m))`` (boxes with an empty mask get -inf or nan: never read)."""
    p = q.shape[0]
    digits = np.zeros(p, dtype=np.int64)
    for r in range(counts.shape[0]):
        n = counts[r]
        if n > 0:
            lv = 0.0
            for j in range(p):
                lv += log_pc[j, digits[j]]
            term[r] = lg[np.int64(n)] - lg_alpha - n * lv
        else:
            term[r] = 0.0
        j = p - 1
        while j >= 0:
            digits[j] += 1
            if digits[j] < (np.int64(1) << q[j]):
                break
            digits[j] = 0
            j -= 1


@njit(cache=True)
def lookup_by_count(counts, table, out):
    """``out[r] = table[counts[r]]`` for whole counts ``counts`` (a ``lgamma`` or ``log`` read from a
    table of the values ``0 .. max count`` instead of computed for every box)."""
    for r in range(counts.shape[0]):
        out[r] = table[np.int64(counts[r])]


@njit(cache=True)
def histogram_into(counts, nlogn, log_table):
    """In place, ``nlogn[r] <- nlogn[r] - n_r log n_r`` (0 for an empty box): the histogram
    log-likelihood of every box from the box sums of ``n_x log n_x`` (``log_table[n] = log n``)."""
    for r in range(counts.shape[0]):
        n = counts[r]
        if n > 0:
            nlogn[r] = nlogn[r] - n * log_table[np.int64(n)]
        else:
            nlogn[r] = 0.0
