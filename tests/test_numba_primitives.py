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
