"""``time_limit`` holds for the whole fit of the density models on large data (issue 22), and the work on
distinct configurations with counts gives the same answers as the work on rows."""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
import pytest

from arboretum import CategoricalDET, HistogramDensity, LeafSparseDensityTree, LimitWarning
from arboretum.density import _kernels as K
from arboretum.density.exact import leaf_sparse_bound_by_k, leaf_sparse_upper_bound
from arboretum.density.posterior import leaf_sparse_constant
from arboretum.density.space import distinct_configurations


def uniform_codes(n: int, p: int = 6, q: int = 4, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, q, size=(n, p))


@pytest.mark.parametrize("q", [[3, 1, 4], [64] * 11])  # packed keys; beyond 62 bits the row-wise np.unique
def test_distinct_configurations_match_numpy_unique(q):
    rng = np.random.default_rng(1)
    codes = np.column_stack([rng.integers(0, min(qj, 3), 500) for qj in q])
    configs, counts, inverse = distinct_configurations(codes, np.array(q))
    ref, ref_counts = np.unique(codes, axis=0, return_counts=True)
    np.testing.assert_array_equal(configs, ref)
    np.testing.assert_array_equal(counts, ref_counts)
    np.testing.assert_array_equal(configs[inverse], codes)


def test_leaf_bound_by_k_from_counts_matches_its_definition():
    """The vectorised UB(K) equals the bound's step 3 evaluated term by term, from rows or from counts."""
    rng = np.random.default_rng(2)
    codes = rng.integers(0, 3, size=(300, 3))
    codes[:120, 0] = 0
    q = np.array([4, 4, 4])  # a category never seen: the domain (64) is larger than D
    lam, alpha = 4.0, 1.5
    configs, counts, _ = distinct_configurations(codes, q)
    n, D = 300, len(counts)
    H = float(np.sum(counts * np.log(counts)))

    def g(m: float) -> float:
        return math.lgamma(m + alpha) - math.lgamma(alpha) - m * math.log(m)

    expect = [leaf_sparse_constant(k, n, lam, alpha) + H + max(j * g(n / j) for j in range(1, min(k, D) + 1))
              for k in range(1, D + 1)]
    got = leaf_sparse_bound_by_k(configs, q, lam, alpha, config_counts=counts)
    np.testing.assert_allclose(got, expect, rtol=1e-12)
    np.testing.assert_allclose(leaf_sparse_bound_by_k(codes, q, lam, alpha), expect, rtol=1e-12)
    above = expect[-1] - 5.0  # continued past D while the bound stays above
    longer = leaf_sparse_bound_by_k(configs, q, lam, alpha, above=above, config_counts=counts)
    assert len(longer) > D and longer[-2] >= above and np.all(np.diff(longer[D - 1:]) < 0)
    assert leaf_sparse_upper_bound(configs, q, lam, alpha, config_counts=counts) == pytest.approx(max(expect))


def test_det_held_out_terms_match_rows():
    """CategoricalDET's cross-validation terms from configuration counts equal the held-out ISE computed
    over the test rows with the pruned trees' boxes (the computation the counts replace)."""
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 3, size=(900, 3))
    codes[:300, 1] = 2
    det = CategoricalDET(min_leaf_size=2, max_leaf_size=6, cv=0, time_limit=None).fit(codes)
    configs, weights, inverse = distinct_configurations(codes, det._q)
    tr, te = np.arange(0, 900, 3), np.setdiff1d(np.arange(900), np.arange(0, 900, 3))
    sub = det._grow(configs, np.bincount(inverse[tr], minlength=len(configs)))
    alphas, collapse = det._prune_sequence(sub, tr.size)
    grid = sorted(set(alphas))
    got = det._held_out_terms(sub, collapse, configs, np.bincount(inverse[te], minlength=len(configs)),
                              tr.size, te.size, grid)
    for g, a in enumerate(grid):
        leaves = det._leaves(sub, collapse, a)
        vol = np.array([math.exp(sub[i][5]) for i in leaves])
        dens = np.array([sub[i][4] for i in leaves]) / (tr.size * vol)
        which = K.first_match(codes[te], np.array([sub[i][0] for i in leaves], dtype=np.uint64))
        assert np.all(which >= 0)
        assert got[g] == pytest.approx(np.sum(dens ** 2 * vol) - 2.0 * np.mean(dens[which]), rel=1e-12, abs=1e-15)
    assert sum(sub[i][4] for i in det._leaves(sub, collapse, 0.0)) == tr.size


def _stopped_fit(make, codes: np.ndarray, limit: float):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LimitWarning)
        make(0.5).fit(codes[:300])  # warm (numba and imports), outside the measured fit
    est = make(limit)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(codes)
    wall = time.perf_counter() - t0
    assert wall <= limit * 1.1 + 1.5, f"{type(est).__name__} took {wall:.2f} s with time_limit={limit}"
    if est.stop_reason_ == "time_limit":
        assert any(issubclass(w.category, LimitWarning) for w in caught)
        assert {w.filename for w in caught if issubclass(w.category, LimitWarning)} == {__file__}
    scores = est.score_samples(codes[:50])
    assert scores.shape == (50,) and np.all(np.isfinite(scores) | (scores == -np.inf))
    assert est.leaf_probabilities_.sum() == pytest.approx(1.0)
    return est


def test_leaf_tree_time_limit_on_large_data():
    """Past the deadline the post-search certificate (the capped exact programme) does not run; the
    bound of ``gap_`` reads the configuration counts, so the fit ends at the limit."""
    codes = uniform_codes(120_000)
    est = _stopped_fit(lambda t: LeafSparseDensityTree(time_limit=t, random_state=0), codes, 0.4)
    assert est.gap_ >= 0 or math.isnan(est.gap_)
    assert est.leaf_counts_.sum() == codes.shape[0]


def test_leaf_tree_certificate_skipped_after_deadline(monkeypatch):
    import arboretum.density.trees as trees

    def boom(*args, **kwargs):
        raise AssertionError("the certificate ran after the deadline")

    monkeypatch.setattr(trees, "leaf_sparse_bound_by_k", boom)
    monkeypatch.setattr(trees, "solve_exact", boom)

    class Expired:
        deadline = 0.0

        @staticmethod
        def expired() -> bool:
            return True

    est = LeafSparseDensityTree()
    assert est._bounded_exact((np.zeros((1, 2), dtype=np.int64), np.ones(1)), np.array([2, 2]), 3.0, 2.0,
                              -1.0, Expired()) is None


def test_det_time_limit_on_large_data():
    codes = uniform_codes(120_000)
    est = _stopped_fit(lambda t: CategoricalDET(time_limit=t, random_state=0), codes, 0.5)
    assert est.stop_reason_ == "time_limit"
    assert est.leaf_counts_.sum() == codes.shape[0]  # the tree so far still holds every row


def test_histogram_counts_configurations_once():
    codes = uniform_codes(50_000, p=4, q=3)
    est = HistogramDensity().fit(codes)
    ref, counts = np.unique(codes, axis=0, return_counts=True)
    np.testing.assert_array_equal(est.leaf_counts_, counts)
    np.testing.assert_array_equal(est.leaf_boxes_, np.left_shift(np.uint64(1), ref.astype(np.uint64)))
