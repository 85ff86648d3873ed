"""The one discretiser of arboretum: raw columns to yes/no questions with readable names.

Every model that cannot split raw values directly uses a :class:`Binarizer`:
MAPTree and the samplers search over its binary questions
(:meth:`Binarizer.transform`), BCART-PCFG over its *ordinal codes*
(:meth:`Binarizer.ordinal_transform`: per raw column, the number of its
threshold questions a value is above).  Both views come from the same
thresholds, so the same parameters mean the same thing in every model, and a
tree learnt on either view is rewritten as a tree on the raw columns
(:meth:`Binarizer.raw_tree`), which predicts from raw ``X`` and prints the
raw questions (``age <= 42.5``, ``colour == red``).

How thresholds are chosen (numeric columns, and ordered categoricals over
their category order): a cut always lies between two consecutive distinct
training values ``a < b`` and is printed as the shortest decimal ``t`` with
``a <= t < b`` near their midpoint, so ``x <= t`` holds for exactly the
training values up to ``a``.  A column with at most ``n_thresholds + 1``
distinct values is cut between every two of them; otherwise

- ``strategy="quantile"`` places ``n_thresholds`` edges at the empirical
  quantiles ``1/(n+1), ..., n/(n+1)`` of the column (``numpy.quantile``),
- ``strategy="uniform"`` at equal-width positions between the minimum and the
  maximum,

and each edge ``e`` becomes the cut below the smallest training value
``>= e`` (a value equal to an edge goes *up*, the rule of the BCART-PCFG
paper; an edge at the minimum cuts just above it); cuts that coincide are
merged, so a column may get fewer.
``strategy="all"`` cuts between every two distinct values.

The *supervised* strategies choose the cuts from the target ``y``
(``fit(X, y)``), after McTavish et al. (AAAI 2022): a small boosted ensemble
(:data:`ENSEMBLE`: 5 squared-error trees of depth 3 fitted by scikit-learn's
CART, ``random_state=0``, on at most 5000 rows drawn with a fixed seed)
is fitted to ``y``, and every cut it uses is ranked by its total impurity
decrease.  Cuts below 1% of the ensemble's best gain are dropped, and so is a
cut within 2% of the samples of a better one on its column; then

- ``strategy="boosting"`` keeps the first ``n_thresholds`` of them (a column
  that the ensemble never cuts gets no threshold: the search will not split
  it),
- ``strategy="mixed"`` tops them up to ``n_thresholds`` with quantile cuts,
  each time the one farthest (in share of the samples) from the cuts taken.

Their cuts lie between consecutive training values like every other
strategy's, are the same on every fit of the same data, and cost about a
quarter of a second on 50000 x 20.

On more than ``subsample`` rows (default 200,000, as scikit-learn's
``KBinsDiscretizer``) every strategy but ``"all"`` chooses the cuts of the
numeric and ordered columns from ``subsample`` rows drawn once with a fixed
seed: the distinct values, quantiles and the ensemble's target are those of
the drawn rows, so a cut lies between two consecutive distinct values of
them.  Column kinds, the categories and the 0/1 columns' questions always
come from every row.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from . import data as _data
from .data import Check, Interval, Options
from .tree import BINARY, CATEGORY, LEAF, THRESHOLD, Tree, TreeBuilder, split_texts

__all__ = ["Binarizer", "BinarySplit", "STRATEGIES"]

#: Values of the ``strategy`` parameter.
STRATEGIES = ("quantile", "uniform", "all", "boosting", "mixed")
#: The strategies that choose thresholds from the target (they need ``fit(X, y)``).
SUPERVISED = ("boosting", "mixed")
#: Default of the ``subsample`` parameter.
SUBSAMPLE = 200_000
#: The boosted ensemble of the supervised strategies (:func:`ensemble_cuts`).
ENSEMBLE = {"n_trees": 5, "max_depth": 3, "learning_rate": 0.5, "min_weight_fraction_leaf": 0.01, "max_rows": 5000,
            "min_share": 0.01, "min_gap": 0.02}


class BinarySplit(NamedTuple):
    """The raw split that one binary column of a :class:`Binarizer` stands for.

    The split is written in the convention of :class:`arboretum.tree.Tree`, on
    the *encoded* raw matrix (:meth:`Binarizer.encode`: numbers as they are,
    categories as integer codes).

    Attributes
    ----------
    column : int
        Index of the raw column.
    kind : int
        :data:`~arboretum.tree.BINARY`: the raw column was 0/1 (or boolean);
        the binary value is 1 iff ``x > 0.5`` (the Tree's *right* branch).
        :data:`~arboretum.tree.THRESHOLD`: the binary value is 1 iff
        ``x <= threshold`` (the *left* branch); for an ordered categorical
        column ``x`` is the category code.
        :data:`~arboretum.tree.CATEGORY`: the binary value is 1 iff the
        category code of ``x`` is one of ``categories`` (the *left* branch).
    threshold : float
        ``THRESHOLD``: the threshold; ``BINARY``: 0.5; ``CATEGORY``: NaN.
    categories : tuple of float
        ``CATEGORY``: the category codes (positions in
        ``Binarizer.categories_[column]``) whose binary value is 1; empty for
        the other kinds.
    """

    column: int
    kind: int
    threshold: float
    categories: tuple[float, ...] = ()

    @property
    def one_goes_left(self) -> bool:
        """Whether binary value 1 is the *left* branch of the raw split (THRESHOLD, CATEGORY)."""
        return self.kind != BINARY


def short_threshold(lo: float, hi: float) -> float:
    """A short decimal ``t`` with ``lo <= t < hi``, near their midpoint.

    The midpoint rounded to 4 significant digits when that still lies strictly
    between them, else to 5, 6, ... digits; so ``1.9`` and ``2.0`` give
    ``1.95`` and ``1000`` and ``1001`` give ``1000.5``.
    """
    mid = lo + (hi - lo) / 2.0
    for digits in range(4, 18):
        t = float(f"{mid:.{digits}g}")
        if lo < t < hi:
            return t
    return mid if lo <= mid < hi else lo  # lo and hi are adjacent floats


def cut_positions(
    values: np.ndarray,
    x: np.ndarray,
    n_thresholds: int | None,
    strategy: str,
    ranked: np.ndarray | None = None,
    below: np.ndarray | None = None,
) -> np.ndarray:
    """Where to cut the sorted distinct ``values`` of a column whose samples are ``x``.

    Position ``i`` means a cut between ``values[i]`` and ``values[i + 1]``.
    ``n_thresholds=None`` or ``strategy="all"`` cuts everywhere (so does a
    column with at most ``n_thresholds + 1`` values); "quantile" and "uniform"
    place ``n_thresholds`` edges (module docstring) and cut below the first
    value at or above each edge; "boosting" takes the first ``n_thresholds``
    of ``ranked`` (the ensemble's cut positions, best first,
    :func:`ensemble_cuts`), and "mixed" tops them up with quantile cuts
    (:func:`fill_positions`; ``below`` is the share of the samples at or
    below each value, computed from ``x`` when not given).  Returns the
    positions sorted.
    """
    k = values.shape[0]
    if k < 2:
        return np.zeros(0, dtype=np.int64)
    if strategy == "all" or n_thresholds is None or k - 1 <= n_thresholds:
        return np.arange(k - 1)
    if strategy in SUPERVISED:
        chosen = np.asarray(ranked if ranked is not None else [], dtype=np.int64)[:n_thresholds]
        if strategy == "mixed" and chosen.size < n_thresholds:
            quantile = cut_positions(values, x, n_thresholds, "quantile")
            if below is None:
                below = _share_below(np.searchsorted(values, x), values.size)
            chosen = fill_positions(chosen, quantile, below, n_thresholds)
        return np.unique(chosen)
    if strategy == "uniform":
        edges = np.linspace(values[0], values[-1], n_thresholds + 2)[1:-1]
    else:
        edges = np.quantile(x, np.arange(1, n_thresholds + 1) / (n_thresholds + 1))
    # below the first value at or above each edge; an edge at the minimum (a column whose smallest
    # value holds most samples) cuts just above it rather than nowhere
    pos = np.clip(np.searchsorted(values, edges, side="left") - 1, 0, k - 2)
    return np.unique(pos)


def _answers(split: BinarySplit, E: np.ndarray) -> np.ndarray:
    """The yes/no answer (bool) of every row of an encoded matrix ``E`` to one question."""
    x = E[:, split.column]
    if split.kind == BINARY:
        return x > 0.5
    if split.kind == THRESHOLD:
        return x <= split.threshold
    return np.isin(x, split.categories)


def _zero_one(values: np.ndarray) -> bool:
    """Whether distinct ``values`` are a subset of {0, 1}."""
    return values.size <= 2 and bool(np.all((values == 0) | (values == 1)))


def _share_below(ranks: np.ndarray, k: int, weight: np.ndarray | None = None) -> np.ndarray:
    """The share of the samples (of their weight) at or below each of ``k`` distinct values, from their ranks."""
    mass = np.cumsum(np.bincount(ranks, weights=weight, minlength=k).astype(np.float64))
    return mass / mass[-1] if mass.size and mass[-1] > 0 else mass


def fill_positions(chosen: np.ndarray, candidates: np.ndarray, below: np.ndarray, n_thresholds: int) -> np.ndarray:
    """``chosen`` cut positions topped up to ``n_thresholds`` from ``candidates``, widest gap first.

    Each step adds the candidate farthest, in share of the samples, from the
    cuts already chosen (and from the column's ends), so the added cuts split
    the largest stretches of samples that no chosen cut splits; ties go to the
    smaller position.
    """
    out = [int(p) for p in chosen]
    rest = sorted(set(int(p) for p in candidates) - set(out))
    while len(out) < n_thresholds and rest:
        marks = np.array([0.0, 1.0] + [below[p] for p in out])
        far = [float(np.min(np.abs(marks - below[p]))) for p in rest]
        out.append(rest.pop(int(np.argmax(far))))
    return np.asarray(out, dtype=np.int64)


def _spread(ranked: np.ndarray, below: np.ndarray) -> np.ndarray:
    """``ranked`` cut positions without those within ``ENSEMBLE["min_gap"]`` of the samples of a better one."""
    kept: list[int] = []
    for p in ranked.tolist():
        if all(abs(below[p] - below[q]) >= ENSEMBLE["min_gap"] for q in kept):
            kept.append(p)
    return np.asarray(kept, dtype=np.int64)


def _check_weights(sample_weight: Any, n_samples: int) -> np.ndarray | None:
    """``sample_weight`` as float64, or None; refuses a wrong length, negative or non-finite weights, all zeros."""
    if sample_weight is None:
        return None
    weight = np.asarray(sample_weight, dtype=np.float64)
    if weight.shape != (n_samples,) or not np.all(np.isfinite(weight)) or np.any(weight < 0):
        raise ValueError(f"sample_weight must hold {n_samples} finite non-negative numbers")
    if n_samples and not np.any(weight > 0):
        raise ValueError("sample_weight is zero for every sample; at least one must be positive")
    return weight


def _target_matrix(y: Any, n_samples: int) -> np.ndarray:
    """The ensemble's target: a float ``y`` scaled to unit spread, class labels one-hot (one column for two)."""
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n_samples:
        raise ValueError(f"y must be 1-d with one value per row of X ({n_samples}); got shape {y.shape}")
    if y.dtype.kind == "f":
        if not np.all(np.isfinite(y)):
            raise ValueError("y has a missing or infinite value; the Binarizer's ensemble needs finite targets")
        top = np.max(np.abs(y)) if y.size else 0.0
        t = y / top if top > 0 else y.astype(np.float64)  # no overflow in the squares, whatever the scale
        spread = t.std()
        return ((t - t.mean()) / (spread if spread > 0 else 1.0)).reshape(-1, 1)
    _, codes = np.unique(y.astype(str) if y.dtype.kind == "O" else y, return_inverse=True)
    onehot = np.eye(int(codes.max()) + 1 if codes.size else 1)[codes.ravel()]
    return onehot[:, 1:] if onehot.shape[1] == 2 else onehot


def ensemble_cuts(
    ranks: Sequence[np.ndarray],
    distinct: Sequence[np.ndarray],
    kinds: Sequence[str],
    y: Any,
    sample_weight: Any,
    n_samples: int,
) -> list[np.ndarray | None]:
    """The cut positions a small boosted ensemble uses on each column, most useful first.

    The ensemble (after McTavish et al., "Fast sparse decision tree
    optimization via reference ensembles", AAAI 2022): ``ENSEMBLE["n_trees"]``
    regression trees of depth ``ENSEMBLE["max_depth"]``, each fitted by
    scikit-learn's CART to the residuals of the ones before (squared-error
    boosting, shrinkage ``ENSEMBLE["learning_rate"]``, ``random_state=0``),
    on the target of :func:`_target_matrix` (a regression target scaled to
    unit spread; class labels one-hot, where squared error is the Gini
    impurity).  Numeric and ordered columns enter as the ranks of their
    distinct values, so every split is a cut between two consecutive training
    values and maps to its position exactly; 0/1 columns as they are and
    categorical columns as one-hot indicators, so that they explain what they
    can and no numeric column is cut to imitate them.

    Returns, for every numeric or ordered column, its positions (as in
    :func:`cut_positions`) sorted by the total weighted impurity decrease of
    the splits that use them, largest first (ties: smaller position first);
    None for the other columns.
    """
    from sklearn.tree import DecisionTreeRegressor

    target = _target_matrix(y, n_samples)
    weight = weight_all = _check_weights(sample_weight, n_samples)
    rows = None
    if n_samples > ENSEMBLE["max_rows"]:  # a fixed random subset of the rows
        rows = _data.seeded_rows(n_samples, ENSEMBLE["max_rows"])
        target = target[rows]
        weight = None if weight is None else weight[rows]
    parts, owner = [], []
    for j, kind in enumerate(kinds):
        codes = ranks[j] if rows is None else ranks[j][rows]
        if kind in ("numeric", "ordered", "binary") or distinct[j].size <= 2:
            parts.append(codes.reshape(-1, 1).astype(np.float32))
            owner.append(j)
        else:  # one-hot indicators of a categorical column
            parts.append((codes[:, None] == np.arange(distinct[j].size)).astype(np.float32))
            owner.extend([-1] * distinct[j].size)
    gains: list[dict[int, float]] = [{} for _ in kinds]
    if parts and target.size:
        Z = np.hstack(parts)
        owner_arr = np.asarray(owner)
        residual = target.copy()
        for _ in range(ENSEMBLE["n_trees"]):
            tree = DecisionTreeRegressor(max_depth=ENSEMBLE["max_depth"], random_state=0,
                                         min_weight_fraction_leaf=ENSEMBLE["min_weight_fraction_leaf"])
            tree.fit(Z, residual.ravel() if residual.shape[1] == 1 else residual, sample_weight=weight)
            t = tree.tree_
            inner = np.flatnonzero(t.children_left >= 0)
            if inner.size == 0:
                break
            w, imp = t.weighted_n_node_samples, t.impurity
            left, right = t.children_left[inner], t.children_right[inner]
            gain = w[inner] * imp[inner] - w[left] * imp[left] - w[right] * imp[right]
            for f, thr, g in zip(t.feature[inner].tolist(), t.threshold[inner].tolist(), gain.tolist()):
                j = int(owner_arr[f])
                if j >= 0 and kinds[j] in ("numeric", "ordered"):
                    pos = min(max(int(math.floor(thr)), 0), distinct[j].size - 2)
                    gains[j][pos] = gains[j].get(pos, 0.0) + g
            prediction = tree.predict(Z).reshape(residual.shape)
            residual -= ENSEMBLE["learning_rate"] * prediction
    top = max((g for d in gains for g in d.values()), default=0.0)
    out: list[np.ndarray | None] = []
    for j, kind in enumerate(kinds):
        if kind in ("numeric", "ordered"):
            order = sorted(gains[j].items(), key=lambda item: (-item[1], item[0]))
            keep = [p for p, g in order if g > ENSEMBLE["min_share"] * top]
            below = _share_below(ranks[j], distinct[j].size, weight_all)
            out.append(_spread(np.array(keep, dtype=np.int64), below))
        else:
            out.append(None)
    return out


def _column_spec_ok(spec: Any) -> bool:
    if isinstance(spec, (str, numbers.Integral)) and not isinstance(spec, (bool, np.bool_)):
        return True
    items = list(spec)
    if items and all(isinstance(v, (bool, np.bool_)) for v in items):
        return True
    return all(
        isinstance(v, str) or (isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)))
        for v in items
    )


def _per_column_ok(d: Any) -> bool:
    if not isinstance(d, Mapping):
        return False
    for key, value in d.items():
        if not (isinstance(key, str) or (isinstance(key, numbers.Integral) and not isinstance(key, (bool, np.bool_)))):
            return False
        if value is not None and not Interval(numbers.Integral, 1, None).accepts(value):
            return False
    return True


class Binarizer(TransformerMixin, BaseEstimator):
    """Turn raw features (numbers, booleans, categories) into named binary questions.

    Every output column is a yes/no question about one raw column:

    - a **0/1 or boolean** column stays one binary column named after it
      (value 1 iff ``x > 0.5``);
    - a **numeric** column gives columns ``x <= t`` (value 1 iff ``x <= t``),
      named like ``"age <= 42.5"``, for thresholds ``t`` between consecutive
      distinct training values (see the module docstring for how they are
      chosen);
    - a **categorical** column (object, string or ``category`` dtype, or listed
      in ``categorical``) gives one-hot columns ``"colour == red"`` (value 1 iff
      ``x == red``; a column with only two categories gives one column, for the
      second), or, for a pandas *ordered* categorical with
      ``encoding="ordered"``, threshold columns over the category order
      (``"size <= M"``).

    Each output column remembers the raw split it stands for (``splits_``).
    The questions of one raw column form *ordinal groups* (``groups_``): all
    thresholds of a numeric or ordered column, in increasing order, or a
    single one-hot or 0/1 question; :meth:`ordinal_transform` gives one
    integer code per group (BCART-PCFG's view of the data).

    Missing values are not supported (NaN, None or infinity raise a
    ``ValueError`` naming the column and row), and a category not seen in
    ``fit`` raises a ``ValueError`` naming the column and the value: nothing is
    dropped silently.

    Parameters
    ----------
    n_thresholds : int, default=8
        The most thresholds per numeric (or ordered categorical) column; a
        column with at most ``n_thresholds + 1`` distinct values is cut
        between every two.
    strategy : {"quantile", "uniform", "all", "boosting", "mixed"}, default="quantile"
        Where the thresholds go (module docstring): at the quantiles, at
        equal widths, between every two distinct values (what CART
        considers; many columns for continuous data), or, from the target
        (``fit(X, y)``), the cuts a small boosted ensemble uses, most useful
        first ("boosting"), topped up with quantile cuts ("mixed").  The
        MAPTree estimators' default binarizer uses "boosting".
    categorical : None, array-like of int or str, or array-like of bool, default=None
        Columns to treat as categorical whatever their dtype (indices, names
        of DataFrame columns, or a boolean mask over the columns).  Object,
        string and ``category`` columns are categorical anyway, except that
        object and string columns (and NumPy ``str`` arrays) whose every value
        is a number or text that reads as one (``"5.1"``;
        :func:`arboretum.data.parse_number`) are numeric.  List a column here
        to keep numbers stored as text (postcodes, codes) as labels.
    encoding : {"ordered", "onehot"}, default="ordered"
        ``"ordered"``: pandas ordered categoricals get thresholds over their
        declared order; other categorical columns are one-hot encoded.
        ``"onehot"``: every categorical column is one-hot encoded.
    column_n_thresholds : dict or None, default=None
        Per-column overrides of ``n_thresholds``: ``{column index or name: int
        >= 1, or None for a cut between every two values}``.
    subsample : int or None, default=200_000
        The most rows from which the thresholds of numeric and ordered
        columns are chosen (every strategy but ``"all"``, which uses every
        row): on more rows, ``subsample`` of them drawn once with a fixed
        seed (the same rows on every fit of the same data).  Column kinds,
        categories and 0/1 questions come from every row.  None: every row.
        Sorting each column is the costly part of ``fit`` on large data
        (about 0.03 s per column per 500,000 rows).

    Attributes
    ----------
    column_kinds_ : list of str
        For every raw column: ``"binary"``, ``"numeric"``, ``"categorical"``
        (one-hot) or ``"ordered"``.
    categories_ : list of (ndarray of object or None)
        For a categorical or ordered column, the categories seen in ``fit``;
        a category's *code* is its position here (declared order for pandas
        categoricals, sorted order otherwise).  None for other columns.
    thresholds_ : list of ndarray of float
        For a numeric column its thresholds (on the values); for an ordered
        column its thresholds on the codes (``i + 0.5`` for "at most the
        ``i``-th category"); empty for the other columns.
    splits_ : list of BinarySplit
        For every output column, the raw split it stands for.
    groups_ : list of ndarray of int
        The output columns of every ordinal group, in increasing order of
        threshold (:meth:`ordinal_transform`).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` was a DataFrame with string column names.

    Examples
    --------
    >>> import numpy as np
    >>> from arboretum import Binarizer
    >>> X = np.array([[1.0, 0], [2.0, 1], [3.5, 1], [9.0, 0]])
    >>> b = Binarizer(n_thresholds=2).fit(X)
    >>> b.get_feature_names_out().tolist()
    ['x0 <= 1.5', 'x0 <= 2.75', 'x1']
    >>> b.transform(X)
    array([[1, 1, 0],
           [0, 1, 1],
           [0, 0, 1],
           [0, 0, 0]], dtype=uint8)
    >>> b.ordinal_transform(X)
    array([[0, 0],
           [1, 1],
           [2, 1],
           [2, 0]], dtype=int32)
    """

    _parameter_constraints: dict = {
        "n_thresholds": [Interval(numbers.Integral, 1, None)],
        "strategy": [Options(STRATEGIES)],
        "categorical": [
            None,
            Check(_column_spec_ok, "a list of column indices or names, or a boolean mask over the columns"),
        ],
        "encoding": [Options(("ordered", "onehot"))],
        "column_n_thresholds": [
            None,
            Check(_per_column_ok, "a dict {column index or name: int >= 1 or None}"),
        ],
        "subsample": [None, Interval(numbers.Integral, 2, None)],
    }

    def __init__(
        self,
        n_thresholds: int = 8,
        strategy: str = "quantile",
        categorical: Any = None,
        encoding: str = "ordered",
        column_n_thresholds: Mapping[int | str, int | None] | None = None,
        subsample: int | None = SUBSAMPLE,
    ) -> None:
        self.n_thresholds = n_thresholds
        self.strategy = strategy
        self.categorical = categorical
        self.encoding = encoding
        self.column_n_thresholds = column_n_thresholds
        self.subsample = subsample

    # -- column selection ----------------------------------------------------------------
    def _column_index(self, key: Any, what: str, n_features: int, names: list[str] | None) -> int:
        if isinstance(key, str):
            if names is None or key not in names:
                where = f"columns: {names}" if names is not None else "X has no column names"
                raise ValueError(f"{what} names column {key!r}, which is not a column of X ({where})")
            return names.index(key)
        if not 0 <= int(key) < n_features:
            raise ValueError(f"{what} holds column index {int(key)}, outside [0, {n_features - 1}]")
        return int(key)

    def _categorical_mask(self, n_features: int, names: list[str] | None) -> np.ndarray:
        """Boolean mask of the columns listed in ``categorical``."""
        mask = np.zeros(n_features, dtype=bool)
        spec = self.categorical
        if spec is None:
            return mask
        if isinstance(spec, (str, numbers.Integral)):
            spec = [spec]
        items = list(spec)
        if items and all(isinstance(v, (bool, np.bool_)) for v in items):
            if len(items) != n_features:
                raise ValueError(
                    f"categorical as a boolean mask needs one entry per column ({n_features}); got {len(items)}"
                )
            return np.asarray(items, dtype=bool)
        for v in items:
            mask[self._column_index(v, "categorical", n_features, names)] = True
        return mask

    def _n_thresholds_per_column(self, n_features: int, names: list[str] | None) -> list[int | None]:
        out: list[int | None] = [self.n_thresholds] * n_features
        for key, value in (self.column_n_thresholds or {}).items():
            out[self._column_index(key, "column_n_thresholds", n_features, names)] = value
        return out

    def _threshold_rows(self, n_samples: int) -> np.ndarray | None:
        """The sorted rows the thresholds are chosen from (``subsample`` drawn with seed 0), or None for all."""
        if self.strategy == "all" or self.subsample is None or n_samples <= self.subsample:
            return None
        return _data.seeded_rows(n_samples, self.subsample)

    def _names(self) -> list[str] | None:
        return [str(n) for n in self.feature_names_in_] if hasattr(self, "feature_names_in_") else None

    # -- fitting ---------------------------------------------------------------------------
    def fit(self, X: Any, y: Any = None, sample_weight: Any = None) -> "Binarizer":
        """Learn the kind, thresholds and categories of every column of ``X``.

        Parameters
        ----------
        X : array-like or pandas DataFrame of shape (n_samples, n_features)
            Raw features: numbers, booleans, strings or categories; no missing
            values.
        y : array-like of shape (n_samples,) or None
            The target, needed by ``strategy="boosting"`` and ``"mixed"`` (and
            ignored by the others): real numbers of a float dtype are a
            regression target, anything else (integers, strings, booleans)
            class labels.
        sample_weight : array-like of shape (n_samples,) or None
            Non-negative weights of the samples, not all zero.  They steer
            only the ensemble of ``"boosting"`` and ``"mixed"`` (and the
            spacing of their cuts); the candidate values and the quantiles
            come from every row of ``X``, so the estimators leave out the
            samples of weight 0 before they fit the Binarizer.

        Returns
        -------
        self : Binarizer
        """
        _data.validate_params(self)
        if self.strategy in SUPERVISED and y is None:
            raise ValueError(
                f"Binarizer(strategy={self.strategy!r}) requires y to be passed, but the target y is None "
                f"(it chooses the thresholds from the target: fit(X, y))"
            )
        columns, n_samples, names = _data.read_columns(X, self, reset=True)
        forced = self._categorical_mask(len(columns), names)
        per_column = self._n_thresholds_per_column(len(columns), names)
        # First pass: every column's kind, and its values as numbers (numeric: the values; ordered:
        # the category codes; one-hot: the category codes too).
        kinds: list[str] = []
        categories: list = []
        numbers_: list[np.ndarray] = []
        distinct: list[np.ndarray] = []
        ranks: list[np.ndarray] = []  # each sample's position in its column's distinct values
        # The rows the thresholds are chosen from (``subsample``): None for every row.
        rows = self._threshold_rows(n_samples)
        for j, col in enumerate(columns):
            kind, declared = _data.column_kind(col, j, names, forced=bool(forced[j]),
                                               ordered=self.encoding == "ordered")
            cats = None
            use = None if per_column[j] is None else rows  # a column cut between every two values: all rows
            if kind in ("binary", "numeric"):
                x = _data.numeric_values(col, j, names)  # every row: the checks name any bad value
                if use is not None and kind != "binary":
                    values, rank = np.unique(x[use], return_inverse=True)
                    if values.size < 2 or _zero_one(values):  # constant or 0/1 there: decided on every row
                        use = None
                    else:
                        x = x[use]
                if use is None or kind == "binary":
                    use = None
                    values, rank = np.unique(x, return_inverse=True)
                if kind == "binary" or (values.size == 2 and values[0] == 0 and values[1] == 1):
                    kind = "binary"
            else:
                labels = _data.label_values(col, j, names)
                cats = _data.label_order(labels, declared)  # the categories of every row
                order = cats.tolist()
                code = {c: i for i, c in enumerate(order)}
                x = np.array([code[v] for v in (labels if use is None else labels[use]).tolist()], dtype=np.float64)
                values = np.arange(len(order), dtype=np.float64)
                rank = x.astype(np.int64)
            if use is None and rows is not None:  # the ensemble reads every column on the drawn rows
                rank = rank.reshape(-1)[rows]
            kinds.append(kind)
            categories.append(cats)
            numbers_.append(x)
            distinct.append(values)
            ranks.append(rank.reshape(-1))
        weight = _check_weights(sample_weight, n_samples)
        if rows is not None:
            weight = None if weight is None else weight[rows]
            if y is not None:
                y = np.asarray(y)
                if y.ndim != 1 or y.shape[0] != n_samples:
                    raise ValueError(f"y must be 1-d with one value per row of X ({n_samples}); got shape {y.shape}")
                y = y[rows]
        ranked = None
        if self.strategy in SUPERVISED:
            ranked = ensemble_cuts(ranks, distinct, kinds, y, weight, n_samples if rows is None else rows.size)
        # Second pass: the questions of every column.
        thresholds: list[np.ndarray] = []
        splits: list[BinarySplit] = []
        groups: list[np.ndarray] = []

        def add_group(new: list[BinarySplit]) -> None:
            start = len(splits)
            splits.extend(new)
            groups.append(np.arange(start, start + len(new)))

        for j, kind in enumerate(kinds):
            values, x = distinct[j], numbers_[j]
            cuts = np.zeros(0, dtype=np.float64)
            if kind == "binary":
                if values.size == 2:
                    add_group([BinarySplit(j, BINARY, 0.5)])
            elif kind in ("numeric", "ordered"):
                pos = cut_positions(
                    values, x, per_column[j], self.strategy, ranked=None if ranked is None else ranked[j],
                    below=_share_below(ranks[j], values.size, weight) if ranked is not None else None,
                )
                if kind == "numeric":
                    cuts = np.array([short_threshold(values[i], values[i + 1]) for i in pos], dtype=np.float64)
                else:
                    cuts = pos.astype(np.float64) + 0.5
                if cuts.size:
                    add_group([BinarySplit(j, THRESHOLD, float(t)) for t in cuts])
            elif values.size == 2:
                add_group([BinarySplit(j, CATEGORY, math.nan, (1.0,))])
            elif values.size > 2:
                _data.warn_many_labels(values.size, n_samples, j, names)
                for c in range(values.size):
                    add_group([BinarySplit(j, CATEGORY, math.nan, (float(c),))])
            thresholds.append(cuts)
        self.column_kinds_ = kinds
        self.categories_ = categories
        self.thresholds_ = thresholds
        self.splits_ = splits
        self.groups_ = groups
        return self

    def _check_loaded(self) -> None:
        """Check that loaded fitted attributes fit together (raise on anything inconsistent)."""
        d = self.n_features_in_
        if not isinstance(d, int) or d < 1:
            raise ValueError("n_features_in_ must be a positive integer")
        for name in ("column_kinds_", "categories_", "thresholds_"):
            if not isinstance(getattr(self, name), list) or len(getattr(self, name)) != d:
                raise ValueError(f"{name} must be a list with one entry per column")
        if any(k not in ("binary", "numeric", "categorical", "ordered") for k in self.column_kinds_):
            raise ValueError(f"unknown column kind in {self.column_kinds_}")
        if not all(isinstance(s, BinarySplit) and isinstance(s.column, int) and 0 <= s.column < d
                   for s in self.splits_):
            raise ValueError("splits_ must be BinarySplits of existing columns")
        for s in self.splits_:
            if s.kind not in (BINARY, THRESHOLD, CATEGORY):
                raise ValueError(f"split {s} has an unknown kind")
            if s.kind == THRESHOLD and not (isinstance(s.threshold, (int, float)) and np.isfinite(s.threshold)):
                raise ValueError(f"split {s} needs a finite threshold")
            if not isinstance(s.categories, tuple) or not all(
                isinstance(c, (int, float)) and not isinstance(c, bool) for c in s.categories
            ):
                raise ValueError(f"split {s} needs a tuple of category codes")
        flat = sorted(int(k) for g in self.groups_ for k in np.asarray(g).tolist())
        if flat != list(range(len(self.splits_))):
            raise ValueError("groups_ must hold every output column once")
        for s in self.splits_:
            cats = self.categories_[s.column]
            if s.kind == CATEGORY and (cats is None or not all(0 <= c < len(cats) for c in s.categories)):
                raise ValueError(f"split {s} refers to a category that column {s.column} does not have")

    # -- transforming ----------------------------------------------------------------------
    def _encode(self, X: Any, *, check_names: bool = True) -> np.ndarray:
        check_is_fitted(self, "splits_")
        columns, _, _ = _data.read_columns(X, self, reset=False, check_names=check_names)
        return _data.encode_columns(columns, self.categories_, self._names())

    def encode(self, X: Any) -> np.ndarray:
        """The raw columns as numbers: categories become their integer codes.

        This is the matrix that the raw splits of ``splits_`` are written for:
        numeric and 0/1 columns as they are (booleans as 0/1), categorical and
        ordered columns as the position of the value in ``categories_[j]``.

        Parameters
        ----------
        X : array-like or pandas DataFrame of shape (n_samples, n_features_in_)

        Returns
        -------
        X_encoded : ndarray of float64, shape (n_samples, n_features_in_)

        Raises
        ------
        ValueError
            On missing values or infinity, and on categories not seen in ``fit``
            (the message names the column, the row and the value).
        """
        return self._encode(X)

    def binarize_encoded(self, E: np.ndarray) -> np.ndarray:
        """The binary questions of an encoded matrix (:meth:`encode`)."""
        out = np.empty((E.shape[0], len(self.splits_)), dtype=np.uint8)
        for cols in self.groups_:
            cols = np.asarray(cols, dtype=np.int64)
            first = self.splits_[int(cols[0])]
            if cols.size > 1 and self._one_threshold_column(cols):
                # All thresholds of a column at once: one read of the column and rows of adjacent
                # bytes written, not a strided pass over ``out`` per question (7x faster at 500,000 x 160).
                t = np.array([self.splits_[k].threshold for k in cols.tolist()])
                block = E[:, first.column, None] <= t
                if np.all(np.diff(cols) == 1):
                    out[:, cols[0]:cols[-1] + 1] = block
                else:
                    out[:, cols] = block
                continue
            for k in cols.tolist():
                out[:, k] = _answers(self.splits_[k], E)
        return out

    def transform(self, X: Any) -> np.ndarray:
        """Binary features of ``X``: column ``k`` answers the question ``splits_[k]``.

        Parameters
        ----------
        X : array-like or pandas DataFrame of shape (n_samples, n_features_in_)

        Returns
        -------
        X_binary : ndarray of uint8, shape (n_samples, len(splits_))
        """
        return self.binarize_encoded(self._encode(X))

    def ordinal_encoded(self, E: np.ndarray) -> np.ndarray:
        """The ordinal codes of an encoded matrix (:meth:`ordinal_transform`)."""
        out = np.zeros((E.shape[0], len(self.groups_)), dtype=np.int32)
        for g, cols in enumerate(self.groups_):
            cols = np.asarray(cols, dtype=np.int64)
            if self._one_threshold_column(cols):  # the thresholds below x (NaN: above all, as x <= t fails)
                t = np.sort(np.array([self.splits_[k].threshold for k in cols.tolist()]))
                out[:, g] = np.searchsorted(t, E[:, self.splits_[int(cols[0])].column], side="left")
                continue
            right_is_yes = self.splits_[int(cols[0])].kind == BINARY  # a 0/1 question sends 1 right
            for k in cols.tolist():
                yes = _answers(self.splits_[k], E)
                out[:, g] += yes if right_is_yes else ~yes
        return out

    def _one_threshold_column(self, cols: np.ndarray) -> bool:
        """Whether the questions ``cols`` are all thresholds of one column (every group a fit makes
        of a numeric or ordered column)."""
        first = self.splits_[int(cols[0])]
        return all(self.splits_[k].kind == THRESHOLD and self.splits_[k].column == first.column
                   for k in cols.tolist())

    def ordinal_transform(self, X: Any) -> np.ndarray:
        """One integer code per ordinal group: how many of its questions send ``x`` right.

        For a numeric column with thresholds ``t_0 < t_1 < ...`` the code of
        ``x`` is the number of thresholds below ``x``, so ``code <= m`` exactly
        when ``x <= t_m``: the grammar of BCART-PCFG splits these codes.  A
        one-hot question ``colour == red`` has code 0 for red and 1 otherwise,
        a 0/1 column its value.

        Parameters
        ----------
        X : array-like or pandas DataFrame of shape (n_samples, n_features_in_)

        Returns
        -------
        codes : ndarray of int32, shape (n_samples, len(groups_))
        """
        return self.ordinal_encoded(self._encode(X))

    @property
    def n_codes_(self) -> np.ndarray:
        """Number of codes of every ordinal group (its questions + 1)."""
        check_is_fitted(self, "groups_")
        return np.array([len(g) + 1 for g in self.groups_], dtype=np.int64)

    def coarsened(self) -> "Binarizer | None":
        """A copy that keeps every other threshold of each group of two or more.

        Used by BCART-PCFG to fit a smaller grammar when a limit stops the
        requested one.  Of a group of ``L`` ordered thresholds it keeps those
        at positions ``(L // 2) % 2, + 2, ...``: the middle one (the upper of
        the two middle ones when ``L`` is even) survives every halving, so
        that repeated coarsening ends at each column's middle threshold, not
        at an extreme one that splits off a handful of rows.  Returns None
        when no group can lose a threshold.
        """
        check_is_fitted(self, "groups_")
        if all(len(g) < 2 for g in self.groups_):
            return None
        keep: list[int] = []
        for g in self.groups_:
            keep.extend(g[(len(g) // 2) % 2::2].tolist())  # every other one, the middle one included
        return self._subset(sorted(keep))

    def _subset(self, keep: Sequence[int]) -> "Binarizer":
        """A fitted copy with only the output columns ``keep`` (sorted, within their groups)."""
        import copy

        out = copy.copy(self)
        keep_set = set(keep)
        new_index = {old: new for new, old in enumerate(keep)}
        out.splits_ = [self.splits_[k] for k in keep]
        out.groups_ = [np.array([new_index[k] for k in g if k in keep_set], dtype=np.int64) for g in self.groups_]
        out.groups_ = [g for g in out.groups_ if g.size]
        by_column: list[list[float]] = [[] for _ in range(self.n_features_in_)]
        for s in out.splits_:  # one pass (a scan per column is quadratic on wide data)
            if s.kind == THRESHOLD:
                by_column[s.column].append(s.threshold)
        out.thresholds_ = [np.array(t, dtype=np.float64) for t in by_column]
        return out

    # -- trees on the raw columns --------------------------------------------------------------
    def feature_categories(self) -> list:
        """The category labels of every raw column (None for numeric and 0/1 columns), for a Tree."""
        check_is_fitted(self, "splits_")
        return [None if c is None else c.copy() for c in self.categories_]

    def raw_tree(self, tree: Tree, feature_names: Sequence[str] | None = None) -> Tree:
        """Rewrite a tree of BINARY splits on the output columns as a tree on the raw columns.

        A binary column is 0 on the left branch of the search tree and 1 on the
        right.  A ``x <= t`` question (THRESHOLD) or ``x == c`` question
        (CATEGORY) is 1 on the *left* branch of its raw split, so those nodes
        swap their children; 0/1 columns keep a BINARY split.  Node ids are
        kept; the result predicts from raw ``X`` and carries the category
        labels and feature names.
        """
        check_is_fitted(self, "splits_")
        names = list(feature_names) if feature_names is not None else self._names()
        b = TreeBuilder(
            self.n_features_in_, classes=tree.classes, task=tree.task, feature_names=names,
            feature_categories=self.feature_categories(),
        )
        for i in range(tree.n_nodes):
            b.add_node(tree.counts[i], tree.value[i], int(tree.depth[i]))
        for i in np.flatnonzero(tree.split_kind != LEAF).tolist():
            if tree.split_kind[i] != BINARY:
                raise ValueError(f"node {i} of the tree is not a BINARY split on a column of the Binarizer")
            s = self.splits_[int(tree.feature[i])]
            zero, one = int(tree.children_left[i]), int(tree.children_right[i])
            if s.kind == BINARY:
                b.set_split(i, BINARY, s.column, 0.5, zero, one)
            elif s.kind == THRESHOLD:
                b.set_split(i, THRESHOLD, s.column, s.threshold, one, zero)
            else:
                b.set_split(i, CATEGORY, s.column, None, one, zero, categories=s.categories)
        return b.build()

    # -- names -----------------------------------------------------------------------------
    def condition_text(
        self,
        column: int,
        kind: int,
        threshold: float = math.nan,
        categories: Any = (),
        feature_names: Sequence[str] | None = None,
    ) -> tuple[str, str]:
        """Readable texts of the left and right branches of a raw split.

        The split is in the convention of :class:`arboretum.tree.Tree` on the
        encoded matrix (:meth:`encode`).  Category codes are shown as their
        labels, thresholds exactly.

        Returns
        -------
        left, right : str
            E.g. ``("age <= 42.5", "age >  42.5")``, ``("colour == red",
            "colour != red")`` or ``("size <= M", "size >  M")``.
        """
        check_is_fitted(self, "splits_")
        if feature_names is not None and len(feature_names) != self.n_features_in_:
            raise ValueError(
                f"feature_names has {len(feature_names)} names but the Binarizer has "
                f"{self.n_features_in_} input columns"
            )
        names = [str(f) for f in feature_names] if feature_names is not None else self._names()
        name = names[column] if names is not None else f"x{column}"
        if kind == CATEGORY and self.categories_[column] is None:
            raise ValueError(f"column {column} is not categorical; a CATEGORY split needs one")
        return split_texts(name, kind, threshold, categories, self.categories_[column], decimals=None)

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """Names of the binary columns: ``"age <= 42.5"``, ``"colour == red"``, ``"smoker"``.

        Parameters
        ----------
        input_features : array-like of str, optional
            Names of the raw columns; must equal ``feature_names_in_`` when
            that exists.  Default: ``feature_names_in_`` or ``x0, x1, ...``.

        Returns
        -------
        names : ndarray of str (object dtype)
        """
        check_is_fitted(self, "splits_")
        names = None
        if input_features is not None:
            names = [str(f) for f in input_features]
            if len(names) != self.n_features_in_:
                raise ValueError(
                    f"input_features should have length equal to number of features "
                    f"({self.n_features_in_}), got {len(names)}"
                )
            if hasattr(self, "feature_names_in_") and not np.array_equal(names, self.feature_names_in_):
                raise ValueError("input_features is not equal to feature_names_in_")
        out = []
        for s in self.splits_:
            if s.kind == BINARY:
                out.append(names[s.column] if names is not None else (self._names() or [f"x{j}" for j in range(self.n_features_in_)])[s.column])
            else:
                out.append(self.condition_text(s.column, s.kind, s.threshold, s.categories, names)[0])
        return np.asarray(out, dtype=object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = []
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.target_tags.required = self.strategy in SUPERVISED
        return tags
