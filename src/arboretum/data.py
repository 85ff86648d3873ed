"""The one validation path of arboretum: parameters, feature matrices, targets, weights.

Parameters
    Every estimator declares its parameters once, in a class attribute
    ``_parameter_constraints`` (a dict from parameter name to a list of
    accepted forms, in the style of scikit-learn), and ``fit`` calls
    :func:`validate_params` before it reads any data.  A value that fits no
    form raises :class:`~arboretum.exceptions.InvalidParameterError` naming the
    parameter, what it accepts and what it got::

        alpha must be a number in (0, 1]; got 1.5

    The forms are :class:`Interval`, :class:`Options`, :class:`InstanceOf`,
    :class:`Check`, ``None``, ``"boolean"`` and ``"random_state"``.

Feature matrices
    :func:`read_columns` reads ``X`` (a NumPy array, a list of rows or a
    pandas DataFrame with columns of any mix of dtypes) column by column,
    records ``n_features_in_`` / ``feature_names_in_`` on the estimator (or
    checks them at predict time, as scikit-learn does) and returns the raw
    columns; :func:`column_kind`, :func:`numeric_values` and
    :func:`label_values` read one column as numbers or category labels with
    errors that name the column, the row and the value.  The
    :class:`~arboretum.binarizer.Binarizer` and :class:`~arboretum.tree.Tree`
    use them, so every model reads raw data the same way.

Targets and weights
    :func:`check_classification_targets_encoded`,
    :func:`check_regression_targets` and :func:`check_integer_weights`.
"""

from __future__ import annotations

import math
import numbers
import re
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator
from sklearn.utils import check_array
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import column_or_1d, validate_data

from .exceptions import InvalidParameterError

__all__ = [
    "Binarizer",
    "BinarySplit",
    "Check",
    "InstanceOf",
    "Interval",
    "Options",
    "check_binary_features",
    "check_classification_targets_encoded",
    "check_int",
    "check_integer_weights",
    "check_numeric_features",
    "check_positive_number",
    "check_regression_targets",
    "all_binary",
    "column_kind",
    "encode_columns",
    "label_values",
    "numeric_values",
    "read_columns",
    "parse_number",
    "text_as_numbers",
    "validate_params",
    "warn_many_labels",
]


# ---------------------------------------------------------------------------
# Parameter constraints
# ---------------------------------------------------------------------------


def _is_real(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))


def _is_int(v: Any) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_))


def _fmt_bound(x: float) -> str:
    return "inf" if x == math.inf else f"{x:g}"


class Interval:
    """Real numbers (``numbers.Real``) or integers (``numbers.Integral``) in an interval.

    Booleans are never accepted; for ``numbers.Integral`` a float (even
    ``3.0``) is refused.  NaN is never inside.

    Parameters
    ----------
    kind : {numbers.Real, numbers.Integral}
    left, right : float or None
        Bounds; None for unbounded.
    closed : {"both", "left", "right", "neither"}, default="both"
        Which bounds belong to the interval.
    finite : bool, default=True
        Refuse infinities even without a bound (``float("inf")`` for a time
        limit means nothing).

    Examples
    --------
    >>> Interval(numbers.Real, 0, 1, closed="right").describe()
    'a number in (0, 1]'
    >>> Interval(numbers.Integral, 1, None).describe()
    'an integer >= 1'
    """

    def __init__(
        self,
        kind: type,
        left: float | None,
        right: float | None,
        *,
        closed: str = "both",
        finite: bool = True,
    ) -> None:
        if kind not in (numbers.Real, numbers.Integral):
            raise ValueError(f"kind must be numbers.Real or numbers.Integral; got {kind!r}")
        if closed not in ("both", "left", "right", "neither"):
            raise ValueError(f"closed must be 'both', 'left', 'right' or 'neither'; got {closed!r}")
        self.kind, self.left, self.right, self.closed, self.finite = kind, left, right, closed, finite

    def type_ok(self, v: Any) -> bool:
        """Whether ``v`` has the right type (whatever its value)."""
        return _is_int(v) if self.kind is numbers.Integral else _is_real(v)

    def accepts(self, v: Any) -> bool:
        """Whether ``v`` is inside the interval."""
        if not self.type_ok(v):
            return False
        x = float(v)
        if math.isnan(x) or (self.finite and math.isinf(x)):
            return False
        left_in = self.closed in ("both", "left")
        right_in = self.closed in ("both", "right")
        if self.left is not None and (x < self.left or (x == self.left and not left_in)):
            return False
        if self.right is not None and (x > self.right or (x == self.right and not right_in)):
            return False
        return True

    def describe(self) -> str:
        """The interval in words: ``"a number in (0, 1]"``, ``"an integer >= 1"``."""
        what = "an integer" if self.kind is numbers.Integral else "a number"
        lo, hi = self.left, self.right
        if self.kind is numbers.Integral:
            if lo is not None and hi is not None:
                return f"{what} in [{_fmt_bound(lo)}, {_fmt_bound(hi)}]"
            if lo is not None:
                return f"{what} >= {_fmt_bound(lo)}" if self.closed in ("both", "left") else f"{what} > {lo:g}"
            if hi is not None:
                return f"{what} <= {_fmt_bound(hi)}" if self.closed in ("both", "right") else f"{what} < {hi:g}"
            return what
        if lo is None and hi is None:
            return "a finite number" if self.finite else what
        left = ("[" if self.closed in ("both", "left") else "(") + ("-inf" if lo is None else _fmt_bound(lo))
        right = ("inf" if hi is None else _fmt_bound(hi)) + ("]" if self.closed in ("both", "right") and hi is not None else ")")
        return f"{what} in {left}, {right}"


class Options:
    """One of a set of strings (or other hashable values).

    Examples
    --------
    >>> Options(["quantile", "all"]).describe()
    "one of ['quantile', 'all']"
    """

    def __init__(self, values: Sequence[Any]) -> None:
        self.values = tuple(values)

    def type_ok(self, v: Any) -> bool:
        return any(type(v) is type(o) for o in self.values)

    def accepts(self, v: Any) -> bool:
        return self.type_ok(v) and v in self.values

    def describe(self) -> str:
        return f"one of {list(self.values)}"


class InstanceOf:
    """An instance of a class (``description`` names it in messages)."""

    def __init__(self, cls: type | tuple[type, ...], description: str) -> None:
        self.cls, self.description = cls, description

    def type_ok(self, v: Any) -> bool:
        return isinstance(v, self.cls)

    def accepts(self, v: Any) -> bool:
        return isinstance(v, self.cls)

    def describe(self) -> str:
        return self.description


class Check:
    """Any value that ``predicate`` accepts (for forms the other constraints cannot state).

    Parameters
    ----------
    predicate : callable
        ``predicate(value) -> bool``; an exception counts as False.
    description : str
        What it accepts, in words (e.g. ``"a positive number or a sequence of
        positive numbers, one per class"``).
    """

    def __init__(self, predicate: Callable[[Any], bool], description: str) -> None:
        self.predicate, self.description = predicate, description

    def type_ok(self, v: Any) -> bool:
        return self.accepts(v)

    def accepts(self, v: Any) -> bool:
        try:
            return bool(self.predicate(v))
        except Exception:  # noqa: BLE001 - a predicate that fails does not accept
            return False

    def describe(self) -> str:
        return self.description


class _NoneConstraint:
    def type_ok(self, v: Any) -> bool:
        return v is None

    accepts = type_ok

    def describe(self) -> str:
        return "None"


class _Boolean:
    def type_ok(self, v: Any) -> bool:
        return isinstance(v, (bool, np.bool_))

    accepts = type_ok

    def describe(self) -> str:
        return "a boolean"


class _RandomState:
    def type_ok(self, v: Any) -> bool:
        return v is None or _is_int(v) or isinstance(v, np.random.RandomState)

    def accepts(self, v: Any) -> bool:
        return self.type_ok(v) and not (_is_int(v) and not 0 <= int(v) < 2**32)

    def describe(self) -> str:
        return "an integer in [0, 2**32 - 1], a numpy RandomState or None"


def _constraint(c: Any) -> Any:
    if c is None:
        return _NoneConstraint()
    if c == "boolean":
        return _Boolean()
    if c == "random_state":
        return _RandomState()
    return c


def _describe_all(constraints: list[Any]) -> str:
    texts = [c.describe() for c in constraints]
    # "None" last reads best: "a number in (0, inf) or None"
    texts.sort(key=lambda t: t == "None")
    if len(texts) == 1:
        return texts[0]
    return ", ".join(texts[:-1]) + " or " + texts[-1]


def check_param(value: Any, name: str, constraints: list[Any]) -> Any:
    """Check one parameter value against its list of accepted forms.

    Parameters
    ----------
    value : object
    name : str
        The parameter's name, for the message.
    constraints : list
        Accepted forms (see the module docstring); the value must satisfy at
        least one.

    Returns
    -------
    value : object
        ``value`` unchanged.

    Raises
    ------
    InvalidParameterError
        Naming the parameter, every accepted form and the value (with its type
        when no form accepts that type), e.g.
        ``"time_limit must be a number in (0, inf) or None; got -1"``.
    """
    cs = [_constraint(c) for c in constraints]
    for c in cs:  # (a loop, not any(...): this runs for every parameter of every fit)
        if c.accepts(value):
            return value
    got = repr(value)
    if not any(c.type_ok(value) for c in cs):
        got += f" ({type(value).__name__})"
    raise InvalidParameterError(f"{name} must be {_describe_all(cs)}; got {got}")


#: The parameter names of each estimator class (scikit-learn reads them off the signature of
#: ``__init__`` at every ``get_params`` call, a tenth of a millisecond: once per class is enough).
_PARAM_NAMES: "weakref.WeakKeyDictionary[type, list[str]]" = weakref.WeakKeyDictionary()


def _shallow_params(estimator: Any) -> dict:
    """``estimator.get_params(deep=False)``, with the class's parameter names looked up once."""
    cls = type(estimator)
    if getattr(cls, "get_params", None) is not BaseEstimator.get_params:
        return estimator.get_params(deep=False)
    names = _PARAM_NAMES.get(cls)
    if names is None:
        names = _PARAM_NAMES[cls] = list(cls._get_param_names())
    return {name: getattr(estimator, name) for name in names}


def validate_params(estimator: Any) -> None:
    """Check every parameter of ``estimator`` against its class's ``_parameter_constraints``.

    Called first in every ``fit``, before the data is read.  Parameters
    missing from the table are not checked (there should be none: the
    contract test checks that the table covers ``get_params``).

    Raises
    ------
    InvalidParameterError
        For the first parameter (in the table's order) that is not allowed.
    """
    table = getattr(type(estimator), "_parameter_constraints", {})
    params = _shallow_params(estimator)
    for name, constraints in table.items():
        if name in params:
            check_param(params[name], name, constraints)


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
    """Check that ``value`` is a real number in ``(0, upper]`` (or a variant); return it as float.

    A shortcut of :func:`check_param` with an :class:`Interval` for method
    arguments (which are not in a parameter table).

    Raises
    ------
    InvalidParameterError
        E.g. ``"alpha must be a number in (0, 1]; got 1.5"``.
    """
    closed = ("both" if upper_inclusive else "left") if not strictly else ("right" if upper_inclusive else "neither")
    if upper is None:
        closed = "left" if not strictly else "neither"
    forms: list[Any] = [Interval(numbers.Real, 0, upper, closed=closed, finite=not allow_inf)]
    if allow_none:
        forms.append(None)
    check_param(value, name, forms)
    return None if value is None else float(value)


def check_int(
    value: Any,
    name: str,
    minimum: int | None = None,
    maximum: int | None = None,
    allow_none: bool = False,
) -> int | None:
    """Check that ``value`` is an integer in ``[minimum, maximum]``; return it as int.

    Raises
    ------
    InvalidParameterError
        E.g. ``"max_depth must be an integer >= 1; got 2.5 (float)"``.
    """
    forms: list[Any] = [Interval(numbers.Integral, minimum, maximum)]
    if allow_none:
        forms.append(None)
    check_param(value, name, forms)
    return None if value is None else int(value)


# ---------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------


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


#: Text that reads as a number: an optional sign, decimal digits with an optional point and
#: exponent, or inf / infinity / nan in any case; spaces around it are ignored.  The one rule of
#: arboretum for numbers stored as text (Python and the command line alike).
_NUMBER_TEXT = re.compile(
    r"\s*[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf(?:inity)?|nan)\s*", re.IGNORECASE
)


def parse_number(v: Any) -> float | None:
    """The number a value stands for, or None.

    Numbers and booleans stand for themselves (``True`` is 1); text (``str``
    or ``bytes``) when it is a decimal number (``"3"``, ``" -1.5e3 "``,
    ``".5"``) or ``inf``, ``infinity``, ``nan`` in any case.  Python's looser
    forms (``"1_000"``, non-ASCII digits) are text, not numbers.  A missing
    value (None, NaN, ``pd.NA``) gives NaN.

    Examples
    --------
    >>> parse_number(" 5.10 "), parse_number("1e-3"), parse_number(True)
    (5.1, 0.001, 1.0)
    >>> parse_number("5 cm") is None, parse_number("1_000") is None
    (True, True)
    """
    if isinstance(v, bytes):
        try:
            v = v.decode("ascii")
        except UnicodeDecodeError:
            return None
    if isinstance(v, str):
        return float(v) if _NUMBER_TEXT.fullmatch(v) else None
    if _is_missing(v):
        return math.nan
    if _is_number(v):
        return float(v)
    return None


def text_as_numbers(values: Any) -> np.ndarray | None:
    """A column as float64 when every value is a number, a boolean or numeric text; else None.

    This is how arboretum reads numbers stored as text (:func:`parse_number`):
    a column (object, pandas string, or a NumPy ``str`` array) whose every
    value parses as a number is numeric, one with a value that does not is
    categorical.  Missing values become NaN (the callers refuse them).

    Parameters
    ----------
    values : 1-D array-like

    Returns
    -------
    ndarray of float64, or None
    """
    values = np.asarray(values)
    if values.dtype.kind in "US":  # parse each distinct text once
        distinct, inverse = np.unique(values, return_inverse=True)
        parsed = [parse_number(v) for v in distinct.tolist()]
        if any(x is None for x in parsed):
            return None
        return np.asarray(parsed, dtype=np.float64)[inverse.reshape(-1)]
    if values.dtype.kind in "biuf":
        return values.astype(np.float64)
    out = np.empty(values.shape[0], dtype=np.float64)
    seen: dict = {}
    for i, v in enumerate(values.tolist()):
        if isinstance(v, (str, bytes)):
            x = seen.get(v)
            if x is None:
                x = parse_number(v)
                if x is None:
                    return None
                seen[v] = x
        else:
            x = parse_number(v)
            if x is None:
                return None
        out[i] = x
    return out


def format_number(x: float) -> str:
    """Shortest text that reads back as ``x`` (``3`` rather than ``3.0``, ``47.5``)."""
    x = float(x)
    if math.isfinite(x) and x == math.floor(x) and abs(x) < 1e16:
        return str(int(x))
    return repr(x)


def format_label(v: Any) -> str:
    """Readable text of a category label (``red``, ``3``, ``True``)."""
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, numbers.Integral):
        return str(int(v))
    if isinstance(v, numbers.Real):
        return format_number(v)
    if isinstance(v, bytes):
        return v.decode(errors="replace")
    return str(v)


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


# ---------------------------------------------------------------------------
# Feature matrices, column by column
# ---------------------------------------------------------------------------


def _where(j: int, names: Sequence[str] | None) -> str:
    if names is not None:
        return f"column {str(names[j])!r} of X"
    return f"column {j} of X"


def _missing_error(j: int, row: int, value: Any, names: Sequence[str] | None) -> ValueError:
    what = "NaN" if isinstance(value, (float, np.floating)) else repr(value)
    return ValueError(
        f"{_where(j, names)} has a missing value ({what}) at row {row}: arboretum does not "
        f"support missing values (NaN, None); impute them first, e.g. with "
        f"sklearn.impute.SimpleImputer, or drop those rows"
    )


def _bad_value_error(j: int, row: int, value: Any, names: Sequence[str] | None) -> TypeError:
    return TypeError(
        f"{_where(j, names)} holds {value!r} ({type(value).__name__}) at row {row}; every value "
        f"must be a number, a boolean or a category label: the argument must be a string or a number"
    )


def read_columns(
    X: Any, estimator: Any = None, *, reset: bool = False, check_names: bool = True
) -> tuple[list[Any], int, list[str] | None]:
    """Validate the shape of ``X`` and return its columns, one per feature.

    Parameters
    ----------
    X : array-like or pandas DataFrame of shape (n_samples, n_features)
        Any mix of numbers, booleans, strings and categories (DataFrame
        columns keep their own dtypes).  Sparse matrices are refused.
    estimator : estimator, optional
        With ``reset=True`` its ``n_features_in_`` and ``feature_names_in_``
        are set from ``X``; with ``reset=False`` they are checked as
        scikit-learn does (a different number of columns is an error; a
        DataFrame whose column names differ from ``feature_names_in_`` is an
        error, a switch between a DataFrame and an array a warning).
    reset : bool, default=False
    check_names : bool, default=True
        Whether to check feature names at all (skip for internal re-reads).

    Returns
    -------
    columns : list
        ``X``'s columns: pandas Series for a DataFrame, 1-D arrays otherwise.
    n_samples : int
    names : list of str or None
        Column names of a DataFrame (as strings), else None.

    Raises
    ------
    TypeError
        For a sparse matrix.
    ValueError
        For a 1-D or 3-D array, no rows or no columns, or feature counts or
        names that do not match the fitted ones.
    """
    who = type(estimator).__name__ if estimator is not None else "arboretum"
    if sparse.issparse(X):
        raise TypeError(
            f"{who} does not accept sparse input (got a {type(X).__name__}); use X.toarray() to convert "
            f"it to a dense array"
        )
    if _is_dataframe(X):
        n, d = X.shape
        for count, what in ((d, "feature"), (n, "sample")):
            if count == 0:
                raise ValueError(
                    f"Found array with 0 {what}(s) (shape={X.shape}) while a minimum of 1 is required by {who}."
                )
        if estimator is not None and (reset or check_names):
            validate_data(estimator, X, reset=reset, skip_check_array=True)
        return [X.iloc[:, j] for j in range(d)], n, [str(c) for c in X.columns]
    if isinstance(X, (list, tuple)) and np.asarray(X, dtype=object).dtype.kind == "O":
        try:
            arr = np.asarray(X)
        except ValueError:
            arr = np.asarray(X, dtype=object)
        if arr.dtype.kind in "USO":
            X = np.asarray(X, dtype=object)  # keep numbers as numbers in lists mixing them with strings
    # a plain 2-D numeric array with rows and columns: check_array would return it as it is
    plain = type(X) is np.ndarray and X.ndim == 2 and X.dtype.kind in "biuf" and X.size > 0
    if not plain:
        X = check_array(
            X, accept_sparse=False, dtype=None, ensure_all_finite=False, ensure_2d=True,
            input_name="X", estimator=estimator,
        )
    if estimator is not None and plain and reset:
        # what validate_data(reset=True) does for an array without feature names, without its
        # dataframe-library probes (a tenth of a millisecond per fit)
        estimator.n_features_in_ = X.shape[1]
        if hasattr(estimator, "feature_names_in_"):
            delattr(estimator, "feature_names_in_")
    elif estimator is not None and (reset or check_names):
        validate_data(estimator, X, reset=reset, skip_check_array=True)
    return [X[:, j] for j in range(X.shape[1])], X.shape[0], None


def column_kind(
    col: Any, j: int, names: Sequence[str] | None = None, *, forced: bool = False, ordered: bool = True
) -> tuple[str, list | None]:
    """The kind of a raw column: ``"binary"``, ``"numeric"``, ``"categorical"`` or ``"ordered"``.

    Parameters
    ----------
    col : pandas Series or 1-D ndarray
    j : int
        Column index (for messages).
    names : list of str, optional
        Column names (for messages).
    forced : bool, default=False
        Read the column as categorical whatever its dtype.
    ordered : bool, default=True
        Whether a pandas *ordered* categorical is ``"ordered"`` (else
        ``"categorical"``).

    Returns
    -------
    kind : str
        Booleans are ``"binary"``; numbers ``"numeric"`` (a 0/1 numeric
        column is turned into ``"binary"`` by the Binarizer); strings,
        objects holding a string and pandas categoricals ``"categorical"``
        (``"ordered"`` for ordered ones).
    declared : list or None
        The declared categories of a pandas categorical.
    """
    if hasattr(col, "to_numpy"):  # pandas Series
        import pandas as pd

        dt = col.dtype
        if isinstance(dt, pd.CategoricalDtype):
            return ("ordered" if dt.ordered and ordered else "categorical"), list(dt.categories)
        if pd.api.types.is_complex_dtype(dt):
            raise ValueError(f"Complex data not supported: {_where(j, names)} has dtype {dt}")
        if forced:
            return "categorical", None
        if pd.api.types.is_bool_dtype(dt):
            return "binary", None
        if pd.api.types.is_numeric_dtype(dt) and not pd.api.types.is_complex_dtype(dt):
            return "numeric", None
        if pd.api.types.is_object_dtype(dt) or pd.api.types.is_string_dtype(dt):
            return _object_kind(col.to_numpy(dtype=object), j, names), None
        raise TypeError(
            f"{_where(j, names)} has dtype {dt}, which arboretum does not support; allowed: "
            f"numbers, booleans, strings/objects and categories"
        )
    if col.dtype.kind == "c":
        raise ValueError(f"Complex data not supported: {_where(j, names)} has dtype {col.dtype}")
    if forced:
        return "categorical", None
    kind = col.dtype.kind
    if kind == "b":
        return "binary", None
    if kind in "iuf":
        return "numeric", None
    if kind in "US":
        return ("numeric" if text_as_numbers(col) is not None else "categorical"), None
    if kind == "O":
        return _object_kind(col, j, names), None
    raise TypeError(
        f"{_where(j, names)} has dtype {col.dtype}, which arboretum does not support; allowed: "
        f"numbers, booleans, strings/objects and categories"
    )


def _object_kind(values: np.ndarray, j: int, names: Sequence[str] | None) -> str:
    """An object column is numeric when it holds only numbers, booleans and numeric text
    (:func:`parse_number`), binary when it holds only booleans, categorical when it holds
    other text."""
    types = _checked_value_types(values, j, names)
    has_text = any(issubclass(t, (str, bytes)) for t in types)
    all_bool = all(issubclass(t, (bool, np.bool_, str, bytes)) for t in types)
    if has_text:
        return "numeric" if text_as_numbers(values) is not None else "categorical"
    return "binary" if all_bool else "numeric"


def numeric_values(
    col: Any, j: int, names: Sequence[str] | None = None, *, allow_nan: bool = False, allow_inf: bool = False
) -> np.ndarray:
    """Column ``j`` as float64 values (booleans as 0/1, numeric text parsed); errors name the column and the row.

    Text is read by :func:`parse_number`, so a column of numbers stored as
    text (``"5.1"``) gives the same values as the numbers themselves.

    Parameters
    ----------
    col : pandas Series or 1-D ndarray
    j : int
    names : list of str, optional
    allow_nan : bool, default=False
        Keep NaN (a missing value, also None and ``pd.NA``) instead of raising.
    allow_inf : bool, default=False
        Keep infinities instead of raising.

    Raises
    ------
    ValueError
        On a missing value (unless ``allow_nan``), infinity, or text that
        is not a number.
    TypeError
        On a value that is neither a number, a boolean nor text.
    """
    values = None
    if hasattr(col, "dtype") and hasattr(col, "to_numpy"):  # pandas Series
        import pandas as pd

        dt = col.dtype
        if (pd.api.types.is_bool_dtype(dt) or pd.api.types.is_numeric_dtype(dt)) and not (
            pd.api.types.is_complex_dtype(dt) or isinstance(dt, pd.CategoricalDtype)
        ):
            missing = np.asarray(col.isna())
            if missing.any() and not allow_nan:  # name pd.NA of a nullable column as it is
                i = int(np.flatnonzero(missing)[0])
                raise _missing_error(j, i, col.iloc[i], names)
            values = col.to_numpy(dtype=np.float64, na_value=np.nan)
        else:
            col = col.to_numpy(dtype=object)
    elif col.dtype.kind in "biuf":
        values = col.astype(np.float64)
    if values is None:
        col = np.asarray(col, dtype=object)  # Python values (str, not np.str_) for the messages
        values = text_as_numbers(col)
    if values is None:  # a value that is neither a number, a boolean, numeric text nor missing
        for i, v in enumerate(col):
            if _is_missing(v) or parse_number(v) is not None:
                continue
            if isinstance(v, (str, bytes)):
                raise ValueError(
                    f"{_where(j, names)} holds the string {v!r} at row {i}, but it is a numeric column"
                )
            raise _bad_value_error(j, i, v, names)
    if not allow_nan and np.isnan(values).any():
        i = int(np.flatnonzero(np.isnan(values))[0])
        raise _missing_error(j, i, col[i], names)
    bad = ~np.isfinite(values)
    if bad.any():
        if allow_nan:
            bad &= ~np.isnan(values)
        if allow_inf:
            bad &= ~np.isinf(values)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            if np.isnan(values[i]):
                raise _missing_error(j, i, values[i], names)
            raise ValueError(
                f"{_where(j, names)} contains infinity ({values[i]}) at row {i}: arboretum needs finite numbers"
            )
    return values


def label_values(col: Any, j: int, names: Sequence[str] | None = None) -> np.ndarray:
    """Column ``j`` as an object array of category labels (no missing values).

    Raises
    ------
    ValueError
        On a missing value (NaN, None, ``pd.NA``).
    TypeError
        On a value that is neither a number, a boolean nor a string.
    """
    if hasattr(col, "to_numpy"):
        col = col.to_numpy(dtype=object)
    col = np.asarray(col, dtype=object)
    _checked_value_types(col, j, names)
    return col


def _checked_value_types(values: np.ndarray, j: int, names: Sequence[str] | None) -> set:
    """The types of the values of an object column, after checking that none is missing and that
    each is a number, a boolean or text (else the error names the first offending row).

    Vectorised over the distinct types, not the rows: only a float type can hold a missing value
    (NaN), checked by one ``pandas.isna`` pass; the row-by-row scan runs only to name the row of
    a value that is refused.
    """
    types = set(map(type, values))
    floats = any(issubclass(t, (float, np.floating)) for t in types)
    accepted = all(
        issubclass(t, (str, bytes)) or (issubclass(t, (numbers.Real, np.bool_)) and t.__name__ != "NaTType")
        for t in types
    )
    if accepted and floats:
        import pandas as pd

        accepted = not pd.isna(values).any()
    if not accepted:
        for i, v in enumerate(values):
            if _is_missing(v):
                raise _missing_error(j, i, v, names)
            if not (_is_number(v) or isinstance(v, (str, bytes))):
                raise _bad_value_error(j, i, v, names)
    return types


#: A one-hot encoded column with more distinct labels than this, and fewer than
#: :data:`ROWS_PER_LABEL` rows per label on average, draws an :class:`~arboretum.exceptions.InputWarning`.
MANY_LABELS = 32
ROWS_PER_LABEL = 5


def warn_many_labels(n_labels: int, n_samples: int, j: int, names: Sequence[str] | None = None) -> None:
    """Warn when a categorical column is about to be one-hot encoded into very many questions.

    A column with more than :data:`MANY_LABELS` distinct labels and fewer than
    :data:`ROWS_PER_LABEL` rows per label is most often an identifier, free
    text, or numbers in a form that :func:`parse_number` does not read
    (``"5,1"``, ``"12 kg"``).  One-hot encoding gives one question per label,
    most of them about a handful of rows, and the searches slow down with the
    number of questions.  It is a warning, not an error: whether a column is
    too varied depends on the number of rows, so an error would fail some
    folds of a cross-validation and not others.

    Raises
    ------
    InputWarning
        As a warning, naming the column, the counts and what to do.
    """
    if n_labels <= MANY_LABELS or n_labels * ROWS_PER_LABEL <= n_samples:
        return
    from .exceptions import InputWarning, warn_user

    warn_user(
        f"{_where(j, names)} has {n_labels} distinct labels in {n_samples} rows and is one-hot encoded "
        f"into {n_labels} questions (one per label), which slows the search and rarely generalises. "
        f"Convert numbers written in a form that does not read as a number ('5,1', '12 kg') to "
        f"numbers; drop an identifier or free text; pass labels that have an order as an ordered "
        f"pandas Categorical (thresholds over the order). Silence this with "
        f"warnings.filterwarnings('ignore', category=arboretum.InputWarning).",
        InputWarning,
    )


def sorted_labels(labels: list) -> list:
    """Category labels in sorted order; labels of types that do not compare (``str`` and ``int``)
    by type name, then text."""
    try:
        return sorted(labels)
    except TypeError:
        return sorted(labels, key=lambda v: (type(v).__name__, str(v)))


def label_order(labels: np.ndarray, declared: list | None) -> np.ndarray:
    """The categories of a column in code order, as an object array: the declared categories that
    occur (a pandas categorical's own order), else the observed labels sorted."""
    seen = dict.fromkeys(labels.tolist())
    order = [c for c in declared if c in seen] if declared is not None else sorted_labels(list(seen))
    arr = np.empty(len(order), dtype=object)
    arr[:] = order
    return arr


def raw_columns(X: Any, estimator: Any, *, borrow: bool = False) -> tuple[np.ndarray, list]:
    """``X`` at fit as one float matrix for the models that split raw values (the optimal and
    polytope trees): numbers as they are, categories as the codes of their :func:`label_order`;
    with the category labels of every column (None for numeric ones).  ``borrow``: as
    :func:`encode_columns` (a caller that only reads the matrix gets a C-ordered float64 ``X``
    itself)."""
    columns, _, names = read_columns(X, estimator, reset=True)
    cats: list = []
    for j, col in enumerate(columns):
        kind, declared = column_kind(col, j, names)
        cats.append(None if kind in ("binary", "numeric") else label_order(label_values(col, j, names), declared))
    return encode_columns(columns, cats, names, borrow=borrow), cats


def seeded_rows(n: int, m: int, seed: int = 0) -> np.ndarray:
    """``m`` of the row indices ``0 .. n-1``, drawn without replacement with ``seed``, sorted: the fixed
    subsets that fits on large data work on (the same rows on every fit of the same size)."""
    return np.sort(np.random.default_rng(seed).choice(n, m, replace=False))


def _float_matrix_of(columns: Sequence[Any]) -> np.ndarray | None:
    """A view of the C-ordered float64 matrix whose columns ``columns`` are, in order (the columns
    :func:`read_columns` gives of such an array, or of its rows ``X[a:b]``), or None."""
    if not columns or not all(type(c) is np.ndarray and c.dtype == np.float64 and c.ndim == 1 for c in columns):
        return None
    first = columns[0]
    d, n = len(columns), first.shape[0]
    row = d * first.itemsize
    start = first.__array_interface__["data"][0]
    for j, c in enumerate(columns):
        if c.shape != (n,) or c.strides != (row,) or c.__array_interface__["data"][0] != start + j * c.itemsize:
            return None
    # Column j starts j values after the first and steps a row of d values, so all lie in one buffer
    # (allocations do not interleave): the rows of d values from the first column's start.
    return np.lib.stride_tricks.as_strided(first, shape=(n, d), strides=(row, first.itemsize))


def encode_columns(
    columns: Sequence[Any], feature_categories: Sequence[Any] | None, names: Sequence[str] | None = None,
    *, allow_nan: bool = False, borrow: bool = False,
) -> np.ndarray:
    """Raw columns as one float64 matrix: numbers as they are, category labels as their codes.

    Parameters
    ----------
    columns : list of pandas Series or 1-D arrays
        From :func:`read_columns`.
    feature_categories : list of (array of labels or None), or None
        For every categorical column its labels (a label's code is its
        position); None entries (or None altogether) for numeric columns.
    names : list of str, optional
        Column names for the messages.
    allow_nan : bool, default=False
        Keep NaN and infinities in numeric columns (a
        :class:`~arboretum.tree.Tree` sends NaN right and compares
        infinities as numbers) instead of raising.
    borrow : bool, default=False
        For a caller that only reads the result: when the columns are those
        of one C-ordered float64 array with no category column, return that
        array itself (checked, not copied).  On 500,000 x 20 the copy is
        80 MB of fresh memory, which a virtual machine may take a second to
        provide.

    Raises
    ------
    ValueError
        On a missing value, infinity, a string in a numeric column, or a
        category not in ``feature_categories`` (naming the column, row and value).
    """
    if borrow and (feature_categories is None or all(c is None for c in feature_categories)):
        M = _float_matrix_of(columns)
        # min and max are NaN or infinite iff some value is (and need no temporary array); else the
        # column-by-column path below names the first bad value
        if M is not None and (allow_nan or (np.isfinite(M.min()) and np.isfinite(M.max()))):
            return M
    n = len(columns[0]) if columns else 0
    out = np.empty((n, len(columns)), dtype=np.float64)
    for j, col in enumerate(columns):
        labels = None if feature_categories is None else feature_categories[j]
        if labels is None:
            out[:, j] = numeric_values(col, j, names, allow_nan=allow_nan, allow_inf=allow_nan)
            continue
        codes = {v: float(i) for i, v in enumerate(labels.tolist())}
        for i, v in enumerate(label_values(col, j, names).tolist()):
            c = codes.get(v)
            if c is None:
                seen = [format_label(s) for s in labels[:20]]
                more = ", ..." if len(labels) > 20 else ""
                raise ValueError(
                    f"{_where(j, names)} has the category {v!r} at row {i}, which was not seen in fit "
                    f"(seen: {', '.join(seen)}{more}); unseen categories are not supported"
                )
            out[i, j] = c
    return out


def all_binary(columns: Sequence[Any], names: Sequence[str] | None = None) -> bool:
    """Whether every column holds only 0 and 1 (or booleans), with no categorical column."""
    for j, col in enumerate(columns):
        kind, _ = column_kind(col, j, names)
        if kind == "binary":
            continue
        if kind != "numeric":
            return False
        x = numeric_values(col, j, names, allow_nan=True)
        if not np.all((x == 0) | (x == 1)):
            return False
    return True


def check_binary_features(X: Any, name: str = "X", *, estimator_name: str | None = None) -> np.ndarray:
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
        X, accept_sparse=False, dtype="numeric", ensure_all_finite=False, ensure_2d=True,
        input_name=name, estimator=estimator_name,
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
        who = estimator_name if estimator_name else "This estimator"
        raise ValueError(
            f"{who} requires binary (0/1) features; column {column} of {name} has value "
            f"{value!r} (row {row}). Binarise the features first, e.g. with arboretum.Binarizer, "
            f"or leave binarize='auto'."
        )
    return np.ascontiguousarray(X, dtype=np.uint8)


def check_numeric_features(X: Any, name: str = "X", *, estimator_name: str | None = None) -> np.ndarray:
    """Validate a dense, finite, 2-D numeric feature matrix (float64).

    Raises
    ------
    TypeError
        If ``X`` is sparse or not numeric.
    ValueError
        If ``X`` is not 2-D, is empty, or contains NaN or infinity.
    """
    X = check_array(
        X, accept_sparse=False, dtype=np.float64, ensure_all_finite=False, ensure_2d=True,
        input_name=name, estimator=estimator_name,
    )
    _raise_if_not_finite(X, name)
    return X


# ---------------------------------------------------------------------------
# Targets and weights
# ---------------------------------------------------------------------------


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
    estimator_name : str, optional

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
    if _is_dataframe(y) or hasattr(y, "to_numpy"):
        y = y.to_numpy()
    if not (type(y) is np.ndarray and y.ndim == 1 and y.dtype.kind in "biufUS"):
        y = column_or_1d(y, warn=True)  # (a plain 1-D array of these kinds passes it unchanged)
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
            if _is_missing(v) or (isinstance(v, numbers.Real) and not math.isfinite(v)):
                raise ValueError(f"{name} contains a missing value, NaN or infinity (first at index {i}: {v!r})")
    if not _plain_class_labels(y):
        check_classification_targets(y)  # scikit-learn's own errors for continuous or unknown targets
    try:
        classes, y_encoded = np.unique(y, return_inverse=True)
    except TypeError as exc:
        raise TypeError(f"{name} mixes labels of types that cannot be sorted together: {exc}") from None
    if classes.shape[0] < min_classes:
        n_found = classes.shape[0]
        who = estimator_name if estimator_name else "This estimator"
        raise ValueError(
            f"{who} needs samples of at least {min_classes} classes; got {n_found} "
            f"class{'es' if n_found != 1 else ''}: {classes.tolist()}"
        )
    return y_encoded.astype(np.int64, copy=False).reshape(-1), classes


def _plain_class_labels(y: np.ndarray) -> bool:
    """Whether 1-D finite ``y`` is one that scikit-learn's ``type_of_target`` reads as "binary" or
    "multiclass" without looking further: booleans, integers, text, or integer-valued floats (its
    own test for "continuous").  Everything else goes through ``check_classification_targets``,
    which costs a few hundred microseconds (array-API dispatch), too much for every ``fit``."""
    kind = y.dtype.kind
    if kind in "biuUS":
        return True
    return kind == "f" and not np.any(y != y.astype(int))


def check_regression_targets(
    y: Any, *, n_samples: int | None = None, estimator_name: str | None = None
) -> np.ndarray:
    """Real, finite, 1-D regression targets as float64 (a clear error for text or missing values).

    Raises
    ------
    ValueError
        For text, NaN or infinity (naming the index), a wrong length, or
        an empty ``y``.
    """
    who = estimator_name if estimator_name else "This estimator"
    if y is None:
        raise ValueError(f"{who} requires y to be passed, but the target y is None")
    if hasattr(y, "to_numpy"):
        y = y.to_numpy()
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = column_or_1d(y, warn=True)  # with scikit-learn's DataConversionWarning
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D (one target per sample); got shape {y.shape}")
    if y.dtype.kind == "c":
        raise ValueError(f"Complex data not supported: y has dtype {y.dtype}")
    if y.shape[0] == 0:
        raise ValueError(f"y is empty: {who} needs at least one sample")
    if n_samples is not None and y.shape[0] != n_samples:
        raise ValueError(
            f"X and y have inconsistent numbers of samples: X has {n_samples}, y has {y.shape[0]}"
        )
    if y.dtype.kind not in "biuf":
        try:
            y = np.array([math.nan if _is_missing(v) else v for v in y.tolist()], dtype=np.float64)
        except (TypeError, ValueError):
            example = next((v for v in y.ravel().tolist() if not _is_number(v)), y.ravel()[0])
            raise ValueError(
                f"{who} needs real-valued targets y; got dtype {y.dtype} with the value {example!r}. "
                f"For class labels use a classifier."
            ) from None
    y = y.astype(np.float64)
    bad = np.flatnonzero(~np.isfinite(y))
    if bad.size:
        raise ValueError(f"y contains NaN or infinity (first at index {int(bad[0])}: {y[bad[0]]})")
    return y


#: Largest total weight: the searches tabulate log-gamma values up to it.
MAX_TOTAL_WEIGHT = 10**8


def check_integer_weights(sample_weight: Any, n_samples: int, *, max_total: int = MAX_TOTAL_WEIGHT) -> np.ndarray:
    """Validate ``sample_weight``: finite, non-negative integers, not all zero.

    A weight ``w`` means ``w`` copies of the sample in the Bayesian CART
    posterior, so fractional weights are refused.

    Returns
    -------
    weights : ndarray of int64, shape (n_samples,)

    Raises
    ------
    ValueError
        Naming the first bad weight and its index.
    """
    try:
        w = np.asarray(sample_weight, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"sample_weight must be numbers; got {sample_weight!r}") from None
    if w.ndim != 1 or w.shape[0] != n_samples:
        raise ValueError(f"sample_weight must have shape ({n_samples},); got {w.shape}")
    bad = np.flatnonzero(~np.isfinite(w) | (w < 0) | (w != np.round(w)))
    if bad.size:
        i = int(bad[0])
        raise ValueError(
            f"sample_weight must hold non-negative integers (a weight w means w copies of the "
            f"sample in the Beta/Dirichlet leaf likelihood); got {w[i]!r} at index {i}"
        )
    if w.sum() <= 0:
        raise ValueError("sample_weight is zero for every sample")
    if w.sum() > max_total:
        raise ValueError(f"the weights sum to {w.sum():.0f}; at most {max_total} is supported")
    return w.astype(np.int64)


def __getattr__(name: str) -> Any:
    # The discretiser lives in arboretum.binarizer; it stays importable from here as before.
    if name in ("Binarizer", "BinarySplit"):
        from . import binarizer

        return getattr(binarizer, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
