"""The warm-up of the density models' numba kernels (:mod:`arboretum._compile`)."""

from __future__ import annotations

import numpy as np

from .._compile import register
from . import _kernels as K
from . import _list_kernels as LK


def _tiny():
    codes = np.array([[0, 1], [1, 0], [1, 1], [2, 1], [0, 0]], dtype=np.int64)
    q = np.array([3, 2], dtype=np.int64)
    return codes, q


def _trees_and_posterior() -> None:
    """Every kernel but the sampler's (the helper process's part on a cold cache, see
    :mod:`arboretum._compile`): the trees' exact solvers, bounds and annealing, the list's
    posterior, and a tree's fit and scores."""
    from .anneal import Problem
    from .exact import region_tables, solve_exact
    from .rulelist import _kernel_args, _start_chain

    codes, q = _tiny()
    solve_exact(codes, q, "leaf", 2.0, 2.0, 10)  # the Lagrangian bound (it may certify alone)
    counts, logv, vol, strides, order = region_tables(codes, q)  # the knapsack programme
    shape = (counts.shape[0], 3)
    K.leaf_sparse_dp(order, 0, order.shape[0], counts, logv, vol, strides, q, 2, 2.0, np.full(shape, -np.inf),
                     np.full(shape, -1, dtype=np.int8), np.zeros(shape, dtype=np.int64),
                     np.zeros(shape, dtype=np.int32))
    solve_exact(codes, q, "branch", 2.0, 2.0, None)
    prob = Problem(codes, q, "leaf", 2.0, 2.0)
    prob.block(prob.all_bits, 0, 3)
    K.and_count(prob.all_bits, prob.all_bits)
    model = _list_model()
    model.log_posterior((0, 3))
    _start_chain(model, *_kernel_args(model))  # the sampler's start: prior_list, list_log_posterior
    # a fit and its scores: the leaf lookup (first_match) with the argument types of a real fit
    from .trees import LeafSparseDensityTree

    LeafSparseDensityTree().fit(codes).score_samples(codes)


def _list_model():
    from .rulelist import ListModel, mine_antecedents

    codes, q = _tiny()
    return ListModel(mine_antecedents(codes, q, 2), q, 5, 2.0, 1.0, 1.0)


@register("density", lambda: [(K.leaf_sparse_dp, None), (K.leaf_sparse_lagrange_grid, None),
                              (K.lagrange_split, None), (K.box_sums_into, None), (K.leaf_terms_into, None),
                              (K.lookup_by_count, None), (K.histogram_into, None),
                              (K.branch_sparse_dp, None), (K.first_match, None),
                              (K.list_counts, None), (K.and_into, None), (K.block_bits, None),
                              (LK.mh_steps_incremental, None), (LK.prior_list, None), (LK.list_log_posterior, None)],
          helper=_trees_and_posterior)
def _warm_density() -> None:
    """Run every kernel once on a tiny domain with a real fit's argument types: the sampler's
    kernel first (the largest compile, about 11 s of 17), while on a cold cache the helper process
    compiles the rest into the cache, which the calls below then load."""
    from .rulelist import compile_sampler_kernel, metropolis_hastings

    model = _list_model()
    compile_sampler_kernel(model)
    _trees_and_posterior()
    metropolis_hastings(model, n_iter=20, n_chains=1)
