"""`clustersim calibrate fit` and `clustersim calibrate report` (being built)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Attach fit/report commands to the calibrate sub-app."""
