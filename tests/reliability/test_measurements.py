"""Issue 17, "Measurements": row-by-row files, garbage reported by line, resume without orphans, atomic reports.

The resume of a real ``calibrate bench`` (torchrun, 2 gloo ranks, killed half-way) is exercised by
``tests/integration/test_bench_gloo.py::test_killed_run_keeps_rows_and_resumes``; here the
state it resumes from is checked directly.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from clustersim.calibration.jsonl import RowWriter, read_rows, resume_state, row_key
from clustersim.errors import ClusterSimError
from conftest import REPO, cli

NT_LOG = REPO / "tests" / "data" / "h200x2" / "nt_all_reduce.txt"


def test_rows_are_fsynced_one_by_one(tmp_path: Path, monkeypatch) -> None:
    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd)))
    p = tmp_path / "m.jsonl"
    with RowWriter(p) as w:
        for i in range(3):
            w.write({"kind": "gemm", "m": i, "n": 1, "k": 1})
            assert len(p.read_text().splitlines()) == i + 1  # on disk before the next row is measured
    assert len(synced) == 3


def test_garbage_and_truncated_lines_are_reported_by_line_and_skipped(tmp_path: Path) -> None:
    p = tmp_path / "m.jsonl"
    p.write_text('{"kind": "gemm", "m": 1, "n": 1, "k": 1}\nGARBAGE\n[1, 2]\n{"kind": "hbm", "n": '
                 + "9" * 5000 + '}\n# a comment\n\n{"kind": "hbm", "bytes": 5, "band')
    warnings: list[str] = []
    rows = read_rows(p, warn=warnings.append)
    assert [r["kind"] for r in rows] == ["gemm"]
    assert [w.split(": skipped")[0] for w in warnings] == [f"{p}:2", f"{p}:3", f"{p}:4", f"{p}:7"]
    assert "truncated last line" in warnings[-1]
    with pytest.raises(ClusterSimError, match="line 2"):
        read_rows(p, strict=True)


def test_appending_to_a_file_with_garbage_warns_with_line_numbers(tmp_path: Path, capsys) -> None:
    # was: kept without a warning
    p = tmp_path / "m.jsonl"
    p.write_text('{"kind": "gemm", "m": 1, "n": 1, "k": 1}\nnot json\n{"kind": "launch", "overhead_us": 2}\n')
    with RowWriter(p) as w:
        w.write({"kind": "launch", "overhead_us": 3})
    err = capsys.readouterr().err
    assert "1 unreadable line(s) (2; first: not a JSON object" in err
    assert len(read_rows(p, warn=None)) == 3  # kept as it was, never rewritten


def test_resume_continues_the_run_of_the_same_configuration(tmp_path: Path) -> None:
    # was: a resumed bench wrote its rows under a new run id with no meta/comm_init row
    p = tmp_path / "m.jsonl"
    meta = {"kind": "meta", "world_size": 2, "nodes": 1, "device": "cpu", "backend": "gloo", "nvls": None}
    with RowWriter(p, {"run_id": "r1"}) as w:
        w.write(meta)
        w.write({"kind": "comm_init", "ranks": 2, "nodes": 1, "device": "cpu", "backend": "gloo", "time_s": 1.0})
        w.write({"kind": "collective", "op": "all_reduce", "size_bytes": 1024, "mode": "nccl", "ranks": 2})
    st = resume_state(p)
    assert st.run_for(meta) == "r1"                                  # same configuration: same run id
    assert st.run_for({**meta, "world_size": 4}) is None             # another one: a new run and its meta row
    assert row_key({"kind": "collective", "op": "all_reduce", "size_bytes": 1024, "mode": "nccl", "ranks": 2}) in st.done


def _studies():
    sys.path.insert(0, str(REPO / "tools"))
    import studies  # tools/studies.py: the measured row files by set name

    return studies


def test_every_run_id_of_the_shipped_bench_files_has_its_meta_row() -> None:
    meas, val = REPO / "profiles" / "measurements", REPO / "validation"
    # the collective benches (profile inputs and the held-out 3- and 4-rank ones), the pi runs, the samples in
    # tests/data, and every measured train_step row file
    files = [*(REPO / "tests" / "data").glob("*/*.jsonl"),
             *(meas / n / "bench-graph.jsonl" for n in ("h100x2", "h200x2", "h200x4")),
             val / "collectives-h100-blind_h100x2-h100x4_2026-11-27" / "h100x4" / "bench-graph.jsonl",
             val / "collectives-3rank-blind_h200x4_2026-11-27" / "bench3.jsonl", meas / "h100x4" / "pi-strong.jsonl",
             *(REPO / rel for rel in _studies().TRAIN_STEP_SETS.values())]
    for path in sorted(files):
        rows = read_rows(path, warn=None)
        with_meta = {r.get("run_id") for r in rows if r.get("kind") == "meta"}
        bench = {r.get("run_id") for r in rows if r.get("source") == "bench"}
        assert bench <= with_meta, (path, bench - with_meta)


def test_interrupted_report_leaves_no_half_written_folder(tmp_path: Path, monkeypatch) -> None:
    # was: a killed `calibrate report` left a half-written folder
    from clustersim.calibration import report as R

    real_plot = R.plot

    def plot_then_die(rep, folder):
        paths = real_plot(rep, folder)
        assert paths and all(Path(q).exists() for q in paths)
        raise KeyboardInterrupt  # Ctrl-C (or a kill) after some files were written

    monkeypatch.setattr(R, "plot", plot_then_die)
    out = tmp_path / "report"
    r = cli("calibrate", "report", str(NT_LOG), "-p", "hgx-h200", "-o", str(out), "--holdout", "none")
    assert r.code == 130 and "Traceback" not in r.err
    assert not out.exists()
    assert not [q for q in tmp_path.iterdir() if q.name.startswith(".report.tmp")]
    monkeypatch.setattr(R, "plot", real_plot)
    r = cli("calibrate", "report", str(NT_LOG), "-p", "hgx-h200", "-o", str(out), "--holdout", "none")
    assert r.code == 0, r.err
    assert {"summary.md", "report.json"} <= {q.name for q in out.iterdir()}
    json.loads((out / "report.json").read_text())
