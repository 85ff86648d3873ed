"""Save and load whole fitted estimators as JSON: :func:`save`, :func:`load`.

One format for every estimator (``"format": "arboretum.estimator"``,
``"version": 1``)::

    {"format": "arboretum.estimator", "version": 1, "arboretum_version": "0.2.0",
     "estimator": "MAPTreeClassifier",
     "params": {...},          # get_params(deep=False), validated again on load
     "fitted": {...}}          # the fitted attributes

Trees are stored in the :class:`~arboretum.Tree` JSON format, numeric arrays
as base64 of their little-endian bytes with dtype and shape, nested
estimators (the ``Binarizer``) in this same format.  Loading never executes
anything from the file: the estimator class is looked up by name among
arboretum's own, numeric arrays are read only with numeric dtypes, and every
value is checked; a malformed file, an unknown version or an unknown class
raises one :class:`~arboretum.exceptions.ModelFormatError` that says what is
wrong.  A loaded estimator predicts exactly as the saved one did.

Models that keep more than a tree keep it here too: the samplers' sampled
trees (as pre-order encodings, with the training data the posterior average
needs), and BCART-PCFG's training codes, from which :func:`load` rebuilds the
grammar exactly (deterministic, so loading takes about as long as the
original fit).
"""

from __future__ import annotations

import base64
import dataclasses
import json
import math
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from .exceptions import ModelFormatError

__all__ = ["save", "load", "dumps", "loads", "to_dict", "from_dict"]

FORMAT = "arboretum.estimator"
VERSION = 1
_NUMERIC_KINDS = "biuf"


def _registry() -> dict[str, type]:
    """Every class a file may name (nothing else is ever instantiated)."""
    from .binarizer import Binarizer
    from .maptree import MAPTreeClassifier, MAPTreeRegressor
    from .optimal import OptimalTreeClassifier, OptimalTreeRegressor
    from .pcfg import PCFGTreeClassifier
    from .polytope import ConvexPolytopeTreeClassifier, ConvexPolytopeTreeRegressor
    from .samplers import MCMCTreeSampler, SMCTreeSampler

    classes = [MAPTreeClassifier, MAPTreeRegressor, PCFGTreeClassifier, MCMCTreeSampler, SMCTreeSampler,
               OptimalTreeClassifier, OptimalTreeRegressor, Binarizer,
               ConvexPolytopeTreeClassifier, ConvexPolytopeTreeRegressor]
    # -- density trees and lists --
    from . import density

    classes += [getattr(density, name) for name in density.__all__ if name != "select_rate"]
    return {c.__name__: c for c in classes}


def _objects() -> dict[str, type]:
    """Plain value classes (dataclasses and named tuples) a file may hold."""
    from .bayes import ChipmanPrior, NIGPrior
    from .binarizer import BinarySplit
    from .optimal.user import CandidateRules
    from .pcfg.grammar import PhiPrior
    from .pcfg.store import Preflight

    return {c.__name__: c for c in (ChipmanPrior, NIGPrior, PhiPrior, Preflight, BinarySplit, CandidateRules)}


# ---------------------------------------------------------------------------
# values
# ---------------------------------------------------------------------------


def encode_value(v: Any) -> Any:
    """A fitted attribute or parameter as JSON types (tagged objects for non-JSON values)."""
    from sklearn.base import BaseEstimator

    from .tree import Tree

    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, np.generic):
        return encode_value(v.item())
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else {"__float__": repr(v)}
    if isinstance(v, np.ndarray):
        return _encode_array(v)
    if isinstance(v, Tree):
        return {"__tree__": v.to_dict()}
    if isinstance(v, BaseEstimator):
        return {"__estimator__": to_dict(v, fitted=_is_fitted(v))}
    if isinstance(v, np.random.RandomState):
        name, keys, pos, has_gauss, cached = v.get_state()
        return {"__random_state__": [name, _encode_array(keys), pos, has_gauss, cached]}
    if type(v).__name__ in _objects():
        if dataclasses.is_dataclass(v):
            fields = {f.name: encode_value(getattr(v, f.name)) for f in dataclasses.fields(v)}
        else:  # a named tuple
            fields = {k: encode_value(x) for k, x in v._asdict().items()}
        return {"__object__": type(v).__name__, "fields": fields}
    if isinstance(v, tuple):
        return {"__tuple__": [encode_value(x) for x in v]}
    if isinstance(v, list):
        return [encode_value(x) for x in v]
    if isinstance(v, Mapping):
        return {"__dict__": [[encode_value(k), encode_value(x)] for k, x in v.items()]}
    raise TypeError(f"cannot save a value of type {type(v).__name__}: {v!r}")


def _encode_array(a: np.ndarray) -> dict:
    if a.dtype.names is not None:
        return {"__structured__": {"names": list(a.dtype.names),
                                   "columns": [_encode_array(np.ascontiguousarray(a[n])) for n in a.dtype.names]}}
    if a.dtype.kind in _NUMERIC_KINDS:
        data = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<"))
        return {"__ndarray__": {"dtype": data.dtype.str, "shape": list(a.shape),
                                "data": base64.b64encode(data.tobytes()).decode("ascii")}}
    if a.dtype.kind in "OUS":
        return {"__ndarray__": {"dtype": "object" if a.dtype.kind == "O" else a.dtype.str,
                                "shape": list(a.shape), "items": [encode_value(x) for x in a.ravel().tolist()]}}
    raise TypeError(f"cannot save an array of dtype {a.dtype}")


def decode_value(v: Any, where: str = "value") -> Any:
    """Inverse of :func:`encode_value`; a ModelFormatError names ``where`` on anything unexpected."""
    from .tree import Tree

    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, list):
        return [decode_value(x, f"{where}[{i}]") for i, x in enumerate(v)]
    if not isinstance(v, dict) or len(v) not in (1, 2):
        raise ModelFormatError(f"{where}: unexpected value {_short(v)}")
    tag = next(iter(v))
    body = v[tag]
    if tag == "__float__" and body in ("nan", "inf", "-inf"):
        return float(body)
    if tag == "__tuple__" and isinstance(body, list):
        return tuple(decode_value(x, f"{where}[{i}]") for i, x in enumerate(body))
    if tag == "__dict__" and isinstance(body, list):
        out = {}
        for i, pair in enumerate(body):
            if not isinstance(pair, list) or len(pair) != 2:
                raise ModelFormatError(f"{where}: entry {i} of a dict is not a [key, value] pair")
            key = decode_value(pair[0], f"{where} key {i}")
            if not isinstance(key, (str, int, float, bool, tuple)) and key is not None:
                raise ModelFormatError(f"{where}: dict key {_short(key)} is not hashable")
            out[key] = decode_value(pair[1], f"{where}[{key!r}]")
        return out
    if tag in ("__ndarray__", "__structured__"):
        return _decode_array(v, where)
    if tag == "__tree__":
        return Tree.from_dict(body)
    if tag == "__estimator__":
        return from_dict(body)
    if tag == "__random_state__" and isinstance(body, list) and len(body) == 5:
        rs = np.random.RandomState()
        try:
            rs.set_state((body[0], _decode_array(body[1], where), body[2], body[3], body[4]))
        except (TypeError, ValueError) as exc:
            raise ModelFormatError(f"{where}: invalid random state: {exc}") from None
        return rs
    if tag == "__object__" and isinstance(body, str) and len(v) == 2 and isinstance(v.get("fields"), dict):
        cls = _objects().get(body)
        if cls is None:
            raise ModelFormatError(f"{where}: unknown object type {body!r}")
        fields = {k: decode_value(x, f"{where}.{k}") for k, x in v["fields"].items()}
        try:
            return cls(**fields)
        except (TypeError, ValueError) as exc:
            raise ModelFormatError(f"{where}: invalid {body}: {exc}") from None
    raise ModelFormatError(f"{where}: unexpected value {_short(v)}")


def _decode_array(v: dict, where: str) -> np.ndarray:
    if "__structured__" in v:
        body = v["__structured__"]
        if not isinstance(body, dict) or not isinstance(body.get("names"), list) or not isinstance(
            body.get("columns"), list
        ) or len(body["names"]) != len(body["columns"]) or not all(isinstance(n, str) for n in body["names"]):
            raise ModelFormatError(f"{where}: malformed structured array")
        cols = [_decode_array(c, f"{where}.{n}") for n, c in zip(body["names"], body["columns"])]
        if any(c.ndim != 1 or c.shape != cols[0].shape or c.dtype.kind not in _NUMERIC_KINDS for c in cols):
            raise ModelFormatError(f"{where}: the columns of a structured array must be 1-D numbers of one length")
        out = np.zeros(cols[0].shape[0] if cols else 0, dtype=[(n, c.dtype) for n, c in zip(body["names"], cols)])
        for n, c in zip(body["names"], cols):
            out[n] = c
        return out
    body = v.get("__ndarray__")
    if not isinstance(body, dict):
        raise ModelFormatError(f"{where}: malformed array")
    shape = body.get("shape")
    if not isinstance(shape, list) or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape):
        raise ModelFormatError(f"{where}: array shape must be a list of non-negative integers")
    size = int(np.prod(shape)) if shape else 1
    dtype = body.get("dtype")
    if "items" in body:
        items = body["items"]
        if not isinstance(items, list) or len(items) != size:
            raise ModelFormatError(f"{where}: array of shape {shape} needs {size} items")
        values = [decode_value(x, f"{where}[{i}]") for i, x in enumerate(items)]
        if dtype == "object":
            out = np.empty(size, dtype=object)
            out[:] = values
            return out.reshape(shape)
        try:
            dt = np.dtype(dtype)
        except TypeError:
            raise ModelFormatError(f"{where}: unknown dtype {dtype!r}") from None
        if dt.kind not in "US":
            raise ModelFormatError(f"{where}: dtype {dtype!r} is not a text dtype")
        return np.asarray(values, dtype=dt).reshape(shape)
    try:
        dt = np.dtype(dtype) if isinstance(dtype, str) else None
    except TypeError:
        dt = None
    if dt is None or dt.kind not in _NUMERIC_KINDS or dt.names is not None or dt.subdtype is not None:
        raise ModelFormatError(f"{where}: arrays must have a numeric dtype; got {dtype!r}")
    data = body.get("data")
    if not isinstance(data, str):
        raise ModelFormatError(f"{where}: array data must be a base64 string")
    try:
        raw = base64.b64decode(data.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        raise ModelFormatError(f"{where}: array data is not valid base64") from None
    if len(raw) != size * dt.itemsize:
        raise ModelFormatError(f"{where}: array data has {len(raw)} bytes; shape {shape} of {dt} needs {size * dt.itemsize}")
    return np.frombuffer(raw, dtype=dt).astype(dt.newbyteorder("="), copy=True).reshape(shape)


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 80 else text[:77] + "..."


def _is_fitted(est: Any) -> bool:
    return any(k.endswith("_") and not k.startswith("_") for k in vars(est))


# ---------------------------------------------------------------------------
# estimators
# ---------------------------------------------------------------------------


def to_dict(estimator: Any, *, fitted: bool = True) -> dict:
    """The JSON-ready dict of an estimator (its parameters and, if ``fitted``, its fitted state)."""
    from . import __version__

    name = type(estimator).__name__
    if _registry().get(name) is not type(estimator):
        raise TypeError(
            f"arboretum.save saves arboretum's estimators ({', '.join(sorted(_registry()))}); "
            f"got {type(estimator).__module__}.{name}"
        )
    params = {k: encode_value(v) for k, v in estimator.get_params(deep=False).items()}
    out = {"format": FORMAT, "version": VERSION, "arboretum_version": __version__, "estimator": name,
           "params": params}
    if fitted:
        state = estimator._get_fitted_state() if hasattr(estimator, "_get_fitted_state") else _default_state(estimator)
        out["fitted"] = {k: encode_value(v) for k, v in state.items()}
    return out


def _default_state(estimator: Any) -> dict:
    return {k: v for k, v in vars(estimator).items() if k.endswith("_") and not k.startswith("_")}


def from_dict(d: Any) -> Any:
    """Rebuild an estimator from :func:`to_dict`'s output (validating everything).

    Raises
    ------
    ModelFormatError
        For anything that is not a valid saved estimator. The checks below name
        what is wrong; a value that passes them but still cannot be used (an
        error of another type while the state is rebuilt) is reported as a
        ModelFormatError too, never as a traceback from deep inside.
    """
    try:
        return _from_dict(d)
    except ModelFormatError:
        raise
    except (TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError, RecursionError) as exc:
        raise ModelFormatError(f"malformed saved estimator: {type(exc).__name__}: {exc}") from None


def _from_dict(d: Any) -> Any:
    from sklearn.utils.validation import check_is_fitted

    from .data import validate_params

    if not isinstance(d, Mapping):
        raise ModelFormatError(f"a saved estimator must be a JSON object; got {type(d).__name__}")
    if d.get("format") != FORMAT:
        hint = ""
        if d.get("format") == "arboretum.Tree":
            hint = " (this is a tree: read it with arboretum.Tree.from_json)"
        elif d.get("format") == "arboretum.model":
            hint = " (written by arboretum 0.1's command line; fit and save the model again)"
        raise ModelFormatError(f"not a saved arboretum estimator: 'format' is {d.get('format')!r}{hint}")
    version = d.get("version")
    if isinstance(version, bool) or version != VERSION:
        raise ModelFormatError(f"unsupported {FORMAT} version {version!r}; this arboretum reads version {VERSION}")
    name = d.get("estimator")
    cls = _registry().get(name) if isinstance(name, str) else None
    if cls is None:
        raise ModelFormatError(
            f"unknown estimator {name!r}; this arboretum reads {', '.join(sorted(_registry()))}"
        )
    params = d.get("params")
    if not isinstance(params, Mapping):
        raise ModelFormatError(f"{name}: 'params' must be an object")
    decoded = {k: decode_value(v, f"{name}.{k}") for k, v in params.items()}
    allowed = set(cls().get_params(deep=False))
    unknown = sorted(set(decoded) - allowed)
    if unknown:
        raise ModelFormatError(f"{name}: unknown parameters {unknown}")
    est = cls(**decoded)
    try:
        validate_params(est)
    except (TypeError, ValueError) as exc:
        raise ModelFormatError(f"{name}: invalid parameter: {exc}") from None
    if "fitted" not in d:
        return est
    fitted = d["fitted"]
    if not isinstance(fitted, Mapping) or not fitted:
        raise ModelFormatError(f"{name}: 'fitted' must be a non-empty object")
    state = {}
    for k, v in fitted.items():
        if not isinstance(k, str) or not k.endswith("_") or k.startswith("__"):
            raise ModelFormatError(f"{name}: {k!r} is not a fitted attribute")
        state[k] = decode_value(v, f"{name}.{k}")
    try:
        if hasattr(est, "_set_fitted_state"):
            est._set_fitted_state(state)
        else:
            for k, v in state.items():
                setattr(est, k, v)
        if hasattr(est, "_check_loaded"):
            est._check_loaded()
        check_is_fitted(est)
    except ModelFormatError:
        raise
    except Exception as exc:  # noqa: BLE001 - any inconsistency of the file is a format error
        raise ModelFormatError(f"{name}: the fitted state is inconsistent: {type(exc).__name__}: {exc}") from None
    return est


def dumps(estimator: Any, **json_kwargs: Any) -> str:
    """The estimator as a JSON string (see :func:`save`); keys are sorted, so equal models give equal text."""
    json_kwargs.setdefault("sort_keys", True)
    return json.dumps(to_dict(estimator, fitted=_is_fitted(estimator)), allow_nan=False, **json_kwargs)


def loads(text: str | bytes) -> Any:
    """Rebuild an estimator from :func:`dumps`'s string.

    Raises
    ------
    ModelFormatError
        If the text is not JSON or not a valid saved estimator.
    """
    try:
        d = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError, TypeError) as exc:
        raise ModelFormatError(f"not a JSON document: {exc}") from None
    return from_dict(d)


def save(estimator: Any, path: str | os.PathLike) -> None:
    """Write a fitted (or unfitted) arboretum estimator to ``path`` as JSON.

    Parameters
    ----------
    estimator : arboretum estimator
        ``MAPTreeClassifier``, ``MAPTreeRegressor``, ``PCFGTreeClassifier``,
        ``MCMCTreeSampler``, ``SMCTreeSampler``, ``OptimalTreeClassifier``,
        ``OptimalTreeRegressor`` or ``Binarizer``.
    path : str or path-like

    Examples
    --------
    >>> import arboretum, tempfile, os
    >>> X, y = arboretum.load_dataset("zoo-1", return_X_y=True)
    >>> clf = arboretum.MAPTreeClassifier().fit(X, y)
    >>> path = os.path.join(tempfile.mkdtemp(), "zoo.json")
    >>> arboretum.save(clf, path)
    >>> (arboretum.load(path).predict(X) == clf.predict(X)).all()
    np.True_
    """
    text = dumps(estimator)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def load(path: str | os.PathLike) -> Any:
    """Read an estimator written by :func:`save` (or ``arboretum fit --save``).

    Raises
    ------
    ModelFormatError
        If the file is not a valid saved estimator: not JSON, another format,
        an unknown version or estimator, or any value missing, of the wrong
        type or inconsistent.  Nothing in the file is executed.
    FileNotFoundError
        If there is no such file.
    """
    with open(path, "rb") as fh:
        raw = fh.read()
    return loads(raw)
