"""Compiling the numba kernels before a fit's clock starts.

The first fit of a model family in a process needs its numba kernels: compiled
(the first run on a machine, tens of seconds) or loaded from numba's on-disk
cache (``cache=True``; a few tenths of a second).  Neither is the fit's work, so
no limit should pay for it: an estimator calls :func:`warm_up` for its family
before its clock starts, and reports the seconds as ``compile_time_`` (0.0 once
the family is warm in the process).

A family registers a *warmer* with :func:`register`: a function that runs the
family's kernels on a tiny problem with the argument types of a real fit, and
its predictions (:func:`exercise_predictions`), so that every kernel a fit or a
prediction can call is compiled (``tests/test_compile.py`` checks that a real fit
and its predictions after the warm-up compile nothing), and the dispatchers whose
numba cache tells whether the family was compiled on this machine before
(:func:`is_cached`, for the CLI's "compiling" note).
"""

from __future__ import annotations

import gc
import threading
import time
from typing import Callable, Iterable

import numpy as np

__all__ = ["register", "warm_up", "is_warm", "is_cached", "families", "tiny_problem", "exercise_predictions"]

_WARMERS: dict[str, tuple[Callable[[], None], Callable[[], Iterable]]] = {}
_WARM: dict[str, float] = {}
_RUNNING: set[str] = set()  # a warmer may fit a tiny estimator, whose fit calls warm_up again
_LOCK = threading.RLock()


def register(family: str, dispatchers: Callable[[], Iterable]) -> Callable:
    """Decorator: register the warmer of ``family``.

    Parameters
    ----------
    family : str
        Name of the model family ("maptree-classification", "pcfg", ...).
    dispatchers : callable
        Returns ``(dispatcher, marker)`` pairs: the numba dispatchers whose
        on-disk cache says whether the family's kernels were compiled on this
        machine (the top-level kernels: a cached top-level kernel holds the
        code of everything it calls), each with a string that the family's
        signature contains (e.g. the leaf model's type name) or None.
    """

    def decorate(warmer: Callable[[], None]) -> Callable[[], None]:
        _WARMERS[family] = (warmer, dispatchers)
        return warmer

    return decorate


def tiny_problem() -> tuple[np.ndarray, np.ndarray]:
    """48 samples, 6 binary features with duplicate rows, and noisy labels of an XOR: a problem
    on which a search needs probes, expansions and a few rounds, and a sampler a few steps."""
    rng = np.random.default_rng(0)
    X = rng.random((48, 6)) < 0.5
    X[:8] = X[8:16]
    y = (X[:, 0] ^ X[:, 1] ^ (rng.random(48) < 0.2)).astype(np.int64)
    return X, y


def exercise_predictions(est, X) -> None:
    """Run every prediction of a fitted estimator once on ``X``: ``predict_proba`` and ``predict``
    with each ``method`` it takes, ``apply``; for a density ``score_samples`` and ``sample``.

    A warmer calls it after its tiny fit, so that the prediction kernels are compiled (or loaded)
    with the fit's and a user's first ``predict`` does not pay for compilation either."""
    import inspect

    if hasattr(est, "score_samples"):
        est.score_samples(X)
        est.sample(2, random_state=0)
        return
    for method in getattr(est, "_predict_methods", (None,)):
        kw = {} if method is None else {"method": method}
        if hasattr(est, "predict_proba"):
            est.predict_proba(X, **kw)
        est.predict(X, **(kw if "method" in inspect.signature(est.predict).parameters else {}))
    if hasattr(est, "apply"):
        est.apply(X)


def families() -> tuple[str, ...]:
    """The registered families (after the modules that register them were imported)."""
    return tuple(_WARMERS)


def warm_up(family: str) -> float:
    """Compile (or load from numba's cache) the kernels of ``family``; return the seconds it took.

    Only the first call for a family in a process does any work; later calls
    (and calls made by the warmer itself) return 0.0 at once.
    """
    if family in _WARM:
        return 0.0
    with _LOCK:
        if family in _WARM or family in _RUNNING:
            return 0.0
        warmer, _ = _WARMERS[family]
        _RUNNING.add(family)
        t0 = time.perf_counter()
        try:
            warmer()
            # A cold compile leaves millions of numba's objects behind; collect them now, so that
            # the fit's clock does not pay for a full garbage collection of them (measured: a
            # PCFG fit at time_limit=0.5 after cold compiles fell back to a single leaf).  It runs
            # after a cache load too (about 0.07 s): collecting only after warm-ups that compiled
            # (counted by a ``numba:compile`` listener) left that test failing in 2 of 3 cold runs.
            gc.collect()
        finally:
            _RUNNING.discard(family)
        _WARM[family] = seconds = time.perf_counter() - t0
        return seconds


def is_warm(family: str) -> bool:
    """True once :func:`warm_up` ran for ``family`` in this process."""
    return family in _WARM


def is_cached(family: str) -> bool:
    """True when numba's on-disk cache holds up-to-date code of the family's kernels for this
    machine, so a warm-up only loads them; False when the first fit will compile them."""
    _, dispatchers = _WARMERS[family]
    try:
        from numba.core.registry import cpu_target

        magic = cpu_target.target_context.codegen().magic_tuple()
        for d, marker in dispatchers():
            index = d._cache._cache_file._load_index()  # {} when missing or stale (numba 0.60+)
            if not any(key[1] == magic and (marker is None or marker in str(key[0])) for key in index):
                return False
        return True
    except Exception:  # a numba without these internals: say "compiling", the safe message
        return False
