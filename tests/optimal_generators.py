"""Small, independent transcriptions of spec-002's generators and contrasts, for tests (not shipped).

* :func:`splits`, :func:`gen_trees`, :func:`count_trees`, :func:`sodt_calls` -- spec §3.4, §3.8
  over any ancestry matrix ``km`` (a dict or nested list indexed ``km[i][j]``);
* :func:`valid_perm` -- the validity predicate ``p`` of §2.4 (BST insertion, then left-first level
  order);
* :func:`sodt_memo` -- ``sodt`` with a per-combination memo keyed by ``(S, idx)`` (T9, §3.13 item 6);
* :func:`budget_best` -- the size-budget cross-check recursion of §3.13 item 9 (T10);
* :func:`splits_mcmp`, :func:`mcmp_trees` -- the matrix-chain contrast of §3.12 (T23);
* :func:`bsp_size` -- the BSP objective ``E_BSP`` of eq. 22 (T24).
"""

from __future__ import annotations

import itertools
import math
from functools import lru_cache

import numpy as np


def splits(S, km):
    """``[(rs+, r, rs-)]`` for every rule of ``S`` that can be the root (spec §3.4, corrected)."""
    out = []
    for i in S:
        others = [j for j in S if j != i]
        if all(km[i][j] != 0 for j in others):
            out.append((tuple(j for j in others if km[i][j] == 1), i, tuple(j for j in others if km[i][j] == -1)))
    return out


def gen_trees(S, km):
    """Every proper tree over exactly the rules ``S`` (``genBTs``): ``None`` is a leaf,
    ``(left, r, right)`` a branch."""
    if not S:
        return [None]
    return [(u, r, v) for (sp, r, sm) in splits(S, km) for u in gen_trees(sp, km) for v in gen_trees(sm, km)]


def count_trees(S, km):
    """``T(S) = sum over roots of T(S+) T(S-)``, ``T(empty) = 1`` (spec §3.4)."""
    if not S:
        return 1
    return sum(count_trees(sp, km) * count_trees(sm, km) for sp, _, sm in splits(S, km))


def level_order(tree):
    out, queue = [], [tree]
    while queue:
        t = queue.pop(0)
        if t is None:
            continue
        out.append(t[1])
        queue.extend([t[0], t[2]])
    return out


def valid_perm(perm, km):
    """The predicate ``p`` of spec §2.4: BST insertion by ``km`` never rejects and the left-first
    level order of the tree built gives ``perm`` back."""
    children = {perm[0]: [None, None]}
    for r in perm[1:]:
        a = perm[0]
        while True:
            e = km[a][r]
            if e == 0:
                return False
            side = 0 if e > 0 else 1
            if children[a][side] is None:
                children[a][side] = r
                children[r] = [None, None]
                break
            a = children[a][side]
    order, queue = [], [perm[0]]
    while queue:
        a = queue.pop(0)
        order.append(a)
        queue.extend(c for c in children[a] if c is not None)
    return order == list(perm)


def sodt_calls(S, km):
    """Invocations of ``sodt`` without memo, empty-leaf calls included (spec §3.8)."""
    if not S:
        return 1
    return 1 + sum(sodt_calls(sp, km) + sodt_calls(sm, km) for sp, _, sm in splits(S, km))


def tree_partition(tree, left_masks, points):
    """The leaves' point sets of ``tree`` (frozensets of indices), left to right."""
    if tree is None:
        return [frozenset(np.flatnonzero(points).tolist())]
    u, r, v = tree
    return (tree_partition(u, left_masks, points & left_masks[r])
            + tree_partition(v, left_masks, points & ~left_masks[r]))


def sodt_memo(S, rules, cost, km, points, memo=None, stats=None):
    """``sodt`` with a memo keyed by ``(S, idx)`` (correct within a combination, spec §4.4)."""
    memo = {} if memo is None else memo
    key = (tuple(sorted(S)), points.tobytes())
    if key in memo:
        if stats is not None:
            stats["hits"] += 1
        return memo[key]
    if not S:
        val = cost(points)
    else:
        val = math.inf
        for sp, r, sm in splits(S, km):
            left = rules.left_mask(r)
            cl = sodt_memo(sp, rules, cost, km, points & left, memo, stats)
            cr = sodt_memo(sm, rules, cost, km, points & ~left, memo, stats)
            val = min(val, cl + cr)
    memo[key] = val
    return val


def budget_best(rules, cost, k, exact=True):
    """The size-budget recursion of spec §3.13 item 9: ``best(idx, k, path)``, the least cost of a
    tree with exactly ``k`` rules on ``idx``, each rule not on its path and defined by points of
    ``idx``."""
    left = [rules.left_mask(r) for r in range(rules.n_rules)]
    defs = [[int(p) for p in rules.defs[r] if p >= 0] for r in range(rules.n_rules)]

    @lru_cache(maxsize=None)
    def best(key, k, path):
        idx = np.frombuffer(key, dtype=bool)
        if k == 0:
            return cost(idx)
        out = math.inf
        for r in range(rules.n_rules):
            if r in path or not idx[defs[r]].all():
                continue
            for k1 in range(k):
                cl = best((idx & left[r]).tobytes(), k1, path | {r})
                if cl == math.inf:
                    continue
                out = min(out, cl + best((idx & ~left[r]).tobytes(), k - 1 - k1, path | {r}))
        return out

    full = np.ones(rules.n_samples, dtype=bool).tobytes()
    if exact:
        return best(full, k, frozenset())
    return min(best(full, j, frozenset()) for j in range(k + 1))


def splits_mcmp(seq):
    """``splits_MCMP`` (spec §3.12, corrected): every cut of ``seq`` into two non-empty
    contiguous parts, ``n - 1`` of them."""
    if len(seq) <= 1:
        return []
    r, rest = seq[0], seq[1:]
    return [((r,), tuple(rest))] + [((r,) + ys, zs) for ys, zs in splits_mcmp(rest)]


def mcmp_trees(seq):
    """Every parenthesisation of ``seq`` built with :func:`splits_mcmp`."""
    if len(seq) == 1:
        return [seq[0]]
    return [(u, v) for ys, zs in splits_mcmp(tuple(seq)) for u in mcmp_trees(ys) for v in mcmp_trees(zs)]


def bsp_size(tree, fragment=None):
    """``E_BSP`` (spec eq. 22): ``E(leaf) = 1``, ``E(node) = E(u) + E(v) + 1`` -- the number of nodes.
    ``fragment(r)``: extra nodes a rule's fragments add (0 without fragmentation)."""
    if tree is None:
        return 1
    u, r, v = tree
    return bsp_size(u, fragment) + bsp_size(v, fragment) + 1 + (fragment(r) if fragment else 0)


def catalan(n):
    return math.comb(2 * n, n) // (n + 1)


def all_perms_valid(S, km):
    return [p for p in itertools.permutations(S) if valid_perm(p, km)]
