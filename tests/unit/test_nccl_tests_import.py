"""nccl-tests log import: both formats without loss, malformed lines reported with their line number."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from clustersim.calibration.nccl_tests import (
    busbw_factor,
    import_logs,
    nccl_version_from_code,
    op_from_file_name,
    op_from_test_name,
    parse_nccl_tests_log,
)
from clustersim.errors import ClusterSimError

DATA = Path(__file__).resolve().parents[1] / "data"
H200 = DATA / "h200x2" / "nt_all_reduce.txt"
A100 = Path(__file__).resolve().parents[2] / "profiles" / "measurements" / "a100-azure-ndv4"
A100_8 = A100 / "all_reduce_8.log"
A100_16 = A100 / "all_reduce_16.log"
TAG = re.compile(r"\[\d+(?:,\d+)?\](?:<std(?:out|err)>:)?")


def _data_lines(path: Path) -> list[tuple[int, list[str]]]:
    """Independent reading of the table: (line number, fields) of every line starting with a byte count."""
    out = []
    for i, line in enumerate(path.read_text().splitlines(), 1):
        f = TAG.sub("", line).split()
        if f and f[0].isdigit() and len(f) > 2 and f[1].isdigit():
            out.append((i, f))
    return out


def _collect(path: Path, **kw):
    warnings: list[str] = []
    rows = parse_nccl_tests_log(path, warn=warnings.append, **kw)
    return [r for r in rows if r["kind"] == "collective"], [r for r in rows if r["kind"] == "meta"], warnings


@pytest.mark.parametrize("path,n_lines,ranks,nodes,scope,gpu,root_col", [
    (H200, 30, 2, 1, "intra", "NVIDIA H200", True),  # 8 B .. 4 GiB
    (A100_8, 28, 8, 1, "intra", "A100-SXM4-40GB", False),  # 8 B .. 1 GiB
    (A100_16, 25, 16, 2, "inter", "A100-SXM4-40GB", False),  # 1 KiB .. 16 GiB
])
def test_every_data_line_becomes_two_rows_with_the_right_numbers(path, n_lines, ranks, nodes, scope, gpu, root_col):
    rows, meta, warnings = _collect(path)
    assert warnings == []
    lines = _data_lines(path)
    assert len(lines) == n_lines
    assert len(rows) == 2 * len(lines)
    head = 5 if root_col else 4
    by_line = {}
    for r in rows:
        by_line.setdefault(r["line"], []).append(r)
    assert sorted(by_line) == [i for i, _ in lines]
    for i, f in lines:
        oop, ip = sorted(by_line[i], key=lambda r: r["inplace"])
        assert (oop["inplace"], ip["inplace"]) == (False, True)
        for r, off in ((oop, head), (ip, head + 4)):
            assert r["size_bytes"] == int(f[0]) and r["count"] == int(f[1])
            assert r["time_us"] == float(f[off])
            assert r["algbw_GBps"] == float(f[off + 1]) and r["busbw_GBps"] == float(f[off + 2])
            assert r["op"] == "all_reduce" and r["ranks"] == ranks and r["nodes"] == nodes and r["scope"] == scope
            assert r["gpu"] == gpu and r["source"] == "nccl-tests" and r["mode"] == "nccl"
            assert r["dtype"] == "float32" and r["redop"] == "sum"
            assert r["busbw_factor"] == pytest.approx(2 * (ranks - 1) / ranks), f"{i=}, {f=}, {r=}, {off=}"
    assert len(meta) == 1 and meta[0]["world_size"] == ranks and len(meta[0]["hosts"]) == nodes


def test_header_facts():
    rows, meta, _ = _collect(H200)
    m = meta[0]
    assert m["nccl_tests_version"] == "2.19.6" and m["nccl_version"] == "2.28.9"
    assert m["test"] == "all_reduce_perf" and m["iters"] == 20 and m["warmup_iters"] == 5 and m["hosts"] == ["vm"]
    assert rows[0]["wrong"] == 0 and rows[0]["error"] is None and rows[0]["iters"] == 20
    rows8, _, _ = _collect(A100_8)
    assert rows8[0]["error"] == pytest.approx(1e-7) and rows8[0]["wrong"] is None
    rows16, meta16, _ = _collect(A100_16)
    assert rows16[0]["error"] is None and rows16[0]["wrong"] is None  # N/A (validation off)
    assert meta16[0]["hosts"] == ["node-000000", "node-000002"] and meta16[0]["iters"] == 50
    # the last line of the 16-GPU log: 17179869184 bytes, times printed without decimals
    assert rows16[-1]["size_bytes"] == 17179869184 and rows16[-1]["time_us"] == 250681.0


def test_out_of_place_only_and_overrides():
    rows, meta, _ = _collect(A100_16, placement="out", ranks=8, scope="intra")
    assert all(not r["inplace"] for r in rows) and len(rows) == len(_data_lines(A100_16))
    assert {r["ranks"] for r in rows} == {8} and {r["scope"] for r in rows} == {"intra"}
    assert rows[0]["busbw_factor"] == pytest.approx(1.75)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _h200_with(tmp_path: Path, name: str, edit) -> Path:
    lines = H200.read_text().splitlines()
    return _write(tmp_path, name, "\n".join(edit(lines)) + "\n")


def test_malformed_lines_are_reported_with_their_number_and_skipped(tmp_path):
    def edit(lines):
        lines = list(lines)
        lines[11] = lines[11][:60]  # line 12: truncated
        lines[12] = lines[12].replace("14.27", "14.x7")  # line 13: non-numeric time
        lines[13] = lines[13].replace("0.00", "9.99", 1)  # line 14: algbw does not match size/time
        lines.insert(20, "vm:1409:1420 [0] NCCL INFO Channel 00/24 : 0 1")  # noise is silent
        return lines

    p = _h200_with(tmp_path, "x.txt", edit)
    rows, _, warnings = _collect(p)
    assert len(warnings) == 3
    for w, n in zip(warnings, (12, 13, 14)):
        assert w.startswith(f"{p}:{n}: skipped malformed data line")
    assert "time '14.x7'" in warnings[1] and "algbw" in warnings[2]
    assert {r["line"] for r in rows}.isdisjoint({12, 13, 14})
    assert len(rows) == 2 * (30 - 3)
    assert {r["size_bytes"] for r in rows}.isdisjoint({8, 16, 32})


def test_mpirun_tags_mid_line_and_crlf(tmp_path):
    text = A100_8.read_text().splitlines()
    tagged = []
    for line in text:
        if line.strip() and line.lstrip()[0].isdigit():
            cut = len(line) // 2
            line = "[1,3]<stdout>:" + line[:cut] + "[0]" + line[cut:]  # a tag cut into the middle
        tagged.append(line)
    p = _write(tmp_path, "all_reduce.log", "\r\n".join(tagged) + "\r\n")
    rows, _, warnings = _collect(p)
    ref, _, _ = _collect(A100_8)
    strip = lambda rs: [{k: v for k, v in r.items() if k not in ("file", "run_id")} for r in rs]  # noqa: E731
    # tags are removed wherever they are (even inside a number: "31.4[0]4" -> "31.44"), restoring the line
    assert warnings == []
    assert strip(ref) == strip(rows)


def test_operation_from_header_file_name_or_option(tmp_path):
    lines = H200.read_text().splitlines()
    # header names alltoall_perf -> all_to_all (whatever the file is called)
    p = _write(tmp_path, "all_reduce.txt", "\n".join(l.replace("all_reduce_perf", "alltoall_perf") for l in lines))
    rows, _, _ = _collect(p)
    assert {r["op"] for r in rows} == {"all_to_all"} and rows[0]["busbw_factor"] == 0.5
    with pytest.raises(ClusterSimError, match="conflicts"):
        parse_nccl_tests_log(p, op="all_reduce")
    # no header: the file name, else --op
    body = [l for l in lines if "Collective test" not in l]
    p2 = _write(tmp_path, "sendrecv_perf.log", "\n".join(body))
    assert {r["op"] for r in _collect(p2)[0]} == {"send_recv"}
    p3 = _write(tmp_path, "run1.log", "\n".join(body))
    with pytest.raises(ClusterSimError, match="pass --op") as e:
        parse_nccl_tests_log(p3)
    assert "run1.log" in str(e.value)
    assert {r["op"] for r in _collect(p3, op="reduce_scatter_perf")[0]} == {"reduce_scatter"}
    with pytest.raises(ClusterSimError, match="unknown operation"):
        parse_nccl_tests_log(p3, op="allreduce-ish")


def test_rank_count_needed(tmp_path):
    body = [l for l in H200.read_text().splitlines() if "Rank" not in l]
    p = _write(tmp_path, "all_reduce.txt", "\n".join(body))
    with pytest.raises(ClusterSimError, match="--ranks"):
        parse_nccl_tests_log(p)
    rows, meta, _ = _collect(p, ranks=2)
    assert rows and rows[0]["ranks"] == 2 and rows[0]["scope"] is None


def test_names_and_codes():
    assert op_from_test_name("alltoall_perf") == "all_to_all"
    assert op_from_test_name("sendrecv_perf") == "send_recv"
    assert op_from_test_name("reduce_scatter_perf") == "reduce_scatter"
    assert op_from_file_name("nt_reduce_scatter_8.log") == "reduce_scatter"
    assert op_from_file_name("bcast.log") == "broadcast"
    assert nccl_version_from_code(22005) == "2.20.5"
    assert busbw_factor("all_reduce", 8) == 1.75 and busbw_factor("broadcast", 8) == 1.0


def test_bad_inputs(tmp_path):
    with pytest.raises(ClusterSimError, match="file not found"):
        parse_nccl_tests_log(tmp_path / "nope.log")
    b = tmp_path / "bin.log"
    b.write_bytes(b"\x00\x01")
    with pytest.raises(ClusterSimError, match="binary"):
        parse_nccl_tests_log(b)
    warnings: list[str] = []
    e = _write(tmp_path, "all_reduce_empty.log", "hello\n")
    assert parse_nccl_tests_log(e, warn=warnings.append) == []
    assert warnings and "no nccl-tests results" in warnings[0]


def test_import_logs_appends_jsonl(tmp_path):
    out = tmp_path / "m.jsonl"
    counts = import_logs([H200, A100_8], out)
    assert counts == {str(H200): 60, str(A100_8): 56}
    rows = [json.loads(l) for l in out.read_text().splitlines()]
    assert len(rows) == 60 + 56 + 2 and rows[0]["kind"] == "meta"


def test_cli_import(tmp_path, cli):
    out = tmp_path / "m.jsonl"
    res = cli("calibrate", "import-nccl-tests", str(A100_16),
              "-o", str(out), "--out-of-place-only")
    assert res.returncode == 0, res.stderr
    rows = [json.loads(l) for l in out.read_text().splitlines()]
    assert sum(r["kind"] == "collective" for r in rows) == 25
    res = cli("calibrate", "import-nccl-tests", str(tmp_path / "x.log"),
              "-o", str(out))
    assert res.returncode == 2 and "x.log" in res.stderr and "file not found" in res.stderr
    assert "Traceback" not in res.stderr


def test_several_tests_in_one_log(tmp_path):
    """Logs of several binaries concatenated: each keeps its own op and ranks (the headerless old one: the file name)."""
    h200 = H200.read_text()
    a2a = h200.replace("all_reduce_perf", "alltoall_perf")
    p = _write(tmp_path, "all_reduce_sweep.log", h200 + "\nsome script output\n" + a2a + A100_8.read_text())
    warnings: list[str] = []
    rows = parse_nccl_tests_log(p, warn=warnings.append)
    meta = [r for r in rows if r["kind"] == "meta"]
    assert [(m["op"], m["world_size"]) for m in meta] == [("all_reduce", 2), ("all_to_all", 2), ("all_reduce", 8)]
    coll = [r for r in rows if r["kind"] == "collective"]
    assert len(coll) == 2 * (30 + 30 + 28) and warnings == []
    assert len({r["run_id"] for r in coll}) == 3
    assert {r["ranks"] for r in coll if r["op"] == "all_to_all"} == {2}


def test_operation_from_the_logs_own_lines(tmp_path):
    """Old-format logs have no '# Collective test starting' header: a command line or NCCL INFO COLL lines tell the op."""
    body = A100_8.read_text().splitlines()
    # the launcher's command line echoed before the table (file name says nothing)
    p = _write(tmp_path, "run7.log", "\n".join(["+ mpirun -np 8 ./build/all_gather_perf -b 8 -e 1G -f 2 -g 1"] + body))
    assert {r["op"] for r in _collect(p)[0]} == {"all_gather"}
    # --op still wins over a line, and the header over both (the line only fills the gap)
    assert {r["op"] for r in _collect(p, op="all_reduce")[0]} == {"all_reduce"}
    # NCCL_DEBUG_SUBSYS=COLL lines inside the run
    info = ("node-000000:63453:63453 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x7f0 recvbuff 0x7f0 count 2 "
            "datatype 7 op 0 root 0 comm 0x55 [nranks=8] stream 0x55")
    p2 = _write(tmp_path, "run8.log", "\n".join(body[:14] + [info] + body[14:]))
    rows, meta, _ = _collect(p2)
    assert {r["op"] for r in rows} == {"all_reduce"} and len(rows) == 2 * 28
    # lines naming two different operations say nothing: back to the file name, else --op
    both = info.replace("AllReduce", "AllGather")
    p3 = _write(tmp_path, "run9.log", "\n".join(body[:14] + [info, both] + body[14:]))
    with pytest.raises(ClusterSimError, match="pass --op"):
        parse_nccl_tests_log(p3)
    # two concatenated old-format runs, each after its own command line
    p4 = _write(tmp_path, "sweep.log", "\n".join(["mpirun ./all_reduce_perf -g 1"] + body
                                                   + ["mpirun ./reduce_scatter_perf -g 1"] + body))
    meta4 = [r for r in parse_nccl_tests_log(p4) if r["kind"] == "meta"]
    assert [m["op"] for m in meta4] == ["all_reduce", "reduce_scatter"]
