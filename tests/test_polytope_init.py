"""Beyond the paper: ``init="linear"`` (every stump starts along one linear model's score) and
``early_stopping`` (each stump keeps its epoch of lowest held-out soft loss), with ``fit(..., groups=)``
holding out whole groups."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression, RidgeClassifierCV
from sklearn.metrics import roc_auc_score

from arboretum import ConvexPolytopeTreeClassifier, ConvexPolytopeTreeRegressor

torch = pytest.importorskip("torch")
from arboretum.polytope import model  # noqa: E402  (imports torch)
from arboretum.polytope.estimator import hold_out_groups  # noqa: E402
from polytope_helpers import quick, ring  # noqa: E402

D64 = torch.float64


def _level(seed: int = 0, n: int = 200, D: int = 3, F_: int = 2, R: int = 2, K: int = 3):
    """A level of ``F_`` stumps on a noisy linear problem, with fit rows and held-out rows."""
    gen = torch.Generator().manual_seed(seed)
    X = torch.randn((2 * n, D), generator=gen, dtype=D64)
    y = (X[:, 0] + 0.5 * torch.randn(2 * n, generator=gen, dtype=D64) > 0).long()
    Xt = torch.cat([torch.ones(2 * n, 1, dtype=D64), X], 1)
    Y = torch.nn.functional.one_hot(y, 2).to(D64)
    node = torch.arange(2 * n) % F_
    p = model.init_level(F_, R, K, D, Xt[:n], node[:n], 1.0, gen, D64)
    s = model.Settings(task="classification", lr=0.05, epochs=40, batch_size=64, steepness_inc=0.01,
                       use_prior=False, prior_weight=1.0, prior_warmup=0.5, gamma0=1.0, c0=1.0, a_beta=1e-6,
                       b_beta=1e-6)
    return p, s, gen, (Xt[:n], Y[:n]), (Xt[n:], Y[n:], node[n:])


def test_held_out_loss_is_the_per_node_level_loss():
    """Summed over the nodes, the per-node held-out losses are the level's grouped objective."""
    p, s, _, _, (Xv, Yv, node_v) = _level()
    per = model.held_out_loss(p, Xv, Yv, node_v, s)
    assert per.shape == p.t.shape
    pi = model.level_leaf_probs(Xv, node_v, p.B, p.rho, p.t, p.tau, p.mask)
    np.testing.assert_allclose(per.sum(0).numpy(), model.grouped_entropy(pi, Yv, node_v, 2).numpy(), rtol=1e-12)


def test_the_clock_is_read_between_batches_after_the_first_step():
    """A limit reached during an epoch stops it between two batches (on 500,000 rows an epoch takes
    about a second): the steps taken are kept (``p.steps`` counts them), with no history row and no
    annealing for the part epoch; the first step is always taken, so that a stopped stump has
    learned something to cut on."""
    p, s, gen, (X, Y), _ = _level()  # 200 rows in batches of 64: 4 batches per epoch
    calls = []

    def expired():
        calls.append((len(p.history), p.steps))
        return len(calls) == 7  # epoch 0: its start and batches 2-4; epoch 1: its start, batch 1; stop

    s.expired = expired
    before = [a.detach().clone() for a in p.trainable()]
    assert model.train(p, X, Y, s, gen) == "time_limit"
    assert calls == [(0, 0), (0, 1), (0, 2), (0, 3), (1, 4), (1, 4), (1, 5)]
    assert len(p.history) == 1 and p.steps == 5
    assert all(not torch.equal(a, b) for a, b in zip(p.trainable(), before))
    tau_after_one = p.tau.clone()
    # without the stop: epoch 1's history row and annealing
    p2, s2, gen2, (X2, Y2), _ = _level()
    s2.epochs = 2
    assert model.train(p2, X2, Y2, s2, gen2) == "completed"
    assert len(p2.history) == 2 and p2.steps == 8 and torch.all(p2.tau > tau_after_one)
    # stopped before the first step: nothing learned
    p3, s3, gen3, (X3, Y3), _ = _level()
    s3.expired = lambda: True
    assert model.train(p3, X3, Y3, s3, gen3) == "time_limit" and p3.steps == 0 and not p3.history


def test_early_stopping_keeps_each_units_best_epoch(monkeypatch):
    """Each unit (node, restart) ends with its parameters of the epoch of its lowest held-out loss, the
    start included (ties to the later epoch); training stops after ``patience`` epochs with no unit
    improving.  The held-out losses are scripted so that the best epochs are known."""
    p, s, gen, (X, Y), monitor = _level()
    script = iter([[[1.0, 1.0], [1.0, 1.0]],  # before the first epoch
                   [[2.0, 0.5], [2.0, 2.0]],  # epoch 0: unit (0, 1) improves
                   [[2.0, 0.7], [0.9, 2.0]],  # epoch 1: unit (1, 0) improves
                   [[5.0, 5.0], [5.0, 5.0]], [[5.0, 5.0], [5.0, 5.0]], [[5.0, 5.0], [5.0, 5.0]]])
    monkeypatch.setattr(model, "held_out_loss", lambda *args: torch.tensor(next(script), dtype=D64))
    names = ("B", "rho", "t", "tau")
    snaps = [{k: getattr(p, k).detach().clone() for k in names}]  # the start, then after every epoch
    s.progress = lambda *args: snaps.append({k: getattr(p, k).detach().clone() for k in names})
    assert model.train(p, X, Y, s, gen, monitor, patience=2) == "completed"
    assert len(p.history) == 4  # epochs 2 and 3 improve nothing
    best = {(0, 0): 0, (0, 1): 1, (1, 0): 2, (1, 1): 0}  # index into snaps
    for (f, u), i in best.items():
        for k in names:
            assert torch.equal(getattr(p, k).detach()[f, u], snaps[i][k][f, u]), (f, u, k)
    assert not torch.equal(snaps[1]["B"], snaps[0]["B"])  # training did move them


def test_early_stopping_on_real_held_out_rows_never_ends_worse_than_it_started():
    """On held-out rows of the same distribution, each unit's final held-out loss is at most its start
    and, here, strictly lower: the stumps learn."""
    p, s, gen, (X, Y), monitor = _level(seed=1)
    first = model.held_out_loss(p, *monitor, s)
    assert model.train(p, X, Y, s, gen, monitor, patience=5) == "completed"
    final = model.held_out_loss(p, *monitor, s)
    assert bool((final < first).all())


def test_linear_directions_seed_the_experts():
    """``init_level``'s experts start at the given directions (cycled over restarts and experts) plus a
    perturbation of at most a tenth of the paper's initial range."""
    gen = torch.Generator().manual_seed(0)
    D, K, R = 4, 3, 2
    Xt = torch.cat([torch.ones(50, 1), torch.randn((50, D), generator=gen)], 1)
    directions = torch.randn((2, D + 1), generator=gen)
    p = model.init_level(1, R, K, D, Xt, torch.zeros(50, dtype=torch.long), 1.0, gen, torch.float32,
                         directions=directions)
    for u in range(R):
        for k in range(K):
            gap = (p.B[0, u, k] - directions[(u * K + k) % 2]).abs().max()
            assert float(gap) <= 0.1 / np.sqrt(D) + 1e-6


def test_linear_init_is_cross_validated_ridge_in_logit_units():
    """The directions are scikit-learn's ridge classifier (penalty by leave-one-out CV) on the
    standardised columns, bias first, one per class for three classes, each rescaled by a
    one-feature logistic regression of its class on its score."""
    X, y = load_iris(return_X_y=True)
    Xs = (X - X.mean(0)) / X.std(0)
    est = ConvexPolytopeTreeClassifier(init="linear")
    est._task = "classification"
    est._mean, est._scale = X.mean(0), X.std(0)  # what fit sets; the method standardises its rows
    got = est._linear_directions(X, y, seed=0)
    ridge = RidgeClassifierCV(alphas=np.logspace(-3, 4, 8)).fit(Xs, y)
    assert got.shape == (3, 5)
    for j in range(3):
        cal = LogisticRegression().fit(ridge.decision_function(Xs)[:, j : j + 1], y == j)
        want = np.r_[ridge.intercept_[j], ridge.coef_[j]] * cal.coef_[0, 0]
        want[0] += cal.intercept_[0]
        np.testing.assert_allclose(got[j], want, rtol=1e-8, atol=1e-10)
    # in logit units: the calibrated score is a logistic regression's decision value for its class
    two = (y == 2).astype(int)
    w = est._linear_directions(X, two, seed=0)[0]
    assert roc_auc_score(two, Xs @ w[1:] + w[0]) > 0.95


def test_linear_start_without_training_cuts_along_the_linear_score():
    """With a negligible step size a linear start's root cut is a threshold of the ridge score: the
    two sides are separated by a value of that score."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 6))
    y = (X @ np.array([1.0, -2.0, 0.5, 0, 0, 0]) + rng.normal(scale=0.5, size=300) > 0).astype(int)
    est = quick(max_depth=1, init="linear", learning_rate=1e-9, epochs=1, max_facets=3, refine=False,
                scaling="feature").fit(X, y)
    Xs = (X - X.mean(0)) / X.std(0)
    score = RidgeClassifierCV(alphas=np.logspace(-3, 4, 8)).fit(Xs, y).decision_function(Xs)
    leaf = est.tree_.apply(X)
    left = leaf == leaf.min()
    assert 0 < left.sum() < left.size
    separation = roc_auc_score(left, score)  # 0 or 1: a threshold of the score
    assert max(separation, 1 - separation) > 0.99


@pytest.mark.parametrize("make", [
    lambda: (ConvexPolytopeTreeClassifier, *load_iris(return_X_y=True)),
    lambda: (ConvexPolytopeTreeRegressor, *ring(300, 1)[:1], ring(300, 1)[0][:, 0] ** 2),
])
def test_linear_init_and_early_stopping_fit_every_task(make):
    """Multiclass, regression: a linear start and early stopping fit, predict and stay deterministic."""
    cls, X, y = make()
    kw = dict(max_depth=2, init="linear", early_stopping=0.2, n_iter_no_change=3, epochs=20, refine_epochs=5,
              n_restarts=1, max_facets=4, random_state=0, time_limit=None)
    a, b = cls(**kw).fit(X, y), cls(**kw).fit(X, y)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    assert a.score(X, y) > (0.8 if cls is ConvexPolytopeTreeClassifier else 0.5)


@pytest.mark.parametrize("bad, message", [
    (dict(init="lda"), "init"),
    (dict(early_stopping=1.0), "early_stopping"),
    (dict(early_stopping=0), "early_stopping"),
    (dict(n_iter_no_change=0), "n_iter_no_change"),
])
def test_bad_init_and_early_stopping_are_refused(bad, message):
    X, y = ring(50, 0)
    with pytest.raises(ValueError, match=message):
        ConvexPolytopeTreeClassifier(**bad).fit(X, y)


# -- groups: whole groups held out ------------------------------------------------------------

@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 12), min_size=2, max_size=60), st.floats(0.05, 0.95), st.integers(0, 2**31 - 1))
def test_hold_out_groups_takes_whole_groups_up_to_twice_the_share(groups, share, seed):
    """The mask is a union of whole groups, never all of them, at most twice the share of the rows, and
    at least the share unless every group left would pass that cap or only one group is left."""
    g = np.array(groups)
    out = hold_out_groups(g, share, np.random.RandomState(seed).permutation)
    for label in np.unique(g):
        assert out[g == label].all() or not out[g == label].any()
    assert not out.all()
    assert out.sum() <= 2 * share * g.size
    if out.sum() < share * g.size:
        left = np.unique(g[~out])
        sizes = np.array([(g == label).sum() for label in left])
        assert left.size == 1 or np.all(out.sum() + sizes > 2 * share * g.size)


def _grouped(n: int = 240, n_groups: int = 12):
    X, y = ring(n, 3)
    return X, y, np.repeat(np.array([f"site-{k}" for k in range(n_groups)]), n // n_groups)


def test_groups_make_early_stopping_hold_out_whole_groups(monkeypatch):
    """With ``groups``, every node's held-out rows (and refinement's) are whole groups of that node's rows."""
    from arboretum.polytope import estimator

    X, y, groups = _grouped()
    codes = np.unique(groups, return_inverse=True)[1]
    seen = []
    real = estimator._ConvexPolytopeTreeBase._hold_out

    def spy(self, idx):
        fit, out = real(self, idx)
        if self._groups is not None:  # not the tiny fits of the first fit's warm-up
            seen.append((idx, out))
        return fit, out

    monkeypatch.setattr(estimator._ConvexPolytopeTreeBase, "_hold_out", spy)
    quick(max_depth=2, early_stopping=0.25, n_iter_no_change=3).fit(X, y, groups=groups)
    assert seen
    for idx, out in seen:
        g = codes[idx]
        if np.unique(g).size > 1:
            assert out.size and set(codes[out]).isdisjoint(set(g[~np.isin(idx, out)]))


@pytest.mark.parametrize("early_stopping,with_groups", [(0.3, True), (0.3, False), (None, True)])
def test_held_out_groups_choose_the_restart(monkeypatch, early_stopping, with_groups):
    """With ``early_stopping`` and ``groups``, of a node's restarts the one whose cut does best on the
    held-out groups is kept (here an arbitrary score per restart decides), not the best on the
    training rows; without groups (or without early stopping) the held-out score is never asked for."""
    from arboretum.polytope import estimator

    rng = np.random.default_rng(1)
    seen = []

    def scored(self, committee, fit_rows, held_rows, t):
        assert held_rows.size and not np.isin(held_rows, fit_rows).any()
        seen.append((float(rng.random()), committee))
        return seen[-1][0]

    monkeypatch.setattr(estimator._ConvexPolytopeTreeBase, "_held_out_cost", scored)
    X, y = ring(600, 0)
    groups = np.arange(600) // 10 if with_groups else None
    est = quick(max_depth=1, n_restarts=4, early_stopping=early_stopping, refine=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # groups unused without early stopping
        m = est.fit(X, y, groups=groups)
    if early_stopping is None or not with_groups:
        assert seen == []
        return
    assert len(seen) >= 2  # the restarts whose cut lowers the root's impurity
    kept = min(seen, key=lambda s: s[0])[1]
    assert np.array_equal(kept["coefs"], m.tree_.polytopes[0]["coefs"])


def _linear_problem(n: int = 600, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    return X, (X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.normal(size=n) > 0).astype(int), np.arange(n) // 10


@pytest.mark.parametrize("prefer_linear", [True, False])
def test_the_linear_start_is_a_candidate_that_the_held_out_groups_can_keep(monkeypatch, tmp_path, prefer_linear):
    """With ``init="linear"``, ``early_stopping`` and ``groups``, the untrained linear start (one expert
    along the linear model's score, cut by the threshold search) is scored beside the trained
    restarts and kept where the held-out groups prefer it; refinement, printing and saving then take
    its one-expert committee as any other.  Where they prefer a trained stump, that one is kept."""
    import arboretum
    from arboretum.polytope import estimator

    scored = []

    def held(self, committee, fit_rows, held_rows, t):
        scored.append(committee["r"].size)
        return float((committee["r"].size == 1) != prefer_linear)

    monkeypatch.setattr(estimator._ConvexPolytopeTreeBase, "_held_out_cost", held)
    X, y, groups = _linear_problem()
    m = quick(max_depth=2, n_restarts=2, init="linear", early_stopping=0.3).fit(X, y, groups=groups)
    assert 1 in scored and max(scored) == 8  # the linear start and the trained committees of 8 experts
    root = m.tree_.polytopes[0]
    if not prefer_linear:
        assert root["r"].size == 8
        return
    assert root["r"].size == 1 and root["facet"].tolist() == [1.0]
    scale = X.std(0)  # the linear model's direction on the raw columns, up to its positive scale
    want = RidgeClassifierCV(alphas=np.logspace(-3, 4, 8)).fit((X - X.mean(0)) / scale, y).coef_.ravel() / scale
    got = root["coefs"][0]
    assert got @ want / (np.linalg.norm(got) * np.linalg.norm(want)) > 0.99  # refinement may turn it a little
    assert "facet" in m.export_text()
    arboretum.save(m, tmp_path / "m.json")
    np.testing.assert_array_equal(arboretum.load(tmp_path / "m.json").predict_proba(X), m.predict_proba(X))


def test_the_linear_start_is_no_candidate_without_groups_or_linear_init(monkeypatch):
    """Without ``groups`` the trained stumps alone compete (on the training impurity), and with
    ``init="random"`` there is no linear start to score."""
    from arboretum.polytope import estimator

    calls = []
    real = estimator._ConvexPolytopeTreeBase._linear_candidates
    monkeypatch.setattr(estimator._ConvexPolytopeTreeBase, "_linear_candidates",
                        lambda self, K: calls.append(K) or real(self, K))
    X, y, groups = _linear_problem()
    m = quick(max_depth=1, n_restarts=2, init="linear", early_stopping=0.3, refine=False).fit(X, y)
    assert calls == [] and m.tree_.polytopes[0]["r"].size == 8
    calls.clear()
    m = quick(max_depth=1, n_restarts=2, early_stopping=0.3, refine=False).fit(X, y, groups=groups)
    assert calls == [8] and m.tree_.polytopes[0]["r"].size == 8


def test_held_out_cost_is_the_impurity_of_the_cut_found_on_the_other_rows():
    """``_held_out_cost``: the cut comes from the rows trained on; its impurity per row on the held-out
    rows, +inf when the rows trained on give no cut (too few for two leaves)."""
    X, y = ring(400, 1)
    m = quick(max_depth=1, early_stopping=0.25).fit(X, y)
    committee = m.tree_.polytopes[0]
    est = quick(max_depth=1)
    est._E, est._y, est._task, est._n_classes = X, y, "classification", 2
    fit_rows, held_rows = np.arange(300), np.arange(300, 400)
    from arboretum.polytope import search
    from arboretum.tree import polytope_intensity

    cut, _ = est._cut(polytope_intensity(committee, X[fit_rows]), y[fit_rows], 0.0)
    left = polytope_intensity(committee, X[held_rows]) <= cut
    want = (search.impurity(y[held_rows][left], "classification", 2)
            + search.impurity(y[held_rows][~left], "classification", 2)) / 100
    assert est._held_out_cost(committee, fit_rows, held_rows, 0.0) == pytest.approx(want)
    assert est._held_out_cost(committee, fit_rows[:1], held_rows, 0.0) == np.inf  # one row: no cut


def test_groups_make_the_validation_share_whole_groups():
    X, y, groups = _grouped()
    est = quick(validation_fraction=0.25)
    fit, val = est._validation_split(y, 7, groups)
    assert set(groups[fit]).isdisjoint(groups[val]) and val.size <= 0.5 * y.size and val.size >= 0.25 * y.size
    clf = quick(max_depth=2, validation_fraction=0.25).fit(X, y, groups=groups)
    assert clf.best_depth_ <= 2


def test_groups_are_checked():
    X, y, groups = _grouped()
    with pytest.raises(ValueError, match="groups must be one-dimensional"):
        quick(early_stopping=0.2).fit(X, y, groups=groups[:-1])
    with pytest.raises(ValueError, match="holds out no whole group"):
        quick(validation_fraction=0.2).fit(X, y, groups=np.zeros(len(y)))
    with pytest.raises(ValueError, match="NaN"):
        quick(early_stopping=0.2).fit(X, y, groups=np.full(len(y), np.nan))
    with pytest.warns(UserWarning, match="no effect"):
        quick(max_depth=1).fit(X, y, groups=groups)
    with pytest.warns(UserWarning, match="no effect"):  # X_val replaces validation_fraction
        quick(max_depth=1, validation_fraction=0.2).fit(X, y, X_val=X[:20], y_val=y[:20], groups=groups)
    reg = ConvexPolytopeTreeRegressor(max_depth=1, epochs=5, refine_epochs=2, n_restarts=1, max_facets=2,
                                      early_stopping=0.2, random_state=0, time_limit=None)
    a = reg.fit(X, X[:, 0], groups=groups).predict(X)
    np.testing.assert_array_equal(a, reg.fit(X, X[:, 0], groups=groups).predict(X))


@pytest.mark.parametrize("shape", [(200_000, 3), (70_000, 20), (65_536, 4), (100_000, 1), (10, 5)])
def test_column_std_by_blocks_equals_numpy_bit_for_bit(shape):
    from arboretum.polytope.estimator import _column_std

    rng = np.random.default_rng(shape[0])
    E = rng.normal(size=shape) * rng.random(shape[1]) * 100 + rng.normal(size=shape[1]) * 1e3
    assert np.array_equal(_column_std(E), E.std(0))
    assert np.array_equal(_column_std(E[::2]), E[::2].std(0))  # not C-ordered: numpy itself
