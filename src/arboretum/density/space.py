"""The categorical domain of the density models (spec-004 §2.1, §12.1 item 1, ambiguity A1).

A :class:`CategoricalSpace` knows, for every feature ``j``, its ordered category
labels ``C_j`` (``q_j = |C_j|``), turns raw ``X`` into integer codes, and
bins numeric columns the way the paper does for HELOC and Telco (equal-width
bins, through the one discretiser :class:`arboretum.Binarizer`).

Categories come from the user (``categories=``, a list with one sequence of
labels per column, or a dict by column name) or from the training data (the
categories observed in ``fit``, the authors' behaviour; spec A1).  A category
is a *label*; its code is its position in ``categories_[j]``.

Numbers:

- booleans and integer-valued numbers are labels (``0/1``, ``1/2/3``);
- with ``n_bins`` set, a numeric column with more than ``n_bins`` distinct
  values is cut into ``n_bins`` equal-width bins (the Binarizer's
  ``strategy="uniform"`` thresholds), whose labels read ``"(2.5, 5]"``;
- other numbers (a column of non-integer floats without ``n_bins``) are
  refused with an error naming the column: a density over categories needs
  a finite domain.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .. import data as _data

__all__ = ["CategoricalSpace", "MAX_CATEGORIES", "distinct_configurations"]


def _factorize(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(codes, uniques)`` of an object array, the uniques in order of first appearance:
    ``pandas.factorize`` where pandas is installed, a dictionary pass otherwise (arboretum itself
    needs only NumPy; pandas is optional)."""
    try:
        import pandas as pd
    except ImportError:
        index: dict = {}
        codes = np.fromiter((index.setdefault(v, len(index)) for v in values.tolist()), dtype=np.int64,
                            count=len(values))
        uniques = np.empty(len(index), dtype=object)
        uniques[:] = list(index)
        return codes, uniques
    return pd.factorize(values, use_na_sentinel=False)

#: The most categories one feature may have (a leaf stores a feature's allowed set as one 64-bit mask).
MAX_CATEGORIES = 64


def _bin_labels(thresholds: np.ndarray) -> list[str]:
    edges = [_data.format_number(t) for t in thresholds]
    if not edges:
        return ["(-inf, inf)"]
    out = [f"(-inf, {edges[0]}]"]
    out += [f"({a}, {b}]" for a, b in zip(edges[:-1], edges[1:])]
    out.append(f"({edges[-1]}, inf)")
    return out


class CategoricalSpace:
    """Category labels of every feature, and the encoding of raw ``X`` into codes.

    Use :meth:`fit` (training data) then :meth:`encode` (any data).

    Parameters
    ----------
    categories : None, list or dict, default=None
        ``None``: the categories observed in ``fit`` (sorted, or the declared
        order of a pandas categorical).  A list: one sequence of labels per
        column (None entries for columns whose observed categories are used).
        A dict: ``{column name or index: labels}``.  Explicit labels must
        include every training value.
    n_bins : int or None, default=None
        Equal-width bins of numeric columns with more than ``n_bins`` distinct
        values (the paper cuts HELOC and Telco into 10 bins).

    Attributes
    ----------
    categories_ : list of ndarray of object
        Labels of every feature; a code is a position here.
    thresholds_ : list of (ndarray or None)
        Bin edges of binned columns (None for label columns).
    q_ : ndarray of int64
        Number of categories per feature.
    log_domain_size_ : float
        ``sum_j log q_j`` (``log |X|``).
    observed_ : bool
        True when at least one feature's categories were read from the training data.
    """

    def __init__(self, categories: Any = None, n_bins: int | None = None) -> None:
        self.categories = categories
        self.n_bins = n_bins

    # -- fit -----------------------------------------------------------------------------
    def _explicit(self, j: int, names: Sequence[str] | None, p: int) -> Any:
        c = self.categories
        if c is None:
            return None
        if isinstance(c, Mapping):
            if names is not None and names[j] in c:
                return c[names[j]]
            return c.get(j)
        if len(c) != p:
            raise ValueError(f"categories must hold one sequence of labels per column ({p}); got {len(c)}")
        return c[j]

    def fit(self, columns: list, names: Sequence[str] | None) -> np.ndarray:
        """Learn the categories from the training columns; return their codes (int64, (n, p))."""
        p = len(columns)
        if isinstance(self.categories, Mapping):
            known = set(range(p)) | set(names or [])
            unknown = [k for k in self.categories if k not in known]
            if unknown:
                raise ValueError(f"categories names columns {unknown!r} that X does not have")
        self.categories_, self.thresholds_ = [], []
        self.observed_ = False
        codes = np.empty((len(columns[0]), p), dtype=np.int64)
        for j, col in enumerate(columns):
            explicit = self._explicit(j, names, p)
            labels, thresholds, values = self._fit_column(col, j, names, explicit)
            if len(labels) > MAX_CATEGORIES:
                raise ValueError(
                    f"{_data._where(j, names)} has {len(labels)} categories; the density models take at most "
                    f"{MAX_CATEGORIES} per column (bin it with n_bins or group its labels)"
                )
            self.categories_.append(np.asarray(labels, dtype=object))
            self.thresholds_.append(thresholds)
            codes[:, j] = self._codes(values, j, names, unknown="error")
        self.q_ = np.array([len(c) for c in self.categories_], dtype=np.int64)
        self.log_domain_size_ = float(np.sum(np.log(self.q_)))
        return codes

    def _fit_column(self, col: Any, j: int, names: Sequence[str] | None, explicit: Any) -> tuple:
        kind, declared = _data.column_kind(col, j, names)
        if explicit is not None:
            labels = list(explicit)
            if len(labels) == 0 or len(set(map(repr, labels))) != len(labels):
                raise ValueError(f"categories of {_data._where(j, names)} must be distinct labels, at least one")
            return labels, None, self._labels_of(col, j, names, kind)
        self.observed_ = True
        if kind in ("categorical", "ordered"):
            values = _data.label_values(col, j, names)
            seen = set(values.tolist())
            labels = [c for c in declared if c in seen] if declared is not None else sorted(seen, key=_sort_key)
            return labels, None, values
        x = _data.numeric_values(col, j, names)
        distinct = np.unique(x)
        if self.n_bins is not None and distinct.size > self.n_bins:
            from ..binarizer import Binarizer

            b = Binarizer(n_thresholds=self.n_bins - 1, strategy="uniform").fit(x.reshape(-1, 1))
            t = np.asarray(b.thresholds_[0], dtype=np.float64)
            bins = np.searchsorted(t, x, side="left")
            labels = _bin_labels(t)
            return labels, t, np.asarray([labels[i] for i in bins], dtype=object)
        if not np.all(distinct == np.round(distinct)):
            raise ValueError(
                f"{_data._where(j, names)} holds non-integer numbers ({_data.format_number(distinct[0])}, ...), "
                f"but the density models need categories: bin numeric columns with n_bins=10 (the paper's "
                f"choice for HELOC and Telco), declare the column's labels with categories=, or pass it "
                f"as a pandas category"
            )
        labels = [_as_label(v) for v in distinct]
        return labels, None, np.asarray([_as_label(v) for v in x], dtype=object)

    @staticmethod
    def _labels_of(col: Any, j: int, names: Sequence[str] | None, kind: str) -> np.ndarray:
        if kind in ("categorical", "ordered"):
            return _data.label_values(col, j, names)
        x = _data.numeric_values(col, j, names)
        return np.asarray([_as_label(v) for v in x], dtype=object)

    # -- encode --------------------------------------------------------------------------
    def _codes(self, values: np.ndarray, j: int, names: Sequence[str] | None, unknown: str) -> np.ndarray:
        lookup = {_key(v): i for i, v in enumerate(self.categories_[j].tolist())}
        inv, uniq = _factorize(np.asarray(values, dtype=object))
        code_of = np.empty(len(uniq), dtype=np.int64)
        for u, v in enumerate(uniq.tolist()):  # one lookup per distinct value
            c = lookup.get(_key(v))
            if c is None:
                if unknown == "error":
                    i = int(np.flatnonzero(inv == u)[0])
                    seen = ", ".join(_data.format_label(s) for s in self.categories_[j][:20])
                    raise ValueError(
                        f"{_data._where(j, names)} has the category {v!r} at row {i}, which is not in the "
                        f"model's domain (categories: {seen}); pass categories= at fit to include it, or "
                        f"handle_unknown='zero' to give such rows density 0"
                    )
                c = -1
            code_of[u] = c
        out = code_of[inv]
        return out

    def encode(self, columns: list, names: Sequence[str] | None, unknown: str = "error") -> np.ndarray:
        """Codes of raw columns (int64, (n, p)); an unseen category raises, or gets code -1 with
        ``unknown="zero"``."""
        codes = np.empty((len(columns[0]), len(columns)), dtype=np.int64)
        for j, col in enumerate(columns):
            t = self.thresholds_[j]
            if t is not None:
                x = _data.numeric_values(col, j, names)
                values = self.categories_[j][np.searchsorted(t, x, side="left")]
            else:
                kind, _ = _data.column_kind(col, j, names)
                values = self._labels_of(col, j, names, kind)
            codes[:, j] = self._codes(np.asarray(values, dtype=object), j, names, unknown)
        return codes

    def state(self) -> dict:
        """JSON-able fitted state (for the estimators' ``save``/``load``)."""
        return {"categories": [c.copy() for c in self.categories_],
                "thresholds": [None if t is None else t.copy() for t in self.thresholds_]}

    @classmethod
    def from_state(cls, categories: list, thresholds: list) -> "CategoricalSpace":
        s = cls()
        s.categories_ = [np.asarray(c, dtype=object) for c in categories]
        s.thresholds_ = [None if t is None else np.asarray(t, dtype=np.float64) for t in thresholds]
        s.q_ = np.array([len(c) for c in s.categories_], dtype=np.int64)
        s.log_domain_size_ = float(np.sum(np.log(s.q_)))
        s.observed_ = False
        return s


def distinct_configurations(codes: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct rows of ``codes`` (sorted as ``np.unique(codes, axis=0)``), how often each occurs and
    the index of every row's configuration: ``(configs, counts, inverse)``, ``configs[inverse] == codes``.

    The density models' likelihoods depend on the rows only through these counts, so a fit computes them
    once.  Rows are packed into one integer key (mixed radix over ``q``, the first column most significant)
    when the domain fits 62 bits, a 1-D ``np.unique`` ten times faster than the row-wise one."""
    codes = np.asarray(codes, dtype=np.int64)
    q = np.asarray(q, dtype=np.int64)
    n, p = codes.shape
    if n == 0 or p == 0 or float(np.sum(np.log2(np.maximum(q, 1)))) >= 62:
        configs, inverse, counts = np.unique(codes, axis=0, return_inverse=True, return_counts=True)
        return configs, counts, inverse.ravel()
    key = np.zeros(n, dtype=np.int64)
    for j in range(p):
        key = key * q[j] + codes[:, j]
    keys, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
    configs = np.empty((keys.shape[0], p), dtype=np.int64)
    rest = keys.copy()
    for j in range(p - 1, -1, -1):
        configs[:, j] = rest % q[j]
        rest //= q[j]
    return configs, counts, inverse.ravel()


def _sort_key(v: Any) -> tuple:
    return (0, float(v), "") if _data._is_number(v) and not isinstance(v, (str, bytes)) else (1, 0.0, str(v))


def _as_label(v: Any) -> Any:
    v = float(v)
    return int(v) if math.isfinite(v) and v == round(v) else v


def _key(v: Any) -> Any:
    """Labels compare as values: 1, 1.0, np.int64(1) and True... are one label; strings are strings."""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, (bool, int, float)) and not isinstance(v, str):
        f = float(v)
        return ("n", int(f) if f == round(f) else f)
    return ("s", str(v))
