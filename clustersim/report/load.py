"""Read a results file for ``clustersim report`` and say what it is: a run, a plan or a sweep.

The three inputs are the files the other commands write:

* **run**: the JSON document of ``clustersim run --json`` (a step time, its breakdown, ...);
* **plan**: the JSON document of ``clustersim plan --json`` (``evaluated``, ``constraints``, ``plans``);
* **sweep**: the output folder of ``clustersim sweep`` (its ``results.csv`` and PNG plots), the
  ``results.csv`` itself, or the ``clustersim sweep --json`` document (``study``, ``columns``, ``rows``).

The kind is decided by the keys each command always writes (:func:`detect_kind`), never by the
file name. Anything else is a :class:`~clustersim.errors.ClusterSimError` naming the file and
why (exit code 2 on the command line): no such file, not UTF-8, not JSON, a JSON document of no
known kind, a CSV without the sweep's columns, a folder without ``results.csv``.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clustersim.errors import ClusterSimError
from clustersim.files import parse_json, read_input

#: Largest results file read (a plan of 30,528 mixes listed in full is ~25 MB of JSON; a
#: 100,000-point sweep CSV of ~60 columns ~60 MB).
MAX_RESULTS_BYTES = 256 * 2**20

#: Keys that every document of a kind has (written by the command's ``to_dict``).
RUN_KEYS = ("scenario", "fidelity", "n_gpus", "step_time_s", "breakdown")
PLAN_KEYS = ("scenario", "n_gpus", "evaluated", "feasible", "constraints", "plans")
SWEEP_KEYS = ("study", "columns", "rows")
#: Columns every sweep's results.csv has (clustersim.sweep.runner: point, id, ..., outputs).
SWEEP_COLUMNS = ("point", "id", "run_args", "n_gpus", "step_time_s", "status")
#: Columns that are text whatever their cells look like (an id of 16 decimal digits is still an id).
STRING_COLUMNS = frozenset(("id", "run_args", "scenario", "topology", "gpu", "profile", "fidelity", "model",
                            "schedule", "dtype", "status", "error"))
#: The plots ``clustersim sweep`` writes are PNG files in its output folder.
SWEEP_CSV = "results.csv"

KINDS = ("run", "plan", "sweep")


@dataclass
class Results:
    """One loaded results input.

    Attributes
    ----------
    kind: ``run``, ``plan`` or ``sweep``.
    data: the JSON document (run, plan) or, for a sweep, ``{"study", "columns", "rows"}`` with
        rows typed back from the CSV text (numbers, booleans, None for empty cells).
    source: the path given.
    images: a sweep folder's PNG plots, ``(file name, bytes)`` sorted by name.
    """

    kind: str
    data: dict[str, Any]
    source: Path
    images: list[tuple[str, bytes]] = field(default_factory=list)


def detect_kind(doc: Any) -> str | None:
    """``run``, ``plan`` or ``sweep`` for a parsed JSON document, None when it is none of them.

    >>> detect_kind({"scenario": "s", "n_gpus": 8, "evaluated": 10, "feasible": 2,
    ...              "constraints": [], "plans": []})
    'plan'
    >>> detect_kind({"scenario": "s", "fidelity": "flow", "n_gpus": 8, "step_time_s": 1.0, "breakdown": {}})
    'run'
    >>> detect_kind({"study": "pi", "columns": ["point"], "rows": []})
    'sweep'
    >>> detect_kind([1, 2]) is None, detect_kind({"step_time_s": 1.0}) is None
    (True, True)
    """
    if not isinstance(doc, dict):
        return None
    # a plan document also has a scenario and n_gpus: test the more specific kinds first
    if all(k in doc for k in PLAN_KEYS) and isinstance(doc["plans"], list):
        return "plan"
    if all(k in doc for k in SWEEP_KEYS) and isinstance(doc["rows"], list):
        return "sweep"
    if all(k in doc for k in RUN_KEYS) and isinstance(doc["breakdown"], dict):
        return "run"
    return None


def _read(path: Path) -> bytes:
    return read_input(path, limit=MAX_RESULTS_BYTES, what="results files")


def _text(path: Path, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ClusterSimError(f"not UTF-8 text (byte {exc.start}): not a clustersim results file", file=str(path)) from None


def cell_value(text: str) -> Any:
    """A CSV cell of a sweep table back to its value (the inverse of ``clustersim.sweep.tables.cell``).

    >>> [cell_value(t) for t in ("", "true", "3", "0.1", "1e-05", "a,b", "[1, 2]", "nan")]
    [None, True, 3, 0.1, 1e-05, 'a,b', [1, 2], 'nan']
    """
    if text == "":
        return None
    if text in ("true", "false"):
        return text == "true"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        v = float(text)
    except ValueError:
        v = None
    if v is not None and v == v and v not in (float("inf"), float("-inf")):
        return v
    if text[:1] in "[{":
        try:
            return json.loads(text)
        except (ValueError, RecursionError):  # a 100,000-deep cell is text, not a value
            return text
    return text


def _sweep_csv(path: Path, text: str) -> dict[str, Any]:
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader)
    except StopIteration:
        raise ClusterSimError("empty CSV: not a sweep's results.csv", file=str(path)) from None
    except csv.Error as exc:
        raise ClusterSimError(f"not CSV: {exc}", file=str(path)) from None
    missing = [c for c in SWEEP_COLUMNS if c not in header]
    if missing:
        raise ClusterSimError(f"no column {', '.join(missing)}: not the results.csv of clustersim sweep",
                              file=str(path))
    rows = []
    try:
        for n, rec in enumerate(reader, start=2):
            if not rec:
                continue
            if len(rec) != len(header):
                raise ClusterSimError(f"line {n}: {len(rec)} cells under a header of {len(header)}", file=str(path))
            rows.append({c: (v or None) if c in STRING_COLUMNS else cell_value(v) for c, v in zip(header, rec)})
    except csv.Error as exc:
        raise ClusterSimError(f"not CSV: {exc}", file=str(path)) from None
    return {"study": None, "columns": header, "rows": rows}


def _pngs(folder: Path) -> list[tuple[str, bytes]]:
    out = []
    for p in sorted(folder.glob("*.png")):
        data = p.read_bytes()
        if data[:8] == b"\x89PNG\r\n\x1a\n":  # a half-written or foreign file is left out, not embedded
            out.append((p.name, data))
    return out


def load_results(path: str | Path) -> Results:
    """Read ``path`` (a file or a sweep folder) and tell its kind.

    >>> import json, tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "run.json"
    >>> _ = p.write_text(json.dumps({"scenario": "s", "fidelity": "flow", "n_gpus": 8,
    ...                              "step_time_s": 1.0, "breakdown": {"compute": 1.0}}))
    >>> load_results(p).kind
    'run'
    >>> _ = p.write_text('{"hello": 1}')
    >>> load_results(p)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    clustersim.errors.ClusterSimError: .../run.json: a JSON object with keys hello: not the output of clustersim run --json, plan --json or sweep ...
    """
    p = Path(path)
    if p.is_dir():
        csv_path = p / SWEEP_CSV
        if not csv_path.is_file():
            raise ClusterSimError(f"a folder without {SWEEP_CSV}: not the output folder of clustersim sweep",
                                  file=str(p))
        data = _sweep_csv(csv_path, _text(csv_path, _read(csv_path)))
        return Results("sweep", data, p, _pngs(p))
    raw = _read(p)
    text = _text(p, raw)
    if p.suffix.lower() == ".csv" or text.startswith("point,"):  # a sweep table's header starts "point,id,"
        data = _sweep_csv(p, text)
        # a results.csv inside its sweep folder brings the folder's plots along
        images = _pngs(p.parent) if (p.parent / "points.jsonl").is_file() else []
        return Results("sweep", data, p, images)
    doc = parse_json(text, file=str(p), not_json=" and not a sweep CSV")
    kind = detect_kind(doc)
    if kind is None:
        what = (f"a JSON object with keys {', '.join(sorted(doc)[:8])}{', ...' if len(doc) > 8 else ''}"
                if isinstance(doc, dict) else f"a JSON {type(doc).__name__}")
        raise ClusterSimError(f"{what}: not the output of clustersim run --json, plan --json or sweep "
                              "(a sweep's output folder or results.csv)", file=str(p))
    if kind == "sweep":
        folder = doc.get("folder")  # where that sweep wrote its plots
        images = []
        if isinstance(folder, str):
            for f in (Path(folder), p.parent / folder):
                if (f / "points.jsonl").is_file():
                    images = _pngs(f)
                    break
        doc = {"study": doc.get("study"), "columns": list(doc["columns"]), "rows": list(doc["rows"])}
        return Results("sweep", doc, p, images)
    return Results(kind, doc, p)



def load_trace(path: str | Path) -> list[dict]:
    """The trace events of a ``clustersim run --trace`` file (or any Chrome trace-event JSON).

    Accepts the object form (``{"traceEvents": [...]}``) and the bare list form.

    >>> import json, tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.json"
    >>> _ = p.write_text(json.dumps({"traceEvents": [{"ph": "X", "pid": 0, "ts": 0, "dur": 5}]}))
    >>> len(load_trace(p))
    1
    """
    p = Path(path)
    if p.is_dir():
        raise ClusterSimError("is a folder, not a trace file", file=str(p))
    text = _text(p, _read(p))
    doc = parse_json(text, file=str(p))
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list) or not all(isinstance(e, dict) for e in events):
        raise ClusterSimError("not a Chrome trace: expected {\"traceEvents\": [...]} or a list of events "
                              "(clustersim run --trace writes one)", file=str(p))
    for n, ev in enumerate(events):
        if ev.get("ph") == "X" and not (isinstance(ev.get("ts"), (int, float)) and "pid" in ev):
            raise ClusterSimError(f"event {n} has no numeric ts or no pid", file=str(p), field=f"traceEvents.{n}")
    return events
