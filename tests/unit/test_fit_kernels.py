"""`clustersim calibrate fit` fits the kernel-class tables of `calibrate bench --kernels` rows (fit.kernels); the
shipped hgx-h200 tables refitted from their bench: tests/slow/test_fit_kernels_slow.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from cli_inprocess import CliResult, clustersim

from clustersim.calibration.fit import read_measurements
from clustersim.collectives.profiles import resolve_profile

ROOT = Path(__file__).resolve().parents[2]
MEAS = ROOT / "profiles" / "measurements"
TABLES = ("attention_table", "gemm_layout_table", "memory_table", "clock_table")


def _fit(tmp_path: Path, *files: Path) -> CliResult:
    return clustersim("calibrate", "fit", *map(str, files),
                      "-o", str(tmp_path / "p.yaml"), cwd=ROOT)


def test_a_kernel_row_without_its_shape_is_skipped_with_the_reason(tmp_path):
    f = tmp_path / "k.jsonl"
    f.write_text(json.dumps({"kind": "kernel", "name": "gemm_nt", "layout": "NT", "time_us": 10.0}) + "\n")
    meas = read_measurements([f])
    assert meas.rows == [] and "lacks 'tokens'" in meas.skipped[0]


def test_kernel_rows_without_a_copy_bandwidth_exit_2(tmp_path):
    f = tmp_path / "k.jsonl"
    # a GPU no shipped profile describes: no copy bandwidth to start from either (an H200's rows would keep
    # the shipped hgx-h200 compute model, its copy bandwidth included: clustersim.calibration.fit.defaults)
    f.write_text(json.dumps({"kind": "meta", "gpu": "Tesla V100"}) + "\n" + json.dumps(
        {"kind": "kernel", "name": "layernorm_fwd", "bytes": 50331648, "time_us": 20.0}) + "\n")
    r = clustersim("calibrate", "fit", str(f), "-o", str(tmp_path / "p.yaml"), "--peak-tflops", "125", cwd=ROOT)
    assert r.returncode == 2
    assert "copy bandwidth" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("name,fields", [("attention_fwd", ("batch", "seq", "heads", "head_dim")),
                                         ("adamw_step", ("bytes",))])
def test_required_fields_name_what_the_fit_reads(name, fields):
    from clustersim.calibration.fit.kernels import required_fields
    assert required_fields({"name": name}) == fields


def test_bench_rows_of_the_batched_gemms_and_the_wave_sweep_fit_like_the_shipped_profile():
    """The device probes' rows, read as bench kernel rows (what make_profiles.py does), give the shipped tables;
    `calibrate bench --kernels` writes rows of the same names and fields (bench.kernels bmm_sweep, wave_sweep)."""
    import importlib.util

    sys.path.insert(0, str(ROOT / "profiles"))  # make_profiles imports its sibling scripts
    spec = importlib.util.spec_from_file_location("make_profiles", ROOT / "profiles" / "make_profiles.py")
    mp = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mp)
    comp = resolve_profile("hgx-h200").compute
    assert mp.bmm_table() == [p.model_dump(mode="json") for p in comp.bmm_table]
    assert mp.wave_loss() == comp.wave_loss
    assert set(comp.wave_loss) == {"NT", "TN"}
