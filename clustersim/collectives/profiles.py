"""Finding the calibration profile of a cluster (by path, shipped name, or the topology's default)."""

from __future__ import annotations

from pathlib import Path

from clustersim.config.base import load_model, resolve_file
from clustersim.config.profile import Profile


def resolve_profile(name_or_path: str | Path) -> Profile:
    """Load a profile by path or shipped bare name (``profiles/<name>.yaml``).

    Raises ClusterSimError for unknown names and invalid files.

    >>> p = resolve_profile("hgx-h200")
    >>> p.source.measured, sorted(p.links)
    (True, ['network', 'nvlink', 'pcie'])
    """
    return load_model(Profile, resolve_file(name_or_path, "profile"))


def load_profile_for(cluster, name_or_path: str | Path | None = None) -> Profile | None:
    """The profile to use for ``cluster``: the one named, else the topology's ``default_profile``.

    Returns None when neither is given (the model then uses NCCL's constants only).
    """
    if name_or_path is not None:
        return resolve_profile(name_or_path)
    default = getattr(cluster, "default_profile", None)
    if default:
        return resolve_profile(default)
    return None
