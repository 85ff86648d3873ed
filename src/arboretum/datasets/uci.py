"""Small UCI classification datasets (Weka ARFF files) and the hidden-XOR generator.

These are the datasets of the BCART-PCFG paper (Sullivan, Tiwari, Thrun &
Piech, "Bayesian Decision Trees via Tractable Priors and Probabilistic
Context-Free Grammars"): Iris, Caesarian Section, Haberman's Survival and the
two-class Vertebral Column.  They ship gzipped, byte-for-byte copies of public
ARFF files, and are read by the small ARFF reader below (no external ARFF
library).  :func:`arboretum.datasets.load_dataset` dispatches the names
``"iris"``, ``"caesarian"``, ``"haberman"`` and ``"vertebral"`` here.

Reading rules
-------------
* The label is the **last** ``@attribute``; its classes are numbered in the
  order the header declares them, and ``target_names`` keeps that order.
* Numeric features (``numeric``, ``real``, ``integer``) are read as float64.
* A nominal feature whose declared values are all numbers (Caesarian's age,
  Haberman's year of operation) is read as those numbers, i.e. as an ordered
  feature, which is how the paper treats it.  Other nominal features are coded
  ``0, 1, ...`` in declaration order.
* ``?`` (a missing value) is refused with an error naming the row and column.

Also here: :func:`make_hidden_xor`, the synthetic "hidden XOR" data of the
same paper.  (It belongs in a ``synthetic`` module of its own when one exists.)
"""

from __future__ import annotations

import functools
import gzip
import re
from dataclasses import dataclass
from importlib import resources

import numpy as np
from sklearn.utils import Bunch

__all__ = ["UCI_DATASETS", "list_uci_datasets", "load_uci", "read_arff", "make_hidden_xor"]


@dataclass(frozen=True)
class _Source:
    """Where a bundled ARFF file comes from."""

    filename: str
    title: str
    repository: str
    path: str
    commit: str
    sha256: str
    licence: str
    notes: str


_LIAC = "renatopp/arff-datasets"
_LIAC_COMMIT = "c59f172882592bb58982cc54d2d3c8a2b57e9b73"
_LIAC_LICENCE = (
    "none stated in the repository; the data are the UCI Machine Learning Repository datasets "
    "(Dua & Graff, UCI ML Repository, University of California, Irvine)"
)

#: The bundled UCI datasets, by name.
UCI_DATASETS: dict[str, _Source] = {
    "caesarian": _Source(
        filename="caesarian.csv.arff.gz",
        title="Caesarian Section Classification (UCI)",
        repository="Jud4spriest/Wood-Classifier",
        path="caesarian.csv.arff",
        commit="0177b4c4e0c1446ef875d04935da1686d58baa88",
        sha256="b0a59cfa8cf06823b02ed6b0fa7d483551e729495eb6725e7ea4e8533e5ec415",
        licence="none stated; the data are the UCI 'Caesarian Section Classification Dataset'",
        notes=(
            "Features: age, delivery number, delivery time (0 timely, 1 premature, 2 latecomer), "
            "blood pressure (0 low, 1 normal, 2 high), heart problem (0/1); all declared nominal "
            "with numeric values and read as ordered numbers. Label: Caesarian (0/1)."
        ),
    ),
    "haberman": _Source(
        filename="haberman.arff.gz",
        title="Haberman's Survival (UCI)",
        repository=_LIAC,
        path="classification/haberman.arff",
        commit=_LIAC_COMMIT,
        sha256="a4ba8455a9b3c3af9ad7beac997d42da98bd37ab86b4d835c56962bf9d6c1ce1",
        licence=_LIAC_LICENCE,
        notes=(
            "Features: age at operation, year of operation (1900 + value; declared nominal, read as "
            "numbers), number of positive axillary nodes. Label: survival status, "
            "1 = survived 5 years or longer, 2 = died within 5 years."
        ),
    ),
    "iris": _Source(
        filename="iris.arff.gz",
        title="Iris Plants (UCI; Fisher, 1936)",
        repository=_LIAC,
        path="classification/iris.arff",
        commit=_LIAC_COMMIT,
        sha256="8337af8c82669892e870b8ce12740c919559b88a5f3c92e87097481b84581c89",
        licence=_LIAC_LICENCE,
        notes="Features: sepal length, sepal width, petal length, petal width (cm). Label: species.",
    ),
    "vertebral": _Source(
        filename="column2C.arff.gz",
        title="Vertebral Column, two classes (UCI, column_2C_weka)",
        repository=_LIAC,
        path="classification/column2C.arff",
        commit=_LIAC_COMMIT,
        sha256="2a9b58f5ff0d13843c17a2e6dcabd1866904fc6bc975d40f860fce3d2ec085da",
        licence=_LIAC_LICENCE,
        notes=(
            "Features: pelvic incidence, pelvic tilt, lumbar lordosis angle, sacral slope, pelvic "
            "radius, grade of spondylolisthesis. Label: Abnormal / Normal."
        ),
    ),
}

_NUMERIC_TYPES = frozenset({"numeric", "real", "integer"})


def list_uci_datasets() -> list[str]:
    """Return the sorted names of the bundled UCI datasets.

    Returns
    -------
    names : list of str
        ``["caesarian", "haberman", "iris", "vertebral"]``.
    """
    return sorted(UCI_DATASETS)


# ---------------------------------------------------------------------------
# ARFF reader
# ---------------------------------------------------------------------------


def _unquote(token: str) -> str:
    token = token.strip()
    if len(token) >= 2 and token[0] == token[-1] and token[0] in "'\"":
        return token[1:-1]
    return token


def _split_csv(line: str) -> list[str]:
    """Split one ARFF data line on commas, honouring single and double quotes."""
    out, field, quote = [], [], None
    for ch in line:
        if quote:
            if ch == quote:
                quote = None
            else:
                field.append(ch)
        elif ch in "'\"":
            quote = ch
        elif ch == ",":
            out.append("".join(field).strip())
            field = []
        else:
            field.append(ch)
    if quote:
        raise ValueError(f"unterminated quote in ARFF data line {line!r}")
    out.append("".join(field).strip())
    return out


_ATTRIBUTE = re.compile(r"@attribute\s+('[^']*'|\"[^\"]*\"|\S+)\s+(.*)$", re.IGNORECASE)


def read_arff(text: str) -> tuple[str, list[tuple[str, str | list[str]]], list[list[str]]]:
    """Parse ARFF text into its relation name, attributes and raw data rows.

    Parameters
    ----------
    text : str
        The contents of a dense ARFF file (sparse ``{...}`` rows are not
        supported).

    Returns
    -------
    relation : str
    attributes : list of (name, type)
        ``type`` is the lower-cased type name for numeric/string/date
        attributes, or the list of declared values of a nominal attribute.
    rows : list of list of str
        One list of cell strings per data line, each with one cell per
        attribute.

    Raises
    ------
    ValueError
        If the header is malformed, a data line has the wrong number of cells,
        or the file holds sparse rows.
    """
    relation = ""
    attributes: list[tuple[str, str | list[str]]] = []
    rows: list[list[str]] = []
    in_data = False
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("%"):
            continue
        if not in_data:
            lower = line.lower()
            if lower.startswith("@relation"):
                relation = _unquote(line[len("@relation"):])
            elif lower.startswith("@attribute"):
                match = _ATTRIBUTE.match(line)
                if match is None:
                    raise ValueError(f"malformed @attribute on line {number}: {raw!r}")
                name, kind = _unquote(match.group(1)), match.group(2).strip()
                if kind.startswith("{"):
                    if not kind.endswith("}"):
                        raise ValueError(f"unterminated nominal value list on line {number}: {raw!r}")
                    values = [_unquote(v) for v in _split_csv(kind[1:-1])]
                    attributes.append((name, values))
                else:
                    attributes.append((name, kind.split()[0].lower()))
            elif lower.startswith("@data"):
                in_data = True
            else:
                raise ValueError(f"unexpected header line {number}: {raw!r}")
            continue
        if line.startswith("{"):
            raise ValueError("sparse ARFF data rows are not supported")
        cells = _split_csv(line)
        if len(cells) != len(attributes):
            raise ValueError(
                f"data line {number} has {len(cells)} values but the header declares "
                f"{len(attributes)} attributes: {raw!r}"
            )
        rows.append(cells)
    if not attributes:
        raise ValueError("no @attribute found: not an ARFF file")
    return relation, attributes, rows


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _column(name: str, kind: str | list[str], cells: list[str]) -> np.ndarray:
    """Convert one feature column of raw cells to float64 (see the module's reading rules)."""
    for row, cell in enumerate(cells):
        if cell == "?":
            raise ValueError(f"missing value '?' in column {name!r}, data row {row}")
    if isinstance(kind, list):
        if all(_is_number(v) for v in kind):
            return np.array([float(c) for c in cells], dtype=np.float64)
        index = {v: k for k, v in enumerate(kind)}
        unknown = [c for c in cells if c not in index]
        if unknown:
            raise ValueError(f"column {name!r} has value {unknown[0]!r} not declared in {kind}")
        return np.array([index[c] for c in cells], dtype=np.float64)
    if kind not in _NUMERIC_TYPES:
        raise ValueError(f"column {name!r} has unsupported ARFF type {kind!r}")
    return np.array([float(c) for c in cells], dtype=np.float64)


def _data_dir() -> resources.abc.Traversable:
    return resources.files("arboretum.datasets").joinpath("data")


@functools.lru_cache(maxsize=None)
def _load_arrays(name: str) -> tuple[np.ndarray, np.ndarray, tuple[str, ...], tuple[str, ...]]:
    source = UCI_DATASETS[name]
    text = gzip.decompress(_data_dir().joinpath(source.filename).read_bytes()).decode("utf-8")
    _, attributes, rows = read_arff(text)
    *features, (label_name, label_kind) = attributes
    if not isinstance(label_kind, list):
        raise ValueError(f"bundled dataset {name!r}: the last attribute {label_name!r} is not nominal")
    columns = [_column(fname, fkind, [r[j] for r in rows]) for j, (fname, fkind) in enumerate(features)]
    X = np.ascontiguousarray(np.stack(columns, axis=1))
    index = {v: k for k, v in enumerate(label_kind)}
    y = np.array([index[r[-1]] for r in rows], dtype=np.int64)
    X.flags.writeable = False
    y.flags.writeable = False
    return X, y, tuple(f for f, _ in features), tuple(label_kind)


def _describe(name: str, X: np.ndarray, y: np.ndarray, target_names: tuple[str, ...]) -> str:
    source = UCI_DATASETS[name]
    counts = np.bincount(y, minlength=len(target_names))
    distinct = [int(np.unique(X[:, j]).size) for j in range(X.shape[1])]
    lines = [
        source.title,
        "=" * len(source.title),
        "",
        f"Samples: {X.shape[0]}",
        f"Features: {X.shape[1]} numeric (distinct values per feature: {distinct})",
        f"Classes: {len(target_names)} ("
        + ", ".join(f"{t}: {c}" for t, c in zip(target_names, counts)) + ")",
        "",
        source.notes,
        "",
        "Provenance",
        "----------",
        f"File copied unchanged (then gzipped) from {source.repository}, {source.path},",
        f"commit {source.commit} (sha256 of the uncompressed file {source.sha256}).",
        f"Licence: {source.licence}.",
        "Used by the BCART-PCFG paper (Sullivan, Tiwari, Thrun & Piech), Tables 1-3.",
    ]
    return "\n".join(lines)


def load_uci(name: str, return_X_y: bool = False) -> Bunch | tuple[np.ndarray, np.ndarray]:
    """Load one bundled UCI dataset.

    Parameters
    ----------
    name : {"caesarian", "haberman", "iris", "vertebral"}
    return_X_y : bool, default=False
        Return ``(X, y)`` instead of a :class:`~sklearn.utils.Bunch`.

    Returns
    -------
    data : Bunch
        ``data`` (float64 array of shape (n_samples, n_features)),
        ``target`` (int64 class indices), ``feature_names``,
        ``target_names`` (declared class values, in index order), ``DESCR``
        (shape, class counts and provenance), ``name`` and ``filename``.
    (X, y) : tuple of ndarray
        If ``return_X_y``; fresh, writable copies.

    Raises
    ------
    ValueError
        If ``name`` is not a bundled UCI dataset.
    """
    if name not in UCI_DATASETS:
        raise ValueError(f"unknown UCI dataset {name!r}; available: {', '.join(list_uci_datasets())}")
    X_cached, y_cached, feature_names, target_names = _load_arrays(name)
    X, y = X_cached.copy(), y_cached.copy()
    if return_X_y:
        return X, y
    return Bunch(
        data=X,
        target=y,
        feature_names=list(feature_names),
        target_names=list(target_names),
        DESCR=_describe(name, X, y, target_names),
        name=name,
        filename=str(_data_dir().joinpath(UCI_DATASETS[name].filename)),
    )


# ---------------------------------------------------------------------------
# Hidden XOR
# ---------------------------------------------------------------------------


def make_hidden_xor(
    n_samples: int = 256,
    n_features: int = 20,
    n_relevant: int = 4,
    random_state: int | np.random.Generator | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The "hidden XOR" data of the BCART-PCFG paper.

    Every feature is an independent fair coin flip; the label is the parity
    (XOR) of the first ``n_relevant`` features, so the others are pure noise.
    With ``n_relevant=4`` the perfect tree has 16 leaves (31 nodes).

    Parameters
    ----------
    n_samples : int, default=256
    n_features : int, default=20
    n_relevant : int, default=4
        Number of leading features whose parity is the label,
        ``1 <= n_relevant <= n_features``.
    random_state : int, numpy Generator or None
        Seed of ``numpy.random.default_rng``.  The features are drawn with
        ``default_rng(seed).integers(0, 2, (n_samples, n_features))`` exactly
        as in the spec's reproduction, so seeds give the same data.

    Returns
    -------
    X : ndarray of uint8, shape (n_samples, n_features)
    y : ndarray of int64, shape (n_samples,)
    """
    for value, label, low in ((n_samples, "n_samples", 1), (n_features, "n_features", 1),
                              (n_relevant, "n_relevant", 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(f"{label} must be an integer >= {low}; got {value!r}")
    if n_relevant > n_features:
        raise ValueError(f"n_relevant must be <= n_features={n_features}; got {n_relevant}")
    rng = random_state if isinstance(random_state, np.random.Generator) else np.random.default_rng(random_state)
    X = rng.integers(0, 2, (int(n_samples), int(n_features))).astype(np.uint8)
    y = (np.bitwise_xor.reduce(X[:, :n_relevant], axis=1) & 1).astype(np.int64)
    return X, y
