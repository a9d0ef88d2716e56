"""The one exception type a user can cause, and the one check that an input file is there.

The CLI turns :class:`ClusterSimError` into exit code 2 and a one-line message
``<file>: <field path>: <reason>`` (parts that do not apply are left out).
:func:`require_file` is the check every reader of a user's file starts with
(YAML, JSON lines, nccl-tests logs, topology dumps), so a missing file or a
folder is reported in the same words everywhere.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


class ClusterSimError(Exception):
    """An error caused by the user's input (a file, a field, an argument).

    Parameters
    ----------
    reason:
        What is wrong, in words.
    file:
        The file the input came from, if any.
    field:
        Dotted path of the offending field inside the file (``parallelism.tp``).

    Examples
    --------
    >>> str(ClusterSimError("must be > 0", file="a.yaml", field="links.0.bandwidth_GBps"))
    'a.yaml: links.0.bandwidth_GBps: must be > 0'
    """

    def __init__(self, reason: str, *, file: str | None = None, field: str | None = None):
        self.reason = reason
        self.file = str(file) if file is not None else None
        self.field = field
        super().__init__(self.message)

    @property
    def message(self) -> str:
        parts = [p for p in (self.file, self.field) if p]
        parts.append(self.reason)
        return ": ".join(parts)

    def with_file(self, file: str) -> "ClusterSimError":
        """Return a copy that names ``file`` (keeps an existing file name)."""
        return ClusterSimError(self.reason, file=self.file or file, field=self.field)


def require_file(path: str | os.PathLike[str]) -> Path:
    """``path`` as a :class:`~pathlib.Path`, after checking with ``stat`` (nothing is opened) that
    it is an existing regular file.

    A named pipe with no writer blocks an ``open`` forever and ``/dev/zero`` never ends, so
    they are refused here, before any reader opens them (:mod:`clustersim.files` reads the
    file within its size limit).

    Raises
    ------
    ClusterSimError
        ``file not found``, ``is a folder, not a file``, ``a named pipe (FIFO), not a regular
        file`` (character and block devices, sockets likewise) or ``cannot read: <reason>``,
        naming ``path``.

    Examples
    --------
    >>> require_file("no/such/file.yaml")
    Traceback (most recent call last):
    ...
    clustersim.errors.ClusterSimError: no/such/file.yaml: file not found
    >>> require_file("/dev/null")
    Traceback (most recent call last):
    ...
    clustersim.errors.ClusterSimError: /dev/null: a character device, not a regular file
    """
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise ClusterSimError("file not found", file=str(path)) from None
    except OSError as exc:
        raise ClusterSimError(f"cannot read: {exc.strerror or exc}", file=str(path)) from None
    if stat.S_ISDIR(mode):
        raise ClusterSimError("is a folder, not a file", file=str(path))
    if not stat.S_ISREG(mode):
        kinds = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
                 (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
        kind = next((name for test, name in kinds if test(mode)), "not a plain file")
        raise ClusterSimError(f"{kind}, not a regular file", file=str(path))
    return Path(path)
