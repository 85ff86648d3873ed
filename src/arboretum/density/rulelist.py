"""Sparse density rule lists (Method III): antecedent mining, Metropolis-Hastings, Gelman-Rubin (spec §5, §6.2).

- :func:`mine_antecedents`: every conjunction of at most ``max_rule_size``
  equality literals on distinct features whose training support is at least
  ``min_support`` (0, the paper's choice, keeps them all), as boxes and
  bitsets over the training rows;
- :class:`ListModel`: LP_III of a list (a tuple of antecedent indices), with
  the leaf volumes by box subtraction cached per list prefix;
- :func:`metropolis_hastings`: the BRL-style sampler of the reference code
  (add / cut / move with their Hastings ratios), several seeded chains,
  the MAP list visited (or the BRL point estimate) and the Gelman-Rubin
  statistic of the chains' log posteriors.
"""

from __future__ import annotations

import itertools
import math
import time
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from . import _kernels as K
from .posterior import _subtract, box_volume, log_posterior_rule_list, log_prior_rule_list

__all__ = ["Antecedents", "mine_antecedents", "ListModel", "metropolis_hastings", "gelman_rubin", "MHResult"]


@dataclass
class Antecedents:
    """Mined antecedents: ``literals[i]`` = ((feature, code), ...), ``boxes[i]`` its box, ``bits`` (M, words),
    ``sizes`` (M,), and ``available[c]`` = the number of size ``c`` (``available[0] = 1``)."""

    literals: list
    boxes: list
    bits: np.ndarray
    sizes: np.ndarray
    available: list


def mine_antecedents(codes: np.ndarray, q: np.ndarray, max_rule_size: int, min_support: float = 0.0,
                     deadline: float | None = None) -> Antecedents:
    """Every antecedent of at most ``max_rule_size`` literals with support >= ``min_support`` (a fraction
    of the rows when < 1, else a count)."""
    from .._numba import pack_columns

    n, p = codes.shape
    offsets = np.concatenate([[0], np.cumsum(q)[:-1]]).astype(np.int64)
    onehot = np.zeros((n, int(np.sum(q))), dtype=bool)
    for j in range(p):
        onehot[np.arange(n), offsets[j] + codes[:, j]] = True
    single = pack_columns(onehot)
    need = min_support * n if min_support < 1 else min_support
    full = tuple((1 << int(x)) - 1 for x in q)
    literals, boxes, rows, sizes = [], [], [], []
    available = [1] + [0] * max_rule_size
    for c in range(1, max_rule_size + 1):
        for feats in itertools.combinations(range(p), c):
            if deadline is not None and time.perf_counter() >= deadline:
                raise TimeoutError
            for vals in itertools.product(*(range(int(q[j])) for j in feats)):
                bits = single[offsets[feats[0]] + vals[0]].copy()
                for j, v in zip(feats[1:], vals[1:]):
                    bits &= single[offsets[j] + v]
                if need > 0 and int(np.bitwise_count(bits).sum()) < need:
                    continue
                lit = tuple(zip(feats, vals))
                box = list(full)
                for j, v in lit:
                    box[j] = 1 << v
                literals.append(lit)
                boxes.append(tuple(box))
                rows.append(bits)
                sizes.append(c)
                available[c] += 1
    bits = np.array(rows, dtype=np.uint64).reshape(len(rows), single.shape[1])
    return Antecedents(literals, boxes, bits, np.array(sizes, dtype=np.int64), available)


class ListModel:
    """LP_III of rule lists over mined antecedents (spec §5.4), cached."""

    def __init__(self, ants: Antecedents, q: np.ndarray, n: int, lam: float, eta: float, alpha: float,
                 exact_dirichlet_normalizer: bool = False, likelihood: bool = True, cache_size: int = 200_000):
        self.ants, self.n, self.lam, self.eta, self.alpha = ants, n, lam, eta, alpha
        self.exact = exact_dirichlet_normalizer
        self.likelihood = likelihood
        self.full = tuple((1 << int(x)) - 1 for x in q)
        self._lp: OrderedDict = OrderedDict()
        self._vol: dict = {(): [self.full]}
        self._cache_size = cache_size

    def volumes(self, rules: tuple) -> list[int]:
        """Exact leaf volumes (rules then default), by box subtraction over cached prefixes."""
        vols = []
        free = [self.full]
        for i in range(len(rules)):
            key = rules[: i + 1]
            if key in self._vol:
                free, v = self._vol[key]
            else:
                box_rule = self.ants.boxes[rules[i]]
                mine, rest = 0, []
                for b in free:
                    inter = tuple(x & y for x, y in zip(b, box_rule))
                    if all(inter):
                        mine += box_volume(inter)
                    rest.extend(_subtract(b, box_rule))
                free, v = rest, mine
                if len(self._vol) < self._cache_size:
                    self._vol[key] = (free, v)
            vols.append(v)
        vols.append(sum(box_volume(b) for b in free))
        return vols

    def counts(self, rules: tuple) -> np.ndarray:
        out = np.zeros(len(rules) + 1, dtype=np.int64)
        order = np.asarray(rules, dtype=np.int64)
        covered = K.list_counts(self.ants.bits, order, self.ants.bits.shape[1], out)
        out[len(rules)] = self.n - covered
        return out

    def log_posterior(self, rules: tuple) -> float:
        hit = self._lp.get(rules)
        if hit is not None:
            return hit
        sizes = [int(self.ants.sizes[a]) for a in rules]
        if self.likelihood:
            counts = self.counts(rules)
            logv = [math.log(v) if v > 0 else -math.inf for v in self.volumes(rules)]
            lp = log_posterior_rule_list(sizes, self.ants.available, counts, logv, self.lam, self.eta,
                                         self.alpha, self.exact)
        else:  # the prior alone (spec C16)
            lp = log_prior_rule_list(sizes, self.ants.available, self.lam, self.eta)
        self._lp[rules] = lp
        if len(self._lp) > self._cache_size:
            self._lp.popitem(last=False)
        return lp


def gelman_rubin(traces: list) -> float:
    """R-hat of equal-length traces (one per chain).  Never divides by zero: chains that are all constant
    and equal give 1.0, constant but different chains give inf, fewer than 2 chains or 2 samples nan."""
    arr = np.asarray([np.asarray(t, dtype=np.float64) for t in traces])
    if arr.ndim != 2 or arr.shape[0] < 2 or arr.shape[1] < 2:
        return math.nan
    n = arr.shape[1]
    means = arr.mean(axis=1)
    W = float(arr.var(axis=1, ddof=1).mean())
    B = float(n * means.var(ddof=1))
    if W <= 0.0:
        return 1.0 if B <= 0.0 else math.inf
    V = (n - 1) / n * W + B / n
    return math.sqrt(V / W)


@dataclass
class MHResult:
    rules: tuple
    log_posterior: float
    r_hat: float
    traces: list
    lengths: list  # the length m of every recorded list of every chain (for the prior check)
    n_iterations: int
    stopped: bool


#: The longest list the sampler holds (an add is not proposed at this length, as at m = M).
MAX_LIST_LENGTH = 256


def _kernel_args(model: ListModel) -> tuple[int, tuple]:
    """The longest list the sampler holds and the model's arguments of the list kernels
    (:func:`~._list_kernels.list_log_posterior`, :func:`~._list_kernels.mh_steps_incremental`)."""
    ants = model.ants
    M = len(ants.sizes)
    full = np.array(model.full, dtype=np.uint64)
    boxes = np.array(ants.boxes, dtype=np.uint64).reshape(M, len(full))
    sizes = np.asarray(ants.sizes, dtype=np.int64)
    available = np.asarray(ants.available, dtype=np.int64)
    args = (ants.bits, boxes, sizes, available, full, int(model.n), float(model.lam), float(model.eta),
            float(model.alpha), bool(model.exact), bool(model.likelihood))
    return min(M, MAX_LIST_LENGTH), args


def _start_chain(model: ListModel, cap: int, args: tuple) -> tuple[np.ndarray, int, float]:
    """A chain's first list, drawn from the prior (numba's generator, seeded by the caller): its
    rules ``d[:m]`` and its log posterior."""
    from . import _list_kernels as LK

    d = np.zeros(max(cap, 1), dtype=np.int64)
    sizes, available = args[2], args[3]
    m = int(LK.prior_list(sizes, available, float(model.lam), float(model.eta), cap, d)) if len(sizes) else 0
    return d, m, float(LK.list_log_posterior(d, m, *args))


def compile_sampler_kernel(model: ListModel) -> None:
    """Compile (or load) the sampler's kernel :func:`~._list_kernels.mh_steps_incremental` for the
    argument types :func:`metropolis_hastings` passes, running nothing (the density warm-up of
    :mod:`arboretum._compile` compiles it first; see ``density/_warm.py``)."""
    from numba import typeof

    from . import _list_kernels as LK

    cap, args = _kernel_args(model)
    d = np.zeros(max(cap, 1), dtype=np.int64)
    best = np.zeros(2 + max(cap, 1))
    trace, lens = np.empty(1), np.empty(1, dtype=np.int64)
    recs = np.zeros((0, cap + 1), dtype=np.int64)
    # the call in metropolis_hastings: (d, m, lp, steps, *args, cap, best, trace[off:], lens[off:], rec_from, recs[off:])
    call = (d, 0, 0.0, 1, *args, cap, best, trace[0:], lens[0:], 0, recs[0:])
    LK.mh_steps_incremental.compile(tuple(typeof(a) for a in call))


def metropolis_hastings(model: ListModel, *, n_iter: int = 50_000, burn_in: int | None = None, thinning: int = 1,
                        n_chains: int = 3, point_estimate: str = "map", random_state: int | None = 0,
                        deadline: float | None = None, record_lengths: bool = False,
                        chunk: int = 4096) -> MHResult:
    """Run ``n_chains`` MH chains over lists (numba, :mod:`._list_kernels`); return the point estimate,
    its LP_III and R-hat.

    Each chain starts from a list drawn from the prior and makes ``n_iter`` add / cut / move proposals
    (spec §6.2); the LP of the steps after ``burn_in`` (every ``thinning``-th) makes its trace.  The
    chains run in chunks of ``chunk`` steps between which ``deadline`` (a ``time.perf_counter()`` value)
    is checked.  ``point_estimate="map"``: the list of highest LP_III visited by any chain (burn-in
    included); ``"brl_point"``: BRL's estimate among the recorded lists.
    """
    from . import _list_kernels as LK

    rng = np.random.default_rng(random_state)
    ants = model.ants
    M = len(ants.sizes)
    burn = n_iter // 2 if burn_in is None else burn_in
    cap, args = _kernel_args(model)
    best = np.zeros(2 + max(cap, 1))
    best[1] = -np.inf
    traces, lengths, samples = [], [], []
    total = 0
    stopped = False
    n_rec = max(n_iter - burn, 0)
    for _ in range(n_chains):
        LK.seed(int(rng.integers(2**31 - 1)))
        d, m, lp = _start_chain(model, cap, args)
        if lp > best[1]:
            best[0], best[1], best[2:2 + m] = m, lp, d[:m]
        trace = np.empty(n_rec)
        lens = np.empty(n_rec, dtype=np.int64)
        recs = np.zeros((n_rec if point_estimate == "brl_point" else 0, cap + 1), dtype=np.int64)
        done = 0
        size = min(chunk, 64)  # grown or shrunk so that a chunk takes about 0.1 s (the deadline is seen)
        while done < n_iter:
            if deadline is not None and time.perf_counter() >= deadline:
                stopped = True
                break
            steps = min(size, n_iter - done)
            t_chunk = time.perf_counter()
            if M:
                rec_from = max(0, burn - done)
                off = done + rec_from - burn
                m, lp = LK.mh_steps_incremental(d, m, lp, steps, *args, cap, best, trace[off:], lens[off:],
                                                rec_from, recs[off:])
            else:
                lo = max(done, burn)
                trace[lo - burn:done + steps - burn] = lp
                lens[lo - burn:done + steps - burn] = 0
            done += steps
            total += steps
            spent = time.perf_counter() - t_chunk
            size = int(min(chunk, max(1, steps * 0.1 / spent) if spent > 0 else chunk))
        kept = max(done - burn, 0)
        traces.append(trace[:kept][thinning - 1::thinning].tolist())
        if record_lengths:
            lengths.extend(lens[:kept][thinning - 1::thinning].tolist())
        if point_estimate == "brl_point":
            samples.extend((tuple(int(a) for a in row[1:1 + row[0]]), float(v))
                           for row, v in zip(recs[:kept][thinning - 1::thinning], trace[:kept][thinning - 1::thinning]))
        if stopped:
            break
    rules = tuple(int(a) for a in best[2:2 + int(best[0])])
    best_lp = float(best[1])
    if point_estimate == "brl_point" and samples:
        mean_len = float(np.mean([len(s) + 1 for s, _ in samples]))
        widths = [float(np.mean([ants.sizes[a] for a in s])) for s, _ in samples if s]
        mean_w = float(np.mean(widths)) if widths else 0.0
        keep = [(s, v) for s, v in samples
                if math.floor(mean_len) <= len(s) + 1 <= math.ceil(mean_len)
                and (not s or math.floor(mean_w) <= np.mean([ants.sizes[a] for a in s]) <= math.ceil(mean_w))]
        if keep:
            rules, best_lp = max(keep, key=lambda t: t[1])
    n_min = min((len(t) for t in traces), default=0)
    r_hat = gelman_rubin([t[:n_min] for t in traces]) if len(traces) >= 2 else math.nan
    return MHResult(rules, best_lp, r_hat, traces, lengths, total, stopped)
