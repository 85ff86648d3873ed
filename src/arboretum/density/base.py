"""What the five density estimators share: reading ``X`` into categories, leaves as boxes, scoring,
sampling, the fitted-state checks and the text export (scikit-learn's density-estimator style,
like ``KernelDensity``: ``fit(X)``, ``score_samples``, ``score``, ``sample``).

Every model is a list of *leaves*, each a box (one category mask per
feature, ``leaf_boxes_``), read in order: a configuration belongs to the
first leaf whose box holds it.  For trees and the histogram the boxes are
disjoint, so the order does not matter; for a rule list they are the rules'
antecedents followed by the default (the whole domain), which gives the
list's semantics.  Each leaf has a training count, a volume (the number of
configurations it holds: ``exp(leaf_log_volumes_)``), a probability mass and
a density (mass per configuration).
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
from sklearn.base import DensityMixin
from sklearn.utils.validation import check_is_fitted

from .. import data as _data
from ..base import TreeEstimator
from ..data import Check, Interval, Options
from . import _kernels as K
from .posterior import box_volume, list_boxes
from .space import CategoricalSpace

__all__ = ["DensityEstimator", "DENSITY_CONSTRAINTS"]


def _categories_ok(v: Any) -> bool:
    from collections.abc import Mapping

    if isinstance(v, Mapping):
        return all(x is None or (hasattr(x, "__len__") and not isinstance(x, str)) for x in v.values())
    return isinstance(v, (list, tuple)) and all(x is None or (hasattr(x, "__len__") and not isinstance(x, str))
                                                for x in v)


#: Parameters every density estimator has (docs/conventions.md, "density estimators").
DENSITY_CONSTRAINTS: dict = {
    "categories": [None, Check(_categories_ok, "None, a list with one sequence of labels (or None) per "
                                               "column, or a dict {column: labels}")],
    "n_bins": [None, Interval(numbers.Integral, 2, None)],
    "handle_unknown": [Options(("error", "zero"))],
}


class CategoricalDensityMixin(DensityMixin):
    """scikit-learn's tags of a density model over categories (the density estimators and
    :class:`~arboretum.density.DensityCV`): no ``y``; ``X`` of categories or text."""

    def _more_tags(self) -> dict:
        return {"requires_y": False}

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        return tags


class DensityEstimator(CategoricalDensityMixin, TreeEstimator):
    """Base of the density estimators (not an estimator on its own)."""

    _kernel_family = "density"
    _uses_binary_questions = False
    #: The default of ``density``: "mle" (n_l / (n V_l), the paper's trees) or "posterior_mean".
    _is_list = False

    # -- reading X -----------------------------------------------------------------------------
    def _fit_codes_density(self, X: Any) -> np.ndarray:
        columns, n, names = _data.read_columns(X, self, reset=True)
        if n < 2:
            raise ValueError(f"{type(self).__name__} needs at least 2 samples to estimate a density; got {n}")
        space = CategoricalSpace(self.categories, self.n_bins)
        codes = space.fit(columns, names)
        self.categories_ = space.categories_
        self.bin_edges_ = space.thresholds_
        self._space = space
        return codes

    def _codes(self, X: Any) -> np.ndarray:
        check_is_fitted(self)
        columns, _, names = _data.read_columns(X, self, reset=False)
        space = getattr(self, "_space", None)
        if space is None:
            space = self._space = CategoricalSpace.from_state(self.categories_, self.bin_edges_)
        return space.encode(columns, names, unknown=self.handle_unknown)

    @property
    def _q(self) -> np.ndarray:
        return np.array([len(c) for c in self.categories_], dtype=np.int64)

    def _full_box(self) -> tuple:
        return tuple((1 << int(x)) - 1 for x in self._q)

    # -- leaves --------------------------------------------------------------------------------
    def _set_leaves(self, boxes: list, counts: np.ndarray, log_volumes: np.ndarray, n: int, density: str,
                    alpha: float) -> None:
        """Set the leaf arrays from the boxes, training counts and log volumes."""
        counts = np.asarray(counts, dtype=np.float64)
        log_volumes = np.asarray(log_volumes, dtype=np.float64)
        k = len(boxes)
        if density == "mle":
            prob = counts / n
        else:
            prob = (counts + alpha) / (n + k * alpha)
        prob = np.where(np.isfinite(log_volumes), prob, 0.0)  # zero-volume leaves (lists) hold nothing
        prob = prob / prob.sum()
        self.leaf_boxes_ = np.array(boxes, dtype=np.uint64).reshape(k, len(self.categories_))
        self.leaf_counts_ = counts
        self.leaf_log_volumes_ = log_volumes
        self.leaf_probabilities_ = prob
        with np.errstate(divide="ignore", invalid="ignore"):  # a zero-volume leaf: log 0 - (-inf), not used
            self.leaf_log_densities_ = np.where(prob > 0, np.log(prob) - log_volumes, -np.inf)
        self.n_leaves_ = int(k)

    @property
    def leaf_densities_(self) -> np.ndarray:
        """Probability mass of one configuration of each leaf (``P / V``)."""
        return np.exp(self.leaf_log_densities_)

    @property
    def leaf_volumes_(self) -> np.ndarray:
        """Number of configurations of each leaf (float; inf beyond float64)."""
        with np.errstate(over="ignore"):
            return np.exp(self.leaf_log_volumes_)

    def _conditions(self, box: Any) -> list[str]:
        names = self._names()
        out = []
        for j, m in enumerate(box):
            m = int(m)
            q = len(self.categories_[j])
            if m == (1 << q) - 1:
                continue
            labels = [_data.format_label(self.categories_[j][c]) for c in range(q) if (m >> c) & 1]
            out.append(f"{names[j]} = {labels[0]}" if len(labels) == 1 else f"{names[j]} in {{{', '.join(labels)}}}")
        return out

    def _names(self) -> list[str]:
        names = getattr(self, "feature_names_in_", None)
        return [str(x) for x in names] if names is not None else [f"x{j}" for j in range(len(self.categories_))]

    @property
    def leaves_(self) -> list[dict]:
        """Every leaf as a dict: ``conditions`` (texts; for a rule list the rule's own), ``count``,
        ``volume``, ``probability``, ``density`` (the paper's Figure 3)."""
        check_is_fitted(self)
        return [
            {"conditions": self._conditions(b), "count": float(c), "volume": float(v), "probability": float(p),
             "density": float(f)}
            for b, c, v, p, f in zip(self.leaf_boxes_, self.leaf_counts_, self.leaf_volumes_,
                                     self.leaf_probabilities_, self.leaf_densities_)
        ]

    # -- scoring -------------------------------------------------------------------------------
    def _leaf_of(self, codes: np.ndarray) -> np.ndarray:
        return K.first_match(codes, self.leaf_boxes_)

    def score_samples(self, X: Any) -> np.ndarray:
        """Log probability mass of every row (``-inf`` in an empty leaf, or for an unknown category with
        ``handle_unknown="zero"``).

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features_in_)

        Returns
        -------
        log_density : ndarray of float64, shape (n_samples,)
        """
        codes = self._codes(X)
        leaf = self._leaf_of(codes)
        out = np.full(codes.shape[0], -np.inf)
        ok = leaf >= 0
        out[ok] = self.leaf_log_densities_[leaf[ok]]
        return out

    def score(self, X: Any, y: Any = None) -> float:
        """Total log-likelihood of ``X`` (natural log, spec A8)."""
        return float(np.sum(self.score_samples(X)))

    def _leaf_pieces(self, i: int) -> list[tuple]:
        """Disjoint boxes of leaf ``i`` (itself for trees; box subtraction for lists)."""
        return [tuple(int(m) for m in self.leaf_boxes_[i])]

    def sample(self, n_samples: int = 1, random_state: Any = None) -> np.ndarray:
        """Draw configurations: a leaf by its probability, then a configuration uniformly inside it.

        Returns
        -------
        X : ndarray of object, shape (n_samples, n_features_in_)
            Category labels.
        """
        from sklearn.utils import check_random_state

        check_is_fitted(self)
        _data.check_param(n_samples, "n_samples", [Interval(numbers.Integral, 1, None)])
        rng = check_random_state(random_state)
        leaves = rng.choice(self.n_leaves_, size=n_samples, p=self.leaf_probabilities_)
        out = np.empty((n_samples, len(self.categories_)), dtype=object)
        cache: dict = {}
        for r, i in enumerate(leaves):
            if i not in cache:
                pieces = self._leaf_pieces(int(i))
                vols = np.array([float(box_volume(b)) for b in pieces])
                cache[i] = (pieces, vols / vols.sum())
            pieces, w = cache[i]
            box = pieces[int(rng.choice(len(pieces), p=w))]
            for j, m in enumerate(box):
                cats = [c for c in range(int(m).bit_length()) if (int(m) >> c) & 1]
                out[r, j] = self.categories_[j][cats[int(rng.randint(len(cats)))]]
        return out

    @property
    def tree_(self) -> "Any":
        """The model as the shared :class:`arboretum.Tree` (task ``"density"``, nodes valued ``[P, f, V]``):
        trees as chains of ``CATEGORY`` splits, lists and the DET as cascades of ``CONJUNCTION`` rules
        (:mod:`arboretum.density._tree`).  ``export_text``, ``arboretum.plot.plot_tree`` and
        ``tree_.to_json`` read it."""
        check_is_fitted(self)
        from ._tree import density_tree

        return density_tree(self)

    # -- text ----------------------------------------------------------------------------------
    def _leaf_line(self, i: int, decimals: int) -> str:
        def fmt(x: float) -> str:
            return f"{x:.{decimals}g}" if 0 < abs(x) < 10 ** -decimals else f"{x:.{decimals}f}"

        vol = self.leaf_volumes_[i]
        v = str(int(vol)) if vol < 1e15 else f"{vol:.3g}"
        return (f"P={fmt(self.leaf_probabilities_[i])}, f={fmt(self.leaf_densities_[i])}, V={v}"
                f"  (n={int(self.leaf_counts_[i])})")

    def export_text(self, decimals: int = 4) -> str:  # type: ignore[override]
        """The model in the paper's form, P (mass), f (density) and V (volume) at every leaf: the shared
        :meth:`arboretum.Tree.export_text` of :attr:`tree_`."""
        return self.tree_.export_text(decimals=decimals)

    def _export_leaves(self, decimals: int) -> str:
        """One line per leaf: its conditions, then P, f and V (models without a tree, the histogram)."""
        check_is_fitted(self)
        lines = []
        for i in range(self.n_leaves_):
            cond = " and ".join(self._conditions(self.leaf_boxes_[i])) or "(everything)"
            lines.append(f"{cond}: {self._leaf_line(i, decimals)}")
        return "\n".join(lines)

    # -- persistence ---------------------------------------------------------------------------
    def _get_fitted_state(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if k.endswith("_") and not k.startswith("_")}

    def _check_loaded(self) -> None:
        k = self.n_leaves_
        p = len(self.categories_)
        if not isinstance(k, int) or k < 1 or self.leaf_boxes_.shape != (k, p) or self.leaf_boxes_.dtype != np.uint64:
            raise ValueError("leaf_boxes_ must be a (n_leaves_, n_features_in_) uint64 array")
        for name in ("leaf_counts_", "leaf_log_volumes_", "leaf_probabilities_", "leaf_log_densities_"):
            arr = getattr(self, name)
            if not isinstance(arr, np.ndarray) or arr.shape != (k,):
                raise ValueError(f"{name} must hold one number per leaf")
        if self.n_features_in_ != p or len(self.bin_edges_) != p:
            raise ValueError("categories_ and bin_edges_ must hold one entry per feature")
        q = self._q
        if np.any(q < 1) or np.any(q > 64) or np.any(self.leaf_boxes_ >> q.astype(np.uint64)[None, :]):
            raise ValueError("leaf_boxes_ name categories that categories_ does not have")
        if not np.isclose(self.leaf_probabilities_.sum(), 1.0) or np.any(self.leaf_probabilities_ < 0):
            raise ValueError("leaf_probabilities_ must be a probability vector")



def log_volume(box: tuple) -> float:
    return sum(math.log(int(m).bit_count()) for m in box)


def rule_list_pieces(est: DensityEstimator, i: int) -> list[tuple]:
    rules = [tuple(int(m) for m in b) for b in est.leaf_boxes_[:-1]]
    return list_boxes(rules, est._full_box())[i]
