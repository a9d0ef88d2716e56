"""Reading measurements for the fit: Contract 3 rows checked and normalised, by kind.

Owns what a row must hold to be fitted (:func:`normalise_row`) and reading the
files (:func:`read_measurements`): JSON lines through
:func:`clustersim.calibration.jsonl.iter_rows` (the project's one JSON-lines
reader), nccl-tests logs through their importer. A line or row that cannot be
read is reported as ``file:line: reason`` and skipped, never read half-way.

Examples
--------
>>> normalise_row({"kind": "collective", "op": "all_reduce", "size_bytes": 8, "time_us": 9.0, "nodes": 1})["scope"]
'intra'
>>> normalise_row({"kind": "trace"}) is None
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from clustersim.calibration.fit.kernels import required_fields
from clustersim.calibration.jsonl import iter_rows
from clustersim.config.profile import OP_NAMES
from clustersim.errors import ClusterSimError, require_file
from clustersim.budget import MAX_MEASUREMENT_BYTES
from clustersim.files import read_input


@dataclass
class Measurements:
    """Rows read from measurement files, sorted by kind.

    Attributes
    ----------
    rows:
        Valid Contract 3 rows (``kind`` always set).
    files:
        The files read, in the order given.
    skipped:
        ``"file:line: reason"`` for every line that was reported and skipped.
    """

    rows: list[dict[str, Any]] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def of(self, kind: str) -> list[dict[str, Any]]:
        """Rows of one kind."""
        return [r for r in self.rows if r["kind"] == kind]


#: Largest value of a measured field, with why: beyond it the row is a unit or logging error.
_UPPER = {"time_us": (1e12, "11.6 days; no single measured call lasts that long"),
          "size_bytes": (2.0**50, "1 PiB, the size bound of every clustersim input")}


def _num(row: dict[str, Any], key: str, *, positive: bool = True) -> float:
    v = row.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ValueError(f"{key!r} must be a number, got {v!r}")
    if positive and v <= 0:
        raise ValueError(f"{key!r} must be > 0, got {v!r}")
    if key in _UPPER and v > _UPPER[key][0]:
        raise ValueError(f"{key!r} of {v:g} exceeds {_UPPER[key][0]:g} ({_UPPER[key][1]})")
    return float(v)


def _check_collective(row: dict[str, Any]) -> None:
    """Check a ``collective`` row in place: op, size, time, ranks; fill mode and scope, lower-case names."""
    op = row.get("op")
    if op not in OP_NAMES:
        raise ValueError(f"unknown op {op!r} (known: {', '.join(OP_NAMES)})")
    _num(row, "size_bytes", positive=False)
    _num(row, "time_us")
    ranks = row.get("ranks")
    if ranks is not None and (not isinstance(ranks, int) or isinstance(ranks, bool) or ranks < 1):
        raise ValueError(f"'ranks' must be a positive integer, got {ranks!r}")
    row.setdefault("mode", "nccl")
    if row["mode"] not in ("nccl", "eager", "framework"):
        raise ValueError(f"'mode' must be nccl, eager or framework, got {row['mode']!r}")
    proto = row.get("protocol")
    if isinstance(proto, str):
        row["protocol"] = proto.lower()
    if row.get("protocol") not in (None, "ll", "ll128", "simple"):
        raise ValueError(f"'protocol' must be ll, ll128 or simple, got {row.get('protocol')!r}")
    if isinstance(row.get("algorithm"), str):
        row["algorithm"] = row["algorithm"].lower()
    if row.get("scope") is None and row.get("nodes") is not None:
        row["scope"] = "intra" if row["nodes"] == 1 else "inter"
    if row.get("scope") not in (None, "intra", "inter"):
        raise ValueError(f"'scope' must be intra or inter, got {row.get('scope')!r}")


def _check_gemm(row: dict[str, Any]) -> None:
    """Check a ``gemm`` row in place; ``tflops`` from ``time_us`` or ``median_ms`` when missing."""
    for k in ("m", "n", "k"):
        v = row.get(k)
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise ValueError(f"{k!r} must be a positive integer, got {v!r}")
    flops = 2.0 * row["m"] * row["n"] * row["k"]
    if row.get("tflops") is None:
        if row.get("time_us") is not None:
            row["tflops"] = flops / (_num(row, "time_us") * 1e-6) / 1e12
        else:
            row["tflops"] = flops / (_num(row, "median_ms") * 1e-3) / 1e12
    _num(row, "tflops")


def normalise_row(obj: dict[str, Any]) -> dict[str, Any] | None:
    """Check one measurement row and fill defaults; ``None`` for kinds the fit ignores.

    Rows without ``kind`` from the early GEMM script (``m, n, k, median_ms,
    tflops`` and ``{"op": "d2d_copy", "bytes", "gbps_rw"}``) are recognised by
    their keys. Raises ``ValueError`` (with the reason) for a row that cannot be
    read.
    """
    kind = obj.get("kind")
    if kind is None:
        if all(k in obj for k in ("m", "n", "k")) and ("tflops" in obj or "median_ms" in obj):
            kind = "gemm"
        elif obj.get("op") == "d2d_copy" and "gbps_rw" in obj:
            return {"kind": "hbm", "bytes": obj.get("bytes"), "bandwidth_GBps": _num(obj, "gbps_rw")}
        else:
            raise ValueError("no 'kind' key and not a recognised legacy row")
    row = dict(obj)
    row["kind"] = kind
    if kind == "collective":
        _check_collective(row)
    elif kind == "gemm":
        _check_gemm(row)
    elif kind == "hbm":
        _num(row, "bandwidth_GBps")
    elif kind == "launch":
        _num(row, "overhead_us", positive=False)
    elif kind == "framework_call":
        _num(row, "time_us")
    elif kind == "comm_init":
        _num(row, "ranks")
        _num(row, "time_s")
    elif kind == "kernel":  # calibrate bench --kernels (fit.kernels reads the shape fields of each name)
        if not isinstance(row.get("name"), str) or not row["name"]:
            raise ValueError("kernel row without a 'name'")
        _num(row, "time_us")
        for key in required_fields(row):
            if key not in row:
                raise ValueError(f"kernel row {row['name']!r} lacks {key!r}")
            _num(row, key, positive=key != "ratio")
        if "hidden" in row:   # the row length the norm classes are read by (optional elsewhere)
            _num(row, "hidden")
        if row["name"] == "wave_gemm" and row.get("layout") not in ("NT", "NN", "TN"):
            raise ValueError(f"kernel row 'wave_gemm' has layout {row.get('layout')!r}, not NT, NN or TN")
    elif kind == "meta":
        pass
    else:
        return None
    return row


def _is_nccl_tests_log(path: Path) -> bool:
    if path.suffix in (".jsonl", ".json", ".ndjson"):
        return False
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096).decode("utf-8", errors="replace")
    except OSError:
        return False
    return "nccl-tests" in head or "Collective test starting" in head or "(elements)" in head


def _nccl_tests_rows(path: Path, warn: Callable[[str], None] | None) -> list[dict[str, Any]]:
    try:
        from clustersim.calibration.nccl_tests import parse_nccl_tests_log
    except ImportError:
        raise ClusterSimError(
            "looks like an nccl-tests log, but the nccl-tests importer is not available; "
            "convert it first with `clustersim calibrate import-nccl-tests`", file=str(path)) from None
    return list(parse_nccl_tests_log(str(path), warn=warn))


def _add_row(out: Measurements, obj: dict[str, Any], file: str, line: int | None,
             skip: Callable[[str], None]) -> None:
    """Append ``obj`` to ``out.rows`` normalised, with its ``file`` (unless it names one) and ``line``
    (JSON lines; ``None`` for a row of an nccl-tests log, which has no line of its own); a row that
    cannot be read goes to ``skip`` with the reason instead; a kind the fit ignores is dropped.

    >>> out, skipped = Measurements(), []
    >>> _add_row(out, {"kind": "hbm", "bandwidth_GBps": 4000}, "m.jsonl", 3, skipped.append)
    >>> _add_row(out, {"kind": "hbm", "bandwidth_GBps": -1}, "m.jsonl", 4, skipped.append)
    >>> _add_row(out, {"kind": "trace"}, "m.jsonl", 5, skipped.append)
    >>> out.rows
    [{'kind': 'hbm', 'bandwidth_GBps': 4000, 'file': 'm.jsonl', 'line': 3}]
    >>> skipped
    ["m.jsonl:4: skipped ('bandwidth_GBps' must be > 0, got -1)"]
    """
    try:
        row = normalise_row(obj)
    except ValueError as exc:
        skip(f"{file}: skipped a row ({exc})" if line is None else f"{file}:{line}: skipped ({exc})")
        return
    if row is not None:
        row.setdefault("file", file)
        if line is not None:
            row["line"] = line
        out.rows.append(row)


def _check_usable(out: Measurements, path: str | Path, rows_before: int, skipped_before: int) -> None:
    """Refuse a file most of whose rows were skipped: fitting the rest would hide a broken file."""
    bad = len(out.skipped) - skipped_before
    total = bad + len(out.rows) - rows_before
    if bad and 2 * bad > total:
        first = out.skipped[skipped_before].split(": skipped", 1)[-1].strip().removeprefix("(").removesuffix(")")
        raise ClusterSimError(f"{bad} of {total} rows unusable (first: {first}); nothing from this file was used",
                              file=str(path))


def read_measurements(paths: Iterable[str | Path], *, warn: Callable[[str], None] | None = None,
                      refuse_mostly_bad: bool = False) -> Measurements:
    """Read Contract 3 JSON-lines files (and nccl-tests logs, when the importer is installed).

    A line that is not a JSON object, or a row that cannot be read (missing or
    bad fields), is reported through ``warn`` as ``file:line: reason`` and
    skipped; it is never read half-way. Rows of JSON-lines files carry their
    ``line`` (1-based) and, unless they name one, their ``file``.

    ``refuse_mostly_bad`` (``calibrate fit`` and ``report``): a file of which more than half the
    rows were skipped is refused as a whole (``N of M rows unusable``), not fitted from the rest.

    Raises
    ------
    ClusterSimError
        A file is missing, a folder, or binary; or mostly unusable with ``refuse_mostly_bad``.
    """
    out = Measurements()
    for path in paths:
        p = require_file(path)
        out.files.append(str(path))
        counts = (len(out.rows), len(out.skipped))

        def skip(msg: str) -> None:
            out.skipped.append(msg)
            if warn:
                warn(msg)

        if _is_nccl_tests_log(p):
            for obj in _nccl_tests_rows(p, skip):
                _add_row(out, obj, str(path), None, skip)
            if refuse_mostly_bad:
                _check_usable(out, path, *counts)
            continue
        # a NUL byte is never in a text file: refuse the whole file rather than report every line of it
        if b"\x00" in read_input(p, limit=MAX_MEASUREMENT_BYTES, what="measurement files"):
            raise ClusterSimError("binary file (not JSON lines)", file=str(path))
        for lineno, obj in iter_rows(path, warn=skip):
            _add_row(out, obj, str(path), lineno, skip)
        if refuse_mostly_bad:
            _check_usable(out, path, *counts)
    return out
