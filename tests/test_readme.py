"""The README's first example runs and prints what the README shows."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_starts_with_the_two_commands():
    text = README.read_text()
    first_block = re.search(r"```\n(.*?)```", text, re.S).group(1)
    assert [line.split()[:2] for line in first_block.strip().splitlines()] == [
        ["make", "demo"],
        ["make", "test"],
    ]


def test_readme_example_output_matches():
    text = README.read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    shown = re.search(r"```python\n.*?```\n\n```\n(.*?)```", text, re.S).group(1)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(code, "README.md", "exec"), {})
    out = buf.getvalue()
    assert shown.strip() in out
    assert "-63.2971" in out and "True" in out
