"""Sparse density trees and lists (spec-004 §11): oracle values, invariants, solvers, estimators."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arboretum import (BranchSparseDensityTree, CategoricalDET, HistogramDensity, LeafSparseDensityTree,
                       SparseDensityRuleList)
from arboretum.density.anneal import Problem, anneal
from arboretum.density.exact import solve_exact
from arboretum.density.posterior import (antecedent_counts, box_volume, inclusion_exclusion_volume,
                                         internal_term, list_volumes)
from arboretum.density.rulelist import ListModel, gelman_rubin, metropolis_hastings, mine_antecedents
from arboretum.density.selection import select_rate

TITANIC = {(0, 0, 0): 175, (0, 0, 1): 144, (0, 1, 0): 5, (0, 1, 1): 1, (1, 0, 0): 168, (1, 0, 1): 93,
           (1, 1, 0): 11, (1, 1, 1): 13, (2, 0, 0): 462, (2, 0, 1): 165, (2, 1, 0): 48, (2, 1, 1): 31,
           (3, 0, 0): 862, (3, 0, 1): 23}  # class (1st, 2nd, 3rd, crew), age (adult, child), sex (male, female)
SIM_HALF = {(0, 1, 0): 50, (0, 1, 1): 50, (1, 0, 0): 50, (1, 0, 1): 200, (1, 1, 1): 150}
SIM_FULL = {(0, 1, 0): 100, (0, 1, 1): 100, (1, 0, 0): 100, (1, 0, 1): 400, (1, 1, 1): 300}
AUTHORS = "/work/shared/datasets/density-trees-authors/"


def table(counts: dict) -> np.ndarray:
    return np.array([k for k, v in counts.items() for _ in range(v)], dtype=np.int64)


def titanic_frame() -> pd.DataFrame:
    labels = (["1st", "2nd", "3rd", "crew"], ["adult", "child"], ["male", "female"])
    X = table(TITANIC)
    return pd.DataFrame({name: np.array(lab, dtype=object)[X[:, j]]
                         for j, (name, lab) in enumerate(zip(["class", "age", "sex"], labels))})


def authors(split: str) -> pd.DataFrame:
    rows = [ln.split() for ln in open(AUTHORS + f"titanic_{split}.tab") if len(ln.split()) == 3]
    rows = [r for r in rows if r[0] != "crew3rd_class"]  # the malformed row (spec §8.2)
    return pd.DataFrame(rows, columns=["class", "age", "sex"])


# -- C1, C3, C4: volumes and antecedents ---------------------------------------------------------------
def test_c1_figure4_volume():
    box = (0b0110000, 0b0011, 0b100001, 0b111)  # x1 in {4,5} of 1..7, x2 in {100,101}, x3 in {10,15}, x4 free
    assert box_volume(box) == 24
    assert box_volume((0b1111111, 0b1111, 0b111111, 0b111)) == 504


def test_c3_antecedent_counts():
    assert sum(antecedent_counts([2, 3, 4, 5], 2)) == 86
    assert sum(antecedent_counts([4, 2, 2], 2)) == 29
    ants = mine_antecedents(table(TITANIC), np.array([4, 2, 2]), 2)
    assert len(ants.sizes) == 28 and ants.available == [1, 8, 20]


def test_c4_list_volumes_three_ways():
    rng = np.random.default_rng(0)
    for _ in range(200):
        q = rng.integers(2, 4, size=rng.integers(2, 5))
        full = tuple((1 << int(x)) - 1 for x in q)
        rules = []
        for _ in range(rng.integers(1, 5)):
            box = list(full)
            for j in rng.choice(len(q), size=rng.integers(1, min(2, len(q)) + 1), replace=False):
                box[j] = 1 << int(rng.integers(q[j]))
            rules.append(tuple(box))
        vols = list_volumes(rules, full)
        brute = [0] * (len(rules) + 1)
        for x in itertools.product(*(range(int(k)) for k in q)):
            hit = next((i for i, r in enumerate(rules) if all((m >> v) & 1 for m, v in zip(r, x))), len(rules))
            brute[hit] += 1
        assert vols == brute
        assert vols == [inclusion_exclusion_volume(rules, i, full) for i in range(len(rules) + 1)]
        assert sum(vols) == math.prod(int(x) for x in q)


# -- C5, C7, C8: exact values ------------------------------------------------------------------------
@pytest.mark.parametrize("lam,value", [(5, -734.220), (8, -734.400), (10, -735.062)])
def test_c5_simulated_half_method1(lam, value):
    res = solve_exact(table(SIM_HALF), np.array([2, 2, 2]), "leaf", lam, 2.0, 100)
    assert len(res.root.leaves()) == 6 and res.log_posterior == pytest.approx(value, abs=5e-4)


def test_c5_full_and_root():
    res = solve_exact(table(SIM_FULL), np.array([2, 2, 2]), "leaf", 5, 2.0, 100)
    assert len(res.root.leaves()) == 6 and res.log_posterior == pytest.approx(-1447.232, abs=5e-4)
    est = LeafSparseDensityTree(lam=5, max_leaves=1).fit(table(SIM_HALF))
    assert est.n_leaves_ == 1 and est.log_posterior_ == pytest.approx(-1043.111, abs=5e-4)


@pytest.mark.parametrize("lam,value", [(5, -4145.814), (8, -4144.584), (10, -4144.576)])
def test_c7_titanic_method1(lam, value):
    est = LeafSparseDensityTree(lam=lam).fit(titanic_frame())
    assert est.optimal_ and est.n_leaves_ == 9
    assert est.log_posterior_ == pytest.approx(value, abs=5e-4)
    assert est.log_posterior_of_leaves() == pytest.approx(est.log_posterior_, abs=1e-9)
    leaves = {tuple(d["conditions"]): d for d in est.leaves_}
    child3 = next(d for c, d in leaves.items() if "class = 3rd" in c and "age = child" in c)
    assert child3["count"] == 79 and child3["volume"] == 2 and child3["density"] == pytest.approx(0.01795, abs=1e-5)


def test_c7_authors_file_figure3():
    est = LeafSparseDensityTree(lam=5).fit(authors("train"))
    d = next(d for d in est.leaves_ if set(d["conditions"]) == {"class = 3rd_class", "age = child"})
    assert d["count"] == 66 and d["probability"] == pytest.approx(0.0375, abs=1e-4)  # the paper prints 0.038
    assert round(d["density"], 3) == 0.019


@pytest.mark.parametrize("data,lam,leaves,value", [(SIM_HALF, 2, 5, -748.390), (SIM_HALF, 3, 5, -754.146),
                                                   (TITANIC, 2, 9, -4163.232), (TITANIC, 3, 9, -4172.827)])
def test_c8_method2(data, lam, leaves, value):
    q = np.array([2, 2, 2]) if data is SIM_HALF else np.array([4, 2, 2])
    est = BranchSparseDensityTree(lam=lam, categories=[list(range(k)) for k in q]).fit(table(data))
    assert est.optimal_ and est.n_leaves_ == leaves
    assert est.log_posterior_ == pytest.approx(value, abs=5e-4)
    assert est.log_posterior_of_leaves() == pytest.approx(est.log_posterior_, abs=1e-9)


def test_c8_method2_test_likelihood_and_c6_truth():
    est = BranchSparseDensityTree(lam=2).fit(table(SIM_HALF))
    assert est.score(table(SIM_HALF)) == pytest.approx(-712.826, abs=5e-4)
    est = LeafSparseDensityTree(lam=5).fit(table(SIM_HALF))
    assert est.score(table(SIM_HALF)) == pytest.approx(-709.242, abs=5e-4)  # the true density on the other half


def test_c9_figure5_densities():
    X = authors("train")
    assert len(X) == 1760
    # the list "adult and female, child and male, ..." of m = 4 rules, alpha = 1: (n_l + 1) / ((n + 5) V)
    n = 1761  # the paper's row count (the malformed row included)
    assert (346 + 1) / ((n + 5) * 4) == pytest.approx(0.0491, abs=1e-4)
    est = SparseDensityRuleList(lam=4, eta=2, n_iter=200, random_state=0).fit(X)
    for i in range(est.n_leaves_):
        assert est.leaf_densities_[i] * est.leaf_volumes_[i] == pytest.approx(est.leaf_probabilities_[i])


def test_c15_dirichlet_check():
    counts = [3, 0, 5]
    b, ni = 3, 8
    expect = math.log(math.factorial(b - 1) * math.prod(math.factorial(c) for c in counts)
                      / math.factorial(ni + b - 1)) - math.log(math.factorial(b))
    assert internal_term(counts, 1.0) == pytest.approx(expect, abs=1e-12)


# -- C2: normalisation over the full domain --------------------------------------------------------
@pytest.mark.parametrize("make", [lambda: LeafSparseDensityTree(lam=5), lambda: BranchSparseDensityTree(lam=2),
                                  lambda: SparseDensityRuleList(lam=5, n_iter=300, random_state=0),
                                  lambda: HistogramDensity(alpha=0.5), lambda: CategoricalDET(1, 20, cv=3),
                                  lambda: LeafSparseDensityTree(lam=5, density="posterior_mean")])
def test_c2_normalisation(make):
    X = titanic_frame()
    est = make().fit(X)
    grid = pd.DataFrame(list(itertools.product(["1st", "2nd", "3rd", "crew"], ["adult", "child"],
                                               ["male", "female"])), columns=X.columns)
    assert np.exp(est.score_samples(grid)).sum() == pytest.approx(1.0, abs=1e-12)
    assert est.leaf_counts_.sum() == len(X)


# -- C10, C14: annealing --------------------------------------------------------------------------
@pytest.mark.parametrize("method,data,lam,q", [("leaf", SIM_HALF, 5, [2, 2, 2]), ("branch", SIM_HALF, 2, [2, 2, 2]),
                                               ("leaf", TITANIC, 5, [4, 2, 2])])
def test_c10_annealing_reaches_exact(method, data, lam, q):
    X, q = table(data), np.array(q)
    exact = solve_exact(X, q, method, lam, 2.0, 100).log_posterior
    prob = Problem(X, q, method, lam, 2.0)
    hits = sum(abs(anneal(prob, n_cycles=60, trials_per_cycle=100, n_restarts=3, random_state=s).log_posterior
                   - exact) < 1e-6 for s in range(3))
    assert hits >= 2


def test_c14_incremental_equals_full():
    for method in ("leaf", "branch"):
        prob = Problem(table(TITANIC), np.array([4, 2, 2]), method, 3.0, 1.5)
        anneal(prob, n_cycles=10, trials_per_cycle=50, n_restarts=1, random_state=1, check_incremental=True)


@pytest.mark.parametrize("q, steps", [((3, 4, 2, 3, 2), 3000),
                                      ((5, 3, 7, 2, 4, 6, 3, 5, 2, 7, 4, 3, 6, 5, 3, 4, 2, 7, 5, 3), 600)])
def test_c14_rule_list_incremental_chain_equals_full(q, steps):
    """The rule-list chain evaluates a proposal from the stored state of the first position it changes,
    on packed boxes (the second domain's masks fill two words): step for step the same chain as full
    recomputation, and its LP_III is the full one (to 1e-9)."""
    from arboretum.density import _list_kernels as LK

    rng = np.random.default_rng(0)
    X = np.column_stack([rng.integers(0, k, 400) for k in q])
    X[:150, 1] = X[:150, 0] % q[1]  # structure, so that long lists are accepted
    for j in range(2, len(q)):
        X[: 40 * j, j] = X[: 40 * j, j - 1] % q[j]
    q = np.array(q)
    ants = mine_antecedents(X, q, 2)
    M = len(ants.sizes)
    full = np.array([(1 << int(k)) - 1 for k in q], dtype=np.uint64)
    boxes = np.array(ants.boxes, dtype=np.uint64).reshape(M, len(q))
    args = (ants.bits, boxes, ants.sizes, np.asarray(ants.available, dtype=np.int64), full, 400, 6.0, 1.5, 0.7,
            False, True)
    outs = []
    for kernel in (LK.mh_steps, LK.mh_steps_incremental):
        LK.seed(11)
        d = np.zeros(64, dtype=np.int64)
        d[:3] = [0, 5, 9]
        lp = LK.list_log_posterior(d, 3, *args)
        best = np.zeros(66)
        best[1] = -np.inf
        trace, lens = np.empty(steps), np.empty(steps, dtype=np.int64)
        m, lp = kernel(d, 3, lp, steps, *args, 64, best, trace, lens, 0, np.zeros((0, 65), dtype=np.int64))
        assert lp == pytest.approx(LK.list_log_posterior(d, m, *args), abs=1e-9)
        outs.append((d[:m].copy(), lens.copy(), trace.copy(), best.copy()))
    np.testing.assert_array_equal(outs[0][0], outs[1][0])
    np.testing.assert_array_equal(outs[0][1], outs[1][1])
    np.testing.assert_allclose(outs[0][2], outs[1][2], rtol=0, atol=1e-9)
    assert outs[1][1].max() >= 8


def _quick_scores_and_chains(q, n, seed, exact, steps=300, atol=1e-9):
    """Run the full-evaluation chain, the incremental one scoring every proposal both ways, and the plain
    incremental one from the same list and seed: the quick scores equal box subtraction's LP_III (where
    finite) and the three chains are step for step the same."""
    from arboretum.density import _list_kernels as LK

    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.integers(0, k, n) for k in q])
    X[: n // 2, 1] = X[: n // 2, 0] % q[1]
    X[: n // 5] = X[0]  # a repeated row: rules that capture it pay off, so lists grow
    q = np.array(q)
    ants = mine_antecedents(X, q, 2)
    M = len(ants.sizes)
    full = np.array([(1 << int(k)) - 1 for k in q], dtype=np.uint64)
    boxes = np.array(ants.boxes, dtype=np.uint64).reshape(M, len(q))
    args = (ants.bits, boxes, ants.sizes, np.asarray(ants.available, dtype=np.int64), full, n, 4.0, 1.5, 0.8,
            exact, True)
    cap = min(M, 40)
    start = rng.permutation(M)[:3]
    outs = []
    for kernel in ("full", "check", "quick"):
        LK.seed(seed % 1000)
        d = np.zeros(cap, dtype=np.int64)
        d[:3] = start
        lp = LK.list_log_posterior(d, 3, *args)
        best = np.zeros(cap + 2)
        best[1] = -np.inf
        trace, lens = np.empty(steps), np.empty(steps, dtype=np.int64)
        checks = np.zeros((steps if kernel == "check" else 0, 2))
        rec = np.zeros((0, cap + 1), dtype=np.int64)
        if kernel == "full":
            m, lp = LK.mh_steps(d, 3, lp, steps, *args, cap, best, trace, lens, 0, rec)
        else:
            m, lp = LK.mh_chain(d, 3, lp, steps, *args, cap, best, trace, lens, 0, rec, checks)
        outs.append((d[:m].copy(), trace))
        if kernel == "check":
            ok = np.isfinite(checks[:, 0]) & np.isfinite(checks[:, 1])
            np.testing.assert_allclose(checks[ok, 0], checks[ok, 1], rtol=0, atol=atol)
    for out in outs[1:]:
        np.testing.assert_array_equal(out[0], outs[0][0])
        np.testing.assert_allclose(out[1], outs[0][1], rtol=0, atol=atol)
    return outs[0][0]


@settings(max_examples=20, deadline=None)
@given(q=st.lists(st.integers(2, 6), min_size=2, max_size=6), n=st.integers(30, 250), seed=st.integers(0, 10**6),
       exact=st.booleans())
def test_c14_rule_list_quick_score_equals_box_subtraction(q, n, seed, exact):
    """Every proposal's quick score (from the stored leaves: intersected or redistributed pieces) is its
    LP_III by box subtraction (to 1e-9) unless the cap puts it out of the search space; and the chain that
    rejects on the quick score is the full-evaluation chain, step for step."""
    _quick_scores_and_chains(q, n, seed, exact)


def test_c14_rule_list_quick_score_beyond_2_53_configurations():
    """The same on a domain of about 1e20 configurations, where volumes are no longer exact integers:
    the quick score never subtracts volumes, so it stays within rounding of box subtraction's."""
    q = [3, 4, 5, 3, 4, 5, 3, 4, 5, 3, 4, 5, 3, 4, 5, 3, 4, 5, 3, 4, 5, 3, 4, 5, 3, 4, 5, 3, 4, 5, 3, 4, 5, 3]
    assert np.prod(np.array(q, dtype=float)) > 2.0**60
    final = _quick_scores_and_chains(q, 300, 7, False, steps=400, atol=1e-6)
    assert len(final) >= 3


# -- C11, C13, C16, C18, C12 ---------------------------------------------------------------------
def test_c11_prior_controls_size():
    X = authors("train")
    sizes = [LeafSparseDensityTree(lam=lam).fit(X).n_leaves_ for lam in (0.01, 1, 5, 20, 200)]
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]


def test_c12_likelihood_below_histogram():
    X = titanic_frame()
    hist = HistogramDensity().fit(X).score(X)
    for est in (LeafSparseDensityTree(lam=5), BranchSparseDensityTree(lam=2), CategoricalDET(1, 50, cv=0)):
        assert est.fit(X).score(X) <= hist + 1e-9


def test_c16_mh_samples_the_prior():
    X, q = table(TITANIC), np.array([4, 2, 2])
    model = ListModel(mine_antecedents(X, q, 1), q, len(X), 3.0, 1.0, 1.0, likelihood=False)
    res = metropolis_hastings(model, n_iter=30_000, burn_in=500, n_chains=1, random_state=3, record_lengths=True)
    freq = np.bincount(res.lengths, minlength=9) / len(res.lengths)
    pois = np.array([3.0 ** k / math.factorial(k) for k in range(9)])
    assert np.abs(freq - pois / pois.sum()).max() < 0.02


def test_zero_volume_list_leaf_has_density_zero_without_a_warning():
    """A rule shadowed by an earlier one has volume 0 (spec A13): its leaf gets probability and density 0,
    the others renormalise, and no floating-point warning (log 0 - log 0) escapes."""
    X = table(TITANIC)
    est = SparseDensityRuleList(lam=3, n_iter=10, random_state=0).fit(X)
    full = est._full_box()
    rule = (1,) + full[1:]  # class = first category
    counts = np.array([len(X) // 2, 0, len(X) - len(X) // 2], dtype=float)
    logv = np.array([math.log(4), -math.inf, math.log(12)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est._set_leaves([rule, rule, full], counts, logv, len(X), "posterior_mean", 1.0)
    assert est.leaf_probabilities_[1] == 0.0 and est.leaf_log_densities_[1] == -math.inf
    assert est.leaf_probabilities_.sum() == pytest.approx(1.0)
    assert np.all(np.isfinite(est.leaf_log_densities_[[0, 2]]))


def test_gelman_rubin_never_divides_by_zero():
    assert gelman_rubin([[1.0, 1.0], [1.0, 1.0]]) == 1.0
    assert gelman_rubin([[1.0, 1.0], [2.0, 2.0]]) == math.inf
    assert math.isnan(gelman_rubin([[1.0, 2.0]]))
    assert gelman_rubin([[1.0, 2.0, 1.5], [1.2, 1.9, 1.4]]) == pytest.approx(1.0, abs=0.3)


def test_c18_det_densities_at_most_one():
    X = titanic_frame()
    for mn, mx in ((1, 5), (3, 50), (5, 440)):
        det = CategoricalDET(mn, mx, cv=3, random_state=0).fit(X)
        assert np.all(det.leaf_densities_ <= 1.0) and det.score(X) <= 0


def test_c6_recovery_from_halves():
    full = table(SIM_FULL)
    rng = np.random.default_rng(0)
    truth = {(0, 1, 0): 0.1, (0, 1, 1): 0.1, (1, 0, 0): 0.1, (1, 0, 1): 0.4, (1, 1, 1): 0.3}
    grid = np.array(list(itertools.product(range(2), repeat=3)))
    ok = 0
    for _ in range(5):
        half = full[rng.permutation(len(full))[:500]]
        est = LeafSparseDensityTree(lam=5).fit(half)
        f = np.exp(est.score_samples(grid))
        true = np.array([truth.get(tuple(x), 0.0) for x in grid])
        ok += est.n_leaves_ == 6 and np.array_equal(f > 0, true > 0) and np.abs(f - true).max() < 0.05
    assert ok >= 4


# -- estimators: sampling, text, selection, errors ------------------------------------------------
def test_sample_follows_the_density():
    est = LeafSparseDensityTree(lam=5).fit(titanic_frame())
    S = est.sample(20_000, random_state=0)
    df = pd.DataFrame(S, columns=["class", "age", "sex"])
    emp = df.value_counts(normalize=True)
    for key, p in emp.items():
        f = np.exp(est.score_samples(pd.DataFrame([key], columns=df.columns)))[0]
        assert abs(p - f) < 0.015
    lst = SparseDensityRuleList(lam=5, n_iter=300, random_state=0).fit(titanic_frame())
    assert np.all(np.isfinite(lst.score_samples(pd.DataFrame(lst.sample(200, random_state=1),
                                                             columns=df.columns))))


def test_export_text_paper_form():
    text = LeafSparseDensityTree(lam=5).fit(titanic_frame()).export_text()
    assert "|--- age != adult" in text and "P=0.0359, f=0.0179, V=2  (n=79)" in text
    lst = SparseDensityRuleList(lam=5, n_iter=300, random_state=0).fit(titanic_frame())
    lines = lst.export_text().splitlines()
    assert lines[0] == "|--- " + " and ".join(lst.rules_[0]).replace(" = ", " == ")
    assert lines[-1].lstrip("| -").startswith("P=")


@pytest.mark.parametrize("make", [lambda: LeafSparseDensityTree(lam=5), lambda: BranchSparseDensityTree(lam=2),
                                  lambda: SparseDensityRuleList(lam=5, n_iter=2000, random_state=0),
                                  lambda: CategoricalDET(1, 20, cv=3, random_state=0)])
def test_shared_tree_predicts_prints_and_round_trips(make, tmp_path):
    """tree_ is the shared arboretum.Tree (task "density"): its density is the model's, JSON round trip,
    the shared plot draws it; lists are cascades of CONJUNCTION splits."""
    import matplotlib

    matplotlib.use("Agg")
    from arboretum.plot import plot_tree
    from arboretum.tree import CONJUNCTION, Tree

    X = titanic_frame()
    est = make().fit(X)
    tree = est.tree_
    assert tree.task == "density" and tree.n_leaves == est.n_leaves_
    np.testing.assert_allclose(np.log(tree.predict(X)), est.score_samples(X))
    leaf = tree.split_kind == 0
    np.testing.assert_allclose(tree.value[leaf, 0].sum(), 1.0)
    np.testing.assert_allclose(tree.value[0], [1.0, 1.0 / 16, 16.0])  # the root: the whole domain
    back = Tree.from_json(tree.to_json())
    assert back.structurally_equal(tree) and back.export_text(decimals=4) == est.export_text()
    if isinstance(est, (SparseDensityRuleList, CategoricalDET)):
        assert set(tree.split_kind[~leaf].tolist()) == {CONJUNCTION}
    ax = plot_tree(est)
    texts = [t.get_text() for t in ax.texts]
    assert any("P=" in t.replace(" = ", "=") and "\u2588" in t for t in texts)
    import matplotlib.pyplot as plt

    plt.close("all")


def test_select_rate_chooses_by_validation():
    best, res = select_rate(LeafSparseDensityTree(), authors("train"), {"lam": [1, 5]}, cv=3)
    assert len(res) == 2 and best.lam in (1, 5)
    assert best.lam == max(res, key=lambda r: r["mean_log_likelihood"])["params"]["lam"]


def test_density_cv_scores_folds_of_training_data_only():
    from sklearn.model_selection import KFold

    from arboretum import DensityCV

    X = titanic_frame().sample(600, random_state=1)
    grid = [{"lam": [5], "alpha": [0.25, 2.0]}, {"alpha": [1.0]}]
    cv = DensityCV([LeafSparseDensityTree(density="posterior_mean"), HistogramDensity()], grid, cv=4,
                   random_state=3).fit(X)
    r = cv.cv_results_
    assert list(r["estimator"]) == ["LeafSparseDensityTree"] * 2 + ["HistogramDensity"]
    assert r["params"][1] == {"alpha": 2.0, "lam": 5}
    # every fold score is the held-out log-likelihood per row of a model fitted on the other folds
    domain = [sorted(set(X[c])) for c in X.columns]
    for f, (a, b) in enumerate(KFold(4, shuffle=True, random_state=3).split(X)):
        m = LeafSparseDensityTree(lam=5, alpha=2.0, density="posterior_mean", categories=domain,
                                  random_state=3 + 1000 * f).fit(X.iloc[a])
        assert r[f"split{f}_test_score"][1] == pytest.approx(m.score(X.iloc[b]) / len(b), abs=1e-12)
    assert cv.best_index_ == int(np.argmax(r["mean_test_score"])) and r["rank_test_score"][cv.best_index_] == 1
    assert cv.best_score_ == r["mean_test_score"][cv.best_index_]
    best = type(cv.best_estimator_)(**{**cv.best_estimator_.get_params(), **cv.best_params_}).fit(X)
    np.testing.assert_array_equal(cv.score_samples(X), best.score_samples(X))  # refitted on all of X
    assert cv.n_leaves_ == best.n_leaves_ and cv.leaf_probabilities_.sum() == pytest.approx(1.0)


def test_density_cv_titanic_authors_split():
    """The issue's goal: on the authors' split, the library's own selection (training folds only) gives a
    model of at most 11 leaves with test log-likelihood at least -805.52 (the authors' tree)."""
    from arboretum import DensityCV

    cv = DensityCV(LeafSparseDensityTree()).fit(authors("train"))
    assert cv.best_params_["alpha"] < 2  # the paper's alpha=2 gives the 9-leaf MAP at every rate (-806.36)
    assert cv.n_leaves_ <= 11 and cv.score(authors("test")) >= -805.52


def test_categories_explicit_and_unknown():
    X = pd.DataFrame({"a": ["x", "y", "x", "x"], "b": [1, 2, 2, 1]})
    est = LeafSparseDensityTree(lam=2).fit(X)
    with pytest.raises(ValueError, match="category 'z'.*not in the model's domain"):
        est.score_samples(pd.DataFrame({"a": ["z"], "b": [1]}))
    est = LeafSparseDensityTree(lam=2, handle_unknown="zero").fit(X)
    assert est.score_samples(pd.DataFrame({"a": ["z"], "b": [1]}))[0] == -np.inf
    est = LeafSparseDensityTree(lam=2, categories={"a": ["x", "y", "z"]}).fit(X)
    assert np.exp(est.leaf_log_volumes_).sum() == 6
    with pytest.raises(ValueError, match="categories names columns"):
        LeafSparseDensityTree(categories={"c": [1]}).fit(X)


def test_bad_input_errors():
    X = np.array([[0.5, 1], [0.25, 2], [1.5, 1]])
    with pytest.raises(ValueError, match="non-integer numbers.*n_bins"):
        LeafSparseDensityTree().fit(X)
    est = LeafSparseDensityTree(n_bins=2).fit(X)
    assert len(est.categories_[0]) == 2
    with pytest.raises(ValueError, match="at least 2 samples"):
        LeafSparseDensityTree().fit(np.array([[1, 2]]))
    with pytest.raises(ValueError, match="0 sample"):
        LeafSparseDensityTree().fit(np.empty((0, 2)))
    with pytest.raises(ValueError, match="burn_in"):
        SparseDensityRuleList(n_iter=10, burn_in=10).fit(X)
    with pytest.raises(ValueError, match="min_leaf_size"):
        CategoricalDET(min_leaf_size=20, max_leaf_size=10).fit(np.array([[1], [2]]))


def test_time_limit_falls_back_to_annealing():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, size=(300, 12))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = LeafSparseDensityTree(lam=5, time_limit=0.5, random_state=0).fit(X)
    assert not est.optimal_ and 0 < est.gap_ < math.inf and est.n_leaves_ >= 1  # the bound's anytime gap


def test_numba_list_posterior_matches_exact_oracle():
    """The sampler's LP_III (numba, float volumes) equals ListModel's (exact integer volumes)."""
    from arboretum.density import _list_kernels as LK

    rng = np.random.default_rng(0)
    X, q = table(TITANIC), np.array([4, 2, 2])
    ants = mine_antecedents(X, q, 2)
    for exact in (False, True):
        model = ListModel(ants, q, len(X), 4.0, 1.5, 1.3, exact_dirichlet_normalizer=exact)
        args = (ants.bits, np.array(ants.boxes, dtype=np.uint64), ants.sizes, np.array(ants.available),
                np.array(model.full, dtype=np.uint64), len(X), 4.0, 1.5, 1.3, exact, True)
        for _ in range(100):
            rules = tuple(int(a) for a in rng.choice(len(ants.sizes), size=rng.integers(0, 8), replace=False))
            d = np.array(rules + (0,), dtype=np.int64)
            assert LK.list_log_posterior(d, len(rules), *args) == pytest.approx(model.log_posterior(rules), abs=1e-9)
            np.testing.assert_allclose(LK.list_volumes(d, len(rules), args[1], args[4]), model.volumes(rules))


# -- C17, C19 --------------------------------------------------------------------------------------
def test_c17_consistency_as_n_grows():
    """Samples of the 6-leaf tree's pmf: the fraction of seeds whose MAP (Method I, exact) has the true
    support and max |f_hat - f| < 2 / sqrt(n) never falls as n grows, and is 1 at n = 50000."""
    support = np.array(list(SIM_FULL))
    p = np.array(list(SIM_FULL.values()), dtype=float) / 1000
    grid = np.array(list(itertools.product(range(2), repeat=3)))
    true = np.array([p[i] if (i := next((k for k, s in enumerate(support) if tuple(s) == tuple(x)), -1)) >= 0
                     else 0.0 for x in grid])
    rates = []
    for n in (500, 5000, 50000):
        ok = 0
        for seed in range(4):
            X = support[np.random.default_rng(seed).choice(len(p), size=n, p=p)]
            f = np.exp(LeafSparseDensityTree(lam=5, categories=[[0, 1]] * 3).fit(X).score_samples(grid))
            ok += np.array_equal(f > 0, true > 0) and np.abs(f - true).max() < 2 / math.sqrt(n)
        rates.append(ok / 4)
    assert rates == sorted(rates) and rates[-1] == 1.0


def test_c19_sparser_than_the_histogram():
    """Titanic: 16 histogram bins against about 10 leaves for the three methods; a Crime-like domain of
    1440 configurations (q = 2, 3, 4, 5, 2, 6) drawn from a sparse tree: far fewer leaves than bins."""
    X = titanic_frame()
    bins = HistogramDensity().fit(X).n_bins_
    assert round(bins) == 16
    for est in (LeafSparseDensityTree(lam=5), BranchSparseDensityTree(lam=2),
                SparseDensityRuleList(lam=5, n_iter=2000, random_state=0)):
        assert est.fit(X).n_leaves_ <= 11
    rng = np.random.default_rng(0)
    q = [2, 3, 4, 5, 2, 6]
    n = 3000
    Xc = np.column_stack([rng.integers(0, k, size=n) for k in q])
    hot = rng.random(n) < 0.7  # a dense corner: x0 = 0, x1 = 1, x2 in {0, 1}
    Xc[hot, 0], Xc[hot, 1], Xc[hot, 2] = 0, 1, rng.integers(0, 2, size=hot.sum())
    cats = [list(range(k)) for k in q]
    assert round(HistogramDensity(categories=cats).fit(Xc).n_bins_) == 1440
    est = LeafSparseDensityTree(lam=8, categories=cats, solver="anneal", n_restarts=1, n_cycles=40,
                                random_state=0).fit(Xc)
    assert est.n_leaves_ <= 40


def _skewed_problem(rng) -> tuple[np.ndarray, np.ndarray]:
    """A small random domain (2-3 features of 2-3 categories) and 5-300 rows drawn from a skewed
    distribution over its cells (from near-uniform to concentrated)."""
    q = rng.integers(2, 4, size=rng.integers(2, 4))
    n = int(rng.integers(5, 300))
    skew = rng.dirichlet(np.ones(int(np.prod(q))) * rng.choice([0.2, 1.0, 5.0]))
    cells = np.array(list(itertools.product(*(range(int(k)) for k in q))))
    return cells[rng.choice(len(cells), size=n, p=skew)], q


def test_leaf_sparse_upper_bound_is_admissible():
    """The Method I bound (exact.leaf_sparse_upper_bound) is at least the exact MAP on random small domains,
    and an annealing fit's gap_ covers the distance to the exact optimum."""
    from arboretum.density.exact import branch_sparse_upper_bound, leaf_sparse_upper_bound

    rng = np.random.default_rng(1)
    for _ in range(12):
        X, q = _skewed_problem(rng)
        lam, alpha = float(rng.choice([0.5, 3.0, 12.0])), float(rng.choice([1.0, 2.0, 3.5]))
        exact = solve_exact(X, q, "leaf", lam, alpha, None).log_posterior
        assert leaf_sparse_upper_bound(X, q, lam, alpha) >= exact - 1e-9
        assert branch_sparse_upper_bound(X, q, lam, alpha) >= solve_exact(X, q, "branch", lam, alpha,
                                                                          None).log_posterior - 1e-9
        est = LeafSparseDensityTree(lam=lam, alpha=alpha, solver="anneal", n_restarts=1, n_cycles=5,
                                    trials_per_cycle=20, random_state=0,
                                    categories=[list(range(int(k))) for k in q]).fit(X)
        assert est.log_posterior_ + est.gap_ >= exact - 1e-9
    assert math.isnan(leaf_sparse_upper_bound(X, q, 3.0, 0.5))


def test_lagrangian_bound_is_admissible_and_certifies():
    """Method I's Lagrangian relaxation (exact.leaf_sparse_lagrangian): upper[k-1] >= the best tree with k
    leaves (the knapsack programme's table, every k), its tree's log posterior is exact, and when it
    certifies, its tree is the MAP."""
    from arboretum.density import _kernels as KK
    from arboretum.density.exact import leaf_sparse_lagrangian, region_tables
    from arboretum.density.posterior import leaf_sparse_constant, log_posterior_leaf_sparse

    rng = np.random.default_rng(5)
    n_certified = 0
    for _ in range(15):
        X, q = _skewed_problem(rng)
        n = len(X)
        lam, alpha = float(rng.choice([0.5, 3.0, 12.0])), float(rng.choice([0.3, 1.0, 2.0]))
        tables = region_tables(X, q)
        counts, logv, vol, strides, order = tables
        k_cap = int(np.prod(q))
        best = np.full((counts.shape[0], k_cap + 1), -np.inf)
        aj = np.full(best.shape, -1, dtype=np.int8)
        aa, ak = np.zeros(best.shape, dtype=np.int64), np.zeros(best.shape, dtype=np.int32)
        KK.leaf_sparse_dp(order, 0, len(order), counts, logv, vol, strides, q, k_cap, alpha, best, aj, aa, ak)
        root = int(sum(((1 << int(x)) - 1) * int(s) for x, s in zip(q, strides)))
        by_k = np.array([best[root, k] + leaf_sparse_constant(k, n, lam, alpha) for k in range(1, k_cap + 1)])
        lag = leaf_sparse_lagrangian(tables, q, float(n), lam, alpha, k_cap)
        assert np.all(lag.upper >= by_k - 1e-9)
        leaves = lag.root.leaves()
        cnt = [sum(all((int(b) >> int(v)) & 1 for b, v in zip(leaf.box, x)) for x in X) for leaf in leaves]
        logvs = [sum(math.log(int(b).bit_count()) for b in leaf.box) for leaf in leaves]
        assert log_posterior_leaf_sparse(cnt, logvs, lam, alpha) == pytest.approx(lag.lower, abs=1e-7)
        assert lag.lower <= by_k.max() + 1e-9
        if lag.certified:
            n_certified += 1
            assert lag.lower == pytest.approx(by_k.max(), abs=1e-7)
        # memory for the box tables but not for the knapsack: the anytime answer and its bound
        from arboretum.density.exact import exact_size

        ex = solve_exact(X, q, "leaf", lam, alpha, None, memory_limit=exact_size(q, "leaf", 1)[1] / 2**20)
        assert ex.optimal == lag.certified
        assert ex.log_posterior <= by_k.max() + 1e-9
        assert ex.optimal or (ex.upper >= by_k.max() - 1e-9 and ex.stop == "memory_limit")
    assert n_certified >= 5


def test_bounded_exact_certifies_beyond_the_plain_solver(monkeypatch):
    """Method I: with the plain exact solver out of reach, annealing + the bound on the number of leaves +
    the capped dynamic programme still certify the MAP (checked against the plain solver)."""
    import arboretum.density.trees as T

    rng = np.random.default_rng(3)
    X = rng.integers(0, 3, size=(200, 3))
    X[:120, 0] = 0
    plain = LeafSparseDensityTree(lam=4).fit(X)
    assert plain.optimal_
    monkeypatch.setattr(T, "EXACT_MAX_BOXES", 1)  # force annealing first
    est = LeafSparseDensityTree(lam=4, n_restarts=1, n_cycles=3, trials_per_cycle=10, random_state=0).fit(X)
    assert est.optimal_ and est.gap_ == 0.0
    assert est.log_posterior_ == pytest.approx(plain.log_posterior_, abs=1e-9)


def _lagrange_reference(tables: tuple, term: np.ndarray, q: np.ndarray, mu: float) -> tuple:
    """The Lagrangian programme written plainly: boxes in ``region_tables``' order (fewest categories
    first), every bipartition of every feature, ties to the fewest leaves then the first split met."""
    _, _, _, strides, order = tables
    val, nleaf, split = {}, {}, {}
    for r in order.tolist():
        v, kk, bj, ba = term[r] + mu, 1, -1, 0
        for j in range(len(q)):
            m = (r // int(strides[j])) % (1 << int(q[j]))
            if m & (m - 1) == 0:
                continue
            low = m & -m
            sub = rest = m ^ low
            while True:
                a = low | sub
                if a != m:
                    ra, rb = r + (a - m) * int(strides[j]), r - a * int(strides[j])
                    s, nl = val[ra] + val[rb], nleaf[ra] + nleaf[rb]
                    if s > v or (s == v and nl < kk):
                        v, kk, bj, ba = s, nl, j, a
                if sub == 0:
                    break
                sub = (sub - 1) & rest
        val[r], nleaf[r], split[r] = v, kk, (bj, ba)
    return val, nleaf, split


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_lagrange_grid_equals_the_plain_programme(seed):
    """The box tables (counts by a blocked zeta transform against a brute-force count; Method II's
    histogram bound against its definition) and Method I's fast Lagrangian pass (exact.leaf_terms's leaf
    terms; boxes in flat-index order, splits recomputed on demand) give bit for bit the leaf terms, values,
    leaf counts and first splits of the plain programme in region_tables' order."""
    from arboretum.density import _kernels as KK
    from arboretum.density.exact import histogram_log_likelihood, leaf_terms, region_tables
    from scipy.special import gammaln

    rng = np.random.default_rng(seed)
    q = rng.integers(1, 5, size=rng.integers(1, 4)).astype(np.int64)
    n = int(rng.integers(1, 60))
    X = np.column_stack([rng.integers(0, int(k), size=n) for k in q]).astype(np.int64)
    w = rng.integers(1, 4, size=n).astype(np.float64)
    alpha = float(rng.choice([0.5, 1.0, 2.0]))
    tables = region_tables(X, q, w)
    counts, logv, _, strides, order = tables
    boxes = [tuple((r // int(s)) % (1 << int(k)) for s, k in zip(strides, q)) for r in order.tolist()]
    inside = np.array([[all((m >> int(v)) & 1 for m, v in zip(box, x)) for x in X] for box in boxes])
    assert np.array_equal(counts[order], inside @ w)  # the zeta transform against a brute-force count
    plain = inside.sum(axis=1).astype(float)  # Method II's histogram bound, unweighted rows
    hist = histogram_log_likelihood(X, q, region_tables(X, q)[0])[order]
    uniq, n_x = np.unique(X, axis=0, return_counts=True)
    in_u = np.array([[all((m >> int(v)) & 1 for m, v in zip(box, x)) for x in uniq] for box in boxes])
    ref = [sum(c * math.log(c / nr) for c, ok in zip(n_x, row) if ok) for row, nr in zip(in_u, plain)]
    assert np.allclose(hist, ref, rtol=1e-12, atol=1e-9)
    term, strides2 = leaf_terms(X, q, alpha, w)
    with np.errstate(invalid="ignore"):
        ref_term = np.where(counts > 0, gammaln(counts + alpha) - math.lgamma(alpha) - counts * logv, 0.0)
    assert np.array_equal(strides, strides2) and np.array_equal(term[order], ref_term[order])
    for mu in (float(rng.normal(0, 3)), -float(rng.exponential(8))):
        val, nleaf = np.empty(term.shape[0]), np.empty(term.shape[0], dtype=np.int64)
        KK.leaf_sparse_lagrange_grid(term, strides, q, mu, val, nleaf)
        rv, rk, rs = _lagrange_reference(tables, ref_term, q, mu)
        for r in order.tolist():
            assert val[r] == rv[r] and nleaf[r] == rk[r]
            assert tuple(int(x) for x in KK.lagrange_split(r, term, strides, q, mu, val, nleaf)) == rs[r]
