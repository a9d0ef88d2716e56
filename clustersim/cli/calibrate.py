"""`clustersim calibrate` commands (being built)."""

from __future__ import annotations

import typer

app = typer.Typer(help="calibrate commands.", no_args_is_help=True, add_completion=False)


def register(root: typer.Typer) -> None:
    """Attach this module's commands to the root app."""
