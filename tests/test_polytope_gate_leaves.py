"""Convex polytope trees: the reference code's gate (``gate="reference"``, spec §3.1) and best-first
growth (``max_leaves``, spec §3.5)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import arboretum
from arboretum import ConvexPolytopeTreeClassifier, ConvexPolytopeTreeRegressor
from arboretum.exceptions import InvalidParameterError
from arboretum.polytope import estimator as est_mod
from arboretum.polytope import search
from arboretum.tree import polytope_intensity

torch = pytest.importorskip("torch")
from arboretum.polytope import model  # noqa: E402  (imports torch)
from polytope_helpers import quick, ring, t64  # noqa: E402

D64 = torch.float64


# ---------------------------------------------------------------------------
# gate="reference"
# ---------------------------------------------------------------------------


def test_reference_gate_oracle():
    # spec §5.1's committee: z = (0.5, 1.0), so lambda_bar = (softplus(0.5) + softplus(1)) / 2 = 1.143669
    B = t64([[[[0.0, 1.0, 0.0], [-1.0, 0.0, 2.0]]]])
    Z = t64([[1.0, 0.5, 1.0]]) @ B[0, 0].T
    ones = torch.ones(2, dtype=D64)
    for a, c, tau, want in [(-2.0, -1.0, 1.0, 0.783696), (1.5, 2.0, 3.0, 0.701298)]:
        g = model.committee_gate(Z, ones, t64(c), t64(tau), a=t64(a))
        assert g.item() == pytest.approx(want, abs=1e-6)
        lam_bar = torch.nn.functional.softplus(Z).mean(-1)
        assert model.reference_gate(lam_bar, t64(a), t64(c), t64(tau)).item() == pytest.approx(want, abs=1e-6)
    # a < 0: the paper's gate with r_k = |a| / K and t = -c
    rho = torch.full((2,), math.log(2.0 / 2))
    paper = model.gate((torch.nn.functional.softplus(Z) * torch.exp(rho)).sum(-1), t64(1.0), t64(1.0))
    assert paper.item() == pytest.approx(0.783696, abs=1e-6)


@pytest.mark.parametrize("sign", [-1.0, 1.0])
def test_reference_export_routes_like_the_gate(sign):
    """``reference_as_paper``: the exported split ``lambda > t`` (children swapped when a > 0) sends a
    sample right exactly when the reference gate does (g > 1/2), for either sign of a."""
    rng = np.random.default_rng(1)
    K, D = 4, 3
    B = rng.normal(size=(K, D + 1))
    X = rng.normal(size=(500, D))
    a, c = sign * 0.7, 1.3 * sign
    g = model.reference_gate(torch.nn.functional.softplus(t64(np.c_[np.ones(500), X]) @ t64(B).T).mean(-1),
                             t64(a), t64(c), t64(2.0), clamp=False).numpy()
    rho, t, swap = search.reference_as_paper(a, c, K)
    assert swap == (a > 0)
    committee = search.raw_committee(B, rho, np.ones(K), np.zeros(D), np.ones(D))
    outside = polytope_intensity(committee, X) > t
    np.testing.assert_array_equal(outside, (g > 0.5) if not swap else (g < 0.5))
    a2, c2 = search.paper_as_reference(rho, t)  # the canonical (a < 0) form of the same split
    assert a2 == pytest.approx(-abs(a)) and c2 == pytest.approx(-t)


def test_reference_gate_gradients_match_finite_differences():
    gen = torch.Generator().manual_seed(0)
    Xt = torch.cat([torch.ones(6, 1, dtype=D64), torch.randn(6, 2, generator=gen, dtype=D64)], 1)
    right, left = (t64(m) for m in model.path_matrices([[(0, False)], [(0, True)]], 1, 2))
    Y = torch.nn.functional.one_hot(torch.tensor([0, 1, 1, 0, 1, 0]), 2).to(D64)
    mask = torch.ones((1, 1, 3), dtype=D64)

    def loss(B, a, c):
        Z = (Xt @ B.reshape(3, 3).T).reshape(-1, 1, 1, 3)
        g = model.committee_gate(Z, mask, c, t64([[1.5]]), a=a)
        return model.entropy_loss(torch.exp(model.leaf_log_probs(g, right, left)), Y)

    B = torch.randn((1, 1, 3, 3), generator=gen, dtype=D64, requires_grad=True)
    a = t64([[-0.8]]).requires_grad_(True)
    c = t64([[0.4]]).requires_grad_(True)
    assert torch.autograd.gradcheck(loss, (B, a, c), eps=1e-6, atol=1e-6)


def test_prior_of_the_reference_gate_has_no_weight_term():
    B = torch.randn((1, 2, 3, 4), dtype=D64)
    rho = torch.randn((1, 2, 3), dtype=D64)
    no_r = model.prior_penalty(B, None, 1.0, 1.0, 0.5, 0.1)
    both = model.prior_penalty(B, rho, 1.0, 1.0, 0.5, 0.1)
    r_only = model.prior_penalty(torch.zeros_like(B), rho, 1.0, 1.0, 0.5, 0.1)
    assert torch.allclose(both, no_r + r_only)


def _torch_leaf(p, Xt: torch.Tensor) -> np.ndarray:
    """Leaf index of every row under the hard rule g > 1/2 of refinement parameters ``p`` (float64)."""
    node = torch.zeros(Xt.shape[0], dtype=torch.long)
    leaf = torch.full((Xt.shape[0],), -1, dtype=torch.long)
    B, a, c = p.B[0].to(D64), p.a[0].to(D64), p.t[0].to(D64)
    active = torch.ones(Xt.shape[0], dtype=torch.bool)
    while active.any():
        rows = torch.nonzero(active).flatten()
        m = node[rows]
        Z = torch.einsum("nd,nkd->nk", Xt[rows].to(D64), B[m])
        g = model.reference_gate(torch.nn.functional.softplus(Z).mean(-1), a[m], c[m], 1.0, clamp=False)
        child = p.children[m, (g > 0.5).long()]
        done = child < 0
        leaf[rows[done]] = -1 - child[done]
        node[rows[~done]] = child[~done]
        active[rows[done]] = False
    return leaf.numpy()


@pytest.mark.parametrize("flip", [False, True])
def test_reference_refined_tree_exports_the_torch_routing(monkeypatch, flip):
    """The refined committees, as ``POLYTOPE`` splits, route every training row to the leaf that the
    torch model's hard gates (g > 1/2) send it to; ``flip`` negates every (a, c) at the end of the
    refinement (the same gates with the other child on the right), so that a > 0 and the export
    swaps the children."""
    seen = {}
    train = model.train

    def spy(p, Xt, target, s, gen, *monitor):
        status = train(p, Xt, target, s, gen, *monitor)
        if p.children is not None and flip:
            with torch.no_grad():
                p.a.neg_(), p.t.neg_()
        seen["p"], seen["Xt"] = p, Xt
        return status

    refine = est_mod._ConvexPolytopeTreeBase._refine

    def capture(self, nodes):
        out = refine(self, nodes)
        leaves = [i for i, nd in enumerate(nodes) if nd.committee is None]
        mine = []
        for x in self._E:
            i = 0
            while out[i].committee is not None:
                i = out[i].right if polytope_intensity(out[i].committee, x[None])[0] > out[i].t else out[i].left
            mine.append(leaves.index(i))
        seen["mine"] = np.array(mine)
        return out

    monkeypatch.setattr(model, "train", spy)
    monkeypatch.setattr(est_mod._ConvexPolytopeTreeBase, "_refine", capture)
    X, y = ring(300, 2)
    quick(max_depth=2, gate="reference").fit(X, y)
    assert (seen["p"].a > 0).all() == flip and seen["p"].children is not None
    theirs = _torch_leaf(seen["p"], seen["Xt"])
    assert np.mean(seen["mine"] == theirs) >= 0.995  # float32 parameters: rows within rounding of a boundary


def test_reference_gate_fits_saves_and_prints(tmp_path):
    X, y = ring(600, 0)
    clf = quick(max_depth=2, gate="reference", epochs=100, refine_epochs=10, n_restarts=2,
                learning_rate=0.03).fit(X, y)
    assert clf.score(X, y) > 0.8
    for i, p in clf.tree_.polytopes.items():  # tied weights: r_k = |a| / K
        np.testing.assert_allclose(p["r"], p["r"][0])
    arboretum.save(clf, tmp_path / "ref.json")
    loaded = arboretum.load(tmp_path / "ref.json")
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))
    assert loaded.get_params()["gate"] == "reference"
    assert loaded.export_text() == clf.export_text() and "facet" in clf.export_text()


def test_reference_gate_regressor_and_half_threshold():
    X, _ = ring(300, 3)
    reg = ConvexPolytopeTreeRegressor(max_depth=1, gate="reference", epochs=30, n_restarts=1, random_state=0,
                                      time_limit=None).fit(X, np.hypot(*X.T))
    assert reg.tree_.n_leaves == 2 and reg.score(X, np.hypot(*X.T)) > 0.3
    X, y = ring(300, 4)
    clf = quick(max_depth=1, gate="reference", threshold_mode="half", refine=False).fit(X, y)
    assert clf.tree_.n_leaves <= 2


# ---------------------------------------------------------------------------
# max_leaves (best-first growth)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_max_leaves_bounds_the_leaves(k):
    X, y = ring(300, 1)
    clf = quick(max_depth=6, max_leaves=k, epochs=10, refine=False).fit(X, y)
    assert clf.tree_.n_leaves <= k
    if k == 1:
        assert clf.tree_.n_leaves == 1 and clf.epoch_history_["epoch"] == []


def test_max_depth_still_applies():
    X, y = ring(300, 1)
    clf = quick(max_depth=1, max_leaves=8, epochs=10, refine=False).fit(X, y)
    assert clf.tree_.n_leaves <= 2 and clf.tree_.depth.max() <= 1


def _gain(tree, i: int) -> float:
    """n H(node) - sum over the children of n H(child), from the tree's class counts (nats)."""
    def nh(j):
        c = tree.counts[j]
        q = c[c > 0] / c.sum()
        return -c.sum() * float((q * np.log(q)).sum())
    return nh(i) - nh(tree.children_left[i]) - nh(tree.children_right[i])


def test_best_first_splits_the_leaf_with_the_larger_gain():
    """Left of x0 = 0 the label is the sign of x1 (a large gain for the second split), right of it
    noise.  Both children of the root get the same stumps as in level-by-level growth to depth 2
    (same seed, same order of random draws): best-first with 3 leaves keeps the split of the child
    whose gain is larger there, and only that one."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(400, 2))
    y = np.where(X[:, 0] < 0, X[:, 1] > 0, rng.random(400) < 0.3).astype(int)
    kw = dict(epochs=30, n_restarts=1, max_facets=2, refine=False, learning_rate=0.05)
    full = quick(max_depth=2, **kw).fit(X, y).tree_
    best = quick(max_depth=5, max_leaves=3, **kw).fit(X, y).tree_
    assert full.n_leaves == 4 and best.n_leaves == 3
    kids = [full.children_left[0], full.children_right[0]]
    gains = [_gain(full, j) for j in kids]
    assert abs(gains[0] - gains[1]) > 1.0  # no near tie (9.7 against 7.6 nats here)
    winner = kids[int(np.argmax(gains))]
    side = "left" if winner == kids[0] else "right"
    split = getattr(best, f"children_{side}")[0]
    assert best.children_left[split] >= 0  # the winner is split ...
    other = getattr(best, f"children_{'right' if side == 'left' else 'left'}")[0]
    assert best.children_left[other] < 0  # ... and the other child is a leaf
    np.testing.assert_array_equal(best.apply(X) == split, full.apply(X) == winner)  # same partitions
    assert best.threshold[split] == full.threshold[winner]


def test_max_leaves_with_validation_selects_the_number_of_leaves():
    X, y = ring(400, 2)
    clf = quick(max_depth=6, max_leaves=4, epochs=10, validation_fraction=0.3).fit(X, y)
    scores = clf.validation_scores_
    assert scores["n_leaves"] == list(range(1, len(scores["greedy"]) + 1)) and len(scores["greedy"]) <= 4
    assert clf.best_n_leaves_ == clf.tree_.n_leaves <= 4
    assert clf.best_n_leaves_ == scores["n_leaves"][int(np.argmax(scores["greedy"]))] or clf.refined_


def test_regressor_best_first():
    X, _ = ring(300, 3)
    reg = ConvexPolytopeTreeRegressor(max_depth=4, max_leaves=3, epochs=10, n_restarts=1, refine=False,
                                      random_state=0, time_limit=None).fit(X, np.hypot(*X.T))
    assert 2 <= reg.tree_.n_leaves <= 3


@pytest.mark.parametrize("params, match", [({"max_leaves": 0}, "max_leaves"), ({"max_leaves": 2.5}, "max_leaves"),
                                           ({"gate": "noisy"}, "gate")])
def test_parameters_are_checked(params, match):
    with pytest.raises(InvalidParameterError, match=match):
        ConvexPolytopeTreeClassifier(**params).fit(np.zeros((4, 1)), [0, 1, 0, 1])
