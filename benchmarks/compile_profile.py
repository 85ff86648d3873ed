#!/usr/bin/env python
"""Where a model family's cold numba compile goes: seconds per compiled function, and LLVM's share.

Run it with an empty cache, one family a process (the numbers are only meaningful cold)::

    NUMBA_CACHE_DIR=$(mktemp -d) python benchmarks/compile_profile.py maptree-classification

Prints the warm-up's wall seconds (``arboretum._compile.warm_up``), the seconds numba held its
LLVM lock (optimisation and machine code), and one line per compiled specialisation: its
*exclusive* seconds (its own typing, lowering and LLVM work, its callees' compiles taken out),
its inclusive seconds, and its argument types.  The rest of the warm-up is numba's front end
(bytecode analysis, type inference, lowering to LLVM IR), which runs in Python.

With ``--phases`` it prints instead the exclusive seconds of each phase of the compiles (type
inference, lowering to LLVM IR, LLVM's passes and machine code, the cache), from timers put around
the numba and llvmlite methods that do them::

    NUMBA_CACHE_DIR=$(mktemp -d) python benchmarks/compile_profile.py maptree-classification --phases
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


def phases(family: str) -> None:
    import collections

    import llvmlite.binding as llb
    from numba.core import caching, typeinfer
    from numba.core import codegen as cg
    from numba.core import lowering as lw

    seconds: dict[str, float] = collections.defaultdict(float)
    calls: collections.Counter = collections.Counter()
    nested = [0.0]

    def timed(owner, name: str, label: str) -> None:
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):
            t0 = time.perf_counter()
            nested.append(0.0)
            try:
                return original(*args, **kwargs)
            finally:
                total = time.perf_counter() - t0
                seconds[label] += total - nested.pop()  # exclusive: the timed calls inside taken out
                calls[label] += 1
                nested[-1] += total

        setattr(owner, name, wrapper)

    timed(typeinfer.TypeInferer, "propagate", "type inference (and the compiles it starts)")
    timed(lw.BaseLower, "lower", "lowering to LLVM IR (Python)")
    timed(cg.CPUCodeLibrary, "add_ir_module", "LLVM IR to text")
    timed(llb, "parse_assembly", "LLVM: parsing the IR")
    timed(cg.CPUCodeLibrary, "_optimize_functions", "LLVM: per-function passes")
    timed(cg.CPUCodeLibrary, "finalize", "LLVM: linking callees")
    timed(cg.CPUCodeLibrary, "_optimize_final_module", "LLVM: module optimisation")
    timed(cg.CPUCodeLibrary, "_finalize_final_module", "LLVM: machine code")
    timed(caching.Cache, "save_overload", "saving to the cache")
    from arboretum import _compile

    t0 = time.perf_counter()
    _compile.warm_up(family)
    wall = time.perf_counter() - t0
    print(f"{family}: warm-up {wall:.2f} s, {sum(seconds.values()):.2f} s of it in these phases")
    for label, s in sorted(seconds.items(), key=lambda kv: -kv[1]):
        print(f"{s:7.2f} s {calls[label]:6d} calls  {label}")


def main() -> None:
    from arboretum import _compile  # importing arboretum registers every family

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("family", choices=_compile.families())
    ap.add_argument("--top", type=int, default=25, help="functions listed (default 25)")
    ap.add_argument("--phases", action="store_true", help="seconds per compile phase instead of per function")
    args = ap.parse_args()
    if args.phases:
        phases(args.family)
    else:
        profile(args.family, args.top)


if __name__ == "__main__":
    main()
