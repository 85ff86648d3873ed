"""Fuzzing the saved-model format: a damaged file loads or raises ModelFormatError, nothing else.

Every estimator of the contract (``tests/test_contract.py``) is fitted once on the mixed DataFrame and
saved with :func:`arboretum.io.dumps`; hypothesis then damages the document (a value replaced by
another JSON value, a key removed or added, an array's base64 text or shape changed, the text cut
short) and :func:`arboretum.io.loads` must either raise :class:`arboretum.ModelFormatError` or return
an estimator that predicts on the training frame (or refuses it with a ValueError, like any fitted
estimator given data it cannot read). A ``KeyError``, ``IndexError`` or ``TypeError`` traceback from
deep inside would be a bug of the loader's validation.
"""

from __future__ import annotations

import copy
import functools
import json
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import arboretum.io
from arboretum import LimitWarning, ModelFormatError

from test_contract import CASES, mixed_frame, targets

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10**6) | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)


@functools.lru_cache(maxsize=None)
def saved(name: str) -> str:
    case = CASES[name]
    df, y_class, y_real = mixed_frame(60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LimitWarning)
        est = case.make().fit(df, targets(case, y_class, y_real))
    return arboretum.io.dumps(est)


def _paths(doc, prefix=()):
    """Every (container, key) path of a JSON document."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield prefix + (k,)
            yield from _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield prefix + (i,)
            yield from _paths(v, prefix + (i,))


def _parent(doc, path):
    for key in path[:-1]:
        doc = doc[key]
    return doc


@st.composite
def damaged(draw, name):
    text = saved(name)
    doc = json.loads(text)
    n_edits = draw(st.integers(1, 3))
    for _ in range(n_edits):
        paths = list(_paths(doc))
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = _parent(doc, path)
        action = draw(st.sampled_from(["replace", "delete", "add", "perturb"]))
        key = path[-1]
        if action == "replace":
            parent[key] = draw(JSON_VALUES)
        elif action == "delete":
            del parent[key]
        elif action == "add" and isinstance(parent, dict):
            parent[draw(st.text(max_size=6))] = draw(JSON_VALUES)
        else:  # perturb a number, a string or the length of a list in place
            value = parent[key]
            if isinstance(value, bool):
                parent[key] = not value
            elif isinstance(value, (int, float)):
                parent[key] = value + draw(st.sampled_from([-1, 1, 7, -1000, 0.5]))
            elif isinstance(value, str):
                cut = draw(st.integers(0, len(value)))
                parent[key] = value[:cut] + draw(st.text(max_size=3))
            elif isinstance(value, list) and value:
                parent[key] = value[:-1] if draw(st.booleans()) else value + value[:1]
    out = json.dumps(doc)
    if draw(st.booleans()) and draw(st.integers(0, 9)) == 0:
        out = out[: draw(st.integers(0, len(out)))]
    return out


def check_loads(name: str, text: str) -> None:
    try:
        est = arboretum.io.loads(text)
    except ModelFormatError:
        return
    df, _, _ = mixed_frame(60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            est.predict(df)
        except ValueError:
            pass


@pytest.mark.parametrize("name", list(CASES))
def test_damaged_files_load_or_raise_model_format_error(name):
    @settings(max_examples=60, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(damaged(name))
    def run(text):
        check_loads(name, text)

    run()


def test_the_undamaged_files_load():
    for name in CASES:
        est = arboretum.io.loads(copy.copy(saved(name)))
        assert type(est).__name__ == name
