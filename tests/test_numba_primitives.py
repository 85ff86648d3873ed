"""The shared numba primitives of :mod:`arboretum._numba` against NumPy."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from arboretum._numba import argsort_stable


@settings(max_examples=200, deadline=None)
@given(arrays(np.float64, st.integers(0, 70), elements=st.sampled_from([-1.5, 0.0, 0.25, 2.0, 7.0, np.inf])))
def test_argsort_stable_matches_numpy_stable(a):
    # Few distinct values: many ties, whose order must be the indices' order.
    np.testing.assert_array_equal(argsort_stable(a), np.argsort(a, kind="stable"))


def test_argsort_stable_random_floats():
    rng = np.random.default_rng(0)
    for n in (1, 2, 3, 17, 64, 1000):
        a = rng.normal(size=n)
        np.testing.assert_array_equal(argsort_stable(a), np.argsort(a, kind="stable"))


def test_kernel_clock_reads_perf_counters_clock():
    import time

    from numba import njit

    from arboretum._numba import HAS_KERNEL_CLOCK, monotonic, seconds_left, stop_time

    @njit
    def read():
        return monotonic()

    @njit
    def spin(seconds):
        stop = stop_time(seconds)
        n = 0
        while monotonic() < stop:
            n += 1
        return n

    if not HAS_KERNEL_CLOCK:  # kernels never stop on their own there
        assert read() == 0.0 and spin(0.0) == 0
        return
    t0 = time.perf_counter()
    k = read()
    t1 = time.perf_counter()
    assert t0 - 1e-3 <= k <= t1 + 1e-3  # the same clock as time.perf_counter (CLOCK_MONOTONIC)
    t0 = time.perf_counter()
    assert spin(0.05) > 0
    assert 0.05 <= time.perf_counter() - t0 < 2.0
    assert spin(0.0) == 0
    assert seconds_left(None) == np.inf and seconds_left(time.perf_counter() - 1) == 0.0
    assert 9.0 < seconds_left(time.perf_counter() + 10) <= 10.0


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 300), m=st.integers(1, 5), seed=st.integers(0, 2**31), kind=st.sampled_from(
    ["bool", "uint8", "uint8 with 2", "float", "int"]))
def test_pack_columns_sets_bit_i_of_column_j_iff_the_entry_is_nonzero(n, m, seed, kind):
    from arboretum._numba import n_words, pack_columns

    rng = np.random.default_rng(seed)
    B = rng.random((n, m)) < 0.5
    A = {"bool": B, "uint8": B.astype(np.uint8), "uint8 with 2": B.astype(np.uint8) * 2,
         "float": B * rng.normal(size=(n, m)), "int": B.astype(np.int64) * -3}[kind]
    words = pack_columns(A)
    assert words.shape == (m, n_words(n)) and words.dtype == np.uint64
    for j in range(m):
        bits = [(int(words[j, i // 64]) >> (i % 64)) & 1 for i in range(64 * n_words(n))]
        assert bits == [int(A[i, j] != 0) if i < n else 0 for i in range(len(bits))]
