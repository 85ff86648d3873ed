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

A family may also ask for LLVM settings of its own while its warm-up compiles
(``register(..., llvm=LEAN)``): numba's defaults optimise at ``-O3`` and
vectorise every loop, which is slow to compile and, for the bit-set loops of
the searches, no faster to run (see :data:`LEAN`).

On a cold cache a family's compile can be split over two processes
(``register(..., helper=...)``): :func:`warm_up` starts a *helper* process
that runs the family's ``helper`` function, which compiles kernels that the
warmer needs late (MAPTree: ``expand_node`` and its callees, which the search
kernel's compile reaches last) into numba's on-disk cache, while this process
compiles the rest; when this process reaches those kernels it loads them from
the cache instead of compiling them.  Nothing waits for the helper: a kernel
the helper has not saved yet is compiled here as it would be without it, and a
helper still running when the warm-up ends is stopped.  Set
``ARBORETUM_COMPILE_HELPER=0`` to compile in one process only; machines with
one CPU do.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Callable, Iterable, Iterator

import numpy as np

__all__ = ["register", "warm_up", "is_warm", "is_cached", "families", "tiny_problem", "exercise_predictions"]

#: LLVM settings for the kernels of the searches: optimisation level 1 and no loop vectorizer
#: (numba's defaults: 3 and on).  Measured on this project's 2-core Intel Xeon (cold warm-up, then
#: the best of 3 fits from the cache it filled; ``benchmarks/compile_time.py`` for the warm-ups):
#: MAPTree classification compiles in 10.9 s instead of 11.8 s and certifies faster (hepatitis
#: 0.248 -> 0.224 s, primary-tumor 1.99 -> 1.84 s, vote 5.27 -> 4.45 s: LLVM's vectorised popcount
#: loops lose on the short bit sets of a node); MAPTree regression 8.4 -> 7.4 s, 100,000
#: expansions on ``load_diabetes`` 6.88 -> 6.60 s; PCFG 5.0 -> 4.4 s, fit times unchanged.
LEAN = {"OPT": 1, "LOOP_VECTORIZE": 0}

_WARMERS: dict[str, tuple[Callable[[], None], Callable[[], Iterable]]] = {}
_LLVM: dict[str, dict[str, int]] = {}
_HELPERS: dict[str, Callable[[], None]] = {}
#: The module that registers each family (``import arboretum`` imports none of them).
_MODULES = {
    "maptree-classification": "arboretum.maptree.search",
    "maptree-regression": "arboretum.maptree.search",
    "pcfg": "arboretum.pcfg.estimator",
    "smc": "arboretum.samplers.smc",
    "mcmc": "arboretum.samplers.mcmc",
    "optimal-axis": "arboretum.optimal.estimator",
    "optimal": "arboretum.optimal.estimator",
    "density": "arboretum.density._warm",
    "polytope": "arboretum.polytope.estimator",
}
#: The environment variable that turns the helper process off ("0").
HELPER_ENV = "ARBORETUM_COMPILE_HELPER"
_WARM: dict[str, float] = {}
_RUNNING: set[str] = set()  # a warmer may fit a tiny estimator, whose fit calls warm_up again
_LOCK = threading.RLock()


def register(
    family: str,
    dispatchers: Callable[[], Iterable],
    llvm: dict[str, int] | None = None,
    helper: Callable[[], None] | None = None,
) -> Callable:
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
    llvm : dict, optional
        numba settings (``numba.core.config`` names: ``OPT``, ``LOOP_VECTORIZE``) for the
        compiles of the warm-up, e.g. :data:`LEAN`; None: numba's.  They change only how
        the kernels are optimised, never what they compute, and apply only to what
        compiles during the warm-up (a kernel compiled later, by a call outside a fit,
        gets numba's settings).
    helper : callable, optional
        Run in a second process when the family's kernels are not cached yet: it
        should compile, with the argument types of a real fit, the kernels that the
        warmer reaches last (see the module docstring).  The warmer must still compile
        everything itself when the helper is absent or late.
    """

    def decorate(warmer: Callable[[], None]) -> Callable[[], None]:
        _WARMERS[family] = (warmer, dispatchers)
        if llvm:
            _LLVM[family] = dict(llvm)
        if helper is not None:
            _HELPERS[family] = helper
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
    """Every family (importing the modules that register them), in a fixed order: MAPTree's first."""
    for family in _MODULES:
        _load(family)
    return tuple(_MODULES) + tuple(f for f in _WARMERS if f not in _MODULES)


def _load(family: str) -> None:
    """Import the module that registers ``family``; KeyError for an unknown family."""
    if family not in _WARMERS:
        importlib.import_module(_MODULES[family])


def warm_up(family: str) -> float:
    """Compile (or load from numba's cache) the kernels of ``family``; return the seconds it took.

    Only the first call for a family in a process does any work; later calls
    (and calls made by the warmer itself) return 0.0 at once.
    """
    if family in _WARM:
        return 0.0
    _load(family)
    with _LOCK:
        if family in _WARM or family in _RUNNING:
            return 0.0
        warmer, _ = _WARMERS[family]
        _RUNNING.add(family)
        t0 = time.perf_counter()
        helper = _start_helper(family)
        try:
            with _llvm_settings(_LLVM.get(family)):
                warmer()
            # A cold compile leaves millions of numba's objects behind; collect them now, so that
            # the fit's clock does not pay for a full garbage collection of them (measured: a
            # PCFG fit at time_limit=0.5 after cold compiles fell back to a single leaf).  It runs
            # after a cache load too (about 0.07 s): collecting only after warm-ups that compiled
            # (counted by a ``numba:compile`` listener) left that test failing in 2 of 3 cold runs.
            gc.collect()
        finally:
            _stop_helper(helper)
            _RUNNING.discard(family)
        _WARM[family] = seconds = time.perf_counter() - t0
        return seconds


def _start_helper(family: str) -> subprocess.Popen | None:
    """Start the helper process of ``family`` (see the module docstring) when it has one, its
    kernels are not cached, the machine has a second CPU, ``sys.executable`` is a Python
    interpreter (not a host that embeds one) and the user did not turn it off."""
    if (
        family not in _HELPERS
        or os.environ.get(HELPER_ENV, "1") == "0"
        or _cpus() < 2
        or not os.path.basename(sys.executable or "").lower().startswith(("python", "pypy"))  # an embedding host
        or getattr(sys, "frozen", False)
        or is_cached(family)
    ):
        return None
    try:
        return subprocess.Popen(
            [sys.executable, "-c", "import sys; from arboretum._compile import _helper_main; _helper_main(sys.argv[1])",
             family],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, HELPER_ENV: "0"},
        )
    except OSError:
        return None


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _stop_helper(proc: subprocess.Popen | None) -> None:
    """Stop a helper that is still running (its work is done here by now) and reap it."""
    if proc is None:
        return
    if proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _helper_main(family: str) -> None:
    """The helper process: run the family's ``helper`` under the family's LLVM settings.

    A terminate signal ends it through ``SystemExit``, so that numba removes the temporary file
    of a cache entry it was writing."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    _load(family)  # that family's module alone
    _RUNNING.add(family)  # a tiny fit in the helper must not start the family's whole warm-up
    with _llvm_settings(_LLVM.get(family)):
        _HELPERS[family]()


@contextlib.contextmanager
def _llvm_settings(settings: dict[str, int] | None) -> Iterator[None]:
    """Use ``settings`` (``numba.core.config`` names) for the compiles inside the block.

    numba reads them when it optimises each compiled library, so they apply to exactly what
    compiles here; numba's compiler lock is held meanwhile, so no other thread compiles with
    them.  A setting the user chose through its environment variable (``NUMBA_OPT``,
    ``NUMBA_LOOP_VECTORIZE``) is left as it is.
    """
    if not settings:
        yield
        return
    from numba.core import config
    from numba.core.compiler_lock import global_compiler_lock

    chosen = {k: v for k, v in settings.items() if f"NUMBA_{k}" not in os.environ and hasattr(config, k)}
    with global_compiler_lock:
        saved = {k: getattr(config, k) for k in chosen}
        try:
            for k, v in chosen.items():
                setattr(config, k, config._OptLevel(v) if k == "OPT" else v)
            yield
        finally:
            for k, v in saved.items():
                setattr(config, k, v)


def is_warm(family: str) -> bool:
    """True once :func:`warm_up` ran for ``family`` in this process."""
    return family in _WARM


def is_cached(family: str) -> bool:
    """True when numba's on-disk cache holds up-to-date code of the family's kernels for this
    machine, so a warm-up only loads them; False when the first fit will compile them."""
    _load(family)
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
