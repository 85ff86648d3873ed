"""The decision tree shared by every model of arboretum.

A :class:`Tree` stores its nodes in flat arrays (node 0 is the root), much like
scikit-learn's ``tree_`` object, but several kinds of split can coexist in the
same tree.  A sample goes to the LEFT child when the split's test is true:

=============  ===========================================================
kind           test (sample goes left when true)
=============  ===========================================================
``BINARY``     ``x[f] == 0`` (implemented as ``x[f] <= 0.5``)
``THRESHOLD``  ``x[f] <= threshold[i]``
``CATEGORY``   ``x[f]`` is one of ``categories[i]``
``HYPERPLANE`` ``dot(coefs[i], x) <= threshold[i]`` (``feature[i] == -1``)
``QUADRATIC``  ``dot(coefs[i], quadratic_features(x)) <= threshold[i]``
               (``feature[i] == -1``; the monomials ``x_j`` then ``x_j x_k``,
               ``j <= k``: see :func:`quadratic_features`)
``POLYTOPE``   ``sum_k r_k softplus(A_k . x + b_k) <= threshold[i]`` (inside a
               convex polytope; ``polytopes[i]`` holds ``r``, ``bias``,
               ``coefs`` = A, the ``facet`` flags and, from a fit, the
               printed polytope's ``offset`` and ``agreement``;
               ``feature[i] == -1``)
``CONJUNCTION`` every condition ``x[f] in codes`` of ``conjunctions[i]`` holds
               (``feature[i] == -1``; a rule of a rule list)
=============  ===========================================================

A third task, ``"density"``, is for the density trees and lists of
:mod:`arboretum.density`: ``value`` holds ``[P, f, V]`` per node (probability
mass, mass per configuration, number of configurations) and ``counts`` the
training rows; ``predict`` returns ``f``.

Missing values (NaN) of numeric features fail every test and therefore go right.

A tree carries what a reader needs: ``feature_names`` and, for categorical
features, ``feature_categories`` (the category labels; a label's *code* is
its position there).  ``apply``, ``predict`` and ``predict_proba`` take raw
``X`` (a NumPy array or a pandas DataFrame, matched by column name when the
tree has names) with labels in the categorical columns, and ``export_text``,
``to_dot`` and ``to_paren`` print ``colour == red`` and ``age <= 42.5``.

Trees are made with a :class:`TreeBuilder`, read back with
:meth:`Tree.from_dict` / :meth:`Tree.from_json` (a versioned JSON format,
validated on load), or parsed from the compact parenthesised notation of the
MAPTree paper with :meth:`Tree.from_paren`.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Callable

import numpy as np
from scipy import sparse

__all__ = [
    "format_threshold",
    "split_texts",
    "LEAF",
    "BINARY",
    "THRESHOLD",
    "CATEGORY",
    "HYPERPLANE",
    "QUADRATIC",
    "quadratic_features",
    "quadratic_terms",
    "POLYTOPE",
    "CONJUNCTION",
    "SPLIT_KIND_NAMES",
    "Tree",
    "TreeBuilder",
]

LEAF = 0
BINARY = 1
THRESHOLD = 2
CATEGORY = 3
HYPERPLANE = 4
QUADRATIC = 5
POLYTOPE = 6  # convex polytope trees (arboretum.polytope)
CONJUNCTION = 7  # density rule lists

#: Human-readable name of every split kind, indexed by its code.
SPLIT_KIND_NAMES: dict[int, str] = {
    LEAF: "LEAF",
    BINARY: "BINARY",
    THRESHOLD: "THRESHOLD",
    CATEGORY: "CATEGORY",
    HYPERPLANE: "HYPERPLANE",
    QUADRATIC: "QUADRATIC",
    POLYTOPE: "POLYTOPE",
    CONJUNCTION: "CONJUNCTION",
}
_KIND_BY_NAME = {name.lower(): code for code, name in SPLIT_KIND_NAMES.items()}
_TASKS = ("classification", "regression", "density")

_FORMAT = "arboretum.Tree"
_DIGITS = frozenset("0123456789")
#: Version written by :meth:`Tree.to_dict`; version 1 (no ``feature_categories``) is still read.
_VERSION = 2
_READABLE_VERSIONS = (1, 2)


# ---------------------------------------------------------------------------
# small helpers
# ---------------------------------------------------------------------------


def _check_task(task: str) -> str:
    if task not in _TASKS:
        raise ValueError(f"task must be one of {list(_TASKS)}; got {task!r}")
    return task


# -- degree-2 hypersurfaces (QUADRATIC) ------------------------------------


def quadratic_terms(n_features: int) -> list[tuple[int, ...]]:
    """The monomials of a ``QUADRATIC`` split, in the order of its coefficients: ``(j,)`` for
    ``x_j`` (``j = 0 .. D-1``), then ``(j, k)`` for ``x_j * x_k`` with ``j <= k`` in lexicographic
    order; ``D + D (D + 1) / 2`` terms (spec-002's lifted dimension ``G``)."""
    d = int(n_features)
    return [(j,) for j in range(d)] + [(j, k) for j in range(d) for k in range(j, d)]


def quadratic_features(X: Any) -> np.ndarray:
    """The lifted points ``phi(x)`` of a ``QUADRATIC`` split: every monomial of degree 1 and 2 of
    the rows of ``X`` (n_samples, n_features), in the order of :func:`quadratic_terms`."""
    X = np.asarray(X, dtype=np.float64)
    d = X.shape[1]
    j, k = np.triu_indices(d)
    return np.concatenate([X, X[:, j] * X[:, k]], axis=1)


def _polynomial_text(coefs: np.ndarray, terms: list[str], decimals: int) -> str:
    """``0.5*x0^2 - 1.2*x0*x1 + 0.3*x1``: the non-zero terms with their signed, rounded coefficients."""
    parts = [("-" if c < 0 else "+", f"{_fmt_num(abs(c), decimals)}*{t}") for c, t in zip(coefs, terms) if c != 0]
    if not parts:
        return "0"
    return ("-" if parts[0][0] == "-" else "") + parts[0][1] + "".join(f" {s} {t}" for s, t in parts[1:])


def _parse_kind(kind: int | str) -> int:
    """Return the integer code of a split kind given as code or name."""
    allowed = ", ".join(f"{n} ({c})" for c, n in SPLIT_KIND_NAMES.items() if c != LEAF)
    if isinstance(kind, str):
        code = _KIND_BY_NAME.get(kind.lower())
    elif isinstance(kind, (int, np.integer)) and not isinstance(kind, bool):
        code = int(kind)
    else:
        code = None
    if code is None or code == LEAF or code not in SPLIT_KIND_NAMES:
        raise ValueError(f"kind must be one of {allowed}; got {kind!r}")
    return code


def _fmt_num(x: float, decimals: int | None) -> str:
    """Round ``x`` to ``decimals`` places (None: exact) and drop useless trailing zeros."""
    x = float(x)
    if math.isfinite(x) and x == round(x) and abs(x) < 1e15:
        return str(int(round(x)))
    if decimals is None:
        return repr(x)
    text = f"{x:.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def format_threshold(t: float, decimals: int | None = 3) -> str:
    """Text of a threshold: exact when it is short (``47.5``, ``2.45``) or ``decimals`` is None,
    else rounded to ``decimals`` places.

    Thresholds from the :class:`~arboretum.binarizer.Binarizer` are short
    decimals by construction and print exactly; others (fitted hyperplanes, a
    user's ``0.1 + 0.2``) print with ``decimals`` decimal places, trailing
    zeros dropped.  The one exception in the Binarizer, a cut between two
    adjacent floats (``999999.9999999999`` and ``1e6``), is the lower one,
    which only ``decimals=None`` prints exactly.
    """
    t = float(t)
    if math.isfinite(t) and t == math.floor(t) and abs(t) < 1e15:
        return str(int(t))
    text = repr(t)
    digits = sum(ch.isdigit() for ch in text.split("e")[0])
    if digits <= 10 or decimals is None:
        return text
    return _fmt_num(t, decimals)


def _format_label(v: Any) -> str:
    from .data import format_label

    return format_label(v)


def split_texts(
    name: str, kind: int, threshold: float = math.nan, categories: Any = (), labels: Any = None,
    decimals: int | None = 3,
) -> tuple[str, str]:
    """Texts of the left and right branches of a split on one feature.

    Parameters
    ----------
    name : str
        The feature's name.
    kind : int
        ``BINARY``, ``THRESHOLD`` or ``CATEGORY``.
    threshold : float
        The threshold of a ``THRESHOLD`` split (a code ``i + 0.5`` on an
        ordered categorical feature).
    categories : sequence of float
        The codes sent left by a ``CATEGORY`` split.
    labels : sequence or None
        The feature's category labels (``Tree.feature_categories[j]``), or
        None for a numeric feature.
    decimals : int or None, default=3
        Decimals of thresholds that are not short (:func:`format_threshold`);
        None prints every threshold exactly.

    Returns
    -------
    left, right : str
        ``("x3 = 0", "x3 = 1")``, ``("age <= 42.5", "age >  42.5")``,
        ``("colour == red", "colour != red")``, ``("colour in {red, blue}",
        "colour not in {red, blue}")`` or ``("size <= M", "size >  M")``.
    """
    if kind == BINARY:
        return f"{name} = 0", f"{name} = 1"
    if kind == THRESHOLD:
        if labels is not None:  # ordered categorical: threshold i + 0.5 on the codes
            i = min(max(int(math.floor(threshold)), 0), len(labels) - 1)
            label = _format_label(labels[i])
            return f"{name} <= {label}", f"{name} >  {label}"
        t = format_threshold(threshold, decimals)
        return f"{name} <= {t}", f"{name} >  {t}"
    if kind == CATEGORY:
        if labels is not None:
            texts = [_format_label(labels[int(c)]) if 0 <= int(c) < len(labels) else _fmt_num(c, decimals)
                     for c in categories]
        else:
            texts = [_fmt_num(c, decimals) for c in categories]
        if len(texts) == 1:
            return f"{name} == {texts[0]}", f"{name} != {texts[0]}"
        text = "{" + ", ".join(texts) + "}"
        return f"{name} in {text}", f"{name} not in {text}"
    allowed = ", ".join(f"{n} ({c})" for c, n in SPLIT_KIND_NAMES.items()
                        if c not in (LEAF, HYPERPLANE, QUADRATIC, POLYTOPE))
    raise ValueError(f"kind must be one of {allowed}; got {kind!r}")


def _encode_label(v: Any, what: str) -> Any:
    """A category or class label as a JSON value (numpy scalars become Python ones)."""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, bool) or isinstance(v, (int, str)):
        return v
    if isinstance(v, float):
        return _encode_float(v)
    raise TypeError(f"{what} must be int, float, str or bool to be serialised; got {type(v).__name__}")


def _encode_float(v: float) -> float | str | None:
    """JSON-safe float: NaN becomes None and infinities become strings."""
    if math.isnan(v):
        return None
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return float(v)


def _decode_float(v: Any) -> float:
    if v is None:
        return math.nan
    if v == "Infinity":
        return math.inf
    if v == "-Infinity":
        return -math.inf
    return float(v)


def _encode_floats(arr: np.ndarray) -> list:
    arr = np.asarray(arr, dtype=np.float64)
    if arr.ndim == 1:
        return [_encode_float(v) for v in arr.tolist()]
    return [_encode_floats(row) for row in arr]


def _decode_floats(data: Any, ndim: int) -> np.ndarray:
    if ndim == 1:
        return np.array([_decode_float(v) for v in data], dtype=np.float64)
    rows = [_decode_floats(row, ndim - 1) for row in data]
    if not rows:
        return np.zeros((0,) * ndim, dtype=np.float64)
    return np.stack(rows)


def _as_feature_categories(feature_categories: Sequence[Any] | None, n_features: int) -> list | None:
    """Validate ``feature_categories``: None, or one entry (None or distinct labels) per feature."""
    if feature_categories is None:
        return None
    fc = list(feature_categories)
    if len(fc) != n_features:
        raise ValueError(f"feature_categories has {len(fc)} entries but n_features={n_features}")
    out: list = []
    for j, labels in enumerate(fc):
        if labels is None:
            out.append(None)
            continue
        arr = np.empty(len(labels), dtype=object)
        arr[:] = [v.item() if isinstance(v, np.generic) else v for v in labels]
        if arr.size == 0:
            raise ValueError(f"feature_categories[{j}] is empty; use None for a numeric feature")
        if len(set(arr.tolist())) != arr.size:
            raise ValueError(f"feature_categories[{j}] repeats a label: {arr.tolist()}")
        out.append(arr)
    return out if any(a is not None for a in out) else None


def _isin(values: np.ndarray, codes: Iterable[int]) -> np.ndarray:
    """``np.isin(values, codes)`` for the few split-kind codes (a broadcast comparison: a tenth of
    ``np.isin``'s fixed cost, which dominated the validation of a small tree)."""
    return (values[:, None] == np.fromiter(codes, dtype=np.int64)[None, :]).any(axis=1)


def _as_float_vector(values: Any, what: str) -> np.ndarray:
    arr = np.atleast_1d(np.asarray(values, dtype=np.float64))
    if arr.ndim != 1:
        raise ValueError(f"{what} must be a 1-D array; got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{what} must be finite; got {arr.tolist()}")
    return arr



# ---------------------------------------------------------------------------
# POLYTOPE splits (convex polytope trees, arboretum.polytope): numpy only, so that
# prediction, printing and JSON need no torch
# ---------------------------------------------------------------------------

_POLYTOPE_FIELDS = ("r", "bias", "coefs", "facet", "offset", "agreement")


def _as_polytope(p: Mapping[str, Any], n_features: int, node: int) -> dict[str, np.ndarray]:
    """Validate one node's committee: ``r`` (K > 0), ``bias`` (K), ``coefs`` (K x n_features), ``facet`` (K),
    and optionally the printed polytope's ``offset`` (K) and ``agreement`` (1), see :func:`polytope_facets`."""
    if not isinstance(p, Mapping) or not {"r", "bias", "coefs"} <= set(p):
        raise ValueError(f"polytopes[{node}] must be a mapping with r, bias and coefs")
    r = np.atleast_1d(np.asarray(p["r"], dtype=np.float64)).copy()
    bias = np.atleast_1d(np.asarray(p["bias"], dtype=np.float64)).copy()
    coefs = np.asarray(p["coefs"], dtype=np.float64).reshape(r.shape[0], -1).copy() if r.ndim == 1 else None
    facet = np.asarray(p.get("facet", np.ones_like(r)), dtype=np.float64).copy()
    k = r.shape[0]
    if r.ndim != 1 or k < 1 or bias.shape != (k,) or coefs is None or coefs.shape != (k, n_features) \
            or facet.shape != (k,):
        raise ValueError(f"polytopes[{node}] needs r and bias of length K >= 1, coefs of shape "
                         f"(K, n_features={n_features}) and facet of length K")
    if not (np.all(np.isfinite(r)) and np.all(r > 0) and np.all(np.isfinite(bias)) and np.all(np.isfinite(coefs))):
        raise ValueError(f"polytopes[{node}] must hold finite numbers and positive weights r")
    if not np.all((facet == 0) | (facet == 1)):
        raise ValueError(f"polytopes[{node}]['facet'] must hold 0/1 flags")
    out = {"r": r, "bias": bias, "coefs": coefs, "facet": facet}
    if ("offset" in p) != ("agreement" in p):
        raise ValueError(f"polytopes[{node}] needs both offset and agreement, or neither")
    if "offset" in p:
        offset = np.atleast_1d(np.asarray(p["offset"], dtype=np.float64)).copy()
        agreement = np.atleast_1d(np.asarray(p["agreement"], dtype=np.float64)).copy()
        if offset.shape != (k,) or not np.all(np.isfinite(offset)) or agreement.shape != (1,) \
                or not 0.0 <= agreement[0] <= 1.0:
            raise ValueError(f"polytopes[{node}] needs a finite offset of length K and one agreement in [0, 1]")
        out.update(offset=offset, agreement=agreement)
    return out


def _decode_polytope(v: Any) -> dict[str, np.ndarray]:
    if not isinstance(v, Mapping):
        raise TypeError("'polytopes' must map node ids to objects with r, bias, coefs and facet")
    return {k: _decode_floats(v[k], 2 if k == "coefs" else 1) for k in _POLYTOPE_FIELDS if k in v}


def softplus(Z: np.ndarray) -> np.ndarray:
    """``log(1 + e^z)`` elementwise, as ``max(z, 0) + log1p(e^-|z|)``: stable for any ``z`` and
    about three times faster than ``np.logaddexp(0, z)`` (it dominated the cost of cutting a
    stump of a convex polytope tree on many rows)."""
    out = np.exp(-np.abs(Z))
    np.log1p(out, out=out)
    out += np.maximum(Z, 0.0)
    return out


#: Rows per block where a function of every row and every expert of a polytope split is computed
#: and reduced per row (the same values as at once, without n x K temporaries).
BLOCK_ROWS = 16_384


def polytope_intensity(p: Mapping[str, np.ndarray], X: np.ndarray, rows: int = BLOCK_ROWS) -> np.ndarray:
    """The committee intensity ``lambda(x) = sum_k r_k softplus(A_k . x + b_k)`` (float64).

    Computed ``rows`` rows at a time: each row's value is the same, and the temporaries stay a
    few MB instead of four ``n x K`` arrays (on 500,000 rows and 30 experts, 480 MB of fresh
    memory per call, seconds on a virtual machine that provides pages slowly)."""
    X = np.asarray(X, dtype=np.float64)
    A, b, r = p["coefs"].T, p["bias"], p["r"]
    out = np.empty(X.shape[0])
    for a in range(0, X.shape[0], rows):
        out[a:a + rows] = softplus(X[a:a + rows] @ A + b) @ r
    return out


def polytope_facets(p: Mapping[str, np.ndarray], t: float) -> tuple[np.ndarray, np.ndarray]:
    """The facets ``A_k . x <= c_k`` of the flagged experts, sorted by decreasing ``r_k``: an
    approximate, readable form of the rule ``lambda(x) <= t`` (spec §3.9).

    With the fit's ``offset`` (:func:`arboretum.polytope.search.printed_polytope`), ``c_k`` is the
    largest ``A_k . x`` of the node's training rows that go left: the smallest such polytope holding
    them all, which routes the share ``agreement`` of the node's training rows as the exact rule
    does.  Without it (a tree built by hand), Theorem 1's polytope, which contains
    ``{lambda <= t}`` but can lie far outside it: ``c_k = ln(exp(t / r_k) - 1) - b_k`` (``-inf``
    when ``t <= 0``: the region is empty).
    """
    keep = np.flatnonzero(p["facet"] == 1)
    keep = keep[np.argsort(-p["r"][keep], kind="stable")]
    if "offset" in p:
        return p["coefs"][keep], p["offset"][keep]
    u = t / p["r"][keep]
    with np.errstate(divide="ignore", invalid="ignore"):
        offset = np.where(u > 30, u + np.log1p(-np.exp(-np.minimum(u, 700))), np.log(np.expm1(np.maximum(u, 0))))
    offset = np.where(u > 0, offset, -np.inf)
    return p["coefs"][keep], offset - p["bias"][keep]


#: At most this many terms are written per facet in ``export_text`` (the largest first); the rest are
#: counted ("+ 1,024 smaller terms (|coefficient| <= 0.05)"), so that 2,048 fingerprint bits stay readable.
POLYTOPE_MAX_TERMS = 8


def polytope_texts(p: Mapping[str, np.ndarray], t: float, names: Sequence[str], decimals: int = 3) -> tuple[str, str]:
    """(left, right) texts of a POLYTOPE split: the active facets as inequalities, one per line.

    Each facet (:func:`polytope_facets`) is scaled so that its largest coefficient is 1 and written
    with that feature first (``age - 0.25*visits <= 1.3``, ``>=`` when the scale is negative);
    coefficients under ``10**-decimals`` of the largest are dropped, and beyond
    :data:`POLYTOPE_MAX_TERMS` terms the smaller ones are only counted.  The polytope is approximate:
    the last line gives the exact rule ``lambda(x) <= t`` and, for a fitted tree, the share of the
    node's training rows that the polytope routes as the rule does.
    """
    A, c = polytope_facets(p, t)
    lines = []
    for a, off in zip(A, c):
        j0 = int(np.argmax(np.abs(a)))
        scale = a[j0]
        if scale == 0 or not np.isfinite(off):
            lines.append("0 <= " + ("-inf" if not np.isfinite(off) else _fmt_num(off, decimals)))
            continue
        b = np.round(a / scale, decimals)
        order = [j0] + [j for j in np.argsort(-np.abs(b), kind="stable") if j != j0 and b[j] != 0]
        text = names[j0]
        for j in order[1:POLYTOPE_MAX_TERMS]:
            text += f" {'-' if b[j] < 0 else '+'} {_fmt_num(abs(b[j]), decimals)}*{names[j]}"
        if len(order) > POLYTOPE_MAX_TERMS:
            rest = len(order) - POLYTOPE_MAX_TERMS
            text += (f" + {rest:,} smaller term{'s' * (rest != 1)} (|coefficient| <= "
                     f"{_fmt_num(abs(b[order[POLYTOPE_MAX_TERMS]]), decimals)})")
        rel = "<=" if scale > 0 else ">="
        lines.append(f"{text} {rel} {_fmt_num(off / scale, decimals)}")
    k, n_experts = len(lines), p["r"].shape[0]
    head = "\n  and ".join(lines)
    how = (f"agrees with the exact rule on {100 * float(p['agreement'][0]):.1f}% of the node's training rows"
           if "agreement" in p else "contains the exact rule's region (Theorem 1)")
    left = (f"{head}\n  [approximately: a polytope of {k} facet{'s' * (k != 1)}, {n_experts} expert{'s' * (n_experts != 1)}; "
            f"exact rule sum_k r_k softplus(A_k.x + b_k) <= {_fmt_num(t, decimals)}; the polytope {how}]")
    return left, f"otherwise (sum_k r_k softplus(A_k.x + b_k) > {_fmt_num(t, decimals)})"


# ---------------------------------------------------------------------------
# Tree
# ---------------------------------------------------------------------------


# -- density trees and rule lists (task "density", CONJUNCTION splits) ---------------------------------


def _as_conjunctions(conjunctions: Mapping[int, Any] | None) -> dict[int, list[tuple[int, np.ndarray]]]:
    out = {}
    for k, conds in (conjunctions or {}).items():
        if not isinstance(conds, (list, tuple)) or not conds:
            raise ValueError(f"conjunctions[{k}] must be a non-empty list of (feature, codes); got {conds!r}")
        items = []
        for cond in conds:
            f, codes = cond
            if isinstance(f, bool) or not isinstance(f, (int, np.integer)):
                raise TypeError(f"conjunctions[{k}]: a feature must be an integer; got {f!r}")
            items.append((int(f), np.unique(np.asarray(codes, dtype=np.float64).ravel())))
        out[int(k)] = items
    return out


def _same_conjunction(a: list, b: list) -> bool:
    return len(a) == len(b) and all(f == g and np.array_equal(c, d) for (f, c), (g, d) in zip(a, b))


def _fmt_mass(x: float, decimals: int) -> str:
    """A probability or density: ``decimals`` places, or significant digits below ``10**-decimals``."""
    return f"{x:.{decimals}g}" if 0 < abs(x) < 10.0 ** -decimals else f"{x:.{decimals}f}"


def _density_leaf_text(value: np.ndarray, n: float, decimals: int, show_counts: bool, sep: str) -> str:
    """``"P=0.0359, f=0.0179, V=2  (n=79)"``: mass, mass per configuration, volume (the paper's Figure 3)."""
    p, f, v = (float(x) for x in value)
    vol = str(int(round(v))) if v < 1e15 else f"{v:.3g}"
    text = f"P={_fmt_mass(p, decimals)}, f={_fmt_mass(f, decimals)}, V={vol}"
    return text + (f"{sep}(n={_fmt_num(n, decimals)})" if show_counts else "")


class Tree:
    """A decision tree stored as flat node arrays.

    Build trees with :class:`TreeBuilder` rather than by calling this
    constructor; the constructor validates the arrays it is given.

    Parameters
    ----------
    children_left, children_right : array-like of int, shape (n_nodes,)
        Child ids, ``-1`` at leaves.
    split_kind : array-like of int, shape (n_nodes,)
        One of ``LEAF``, ``BINARY``, ``THRESHOLD``, ``CATEGORY``, ``HYPERPLANE``, ``QUADRATIC``.
    feature : array-like of int, shape (n_nodes,)
        Feature tested at the node; ``-1`` at leaves and hyperplane splits.
    threshold : array-like of float, shape (n_nodes,)
        Split threshold; ``NaN`` at leaves and category splits, ``0.5`` for
        binary splits.
    value : array-like of float, shape (n_nodes, n_values)
        Classification: class probabilities predicted at the node.
        Regression: predicted mean in column 0.
    counts : array-like of float, shape (n_nodes, n_classes) or (n_nodes, 1)
        Training class counts (possibly weighted); for regression the
        number of samples.
    depth : array-like of int, shape (n_nodes,)
        Depth of each node, 0 at the root.
    n_features : int
        Number of input features.
    classes : array-like or None, default=None
        Class labels (classification only); ``None`` means predictions are
        class indices.
    task : {"classification", "regression"}, default="classification"
    feature_names : list of str or None, default=None
    categories : dict of int to array-like, default=None
        Category codes sent left at every ``CATEGORY`` node.
    coefs : dict of int to array-like, default=None
        Coefficients of every ``HYPERPLANE`` node (length ``n_features``) and
        ``QUADRATIC`` node (one per monomial of :func:`quadratic_terms`).
    feature_categories : list of (array-like or None), default=None
        For every feature, its category labels (a label's code is its
        position) when the feature is categorical, else None.  The tree then
        reads labels in that column of ``X`` and prints them in its splits.
        ``CATEGORY`` splits and ``THRESHOLD`` splits on a categorical feature
        (an ordered one, split on its codes) need it to print labels.
    conjunctions : dict of int to list of (feature, codes), default=None
        The conditions of every ``CONJUNCTION`` node (all must hold to go left).

    Attributes
    ----------
    children_left, children_right, split_kind, feature, threshold, value,
    counts, depth, n_features, classes, task, feature_names, categories, coefs,
    feature_categories
        As above, stored as numpy arrays with dtypes int64, int64, int8,
        int64, float64, float64, float64, int64 (labels as object arrays).
    """

    def __init__(
        self,
        children_left: Any,
        children_right: Any,
        split_kind: Any,
        feature: Any,
        threshold: Any,
        value: Any,
        counts: Any,
        depth: Any,
        n_features: int,
        *,
        classes: Any = None,
        task: str = "classification",
        feature_names: Sequence[str] | None = None,
        categories: Mapping[int, Any] | None = None,
        coefs: Mapping[int, Any] | None = None,
        feature_categories: Sequence[Any] | None = None,
        polytopes: Mapping[int, Mapping[str, Any]] | None = None,
        conjunctions: Mapping[int, Any] | None = None,
    ) -> None:
        self.conjunctions = _as_conjunctions(conjunctions)
        self.children_left = np.asarray(children_left, dtype=np.int64).copy()
        self.children_right = np.asarray(children_right, dtype=np.int64).copy()
        self.split_kind = np.asarray(split_kind, dtype=np.int8).copy()
        self.feature = np.asarray(feature, dtype=np.int64).copy()
        self.threshold = np.asarray(threshold, dtype=np.float64).copy()
        self.value = np.asarray(value, dtype=np.float64).copy()
        self.counts = np.asarray(counts, dtype=np.float64).copy()
        self.depth = np.asarray(depth, dtype=np.int64).copy()
        if isinstance(n_features, bool) or not isinstance(n_features, (int, np.integer)):
            raise TypeError(f"n_features must be an integer >= 1; got {n_features!r}")
        if n_features < 1:
            raise ValueError(f"n_features must be an integer >= 1; got {n_features}")
        self.n_features = int(n_features)
        self.task = _check_task(task)
        self.classes = None if classes is None else np.asarray(classes).copy()
        self.feature_names = None if feature_names is None else [str(n) for n in feature_names]
        self.categories = {
            int(k): np.unique(np.asarray(v, dtype=np.float64)) for k, v in (categories or {}).items()
        }
        self.coefs = {int(k): np.asarray(v, dtype=np.float64).copy() for k, v in (coefs or {}).items()}
        self.feature_categories = _as_feature_categories(feature_categories, self.n_features)
        self.polytopes = {int(k): _as_polytope(v, self.n_features, int(k)) for k, v in (polytopes or {}).items()}
        self._validate()

    # -- validation ---------------------------------------------------------

    def _validate(self) -> None:
        n = self.children_left.shape[0]
        if n == 0:
            raise ValueError("a tree needs at least one node; got 0 nodes")
        for name in ("children_left", "children_right", "split_kind", "feature", "threshold", "depth"):
            arr = getattr(self, name)
            if arr.shape != (n,):
                raise ValueError(f"{name} must have shape ({n},) like children_left; got {arr.shape}")
        for name in ("value", "counts"):
            arr = getattr(self, name)
            if arr.ndim != 2 or arr.shape[0] != n or arr.shape[1] < 1:
                raise ValueError(f"{name} must have shape ({n}, k) with k >= 1; got {arr.shape}")
        self._validate_outputs()
        if not self._small_threshold_tree_ok():
            self._validate_nodes()
            self._validate_shape()
        if self.feature_names is not None and len(self.feature_names) != self.n_features:
            raise ValueError(
                f"feature_names has {len(self.feature_names)} names but n_features={self.n_features}"
            )

    #: Most nodes of a tree that :meth:`_small_threshold_tree_ok` checks in plain Python.
    _SMALL_TREE = 64

    def _small_threshold_tree_ok(self) -> bool:
        """A fast accept for the commonest small trees (a fit's tree of a few nodes, where the
        vectorised checks' fixed cost, a tenth of a millisecond, dominated the fit): True only for
        a tree of at most ``_SMALL_TREE`` nodes, all ``LEAF`` or ``THRESHOLD``, without any table
        entry, that passes every check of :meth:`_validate_nodes` and :meth:`_validate_shape`
        (leaves: children -1/-1, feature -1, threshold NaN; splits: a feature in range, a
        threshold, two distinct children in ``[1, n)``; every node but the root the child of
        exactly one node, all reachable from the root, depths 0 at the root and +1 per level).
        False sends the tree through those checks, which name what is wrong."""
        n = self.children_left.shape[0]
        if n > self._SMALL_TREE or self.categories or self.coefs or self.polytopes or self.conjunctions:
            return False
        kinds, left, right = self.split_kind.tolist(), self.children_left.tolist(), self.children_right.tolist()
        feature, thr, depth = self.feature.tolist(), self.threshold.tolist(), self.depth.tolist()
        if depth[0] != 0:
            return False
        parent = [-1] * n
        for i in range(n):
            if kinds[i] == LEAF:
                if left[i] != -1 or right[i] != -1 or feature[i] != -1 or thr[i] == thr[i]:
                    return False
            elif kinds[i] == THRESHOLD:
                if not 0 <= feature[i] < self.n_features or thr[i] != thr[i]:
                    return False
                for c in (left[i], right[i]):
                    if not 1 <= c < n or c == i or parent[c] != -1 or depth[c] != depth[i] + 1:
                        return False
                    parent[c] = i
            else:
                return False
        if any(p < 0 for p in parent[1:]):
            return False
        # one parent each and depths +1 per edge: following parents from any node ends at the
        # root after depth[i] steps, so every node is reachable and there is no cycle
        return True

    def _validate_outputs(self) -> None:
        n_values, n_counts = self.value.shape[1], self.counts.shape[1]
        if self.task == "density":
            if self.classes is not None or n_values != 3 or n_counts != 1:
                raise ValueError(f"a density tree has value columns [P, f, V], one count column and no classes; "
                                 f"got {n_values} value and {n_counts} count columns")
        elif self.task == "classification":
            if n_counts != n_values:
                raise ValueError(
                    f"for classification, counts and value need one column per class; "
                    f"got {n_counts} and {n_values} columns"
                )
            if self.classes is not None:
                if self.classes.ndim != 1 or self.classes.shape[0] != n_values:
                    raise ValueError(
                        f"classes must be a 1-D array of {n_values} labels (one per column of value); "
                        f"got shape {self.classes.shape}"
                    )
        else:
            if self.classes is not None:
                raise ValueError("classes must be None for a regression tree")
            if n_counts != 1:
                raise ValueError(f"for regression, counts must have 1 column; got {n_counts}")

    def _validate_nodes(self) -> None:
        n = self.n_nodes
        kinds = self.split_kind
        left, right, feature, thr = self.children_left, self.children_right, self.feature, self.threshold

        def first(mask: np.ndarray) -> int | None:
            return int(mask.argmax()) if mask.any() else None

        if (i := first(~_isin(kinds, SPLIT_KIND_NAMES))) is not None:
            raise ValueError(
                f"split_kind[{i}] = {kinds[i]} is not a valid split kind; allowed: {SPLIT_KIND_NAMES}"
            )
        leaf = kinds == LEAF
        if (i := first(leaf & ((left != -1) | (right != -1)))) is not None:
            raise ValueError(f"leaf node {i} must have children -1/-1; got {left[i]}/{right[i]}")
        if (i := first(leaf & ((feature != -1) | ~np.isnan(thr)))) is not None:
            raise ValueError(
                f"leaf node {i} must have feature -1 and threshold NaN; got {feature[i]}, {thr[i]}"
            )
        internal = ~leaf
        ids = np.arange(n)
        bad_child = internal & (
            (left < 1) | (left >= n) | (right < 1) | (right >= n) | (left == ids) | (right == ids)
        )
        if (i := first(bad_child)) is not None:
            raise ValueError(
                f"{SPLIT_KIND_NAMES[int(kinds[i])]} node {i} must have two children with ids in "
                f"[1, {n - 1}] other than itself; got {left[i]} and {right[i]}"
            )
        if (i := first(internal & (left == right))) is not None:
            raise ValueError(f"node {i} has the same node {left[i]} as left and right child")
        hyper = (kinds == HYPERPLANE) | (kinds == QUADRATIC) | (kinds == POLYTOPE)  # no single feature
        if (i := first(hyper & (feature != -1))) is not None:
            raise ValueError(f"{SPLIT_KIND_NAMES[int(kinds[i])]} node {i} must have feature -1; got {feature[i]}")
        self._validate_conjunctions()
        if (i := first(internal & ~hyper & (kinds != CONJUNCTION) & ((feature < 0) | (feature >= self.n_features)))) is not None:
            raise ValueError(
                f"{SPLIT_KIND_NAMES[int(kinds[i])]} node {i} tests feature {feature[i]}, "
                f"outside [0, {self.n_features - 1}]"
            )
        if (i := first((kinds == BINARY) & (thr != 0.5))) is not None:
            raise ValueError(f"BINARY node {i} must have threshold 0.5; got {thr[i]}")
        if (i := first(((kinds == THRESHOLD) | hyper) & np.isnan(thr))) is not None:
            raise ValueError(f"{SPLIT_KIND_NAMES[int(kinds[i])]} node {i} needs a threshold; got NaN")
        if (i := first((kinds == CATEGORY) & ~np.isnan(thr))) is not None:
            raise ValueError(f"CATEGORY node {i} must have threshold NaN; got {thr[i]}")
        tables = ((CATEGORY, self.categories, "categories", (CATEGORY,)),
                  (HYPERPLANE, self.coefs, "coefs", (HYPERPLANE, QUADRATIC)),
                  (POLYTOPE, self.polytopes, "polytopes", (POLYTOPE,)))
        for kind, table, tname, owners in tables:
            owned = _isin(kinds, owners)
            for i in np.flatnonzero(owned).tolist() if owned.any() else ():
                if i not in table:
                    raise ValueError(f"{SPLIT_KIND_NAMES[int(kinds[i])]} node {i} has no entry in {tname}")
            for k, v in table.items():
                if not 0 <= k < n or kinds[k] not in owners:
                    raise ValueError(
                        f"{tname} has an entry for node {k}, which is not a {SPLIT_KIND_NAMES[kind]} node"
                        + "".join(f" (nor a {SPLIT_KIND_NAMES[o]} one)" for o in owners if o != kind)
                    )
                if kind == POLYTOPE:
                    continue  # checked by _as_polytope
                if not np.all(np.isfinite(v)):
                    raise ValueError(f"{tname}[{k}] must be finite; got {v.tolist()}")
                if kind == CATEGORY and (v.ndim != 1 or v.size == 0):
                    raise ValueError(f"categories[{k}] must be a non-empty 1-D array of category codes")
                if kind == CATEGORY and self.feature_categories is not None:
                    labels = self.feature_categories[int(self.feature[k])]
                    if labels is not None and not np.all((v >= 0) & (v < len(labels)) & (v == np.round(v))):
                        raise ValueError(
                            f"categories[{k}] holds codes {v.tolist()}, but feature {int(self.feature[k])} "
                            f"has {len(labels)} categories (codes 0 to {len(labels) - 1})"
                        )
                if kinds[k] == HYPERPLANE and v.shape != (self.n_features,):
                    raise ValueError(
                        f"coefs[{k}] must be a vector of length n_features={self.n_features}; "
                        f"got shape {v.shape}"
                    )
                n_terms = len(quadratic_terms(self.n_features))
                if kinds[k] == QUADRATIC and v.shape != (n_terms,):
                    raise ValueError(
                        f"coefs[{k}] of a QUADRATIC node must hold {n_terms} coefficients (the monomials "
                        f"of degree 1 and 2 of {self.n_features} features); got shape {v.shape}"
                    )

    def _validate_conjunctions(self) -> None:
        """CONJUNCTION nodes: feature -1, threshold NaN, and conditions on real features and codes."""
        conj = np.flatnonzero(self.split_kind == CONJUNCTION).tolist()
        for i in conj:
            if self.feature[i] != -1 or not np.isnan(self.threshold[i]):
                raise ValueError(f"CONJUNCTION node {i} must have feature -1 and threshold NaN")
            if i not in self.conjunctions:
                raise ValueError(f"CONJUNCTION node {i} has no entry in conjunctions")
        for k, conds in self.conjunctions.items():
            if k not in conj:
                raise ValueError(f"conjunctions has an entry for node {k}, which is not a CONJUNCTION node")
            for f, codes in conds:
                if not 0 <= f < self.n_features or codes.size == 0 or not np.all(np.isfinite(codes)):
                    raise ValueError(f"conjunctions[{k}] needs features in [0, {self.n_features - 1}] with "
                                     f"non-empty finite codes; got feature {f}, codes {codes.tolist()}")

    def _validate_shape(self) -> None:
        n = self.n_nodes
        internal = np.flatnonzero(self.split_kind != LEAF)
        lefts, rights = self.children_left[internal], self.children_right[internal]
        n_parents = np.bincount(np.concatenate([lefts, rights]), minlength=n)
        if n_parents[0] > 0:
            raise ValueError("node 0 must be the root, but it is the child of another node")
        multi = np.flatnonzero(n_parents > 1)
        if multi.size:
            raise ValueError(f"node {int(multi[0])} is the child of {int(n_parents[multi[0]])} nodes")
        orphans = np.flatnonzero(n_parents[1:] == 0) + 1
        if orphans.size:
            raise ValueError(
                f"a tree has exactly one root (node 0), but nodes {orphans.tolist()[:10]} have no parent"
            )
        # every node has one parent and node 0 none, so unreachable nodes form cycles
        seen = np.zeros(n, dtype=bool)
        frontier = np.array([0])
        while frontier.size:
            seen[frontier] = True
            frontier = frontier[self.split_kind[frontier] != LEAF]
            frontier = np.concatenate([self.children_left[frontier], self.children_right[frontier]])
        if not seen.all():
            lost = np.flatnonzero(~seen).tolist()
            raise ValueError(f"nodes {lost[:10]} are not reachable from the root: the children form a cycle")
        if self.depth[0] != 0:
            raise ValueError(f"the root must have depth 0; got {int(self.depth[0])}")
        for children in (lefts, rights):
            bad = np.flatnonzero(self.depth[children] != self.depth[internal] + 1)
            if bad.size:
                c, p = int(children[bad[0]]), int(internal[bad[0]])
                raise ValueError(
                    f"node {c} has depth {int(self.depth[c])}, but its parent node {p} "
                    f"has depth {int(self.depth[p])}"
                )

    # -- basic properties ---------------------------------------------------

    @property
    def n_nodes(self) -> int:
        """Number of nodes."""
        return int(self.children_left.shape[0])

    @property
    def n_leaves(self) -> int:
        """Number of leaves."""
        return int(np.count_nonzero(self.split_kind == LEAF))

    @property
    def max_depth(self) -> int:
        """Depth of the deepest leaf (0 for a single leaf)."""
        return int(self.depth.max())

    @property
    def n_classes(self) -> int | None:
        """Number of classes (``None`` for regression)."""
        return int(self.value.shape[1]) if self.task == "classification" else None

    def is_leaf(self, i: int) -> bool:
        """Return whether node ``i`` is a leaf."""
        if not 0 <= i < self.n_nodes:
            raise IndexError(f"node id {i} out of range [0, {self.n_nodes - 1}]")
        return bool(self.split_kind[i] == LEAF)

    # -- prediction ---------------------------------------------------------

    def encode(self, X: Any) -> np.ndarray:
        """Raw ``X`` as the numeric matrix the splits are written for.

        Numeric features stay as they are (NaN is kept: it fails every test
        and goes right); the labels of a categorical feature (one with
        ``feature_categories[j]``) become their codes.  A DataFrame is matched
        to ``feature_names`` by column name (extra columns are ignored) when the
        tree has names, else by position.

        Parameters
        ----------
        X : array-like or pandas DataFrame of shape (n_samples, n_features)

        Returns
        -------
        X_encoded : ndarray of float64, shape (n_samples, n_features)

        Raises
        ------
        ValueError
            On a wrong number of columns, missing named columns, a missing or
            unseen category (naming the column, row and value).
        TypeError
            On a sparse matrix or values that are neither numbers nor labels.
        """
        from . import data as _data

        if isinstance(X, np.ndarray) and X.dtype.kind in "biuf" and self.feature_categories is None:
            if X.ndim != 2:
                hint = " (use X.reshape(1, -1) for a single sample)" if X.ndim == 1 else ""
                raise ValueError(
                    f"X must be a 2-D array of shape (n_samples, {self.n_features}); got {X.ndim} dimension(s){hint}"
                )
            if X.shape[1] != self.n_features:
                raise ValueError(
                    f"X has {X.shape[1]} features (columns), but this tree uses n_features={self.n_features}"
                )
            return np.asarray(X, dtype=np.float64)
        if _data._is_dataframe(X) and self.feature_names is not None:
            columns = [str(c) for c in X.columns]
            if columns != self.feature_names:
                missing = [n for n in self.feature_names if n not in columns]
                if missing:
                    shown = ", ".join(map(repr, missing[:10])) + (", ..." if len(missing) > 10 else "")
                    raise ValueError(f"X lacks the columns {shown} that this tree uses")
                X = X.iloc[:, [columns.index(n) for n in self.feature_names]]
        cols, n, _ = _data.read_columns(X)
        if len(cols) != self.n_features:
            raise ValueError(
                f"X has {len(cols)} features (columns), but this tree uses n_features={self.n_features}"
            )
        return _data.encode_columns(cols, self.feature_categories, self.feature_names, allow_nan=True)

    def _goes_left(self, i: int, X: np.ndarray, idx: np.ndarray) -> np.ndarray:
        kind = self.split_kind[i]
        if kind == POLYTOPE:
            return polytope_intensity(self.polytopes[i], X[idx]) <= self.threshold[i]
        if kind == HYPERPLANE:
            return X[idx] @ self.coefs[i] <= self.threshold[i]
        if kind == QUADRATIC:  # NaN features give a NaN value, which fails the test: right
            return quadratic_features(X[idx]) @ self.coefs[i] <= self.threshold[i]
        if kind == CONJUNCTION:
            ok = np.ones(idx.size, dtype=bool)
            for f, codes in self.conjunctions[i]:
                ok &= np.isin(X[idx, f], codes)
            return ok
        column = X[idx, self.feature[i]]
        if kind == CATEGORY:
            return np.isin(column, self.categories[i])
        return column <= self.threshold[i]  # BINARY (0.5) and THRESHOLD

    def apply_encoded(self, E: np.ndarray) -> np.ndarray:
        """:meth:`apply` on an already encoded matrix (:meth:`encode`)."""
        out = np.zeros(E.shape[0], dtype=np.int64)
        stack = [(0, np.arange(E.shape[0]))]
        while stack:
            i, idx = stack.pop()
            if idx.size == 0:
                continue
            if self.split_kind[i] == LEAF:
                out[idx] = i
                continue
            left = self._goes_left(i, E, idx)
            stack.append((int(self.children_right[i]), idx[~left]))
            stack.append((int(self.children_left[i]), idx[left]))
        return out

    def apply(self, X: Any) -> np.ndarray:
        """Return the id of the leaf reached by every sample.

        Parameters
        ----------
        X : array-like or pandas DataFrame of shape (n_samples, n_features)
            Raw values: numbers, and labels in categorical columns (see
            :meth:`encode`).

        Returns
        -------
        leaves : ndarray of int64, shape (n_samples,)
        """
        return self.apply_encoded(self.encode(X))

    def predict(self, X: Any) -> np.ndarray:
        """Predict a class label (classification) or a value (regression).

        Classification returns ``classes[argmax(value[leaf])]`` (ties go to
        the lowest class index), or the class index when ``classes`` is None.
        """
        leaves = self.apply(X)
        if self.task == "regression":
            return self.value[leaves, 0].copy()
        if self.task == "density":  # the mass of one configuration
            return self.value[leaves, 1].copy()
        best = np.argmax(self.value, axis=1)[leaves]
        return best if self.classes is None else self.classes[best]

    def predict_proba(self, X: Any) -> np.ndarray:
        """Return ``value[leaf]``: class probabilities, shape (n_samples, n_classes)."""
        if self.task != "classification":
            raise ValueError("predict_proba is only available for classification trees")
        return self.value[self.apply(X)].copy()

    # -- text export ----------------------------------------------------------

    def _names(self, feature_names: Sequence[str] | None) -> list[str]:
        if feature_names is None:
            feature_names = self.feature_names
        if feature_names is None:
            return [f"x{j}" for j in range(self.n_features)]
        names = [str(n) for n in feature_names]
        if len(names) != self.n_features:
            raise ValueError(
                f"feature_names has {len(names)} names but the tree has {self.n_features} features"
            )
        return names

    def split_text(
        self, node: int, feature_names: Sequence[str] | None = None, decimals: int = 3
    ) -> tuple[str, str]:
        """Texts of the left (test true) and right branches of split ``node``.

        Parameters
        ----------
        node : int
            A split node.
        feature_names : list of str, optional
            Defaults to ``feature_names``, then ``x0, x1, ...``.
        decimals : int, default=3
            Decimals of thresholds that are not short and of hyperplane
            coefficients (:func:`format_threshold`).

        Returns
        -------
        left, right : str
            E.g. ``("age <= 42.5", "age >  42.5")`` or ``("colour == red",
            "colour != red")``.
        """
        if not 0 <= node < self.n_nodes or self.split_kind[node] == LEAF:
            raise ValueError(f"node {node} is not a split node of this tree")
        return self._conditions(node, self._names(feature_names), decimals)

    def _conditions(self, i: int, names: list[str], decimals: int) -> tuple[str, str]:
        """Return the (left, right) condition texts of split node ``i``."""
        kind = int(self.split_kind[i])
        t = self.threshold[i]
        if kind == QUADRATIC:
            mono = [names[m[0]] if len(m) == 1 else (f"{names[m[0]]}^2" if m[0] == m[1] else
                    f"{names[m[0]]}*{names[m[1]]}") for m in quadratic_terms(self.n_features)]
            coefs = self.coefs[i]
            order = [g for g in range(len(mono)) if g >= self.n_features] + list(range(self.n_features))
            lhs = _polynomial_text(coefs[order], [mono[g] for g in order], decimals)  # degree 2 first
            text = format_threshold(t, decimals)
            return f"{lhs} <= {text}", f"{lhs} >  {text}"
        if kind == POLYTOPE:
            return polytope_texts(self.polytopes[i], t, names, decimals)
        if kind == CONJUNCTION:
            labels = self.feature_categories or [None] * self.n_features
            parts = [split_texts(names[f], CATEGORY, categories=codes, labels=labels[f], decimals=decimals)
                     for f, codes in self.conjunctions[i]]
            if len(parts) == 1:
                return parts[0]
            text = " and ".join(left for left, _ in parts)
            return text, f"not ({text})"
        if kind != HYPERPLANE:
            f = int(self.feature[i])
            labels = None if self.feature_categories is None else self.feature_categories[f]
            return split_texts(names[f], kind, t, self.categories.get(i, ()), labels, decimals)
        lhs = _polynomial_text(self.coefs[i], names, decimals)
        text = format_threshold(t, decimals)
        return f"{lhs} <= {text}", f"{lhs} >  {text}"

    def leaf_text(self, node: int, decimals: int = 3, show_counts: bool = True) -> str:
        """Text of the prediction at ``node`` (any node; usually a leaf).

        ``"class: setosa  (counts [50, 0, 0], p=0.913)"`` for classification
        (the predicted class, the training counts and the predicted class's
        probability), ``"value: 152.133  (n=42)"`` for regression.
        """
        if not 0 <= node < self.n_nodes:
            raise IndexError(f"node id {node} out of range [0, {self.n_nodes - 1}]")
        return self._leaf_text(node, decimals, show_counts)

    def _leaf_text(self, i: int, decimals: int, show_counts: bool, sep: str = "  ") -> str:
        counts = "[" + ", ".join(_fmt_num(c, decimals) for c in self.counts[i]) + "]"
        if self.task == "density":
            return _density_leaf_text(self.value[i], self.counts[i, 0], decimals, show_counts, sep)
        if self.task == "regression":
            text = f"value: {_fmt_num(self.value[i, 0], decimals)}"
            return text + (f"{sep}(n={_fmt_num(self.counts[i, 0], decimals)})" if show_counts else "")
        k = int(np.argmax(self.value[i]))
        label = k if self.classes is None else _format_label(self.classes[k])
        text = f"class: {label}"
        if show_counts:
            text += f"{sep}(counts {counts}, p={_fmt_num(self.value[i, k], decimals)})"
        return text

    def export_text(
        self,
        feature_names: Sequence[str] | None = None,
        decimals: int = 3,
        show_counts: bool = True,
        condition: Callable[[int], tuple[str, str]] | None = None,
    ) -> str:
        """Return a readable, indented text rendering of the tree.

        Parameters
        ----------
        feature_names : list of str, optional
            Defaults to ``self.feature_names``, then ``x0, x1, ...``.
        decimals : int, default=3
            Decimal places of counts, probabilities, values and of thresholds
            that are not short (:func:`format_threshold`).
        show_counts : bool, default=True
            Show the training counts and the predicted probability at leaves.
        condition : callable, optional
            ``condition(node) -> (left text, right text)`` replaces the default
            wording of a split.

        Returns
        -------
        text : str
            For example::

                |--- age <= 42.5
                |   |--- class: 1  (counts [3, 17], p=0.85)
                |--- age >  42.5
                |   |--- class: 0  (counts [9, 1], p=0.9)
        """
        if isinstance(decimals, bool) or not isinstance(decimals, (int, np.integer)) or decimals < 0:
            raise ValueError(f"decimals must be an integer >= 0; got {decimals!r}")
        names = self._names(feature_names)
        lines: list[str] = []
        stack: list[tuple[int, int] | str] = [(0, 0)]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                lines.append(item)
                continue
            i, d = item
            indent = "|   " * d + "|--- "
            if self.split_kind[i] == LEAF:
                lines.append(indent + self._leaf_text(i, decimals, show_counts))
                continue
            if condition is None:
                left_text, right_text = self._conditions(i, names, decimals)
            else:
                left_text, right_text = condition(i)
            more = "\n" + "|   " * (d + 1) + " " * 5  # continuation lines of a multi-line condition
            stack.append((int(self.children_right[i]), d + 1))
            stack.append(indent + right_text.replace("\n", more))
            stack.append((int(self.children_left[i]), d + 1))
            stack.append(indent + left_text.replace("\n", more))
        codes = self._codes_text(names) if condition is None else ""
        return "\n".join(lines) + "\n" + (f"(category codes in the oblique splits: {codes})\n" if codes else "")

    #: At most this many labels of one column are listed in :meth:`_codes_text`.
    _CODES_SHOWN = 12

    def _codes_text(self, names: list[str]) -> str:
        """The codes of the categorical features that an oblique split (``HYPERPLANE``,
        ``QUADRATIC``, ``POLYTOPE``) uses as numbers, ``"city: Lima=0, Oslo=1, Pune=2"``, or ``""``.

        Such splits weigh a category by its code (the index of its label in
        ``feature_categories``), which the inequalities alone do not show; :meth:`export_text`
        ends with this text and :meth:`to_dot` writes it under the graph.
        """
        if self.feature_categories is None:
            return ""
        used: set[int] = set()
        for i, c in self.coefs.items():
            if self.split_kind[i] == QUADRATIC:
                used.update(j for m, v in zip(quadratic_terms(self.n_features), c) if v != 0 for j in m)
            else:
                used.update(np.flatnonzero(c).tolist())
        for p in self.polytopes.values():
            used.update(np.flatnonzero(np.any(p["coefs"][p["facet"] == 1] != 0, axis=0)).tolist())
        parts = []
        for j in sorted(used):
            labels = self.feature_categories[j]
            if labels is None:
                continue
            shown = [f"{_format_label(v)}={k}" for k, v in enumerate(labels[: self._CODES_SHOWN])]
            if len(labels) > self._CODES_SHOWN:
                shown.append(f"... ({len(labels)} labels in feature_categories[{j}])")
            parts.append(f"{names[j]}: " + ", ".join(shown))
        return "; ".join(parts)

    def to_dot(self, feature_names: Sequence[str] | None = None, decimals: int = 3) -> str:
        """Return Graphviz DOT source drawing the tree (render it with ``dot -Tpng``).

        Left edges are labelled ``True`` and right edges ``False``.
        """
        names = self._names(feature_names)

        def quote(text: str) -> str:
            return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'

        lines = [
            "digraph Tree {",
            'node [shape=box, style="rounded", fontname="helvetica"];',
            'edge [fontname="helvetica"];',
        ]
        codes = self._codes_text(names)
        if codes:  # an oblique split weighs categories by their codes: say which label each is
            lines.append(f'label={quote("category codes in the oblique splits: " + codes)}; labelloc="b";')
        for i in range(self.n_nodes):
            counts = ", ".join(_fmt_num(c, decimals) for c in self.counts[i])
            if self.split_kind[i] == LEAF:
                label = self._leaf_text(i, decimals, show_counts=False)
                label += f"\ncounts = [{counts}]"
                if self.task == "classification":
                    label += f"\np = {_fmt_num(self.value[i].max(), decimals)}"
            else:
                label = self._conditions(i, names, decimals)[0] + f"\ncounts = [{counts}]"
            lines.append(f"{i} [label={quote(label)}];")
        for i in range(self.n_nodes):
            if self.split_kind[i] != LEAF:
                lines.append(f'{i} -> {int(self.children_left[i])} [label="True"];')
                lines.append(f'{i} -> {int(self.children_right[i])} [label="False"];')
        lines.append("}")
        return "\n".join(lines) + "\n"

    # -- parenthesised notation ---------------------------------------------

    def to_paren(self, feature_names: Sequence[str] | None = None, decimals: int = 3) -> str:
        """Return the tree in the parenthesised notation of the MAPTree paper.

        A leaf is ``""`` and a split node is ``"(" + left + test + right + ")"``.
        A ``BINARY`` split on feature ``f`` writes ``test`` as ``str(f)`` (the
        paper's notation: ``"(0)"`` is a stump on ``x0`` and ``"((1)0(1))"``
        splits on ``x0`` then on ``x1`` on both sides; :meth:`from_paren` reads
        it back); every other split writes its left-branch condition in
        brackets, e.g. ``"([petal length (cm) <= 2.45])"``.

        Parameters
        ----------
        feature_names : list of str, optional
            Names used in the bracketed conditions (default ``feature_names``,
            then ``x0, x1, ...``).
        decimals : int, default=3
            As in :meth:`export_text`.
        """
        names = None
        parts: list[str] = []
        stack: list[int | str] = [0]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                parts.append(item)
                continue
            kind = self.split_kind[item]
            if kind == LEAF:
                continue
            if kind == BINARY:
                test = str(int(self.feature[item]))
            else:
                names = names if names is not None else self._names(feature_names)
                test = "[" + self._conditions(item, names, decimals)[0] + "]"
            stack.extend([")", int(self.children_right[item]), test, int(self.children_left[item]), "("])
        return "".join(parts)

    @classmethod
    def from_paren(
        cls,
        s: str,
        n_features: int,
        *,
        classes: Any = None,
        n_classes: int = 2,
        feature_names: Sequence[str] | None = None,
    ) -> Tree:
        """Parse the MAPTree notation (see :meth:`to_paren`) into a BINARY tree.

        Counts are all zero and values uniform over the classes; nodes are
        numbered in pre-order (node, left subtree, right subtree).

        Parameters
        ----------
        s : str
            E.g. ``"((1)0(1))"``; the empty string is a single leaf.
        n_features : int
        classes : array-like, optional
            Class labels; defaults to ``0 .. n_classes - 1``.
        n_classes : int, default=2
            Used only when ``classes`` is None.
        feature_names : list of str, optional
        """
        if not isinstance(s, str):
            raise TypeError(f"s must be a str; got {type(s).__name__}")
        tokens: list[str] = []
        pos = 0
        while pos < len(s):
            ch = s[pos]
            if ch in "()":
                tokens.append(ch)
                pos += 1
            elif ch in _DIGITS:
                end = pos
                while end < len(s) and s[end] in _DIGITS:
                    end += 1
                tokens.append(s[pos:end])
                pos = end
            elif ch.isspace():
                pos += 1
            else:
                raise ValueError(f"invalid character {ch!r} at position {pos} in tree string {s!r}")
        if classes is not None:
            classes = np.asarray(classes)
            n_classes = classes.shape[0]
        else:
            classes = np.arange(n_classes)
        builder = TreeBuilder(n_features, classes=classes, feature_names=feature_names)
        zeros = np.zeros(n_classes)
        uniform = np.full(n_classes, 1.0 / n_classes)

        def new(depth: int) -> int:
            return builder.add_node(zeros, uniform, depth)

        def error(msg: str) -> ValueError:
            return ValueError(f"malformed tree string {s!r}: {msg}")

        cursor = 0

        def opens() -> bool:
            nonlocal cursor
            if cursor < len(tokens) and tokens[cursor] == "(":
                cursor += 1
                return True
            return False

        root = new(0)
        # frame: [node, phase, left, feature, right]; phase 0 wants the left
        # subtree, 1 the feature index, 2 the closing ")" (after the right subtree)
        stack: list[list[int]] = [[root, 0, -1, -1, -1]] if opens() else []
        while stack:
            frame = stack[-1]
            node, phase = frame[0], frame[1]
            depth = builder._depth[node]
            if phase == 0:
                frame[2], frame[1] = new(depth + 1), 1
                if opens():
                    stack.append([frame[2], 0, -1, -1, -1])
            elif phase == 1:
                if cursor >= len(tokens) or tokens[cursor][0] not in _DIGITS:
                    found = tokens[cursor] if cursor < len(tokens) else "end of string"
                    raise error(f"expected a feature index, found {found!r}")
                frame[3] = int(tokens[cursor])
                if frame[3] >= n_features:
                    raise error(f"feature {frame[3]} is out of range for n_features={n_features}")
                cursor += 1
                frame[4], frame[1] = new(depth + 1), 2
                if opens():
                    stack.append([frame[4], 0, -1, -1, -1])
            else:
                if cursor >= len(tokens) or tokens[cursor] != ")":
                    found = tokens[cursor] if cursor < len(tokens) else "end of string"
                    raise error(f"expected ')', found {found!r}")
                cursor += 1
                builder.set_split(node, BINARY, frame[3], 0.5, frame[2], frame[4])
                stack.pop()
        if cursor != len(tokens):
            raise error(f"unexpected {tokens[cursor]!r} after the end of the tree")
        return builder.build()

    # -- serialisation ------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Return a dict of pure JSON types describing the tree (format ``arboretum.Tree``, version 2).

        NaN becomes None and infinities the strings ``"Infinity"`` /
        ``"-Infinity"``; class and category labels must be int, float, str or
        bool.
        """
        if self.classes is None:
            classes, classes_dtype = None, None
        else:
            classes = [_encode_label(c, "class labels") for c in self.classes.tolist()]
            classes_dtype = self.classes.dtype.str if self.classes.dtype.kind != "O" else None
        feature_categories = None
        if self.feature_categories is not None:
            feature_categories = [
                None if labels is None else [_encode_label(v, "category labels") for v in labels.tolist()]
                for labels in self.feature_categories
            ]
        return {
            "format": _FORMAT,
            "version": _VERSION,
            "task": self.task,
            "n_features": self.n_features,
            "classes": classes,
            "classes_dtype": classes_dtype,
            "feature_names": None if self.feature_names is None else list(self.feature_names),
            "feature_categories": feature_categories,
            "children_left": self.children_left.tolist(),
            "children_right": self.children_right.tolist(),
            "split_kind": self.split_kind.tolist(),
            "feature": self.feature.tolist(),
            "threshold": _encode_floats(self.threshold),
            "value": _encode_floats(self.value),
            "counts": _encode_floats(self.counts),
            "depth": self.depth.tolist(),
            "categories": {str(k): _encode_floats(v) for k, v in sorted(self.categories.items())},
            "coefs": {str(k): _encode_floats(v) for k, v in sorted(self.coefs.items())},
            **({"polytopes": {str(k): {name: _encode_floats(a) for name, a in v.items()}
                              for k, v in sorted(self.polytopes.items())}} if self.polytopes else {}),
            **({"conjunctions": {str(k): [[f, _encode_floats(c)] for f, c in v]
                                 for k, v in sorted(self.conjunctions.items())}} if self.conjunctions else {}),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Tree:
        """Rebuild a tree from the output of :meth:`to_dict` (versions 1 and 2).

        Raises
        ------
        arboretum.exceptions.ModelFormatError
            If ``d`` is not a serialised tree, has an unknown version, or any
            entry is missing, of the wrong type or inconsistent (the message
            says which).  Nothing in ``d`` is executed.
        """
        from .exceptions import ModelFormatError

        if not isinstance(d, Mapping):
            raise ModelFormatError(f"a serialised tree must be a JSON object; got {type(d).__name__}")
        if d.get("format") != _FORMAT:
            raise ModelFormatError(f"not a serialised tree: 'format' must be {_FORMAT!r}; got {d.get('format')!r}")
        version = d.get("version")
        if isinstance(version, bool) or version not in _READABLE_VERSIONS:
            raise ModelFormatError(
                f"unsupported {_FORMAT} version {version!r}; this arboretum reads versions "
                f"{', '.join(map(str, _READABLE_VERSIONS))}"
            )
        required = ("task", "n_features", "children_left", "children_right", "split_kind",
                    "feature", "threshold", "value", "counts", "depth")
        missing = [k for k in required if k not in d]
        if missing:
            raise ModelFormatError(f"serialised tree is missing keys {missing}")
        try:
            classes = d.get("classes")
            if classes is not None:
                if not isinstance(classes, list):
                    raise TypeError(f"'classes' must be a list; got {type(classes).__name__}")
                dtype = d.get("classes_dtype")
                if dtype is not None and (not isinstance(dtype, str) or np.dtype(dtype).kind not in "biufUS"):
                    raise ValueError(f"'classes_dtype' {dtype!r} is not a dtype of labels")
                classes = np.asarray(classes, dtype=np.dtype(dtype) if dtype else None)
                if dtype is None and classes.dtype.kind not in "biufUSO":
                    classes = np.asarray(classes, dtype=object)
            for key in ("children_left", "children_right", "split_kind", "feature", "depth"):
                if not isinstance(d[key], list) or not all(
                    isinstance(v, int) and not isinstance(v, bool) for v in d[key]
                ):
                    raise TypeError(f"'{key}' must be a list of integers")
            for key in ("categories", "coefs", "polytopes"):
                if d.get(key) is not None and not isinstance(d[key], Mapping):
                    raise TypeError(f"'{key}' must be an object mapping node ids to lists of numbers")
            names = d.get("feature_names")
            if names is not None and (not isinstance(names, list) or not all(isinstance(n, str) for n in names)):
                raise TypeError("'feature_names' must be a list of strings or null")
            fc = d.get("feature_categories")
            if fc is not None and (not isinstance(fc, list) or not all(v is None or isinstance(v, list) for v in fc)):
                raise TypeError("'feature_categories' must be a list of (lists of labels or null)")
            if not isinstance(d["n_features"], int) or isinstance(d["n_features"], bool):
                raise TypeError("'n_features' must be an integer")
            return cls(
                d["children_left"],
                d["children_right"],
                d["split_kind"],
                d["feature"],
                _decode_floats(d["threshold"], 1),
                _decode_floats(d["value"], 2),
                _decode_floats(d["counts"], 2),
                d["depth"],
                d["n_features"],
                classes=classes,
                task=d["task"],
                feature_names=names,
                categories={int(k): _decode_floats(v, 1) for k, v in (d.get("categories") or {}).items()},
                coefs={int(k): _decode_floats(v, 1) for k, v in (d.get("coefs") or {}).items()},
                feature_categories=fc,
                polytopes={int(k): _decode_polytope(v) for k, v in (d.get("polytopes") or {}).items()},
                conjunctions={int(k): [(f, _decode_floats(c, 1)) for f, c in v]
                              for k, v in (d.get("conjunctions") or {}).items()},
            )
        except ModelFormatError:
            raise
        except (TypeError, ValueError, KeyError, IndexError, OverflowError) as exc:
            raise ModelFormatError(f"invalid serialised tree: {exc}") from None

    def to_json(self, path: str | os.PathLike | None = None, **json_kwargs: Any) -> str:
        """Return the tree as a JSON string, also writing it to ``path`` if given."""
        text = json.dumps(self.to_dict(), allow_nan=False, **json_kwargs)
        if path is not None:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
        return text

    @classmethod
    def from_json(cls, path_or_str: str | os.PathLike) -> Tree:
        """Read a tree from a JSON string or from the path of a JSON file.

        Raises
        ------
        arboretum.exceptions.ModelFormatError
            If the text is not JSON or not a valid serialised tree.
        FileNotFoundError
            If the path does not exist.
        """
        from .exceptions import ModelFormatError

        if isinstance(path_or_str, str) and path_or_str.lstrip().startswith("{"):
            text = path_or_str
        else:
            with open(path_or_str, encoding="utf-8") as fh:
                text = fh.read()
        try:
            d = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise ModelFormatError(f"not a JSON document: {exc}") from None
        return cls.from_dict(d)

    # -- comparison and display ---------------------------------------------

    def structurally_equal(self, other: Tree) -> bool:
        """Return whether two trees have the same shape and the same splits.

        Node numbering, counts and values are ignored; split kinds, features,
        thresholds, category sets and hyperplane coefficients must be equal.
        """
        if not isinstance(other, Tree) or other.n_features != self.n_features:
            return False
        stack = [(0, 0)]
        while stack:
            i, j = stack.pop()
            kind = self.split_kind[i]
            if kind != other.split_kind[j]:
                return False
            if kind == LEAF:
                continue
            if self.feature[i] != other.feature[j]:
                return False
            if kind in (THRESHOLD, HYPERPLANE, QUADRATIC, POLYTOPE) and self.threshold[i] != other.threshold[j]:
                return False
            if kind == CATEGORY and not np.array_equal(self.categories[i], other.categories[j]):
                return False
            if kind in (HYPERPLANE, QUADRATIC) and not np.array_equal(self.coefs[i], other.coefs[j]):
                return False
            if kind == POLYTOPE and (set(self.polytopes[i]) != set(other.polytopes[j]) or not all(
                    np.array_equal(v, other.polytopes[j][k]) for k, v in self.polytopes[i].items())):
                return False
            if kind == CONJUNCTION and not _same_conjunction(self.conjunctions[i], other.conjunctions[j]):
                return False
            stack.append((int(self.children_left[i]), int(other.children_left[j])))
            stack.append((int(self.children_right[i]), int(other.children_right[j])))
        return True

    def __repr__(self) -> str:
        kinds = {
            SPLIT_KIND_NAMES[k]: int(c)
            for k, c in enumerate(np.bincount(self.split_kind, minlength=len(SPLIT_KIND_NAMES)))
            if k != LEAF and c
        }
        extra = f", n_classes={self.n_classes}" if self.task == "classification" else ""
        return (
            f"Tree(task={self.task!r}, n_nodes={self.n_nodes}, n_leaves={self.n_leaves}, "
            f"max_depth={self.max_depth}, n_features={self.n_features}{extra}, splits={kinds})"
        )


# ---------------------------------------------------------------------------
# TreeBuilder
# ---------------------------------------------------------------------------


class TreeBuilder:
    """Incrementally build a :class:`Tree`.

    Add nodes as leaves with :meth:`add_node`, turn some into splits with
    :meth:`set_split`, then call :meth:`build`.  The first node added is the
    root.

    Parameters
    ----------
    n_features : int
        Number of input features.
    classes : array-like, optional
        Class labels (classification); fixes the number of value columns.
    task : {"classification", "regression"}, default="classification"
    feature_names : list of str, optional
    feature_categories : list of (array-like or None), optional
        Category labels of the categorical features (see :class:`Tree`).

    Examples
    --------
    >>> b = TreeBuilder(n_features=2, classes=[0, 1])
    >>> root = b.add_node([5, 5], [0.5, 0.5], depth=0)
    >>> left = b.add_node([4, 1], [0.8, 0.2], depth=1)
    >>> right = b.add_node([1, 4], [0.2, 0.8], depth=1)
    >>> b.set_split(root, BINARY, 1, 0.5, left, right)
    >>> b.build().predict([[0, 1], [1, 0]])
    array([1, 0])
    """

    def __init__(
        self,
        n_features: int,
        classes: Any = None,
        task: str = "classification",
        feature_names: Sequence[str] | None = None,
        feature_categories: Sequence[Any] | None = None,
    ) -> None:
        if isinstance(n_features, bool) or not isinstance(n_features, (int, np.integer)) or n_features < 1:
            raise ValueError(f"n_features must be an integer >= 1; got {n_features!r}")
        self.n_features = int(n_features)
        self.task = _check_task(task)
        if classes is not None:
            if task == "regression":
                raise ValueError("classes must be None when task='regression'")
            classes = np.asarray(classes)
            if classes.ndim != 1 or classes.size == 0:
                raise ValueError(f"classes must be a non-empty 1-D array; got shape {classes.shape}")
        self.classes = classes
        if feature_names is not None:
            feature_names = [str(n) for n in feature_names]
            if len(feature_names) != self.n_features:
                raise ValueError(
                    f"feature_names has {len(feature_names)} names but n_features={self.n_features}"
                )
        self.feature_names = feature_names
        self.feature_categories = _as_feature_categories(feature_categories, self.n_features)
        self._n_values: int | None = None if classes is None else int(classes.shape[0])
        self._counts: list[np.ndarray] = []
        self._value: list[np.ndarray] = []
        self._depth: list[int] = []
        self._kind: list[int] = []
        self._feature: list[int] = []
        self._threshold: list[float] = []
        self._left: list[int] = []
        self._right: list[int] = []
        self._has_parent: list[bool] = []
        self._categories: dict[int, np.ndarray] = {}
        self._coefs: dict[int, np.ndarray] = {}
        self._polytopes: dict[int, dict[str, np.ndarray]] = {}

    @property
    def n_nodes(self) -> int:
        """Number of nodes added so far."""
        return len(self._depth)

    def add_node(self, counts: Any, value: Any, depth: int) -> int:
        """Add a leaf and return its id.

        Parameters
        ----------
        counts : array-like of float
            Training class counts (classification) or ``[n_samples]``
            (regression); non-negative.
        value : array-like of float
            Class probabilities (classification) or ``[mean, ...]``
            (regression).
        depth : int
            Depth of the node (0 for the root).
        """
        counts = _as_float_vector(counts, "counts")
        value = _as_float_vector(value, "value")
        if (counts < 0).any():
            raise ValueError(f"counts must be non-negative; got {counts.tolist()}")
        if self.task == "classification":
            if self._n_values is None:
                self._n_values = value.shape[0]
            if value.shape[0] != self._n_values or counts.shape[0] != self._n_values:
                raise ValueError(
                    f"counts and value need {self._n_values} entries (one per class); "
                    f"got {counts.shape[0]} and {value.shape[0]}"
                )
        else:
            if counts.shape[0] != 1:
                raise ValueError(
                    f"for regression, counts must hold one number (n_samples); got {counts.tolist()}"
                )
            if self._n_values is None:
                self._n_values = value.shape[0]
            if value.shape[0] != self._n_values:
                raise ValueError(
                    f"value needs {self._n_values} entries like the first node; got {value.shape[0]}"
                )
        if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < 0:
            raise ValueError(f"depth must be an integer >= 0; got {depth!r}")
        self._counts.append(counts)
        self._value.append(value)
        self._depth.append(int(depth))
        self._kind.append(LEAF)
        self._feature.append(-1)
        self._threshold.append(math.nan)
        self._left.append(-1)
        self._right.append(-1)
        self._has_parent.append(False)
        return self.n_nodes - 1

    def _check_id(self, i: Any, name: str) -> int:
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 0 <= i < self.n_nodes:
            raise ValueError(f"{name} must be the id of an added node, in [0, {self.n_nodes - 1}]; got {i!r}")
        return int(i)

    def set_split(
        self,
        node: int,
        kind: int | str,
        feature: int | None,
        threshold: float | None,
        left: int,
        right: int,
        categories: Iterable[float] | None = None,
        coef: Any = None,
        polytope: Mapping[str, Any] | None = None,
    ) -> None:
        """Turn leaf ``node`` into a split with children ``left`` and ``right``.

        Parameters
        ----------
        node, left, right : int
            Ids returned by :meth:`add_node`; the children must be distinct,
            must not be the root and must not already have a parent.
        kind : int or str
            ``BINARY``, ``THRESHOLD``, ``CATEGORY``, ``HYPERPLANE`` or
            ``QUADRATIC`` (or their names).
        feature : int or None
            Tested feature; ``None`` or ``-1`` for ``HYPERPLANE`` and ``QUADRATIC``.
        threshold : float or None
            ``BINARY``: ignored if None, else must be 0.5.  ``THRESHOLD``,
            ``HYPERPLANE`` and ``QUADRATIC``: required.  ``CATEGORY``: must be None.
        categories : iterable of float, optional
            Category codes sent left (``CATEGORY`` only).
        coef : array-like of float, optional
            Coefficients of a ``HYPERPLANE`` split (length ``n_features``) or of
            a ``QUADRATIC`` split (one per monomial of :func:`quadratic_terms`).
        polytope : mapping, optional
            ``POLYTOPE`` only: ``r`` (K positive expert weights), ``bias`` (K),
            ``coefs`` (K x n_features) and optionally ``facet`` (K flags of
            the experts printed as facets; default all).
        """
        node = self._check_id(node, "node")
        left = self._check_id(left, "left")
        right = self._check_id(right, "right")
        kind = _parse_kind(kind)
        name = SPLIT_KIND_NAMES[kind]
        if self._kind[node] != LEAF:
            raise ValueError(f"node {node} is already a split")
        if len({node, left, right}) != 3:
            raise ValueError(
                f"node, left and right must be three different nodes; got {node}, {left}, {right}"
            )
        for child in (left, right):
            if child == 0:
                raise ValueError("node 0 is the root and cannot be a child")
            if self._has_parent[child]:
                raise ValueError(f"node {child} already has a parent")
        if kind in (HYPERPLANE, QUADRATIC, POLYTOPE):
            if feature not in (None, -1):
                raise ValueError(f"feature must be None or -1 for a {name} split; got {feature!r}")
            feature = -1
        elif (isinstance(feature, bool) or not isinstance(feature, (int, np.integer))
              or not 0 <= feature < self.n_features):
            raise ValueError(f"feature must be an integer in [0, {self.n_features - 1}]; got {feature!r}")
        if kind == BINARY:
            if threshold is not None and threshold != 0.5:
                raise ValueError(f"threshold must be None or 0.5 for a BINARY split; got {threshold!r}")
            threshold = 0.5
        elif kind == CATEGORY:
            if threshold is not None and not (isinstance(threshold, float) and math.isnan(threshold)):
                raise ValueError(f"threshold must be None for a CATEGORY split; got {threshold!r}")
            threshold = math.nan
        else:
            if threshold is None or math.isnan(float(threshold)):
                raise ValueError(f"a {name} split needs a threshold (not None or NaN)")
            threshold = float(threshold)
        if kind == CATEGORY:
            if categories is None:
                raise ValueError("a CATEGORY split needs categories (the codes that go left)")
            cats = np.unique(_as_float_vector(list(categories), "categories"))
            if cats.size == 0:
                raise ValueError("categories must hold at least one category code")
            self._categories[node] = cats
        elif categories is not None:
            raise ValueError(f"categories is only used by CATEGORY splits, not {name}")
        if kind in (HYPERPLANE, QUADRATIC):
            if coef is None:
                raise ValueError(f"a {name} split needs coef")
            coef = _as_float_vector(coef, "coef")
            size = self.n_features if kind == HYPERPLANE else len(quadratic_terms(self.n_features))
            if coef.shape != (size,):
                what = "n_features" if kind == HYPERPLANE else "the number of monomials of degree 1 and 2"
                raise ValueError(f"coef of a {name} split must have length {what}={size}; got {coef.shape[0]}")
            self._coefs[node] = coef
        elif coef is not None:
            raise ValueError(f"coef is only used by HYPERPLANE and QUADRATIC splits, not {name}")
        if kind == POLYTOPE:
            if polytope is None:
                raise ValueError("a POLYTOPE split needs polytope (r, bias, coefs)")
            self._polytopes[node] = _as_polytope(polytope, self.n_features, node)
        elif polytope is not None:
            raise ValueError(f"polytope is only used by POLYTOPE splits, not {name}")
        self._kind[node] = kind
        self._feature[node] = int(feature)
        self._threshold[node] = threshold
        self._left[node] = left
        self._right[node] = right
        self._has_parent[left] = self._has_parent[right] = True

    def build(self) -> Tree:
        """Validate the nodes and return the :class:`Tree`.

        Raises
        ------
        ValueError
            If no node was added, a node other than the root has no parent,
            the children form a cycle, or depths are inconsistent.
        """
        if self.n_nodes == 0:
            raise ValueError("cannot build a tree without nodes; call add_node first")
        return Tree(
            self._left,
            self._right,
            self._kind,
            self._feature,
            self._threshold,
            np.stack(self._value),
            np.stack(self._counts),
            self._depth,
            self.n_features,
            classes=self.classes,
            task=self.task,
            feature_names=self.feature_names,
            categories=self._categories,
            coefs=self._coefs,
            feature_categories=self.feature_categories,
            polytopes=self._polytopes,
        )
