"""Input validation shared by every arboretum estimator.

Every check raises :class:`ValueError` (bad values) or :class:`TypeError`
(bad types) with a message that names the offending parameter, the allowed
values and what was received, e.g. ``"alpha must be a number in (0, 1]; got 1.5"``.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
from sklearn.utils import check_array
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import column_or_1d

__all__ = [
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
            f"{value!r} (row {row}). Binarise the features first, e.g. with "
            f"sklearn.preprocessing.OneHotEncoder or KBinsDiscretizer."
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
