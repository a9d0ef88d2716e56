"""The study runner's slow cases (moved from tests/unit/test_sweep_run.py): the process pool against the
serial executor, the three plots, the CLI's JSON document over a study that writes its plots."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_inprocess import clustersim

from clustersim.sweep.runner import run_study

pytestmark = pytest.mark.slow

# tests/unit/test_sweep_run.py's study: the Monte Carlo pi job on 1-8 GPUs with its three plots
PI_STUDY = """\
name: pi-small
scenario: montecarlo-pi
set: {simulation.fidelity: analytical}
axes:
  - grid: {cluster.gpus: [1, 2, 4, 8]}
plots:
  - {kind: scaling, measured: {1: 45.151563, 2: 22.624692, 4: 11.396042, 8: 5.748150}}
  - {kind: breakdown}
  - {kind: sensitivity, x: cluster.gpus, log_x: true}
"""
# without its plots: the executor test compares tables only
PI_TABLES = PI_STUDY.split("plots:")[0]


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _cli(*args, cwd=None):
    return clustersim(*args, cwd=cwd)


def test_serial_and_process_pool_give_byte_identical_tables(tmp_path):
    study = _write(tmp_path, "pi.yaml", PI_TABLES)
    run_study(study, tmp_path / "serial", executor="serial")
    run_study(study, tmp_path / "pool", executor="local", max_jobs=2)
    for name in ("results.csv", "results.parquet"):
        assert (tmp_path / "serial" / name).read_bytes() == (tmp_path / "pool" / name).read_bytes(), name
    # and a second run over the same inputs gives the same bytes again
    run_study(study, tmp_path / "again", executor="serial")
    assert (tmp_path / "again" / "results.parquet").read_bytes() == (tmp_path / "serial" / "results.parquet").read_bytes()


def test_plots_are_written_and_not_empty(tmp_path):
    study = _write(tmp_path, "pi.yaml", PI_STUDY)
    res = run_study(study, tmp_path / "out", executor="serial")
    for name in ("scaling", "breakdown", "sensitivity"):
        path = Path(res.files[name])
        data = path.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, name


def test_cli_json_is_one_document_and_resumes(tmp_path):
    study = _write(tmp_path, "pi.yaml", PI_STUDY)
    r = _cli("sweep", str(study), "-o", str(tmp_path / "out"), "--executor", "serial", "--json", "--no-progress")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["points"] == 4 and d["evaluated"] == 4 and d["failed"] == 0
    assert set(d["files"]) >= {"csv", "parquet", "journal", "timings", "scaling", "breakdown", "sensitivity"}
    r = _cli("sweep", str(study), "-o", str(tmp_path / "out"), "--executor", "serial", "--json", "--no-progress")
    assert json.loads(r.stdout)["reused"] == 4
