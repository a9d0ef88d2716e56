"""`clustersim run` commands (being built)."""

from __future__ import annotations

import typer

app = typer.Typer(help="run commands.", no_args_is_help=True, add_completion=False)


def register(root: typer.Typer) -> None:
    """Attach this module's commands to the root app."""
