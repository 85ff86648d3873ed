"""NumPy parts of convex polytope trees (no torch): the deterministic threshold search of the
greedy phase (spec §2.14, §3.4), hard impurities, parameters on the raw columns and facet
accounting (spec §3.9)."""

from __future__ import annotations

import numpy as np

from ..tree import BLOCK_ROWS, polytope_intensity, softplus

__all__ = ["threshold_search", "impurity", "raw_committee", "effective_facets", "prune_mask", "reference_as_paper",
           "paper_as_reference"]


def _entropy_rows(counts: np.ndarray) -> np.ndarray:
    """Entropy (nats) of every row of class counts; 0 for an empty row."""
    total = counts.sum(-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(total > 0, counts / total, 0.0)
        return -np.where(q > 0, q * np.log(q), 0.0).sum(-1)


def impurity(y: np.ndarray, task: str, n_classes: int = 0) -> float:
    """Hard impurity of one node: class entropy (nats) times n, or the sum of squared errors."""
    if y.size == 0:
        return 0.0
    if task == "classification":
        counts = np.bincount(y, minlength=n_classes).astype(np.float64)
        return float(_entropy_rows(counts[None])[0] * y.size)
    return float(((y - y.mean()) ** 2).sum())


def threshold_search(score: np.ndarray, y: np.ndarray, task: str, n_classes: int = 0,
                     min_samples_leaf: int = 1) -> tuple[int, float, float, np.ndarray]:
    """The cut of a node's sorted scores that minimises the children's impurity (spec §2.14).

    Parameters
    ----------
    score : ndarray of shape (n,)
        Any strictly increasing function of the gate: the committee intensity ``lambda`` or ``g``.
    y : ndarray of shape (n,)
        Class indices (classification) or targets (regression).
    task : {"classification", "regression"}
    n_classes : int
    min_samples_leaf : int
        Fewest samples on either side.

    Returns
    -------
    n_left : int
        Number of samples sent left at the best cut (0 when there is no valid cut).
    threshold : float
        The ``n_left``-th smallest score (spec: ``theta* = p_(n*)``; left = ``score <= threshold``).
    cost : float
        ``J(n*)``: the weighted child entropy ``(n/N) H(left) + ((N-n)/N) H(right)``
        (classification) or ``SSE(left) + SSE(right)`` (regression); ``inf`` without a cut.
    J : ndarray of shape (n - 1,)
        ``J(n)`` for ``n = 1 .. N-1`` (``inf`` where the cut is not allowed).
    """
    N = score.shape[0]
    order = np.argsort(score, kind="stable")
    s = score[order]
    ys = y[order]
    if task == "classification":
        prefix = np.cumsum(np.eye(n_classes)[ys], axis=0)[:-1]
        suffix = prefix[-1:] + np.eye(n_classes)[ys[-1]] - prefix if N > 1 else prefix
        n = np.arange(1, N)
        J = (n * _entropy_rows(prefix) + (N - n) * _entropy_rows(suffix)) / N
    else:
        c1, c2 = np.cumsum(ys), np.cumsum(ys**2)
        n = np.arange(1, N)
        sl, ql = c1[:-1], c2[:-1]
        sr, qr = c1[-1] - sl, c2[-1] - ql
        J = (ql - sl**2 / n) + (qr - sr**2 / (N - n))
    J = np.where((s[1:] > s[:-1]) & (n >= min_samples_leaf) & (N - n >= min_samples_leaf), J, np.inf)
    if J.size == 0 or not np.isfinite(J).any():
        return 0, float("nan"), float("inf"), J
    best = int(np.argmin(J))
    return best + 1, float(s[best]), float(J[best]), J


def raw_committee(B: np.ndarray, rho: np.ndarray, mask: np.ndarray, mean: np.ndarray, scale: np.ndarray) -> dict:
    """One node's committee on the raw columns: ``beta_k . [1, (x - mean) / scale] = A_k . x + b_k``.

    Pruned experts (``mask == 0``) are left out.  Returns the ``r``, ``bias``, ``coefs`` of a
    ``POLYTOPE`` split of :class:`arboretum.Tree` (float64).
    """
    B = np.asarray(B, dtype=np.float64)
    keep = np.flatnonzero(np.asarray(mask) > 0)
    W = B[keep, 1:] / scale
    return {"r": np.exp(np.asarray(rho, dtype=np.float64)[keep]), "bias": B[keep, 0] - W @ mean, "coefs": W,
            "facet": np.ones(keep.size)}


#: Smallest |a| of a reference gate on export (``r_k = |a| / K`` must be positive).
A_MIN = 1e-12


def reference_as_paper(a: float, c: float, K: int) -> tuple[np.ndarray, float, bool]:
    """The reference gate ``sigmoid(tau (c - a mean_k softplus(z_k)))`` as the paper's (spec §3.1, R2).

    Returns ``(rho, t, swap)``: ``rho = ln(|a| / K)`` for all K experts, so that
    ``lambda = sum_k r_k softplus(z_k) = |a| lambda_bar``, and the threshold ``t`` of the convex side
    ``lambda <= t``.  With ``a < 0`` the gate goes right outside the polytope (``t = -c``, ``swap``
    False); with ``a > 0`` it goes right inside (``t = c``), so the convex side, the left child of a
    ``POLYTOPE`` split, is the gate's right child (``swap`` True).  Up to ties at ``g = 1/2``, the
    split ``lambda > t`` sends a sample right exactly when the gate's ``g > 1/2`` (``swap`` False) or
    ``g < 1/2`` (``swap`` True).  ``|a|`` is kept >= :data:`A_MIN`.
    """
    rho = np.full(K, np.log(max(abs(float(a)), A_MIN) / K))
    return rho, (float(c) if a > 0 else -float(c)), bool(a > 0)


def paper_as_reference(rho: np.ndarray, t: float) -> tuple[float, float]:
    """``(a, c)`` of a reference gate with tied weights ``exp(rho)`` and threshold ``t`` (the inverse of
    :func:`reference_as_paper` with ``a < 0``): ``a = -K r``, ``c = -t``."""
    rho = np.asarray(rho, dtype=np.float64)
    return -float(rho.size * np.exp(rho[0])), -float(t)


def prune_mask(rho: np.ndarray, mask: np.ndarray, rel: float = 1e-3) -> np.ndarray:
    """Experts kept by the facet pruning of spec §3.9: ``r_k >= rel * max r`` (among those kept so far)."""
    r = np.exp(np.asarray(rho, dtype=np.float64)) * (np.asarray(mask) > 0)
    return (r >= rel * r.max()).astype(np.float64) if r.max() > 0 else np.asarray(mask, dtype=np.float64)


def printed_polytope(committee: dict, X: np.ndarray, t: float) -> dict:
    """The approximate polytope that ``export_text`` prints for a ``POLYTOPE`` split (spec §3.9).

    The exact rule ``lambda(x) <= t`` has a smooth boundary.  Theorem 1's polytope (offsets
    ``ln(e^{t / r_k} - 1) - b_k``) contains it but can lie far outside it when many experts share the
    boundary.  Here each expert's offset is instead the largest ``A_k . x`` over the rows of ``X``
    that go left: the smallest polytope with the facets' directions that holds every one of them.
    Returns ``offset`` (one per expert) and ``agreement``, the share of the rows of ``X`` that the
    polytope of the flagged facets (``committee["facet"]``) routes as the exact rule does; an empty
    dict when no row goes left (the text then falls back on Theorem 1).
    """
    left = polytope_intensity(committee, X) <= t  # the split's own rule, as the tree routes
    if not left.any():
        return {}
    A, flagged = committee["coefs"].T, committee["facet"] == 1
    offset = np.full(A.shape[1], -np.inf)
    for a in range(0, X.shape[0], BLOCK_ROWS):  # a block of rows at a time: no n x K temporaries
        on_left = left[a:a + BLOCK_ROWS]
        if on_left.any():
            offset = np.maximum(offset, (X[a:a + BLOCK_ROWS] @ A)[on_left].max(0))
    agree = 0
    for a in range(0, X.shape[0], BLOCK_ROWS):
        inside = np.all((X[a:a + BLOCK_ROWS] @ A)[:, flagged] <= offset[flagged], axis=1)
        agree += int(np.count_nonzero(inside == left[a:a + BLOCK_ROWS]))
    return {"offset": offset, "agreement": np.array([agree / X.shape[0]])}


def effective_facets(committee: dict, X: np.ndarray, t: float, band: float = 0.1, share: float = 0.01) -> np.ndarray:
    """0/1 flags of the experts that shape the boundary ``lambda = t`` (spec §3.9).

    Among the points of ``X`` near the boundary (``|lambda - t| <= band |t|``; the tenth of the
    points nearest to it when fewer than 20 are that near), an expert is a facet when it has the
    largest term ``r_k softplus(A_k . x + b_k)`` for at least ``share`` of them.
    """
    A, b, r = committee["coefs"].T, committee["bias"], committee["r"]
    n, K = X.shape[0], r.shape[0]
    dist = np.empty(n)
    wins, n_near = np.zeros(K, dtype=np.int64), 0
    for a in range(0, n, BLOCK_ROWS):  # a block of rows at a time: no n x K temporaries
        terms = softplus(X[a:a + BLOCK_ROWS] @ A + b) * r
        dist[a:a + BLOCK_ROWS] = d = np.abs(terms.sum(1) - t)
        near = d <= band * abs(t)
        wins += np.bincount(np.argmax(terms[near], axis=1), minlength=K)
        n_near += int(near.sum())
    if n_near < 20:
        near = dist <= np.quantile(dist, 0.1)
        wins = np.bincount(np.argmax(softplus(X[near] @ A + b) * r, axis=1), minlength=K)
        n_near = int(near.sum())
    freq = wins / max(n_near, 1)
    flags = (freq >= share).astype(np.float64)
    if not flags.any():
        flags[int(np.argmax(committee["r"]))] = 1.0
    return flags
