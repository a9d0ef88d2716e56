"""The result tables of a sweep: CSV and Parquet, one row per point, written atomically.

Both files are written to a temporary name, fsynced and renamed over the old one, so a reader
never sees half a table. The same rows give byte-identical files: values are formatted without
locale or timing (floats as their shortest round-trip repr), and the Parquet file is written by
pyarrow from explicit column types with no pandas or wall-clock metadata.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any, Iterable

from clustersim.files import write_output


def _atomic_write(path: Path, data: bytes) -> None:
    write_output(path, data)


def cell(value: Any) -> str:
    """CSV text of one value: empty for None, true/false, repr for floats, JSON for lists and mappings.

    >>> [cell(v) for v in (None, True, 3, 0.1, "a,b", [1, 2])]
    ['', 'true', '3', '0.1', 'a,b', '[1, 2]']
    """
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, dict)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def write_csv(path: str | Path, rows: list[dict[str, Any]], columns: list[str]) -> None:
    """Write ``rows`` (missing keys empty) under the header ``columns``."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        w.writerow([cell(r.get(c)) for c in columns])
    _atomic_write(Path(path), buf.getvalue().encode("utf-8"))


def column_type(values: Iterable[Any]):
    """The Arrow type of a column: bool, int64, float64 (ints and floats mixed) or string (anything else)."""
    import pyarrow as pa

    kinds = set()
    for v in values:
        if v is None:
            continue
        if isinstance(v, bool):
            kinds.add("bool")
        elif isinstance(v, int):
            kinds.add("int")
        elif isinstance(v, float):
            kinds.add("float")
        else:
            kinds.add("str")
    if kinds == {"bool"}:
        return pa.bool_()
    if kinds == {"int"}:
        return pa.int64()
    if kinds and kinds <= {"int", "float"}:
        return pa.float64()
    return pa.string()


def write_parquet(path: str | Path, rows: list[dict[str, Any]], columns: list[str]) -> None:
    """Write ``rows`` as a Parquet file with one typed column per name in ``columns``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrays, fields = [], []
    for c in columns:
        vals = [r.get(c) for r in rows]
        t = column_type(vals)
        if t == pa.string():
            vals = [None if v is None else (v if isinstance(v, str) else cell(v)) for v in vals]
        elif t == pa.float64():
            vals = [None if v is None else float(v) for v in vals]
        arrays.append(pa.array(vals, type=t))
        fields.append(pa.field(c, t))
    table = pa.Table.from_arrays(arrays, schema=pa.schema(fields))
    buf = pa.BufferOutputStream()
    pq.write_table(table, buf, compression="zstd")
    _atomic_write(Path(path), buf.getvalue().to_pybytes())


def read_parquet_rows(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a Parquet file written by :func:`write_parquet` (for tests and notebooks)."""
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pylist()
