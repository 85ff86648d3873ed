"""Input validation shared by every arboretum estimator, and the :class:`Binarizer`.

Every check raises :class:`ValueError` (bad values) or :class:`TypeError`
(bad types) with a message that names the offending parameter, the allowed
values and what was received, e.g. ``"alpha must be a number in (0, 1]; got 1.5"``.

:class:`Binarizer` turns a raw feature matrix (numbers, booleans, categories)
into binary features with readable names, and remembers, for every binary
column, the raw split it stands for, so that a tree searched on the binary
features can be rewritten as a tree on the raw columns.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils import check_array
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from .tree import BINARY, CATEGORY, THRESHOLD

__all__ = [
    "Binarizer",
    "BinarySplit",
    "check_binary_features",
    "check_numeric_features",
    "check_classification_targets_encoded",
    "check_positive_number",
    "check_int",
]


def _who(estimator_name: str | None) -> str:
    return estimator_name if estimator_name else "This estimator"


def _raise_if_not_finite(X: np.ndarray, name: str) -> None:
    """Raise a ValueError locating the first NaN or infinity of a 1-D or 2-D array."""
    if X.dtype.kind not in "fc":
        return
    bad = ~np.isfinite(X)
    if not bad.any():
        return
    where = np.argwhere(bad)[0]
    if X.ndim == 1:
        place = f"first at index {where[0]}"
    else:
        place = f"first at row {where[0]}, column {where[1]}"
    raise ValueError(f"{name} contains NaN or infinity ({place}: {X[tuple(where)]})")


def check_numeric_features(
    X: Any, name: str = "X", *, estimator_name: str | None = None
) -> np.ndarray:
    """Validate a dense, finite, 2-D numeric feature matrix.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    name : str, default="X"
        Name of the argument in error messages.
    estimator_name : str, optional
        Name of the calling estimator in error messages.

    Returns
    -------
    X : ndarray of float64, shape (n_samples, n_features)

    Raises
    ------
    TypeError
        If ``X`` is sparse or not numeric.
    ValueError
        If ``X`` is not 2-D, is empty, or contains NaN or infinity.
    """
    X = check_array(
        X,
        accept_sparse=False,
        dtype=np.float64,
        ensure_all_finite=False,
        ensure_2d=True,
        input_name=name,
        estimator=estimator_name,
    )
    _raise_if_not_finite(X, name)
    return X


def check_binary_features(
    X: Any, name: str = "X", *, estimator_name: str | None = None
) -> np.ndarray:
    """Validate a matrix of binary (0/1) features.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Numbers equal to 0 or 1, or booleans.
    name : str, default="X"
        Name of the argument in error messages.
    estimator_name : str, optional
        Name of the calling estimator in error messages, e.g.
        ``"MAPTreeClassifier"``.

    Returns
    -------
    X : ndarray of uint8, shape (n_samples, n_features)
        C-contiguous array holding only 0 and 1 (``X`` itself when it
        already is one; treat it as read-only).

    Raises
    ------
    TypeError
        If ``X`` is sparse or not numeric.
    ValueError
        If ``X`` is not 2-D, is empty, contains NaN or infinity, or holds a
        value other than 0 and 1 (the message names the first such column).
    """
    X = check_array(
        X,
        accept_sparse=False,
        dtype="numeric",
        ensure_all_finite=False,
        ensure_2d=True,
        input_name=name,
        estimator=estimator_name,
    )
    if X.dtype.kind == "O":
        try:
            X = X.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{name} must contain numbers; could not convert it to float: {exc}") from None
    _raise_if_not_finite(X, name)
    if X.dtype.kind == "b":
        return np.ascontiguousarray(X, dtype=np.uint8)
    bad = (X != 0) & (X != 1)
    if bad.any():
        column = int(np.flatnonzero(bad.any(axis=0))[0])
        row = int(np.flatnonzero(bad[:, column])[0])
        value = X[row, column].item()
        raise ValueError(
            f"{_who(estimator_name)} requires binary (0/1) features; column {column} of {name} has value "
            f"{value!r} (row {row}). Binarise the features first, e.g. with arboretum.data.Binarizer."
        )
    return np.ascontiguousarray(X, dtype=np.uint8)


def check_classification_targets_encoded(
    y: Any,
    *,
    min_classes: int = 2,
    n_samples: int | None = None,
    name: str = "y",
    estimator_name: str | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Validate classification targets and encode them as class indices.

    A column vector of shape (n, 1) is accepted with scikit-learn's
    ``DataConversionWarning``; continuous targets are rejected with
    scikit-learn's ``"Unknown label type"`` error.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Class labels (numbers, strings or booleans).
    min_classes : int, default=2
        Minimum number of distinct classes required.
    n_samples : int, optional
        If given, ``y`` must have exactly this many entries (rows of X).
    name : str, default="y"
        Name of the argument in error messages.
    estimator_name : str, optional
        Name of the calling estimator in error messages.

    Returns
    -------
    y_encoded : ndarray of int64, shape (n_samples,)
        Index of every label in ``classes``.
    classes : ndarray of shape (n_classes,)
        Sorted distinct labels (``np.unique``).

    Raises
    ------
    ValueError
        If ``y`` is not 1-D, is empty, contains NaN or infinity, is
        continuous, has the wrong length, or has fewer than ``min_classes``
        classes.
    """
    min_classes = check_int(min_classes, "min_classes", minimum=1)
    y = column_or_1d(y, warn=True)
    if y.shape[0] == 0:
        raise ValueError(f"{name} is empty: {estimator_name or 'the estimator'} needs at least one sample")
    if n_samples is not None and y.shape[0] != n_samples:
        raise ValueError(
            f"X and {name} have inconsistent numbers of samples: X has {n_samples}, {name} has {y.shape[0]}"
        )
    if y.dtype.kind in "fc":
        _raise_if_not_finite(y, name)
    elif y.dtype.kind == "O":
        for i, v in enumerate(y):
            if v is None or (isinstance(v, numbers.Real) and not math.isfinite(v)):
                raise ValueError(
                    f"{name} contains a missing value, NaN or infinity (first at index {i}: {v!r})"
                )
    check_classification_targets(y)
    try:
        classes, y_encoded = np.unique(y, return_inverse=True)
    except TypeError as exc:
        raise TypeError(f"{name} mixes labels of types that cannot be sorted together: {exc}") from None
    if classes.shape[0] < min_classes:
        n_found = classes.shape[0]
        raise ValueError(
            f"{_who(estimator_name)} needs samples of at least {min_classes} classes; got {n_found} "
            f"class{'es' if n_found != 1 else ''}: {classes.tolist()}"
        )
    return y_encoded.astype(np.int64, copy=False).reshape(-1), classes


def _interval(
    lower: float, strictly: bool, upper: float | None, upper_inclusive: bool, allow_inf: bool
) -> str:
    left = f"({lower:g}" if strictly else f"[{lower:g}"
    if upper is None:
        right = "inf]" if allow_inf else "inf)"
    else:
        right = f"{upper:g}]" if upper_inclusive else f"{upper:g})"
    return f"{left}, {right}"


def check_positive_number(
    value: Any,
    name: str,
    *,
    strictly: bool = True,
    upper: float | None = None,
    upper_inclusive: bool = True,
    allow_none: bool = False,
    allow_inf: bool = False,
) -> float | None:
    """Check that ``value`` is a real number in ``(0, upper]`` (or a variant).

    Parameters
    ----------
    value : object
        The parameter value to check.
    name : str
        Parameter name used in the error message.
    strictly : bool, default=True
        Exclude 0 (``(0, ...``) when True, include it (``[0, ...``) when False.
    upper : float, optional
        Upper bound; none by default.
    upper_inclusive : bool, default=True
        Whether ``upper`` itself is allowed.
    allow_none : bool, default=False
        Accept ``None`` (returned unchanged).
    allow_inf : bool, default=False
        Accept ``+inf`` when there is no upper bound.

    Returns
    -------
    value : float or None

    Raises
    ------
    TypeError
        If ``value`` is not a real number (booleans are refused).
    ValueError
        If ``value`` is NaN or outside the interval, e.g.
        ``"alpha must be a number in (0, 1]; got 1.5"``.
    """
    interval = _interval(0.0, strictly, upper, upper_inclusive, allow_inf)
    expected = f"a number in {interval}" + (" or None" if allow_none else "")
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be {expected}; got {value!r} ({type(value).__name__})")
    x = float(value)
    ok = not math.isnan(x) and (x > 0 if strictly else x >= 0)
    if upper is None:
        ok = ok and (math.isfinite(x) or allow_inf)
    else:
        ok = ok and (x <= upper if upper_inclusive else x < upper)
    if not ok:
        raise ValueError(f"{name} must be {expected}; got {value!r}")
    return x


def check_int(
    value: Any,
    name: str,
    minimum: int | None = None,
    maximum: int | None = None,
    allow_none: bool = False,
) -> int | None:
    """Check that ``value`` is an integer within ``[minimum, maximum]``.

    Parameters
    ----------
    value : object
        The parameter value to check; Python and NumPy integers are accepted,
        booleans and floats (even ``3.0``) are refused.
    name : str
        Parameter name used in the error message.
    minimum, maximum : int, optional
        Inclusive bounds.
    allow_none : bool, default=False
        Accept ``None`` (returned unchanged).

    Returns
    -------
    value : int or None

    Raises
    ------
    TypeError
        If ``value`` is not an integer, e.g. ``"max_depth must be an integer >= 1; got 2.5 (float)"``.
    ValueError
        If ``value`` is out of range.
    """
    if minimum is not None and maximum is not None:
        expected = f"an integer in [{minimum}, {maximum}]"
    elif minimum is not None:
        expected = f"an integer >= {minimum}"
    elif maximum is not None:
        expected = f"an integer <= {maximum}"
    else:
        expected = "an integer"
    if allow_none:
        expected += " or None"
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be {expected}; got {value!r} ({type(value).__name__})")
    x = int(value)
    if (minimum is not None and x < minimum) or (maximum is not None and x > maximum):
        raise ValueError(f"{name} must be {expected}; got {x}")
    return x


# ---------------------------------------------------------------------------
# Binarizer
# ---------------------------------------------------------------------------

_STRATEGIES = ("quantile", "all")
_ENCODINGS = ("ordered", "onehot")
_KIND_NAMES = {BINARY: "BINARY", THRESHOLD: "THRESHOLD", CATEGORY: "CATEGORY"}


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


def _is_dataframe(X: Any) -> bool:
    return hasattr(X, "iloc") and hasattr(X, "dtypes") and hasattr(X, "columns")


def _is_missing(v: Any) -> bool:
    if v is None:
        return True
    if isinstance(v, (float, np.floating)):
        return math.isnan(v)
    return type(v).__name__ in ("NAType", "NaTType")


def _is_number(v: Any) -> bool:
    return isinstance(v, (numbers.Real, np.bool_)) and not isinstance(v, (str, bytes))


def _format_number(x: float) -> str:
    """Shortest text that reads back as ``x`` (``3`` rather than ``3.0``)."""
    x = float(x)
    if math.isfinite(x) and x == math.floor(x) and abs(x) < 1e16:
        return str(int(x))
    return repr(x)


def _format_label(v: Any) -> str:
    """Readable text of a category label."""
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, numbers.Integral):
        return str(int(v))
    if isinstance(v, numbers.Real):
        return _format_number(v)
    if isinstance(v, bytes):
        return v.decode(errors="replace")
    return str(v)


def _short_threshold(lo: float, hi: float) -> float:
    """A short decimal strictly between ``lo < hi``, near their midpoint.

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


def _cut_positions(counts: np.ndarray, n_thresholds: int, strategy: str) -> np.ndarray:
    """Where to cut a sorted list of distinct values with these counts.

    Position ``i`` means a threshold between distinct values ``i`` and ``i + 1``.
    "all" cuts everywhere; "quantile" picks, for each level ``q = 1/(n+1), ...,
    n/(n+1)``, the cut whose fraction of samples below it is nearest to ``q``
    (ties to the lower cut), then drops duplicates.
    """
    k = counts.shape[0]
    if k < 2:
        return np.zeros(0, dtype=np.int64)
    if strategy == "all" or k - 1 <= n_thresholds:
        return np.arange(k - 1)
    cdf = np.cumsum(counts)[:-1] / counts.sum()
    q = np.arange(1, n_thresholds + 1) / (n_thresholds + 1)
    pos = np.searchsorted(cdf, q)
    lower = np.clip(pos - 1, 0, k - 2)
    upper = np.clip(pos, 0, k - 2)
    pick = np.where(np.abs(cdf[lower] - q) <= np.abs(cdf[upper] - q), lower, upper)
    return np.unique(pick)


def _sorted_labels(labels: list) -> list:
    try:
        return sorted(labels)
    except TypeError:  # labels of types that do not compare, e.g. str and int
        return sorted(labels, key=lambda v: (type(v).__name__, str(v)))


class Binarizer(TransformerMixin, BaseEstimator):
    """Turn raw features (numbers, booleans, categories) into named binary features.

    Every output column is a yes/no question about one raw column:

    - a **0/1 or boolean** column stays one binary column named after it
      (value 1 iff ``x > 0.5``);
    - a **numeric** column gives columns ``x <= t`` (value 1 iff ``x <= t``),
      named like ``"age <= 42.5"``, for thresholds ``t`` between consecutive
      distinct training values;
    - a **categorical** column (object, string or ``category`` dtype, or listed
      in ``categorical``) gives one-hot columns ``"colour == red"`` (value 1 iff
      ``x == red``; a column with only two categories gives one column, for the
      second), or, for a pandas *ordered* categorical with
      ``encoding="ordered"``, threshold columns over the category order
      (``"size <= M"``).

    Each output column remembers the raw split it stands for (``splits_``), in
    the convention of :class:`arboretum.tree.Tree` on the encoded raw matrix
    of :meth:`encode`, so a tree learnt on the binary features can be rewritten
    as a tree on the raw columns (``MAPTreeClassifier`` does this).

    Missing values are not supported (NaN, None or infinity raise a
    ``ValueError`` naming the column and row), and a category not seen in
    ``fit`` raises a ``ValueError`` naming the column and the value: nothing is
    dropped silently.

    Parameters
    ----------
    n_thresholds : int, default=8
        With ``strategy="quantile"``, the most thresholds per numeric column
        (and per ordered categorical column).
    strategy : {"quantile", "all"}, default="quantile"
        ``"quantile"``: for each level ``q = 1/(n+1), ..., n/(n+1)`` (``n =
        n_thresholds``), the cut between consecutive distinct values whose
        fraction of training samples below it is nearest to ``q``; duplicates
        are dropped, so a column may get fewer than ``n_thresholds``.
        ``"all"``: a cut between every two consecutive distinct values (what
        CART considers; many columns for continuous data).
        A cut between values ``a < b`` is at their midpoint, rounded to the
        shortest decimal of at least 4 significant digits that still lies
        strictly between them (``1.95`` between ``1.9`` and ``2.0``), so the
        printed thresholds are the exact ones.
    categorical : None, array-like of int or str, or array-like of bool, default=None
        Columns to treat as categorical whatever their dtype (indices, names
        of DataFrame columns, or a boolean mask over the columns).  Object,
        string and ``category`` columns are categorical anyway; object columns
        that hold only numbers are numeric.
    encoding : {"ordered", "onehot"}, default="ordered"
        ``"ordered"``: pandas ordered categoricals get thresholds over their
        declared order; other categorical columns are one-hot encoded.
        ``"onehot"``: every categorical column is one-hot encoded.

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
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` was a DataFrame with string column names.

    Examples
    --------
    >>> import numpy as np
    >>> from arboretum.data import Binarizer
    >>> X = np.array([[1.0, 0], [2.0, 1], [3.5, 1], [9.0, 0]])
    >>> b = Binarizer(n_thresholds=2).fit(X)
    >>> b.get_feature_names_out().tolist()
    ['x0 <= 1.5', 'x0 <= 6.25', 'x1']
    >>> b.transform(X)
    array([[1, 1, 0],
           [0, 1, 1],
           [0, 1, 1],
           [0, 0, 0]], dtype=uint8)
    """

    def __init__(
        self,
        n_thresholds: int = 8,
        strategy: str = "quantile",
        categorical: Any = None,
        encoding: str = "ordered",
    ) -> None:
        self.n_thresholds = n_thresholds
        self.strategy = strategy
        self.categorical = categorical
        self.encoding = encoding

    # -- validation ------------------------------------------------------------------------
    def _check_params(self) -> None:
        check_int(self.n_thresholds, "n_thresholds", minimum=1)
        if not isinstance(self.strategy, str) or self.strategy not in _STRATEGIES:
            raise ValueError(f"strategy must be one of {list(_STRATEGIES)}; got {self.strategy!r}")
        if not isinstance(self.encoding, str) or self.encoding not in _ENCODINGS:
            raise ValueError(f"encoding must be one of {list(_ENCODINGS)}; got {self.encoding!r}")

    def _categorical_mask(self, n_features: int, columns: list | None) -> np.ndarray:
        """Boolean mask of the columns listed in ``categorical``."""
        mask = np.zeros(n_features, dtype=bool)
        spec = self.categorical
        if spec is None:
            return mask
        allowed = "None, a list of column indices or names, or a boolean mask over the columns"
        if isinstance(spec, (str, numbers.Integral)):
            spec = [spec]
        try:
            items = list(spec)
        except TypeError:
            raise TypeError(f"categorical must be {allowed}; got {spec!r}") from None
        if items and all(isinstance(v, (bool, np.bool_)) for v in items):
            if len(items) != n_features:
                raise ValueError(
                    f"categorical as a boolean mask needs one entry per column ({n_features}); "
                    f"got {len(items)}"
                )
            return np.asarray(items, dtype=bool)
        for v in items:
            if isinstance(v, str):
                if columns is None or v not in columns:
                    where = f"columns: {columns}" if columns is not None else "X has no column names"
                    raise ValueError(f"categorical names column {v!r}, which is not a column of X ({where})")
                mask[columns.index(v)] = True
            elif isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)):
                if not 0 <= int(v) < n_features:
                    raise ValueError(
                        f"categorical holds column index {int(v)}, outside [0, {n_features - 1}]"
                    )
                mask[int(v)] = True
            else:
                raise TypeError(f"categorical must be {allowed}; got an entry {v!r} ({type(v).__name__})")
        return mask

    def _columns(self, X: Any, *, reset: bool, check_names: bool = True) -> tuple[list, int]:
        """Validate ``X``; return its columns (Series or 1-D arrays) and the number of rows."""
        if _is_dataframe(X):
            n, d = X.shape
            if d == 0:
                raise ValueError(
                    f"Found array with 0 feature(s) (shape={X.shape}) while a minimum of 1 is "
                    f"required by {type(self).__name__}."
                )
            if n == 0:
                raise ValueError(
                    f"Found array with 0 sample(s) (shape={X.shape}) while a minimum of 1 is "
                    f"required by {type(self).__name__}."
                )
            if reset or check_names:
                validate_data(self, X, reset=reset, skip_check_array=True)
            return [X.iloc[:, j] for j in range(d)], n
        if isinstance(X, (list, tuple)) and np.asarray(X).dtype.kind in "USO":
            X = np.asarray(X, dtype=object)  # keep numbers as numbers in lists mixing them with strings
        X = check_array(
            X, accept_sparse=False, dtype=None, ensure_all_finite=False, ensure_2d=True,
            input_name="X", estimator=self,
        )
        if reset or check_names:
            validate_data(self, X, reset=reset, skip_check_array=True)
        return [X[:, j] for j in range(X.shape[1])], X.shape[0]

    def _label(self, j: int, names: list[str] | None = None) -> str:
        if names is not None:
            return names[j]
        if hasattr(self, "feature_names_in_"):
            return str(self.feature_names_in_[j])
        return f"x{j}"

    def _where(self, j: int) -> str:
        if hasattr(self, "feature_names_in_"):
            return f"column {str(self.feature_names_in_[j])!r} of X"
        return f"column {j} of X"

    def _missing_error(self, j: int, row: int, value: Any) -> ValueError:
        what = "NaN" if isinstance(value, (float, np.floating)) else repr(value)
        return ValueError(
            f"{self._where(j)} has a missing value ({what}) at row {row}: the Binarizer does not "
            f"support missing values (NaN, None); impute them first, e.g. with "
            f"sklearn.impute.SimpleImputer, or drop those rows"
        )

    def _bad_value_error(self, j: int, row: int, value: Any) -> TypeError:
        return TypeError(
            f"{self._where(j)} holds {value!r} ({type(value).__name__}) at row {row}; every value "
            f"must be a number, a boolean or a category label: the argument must be a string or a number"
        )

    def _numeric(self, j: int, col: Any) -> np.ndarray:
        """Column ``j`` as finite float64 values; errors name the column and row."""
        values = None
        if hasattr(col, "dtype") and hasattr(col, "to_numpy"):  # pandas Series
            import pandas as pd

            dt = col.dtype
            if (pd.api.types.is_bool_dtype(dt) or pd.api.types.is_numeric_dtype(dt)) and not (
                pd.api.types.is_complex_dtype(dt)
            ):
                values = col.to_numpy(dtype=np.float64, na_value=np.nan)
            else:
                col = col.to_numpy(dtype=object)
        elif col.dtype.kind in "biuf":
            values = col.astype(np.float64)
        if values is None:
            col = np.asarray(col, dtype=object)
            for i, v in enumerate(col):
                if _is_missing(v):
                    raise self._missing_error(j, i, v)
                if isinstance(v, (str, bytes)):
                    raise ValueError(
                        f"{self._where(j)} holds the string {v!r} at row {i}, but it was numeric when "
                        f"the Binarizer was fitted"
                    )
                if not _is_number(v):
                    raise self._bad_value_error(j, i, v)
            values = col.astype(np.float64)
        bad = ~np.isfinite(values)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            if np.isnan(values[i]):
                raise self._missing_error(j, i, values[i])
            raise ValueError(
                f"{self._where(j)} contains infinity ({values[i]}) at row {i}: the Binarizer needs "
                f"finite numbers"
            )
        return values

    def _labels(self, j: int, col: Any) -> np.ndarray:
        """Column ``j`` as an object array of category labels (no missing values)."""
        if hasattr(col, "to_numpy"):
            col = col.to_numpy(dtype=object)
        col = np.asarray(col, dtype=object)
        for i, v in enumerate(col):
            if _is_missing(v):
                raise self._missing_error(j, i, v)
            if not (_is_number(v) or isinstance(v, (str, bytes))):
                raise self._bad_value_error(j, i, v)
        return col

    def _kind_of(self, j: int, col: Any, forced: bool) -> tuple[str, list | None]:
        """Kind of raw column ``j`` ("binary", "numeric", "categorical" or "ordered") and,
        for pandas categoricals, the declared category order."""
        if hasattr(col, "to_numpy"):  # pandas Series
            import pandas as pd

            dt = col.dtype
            if isinstance(dt, pd.CategoricalDtype):
                ordered = bool(dt.ordered) and self.encoding == "ordered"
                return ("ordered" if ordered else "categorical"), list(dt.categories)
            if forced:
                return "categorical", None
            if pd.api.types.is_bool_dtype(dt):
                return "binary", None
            if pd.api.types.is_numeric_dtype(dt) and not pd.api.types.is_complex_dtype(dt):
                return "numeric", None
            if pd.api.types.is_object_dtype(dt) or pd.api.types.is_string_dtype(dt):
                return self._object_kind(j, col.to_numpy(dtype=object)), None
            raise TypeError(
                f"{self._where(j)} has dtype {dt}, which the Binarizer does not support; allowed: "
                f"numbers, booleans, strings/objects and categories"
            )
        if forced:
            return "categorical", None
        kind = col.dtype.kind
        if kind == "b":
            return "binary", None
        if kind in "iuf":
            return "numeric", None
        if kind in "US":
            return "categorical", None
        if kind == "O":
            return self._object_kind(j, col), None
        raise TypeError(
            f"{self._where(j)} has dtype {col.dtype}, which the Binarizer does not support; allowed: "
            f"numbers, booleans, strings/objects and categories"
        )

    def _object_kind(self, j: int, values: np.ndarray) -> str:
        """An object column is numeric when it holds only numbers, categorical when it holds strings."""
        has_text = False
        for i, v in enumerate(values):
            if _is_missing(v):
                raise self._missing_error(j, i, v)
            if isinstance(v, (str, bytes)):
                has_text = True
            elif not _is_number(v):
                raise self._bad_value_error(j, i, v)
        return "categorical" if has_text else "numeric"

    # -- fitting ---------------------------------------------------------------------------
    def fit(self, X: Any, y: Any = None) -> "Binarizer":
        """Learn the kind, thresholds and categories of every column of ``X``.

        Parameters
        ----------
        X : array-like or pandas DataFrame of shape (n_samples, n_features)
            Raw features: numbers, booleans, strings or categories; no missing
            values.
        y : None
            Ignored.

        Returns
        -------
        self : Binarizer
        """
        self._check_params()
        columns, _ = self._columns(X, reset=True)
        names = list(X.columns) if _is_dataframe(X) else None
        forced = self._categorical_mask(len(columns), names)
        kinds: list[str] = []
        categories: list = []
        thresholds: list[np.ndarray] = []
        splits: list[BinarySplit] = []
        for j, col in enumerate(columns):
            kind, declared = self._kind_of(j, col, bool(forced[j]))
            cats = None
            cuts = np.zeros(0, dtype=np.float64)
            if kind in ("binary", "numeric"):
                x = self._numeric(j, col)
                values, counts = np.unique(x, return_counts=True)
                if kind == "binary" or (values.size == 2 and values[0] == 0 and values[1] == 1):
                    kind = "binary"
                    splits.append(BinarySplit(j, BINARY, 0.5))
                else:
                    pos = _cut_positions(counts, self.n_thresholds, self.strategy)
                    cuts = np.array(
                        [_short_threshold(values[i], values[i + 1]) for i in pos], dtype=np.float64
                    )
                    splits.extend(BinarySplit(j, THRESHOLD, float(t)) for t in cuts)
            else:
                labels = self._labels(j, col)
                seen = dict.fromkeys(labels.tolist())
                if declared is not None:
                    order = [c for c in declared if c in seen]
                else:
                    order = _sorted_labels(list(seen))
                cats = np.empty(len(order), dtype=object)
                cats[:] = order
                code = {c: i for i, c in enumerate(order)}
                counts = np.bincount([code[v] for v in labels.tolist()], minlength=len(order))
                if kind == "ordered":
                    pos = _cut_positions(counts, self.n_thresholds, self.strategy)
                    cuts = pos.astype(np.float64) + 0.5
                    splits.extend(BinarySplit(j, THRESHOLD, float(t)) for t in cuts)
                elif len(order) == 2:
                    splits.append(BinarySplit(j, CATEGORY, math.nan, (1.0,)))
                elif len(order) > 2:
                    splits.extend(BinarySplit(j, CATEGORY, math.nan, (float(c),)) for c in range(len(order)))
            kinds.append(kind)
            categories.append(cats)
            thresholds.append(cuts)
        self.column_kinds_ = kinds
        self.categories_ = categories
        self.thresholds_ = thresholds
        self.splits_ = splits
        self._codes = [
            None if c is None else {v: float(i) for i, v in enumerate(c.tolist())} for c in categories
        ]
        return self

    # -- transforming ----------------------------------------------------------------------
    def _encode(self, X: Any, *, check_names: bool = True) -> np.ndarray:
        check_is_fitted(self, "splits_")
        columns, n = self._columns(X, reset=False, check_names=check_names)
        out = np.empty((n, len(columns)), dtype=np.float64)
        for j, col in enumerate(columns):
            if self.column_kinds_[j] in ("binary", "numeric"):
                out[:, j] = self._numeric(j, col)
                continue
            codes = self._codes[j]
            labels = self._labels(j, col)
            for i, v in enumerate(labels.tolist()):
                c = codes.get(v)
                if c is None:
                    seen = [_format_label(s) for s in self.categories_[j][:20]]
                    more = ", ..." if len(self.categories_[j]) > 20 else ""
                    raise ValueError(
                        f"{self._where(j)} has the category {v!r} at row {i}, which was not seen when the "
                        f"Binarizer was fitted (seen: {', '.join(seen)}{more}); unseen categories are "
                        f"not supported"
                    )
                out[i, j] = c
        return out

    def encode(self, X: Any) -> np.ndarray:
        """The raw columns as numbers: categories become their integer codes.

        This is the matrix that the raw splits of ``splits_`` (and the trees
        ``MAPTreeClassifier`` builds from them) are written for: numeric and
        0/1 columns as they are (booleans as 0/1), categorical and ordered
        columns as the position of the value in ``categories_[j]``.

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

    def _binarize_encoded(self, E: np.ndarray) -> np.ndarray:
        out = np.empty((E.shape[0], len(self.splits_)), dtype=np.uint8)
        for k, s in enumerate(self.splits_):
            x = E[:, s.column]
            if s.kind == BINARY:
                out[:, k] = x > 0.5
            elif s.kind == THRESHOLD:
                out[:, k] = x <= s.threshold
            else:
                out[:, k] = np.isin(x, s.categories)
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
        return self._binarize_encoded(self._encode(X))

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
        encoded matrix (:meth:`encode`): a sample goes left when ``x <=
        threshold`` (``THRESHOLD``), ``x == 0`` (``BINARY``) or its category
        code is in ``categories`` (``CATEGORY``).  Category codes are shown as
        their labels, thresholds exactly.

        Parameters
        ----------
        column : int
            Raw column.
        kind : int
            ``BINARY``, ``THRESHOLD`` or ``CATEGORY`` (from :mod:`arboretum.tree`).
        threshold : float, default=nan
            The threshold of a ``THRESHOLD`` split.
        categories : sequence of float, default=()
            The codes sent left by a ``CATEGORY`` split.
        feature_names : sequence of str, optional
            Names of the raw columns; default ``feature_names_in_`` or ``x0, x1, ...``.

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
        name = self._label(column, None if feature_names is None else [str(f) for f in feature_names])
        cats = self.categories_[column]
        if kind == BINARY:
            return f"{name} = 0", f"{name} = 1"
        if kind == THRESHOLD:
            if cats is not None:  # ordered categorical: threshold i + 0.5 on the codes
                i = min(max(int(math.floor(threshold)), 0), len(cats) - 1)
                label = _format_label(cats[i])
                return f"{name} <= {label}", f"{name} >  {label}"
            t = _format_number(threshold)
            return f"{name} <= {t}", f"{name} >  {t}"
        if kind == CATEGORY:
            if cats is None:
                raise ValueError(f"column {column} is not categorical; a CATEGORY split needs one")
            labels = [_format_label(cats[int(c)]) for c in categories]
            if len(labels) == 1:
                return f"{name} == {labels[0]}", f"{name} != {labels[0]}"
            text = "{" + ", ".join(labels) + "}"
            return f"{name} in {text}", f"{name} not in {text}"
        allowed = ", ".join(f"{name} ({code})" for code, name in _KIND_NAMES.items())
        raise ValueError(f"kind must be one of {allowed}; got {kind!r}")

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
                out.append(self._label(s.column, names))
            else:
                out.append(self.condition_text(s.column, s.kind, s.threshold, s.categories, names)[0])
        return np.asarray(out, dtype=object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = []
        return tags
