"""Every code block of the README runs, and prints what the README shows.

The README's fenced blocks are read in order:

* ``python`` blocks run one after the other in one namespace (a later block may use what an
  earlier one defined, as a reader would), in a temporary working directory, with matplotlib's
  Agg backend;
* a ``text`` block right after a ``python`` block is that block's output: every line it shows must
  be printed, in that order and consecutively (the block may print more after or before it);
* ``sh`` blocks hold commands: ``arboretum ...`` lines run through :func:`arboretum.cli.main` in the
  same directory (so they see the files the python blocks wrote) and must exit with 0; ``make X``
  lines must name a target of the Makefile; ``python -m benchmarks.run X ...`` lines must name an
  experiment and options that the runner accepts. Any other command is an error, so nothing in the
  README goes unchecked.

``python tests/test_readme.py --update`` rewrites the ``text`` blocks with what the python blocks
print now (review the diff before committing it).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import sys
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.S | re.M)


@dataclass
class Block:
    index: int
    lang: str
    code: str
    line: int  #: line number of the opening fence in README.md
    start: int  #: character offsets of the code in the README text
    end: int
    output: str | None = None  #: the text block shown after a python block
    output_block: "Block | None" = None
    printed: str = ""
    error: str | None = None
    results: list = field(default_factory=list)


def read_blocks(text: str) -> list[Block]:
    blocks = []
    for i, m in enumerate(FENCE.finditer(text)):
        blocks.append(Block(i, m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1, m.start(2), m.end(2)))
    for prev, nxt in zip(blocks, blocks[1:]):
        between = text[text.index("```", prev.end) + 4: nxt.start - len(nxt.lang) - 4]
        if prev.lang == "python" and nxt.lang == "text" and not between.strip():
            prev.output, prev.output_block = nxt.code, nxt
    return blocks


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.strip("\n").splitlines()]


def shows(printed: str, shown: str) -> bool:
    """True when the lines of ``shown`` appear consecutively in ``printed`` (trailing spaces ignored)."""
    want, got = _lines(shown), _lines(printed)
    return any(got[i: i + len(want)] == want for i in range(len(got) - len(want) + 1))


def _make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([A-Za-z][\w-]*)\s*:", text, re.M))


def _check_benchmark_line(args: list[str]) -> str | None:
    sys.path.insert(0, str(ROOT))
    try:
        from benchmarks.engine import ALIASES, EXPERIMENTS
    finally:
        sys.path.remove(str(ROOT))
    source = (ROOT / "benchmarks" / "run.py").read_text()
    if not args or args[0] not in EXPERIMENTS + tuple(ALIASES):
        return f"unknown experiment in {args}"
    unknown = [a for a in args[1:] if a.startswith("--") and f'"{a}"' not in source]
    return f"unknown options {unknown}" if unknown else None


def run_sh(block: Block) -> None:
    from arboretum import cli

    for raw in block.code.splitlines():
        args = shlex.split(raw, comments=True)
        if not args:
            continue
        if args[0] == "make":
            problem = None if args[1] in _make_targets() else f"no Makefile target {args[1]!r}"
        elif args[0] == "arboretum":
            out = io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    rc = cli.main(args[1:])
                except SystemExit as exc:  # argparse errors
                    rc = exc.code
            problem = None if rc == 0 else f"exit status {rc}:\n{out.getvalue()[-2000:]}"
        elif args[:3] == ["python", "-m", "benchmarks.run"]:
            problem = _check_benchmark_line(args[3:])
        else:
            problem = "a command this test does not know how to check"
        block.results.append((raw.strip(), problem))


def run_blocks(blocks: list[Block], directory: str, *, commands: bool = True) -> list[Block]:
    """Run the python blocks (and, with ``commands``, the sh blocks) in order, in ``directory``.

    Each python block's stdout goes to ``block.printed`` and a failure's traceback to ``block.error``;
    the blocks share one namespace, as a reader's session would.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    namespace: dict = {"__name__": "__readme__"}
    cwd = os.getcwd()
    os.chdir(directory)
    try:
        for block in blocks:
            if block.lang == "python":
                buf = io.StringIO()
                with contextlib.redirect_stdout(buf), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        exec(compile("\n" * block.line + block.code, str(README), "exec"), namespace)
                    except Exception:
                        block.error = traceback.format_exc(limit=-3)
                block.printed = buf.getvalue()
                plt.close("all")
            elif block.lang == "sh" and commands:
                run_sh(block)
    finally:
        os.chdir(cwd)
    return blocks


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    """Every block run in order, with what it printed and any error."""
    return run_blocks(read_blocks(README.read_text()), str(tmp_path_factory.mktemp("readme")))


BLOCKS = read_blocks(README.read_text())


def test_readme_starts_with_the_two_commands():
    first = BLOCKS[0]
    assert first.lang == "sh"
    assert [line.split()[:2] for line in first.code.strip().splitlines()] == [["make", "demo"], ["make", "test"]]


def test_every_block_is_checked():
    for block in BLOCKS:
        assert block.lang in {"python", "text", "sh"}, (
            f"README.md line {block.line}: a ```{block.lang} block; use python, text (output) or sh"
        )
        if block.lang == "text":
            assert any(b.output_block is block for b in BLOCKS), (
                f"README.md line {block.line}: a text block that follows no python block"
            )


@pytest.mark.parametrize("index", [b.index for b in BLOCKS if b.lang == "python"],
                         ids=lambda i: f"line{BLOCKS[i].line}")
def test_python_block_runs_and_prints_what_is_shown(ran, index):
    block = ran[index]
    assert block.error is None, f"README.md line {block.line}:\n{block.error}"
    if block.output is not None:
        assert shows(block.printed, block.output), (
            f"README.md line {block.line} printed\n{block.printed}\nbut the README shows\n{block.output}"
        )


@pytest.mark.parametrize("index", [b.index for b in BLOCKS if b.lang == "sh"], ids=lambda i: f"line{BLOCKS[i].line}")
def test_sh_block_commands_work(ran, index):
    block = ran[index]
    assert block.results, f"README.md line {block.line}: no command"
    failed = [f"{cmd}: {problem}" for cmd, problem in block.results if problem]
    assert not failed, f"README.md line {block.line}:\n" + "\n".join(failed)


def test_the_first_example_is_certified(ran):
    first = next(b for b in ran if b.lang == "python")
    assert "-63.2971" in first.printed and "True" in first.printed


def _update() -> None:  # pragma: no cover - a maintainer's tool
    """Rewrite the README's output blocks with what the python blocks print now."""
    import tempfile

    text = README.read_text()
    edits = []
    for block in run_blocks(read_blocks(text), tempfile.mkdtemp(), commands=False):
        if block.error is not None:
            print(f"README.md line {block.line} failed; its output block is left as it is:\n{block.error}",
                  file=sys.stderr)
        elif block.output_block is not None:
            out = "\n".join(_lines(block.printed)) + "\n"
            edits.append((block.output_block.start, block.output_block.end, out))
    for start, end, out in reversed(edits):
        text = text[:start] + out + text[end:]
    README.write_text(text)
    print(f"rewrote {len(edits)} output blocks of {README}")


if __name__ == "__main__":  # pragma: no cover
    if sys.argv[1:] == ["--update"]:
        _update()
    else:
        sys.exit(pytest.main([__file__, "-q"]))
