"""``clustersim report``: which kind an input is, and a clean refusal (exit 2, one message) for what it is not."""

from __future__ import annotations

import json

import pytest
from cli_inprocess import run_cli

from clustersim.errors import ClusterSimError
from clustersim.report.load import cell_value, detect_kind, load_results, load_trace
from clustersim.report.pages import scaling_mode, sweep_page
from clustersim.sweep.tables import cell, write_csv

RUN = {"scenario": "s", "fidelity": "flow", "n_gpus": 8, "step_time_s": 0.5, "ops": 10,
       "breakdown": {"compute": 0.4, "comm_dp": 0.1}, "memory": None, "links": []}
PLAN = {"scenario": "s", "n_gpus": 8, "evaluated": 10, "feasible": 3, "simulated": 3, "pruned_by_bound": 0,
        "flow_reranked": 1, "wall_s": 0.2, "constraints": [], "plans": []}
COLUMNS = ["point", "id", "cluster.gpus", "run_args", "n_gpus", "global_batch", "step_time_s",
           "breakdown_compute_s", "fits", "status", "error"]


def _sweep_rows(ns=(1, 2, 4)):
    return [{"point": i, "id": f"{i:016x}", "cluster.gpus": n, "run_args": f"--set cluster.gpus={n}", "n_gpus": n,
             "global_batch": None, "step_time_s": 8.0 / n, "breakdown_compute_s": 8.0 / n, "fits": None,
             "status": "ok", "error": None} for i, n in enumerate(ns)]


def _cli(*args: str) -> tuple[int, str, str]:
    return run_cli(*args)


def _refused(args, *needles):
    code, out, err = _cli(*args)
    assert code == 2, (code, out, err)
    lines = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    for n in needles:
        assert n in " ".join(err.split()), (n, err)


# ------------------------------------------------------------------------------------ kinds
def test_detect_kind_by_keys():
    assert detect_kind(RUN) == "run"
    assert detect_kind(PLAN) == "plan"
    # a plan document has a scenario and GPUs too; a run with a plans list is still a run without the rest
    assert detect_kind({**RUN, "plans": []}) == "run"
    assert detect_kind({"study": "x", "columns": [], "rows": [], "folder": "f"}) == "sweep"
    for doc in ({}, [], "x", 3, {**RUN, "breakdown": [1]}, {k: v for k, v in RUN.items() if k != "fidelity"}):
        assert detect_kind(doc) is None, doc


def test_load_each_kind(tmp_path):
    (tmp_path / "run.json").write_text(json.dumps(RUN))
    (tmp_path / "plan.json").write_text(json.dumps(PLAN))
    assert load_results(tmp_path / "run.json").kind == "run"
    assert load_results(tmp_path / "plan.json").kind == "plan"
    sweep = tmp_path / "sw"
    sweep.mkdir()
    rows = _sweep_rows()
    write_csv(sweep / "results.csv", rows, COLUMNS)
    (sweep / "points.jsonl").write_text("")
    png = b"\x89PNG\r\n\x1a\n" + b"\0" * 8
    (sweep / "scaling.png").write_bytes(png)
    (sweep / "half.png").write_bytes(b"garbage")  # not a PNG: left out, not embedded
    for src in (sweep, sweep / "results.csv"):
        res = load_results(src)
        assert res.kind == "sweep" and res.images == [("scaling.png", png)]
        assert res.data["rows"] == rows  # typed back: ints, floats, None
    # a CSV by its header, whatever its name; and the sweep --json document (its folder's plots)
    (tmp_path / "table.txt").write_text((sweep / "results.csv").read_text())
    assert load_results(tmp_path / "table.txt").kind == "sweep"
    (tmp_path / "sweep.json").write_text(json.dumps({"study": "pi", "folder": "sw", "columns": COLUMNS, "rows": rows}))
    res = load_results(tmp_path / "sweep.json")
    assert res.kind == "sweep" and res.data["study"] == "pi" and [n for n, _ in res.images] == ["scaling.png"]


def test_cell_value_inverts_the_sweep_csv_cell():
    for v in (None, True, False, 0, 7, -3, 0.1, 1e-300, 123456.789, "flow", "a,b", [1, 2], {"a": 1}):
        assert cell_value(cell(v)) == v, v


def test_scaling_mode_and_page_without_points():
    assert scaling_mode([{"n_gpus": 8, "global_batch": 16}, {"n_gpus": 16, "global_batch": 16}])[0] == "strong"
    assert scaling_mode([{"n_gpus": 8, "global_batch": 16}, {"n_gpus": 16, "global_batch": 32}])[0] == "weak"
    rows = [{**r, "status": "error", "step_time_s": None, "error": "tp 3 does not divide 8"} for r in _sweep_rows()]
    text = sweep_page({"study": "x", "columns": COLUMNS, "rows": rows})
    assert "No point could be simulated" in text and "tp 3 does not divide 8" in text
    assert 'id="scaling-speedup"' not in text


# ----------------------------------------------------------------------------------- errors
@pytest.mark.parametrize("content, needles", [
    (None, ["file not found"]),
    (b"\xff\xfe\x00garbage", ["not UTF-8"]),
    (b"scenario: gpt3\n", ["not JSON", "not a sweep CSV"]),
    (b'{"hello": 1, "world": 2}', ["keys hello, world", "not the output of clustersim run --json, plan --json or sweep"]),
    (b"[1, 2]", ["a JSON list"]),
    (b"point,id,foo\n0,a,1\n", ["no column run_args, n_gpus, step_time_s, status"]),
])
def test_bad_input_is_refused(tmp_path, content, needles):
    p = tmp_path / "results.json"
    if content is not None:
        p.write_bytes(content)
    with pytest.raises(ClusterSimError) as exc:
        load_results(p)
    assert str(p) in str(exc.value)
    for n in needles:
        assert n in str(exc.value), str(exc.value)
    _refused(["report", str(p), "-o", str(tmp_path / "r.html")], *needles)
    assert not (tmp_path / "r.html").exists()


def test_bad_sweep_inputs(tmp_path):
    _refused(["report", str(tmp_path), "-o", str(tmp_path / "r.html")], "a folder without results.csv")
    bad = tmp_path / "results.csv"
    write_csv(bad, _sweep_rows(), COLUMNS)
    bad.write_text(bad.read_text() + "9,abc\n")
    _refused(["report", str(bad)], "line 5: 2 cells under a header of 11")
    bad.write_text("")
    _refused(["report", str(bad)], "empty CSV")


def test_trace_option(tmp_path):
    (tmp_path / "plan.json").write_text(json.dumps(PLAN))
    (tmp_path / "run.json").write_text(json.dumps(RUN))
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps({"traceEvents": []}))
    _refused(["report", str(tmp_path / "plan.json"), "--trace", str(trace)], "--trace", "is a plan")
    for text, needle in (("{", "not JSON"), ('{"a": 1}', "not a Chrome trace"),
                         ('[{"ph": "X", "pid": 0}]', "event 0 has no numeric ts")):
        trace.write_text(text)
        _refused(["report", str(tmp_path / "run.json"), "--trace", str(trace), "-o", str(tmp_path / "r.html")], needle)
    _refused(["report", str(tmp_path / "run.json"), "--trace", str(tmp_path / "none.json")], "file not found")
    trace.write_text(json.dumps({"traceEvents": [{"ph": "X", "pid": 0, "tid": 0, "ts": 0, "dur": 10, "cat": "compute",
                                                  "name": "gemm"}]}))
    assert len(load_trace(trace)) == 1
    code, out, err = _cli("report", str(tmp_path / "run.json"), "--trace", str(trace), "-o", str(tmp_path / "r.html"))
    assert code in (0, None), err
    assert 'id="timeline"' in (tmp_path / "r.html").read_text()


def test_unwritable_output_and_help(tmp_path):
    (tmp_path / "run.json").write_text(json.dumps(RUN))
    _refused(["report", str(tmp_path / "run.json"), "-o", str(tmp_path / "no" / "such" / "r.html")],
             "cannot write HTML report")
    code, out, _ = _cli("report", "--help")
    text = " ".join(out.split())
    assert code in (0, None)
    assert "Examples:" in text and "clustersim report plan.json -o plan.html" in text
    assert "clustersim report out/pi -o pi.html" in text


def test_report_pages_load_no_simulator():
    """The report renders documents: drawing every kind of page imports no simulate, plan or workload."""
    import subprocess
    import sys

    code = ("import sys, clustersim.report.pages as P, clustersim.report.load\n"
            "P._scaling_section([{'n_gpus': 1, 'step_time_s': 2.0}, {'n_gpus': 2, 'step_time_s': 1.0}], [])\n"
            "print(' '.join(sorted(m for m in sys.modules if m.startswith('clustersim'))))")
    mods = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert "clustersim.report.pages" in mods
    assert not [m for m in mods if m.split(".")[1:2] and m.split(".")[1] in ("simulate", "plan", "workload", "engine")], mods


def test_sweep_page_sensitivity_and_bar_cap():
    cols = ["point", "id", "topology.node.nic_speed_Gbps", "run_args", "n_gpus", "step_time_s",
            "breakdown_compute_s", "breakdown_comm_dp_s", "status"]
    rows = [{"point": i, "id": str(i), "topology.node.nic_speed_Gbps": g, "run_args": "", "n_gpus": 1024,
             "step_time_s": 7.0 + 100 / g, "breakdown_compute_s": 7.0, "breakdown_comm_dp_s": 100 / g, "status": "ok"}
            for i, g in enumerate((200, 400, 800))]
    text = sweep_page({"study": "nic", "columns": cols, "rows": rows})
    assert 'id="sensitivity-topology-node-nic-speed-Gbps"' in text and 'id="scaling-speedup"' not in text
    assert text.count("<circle") == 3  # one marker per point
    many = [{**rows[0], "point": i, "id": str(i)} for i in range(250)]
    text = sweep_page({"study": "many", "columns": cols, "rows": many})
    bars = text[text.index('id="sweep-breakdown"'):]
    bars = bars[:bars.index("</svg>")]
    assert bars.count('class="k-compute"') == 200 and "The first 200 of 250 points are drawn." in text
    assert text.count("<tr>") >= 250  # the table lists every point
