"""Would a top-down best-first search certify Method I on Balance and Car while touching few boxes?

Method I's exact solver (arboretum.density.exact) fills a table over every box of the domain.  A top-down
search memoised over boxes only pays off when an admissible per-box bound prunes most splits.  This script
measures that with an *oracle*: for a multiplier ``mu`` of the Lagrangian bound (the programme the solver
runs, :func:`arboretum.density.exact.leaf_sparse_lagrangian`), it takes every box's exact value from the
table and counts the boxes a search from the root would still have to open when it prunes a split
``(a, b)`` of a box as soon as ``UB(a) + UB(b)`` falls below the box's exact value (the best pruning any
search order could achieve with that bound).  ``UB`` is the per-box form of the library's admissible bound
(:func:`arboretum.density.exact.leaf_sparse_upper_bound`: ``sum_x n_x log n_x + max_j j (g(n/j) + mu)``,
``g(m) = lgamma(m + alpha) - lgamma(alpha) - m log m``; ``mu`` per leaf, volume >= the distinct
configurations of a leaf).

Usage: python benchmarks/density_bestfirst_reach.py
Writes benchmarks/results/density_bestfirst_reach.md.
"""

from __future__ import annotations

import math
import os
import platform
import sys
import time
import warnings

import numpy as np
from numba import njit

sys.path.insert(0, os.path.dirname(__file__))
from density_datasets import load  # noqa: E402

from arboretum import LeafSparseDensityTree  # noqa: E402
from arboretum.density import _kernels as K  # noqa: E402
from arboretum.density.exact import _box_sums, leaf_terms  # noqa: E402
from arboretum.density.posterior import leaf_sparse_constant  # noqa: E402
from arboretum.density.space import distinct_configurations  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "results")


@njit(cache=True)
def _ub(r, mu, alpha, la, counts, H, D, logv):
    nr = counts[r]
    if nr == 0:
        return mu if mu <= 0 else mu * math.exp(logv[r])
    best = -np.inf
    j = 1
    while j <= D[r]:  # j g(n/j) + j mu is concave in j: stop at its first decrease
        x = nr / j
        v = j * (math.lgamma(x + alpha) - la - x * math.log(x) + mu)
        if v < best:
            break
        best = v
        j += 1
    return best + H[r]


@njit(cache=True)
def _opened(root, mu, alpha, la, counts, H, D, logv, val, strides, q):
    seen = np.zeros(counts.shape[0], dtype=np.bool_)
    stack = [root]
    seen[root] = True
    opened = 0
    while len(stack):
        r = stack.pop()
        opened += 1
        for j in range(q.shape[0]):
            m = (r // strides[j]) % (1 << q[j])
            if m & (m - 1) == 0:
                continue
            low = m & (-m)
            rest = m ^ low
            sub = rest
            while True:
                a = low | sub
                if a != m:
                    ra = r + (a - m) * strides[j]
                    rb = r - a * strides[j]
                    bound = _ub(ra, mu, alpha, la, counts, H, D, logv) + _ub(rb, mu, alpha, la, counts, H, D, logv)
                    if bound >= val[r]:
                        for x in (ra, rb):
                            if not seen[x]:
                                seen[x] = True
                                stack.append(x)
                if sub == 0:
                    break
                sub = (sub - 1) & rest
    return opened


def main() -> None:
    lines = ["`python benchmarks/density_bestfirst_reach.py`  ",
             f"{platform.node()}, {time.strftime('%Y-%m-%d')}\n",
             "Boxes a top-down search would open with oracle pruning (module docstring), Method I, alpha 2, "
             "the paper's lam; valid boxes: no empty mask.\n",
             "| dataset | lam | k0 | mu | root leaves at mu | root bound - root value | opened | valid boxes | share |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, lam in (("Balance", 5.0), ("Car", 8.0)):
        tr, _, cats = load(name)
        est = LeafSparseDensityTree(lam=lam, categories=cats)
        est._validate_params()
        codes = est._fit_codes_density(tr)
        q = est._q
        configs, w, _ = distinct_configurations(codes, q)
        w = w.astype(float)
        alpha, n = 2.0, float(w.sum())
        term, strides = leaf_terms(configs, q, alpha, w)
        counts = _box_sums(configs, q, w)
        H = _box_sums(configs, q, w * np.log(w))
        D = _box_sums(configs, q, np.ones_like(w))
        logv = np.zeros(1)
        for qj in q:
            with np.errstate(divide="ignore"):
                logv = (logv[:, None] + np.log([bin(m).count("1") for m in range(1 << int(qj))])[None, :]).ravel()
        valid = int(np.prod([(1 << int(x)) - 1 for x in q]))
        val, nleaf = np.empty(term.shape[0]), np.empty(term.shape[0], dtype=np.int32)
        root = int(sum(((1 << int(qj)) - 1) * int(s) for qj, s in zip(q, strides)))
        c = [leaf_sparse_constant(k, n, lam, alpha) for k in range(1, 40)]
        for k0 in (1, 2, 5, 10):
            mu = c[k0] - c[k0 - 1]
            K.leaf_sparse_lagrange_grid(term, strides, q, mu, val, nleaf)
            opened = _opened(root, mu, alpha, math.lgamma(alpha), counts, H, D, logv, val, strides, q)
            gap = _ub(root, mu, alpha, math.lgamma(alpha), counts, H, D, logv) - val[root]
            lines.append(f"| {name} | {lam:g} | {k0} | {mu:.2f} | {int(nleaf[root])} | {gap:.1f} | {opened} | "
                         f"{valid} | {opened / valid:.0%} |")
            print(lines[-1], flush=True)
    lines.append("\nThe bound is loose by about n log(V/D) at the root (the data fill about 85% of these "
                 "full-factorial domains, and the bound lets every leaf shrink to its observed configurations), "
                 "so even with exact values a search would open most boxes: the table (every box once, in "
                 "flat-index order) stays.")
    with open(os.path.join(OUT, "density_bestfirst_reach.md"), "w") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        main()
