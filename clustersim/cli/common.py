"""Shared pieces of the command line: consoles, JSON output, error handling."""

from __future__ import annotations

import json
import math
import sys
from typing import Any

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
