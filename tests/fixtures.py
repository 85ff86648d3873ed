"""Formula-defined data sets and oracle values of spec-000 §7.2 (MAPTree).

Every fixture function returns ``(X, y)`` with ``X`` a ``uint8`` 0/1 matrix
and ``y`` an ``int64`` vector of class indices.  ``FIXTURE_ORACLES`` lists the
spec's table of exact results; costs are ``-log P(T, Y | X)`` in nats.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np
from numpy.typing import NDArray

Data = tuple[NDArray[np.uint8], NDArray[np.int64]]


def _bits(values: NDArray[np.int64], n_bits: int) -> NDArray[np.uint8]:
    """Matrix whose column ``j`` is bit ``j`` of ``values``."""
    return np.stack([(values >> j) & 1 for j in range(n_bits)], axis=1).astype(np.uint8)


def fixture_a() -> Data:
    """A -- XOR-3 x4: N=32, F=3, x_j = bit j of (r mod 8), y = x_0 XOR x_1."""
    X = _bits(np.arange(32) % 8, 3)
    y = (X[:, 0] ^ X[:, 1]).astype(np.int64)
    return X, y


def fixture_b() -> Data:
    """B -- AND-OR with noise: N=64, F=6, y = x_0 AND (x_1 OR x_2), flipped at rows 5, 17, 42."""
    X = _bits(np.arange(64), 6)
    y = (X[:, 0] & (X[:, 1] | X[:, 2])).astype(np.int64)
    y[[5, 17, 42]] ^= 1
    return X, y


def fixture_c() -> Data:
    """C -- duplicated rows with conflicting labels: N=16, F=2."""
    rows = [(0, 0)] * 6 + [(0, 1)] * 4 + [(1, 0)] * 4 + [(1, 1)] * 2
    labels = [0, 0, 0, 1, 1, 1] + [1, 1, 1, 1] + [0, 0, 0, 0] + [0, 1]
    return np.array(rows, dtype=np.uint8), np.array(labels, dtype=np.int64)


def fixture_d() -> Data:
    """D -- all rows identical: N=5, F=3, every row (0, 1, 1), y = (1, 1, 0, 1, 1)."""
    X = np.tile(np.array([0, 1, 1], dtype=np.uint8), (5, 1))
    return X, np.array([1, 1, 0, 1, 1], dtype=np.int64)


def fixture_e() -> Data:
    """E -- 3-parity: N=16, F=4, x_j = bit j of i, y = x_0 XOR x_1 XOR x_2."""
    X = _bits(np.arange(16), 4)
    y = (X[:, 0] ^ X[:, 1] ^ X[:, 2]).astype(np.int64)
    return X, y


def fixture_h() -> Data:
    """H -- hash-collision trap: N=128, F=3; x_0 and x_1 differ by swapping samples 63 and 127."""
    i = np.arange(128)
    x1 = (i % 3 == 0).astype(np.uint8)
    x0 = x1.copy()
    x0[63] = 0
    x0[127] = 1
    x2 = (i % 2).astype(np.uint8)
    X = np.stack([x0, x1, x2], axis=1)
    return X, x1.astype(np.int64)


FIXTURES: dict[str, Callable[[], Data]] = {
    "A": fixture_a,
    "B": fixture_b,
    "C": fixture_c,
    "D": fixture_d,
    "E": fixture_e,
    "H": fixture_h,
}

#: Number of non-degenerate trees of the enumerable fixtures (spec §7.1, §7.2).
FIXTURE_TREE_COUNTS: dict[str, int] = {"A": 244, "C": 9, "D": 1, "E": 238145}


def _full_depth3_trees() -> frozenset[str]:
    """The 12 complete depth-3 trees on three features (each path uses every feature once)."""
    trees = set()
    for root in range(3):
        others = [f for f in range(3) if f != root]
        for left in others:
            for right in others:
                left_last = 3 - root - left
                right_last = 3 - root - right
                left_tree = f"(({left_last}){left}({left_last}))"
                right_tree = f"(({right_last}){right}({right_last}))"
                trees.add(f"({left_tree}{root}{right_tree})")
    return frozenset(trees)


class FixtureOracle(NamedTuple):
    """One row of the spec-000 §7.2 table.

    Attributes
    ----------
    fixture : str
        Key into :data:`FIXTURES`.
    alpha, beta : float
        Chipman prior parameters.
    rho : tuple of float
        Dirichlet concentrations (class-index order; all listed values are symmetric).
    opt : float
        ``OPT``, the minimal cost (10 decimals in the spec).
    co_optimal : frozenset of str or None
        The complete set of co-optimal MAP trees when the spec lists it.
    n_co_optimal : int or None
        Number of co-optimal trees (``None`` when the spec does not give it).
    h_root : float
        Perfect Split heuristic at the root (6 decimals).
    root_leaf_cost : float
        Cost of the single-leaf tree (6 decimals; ``opt`` where the spec says "= OPT").
    """

    fixture: str
    alpha: float
    beta: float
    rho: tuple[float, float]
    opt: float
    co_optimal: frozenset[str] | None
    n_co_optimal: int | None
    h_root: float
    root_leaf_cost: float


_XOR_STUMPS = frozenset({"((1)0(1))", "((0)1(0))"})
_RHO_25 = (2.5, 2.5)
_RHO_1 = (1.0, 1.0)

FIXTURE_ORACLES: list[FixtureOracle] = [
    FixtureOracle("A", 0.95, 0.5, _RHO_25, 19.1253738333, _XOR_STUMPS, 2, 9.049153, 26.220107),
    FixtureOracle("A", 0.95, 0.5, _RHO_1, 15.3013988771, _XOR_STUMPS, 2, 5.717720, 26.706479),
    FixtureOracle("A", 0.5, 4.0, _RHO_25, 22.7471667825, _XOR_STUMPS, 2, 9.691007, 23.917522),
    FixtureOracle("A", 0.999, 0.1, _RHO_25, 19.4593435678, _full_depth3_trees(), 12, 8.998860, 30.132130),
    FixtureOracle("B", 0.95, 0.5, _RHO_25, 31.1180671038, frozenset({"(0((2)1))"}), 1, 11.975304, 47.264118),
    FixtureOracle("B", 0.95, 0.5, _RHO_1, 27.3838803124, frozenset({"(0((2)1))"}), 1, 6.998269, 47.702954),
    FixtureOracle("B", 0.5, 4.0, _RHO_25, 30.6985465313, frozenset({"(0)"}), 1, 12.617158, 44.961533),
    FixtureOracle("B", 0.999, 0.1, _RHO_25, 35.3223397222, frozenset({"(0)"}), 1, 11.925011, 51.176141),
    FixtureOracle("C", 0.95, 0.5, _RHO_25, 11.7862264767, _XOR_STUMPS, 2, 6.357730, 14.841410),
    FixtureOracle("C", 0.95, 0.5, _RHO_1, 11.4924519610, _XOR_STUMPS, 2, 4.445742, 15.291600),
    FixtureOracle("C", 0.5, 4.0, _RHO_25, 12.1455641072, frozenset({"(0)", "(1)"}), 2, 6.999584, 12.538825),
    FixtureOracle("C", 0.999, 0.1, _RHO_25, 11.0808303500, _XOR_STUMPS, 2, 6.307437, 18.753433),
    FixtureOracle("D", 0.95, 0.5, _RHO_25, 3.3296037285, frozenset({""}), 1, 2.793110, 3.3296037285),
    FixtureOracle("D", 0.5, 4.0, _RHO_25, 3.3296037285, frozenset({""}), 1, 3.329604, 3.3296037285),
    FixtureOracle("D", 0.999, 0.1, _RHO_25, 3.3296037285, frozenset({""}), 1, 2.742818, 3.3296037285),
    FixtureOracle("D", 0.95, 0.5, _RHO_1, 3.4011973817, frozenset({""}), 1, 2.353878, 3.4011973817),
    FixtureOracle("E", 0.95, 0.5, _RHO_25, 14.8414102061, frozenset({""}), 1, 6.357730, 14.8414102061),
    FixtureOracle("E", 0.95, 0.5, _RHO_1, 15.2915999182, frozenset({""}), 1, 4.445742, 15.2915999182),
    FixtureOracle("E", 0.5, 4.0, _RHO_25, 12.5388251131, frozenset({""}), 1, 6.999584, 12.5388251131),
    FixtureOracle("E", 0.999, 0.1, _RHO_25, 18.7534332115, frozenset({""}), 1, 6.307437, 18.7534332115),
    FixtureOracle("H", 0.95, 0.5, _RHO_25, 18.3763939626, frozenset({"(1)"}), 1, 15.049813, 86.607578),
    FixtureOracle("H", 0.95, 0.5, _RHO_1, 11.6164108316, frozenset({"(1)"}), 1, 8.289830, 86.961340),
    FixtureOracle("H", 0.5, 4.0, _RHO_25, 16.8537769271, frozenset({"(1)"}), 1, 15.691667, 84.304993),
    FixtureOracle("H", 0.999, 0.1, _RHO_25, 21.4775701180, frozenset({"(1)"}), 1, 14.999521, 90.519601),
]

#: Runner-up trees quoted in the table: (fixture, alpha, beta, rho, tree, cost).
FIXTURE_RUNNERS_UP: list[tuple[str, float, float, tuple[float, float], str, float]] = [
    ("E", 0.95, 0.5, _RHO_25, "(0)", 15.772361),
    ("E", 0.999, 0.1, _RHO_25, "(0)", 18.873537),
    ("H", 0.95, 0.5, _RHO_25, "((1)0(1))", 21.2238811946),
]
