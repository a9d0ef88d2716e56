"""Pydantic models of the user-facing files (topology, scenario, profile) and their loading.

Only models and loading live here: no graph building, no simulation.
"""

from clustersim.config.base import (
    StrictModel,
    apply_overrides,
    load_model,
    load_yaml,
    resolve_file,
    shipped_dir,
    shipped_names,
    validate,
)

__all__ = [
    "StrictModel",
    "apply_overrides",
    "load_model",
    "load_yaml",
    "resolve_file",
    "shipped_dir",
    "shipped_names",
    "validate",
]
