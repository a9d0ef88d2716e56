"""``clustersim ARGS`` run inside the test process, for tests that call the CLI many times.

Importable from every test file (pytest puts ``tests/`` on ``sys.path`` with its conftest).
"""

from __future__ import annotations

import contextlib
import io
import os
from dataclasses import dataclass
from pathlib import Path


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


def _mapped_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


@contextlib.contextmanager
def limited(seconds: int = 60, memory_bytes: int = 2 * 2**30):
    """Run a block under a time limit (SIGALRM -> ``TimeoutError``) and an address-space limit of
    ``memory_bytes`` above what the process maps now (RLIMIT_AS -> ``MemoryError``), both restored
    afterwards: a case that used to hang (a FIFO's ``open``) or run away fails its test instead of
    taking the run down, without the second a subprocess costs."""
    import resource
    import signal

    def expire(*_a: object) -> None:
        raise TimeoutError(f"ran past {seconds} s")

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = _mapped_bytes() + memory_bytes
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@dataclass
class CliResult:
    """What ``clustersim ARGS`` gave: the fields are named as :class:`subprocess.CompletedProcess`'s, so a
    test written against a subprocess reads the same in-process."""

    returncode: int
    stdout: str
    stderr: str


def clustersim(*args: str, cwd: str | Path | None = None, env: dict[str, str] | None = None) -> CliResult:
    """``clustersim ARGS`` in this process, optionally in folder ``cwd`` and with ``env`` added to the
    environment (both restored afterwards); see :func:`run_cli`.

    It is the subprocess call without the interpreter start and the imports (about a second each on a
    small machine). Tests of the real process (the ``python -m clustersim`` entry point, exit codes as
    a shell sees them) keep a subprocess.
    """
    saved = {k: os.environ.get(k) for k in env or {}}
    try:
        os.environ.update(env or {})
        with contextlib.chdir(cwd) if cwd is not None else contextlib.nullcontext():
            code, out, err = run_cli(*(str(a) for a in args))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return CliResult(code, out, err)
