"""MAPTree's anytime record: ``history_`` of the estimators, ``SearchResult.history`` and its thinning."""

from __future__ import annotations

import json

import numpy as np
import pytest
from fixtures import FIXTURES

from arboretum import LimitWarning, MAPTreeClassifier, MAPTreeRegressor, load, save
from arboretum.datasets import load_dataset
from arboretum.exceptions import ModelFormatError
from arboretum.maptree import AndOrSearch
from arboretum.maptree.history import HISTORY_DTYPE, MAX_HISTORY_ROWS, SearchHistory

FIELDS = ("time", "n_expansions", "log_posterior", "log_posterior_bound")


def _check_history(h: np.ndarray) -> None:
    """The invariants every history has, whatever stopped the search."""
    assert isinstance(h, np.ndarray) and h.ndim == 1 and h.size >= 2
    assert h.dtype.names == FIELDS
    assert [h.dtype[f] for f in FIELDS] == [np.dtype(np.float64), np.dtype(np.int64)] + [np.dtype(np.float64)] * 2
    assert h["time"][0] == 0.0
    assert np.all(np.diff(h["time"]) >= 0)
    assert np.all(np.diff(h["n_expansions"]) >= 0)
    lp, ub = h["log_posterior"], h["log_posterior_bound"]
    tol = 1e-9 * np.maximum(1.0, np.abs(np.where(np.isfinite(ub), ub, 0.0)))
    assert np.all(np.diff(lp) >= -tol[1:])  # the best tree never gets worse (the last row is recomputed)
    assert np.all(np.diff(ub) <= 0)  # the bound never loosens
    assert np.all(lp <= ub + tol)


def _check_fitted(est) -> None:
    h = est.history_
    _check_history(h)
    assert h["log_posterior"][-1] == est.log_posterior_
    assert h["log_posterior_bound"][-1] == est.log_posterior_bound_
    assert h["n_expansions"][-1] == est.n_expansions_
    assert h["time"][-1] <= est.search_time_
    if est.optimal_:
        assert h["log_posterior_bound"][-1] == pytest.approx(h["log_posterior"][-1], rel=1e-12, abs=1e-9)
    else:
        assert h["log_posterior_bound"][-1] - h["log_posterior"][-1] == pytest.approx(est.gap_)


def test_dtype_matches_what_plot_anytime_reads():
    from arboretum.plot import HISTORY_FIELDS

    assert HISTORY_DTYPE.names == FIELDS == tuple(HISTORY_FIELDS)


def test_certified_fit_closes_the_gap():
    X, y = load_dataset("hepatitis", return_X_y=True)
    clf = MAPTreeClassifier().fit(X, y)
    assert clf.optimal_
    _check_fitted(clf)
    h = clf.history_
    assert h.size >= 10  # a curve, not just its ends
    assert h["n_expansions"][0] == 0
    assert h["log_posterior_bound"][0] - h["log_posterior"][0] > 10.0  # the gap it started with
    # The bound tightened step by step: most rows record a move of the bound.
    assert np.count_nonzero(np.diff(h["log_posterior_bound"]) < 0) >= h.size // 2


def test_time_limited_fit_has_a_history():
    X, y = load_dataset("tic-tac-toe", return_X_y=True)
    with pytest.warns(LimitWarning, match="time_limit"):
        clf = MAPTreeClassifier(time_limit=0.5).fit(X, y)
    assert not clf.optimal_ and clf.stop_reason_ == "time_limit"
    _check_fitted(clf)
    h = clf.history_
    assert h["time"][-1] >= 0.4  # the last row is the state at the stop
    assert h["log_posterior_bound"][-1] > h["log_posterior"][-1]


def test_max_expansions_zero_gives_the_start_and_the_end():
    X, y = FIXTURES["B"]()
    with pytest.warns(LimitWarning):
        clf = MAPTreeClassifier(max_expansions=0).fit(X, y)
    _check_fitted(clf)
    assert np.all(clf.history_["n_expansions"] == 0)


def test_seeded_trees_are_in_the_history():
    X, y = load_dataset("hepatitis", return_X_y=True)
    best = MAPTreeClassifier().fit(X, y)
    with pytest.warns(LimitWarning):
        clf = MAPTreeClassifier(initial_trees=[best.search_tree_], max_expansions=50).fit(X, y)
    _check_fitted(clf)
    h = clf.history_
    # First the root as a leaf, then, once the tree is seeded (before any search), the optimum.
    assert h["log_posterior"][0] < best.log_posterior_ - 1.0
    assert h["log_posterior"][1] == pytest.approx(best.log_posterior_, abs=1e-9)
    assert h["n_expansions"][1] <= best.search_tree_.n_nodes


def test_regressor_history():
    rng = np.random.default_rng(3)
    X = rng.integers(0, 2, size=(40, 5))
    y = np.where(X[:, 0] == 1, 2.0, -1.0) + np.where(X[:, 1] == 1, 0.5, 0.0) + 0.3 * rng.normal(size=40)
    reg = MAPTreeRegressor().fit(X, y)
    assert reg.optimal_
    _check_fitted(reg)
    with pytest.warns(LimitWarning):
        reg = MAPTreeRegressor(max_expansions=reg.n_expansions_ // 2).fit(X, y)
    assert not reg.optimal_
    _check_fitted(reg)


def test_search_result_history_spans_every_run():
    X, y = load_dataset("hepatitis", return_X_y=True)
    s = AndOrSearch(X, y, 2)
    first = s.run(max_expansions=20)
    second = s.run()
    assert second.optimal
    _check_history(first.history)
    _check_history(second.history)
    # The rows of the first run (but its end-of-run row) open the second run's history.
    n = first.history.size - 1
    assert np.array_equal(second.history[:n], first.history[:n])
    last = second.history[-1]
    assert last["log_posterior"] == -second.upper_bound
    assert last["log_posterior_bound"] == -second.lower_bound
    assert last["n_expansions"] == second.n_expansions


def test_save_load_round_trip(tmp_path):
    X, y = load_dataset("hepatitis", return_X_y=True)
    clf = MAPTreeClassifier().fit(X, y)
    path = tmp_path / "model.json"
    save(clf, path)
    again = load(path)
    assert again.history_.dtype == HISTORY_DTYPE
    assert np.array_equal(again.history_, clf.history_)
    # A saved history without one of its fields is refused, not loaded for plot_anytime to trip on.
    d = json.loads(path.read_text())
    body = d["fitted"]["history_"]["__structured__"]
    del body["names"][-1], body["columns"][-1]
    path.write_text(json.dumps(d))
    with pytest.raises(ModelFormatError, match="history_"):
        load(path)


# ---------------------------------------------------------------------------------------------
# SearchHistory: change detection and thinning
# ---------------------------------------------------------------------------------------------
def test_rows_only_on_change():
    h = SearchHistory()
    h.observe(0, -50.0, -10.0)  # starts the clock: the first row
    h.observe(3, -50.0, -10.0)  # nothing changed
    h.observe(5, -50.0, -12.0)
    h.observe(9, -40.0, -12.0)
    h.observe(11, -40.0, -12.0)
    a = h.to_array(12, -40.0, -12.0)
    assert a.dtype == HISTORY_DTYPE
    assert list(a["n_expansions"]) == [0, 5, 9, 12]  # the last row is the state now
    assert len(h) == 3  # ... and is not kept


class _Clock:
    """A clock that reads what the test sets."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _feed(max_rows: int, n: int, improve_every: int) -> tuple[SearchHistory, list[tuple]]:
    """A history fed ``n`` changes 1 ms apart, every ``improve_every``-th an improvement of the tree;
    and the rows an unbounded history would hold."""
    clock = _Clock()
    h = SearchHistory(max_rows=max_rows, clock=clock)
    h.start(0, -1000.0, 0.0)
    full, lp = [(0.0, 0, -1000.0, 0.0)], -1000.0
    for i in range(1, n + 1):
        clock.now = 0.001 * i
        if i % improve_every == 0:
            lp += 0.01
        h.observe(i, lp, -1e-3 * i)
        full.append((0.001 * i, i, lp, -1e-3 * i))
    return h, full


@pytest.mark.parametrize("improve_every", [7, 1])
def test_thinning_is_bounded_and_a_subsequence(improve_every):
    h, full = _feed(256, 5000, improve_every)
    kept = h._rows
    assert 64 <= len(kept) <= 256  # thinned to a useful curve, not to its ends
    assert kept[0] == full[0]
    index = {r[1]: r for r in full}
    assert all(index[r[1]] == r for r in kept)  # every row holds the true values at its time
    n = [r[1] for r in kept]
    assert n == sorted(n)
    _check_history(h.to_array(5001, full[-1][2], full[-1][3]))
    # 714 (or 5000) improvements do not fit: all rows are then sampled alike, spread evenly on a
    # log time axis (consecutive times at least the final ratio apart).
    t = np.array([r[0] for r in kept[1:]])
    assert np.all(t[1:] >= t[:-1] * (1.0 + h._ratio) - 1e-12)


def test_thinning_keeps_every_improvement_while_they_fit():
    h, full = _feed(512, 20000, 200)  # 100 improvements among 20000 moves of the bound
    kept = h._rows
    assert 128 <= len(kept) <= 512
    assert {r[2] for r in kept} == {r[2] for r in full}  # every value the best tree took
    assert all(r in kept for i, r in enumerate(full[1:], 1) if r[2] != full[i - 1][2])
    bound_only = np.array([r[0] for i, r in enumerate(kept[1:], 1) if r[2] == kept[i - 1][2]])
    assert bound_only.size > 64  # and the bound's curve between them


def test_max_history_rows_and_bad_cap():
    assert MAX_HISTORY_ROWS >= 1000
    with pytest.raises(ValueError, match="max_rows"):
        SearchHistory(max_rows=3)
