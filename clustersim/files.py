"""The one reader of a user's input file and the one writer of every output file.

Every command reads its file arguments through :func:`read_input` (or :func:`read_text`,
:func:`load_json`) and writes every ``-o``/``--write-best``/``--plot``/``--html``/``--trace``
through :func:`write_output` or :func:`output_path`, so the rules below hold everywhere:

- **Regular files only**, decided by ``stat`` before the file is opened: a named pipe with no
  writer would block the open forever, ``/dev/zero`` and ``/dev/urandom`` never end, a folder
  is not a file. Each is refused by name (``a named pipe (FIFO), not a regular file``).
- **The size limit is checked before reading** (from ``st_size``), and the read stops one byte
  past the limit, so a file that grows while it is read cannot take the memory either.
- **JSON**: nesting deeper than :data:`MAX_DEPTH` is refused before parsing (a 100,000-deep
  array overflows the parser's recursion), and integers of more than
  :data:`~clustersim.budget.MAX_INT_DIGITS` digits before Python converts them.
- **Outputs are atomic**: the bytes go to a hidden temporary file beside the target, flushed
  and fsynced, then renamed over it, so a full disk or a killed run never leaves half a file.
  A target that exists and is not a regular file (``/dev/stdout``, ``/dev/full``, a pipe) is
  written in place. Any OS error (a folder as target, a read-only place, no space left) is a
  :class:`~clustersim.errors.ClusterSimError` naming the path and the reason (exit 2).

Examples
--------
>>> import os, tempfile
>>> d = tempfile.mkdtemp()
>>> read_input(d)                                         # doctest: +ELLIPSIS
Traceback (most recent call last):
...
clustersim.errors.ClusterSimError: /...: is a folder, not a file
>>> os.mkfifo(os.path.join(d, "pipe"))
>>> read_input(os.path.join(d, "pipe"))                   # doctest: +ELLIPSIS
Traceback (most recent call last):
...
clustersim.errors.ClusterSimError: /.../pipe: a named pipe (FIFO), not a regular file
>>> p = write_output(os.path.join(d, "a.json"), '{"n": 1}')
>>> load_json(p)
{'n': 1}
>>> write_output(d, "x")                                   # doctest: +ELLIPSIS
Traceback (most recent call last):
...
clustersim.errors.ClusterSimError: /...: cannot write: is a folder
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
from pathlib import Path
from typing import Any, Iterator

from clustersim.errors import ClusterSimError, require_file

#: Default size limit of an input file: 4 MiB, 60x the largest shipped topology, scenario or profile.
MAX_INPUT_BYTES = 4 * 2**20

#: Deepest nesting of lists and mappings a JSON input may have. The deepest clustersim writes is 6
#: (a plan's rows); Python's recursion limit of 1,000 is what a 100,000-deep array overflows.
MAX_DEPTH = 100

#: Same as :data:`clustersim.budget.MAX_INT_DIGITS` (kept here so the reader imports only errors).
MAX_INT_DIGITS = 30


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def check_regular(path: str | os.PathLike[str]) -> os.stat_result:
    """``stat`` of ``path`` after :func:`~clustersim.errors.require_file` (an existing regular file;
    FIFOs, devices and folders refused by ``stat`` before anything opens them)."""
    require_file(path)
    try:
        return os.stat(path)
    except OSError as exc:
        raise ClusterSimError(f"cannot read: {_reason(exc)}", file=str(path)) from None


def read_input(path: str | os.PathLike[str], *, limit: int = MAX_INPUT_BYTES, what: str = "input files") -> bytes:
    """The bytes of a user's input file: a regular file of at most ``limit`` bytes.

    Parameters
    ----------
    path:
        The file argument as the user gave it (named in every message).
    limit:
        Largest size in bytes, checked from ``stat`` before reading.
    what:
        The kind of file, for the size message (``measurement files``).
    """
    st = check_regular(path)
    if st.st_size > limit:
        raise ClusterSimError(f"file of {st.st_size:,} bytes exceeds the {limit:,}-byte limit of {what}",
                              file=str(path))
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise ClusterSimError(f"cannot read: {_reason(exc)}", file=str(path)) from None
    if len(data) > limit:  # it grew after the stat
        raise ClusterSimError(f"file grew past the {limit:,}-byte limit of {what} while it was read", file=str(path))
    return data


def read_text(path: str | os.PathLike[str], *, limit: int = MAX_INPUT_BYTES, what: str = "input files",
              kind: str = "text") -> str:
    """:func:`read_input` decoded as UTF-8; NUL bytes and other encodings are refused (``binary file (not <kind>)``)."""
    raw = read_input(path, limit=limit, what=what)
    if b"\x00" in raw:
        raise ClusterSimError(f"binary file (not {kind})", file=str(path))
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ClusterSimError(f"not UTF-8 text (byte {exc.start}; not {kind})", file=str(path)) from None


_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)


def json_depth(text: str) -> int:
    """Deepest nesting of ``[``/``{`` in JSON text, strings left out (a linear scan, no recursion).

    >>> json_depth('{"a": [1, [2, "]]]"]], "b": {}}')
    3
    """
    depth = best = 0
    for ch in re.findall(r"[\[\]{}]", _STRINGS.sub("", text)):
        depth += 1 if ch in "[{" else -1
        best = max(best, depth)
    return best


def _bounded_int(text: str) -> int:
    digits = text.lstrip("+-")
    if len(digits) > MAX_INT_DIGITS:
        raise ClusterSimError(f"integer of {len(digits)} digits (more than {MAX_INT_DIGITS}: no count or size this "
                              "tool uses is that large)")
    return int(text)


def parse_json(text: str, *, file: str | None = None, not_json: str = "") -> Any:
    """JSON text to a value, refusing deep nesting and long integers before they reach the parser.

    ``not_json`` is added to the message of text that is not JSON (`` and not a sweep CSV``).

    >>> parse_json('[' * 200 + ']' * 200)
    Traceback (most recent call last):
    ...
    clustersim.errors.ClusterSimError: JSON nested 200 deep (more than 100: not a clustersim file)
    >>> parse_json('{"n": ' + '9' * 40 + '}', file="r.json")
    Traceback (most recent call last):
    ...
    clustersim.errors.ClusterSimError: r.json: integer of 40 digits (more than 30: no count or size this tool uses is that large)
    """
    if text.count("[") + text.count("{") > MAX_DEPTH:  # the scan costs only when nesting is possible
        depth = json_depth(text)
        if depth > MAX_DEPTH:
            raise ClusterSimError(f"JSON nested {depth} deep (more than {MAX_DEPTH}: not a clustersim file)", file=file)
    try:
        return json.loads(text, parse_int=_bounded_int)
    except ClusterSimError as exc:
        raise exc.with_file(file) if file else exc from None
    except json.JSONDecodeError as exc:
        raise ClusterSimError(f"not JSON ({exc.msg} at line {exc.lineno} column {exc.colno}){not_json}",
                              file=file) from None
    except RecursionError:
        raise ClusterSimError(f"JSON nested too deeply to read{not_json}", file=file) from None


def load_json(path: str | os.PathLike[str], *, limit: int = MAX_INPUT_BYTES, what: str = "JSON files") -> Any:
    """A JSON input file through :func:`read_text` and :func:`parse_json`."""
    return parse_json(read_text(path, limit=limit, what=what, kind="JSON"), file=str(path))


def _temp_beside(target: Path) -> Path:
    return target.with_name(f".{target.name}.tmp-{os.getpid()}")


def _cannot(what: str) -> str:
    return f"cannot write {what}" if what else "cannot write"


def _refuse_folder(target: Path, what: str) -> None:
    if target.is_dir():
        raise ClusterSimError(f"{_cannot(what)}: is a folder", file=str(target))


def _in_place(target: Path) -> bool:
    """Whether ``target`` exists and is not a regular file (a device, a pipe): written where it is."""
    try:
        return not stat.S_ISREG(os.stat(target).st_mode)
    except OSError:
        return False


@contextlib.contextmanager
def output_path(path: str | os.PathLike[str], what: str = "") -> Iterator[Path]:
    """A temporary path beside ``path`` for a library that writes by file name (``savefig``, an
    HTML renderer); renamed over ``path`` when the block ends without an error.

    An :class:`OSError` inside the block or at the rename becomes ``<path>: cannot write <what>: <reason>``.
    """
    target = Path(path)
    _refuse_folder(target, what)
    tmp = target if _in_place(target) else _temp_beside(target)
    try:
        yield tmp
        if tmp != target:
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
            os.replace(tmp, target)
    except OSError as exc:
        raise ClusterSimError(f"{_cannot(what)}: {_reason(exc)}", file=str(target)) from None
    finally:
        if tmp != target:
            with contextlib.suppress(OSError):
                tmp.unlink()


def write_output(path: str | os.PathLike[str], data: str | bytes, what: str = "") -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` atomically; returns ``path`` as a :class:`Path`.

    ``what`` names the output in the message (``cannot write the plot: ...``).

    Raises
    ------
    ClusterSimError
        ``<path>: cannot write <what>: <reason>`` (``is a folder``, ``Permission denied``,
        ``No space left on device``, ``Not a directory``...).
    """
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with output_path(path, what) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(raw)
            fh.flush()  # a device target (/dev/full) reports its error here, inside the block
    return Path(path)


def check_writable(path: str | os.PathLike[str], what: str = "") -> None:
    """Refuse, before any work, an output target that cannot be written: a folder, a path under a
    file or a missing folder, or a folder without write permission. (A full disk shows only when
    written; :func:`write_output` reports it then.)"""
    target = Path(path)
    _refuse_folder(target, what)
    if _in_place(target):
        return
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.exists():
        raise ClusterSimError(f"{_cannot(what)}: folder {parent} does not exist", file=str(target))
    if not parent.is_dir():
        raise ClusterSimError(f"{_cannot(what)}: {parent} is not a folder", file=str(target))
    if not os.access(parent, os.W_OK):
        raise ClusterSimError(f"{_cannot(what)}: Permission denied", file=str(target))


def make_folder(path: str | os.PathLike[str]) -> Path:
    """Create an output folder (and its parents); an OS error is ``<path>: cannot write: <reason>``."""
    target = Path(path)
    try:
        target.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise ClusterSimError("cannot write: exists and is not a folder", file=str(target)) from None
    except OSError as exc:
        raise ClusterSimError(f"cannot write: {_reason(exc)}", file=str(target)) from None
    if not os.access(target, os.W_OK):
        raise ClusterSimError("cannot write: Permission denied", file=str(target))
    return target
