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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from clustersim.budget import MAX_MEASUREMENT_BYTES
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


def _parse_line(raw: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """One line -> (row, None), (None, reason) for garbage, or (None, None) for a blank or ``#`` comment line."""
    text = raw.decode("utf-8", errors="replace").strip()
    if not text or text.startswith("#"):
        return None, None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"not a JSON object: {exc.msg}"
    except (ValueError, RecursionError) as exc:  # a 5,000-digit number, nesting deeper than the parser's stack
        return None, f"not a JSON object: {str(exc).split(':')[0] if isinstance(exc, ValueError) else 'nested too deeply'}"
    if not isinstance(obj, dict):
        return None, f"expected a JSON object, got {type(obj).__name__}"
    return obj, None


def _lines(path: str | Path) -> Iterator[tuple[int, Any, str | None]]:
    """``(line number, object, None)`` per row and ``(line number, None, reason)`` per unreadable line."""
    p = require_file(path)
    size = p.stat().st_size
    if size > MAX_MEASUREMENT_BYTES:
        raise ClusterSimError(f"file of {size:,} bytes exceeds the {MAX_MEASUREMENT_BYTES:,}-byte limit of "
                              "measurement files (a 16-rank bench writes ~2 MB); split it", file=str(path))
    try:
        with open(p, "rb") as fh:
            for lineno, raw in enumerate(fh, 1):
                obj, reason = _parse_line(raw)
                if reason is not None:
                    if not raw.endswith(b"\n"):
                        reason = f"truncated last line ({reason})"
                    yield lineno, None, reason
                elif obj is not None:
                    yield lineno, obj, None
    except OSError as exc:
        raise ClusterSimError(f"cannot read: {exc.strerror or exc}", file=str(path)) from None


def scan_rows(path: str | Path) -> tuple[list[dict[str, Any]], list[tuple[int, str]]]:
    """Rows of a measurement file and its unreadable lines as ``(line number, reason)``.

    Blank lines and ``#`` comment lines are neither. A last line without its newline that is
    not a JSON object is reported as truncated (a run killed while writing it).

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "m.jsonl")
    >>> _ = open(p, "w").write('{"kind": "gemm"}\\nGARBAGE\\n{"kind": "hbm", "by')
    >>> rows, bad = scan_rows(p)
    >>> [r["kind"] for r in rows], [n for n, _ in bad]
    (['gemm'], [2, 3])
    """
    rows: list[dict[str, Any]] = []
    bad: list[tuple[int, str]] = []
    for lineno, obj, reason in _lines(path):
        if reason is None:
            rows.append(obj)
        else:
            bad.append((lineno, reason))
    return rows, bad


def read_rows(path: str | Path, *, strict: bool = False, warn: Callable[[str], None] | None = _warn) -> list[dict[str, Any]]:
    """Read a measurement file.

    Parameters
    ----------
    path:
        A ``.jsonl`` file of Contract 3 rows.
    strict:
        Raise :class:`ClusterSimError` (naming the file and line) on a line that
        is not a JSON object. Otherwise such a line is reported through ``warn``
        as ``file:line: skipped (reason)`` and skipped (a run killed while writing
        its last row leaves a fragment). Blank lines and ``#`` comments are skipped silently.
    """
    return [obj for _, obj in iter_rows(path, strict=strict, warn=warn)]


def iter_rows(path: str | Path, *, strict: bool = False,
              warn: Callable[[str], None] | None = _warn) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each JSON object of a measurement file, as :func:`read_rows` reads it.

    Lazy: a bad line is reported (or raised, with ``strict``) when iteration
    reaches it, so a caller's own per-row messages stay in line order.
    """
    for lineno, obj, reason in _lines(path):
        if reason is None:
            yield lineno, obj
        elif strict:
            raise ClusterSimError(f"line {lineno}: {reason}", file=str(path))
        elif warn:
            warn(f"{path}:{lineno}: skipped ({reason})")


def existing_keys(path: str | Path) -> set[tuple]:
    """Resume keys of the rows already in ``path`` (empty set when it does not exist)."""
    return resume_state(path).done


@dataclass
class ResumeState:
    """What a file already holds, for a run that appends to it.

    Attributes
    ----------
    done:
        :func:`row_key` of every row (points a resumed run skips).
    meta_runs:
        ``row_key`` of each ``meta`` row -> the run id of its latest run (a resumed run with the
        same configuration continues that run id, so no row is left without its meta row).
    bad_lines:
        ``(line number, reason)`` of the lines that are not rows.
    """

    done: set[tuple] = field(default_factory=set)
    meta_runs: dict[tuple, str] = field(default_factory=dict)
    bad_lines: list[tuple[int, str]] = field(default_factory=list)

    def run_for(self, meta_key_row: dict[str, Any]) -> str | None:
        """Run id to continue for a configuration whose meta key is ``meta_key_row`` (None: start a new run)."""
        return self.meta_runs.get(row_key(meta_key_row))


def resume_state(path: str | Path) -> ResumeState:
    """The :class:`ResumeState` of ``path`` (empty when the file does not exist)."""
    p = Path(path)
    if not p.exists():
        return ResumeState()
    rows, bad = scan_rows(p)
    st = ResumeState(bad_lines=bad)
    for r in rows:
        st.done.add(row_key(r))
        if r.get("kind") == "meta" and isinstance(r.get("run_id"), str):
            st.meta_runs[row_key(r)] = r["run_id"]
    return st


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
            raise ClusterSimError("cannot write: is a folder, not a file", file=str(path))
        if any(q.exists() and not q.is_dir() for q in self.path.parents):
            raise ClusterSimError("cannot write: Not a directory (a file on its path)", file=str(path))
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.path.is_file():  # a device or a pipe (/dev/full, /dev/stdout) is written as it is
                _repair_tail(self.path)
                _, bad = scan_rows(self.path)
                if bad:  # kept as they are (never rewrite measurements), but not silently
                    lines = ", ".join(str(n) for n, _ in bad[:10]) + (f" and {len(bad) - 10} more" if len(bad) > 10 else "")
                    _warn(f"{self.path}: appending to a file with {len(bad)} unreadable line(s) ({lines}; first: "
                          f"{bad[0][1]}); readers skip them")
            self._fh = open(self.path, "a", encoding="utf-8")
        except OSError as exc:
            raise ClusterSimError(f"cannot write: {exc.strerror or exc}", file=str(path)) from None
        self.written = 0

    def write(self, row: dict[str, Any]) -> dict[str, Any]:
        """Write one row (common keys first, then the row's own) and flush it."""
        full = {**{k: v for k, v in self.common.items() if k not in row}, **row}
        line = json.dumps(_clean(full), allow_nan=False, separators=(", ", ": "))
        try:
            self._fh.write(line + "\n")
            self._fh.flush()
            if self._fsync and self.path.is_file():
                os.fsync(self._fh.fileno())
        except OSError as exc:
            raise ClusterSimError(f"cannot write: {exc.strerror or exc}", file=str(self.path)) from None
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
            try:
                if not self._fsync and self.path.is_file():
                    self._fh.flush()
                    os.fsync(self._fh.fileno())  # once for the whole file (an import of 44,000 rows: 60 s -> 2 s)
                self._fh.close()
            except OSError as exc:
                raise ClusterSimError(f"cannot write: {exc.strerror or exc}", file=str(self.path)) from None

    def __enter__(self) -> "RowWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
