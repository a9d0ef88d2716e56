"""The one reader of the other tools' files that ``clustersim scenario from-*`` and ``compare`` take.

A Hugging Face ``config.json``, a torchtitan job TOML, a Megatron launch script or a training log
all come through :func:`read_input_text` (and :func:`read_input_json` for JSON), so that a missing,
oversized, binary or non-UTF-8 file is refused in the same words for every one of them, and the
reading can be switched to the project's common input reader in one place.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from clustersim.budget import MAX_MEASUREMENT_BYTES
from clustersim.errors import ClusterSimError, require_file


def resolve_input(path: str | Path, base: str | Path | None = None) -> Path:
    """``path`` itself, or relative to ``base`` (a scenario's folder) when it exists there.

    >>> resolve_input("x.json", base="/nowhere") == Path("x.json")
    True
    """
    p = Path(path).expanduser()
    if base is not None and not p.is_absolute() and (Path(base) / p).exists():
        return Path(base) / p
    return p


def read_input_text(path: str | Path, *, what: str, limit: int = MAX_MEASUREMENT_BYTES) -> str:
    """The text of a user's file (``what`` names its kind in the messages).

    Raises
    ------
    ClusterSimError
        File missing or a folder, larger than ``limit`` bytes, binary or not UTF-8; naming the file.

    Examples
    --------
    >>> read_input_text("no-such.json", what="Hugging Face config")
    Traceback (most recent call last):
    ...
    clustersim.errors.ClusterSimError: no-such.json: file not found
    """
    p = require_file(path)
    try:
        size = p.stat().st_size
        if size > limit:
            raise ClusterSimError(f"file of {size:,} bytes exceeds the {limit:,}-byte limit of a {what}", file=str(path))
        raw = p.read_bytes()
    except OSError as exc:
        raise ClusterSimError(f"cannot read: {exc.strerror or exc}", file=str(path)) from None
    if b"\x00" in raw:
        raise ClusterSimError(f"binary file (not a {what})", file=str(path))
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ClusterSimError(f"not UTF-8 text (not a {what})", file=str(path)) from None


def read_input_json(path: str | Path, *, what: str) -> dict[str, Any]:
    """A JSON object from a user's file (``config.json``): a clear error for bad JSON or another top level."""
    text = read_input_text(path, what=what, limit=16 * 1024 * 1024)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ClusterSimError(f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})",
                              file=str(path)) from None
    if not isinstance(data, dict):
        raise ClusterSimError(f"top level must be a JSON object, got {type(data).__name__}", file=str(path))
    return data
