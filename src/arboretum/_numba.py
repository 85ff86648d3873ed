"""Numba primitives shared by every kernel family (maptree, pcfg, samplers).

One implementation of each low-level piece the kernels need, so that the three
families do not each carry their own copy:

* **packed bitsets** over samples (:func:`pack_columns`, :func:`popcount64`,
  :func:`ctz64`, ...);

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

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

__all__ = ["n_words", "pack_columns", "pack_rows_mask", "unpack", "popcount64", "ctz64"]


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
    B = np.asarray(B, dtype=bool)
    n, m = B.shape
    w = n_words(n)
    packed = np.packbits(B.T, axis=1, bitorder="little")  # (m, ceil(n / 8)) bytes
    out = np.zeros((m, w * 8), dtype=np.uint8)
    out[:, : packed.shape[1]] = packed
    return np.ascontiguousarray(out).view("<u8").astype(np.uint64, copy=False).reshape(m, w)


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



@njit(cache=True, inline="always")
def ctz64(x):  # pragma: no cover - compiled by numba
    """Count of trailing zero bits of a non-zero uint64: ``popcount((x & -x) - 1)``."""
    x = np.uint64(x)
    return popcount64((x & (~x + np.uint64(1))) - np.uint64(1))
