"""``clustersim ARGS`` run inside the test process, for tests that call the CLI many times.

Importable from every test file (pytest puts ``tests/`` on ``sys.path`` with its conftest).
"""

from __future__ import annotations

import contextlib
import io


def run_cli(*args: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``clustersim ARGS`` in this process; an exception other than
    the CLI's own exit propagates and fails the test (a traceback a user would see)."""
    from clustersim.cli import main

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return code, out.getvalue(), err.getvalue()
