"""Strict pydantic base model, YAML loading, ``--set`` overrides and shipped-data lookup.

Every user-facing file goes through :func:`load_model`, so every bad input ends
as one :class:`~clustersim.errors.ClusterSimError` naming the file, the field
path and the rule.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from clustersim.errors import ClusterSimError, require_file

_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when PyYAML has it

M = TypeVar("M", bound=BaseModel)

REPO_ROOT = Path(__file__).resolve().parents[2]

# kind -> (folder in a source checkout, package holding the installed copy)
SHIPPED = {
    "topology": ("topologies", "clustersim._shipped.topologies"),
    "scenario": ("scenarios", "clustersim._shipped.scenarios"),
    "profile": ("calibrate/profiles", "clustersim._shipped.profiles"),
}


class StrictModel(BaseModel):
    """Base of every config model: unknown keys are rejected, values validated on assignment.

    >>> class Link(StrictModel):
    ...     bandwidth_GBps: float
    >>> Link(bandwidth_GBps=450).bandwidth_GBps
    450.0
    >>> Link(bandwidth_GBps=450, bandwith_GBps=1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    pydantic_core._pydantic_core.ValidationError: 1 validation error for Link
    bandwith_GBps
      Extra inputs are not permitted ...
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True, populate_by_name=True)


def format_loc(loc: tuple[Any, ...]) -> str:
    """Dotted field path from a pydantic error location (drops union-branch tags).

    >>> format_loc(("node", "links", 0, "function-after[_check()]", "bandwidth_GBps"))
    'node.links.0.bandwidth_GBps'
    """
    parts = []
    for p in loc:
        if isinstance(p, int):
            parts.append(str(p))
        elif isinstance(p, str) and not p.startswith("function-") and "[" not in p:
            parts.append(p)
    return ".".join(parts)


def validation_error(exc: ValidationError, file: str | None) -> ClusterSimError:
    """Turn the first pydantic error into a ClusterSimError (file, field path, rule)."""
    err = exc.errors()[0]
    field = format_loc(err.get("loc", ()))
    msg = err.get("msg", "invalid value")
    if err.get("type") == "extra_forbidden":
        msg = "unknown key (not allowed here)"
    elif err.get("type") == "missing":
        msg = "required field is missing"
    msg = msg.removeprefix("Value error, ")
    more = len(exc.errors()) - 1
    if more:
        msg += f" (and {more} more error{'s' if more > 1 else ''})"
    return ClusterSimError(msg, file=file, field=field or None)


def load_yaml(path: str | Path) -> dict[str, Any]:
    """Read a YAML mapping, rejecting missing, empty, binary and malformed files.

    >>> data = load_yaml(shipped_dir("topology") / "dgx-h100.yaml")
    >>> data["name"], data["gpu"], data["node"]["gpus"]
    ('dgx-h100', 'H100-SXM', 8)
    >>> load_yaml("no-such-file.yaml")
    Traceback (most recent call last):
    ...
    clustersim.errors.ClusterSimError: no-such-file.yaml: file not found
    """
    p = require_file(path)
    raw = p.read_bytes()
    if b"\x00" in raw:
        raise ClusterSimError("binary file (not YAML)", file=str(path))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ClusterSimError("not UTF-8 text (not YAML)", file=str(path)) from None
    try:
        # libyaml's loader when PyYAML has it: the shipped profiles (hundreds of table rows) parse 8x faster
        data = yaml.load(text, Loader=_SAFE_LOADER)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ClusterSimError(f"YAML syntax error at {where}{problem}", file=str(path)) from None
    if data is None:
        raise ClusterSimError("file is empty", file=str(path))
    if not isinstance(data, dict):
        raise ClusterSimError(f"top level must be a mapping, got {type(data).__name__}", file=str(path))
    return data


def apply_overrides(data: dict[str, Any], overrides: list[str] | None, file: str | None = None) -> dict[str, Any]:
    """Apply ``a.b.c=value`` overrides (values parsed as YAML scalars/lists) to a nested dict.

    >>> apply_overrides({"parallelism": {"dp": 2}}, ["parallelism.dp=4", "name=x"])
    {'parallelism': {'dp': 4}, 'name': 'x'}
    """
    for item in overrides or []:
        if "=" not in item:
            raise ClusterSimError(f"--set {item!r}: expected KEY=VALUE, e.g. parallelism.tp=2", file=file)
        key, value = item.split("=", 1)
        key = key.strip()
        if not key or any(not k for k in key.split(".")):
            raise ClusterSimError(f"--set {item!r}: empty key", file=file)
        try:
            parsed = yaml.safe_load(value) if value.strip() else None
        except yaml.YAMLError:
            parsed = value
        node = data
        parts = key.split(".")
        for k in parts[:-1]:
            if isinstance(node, list):
                try:
                    node = node[int(k)]
                    continue
                except (ValueError, IndexError):
                    raise ClusterSimError(f"--set {item!r}: no list item {k!r}", file=file, field=key) from None
            nxt = node.get(k)
            if nxt is None:
                nxt = {}
                node[k] = nxt
            elif not isinstance(nxt, (dict, list)):
                raise ClusterSimError(f"--set {item!r}: {k!r} is not a section", file=file, field=key)
            node = nxt
        if isinstance(node, list):
            try:
                node[int(parts[-1])] = parsed
            except (ValueError, IndexError):
                raise ClusterSimError(f"--set {item!r}: no list item {parts[-1]!r}", file=file, field=key) from None
        else:
            node[parts[-1]] = parsed
    return data


def validate(cls: type[M], data: dict[str, Any], file: str | None = None) -> M:
    """Validate ``data`` into ``cls``; errors become ClusterSimError with the file name.

    >>> from clustersim.config.profile import LinkParams
    >>> validate(LinkParams, {"latency_us": 2, "bandwidth_GBps": 370}).bandwidth_GBps
    370.0
    >>> validate(LinkParams, {"latency_us": 2, "bandwidth_GBps": 0}, file="p.yaml")
    Traceback (most recent call last):
    ...
    clustersim.errors.ClusterSimError: p.yaml: bandwidth_GBps: Input should be greater than 0
    """
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc, file) from None
    except ClusterSimError as exc:
        raise exc.with_file(file) if file else exc


def load_model(cls: type[M], path: str | Path, overrides: list[str] | None = None) -> M:
    """Load a YAML file into model ``cls``, applying ``--set`` overrides first.

    >>> from clustersim.config.scenario import Scenario
    >>> sc = load_model(Scenario, shipped_dir("scenario") / "gpt-1b-ddp.yaml", ["parallelism.dp=1", "cluster.gpus=1"])
    >>> sc.name, sc.cluster.topology, sc.cluster.gpus, sc.parallelism.dp
    ('gpt-1b-ddp', 'hgx-h200', 1, 1)
    """
    data = load_yaml(path)
    data = apply_overrides(data, overrides, file=str(path))
    return validate(cls, data, file=str(path))


def shipped_dir(kind: str) -> Path:
    """The folder holding shipped files of ``kind`` (topology, scenario, profile).

    A source checkout's top-level folder wins (so edits show at once); otherwise
    the copy installed as package data is used.

    >>> (shipped_dir("topology") / "hgx-h200.yaml").is_file()
    True
    """
    folder, package = SHIPPED[kind]
    local = REPO_ROOT / folder
    if local.is_dir() and (REPO_ROOT / "pyproject.toml").exists():
        return local
    # Installed copy: clustersim/_shipped/<kind folder>/ (a namespace package of data files).
    installed = Path(__file__).resolve().parents[1] / "_shipped" / package.rsplit(".", 1)[-1]
    return installed if installed.is_dir() else local


def shipped_names(kind: str) -> list[str]:
    """Bare names of the shipped files of ``kind``, sorted.

    >>> "dgx-h100" in shipped_names("topology"), "gpt-1b-ddp" in shipped_names("scenario")
    (True, True)
    """
    d = shipped_dir(kind)
    return sorted(p.stem for p in d.glob("*.yaml")) if d.is_dir() else []


def resolve_file(name: str | Path, kind: str, base: Path | None = None) -> Path:
    """Find a data file by path or bare name.

    Order: an existing path (relative to ``base`` first, then the cwd); then a
    shipped file ``<name>.yaml`` of ``kind``.

    >>> resolve_file("hgx-h200", "profile") == shipped_dir("profile") / "hgx-h200.yaml"
    True
    >>> resolve_file("dgx-z900", "topology")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    clustersim.errors.ClusterSimError: unknown topology 'dgx-z900': not a file and not a shipped name (shipped: ...)
    """
    text = str(name)
    cands = []
    p = Path(text).expanduser()
    if base is not None and not p.is_absolute():
        cands.append(base / p)
    cands.append(p)
    for c in cands:
        if c.is_file():
            return c
    stem = p.name[:-5] if p.name.endswith(".yaml") else p.name
    if p.parent == Path(".") or str(p.parent) == "":
        shipped = shipped_dir(kind) / f"{stem}.yaml"
        if shipped.is_file():
            return shipped
    known = ", ".join(shipped_names(kind)) or "none"
    raise ClusterSimError(f"unknown {kind} {text!r}: not a file and not a shipped name (shipped: {known})")
