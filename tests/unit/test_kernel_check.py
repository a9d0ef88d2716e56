"""`clustersim calibrate report` checks a profile's compute tables against kernel rows (simulate.kernel_check)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_inprocess import CliResult, clustersim

from clustersim.calibration.fit import load_profile, read_measurements
from clustersim.errors import ClusterSimError
from clustersim.simulate.kernel_check import kernel_report

ROOT = Path(__file__).resolve().parents[2]
RAW = ROOT / "profiles" / "measurements"
#: the kernel rows the shipped hgx-h200 compute tables were fitted on (profiles/make_profiles.py)
FITTED_ON = RAW / "h200" / "kernels.jsonl"


def _report(*args: str) -> CliResult:
    return clustersim("calibrate", "report", *args, cwd=ROOT, env={"COLUMNS": "100"})


@pytest.fixture(scope="module")
def in_sample():
    return kernel_report(read_measurements([FITTED_ON]).rows, load_profile("hgx-h200"))


@pytest.mark.parametrize("cls", ["gemm NT", "gemm NN", "gemm TN", "attention fwd", "attention fwd+bwd",
                                 "memory add", "memory gelu_fwd", "memory gelu_bwd", "memory swiglu",
                                 "memory rope", "memory repeat_kv", "memory cross_entropy", "memory adamw",
                                 "memory layernorm_fwd", "memory layernorm_bwd", "memory rmsnorm_fwd",
                                 "memory rmsnorm_bwd"])
def test_the_tables_reproduce_the_rows_they_were_fitted_on(in_sample, cls):
    """Every class the report prices comes back within 0.5% at its own points: the report charges each row what
    the simulator charges (launch gaps included) and the fit reads the same accounting backwards. The norms too,
    since their points keep the row length (at 50 MB, h4096 runs at 0.41 of the copy bandwidth and h1024 at 0.22:
    read by bytes alone they were 28% off in-sample)."""
    row = next(s for s in in_sample.summary if s["class"] == cls)
    assert row["points"] >= 2
    assert row["max_abs_err_pct"] <= 0.5, row


def test_rows_of_unpriced_kernels_are_counted_not_compared(in_sample):
    assert in_sample.skipped > 0
    assert all(p["class"] != "gemm_duty" for p in in_sample.points)
    assert in_sample.gpu == "NVIDIA H200" and in_sample.measured_on == ["NVIDIA H200"]


def test_no_kernel_rows_is_a_clear_error():
    with pytest.raises(ClusterSimError, match="no kernel measurements"):
        kernel_report([{"kind": "collective", "op": "all_reduce", "time_us": 1.0}], load_profile("hgx-h200"))


def test_cli_reports_kernel_only_files_as_json():
    r = _report(str(FITTED_ON), "-p", "hgx-h200", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    classes = {s["class"] for s in doc["kernels"]["summary"]}
    assert {"gemm NT", "attention fwd", "memory layernorm_fwd"} <= classes
    assert doc["points"] == []   # no collective rows


def test_cli_table_and_a_warning_when_the_rows_come_from_another_gpu():
    r = _report(str(RAW / "h100" / "kernels.jsonl"), "-p", "hgx-h200")
    assert r.returncode == 0, r.stderr
    assert "kernel classes" in r.stdout and "gemm NT" in r.stdout
    assert "measured on NVIDIA H100" in r.stderr and "describes NVIDIA H200" in r.stderr


def test_cli_files_with_neither_collective_nor_kernel_rows_exit_2(tmp_path):
    f = tmp_path / "m.jsonl"
    f.write_text(json.dumps({"kind": "meta", "gpu": "NVIDIA H200"}) + "\n")
    r = _report(str(f), "-p", "hgx-h200")
    assert r.returncode == 2
    assert "no collective or kernel measurements" in r.stderr and "Traceback" not in r.stderr


def test_cli_writes_the_kernel_section_into_the_report_folder(tmp_path):
    r = _report(str(FITTED_ON), "-p", "hgx-h200", "-o", str(tmp_path / "rep"))
    assert r.returncode == 0, r.stderr
    md = (tmp_path / "rep" / "summary.md").read_text()
    assert "## Kernel classes" in md and "| gemm NT | 60 |" in md
    doc = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert len(doc["kernels"]["points"]) == sum(s["points"] for s in doc["kernels"]["summary"])


def test_a_kernel_row_with_a_bad_row_length_is_skipped_with_the_reason(tmp_path):
    f = tmp_path / "k.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in (
        {"kind": "kernel", "name": "layernorm_bwd", "bytes": 50331648, "hidden": -5, "time_us": 60.0},
        {"kind": "kernel", "name": "layernorm_bwd", "bytes": 50331648, "hidden": "abc", "time_us": 60.0})) + "\n")
    r = _report(str(f), "-p", "hgx-h200")
    assert r.returncode == 2
    err = " ".join(r.stderr.split())   # the console wraps long warning lines
    assert "'hidden' must be > 0" in err and "'hidden' must be a number" in err
    assert "Traceback" not in err
