"""The three log posteriors of spec-004 (§3.4, §4.3, §5.4) and the volumes of categorical boxes.

Everything is in log space with real-valued Dirichlet pseudocounts
(``math.lgamma``).  A *box* is a tuple of per-feature category masks (Python
ints, bit ``c`` set when category ``c`` is allowed); its volume is the product
of the masks' popcounts (spec eq. 1).

Rule-list leaves are not boxes: leaf ``i`` is ``a_i`` minus the earlier
antecedents.  :func:`list_boxes` splits every leaf into disjoint boxes by box
subtraction (spec §6.3, exact, Python ints), and
:func:`inclusion_exclusion_volume` is the paper's eq. (5) with corrected
indices, kept as a test oracle.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

__all__ = [
    "box_volume",
    "box_log_volume",
    "leaf_term",
    "log_posterior_leaf_sparse",
    "internal_term",
    "log_posterior_branch_sparse",
    "log_poisson",
    "antecedent_counts",
    "log_prior_rule_list",
    "log_posterior_rule_list",
    "list_boxes",
    "list_volumes",
    "inclusion_exclusion_volume",
]

Box = tuple  # tuple[int, ...]: one category mask per feature


def box_volume(box: Sequence[int]) -> int:
    """Number of configurations in a box (exact)."""
    v = 1
    for m in box:
        v *= int(m).bit_count()
    return v


def box_log_volume(box: Sequence[int]) -> float:
    """``log`` of :func:`box_volume` (``-inf`` for an empty box)."""
    s = 0.0
    for m in box:
        c = int(m).bit_count()
        if c == 0:
            return -math.inf
        s += math.log(c)
    return s


def _n_log_v(n: float, log_v: float) -> float:
    return 0.0 if n == 0 else n * log_v  # 0 * log 0 := 0 (an empty zero-volume leaf)


def log_poisson(k: int, lam: float) -> float:
    """``log Poisson(k; lam)``."""
    return -lam + k * math.log(lam) - math.lgamma(k + 1.0)


# -- Method I ------------------------------------------------------------------------------------
def leaf_term(n: float, log_v: float, alpha: float) -> float:
    """Method I's per-leaf term ``lgamma(n + alpha) - lgamma(alpha) - n log V``."""
    return math.lgamma(n + alpha) - math.lgamma(alpha) - _n_log_v(n, log_v)


def leaf_sparse_constant(k: int, n: float, lam: float, alpha: float) -> float:
    """The part of LP_I that depends on the number of leaves only."""
    return log_poisson(k, lam) + math.lgamma(k * alpha) - math.lgamma(n + k * alpha)


def log_posterior_leaf_sparse(counts: Sequence[float], log_volumes: Sequence[float], lam: float,
                              alpha: float) -> float:
    """LP_I (spec §3.4): the leaf-sparse tree's unnormalised log posterior from its leaves' counts and
    log volumes (empty leaves included)."""
    counts = [float(c) for c in counts]
    k, n = len(counts), sum(counts)
    return leaf_sparse_constant(k, n, lam, alpha) + sum(
        leaf_term(c, v, alpha) for c, v in zip(counts, log_volumes)
    )


# -- Method II -----------------------------------------------------------------------------------
def internal_term(child_counts: Sequence[float], alpha: float) -> float:
    """Method II's internal-node term (spec §4.3) without the per-node ``-lam + log lam``."""
    b = len(child_counts)
    n = float(sum(child_counts))
    return (-math.lgamma(b + 1.0) + math.lgamma(b * alpha) - b * math.lgamma(alpha)
            + sum(math.lgamma(c + alpha) for c in child_counts) - math.lgamma(n + b * alpha))


def log_posterior_branch_sparse(internal_child_counts: Sequence[Sequence[float]], leaf_counts: Sequence[float],
                                leaf_log_volumes: Sequence[float], lam: float, alpha: float) -> float:
    """LP_II (spec §4.3) from the child counts of every internal node and the leaves' counts and log volumes."""
    n_nodes = len(internal_child_counts) + len(leaf_counts)
    lp = -lam * n_nodes + (n_nodes - 1) * math.log(lam)
    lp += sum(internal_term(cc, alpha) for cc in internal_child_counts)
    lp -= sum(_n_log_v(float(c), v) for c, v in zip(leaf_counts, leaf_log_volumes))
    return lp


# -- Method III ----------------------------------------------------------------------------------
def antecedent_counts(q: Sequence[int], max_rule_size: int) -> list[int]:
    """``A_c`` for ``c = 0..H``: the elementary symmetric polynomials of ``q`` (``A_0 = 1``); the
    number of antecedents of each size (spec §2.5)."""
    e = [1] + [0] * max_rule_size
    for qj in q:
        for c in range(max_rule_size, 0, -1):
            e[c] += e[c - 1] * int(qj)
    return e


def log_prior_rule_list(sizes: Sequence[int], available: Sequence[int], lam: float, eta: float) -> float:
    """The list prior of spec §5.2 (length, sizes, antecedent choices), without the constant normaliser
    of the truncated Poisson length."""
    m = len(sizes)
    H = len(available) - 1
    lp = m * math.log(lam) - math.lgamma(m + 1.0)
    used = [0] * (H + 1)
    for c in sizes:
        norm = sum(eta ** k / math.factorial(k) for k in range(1, H + 1) if available[k] - used[k] > 0)
        lp += c * math.log(eta) - math.lgamma(c + 1.0) - math.log(norm)
        lp -= math.log(available[c] - used[c])
        used[c] += 1
    return lp


def log_posterior_rule_list(sizes: Sequence[int], available: Sequence[int], leaf_counts: Sequence[float],
                            leaf_log_volumes: Sequence[float], lam: float, eta: float, alpha: float,
                            exact_dirichlet_normalizer: bool = False) -> float:
    """LP_III (spec §5.4), without the constant truncated-Poisson normaliser of the length.

    Parameters
    ----------
    sizes : sequence of int
        ``c_j``, the size of every rule in order.
    available : sequence of int
        ``A_c`` for ``c = 0..H`` (the antecedents of each size that the prior chooses among; with
        ``min_support`` the mined ones).
    leaf_counts, leaf_log_volumes : sequences of length m + 1
        Rules' leaves in order, then the default leaf.
    """
    m = len(sizes)
    lp = log_prior_rule_list(sizes, available, lam, eta)
    n = float(sum(leaf_counts))
    for c, v in zip(leaf_counts, leaf_log_volumes):
        lp += math.lgamma(float(c) + alpha) - _n_log_v(float(c), v)
    lp -= math.lgamma(n + (m + 1) * alpha)
    if exact_dirichlet_normalizer:
        lp += math.lgamma((m + 1) * alpha) - (m + 1) * math.lgamma(alpha)
    return lp


# -- list volumes --------------------------------------------------------------------------------
def _subtract(box: Box, rule: Box) -> list[Box]:
    """``box`` minus ``rule`` as disjoint boxes (spec §6.3)."""
    if any(b & r == 0 for b, r in zip(box, rule)):
        return [box]
    out = []
    cur = list(box)
    for j, (b, r) in enumerate(zip(box, rule)):
        if b & r == b:  # the rule does not cut this coordinate
            continue
        piece = list(cur)
        piece[j] = b & ~r
        out.append(tuple(piece))
        cur[j] = b & r
    return out


def list_boxes(rules: Sequence[Box], full: Box) -> list[list[Box]]:
    """Disjoint boxes of every leaf of a rule list: ``m`` rule leaves, then the default leaf."""
    free = [tuple(full)]
    leaves = []
    for rule in rules:
        mine = []
        rest = []
        for b in free:
            inter = tuple(x & y for x, y in zip(b, rule))
            if all(inter):
                mine.append(inter)
            rest.extend(_subtract(b, rule))
        leaves.append(mine)
        free = rest
    leaves.append(free)
    return leaves


def list_volumes(rules: Sequence[Box], full: Box) -> list[int]:
    """Exact volumes of the ``m + 1`` leaves of a rule list (box subtraction)."""
    return [sum(box_volume(b) for b in boxes) for boxes in list_boxes(rules, full)]


def inclusion_exclusion_volume(rules: Sequence[Box], i: int, full: Box) -> int:
    """Volume of leaf ``i`` (0-based rule index; ``i = len(rules)`` for the default leaf) by the
    paper's eq. (5) with the corrected index range (test oracle; exponential in ``i``)."""
    target = tuple(full) if i == len(rules) else tuple(rules[i])
    total = 0
    for k in range(i + 1):
        for subset in itertools.combinations(range(i), k):
            box = list(target)
            for s in subset:
                box = [a & b for a, b in zip(box, rules[s])]
            total += (-1) ** k * box_volume(box)
    return total


def log_volumes(volumes: Sequence[int]) -> np.ndarray:
    """``log V`` of exact (Python int) volumes, ``-inf`` for 0, without overflow."""
    return np.array([math.log(v) if v > 0 else -math.inf for v in volumes], dtype=np.float64)
