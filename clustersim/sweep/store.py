"""The journal of finished points: one JSON line per point, fsynced, read back to resume.

A sweep appends each finished point's record (``{"id", "row", "wall_s"}``) as one line and
fsyncs it, so a sweep killed at any moment loses at most the point being written. On resume the
journal is read back, a torn last line (the write the kill interrupted) is cut off, and points whose
id is already there are not evaluated again.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from clustersim.errors import ClusterSimError

JOURNAL = "points.jsonl"


class ResultStore:
    """Append-only journal of point records in ``folder/points.jsonl``.

    Examples
    --------
    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> with ResultStore(d) as s:
    ...     s.append({"id": "a1", "row": {"step_time_s": 1.5}, "wall_s": 0.1})
    >>> sorted(ResultStore(d).load())
    ['a1']
    """

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self.path = self.folder / JOURNAL
        self._fh = None

    def load(self) -> dict[str, dict[str, Any]]:
        """Records already in the journal, by id (a torn last line is ignored)."""
        if not self.path.exists():
            return {}
        out: dict[str, dict[str, Any]] = {}
        lines = self.path.read_bytes().split(b"\n")
        for n, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                if n == len(lines) - 1:
                    break  # the write an interruption cut short
                raise ClusterSimError(f"line {n + 1} is not JSON (a damaged journal: remove it or use --fresh)",
                                      file=str(self.path)) from None
            if not isinstance(rec, dict) or "id" not in rec or "row" not in rec:
                raise ClusterSimError(f"line {n + 1} is not a point record", file=str(self.path))
            out[rec["id"]] = rec
        return out

    def open(self, fresh: bool = False) -> "ResultStore":
        """Open for appending (``fresh`` empties the journal first); cuts a torn last line.

        An OS error (the folder's parent is a file, a read-only place) is ``<folder>: cannot write: <reason>``.
        """
        try:
            return self._open(fresh)
        except OSError as exc:
            raise ClusterSimError(f"cannot write: {exc.strerror or exc}", file=str(self.folder)) from None

    def _open(self, fresh: bool) -> "ResultStore":
        self.folder.mkdir(parents=True, exist_ok=True)
        if fresh and self.path.exists():
            self.path.unlink()
        if self.path.exists():
            data = self.path.read_bytes()
            if data and not data.endswith(b"\n"):
                # an interrupted write left half a line: appending after it would glue two records
                with open(self.path, "r+b") as fh:
                    fh.truncate(data.rfind(b"\n") + 1)
        self._fh = open(self.path, "a", encoding="utf-8")
        return self

    def append(self, record: dict[str, Any]) -> None:
        """Write one record as a line and fsync it (it survives a crash right after)."""
        if self._fh is None:
            self.open()
        self._fh.write(json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        """Close the journal file."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def __enter__(self) -> "ResultStore":
        return self if self._fh is not None else self.open()

    def __exit__(self, *exc) -> None:
        self.close()
