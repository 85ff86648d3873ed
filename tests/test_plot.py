"""arboretum.plot: every function renders to PNG (Agg) and draws what it claims.

Checks the drawn artists against the numbers behind them: node boxes against
the tree, bar lengths against the exact (PCFG) or sampled posterior summaries,
the anytime lines against the history, the decision regions against
``predict``; plus the layout (no overlapping node boxes at 30 leaves) and the
errors for bad input.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from sklearn.datasets import load_iris  # noqa: E402
from sklearn.exceptions import NotFittedError  # noqa: E402

from arboretum import (  # noqa: E402
    MAPTreeClassifier,
    MAPTreeRegressor,
    MCMCTreeSampler,
    PCFGTreeClassifier,
    SMCTreeSampler,
    load_dataset,
)
from arboretum.plot import (  # noqa: E402
    HISTORY_FIELDS,
    plot_anytime,
    plot_decision_regions,
    plot_split_inclusion,
    plot_tree,
    plot_tree_sizes,
)
from arboretum.tree import LEAF, THRESHOLD, TreeBuilder  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
HISTORY_DTYPE = [("time", "f8"), ("n_expansions", "i8"), ("log_posterior", "f8"), ("log_posterior_bound", "f8")]


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _save(ax, tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.png"
    ax.figure.savefig(path, dpi=60)
    assert path.stat().st_size > 1000 and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return path


# ---------------------------------------------------------------------------
# fitted models (module scope: fitted once)
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def iris_frame():
    iris = load_iris(as_frame=True)
    return iris.data, np.asarray(iris.target_names[iris.target])


@pytest.fixture(scope="module")
def maptree_iris(iris_frame):
    X, y = iris_frame
    return MAPTreeClassifier(time_limit=10).fit(X, y)


@pytest.fixture(scope="module")
def pcfg_iris(iris_frame):
    X, y = iris_frame
    return PCFGTreeClassifier().fit(X, y)


@pytest.fixture(scope="module")
def binary_data():
    X, y = load_dataset("hepatitis", return_X_y=True)
    return X[:, :8], y


@pytest.fixture(scope="module")
def mcmc(binary_data):
    return MCMCTreeSampler(n_iterations=3000, burn_in=500, random_state=0).fit(*binary_data)


@pytest.fixture(scope="module")
def smc(binary_data):
    return SMCTreeSampler(n_particles=200, random_state=0).fit(*binary_data)


@pytest.fixture(scope="module")
def regressor():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 6, size=(200, 3))
    y = np.where(X[:, 0] <= 2, 1.0, np.where(X[:, 1] <= 3, 3.0, 6.0)) + rng.normal(0, 0.5, 200)
    return MAPTreeRegressor().fit(X, y), X, y


def _random_tree(n_leaves: int, seed: int, task: str = "classification"):
    """A random tree of ``n_leaves`` leaves with long feature names (a layout stress test)."""
    rng = np.random.default_rng(seed)
    n_features = 6
    classes = None if task == "regression" else np.array(["alpha", "beta", "gamma"])
    b = TreeBuilder(n_features, classes=classes, task=task,
                    feature_names=[f"feature number {j}" for j in range(n_features)])

    def node(depth):
        if task == "regression":
            return b.add_node([int(rng.integers(1, 100))], [float(rng.normal())], depth)
        c = rng.integers(0, 60, 3).astype(float)
        return b.add_node(c, (c + 1) / (c.sum() + 3), depth)

    leaves = [node(0)]
    depth = {leaves[0]: 0}
    while len(leaves) < n_leaves:
        i = leaves.pop(int(rng.integers(len(leaves))))
        left, right = node(depth[i] + 1), node(depth[i] + 1)
        depth[left] = depth[right] = depth[i] + 1
        b.set_split(i, THRESHOLD, int(rng.integers(n_features)), float(np.round(rng.normal(), 3)), left, right)
        leaves += [left, right]
    return b.build()


def _node_texts(ax):
    return {int(t.get_gid()[5:]): t for t in ax.texts if (t.get_gid() or "").startswith("node-")}


def _bars(ax):
    return [p for p in ax.patches if isinstance(p, matplotlib.patches.Rectangle)]


# ---------------------------------------------------------------------------
# import behaviour
# ---------------------------------------------------------------------------


def test_importing_arboretum_does_not_import_matplotlib():
    code = ("import sys, arboretum, arboretum.plot; "
            "assert not [m for m in sys.modules if m.startswith('matplotlib')], 'matplotlib imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_missing_matplotlib_says_how_to_install(monkeypatch, maptree_iris):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=re.escape('pip install "arboretum[plot]"')):
        plot_tree(maptree_iris)


# ---------------------------------------------------------------------------
# plot_tree
# ---------------------------------------------------------------------------


def test_plot_tree_of_maptree_on_iris(maptree_iris, tmp_path):
    tree = maptree_iris.tree_
    ax = plot_tree(maptree_iris)
    _save(ax, tmp_path, "tree")
    nodes = _node_texts(ax)
    assert sorted(nodes) == list(range(tree.n_nodes))
    for i, text in nodes.items():
        if tree.split_kind[i] == LEAF:
            label = tree.leaf_text(i, show_counts=False)
            assert text.get_text().startswith(label)
            assert "counts [" in text.get_text() and "p = " in text.get_text()
        else:
            condition = tree.split_text(i)[0]
            assert re.sub(r"\s+", " ", text.get_text()).startswith(condition.replace("  ", " "))
            assert "petal" in text.get_text() or "sepal" in text.get_text()
    labels = [t.get_text() for t in ax.texts if not (t.get_gid() or "").startswith("node-")]
    n_internal = tree.n_nodes - tree.n_leaves
    assert labels.count("yes") == n_internal and labels.count("no") == n_internal
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["setosa", "versicolor", "virginica"]


def test_plot_tree_leaf_colours_follow_the_predicted_class(pcfg_iris):
    tree = pcfg_iris.tree_
    ax = plot_tree(tree)  # a bare Tree works too
    nodes = _node_texts(ax)
    tab10 = np.asarray(plt.get_cmap("tab10").colors)
    for i in np.flatnonzero(tree.split_kind == LEAF):
        face = np.asarray(nodes[i].get_bbox_patch().get_facecolor()[:3])
        # a blend of white and the class colour: closest (in direction) to the predicted class
        k = int(np.argmax(tree.value[i]))
        dist = [np.linalg.norm((1 - face) / np.linalg.norm(1 - face) - (1 - c) / np.linalg.norm(1 - c))
                for c in tab10[: tree.value.shape[1]]]
        assert int(np.argmin(dist)) == k


def test_plot_tree_regression_shows_values_and_a_colour_bar(regressor, tmp_path):
    reg, _, _ = regressor
    ax = plot_tree(reg, decimals=2)
    _save(ax, tmp_path, "tree_reg")
    nodes = _node_texts(ax)
    assert len(nodes) == reg.tree_.n_nodes
    leaves = [nodes[i].get_text() for i in np.flatnonzero(reg.tree_.split_kind == LEAF)]
    assert all(t.startswith("value: ") and "n = " in t for t in leaves)
    assert len(ax.figure.axes) == 2  # the tree and its colour bar


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_node_boxes_do_not_overlap_at_30_leaves(task, tmp_path):
    tree = _random_tree(30, seed=3, task=task)
    ax = plot_tree(tree)
    _save(ax, tmp_path, f"tree30_{task}")
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    nodes = _node_texts(ax)
    assert len(nodes) == tree.n_nodes == 59
    boxes = np.array([t.get_bbox_patch().get_window_extent(renderer).extents for t in nodes.values()])
    x0, y0, x1, y1 = boxes.T
    overlap = (x0[:, None] < x1[None, :]) & (x0[None, :] < x1[:, None]) & (y0[:, None] < y1[None, :]) \
        & (y0[None, :] < y1[:, None])
    np.fill_diagonal(overlap, False)
    assert not overlap.any()
    # and the text stays readable: at least 6 pt on the figure made for it
    assert min(t.get_fontsize() for t in nodes.values()) >= 6.0


def test_plot_tree_max_depth_and_fixed_font(maptree_iris):
    tree = maptree_iris.tree_
    ax = plot_tree(maptree_iris, max_depth=1, fontsize=9, edge_labels=None, show_counts=False)
    nodes = _node_texts(ax)
    assert sorted(nodes) == sorted(np.flatnonzero(tree.depth <= 1).tolist())
    assert any(t.get_text().startswith("(...)") for t in nodes.values())
    assert all(t.get_fontsize() == 9 for t in nodes.values())
    assert all((t.get_gid() or "").startswith("node-") for t in ax.texts)  # no edge labels


def test_plot_tree_on_given_axes_and_feature_names(maptree_iris):
    fig, axes = plt.subplots(1, 2)
    out = plot_tree(maptree_iris.tree_, ax=axes[1], feature_names=["a", "b", "c", "d"])
    assert out is axes[1] and out.figure is fig
    root = "abcd"[maptree_iris.tree_.feature[0]]  # the root's column, named by feature_names
    assert _node_texts(out)[0].get_text().startswith(f"{root} <= ")


def test_plot_tree_errors(maptree_iris):
    with pytest.raises(NotFittedError):
        plot_tree(MAPTreeClassifier())
    with pytest.raises(TypeError, match="fitted arboretum estimator"):
        plot_tree("not a tree")
    with pytest.raises(ValueError, match="decimals"):
        plot_tree(maptree_iris, decimals=-1)
    with pytest.raises(ValueError, match="max_depth"):
        plot_tree(maptree_iris, max_depth=-2)
    with pytest.raises(ValueError, match="feature_names"):
        plot_tree(maptree_iris, feature_names=["a"])


# ---------------------------------------------------------------------------
# plot_anytime
# ---------------------------------------------------------------------------


def _history(certified: bool) -> np.ndarray:
    t = np.geomspace(1e-3, 30.0, 25)
    lp = -60.0 - 20.0 * np.exp(-3 * t)
    ub = -60.0 + 25.0 * np.exp(-t / 3)
    if certified:
        ub[-4:] = lp[-4:]
    return np.array(list(zip(t, np.arange(25, dtype=np.int64) * 1000, lp, ub)), dtype=HISTORY_DTYPE)


@pytest.mark.parametrize("x", ["time", "n_expansions"])
def test_plot_anytime_lines_are_the_history(x, tmp_path):
    history = _history(certified=True)
    ax = plot_anytime(history, x=x)
    _save(ax, tmp_path, f"anytime_{x}")
    lines = {line.get_gid(): line for line in ax.get_lines()}
    np.testing.assert_array_equal(lines["best tree"].get_xdata(), history[x])
    np.testing.assert_array_equal(lines["best tree"].get_ydata(), history["log_posterior"])
    np.testing.assert_array_equal(lines["upper bound"].get_xdata(), history[x])
    np.testing.assert_array_equal(lines["upper bound"].get_ydata(), history["log_posterior_bound"])
    star = lines["certified"]  # where the gap first closed
    assert star.get_xdata()[0] == history[x][-4] and star.get_ydata()[0] == history["log_posterior"][-4]
    assert ax.get_xlabel() == ("time (s)" if x == "time" else "node expansions")
    assert ax.get_ylabel() == "log posterior"
    assert len(ax.collections) == 1  # the shaded gap


def test_plot_anytime_uncertified_and_from_an_estimator():
    history = _history(certified=False)
    ax = plot_anytime(history)
    assert "certified" not in {line.get_gid() for line in ax.get_lines()}
    assert any("gap at stop" in t.get_text() for t in ax.get_legend().get_texts())

    class Fitted:  # the shape of a fitted MAPTree estimator with a recorded search
        history_ = history
        optimal_ = True
        tree_ = None

    ax = plot_anytime(Fitted(), x="n_expansions")
    star = [line for line in ax.get_lines() if line.get_gid() == "certified"]
    assert len(star) == 1 and star[0].get_xdata()[0] == history["n_expansions"][-1]


def test_plot_anytime_of_a_fitted_maptree(maptree_iris, tmp_path):
    history = maptree_iris.history_
    assert maptree_iris.optimal_ and history.size >= 3
    for x in ("time", "n_expansions"):
        ax = plot_anytime(maptree_iris, x=x)
        _save(ax, tmp_path, f"anytime_fit_{x}")
        lines = {line.get_gid(): line for line in ax.get_lines()}
        np.testing.assert_array_equal(lines["best tree"].get_xdata(), history[x])
        np.testing.assert_array_equal(lines["best tree"].get_ydata(), history["log_posterior"])
        np.testing.assert_array_equal(lines["upper bound"].get_ydata(), history["log_posterior_bound"])
        star = lines["certified"]  # where the gap closed: the fitted tree, certified
        assert star.get_ydata()[0] == pytest.approx(maptree_iris.log_posterior_, abs=1e-9)
        plt.close(ax.figure)


def test_plot_anytime_errors(pcfg_iris):
    with pytest.raises(ValueError, match="lacks the fields .*log_posterior_bound"):
        plot_anytime(np.zeros(3, dtype=HISTORY_DTYPE[:3]))
    with pytest.raises(ValueError, match="structured array"):
        plot_anytime(np.zeros((3, 4)))
    with pytest.raises(ValueError, match="empty"):
        plot_anytime(np.zeros(0, dtype=HISTORY_DTYPE))
    with pytest.raises(ValueError, match="x must be"):
        plot_anytime(_history(True), x="nodes")
    with pytest.raises(NotFittedError):
        plot_anytime(MAPTreeClassifier())
    with pytest.raises(TypeError, match="history_"):  # a fitted model without a search history
        plot_anytime(pcfg_iris)
    assert set(HISTORY_FIELDS) == {name for name, _ in HISTORY_DTYPE}


# ---------------------------------------------------------------------------
# posterior summaries
# ---------------------------------------------------------------------------


def test_plot_split_inclusion_exact_for_pcfg(pcfg_iris, iris_frame, tmp_path):
    ax = plot_split_inclusion(pcfg_iris)
    _save(ax, tmp_path, "inclusion")
    p = pcfg_iris.split_inclusion_probabilities()
    order = np.argsort(-p, kind="stable")
    bars = _bars(ax)
    assert len(bars) == 4
    # drawn top to bottom in decreasing order; bar lengths are the exact probabilities
    by_height = sorted(bars, key=lambda b: -b.get_y())
    np.testing.assert_allclose([b.get_width() for b in by_height], p[order], rtol=0, atol=1e-15)
    names = list(iris_frame[0].columns)
    ticks = sorted(ax.get_yticklabels(), key=lambda t: -t.get_position()[1])
    assert [t.get_text() for t in ticks] == [names[j] for j in order]
    assert "exact" in ax.get_title()
    assert len(_bars(plot_split_inclusion(pcfg_iris, top=2))) == 2


@pytest.mark.parametrize("which", ["mcmc", "smc"])
def test_plot_split_inclusion_from_samples(which, request, tmp_path):
    est = request.getfixturevalue(which)
    ax = plot_split_inclusion(est)
    _save(ax, tmp_path, f"inclusion_{which}")
    weights = est._sample_weights()
    expected = np.zeros(est.n_features_in_)
    for tree, w in zip(est.samples_, weights):
        used = np.unique(tree.feature[tree.split_kind != LEAF])
        expected[used] += w
    expected /= weights.sum()
    bars = sorted(_bars(ax), key=lambda b: -b.get_y())
    assert len(bars) == est.n_features_in_
    np.testing.assert_allclose([b.get_width() for b in bars], np.sort(expected)[::-1], atol=1e-12)
    assert "Monte Carlo" in ax.get_title()
    assert {t.get_text() for t in ax.get_yticklabels()} == {f"x[{j}]" for j in range(est.n_features_in_)}


def test_plot_tree_sizes_exact_for_pcfg(pcfg_iris, tmp_path):
    ax = plot_tree_sizes(pcfg_iris)
    _save(ax, tmp_path, "sizes")
    p = pcfg_iris.n_leaves_distribution()
    tail = 1.0 - p.sum()
    bars = _bars(ax)
    heights = np.array([b.get_height() for b in bars])
    centers = np.array([b.get_x() + b.get_width() / 2 for b in bars])
    np.testing.assert_allclose(heights, p[np.round(centers).astype(int)], rtol=0, atol=0)
    assert heights.sum() + tail == pytest.approx(1.0, abs=1e-12) and abs(tail) <= 1e-12
    marks = {round(float(line.get_xdata()[0]), 9) for line in ax.get_lines()}
    mean = float(np.arange(p.size) @ p)
    assert marks == {float(pcfg_iris.tree_.n_leaves), round(mean, 9)}
    assert mean == pytest.approx(pcfg_iris.expected_n_leaves_, rel=1e-9)
    assert ax.get_xlabel() == "number of leaves" and "exact" in ax.get_title()


@pytest.mark.parametrize("which", ["mcmc", "smc"])
def test_plot_tree_sizes_from_samples(which, request):
    est = request.getfixturevalue(which)
    ax = plot_tree_sizes(est)
    weights = est._sample_weights()
    sizes = np.array([t.n_leaves for t in est.samples_])
    expected = np.bincount(sizes, weights=weights) / weights.sum()
    bars = _bars(ax)
    heights = np.array([b.get_height() for b in bars])
    centers = np.round([b.get_x() + b.get_width() / 2 for b in bars]).astype(int)
    np.testing.assert_allclose(heights, expected[centers], atol=1e-12)
    assert heights.sum() == pytest.approx(1.0, abs=1e-12)
    assert "Monte Carlo" in ax.get_title()


def test_posterior_plots_refuse_models_without_a_posterior(regressor, maptree_iris):
    reg, _, _ = regressor
    for plot in (plot_split_inclusion, plot_tree_sizes):
        with pytest.raises(TypeError, match="posterior over trees"):
            plot(reg)  # a regression tree
        with pytest.raises(TypeError, match="posterior over trees"):
            plot(maptree_iris)  # a single MAP tree
        with pytest.raises(NotFittedError):
            plot(PCFGTreeClassifier())
        with pytest.raises(NotFittedError):
            plot(MCMCTreeSampler())
        with pytest.raises(TypeError):
            plot(maptree_iris.tree_)


# ---------------------------------------------------------------------------
# plot_decision_regions
# ---------------------------------------------------------------------------


class _Recorder:
    """A stand-in classifier with only ``classes_`` and ``predict``, recording what it is given."""

    classes_ = np.array(["left", "right"])

    def __init__(self, threshold: float):
        self.threshold = threshold

    def predict(self, X):
        self.seen = X
        first = X.iloc[:, 0].to_numpy() if hasattr(X, "iloc") else np.asarray(X)[:, 0]
        return np.where(first <= self.threshold, "left", "right")


def test_decision_regions_with_a_dataframe(maptree_iris, iris_frame, tmp_path):
    X, y = iris_frame
    ax = plot_decision_regions(maptree_iris, X, y, features=("petal length (cm)", "petal width (cm)"),
                               resolution=50)
    _save(ax, tmp_path, "regions")
    assert ax.get_xlabel() == "petal length (cm)" and ax.get_ylabel() == "petal width (cm)"
    image = ax.images[0].get_array()
    assert image.shape == (50, 50, 3)
    assert len(ax.collections) == 1 and len(ax.collections[0].get_offsets()) == len(X)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(maptree_iris.classes_)


def test_decision_regions_only_use_predict_and_hold_other_columns_at_the_median(iris_frame):
    X, _ = iris_frame
    est = _Recorder(6.0)
    ax = plot_decision_regions(est, X, features=(0, 2), resolution=30, proba=False)
    seen = est.seen
    assert isinstance(seen, pd.DataFrame) and list(seen.columns) == list(X.columns) and len(seen) == 900
    for j in (1, 3):  # the median, as an observed value
        median = X.iloc[:, j].quantile(0.5, interpolation="nearest")
        assert np.all(seen.iloc[:, j] == median) and median in set(X.iloc[:, j])
    assert seen.iloc[:, 0].min() < X.iloc[:, 0].min() and seen.iloc[:, 0].max() > X.iloc[:, 0].max()
    assert ax.get_xlabel() == X.columns[0] and ax.get_ylabel() == X.columns[2]
    # the picture is predict's answer: one colour left of x0 = 6, another right of it
    image = ax.images[0].get_array()
    grid_x = np.sort(np.unique(seen.iloc[:, 0]))
    assert len(np.unique(image.reshape(-1, 3), axis=0)) == 2
    assert np.all(image[:, grid_x <= 6.0] == image[0, 0]) and np.all(image[:, grid_x > 6.0] != image[0, 0])
    est = _Recorder(2.0)
    A = np.column_stack([np.linspace(0, 4, 40), np.linspace(5, 9, 40), np.arange(40) % 3])
    ax = plot_decision_regions(est, A, features=(0, 1), resolution=20, proba=False)
    assert ax.get_xlabel() == "x[0]" and ax.get_ylabel() == "x[1]"
    assert np.all(est.seen[:, 2] == 1.0)
    assert len(np.unique(ax.images[0].get_array().reshape(-1, 3), axis=0)) == 2


def test_decision_regions_of_a_regressor_and_of_binary_features(regressor, mcmc, binary_data, tmp_path):
    reg, X, y = regressor
    ax = plot_decision_regions(reg, X, y, resolution=40)
    _save(ax, tmp_path, "regions_reg")
    values = ax.images[0].get_array()
    assert values.shape == (40, 40)
    assert len(ax.figure.axes) == 2  # colour bar
    np.testing.assert_allclose(np.unique(values), np.unique(reg.tree_.value[reg.tree_.split_kind == LEAF, 0]))
    Xb, yb = binary_data
    ax = plot_decision_regions(mcmc, Xb, yb, features=(0, 1), resolution=20)  # 0/1 columns stay 0/1
    assert ax.images[0].get_array().shape == (20, 20, 3)


def test_decision_regions_errors(maptree_iris, iris_frame):
    X, y = iris_frame
    with pytest.raises(ValueError, match="two different columns"):
        plot_decision_regions(maptree_iris, X, features=(1, 1))
    with pytest.raises(ValueError, match="not a column"):
        plot_decision_regions(maptree_iris, X, features=("petal length (cm)", "colour"))
    with pytest.raises(ValueError, match="out of range"):
        plot_decision_regions(maptree_iris, X, features=(0, 7))
    with pytest.raises(ValueError, match="at least two columns"):
        plot_decision_regions(maptree_iris, X.iloc[:, :1])
    with pytest.raises(TypeError, match="predict"):
        plot_decision_regions(object(), X)
    with pytest.raises(NotFittedError):
        plot_decision_regions(MAPTreeClassifier(), X)


# ---------------------------------------------------------------------------
# the code of docs/plots.md (the README's blocks run in test_readme.py)
# ---------------------------------------------------------------------------


def test_docs_plots_code_blocks_run(tmp_path, monkeypatch):
    text = (ROOT / "docs" / "plots.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "docs/plots.md", "exec"), namespace)
        plt.close("all")
    assert list(tmp_path.glob("*.png"))
