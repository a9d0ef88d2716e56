"""docs/python-api.md runs as written: every ```python block prints the ```text block under it.

Each block runs on its own (a fresh namespace, from the repository root, as a reader would paste
it) and what it prints must equal the output the page shows, line for line. After a change
that moves a number on purpose, ``python tests/unit/test_python_api_doc.py --write`` puts the
new outputs into the page.
"""

from __future__ import annotations

import contextlib
import difflib
import io
import os
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "python-api.md"
#: a fenced block: its language and its text
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.S | re.M)


def examples(text: str) -> list[tuple[str, str, str, tuple[int, int]]]:
    """``(heading, code, expected output, span of the output block's text)`` for every python block.

    Raises ValueError when a python block is not followed directly by a ``text`` block.
    """
    blocks = list(FENCE.finditer(text))
    out = []
    for i, m in enumerate(blocks):
        if m.group(1) != "python":
            continue
        nxt = blocks[i + 1] if i + 1 < len(blocks) else None
        if nxt is None or nxt.group(1) != "text" or text[m.end():nxt.start()].strip():
            line = text[:m.start()].count("\n") + 1
            raise ValueError(f"docs/python-api.md:{line}: a python block without its ```text output right under it")
        heading = re.findall(r"^## (.+)$", text[:m.start()], re.M)
        out.append((heading[-1] if heading else "top", m.group(2), nxt.group(2), nxt.span(2)))
    return out


def run_block(code: str) -> str:
    """What ``code`` prints, run from the repository root in a fresh namespace."""
    buf = io.StringIO()
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(buf):
            exec(compile(code, str(PAGE), "exec"), {"__name__": "__main__"})
    finally:
        os.chdir(cwd)
    return buf.getvalue()


EXAMPLES = examples(PAGE.read_text())


def test_the_page_has_the_examples_it_promises():
    """An example per thing the command line does: the call each one makes is on the page."""
    for code_word in ("load_cluster", "run_scenario", "collective_table", "plan_run", "run_study", "fit_files",
                      "check_profile", "render_results"):
        assert any(code_word in code for _, code, _, _ in EXAMPLES), f"no example calls {code_word}"


def test_a_block_without_output_is_refused():
    with pytest.raises(ValueError, match="without its ```text output"):
        examples("## x\n\n```python\nprint(1)\n```\n\nprose\n")


@pytest.mark.parametrize(("heading", "code", "expected"), [(h, c, e) for h, c, e, _ in EXAMPLES],
                         ids=[h for h, *_ in EXAMPLES])
def test_example_prints_what_the_page_shows(heading, code, expected):
    got = run_block(code)
    diff = "\n".join(difflib.unified_diff(expected.splitlines(), got.splitlines(), "docs/python-api.md", "printed",
                                          lineterm=""))
    assert got == expected, f"example {heading!r} prints something else than the page shows:\n{diff}"


def write() -> int:
    """Put what every block prints now under it in the page."""
    text = PAGE.read_text()
    for _, code, _, (a, b) in reversed(examples(text)):
        text = text[:a] + run_block(code) + text[b:]
    PAGE.write_text(text)
    return 0


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/unit/test_python_api_doc.py --write")
    sys.exit(write())
