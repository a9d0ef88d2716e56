"""Measurement files: JSON lines written and flushed row by row, read back with resume keys.

Contract 3 (``docs/architecture.md``): one JSON object per line. A bench run that
is killed half-way keeps every row it finished (each row is one ``write`` followed
by ``flush`` and ``fsync``), and a re-run with the same file skips the points whose
:func:`row_key` is already present.

Examples
--------
>>> import tempfile, os
>>> p = os.path.join(tempfile.mkdtemp(), "m.jsonl")
>>> with RowWriter(p) as w:
...     _ = w.write({"kind": "collective", "op": "all_reduce", "size_bytes": 1024, "mode": "nccl", "ranks": 2})
>>> [r["op"] for r in read_rows(p)]
['all_reduce']
>>> row_key({"kind": "collective", "op": "all_reduce", "size_bytes": 1024, "mode": "nccl", "ranks": 2}) in existing_keys(p)
True
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from clustersim.errors import ClusterSimError, require_file

#: Fields that identify a measured point (the resume key). Measured values
#: (times, bandwidths) and bookkeeping (run_id, date, host) are not part of it.
KEY_FIELDS = (
    "kind", "op", "size_bytes", "bytes", "mode", "ranks", "nodes", "scope", "group", "inplace", "dtype",
    "algorithm", "protocol", "nvls", "m", "n", "k", "device", "backend", "world_size",
)


def _clean(value: Any) -> Any:
    """JSON-safe value: NaN/inf become None, tuples become lists."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def row_key(row: dict[str, Any]) -> tuple:
    """The identity of a measured point, used to skip it on resume.

    Two rows with the same key measured the same thing (same kind, operation,
    size, mode, rank count, dtype, algorithm/protocol forcing, GEMM shape, ...).
    """
    return tuple((f, _freeze(row.get(f))) for f in KEY_FIELDS if row.get(f) is not None)


def _freeze(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _freeze(x)) for k, x in v.items()))
    return v


def _warn(msg: str) -> None:
    sys.stderr.write(f"warning: {msg}\n")
    sys.stderr.flush()


def read_rows(path: str | Path, *, strict: bool = False, warn: Callable[[str], None] | None = _warn) -> list[dict[str, Any]]:
    """Read a measurement file.

    Parameters
    ----------
    path:
        A ``.jsonl`` file of Contract 3 rows.
    strict:
        Raise :class:`ClusterSimError` (naming the file and line) on a line that
        is not a JSON object. Otherwise such a line is reported through ``warn``
        and skipped (a run killed while writing its last row leaves a fragment).
    """
    return [obj for _, obj in iter_rows(path, strict=strict, warn=warn)]


def iter_rows(path: str | Path, *, strict: bool = False,
              warn: Callable[[str], None] | None = _warn) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each JSON object of a measurement file, as :func:`read_rows` reads it.

    Lazy: a bad line is reported (or raised, with ``strict``) when iteration
    reaches it, so a caller's own per-row messages stay in line order.
    """
    p = require_file(path)
    with open(p, "rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            text = raw.decode("utf-8", errors="replace").strip()
            if not text:
                continue
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as exc:
                msg = f"line {lineno}: not a JSON object ({exc.msg})"
                if strict:
                    raise ClusterSimError(msg, file=str(path)) from None
                if warn:
                    warn(f"{path}:{lineno}: skipped (not a JSON object: {exc.msg})")
                continue
            if not isinstance(obj, dict):
                msg = f"line {lineno}: expected a JSON object, got {type(obj).__name__}"
                if strict:
                    raise ClusterSimError(msg, file=str(path))
                if warn:
                    warn(f"{path}:{lineno}: skipped ({msg})")
                continue
            yield lineno, obj


def existing_keys(path: str | Path) -> set[tuple]:
    """Resume keys of the rows already in ``path`` (empty set when it does not exist)."""
    p = Path(path)
    if not p.exists():
        return set()
    return {row_key(r) for r in read_rows(p, warn=None)}


def _repair_tail(p: Path) -> None:
    """Make sure an existing file ends with a newline before appending.

    A run killed in the middle of ``write`` can leave a last line without its
    newline. If that fragment is a complete JSON object it is kept (a newline is
    added); otherwise it cannot be a measurement and is cut off, with a warning.
    """
    size = p.stat().st_size
    if size == 0:
        return
    with open(p, "rb+") as fh:
        fh.seek(max(0, size - 1))
        if fh.read(1) == b"\n":
            return
        # find the start of the last line
        block = 1 << 16
        pos = size
        start = 0
        while pos > 0:
            step = min(block, pos)
            pos -= step
            fh.seek(pos)
            chunk = fh.read(step)
            i = chunk.rfind(b"\n")
            if i >= 0:
                start = pos + i + 1
                break
        fh.seek(start)
        frag = fh.read()
        try:
            ok = isinstance(json.loads(frag.decode("utf-8")), dict)
        except (UnicodeDecodeError, json.JSONDecodeError):
            ok = False
        if ok:
            fh.seek(size)
            fh.write(b"\n")
        else:
            _warn(f"{p}: removed an incomplete last line ({len(frag)} bytes, a row cut off by an interrupted run)")
            fh.truncate(start)
        fh.flush()
        os.fsync(fh.fileno())


class RowWriter:
    """Append rows to a JSON-lines file, one flushed (and fsynced) line per row.

    Parameters
    ----------
    path:
        Output file; created (with its folder) when missing, appended to otherwise.
    common:
        Keys added to every row unless the row sets them (``source``, ``run_id``...).
    fsync:
        Also ``os.fsync`` after each row, so a crash of the machine keeps it too.
    """

    def __init__(self, path: str | Path, common: dict[str, Any] | None = None, *, fsync: bool = True):
        self.path = Path(path)
        self.common = dict(common or {})
        self._fsync = fsync
        if self.path.is_dir():
            raise ClusterSimError("is a folder, not a file", file=str(path))
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.path.exists():
                _repair_tail(self.path)
            self._fh = open(self.path, "a", encoding="utf-8")
        except OSError as exc:
            raise ClusterSimError(f"cannot write: {exc.strerror or exc}", file=str(path)) from None
        self.written = 0

    def write(self, row: dict[str, Any]) -> dict[str, Any]:
        """Write one row (common keys first, then the row's own) and flush it."""
        full = {**{k: v for k, v in self.common.items() if k not in row}, **row}
        line = json.dumps(_clean(full), allow_nan=False, separators=(", ", ": "))
        self._fh.write(line + "\n")
        self._fh.flush()
        if self._fsync:
            os.fsync(self._fh.fileno())
        self.written += 1
        return full

    def write_all(self, rows: Iterable[dict[str, Any]]) -> int:
        """Write many rows; returns how many."""
        n = 0
        for r in rows:
            self.write(r)
            n += 1
        return n

    def close(self) -> None:
        """Close the file (rows are already on disk)."""
        if not self._fh.closed:
            self._fh.close()

    def __enter__(self) -> "RowWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
