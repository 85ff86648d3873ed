"""Datasets bundled with arboretum.

The 16 binary CP4IM benchmark datasets used by DL8.5, MurTree and MAPTree
ship with the package, and so do four small UCI datasets of the BCART-PCFG
paper ("iris", "caesarian", "haberman", "vertebral"; see
:mod:`arboretum.datasets.uci`).  Load any of them with :func:`load_dataset`::

    >>> from arboretum.datasets import list_datasets, load_dataset
    >>> X, y = load_dataset("zoo-1", return_X_y=True)
    >>> X.shape, X.dtype, y.dtype
    ((101, 36), dtype('uint8'), dtype('int64'))
"""

from __future__ import annotations

import difflib
import functools
import gzip
import io
from importlib import resources

import numpy as np
from sklearn.utils import Bunch

from .uci import UCI_DATASETS, list_uci_datasets, load_uci, make_hidden_xor

__all__ = ["list_datasets", "list_uci_datasets", "load_dataset", "make_hidden_xor"]

_SUFFIX = ".txt.gz"

_PROVENANCE = """\
Provenance
----------
One of the 16 CP4IM benchmark datasets: binarisations of UCI datasets by
Guns, Nijssen and De Raedt (2011), "Itemset mining: a constraint programming
perspective", Artificial Intelligence 175(12-13). These are the versions used
by DL8.5, MurTree and MAPTree (Sullivan, Tiwari and Thrun, "MAPTree: Beating
'Optimal' Decision Trees with Bayesian Decision Trees").

File copied unchanged (then gzipped) from aia-uclouvain/pydl8.5, datasets/{name}.txt,
commit a7f0fee72b4c17bbcb727050ba102db7dda10119. Licence: MIT (c) Gaël Aglin.
Format: one sample per line, space-separated 0/1 values, the binary label in
the first column and the features after it. The files carry no feature
names, so features are named x0, x1, ...
"""


def _data_dir() -> resources.abc.Traversable:
    return resources.files(__name__).joinpath("data")


@functools.lru_cache(maxsize=1)
def _available() -> tuple[str, ...]:
    names = (entry.name[: -len(_SUFFIX)] for entry in _data_dir().iterdir() if entry.name.endswith(_SUFFIX))
    return tuple(sorted(names))


def list_datasets() -> list[str]:
    """Return the sorted names of the bundled datasets.

    Returns
    -------
    names : list of str
        E.g. ``["anneal", "audiology", ..., "zoo-1"]``.
    """
    return list(_available())


def _resolve(name: object) -> str:
    if not isinstance(name, str):
        raise TypeError(f"name must be a str naming a dataset; got {type(name).__name__}")
    available = _available()
    key = name.strip().lower().replace("_", "-")
    if key.endswith(_SUFFIX):
        key = key[: -len(_SUFFIX)]
    if key in available or key in UCI_DATASETS:
        return key
    available = tuple(sorted(available + tuple(UCI_DATASETS)))
    close = difflib.get_close_matches(key, available, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise ValueError(f"unknown dataset {name!r}.{hint} Available datasets: {', '.join(available)}")


@functools.lru_cache(maxsize=None)
def _load_arrays(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Parse a bundled file once; the cached arrays are read-only."""
    raw = gzip.decompress(_data_dir().joinpath(name + _SUFFIX).read_bytes())
    table = np.loadtxt(io.BytesIO(raw), dtype=np.int64, ndmin=2)
    if table.shape[1] < 2 or not np.isin(table, (0, 1)).all():
        raise ValueError(f"bundled dataset {name!r} is corrupt: expected a 0/1 table with at least 2 columns")
    X = np.ascontiguousarray(table[:, 1:], dtype=np.uint8)
    y = np.ascontiguousarray(table[:, 0], dtype=np.int64)
    X.flags.writeable = False
    y.flags.writeable = False
    return X, y


def _describe(name: str, X: np.ndarray, y: np.ndarray) -> str:
    counts = np.bincount(y, minlength=2)
    title = f"CP4IM dataset {name!r}"
    lines = [
        title,
        "=" * len(title),
        "",
        f"Samples: {X.shape[0]}",
        f"Features: {X.shape[1]} binary (0/1)",
        "Classes: 2 (" + ", ".join(f"class {k}: {c}" for k, c in enumerate(counts)) + ")",
        "",
        _PROVENANCE.format(name=name),
    ]
    return "\n".join(lines)


def load_dataset(name: str, return_X_y: bool = False) -> Bunch | tuple[np.ndarray, np.ndarray]:
    """Load a bundled binary classification dataset.

    Parameters
    ----------
    name : str
        One of :func:`list_datasets` (case-insensitive; ``_`` may replace ``-``),
        or one of the UCI datasets of :func:`list_uci_datasets`, which are
        returned by :func:`arboretum.datasets.uci.load_uci` (float features,
        class indices, the ARFF feature and class names).
    return_X_y : bool, default=False
        Return ``(X, y)`` instead of a :class:`~sklearn.utils.Bunch`.

    Returns
    -------
    data : Bunch
        With fields ``data`` (uint8 array of shape (n_samples, n_features)),
        ``target`` (int64 array of 0/1 labels), ``feature_names``
        (``["x0", "x1", ...]``), ``target_names`` (``["0", "1"]``),
        ``DESCR`` (description with shape, class counts, provenance and
        licence), ``name`` and ``filename`` (the bundled resource).
    (X, y) : tuple of ndarray
        If ``return_X_y`` is True. Arrays are fresh copies.

    Raises
    ------
    ValueError
        If ``name`` is unknown; the message lists the available datasets and
        suggests the closest name.
    """
    key = _resolve(name)
    if key in UCI_DATASETS:
        return load_uci(key, return_X_y=return_X_y)
    X_cached, y_cached = _load_arrays(key)
    X, y = X_cached.copy(), y_cached.copy()
    if return_X_y:
        return X, y
    return Bunch(
        data=X,
        target=y,
        feature_names=[f"x{j}" for j in range(X.shape[1])],
        target_names=["0", "1"],
        DESCR=_describe(key, X, y),
        name=key,
        filename=str(_data_dir().joinpath(key + _SUFFIX)),
    )
