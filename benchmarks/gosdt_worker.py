"""Fit GOSDT in its own virtual environment and write the tree back as plain JSON.

gosdt 1.0.4 crashes with scikit-learn >= 1.8, so it cannot share the project's
venv; ``make gosdt-venv`` builds ``.venv-gosdt`` and :mod:`benchmarks.peers`
runs this script with that venv's Python.  It must not import arboretum (or
anything else from this repository).

Usage::

    .venv-gosdt/bin/python benchmarks/gosdt_worker.py REQUEST.npz RESULT.json

``REQUEST.npz`` holds

* ``X``: 0/1 matrix (n_samples, n_features); ``y``: integer labels (n_samples,);
* ``params``: a JSON string with ``regularization`` (float), ``time_limit``
  (seconds), ``grace`` (seconds, default 5) and optional extra keyword
  arguments for ``gosdt.GOSDTClassifier`` under ``"gosdt_kwargs"``;
* optionally ``X_predict``: rows on which to return GOSDT's own predictions
  (used by the tests to check the conversion).

``RESULT.json`` is one object::

    {"status": "ok" | "timeout" | "killed" | "error",
     "tree": null | node,          # node = {"label": c} or
                                   #        {"feature": f, "left": node (x_f = 0), "right": node (x_f = 1)}
     "fit_time": seconds,          # the fit call alone (for "killed": time until the kill)
     "wall_time": seconds,         # including process start-up and imports
     "gosdt_status": "CONVERGED" | "TIMEOUT" | "NON_CONVERGENCE" | ...,
     "lower_bound": float, "upper_bound": float, "model_loss": float,
     "predictions": [...] (only when X_predict was given),
     "message": str, "log": str}   # log: what GOSDT printed

GOSDT does not always honour its time limit (GOSDT issue #6: a 10 s limit took
23 minutes).  The fit therefore runs in a child process (``--fit``), which is
killed (SIGKILL, whole process group) at ``time_limit + grace`` seconds after
it was started; the result is then ``"killed"`` with no tree, instead of a hang.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from typing import Any

import numpy as np

DEFAULT_GRACE = 5.0
_LOG_TAIL = 4000


def _load_request(path: str) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, dict[str, Any]]:
    with np.load(path, allow_pickle=False) as data:
        X = np.asarray(data["X"])
        y = np.asarray(data["y"])
        X_predict = np.asarray(data["X_predict"]) if "X_predict" in data.files else None
        params = json.loads(str(data["params"]))
    return X, y, X_predict, params


def _write_json(path: str, obj: dict[str, Any]) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as fh:
        json.dump(obj, fh)
    os.replace(tmp, path)


def _convert(node: dict[str, Any], classes: list[Any]) -> dict[str, Any]:
    """GOSDT's JSON ("true" = feature is 1, "false" = feature is 0) to left(0)/right(1)."""
    if "prediction" in node:
        return {"label": classes[int(node["prediction"])]}
    if "feature" not in node or "true" not in node or "false" not in node:
        raise ValueError(f"unexpected GOSDT node (non-binary split?): {sorted(node)}")
    return {
        "feature": int(node["feature"]),
        "left": _convert(node["false"], classes),
        "right": _convert(node["true"], classes),
    }


def _fit(request: str, result: str) -> None:
    """Child process: fit GOSDT and write the result file."""
    t_start = time.perf_counter()
    X, y, X_predict, params = _load_request(request)
    import gosdt  # imported here so that the supervisor starts fast

    time_limit = params.get("time_limit")
    kwargs = dict(params.get("gosdt_kwargs") or {})
    kwargs.setdefault("allow_small_reg", True)
    if time_limit is not None:
        # GOSDT's configuration takes whole seconds; never round a limit down to 0 (= no limit).
        kwargs["time_limit"] = max(1, int(math.ceil(float(time_limit))))
    est = gosdt.GOSDTClassifier(regularization=float(params["regularization"]), **kwargs)
    t0 = time.perf_counter()
    est.fit(X.astype(bool), y)
    fit_time = time.perf_counter() - t0
    status_name = getattr(est.result_.status, "name", str(est.result_.status))
    classes = [c.item() if hasattr(c, "item") else c for c in est.classes_]
    models = json.loads(est.result_.model)
    out: dict[str, Any] = {
        "status": "timeout" if status_name in ("TIMEOUT", "NON_CONVERGENCE") else "ok",
        "tree": _convert(models[0], classes) if models else None,
        "fit_time": fit_time,
        "gosdt_status": status_name,
        "lower_bound": float(getattr(est.result_, "lowerbound", math.nan)),
        "upper_bound": float(getattr(est.result_, "upperbound", math.nan)),
        "model_loss": float(getattr(est.result_, "model_loss", math.nan)),
        "message": "",
    }
    if out["tree"] is None:
        out["status"] = "error"
        out["message"] = f"GOSDT returned no model (status {status_name})"
    if X_predict is not None:
        out["predictions"] = [p.item() if hasattr(p, "item") else p for p in est.predict(X_predict.astype(bool))]
    out["child_time"] = time.perf_counter() - t_start
    _write_json(result, out)


def _supervise(request: str, result: str) -> int:
    """Run the fit in a child process; kill it at time_limit + grace."""
    t0 = time.perf_counter()
    _, _, _, params = _load_request(request)
    time_limit = params.get("time_limit")
    grace = float(params.get("grace", DEFAULT_GRACE))
    hard = None if time_limit is None else float(time_limit) + grace
    child_result = f"{result}.child"
    proc = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), "--fit", request, child_result],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    killed = False
    try:
        log_bytes, _ = proc.communicate(timeout=hard)
    except subprocess.TimeoutExpired:
        killed = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        log_bytes, _ = proc.communicate()
    wall = time.perf_counter() - t0
    log = log_bytes.decode("utf-8", "replace")[-_LOG_TAIL:]
    if killed:
        out: dict[str, Any] = {
            "status": "killed", "tree": None, "fit_time": wall, "gosdt_status": None,
            "message": f"killed after {wall:.1f} s: GOSDT ignored its {time_limit} s time limit "
                       f"(hard limit {hard:.1f} s = time_limit + grace {grace:g} s)",
        }
    elif proc.returncode != 0 or not os.path.exists(child_result):
        last = log.strip().splitlines()[-1] if log.strip() else ""
        out = {"status": "error", "tree": None, "fit_time": wall, "gosdt_status": None,
               "message": f"GOSDT child exited with code {proc.returncode}: {last}"}
    else:
        with open(child_result) as fh:
            out = json.load(fh)
    if os.path.exists(child_result):
        os.remove(child_result)
    out["wall_time"] = wall
    out["log"] = log
    _write_json(result, out)
    return 0


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "--fit":
        _fit(argv[1], argv[2])
        return 0
    if len(argv) == 2:
        return _supervise(argv[0], argv[1])
    print(__doc__.split("\n\n")[2], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
