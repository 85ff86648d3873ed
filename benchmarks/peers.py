"""Peer baselines of the MAPTree experiments: CART, DL8.5, STreeD and GOSDT.

Every peer is fitted on a dense 0/1 feature matrix and its tree is converted
into an :class:`arboretum.Tree` with ``BINARY`` splits (left: ``x[f] == 0``,
right: ``x[f] == 1``).  The conversion keeps the peer's structure exactly,
including splits that change nothing (DL8.5 does not prune them, and the tree
size must count them), and recomputes every node's counts by routing the
training rows through the tree: the peers' own statistics are not trusted.
So downstream code computes accuracy, likelihoods and size the same way for
every method.

Leaf ``value``: the training class frequencies of the leaf, except that the
peer's own leaf label always wins the argmax, so :meth:`arboretum.Tree.predict`
returns exactly what the peer's ``predict`` returns.  This only matters for
ties and for leaves that no training row reaches (where ``value`` becomes the
one-hot vector of the peer's label); if a peer ever labelled a leaf with a
strict minority class, ``value`` is one-hot too and ``PeerFit.info`` counts it.

Peers and their optional dependencies (``pip install -e ".[peers]"``):

=========  ===============================  =====================================
method     package                          parameters
=========  ===============================  =====================================
``cart``   scikit-learn                     ``max_depth`` (``random_state=0``)
``dl85``   pydl8.5                          ``max_depth``; ``time_limit``
``streed`` pystreed                         ``max_depth``; ``cost_complexity=0``,
                                            ``time_limit``
``gosdt``  gosdt 1.0.4 in ``.venv-gosdt``   ``regularization``;
           (``make gosdt-venv``)            ``allow_small_reg=True``, ``time_limit``
=========  ===============================  =====================================

GOSDT 1.0.4 crashes with scikit-learn >= 1.8, so it runs in its own venv
through ``benchmarks/gosdt_worker.py``, which kills it at ``time_limit + grace``
seconds (GOSDT does not always honour its limit).  Set ``ARBORETUM_GOSDT_PYTHON``
to use another interpreter than ``.venv-gosdt/bin/python``.
"""

from __future__ import annotations

import functools
import json
import math
import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from arboretum import Tree
from arboretum.maptree.incumbents import sklearn_tree
from arboretum.tree import BINARY, TreeBuilder

__all__ = [
    "PEERS", "PeerFit", "available_peers", "fit_peer", "gosdt_python", "run_gosdt_worker", "tree_from_nested",
]

#: The peer methods, in the order of the paper's figures.
PEERS = ("cart", "dl85", "streed", "gosdt")

REPO_ROOT = Path(__file__).resolve().parents[1]
GOSDT_WORKER = Path(__file__).resolve().parent / "gosdt_worker.py"
#: Seconds past ``time_limit`` before the GOSDT worker kills the fit.
GOSDT_GRACE = 5.0
_GOSDT_MISSING = "gosdt venv missing (run make gosdt-venv)"

#: Nested plain tree: ``{"label": c}`` or ``{"feature": f, "left": node, "right": node}``
#: with ``left`` taken when ``x[f] == 0``; ``label`` may be None (use the majority).
Node = dict[str, Any]


@dataclass
class PeerFit:
    """The result of :func:`fit_peer`.

    Attributes
    ----------
    tree : arboretum.Tree or None
        The peer's tree over the binary features (``BINARY`` splits only);
        ``counts`` hold the training label counts of the rows reaching each
        node, one column per label ``0 .. n_classes-1``.  None if the peer
        returned no tree.
    fit_time : float
        Wall-clock seconds of the peer's fit call (for GOSDT, measured inside
        the worker, so without process start-up; for a killed GOSDT run, the
        time until the kill).
    status : str
        ``"ok"`` (finished; for the exact peers, proved optimal), ``"timeout"``
        (stopped at the time limit and returned its best tree, without proof)
        or ``"failed: <reason>"`` (no tree).
    info : dict
        Extras: the peer's own objective values, GOSDT's wall time with
        process start-up, its log, etc.
    """

    tree: Tree | None
    fit_time: float
    status: str
    info: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------------------
# availability
# ---------------------------------------------------------------------------


def gosdt_python() -> Path:
    """The interpreter of the GOSDT venv (``$ARBORETUM_GOSDT_PYTHON`` or ``.venv-gosdt/bin/python``)."""
    env = os.environ.get("ARBORETUM_GOSDT_PYTHON")
    return Path(env) if env else REPO_ROOT / ".venv-gosdt" / "bin" / "python"


@functools.lru_cache(maxsize=None)
def _gosdt_status(python: str) -> str:
    if not Path(python).exists():
        return _GOSDT_MISSING
    try:
        proc = subprocess.run([python, "-c", "import gosdt; print(gosdt.__version__)"],
                              capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"gosdt venv broken ({exc}); rerun make gosdt-venv"
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return f"gosdt venv broken ({last}); rerun make gosdt-venv"
    return "ok"


@functools.lru_cache(maxsize=None)
def _import_status(module: str, package: str) -> str:
    try:
        __import__(module)
    except Exception as exc:  # ImportError, or a broken install raising something else
        return f"{package} not importable ({type(exc).__name__}: {exc}); pip install -e \".[peers]\""
    return "ok"


def _peer_status(method: str) -> str:
    if method == "cart":
        return "ok"
    if method == "dl85":
        return _import_status("pydl85", "pydl8.5")
    if method == "streed":
        return _import_status("pystreed", "pystreed")
    return _gosdt_status(str(gosdt_python()))


def available_peers() -> dict[str, str]:
    """Each peer method and either ``"ok"`` or why it is unavailable.

    The checks are cached per process (GOSDT's runs ``import gosdt`` once in
    the GOSDT venv, about a second).
    """
    return {method: _peer_status(method) for method in PEERS}


# ---------------------------------------------------------------------------
# conversion to arboretum.Tree
# ---------------------------------------------------------------------------


def _check_data(X: Any, y: Any) -> tuple[np.ndarray, np.ndarray, int]:
    X = np.asarray(X)
    y = np.asarray(y)
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"X must be a non-empty 2-D array; got shape {X.shape}")
    if not np.all((X == 0) | (X == 1)):
        raise ValueError("X must hold only 0/1 values (binarise it first)")
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have shape ({X.shape[0]},) like X's rows; got {y.shape}")
    if y.dtype.kind not in "iubf" or not np.all(y == np.round(y)) or y.min() < 0:
        raise ValueError("y must hold integer labels 0 .. K-1")
    y = y.astype(np.int64)
    return X.astype(np.uint8), y, max(2, int(y.max()) + 1)


def _leaf_value(counts: np.ndarray, label: int | None, info: dict[str, Any]) -> np.ndarray:
    """Class frequencies whose argmax (ties to the lowest index) is the peer's ``label``."""
    k = counts.shape[0]
    total = counts.sum()
    freq = counts / total if total > 0 else np.full(k, 1.0 / k)
    if label is None or int(np.argmax(freq)) == label:
        return freq
    if not 0 <= label < k:
        raise ValueError(f"the peer predicts label {label}, outside 0 .. {k - 1}")
    if total > 0 and counts[label] == counts.max():  # a tie the peer broke differently
        nudged = freq.copy()
        nudged[label] += 1e-9
        return nudged / nudged.sum()
    key = "empty_leaves" if total == 0 else "minority_leaves"
    info[key] = info.get(key, 0) + 1
    onehot = np.zeros(k)
    onehot[label] = 1.0
    return onehot


def tree_from_nested(root: Node, X: np.ndarray, y: np.ndarray, n_classes: int,
                     info: dict[str, Any] | None = None) -> Tree:
    """Build an :class:`arboretum.Tree` from a nested plain tree, routing ``X, y`` for the counts.

    Parameters
    ----------
    root : dict
        ``{"label": c}`` (``c`` may be None: predict the majority) or
        ``{"feature": f, "left": node, "right": node}`` with ``left`` taken
        when ``x[f] == 0`` (``x[f] <= 0.5``, as in :class:`arboretum.Tree`).
    X, y : arrays
        Training data: every node's counts are the labels of the rows reaching it.
    n_classes : int
        Number of count columns (labels ``0 .. n_classes-1``).
    info : dict, optional
        Receives ``empty_leaves`` / ``minority_leaves`` counters (see module doc).
    """
    info = {} if info is None else info
    b = TreeBuilder(X.shape[1], classes=np.arange(n_classes))
    # (plain node, builder id of its parent or -1, side, depth, row indices)
    pending: list[tuple[Node, int, int, int, np.ndarray]] = [(root, -1, 0, 0, np.arange(X.shape[0]))]
    halves: dict[int, dict[int, int]] = {}
    features: dict[int, int] = {}
    while pending:
        node, parent, side, depth, idx = pending.pop()
        counts = np.bincount(y[idx], minlength=n_classes).astype(np.float64)[:n_classes]
        if "feature" in node:
            total = counts.sum()
            value = counts / total if total > 0 else np.full(n_classes, 1.0 / n_classes)
            me = b.add_node(counts, value, depth)
            f = int(node["feature"])
            if not 0 <= f < X.shape[1]:
                raise ValueError(f"the peer's tree tests feature {f}, outside [0, {X.shape[1] - 1}]")
            features[me] = f
            go_left = X[idx, f] <= 0.5
            pending.append((node["right"], me, 1, depth + 1, idx[~go_left]))
            pending.append((node["left"], me, 0, depth + 1, idx[go_left]))
        else:
            label = node.get("label")
            me = b.add_node(counts, _leaf_value(counts, None if label is None else int(label), info), depth)
        if parent >= 0:
            halves.setdefault(parent, {})[side] = me
    for node_id, f in features.items():
        kids = halves[node_id]
        b.set_split(node_id, BINARY, f, 0.5, kids[0], kids[1])
    return b.build()


def _nested_from_tree(tree: Tree, i: int = 0) -> Node:
    """Structure of an :class:`arboretum.Tree` with BINARY splits (leaf labels left to the majority)."""
    if tree.children_left[i] < 0:
        return {"label": None}
    return {"feature": int(tree.feature[i]),
            "left": _nested_from_tree(tree, int(tree.children_left[i])),
            "right": _nested_from_tree(tree, int(tree.children_right[i]))}


def _nested_from_dl85(node: dict[str, Any]) -> Node:
    """DL8.5's dict: ``left`` is taken when the feature is 1, ``right`` when it is 0."""
    if "feat" not in node:
        return {"label": int(node["value"])}
    return {"feature": int(node["feat"]),
            "left": _nested_from_dl85(node["right"]),
            "right": _nested_from_dl85(node["left"])}


def _nested_from_streed(node: Any) -> Node:
    """STreeD's tree: ``left_child`` is taken when the feature is 0 ("not satisfied")."""
    if node.is_leaf_node():
        return {"label": int(node.label)}
    return {"feature": int(node.feature),
            "left": _nested_from_streed(node.left_child),
            "right": _nested_from_streed(node.right_child)}


# ---------------------------------------------------------------------------
# the peers
# ---------------------------------------------------------------------------


#: The parameter each peer needs.
_REQUIRED = {"cart": "max_depth", "dl85": "max_depth", "streed": "max_depth", "gosdt": "regularization"}


def _check_params(method: str, params: dict[str, Any]) -> None:
    key = _REQUIRED[method]
    if key not in params:
        raise TypeError(f"fit_peer({method!r}) needs {key}=<{'int' if key == 'max_depth' else 'float'}>")
    v = params[key]
    if key == "max_depth":
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"max_depth must be an integer >= 1; got {v!r}")
    elif isinstance(v, bool) or not isinstance(v, (int, float, np.number)) or not float(v) > 0:
        raise ValueError(f"regularization must be a number > 0; got {v!r}")


def _fit_cart(X: np.ndarray, y: np.ndarray, k: int, time_limit: float, params: dict[str, Any]) -> PeerFit:
    from sklearn.tree import DecisionTreeClassifier

    depth = int(params.pop("max_depth"))
    est = DecisionTreeClassifier(max_depth=depth, random_state=params.pop("random_state", 0), **params)
    t0 = time.perf_counter()
    est.fit(X, y)
    fit_time = time.perf_counter() - t0
    info: dict[str, Any] = {}
    tree = tree_from_nested(_nested_from_tree(sklearn_tree(est, X.shape[1])), X, y, k, info)
    return PeerFit(tree, fit_time, "ok", info)


def _fit_dl85(X: np.ndarray, y: np.ndarray, k: int, time_limit: float, params: dict[str, Any]) -> PeerFit:
    from pydl85 import DL85Classifier

    depth = int(params.pop("max_depth"))
    # DL8.5 takes whole seconds and treats 0 as "no limit".
    limit = max(1, int(math.ceil(time_limit)))
    est = DL85Classifier(max_depth=depth, time_limit=limit, **params)
    t0 = time.perf_counter()
    est.fit(X.astype(np.int32), y)
    fit_time = time.perf_counter() - t0
    info: dict[str, Any] = {"error": est.error_, "runtime": est.runtime_}
    if est.tree_ is None:
        why = "no tree within the time limit" if est.timeout_ else "no tree found"
        return PeerFit(None, fit_time, f"failed: {why}", info)
    tree = tree_from_nested(_nested_from_dl85(est.base_tree_), X, y, k, info)
    return PeerFit(tree, fit_time, "timeout" if est.timeout_ else "ok", info)


def _fit_streed(X: np.ndarray, y: np.ndarray, k: int, time_limit: float, params: dict[str, Any]) -> PeerFit:
    import warnings

    from pystreed import STreeDClassifier

    depth = int(params.pop("max_depth"))
    params.setdefault("cost_complexity", 0.0)
    est = STreeDClassifier(max_depth=depth, time_limit=float(time_limit), **params)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X.astype(np.int32), y)
    fit_time = time.perf_counter() - t0
    if not est.is_fitted() or getattr(est, "tree_", None) is None:
        return PeerFit(None, fit_time, "failed: no feasible tree found", {})
    info: dict[str, Any] = {"score": float(est.fit_result.score())}
    tree = tree_from_nested(_nested_from_streed(est.tree_), X, y, k, info)
    return PeerFit(tree, fit_time, "ok" if est.fit_result.is_optimal() else "timeout", info)


def run_gosdt_worker(X: np.ndarray, y: np.ndarray, *, regularization: float, time_limit: float | None,
                     grace: float = GOSDT_GRACE, X_predict: np.ndarray | None = None,
                     **gosdt_kwargs: Any) -> dict[str, Any]:
    """Run ``benchmarks/gosdt_worker.py`` in the GOSDT venv; return its JSON result.

    See the worker's docstring for the fields.  ``X_predict`` asks for GOSDT's
    own predictions on those rows (``"predictions"``).  A missing venv gives
    ``{"status": "missing", ...}``.  As a last resort, the worker process
    itself is killed ``grace + 60`` s after its own hard limit.
    """
    python = gosdt_python()
    if not python.exists():
        return {"status": "missing", "tree": None, "fit_time": 0.0, "message": _GOSDT_MISSING}
    params = {"regularization": float(regularization), "time_limit": time_limit, "grace": float(grace),
              "gosdt_kwargs": gosdt_kwargs}
    with tempfile.TemporaryDirectory(prefix="peers_gosdt_") as tmp:
        request, result = os.path.join(tmp, "request.npz"), os.path.join(tmp, "result.json")
        arrays = {"X": np.asarray(X, dtype=np.uint8), "y": np.asarray(y, dtype=np.int64),
                  "params": np.array(json.dumps(params))}
        if X_predict is not None:
            arrays["X_predict"] = np.asarray(X_predict, dtype=np.uint8)
        np.savez(request, **arrays)
        backstop = None if time_limit is None else float(time_limit) + float(grace) + 60.0
        t0 = time.perf_counter()
        proc = subprocess.Popen([str(python), str(GOSDT_WORKER), request, result],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            out_bytes, _ = proc.communicate(timeout=backstop)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.communicate()
            return {"status": "killed", "tree": None, "fit_time": time.perf_counter() - t0,
                    "message": f"the GOSDT worker itself hung; killed after {backstop:.0f} s"}
        if proc.returncode != 0 or not os.path.exists(result):
            tail = out_bytes.decode("utf-8", "replace").strip().splitlines()[-1:] or ["?"]
            return {"status": "error", "tree": None, "fit_time": time.perf_counter() - t0,
                    "message": f"GOSDT worker exited with code {proc.returncode}: {tail[0]}"}
        with open(result) as fh:
            return json.load(fh)


def _fit_gosdt(X: np.ndarray, y: np.ndarray, k: int, time_limit: float, params: dict[str, Any]) -> PeerFit:
    status = _peer_status("gosdt")
    if status != "ok":
        return PeerFit(None, 0.0, f"failed: {status}", {})
    res = run_gosdt_worker(X, y, time_limit=time_limit, **params)
    info = {key: res.get(key) for key in ("gosdt_status", "lower_bound", "upper_bound", "model_loss",
                                          "wall_time", "message", "log") if key in res}
    fit_time = float(res.get("fit_time", math.nan))
    if res.get("tree") is None:
        st = res.get("status")
        why = {"killed": "timeout, no tree (killed: GOSDT ignored its time limit)",
               "missing": _GOSDT_MISSING}.get(st, f"{st}: {res.get('message', '')}")
        return PeerFit(None, fit_time, f"failed: {why}", info)
    tree = tree_from_nested(res["tree"], X, y, k, info)
    return PeerFit(tree, fit_time, "timeout" if res.get("status") == "timeout" else "ok", info)


_FITTERS: dict[str, Callable[[np.ndarray, np.ndarray, int, float, dict[str, Any]], PeerFit]] = {
    "cart": _fit_cart, "dl85": _fit_dl85, "streed": _fit_streed, "gosdt": _fit_gosdt,
}


def fit_peer(method: str, X: np.ndarray, y: np.ndarray, *, time_limit: float = 60.0, **params: Any) -> PeerFit:
    """Fit one peer on binary ``X`` and integer labels ``y``; return its tree as an :class:`arboretum.Tree`.

    Parameters
    ----------
    method : {"cart", "dl85", "streed", "gosdt"}
    X : array of 0/1, shape (n_samples, n_features)
    y : array of int, shape (n_samples,)
        Labels ``0 .. K-1``; the tree's counts have ``max(2, K)`` columns.
    time_limit : float, default=60
        Seconds (ignored by CART).  DL8.5 and GOSDT take whole seconds (rounded
        up); GOSDT is killed at ``time_limit + grace`` (``grace``, default 5 s,
        may be passed in ``params``).
    **params
        ``max_depth`` (cart, dl85, streed; required) or ``regularization``
        (gosdt; required).  Anything else goes to the peer's estimator, e.g.
        ``cost_complexity`` for STreeD (default 0 here, not the library's 0.01)
        or ``depth_budget`` for GOSDT.

    Returns
    -------
    PeerFit
        Failures of the peer itself (exceptions, no tree) are reported in
        ``status`` as ``"failed: <reason>"`` instead of being raised; bad
        arguments (unknown method, missing ``max_depth``) raise.
    """
    if method not in _FITTERS:
        raise ValueError(f"method must be one of {list(PEERS)}; got {method!r}")
    X, y, k = _check_data(X, y)
    params = dict(params)
    _check_params(method, params)
    if method != "gosdt":  # GOSDT's fitter reports its own missing venv
        status = _peer_status(method)
        if status != "ok":
            return PeerFit(None, 0.0, f"failed: {status}", {})
    t0 = time.perf_counter()
    try:
        return _FITTERS[method](X, y, k, float(time_limit), params)
    except Exception as exc:  # a peer crashing must not stop an experiment grid
        return PeerFit(None, time.perf_counter() - t0, f"failed: {type(exc).__name__}: {exc}", {})
