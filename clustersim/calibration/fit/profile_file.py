"""The profile file: fitted numbers rounded for it, YAML with a header saying how it was made, writing, loading.

Owns the on-disk form of a fitted :class:`~clustersim.config.profile.Profile`
(Contract 4): :func:`rounded` (6 significant digits, far below measurement
noise), :func:`profile_yaml`, :func:`write_profile` (validated again on the way
out) and :func:`load_profile`.

>>> rounded(123.4567891)
123.457
"""

from __future__ import annotations

import datetime as _dt
import math
from pathlib import Path
from typing import Any

import yaml

from clustersim.config.base import load_model, resolve_file, validate
from clustersim.config.profile import Profile
from clustersim.errors import ClusterSimError
from clustersim.files import write_output


def rounded(x: float, digits: int = 6) -> float:
    """Round to ``digits`` significant digits (keeps YAML readable, far below measurement noise)."""
    if x == 0 or not math.isfinite(x):
        return float(x)
    return float(f"{x:.{digits}g}")


def profile_yaml(profile: Profile, *, command: str | None = None, date: str | None = None) -> str:
    """The profile as YAML with a header comment saying how it was made."""
    date = date or _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    head = ["# clustersim calibration profile (Contract 4), written by `clustersim calibrate fit`",
            f"# made: {date}"]
    if command:
        head.append(f"# command: {command}")
    head.append("# collectives: piecewise t = alpha + S/algbw, weighted by 1/t, 95% CIs (docs/calibration.md)")
    body = yaml.safe_dump(_tidy(profile.model_dump(mode="json", exclude_none=True, exclude_unset=True)), sort_keys=False,
                          default_flow_style=None, width=120)
    return "\n".join(head) + "\n" + body


def _tidy(obj: Any) -> Any:
    """Whole byte counts as integers, empty sections dropped (same profile once validated)."""
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            v = _tidy(v)
            if isinstance(v, float) and str(k).endswith("_bytes") and v.is_integer():
                v = int(v)
            if v == {}:
                continue
            out[k] = v
        return out
    if isinstance(obj, list):
        return [_tidy(v) for v in obj]
    return obj


def write_profile(profile: Profile, path: str | Path, *, command: str | None = None) -> Path:
    """Write the profile YAML (validated again on the way out)."""
    text = profile_yaml(profile, command=command)
    validate(Profile, yaml.safe_load(text), file=str(path))
    p = Path(path)
    try:
        if p.parent and not p.parent.exists():
            p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ClusterSimError(f"cannot write: {exc.strerror or exc}", file=str(path)) from None
    return write_output(p, text)


def load_profile(path: str | Path) -> Profile:
    """Load a profile file by path or shipped name."""
    return load_model(Profile, resolve_file(path, "profile"))
