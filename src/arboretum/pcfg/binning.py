"""Feature preprocessing of BCART-PCFG: real values to small integer codes and back.

The grammar works on integer codes ``0 .. t_f - 1`` per feature (spec-001
§3.1, §4.2).  A feature with more than ``max_values`` distinct training values
is *bucketed*; any other feature keeps one code per distinct value (its rank).

Bucketed features (``binning="uniform"`` or ``"quantile"``)
    ``k = max_values`` buckets with inner edges ``e_0 < e_1 < ...``:
    equal-width ``linspace(min, max, k + 1)[1:-1]`` or the empirical
    ``1/k, 2/k, ...`` quantiles (repeated quantiles merged).  Buckets that hold
    no training value keep their code, so codes may have gaps.
Rank-coded features
    The edges are the midpoints between consecutive distinct training values,
    so every training value gets its rank as code.

The code of ``x`` is ``#{e_j <= x}``: **a value equal to an edge goes up**,
i.e. a grammar split ``code <= m`` is the paper's rule ``x < e_m`` (spec §3.1,
§4.2; it matters, since Iris has training values on its equal-width edges and
the spec's oracle values depend on the rule).  The one exception is a feature
whose training values are exactly {0, 1} (a *binary* feature): it uses
``x <= 0.5``, the ``BINARY`` split of :mod:`arboretum.tree`, so binary data
gives the same trees as MAPTree; only the value 0.5 itself is affected.

Thresholds in raw units
    :class:`arboretum.tree.Tree` sends ``x <= t`` left.
    :attr:`FeatureBinner.thresholds_` stores, per feature, the number ``t_m``
    with ``x <= t_m  <=>  code(x) <= m`` for *every* real ``x``: the largest
    double below ``e_m`` (``numpy.nextafter(e_m, -inf)``), or 0.5 for a binary
    feature.  So a tree with these thresholds routes raw data exactly as the
    grammar routes codes (printed with 3 decimals, ``t_m`` reads as the edge).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["BINNINGS", "FeatureBinner"]

#: Allowed values of the ``binning`` parameter.
BINNINGS = ("uniform", "quantile")


def _bucket_edges(x: np.ndarray, k: int, binning: str) -> np.ndarray:
    """Inner edges of ``k`` buckets of the values ``x`` (strictly increasing)."""
    if binning == "uniform":
        edges = np.linspace(x.min(), x.max(), k + 1)[1:-1]
    else:
        edges = np.quantile(x, np.arange(1, k) / k)
    return np.unique(edges)


def _midpoints(u: np.ndarray) -> np.ndarray:
    """Midpoints between consecutive sorted distinct values, each ``u[j] < e_j <= u[j + 1]``."""
    lo, hi = u[:-1], u[1:]
    mid = lo + (hi - lo) / 2.0
    # adjacent doubles: the midpoint may round down onto u[j]; keep it above
    return np.where(mid > lo, mid, hi)


class FeatureBinner:
    """Map raw features to integer codes for the bounding-box grammar.

    Parameters
    ----------
    max_values : sequence of (int or None)
        One entry per feature: bucket the feature to this many values when it
        has more distinct training values; ``None`` never buckets it.
    binning : {"uniform", "quantile"}, default="uniform"
        Equal-width or equal-frequency buckets.

    Attributes
    ----------
    edges_ : list of ndarray
        Inner edges per feature (see the module docstring for the coding rule).
    bucketed_ : ndarray of bool, shape (n_features,)
        Whether each feature was bucketed (else rank-coded).
    n_codes_ : ndarray of int64, shape (n_features,)
        Codes per feature, ``len(edges_[f]) + 1``.
    n_values_ : ndarray of int64, shape (n_features,)
        Distinct codes taken by the training data (``t_f`` of the spec).
    thresholds_ : list of ndarray
        ``thresholds_[f][m]``: raw ``<=`` threshold equivalent to ``code <= m``.
    binary_ : ndarray of bool, shape (n_features,)
        Features whose training values are exactly {0, 1} (``x <= 0.5`` goes
        left; see the module docstring).
    """

    def __init__(self, max_values: Sequence[int | None], binning: str = "uniform") -> None:
        if binning not in BINNINGS:
            raise ValueError(f"binning must be one of {list(BINNINGS)}; got {binning!r}")
        self.max_values = list(max_values)
        self.binning = binning

    def fit(self, X: np.ndarray) -> FeatureBinner:
        """Compute the edges from the training matrix ``X`` (finite float64)."""
        X = np.asarray(X, dtype=np.float64)
        n_features = X.shape[1]
        if len(self.max_values) != n_features:
            raise ValueError(f"max_values has {len(self.max_values)} entries for {n_features} features")
        self.edges_: list[np.ndarray] = []
        self.thresholds_: list[np.ndarray] = []
        self.bucketed_ = np.zeros(n_features, dtype=bool)
        self.binary_ = np.zeros(n_features, dtype=bool)
        for f in range(n_features):
            u = np.unique(X[:, f])
            k = self.max_values[f]
            if k is not None and u.size > k:
                edges = _bucket_edges(X[:, f], k, self.binning)
                self.bucketed_[f] = True
            else:
                edges = _midpoints(u)
                self.binary_[f] = u.size == 2 and u[0] == 0.0 and u[1] == 1.0
            thresholds = edges.copy() if self.binary_[f] else np.nextafter(edges, -np.inf)
            self.edges_.append(edges)
            self.thresholds_.append(thresholds)
        self.n_codes_ = np.array([e.size + 1 for e in self.edges_], dtype=np.int64)
        codes = self.transform(X)
        self.n_values_ = np.array([np.unique(codes[:, f]).size for f in range(n_features)], dtype=np.int64)
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        """Return the integer codes of ``X``, an int32 array of the same shape."""
        X = np.asarray(X, dtype=np.float64)
        codes = np.empty(X.shape, dtype=np.int32)
        for f, edges in enumerate(self.edges_):
            side = "left" if self.binary_[f] else "right"
            codes[:, f] = np.searchsorted(edges, X[:, f], side=side)
        return codes

    def describe(self, feature_names: Sequence[str] | None = None) -> str:
        """One line per feature: how it was coded and its edges."""
        lines = []
        for f, edges in enumerate(self.edges_):
            name = feature_names[f] if feature_names is not None else f"x[{f}]"
            how = f"{self.binning} buckets" if self.bucketed_[f] else "rank codes"
            shown = ", ".join(f"{e:.4g}" for e in edges)
            lines.append(f"{name}: {how}, {self.n_values_[f]} values, edges [{shown}]")
        return "\n".join(lines)
