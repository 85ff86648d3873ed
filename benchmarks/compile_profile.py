#!/usr/bin/env python
"""Where a model family's cold numba compile goes: seconds per compiled function, and LLVM's share.

Run it with an empty cache, one family a process (the numbers are only meaningful cold)::

    NUMBA_CACHE_DIR=$(mktemp -d) python benchmarks/compile_profile.py maptree-classification

Prints the warm-up's wall seconds (``arboretum._compile.warm_up``), the seconds numba held its
LLVM lock (optimisation and machine code), and one line per compiled specialisation: its
*exclusive* seconds (its own typing, lowering and LLVM work, its callees' compiles taken out),
its inclusive seconds, and its argument types.  The rest of the warm-up is numba's front end
(bytecode analysis, type inference, lowering to LLVM IR), which runs in Python.
"""

from __future__ import annotations

import argparse
import time

def profile(family: str, top: int) -> None:
    from numba.core import event

    stack: list[list] = []
    rows: list[tuple[float, float, str, str]] = []

    class Compiles(event.Listener):
        def on_start(self, e):
            fn = e.data["dispatcher"].py_func
            stack.append([f"{fn.__module__}.{fn.__qualname__}", time.perf_counter(), 0.0, str(e.data["args"])])

        def on_end(self, e):
            name, t0, children, args = stack.pop()
            total = time.perf_counter() - t0
            rows.append((total - children, total, name, args))
            if stack:
                stack[-1][2] += total

    from arboretum import _compile

    with event.install_listener("numba:compile", Compiles()), event.install_recorder("numba:llvm_lock") as llvm:
        t0 = time.perf_counter()
        _compile.warm_up(family)
        wall = time.perf_counter() - t0
    held, depth, start = 0.0, 0, 0.0
    for ts, e in llvm.buffer:
        if e.is_start:
            start = ts if depth == 0 else start
            depth += 1
        else:
            depth -= 1
            held += (ts - start) if depth == 0 else 0.0
    print(f"{family}: warm-up {wall:.2f} s, {len(rows)} specialisations compiled, LLVM lock held {held:.2f} s")
    print(f"{'excl s':>7} {'incl s':>7}  function  (argument types)")
    for excl, incl, name, args in sorted(rows, key=lambda r: -r[0])[:top]:
        print(f"{excl:7.2f} {incl:7.2f}  {name}  {args[:100]}")


def main() -> None:
    from arboretum import _compile  # importing arboretum registers every family

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("family", choices=_compile.families())
    ap.add_argument("--top", type=int, default=25, help="functions listed (default 25)")
    args = ap.parse_args()
    profile(args.family, args.top)


if __name__ == "__main__":
    main()
