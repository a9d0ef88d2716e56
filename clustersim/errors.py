"""The one exception type a user can cause.

The CLI turns :class:`ClusterSimError` into exit code 2 and a one-line message
``<file>: <field path>: <reason>`` (parts that do not apply are left out).
"""

from __future__ import annotations


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
