"""Import nccl-tests logs (``all_reduce_perf`` and friends) as measurement rows (Contract 3).

Both table formats are read:

- current (v2.13+): ``size count type redop root`` then, out-of-place and
  in-place, ``time algbw busbw #wrong`` (``#wrong`` may be ``N/A``);
- older: no ``root`` column and a float ``error`` column instead of ``#wrong``.

Lines may carry launcher tags (``[1,0]<stdout>:`` from ``mpirun --tag-output``,
anywhere in the line), Windows line ends, NCCL INFO lines and other noise; those
are stripped or skipped. A line inside the results table that cannot be read
completely (truncated, a non-numeric time, an algbw that does not match
size/time) is reported as ``file:line: reason`` through ``warn`` and skipped,
never half-read.

Examples
--------
Two GPUs of one host (``Rank`` lines), one size; the file name gives the operation:

>>> import pathlib, tempfile
>>> log = pathlib.Path(tempfile.mkdtemp()) / "all_reduce_perf.txt"
>>> _ = log.write_text(
...     "#  Rank  0 Group  0 Pid 1409 on vm device  0 [0000:00:06] NVIDIA H200\\n"
...     "#  Rank  1 Group  0 Pid 1409 on vm device  1 [0000:00:07] NVIDIA H200\\n"
...     "  1048576  262144  float  sum  -1  17.64  59.44  59.44  0  18.60  56.38  56.38  0\\n")
>>> meta, out_of_place, in_place = parse_nccl_tests_log(log)
>>> out_of_place["op"], out_of_place["ranks"], out_of_place["scope"], out_of_place["time_us"]
('all_reduce', 2, 'intra', 17.64)
>>> in_place["inplace"], in_place["busbw_GBps"]
(True, 56.38)
>>> import shutil; shutil.rmtree(log.parent)
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any, Callable

# busbw / algbw as nccl-tests defines it: one definition, in formulas (still importable from here)
from clustersim.collectives.formulas import busbw_factor
from clustersim.errors import ClusterSimError, require_file
from clustersim.files import read_input

#: nccl-tests binary (without ``_perf``) -> our operation name.
#: Largest nccl-tests log: 4 MiB, 500x the ~8 KB of one test swept over every size from 8 B to 16 GB
#: (the whole shipped set is under 60 KB a file). A 50 MB log took minutes and gigabytes to import.
MAX_LOG_BYTES = 4 * 2**20

TEST_TO_OP = {
    "all_reduce": "all_reduce", "allreduce": "all_reduce",
    "all_gather": "all_gather", "allgather": "all_gather",
    "reduce_scatter": "reduce_scatter", "reducescatter": "reduce_scatter",
    "alltoall": "all_to_all", "all_to_all": "all_to_all",
    "sendrecv": "send_recv", "send_recv": "send_recv",
    "broadcast": "broadcast", "bcast": "broadcast",
    "reduce": "reduce", "gather": "gather", "scatter": "scatter",
}
#: Substrings searched in a file name (longest first, so "allreduce" wins over "reduce").
_NAME_KEYS = sorted({k.replace("_", ""): v for k, v in TEST_TO_OP.items()}.items(), key=lambda kv: -len(kv[0]))

#: nccl-tests type names -> dtype names used in rows.
DTYPES = {
    "float": "float32", "float32": "float32", "half": "float16", "float16": "float16", "bfloat16": "bfloat16",
    "double": "float64", "float64": "float64", "int8": "int8", "uint8": "uint8", "int32": "int32", "int": "int32",
    "uint32": "uint32", "int64": "int64", "uint64": "uint64", "f8e4m3": "float8_e4m3", "f8e5m2": "float8_e5m2",
}

_TAG = re.compile(r"\[\d+(?:,\d+)?\](?:<std(?:out|err)>:)?")
_VERSION = re.compile(r"#\s*nccl-tests version\s+(\S+)(?:.*?nccl-library=(\d+))?")
_STARTING = re.compile(r"#\s*Collective test starting:\s*(\S+)")
_NTHREAD = re.compile(
    r"#\s*nThread\s+(\d+)\s+nGpus\s+(\d+)\s+minBytes\s+(\d+)\s+maxBytes\s+(\d+)\s+step:\s*(\d+)\((\w+)\)"
    r"\s+warmup iters:\s*(\d+)\s+iters:\s*(\d+)(?:\s+agg iters:\s*(\d+))?(?:\s+validation:\s*(\d+))?(?:\s+graph:\s*(\d+))?"
)
_DEVICE = re.compile(
    r"#\s+Rank\s+(\d+)\s+(?:Group\s+(\d+)\s+)?Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([0-9a-fA-Fx:.]+)\]\s*(.*?)\s*$"
)
_NCCL_VERSION = re.compile(r"NCCL version\s+(\S+)")
#: a command line naming the binary (``mpirun ... ./build/all_reduce_perf -b 8``, ``+ srun alltoall_perf_mpi``)
_BINARY = re.compile(r"(?:^|[\s/=:'\"])([a-z_]+_perf)(?:_mpi)?(?=$|[\s'\";])")
#: NCCL_DEBUG_SUBSYS=COLL lines: ``NCCL INFO AllReduce: opCount 0 sendbuff ...``
_COLL_INFO = re.compile(r"NCCL INFO (AllReduce|AllGather|ReduceScatter|Broadcast|Reduce|AlltoAll|SendRecv|Send|Recv)"
                        r": opCount")
_COLL_INFO_OP = {"AllReduce": "all_reduce", "AllGather": "all_gather", "ReduceScatter": "reduce_scatter",
                 "Broadcast": "broadcast", "Reduce": "reduce", "AlltoAll": "all_to_all", "SendRecv": "send_recv",
                 "Send": "send_recv", "Recv": "send_recv"}
_INT = re.compile(r"^-?\d+$")
_FLOAT = re.compile(r"^-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_TIME_OF_DAY = re.compile(r"^\d{2}:\d{2}:\d{2}$")


def _warn(msg: str) -> None:
    sys.stderr.write(f"warning: {msg}\n")


def op_from_test_name(name: str) -> str | None:
    """Our operation for an nccl-tests binary name (``alltoall_perf`` -> ``all_to_all``).

    >>> op_from_test_name("alltoall_perf"), op_from_test_name("sendrecv_perf_mpi"), op_from_test_name("foo")
    ('all_to_all', 'send_recv', None)
    """
    base = name.strip().lower()
    base = re.sub(r"(_perf)(_mpi)?$", "", base)
    return TEST_TO_OP.get(base)


def op_from_file_name(path: str | Path) -> str | None:
    """Guess the operation from a file name (``all_reduce_8.log`` -> ``all_reduce``).

    >>> op_from_file_name("runs/nt_all_gather_16.txt"), op_from_file_name("AllToAll.log"), op_from_file_name("x.log")
    ('all_gather', 'all_to_all', None)
    """
    stem = re.sub(r"[^a-z0-9]", "", Path(path).name.lower())
    for key, op in _NAME_KEYS:
        if key in stem:
            return op
    return None


def nccl_version_from_code(code: int) -> str:
    """``22809`` -> ``'2.28.9'`` (NCCL_VERSION_CODE; codes below 10000 are the pre-2.9 scheme).

    >>> nccl_version_from_code(22809), nccl_version_from_code(2708)
    ('2.28.9', '2.7.8')
    """
    if code >= 10000:
        return f"{code // 10000}.{code % 10000 // 100}.{code % 100}"
    return f"{code // 1000}.{code % 1000 // 100}.{code % 100}"


class _Section:
    """Header facts of one test run inside a log."""

    def __init__(self) -> None:
        self.test: str | None = None
        self.version: str | None = None
        self.nccl_version: str | None = None
        self.nthread = self.ngpus = None
        self.warmup = self.iters = self.agg_iters = self.graph = None
        self.validation: int | None = None
        self.devices: list[dict[str, Any]] = []
        self.columns: str | None = None  # "new" (root, #wrong) or "old" (no root, error)
        self.extra_cols = 0  # -I per-iteration columns
        self.in_table = False
        self.rows_seen = 0
        self.line_ops: list[str] = []  # operations the log's own lines name (command line, NCCL INFO COLL)

    @property
    def line_op(self) -> str | None:
        """The operation the section's lines name, when they name exactly one."""
        ops = set(self.line_ops)
        return ops.pop() if len(ops) == 1 else None


def _num(tok: str) -> float | None:
    return float(tok) if _FLOAT.match(tok) else None


def parse_nccl_tests_log(
    path: str | Path,
    op: str | None = None,
    *,
    ranks: int | None = None,
    scope: str | None = None,
    placement: str = "both",
    meta: bool = True,
    warn: Callable[[str], None] | None = None,
    wrong: str = "skip",
) -> list[dict[str, Any]]:
    """Rows (Contract 3) from one nccl-tests log.

    Parameters
    ----------
    path:
        The log (stdout of an nccl-tests binary, possibly with mpirun tags).
    op:
        Operation when the log does not tell it. Looked up in this order: the header
        (``# Collective test starting: X``; a conflicting ``op`` is an error), ``op``,
        the log's own lines (a command line naming the binary, ``mpirun ...
        all_reduce_perf -b 8``, or ``NCCL INFO AllReduce: opCount`` lines of
        ``NCCL_DEBUG_SUBSYS=COLL``), then the file name (``all_gather_16.log``).
    ranks:
        Rank count; overrides the number of ``Rank`` device lines in the header.
    scope:
        ``intra`` or ``inter``; overrides the scope derived from the host names.
    placement:
        ``both`` (one row per size for out-of-place and one for in-place),
        ``out`` (out-of-place only) or ``in``.
    meta:
        Put one ``kind: meta`` row (GPU, hosts, versions) before each test's rows.
    warn:
        Called with ``"file:line: reason"`` for every skipped malformed line
        (default: print on stderr).
    wrong:
        Results nccl-tests found wrong (``#wrong`` > 0): ``skip`` them with a warning, ``keep`` them
        (with their ``wrong`` count and a warning) or ``refuse`` the log (a ClusterSimError naming the
        first one: the time of a broken run is not a measurement).

    Returns
    -------
    list of dict
        ``meta`` rows and ``collective`` rows with ``source: "nccl-tests"``,
        ``mode: "nccl"``, sizes as printed (nccl-tests conventions), ``time_us``
        (nccl-tests' average over iterations and ranks), ``algbw_GBps``,
        ``busbw_GBps``, ``inplace`` and ``line`` (1-based line in the file).
    """
    warn = warn or _warn
    p = require_file(path)
    op = _checked_options(op, ranks=ranks, scope=scope, placement=placement)
    if wrong not in ("skip", "keep", "refuse"):
        raise ClusterSimError(f"wrong must be skip, keep or refuse, got {wrong!r}")
    text = _read_log(p, path)
    sections, nccl_version_global = _scan_sections(text, path=path, warn=warn)

    out: list[dict[str, Any]] = []
    if not sections or not any(rows for _, rows in sections):
        warn(f"{path}: no nccl-tests results found")
    for sec, data in sections:
        if not data:
            continue
        out += _section_rows(sec, data, p=p, path=path, sections=sections, op=op, ranks=ranks, scope=scope,
                             placement=placement, meta=meta, warn=warn, nccl_version_global=nccl_version_global,
                             wrong=wrong)
    return out


def _checked_options(op: str | None, *, ranks: int | None, scope: str | None, placement: str) -> str | None:
    """Validate the parse options and return ``op`` mapped to a profile operation name."""
    if placement not in ("both", "out", "in"):
        raise ClusterSimError(f"placement must be both, out or in, got {placement!r}")
    if scope is not None and scope not in ("intra", "inter"):
        raise ClusterSimError(f"scope must be intra or inter, got {scope!r}", field="--scope")
    if ranks is not None and ranks <= 0:
        raise ClusterSimError(f"rank count must be > 0, got {ranks}", field="--ranks")
    from clustersim.config.profile import OP_NAMES

    if op is not None and op not in OP_NAMES:
        mapped = op_from_test_name(op)
        if mapped is None:
            raise ClusterSimError(f"unknown operation {op!r} (use one of {', '.join(OP_NAMES)})", field="--op")
        op = mapped
    return op


def _read_log(p: Path, path: str | Path) -> str:
    """Read a measurement log within the size limit, refusing binary files."""
    raw = read_input(p, limit=MAX_LOG_BYTES, what="nccl-tests logs (500x a log of every size of one test)")
    if b"\x00" in raw:
        raise ClusterSimError("binary file (not an nccl-tests log)", file=str(path))
    return raw.decode("utf-8", errors="replace")



def _scan_sections(text: str, *, path: str | Path, warn: Callable[[str], None]
                   ) -> tuple[list[tuple[_Section, list[dict[str, Any]]]], str | None]:
    """Split a log into (section header, data rows) pairs; also return the log-wide NCCL version."""
    sec = _Section()
    sections: list[tuple[_Section, list[dict[str, Any]]]] = []
    pending: list[dict[str, Any]] = []
    nccl_version_global: str | None = None

    def close_section() -> None:
        nonlocal sec, pending
        if pending or sec.devices or sec.test:
            sections.append((sec, pending))
        sec, pending = _Section(), []

    for lineno, raw_line in enumerate(text.splitlines(), 1):
        line = _TAG.sub("", raw_line).rstrip()
        s = line.strip()
        if not s:
            continue
        if s.startswith("#"):
            m = _VERSION.match(s)
            if m:
                if pending:
                    close_section()
                sec.version = m.group(1)
                if m.group(2):
                    sec.nccl_version = nccl_version_from_code(int(m.group(2)))
                continue
            m = _STARTING.match(s)
            if m:
                if pending:
                    close_section()
                sec.test = m.group(1)
                continue
            m = _NTHREAD.match(s)
            if m:
                if pending:
                    close_section()
                sec.nthread, sec.ngpus = int(m.group(1)), int(m.group(2))
                sec.warmup, sec.iters = int(m.group(7)), int(m.group(8))
                sec.agg_iters = int(m.group(9)) if m.group(9) else None
                sec.validation = int(m.group(10)) if m.group(10) else None
                sec.graph = int(m.group(11)) if m.group(11) else None
                continue
            m = _DEVICE.match(s)
            if m:
                sec.devices.append({"rank": int(m.group(1)), "pid": int(m.group(3)), "host": m.group(4),
                                    "device": int(m.group(5)), "bus_id": m.group(6), "gpu": m.group(7) or None})
                continue
            _table_comment(s, sec, path=path, lineno=lineno, warn=warn)
            continue
        m = _COLL_INFO.search(s)
        if m:
            sec.line_ops.append(_COLL_INFO_OP[m.group(1)])
            continue
        m = _BINARY.search(s) if not _INT.match(s.split()[0]) else None
        if m and op_from_test_name(m.group(1)):
            if pending:  # a command line starts the next test of a concatenated log
                close_section()
            sec.line_ops.append(op_from_test_name(m.group(1)))
            continue
        m = _NCCL_VERSION.search(s)
        if m and "NCCL INFO" not in s:
            nccl_version_global = nccl_version_global or m.group(1)
            sec.nccl_version = sec.nccl_version or m.group(1)
            continue
        toks = s.split()
        candidate = sec.in_table or (len(toks) >= 2 and _INT.match(toks[0]) and _INT.match(toks[1]))
        if not candidate or "NCCL" in s and not _INT.match(toks[0]):
            continue  # noise: NCCL INFO/WARN lines, launcher chatter
        row, reason = _parse_data(toks, sec)
        if row is None:
            warn(f"{path}:{lineno}: skipped malformed data line ({reason}): {s[:120]}")
            continue
        row["line"] = lineno
        pending.append(row)
    close_section()

    return sections, nccl_version_global


def _table_comment(s: str, sec: _Section, *, path: str | Path, lineno: int, warn: Callable[[str], None]) -> None:
    """Apply a table column header or end-of-table comment line to ``sec``."""
    low = s.lower()
    if "size" in low and "count" in low and "type" in low:
        toks = s.lstrip("#").split()
        sec.columns = "new" if "root" in toks else "old"
        # -I adds per-iteration statistics columns after each group
        sec.extra_cols = max(0, (len(toks) - (13 if sec.columns == "new" else 12)) // 2)
        sec.in_table = True
        return
    if low.startswith("# out of bounds") or low.startswith("# avg bus bandwidth") or low.startswith("# collective test concluded"):
        sec.in_table = False
        if low.startswith("# out of bounds") and "ok" not in low.split(":")[-1]:
            warn(f"{path}:{lineno}: nccl-tests reports wrong results ({s.lstrip('# ')})")


def _section_rows(sec: _Section, data: list[dict[str, Any]], *, p: Path, path: str | Path,
                  sections: list[tuple[_Section, list[dict[str, Any]]]], op: str | None, ranks: int | None,
                  scope: str | None, placement: str, meta: bool, warn: Callable[[str], None],
                  nccl_version_global: str | None, wrong: str = "skip") -> list[dict[str, Any]]:
    """The meta and collective rows of one test section."""
    out: list[dict[str, Any]] = []
    header_op = op_from_test_name(sec.test) if sec.test else None
    if sec.test and header_op is None:
        raise ClusterSimError(f"unknown nccl-tests binary {sec.test!r} in the header", file=str(path))
    if header_op and op and op != header_op:
        raise ClusterSimError(f"--op {op} conflicts with the log header ({sec.test} -> {header_op})", file=str(path))
    the_op = header_op or op or sec.line_op or op_from_file_name(p)
    if the_op is None:
        raise ClusterSimError("cannot tell the operation: no '# Collective test starting' header, no command "
                              "line or NCCL INFO line naming it and no operation in the file name; pass --op",
                              file=str(path))
    hosts = list(dict.fromkeys(d["host"] for d in sec.devices))
    n_ranks = ranks or len(sec.devices)
    if not n_ranks:
        raise ClusterSimError("cannot tell the rank count: no '# Rank ... device' lines in the header; "
                              "pass --ranks", file=str(path))
    if ranks and sec.devices and ranks != len(sec.devices):
        warn(f"{path}: --ranks {ranks} overrides the {len(sec.devices)} device lines of the header")
    nodes = len(hosts) if hosts else None
    the_scope = scope or (("intra" if len(hosts) == 1 else "inter") if hosts else None)
    gpus = list(dict.fromkeys(d["gpu"] for d in sec.devices if d["gpu"]))
    gpu = gpus[0] if len(gpus) == 1 else (", ".join(gpus) if gpus else None)
    run_id = f"nccl-tests:{p.name}" + (f"#{sections.index((sec, data)) + 1}" if len(sections) > 1 else "")
    common = {"source": "nccl-tests", "run_id": run_id, "host": hosts[0] if hosts else None, "gpu": gpu,
              "file": p.name}
    if meta:
        out.append({"kind": "meta", **common, "hosts": hosts, "world_size": n_ranks, "nodes": nodes,
                    "gpus": [d["gpu"] for d in sec.devices], "nccl_version": sec.nccl_version or nccl_version_global,
                    "nccl_tests_version": sec.version, "test": sec.test, "op": the_op,
                    "warmup_iters": sec.warmup, "iters": sec.iters, "agg_iters": sec.agg_iters,
                    "validation": sec.validation, "cuda_graph": sec.graph, "nvls": None})
    factor = busbw_factor(the_op, n_ranks)
    for r in data:
        places = (("out", False), ("in", True))
        for which, inplace in places:
            if placement != "both" and placement != which:
                continue
            g = r[which]
            if sec.columns != "old" and isinstance(g["wrong"], int) and g["wrong"] > 0:
                # nccl-tests found wrong results: the time of a broken run is not a measurement
                what = (f"the {which}-of-place result of {r['size']} bytes (#wrong = {g['wrong']}: nccl-tests found "
                        f"{g['wrong']} wrong values)")
                if wrong == "refuse":
                    raise ClusterSimError(f"line {r['line']}: {what}; a broken run is not a measurement "
                                          "(--allow-wrong imports such rows with their #wrong count)", file=str(path))
                if wrong == "skip":
                    warn(f"{path}:{r['line']}: skipped {what}")
                    continue
                warn(f"{path}:{r['line']}: kept {what} (--allow-wrong)")
            out.append({
                "kind": "collective", **common, "op": the_op, "ranks": n_ranks, "nodes": nodes, "scope": the_scope,
                "size_bytes": r["size"], "count": r["count"], "dtype": DTYPES.get(r["type"], r["type"]),
                "redop": None if r["redop"] == "none" else r["redop"], "root": r["root"],
                "mode": "nccl", "algorithm": None, "protocol": None, "nvls": None,
                "time_us": g["time"], "time_us_min": None, "time_us_p10": None, "time_us_p90": None,
                "iters": sec.iters, "algbw_GBps": g["algbw"], "busbw_GBps": g["busbw"],
                "busbw_factor": factor, "inplace": inplace,
                # current format: #wrong (int, or None for N/A); older format: float max error
                "wrong": g["wrong"] if sec.columns != "old" else None,
                "error": g["wrong"] if sec.columns == "old" else None, "line": r["line"],
            })
    return out


def _parse_data(toks: list[str], sec: _Section) -> tuple[dict[str, Any] | None, str]:
    """One data line -> dict, or (None, reason)."""
    # trailing timestamp of -S: "YYYY-mm-dd HH:MM:SS"
    if len(toks) >= 2 and _DATE.match(toks[-2]) and _TIME_OF_DAY.match(toks[-1]):
        toks = toks[:-2]
    columns = sec.columns
    if columns is None:
        columns = "new" if len(toks) in (13, 29) else "old" if len(toks) in (12, 28) else None
        if columns is None:
            return None, f"{len(toks)} fields, expected 12 (old format) or 13 (current format)"
    head = 5 if columns == "new" else 4
    want = head + 2 * (4 + sec.extra_cols)
    if len(toks) != want:
        return None, f"{len(toks)} fields, expected {want}"
    size_t, count_t, type_t, redop_t = toks[:4]
    if not _INT.match(size_t) or int(size_t) < 0:
        return None, f"size {size_t!r} is not a byte count"
    if not _INT.match(count_t) or int(count_t) < 0:
        return None, f"count {count_t!r} is not an element count"
    if _FLOAT.match(type_t) or _FLOAT.match(redop_t):
        return None, "type/redop columns are numbers (columns shifted)"
    root = None
    if columns == "new":
        if not _INT.match(toks[4]):
            return None, f"root {toks[4]!r} is not an integer"
        root = int(toks[4]) if int(toks[4]) >= 0 else None
    groups = {}
    for gi, which in enumerate(("out", "in")):
        base = head + gi * (4 + sec.extra_cols)
        t, a, b, w = toks[base:base + 4]
        tv, av, bv = _num(t), _num(a), _num(b)
        if tv is None:
            return None, f"{which}-of-place time {t!r} is not a number"
        if av is None or bv is None:
            return None, f"{which}-of-place algbw/busbw {a!r}/{b!r} are not numbers"
        if tv <= 0 or av < 0 or bv < 0:
            return None, f"{which}-of-place time/bandwidth out of range ({t}, {a}, {b})"
        if w.upper() == "N/A":
            wv: float | int | None = None
        elif _INT.match(w):
            wv = int(w)
        elif _FLOAT.match(w):
            wv = float(w)
        else:
            return None, f"{which}-of-place #wrong/error {w!r} is not a number or N/A"
        if "e" in t.lower() and av > 0:
            # times >= 10 s are printed as %.1e/%.0e (2 or 1 significant digits);
            # algbw (%.2f) then carries more precision: recover the time from it.
            tv = int(size_t) / (av * 1e3)
        # algbw must be size / time (GB/s = B / us / 1e3), up to printf rounding
        expect = int(size_t) / (tv * 1e3)
        if abs(expect - av) > 0.011 + 0.06 * max(expect, av):
            return None, f"{which}-of-place algbw {a} does not match size/time = {expect:.3g} GB/s"
        groups[which] = {"time": tv, "algbw": av, "busbw": bv, "wrong": wv}
    return {"size": int(size_t), "count": int(count_t), "type": type_t, "redop": redop_t, "root": root, **groups}, ""


def import_logs(paths: list[str | Path], output: str | Path, *, op: str | None = None, ranks: int | None = None,
                scope: str | None = None, placement: str = "both", warn: Callable[[str], None] | None = None,
                allow_wrong: bool = False) -> dict[str, int]:
    """Parse logs and append their rows to ``output`` (JSON lines). Returns counts per file.

    A result nccl-tests found wrong (``#wrong`` > 0) refuses its log unless ``allow_wrong`` (then it is
    imported with its ``wrong`` count)."""
    from clustersim.calibration.jsonl import RowWriter

    if not paths:
        raise ClusterSimError("no log files given")
    parsed = [(str(pth), parse_nccl_tests_log(pth, op, ranks=ranks, scope=scope, placement=placement, warn=warn,
                                              wrong="keep" if allow_wrong else "refuse"))
              for pth in paths]
    for name, rows in parsed:  # checked before anything is written: a bad file leaves the output untouched
        if not any(r["kind"] == "collective" for r in rows):
            raise ClusterSimError("no nccl-tests result rows (an empty file, a header without results, or not an "
                                  "nccl-tests log)", file=name)
    counts: dict[str, int] = {}
    with RowWriter(output, fsync=False) as w:  # an import is redone from its logs: one fsync at the end
        for name, rows in parsed:
            w.write_all(rows)
            counts[name] = sum(1 for r in rows if r["kind"] == "collective")
    return counts
