"""Numba kernels of the rule-list sampler (Method III, spec §5.4, §6.2): LP_III of a list over the bitset
layer and box subtraction, and the Metropolis-Hastings chain (add / cut / move with their Hastings ratios).

A list is an int64 array of antecedent indices (its first ``m`` entries).  Antecedents are given by their
row bitsets ``ant_bits`` (M, words), their boxes ``ant_boxes`` (M, p) of category masks and their sizes.
Leaf volumes are float64 sums of the disjoint boxes that box subtraction leaves (exact up to rounding;
the Python :class:`~arboretum.density.rulelist.ListModel` keeps exact integers and is the test oracle).

Box subtraction is exponential in the list length in the worst case (so is the paper's inclusion-exclusion,
spec §6.3): a list whose uncovered region needs more than ``MAX_FREE_BOXES`` disjoint boxes gets volume
NaN and LP ``-inf``, so the sampler never moves there (a computational cap on the search space; lists of
the paper's lengths, up to about 10 rules, stay far below it).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .._numba import popcount64

#: The most disjoint boxes box subtraction may hold (beyond: the list is out of the search space).
MAX_FREE_BOXES = 512


@njit(cache=True)
def seed(s):
    """Seed numba's generator (the chain's stream)."""
    np.random.seed(s)


@njit(cache=True)
def _box_volume(box):
    v = 1.0
    for j in range(box.shape[0]):
        v *= popcount64(box[j])
    return v


@njit(cache=True)
def _log_prior(rules, m, sizes, available, lam, eta):
    H = available.shape[0] - 1
    used = np.zeros(H + 1, dtype=np.int64)
    lp = m * math.log(lam) - math.lgamma(m + 1.0)
    for i in range(m):
        c = sizes[rules[i]]
        norm = 0.0
        for k in range(1, H + 1):
            if available[k] - used[k] > 0:
                norm += eta ** k / math.gamma(k + 1.0)
        lp += c * math.log(eta) - math.lgamma(c + 1.0) - math.log(norm) - math.log(available[c] - used[c])
        used[c] += 1
    return lp


@njit(cache=True)
def list_volumes(rules, m, ant_boxes, full):
    """Volumes (float64) of the ``m + 1`` leaves of a list by box subtraction (spec §6.3); all NaN when the
    uncovered region needs more than ``MAX_FREE_BOXES`` boxes."""
    p = full.shape[0]
    vols = np.zeros(m + 1)
    cap = 64
    free = np.empty((cap, p), dtype=np.uint64)
    free[0] = full
    nfree = 1
    nxt = np.empty((cap, p), dtype=np.uint64)
    cur = np.empty(p, dtype=np.uint64)
    for i in range(m):
        rule = ant_boxes[rules[i]]
        nn = 0
        mine = 0.0
        for f in range(nfree):
            b = free[f]
            meets = True
            for j in range(p):
                if b[j] & rule[j] == 0:
                    meets = False
                    break
            if not meets:
                if nn >= nxt.shape[0]:
                    grown = np.empty((2 * nxt.shape[0], p), dtype=np.uint64)
                    grown[:nn] = nxt[:nn]
                    nxt = grown
                nxt[nn] = b
                nn += 1
                continue
            inter = 1.0
            for j in range(p):
                inter *= popcount64(b[j] & rule[j])
            mine += inter
            cur[:] = b
            for j in range(p):
                if b[j] & rule[j] == b[j]:
                    continue
                if nn >= nxt.shape[0]:
                    grown = np.empty((2 * nxt.shape[0], p), dtype=np.uint64)
                    grown[:nn] = nxt[:nn]
                    nxt = grown
                nxt[nn] = cur
                nxt[nn, j] = b[j] & ~rule[j]
                nn += 1
                cur[j] = b[j] & rule[j]
        vols[i] = mine
        if nn > MAX_FREE_BOXES:
            vols[:] = np.nan
            return vols
        free, nxt = nxt, free
        nfree = nn
    rest = 0.0
    for f in range(nfree):
        rest += _box_volume(free[f])
    vols[m] = rest
    return vols


@njit(cache=True)
def list_log_posterior(rules, m, ant_bits, ant_boxes, sizes, available, full, n, lam, eta, alpha, exact,
                       likelihood):
    """LP_III (spec §5.4, without the constant normaliser of the length); the prior alone when
    ``likelihood`` is False (spec C16)."""
    lp = _log_prior(rules, m, sizes, available, lam, eta)
    if not likelihood:
        return lp
    W = ant_bits.shape[1]
    covered = np.zeros(W, dtype=np.uint64)
    vols = list_volumes(rules, m, ant_boxes, full)
    if np.isnan(vols[m]):
        return -np.inf
    total = 0
    for i in range(m + 1):
        if i < m:
            row = ant_bits[rules[i]]
            c = 0
            for w in range(W):
                x = row[w] & ~covered[w]
                c += popcount64(x)
                covered[w] |= x
            total += c
        else:
            c = n - total
        lp += math.lgamma(c + alpha)
        if c > 0:
            lp -= c * math.log(vols[i])  # c > 0 implies a positive volume
    lp -= math.lgamma(n + (m + 1) * alpha)
    if exact:
        lp += math.lgamma((m + 1) * alpha) - (m + 1) * math.lgamma(alpha)
    return lp


@njit(cache=True)
def _move_probs(m, M):
    if m == 0:
        return 0.0, 1.0, 0.0
    if m == 1:
        if M > 1:
            return 0.0, 0.5, 0.5
        return 0.0, 0.0, 1.0
    if m == M:
        return 0.5, 0.0, 0.5
    return 1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0


@njit(cache=True)
def prior_list(sizes, available, lam, eta, cap, out):
    """Draw a list from the prior (spec §6.2); returns its length (at most ``cap``)."""
    M = sizes.shape[0]
    H = available.shape[0] - 1
    while True:
        m = np.random.poisson(lam)
        if m <= M:
            break
    m = min(m, cap)
    left = np.zeros(H + 1, dtype=np.int64)
    for a in range(M):
        left[sizes[a]] += 1
    on = np.zeros(M, dtype=np.bool_)
    w = np.zeros(H + 1)
    got = 0
    for _ in range(m):
        tot = 0.0
        for c in range(1, H + 1):
            w[c] = eta ** c / math.gamma(c + 1.0) if left[c] > 0 else 0.0
            tot += w[c]
        if tot == 0.0:
            break
        u = np.random.random() * tot
        c = 1
        while c < H and u >= w[c]:
            u -= w[c]
            c += 1
        while w[c] == 0.0:
            c -= 1
        while True:  # uniform among the unused antecedents of size c
            a = np.random.randint(M)
            if sizes[a] == c and not on[a]:
                break
        on[a] = True
        left[c] -= 1
        out[got] = a
        got += 1
    return got


@njit(cache=True)
def _propose(d, m, new, on, top, M):
    """Draw one proposal from the list ``d[:m]`` into ``new``: move a rule, add an unused rule
    (``on`` marks the used ones) or cut one, with the probabilities of :func:`_move_probs`.
    Returns ``(m_new, log_j, s0)``: the new length, the log Hastings ratio of the move pair, and
    the first position where ``new`` differs from ``d`` (where incremental evaluation starts)."""
    p_move, p_add, p_cut = _move_probs(m, top)
    r = np.random.random()
    log_j = 0.0
    if r < p_move:
        i = np.random.randint(m)
        k = np.random.randint(m - 1)
        if k >= i:
            k += 1
        rule = d[i]
        q = 0
        for s in range(m):
            if s != i:
                new[q] = d[s]
                q += 1
        for s in range(m - 1, k, -1):
            new[s] = new[s - 1]
        new[k] = rule
        return m, log_j, min(i, k)
    if r < p_move + p_add:
        while True:
            cand = np.random.randint(M)
            if not on[cand]:
                break
        pos = np.random.randint(m + 1)
        for s in range(pos):
            new[s] = d[s]
        new[pos] = cand
        for s in range(pos, m):
            new[s + 1] = d[s]
        p_cut_back = _move_probs(m + 1, top)[2]
        log_j = math.log(p_cut_back / (m + 1)) - math.log(p_add / ((M - m) * (m + 1.0)))
        return m + 1, log_j, pos
    i = np.random.randint(m)
    q = 0
    for s in range(m):
        if s != i:
            new[q] = d[s]
            q += 1
    p_add_back = _move_probs(m - 1, top)[1]
    log_j = math.log(p_add_back / ((M - m + 1.0) * m)) - math.log(p_cut / m)
    return m - 1, log_j, i


@njit(cache=True)
def _keep_best(best, d, m, lp):
    """``best`` = [length, lp, rules...]: replaced by the list ``d[:m]`` when ``lp`` is higher."""
    if lp > best[1]:
        best[0] = m
        best[1] = lp
        for s in range(m):
            best[2 + s] = d[s]


@njit(cache=True)
def _record(t, rec_from, d, m, lp, trace, lengths, rec_lists):
    """Step ``t``'s LP and length (and the list, when ``rec_lists`` has rows) from ``rec_from`` on."""
    if t >= rec_from:
        trace[t - rec_from] = lp
        lengths[t - rec_from] = m
        if rec_lists.shape[0] > 0:
            rec_lists[t - rec_from, 0] = m
            for s in range(m):
                rec_lists[t - rec_from, 1 + s] = d[s]


@njit(cache=True)
def mh_steps(d, m, lp, n_steps, ant_bits, ant_boxes, sizes, available, full, n, lam, eta, alpha, exact,
             likelihood, cap, best, trace, lengths, rec_from, rec_lists):
    """``n_steps`` Metropolis-Hastings steps from the list ``d[:m]`` (LP ``lp``), in place.

    ``best`` = [length, lp, rules...] as float64 is updated with every improvement; the LP and length of
    step ``t >= rec_from`` go to ``trace[t - rec_from]`` / ``lengths[...]`` (and the list itself to
    ``rec_lists`` when it has rows).  Returns ``(m, lp)``.
    """
    M = sizes.shape[0]
    on = np.zeros(M, dtype=np.bool_)
    for i in range(m):
        on[d[i]] = True
    new = np.empty(cap, dtype=np.int64)
    top = min(M, cap)
    for t in range(n_steps):
        m_new, log_j, _ = _propose(d, m, new, on, top, M)
        lp_new = list_log_posterior(new, m_new, ant_bits, ant_boxes, sizes, available, full, n, lam, eta,
                                    alpha, exact, likelihood)
        if math.log(np.random.random() + 1e-300) < lp_new - lp + log_j:
            for s in range(m):
                on[d[s]] = False
            for s in range(m_new):
                d[s] = new[s]
                on[d[s]] = True
            m, lp = m_new, lp_new
            _keep_best(best, d, m, lp)
        _record(t, rec_from, d, m, lp, trace, lengths, rec_lists)
    return m, lp


# -- incremental evaluation (spec C14) ---------------------------------------------------------------
# The state of a list, position by position: before rule i, the uncovered region as disjoint boxes
# (``F[off[i]:off[i] + nf[i]]``), the covered rows (``cov[i]``), the sum of the earlier leaves' terms
# (``pre[i]``) and their rows (``tot[i]``).  A proposal that first differs from the current list at
# position s0 is evaluated from the state at s0; only an accepted one is written back.


@njit(cache=True)
def _grow(F, need):
    if need <= F.shape[0]:
        return F
    G = np.empty((max(need, 2 * F.shape[0]), F.shape[1]), dtype=np.uint64)
    G[:F.shape[0]] = F
    return G


@njit(cache=True)
def _restricted_features(ant_boxes, full):
    """``(feats, nfeat)``: the features whose mask antecedent ``a`` restricts (``ant_boxes[a, j] !=
    full[j]``), ascending, in ``feats[a, :nfeat[a]]``."""
    M, p = ant_boxes.shape
    nfeat = np.zeros(M, dtype=np.int64)
    width = 1
    for a in range(M):
        for j in range(p):
            if ant_boxes[a, j] != full[j]:
                nfeat[a] += 1
        width = max(width, nfeat[a])
    feats = np.zeros((M, width), dtype=np.int64)
    for a in range(M):
        t = 0
        for j in range(p):
            if ant_boxes[a, j] != full[j]:
                feats[a, t] = j
                t += 1
    return feats, nfeat


@njit(cache=True)
def _segments(full):
    """Packed boxes: feature ``j``'s category mask lives in word ``word[j]`` at bit ``shift[j]`` (a
    segment never straddles two words); ``seg[j]`` is the segment's mask; returns (word, shift, seg,
    number of words)."""
    p = full.shape[0]
    word = np.zeros(p, dtype=np.int64)
    shift = np.zeros(p, dtype=np.int64)
    seg = np.zeros(p, dtype=np.uint64)
    w, at = 0, 0
    for j in range(p):
        width = 0
        x = full[j]
        while x != 0:
            width += 1
            x >>= np.uint64(1)
        if at + width > 64:
            w += 1
            at = 0
        word[j] = w
        shift[j] = at
        seg[j] = full[j] << np.uint64(at)
        at += width
    return word, shift, seg, w + 1


@njit(cache=True)
def _pack(box, word, shift, out):
    out[:] = 0
    for j in range(box.shape[0]):
        out[word[j]] |= box[j] << np.uint64(shift[j])


@njit(cache=True)
def _packed_volume(b, word, seg):
    """``prod_j popcount(mask_j)`` of a packed box, factors in feature order (as :func:`_box_volume`)."""
    v = 1.0
    for j in range(word.shape[0]):
        v *= popcount64(b[word[j]] & seg[j])
    return v


@njit(cache=True)
def _apply_rule(rule, rule_feats, rule_nfeat, rule_bits, src, s_off, s_n, cov_in, dst, d_off, cov_out, cur, word,
                seg):
    """Subtract one rule (packed box ``rule``) from the uncovered packed boxes ``src[s_off:s_off+s_n]`` into
    ``dst`` from ``d_off`` (grown as needed) and its rows from ``cov_in`` into ``cov_out``; returns (dst,
    boxes written, the leaf's volume, the leaf's rows).  More than ``MAX_FREE_BOXES`` boxes: volume NaN.

    Boxes are packed (:func:`_segments`: all the masks in a few words), so a box that the rule misses is
    copied as a few words.  Only the features the rule restricts (``rule_feats[:rule_nfeat]``, ascending)
    can keep a box from meeting it or cut pieces off it (every other mask of the rule is full, and no box
    has an empty mask); the pieces, their order and the volume (factors in feature order) are those of
    box subtraction over every feature, :func:`list_volumes`."""
    W2 = rule.shape[0]
    p = word.shape[0]
    nn = 0
    mine = 0.0
    for f in range(s_n):
        b = src[s_off + f]
        meets = True
        for t in range(rule_nfeat):
            j = rule_feats[t]
            if b[word[j]] & rule[word[j]] & seg[j] == 0:
                meets = False
                break
        dst = _grow(dst, d_off + nn + rule_nfeat + 1)
        if not meets:
            for w in range(W2):
                dst[d_off + nn, w] = b[w]
            nn += 1
            continue
        inter = 1.0
        for j in range(p):
            inter *= popcount64(b[word[j]] & rule[word[j]] & seg[j])
        mine += inter
        for w in range(W2):
            cur[w] = b[w]
        for t in range(rule_nfeat):
            j = rule_feats[t]
            w = word[j]
            bj = b[w] & seg[j]
            rj = rule[w] & seg[j]
            if bj & rj == bj:
                continue
            for x in range(W2):
                dst[d_off + nn, x] = cur[x]
            dst[d_off + nn, w] = (cur[w] & ~seg[j]) | (bj & ~rj)
            nn += 1
            cur[w] = (cur[w] & ~seg[j]) | (bj & rj)
    c = 0
    for w in range(cov_in.shape[0]):
        x = rule_bits[w] & ~cov_in[w]
        c += popcount64(x)
        cov_out[w] = cov_in[w] | x
    if nn > MAX_FREE_BOXES:
        mine = np.nan
    return dst, nn, mine, c


@njit(cache=True)
def _leaf_term(c, vol, alpha):
    t = math.lgamma(c + alpha)
    if c > 0:
        t -= c * math.log(vol)
    return t


@njit(cache=True)
def _evaluate_from(s0, rules, m, ant_bits, packed, ant_feats, ant_nfeat, word, seg, F, off, nf, cov, pre, tot, G,
                   goff, gnf, gcov, gpre, gtot, n, alpha):
    """Leaves ``s0 .. m`` of ``rules[:m]`` from the stored state at ``s0`` (arrays F, off, nf, cov, pre,
    tot) into the scratch state (G, goff, ...) at positions ``s0 + 1 .. m``; returns (G, sum of all
    leaf terms, ok).  ``ok`` False when an uncovered region needs more than ``MAX_FREE_BOXES`` boxes."""
    src, s_off, s_n = F, off[s0], nf[s0]
    cin = cov[s0]
    cur = np.empty(packed.shape[1], dtype=np.uint64)
    acc = pre[s0]
    total = tot[s0]
    goff[s0] = 0
    d_off = 0
    for i in range(s0, m):
        a = rules[i]
        G, nn, vol, c = _apply_rule(packed[a], ant_feats[a], ant_nfeat[a], ant_bits[a], src, s_off, s_n, cin,
                                    G, d_off, gcov[i + 1], cur, word, seg)
        if np.isnan(vol):
            return G, -np.inf, False
        acc += _leaf_term(c, vol, alpha)
        total += c
        goff[i + 1] = d_off
        gnf[i + 1] = nn
        gpre[i + 1] = acc
        gtot[i + 1] = total
        src, s_off, s_n = G, d_off, nn
        cin = gcov[i + 1]
        d_off += nn
    rest = 0.0
    for f in range(s_n):
        rest += _packed_volume(src[s_off + f], word, seg)
    acc += _leaf_term(n - total, rest, alpha)
    return G, acc, True


@njit(cache=True)
def _commit(s0, m, F, off, nf, cov, pre, tot, G, goff, gnf, gcov, gpre, gtot):
    """Write the scratch positions ``s0 + 1 .. m`` into the stored state; returns F (maybe grown)."""
    start = off[s0] + nf[s0]
    for i in range(s0 + 1, m + 1):
        F = _grow(F, start + gnf[i] + 1)
        for f in range(gnf[i]):
            F[start + f] = G[goff[i] + f]
        off[i] = start
        nf[i] = gnf[i]
        cov[i] = gcov[i]
        pre[i] = gpre[i]
        tot[i] = gtot[i]
        start += gnf[i]
    return F


@njit(cache=True)
def mh_steps_incremental(d, m, lp, n_steps, ant_bits, ant_boxes, sizes, available, full, n, lam, eta, alpha, exact,
                         likelihood, cap, best, trace, lengths, rec_from, rec_lists):
    """:func:`mh_steps` with incremental evaluation (spec C14): a proposal's LP_III is computed from
    the stored state of the current list at the first position it changes (add: where the rule goes;
    cut: where it was; move: the earlier of the two positions), so the unchanged prefix costs nothing.
    Same chain, same arguments and result as :func:`mh_steps` (up to rounding of the sums)."""
    M = sizes.shape[0]
    W = ant_bits.shape[1]
    on = np.zeros(M, dtype=np.bool_)
    for i in range(m):
        on[d[i]] = True
    new = np.empty(cap, dtype=np.int64)
    top = min(M, cap)
    ant_feats, ant_nfeat = _restricted_features(ant_boxes, full)
    word, shift, seg, W2 = _segments(full)
    packed = np.empty((M, W2), dtype=np.uint64)
    for a in range(M):
        _pack(ant_boxes[a], word, shift, packed[a])
    F = np.empty((64, W2), dtype=np.uint64)
    G = np.empty((64, W2), dtype=np.uint64)
    off = np.zeros(cap + 2, dtype=np.int64)
    nf = np.zeros(cap + 2, dtype=np.int64)
    cov = np.zeros((cap + 2, W), dtype=np.uint64)
    pre = np.zeros(cap + 2)
    tot = np.zeros(cap + 2, dtype=np.int64)
    goff = np.zeros(cap + 2, dtype=np.int64)
    gnf = np.zeros(cap + 2, dtype=np.int64)
    gcov = np.zeros((cap + 2, W), dtype=np.uint64)
    gpre = np.zeros(cap + 2)
    gtot = np.zeros(cap + 2, dtype=np.int64)
    _pack(full, word, shift, F[0])
    nf[0] = 1
    stale = True  # no state stored yet: evaluate proposals from position 0
    if likelihood:
        G, s, ok = _evaluate_from(0, d, m, ant_bits, packed, ant_feats, ant_nfeat, word, seg, F, off, nf, cov, pre,
                                  tot, G, goff, gnf, gcov, gpre, gtot, n, alpha)
        if ok:
            F = _commit(0, m, F, off, nf, cov, pre, tot, G, goff, gnf, gcov, gpre, gtot)
            stale = False
            lp = _log_prior(d, m, sizes, available, lam, eta) + s - math.lgamma(n + (m + 1) * alpha)
            if exact:
                lp += math.lgamma((m + 1) * alpha) - (m + 1) * math.lgamma(alpha)
        else:
            lp = -np.inf
    for t in range(n_steps):
        m_new, log_j, s0 = _propose(d, m, new, on, top, M)
        if stale:
            s0 = 0
        lp_new = _log_prior(new, m_new, sizes, available, lam, eta)
        ok = True
        if likelihood:
            G, s_terms, ok = _evaluate_from(s0, new, m_new, ant_bits, packed, ant_feats, ant_nfeat, word, seg, F, off,
                                            nf, cov, pre, tot, G, goff, gnf, gcov, gpre, gtot, n, alpha)
            if ok:
                lp_new += s_terms - math.lgamma(n + (m_new + 1) * alpha)
                if exact:
                    lp_new += math.lgamma((m_new + 1) * alpha) - (m_new + 1) * math.lgamma(alpha)
            else:
                lp_new = -np.inf
        if math.log(np.random.random() + 1e-300) < lp_new - lp + log_j:
            for s in range(m):
                on[d[s]] = False
            for s in range(m_new):
                d[s] = new[s]
                on[d[s]] = True
            if likelihood and ok:
                F = _commit(s0, m_new, F, off, nf, cov, pre, tot, G, goff, gnf, gcov, gpre, gtot)
                stale = False
            m, lp = m_new, lp_new
            _keep_best(best, d, m, lp)
        _record(t, rec_from, d, m, lp, trace, lengths, rec_lists)
    return m, lp
