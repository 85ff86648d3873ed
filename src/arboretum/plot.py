"""Plots of arboretum models: tree diagrams, decision regions, anytime curves and posterior summaries.

Every function draws with matplotlib (the optional extra ``pip install
"arboretum[plot]"``), takes ``ax=None`` (a new figure is made when it is None)
and returns the Axes it drew on.  matplotlib is imported when a function is
called, never when :mod:`arboretum` or this module is imported.

=============================  ==================================================================
:func:`plot_tree`              the tree of any model (a :class:`~arboretum.tree.Tree` or an
                               estimator with ``tree_``)
:func:`plot_decision_regions`  2-D decision regions of any fitted classifier or regressor
:func:`plot_anytime`           MAPTree's anytime curve: best log posterior and upper bound
:func:`plot_split_inclusion`   posterior probability that the tree splits on each feature
:func:`plot_tree_sizes`        posterior distribution of the number of leaves
:func:`plot_polytopes`         2-D decision regions of a convex polytope tree with every node's
                               polytope boundary (``POLYTOPE`` splits)
:func:`plot_training_curves`   per-epoch training objective of a gradient-trained tree (``epoch_history_``)
=============================  ==================================================================

The last two are exact for :class:`~arboretum.pcfg.PCFGTreeClassifier` (computed from the
grammar) and Monte Carlo estimates for :class:`~arboretum.samplers.MCMCTreeSampler` and
:class:`~arboretum.samplers.SMCTreeSampler` (from their weighted samples).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from typing import Any

import numpy as np

from .tree import LEAF, Tree

__all__ = [
    "plot_anytime",
    "plot_decision_regions",
    "plot_polytopes",
    "plot_training_curves",
    "plot_split_inclusion",
    "plot_tree",
    "plot_tree_sizes",
]

#: Fields of a search history (``history_`` of the MAPTree estimators).
HISTORY_FIELDS = ("time", "n_expansions", "log_posterior", "log_posterior_bound")

_MIN_FONT = 3.0
_MAX_FONT = 11.0


# ---------------------------------------------------------------------------
# shared helpers
# ---------------------------------------------------------------------------


def _pyplot():
    """``matplotlib.pyplot``, or an ImportError that says how to install it."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - exercised with matplotlib hidden
        raise ImportError(
            'arboretum.plot needs matplotlib; install it with: pip install "arboretum[plot]"'
        ) from exc
    return plt


def _new_axes(ax: Any, figsize: tuple[float, float]) -> Any:
    if ax is not None:
        return ax
    _, ax = _pyplot().subplots(figsize=figsize)
    return ax


def _check_fitted(estimator: Any, attribute: str, what: str) -> None:
    """Raise NotFittedError for an unfitted estimator, TypeError for something else."""
    from sklearn.exceptions import NotFittedError

    if hasattr(estimator, attribute):
        return
    if hasattr(estimator, "fit"):
        raise NotFittedError(
            f"this {type(estimator).__name__} is not fitted yet; call fit before {what}"
        )
    raise TypeError(f"{what} needs a fitted arboretum estimator; got {type(estimator).__name__}")


def _tree_of(tree_or_estimator: Any, what: str) -> Tree:
    if isinstance(tree_or_estimator, Tree):
        return tree_or_estimator
    _check_fitted(tree_or_estimator, "tree_", what)
    tree = tree_or_estimator.tree_
    if not isinstance(tree, Tree):
        raise TypeError(f"{what}: tree_ of {type(tree_or_estimator).__name__} is not an arboretum Tree")
    return tree


def _class_colors(n: int) -> np.ndarray:
    """``n`` distinct RGB colours (tab10, tab20, then evenly spaced hues)."""
    plt = _pyplot()
    if n <= 10:
        return np.asarray(plt.get_cmap("tab10").colors[:n])
    if n <= 20:
        return np.asarray(plt.get_cmap("tab20").colors[:n])
    return np.asarray(plt.get_cmap("hsv")(np.linspace(0, 1, n, endpoint=False))[:, :3])


def _blend(rgb: np.ndarray, strength: np.ndarray) -> np.ndarray:
    """Mix colours with white: ``strength`` 0 is white, 1 the colour."""
    strength = np.asarray(strength, dtype=np.float64)[..., None]
    return 1.0 - strength * (1.0 - np.asarray(rgb, dtype=np.float64))


def _feature_names(estimator: Any, n_features: int) -> list[str]:
    names = getattr(estimator, "feature_names_in_", None)
    if names is None:
        tree = getattr(estimator, "tree_", None)
        names = getattr(tree, "feature_names", None)
    if names is None or len(names) != n_features:
        return [f"x[{j}]" for j in range(n_features)]
    return [str(n) for n in names]


def _is_pcfg(estimator: Any) -> bool:
    return hasattr(estimator, "split_inclusion_probabilities") and hasattr(estimator, "n_leaves_distribution")


def _distinct_samples(estimator: Any, what: str) -> tuple[list[Any], np.ndarray]:
    """Distinct sampled trees (as Trees or pre-order encodings) and the posterior weight of each."""
    samples = estimator.samples_
    weights = np.asarray(estimator._sample_weights(), dtype=np.float64)
    if len(samples) == 0 or weights.sum() <= 0:
        raise ValueError(
            f"{what}: {type(estimator).__name__} kept no samples (the time limit stopped it during burn-in?)"
        )
    if hasattr(samples, "index") and hasattr(samples, "n_distinct"):
        per_tree = np.bincount(samples.index, weights=weights, minlength=samples.n_distinct)
        keep = np.flatnonzero(per_tree > 0)
        if hasattr(samples, "encoding"):
            trees = [np.asarray(samples.encoding(j)) for j in keep]
        else:
            trees = [samples.distinct(j) for j in keep]
        per_tree = per_tree[keep]
    else:
        trees, per_tree = list(samples), weights
    return trees, per_tree / per_tree.sum()


def _posterior_source(estimator: Any, what: str) -> str:
    """``"exact"`` (PCFG) or ``"samples"`` (samplers); raises for anything else."""
    if _is_pcfg(estimator):
        _check_fitted(estimator, "grammar_", what)
        return "exact"
    if hasattr(estimator, "_sample_weights"):
        _check_fitted(estimator, "samples_", what)
        return "samples"
    if isinstance(estimator, Tree) or hasattr(estimator, "fit"):
        raise TypeError(
            f"{what} needs a posterior over trees: a PCFGTreeClassifier (exact) or an MCMCTreeSampler / "
            f"SMCTreeSampler (Monte Carlo); got {type(estimator).__name__}"
        )
    raise TypeError(f"{what} needs a fitted arboretum estimator; got {type(estimator).__name__}")


# ---------------------------------------------------------------------------
# plot_tree
# ---------------------------------------------------------------------------


def _layout(tree: Tree, max_depth: int | None) -> tuple[dict[int, float], list[int], set[int]]:
    """x position of every drawn node (leaves, and nodes cut at ``max_depth``, at 0, 1, 2, ...)."""
    x: dict[int, float] = {}
    order: list[int] = []
    cut: set[int] = set()
    next_slot = 0

    def visit(i: int) -> None:
        nonlocal next_slot
        order.append(i)
        if tree.split_kind[i] == LEAF or (max_depth is not None and tree.depth[i] >= max_depth):
            if tree.split_kind[i] != LEAF:
                cut.add(i)
            x[i] = float(next_slot)
            next_slot += 1
            return
        left, right = int(tree.children_left[i]), int(tree.children_right[i])
        visit(left)
        visit(right)
        x[i] = (x[left] + x[right]) / 2.0

    import sys

    limit = sys.getrecursionlimit()
    if tree.max_depth + 50 > limit:
        sys.setrecursionlimit(tree.max_depth + 100)
    try:
        visit(0)
    finally:
        sys.setrecursionlimit(limit)
    return x, order, cut


def _n_text(tree: Tree, i: int, decimals: int) -> str:
    n = float(tree.counts[i].sum())
    return f"n = {int(n)}" if n == int(n) else f"n = {n:.{decimals}f}"


def _wrap(text: str, width: int | None) -> str:
    if width is None:
        return text
    lines = []
    for line in text.split("\n"):
        longest = max((len(w) for w in line.split()), default=1)
        lines.append(textwrap.fill(line, width=max(width, longest), break_long_words=False)
                     if len(line) > width else line)
    return "\n".join(lines)


def _parts(detail: str) -> list[str]:
    """``"(counts [3, 1], p=0.75)"`` -> ``["p = 0.75", "counts [3, 1]"]``: one line per top-level item."""
    if detail.startswith("(") and detail.endswith(")"):
        detail = detail[1:-1]
    parts, depth, start = [], 0, 0
    for k, ch in enumerate(detail):
        depth += ch in "[({"
        depth -= ch in "])}"
        if ch == "," and depth == 0:
            parts.append(detail[start:k].strip())
            start = k + 1
    parts.append(detail[start:].strip())
    parts = [p.replace("=", " = ", 1) if "=" in p and " = " not in p else p for p in parts if p]
    # the probability first, under the class it belongs to
    return sorted(parts, key=lambda p: not p.startswith("p "))


def _density_bars(tree: Tree, i: int) -> str:
    """Two text bars under a density leaf: its probability P and density f, each against the largest leaf's."""
    leaf = tree.split_kind == LEAF
    top = tree.value[leaf].max(axis=0)
    bars = []
    for col, name in ((0, "P"), (1, "f")):
        share = tree.value[i, col] / top[col] if top[col] > 0 else 0.0
        bars.append(f"{name} " + "\u2588" * int(round(10 * share)) + "\u2591" * (10 - int(round(10 * share))))
    return "\n".join(bars)


def _node_texts(tree: Tree, order: list[int], cut: set[int], names: Sequence[str] | None, decimals: int,
                show_counts: bool, wrap: int | None) -> dict[int, str]:
    texts = {}
    for i in order:
        if i in cut:
            texts[i] = "(...)" + (f"\n{_n_text(tree, i, decimals)}" if show_counts else "")
        elif tree.split_kind[i] == LEAF:
            label = tree.leaf_text(i, decimals=decimals, show_counts=False)
            text = label
            if show_counts:
                detail = tree.leaf_text(i, decimals=decimals, show_counts=True)[len(label):].strip()
                if detail:
                    text += "\n" + "\n".join(_wrap(part, max(len(label), 24)) for part in _parts(detail))
            if tree.task == "density":  # the paper's leaf bars: probability and density
                text += "\n" + _density_bars(tree, i)
            texts[i] = text
        else:
            condition = tree.split_text(i, feature_names=names, decimals=decimals)[0]
            text = _wrap(condition, wrap)
            texts[i] = text + (f"\n{_n_text(tree, i, decimals)}" if show_counts else "")
    return texts


def _leaf_colors(tree: Tree) -> tuple[np.ndarray, Any]:
    """Face colour of every node, and (classification) class colours or (regression) a ScalarMappable."""
    face = np.ones((tree.n_nodes, 3)) * 0.95
    leaf = tree.split_kind == LEAF
    if tree.task == "classification":
        colors = _class_colors(tree.value.shape[1])
        k = np.argmax(tree.value, axis=1)
        p = tree.value[np.arange(tree.n_nodes), k]
        C = tree.value.shape[1]
        confidence = np.clip((p - 1.0 / C) / (1.0 - 1.0 / C), 0.0, 1.0) if C > 1 else np.ones_like(p)
        face[leaf] = _blend(colors[k[leaf]], 0.25 + 0.55 * confidence[leaf])
        return face, colors
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import ListedColormap, Normalize

    values = tree.value[leaf, 0]
    lo, hi = float(values.min()), float(values.max())
    # viridis lightened towards white, so that black text stays readable; the colour bar shows the same
    light = ListedColormap(_blend(_pyplot().get_cmap("viridis")(np.linspace(0, 1, 256))[:, :3], 0.65))
    mappable = ScalarMappable(norm=Normalize(lo, hi if hi > lo else lo + 1.0), cmap=light)
    face[leaf] = mappable.to_rgba(values)[:, :3]
    return face, mappable


def _renderer(fig: Any) -> Any:
    canvas = fig.canvas
    return canvas.get_renderer() if hasattr(canvas, "get_renderer") else None


def _boxes(texts: list[Any], renderer: Any) -> np.ndarray:
    """Display extents ``(x0, y0, x1, y1)`` of text boxes, padded like their bbox patches."""
    out = np.empty((len(texts), 4))
    for r, t in enumerate(texts):
        e = t.get_window_extent(renderer)
        pad = (0.3 + 0.15) * t.get_fontsize() * t.figure.dpi / 72.0
        out[r] = (e.x0 - pad, e.y0 - pad, e.x1 + pad, e.y1 + pad)
    return out


def _overlapping(boxes: np.ndarray) -> bool:
    """Whether any two of the boxes overlap."""
    x0, y0, x1, y1 = (boxes[:, k] for k in range(4))
    hit = ((x0[:, None] < x1[None, :]) & (x0[None, :] < x1[:, None])
           & (y0[:, None] < y1[None, :]) & (y0[None, :] < y1[:, None]))
    np.fill_diagonal(hit, False)
    return bool(hit.any())


def plot_tree(
    tree_or_estimator: Any,
    *,
    ax: Any = None,
    feature_names: Sequence[str] | None = None,
    decimals: int = 3,
    max_depth: int | None = None,
    fontsize: float | None = None,
    show_counts: bool = True,
    edge_labels: tuple[str, str] | None = ("yes", "no"),
    wrap: int | None = 18,
    legend: bool = True,
) -> Any:
    """Draw a decision tree: split conditions at internal nodes, predictions at the leaves.

    Works for every model: it reads only the :class:`~arboretum.tree.Tree`
    (:meth:`~arboretum.tree.Tree.split_text` and
    :meth:`~arboretum.tree.Tree.leaf_text`).  An internal node shows its
    condition; the **left** branch is where it is true (edge label
    ``edge_labels[0]``).  A leaf shows its class, the probability of that
    class and the training class counts (classification) or its value and
    the number of training samples (regression).  Leaves are coloured by
    class (stronger for a more confident leaf) or by value (``viridis``).

    Leaves are placed left to right at equal spacing in the order of the
    tree, each internal node above the middle of its children, depth going
    down.  Unless ``fontsize`` is given, the font shrinks until no two node
    boxes overlap (down to 3 pt); a new figure (``ax=None``) is sized by the
    number of leaves and the depth, which keeps trees of 15-30 leaves
    readable.

    Parameters
    ----------
    tree_or_estimator : Tree or fitted estimator
        A :class:`~arboretum.tree.Tree` or any estimator with a ``tree_``.
    ax : matplotlib Axes, optional
        Where to draw; a new figure when None.
    feature_names : sequence of str, optional
        Names of the tree's features (default: the tree's own names, then
        ``x[j]``).
    decimals : int, default=3
        Decimals of thresholds, probabilities and values.
    max_depth : int, optional
        Draw only this many levels; a deeper subtree is shown as ``(...)``
        with its number of samples.
    fontsize : float, optional
        Fixed font size of the node texts (no adaptation).
    show_counts : bool, default=True
        Show the training counts (and ``n`` at internal nodes).
    edge_labels : (str, str) or None, default=("yes", "no")
        Labels of the left (condition true) and right edges; None for none.
    wrap : int or None, default=18
        Wrap condition texts longer than this many characters at spaces.
    legend : bool, default=True
        Legend of the classes the drawn leaves predict (classification) or
        colour bar of the leaf values (regression).

    Returns
    -------
    ax : matplotlib Axes
        Each node's text has the gid ``"node-<id>"``.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from arboretum import MAPTreeClassifier
    >>> from arboretum.plot import plot_tree
    >>> iris = load_iris(as_frame=True)
    >>> clf = MAPTreeClassifier(time_limit=10).fit(iris.data, iris.target_names[iris.target])
    >>> ax = plot_tree(clf)
    >>> ax.figure.savefig("iris_tree.png", dpi=100)  # doctest: +SKIP
    """
    plt = _pyplot()
    tree = _tree_of(tree_or_estimator, "plot_tree")
    if isinstance(decimals, bool) or not isinstance(decimals, (int, np.integer)) or decimals < 0:
        raise ValueError(f"decimals must be an integer >= 0; got {decimals!r}")
    if max_depth is not None and (isinstance(max_depth, bool) or not isinstance(max_depth, (int, np.integer))
                                  or max_depth < 0):
        raise ValueError(f"max_depth must be an integer >= 0 or None; got {max_depth!r}")
    if edge_labels is not None and len(edge_labels) != 2:
        raise ValueError(f"edge_labels must be two strings (left, right) or None; got {edge_labels!r}")
    names = feature_names
    if names is None and not isinstance(tree_or_estimator, Tree):
        names = tree.feature_names
    x, order, cut = _layout(tree, max_depth)
    texts = _node_texts(tree, order, cut, names, decimals, show_counts, wrap)
    n_slots = 1 + int(max(x.values()))
    depth = int(max(tree.depth[i] for i in order))

    created = ax is None
    ax = _new_axes(ax, (min(max(6.0, 1.7 * n_slots + 1.5), 32.0), min(max(3.5, 1.35 * (depth + 1) + 0.6), 16.0)))
    fig = ax.figure
    if created:  # no axis to draw: give the tree the whole figure but the legend's band
        n_shown = len({int(np.argmax(tree.value[i])) for i in order if tree.split_kind[i] == LEAF or i in cut})
        band = 0.2 + 0.25 * math.ceil(n_shown / 6) if legend and tree.task == "classification" else 0.1
        fig.subplots_adjust(left=0.01, right=0.99 if tree.task == "classification" or not legend else 0.9,
                            bottom=0.01, top=1.0 - min(0.3, band / fig.get_figheight()))
    ax.set_axis_off()
    ax.set_xlim(-0.6, n_slots - 0.4)
    face, colors = _leaf_colors(tree)

    # edges first, under the boxes
    y = {i: -float(tree.depth[i]) for i in order}
    edges = []  # (parent, child, line, label or None)
    for i in order:
        if tree.split_kind[i] == LEAF or i in cut:
            continue
        for side, child in enumerate((int(tree.children_left[i]), int(tree.children_right[i]))):
            line, = ax.plot([x[i], x[child]], [y[i], y[child]], color="0.45", lw=0.9, zorder=1)
            label = None
            if edge_labels is not None:
                label = ax.text(x[i], y[i], edge_labels[side], ha="center", va="center", color="0.3", zorder=2,
                                bbox=dict(boxstyle="round,pad=0.1", fc="white", ec="none", alpha=0.8))
            edges.append((i, child, line, label))
    node_texts = {}
    for i in order:
        t = ax.text(x[i], y[i], texts[i], ha="center", va="center", zorder=3,
                    bbox=dict(boxstyle="round,pad=0.3", fc=tuple(face[i]), ec="0.3", lw=0.8,
                              ls="--" if i in cut else "-"))
        t.set_gid(f"node-{i}")
        node_texts[i] = t

    def place(drop: float) -> None:
        """Put every node at its place, leaves in odd slots ``drop`` levels lower."""
        for i, t in node_texts.items():
            low = drop if (tree.split_kind[i] == LEAF or i in cut) and int(x[i]) % 2 else 0.0
            y[i] = -float(tree.depth[i]) - low
            t.set_position((x[i], y[i]))
        for i, child, line, label in edges:
            line.set_data([x[i], x[child]], [y[i], y[child]])
            if label is not None:
                label.set_position((x[i] + 0.5 * (x[child] - x[i]), y[i] + 0.5 * (y[child] - y[i])))
        ax.set_ylim(-depth - 0.6 - drop, 0.6)

    place(0.0)
    if legend and tree.task == "classification":
        from matplotlib.patches import Patch

        labels = tree.classes if tree.classes is not None else np.arange(tree.value.shape[1])
        shown = sorted({int(np.argmax(tree.value[i])) for i in order if tree.split_kind[i] == LEAF or i in cut})
        handles = [Patch(fc=_blend(colors[k], 0.8), ec="0.3", label=str(labels[k])) for k in shown]
        ax.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=min(len(handles), 6),
                  frameon=False, fontsize="small")
    elif legend:
        fig.colorbar(colors, ax=ax, fraction=0.03, pad=0.01,
                     label="leaf probability" if tree.task == "density" else "leaf value")

    def set_size(size: float) -> None:
        for t in node_texts.values():
            t.set_fontsize(size)
        for *_, label in edges:
            if label is not None:
                label.set_fontsize(max(_MIN_FONT, 0.8 * size))

    if fontsize is not None:
        set_size(float(fontsize))
        return ax
    renderer = _renderer(fig)
    if renderer is None:
        set_size(8.0)
        return ax
    boxes = list(node_texts.values())

    def largest_font() -> float:
        """The largest font (3 to 11 pt) at which no two node boxes overlap, by bisection on measured extents."""
        def fits(size: float) -> bool:
            set_size(size)
            return not _overlapping(_boxes(boxes, renderer))

        lo, hi = _MIN_FONT, _MAX_FONT
        if fits(hi):
            return hi
        for _ in range(9):
            mid = (lo + hi) / 2.0
            if fits(mid):
                lo = mid
            else:
                hi = mid
        return lo

    size = largest_font()
    if size < 8.0 and n_slots > 2:
        # crowded leaves: lower every other one by half a level, kept if it allows a larger font
        place(0.45)
        staggered = largest_font()
        if staggered > 1.1 * size:
            size = staggered
        else:
            place(0.0)
    set_size(size)
    return ax


# ---------------------------------------------------------------------------
# plot_anytime
# ---------------------------------------------------------------------------


def _history(estimator_or_history: Any) -> tuple[np.ndarray, Any]:
    obj = estimator_or_history
    estimator = None
    if not isinstance(obj, np.ndarray):
        if not hasattr(obj, "history_"):
            if hasattr(obj, "fit") and not hasattr(obj, "tree_"):
                _check_fitted(obj, "tree_", "plot_anytime")
            raise TypeError(
                "plot_anytime needs a fitted MAPTree estimator with a history_ of its search, or that "
                f"history (a structured array with fields {list(HISTORY_FIELDS)}); got {type(obj).__name__}"
            )
        estimator, obj = obj, obj.history_
    history = np.asarray(obj)
    if history.dtype.names is None:
        raise ValueError(f"the history must be a structured array with fields {list(HISTORY_FIELDS)}; "
                         f"got dtype {history.dtype}")
    missing = [f for f in HISTORY_FIELDS if f not in history.dtype.names]
    if missing:
        raise ValueError(f"the history lacks the fields {missing} (it has {list(history.dtype.names)}; "
                         f"needed: {list(HISTORY_FIELDS)})")
    history = history.reshape(-1)
    if history.size == 0:
        raise ValueError("the history is empty: the search recorded no point")
    return history, estimator


def plot_anytime(estimator_or_history: Any, *, x: str = "time", ax: Any = None, logx: bool | None = None,
                 certified_tol: float = 1e-9) -> Any:
    """Draw MAPTree's anytime curve: the best tree's log posterior and the upper bound, over the search.

    The lower line is the log posterior of the best tree found so far, the
    upper line the search's bound ``log_posterior_bound`` (no tree can be
    more probable); the shaded band between them is the gap.  A star marks
    the point where the gap closed, i.e. the MAP tree was certified, if it
    did (the estimator's ``optimal_``, or, for a bare history, a final gap
    below ``certified_tol`` relative).

    Parameters
    ----------
    estimator_or_history : estimator or structured ndarray
        A fitted estimator with ``history_``, or such a history itself: a
        NumPy structured array with the fields ``time`` (seconds since the
        start), ``n_expansions`` (int64), ``log_posterior`` and
        ``log_posterior_bound``, one row per recorded point, in order.
    x : {"time", "n_expansions"}, default="time"
        Horizontal axis.
    ax : matplotlib Axes, optional
    logx : bool or None, default=None
        Logarithmic horizontal axis; None chooses it when the positive x
        values span more than two decades.
    certified_tol : float, default=1e-9
        Relative gap below which a bare history counts as certified.

    Returns
    -------
    ax : matplotlib Axes
        Its lines ``"best tree"`` and ``"upper bound"`` hold the history's
        data.

    Examples
    --------
    >>> import numpy as np
    >>> from arboretum.plot import plot_anytime
    >>> dtype = [("time", "f8"), ("n_expansions", "i8"), ("log_posterior", "f8"),
    ...          ("log_posterior_bound", "f8")]
    >>> history = np.array([(0.01, 10, -80.0, -40.0), (0.1, 200, -62.0, -50.0),
    ...                     (1.0, 5000, -60.0, -60.0)], dtype=dtype)
    >>> ax = plot_anytime(history, x="n_expansions")
    """
    if x not in ("time", "n_expansions"):
        raise ValueError(f"x must be 'time' or 'n_expansions'; got {x!r}")
    history, estimator = _history(estimator_or_history)
    xs = np.asarray(history[x], dtype=np.float64)
    lp = np.asarray(history["log_posterior"], dtype=np.float64)
    ub = np.asarray(history["log_posterior_bound"], dtype=np.float64)
    ax = _new_axes(ax, (6.4, 4.0))
    best_line, = ax.plot(xs, lp, drawstyle="steps-post", color="tab:blue", lw=1.8, label="best tree")
    bound_line, = ax.plot(xs, ub, drawstyle="steps-post", color="tab:red", lw=1.4, ls="--", label="upper bound")
    best_line.set_gid("best tree")
    bound_line.set_gid("upper bound")
    ok = np.isfinite(lp) & np.isfinite(ub)
    if ok.any():
        ax.fill_between(xs, lp, ub, where=ok, step="post", color="tab:red", alpha=0.12, lw=0, label="gap")
    gap = ub - lp
    tol = certified_tol * np.maximum(1.0, np.abs(lp))
    closed = np.flatnonzero(np.isfinite(gap) & (gap <= tol))
    certified = bool(getattr(estimator, "optimal_", False)) or closed.size > 0
    if certified:
        i = int(closed[0]) if closed.size else xs.size - 1
        when = f"{history['time'][i]:.3g} s, {int(history['n_expansions'][i]):,} expansions"
        ax.plot([xs[i]], [lp[i]], marker="*", ms=14, color="gold", mec="k", ls="none", zorder=5,
                label=f"certified ({when})", gid="certified")
    elif np.isfinite(gap[-1]):
        ax.plot([], [], ls="none", label=f"gap at stop: {gap[-1]:.3g} nats")
    if logx is None:
        positive = xs[xs > 0]
        logx = positive.size > 1 and positive.max() / positive.min() > 100.0
    if logx:
        ax.set_xscale("log")
    ax.set_xlabel("time (s)" if x == "time" else "node expansions")
    ax.set_ylabel("log posterior")
    ax.legend(loc="best", fontsize="small")
    ax.grid(alpha=0.3)
    return ax


# ---------------------------------------------------------------------------
# posterior summaries
# ---------------------------------------------------------------------------


def _used_features(tree: Any) -> np.ndarray:
    """Features split on by a Tree or a pre-order encoding (features >= 0, leaves -1)."""
    if isinstance(tree, Tree):
        f = tree.feature[tree.split_kind != LEAF]
    else:
        f = np.asarray(tree)
    return np.unique(f[f >= 0])


def _n_leaves(tree: Any) -> int:
    if isinstance(tree, Tree):
        return tree.n_leaves
    return int(np.count_nonzero(np.asarray(tree) < 0))


def _split_inclusion(estimator: Any) -> tuple[np.ndarray, str]:
    """Per-feature split-inclusion probabilities and how they were obtained (``"exact"`` or ``"samples"``).

    What :func:`plot_split_inclusion` draws.
    """
    source = _posterior_source(estimator, "plot_split_inclusion")
    if source == "exact":
        return np.asarray(estimator.split_inclusion_probabilities(), dtype=np.float64), source
    trees, weights = _distinct_samples(estimator, "plot_split_inclusion")
    p = np.zeros(int(estimator.n_features_in_), dtype=np.float64)
    for tree, w in zip(trees, weights):
        p[_used_features(tree)] += w
    return np.clip(p, 0.0, 1.0), source


def _tree_sizes(estimator: Any) -> tuple[np.ndarray, float, str]:
    """``(p, tail, source)``: ``p[k] = P(k leaves)``, the mass above ``len(p) - 1``, and the source.

    What :func:`plot_tree_sizes` draws.
    """
    source = _posterior_source(estimator, "plot_tree_sizes")
    if source == "exact":
        p = np.asarray(estimator.n_leaves_distribution(), dtype=np.float64)
        return p, max(0.0, 1.0 - float(p.sum())), source
    trees, weights = _distinct_samples(estimator, "plot_tree_sizes")
    sizes = np.array([_n_leaves(t) for t in trees], dtype=np.int64)
    return np.bincount(sizes, weights=weights), 0.0, source


def _n_samples_text(estimator: Any) -> str:
    n = len(estimator.samples_)
    kind = "particles" if hasattr(estimator, "weights_") else "samples"
    return f"Monte Carlo estimate from {n:,} weighted {kind}" if kind == "particles" else \
        f"Monte Carlo estimate from {n:,} samples"


def plot_split_inclusion(estimator: Any, *, ax: Any = None, top: int | None = None,
                         feature_names: Sequence[str] | None = None) -> Any:
    """Horizontal bars of the posterior probability that the tree splits on each feature.

    For :class:`~arboretum.pcfg.PCFGTreeClassifier` the probabilities are
    exact (:meth:`~arboretum.pcfg.PCFGTreeClassifier.split_inclusion_probabilities`;
    with its default phi prior, equivalent splits on different features are
    credited to the earliest feature).  For
    :class:`~arboretum.samplers.MCMCTreeSampler` and
    :class:`~arboretum.samplers.SMCTreeSampler` they are the weighted
    fraction of the sampled trees that split on the feature, a Monte Carlo
    estimate (said in the title).

    Parameters
    ----------
    estimator : PCFGTreeClassifier, MCMCTreeSampler or SMCTreeSampler
        Fitted.
    ax : matplotlib Axes, optional
    top : int, optional
        Show only the ``top`` most probable features.
    feature_names : sequence of str, optional
        Defaults to ``feature_names_in_``, then ``x[j]``.

    Returns
    -------
    ax : matplotlib Axes
        One bar per shown feature, the most probable at the top.

    Examples
    --------
    >>> from arboretum import PCFGTreeClassifier, load_dataset
    >>> from arboretum.plot import plot_split_inclusion
    >>> X, y = load_dataset("iris", return_X_y=True)
    >>> ax = plot_split_inclusion(PCFGTreeClassifier().fit(X, y))
    """
    p, source = _split_inclusion(estimator)
    names = list(feature_names) if feature_names is not None else _feature_names(estimator, p.size)
    if len(names) != p.size:
        raise ValueError(f"feature_names has {len(names)} names for {p.size} features")
    if top is not None and (isinstance(top, bool) or not isinstance(top, (int, np.integer)) or top < 1):
        raise ValueError(f"top must be an integer >= 1 or None; got {top!r}")
    order = np.argsort(-p, kind="stable")[: top if top is not None else p.size]
    ax = _new_axes(ax, (6.0, max(2.5, 0.32 * order.size + 1.2)))
    pos = np.arange(order.size)[::-1]
    color = "tab:blue" if source == "exact" else "tab:orange"
    bars = ax.barh(pos, p[order], color=color, alpha=0.85, height=0.7)
    for b, value in zip(bars, p[order]):
        ax.text(min(value, 1.0) + 0.01, b.get_y() + b.get_height() / 2, f"{value:.3f}", va="center",
                fontsize="small")
    ax.set_yticks(pos, [names[j] for j in order])
    ax.set_xlim(0.0, 1.12)
    ax.set_xlabel("P(tree splits on the feature | data)")
    title = ("exact posterior (BCART-PCFG)" if source == "exact" else _n_samples_text(estimator))
    ax.set_title(f"Split inclusion: {title}", fontsize="medium")
    ax.grid(axis="x", alpha=0.3)
    return ax


def plot_tree_sizes(estimator: Any, *, ax: Any = None, coverage: float = 1 - 1e-4) -> Any:
    """Bars of the posterior distribution of the number of leaves, with the MAP tree and the mean marked.

    Exact for :class:`~arboretum.pcfg.PCFGTreeClassifier`
    (:meth:`~arboretum.pcfg.PCFGTreeClassifier.n_leaves_distribution`), the
    weighted sample frequencies for the samplers (a Monte Carlo estimate).
    A solid line marks the size of ``tree_`` (the MAP tree, or the best
    sampled tree), a dashed line the posterior mean.

    Parameters
    ----------
    estimator : PCFGTreeClassifier, MCMCTreeSampler or SMCTreeSampler
        Fitted.
    ax : matplotlib Axes, optional
    coverage : float, default=1 - 1e-4
        The horizontal range covers this much posterior mass (and the marked
        sizes); every bar is drawn, so the bars' heights sum to one minus the
        truncated tail, which is given in the legend when it is above 1e-12.

    Returns
    -------
    ax : matplotlib Axes
        One bar per number of leaves with positive probability.

    Examples
    --------
    >>> from arboretum import PCFGTreeClassifier, load_dataset
    >>> from arboretum.plot import plot_tree_sizes
    >>> X, y = load_dataset("iris", return_X_y=True)
    >>> ax = plot_tree_sizes(PCFGTreeClassifier().fit(X, y))
    """
    if not 0.0 < coverage <= 1.0:
        raise ValueError(f"coverage must be in (0, 1]; got {coverage!r}")
    p, tail, source = _tree_sizes(estimator)
    k = np.flatnonzero(p > 0)
    mean = float(np.arange(p.size) @ p / p.sum())
    map_size = int(estimator.tree_.n_leaves)
    ax = _new_axes(ax, (6.0, 3.8))
    color = "tab:blue" if source == "exact" else "tab:orange"
    ax.bar(k, p[k], width=0.85, color=color, alpha=0.85,
           label="exact posterior" if source == "exact" else "sample frequency")
    best = "MAP tree" if source == "exact" else "best sampled tree"
    ax.axvline(map_size, color="k", lw=1.6, label=f"{best}: {map_size} leaves")
    ax.axvline(mean, color="tab:red", lw=1.4, ls="--", label=f"posterior mean: {mean:.2f}")
    if tail > 1e-12:
        ax.plot([], [], ls="none", label=f"mass above {p.size - 1} leaves: {tail:.2g}")
    cdf = np.cumsum(p) / p.sum()
    lo = int(np.searchsorted(cdf, (1 - coverage) / 2))
    hi = int(np.searchsorted(cdf, 1 - (1 - coverage) / 2))
    lo, hi = min(lo, map_size, int(math.floor(mean))), max(hi, map_size, int(math.ceil(mean)))
    ax.set_xlim(max(0.4, lo - 0.9), hi + 0.9)
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("number of leaves")
    ax.set_ylabel("posterior probability")
    what = "exact posterior (BCART-PCFG)" if source == "exact" else _n_samples_text(estimator)
    ax.set_title(f"Tree size: {what}", fontsize="medium")
    ax.legend(fontsize="small")
    ax.grid(axis="y", alpha=0.3)
    return ax


# ---------------------------------------------------------------------------
# plot_decision_regions
# ---------------------------------------------------------------------------


def _column(X: Any, j: int) -> np.ndarray:
    return np.asarray(X.iloc[:, j]) if hasattr(X, "iloc") else np.asarray(X)[:, j]


def _resolve_features(X: Any, features: Sequence[Any]) -> tuple[int, int]:
    if isinstance(features, (str, bytes)) or len(features) != 2:
        raise ValueError(f"features must be two column indices or names; got {features!r}")
    columns = list(X.columns) if hasattr(X, "columns") else None
    n = X.shape[1]
    out = []
    for f in features:
        if isinstance(f, (int, np.integer)) and not isinstance(f, (bool, np.bool_)):
            if not -n <= f < n:
                raise ValueError(f"feature index {f} is out of range for X with {n} columns")
            out.append(int(f) % n)
        elif columns is not None and f in columns:
            out.append(columns.index(f))
        else:
            raise ValueError(f"feature {f!r} is not a column of X"
                             + (f" (columns: {columns})" if columns is not None else " (use an index)"))
    if out[0] == out[1]:
        raise ValueError(f"features must be two different columns; got {features!r}")
    return out[0], out[1]


def _grid_frame(X: Any, j0: int, j1: int, g0: np.ndarray, g1: np.ndarray) -> Any:
    """Grid points as rows like X: columns j0, j1 from the grid, the others at their median (or mode)."""
    n = g0.size
    if hasattr(X, "iloc"):
        import pandas as pd

        data = {}
        for j, name in enumerate(X.columns):
            col = X.iloc[:, j]
            if j in (j0, j1):
                data[name] = g0 if j == j0 else g1
            elif col.dtype.kind in "iuf":
                data[name] = np.full(n, float(col.quantile(0.5, interpolation="nearest")))
            else:  # bool, category, text: the most frequent value, in the column's dtype
                data[name] = pd.Series([col.mode(dropna=True).iloc[0]] * n, dtype=col.dtype)
        return pd.DataFrame(data, columns=X.columns)
    A = np.asarray(X, dtype=np.float64)
    grid = np.empty((n, A.shape[1]), dtype=np.float64)
    grid[:] = np.quantile(A, 0.5, axis=0, method="nearest")
    grid[:, j0] = g0
    grid[:, j1] = g1
    return grid


def plot_decision_regions(
    estimator: Any,
    X: Any,
    y: Any = None,
    *,
    features: Sequence[Any] = (0, 1),
    ax: Any = None,
    resolution: int = 200,
    proba: bool | None = None,
    cmap: str = "viridis",
    scatter: bool = True,
    padding: float = 0.05,
    boundaries: bool | None = None,
) -> Any:
    """Draw the 2-D decision regions of any fitted classifier or regressor (or a :class:`Tree`), with the data on top.

    The estimator is evaluated on a ``resolution x resolution`` grid over the
    range of two columns of ``X`` (``features``), only through ``predict``
    and, for classifiers, ``predict_proba``; so it works for every model
    (trees with any split kind, and scikit-learn estimators).  **When X has
    more than two columns, the other columns are held at their median** (the
    most frequent value for non-numeric columns): the picture is a 2-D
    slice, not a marginal.  The median is taken as an observed value (the
    middle one, ``method="nearest"``), so 0/1 columns stay 0/1; a plotted
    column with only two distinct values is shown as two bands, the grid's
    points given to the estimator as one value or the other, so models of
    binary features (the samplers) work too.

    Classification: each class has a colour; with ``predict_proba`` the
    shade shows the confidence (white at a uniform prediction, the full
    colour at probability 1).  Regression: the predicted value through
    ``cmap`` with a colour bar.  The training points are drawn on top,
    coloured by ``y`` (classes or values) when given.

    Parameters
    ----------
    estimator : fitted estimator or Tree
        Anything with ``predict`` (and optionally ``predict_proba`` and
        ``classes_``), or an :class:`arboretum.Tree` (of any split kinds:
        thresholds, hyperplanes, quadratic surfaces...).
    X : array-like or pandas DataFrame of shape (n_samples, n_features)
        The data the grid is built from (and drawn); a DataFrame keeps its
        column names and dtypes, and names the axes.
    y : array-like of shape (n_samples,), optional
        Targets, to colour the points.
    features : (int or str, int or str), default=(0, 1)
        The two columns shown (indices, or names for a DataFrame).
    ax : matplotlib Axes, optional
    resolution : int, default=200
        Grid points per axis.
    proba : bool or None, default=None
        Shade by ``predict_proba`` (None: when the estimator has it).
    cmap : str, default="viridis"
        Colormap of regression values.
    scatter : bool, default=True
        Draw the points of ``X``.
    padding : float, default=0.05
        Margin around the data, as a fraction of each column's range.
    boundaries : bool or None, default=None
        Draw the borders between the tree's leaves (where ``apply`` changes,
        whatever the split kinds), so that leaves predicting the same class
        stay apart.  None: when there is a tree (a ``Tree``, or an estimator
        with ``tree_``).

    Returns
    -------
    ax : matplotlib Axes

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from arboretum import MAPTreeClassifier
    >>> from arboretum.plot import plot_decision_regions
    >>> iris = load_iris(as_frame=True)
    >>> X = iris.data[["petal length (cm)", "petal width (cm)"]]
    >>> clf = MAPTreeClassifier(time_limit=5).fit(X, iris.target_names[iris.target])
    >>> ax = plot_decision_regions(clf, X, iris.target_names[iris.target])
    """
    if isinstance(estimator, Tree):
        estimator = _TreeModel(estimator)
    if not hasattr(estimator, "predict"):
        raise TypeError(f"plot_decision_regions needs a fitted estimator with predict; got "
                        f"{type(estimator).__name__}")
    if isinstance(resolution, bool) or not isinstance(resolution, (int, np.integer)) or resolution < 2:
        raise ValueError(f"resolution must be an integer >= 2; got {resolution!r}")
    if not hasattr(X, "iloc"):
        X = np.asarray(X)
    if len(X.shape) != 2 or X.shape[1] < 2 or X.shape[0] < 1:
        raise ValueError(f"X must be 2-D with at least two columns and one row; got shape {X.shape}")
    j0, j1 = _resolve_features(X, features)
    c0 = np.asarray(_column(X, j0), dtype=np.float64)
    c1 = np.asarray(_column(X, j1), dtype=np.float64)
    if not (np.all(np.isfinite(c0)) and np.all(np.isfinite(c1))):
        raise ValueError("the two plotted columns of X must be finite numbers")

    def span(c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Grid of the axis, and the values given to the estimator (a two-valued column stays two-valued)."""
        lo, hi = float(c.min()), float(c.max())
        pad = padding * (hi - lo) if hi > lo else 0.5
        s = np.linspace(lo - pad, hi + pad, resolution)
        return s, (np.where(s < (lo + hi) / 2.0, lo, hi) if np.unique(c).size <= 2 else s)

    (s0, q0), (s1, q1) = span(c0), span(c1)
    Q0, Q1 = np.meshgrid(q0, q1)
    grid = _grid_frame(X, j0, j1, Q0.ravel(), Q1.ravel())
    names = list(map(str, X.columns)) if hasattr(X, "columns") else _feature_names(estimator, X.shape[1])
    pred = np.asarray(estimator.predict(grid))
    classes = getattr(estimator, "classes_", None)
    is_classifier = classes is not None or pred.dtype.kind not in "fc"
    ax = _new_axes(ax, (6.0, 4.8))
    extent = (s0[0], s0[-1], s1[0], s1[-1])
    if is_classifier:
        if classes is None:
            classes = np.unique(pred if y is None else np.concatenate([pred, np.asarray(y)]))
        classes = np.asarray(classes)
        colors = _class_colors(len(classes))
        use_proba = hasattr(estimator, "predict_proba") if proba is None else bool(proba)
        if use_proba:
            P = np.asarray(estimator.predict_proba(grid), dtype=np.float64)
            if P.shape != (grid.shape[0], len(classes)):
                raise ValueError(f"predict_proba returned shape {P.shape}; expected {(grid.shape[0], len(classes))}")
            k = np.argmax(P, axis=1)
            C = len(classes)
            conf = np.clip((P[np.arange(k.size), k] - 1.0 / C) / (1.0 - 1.0 / C), 0.0, 1.0) if C > 1 else 1.0
            rgb = _blend(colors[k], 0.08 + 0.47 * conf)
        else:
            k = _class_index(classes, pred)
            rgb = _blend(colors[np.maximum(k, 0)], np.where(k >= 0, 0.4, 0.0))
        ax.imshow(rgb.reshape(resolution, resolution, 3), origin="lower", extent=extent, aspect="auto",
                  interpolation="nearest", zorder=0)
        if scatter:
            if y is None:
                ax.scatter(c0, c1, s=14, c="0.2", edgecolors="white", linewidths=0.4, zorder=2)
            else:
                ky = _class_index(classes, np.asarray(y))
                point = np.where(ky[:, None] >= 0, colors[np.maximum(ky, 0)], 0.5)
                ax.scatter(c0, c1, s=18, c=point, edgecolors="k", linewidths=0.5, zorder=2)
        from matplotlib.patches import Patch

        handles = [Patch(fc=colors[i], ec="k", label=str(c)) for i, c in enumerate(classes)]
        ax.legend(handles=handles, fontsize="small", loc="best", framealpha=0.8)
    else:
        values = pred.astype(np.float64)
        lo, hi = float(values.min()), float(values.max())
        if y is not None:
            yv = np.asarray(y, dtype=np.float64)
            lo, hi = min(lo, float(yv.min())), max(hi, float(yv.max()))
        im = ax.imshow(values.reshape(resolution, resolution), origin="lower", extent=extent, aspect="auto",
                       interpolation="nearest", cmap=cmap, vmin=lo, vmax=hi if hi > lo else lo + 1, alpha=0.8,
                       zorder=0)
        if scatter:
            if y is None:
                ax.scatter(c0, c1, s=14, c="0.2", edgecolors="white", linewidths=0.4, zorder=2)
            else:
                ax.scatter(c0, c1, s=18, c=np.asarray(y, dtype=np.float64), cmap=cmap, vmin=lo,
                           vmax=hi if hi > lo else lo + 1, edgecolors="k", linewidths=0.5, zorder=2)
        ax.figure.colorbar(im, ax=ax, label="prediction")
    tree = getattr(estimator, "tree_", None)
    if (boundaries is None and isinstance(tree, Tree)) or boundaries:
        if not isinstance(tree, Tree):
            raise ValueError(f"boundaries=True needs a tree: a Tree or an estimator with tree_; got "
                             f"{type(estimator).__name__}")
        _draw_leaf_borders(ax, tree.apply(grid).reshape(resolution, resolution), extent)
    ax.set_xlim(s0[0], s0[-1])
    ax.set_ylim(s1[0], s1[-1])
    ax.set_xlabel(names[j0])
    ax.set_ylabel(names[j1])
    return ax


class _TreeModel:
    """A :class:`Tree` seen as a fitted estimator (``predict``, ``predict_proba``, ``classes_``, ``tree_``)."""

    def __init__(self, tree: Tree) -> None:
        self.tree_ = tree
        if tree.task == "classification":
            self.classes_ = tree.classes if tree.classes is not None else np.arange(tree.value.shape[1])
            self.predict_proba = tree.predict_proba

    def predict(self, X: Any) -> np.ndarray:
        return self.tree_.predict(X)


def _draw_leaf_borders(ax: Any, leaves: np.ndarray, extent: tuple) -> None:
    """Darken the grid cells where the leaf changes from a neighbour: the partition's borders,
    for any kind of split."""
    edge = np.zeros(leaves.shape, dtype=bool)
    edge[:, 1:] |= leaves[:, 1:] != leaves[:, :-1]
    edge[1:, :] |= leaves[1:, :] != leaves[:-1, :]
    rgba = np.zeros(leaves.shape + (4,))
    rgba[edge, 3] = 0.85
    ax.imshow(rgba, origin="lower", extent=extent, aspect="auto", interpolation="nearest", zorder=1)


def _class_index(classes: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Position of every label in ``classes`` (-1 when absent)."""
    lookup = {c: i for i, c in enumerate(classes.tolist())}
    return np.array([lookup.get(v, -1) for v in labels.tolist()], dtype=np.int64)


# ---------------------------------------------------------------------------
# convex polytope trees (arboretum.polytope): boundaries and training curves
# ---------------------------------------------------------------------------


def plot_polytopes(estimator: Any, X: Any, y: Any = None, *, features: Sequence[Any] = (0, 1), ax: Any = None,
                   resolution: int = 200, **kwargs: Any) -> Any:
    """The 2-D decision regions of a tree with ``POLYTOPE`` splits, and every node's polytope.

    :func:`plot_decision_regions` draws the regions (any model, through ``predict``); on top, the
    boundary ``lambda(x) = t`` of every polytope split is drawn (dashed) where the samples of the
    grid reach that node, labelled with the node id and its number of facets.  Columns other than
    ``features`` are held at their median, as in :func:`plot_decision_regions`.

    Parameters
    ----------
    estimator : fitted estimator with ``tree_``
    X, y, features, ax, resolution
        As in :func:`plot_decision_regions`.
    **kwargs
        Passed to :func:`plot_decision_regions`.

    Returns
    -------
    ax : matplotlib Axes
    """
    from .tree import POLYTOPE, polytope_intensity

    tree = _tree_of(estimator, "plot_polytopes")
    ax = plot_decision_regions(estimator, X, y, features=features, ax=ax, resolution=resolution, **kwargs)
    if not hasattr(X, "iloc"):
        X = np.asarray(X)
    j0, j1 = _resolve_features(X, features)
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    G0, G1 = np.meshgrid(np.linspace(x0, x1, resolution), np.linspace(y0, y1, resolution))
    grid = tree.encode(_grid_frame(X, j0, j1, G0.ravel(), G1.ravel()))
    colors = _class_colors(max(tree.n_nodes, 2))
    stack = [(0, np.ones(grid.shape[0], dtype=bool))]
    while stack:
        i, here = stack.pop()
        if tree.split_kind[i] == LEAF:
            continue
        if tree.split_kind[i] == POLYTOPE:
            lam = polytope_intensity(tree.polytopes[i], grid) - tree.threshold[i]
            field = np.ma.masked_where(~here, lam).reshape(G0.shape)
            ax.contour(G0, G1, field, levels=[0.0], colors=[colors[i % len(colors)] * 0.6], linestyles="--",
                       linewidths=1.6, zorder=3)
            inside = here & (lam <= 0)
            if inside.any():
                k = int(tree.polytopes[i]["facet"].sum())
                ax.annotate(f"node {i}: {k} facets", (float(np.median(G0.ravel()[inside])),
                                                      float(G1.ravel()[inside].max())),
                            fontsize="small", ha="center", va="top", zorder=4,
                            bbox={"boxstyle": "round", "fc": "white", "alpha": 0.7})
            left = lam <= 0
        else:
            left = tree._goes_left(i, grid, np.arange(grid.shape[0]))
        stack += [(int(tree.children_left[i]), here & left), (int(tree.children_right[i]), here & ~left)]
    return ax


def plot_training_curves(estimator_or_history: Any, *, ax: Any = None, key: str = "loss") -> Any:
    """Per-epoch training objective of every stage of a gradient-trained tree.

    One curve per level of the greedy phase (``level d``: the stumps of the nodes at depth d, trained
    together) and one for the end-to-end refinement, against the cumulative epoch.

    Parameters
    ----------
    estimator_or_history : fitted estimator with ``epoch_history_``, or that dict
        A dict of lists ``phase``, ``level``, ``epoch``, and ``key``.
    ax : matplotlib Axes, optional
    key : {"loss", "objective", "tau"}, default="loss"
        The soft data objective, the objective with the prior, or the gate steepness.

    Returns
    -------
    ax : matplotlib Axes
    """
    history = getattr(estimator_or_history, "epoch_history_", estimator_or_history)
    if not isinstance(history, dict) or key not in history or "phase" not in history:
        raise TypeError("plot_training_curves needs a fitted estimator with epoch_history_ (a dict of lists) "
                        "or that dict")
    ax = _new_axes(ax, (6.0, 4.0))
    phase, level, values = np.asarray(history["phase"]), np.asarray(history["level"]), np.asarray(history[key], float)
    x = np.arange(values.size)
    stages = list(dict.fromkeys(zip(phase.tolist(), level.tolist())))
    for ph, lv in stages:
        sel = (phase == ph) & (level == lv)
        ax.plot(x[sel], values[sel], lw=1.5, label="refinement" if ph == "refine" else f"level {lv}")
    ax.set_xlabel("epoch (cumulative)")
    ax.set_ylabel({"loss": "soft training objective", "objective": "objective with prior"}.get(key, key))
    if stages:
        ax.legend(fontsize="small")
    return ax
