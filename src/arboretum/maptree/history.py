"""The anytime record of a MAPTree search: the best tree's log posterior and the bound over time.

:class:`SearchHistory` is filled by :class:`~arboretum.maptree.search.AndOrSearch`
between calls of the search kernel (and after each seeded tree), in plain
Python, so the kernel itself does no bookkeeping.  A row is kept whenever the
incumbent (``-UB`` of the root) or the bound (``-LB`` of the root) changed
since the previous row; :meth:`SearchHistory.to_array` adds the current state
as the last row.  The rows are what :func:`arboretum.plot.plot_anytime` draws.
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

__all__ = ["HISTORY_DTYPE", "MAX_HISTORY_ROWS", "SearchHistory"]

#: One row of a search history: seconds since the search started, expansions so far, the best tree's
#: log posterior (``-UB`` of the root) and the bound no tree exceeds (``-LB`` of the root).
HISTORY_DTYPE = np.dtype(
    [
        ("time", np.float64),
        ("n_expansions", np.int64),
        ("log_posterior", np.float64),
        ("log_posterior_bound", np.float64),
    ]
)
#: Most rows a history holds; past it the rows are thinned to half (see :meth:`SearchHistory._thin`).
MAX_HISTORY_ROWS = 4096

_Row = tuple[float, int, float, float]


class SearchHistory:
    """Rows of ``(time, n_expansions, log_posterior, log_posterior_bound)``, one per change.

    The clock starts at :meth:`start` (the first seeded tree or the first
    chunk of search).  Memory is bounded: when more than ``max_rows`` rows
    have been kept, they are thinned to at most half of that.  Thinning keeps
    the first row and every row where the best tree improved; of the rows
    where only the bound moved, it keeps those at least a factor ``1 +
    ratio`` later than the row kept before them, so they stay evenly spread
    on a logarithmic time axis, ``ratio`` doubling until the rows fit.  Only
    if the improvements alone are too many is the same rule applied to them.
    Later changes are recorded by the same rule and ratio, until the next
    thinning.  A thinned history is a subsequence of the full one: every row
    holds the exact values at its time.

    Parameters
    ----------
    max_rows : int, default=MAX_HISTORY_ROWS
        Most rows kept (at least 4).
    clock : callable, default=time.perf_counter
        Seconds, for the ``time`` field.
    """

    def __init__(self, max_rows: int = MAX_HISTORY_ROWS, clock: Callable[[], float] = time.perf_counter) -> None:
        if max_rows < 4:
            raise ValueError(f"max_rows must be at least 4; got {max_rows}")
        self.max_rows = int(max_rows)
        self._clock = clock
        self._origin: float | None = None
        self._rows: list[_Row] = []
        self._ratio = 0.0  # time ratio of the last thinning (0: never thinned)
        self._keep_improvements = True  # False once the improvements alone were too many

    def __len__(self) -> int:
        return len(self._rows)

    def elapsed(self) -> float:
        """Seconds since :meth:`start` (0 before it)."""
        return 0.0 if self._origin is None else self._clock() - self._origin

    def start(self, n_expansions: int, log_posterior: float, bound: float) -> None:
        """Start the clock and record the first row, unless already started."""
        if self._origin is None:
            self._origin = self._clock()
            self._rows.append((0.0, int(n_expansions), float(log_posterior), float(bound)))

    def observe(self, n_expansions: int, log_posterior: float, bound: float) -> None:
        """Record a row if the best tree or the bound changed since the last row.

        Once the rows have been thinned, a change is recorded only if the
        thinning would keep it: an improvement of the best tree (while they
        are all kept), or a row at least ``1 + ratio`` times later than the
        last.
        """
        rows = self._rows
        if self._origin is None:
            self.start(n_expansions, log_posterior, bound)
            return
        last = rows[-1]
        improved = last[2] != log_posterior
        if not improved and last[3] == bound:
            return
        now = self._clock() - self._origin
        thinned = self._ratio > 0.0
        if thinned and not (improved and self._keep_improvements) and now < last[0] * (1.0 + self._ratio):
            return
        rows.append((now, int(n_expansions), float(log_posterior), float(bound)))
        if len(rows) > self.max_rows:
            self._thin()

    def to_array(self, n_expansions: int, log_posterior: float, bound: float) -> np.ndarray:
        """The rows, then the current state as the last row, as an array of :data:`HISTORY_DTYPE`."""
        self.start(n_expansions, log_posterior, bound)
        rows = self._rows + [(self.elapsed(), int(n_expansions), float(log_posterior), float(bound))]
        return np.array(rows, dtype=HISTORY_DTYPE)

    def _thin(self) -> None:
        """Thin the rows to at most ``max_rows // 2`` (see the class docstring)."""
        rows, goal = self._rows, self.max_rows // 2
        n_improvements = sum(rows[i][2] != rows[i - 1][2] for i in range(1, len(rows)))
        keep_improvements = self._keep_improvements and n_improvements + 2 <= goal
        ratio = max(self._ratio, 1.0 / 256)
        while ratio < 1e12:
            out = _subsample(rows, ratio, keep_improvements)
            if len(out) <= goal:
                break
            ratio *= 2.0
        else:  # times that do not grow (a clock that stands still): every k-th row
            out = [rows[int(i)] for i in np.unique(np.linspace(0, len(rows) - 1, goal).round())]
        self._rows, self._ratio, self._keep_improvements = out, ratio, keep_improvements


def _subsample(rows: list[_Row], ratio: float, keep_improvements: bool) -> list[_Row]:
    """The first row, every improvement of the best tree (``keep_improvements``), and the rows at
    least ``1 + ratio`` times later than the last row kept before them."""
    out = [rows[0]]
    for i in range(1, len(rows)):
        row = rows[i]
        if (keep_improvements and row[2] != rows[i - 1][2]) or row[0] >= out[-1][0] * (1.0 + ratio):
            out.append(row)
    return out
