"""Numba primitives shared by every kernel family (maptree, pcfg, samplers).

One implementation of each low-level piece the kernels need, so that the three
families do not each carry their own copy:

* **packed bitsets** over samples (:func:`pack_columns`, :func:`popcount64`,
  :func:`ctz64`, ...);
* **hashing** of 64-bit keys and of packed bitsets (:func:`mix64`,
  :func:`hash_words`, :func:`hash_words128`);
* **random numbers**: one generator, xoshiro256** in a ``uint64[4]`` state
  array (:func:`rng_state`, :func:`next_u64`, :func:`uniform`,
  :func:`randint`);
* **Dirichlet-multinomial leaves**: the tabulated log-gamma terms
  (:func:`dirichlet_tables`, built once per data set with NumPy) and the one
  evaluator of a leaf's log marginal likelihood from them
  (:func:`dm_log_lik`);
* **a clock** inside kernels (:func:`monotonic`, :func:`stop_time`), so that a
  long kernel call can honour a fit's ``time_limit`` itself.

Named tuples in kernels
-----------------------
Kernels take their arrays grouped in ``typing.NamedTuple`` s (numba compiles
them to structs; reading a field costs nothing) and read the fields by name.
Read them one per statement (``lb = graph.or_lb``), never several in one
tuple assignment: with numba 0.68, a kernel that unpacks four or more fields
at once (``a, b, c, d = g.a, g.b, g.c, g.d``, which Python compiles to a tuple
build and unpack) and inlines an ``overload`` loses the writes to an unpacked
array that is not read afterwards: dead-code elimination does not see that
the array is an argument's, so the last stores into it look dead.

Packed bitsets
--------------
A subset of the ``n`` training samples is a row of ``ceil(n / 64)`` unsigned
64-bit words: sample ``i`` lives in word ``i // 64`` at bit ``i % 64`` (least
significant bit first).  The bits above ``n`` in the last word are always zero,
whatever ``n % 64`` is, so no sample is ever dropped (the reference MAPTree
loses the last 64 samples when ``n`` is a multiple of 64).

The numba kernels only ever see the packed arrays built here.
"""

from __future__ import annotations

from typing import NamedTuple

import sys
import time

import numpy as np
from numba import njit, types
from numba.extending import intrinsic
from scipy.special import gammaln

__all__ = [
    "n_words", "pack_columns", "pack_rows_mask", "unpack", "popcount64", "ctz64",
    "mix64", "mix64_alt", "hash_words", "hash_words128",
    "rng_state", "next_u64", "uniform", "randint",
    "DirichletTables", "dirichlet_tables", "dm_log_lik",
    "HAS_KERNEL_CLOCK", "monotonic", "stop_time", "seconds_left",
]


def n_words(n_samples: int) -> int:
    """Number of 64-bit words that hold ``n_samples`` bits."""
    return (int(n_samples) + 63) // 64


def pack_columns(B: np.ndarray) -> np.ndarray:
    """Pack the columns of a boolean matrix into per-column bitsets.

    Parameters
    ----------
    B : ndarray of shape (n_samples, n_columns)
        Boolean (or 0/1) matrix.

    Returns
    -------
    words : ndarray of shape (n_columns, n_words(n_samples)), dtype uint64
        ``words[j]`` is the set ``{i : B[i, j]}``.
    """
    B = np.asarray(B)
    if B.dtype == np.bool_:
        U = B.view(np.uint8)
    elif B.dtype == np.uint8 and (B.size == 0 or int(B.max()) <= 1):
        U = B
    else:
        U = (B != 0).view(np.uint8)
    n, m = B.shape
    w = n_words(n)
    out = np.zeros((m, w * 8), dtype=np.uint8)  # byte i // 8 of row j holds bit i % 8 of sample i
    # Eight rows at a time, as whole rows of bytes: eight shifts over n / 8 x m bytes (np.packbits of
    # the transposed columns was 5x slower on 500,000 x 160).
    q = n // 8
    if q:
        V = U[: q * 8].reshape(q, 8, m)
        acc = V[:, 0, :].copy()
        for k in range(1, 8):
            acc |= V[:, k, :] << np.uint8(k)
        out[:, :q] = acc.T
    for k in range(n - q * 8):
        out[:, q] |= U[q * 8 + k] << np.uint8(k)
    return out.view("<u8").astype(np.uint64, copy=False).reshape(m, w)


def pack_rows_mask(mask: np.ndarray) -> np.ndarray:
    """Pack one boolean vector of length ``n_samples`` into a bitset row."""
    return pack_columns(np.asarray(mask, dtype=bool).reshape(-1, 1))[0]


def unpack(words: np.ndarray, n_samples: int) -> np.ndarray:
    """Inverse of :func:`pack_rows_mask`: the boolean membership vector."""
    as_bytes = np.ascontiguousarray(words, dtype="<u8").view(np.uint8)
    return np.unpackbits(as_bytes, bitorder="little")[:n_samples].astype(bool)


@intrinsic
def popcount64(typingctx, x):  # pragma: no cover - compiled by numba
    """Population count of a uint64 (LLVM ``ctpop``); usable inside njit code."""
    if not isinstance(x, types.Integer):
        return None
    sig = types.uint64(x)

    def codegen(context, builder, signature, args):
        from llvmlite import ir

        (val,) = args
        val = context.cast(builder, val, signature.args[0], types.uint64)
        fn = builder.module.declare_intrinsic("llvm.ctpop", [ir.IntType(64)])
        return builder.call(fn, [val])

    return sig, codegen



#: Whether kernels can read the clock (:func:`monotonic`): Linux's ``clock_gettime``.  Elsewhere
#: :func:`monotonic` reads 0.0, so a kernel never stops on its own and limits are checked between
#: kernel calls only (the kernels are split into calls short enough for that).
HAS_KERNEL_CLOCK = sys.platform.startswith("linux")


@intrinsic
def monotonic(typingctx):  # pragma: no cover - compiled by numba
    """Seconds of the monotonic clock, usable inside njit code (``clock_gettime(CLOCK_MONOTONIC)``,
    the clock of :func:`time.perf_counter` on Linux, about 50 ns a read); 0.0 where
    :data:`HAS_KERNEL_CLOCK` is False.  Compare only with :func:`stop_time` of the same kernel."""

    def codegen(context, builder, signature, args):
        from llvmlite import ir

        f64 = ir.DoubleType()
        if not HAS_KERNEL_CLOCK:
            return ir.Constant(f64, 0.0)
        from numba.core import cgutils

        i32, i64 = ir.IntType(32), ir.IntType(64)
        timespec = ir.LiteralStructType([i64, i64])  # time_t tv_sec, long tv_nsec (64-bit Linux)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(i32, [i32, timespec.as_pointer()]),
                                            "clock_gettime")
        ts = cgutils.alloca_once(builder, timespec)
        builder.call(fn, [ir.Constant(i32, 1), ts])  # CLOCK_MONOTONIC
        sec = builder.sitofp(builder.load(cgutils.gep_inbounds(builder, ts, 0, 0)), f64)
        nsec = builder.sitofp(builder.load(cgutils.gep_inbounds(builder, ts, 0, 1)), f64)
        return builder.fadd(sec, builder.fmul(nsec, ir.Constant(f64, 1e-9)))

    return types.float64(), codegen


@njit(cache=True, inline="always")
def stop_time(seconds):  # pragma: no cover - compiled by numba
    """The :func:`monotonic` reading at which a kernel given ``seconds`` (``inf``: no limit) stops:
    read once on entry, then ``monotonic() >= stop`` is the kernel's deadline test."""
    return monotonic() + seconds


def seconds_left(deadline: float | None) -> float:
    """What a kernel gets for :func:`stop_time`: the seconds from now to ``deadline`` (a
    :func:`time.perf_counter` reading, None: no limit), at least 0."""
    return np.inf if deadline is None else max(0.0, deadline - time.perf_counter())


@njit(cache=True, inline="always")
def ctz64(x):  # pragma: no cover - compiled by numba
    """Count of trailing zero bits of a non-zero uint64: ``popcount((x & -x) - 1)``."""
    x = np.uint64(x)
    return popcount64((x & (~x + np.uint64(1))) - np.uint64(1))


# ---------------------------------------------------------------------------
# Hashing
# ---------------------------------------------------------------------------
#
# Both mixers are xor-shift-multiply finalisers, bijective and non-linear on 64-bit words,
# with different constants: splitmix64's (Steele, Lea & Flood 2014) and murmur3's fmix64.

_SPLITMIX = (np.uint64(30), np.uint64(0xBF58476D1CE4E5B9), np.uint64(27), np.uint64(0x94D049BB133111EB),
             np.uint64(31))
_MURMUR = (np.uint64(33), np.uint64(0xFF51AFD7ED558CCD), np.uint64(33), np.uint64(0xC4CEB9FE1A85EC53),
           np.uint64(33))
_SA1, _MA1, _SA2, _MA2, _SA3 = _SPLITMIX
_SB1, _MB1, _SB2, _MB2, _SB3 = _MURMUR
#: Default seeds of :func:`hash_words128` (the golden-ratio and wyhash constants).
HASH_SEED1 = np.uint64(0x9E3779B97F4A7C15)
HASH_SEED2 = np.uint64(0xD6E8FEB86659FD93)


@njit(cache=True, inline="always")
def _xsm(x, r1, m1, r2, m2, r3):
    """The xor-shift-multiply finaliser ``x ^= x >> r1; x *= m1; x ^= x >> r2; x *= m2; x ^= x >> r3``."""
    x = (x ^ (x >> r1)) * m1
    x = (x ^ (x >> r2)) * m2
    return x ^ (x >> r3)


@njit(cache=True, inline="always")
def mix64(x):
    """splitmix64's finaliser: a bijective, non-linear mixer of a uint64."""
    return _xsm(x, _SA1, _MA1, _SA2, _MA2, _SA3)


@njit(cache=True, inline="always")
def mix64_alt(x):
    """murmur3's fmix64: a second mixer, independent of :func:`mix64`."""
    return _xsm(x, _SB1, _MB1, _SB2, _MB2, _SB3)


@njit(cache=True, inline="always")
def hash_words(words, seed):
    """64-bit non-linear hash of a packed bitset: the sum (mod 2**64) over its non-zero words
    ``b = words[w]`` of ``mix64(b ^ (w + 1) * seed)``.

    Zero words add nothing, so the empty set hashes to 0 and the cost is one
    mix per non-zero word.  Each word is mixed with its position before it is
    summed, so there is no linear structure to collide by construction (the
    MAPTree paper's polynomial hash does, spec-000 §3.8).
    """
    h = np.uint64(0)
    for w in range(words.shape[0]):
        b = words[w]
        if b != 0:
            h += mix64(b ^ (np.uint64(w + 1) * seed))
    return h


@njit(cache=True, inline="always")
def hash_words128(words):
    """128-bit key ``(h1, h2)`` of a packed bitset: two independent 64-bit hashes in one pass.

    ``h1 = hash_words(words, HASH_SEED1)``; ``h2`` sums ``mix64_alt(b + (w + 1)
    * HASH_SEED2)`` instead, another mixer on another combination of word and
    position.  A false match of two different sets needs both sums to agree,
    probability of order ``2**-128`` per pair.
    """
    h1 = np.uint64(0)
    h2 = np.uint64(0)
    for w in range(words.shape[0]):
        b = words[w]
        if b != 0:
            s = np.uint64(w + 1)
            h1 += mix64(b ^ (s * HASH_SEED1))
            h2 += mix64_alt(b + (s * HASH_SEED2))
    return h1, h2


# ---------------------------------------------------------------------------
# Random numbers: xoshiro256** (Blackman & Vigna)
# ---------------------------------------------------------------------------
#
# A kernel that draws random numbers takes the generator's state, a uint64[4] array, and
# advances it in place.  The state lives with the caller, so a run cut into several kernel
# calls (the MCMC chain runs in chunks between which Python checks the time limit) draws the
# same stream as one uninterrupted call.

_U5 = np.uint64(5)
_U7 = np.uint64(7)
_U9 = np.uint64(9)
_U11 = np.uint64(11)
_U17 = np.uint64(17)
_U45 = np.uint64(45)
_U64 = np.uint64(64)
_INV_2_53 = 1.0 / 9007199254740992.0
_MASK64 = (1 << 64) - 1


def rng_state(seed: int) -> np.ndarray:
    """A xoshiro256** state (``uint64[4]``) from an integer seed.

    The four words are the first outputs of the splitmix64 stream started at
    ``seed mod 2**64`` (the seeding its authors recommend); they are never all
    zero.
    """
    x = int(seed) & _MASK64
    words = []
    for _ in range(4):
        x = (x + int(HASH_SEED1)) & _MASK64  # splitmix64's increment, the golden-ratio constant
        z = x
        z = ((z ^ (z >> 30)) * int(_MA1)) & _MASK64
        z = ((z ^ (z >> 27)) * int(_MA2)) & _MASK64
        words.append(z ^ (z >> 31))
    return np.array(words, dtype=np.uint64)


@njit(cache=True, inline="always")
def _rotl(x, k):
    return (x << k) | (x >> (_U64 - k))


@njit(cache=True)
def next_u64(s):
    """Next 64-bit output of the xoshiro256** generator with state ``s`` (uint64[4])."""
    result = _rotl(s[1] * _U5, _U7) * _U9
    t = s[1] << _U17
    s[2] ^= s[0]
    s[3] ^= s[1]
    s[1] ^= s[2]
    s[0] ^= s[3]
    s[2] ^= t
    s[3] = _rotl(s[3], _U45)
    return result


@njit(cache=True)
def uniform(s):
    """A float uniform on ``[0, 1)`` with 53 random bits."""
    return float(next_u64(s) >> _U11) * _INV_2_53


@njit(cache=True)
def randint(s, n):
    """An integer uniform on ``0 .. n-1`` (``n >= 1``)."""
    j = int(uniform(s) * n)
    return j if j < n else n - 1


# ---------------------------------------------------------------------------
# Dirichlet-multinomial leaves
# ---------------------------------------------------------------------------


class DirichletTables(NamedTuple):
    """Log-gamma tables of the Dirichlet-multinomial leaf likelihood (see :func:`dirichlet_tables`).

    A numba-compatible named tuple: kernels take it whole and read its fields by name.
    """

    G: np.ndarray  #: (n_classes, n_max + 1): ``lgamma(c + rho_k)``
    Gsum: np.ndarray  #: (n_max + 1,): ``lgamma(m + sum(rho))``
    lconst: float  #: ``sum_k lgamma(rho_k) - lgamma(sum(rho))``


def dirichlet_tables(rho, n_max: int, *, relative: bool = False) -> DirichletTables:
    """Tables of the Dirichlet-multinomial leaf log likelihood for leaves of up to ``n_max`` samples.

    ``G[k, c] = lgamma(c + rho_k)``, ``Gsum[m] = lgamma(m + sum(rho))`` for
    ``c, m = 0 .. n_max`` and ``lconst = sum_k lgamma(rho_k) - lgamma(sum(rho))``,
    so that :func:`dm_log_lik` of class counts ``c`` (``n = sum(c)``) is

        log l(c) = sum_k G[k, c_k] - Gsum[n] - lconst
                 = log B(c + rho) - log B(rho),   B(v) = prod_k Gamma(v_k) / Gamma(sum v).

    With ``relative``, every table is stored relative to the empty leaf
    (``G[k, c] - G[k, 0]``, ``Gsum[m] - Gsum[0]``, ``lconst = 0``): the same
    values, rounded in another order.  MAPTree uses the absolute tables, the
    samplers the relative ones; each keeps the exact floating-point values it
    always had.

    Parameters
    ----------
    rho : array-like of float, shape (n_classes,)
        Dirichlet concentrations.
    n_max : int
        Largest (weighted) number of samples of a leaf.
    relative : bool, default=False

    Returns
    -------
    DirichletTables
    """
    rho = np.asarray(rho, dtype=np.float64)
    c = np.arange(int(n_max) + 1, dtype=np.float64)
    if relative:
        G = np.ascontiguousarray(gammaln(c[None, :] + rho[:, None]) - gammaln(rho)[:, None])
        rho_sum = float(rho.sum())
        return DirichletTables(G, gammaln(c + rho_sum) - gammaln(rho_sum), 0.0)
    G = gammaln(c[None, :] + rho[:, None])
    Gsum = gammaln(c + rho.sum())
    return DirichletTables(G, Gsum, float(gammaln(rho).sum() - gammaln(rho.sum())))


@njit(cache=True, inline="always")
def dm_log_lik(counts, G, Gsum, lconst):
    """Dirichlet-multinomial log marginal likelihood ``log l(counts)`` of one leaf, read off the
    tables ``G, Gsum, lconst`` of :func:`dirichlet_tables` (``counts`` integer, ``sum(counts) <=
    n_max``).

    The tables come as three arguments, not as the :class:`DirichletTables`:
    numba counts references per array, and a kernel that evaluates leaves in
    an inner loop reads the fields once (``G = dm.G``) and passes them on.
    """
    s = 0.0
    n = 0
    for k in range(counts.shape[0]):
        c = counts[k]
        s += G[k, c]
        n += c
    return s - Gsum[n] - lconst


@njit(cache=True)
def argsort_stable(a):  # pragma: no cover - compiled by numba
    """Indices that sort the 1-D float array ``a``, equal values in index order.

    A bottom-up merge sort: numba's own ``np.argsort`` compiles a generic introsort for each
    call site's types, which costs more than a second of the kernels' cold compile (and
    ``np.arange`` three compiles of numba's own: the loop below fills the indices instead).
    """
    n = a.shape[0]
    idx = np.empty(n, np.int64)
    for i in range(n):
        idx[i] = i
    tmp = np.empty(n, np.int64)
    width = 1
    while width < n:
        lo = 0
        while lo < n:
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i = lo
            j = mid
            k = lo
            while i < mid and j < hi:
                if a[idx[j]] < a[idx[i]]:
                    tmp[k] = idx[j]
                    j += 1
                else:
                    tmp[k] = idx[i]
                    i += 1
                k += 1
            while i < mid:
                tmp[k] = idx[i]
                i += 1
                k += 1
            while j < hi:
                tmp[k] = idx[j]
                j += 1
                k += 1
            lo = hi
        idx, tmp = tmp, idx
        width *= 2
    return idx
