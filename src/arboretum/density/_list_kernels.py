"""Numba kernels of the rule-list sampler (Method III, spec §5.4, §6.2): LP_III of a list over the bitset
layer and box subtraction, and the Metropolis-Hastings chain (add / cut / move with their Hastings ratios).

A list is an int64 array of antecedent indices (its first ``m`` entries).  Antecedents are given by their
row bitsets ``ant_bits`` (M, words), their boxes ``ant_boxes`` (M, p) of category masks and their sizes.
Leaf volumes are float64 sums of the disjoint boxes that box subtraction leaves (exact up to rounding;
the Python :class:`~arboretum.density.rulelist.ListModel` keeps exact integers and is the test oracle).

Box subtraction is exponential in the list length in the worst case (so is the paper's inclusion-exclusion,
spec §6.3): a list whose uncovered region needs more than ``MAX_FREE_BOXES`` disjoint boxes gets volume
NaN and LP ``-inf``, so the sampler never moves there (a computational cap on the search space; lists of
the paper's lengths, up to about 10 rules, stay far below it, but the long lists that the posterior prefers
on Chess and Mushroom reach it: about a third of their proposals there are out of it).

The chain (:func:`mh_chain`) scores a proposal first from the stored leaves of the current list (only the
leaves whose region changes, found without building new free boxes) and runs box subtraction, which also
applies the cap, only for a proposal that this score does not already reject; see :func:`mh_steps_incremental`.
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
    """Volumes (float64) of the ``m + 1`` leaves of a list by box subtraction (spec §6.3, the step
    :func:`_apply_rule` of the incremental chain); all NaN when the uncovered region needs more than
    ``MAX_FREE_BOXES`` boxes."""
    p = full.shape[0]
    vols = np.zeros(m + 1)
    own = np.empty((max(m, 1), p), dtype=np.uint64)
    for i in range(m):
        for j in range(p):  # element by element, not own[i] = ...: see _grow
            own[i, j] = ant_boxes[rules[i], j]
    feats, nfeat = _restricted_features(own[:m], full)
    word, shift, seg, W2 = _segments(full)
    packed = np.empty((max(m, 1), W2), dtype=np.uint64)
    for i in range(m):
        _pack(own[i], word, shift, packed[i])
    rw, rm, sm = _rule_masks(packed, feats, nfeat, word, seg)
    cur = np.empty(W2, dtype=np.uint64)
    free = np.empty((64, W2), dtype=np.uint64)
    freev = np.empty(64)
    nxt = np.empty((64, W2), dtype=np.uint64)
    nxtv = np.empty(64)
    got = np.empty((64, W2), dtype=np.uint64)
    gotv = np.empty(64)
    no_rows = np.zeros(0, dtype=np.uint64)
    _pack(full, word, shift, free[0])
    freev[0] = _packed_volume(free[0], word, seg)
    nfree = 1
    for i in range(m):
        nxt, nxtv, nn, got, gotv, _, vol, _ = _apply_rule(rw[i], rm[i], sm[i], nfeat[i], no_rows, free, freev, 0,
                                                          nfree, no_rows, nxt, nxtv, 0, no_rows, cur, got, 0, gotv)
        if np.isnan(vol):
            for k in range(vols.shape[0]):  # a loop, not vols[:] = nan (see _grow)
                vols[k] = np.nan
            return vols
        vols[i] = vol
        free, nxt = nxt, free
        freev, nxtv = nxtv, freev
        nfree = nn
    rest = 0.0
    for f in range(nfree):
        rest += freev[f]
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
    Returns ``(m_new, log_j, s0, kind, i, k)``: the new length, the log Hastings ratio of the move pair,
    the first position where ``new`` differs from ``d`` (where incremental evaluation starts), and the
    move: ``kind`` 0 moves the rule at ``i`` to ``k``, 1 adds antecedent ``k`` at ``i``, 2 cuts the rule
    at ``i`` (``k`` unused)."""
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
        return m, log_j, min(i, k), 0, i, k
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
        return m + 1, log_j, pos, 1, pos, cand
    i = np.random.randint(m)
    q = 0
    for s in range(m):
        if s != i:
            new[q] = d[s]
            q += 1
    p_add_back = _move_probs(m - 1, top)[1]
    log_j = math.log(p_add_back / ((M - m + 1.0) * m)) - math.log(p_cut / m)
    return m - 1, log_j, i, 2, i, 0


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
        m_new, log_j, _, _, _, _ = _propose(d, m, new, on, top, M)
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
    for i in range(F.shape[0]):  # loops, not G[:n] = F: a slice copy compiles numba's shape-error path (3 s)
        for w in range(F.shape[1]):
            G[i, w] = F[i, w]
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
    """``prod_j popcount(mask_j)`` of a packed box, factors in feature order."""
    v = 1.0
    for j in range(word.shape[0]):
        v *= popcount64(b[word[j]] & seg[j])
    return v


@njit(cache=True)
def _grow1(x, need):
    if need <= x.shape[0]:
        return x
    y = np.empty(max(need, 2 * x.shape[0]), dtype=x.dtype)
    for i in range(x.shape[0]):  # a loop, not y[:n] = x (see _grow)
        y[i] = x[i]
    return y


@njit(cache=True)
def _apply_rule(rwa, rma, sma, rule_nfeat, rule_bits, src, srcv, s_off, s_n, cov_in, dst, dstv, d_off, cov_out, cur,
                got, g_off, gotv):
    """Subtract one rule (its restricted features' words ``rwa``, masks ``rma`` and segments ``sma``,
    :func:`_rule_masks`) from the uncovered packed boxes ``src[s_off:s_off+s_n]``
    (volumes ``srcv``) into ``dst`` / ``dstv`` from ``d_off`` (grown as needed) and its rows from ``cov_in``
    into ``cov_out``; the pieces the rule captures (``b & rule``) go to ``got`` from ``g_off`` with their
    volumes in ``gotv``.  Returns (dst, dstv, boxes written, got, gotv, pieces captured, the leaf's volume,
    the leaf's rows).  More than ``MAX_FREE_BOXES`` boxes: volume NaN.

    A piece's volume is its box's divided by the cut feature's count, times the piece's count of it:
    exact integers below 2**53, so the same volumes as the product over every feature.

    Boxes are packed (:func:`_segments`: all the masks in a few words), so a box that the rule misses is
    copied as a few words.  Only the features the rule restricts (the first ``rule_nfeat``, ascending) can
    keep a box from meeting it or cut pieces off it (every other mask of the rule is full, and no box
    has an empty mask); the pieces and their order are those of box subtraction over every feature,
    :func:`list_volumes`."""
    W2 = src.shape[1]
    nn = 0
    ng = 0
    mine = 0.0
    # room for the worst case once (growing per box costs reference counting in the hot loop)
    dst = _grow(dst, d_off + s_n * (rule_nfeat + 1) + 1)
    dstv = _grow1(dstv, dst.shape[0])
    got = _grow(got, g_off + s_n + 1)
    gotv = _grow1(gotv, g_off + s_n + 1)
    for f in range(s_n):
        fb = s_off + f
        meets = True
        for t in range(rule_nfeat):
            if src[fb, rwa[t]] & rma[t] == 0:
                meets = False
                break
        if not meets:
            for w in range(W2):
                dst[d_off + nn, w] = src[fb, w]
            dstv[d_off + nn] = srcv[fb]
            nn += 1
            continue
        vcur = srcv[fb]
        for w in range(W2):
            cur[w] = src[fb, w]
        for t in range(rule_nfeat):
            w = rwa[t]
            sj = sma[t]
            bj = src[fb, w] & sj
            rj = rma[t]
            if bj & rj == bj:
                continue
            share = vcur / popcount64(bj)
            for x in range(W2):
                dst[d_off + nn, x] = cur[x]
            dst[d_off + nn, w] = (cur[w] & ~sj) | (bj & ~rj)
            dstv[d_off + nn] = share * popcount64(bj & ~rj)
            nn += 1
            cur[w] = (cur[w] & ~sj) | (bj & rj)
            vcur = share * popcount64(bj & rj)
        mine += vcur
        for w in range(W2):
            got[g_off + ng, w] = cur[w]
        gotv[g_off + ng] = vcur
        ng += 1
    c = 0
    for w in range(cov_in.shape[0]):
        x = rule_bits[w] & ~cov_in[w]
        c += popcount64(x)
        cov_out[w] = cov_in[w] | x
    if nn > MAX_FREE_BOXES:
        mine = np.nan
    return dst, dstv, nn, got, gotv, ng, mine, c


@njit(cache=True)
def _leaf_term(c, vol, alpha):
    t = math.lgamma(c + alpha)
    if c > 0:
        t -= c * math.log(vol)
    return t


# -- incremental evaluation (spec C14) ---------------------------------------------------------------
# The state of a list, position by position, as box subtraction leaves it (the canonical state): before
# rule i, the uncovered region as disjoint boxes (``F[off[i]:off[i] + nf[i]]``), the covered rows
# (``cov[i]``), the sum of the earlier leaves' terms (``pre[i]``) and their rows (``tot[i]``); and leaf
# i itself: the pieces it captured (``P[poff[i]:poff[i] + pn[i]]``, volumes ``pv``; the default leaf's are
# the last free boxes), its volume ``V[i]``, rows ``C[i]`` and term ``T[i]``.  A proposal is first
# scored from the leaves alone (:func:`_quick_terms`: only the leaves whose region changes, found by
# intersecting or redistributing pieces, no new free boxes); only one that this score does not already
# reject is evaluated by box subtraction from the first position it changes (:func:`_evaluate_from`, which
# also applies the ``MAX_FREE_BOXES`` cap), and only an accepted one is written back.


@njit(cache=True)
def _evaluate_from(s0, rules, m, ant_bits, rw, rm, sm, ant_nfeat, F, Fv, off, nf, cov, pre, tot, G, Gv, goff, gnf,
                   gcov, gpre, gtot, GP, gpv, gpoff, gpn, gvol, gcnt, gterm, n, alpha):
    """Leaves ``s0 .. m`` of ``rules[:m]`` (antecedent masks of :func:`_rule_masks`) from the stored state
    at ``s0`` (arrays F, off, nf, cov, pre, tot) into the scratch state (G, goff, ... at positions
    ``s0 + 1 .. m``; GP, gpv, gpoff, ... at leaves ``s0 .. m``; box volumes in Fv, Gv); returns (G, Gv, GP,
    gpv, sum of all leaf terms, ok).  ``ok`` False when an uncovered region needs more than
    ``MAX_FREE_BOXES`` boxes."""
    src, srcv, s_off, s_n = F, Fv, off[s0], nf[s0]
    cin = cov[s0]
    cur = np.empty(F.shape[1], dtype=np.uint64)
    acc = pre[s0]
    total = tot[s0]
    goff[s0] = 0
    d_off = 0
    g_off = 0
    for i in range(s0, m):
        a = rules[i]
        G, Gv, nn, GP, gpv, ng, vol, c = _apply_rule(rw[a], rm[a], sm[a], ant_nfeat[a], ant_bits[a], src, srcv,
                                                     s_off, s_n, cin, G, Gv, d_off, gcov[i + 1], cur, GP, g_off, gpv)
        if np.isnan(vol):
            return G, Gv, GP, gpv, -np.inf, False
        term = _leaf_term(c, vol, alpha)
        acc += term
        total += c
        goff[i + 1] = d_off
        gnf[i + 1] = nn
        gpre[i + 1] = acc
        gtot[i + 1] = total
        gpoff[i] = g_off
        gpn[i] = ng
        gvol[i] = vol
        gcnt[i] = c
        gterm[i] = term
        src, srcv, s_off, s_n = G, Gv, d_off, nn
        cin = gcov[i + 1]
        d_off += nn
        g_off += ng
    GP = _grow(GP, g_off + s_n + 1)
    gpv = _grow1(gpv, g_off + s_n + 1)
    rest = 0.0
    for f in range(s_n):
        v = srcv[s_off + f]
        rest += v
        for w in range(GP.shape[1]):  # not a row assignment: numba's shape check compiles string formatting (~2 s)
            GP[g_off + f, w] = src[s_off + f, w]
        gpv[g_off + f] = v
    term = _leaf_term(n - total, rest, alpha)
    gpoff[m] = g_off
    gpn[m] = s_n
    gvol[m] = rest
    gcnt[m] = n - total
    gterm[m] = term
    acc += term
    return G, Gv, GP, gpv, acc, True


@njit(cache=True)
def _commit(s0, m, F, Fv, off, nf, cov, pre, tot, G, Gv, goff, gnf, gcov, gpre, gtot, P, pv, poff, pn, V, C, T, GP,
            gpv, gpoff, gpn, gvol, gcnt, gterm):
    """Write the scratch positions ``s0 + 1 .. m`` (leaves ``s0 .. m``) into the stored state; returns F,
    Fv, P, pv (maybe grown)."""
    start = off[s0] + nf[s0]
    for i in range(s0 + 1, m + 1):
        F = _grow(F, start + gnf[i] + 1)
        Fv = _grow1(Fv, F.shape[0])
        for f in range(gnf[i]):
            for w in range(F.shape[1]):
                F[start + f, w] = G[goff[i] + f, w]
            Fv[start + f] = Gv[goff[i] + f]
        off[i] = start
        nf[i] = gnf[i]
        for w in range(cov.shape[1]):  # element-wise: see _evaluate_from
            cov[i, w] = gcov[i, w]
        pre[i] = gpre[i]
        tot[i] = gtot[i]
        start += gnf[i]
    start = poff[s0]
    for i in range(s0, m + 1):
        P = _grow(P, start + gpn[i] + 1)
        pv = _grow1(pv, start + gpn[i] + 1)
        for f in range(gpn[i]):
            for w in range(P.shape[1]):
                P[start + f, w] = GP[gpoff[i] + f, w]
            pv[start + f] = gpv[gpoff[i] + f]
        poff[i] = start
        pn[i] = gpn[i]
        V[i] = gvol[i]
        C[i] = gcnt[i]
        T[i] = gterm[i]
        start += gpn[i]
    return F, Fv, P, pv


# -- the quick score of a proposal from the stored leaves ------------------------------------------------


@njit(cache=True)
def _rule_masks(packed, ant_feats, ant_nfeat, word, seg):
    """Per antecedent ``a`` and restricted feature ``t``: the word of its mask (``rw``), the mask
    (``rm``, in place in the packed word) and the feature's whole segment (``sm``)."""
    M, width = ant_feats.shape
    rw = np.zeros((M, max(width, 1)), dtype=np.int64)
    rm = np.zeros((M, max(width, 1)), dtype=np.uint64)
    sm = np.zeros((M, max(width, 1)), dtype=np.uint64)
    for a in range(M):
        for t in range(ant_nfeat[a]):
            j = ant_feats[a, t]
            rw[a, t] = word[j]
            sm[a, t] = seg[j]
            rm[a, t] = packed[a, word[j]] & seg[j]
    return rw, rm, sm


@njit(cache=True)
def _meet_volume(P, f, vb, a, rw, rm, sm, nfeat):
    """Volume of the packed box ``P[f]`` (volume ``vb``) inside antecedent ``a``; 0 when they are disjoint.
    ``vb`` divided by the factors of the restricted features, times their intersections: exact integers
    (below 2**53)."""
    num = 1.0
    den = 1.0
    for t in range(nfeat[a]):
        x = P[f, rw[a, t]]
        inter = popcount64(x & rm[a, t])
        if inter == 0:
            return 0.0
        num *= inter
        den *= popcount64(x & sm[a, t])
    return vb / den * num


@njit(cache=True)
def _leaf_split(P, pv, start, count, a, rw, rm, sm, nfeat):
    """Volumes of the pieces ``P[start:start+count]`` inside and outside antecedent ``a``.  Both are sums of
    products (the outside of a box met by ``a`` is the pieces box subtraction would cut off it), never a
    difference of volumes: no cancellation on domains of more than 2**53 configurations."""
    inside = 0.0
    outside = 0.0
    for f in range(count):
        vb = pv[start + f]
        if _meet_volume(P, start + f, vb, a, rw, rm, sm, nfeat) == 0.0:
            outside += vb
            continue
        vcur = vb
        for t in range(nfeat[a]):
            x = P[start + f, rw[a, t]]
            pb = popcount64(x & sm[a, t])
            pi = popcount64(x & rm[a, t])
            share = vcur / pb
            outside += share * (pb - pi)
            vcur = share * pi
        inside += vcur
    return inside, outside


@njit(cache=True)
def _redistribute(P, pv, start, count, rules, lo, hi, rw, rm, sm, nfeat, gain, Q, qv, R, rv):
    """Box subtraction of the pieces ``P[start:start+count]`` (a region that the rules before ``lo`` do not
    meet) through ``rules[lo:hi]``: ``gain[i]`` = the volume rule ``i`` captures of it.  Returns (the volume
    left, Q, qv, R, rv: scratch, maybe grown)."""
    W2 = P.shape[1]
    Q = _grow(Q, count + 1)
    qv = _grow1(qv, count + 1)
    for f in range(count):
        for w in range(Q.shape[1]):  # element-wise: see _evaluate_from
            Q[f, w] = P[start + f, w]
        qv[f] = pv[start + f]
    nq = count
    for i in range(lo, hi):
        gain[i] = 0.0
        if nq == 0:
            continue
        a = rules[i]
        nfa = nfeat[a]
        nr = 0
        R = _grow(R, nq * (nfa + 1) + 1)
        rv = _grow1(rv, nq * (nfa + 1) + 1)
        for f in range(nq):
            vb = qv[f]
            meets = True
            for t in range(nfa):
                if Q[f, rw[a, t]] & rm[a, t] == 0:
                    meets = False
                    break
            if not meets:
                for w in range(W2):
                    R[nr, w] = Q[f, w]
                rv[nr] = vb
                nr += 1
                continue
            vcur = vb
            for w in range(W2):
                R[nr, w] = Q[f, w]
            for t in range(nfa):
                w = rw[a, t]
                bj = R[nr, w] & sm[a, t]
                rj = rm[a, t]
                if bj & rj == bj:
                    continue
                share = vcur / popcount64(bj)
                for x in range(W2):
                    R[nr + 1, x] = R[nr, x]
                R[nr, w] = (R[nr, w] & ~sm[a, t]) | (bj & ~rj)
                rv[nr] = share * popcount64(bj & ~rj)
                R[nr + 1, w] = (R[nr + 1, w] & ~sm[a, t]) | (bj & rj)
                vcur = share * popcount64(bj & rj)
                nr += 1
            gain[i] += vcur
        Q, R = R, Q
        qv, rv = rv, qv
        nq = nr
    left = 0.0
    for f in range(nq):
        left += qv[f]
    return left, Q, qv, R, rv


@njit(cache=True)
def _sparse_rows(bits, cov, out, nz):
    """``out = bits & ~cov``, its non-zero words listed in ``nz``; returns (their number, the rows)."""
    W = bits.shape[0]
    k = 0
    c = 0
    for w in range(W):
        x = bits[w] & ~cov[w]
        out[w] = x
        if x != 0:
            nz[k] = w
            k += 1
            c += popcount64(x)
    return k, c


@njit(cache=True)
def _quick_terms(kind, i, k, d, m, m_new, ant_bits, rw, rm, sm, nfeat, P, pv, poff, pn, V, C, T, cov, n, alpha,
                 nv, nc, same, src, gain, rows, nz, Q, qv, R, rv):
    """The sum of the leaf terms of the proposal ``(kind, i, k)`` of :func:`_propose` from the stored leaves
    of ``d[:m]``: a leaf keeps its stored term unless its region changes.  An added (or moved-up) rule
    takes from each later leaf its pieces' volume inside the rule, and the rows of it; a cut (or
    moved-down) rule's pieces are redistributed over the later rules by box subtraction of those pieces
    only.  Same sums as :func:`_evaluate_from` up to rounding (exact when volumes are below 2**53).
    Returns (sum, Q, qv, R, rv)."""
    for j in range(m + 1):  # the stored leaves, shifted below as the move shifts them
        src[j] = j
        same[j] = True
    if kind == 1 or (kind == 0 and k < i):  # rule r goes in at position s, above old leaves s .. e-1
        if kind == 1:
            r, s, e = k, i, m + 1
        else:
            r, s, e = d[i], k, i
        nnz, cr = _sparse_rows(ant_bits[r], cov[s], rows, nz)
        vr = 0.0
        for j in range(s, e):
            x, rest = _leaf_split(P, pv, poff[j], pn[j], r, rw, rm, sm, nfeat)
            vr += x
            src[j + 1] = j
            same[j + 1] = x == 0.0
            if x != 0.0:
                nv[j + 1] = rest
                lost = 0
                if j < m:
                    bits = ant_bits[d[j]]
                    cj = cov[j]
                    for t in range(nnz):
                        w = nz[t]
                        lost += popcount64(bits[w] & ~cj[w] & rows[w])
                nc[j + 1] = C[j] - lost
        if kind == 0:
            vr += V[i]
        src[s] = -1
        same[s] = False
        nv[s] = vr
        nc[s] = cr
    else:  # rule r at s leaves; its pieces go to old leaves s+1 .. e-1 (cut: then the default)
        s = i
        r = d[s]
        e = m if kind == 2 else k + 1
        nnz, cr = _sparse_rows(ant_bits[r], cov[s], rows, nz)
        left, Q, qv, R, rv = _redistribute(P, pv, poff[s], pn[s], d, s + 1, e, rw, rm, sm, nfeat, gain, Q, qv, R, rv)
        for j in range(s + 1, e):
            src[j - 1] = j
            same[j - 1] = gain[j] == 0.0
            if gain[j] != 0.0:
                nv[j - 1] = V[j] + gain[j]
                bits = ant_bits[d[j]]
                g = 0
                for t in range(nnz):
                    w = nz[t]
                    x = rows[w] & bits[w]
                    g += popcount64(x)
                    rows[w] &= ~x
                nc[j - 1] = C[j] + g
                cr -= g
        if kind == 2:
            src[m - 1] = m
            same[m - 1] = left == 0.0
            nv[m - 1] = V[m] + left
        else:
            src[k] = -1
            same[k] = False
            nv[k] = left
            nc[k] = cr
    acc = 0.0
    total = 0
    for j in range(m_new + 1):
        if j == m_new:
            nc[j] = n - total  # the default leaf's rows (unchanged when its volume is)
        elif same[j]:
            total += C[src[j]]
        else:
            total += nc[j]
        if same[j]:
            acc += T[src[j]]
        else:
            acc += _leaf_term(nc[j], nv[j], alpha)
    return acc, Q, qv, R, rv


@njit(cache=True)
def _prior_tables(sizes, available, lam, eta, cap):
    """Tables of :func:`_quick_prior`: per size ``c``, ``c ln(eta) - ln c!`` and the running sums
    ``S[c, u] = sum_{t < u} ln(available[c] - t)``; and ``ln`` of the size distribution's normaliser
    over the sizes that have antecedents."""
    H = available.shape[0] - 1
    per = np.zeros(H + 1)
    S = np.zeros((H + 1, cap + 2))
    norm = 0.0
    for c in range(1, H + 1):
        per[c] = c * math.log(eta) - math.lgamma(c + 1.0)
        if available[c] > 0:
            norm += eta ** c / math.gamma(c + 1.0)
        for u in range(1, cap + 2):
            left = available[c] - (u - 1)
            S[c, u] = S[c, u - 1] + (math.log(left) if left > 0 else 0.0)
    return per, S, math.log(norm) if norm > 0 else 0.0


@njit(cache=True)
def _quick_prior(cnt, m, per, S, lognorm, available, lam):
    """:func:`_log_prior` of a list with ``cnt[c]`` rules of size ``c``: it depends on the sizes only,
    while no size runs out of antecedents (then NaN: use :func:`_log_prior`)."""
    lp = m * math.log(lam) - math.lgamma(m + 1.0) - m * lognorm
    for c in range(1, cnt.shape[0]):
        if cnt[c] > 0:
            if cnt[c] >= available[c]:
                return np.nan
            lp += cnt[c] * per[c] - S[c, cnt[c]]
    return lp


#: A proposal whose quick score falls short of acceptance by more than this is rejected without box
#: subtraction (the quick and the full scores agree far closer: they differ by rounding only).
QUICK_MARGIN = 1e-4


@njit(cache=True)
def mh_steps_incremental(d, m, lp, n_steps, ant_bits, ant_boxes, sizes, available, full, n, lam, eta, alpha, exact,
                         likelihood, cap, best, trace, lengths, rec_from, rec_lists):
    """:func:`mh_steps` with incremental evaluation (spec C14): the same chain, step for step.

    A proposal is first scored from the stored leaves (:func:`_quick_terms`, :func:`_quick_prior`); the
    uniform of the acceptance test is drawn as in :func:`mh_steps`, and a proposal whose quick score
    falls short of it by more than ``QUICK_MARGIN`` is rejected there.  Any other is scored as before:
    box subtraction from the first position it changes (add: where the rule goes; cut: where it was; move:
    the earlier of the two positions) on the stored state, so the unchanged prefix costs nothing, the cap
    ``MAX_FREE_BOXES`` applies, and the acceptance test uses that score.  Same arguments and result as
    :func:`mh_steps` (up to rounding of the sums)."""
    return mh_chain(d, m, lp, n_steps, ant_bits, ant_boxes, sizes, available, full, n, lam, eta, alpha, exact,
                    likelihood, cap, best, trace, lengths, rec_from, rec_lists, np.zeros((0, 2)))


@njit(cache=True)
def mh_chain(d, m, lp, n_steps, ant_bits, ant_boxes, sizes, available, full, n, lam, eta, alpha, exact, likelihood,
             cap, best, trace, lengths, rec_from, rec_lists, checks):
    """:func:`mh_steps_incremental`; when ``checks`` has ``n_steps`` rows, every proposal is also scored
    by box subtraction and ``checks[t]`` = (quick score, full score) (NaN where there is no quick score;
    the full one is -inf beyond the cap), a test of the quick score."""
    M = sizes.shape[0]
    W = ant_bits.shape[1]
    H = available.shape[0] - 1
    on = np.zeros(M, dtype=np.bool_)
    cnt = np.zeros(H + 1, dtype=np.int64)
    for i in range(m):
        on[d[i]] = True
        cnt[sizes[d[i]]] += 1
    new = np.empty(cap, dtype=np.int64)
    top = min(M, cap)
    ant_feats, ant_nfeat = _restricted_features(ant_boxes, full)
    word, shift, seg, W2 = _segments(full)
    packed = np.empty((M, W2), dtype=np.uint64)
    for a in range(M):
        _pack(ant_boxes[a], word, shift, packed[a])
    rw, rm, sm = _rule_masks(packed, ant_feats, ant_nfeat, word, seg)
    per, S, lognorm = _prior_tables(sizes, available, lam, eta, cap)
    L = cap + 2
    F = np.empty((64, W2), dtype=np.uint64)
    G = np.empty((64, W2), dtype=np.uint64)
    Fv = np.empty(64)
    Gv = np.empty(64)
    off = np.zeros(L, dtype=np.int64)
    nf = np.zeros(L, dtype=np.int64)
    cov = np.zeros((L, W), dtype=np.uint64)
    pre = np.zeros(L)
    tot = np.zeros(L, dtype=np.int64)
    goff = np.zeros(L, dtype=np.int64)
    gnf = np.zeros(L, dtype=np.int64)
    gcov = np.zeros((L, W), dtype=np.uint64)
    gpre = np.zeros(L)
    gtot = np.zeros(L, dtype=np.int64)
    P = np.empty((64, W2), dtype=np.uint64)
    pv = np.empty(64)
    GP = np.empty((64, W2), dtype=np.uint64)
    gpv = np.empty(64)
    poff = np.zeros(L, dtype=np.int64)
    pn = np.zeros(L, dtype=np.int64)
    V = np.zeros(L)
    C = np.zeros(L, dtype=np.int64)
    T = np.zeros(L)
    gpoff = np.zeros(L, dtype=np.int64)
    gpn = np.zeros(L, dtype=np.int64)
    gvol = np.zeros(L)
    gcnt = np.zeros(L, dtype=np.int64)
    gterm = np.zeros(L)
    nv = np.zeros(L)  # the quick score's scratch
    nc = np.zeros(L, dtype=np.int64)
    same = np.zeros(L, dtype=np.bool_)
    src = np.zeros(L, dtype=np.int64)
    gain = np.zeros(L)
    rows = np.zeros(W, dtype=np.uint64)
    nz = np.zeros(W, dtype=np.int64)
    Q = np.empty((64, W2), dtype=np.uint64)
    qv = np.empty(64)
    R = np.empty((64, W2), dtype=np.uint64)
    rv = np.empty(64)
    _pack(full, word, shift, F[0])
    Fv[0] = _packed_volume(F[0], word, seg)
    nf[0] = 1
    stale = True  # no state stored yet: evaluate proposals from position 0
    log_u = 0.0
    if likelihood:
        # np.int64(0), not 0: a constant argument would compile a second, Literal[int](0) copy of each kernel
        first = np.int64(0)
        G, Gv, GP, gpv, s, ok = _evaluate_from(first, d, m, ant_bits, rw, rm, sm, ant_nfeat, F, Fv, off, nf, cov, pre,
                                               tot, G, Gv, goff, gnf, gcov, gpre, gtot, GP, gpv, gpoff, gpn, gvol, gcnt,
                                               gterm, n, alpha)
        if ok:
            F, Fv, P, pv = _commit(first, m, F, Fv, off, nf, cov, pre, tot, G, Gv, goff, gnf, gcov, gpre, gtot, P, pv,
                                   poff, pn, V, C, T, GP, gpv, gpoff, gpn, gvol, gcnt, gterm)
            stale = False
            lp = _log_prior(d, m, sizes, available, lam, eta) + s - math.lgamma(n + (m + 1) * alpha)
            if exact:
                lp += math.lgamma((m + 1) * alpha) - (m + 1) * math.lgamma(alpha)
        else:
            lp = -np.inf
    check = checks.shape[0] > 0
    for t in range(n_steps):
        m_new, log_j, s0, kind, i, k = _propose(d, m, new, on, top, M)
        lp_quick = np.nan
        if stale:
            s0 = 0
        if likelihood and not stale:  # the quick score first
            if kind == 1:
                cnt[sizes[k]] += 1
            elif kind == 2:
                cnt[sizes[d[i]]] -= 1
            q_prior = _quick_prior(cnt, m_new, per, S, lognorm, available, lam)
            if kind == 1:
                cnt[sizes[k]] -= 1
            elif kind == 2:
                cnt[sizes[d[i]]] += 1
            if np.isnan(q_prior):
                q_prior = _log_prior(new, m_new, sizes, available, lam, eta)
            q_terms, Q, qv, R, rv = _quick_terms(kind, i, k, d, m, m_new, ant_bits, rw, rm, sm, ant_nfeat, P, pv, poff,
                                                 pn, V, C, T, cov, n, alpha, nv, nc, same, src, gain, rows, nz, Q, qv,
                                                 R, rv)
            lp_quick = q_prior + q_terms - math.lgamma(n + (m_new + 1) * alpha)
            if exact:
                lp_quick += math.lgamma((m_new + 1) * alpha) - (m_new + 1) * math.lgamma(alpha)
            log_u = math.log(np.random.random() + 1e-300)
            if not check and log_u >= lp_quick - lp + log_j + QUICK_MARGIN:  # (a NaN score rejects nothing)
                _record(t, rec_from, d, m, lp, trace, lengths, rec_lists)
                continue
        lp_new = _log_prior(new, m_new, sizes, available, lam, eta)
        ok = True
        if likelihood:
            G, Gv, GP, gpv, s_terms, ok = _evaluate_from(s0, new, m_new, ant_bits, rw, rm, sm, ant_nfeat, F, Fv, off,
                                                         nf, cov, pre, tot, G, Gv, goff, gnf, gcov, gpre, gtot, GP,
                                                         gpv, gpoff, gpn, gvol, gcnt, gterm, n, alpha)
            if ok:
                lp_new += s_terms - math.lgamma(n + (m_new + 1) * alpha)
                if exact:
                    lp_new += math.lgamma((m_new + 1) * alpha) - (m_new + 1) * math.lgamma(alpha)
            else:
                lp_new = -np.inf
        if not likelihood or stale:
            log_u = math.log(np.random.random() + 1e-300)
        if check:
            checks[t, 0] = lp_quick
            checks[t, 1] = lp_new
        if log_u < lp_new - lp + log_j:
            for s in range(m):
                on[d[s]] = False
                cnt[sizes[d[s]]] -= 1
            for s in range(m_new):
                d[s] = new[s]
                on[d[s]] = True
                cnt[sizes[d[s]]] += 1
            if likelihood and ok:
                F, Fv, P, pv = _commit(s0, m_new, F, Fv, off, nf, cov, pre, tot, G, Gv, goff, gnf, gcov, gpre, gtot, P,
                                       pv, poff, pn, V, C, T, GP, gpv, gpoff, gpn, gvol, gcnt, gterm)
                stale = False
            m, lp = m_new, lp_new
            _keep_best(best, d, m, lp)
        _record(t, rec_from, d, m, lp, trace, lengths, rec_lists)
    return m, lp
