"""Strict pydantic base model, YAML loading, ``--set`` overrides and shipped-data lookup.

Every user-facing file goes through :func:`load_model`, so every bad input ends
as one :class:`~clustersim.errors.ClusterSimError` naming the file, the field
path and the rule.

Types are strict at this boundary: a YAML ``true`` is not a count, ``'2'`` is not
a number, ``16.0`` is not an integer, ``'yes'`` is not a boolean. The YAML reader
follows the YAML 1.2 core schema (``true``/``false`` only, no sexagesimal
``1:30``, no implicit dates, ``1e5`` is a number), refuses duplicate keys (naming
both lines), integers of more than :data:`~clustersim.budget.MAX_INT_DIGITS`
digits, files over :data:`~clustersim.budget.MAX_YAML_BYTES` and alias bombs.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, TypeVar

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator

from clustersim.budget import BOUNDS, MAX_INT_DIGITS, MAX_YAML_BYTES, MAX_YAML_VALUES, check_bound
from clustersim.errors import ClusterSimError, require_file
from clustersim.files import read_text

_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when PyYAML has it

M = TypeVar("M", bound=BaseModel)

REPO_ROOT = Path(__file__).resolve().parents[2]

# kind -> (folder in a source checkout, package holding the installed copy)
SHIPPED = {
    "topology": ("topologies", "clustersim._shipped.topologies"),
    "scenario": ("scenarios", "clustersim._shipped.scenarios"),
    "profile": ("profiles", "clustersim._shipped.profiles"),
}
#: YAML files of a shipped folder that are not files of its kind: profiles/inputs.yaml names the measurements
#: every shipped profile was made from (the recipe's bookkeeping, not a profile)
NOT_SHIPPED = {"profile": {"inputs"}}


class StrictModel(BaseModel):
    """Base of every config model: unknown keys are rejected, types are strict, values validated on assignment.

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

    Strict: no bool for an int, no string for a number, no float for an int, no string for a
    bool; an int is accepted for a float. NaN and infinities are rejected.
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True, populate_by_name=True, strict=True,
                              allow_inf_nan=False)

    @field_validator("*", mode="after")
    @classmethod
    def _exact_integers(cls, value: Any) -> Any:
        # Integers are multiplied into FLOPs and bytes as floats: beyond 2**53 they are no longer
        # exact (and beyond ~10**308 they overflow), so no integer field holds one that large.
        items = value if isinstance(value, (list, tuple)) else (value,)
        for v in items:
            if isinstance(v, int) and not isinstance(v, bool) and abs(v) > MAX_EXACT_INT:
                raise ValueError(f"{v:.3g} is beyond 2**53, the largest integer a float holds exactly")
        return value


#: A positive float field, and a non-negative one (the profile's and the topology's rates, times, fractions).
Pos = Annotated[float, Field(gt=0)]
NonNeg = Annotated[float, Field(ge=0)]

#: Largest magnitude of any integer field (exact as a float64).
MAX_EXACT_INT = 2**53


def bounded(name: str, *, minimum: int = 1) -> Any:
    """An int type with a lower limit and the upper bound ``name`` of :data:`clustersim.budget.BOUNDS`.

    The message of a value over the bound gives the bound and its reason; the JSON schema
    carries both limits.

    >>> from pydantic import TypeAdapter
    >>> TypeAdapter(bounded("layers")).validate_python(96)
    96
    """
    bound = BOUNDS[name][0]

    def check(value: int) -> int:
        try:
            check_bound(name, value)
        except ClusterSimError as exc:
            raise ValueError(exc.reason) from None
        return value

    return Annotated[int, Field(gt=minimum - 1, json_schema_extra={"maximum": bound}), AfterValidator(check)]


def capped(upper: float, why: str) -> Any:
    """A float type with the upper bound ``upper`` whose message gives the bound and ``why``.

    >>> from pydantic import TypeAdapter
    >>> TypeAdapter(capped(1000, "a dead GPU")).validate_python(1e9)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    pydantic_core._pydantic_core.ValidationError: 1 validation error ...
    ...1e+09 exceeds the bound of 1,000 (a dead GPU)...
    """

    def check(value: float) -> float:
        if value > upper:
            raise ValueError(f"{value:g} exceeds the bound of {upper:,g} ({why})")
        return value

    return Annotated[float, Field(json_schema_extra={"maximum": upper}), AfterValidator(check)]


# ---------------------------------------------------------------------------------------------
# The YAML reader
# ---------------------------------------------------------------------------------------------


class _InputError(yaml.YAMLError):
    """A problem found while constructing values (carries its own message and line)."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.message = message
        self.line = line
        self.field: str | None = None


def _core_resolvers() -> dict:
    """PyYAML's implicit resolvers with bool, int, float and timestamp replaced by YAML 1.2 core ones."""
    replaced = {"tag:yaml.org,2002:bool", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float",
                "tag:yaml.org,2002:timestamp"}
    out: dict = {}
    for first, items in yaml.SafeLoader.yaml_implicit_resolvers.items():
        kept = [(tag, rx) for tag, rx in items if tag not in replaced]
        if kept:
            out[first] = kept
    core = [
        ("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), "tTfF"),
        ("tag:yaml.org,2002:int", re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"), "-+0123456789"),
        ("tag:yaml.org,2002:float", re.compile(
            r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"),
         "-+.0123456789"),
    ]
    for tag, rx, firsts in core:
        for ch in firsts:
            out.setdefault(ch, []).append((tag, rx))
    return out


class StrictYAMLLoader(_SAFE_LOADER):  # type: ignore[misc, valid-type]
    """Safe YAML loader: YAML 1.2 core scalars, duplicate keys refused, huge integers refused.

    >>> yaml.load("a: 1\\nb: 1e3\\nc: yes\\nd: 0o10\\ne: 010", Loader=StrictYAMLLoader)
    {'a': 1, 'b': 1000.0, 'c': 'yes', 'd': 8, 'e': 10}
    """

    yaml_implicit_resolvers = _core_resolvers()

    def construct_mapping(self, node, deep=False):  # noqa: D102 - PyYAML hook
        if isinstance(node, yaml.MappingNode):
            self.flatten_mapping(node)
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
                if key is None:
                    continue
                line = key_node.start_mark.line + 1
                if key in seen:
                    raise _InputError(f"duplicate key {key!r} on lines {seen[key]} and {line} "
                                      "(the last one would silently win)", line)
                seen[key] = line
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node):  # noqa: D102 - PyYAML hook
        text = str(node.value)
        digits = text.lstrip("+-")
        if len(digits) > MAX_INT_DIGITS:
            raise _InputError(f"integer of {len(digits)} digits (more than {MAX_INT_DIGITS}: "
                              "no count or size this tool uses is that large)", node.start_mark.line + 1)
        sign = -1 if text.startswith("-") else 1
        if digits.startswith("0o"):
            return sign * int(digits[2:], 8)
        if digits.startswith("0x"):
            return sign * int(digits[2:], 16)
        return sign * int(digits, 10)


StrictYAMLLoader.add_constructor("tag:yaml.org,2002:int", StrictYAMLLoader.construct_yaml_int)


def _count_values(data: Any, limit: int) -> int:
    """Values in ``data`` with aliases expanded (shared objects counted once per use), up to ``limit``."""
    memo: dict[int, int] = {}

    def count(obj: Any) -> int:
        if isinstance(obj, dict):
            items = list(obj.keys()) + list(obj.values())
        elif isinstance(obj, list):
            items = obj
        else:
            return 1
        key = id(obj)
        if key in memo:
            return memo[key]
        memo[key] = limit + 1  # a cycle (a list that contains itself) counts as too many
        total = 1
        for x in items:
            total += count(x)
            if total > limit:
                break
        memo[key] = total
        return total

    return count(data)


#: Deepest nesting of mappings and lists in a YAML file; the shipped files nest at most 6
#: (2026-12-02); deeper input is refused before it is constructed.
MAX_YAML_DEPTH = 64

#: C0 controls other than tab and newline, DEL and the C1 controls (ESC starts terminal escapes).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _check_nodes(root: yaml.Node) -> None:
    """Find duplicate keys and over-long integers in a composed YAML tree, with their dotted path.

    Each node is visited once (aliases point at shared nodes, so an alias bomb costs its size in
    text, not its expanded size). Raises ``_InputError`` with the field path in ``.field``.
    """
    seen_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, str, int]] = [(root, "", 0)]
    while stack:
        node, path, depth = stack.pop()
        if id(node) in seen_nodes:
            continue
        seen_nodes.add(id(node))
        if depth > MAX_YAML_DEPTH:
            err = _InputError(f"nested more than {MAX_YAML_DEPTH} deep on line {node.start_mark.line + 1} (the deepest "
                              "shipped file nests 6)", node.start_mark.line + 1)
            err.field = path[:40] + "..." if len(path) > 40 else path or None
            raise err
        if isinstance(node, yaml.ScalarNode):
            if node.tag == "tag:yaml.org,2002:int" and len(str(node.value).lstrip("+-")) > MAX_INT_DIGITS:
                err = _InputError(f"integer of {len(str(node.value).lstrip('+-'))} digits on line "
                                  f"{node.start_mark.line + 1} (more than {MAX_INT_DIGITS}: no count or size this "
                                  "tool uses is that large)", node.start_mark.line + 1)
                err.field = path or None
                raise err
            bad = _CONTROL.search(node.value) if isinstance(node.value, str) else None
            if bad:
                # "\0" or "\e[31m" in a double-quoted name would reach tables and terminals as-is
                err = _InputError(f"control character U+{ord(bad.group()):04X} in text on line "
                                  f"{node.start_mark.line + 1} (names and descriptions must be printable)",
                                  node.start_mark.line + 1)
                err.field = path or None
                raise err
            if node.tag == "tag:yaml.org,2002:int" and str(node.value).lstrip("+-")[:2] in ("0x", "0o"):
                # YAML 1.2 reads 0x800 as 2048: a typo'd or pasted hex value would pass as a count unseen
                base = "hexadecimal" if "0x" in str(node.value) else "octal"
                err = _InputError(f"{node.value} on line {node.start_mark.line + 1} is a {base} integer; write it "
                                  "in decimal (counts and sizes of clustersim files are decimal)",
                                  node.start_mark.line + 1)
                err.field = path or None
                raise err
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((child, f"{path}.{i}" if path else str(i), depth + 1) for i, child in enumerate(node.value))
        elif isinstance(node, yaml.MappingNode):
            first: dict[Any, int] = {}
            for key_node, value_node in node.value:
                key = key_node.value if isinstance(key_node, yaml.ScalarNode) else "?"
                child = f"{path}.{key}" if path else str(key)
                line = key_node.start_mark.line + 1
                if isinstance(key_node, yaml.ScalarNode) and key != "<<":
                    if key in first:
                        err = _InputError(f"duplicate key {key!r} on lines {first[key]} and {line} "
                                          "(the last one would silently win)", line)
                        err.field = child
                        raise err
                    first[key] = line
                stack.append((key_node, path, depth + 1))
                stack.append((value_node, child, depth + 1))


def parse_yaml_text(text: str, *, file: str | None = None, what: str = "YAML") -> Any:
    """Parse YAML text with :class:`StrictYAMLLoader`; every problem is a ClusterSimError.

    >>> parse_yaml_text("a: 1\\nb: {c: 2, c: 3}")
    Traceback (most recent call last):
    ...
    clustersim.errors.ClusterSimError: b.c: duplicate key 'c' on lines 2 and 2 (the last one would silently win)
    """
    loader = StrictYAMLLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_nodes(node)
        data = loader.construct_document(node)
    except _InputError as exc:
        raise ClusterSimError(exc.message, file=file, field=getattr(exc, "field", None)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ClusterSimError(f"{what} syntax error at {where}{problem}", file=file) from None
    except (RecursionError, MemoryError):
        raise ClusterSimError(f"{what} nested too deeply to read", file=file) from None
    finally:
        loader.dispose()
    if _count_values(data, MAX_YAML_VALUES) > MAX_YAML_VALUES:
        raise ClusterSimError(f"more than {MAX_YAML_VALUES:,} values once aliases are expanded "
                              "(an alias bomb, or a file far larger than any topology, scenario or profile)",
                              file=file)
    return data


def _model_names() -> set[str]:
    out: set[str] = set()
    todo = [StrictModel]
    while todo:
        cls = todo.pop()
        out.add(cls.__name__)
        todo.extend(cls.__subclasses__())
    return out


def format_loc(loc: tuple[Any, ...]) -> str:
    """Dotted field path from a pydantic error location (drops union-branch tags).

    >>> format_loc(("node", "links", 0, "function-after[_check()]", "bandwidth_GBps"))
    'node.links.0.bandwidth_GBps'
    >>> format_loc(("job", "phases", 0, "collective", "size", "str"))
    'job.phases.0.collective.size'
    """
    tags = {"str", "int", "float", "bool", "none"} | _model_names()  # the branches of `str | int`, `str | GPUSpec`
    parts = []
    for p in loc:
        if isinstance(p, int):
            parts.append(str(p))
        elif isinstance(p, str) and not p.startswith("function-") and "[" not in p and p not in tags:
            parts.append(p)
    return ".".join(parts)


def describe_value(value: Any) -> str:
    """A short description of a rejected input value with its YAML type.

    >>> describe_value(True), describe_value("2"), describe_value(16.0)
    ('true (a boolean)', "'2' (a string)", '16.0 (a floating-point number; write 16 for an integer)')
    """
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if value is None:
        return "null"
    if isinstance(value, str):
        text = value if len(value) <= 40 else value[:37] + "..."
        return f"{text!r} (a string)"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return f"{value!r} (a floating-point number; write {int(value)} for an integer)"
        return f"{value!r} (a floating-point number)"
    if isinstance(value, int):
        text = str(value) if value.bit_length() < 100 else f"an integer of {len(str(value))} digits"
        return f"{text} (an integer)"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    return type(value).__name__


def validation_error(exc: ValidationError, file: str | None) -> ClusterSimError:
    """Turn the first pydantic error into a ClusterSimError (file, field path, rule, value given)."""
    errs = exc.errors()
    err = errs[0]
    field = format_loc(err.get("loc", ()))
    if str(err.get("type", "")).endswith("_type"):
        # a union (`list[Straggler] | StragglerDistribution`): the branch of the input's own type
        # failed deeper inside; its error says what is wrong, the other branch's only the type
        deeper = [e for e in errs[1:] if format_loc(e.get("loc", ())).startswith(f"{field}.")]
        if deeper:
            err = deeper[0]
            field = format_loc(err.get("loc", ()))
    msg = err.get("msg", "invalid value")
    kind = str(err.get("type", ""))
    if kind == "extra_forbidden":
        msg = "unknown key (not allowed here)"
    elif kind == "missing":
        msg = "required field is missing"
    elif kind.endswith("_type") or kind.endswith("_parsing") or kind in ("literal_error", "int_from_float"):
        msg = f"{msg}, got {describe_value(err.get('input'))}"
    msg = msg.removeprefix("Value error, ")
    more = len(exc.errors()) - 1
    if more:
        msg += f" (and {more} more error{'s' if more > 1 else ''})"
    return ClusterSimError(msg, file=file, field=field or None)


def load_yaml(path: str | Path) -> dict[str, Any]:
    """Read a YAML mapping, rejecting missing, empty, oversized, binary and malformed files.

    >>> data = load_yaml(shipped_dir("topology") / "dgx-h100.yaml")
    >>> data["name"], data["gpu"], data["node"]["gpus"]
    ('dgx-h100', 'H100-SXM', 8)
    >>> load_yaml("no-such-file.yaml")
    Traceback (most recent call last):
    ...
    clustersim.errors.ClusterSimError: no-such-file.yaml: file not found
    """
    text = read_text(path, limit=MAX_YAML_BYTES, kind="YAML",
                     what="topology, scenario and profile files (60x the largest shipped one)")
    # libyaml's parser when PyYAML has it: the shipped profiles (hundreds of table rows) parse 8x faster
    data = parse_yaml_text(text, file=str(path))
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
            parsed = parse_yaml_text(value, what="--set value") if value.strip() else None
        except ClusterSimError as exc:
            if "syntax error" not in exc.reason:
                raise ClusterSimError(f"--set {item!r}: {exc.reason}", file=file, field=key) from None
            parsed = value  # not YAML (e.g. "a: b: c"): the text itself
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
        # the folder of the file: fields naming other files (model.hf_config) resolve against it
        return cls.model_validate(data, context={"base_dir": str(Path(file).parent)} if file else None)
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
    skip = NOT_SHIPPED.get(kind, set())
    return sorted(p.stem for p in d.glob("*.yaml") if p.stem not in skip) if d.is_dir() else []


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
        try:
            if c.is_file():
                return c
            exists = c.exists() and not c.is_dir()
        except OSError as exc:  # a name the OS cannot look up (too long, a bad byte): not a file of any kind
            raise ClusterSimError(f"{kind} {text[:80]!r}{'...' if len(text) > 80 else ''}: {exc.strerror or exc}") from None
        if exists:  # a FIFO or a device named as a file: say what it is
            require_file(c)
    stem = p.name[:-5] if p.name.endswith(".yaml") else p.name
    if p.parent == Path(".") or str(p.parent) == "":
        shipped = shipped_dir(kind) / f"{stem}.yaml"
        if shipped.is_file():
            return shipped
    known = ", ".join(shipped_names(kind)) or "none"
    raise ClusterSimError(f"unknown {kind} {text!r}: not a file and not a shipped name (shipped: {known})")
