"""Shared pieces of the command line: consoles, JSON output, error handling."""

from __future__ import annotations

import contextlib
import functools
import json
import math
import sys
from typing import Any, Callable, Iterator, Optional

import typer

from rich.console import Console
from rich.markup import escape

from clustersim.errors import ClusterSimError

console = Console()
err_console = Console(stderr=True)


def _clean(obj: Any) -> Any:
    """Make an object JSON-safe: numpy scalars/arrays to Python, NaN/inf to None."""
    try:
        import numpy as np
    except ImportError:  # pragma: no cover
        np = None
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if np is not None:
        if isinstance(obj, np.ndarray):
            return _clean(obj.tolist())
        if isinstance(obj, np.generic):
            return _clean(obj.item())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def print_json(obj: Any) -> None:
    """Print exactly one JSON document on stdout."""
    sys.stdout.write(json.dumps(_clean(obj), indent=2) + "\n")
    sys.stdout.flush()


def fail(exc: ClusterSimError) -> None:
    """Report a user error on stderr and exit with status 2."""
    err_console.print(f"[bold red]error:[/] {escape(exc.message)}", highlight=False, markup=True, soft_wrap=True)
    raise SystemExit(2)


def _checked_callback(callback: Callable[..., Any], flags: dict[str, str]) -> Callable[..., Any]:
    @functools.wraps(callback)
    def run(*args: Any, **kwargs: Any) -> Any:
        for name, value in kwargs.items():
            values = value if isinstance(value, (list, tuple)) else [value]
            for v in values:
                if isinstance(v, float) and not math.isfinite(v):
                    raise ClusterSimError(f"must be a finite number, got {v}", field=flags.get(name, name))
        return callback(*args, **kwargs)

    return run


def finite_options(command: Any) -> Any:
    """Make every command under ``command`` (a click group) refuse NaN and infinite float options
    before its body runs: ``--nic-gbps nan`` would otherwise pass every ``x > 0`` check unseen
    (NaN compares false) and reach the results. Returns ``command``."""
    for sub in getattr(command, "commands", {}).values():
        finite_options(sub)
    if getattr(command, "callback", None) is not None and not getattr(command.callback, "_finite", False):
        flags = {p.name: (p.opts[0] if p.opts else p.name) for p in command.params}
        command.callback = _checked_callback(command.callback, flags)
        command.callback._finite = True
    return command


MAX_MEMORY_HELP = ("Refuse work whose estimated memory exceeds this (default 4GiB; e.g. 16GiB). Counts are "
                   "checked against it before anything is built.")
MAX_EVENTS_HELP = "Refuse simulations estimated to need more events than this (default 2000000)."
#: Largest ``--max-events``: 10^9 events need ~500 GB for their schedule (500 B each) and hours.
MAX_EVENTS_BOUND = 10**9
MAX_EVENTS_WHY = "500 GB of schedule at 500 B per event, and hours of simulation"


def max_memory_option() -> Any:
    """The ``--max-memory SIZE`` option (see :mod:`clustersim.budget`)."""
    return typer.Option(None, "--max-memory", help=MAX_MEMORY_HELP)


def max_events_option() -> Any:
    """The ``--max-events N`` option (see :mod:`clustersim.budget`)."""
    return typer.Option(None, "--max-events", help=MAX_EVENTS_HELP)


@contextlib.contextmanager
def budget(max_memory: Optional[str], max_events: Optional[int]) -> Iterator[None]:
    """Run a command body under the limits its options give (:func:`clustersim.budget.limits`)."""
    from clustersim.budget import limits
    from clustersim.units import parse_size

    mem = None
    if max_memory is not None:
        try:
            mem = parse_size(max_memory)
        except ClusterSimError as exc:
            raise ClusterSimError(exc.reason, field="--max-memory") from None
        if mem <= 0:
            raise ClusterSimError("must be > 0", field="--max-memory")
    if max_events is not None and max_events <= 0:
        raise ClusterSimError("must be > 0", field="--max-events")
    if max_events is not None and max_events > MAX_EVENTS_BOUND:
        raise ClusterSimError(f"{max_events:,} exceeds the bound of {MAX_EVENTS_BOUND:,} ({MAX_EVENTS_WHY})",
                              field="--max-events")
    with limits(max_memory=mem, max_events=max_events):
        yield


@contextlib.contextmanager
def progress(message: str, console: Console | None = None) -> Iterator[Callable[[str], None]]:
    """A spinner with the elapsed time on stderr while a long command runs, only when stderr is a terminal.

    Yields a function that replaces the message (``update("writing plots")``). Piped or
    redirected stderr, and the tests' runners, get nothing, so outputs stay clean.
    """
    con = console or err_console
    if not con.is_terminal:
        yield lambda _msg: None
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=con,
                  transient=True) as bar:
        task = bar.add_task(message, total=None)
        yield lambda msg: bar.update(task, description=msg)
