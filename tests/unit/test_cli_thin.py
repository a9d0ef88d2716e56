"""The command line stays thin (issue 31): parse, one library call, render.

Every function under ``clustersim/cli/`` is parsed with :mod:`ast` and its body measured in
source lines, from the first statement after the docstring to its last line. The signature (a
typer command's parameter declarations run to dozens of lines and are not logic), the
docstring and the functions nested in it (each measured on its own: a ``register`` function
holds its commands) do not count. A body over :data:`MAX_BODY_LINES` fails the test unless the
function is a renderer, named ``render_*``, whose job is formatting a result that the library
computed.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CLI = Path(__file__).resolve().parents[2] / "clustersim" / "cli"
#: Most lines a CLI function's body may hold (renderers excepted).
MAX_BODY_LINES = 40

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _body_lines(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines of ``fn``'s body less its docstring and the functions (decorators included) nested in it."""
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    if not body:
        return 0
    lines = set(range(body[0].lineno, fn.end_lineno + 1))
    for node in ast.walk(fn):
        if node is not fn and isinstance(node, _FUNCTIONS):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            lines -= set(range(start, node.end_lineno + 1))
    return len(lines)


def function_lengths(source: str) -> list[tuple[str, int, int]]:
    """``(qualified name, first line, body lines)`` of every function in ``source``, nested ones included."""
    out = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, _FUNCTIONS):
                name = prefix + child.name
                out.append((name, child.lineno, _body_lines(child)))
                visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return out


def offenders(root: Path = CLI, limit: int = MAX_BODY_LINES) -> list[str]:
    """``file:line name: N lines`` for every non-renderer function of ``root`` whose body is over ``limit``."""
    bad = []
    for path in sorted(root.rglob("*.py")):
        for name, line, n in function_lengths(path.read_text()):
            if n > limit and not name.rsplit(".", 1)[-1].startswith("render_"):
                bad.append(f"{path.relative_to(root.parents[1])}:{line} {name}: {n} lines (limit {limit})")
    return bad


def test_cli_functions_are_thin():
    bad = offenders()
    assert not bad, ("CLI functions over the limit (move the logic into the library, or name a pure "
                     "formatter render_*):\n" + "\n".join(bad))


_LONG_BODY = "\n".join(f"    x{i} = {i}" for i in range(41))


@pytest.mark.parametrize(("source", "expected"), [
    # 41 statements: one over
    (f"def long():\n    '''doc'''\n{_LONG_BODY}\n", {"long": 41}),
    # a long signature and docstring do not count
    ("def cmd(\n" + "".join(f"    a{i}: int = 0,\n" for i in range(60)) + ") -> None:\n    '''doc\n\n    more\n    '''\n"
     "    return None\n", {"cmd": 1}),
    # a nested command is measured on its own, not as part of its register function
    ("def register(app):\n    @app.command()\n    def inner():\n" + _LONG_BODY.replace("    ", "        ") + "\n    return app\n",
     {"register": 1, "register.inner": 41}),
])
def test_the_measure(source, expected):
    """The scanner itself: docstring and signature excluded, nested functions apart."""
    assert {name: n for name, _, n in function_lengths(source)} == expected


def test_renderers_are_exempt_and_others_are_not(tmp_path):
    pkg = tmp_path / "clustersim" / "cli"
    pkg.mkdir(parents=True)
    (pkg / "m.py").write_text(f"def render_table(d):\n{_LONG_BODY}\n\ndef _table(d):\n{_LONG_BODY}\n")
    assert offenders(pkg) == ["clustersim/cli/m.py:44 _table: 41 lines (limit 40)"], offenders(pkg)
